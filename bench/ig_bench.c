/* ig_bench.c: the IG engine's speed on the GPU, end to end (host arrays in,
 * host arrays out, every transfer and launch counted), median of repeated
 * runs after warm-up, for the 784-512-256-1 tanh MLP at 50 Gauss-Legendre
 * steps: one input, a batch of 1024, 64 and 4096 features, batched central
 * differences and the per-feature loop.
 *
 *   ig_bench DIR   writes DIR/mlp_<F>.safetensors and DIR/inputs_<F>.npy (the
 *                  exact weights and inputs measured, for bench/torch_ig.py)
 *                  and DIR/ours_<F>.npy (our attributions of inputs 0..7),
 *                  then prints one JSON object per measurement on stdout.
 * Weights: uniform(-1/sqrt(in), 1/sqrt(in)) from a fixed LCG, as nn.Linear
 * initialises them; inputs uniform(0, 1).
 */
#include <cubincache/ig.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#include "bench_util.h"
#include "common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t lcg = 42;
static float urand01(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((lcg >> 40) / (double)(1u << 24));
}

static double now_ms(void)
{
    return bench_now_us() / 1e3;
}

struct net {
    int sizes[4];
    float *w[3], *b[3];
    struct cbc_mlp_layer L[3];
    struct cbc_mlp m;
};

static void make_net(struct net *n, int F)
{
    int s[4] = {F, 512, 256, 1};
    memcpy(n->sizes, s, sizeof s);
    for (int l = 0; l < 3; l++) {
        float bound = 1.0f / sqrtf((float)s[l]);
        n->w[l] = malloc(sizeof(float) * (size_t)s[l] * s[l + 1]);
        n->b[l] = malloc(sizeof(float) * (size_t)s[l + 1]);
        for (int i = 0; i < s[l] * s[l + 1]; i++)
            n->w[l][i] = (2 * urand01() - 1) * bound;
        for (int i = 0; i < s[l + 1]; i++)
            n->b[l][i] = (2 * urand01() - 1) * bound;
        n->L[l] = (struct cbc_mlp_layer){.in = s[l],
                                         .out = s[l + 1],
                                         .w = n->w[l],
                                         .b = n->b[l],
                                         .act = l < 2 ? CBC_ACT_TANH : CBC_ACT_IDENTITY};
    }
    n->m = (struct cbc_mlp){3, n->L};
}

/* safetensors as safetensors.torch.save_file writes nn.Sequential(Linear,
 * Tanh, Linear, Tanh, Linear): keys 0, 2, 4. */
static void write_safetensors(const char *path, const struct net *n)
{
    struct cbc_buf h = {0}, d = {0};
    size_t off = 0;
    cbc_buf_puts(&h, "{\"__metadata__\":{\"activations\":\"tanh,tanh,identity\"}");
    for (int l = 0; l < 3; l++) {
        size_t wb = sizeof(float) * (size_t)n->sizes[l] * n->sizes[l + 1];
        size_t bb = sizeof(float) * (size_t)n->sizes[l + 1];
        cbc_buf_printf(&h, ",\"%d.weight\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}",
                       2 * l, n->sizes[l + 1], n->sizes[l], off, off + wb);
        off += wb;
        cbc_buf_printf(&h, ",\"%d.bias\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
                       2 * l, n->sizes[l + 1], off, off + bb);
        off += bb;
        cbc_buf_append(&d, n->w[l], wb);
        cbc_buf_append(&d, n->b[l], bb);
    }
    cbc_buf_puts(&h, "}");
    while (h.len % 8)
        cbc_buf_puts(&h, " ");
    struct cbc_buf f = {0};
    uint8_t len8[8];
    cbc_wr64(len8, h.len);
    cbc_buf_append(&f, len8, 8);
    cbc_buf_append(&f, h.p, h.len);
    cbc_buf_append(&f, d.p, d.len);
    cbc_file_write_atomic(path, f.p, f.len, 0644, NULL);
    cbc_buf_release(&h);
    cbc_buf_release(&d);
    cbc_buf_release(&f);
}

