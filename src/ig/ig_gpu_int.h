/* ig_gpu_int.h: what the GPU engine's files share: the engine and model
 * structs, the kernel table, the grow-only workspace, and the helpers that
 * launch kernels and GEMMs (ig_gpu_base.c), for the engine itself (ig_gpu.c:
 * open, close, the MLP's upload and forward), the analytic path with its graph
 * cache (ig_gpu_analytic.c), the layered path (ig_gpu_layered.c), central
 * differences (ig_gpu_fd.c) and convolutional networks (ig_gpu_net.c).
 * Internal to libcubincache-ig.
 *
 * Invariants: calls on one engine never overlap (one stream, one
 * workspace); a workspace buffer that moves bumps ws_gen, and a recorded
 * graph is replayed only while ws_gen is what it was when recorded.
 */
#ifndef CBC_IG_GPU_INT_H
#define CBC_IG_GPU_INT_H

#include "ig_cuda.h"
#include "ig_int.h"
#include "ig_kernels.h"

#include <cubincache/loader.h>

#include <stdint.h>

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
    K_LAYER_FWD,
    K_LAYER_BWD,
    K_GEMM0, /* F_COUNT * V_COUNT GEMMs follow */
    K_COUNT = K_GEMM0 + F_COUNT * V_COUNT
};


/* The network kernels (kernels/ig_net_kernels.cu), in their own module. */
enum {
    NK_CONV0, /* conv_{fwd,bwd}_{t16,t32,t64}_{f,d}: 12 */
    NK_DW0 = NK_CONV0 + 12, /* dwconv_{fwd,bwd}_{f,d}: 4 */
    NK_DCONV0 = NK_DW0 + 4, /* dconv_k{3,5}_o{4,8}_{f,d}: 8 */
    NK_POOL_FWD = NK_DCONV0 + 8,
    NK_POOL_BWD,
    NK_EW_FWD,
    NK_EW_BWD,
    NK_ROWS_FWD,
    NK_ROWS_BWD,
    NK_PATH,
    NK_SEED,
    NK_ATTR,
    NK_COUNT
};

/* Device buffers kept between calls (grow-only). */
enum {
    WS_AL, WS_WT, WS_X, WS_BASE, WS_UVIN, WS_UV, WS_D, WS_ATTR, WS_ENDS, WS_WORK, WS_SPLIT,
    WS_FLAG, WS_SUMS, WS_STEPQ, WS_FD_H, WS_FD_ROWS, WS_FD_VALS, WS_FD_POINTS, WS_FD_DENOM,
    WS_FD_ACC, WS_TARGETS, WS_NET, WS_COUNT
};

#define STAGE_MAX (256u << 10) /* transfers up to this size go through pinned memory */

struct cbc_ig_gpu {
    const struct ig_cuda *cu;
    struct cbc_bundle *own_bundle;
    struct cbc_module *mod;
    CUstream stream;
    CUfunction k[K_COUNT];
    int sms;
    bool tensor_cores; /* used now: the image has them and the precision is fast */
    bool tc_capable;   /* the image has them */
    bool precise;      /* CBC_IG_PRECISION_FP32 */
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
    /* the network kernels (ig_gpu_net.c), loaded with the first network */
    int device;
    struct cbc_load_opts opts;
    struct cbc_bundle *net_bundle;
    struct cbc_module *net_mod;
    CUfunction nk[NK_COUNT];
};

#define MAX_LAYERS 16

struct cbc_ig_gpu_model {
    struct cbc_ig_gpu *g;
    int L, size[MAX_LAYERS + 1];
    enum cbc_act act[MAX_LAYERS];
    /* The layered path (ig_gpu_layered.c) runs the model when `layered`: a
     * LayerNorm, a (log-)softmax output, an activation parameter other
     * than PyTorch's default, a constant scale or shift of an output or a
     * residual, which the fused kernels do not take. */
    bool layered;
    float act_param[MAX_LAYERS]; /* resolved: never 0 for LeakyReLU and ELU */
    int norm[MAX_LAYERS];
    float norm_eps[MAX_LAYERS];
    CUdeviceptr norm_w[MAX_LAYERS], norm_b[MAX_LAYERS];
    CUdeviceptr w[MAX_LAYERS], b[MAX_LAYERS];
    /* the output's constant scale and shift, and residuals (the layered
     * path only): residual[l] (enum cbc_residual) adds rmul[l] times layer
     * res_from[l]'s output (never the input: refused at upload) */
    CUdeviceptr mul[MAX_LAYERS], add[MAX_LAYERS], rmul[MAX_LAYERS];
    int residual[MAX_LAYERS], res_from[MAX_LAYERS];
    bool res_source[MAX_LAYERS]; /* a later layer adds this one's output */
    float *last_bias; /* host copy: the output's bias is a kernel argument */
    unsigned long serial;
    int target;
    CUdeviceptr fwd; /* forward scratch, grown on demand */
    size_t fwd_bytes;
};

