/* ig_gpu_base.c: what every GPU path of the engine launches through: driver
 * results as errors, device memory and the grow-only workspace, uploads,
 * kernel launches, the GEMMs (FP32 FMA, or 3xTF32 tensor cores when the
 * precision is fast and the image is sm_80 or later; few-row GEMMs split K
 * and reduce in a fixed order, so results do not vary between runs), the
 * request's inputs and baseline on the device, and the end of a stream.
 * It calls no path of its own: ig_gpu.c (open, close, the MLP), the
 * analytic, finite-difference, layered and network paths all build on it,
 * so the engine's files form no circle.
 */
#include "ig_gpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
enum cbc_status ig_drv(const struct cbc_ig_gpu *g, CUresult rc, const char *what,
                           struct cbc_err *err)
{
    return rc == CUDA_SUCCESS ? CBC_OK : ig_cuda_fail(g->cu, rc, CBC_E_DRIVER, err, what);
}

enum cbc_status ig_dalloc(struct cbc_ig_gpu *g, CUdeviceptr *p, size_t bytes, const char *what,
                              struct cbc_err *err)
{
    *p = 0;
    CUresult rc = g->cu->MemAlloc(p, bytes ? bytes : 4);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    struct cbc_err e = {0};
    ig_cuda_fail(g->cu, rc, CBC_E_DRIVER, &e, "cuMemAlloc");
    ig_err_set(err, CBC_E_DRIVER, "cannot allocate %zu bytes of GPU memory for %s: %s", bytes, what,
                e.msg);
    ig_err_hint(err, "lower the memory budget (--mem-budget) or the batch size");
    return CBC_E_DRIVER;
}

void ig_dfree(struct cbc_ig_gpu *g, CUdeviceptr *p)
{
    if (*p)
        g->cu->MemFree(*p);
    *p = 0;
}

/* A workspace buffer of at least `bytes`; its contents are not kept. */
enum cbc_status ig_ws(struct cbc_ig_gpu *g, int slot, size_t bytes, CUdeviceptr *p,
                          const char *what, struct cbc_err *err)
{
    if (g->ws[slot].cap < bytes) {
        ig_dfree(g, &g->ws[slot].p);
        g->ws[slot].cap = 0;
        g->ws_gen++;
        enum cbc_status st = ig_dalloc(g, &g->ws[slot].p, bytes, what, err);
        if (st != CBC_OK)
            return st;
        g->ws[slot].cap = bytes;
    }
    *p = g->ws[slot].p;
    return CBC_OK;
}

void ig_drop_graph(struct cbc_ig_gpu *g)
{
    if (g->gexec)
        g->cu->GraphExecDestroy(g->gexec);
    g->gexec = NULL;
    g->have_gkey = false;
}

/* Host to device, asynchronous on the engine's stream. */
enum cbc_status ig_upload(struct cbc_ig_gpu *g, CUdeviceptr d, const void *h, size_t bytes,
                              struct cbc_err *err)
{
    return ig_drv(g, g->cu->MemcpyHtoDAsync(d, h, bytes, g->stream), "cuMemcpyHtoDAsync", err);
}

enum cbc_status ig_launch(struct cbc_ig_gpu *g, int k, unsigned gx, unsigned gy, unsigned gz,
                              unsigned bx, void **args, struct cbc_err *err)
{
    if (gx == 0 || gy == 0 || gz == 0)
        return CBC_OK;
    CUresult rc = g->cu->LaunchKernel(g->k[k], gx, gy, gz, bx, 1, 1, ig_is_tc(k) ? CBC_K_TC_SMEM_BYTES : 0,
                                      g->stream, args, NULL);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    char what[96];
    snprintf(what, sizeof what, "launching kernel %d", k);
    return ig_cuda_fail(g->cu, rc, CBC_E_DRIVER, err, what);
}

static bool aligned16(uint64_t p, int ld)
{
    return p % 16 == 0 && ld % 4 == 0;
}

static enum cbc_status gemm_launch(struct cbc_ig_gpu *g, struct cbc_k_gemm *p, int k, unsigned gx,
                                   unsigned gy, int splits, unsigned bk, void **args,
                                   struct cbc_err *err);

/* Runs one GEMM: picks the kernel for its shape, and splits K (with a fixed-
 * order reduction that applies the epilogue) when too few tiles would leave
 * the GPU idle. */
