/* tier.c: the remote tier behind the local store (store_int.h, remote.h):
 * a local miss of an entry, a direct record or a dependency list asks the
 * remote; what it answers is checked exactly as a local file is and
 * written here; puts are written through. A remote that fails is skipped
 * for the rest of the process and, through v1/remote-skip, by the builds
 * of the next seconds, with one warning. Toolchain identities stay local.
 */
#include "store_int.h"

#include <cubincache/binfmt.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the remote (remote.h) ------------------------------------------------------ */

/* v1/remote-skip: "<hash of the remote's name> <unix time until> <what>\n",
 * written when a remote fails ("skip") or refuses writes ("no-writes"), so
 * the other builds of the next seconds skip it (or only read) instead of
 * each waiting for its timeout and warning again. */

static void name_hash_hex(const struct cbc_store *s, char hex[CBC_HASH_HEX_LEN + 1])
{
    const char *name = cbc_remote_config(s->remote)->name;
    struct cbc_hash h;
    cbc_hash_bytes(name, strlen(name), &h);
    cbc_hash_hex(&h, hex);
}

/* Whether the remote may be asked now: attached, not failed in this
 * process, not marked failed by another within its skip time. */
bool cbc_st_remote_ready(struct cbc_store *s)
{
    if (!s->remote || !cbc_remote_usable(s->remote))
        return false;
    if (s->remote_checked)
        return true;
    s->remote_checked = true;
    uint8_t *data = NULL;
    size_t len = 0;
    if (cbc_read_at(s->fd, s->root, SKIP_FILE, SMALL_MAX, &data, &len, NULL) != CBC_OK)
        return true;
    char hex[CBC_HASH_HEX_LEN + 1];
    name_hash_hex(s, hex);
    unsigned long long until = 0;
    char what[16] = "skip";
    bool marked = len > CBC_HASH_HEX_LEN && !memcmp(data, hex, CBC_HASH_HEX_LEN) &&
                  sscanf((const char *)data + CBC_HASH_HEX_LEN, " %llu %15s", &until, what) >= 1 &&
                  (unsigned long long)time(NULL) < until;
    free(data);
    bool skip = marked && strcmp(what, "no-writes") != 0;
    if (marked && !skip) {
        cbc_remote_stop_writes(s->remote);
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_NOTE, "remote cache %s: read only: it refused writes less than "
                                    "%u s ago (%s/%s)",
                   cbc_remote_config(s->remote)->name, cbc_remote_config(s->remote)->skip_s,
                   s->root, SKIP_FILE);
    }
    if (skip) {
        cbc_remote_disable(s->remote);
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_NOTE, "remote cache %s skipped: it failed less than %u s ago "
                                    "(%s/%s)",
                   cbc_remote_config(s->remote)->name, cbc_remote_config(s->remote)->skip_s,
                   s->root, SKIP_FILE);
    }
    return !skip;
}

/* The remote failed: one warning, and the marker for the other builds. */
void cbc_st_remote_failed(struct cbc_store *s, const struct cbc_err *e)
{
    const struct cbc_remote_cfg *cfg = cbc_remote_config(s->remote);
    bool failed = !cbc_remote_usable(s->remote);
    if ((failed || !cbc_remote_writable(s->remote)) && cfg->skip_s > 0 && !s->readonly) {
        char hex[CBC_HASH_HEX_LEN + 1], text[128];
        name_hash_hex(s, hex);
        int n = snprintf(text, sizeof text, "%s %llu %s\n", hex,
                         (unsigned long long)time(NULL) + cfg->skip_s,
                         failed ? "skip" : "no-writes");
        cbc_write_at(s->fd, s->root, SKIP_FILE, text, (size_t)n, cbc_st_perm(s), false, NULL);
    }
    if (s->remote_warned)
        return;
    s->remote_warned = true;
    /* the fix on its own line, as a command prints an error's hint */
    const char *hl = e->remedy[0] ? "\n  hint: " : "";
    if (!cbc_remote_usable(s->remote))
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "%s; building without it (skipped by this process and, "
                                       "for %u s, by the other builds using this cache)%s%s",
                   e->msg, cfg->skip_s, hl, e->remedy);
    else
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "%s (and, for %u s, by the other builds using this "
                                       "cache)%s%s", e->msg, cfg->skip_s, hl, e->remedy);
}

