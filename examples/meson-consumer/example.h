/* example.h: what the example's two programs share: the four driver calls
 * they make, resolved through the loader (so neither links libcuda), and
 * how a loader error is printed and turned into the exit code (4: no GPU
 * or no image for it; 1: anything else). */
#ifndef EXAMPLE_H
#define EXAMPLE_H

#include <cubincache/loader.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdio.h>

struct driver_calls {
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuLaunchKernel_v4000 launch;
};

static inline enum cbc_status driver_calls_resolve(struct driver_calls *k, struct cbc_err *err)
{
    enum cbc_status st = cbc_driver_symbol("cuMemAlloc", 3020, (void **)&k->alloc, err);
    if (st == CBC_OK)
        st = cbc_driver_symbol("cuMemcpyHtoD", 3020, (void **)&k->htod, err);
    if (st == CBC_OK)
        st = cbc_driver_symbol("cuMemcpyDtoH", 3020, (void **)&k->dtoh, err);
    if (st == CBC_OK)
        st = cbc_driver_symbol("cuLaunchKernel", 4000, (void **)&k->launch, err);
    return st;
}

static inline int report_failure(const struct cbc_err *err)
{
    fprintf(stderr, "error: %s\n", err->msg);
    if (err->remedy[0])
        fprintf(stderr, "  fix: %s\n", err->remedy);
    return err->status == CBC_E_NO_DRIVER || err->status == CBC_E_NO_DEVICE ||
                   err->status == CBC_E_NO_IMAGE
               ? 4
               : 1;
}

#endif
