// one.cu: one translation unit, one kernel.
#include "common.h"
__global__ void k_one(int *out) { out[threadIdx.x] = 3 * threadIdx.x + 1; }
int main()
{
    int f = corpus_check("k_one", [](int *d) { k_one<<<1, CORPUS_N>>>(d); },
                         [](int i) { return 3 * i + 1; });
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
