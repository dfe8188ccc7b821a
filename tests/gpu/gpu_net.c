/* gpu_net.c: convolutional networks on a real GPU against the CPU
 * reference in double (cbc_ig_cpu_net, the oracle) and against Captum 0.9
 * float64 (the attributions committed beside tests/data/ig/cnn's models):
 *   - every exported model (LeNet, ResNet with folded and unfolded
 *     BatchNorm and the dynamo graph, the depthwise-separable block, every
 *     window attribute, 1-D, a reshaped flat input) within 1e-5 relative L2
 *     of Captum float64 at the default precision (double accumulation) and
 *     of the CPU; --precision fast (float accumulation) within 1e-4;
 *   - hand-built networks of every operator and attribute the kernels
 *     special-case: convolutions of 1 to 64+ channels per group (all three
 *     tiles), strides (the input gradient by phase, and over the whole
 *     plane past 16 phases), padding, dilation, groups, depthwise, direct
 *     3x3 and 5x5 convolutions (their channel chunks, channel, column and
 *     row tiles, images per block, padding wider than the taps), MaxPool with
 *     ties, AvgPool with and without the padding counted, global pooling,
 *     per-channel scales, every activation, residual Add (a value read
 *     twice), Concat, LayerNorm, Softmax and LogSoftmax, two Linear
 *     layers reading one value (the second's gradient added);
 *   - a target per input in one call, chunks forced by a small memory
 *     budget equal to one chunk, central differences against the CPU's.
 * DATA names tests/data/ig/cnn. Exit 77 without a GPU. */
#include "gpu_test.h"

#include <cubincache/ig.h>

#include <stdint.h>
#include <string.h>

static uint64_t lcg = 0x2545f4914f6cdd1dull;
static float urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((lcg >> 40) / (double)(1u << 24)) * 2 - 1;
}

static struct cbc_ig_gpu *G;

struct run {
    float *attr;
    double *v;
    struct cbc_ig_output o;
};

static void run_alloc(struct run *r, size_t n, size_t F)
{
    r->attr = calloc(n * F, sizeof(float));
    r->v = calloc(4 * n, sizeof(double));
    r->o = (struct cbc_ig_output){r->attr, r->v, r->v + n, r->v + 2 * n, r->v + 3 * n};
}

static void run_free(struct run *r)
{
    free(r->attr);
    free(r->v);
}

/* GPU against CPU on the same request: relative L2 of the attributions,
 * and F(x), F(x') within tol of the CPU's. Returns the L2. */
static double versus_cpu(const char *what, const struct cbc_net *net, struct cbc_ig_request *r,
                         double tol, struct cbc_ig_gpu_net **keep)
{
    size_t F = cbc_net_features(net), n = r->n;
    struct run c, g;
    run_alloc(&c, n, F), run_alloc(&g, n, F);
    struct cbc_err err = {0};
    enum cbc_status st = cbc_ig_cpu_net(net, r, &c.o, &err);
    CHECK(st == CBC_OK, "%s: CPU: %s", what, err.msg);
    struct cbc_ig_gpu_net *gn = keep && *keep ? *keep : NULL;
    if (!gn) {
        st = cbc_ig_gpu_upload_net(G, net, &gn, &err);
        CHECK(st == CBC_OK, "%s: upload: %s", what, err.msg);
    }
    double e = INFINITY;
    if (gn) {
        st = cbc_ig_gpu_net(gn, r, &g.o, &err);
        CHECK(st == CBC_OK, "%s: GPU: %s", what, err.msg);
        if (st == CBC_OK) {
            e = rel_l2(g.attr, c.attr, n * F);
            CHECK(e <= tol, "%s: GPU %.3g from the CPU (tolerance %g)", what, e, tol);
            for (size_t b = 0; b < n; b++)
                CHECK(fabs(g.o.f_x[b] - c.o.f_x[b]) <= 1e-4 * (1 + fabs(c.o.f_x[b])) &&
                          fabs(g.o.f_base[b] - c.o.f_base[b]) <= 1e-4 * (1 + fabs(c.o.f_base[b])),
                      "%s: input %zu: F(x) %g / %g, F(x') %g / %g", what, b, g.o.f_x[b],
                      c.o.f_x[b], g.o.f_base[b], c.o.f_base[b]);
        }
        if (keep)
            *keep = gn;
        else
            cbc_ig_gpu_net_free(gn);
    }
    run_free(&c), run_free(&g);
    return e;
}

/* ---- the exported models ------------------------------------------------- */

