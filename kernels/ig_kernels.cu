// ig_kernels.cu: the Integrated Gradients kernels, built by `cubincache
// build` for every configured SM target, embedded into libcubincache-ig and
// loaded through the public loader API. Every kernel is extern "C", found by its plain name.
//
// Three families:
//  - interpolate_input / perturb_dimension (one point, one feature), for
//    the per-feature benchmark loop, and their batched forms
//    for central differences over a whole chunk of steps at once;
//  - an FP32 SIMT GEMM (double-buffered shared-memory tiles, 8x8 or 4x4
//    results per thread) whose A-operand prologue can build the path point
//    act(u + alpha*v) on the fly (layer 1 is linear in alpha, so it is
//    never materialised per step) and whose epilogue applies bias,
//    activation derivatives, quadrature weights or (x - x'), and can write
//    the last hidden layer's delta on the side or sum each input's steps;
//  - small kernels: one output per row (and the last hidden layer's delta
//    from the same read), the sum over steps, and gathers.
// GEMMs run on tensor cores in 3xTF32 (each operand split into a TF32 high
// part and a TF32 residual, three products accumulated in FP32) on sm_80
// and later, else as FP32 FMA; either way results stay within 1e-4 of the
// double-precision CPU reference.
#include "ig_kernels.h"

// ---- activations -------------------------------------------------------

// The activations PyTorch users add (SiLU, Softplus, ELU, LeakyReLU) are
// out of line: inlined into every GEMM prologue and epilogue, their cases
// made the tanh MLP's batched IG 15% slower on an H200 (register pressure);
// called, they cost only the models that use them.
__device__ __noinline__ float act_f_more(int a, float z)
{
    switch (a) {
    case CBC_K_ACT_SILU: return z / (1.0f + expf(-z));
    case CBC_K_ACT_SOFTPLUS: return z > 20.0f ? z : log1pf(expf(z)); // PyTorch's threshold
    case CBC_K_ACT_ELU: return z > 0.0f ? z : expm1f(z);
    case CBC_K_ACT_LEAKY_RELU: return z > 0.0f ? z : 0.01f * z;
    default: return z;
    }
}

__device__ __noinline__ float act_df_more(int a, float z)
{
    switch (a) {
    case CBC_K_ACT_SILU: {
        float s = 1.0f / (1.0f + expf(-z));
        return s * (1.0f + z * (1.0f - s));
    }
    case CBC_K_ACT_SOFTPLUS: return z > 20.0f ? 1.0f : 1.0f / (1.0f + expf(-z));
    case CBC_K_ACT_ELU: return z > 0.0f ? 1.0f : expf(z);
    case CBC_K_ACT_LEAKY_RELU: return z > 0.0f ? 1.0f : 0.01f;
    default: return 1.0f;
    }
}

__device__ __forceinline__ float act_f(int a, float z)
{
    switch (a) {
    case CBC_K_ACT_IDENTITY: return z;
    case CBC_K_ACT_RELU: return fmaxf(z, 0.0f);
    case CBC_K_ACT_TANH: return tanhf(z);
    case CBC_K_ACT_SIGMOID: return 1.0f / (1.0f + expf(-z));
    case CBC_K_ACT_GELU: return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    default: return act_f_more(a, z);
    }
}

__device__ __forceinline__ float act_df(int a, float z)
{
    switch (a) {
    case CBC_K_ACT_IDENTITY: return 1.0f;
    case CBC_K_ACT_RELU: return z > 0.0f ? 1.0f : 0.0f;
    case CBC_K_ACT_TANH: {
        float t = tanhf(z);
        return 1.0f - t * t;
    }
    case CBC_K_ACT_SIGMOID: {
        float s = 1.0f / (1.0f + expf(-z));
        return s * (1.0f - s);
    }
    case CBC_K_ACT_GELU:
        return 0.5f * (1.0f + erff(z * 0.70710678118654752f)) +
               z * 0.39894228040143268f * expf(-0.5f * z * z);
    default: return act_df_more(a, z);
    }
}

// The GEMM prologues and epilogues evaluate an activation for every element
// of a 53248 x 512 path, and tanhf (about twenty instructions with its
// branches) was a fifth of the layer-2 forward. There tanh is
// 1 - 2 / (e^{2z} + 1) from the hardware exp2 and a fast divide: absolute
// error about 1e-7 (tanhf: 1 ulp), which is what a dot product of 512 such
// terms sees; the other activations are as above.
__device__ __forceinline__ float tanh_gemm(float z)
{
    return 1.0f - __fdividef(2.0f, exp2f(z * 2.8853900817779268f) + 1.0f);
}

__device__ __forceinline__ float act_f_gemm(int a, float z)
{
    return a == CBC_K_ACT_TANH ? tanh_gemm(z) : act_f(a, z);
}

__device__ __forceinline__ float act_df_gemm(int a, float z)
{
    if (a == CBC_K_ACT_TANH) {
        float t = tanh_gemm(z);
        return 1.0f - t * t;
    }
    return act_df(a, z);
}

__device__ __forceinline__ float base_at(const cbc_k_base &b, int row, int F, int col)
{
    switch (b.kind) {
    case CBC_K_BASE_SCALAR: return b.scalar;
    case CBC_K_BASE_SHARED: return b.data[col];
    case CBC_K_BASE_PER_INPUT: return b.data[(size_t)row * F + col];
    default: return 0.0f;
    }
}

// ---- one point, one feature: the per-feature loop's kernels ---------------

// One point on the baseline-to-input path.
//   out[i] = baseline[i] + alpha * (input[i] - baseline[i])
extern "C" __global__ void interpolate_input(float *out, const float *baseline, const float *input,
                                             float alpha, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = baseline[i] + alpha * (input[i] - baseline[i]);
}

// A copy of `point` with one coordinate moved: out = point; out[dim] += delta
extern "C" __global__ void perturb_dimension(float *out, const float *point, int n, int dim,
                                             float delta)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = point[i] + (i == dim ? delta : 0.0f);
}

// ---- batched central differences -----------------------------------------

// The points of S steps at once: out[s][i] = base[i] + alpha[s] (x[i] - base[i]).
extern "C" __global__ void interpolate_input_batched(float *out, const float *x, const float *base,
                                                     const float *alpha, int F, int S)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)S * F)
        return;
    int s = (int)(e / F), i = (int)(e % F);
    out[e] = base[i] + alpha[s] * (x[i] - base[i]);
}

