/* gpu_loader.c: the loader on a real GPU.
 *  - the project's own kernels (embedded) load and compute right;
 *  - an sm_89-only bundle is refused with the explained message, where the
 *    driver itself answers 209;
 *  - a PTX-only bundle loads through the JIT, with the warning;
 *  - sm_90 and sm_90a together: the loader picks what the driver picks from
 *    a fatbin holding both (told apart by a kernel that reports which ran);
 *  - a cubin patched to claim another SM is refused before the driver sees
 *    it (the driver would answer 209).
 * Bundles come from tests/meson.build (built by cubincache build). Exit 77
 * without a GPU. */
#include "gpu_test.h"

#include "common.h"

#include <cubincache/binfmt.h>
#include <cuda.h>
#include <cudaTypedefs.h>

#include <string.h>
#include <unistd.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;

static PFN_cuMemAlloc_v3020 MemAlloc;
static PFN_cuMemcpyHtoD_v3020 HtoD;
static PFN_cuMemcpyDtoH_v3020 DtoH;
static PFN_cuLaunchKernel_v4000 Launch;
static PFN_cuCtxSynchronize_v2000 Sync;
static PFN_cuModuleLoadData_v2000 RawLoad;

static void symbols(void)
{
    struct cbc_err err = {0};
    CHECK(cbc_driver_symbol("cuMemAlloc", 3020, (void **)&MemAlloc, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_driver_symbol("cuMemcpyHtoD", 3020, (void **)&HtoD, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_driver_symbol("cuMemcpyDtoH", 3020, (void **)&DtoH, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_driver_symbol("cuLaunchKernel", 4000, (void **)&Launch, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_driver_symbol("cuCtxSynchronize", 2000, (void **)&Sync, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_driver_symbol("cuModuleLoadData", 2000, (void **)&RawLoad, &err) == CBC_OK, "%s", err.msg);
}

/* A test bundle's directory: NAME.bundle in the build's tests/. */
static char *bundle_dir(const char *name)
{
    const char *d = getenv("CBC_BUNDLES");
    return d ? cbc_asprintf("%s/%s.bundle", d, name) : NULL;
}

/* Runs which_arch from a loaded module; returns what it reported. */
static int which(void *fn)
{
    CUdeviceptr out = 0;
    int v = -1;
    if (MemAlloc(&out, sizeof(int)) != CUDA_SUCCESS)
        return -2;
    void *args[] = {&out};
    if (Launch((CUfunction)fn, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL) != CUDA_SUCCESS ||
        Sync() != CUDA_SUCCESS || DtoH(&v, out, sizeof v) != CUDA_SUCCESS)
        return -3;
    return v;
}

/* Loaded first and unloaded last: a module keeps the device's primary
 * context retained, which the raw driver calls below need. */
static struct cbc_bundle *g_b;
static struct cbc_module *g_m;

static void project_kernels_run(void)
{
    struct cbc_err err = {0};
    CHECK(cbc_bundle_open_embedded(&cbc_bundle_ig_kernels, &g_b, &err) == CBC_OK, "%s", err.msg);
    CHECK(g_b && cbc_module_load(g_b, 0, NULL, &g_m, &err) == CBC_OK, "%s", err.msg);
    struct cbc_module *m = g_m;
    if (!m)
        return;
    printf("project kernels: loaded %s%s\n", cbc_module_target(m), cbc_module_jit(m) ? " (JIT)" : "");
    void *interp = NULL, *perturb = NULL;
    CHECK(cbc_module_function(m, "interpolate_input", &interp, &err) == CBC_OK, "%s", err.msg);
    CHECK(cbc_module_function(m, "perturb_dimension", &perturb, &err) == CBC_OK, "%s", err.msg);
    enum { N = 1000 };
    static float base[N], in[N], out[N];
    for (int i = 0; i < N; i++) {
        base[i] = (float)i * 0.5f;
        in[i] = (float)(N - i);
    }
    CUdeviceptr db, di, dout, dp;
    MemAlloc(&db, sizeof base);
    MemAlloc(&di, sizeof in);
    MemAlloc(&dout, sizeof out);
    MemAlloc(&dp, sizeof out);
    HtoD(db, base, sizeof base);
    HtoD(di, in, sizeof in);
    float alpha = 0.25f;
    int n = N, dim = 7;
    float delta = 3.0f;
    void *a1[] = {&dout, &db, &di, &alpha, &n};
    void *a2[] = {&dp, &dout, &n, &dim, &delta};
    CHECK(Launch((CUfunction)interp, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, a1, NULL) ==
              CUDA_SUCCESS, "launch interpolate_input");
    CHECK(Launch((CUfunction)perturb, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, a2, NULL) ==
              CUDA_SUCCESS, "launch perturb_dimension");
    CHECK(Sync() == CUDA_SUCCESS, "sync");
    DtoH(out, dp, sizeof out);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        float want = base[i] + alpha * (in[i] - base[i]) + (i == dim ? delta : 0.0f);
        bad += fabsf(out[i] - want) > 1e-4f * fmaxf(1.0f, fabsf(want));
    }
    CHECK(bad == 0, "%d wrong values from interpolate_input + perturb_dimension", bad);
    printf("project kernels: interpolate_input and perturb_dimension computed %d values, %d wrong\n",
           N, bad);
}

/* On any GPU outside 8.6 to 8.9, where an sm_86 + sm_89 bundle has nothing. */
static void sm89_only_is_explained(const struct cbc_device_info *d)
{
    char *dir = bundle_dir("which_b86_89");
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    CHECK(cbc_bundle_open_path(dir, "which_b86_89", &b, &err) == CBC_OK, "%s", err.msg);
    char hint[96], want[400];
    snprintf(hint, sizeof hint, "-Dcuda-arch=%d%d or CUDA_COMPUTE_CAP=%d%d", d->cc_major,
             d->cc_minor, d->cc_major, d->cc_minor);
    snprintf(want, sizeof want, "compute capability %d.%d): the bundle has sm_86, sm_89 and no "
             "PTX; rebuild with %s", d->cc_major, d->cc_minor, hint);
    struct cbc_load_opts o = {.rebuild_hint = hint};
    enum cbc_status st = b ? cbc_module_load(b, 0, &o, &m, &err) : CBC_E_IO;
    CHECK(st == CBC_E_NO_IMAGE, "status %d", st);
    CHECK(strstr(err.msg, "which_b86_89: no image for GPU 0 (") && strstr(err.msg, want),
          "message: %s", err.msg);
    printf("sm_89-only bundle on this GPU: %s\n", err.msg);
    /* what the driver alone says about the same cubin */
    char *p = cbc_asprintf("%s/which_b86_89.sm_89.cubin", dir);
    uint8_t *data;
    size_t len;
    CUmodule raw;
    if (cbc_file_read(p, &data, &len, NULL) == CBC_OK) {
        CUresult rc = RawLoad(&raw, data);
        CHECK(rc == CUDA_ERROR_NO_BINARY_FOR_GPU, "the driver answered %d", (int)rc);
        printf("the driver alone, same cubin: CUresult %d (CUDA_ERROR_NO_BINARY_FOR_GPU)\n", (int)rc);
        free(data);
    }
    free(p);
    cbc_bundle_close(b);
    free(dir);
}

static void record(void *ctx, const char *msg)
{
    snprintf(ctx, 512, "%s", msg);
}

static void ptx_only_jits(void)
{
    char *dir = bundle_dir("which_ptx80");
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    char warned[512] = "";
    struct cbc_load_opts o = {.warn = record, .warn_ctx = warned};
    CHECK(cbc_bundle_open_path(dir, "which_ptx80", &b, &err) == CBC_OK, "%s", err.msg);
    CHECK(b && cbc_module_load(b, 0, &o, &m, &err) == CBC_OK, "%s", err.msg);
    if (m) {
        CHECK(cbc_module_jit(m), "not JIT");
        void *fn;
        CHECK(cbc_module_function(m, "which_arch", &fn, &err) == CBC_OK, "%s", err.msg);
        int v = which(fn);
        CHECK(v == 800, "PTX from compute_80 reports %d", v);
        printf("PTX-only bundle: loaded %s through the JIT, kernel reports __CUDA_ARCH__ %d\n  "
               "warning: %s\n", cbc_module_target(m), v, warned);
        CHECK(strstr(warned, "JIT-compiling compute_80"), "warning: %s", warned);
        cbc_module_unload(m);
    }
    cbc_bundle_close(b);
    free(dir);
}

/* The driver's own choice between two images, via nvcc -fatbin. */
static int driver_choice(const char *first, const char *second)
{
    const char *src = getenv("CBC_WHICH_CU"), *nvcc = getenv("CBC_NVCC");
    if (!src || !nvcc)
        return -10;
    char *cmd = cbc_asprintf("'%s' -fatbin -gencode arch=compute_%s,code=sm_%s -gencode "
                             "arch=compute_%s,code=sm_%s -o /tmp/cbc-which.fatbin '%s'",
                             nvcc, first, first, second, second, src);
    int rc = system(cmd);
    free(cmd);
    if (rc != 0)
        return -11;
    uint8_t *data;
    size_t len;
    if (cbc_file_read("/tmp/cbc-which.fatbin", &data, &len, NULL) != CBC_OK)
        return -12;
    CUmodule mod;
    CUfunction fn;
    int v = -13;
    if (RawLoad(&mod, data) == CUDA_SUCCESS) {
        PFN_cuModuleGetFunction_v2000 get;
        cbc_driver_symbol("cuModuleGetFunction", 2000, (void **)&get, NULL);
        if (get(&fn, mod, "which_arch") == CUDA_SUCCESS)
            v = which(fn);
    }
    free(data);
    return v;
}

static void sm90_and_sm90a_like_the_driver(void)
{
    char *dir = bundle_dir("which_b90_90a");
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    CHECK(cbc_bundle_open_path(dir, "which_b90_90a", &b, &err) == CBC_OK, "%s", err.msg);
    CHECK(b && cbc_module_load(b, 0, NULL, &m, &err) == CBC_OK, "%s", err.msg);
    if (m) {
        void *fn;
        cbc_module_function(m, "which_arch", &fn, &err);
        int ours = which(fn), d1 = driver_choice("90", "90a"), d2 = driver_choice("90a", "90");
        printf("sm_90 + sm_90a: the loader picked %s (kernel reports %d); the driver picks %d "
               "and %d for the two orders in one fatbin\n",
               cbc_module_target(m), ours, d1, d2);
        CHECK(ours == 9090, "the loader's image reports %d", ours);
        CHECK(d1 == ours && d2 == ours, "driver %d / %d, loader %d", d1, d2, ours);
        cbc_module_unload(m);
    }
    cbc_bundle_close(b);
    free(dir);
}

static void patched_cubin_is_refused(void)
{
    char *dir = bundle_dir("which_b90");
    char tmp[] = "/tmp/cbc-gpu-loader.XXXXXX";
    CHECK(mkdtemp(tmp) != NULL, "mkdtemp");
    char *cmd = cbc_asprintf("cp '%s'/which_b90.* '%s'/", dir, tmp);
    CHECK(system(cmd) == 0, "copy");
    free(cmd);
    char *cubin = cbc_asprintf("%s/which_b90.sm_90.cubin", tmp);
    uint8_t *data;
    size_t len;
    CHECK(cbc_file_read(cubin, &data, &len, NULL) == CBC_OK, "read");
    data[49] = 80; /* V2 e_flags: claim SM 80 */
    CHECK(cbc_file_write_atomic(cubin, data, len, 0644, NULL) == CBC_OK, "write");
    CUmodule raw;
    CUresult rc = RawLoad(&raw, data);
    printf("cubin patched to claim sm_80: the driver alone answers CUresult %d\n", (int)rc);
    CHECK(rc == CUDA_ERROR_NO_BINARY_FOR_GPU, "driver %d", (int)rc);
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    struct cbc_module *m = NULL;
    CHECK(cbc_bundle_open_path(tmp, "which_b90", &b, &err) == CBC_OK, "%s", err.msg);
    enum cbc_status st = b ? cbc_module_load(b, 0, NULL, &m, &err) : CBC_E_IO;
    CHECK(st == CBC_E_VERIFY, "status %d: %s", st, err.msg);
    printf("the loader refuses it first: %s\n", err.msg);
    cbc_bundle_close(b);
    free(data);
    free(cubin);
    cmd = cbc_asprintf("rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0, "cleanup");
    free(cmd);
    free(dir);
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0); /* keep what was printed if a check crashes */
    require_gpu();
    struct cbc_device_info d;
    struct cbc_err err = {0};
    CHECK(cbc_device_query(0, &d, &err) == CBC_OK, "%s", err.msg);
    printf("GPU 0: %s, compute capability %d.%d, driver %d\n", d.name, d.cc_major, d.cc_minor,
           d.driver_version);
    symbols();
    project_kernels_run(); /* makes the primary context current for the raw calls */
    /* the cases adapt to the GPU, or say what they skip and why */
    int cc = d.cc_major * 10 + d.cc_minor;
    if (cc < 86 || cc > 89)
        sm89_only_is_explained(&d);
    else
        printf("skipped: an sm_86 + sm_89 bundle runs on this %d.%d GPU\n", d.cc_major, d.cc_minor);
    if (cc >= 80)
        ptx_only_jits();
    else
        printf("skipped: compute_80 PTX does not run on this %d.%d GPU\n", d.cc_major, d.cc_minor);
    if (cc == 90) {
        sm90_and_sm90a_like_the_driver();
        patched_cubin_is_refused();
    } else {
        printf("skipped: sm_90 with sm_90a, and a patched sm_90 cubin, need a 9.0 GPU (this is "
               "%d.%d)\n", d.cc_major, d.cc_minor);
    }
    cbc_module_unload(g_m);
    cbc_bundle_close(g_b);
    return finish("gpu_loader");
}
