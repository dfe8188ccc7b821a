/* remote.c: the Redis second-level cache (remote.h): the spec parser, the
 * value codec and the hiredis client with its timeouts.
 *
 * Invariants: every call on the server runs under SO_RCVTIMEO/SO_SNDTIMEO
 * of the operation timeout, and the connect under the connect timeout, so
 * no server (dead, silent, slow, hostile) holds a build longer than those;
 * a reply is checked for its type before it is read; a value is never
 * larger than CBC_REMOTE_VALUE_MAX, and decompression is bounded by the
 * size the header declares, which must also fit that limit.
 */
#include "remote.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <zstd.h>

#ifdef CBC_HAVE_HIREDIS
#include <hiredis/hiredis.h>
#endif

#define VALUE_MAGIC "CBCR"
#define VALUE_HEADER 16
#define VALUE_VERSION 1

/* ---- the spec ------------------------------------------------------------- */

void cbc_remote_cfg_release(struct cbc_remote_cfg *c)
{
    free(c->host);
    free(c->socket);
    free(c->user);
    if (c->password)
        memset(c->password, 0, strlen(c->password));
    free(c->password);
    free(c->name);
    memset(c, 0, sizeof *c);
}

static bool parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 19)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* "90", "90s", "30m", "12h", "7d" */
static bool parse_duration(const char *s, size_t n, uint64_t *out)
{
    uint64_t mul = 1;
    if (n > 0 && strchr("smhd", s[n - 1])) {
        mul = s[n - 1] == 's' ? 1 : s[n - 1] == 'm' ? 60 : s[n - 1] == 'h' ? 3600 : 86400;
        n--;
    }
    uint64_t v;
    if (!parse_uint(s, n, 100ull * 365 * 86400, &v))
        return false;
    *out = v * mul;
    return true;
}

static char *pct_decode(const char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            o[k++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            o[k++] = s[i];
        }
    }
    o[k] = '\0';
    return o;
}

static enum cbc_status bad(struct cbc_err *err, const char *spec_shown, const char *what)
{
    cbc_err_set(err, CBC_E_USAGE, "remote '%s': %s", spec_shown, what);
    cbc_err_hint(err, "write it as redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] or "
                      "redis+unix:///PATH, then |read-only, |connect-timeout=MS, "
                      "|operation-timeout=MS, |expire=7d, |skip-after-failure=SECONDS");
    return CBC_E_USAGE;
}

