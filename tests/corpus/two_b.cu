// two_b.cu: the second translation unit: its own kernel, and (with -rdc)
// the device function two_a.cu's kernel calls.
#ifdef CORPUS_RDC
__device__ int dev_b(int i) { return 2 * i; }
#endif
__global__ void k_b(int *out) { out[threadIdx.x] = 5 * threadIdx.x; }
void launch_b(int *d) { k_b<<<1, 64>>>(d); }
