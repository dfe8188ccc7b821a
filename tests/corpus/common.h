/* common.h: what every corpus program does with a kernel: launch it, copy
 * its 64 results back and compare them with what it must have written. A
 * kernel "ran" only when every value is right: an exit code is not enough
 * (a launch that never happened leaves the buffer as it was, and a failed
 * launch inside a library's own runtime is invisible to its caller). */
#ifndef CORPUS_COMMON_H
#define CORPUS_COMMON_H
#include <cstdio>
#include <cuda_runtime.h>

#define CORPUS_N 64

/* Runs launch(dev) and checks out[i] == want(i); prints one line. */
template <typename L, typename W>
static int corpus_check(const char *name, L launch, W want)
{
    int *d = nullptr, h[CORPUS_N];
    for (int i = 0; i < CORPUS_N; i++)
        h[i] = -7;
    cudaError_t e = cudaMalloc(&d, sizeof h);
    if (e == cudaSuccess)
        e = cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        launch(d);
        e = cudaGetLastError();
    }
    cudaError_t s = cudaDeviceSynchronize();
    if (e == cudaSuccess)
        e = s;
    if (d)
        cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < CORPUS_N; i++)
        bad += h[i] != want(i);
    printf("KERNEL %s %s (%s, %d of %d values wrong)\n", name, bad ? "FAILED" : "RAN",
           cudaGetErrorName(e), bad, CORPUS_N);
    if (d)
        cudaFree(d);
    return bad ? 1 : 0;
}
/* For work a library does (cublasSgemm, cufftExecC2C, ...): the caller
 * computed the result on the GPU and copied it back, and compares it with
 * what it must be; the same line as corpus_check's, with the library's
 * own status name. */
static int corpus_report(const char *name, const char *status, int bad, int n)
{
    printf("KERNEL %s %s (%s, %d of %d values wrong)\n", name, bad ? "FAILED" : "RAN", status,
           bad, n);
    return bad ? 1 : 0;
}
#endif
