// ig_net_kernels.cu: the kernels of convolutional networks on the GPU
// (src/ig/ig_gpu_net.c launches them), built by `cubincache build` for every
// configured SM target into their own bundle, ig_net_kernels, embedded into
// libcubincache-ig beside ig_kernels and loaded the first time a network is
// uploaded. Every kernel is extern "C".
//
//  - conv_{fwd,bwd}_{t16,t32,t64}_{f,d}: a convolution and its input
//    gradient as an implicit GEMM (the im2col matrix never exists: each
//    thread gathers its tile's elements through a table of column offsets),
//    tiles of 256x16, 128x32 or 64x64 (chosen by the group's channels) of 4x4
//    results per thread; each tile's 8 products of a result are summed in
//    float and the tiles' sums accumulated in float (f) or in double (d: a
//    result's rounding grows with its tiles, not its products, at float's
//    speed, where one double multiply-add per product ran at half of it);
//    a strided convolution's input gradient runs a phase at a time (struct
//    cbc_k_conv), each phase's pixels with only the taps that reach them;
//  - dconv_k{3,5}_o{4,8}_{f,d}: direct convolutions of stride 1, 3x3 or 5x5
//    taps, a block's input tile and weights staged in shared memory (two
//    buffers, filled by cp.async on sm_80+), 4 pixels x 4 or 8 channels per
//    thread; the input gradient is the same kernel with flipped weights;
//  - dwconv_{fwd,bwd}_{f,d}: depthwise convolutions, an output (input)
//    element per thread;
//  - pools, elementwise operators (four elements a thread where aligned),
//    rows (LayerNorm, softmax), the path's rows, the seed of the backward
//    pass and the attributions.
// Every sum runs in a fixed order: results do not vary between runs.
#include "ig_net_kernels.h"

__device__ __forceinline__ float net_act_f(int a, float z, float p)
{
    switch (a) {
    case CBC_K_ACT_IDENTITY: return z;
    case CBC_K_ACT_RELU: return fmaxf(z, 0.0f);
    case CBC_K_ACT_TANH: return tanhf(z);
    case CBC_K_ACT_SIGMOID: return 1.0f / (1.0f + expf(-z));
    case CBC_K_ACT_GELU: return 0.5f * z * (1.0f + erff(z * 0.70710678118654752f));
    case CBC_K_ACT_SILU: return z / (1.0f + expf(-z));
    case CBC_K_ACT_SOFTPLUS: return z > 20.0f ? z : log1pf(expf(z));
    case CBC_K_ACT_ELU: return z > 0.0f ? z : p * expm1f(z);
    case CBC_K_ACT_LEAKY_RELU: return z > 0.0f ? z : p * z;
    default: return z;
    }
}

__device__ __forceinline__ float net_act_df(int a, float z, float p)
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
    case CBC_K_ACT_SILU: {
        float s = 1.0f / (1.0f + expf(-z));
        return s * (1.0f + z * (1.0f - s));
    }
    case CBC_K_ACT_SOFTPLUS: return z > 20.0f ? 1.0f : 1.0f / (1.0f + expf(-z));
    case CBC_K_ACT_ELU: return z > 0.0f ? 1.0f : p * expf(z);
    case CBC_K_ACT_LEAKY_RELU: return z > 0.0f ? 1.0f : p;
    default: return 1.0f;
    }
}

// ---- convolutions: implicit GEMM ------------------------------------------

// Every element of a register tile to zero.
template <typename T, int M, int N> __device__ __forceinline__ void zero_tile(T (&a)[M][N])
{
#pragma unroll
    for (int i = 0; i < M; i++)
#pragma unroll
        for (int j = 0; j < N; j++)
            a[i][j] = 0;
}

template <typename ACC> __device__ __forceinline__ ACC mul_acc(float a, float b, ACC acc);
template <> __device__ __forceinline__ float mul_acc<float>(float a, float b, float acc)
{
    return fmaf(a, b, acc);
}
template <> __device__ __forceinline__ double mul_acc<double>(float a, float b, double acc)
{
    return fma((double)a, (double)b, acc);
}

