/* loader_bench.c: what selection and verification add to loading the
 * project's kernels. First the first load in a process (context current and
 * pages faulted in beforehand, for both sides): the driver's first
 * cuModuleLoadData of the image, and our first selection plus verification
 * (XXH3-128 of the bytes, the ELF's own SM against the label). Then, per
 * round, on the embedded ig_kernels bundle: open it, select the image for
 * GPU 0, verify it (memoised for the process) and time that; then time
 * cuModuleLoadData of the same bytes and unload. Medians over many rounds,
 * then the whole API, cbc_module_load + cbc_module_unload against
 * cuModuleLoadData + cuModuleUnload, the context current on both sides;
 * one JSON line; then kernel launch latency. Before all that, the first
 * load of fresh (forked) processes end to end, ours against the driver's
 * alone (fresh_first_load), with CUDA's default lazy loading and again
 * with CUDA_MODULE_LOADING=EAGER. */
#include <cubincache/loader.h>

#include "bench_util.h"
#include "common.h"

#include <cuda.h>
#include <cudaTypedefs.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;


/* What a load does before the driver: open the embedded bundle, select the
 * image for the device, verify it. The pick, or -1 after saying why. */
static long open_select_verify(const struct cbc_device_info *d, struct cbc_bundle **b,
                               const unsigned char **data, size_t *size, double split_us[3])
{
    struct cbc_err err = {0};
    double t0 = bench_now_us();
    if (cbc_bundle_open_embedded(&cbc_bundle_ig_kernels, b, &err) != CBC_OK) {
        fprintf(stderr, "loader_bench: %s\n", err.msg);
        return -1;
    }
    double t1 = bench_now_us();
    struct cbc_select_query q = {(unsigned)(d->cc_major * 10 + d->cc_minor), d->ptx_isa, false};
    struct cbc_select_result r;
    long pick = cbc_bundle_select(*b, &q, &r);
    double t2 = bench_now_us();
    if (pick < 0 || cbc_bundle_image_bytes(*b, (size_t)pick, data, size, &err) != CBC_OK) {
        fprintf(stderr, "loader_bench: %s\n", pick < 0 ? r.reason : err.msg);
        cbc_bundle_close(*b);
        return -1;
    }
    if (split_us) { /* open, select, verify */
        split_us[0] = t1 - t0;
        split_us[1] = t2 - t1;
        split_us[2] = bench_now_us() - t2;
    }
    return pick;
}

/* Touches every page of every embedded image, so neither side is charged
 * for the first reader's page faults, and returns the device's own SASS
 * image (sm_XY for its compute capability), or NULL. */
static const struct cbc_embedded_image *fault_in(const struct cbc_device_info *d)
{
    char want[16];
    snprintf(want, sizeof want, "sm_%d%d", d->cc_major, d->cc_minor);
    const struct cbc_embedded_image *raw = NULL;
    volatile unsigned char sink = 0;
    for (size_t i = 0; i < cbc_bundle_ig_kernels.n; i++) {
        const struct cbc_embedded_image *im = &cbc_bundle_ig_kernels.images[i];
        if (!strcmp(im->target, want))
            raw = im;
        for (size_t k = 0; k < im->size; k += 4096)
            sink ^= im->data[k];
    }
    (void)sink;
    return raw;
}

/* The first load of a fresh process, end to end, as a program meets it:
 * in a child that has made the context current and faulted the image's
 * pages in, either cuModuleLoadData of the right image alone (raw) or our
 * open, select and verify followed by the same cuModuleLoadData. Unlike
 * the split figures below, this charges each side for the cache misses it
 * really takes: our hash reads the image from memory, and the driver then
 * reads it from cache. `eager` sets CUDA_MODULE_LOADING=EAGER in the child
 * (every kernel goes to the GPU inside cuModuleLoadData) instead of the
 * default lazy loading. The parent must not have touched CUDA (a forked
 * child cannot inherit it). False on failure. */
struct fresh_load {
    double before_us; /* our open + select + verify; 0 for raw */
    double load_us;   /* cuModuleLoadData */
};

struct fresh_how {
    bool ours, eager;
};

