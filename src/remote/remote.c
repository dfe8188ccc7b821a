/* remote.c: the remote cache's front (remote.h): the policy over
 * whichever backend the spec names (backend.h): one deadline
 * per operation, which failure disables the remote and which only stops
 * its writes, the counters, and the messages that name the remote, the
 * operation and the fix.
 *
 * Invariants: a value is never larger than the configured max-value (the
 * codec, codec.c, bounds what it decodes); after the first failure of the server nothing more is
 * asked of it; a message never holds the password or the bearer token
 * (only cfg.name is shown).
 */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the remote ------------------------------------------------------------------ */

struct cbc_remote {
    struct cbc_remote_cfg cfg;
    bool failed, no_writes, no_touch;
    struct cbc_remote_backend *b; /* made on first use */
    struct cbc_remote_stats st;
};

bool cbc_remote_kind_built(enum cbc_remote_kind kind)
{
    switch (kind) {
    case CBC_REMOTE_REDIS:
#ifdef CBC_HAVE_HIREDIS
        return true;
#else
        return false;
#endif
    case CBC_REMOTE_HTTP:
#ifdef CBC_HAVE_CURL
        return true;
#else
        return false;
#endif
    }
    return false;
}

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
    if (r->b)
        r->b->ops->free(r->b);
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

/* What to do about a failure, by its kind. */
static void hint_for(struct cbc_err *err, const struct cbc_remote_cfg *c, enum rb_result res,
                     const char *detail)
{
    switch (res) {
    case RB_TIMEOUT:
        cbc_err_hint(err, "a slow server needs a larger |operation-timeout=MS (now %u) or "
                          "|connect-timeout=MS (now %u); a silent one is skipped for %u s "
                          "(|skip-after-failure=SECONDS)",
                     c->op_ms, c->connect_ms, c->skip_s);
        break;
    case RB_REFUSED:
        if (!strncmp(detail, "cannot connect", 14))
            cbc_err_hint(err, "start the server or correct the remote's address (--remote, "
                              "CUBINCACHE_REMOTE or 'remote' in the cache's config)");
        else
            cbc_err_hint(err, "give the remote's credentials in its URL (%s), percent-encoded, "
                              "or an ACL user allowed to read ~cubincache:*",
                         c->kind == CBC_REMOTE_HTTP ? "http://USER:PASSWORD@HOST/PATH or "
                                                      "|bearer-token=TOKEN"
                                                    : "redis://[USER]:PASSWORD@HOST");
        break;
    case RB_NO_WRITES:
        cbc_err_hint(err, "free memory on the server (maxmemory), write to the primary rather than "
                          "a replica, or allow this client to write; readers name it |read-only");
        break;
    case RB_OK:
    case RB_ABSENT:
    case RB_EXISTS:
    case RB_BAD:
    case RB_UNSUPPORTED:
    case RB_ERROR:
        cbc_err_hint(err, "check that %s is %s; it is skipped for %u s meanwhile", c->name,
                     c->kind == CBC_REMOTE_HTTP ? "an HTTP server that takes GET and PUT under its "
                                                  "path (nginx with dav_methods PUT DELETE)"
                                                : "a Redis server",
                     c->skip_s);
        break;
    }
}

/* The server failed `op`: counted by kind, unusable from now on (or, for
 * refused writes, no more writes), and err says how and what to do. */
static enum cbc_status op_failed(struct cbc_remote *r, enum rb_result res, const char *op,
                                 const char *detail, struct cbc_err *err)
{
    r->st.errors++;
    if (res == RB_TIMEOUT)
        r->st.timeouts++;
    if (res == RB_REFUSED || res == RB_NO_WRITES)
        r->st.refusals++;
    if (res == RB_NO_WRITES) {
        r->no_writes = true;
        cbc_err_set(err, CBC_E_CACHE, "remote cache %s: %s: refuses writes: %s; this process "
                                      "stores nothing more there",
                    r->cfg.name, op, detail && *detail ? detail : "no reason given");
    } else {
        r->failed = true;
        cbc_err_set(err, CBC_E_CACHE, "remote cache %s: %s: %s", r->cfg.name, op,
                    detail && *detail ? detail : "no answer");
    }
    hint_for(err, &r->cfg, res, detail ? detail : "");
    if (r->b && res != RB_NO_WRITES)
        r->b->ops->disconnect(r->b);
    return CBC_E_CACHE;
}