// One tile of BM rows (m) by BN columns (n) of a group; 256 threads, each
// TM x TN results: rows tm + i (BM / TM), columns tn TN + j.
template <bool BWD, int BM, int BN, typename ACC>
__device__ __forceinline__ void conv_tile(const cbc_k_conv &p)
{
    constexpr int BK = 8, TM = 4, TN = 4, NT = 256;
    constexpr int RM = BM / TM; // threads along m
    static_assert(BM * BN == NT * TM * TN, "tile");
    __shared__ float As[BK][BM];
    __shared__ float Bs[BK][BN];
    const int t = threadIdx.x, g = blockIdx.z;
    // the pixels of this block: forward, output pixels; backward, input pixels
    // backward: the pixels of one phase (struct cbc_k_conv), PHh x PWw
    const int PH = BWD ? p.PHh : p.OH, PW = BWD ? p.PWw : p.OW, P = PH * PW;
    const long M = (long)p.R * P;
    const int N = BWD ? p.ICg : p.OCg, K = p.K;
    const long m0 = (long)blockIdx.x * BM;
    const int n0 = blockIdx.y * BN;
    // the A element each thread loads: row am (fixed), columns ak0 + j * step
    constexpr int ASTEP = NT / BM, AK = BK / ASTEP;
    const int am = t % BM, ak0 = t / BM;
    const long mrow = m0 + am;
    const bool mvalid = mrow < M;
    int ry = 0, rx = 0;
    const float *abase = p.x;
    if (mvalid) {
        long r = mrow / P;
        int q = (int)(mrow - r * P);
        int py = q / PW, px = q - py * PW;
        if (BWD) { // gy rows of this group's output channels
            ry = py + p.pt, rx = px + p.pl;
            abase = p.x + ((size_t)r * p.OC + (size_t)g * p.OCg) * ((size_t)p.OH * p.OW);
        } else {
            ry = py * p.sh - p.pt, rx = px * p.sw - p.pl;
            abase = p.x + ((size_t)r * p.IC + (size_t)g * p.ICg) * ((size_t)p.IH * p.IW);
        }
    }
    const int4 *tab = reinterpret_cast<const int4 *>(p.tab);
    const bool unit_stride = p.sh == 1 && p.sw == 1;
    // element (k, this thread's row) of the implicit A: gathered from x
    // (forward) or gy (backward) through the column table
    auto load_a = [&](int k) -> float {
        if (!mvalid || k >= K)
            return 0.0f;
        const int4 e = __ldg(&tab[k]);
        if (BWD) {
            int ty = ry - e.y, tx = rx - e.z;
            if (ty < 0 || tx < 0)
                return 0.0f;
            int oy = ty, ox = tx;
            if (!unit_stride) {
                if (ty % p.sh != 0 || tx % p.sw != 0)
                    return 0.0f;
                oy = ty / p.sh, ox = tx / p.sw;
            }
            return oy < p.OH && ox < p.OW ? __ldg(abase + e.x + (size_t)oy * p.OW + ox) : 0.0f;
        }
        int iy = ry + e.y, ix = rx + e.z;
        return iy >= 0 && iy < p.IH && ix >= 0 && ix < p.IW
                   ? __ldg(abase + e.x + ((long)ry * p.IW + rx))
                   : 0.0f;
    };
    // element e2 of the B tile (kk = e2 % BK, nn = e2 / BK): the weights
    auto load_b = [&](int k0, int e2) -> float {
        const int kk = e2 % BK, nn = e2 / BK, k = k0 + kk, n = n0 + nn;
        if (e2 >= BK * BN || k >= K || n >= N)
            return 0.0f;
        if (BWD) {
            const int4 e = __ldg(&tab[k]);
            return __ldg(p.w + (size_t)g * p.OCg * p.ICg * p.kh * p.kw + e.w +
                         (size_t)n * p.kh * p.kw);
        }
        return __ldg(p.w + ((size_t)g * p.OCg + n) * K + k);
    };
    // B: consecutive threads along k (the weight's contiguous axis)
    constexpr int BL = (BK * BN + NT - 1) / NT; // B elements per thread
    ACC acc[TM][TN];
    zero_tile(acc);
    const int tm = t % RM, tn = t / RM;
    // the next tile's elements are loaded into registers while this one
    // is computed: the gathers' latency overlaps the multiply-adds
    float ra[AK], rb[BL];
#pragma unroll
    for (int j = 0; j < AK; j++)
        ra[j] = load_a(ak0 + j * ASTEP);
#pragma unroll
    for (int i = 0; i < BL; i++)
        rb[i] = load_b(0, t + i * NT);
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int j = 0; j < AK; j++)
            As[ak0 + j * ASTEP][am] = ra[j];
