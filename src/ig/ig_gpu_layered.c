/* ig_gpu_layered.c: the GPU engine's layered path, for models the fused
 * kernels do not take: a LayerNorm (before or after a layer's activation),
 * a Softmax or LogSoftmax output, an activation parameter other than
 * PyTorch's default (LeakyReLU(0.2), ELU(0.5)), a constant scale or shift
 * of a layer's output, or a residual of an earlier layer's output (before
 * the activation or after everything). A residual's gradient goes back
 * through an accumulator per source layer (dR), cleared per chunk, which
 * layer_backward adds to the layer's own dF/dh; a target per input picks
 * the output of each row and seeds its backward.
 *
 * Layer by layer: a GEMM stores the Linear output Z_l, layer_forward applies
 * the LayerNorm and activation over whole rows into A_l (keeping the
 * LayerNorm's statistics), and backward layer_backward turns dF/dA_l into
 * dF/dZ_l (the LayerNorm's and softmax's real Jacobians) before a GEMM
 * carries it to dF/dA_{l-1}. Layer 1 on the path is still u + alpha v (the
 * analytic path's step 1), and D and the endpoints are left exactly as the
 * fused path leaves them, so steps 1 and 4 are shared.
 *
 * Invariant: rows leave this path exactly as they leave the fused one (D
 * [n][H1] summed with the quadrature weights, F(x) and F(x') in d_ends), so
 * the two share every step but 2-3; tests/gpu/gpu_ig.c holds each layered
 * model to the CPU reference with the fused models' tolerance.
 */
#include "ig_gpu_int.h"

#include <string.h>

/* A layer's parameters for layer_forward / layer_backward; A holds every
 * layer's output (a residual's source). */
static struct cbc_k_layer layer_params(const struct cbc_ig_gpu_model *md, int l, int R,
                                       const CUdeviceptr *A)
{
    struct cbc_k_layer k = {0};
    k.R = R, k.H = md->size[l + 1];
    k.act = (int)md->act[l], k.act_param = md->act_param[l];
    k.norm = md->norm[l], k.eps = md->norm_eps[l];
    k.gamma = md->norm_w[l], k.beta = md->norm_b[l];
    k.mul = md->mul[l], k.add = md->add[l];
    k.residual = md->residual[l];
    if (k.residual) {
        k.rmul = md->rmul[l];
        k.src = A[md->res_from[l]];
    }
    return k;
}

static enum cbc_status launch_layer(struct cbc_ig_gpu *g, int kernel, struct cbc_k_layer *k,
                                    struct cbc_err *err)
{
    void *args[] = {k};
    return ig_launch(g, kernel, ig_blocks((size_t)k->R * 32, 256), 1, 1, 256, args, err);
}

/* Per-row device memory of the forward pass: Z_l, A_l and two statistics per layer. */
static size_t forward_row_bytes(const struct cbc_ig_gpu_model *md)
{
    size_t b = 0;
    for (int l = 0; l < md->L; l++)
        b += sizeof(float) * (2 * (size_t)md->size[l + 1] + 2);
    return b;
}

/* Per-row memory of the residuals' gradient accumulators: a layer's units
 * for each layer a later residual reads. */
static size_t residual_row_bytes(const struct cbc_ig_gpu_model *md)
{
    size_t b = 0;
    for (int l = 0; l < md->L; l++)
        b += md->res_source[l] ? sizeof(float) * (size_t)md->size[l + 1] : 0;
    return b;
}

/* Z, A and stats of every layer, carved from one buffer of rows rows. */
static void carve(const struct cbc_ig_gpu_model *md, CUdeviceptr cur, size_t rows, CUdeviceptr *Z,
                  CUdeviceptr *A, CUdeviceptr *stats)
{
    for (int l = 0; l < md->L; l++) {
        size_t h = sizeof(float) * rows * (size_t)md->size[l + 1];
        Z[l] = cur, A[l] = cur + h, stats[l] = cur + 2 * h;
        cur += 2 * h + sizeof(float) * 2 * rows;
    }
}

