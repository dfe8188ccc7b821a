/* backend.h: what a remote backend implements (internal to src/remote), as
 * ccache's RemoteStorage::Backend: Redis (redis.c) and HTTP (http.c) are
 * peers behind remote.c, which owns everything else: the spec, the codec,
 * which failure disables the remote, the counters and the messages.
 *
 * A backend moves bytes under keys and says how it went, nothing more.
 * Every operation takes an absolute deadline (cbc_remote_now_us's clock)
 * that bounds all of it: resolving and connecting when there is no
 * connection yet, sending, and every byte of every reply; when it passes
 * the operation stops and says RB_TIMEOUT. A value whose announced size is
 * over `cap` is refused (RB_BAD) before its body is read, and its
 * connection closed. `detail` gets the server's own words (or the system's)
 * for the message remote.c writes; a backend never prints.
 *
 * Keys are (kind, 32 hex digits) and the configured namespace; each
 * backend spells them as remote.h documents.
 */
#ifndef CBC_REMOTE_BACKEND_H
#define CBC_REMOTE_BACKEND_H

#include "remote.h"

enum rb_result {
    RB_OK = 0,      /* done: a value, stored, deleted, acquired, released */
    RB_ABSENT,      /* no such key (get, exists, delete, release: not ours) */
    RB_EXISTS,      /* put if absent: already there; acquire: held by another */
    RB_BAD,         /* the key holds no value of ours: the wrong type, over the cap */
    RB_TIMEOUT,     /* the deadline passed */
    RB_REFUSED,     /* connection refused, authentication, no permission to read */
    RB_NO_WRITES,   /* the server refuses writes: full, a replica, no permission */
    RB_UNSUPPORTED, /* this backend cannot do that (HTTP: leases, listing) */
    RB_ERROR        /* anything else: a protocol error, a broken connection, a server error */
};

struct rb_ops;
struct cbc_remote_backend {
    const struct rb_ops *ops;
    const struct cbc_remote_cfg *cfg; /* owned by the remote, outlives the backend */
};

/* Called by list for each key of a batch, with its value's size when sizes
 * were asked (else 0). Return false to stop. */
typedef bool (*rb_key_fn)(void *ctx, const char *key, size_t len, uint64_t bytes);

struct rb_ops {
    /* The value: RB_OK with *data (malloc'd, NUL-terminated) and *len, at
     * most `cap` bytes. With expire_s, the key's time to live is set to it
     * in the same round trip (a backend without expiry ignores it);
     * *touch_refused says the server refused that (a read-only user). */
    enum rb_result (*get)(struct cbc_remote_backend *b, const char *kind, const char *hex,
                          uint64_t cap, uint64_t expire_s, uint64_t deadline, uint8_t **data,
                          size_t *len, bool *touch_refused, char *detail, size_t dn);
    /* Stores the bytes (with expire_s: that time to live); if_absent: only
     * when the key is not there (RB_EXISTS when it is). */
    enum rb_result (*put)(struct cbc_remote_backend *b, const char *kind, const char *hex,
                          const void *data, size_t len, uint64_t expire_s, bool if_absent,
                          uint64_t deadline, char *detail, size_t dn);
    /* Whether the key is there (RB_OK) or not (RB_ABSENT), its time to live
     * set to expire_s when that is not 0. */
    enum rb_result (*touch)(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            uint64_t expire_s, uint64_t deadline, char *detail, size_t dn);
    enum rb_result (*del)(struct cbc_remote_backend *b, const char *kind, const char *hex,
                          uint64_t deadline, char *detail, size_t dn);
    /* "lease":hex set to token for ttl_ms if absent, atomically (RB_OK), or
     * RB_EXISTS; release deletes it only if it still holds token. */
    enum rb_result (*acquire)(struct cbc_remote_backend *b, const char *hex, const char *token,
                              unsigned ttl_ms, uint64_t deadline, char *detail, size_t dn);
    enum rb_result (*release)(struct cbc_remote_backend *b, const char *hex, const char *token,
                              uint64_t deadline, char *detail, size_t dn);
    /* One batch of the keys matching `pattern` (a glob) from *cursor
     * ("0" to start; "0" again when the key space is done), about `count`
     * of them, each with its value's size when `sizes`. */
    enum rb_result (*list)(struct cbc_remote_backend *b, char cursor[32], const char *pattern,
                           unsigned count, bool sizes, rb_key_fn fn, void *ctx,
                           uint64_t deadline, char *detail, size_t dn);
    /* The server's software and version. */
    enum rb_result (*version)(struct cbc_remote_backend *b, char *out, size_t len,
                              uint64_t deadline, char *detail, size_t dn);
    /* Drops the connection (a later operation connects again). */
    void (*disconnect)(struct cbc_remote_backend *b);
    void (*free)(struct cbc_remote_backend *b);
};

/* The backends; NULL on out of memory. Built without hiredis or libcurl,
 * the constructor of that kind returns NULL and cbc_remote_kind_built says
 * false. */
struct cbc_remote_backend *cbc_rb_redis_new(const struct cbc_remote_cfg *cfg);
struct cbc_remote_backend *cbc_rb_http_new(const struct cbc_remote_cfg *cfg);

/* The Redis key of (kind, hex) under cfg's namespace: remote.h's format. */
void cbc_rb_redis_key(const struct cbc_remote_cfg *cfg, const char *kind, const char *hex,
                      char *out, size_t len);

/* ---- RESP (redis.c), from (pointer, length) ------------------------------------- */

#define CBC_RESP_LINE_MAX 4096 /* the longest reply line taken (type byte to CRLF) */

/* A reply's first line. */
struct cbc_resp_head {
    char type;        /* '+', '-', ':', '$', '*' */
    int64_t n;        /* '$' and '*': the length or count, -1 for nil; ':' the integer */
    const char *text; /* the line after the type byte (no CRLF), for '+' and '-' */
    size_t text_len;
};
/* Parses the first line of a reply at p[0, len). Returns the bytes the
 * line takes with its CRLF, 0 when it is not complete in len bytes (and
 * could still be), -1 with *why (static text) when it is not RESP: an
 * unknown type, a bad number, a negative length other than -1, a line
 * over CBC_RESP_LINE_MAX or without its CRLF. */
long cbc_resp_head(const uint8_t *p, size_t len, struct cbc_resp_head *h, const char **why);

/* The time left before `deadline`, in ms, rounded up (0 when it passed). */
static inline int rb_left_ms(uint64_t deadline)
{
    uint64_t now = cbc_remote_now_us();
    if (now >= deadline)
        return 0;
    uint64_t ms = (deadline - now + 999) / 1000;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

#endif
