/* cubincache/loader.h: pick the image of a bundle that fits the GPU at hand,
 * verify it, load it, or fail with a sentence that names the GPU, what the
 * bundle has, and the fix.
 *
 * A bundle is what `cubincache build` writes (DIR/NAME.manifest.json and one
 * image per target) or the same compiled into the program by
 * `cubincache embed`. Before the driver sees an image the loader chooses it
 * with the driver's own rules (cubincache/select.h), checks its content hash
 * against the manifest and its own arch against its label, and only then
 * calls cuModuleLoadData. The CUDA driver is opened with
 * dlopen("libcuda.so.1"): nothing here links against it, and on a machine
 * without a driver or GPU every function that needs one fails cleanly with
 * CBC_E_NO_DRIVER or CBC_E_NO_DEVICE and a message saying so.
 *
 * Ownership: every object returned through an out-parameter is owned by the
 * caller and released with the matching close/unload function. Errors go to
 * a caller-owned struct cbc_err (may be NULL). Functions are not thread-safe
 * on the same object; different objects may be used from different threads.
 * Since 0.1.
 */
#ifndef CUBINCACHE_LOADER_H
#define CUBINCACHE_LOADER_H

#include <cubincache/api.h>

#include <cubincache/binfmt.h>
#include <cubincache/select.h>
#include <cubincache/status.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- bundles ----------------------------------------------------------- */

/* What `cubincache embed` generates: one per bundle, with the images' bytes
 * and the hashes the manifest recorded for them. The bytes live in the
 * bundle's record in the program's CBC_EMBED_SECTION (cubincache/binfmt.h),
 * which is what `check`, `inspect` and `select` read; the fields here are
 * a convenience for C and must say exactly what the record says. */
struct cbc_embedded_image {
    const char *target;        /* "sm_90", "compute_120" */
    const unsigned char *data; /* inside `record` */
    size_t size;
    const char *xxh3;          /* 32 hex digits, XXH3-128 of data */
};

struct cbc_embedded_bundle {
    const char *name;          /* the build's --name, e.g. "ig_kernels" */
    size_t n;
    const struct cbc_embedded_image *images;
    const char *arch_detail;   /* how the targets were chosen, for messages */
    /* The bundle's record in CBC_EMBED_SECTION: the one description of the
     * bundle. cbc_bundle_open_embedded reads it with the reader `check`
     * uses and refuses a struct that says anything else of it (an edited
     * target, pointer, size or hash). */
    const unsigned char *record;
    size_t record_size;
};

struct cbc_bundle; /* opaque */

/* Opens a bundle from disk: `path` is a NAME.manifest.json, or a directory
 * holding `name`.manifest.json (name may be NULL when path is a manifest,
 * or a directory spelled NAME.bundle).
 * Reads the manifest and the PTX texts (for their ISA); cubins are read and
 * verified when loaded. CBC_E_NOT_FOUND, CBC_E_FORMAT (naming the field). */
CBC_API enum cbc_status cbc_bundle_open_path(const char *path, const char *name, struct cbc_bundle **out,
                                             struct cbc_err *err);

/* Opens an embedded bundle. No copy is made: `eb` must outlive the bundle.
 * The record is parsed as `check` parses it, and every image's target,
 * address, size and hash in the struct must be the record's: CBC_E_FORMAT
 * for a missing or malformed record, CBC_E_VERIFY naming the field for a
 * struct that disagrees with it. An image's bytes are verified the first
 * time they are loaded and then trusted for the rest of the process under
 * the same address, size, hash and label, so they must not change while
 * the process runs (as generated code's read-only data cannot); bytes that
 * may change belong in a bundle on disk. */
CBC_API enum cbc_status cbc_bundle_open_embedded(const struct cbc_embedded_bundle *eb,
                                                 struct cbc_bundle **out, struct cbc_err *err);

/* The bundle a program should use: eb->name's bundle from the first
 * directory of CUBINCACHE_BUNDLE_PATH (colon-separated; updated cubins
 * deployed without relinking) that holds it and may be trusted (as for
 * cbc_bundle_open_installed), else the embedded one; so a list set for
 * other programs changes nothing here. A bundle found there that does not
 * open is an error, not a reason to fall back. The variable is ignored in
 * setuid, setgid and capability-raising programs (secure_getenv). */
CBC_API enum cbc_status cbc_bundle_open_default(const struct cbc_embedded_bundle *eb,
                                                struct cbc_bundle **out, struct cbc_err *err);

/* An installed bundle: the first of the directories of
 * CUBINCACHE_BUNDLE_PATH (colon-separated; ignored in privileged
 * programs), PREFIX/share/cubincache when the program is PREFIX/bin/PROGRAM
 * (a program installed with its bundles under one prefix, wherever that
 * prefix is moved), and libcubincache's DATADIR/cubincache, that holds
 * NAME.manifest.json or NAME.bundle/NAME.manifest.json and may be trusted:
 * the manifest and every directory above it owned by root or the
 * program's effective user and writable by no one else (a sticky
 * directory such as /tmp may lie above). Relative entries and
 * places that fail are skipped. CBC_E_NOT_FOUND names every place looked
 * at, and why each skipped one was. */
CBC_API enum cbc_status cbc_bundle_open_installed(const char *name, struct cbc_bundle **out,
                                                  struct cbc_err *err);

CBC_API void cbc_bundle_close(struct cbc_bundle *b);

CBC_API const char *cbc_bundle_name(const struct cbc_bundle *b);
/* "embedded" or the manifest's path. */
CBC_API const char *cbc_bundle_origin(const struct cbc_bundle *b);
/* How the build chose the targets (the manifest's arch.detail, e.g.
 * "CUDA_COMPUTE_CAP=90"), or NULL when unknown. */