static void exported(const char *dir, const char *model, const char *name)
{
    char path[1024];
    struct cbc_err err = {0};
    struct cbc_net_owned *nw = NULL;
    struct cbc_matrix X = {0}, T = {0}, A = {0};
    snprintf(path, sizeof path, "%s/%s", dir, model);
    enum cbc_status st = cbc_net_load_onnx(path, &nw, &err);
    CHECK(st == CBC_OK, "%s: %s", model, err.msg);
    snprintf(path, sizeof path, "%s/%s.x.npy", dir, name);
    if (st == CBC_OK)
        st = cbc_matrix_load(path, &X, &err);
    snprintf(path, sizeof path, "%s/%s.t.npy", dir, name);
    if (st == CBC_OK)
        st = cbc_matrix_load(path, &T, &err);
    snprintf(path, sizeof path, "%s/%s.attr.npy", dir, name);
    if (st == CBC_OK)
        st = cbc_matrix_load(path, &A, &err);
    CHECK(st == CBC_OK, "%s: %s", name, err.msg);
    if (st != CBC_OK) {
        cbc_net_owned_free(nw);
        return;
    }
    const size_t n = X.rows, F = X.cols;
    int *targets = calloc(n, sizeof *targets);
    for (size_t b = 0; b < n; b++)
        targets[b] = (int)T.data[b];
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = X.data, r.n = n, r.targets = targets;
    struct cbc_ig_gpu_net *gn = NULL;
    for (int prec = 0; prec < 2; prec++) {
        cbc_ig_gpu_set_precision(G, prec ? CBC_IG_PRECISION_FAST : CBC_IG_PRECISION_FP32);
        double tol = prec ? 1e-4 : 1e-5;
        char what[200];
        snprintf(what, sizeof what, "%s %s", model, prec ? "fast" : "default");
        double e_cpu = versus_cpu(what, &nw->net, &r, tol, &gn);
        struct run g;
        run_alloc(&g, n, F);
        if (gn && cbc_ig_gpu_net(gn, &r, &g.o, &err) == CBC_OK) {
            double e = rel_l2(g.attr, A.data, n * F);
            printf("  %s: rel L2 %.2e from Captum 0.9 float64, %.2e from the CPU\n", what, e,
                   e_cpu);
            CHECK(e <= tol, "%s: %.3g from Captum float64 (tolerance %g)", what, e, tol);
        }
        run_free(&g);
    }
    cbc_ig_gpu_set_precision(G, CBC_IG_PRECISION_FP32);
    cbc_ig_gpu_net_free(gn);
    free(targets);
    cbc_matrix_release(&X), cbc_matrix_release(&T), cbc_matrix_release(&A);
    cbc_net_owned_free(nw);
}

/* ---- hand-built networks --------------------------------------------------- */

#define NODES_MAX 24
struct hnet {
    struct cbc_net_node d[NODES_MAX];
    float *mem[4 * NODES_MAX];
    int nm;
    struct cbc_net net;
};

static float *rnd(struct hnet *h, size_t n, float scale)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = urand() * scale;
    h->mem[h->nm++] = p;
    return p;
}

static int vshape(const struct hnet *h, int v, int *c, int *hh, int *w)
{
    if (v == 0)
        *c = h->net.c, *hh = h->net.h, *w = h->net.w;
    else
        *c = h->d[v - 1].c, *hh = h->d[v - 1].h, *w = h->d[v - 1].w;
    return v;
}

