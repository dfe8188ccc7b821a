/* fuzz_dryrun.c: libFuzzer target for the split compile's dryrun
 * classifier (cbc_split_plan): any text is read without running past its
 * end, and a plan that runs split names at least one virtual arch. */
#include "split.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cbc_split_plan p;
    if (cbc_split_plan((const char *)data, size, &p, NULL) == CBC_OK && p.ok && !p.n_archs)
        abort();
    return 0;
}