static void remote_bad_value(struct cbc_store *s, const char *why)
{
    cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "remote cache %s: ignored a bad entry (%s); compiling it here",
               cbc_remote_config(s->remote)->name, why);
}


/* A local miss asks the remote: the bytes are a local file, checked by
 * `check` (which fills why); a good one is written here too. */
static bool remote_fetch(struct cbc_store *s, const char *ns, const char *rel,
                         const struct cbc_hash *key, uint8_t **raw, size_t *n)
{
    if (!cbc_st_remote_ready(s))
        return false;
    struct cbc_err e = {0};
    bool bad_value = false;
    char why[400] = "";
    enum cbc_status st = cbc_remote_get(s->remote, ns, key, raw, n, &bad_value, why, sizeof why,
                                        &e);
    if (st == CBC_E_CACHE)
        cbc_st_remote_failed(s, &e);
    else if (bad_value)
        remote_bad_value(s, why);
    (void)rel;
    return st == CBC_OK;
}

static void remote_backfill(struct cbc_store *s, const char *rel, const uint8_t *raw, size_t n,
                            bool entry)
{
    if (s->readonly)
        return;
    bool existed = false;
    if (cbc_st_put_file(s, rel, raw, n, &existed, NULL) == CBC_OK && entry && !existed)
        s->bytes_added += (int64_t)n;
}

void cbc_st_remote_put(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                       const void *data, size_t len)
{
    if (!cbc_st_remote_ready(s))
        return;
    struct cbc_err e = {0};
    if (cbc_remote_put(s->remote, ns, key, data, len, &e) != CBC_OK)
        cbc_st_remote_failed(s, &e);
}


void cbc_st_remote_reshare(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                           const void *data, size_t len)
{
    if (!s->remote || !cbc_remote_config(s->remote)->reshare || !cbc_st_remote_ready(s))
        return;
    struct cbc_err e = {0};
    if (cbc_remote_reshare(s->remote, ns, key, data, len, NULL, &e) != CBC_OK)
        cbc_st_remote_failed(s, &e);
}

enum cbc_status cbc_st_remote_get_entry(struct cbc_store *s, const char *rel,
                                        const struct cbc_hash *key,
                                        const struct cbc_target *target, uint8_t **data,
                                        size_t *len, enum cbc_lookup *result)
{
    uint8_t *raw = NULL;
    size_t n = 0;
    if (!cbc_st_remote_ready(s))
        return CBC_OK;
    if (!remote_fetch(s, "objects", rel, key, &raw, &n)) {
        s->remote_misses++;
        return CBC_OK;
    }
    const uint8_t *payload;
    size_t plen;
    char why[300];
    /* the very check a local entry passes */
    if (!cbc_st_entry_check(raw, n, key, target, rel, &payload, &plen, why, sizeof why)) {
        char full[400];
        snprintf(full, sizeof full, "%s: %s", rel, why);
        remote_bad_value(s, full);
        free(raw);
        s->remote_misses++;
        s->remote_bad++;
        return CBC_OK;
    }
    s->remote_hits++;
    remote_backfill(s, rel, raw, n, true);
    memmove(raw, payload, plen);
    *data = raw;
    *len = plen;
    *result = CBC_LOOKUP_HIT;
    s->last_remote = true;
    return CBC_OK;
}

bool cbc_st_remote_get_blob(struct cbc_store *s, const char *ns, const char *rel,
                            const struct cbc_hash *key, uint8_t **raw, size_t *n)
{
    if (!cbc_st_remote_ready(s))
        return false;
    if (!remote_fetch(s, ns, rel, key, raw, n)) {
        /* no direct-mode record: the entry lookup that needs it misses too */
        if (!strcmp(ns, "direct"))
            s->remote_misses++;
        return false;
    }
    char why[200];
    if (!cbc_st_blob_check(*raw, *n, key, why, sizeof why)) {
        char full[300];
        snprintf(full, sizeof full, "%s: %s", rel, why);
        remote_bad_value(s, full);
        free(*raw);
        *raw = NULL;
        s->remote_bad++;
        return false;
    }
    remote_backfill(s, rel, *raw, *n, false);
    return true;
}