/* A node reading value `in` (its shape as the input's view); returns its value. */
static int add(struct hnet *h, struct cbc_net_node d, int in)
{
    int k = h->net.n_nodes++;
    int c, hh, w;
    vshape(h, in, &c, &hh, &w);
    if (!d.n_in)
        d.n_in = 1;
    d.in[0] = in;
    d.ic = c, d.ih = hh, d.iw = w;
    int g = d.groups > 0 ? d.groups : 1, sh = d.sh > 0 ? d.sh : 1, sw = d.sw > 0 ? d.sw : 1;
    int dh = d.dh > 0 ? d.dh : 1, dw = d.dw > 0 ? d.dw : 1;
    switch (d.op) {
    case CBC_NET_CONV:
        d.weight = rnd(h, (size_t)d.c * (c / g) * d.kh * d.kw, 1.5f / sqrtf((float)(c / g * d.kh * d.kw)));
        d.bias = rnd(h, (size_t)d.c, 0.2f);
        /* fallthrough */
    case CBC_NET_MAXPOOL:
    case CBC_NET_AVGPOOL:
        if (d.op != CBC_NET_CONV)
            d.c = c;
        d.h = (hh + d.pt + d.pb - dh * (d.kh - 1) - 1) / sh + 1;
        d.w = (w + d.pl + d.pr - dw * (d.kw - 1) - 1) / sw + 1;
        break;
    case CBC_NET_GLOBAL_AVGPOOL: d.c = c, d.h = d.w = 1; break;
    case CBC_NET_LINEAR:
        d.weight = rnd(h, (size_t)d.c * c * hh * w, 1.5f / sqrtf((float)(c * hh * w)));
        d.bias = rnd(h, (size_t)d.c, 0.2f);
        d.h = d.w = 1;
        break;
    case CBC_NET_AFFINE:
        d.c = c, d.h = hh, d.w = w;
        d.mul = rnd(h, (size_t)c, 1.0f), d.add = rnd(h, (size_t)c, 0.3f);
        break;
    case CBC_NET_LAYERNORM:
        d.c = c, d.h = hh, d.w = w;
        d.weight = rnd(h, (size_t)c * hh * w, 1.0f), d.bias = rnd(h, (size_t)c * hh * w, 0.3f);
        break;
    case CBC_NET_CONCAT: {
        int sum = 0;
        for (int i = 0; i < d.n_in; i++) {
            int ci, hi, wi;
            vshape(h, d.in[i], &ci, &hi, &wi);
            sum += ci;
        }
        d.c = sum, d.h = hh, d.w = w;
        break;
    }
    default: d.c = c, d.h = hh, d.w = w; break;
    }
    h->d[k] = d;
    h->net.nodes = h->d;
    return k + 1;
}

static void hnet_free(struct hnet *h)
{
    for (int i = 0; i < h->nm; i++)
        free(h->mem[i]);
}

