/* remote.h: the second-level cache behind the local store: a fleet's
 * builders share what any of them compiled, on Redis or on an HTTP server
 * (ccache's HTTP storage protocol), two backends behind one interface
 * (backend.h).
 *
 * A remote is named like ccache's remote storage:
 *   redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]      (port 6379, db 0)
 *   redis+unix:///PATH/TO/SOCKET  or  redis+unix:/PATH
 *   http://[USER:PASSWORD@]HOST[:PORT][/PATH]       (port 80)
 *   https://[USER:PASSWORD@]HOST[:PORT][/PATH]      (port 443)
 * followed by |-separated attributes:
 *   connect-timeout=MS (100)  operation-timeout=MS (1000)  read-only[=true]
 *   expire=DURATION (0: none; 90s, 30m, 12h, 7d; Redis)
 *   skip-after-failure=SECONDS (60)  db=N (Redis over a unix socket)
 *   namespace=NAME (none)  reshare[=true] (false)  max-value=SIZE (256MiB)
 *   layout=subdirs|flat (subdirs; HTTP)  ca=FILE (https)
 *   bearer-token=TOKEN (HTTP; never shown)
 * rediss:// is refused with the reason (no TLS in the hiredis this is
 * built against).
 *
 * What the remote stores are the local store's own files (an entry or a
 * blob, header and all), so a remote hit is verified by exactly the code
 * that verifies a local one. On the wire a value is
 *   "CBCR" | version 1 | codec (0 raw, 1 zstd) | 2 reserved | raw size (8,
 *   little-endian) | the bytes, zstd-compressed when that saves space
 * under keys (Redis)
 *   "cubincache:v1:<kind>:<32 hex digits>"              (no namespace)
 *   "cubincache:v1:<namespace>:<kind>:<32 hex digits>"  (namespace=NAME)
 * or URLs (HTTP, layout=subdirs; flat joins the parts with '-' after the
 * path instead)
 *   <URL path>/v1/[<namespace>/]<kind>/<2 hex>/<30 hex>
 * where <kind> is "objects", "direct", "deps" or "lease".
 *
 * Invariants: a remote never makes a build wrong or slow beyond its
 * timeouts: each operation (resolving, connecting and authenticating when
 * there is no connection yet, sending, and every byte of the reply) ends
 * by one deadline, the operation timeout, the connect part also by the
 * connect timeout; a value over max-value is refused from its announced
 * size, before its body is read; the first failure of the server (refused,
 * timed out, auth, a protocol error) disables it for the rest of the
 * process and is reported once; a bad value (garbage, truncated, wrong
 * type, too large) is a miss and a count, never data handed on; a server
 * that refuses writes (full, a replica, no permission) stops this
 * process's writes, not its reads. The password and the bearer token never
 * appear in a message or in `name`. Never prints.
 */
#ifndef CBC_REMOTE_H
#define CBC_REMOTE_H

#include "common.h"

#define CBC_REMOTE_VALUE_MAX (256u << 20) /* the default max-value: 256 MiB */
#define CBC_REMOTE_NAMESPACE_MAX 64       /* [A-Za-z0-9._-], 1 to 64 of them */

enum cbc_remote_kind {
    CBC_REMOTE_REDIS = 0,
    CBC_REMOTE_HTTP = 1 /* http:// and https:// */
};

struct cbc_remote_cfg {
    enum cbc_remote_kind kind;
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
    char *ns_name;    /* NULL: none (the keys of before namespaces) */
    bool reshare;        /* a local hit writes the entry back when the remote lacks it */
    uint64_t max_value;  /* the largest value taken, in bytes (raw and on the wire) */
    /* HTTP */
    bool tls;            /* https:// */
    char *path;          /* the URL's path, without a final '/' ("" for none) */
    bool flat;           /* layout=flat */
    char *ca_file;       /* ca=FILE: the certificates trusted for https, NULL: the system's */
    char *bearer_token;  /* NULL: none */
};

