/* test_loader.c: the loader on machines without a GPU: real bundles built by
 * cubincache build, a fake libcuda (tests/fakecuda) standing in for the
 * driver, so the whole path runs: device query, selection, verification,
 * module load and every error message. Criterion runs each test in its own
 * process, so each can give the driver a different configuration.
 * tests/gpu/ repeats the GPU-dependent cases on a real GPU. */
#include "fixtures.h"
#include "embedded.h"

#include <cubincache/loader.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

extern const struct cbc_embedded_bundle cbc_bundle_ig_kernels;

static char *bundle_path(const char *name)
{
    const char *d = getenv("CBC_BUNDLES");
    cr_assert(d && *d, "CBC_BUNDLES is not set");
    return cbc_asprintf("%s/%s.bundle/%s.manifest.json", d, name, name);
}

static struct cbc_bundle *open_bundle(const char *name)
{
    char *p = bundle_path(name);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(p, NULL, &b, &err), CBC_OK, "%s: %s", p, err.msg);
    free(p);
    return b;
}

/* Points the loader at the fake driver, configured as one GPU of `cc`. */
static void fake_gpu(int cc, const char *name, int driver)
{
    const char *lib = getenv("CBC_FAKE_CUDA");
    cr_assert(lib && *lib, "CBC_FAKE_CUDA is not set");
    setenv("CUBINCACHE_LIBCUDA", lib, 1);
    char v[16];
    snprintf(v, sizeof v, "%d", cc);
    setenv("FAKE_CUDA_CC", v, 1);
    setenv("FAKE_CUDA_NAME", name, 1);
    snprintf(v, sizeof v, "%d", driver);
    setenv("FAKE_CUDA_DRIVER", v, 1);
    setenv("FAKE_CUDA_COUNT", "1", 1);
}

static int driver_calls(const char *what)
{
    void *h = dlopen(getenv("CBC_FAKE_CUDA"), RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "the fake driver was never loaded");
    int (*count)(const char *) = (int (*)(const char *))dlsym(h, "fake_cuda_count");
    cr_assert_not_null(count);
    int n = count(what);
    dlclose(h);
    return n;
}

Test(loader, bundles_list_their_targets_and_ptx_isa)
{
    struct cbc_bundle *b = open_bundle("which_b86_89");
    size_t n;
    const struct cbc_image *img = cbc_bundle_images(b, &n);
    cr_assert_eq(n, 2);
    char a[CBC_TARGET_NAME_MAX], c[CBC_TARGET_NAME_MAX];
    cr_assert_str_eq(cbc_target_name(&img[0].target, a), "sm_86");
    cr_assert_str_eq(cbc_target_name(&img[1].target, c), "sm_89");
    cr_assert_str_eq(cbc_bundle_name(b), "which_b86_89");
    cbc_bundle_close(b);
    b = open_bundle("which_ptx80");
    img = cbc_bundle_images(b, &n);
    cr_assert_eq(n, 1);
    cr_assert_eq(img[0].target.kind, CBC_KIND_PTX);
    cr_assert_eq(img[0].ptx_isa, 90, "nvcc 13 writes PTX ISA 9.0");
    cbc_bundle_close(b);
}

Test(loader, sm89_only_bundle_on_an_sm90_gpu_is_explained_not_209)
{
    fake_gpu(90, "NVIDIA H100 80GB HBM3", 13000);
    struct cbc_bundle *b = open_bundle("which_b86_89");
    struct cbc_module *m = NULL;
    struct cbc_err err = {0};
    struct cbc_load_opts o = {.rebuild_hint = "-Dcuda-arch=90 or CUDA_COMPUTE_CAP=90"};
    cr_assert_eq(cbc_module_load(b, 0, &o, &m, &err), CBC_E_NO_IMAGE);
    cr_assert_str_eq(err.msg, "which_b86_89: no image for GPU 0 (NVIDIA H100 80GB HBM3, compute "
                              "capability 9.0): the bundle has sm_86, sm_89 and no PTX; rebuild "
                              "with -Dcuda-arch=90 or CUDA_COMPUTE_CAP=90");
    cr_assert_str_eq(err.remedy, "the bundle's targets came from: 86,89");
    cr_assert_eq(driver_calls("cuModuleLoadData"), 0, "decided before the driver, not by its 209");
    cbc_bundle_close(b);

    b = open_bundle("which_b89");
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_NO_IMAGE);
    cr_assert(strstr(err.msg, "has sm_89 and no PTX; rebuild with cubincache build --arch 90"),
              "%s", err.msg);
    cbc_bundle_close(b);
}

/* Copies a test bundle into a fresh directory the test may damage. */
static char *copy_bundle(const char *name)
{
    char *dir = strdup("/tmp/cbc-loader.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char *cmd = cbc_asprintf("cp %s/%s.bundle/%s.* '%s'/", getenv("CBC_BUNDLES"), name, name, dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    return dir;
}

static void patch_byte(const char *path, long off, int value)
{
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    fseek(f, off, SEEK_SET);
    fputc(value, f);
    fclose(f);
}

/* Replaces the first `from` in `name`'s manifest in `dir` with `to`. */
static void edit_manifest(const char *dir, const char *name, const char *from, const char *to)
{
    char *path = cbc_asprintf("%s/%s.manifest.json", dir, name);
    uint8_t *text;
    size_t len;
    cr_assert_eq(cbc_file_read(path, &text, &len, NULL), CBC_OK, "%s", path);
    char *at = strstr((char *)text, from);
    cr_assert_not_null(at, "no '%s' in %s", from, path);
    struct cbc_buf b = {0};
    cbc_buf_append(&b, text, (size_t)(at - (char *)text));
    cbc_buf_puts(&b, to);
    cbc_buf_puts(&b, at + strlen(from));
    cr_assert_eq(cbc_file_write_atomic(path, b.p, b.len, 0644, NULL), CBC_OK);
    cbc_buf_release(&b);
    free(text);
    free(path);
}

/* No byte of the text is a control a terminal acts on, nor a C1 control
 * in UTF-8. */
static void assert_inert(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        cr_assert(*p >= 0x20 && *p != 0x7f, "raw control 0x%02x in '%s'", *p, s);
        cr_assert(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "raw C1 control in '%s'", s);
    }
}