/* ---- helpers (ig_gpu.c) ------------------------------------------------ */

static inline unsigned ig_blocks(size_t n, unsigned per)
{
    return (unsigned)((n + per - 1) / per);
}

static inline struct cbc_k_base ig_kbase(const struct cbc_ig_baseline *b, CUdeviceptr data)
{
    return (struct cbc_k_base){(int)b->kind, b->scalar, data};
}

static inline size_t ig_baseline_count(const struct cbc_ig_request *r, size_t F)
{
    return r->baseline.kind == CBC_IG_BASELINE_SHARED      ? F
           : r->baseline.kind == CBC_IG_BASELINE_PER_INPUT ? r->n * F
                                                           : 0;
}

/* ---- ig_gpu_base.c ---- */

/* A driver result as a status: CBC_OK, or CBC_E_DRIVER naming `what`. */
enum cbc_status ig_drv(const struct cbc_ig_gpu *g, CUresult rc, const char *what,
                       struct cbc_err *err);
enum cbc_status ig_dalloc(struct cbc_ig_gpu *g, CUdeviceptr *p, size_t bytes, const char *what,
                          struct cbc_err *err);
void ig_dfree(struct cbc_ig_gpu *g, CUdeviceptr *p);
/* A workspace buffer of at least `bytes`; its contents are not kept. */
enum cbc_status ig_ws(struct cbc_ig_gpu *g, int slot, size_t bytes, CUdeviceptr *p,
                      const char *what, struct cbc_err *err);
void ig_drop_graph(struct cbc_ig_gpu *g);
/* Host to device, asynchronous on the engine's stream. */
enum cbc_status ig_upload(struct cbc_ig_gpu *g, CUdeviceptr d, const void *h, size_t bytes,
                          struct cbc_err *err);
enum cbc_status ig_launch(struct cbc_ig_gpu *g, int k, unsigned gx, unsigned gy, unsigned gz,
                          unsigned bx, void **args, struct cbc_err *err);
/* Kernel k is a tensor-core GEMM (it takes CBC_K_TC_SMEM_BYTES of shared memory). */
static inline bool ig_is_tc(int k)
{
    return k >= K_GEMM0 && (k - K_GEMM0) % V_COUNT == V_TC;
}
/* One GEMM: the kernel for its shape, split K when too few tiles. */
enum cbc_status ig_gemm(struct cbc_ig_gpu *g, struct cbc_k_gemm *p, struct cbc_err *err);
/* The request's inputs and baseline on the device (uploaded, or as given
 * with device_pointers, then checked for NaN and Inf into *d_flag). */
enum cbc_status ig_stage_inputs(struct cbc_ig_gpu *g, const struct cbc_ig_request *r, size_t F,
                                CUdeviceptr *d_x, CUdeviceptr *d_base, CUdeviceptr *d_flag,
                                struct cbc_err *err);
/* The quadrature (alpha = 0 and 1 appended, weight 0) on the device,
 * uploaded only when it changes; *al / *wt: the host copies. */
enum cbc_status ig_rule_on_device(struct cbc_ig_gpu *g, const struct cbc_ig_request *r,
                                  CUdeviceptr *d_al, CUdeviceptr *d_wt, const float **al,
                                  const float **wt, struct cbc_err *err);
/* Waits for the stream; CBC_E_NUMERIC when *d_flag says a device input
 * held NaN or Inf. */
enum cbc_status ig_finish_stream(struct cbc_ig_gpu *g, CUdeviceptr d_flag, struct cbc_err *err);

/* ---- the analytic path (ig_gpu_analytic.c) ------------------------------ */

enum cbc_status ig_analytic(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                            struct cbc_ig_output *out, struct cbc_err *err);

/* ---- the layered path (ig_gpu_layered.c) --------------------------------- */

/* Steps 2-3 of the analytic path for a layered model: every chunk of
 * inputs forward and backward, leaving D [n][H1] (the weighted sum over
 * steps of layer 1's deltas) and F(x), F(x') in d_ends, as the fused path
 * does; u and v are layer 1's baseline and difference rows. */
enum cbc_status ig_layered_chunks(struct cbc_ig_gpu_model *md, const struct cbc_ig_request *r,
                                  CUdeviceptr d_u, CUdeviceptr d_v, CUdeviceptr d_al,
                                  CUdeviceptr d_wt, CUdeviceptr d_D, CUdeviceptr d_ends,
                                  CUdeviceptr d_targets, struct cbc_err *err);
/* ---- networks (ig_gpu_net.c) ---------------------------------------------- */

/* Unloads the network kernels (the engine closing). */
void ig_net_kernels_release(struct cbc_ig_gpu *g);

/* cbc_ig_gpu_mlp_forward for a layered model. */
enum cbc_status ig_layered_forward(struct cbc_ig_gpu_model *md, CUdeviceptr in, CUdeviceptr out,
                                   size_t rows, struct cbc_err *err);

#endif
