/* dp_main.c: the example's second program. It carries the dp bundle (two
 * sources, device-linked per target by cubincache build), launches
 * dp_parent, which launches dp_child on the GPU, and checks every value.
 * Exit: 0 values correct, 1 wrong values or a driver failure, 4 no GPU or
 * no image for it. Only the driver API is used, through the loader. */
#include "example.h"

#include <math.h>

extern const struct cbc_embedded_bundle cbc_bundle_dp;

int main(void)
{
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    void *fn = NULL;
    struct driver_calls k;
    if (cbc_bundle_open_default(&cbc_bundle_dp, &b, &err) != CBC_OK ||
        cbc_module_load(b, 0, NULL, &m, &err) != CBC_OK ||
        cbc_module_function(m, "dp_parent", &fn, &err) != CBC_OK ||
        driver_calls_resolve(&k, &err) != CBC_OK) {
        int rc = report_failure(&err);
        cbc_module_unload(m);
        cbc_bundle_close(b);
        return rc;
    }
    enum { N = 4096 };
    static float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i;
    CUdeviceptr dx;
    int n = N, bad = 0;
    void *args[] = {&dx, &n};
    CUresult rc = k.alloc(&dx, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = k.htod(dx, x, sizeof x);
    if (rc == CUDA_SUCCESS)
        rc = k.launch((CUfunction)fn, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
    if (rc == CUDA_SUCCESS)
        rc = k.dtoh(x, dx, sizeof x); /* synchronous: waits for parent and child */
    for (int i = 0; rc == CUDA_SUCCESS && i < N; i++)
        bad += fabsf(x[i] - (3.0f * (float)i + 1.0f)) > 1e-3f;
    if (rc != CUDA_SUCCESS)
        fprintf(stderr, "dp: a CUDA driver call failed (CUresult %d)\n", (int)rc);
    else
        printf("dp: ran %s on GPU 0 (two sources, device-linked; the parent launched the "
               "child), %d of %d values wrong\n", cbc_module_target(m), bad, N);
    cbc_module_unload(m);
    cbc_bundle_close(b);
    return rc == CUDA_SUCCESS && bad == 0 ? 0 : 1;
}