#pragma unroll
        for (int i = 0; i < BL; i++)
            if (t + i * NT < BK * BN)
                Bs[(t + i * NT) % BK][(t + i * NT) / BK] = rb[i];
        __syncthreads();
        if (k0 + BK < K) {
#pragma unroll
            for (int j = 0; j < AK; j++)
                ra[j] = load_a(k0 + BK + ak0 + j * ASTEP);
#pragma unroll
            for (int i = 0; i < BL; i++)
                rb[i] = load_b(k0 + BK, t + i * NT);
        }
        if constexpr (sizeof(ACC) == sizeof(float)) {
#pragma unroll
            for (int kk = 0; kk < BK; kk++) {
                float a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; i++)
                    a[i] = As[kk][tm + i * RM];
#pragma unroll
                for (int j = 0; j < TN; j++)
                    b[j] = Bs[kk][tn * TN + j];
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        } else {
            // double: the tile's BK products of each result summed in float,
            // then that sum added to the result's accumulator, so a sum rounds
            // in double once per tile instead of once per product
            float part[TM][TN];
            zero_tile(part);
#pragma unroll
            for (int kk = 0; kk < BK; kk++) {
                float a[TM], b[TN];
#pragma unroll
                for (int i = 0; i < TM; i++)
                    a[i] = As[kk][tm + i * RM];
#pragma unroll
                for (int j = 0; j < TN; j++)
                    b[j] = Bs[kk][tn * TN + j];
#pragma unroll
                for (int i = 0; i < TM; i++)
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        part[i][j] = fmaf(a[i], b[j], part[i][j]);
            }
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] += (ACC)part[i][j];
        }
        __syncthreads();
    }
    // store: y[r][ch][pixel], ch = g N + n
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const long m = m0 + tm + i * RM;
        if (m >= M)
            continue;
        const long r = m / P;
        int q = (int)(m - r * P);
        const int CH = BWD ? p.IC : p.OC, PL = BWD ? p.IH * p.IW : P;
        if (BWD) { // the phase's pixel q in the whole plane
            const int qy = q / PW, qx = q - qy * PW;
            q = (p.phy + p.psy * qy) * p.IW + p.phx + p.psx * qx;
        }
#pragma unroll
        for (int j = 0; j < TN; j++) {
            const int n = n0 + tn * TN + j;
            if (n >= N)
                continue;
            const int ch = g * N + n;
            float *dst = p.y + ((size_t)r * CH + ch) * PL + q;
            if (BWD) {
                float v = (float)acc[i][j];
                *dst = p.accumulate ? *dst + v : v;
            } else {
                *dst = (float)(acc[i][j] + (ACC)(p.bias ? p.bias[ch] : 0.0f));
            }
        }
    }
}

#define CONV_KERNELS(BM, BN, tag)                                                                 \
    extern "C" __global__ void __launch_bounds__(256) conv_fwd_##tag##_f(cbc_k_conv p)             \
    {                                                                                              \
        conv_tile<false, BM, BN, float>(p);                                                        \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 3) conv_fwd_##tag##_d(cbc_k_conv p)             \
    {                                                                                              \
        conv_tile<false, BM, BN, double>(p);                                                       \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256) conv_bwd_##tag##_f(cbc_k_conv p)             \
    {                                                                                              \
        conv_tile<true, BM, BN, float>(p);                                                         \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 3) conv_bwd_##tag##_d(cbc_k_conv p)             \
    {                                                                                              \
        conv_tile<true, BM, BN, double>(p);                                                        \
    }
CONV_KERNELS(256, 16, t16)
CONV_KERNELS(128, 32, t32)
CONV_KERNELS(64, 64, t64)

// ---- convolutions of stride 1: direct, from shared memory -----------------

// N consecutive floats of a staged row (16-byte aligned) into v[0..N).
template <int N> __device__ __forceinline__ void lds_row(const float *src, float *v)
{
#pragma unroll
    for (int i = 0; i + 4 <= N; i += 4) {
        const float4 q = *reinterpret_cast<const float4 *>(src + i);
        v[i] = q.x, v[i + 1] = q.y, v[i + 2] = q.z, v[i + 3] = q.w;
    }
    if constexpr (N % 4 >= 2) {
        const float2 q = *reinterpret_cast<const float2 *>(src + N / 4 * 4);
        v[N / 4 * 4] = q.x, v[N / 4 * 4 + 1] = q.y;
    }
    if constexpr (N % 2)
        v[N - 1] = src[N - 1];
}

// One float of global memory into shared memory, zero when !valid: on
// sm_80 and later asynchronously (cp.async, completed by stage_wait), so a
// block's next chunk arrives while it computes the current one.
__device__ __forceinline__ void stage_f32(float *dst, const float *src, bool valid)
{
#if __CUDA_ARCH__ >= 800
    const unsigned sa = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sa), "l"(src),
                 "r"(valid ? 4 : 0));
#else
    *dst = valid ? __ldg(src) : 0.0f;
#endif
}

