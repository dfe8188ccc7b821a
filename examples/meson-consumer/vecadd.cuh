// vecadd.cuh: the example kernel's element operation, in a header so that the
// test suite can show a header edit reaching the cubin.
#pragma once
__device__ inline float vecadd_op(float a, float b) { return a + b; }
