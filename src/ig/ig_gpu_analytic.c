/* ig_gpu_analytic.c: analytic IG of an L-layer MLP on the GPU, for n
 * inputs and S steps, and the CUDA-graph replay of small requests.
 *   1. u = W1 x' + b1 and v = W1 (x - x') for every input: one GEMM of 2n
 *      rows. Layer 1 on the path is then u + alpha v: it is never computed
 *      per step.
 *   2. Rows are (input, step), S + 2 per input: the quadrature points plus
 *      alpha = 0 and alpha = 1 with weight 0, which give F(x') and F(x) from
 *      the same forward pass. Chunks of inputs fit the memory budget.
 *   3. Forward through layers 2..L (GEMMs whose A-load applies the previous
 *      activation), the target output per row, then backward: the last
 *      layer's delta, GEMMs whose epilogue applies act'(z) and, at layer 1,
 *      the quadrature weight, so the sum over steps is a plain reduction.
 *   4. attr = (x - x') * (D . W1), D being the weighted sum of layer-1
 *      deltas: one GEMM for all inputs (sum_s W1^T d_s = W1^T sum_s d_s).
 *
 * A target per input (r->targets) goes to the device with the inputs; the
 * output kernel and the backward's seed take each row's (the fused path
 * then computes the last hidden layer's delta in the output kernel, as the
 * GEMM epilogue knows one target row only), and such requests are never
 * recorded as graphs.
 *
 * Invariant of the graph cache: a recording is replayed only for the same
 * key (model, shape, steps, rule, target, baseline, budget, device
 * pointers) and while no workspace buffer moved since it was recorded.
 */
#include "ig_gpu_int.h"

#include <stdlib.h>
#include <string.h>

/* Runs expr while the local status `st` is still CBC_OK. */
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if (st == CBC_OK)                                                                          \
            st = (expr);                                                                           \
    } while (0)

/* Where the small results land on the host: sums (double), then F(x) and
 * F(x') per input, then the attributions when they fit too; all in pinned
 * staging when it is large enough, so a recorded graph can copy into it. */
struct host_out {
    void *small;
    double *sums;
    float *ends, *attr;
    bool staged, attr_staged;
};

static enum cbc_status host_out_init(struct cbc_ig_gpu *g, const struct cbc_ig_request *r,
                                     size_t F, struct cbc_ig_output *out, struct host_out *h,
                                     struct cbc_err *err)
{
    const size_t n = r->n, small = sizeof(double) * n + sizeof(float) * 2 * n;
    h->staged = small <= STAGE_MAX;
    h->small = h->staged ? g->stage_out : malloc(small);
    if (!h->small)
        return ig_err_oom(err);
    h->sums = h->small;
    h->ends = (float *)(h->sums + n);
    h->attr_staged = !r->device_pointers && h->staged && small + sizeof(float) * n * F <= STAGE_MAX;
    h->attr = h->attr_staged ? h->ends + 2 * n : out->attr;
    return CBC_OK;
}

/* Steps 2-3 on the fused kernels: every chunk of inputs forward and
 * backward, D and the endpoints as ig_layered_chunks leaves them. */