// Closes the copies issued since the last call as one group (a chunk's).
__device__ __forceinline__ void stage_commit()
{
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits for every group but the newest `keep` (0 or 1).
__device__ __forceinline__ void stage_wait(int keep)
{
#if __CUDA_ARCH__ >= 800
    if (keep)
        asm volatile("cp.async.wait_group 1;\n" ::: "memory");
    else
        asm volatile("cp.async.wait_group 0;\n" ::: "memory");
#else
    (void)keep;
#endif
}

// struct cbc_k_dconv (ig_net_kernels.h). Shared memory: two buffers (the
// chunk being computed, the next one arriving), each the input tile
// [CC][IPB][RH][SW] (RH = TH + KH - 1 rows of each image's tile), then the
// weights [CC][KH][KW][BN]. Double accumulation sums one channel's KH KW
// products of a result in float, then adds that sum in double (two
// channels' sums in float: LeNet's default 1.3e-4 from Captum float64,
// twice Captum float32's distance, where one channel's is 3.1e-5).
template <int KH, int KW, int OCT, typename ACC>
__device__ __forceinline__ void dconv(const cbc_k_dconv &p)
{
    constexpr int PX = 4, NV = PX + KW - 1, KK = KH * KW;
    extern __shared__ float4 dconv_smem[];
    const int t = threadIdx.x, nt = blockDim.x;
    const int BN = p.NG * OCT, RH = p.TH + KH - 1, RW = p.TX * PX + KW - 1;
    const int xfloats = p.CC * p.IPB * RH * p.SW, buf_floats = xfloats + p.CC * KK * BN;
    int bx = blockIdx.x;
    const int ctile = bx % p.tiles_x;
    bx /= p.tiles_x;
    const int r0 = bx / p.tiles_y * p.IPB, oy0 = bx % p.tiles_y * p.TH, ox0 = ctile * p.TX * PX;
    const int n0 = blockIdx.y * BN;
    // this thread's results: pixels ox0 + tx PX + i of row oy0 + ty of
    // image r0 + im, channels n0 + ng OCT + j
    const int tx = t % p.TX, ty = t / p.TX % p.TH, im = t / (p.TX * p.TH) % p.IPB,
              ng = t / (p.TX * p.TH * p.IPB);
    const bool active = ng < p.NG;
    const size_t iplane = (size_t)p.IH * p.IW;
    // chunk c0's channels into buffer `buf`: element e = t + i nt of the
    // tile as (row, col), row = (c IPB + im) RH + rr, walked without a
    // division per element; the weights ws[q][n] = w[n0 + n][c0 + c][a][b],
    // q = (c KH + a) KW + b
    auto stage = [&](int c0, int buf) {
        float *xs = reinterpret_cast<float *>(dconv_smem) + (size_t)buf * buf_floats;
        float *ws = xs + xfloats;
        const int cc = min(p.CC, p.C - c0), rows = cc * p.IPB * RH;
        const int dcol = nt % RW, drow = nt / RW;
        int col = t % RW, row = t / RW, rr = row % RH, ci = row / RH;
        int sim = ci % p.IPB, sc = ci / p.IPB;
        while (row < rows) {
            const int r = r0 + sim, iy = oy0 + rr - p.pt, ix = ox0 + col - p.pl;
            const bool ok = r < p.R && iy >= 0 && iy < p.IH && ix >= 0 && ix < p.IW;
            stage_f32(xs + row * p.SW + col,
                      ok ? p.x + ((size_t)r * p.C + c0 + sc) * iplane + (size_t)iy * p.IW + ix : p.x,
                      ok);
            col += dcol;
            int step = drow;
            if (col >= RW)
                col -= RW, step++;
            row += step, rr += step;
            while (rr >= RH) {
                rr -= RH;
                if (++sim == p.IPB)
                    sim = 0, sc++;
            }
        }
        const int wn = cc * KK * BN, dn = nt % BN, dq = nt / BN;
        int n = t % BN, q = t / BN;
        for (int e = t; e < wn; e += nt) {
            const bool ok = n0 + n < p.OC;
            stage_f32(ws + e, ok ? p.w + ((size_t)(n0 + n) * p.C + c0) * KK + q : p.w, ok);
            n += dn, q += dq;
            if (n >= BN)
                n -= BN, q++;
        }
    };
    ACC acc[PX][OCT];
    zero_tile(acc);
    // a group per chunk: this one's copies must be complete, the next
    // one's may still be arriving
    stage(0, 0);
    stage_commit();
    for (int c0 = 0, buf = 0; c0 < p.C; c0 += p.CC, buf ^= 1) {
        const bool next = c0 + p.CC < p.C;
        if (next) {
            stage(c0 + p.CC, buf ^ 1);
            stage_commit();
        }
        stage_wait(next ? 1 : 0);
        __syncthreads();
        if (active) {
            const float *xs = reinterpret_cast<const float *>(dconv_smem) + (size_t)buf * buf_floats;
            const float *xr = xs + ((size_t)im * RH + ty) * p.SW + tx * PX;
            const float *wr = xs + xfloats + ng * OCT;
            const int cc = min(p.CC, p.C - c0);
            float part[PX][OCT];
            for (int c = 0; c < cc; c++) {
                zero_tile(part);
#pragma unroll
                for (int a = 0; a < KH; a++) {
                    float v[NV];
                    lds_row<NV>(xr + a * p.SW, v);
#pragma unroll
                    for (int b = 0; b < KW; b++) {
                        float w[OCT];
#pragma unroll
                        for (int j = 0; j < OCT; j += 4) {
                            const float4 q =
                                *reinterpret_cast<const float4 *>(wr + (a * KW + b) * BN + j);
                            w[j] = q.x, w[j + 1] = q.y, w[j + 2] = q.z, w[j + 3] = q.w;
                        }
#pragma unroll
                        for (int i = 0; i < PX; i++)
#pragma unroll
                            for (int j = 0; j < OCT; j++) {
                                if constexpr (sizeof(ACC) == sizeof(float))
                                    acc[i][j] = fmaf(v[i + b], w[j], acc[i][j]);
                                else
                                    part[i][j] = fmaf(v[i + b], w[j], part[i][j]);
                            }
                    }
                }
                if (sizeof(ACC) != sizeof(float))
#pragma unroll
                    for (int i = 0; i < PX; i++)
#pragma unroll
                        for (int j = 0; j < OCT; j++)
                            acc[i][j] += (ACC)part[i][j];
                xr += (size_t)p.IPB * RH * p.SW;
                wr += KK * BN;
            }
        }
        __syncthreads();
    }
    const int r = r0 + im, oy = oy0 + ty;
    if (!active || r >= p.R || oy >= p.OH)
        return;
#pragma unroll
    for (int j = 0; j < OCT; j++) {
        const int n = n0 + ng * OCT + j;
        if (n >= p.OC)
            break;
        float *dst = p.y + ((size_t)r * p.OC + n) * ((size_t)p.OH * p.OW) + (size_t)oy * p.OW;
        const ACC b = (ACC)(p.bias ? __ldg(p.bias + n) : 0.0f);
#pragma unroll
        for (int i = 0; i < PX; i++) {
            const int ox = ox0 + tx * PX + i;
            if (ox < p.OW) {
                const float v = (float)(acc[i][j] + b);
                dst[ox] = p.accumulate ? dst[ox] + v : v;
            }
        }
    }
}

#define DCONV_KERNELS(KS, OCT)                                                                     \
    extern "C" __global__ void __launch_bounds__(256) dconv_k##KS##_o##OCT##_f(cbc_k_dconv p)      \
    {                                                                                              \
        dconv<KS, KS, OCT, float>(p);                                                              \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(256, 2) dconv_k##KS##_o##OCT##_d(cbc_k_dconv p)   \
    {                                                                                              \
        dconv<KS, KS, OCT, double>(p);                                                             \
    }
DCONV_KERNELS(3, 4)
DCONV_KERNELS(3, 8)
DCONV_KERNELS(5, 4)
DCONV_KERNELS(5, 8)

// Depthwise (one input and one output channel per group): an element per
// thread, forward over the output, backward over the input (gathering).
template <bool BWD, typename ACC> __device__ __forceinline__ void dwconv(const cbc_k_conv &p)
{
    const int PH = BWD ? p.IH : p.OH, PW = BWD ? p.IW : p.OW;
    const size_t total = (size_t)p.R * p.OC * PH * PW;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int px = (int)(e % PW), py = (int)(e / PW % PH);
        const size_t rc = e / ((size_t)PW * PH);
        const int c = (int)(rc % p.OC);
        const float *wc = p.w + (size_t)c * p.kh * p.kw;
        ACC acc = 0;
        if (BWD) {
            const float *gy = p.x + rc * ((size_t)p.OH * p.OW);
            for (int a = 0; a < p.kh; a++) {
                int ty = py + p.pt - a * p.dh;
                if (ty < 0 || ty % p.sh)
                    continue;
                int oy = ty / p.sh;
                if (oy >= p.OH)
                    continue;
                for (int b = 0; b < p.kw; b++) {
                    int tx = px + p.pl - b * p.dw;
                    if (tx < 0 || tx % p.sw)
                        continue;
                    int ox = tx / p.sw;
                    if (ox < p.OW)
                        acc = mul_acc<ACC>(wc[a * p.kw + b], gy[(size_t)oy * p.OW + ox], acc);
                }
            }
            float v = (float)acc;
            p.y[e] = p.accumulate ? p.y[e] + v : v;
        } else {
            const float *xc = p.x + rc * ((size_t)p.IH * p.IW);
            for (int a = 0; a < p.kh; a++) {
                int iy = py * p.sh - p.pt + a * p.dh;
                if (iy < 0 || iy >= p.IH)
                    continue;
                for (int b = 0; b < p.kw; b++) {
                    int ix = px * p.sw - p.pl + b * p.dw;
                    if (ix >= 0 && ix < p.IW)
                        acc = mul_acc<ACC>(wc[a * p.kw + b], xc[(size_t)iy * p.IW + ix], acc);
                }
            }
            p.y[e] = (float)(acc + (ACC)(p.bias ? p.bias[c] : 0.0f));
        }
    }
}

extern "C" __global__ void dwconv_fwd_f(cbc_k_conv p) { dwconv<false, float>(p); }
extern "C" __global__ void dwconv_fwd_d(cbc_k_conv p) { dwconv<false, double>(p); }
extern "C" __global__ void dwconv_bwd_f(cbc_k_conv p) { dwconv<true, float>(p); }
extern "C" __global__ void dwconv_bwd_d(cbc_k_conv p) { dwconv<true, double>(p); }

// ---- pools ----------------------------------------------------------------

// The window at (oy, ox) of plane xc: its largest element's index (the first
// in scan order; padding never wins) or, for AVG, the sum and the count.
__device__ __forceinline__ int pool_window(const cbc_k_pool &p, const float *xc, int oy, int ox,
                                           float *val, int *count)
{
    int at = -1, cnt = 0;
    float best = 0.0f, sum = 0.0f;
    for (int a = 0; a < p.kh; a++) {
        int iy = oy * p.sh - p.pt + a * p.dh;
        if (iy < 0 || iy >= p.IH)
            continue;
        for (int b = 0; b < p.kw; b++) {
            int ix = ox * p.sw - p.pl + b * p.dw;
            if (ix < 0 || ix >= p.IW)
                continue;
            float v = xc[iy * p.IW + ix];
            if (at < 0 || v > best)
                best = v, at = iy * p.IW + ix;
            sum += v;
            cnt++;
        }
    }
    *val = p.kind == CBC_K_POOL_MAX ? best : sum;
    *count = cnt;
    return at;
}

extern "C" __global__ void pool_fwd(cbc_k_pool p)
{
    const size_t total = (size_t)p.R * p.C * p.OH * p.OW;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int ox = (int)(e % p.OW), oy = (int)(e / p.OW % p.OH);
        const size_t rc = e / ((size_t)p.OW * p.OH);
        float v;
        int cnt;
        pool_window(p, p.x + rc * ((size_t)p.IH * p.IW), oy, ox, &v, &cnt);
        if (p.kind == CBC_K_POOL_AVG)
            v /= p.count_include_pad ? (float)(p.kh * p.kw) : (float)cnt;
        p.y[e] = v;
    }
}

