/* gpu_test.h: a minimal harness for the GPU suite: each program is one
 * test binary that exits 0 (pass), 1 (fail, after printing every failed
 * check) or 77 (no GPU here: meson reports SKIP). */
#ifndef CBC_GPU_TEST_H
#define CBC_GPU_TEST_H

#include <cubincache/loader.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int g_failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            g_failures++;                                                                          \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                                 \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

/* Exits 77 unless a GPU is usable. */
static inline void require_gpu(void)
{
    int n = 0;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_device_count(&n, &err);
    if (st == CBC_E_NO_DRIVER || st == CBC_E_NO_DEVICE) {
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    if (st != CBC_OK) {
        printf("FAIL: %s\n", err.msg);
        exit(1);
    }
}

static inline int finish(const char *name)
{
    printf("%s: %s (%d failed checks)\n", name, g_failures ? "FAIL" : "PASS", g_failures);
    return g_failures ? 1 : 0;
}

/* ||a - b|| / ||b|| over n floats */
static inline double rel_l2(const float *a, const float *b, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

#endif