static void hand_built(void)
{
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.steps = 20;
    const size_t n = 3;
    /* 1. a big image: three tiles of the implicit GEMM (6, 24 and 80 channels
     * per group), stride, padding, dilation, groups, depthwise, pools, a
     * residual, a Concat, global pooling, a Linear head with Softmax */
    {
        struct hnet h = {0};
        h.net = (struct cbc_net){3, 20, 18, 0, h.d};
        int v = add(&h, (struct cbc_net_node){.op = CBC_NET_AFFINE}, 0); /* normalisation */
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 6, .kh = 5, .kw = 3, .pt = 2,
                                          .pb = 2, .pl = 1, .pr = 1}, v);
        int a = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_RELU}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_MAXPOOL, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
                                          .pt = 1, .pl = 1, .pb = 1, .pr = 1}, a);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 24, .kh = 3, .kw = 3, .dh = 2,
                                          .dw = 2, .pt = 2, .pl = 2, .pb = 2, .pr = 2, .groups = 2}, v);
        int s = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_GELU}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 24, .kh = 3, .kw = 3, .pt = 1,
                                          .pl = 1, .pb = 1, .pr = 1, .groups = 24}, s); /* depthwise */
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_SILU}, v);
        struct cbc_net_node sum = {.op = CBC_NET_ADD, .n_in = 2};
        sum.in[1] = s; /* s read twice: its gradient is added */
        v = add(&h, sum, v);
        int p = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 80, .kh = 1, .kw = 1}, v);
        int q = add(&h, (struct cbc_net_node){.op = CBC_NET_AVGPOOL, .kh = 3, .kw = 3, .pt = 1,
                                              .pl = 1, .pb = 1, .pr = 1, .count_include_pad = true}, v);
        struct cbc_net_node cat = {.op = CBC_NET_CONCAT, .n_in = 3};
        cat.in[1] = q, cat.in[2] = p;
        v = add(&h, cat, p);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_AVGPOOL, .kh = 2, .kw = 2, .sh = 2, .sw = 2,
                                          .pt = 1, .pl = 1}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_LEAKY_RELU, .act_param = 0.2f}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_GLOBAL_AVGPOOL}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 7}, v);
        add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_SOFTMAX}, v);
        struct cbc_err err = {0};
        CHECK(cbc_net_validate(&h.net, &err) == CBC_OK, "hand-built 1: %s", err.msg);
        size_t F = cbc_net_features(&h.net);
        float *x = rnd(&h, n * F, 1.0f);
        r.x = x, r.n = n, r.target = 3;
        struct cbc_ig_gpu_net *gn = NULL;
        versus_cpu("every operator, one target", &h.net, &r, 1e-5, &gn);
        int targets[3] = {0, 6, 2};
        r.targets = targets;
        versus_cpu("every operator, a target per input", &h.net, &r, 1e-5, &gn);
        /* chunks: a budget of one input's rows at a time equals one chunk */
        struct run one, many;
        run_alloc(&one, n, F), run_alloc(&many, n, F);
        if (gn) {
            cbc_ig_gpu_net(gn, &r, &one.o, &err);
            r.mem_budget = cbc_ig_gpu_net_row_bytes(gn) * (size_t)(r.steps + 2);
            enum cbc_status st = cbc_ig_gpu_net(gn, &r, &many.o, &err);
            CHECK(st == CBC_OK, "chunked: %s", err.msg);
            double e = rel_l2(many.attr, one.attr, n * F);
            CHECK(e <= 1e-6, "three chunks differ from one by %.3g", e);
            printf("  every operator: %zu bytes per row; chunks of one input: %.2e from one chunk\n",
                   cbc_ig_gpu_net_row_bytes(gn), e);
            r.mem_budget = 0;
        }
        run_free(&one), run_free(&many);
        r.targets = NULL;
        cbc_ig_gpu_net_free(gn);
        hnet_free(&h);
    }
    /* 2. a flat model: LayerNorm, a Linear read twice, LogSoftmax; and ties
     * for MaxPool on a quantised input */
    {
        struct hnet h = {0};
        h.net = (struct cbc_net){2, 8, 8, 0, h.d};
        int v = add(&h, (struct cbc_net_node){.op = CBC_NET_MAXPOOL, .kh = 2, .kw = 2, .sh = 2, .sw = 2}, 0);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 5, .kh = 2, .kw = 2}, v);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, v);
        int f = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 16}, v);
        int f2 = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 16}, v); /* v read twice */
        int l = add(&h, (struct cbc_net_node){.op = CBC_NET_LAYERNORM, .eps = 1e-5f}, f);
        int e2 = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_ELU}, f2);
        struct cbc_net_node sum = {.op = CBC_NET_ADD, .n_in = 2};
        sum.in[1] = e2;
        v = add(&h, sum, l);
        v = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 4}, v);
        add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_LOG_SOFTMAX}, v);
        size_t F = cbc_net_features(&h.net);
        float *x = rnd(&h, n * F, 1.0f);
        for (size_t i = 0; i < n * F; i++)
            x[i] = floorf((x[i] + 1) * 2) / 2; /* values of 0.5 steps: ties in every window */
        r.x = x, r.n = n, r.target = 1;
        versus_cpu("flat layers and MaxPool ties", &h.net, &r, 1e-5, NULL);
        /* central differences: the GPU's black box against the CPU's, the
         * same differences of the same points (the step h of
         * cbc_ig_fd_step), evaluated in float and in double: what differs
         * is float32 rounding of F, about 2^-24 |F| / 2h = 1e-5 of each
         * gradient entry, where 1e-3 leaves ten times that. Both are 5.4%
         * from the analytic gradient on this input: the MaxPool on the
         * input switches its largest element within h of the path's points
         * near alpha = 0 (the same network with an AvgPool there: 2.1e-6 on
         * the CPU), a property of the model, not of either engine. The
         * analytic gradient is held to the CPU on the same input first. */
        r.x = rnd(&h, n * F, 1.0f);
        r.steps = 8;
        versus_cpu("flat layers, an input without ties", &h.net, &r, 1e-5, NULL);
        r.gradient = CBC_IG_FD;
        double e = versus_cpu("central differences", &h.net, &r, 1e-3, NULL);
        struct cbc_ig_request ra = r;
        ra.gradient = CBC_IG_ANALYTIC;
        struct run a, d;
        run_alloc(&a, n, F), run_alloc(&d, n, F);
        struct cbc_err err = {0};
        if (cbc_ig_cpu_net(&h.net, &r, &d.o, &err) == CBC_OK &&
            cbc_ig_cpu_net(&h.net, &ra, &a.o, &err) == CBC_OK)
            printf("  central differences on the GPU: %.2e from the CPU's; the CPU's %.2e from "
                   "analytic\n", e, rel_l2(d.attr, a.attr, n * F));
        run_free(&a), run_free(&d);
        r.gradient = CBC_IG_ANALYTIC, r.steps = 20;
        hnet_free(&h);
    }
    /* 4. direct convolutions of tiny planes over many rows (8 and 6 inputs
     * of 50 steps): the images a block holds are bounded by its shared
     * memory, not by the 256 threads */
    {
        static const struct {
            int c, hw, k, oc;
            size_t n;
        } tiny[] = {{1, 5, 5, 4, 8}, {2, 3, 3, 3, 6}, {2, 6, 5, 8, 6}};
        for (size_t q = 0; q < sizeof tiny / sizeof tiny[0]; q++) {
            struct hnet h = {0};
            h.net = (struct cbc_net){tiny[q].c, tiny[q].hw, tiny[q].hw, 0, h.d};
            int v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = tiny[q].oc,
                                                  .kh = tiny[q].k, .kw = tiny[q].k}, 0);
            v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, v);
            add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 3}, v);
            size_t F = cbc_net_features(&h.net);
            struct cbc_ig_request rt = r;
            rt.steps = 50, rt.n = tiny[q].n, rt.x = rnd(&h, tiny[q].n * F, 1.0f), rt.target = 1;
            char what[96];
            snprintf(what, sizeof what, "Conv %d-%d %dx%d over %dx%d, %zu rows", tiny[q].c,
                     tiny[q].oc, tiny[q].k, tiny[q].k, tiny[q].hw, tiny[q].hw, tiny[q].n * 52);
            versus_cpu(what, &h.net, &rt, 1e-5, NULL);
            hnet_free(&h);
        }
    }
    /* 3. a 1-D signal and every activation, the 64-channel tile backward */
    {
        static const enum cbc_act acts[] = {CBC_ACT_IDENTITY, CBC_ACT_RELU, CBC_ACT_TANH,
                                            CBC_ACT_SIGMOID, CBC_ACT_GELU, CBC_ACT_SILU,
                                            CBC_ACT_SOFTPLUS, CBC_ACT_ELU, CBC_ACT_LEAKY_RELU};
        for (size_t q = 0; q < sizeof acts / sizeof acts[0]; q++) {
            struct hnet h = {0};
            h.net = (struct cbc_net){70, 1, 30, 0, h.d};
            int v = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 40, .kh = 1, .kw = 5,
                                                  .sw = 2, .pl = 2, .pr = 1}, 0);
            v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = acts[q]}, v);
            v = add(&h, (struct cbc_net_node){.op = CBC_NET_MAXPOOL, .kh = 1, .kw = 2, .sw = 2}, v);
            add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 3}, v);
            size_t F = cbc_net_features(&h.net);
            r.x = rnd(&h, 2 * F, 1.0f), r.n = 2, r.target = 2;
            char what[80];
            snprintf(what, sizeof what, "1-D, %s", cbc_act_name(acts[q]));
            versus_cpu(what, &h.net, &r, 1e-5, NULL);
            hnet_free(&h);
        }
    }
}

