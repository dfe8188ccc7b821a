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
#include "example.h"

#include <math.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_vecadd;

int main(int argc, char **argv)
{
    bool installed = argc > 1 && strcmp(argv[1], "--installed") == 0;
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    void *fn = NULL;
    struct driver_calls k;
    if ((installed ? cbc_bundle_open_installed("vecadd", &b, &err)
                   : cbc_bundle_open_default(&cbc_bundle_vecadd, &b, &err)) != CBC_OK ||
        cbc_module_load(b, 0, NULL, &m, &err) != CBC_OK ||
        cbc_module_function(m, "vecadd", &fn, &err) != CBC_OK ||
        driver_calls_resolve(&k, &err) != CBC_OK) {
        int rc = report_failure(&err);
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
    CUresult rc = k.alloc(&dx, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = k.alloc(&dy, sizeof y);
    if (rc == CUDA_SUCCESS)
        rc = k.alloc(&dz, sizeof z);
    if (rc == CUDA_SUCCESS)
        rc = k.htod(dx, x, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = k.htod(dy, y, sizeof y);
    if (rc == CUDA_SUCCESS)
        rc = k.launch((CUfunction)fn, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL);
    if (rc == CUDA_SUCCESS)
        rc = k.dtoh(z, dz, sizeof z); /* synchronous: waits for the kernel */
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
