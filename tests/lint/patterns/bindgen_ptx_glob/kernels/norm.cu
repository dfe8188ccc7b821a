#include "reduce.cuh"
extern "C" __global__ void norm(float *x) { x[0] = reduce(x[0]); }