static enum cbc_status fused_chunks(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                    CUdeviceptr d_u, CUdeviceptr d_v, CUdeviceptr d_al,
                                    CUdeviceptr d_wt, CUdeviceptr d_D, CUdeviceptr d_ends,
                                    CUdeviceptr d_targets, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const int L = md->L, H1 = md->size[1], t = r->target;
    const int n = (int)r->n, S = r->steps + 2;
    int hmax = 1;
    for (int l = 1; l < L; l++)
        hmax = md->size[l] > hmax ? md->size[l] : hmax;
    CUdeviceptr d_work = 0;
    enum cbc_status st = CBC_OK;
    size_t per_row = 2 * sizeof(float); /* fo, dfo */
    for (int l = 2; l < L; l++)
        per_row += sizeof(float) * md->size[l]; /* Z_l */
    per_row += 2 * sizeof(float) * (size_t)hmax; /* ping-pong deltas */
    size_t budget = r->mem_budget ? r->mem_budget : g->default_budget;
    size_t nb = budget / ((size_t)S * per_row);
    if (nb < 1)
        nb = 1;
    if (nb > (size_t)n)
        nb = (size_t)n;
    size_t rows_max = nb * (size_t)S;
    TRY(ig_ws(g, WS_WORK, rows_max * per_row, &d_work, "per-step work", err));
    CUdeviceptr d_fo = d_work, d_dfo = d_fo + sizeof(float) * rows_max,
                cur = d_dfo + sizeof(float) * rows_max;
    CUdeviceptr d_Z[MAX_LAYERS] = {0};
    for (int l = 2; l < L; l++) {
        d_Z[l] = cur;
        cur += sizeof(float) * rows_max * md->size[l];
    }
    CUdeviceptr d_pa = cur, d_pb = cur + sizeof(float) * rows_max * (size_t)hmax;
    /* per-tile sums over the steps of each input, when the layer-1 backward
     * GEMM makes them (an input's rows span at most this many tiles) */
    const int q_slots = (S + CBC_K_TC_ROWS - 1) / CBC_K_TC_ROWS + 1;
    CUdeviceptr d_Q = 0;
    if (L >= 3)
        TRY(ig_ws(g, WS_STEPQ, sizeof(float) * nb * (size_t)q_slots * H1, &d_Q, "per-tile step sums",
               err));

    /* Before an identity output, act'(zo) is 1, so the last hidden layer's
     * delta is elementwise: its forward GEMM writes it on the side, and the
     * output itself is needed only at the endpoints (F(x), F(x')). */
    const bool delta_in_gemm = L >= 3 && md->act[L - 1] == CBC_ACT_IDENTITY && !d_targets;
    /* (with a target per input the output kernel gives every row's delta: the
     * GEMM's epilogue knows one target row only) */
    for (size_t b0 = 0; st == CBC_OK && b0 < (size_t)n; b0 += nb) {
        int cb = (int)(b0 + nb <= (size_t)n ? nb : (size_t)n - b0);
        int R = cb * S, row0 = (int)b0 * S;
        CUdeviceptr pa = d_pa, pb = d_pb;
        /* forward: layers 2 .. L-1 */
        for (int l = 2; st == CBC_OK && l < L; l++) {
            struct cbc_k_gemm p = {0};
            p.M = R, p.N = md->size[l], p.K = md->size[l - 1], p.nn = 0;
            p.W = md->w[l - 1], p.ldw = md->size[l - 1], p.C = d_Z[l], p.ldc = md->size[l];
            p.bias = md->b[l - 1], p.bias_rows = R;
            if (l == 2) {
                p.pro = CBC_PRO_INTERP, p.pro_act = md->act[0];
                p.u = d_u, p.v = d_v, p.ldu = H1, p.alpha = d_al, p.S = S, p.row0 = row0;
            } else {
                p.pro = CBC_PRO_ACT, p.pro_act = md->act[l - 2];
                p.A = d_Z[l - 1], p.lda = md->size[l - 1];
            }
            if (l == L - 1 && delta_in_gemm) {
                p.epi = CBC_EPI_Z_DELTA, p.epi_act = md->act[l - 1];
                p.D = pa, p.ldd = md->size[l], p.S = S, p.row0 = row0;
                p.dwt = md->w[L - 1] + sizeof(float) * (size_t)t * md->size[L - 1];
            }
            st = ig_gemm(g, &p, err);
        }
        /* the target output of every row (of the endpoints only when the
         * GEMM gave the delta) and, from the same read of the last hidden
         * layer, that layer's delta (into pa) */
        if (st == CBC_OK) {
            struct cbc_k_output o = {0};
            o.R = delta_in_gemm ? 2 * cb : R, o.ends_only = delta_in_gemm;
            o.K = md->size[L - 1], o.S = S, o.row0 = row0, o.target = t;
            o.u = d_u, o.v = d_v, o.ldu = H1, o.alpha = d_al;
            o.wt = md->w[L - 1] + sizeof(float) * (size_t)t * md->size[L - 1];
            o.bt = md->last_bias[t], o.act = md->act[L - 1];
            o.fo = d_fo, o.dfo = d_dfo;
            o.targets = d_targets, o.W = md->w[L - 1], o.bias = md->b[L - 1];
            if (L > 1 && !delta_in_gemm)
                o.delta = pa, o.weight = d_wt;
            if (L == 1) {
                o.pro = -1;
            } else if (L == 2) {
                o.pro = CBC_PRO_INTERP, o.pro_act = md->act[0];
            } else {
                o.pro = CBC_PRO_ACT, o.pro_act = md->act[L - 2];
                o.A = d_Z[L - 1], o.lda = md->size[L - 1];
            }
            void *args[] = {&o};
            st = ig_launch(g, K_OUTPUT, ig_blocks((size_t)o.R * 32, 256), 1, 1, 256, args, err);
        }
        if (st == CBC_OK) {
            int nbb = cb, SS = S, bb = (int)b0;
            void *args[] = {&d_ends, &d_fo, &nbb, &SS, &bb};
            st = ig_launch(g, K_ENDPOINTS, ig_blocks((size_t)cb, 128), 1, 1, 128, args, err);
        }
        /* backward */
        if (st == CBC_OK && L == 1) {
            int nbb = cb, SS = S, K = H1, tt = t, bb = (int)b0;
            void *args[] = {&d_D, &d_dfo, &d_wt, &nbb, &SS, &K, &tt, &bb, &d_targets};
            st = ig_launch(g, K_REDUCE_OUTPUT, ig_blocks((size_t)cb * H1, 256), 1, 1, 256, args, err);
            continue;
        }
        bool summed = false;
        for (int l = L - 1; st == CBC_OK && l >= 2; l--) {
            struct cbc_k_gemm p = {0};
            p.M = R, p.N = md->size[l - 1], p.K = md->size[l], p.nn = 1;
            p.A = pa, p.lda = md->size[l], p.W = md->w[l - 1], p.ldw = md->size[l - 1];
            p.C = pb, p.ldc = md->size[l - 1];
            if (l - 1 >= 2) {
                p.epi = CBC_EPI_DACT, p.epi_act = md->act[l - 2], p.Z = d_Z[l - 1],
                p.ldz = md->size[l - 1];
            } else {
                p.epi = CBC_EPI_DACT_L1, p.epi_act = md->act[0];
                p.u = d_u, p.v = d_v, p.ldu = H1, p.alpha = d_al, p.weight = d_wt, p.S = S,
                p.row0 = row0;
                p.sum_steps = 1, p.sum_slots = q_slots, p.Q = d_Q;
            }
            st = ig_gemm(g, &p, err);
            summed = p.sum_steps;
            CUdeviceptr tmp = pa;
            pa = pb;
            pb = tmp;
        }
        if (st == CBC_OK && summed) {
            int nbb = cb, SS = S, K = H1, slots = q_slots, bb = (int)b0;
            void *args[] = {&d_D, &d_Q, &nbb, &SS, &K, &slots, &bb};
            st = ig_launch(g, K_REDUCE_STEP_PARTIALS, ig_blocks((size_t)cb * H1, 256), 1, 1, 256, args,
                        err);
        } else if (st == CBC_OK) {
            int nbb = cb, SS = S, K = H1, bb = (int)b0;
            void *args[] = {&d_D, &pa, &nbb, &SS, &K, &bb};
            st = ig_launch(g, K_REDUCE_STEPS, ig_blocks((size_t)cb * H1, 256), 1, 1, 256, args, err);
        }
    }
    return st;
}

