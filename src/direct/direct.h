/* direct.h: direct mode, the map from a direct key to the result key that
 * lets a hit skip the preprocessor (ccache's "direct mode"): the one module
 * that reads and writes its records. A build looks each target up
 * (cbc_direct_lookup), records what a compile read (cbc_direct_record), and
 * refreshes the stamps of lists a hit had to re-hash (cbc_direct_refresh);
 * the formats below are records.c's.
 *
 * Two kinds of blobs in the store:
 *  - a dependency list ("deps" namespace): every file one compile read, with
 *    its content hash and stat stamp. Its id is the XXH3-128 of the paths
 *    and content hashes only, so the compiles of one source for every
 *    target, which read the same files, share one list; the stamps (which
 *    only spare re-reading files, see cbc_filememo_hash) may be refreshed
 *    in place under the same id.
 *  - a record ("direct" namespace, one per direct key, so per target): up to
 *    CBC_DIRECT_MAX candidates, most recent first, each a result key and the
 *    id of the list that produced it. A candidate matches when every file
 *    of its list still has the recorded content.
 * A hit of N targets of one source reads N small records and one list.
 *
 * On-disk formats (little-endian):
 *   record:  0 8 magic "CBCDEP2\n"; 8 4 candidate count C;
 *            then C times: 16 result key, 16 list id
 *   list:    0 8 magic "CBCDLS1\n"; 8 8 recorded_ns (wall clock when the
 *            stamps were taken); 16 4 file count N;
 *            then N times: u16 path length L, L bytes of path, 16 content
 *            hash, 8 size, 8 mtime_ns, 8 ctime_ns, 8 inode, 8 device
 * Decoding is bounds-checked and a list must hash to the id it was fetched
 * by; a blob that does not decode (or an older format) is treated as
 * absent and rewritten by the next miss, never as an error.
 *
 * Internal and unstable.
 */
#ifndef CBC_DIRECT_H
#define CBC_DIRECT_H

#include "key.h"
#include "store.h"

#define CBC_DIRECT_MAX 8

struct cbc_direct_dep {
    char *path;
    struct cbc_hash hash;
    struct cbc_stamp stamp;
};

struct cbc_dep_list {
    struct cbc_hash id;
    uint64_t recorded_ns;
    struct cbc_direct_dep *deps;
    size_t n;
    char *arena; /* decoded: every path, NUL-terminated, in one allocation;
                    NULL: each path is malloc'd */
};

struct cbc_direct_cand {
    struct cbc_hash result, list;
};

struct cbc_direct_rec {
    struct cbc_direct_cand c[CBC_DIRECT_MAX];
    size_t n;
};

/* The id of a list: its paths and content hashes, in order. False when out
 * of memory. */
bool cbc_dep_list_id(const struct cbc_dep_list *l, struct cbc_hash *id);
/* Decodes a list and checks it against `want` (its id). */
enum cbc_status cbc_dep_list_decode(const uint8_t *data, size_t len, const struct cbc_hash *want,
                                    struct cbc_dep_list *out, struct cbc_err *err);
/* malloc'd bytes; NULL on out of memory or a path longer than 65535. */
uint8_t *cbc_dep_list_encode(const struct cbc_dep_list *l, size_t *len);
void cbc_dep_list_release(struct cbc_dep_list *l);
/* Whether every file of the list still holds its recorded content.
 * *stale_stamps is set when that needed hashing because stamps changed or
 * were too fresh to trust: the caller then stores fresh stamps so the next
 * hit is stat-only. */
bool cbc_dep_list_match(const struct cbc_dep_list *l, struct cbc_filememo *memo,
                        bool *stale_stamps);

enum cbc_status cbc_direct_decode(const uint8_t *data, size_t len, struct cbc_direct_rec *out,
                                  struct cbc_err *err);
/* malloc'd bytes; NULL on out of memory. */
uint8_t *cbc_direct_encode(const struct cbc_direct_rec *rec, size_t *len);
/* Puts `fresh` first, drops older candidates with the same result key and
 * keeps at most CBC_DIRECT_MAX. */
void cbc_direct_push(struct cbc_direct_rec *rec, const struct cbc_direct_cand *fresh);

/* ---- a build's direct mode (direct.c) ------------------------------------ */

/* One build's view: the store, the file memo, and the dependency lists met
 * so far, each fetched, decoded and matched once however many targets
 * share it. With no store every lookup misses and records go nowhere. */
struct cbc_direct;
struct cbc_direct *cbc_direct_new(struct cbc_store *store, struct cbc_filememo *memo);
void cbc_direct_free(struct cbc_direct *d);

/* One target between its lookup and its record. */
struct cbc_direct_target {
    struct cbc_hash direct_key;
    struct cbc_direct_rec rec; /* the record as read: the next record extends it */
    long list;                 /* the list that matched, or -1 */
};

/* Reads the record of dt->direct_key and finds its first candidate whose
 * list still matches the files. *matched and *result say which; a damaged
 * or older record reads as empty. CBC_E_NOMEM is the only failure. */
enum cbc_status cbc_direct_lookup(struct cbc_direct *d, struct cbc_direct_target *dt, bool *matched,
                                  struct cbc_hash *result, struct cbc_err *err);
/* The matched list's files (borrowed: valid until cbc_direct_free). */
const struct cbc_direct_dep *cbc_direct_deps(const struct cbc_direct *d,
                                             const struct cbc_direct_target *dt, size_t *n);
/* After a compile: stores `l` (what it read, with stamps; its contents
 * are taken) unless an equal list is stored and fresh, then puts
 * (result, list id) first in the target's record. False, with err, when
 * the store refused a write: the build goes on without caching. */
bool cbc_direct_record(struct cbc_direct *d, struct cbc_direct_target *dt,
                       const struct cbc_hash *result, struct cbc_dep_list *l, struct cbc_err *err);
/* Stores fresh stamps for every matched list whose match needed hashing (a
 * touched file), once per list, so the next hit reads no file contents. */
void cbc_direct_refresh(struct cbc_direct *d);

#endif
