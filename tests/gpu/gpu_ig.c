/* gpu_ig.c: the IG engine on a real GPU against the CPU reference and the
 * closed forms: analytic gradients within 1e-4 (relative L2) of the CPU for
 * models of every shape the kernels special-case (one layer, two, deep,
 * odd sizes, many outputs, every activation, rule and baseline kind, one
 * input and batches split into chunks), finite differences within 5%,
 * the per-feature loop agreeing with the batched one, completeness at 50
 * steps, and the closed forms (linear, sum of squares, x + x^2 + xy, the
 * paper's ReLU example, Captum's toy model); a target per input in one
 * call on the fused and layered paths, residuals and constant scales on
 * the layered path, both precisions (FP32 FMA, the default, and 3xTF32).
 * Exit 77 without a GPU. */
#include "gpu_test.h"

#include <cubincache/ig.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <stdint.h>
#include <string.h>

/* ---- models ---------------------------------------------------------------- */

static uint64_t lcg = 0x9e3779b97f4a7c15ull;
static float urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((lcg >> 40) / (double)(1u << 24)) * 2 - 1;
}

struct model {
    struct cbc_mlp_layer L[8];
    float *w[8], *b[8];
    struct cbc_mlp m;
};

static void make(struct model *r, const int *sizes, int layers, const enum cbc_act *acts, bool bias)
{
    for (int l = 0; l < layers; l++) {
        int in = sizes[l], out = sizes[l + 1];
        float s = 1.5f / sqrtf((float)in);
        r->w[l] = malloc(sizeof(float) * (size_t)in * out);
        r->b[l] = bias ? malloc(sizeof(float) * (size_t)out) : NULL;
        for (int i = 0; i < in * out; i++)
            r->w[l][i] = urand() * s;
        for (int i = 0; bias && i < out; i++)
            r->b[l][i] = urand() * 0.2f;
        r->L[l] = (struct cbc_mlp_layer){
            .in = in, .out = out, .w = r->w[l], .b = r->b[l], .act = acts[l]};
    }
    r->m = (struct cbc_mlp){layers, r->L};
}

static void unmake(struct model *r)
{
    for (int l = 0; l < r->m.n_layers; l++) {
        free(r->w[l]);
        free(r->b[l]);
    }
}

struct results {
    float *attr;
    double *v;
    struct cbc_ig_output o;
};

static void alloc_results(struct results *r, size_t n, size_t F)
{
    r->attr = calloc(n * F, sizeof(float));
    r->v = calloc(4 * n, sizeof(double));
    r->o = (struct cbc_ig_output){r->attr, r->v, r->v + n, r->v + 2 * n, r->v + 3 * n};
}

static void free_results(struct results *r)
{
    free(r->attr);
    free(r->v);
}

static struct cbc_ig_gpu *G;

/* Runs a request on the GPU and the CPU and compares. */
/* GPU against the CPU reference, relative L2 of all attributions: the 11
 * shapes below differ by at most 1.83e-6 on an H200; 1e-5 is a few times
 * that, where a wrong tile or step weight moves it by orders of magnitude. */
#define TOL_ANALYTIC 1e-5

static void compare(const char *what, const struct cbc_mlp *m, struct cbc_ig_request *req,
                    double tol)
{
    size_t F = (size_t)m->layers[0].in;
    struct results g, c;
    alloc_results(&g, req->n, F);
    alloc_results(&c, req->n, F);
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    enum cbc_status st = cbc_ig_gpu_upload(G, m, &gm, &err);
    CHECK(st == CBC_OK, "%s: upload: %s", what, err.msg);
    if (st == CBC_OK)
        st = cbc_ig_gpu_mlp(gm, req, &g.o, &err);
    CHECK(st == CBC_OK, "%s: gpu: %s", what, err.msg);
    enum cbc_ig_gradient gr = req->gradient;
    req->gradient = CBC_IG_ANALYTIC; /* the reference is always backpropagation */
    enum cbc_status cs = cbc_ig_cpu_mlp(m, req, &c.o, &err);
    req->gradient = gr;
    CHECK(cs == CBC_OK, "%s: cpu: %s", what, err.msg);
    if (st == CBC_OK && cs == CBC_OK) {
        double e = rel_l2(g.attr, c.attr, req->n * F);
        /* F values through the relative L2 of the whole batch: a single
         * value near zero has no meaningful relative error */
        float *gf = malloc(sizeof(float) * 2 * req->n), *cf = malloc(sizeof(float) * 2 * req->n);
        for (size_t b = 0; b < req->n; b++) {
            gf[2 * b] = (float)g.o.f_x[b], gf[2 * b + 1] = (float)g.o.f_base[b];
            cf[2 * b] = (float)c.o.f_x[b], cf[2 * b + 1] = (float)c.o.f_base[b];
        }
        double fe = rel_l2(gf, cf, 2 * req->n);
        free(gf);
        free(cf);
        CHECK(e <= tol, "%s: attributions differ from the CPU by %.3g (tolerance %.3g)", what, e, tol);
        /* and no single feature hides in the sum: each within 20 times the
         * tolerance of the largest attribution */
        double amax = 0, dmax = 0;
        for (size_t i = 0; i < req->n * F; i++) {
            amax = fmax(amax, fabs(c.attr[i]));
            dmax = fmax(dmax, fabs((double)g.attr[i] - c.attr[i]));
        }
        CHECK(dmax <= 20 * tol * amax, "%s: a feature differs by %.3g of the largest attribution",
              what, amax > 0 ? dmax / amax : dmax);
        CHECK(fe <= 1e-4, "%s: F(x) or F(x') differ from the CPU by %.3g", what, fe);
        printf("  %-58s rel L2 %.2e, worst feature %.2e, F %.2e\n", what, e,
               amax > 0 ? dmax / amax : dmax, fe);
    }
    cbc_ig_gpu_model_free(gm);
    free_results(&g);
    free_results(&c);
}

static float *random_inputs(size_t n, size_t F, float scale)
{
    float *x = malloc(sizeof(float) * n * F);
    for (size_t i = 0; i < n * F; i++)
        x[i] = urand() * scale;
    return x;
}

