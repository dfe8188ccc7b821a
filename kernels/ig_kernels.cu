// ig_kernels.cu: the Integrated Gradients kernels, built by `cubincache
// build` for every configured SM target, embedded into libcubincache and
// loaded by the loader. Every kernel is extern "C", found by its plain name.
//
// Three families:
//  - the seed's interpolate_input / perturb_dimension (one point, one
//    feature), kept for the naive benchmark loop, and their batched forms
//    for central differences over a whole chunk of steps at once;
//  - an FP32 SIMT GEMM (double-buffered shared-memory tiles, 8x8 or 4x4
//    results per thread) whose A-operand prologue can build the path point
//    act(u + alpha*v) on the fly (layer 1 is linear in alpha, so it is
//    never materialised per step) and whose epilogue applies bias,
//    activation derivatives, quadrature weights or (x - x');
//  - small kernels: one output per row, the last layer's delta, the sum
//    over steps, and gathers.
// Arithmetic is FP32 with FP32 accumulation (no TF32), so results stay
// within 1e-4 of the double-precision CPU reference.
#include "ig_kernels.h"

// ---- activations -------------------------------------------------------

__device__ __forceinline__ float act_f(int a, float z)
{
    switch (a) {
    case 1: return fmaxf(z, 0.0f);
    case 2: return tanhf(z);
    case 3: return 1.0f / (1.0f + expf(-z));
    case 4: return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    default: return z;
    }
}

__device__ __forceinline__ float act_df(int a, float z)
{
    switch (a) {
    case 1: return z > 0.0f ? 1.0f : 0.0f;
    case 2: {
        float t = tanhf(z);
        return 1.0f - t * t;
    }
    case 3: {
        float s = 1.0f / (1.0f + expf(-z));
        return s * (1.0f - s);
    }
    case 4:
        return 0.5f * (1.0f + erff(z * 0.70710678118654752f)) +
               z * 0.39894228040143268f * expf(-0.5f * z * z);
    default: return 1.0f;
    }
}

__device__ __forceinline__ float base_at(const cbc_k_base &b, int row, int F, int col)
{
    switch (b.kind) {
    case 1: return b.scalar;
    case 2: return b.data[col];
    case 3: return b.data[(size_t)row * F + col];
    default: return 0.0f;
    }
}

// ---- the seed's kernels --------------------------------------------------

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

// ---- GEMM ------------------------------------------------------------------

__device__ __forceinline__ float a_elem(const cbc_k_gemm &p, int r, int k)
{
    if (p.pro == CBC_PRO_INTERP) {
        int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
        size_t o = (size_t)b * p.ldu + k;
        return act_f(p.pro_act, p.u[o] + p.alpha[s] * p.v[o]);
    }
    float a = p.A[(size_t)r * p.lda + k];
    return p.pro == CBC_PRO_ACT ? act_f(p.pro_act, a) : a;
}

__device__ __forceinline__ float epilogue(const cbc_k_gemm &p, int r, int c, float val)
{
    switch (p.epi) {
    case CBC_EPI_DACT: return val * act_df(p.epi_act, p.Z[(size_t)r * p.ldz + c]);
    case CBC_EPI_DACT_L1: {
        int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
        size_t o = (size_t)b * p.ldu + c;
        return val * act_df(p.epi_act, p.u[o] + p.alpha[s] * p.v[o]) * p.weight[s];
    }
    case CBC_EPI_MUL_DIFF: {
        int gr = p.row0 + r;
        return val * (p.x[(size_t)gr * p.N + c] - base_at(p.base, gr, p.N, c));
    }
    default:
        if (p.bias && r < p.bias_rows)
            val += p.bias[c];
        return val;
    }
}

