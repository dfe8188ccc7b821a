/* maint.c: the one walker of the store's files (store_int.h): trim, clean
 * and verify, built on the listing of a namespace that follows no link and
 * changes nothing (local.c). The store deletes only what it wrote
 * (cbc_st_remove_ours) and its own temporaries once they are an hour old;
 * everything else is reported and left alone.
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

/* ---- scanning ------------------------------------------------------------------- */

static int cmp_mtime(const void *a, const void *b)
{
    const struct scan_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Removes temporaries of this store older than an hour: in every
 * namespace, and those of stats, config and remote-skip. */
static void sweep_temps(struct cbc_store *s, const struct scan *sc)
{
    time_t now = time(NULL);
    for (size_t i = 0; sc && i < sc->n; i++)
        if (sc->v[i].kind == I_TEMP && now - sc->v[i].mtime_ns / 1000000000 > STALE_TMP_SECONDS)
            cbc_st_remove_ours(s, sc->v[i].rel, NULL);
    DIR *d = NULL;
    int fd = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && !(d = fdopendir(fd)))
        close(fd);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        struct stat sb;
        if ((cbc_temp_name_of("stats", de->d_name) || cbc_temp_name_of("config", de->d_name) ||
             cbc_temp_name_of(SKIP_FILE, de->d_name)) &&
            fstatat(s->fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
            now - sb.st_mtime > STALE_TMP_SECONDS)
            unlinkat(s->fd, de->d_name, 0);
    }
    if (d)
        closedir(d);
}

static void set_bytes(uint64_t v[C_COUNT], void *ctx)
{
    v[C_BYTES] = *(uint64_t *)ctx;
}

static enum cbc_status removal_failed(struct cbc_store *s, const char *rel, int e,
                                      struct cbc_err *err)
{
    return cbc_err_set(err, CBC_E_CACHE, "cannot remove '%s/%s': %s", s->root, rel, strerror(e));
}

enum cbc_status cbc_store_trim(struct cbc_store *s, uint64_t max_size, uint64_t *removed,
                               uint64_t *removed_bytes, struct cbc_err *err)
{
    struct scan sc = {0};
    enum cbc_status st = cbc_st_scan_ns(s, "objects", &sc, err);
    uint64_t n = 0, b = 0;
    if (st == CBC_OK) {
        if (sc.n) /* qsort must not see the NULL of an empty scan */
            qsort(sc.v, sc.n, sizeof *sc.v, cmp_mtime);
        uint64_t total = sc.total;
        for (size_t i = 0; st == CBC_OK && i < sc.n && total > max_size; i++) {
            if (sc.v[i].kind != I_ENTRY)
                continue;
            int e = cbc_st_remove_ours(s, sc.v[i].rel, ENTRY_MAGIC);
            if (e == 0 || e == ENOENT) { /* ENOENT: another process got there first */
                total -= sc.v[i].size;
                n += e == 0;
                b += e == 0 ? sc.v[i].size : 0;
            } else if (e != EPERM) {
                st = removal_failed(s, sc.v[i].rel, e, err);
            }
        }
        sweep_temps(s, &sc);
        /* and the stale temporaries of the other namespaces */
        for (size_t k = 1; k < CBC_ARRAY_LEN(namespaces); k++) {
            struct scan o = {0};
            if (cbc_st_scan_ns(s, namespaces[k], &o, NULL) == CBC_OK)
                sweep_temps(s, &o);
            cbc_st_scan_release(&o);
        }
        s->bytes_added = 0;
        cbc_st_with_counters(s, set_bytes, &total, true, NULL);
    }
    cbc_st_scan_release(&sc);
    if (removed)
        *removed = n;
    if (removed_bytes)
        *removed_bytes = b;
    return st;
}

static void report_foreign(const struct cbc_store *s, const struct scan_item *it,
                           cbc_store_report_fn report, void *ctx)
{
    if (!report || it->kind != I_FOREIGN)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s->root, it->rel);
    report(ctx, path, "not a cache entry (a foreign file, a directory or a symbolic link); left "
                      "alone");
}

