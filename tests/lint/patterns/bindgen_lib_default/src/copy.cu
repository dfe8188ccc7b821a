extern "C" __global__ void copy(float *x) {}
