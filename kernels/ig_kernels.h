/* ig_kernels.h: parameter blocks of the IG kernels, shared by the CUDA
 * source and the C host code (src/ig/ig_gpu.c) that launches them.
 *
 * Invariant: the layout is identical on both sides: device pointers are
 * declared as pointers in CUDA and as 64-bit integers in C (CBC_DPTR), all
 * other fields are int or float, and every struct is passed by value as a
 * single kernel argument. Change a struct here and both sides follow.
 */
#ifndef CBC_IG_KERNELS_H
#define CBC_IG_KERNELS_H

#ifdef __CUDACC__
#define CBC_DPTR(type) type *
#else
#include <stdint.h>
#define CBC_DPTR(type) uint64_t
#endif

/* How a GEMM's A operand is formed while it is loaded (prologue). */
enum {
    CBC_PRO_PLAIN = 0,  /* A[r][k] */
    CBC_PRO_ACT = 1,    /* act(A[r][k]): the previous layer's activation */
    CBC_PRO_INTERP = 2  /* act(u[b][k] + alpha[s] v[b][k]), r = b*S + s: layer 1 on the path */
};

/* What happens to a GEMM's result before it is stored (epilogue). */
enum {
    CBC_EPI_STORE = 0,    /* C = A.B (+ bias[col] on rows < bias_rows) */
    CBC_EPI_DACT = 1,     /* C = (A.B) * act'(Z[r][col]) : backprop through a hidden layer */
    CBC_EPI_DACT_L1 = 2,  /* C = (A.B) * act'(u[b][col] + alpha[s] v[b][col]) * w[s] */
    CBC_EPI_MUL_DIFF = 3, /* C = (A.B) * (x[r][col] - base(r, col)) : attributions */
    CBC_EPI_PARTIAL = 4,  /* split K: P[z][r][col] = the partial A.B; gemm_reduce applies `epi` */
    CBC_EPI_Z_DELTA = 5   /* the last hidden layer before an identity output: C = z = A.B + bias,
                             and its delta D[r][col] = dwt[col] * act'(z) on the side; with
                             S set, the tensor-core tile stores z of the endpoint rows only
                             (steps S-2 and S-1), the only ones read later */
};

/* Baseline as the kernels see it (enum cbc_ig_baseline_kind). */
struct cbc_k_base {
    int kind;
    float scalar;
    CBC_DPTR(const float) data;
};

/* Activation ids as the kernels take them (pro_act, epi_act, act); the
 * host maps enum cbc_act onto these and checks at compile time that they
 * agree. */
enum {
    CBC_K_ACT_IDENTITY = 0,
    CBC_K_ACT_RELU = 1,
    CBC_K_ACT_TANH = 2,
    CBC_K_ACT_SIGMOID = 3,
    CBC_K_ACT_GELU = 4,
    CBC_K_ACT_SILU = 5,
    CBC_K_ACT_SOFTPLUS = 6,
    CBC_K_ACT_ELU = 7,
    CBC_K_ACT_LEAKY_RELU = 8,
    CBC_K_ACT_SOFTMAX = 9,     /* the layered kernels only (struct cbc_k_layer) */
    CBC_K_ACT_LOG_SOFTMAX = 10
};

/* Baseline kinds as the kernels take them (struct cbc_k_base.kind). */
enum {
    CBC_K_BASE_ZEROS = 0,
    CBC_K_BASE_SCALAR = 1,
    CBC_K_BASE_SHARED = 2,
    CBC_K_BASE_PER_INPUT = 3
};

/* Rows of the tensor-core tile: the host sizes the per-tile step sums by it. */
#define CBC_K_TC_ROWS 128
/* The tensor-core GEMMs' tile: BK 16, rows padded by 8, TF32 high and low
 * parts of A and B in two stages: their dynamic shared memory in bytes,
 * which the host grants each of them before the first launch. */
#define CBC_K_TC_BK 16
#define CBC_K_TC_PAD 8
#define CBC_K_TC_SMEM_BYTES (4 * (2 * CBC_K_TC_BK * (CBC_K_TC_ROWS + CBC_K_TC_PAD)) * 4)

struct cbc_k_gemm {
    int M, N, K;
    int nn;     /* 0: C = A . W^T with W [N][K]; 1: C = A . W with W [K][N] */
    int vec;    /* 1: every row start of A, W, u, v is 16-byte aligned and K (NT) or N (NN)
                   is a multiple of 4, so tiles load as float4 */
    int splits; /* split-K: blockIdx.z takes K range [z*kchunk, (z+1)*kchunk) */
    int kchunk;
    CBC_DPTR(float) P; /* split-K partials [splits][M][N] */
    CBC_DPTR(const float) A;
    int lda;
    CBC_DPTR(const float) W;
    int ldw;
    CBC_DPTR(float) C;
    int ldc;
    CBC_DPTR(const float) bias;
    int bias_rows;
    int pro, pro_act;
    int epi, epi_act;
    /* the path: rows are (input b, step s), S steps per input */
    CBC_DPTR(const float) u;
    CBC_DPTR(const float) v;
    int ldu;
    CBC_DPTR(const float) alpha;
    CBC_DPTR(const float) weight;
    int S;
    int row0; /* global row of this chunk's first row (for b = (row0 + r) / S) */
    /* DACT: the pre-activations; MUL_DIFF: inputs and baseline */
    CBC_DPTR(const float) Z;
    int ldz;
    CBC_DPTR(const float) x;
    struct cbc_k_base base;
    /* Z_DELTA: the delta's destination and the target row of the output layer */
    CBC_DPTR(float) D;
    int ldd;
    CBC_DPTR(const float) dwt;
    /* DACT_L1 on the tensor-core tile without split K may sum the rows of
     * each input in the epilogue instead of storing C: the sum of input b's
     * rows inside M-block m goes to Q[(b * sum_slots + m - first(b)) * N + col],
     * first(b) = (b * S) / CBC_K_TC_ROWS (rows of this chunk); reduce_step_partials
     * adds the slots. The host sets sum_steps; gemm() clears it where the
     * kernel it picks does not do this. */
    int sum_steps, sum_slots;
    CBC_DPTR(float) Q;
};

