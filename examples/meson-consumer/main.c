/* main.c: the example consumer's program. It carries its kernels (the
 * bundle `cubincache embed` turned into C), picks the image for GPU 0 with
 * the loader, runs vecadd and checks the sums. CUBINCACHE_BUNDLE_PATH, when
 * set, points it at updated cubins without relinking. With --installed it
 * uses the bundle `meson install` put in share/cubincache beside its bin/
 * instead of the embedded one. Without a usable
 * image or GPU it prints the loader's explanation and its remedy.
 * Exit: 0 sums correct, 1 wrong sums or a driver failure, 4 no GPU or no
 * image for it. Only the driver API is used, through the loader, so the
 * program links neither libcuda nor the CUDA runtime. */
#include <cubincache/loader.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_vecadd;

static int fail(const struct cbc_err *err)
{
    fprintf(stderr, "error: %s\n", err->msg);
    if (err->remedy[0])
        fprintf(stderr, "  fix: %s\n", err->remedy);
    return err->status == CBC_E_NO_DRIVER || err->status == CBC_E_NO_DEVICE ||
                   err->status == CBC_E_NO_IMAGE
               ? 4
               : 1;
}

int main(int argc, char **argv)
{
    bool installed = argc > 1 && strcmp(argv[1], "--installed") == 0;
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    void *fn = NULL;
    PFN_cuMemAlloc_v3020 alloc;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuLaunchKernel_v4000 launch;
    if ((installed ? cbc_bundle_open_installed("vecadd", &b, &err)
                   : cbc_bundle_open_default(&cbc_bundle_vecadd, &b, &err)) != CBC_OK ||
        cbc_module_load(b, 0, NULL, &m, &err) != CBC_OK ||
        cbc_module_function(m, "vecadd", &fn, &err) != CBC_OK ||
        cbc_driver_symbol("cuMemAlloc", 3020, (void **)&alloc, &err) != CBC_OK ||
        cbc_driver_symbol("cuMemcpyHtoD", 3020, (void **)&htod, &err) != CBC_OK ||
        cbc_driver_symbol("cuMemcpyDtoH", 3020, (void **)&dtoh, &err) != CBC_OK ||
        cbc_driver_symbol("cuLaunchKernel", 4000, (void **)&launch, &err) != CBC_OK) {
        int rc = fail(&err);
        cbc_module_unload(m);
        cbc_bundle_close(b);
        return rc;
    }
    enum { N = 1024 };
    static float x[N], y[N], z[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i, y[i] = 0.5f * (float)i;
    CUdeviceptr dx, dy, dz;
    int n = N, bad = 0;
    void *args[] = {&dx, &dy, &dz, &n};
    CUresult rc = alloc(&dx, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = alloc(&dy, sizeof y);
    if (rc == CUDA_SUCCESS)
        rc = alloc(&dz, sizeof z);
    if (rc == CUDA_SUCCESS)
        rc = htod(dx, x, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = htod(dy, y, sizeof y);
    if (rc == CUDA_SUCCESS)
        rc = launch((CUfunction)fn, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    if (rc == CUDA_SUCCESS)
        rc = dtoh(z, dz, sizeof z); /* synchronous: waits for the kernel */
    for (int i = 0; rc == CUDA_SUCCESS && i < N; i++)
        bad += fabsf(z[i] - 1.5f * (float)i) > 1e-6f;
    if (rc != CUDA_SUCCESS)
        fprintf(stderr, "vecadd: a CUDA driver call failed (CUresult %d)\n", (int)rc);
    else
        printf("vecadd: ran %s%s on GPU 0, %d of %d sums wrong (bundle: %s)\n",
               cbc_module_target(m), cbc_module_jit(m) ? " (PTX JIT)" : "", bad, N,
               cbc_bundle_origin(b));
    cbc_module_unload(m);
    cbc_bundle_close(b);
    return rc == CUDA_SUCCESS && bad == 0 ? 0 : 1;
}