static void analytic_matches_cpu(void)
{
    printf("analytic gradients, GPU against the CPU reference (tolerance 1e-4):\n");
    struct cbc_ig_request r;
    {
        const int s[] = {784, 512, 256, 1};
        const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 3, a, true);
        for (size_t n = 1; n <= 5; n += 4) {
            float *x = random_inputs(n, 784, 1);
            cbc_ig_request_defaults(&r);
            r.x = x, r.n = n;
            char what[96];
            snprintf(what, sizeof what, "784-512-256-1 tanh, %zu input(s), gausslegendre 50", n);
            compare(what, &md.m, &r, TOL_ANALYTIC);
            free(x);
        }
        unmake(&md);
    }
    {
        const int s[] = {37, 129, 65, 33, 5};
        const enum cbc_act a[] = {CBC_ACT_GELU, CBC_ACT_SIGMOID, CBC_ACT_RELU, CBC_ACT_TANH};
        struct model md;
        make(&md, s, 4, a, true);
        float *x = random_inputs(7, 37, 2), *base = random_inputs(7, 37, 0.5f);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 7, r.target = 3, r.method = CBC_IG_RIEMANN_MIDDLE, r.steps = 20;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, base};
        compare("37-129-65-33-5 gelu/sigmoid/relu/tanh, target 3, per-input base", &md.m, &r, TOL_ANALYTIC);
        free(x);
        free(base);
        unmake(&md);
    }
    {
        const int s[] = {10, 3};
        const enum cbc_act a[] = {CBC_ACT_SIGMOID};
        struct model md;
        make(&md, s, 1, a, true);
        float *x = random_inputs(3, 10, 2);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 3, r.target = 2, r.method = CBC_IG_TRAPEZOID, r.steps = 15;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SCALAR, 0.25f, NULL};
        compare("one layer 10-3 sigmoid, target 2, scalar baseline, trapezoid", &md.m, &r, TOL_ANALYTIC);
        free(x);
        unmake(&md);
    }
    {
        const int s[] = {20, 30, 2};
        const enum cbc_act a[] = {CBC_ACT_RELU, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 2, a, false);
        float *x = random_inputs(4, 20, 2), *base = random_inputs(1, 20, 1);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 4, r.target = 1, r.method = CBC_IG_RIEMANN_RIGHT, r.steps = 30;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, base};
        compare("two layers 20-30-2 relu, no biases, shared base, riemann_right", &md.m, &r, TOL_ANALYTIC);
        free(x);
        free(base);
        unmake(&md);
    }
    {
        const int s[] = {64, 128, 64, 1};
        const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 3, a, true);
        float *x = random_inputs(300, 64, 1);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 300, r.method = CBC_IG_RIEMANN_LEFT, r.steps = 16;
        r.mem_budget = 256 << 10; /* forces many chunks */
        compare("64-128-64-1, 300 inputs in chunks of a 256 KiB budget", &md.m, &r, TOL_ANALYTIC);
        r.mem_budget = 0;
        compare("64-128-64-1, 300 inputs in one chunk", &md.m, &r, TOL_ANALYTIC);
        free(x);
        unmake(&md);
    }
    /* Batches big enough for whole-wave tensor-core tiles without split K:
     * the last hidden layer's delta and the step sums come from the GEMM
     * epilogues; with 200 steps an input's rows span three 128-row tiles. */
    {
        const int s[] = {64, 512, 256, 1};
        const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 3, a, true);
        float *x = random_inputs(200, 64, 1);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 200;
        compare("64-512-256-1 tanh, 200 inputs, epilogue step sums", &md.m, &r, TOL_ANALYTIC);
        r.n = 44, r.steps = 200, r.method = CBC_IG_RIEMANN_MIDDLE;
        compare("64-512-256-1 tanh, 44 inputs, 200 steps (3 tiles each)", &md.m, &r, TOL_ANALYTIC);
        free(x);
        unmake(&md);
    }
    {
        const int s[] = {30, 40, 50, 20, 2};
        const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_RELU, CBC_ACT_SIGMOID, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 4, a, true);
        float *x = random_inputs(400, 30, 2);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 400, r.target = 1;
        compare("30-40-50-20-2 tanh/relu/sigmoid, 400 inputs, delta from layer 3", &md.m, &r, TOL_ANALYTIC);
        free(x);
        unmake(&md);
    }
    /* host arrays of 3.3 MB each way (beyond the pinned staging) */
    {
        const int s[] = {4096, 32, 16, 1};
        const enum cbc_act a[] = {CBC_ACT_RELU, CBC_ACT_TANH, CBC_ACT_IDENTITY};
        struct model md;
        make(&md, s, 3, a, true);
        float *x = random_inputs(200, 4096, 1), *base = random_inputs(200, 4096, 0.2f);
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 200, r.steps = 20;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, base};
        compare("4096-32-16-1, 200 inputs and baselines, 3.3 MB host arrays", &md.m, &r, TOL_ANALYTIC);
        free(x);
        free(base);
        unmake(&md);
    }
}

/* The same small request again and again: from the second call on, the
 * engine replays recorded launches (a CUDA graph). Every call must still
 * follow its own inputs, and another request shape in between must neither
 * reuse the recording nor break it. */
static void repeated_requests(void)
{
    printf("repeated one-input requests (recorded launches replayed):\n");
    const int s[] = {784, 512, 256, 1};
    const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
    struct model md;
    make(&md, s, 3, a, true);
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &md.m, &gm, &err) == CBC_OK, "upload: %s", err.msg);
    double worst = 0;
    for (int i = 0; gm && i < 8; i++) {
        /* call 4 changes the shape (two inputs, a scalar baseline) */
        size_t n = i == 4 ? 2 : 1;
        float *x = random_inputs(n, 784, 1);
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = n;
        if (i == 4)
            r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SCALAR, 0.1f, NULL};
        struct results g, c;
        alloc_results(&g, n, 784);
        alloc_results(&c, n, 784);
        enum cbc_status st = cbc_ig_gpu_mlp(gm, &r, &g.o, &err);
        CHECK(st == CBC_OK, "call %d: %s", i, err.msg);
        CHECK(cbc_ig_cpu_mlp(&md.m, &r, &c.o, &err) == CBC_OK, "cpu: %s", err.msg);
        if (st == CBC_OK) {
            double e = rel_l2(g.attr, c.attr, n * 784);
            double fe = fabs(g.o.f_x[0] - c.o.f_x[0]) / fmax(fabs(c.o.f_x[0]), 1e-3);
            CHECK(e <= 1e-4 && fe <= 1e-4, "call %d: attributions %.3g, F(x) %.3g from the CPU", i,
                  e, fe);
            worst = fmax(worst, fmax(e, fe));
        }
        free_results(&g);
        free_results(&c);
        free(x);
    }
    printf("  8 calls, new inputs each, a shape change at call 4: worst rel error %.2e\n", worst);
    cbc_ig_gpu_model_free(gm);
    unmake(&md);
}