template <int BM, int BN, int BK, int TM, int TN>
__device__ __forceinline__ void gemm_tiled(const cbc_k_gemm &p)
{
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    constexpr int LA = BM * BK / NT, LB = BN * BK / NT;
    __shared__ __align__(16) float As[2][BK][BM + 4];
    __shared__ __align__(16) float Bs[2][BK][BN + 4];
    const int tid = threadIdx.x, tx = tid % TX, ty = tid / TX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float ra[LA], rb[LB];
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    auto load = [&](int k0) {
#pragma unroll
        for (int i = 0; i < LA; i++) {
            int e = tid + i * NT, r = e / BK, k = e % BK;
            int gr = m0 + r, gk = k0 + k;
            ra[i] = (gr < p.M && gk < p.K) ? a_elem(p, gr, gk) : 0.0f;
        }
#pragma unroll
        for (int i = 0; i < LB; i++) {
            int e = tid + i * NT;
            if (p.nn) {
                int k = e / BN, n = e % BN, gk = k0 + k, gn = n0 + n;
                rb[i] = (gk < p.K && gn < p.N) ? p.W[(size_t)gk * p.ldw + gn] : 0.0f;
            } else {
                int n = e / BK, k = e % BK, gk = k0 + k, gn = n0 + n;
                rb[i] = (gk < p.K && gn < p.N) ? p.W[(size_t)gn * p.ldw + gk] : 0.0f;
            }
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int i = 0; i < LA; i++) {
            int e = tid + i * NT;
            As[buf][e % BK][e / BK] = ra[i];
        }
#pragma unroll
        for (int i = 0; i < LB; i++) {
            int e = tid + i * NT;
            if (p.nn)
                Bs[buf][e / BN][e % BN] = rb[i];
            else
                Bs[buf][e % BK][e / BK] = rb[i];
        }
    };

    load(0);
    store(0);
    __syncthreads();
    for (int k0 = 0, it = 0; k0 < p.K; k0 += BK, it++) {
        const int cur = it & 1;
        const bool more = k0 + BK < p.K;
        if (more)
            load(k0 + BK); // global loads in flight while this tile is computed
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
            store(cur ^ 1);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int r = m0 + ty * TM + i;
        if (r >= p.M)
            continue;
#pragma unroll
        for (int j = 0; j < TN; j++) {
            int c = n0 + tx * TN + j;
            if (c < p.N)
                p.C[(size_t)r * p.ldc + c] = epilogue(p, r, c, acc[i][j]);
        }
    }
}

// 128x128 tiles, 256 threads, 8x8 results each: large M (batches of inputs).
// Two blocks per SM: 128 registers (ptxas spills 4 bytes for it).
extern "C" __global__ void __launch_bounds__(256, 2) gemm_128(cbc_k_gemm p)
{
    gemm_tiled<128, 128, 8, 8, 8>(p);
}

// 64x64 tiles, 256 threads, 4x4 results each: tens to hundreds of rows.
extern "C" __global__ void __launch_bounds__(256) gemm_64(cbc_k_gemm p)
{
    gemm_tiled<64, 64, 8, 4, 4>(p);
}

// At most 8 rows of A (one input): a warp per output column, A . W^T.
extern "C" __global__ void gemm_skinny_nt(cbc_k_gemm p)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (warp >= p.N)
        return;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const float *w = p.W + (size_t)warp * p.ldw;
    for (int k = lane; k < p.K; k += 32) {
        float wk = w[k];
#pragma unroll
        for (int m = 0; m < 8; m++)
            if (m < p.M)
                acc[m] = fmaf(a_elem(p, m, k), wk, acc[m]);
    }
#pragma unroll
    for (int m = 0; m < 8; m++) {
        float v = acc[m];
        for (int o = 16; o > 0; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0 && m < p.M)
            p.C[(size_t)m * p.ldc + warp] = epilogue(p, m, warp, v);
    }
}