/* Forward through every layer; Z[0] is either computed here from `in`
 * (rows of F) or, with in == 0, by layer_forward from the path (u, v set in
 * first). fo[r] = the target output. */
static enum cbc_status forward(struct cbc_ig_gpu_model *md, CUdeviceptr in, int R,
                               const struct cbc_k_layer *first, const CUdeviceptr *Z,
                               const CUdeviceptr *A, const CUdeviceptr *stats, int target,
                               CUdeviceptr targets, CUdeviceptr fo, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    enum cbc_status st = CBC_OK;
    for (int l = 0; st == CBC_OK && l < md->L; l++) {
        if (l > 0 || in) {
            struct cbc_k_gemm p = {0};
            p.M = R, p.N = md->size[l + 1], p.K = md->size[l], p.nn = 0;
            p.A = l ? A[l - 1] : in, p.lda = md->size[l];
            p.W = md->w[l], p.ldw = md->size[l], p.C = Z[l], p.ldc = md->size[l + 1];
            p.bias = md->b[l], p.bias_rows = R;
            st = ig_gemm(g, &p, err);
        }
        struct cbc_k_layer k = layer_params(md, l, R, A);
        if (l == 0 && !in) {
            k.u = first->u, k.v = first->v, k.alpha = first->alpha;
            k.S = first->S, k.row0 = first->row0;
        }
        k.Z = Z[l], k.A = A[l], k.stats = stats[l];
        if (l == md->L - 1) {
            k.target = target, k.fo = fo;
            if (targets) /* a target per input: the rows' inputs from the path */
                k.targets = targets, k.S = first->S, k.row0 = first->row0;
        }
        if (st == CBC_OK)
            st = launch_layer(g, K_LAYER_FWD, &k, err);
    }
    return st;
}

enum cbc_status ig_layered_forward(struct cbc_ig_gpu_model *md, CUdeviceptr in, CUdeviceptr out,
                                   size_t rows, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    if (rows > INT32_MAX / 32)
        return ig_err_set(err, CBC_E_USAGE, "%zu rows in one forward pass; at most %d", rows,
                          INT32_MAX / 32);
    size_t need = rows * forward_row_bytes(md);
    if (need > md->fwd_bytes) {
        g->cu->StreamSynchronize(g->stream);
        ig_dfree(g, &md->fwd);
        md->fwd_bytes = 0;
        enum cbc_status st = ig_dalloc(g, &md->fwd, need, "forward activations", err);
        if (st != CBC_OK)
            return st;
        md->fwd_bytes = need;
    }
    CUdeviceptr Z[MAX_LAYERS], A[MAX_LAYERS], stats[MAX_LAYERS];
    carve(md, md->fwd, rows, Z, A, stats);
    return forward(md, in, (int)rows, NULL, Z, A, stats, md->target, 0, out, err);
}