/* ---- closed forms ----------------------------------------------------------- */

static void analytic_closed_forms(void)
{
    printf("closed forms through the analytic path:\n");
    struct cbc_err err = {0};
    struct results o;
    alloc_results(&o, 2, 4);
    /* linear: exact for every rule */
    const float w[4] = {0.5f, -2.0f, 3.0f, 0.25f}, b[1] = {0.7f};
    struct cbc_mlp_layer L = {.in = 4, .out = 1, .w = w, .b = b, .act = CBC_ACT_IDENTITY};
    struct cbc_mlp lin = {1, &L};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &lin, &gm, &err) == CBC_OK, "%s", err.msg);
    const float x[4] = {1, 2, -3, 4}, base[4] = {0.5f, 0, 1, -1};
    for (int k = 0; gm && k < 5; k++) {
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 1, r.method = (enum cbc_ig_method)k, r.steps = 7;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, base};
        CHECK(cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_OK, "%s", err.msg);
        for (int i = 0; i < 4; i++)
            CHECK(fabsf(o.attr[i] - w[i] * (x[i] - base[i])) < 1e-5f, "linear %s [%d]: %g",
                  cbc_ig_method_name(r.method), i, o.attr[i]);
    }
    cbc_ig_gpu_model_free(gm);
    /* the paper's ReLU example */
    const float w1[4] = {1, 0, 0, 1}, w2[2] = {1, -1}, b2[1] = {-1};
    struct cbc_mlp_layer RL[2] = {{.in = 2, .out = 2, .w = w1, .b = NULL, .act = CBC_ACT_RELU},
                                  {.in = 2, .out = 1, .w = w2, .b = b2, .act = CBC_ACT_RELU}};
    struct cbc_mlp relu = {2, RL};
    gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &relu, &gm, &err) == CBC_OK, "%s", err.msg);
    const float xr[2] = {3, 1};
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = xr, r.n = 1;
    if (gm) {
        CHECK(cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_OK, "%s", err.msg);
        CHECK(fabsf(o.attr[0] - 1.5f) < 1e-5f && fabsf(o.attr[1] + 0.5f) < 1e-5f,
              "paper's example: (%g, %g), expected (1.5, -0.5)", o.attr[0], o.attr[1]);
        printf("  paper's ReLU example: (%.6f, %.6f)\n", o.attr[0], o.attr[1]);
    }
    cbc_ig_gpu_model_free(gm);
    /* Captum's README model */
    const float cw1[9] = {-4, -3, -2, -1, 0, 1, 2, 3, 4}, cw2[6] = {-3, -2, -1, 0, 1, 2},
                cb2[2] = {1, 1};
    struct cbc_mlp_layer CL[2] = {{.in = 3, .out = 3, .w = cw1, .b = NULL, .act = CBC_ACT_RELU},
                                  {.in = 3, .out = 2, .w = cw2, .b = cb2, .act = CBC_ACT_IDENTITY}};
    struct cbc_mlp cap = {2, CL};
    gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &cap, &gm, &err) == CBC_OK, "%s", err.msg);
    const float xc[6] = {0.2961f, 0.5166f, 0.2517f, 0.6886f, 0.0740f, 0.8665f};
    const double want[6] = {-0.5922, -1.5497, -1.0067, 0, -0.2219, -5.1991};
    r.x = xc, r.n = 2, r.steps = 2000;
    if (gm) {
        CHECK(cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_OK, "%s", err.msg);
        for (int i = 0; i < 6; i++)
            CHECK(fabs(o.attr[i] - want[i]) < 1e-3, "Captum toy [%d]: %g, expected %g", i,
                  o.attr[i], want[i]);
        printf("  Captum toy model: %.4f %.4f %.4f | %.4f %.4f %.4f\n", o.attr[0], o.attr[1],
               o.attr[2], o.attr[3], o.attr[4], o.attr[5]);
    }
    cbc_ig_gpu_model_free(gm);
    free_results(&o);
}

/* Device black boxes: the closedform bundle's kernels. */
struct black_box {
    void *fn;
    PFN_cuLaunchKernel_v4000 launch;
    int xxy;
};

static enum cbc_status call_box(void *ctx, uint64_t in, uint64_t out, size_t rows, size_t F,
                                void *stream, struct cbc_err *err)
{
    struct black_box *b = ctx;
    int R = (int)rows, FF = (int)F;
    CUdeviceptr i = (CUdeviceptr)in, o = (CUdeviceptr)out;
    void *args4[] = {&i, &o, &R, &FF};
    CUresult rc = b->xxy ? b->launch((CUfunction)b->fn, (unsigned)((rows + 127) / 128), 1, 1, 128, 1, 1,
                                     0, (CUstream)stream, args4, NULL)
                         : b->launch((CUfunction)b->fn, (unsigned)((rows * 32 + 255) / 256), 1, 1, 256,
                                     1, 1, 0, (CUstream)stream, args4, NULL);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    if (err) {
        err->status = CBC_E_DRIVER;
        snprintf(err->msg, sizeof err->msg, "black box launch failed with CUresult %d", (int)rc);
    }
    return CBC_E_DRIVER;
}

