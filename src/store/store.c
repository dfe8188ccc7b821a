/* store.c: the content-addressed cache as its users see it (format and
 * invariants in store.h; the tiers and the walker in store_int.h): opening
 * the cache directory, and getting and putting its entries and blobs over
 * the local tier's files (local.c) and the remote tier (tier.c).
 *
 * Design choices: one file per entry, so publishing is one rename and no
 * lock is needed for data; entries are verified on every read rather than
 * trusted, so a torn write (power loss, no fsync) or a tampered file is
 * caught and dropped. LRU order is the entry's mtime, bumped on hit.
 *
 * Every path below v1 goes through the directory descriptor s->fd with no
 * symbolic link allowed (cbc_openat_beneath, cbc_dir_openat): the cache
 * directory may be writable by other users, and a link planted there must
 * never turn a read, a write or a delete towards a file elsewhere.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *cbc_store_default_root(const char *explicit_dir)
{
    if (explicit_dir && *explicit_dir)
        return cbc_strdup(explicit_dir);
    const char *e = getenv(cbc_settings[CBC_SET_CACHE_DIR].env);
    if (e && *e)
        return cbc_strdup(e);
    e = getenv("XDG_CACHE_HOME");
    if (e && *e)
        return cbc_asprintf("%s/cubincache", e);
    e = getenv("HOME");
    if (e && *e)
        return cbc_asprintf("%s/.cache/cubincache", e);
    return NULL;
}

/* ---- config: umask and size limit ----------------------------------------- */

/* ---- open and close ---------------------------------------------------------- */

static enum cbc_status open_store(const char *root, bool create, struct cbc_store **out,
                                  struct cbc_err *err)
{
    if (!root)
        return cbc_err_set(err, CBC_E_CACHE, "no cache directory: HOME, XDG_CACHE_HOME and "
                                             "CUBINCACHE_DIR are all unset");
    struct cbc_store *s = calloc(1, sizeof *s);
    if (!s)
        return cbc_err_oom(err);
    s->fd = -1;
    s->readonly = !create;
    /* what creates v1 (the config in it is read later) */
    s->perm.umask = cbc_perm_parse_umask(getenv(cbc_settings[CBC_SET_UMASK].env));
    s->root = cbc_asprintf("%s/v1", root);
    if (!s->root) {
        free(s);
        return cbc_err_oom(err);
    }
    struct cbc_err me = {0};
    /* the root itself is the user's choice and may be reached through a
     * link; nothing below it is */
    enum cbc_status st = create ? cbc_mkdir_p(root, 0777, &me) : CBC_OK;
    int rootfd = st == CBC_OK ? open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (st == CBC_OK && rootfd < 0)
        st = cbc_err_set(&me, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_CACHE, "%s",
                         strerror(errno));
    if (st == CBC_OK) {
        s->fd = cbc_dir_openat(rootfd, "v1", create, &s->perm);
        if (s->fd < 0)
            st = cbc_err_set(&me, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_CACHE, "%s%s",
                             errno == ELOOP || errno == ENOTDIR ? "v1 is not a directory (a "
                                                                  "symbolic link?): "
                                                                : "v1: ",
                             strerror(errno));
    }
    if (rootfd >= 0)
        close(rootfd);
    if (st != CBC_OK) {
        cbc_store_close(s);
        if (st == CBC_E_NOT_FOUND && !create)
            return cbc_err_set(err, CBC_E_NOT_FOUND, "no cache in '%s'", root);
        return cbc_err_set(err, CBC_E_CACHE, "cache directory '%s' is unusable: %s", root, me.msg);
    }
    *out = s;
    return CBC_OK;
}

enum cbc_status cbc_store_open(const char *root, struct cbc_store **out, struct cbc_err *err)
{
    return open_store(root, true, out, err);
}

enum cbc_status cbc_store_open_existing(const char *root, struct cbc_store **out,
                                        struct cbc_err *err)
{
    return open_store(root, false, out, err);
}

void cbc_store_close(struct cbc_store *s)
{
    if (!s)
        return;
    if (s->fd >= 0 && !s->readonly &&
        (s->hits || s->misses || s->stores || s->dropped || s->store_errors || s->uncacheable ||
         s->bytes_added || cbc_st_counts_pending(s)))
        cbc_st_with_counters(s, cbc_st_merge_counts, s, true, NULL);
    cbc_remote_free(s->remote);
    if (s->fd >= 0)
        close(s->fd);
    free(s->root);
    free(s);
}

const char *cbc_store_root(const struct cbc_store *s)
{
    return s->root;
}

/* ---- sizes and config -------------------------------------------------------- */

