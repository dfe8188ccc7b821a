/* dirfs.c: file handling beneath an open directory, never through a
 * symbolic link, for the trees cubincache owns (the cache, a bundle's
 * staging directory and its outputs).
 *
 * Invariants: a path is resolved beneath its directory descriptor and any
 * symbolic link on it (the last component included) makes the operation
 * fail with ELOOP, so a link planted by another user can neither redirect a
 * write nor a delete; files are published by renameat(2) of a complete
 * temporary in the same directory, whose name (".<name>.<6 random>") says
 * it is ours; created files and directories take the permissions the umask
 * allows (0666 / 0777 before it), so a group can share a tree, and a
 * directory inherits its parent's set-group-ID bit as the kernel gives it.
 * openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH) does a lookup in one call
 * where the kernel has it (5.6+); elsewhere each component is opened with
 * O_NOFOLLOW.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int openat2_state; /* 0 untried, 1 works, -1 unavailable */

static int walk_open(int dirfd, const char *rel, int flags, mode_t mode)
{
    char buf[4096];
    size_t n = strlen(rel);
    if (n == 0 || n >= sizeof buf || rel[0] == '/') {
        errno = EINVAL;
        return -1;
    }
    memcpy(buf, rel, n + 1);
    int cur = dirfd;
    char *comp = buf;
    for (;;) {
        char *slash = strchr(comp, '/');
        if (!slash)
            break;
        *slash = '\0';
        if (!strcmp(comp, "..") || !strcmp(comp, ".") || !*comp) {
            if (cur != dirfd)
                close(cur);
            errno = EXDEV;
            return -1;
        }
        int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (cur != dirfd)
            close(cur);
        if (next < 0) {
            errno = e;
            return -1;
        }
        cur = next;
        comp = slash + 1;
    }
    if (!strcmp(comp, "..") || !strcmp(comp, ".") || !*comp) {
        if (cur != dirfd)
            close(cur);
        errno = EXDEV;
        return -1;
    }
    int fd = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
    int e = errno;
    if (cur != dirfd)
        close(cur);
    errno = e;
    return fd;
}

int cbc_openat_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
    if (openat2_state >= 0) {
        struct open_how how = {0};
        how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
        how.mode = (flags & O_CREAT) ? mode : 0;
        how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
        long fd = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
        if (fd >= 0) {
            openat2_state = 1;
            return (int)fd;
        }
        if (errno != ENOSYS && errno != EPERM) /* EPERM: a seccomp filter said no */
            return -1;
        if (openat2_state == 1 && errno == EPERM)
            return -1;
        openat2_state = -1;
    }
    return walk_open(dirfd, rel, flags, mode);
}

int cbc_dir_openat(int dirfd, const char *name, bool create, const struct cbc_perm *perm)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != ENOENT || !create)
        return fd;
    if (mkdirat(dirfd, name, 0777) != 0 && errno != EEXIST)
        return -1;
    fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && perm && perm->umask >= 0) {
        /* an explicit umask: set the bits, keeping an inherited set-group-ID */
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_uid == geteuid())
            fchmod(fd, (st.st_mode & S_ISGID) | (0777 & ~(mode_t)perm->umask));
    }
    return fd;
}

bool cbc_temp_name_of(const char *name, const char *cand)
{
    /* ".<name>.XXXXXX" with six characters of [A-Za-z0-9] */
    size_t n = strlen(name), c = strlen(cand);
    if (c != n + 8 || cand[0] != '.' || memcmp(cand + 1, name, n) != 0 || cand[n + 1] != '.')
        return false;
    for (size_t i = n + 2; i < c; i++) {
        char ch = cand[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')))
            return false;
    }
    return true;
}

/* Creates ".<name>.XXXXXX" in dirfd; its name goes to tmp. */
static int make_temp(int dirfd, const char *name, char *tmp, size_t tmp_len,
                     const struct cbc_perm *perm)
{
    static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            uint64_t t = cbc_now_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)attempt * 7919u;
            for (size_t i = 0; i < sizeof r; i++)
                r[i] = (unsigned char)(t >> (8 * i));
        }
        char suf[7];
        for (size_t i = 0; i < 6; i++)
            suf[i] = set[r[i] % (sizeof set - 1)];
        suf[6] = '\0';
        if (snprintf(tmp, tmp_len, ".%s.%s", name, suf) >= (int)tmp_len) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            if (perm && perm->umask >= 0)
                fchmod(fd, 0666 & ~(mode_t)perm->umask);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
    }
    errno = EEXIST;
    return -1;
}

static enum cbc_status io_error(struct cbc_err *err, const char *what, const char *dir,
                                const char *name, int e)
{
    /* a full disk is named as such: it is fixed differently from the rest */
    if (e == ENOSPC || e == EDQUOT)
        return cbc_err_set(err, CBC_E_IO, "no space left to %s '%s/%s' (%s)", what, dir, name,
                           strerror(e));
    return cbc_err_set(err, CBC_E_IO, "cannot %s '%s/%s': %s", what, dir, name, strerror(e));
}

enum cbc_status cbc_write_at(int dirfd, const char *dir, const char *name, const void *data,
                             size_t len, const struct cbc_perm *perm, bool sync,
                             struct cbc_err *err)
{
    char tmp[NAME_MAX + 1];
    int fd = make_temp(dirfd, name, tmp, sizeof tmp, perm);
    if (fd < 0)
        return io_error(err, "create a temporary file for", dir, name, errno);
    const uint8_t *p = data;
    size_t left = len;
    int e = 0;
    while (left && !e) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            e = w < 0 ? errno : EIO;
        else
            p += w, left -= (size_t)w;
    }
    if (!e && sync && fsync(fd) != 0)
        e = errno;
    if (close(fd) != 0 && !e)
        e = errno;
    if (!e)
        cbc_test_publish_delay();
    if (!e && renameat(dirfd, tmp, dirfd, name) != 0)
        e = errno;
    if (e) {
        unlinkat(dirfd, tmp, 0);
        return io_error(err, "write", dir, name, e);
    }
    return CBC_OK;
}

enum cbc_status cbc_read_at(int dirfd, const char *dir, const char *rel, uint64_t max,
                            uint8_t **data, size_t *len, struct cbc_err *err)
{
    int fd = cbc_openat_beneath(dirfd, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return cbc_err_set(err, CBC_E_NOT_FOUND, "'%s/%s' does not exist", dir, rel);
        if (e == ELOOP || e == EXDEV)
            return cbc_err_set(err, CBC_E_IO, "'%s/%s' is reached through a symbolic link; "
                               "refusing to follow it", dir, rel);
        return cbc_err_set(err, CBC_E_IO, "cannot open '%s/%s': %s", dir, rel, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return cbc_err_set(err, CBC_E_IO, "'%s/%s' is not a regular file", dir, rel);
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    enum cbc_status s = cbc_fd_read_max(fd, rel, max, data, len, err);
    close(fd);
    return s;
}

int cbc_perm_parse_umask(const char *s)
{
    if (!s || !*s)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '7' || v > 0777)
            return -1;
        v = v * 8 + (*p - '0');
    }
    return v <= 0777 ? (int)v : -1;
}
