/* ig_gpu_net.c: Integrated Gradients of a convolutional network (struct
 * cbc_net) on the GPU.
 *
 * Rows are (input, step), S = steps + 2 per input: the quadrature points
 * and alpha = 0 and 1 (weight 0), which give F(x') and F(x) from the same
 * pass. A chunk of inputs, as many as the memory budget holds, goes
 * forward through every node at once (one kernel per node: direct 3x3 and
 * 5x5 convolutions of stride 1, implicit-GEMM ones for the rest, a strided
 * one's input gradient a launch per phase; pools, elementwise operators,
 * Linear layers as the engine's GEMMs), the target output of each row (its input's with a target
 * per input) seeds the backward pass, every node's input gradient is
 * stored, or added where a value has several readers (a residual's
 * source), and the input's gradient, weighted by the quadrature and summed
 * over the steps in order, times (x - x') is the attribution.
 *
 * Memory: a plan made at upload places every per-row buffer (each value's
 * forward data while something still reads it, forward or backward, and
 * its gradient while it is being built and used) at an offset of one
 * per-row arena, reusing space whose buffers are dead (greedy by size over
 * the buffers' lifetimes), so a row costs the peak, not the sum; a chunk is
 * rows_per_chunk times that; the plan checks itself for two live buffers
 * sharing a float before it is used.
 *
 * Invariants: the network is validated before upload (every index and
 * shape the kernels use follows from it); a chunk's rows times any value's
 * elements stay below 2^31 (the kernels' row arithmetic); calls on one
 * engine never overlap (its stream and workspace).
 */
#include "ig_gpu_int.h"
#include "ig_net_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_net_kernels;

struct cbc_ig_gpu_net {
    struct cbc_ig_gpu *g;
    struct cbc_net net;          /* nodes: a host copy (their arrays not kept) */
    struct cbc_net_node *nodes;
    CUdeviceptr *w, *b, *mul, *add, *tab_f, *tab_b; /* per node */
    CUdeviceptr *wt;             /* per direct convolution: its weights transposed, flipped */
    int **phase_k0;              /* per strided convolution: its phases' first backward columns */
    size_t *fwd_off, *grad_off;  /* per value: floats from the row arena's start */
    bool *grad_acc;              /* per node and input slot [n][CBC_NET_INPUTS_MAX]: add */
    size_t row_floats;           /* the arena, per row */
    size_t scratch_off;          /* a Linear's input gradient that must be added */
    size_t max_elems;
    int target;                  /* for the forward as a black box */
    CUdeviceptr fwd;             /* the black box's arena, grown on demand */
    size_t fwd_bytes;
};

static size_t elems_of(const struct cbc_net *n, int v)
{
    return v == 0 ? cbc_net_features(n)
                  : (size_t)n->nodes[v - 1].c * n->nodes[v - 1].h * n->nodes[v - 1].w;
}

/* ---- the kernels' module ------------------------------------------------ */

static const char *const nk_names[NK_COUNT - NK_POOL_FWD] = {
    "pool_fwd", "pool_bwd", "ew_fwd", "ew_bwd", "rows_fwd", "rows_bwd",
    "net_path", "net_seed", "net_attr"};

void ig_net_kernels_release(struct cbc_ig_gpu *g)
{
    cbc_module_unload(g->net_mod);
    cbc_bundle_close(g->net_bundle);
    g->net_mod = NULL;
    g->net_bundle = NULL;
}

static enum cbc_status net_kernels(struct cbc_ig_gpu *g, struct cbc_err *err)
{
    if (g->net_mod)
        return CBC_OK;
    enum cbc_status st = cbc_bundle_open_default(&cbc_bundle_ig_net_kernels, &g->net_bundle, err);
    if (st == CBC_OK)
        st = cbc_module_load(g->net_bundle, g->device, &g->opts, &g->net_mod, err);
    static const char *const tiles[3] = {"t16", "t32", "t64"};
    for (int k = 0; st == CBC_OK && k < NK_COUNT; k++) {
        char name[64];
        if (k < NK_DW0) /* conv_{fwd,bwd}_{tile}_{f,d}: dir, tile, acc */
            snprintf(name, sizeof name, "conv_%s_%s_%c", (k / 6) ? "bwd" : "fwd",
                     tiles[(k / 2) % 3], (k % 2) ? 'd' : 'f');
        else if (k < NK_DCONV0)
            snprintf(name, sizeof name, "dwconv_%s_%c", ((k - NK_DW0) / 2) ? "bwd" : "fwd",
                     ((k - NK_DW0) % 2) ? 'd' : 'f');
        else if (k < NK_POOL_FWD) /* dconv_k{3,5}_o{4,8}_{f,d}: taps, channels, acc */
            snprintf(name, sizeof name, "dconv_k%d_o%d_%c", (k - NK_DCONV0) / 4 ? 5 : 3,
                     (k - NK_DCONV0) / 2 % 2 ? 8 : 4, (k - NK_DCONV0) % 2 ? 'd' : 'f');
        else
            snprintf(name, sizeof name, "%s", nk_names[k - NK_POOL_FWD]);
        void *fn;
        st = cbc_module_function(g->net_mod, name, &fn, err);
        g->nk[k] = (CUfunction)fn;
    }
    if (st != CBC_OK)
        ig_net_kernels_release(g);
    return st;
}

static enum cbc_status nlaunch(struct cbc_ig_gpu *g, int k, size_t threads, unsigned gy,
                               unsigned gz, void *param, struct cbc_err *err)
{
    if (threads == 0)
        return CBC_OK;
    size_t blocks = (threads + 255) / 256;
    if (blocks > INT32_MAX)
        return ig_err_set(err, CBC_E_USAGE, "%zu threads for one network kernel", threads);
    unsigned gx = (unsigned)blocks;
    void *args[] = {param};
    CUresult rc = g->cu->LaunchKernel(g->nk[k], gx, gy, gz, 256, 1, 1, 0, g->stream, args, NULL);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    char what[64];
    snprintf(what, sizeof what, "launching network kernel %d", k);
    return ig_cuda_fail(g->cu, rc, CBC_E_DRIVER, err, what);
}

/* An elementwise kernel over n elements (NK_EW_FWD or NK_EW_BWD), four a
 * thread where the operator and its pointers allow (cbc_k_ew.vec4). */
static enum cbc_status ew_launch(struct cbc_ig_gpu *g, int k, struct cbc_k_ew *e, size_t n,
                                 struct cbc_err *err)
{
    const bool fwd = k == NK_EW_FWD;
    const uint64_t in2 = fwd ? (e->op == CBC_K_EW_ADD ? e->x2 : 0) : (e->op == CBC_K_EW_ACT ? e->x : 0);
    e->vec4 = n % 4 == 0 &&
              (fwd ? e->op == CBC_K_EW_ACT || e->op == CBC_K_EW_ADD
                   : e->op == CBC_K_EW_ACT || e->op == CBC_K_EW_COPY) &&
              (fwd ? e->x : e->gy) % 16 == 0 && in2 % 16 == 0 && (fwd ? e->y : e->gx) % 16 == 0;
    return nlaunch(g, k, e->vec4 ? n / 4 : n, 1, 1, e, err);
}