/* ---- one operator at a time ------------------------------------------------ */

/* Builds nothing itself: checks the network h holds (a Linear head of 5
 * outputs appended when head is set, so every element of the operator's
 * output carries gradient), two inputs, both precisions, against the CPU.
 * Each operator and attribute the kernels special-case gets a network of
 * its own, so a wrong kernel names itself. */
static void one_op(const char *what, struct hnet *h, bool head, float xscale)
{
    if (head)
        add(h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 5}, h->net.n_nodes);
    struct cbc_err err = {0};
    enum cbc_status st = cbc_net_validate(&h->net, &err);
    CHECK(st == CBC_OK, "%s: %s", what, err.msg);
    if (st == CBC_OK) {
        const size_t F = cbc_net_features(&h->net), outs = cbc_net_outputs(&h->net);
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.steps = 8, r.n = 2, r.x = rnd(h, 2 * F, xscale), r.target = (int)(outs > 2 ? 2 : outs - 1);
        struct cbc_ig_gpu_net *gn = NULL;
        double e[2];
        for (int prec = 0; prec < 2; prec++) {
            cbc_ig_gpu_set_precision(G, prec ? CBC_IG_PRECISION_FAST : CBC_IG_PRECISION_FP32);
            char name[200];
            snprintf(name, sizeof name, "%s (%s)", what, prec ? "fast" : "default");
            e[prec] = versus_cpu(name, &h->net, &r, prec ? 1e-4 : 1e-5, &gn);
        }
        cbc_ig_gpu_set_precision(G, CBC_IG_PRECISION_FP32);
        printf("  %-66s %.2e, fast %.2e\n", what, e[0], e[1]);
        cbc_ig_gpu_net_free(gn);
    }
    hnet_free(h);
}

/* A network whose input is [c][hh][w]. */
static struct hnet *hnew(struct hnet *h, int c, int hh, int w)
{
    memset(h, 0, sizeof *h);
    h->net = (struct cbc_net){c, hh, w, 0, h->d};
    return h;
}