/* Enqueues the whole analytic computation on the engine's stream, results
 * copied to h; the caller waits. */
static enum cbc_status enqueue_analytic(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                        CUdeviceptr d_al, CUdeviceptr d_wt,
                                        const struct host_out *h, CUdeviceptr *d_flag,
                                        struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const int F = md->size[0], H1 = md->size[1];
    const int n = (int)r->n;
    CUdeviceptr d_x = 0, d_base = 0, d_uvin = 0, d_uv = 0, d_D = 0, d_attr = 0, d_ends = 0;
    const size_t nF = (size_t)n * F;
    /* the GEMM tiles address layer 1 on the path (u, v: n x H1) with 32-bit offsets */
    if ((size_t)n * (size_t)H1 > UINT32_MAX)
        return ig_err_set(err, CBC_E_USAGE,
                           "%d inputs x %d units of layer 1 exceed the GPU engine's 2^32 elements "
                           "per call; pass the inputs in batches of at most %zu",
                           n, H1, (size_t)UINT32_MAX / (size_t)H1);
    enum cbc_status st = CBC_OK;
    TRY(ig_stage_inputs(g, r, (size_t)F, &d_x, &d_base, d_flag, err));
    TRY(ig_ws(g, WS_UVIN, sizeof(float) * 2 * nF, &d_uvin, "path inputs", err));
    TRY(ig_ws(g, WS_UV, sizeof(float) * 2 * (size_t)n * H1, &d_uv, "layer 1 on the path", err));
    TRY(ig_ws(g, WS_D, sizeof(float) * (size_t)n * H1, &d_D, "summed deltas", err));
    TRY(ig_ws(g, WS_ENDS, sizeof(float) * 2 * (size_t)n, &d_ends, "F(x) and F(x')", err));
    if (r->device_pointers)
        d_attr = (CUdeviceptr)(uintptr_t)h->attr; /* out->attr, on the device */
    else
        TRY(ig_ws(g, WS_ATTR, sizeof(float) * nF, &d_attr, "attributions", err));
    CUdeviceptr d_targets = 0; /* a target per input (a host array) */
    if (r->targets) {
        TRY(ig_ws(g, WS_TARGETS, sizeof(int) * (size_t)n, &d_targets, "targets", err));
        TRY(ig_upload(g, d_targets, r->targets, sizeof(int) * (size_t)n, err));
    }
    struct cbc_k_base kb = ig_kbase(&r->baseline, d_base);

    /* 1. u and v. With one baseline for all inputs, u is computed once
     * (into the last of the n rows, so v follows it in the same GEMM) and
     * copied to the others. */
    const int nu = r->baseline.kind == CBC_IG_BASELINE_PER_INPUT ? n : 1;
    if (st == CBC_OK) {
        int nn = n, nnu = nu, FF = F;
        void *args[] = {&d_uvin, &d_x, &kb, &nn, &nnu, &FF};
        st = ig_launch(g, K_UV_INPUT, ig_blocks((size_t)(nu + n) * F, 256), 1, 1, 256, args, err);
    }
    if (st == CBC_OK) {
        struct cbc_k_gemm p = {0};
        p.M = nu + n, p.N = H1, p.K = F, p.nn = 0;
        p.A = d_uvin, p.lda = F, p.W = md->w[0], p.ldw = F, p.ldc = H1;
        p.C = d_uv + sizeof(float) * (size_t)(n - nu) * H1;
        p.bias = md->b[0], p.bias_rows = nu;
        st = ig_gemm(g, &p, err);
    }
    if (st == CBC_OK && nu < n) {
        int nn = n, K = H1;
        void *args[] = {&d_uv, &nn, &K};
        st = ig_launch(g, K_COPY_LAST_ROW, ig_blocks((size_t)(n - 1) * H1, 256), 1, 1, 256, args, err);
    }
    CUdeviceptr d_u = d_uv, d_v = d_uv + sizeof(float) * (size_t)n * H1;

    /* 2-3. chunks of inputs */
    if (md->layered)
        TRY(ig_layered_chunks(md, r, d_u, d_v, d_al, d_wt, d_D, d_ends, d_targets, err));
    else
        TRY(fused_chunks(md, r, d_u, d_v, d_al, d_wt, d_D, d_ends, d_targets, err));
    /* 4. attributions */
    if (st == CBC_OK) {
        struct cbc_k_gemm p = {0};
        p.M = n, p.N = F, p.K = H1, p.nn = 1;
        p.A = d_D, p.lda = H1, p.W = md->w[0], p.ldw = F, p.C = d_attr, p.ldc = F;
        p.epi = CBC_EPI_MUL_DIFF, p.x = d_x, p.base = kb;
        st = ig_gemm(g, &p, err);
    }
    /* F(x), F(x') and the sums come back together; the attributions too
     * unless they stay on the device */
    CUdeviceptr d_sums = 0;
    TRY(ig_ws(g, WS_SUMS, sizeof(double) * (size_t)n, &d_sums, "sums", err));
    if (st == CBC_OK) {
        int nn = n, FF = F;
        void *args[] = {&d_attr, &d_sums, &nn, &FF};
        st = ig_launch(g, K_ROW_SUMS, ig_blocks((size_t)n * 32, 256), 1, 1, 256, args, err);
    }
    if (!r->device_pointers)
        TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(h->attr, d_attr, sizeof(float) * nF, g->stream),
                "copying attributions", err));
    TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(h->sums, d_sums, sizeof(double) * (size_t)n, g->stream),
            "copying sums", err));
    TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(h->ends, d_ends, sizeof(float) * 2 * (size_t)n, g->stream),
            "copying F(x)", err));
    return st;
}