Test(loader, a_cubin_patched_to_claim_another_sm_is_refused_before_the_driver)
{
    fake_gpu(89, "NVIDIA L40S", 13000);
    char *dir = copy_bundle("which_b90");
    char *cubin = cbc_asprintf("%s/which_b90.sm_90.cubin", dir);
    patch_byte(cubin, 49, 89); /* V2 e_flags: SM byte 0x5a -> 0x59 */
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_OK, "%s", err.msg);
    struct cbc_module *m = NULL;
    /* the GPU is 8.9, so the lying label sm_90 does not even get selected... */
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_NO_IMAGE);
    cbc_bundle_close(b);
    /* ...and when it would be, its bytes are refused */
    const unsigned char *data;
    size_t size;
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_OK);
    cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "mislabeled") && strstr(err.msg, "holds sm_89"), "%s", err.msg);
    cr_assert_eq(driver_calls("cuModuleLoadData"), 0);
    cbc_bundle_close(b);
    free(cubin);
    free(dir);
}

Test(loader, mislabeled_or_corrupt_images_never_reach_the_driver)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    /* the seed's file: an sm_89 cubin in the sm_90 slot, with a manifest
     * lying the same way (its hash updated to match) */
    char *dir = copy_bundle("which_b90");
    char *good = cbc_asprintf("%s/which_b90.sm_90.cubin", dir);
    char *liar = cbc_asprintf("%s/which_b89.bundle/which_b89.sm_89.cubin", getenv("CBC_BUNDLES"));
    struct cbc_hash h_good, h_liar;
    uint64_t s_good, s_liar;
    cr_assert_eq(cbc_hash_file(good, &h_good, &s_good, NULL), CBC_OK);
    cr_assert_eq(cbc_hash_file(liar, &h_liar, &s_liar, NULL), CBC_OK);
    char x_good[33], x_liar[33];
    cbc_hash_hex(&h_good, x_good);
    cbc_hash_hex(&h_liar, x_liar);
    char *cmd = cbc_asprintf("cp '%s' '%s' && sed -i -e 's/%s/%s/' -e 's/\"size\":\t%llu/\"size\":\t%llu/' "
                             "'%s/which_b90.manifest.json'",
                             liar, good, x_good, x_liar, (unsigned long long)s_good,
                             (unsigned long long)s_liar, dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(good);
    free(liar);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_OK, "%s", err.msg);
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "labelled sm_90 but holds sm_89"), "%s", err.msg);
    cr_assert_eq(driver_calls("cuModuleLoadData"), 0);
    cbc_bundle_close(b);
    free(dir);

    /* a corrupt byte deep inside an otherwise valid cubin: the hash */
    dir = copy_bundle("which_b90");
    char *cubin = cbc_asprintf("%s/which_b90.sm_90.cubin", dir);
    patch_byte(cubin, 1500, 0x5a);
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_OK);
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "does not match the hash"), "%s", err.msg);
    cr_assert_eq(driver_calls("cuModuleLoadData"), 0);
    cbc_bundle_close(b);
    free(cubin);
    free(dir);
}

Test(loader, every_entry_point_fails_cleanly_without_a_driver)
{
    setenv("CUBINCACHE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    struct cbc_err err = {0};
    int n;
    cr_assert_eq(cbc_device_count(&n, &err), CBC_E_NO_DRIVER);
    cr_assert(strstr(err.msg, "cannot load the CUDA driver"), "%s", err.msg);
    cr_assert(err.remedy[0]);
    struct cbc_device_info d;
    cr_assert_eq(cbc_device_query(0, &d, &err), CBC_E_NO_DRIVER);
    void *fn;
    cr_assert_eq(cbc_driver_symbol("cuMemAlloc", 3020, &fn, &err), CBC_E_NO_DRIVER);
    struct cbc_bundle *b = open_bundle("which_b90");
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_NO_DRIVER);
    cr_assert(strstr(err.msg, "which_b90") && strstr(err.msg, "CUDA driver"), "%s", err.msg);
    cbc_bundle_close(b);
}

Test(loader, a_driver_without_gpus_is_no_device)
{
    fake_gpu(90, "x", 13000);
    setenv("FAKE_CUDA_COUNT", "0", 1);
    struct cbc_err err = {0};
    int n;
    cr_assert_eq(cbc_device_count(&n, &err), CBC_E_NO_DEVICE);
    cr_assert(strstr(err.msg, "CUDA_ERROR_NO_DEVICE"), "%s", err.msg);
}

static void record_warning(void *ctx, const char *msg)
{
    snprintf(ctx, 512, "%s", msg);
}

