// dp_parent.cu: one of the dp bundle's two sources. dp_parent launches
// dp_child from the GPU (dynamic parallelism: the device runtime comes in at
// the device link), and dp_child calls dp_transform, defined in the other
// source (dp_helper.cu): the bundle exists only through -rdc and the link.
#include "dp_shared.cuh"

extern "C" __global__ void dp_child(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = dp_transform(x[i]);
}

extern "C" __global__ void dp_parent(float *x, int n)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        dp_child<<<(n + DP_CHILD_THREADS - 1) / DP_CHILD_THREADS, DP_CHILD_THREADS>>>(x, n);
}
