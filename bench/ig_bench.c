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
 * Then what a Captum user runs on a classifier (784-512-256-10 tanh, and the
 * same with a LayerNorm before each tanh and a softmax output, which takes
 * the layered path): 256 and 4096 inputs explained for one target, for each input's
 * predicted class, and SmoothGrad of 8 noisy copies (cbc_ig_explain), in the
 * default precision (FP32) and 256 of them in the fast one (3xTF32), with
 * DIR/cls[_ln].safetensors, cls_inputs.npy, cls_targets.npy and
 * ours_cls[_ln].npy for the same cases in PyTorch.
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

/* One F32 tensor of a safetensors file: its header entry and its data. */
static void st_put(struct cbc_buf *h, struct cbc_buf *d, const char *name, int rows, int cols,
                   const float *data)
{
    size_t bytes = sizeof(float) * (size_t)rows * (size_t)(cols ? cols : 1);
    if (cols)
        cbc_buf_printf(h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}",
                       name, rows, cols, d->len, d->len + bytes);
    else
        cbc_buf_printf(h, ",\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]}",
                       name, rows, d->len, d->len + bytes);
    cbc_buf_append(d, data, bytes);
}

/* The file from its header entries (after the metadata) and data. */
static void st_finish(const char *path, struct cbc_buf *h, struct cbc_buf *d)
{
    cbc_buf_puts(h, "}");
    while (h->len % 8)
        cbc_buf_puts(h, " ");
    struct cbc_buf f = {0};
    uint8_t len8[8];
    cbc_wr64(len8, h->len);
    cbc_buf_append(&f, len8, 8);
    cbc_buf_append(&f, h->p, h->len);
    cbc_buf_append(&f, d->p, d->len);
    cbc_file_write_atomic(path, f.p, f.len, 0644, NULL);
    cbc_buf_release(h);
    cbc_buf_release(d);
    cbc_buf_release(&f);
}

/* safetensors as safetensors.torch.save_file writes nn.Sequential(Linear,
 * Tanh, Linear, Tanh, Linear): keys 0, 2, 4. */
