/* fs.c: whole-file reads, atomic publish, write-if-changed and mkdir -p.
 *
 * Atomic publish is a temporary file in the destination's own directory
 * (so rename(2) cannot cross file systems) followed by rename: readers see
 * the old bytes or all the new ones. A crash can leave a ".<name>.XXXXXX"
 * temporary behind, never a partial destination. No fsync: durability
 * against power loss is left to the content hashes the store and `check`
 * verify on every read, which catch a torn file anyway.
 */
#include "common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Test hook: CUBINCACHE_TEST_PUBLISH_DELAY_MS stalls between writing the
 * temporary and renaming it, so tests/cli can kill -9 a writer inside the
 * window and check that no partial file is ever published. */
void cbc_test_publish_delay(void)
{
    static long ms = -1;
    if (ms < 0) {
        const char *e = secure_getenv("CUBINCACHE_TEST_PUBLISH_DELAY_MS");
        ms = e ? strtol(e, NULL, 10) : 0;
        if (ms < 0)
            ms = 0;
    }
    if (ms > 0) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static mode_t process_umask(void)
{
    static int cached = -1;
    if (cached < 0) {
        mode_t m = umask(022);
        umask(m);
        cached = (int)m;
    }
    return (mode_t)cached;
}

enum cbc_status cbc_open_regular(const char *path, int flags, int *fd_out, uint64_t *size,
                                 struct cbc_err *err)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below like every other file that is not a regular one */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | flags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP && (flags & O_NOFOLLOW))
            return cbc_err_set(err, CBC_E_IO, "'%s' is a symbolic link; refusing to follow it", path);
        return cbc_err_set(err, e == ENOENT || e == ENOTDIR ? CBC_E_NOT_FOUND : CBC_E_IO,
                           "cannot open '%s': %s", path, strerror(e));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return cbc_err_set(err, CBC_E_IO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return cbc_err_set(err, CBC_E_USAGE, "'%s' is %s, not a regular file", path,
                           S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "a special file");
    }
    /* back to blocking reads: a regular file never blocks anyway */
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    *fd_out = fd;
    if (size)
        *size = (uint64_t)st.st_size;
    return CBC_OK;
}

enum cbc_status cbc_fd_read_max(int fd, const char *path, uint64_t max, uint8_t **data,
                                size_t *len, struct cbc_err *err)
{
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= max
                     ? (size_t)st.st_size + 1
                     : 4096;
    uint8_t *p = malloc(cap);
    if (!p)
        return cbc_err_oom(err);
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) {
            uint8_t *q = cap > SIZE_MAX / 2 ? NULL : realloc(p, cap * 2);
            if (!q) {
                free(p);
                return cbc_err_oom(err);
            }
            p = q;
            cap *= 2;
        }
        ssize_t r = read(fd, p + n, cap - n - 1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            free(p);
            return cbc_err_set(err, CBC_E_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max) {
            free(p);
            return cbc_err_set(err, CBC_E_FORMAT, "'%s' is larger than %llu bytes, the most this "
                               "file may hold", path, (unsigned long long)max);
        }
    }
    p[n] = '\0';
    *data = p;
    *len = n;
    return CBC_OK;
}

enum cbc_status cbc_file_read_max(const char *path, uint64_t max, uint8_t **data, size_t *len,
                                  struct cbc_err *err)
{
    int fd;
    uint64_t size;
    enum cbc_status st = cbc_open_regular(path, 0, &fd, &size, err);
    if (st != CBC_OK)
        return st;
    if (size > max) {
        close(fd);
        return cbc_err_set(err, CBC_E_FORMAT, "'%s' is %llu bytes; the most this file may hold is "
                           "%llu", path, (unsigned long long)size, (unsigned long long)max);
    }
    st = cbc_fd_read_max(fd, path, max, data, len, err);
    close(fd);
    return st;
}

enum cbc_status cbc_file_map(const char *path, struct cbc_map *m, struct cbc_err *err)
{
    memset(m, 0, sizeof *m);
    int fd;
    uint64_t size;
    enum cbc_status st = cbc_open_regular(path, 0, &fd, &size, err);
    if (st != CBC_OK)
        return st;
    if (size > SIZE_MAX / 2) {
        close(fd);
        return cbc_err_set(err, CBC_E_FORMAT, "'%s' is too large to read", path);
    }
    if (size > 0) {
        void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            return cbc_err_set(err, CBC_E_IO, "cannot read '%s': %s", path, strerror(e));
        }
        m->data = p;
        m->len = (size_t)size;
    }
    close(fd);
    return CBC_OK;
}

void cbc_file_unmap(struct cbc_map *m)
{
    if (m->data)
        munmap((void *)m->data, m->len);
    memset(m, 0, sizeof *m);
}

enum cbc_status cbc_file_read(const char *path, uint8_t **data, size_t *len, struct cbc_err *err)
{
    return cbc_file_read_max(path, CBC_FILE_MAX, data, len, err);
}

static enum cbc_status write_all(int fd, const void *data, size_t len, const char *path,
                                 struct cbc_err *err)
{
    const uint8_t *p = data;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return cbc_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
        }
        p += w;
        len -= (size_t)w;
    }
    return CBC_OK;
}

static enum cbc_status publish(const char *path, const void *data, size_t len, mode_t mode,
                               struct cbc_err *err);

enum cbc_status cbc_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                                      struct cbc_err *err)
{
    return publish(path, data, len, mode & ~process_umask(), err);
}

