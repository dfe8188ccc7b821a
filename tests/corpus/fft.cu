// fft.cu: a cuFFT forward and inverse transform of 64 complex values, the
// round trip checked against the input on the host. cuFFT loads most of its
// kernels itself: 29,341 fatbins in its .ldata, one sm_75 module registered
// (issue 25, finding 1 and "Known libraries").
#include "common.h"
#include <cmath>
#include <cufft.h>
#define N 64
int main()
{
    cufftComplex h[N], *d = nullptr;
    for (int i = 0; i < N; i++)
        h[i] = make_cuFloatComplex((float)(i % 9) - 4.0f, (float)(i % 4));
    cudaMalloc(&d, sizeof h);
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    cufftHandle plan;
    cufftResult r = cufftPlan1d(&plan, N, CUFFT_C2C, 1);
    if (r == CUFFT_SUCCESS)
        r = cufftExecC2C(plan, d, d, CUFFT_FORWARD);
    if (r == CUFFT_SUCCESS)
        r = cufftExecC2C(plan, d, d, CUFFT_INVERSE);
    cudaDeviceSynchronize();
    cufftComplex back[N];
    for (int i = 0; i < N; i++)
        back[i] = make_cuFloatComplex(-7.0f, -7.0f);
    cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < N; i++) /* unnormalised: the round trip is N times the input */
        bad += std::fabs(back[i].x / N - h[i].x) > 1e-4f || std::fabs(back[i].y / N - h[i].y) > 1e-4f;
    int f = corpus_report("cufftExecC2C", r == CUFFT_SUCCESS ? "CUFFT_SUCCESS" : "cufft error", bad, N);
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
