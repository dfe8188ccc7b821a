// stalelib_a.cu, stalelib_b.cu: a shared library of two translation
// units, one of them stale (built for another GPU than the other): the
// seed's failure inside a library the program loads.
#include "common.h"
__global__ void k_la(int *out) { out[threadIdx.x] = 8 * threadIdx.x + 1; }
extern "C" int stale_a(void)
{
    return corpus_check("k_la", [](int *d) { k_la<<<1, CORPUS_N>>>(d); },
                        [](int i) { return 8 * i + 1; });
}
