extern "C" __global__ void unary(float *x) {}