static void fd_closed_forms(struct cbc_module *box)
{
    printf("closed forms through batched central differences on a device black box:\n");
    struct cbc_err err = {0};
    struct black_box sq = {0}, xy = {0};
    CHECK(cbc_driver_symbol("cuLaunchKernel", 4000, (void **)&sq.launch, &err) == CBC_OK, "%s", err.msg);
    xy.launch = sq.launch;
    xy.xxy = 1;
    CHECK(cbc_module_function(box, "f_sumsq", &sq.fn, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_module_function(box, "f_xxy", &xy.fn, &err) == CBC_OK, "%s", err.msg);
    struct results o;
    alloc_results(&o, 1, 3);
    const float x[3] = {1.5f, -2.0f, 0.25f}, base[3] = {0.5f, 1.0f, -0.75f};
    const int m = 20;
    for (int k = 0; k < 5; k++) {
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 1, r.method = (enum cbc_ig_method)k, r.steps = m, r.gradient = CBC_IG_FD;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, base};
        CHECK(cbc_ig_gpu_fn(G, call_box, &sq, 3, &r, &o.o, &err) == CBC_OK, "%s", err.msg);
        for (int i = 0; i < 3; i++) {
            double d = (double)x[i] - base[i], exact = (double)x[i] * x[i] - (double)base[i] * base[i];
            double want = r.method == CBC_IG_RIEMANN_LEFT ? exact - d * d / m
                          : r.method == CBC_IG_RIEMANN_RIGHT ? exact + d * d / m
                                                              : exact;
            CHECK(fabs(o.attr[i] - want) < 1e-3 * fmax(1, fabs(want)), "sum of squares, %s [%d]: %g vs %g",
                  cbc_ig_method_name(r.method), i, o.attr[i], want);
        }
    }
    const float xx[2] = {2.0f, 1.5f}, bb[2] = {0.5f, -1.0f};
    double a = 0.5, b = -1.0, c = 2.0, d = 1.5;
    double igx = (c - a) * (1 + a + c + b / 2 + d / 2), igy = (d - b) * (a + (c - a) / 2);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = xx, r.n = 1, r.gradient = CBC_IG_FD;
    r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, bb};
    CHECK(cbc_ig_gpu_fn(G, call_box, &xy, 2, &r, &o.o, &err) == CBC_OK, "%s", err.msg);
    CHECK(fabs(o.attr[0] - igx) < 1e-3 && fabs(o.attr[1] - igy) < 1e-3,
          "x + x^2 + xy: (%g, %g), expected (%g, %g)", o.attr[0], o.attr[1], igx, igy);
    printf("  x + x^2 + xy: (%.5f, %.5f), closed form (%.5f, %.5f)\n", o.attr[0], o.attr[1], igx, igy);
    free_results(&o);
}

static void differences_and_completeness(void)
{
    printf("finite differences and completeness:\n");
    const int s[] = {784, 512, 256, 1};
    const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
    struct model md;
    make(&md, s, 3, a, true);
    float *x = random_inputs(2, 784, 1);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = 2, r.gradient = CBC_IG_FD;
    /* observed 7.3e-5 relative L2 (float32 central differences); 5e-4 is a
     * few times that, and one wholly wrong feature of 784 moves it ~3.6e-2 */
    compare("784-512-256-1 tanh, batched FD against CPU analytic", &md.m, &r, 5e-4);
    /* completeness at 50 steps */
    struct results o;
    alloc_results(&o, 2, 784);
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &md.m, &gm, &err) == CBC_OK, "%s", err.msg);
    r.gradient = CBC_IG_ANALYTIC;
    if (gm && cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_OK) {
        for (int b = 0; b < 2; b++) {
            double diff = o.o.f_x[b] - o.o.f_base[b];
            /* observed 2.3e-6 of |F(x) - F(x')|: a few times that */
            CHECK(fabs(o.o.delta[b]) <= 2e-5 * fabs(diff), "completeness: delta %g for %g",
                  o.o.delta[b], diff);
            printf("  completeness at 50 steps: delta %.3g of F(x)-F(x') %.4g\n", o.o.delta[b], diff);
        }
    } else {
        CHECK(0, "%s", err.msg);
    }
    cbc_ig_gpu_model_free(gm);
    free_results(&o);
    unmake(&md);
    free(x);
    /* the per-feature loop computes the same thing as the batched differences */
    const int s2[] = {32, 16, 1};
    const enum cbc_act a2[] = {CBC_ACT_TANH, CBC_ACT_IDENTITY};
    make(&md, s2, 2, a2, true);
    x = random_inputs(1, 32, 1);
    struct results n1, n2;
    alloc_results(&n1, 1, 32);
    alloc_results(&n2, 1, 32);
    gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &md.m, &gm, &err) == CBC_OK, "%s", err.msg);
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = 1, r.steps = 10, r.gradient = CBC_IG_PER_FEATURE;
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &n1.o, &err) == CBC_OK, "naive: %s", err.msg);
    r.gradient = CBC_IG_FD;
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &n2.o, &err) == CBC_OK, "batched: %s", err.msg);
    double e = rel_l2(n1.attr, n2.attr, 32);
    CHECK(e < 1e-3, "naive and batched differences disagree by %g", e);
    printf("  per-feature loop against batched FD: rel L2 %.2e\n", e);
    cbc_ig_gpu_model_free(gm);
    free_results(&n1);
    free_results(&n2);
    unmake(&md);
    free(x);
}

/* Inputs and attributions already on the device give the same results as
 * host arrays, and a NaN there is caught on the device. */