Test(loader, ptx_only_bundle_loads_through_jit_with_a_one_line_warning)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    struct cbc_bundle *b = open_bundle("which_ptx80");
    char warned[512] = "";
    struct cbc_load_opts o = {.warn = record_warning, .warn_ctx = warned};
    struct cbc_module *m = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_module_load(b, 0, &o, &m, &err), CBC_OK, "%s", err.msg);
    cr_assert(cbc_module_jit(m));
    cr_assert_str_eq(cbc_module_target(m), "compute_80");
    cr_assert(strstr(warned, "JIT-compiling compute_80 PTX for GPU 0 (NVIDIA H200"), "%s", warned);
    cr_assert_null(strchr(warned, '\n'), "one line");
    void *fn;
    cr_assert_eq(cbc_module_function(m, "which_arch", &fn, &err), CBC_OK);
    cr_assert_eq(cbc_module_function(m, "no_such_kernel", &fn, &err), CBC_E_NOT_FOUND);
    cr_assert(strstr(err.msg, "'no_such_kernel'") && strstr(err.msg, "which_ptx80"), "%s", err.msg);
    cbc_module_unload(m);
    cbc_bundle_close(b);
}

Test(loader, ptx_newer_than_the_driver_names_both_versions)
{
    fake_gpu(90, "NVIDIA H200", 12080); /* a CUDA 12.8 driver knows PTX ISA 8.7 */
    struct cbc_bundle *b = open_bundle("which_ptx80");
    struct cbc_module *m = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_NO_IMAGE);
    cr_assert(strstr(err.msg, "ISA 9.0, newer than the driver's 8.7"), "%s", err.msg);
    cr_assert(strstr(err.msg, "CUDA 13.0 driver"), "%s", err.msg);
    cbc_bundle_close(b);
}

Test(loader, sm90_and_sm90a_together_load_sm90a_as_the_driver_does)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    struct cbc_bundle *b = open_bundle("which_b90_90a");
    struct cbc_module *m = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_OK, "%s", err.msg);
    cr_assert_str_eq(cbc_module_target(m), "sm_90a");
    cr_assert_not(cbc_module_jit(m));
    cr_assert_eq(driver_calls("cuModuleLoadData"), 1);
    cbc_module_unload(m);
    cbc_bundle_close(b);
}

Test(loader, embedded_bundles_round_trip)
{
    struct cbc_bundle *e = NULL, *p = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_embedded(&cbc_bundle_ig_kernels, &e, &err), CBC_OK, "%s", err.msg);
    const char *manifest = getenv("CBC_KERNELS_MANIFEST");
    cr_assert_eq(cbc_bundle_open_path(manifest, NULL, &p, &err), CBC_OK, "%s", err.msg);
    size_t ne, np;
    const struct cbc_image *ie = cbc_bundle_images(e, &ne), *ip = cbc_bundle_images(p, &np);
    cr_assert_eq(ne, np);
    cr_assert_geq(ne, 1);
    cr_assert_str_eq(cbc_bundle_origin(e), "embedded");
    for (size_t i = 0; i < ne; i++) {
        cr_assert(cbc_target_eq(&ie[i].target, &ip[i].target));
        cr_assert_eq(ie[i].ptx_isa, ip[i].ptx_isa);
        const unsigned char *de, *dp;
        size_t se, sp;
        cr_assert_eq(cbc_bundle_image_bytes(e, i, &de, &se, &err), CBC_OK, "%s", err.msg);
        cr_assert_eq(cbc_bundle_image_bytes(p, i, &dp, &sp, &err), CBC_OK, "%s", err.msg);
        cr_assert_eq(se, sp);
        cr_assert_eq(memcmp(de, dp, se), 0, "image %zu differs", i);
    }
    cbc_bundle_close(e);
    cbc_bundle_close(p);
}

/* One image embedded as `cubincache embed` does it: a record (binfmt's
 * writer) holding a copy of the bytes, and a struct that says what the
 * record says. Released with free_embedded. */
struct embedded_one {
    struct cbc_embedded_bundle eb; /* first: the struct's address is this one's */
    struct cbc_embedded_image img;
    struct cbc_embedded_entry e;
    char target[CBC_TARGET_NAME_MAX];
    struct cbc_buf rec;
};

static const struct cbc_embedded_bundle *embed_one(const char *name, const char *target,
                                                   const uint8_t *data, size_t n, const char *hex)
{
    struct embedded_one *t = calloc(1, sizeof *t);
    cr_assert(cbc_target_parse(target, &t->e.target), "%s", target);
    snprintf(t->target, sizeof t->target, "%s", target);
    t->e.data = data;
    t->e.size = n;
    memcpy(t->e.xxh3, hex, CBC_HASH_HEX_LEN);
    cr_assert_eq(cbc_embedded_write(name, &t->e, 1, &t->rec, NULL), CBC_OK);
    const unsigned char *rec = (const unsigned char *)t->rec.p;
    t->img = (struct cbc_embedded_image){t->target, rec + t->e.offset, n, t->e.xxh3};
    t->eb = (struct cbc_embedded_bundle){name, 1, &t->img, NULL, rec, t->rec.len};
    return &t->eb;
}

static void free_embedded(const struct cbc_embedded_bundle *eb)
{
    struct embedded_one *t = (struct embedded_one *)eb;
    cbc_buf_release(&t->rec);
    free(t);
}

/* An embedded image is verified once per process and then trusted; what
 * is remembered is the bytes' address, size and hash together, so neither
 * a refused image nor another bundle's claim about the same bytes is ever
 * taken for verified. */
