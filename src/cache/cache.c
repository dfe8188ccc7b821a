/* cache.c: the lookup and the commit of one compile (contract in cache.h).
 *
 * The order of a commit is the invariant every reader relies on: the entry
 * first, then the dependency list, then the record naming both, so a
 * record never names what is not there; and nothing at all when the
 * collection says the compile's inputs moved or its record would not be
 * safe.
 */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

#define say(c, kind, ...) cbc_say((c)->msg, (c)->msg_ctx, (kind), __VA_ARGS__)

char *cbc_cache_base(struct cbc_store *store, const char *source, cbc_msg_fn msg, void *msg_ctx)
{
    if (!store)
        return NULL;
    struct cbc_setting_value v;
    struct cbc_err e = {0};
    if (cbc_store_setting(store, CBC_SET_BASE_DIR, &v, &e) != CBC_OK) {
        cbc_say(msg, msg_ctx, CBC_MSG_WARNING, "%s; keying absolute paths", e.msg);
        return NULL;
    }
    return cbc_base_detect(v.value, source);
}

enum cbc_status cbc_cache_init(struct cbc_cache *c, struct cbc_store *store,
                               struct cbc_filememo *memo, const char *base, const char *cwd,
                               cbc_msg_fn msg, void *msg_ctx, struct cbc_err *err)
{
    memset(c, 0, sizeof *c);
    c->store = store;
    c->memo = memo;
    c->base = base;
    c->cwd = cwd;
    c->msg = msg;
    c->msg_ctx = msg_ctx;
    c->direct = cbc_direct_new(store, memo, base);
    struct cbc_setting_value v; /* a bad value is off; `cubincache config` says what is wrong */
    c->read_only = store && cbc_store_setting(store, CBC_SET_READ_ONLY, &v, NULL) == CBC_OK &&
                   cbc_setting_on(v.value);
    c->recache = store && cbc_store_setting(store, CBC_SET_RECACHE, &v, NULL) == CBC_OK &&
                 cbc_setting_on(v.value);
    return c->direct ? CBC_OK : cbc_err_oom(err);
}

/* Where the entry of a path-dependent result lives: the result key and
 * this tree. */
static struct cbc_hash entry_key(const struct cbc_cache *c, const struct cbc_cache_unit *u)
{
    if (!u->path_dependent)
        return u->result;
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        abort(); /* 200 bytes; nothing sensible to do without them */
    struct cbc_hash k;
    cbc_hasher_str(h, 1, "path-dependent");
    cbc_hasher_hash(h, 2, &u->result);
    cbc_hasher_str(h, 3, c->base);
    cbc_hasher_str(h, 4, c->cwd);
    cbc_hasher_digest(h, &k);
    cbc_hasher_free(h);
    return k;
}

/* The record that vouches for a result key wherever it was made: its
 * candidates' lists say what the compile read and where it looked. */
static struct cbc_hash index_key(const struct cbc_hash *result)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        abort();
    struct cbc_hash k;
    cbc_hasher_str(h, 1, "result-index");
    cbc_hasher_hash(h, 2, result);
    cbc_hasher_digest(h, &k);
    cbc_hasher_free(h);
    return k;
}

void cbc_cache_release(struct cbc_cache *c)
{
    if (c->direct && !c->read_only)
        cbc_direct_refresh(c->direct);
    cbc_direct_free(c->direct);
    memset(c, 0, sizeof *c);
}

enum cbc_status cbc_cache_get(struct cbc_cache *c, struct cbc_cache_unit *u,
                              const struct cbc_target *target, const char *what,
                              struct cbc_err *err)
{
    (void)err;
    u->state = CBC_CACHE_MISS;
    u->data = NULL;
    u->len = 0;
    if (!c->store || c->recache)
        return CBC_OK;
    enum cbc_lookup r;
    struct cbc_err e = {0};
    struct cbc_hash key = entry_key(c, u);
    if (cbc_store_get(c->store, &key, target, &u->data, &u->len, &r, u->why, sizeof u->why,
                      &e) != CBC_OK) {
        say(c, CBC_MSG_WARNING, "cannot read the cache entry of %s: %s", what, e.msg);
        return CBC_OK;
    }
    if (r == CBC_LOOKUP_DROPPED) {
        u->state = CBC_CACHE_DROPPED;
        say(c, CBC_MSG_WARNING, "the cached %s was bad (%s); dropped and rebuilt", what, u->why);
    } else if (r == CBC_LOOKUP_HIT) {
        u->state = CBC_CACHE_HIT;
        u->remote = cbc_store_last_remote(c->store);
    }
    return CBC_OK;
}

enum cbc_status cbc_cache_lookup(struct cbc_cache *c, struct cbc_cache_unit *u,
                                 const struct cbc_target *target, const char *what,
                                 struct cbc_err *err)
{
    u->state = CBC_CACHE_MISS;
    u->data = NULL;
    u->len = 0;
    bool matched = false;
    if (c->recache)
        return CBC_OK;
    enum cbc_status st = cbc_direct_lookup(c->direct, &u->dt, &matched, &u->result, err);
    if (st != CBC_OK || !matched)
        return st;
    u->path_dependent = u->dt.flags & CBC_CAND_PATH_DEPENDENT;
    return cbc_cache_get(c, u, target, what, err);
}