/* The backend, made on first use; NULL (err set, the remote unusable) when
 * this build has none of its kind. */
static struct cbc_remote_backend *backend(struct cbc_remote *r, struct cbc_err *err)
{
    if (r->failed) {
        cbc_err_set(err, CBC_E_CACHE, "remote cache %s is not used after its failure",
                    r->cfg.name);
        return NULL;
    }
    if (r->b)
        return r->b;
    bool redis = r->cfg.kind == CBC_REMOTE_REDIS;
    if (!cbc_remote_kind_built(r->cfg.kind)) {
        r->failed = true;
        cbc_err_set(err, CBC_E_CACHE, "remote cache %s: this cubincache was built without %s "
                                      "support (%s)",
                    r->cfg.name, redis ? "Redis" : "HTTP", redis ? "hiredis" : "libcurl");
        cbc_err_hint(err, "rebuild it with %s installed (meson setup -D%s=enabled)",
                     redis ? "libhiredis-dev" : "libcurl4-openssl-dev", redis ? "redis" : "http");
        return NULL;
    }
    r->b = redis ? cbc_rb_redis_new(&r->cfg) : cbc_rb_http_new(&r->cfg);
    if (!r->b) {
        r->failed = true;
        cbc_err_oom(err);
    }
    return r->b;
}

static uint64_t deadline_of(const struct cbc_remote *r, uint64_t t0)
{
    return t0 + (uint64_t)r->cfg.op_ms * 1000;
}

/* What every operation starts with: its clock (and so its one deadline),
 * the backend, the key in hex (empty for an operation on no key), room for
 * the server's words. Every operation that op_begin started ends in
 * op_end, on every path, so its time is counted once. */
struct op {
    uint64_t t0, deadline;
    uint64_t time0; /* r->st.time_us when it began */
    struct cbc_remote_backend *b;
    char hex[CBC_HASH_HEX_LEN + 1];
    char detail[400];
};

/* false (err set by backend(): the remote failed or is not built) when
 * there is nothing to ask; the operation then has not begun. */
static bool op_begin(struct cbc_remote *r, const struct cbc_hash *key, struct op *o,
                     struct cbc_err *err)
{
    o->t0 = cbc_remote_now_us();
    o->deadline = deadline_of(r, o->t0);
    o->time0 = r->st.time_us;
    o->detail[0] = '\0';
    o->hex[0] = '\0';
    if (key)
        cbc_hash_hex(key, o->hex);
    o->b = backend(r, err);
    return o->b != NULL;
}

/* Ends an operation: the time on the remote is what it was when the
 * operation began plus its wall time, so an operation made inside another
 * (verify's peek and delete, called back from a listing's batch) is not
 * counted twice. Returns st. */
static enum cbc_status op_end(struct cbc_remote *r, const struct op *o, enum cbc_status st)
{
    r->st.time_us = o->time0 + (cbc_remote_now_us() - o->t0);
    return st;
}

/* get and peek: `lookup` refreshes the time to live and counts hits and
 * misses, a peek does neither. */