// At most 8 rows of A: a thread per output column, A . W with W [K][N].
extern "C" __global__ void gemm_skinny_nn(cbc_k_gemm p)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= p.N)
        return;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < p.K; k++) {
        float wk = p.W[(size_t)k * p.ldw + c];
#pragma unroll
        for (int m = 0; m < 8; m++)
            if (m < p.M)
                acc[m] = fmaf(a_elem(p, m, k), wk, acc[m]);
    }
#pragma unroll
    for (int m = 0; m < 8; m++)
        if (m < p.M)
            p.C[(size_t)m * p.ldc + c] = epilogue(p, m, c, acc[m]);
}

// ---- the last layer, one output ------------------------------------------

// A warp per row: zo = wt . a(r) + bt; fo = act(zo); dfo = act'(zo).
extern "C" __global__ void mlp_output(cbc_k_output p)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (r >= p.R)
        return;
    int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
    float z;
    if (p.pro < 0) { // one-layer model: the output is layer 1 itself
        size_t o = (size_t)b * p.ldu + p.target;
        z = p.u[o] + p.alpha[s] * p.v[o];
    } else {
        float acc = 0.0f;
        for (int k = lane; k < p.K; k += 32) {
            float a;
            if (p.pro == CBC_PRO_INTERP) {
                size_t o = (size_t)b * p.ldu + k;
                a = act_f(p.pro_act, p.u[o] + p.alpha[s] * p.v[o]);
            } else {
                a = p.A[(size_t)r * p.lda + k];
                if (p.pro == CBC_PRO_ACT)
                    a = act_f(p.pro_act, a);
            }
            acc = fmaf(p.wt[k], a, acc);
        }
        for (int o = 16; o > 0; o >>= 1)
            acc += __shfl_xor_sync(0xffffffffu, acc, o);
        z = acc + p.bt;
    }
    if (lane == 0) {
        p.fo[r] = act_f(p.act, z);
        if (p.dfo)
            p.dfo[r] = act_df(p.act, z);
    }
}

// The last hidden layer's delta, all rows:
//   delta[r][k] = wt[k] * dfo[r] * act'(z(r, k)) [* w[s] when it is layer 1]
// with z from Z (mode 0) or the path u + alpha v (mode 1, layer 1).
extern "C" __global__ void mlp_delta_last(float *delta, const float *dfo, const float *wt,
                                          const float *Z, int ldz, int act, int mode,
                                          const float *u, const float *v, int ldu,
                                          const float *alpha, const float *weight, int S, int row0,
                                          int R, int K)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)R * K)
        return;
    int r = (int)(e / K), k = (int)(e % K);
    float d = wt[k] * dfo[r];
    if (mode == 1) {
        int gr = row0 + r, b = gr / S, s = gr - b * S;
        size_t o = (size_t)b * ldu + k;
        d *= act_df(act, u[o] + alpha[s] * v[o]) * weight[s];
    } else {
        d *= act_df(act, Z[(size_t)r * ldz + k]);
    }
    delta[e] = d;
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

// One-layer models: D[b][k] = (k == target) * sum_s w[s] dfo[b*S + s].
extern "C" __global__ void reduce_output(float *D, const float *dfo, const float *weight, int nb,
                                         int S, int K, int target, int b0)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)nb * K)
        return;
    int b = (int)(e / K), k = (int)(e % K);
    float acc = 0.0f;
    if (k == target)
        for (int s = 0; s < S; s++)
            acc += weight[s] * dfo[(size_t)b * S + s];
    D[(size_t)(b0 + b) * K + k] = acc;
}

// The path's inputs for layer 1, stacked: rows [0, n) the baselines,
// rows [n, 2n) the differences x - x'.
extern "C" __global__ void build_uv_input(float *out, const float *x, cbc_k_base base, int n, int F)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= (size_t)2 * n * F)
        return;
    int row = (int)(e / F), i = (int)(e % F);
    if (row < n) {
        out[e] = base_at(base, row, F, i);
    } else {
        int b = row - n;
        out[e] = x[(size_t)b * F + i] - base_at(base, b, F, i);
    }
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