static void device_pointers(void)
{
    printf("device pointers:\n");
    const int s[] = {784, 512, 256, 1};
    const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_TANH, CBC_ACT_IDENTITY};
    struct model md;
    make(&md, s, 3, a, true);
    const size_t n = 3, F = 784;
    float *x = random_inputs(n, F, 1), *back = malloc(sizeof(float) * n * F);
    struct results h, d;
    alloc_results(&h, n, F);
    alloc_results(&d, n, F);
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    cbc_driver_symbol("cuMemAlloc", 3020, (void **)&alloc, &err);
    cbc_driver_symbol("cuMemcpyHtoD", 3020, (void **)&htod, &err);
    cbc_driver_symbol("cuMemcpyDtoH", 3020, (void **)&dtoh, &err);
    CUdeviceptr dx, da;
    CHECK(alloc(&dx, sizeof(float) * n * F) == CUDA_SUCCESS && alloc(&da, sizeof(float) * n * F) ==
              CUDA_SUCCESS, "cuMemAlloc");
    htod(dx, x, sizeof(float) * n * F);
    CHECK(cbc_ig_gpu_upload(G, &md.m, &gm, &err) == CBC_OK, "%s", err.msg);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = n;
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &h.o, &err) == CBC_OK, "host: %s", err.msg);
    r.x = (const float *)(uintptr_t)dx, r.device_pointers = true;
    d.o.attr = (float *)(uintptr_t)da;
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &d.o, &err) == CBC_OK, "device: %s", err.msg);
    dtoh(back, da, sizeof(float) * n * F);
    double e = rel_l2(back, h.attr, n * F);
    CHECK(e < 1e-6, "device-pointer attributions differ from host ones by %g", e);
    CHECK(fabs(d.o.delta[1] - h.o.delta[1]) < 1e-6, "delta %g vs %g", d.o.delta[1], h.o.delta[1]);
    printf("  device pointers against host arrays: rel L2 %.2e\n", e);
    x[5] = NAN;
    htod(dx, x, sizeof(float) * n * F);
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &d.o, &err) == CBC_E_NUMERIC, "a NaN on the device passed");
    printf("  a NaN in device inputs: %s\n", err.msg);
    d.o.attr = d.attr;
    cbc_ig_gpu_model_free(gm);
    free_results(&h);
    free_results(&d);
    free(x);
    free(back);
    unmake(&md);
}

/* cbc_ig_explain on the GPU engine against the CPU reference: targets per
 * input and two per input on a 10-output model, SmoothGrad, its square and
 * VarGrad of 16 samples (one batch per target on the GPU), several
 * baselines averaged, all together. The same seed makes the same noise on
 * both, so the engines see the same points. */
static void explanations(void)
{
    printf("explanations (cbc_ig_explain), GPU against the CPU reference:\n");
    const int s[] = {64, 48, 32, 10};
    const enum cbc_act a[] = {CBC_ACT_TANH, CBC_ACT_GELU, CBC_ACT_IDENTITY};
    struct model md;
    make(&md, s, 3, a, true);
    const size_t n = 12, F = 64, K = 3;
    float *x = random_inputs(n, F, 1.0f), *bases = random_inputs(K, F, 0.5f);
    int tg1[12], tg2[24];
    for (size_t b = 0; b < n; b++) {
        tg1[b] = (int)((b * 7) % 10);
        tg2[2 * b] = (int)(b % 10), tg2[2 * b + 1] = (int)((b + 3) % 10);
    }
    struct {
        const char *what;
        struct cbc_ig_plan p;
    } cases[] = {
        {"a target per input", {.targets = tg1, .n_targets = 1}},
        {"two targets per input", {.targets = tg2, .n_targets = 2}},
        {"smoothgrad, 16 samples", {.targets = tg1, .noise = CBC_IG_SMOOTHGRAD, .samples = 16,
                                    .stdev = 0.2, .seed = 5}},
        {"smoothgrad_sq, 16 samples", {.targets = tg1, .noise = CBC_IG_SMOOTHGRAD_SQ,
                                       .samples = 16, .stdev = 0.2, .seed = 5}},
        {"vargrad, 16 samples, stdev 10% of the range", {.targets = tg1, .noise = CBC_IG_VARGRAD,
                                                         .samples = 16, .stdev = 0.1,
                                                         .stdev_relative = true, .seed = 5}},
        {"3 baselines averaged", {.targets = tg1, .baselines = bases, .n_baselines = K}},
        {"2 targets, smoothgrad, 3 baselines", {.targets = tg2, .n_targets = 2,
                                                .noise = CBC_IG_SMOOTHGRAD, .samples = 4,
                                                .stdev = 0.2, .seed = 9, .baselines = bases,
                                                .n_baselines = K}},
    };
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &md.m, &gm, &err) == CBC_OK, "upload: %s", err.msg);
    for (size_t c = 0; gm && c < sizeof cases / sizeof cases[0]; c++) {
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = n, r.steps = 32;
        size_t T = cases[c].p.n_targets ? cases[c].p.n_targets : 1;
        struct results g, h;
        alloc_results(&g, n * T, F);
        alloc_results(&h, n * T, F);
        double *bdg = calloc(n * T * K, sizeof *bdg), *bdc = calloc(n * T * K, sizeof *bdc);
        enum cbc_status gs = cbc_ig_explain(cbc_ig_engine_gpu, gm, F, &r, &cases[c].p, &g.o, bdg, &err);
        CHECK(gs == CBC_OK, "%s: gpu: %s", cases[c].what, err.msg);
        enum cbc_status cs = cbc_ig_explain(cbc_ig_engine_cpu, &md.m, F, &r, &cases[c].p, &h.o, bdc, &err);
        CHECK(cs == CBC_OK, "%s: cpu: %s", cases[c].what, err.msg);
        if (gs == CBC_OK && cs == CBC_OK) {
            double e = rel_l2(g.attr, h.attr, n * T * F);
            double de = 0;
            for (size_t q = 0; q < n * T; q++)
                de = fmax(de, fabs(g.o.f_x[q] - h.o.f_x[q]) + fabs(g.o.f_base[q] - h.o.f_base[q]));
            CHECK(e <= 20 * TOL_ANALYTIC, "%s: attributions differ from the CPU by %.3g",
                  cases[c].what, e);
            CHECK(de <= 1e-4, "%s: F(x) or F(x') differ by %.3g", cases[c].what, de);
            printf("  %-58s rel L2 %.2e, F %.2e\n", cases[c].what, e, de);
        }
        free(bdg), free(bdc);
        free_results(&g);
        free_results(&h);
    }
    cbc_ig_gpu_model_free(gm);
    free(x), free(bases);
    unmake(&md);
    /* the activations PyTorch users add: each through every GEMM path */
    const enum cbc_act more[][3] = {{CBC_ACT_SILU, CBC_ACT_SOFTPLUS, CBC_ACT_IDENTITY},
                                    {CBC_ACT_ELU, CBC_ACT_LEAKY_RELU, CBC_ACT_IDENTITY},
                                    {CBC_ACT_LEAKY_RELU, CBC_ACT_SILU, CBC_ACT_ELU}};
    const char *names[] = {"128-96-64-1 silu/softplus, 40 inputs",
                           "128-96-64-1 elu/leakyrelu, 40 inputs",
                           "128-96-64-1 leakyrelu/silu/elu output, 40 inputs"};
    for (int k = 0; k < 3; k++) {
        const int s2[] = {128, 96, 64, 1};
        struct model m2;
        make(&m2, s2, 3, more[k], true);
        float *x2 = random_inputs(40, 128, 1.5f);
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x2, r.n = 40;
        compare(names[k], &m2.m, &r, TOL_ANALYTIC);
        free(x2);
        unmake(&m2);
    }
}

