/* cudadrv.h: the CUDA driver API reached through dlopen("libcuda.so.1").
 *
 * Nothing links against the driver or the runtime: every command must work
 * on a machine with no GPU and no driver and say plainly what it cannot do.
 * cbc_cuda_get() opens and initialises the driver once per process and
 * returns the same table afterwards (or the same error). The table's
 * members have cuda.h's exact types; versioned entry points (_v2) are
 * looked up by their versioned names. Only the test suite's build of
 * cudadrv.c lets CUBINCACHE_LIBCUDA name another library (the fake driver,
 * or none to simulate a machine without one); what is installed opens
 * libcuda.so.1 and nothing else.
 *
 * Internal and unstable: the loader's public API wraps what users need.
 */
#ifndef CBC_CUDADRV_H
#define CBC_CUDADRV_H

#include <cubincache/loader.h> /* struct cbc_device_info */
#include <cubincache/status.h>
#include <cuda.h>

#include <stdbool.h>
#include <stddef.h>

struct cbc_cuda {
    void *lib;
    int driver_version; /* e.g. 13000 */
    __typeof__(cuInit) *Init;
    __typeof__(cuDriverGetVersion) *DriverGetVersion;
    __typeof__(cuGetErrorName) *GetErrorName;
    __typeof__(cuGetErrorString) *GetErrorString;
    __typeof__(cuDeviceGetCount) *DeviceGetCount;
    __typeof__(cuDeviceGet) *DeviceGet;
    __typeof__(cuDeviceGetName) *DeviceGetName;
    __typeof__(cuDeviceGetAttribute) *DeviceGetAttribute;
    __typeof__(cuDeviceTotalMem) *DeviceTotalMem;
    __typeof__(cuDevicePrimaryCtxRetain) *DevicePrimaryCtxRetain;
    __typeof__(cuDevicePrimaryCtxRelease) *DevicePrimaryCtxRelease;
    __typeof__(cuCtxSetCurrent) *CtxSetCurrent;
    __typeof__(cuCtxGetCurrent) *CtxGetCurrent;
    __typeof__(cuCtxSynchronize) *CtxSynchronize;
    __typeof__(cuModuleLoadData) *ModuleLoadData;
    __typeof__(cuModuleLoadDataEx) *ModuleLoadDataEx;
    __typeof__(cuModuleUnload) *ModuleUnload;
    __typeof__(cuModuleGetFunction) *ModuleGetFunction;
    __typeof__(cuLaunchKernel) *LaunchKernel;
    __typeof__(cuMemAlloc) *MemAlloc;
    __typeof__(cuMemFree) *MemFree;
    __typeof__(cuMemGetInfo) *MemGetInfo;
    __typeof__(cuMemAllocHost) *MemAllocHost;
    __typeof__(cuMemFreeHost) *MemFreeHost;
    __typeof__(cuMemcpyHtoD) *MemcpyHtoD;
    __typeof__(cuMemcpyDtoH) *MemcpyDtoH;
    __typeof__(cuMemcpyDtoD) *MemcpyDtoD;
    __typeof__(cuMemcpyHtoDAsync) *MemcpyHtoDAsync;
    __typeof__(cuMemcpyDtoHAsync) *MemcpyDtoHAsync;
    __typeof__(cuMemcpyDtoDAsync) *MemcpyDtoDAsync;
    __typeof__(cuMemsetD32Async) *MemsetD32Async;
    __typeof__(cuStreamCreate) *StreamCreate;
    __typeof__(cuStreamDestroy) *StreamDestroy;
    __typeof__(cuStreamSynchronize) *StreamSynchronize;
    __typeof__(cuEventCreate) *EventCreate;
    __typeof__(cuEventDestroy) *EventDestroy;
    __typeof__(cuEventRecord) *EventRecord;
    __typeof__(cuEventSynchronize) *EventSynchronize;
    __typeof__(cuEventElapsedTime) *EventElapsedTime;
    __typeof__(cuFuncSetAttribute) *FuncSetAttribute;
    __typeof__(cuGetProcAddress) *GetProcAddress;
    /* optional (NULL when the driver lacks them): CUDA graphs, which the IG
     * engine uses to replay small requests with one launch */
    __typeof__(cuStreamBeginCapture) *StreamBeginCapture;
    __typeof__(cuStreamEndCapture) *StreamEndCapture;
    __typeof__(cuGraphInstantiateWithFlags) *GraphInstantiateWithFlags;
    __typeof__(cuGraphLaunch) *GraphLaunch;
    __typeof__(cuGraphDestroy) *GraphDestroy;
    __typeof__(cuGraphExecDestroy) *GraphExecDestroy;
};

/* The process-wide driver table, opened and cuInit'ed on first use.
 * CBC_E_NO_DRIVER: libcuda.so.1 missing or unusable; CBC_E_NO_DEVICE: the
 * driver loads but reports no GPU. The error is remembered and repeated. */
enum cbc_status cbc_cuda_get(const struct cbc_cuda **out, struct cbc_err *err);

/* Formats a driver failure: "<what>: CUDA_ERROR_X (n): <text>". Returns status. */
enum cbc_status cbc_cuda_fail(const struct cbc_cuda *cu, CUresult rc, enum cbc_status status,
                              struct cbc_err *err, const char *what);

/* GPU `ordinal` as the driver reports it, in the public struct (loader.h):
 * every field but ptx_isa, which is select.h's to derive (the loader's
 * cbc_device_query fills it). */
enum cbc_status cbc_cuda_device(const struct cbc_cuda *cu, int ordinal, struct cbc_device_info *out,
                                struct cbc_err *err);

/* Lists up to `max` GPUs into `gpus`, sets *count. A machine without a
 * driver or a GPU is not an error here: *count = 0 and `why` (may be NULL)
 * receives the reason, so callers such as arch "auto" can fall through. */
void cbc_cuda_list_gpus(struct cbc_device_info *gpus, size_t max, size_t *count, char *why,
                        size_t why_len);

#endif
