__global__ void a(float *x) {}
