/* direct.c: one build's direct mode (API in direct.h).
 *
 * Lists are shared: the compiles of one source for every target read the
 * same files, so they have one list id, and a hit of N targets reads N
 * small records and one list. A list met in this run is kept in a slot and
 * matched against the files once; a hit borrows its paths until
 * cbc_direct_free.
 *
 * Invariants: a list is stored before any record names it; a list already
 * stored and fresh is not written again; a list whose match needed hashing
 * (stale stamps) is stored again with the stamps of now, once.
 */
#include "direct.h"

#include <stdlib.h>
#include <string.h>

struct list_slot {
    struct cbc_dep_list l;
    bool present; /* in the store: fetched and decoded, or stored by a compile here */
    bool matches; /* every file still holds its recorded content */
    bool stale;   /* matching needed hashing: store fresh stamps */
};

struct cbc_direct {
    struct cbc_store *store;
    struct cbc_filememo *memo;
    const char *base; /* the base directory of this build's paths, or NULL */
    struct list_slot *lists;
    size_t n, cap;
};

struct cbc_direct *cbc_direct_new(struct cbc_store *store, struct cbc_filememo *memo,
                                  const char *base)
{
    struct cbc_direct *d = calloc(1, sizeof *d);
    if (d) {
        d->store = store;
        d->memo = memo;
        d->base = base;
    }
    return d;
}

void cbc_direct_free(struct cbc_direct *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->n; i++)
        cbc_dep_list_release(&d->lists[i].l);
    free(d->lists);
    free(d);
}

static long find_list(const struct cbc_direct *d, const struct cbc_hash *id)
{
    for (size_t i = 0; i < d->n; i++)
        if (cbc_hash_eq(&d->lists[i].l.id, id))
            return (long)i;
    return -1;
}

/* A new slot taking `l` (its id set), or -1 when out of memory. */
static long add_list(struct cbc_direct *d, struct cbc_dep_list *l)
{
    if (!cbc_grow(&d->lists, d->n, &d->cap, sizeof *d->lists, 8))
        return -1;
    d->lists[d->n] = (struct list_slot){*l, false, false, false};
    memset(l, 0, sizeof *l);
    return (long)d->n++;
}

/* The list with this id: fetched from the store and matched against the
 * files on the first ask, remembered for the other targets. -1 when out
 * of memory. */
static long list_for(struct cbc_direct *d, const struct cbc_hash *id)
{
    long i = find_list(d, id);
    if (i >= 0)
        return i;
    struct cbc_dep_list l = {.id = *id, .base = d->base};
    uint8_t *raw;
    size_t len;
    bool present = false;
    if (cbc_store_blob_get(d->store, CBC_STORE_DEPS, id, &raw, &len, NULL) == CBC_OK) {
        present = cbc_dep_list_decode(raw, len, id, d->base, &l, NULL) == CBC_OK;
        free(raw);
        if (!present)
            l = (struct cbc_dep_list){.id = *id, .base = d->base};
    }
    i = add_list(d, &l);
    if (i < 0) {
        cbc_dep_list_release(&l);
        return -1;
    }
    struct list_slot *s = &d->lists[i];
    s->present = present;
    s->matches = present && cbc_dep_list_match(&s->l, d->memo, &s->stale);
    return i;
}

enum cbc_status cbc_direct_lookup(struct cbc_direct *d, struct cbc_direct_target *dt, bool *matched,
                                  struct cbc_hash *result, struct cbc_err *err)
{
    *matched = false;
    dt->list = -1;
    dt->rec.n = 0;
    if (!d->store)
        return CBC_OK;
    uint8_t *raw;
    size_t len;
    if (cbc_store_blob_get(d->store, CBC_STORE_DIRECT, &dt->direct_key, &raw, &len, NULL) ==
        CBC_OK) {
        /* an older format, or a damaged record: a miss that rewrites it */
        if (cbc_direct_decode(raw, len, &dt->rec, NULL) != CBC_OK)
            dt->rec.n = 0;
        free(raw);
    }
    for (size_t i = 0; i < dt->rec.n; i++) {
        long k = list_for(d, &dt->rec.c[i].list);
        if (k < 0)
            return cbc_err_oom(err);
        if (d->lists[k].matches) {
            dt->list = k;
            dt->flags = dt->rec.c[i].flags;
            *result = dt->rec.c[i].result;
            *matched = true;
            break;
        }
    }
    return CBC_OK;
}

