/* local.c: the local tier's files, beneath v1 (formats in store.h): where
 * an entry or blob lives, whether an entry's or blob's bytes are what they
 * claim, publishing a file (stage in the shard, then rename), removing
 * only what is ours, and listing a namespace for the walker. store.c
 * (get and put), tier.c (a remote's values written here), stats.c and
 * maint.c build on it; it calls none of them.
 *
 * Every path goes through the directory descriptor s->fd with no symbolic
 * link allowed (cbc_openat_beneath, cbc_dir_openat): the cache directory
 * may be writable by other users, and a link planted there must never
 * turn a read, a write, a delete or a listing towards a file elsewhere.
 */
#include "store_int.h"

#include <cubincache/binfmt.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "<ns>/ab/<30 hex><ext>" */
void cbc_st_rel_path(const char *ns, const struct cbc_hash *key, const char *ext, char *out,
                     size_t len)
{
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(key, hex);
    snprintf(out, len, "%s/%.2s/%s%s", ns, hex, hex + 2, ext);
}

/* Verifies an entry file's bytes; on success *payload points inside. */
bool cbc_st_entry_check(const uint8_t *d, size_t len, const struct cbc_hash *key,
                        const struct cbc_target *t, const char *path, const uint8_t **payload,
                        size_t *plen, char *why, size_t why_len)
{
    if (len < ENTRY_HEADER || memcmp(d, ENTRY_MAGIC, 8) != 0) {
        snprintf(why, why_len, "not a cache entry (bad magic or %zu bytes)", len);
        return false;
    }
    if (cbc_rd32(d + 8) != ENTRY_VERSION) {
        snprintf(why, why_len, "entry format %u, expected %u", cbc_rd32(d + 8), ENTRY_VERSION);
        return false;
    }
    struct cbc_target ft = {d[12], d[13], cbc_rd16(d + 14)};
    if (key && memcmp(d + 16, key->b, 16) != 0) {
        snprintf(why, why_len, "filed under the wrong key");
        return false;
    }
    if (t && !cbc_target_eq(&ft, t)) {
        char a[CBC_TARGET_NAME_MAX], b[CBC_TARGET_NAME_MAX];
        snprintf(why, why_len, "header says %s, expected %s", cbc_target_name(&ft, a),
                 cbc_target_name(t, b));
        return false;
    }
    uint64_t size = cbc_rd64(d + 48);
    if (size != len - ENTRY_HEADER) {
        snprintf(why, why_len, "payload is %zu bytes, header says %llu (truncated?)",
                 len - ENTRY_HEADER, (unsigned long long)size);
        return false;
    }
    struct cbc_hash want, got;
    memcpy(want.b, d + 32, 16);
    cbc_hash_bytes(d + ENTRY_HEADER, (size_t)size, &got);
    if (!cbc_hash_eq(&want, &got)) {
        snprintf(why, why_len, "content hash mismatch");
        return false;
    }
    struct cbc_err e = {0};
    if (ft.kind != CBC_STORE_RESULT_KIND &&
        cbc_binfmt_verify_target(d + ENTRY_HEADER, (size_t)size, &ft, path, NULL, &e) != CBC_OK) {
        snprintf(why, why_len, "%s", e.msg);
        return false;
    }
    *payload = d + ENTRY_HEADER;
    *plen = (size_t)size;
    return true;
}

/* Removes `rel` when it is a regular file starting with `magic`, or one a
 * torn write of ours left (empty, or a zero-filled header: power lost after
 * the rename reached the disk but before the data did): the one way
 * anything in the store is deleted. 0 on success, else an errno (EPERM: it
 * is not the store's, left alone). */
