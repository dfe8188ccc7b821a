/* fake_libcuda.c: a test double for libcuda.so.1, loaded through
 * CUBINCACHE_LIBCUDA by test programs linked with the test suite's driver
 * table (src/meson.build, cudadrv_test_lib), or as libcuda.so.1 from a
 * directory on LD_LIBRARY_PATH by programs linked with the installed
 * library (tests/cli/seed_meson.sh), so the loader's whole path (device
 * query, selection, verification, module load, errors) is tested on
 * machines without a GPU.
 *
 * It is configured by environment variables read at cuInit:
 *   FAKE_CUDA_CC      compute capability as 10*major+minor (default 90)
 *   FAKE_CUDA_NAME    device name (default "NVIDIA H100 80GB HBM3")
 *   FAKE_CUDA_COUNT   number of GPUs (default 1; 0 makes cuInit fail 100)
 *   FAKE_CUDA_DRIVER  cuDriverGetVersion (default 13000)
 * cuModuleLoadData applies the driver's measured gate for raw images: a
 * cubin loads only when its e_flags SM fits the device (209 otherwise);
 * PTX "JIT-compiles" when its .target is not above the device and its
 * .version not above the driver's ISA (222 otherwise). Every call is
 * counted; tests read the counts through fake_cuda_count(). It never
 * executes anything: launches and copies succeed and do nothing.
 */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_cc = 90, g_count = 1, g_driver = 13000;
static char g_name[256] = "NVIDIA H100 80GB HBM3";
static int g_module_loads, g_module_gets, g_inits;

int fake_cuda_count(const char *what)
{
    if (!strcmp(what, "cuModuleLoadData"))
        return __atomic_load_n(&g_module_loads, __ATOMIC_SEQ_CST);
    if (!strcmp(what, "cuModuleGetFunction"))
        return __atomic_load_n(&g_module_gets, __ATOMIC_SEQ_CST);
    if (!strcmp(what, "cuInit"))
        return __atomic_load_n(&g_inits, __ATOMIC_SEQ_CST);
    return -1;
}

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    __atomic_fetch_add(&g_inits, 1, __ATOMIC_SEQ_CST);
    const char *e;
    if ((e = getenv("FAKE_CUDA_CC")))
        g_cc = atoi(e);
    if ((e = getenv("FAKE_CUDA_COUNT")))
        g_count = atoi(e);
    if ((e = getenv("FAKE_CUDA_DRIVER")))
        g_driver = atoi(e);
    if ((e = getenv("FAKE_CUDA_NAME")))
        snprintf(g_name, sizeof g_name, "%s", e);
    return g_count > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *v)
{
    *v = g_driver;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char **s)
{
    switch (e) {
    case CUDA_ERROR_NO_BINARY_FOR_GPU: *s = "CUDA_ERROR_NO_BINARY_FOR_GPU"; break;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: *s = "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"; break;
    case CUDA_ERROR_NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
    default: *s = "CUDA_ERROR_UNKNOWN"; break;
    }
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char **s)
{
    *s = e == CUDA_ERROR_NO_BINARY_FOR_GPU ? "no kernel image is available for execution on the device"
                                           : "fake error";
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *n)
{
    *n = g_count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (ordinal < 0 || ordinal >= g_count)
        return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
    (void)d;
    snprintf(name, (size_t)len, "%s", g_name);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        *v = g_cc / 10;
    else if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        *v = g_cc % 10;
    else if (a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        *v = 132;
    else
        *v = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *b, CUdevice d)
{
    (void)d;
    *b = (size_t)80 << 30;
    return CUDA_SUCCESS;
}

static int g_ctx_token;
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d)
{
    (void)d;
    *c = (CUcontext)&g_ctx_token;
    return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRelease(CUdevice d)
{
    (void)d;
    return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c)
{
    (void)c;
    return CUDA_SUCCESS;
}
CUresult cuCtxGetCurrent(CUcontext *c)
{
    *c = (CUcontext)&g_ctx_token;
    return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void)
{
    return CUDA_SUCCESS;
}

static unsigned isa_of(int driver)
{
    return driver >= 13010 ? 91 : driver >= 13000 ? 90 : driver >= 12090 ? 88 : 87;
}

CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
    __atomic_fetch_add(&g_module_loads, 1, __ATOMIC_SEQ_CST);
    const unsigned char *p = image;
    if (memcmp(p, "\177ELF", 4) == 0) {
        uint32_t flags;
        memcpy(&flags, p + 48, 4);
        int sm = p[8] >= 8 ? (int)((flags >> 8) & 0xff) : (int)(flags & 0xff);
        if (sm / 10 != g_cc / 10 || sm % 10 > g_cc % 10)
            return CUDA_ERROR_NO_BINARY_FOR_GPU;
    } else {
        const char *t = strstr((const char *)p, ".target sm_");
        const char *v = strstr((const char *)p, ".version ");
        if (!t || !v)
            return CUDA_ERROR_INVALID_IMAGE;
        if (atoi(t + 11) > g_cc)
            return CUDA_ERROR_INVALID_PTX;
        unsigned isa = (unsigned)(atoi(v + 9) * 10 + atoi(strchr(v, '.') + 1));
        if (isa > isa_of(g_driver))
            return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
    *m = (CUmodule)malloc(1);
    return CUDA_SUCCESS;
}

CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o,
                            void **v)
{
    (void)n;
    (void)o;
    (void)v;
    return cuModuleLoadData(m, image);
}

