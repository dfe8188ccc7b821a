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
 * A list also holds the places the compile looked for a file and found
 * nothing (src/trace: every -I directory searched before the one that
 * held a header, __has_include and #include_next probes, .gch
 * candidates), grouped under the deepest directory of each that existed,
 * with that directory's stamp: a list matches only while every one of
 * them is still absent. An unchanged, trustworthy directory stamp proves
 * it with one stat (no entry came or went); a changed one is checked name
 * by name, and a match then refreshes the stamp.
 *
 * On-disk formats (little-endian):
 *   record:  0 8 magic "CBCDEP3\n"; 8 4 candidate count C;
 *            then C times: 16 result key, 16 list id, 1 flags (CBC_CAND_*)
 *   list:    0 8 magic "CBCDLS2\n"; 8 8 recorded_ns (wall clock when the
 *            stamps were taken); 16 4 file count N; 20 4 probe directory
 *            count D;
 *            then N times: u16 path length L, L bytes of path, 16 content
 *            hash, 8 size, 8 mtime_ns, 8 ctime_ns, 8 inode, 8 device;
 *            then D times: u16 length L, L bytes of the directory, its
 *            stamp (8 size, 8 mtime_ns, 8 ctime_ns, 8 inode, 8 device),
 *            4 name count K, then K times: u16 length L, L bytes of a
 *            path relative to the directory
 * Paths under the base directory are stored as "@BASE@/..." (the id is of
 * that spelling), so checkouts of one tree share lists and records.
 * Decoding is bounds-checked and a list must hash to the id it was fetched
 * by (paths, contents and probes; never stamps); a blob that does not
 * decode (or an older format) is treated as absent and rewritten by the
 * next miss, never as an error.
 *
 * Internal and unstable.
 */
#ifndef CBC_DIRECT_H
#define CBC_DIRECT_H

#include "key.h"
#include "store.h"
#include "trace.h"

#define CBC_DIRECT_MAX 8

struct cbc_direct_dep {
    char *path;
    struct cbc_hash hash;
    struct cbc_stamp stamp;
};

/* Places looked at and found empty, under the deepest directory of them
 * that existed: names[first .. first+n) of the list's names. */
struct cbc_probe_dir {
    char *dir;
    struct cbc_stamp stamp; /* the directory's; all zero when it cannot be stat'ed */
    size_t first, n;
};

struct cbc_dep_list {
    struct cbc_hash id;
    uint64_t recorded_ns;
    struct cbc_direct_dep *deps;
    size_t n;
    struct cbc_probe_dir *probes;
    size_t n_probes;
    char **names; /* every probe's path relative to its directory */
    size_t n_names;
    char *arena; /* decoded: every path and name, NUL-terminated, in one
                    allocation; NULL: each is malloc'd */
    const char *base; /* the base directory (key.h): paths under it are stored and
                         identified as "@BASE@/..."; in memory they are absolute */
};

struct cbc_direct_cand {
    struct cbc_hash result, list;
    uint8_t flags; /* CBC_CAND_* */
};
/* The compile's output names its tree (debug info, -lineinfo, __FILE__ of
 * an absolute path): its entry is filed under the result key and this
 * tree's base and working directory, not the result key alone. */
#define CBC_CAND_PATH_DEPENDENT 1

struct cbc_direct_rec {
    struct cbc_direct_cand c[CBC_DIRECT_MAX];
    size_t n;
};

/* The id of a list: its paths and content hashes, in order. False when out
 * of memory. */
bool cbc_dep_list_id(const struct cbc_dep_list *l, struct cbc_hash *id);
/* Decodes a list and checks it against `want` (its id). */
enum cbc_status cbc_dep_list_decode(const uint8_t *data, size_t len, const struct cbc_hash *want,
                                    const char *base, struct cbc_dep_list *out,
                                    struct cbc_err *err);
/* malloc'd bytes; NULL on out of memory or a path longer than 65535. */
uint8_t *cbc_dep_list_encode(const struct cbc_dep_list *l, size_t *len);
void cbc_dep_list_release(struct cbc_dep_list *l);
/* Whether every file of the list still holds its recorded content and
 * every probe is still absent. *stale_stamps is set when that needed
 * hashing or name-by-name checks because stamps changed or were too fresh
 * to trust: the caller then stores fresh stamps so the next hit is
 * stat-only. */
bool cbc_dep_list_match(const struct cbc_dep_list *l, struct cbc_filememo *memo,
                        bool *stale_stamps);
/* The first probe of the list that is no longer absent (malloc'd path), or
 * NULL: what `--explain` and `check` name. */