static enum cbc_status parse(const char *spec, struct cbc_remote_cfg *c, struct cbc_err *err)
{
    if (!spec || !*spec || !strcmp(spec, "none"))
        return CBC_E_NOT_FOUND;
    c->port = 6379;
    c->connect_ms = 100;
    c->op_ms = 1000;
    c->skip_s = 60;
    size_t ul = strcspn(spec, "|");
    const char *url = spec;
    const char *end = url + ul;
    bool unix_sock = !strncmp(url, "redis+unix:", 11);
    if (!unix_sock && strncmp(url, "redis://", 8) != 0)
        return bad(err, "(not shown)", "it is not a redis:// or redis+unix: URL");
    const char *rest = unix_sock ? url + 11 : url + 8;
    if (unix_sock && !strncmp(rest, "//", 2))
        rest += 2;
    /* [USER][:PASSWORD]@ (the last '@': a password may hold one unescaped) */
    const char *at = rest < end ? memrchr(rest, '@', (size_t)(end - rest)) : NULL;
    const char *colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
    const char *auth_b = rest;
    /* the spec as messages show it: never the password */
    char shown[512];
    if (at)
        snprintf(shown, sizeof shown, "%.*s%.*s%s@%.*s", (int)(auth_b - url), url,
                 (int)((colon ? colon : at) - auth_b), auth_b, colon ? ":***" : "",
                 (int)(end - at - 1), at + 1);
    else
        snprintf(shown, sizeof shown, "%.*s", (int)ul, url);
    if (at) {
        const char *ue = colon ? colon : at;
        if (ue > auth_b && !(c->user = pct_decode(auth_b, (size_t)(ue - auth_b))))
            return cbc_err_oom(err);
        if (colon && !(c->password = pct_decode(colon + 1, (size_t)(at - colon - 1))))
            return cbc_err_oom(err);
        rest = at + 1;
    }
    if (unix_sock) {
        if (rest >= end || *rest != '/') {
            cbc_remote_cfg_release(c);
            return bad(err, shown, "a unix socket needs an absolute path");
        }
        if (!(c->socket = cbc_strndup(rest, (size_t)(end - rest))))
            return cbc_err_oom(err);
    } else {
        const char *hb = rest, *he;
        if (*hb == '[') { /* [::1]:6379 */
            he = memchr(hb, ']', (size_t)(end - hb));
            if (!he) {
                cbc_remote_cfg_release(c);
                return bad(err, shown, "an IPv6 address lacks its ']'");
            }
            c->host = cbc_strndup(hb + 1, (size_t)(he - hb - 1));
            he++;
        } else {
            he = hb;
            while (he < end && *he != ':' && *he != '/')
                he++;
            c->host = cbc_strndup(hb, (size_t)(he - hb));
        }
        if (!c->host)
            return cbc_err_oom(err);
        if (!*c->host) {
            cbc_remote_cfg_release(c);
            return bad(err, shown, "no host");
        }
        const char *p = he;
        if (p < end && *p == ':') {
            const char *pe = p + 1;
            while (pe < end && *pe != '/')
                pe++;
            uint64_t port;
            if (!parse_uint(p + 1, (size_t)(pe - p - 1), 65535, &port) || port == 0) {
                cbc_remote_cfg_release(c);
                return bad(err, shown, "the port is not a number from 1 to 65535");
            }
            c->port = (int)port;
            p = pe;
        }
        if (p < end && *p == '/') {
            uint64_t db;
            if (p + 1 < end && !parse_uint(p + 1, (size_t)(end - p - 1), 1 << 20, &db)) {
                cbc_remote_cfg_release(c);
                return bad(err, shown, "the database after '/' is not a number");
            }
            if (p + 1 < end)
                c->db = (int)db;
        }
    }
    /* attributes */
    for (const char *a = spec + ul; *a == '|';) {
        a++;
        size_t n = strcspn(a, "|");
        const char *eq = memchr(a, '=', n);
        size_t kn = eq ? (size_t)(eq - a) : n;
        const char *v = eq ? eq + 1 : NULL;
        size_t vn = eq ? n - kn - 1 : 0;
        uint64_t x;
#define KEY(s) (kn == strlen(s) && !strncmp(a, s, kn))
        if (KEY("read-only")) {
            if (!v || (vn == 4 && !strncmp(v, "true", 4)))
                c->read_only = true;
            else if (vn == 5 && !strncmp(v, "false", 5))
                c->read_only = false;
            else {
                cbc_remote_cfg_release(c);
                return bad(err, shown, "read-only takes true or false");
            }
        } else if (KEY("connect-timeout") && v && parse_uint(v, vn, 60000, &x) && x > 0) {
            c->connect_ms = (unsigned)x;
        } else if (KEY("operation-timeout") && v && parse_uint(v, vn, 600000, &x) && x > 0) {
            c->op_ms = (unsigned)x;
        } else if (KEY("expire") && v && parse_duration(v, vn, &x)) {
            c->expire_s = x;
        } else if (KEY("skip-after-failure") && v && parse_duration(v, vn, &x) && x <= 86400) {
            c->skip_s = (unsigned)x;
        } else if (KEY("db") && v && parse_uint(v, vn, 1 << 20, &x)) {
            c->db = (int)x;
        } else {
            char what[200];
            snprintf(what, sizeof what, "attribute '%.*s' is unknown or has a bad value",
                     (int)(n > 100 ? 100 : n), a);
            cbc_remote_cfg_release(c);
            return bad(err, shown, what);
        }
#undef KEY
        a += n;
    }
    if (!(c->name = cbc_strdup(shown)))
        return cbc_err_oom(err);
    return CBC_OK;
}

enum cbc_status cbc_remote_parse(const char *spec, struct cbc_remote_cfg *c, struct cbc_err *err)
{
    memset(c, 0, sizeof *c);
    enum cbc_status st = parse(spec, c, err);
    if (st != CBC_OK)
        cbc_remote_cfg_release(c); /* nothing half-parsed is left, the password least */
    return st;
}

/* ---- the codec -------------------------------------------------------------- */