static void emit(const char *name, int F, size_t n, int steps, const double *t, size_t runs,
                 double flops)
{
    double *s = malloc(sizeof *s * runs);
    memcpy(s, t, sizeof *s * runs);
    double med = bench_median(s, runs), lo = s[0], hi = s[runs - 1];
    printf("{\"impl\":\"cubincache\",\"bench\":\"%s\",\"features\":%d,\"inputs\":%zu,\"steps\":%d,"
           "\"runs\":%zu,\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,"
           "\"explanations_per_s\":%.1f,\"gflops_per_s\":%.1f}\n",
           name, F, n, steps, runs, med, lo, hi, (double)n / (med / 1e3),
           flops > 0 ? flops / (med / 1e3) / 1e9 : 0.0);
    fflush(stdout);
    fprintf(stderr, "%-28s F=%-5d n=%-5zu median %10.4f ms (min %.4f, max %.4f)  %12.0f expl/s\n", name,
            F, n, med, lo, hi, (double)n / (med / 1e3));
    free(s);
}

static int run_dev(struct cbc_ig_gpu_model *gm, const float *x, size_t n, int F,
                   enum cbc_ig_gradient gr, float *attr, double *v, bool dev)
{
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x;
    r.n = n;
    r.gradient = gr;
    r.device_pointers = dev;
    struct cbc_ig_output o = {attr, v, v + n, v + 2 * n, v + 3 * n};
    struct cbc_err err = {0};
    if (cbc_ig_gpu_mlp(gm, &r, &o, &err) != CBC_OK) {
        fprintf(stderr, "ig_bench: %s\n", err.msg);
        return 1;
    }
    (void)F;
    return 0;
}