// gx at (iy, ix): the sum over the windows that hold it of their share.
extern "C" __global__ void pool_bwd(cbc_k_pool p)
{
    const size_t total = (size_t)p.R * p.C * p.IH * p.IW;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int ix = (int)(e % p.IW), iy = (int)(e / p.IW % p.IH);
        const size_t rc = e / ((size_t)p.IW * p.IH);
        const float *xc = p.x + rc * ((size_t)p.IH * p.IW);
        const float *gyc = p.gy + rc * ((size_t)p.OH * p.OW);
        float acc = 0.0f;
        for (int a = 0; a < p.kh; a++) {
            int ty = iy + p.pt - a * p.dh;
            if (ty < 0 || ty % p.sh)
                continue;
            int oy = ty / p.sh;
            if (oy >= p.OH)
                continue;
            for (int b = 0; b < p.kw; b++) {
                int tx = ix + p.pl - b * p.dw;
                if (tx < 0 || tx % p.sw)
                    continue;
                int ox = tx / p.sw;
                if (ox >= p.OW)
                    continue;
                float v;
                int cnt;
                int at = pool_window(p, xc, oy, ox, &v, &cnt);
                float g = gyc[oy * p.OW + ox];
                if (p.kind == CBC_K_POOL_MAX)
                    acc += at == iy * p.IW + ix ? g : 0.0f;
                else
                    acc += g / (p.count_include_pad ? (float)(p.kh * p.kw) : (float)cnt);
            }
        }
        p.gx[e] = p.accumulate ? p.gx[e] + acc : acc;
    }
}