enum cbc_status cbc_remote_encode(const void *data, size_t len, uint8_t **out, size_t *out_len,
                                  struct cbc_err *err)
{
    size_t bound = ZSTD_compressBound(len);
    uint8_t *v = malloc(VALUE_HEADER + (bound > len ? bound : len));
    if (!v)
        return cbc_err_oom(err);
    memcpy(v, VALUE_MAGIC, 4);
    v[4] = VALUE_VERSION;
    v[5] = 0;
    v[6] = v[7] = 0;
    cbc_wr64(v + 8, len);
    size_t z = len >= 512 ? ZSTD_compress(v + VALUE_HEADER, bound, data, len, 3) : 0;
    if (len >= 512 && !ZSTD_isError(z) && z + z / 16 < len) { /* worth it: 6% or more */
        v[5] = 1;
        *out_len = VALUE_HEADER + z;
    } else {
        memcpy(v + VALUE_HEADER, data, len);
        *out_len = VALUE_HEADER + len;
    }
    *out = v;
    return CBC_OK;
}

enum cbc_status cbc_remote_decode(const uint8_t *v, size_t vlen, uint8_t **out, size_t *out_len,
                                  char *why, size_t why_len)
{
    if (vlen < VALUE_HEADER || memcmp(v, VALUE_MAGIC, 4) != 0) {
        snprintf(why, why_len, "not a cubincache value (%zu bytes, bad magic)", vlen);
        return CBC_E_FORMAT;
    }
    if (v[4] != VALUE_VERSION || v[5] > 1) {
        snprintf(why, why_len, "value version %u codec %u, expected version %u", v[4], v[5],
                 VALUE_VERSION);
        return CBC_E_FORMAT;
    }
    uint64_t raw = cbc_rd64(v + 8);
    if (raw > CBC_REMOTE_VALUE_MAX) {
        snprintf(why, why_len, "declares %llu bytes, over the %u limit", (unsigned long long)raw,
                 CBC_REMOTE_VALUE_MAX);
        return CBC_E_FORMAT;
    }
    uint8_t *o = malloc((size_t)raw + 1);
    if (!o) {
        snprintf(why, why_len, "out of memory");
        return CBC_E_NOMEM;
    }
    if (v[5] == 0) {
        if (vlen - VALUE_HEADER != raw) {
            free(o);
            snprintf(why, why_len, "%zu bytes where the header says %llu (truncated?)",
                     vlen - VALUE_HEADER, (unsigned long long)raw);
            return CBC_E_FORMAT;
        }
        memcpy(o, v + VALUE_HEADER, (size_t)raw);
    } else {
        size_t z = ZSTD_decompress(o, (size_t)raw, v + VALUE_HEADER, vlen - VALUE_HEADER);
        if (ZSTD_isError(z) || z != raw) {
            free(o);
            snprintf(why, why_len, "the compressed bytes do not decode to the %llu declared (truncated or damaged)%s%s",
                     (unsigned long long)raw, ZSTD_isError(z) ? ": " : "",
                     ZSTD_isError(z) ? ZSTD_getErrorName(z) : "");
            return CBC_E_FORMAT;
        }
    }
    o[raw] = 0;
    *out = o;
    *out_len = (size_t)raw;
    return CBC_OK;
}

/* ---- the client -------------------------------------------------------------- */

struct cbc_remote {
    struct cbc_remote_cfg cfg;
    bool failed, no_writes;
#ifdef CBC_HAVE_HIREDIS
    redisContext *c;
#endif
    struct cbc_remote_stats st;
};

struct cbc_remote *cbc_remote_new(struct cbc_remote_cfg *cfg)
{
    struct cbc_remote *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->cfg = *cfg;
    memset(cfg, 0, sizeof *cfg);
    return r;
}

void cbc_remote_free(struct cbc_remote *r)
{
    if (!r)
        return;
#ifdef CBC_HAVE_HIREDIS
    if (r->c)
        redisFree(r->c);
#endif
    cbc_remote_cfg_release(&r->cfg);
    free(r);
}

const struct cbc_remote_cfg *cbc_remote_config(const struct cbc_remote *r)
{
    return &r->cfg;
}

bool cbc_remote_usable(const struct cbc_remote *r)
{
    return !r->failed;
}

void cbc_remote_disable(struct cbc_remote *r)
{
    r->failed = true;
}

bool cbc_remote_writable(const struct cbc_remote *r)
{
    return !r->failed && !r->cfg.read_only && !r->no_writes;
}