// All 2F perturbations of each of S points, rows (s, i, +/-):
//   out[(s*2F + 2i + d)][j] = points[s][j] + (j == i ? (d ? -h[i] : +h[i]) : 0)
// and the step actually taken in float: denom[s][i] = (p + h) - (p - h).
extern "C" __global__ void perturb_dimension_batched(float *out, float *denom, const float *points,
                                                     const float *h, int F, int S)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t total = (size_t)S * 2 * F * F;
    if (e >= total)
        return;
    int j = (int)(e % F);
    size_t row = e / F;
    int d = (int)(row & 1), i = (int)((row >> 1) % F), s = (int)(row / (2 * (size_t)F));
    float p = points[(size_t)s * F + j];
    if (j == i) {
        float hp = p + h[i], hm = p - h[i];
        out[e] = d ? hm : hp;
        if (d == 0)
            denom[(size_t)s * F + i] = hp - hm;
    } else {
        out[e] = p;
    }
}

// acc[i] += sum_s w[s] (f(p+h) - f(p-h)) / denom[s][i], in double.
extern "C" __global__ void fd_accumulate(double *acc, const float *vals, const float *denom,
                                         const float *w, int F, int S)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= F)
        return;
    double a = 0;
    for (int s = 0; s < S; s++) {
        size_t r = (size_t)s * 2 * F + 2 * (size_t)i;
        a += (double)w[s] * ((double)vals[r] - (double)vals[r + 1]) / (double)denom[(size_t)s * F + i];
    }
    acc[i] += a;
}

// attr[i] = (x[i] - base[i]) * acc[i]
extern "C" __global__ void fd_finish(float *attr, const double *acc, const float *x,
                                     const float *base, int F)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < F)
        attr[i] = (float)(((double)x[i] - (double)base[i]) * acc[i]);
}

// ---- GEMM ----------------------------------------------------------------
//
// One tile engine, two inner loops: FP32 FFMA (any SM) and 3xTF32 tensor-core
// MMA (sm_80 and later: each operand split into a TF32 high part and a TF32
// residual, three m16n8k8 MMAs per product, small terms first, which keeps
// FP32-level accuracy). Tiles are double-buffered in shared memory, stored
// k-major (transposed) so both inner loops read them without bank conflicts.
// The A operand is formed while it is loaded (PRO: plain, act(A), or the path
// point act(u + alpha v), whose row pointers each thread computes once), the
// result finished in the epilogue; with split K, blocks write partial sums
// and gemm_reduce adds them in a fixed order and applies the epilogue, so
// results are the same on every run.

// The epilogue of output (r, c), given the path row's input b and step s
// (used by CBC_EPI_DACT_L1 only).
__device__ __forceinline__ float epilogue_bs(const cbc_k_gemm &p, int r, int c, float val, int b,
                                             int s)
{
    switch (p.epi) {
    case CBC_EPI_DACT: return val * act_df_gemm(p.epi_act, p.Z[(size_t)r * p.ldz + c]);
    case CBC_EPI_DACT_L1: {
        size_t o = (size_t)b * p.ldu + c;
        return val * act_df_gemm(p.epi_act, p.u[o] + p.alpha[s] * p.v[o]) * p.weight[s];
    }
    case CBC_EPI_MUL_DIFF: {
        int gr = p.row0 + r;
        return val * (p.x[(size_t)gr * p.N + c] - base_at(p.base, gr, p.N, c));
    }
    case CBC_EPI_Z_DELTA: {
        float z = r < p.bias_rows ? val + p.bias[c] : val;
        p.D[(size_t)r * p.ldd + c] = p.dwt[c] * act_df_gemm(p.epi_act, z);
        return z;
    }
    default:
        if (p.bias && r < p.bias_rows)
            val += p.bias[c];
        return val;
    }
}

// The epilogue working out b and s itself. Inlined where a thread finishes
// one output (gemm_reduce: a call would copy the whole parameter block to
// the stack per element); called, not inlined, from the SIMT tiles and the
// skinny kernels: inlining its activation derivatives at the 64 output sites
// of each SIMT kernel made cubins 4 MB. The tensor-core tiles finish their
// outputs through shared memory with finish(), inlined once.
__device__ __forceinline__ float epilogue_inline(const cbc_k_gemm &p, int r, int c, float val)
{
    int b = 0, s = 0;
    if (p.epi == CBC_EPI_DACT_L1) {
        int gr = p.row0 + r;
        b = gr / p.S, s = gr - b * p.S;
    }
    return epilogue_bs(p, r, c, val, b, s);
}

__device__ __noinline__ float epilogue(const cbc_k_gemm &p, int r, int c, float val)
{
    return epilogue_inline(p, r, c, val);
}

// One output of a tile finished in place: split-K partial, or the epilogue
// with the row's input b and step s already known.
__device__ __forceinline__ void finish(const cbc_k_gemm &p, int r, int c, float v, int b, int s)
{
    if (p.epi == CBC_EPI_PARTIAL) {
        p.P[((size_t)blockIdx.z * p.M + r) * p.N + c] = v;
    } else {
        float out = epilogue_bs(p, r, c, v, b, s);
        // Z_DELTA with S: only the endpoint rows' z is read later
        if (p.epi != CBC_EPI_Z_DELTA || p.S == 0 || s >= p.S - 2)
            p.C[(size_t)r * p.ldc + c] = out;
    }
}

__device__ __forceinline__ float4 act4(int a, float4 v)
{
    return make_float4(act_f_gemm(a, v.x), act_f_gemm(a, v.y), act_f_gemm(a, v.z),
                       act_f_gemm(a, v.w));
}

// Scalar A element, for rows/columns at the edges and unaligned shapes.
template <int PRO>
__device__ __noinline__ float a_scalar(const cbc_k_gemm &p, int r, int k, const float *pu,
                                          const float *pv, float pal)
{
    if (PRO == CBC_PRO_INTERP)
        return act_f_gemm(p.pro_act, pu[k] + pal * pv[k]);
    float a = p.A[(size_t)r * p.lda + k];
    return PRO == CBC_PRO_ACT ? act_f_gemm(p.pro_act, a) : a;
}

template <int BM, int BN, int BK, int PAD, bool NN, int PRO>
struct Tiles {
    static constexpr int NT = 256, KQ = BK / 4;
    static constexpr int A4 = BM * BK / 4 / NT, B4 = BN * BK / 4 / NT;
    float4 ra[A4], rb[B4];
    unsigned po[A4]; // the path row's offset into u and v (b * ldu): 32 bits, registers are tight
    float pal[A4];

