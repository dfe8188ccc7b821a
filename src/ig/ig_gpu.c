/* ig_gpu.c: the GPU engine (API in cubincache/ig.h, kernels in
 * kernels/ig_kernels.cu).
 *
 * Analytic IG of an L-layer MLP, for n inputs and S steps:
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
 * GEMMs run on tensor cores in 3xTF32 (FP32-level accuracy) when the loaded
 * image is sm_80 or later, else on FP32 FMA; few-row GEMMs (one input) split
 * K and reduce in a fixed order, so results do not vary between runs.
 * Central differences batch all 2F perturbations of a chunk of steps into
 * one call of the black box; the naive mode is the seed's loop, kept only to
 * measure it.
 *
 * Memory: device buffers live in a grow-only workspace owned by the engine
 * (a call of a size seen before allocates nothing); the quadrature is
 * uploaded when it changes; small transfers go through pinned staging.
 */
#include "ig_int.h"

#include "cudadrv.h"
#include "ig_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;

/* GEMM kernels: family (nt_plain, nt_act, nt_interp, nn) x variant. */
enum { F_NT_PLAIN, F_NT_ACT, F_NT_INTERP, F_NN, F_COUNT };
enum { V_S128, V_S64, V_TC, V_COUNT };

enum {
    K_INTERP,
    K_PERTURB,
    K_INTERP_B,
    K_PERTURB_B,
    K_FD_ACC,
    K_FD_FINISH,
    K_SKINNY_NT,
    K_SKINNY_NN,
    K_REDUCE_GEMM,
    K_OUTPUT,
    K_REDUCE_STEPS,
    K_REDUCE_STEP_PARTIALS,
    K_REDUCE_OUTPUT,
    K_UV_INPUT,
    K_COPY_LAST_ROW,
    K_ENDPOINTS,
    K_CHECK_FINITE,
    K_ROW_SUMS,
    K_GEMM0, /* F_COUNT * V_COUNT GEMMs follow */
    K_COUNT = K_GEMM0 + F_COUNT * V_COUNT
};

static const char *const kernel_names[K_GEMM0] = {
    "interpolate_input", "perturb_dimension", "interpolate_input_batched",
    "perturb_dimension_batched", "fd_accumulate", "fd_finish", "gemm_skinny_nt",
    "gemm_skinny_nn", "gemm_reduce", "mlp_output", "reduce_steps", "reduce_step_partials",
    "reduce_output", "build_uv_input", "copy_last_row", "gather_endpoints", "check_finite",
    "row_sums",
};
static const char *const family_names[F_COUNT] = {"nt_plain", "nt_act", "nt_interp", "nn"};
static const char *const variant_names[V_COUNT] = {"s128", "s64", "tc"};

/* Device buffers kept between calls (grow-only). */
enum {
    WS_AL, WS_WT, WS_X, WS_BASE, WS_UVIN, WS_UV, WS_D, WS_ATTR, WS_ENDS, WS_WORK, WS_SPLIT,
    WS_FLAG, WS_SUMS, WS_STEPQ, WS_FD_H, WS_FD_ROWS, WS_FD_VALS, WS_FD_POINTS, WS_FD_DENOM,
    WS_FD_ACC, WS_COUNT
};

#define STAGE_MAX (256u << 10) /* transfers up to this size go through pinned memory */
#define TC_SMEM_BYTES 69632    /* the tensor-core GEMMs' dynamic shared memory (ig_kernels.cu) */

struct cbc_ig_gpu {
    const struct cbc_cuda *cu;
    struct cbc_bundle *own_bundle;
    struct cbc_module *mod;
    CUstream stream;
    CUfunction k[K_COUNT];
    int sms;
    bool tensor_cores;
    size_t default_budget;
    char desc[400];
    struct {
        CUdeviceptr p;
        size_t cap;
    } ws[WS_COUNT];
    unsigned ws_gen; /* bumped whenever a workspace buffer moves */
    /* the quadrature now in WS_AL / WS_WT, and its host copy */
    int rule_method, rule_steps;
    float *rule_al, *rule_wt;
    /* pinned staging: in and out */
    void *stage_in, *stage_out;
    unsigned long next_serial; /* models, so a graph never outlives its model */
    /* The last small request, and its recorded launches once it came twice.
     * A replay is valid only while no workspace buffer moved (gen). */
    struct graph_key {
        unsigned long model;
        int n, steps, method, target, base_kind;
        float base_scalar;
        size_t budget;
        uintptr_t x, attr; /* device pointers, else 0 */
    } gkey;
    bool have_gkey;
    CUgraphExec gexec;
    unsigned ggen;
    bool graphs_off; /* CUBINCACHE_IG_NO_GRAPHS, or the driver refused to record once */
};

#define MAX_LAYERS 16

struct cbc_ig_gpu_model {
    struct cbc_ig_gpu *g;
    int L, size[MAX_LAYERS + 1];
    enum cbc_act act[MAX_LAYERS];
    CUdeviceptr w[MAX_LAYERS], b[MAX_LAYERS];
    float *last_bias; /* host copy: the output's bias is a kernel argument */
    unsigned long serial;
    int target;
    CUdeviceptr fwd; /* forward scratch, grown on demand */
    size_t fwd_bytes;
};

/* ---- small helpers ---------------------------------------------------- */

static enum cbc_status drv(const struct cbc_ig_gpu *g, CUresult rc, const char *what,
                           struct cbc_err *err)
{
    return rc == CUDA_SUCCESS ? CBC_OK : cbc_cuda_fail(g->cu, rc, CBC_E_DRIVER, err, what);
}