enum cbc_status ig_layered_chunks(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                  CUdeviceptr d_u, CUdeviceptr d_v, CUdeviceptr d_al,
                                  CUdeviceptr d_wt, CUdeviceptr d_D, CUdeviceptr d_ends,
                                  CUdeviceptr d_targets, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const int L = md->L, H1 = md->size[1], n = (int)r->n, S = r->steps + 2;
    int hmax = 1;
    for (int l = 1; l <= L; l++)
        hmax = md->size[l] > hmax ? md->size[l] : hmax;
    /* per row: the forward pass, fo, the two delta buffers and the residuals'
     * accumulators */
    const size_t per_row = forward_row_bytes(md) + sizeof(float) * (1 + 2 * (size_t)hmax) +
                           residual_row_bytes(md);
    size_t budget = r->mem_budget ? r->mem_budget : g->default_budget;
    size_t nb = budget / ((size_t)S * per_row);
    nb = nb < 1 ? 1 : nb > (size_t)n ? (size_t)n : nb;
    if (nb * (size_t)S > INT32_MAX / 32)
        nb = (INT32_MAX / 32) / (size_t)S;
    const size_t rows_max = nb * (size_t)S;
    CUdeviceptr work = 0;
    enum cbc_status st = ig_ws(g, WS_WORK, rows_max * per_row, &work, "per-step work", err);
    if (st != CBC_OK)
        return st;
    CUdeviceptr Z[MAX_LAYERS], A[MAX_LAYERS], stats[MAX_LAYERS];
    carve(md, work, rows_max, Z, A, stats);
    const CUdeviceptr d_fo = work + rows_max * forward_row_bytes(md);
    const CUdeviceptr d_pa = d_fo + sizeof(float) * rows_max,
                      d_pb = d_pa + sizeof(float) * rows_max * (size_t)hmax;
    /* dR[l]: what later residuals send back to layer l's output */
    CUdeviceptr dR[MAX_LAYERS] = {0}, cur = d_pb + sizeof(float) * rows_max * (size_t)hmax;
    for (int l = 0; l < L; l++)
        if (md->res_source[l]) {
            dR[l] = cur;
            cur += sizeof(float) * rows_max * (size_t)md->size[l + 1];
        }
    for (size_t b0 = 0; st == CBC_OK && b0 < (size_t)n; b0 += nb) {
        int cb = (int)(b0 + nb <= (size_t)n ? nb : (size_t)n - b0);
        int R = cb * S, row0 = (int)b0 * S;
        struct cbc_k_layer first = {0};
        first.u = d_u, first.v = d_v, first.alpha = d_al, first.S = S, first.row0 = row0;
        st = forward(md, 0, R, &first, Z, A, stats, r->target, d_targets, d_fo, err);
        for (int l = 0; st == CBC_OK && l < L; l++) /* the accumulators start at 0 */
            if (dR[l])
                st = ig_drv(g, g->cu->MemsetD32Async(dR[l], 0, (size_t)R * md->size[l + 1],
                                                     g->stream),
                            "clearing the residuals' gradients", err);
        if (st == CBC_OK) {
            int nbb = cb, SS = S, bb = (int)b0;
            void *args[] = {(void *)&d_ends, (void *)&d_fo, &nbb, &SS, &bb};
            st = ig_launch(g, K_ENDPOINTS, ig_blocks((size_t)cb, 128), 1, 1, 128, args, err);
        }
        /* backward: dF/dA_l in pa (none for the last layer: one-hot at the
         * target), dF/dZ_l into pb, then dF/dA_{l-1} = dZ_l W_l into pa */
        for (int l = L - 1; st == CBC_OK && l >= 0; l--) {
            struct cbc_k_layer k = layer_params(md, l, R, A);
            k.Z = Z[l], k.stats = stats[l], k.target = r->target;
            k.dA = l == L - 1 ? 0 : d_pa, k.dZ = d_pb;
            k.dR_in = dR[l];
            if (k.residual)
                k.dR_out = dR[md->res_from[l]];
            if (l == L - 1 && d_targets)
                k.targets = d_targets, k.S = S, k.row0 = row0;
            if (l == 0)
                k.weight = d_wt, k.S = S, k.row0 = row0;
            st = launch_layer(g, K_LAYER_BWD, &k, err);
            if (st == CBC_OK && l > 0) {
                struct cbc_k_gemm p = {0};
                p.M = R, p.N = md->size[l], p.K = md->size[l + 1], p.nn = 1;
                p.A = d_pb, p.lda = md->size[l + 1], p.W = md->w[l], p.ldw = md->size[l];
                p.C = d_pa, p.ldc = md->size[l];
                st = ig_gemm(g, &p, err);
            }
        }
        if (st == CBC_OK) { /* D[b] = the weighted sum over the steps of dF/dZ_1 */
            int nbb = cb, SS = S, K = H1, bb = (int)b0;
            void *args[] = {(void *)&d_D, (void *)&d_pb, &nbb, &SS, &K, &bb};
            st = ig_launch(g, K_REDUCE_STEPS, ig_blocks((size_t)cb * H1, 256), 1, 1, 256, args,
                           err);
        }
    }
    return st;
}