/* ---- the plan of the per-row arena ---------------------------------------- */

/* Whether a node's backward reads its input's forward data: the
 * activations' derivatives, MaxPool's argmax, LayerNorm's and softmax's
 * statistics (recomputed from the input). */
static bool bwd_reads_input(const struct cbc_net_node *d)
{
    return d->op == CBC_NET_MAXPOOL || d->op == CBC_NET_LAYERNORM || d->op == CBC_NET_ACT;
}

struct buf {
    size_t size, off;
    int born, dies; /* inclusive times */
    size_t *out;
};

static int cmp_buf(const void *a, const void *b)
{
    const struct buf *x = *(const struct buf *const *)a, *y = *(const struct buf *const *)b;
    return x->size != y->size ? (x->size < y->size ? 1 : -1) : (x->born > y->born) - (x->born < y->born);
}

/* Places every buffer at the lowest offset where it overlaps no buffer
 * already placed whose lifetime meets its own (largest first); returns the
 * arena's size, or SIZE_MAX without memory. */
static size_t place(struct buf *bufs, size_t n)
{
    struct buf **order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        order[i] = &bufs[i];
    qsort(order, n, sizeof *order, cmp_buf);
    size_t top = 0;
    for (size_t i = 0; i < n; i++) {
        struct buf *b = order[i];
        size_t off = 0;
        for (bool moved = true; moved;) { /* the lowest gap that fits */
            moved = false;
            for (size_t j = 0; j < i; j++) {
                const struct buf *o = order[j];
                bool meet = o->born <= b->dies && b->born <= o->dies;
                if (meet && o->off < off + b->size && off < o->off + o->size) {
                    off = o->off + o->size;
                    moved = true;
                }
            }
        }
        b->off = off;
        top = off + b->size > top ? off + b->size : top;
    }
    free(order);
    return top;
}

/* Times: node k runs forward at k + 1 and backward at 2N - k; the input is
 * made at 0, the seed at N, the attributions read the input's gradient at
 * 2N + 1. */
static enum cbc_status plan(struct cbc_ig_gpu_net *m, struct cbc_err *err)
{
    const struct cbc_net *net = &m->net;
    const int N = net->n_nodes, V = N + 1;
    struct buf *bufs = calloc(2 * (size_t)V, sizeof *bufs);
    int *last_fwd = malloc((size_t)V * sizeof *last_fwd), *last_cons = malloc((size_t)V * sizeof *last_cons);
    if (!bufs || !last_fwd || !last_cons) {
        free(bufs), free(last_fwd), free(last_cons);
        return ig_err_oom(err);
    }
    for (int v = 0; v < V; v++)
        last_fwd[v] = v, last_cons[v] = -1;
    last_fwd[N] = N; /* the seed reads the output */
    for (int k = 0; k < N; k++) {
        const struct cbc_net_node *d = &net->nodes[k];
        for (int i = 0; i < d->n_in; i++) {
            int v = d->in[i];
            int t = bwd_reads_input(d) && i == 0 ? 2 * N - k : k + 1;
            last_fwd[v] = t > last_fwd[v] ? t : last_fwd[v];
            last_cons[v] = k > last_cons[v] ? k : last_cons[v];
        }
    }
    for (int v = 0; v < V; v++) {
        size_t e = elems_of(net, v);
        m->max_elems = e > m->max_elems ? e : m->max_elems;
        bufs[2 * v] = (struct buf){e, 0, v == 0 ? 0 : v, last_fwd[v], &m->fwd_off[v]};
        /* the gradient: from its last reader's backward (the seed for the
         * output) to its producer's (the attributions for the input) */
        int born = v == N ? N : 2 * N - last_cons[v];
        int dies = v == 0 ? 2 * N + 1 : 2 * N - (v - 1);
        if (last_cons[v] < 0 && v != N) /* read by nothing: never needed */
            born = dies = -1, e = 0;
        bufs[2 * v + 1] = (struct buf){e, 0, born, dies, &m->grad_off[v]};
    }
    /* store or add: the first reader whose backward runs (the last in node
     * order; for one node, its last input slot naming the value) stores */
    bool *seen = calloc((size_t)V, sizeof *seen);
    if (!seen) {
        free(bufs), free(last_fwd), free(last_cons);
        return ig_err_oom(err);
    }
    size_t scratch = 0;
    for (int k = N - 1; k >= 0; k--) {
        const struct cbc_net_node *d = &net->nodes[k];
        for (int i = d->n_in - 1; i >= 0; i--) {
            int v = d->in[i];
            m->grad_acc[(size_t)k * CBC_NET_INPUTS_MAX + (size_t)i] = seen[v];
            seen[v] = true;
            if (d->op == CBC_NET_LINEAR && m->grad_acc[(size_t)k * CBC_NET_INPUTS_MAX + i])
                scratch = elems_of(net, v) > scratch ? elems_of(net, v) : scratch;
        }
    }
    free(seen);
    size_t top = place(bufs, 2 * (size_t)V);
    free(last_fwd), free(last_cons);
    if (top == SIZE_MAX) {
        free(bufs);
        return ig_err_oom(err);
    }
    /* the plan's invariant, checked: no two buffers alive at once share a float */
    for (size_t i = 0; i < 2 * (size_t)V; i++)
        for (size_t j = i + 1; j < 2 * (size_t)V; j++) {
            const struct buf *x = &bufs[i], *y = &bufs[j];
            if (x->size && y->size && x->born <= y->dies && y->born <= x->dies &&
                x->off < y->off + y->size && y->off < x->off + x->size) {
                free(bufs);
                return ig_err_set(err, CBC_E_USAGE, "the network's buffer plan overlaps "
                                  "buffers %zu and %zu (a bug in cubincache)", i, j);
            }
        }
    for (size_t i = 0; i < 2 * (size_t)V; i++)
        *bufs[i].out = bufs[i].off;
    free(bufs);
    m->scratch_off = top;
    m->row_floats = top + scratch + 1; /* + fo */
    return CBC_OK;
}

/* ---- upload ------------------------------------------------------------- */

static enum cbc_status put(struct cbc_ig_gpu *g, CUdeviceptr *d, const void *h, size_t bytes,
                           const char *what, struct cbc_err *err)
{
    if (!h || !bytes)
        return CBC_OK;
    enum cbc_status st = ig_dalloc(g, d, bytes, what, err);
    return st == CBC_OK ? ig_upload(g, *d, h, bytes, err) : st;
}