    __device__ __forceinline__ void init(const cbc_k_gemm &p, int m0, int tid)
    {
#pragma unroll
        for (int i = 0; i < A4; i++) {
            po[i] = 0;
            pal[i] = 0.0f;
            if (PRO == CBC_PRO_INTERP) {
                int r = m0 + (tid + i * NT) / KQ;
                int gr = p.row0 + (r < p.M ? r : 0), b = gr / p.S, s = gr - b * p.S;
                po[i] = (unsigned)b * (unsigned)p.ldu;
                pal[i] = p.alpha[s];
            }
        }
    }

    __device__ __forceinline__ void load(const cbc_k_gemm &p, int m0, int n0, int k0, int kend, int tid)
    {
#pragma unroll
        for (int i = 0; i < A4; i++) {
            int e = tid + i * NT, r = m0 + e / KQ, k = k0 + (e % KQ) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (r < p.M) {
                if (p.vec && k + 3 < kend) {
                    if (PRO == CBC_PRO_INTERP) {
                        float4 uu = *reinterpret_cast<const float4 *>(p.u + po[i] + k);
                        float4 vv = *reinterpret_cast<const float4 *>(p.v + po[i] + k);
                        v = act4(p.pro_act, make_float4(uu.x + pal[i] * vv.x, uu.y + pal[i] * vv.y,
                                                        uu.z + pal[i] * vv.z, uu.w + pal[i] * vv.w));
                    } else {
                        v = *reinterpret_cast<const float4 *>(p.A + (size_t)r * p.lda + k);
                        if (PRO == CBC_PRO_ACT)
                            v = act4(p.pro_act, v);
                    }
                } else {
                    float t[4];
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        t[j] = k + j < kend ? a_scalar<PRO>(p, r, k + j, p.u + po[i],
                                                            p.v + po[i], pal[i])
                                            : 0.0f;
                    v = make_float4(t[0], t[1], t[2], t[3]);
                }
            }
            ra[i] = v;
        }
#pragma unroll
        for (int i = 0; i < B4; i++) {
            int e = tid + i * NT;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (NN) { // W [K][N]: float4 along n
                int k = k0 + e / (BN / 4), n = n0 + (e % (BN / 4)) * 4;
                if (k < kend) {
                    const float *w = p.W + (size_t)k * p.ldw + n;
                    if (p.vec && n + 3 < p.N) {
                        v = *reinterpret_cast<const float4 *>(w);
                    } else {
                        v.x = n < p.N ? w[0] : 0.0f;
                        v.y = n + 1 < p.N ? w[1] : 0.0f;
                        v.z = n + 2 < p.N ? w[2] : 0.0f;
                        v.w = n + 3 < p.N ? w[3] : 0.0f;
                    }
                }
            } else { // W [N][K]: float4 along k
                int n = n0 + e / KQ, k = k0 + (e % KQ) * 4;
                if (n < p.N) {
                    const float *w = p.W + (size_t)n * p.ldw + k;
                    if (p.vec && k + 3 < kend) {
                        v = *reinterpret_cast<const float4 *>(w);
                    } else {
                        v.x = k < kend ? w[0] : 0.0f;
                        v.y = k + 1 < kend ? w[1] : 0.0f;
                        v.z = k + 2 < kend ? w[2] : 0.0f;
                        v.w = k + 3 < kend ? w[3] : 0.0f;
                    }
                }
            }
            rb[i] = v;
        }
    }

    __device__ __forceinline__ void store(float (*As)[BM + PAD], float (*Bs)[BN + PAD], int tid)
    {
#pragma unroll
        for (int i = 0; i < A4; i++) {
            int e = tid + i * NT, r = e / KQ, k = (e % KQ) * 4;
            As[k][r] = ra[i].x;
            As[k + 1][r] = ra[i].y;
            As[k + 2][r] = ra[i].z;
            As[k + 3][r] = ra[i].w;
        }
#pragma unroll
        for (int i = 0; i < B4; i++) {
            int e = tid + i * NT;
            if (NN) {
                int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
                *reinterpret_cast<float4 *>(&Bs[k][n]) = rb[i];
            } else {
                int n = e / KQ, k = (e % KQ) * 4;
                Bs[k][n] = rb[i].x;
                Bs[k + 1][n] = rb[i].y;
                Bs[k + 2][n] = rb[i].z;
                Bs[k + 3][n] = rb[i].w;
            }
        }
    }
};

__device__ __forceinline__ void k_range(const cbc_k_gemm &p, int &kbeg, int &kend)
{
    kbeg = p.splits > 1 ? blockIdx.z * p.kchunk : 0;
    kend = p.splits > 1 ? min(p.K, kbeg + p.kchunk) : p.K;
}

__device__ __forceinline__ void put(const cbc_k_gemm &p, int r, int c, float v)
{
    if (r >= p.M || c >= p.N)
        return;
    if (p.epi == CBC_EPI_PARTIAL)
        p.P[((size_t)blockIdx.z * p.M + r) * p.N + c] = v;
    else
        p.C[(size_t)r * p.ldc + c] = epilogue(p, r, c, v);
}

