// main.cu: the host program: runs the kernel of kern.cu on 256 floats and
// says whether the results are right (exit 0) or the launch failed (1).
#include "kern.cuh"
#include <cstdio>

int main()
{
    const int n = 256;
    float *d = nullptr, h[n];
    for (int i = 0; i < n; i++)
        h[i] = (float)i;
    if (cudaMalloc(&d, sizeof h) != cudaSuccess) {
        std::printf("no GPU\n");
        return 1;
    }
    cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
    launch_scale(d, n);
    cudaError_t e = cudaGetLastError(); /* a launch with no image for this GPU fails here */
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
        std::printf("launch failed: %s\n", cudaGetErrorString(e));
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (h[i] != 2.0f * (float)i) {
            std::printf("wrong result at %d\n", i);
            return 1;
        }
    std::printf("ok\n");
    return 0;
}