static void operators(void)
{
    printf("one operator at a time (relative L2 from the CPU, default and fast):\n");
    struct hnet h;
    /* the head every other network ends with, alone */
    hnew(&h, 3, 4, 5);
    add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 5}, 0);
    one_op("Linear 60-5", &h, false, 1.0f);
    /* convolutions: the implicit GEMM's tiles are picked by the group's
     * output channels forward (<= 16, <= 32, more) and its input channels
     * backward */
    static const struct {
        const char *what;
        int c, h, w;
        struct cbc_net_node d;
    } convs[] = {
        {"Conv 3-6 3x3, padding 1 (tiles 16 / 16)", 3, 9, 10,
         {.op = CBC_NET_CONV, .c = 6, .kh = 3, .kw = 3, .pt = 1, .pl = 1, .pb = 1, .pr = 1}},
        {"Conv 4-24 3x3, stride 2, padding 1 0 2 1 (tiles 32 / 16)", 4, 11, 9,
         {.op = CBC_NET_CONV, .c = 24, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pb = 2,
          .pr = 1}},
        {"Conv 40-70 3x2, dilation 2 1, padding 2 1 (tiles 64 / 64)", 40, 7, 6,
         {.op = CBC_NET_CONV, .c = 70, .kh = 3, .kw = 2, .dh = 2, .pt = 2, .pb = 2, .pl = 1,
          .pr = 1}},
        {"Conv 24-48 5x5, stride 1 2, padding 2 (tiles 64 / 32)", 24, 6, 8,
         {.op = CBC_NET_CONV, .c = 48, .kh = 5, .kw = 5, .sw = 2, .pt = 2, .pb = 2, .pl = 2,
          .pr = 2}},
        {"Conv 20-30, 2 groups, 3x3, stride 2, dilation 2, padding 1", 20, 9, 9,
         {.op = CBC_NET_CONV, .c = 30, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 2, .dw = 2,
          .pt = 1, .pb = 1, .pl = 1, .pr = 1, .groups = 2}},
        {"Conv 64-64, 4 groups of 16, 3x3, padding 1", 64, 5, 4,
         {.op = CBC_NET_CONV, .c = 64, .kh = 3, .kw = 3, .pt = 1, .pb = 1, .pl = 1, .pr = 1,
          .groups = 4}},
        {"Conv 6-6 depthwise 3x3, stride 2, dilation 2, padding 2", 6, 9, 8,
         {.op = CBC_NET_CONV, .c = 6, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .dh = 2, .dw = 2,
          .pt = 2, .pb = 2, .pl = 2, .pr = 2, .groups = 6}},
        {"Conv 4-8, 4 groups (two outputs per input channel)", 4, 6, 6,
         {.op = CBC_NET_CONV, .c = 8, .kh = 3, .kw = 3, .pt = 1, .pb = 1, .pl = 1, .pr = 1,
          .groups = 4}},
        {"Conv 8-5 1x1", 8, 5, 5, {.op = CBC_NET_CONV, .c = 5, .kh = 1, .kw = 1}},
        {"Conv 2-3 7x7 over 5x5, padding 3", 2, 5, 5,
         {.op = CBC_NET_CONV, .c = 3, .kh = 7, .kw = 7, .pt = 3, .pb = 3, .pl = 3, .pr = 3}},
        {"Conv 3-4 1x5 of a 1-D signal, stride 3", 3, 1, 20,
         {.op = CBC_NET_CONV, .c = 4, .kh = 1, .kw = 5, .sw = 3}},
        /* direct convolutions (3x3, 5x5, stride 1): chunks of channels, tiles
         * of channels, columns and rows, whole images per block */
        {"Conv 13-72 3x3 direct over 7x37 (channel chunks, 2 channel, 2 column tiles)", 13, 7, 37,
         {.op = CBC_NET_CONV, .c = 72, .kh = 3, .kw = 3, .pt = 1, .pb = 1, .pl = 1, .pr = 1}},
        {"Conv 5-7 3x3 direct over 4x5, padding 2 1 3 3 (images per block, negative backward "
         "padding)", 5, 4, 5,
         {.op = CBC_NET_CONV, .c = 7, .kh = 3, .kw = 3, .pt = 2, .pb = 1, .pl = 3, .pr = 3}},
        {"Conv 3-5 5x5 direct over 6x11, padding 0 2 1 3", 3, 6, 11,
         {.op = CBC_NET_CONV, .c = 5, .kh = 5, .kw = 5, .pb = 2, .pl = 1, .pr = 3}},
        {"Conv 9-3 5x5 direct, padding 2 (3 output channels of a group of 4)", 9, 8, 8,
         {.op = CBC_NET_CONV, .c = 3, .kh = 5, .kw = 5, .pt = 2, .pb = 2, .pl = 2, .pr = 2}},
        /* strided input gradients by phase: sh sw phases of their own taps */
        {"Conv 6-10 3x3, stride 3, padding 1 (9 phases)", 6, 10, 11,
         {.op = CBC_NET_CONV, .c = 10, .kh = 3, .kw = 3, .sh = 3, .sw = 3, .pt = 1, .pb = 1,
          .pl = 1, .pr = 1}},
        {"Conv 4-6 1x1, stride 2 (phases without taps)", 4, 7, 6,
         {.op = CBC_NET_CONV, .c = 6, .kh = 1, .kw = 1, .sh = 2, .sw = 2}},
        {"Conv 3-4 2x2, stride 5 (25 phases: the whole plane at once)", 3, 11, 12,
         {.op = CBC_NET_CONV, .c = 4, .kh = 2, .kw = 2, .sh = 5, .sw = 5}},
        {"Conv 3-2 1x1, stride 4 over 3x3 (phases without pixels)", 3, 3, 3,
         {.op = CBC_NET_CONV, .c = 2, .kh = 1, .kw = 1, .sh = 4, .sw = 4}},
        /* pools */
        {"MaxPool 3x3, stride 2, padding 1", 3, 9, 8,
         {.op = CBC_NET_MAXPOOL, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pb = 1, .pl = 1,
          .pr = 1}},
        {"MaxPool 2x3, dilation 2", 2, 7, 8,
         {.op = CBC_NET_MAXPOOL, .kh = 2, .kw = 3, .dh = 2, .dw = 2}},
        {"AvgPool 3x3, padding 1, counting the padding", 3, 6, 7,
         {.op = CBC_NET_AVGPOOL, .kh = 3, .kw = 3, .pt = 1, .pb = 1, .pl = 1, .pr = 1,
          .count_include_pad = true}},
        {"AvgPool 3x3, stride 2, padding 1, not counting it", 3, 7, 6,
         {.op = CBC_NET_AVGPOOL, .kh = 3, .kw = 3, .sh = 2, .sw = 2, .pt = 1, .pb = 1, .pl = 1,
          .pr = 1}},
        {"AvgPool 2x2, stride 2, padding top and left only", 2, 6, 5,
         {.op = CBC_NET_AVGPOOL, .kh = 2, .kw = 2, .sh = 2, .sw = 2, .pt = 1, .pl = 1}},
        {"GlobalAveragePool", 5, 4, 6, {.op = CBC_NET_GLOBAL_AVGPOOL}},
        /* elementwise and rows */
        {"Affine (per-channel scale and shift)", 4, 3, 3, {.op = CBC_NET_AFFINE}},
        {"LayerNorm of 48", 3, 4, 4, {.op = CBC_NET_LAYERNORM, .eps = 1e-5f}},
        {"Softmax of 12", 3, 2, 2, {.op = CBC_NET_ACT, .act = CBC_ACT_SOFTMAX}},
        {"LogSoftmax of 12", 3, 2, 2, {.op = CBC_NET_ACT, .act = CBC_ACT_LOG_SOFTMAX}},
        {"LeakyReLU(0.2)", 3, 4, 4, {.op = CBC_NET_ACT, .act = CBC_ACT_LEAKY_RELU, .act_param = 0.2f}},
        {"ELU(0.5)", 3, 4, 4, {.op = CBC_NET_ACT, .act = CBC_ACT_ELU, .act_param = 0.5f}},
    };
    for (size_t q = 0; q < sizeof convs / sizeof convs[0]; q++) {
        hnew(&h, convs[q].c, convs[q].h, convs[q].w);
        add(&h, convs[q].d, 0);
        one_op(convs[q].what, &h, true, 1.0f);
    }
    static const enum cbc_act acts[] = {CBC_ACT_IDENTITY, CBC_ACT_RELU, CBC_ACT_TANH,
                                        CBC_ACT_SIGMOID, CBC_ACT_GELU, CBC_ACT_SILU,
                                        CBC_ACT_SOFTPLUS, CBC_ACT_ELU, CBC_ACT_LEAKY_RELU};
    for (size_t q = 0; q < sizeof acts / sizeof acts[0]; q++) {
        char what[80];
        snprintf(what, sizeof what, "activation %s", cbc_act_name(acts[q]));
        hnew(&h, 3, 4, 4);
        add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = acts[q]}, 0);
        one_op(what, &h, true, 3.0f);
    }
    /* Softmax and LogSoftmax as the model's output */
    for (int q = 0; q < 2; q++) {
        hnew(&h, 2, 3, 3);
        int v = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 10}, 0);
        add(&h, (struct cbc_net_node){.op = CBC_NET_ACT,
                                      .act = q ? CBC_ACT_LOG_SOFTMAX : CBC_ACT_SOFTMAX}, v);
        one_op(q ? "Linear, LogSoftmax output" : "Linear, Softmax output", &h, false, 1.0f);
    }
    /* values read more than once: their gradients are added, in any order */
    {
        hnew(&h, 3, 4, 4);
        int a = add(&h, (struct cbc_net_node){.op = CBC_NET_AFFINE}, 0);
        int b = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        struct cbc_net_node s = {.op = CBC_NET_ADD, .n_in = 2};
        s.in[1] = b;
        add(&h, s, a);
        one_op("Add of two values (the input read twice)", &h, true, 1.0f);
    }
    {
        hnew(&h, 3, 4, 4);
        int a = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        struct cbc_net_node s = {.op = CBC_NET_ADD, .n_in = 2};
        s.in[1] = a;
        add(&h, s, a);
        one_op("Add of a value to itself", &h, true, 1.0f);
    }
    {
        hnew(&h, 3, 4, 4);
        int a = add(&h, (struct cbc_net_node){.op = CBC_NET_AFFINE}, 0);
        int b = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        struct cbc_net_node c = {.op = CBC_NET_CONCAT, .n_in = 2};
        c.in[1] = b;
        add(&h, c, a);
        one_op("Concat of two values", &h, true, 1.0f);
    }
    {
        hnew(&h, 3, 4, 4);
        int a = add(&h, (struct cbc_net_node){.op = CBC_NET_AFFINE}, 0);
        int b = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        struct cbc_net_node c = {.op = CBC_NET_CONCAT, .n_in = 3};
        c.in[1] = b, c.in[2] = a;
        add(&h, c, a);
        one_op("Concat reading one value twice (slots 0 and 2)", &h, true, 1.0f);
    }
    {
        hnew(&h, 3, 4, 4);
        int b = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        struct cbc_net_node c = {.op = CBC_NET_CONCAT, .n_in = 2};
        c.in[1] = b;
        add(&h, c, 0);
        one_op("Concat of the input and a value", &h, true, 1.0f);
    }
    {
        hnew(&h, 3, 4, 4);
        int v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        int f = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 6}, v);
        int f2 = add(&h, (struct cbc_net_node){.op = CBC_NET_LINEAR, .c = 6}, v);
        struct cbc_net_node s = {.op = CBC_NET_ADD, .n_in = 2};
        s.in[1] = f2;
        add(&h, s, f);
        one_op("two Linear layers reading one value", &h, true, 1.0f);
    }
    {
        hnew(&h, 4, 5, 5);
        int v = add(&h, (struct cbc_net_node){.op = CBC_NET_ACT, .act = CBC_ACT_TANH}, 0);
        int c = add(&h, (struct cbc_net_node){.op = CBC_NET_CONV, .c = 4, .kh = 3, .kw = 3,
                                              .pt = 1, .pb = 1, .pl = 1, .pr = 1}, v);
        struct cbc_net_node s = {.op = CBC_NET_ADD, .n_in = 2};
        s.in[1] = v;
        add(&h, s, c);
        one_op("a residual: Conv and Add reading one value", &h, true, 1.0f);
    }
}

int main(void)
{
    require_gpu();
    struct cbc_err err = {0};
    if (cbc_ig_gpu_open(0, NULL, NULL, &G, &err) != CBC_OK) {
        printf("FAIL: cannot open the engine: %s\n", err.msg);
        return 1;
    }
    printf("engine: %s\n", cbc_ig_gpu_describe(G));
    const char *dir = getenv("DATA");
    static const char *const models[][2] = {
        {"lenet.onnx", "lenet"}, {"resnet.onnx", "resnet"}, {"resnet.nofold.onnx", "resnet"},
        {"resnet.dynamo.onnx", "resnet"}, {"dwsep.onnx", "dwsep"}, {"dwsep.nofold.onnx", "dwsep"},
        {"zoo.onnx", "zoo"}, {"conv1d.onnx", "conv1d"}, {"viewconv.onnx", "viewconv"}};
    for (size_t i = 0; dir && i < sizeof models / sizeof models[0]; i++)
        exported(dir, models[i][0], models[i][1]);
    CHECK(dir != NULL, "DATA is not set");
    hand_built();
    operators();
    cbc_ig_gpu_close(G);
    return finish("gpu_net");
}