enum cbc_status cbc_store_attach_remote(struct cbc_store *s, const char *spec, cbc_msg_fn fn,
                                        void *ctx, struct cbc_err *err)
{
    struct cbc_remote_cfg cfg;
    enum cbc_status st = cbc_remote_parse(spec, &cfg, err);
    if (st != CBC_OK)
        return st;
    cbc_remote_free(s->remote);
    s->remote = cbc_remote_new(&cfg);
    if (!s->remote) {
        cbc_remote_cfg_release(&cfg);
        return cbc_err_oom(err);
    }
    s->msg = fn;
    s->msg_ctx = ctx;
    s->remote_checked = s->remote_warned = false;
    memset(&s->remote_merged, 0, sizeof s->remote_merged);
    return CBC_OK;
}

char *cbc_store_remote_spec(struct cbc_store *s, const char *explicit_spec, const char **from)
{
    if (explicit_spec) {
        if (from)
            *from = "--remote";
        return cbc_strdup(explicit_spec);
    }
    struct cbc_setting_value v;
    cbc_store_setting(s, CBC_SET_REMOTE, &v, NULL);
    if (from)
        *from = v.from == CBC_FROM_ENV      ? cbc_settings[CBC_SET_REMOTE].env
                : v.from == CBC_FROM_CONFIG ? "'remote' in the cache's config"
                                            : "the default";
    return v.value[0] ? cbc_strdup(v.value) : NULL;
}

enum cbc_status cbc_store_attach_default_remote(struct cbc_store *s, const char *explicit_spec,
                                                cbc_msg_fn fn, void *ctx, struct cbc_err *err)
{
    const char *from = NULL;
    char *spec = cbc_store_remote_spec(s, explicit_spec, &from);
    if (!spec)
        return CBC_OK;
    enum cbc_status st = cbc_store_attach_remote(s, spec, fn, ctx, err);
    free(spec);
    if (st == CBC_E_NOT_FOUND) /* "none" or "" */
        return CBC_OK;
    if (st == CBC_E_USAGE)
        cbc_err_prefix(err, "%s", from);
    return st;
}

const char *cbc_store_remote_name(const struct cbc_store *s)
{
    return s->remote ? cbc_remote_config(s->remote)->name : NULL;
}

bool cbc_store_last_remote(const struct cbc_store *s)
{
    return s->last_remote;
}


/* ---- leases (store.h) -------------------------------------------------------------- */

/* 128 random bits as hex: the token that makes a lease this process's. */
static void lease_token(char out[CBC_HASH_HEX_LEN + 1])
{
    struct cbc_hash h;
    uint8_t seed[16];
    if (getrandom(seed, sizeof seed, GRND_NONBLOCK) == (ssize_t)sizeof seed) {
        memcpy(h.b, seed, sizeof h.b);
    } else { /* no entropy yet: unique enough for a lease */
        static unsigned n;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        char text[96];
        int k = snprintf(text, sizeof text, "%ld %ld %ld %u", (long)getpid(), (long)ts.tv_sec,
                         ts.tv_nsec, n++);
        cbc_hash_bytes(text, (size_t)k, &h);
    }
    cbc_hash_hex(&h, out);
}

enum cbc_lease_state cbc_store_remote_lease_acquire(struct cbc_store *s, const struct cbc_hash *key,
                                                    unsigned ttl_ms, struct cbc_store_lease *lease)
{
    memset(lease, 0, sizeof *lease);
    lease->key = *key;
    if (!cbc_st_remote_ready(s) || ttl_ms == 0)
        return CBC_LEASE_NONE;
    lease_token(lease->token);
    enum cbc_remote_lease got = CBC_REMOTE_LEASE_UNSUPPORTED;
    struct cbc_err e = {0};
    if (cbc_remote_lease_acquire(s->remote, key, lease->token, ttl_ms, &got, &e) != CBC_OK) {
        cbc_st_remote_failed(s, &e);
        return CBC_LEASE_NONE;
    }
    lease->acquired = got == CBC_REMOTE_LEASE_ACQUIRED;
    return got == CBC_REMOTE_LEASE_ACQUIRED ? CBC_LEASE_ACQUIRED
           : got == CBC_REMOTE_LEASE_HELD   ? CBC_LEASE_HELD
                                            : CBC_LEASE_NONE;
}

void cbc_store_remote_lease_release(struct cbc_store *s, struct cbc_store_lease *lease)
{
    if (!lease->acquired || !s->remote)
        return;
    lease->acquired = false;
    struct cbc_err e = {0};
    if (cbc_remote_lease_release(s->remote, &lease->key, lease->token, NULL, &e) != CBC_OK)
        cbc_st_remote_failed(s, &e);
}