enum cbc_status ig_gemm(struct cbc_ig_gpu *g, struct cbc_k_gemm *p, struct cbc_err *err)
{
    int fam = p->nn ? F_NN : p->pro == CBC_PRO_INTERP ? F_NT_INTERP : p->pro == CBC_PRO_ACT ? F_NT_ACT : F_NT_PLAIN;
    p->vec = aligned16(p->W, p->ldw) && (p->nn ? p->N % 4 == 0 : p->K % 4 == 0) &&
             (p->pro == CBC_PRO_INTERP ? aligned16(p->u, p->ldu) && aligned16(p->v, p->ldu)
                                       : aligned16(p->A, p->lda));
    p->splits = 1;
    p->kchunk = p->K;
    void *args[] = {p};
    if (p->M <= 8) {
        if (p->nn)
            return ig_launch(g, K_SKINNY_NN, ig_blocks((size_t)p->N, 32), 1, 1, 256, args, err);
        return ig_launch(g, K_SKINNY_NT, ig_blocks((size_t)p->N, 8), 1, 1, 256, args, err);
    }
    size_t t128 = (size_t)ig_blocks((size_t)p->M, 128) * ig_blocks((size_t)p->N, 128);
    /* sm_80+ images carry no 128-row SIMT tiles (see GEMM_S128) */
    int var = g->tensor_cores                                   ? (p->M >= 64 ? V_TC : V_S64)
              : !g->tc_capable && t128 >= (size_t)g->sms ? V_S128 /* trap in sm_80+ images */
                                                         : V_S64;
    unsigned bm = var == V_S64 ? 64 : 128, bk = var == V_S128 ? 8 : 16;
    unsigned gx = ig_blocks((size_t)p->N, bm), gy = ig_blocks((size_t)p->M, bm);
    size_t tiles = (size_t)gx * gy;
    int splits = 1;
    if (tiles < (size_t)g->sms) { /* few tiles: split K so the GPU fills, in one wave of
                                     two blocks per SM (a second, nearly empty wave would
                                     cost as much as the first) */
        splits = (int)(2 * (size_t)g->sms / tiles);
        int max_splits = p->K / (int)(4 * bk);
        if (splits > max_splits)
            splits = max_splits > 1 ? max_splits : 1;
    }
    int k = K_GEMM0 + fam * V_COUNT + var;
    return gemm_launch(g, p, k, gx, gy, splits, bk, args, err);
}

static enum cbc_status gemm_launch(struct cbc_ig_gpu *g, struct cbc_k_gemm *p, int k, unsigned gx,
                                   unsigned gy, int splits, unsigned bk, void **args,
                                   struct cbc_err *err)
{
    int var = (k - K_GEMM0) % V_COUNT;
    if (var != V_TC || splits > 1)
        p->sum_steps = 0; /* only the tensor-core tile sums steps in its epilogue */
    if (splits <= 1)
        return ig_launch(g, k, gx, gy, 1, 256, args, err);
    int chunk = (p->K + splits - 1) / splits;
    chunk = (chunk + (int)bk - 1) / (int)bk * (int)bk;
    splits = (p->K + chunk - 1) / chunk;
    CUdeviceptr part;
    enum cbc_status st = ig_ws(g, WS_SPLIT, sizeof(float) * (size_t)splits * p->M * p->N, &part,
                            "split-K partial sums", err);
    if (st != CBC_OK)
        return st;
    int epi = p->epi;
    p->epi = CBC_EPI_PARTIAL, p->splits = splits, p->kchunk = chunk, p->P = part;
    st = ig_launch(g, k, gx, gy, (unsigned)splits, 256, args, err);
    p->epi = epi;
    if (st == CBC_OK)
        st = ig_launch(g, K_REDUCE_GEMM, ig_blocks((size_t)p->M * p->N, 256), 1, 1, 256, args, err);
    return st;
}

/* ---- engine ------------------------------------------------------------ */

/* The request's inputs and baseline on the device: uploaded, or taken as
 * they are with device_pointers (and then checked for NaN and Inf there). */