/* Attributions of a model with a kink (ReLU, LeakyReLU, ELU with an alpha
 * other than 1) are discontinuous where a point of the path puts a unit's
 * activation input on it: a float32 engine and the double reference may
 * then take the derivative of opposite sides, and rightly differ by that
 * unit's whole gradient at that step. On the H200, 3xTF32 did for one unit
 * of 96 whose input was 1.7e-7 from 0 at one step of 50: 2.3e-3 in that
 * input's attributions, 2.6e-4 over 70 inputs, all of which the unit's
 * term explained (6.9e-7 left without it). A comparison with a tolerance
 * is only well posed away from kinks, so the inputs drawn for one are kept
 * KINK_MARGIN from every kink of layer 0 (the only layer with one in the
 * models below) at every point of each rule they are run with: twenty
 * times a pre-activation's rounding in float32 or 3xTF32 (K = 100 products
 * of at most 0.3: about 5e-7). */
#define KINK_MARGIN 1e-5

/* The smallest distance of layer 0's activation input from its kink over
 * the points x' + alpha (x - x') of the rule (base NULL: zeros), in
 * double; INFINITY for a smooth activation. */
static double kink_margin(const struct cbc_mlp *m, const float *x, const float *base,
                          enum cbc_ig_method method, int steps)
{
    const struct cbc_mlp_layer *L = &m->layers[0];
    if (!(L->act == CBC_ACT_RELU || L->act == CBC_ACT_LEAKY_RELU ||
          (L->act == CBC_ACT_ELU && L->act_param != 0 && L->act_param != 1)))
        return INFINITY;
    const int F = L->in, H = L->out;
    double *al = malloc(sizeof(double) * (size_t)steps), *wt = malloc(sizeof(double) * (size_t)steps);
    double *z = malloc(sizeof(double) * (size_t)H), margin = INFINITY;
    struct cbc_err err = {0};
    CHECK(cbc_ig_quadrature(method, steps, al, wt, &err) == CBC_OK, "quadrature: %s", err.msg);
    for (int s = 0; s < steps; s++) {
        double mean = 0, var = 0;
        for (int j = 0; j < H; j++) {
            double acc = L->b ? L->b[j] : 0;
            for (int i = 0; i < F; i++) {
                double x0 = base ? base[i] : 0;
                acc += (double)L->w[(size_t)j * F + i] * (x0 + al[s] * (x[i] - x0));
            }
            z[j] = acc, mean += acc;
        }
        mean /= H;
        for (int j = 0; j < H; j++)
            var += (z[j] - mean) * (z[j] - mean);
        double rstd = 1 / sqrt(var / H + (L->norm_eps > 0 ? L->norm_eps : 1e-5));
        for (int j = 0; j < H; j++) {
            double a = z[j];
            if (L->norm == CBC_NORM_BEFORE_ACT)
                a = (a - mean) * rstd * (L->norm_w ? L->norm_w[j] : 1) + (L->norm_b ? L->norm_b[j] : 0);
            margin = fmin(margin, fabs(a));
        }
    }
    free(al), free(wt), free(z);
    return margin;
}

/* The layered path (a LayerNorm before or after the activation, Softmax
 * and LogSoftmax outputs, LeakyReLU and ELU parameters) against the CPU
 * reference: widths that are not multiples of a warp and wider than the
 * kernels' registers, one layer, several targets, a baseline per input,
 * chunks forced by a small budget, and central differences through its
 * forward pass. The models and inputs come from a seed of their own, so
 * both precisions run the very same ones and tests added before this one
 * do not change them; inputs are kept away from kinks (kink_margin). */
