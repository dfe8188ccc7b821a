extern "C" __global__ void paged(float *x) {}
