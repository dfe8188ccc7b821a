// uselib.cu: an executable with a kernel of its own that also runs the
// kernel of a shared library it links.
#include "common.h"
extern "C" int lib_run(void);
__global__ void k_main(int *out) { out[threadIdx.x] = threadIdx.x + 11; }
int main()
{
    int f = corpus_check("k_main", [](int *d) { k_main<<<1, CORPUS_N>>>(d); },
                         [](int i) { return i + 11; });
    f |= lib_run();
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