static void layered_models(void)
{
    printf("layered models (LayerNorm, softmax outputs, activation parameters):\n");
    const uint64_t outer = lcg; /* the other suites' draws stay as they were */
    lcg = 0x6c61796572656421ull;
    static const struct {
        const char *name;
        int layers;
        enum cbc_norm n1, n2;
        enum cbc_act a1, a2, out;
        float p1;
    } v[] = {
        {"Linear, LayerNorm, tanh; GELU; identity", 3, CBC_NORM_BEFORE_ACT, CBC_NORM_NONE,
         CBC_ACT_TANH, CBC_ACT_GELU, CBC_ACT_IDENTITY, 0},
        {"Linear, ReLU, LayerNorm; LayerNorm, SiLU; softmax", 3, CBC_NORM_AFTER_ACT,
         CBC_NORM_BEFORE_ACT, CBC_ACT_RELU, CBC_ACT_SILU, CBC_ACT_SOFTMAX, 0},
        {"LeakyReLU(0.2); tanh; logsoftmax", 3, CBC_NORM_NONE, CBC_NORM_NONE,
         CBC_ACT_LEAKY_RELU, CBC_ACT_TANH, CBC_ACT_LOG_SOFTMAX, 0.2f},
        {"LayerNorm, ELU(0.5); softmax (two layers)", 2, CBC_NORM_BEFORE_ACT, CBC_NORM_NONE,
         CBC_ACT_ELU, CBC_ACT_SOFTMAX, CBC_ACT_SOFTMAX, 0.5f},
        {"one layer: Linear, softmax", 1, CBC_NORM_NONE, CBC_NORM_NONE, CBC_ACT_SOFTMAX,
         CBC_ACT_SOFTMAX, CBC_ACT_SOFTMAX, 0},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        const int F = 100, O = 10;
        int sizes[4] = {F, v[k].layers == 1 ? O : 96, v[k].layers == 3 ? 300 : O, O};
        enum cbc_act acts[3] = {v[k].layers == 1 ? v[k].out : v[k].a1,
                                v[k].layers == 2 ? v[k].out : v[k].a2, v[k].out};
        struct model m;
        make(&m, sizes, v[k].layers, acts, true);
        float *g[2], *be[2];
        for (int l = 0; l < 2; l++) {
            int h = sizes[l + 1];
            g[l] = malloc(sizeof(float) * (size_t)h);
            be[l] = malloc(sizeof(float) * (size_t)h);
            for (int j = 0; j < h; j++)
                g[l][j] = 1 + 0.5f * urand(), be[l][j] = 0.3f * urand();
        }
        if (v[k].layers > 1) {
            m.L[0].norm = v[k].n1, m.L[0].norm_w = g[0], m.L[0].norm_b = be[0];
            m.L[0].act_param = v[k].p1;
        }
        if (v[k].layers > 2)
            m.L[1].norm = v[k].n2, m.L[1].norm_w = g[1], m.L[1].norm_eps = 1e-3f;
        const size_t n = 70;
        float *x = random_inputs(n, (size_t)F, 2.0f), *base = random_inputs(n, (size_t)F, 0.5f);
        char what[160];
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        /* the two paths each input is run on: the default rule from zeros,
         * the trapezoid of 33 points from its own baseline */
        const enum cbc_ig_method m0 = r.method, m1 = CBC_IG_TRAPEZOID;
        const int s0 = r.steps, s1 = 33;
        int redrawn = 0;
        for (size_t b = 0; b < n; b++)
            while (fmin(kink_margin(&m.m, x + b * F, NULL, m0, s0),
                        kink_margin(&m.m, x + b * F, base + b * F, m1, s1)) < KINK_MARGIN) {
                for (int i = 0; i < F; i++)
                    x[b * F + i] = urand() * 2.0f, base[b * F + i] = urand() * 0.5f;
                redrawn++;
            }
        if (redrawn)
            printf("  (%s: %d draws of an input redrawn, within %g of a kink)\n", v[k].name,
                   redrawn, KINK_MARGIN);
        r.x = x, r.n = n, r.target = 7;
        snprintf(what, sizeof what, "%s, target 7", v[k].name);
        compare(what, &m.m, &r, TOL_ANALYTIC);
        r.target = 0, r.baseline.kind = CBC_IG_BASELINE_PER_INPUT, r.baseline.data = base;
        r.mem_budget = 64u << 10; /* a few inputs per chunk */
        r.method = m1, r.steps = s1;
        snprintf(what, sizeof what, "%s, target 0, baselines, chunks", v[k].name);
        compare(what, &m.m, &r, TOL_ANALYTIC);
        r.n = 5, r.gradient = CBC_IG_FD, r.mem_budget = 0;
        snprintf(what, sizeof what, "%s, differences", v[k].name);
        compare(what, &m.m, &r, 5e-2);
        free(x);
        free(base);
        for (int l = 0; l < 2; l++)
            free(g[l]), free(be[l]);
        unmake(&m);
    }
    lcg = outer;
}

/* A target per input in one engine call (cbc_ig_request.targets) on the
 * fused kernels (one layer, two, three with an identity output, whose last
 * hidden delta then comes from the output kernel, four with a tanh output)
 * and on the layered path, against the CPU reference, which takes the same
 * request; a small budget splits the inputs into chunks. */
static void per_row_targets(void)
{
    printf("a target per input in one call (cbc_ig_request.targets):\n");
    static const struct {
        const char *name;
        int layers, sizes[5];
        enum cbc_act acts[4];
        bool layernorm;
    } v[] = {
        {"one layer 40-10", 1, {40, 10}, {CBC_ACT_IDENTITY}, false},
        {"two layers 40-64-10 tanh", 2, {40, 64, 10}, {CBC_ACT_TANH, CBC_ACT_IDENTITY}, false},
        {"784-128-64-10 relu/tanh (the classifier's shape)", 3, {784, 128, 64, 10},
         {CBC_ACT_RELU, CBC_ACT_TANH, CBC_ACT_IDENTITY}, false},
        {"4 layers 50-70-33-20-10, tanh output", 4, {50, 70, 33, 20, 10},
         {CBC_ACT_GELU, CBC_ACT_SILU, CBC_ACT_RELU, CBC_ACT_TANH}, false},
        {"layered: LayerNorm, relu; softmax output", 2, {60, 48, 10},
         {CBC_ACT_RELU, CBC_ACT_SOFTMAX}, true},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        struct model m;
        make(&m, v[k].sizes, v[k].layers, v[k].acts, true);
        float *ln = NULL;
        if (v[k].layernorm) {
            ln = random_inputs((size_t)v[k].sizes[1], 1, 0.5f);
            m.L[0].norm = CBC_NORM_BEFORE_ACT, m.L[0].norm_w = ln;
        }
        const size_t n = 37, F = (size_t)v[k].sizes[0];
        float *x = random_inputs(n, F, 1.5f);
        int t[37];
        for (size_t b = 0; b < n; b++)
            t[b] = (int)((b * 7 + 3) % 10);
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = n, r.targets = t, r.target = 0;
        char what[160];
        snprintf(what, sizeof what, "%s, 37 inputs", v[k].name);
        compare(what, &m.m, &r, TOL_ANALYTIC);
        r.mem_budget = 48u << 10; /* a few inputs per chunk */
        snprintf(what, sizeof what, "%s, chunks", v[k].name);
        compare(what, &m.m, &r, TOL_ANALYTIC);
        free(x), free(ln);
        unmake(&m);
    }
    /* bad targets are refused before the GPU runs */
    const int s2[] = {8, 3};
    const enum cbc_act a2[] = {CBC_ACT_IDENTITY};
    struct model m;
    make(&m, s2, 1, a2, true);
    float *x = random_inputs(2, 8, 1.0f);
    int bad[2] = {1, 3};
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = 2, r.targets = bad;
    struct results o;
    alloc_results(&o, 2, 8);
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &m.m, &gm, &err) == CBC_OK, "%s", err.msg);
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_E_USAGE && strstr(err.msg, "target 3"),
          "a target beyond the outputs: %s", err.msg);
    cbc_ig_gpu_model_free(gm);
    free_results(&o);
    free(x);
    unmake(&m);
}

/* Residuals and constant scales (what ONNX models carry) run on the
 * layered path: a residual after the activation and one before it, scales
 * and shifts, a LayerNorm among them, a target per input and chunks,
 * against the CPU reference; a residual of the input is refused. */
