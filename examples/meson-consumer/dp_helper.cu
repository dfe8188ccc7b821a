// dp_helper.cu: the dp bundle's second source: the device function
// dp_parent.cu's kernels call across the device link.
#include "dp_shared.cuh"

__device__ float dp_transform(float x) { return 3.0f * x + 1.0f; }
