// dp.cu: dynamic parallelism: a kernel that launches a kernel, which needs
// -rdc and the device runtime (cudadevrt) at the device link.
#include "common.h"
__global__ void k_child(int *out) { out[threadIdx.x] = 9 * threadIdx.x + 4; }
__global__ void k_parent(int *out) { k_child<<<1, CORPUS_N>>>(out); }
int main()
{
    int f = corpus_check("k_parent", [](int *d) { k_parent<<<1, 1>>>(d); },
                         [](int i) { return 9 * i + 4; });
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
