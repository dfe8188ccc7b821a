// vecadd.cu: the example consumer's kernel.
#include "vecadd.cuh"

extern "C" __global__ void vecadd(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = vecadd_op(a[i], b[i]);
}
