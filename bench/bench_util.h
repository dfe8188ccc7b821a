/* bench_util.h: what the C benchmarks share: a monotonic clock, medians,
 * and running one measurement in a fresh (forked) process.
 * Header-only (static functions); benchmarks only, not part of any library.
 * A child started by bench_in_child must not rely on anything CUDA set up in
 * the parent: a forked child cannot inherit a CUDA context. */
#ifndef CBC_BENCH_UTIL_H
#define CBC_BENCH_UTIL_H

#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v in place and returns its median (the upper one for even n). */
static inline double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* Runs fn(arg, out) in a forked child and copies the `size` bytes it left in
 * `out` back into the parent's `out`. False when the child could not be
 * started or did not hand back all `size` bytes. */
static inline bool bench_in_child(void (*fn)(const void *arg, void *out), const void *arg,
                                  void *out, size_t size)
{
    int fds[2];
    if (pipe(fds) != 0)
        return false;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        fn(arg, out);
        _exit(write(fds[1], out, size) == (ssize_t)size ? 0 : 1);
    }
    close(fds[1]);
    bool ok = read(fds[0], out, size) == (ssize_t)size;
    close(fds[0]);
    waitpid(pid, NULL, 0);
    return ok;
}

#endif