CUresult cuModuleUnload(CUmodule m)
{
    free(m);
    return CUDA_SUCCESS;
}

static int g_fn_token;
CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    (void)m;
    __atomic_fetch_add(&g_module_gets, 1, __ATOMIC_SEQ_CST);
    if (!strcmp(name, "no_such_kernel"))
        return CUDA_ERROR_NOT_FOUND;
    *f = (CUfunction)&g_fn_token;
    return CUDA_SUCCESS;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned sm, CUstream s, void **args, void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sm, (void)s;
    (void)args, (void)extra;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc(CUdeviceptr *p, size_t n)
{
    *p = (CUdeviceptr)(uintptr_t)malloc(n ? n : 1);
    return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p)
{
    free((void *)(uintptr_t)p);
    return CUDA_SUCCESS;
}
CUresult cuMemGetInfo(size_t *f, size_t *t)
{
    *f = (size_t)70 << 30;
    *t = (size_t)80 << 30;
    return CUDA_SUCCESS;
}
CUresult cuMemAllocHost(void **p, size_t n)
{
    *p = malloc(n ? n : 1);
    return CUDA_SUCCESS;
}
CUresult cuMemFreeHost(void *p)
{
    free(p);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n)
{
    memcpy((void *)(uintptr_t)d, s, n);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n)
{
    memcpy(d, (void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoD(CUdeviceptr d, CUdeviceptr s, size_t n)
{
    memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
    return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
    (void)st;
    return cuMemcpyHtoD(d, s, n);
}
CUresult cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    return cuMemcpyDtoH(d, s, n);
}
CUresult cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
    (void)st;
    return cuMemcpyDtoD(d, s, n);
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream st)
{
    (void)st;
    uint32_t *p = (uint32_t *)(uintptr_t)d;
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *s, unsigned int f)
{
    (void)f;
    *s = (CUstream)&g_ctx_token;
    return CUDA_SUCCESS;
}
CUresult cuStreamDestroy(CUstream s)
{
    (void)s;
    return CUDA_SUCCESS;
}
CUresult cuStreamSynchronize(CUstream s)
{
    (void)s;
    return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *e, unsigned int f)
{
    (void)f;
    *e = (CUevent)&g_ctx_token;
    return CUDA_SUCCESS;
}
CUresult cuEventDestroy(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream s)
{
    (void)e, (void)s;
    return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent e)
{
    (void)e;
    return CUDA_SUCCESS;
}
CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    (void)a, (void)b;
    *ms = 0;
    return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v)
{
    (void)f, (void)a, (void)v;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int ver, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *status)
{
    (void)ver, (void)flags;
    *pfn = NULL;
    if (!strcmp(symbol, "cuMemAlloc"))
        *pfn = (void *)cuMemAlloc;
    else if (!strcmp(symbol, "cuLaunchKernel"))
        *pfn = (void *)cuLaunchKernel;
    else if (!strcmp(symbol, "cuModuleLoadData"))
        *pfn = (void *)cuModuleLoadData;
    else if (!strcmp(symbol, "cuModuleUnload"))
        *pfn = (void *)cuModuleUnload;
    else if (!strcmp(symbol, "cuDevicePrimaryCtxRetain"))
        *pfn = (void *)cuDevicePrimaryCtxRetain;
    else if (!strcmp(symbol, "cuCtxSetCurrent"))
        *pfn = (void *)cuCtxSetCurrent;
    else if (!strcmp(symbol, "cuCtxSynchronize"))
        *pfn = (void *)cuCtxSynchronize;
    else if (!strcmp(symbol, "cuMemcpyHtoD"))
        *pfn = (void *)cuMemcpyHtoD;
    else if (!strcmp(symbol, "cuMemcpyDtoH"))
        *pfn = (void *)cuMemcpyDtoH;
    if (status)
        *status = *pfn ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
