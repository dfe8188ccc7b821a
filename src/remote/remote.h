/* remote.h: the second-level cache on Redis, behind the local store: a
 * fleet's builders share what any of them compiled.
 *
 * A remote is named like ccache's remote storage:
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]      (port 6379, db 0)
 *   redis+unix:///PATH/TO/SOCKET  or  redis+unix:/PATH
 * followed by |-separated attributes:
 *   connect-timeout=MS (100)  operation-timeout=MS (1000)  read-only[=true]
 *   expire=DURATION (0: none; 90s, 30m, 12h, 7d)  skip-after-failure=SECONDS (60)
 *   db=N (for a unix socket)
 *
 * What the remote stores are the local store's own files (an entry or a
 * blob, header and all), so a remote hit is verified by exactly the code
 * that verifies a local one. On the wire a value is
 *   "CBCR" | version 1 | codec (0 raw, 1 zstd) | 2 reserved | raw size (8,
 *   little-endian) | the bytes, zstd-compressed when that saves space
 * under keys "cubincache:v1:<namespace>:<32 hex digits>".
 *
 * Invariants: a remote never makes a build wrong or slow beyond its
 * timeouts: every operation is bounded by the operation timeout (connect by
 * the connect timeout); the first failure of the server (refused, timed
 * out, auth, a protocol error) disables it for the rest of the process and
 * is reported once; a bad value (garbage, truncated, wrong type, too large)
 * is a miss and a count, never data handed on; a full server (OOM) stops
 * this process's writes, not its reads. The password never appears in a
 * message or in `name`. Never prints.
 */
#ifndef CBC_REMOTE_H
#define CBC_REMOTE_H

#include "common.h"

#define CBC_REMOTE_VALUE_MAX (256u << 20) /* the largest value fetched: 256 MiB */

struct cbc_remote_cfg {
    char *host;     /* NULL for a unix socket */
    int port;
    char *socket;   /* NULL for TCP */
    char *user, *password; /* NULL: none */
    int db;
    unsigned connect_ms, op_ms;
    bool read_only;
    uint64_t expire_s;   /* 0: no expiry */
    unsigned skip_s;     /* how long a failure makes other processes skip it */
    char *name;          /* the URL without its password, for messages */
};

/* Parses a remote's spec. CBC_E_USAGE naming the part that is wrong. An
 * empty spec or "none" gives CBC_E_NOT_FOUND (no remote). */
enum cbc_status cbc_remote_parse(const char *spec, struct cbc_remote_cfg *cfg,
                                 struct cbc_err *err);
void cbc_remote_cfg_release(struct cbc_remote_cfg *cfg);

struct cbc_remote_stats {
    uint64_t hits, misses; /* every GET: entries and records */
    uint64_t errors, bytes_read, bytes_written, time_us;
};

struct cbc_remote;
/* Takes the config over. Connects on first use. NULL on out of memory. */
struct cbc_remote *cbc_remote_new(struct cbc_remote_cfg *cfg);
void cbc_remote_free(struct cbc_remote *r);
const struct cbc_remote_cfg *cbc_remote_config(const struct cbc_remote *r);
/* Whether it may still be asked: false after a failure of the server. */
bool cbc_remote_usable(const struct cbc_remote *r);
/* Marks it unusable without asking it (another process saw it fail). */
void cbc_remote_disable(struct cbc_remote *r);
/* Whether it still takes writes: false when read-only or after the server
 * refused one (full); cbc_remote_stop_writes makes it so (another process
 * saw it full). */
bool cbc_remote_writable(const struct cbc_remote *r);
void cbc_remote_stop_writes(struct cbc_remote *r);

/* Looks `ns`:`key` up. CBC_OK with the stored bytes (*data malloc'd,
 * NUL-terminated, not counted); CBC_E_NOT_FOUND for a miss, including a
 * value that does not decode (why says what was wrong, *bad is set);
 * CBC_E_CACHE when the server failed (err says how; the remote is now
 * unusable). */
enum cbc_status cbc_remote_get(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               uint8_t **data, size_t *len, bool *bad, char *why, size_t why_len,
                               struct cbc_err *err);
/* Stores the bytes (read-only: does nothing, CBC_OK). CBC_E_CACHE when the
 * server failed or is full (err says which). */
enum cbc_status cbc_remote_put(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               const void *data, size_t len, struct cbc_err *err);
/* What this process did with it. */
void cbc_remote_stats(const struct cbc_remote *r, struct cbc_remote_stats *out);

/* The value codec alone (for tests and tools): encode into a malloc'd
 * buffer; decode checks the header and sizes and decompresses. */
enum cbc_status cbc_remote_encode(const void *data, size_t len, uint8_t **out, size_t *out_len,
                                  struct cbc_err *err);
enum cbc_status cbc_remote_decode(const uint8_t *v, size_t vlen, uint8_t **out, size_t *out_len,
                                  char *why, size_t why_len);

#endif