/* The file a path names once its symbolic links are followed (malloc'd):
 * the path itself when it is none, the last link's target when that does
 * not exist. NULL with errno ELOOP after 40 links. */
static char *follow_links(const char *path)
{
    char *p = cbc_strdup(path);
    for (int hops = 0; p && hops < 40; hops++) {
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode))
            return p;
        char buf[PATH_MAX];
        ssize_t n = readlink(p, buf, sizeof buf - 1);
        if (n < 0)
            return p;
        buf[n] = '\0';
        char *dir = cbc_path_dir(p);
        char *next = buf[0] == '/' ? cbc_strdup(buf) : dir ? cbc_path_join(dir, buf) : NULL;
        free(dir);
        free(p);
        p = next;
    }
    free(p);
    errno = ELOOP;
    return NULL;
}

enum cbc_status cbc_output_write(const char *path, const void *data, size_t len,
                                 struct cbc_err *err)
{
    char *target = follow_links(path);
    if (!target)
        return errno == ELOOP ? cbc_err_set(err, CBC_E_IO, "cannot write '%s': %s", path,
                                            strerror(ELOOP))
                              : cbc_err_oom(err);
    struct stat st;
    enum cbc_status s;
    if (stat(target, &st) != 0) {
        s = publish(target, data, len, 0666 & ~process_umask(), err);
    } else if (S_ISDIR(st.st_mode)) {
        s = cbc_err_set(err, CBC_E_IO, "cannot write '%s': it is a directory", path);
    } else if (S_ISREG(st.st_mode)) {
        s = publish(target, data, len, st.st_mode & 07777, err); /* the mode it had */
    } else {
        /* a device, a FIFO, a socket: written through, as the compiler would */
        int fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            s = cbc_err_set(err, CBC_E_IO, "cannot open '%s': %s", path, strerror(errno));
        } else {
            s = write_all(fd, data, len, path, err);
            if (close(fd) != 0 && s == CBC_OK)
                s = cbc_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
        }
    }
    free(target);
    return s;
}

static enum cbc_status publish(const char *path, const void *data, size_t len, mode_t mode,
                               struct cbc_err *err)
{
    char *dir = cbc_path_dir(path);
    char *tmp = dir ? cbc_asprintf("%s/.%s.XXXXXX", dir, cbc_path_base(path)) : NULL;
    free(dir);
    if (!tmp)
        return cbc_err_oom(err);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        enum cbc_status s = cbc_err_set(err, CBC_E_IO, "cannot create a temporary file for '%s': %s",
                                        path, strerror(errno));
        free(tmp);
        return s;
    }
    enum cbc_status s = write_all(fd, data, len, path, err);
    if (s == CBC_OK && fchmod(fd, mode) != 0)
        s = cbc_err_set(err, CBC_E_IO, "cannot set the mode of '%s': %s", path, strerror(errno));
    if (close(fd) != 0 && s == CBC_OK)
        s = cbc_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
    if (s == CBC_OK)
        cbc_test_publish_delay();
    if (s == CBC_OK && rename(tmp, path) != 0)
        s = cbc_err_set(err, CBC_E_IO, "cannot publish '%s': %s", path, strerror(errno));
    if (s != CBC_OK)
        unlink(tmp);
    free(tmp);
    return s;
}

enum cbc_status cbc_file_update(const char *path, const void *data, size_t len, bool *changed,
                                struct cbc_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == (uint64_t)len) {
        uint8_t *old = NULL;
        size_t old_len = 0;
        if (cbc_file_read(path, &old, &old_len, NULL) == CBC_OK && old_len == len &&
            (len == 0 || memcmp(old, data, len) == 0)) {
            free(old);
            if (changed)
                *changed = false;
            return CBC_OK;
        }
        free(old);
    }
    if (changed)
        *changed = true;
    /* never through a link (one planted in a build directory would aim our
     * write at someone's file), but a device or FIFO is written to, never
     * replaced: /dev/null and /dev/stdout are outputs, not files to rename over */
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode) &&
        !S_ISDIR(st.st_mode)) {
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        if (fd < 0)
            return cbc_err_set(err, CBC_E_IO, "cannot open '%s': %s", path, strerror(errno));
        enum cbc_status s = write_all(fd, data, len, path, err);
        if (close(fd) != 0 && s == CBC_OK)
            s = cbc_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
        return s;
    }
    return cbc_file_write_atomic(path, data, len, 0644, err);
}

enum cbc_status cbc_mkdir_p(const char *path, mode_t mode, struct cbc_err *err)
{
    /* the common case, a directory that exists: one stat, no walk */
    if (cbc_is_dir(path))
        return CBC_OK;
    char *p = cbc_strdup(path);
    if (!p)
        return cbc_err_oom(err);
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        p[--n] = '\0';
    for (char *s = p + 1;; s++) {
        char c = *s;
        if (c == '/' || c == '\0') {
            *s = '\0';
            if (mkdir(p, mode) != 0 && errno != EEXIST) {
                enum cbc_status st = cbc_err_set(err, CBC_E_IO, "cannot create directory '%s': %s",
                                                 p, strerror(errno));
                free(p);
                return st;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    bool ok = cbc_is_dir(p);
    enum cbc_status st =
        ok ? CBC_OK : cbc_err_set(err, CBC_E_IO, "'%s' exists and is not a directory", p);
    free(p);
    return st;
}

bool cbc_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cbc_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void cbc_tmpdir_remove(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            unlinkat(dirfd(d), de->d_name, 0); /* a link is removed, never followed */
    closedir(d);
    rmdir(path);
}
