/* launch.h: the compiler launcher, `cubincache nvcc ARGS...`: an nvcc
 * command line served from the cache when its inputs were compiled before,
 * or run and stored, whatever build system runs it (CMake's
 * CMAKE_CUDA_COMPILER_LAUNCHER, Meson's cuda compiler, Make's NVCC).
 *
 * A command is cacheable when it makes one object (-c, -dc), cubin, PTX,
 * fatbin or device-linked object from its inputs (nvargs.h); anything else
 * is run exactly as given. A cacheable command is keyed like a build
 * target (key.h: the source and every file it read, nvcc's and the host
 * compiler's binaries, every argument but the output names, the NVCC_* and
 * include-path environment, the working directory) through direct mode,
 * so a hit runs no preprocessor. What it serves is what nvcc wrote: the
 * output, the depfile the build asked for (its target renamed), nvcc's
 * stdout and stderr.
 *
 * Invariants:
 *  - the device code of an output is checked before it is stored and
 *    before it is served: every SASS and PTX target the command asked for
 *    is there and every image is code for its label; an output that fails
 *    is never stored (a hit that fails is dropped and compiled again);
 *  - an output is replaced by rename of a complete temporary, so a build
 *    never sees half an object;
 *  - a failing compile is never cached: nvcc's exit code and diagnostics
 *    go back as they were;
 *  - the library prints nothing: what to replay comes back in the result.
 *
 * Internal and unstable.
 */
#ifndef CBC_LAUNCH_H
#define CBC_LAUNCH_H

#include "common.h"

enum cbc_launch_outcome {
    CBC_LAUNCH_HIT = 0,
    CBC_LAUNCH_MISS = 1,        /* compiled, and stored */
    CBC_LAUNCH_NOT_STORED = 2,  /* compiled, but not stored (why says) */
    CBC_LAUNCH_FAILED = 3,      /* nvcc failed: its code and diagnostics */
    CBC_LAUNCH_UNCACHEABLE = 4  /* nothing was run: run the command as it is */
};

struct cbc_launch_opts {
    const char *nvcc;  /* "nvcc" (searched on PATH) or a path */
    char *const *argv; /* nvcc's arguments */
    size_t argc;
    const char *cache_dir; /* NULL: cbc_store_default_root */
    bool no_cache;         /* CUBINCACHE_DISABLE: everything is uncacheable */
    bool explain;          /* fill the result's `explain`: hit, or the input that made it miss */
    cbc_msg_fn msg;
    void *msg_ctx;
};

struct cbc_launch_result {
    enum cbc_launch_outcome outcome;
    int exit_code;    /* nvcc's, or 0 for a hit */
    char *out, *errs; /* nvcc's stdout and stderr to replay (malloc'd, may be NULL) */
    size_t out_len, errs_len;
    char why[320];    /* UNCACHEABLE and NOT_STORED: the reason */
    size_t archs, archs_cached; /* a split compile: virtual archs, and those served */
    char explain[640]; /* with opts.explain, HIT and the compiles: "hit", "remote hit (...)",
                          or why it missed ("dependency '/w/h.cuh' changed") */
};

/* Runs or serves the command. CBC_OK whatever nvcc did (its exit code is
 * in the result); an error only when the launcher itself cannot work
 * (CBC_E_NVCC: nvcc not found; CBC_E_IO: the output cannot be written;
 * CBC_E_NOMEM). An UNCACHEABLE outcome is counted in the cache's
 * statistics; the caller then runs the command itself. */
enum cbc_status cbc_launch_run(const struct cbc_launch_opts *o, struct cbc_launch_result *r,
                               struct cbc_err *err);
void cbc_launch_result_release(struct cbc_launch_result *r);

/* The nvcc a launcher command names: a path, or a name searched on PATH
 * ("nvcc" also at /usr/local/cuda/bin/nvcc). $NVCC is not read: a
 * Makefile's NVCC is often the launcher itself. CBC_E_NVCC when none. */
char *cbc_launch_nvcc_path(const char *nvcc, struct cbc_err *err);

#endif