const struct cbc_dep_list *cbc_direct_list(const struct cbc_direct *d,
                                           const struct cbc_direct_target *dt)
{
    return dt->list < 0 ? NULL : &d->lists[dt->list].l;
}

const struct cbc_direct_dep *cbc_direct_deps(const struct cbc_direct *d,
                                             const struct cbc_direct_target *dt, size_t *n)
{
    if (dt->list < 0) {
        *n = 0;
        return NULL;
    }
    *n = d->lists[dt->list].l.n;
    return d->lists[dt->list].l.deps;
}

/* Stores a list with the stamps it holds, as of now; a refresh of the
 * stamps (local) stays in this cache. */
static bool put_list(struct cbc_direct *d, struct cbc_dep_list *l, bool local,
                     struct cbc_err *err)
{
    l->recorded_ns = cbc_now_ns();
    size_t len = 0;
    uint8_t *b = cbc_dep_list_encode(l, &len);
    bool ok = b && (local ? cbc_store_blob_put_local : cbc_store_blob_put)(
                       d->store, CBC_STORE_DEPS, &l->id, b, len, err) == CBC_OK;
    free(b);
    return ok;
}

bool cbc_direct_record(struct cbc_direct *d, struct cbc_direct_target *dt,
                       const struct cbc_hash *result, uint8_t flags, struct cbc_dep_list *l,
                       struct cbc_err *err)
{
    if (!d->store)
        return true;
    l->base = d->base;
    if (!l->deps || !cbc_dep_list_id(l, &l->id)) {
        cbc_err_oom(err);
        return false;
    }
    long k = find_list(d, &l->id);
    bool ok = true;
    if (k < 0 || !d->lists[k].present || d->lists[k].stale) {
        /* A list met here already (same id: the same files in the same
         * order) takes the fresh stamps in place, as hits may borrow its
         * paths; one fetched but unreadable is replaced. */
        struct cbc_dep_list *put = l;
        if (k >= 0 && d->lists[k].present && d->lists[k].l.n == l->n &&
            d->lists[k].l.n_probes == l->n_probes) {
            for (size_t i = 0; i < l->n; i++)
                d->lists[k].l.deps[i].stamp = l->deps[i].stamp;
            for (size_t i = 0; i < l->n_probes; i++)
                d->lists[k].l.probes[i].stamp = l->probes[i].stamp;
            put = &d->lists[k].l;
        } else if (k >= 0 && !d->lists[k].present) {
            cbc_dep_list_release(&d->lists[k].l);
            d->lists[k].l = *l;
            memset(l, 0, sizeof *l);
            put = &d->lists[k].l;
        }
        ok = put_list(d, put, false, err);
        if (ok && k < 0)
            k = add_list(d, l);
        if (ok && k >= 0)
            d->lists[k] = (struct list_slot){d->lists[k].l, true, true, false};
    }
    if (!ok)
        return false;
    /* the list is stored: now the record that names it */
    CBC_ASSERT(k < 0 || d->lists[k].present);
    return cbc_direct_link(d, dt, result, flags, k >= 0 ? &d->lists[k].l.id : &l->id, err);
}

bool cbc_direct_link(struct cbc_direct *d, struct cbc_direct_target *dt,
                     const struct cbc_hash *result, uint8_t flags, const struct cbc_hash *list,
                     struct cbc_err *err)
{
    if (!d->store)
        return true;
    struct cbc_direct_cand cand = {*result, *list, flags};
    cbc_direct_push(&dt->rec, &cand);
    size_t rl = 0;
    uint8_t *rec = cbc_direct_encode(&dt->rec, &rl);
    if (!rec) {
        cbc_err_oom(err);
        return false;
    }
    bool ok = cbc_store_blob_put(d->store, CBC_STORE_DIRECT, &dt->direct_key, rec, rl, err) ==
              CBC_OK;
    free(rec);
    return ok;
}

void cbc_direct_refresh(struct cbc_direct *d)
{
    for (size_t k = 0; d->store && k < d->n; k++) {
        struct list_slot *s = &d->lists[k];
        if (!(s->present && s->matches && s->stale))
            continue;
        for (size_t i = 0; i < s->l.n; i++) {
            struct cbc_hash h;
            cbc_filememo_hash(d->memo, s->l.deps[i].path, NULL, NULL, 0, &h, &s->l.deps[i].stamp,
                              NULL);
        }
        if (cbc_dep_list_stamp_probes(&s->l)) /* else one appeared since the match */
            put_list(d, &s->l, true, NULL);
        s->stale = false;
    }
}
