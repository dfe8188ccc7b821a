// nccl.cu: an all-reduce over a communicator of this one GPU (its sum is
// its input), checked on the host. libnccl.so.2 has modules with sm_100f
// only, and relocatable code in __nv_relfatbin (issue 25).
#include "common.h"
#include <nccl.h>
#define N 64
int main()
{
    float h[N], *in = nullptr, *out = nullptr;
    for (int i = 0; i < N; i++)
        h[i] = (float)(3 * i + 1);
    cudaMalloc(&in, sizeof h);
    cudaMalloc(&out, sizeof h);
    cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice);
    cudaMemset(out, 0, sizeof h);
    ncclComm_t comm;
    int dev = 0;
    ncclResult_t r = ncclCommInitAll(&comm, 1, &dev);
    if (r == ncclSuccess)
        r = ncclAllReduce(in, out, N, ncclFloat, ncclSum, comm, 0);
    cudaStreamSynchronize(0);
    float back[N];
    for (int i = 0; i < N; i++)
        back[i] = -7.0f;
    cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += back[i] != h[i];
    int f = corpus_report("ncclAllReduce", ncclGetErrorString(r), bad, N);
    if (r == ncclSuccess)
        ncclCommDestroy(comm);
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