enum cbc_status cbc_store_set_max_size(struct cbc_store *s, uint64_t max_size, struct cbc_err *err)
{
    /* the config as it is, less its max_size line, then the new one */
    uint8_t *old = NULL;
    size_t n = 0;
    struct cbc_buf b = {0};
    if (cbc_read_at(s->fd, s->root, "config", SMALL_MAX, &old, &n, NULL) == CBC_OK) {
        for (const char *p = (const char *)old; p && *p;) {
            const char *eol = strchr(p, '\n');
            size_t ll = eol ? (size_t)(eol - p) + 1 : strlen(p);
            bool ours = ll >= 8 && !strncmp(p, "max_size", 8) && (p[8] == ' ' || p[8] == '=');
            if (!ours)
                cbc_buf_append(&b, p, ll);
            if (!ours && !eol)
                cbc_buf_puts(&b, "\n");
            p = eol ? eol + 1 : NULL;
        }
    }
    free(old);
    cbc_buf_printf(&b, "max_size = %llu\n", (unsigned long long)max_size);
    enum cbc_status st = b.oom ? cbc_err_oom(err)
                               : cbc_write_at(s->fd, s->root, "config", b.p, b.len,
                                              cbc_st_perm(s), false, err);
    cbc_buf_release(&b);
    if (st != CBC_OK)
        return st == CBC_E_NOMEM ? st : CBC_E_CACHE;
    s->max_size = max_size;
    s->setting_read[CBC_SET_MAX_SIZE] = false;
    return CBC_OK;
}

/* ---- entries ------------------------------------------------------------------ */

enum cbc_status cbc_store_get(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, uint8_t **data, size_t *len,
                              enum cbc_lookup *result, char *why, size_t why_len, struct cbc_err *err)
{
    *result = CBC_LOOKUP_MISS;
    s->last_remote = false;
    char rel[80];
    cbc_st_rel_path("objects", key, ".cbc", rel, sizeof rel);
    int fd = cbc_openat_beneath(s->fd, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return cbc_st_remote_get_entry(s, rel, key, target, data, len, result);
        return cbc_err_set(err, CBC_E_CACHE, "cannot open '%s/%s': %s", s->root, rel,
                           errno == ELOOP || errno == EXDEV ? "a symbolic link is on the way"
                                                            : strerror(errno));
    }
    struct stat sb;
    uint8_t *raw = NULL;
    size_t rlen = 0;
    enum cbc_status st = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)
                             ? cbc_fd_read_max(fd, rel, CBC_FILE_MAX, &raw, &rlen, err)
                             : cbc_err_set(err, CBC_E_CACHE, "'%s/%s' is not a regular file",
                                           s->root, rel);
    if (st != CBC_OK) {
        close(fd);
        return st;
    }
    const uint8_t *payload;
    size_t plen;
    if (!cbc_st_entry_check(raw, rlen, key, target, rel, &payload, &plen, why, why_len)) {
        close(fd);
        free(raw);
        if (cbc_st_remove_ours(s, rel, ENTRY_MAGIC) == 0)
            s->bytes_added -= (int64_t)rlen;
        *result = CBC_LOOKUP_DROPPED;
        return CBC_OK;
    }
    futimens(fd, NULL); /* LRU: last use; a read-only cache just keeps the old time */
    close(fd);
    cbc_st_remote_reshare(s, "objects", key, raw, rlen); /* a remote that lost it gets it back */
    memmove(raw, payload, plen);
    *data = raw;
    *len = plen;
    *result = CBC_LOOKUP_HIT;
    return CBC_OK;
}

enum cbc_status cbc_store_put(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, const uint8_t *data, size_t len,
                              struct cbc_err *err)
{
    if (s->readonly)
        return cbc_err_set(err, CBC_E_CACHE, "the cache '%s' is open for reading only", s->root);
    uint8_t *buf = malloc(ENTRY_HEADER + len);
    if (!buf)
        return cbc_err_oom(err);
    memset(buf, 0, ENTRY_HEADER);
    memcpy(buf, ENTRY_MAGIC, 8);
    cbc_wr32(buf + 8, ENTRY_VERSION);
    buf[12] = target->kind;
    buf[13] = target->variant;
    buf[14] = (uint8_t)target->arch;
    buf[15] = (uint8_t)(target->arch >> 8);
    memcpy(buf + 16, key->b, 16);
    struct cbc_hash h;
    cbc_hash_bytes(data, len, &h);
    memcpy(buf + 32, h.b, 16);
    cbc_wr64(buf + 48, len);
    memcpy(buf + ENTRY_HEADER, data, len);
    char rel[80];
    cbc_st_rel_path("objects", key, ".cbc", rel, sizeof rel);
    bool existed = false;
    enum cbc_status st = cbc_st_put_file(s, rel, buf, ENTRY_HEADER + len, &existed, err);
    cbc_st_remote_put(s, "objects", key, buf, ENTRY_HEADER + len);
    free(buf);
    if (st != CBC_OK)
        return st;
    s->stores++;
    if (!existed)
        s->bytes_added += (int64_t)(ENTRY_HEADER + len);

