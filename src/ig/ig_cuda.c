/* ig_cuda.c: the engine's driver entry points, each asked of the loader
 * with the ABI of the <cudaTypedefs.h> type it is called through (the
 * number in PFN_cuX_vNNNN), so a newer driver hands back the behaviour this
 * code was written for. See ig_cuda.h for the invariants.
 */
#include "ig_cuda.h"
#include "ig_int.h"

#include <cubincache/loader.h>

#include <pthread.h>
#include <stddef.h>

static struct ig_cuda g_cu;
static struct cbc_err g_err;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#define ENTRY(member, name, abi, required)                                                         \
    {offsetof(struct ig_cuda, member), name, abi, required}

static const struct {
    size_t off;
    const char *name;
    int abi;
    bool required;
} entries[] = {
    ENTRY(DeviceGet, "cuDeviceGet", 2000, true),
    ENTRY(DeviceGetAttribute, "cuDeviceGetAttribute", 2000, true),
    ENTRY(FuncSetAttribute, "cuFuncSetAttribute", 9000, true),
    ENTRY(LaunchKernel, "cuLaunchKernel", 4000, true),
    ENTRY(MemAlloc, "cuMemAlloc", 3020, true),
    ENTRY(MemFree, "cuMemFree", 3020, true),
    ENTRY(MemGetInfo, "cuMemGetInfo", 3020, true),
    ENTRY(MemAllocHost, "cuMemAllocHost", 3020, true),
    ENTRY(MemFreeHost, "cuMemFreeHost", 2000, true),
    ENTRY(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", 3020, true),
    ENTRY(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", 3020, true),
    ENTRY(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", 3020, true),
    ENTRY(MemsetD32Async, "cuMemsetD32Async", 3020, true),
    ENTRY(StreamCreate, "cuStreamCreate", 2000, true),
    ENTRY(StreamDestroy, "cuStreamDestroy", 4000, true),
    ENTRY(StreamSynchronize, "cuStreamSynchronize", 2000, true),
    ENTRY(StreamBeginCapture, "cuStreamBeginCapture", 10010, false),
    ENTRY(StreamEndCapture, "cuStreamEndCapture", 10000, false),
    ENTRY(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", 11040, false),
    ENTRY(GraphLaunch, "cuGraphLaunch", 10000, false),
    ENTRY(GraphDestroy, "cuGraphDestroy", 10000, false),
    ENTRY(GraphExecDestroy, "cuGraphExecDestroy", 10000, false),
};

static void resolve_once(void)
{
    struct ig_cuda t = {0};
    for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
        void *fn = NULL;
        struct cbc_err e = {0};
        enum cbc_status st = cbc_driver_symbol(entries[i].name, entries[i].abi, &fn, &e);
        if (st != CBC_OK && (entries[i].required || st != CBC_E_NOT_FOUND)) {
            g_err = e;
            if (st == CBC_E_NOT_FOUND)
                ig_err_hint(&g_err, "the IG engine needs a CUDA 11.4 or newer driver");
            return;
        }
        *(void **)((char *)&t + entries[i].off) = st == CBC_OK ? fn : NULL;
    }
    g_cu = t;
}

enum cbc_status ig_cuda_get(const struct ig_cuda **out, struct cbc_err *err)
{
    pthread_once(&g_once, resolve_once);
    if (g_err.status != CBC_OK) {
        if (err)
            *err = g_err;
        return g_err.status;
    }
    *out = &g_cu;
    return CBC_OK;
}

enum cbc_status ig_cuda_fail(const struct ig_cuda *cu, CUresult rc, enum cbc_status status,
                             struct cbc_err *err, const char *what)
{
    (void)cu;
    return cbc_driver_error((int)rc, what, status, err);
}
