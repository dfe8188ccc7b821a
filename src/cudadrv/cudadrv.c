/* cudadrv.c: dlopen of libcuda.so.1, cuInit, and GPU enumeration.
 *
 * Invariant: the required part of the table is filled completely or not at
 * all; a missing required entry point is reported as an unusable driver,
 * naming the symbol. Optional entry points (graphs) are NULL when absent. The first
 * outcome (table or error) is cached for the life of the process: cuInit
 * is not retried, matching the driver's own behaviour.
 *
 * Trust: the library opened is libcuda.so.1, found by the dynamic loader
 * (which ignores LD_LIBRARY_PATH in setuid, setgid and capability-raising
 * programs). Nothing in the environment can name another library: a
 * program linked with libcubincache, privileged or not, runs no code it
 * did not ask for. The test suite's own build of this file alone
 * (CBC_TEST_DRIVER_HOOK, tests/meson.build) also takes the fake driver's
 * path from CUBINCACHE_LIBCUDA, and even there not in a setuid program
 * (secure_getenv); that build is linked into test programs only, never
 * into libcubincache.so or the commands.
 */
#include "cudadrv.h"

#include "common.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cbc_cuda g_cuda;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static struct cbc_err g_err;

#define LOAD(member, sym)                                                                          \
    do {                                                                                           \
        *(void **)&cu->member = dlsym(cu->lib, sym);                                               \
        if (!cu->member)                                                                           \
            return cbc_err_set(err, CBC_E_NO_DRIVER,                                               \
                               "the CUDA driver '%s' lacks the entry point %s (driver too old?)",  \
                               path, sym);                                                         \
    } while (0)

static const char *driver_path(void)
{
#ifdef CBC_TEST_DRIVER_HOOK
    const char *path = secure_getenv("CUBINCACHE_LIBCUDA");
    if (path && *path)
        return path;
#endif
    return "libcuda.so.1";
}

