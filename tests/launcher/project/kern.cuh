// kern.cuh: the kernel's declaration and a device helper the tests edit.
#pragma once
__device__ inline float twice(float v) { return 2.0f * v; }
void launch_scale(float *x, int n);