enum cbc_status ig_stage_inputs(struct cbc_ig_gpu *g, const struct cbc_ig_request *r, size_t F,
                                    CUdeviceptr *d_x, CUdeviceptr *d_base, CUdeviceptr *d_flag,
                                    struct cbc_err *err)
{
    size_t nx = r->n * F, nb = ig_baseline_count(r, F);
    *d_flag = 0;
    enum cbc_status st = CBC_OK;
    if (r->device_pointers) {
        *d_x = (CUdeviceptr)(uintptr_t)r->x;
        *d_base = nb ? (CUdeviceptr)(uintptr_t)r->baseline.data : 0;
        st = ig_ws(g, WS_FLAG, sizeof(int), d_flag, "a flag", err);
        if (st == CBC_OK)
            st = ig_drv(g, g->cu->MemsetD32Async(*d_flag, 0, 1, g->stream), "clear", err);
        const struct {
            CUdeviceptr p;
            size_t n;
        } arrays[2] = {{*d_x, nx}, {*d_base, nb}};
        for (int i = 0; st == CBC_OK && i < 2; i++) {
            if (!arrays[i].n)
                continue;
            CUdeviceptr pp = arrays[i].p;
            size_t n = arrays[i].n;
            void *args[] = {&pp, &n, d_flag};
            st = ig_launch(g, K_CHECK_FINITE, ig_blocks(n, 256), 1, 1, 256, args, err);
        }
        return st;
    }
    st = ig_ws(g, WS_X, sizeof(float) * nx, d_x, "inputs", err);
    if (st == CBC_OK && sizeof(float) * nx <= STAGE_MAX) {
        memcpy(g->stage_in, r->x, sizeof(float) * nx);
        st = ig_upload(g, *d_x, g->stage_in, sizeof(float) * nx, err);
    } else if (st == CBC_OK) {
        st = ig_upload(g, *d_x, r->x, sizeof(float) * nx, err);
    }
    *d_base = 0;
    if (st == CBC_OK && nb) {
        st = ig_ws(g, WS_BASE, nb * sizeof(float), d_base, "the baseline", err);
        if (st == CBC_OK)
            st = ig_upload(g, *d_base, r->baseline.data, nb * sizeof(float), err);
    }
    return st;
}

/* The quadrature (with alpha = 0 and 1 appended, weight 0) on the device,
 * computed and uploaded only when it changes; *al / *wt point to the
 * engine's host copies (valid until the next call with another rule). */
enum cbc_status ig_rule_on_device(struct cbc_ig_gpu *g, const struct cbc_ig_request *r,
                                      CUdeviceptr *d_al, CUdeviceptr *d_wt, const float **al,
                                      const float **wt, struct cbc_err *err)
{
    const int S = r->steps + 2;
    enum cbc_status st = ig_ws(g, WS_AL, sizeof(float) * S, d_al, "alphas", err);
    if (st == CBC_OK)
        st = ig_ws(g, WS_WT, sizeof(float) * S, d_wt, "weights", err);
    if (st != CBC_OK)
        return st;
    if (g->rule_method != (int)r->method || g->rule_steps != r->steps) {
        double *a, *w;
        st = cbc_ig_rule(r, &a, &w, err);
        if (st != CBC_OK)
            return st;
        float *fa = calloc((size_t)S, sizeof *fa), *fw = calloc((size_t)S, sizeof *fw);
        if (!fa || !fw)
            st = ig_err_oom(err);
        for (int k = 0; st == CBC_OK && k < r->steps; k++) {
            fa[k] = (float)a[k];
            fw[k] = (float)w[k];
        }
        free(a);
        free(w);
        if (st == CBC_OK) {
            fa[r->steps] = 0.0f; /* weights of the two extra points stay 0 */
            fa[r->steps + 1] = 1.0f;
            st = ig_upload(g, *d_al, fa, sizeof(float) * S, err);
        }
        if (st == CBC_OK)
            st = ig_upload(g, *d_wt, fw, sizeof(float) * S, err);
        /* the host arrays are freed next time: wait for the copies */
        if (st == CBC_OK)
            st = ig_drv(g, g->cu->StreamSynchronize(g->stream), "uploading the quadrature", err);
        if (st != CBC_OK) {
            free(fa);
            free(fw);
            g->rule_steps = -1;
            return st;
        }
        free(g->rule_al);
        free(g->rule_wt);
        g->rule_al = fa, g->rule_wt = fw;
        g->rule_method = (int)r->method;
        g->rule_steps = r->steps;
    }
    *al = g->rule_al;
    *wt = g->rule_wt;
    return CBC_OK;
}

/* Waits for the stream and reports a non-finite device input. */
enum cbc_status ig_finish_stream(struct cbc_ig_gpu *g, CUdeviceptr d_flag, struct cbc_err *err)
{
    int bad = 0;
    enum cbc_status st = CBC_OK;
    if (d_flag)
        st = ig_drv(g, g->cu->MemcpyDtoHAsync(&bad, d_flag, sizeof bad, g->stream), "copy", err);
    if (st == CBC_OK)
        st = ig_drv(g, g->cu->StreamSynchronize(g->stream), "running the IG kernels", err);
    if (st == CBC_OK && bad)
        st = ig_err_set(err, CBC_E_NUMERIC,
                         "the inputs or the baseline on the device contain NaN or Inf; the "
                         "attributions were not produced");
    return st;
}

/* ---- the MLP as a black box ---------------------------------------------- */
