/* loader.c: devices and modules: the driver half of loader.h.
 *
 * Order of a load, and why: query the device (its name and compute
 * capability go into every message), select with the shared policy (so
 * "no image" is decided by us, with an explanation, not by the driver's
 * bare 209), verify the bytes, warn before a JIT, and only then call
 * cuModuleLoadData. The device's primary context is used, so modules share
 * it with any runtime-API code in the same program. What a message quotes
 * of the driver (the GPU's name, its error texts) or of a manifest (how the
 * targets were chosen) is escaped (common.h), as every cbc_err text is.
 */
#include "loader_int.h"

#include "cudadrv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cbc_module {
    const struct cbc_cuda *cu;
    CUdevice dev;
    CUmodule mod;
    char target[CBC_TARGET_NAME_MAX];
    char bundle[128];
    bool jit;
};

enum cbc_status cbc_device_count(int *count, struct cbc_err *err)
{
    const struct cbc_cuda *cu;
    enum cbc_status st = cbc_cuda_get(&cu, err);
    if (st != CBC_OK)
        return st;
    CUresult rc = cu->DeviceGetCount(count);
    if (rc != CUDA_SUCCESS)
        return cbc_cuda_fail(cu, rc, CBC_E_DRIVER, err, "cuDeviceGetCount");
    if (*count == 0)
        return cbc_err_set(err, CBC_E_NO_DEVICE, "the CUDA driver reports no GPU");
    return CBC_OK;
}

enum cbc_status cbc_device_query(int ordinal, struct cbc_device_info *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    int count = 0;
    enum cbc_status st = cbc_device_count(&count, err);
    if (st != CBC_OK)
        return st;
    if (ordinal < 0 || ordinal >= count)
        return cbc_err_set(err, CBC_E_NO_DEVICE, "no GPU %d: the driver reports %d GPU%s (0 to %d)",
                           ordinal, count, count == 1 ? "" : "s", count - 1);
    const struct cbc_cuda *cu;
    cbc_cuda_get(&cu, NULL);
    st = cbc_cuda_device(cu, ordinal, out, err);
    if (st != CBC_OK)
        return st;
    out->ptx_isa = cbc_ptx_isa_for_driver(cu->driver_version);
    return CBC_OK;
}

enum cbc_status cbc_driver_symbol(const char *name, int abi, void **fn, struct cbc_err *err)
{
    const struct cbc_cuda *cu;
    enum cbc_status st = cbc_cuda_get(&cu, err);
    if (st != CBC_OK)
        return st;
    CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    *fn = NULL;
    CUresult rc = cu->GetProcAddress(name, fn, abi, CU_GET_PROC_ADDRESS_DEFAULT, &q);
    if (rc != CUDA_SUCCESS || q != CU_GET_PROC_ADDRESS_SUCCESS || !*fn)
        return cbc_err_set(err, CBC_E_NOT_FOUND,
                           "the CUDA driver (version %d) has no entry point '%s' at ABI %d%s",
                           cu->driver_version, name, abi,
                           q == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? " (driver too old)" : "");
    return CBC_OK;
}

enum cbc_status cbc_driver_error(int result, const char *what, enum cbc_status status,
                                 struct cbc_err *err)
{
    const struct cbc_cuda *cu = NULL;
    cbc_cuda_get(&cu, NULL);
    return cbc_cuda_fail(cu, (CUresult)result, status, err, what);
}

/* The sentence for "nothing in this bundle runs on this GPU". */
static enum cbc_status no_image(const struct cbc_bundle *b, const struct cbc_device_info *d,
                                const struct cbc_select_query *q, const struct cbc_load_opts *o,
                                struct cbc_err *err)
{
    size_t n;
    const struct cbc_image *imgs = cbc_bundle_images(b, &n);
    char what[600];
    cbc_select_none(imgs, n, q, what, sizeof what);
    char hint[256];
    if (o && o->rebuild_hint)
        snprintf(hint, sizeof hint, "%s", o->rebuild_hint);
    else
        snprintf(hint, sizeof hint, "cubincache build --arch %d%d (or add %d%d to CUDA_COMPUTE_CAP)",
                 d->cc_major, d->cc_minor, d->cc_major, d->cc_minor);
    cbc_err_set(err, CBC_E_NO_IMAGE,
                "%s: no image for GPU %d (%s, compute capability %d.%d): the bundle %s; "
                "rebuild with %s",
                cbc_bundle_name(b), d->ordinal, d->name, d->cc_major, d->cc_minor, what, hint);
    cbc_err_hint(err, "the bundle's targets came from: %s",
                 cbc_bundle_arch_detail(b) ? cbc_bundle_arch_detail(b) : "the build's --arch");
    return CBC_E_NO_IMAGE;
}

enum cbc_status cbc_module_load(struct cbc_bundle *b, int device, const struct cbc_load_opts *opts,
                                struct cbc_module **out, struct cbc_err *err)
{
    struct cbc_device_info d;
    enum cbc_status st = cbc_device_query(device, &d, err);
    if (st != CBC_OK) {
        cbc_err_prefix(err, "%s: cannot load", cbc_bundle_name(b));
        return st;
    }
    struct cbc_select_query q = {(unsigned)(d.cc_major * 10 + d.cc_minor), d.ptx_isa,
                                 opts && opts->prefer_binary};
    struct cbc_select_result r;
    long pick = cbc_bundle_select(b, &q, &r);
    if (pick < 0)
        return no_image(b, &d, &q, opts, err);
    const unsigned char *data;
    size_t size;
    st = cbc_bundle_image_bytes(b, (size_t)pick, &data, &size, err);
    if (st != CBC_OK)
        return st;

