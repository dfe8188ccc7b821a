/* ig_cuda.h: the CUDA driver entry points the GPU engine calls, resolved
 * through the public loader API (cbc_driver_symbol), never through
 * libcubincache's own driver table: the engine is a consumer of the loader
 * like any program. Internal to libcubincache-ig.
 *
 * Invariants: the table is filled once per process (pthread_once) and then
 * read only; a required entry point the driver lacks fails ig_cuda_get with
 * its name; the graph entry points are optional (NULL: the engine replays
 * nothing and enqueues every request).
 */
#ifndef CBC_IG_CUDA_H
#define CBC_IG_CUDA_H

#include <cubincache/status.h>

#include <cuda.h>

struct ig_cuda {
    __typeof__(cuDeviceGet) *DeviceGet;
    __typeof__(cuDeviceGetAttribute) *DeviceGetAttribute;
    __typeof__(cuFuncSetAttribute) *FuncSetAttribute;
    __typeof__(cuLaunchKernel) *LaunchKernel;
    __typeof__(cuMemAlloc) *MemAlloc;
    __typeof__(cuMemFree) *MemFree;
    __typeof__(cuMemGetInfo) *MemGetInfo;
    __typeof__(cuMemAllocHost) *MemAllocHost;
    __typeof__(cuMemFreeHost) *MemFreeHost;
    __typeof__(cuMemcpyHtoDAsync) *MemcpyHtoDAsync;
    __typeof__(cuMemcpyDtoHAsync) *MemcpyDtoHAsync;
    __typeof__(cuMemcpyDtoDAsync) *MemcpyDtoDAsync;
    __typeof__(cuMemsetD32Async) *MemsetD32Async;
    __typeof__(cuStreamCreate) *StreamCreate;
    __typeof__(cuStreamDestroy) *StreamDestroy;
    __typeof__(cuStreamSynchronize) *StreamSynchronize;
    /* optional */
    __typeof__(cuStreamBeginCapture) *StreamBeginCapture;
    __typeof__(cuStreamEndCapture) *StreamEndCapture;
    __typeof__(cuGraphInstantiateWithFlags) *GraphInstantiateWithFlags;
    __typeof__(cuGraphLaunch) *GraphLaunch;
    __typeof__(cuGraphDestroy) *GraphDestroy;
    __typeof__(cuGraphExecDestroy) *GraphExecDestroy;
};

/* The process's table. CBC_E_NO_DRIVER / CBC_E_NO_DEVICE as the loader
 * reports them, CBC_E_NOT_FOUND for a driver without a required entry
 * point. The first failure is remembered and repeated. */
enum cbc_status ig_cuda_get(const struct ig_cuda **out, struct cbc_err *err);

/* "<what>: CUDA_ERROR_X (n): <text>" into err (cbc_driver_error); returns
 * status. */
enum cbc_status ig_cuda_fail(const struct ig_cuda *cu, CUresult rc, enum cbc_status status,
                             struct cbc_err *err, const char *what);

#endif