/* One output per row: zo[r] = W_t . a(r) + b_t, with a(r) formed by `pro`
 * from A (or u, v, alpha); fo = act(zo), dfo = act'(zo). For a one-layer
 * model (pro = -1) zo = u[b][t] + alpha[s] v[b][t]. */
struct cbc_k_output {
    int R, K;
    CBC_DPTR(const float) A;
    int lda;
    int pro, pro_act;
    CBC_DPTR(const float) u;
    CBC_DPTR(const float) v;
    int ldu;
    CBC_DPTR(const float) alpha;
    int S, row0, target;
    CBC_DPTR(const float) wt; /* the target row of the last layer's weight */
    float bt;
    int act;
    CBC_DPTR(float) fo;
    CBC_DPTR(float) dfo;
    /* when set, also the last hidden layer's delta of every row:
     *   delta[r][k] = wt[k] * dfo[r] * act'(z(r, k)) [* weight[s] for the path (pro INTERP)]
     * from the z already read for the output (no second pass over Z) */
    CBC_DPTR(float) delta;
    CBC_DPTR(const float) weight;
    /* when set, only the two endpoint rows of each input (alpha 0 and 1:
     * rows b*S + S-2 and b*S + S-1), R = 2 * inputs */
    int ends_only;
    /* when set, a target per input b (global index): row r explains output
     * targets[b], with wt = W + targets[b] * K and bt = bias[targets[b]] (bias
     * may be 0) in place of wt, bt and target */
    CBC_DPTR(const int) targets;
    CBC_DPTR(const float) W;
    CBC_DPTR(const float) bias;
};

/* The layered path, for models the fused kernels do not take (a
 * LayerNorm, a Softmax or LogSoftmax output, activation parameters other
 * than PyTorch's defaults): GEMMs store plain Linear outputs and these
 * kernels apply a layer's LayerNorm and activation over whole rows, a warp
 * per row, forward (layer_forward) and backward (layer_backward). */
enum {
    CBC_K_NORM_NONE = 0,
    CBC_K_NORM_BEFORE_ACT = 1, /* Linear, LayerNorm, activation */
    CBC_K_NORM_AFTER_ACT = 2   /* Linear, activation, LayerNorm */
};

struct cbc_k_layer {
    int R, H; /* rows, units */
    /* the Linear's output Z [R][H]; when u is set (layer 1 on the path),
     * layer_forward first writes Z[r] = u[b] + alpha[s] v[b] (rows of H) */
    CBC_DPTR(float) Z;
    CBC_DPTR(const float) u;
    CBC_DPTR(const float) v;
    CBC_DPTR(const float) alpha;
    int S, row0;              /* rows are (input b, step s): b*S + s = row0 + r */
    CBC_DPTR(float) A;        /* forward: the layer's output [R][H] */
    CBC_DPTR(float) stats;    /* [R][2]: the LayerNorm's mean and 1/sqrt(var + eps) */
    int act;
    float act_param;          /* LeakyReLU's slope, ELU's alpha (never 0: the host resolves) */
    int norm;
    float eps;
    CBC_DPTR(const float) gamma; /* [H] or 0 for ones */
    CBC_DPTR(const float) beta;  /* [H] or 0 for zeros */
    int target;
    CBC_DPTR(float) fo;          /* forward: fo[r] = A[r][target] when set */
    CBC_DPTR(const float) dA;    /* backward: dF/dA [R][H], or 0 for one-hot at target */
    CBC_DPTR(float) dZ;          /* backward: dF/dZ [R][H] */
    CBC_DPTR(const float) weight; /* backward: when set, dZ is scaled by weight[s] */
    /* when set, a target per input b = (row0 + r) / S: fo and the backward's
     * seed take targets[b] in place of target (S and row0 set) */
    CBC_DPTR(const int) targets;
    /* the output's constant scale and shift (0 for 1 and 0), and a residual
     * (CBC_K_RESIDUAL_*): rmul (0 for ones) times src, a row of as many
     * units of an earlier layer's output (rows aligned with these) */
    CBC_DPTR(const float) mul;
    CBC_DPTR(const float) add;
    int residual;
    CBC_DPTR(const float) rmul;
    CBC_DPTR(const float) src;
    /* backward: dR_in [R][H] is added to this layer's dF/dh (what later
     * residuals sent back; 0 for none); the residual's share of dF/dh (after)
     * or of dF/dz (before the activation) is added to dR_out [R][H], the
     * source layer's accumulator */
    CBC_DPTR(const float) dR_in;
    CBC_DPTR(float) dR_out;
};

/* Residuals as the kernels take them (enum cbc_residual). */
enum {
    CBC_K_RESIDUAL_NONE = 0,
    CBC_K_RESIDUAL_AFTER = 1,
    CBC_K_RESIDUAL_BEFORE_ACT = 2
};

#endif