static enum cbc_status fetch(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                             bool lookup, uint8_t **data, size_t *len, bool *bad_value, char *why,
                             size_t why_len, struct cbc_err *err)
{
    *bad_value = false;
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    uint64_t touch = lookup && r->cfg.expire_s && cbc_remote_writable(r) && !r->no_touch
                         ? r->cfg.expire_s
                         : 0;
    uint8_t *v = NULL;
    size_t vl = 0;
    bool touch_refused = false;
    enum rb_result res = o.b->ops->get(o.b, kind, o.hex, r->cfg.max_value + CBC_REMOTE_VALUE_HEADER, touch,
                                       o.deadline, &v, &vl, &touch_refused, o.detail,
                                       sizeof o.detail);
    if (touch_refused)
        r->no_touch = true; /* a user that may read only: reads go on */
    enum cbc_status st = CBC_E_NOT_FOUND;
    char w[400] = "";
    bool bad = res == RB_BAD;
    if (res == RB_OK) {
        r->st.bytes_read += vl;
        st = cbc_remote_decode_max(v, vl, r->cfg.max_value, data, len, w, sizeof w);
        free(v);
        if (st == CBC_OK)
            r->st.hits += lookup;
        bad = st != CBC_OK;
    } else if (res == RB_ABSENT) {
        r->st.misses += lookup;
    } else if (res == RB_BAD) {
        snprintf(w, sizeof w, "%s", o.detail);
    } else {
        return op_end(r, &o, op_failed(r, res, "lookup", o.detail, err));
    }
    if (bad) { /* a bad value: a miss, counted */
        snprintf(why, why_len, "%s %s: %s", kind, o.hex, w);
        r->st.errors++;
        r->st.bad_values++;
        *bad_value = true;
        st = CBC_E_NOT_FOUND;
    }
    return op_end(r, &o, st);
}

enum cbc_status cbc_remote_get(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                               uint8_t **data, size_t *len, bool *bad_value, char *why,
                               size_t why_len, struct cbc_err *err)
{
    return fetch(r, kind, key, true, data, len, bad_value, why, why_len, err);
}

enum cbc_status cbc_remote_peek(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                                uint8_t **data, size_t *len, bool *bad_value, char *why,
                                size_t why_len, struct cbc_err *err)
{
    return fetch(r, kind, key, false, data, len, bad_value, why, why_len, err);
}

/* Stores the value of data under o's key (if_absent: only when the key is
 * not there) and returns what the backend said; *written says whether it
 * stored, its bytes counted. What readers would refuse (over max-value) is
 * left out: RB_OK, nothing written. When encoding fails (out of memory),
 * *st says so and the result is RB_OK: nothing was asked of the server. */
static enum rb_result store(struct cbc_remote *r, struct op *o, const char *kind,
                            const void *data, size_t len, bool if_absent, bool *written,
                            enum cbc_status *st, struct cbc_err *err)
{
    *written = false;
    uint8_t *v;
    size_t vl;
    if (len > r->cfg.max_value)
        return RB_OK;
    if ((*st = cbc_remote_encode(data, len, &v, &vl, err)) != CBC_OK)
        return RB_OK;
    enum rb_result res = o->b->ops->put(o->b, kind, o->hex, v, vl, r->cfg.expire_s, if_absent,
                                        o->deadline, o->detail, sizeof o->detail);
    free(v);
    if (res == RB_OK) {
        r->st.bytes_written += vl;
        *written = true;
    }
    return res;
}

enum cbc_status cbc_remote_put(struct cbc_remote *r, const char *kind, const struct cbc_hash *key,
                               const void *data, size_t len, struct cbc_err *err)
{
    if (!cbc_remote_writable(r))
        return CBC_OK;
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    enum cbc_status st = CBC_OK;
    bool written;
    enum rb_result res = store(r, &o, kind, data, len, false, &written, &st, err);
    if (res != RB_OK)
        st = op_failed(r, res, "store", o.detail, err);
    return op_end(r, &o, st);
}

