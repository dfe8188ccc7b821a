/* shim.c: cubincache-trace.so, preloaded (LD_PRELOAD) into nvcc and every
 * program it runs while cubincache records a compile, so the record holds
 * not only the files the compile read but every place it looked for one
 * and found nothing: the -I directories searched before the one that held
 * a header, __has_include and #include_next probes, precompiled-header
 * (.gch) candidates, PATH and specs searches. A file that later appears at
 * one of those places changes what nvcc would build; the direct-mode
 * record checks them (src/trace/trace.h, src/direct).
 *
 * What is logged, to the file CUBINCACHE_TRACE_LOG names (read with
 * secure_getenv, so a set-user-ID program never honours it), one record
 * per event, each written with one write(2) to a descriptor opened
 * O_APPEND (so records of concurrent processes and threads never
 * interleave and a killed process loses nothing it logged):
 *   "P" the program's own path      once per process, when it starts
 *   "R" path                        opened for reading, a regular file
 *   "W" path                        opened for writing or created, but
 *                                   not to append (a log's way)
 *   "A" path                        looked up and absent (ENOENT, ENOTDIR)
 * each followed by one NUL. Paths are absolute (relative ones joined with
 * the working directory, or with an openat descriptor's directory),
 * not normalised. /proc, /sys and /dev are never logged.
 *
 * Invariants: the shim only observes: every call is forwarded to the real
 * function with its arguments unchanged, and errno is what the real call
 * left; it allocates nothing and takes no lock, so it is safe in any
 * process, before main and between fork and exec. It links nothing but
 * libc (built without sanitizers: it is loaded into programs that are not
 * instrumented).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static int g_fd = -1;
static char g_cwd[PATH_MAX];
static size_t g_cwd_len;

static void load_cwd(void)
{
    long n = syscall(SYS_getcwd, g_cwd, sizeof g_cwd);
    g_cwd_len = n > 0 ? strlen(g_cwd) : 0;
}

static size_t put(char *out, size_t at, size_t cap, const char *s, size_t n)
{
    if (at < cap) {
        size_t k = n < cap - at ? n : cap - at;
        memcpy(out + at, s, k);
    }
    return at + n;
}

static void emit_abs(char kind, const char *dir, size_t dlen, const char *path)
{
    if (g_fd < 0 || !path)
        return;
    char rec[PATH_MAX * 2 + 4];
    size_t n = 0, cap = sizeof rec - 1;
    rec[n++] = kind;
    if (path[0] != '/') {
        if (!dlen)
            return; /* no directory to take it against: not a place we can name */
        n = put(rec, n, cap, dir, dlen);
        n = put(rec, n, cap, "/", 1);
    }
    n = put(rec, n, cap, path, strlen(path));
    if (n >= cap)
        return; /* longer than any path the kernel resolves */
    const char *p = rec + 1;
    if (!strncmp(p, "/proc/", 6) || !strncmp(p, "/sys/", 5) || !strncmp(p, "/dev/", 5))
        return;
    rec[n++] = '\0';
    int saved = errno;
    while (syscall(SYS_write, g_fd, rec, n) < 0 && errno == EINTR) {
    }
    errno = saved;
}

static void emit(char kind, const char *path)
{
    emit_abs(kind, g_cwd, g_cwd_len, path);
}

/* A path relative to an openat directory descriptor. */
static void emit_at(char kind, int dirfd, const char *path)
{
    if (!path || path[0] == '/' || dirfd == AT_FDCWD) {
        emit(kind, path);
        return;
    }
    char link[64], dir[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
    int saved = errno;
    long n = syscall(SYS_readlink, link, dir, sizeof dir - 1);
    errno = saved;
    if (n > 0)
        emit_abs(kind, dir, (size_t)n, path);
}

__attribute__((constructor)) static void shim_init(void)
{
    const char *log = secure_getenv("CUBINCACHE_TRACE_LOG");
    if (!log || log[0] != '/')
        return;
    int saved = errno;
    g_fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_APPEND | O_CLOEXEC);
    load_cwd();
    char exe[PATH_MAX];
    long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        emit('P', exe);
    }
    errno = saved;
}

/* ---- the outcome of a call ------------------------------------------------ */

static bool absent(int e)
{
    return e == ENOENT || e == ENOTDIR;
}

