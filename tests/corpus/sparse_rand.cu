// sparse_rand.cu: cuRAND fills a vector on the GPU, cuSPARSE multiplies it
// by a tridiagonal CSR matrix (SpMV), the host checks y = A x from the same
// x copied back. Two libraries that pick kernels by GPU (issue 25, finding 1:
// container 106 of libcusparse.so.12 has sm_75 only).
#include "common.h"
#include <cmath>
#include <curand.h>
#include <cusparse.h>
#define N 64
int main()
{
    float *x = nullptr, *y = nullptr, *val = nullptr;
    int *rowp = nullptr, *col = nullptr;
    int hrow[N + 1], hcol[3 * N], nnz = 0;
    float hval[3 * N], hx[N], hy[N];
    hrow[0] = 0;
    for (int r = 0; r < N; r++) {
        for (int c = r - 1; c <= r + 1; c++)
            if (c >= 0 && c < N) {
                hcol[nnz] = c;
                hval[nnz] = c == r ? 2.0f : -1.0f;
                nnz++;
            }
        hrow[r + 1] = nnz;
    }
    cudaMalloc(&x, sizeof hx);
    cudaMalloc(&y, sizeof hy);
    cudaMalloc(&val, nnz * sizeof(float));
    cudaMalloc(&col, nnz * sizeof(int));
    cudaMalloc(&rowp, sizeof hrow);
    cudaMemcpy(val, hval, nnz * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(col, hcol, nnz * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemcpy(rowp, hrow, sizeof hrow, cudaMemcpyHostToDevice);
    cudaMemset(y, 0, sizeof hy);
    curandGenerator_t g;
    curandStatus_t rs = curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);
    if (rs == CURAND_STATUS_SUCCESS)
        rs = curandSetPseudoRandomGeneratorSeed(g, 25);
    if (rs == CURAND_STATUS_SUCCESS)
        rs = curandGenerateUniform(g, x, N);
    cudaDeviceSynchronize();
    for (int i = 0; i < N; i++)
        hx[i] = -7.0f;
    cudaMemcpy(hx, x, sizeof hx, cudaMemcpyDeviceToHost);
    int bad_x = 0;
    for (int i = 0; i < N; i++)
        bad_x += !(hx[i] > 0.0f && hx[i] <= 1.0f);
    int f = corpus_report("curandGenerateUniform", rs == CURAND_STATUS_SUCCESS ? "CURAND_STATUS_SUCCESS"
                                                                                : "curand error",
                          bad_x, N);
    cusparseHandle_t h;
    cusparseSpMatDescr_t A;
    cusparseDnVecDescr_t vx, vy;
    cusparseStatus_t s = cusparseCreate(&h);
    if (s == CUSPARSE_STATUS_SUCCESS)
        s = cusparseCreateCsr(&A, N, N, nnz, rowp, col, val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                              CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    if (s == CUSPARSE_STATUS_SUCCESS)
        s = cusparseCreateDnVec(&vx, N, x, CUDA_R_32F);
    if (s == CUSPARSE_STATUS_SUCCESS)
        s = cusparseCreateDnVec(&vy, N, y, CUDA_R_32F);
    const float one = 1.0f, zero = 0.0f;
    size_t ws = 0;
    void *buf = nullptr;
    if (s == CUSPARSE_STATUS_SUCCESS)
        s = cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy,
                                    CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, &ws);
    cudaMalloc(&buf, ws ? ws : 1);
    if (s == CUSPARSE_STATUS_SUCCESS)
        s = cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, A, vx, &zero, vy, CUDA_R_32F,
                         CUSPARSE_SPMV_ALG_DEFAULT, buf);
    cudaDeviceSynchronize();
    for (int i = 0; i < N; i++)
        hy[i] = -7.0f;
    cudaMemcpy(hy, y, sizeof hy, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int r = 0; r < N; r++) {
        float want = 2.0f * hx[r] - (r > 0 ? hx[r - 1] : 0.0f) - (r + 1 < N ? hx[r + 1] : 0.0f);
        bad += std::fabs(hy[r] - want) > 1e-5f;
    }
    f |= corpus_report("cusparseSpMV", cusparseGetErrorName(s), bad, N);
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