static enum cbc_status open_driver(struct cbc_cuda *cu, struct cbc_err *err)
{
    const char *path = driver_path();
    cu->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!cu->lib) {
        cbc_err_set(err, CBC_E_NO_DRIVER, "cannot load the CUDA driver (%s): %s", path, dlerror());
        cbc_err_hint(err, "install the NVIDIA driver or run on a machine with a GPU; "
                     "commands that need no GPU (build, check, inspect, select) still work");
        return CBC_E_NO_DRIVER;
    }
    LOAD(Init, "cuInit");
    LOAD(DriverGetVersion, "cuDriverGetVersion");
    LOAD(GetErrorName, "cuGetErrorName");
    LOAD(GetErrorString, "cuGetErrorString");
    LOAD(DeviceGetCount, "cuDeviceGetCount");
    LOAD(DeviceGet, "cuDeviceGet");
    LOAD(DeviceGetName, "cuDeviceGetName");
    LOAD(DeviceGetAttribute, "cuDeviceGetAttribute");
    LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2");
    LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    LOAD(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
    LOAD(CtxSetCurrent, "cuCtxSetCurrent");
    LOAD(CtxGetCurrent, "cuCtxGetCurrent");
    LOAD(CtxSynchronize, "cuCtxSynchronize");
    LOAD(ModuleLoadData, "cuModuleLoadData");
    LOAD(ModuleLoadDataEx, "cuModuleLoadDataEx");
    LOAD(ModuleUnload, "cuModuleUnload");
    LOAD(ModuleGetFunction, "cuModuleGetFunction");
    LOAD(LaunchKernel, "cuLaunchKernel");
    LOAD(MemAlloc, "cuMemAlloc_v2");
    LOAD(MemFree, "cuMemFree_v2");
    LOAD(MemGetInfo, "cuMemGetInfo_v2");
    LOAD(MemAllocHost, "cuMemAllocHost_v2");
    LOAD(MemFreeHost, "cuMemFreeHost");
    LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2");
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2");
    LOAD(MemcpyDtoD, "cuMemcpyDtoD_v2");
    LOAD(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
    LOAD(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
    LOAD(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
    LOAD(MemsetD32Async, "cuMemsetD32Async");
    LOAD(StreamCreate, "cuStreamCreate");
    LOAD(StreamDestroy, "cuStreamDestroy_v2");
    LOAD(StreamSynchronize, "cuStreamSynchronize");
    LOAD(EventCreate, "cuEventCreate");
    LOAD(EventDestroy, "cuEventDestroy_v2");
    LOAD(EventRecord, "cuEventRecord");
    LOAD(EventSynchronize, "cuEventSynchronize");
    LOAD(EventElapsedTime, "cuEventElapsedTime_v2");
    LOAD(FuncSetAttribute, "cuFuncSetAttribute");
    LOAD(GetProcAddress, "cuGetProcAddress_v2");
    *(void **)&cu->StreamBeginCapture = dlsym(cu->lib, "cuStreamBeginCapture_v2");
    *(void **)&cu->StreamEndCapture = dlsym(cu->lib, "cuStreamEndCapture");
    *(void **)&cu->GraphInstantiateWithFlags = dlsym(cu->lib, "cuGraphInstantiateWithFlags");
    *(void **)&cu->GraphLaunch = dlsym(cu->lib, "cuGraphLaunch");
    *(void **)&cu->GraphDestroy = dlsym(cu->lib, "cuGraphDestroy");
    *(void **)&cu->GraphExecDestroy = dlsym(cu->lib, "cuGraphExecDestroy");

    CUresult rc = cu->Init(0);
    if (rc != CUDA_SUCCESS) {
        enum cbc_status st = rc == CUDA_ERROR_NO_DEVICE ? CBC_E_NO_DEVICE : CBC_E_NO_DRIVER;
        cbc_cuda_fail(cu, rc, st, err, "the CUDA driver did not initialise (cuInit)");
        cbc_err_hint(err, rc == CUDA_ERROR_NO_DEVICE
                     ? "this machine has a driver but no visible GPU; check "
                       "CUDA_VISIBLE_DEVICES and nvidia-smi"
                     : "check that the driver matches the kernel module (nvidia-smi)");
        return st;
    }
    rc = cu->DriverGetVersion(&cu->driver_version);
    if (rc != CUDA_SUCCESS)
        return cbc_cuda_fail(cu, rc, CBC_E_NO_DRIVER, err, "cuDriverGetVersion");
    return CBC_OK;
}

/* Runs once per process, whichever thread asks first; the others wait for
 * it, so none sees a half-filled table. */
static void open_once(void)
{
    if (open_driver(&g_cuda, &g_err) != CBC_OK && g_cuda.lib) {
        dlclose(g_cuda.lib);
        g_cuda.lib = NULL;
    }
}

enum cbc_status cbc_cuda_get(const struct cbc_cuda **out, struct cbc_err *err)
{
    pthread_once(&g_once, open_once);
    if (g_err.status != CBC_OK) {
        if (err)
            *err = g_err;
        return g_err.status;
    }
    *out = &g_cuda;
    return CBC_OK;
}

enum cbc_status cbc_cuda_fail(const struct cbc_cuda *cu, CUresult rc, enum cbc_status status,
                              struct cbc_err *err, const char *what)
{
    const char *name = NULL, *text = NULL;
    if (cu && cu->GetErrorName)
        cu->GetErrorName(rc, &name);
    if (cu && cu->GetErrorString)
        cu->GetErrorString(rc, &text);
    return cbc_err_set(err, status, "%s: %s (%d): %s", what, name ? name : "CUDA_ERROR_UNKNOWN",
                       (int)rc, text ? text : "no description");
}

enum cbc_status cbc_cuda_device(const struct cbc_cuda *cu, int ordinal, struct cbc_device_info *out,
                                struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    CUdevice dev;
    CUresult rc = cu->DeviceGet(&dev, ordinal);
    if (rc == CUDA_SUCCESS)
        rc = cu->DeviceGetName(out->name, (int)sizeof out->name, dev);
    if (rc == CUDA_SUCCESS)
        rc = cu->DeviceGetAttribute(&out->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                    dev);
    if (rc == CUDA_SUCCESS)
        rc = cu->DeviceGetAttribute(&out->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                    dev);
    if (rc == CUDA_SUCCESS)
        rc = cu->DeviceTotalMem(&out->total_mem, dev);
    if (rc != CUDA_SUCCESS)
        return cbc_cuda_fail(cu, rc, CBC_E_DRIVER, err, "querying GPU");
    out->ordinal = ordinal;
    out->driver_version = cu->driver_version;
    return CBC_OK;
}

void cbc_cuda_list_gpus(struct cbc_device_info *gpus, size_t max, size_t *count, char *why,
                        size_t why_len)
{
    *count = 0;
    const struct cbc_cuda *cu;
    struct cbc_err e = {0};
    if (cbc_cuda_get(&cu, &e) != CBC_OK) {
        if (why) /* short: it ends up in manifests */
            snprintf(why, why_len, "%s", e.status == CBC_E_NO_DRIVER ? "no CUDA driver"
                                                                     : "the driver sees no GPU");
        return;
    }
    int n = 0;
    CUresult rc = cu->DeviceGetCount(&n);
    if (rc != CUDA_SUCCESS || n <= 0) {
        if (why) {
            cbc_cuda_fail(cu, rc, CBC_E_NO_DEVICE, &e, "cuDeviceGetCount");
            snprintf(why, why_len, "%s", rc == CUDA_SUCCESS ? "the driver reports no GPU" : e.msg);
        }
        return;
    }
    for (int i = 0; i < n && *count < max; i++)
        if (cbc_cuda_device(cu, i, &gpus[*count], NULL) == CBC_OK)
            (*count)++;
}
