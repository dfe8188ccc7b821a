// two_a.cu: the first of two translation units; with -rdc its kernel calls
// a device function of two_b.cu, so the device link is what joins them.
#include "common.h"
#ifdef CORPUS_RDC
__device__ int dev_b(int i);
#else
__device__ int dev_b(int i) { return 2 * i; }
#endif
__global__ void k_a(int *out) { out[threadIdx.x] = dev_b(threadIdx.x) + 1; }
void launch_b(int *d);
int main()
{
    int f = corpus_check("k_a", [](int *d) { k_a<<<1, CORPUS_N>>>(d); },
                         [](int i) { return 2 * i + 1; });
    f |= corpus_check("k_b", [](int *d) { launch_b(d); }, [](int i) { return 5 * i; });
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