static enum cbc_status dalloc(struct cbc_ig_gpu *g, CUdeviceptr *p, size_t bytes, const char *what,
                              struct cbc_err *err)
{
    *p = 0;
    CUresult rc = g->cu->MemAlloc(p, bytes ? bytes : 4);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    struct cbc_err e = {0};
    cbc_cuda_fail(g->cu, rc, CBC_E_DRIVER, &e, "cuMemAlloc");
    cbc_err_set(err, CBC_E_DRIVER, "cannot allocate %zu bytes of GPU memory for %s: %s", bytes, what,
                e.msg);
    cbc_err_hint(err, "lower the memory budget (--mem-budget) or the batch size");
    return CBC_E_DRIVER;
}

static void dfree(struct cbc_ig_gpu *g, CUdeviceptr *p)
{
    if (*p)
        g->cu->MemFree(*p);
    *p = 0;
}

/* A workspace buffer of at least `bytes`; its contents are not kept. */
static enum cbc_status ws(struct cbc_ig_gpu *g, int slot, size_t bytes, CUdeviceptr *p,
                          const char *what, struct cbc_err *err)
{
    if (g->ws[slot].cap < bytes) {
        dfree(g, &g->ws[slot].p);
        g->ws[slot].cap = 0;
        g->ws_gen++;
        enum cbc_status st = dalloc(g, &g->ws[slot].p, bytes, what, err);
        if (st != CBC_OK)
            return st;
        g->ws[slot].cap = bytes;
    }
    *p = g->ws[slot].p;
    return CBC_OK;
}

static void drop_graph(struct cbc_ig_gpu *g)
{
    if (g->gexec)
        g->cu->GraphExecDestroy(g->gexec);
    g->gexec = NULL;
    g->have_gkey = false;
}

/* Host to device, asynchronous on the engine's stream. */
static enum cbc_status upload(struct cbc_ig_gpu *g, CUdeviceptr d, const void *h, size_t bytes,
                              struct cbc_err *err)
{
    return drv(g, g->cu->MemcpyHtoDAsync(d, h, bytes, g->stream), "cuMemcpyHtoDAsync", err);
}

static bool is_tc(int k)
{
    return k >= K_GEMM0 && (k - K_GEMM0) % V_COUNT == V_TC;
}

static enum cbc_status launch(struct cbc_ig_gpu *g, int k, unsigned gx, unsigned gy, unsigned gz,
                              unsigned bx, void **args, struct cbc_err *err)
{
    if (gx == 0 || gy == 0 || gz == 0)
        return CBC_OK;
    CUresult rc = g->cu->LaunchKernel(g->k[k], gx, gy, gz, bx, 1, 1, is_tc(k) ? TC_SMEM_BYTES : 0,
                                      g->stream, args, NULL);
    if (rc == CUDA_SUCCESS)
        return CBC_OK;
    char what[96];
    snprintf(what, sizeof what, "launching kernel %d", k);
    return cbc_cuda_fail(g->cu, rc, CBC_E_DRIVER, err, what);
}

static unsigned blocks(size_t n, unsigned per)
{
    return (unsigned)((n + per - 1) / per);
}

static bool aligned16(uint64_t p, int ld)
{
    return p % 16 == 0 && ld % 4 == 0;
}

/* Runs one GEMM: picks the kernel for its shape, and splits K (with a fixed-
 * order reduction that applies the epilogue) when too few tiles would leave
 * the GPU idle. */
static enum cbc_status gemm(struct cbc_ig_gpu *g, struct cbc_k_gemm *p, struct cbc_err *err)
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
            return launch(g, K_SKINNY_NN, blocks((size_t)p->N, 32), 1, 1, 256, args, err);
        return launch(g, K_SKINNY_NT, blocks((size_t)p->N, 8), 1, 1, 256, args, err);
    }
    size_t t128 = (size_t)blocks((size_t)p->M, 128) * blocks((size_t)p->N, 128);
    /* sm_80+ images carry no 128-row SIMT tiles (see GEMM_S128) */
    int var = g->tensor_cores ? (p->M >= 64 ? V_TC : V_S64)
                              : t128 >= (size_t)g->sms ? V_S128 : V_S64;
    unsigned bm = var == V_S64 ? 64 : 128, bk = var == V_S128 ? 8 : 16;
    unsigned gx = blocks((size_t)p->N, bm), gy = blocks((size_t)p->M, bm);
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
    if (var != V_TC || splits > 1)
        p->sum_steps = 0; /* only the tensor-core tile sums steps in its epilogue */
    if (splits <= 1)
        return launch(g, k, gx, gy, 1, 256, args, err);
    int chunk = (p->K + splits - 1) / splits;
    chunk = (chunk + (int)bk - 1) / (int)bk * (int)bk;
    splits = (p->K + chunk - 1) / chunk;
    CUdeviceptr part;
    enum cbc_status st = ws(g, WS_SPLIT, sizeof(float) * (size_t)splits * p->M * p->N, &part,
                            "split-K partial sums", err);
    if (st != CBC_OK)
        return st;
    int epi = p->epi;
    p->epi = CBC_EPI_PARTIAL, p->splits = splits, p->kchunk = chunk, p->P = part;
    st = launch(g, k, gx, gy, (unsigned)splits, 256, args, err);
    p->epi = epi;
    if (st == CBC_OK)
        st = launch(g, K_REDUCE_GEMM, blocks((size_t)p->M * p->N, 256), 1, 1, 256, args, err);
    return st;
}

/* ---- engine ------------------------------------------------------------ */

