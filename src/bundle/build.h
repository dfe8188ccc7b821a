/* build.h: one source, many SM targets, one bundle: the engine behind
 * `cubincache build`.
 *
 * For each target: direct key -> dependency record -> result key -> store
 * entry, verified; on a miss, nvcc runs (misses in parallel) and its output
 * is verified to be code for the target before it is stored. Then the
 * bundle is written: DIR/NAME.<target>.cubin|ptx, DIR/NAME.manifest.json and
 * optionally a depfile, each only when its bytes change, the manifest last.
 *
 * With several sources (or -rdc=true among the flags) every source is
 * compiled for every target with -rdc=true, each such unit cached as a
 * one-source compile is, and the units of a target are device-linked
 * (nvcc -dlink -cubin, the device runtime included) into its image, which
 * is cached under a key of every source and dependency.
 *
 * Invariants: a failed build (compile error, mislabeled output, bad input)
 * writes nothing into DIR and stores nothing bad; outputs named by the
 * previous manifest that the new one drops are removed; the engine reports
 * through the msg callback and never prints.
 *
 * Internal and unstable.
 */
#ifndef CBC_BUILD_H
#define CBC_BUILD_H

#include "common.h"

struct cbc_build_opts {
    const char *source;         /* the first (or only) source */
    const char *const *sources; /* n_sources > 1: every source, source first; they are compiled
                                   with -rdc=true and device-linked into each target (as one
                                   source is when the flags hold -rdc=true) */
    size_t n_sources;           /* 0: just `source` */
    const char *arch;           /* NULL: "auto" */
    const char *out_dir;        /* NULL: "." */
    const char *name;           /* NULL: the source's stem */
    bool ptx;                   /* also emit PTX of the highest arch */
    const char *depfile;        /* NULL: none */
    const char *depfile_target; /* NULL: the manifest path as DIR/NAME.manifest.json */
    const char *nvcc;           /* NULL: $NVCC, PATH, /usr/local/cuda/bin/nvcc */
    const char *cache_dir;      /* NULL: cbc_store_default_root */
    const char *remote;         /* NULL: $CUBINCACHE_REMOTE or the cache's config */
    int jobs;                   /* <= 0: the number of CPUs */
    bool no_cache;              /* CUBINCACHE_DISABLE=1 */
    char *const *flags;         /* after "--" */
    size_t n_flags;
    void (*msg)(void *ctx, enum cbc_msg_kind kind, const char *text);
    void *msg_ctx;
    bool explain; /* deliver CBC_MSG_EXPLAIN; without it their work is skipped */
    bool progress; /* deliver CBC_MSG_PROGRESS at each compile's start and end */
};

struct cbc_build_result {
    size_t n_targets;
    size_t hits, misses, dropped; /* per target */
    size_t written;               /* image files whose bytes changed */
    bool manifest_changed;
    char *manifest_path;          /* malloc'd */
};

/* CBC_E_USAGE (bad options or flags), CBC_E_NOT_FOUND (source), CBC_E_ARCH,
 * CBC_E_NVCC (nvcc missing or broken), CBC_E_COMPILE (nvcc failed; its
 * diagnostics went to msg), CBC_E_VERIFY (nvcc produced code for another
 * target), CBC_E_IO (the out dir cannot be written). */
enum cbc_status cbc_build_run(const struct cbc_build_opts *o, struct cbc_build_result *res,
                              struct cbc_err *err);
void cbc_build_result_release(struct cbc_build_result *res);

struct cbc_toolchain;
struct cbc_arch_choice;
/* The targets `spec` (NULL: "auto") names for this toolchain and the
 * environment of now (CUDA_COMPUTE_CAP, the GPUs): how build and stamp
 * both resolve --arch. */
enum cbc_status cbc_build_arch(const struct cbc_toolchain *tc, const char *spec,
                               struct cbc_arch_choice *out, struct cbc_err *err);

/* ---- the arch stamp (stamp.c) ---------------------------------------------- */

struct cbc_stamp_opts {
    const char *output;      /* the stamp file */
    const char *arch;        /* NULL: "auto", resolved as cbc_build_run does */
    const char *nvcc;        /* NULL: $NVCC, PATH, /usr/local/cuda/bin/nvcc */
    const char *cache_dir;   /* where the toolchain's identity is cached */
    bool no_cache;
    char *const *flags;      /* nvcc flags the kernels share (for -ccbin) */
    size_t n_flags;
};

/* Writes the stamp: the targets `arch` resolves to now, nvcc's and the host
 * compiler's identity and the environment nvcc reads; the file is left
 * alone (mtime too) when those have not changed. *changed says which;
 * with changed NULL only the spec is resolved and nothing is written.
 * Errors as cbc_build_run's for the arch and nvcc; nothing written then. */
enum cbc_status cbc_build_stamp(const struct cbc_stamp_opts *o, bool *changed,
                                struct cbc_err *err);

#endif