Test(loader, corrupt_or_mislabeled_embedded_images_are_refused_every_time)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    char *path = cbc_asprintf("%s/which_b90.bundle/which_b90.sm_90.cubin", getenv("CBC_BUNDLES"));
    uint8_t *good, *bad;
    size_t n, nb;
    cr_assert_eq(cbc_file_read(path, &good, &n, NULL), CBC_OK, "%s", path);
    cr_assert_eq(cbc_file_read(path, &bad, &nb, NULL), CBC_OK, "%s", path);
    bad[1500] ^= 0x5a; /* deep inside the code: only the hash can tell */
    struct cbc_hash h;
    char hex[33], other[33];
    cbc_hash_bytes(good, n, &h);
    cbc_hash_hex(&h, hex);
    cbc_hash_bytes((const unsigned char *)"something else", 14, &h);
    cbc_hash_hex(&h, other);
    const struct cbc_embedded_bundle *ebs[] = {
        embed_one("emb", "sm_90", good, n, hex),   /* 0: as built */
        embed_one("emb", "sm_90", good, n, other), /* 1: the same bytes, another hash */
        embed_one("emb", "sm_90", bad, nb, hex),   /* 2: a flipped byte */
        embed_one("emb", "sm_89", good, n, hex),   /* 3: sm_90 code labelled sm_89 */
    };
    struct cbc_err err = {0};
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < 4; i++) {
            struct cbc_bundle *b = NULL;
            cr_assert_eq(cbc_bundle_open_embedded(ebs[i], &b, &err), CBC_OK, "%s", err.msg);
            struct cbc_module *m = NULL;
            enum cbc_status st = cbc_module_load(b, 0, NULL, &m, &err);
            const unsigned char *data;
            size_t size;
            if (i == 0) {
                cr_assert_eq(st, CBC_OK, "round %d: %s", round, err.msg);
                cbc_module_unload(m);
            } else {
                /* image 3 claims sm_89, so a 9.0 GPU has no image in that
                 * bundle (the loader says so); its bytes are still refused
                 * when asked for */
                cr_assert_eq(st, i == 3 ? CBC_E_NO_IMAGE : CBC_E_VERIFY, "round %d, image %zu: %s",
                             round, i, err.msg);
                cr_assert_null(m);
                if (i == 3)
                    cr_assert(strstr(err.msg, "no image for GPU 0"), "%s", err.msg);
                cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, &err), CBC_E_VERIFY,
                             "round %d, image %zu", round, i);
                cr_assert(strstr(err.msg, i == 3 ? "refusing to load a mislabeled image: "
                                                   "labelled sm_89 but holds sm_90"
                                                 : "embedded sm_90 image does not match the hash"),
                          "round %d, image %zu: %s", round, i, err.msg);
            }
            cbc_bundle_close(b);
        }
    }
    cr_assert_eq(driver_calls("cuModuleLoadData"), 2, "only the good image, once per round");
    for (size_t i = 0; i < 4; i++)
        free_embedded(ebs[i]);
    free(good);
    free(bad);
    free(path);
}

Test(loader, a_bundle_path_in_the_environment_overrides_the_embedded_one)
{
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    unsetenv("CUBINCACHE_BUNDLE_PATH");
    cr_assert_eq(cbc_bundle_open_default(&cbc_bundle_ig_kernels, &b, &err), CBC_OK);
    cr_assert_str_eq(cbc_bundle_origin(b), "embedded");
    cbc_bundle_close(b);
    char *dir = cbc_path_dir(getenv("CBC_KERNELS_MANIFEST"));
    setenv("CUBINCACHE_BUNDLE_PATH", dir, 1);
    cr_assert_eq(cbc_bundle_open_default(&cbc_bundle_ig_kernels, &b, &err), CBC_OK, "%s", err.msg);
    cr_assert(strstr(cbc_bundle_origin(b), "ig_kernels.manifest.json"), "%s", cbc_bundle_origin(b));
    cbc_bundle_close(b);
    free(dir);
}

/* CUBINCACHE_BUNDLE_PATH is one list for every open: a directory later in
 * it is found by open_default too, and a list set for other programs,
 * holding nothing of this one, leaves the embedded bundle in use. */
Test(loader, the_bundle_path_is_one_list_and_the_embedded_bundle_its_fallback)
{
    char *bdir = cbc_path_dir(getenv("CBC_KERNELS_MANIFEST"));
    char *parent = cbc_path_dir(bdir);
    char *list = cbc_asprintf("/nonexistent/a:%s", parent);
    setenv("CUBINCACHE_BUNDLE_PATH", list, 1);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_default(&cbc_bundle_ig_kernels, &b, &err), CBC_OK, "%s", err.msg);
    cr_assert(strstr(cbc_bundle_origin(b), "ig_kernels.bundle/ig_kernels.manifest.json"), "%s",
              cbc_bundle_origin(b));
    cbc_bundle_close(b);
    setenv("CUBINCACHE_BUNDLE_PATH", "/nonexistent/a:/nonexistent/b", 1);
    cr_assert_eq(cbc_bundle_open_default(&cbc_bundle_ig_kernels, &b, &err), CBC_OK, "%s", err.msg);
    cr_assert_str_eq(cbc_bundle_origin(b), "embedded");
    cbc_bundle_close(b);
    free(list);
    free(parent);
    free(bdir);
}