template <int BM, int BN, int BK, int TM, int TN, bool NN, int PRO>
__device__ __forceinline__ void gemm_simt(const cbc_k_gemm &p)
{
    constexpr int TX = BN / TN, PAD = 4;
    __shared__ __align__(16) float As[2][BK][BM + PAD];
    __shared__ __align__(16) float Bs[2][BK][BN + PAD];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int kbeg, kend;
    k_range(p, kbeg, kend);
    Tiles<BM, BN, BK, PAD, NN, PRO> t;
    t.init(p, m0, tid);
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;
    t.load(p, m0, n0, kbeg, kend, tid);
    t.store(As[0], Bs[0], tid);
    __syncthreads();
    for (int k0 = kbeg, it = 0; k0 < kend; k0 += BK, it++) {
        const int cur = it & 1;
        const bool more = k0 + BK < kend;
        if (more)
            t.load(p, m0, n0, k0 + BK, kend, tid); // in flight during the compute below
#pragma unroll
        for (int k = 0; k < BK; k++) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                float4 v = *reinterpret_cast<const float4 *>(&As[cur][k][ty * TM + i]);
                a[i] = v.x, a[i + 1] = v.y, a[i + 2] = v.z, a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                float4 v = *reinterpret_cast<const float4 *>(&Bs[cur][k][tx * TN + j]);
                b[j] = v.x, b[j + 1] = v.y, b[j + 2] = v.z, b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (more)
            t.store(As[cur ^ 1], Bs[cur ^ 1], tid);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            put(p, m0 + ty * TM + i, n0 + tx * TN + j, acc[i][j]);
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
__device__ __forceinline__ unsigned tf32(float x)
{
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void mma8(float *d, const unsigned *a, const unsigned *b)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// 128x128 block tile, BK 16, 8 warps of 64x32, 3xTF32, two blocks per SM
// (at most 128 registers). Each element is split into its TF32 high part
// and residual once, when the tile is stored to shared memory (dynamic: 4
// arrays x 2 stages = 69632 bytes), so the inner loop is loads and MMAs
// only.
#define TC_BM CBC_K_TC_ROWS
#define TC_BK CBC_K_TC_BK
#define TC_PAD CBC_K_TC_PAD
#define TC_STRIDE (TC_BM + TC_PAD)
#define TC_ARRAY (2 * TC_BK * TC_STRIDE)
#define TC_SMEM_BYTES CBC_K_TC_SMEM_BYTES
static_assert(TC_SMEM_BYTES == 4 * TC_ARRAY * 4, "the tile's shared memory is its four arrays");

template <bool NN, int PRO>
__device__ __forceinline__ void gemm_tc(const cbc_k_gemm &p)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    extern __shared__ __align__(16) unsigned tc_smem[];
    unsigned *Ah = tc_smem, *Al = Ah + TC_ARRAY, *Bh = Al + TC_ARRAY, *Bl = Bh + TC_ARRAY;
    constexpr int BM = TC_BM, BN = TC_BM, BK = TC_BK, S = TC_STRIDE;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32, g = lane >> 2, q = lane & 3;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int kbeg, kend;
    k_range(p, kbeg, kend);
    Tiles<BM, BN, BK, TC_PAD, NN, PRO> t;
    t.init(p, m0, tid);
    auto put_split = [&](unsigned *hi, unsigned *lo, int idx, float x) {
        unsigned h = tf32(x);
        hi[idx] = h;
        lo[idx] = tf32(x - __uint_as_float(h));
    };
    // Element (row or column x, k) of a stage lives at k * S + swz(x, k).
    // The XOR spreads the four k-quads a warp stores for one x over four
    // bank groups (without it every transposed store is a 4-way conflict);
    // the fragment loads read one k-quad per instruction, so for them it is
    // a compile-time offset and they stay conflict-free.
    auto swz = [](int x, int k) { return x ^ (((k >> 2) & 3) << 3); };
    auto store = [&](int buf) {
        const int base = buf * BK * S;
#pragma unroll
        for (int i = 0; i < t.A4; i++) {
            int e = tid + i * 256, r = e / (BK / 4), k = (e % (BK / 4)) * 4;
            float v[4] = {t.ra[i].x, t.ra[i].y, t.ra[i].z, t.ra[i].w};
#pragma unroll
            for (int j = 0; j < 4; j++)
                put_split(Ah, Al, base + (k + j) * S + swz(r, k), v[j]);
        }
#pragma unroll
        for (int i = 0; i < t.B4; i++) {
            int e = tid + i * 256;
            float v[4] = {t.rb[i].x, t.rb[i].y, t.rb[i].z, t.rb[i].w};
            if (NN) { // four consecutive n of one k: one 16-byte store each for hi and lo
                int k = e / (BN / 4), n = (e % (BN / 4)) * 4;
                unsigned h[4], l[4];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    h[j] = tf32(v[j]);
                    l[j] = tf32(v[j] - __uint_as_float(h[j]));
                }
                const int at = base + k * S + swz(n, k);
                *reinterpret_cast<uint4 *>(Bh + at) = make_uint4(h[0], h[1], h[2], h[3]);
                *reinterpret_cast<uint4 *>(Bl + at) = make_uint4(l[0], l[1], l[2], l[3]);
            } else {
                int n = e / (BK / 4), k = (e % (BK / 4)) * 4;
#pragma unroll
                for (int j = 0; j < 4; j++)
                    put_split(Bh, Bl, base + (k + j) * S + swz(n, k), v[j]);
            }
        }
    };
    float acc[4][4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                acc[i][j][c] = 0.0f;
    t.load(p, m0, n0, kbeg, kend, tid);
    store(0);
    __syncthreads();
    for (int k0 = kbeg, it = 0; k0 < kend; k0 += BK, it++) {
        const int cur = (it & 1) * BK * S;
        const bool more = k0 + BK < kend;
        if (more)
            t.load(p, m0, n0, k0 + BK, kend, tid);
#pragma unroll
        for (int kk = 0; kk < BK; kk += 8) {
            // k1 rows (kk + q) share one k-quad, k2 rows (kk + 4 + q) the next
            const int k1 = cur + (kk + q) * S, k2 = k1 + 4 * S;
            unsigned a[4][4], b[4][2];
            auto frag_a = [&](const unsigned *As) {
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const int r = wm + g;
                    a[i][0] = As[k1 + r + swz(i * 16, kk)];
                    a[i][1] = As[k1 + r + swz(i * 16 + 8, kk)];
                    a[i][2] = As[k2 + r + swz(i * 16, kk + 4)];
                    a[i][3] = As[k2 + r + swz(i * 16 + 8, kk + 4)];
                }
            };
            auto frag_b = [&](const unsigned *Bs) {
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    b[j][0] = Bs[k1 + wn + g + swz(j * 8, kk)];
                    b[j][1] = Bs[k2 + wn + g + swz(j * 8, kk + 4)];
                }
            };
            auto pass = [&]() {
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        mma8(acc[i][j], a[i], b[j]);
            };
            // Three passes of 16 independent MMAs (issued per accumulator,
            // the three products would wait on each other), with one set of
            // fragment registers: lo.hi, hi.hi, then hi.lo. Every
            // accumulator takes its terms in the same order.
            frag_a(Al);
            frag_b(Bh);
            pass();
            frag_a(Ah);
            pass();
            frag_b(Bl);
            pass();
        }
        if (more)
            store((it + 1) & 1);
        __syncthreads();
    }
    // The epilogue goes through shared memory (the staging buffers are free:
    // the loop ended on a barrier). The accumulators land in a 128 x 132
    // tile; then each thread finishes outputs along rows, so the loads the
    // epilogue makes (u, v, Z, x) and the stores are coalesced, a row's
    // input and step are worked out once, and the epilogue is inlined once.
    constexpr int CS = BN + 4;
    static_assert((BM * CS + 2 * BM) * 4 <= TC_SMEM_BYTES, "epilogue tile exceeds the staging");
    float *Cs = reinterpret_cast<float *>(tc_smem);
    int *rb = reinterpret_cast<int *>(Cs + BM * CS), *rs = rb + BM;
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                Cs[(wm + i * 16 + g + (c >> 1) * 8) * CS + wn + j * 8 + q * 2 + (c & 1)] = acc[i][j][c];
    if (tid < BM) {
        int gr = p.row0 + m0 + tid, b = p.S > 0 ? gr / p.S : 0;
        rb[tid] = b;
        rs[tid] = gr - b * p.S;
    }
    __syncthreads();
    if (NN && p.sum_steps) { // only the layer-1 backward (NN) sums steps
        // finish in place, then each thread sums one column over the rows
        // of every other input of the tile, in row order
#pragma unroll 4
        for (int e = tid; e < BM * BN; e += 256) {
            const int rr = e / BN, cc = e % BN, r = m0 + rr, c = n0 + cc;
            if (r < p.M && c < p.N)
                Cs[rr * CS + cc] = epilogue_bs(p, r, c, Cs[rr * CS + cc], rb[rr], rs[rr]);
        }
        __syncthreads();
        const int cc = tid % BN, c = n0 + cc, rows = min(BM, p.M - m0);
        const int bfirst = m0 / p.S, blast = (m0 + rows - 1) / p.S; // chunk-local inputs
        for (int b = bfirst + tid / BN; c < p.N && b <= blast; b += 256 / BN) {
            const int lo = max(b * p.S - m0, 0), hi = min((b + 1) * p.S - m0, rows);
            float sum = 0.0f;
            for (int rr = lo; rr < hi; rr++)
                sum += Cs[rr * CS + cc];
            const int slot = blockIdx.y - (b * p.S) / BM;
            p.Q[((size_t)b * p.sum_slots + slot) * p.N + c] = sum;
        }
    } else {
#pragma unroll 4
        for (int e = tid; e < BM * BN; e += 256) {
            const int rr = e / BN, cc = e % BN, r = m0 + rr, c = n0 + cc;
            if (r < p.M && c < p.N)
                finish(p, r, c, Cs[rr * CS + cc], rb[rr], rs[rr]);
        }
    }
#else
    __trap(); // the host launches tensor-core kernels on sm_80 and later only
#endif
}