/* After open/openat: what the descriptor is. */
static void opened(int dirfd, const char *path, int flags, int fd)
{
    if (g_fd < 0)
        return;
    if (fd < 0) {
        if (absent(errno))
            emit_at('A', dirfd, path);
        return;
    }
    if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC))) {
        /* appending is what logs do (a wrapper's "echo >> nvcc.log"); a
         * compiler writes its outputs whole */
        if (!(flags & O_APPEND) || (flags & O_TRUNC))
            emit_at('W', dirfd, path);
        return;
    }
    struct stat st;
    int saved = errno;
    if (syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode))
        emit_at('R', dirfd, path);
    errno = saved;
}

static void probed(int dirfd, const char *path, int r)
{
    if (g_fd >= 0 && r != 0 && absent(errno))
        emit_at('A', dirfd, path);
}

/* The next definition of `name` (libc's), found once. glibc keeps the
 * pre-2.33 stat entry points only as versioned compatibility symbols,
 * which dlsym does not return: those are asked for by version. */
static void *next_symbol(const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
#if defined(__x86_64__)
    if (!p)
        p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
#endif
    return p;
}

#define REAL(name, ret, params)                                                                    \
    static ret(*real_##name) params;                                                               \
    if (!real_##name)                                                                              \
        real_##name = (ret(*) params)next_symbol(#name);                                           \
    if (!real_##name) {                                                                            \
        errno = ENOSYS;                                                                            \
        return -1;                                                                                 \
    }

/* ---- open ----------------------------------------------------------------- */

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(ap, int)
                                                                      : 0;
}

#define OPEN_LIKE(name)                                                                            \
    EXPORT int name(const char *path, int flags, ...)                                              \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t mode = mode_arg(flags, ap);                                                         \
        va_end(ap);                                                                                \
        REAL(name, int, (const char *, int, ...));                                               \
        int fd = real_##name(path, flags, mode);                                                   \
        int e = errno;                                                                             \
        opened(AT_FDCWD, path, flags, fd);                                                         \
        errno = e;                                                                                 \
        return fd;                                                                                 \
    }
OPEN_LIKE(open)
OPEN_LIKE(open64)

#define OPENAT_LIKE(name)                                                                          \
    EXPORT int name(int dirfd, const char *path, int flags, ...)                                   \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, flags);                                                                       \
        mode_t mode = mode_arg(flags, ap);                                                         \
        va_end(ap);                                                                                \
        REAL(name, int, (int, const char *, int, ...));                                          \
        int fd = real_##name(dirfd, path, flags, mode);                                            \
        int e = errno;                                                                             \
        opened(dirfd, path, flags, fd);                                                            \
        errno = e;                                                                                 \
        return fd;                                                                                 \
    }
OPENAT_LIKE(openat)
OPENAT_LIKE(openat64)

/* the _FORTIFY_SOURCE entry points */
#define OPEN2_LIKE(name)                                                                           \
    EXPORT int name(const char *path, int flags)                                                   \
    {                                                                                              \
        REAL(name, int, (const char *, int));                                                    \
        int fd = real_##name(path, flags);                                                         \
        int e = errno;                                                                             \
        opened(AT_FDCWD, path, flags, fd);                                                         \
        errno = e;                                                                                 \
        return fd;                                                                                 \
    }
OPEN2_LIKE(__open_2)
OPEN2_LIKE(__open64_2)

#define OPENAT2_LIKE(name)                                                                         \
    EXPORT int name(int dirfd, const char *path, int flags)                                        \
    {                                                                                              \
        REAL(name, int, (int, const char *, int));                                               \
        int fd = real_##name(dirfd, path, flags);                                                  \
        int e = errno;                                                                             \
        opened(dirfd, path, flags, fd);                                                            \
        errno = e;                                                                                 \
        return fd;                                                                                 \
    }
OPENAT2_LIKE(__openat_2)
OPENAT2_LIKE(__openat64_2)

#define CREAT_LIKE(name)                                                                           \
    EXPORT int name(const char *path, mode_t mode)                                                 \
    {                                                                                              \
        REAL(name, int, (const char *, mode_t));                                                 \
        int fd = real_##name(path, mode);                                                          \
        int e = errno;                                                                             \
        opened(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, fd);                                  \
        errno = e;                                                                                 \
        return fd;                                                                                 \
    }
CREAT_LIKE(creat)
CREAT_LIKE(creat64)