/* Whether a convolution runs as a direct one (struct cbc_k_dconv): one
 * group, stride and dilation 1, 3x3 or 5x5 taps. */
static bool direct_conv(const struct cbc_net_node *d)
{
    return d->op == CBC_NET_CONV && (d->groups <= 1) && d->sh <= 1 && d->sw <= 1 && d->dh <= 1 &&
           d->dw <= 1 && d->kh == d->kw && (d->kh == 3 || d->kh == 5);
}

/* A direct convolution's backward weights: wt[ic][oc][a][b] =
 * w[oc][ic][kh - 1 - a][kw - 1 - b], the input gradient as a convolution. */
static enum cbc_status conv_flipped(struct cbc_ig_gpu_net *m, int k, struct cbc_err *err)
{
    const struct cbc_net_node *d = &m->nodes[k];
    const size_t kk = (size_t)d->kh * d->kw, n = (size_t)d->c * d->ic * kk;
    float *wt = malloc(n * sizeof *wt);
    if (!wt)
        return ig_err_oom(err);
    for (size_t oc = 0; oc < (size_t)d->c; oc++)
        for (size_t ic = 0; ic < (size_t)d->ic; ic++)
            for (size_t q = 0; q < kk; q++)
                wt[(ic * d->c + oc) * kk + (kk - 1 - q)] = d->weight[(oc * d->ic + ic) * kk + q];
    enum cbc_status st = put(m->g, &m->wt[k], wt, n * sizeof *wt, "convolution weights", err);
    if (st == CBC_OK) /* the host array is freed next: wait for the copy */
        st = ig_drv(m->g, m->g->cu->StreamSynchronize(m->g->stream), "uploading weights", err);
    free(wt);
    return st;
}

/* The phases of a strided convolution's input gradient (struct
 * cbc_k_conv): sh sw of them, when that is at most 16; otherwise its
 * backward runs over the whole plane, skipping the taps that land between
 * output pixels. */
static int conv_phases(const struct cbc_net_node *d)
{
    const int sh = d->sh > 0 ? d->sh : 1, sw = d->sw > 0 ? d->sw : 1;
    return sh * sw > 1 && sh * sw <= 16 ? sh * sw : 1;
}

/* The column tables of a convolution (ig_net_kernels.h, struct cbc_k_conv):
 * the forward's, and the backward's, phase after phase, phase_k0[k] their
 * first columns (and the end). */
static enum cbc_status conv_tables(struct cbc_ig_gpu_net *m, int k, struct cbc_err *err)
{
    const struct cbc_net_node *d = &m->nodes[k];
    const int g = d->groups > 0 ? d->groups : 1, icg = d->ic / g, ocg = d->c / g;
    const int dh = d->dh > 0 ? d->dh : 1, dw = d->dw > 0 ? d->dw : 1;
    const int sh = d->sh > 0 ? d->sh : 1, sw = d->sw > 0 ? d->sw : 1, np = conv_phases(d);
    const size_t kf = (size_t)icg * d->kh * d->kw, kb = (size_t)ocg * d->kh * d->kw;
    int *tf = malloc(4 * kf * sizeof *tf), *tb = malloc(4 * kb * sizeof *tb);
    int *k0 = np > 1 ? malloc(((size_t)np + 1) * sizeof *k0) : NULL;
    enum cbc_status st = tf && tb && (np == 1 || k0) ? CBC_OK : ig_err_oom(err);
    for (size_t q = 0; st == CBC_OK && q < kf; q++) {
        int ic = (int)(q / ((size_t)d->kh * d->kw)), a = (int)(q / d->kw % d->kh),
            b = (int)(q % d->kw);
        tf[4 * q] = ic * d->ih * d->iw + a * dh * d->iw + b * dw;
        tf[4 * q + 1] = a * dh, tf[4 * q + 2] = b * dw, tf[4 * q + 3] = 0;
    }
    size_t n = 0;
    for (int ph = 0; st == CBC_OK && ph < np; ph++) {
        /* phase (py, px): the taps (a, b) with py + pt - a dh and px + pl -
         * b dw multiples of the strides; one phase: every tap */
        const int py = ph / sw, px = ph % sw;
        if (k0)
            k0[ph] = (int)n;
        for (size_t q = 0; q < kb; q++) {
            int oc = (int)(q / ((size_t)d->kh * d->kw)), a = (int)(q / d->kw % d->kh),
                b = (int)(q % d->kw);
            int cy = py + d->pt - a * dh, cx = px + d->pl - b * dw;
            if (np > 1 && (((cy % sh) + sh) % sh || ((cx % sw) + sw) % sw))
                continue;
            tb[4 * n] = oc * d->h * d->w;
            tb[4 * n + 1] = np > 1 ? -(cy / sh) : a * dh, tb[4 * n + 2] = np > 1 ? -(cx / sw) : b * dw;
            tb[4 * n + 3] = oc * icg * d->kh * d->kw + a * d->kw + b;
            n++;
        }
    }
    if (k0)
        k0[np] = (int)n;
    if (st == CBC_OK)
        st = put(m->g, &m->tab_f[k], tf, 4 * kf * sizeof *tf, "convolution tables", err);
    if (st == CBC_OK)
        st = put(m->g, &m->tab_b[k], tb, 4 * n * sizeof *tb, "convolution tables", err);
    if (st == CBC_OK) /* the host arrays are freed next: wait for the copies */
        st = ig_drv(m->g, m->g->cu->StreamSynchronize(m->g->stream), "uploading tables", err);
    free(tf), free(tb);
    if (st == CBC_OK)
        m->phase_k0[k] = k0;
    else
        free(k0);
    return st;
}