enum cbc_status cbc_store_clean(struct cbc_store *s, uint64_t *removed, cbc_store_report_fn report,
                                void *ctx, struct cbc_err *err)
{
    uint64_t n = 0;
    enum cbc_status st = CBC_OK;
    for (size_t k = 0; k < CBC_ARRAY_LEN(namespaces) && st == CBC_OK; k++) {
        bool objects = k == 0;
        struct scan sc = {0};
        st = cbc_st_scan_ns(s, namespaces[k], &sc, err);
        for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
            if (sc.v[i].kind != I_ENTRY) {
                report_foreign(s, &sc.v[i], report, ctx);
                continue;
            }
            int e = cbc_st_remove_ours(s, sc.v[i].rel, objects ? ENTRY_MAGIC : BLOB_MAGIC);
            if (e == 0)
                n += objects;
            else if (e == EPERM && report) {
                char path[512];
                snprintf(path, sizeof path, "%s/%s", s->root, sc.v[i].rel);
                report(ctx, path, "named like an entry but without the store's header; left alone");
            } else if (e != ENOENT && e != EPERM) {
                st = removal_failed(s, sc.v[i].rel, e, err);
            }
        }
        if (st == CBC_OK)
            sweep_temps(s, &sc);
        /* empty shard directories; a link or a non-empty one stays */
        int nfd = cbc_dir_openat(s->fd, namespaces[k], false, NULL);
        for (int h = 0; nfd >= 0 && st == CBC_OK && h < 256; h++) {
            char shard[3];
            snprintf(shard, sizeof shard, "%02x", h);
            unlinkat(nfd, shard, AT_REMOVEDIR);
        }
        if (nfd >= 0)
            close(nfd);
        cbc_st_scan_release(&sc);
    }
    if (st == CBC_OK) {
        uint64_t zero = 0;
        s->bytes_added = 0;
        cbc_st_with_counters(s, set_bytes, &zero, true, NULL);
    }
    if (removed)
        *removed = n;
    return st;
}

enum cbc_status cbc_store_verify_all(struct cbc_store *s, uint64_t *checked, uint64_t *dropped,
                                     uint64_t *left, cbc_store_report_fn report, void *ctx,
                                     struct cbc_err *err)
{
    uint64_t c = 0, d = 0, l = 0;
    enum cbc_status st = CBC_OK;
    for (size_t k = 0; k < CBC_ARRAY_LEN(namespaces) && st == CBC_OK; k++) {
        bool objects = k == 0;
        struct scan sc = {0};
        st = cbc_st_scan_ns(s, namespaces[k], &sc, err);
        for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
            const struct scan_item *it = &sc.v[i];
            if (it->kind != I_ENTRY) {
                l += it->kind == I_FOREIGN;
                report_foreign(s, it, report, ctx);
                continue;
            }
            uint8_t *raw = NULL;
            size_t len = 0;
            if (cbc_read_at(s->fd, s->root, it->rel, objects ? CBC_FILE_MAX : BLOB_MAX, &raw, &len,
                            NULL) != CBC_OK)
                continue; /* removed meanwhile by another process */
            c++;
            /* the file name is the key: the header must agree */
            const char *slash = strchr(it->rel, '/');
            char hex[CBC_HASH_HEX_LEN + 1];
            snprintf(hex, sizeof hex, "%.2s%.30s", slash + 1, slash + 4);
            struct cbc_hash key;
            cbc_hash_from_hex(hex, &key);
            const char *magic = objects ? ENTRY_MAGIC : BLOB_MAGIC;
            char why[CBC_ERR_MSG_MAX] = "";
            static const uint8_t zeros[8];
            bool ours = len < 8 || memcmp(raw, magic, 8) == 0 || memcmp(raw, zeros, 8) == 0;
            bool good;
            if (objects) {
                const uint8_t *payload;
                size_t plen;
                good = cbc_st_entry_check(raw, len, &key, NULL, it->rel, &payload, &plen, why, sizeof why);
            } else {
                good = len >= BLOB_HEADER && ours && memcmp(raw + 8, key.b, 16) == 0;
                if (!good)
                    snprintf(why, sizeof why, "%s", ours ? "filed under the wrong key"
                                                         : "not a blob (bad magic)");
            }
            free(raw);
            if (good)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", s->root, it->rel);
            if (!ours) {
                l++;
                if (report)
                    report(ctx, path, "named like an entry but without the store's header; "
                                      "left alone");
                continue;
            }
            int e = cbc_st_remove_ours(s, it->rel, magic);
            if (e == 0) {
                d++;
                if (report)
                    report(ctx, path, why);
            } else if (e != ENOENT) {
                st = removal_failed(s, it->rel, e, err);
            }
        }
        cbc_st_scan_release(&sc);
    }
    s->dropped += d;
    if (checked)
        *checked = c;
    if (dropped)
        *dropped = d;
    if (left)
        *left = l;
    return st;
}