// ---- elementwise ------------------------------------------------------------

__device__ __forceinline__ float4 ld4(const float *p, size_t i)
{
    return reinterpret_cast<const float4 *>(p)[i];
}

// ew_fwd's ACT and ADD, four elements a thread (cbc_k_ew.vec4)
__device__ __forceinline__ void ew_fwd4(const cbc_k_ew &p)
{
    const size_t total = (size_t)p.R * p.E / 4;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        float4 v = ld4(p.x, e);
        if (p.op == CBC_K_EW_ADD) {
            const float4 w = ld4(p.x2, e);
            v.x += w.x, v.y += w.y, v.z += w.z, v.w += w.w;
        } else {
            v.x = net_act_f(p.act, v.x, p.act_param), v.y = net_act_f(p.act, v.y, p.act_param);
            v.z = net_act_f(p.act, v.z, p.act_param), v.w = net_act_f(p.act, v.w, p.act_param);
        }
        reinterpret_cast<float4 *>(p.y)[e] = v;
    }
}

// ew_bwd's ACT and COPY, four elements a thread (cbc_k_ew.vec4)
__device__ __forceinline__ void ew_bwd4(const cbc_k_ew &p)
{
    const size_t total = (size_t)p.R * p.E / 4;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        float4 g = ld4(p.gy, e);
        if (p.op == CBC_K_EW_ACT) {
            const float4 x = ld4(p.x, e);
            g.x *= net_act_df(p.act, x.x, p.act_param), g.y *= net_act_df(p.act, x.y, p.act_param);
            g.z *= net_act_df(p.act, x.z, p.act_param), g.w *= net_act_df(p.act, x.w, p.act_param);
        }
        if (p.accumulate) {
            const float4 o = ld4(p.gx, e);
            g.x = o.x + g.x, g.y = o.y + g.y, g.z = o.z + g.z, g.w = o.w + g.w;
        }
        reinterpret_cast<float4 *>(p.gx)[e] = g;
    }
}