// The 128-row SIMT tiles serve images without tensor cores only; in the
// others (the host never launches them there) they are a trap, which keeps
// about 30% out of every sm_80+ image, all of which is hashed before its
// first load.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GEMM_S128(NN, PRO) __trap()
#else
#define GEMM_S128(NN, PRO) gemm_simt<128, 128, 8, 8, 8, NN, PRO>(p)
#endif

#define GEMM_FAMILY(suffix, NN, PRO)                                                               \
    extern "C" __global__ void __launch_bounds__(256, 2) gemm_s128_##suffix(cbc_k_gemm p)          \
    {                                                                                              \
        GEMM_S128(NN, PRO);                                                                        \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256) gemm_s64_##suffix(cbc_k_gemm p)              \
    {                                                                                              \
        gemm_simt<64, 64, 16, 4, 4, NN, PRO>(p);                                                   \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 2) gemm_tc_##suffix(cbc_k_gemm p)            \
    {                                                                                              \
        gemm_tc<NN, PRO>(p);                                                                       \
    }

// The combinations the engine uses: forward (A . W^T) with a plain A, the
// previous layer's activation or the path point; backward (A . W).
GEMM_FAMILY(nt_plain, false, CBC_PRO_PLAIN)
GEMM_FAMILY(nt_act, false, CBC_PRO_ACT)
GEMM_FAMILY(nt_interp, false, CBC_PRO_INTERP)
GEMM_FAMILY(nn, true, CBC_PRO_PLAIN)

// Split K: C = epilogue(sum over z of P[z]), z in a fixed order.
extern "C" __global__ void gemm_reduce(cbc_k_gemm p)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t mn = (size_t)p.M * p.N;
    if (e >= mn)
        return;
    float s = 0.0f;
    for (int z = 0; z < p.splits; z++)
        s += p.P[(size_t)z * mn + e];
    // K is split only when the output has fewer 128x128 tiles than the GPU
    // has SMs, so M * N is far below 2^32: 32-bit division
    int r = (int)((unsigned)e / (unsigned)p.N), c = (int)((unsigned)e - (unsigned)r * p.N);
    p.C[(size_t)r * p.ldc + c] = epilogue_inline(p, r, c, s);
}


// At most 8 rows of A (one input). The rows go to shared memory in chunks
// (the prologue applied once per element), then:
//  nt: a warp per output column, lanes across K, a shuffle reduction;
//  nn: a lane per output column, the 8 warps across K, a shared reduction.
#define SK_CHUNK 1024

__device__ __noinline__ float a_elem(const cbc_k_gemm &p, int r, int k)
{
    if (p.pro == CBC_PRO_INTERP) {
        int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
        size_t o = (size_t)b * p.ldu + k;
        return act_f(p.pro_act, p.u[o] + p.alpha[s] * p.v[o]);
    }
    float a = p.A[(size_t)r * p.lda + k];
    return p.pro == CBC_PRO_ACT ? act_f(p.pro_act, a) : a;
}


__device__ __forceinline__ void stage_rows(const cbc_k_gemm &p, float (*As)[SK_CHUNK], int k0, int kc)
{
    for (int e = threadIdx.x; e < p.M * kc; e += blockDim.x) {
        int m = e / kc, k = e - m * kc;
        As[m][k] = a_elem(p, m, k0 + k);
    }
}

extern "C" __global__ void __launch_bounds__(256) gemm_skinny_nt(cbc_k_gemm p)
{
    __shared__ float As[8][SK_CHUNK];
    const int lane = threadIdx.x & 31, n = blockIdx.x * 8 + (threadIdx.x >> 5);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k0 = 0; k0 < p.K; k0 += SK_CHUNK) {
        int kc = min(SK_CHUNK, p.K - k0);
        __syncthreads();
        stage_rows(p, As, k0, kc);
        __syncthreads();
        if (n < p.N) {
            const float *w = p.W + (size_t)n * p.ldw + k0;
            for (int k = lane; k < kc; k += 32) {
                float wk = w[k];
#pragma unroll
                for (int m = 0; m < 8; m++)
                    if (m < p.M)
                        acc[m] = fmaf(As[m][k], wk, acc[m]);
            }
        }
    }
    if (n >= p.N)
        return;