/* fopen opens through libc's internal open, which is not interposable. */
static int fopen_flags(const char *mode)
{
    if (!mode)
        return O_RDONLY;
    if (mode[0] == 'r' && !strchr(mode, '+'))
        return O_RDONLY;
    return mode[0] == 'a' ? O_WRONLY | O_CREAT | O_APPEND : O_WRONLY | O_CREAT | O_TRUNC;
}

#define FOPEN_LIKE(name)                                                                           \
    EXPORT FILE *name(const char *path, const char *mode)                                          \
    {                                                                                              \
        static FILE *(*real)(const char *, const char *);                                          \
        if (!real)                                                                                 \
            real = (FILE * (*)(const char *, const char *)) next_symbol(#name);                    \
        if (!real) {                                                                               \
            errno = ENOSYS;                                                                        \
            return NULL;                                                                           \
        }                                                                                          \
        FILE *f = real(path, mode);                                                                \
        int e = errno;                                                                             \
        opened(AT_FDCWD, path, fopen_flags(mode), f ? fileno(f) : -1);                             \
        errno = e;                                                                                 \
        return f;                                                                                  \
    }
FOPEN_LIKE(fopen)
FOPEN_LIKE(fopen64)

/* ---- stat, access and friends: a failed one is a probe ---------------------- */

#define PATH_PROBE(name, argdecl, args)                                                            \
    EXPORT int name argdecl                                                                        \
    {                                                                                              \
        REAL(name, int, argdecl);                                                                \
        int r = real_##name args;                                                                  \
        int e = errno;                                                                             \
        probed(AT_FDCWD, path, r);                                                                 \
        errno = e;                                                                                 \
        return r;                                                                                  \
    }
#define AT_PROBE(name, argdecl, args)                                                              \
    EXPORT int name argdecl                                                                        \
    {                                                                                              \
        REAL(name, int, argdecl);                                                                \
        int r = real_##name args;                                                                  \
        int e = errno;                                                                             \
        probed(dirfd, path, r);                                                                    \
        errno = e;                                                                                 \
        return r;                                                                                  \
    }

PATH_PROBE(stat, (const char *path, struct stat *st), (path, st))
PATH_PROBE(stat64, (const char *path, struct stat64 *st), (path, st))
PATH_PROBE(lstat, (const char *path, struct stat *st), (path, st))
PATH_PROBE(lstat64, (const char *path, struct stat64 *st), (path, st))
PATH_PROBE(access, (const char *path, int mode), (path, mode))
PATH_PROBE(euidaccess, (const char *path, int mode), (path, mode))
PATH_PROBE(eaccess, (const char *path, int mode), (path, mode))
AT_PROBE(fstatat, (int dirfd, const char *path, struct stat *st, int flags),
         (dirfd, path, st, flags))
AT_PROBE(fstatat64, (int dirfd, const char *path, struct stat64 *st, int flags),
         (dirfd, path, st, flags))
AT_PROBE(faccessat, (int dirfd, const char *path, int mode, int flags), (dirfd, path, mode, flags))
AT_PROBE(statx, (int dirfd, const char *path, int flags, unsigned mask, struct statx *st),
         (dirfd, path, flags, mask, st))
/* glibc before 2.33 compiled stat() into these; programs built then
 * (NVIDIA's among them) still call them */
PATH_PROBE(__xstat, (int ver, const char *path, struct stat *st), (ver, path, st))
PATH_PROBE(__xstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st))
PATH_PROBE(__lxstat, (int ver, const char *path, struct stat *st), (ver, path, st))
PATH_PROBE(__lxstat64, (int ver, const char *path, struct stat64 *st), (ver, path, st))
AT_PROBE(__fxstatat, (int ver, int dirfd, const char *path, struct stat *st, int flags),
         (ver, dirfd, path, st, flags))
AT_PROBE(__fxstatat64, (int ver, int dirfd, const char *path, struct stat64 *st, int flags),
         (ver, dirfd, path, st, flags))

/* ---- the working directory ---------------------------------------------------- */

EXPORT int chdir(const char *path)
{
    REAL(chdir, int, (const char *));
    int r = real_chdir(path);
    int e = errno;
    if (r == 0)
        load_cwd();
    errno = e;
    return r;
}

EXPORT int fchdir(int fd)
{
    REAL(fchdir, int, (int));
    int r = real_fchdir(fd);
    int e = errno;
    if (r == 0)
        load_cwd();
    errno = e;
    return r;
}
