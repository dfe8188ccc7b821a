__global__ void attn(float *x) {}