#pragma unroll
    for (int m = 0; m < 8; m++) {
        float v = acc[m];
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0 && m < p.M)
            p.C[(size_t)m * p.ldc + n] = epilogue(p, m, n, v);
    }
}

extern "C" __global__ void __launch_bounds__(256) gemm_skinny_nn(cbc_k_gemm p)
{
    __shared__ float As[8][SK_CHUNK];
    __shared__ float red[8][8][33];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, c = blockIdx.x * 32 + lane;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k0 = 0; k0 < p.K; k0 += SK_CHUNK) {
        int kc = min(SK_CHUNK, p.K - k0);
        __syncthreads();
        stage_rows(p, As, k0, kc);
        __syncthreads();
        if (c < p.N) {
#pragma unroll 4
            for (int k = warp; k < kc; k += 8) {
                float wk = p.W[(size_t)(k0 + k) * p.ldw + c];
#pragma unroll
                for (int m = 0; m < 8; m++)
                    if (m < p.M)
                        acc[m] = fmaf(As[m][k], wk, acc[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < 8; m++)
        red[warp][m][lane] = acc[m];
    __syncthreads();
    if (warp == 0 && c < p.N) {
        for (int m = 0; m < p.M; m++) {
            float v = 0.0f;
#pragma unroll
            for (int w = 0; w < 8; w++)
                v += red[w][m][lane];
            p.C[(size_t)m * p.ldc + c] = epilogue(p, m, c, v);
        }
    }
}

// ---- the last layer, one output ------------------------------------------

// act'(z) given f = act(z) as well: tanh and sigmoid from f, no second
// transcendental.
__device__ __forceinline__ float act_df_given(int a, float z, float f)
{
    switch (a) {
    case CBC_K_ACT_TANH: return 1.0f - f * f;
    case CBC_K_ACT_SIGMOID: return f * (1.0f - f);
    default: return act_df(a, z);
    }
}

// The hidden pre-activation z(r, k) of the last hidden layer: Z, or the
// path u + alpha v when that layer is layer 1.
__device__ __forceinline__ float out_z(const cbc_k_output &p, int r, int k, int b, int s)
{
    if (p.pro == CBC_PRO_INTERP) {
        size_t o = (size_t)b * p.ldu + k;
        return p.u[o] + p.alpha[s] * p.v[o];
    }
    return p.A[(size_t)r * p.lda + k];
}

// A warp per row: zo = wt . a(r) + bt; fo = act(zo); dfo = act'(zo); with
// p.delta, also the last hidden layer's delta of the row (see the struct).
// Up to OUT_KEEP * 32 hidden values stay in registers between the two; a
// wider layer reads the rest again (from L1: the warp just read them).
// The hidden activation is a template parameter for tanh (with a runtime
// switch in the unrolled loops a kernel over every path row outgrew the
// instruction cache) and read at run time (PA < 0) for the others, which
// keeps the image small: every byte of it is hashed before it is loaded.
#define OUT_KEEP 8
template <int PA_>
__device__ __forceinline__ void output_row(const cbc_k_output &p, int r, int lane)
{
    // KEEP = the first OUT_KEEP * 32 hidden values are held in registers
    constexpr bool KEEP = PA_ >= 0;
    constexpr int NK = KEEP ? OUT_KEEP : 0;
    const int PA = KEEP ? PA_ : p.pro == CBC_PRO_PLAIN ? CBC_K_ACT_IDENTITY : p.pro_act;
    int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
    // the row's target: one for every row, or its input's (p.targets)
    const int t = p.targets ? p.targets[b] : p.target;
    const float *wt = p.targets ? p.W + (size_t)t * p.K : p.wt;
    const float bt = p.targets ? (p.bias ? p.bias[t] : 0.0f) : p.bt;
    float z;
    float kz[OUT_KEEP], ka[OUT_KEEP];
    if (p.pro < 0) { // one-layer model: the output is layer 1 itself
        size_t o = (size_t)b * p.ldu + t;
        z = p.u[o] + p.alpha[s] * p.v[o];
    } else {
        float acc = 0.0f;
#pragma unroll
        for (int j = 0; j < NK; j++) {
            int k = lane + 32 * j;
            kz[j] = ka[j] = 0.0f;
            if (k < p.K) {
                kz[j] = out_z(p, r, k, b, s);
                ka[j] = act_f(PA, kz[j]);
                acc = fmaf(wt[k], ka[j], acc);
            }
        }
        for (int k = lane + 32 * NK; k < p.K; k += 32)
            acc = fmaf(wt[k], act_f(PA, out_z(p, r, k, b, s)), acc);
        for (int o = 16; o > 0; o >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, o);
        z = acc + bt;
    }
    float dfo = act_df(p.act, z);
    if (lane == 0) {
        p.fo[r] = act_f(p.act, z);
        if (p.dfo)
            p.dfo[r] = dfo;
    }
    if (!p.delta || p.pro < 0)
        return;
    const float scale = dfo * (p.pro == CBC_PRO_INTERP ? p.weight[s] : 1.0f);
    float *drow = p.delta + (size_t)r * p.K;
#pragma unroll
    for (int j = 0; j < NK; j++) {
        int k = lane + 32 * j;
        if (k < p.K)
            drow[k] = wt[k] * scale * act_df_given(PA, kz[j], ka[j]);
    }
    for (int k = lane + 32 * NK; k < p.K; k += 32)
        drow[k] = wt[k] * scale * act_df(PA, out_z(p, r, k, b, s));
}

extern "C" __global__ void mlp_output(cbc_k_output p)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (r >= p.R)
        return;
    if (p.ends_only)
        r = (r >> 1) * p.S + p.S - 2 + (r & 1);
    // PRO_PLAIN reads the values as they are: the identity
    if (p.pro != CBC_PRO_PLAIN && p.pro_act == CBC_K_ACT_TANH)
        output_row<CBC_K_ACT_TANH>(p, r, lane);
    else
        output_row<-1>(p, r, lane);
}

// D[b0 + b][k] = the sum of input b's per-tile partial sums (see
// cbc_k_gemm.sum_steps), in tile order: the same result on every run.
extern "C" __global__ void reduce_step_partials(float *D, const float *Q, int nb, int S, int K,
                                                int slots, int b0)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)nb * K)
        return;
    int b = (int)(e / K), k = (int)(e % K);
    int n = ((b + 1) * S - 1) / TC_BM - (b * S) / TC_BM + 1;
    float acc = 0.0f;
    for (int j = 0; j < n; j++)
        acc += Q[((size_t)b * slots + j) * K + k];
    D[(size_t)(b0 + b) * K + k] = acc;
}