    size_t n;
    const struct cbc_image *img = &cbc_bundle_images(b, &n)[pick];
    struct cbc_module *m = calloc(1, sizeof *m);
    if (!m)
        return cbc_err_oom(err);
    cbc_cuda_get(&m->cu, NULL);
    cbc_target_name(&img->target, m->target);
    snprintf(m->bundle, sizeof m->bundle, "%s", cbc_bundle_name(b));
    m->jit = r.how == CBC_SELECT_PTX_JIT;
    const struct cbc_cuda *cu = m->cu;
    CUcontext ctx;
    CUresult rc = cu->DeviceGet(&m->dev, device);
    if (rc == CUDA_SUCCESS)
        rc = cu->DevicePrimaryCtxRetain(&ctx, m->dev);
    if (rc != CUDA_SUCCESS) {
        free(m);
        return cbc_cuda_fail(cu, rc, CBC_E_DRIVER, err, "cannot retain the GPU's primary context");
    }
    rc = cu->CtxSetCurrent(ctx);
    if (rc == CUDA_SUCCESS && m->jit && opts && opts->warn) {
        char raw[768], msg[3 * sizeof raw];
        cbc_fmt(raw, sizeof raw,
                 "%s: JIT-compiling %s PTX for GPU %d (%s, compute capability %d.%d): the bundle "
                 "has no SASS for it; build with --arch %d%d to skip the JIT",
                 m->bundle, m->target, device, d.name, d.cc_major, d.cc_minor, d.cc_major,
                 d.cc_minor);
        cbc_escape(msg, sizeof msg, raw); /* the GPU's name is the driver's text */
        opts->warn(opts->warn_ctx, msg);
    }
    unsigned char *ptx = NULL;
    if (rc == CUDA_SUCCESS && img->target.kind == CBC_KIND_PTX) {
        /* the driver takes PTX as a NUL-terminated string */
        ptx = malloc(size + 1);
        if (!ptx) {
            cu->DevicePrimaryCtxRelease(m->dev);
            free(m);
            return cbc_err_oom(err);
        }
        memcpy(ptx, data, size);
        ptx[size] = '\0';
        data = ptx;
    }
    if (rc == CUDA_SUCCESS)
        rc = cu->ModuleLoadData(&m->mod, data);
    free(ptx);
    if (rc != CUDA_SUCCESS) {
        char what[512];
        cbc_fmt(what, sizeof what, "%s: the driver refused the %s image for GPU %d (%s)", m->bundle,
                 m->target, device, d.name);
        cbc_cuda_fail(cu, rc, CBC_E_DRIVER, err, what);
        if (rc == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
            cbc_err_hint(err,
                         "the PTX is ISA %u.%u (CUDA %s); this driver (CUDA %d.%d) supports up to "
                         "%u.%u: update the driver, or ship SASS for compute capability %d.%d",
                         img->ptx_isa / 10, img->ptx_isa % 10, cbc_cuda_for_ptx_isa(img->ptx_isa),
                         d.driver_version / 1000, (d.driver_version % 1000) / 10, d.ptx_isa / 10,
                         d.ptx_isa % 10, d.cc_major, d.cc_minor);
        else if (rc == CUDA_ERROR_NO_BINARY_FOR_GPU || rc == CUDA_ERROR_INVALID_SOURCE)
            cbc_err_hint(err, "the image passed cubincache's checks; run 'cubincache inspect' on "
                         "it and report the mismatch");
        cu->DevicePrimaryCtxRelease(m->dev);
        free(m);
        return CBC_E_DRIVER;
    }
    *out = m;
    return CBC_OK;
}

enum cbc_status cbc_module_function(struct cbc_module *m, const char *kernel, void **fn,
                                    struct cbc_err *err)
{
    CUfunction f;
    CUresult rc = m->cu->ModuleGetFunction(&f, m->mod, kernel);
    if (rc == CUDA_ERROR_NOT_FOUND) {
        cbc_err_set(err, CBC_E_NOT_FOUND, "%s: the %s image has no kernel '%s'", m->bundle, m->target,
                    kernel);
        cbc_err_hint(err, "kernels must be extern \"C\" __global__ to be found by name; "
                     "'cubincache inspect' lists them");
        return CBC_E_NOT_FOUND;
    }
    if (rc != CUDA_SUCCESS)
        return cbc_cuda_fail(m->cu, rc, CBC_E_DRIVER, err, "cuModuleGetFunction");
    *fn = (void *)f;
    return CBC_OK;
}

const char *cbc_module_target(const struct cbc_module *m)
{
    return m->target;
}

bool cbc_module_jit(const struct cbc_module *m)
{
    return m->jit;
}

void *cbc_module_handle(const struct cbc_module *m)
{
    return (void *)m->mod;
}

void cbc_module_unload(struct cbc_module *m)
{
    if (!m)
        return;
    m->cu->ModuleUnload(m->mod);
    m->cu->DevicePrimaryCtxRelease(m->dev);
    free(m);
}
