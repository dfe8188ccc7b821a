// pick_main.cu: a program that picks its kernel by compute capability at
// run time, as libraries do: k_new (pick_new.cu, built for one GPU) where
// the device is that GPU's major, else k_old (pick_old.cu, built for
// another), each translation unit SASS only. Where it runs, only one of
// them is ever launched.
#include "common.h"
void launch_new(int *d);
void launch_old(int *d);
int main()
{
    cudaDeviceProp p;
    int dev = 0, f = 1;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&p, dev);
    if (e != cudaSuccess) {
        printf("KERNEL k_new FAILED (%s, 64 of 64 values wrong)\n", cudaGetErrorName(e));
    } else if (p.major == CORPUS_NEW_MAJOR) {
        f = corpus_check("k_new", [](int *d) { launch_new(d); }, [](int i) { return 4 * i + 3; });
    } else {
        f = corpus_check("k_old", [](int *d) { launch_old(d); }, [](int i) { return 6 * i + 5; });
    }
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