char *cbc_dep_list_found_probe(const struct cbc_dep_list *l);
/* Stamps every probe directory of the list as it is now, then checks its
 * names; a directory holding one that is no longer absent gets no stamp
 * (its names are checked one by one next time). False when one was found. */
bool cbc_dep_list_stamp_probes(struct cbc_dep_list *l);

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
struct cbc_direct *cbc_direct_new(struct cbc_store *store, struct cbc_filememo *memo,
                                  const char *base);
void cbc_direct_free(struct cbc_direct *d);

/* One target between its lookup and its record. */
struct cbc_direct_target {
    struct cbc_hash direct_key;
    struct cbc_direct_rec rec; /* the record as read: the next record extends it */
    long list;                 /* the list that matched, or -1 */
    uint8_t flags;             /* the matched candidate's CBC_CAND_* */
};

/* Reads the record of dt->direct_key and finds its first candidate whose
 * list still matches the files. *matched and *result say which; a damaged
 * or older record reads as empty. CBC_E_NOMEM is the only failure. */
enum cbc_status cbc_direct_lookup(struct cbc_direct *d, struct cbc_direct_target *dt, bool *matched,
                                  struct cbc_hash *result, struct cbc_err *err);
/* The matched list (borrowed: valid until cbc_direct_free), or NULL. */
const struct cbc_dep_list *cbc_direct_list(const struct cbc_direct *d,
                                           const struct cbc_direct_target *dt);
/* The matched list's files (borrowed: valid until cbc_direct_free). */
const struct cbc_direct_dep *cbc_direct_deps(const struct cbc_direct *d,
                                             const struct cbc_direct_target *dt, size_t *n);
/* After a compile: stores `l` (what it read, with stamps; its contents
 * are taken) unless an equal list is stored and fresh, then puts
 * (result, list id) first in the target's record. False, with err, when
 * the store refused a write: the build goes on without caching. */
bool cbc_direct_record(struct cbc_direct *d, struct cbc_direct_target *dt,
                       const struct cbc_hash *result, uint8_t flags, struct cbc_dep_list *l,
                       struct cbc_err *err);
/* Puts (result, a stored list's id) first in the target's record, as
 * cbc_direct_record does once the list is stored. */
bool cbc_direct_link(struct cbc_direct *d, struct cbc_direct_target *dt,
                     const struct cbc_hash *result, uint8_t flags, const struct cbc_hash *list,
                     struct cbc_err *err);
/* Stores fresh stamps for every matched list whose match needed hashing (a
 * touched file), once per list, so the next hit reads no file contents. */
void cbc_direct_refresh(struct cbc_direct *d);

/* ---- what one compile read, for its record (collect.c) ------------------- */

/* The facts of a finished compile: the files its depfile names, what the
 * trace saw, and what is ours. */
struct cbc_collect_in {
    char *const *deps;        /* the depfile's files: absolute, normalised, without the source */
    size_t n_deps;
    const char *source;       /* absolute */
    const struct cbc_trace *trace; /* NULL: the compile was not traced */
    const char *const *own;   /* directories of ours (temporaries, staging): their files are */
    size_t n_own;             /*   neither places looked at nor outputs */
    const char *const *outputs; /* the files the command is meant to write (absolute) */
    size_t n_outputs;
    uint64_t started_ns;      /* cbc_now_ns() just before the compile started */
    struct cbc_filememo *memo;
};

struct cbc_collect_out {
    struct cbc_dep_list list;  /* files with hashes and stamps, and the probes, for a record */
    struct cbc_dep *deps;      /* the same files for the result key (paths owned by list) */
    size_t n_deps;
    bool cacheable;   /* false: an input changed while the compile ran (why) */
    bool recordable;  /* false: it cannot be served from a record (why): not traced, a trace
                         that misses a file the compile read, or the time macros */
    char why[320];
    char **side;      /* files the compile wrote besides its outputs (absolute, sorted) */
    size_t n_side;
    char *future;     /* an input whose modification time is in the future, or NULL */
    unsigned mentions; /* CBC_MENTIONS_* of any file read, the source included */
};

/* Hashes every file the compile read (the source too, for the checks),
 * takes their stamps, and turns the trace's absent lookups (less those
 * under `own` and those the compile itself wrote) into the list's probes,
 * each stamped under the deepest directory of it that exists. An input
 * changed since started_ns, or a probe that exists now although the
 * compile did not write it, makes the result uncacheable. CBC_OK unless
 * out of memory or a file cannot be read (err names it). */
enum cbc_status cbc_collect(const struct cbc_collect_in *in, struct cbc_collect_out *out,
                            struct cbc_err *err);
void cbc_collect_release(struct cbc_collect_out *out);

#endif
