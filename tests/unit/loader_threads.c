/* loader_threads.c: the loader used from many threads at once, against the
 * fake driver: the first use of the driver (one cuInit, a table nobody sees
 * half filled), device queries, and bundles opened, verified and loaded in
 * parallel (the process-wide memo of verified embedded images). Plain C
 * with pthreads rather than Criterion, so CI can run it under
 * ThreadSanitizer, which reports any data race as a failure. */
#include <cubincache/loader.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;

enum { THREADS = 8, ROUNDS = 20 };

static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

static void failf(const char *what, const struct cbc_err *err)
{
    pthread_mutex_lock(&fail_lock);
    fprintf(stderr, "FAIL: %s: %s\n", what, err ? err->msg : "");
    failures++;
    pthread_mutex_unlock(&fail_lock);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start); /* all at once, the driver not yet opened */
    for (int r = 0; r < ROUNDS; r++) {
        struct cbc_err err = {0};
        int n = 0;
        if (cbc_device_count(&n, &err) != CBC_OK || n != 1)
            failf("cbc_device_count", &err);
        struct cbc_device_info d;
        if (cbc_device_query(0, &d, &err) != CBC_OK || d.cc_major != 9)
            failf("cbc_device_query", &err);
        struct cbc_bundle *b = NULL;
        if (cbc_bundle_open_embedded(&cbc_bundle_ig_kernels, &b, &err) != CBC_OK) {
            failf("cbc_bundle_open_embedded", &err);
            continue;
        }
        struct cbc_module *m = NULL;
        if (cbc_module_load(b, 0, NULL, &m, &err) != CBC_OK)
            failf("cbc_module_load", &err);
        else if (strcmp(cbc_module_target(m), "sm_90") != 0)
            failf("loaded another target than sm_90", NULL);
        cbc_module_unload(m);
        cbc_bundle_close(b);
    }
    return NULL;
}

int main(void)
{
    const char *fake = getenv("CBC_FAKE_CUDA");
    if (!fake || !*fake) {
        fprintf(stderr, "CBC_FAKE_CUDA is not set: run through meson test\n");
        return 1;
    }
    setenv("CUBINCACHE_LIBCUDA", fake, 1);
    setenv("FAKE_CUDA_CC", "90", 1);
    setenv("FAKE_CUDA_COUNT", "1", 1);
    pthread_t th[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, worker, NULL) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    void *h = dlopen(fake, RTLD_NOW | RTLD_NOLOAD);
    int (*count)(const char *) = h ? (int (*)(const char *))dlsym(h, "fake_cuda_count") : NULL;
    int inits = count ? count("cuInit") : -1;
    if (inits != 1) {
        fprintf(stderr, "FAIL: cuInit ran %d times, once expected\n", inits);
        failures++;
    }
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("%d threads x %d rounds: driver opened once, every load verified and sm_90\n", THREADS,
           ROUNDS);
    return 0;
}