enum cbc_status cbc_ig_gpu_upload_net(struct cbc_ig_gpu *g, const struct cbc_net *net,
                                      struct cbc_ig_gpu_net **out, struct cbc_err *err)
{
    *out = NULL;
    enum cbc_status st = cbc_net_validate(net, err);
    if (st == CBC_OK)
        st = net_kernels(g, err);
    if (st != CBC_OK)
        return st;
    struct cbc_ig_gpu_net *m = calloc(1, sizeof *m);
    const size_t N = (size_t)net->n_nodes, V = N + 1;
    if (!m)
        return ig_err_oom(err);
    m->g = g;
    m->net = *net;
    m->nodes = malloc(N * sizeof *m->nodes);
    m->w = calloc(N, sizeof *m->w), m->b = calloc(N, sizeof *m->b);
    m->mul = calloc(N, sizeof *m->mul), m->add = calloc(N, sizeof *m->add);
    m->tab_f = calloc(N, sizeof *m->tab_f), m->tab_b = calloc(N, sizeof *m->tab_b);
    m->wt = calloc(N, sizeof *m->wt), m->phase_k0 = calloc(N, sizeof *m->phase_k0);
    m->fwd_off = calloc(V, sizeof *m->fwd_off), m->grad_off = calloc(V, sizeof *m->grad_off);
    m->grad_acc = calloc(N * CBC_NET_INPUTS_MAX, sizeof *m->grad_acc);
    if (!m->nodes || !m->w || !m->b || !m->mul || !m->add || !m->tab_f || !m->tab_b || !m->wt || !m->phase_k0 ||
        !m->fwd_off || !m->grad_off || !m->grad_acc) {
        cbc_ig_gpu_net_free(m);
        return ig_err_oom(err);
    }
    memcpy(m->nodes, net->nodes, N * sizeof *m->nodes);
    m->net.nodes = m->nodes;
    for (size_t k = 0; st == CBC_OK && k < N; k++) {
        const struct cbc_net_node *d = &net->nodes[k];
        size_t in_e = elems_of(net, d->in[0]), out_e = (size_t)d->c * d->h * d->w;
        size_t nw = d->op == CBC_NET_CONV     ? (size_t)d->c * (d->ic / (d->groups > 0 ? d->groups : 1)) * d->kh * d->kw
                    : d->op == CBC_NET_LINEAR ? (size_t)d->c * in_e
                    : d->op == CBC_NET_LAYERNORM ? out_e
                                                 : 0;
        size_t nbias = d->op == CBC_NET_LAYERNORM ? out_e : (size_t)d->c;
        if (nw)
            st = put(g, &m->w[k], d->weight, nw * sizeof(float), "network weights", err);
        if (st == CBC_OK && (d->op == CBC_NET_CONV || d->op == CBC_NET_LINEAR ||
                             d->op == CBC_NET_LAYERNORM))
            st = put(g, &m->b[k], d->bias, nbias * sizeof(float), "network biases", err);
        if (st == CBC_OK && d->op == CBC_NET_AFFINE) {
            st = put(g, &m->mul[k], d->mul, (size_t)d->c * sizeof(float), "scales", err);
            if (st == CBC_OK)
                st = put(g, &m->add[k], d->add, (size_t)d->c * sizeof(float), "shifts", err);
        }
        if (st == CBC_OK && direct_conv(d))
            st = conv_flipped(m, (int)k, err);
        else if (st == CBC_OK && d->op == CBC_NET_CONV)
            st = conv_tables(m, (int)k, err);
    }
    if (st == CBC_OK)
        st = plan(m, err);
    if (st == CBC_OK)
        st = ig_drv(g, g->cu->StreamSynchronize(g->stream), "uploading the network", err);
    if (st != CBC_OK) {
        cbc_ig_gpu_net_free(m);
        return st;
    }
    *out = m;
    return CBC_OK;
}

void cbc_ig_gpu_net_free(struct cbc_ig_gpu_net *m)
{
    if (!m)
        return;
    struct cbc_ig_gpu *g = m->g;
    g->cu->StreamSynchronize(g->stream);
    for (int k = 0; k < m->net.n_nodes; k++) {
        CUdeviceptr *ps[7] = {m->w ? &m->w[k] : NULL, m->b ? &m->b[k] : NULL,
                              m->mul ? &m->mul[k] : NULL, m->add ? &m->add[k] : NULL,
                              m->tab_f ? &m->tab_f[k] : NULL, m->tab_b ? &m->tab_b[k] : NULL,
                              m->wt ? &m->wt[k] : NULL};
        for (int i = 0; i < 7; i++)
            if (ps[i])
                ig_dfree(g, ps[i]);
        if (m->phase_k0)
            free(m->phase_k0[k]);
    }
    ig_dfree(g, &m->fwd);
    free(m->nodes), free(m->w), free(m->b), free(m->mul), free(m->add), free(m->tab_f);
    free(m->tab_b), free(m->wt), free(m->phase_k0), free(m->fwd_off), free(m->grad_off), free(m->grad_acc);
    free(m);
}

size_t cbc_ig_gpu_net_row_bytes(const struct cbc_ig_gpu_net *m)
{
    return m->row_floats * sizeof(float);
}

/* ---- one chunk: forward, backward ---------------------------------------- */

struct arena {
    CUdeviceptr base;
    size_t rows; /* the stride of a buffer: the chunk's row capacity */
};

static CUdeviceptr at(const struct arena *a, size_t off)
{
    return a->base + sizeof(float) * off * a->rows;
}

static void conv_params(const struct cbc_ig_gpu_net *m, int k, int R, struct cbc_k_conv *p)
{
    const struct cbc_net_node *d = &m->nodes[k];
    memset(p, 0, sizeof *p);
    p->R = R;
    p->IC = d->ic, p->IH = d->ih, p->IW = d->iw, p->OC = d->c, p->OH = d->h, p->OW = d->w;
    p->groups = d->groups > 0 ? d->groups : 1;
    p->ICg = d->ic / p->groups, p->OCg = d->c / p->groups;
    p->kh = d->kh, p->kw = d->kw;
    p->sh = d->sh > 0 ? d->sh : 1, p->sw = d->sw > 0 ? d->sw : 1;
    p->dh = d->dh > 0 ? d->dh : 1, p->dw = d->dw > 0 ? d->dw : 1;
    p->pt = d->pt, p->pl = d->pl;
    p->w = m->w[k], p->bias = m->b[k];
    p->psy = p->psx = 1, p->PHh = d->ih, p->PWw = d->iw; /* the backward's one phase */
}

/* A direct convolution (direct_conv) forward, or its input gradient as the
 * convolution of gy with the flipped weights; the tile as cbc_k_dconv says:
 * a thread's 4 columns and OCT channels, up to 8 column groups and 8
 * channel groups, rows (and whole images, for small planes) to 256 threads,
 * CC channels staged at a time, two chunks' buffers within 48 KiB of shared
 * memory. */