enum cbc_status cbc_ig_gpu_open(int device, struct cbc_bundle *bundle, const struct cbc_load_opts *o,
                                struct cbc_ig_gpu **out, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return cbc_err_oom(err);
    g->rule_steps = -1;
    g->graphs_off = getenv("CUBINCACHE_IG_NO_GRAPHS") != NULL;
    enum cbc_status st = cbc_cuda_get(&g->cu, err);
    if (st == CBC_OK && !bundle) {
        st = cbc_bundle_open_default(&cbc_bundle_ig_kernels, &g->own_bundle, err);
        bundle = g->own_bundle;
    }
    if (st == CBC_OK)
        st = cbc_module_load(bundle, device, o, &g->mod, err);
    for (int k = 0; st == CBC_OK && k < K_COUNT; k++) {
        char name[64];
        if (k < K_GEMM0)
            snprintf(name, sizeof name, "%s", kernel_names[k]);
        else
            snprintf(name, sizeof name, "gemm_%s_%s", variant_names[(k - K_GEMM0) % V_COUNT],
                     family_names[(k - K_GEMM0) / V_COUNT]);
        void *fn;
        st = cbc_module_function(g->mod, name, &fn, err);
        g->k[k] = (CUfunction)fn;
        if (st == CBC_OK && is_tc(k))
            st = drv(g, g->cu->FuncSetAttribute((CUfunction)fn,
                                                CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                TC_SMEM_BYTES),
                     "allowing the tensor-core GEMMs their shared memory", err);
        /* two blocks of 8 warps per SM (the kernels keep to 128 registers):
         * ask for the largest shared-memory carveout so both fit */
        if (st == CBC_OK && is_tc(k))
            g->cu->FuncSetAttribute((CUfunction)fn, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
                                    100);
    }
    struct cbc_device_info d;
    if (st == CBC_OK)
        st = cbc_device_query(device, &d, err);
    if (st == CBC_OK) {
        CUdevice dev;
        g->cu->DeviceGet(&dev, device);
        g->cu->DeviceGetAttribute(&g->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        if (g->sms < 1)
            g->sms = 1;
        /* tensor-core kernels exist in images built for sm_80 and later */
        const char *t = cbc_module_target(g->mod);
        const char *num = strchr(t, '_');
        g->tensor_cores = num && atoi(num + 1) >= 80;
        size_t free_b = 0, total = 0;
        g->default_budget = g->cu->MemGetInfo(&free_b, &total) == CUDA_SUCCESS && free_b
                                ? free_b / 4
                                : (size_t)1 << 30;
        st = drv(g, g->cu->StreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", err);
    }
    if (st == CBC_OK)
        st = drv(g, g->cu->MemAllocHost(&g->stage_in, STAGE_MAX), "cuMemAllocHost", err);
    if (st == CBC_OK)
        st = drv(g, g->cu->MemAllocHost(&g->stage_out, STAGE_MAX), "cuMemAllocHost", err);
    if (st == CBC_OK)
        snprintf(g->desc, sizeof g->desc, "GPU %d %s (compute capability %d.%d), kernels %s%s%s",
                 device, d.name, d.cc_major, d.cc_minor, cbc_module_target(g->mod),
                 cbc_module_jit(g->mod) ? " through PTX JIT" : "",
                 g->tensor_cores ? ", 3xTF32 tensor cores" : ", FP32 FMA");
    if (st != CBC_OK) {
        cbc_ig_gpu_close(g);
        return st;
    }
    *out = g;
    return CBC_OK;
}

void cbc_ig_gpu_close(struct cbc_ig_gpu *g)
{
    if (!g)
        return;
    if (g->cu) {
        if (g->stream)
            g->cu->StreamSynchronize(g->stream);
        drop_graph(g);
        for (int i = 0; i < WS_COUNT; i++)
            dfree(g, &g->ws[i].p);
        if (g->stage_in)
            g->cu->MemFreeHost(g->stage_in);
        if (g->stage_out)
            g->cu->MemFreeHost(g->stage_out);
        if (g->stream)
            g->cu->StreamDestroy(g->stream);
    }
    cbc_module_unload(g->mod);
    cbc_bundle_close(g->own_bundle);
    free(g->rule_al);
    free(g->rule_wt);
    free(g);
}

const char *cbc_ig_gpu_describe(const struct cbc_ig_gpu *g)
{
    return g->desc;
}

enum cbc_status cbc_ig_gpu_upload(struct cbc_ig_gpu *g, const struct cbc_mlp *m,
                                  struct cbc_ig_gpu_model **out, struct cbc_err *err)
{
    enum cbc_status st = cbc_mlp_validate(m, err);
    if (st != CBC_OK)
        return st;
    if (m->n_layers > MAX_LAYERS)
        return cbc_err_set(err, CBC_E_UNSUPPORTED, "the model has %d layers; the GPU engine takes %d",
                           m->n_layers, MAX_LAYERS);
    struct cbc_ig_gpu_model *md = calloc(1, sizeof *md);
    if (!md)
        return cbc_err_oom(err);
    md->g = g;
    md->serial = ++g->next_serial;
    md->L = m->n_layers;
    md->size[0] = m->layers[0].in;
    for (int l = 0; l < m->n_layers && st == CBC_OK; l++) {
        const struct cbc_mlp_layer *L = &m->layers[l];
        md->size[l + 1] = L->out;
        md->act[l] = L->act;
        size_t wb = sizeof(float) * (size_t)L->in * (size_t)L->out;
        st = dalloc(g, &md->w[l], wb, "weights", err);
        if (st == CBC_OK)
            st = upload(g, md->w[l], L->w, wb, err);
        if (st == CBC_OK && L->b) {
            st = dalloc(g, &md->b[l], sizeof(float) * (size_t)L->out, "biases", err);
            if (st == CBC_OK)
                st = upload(g, md->b[l], L->b, sizeof(float) * (size_t)L->out, err);
        }
    }
    const struct cbc_mlp_layer *last = &m->layers[m->n_layers - 1];
    md->last_bias = calloc((size_t)last->out, sizeof(float));
    if (st == CBC_OK && !md->last_bias)
        st = cbc_err_oom(err);
    if (st == CBC_OK && last->b)
        memcpy(md->last_bias, last->b, sizeof(float) * (size_t)last->out);
    if (st == CBC_OK)
        st = drv(g, g->cu->StreamSynchronize(g->stream), "uploading the model", err);
    if (st != CBC_OK) {
        cbc_ig_gpu_model_free(md);
        return st;
    }
    *out = md;
    return CBC_OK;
}

void cbc_ig_gpu_model_free(struct cbc_ig_gpu_model *m)
{
    if (!m)
        return;
    m->g->cu->StreamSynchronize(m->g->stream);
    if (m->g->have_gkey && m->g->gkey.model == m->serial)
        drop_graph(m->g);
    for (int l = 0; l < m->L; l++) {
        dfree(m->g, &m->w[l]);
        dfree(m->g, &m->b[l]);
    }
    dfree(m->g, &m->fwd);
    free(m->last_bias);
    free(m);
}

void cbc_ig_gpu_model_set_target(struct cbc_ig_gpu_model *m, int target)
{
    m->target = target;
}

static struct cbc_k_base kbase(const struct cbc_ig_baseline *b, CUdeviceptr data)
{
    return (struct cbc_k_base){(int)b->kind, b->scalar, data};
}

static size_t baseline_count(const struct cbc_ig_request *r, size_t F)
{
    return r->baseline.kind == CBC_IG_BASELINE_SHARED      ? F
           : r->baseline.kind == CBC_IG_BASELINE_PER_INPUT ? r->n * F
                                                           : 0;
}

/* The request's inputs and baseline on the device: uploaded, or taken as
 * they are with device_pointers (and then checked for NaN and Inf there). */
static enum cbc_status stage_inputs(struct cbc_ig_gpu *g, const struct cbc_ig_request *r, size_t F,
                                    CUdeviceptr *d_x, CUdeviceptr *d_base, CUdeviceptr *d_flag,
                                    struct cbc_err *err)
{
    size_t nx = r->n * F, nb = baseline_count(r, F);
    *d_flag = 0;
    enum cbc_status st = CBC_OK;
    if (r->device_pointers) {
        *d_x = (CUdeviceptr)(uintptr_t)r->x;
        *d_base = nb ? (CUdeviceptr)(uintptr_t)r->baseline.data : 0;
        st = ws(g, WS_FLAG, sizeof(int), d_flag, "a flag", err);
        if (st == CBC_OK)
            st = drv(g, g->cu->MemsetD32Async(*d_flag, 0, 1, g->stream), "clear", err);
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
            st = launch(g, K_CHECK_FINITE, blocks(n, 256), 1, 1, 256, args, err);
        }
        return st;
    }
    st = ws(g, WS_X, sizeof(float) * nx, d_x, "inputs", err);
    if (st == CBC_OK && sizeof(float) * nx <= STAGE_MAX) {
        memcpy(g->stage_in, r->x, sizeof(float) * nx);
        st = upload(g, *d_x, g->stage_in, sizeof(float) * nx, err);
    } else if (st == CBC_OK) {
        st = upload(g, *d_x, r->x, sizeof(float) * nx, err);
    }
    *d_base = 0;
    if (st == CBC_OK && nb) {
        st = ws(g, WS_BASE, nb * sizeof(float), d_base, "the baseline", err);
        if (st == CBC_OK)
            st = upload(g, *d_base, r->baseline.data, nb * sizeof(float), err);
    }
    return st;
}

/* The quadrature (with alpha = 0 and 1 appended, weight 0) on the device,
 * computed and uploaded only when it changes; *al / *wt point to the
 * engine's host copies (valid until the next call with another rule). */
static enum cbc_status rule_on_device(struct cbc_ig_gpu *g, const struct cbc_ig_request *r,
                                      CUdeviceptr *d_al, CUdeviceptr *d_wt, const float **al,
                                      const float **wt, struct cbc_err *err)
{
    const int S = r->steps + 2;
    enum cbc_status st = ws(g, WS_AL, sizeof(float) * S, d_al, "alphas", err);
    if (st == CBC_OK)
        st = ws(g, WS_WT, sizeof(float) * S, d_wt, "weights", err);
    if (st != CBC_OK)
        return st;
    if (g->rule_method != (int)r->method || g->rule_steps != r->steps) {
        double *a, *w;
        st = cbc_ig_rule(r, &a, &w, err);
        if (st != CBC_OK)
            return st;
        float *fa = calloc((size_t)S, sizeof *fa), *fw = calloc((size_t)S, sizeof *fw);
        if (!fa || !fw)
            st = cbc_err_oom(err);
        for (int k = 0; st == CBC_OK && k < r->steps; k++) {
            fa[k] = (float)a[k];
            fw[k] = (float)w[k];
        }
        free(a);
        free(w);
        if (st == CBC_OK) {
            fa[r->steps] = 0.0f; /* weights of the two extra points stay 0 */
            fa[r->steps + 1] = 1.0f;
            st = upload(g, *d_al, fa, sizeof(float) * S, err);
        }
        if (st == CBC_OK)
            st = upload(g, *d_wt, fw, sizeof(float) * S, err);
        /* the host arrays are freed next time: wait for the copies */
        if (st == CBC_OK)
            st = drv(g, g->cu->StreamSynchronize(g->stream), "uploading the quadrature", err);
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
static enum cbc_status finish_stream(struct cbc_ig_gpu *g, CUdeviceptr d_flag, struct cbc_err *err)
{
    int bad = 0;
    enum cbc_status st = CBC_OK;
    if (d_flag)
        st = drv(g, g->cu->MemcpyDtoHAsync(&bad, d_flag, sizeof bad, g->stream), "copy", err);
    if (st == CBC_OK)
        st = drv(g, g->cu->StreamSynchronize(g->stream), "running the IG kernels", err);
    if (st == CBC_OK && bad)
        st = cbc_err_set(err, CBC_E_NUMERIC,
                         "the inputs or the baseline on the device contain NaN or Inf; the "
                         "attributions were not produced");
    return st;
}

/* ---- analytic ------------------------------------------------------------ */

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
        return cbc_err_oom(err);
    h->sums = h->small;
    h->ends = (float *)(h->sums + n);
    h->attr_staged = !r->device_pointers && h->staged && small + sizeof(float) * n * F <= STAGE_MAX;
    h->attr = h->attr_staged ? h->ends + 2 * n : out->attr;
    return CBC_OK;
}

/* Enqueues the whole analytic computation on the engine's stream, results
 * copied to h; the caller waits. */
static enum cbc_status enqueue_analytic(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                        CUdeviceptr d_al, CUdeviceptr d_wt,
                                        const struct host_out *h, CUdeviceptr *d_flag,
                                        struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const int L = md->L, F = md->size[0], H1 = md->size[1], t = r->target;
    const int n = (int)r->n, S = r->steps + 2;
    int hmax = 1;
    for (int l = 1; l < L; l++)
        hmax = md->size[l] > hmax ? md->size[l] : hmax;
    CUdeviceptr d_x = 0, d_base = 0, d_uvin = 0, d_uv = 0, d_D = 0, d_attr = 0, d_ends = 0,
                d_work = 0;
    const size_t nF = (size_t)n * F;
    /* the GEMM tiles address layer 1 on the path (u, v: n x H1) with 32-bit offsets */
    if ((size_t)n * (size_t)H1 > UINT32_MAX)
        return cbc_err_set(err, CBC_E_USAGE,
                           "%d inputs x %d units of layer 1 exceed the GPU engine's 2^32 elements "
                           "per call; pass the inputs in batches of at most %zu",
                           n, H1, (size_t)UINT32_MAX / (size_t)H1);
    enum cbc_status st = CBC_OK;
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if (st == CBC_OK)                                                                          \
            st = (expr);                                                                           \
    } while (0)
    TRY(stage_inputs(g, r, (size_t)F, &d_x, &d_base, d_flag, err));
    TRY(ws(g, WS_UVIN, sizeof(float) * 2 * nF, &d_uvin, "path inputs", err));
    TRY(ws(g, WS_UV, sizeof(float) * 2 * (size_t)n * H1, &d_uv, "layer 1 on the path", err));
    TRY(ws(g, WS_D, sizeof(float) * (size_t)n * H1, &d_D, "summed deltas", err));
    TRY(ws(g, WS_ENDS, sizeof(float) * 2 * (size_t)n, &d_ends, "F(x) and F(x')", err));
    if (r->device_pointers)
        d_attr = (CUdeviceptr)(uintptr_t)h->attr; /* out->attr, on the device */
    else
        TRY(ws(g, WS_ATTR, sizeof(float) * nF, &d_attr, "attributions", err));
    struct cbc_k_base kb = kbase(&r->baseline, d_base);

    /* 1. u and v. With one baseline for all inputs, u is computed once
     * (into the last of the n rows, so v follows it in the same GEMM) and
     * copied to the others. */
    const int nu = r->baseline.kind == CBC_IG_BASELINE_PER_INPUT ? n : 1;
    if (st == CBC_OK) {
        int nn = n, nnu = nu, FF = F;
        void *args[] = {&d_uvin, &d_x, &kb, &nn, &nnu, &FF};
        st = launch(g, K_UV_INPUT, blocks((size_t)(nu + n) * F, 256), 1, 1, 256, args, err);
    }
    if (st == CBC_OK) {
        struct cbc_k_gemm p = {0};
        p.M = nu + n, p.N = H1, p.K = F, p.nn = 0;
        p.A = d_uvin, p.lda = F, p.W = md->w[0], p.ldw = F, p.ldc = H1;
        p.C = d_uv + sizeof(float) * (size_t)(n - nu) * H1;
        p.bias = md->b[0], p.bias_rows = nu;
        st = gemm(g, &p, err);
    }
    if (st == CBC_OK && nu < n) {
        int nn = n, K = H1;
        void *args[] = {&d_uv, &nn, &K};
        st = launch(g, K_COPY_LAST_ROW, blocks((size_t)(n - 1) * H1, 256), 1, 1, 256, args, err);
    }
    CUdeviceptr d_u = d_uv, d_v = d_uv + sizeof(float) * (size_t)n * H1;

    /* 2-3. chunks of inputs */
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
    TRY(ws(g, WS_WORK, rows_max * per_row, &d_work, "per-step work", err));
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
        TRY(ws(g, WS_STEPQ, sizeof(float) * nb * (size_t)q_slots * H1, &d_Q, "per-tile step sums",
               err));

    /* Before an identity output, act'(zo) is 1, so the last hidden layer's
     * delta is elementwise: its forward GEMM writes it on the side, and the
     * output itself is needed only at the endpoints (F(x), F(x')). */
    const bool delta_in_gemm = L >= 3 && md->act[L - 1] == CBC_ACT_IDENTITY;
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
            st = gemm(g, &p, err);
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
            st = launch(g, K_OUTPUT, blocks((size_t)o.R * 32, 256), 1, 1, 256, args, err);
        }
        if (st == CBC_OK) {
            int nbb = cb, SS = S, bb = (int)b0;
            void *args[] = {&d_ends, &d_fo, &nbb, &SS, &bb};
            st = launch(g, K_ENDPOINTS, blocks((size_t)cb, 128), 1, 1, 128, args, err);
        }
        /* backward */
        if (st == CBC_OK && L == 1) {
            int nbb = cb, SS = S, K = H1, tt = t, bb = (int)b0;
            void *args[] = {&d_D, &d_dfo, &d_wt, &nbb, &SS, &K, &tt, &bb};
            st = launch(g, K_REDUCE_OUTPUT, blocks((size_t)cb * H1, 256), 1, 1, 256, args, err);
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
            st = gemm(g, &p, err);
            summed = p.sum_steps;
            CUdeviceptr tmp = pa;
            pa = pb;
            pb = tmp;
        }
        if (st == CBC_OK && summed) {
            int nbb = cb, SS = S, K = H1, slots = q_slots, bb = (int)b0;
            void *args[] = {&d_D, &d_Q, &nbb, &SS, &K, &slots, &bb};
            st = launch(g, K_REDUCE_STEP_PARTIALS, blocks((size_t)cb * H1, 256), 1, 1, 256, args,
                        err);
        } else if (st == CBC_OK) {
            int nbb = cb, SS = S, K = H1, bb = (int)b0;
            void *args[] = {&d_D, &pa, &nbb, &SS, &K, &bb};
            st = launch(g, K_REDUCE_STEPS, blocks((size_t)cb * H1, 256), 1, 1, 256, args, err);
        }
    }
    /* 4. attributions */
    if (st == CBC_OK) {
        struct cbc_k_gemm p = {0};
        p.M = n, p.N = F, p.K = H1, p.nn = 1;
        p.A = d_D, p.lda = H1, p.W = md->w[0], p.ldw = F, p.C = d_attr, p.ldc = F;
        p.epi = CBC_EPI_MUL_DIFF, p.x = d_x, p.base = kb;
        st = gemm(g, &p, err);
    }
    /* F(x), F(x') and the sums come back together; the attributions too
     * unless they stay on the device */
    CUdeviceptr d_sums = 0;
    TRY(ws(g, WS_SUMS, sizeof(double) * (size_t)n, &d_sums, "sums", err));
    if (st == CBC_OK) {
        int nn = n, FF = F;
        void *args[] = {&d_attr, &d_sums, &nn, &FF};
        st = launch(g, K_ROW_SUMS, blocks((size_t)n * 32, 256), 1, 1, 256, args, err);
    }
    if (!r->device_pointers)
        TRY(drv(g, g->cu->MemcpyDtoHAsync(h->attr, d_attr, sizeof(float) * nF, g->stream),
                "copying attributions", err));
    TRY(drv(g, g->cu->MemcpyDtoHAsync(h->sums, d_sums, sizeof(double) * (size_t)n, g->stream),
            "copying sums", err));
    TRY(drv(g, g->cu->MemcpyDtoHAsync(h->ends, d_ends, sizeof(float) * 2 * (size_t)n, g->stream),
            "copying F(x)", err));