/* Parses a remote's spec. CBC_E_USAGE naming the part that is wrong (and
 * for rediss://, why it is not supported and what to do). An empty spec or
 * "none" gives CBC_E_NOT_FOUND (no remote). */
enum cbc_status cbc_remote_parse(const char *spec, struct cbc_remote_cfg *cfg,
                                 struct cbc_err *err);
void cbc_remote_cfg_release(struct cbc_remote_cfg *cfg);
/* Whether this build can talk to a remote of that kind (hiredis, libcurl). */
bool cbc_remote_kind_built(enum cbc_remote_kind kind);

/* What this process did with it. `errors` counts every failure and bad
 * value; timeouts, refusals and bad values are parts of it, the rest are
 * protocol errors and broken connections. */
struct cbc_remote_stats {
    uint64_t hits, misses; /* every GET: entries and records */
    uint64_t errors, bytes_read, bytes_written, time_us;
    uint64_t timeouts;   /* operations that ran out of time (connect, silent, slow) */
    uint64_t refusals;   /* connection refused, authentication or permission, writes refused
                            (full: OOM, a replica: READONLY, NOPERM; HTTP 401, 403, 405, 507) */
    uint64_t bad_values; /* values that did not decode, over max-value, of the wrong type */
    uint64_t reshared;   /* local hits written back because the remote lacked them */
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

/* Looks `kind`:`key` up (kind: "objects", "direct", "deps"). With expire
 * set and the remote writable, a hit also refreshes the key's time to live
 * in the same round trip. CBC_OK with the stored bytes (*data malloc'd,
 * NUL-terminated, not counted); CBC_E_NOT_FOUND for a miss, including a
 * value that does not decode or is over max-value (why says what was
 * wrong, *bad is set); CBC_E_CACHE when the server failed (err says how,
 * with a remedy; the remote is now unusable). */
enum cbc_status cbc_remote_get(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                               uint8_t **data, size_t *len, bool *bad, char *why, size_t why_len,
                               struct cbc_err *err);
/* As cbc_remote_get, for operators: no time to live refreshed, no hit or
 * miss counted. */
enum cbc_status cbc_remote_peek(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                                uint8_t **data, size_t *len, bool *bad, char *why, size_t why_len,
                                struct cbc_err *err);
/* Stores the bytes, replacing what is there (not writable: does nothing,
 * CBC_OK). CBC_E_CACHE when the server failed or refuses writes (err says
 * which). */
enum cbc_status cbc_remote_put(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                               const void *data, size_t len, struct cbc_err *err);
/* reshare: a local hit's bytes written back when the remote lacks the key
 * (never rewriting one it has; with expire, a key it has gets its time to
 * live refreshed instead). One round trip when the key is there, two when
 * it is not. Does nothing (CBC_OK) unless reshare is set and the remote is
 * writable. *written (may be NULL) says whether it stored them. */
enum cbc_status cbc_remote_reshare(struct cbc_remote *r, const char *kind,
                                   const struct cbc_hash *key, const void *data, size_t len,
                                   bool *written, struct cbc_err *err);
/* Deletes `kind`:`key` (for `cache remote verify --delete`). CBC_OK also
 * when it was not there; CBC_E_USAGE for a read-only remote. */
enum cbc_status cbc_remote_delete(struct cbc_remote *r, const char *kind,
                                  const struct cbc_hash *key, struct cbc_err *err);
void cbc_remote_stats(const struct cbc_remote *r, struct cbc_remote_stats *out);

/* ---- leases: compile once per fleet ------------------------------------------ */

enum cbc_remote_lease {
    CBC_REMOTE_LEASE_ACQUIRED = 0, /* this process holds it until release or ttl */
    CBC_REMOTE_LEASE_HELD = 1,     /* another holds it: its result may come soon */
    CBC_REMOTE_LEASE_UNSUPPORTED = 2 /* the backend has none (HTTP), or this client may not
                                       write and nobody holds it */
};
/* Takes the lease "lease":`key` for ttl_ms with `token` (a process's own
 * random text, up to 64 bytes) as its value: Redis SET NX PX, atomic
 * across the fleet. A read-only client cannot take one: it learns only
 * whether another holds it (HELD) or not (UNSUPPORTED). CBC_E_CACHE when
 * the server failed (as cbc_remote_get), *out then UNSUPPORTED. */
enum cbc_status cbc_remote_lease_acquire(struct cbc_remote *r, const struct cbc_hash *key,
                                         const char *token, unsigned ttl_ms,
                                         enum cbc_remote_lease *out, struct cbc_err *err);
/* Gives the lease back if it is still `token`'s (compare and delete in one
 * server-side step: a lease that expired and was taken by another is left
 * to it). *released (may be NULL) says whether it was ours and is gone. */
enum cbc_status cbc_remote_lease_release(struct cbc_remote *r, const struct cbc_hash *key,
                                         const char *token, bool *released, struct cbc_err *err);

/* ---- operators: what the remote holds ------------------------------------------ */

/* A key of the remote as cubincache names them, parsed. */
struct cbc_remote_key {
    char ns_name[CBC_REMOTE_NAMESPACE_MAX + 1]; /* "" for none */
    char kind[16];                                 /* "objects", "direct", "deps", "lease" */
    struct cbc_hash hash;
};
/* Parses "cubincache:v1:[NS:]KIND:HEX"; false for anything else. */
bool cbc_remote_key_parse(const char *key, size_t len, struct cbc_remote_key *out);
/* Called for each key found: `parsed` is NULL when the key is under
 * cubincache:v1: but not one cubincache writes. Return false to stop. */
typedef bool (*cbc_remote_key_fn)(void *ctx, const char *key, const struct cbc_remote_key *parsed,
                                  uint64_t value_bytes);
/* Lists the keys under cubincache:v1: (every namespace with `all`, else
 * the configured one's), at most max_keys, until deadline_us (monotonic
 * clock; 0: none), each with its value's size when `sizes` (STRLEN, in the
 * same round trips). Bounded in memory by one batch. *complete says
 * whether the whole key space was seen. CBC_E_UNSUPPORTED for a backend
 * that cannot list (HTTP); CBC_E_CACHE when the server failed. */
enum cbc_status cbc_remote_list(struct cbc_remote *r, bool all, bool sizes, uint64_t max_keys,
                                uint64_t deadline_us, cbc_remote_key_fn fn, void *ctx,
                                bool *complete, struct cbc_err *err);
/* The server's software and version ("redis 7.0.15"); CBC_E_UNSUPPORTED
 * when it does not say. */
enum cbc_status cbc_remote_server_version(struct cbc_remote *r, char *out, size_t len,
                                          struct cbc_err *err);
/* The monotonic clock the deadlines above use, in microseconds. */
uint64_t cbc_remote_now_us(void);

/* The value codec alone (for tests and tools): encode into a malloc'd
 * buffer; decode checks the header and sizes (the raw size at most
 * CBC_REMOTE_VALUE_MAX, or `max` for decode_max) and decompresses. */
enum cbc_status cbc_remote_encode(const void *data, size_t len, uint8_t **out, size_t *out_len,
                                  struct cbc_err *err);
enum cbc_status cbc_remote_decode(const uint8_t *v, size_t vlen, uint8_t **out, size_t *out_len,
                                  char *why, size_t why_len);
enum cbc_status cbc_remote_decode_max(const uint8_t *v, size_t vlen, uint64_t max, uint8_t **out,
                                      size_t *out_len, char *why, size_t why_len);
#define CBC_REMOTE_VALUE_HEADER 16 /* what the codec adds to the raw bytes at most */

#endif