extern "C" __global__ void ew_fwd(cbc_k_ew p)
{
    if (p.vec4) {
        ew_fwd4(p);
        return;
    }
    if (p.op == CBC_K_EW_GAP) { // a warp per (row, channel)
        const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
        const int lane = threadIdx.x & 31;
        if (w >= (size_t)p.R * p.C)
            return;
        const float *xc = p.x + w * p.plane;
        float s = 0.0f;
        for (int i = lane; i < p.plane; i += 32)
            s += xc[i];
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0)
            p.y[w] = s / (float)p.plane;
        return;
    }
    if (p.op == CBC_K_EW_COPY) { // a slice of rows
        const size_t total = (size_t)p.R * p.E;
        for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
             e += (size_t)gridDim.x * blockDim.x) {
            const size_t r = e / p.E, i = e % p.E;
            float v = p.x[r * p.ldx + p.xoff + i];
            float *d = p.y + r * p.ldy + p.yoff + i;
            *d = p.accumulate ? *d + v : v;
        }
        return;
    }
    const size_t total = (size_t)p.R * p.E;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        float v = p.x[e];
        switch (p.op) {
        case CBC_K_EW_AFFINE: {
            int c = (int)(e % p.E / p.plane);
            v = fmaf(v, p.mul ? p.mul[c] : 1.0f, p.add ? p.add[c] : 0.0f);
            break;
        }
        case CBC_K_EW_ACT: v = net_act_f(p.act, v, p.act_param); break;
        case CBC_K_EW_ADD: v += p.x2[e]; break;
        }
        p.y[e] = v;
    }
}

// dF/dx (+)= of elementwise operators: AFFINE gy mul, ACT gy act'(x), COPY
// (and ADD, per input) gy, GAP gy / plane.
extern "C" __global__ void ew_bwd(cbc_k_ew p)
{
    if (p.vec4) {
        ew_bwd4(p);
        return;
    }
    const size_t total = (size_t)p.R * p.E;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        float g;
        switch (p.op) {
        case CBC_K_EW_AFFINE: g = p.gy[e] * (p.mul ? p.mul[e % p.E / p.plane] : 1.0f); break;
        case CBC_K_EW_ACT: g = p.gy[e] * net_act_df(p.act, p.x[e], p.act_param); break;
        case CBC_K_EW_GAP: g = p.gy[e / p.plane] / (float)p.plane; break;
        default: g = p.gy[e]; break;
        }
        p.gx[e] = p.accumulate ? p.gx[e] + g : g;
    }
}

// ---- rows: LayerNorm, softmax, its logarithm (a warp per row) -------------