enum cbc_status cbc_remote_reshare(struct cbc_remote *r, const char *kind,
                                   const struct cbc_hash *key, const void *data, size_t len,
                                   bool *written, struct cbc_err *err)
{
    bool w = false;
    if (written)
        *written = false;
    if (!r->cfg.reshare || !cbc_remote_writable(r))
        return CBC_OK;
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    enum cbc_status st = CBC_OK;
    /* there already (its time to live refreshed): nothing to send */
    enum rb_result res = o.b->ops->touch(o.b, kind, o.hex, r->cfg.expire_s, o.deadline, o.detail,
                                         sizeof o.detail);
    if (res == RB_ABSENT) {
        res = store(r, &o, kind, data, len, true, &w, &st, err);
        if (res == RB_EXISTS) /* another wrote it meanwhile */
            res = RB_OK;
    }
    r->st.reshared += w;
    if (written)
        *written = w;
    if (res != RB_OK)
        st = op_failed(r, res, "reshare", o.detail, err);
    return op_end(r, &o, st);
}

enum cbc_status cbc_remote_delete(struct cbc_remote *r, const char *kind,
                                  const struct cbc_hash *key, struct cbc_err *err)
{
    if (r->cfg.read_only)
        return cbc_err_set(err, CBC_E_USAGE, "remote cache %s is read-only: nothing is deleted "
                                             "there", r->cfg.name);
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    enum rb_result res = o.b->ops->del(o.b, kind, o.hex, o.deadline, o.detail, sizeof o.detail);
    return op_end(r, &o, res == RB_OK || res == RB_ABSENT
                             ? CBC_OK
                             : op_failed(r, res, "delete", o.detail, err));
}

/* ---- leases ----------------------------------------------------------------------- */

enum cbc_status cbc_remote_lease_acquire(struct cbc_remote *r, const struct cbc_hash *key,
                                         const char *token, unsigned ttl_ms,
                                         enum cbc_remote_lease *out, struct cbc_err *err)
{
    *out = CBC_REMOTE_LEASE_UNSUPPORTED;
    if (!token || !*token || strlen(token) > 64 || ttl_ms == 0)
        return cbc_err_set(err, CBC_E_USAGE, "a lease needs a token of 1 to 64 bytes and a "
                                             "time to live");
    if (r->failed)
        return CBC_OK;
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    if (!o.b->ops->acquire) /* HTTP: UNSUPPORTED, the caller compiles */
        return op_end(r, &o, CBC_OK);
    enum rb_result res;
    enum cbc_status st = CBC_OK;
    if (!cbc_remote_writable(r)) {
        /* only whether another holds it: a GET, which a reader may do */
        uint8_t *v = NULL;
        size_t vl = 0;
        bool tr = false;
        res = o.b->ops->get(o.b, "lease", o.hex, 4096, 0, o.deadline, &v, &vl, &tr, o.detail,
                            sizeof o.detail);
        free(v);
        if (res == RB_OK || res == RB_BAD)
            *out = CBC_REMOTE_LEASE_HELD;
        else if (res != RB_ABSENT)
            st = op_failed(r, res, "lease", o.detail, err);
    } else {
        res = o.b->ops->acquire(o.b, o.hex, token, ttl_ms, o.deadline, o.detail,
                                sizeof o.detail);
        if (res == RB_OK)
            *out = CBC_REMOTE_LEASE_ACQUIRED;
        else if (res == RB_EXISTS)
            *out = CBC_REMOTE_LEASE_HELD;
        else if (res != RB_UNSUPPORTED)
            st = op_failed(r, res, "lease", o.detail, err);
    }
    return op_end(r, &o, st);
}

enum cbc_status cbc_remote_lease_release(struct cbc_remote *r, const struct cbc_hash *key,
                                         const char *token, bool *released, struct cbc_err *err)
{
    if (released)
        *released = false;
    if (r->failed || !token || !*token)
        return CBC_OK;
    struct op o;
    if (!op_begin(r, key, &o, err))
        return CBC_E_CACHE;
    if (!o.b->ops->release || !cbc_remote_writable(r)) /* it ends with its ttl */
        return op_end(r, &o, CBC_OK);
    enum rb_result res = o.b->ops->release(o.b, o.hex, token, o.deadline, o.detail,
                                           sizeof o.detail);
    enum cbc_status st = CBC_OK;
    if (res == RB_OK && released)
        *released = true;
    else if (res != RB_OK && res != RB_ABSENT && res != RB_UNSUPPORTED)
        st = op_failed(r, res, "lease release", o.detail, err);
    return op_end(r, &o, st);
}

