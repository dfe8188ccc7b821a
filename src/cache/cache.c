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

enum cbc_status cbc_cache_init(struct cbc_cache *c, struct cbc_store *store,
                               struct cbc_filememo *memo, cbc_msg_fn msg, void *msg_ctx,
                               struct cbc_err *err)
{
    memset(c, 0, sizeof *c);
    c->store = store;
    c->memo = memo;
    c->msg = msg;
    c->msg_ctx = msg_ctx;
    c->direct = cbc_direct_new(store, memo);
    return c->direct ? CBC_OK : cbc_err_oom(err);
}

void cbc_cache_release(struct cbc_cache *c)
{
    if (c->direct)
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
    if (!c->store)
        return CBC_OK;
    enum cbc_lookup r;
    struct cbc_err e = {0};
    if (cbc_store_get(c->store, &u->result, target, &u->data, &u->len, &r, u->why, sizeof u->why,
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
    enum cbc_status st = cbc_direct_lookup(c->direct, &u->dt, &matched, &u->result, err);
    if (st != CBC_OK || !matched)
        return st;
    return cbc_cache_get(c, u, target, what, err);
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
    if (!c->store) {
        *outcome = CBC_COMMIT_NO_STORE;
        if (why)
            cbc_fmt(why, why_len, "there is no cache");
        return CBC_OK;
    }
    CBC_ASSERT(!co || (co->cacheable && co->recordable)); /* no record of an unsafe compile */
    struct cbc_err e = {0};
    bool ok = (!data ||
               cbc_store_put(c->store, &u->result, target, data, len, &e) == CBC_OK) &&
              (!co || cbc_direct_record(c->direct, &u->dt, &u->result, &co->list, &e));
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