static void residual_models(void)
{
    printf("residuals and scales (layered path):\n");
    const int sizes[5] = {50, 64, 64, 64, 10};
    const enum cbc_act acts[4] = {CBC_ACT_RELU, CBC_ACT_TANH, CBC_ACT_GELU, CBC_ACT_IDENTITY};
    struct model m;
    make(&m, sizes, 4, acts, true);
    float *vec[6];
    for (int q = 0; q < 6; q++) {
        vec[q] = random_inputs(64, 1, 0.5f);
        for (int j = 0; j < 64; j++)
            vec[q][j] += q % 2 ? 0 : 1; /* scales near 1, shifts near 0 */
    }
    /* h1 = h0 + s * relu... : layer 1 adds layer 0 after its activation,
     * layer 2 adds layer 1 before its activation, layer 3 scales its output */
    m.L[1].residual = CBC_RESIDUAL_AFTER, m.L[1].residual_from = 0, m.L[1].residual_mul = vec[0];
    m.L[1].mul = vec[2], m.L[1].add = vec[1];
    m.L[2].residual = CBC_RESIDUAL_BEFORE_ACT, m.L[2].residual_from = 1;
    m.L[2].norm = CBC_NORM_AFTER_ACT, m.L[2].norm_w = vec[4], m.L[2].norm_b = vec[3];
    m.L[3].mul = vec[4], m.L[3].add = vec[5];
    const size_t n = 29;
    float *x = random_inputs(n, 50, 1.5f), *base = random_inputs(n, 50, 0.3f);
    int t[29];
    for (size_t b = 0; b < n; b++)
        t[b] = (int)((b * 3) % 10);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = n, r.target = 4;
    compare("50-64-64-64-10 with 2 residuals and scales, target 4", &m.m, &r, TOL_ANALYTIC);
    r.targets = t, r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, base};
    r.mem_budget = 64u << 10;
    compare("the same, a target and a baseline per input, chunks", &m.m, &r, TOL_ANALYTIC);
    /* two residuals of the same layer, one of them into the last layer */
    m.L[3].residual = CBC_RESIDUAL_NONE;
    m.L[2].residual_from = 0;
    r.targets = NULL, r.mem_budget = 0;
    compare("layers 1 and 2 both add layer 0", &m.m, &r, TOL_ANALYTIC);
    r.n = 4, r.gradient = CBC_IG_FD;
    compare("the same, central differences through the forward", &m.m, &r, 5e-2);
    /* the input as a residual: the CPU runs it, the GPU refuses it by name */
    const int s1[3] = {50, 50, 10};
    struct model m1;
    make(&m1, s1, 2, acts, true);
    m1.L[0].residual = CBC_RESIDUAL_AFTER, m1.L[0].residual_from = -1;
    struct cbc_err err = {0};
    struct cbc_ig_gpu_model *gm = NULL;
    CHECK(cbc_ig_gpu_upload(G, &m1.m, &gm, &err) == CBC_E_UNSUPPORTED &&
              strstr(err.msg, "layer 0 adds the model's input") && strstr(err.remedy, "--device cpu"),
          "the input as a residual: %s", err.msg);
    cbc_ig_gpu_model_free(gm);
    unmake(&m1);
    free(x), free(base);
    for (int q = 0; q < 6; q++)
        free(vec[q]);
    unmake(&m);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* keep what was printed if a check crashes */
    require_gpu();
    struct cbc_err err = {0};
    if (cbc_ig_gpu_open(0, NULL, NULL, &G, &err) != CBC_OK) {
        printf("FAIL: cannot open the IG engine: %s\n", err.msg);
        return 1;
    }
    printf("engine: %s\n", cbc_ig_gpu_describe(G));
    /* the default is the accurate mode: FP32 FMA GEMMs, as PyTorch float32 */
    CHECK(strstr(cbc_ig_gpu_describe(G), "FP32 FMA") != NULL, "the default precision: %s",
          cbc_ig_gpu_describe(G));
    analytic_closed_forms();
    analytic_matches_cpu();
    repeated_requests();
    differences_and_completeness();
    device_pointers();
    explanations();
    layered_models();
    per_row_targets();
    residual_models();
    /* --precision fast: 3xTF32 tensor cores (opt-in), against the same reference */
    printf("precision fast (3xTF32 tensor cores):\n");
    cbc_ig_gpu_set_precision(G, CBC_IG_PRECISION_FAST);
    analytic_matches_cpu();
    layered_models();
    per_row_targets();
    residual_models();
    cbc_ig_gpu_set_precision(G, CBC_IG_PRECISION_FP32);
    const char *bdir = getenv("CBC_BUNDLES");
    char bpath[4096];
    snprintf(bpath, sizeof bpath, "%s/closedform.bundle", bdir ? bdir : "");
    struct cbc_bundle *b = NULL;
    struct cbc_module *box = NULL;
    if (bdir && cbc_bundle_open_path(bpath, "closedform", &b, &err) == CBC_OK &&
        cbc_module_load(b, 0, NULL, &box, &err) == CBC_OK)
        fd_closed_forms(box);
    else
        CHECK(0, "closed-form bundle: %s", err.msg);
    /* bad input never reaches the GPU */
    float nan_x[2] = {1, NAN};
    const float w[2] = {1, 1};
    struct cbc_mlp_layer L = {.in = 2, .out = 1, .w = w, .b = NULL, .act = CBC_ACT_IDENTITY};
    struct cbc_mlp lin = {1, &L};
    struct cbc_ig_gpu_model *gm = NULL;
    struct results o;
    alloc_results(&o, 1, 2);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = nan_x, r.n = 1;
    CHECK(cbc_ig_gpu_upload(G, &lin, &gm, &err) == CBC_OK, "%s", err.msg);
    CHECK(gm && cbc_ig_gpu_mlp(gm, &r, &o.o, &err) == CBC_E_NUMERIC, "NaN input accepted");
    cbc_ig_gpu_model_free(gm);
    free_results(&o);
    cbc_module_unload(box);
    cbc_bundle_close(b);
    cbc_ig_gpu_close(G);
    return finish("gpu_ig");
}