Test(loader, an_installed_bundle_is_found_by_name)
{
    /* the kernels' out dir is spelled ig_kernels.bundle: its parent holds it */
    char *bdir = cbc_path_dir(getenv("CBC_KERNELS_MANIFEST"));
    char *parent = cbc_path_dir(bdir);
    char *path = cbc_asprintf("/nonexistent/a:%s", parent);
    setenv("CUBINCACHE_BUNDLE_PATH", path, 1);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_installed("ig_kernels", &b, &err), CBC_OK, "%s", err.msg);
    cr_assert(strstr(cbc_bundle_origin(b), "ig_kernels.bundle/ig_kernels.manifest.json"), "%s",
              cbc_bundle_origin(b));
    cbc_bundle_close(b);
    /* the bundle directory itself, and its name from its spelling */
    cr_assert_eq(cbc_bundle_open_path(bdir, NULL, &b, &err), CBC_OK, "%s", err.msg);
    cr_assert_str_eq(cbc_bundle_name(b), "ig_kernels");
    cbc_bundle_close(b);
    /* not found: every place looked at is named, the fix too */
    setenv("CUBINCACHE_BUNDLE_PATH", "/nonexistent/a:/nonexistent/b", 1);
    cr_assert_eq(cbc_bundle_open_installed("ig_kernels", &b, &err), CBC_E_NOT_FOUND);
    cr_assert_null(b);
    cr_assert(strstr(err.msg, "'/nonexistent/a', '/nonexistent/b', "), "%s", err.msg);
    cr_assert(strstr(err.msg, "share/cubincache"), "%s", err.msg);
    cr_assert(strstr(err.remedy, "CUBINCACHE_BUNDLE_PATH"), "%s", err.remedy);
    cr_assert_eq(cbc_bundle_open_installed("../etc", &b, &err), CBC_E_USAGE);
    unsetenv("CUBINCACHE_BUNDLE_PATH");
    free(path);
    free(parent);
    free(bdir);
}

Test(loader, driver_symbols_resolve_through_the_driver)
{
    fake_gpu(90, "x", 13000);
    void *fn = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_driver_symbol("cuMemAlloc", 3020, &fn, &err), CBC_OK, "%s", err.msg);
    cr_assert_not_null(fn);
    cr_assert_eq(cbc_driver_symbol("cuNoSuchThing", 3020, &fn, &err), CBC_E_NOT_FOUND);
    cr_assert(strstr(err.msg, "cuNoSuchThing"), "%s", err.msg);
}

Test(loader, driver_errors_are_worded_as_the_loaders_own)
{
    fake_gpu(90, "x", 13000);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_driver_error(209 /* CUDA_ERROR_NO_BINARY_FOR_GPU */, "cuModuleLoadData",
                                  CBC_E_DRIVER,
                                  &err), CBC_E_DRIVER);
    cr_assert_str_eq(err.msg, "cuModuleLoadData: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel "
                     "image is available for execution on the device");
    cr_assert_eq(err.status, CBC_E_DRIVER);
    cr_assert_eq(cbc_driver_error(1, "x", CBC_E_NO_DEVICE, NULL), CBC_E_NO_DEVICE);
}

/* loader.h lets callers pass a NULL error record; the status alone must
 * still say what failed, and no output may be left set on a failure. */
Test(loader, a_null_err_never_turns_a_failure_into_success)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    struct cbc_bundle *b = open_bundle("which_b86_89");
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, NULL), CBC_E_NO_IMAGE);
    cr_assert_null(m);
    cbc_bundle_close(b);

    char *dir = copy_bundle("which_b90");
    char *cubin = cbc_asprintf("%s/which_b90.sm_90.cubin", dir);
    patch_byte(cubin, 1500, 0x5a);
    b = NULL;
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, NULL), CBC_OK);
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, NULL), CBC_E_VERIFY);
    const unsigned char *data = NULL;
    size_t size = 0;
    cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, NULL), CBC_E_VERIFY);
    cr_assert_null(data);
    cbc_bundle_close(b);
    cr_assert_eq(unlink(cubin), 0);
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, NULL), CBC_OK);
    cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, NULL), CBC_E_NOT_FOUND);
    cbc_bundle_close(b);
    free(cubin);
    free(dir);

    b = open_bundle("which_b90");
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, NULL), CBC_OK);
    void *fn = NULL;
    cr_assert_eq(cbc_module_function(m, "no_such_kernel", &fn, NULL), CBC_E_NOT_FOUND);
    cr_assert_null(fn);
    cbc_module_unload(m);
    cbc_bundle_close(b);
    cr_assert_eq(cbc_bundle_open_path("/nonexistent/x.manifest.json", NULL, &b, NULL),
                 CBC_E_NOT_FOUND);
    cr_assert_eq(cbc_bundle_open_path(getenv("CBC_BUNDLES"), NULL, &b, NULL), CBC_E_USAGE);
}

Test(loader, a_null_err_without_a_driver_is_still_no_driver)
{
    setenv("CUBINCACHE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    int n = -1;
    cr_assert_eq(cbc_device_count(&n, NULL), CBC_E_NO_DRIVER);
    void *fn = NULL;
    cr_assert_eq(cbc_driver_symbol("cuMemAlloc", 3020, &fn, NULL), CBC_E_NO_DRIVER);
}

static void *count_devices(void *arg)
{
    int *n = arg;
    struct cbc_err err = {0};
    if (cbc_device_count(n, &err) != CBC_OK)
        *n = -1;
    return NULL;
}

/* The process-wide driver table is filled once, whichever thread gets
 * there first; the others wait for it (run under TSan in CI). */
Test(loader, threads_racing_to_the_driver_open_it_once)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    enum { N = 8 };
    pthread_t th[N];
    int got[N];
    for (int i = 0; i < N; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, count_devices, &got[i]), 0);
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        cr_assert_eq(got[i], 1, "thread %d saw %d GPUs", i, got[i]);
    }
    cr_assert_eq(driver_calls("cuInit"), 1, "cuInit ran %d times", driver_calls("cuInit"));
}

/* -rdc code that calls into another unit needs a device link: no driver
 * loads it, so the loader refuses it before the driver sees it. */
