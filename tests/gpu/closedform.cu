// closedform.cu: black-box functions for the GPU IG tests, as device
// kernels the tests call through the loader: one value per row.
extern "C" __global__ void f_sumsq(const float *in, float *out, int rows, int F)
{
    int r = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (r >= rows)
        return;
    float s = 0.0f;
    for (int i = lane; i < F; i += 32) {
        float x = in[(size_t)r * F + i];
        s += x * x;
    }
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0)
        out[r] = s;
}

// F(x, y) = x + x^2 + x y
extern "C" __global__ void f_xxy(const float *in, float *out, int rows)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        float x = in[2 * r], y = in[2 * r + 1];
        out[r] = x + x * x + x * y;
    }
}
