/* changes.c: what differs between the inputs a manifest entry recorded and
 * the inputs of now, as sentences for `build --explain` and `check`
 * ("dependency '/x/h.cuh' changed"), most specific first.
 *
 * Invariant: every input of a key (key.h) has a sentence here, so a key
 * that differs is never reported as "inputs unchanged" for want of one;
 * test_key's tripwire names this file when an input is added.
 */
#include "key.h"
#include "manifest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>


static bool push_change(char **out, size_t max, size_t *n, char *text)
{
    if (!text)
        return *n < max;
    if (*n < max)
        out[(*n)++] = text;
    else
        free(text);
    return *n < max;
}

static bool str_differs(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

static void join_args(char *const *v, size_t n, struct cbc_buf *b)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            cbc_buf_puts(b, " ");
        cbc_buf_puts(b, v[i]);
    }
}

char *cbc_key_lookup_changed(const struct cbc_manifest *m)
{
    for (size_t i = 0; i < m->n_lookups; i++)
        for (size_t k = 0; k < m->lookups[i].n; k++) {
            char *p = cbc_asprintf("%s/%s", m->lookups[i].dir, m->lookups[i].names[k]);
            struct stat st;
            bool there = p && (stat(p, &st) == 0 || (errno != ENOENT && errno != ENOTDIR));
            char *msg = there ? cbc_asprintf("'%s' now exists: the build looked for a file there "
                                             "and found none, so nvcc would read this one now",
                                             p)
                              : NULL;
            free(p);
            if (msg)
                return msg;
        }
    return NULL;
}

size_t cbc_key_changes(const struct cbc_manifest *m, const struct cbc_manifest_entry *e,
                       const struct cbc_key_now *now, struct cbc_filememo *memo, char **out,
                       size_t max)
{
    size_t n = 0;
    if (max == 0)
        return 0;
    if (str_differs(m->source, now->source) &&
        !push_change(out, max, &n, cbc_asprintf("source path changed: '%s' -> '%s'", m->source,
                                                now->source)))
        return n;
    if (!now->source_hash) {
        if (!push_change(out, max, &n, cbc_asprintf("source '%s' is gone", now->source)))
            return n;
    } else if (!cbc_hash_eq(&m->source_hash, now->source_hash) &&
               !push_change(out, max, &n, cbc_asprintf("source '%s' changed", now->source))) {
        return n;
    }
    size_t nd = 0;
    const struct cbc_dep **deps = cbc_manifest_entry_deps(m, e, &nd);
    for (size_t i = 0; deps && i < nd; i++) {
        struct cbc_hash h;
        char *msg = NULL;
        struct cbc_err he = {0};
        enum cbc_status hs = cbc_filememo_hash(memo, deps[i]->path, NULL, NULL, 0, &h, NULL, &he);
        if (hs == CBC_E_NOT_FOUND)
            msg = cbc_asprintf("dependency '%s' is gone", deps[i]->path);
        else if (hs != CBC_OK)
            msg = cbc_asprintf("dependency '%s' cannot be read: %s", deps[i]->path, he.msg);
        else if (!cbc_hash_eq(&h, &deps[i]->hash))
            msg = cbc_asprintf("dependency '%s' changed", deps[i]->path);
        if (msg && !push_change(out, max, &n, msg)) {
            free(deps);
            return n;
        }
    }
    free(deps);
    char *found = cbc_key_lookup_changed(m);
    if (found && !push_change(out, max, &n, found))
        return n;
    if (!now->nvcc_id) {
        if (!push_change(out, max, &n, cbc_asprintf("nvcc '%s' cannot be identified", m->nvcc)))
            return n;
    } else if (!cbc_hash_eq(&m->nvcc_id, now->nvcc_id)) {
        /* the same path and version with other bytes: a toolkit patched or
         * reinstalled in place, which the message must not hide */
        bool alike = m->nvcc && now->nvcc && m->nvcc_version && now->nvcc_version &&
                     !strcmp(m->nvcc, now->nvcc) && !strcmp(m->nvcc_version, now->nvcc_version);
        char *msg = alike ? cbc_asprintf("nvcc changed: %s %s is another toolkit now (same path "
                                         "and version, other binaries or headers)",
                                         now->nvcc, now->nvcc_version)
                          : cbc_asprintf("nvcc changed: %s %s -> %s %s", m->nvcc,
                                         m->nvcc_version, now->nvcc, now->nvcc_version);
        if (!push_change(out, max, &n, msg))
            return n;
    }
    if (now->host_id && !cbc_hash_eq(&m->host_id, now->host_id) &&
        !push_change(out, max, &n,
                     cbc_asprintf("host compiler changed: %s -> %s", m->host_cc, now->host_cc)))
        return n;
    bool same = m->n_flags == now->n_flags;
    for (size_t i = 0; same && i < now->n_flags; i++)
        same = strcmp(m->flags[i], now->flags[i]) == 0;
    if (!same) {
        struct cbc_buf a = {0}, b = {0};
        join_args(m->flags, m->n_flags, &a);
        join_args(now->flags, now->n_flags, &b);
        char *msg = cbc_asprintf("flags changed: '%s' -> '%s'", a.p ? a.p : "", b.p ? b.p : "");
        cbc_buf_release(&a);
        cbc_buf_release(&b);
        if (!push_change(out, max, &n, msg))
            return n;
    }
    /* every name either side keys (a variable only one side keys counts as
     * unset on the other, and is a change when set) */
    static const struct cbc_env none;
    const struct cbc_env *ne = now->env ? now->env : &none;
    for (int side = 0; side < 2; side++) {
        const struct cbc_env *e = side ? ne : &m->env;
        for (size_t i = 0; i < e->n; i++) {
            const char *name = e->name[i];
            long wi = cbc_env_find(&m->env, name), ii = cbc_env_find(ne, name);
            if (side && wi >= 0)
                continue; /* seen from the manifest's side */
            const char *was = wi >= 0 ? m->env.value[wi] : NULL;
            const char *is = ii >= 0 ? ne->value[ii] : NULL;
            if (!str_differs(was, is) && (wi >= 0) == (ii >= 0))
                continue;
            char *msg = str_differs(was, is)
                            ? cbc_asprintf("%s changed: %s%s%s -> %s%s%s", name, was ? "'" : "",
                                           was ? was : "unset", was ? "'" : "", is ? "'" : "",
                                           is ? is : "unset", is ? "'" : "")
                            : cbc_asprintf("%s is %s by this nvcc's profile", name,
                                           ii >= 0 ? "now read" : "no longer read");
            if (!push_change(out, max, &n, msg))
                return n;
        }
    }
    if (now->cwd && str_differs(m->cwd, now->cwd))
        push_change(out, max, &n,
                    cbc_asprintf("working directory changed: '%s' -> '%s'", m->cwd, now->cwd));
    return n;
}
