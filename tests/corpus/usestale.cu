// usestale.cu: an executable that runs both kernels of libstale.so.
#include "common.h"
extern "C" int stale_a(void);
extern "C" int stale_b(void);
int main()
{
    int f = stale_b();
    f |= stale_a();
    printf("PROGRAM %s\n", f ? "FAILED" : "RAN");
    return f;
}
