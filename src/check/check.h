/* check.h: the pre-deploy verdicts behind `cubincache check` and `select`.
 *
 * For a bundle (a directory holding NAME.manifest.json files, or one
 * manifest) every entry is judged, first problem wins:
 *   incomplete  a build of the bundle died while publishing (its staging
 *               directory is still marked): the files may mix two builds
 *   missing     the manifest (or --arch) names it and there is no file
 *   mislabeled  the file's own arch (ELF e_flags, PTX .target), or its
 *               name, is not its label
 *   corrupt     unparseable, or its bytes differ from the manifest's hash/size
 *   stale       a build now would key it differently: the source, a
 *               dependency, nvcc, the host compiler or the NVCC_* environment
 *               changed, or the arch environment no longer asks for it
 *   ok
 * and, for a directory, every cubin/PTX file no manifest names is an orphan.
 * Freshness never runs nvcc while the toolchain is unchanged (its identity is
 * cached by stat stamps) and never compiles.
 * For a cubin, fatbin, PTX file, host binary or static library: mislabeled
 * (file name or fatbin entry header disagree with the ELF), corrupt, or
 * needs-dlink (a relocatable cubin); and with --arch, per target GPU, from
 * the program model (src/program: every module of the file and of the
 * shared libraries it needs): runs (SASS), runs-jit (PTX), runs-linked
 * (relocatable code linked at load), partial (some modules cannot launch
 * there: a problem in a file named, accepted in a library judged by the
 * dispatch rule), or will not run; a needed library that cannot be found
 * or read is missing, and so is a kernel of --kernels no module defines.
 * Each such verdict says, file by file, which rule judged it (program.h).
 *
 * Internal and unstable. The library never prints: items carry the text.
 */
#ifndef CBC_CHECK_H
#define CBC_CHECK_H

#include "common.h"
#include "program.h"

enum cbc_verdict {
    CBC_V_OK = 0,
    CBC_V_STALE,
    CBC_V_MISSING,
    CBC_V_MISLABELED,
    CBC_V_CORRUPT,
    CBC_V_ORPHAN,
    CBC_V_RUNS,      /* --arch on a binary: SASS for this GPU */
    CBC_V_JIT,       /* --arch on a binary: PTX JIT */
    CBC_V_WONT_RUN,  /* --arch on a binary: nothing loads */
    CBC_V_INCOMPLETE, /* a build was interrupted while publishing: rerun it */
    CBC_V_LINKED,    /* --arch on a binary: runs through relocatable code linked at load
                        (or, in an object, once device-linked) */
    CBC_V_NEEDS_DLINK, /* a relocatable cubin no driver loads without a device link */
    CBC_V_PARTIAL    /* --arch on a binary: some modules cannot launch there */
};
#define CBC_V_COUNT (CBC_V_PARTIAL + 1)

const char *cbc_verdict_name(enum cbc_verdict v); /* "ok", "stale", "will-not-run", ... */
/* Whether a verdict is a problem by itself (partial depends: item.problem). */
bool cbc_verdict_is_problem(enum cbc_verdict v);

/* A module that cannot launch on the GPU of a verdict. */
struct cbc_check_module {
    char *label;     /* "fatbin container 1 of .nv_fatbin" */
    char *reason;    /* "will not run on compute capability 9.0: has sm_86 and no PTX" */
    char **kernels;  /* every kernel it defines (mangled), or those --kernels named */
    size_t n_kernels;
    char *kproblem;  /* why its kernels could not be read, or NULL */
};

/* One file of a binary (the file named, a library it needs) on one GPU. */
struct cbc_check_file {
    char *path;
    char *needed_by;           /* NULL for the file named */
    const char *rule;          /* "per-module", "dispatch", "kernels" */
    enum cbc_verdict verdict;  /* runs, runs-jit, runs-linked, partial, will-not-run, ok (no GPU code) */
    bool problem;
    size_t modules;            /* modules with kernels that count */
    size_t modules_with_code;  /* of those, the ones with code for the GPU */
    size_t kernels_without_code;
    long self_loaded;          /* fatbins it loads itself, -1 when not looked for */
    long self_loaded_with_code;
    char *reason;
    struct cbc_check_module *cannot; /* the modules that cannot launch there */
    size_t n_cannot;
};

struct cbc_check_item {
    enum cbc_verdict verdict;
    char *container; /* the manifest or binary it belongs to */
    char *file;      /* the image file, or NULL (a missing target, a GPU verdict) */
    char target[24]; /* "sm_90", or "" */
    char *reason;    /* one sentence; for stale, the first change */
    char **changes;  /* stale: every input that changed */
    size_t n_changes;
    bool problem;    /* counts against the exit code (cbc_verdict_is_problem unless partial) */
    /* --arch on a binary: the rule the file named was judged by, and every
     * file of the program with GPU code, the one named first */
    const char *rule;
    struct cbc_check_file *files;
    size_t n_files;
};

struct cbc_check_report {
    struct cbc_check_item *v;
    size_t n, cap;
    size_t notes_n;
    char *notes[16]; /* things not checked and why */
};

struct cbc_check_opts {
    const char *arch;        /* targets that must be present (bundle) or GPUs to judge (binary) */
    bool integrity_only;     /* skip freshness (deploy machines without sources or nvcc) */
    unsigned driver_isa;     /* PTX ISA of the driver to judge JIT against; 0: any */
    bool prefer_binary;
    const char *cache_dir;   /* for the cached toolchain identity; NULL: default */
    const char *const *lib_dirs; /* binaries: searched first for needed libraries */
    size_t n_lib_dirs;
    bool no_libs;            /* binaries: judge the file alone, not its libraries */
    enum cbc_judge_rule named_rule; /* binaries: the files named (--rule; per-module by default) */
    enum cbc_judge_rule lib_rule;   /* binaries: their libraries (--libs; `check` sets dispatch,
                                       a zeroed struct judges them per module, the strict way) */
    const char *const *strict_libs; /* libraries judged per module anyway */
    size_t n_strict_libs;
    const char *const *kernels; /* --kernels: judge only these kernels (mangled or demangled) */
    size_t n_kernels;
    char *(*demangle)(const char *mangled); /* for matching demangled --kernels names */
    unsigned threads;        /* 0: one per CPU */
};

/* Judges a path (bundle directory, manifest, or binary file). CBC_OK even
 * when items are problems; errors only for unreadable input or bad options. */
enum cbc_status cbc_check_path(const char *path, const struct cbc_check_opts *o,
                               struct cbc_check_report *rep, struct cbc_err *err);
void cbc_check_report_release(struct cbc_check_report *rep);

#endif