/* ---- operators ---------------------------------------------------------------------- */

struct list_ctx {
    struct cbc_remote *r;
    bool all;
    uint64_t seen, max;
    cbc_remote_key_fn fn;
    void *ctx;
    bool stop;
};

static bool list_one(void *vctx, const char *key, size_t len, uint64_t bytes)
{
    struct list_ctx *lc = vctx;
    struct cbc_remote_key k;
    bool parsed = cbc_remote_key_parse(key, len, &k);
    const char *want = lc->r->cfg.ns_name ? lc->r->cfg.ns_name : "";
    if (!lc->all && parsed && strcmp(k.ns_name, want) != 0)
        return true; /* another namespace's */
    if (lc->seen >= lc->max) {
        lc->stop = true;
        return false;
    }
    lc->seen++;
    char shown[512];
    snprintf(shown, sizeof shown, "%.*s", (int)(len > 500 ? 500 : len), key);
    if (!lc->fn(lc->ctx, shown, parsed ? &k : NULL, bytes)) {
        lc->stop = true;
        return false;
    }
    return true;
}

enum cbc_status cbc_remote_list(struct cbc_remote *r, bool all, bool sizes, uint64_t max_keys,
                                uint64_t deadline_us, cbc_remote_key_fn fn, void *ctx,
                                bool *complete, struct cbc_err *err)
{
    *complete = false;
    char pattern[128];
    if (!all && r->cfg.ns_name)
        snprintf(pattern, sizeof pattern, "cubincache:v1:%s:*", r->cfg.ns_name);
    else
        snprintf(pattern, sizeof pattern, "cubincache:v1:*");
    struct list_ctx lc = {r, all, 0, max_keys, fn, ctx, false};
    char cursor[32] = "0";
    /* one operation per batch, each with its own deadline */
    do {
        if (deadline_us && cbc_remote_now_us() >= deadline_us)
            return CBC_OK;
        struct op o;
        if (!op_begin(r, NULL, &o, err))
            return CBC_E_CACHE;
        if (!o.b->ops->list)
            return op_end(r, &o, cbc_err_set(err, CBC_E_UNSUPPORTED,
                                             "remote cache %s cannot list what it holds (an "
                                             "HTTP server has no listing cubincache can rely "
                                             "on)", r->cfg.name));
        enum rb_result res = o.b->ops->list(o.b, cursor, pattern, 1000, sizes, list_one, &lc,
                                            o.deadline, o.detail, sizeof o.detail);
        if (res != RB_OK)
            return op_end(r, &o, op_failed(r, res, "list", o.detail, err));
        op_end(r, &o, CBC_OK);
    } while (!lc.stop && strcmp(cursor, "0") != 0);
    *complete = !lc.stop;
    return CBC_OK;
}

enum cbc_status cbc_remote_server_version(struct cbc_remote *r, char *out, size_t len,
                                          struct cbc_err *err)
{
    struct op o;
    if (!op_begin(r, NULL, &o, err))
        return CBC_E_CACHE;
    if (!o.b->ops->version)
        return op_end(r, &o, cbc_err_set(err, CBC_E_UNSUPPORTED,
                                         "remote cache %s does not say its version",
                                         r->cfg.name));
    enum rb_result res = o.b->ops->version(o.b, out, len, o.deadline, o.detail,
                                           sizeof o.detail);
    return op_end(r, &o, res == RB_OK ? CBC_OK : op_failed(r, res, "version", o.detail, err));
}