enum cbc_status cbc_cache_get_any(struct cbc_cache *c, struct cbc_cache_unit *u,
                                  const struct cbc_target *target, const char *what,
                                  struct cbc_err *err)
{
    enum cbc_status st = CBC_OK;
    for (int pd = 0; pd < 2 && st == CBC_OK && (!pd || u->state != CBC_CACHE_HIT); pd++) {
        u->path_dependent = pd;
        st = cbc_cache_get(c, u, target, what, err);
    }
    return st;
}

bool cbc_cache_sibling_seen(struct cbc_cache *c, const struct cbc_cache_unit *u)
{
    uint8_t *raw = NULL;
    size_t len = 0;
    if (!c->store || !u->has_sibling ||
        cbc_store_blob_get(c->store, CBC_STORE_DIRECT, &u->sibling, &raw, &len, NULL) != CBC_OK)
        return false;
    struct cbc_direct_rec sib;
    bool ok = cbc_direct_decode(raw, len, &sib, NULL) == CBC_OK;
    free(raw);
    /* only a result this directory has not recorded is news (an edit here
     * is a plain miss, worth no preprocessing) */
    for (size_t i = 0; ok && i < sib.n; i++) {
        bool known = false;
        for (size_t k = 0; k < u->dt.rec.n && !known; k++)
            known = cbc_hash_eq(&u->dt.rec.c[k].result, &sib.c[i].result);
        if (!known)
            return true;
    }
    return false;
}

enum cbc_status cbc_cache_lookup_preprocessed(struct cbc_cache *c, struct cbc_cache_unit *u,
                                              const struct cbc_target *target, const char *what,
                                              struct cbc_err *err)
{
    u->state = CBC_CACHE_MISS;
    u->data = NULL;
    u->len = 0;
    struct cbc_direct_target ix = {.direct_key = index_key(&u->result)};
    struct cbc_hash found;
    bool matched = false;
    if (c->recache)
        return CBC_OK;
    enum cbc_status st = cbc_direct_lookup(c->direct, &ix, &matched, &found, err);
    if (st != CBC_OK || !matched || !cbc_hash_eq(&found, &u->result))
        return st;
    u->path_dependent = ix.flags & CBC_CAND_PATH_DEPENDENT;
    st = cbc_cache_get(c, u, target, what, err);
    if (st != CBC_OK || u->state != CBC_CACHE_HIT)
        return st;
    /* this command's own record, so its next lookup preprocesses nothing */
    const struct cbc_dep_list *l = cbc_direct_list(c->direct, &ix);
    struct cbc_err e = {0};
    if (l && !c->read_only)
        cbc_direct_link(c->direct, &u->dt, &u->result, ix.flags, &l->id, &e);
    u->dt.list = ix.list;
    u->dt.flags = ix.flags;
    return CBC_OK;
}

const struct cbc_dep_list *cbc_cache_unit_list(const struct cbc_cache *c,
                                               const struct cbc_cache_unit *u)
{
    return cbc_direct_list(c->direct, &u->dt);
}

enum cbc_status cbc_cache_commit(struct cbc_cache *c, struct cbc_cache_unit *u,
                                 struct cbc_collect_out *co, const struct cbc_target *target,
                                 const void *data, size_t len, enum cbc_commit *outcome,
                                 char *why, size_t why_len, struct cbc_err *err)
{
    (void)err;
    if (why && why_len)
        why[0] = '\0';
    if (co && (!co->cacheable || !co->recordable)) {
        *outcome = co->cacheable ? CBC_COMMIT_UNRECORDABLE : CBC_COMMIT_CHANGED;
        if (why)
            cbc_fmt(why, why_len, "%s", co->why);
        return CBC_OK;
    }
    if (!c->store || c->read_only) {
        *outcome = CBC_COMMIT_NO_STORE;
        if (why)
            cbc_fmt(why, why_len, c->store ? "read_only is set: nothing is stored"
                                           : "there is no cache");
        return CBC_OK;
    }
    CBC_ASSERT(!co || (co->cacheable && co->recordable)); /* no record of an unsafe compile */
    struct cbc_err e = {0};
    struct cbc_hash key = entry_key(c, u);
    uint8_t flags = u->path_dependent ? CBC_CAND_PATH_DEPENDENT : 0;
    bool ok = (!data || cbc_store_put(c->store, &key, target, data, len, &e) == CBC_OK) &&
              (!co || cbc_direct_record(c->direct, &u->dt, &u->result, flags, &co->list, &e));
    if (ok && co && u->has_sibling && u->dt.rec.n) {
        /* a command keyed with its working directory: the sign that it was
         * compiled somewhere, and the result's index (another directory's
         * preprocessing finds the list that vouches for it) */
        const struct cbc_hash *list = &u->dt.rec.c[0].list;
        struct cbc_direct_target ix = {.direct_key = index_key(&u->result)},
                                 sib = {.direct_key = u->sibling};
        ok = cbc_direct_link(c->direct, &ix, &u->result, flags, list, &e) &&
             cbc_direct_link(c->direct, &sib, &u->result, flags, list, &e);
    }
    *outcome = ok ? CBC_COMMIT_STORED : CBC_COMMIT_UNWRITABLE;
    if (!ok) {
        const char *m = e.msg[0] ? e.msg : "out of memory";
        if (why)
            cbc_fmt(why, why_len, "the cache cannot be written: %s", m);
        if (!c->warned_write) {
            c->warned_write = true;
            say(c, CBC_MSG_WARNING, "cannot write to the cache in '%s' (%s); compiling without "
                "caching", cbc_store_root(c->store), m);
        }
    }
    return CBC_OK;
}