static enum cbc_status run_dconv(struct cbc_ig_gpu_net *m, int k, int R, bool bwd, CUdeviceptr x,
                                 CUdeviceptr y, bool acc, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = m->g;
    const struct cbc_net_node *d = &m->nodes[k];
    const int KS = d->kh;
    struct cbc_k_dconv p = {0};
    p.R = R, p.x = x, p.y = y, p.accumulate = acc;
    if (bwd) {
        p.C = d->c, p.IH = d->h, p.IW = d->w, p.OC = d->ic, p.OH = d->ih, p.OW = d->iw;
        p.pt = d->kh - 1 - d->pt, p.pl = d->kw - 1 - d->pl, p.w = m->wt[k];
    } else {
        p.C = d->ic, p.IH = d->ih, p.IW = d->iw, p.OC = d->c, p.OH = d->h, p.OW = d->w;
        p.pt = d->pt, p.pl = d->pl, p.w = m->w[k], p.bias = m->b[k];
    }
    const int oct = p.OC <= 4 ? 4 : 8;
    p.TX = (p.OW + 3) / 4 < 8 ? (p.OW + 3) / 4 : 8;
    p.NG = (p.OC + oct - 1) / oct < 8 ? (p.OC + oct - 1) / oct : 8;
    p.TH = 256 / (p.TX * p.NG) < p.OH ? 256 / (p.TX * p.NG) : p.OH;
    p.IPB = 1;
    if (p.TH == p.OH) {
        p.IPB = 256 / (p.TX * p.NG * p.TH);
        p.IPB = p.IPB < 1 ? 1 : p.IPB > R ? R : p.IPB;
    }
    const int RH = p.TH + KS - 1, RW = 4 * p.TX + KS - 1;
    p.SW = (RW + 3) / 4 * 4;
    /* two chunks' buffers within 48 KiB: fewer images a block, then fewer
     * channels a chunk (one image's tile of one channel always fits: TX TH
     * <= 256 leaves at most 260 rows of 8 floats, or 36 of 36, and the
     * weights at most 25 x 64: 29 KiB for both buffers) */
    const size_t wfloats = (size_t)KS * KS * p.NG * oct;
    while (p.IPB > 1 && 2 * ((size_t)p.IPB * RH * p.SW + wfloats) * sizeof(float) > 49152)
        p.IPB--;
    const size_t per_c = (size_t)p.IPB * RH * p.SW + wfloats;
    p.CC = p.C < 8 ? p.C : 8;
    while (p.CC > 1 && 2 * (size_t)p.CC * per_c * sizeof(float) > 49152)
        p.CC--;
    p.tiles_x = (p.OW + 4 * p.TX - 1) / (4 * p.TX);
    p.tiles_y = (p.OH + p.TH - 1) / p.TH;
    const size_t gx = (size_t)((R + p.IPB - 1) / p.IPB) * p.tiles_y * p.tiles_x;
    if (gx > INT32_MAX)
        return ig_err_set(err, CBC_E_USAGE, "a convolution of %d rows is too large for one launch", R);
    const unsigned threads = (unsigned)(p.TX * p.TH * p.IPB * p.NG + 31) / 32 * 32;
    const unsigned gy = (unsigned)((p.OC + p.NG * oct - 1) / (p.NG * oct));
    const int kn = NK_DCONV0 + 4 * (KS == 5) + 2 * (oct == 8) + (g->precise ? 1 : 0);
    void *args[] = {&p};
    CUresult rc = g->cu->LaunchKernel(g->nk[kn], (unsigned)gx, gy, 1, threads, 1, 1,
                                      (unsigned)(2 * p.CC * per_c * sizeof(float)), g->stream,
                                      args, NULL);
    return ig_drv(g, rc, "launching a convolution", err);
}

/* A convolution forward (bwd false) or its input gradient. */
static enum cbc_status run_conv(struct cbc_ig_gpu_net *m, int k, int R, bool bwd, CUdeviceptr x,
                                CUdeviceptr y, bool acc, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = m->g;
    if (direct_conv(&m->nodes[k]))
        return run_dconv(m, k, R, bwd, x, y, acc, err);
    struct cbc_k_conv p;
    conv_params(m, k, R, &p);
    p.x = x, p.y = y, p.accumulate = acc;
    const int dd = g->precise ? 1 : 0;
    if (p.ICg == 1 && p.OCg == 1) /* depthwise */
        return nlaunch(g, NK_DW0 + 2 * bwd + dd,
                       (size_t)R * p.OC * (bwd ? (size_t)p.IH * p.IW : (size_t)p.OH * p.OW), 1, 1,
                       &p, err);
    p.K = bwd ? p.OCg * p.kh * p.kw : p.ICg * p.kh * p.kw;
    p.tab = bwd ? m->tab_b[k] : m->tab_f[k];
    const int N = bwd ? p.ICg : p.OCg;
    const int tile = N <= 16 ? 0 : N <= 32 ? 1 : 2, BM = tile == 0 ? 256 : tile == 1 ? 128 : 64,
              BN = 16 << tile;
    const int *k0 = bwd ? m->phase_k0[k] : NULL;
    const int sh = p.sh, sw = p.sw; /* a phase's launch says 1 */
    enum cbc_status st = CBC_OK;
    for (int ph = 0; st == CBC_OK && ph < (k0 ? sh * sw : 1); ph++) {
        if (k0) { /* one phase, as a unit-stride convolution (struct cbc_k_conv) */
            p.phy = ph / sw, p.phx = ph % sw, p.psy = sh, p.psx = sw;
            p.PHh = (p.IH - p.phy + sh - 1) / sh, p.PWw = (p.IW - p.phx + sw - 1) / sw;
            p.K = k0[ph + 1] - k0[ph];
            p.tab = m->tab_b[k] + (CUdeviceptr)(4 * sizeof(int) * (size_t)k0[ph]);
            p.sh = p.sw = 1, p.pt = p.pl = 0;
        }
        const size_t M = (size_t)R * (bwd ? (size_t)p.PHh * p.PWw : (size_t)p.OH * p.OW);
        const size_t gx = (M + (size_t)BM - 1) / (size_t)BM;
        if (M == 0) /* a stride larger than the input */
            continue;
        if (gx > INT32_MAX)
            return ig_err_set(err, CBC_E_USAGE, "a convolution of %zu rows is too large for one launch", M);
        void *args[] = {&p};
        int kn = NK_CONV0 + 6 * bwd + 2 * tile + dd;
        CUresult rc = g->cu->LaunchKernel(g->nk[kn], (unsigned)gx, (unsigned)((N + BN - 1) / BN),
                                          (unsigned)p.groups, 256, 1, 1, 0, g->stream, args, NULL);
        st = ig_drv(g, rc, "launching a convolution", err);
    }
    return st;
}

static enum cbc_status run_pool(struct cbc_ig_gpu_net *m, int k, int R, bool bwd, CUdeviceptr x,
                                CUdeviceptr y, CUdeviceptr gy, CUdeviceptr gx, bool acc,
                                struct cbc_err *err)
{
    const struct cbc_net_node *d = &m->nodes[k];
    struct cbc_k_pool p = {0};
    p.R = R, p.C = d->ic, p.IH = d->ih, p.IW = d->iw, p.OH = d->h, p.OW = d->w;
    p.kh = d->kh, p.kw = d->kw, p.sh = d->sh > 0 ? d->sh : 1, p.sw = d->sw > 0 ? d->sw : 1;
    p.dh = d->dh > 0 ? d->dh : 1, p.dw = d->dw > 0 ? d->dw : 1, p.pt = d->pt, p.pl = d->pl;
    p.kind = d->op == CBC_NET_MAXPOOL ? CBC_K_POOL_MAX : CBC_K_POOL_AVG;
    p.count_include_pad = d->count_include_pad, p.accumulate = acc;
    p.x = x, p.y = y, p.gy = gy, p.gx = gx;
    size_t n = (size_t)R * p.C * (bwd ? (size_t)p.IH * p.IW : (size_t)p.OH * p.OW);
    return nlaunch(m->g, bwd ? NK_POOL_BWD : NK_POOL_FWD, n, 1, 1, &p, err);
}