    /* merge the counters now, and trim when the running total says the
     * store has outgrown its limit */
    if (cbc_st_with_counters(s, cbc_st_merge_counts, s, true, NULL) == CBC_OK) {
        s->hits = s->misses = s->stores = s->dropped = s->store_errors = s->uncacheable = 0;
        s->bytes_added = 0;
        uint64_t max = cbc_store_max_size(s);
        if (s->seen_bytes > max)
            cbc_store_trim(s, max - max / 10, NULL, NULL, NULL);
    }
    return CBC_OK;
}

/* The directory of a blob namespace (one of namespaces[]). */
static const char *ns_dir(enum cbc_store_ns ns)
{
    switch (ns) {
    case CBC_STORE_DIRECT: return "direct";
    case CBC_STORE_DEPS: return "deps";
    case CBC_STORE_TOOLS: return "tools";
    case CBC_STORE_LAST: return "last";
    }
    return NULL;
}

enum cbc_status cbc_store_blob_get(struct cbc_store *s, enum cbc_store_ns which,
                                   const struct cbc_hash *key, uint8_t **data, size_t *len,
                                   struct cbc_err *err)
{
    const char *ns = ns_dir(which);
    if (!ns)
        return cbc_err_set(err, CBC_E_USAGE, "no blob namespace %d in the store", (int)which);
    char rel[80];
    cbc_st_rel_path(ns, key, ".dep", rel, sizeof rel);
    uint8_t *raw = NULL;
    size_t n = 0;
    enum cbc_status st = cbc_read_at(s->fd, s->root, rel, BLOB_MAX, &raw, &n, err);
    bool local = st == CBC_OK;
    if (st == CBC_E_NOT_FOUND && which != CBC_STORE_TOOLS && which != CBC_STORE_LAST &&
        /* a machine's own identities and paths */
        cbc_st_remote_get_blob(s, ns, rel, key, &raw, &n))
        st = CBC_OK;
    if (st != CBC_OK)
        return st;
    char why[200];
    if (!cbc_st_blob_check(raw, n, key, why, sizeof why)) {
        free(raw);
        return cbc_err_set(err, CBC_E_NOT_FOUND, "'%s/%s' is not a blob of its key", s->root,
                           rel);
    }
    if (local && which != CBC_STORE_TOOLS && which != CBC_STORE_LAST) /* never our own */
        cbc_st_remote_reshare(s, ns, key, raw, n);
    memmove(raw, raw + BLOB_HEADER, n - BLOB_HEADER + 1); /* the NUL too */
    *data = raw;
    *len = n - BLOB_HEADER;
    return CBC_OK;
}

static enum cbc_status blob_write(struct cbc_store *s, enum cbc_store_ns which,
                                  const struct cbc_hash *key, const void *data, size_t len,
                                  bool to_remote, struct cbc_err *err)
{
    const char *ns = ns_dir(which);
    if (!ns)
        return cbc_err_set(err, CBC_E_USAGE, "no blob namespace %d in the store", (int)which);
    if (s->readonly)
        return cbc_err_set(err, CBC_E_CACHE, "the cache '%s' is open for reading only", s->root);
    uint8_t *buf = malloc(BLOB_HEADER + len);
    if (!buf)
        return cbc_err_oom(err);
    memcpy(buf, BLOB_MAGIC, 8);
    memcpy(buf + 8, key->b, 16);
    memcpy(buf + BLOB_HEADER, data, len);
    char rel[80];
    cbc_st_rel_path(ns, key, ".dep", rel, sizeof rel);
    enum cbc_status st = cbc_st_put_file(s, rel, buf, BLOB_HEADER + len, NULL, err);
    if (to_remote && which != CBC_STORE_TOOLS && which != CBC_STORE_LAST)
        cbc_st_remote_put(s, ns, key, buf, BLOB_HEADER + len);
    free(buf);
    return st;
}

enum cbc_status cbc_store_blob_put(struct cbc_store *s, enum cbc_store_ns which,
                                   const struct cbc_hash *key, const void *data, size_t len,
                                   struct cbc_err *err)
{
    return blob_write(s, which, key, data, len, true, err);
}

enum cbc_status cbc_store_blob_put_local(struct cbc_store *s, enum cbc_store_ns which,
                                         const struct cbc_hash *key, const void *data,
                                         size_t len, struct cbc_err *err)
{
    return blob_write(s, which, key, data, len, false, err);
}

static enum cbc_status tools_get(void *ctx, const struct cbc_hash *key, uint8_t **data,
                                 size_t *len)
{
    return cbc_store_blob_get(ctx, CBC_STORE_TOOLS, key, data, len, NULL);
}

static void tools_put(void *ctx, const struct cbc_hash *key, const void *data, size_t len)
{
    cbc_store_blob_put(ctx, CBC_STORE_TOOLS, key, data, len, NULL); /* a cache: failure is fine */
}

struct cbc_record_cache cbc_store_tools_cache(struct cbc_store *s)
{
    return (struct cbc_record_cache){s, tools_get, tools_put};
}

