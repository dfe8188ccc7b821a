__global__ void k(float *x) {}