Test(loader, a_cubin_that_needs_a_device_link_is_refused_before_the_driver)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    size_t n;
    uint8_t *rel = fixture("calls.rdc.cubin", &n);
    struct cbc_hash h;
    char hex[33];
    cbc_hash_bytes(rel, n, &h);
    cbc_hash_hex(&h, hex);
    const struct cbc_embedded_bundle *eb = embed_one("rdc", "sm_90", rel, n, hex);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_embedded(eb, &b, &err), CBC_OK, "%s", err.msg);
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "needs a device link"), "%s", err.msg);
    cr_assert(strstr(err.msg, "_Z9elsewherei"), "%s", err.msg);
    cr_assert_eq(driver_calls("cuModuleLoadData"), 0);
    cbc_bundle_close(b);
    free_embedded(eb);
    free(rel);
}

/* The GPU's name is the driver's text and arch.detail the manifest's:
 * programs print the loader's messages as they are, so both arrive
 * escaped (a name that retitles the terminal, or clears it with U+009B). */
Test(loader, what_a_message_quotes_of_the_driver_or_a_manifest_is_escaped)
{
    fake_gpu(90, "NVIDIA \033]0;owned\007 \xc2\x9b" "2J", 13000);
    char *dir = copy_bundle("which_b86_89");
    edit_manifest(dir, "which_b86_89", "\"detail\":\t\"86,89\"", "\"detail\":\t\"86\\u001b[2J\"");
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b86_89", &b, &err), CBC_OK, "%s", err.msg);
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_NO_IMAGE);
    assert_inert(err.msg);
    assert_inert(err.remedy);
    cr_assert(strstr(err.msg, "(NVIDIA \\x1b]0;owned\\x07 \\xc2\\x9b2J, compute capability 9.0)"),
              "%s", err.msg);
    cr_assert_str_eq(err.remedy, "the bundle's targets came from: 86\\x1b[2J");
    cbc_bundle_close(b);
    b = open_bundle("which_ptx80");
    char warned[512] = "";
    struct cbc_load_opts o = {.warn = record_warning, .warn_ctx = warned};
    cr_assert_eq(cbc_module_load(b, 0, &o, &m, &err), CBC_OK, "%s", err.msg);
    assert_inert(warned);
    cr_assert(strstr(warned, "GPU 0 (NVIDIA \\x1b]0;owned\\x07"), "%s", warned);
    cbc_module_unload(m);
    cbc_bundle_close(b);
    free(dir);
}

/* A place for the ig_kernels bundle the test may chmod and chown:
 * PLACE/ig_kernels.bundle/, a copy of the built one. */
static char *place_with_kernels(void)
{
    char *place = strdup("/tmp/cbc-place.XXXXXX");
    cr_assert_not_null(mkdtemp(place));
    char *bdir = cbc_path_dir(getenv("CBC_KERNELS_MANIFEST"));
    char *cmd = cbc_asprintf("cp -r '%s' '%s'/ && chmod 755 '%s'", bdir, place, place);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(bdir);
    setenv("CUBINCACHE_BUNDLE_PATH", place, 1);
    return place;
}

/* open_installed fails naming `place` skipped for `why`; open_default
 * keeps the embedded bundle. */
static void assert_skipped(const char *place, const char *why)
{
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_installed("ig_kernels", &b, &err), CBC_E_NOT_FOUND,
                 "a planted bundle was believed: %s", b ? cbc_bundle_origin(b) : "");
    char *want = cbc_asprintf("'%s' (skipped: %s)", place, why);
    cr_assert(strstr(err.msg, want), "no \"%s\" in: %s", want, err.msg);
    cr_assert(strstr(err.remedy, "writable by no one else"), "%s", err.remedy);
    free(want);
    cr_assert_eq(cbc_bundle_open_default(&cbc_bundle_ig_kernels, &b, &err), CBC_OK, "%s", err.msg);
    cr_assert_str_eq(cbc_bundle_origin(b), "embedded");
    cbc_bundle_close(b);
}

static void assert_found(const char *place)
{
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_installed("ig_kernels", &b, &err), CBC_OK, "%s", err.msg);
    cr_assert(strstr(cbc_bundle_origin(b), place), "%s", cbc_bundle_origin(b));
    cbc_bundle_close(b);
}

/* Whoever can write a directory on the way to a manifest can plant the
 * kernels a program runs (writing the manifest's hashes too): such a
 * place is skipped and named, from / down to the manifest itself. */
Test(loader, a_bundle_others_could_have_planted_is_skipped_and_named)
{
    char *place = place_with_kernels();
    char *bundle = cbc_asprintf("%s/ig_kernels.bundle", place);
    char *manifest = cbc_asprintf("%s/ig_kernels.manifest.json", bundle);
    assert_found(place);
    char why[512];
    chmod(place, 0777);
    snprintf(why, sizeof why, "'%s' is writable by every user (mode 0777)", place);
    assert_skipped(place, why);
    chmod(place, 0775);
    snprintf(why, sizeof why, "'%s' is writable by its group (mode 0775)", place);
    assert_skipped(place, why);
    chmod(place, 0755);
    chmod(bundle, 0757);
    snprintf(why, sizeof why, "'%s' is writable by every user (mode 0757)", bundle);
    assert_skipped(place, why);
    chmod(bundle, 0755);
    chmod(manifest, 0666);
    snprintf(why, sizeof why, "'%s' is writable by every user (mode 0666)", manifest);
    assert_skipped(place, why);
    chmod(manifest, 0644);
    assert_found(place);
    if (geteuid() == 0) { /* another user's directory, as root */
        cr_assert_eq(chown(bundle, 65534, 65534), 0);
        snprintf(why, sizeof why, "'%s' is owned by uid 65534, neither root nor this program's "
                 "user (0)", bundle);
        assert_skipped(place, why);
        cr_assert_eq(chown(bundle, 0, 0), 0);
    }
    free(manifest);
    free(bundle);
    free(place);
}