static enum cbc_status forward_chunk(struct cbc_ig_gpu_net *m, const struct arena *a, int R,
                                     struct cbc_err *err)
{
    struct cbc_ig_gpu *g = m->g;
    enum cbc_status st = CBC_OK;
    for (int k = 0; st == CBC_OK && k < m->net.n_nodes; k++) {
        const struct cbc_net_node *d = &m->nodes[k];
        CUdeviceptr x = at(a, m->fwd_off[d->in[0]]), y = at(a, m->fwd_off[k + 1]);
        const size_t E = (size_t)d->c * d->h * d->w;
        struct cbc_k_ew e = {0};
        e.R = R, e.E = (int)E, e.x = x, e.y = y;
        switch (d->op) {
        case CBC_NET_CONV: st = run_conv(m, k, R, false, x, y, false, err); break;
        case CBC_NET_MAXPOOL:
        case CBC_NET_AVGPOOL: st = run_pool(m, k, R, false, x, y, 0, 0, false, err); break;
        case CBC_NET_GLOBAL_AVGPOOL:
            e.op = CBC_K_EW_GAP, e.C = d->ic, e.plane = d->ih * d->iw;
            st = nlaunch(g, NK_EW_FWD, (size_t)R * d->ic * 32, 1, 1, &e, err);
            break;
        case CBC_NET_LINEAR: {
            struct cbc_k_gemm p = {0};
            int in = (int)elems_of(&m->net, d->in[0]);
            p.M = R, p.N = d->c, p.K = in, p.nn = 0;
            p.A = x, p.lda = in, p.W = m->w[k], p.ldw = in, p.C = y, p.ldc = d->c;
            p.bias = m->b[k], p.bias_rows = R;
            st = ig_gemm(g, &p, err);
            break;
        }
        case CBC_NET_AFFINE:
            e.op = CBC_K_EW_AFFINE, e.C = d->c, e.plane = d->h * d->w;
            e.mul = m->mul[k], e.add = m->add[k];
            st = nlaunch(g, NK_EW_FWD, (size_t)R * E, 1, 1, &e, err);
            break;
        case CBC_NET_ACT:
            if (d->act == CBC_ACT_SOFTMAX || d->act == CBC_ACT_LOG_SOFTMAX) {
                struct cbc_k_rows r = {0};
                r.op = d->act == CBC_ACT_SOFTMAX ? CBC_K_ROW_SOFTMAX : CBC_K_ROW_LOG_SOFTMAX;
                r.R = R, r.E = (int)E, r.x = x, r.y = y;
                st = nlaunch(g, NK_ROWS_FWD, (size_t)R * 32, 1, 1, &r, err);
            } else {
                e.op = CBC_K_EW_ACT, e.act = (int)d->act;
                e.act_param = d->act_param != 0 ? d->act_param : (float)cbc_act_param_default(d->act);
                st = ew_launch(g, NK_EW_FWD, &e, (size_t)R * E, err);
            }
            break;
        case CBC_NET_ADD:
            e.op = CBC_K_EW_ADD, e.x2 = at(a, m->fwd_off[d->in[1]]);
            st = ew_launch(g, NK_EW_FWD, &e, (size_t)R * E, err);
            break;
        case CBC_NET_CONCAT: {
            size_t off = 0;
            for (int i = 0; st == CBC_OK && i < d->n_in; i++) {
                size_t ei = elems_of(&m->net, d->in[i]);
                struct cbc_k_ew c = {0};
                c.op = CBC_K_EW_COPY, c.R = R, c.E = (int)ei;
                c.x = at(a, m->fwd_off[d->in[i]]), c.ldx = (int)ei;
                c.y = y, c.ldy = (int)E, c.yoff = (int)off;
                st = nlaunch(g, NK_EW_FWD, (size_t)R * ei, 1, 1, &c, err);
                off += ei;
            }
            break;
        }
        case CBC_NET_LAYERNORM: {
            struct cbc_k_rows r = {0};
            r.op = CBC_K_ROW_LN, r.R = R, r.E = (int)E, r.x = x, r.y = y;
            r.eps = d->eps > 0 ? d->eps : 1e-5f, r.gamma = m->w[k], r.beta = m->b[k];
            st = nlaunch(g, NK_ROWS_FWD, (size_t)R * 32, 1, 1, &r, err);
            break;
        }
        }
    }
    return st;
}

