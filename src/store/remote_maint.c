/* remote_maint.c: the remote as a whole, for operators (store.h,
 * `cubincache cache remote stats|push|verify`): what it holds, filling it
 * from the local store, and checking every value it holds with the checks
 * a local file passes.
 *
 * Bounded: listing goes one batch (about 1000 keys) at a time, each under
 * the remote's operation timeout, at most max_keys and until a deadline;
 * push and verify hold one value at a time. Unlike a build, a failure of
 * the remote is an error returned here (an operator asked), not a warning.
 */
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum cbc_status need_remote(struct cbc_store *s, struct cbc_err *err)
{
    if (!s->remote)
        return cbc_err_set(err, CBC_E_NOT_FOUND, "no remote cache is named (--remote, "
                                                 "CUBINCACHE_REMOTE or 'remote' in the cache's "
                                                 "config)");
    return CBC_OK;
}

/* ---- stats ---------------------------------------------------------------------- */

static bool count_key(void *ctx, const char *key, const struct cbc_remote_key *k, uint64_t bytes)
{
    (void)key;
    struct cbc_store_remote_inventory *inv = ctx;
    inv->keys++;
    inv->bytes += bytes;
    if (!k) {
        inv->foreign++;
        return true;
    }
    size_t i = 0;
    while (i < inv->n_ns && strcmp(inv->ns[i].name, k->ns_name) != 0)
        i++;
    if (i == inv->n_ns) {
        if (inv->n_ns == CBC_INVENTORY_NS_MAX) {
            inv->ns_others++;
            return true;
        }
        snprintf(inv->ns[inv->n_ns++].name, sizeof inv->ns[0].name, "%s", k->ns_name);
    }
    inv->ns[i].bytes += bytes;
    if (!strcmp(k->kind, "objects"))
        inv->ns[i].objects++;
    else if (!strcmp(k->kind, "direct"))
        inv->ns[i].direct++;
    else if (!strcmp(k->kind, "deps"))
        inv->ns[i].deps++;
    else
        inv->ns[i].lease++;
    return true;
}

enum cbc_status cbc_store_remote_inventory(struct cbc_store *s, uint64_t max_keys,
                                           uint64_t deadline_us,
                                           struct cbc_store_remote_inventory *out,
                                           struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    enum cbc_status st = need_remote(s, err);
    if (st == CBC_OK)
        st = cbc_remote_server_version(s->remote, out->version, sizeof out->version, err);
    if (st == CBC_E_UNSUPPORTED) {
        snprintf(out->version, sizeof out->version, "unknown");
        st = CBC_OK;
    }
    if (st == CBC_OK)
        st = cbc_remote_list(s->remote, true, true, max_keys, deadline_us, count_key, out,
                             &out->complete, err);
    return st;
}

/* ---- push --------------------------------------------------------------------------- */

enum cbc_status cbc_store_remote_push(struct cbc_store *s, uint64_t *pushed, uint64_t *bytes,
                                      uint64_t *bad, cbc_store_report_fn report, void *ctx,
                                      struct cbc_err *err)
{
    *pushed = *bytes = *bad = 0;
    enum cbc_status st = need_remote(s, err);
    if (st != CBC_OK)
        return st;
    if (cbc_remote_config(s->remote)->read_only)
        return cbc_err_set(err, CBC_E_USAGE, "remote cache %s is read-only: nothing is pushed "
                                             "there", cbc_remote_config(s->remote)->name);
    /* entries and the records direct mode needs; never a machine's own
     * toolchain identities (namespaces[3]) */
    for (size_t k = 0; k < 3 && st == CBC_OK; k++) {
        bool objects = k == 0;
        struct scan sc = {0};
        st = cbc_st_scan_ns(s, namespaces[k], &sc, err);
        for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
            const struct scan_item *it = &sc.v[i];
            if (it->kind != I_ENTRY)
                continue;
            uint8_t *raw = NULL;
            size_t len = 0;
            if (cbc_read_at(s->fd, s->root, it->rel, objects ? CBC_FILE_MAX : BLOB_MAX, &raw,
                            &len, NULL) != CBC_OK)
                continue; /* removed meanwhile */
            const char *slash = strchr(it->rel, '/');
            char hex[CBC_HASH_HEX_LEN + 1];
            snprintf(hex, sizeof hex, "%.2s%.30s", slash + 1, slash + 4);
            struct cbc_hash key;
            cbc_hash_from_hex(hex, &key);
            char why[CBC_ERR_MSG_MAX] = "";
            const uint8_t *payload;
            size_t plen;
            bool good = objects ? cbc_st_entry_check(raw, len, &key, NULL, it->rel, &payload,
                                                     &plen, why, sizeof why)
                                : cbc_st_blob_check(raw, len, &key, why, sizeof why);
            if (!good) {
                (*bad)++;
                if (report) {
                    char path[512];
                    snprintf(path, sizeof path, "%s/%s", s->root, it->rel);
                    report(ctx, path, why);
                }
            } else {
                struct cbc_remote_stats before, after;
                cbc_remote_stats(s->remote, &before);
                st = cbc_remote_put(s->remote, namespaces[k], &key, raw, len, err);
                cbc_remote_stats(s->remote, &after);
                if (st == CBC_OK && !cbc_remote_writable(s->remote))
                    st = cbc_err_set(err, CBC_E_CACHE, "remote cache %s takes no writes",
                                     cbc_remote_config(s->remote)->name);
                if (st == CBC_OK) {
                    (*pushed)++;
                    *bytes += after.bytes_written - before.bytes_written;
                }
            }
            free(raw);
        }
        cbc_st_scan_release(&sc);
    }
    return st;
}