#undef TRY
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
    const struct cbc_cuda *cu = g->cu;
    if (!cu->StreamBeginCapture || !cu->StreamEndCapture || !cu->GraphInstantiateWithFlags ||
        !cu->GraphLaunch || !cu->GraphDestroy || !cu->GraphExecDestroy || g->graphs_off ||
        !h->staged ||
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
    drop_graph(g);
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
            return drv(g, g->cu->GraphLaunch(exec, g->stream), "cuGraphLaunch", err);
        }
        if (exec)
            g->cu->GraphExecDestroy(exec);
    }
    g->graphs_off = true;
    *d_flag = 0;
    return enqueue_analytic(md, r, d_al, d_wt, h, d_flag, err);
}

static enum cbc_status analytic(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                struct cbc_ig_output *out, struct cbc_err *err)
{
    struct cbc_ig_gpu *g = md->g;
    const size_t F = (size_t)md->size[0], n = r->n;
    const float *al = NULL, *wt = NULL;
    CUdeviceptr d_al = 0, d_wt = 0, d_flag = 0;
    struct host_out h = {0};
    /* outside any recording: a new quadrature is uploaded and waited for */
    enum cbc_status st = rule_on_device(g, r, &d_al, &d_wt, &al, &wt, err);
    if (st == CBC_OK)
        st = host_out_init(g, r, F, out, &h, err);
    if (st == CBC_OK) {
        switch (graph_mode(g, md, r, &h)) {
        case G_REPLAY:
            if (r->device_pointers) /* the recording checks them for NaN into this flag */
                d_flag = g->ws[WS_FLAG].p;
            else
                memcpy(g->stage_in, r->x, sizeof(float) * n * F);
            st = drv(g, g->cu->GraphLaunch(g->gexec, g->stream), "cuGraphLaunch", err);
            break;
        case G_CAPTURE: st = capture_and_launch(md, r, d_al, d_wt, &h, &d_flag, err); break;
        default: st = enqueue_analytic(md, r, d_al, d_wt, &h, &d_flag, err); break;
        }
    }
    if (st == CBC_OK)
        st = finish_stream(g, d_flag, err);
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

/* ---- the MLP as a black box ---------------------------------------------- */

enum cbc_status cbc_ig_gpu_mlp_forward(void *model, uint64_t in, uint64_t out, size_t rows,
                                       size_t F, void *stream, struct cbc_err *err)
{
    struct cbc_ig_gpu_model *md = model;
    struct cbc_ig_gpu *g = md->g;
    (void)stream; /* the engine's own stream: callers pass it back */
    if ((int)F != md->size[0])
        return cbc_err_set(err, CBC_E_SHAPE, "forward of %zu features; the model takes %d", F,
                           md->size[0]);
    const int L = md->L, t = md->target;
    size_t need = 0;
    for (int l = 1; l < L; l++)
        need += sizeof(float) * rows * md->size[l];
    enum cbc_status st = CBC_OK;
    if (need > md->fwd_bytes) {
        g->cu->StreamSynchronize(g->stream);
        dfree(g, &md->fwd);
        md->fwd_bytes = 0;
        st = dalloc(g, &md->fwd, need, "forward activations", err);
        if (st != CBC_OK)
            return st;
        md->fwd_bytes = need;
    }
    CUdeviceptr Z[MAX_LAYERS] = {0}, cur = md->fwd;
    for (int l = 1; l < L; l++) {
        Z[l] = cur;
        cur += sizeof(float) * rows * md->size[l];
    }
    for (int l = 1; st == CBC_OK && l < L; l++) {
        struct cbc_k_gemm p = {0};
        p.M = (int)rows, p.N = md->size[l], p.K = md->size[l - 1], p.nn = 0;
        p.W = md->w[l - 1], p.ldw = md->size[l - 1], p.C = Z[l], p.ldc = md->size[l];
        p.bias = md->b[l - 1], p.bias_rows = (int)rows;
        if (l == 1) {
            p.pro = CBC_PRO_PLAIN, p.A = in, p.lda = (int)F;
        } else {
            p.pro = CBC_PRO_ACT, p.pro_act = md->act[l - 2], p.A = Z[l - 1], p.lda = md->size[l - 1];
        }
        st = gemm(g, &p, err);
    }
    if (st == CBC_OK) {
        struct cbc_k_output o = {0};
        o.R = (int)rows, o.K = md->size[L - 1], o.S = 1, o.target = t;
        o.wt = md->w[L - 1] + sizeof(float) * (size_t)t * md->size[L - 1];
        o.bt = md->last_bias[t], o.act = md->act[L - 1];
        o.fo = out, o.dfo = 0;
        if (L == 1) {
            o.pro = CBC_PRO_PLAIN, o.A = in, o.lda = (int)F;
        } else {
            o.pro = CBC_PRO_ACT, o.pro_act = md->act[L - 2], o.A = Z[L - 1], o.lda = md->size[L - 1];
        }
        void *args[] = {&o};
        st = launch(g, K_OUTPUT, blocks(rows * 32, 256), 1, 1, 256, args, err);
    }
    return st;
}

enum cbc_status cbc_ig_gpu_mlp(struct cbc_ig_gpu_model *m, const struct cbc_ig_request *r,
                               struct cbc_ig_output *out, struct cbc_err *err)
{
    int outs = m->size[m->L];
    if (r->target < 0 || r->target >= outs)
        return cbc_err_set(err, CBC_E_USAGE, "target %d: the model has outputs 0 to %d", r->target,
                           outs - 1);
    if (r->device_pointers && r->gradient != CBC_IG_ANALYTIC)
        return cbc_err_set(err, CBC_E_UNSUPPORTED, "device pointers are taken by the analytic "
                           "mode only");
    enum cbc_status st = r->device_pointers
                             ? (r->n && r->x ? CBC_OK : cbc_err_set(err, CBC_E_USAGE, "no inputs"))
                             : cbc_ig_validate_request(r, (size_t)m->size[0], err);
    if (st != CBC_OK)
        return st;
    if (r->gradient == CBC_IG_ANALYTIC)
        return analytic(m, r, out, err);
    m->target = r->target;
    return cbc_ig_gpu_fn(m->g, cbc_ig_gpu_mlp_forward, m, (size_t)m->size[0], r, out, err);
}

/* ---- central differences: batched, and the seed's loop ------------------- */

enum cbc_status cbc_ig_gpu_fn(struct cbc_ig_gpu *g, cbc_ig_device_fn f, void *ctx, size_t F,
                              const struct cbc_ig_request *r, struct cbc_ig_output *out,
                              struct cbc_err *err)
{
    if (r->device_pointers)
        return cbc_err_set(err, CBC_E_UNSUPPORTED, "device pointers are taken by the analytic "
                           "mode only");
    enum cbc_status st = cbc_ig_validate_request(r, F, err);
    if (st != CBC_OK)
        return st;
    if (r->gradient == CBC_IG_ANALYTIC)
        return cbc_err_set(err, CBC_E_USAGE, "a black box has no analytic gradient: use FD");
    const float *al = NULL, *wt = NULL;
    CUdeviceptr d_al = 0, d_wt = 0;
    st = rule_on_device(g, r, &d_al, &d_wt, &al, &wt, err);
    if (st != CBC_OK)
        return st;
    const int S = r->steps;
    const bool naive = r->gradient == CBC_IG_NAIVE;
    /* steps per black-box call: all 2F perturbations of each */
    size_t per_step = sizeof(float) * (2 * F * F + 2 * F + 2 * F);
    size_t budget = r->mem_budget ? r->mem_budget : g->default_budget;
    if (!naive && per_step > budget) {
        /* one step's 2F perturbed points must fit: never go past the budget */
        char need[32], have[32];
        cbc_err_set(err, CBC_E_USAGE, "finite differences over %zu features need %s of GPU "
                    "memory per step; the budget is %s", F,
                    cbc_format_size(per_step, need, sizeof need),
                    cbc_format_size(budget, have, sizeof have));
        cbc_err_hint(err, "raise --mem-budget, use the analytic gradient, or run on the CPU "
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
        st = cbc_err_oom(err);
#define TRY(expr)                                                                                  \
    do {                                                                                           \
        if (st == CBC_OK)                                                                          \
            st = (expr);                                                                           \
    } while (0)
    TRY(ws(g, WS_X, sizeof(float) * F, &x, "the input", err));
    TRY(ws(g, WS_BASE, sizeof(float) * F, &base, "the baseline", err));
    TRY(ws(g, WS_FD_H, sizeof(float) * F, &h, "step sizes", err));
    TRY(ws(g, WS_FD_ROWS, sizeof(float) * rows_cap * F, &rows, "perturbed points", err));
    TRY(ws(g, WS_FD_VALS, sizeof(float) * rows_cap, &vals, "black-box values", err));
    TRY(ws(g, WS_FD_POINTS, sizeof(float) * sc * F, &points, "path points", err));
    TRY(ws(g, WS_FD_DENOM, sizeof(float) * sc * F, &denom, "step widths", err));
    TRY(ws(g, WS_FD_ACC, sizeof(double) * F, &acc, "gradient sums", err));
    TRY(ws(g, WS_ATTR, sizeof(float) * F, &attr, "attributions", err));
    int FF = (int)F;
    for (size_t in = 0; st == CBC_OK && in < r->n; in++) {
        for (size_t i = 0; i < F; i++) {
            xh[i] = r->x[in * F + i];
            bh[i] = cbc_ig_base_at(&r->baseline, in, F, i);
            hh[i] = cbc_ig_fd_step(xh[i], bh[i]);
        }
        TRY(upload(g, x, xh, sizeof(float) * F, err));
        TRY(upload(g, base, bh, sizeof(float) * F, err));
        TRY(upload(g, h, hh, sizeof(float) * F, err));
        /* F(x) and F(x') */
        TRY(drv(g, g->cu->MemcpyDtoDAsync(rows, x, sizeof(float) * F, g->stream), "copy", err));
        TRY(drv(g, g->cu->MemcpyDtoDAsync(rows + sizeof(float) * F, base, sizeof(float) * F,
                                          g->stream), "copy", err));
        TRY(f(ctx, rows, vals, 2, F, g->stream, err));
        float ends[2] = {0, 0};
        TRY(drv(g, g->cu->MemcpyDtoHAsync(ends, vals, sizeof ends, g->stream), "copy", err));
        TRY(drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
        out->f_x[in] = ends[0];
        out->f_base[in] = ends[1];
        if (naive) {
            /* the seed's loop, as it was: per step one point, per feature two
             * forward passes of one row, each scalar pulled to the host */
            for (size_t i = 0; i < F; i++)
                acc_h[i] = 0;
            CUdeviceptr point = points, plus = rows, minus = rows + sizeof(float) * F;
            for (int s = 0; st == CBC_OK && s < S; s++) {
                float a = al[s];
                void *ia[] = {&point, &base, &x, &a, &FF};
                TRY(launch(g, K_INTERP, blocks(F, 256), 1, 1, 256, ia, err));
                for (size_t i = 0; st == CBC_OK && i < F; i++) {
                    float fp = 0, fm = 0, hp = hh[i], hm = -hh[i];
                    int dim = (int)i;
                    void *pa[] = {&plus, &point, &FF, &dim, &hp};
                    TRY(launch(g, K_PERTURB, blocks(F, 256), 1, 1, 256, pa, err));
                    TRY(f(ctx, plus, vals, 1, F, g->stream, err));
                    TRY(drv(g, g->cu->MemcpyDtoHAsync(&fp, vals, sizeof fp, g->stream), "copy", err));
                    TRY(drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
                    void *ma[] = {&minus, &point, &FF, &dim, &hm};
                    TRY(launch(g, K_PERTURB, blocks(F, 256), 1, 1, 256, ma, err));
                    TRY(f(ctx, minus, vals, 1, F, g->stream, err));
                    TRY(drv(g, g->cu->MemcpyDtoHAsync(&fm, vals, sizeof fm, g->stream), "copy", err));
                    TRY(drv(g, g->cu->StreamSynchronize(g->stream), "the black box", err));
                    acc_h[i] += (double)wt[s] * ((double)fp - fm) / (2.0 * hh[i]);
                }
            }
            for (size_t i = 0; i < F; i++)
                out->attr[in * F + i] = (float)(((double)xh[i] - bh[i]) * acc_h[i]);
            continue;
        }
        TRY(drv(g, g->cu->MemsetD32Async(acc, 0, 2 * F, g->stream), "clear", err));
        for (size_t s0 = 0; st == CBC_OK && s0 < (size_t)S; s0 += sc) {
            int cs = (int)(s0 + sc <= (size_t)S ? sc : (size_t)S - s0);
            CUdeviceptr al0 = d_al + sizeof(float) * s0, wt0 = d_wt + sizeof(float) * s0;
            void *ia[] = {&points, &x, &base, &al0, &FF, &cs};
            TRY(launch(g, K_INTERP_B, blocks((size_t)cs * F, 256), 1, 1, 256, ia, err));
            void *pa[] = {&rows, &denom, &points, &h, &FF, &cs};
            TRY(launch(g, K_PERTURB_B, blocks((size_t)cs * 2 * F * F, 256), 1, 1, 256, pa, err));
            TRY(f(ctx, rows, vals, (size_t)cs * 2 * F, F, g->stream, err));
            void *aa[] = {&acc, &vals, &denom, &wt0, &FF, &cs};
            TRY(launch(g, K_FD_ACC, blocks(F, 256), 1, 1, 256, aa, err));
        }
        void *fa[] = {&attr, &acc, &x, &base, &FF};
        TRY(launch(g, K_FD_FINISH, blocks(F, 256), 1, 1, 256, fa, err));
        TRY(drv(g, g->cu->MemcpyDtoHAsync(out->attr + in * F, attr, sizeof(float) * F, g->stream),
                "copying attributions", err));
        TRY(drv(g, g->cu->StreamSynchronize(g->stream), "running the IG kernels", err));
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