__device__ __forceinline__ float wsum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float wmax(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// mean and 1/sqrt(var + eps), or max and sum of exp(x - max)
__device__ __forceinline__ void row_stats(const cbc_k_rows &p, const float *x, int lane, float &a,
                                          float &b)
{
    if (p.op == CBC_K_ROW_LN) {
        float s = 0.0f;
        for (int j = lane; j < p.E; j += 32)
            s += x[j];
        a = wsum(s) / p.E;
        float q = 0.0f;
        for (int j = lane; j < p.E; j += 32)
            q = fmaf(x[j] - a, x[j] - a, q);
        b = rsqrtf(wsum(q) / p.E + p.eps);
        return;
    }
    float m = -INFINITY;
    for (int j = lane; j < p.E; j += 32)
        m = fmaxf(m, x[j]);
    a = wmax(m);
    float s = 0.0f;
    for (int j = lane; j < p.E; j += 32)
        s += expf(x[j] - a);
    b = wsum(s);
}

extern "C" __global__ void rows_fwd(cbc_k_rows p)
{
    const size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (r >= (size_t)p.R)
        return;
    const float *x = p.x + r * p.E;
    float *y = p.y + r * p.E;
    float a, b;
    row_stats(p, x, lane, a, b);
    const float lse = logf(b);
    for (int j = lane; j < p.E; j += 32) {
        float v;
        if (p.op == CBC_K_ROW_LN)
            v = (x[j] - a) * b * (p.gamma ? p.gamma[j] : 1.0f) + (p.beta ? p.beta[j] : 0.0f);
        else if (p.op == CBC_K_ROW_SOFTMAX)
            v = expf(x[j] - a) / b;
        else
            v = x[j] - a - lse;
        y[j] = v;
    }
}

extern "C" __global__ void rows_bwd(cbc_k_rows p)
{
    const size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (r >= (size_t)p.R)
        return;
    const float *x = p.x + r * p.E, *gy = p.gy + r * p.E;
    float *gx = p.gx + r * p.E;
    float a, b;
    row_stats(p, x, lane, a, b);
    float m1 = 0.0f, m2 = 0.0f;
    for (int j = lane; j < p.E; j += 32) {
        if (p.op == CBC_K_ROW_LN) {
            float gj = gy[j] * (p.gamma ? p.gamma[j] : 1.0f);
            m1 += gj;
            m2 = fmaf(gj, (x[j] - a) * b, m2);
        } else if (p.op == CBC_K_ROW_SOFTMAX) {
            m1 += gy[j] * (expf(x[j] - a) / b);
        } else {
            m1 += gy[j];
        }
    }
    m1 = wsum(m1);
    m2 = wsum(m2);
    for (int j = lane; j < p.E; j += 32) {
        float g;
        if (p.op == CBC_K_ROW_LN) {
            float gj = gy[j] * (p.gamma ? p.gamma[j] : 1.0f);
            g = b * (gj - m1 / p.E - (x[j] - a) * b * (m2 / p.E));
        } else {
            float pj = expf(x[j] - a) / b;
            g = p.op == CBC_K_ROW_SOFTMAX ? pj * (gy[j] - m1) : gy[j] - pj * m1;
        }
        gx[j] = p.accumulate ? gx[j] + g : g;
    }
}

// ---- the path, the seed, the attributions --------------------------------

__device__ __forceinline__ float net_base(const cbc_k_base &b, int row, int F, int col)
{
    switch (b.kind) {
    case CBC_K_BASE_SCALAR: return b.scalar;
    case CBC_K_BASE_SHARED: return b.data[col];
    case CBC_K_BASE_PER_INPUT: return b.data[(size_t)row * F + col];
    default: return 0.0f;
    }
}

// rows[r][i] = x'_i + alpha_s (x_i - x'_i) of input b, step s.
extern "C" __global__ void net_path(cbc_k_netio p)
{
    const size_t total = (size_t)p.R * p.F;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int r = (int)(e / p.F), i = (int)(e % p.F);
        const int gr = p.row0 + r, b = gr / p.S, s = gr - b * p.S;
        const float x = p.x[(size_t)b * p.F + i], x0 = net_base(p.base, b, p.F, i);
        p.rows[e] = fmaf(p.alpha[s], x - x0, x0);
    }
}

// fo[r] = out[r][t_r]; gout = one-hot at t_r (the target, or its input's).
extern "C" __global__ void net_seed(cbc_k_netio p)
{
    const size_t total = (size_t)p.R * p.outs;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int r = (int)(e / p.outs), j = (int)(e % p.outs);
        const int t = p.targets ? p.targets[(p.row0 + r) / p.S] : p.target;
        p.gout[e] = j == t ? 1.0f : 0.0f;
        if (j == t)
            p.fo[r] = p.out[e];
    }
}

// attr[b][i] = (x_i - x'_i) sum_s w_s g0[b S + s][i], in step order.
extern "C" __global__ void net_attr(cbc_k_netio p)
{
    const size_t total = (size_t)p.nb * p.F;
    for (size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += (size_t)gridDim.x * blockDim.x) {
        const int lb = (int)(e / p.F), i = (int)(e % p.F), b = p.row0 / p.S + lb;
        float acc = 0.0f;
        for (int s = 0; s < p.S; s++)
            acc = fmaf(p.weight[s], p.g0[((size_t)lb * p.S + s) * p.F + i], acc);
        const float x = p.x[(size_t)b * p.F + i], x0 = net_base(p.base, b, p.F, i);
        p.attr[(size_t)b * p.F + i] = (x - x0) * acc;
    }
}
