// stalelib_b.cu: the current translation unit of the library (stalelib_a.cu).
#include "common.h"
__global__ void k_lb(int *out) { out[threadIdx.x] = 9 * threadIdx.x + 2; }
extern "C" int stale_b(void)
{
    return corpus_check("k_lb", [](int *d) { k_lb<<<1, CORPUS_N>>>(d); },
                        [](int i) { return 9 * i + 2; });
}
