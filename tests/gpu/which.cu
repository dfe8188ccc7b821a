// which.cu: kernels for the loader tests. which_arch reports the code that
// actually ran, so a test can tell which image the driver (or the loader)
// picked: __CUDA_ARCH__ of the image, or 9000+arch/10 when it is an
// arch-specific ('a') build.
extern "C" __global__ void which_arch(int *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || defined(__CUDA_ARCH_SPECIFIC__)
    out[0] = 9000 + __CUDA_ARCH__ / 10;
#else
    out[0] = __CUDA_ARCH__;
#endif
}

extern "C" __global__ void add_one(float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] += 1.0f;
}