static enum cbc_status backward_chunk(struct cbc_ig_gpu_net *m, const struct arena *a, int R,
                                      struct cbc_err *err)
{
    struct cbc_ig_gpu *g = m->g;
    enum cbc_status st = CBC_OK;
    for (int k = m->net.n_nodes - 1; st == CBC_OK && k >= 0; k--) {
        const struct cbc_net_node *d = &m->nodes[k];
        const bool *acc = &m->grad_acc[(size_t)k * CBC_NET_INPUTS_MAX];
        CUdeviceptr x = at(a, m->fwd_off[d->in[0]]), gx = at(a, m->grad_off[d->in[0]]),
                    gy = at(a, m->grad_off[k + 1]);
        const size_t E = (size_t)d->c * d->h * d->w, Ein = elems_of(&m->net, d->in[0]);
        struct cbc_k_ew e = {0};
        e.R = R, e.E = (int)E, e.x = x, e.gy = gy, e.gx = gx, e.accumulate = acc[0];
        switch (d->op) {
        case CBC_NET_CONV: st = run_conv(m, k, R, true, gy, gx, acc[0], err); break;
        case CBC_NET_MAXPOOL:
        case CBC_NET_AVGPOOL: st = run_pool(m, k, R, true, x, 0, gy, gx, acc[0], err); break;
        case CBC_NET_GLOBAL_AVGPOOL:
            e.op = CBC_K_EW_GAP, e.E = (int)Ein, e.plane = d->ih * d->iw;
            st = nlaunch(g, NK_EW_BWD, (size_t)R * Ein, 1, 1, &e, err);
            break;
        case CBC_NET_LINEAR: {
            struct cbc_k_gemm p = {0};
            CUdeviceptr dst = acc[0] ? at(a, m->scratch_off) : gx;
            p.M = R, p.N = (int)Ein, p.K = d->c, p.nn = 1;
            p.A = gy, p.lda = d->c, p.W = m->w[k], p.ldw = (int)Ein, p.C = dst, p.ldc = (int)Ein;
            st = ig_gemm(g, &p, err);
            if (st == CBC_OK && acc[0]) {
                e.op = CBC_K_EW_COPY, e.E = (int)Ein, e.gy = dst, e.accumulate = 1;
                st = nlaunch(g, NK_EW_BWD, (size_t)R * Ein, 1, 1, &e, err);
            }
            break;
        }
        case CBC_NET_AFFINE:
            e.op = CBC_K_EW_AFFINE, e.C = d->c, e.plane = d->h * d->w, e.mul = m->mul[k];
            st = nlaunch(g, NK_EW_BWD, (size_t)R * E, 1, 1, &e, err);
            break;
        case CBC_NET_ACT:
            if (d->act == CBC_ACT_SOFTMAX || d->act == CBC_ACT_LOG_SOFTMAX) {
                struct cbc_k_rows r = {0};
                r.op = d->act == CBC_ACT_SOFTMAX ? CBC_K_ROW_SOFTMAX : CBC_K_ROW_LOG_SOFTMAX;
                r.R = R, r.E = (int)E, r.x = x, r.gy = gy, r.gx = gx, r.accumulate = acc[0];
                st = nlaunch(g, NK_ROWS_BWD, (size_t)R * 32, 1, 1, &r, err);
            } else {
                e.op = CBC_K_EW_ACT, e.act = (int)d->act;
                e.act_param = d->act_param != 0 ? d->act_param : (float)cbc_act_param_default(d->act);
                st = ew_launch(g, NK_EW_BWD, &e, (size_t)R * E, err);
            }
            break;
        /* A node's slots go back last to first: plan() has the last slot
         * naming a value store its gradient and the earlier ones add to it
         * (Add of a value to itself, Concat naming one value twice). */
        case CBC_NET_ADD:
            for (int i = 1; st == CBC_OK && i >= 0; i--) {
                struct cbc_k_ew c = e;
                c.op = CBC_K_EW_COPY, c.gx = at(a, m->grad_off[d->in[i]]), c.accumulate = acc[i];
                st = ew_launch(g, NK_EW_BWD, &c, (size_t)R * E, err);
            }
            break;
        case CBC_NET_CONCAT: {
            size_t off = E; /* the slot's offset in the output: slots after it come first */
            for (int i = d->n_in - 1; st == CBC_OK && i >= 0; i--) {
                size_t ei = elems_of(&m->net, d->in[i]);
                off -= ei;
                struct cbc_k_ew c = {0};
                c.op = CBC_K_EW_COPY, c.R = R, c.E = (int)ei, c.accumulate = acc[i];
                c.x = gy, c.ldx = (int)E, c.xoff = (int)off;
                c.y = at(a, m->grad_off[d->in[i]]), c.ldy = (int)ei;
                st = nlaunch(g, NK_EW_FWD, (size_t)R * ei, 1, 1, &c, err);
            }
            break;
        }
        case CBC_NET_LAYERNORM: {
            struct cbc_k_rows r = {0};
            r.op = CBC_K_ROW_LN, r.R = R, r.E = (int)E, r.x = x, r.gy = gy, r.gx = gx;
            r.accumulate = acc[0];
            r.eps = d->eps > 0 ? d->eps : 1e-5f, r.gamma = m->w[k], r.beta = m->b[k];
            st = nlaunch(g, NK_ROWS_BWD, (size_t)R * 32, 1, 1, &r, err);
            break;
        }
        }
    }
    return st;
}

/* Rows per chunk: what the budget holds, within the kernels' 2^31 elements. */
static size_t chunk_inputs(const struct cbc_ig_gpu_net *m, size_t budget, size_t S, size_t n)
{
    size_t nb = budget / (S * cbc_ig_gpu_net_row_bytes(m));
    size_t cap = (size_t)INT32_MAX / (m->max_elems > 0 ? m->max_elems : 1) / S;
    nb = nb > cap ? cap : nb;
    return nb < 1 ? 1 : nb > n ? n : nb;
}

static enum cbc_status net_analytic(struct cbc_ig_gpu_net *m, const struct cbc_ig_request *r,
                                    struct cbc_ig_output *out, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = m->g;
    const size_t F = cbc_net_features(&m->net), n = r->n, outs = cbc_net_outputs(&m->net);
    const int S = r->steps + 2;
    CUdeviceptr d_al, d_wt, d_flag = 0, d_x, d_base, d_ends, d_attr, d_sums, d_targets = 0,
                                    work;
    const float *al, *wt;
    enum cbc_status st = ig_rule_on_device(g, r, &d_al, &d_wt, &al, &wt, err);
    if (st == CBC_OK)
        st = ig_stage_inputs(g, r, F, &d_x, &d_base, &d_flag, err);
    if (st == CBC_OK)
        st = ig_ws(g, WS_ENDS, sizeof(float) * 2 * n, &d_ends, "F(x) and F(x')", err);
    if (st == CBC_OK && r->device_pointers)
        d_attr = (CUdeviceptr)(uintptr_t)out->attr;
    else if (st == CBC_OK)
        st = ig_ws(g, WS_ATTR, sizeof(float) * n * F, &d_attr, "attributions", err);
    if (st == CBC_OK)
        st = ig_ws(g, WS_SUMS, sizeof(double) * n, &d_sums, "sums", err);
    if (st == CBC_OK && r->targets) {
        st = ig_ws(g, WS_TARGETS, sizeof(int) * n, &d_targets, "targets", err);
        if (st == CBC_OK)
            st = ig_upload(g, d_targets, r->targets, sizeof(int) * n, err);
    }
    const size_t budget = r->mem_budget ? r->mem_budget : g->default_budget;
    const size_t nb = chunk_inputs(m, budget, (size_t)S, n), rows_max = nb * (size_t)S;
    if (st == CBC_OK)
        st = ig_ws(g, WS_NET, rows_max * cbc_ig_gpu_net_row_bytes(m), &work, "per-step work", err);
    const struct arena a = {work, rows_max};
    struct cbc_k_base kb = ig_kbase(&r->baseline, d_base);
    for (size_t b0 = 0; st == CBC_OK && b0 < n; b0 += nb) {
        const int cb = (int)(b0 + nb <= n ? nb : n - b0), R = cb * S, row0 = (int)b0 * S;
        struct cbc_k_netio io = {0};
        io.R = R, io.F = (int)F, io.S = S, io.row0 = row0, io.outs = (int)outs;
        io.target = r->target, io.targets = d_targets;
        io.x = d_x, io.base = kb, io.alpha = d_al, io.weight = d_wt;
        io.rows = at(&a, m->fwd_off[0]);
        st = nlaunch(g, NK_PATH, (size_t)R * F, 1, 1, &io, err);
        if (st == CBC_OK)
            st = forward_chunk(m, &a, R, err);
        CUdeviceptr d_fo = at(&a, m->row_floats - 1);
        io.out = at(&a, m->fwd_off[m->net.n_nodes]), io.fo = d_fo;
        io.gout = at(&a, m->grad_off[m->net.n_nodes]);
        if (st == CBC_OK)
            st = nlaunch(g, NK_SEED, (size_t)R * outs, 1, 1, &io, err);
        if (st == CBC_OK) {
            int nbb = cb, SS = S, bb = (int)b0;
            void *args[] = {&d_ends, &d_fo, &nbb, &SS, &bb};
            st = ig_launch(g, K_ENDPOINTS, ig_blocks((size_t)cb, 128), 1, 1, 128, args, err);
        }
        if (st == CBC_OK)
            st = backward_chunk(m, &a, R, err);
        io.g0 = at(&a, m->grad_off[0]), io.attr = d_attr, io.nb = cb;
        if (st == CBC_OK)
            st = nlaunch(g, NK_ATTR, (size_t)cb * F, 1, 1, &io, err);
    }
    if (st == CBC_OK) {
        int nn = (int)n, FF = (int)F;
        void *args[] = {&d_attr, &d_sums, &nn, &FF};
        st = ig_launch(g, K_ROW_SUMS, ig_blocks(n * 32, 256), 1, 1, 256, args, err);
    }
    double *sums = malloc((n ? n : 1) * sizeof *sums);
    float *ends = malloc(2 * (n ? n : 1) * sizeof *ends);
    if (st == CBC_OK && (!sums || !ends))
        st = ig_err_oom(err);
    if (st == CBC_OK && !r->device_pointers)
        st = ig_drv(g, g->cu->MemcpyDtoHAsync(out->attr, d_attr, sizeof(float) * n * F, g->stream),
                    "copying attributions", err);
    if (st == CBC_OK)
        st = ig_drv(g, g->cu->MemcpyDtoHAsync(sums, d_sums, sizeof(double) * n, g->stream),
                    "copying sums", err);
    if (st == CBC_OK)
        st = ig_drv(g, g->cu->MemcpyDtoHAsync(ends, d_ends, sizeof(float) * 2 * n, g->stream),
                    "copying F(x)", err);
    if (st == CBC_OK)
        st = ig_finish_stream(g, d_flag, err);
    else
        g->cu->StreamSynchronize(g->stream);
    for (size_t b = 0; st == CBC_OK && b < n; b++) {
        out->f_x[b] = ends[2 * b];
        out->f_base[b] = ends[2 * b + 1];
        if (out->sum)
            out->sum[b] = sums[b];
        if (out->delta)
            out->delta[b] = sums[b] - (out->f_x[b] - out->f_base[b]);
    }
    free(sums), free(ends);
    return st;
}