static void fresh_child(const void *arg, void *out)
{
    const struct fresh_how *how = arg;
    struct fresh_load *r = out;
    *r = (struct fresh_load){-1, -1};
    if (how->eager)
        setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    struct cbc_err err = {0};
    struct cbc_device_info d;
    PFN_cuModuleLoadData_v2000 load;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 set_current;
    CUcontext ctx;
    if (cbc_device_query(0, &d, &err) != CBC_OK ||
        cbc_driver_symbol("cuModuleLoadData", 2000, (void **)&load, &err) != CBC_OK ||
        cbc_driver_symbol("cuDevicePrimaryCtxRetain", 7000, (void **)&retain, &err) != CBC_OK ||
        cbc_driver_symbol("cuCtxSetCurrent", 4000, (void **)&set_current, &err) != CBC_OK ||
        retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS)
        return;
    const struct cbc_embedded_image *raw = fault_in(&d);
    CUmodule mod;
    struct cbc_bundle *b = NULL;
    const unsigned char *data = raw ? raw->data : NULL;
    size_t size;
    double t0 = bench_now_us();
    if ((how->ours && open_select_verify(&d, &b, &data, &size, NULL) < 0) || !data)
        return;
    double t1 = bench_now_us();
    if (load(&mod, data) == CUDA_SUCCESS) {
        r->load_us = bench_now_us() - t1;
        r->before_us = t1 - t0;
    }
}

static bool fresh_first_load(bool ours, bool eager, struct fresh_load *out)
{
    const struct fresh_how how = {ours, eager};
    return bench_in_child(fresh_child, &how, out, sizeof *out) && out->load_us > 0;
}

