// kern.cu: one kernel and its launch, a translation unit of its own.
#include "kern.cuh"

__global__ void scale(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = twice(x[i]);
}

void launch_scale(float *x, int n) { scale<<<(n + 127) / 128, 128>>>(x, n); }
