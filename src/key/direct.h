/* direct.h: dependency records, the map from a direct key to the result key
 * that lets a hit skip the preprocessor (ccache's "direct mode").
 *
 * A record holds up to CBC_DIRECT_MAX candidates, most recent first; each
 * is the full list of files one compile read, with their content hashes and
 * stat stamps, and the result key that list produced. A candidate matches
 * when every listed file still has the recorded content; stamps only spare
 * the reading (key.h, cbc_filememo_hash).
 *
 * On-disk format (little-endian):
 *   0  8   magic "CBCDEP1\n"
 *   8  4   candidate count C
 *   then C times:
 *      16  result key
 *      8   recorded_ns (wall clock when the stamps were taken)
 *      4   file count N
 *      N times: u16 path length L, L bytes of path, 16 content hash,
 *               8 size, 8 mtime_ns, 8 ctime_ns, 8 inode, 8 device
 * Decoding is bounds-checked; a record that does not decode is treated as
 * absent (and rewritten by the next miss), never as an error.
 *
 * Internal and unstable.
 */
#ifndef CBC_DIRECT_H
#define CBC_DIRECT_H

#include "key.h"

#define CBC_DIRECT_MAX 8

struct cbc_direct_dep {
    char *path;
    struct cbc_hash hash;
    struct cbc_stamp stamp;
};

struct cbc_direct_cand {
    struct cbc_hash result;
    uint64_t recorded_ns;
    struct cbc_direct_dep *deps;
    size_t n;
};

struct cbc_direct_rec {
    struct cbc_direct_cand *c;
    size_t n;
};

enum cbc_status cbc_direct_decode(const uint8_t *data, size_t len, struct cbc_direct_rec *out,
                                  struct cbc_err *err);
/* malloc'd bytes; NULL on out of memory. */
uint8_t *cbc_direct_encode(const struct cbc_direct_rec *rec, size_t *len);
void cbc_direct_cand_release(struct cbc_direct_cand *c);
void cbc_direct_release(struct cbc_direct_rec *rec);

/* Finds the first candidate whose files still hold the recorded content.
 * Returns its index or -1. *stale_stamps is set when the match needed
 * hashing because stamps changed or were too fresh to trust: the caller
 * then refreshes the record so the next hit is stat-only. */
long cbc_direct_match(const struct cbc_direct_rec *rec, struct cbc_filememo *memo,
                      bool *stale_stamps);

/* Puts `fresh` first (taking ownership), drops older candidates with the
 * same result key and keeps at most CBC_DIRECT_MAX. */
enum cbc_status cbc_direct_push(struct cbc_direct_rec *rec, struct cbc_direct_cand *fresh,
                                struct cbc_err *err);

#endif