// D[b0 + b][k] = sum over the S rows of input b of E[row][k].
extern "C" __global__ void reduce_steps(float *D, const float *E, int nb, int S, int K, int b0)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)nb * K)
        return;
    int b = (int)(e / K), k = (int)(e % K);
    const float *p = E + (size_t)b * S * K + k;
    float acc = 0.0f;
    for (int s = 0; s < S; s++)
        acc += p[(size_t)s * K];
    D[(size_t)(b0 + b) * K + k] = acc;
}

// One-layer models: D[b][k] = (k == target) * sum_s w[s] dfo[b*S + s], the
// target input b's (targets[b0 + b]) when targets is set.
extern "C" __global__ void reduce_output(float *D, const float *dfo, const float *weight, int nb,
                                         int S, int K, int target, int b0, const int *targets)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)nb * K)
        return;
    int b = (int)(e / K), k = (int)(e % K);
    float acc = 0.0f;
    if (k == (targets ? targets[b0 + b] : target))
        for (int s = 0; s < S; s++)
            acc += weight[s] * dfo[(size_t)b * S + s];
    D[(size_t)(b0 + b) * K + k] = acc;
}

// The path's inputs for layer 1, stacked: rows [0, nu) the baselines (nu
// is 1 when every input shares one baseline: zeros, a scalar or one
// array), rows [nu, nu + n) the differences x - x'.
extern "C" __global__ void build_uv_input(float *out, const float *x, cbc_k_base base, int n,
                                          int nu, int F)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)(nu + n) * F)
        return;
    int row = (int)(e / F), i = (int)(e % F);
    if (row < nu) {
        out[e] = base_at(base, row, F, i);
    } else {
        int b = row - nu;
        out[e] = x[(size_t)b * F + i] - base_at(base, b, F, i);
    }
}

// rows[i][k] = rows[n - 1][k] for every i < n - 1: layer 1 of one shared
// baseline, given to every input.
extern "C" __global__ void copy_last_row(float *rows, int n, int K)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)(n - 1) * K)
        return;
    rows[e] = rows[(size_t)(n - 1) * K + e % K];
}

// sums[b] = sum_i attr[b][i], a warp per row, in double (as the CPU does).
extern "C" __global__ void row_sums(const float *attr, double *sums, int n, int F)
{
    int b = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (b >= n)
        return;
    double s = 0;
    for (int i = lane; i < F; i += 32)
        s += attr[(size_t)b * F + i];
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        sums[b] = s;
}

// Sets *bad to 1 when any of n values is NaN or Inf (inputs given as device
// pointers cannot be checked on the host).
extern "C" __global__ void check_finite(const float *v, size_t n, int *bad)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !isfinite(v[i]))
        *bad = 1;
}

// F(x') and F(x) of each input: the rows with alpha = 0 and 1 (the last two).
extern "C" __global__ void gather_endpoints(float *out, const float *fo, int nb, int S, int b0)
{
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= nb)
        return;
    out[2 * (b0 + b)] = fo[(size_t)b * S + S - 1];     // alpha = 1: F(x)
    out[2 * (b0 + b) + 1] = fo[(size_t)b * S + S - 2]; // alpha = 0: F(x')
}

// ---- the layered path: a layer's LayerNorm and activation, whole rows ----
//
// For the models the fused kernels do not take (see struct cbc_k_layer). A
// warp per row; lane l owns elements l, l + 32, ...; every pass over a row
// reads back only what the same lane wrote, so the warp needs no barrier
// but before lane 0 reads fo's element.

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// An elementwise activation with its parameter (LeakyReLU's slope, ELU's alpha).
__device__ __forceinline__ float act_fp(int a, float z, float prm)
{
    if (a == CBC_K_ACT_LEAKY_RELU)
        return z > 0.0f ? z : prm * z;
    if (a == CBC_K_ACT_ELU)
        return z > 0.0f ? z : prm * expm1f(z);
    return act_f(a, z);
}

__device__ __forceinline__ float act_dfp(int a, float z, float prm)
{
    if (a == CBC_K_ACT_LEAKY_RELU)
        return z > 0.0f ? 1.0f : prm;
    if (a == CBC_K_ACT_ELU)
        return z > 0.0f ? 1.0f : prm * expf(z);
    return act_df(a, z);
}

// Mean and 1/sqrt(biased variance + eps) of row v (two passes: the
// deviations are summed, not the squares, as PyTorch does).
__device__ __forceinline__ void row_stats(const float *v, int H, float eps, int lane, float &mean,
                                          float &rstd)
{
    float s = 0.0f;
    for (int j = lane; j < H; j += 32)
        s += v[j];
    mean = warp_sum(s) / H;
    float q = 0.0f;
    for (int j = lane; j < H; j += 32) {
        float d = v[j] - mean;
        q = fmaf(d, d, q);
    }
    rstd = rsqrtf(warp_sum(q) / H + eps);
}

__device__ __forceinline__ float ln_affine(const cbc_k_layer &p, int j, float xhat)
{
    return xhat * (p.gamma ? p.gamma[j] : 1.0f) + (p.beta ? p.beta[j] : 0.0f);
}

// The activation's input y_j: z_j, or LayerNorm(z)_j before the activation.
__device__ __forceinline__ float act_in(const cbc_k_layer &p, const float *z, int j, float mean,
                                       float rstd)
{
    return p.norm == CBC_K_NORM_BEFORE_ACT ? ln_affine(p, j, (z[j] - mean) * rstd) : z[j];
}

// max and sum of exp(y - max) over the row: the (log-)softmax's statistics.
__device__ __forceinline__ void softmax_stats(const cbc_k_layer &p, const float *z, float mean,
                                              float rstd, int lane, float &mx, float &se)
{
    float m = -INFINITY;
    for (int j = lane; j < p.H; j += 32)
        m = fmaxf(m, act_in(p, z, j, mean, rstd));
    mx = warp_max(m);
    float s = 0.0f;
    for (int j = lane; j < p.H; j += 32)
        s += expf(act_in(p, z, j, mean, rstd) - mx);
    se = warp_sum(s);
}

// The row's target: p.target, or its input's when p.targets is set.
__device__ __forceinline__ int row_target(const cbc_k_layer &p, int r)
{
    return p.targets ? p.targets[(p.row0 + r) / p.S] : p.target;
}

__device__ __forceinline__ float rmul_at(const cbc_k_layer &p, int j)
{
    return p.rmul ? p.rmul[j] : 1.0f;
}