int cbc_st_remove_ours(struct cbc_store *s, const char *rel, const char *magic)
{
    char dir[64];
    const char *slash = strrchr(rel, '/');
    if (!slash || (size_t)(slash - rel) >= sizeof dir)
        return EINVAL;
    memcpy(dir, rel, (size_t)(slash - rel));
    dir[slash - rel] = '\0';
    int dfd = cbc_openat_beneath(s->fd, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return errno;
    int fd = openat(dfd, slash + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int rc = fd < 0 ? errno : 0;
    if (fd >= 0) {
        struct stat st;
        static const char zeros[8];
        char head[8];
        ssize_t got = 0;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            rc = EPERM;
        else if (magic && st.st_size > 0 &&
                 ((got = pread(fd, head, 8, 0)) != 8 ||
                  (memcmp(head, magic, 8) != 0 && memcmp(head, zeros, 8) != 0)))
            rc = EPERM;
        close(fd);
    }
    if (rc == 0 && unlinkat(dfd, slash + 1, 0) != 0)
        rc = errno;
    close(dfd);
    return rc;
}

/* Publishes "<ns>/ab/<name>" beneath v1, creating the two directories. */
enum cbc_status cbc_st_put_file(struct cbc_store *s, const char *rel, const void *data, size_t len,
                                bool *existed, struct cbc_err *err)
{
    char ns[16], shard[3];
    const char *a = strchr(rel, '/');
    size_t nl = (size_t)(a - rel);
    memcpy(ns, rel, nl);
    ns[nl] = '\0';
    memcpy(shard, a + 1, 2);
    shard[2] = '\0';
    const struct cbc_perm *perm = cbc_st_perm(s);
    int nfd = cbc_dir_openat(s->fd, ns, true, perm);
    int sfd = nfd >= 0 ? cbc_dir_openat(nfd, shard, true, perm) : -1;
    int e = errno;
    if (nfd >= 0)
        close(nfd);
    enum cbc_status st = CBC_OK;
    if (sfd < 0) {
        st = cbc_err_set(err, CBC_E_CACHE, "cannot create '%s/%s/%s': %s", s->root, ns, shard,
                         e == ELOOP || e == ENOTDIR ? "not a directory (a symbolic link?)"
                                                    : strerror(e));
    } else {
        if (existed)
            *existed = faccessat(sfd, a + 4, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        char dir[300];
        snprintf(dir, sizeof dir, "%s/%s/%s", s->root, ns, shard);
        st = cbc_write_at(sfd, dir, a + 4, data, len, perm, false, err);
        close(sfd);
    }
    if (st != CBC_OK) {
        s->store_errors++;
        if (err)
            err->status = CBC_E_CACHE;
        return CBC_E_CACHE;
    }
    return CBC_OK;
}

bool cbc_st_blob_check(const uint8_t *raw, size_t n, const struct cbc_hash *key, char *why,
                       size_t why_len)
{
    if (n < BLOB_HEADER || memcmp(raw, BLOB_MAGIC, 8) != 0) {
        snprintf(why, why_len, "not a record (bad magic or %zu bytes)", n);
        return false;
    }
    if (memcmp(raw + 8, key->b, 16) != 0) {
        snprintf(why, why_len, "a record filed under the wrong key");
        return false;
    }
    return true;
}

static bool is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* "<30 hex><ext>" */
static bool entry_name(const char *name, const char *ext)
{
    size_t n = strlen(name), el = strlen(ext);
    return n == 30 + el && is_hex(name, 30) && strcmp(name + 30, ext) == 0;
}

/* ".<30 hex><ext>.XXXXXX" */
static bool temp_name(const char *name, const char *ext)
{
    size_t n = strlen(name), el = strlen(ext);
    if (n != 30 + el + 8)
        return false;
    char final[48];
    memcpy(final, name + 1, 30 + el);
    final[30 + el] = '\0';
    return entry_name(final, ext) && cbc_temp_name_of(final, name);
}

static bool scan_push(struct scan *out, const char *ns, const char *shard, const char *name,
                      enum item_kind kind, const struct stat *sb)
{
    if (!cbc_grow(&out->v, out->n, &out->cap, sizeof *out->v, 256))
        return false;
    struct scan_item *it = &out->v[out->n++];
    snprintf(it->rel, sizeof it->rel, "%s/%s%s%s", ns, shard, *shard ? "/" : "", name);
    it->kind = kind;
    it->size = (uint64_t)sb->st_size;
    it->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + (int64_t)sb->st_mtim.tv_nsec;
    if (kind == I_ENTRY) {
        out->total += it->size;
        out->entries++;
    }
    return true;
}

/* Lists ns/ab/ without following a link and without changing anything:
 * entries, the store's temporaries, and everything else as foreign. */
enum cbc_status cbc_st_scan_ns(struct cbc_store *s, const char *ns, struct scan *out,
                               struct cbc_err *err)
{
    const char *ext = strcmp(ns, "objects") == 0 ? ".cbc" : ".dep";
    int nfd = cbc_dir_openat(s->fd, ns, false, NULL);
    if (nfd < 0) {
        if (errno == ENOENT)
            return CBC_OK;
        struct stat sb = {0};
        if (fstatat(s->fd, ns, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
            !scan_push(out, ns, "", "", I_FOREIGN, &sb))
            return cbc_err_oom(err);
        return CBC_OK;
    }
    DIR *top = fdopendir(nfd);
    if (!top) {
        close(nfd);
        return cbc_err_oom(err);
    }
    struct dirent *de;
    enum cbc_status st = CBC_OK;
    while (st == CBC_OK && (de = readdir(top))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat sb;
        if (fstatat(nfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        bool shard = strlen(de->d_name) == 2 && is_hex(de->d_name, 2) && S_ISDIR(sb.st_mode);
        int sfd = shard ? cbc_dir_openat(nfd, de->d_name, false, NULL) : -1;
        if (sfd < 0) {
            if (!scan_push(out, ns, "", de->d_name, I_FOREIGN, &sb))
                st = cbc_err_oom(err);
            continue;
        }
        DIR *d = fdopendir(sfd);
        if (!d) {
            close(sfd);
            continue;
        }
        struct dirent *fe;
        while (st == CBC_OK && (fe = readdir(d))) {
            if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
                continue;
            struct stat fb;
            if (fstatat(sfd, fe->d_name, &fb, AT_SYMLINK_NOFOLLOW) != 0)
                continue; /* removed meanwhile by another process */
            enum item_kind k = I_FOREIGN;
            if (S_ISREG(fb.st_mode) && entry_name(fe->d_name, ext))
                k = I_ENTRY;
            else if (S_ISREG(fb.st_mode) && temp_name(fe->d_name, ext))
                k = I_TEMP;
            if (!scan_push(out, ns, de->d_name, fe->d_name, k, &fb))
                st = cbc_err_oom(err);
        }
        closedir(d);
    }
    closedir(top);
    return st;
}

void cbc_st_scan_release(struct scan *sc)
{
    free(sc->v);
    memset(sc, 0, sizeof *sc);
}
