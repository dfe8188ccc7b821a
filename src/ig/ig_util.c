/* ig_util.c: the few helpers the IG library needs that the public API does
 * not offer: filling a struct cbc_err, reading a whole regular file with a
 * size cap, and publishing a file by rename of a complete temporary; and
 * the check of a request's targets every engine makes (cbc_ig_check_targets,
 * public), here so that the engines and explain.c need not need each other. The
 * library includes only the public headers of libcubincache, so it keeps
 * these to itself (hidden, like everything not in cubincache/ig.h).
 *
 * Invariants: every setter tolerates a NULL err; a read refuses anything
 * but a regular file (a FIFO or device would block or never end) and any
 * file over its cap; a write leaves either the old file or the new one,
 * never part of one, and removes its temporary on failure.
 */
#include "ig_int.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum cbc_status ig_err_set(struct cbc_err *err, enum cbc_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = status;
        err->remedy[0] = '\0';
    }
    return status;
}

void ig_err_hint(struct cbc_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->remedy, sizeof err->remedy, fmt, ap);
    va_end(ap);
}

enum cbc_status ig_err_oom(struct cbc_err *err)
{
    return ig_err_set(err, CBC_E_NOMEM, "out of memory");
}

char *ig_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    return p ? memcpy(p, s, n) : NULL;
}

float ig_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            mant &= 0x3ff;
            bits = sign | ((exp + 112) << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

float ig_bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

const char *ig_format_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = 0;
    for (; v >= 1000 && u < 4; u++)
        v /= 1000;
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

enum cbc_status ig_file_read(const char *path, uint64_t max, uint8_t **data, size_t *len,
                             struct cbc_err *err)
{
    *data = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return ig_err_set(err, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_IO, "cannot open '%s': %s",
                          path, strerror(errno));
    struct stat st;
    enum cbc_status s = CBC_OK;
    if (fstat(fd, &st) != 0)
        s = ig_err_set(err, CBC_E_IO, "cannot stat '%s': %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        s = ig_err_set(err, CBC_E_IO, "'%s' is not a regular file", path);
    else if ((uint64_t)st.st_size > max)
        s = ig_err_set(err, CBC_E_FORMAT, "'%s' is %llu bytes, over the %llu this reads", path,
                       (unsigned long long)st.st_size, (unsigned long long)max);
    size_t want = s == CBC_OK ? (size_t)st.st_size : 0, got = 0;
    uint8_t *buf = s == CBC_OK ? malloc(want ? want : 1) : NULL;
    if (s == CBC_OK && !buf)
        s = ig_err_oom(err);
    while (s == CBC_OK && got < want) {
        ssize_t r = read(fd, buf + got, want - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            s = ig_err_set(err, CBC_E_IO, "cannot read '%s': %s", path, strerror(errno));
        else if (r == 0)
            s = ig_err_set(err, CBC_E_IO, "'%s' shrank while it was read", path);
        else
            got += (size_t)r;
    }
    close(fd);
    if (s != CBC_OK) {
        free(buf);
        return s;
    }
    *data = buf;
    *len = got;
    return CBC_OK;
}

enum cbc_status ig_file_write_atomic(const char *path, const void *data, size_t len, int mode,
                                     struct cbc_err *err)
{
    const char *slash = strrchr(path, '/');
    int dlen = slash ? (int)(slash - path) : 1;
    const char *dir = slash ? path : ".", *base = slash ? slash + 1 : path;
    size_t cap = strlen(path) + 40;
    char *tmp = malloc(cap);
    if (!tmp)
        return ig_err_oom(err);
    /* created with O_EXCL and `mode`: the kernel applies the umask, as it
     * would to the file itself, and no other file is ever opened */
    static unsigned serial;
    int fd = -1;
    for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
        unsigned r = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED) * 2654435761u ^
                     (unsigned)clock();
        snprintf(tmp, cap, "%.*s/.%s.%d.%08x", dlen, dir, base, (int)getpid(), r);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        enum cbc_status s = ig_err_set(err, CBC_E_IO, "cannot create a temporary file for '%s': %s",
                                       path, strerror(errno));
        free(tmp);
        return s;
    }
    enum cbc_status s = CBC_OK;
    for (const uint8_t *p = data; s == CBC_OK && len;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            s = ig_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
            break;
        }
        p += w;
        len -= (size_t)w;
    }
    if (close(fd) != 0 && s == CBC_OK)
        s = ig_err_set(err, CBC_E_IO, "cannot write '%s': %s", path, strerror(errno));
    if (s == CBC_OK && rename(tmp, path) != 0)
        s = ig_err_set(err, CBC_E_IO, "cannot publish '%s': %s", path, strerror(errno));
    if (s != CBC_OK)
        unlink(tmp);
    free(tmp);
    return s;
}

struct range_part {
    ig_range_fn fn;
    void *ctx;
    size_t b0, b1;
};

static void *range_thread(void *arg)
{
    struct range_part *t = arg;
    t->fn(t->ctx, t->b0, t->b1);
    return NULL;
}

void ig_parallel_ranges(size_t n, size_t work, ig_range_fn fn, void *ctx)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t nt = cpus > 1 ? (size_t)cpus : 1;
    nt = nt > 16 ? 16 : nt > n ? n : nt;
    if (work < (1u << 18) || nt < 2) {
        fn(ctx, 0, n);
        return;
    }
    struct range_part parts[16];
    pthread_t tid[16];
    bool started[16] = {false};
    for (size_t t = 0; t < nt; t++) {
        parts[t] = (struct range_part){fn, ctx, n * t / nt, n * (t + 1) / nt};
        started[t] = t > 0 && pthread_create(&tid[t], NULL, range_thread, &parts[t]) == 0;
    }
    for (size_t t = 0; t < nt; t++) /* this thread: part 0 and any that did not start */
        if (!started[t])
            fn(ctx, parts[t].b0, parts[t].b1);
    for (size_t t = 1; t < nt; t++)
        if (started[t])
            pthread_join(tid[t], NULL);
}

enum cbc_status cbc_ig_check_targets(const int *targets, size_t n, int outputs,
                                     struct cbc_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (targets[i] < 0 || targets[i] >= outputs)
            return ig_err_set(err, CBC_E_USAGE, "target %d (entry %zu) is not an output of the "
                              "model: it has outputs 0 to %d", targets[i], i, outputs - 1);
    return CBC_OK;
}