static int run(struct cbc_ig_gpu_model *gm, const float *x, size_t n, int F, enum cbc_ig_gradient gr,
               float *attr, double *v)
{
    return run_dev(gm, x, n, F, gr, attr, v, false);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ig_bench DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    cbc_mkdir_p(dir, 0755, NULL);
    struct cbc_err err = {0};
    struct cbc_ig_gpu *g;
    if (cbc_ig_gpu_open(0, NULL, NULL, &g, &err) != CBC_OK) {
        fprintf(stderr, "ig_bench: %s\n", err.msg);
        return 77;
    }
    fprintf(stderr, "ig_bench: %s\n", cbc_ig_gpu_describe(g));
    /* IG_BENCH_QUICK: 784 features only, few runs (for profiling under ncu) */
    const bool quick = getenv("IG_BENCH_QUICK") != NULL;
    const int feats[3] = {784, 64, 4096};
    const size_t N = 1024;
    const int S = 50;
    for (int fi = 0; fi < (quick ? 1 : 3); fi++) {
        int F = feats[fi];
        struct net net;
        make_net(&net, F);
        float *x = malloc(sizeof(float) * N * F);
        for (size_t i = 0; i < N * (size_t)F; i++)
            x[i] = urand01();
        char *p = cbc_asprintf("%s/mlp_%d.safetensors", dir, F);
        write_safetensors(p, &net);
        free(p);
        struct cbc_matrix X = {.data = x, .rows = N, .cols = (size_t)F};
        p = cbc_asprintf("%s/inputs_%d.npy", dir, F);
        cbc_matrix_save_npy(p, &X, NULL);
        free(p);
        struct cbc_ig_gpu_model *gm;
        if (cbc_ig_gpu_upload(g, &net.m, &gm, &err) != CBC_OK) {
            fprintf(stderr, "ig_bench: %s\n", err.msg);
            return 1;
        }
        float *attr = malloc(sizeof(float) * N * F);
        double *v = malloc(sizeof(double) * 4 * N);
        /* flops of the analytic path per input (fused activations not counted) */
        double rows = S + 2, H1 = 512, H2 = 256;
        double per_input = 2 * 2 * F * H1 + rows * (2 * H1 * H2 * 2 + 2 * H2) + 2 * H1 * F;
        /* one input */
        static double t[400];
        for (int w = 0; w < (quick ? 2 : 20); w++)
            run(gm, x, 1, F, CBC_IG_ANALYTIC, attr, v);
        size_t runs = quick ? 3 : 300;
        for (size_t i = 0; i < runs; i++) {
            double t0 = now_ms();
            if (run(gm, x + (i % 8) * F, 1, F, CBC_IG_ANALYTIC, attr, v))
                return 1;
            t[i] = now_ms() - t0;
        }
        emit("analytic_one_input", F, 1, S, t, runs, per_input);
        /* a batch of 1024 */
        for (int w = 0; w < (quick ? 1 : 3); w++)
            run(gm, x, N, F, CBC_IG_ANALYTIC, attr, v);
        runs = quick ? 2 : 30;
        for (size_t i = 0; i < runs; i++) {
            double t0 = now_ms();
            if (run(gm, x, N, F, CBC_IG_ANALYTIC, attr, v))
                return 1;
            t[i] = now_ms() - t0;
        }
        emit("analytic_batch", F, N, S, t, runs, per_input * N);
        if (quick) {
            cbc_ig_gpu_model_free(gm);
            free(attr);
            free(v);
            free(x);
            continue;
        }
        /* the same with inputs and attributions already on the GPU */
        {
            PFN_cuMemAlloc_v3020 alloc;
            PFN_cuMemcpyHtoD_v3020 htod;
            PFN_cuMemFree_v3020 dfree;
            cbc_driver_symbol("cuMemAlloc", 3020, (void **)&alloc, NULL);
            cbc_driver_symbol("cuMemcpyHtoD", 3020, (void **)&htod, NULL);
            cbc_driver_symbol("cuMemFree", 3020, (void **)&dfree, NULL);
            CUdeviceptr dx, da;
            alloc(&dx, sizeof(float) * N * F);
            alloc(&da, sizeof(float) * N * F);
            htod(dx, x, sizeof(float) * N * F);
            const float *px = (const float *)(uintptr_t)dx;
            float *pa = (float *)(uintptr_t)da;
            for (int w = 0; w < 20; w++)
                run_dev(gm, px, 1, F, CBC_IG_ANALYTIC, pa, v, true);
            runs = 300;
            for (size_t i = 0; i < runs; i++) {
                double t0 = now_ms();
                if (run_dev(gm, px, 1, F, CBC_IG_ANALYTIC, pa, v, true))
                    return 1;
                t[i] = now_ms() - t0;
            }
            emit("analytic_one_input_on_gpu", F, 1, S, t, runs, per_input);
            for (int w = 0; w < 3; w++)
                run_dev(gm, px, N, F, CBC_IG_ANALYTIC, pa, v, true);
            runs = 30;
            for (size_t i = 0; i < runs; i++) {
                double t0 = now_ms();
                if (run_dev(gm, px, N, F, CBC_IG_ANALYTIC, pa, v, true))
                    return 1;
                t[i] = now_ms() - t0;
            }
            emit("analytic_batch_on_gpu", F, N, S, t, runs, per_input * N);
            dfree(dx);
            dfree(da);
        }
        /* our attributions of the first 8 inputs, for the cross-check */
        run(gm, x, 8, F, CBC_IG_ANALYTIC, attr, v);
        struct cbc_matrix A = {.data = attr, .rows = 8, .cols = (size_t)F};
        p = cbc_asprintf("%s/ours_%d.npy", dir, F);
        cbc_matrix_save_npy(p, &A, NULL);
        free(p);
        double worst = 0;
        for (int b = 0; b < 8; b++)
            worst = fmax(worst, fabs(v[3 * 8 + b]) / fmax(1e-12, fabs(v[b] - v[8 + b])));
        fprintf(stderr, "  completeness at %d steps: worst |delta| / |F(x)-F(x')| = %.2e\n", S, worst);
        if (F == 784) {
            /* central differences, batched, against the per-feature loop */
            for (int w = 0; w < 2; w++)
                run(gm, x, 1, F, CBC_IG_FD, attr, v);
            runs = 7;
            for (size_t i = 0; i < runs; i++) {
                double t0 = now_ms();
                if (run(gm, x, 1, F, CBC_IG_FD, attr, v))
                    return 1;
                t[i] = now_ms() - t0;
            }
            emit("fd_batched_one_input", F, 1, S, t, runs, 0);
            /* the per-feature loop: three runs, the median */
            for (size_t i = 0; i < 3; i++) {
                double t0 = now_ms();
                if (run(gm, x, 1, F, CBC_IG_PER_FEATURE, attr, v))
                    return 1;
                t[i] = now_ms() - t0;
            }
            emit("fd_per_feature_loop", F, 1, S, t, 3, 0);
        }
        cbc_ig_gpu_model_free(gm);
        free(attr);
        free(v);
        free(x);
    }
    cbc_ig_gpu_close(g);
    return 0;
}