static void write_safetensors(const char *path, const struct net *n)
{
    struct cbc_buf h = {0}, d = {0};
    cbc_buf_puts(&h, "{\"__metadata__\":{\"activations\":\"tanh,tanh,identity\"}");
    for (int l = 0; l < 3; l++) {
        char name[32];
        snprintf(name, sizeof name, "%d.weight", 2 * l);
        st_put(&h, &d, name, n->sizes[l + 1], n->sizes[l], n->w[l]);
        snprintf(name, sizeof name, "%d.bias", 2 * l);
        st_put(&h, &d, name, n->sizes[l + 1], 0, n->b[l]);
    }
    st_finish(path, &h, &d);
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

/* ---- a classifier, explained as a Captum user asks ------------------------ */

enum { CLS_F = 784, CLS_O = 10, CLS_N = 4096 }; /* explained: the first 256, and all 4096 */

struct cls {
    float *w[3], *b[3], *g[2], *be[2];
    struct cbc_mlp_layer L[3];
    struct cbc_mlp m;
};

/* 784-512-256-10 tanh; with ln, nn.Sequential(Linear, LayerNorm, Tanh,
 * Linear, LayerNorm, Tanh, Linear, Softmax): keys 0, 1, 3, 4, 6. */
static void make_cls(struct cls *c, bool ln, const char *path)
{
    const int s[4] = {CLS_F, 512, 256, CLS_O};
    struct cbc_buf h = {0}, d = {0};
    cbc_buf_printf(&h, "{\"__metadata__\":{\"activations\":\"tanh,tanh,%s\"}",
                   ln ? "softmax" : "identity");
    for (int l = 0; l < 3; l++) {
        float bound = 1.0f / sqrtf((float)s[l]);
        c->w[l] = malloc(sizeof(float) * (size_t)s[l] * s[l + 1]);
        c->b[l] = malloc(sizeof(float) * (size_t)s[l + 1]);
        for (int i = 0; i < s[l] * s[l + 1]; i++)
            c->w[l][i] = (2 * urand01() - 1) * bound * 4; /* confident, varied predictions */
        for (int i = 0; i < s[l + 1]; i++)
            c->b[l][i] = (2 * urand01() - 1) * bound;
        c->L[l] = (struct cbc_mlp_layer){.in = s[l], .out = s[l + 1], .w = c->w[l], .b = c->b[l],
                                         .act = l < 2 ? CBC_ACT_TANH
                                                : ln  ? CBC_ACT_SOFTMAX
                                                      : CBC_ACT_IDENTITY};
        char name[32];
        int key = ln ? 3 * l : 2 * l;
        snprintf(name, sizeof name, "%d.weight", key);
        st_put(&h, &d, name, s[l + 1], s[l], c->w[l]);
        snprintf(name, sizeof name, "%d.bias", key);
        st_put(&h, &d, name, s[l + 1], 0, c->b[l]);
        if (ln && l < 2) {
            c->g[l] = malloc(sizeof(float) * (size_t)s[l + 1]);
            c->be[l] = malloc(sizeof(float) * (size_t)s[l + 1]);
            for (int i = 0; i < s[l + 1]; i++)
                c->g[l][i] = 0.5f + urand01(), c->be[l][i] = 0.2f * (2 * urand01() - 1);
            c->L[l].norm = CBC_NORM_BEFORE_ACT, c->L[l].norm_w = c->g[l], c->L[l].norm_b = c->be[l];
            snprintf(name, sizeof name, "%d.weight", key + 1);
            st_put(&h, &d, name, s[l + 1], 0, c->g[l]);
            snprintf(name, sizeof name, "%d.bias", key + 1);
            st_put(&h, &d, name, s[l + 1], 0, c->be[l]);
        } else if (l < 2) {
            c->g[l] = c->be[l] = NULL;
        }
    }
    c->m = (struct cbc_mlp){3, c->L};
    st_finish(path, &h, &d);
}

static void free_cls(struct cls *c)
{
    for (int l = 0; l < 3; l++)
        free(c->w[l]), free(c->b[l]);
    for (int l = 0; l < 2; l++)
        free(c->g[l]), free(c->be[l]);
}

static int explain(struct cbc_ig_gpu_model *gm, const float *x, size_t n, const int *targets,
                   int samples, float *attr, double *v)
{
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = n;
    struct cbc_ig_plan p = {0};
    p.targets = targets;
    if (samples)
        p.noise = CBC_IG_SMOOTHGRAD, p.samples = samples, p.stdev = 0.1, p.seed = 1;
    struct cbc_ig_output o = {attr, v, v + n, v + 2 * n, v + 3 * n};
    struct cbc_err err = {0};
    if (cbc_ig_explain(cbc_ig_engine_gpu, gm, CLS_F, &r, &p, &o, NULL, &err) != CBC_OK) {
        fprintf(stderr, "ig_bench: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* The cases of one classifier: "<prefix>one_target", "<prefix>pred_targets",
 * "<prefix>smoothgrad_8"; our pred-target attributions of inputs 0..7 to ours. */
static int classifier(struct cbc_ig_gpu *g, const char *dir, bool ln, const float *x,
                      const int *pred, const char *ours)
{
    struct cls c;
    char *p = cbc_asprintf("%s/%s.safetensors", dir, ln ? "cls_ln" : "cls");
    make_cls(&c, ln, p);
    free(p);
    struct cbc_ig_gpu_model *gm;
    struct cbc_err err = {0};
    if (cbc_ig_gpu_upload(g, &c.m, &gm, &err) != CBC_OK) {
        fprintf(stderr, "ig_bench: %s\n", err.msg);
        return 1;
    }
    int *tg = (int *)pred;
    double *out = NULL;
    if (!pred) { /* this model's predictions, for this and the other model's cases */
        out = malloc(sizeof(double) * CLS_N * CLS_O);
        tg = malloc(sizeof(int) * CLS_N);
        cbc_mlp_forward(&c.m, x, CLS_N, out, &err);
        float *tf = malloc(sizeof(float) * CLS_N);
        for (int b = 0; b < CLS_N; b++) {
            tg[b] = 0;
            for (int k = 1; k < CLS_O; k++)
                tg[b] = out[b * CLS_O + k] > out[b * CLS_O + tg[b]] ? k : tg[b];
            tf[b] = (float)tg[b];
        }
        size_t dims[1] = {CLS_N};
        p = cbc_asprintf("%s/cls_targets.npy", dir);
        cbc_tensor_save_npy(p, tf, dims, 1, NULL);
        free(p);
        free(tf);
        free(out);
    }
    float *attr = malloc(sizeof(float) * CLS_N * CLS_F);
    double *v = malloc(sizeof(double) * 4 * CLS_N);
    static const int zeros[CLS_N];
    static double t[20];
    static const struct {
        const char *name;
        bool pred;
        int samples;
    } cases[] = {{"one_target", false, 0}, {"pred_targets", true, 0}, {"smoothgrad_8", true, 8}};
    int rc = 0;
    /* 256 and 4096 inputs in the default precision (FP32 FMA), then 256 in
     * the fast one (3xTF32): "<prefix><case>[_4096][_fast]" */
    static const struct {
        size_t n;
        bool fast;
    } sizes[] = {{256, false}, {4096, false}, {256, true}};
    for (size_t q = 0; !rc && q < sizeof sizes / sizeof sizes[0]; q++) {
        cbc_ig_gpu_set_precision(g, sizes[q].fast ? CBC_IG_PRECISION_FAST
                                                              : CBC_IG_PRECISION_FP32);
        for (size_t k = 0; !rc && k < sizeof cases / sizeof cases[0]; k++) {
            const int *tk = cases[k].pred ? tg : zeros;
            const size_t n = sizes[q].n;
            for (int w = 0; !rc && w < 2; w++)
                rc = explain(gm, x, n, tk, cases[k].samples, attr, v);
            const size_t runs = n > 256 ? 5 : 10;
            for (size_t i = 0; !rc && i < runs; i++) {
                double t0 = now_ms();
                rc = explain(gm, x, n, tk, cases[k].samples, attr, v);
                t[i] = now_ms() - t0;
            }
            char name[64];
            snprintf(name, sizeof name, "%s%s%s%s", ln ? "layered_" : "explain_", cases[k].name,
                     n > 256 ? "_4096" : "", sizes[q].fast ? "_fast" : "");
            if (!rc)
                emit(name, CLS_F, n, 50, t, runs, 0);
        }
    }
    cbc_ig_gpu_set_precision(g, CBC_IG_PRECISION_FP32);
    if (!rc && !(rc = explain(gm, x, 8, tg, 0, attr, v))) {
        struct cbc_matrix A = {.data = attr, .rows = 8, .cols = CLS_F};
        p = cbc_asprintf("%s/%s", dir, ours);
        cbc_matrix_save_npy(p, &A, NULL);
        free(p);
    }
    if (!pred && !rc)
        rc = classifier(g, dir, true, x, tg, "ours_cls_ln.npy");
    if (!pred)
        free(tg);
    cbc_ig_gpu_model_free(gm);
    free(attr);
    free(v);
    free_cls(&c);
    return rc;
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
    if (!quick) {
        float *x = malloc(sizeof(float) * CLS_N * CLS_F);
        for (size_t i = 0; i < (size_t)CLS_N * CLS_F; i++)
            x[i] = urand01();
        struct cbc_matrix X = {.data = x, .rows = CLS_N, .cols = CLS_F};
        char *p = cbc_asprintf("%s/cls_inputs.npy", dir);
        cbc_matrix_save_npy(p, &X, NULL);
        free(p);
        int rc = classifier(g, dir, false, x, NULL, "ours_cls.npy");
        free(x);
        if (rc)
            return rc;
    }
    cbc_ig_gpu_close(g);
    return 0;
}