CBC_API const char *cbc_bundle_arch_detail(const struct cbc_bundle *b);
/* The images, in manifest order; valid until close. */
CBC_API const struct cbc_image *cbc_bundle_images(const struct cbc_bundle *b, size_t *n);
/* The file an image comes from, or NULL when embedded. */
CBC_API const char *cbc_bundle_image_file(const struct cbc_bundle *b, size_t i);

/* The image the driver would load on a GPU of compute capability cc
 * (10*major+minor) with a driver of PTX ISA driver_isa (0: any). Pure. */
CBC_API long cbc_bundle_select(const struct cbc_bundle *b, const struct cbc_select_query *q,
                               struct cbc_select_result *r);

/* The bytes of image i, verified: content hash as recorded, and the code's
 * own arch equal to its label. CBC_E_VERIFY (mislabeled or corrupt: never
 * given to the driver), CBC_E_NOT_FOUND, CBC_E_IO. The pointer stays valid
 * until close. Cost: an embedded image is verified once per process, and
 * that first time reads and hashes every byte (BENCHMARKS.md, "Loader
 * overhead", has the figures); an image from disk is read and verified once
 * per bundle object. */
CBC_API enum cbc_status cbc_bundle_image_bytes(struct cbc_bundle *b, size_t i, const unsigned char **data,
                                               size_t *size, struct cbc_err *err);

/* ---- devices ----------------------------------------------------------- */

struct cbc_device_info {
    int ordinal;
    char name[256];
    int cc_major, cc_minor;
    int driver_version; /* cuDriverGetVersion: 13000 for CUDA 13.0 */
    unsigned ptx_isa;   /* highest PTX ISA that driver accepts, 10*major+minor */
    size_t total_mem;
};

/* Number of GPUs. CBC_E_NO_DRIVER without libcuda.so.1, CBC_E_NO_DEVICE
 * when the driver sees none. */
CBC_API enum cbc_status cbc_device_count(int *count, struct cbc_err *err);
CBC_API enum cbc_status cbc_device_query(int ordinal, struct cbc_device_info *out, struct cbc_err *err);

/* Any CUDA driver API entry point, for calls the loader does not wrap
 * (cuMemAlloc, cuLaunchKernel, ...), resolved with the driver's own
 * cuGetProcAddress, so the program never links libcuda. `abi` picks the
 * entry point's version exactly as cuGetProcAddress's cudaVersion does:
 * pass the number of the <cudaTypedefs.h> type you cast *fn to, e.g. 3020
 * for PFN_cuMemAlloc_v3020 (cuMemAlloc_v2) and 2000 for
 * PFN_cuCtxSynchronize_v2000 (CUDA 13 also has a cuCtxSynchronize taking a
 * context, PFN_cuCtxSynchronize_v13000). CBC_E_NO_DRIVER, or
 * CBC_E_NOT_FOUND for a symbol the driver does not have at that ABI. */
CBC_API enum cbc_status cbc_driver_symbol(const char *name, int abi, void **fn, struct cbc_err *err);

/* Fills err for a failed driver call made through cbc_driver_symbol:
 * "<what>: CUDA_ERROR_X (n): <the driver's text>", the form the loader's own
 * errors take, and returns `status` (CBC_E_DRIVER for most). `result` is
 * the call's CUresult. Since 0.1. */
CBC_API enum cbc_status cbc_driver_error(int result, const char *what, enum cbc_status status,
                                         struct cbc_err *err);

/* ---- modules ----------------------------------------------------------- */

struct cbc_load_opts {
    bool prefer_binary; /* CU_PREFER_BINARY: a lower-minor cubin before PTX */
    /* Called once, before a PTX image is JIT-compiled ("JIT-compiling
     * compute_80 PTX for GPU 0 (...)"). NULL: silent. */
    void (*warn)(void *ctx, const char *message);
    void *warn_ctx;
    /* Appended to "rebuild with ..." in errors, e.g. "-Dcuda-arch=90 or
     * CUDA_COMPUTE_CAP=90"; NULL gives the generic cubincache build advice. */
    const char *rebuild_hint;
};

struct cbc_module; /* opaque: a loaded image on one device */

/* Selects, verifies and loads the bundle's image for GPU `device`, making
 * the device's primary context current on the calling thread.
 * CBC_E_NO_IMAGE: nothing in the bundle runs there; the message names the
 * GPU, its compute capability, what the bundle has, and the remedy.
 * CBC_E_VERIFY: the chosen image failed verification (never loaded).
 * CBC_E_DRIVER: the driver refused (its error name and text, and for PTX
 * the driver's and the PTX's ISA versions). */
CBC_API enum cbc_status cbc_module_load(struct cbc_bundle *b, int device, const struct cbc_load_opts *opts,
                                        struct cbc_module **out, struct cbc_err *err);

/* A kernel by name (a CUfunction, as void*); CBC_E_NOT_FOUND naming the
 * kernel and the bundle. */
CBC_API enum cbc_status cbc_module_function(struct cbc_module *m, const char *kernel, void **fn,
                                            struct cbc_err *err);

/* The target that was loaded ("sm_90"), and whether it was JIT-compiled. */
CBC_API const char *cbc_module_target(const struct cbc_module *m);
CBC_API bool cbc_module_jit(const struct cbc_module *m);
/* The CUmodule, as void*, for driver calls the loader does not wrap. */
CBC_API void *cbc_module_handle(const struct cbc_module *m);

CBC_API void cbc_module_unload(struct cbc_module *m);

#ifdef __cplusplus
}
#endif
#endif
