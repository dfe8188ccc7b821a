/* ig_gpu_fd.c: IG of a black box on the GPU by central differences. The
 * batched mode evaluates all 2F perturbations of a chunk of steps in one
 * call of the black box (chunks sized to the memory budget, which one step
 * must fit); the per-feature loop (CBC_IG_PER_FEATURE) evaluates one row
 * at a time and pulls each value to the host, and exists only as the
 * benchmark baseline the batched mode is measured against.
 */
#include "ig_gpu_int.h"

#include <stdlib.h>
#include <string.h>

enum cbc_status cbc_ig_gpu_fn(struct cbc_ig_gpu *g, cbc_ig_device_fn f, void *ctx, size_t F,
                              const struct cbc_ig_request *r, struct cbc_ig_output *out,
                              struct cbc_err *err)
{
    if (r->device_pointers)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "device pointers are taken by the analytic "
                           "mode only");
    enum cbc_status st = cbc_ig_validate_request(r, F, err);
    if (st != CBC_OK)
        return st;
    if (r->gradient == CBC_IG_ANALYTIC)
        return ig_err_set(err, CBC_E_USAGE, "a black box has no analytic gradient: use FD");
    const float *al = NULL, *wt = NULL;
    CUdeviceptr d_al = 0, d_wt = 0;
    st = ig_rule_on_device(g, r, &d_al, &d_wt, &al, &wt, err);
    if (st != CBC_OK)
        return st;
    const int S = r->steps;
    const bool naive = r->gradient == CBC_IG_PER_FEATURE;
    /* steps per black-box call: all 2F perturbations of each */
    size_t per_step = sizeof(float) * (2 * F * F + 2 * F + 2 * F);
    size_t budget = r->mem_budget ? r->mem_budget : g->default_budget;
    if (!naive && per_step > budget) {
        /* one step's 2F perturbed points must fit: never go past the budget */
        char need[32], have[32];
        ig_err_set(err, CBC_E_USAGE, "finite differences over %zu features need %s of GPU "
                    "memory per step; the budget is %s", F,
                    ig_format_size(per_step, need, sizeof need),
                    ig_format_size(budget, have, sizeof have));
        ig_err_hint(err, "raise --mem-budget, use the analytic gradient, or run on the CPU "
                     "(--device cpu), which works in blocks of features");
        return CBC_E_USAGE;
    }
    size_t sc = naive ? 1 : budget / per_step;
    if (sc < 1)
        sc = 1;
    if (sc > (size_t)S)
        sc = (size_t)S;
    size_t rows_cap = naive ? 2 : (sc * 2 * F > 2 ? sc * 2 * F : 2);
    CUdeviceptr x = 0, base = 0, h = 0, rows = 0, vals = 0, points = 0, denom = 0, acc = 0, attr = 0;
    float *xh = malloc(sizeof(float) * F), *bh = malloc(sizeof(float) * F),
          *hh = malloc(sizeof(float) * F);
    double *acc_h = naive ? calloc(F, sizeof(double)) : NULL;
    if (!xh || !bh || !hh || (naive && !acc_h))
        st = ig_err_oom(err);
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if (st == CBC_OK)                                                                          \
            st = (expr);                                                                           \
    } while (0)
    TRY(ig_ws(g, WS_X, sizeof(float) * F, &x, "the input", err));
    TRY(ig_ws(g, WS_BASE, sizeof(float) * F, &base, "the baseline", err));
    TRY(ig_ws(g, WS_FD_H, sizeof(float) * F, &h, "step sizes", err));
    TRY(ig_ws(g, WS_FD_ROWS, sizeof(float) * rows_cap * F, &rows, "perturbed points", err));
    TRY(ig_ws(g, WS_FD_VALS, sizeof(float) * rows_cap, &vals, "black-box values", err));
    TRY(ig_ws(g, WS_FD_POINTS, sizeof(float) * sc * F, &points, "path points", err));
    TRY(ig_ws(g, WS_FD_DENOM, sizeof(float) * sc * F, &denom, "step widths", err));
    TRY(ig_ws(g, WS_FD_ACC, sizeof(double) * F, &acc, "gradient sums", err));
    TRY(ig_ws(g, WS_ATTR, sizeof(float) * F, &attr, "attributions", err));
    int FF = (int)F;
    for (size_t in = 0; st == CBC_OK && in < r->n; in++) {
        for (size_t i = 0; i < F; i++) {
            xh[i] = r->x[in * F + i];
            bh[i] = cbc_ig_base_at(&r->baseline, in, F, i);
            hh[i] = cbc_ig_fd_step(xh[i], bh[i]);
        }
        TRY(ig_upload(g, x, xh, sizeof(float) * F, err));
        TRY(ig_upload(g, base, bh, sizeof(float) * F, err));
        TRY(ig_upload(g, h, hh, sizeof(float) * F, err));
        /* F(x) and F(x') */
        TRY(ig_drv(g, g->cu->MemcpyDtoDAsync(rows, x, sizeof(float) * F, g->stream), "copy", err));
        TRY(ig_drv(g, g->cu->MemcpyDtoDAsync(rows + sizeof(float) * F, base, sizeof(float) * F,
                                          g->stream), "copy", err));
        TRY(f(ctx, rows, vals, 2, F, g->stream, err));
        float ends[2] = {0, 0};
        TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(ends, vals, sizeof ends, g->stream), "copy", err));
        TRY(ig_drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
        out->f_x[in] = ends[0];
        out->f_base[in] = ends[1];
        if (naive) {
            /* one feature at a time: per step one point, per feature two
             * forward passes of one row, each scalar pulled to the host */
            for (size_t i = 0; i < F; i++)
                acc_h[i] = 0;
            CUdeviceptr point = points, plus = rows, minus = rows + sizeof(float) * F;
            for (int s = 0; st == CBC_OK && s < S; s++) {
                float a = al[s];
                void *ia[] = {&point, &base, &x, &a, &FF};
                TRY(ig_launch(g, K_INTERP, ig_blocks(F, 256), 1, 1, 256, ia, err));
                for (size_t i = 0; st == CBC_OK && i < F; i++) {
                    float fp = 0, fm = 0, hp = hh[i], hm = -hh[i];
                    int dim = (int)i;
                    void *pa[] = {&plus, &point, &FF, &dim, &hp};
                    TRY(ig_launch(g, K_PERTURB, ig_blocks(F, 256), 1, 1, 256, pa, err));
                    TRY(f(ctx, plus, vals, 1, F, g->stream, err));
                    TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(&fp, vals, sizeof fp, g->stream), "copy", err));
                    TRY(ig_drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
                    void *ma[] = {&minus, &point, &FF, &dim, &hm};
                    TRY(ig_launch(g, K_PERTURB, ig_blocks(F, 256), 1, 1, 256, ma, err));
                    TRY(f(ctx, minus, vals, 1, F, g->stream, err));
                    TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(&fm, vals, sizeof fm, g->stream), "copy", err));
                    TRY(ig_drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
                    acc_h[i] += (double)wt[s] * ((double)fp - fm) / (2.0 * hh[i]);
                }
            }
            for (size_t i = 0; i < F; i++)
                out->attr[in * F + i] = (float)(((double)xh[i] - bh[i]) * acc_h[i]);
            continue;
        }
        TRY(ig_drv(g, g->cu->MemsetD32Async(acc, 0, 2 * F, g->stream), "clear", err));
        for (size_t s0 = 0; st == CBC_OK && s0 < (size_t)S; s0 += sc) {
            int cs = (int)(s0 + sc <= (size_t)S ? sc : (size_t)S - s0);
            CUdeviceptr al0 = d_al + sizeof(float) * s0, wt0 = d_wt + sizeof(float) * s0;
            void *ia[] = {&points, &x, &base, &al0, &FF, &cs};
            TRY(ig_launch(g, K_INTERP_B, ig_blocks((size_t)cs * F, 256), 1, 1, 256, ia, err));
            void *pa[] = {&rows, &denom, &points, &h, &FF, &cs};
            TRY(ig_launch(g, K_PERTURB_B, ig_blocks((size_t)cs * 2 * F * F, 256), 1, 1, 256, pa, err));
            TRY(f(ctx, rows, vals, (size_t)cs * 2 * F, F, g->stream, err));
            void *aa[] = {&acc, &vals, &denom, &wt0, &FF, &cs};
            TRY(ig_launch(g, K_FD_ACC, ig_blocks(F, 256), 1, 1, 256, aa, err));
        }
        void *fa[] = {&attr, &acc, &x, &base, &FF};
        TRY(ig_launch(g, K_FD_FINISH, ig_blocks(F, 256), 1, 1, 256, fa, err));
        TRY(ig_drv(g, g->cu->MemcpyDtoHAsync(out->attr + in * F, attr, sizeof(float) * F, g->stream),
                "copying attributions", err));
        TRY(ig_drv(g, g->cu->StreamSynchronize(g->stream), "running the IG kernels", err));
    }
#undef TRY
    if (st == CBC_OK)
        cbc_ig_finish(out, r->n, F);
    else
        g->cu->StreamSynchronize(g->stream);
    free(xh);
    free(bh);
    free(hh);
    free(acc_h);
    return st;
}
