/* first_load_floor.c: what the first verification of a process cannot go
 * below on this machine, to set loader_bench's first-load figure against.
 * Each figure is the median over fresh (forked) processes, on the project's
 * own image for this GPU (the embedded ig_kernels bundle, as the loader reads
 * it from the program's read-only data):
 *   - XXH3-128 of the image with its lines flushed from every cache (cold),
 *     and again once they are cached (warm);
 *   - the same cold hash after a pass that requests every line first, which
 *     keeps all line-fill buffers busy: about the fastest one core reads the
 *     image from memory;
 *   - starting a thread (the call, and until the thread runs) in a process
 *     that has initialised the driver: what reading the image on more cores
 *     would cost first.
 * x86-64 only (clflush); without a GPU the thread figures are skipped.
 */
#include <cubincache/loader.h>

#include "bench_util.h"
#include "common.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <x86intrin.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;

static const struct cbc_embedded_image *img;

static void flush_image(void)
{
    for (size_t i = 0; i < img->size; i += 64)
        _mm_clflush(img->data + i);
    _mm_mfence();
}

static volatile double g_started;

static void *note_start(void *arg)
{
    g_started = bench_now_us();
    return arg;
}

enum what { HASH_COLD, HASH_WARM, HASH_PREFETCHED, THREAD_CALL, THREAD_RUNS, N_WHAT };

/* One figure, in a child that has touched nothing of the image but its
 * pages (and, for the thread figures, has initialised the driver). */
static double measure(enum what w)
{
    struct cbc_hash h;
    cbc_hash_bytes((const unsigned char *)"x", 1, &h); /* the dispatcher picks its unit */
    for (size_t i = 0; i < img->size; i += 4096)
        (void)*(volatile const unsigned char *)(img->data + i);
    if (w == THREAD_CALL || w == THREAD_RUNS) {
        struct cbc_device_info d;
        if (cbc_device_query(0, &d, NULL) != CBC_OK)
            return -1;
        pthread_t t;
        double t0 = bench_now_us();
        if (pthread_create(&t, NULL, note_start, NULL) != 0)
            return -1;
        double call = bench_now_us() - t0;
        pthread_join(t, NULL);
        return w == THREAD_CALL ? call : g_started - t0;
    }
    if (w == HASH_WARM)
        cbc_hash_bytes(img->data, img->size, &h);
    else
        flush_image();
    double t0 = bench_now_us();
    if (w == HASH_PREFETCHED)
        for (size_t i = 0; i < img->size; i += 64)
            __builtin_prefetch(img->data + i, 0, 3);
    cbc_hash_bytes(img->data, img->size, &h);
    return bench_now_us() - t0;
}

static void measure_child(const void *arg, void *out)
{
    *(double *)out = measure(*(const enum what *)arg);
}

int main(void)
{
    /* FLOOR_TARGET's image (sm_90, the H200's, unless set), else the largest */
    const char *want = getenv("FLOOR_TARGET") ? getenv("FLOOR_TARGET") : "sm_90";
    for (size_t i = 0; i < cbc_bundle_ig_kernels.n; i++) {
        const struct cbc_embedded_image *e = &cbc_bundle_ig_kernels.images[i];
        if (!strcmp(e->target, want)) {
            img = e;
            break;
        }
        if (!img || e->size > img->size)
            img = e;
    }
    if (!img) {
        fprintf(stderr, "first_load_floor: the embedded bundle is empty\n");
        return 1;
    }
    enum { RUNS = 31 };
    static const char *const names[N_WHAT] = {"hash_cold_us", "hash_warm_us",
                                              "hash_cold_lines_requested_first_us",
                                              "pthread_create_call_us", "thread_running_after_us"};
    double med[N_WHAT];
    for (int w = 0; w < N_WHAT; w++) {
        double v[RUNS];
        size_t n = 0;
        for (int r = 0; r < RUNS; r++) {
            const enum what what = (enum what)w;
            double us;
            if (bench_in_child(measure_child, &what, &us, sizeof us) && us >= 0)
                v[n++] = us;
        }
        med[w] = n ? bench_median(v, n) : -1;
    }
    printf("{\"bench\":\"first_load_floor\",\"image\":\"%s\",\"image_bytes\":%zu,\"runs\":%d",
           img->target, img->size, RUNS);
    for (int w = 0; w < N_WHAT; w++)
        printf(",\"%s\":%.2f", names[w], med[w]);
    printf("}\n");
    fprintf(stderr, "first-load floor, %s image (%zu bytes), medians of %d fresh processes: XXH3-128 "
            "cold %.2f us, warm %.2f us, cold with every line requested first %.2f us; ",
            img->target, img->size, RUNS, med[HASH_COLD], med[HASH_WARM], med[HASH_PREFETCHED]);
    if (med[THREAD_CALL] < 0)
        fprintf(stderr, "no GPU, so no thread figures\n");
    else
        fprintf(stderr, "after cuInit a thread costs %.2f us to create and runs %.2f us after the "
                "call\n", med[THREAD_CALL], med[THREAD_RUNS]);
    return 0;
}
