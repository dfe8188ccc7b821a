// cublas.cu: a program with a kernel of its own (k_fill) that hands its
// data to cublasSgemm, then checks C = A * B against the host. cuBLAS
// picks its kernels by GPU at run time: many of its modules have code
// for other GPUs only (issue 25, finding 1).
#include "common.h"
#include <cublas_v2.h>
#define N 16
__global__ void k_fill(float *a, float *b)
{
    int i = threadIdx.x;
    a[i] = (float)(i % 7) - 3.0f;
    b[i] = (float)(i % 5) * 0.5f;
}
int main()
{
    float *a = nullptr, *b = nullptr, *c = nullptr, hc[N * N], ha[N * N], hb[N * N];
    cudaMalloc(&a, sizeof ha);
    cudaMalloc(&b, sizeof hb);
    cudaMalloc(&c, sizeof hc);
    cudaMemset(c, 0, sizeof hc);
    k_fill<<<1, N * N>>>(a, b);
    cudaError_t e = cudaDeviceSynchronize();
    int bad_fill = 0;
    cudaMemcpy(ha, a, sizeof ha, cudaMemcpyDeviceToHost);
    cudaMemcpy(hb, b, sizeof hb, cudaMemcpyDeviceToHost);
    for (int i = 0; i < N * N; i++)
        bad_fill += ha[i] != (float)(i % 7) - 3.0f || hb[i] != (float)(i % 5) * 0.5f;
    int f = corpus_report("k_fill", cudaGetErrorName(e), bad_fill, N * N);
    cublasHandle_t h;
    cublasStatus_t s = cublasCreate(&h);
    const float one = 1.0f, zero = 0.0f;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N);
    cudaDeviceSynchronize();
    for (int i = 0; i < N * N; i++)
        hc[i] = -7.0f;
    cudaMemcpy(hc, c, sizeof hc, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int col = 0; col < N; col++)
        for (int row = 0; row < N; row++) {
            float want = 0;
            for (int k = 0; k < N; k++) /* column-major, as cuBLAS */
                want += ((float)((row + k * N) % 7) - 3.0f) * ((float)((k + col * N) % 5) * 0.5f);
            bad += hc[row + col * N] != want;
        }
    f |= corpus_report("cublasSgemm", cublasGetStatusName(s), bad, N * N);
    if (s == CUBLAS_STATUS_SUCCESS)
        cublasDestroy(h);
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
