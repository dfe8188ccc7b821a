// lib.cu: a shared library with its own kernel, launched by its own code;
// the caller only sees the results it copies back.
#include "common.h"
__global__ void k_lib(int *out) { out[threadIdx.x] = 7 * threadIdx.x + 2; }
extern "C" int lib_run(void)
{
    return corpus_check("k_lib", [](int *d) { k_lib<<<1, CORPUS_N>>>(d); },
                        [](int i) { return 7 * i + 2; });
}
