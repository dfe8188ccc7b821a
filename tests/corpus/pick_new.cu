// pick_new.cu: the kernel pick_main.cu launches on its newer GPU.
__global__ void k_new(int *out) { out[threadIdx.x] = 4 * threadIdx.x + 3; }
void launch_new(int *d) { k_new<<<1, 64>>>(d); }