/* Small requests are launch-bound (a dozen kernels of a few microseconds),
 * so the second time the same request shape comes, its launches are
 * recorded as a CUDA graph and later calls replay it with one launch. Only
 * requests whose every host transfer goes through pinned staging qualify
 * (inputs on the host up to STAGE_MAX, or device pointers), and the key
 * holds everything baked into the recorded launches. */
enum { G_PLAIN, G_CAPTURE, G_REPLAY };

static int graph_mode(struct cbc_ig_gpu *g, const struct cbc_ig_gpu_model *md,
                      const struct cbc_ig_request *r, const struct host_out *h)
{
    const struct ig_cuda *cu = g->cu;
    if (!cu->StreamBeginCapture || !cu->StreamEndCapture || !cu->GraphInstantiateWithFlags ||
        !cu->GraphLaunch || !cu->GraphDestroy || !cu->GraphExecDestroy || g->graphs_off ||
        !h->staged || r->targets ||
        (!r->device_pointers && !h->attr_staged) ||
        (r->baseline.kind != CBC_IG_BASELINE_ZEROS && r->baseline.kind != CBC_IG_BASELINE_SCALAR))
        return G_PLAIN;
    struct graph_key k;
    memset(&k, 0, sizeof k); /* padding too: keys are compared with memcmp */
    k.model = md->serial, k.n = (int)r->n, k.steps = r->steps, k.method = (int)r->method;
    k.target = r->target, k.base_kind = (int)r->baseline.kind;
    k.base_scalar = r->baseline.kind == CBC_IG_BASELINE_SCALAR ? r->baseline.scalar : 0.0f;
    k.budget = r->mem_budget;
    if (r->device_pointers) { /* the recorded launches name them */
        k.x = (uintptr_t)r->x;
        k.attr = (uintptr_t)h->attr;
    }
    if (g->have_gkey && memcmp(&k, &g->gkey, sizeof k) == 0) {
        if (g->gexec && g->ggen == g->ws_gen)
            return G_REPLAY;
        return G_CAPTURE; /* seen before, or its buffers moved since: record it */
    }
    ig_drop_graph(g);
    g->gkey = k;
    g->have_gkey = true;
    return G_PLAIN;
}