extern "C" __global__ void layer_forward(cbc_k_layer p)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (r >= p.R)
        return;
    const int H = p.H;
    float *z = p.Z + (size_t)r * H, *a = p.A + (size_t)r * H;
    const float *src = p.residual ? p.src + (size_t)r * H : nullptr;
    if (p.u) {
        int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
        const float al = p.alpha[s];
        for (int j = lane; j < H; j += 32)
            z[j] = p.u[(size_t)b * H + j] + al * p.v[(size_t)b * H + j];
    }
    // a residual before the activation becomes part of z: the backward reads z
    if (p.residual == CBC_K_RESIDUAL_BEFORE_ACT)
        for (int j = lane; j < H; j += 32)
            z[j] = fmaf(rmul_at(p, j), src[j], z[j]);
    float mean = 0.0f, rstd = 1.0f;
    if (p.norm == CBC_K_NORM_BEFORE_ACT)
        row_stats(z, H, p.eps, lane, mean, rstd);
    if (p.act == CBC_K_ACT_SOFTMAX || p.act == CBC_K_ACT_LOG_SOFTMAX) {
        float mx, se;
        softmax_stats(p, z, mean, rstd, lane, mx, se);
        const float lse = logf(se);
        for (int j = lane; j < H; j += 32) {
            float d = act_in(p, z, j, mean, rstd) - mx;
            a[j] = p.act == CBC_K_ACT_SOFTMAX ? expf(d) / se : d - lse;
        }
    } else {
        for (int j = lane; j < H; j += 32)
            a[j] = act_fp(p.act, act_in(p, z, j, mean, rstd), p.act_param);
    }
    if (p.norm == CBC_K_NORM_AFTER_ACT) {
        row_stats(a, H, p.eps, lane, mean, rstd);
        for (int j = lane; j < H; j += 32)
            a[j] = ln_affine(p, j, (a[j] - mean) * rstd);
    }
    // the output's scale, shift and residual after everything
    if (p.mul || p.add || p.residual == CBC_K_RESIDUAL_AFTER)
        for (int j = lane; j < H; j += 32) {
            float v = fmaf(a[j], p.mul ? p.mul[j] : 1.0f, p.add ? p.add[j] : 0.0f);
            if (p.residual == CBC_K_RESIDUAL_AFTER)
                v = fmaf(rmul_at(p, j), src[j], v);
            a[j] = v;
        }
    if (lane == 0 && p.stats) {
        p.stats[2 * (size_t)r] = mean;
        p.stats[2 * (size_t)r + 1] = rstd;
    }
    if (p.fo) {
        __syncwarp();
        if (lane == 0)
            p.fo[r] = a[row_target(p, r)];
    }
}

// g (in dZ's row) from dF/d(LayerNorm output) to dF/d(its input v):
//   g = rstd (gy - mean(gy) - xhat mean(gy xhat)), gy = g gamma, xhat = (v - mean) rstd;
// v_j is given by vf(j).
template <typename V>
__device__ __forceinline__ void ln_back(const cbc_k_layer &p, float *g, V vf, float mean,
                                        float rstd, int lane)
{
    float m1 = 0.0f, m2 = 0.0f;
    for (int j = lane; j < p.H; j += 32) {
        float gy = g[j] * (p.gamma ? p.gamma[j] : 1.0f);
        m1 += gy;
        m2 = fmaf(gy, (vf(j) - mean) * rstd, m2);
    }
    m1 = warp_sum(m1) / p.H;
    m2 = warp_sum(m2) / p.H;
    for (int j = lane; j < p.H; j += 32) {
        float gy = g[j] * (p.gamma ? p.gamma[j] : 1.0f);
        g[j] = rstd * (gy - m1 - (vf(j) - mean) * rstd * m2);
    }
}

extern "C" __global__ void layer_backward(cbc_k_layer p)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (r >= p.R)
        return;
    const int H = p.H;
    const float *z = p.Z + (size_t)r * H;
    float *g = p.dZ + (size_t)r * H;
    const float mean = p.stats ? p.stats[2 * (size_t)r] : 0.0f,
                rstd = p.stats ? p.stats[2 * (size_t)r + 1] : 1.0f;
    const int target = row_target(p, r);
    for (int j = lane; j < H; j += 32) {
        float gj = p.dA ? p.dA[(size_t)r * H + j] : (j == target ? 1.0f : 0.0f);
        if (p.dR_in) // what later residuals sent back to this layer's output
            gj += p.dR_in[(size_t)r * H + j];
        if (p.residual == CBC_K_RESIDUAL_AFTER)
            p.dR_out[(size_t)r * H + j] += rmul_at(p, j) * gj;
        g[j] = p.mul ? gj * p.mul[j] : gj;
    }
    if (p.norm == CBC_K_NORM_AFTER_ACT) // through the LayerNorm of act(z)
        ln_back(p, g, [&](int j) { return act_fp(p.act, z[j], p.act_param); }, mean, rstd, lane);
    if (p.act == CBC_K_ACT_SOFTMAX || p.act == CBC_K_ACT_LOG_SOFTMAX) {
        float mx, se, dot = 0.0f;
        softmax_stats(p, z, mean, rstd, lane, mx, se);
        for (int j = lane; j < H; j += 32) // <g, p> for softmax, sum(g) for its logarithm
            dot += p.act == CBC_K_ACT_SOFTMAX ? g[j] * (expf(act_in(p, z, j, mean, rstd) - mx) / se)
                                              : g[j];
        dot = warp_sum(dot);
        for (int j = lane; j < H; j += 32) {
            float pj = expf(act_in(p, z, j, mean, rstd) - mx) / se;
            g[j] = p.act == CBC_K_ACT_SOFTMAX ? pj * (g[j] - dot) : g[j] - pj * dot;
        }
    } else {
        for (int j = lane; j < H; j += 32)
            g[j] *= act_dfp(p.act, act_in(p, z, j, mean, rstd), p.act_param);
    }
    if (p.norm == CBC_K_NORM_BEFORE_ACT)
        ln_back(p, g, [&](int j) { return z[j]; }, mean, rstd, lane);
    if (p.residual == CBC_K_RESIDUAL_BEFORE_ACT) // z's residual: its share of dF/dz
        for (int j = lane; j < H; j += 32)
            p.dR_out[(size_t)r * H + j] += rmul_at(p, j) * g[j];
    if (p.weight) {
        int gr = p.row0 + r, s = gr % p.S;
        const float w = p.weight[s];
        for (int j = lane; j < H; j += 32)
            g[j] *= w;
    }
}