int main(void)
{
    /* fresh processes first, while this one has not touched CUDA: raw and
     * ours in turn, lazy loading (the default) then eager */
    enum { FRESH = 41, FRESH_EAGER = 15 };
    double raw_load[FRESH], ours_before[FRESH], ours_load[FRESH], ours_total[FRESH];
    double eager_raw[FRESH_EAGER], eager_ours[FRESH_EAGER];
    bool fresh_ok = true;
    for (int i = 0; i < FRESH && fresh_ok; i++) {
        struct fresh_load r, o;
        fresh_ok = fresh_first_load(false, false, &r) && fresh_first_load(true, false, &o);
        raw_load[i] = r.load_us;
        ours_before[i] = o.before_us;
        ours_load[i] = o.load_us;
        ours_total[i] = o.before_us + o.load_us;
    }
    for (int i = 0; i < FRESH_EAGER && fresh_ok; i++) {
        struct fresh_load r, o;
        fresh_ok = fresh_first_load(false, true, &r) && fresh_first_load(true, true, &o);
        eager_raw[i] = r.load_us;
        eager_ours[i] = o.before_us + o.load_us;
    }
    struct cbc_err err = {0};
    struct cbc_device_info d;
    if (cbc_device_query(0, &d, &err) != CBC_OK) {
        fprintf(stderr, "loader_bench: %s\n", err.msg);
        return 77;
    }
    if (!fresh_ok) {
        fprintf(stderr, "loader_bench: the fresh-process first loads failed\n");
        return 1;
    }
    const double fr = bench_median(raw_load, FRESH), fo = bench_median(ours_total, FRESH);
    const double fo_before = bench_median(ours_before, FRESH);
    const double fo_load = bench_median(ours_load, FRESH);
    const double er = bench_median(eager_raw, FRESH_EAGER);
    const double eo = bench_median(eager_ours, FRESH_EAGER);
    PFN_cuModuleLoadData_v2000 load;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuDevicePrimaryCtxRetain_v7000 retain;
    PFN_cuCtxSetCurrent_v4000 set_current;
    if (cbc_driver_symbol("cuModuleLoadData", 2000, (void **)&load, &err) != CBC_OK ||
        cbc_driver_symbol("cuModuleUnload", 2000, (void **)&unload, &err) != CBC_OK ||
        cbc_driver_symbol("cuDevicePrimaryCtxRetain", 7000, (void **)&retain, &err) != CBC_OK ||
        cbc_driver_symbol("cuCtxSetCurrent", 4000, (void **)&set_current, &err) != CBC_OK) {
        fprintf(stderr, "loader_bench: %s\n", err.msg);
        return 1;
    }
    /* The first load in the process. The context is made current first and
     * the image's pages are faulted in, so neither side is charged for what
     * any first reader of the image pays; then the driver's first load of
     * the image, raw, and our first selection and verification (the image
     * is hashed once per process), each timed on its own. */
    CUcontext ctx;
    if (retain(&ctx, 0) != CUDA_SUCCESS || set_current(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "loader_bench: cannot make GPU 0's context current\n");
        return 1;
    }
    const struct cbc_embedded_image *raw = fault_in(&d);
    double first_raw = 0;
    if (raw) {
        CUmodule mod;
        double r0 = bench_now_us();
        if (load(&mod, raw->data) != CUDA_SUCCESS) {
            fprintf(stderr, "loader_bench: cuModuleLoadData failed\n");
            return 1;
        }
        first_raw = bench_now_us() - r0;
        unload(mod);
    }
    struct cbc_bundle *b0;
    struct cbc_module *m0;
    const unsigned char *d0;
    size_t s0;
    double f0 = bench_now_us(), first_split[3];
    if (open_select_verify(&d, &b0, &d0, &s0, first_split) < 0)
        return 1;
    double first_verify = bench_now_us() - f0;
    if (cbc_module_load(b0, 0, NULL, &m0, &err) != CBC_OK) {
        fprintf(stderr, "loader_bench: %s\n", err.msg);
        return 1;
    }
    enum { ROUNDS = 200 };
    static double sel[ROUNDS], drv[ROUNDS];
    const char *target = "";
    size_t bytes = 0;
    for (int i = 0; i < ROUNDS + 10; i++) {
        double t0 = bench_now_us();
        struct cbc_bundle *b;
        const unsigned char *data;
        size_t size;
        long pick = open_select_verify(&d, &b, &data, &size, NULL);
        if (pick < 0)
            return 1;
        double t1 = bench_now_us();
        CUmodule mod;
        if (load(&mod, data) != CUDA_SUCCESS) {
            fprintf(stderr, "loader_bench: cuModuleLoadData failed\n");
            return 1;
        }
        double t2 = bench_now_us();
        unload(mod);
        size_t n;
        target = cbc_bundle_images(b, &n)[pick].target.kind == CBC_KIND_PTX ? "ptx" : "sass";
        bytes = size;
        cbc_bundle_close(b);
        if (i >= 10) {
            sel[i - 10] = t1 - t0;
            drv[i - 10] = t2 - t1;
        }
    }
    double s = bench_median(sel, ROUNDS), l = bench_median(drv, ROUNDS);
    /* The whole API against the driver's, as a program calls them, the
     * context current on both sides (cbc_module_load makes it so; the raw
     * side has it from above): cbc_module_load + cbc_module_unload (device
     * query, primary context retain, set current, select, the memoised
     * verification, cuModuleLoadData; unload, context release) against
     * cuModuleLoadData + cuModuleUnload, alternating, medians of ROUNDS. */
    static double api_ours[ROUNDS], api_raw[ROUNDS];
    for (int i = 0; i < ROUNDS + 10; i++) {
        struct cbc_module *m;
        double t0 = bench_now_us();
        if (cbc_module_load(b0, 0, NULL, &m, &err) != CBC_OK) {
            fprintf(stderr, "loader_bench: %s\n", err.msg);
            return 1;
        }
        cbc_module_unload(m);
        double t1 = bench_now_us();
        CUmodule mod;
        if (load(&mod, d0) != CUDA_SUCCESS) {
            fprintf(stderr, "loader_bench: cuModuleLoadData failed\n");
            return 1;
        }
        unload(mod);
        double t2 = bench_now_us();
        if (i >= 10) {
            api_ours[i - 10] = t1 - t0;
            api_raw[i - 10] = t2 - t1;
        }
    }
    const double ao = bench_median(api_ours, ROUNDS), ar = bench_median(api_raw, ROUNDS);
    /* the cost of the two checks alone, on the warm image */
    double hash_us = 0, label_us = 0;
    struct cbc_target want;
    if (raw && cbc_target_parse(raw->target, &want)) {
        struct cbc_hash h;
        double v0 = bench_now_us();
        cbc_hash_bytes(raw->data, raw->size, &h);
        double v1 = bench_now_us();
        cbc_binfmt_verify_target(raw->data, raw->size, &want, "image", NULL, &err);
        hash_us = v1 - v0;
        label_us = bench_now_us() - v1;
    }
    printf("{\"bench\":\"loader_overhead\",\"gpu\":\"%s\",\"image\":\"%s\",\"image_bytes\":%zu,"
           "\"rounds\":%d,\"first_cuModuleLoadData_us\":%.2f,\"first_select_verify_us\":%.2f,"
           "\"select_verify_median_us\":%.2f,\"cuModuleLoadData_median_us\":%.2f,"
           "\"hash_warm_us\":%.2f,\"label_check_warm_us\":%.2f,"
           "\"first_open_us\":%.2f,\"first_select_us\":%.2f,\"first_verify_us\":%.2f,"
           "\"fresh_process_runs\":%d,\"fresh_first_load_raw_us\":%.2f,"
           "\"fresh_first_load_ours_us\":%.2f,\"fresh_first_overhead_percent\":%.3f,"
           "\"fresh_ours_before_load_us\":%.2f,\"fresh_ours_cuModuleLoadData_us\":%.2f,"
           "\"fresh_eager_runs\":%d,\"fresh_eager_raw_us\":%.2f,\"fresh_eager_ours_us\":%.2f,"
           "\"fresh_eager_overhead_percent\":%.3f,"
           "\"first_overhead_percent\":%.3f,\"overhead_percent\":%.3f,"
           "\"api_load_unload_ours_us\":%.2f,\"api_load_unload_raw_us\":%.2f,"
           "\"api_overhead_percent\":%.3f}\n",
           d.name, cbc_module_target(m0), bytes, ROUNDS, first_raw, first_verify, s, l, hash_us,
           label_us, first_split[0], first_split[1], first_split[2], FRESH, fr, fo,
           100 * (fo - fr) / fr, fo_before, fo_load, FRESH_EAGER, er, eo, 100 * (eo - er) / er,
           100 * first_verify / (first_raw > 0 ? first_raw : l), 100 * s / l, ao, ar,
           100 * (ao - ar) / ar);
    fprintf(stderr, "loader: later loads, whole API (median of %d): cbc_module_load + unload "
            "%.2f us, cuModuleLoadData + cuModuleUnload %.2f us: %+.1f%%\n", ROUNDS, ao, ar,
            100 * (ao - ar) / ar);
    fprintf(stderr, "loader: first in the process: open %.2f us, select %.2f us, verify %.2f us\n",
            first_split[0], first_split[1], first_split[2]);
    fprintf(stderr, "loader: first load of a fresh process, end to end (median of %d each): "
            "cuModuleLoadData alone %.2f us, ours (select + verify + cuModuleLoadData) %.2f us: "
            "%+.1f%%; ours is open + select + verify %.2f us, then cuModuleLoadData %.2f us "
            "(medians apart); with CUDA_MODULE_LOADING=EAGER (median of %d each): %.2f us, "
            "ours %.2f us: %+.1f%%\n",
            FRESH, fr, fo, 100 * (fo - fr) / fr, fo_before, fo_load, FRESH_EAGER, er, eo,
            100 * (eo - er) / er);
    fprintf(stderr, "loader: first in the process: select+verify %.2f us (XXH3-128 of the image "
            "%.2f us and its ELF label %.2f us, warm) against the first cuModuleLoadData %.2f us: "
            "+%.1f%%; later loads: %.2f us against %.2f us (%s, %zu bytes): +%.2f%%\n",
            first_verify, hash_us, label_us, first_raw,
            100 * first_verify / (first_raw > 0 ? first_raw : l), s, l, target, bytes, 100 * s / l);
    /* what one kernel launch costs here: enqueue only, and enqueue + wait */
    {
        void *fn;
        PFN_cuLaunchKernel_v4000 launch;
        PFN_cuCtxSynchronize_v2000 sync;
        PFN_cuMemAlloc_v3020 alloc;
        cbc_driver_symbol("cuLaunchKernel", 4000, (void **)&launch, &err);
        cbc_driver_symbol("cuCtxSynchronize", 2000, (void **)&sync, &err);
        cbc_driver_symbol("cuMemAlloc", 3020, (void **)&alloc, &err);
        cbc_module_function(m0, "check_finite", &fn, &err);
        CUdeviceptr flag;
        alloc(&flag, 16);
        size_t n = 1;
        void *args[] = {&flag, &n, &flag};
        for (int i = 0; i < 100; i++)
            launch((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
        sync();
        double t0 = bench_now_us();
        for (int i = 0; i < 1000; i++)
            launch((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
        double t1 = bench_now_us();
        sync();
        double t2 = bench_now_us();
        for (int i = 0; i < 200; i++) {
            launch((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
            sync();
        }
        double t3 = bench_now_us();
        printf("{\"bench\":\"launch_latency\",\"enqueue_us\":%.2f,\"back_to_back_us\":%.2f,"
               "\"launch_and_wait_us\":%.2f}\n",
               (t1 - t0) / 1000, (t2 - t0) / 1000, (t3 - t2) / 200);
        fprintf(stderr, "launch: %.2f us to enqueue, %.2f us per kernel back to back, %.2f us launch+wait\n",
                (t1 - t0) / 1000, (t2 - t0) / 1000, (t3 - t2) / 200);
    }
    cbc_module_unload(m0);
    cbc_bundle_close(b0);
    return 0;
}
