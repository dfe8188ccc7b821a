extern "C" __global__ void moe(float *x) {}