/* Above the place, the same rule: a directory others can write anywhere
 * on the way is fatal, unless it is sticky (as /tmp), where no one else
 * can rename what is ours. Relative entries are refused. */
Test(loader, every_directory_up_to_the_root_is_checked_and_relative_entries_refused)
{
    char *outer = strdup("/tmp/cbc-outer.XXXXXX");
    cr_assert_not_null(mkdtemp(outer));
    char *place = cbc_asprintf("%s/place", outer);
    char *bdir = cbc_path_dir(getenv("CBC_KERNELS_MANIFEST"));
    char *cmd = cbc_asprintf("mkdir -m 755 '%s' && cp -r '%s' '%s'/", place, bdir, place);
    cr_assert_eq(system(cmd), 0);
    setenv("CUBINCACHE_BUNDLE_PATH", place, 1);
    assert_found(place);
    chmod(outer, 0777);
    char why[512];
    snprintf(why, sizeof why, "'%s' is writable by every user (mode 0777)", outer);
    assert_skipped(place, why);
    chmod(outer, 01777);
    assert_found(place);
    /* a relative entry is refused, and the search goes on */
    char *list = cbc_asprintf("%s:%s", "kernels", place);
    setenv("CUBINCACHE_BUNDLE_PATH", list, 1);
    assert_found(place);
    cr_assert_eq(chdir(outer), 0);
    setenv("CUBINCACHE_BUNDLE_PATH", "place", 1);
    assert_skipped("place", "a relative directory");
    free(list);
    free(cmd);
    free(bdir);
    free(place);
    free(outer);
}

/* The places an error lists can be many: a message cut to fit says so. */
Test(loader, a_list_of_places_cut_short_says_so)
{
    struct cbc_buf list = {0};
    for (int i = 0; i < 60; i++)
        cbc_buf_printf(&list, "%s/nonexistent/place-number-%02d", i ? ":" : "", i);
    setenv("CUBINCACHE_BUNDLE_PATH", list.p, 1);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_installed("ig_kernels", &b, &err), CBC_E_NOT_FOUND);
    size_t n = strlen(err.msg);
    cr_assert_eq(n, CBC_ERR_MSG_MAX - 1, "%zu: %s", n, err.msg);
    cr_assert_str_eq(err.msg + n - 3, "...", "%s", err.msg);
    cbc_buf_release(&list);
}

/* The manifest records each image's size: a file of any other size is
 * refused on its fstat, before a byte of it is read (a 1 GiB file in place
 * of a 4 KB cubin once cost 3 s and 1 GB before its hash refused it). */
Test(loader, an_image_of_another_size_is_refused_before_it_is_read)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    const char *names[] = {"which_b90", "which_ptx80"};
    const char *files[] = {"which_b90.sm_90.cubin", "which_ptx80.compute_80.ptx"};
    for (int k = 0; k < 2; k++) {
        char *dir = copy_bundle(names[k]);
        char *img = cbc_asprintf("%s/%s", dir, files[k]);
        cr_assert_eq(truncate(img, 1ll << 30), 0); /* sparse: nothing written */
        struct cbc_bundle *b = NULL;
        struct cbc_err err = {0};
        cr_assert_eq(cbc_bundle_open_path(dir, names[k], &b, &err), CBC_OK, "%s", err.msg);
        const unsigned char *data;
        size_t size;
        cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, &err), CBC_E_VERIFY);
        cr_assert(strstr(err.msg, "is 1073741824 bytes, but the manifest recorded"), "%s", err.msg);
        cr_assert(strstr(err.msg, files[k]), "%s", err.msg);
        struct cbc_module *m = NULL;
        cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_VERIFY);
        cr_assert_eq(driver_calls("cuModuleLoadData"), 0);
        cbc_bundle_close(b);
        free(img);
        free(dir);
    }
}

/* A FIFO (or a device, or a directory) where an image should be is a
 * broken bundle, reported as what it is; it is not a usage error, and it
 * is never opened for reading in a way that could block. */
Test(loader, an_image_that_is_a_fifo_is_reported_as_one)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    char *dir = copy_bundle("which_b90");
    char *img = cbc_asprintf("%s/which_b90.sm_90.cubin", dir);
    cr_assert_eq(unlink(img), 0);
    cr_assert_eq(mkfifo(img, 0644), 0);
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_OK, "%s", err.msg);
    struct cbc_module *m = NULL;
    cr_assert_eq(cbc_module_load(b, 0, NULL, &m, &err), CBC_E_VERIFY, "%s", err.msg);
    cr_assert_eq(err.status, CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "which_b90.sm_90.cubin' is a FIFO, not a regular file"), "%s", err.msg);
    cbc_bundle_close(b);
    free(img);
    free(dir);
}

/* A manifest whose name is another bundle's, under this one's name, holds
 * someone else's kernels: refused, however the bundle was asked for. */