/* Records the request as a graph and launches it; when the driver refuses
 * anything, graphs are turned off for this engine and the request is
 * enqueued as usual (recording ran nothing). */
static enum cbc_status capture_and_launch(struct cbc_ig_gpu_model *md,
                                          const struct cbc_ig_request *r, CUdeviceptr d_al,
                                          CUdeviceptr d_wt, const struct host_out *h,
                                          CUdeviceptr *d_flag, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const unsigned gen = g->ws_gen;
    if (g->gexec)
        g->cu->GraphExecDestroy(g->gexec);
    g->gexec = NULL;
    if (g->cu->StreamBeginCapture(g->stream, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS) {
        struct cbc_err e = {0};
        enum cbc_status st = enqueue_analytic(md, r, d_al, d_wt, h, d_flag, &e);
        CUgraph graph = NULL;
        CUgraphExec exec = NULL;
        CUresult rc = g->cu->StreamEndCapture(g->stream, &graph);
        if (st == CBC_OK && rc == CUDA_SUCCESS && graph && g->ws_gen == gen)
            rc = g->cu->GraphInstantiateWithFlags(&exec, graph, 0);
        if (graph)
            g->cu->GraphDestroy(graph);
        if (st == CBC_OK && rc == CUDA_SUCCESS && exec) {
            g->gexec = exec;
            g->ggen = gen;
            return ig_drv(g, g->cu->GraphLaunch(exec, g->stream), "cuGraphLaunch", err);
        }
        if (exec)
            g->cu->GraphExecDestroy(exec);
    }
    g->graphs_off = true;
    *d_flag = 0;
    return enqueue_analytic(md, r, d_al, d_wt, h, d_flag, err);
}

enum cbc_status ig_analytic(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                struct cbc_ig_output *out, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const size_t F = (size_t)md->size[0], n = r->n;
    const float *al = NULL, *wt = NULL;
    CUdeviceptr d_al = 0, d_wt = 0, d_flag = 0;
    struct host_out h = {0};
    /* outside any recording: a new quadrature is uploaded and waited for */
    enum cbc_status st = ig_rule_on_device(g, r, &d_al, &d_wt, &al, &wt, err);
    if (st == CBC_OK)
        st = host_out_init(g, r, F, out, &h, err);
    if (st == CBC_OK) {
        switch (graph_mode(g, md, r, &h)) {
        case G_REPLAY:
            if (r->device_pointers) /* the recording checks them for NaN into this flag */
                d_flag = g->ws[WS_FLAG].p;
            else
                memcpy(g->stage_in, r->x, sizeof(float) * n * F);
            st = ig_drv(g, g->cu->GraphLaunch(g->gexec, g->stream), "cuGraphLaunch", err);
            break;
        case G_CAPTURE: st = capture_and_launch(md, r, d_al, d_wt, &h, &d_flag, err); break;
        default: st = enqueue_analytic(md, r, d_al, d_wt, &h, &d_flag, err); break;
        }
    }
    if (st == CBC_OK)
        st = ig_finish_stream(g, d_flag, err);
    else
        g->cu->StreamSynchronize(g->stream);
    if (st == CBC_OK) {
        if (h.attr_staged)
            memcpy(out->attr, h.attr, sizeof(float) * n * F);
        for (size_t b = 0; b < n; b++) {
            out->f_x[b] = h.ends[2 * b];
            out->f_base[b] = h.ends[2 * b + 1];
            if (out->sum)
                out->sum[b] = h.sums[b];
            if (out->delta)
                out->delta[b] = h.sums[b] - (out->f_x[b] - out->f_base[b]);
        }
    }
    if (h.small && !h.staged)
        free(h.small);
    return st;
}