/* ---- verify --------------------------------------------------------------------------- */

struct verify_ctx {
    struct cbc_store *s;
    bool delete_bad;
    struct cbc_store_remote_verify *out;
    cbc_store_report_fn report;
    void *rctx;
    enum cbc_status st;
    struct cbc_err *err;
};

static bool verify_key(void *vctx, const char *key, const struct cbc_remote_key *k,
                       uint64_t bytes)
{
    (void)bytes;
    struct verify_ctx *v = vctx;
    if (!k) {
        v->out->foreign++;
        if (v->report)
            v->report(v->rctx, key, "not a key cubincache writes; left alone");
        return true;
    }
    if (!strcmp(k->kind, "lease"))
        return true; /* a builder's lease, not a value */
    uint8_t *raw = NULL;
    size_t n = 0;
    bool bad_value = false;
    char why[CBC_ERR_MSG_MAX] = "";
    enum cbc_status st = cbc_remote_peek(v->s->remote, k->kind, &k->hash, &raw, &n, &bad_value,
                                         why, sizeof why, v->err);
    if (st == CBC_E_CACHE || st == CBC_E_NOMEM) {
        v->st = st;
        return false;
    }
    if (st == CBC_E_NOT_FOUND && !bad_value)
        return true; /* expired or deleted meanwhile */
    v->out->checked++;
    bool good = false;
    if (st == CBC_OK) {
        char rel[80];
        cbc_st_rel_path(k->kind, &k->hash, !strcmp(k->kind, "objects") ? ".cbc" : ".dep", rel,
                        sizeof rel);
        const uint8_t *payload;
        size_t plen;
        /* the very checks a local file passes */
        good = !strcmp(k->kind, "objects")
                   ? cbc_st_entry_check(raw, n, &k->hash, NULL, rel, &payload, &plen, why,
                                        sizeof why)
                   : cbc_st_blob_check(raw, n, &k->hash, why, sizeof why);
        free(raw);
    }
    if (good)
        return true;
    v->out->bad++;
    char shown[600];
    snprintf(shown, sizeof shown, "%s", why);
    if (v->delete_bad) {
        st = cbc_remote_delete(v->s->remote, k->kind, &k->hash, v->err);
        if (st != CBC_OK) {
            v->st = st;
            return false;
        }
        v->out->deleted++;
        snprintf(shown, sizeof shown, "%s; deleted", why);
    }
    if (v->report)
        v->report(v->rctx, key, shown);
    return true;
}

enum cbc_status cbc_store_remote_verify(struct cbc_store *s, bool delete_bad, uint64_t max_keys,
                                        uint64_t deadline_us, struct cbc_store_remote_verify *out,
                                        cbc_store_report_fn report, void *ctx,
                                        struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    enum cbc_status st = need_remote(s, err);
    if (st != CBC_OK)
        return st;
    if (delete_bad && cbc_remote_config(s->remote)->read_only)
        return cbc_err_set(err, CBC_E_USAGE, "remote cache %s is read-only: --delete cannot "
                                             "delete there", cbc_remote_config(s->remote)->name);
    struct verify_ctx v = {s, delete_bad, out, report, ctx, CBC_OK, err};
    st = cbc_remote_list(s->remote, false, false, max_keys, deadline_us, verify_key, &v,
                         &out->complete, err);
    if (v.st != CBC_OK) {
        out->complete = false;
        return v.st;
    }
    return st;
}