Test(loader, a_manifest_of_another_name_is_not_the_bundle_asked_for)
{
    char *dir = copy_bundle("which_b90");
    edit_manifest(dir, "which_b90", "\"name\":\t\"which_b90\"", "\"name\":\t\"other\"");
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_path(dir, "which_b90", &b, &err), CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "name: 'other', but the bundle asked for is 'which_b90'"), "%s",
              err.msg);
    cr_assert(strstr(err.remedy, "belongs to another bundle"), "%s", err.remedy);
    char *manifest = cbc_asprintf("%s/which_b90.manifest.json", dir);
    cr_assert_eq(cbc_bundle_open_path(manifest, NULL, &b, &err), CBC_E_FORMAT, "%s", err.msg);
    setenv("CUBINCACHE_BUNDLE_PATH", dir, 1);
    cr_assert_eq(cbc_bundle_open_installed("which_b90", &b, &err), CBC_E_FORMAT, "%s", err.msg);
    cr_assert_null(b);
    free(manifest);
    free(dir);
}

/* Opens eb and expects `want`, with `needle` in the message and the fix
 * in the remedy when it fails. */
static void expect_open(const struct cbc_embedded_bundle *eb, enum cbc_status want,
                        const char *needle)
{
    struct cbc_bundle *b = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_bundle_open_embedded(eb, &b, &err), want, "%s", err.msg);
    if (want == CBC_OK) {
        cbc_bundle_close(b);
        return;
    }
    cr_assert_null(b);
    cr_assert(strstr(err.msg, needle), "no '%s' in: %s", needle, err.msg);
    cr_assert(strstr(err.remedy, "cubincache embed"), "%s", err.remedy);
}

/* The loader and `check` read one description of an embedded bundle: its
 * .cbc_bundle record. A generated struct that says anything else of it (an
 * edited target once made check say OK while the loader picked another
 * image) is refused, field by field; an edited record is refused by both. */
Test(loader, the_loader_and_check_read_one_description_of_an_embedded_bundle)
{
    fake_gpu(90, "NVIDIA H200", 13000);
    const struct cbc_embedded_bundle *orig = &cbc_bundle_ig_kernels;
    const size_t n = orig->n;
    cr_assert_geq(n, 1); /* one image where the kernels were built for this GPU alone */
    struct cbc_embedded_image *imgs = calloc(n, sizeof *imgs);
    memcpy(imgs, orig->images, n * sizeof *imgs);
    struct cbc_embedded_bundle eb = *orig;
    eb.images = imgs;
    expect_open(&eb, CBC_OK, NULL);
    const char *needle = "the struct's images[0].%s is not what its .cbc_bundle record says";
    char want[128];
    imgs[0].target = strcmp(orig->images[0].target, "sm_75") ? "sm_75" : "sm_80";
    snprintf(want, sizeof want, needle, "target");
    expect_open(&eb, CBC_E_VERIFY, want);
    imgs[0] = orig->images[0];
    imgs[0].data = orig->images[0].data + 1; /* still inside the record */
    snprintf(want, sizeof want, needle, "data");
    expect_open(&eb, CBC_E_VERIFY, want);
    imgs[0] = orig->images[0];
    imgs[0].size--;
    snprintf(want, sizeof want, needle, "size");
    expect_open(&eb, CBC_E_VERIFY, want);
    imgs[0] = orig->images[0];
    imgs[0].xxh3 = "0123456789abcdef0123456789abcdef";
    snprintf(want, sizeof want, needle, "xxh3");
    expect_open(&eb, CBC_E_VERIFY, want);
    imgs[0] = orig->images[0];
    eb.n = n - 1;
    expect_open(&eb, CBC_E_VERIFY, "the struct's n is not");
    eb.n = n;
    eb.name = "other";
    expect_open(&eb, CBC_E_VERIFY, "the struct's name is not");
    eb.name = orig->name;
    eb.record_size += 64;
    expect_open(&eb, CBC_E_VERIFY, "the struct's record_size is not");
    eb.record_size = orig->record_size;
    eb.record = NULL;
    expect_open(&eb, CBC_E_FORMAT, "carries no .cbc_bundle record");

    /* the record edited, and the struct with it: check calls it
     * mislabeled, and the loader refuses the image the same way */
    unsigned char *rec = malloc(orig->record_size);
    memcpy(rec, orig->record, orig->record_size);
    const size_t desc0 = CBC_EMBED_HEADER + cbc_rd32(rec + 20); /* after the name */
    struct cbc_embedded_list el;
    struct cbc_err err = {0};
    char other[16] = "";
    snprintf(other, sizeof other, "%s", strcmp(orig->images[0].target, "sm_75") ? "sm_75" : "sm_80");
    memset(rec + desc0, 0, 16);
    memcpy(rec + desc0, other, strlen(other));
    eb.record = rec;
    for (size_t i = 0; i < n; i++)
        imgs[i].data = rec + (orig->images[i].data - orig->record);
    imgs[0].target = other;
    cr_assert_eq(cbc_embedded_parse(rec, orig->record_size, 0, "prog", true, &el, &err),
                 CBC_E_VERIFY, "check must call it mislabeled");
    cr_assert(strstr(err.msg, "mislabeled"), "%s", err.msg);
    struct cbc_bundle *b = NULL;
    cr_assert_eq(cbc_bundle_open_embedded(&eb, &b, &err), CBC_OK, "%s", err.msg);
    const unsigned char *data;
    size_t size;
    cr_assert_eq(cbc_bundle_image_bytes(b, 0, &data, &size, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "mislabeled"), "%s", err.msg);
    cbc_bundle_close(b);
    /* and a struct that kept the old target disagrees with the record */
    imgs[0].target = orig->images[0].target;
    snprintf(want, sizeof want, needle, "target");
    expect_open(&eb, CBC_E_VERIFY, want);
    free(rec);
    free(imgs);
}