/* The network's output `target` as a black box (central differences). */
static enum cbc_status net_forward_fn(void *ctx, uint64_t in, uint64_t outp, size_t rows,
                                      size_t F, void *stream, struct cbc_err *err)
{
    struct cbc_ig_gpu_net *m = ctx;
    struct cbc_ig_gpu *g = m->g;
    (void)stream;
    (void)F;
    const size_t outs = cbc_net_outputs(&m->net);
    enum cbc_status st = CBC_OK;
    for (size_t r0 = 0; st == CBC_OK && r0 < rows;) {
        size_t cr = chunk_inputs(m, g->default_budget, 1, rows - r0);
        size_t need = cr * cbc_ig_gpu_net_row_bytes(m);
        if (need > m->fwd_bytes) {
            g->cu->StreamSynchronize(g->stream);
            ig_dfree(g, &m->fwd);
            m->fwd_bytes = 0;
            if ((st = ig_dalloc(g, &m->fwd, need, "forward activations", err)) != CBC_OK)
                return st;
            m->fwd_bytes = need;
        }
        const struct arena a = {m->fwd, cr};
        struct cbc_k_ew c = {0};
        c.op = CBC_K_EW_COPY, c.R = (int)cr, c.E = (int)cbc_net_features(&m->net);
        c.x = in + sizeof(float) * r0 * (size_t)c.E, c.ldx = c.E;
        c.y = at(&a, m->fwd_off[0]), c.ldy = c.E;
        st = nlaunch(g, NK_EW_FWD, cr * (size_t)c.E, 1, 1, &c, err);
        if (st == CBC_OK)
            st = forward_chunk(m, &a, (int)cr, err);
        struct cbc_k_ew o = {0}; /* out[r] = y[r][target]: a column of the last value */
        o.op = CBC_K_EW_COPY, o.R = (int)cr, o.E = 1;
        o.x = at(&a, m->fwd_off[m->net.n_nodes]), o.ldx = (int)outs, o.xoff = m->target;
        o.y = outp + sizeof(float) * r0, o.ldy = 1;
        if (st == CBC_OK)
            st = nlaunch(g, NK_EW_FWD, cr, 1, 1, &o, err);
        r0 += cr;
    }
    return st;
}

enum cbc_status cbc_ig_gpu_net(struct cbc_ig_gpu_net *m, const struct cbc_ig_request *r,
                               struct cbc_ig_output *out, struct cbc_err *err)
{
    const int outs = (int)cbc_net_outputs(&m->net);
    const size_t F = cbc_net_features(&m->net);
    if (r->target < 0 || r->target >= outs)
        return ig_err_set(err, CBC_E_USAGE, "target %d: the model has outputs 0 to %d", r->target,
                          outs - 1);
    if (r->gradient == CBC_IG_PER_FEATURE)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "the per-feature loop is a benchmark of MLPs; "
                          "a network takes analytic or fd gradients");
    if (r->device_pointers && r->gradient != CBC_IG_ANALYTIC)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "device pointers are taken by the analytic "
                          "mode only");
    if (r->targets && r->gradient != CBC_IG_ANALYTIC)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "a target per input is taken by the analytic "
                          "mode only; cbc_ig_explain groups the inputs by target for the others");
    enum cbc_status st = r->targets ? cbc_ig_check_targets(r->targets, r->n, outs, err) : CBC_OK;
    if (st == CBC_OK)
        st = r->device_pointers ? (r->n && r->x ? CBC_OK : ig_err_set(err, CBC_E_USAGE, "no inputs"))
                                : cbc_ig_validate_request(r, F, err);
    if (st == CBC_OK && r->steps > 100000)
        st = ig_err_set(err, CBC_E_USAGE, "steps %d: expected 1 to 100000", r->steps);
    if (st == CBC_OK && r->n > (size_t)INT32_MAX / (size_t)(r->steps + 2))
        st = ig_err_set(err, CBC_E_USAGE, "%zu inputs of %d steps in one call: pass fewer",
                        r->n, r->steps);
    if (st != CBC_OK)
        return st;
    if (r->gradient == CBC_IG_ANALYTIC)
        return net_analytic(m, r, out, err);
    m->target = r->target;
    return cbc_ig_gpu_fn(m->g, net_forward_fn, m, F, r, out, err);
}

enum cbc_status cbc_ig_engine_gpu_net(void *net, const struct cbc_ig_request *r,
                                      struct cbc_ig_output *out, struct cbc_err *err)
{
    return cbc_ig_gpu_net(net, r, out, err);
}