void cbc_remote_stop_writes(struct cbc_remote *r)
{
    r->no_writes = true;
}

void cbc_remote_stats(const struct cbc_remote *r, struct cbc_remote_stats *out)
{
    *out = r->st;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void key_name(const char *ns, const struct cbc_hash *key, char *out, size_t n)
{
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(key, hex);
    snprintf(out, n, "cubincache:v1:%s:%s", ns, hex);
}

#ifdef CBC_HAVE_HIREDIS

/* The server failed: unusable from now on, and err says how. */
static enum cbc_status server_failed(struct cbc_remote *r, struct cbc_err *err, const char *what,
                                     const char *detail)
{
    r->failed = true;
    r->st.errors++;
    /* the message first: detail may point into the context freed below */
    cbc_err_set(err, CBC_E_CACHE, "remote cache %s: %s: %s", r->cfg.name, what,
                detail && *detail ? detail : "no answer");
    if (r->c) {
        redisFree(r->c);
        r->c = NULL;
    }
    return CBC_E_CACHE;
}

static const char *ctx_error(redisContext *c)
{
    if (!c)
        return "out of memory";
    if (c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
        return "no answer within the operation timeout";
    return c->errstr[0] ? c->errstr : "connection error";
}

/* A reply that must be +OK (AUTH, SELECT). */
static bool command_ok(struct cbc_remote *r, struct cbc_err *err, const char *what,
                       redisReply *rep)
{
    if (!rep) {
        server_failed(r, err, what, ctx_error(r->c));
        return false;
    }
    bool ok = rep->type == REDIS_REPLY_STATUS;
    if (!ok) {
        char detail[256];
        snprintf(detail, sizeof detail, "%.*s",
                 rep->type == REDIS_REPLY_ERROR ? (int)(rep->len > 200 ? 200 : rep->len) : 15,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "unexpected reply");
        freeReplyObject(rep);
        server_failed(r, err, what, detail);
        return false;
    }
    freeReplyObject(rep);
    return true;
}

static bool connect_once(struct cbc_remote *r, struct cbc_err *err)
{
    if (r->c)
        return true;
    if (r->failed) {
        cbc_err_set(err, CBC_E_CACHE, "remote cache %s is not used after its failure",
                    r->cfg.name);
        return false;
    }
    struct timeval ct = {r->cfg.connect_ms / 1000, (long)(r->cfg.connect_ms % 1000) * 1000};
    struct timeval ot = {r->cfg.op_ms / 1000, (long)(r->cfg.op_ms % 1000) * 1000};
    r->c = r->cfg.socket ? redisConnectUnixWithTimeout(r->cfg.socket, ct)
                         : redisConnectWithTimeout(r->cfg.host, r->cfg.port, ct);
    if (!r->c || r->c->err) {
        char detail[200];
        snprintf(detail, sizeof detail, "%s",
                 r->c && r->c->err == REDIS_ERR_IO && errno == EINPROGRESS
                     ? "no connection within the connect timeout"
                     : ctx_error(r->c));
        server_failed(r, err, "cannot connect", detail);
        return false;
    }
    if (redisSetTimeout(r->c, ot) != REDIS_OK) {
        server_failed(r, err, "cannot set its timeout", ctx_error(r->c));
        return false;
    }
    if (r->cfg.password) {
        redisReply *rep = r->cfg.user ? redisCommand(r->c, "AUTH %s %s", r->cfg.user, r->cfg.password)
                                      : redisCommand(r->c, "AUTH %s", r->cfg.password);
        if (!command_ok(r, err, "authentication failed", rep))
            return false;
    }
    if (r->cfg.db != 0 && !command_ok(r, err, "cannot select the database",
                                      redisCommand(r->c, "SELECT %d", r->cfg.db)))
        return false;
    return true;
}

enum cbc_status cbc_remote_get(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               uint8_t **data, size_t *len, bool *bad_value, char *why,
                               size_t why_len, struct cbc_err *err)
{
    *bad_value = false;
    uint64_t t0 = now_us();
    if (!connect_once(r, err)) {
        r->st.time_us += now_us() - t0;
        return CBC_E_CACHE;
    }
    char k[96];
    key_name(ns, key, k, sizeof k);
    redisReply *rep = redisCommand(r->c, "GET %s", k);
    enum cbc_status st;
    if (!rep) {
        st = server_failed(r, err, "GET failed", ctx_error(r->c));
    } else if (rep->type == REDIS_REPLY_NIL) {
        r->st.misses++;
        st = CBC_E_NOT_FOUND;
    } else if (rep->type == REDIS_REPLY_ERROR &&
               (!strncmp(rep->str, "NOAUTH", 6) || !strncmp(rep->str, "NOPERM", 6) ||
                !strncmp(rep->str, "WRONGPASS", 9) || !strncmp(rep->str, "LOADING", 7))) {
        char detail[256];
        snprintf(detail, sizeof detail, "%.*s", (int)(rep->len > 200 ? 200 : rep->len), rep->str);
        st = server_failed(r, err, "GET refused", detail);
    } else if (rep->type != REDIS_REPLY_STRING) {
        /* WRONGTYPE and other errors about this key: a bad value, a miss */
        snprintf(why, why_len, "%s: %s", k,
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "not a string value");
        r->st.errors++;
        *bad_value = true;
        st = CBC_E_NOT_FOUND;
    } else {
        r->st.bytes_read += rep->len;
        char w[300];
        st = cbc_remote_decode((const uint8_t *)rep->str, rep->len, data, len, w, sizeof w);
        if (st == CBC_OK) {
            r->st.hits++;
        } else {
            snprintf(why, why_len, "%s: %s", k, w);
            r->st.errors++;
            *bad_value = true;
            st = CBC_E_NOT_FOUND;
        }
    }
    if (rep)
        freeReplyObject(rep);
    r->st.time_us += now_us() - t0;
    return st;
}

enum cbc_status cbc_remote_put(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               const void *data, size_t len, struct cbc_err *err)
{
    if (r->cfg.read_only || r->no_writes)
        return CBC_OK;
    uint64_t t0 = now_us();
    if (!connect_once(r, err)) {
        r->st.time_us += now_us() - t0;
        return CBC_E_CACHE;
    }
    uint8_t *v;
    size_t vl;
    enum cbc_status st = cbc_remote_encode(data, len, &v, &vl, err);
    if (st != CBC_OK)
        return st;
    char k[96];
    key_name(ns, key, k, sizeof k);
    redisReply *rep = r->cfg.expire_s
                          ? redisCommand(r->c, "SET %s %b EX %llu", k, v, vl,
                                         (unsigned long long)r->cfg.expire_s)
                          : redisCommand(r->c, "SET %s %b", k, v, vl);
    free(v);
    if (!rep) {
        st = server_failed(r, err, "SET failed", ctx_error(r->c));
    } else if (rep->type == REDIS_REPLY_ERROR) {
        char detail[256];
        snprintf(detail, sizeof detail, "%.*s", (int)(rep->len > 200 ? 200 : rep->len), rep->str);
        if (!strncmp(rep->str, "OOM", 3) || !strncmp(rep->str, "READONLY", 8) ||
            !strncmp(rep->str, "NOPERM", 6)) {
            /* full, a replica, or no write right: reads still work */
            r->no_writes = true;
            r->st.errors++;
            st = cbc_err_set(err, CBC_E_CACHE, "remote cache %s refuses writes: %s; this "
                                               "process stores nothing more there",
                             r->cfg.name, detail);
        } else {
            st = server_failed(r, err, "SET refused", detail);
        }
    } else {
        r->st.bytes_written += vl;
    }
    if (rep)
        freeReplyObject(rep);
    r->st.time_us += now_us() - t0;
    return st;
}

#else /* no hiredis */

enum cbc_status cbc_remote_get(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               uint8_t **data, size_t *len, bool *bad_value, char *why,
                               size_t why_len, struct cbc_err *err)
{
    (void)ns, (void)key, (void)data, (void)len, (void)why, (void)why_len;
    *bad_value = false;
    r->failed = true;
    return cbc_err_set(err, CBC_E_CACHE, "remote cache %s: this cubincache was built without "
                                         "Redis support (hiredis)", r->cfg.name);
}

enum cbc_status cbc_remote_put(struct cbc_remote *r, const char *ns, const struct cbc_hash *key,
                               const void *data, size_t len, struct cbc_err *err)
{
    (void)ns, (void)key, (void)data, (void)len;
    r->failed = true;
    return cbc_err_set(err, CBC_E_CACHE, "remote cache %s: this cubincache was built without "
                                         "Redis support (hiredis)", r->cfg.name);
}

#endif
