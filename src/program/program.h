/* program.h: what a program loads on a GPU, as the CUDA runtime and driver
 * measurably do it (docs/formats.md, "What loads"; tests/corpus holds the
 * programs and what an H200 did with each). `check --arch`, `select` and
 * `inspect` all judge binaries through this one model.
 *
 * A program is its file and, for a host ELF, the shared libraries it needs
 * (DT_NEEDED, resolved as the dynamic loader does: RPATH, LD_LIBRARY_PATH,
 * RUNPATH with $ORIGIN, ld.so.conf, the system directories). Its code
 * comes in modules, each loaded on its own:
 *   image    a cubin, PTX or fatbin file given as such;
 *   unit     one translation unit's fatbin in .nv_fatbin (a non-rdc build);
 *   linked   a device-linked image in .nv_fatbin together with the
 *            relocatable code it was linked from (__nv_relfatbin, one
 *            container per unit, the device runtime's included): when no
 *            linked image fits, the CUDA runtime links that code for the
 *            GPU when the program loads, if every unit has it for one arch;
 *   rdc      -rdc code not yet device-linked (an object, a static library
 *            member): it runs once a device link is made for an arch every
 *            unit has;
 *   bundle   a bundle `cubincache embed` compiled in;
 *   self     a fatbin container outside the CUDA sections (cuFFT's .ldata,
 *            cuBLASLt's .cask_resource): the file loads it itself through
 *            the driver, choosing which; found by scanning its data
 *            sections, and only when a verdict needs them.
 * The CUDA runtime registers every module but the self-loaded ones, and
 * loads one lazily: a kernel fails to launch ("no kernel image") only when
 * its own module has nothing for the GPU.
 *
 * Built lazily, so a 500 MB library costs what its verdict needs: opening
 * reads section tables and fatbin entry headers only; kernels and image
 * bytes are read when a verdict needs them (cbc_program_judge), one image
 * at a time into a buffer each thread reuses, on every CPU.
 *
 * Verdicts, per file and GPU, by one of three rules (docs/formats.md,
 * section 7; the measurements behind them are in BENCHMARKS.md):
 *   per-module  every registered module with kernels must have code for
 *               the GPU: all do, RUNS; none does (and nothing the file
 *               loads itself has), WILL-NOT-RUN; else PARTIAL, naming the
 *               modules and kernels that cannot launch. For the files
 *               named on the command line: a stale translation unit is
 *               exactly one such module.
 *   dispatch    a library that picks its kernels by GPU at run time: it
 *               runs when at least one module with kernels (registered, or
 *               self-loaded) has code for the GPU and no module that the
 *               driver would pick for it is broken there (an image whose
 *               ELF is not what its header claims, one that does not
 *               decompress, PTX newer than the driver); then modules for
 *               other GPUs are PARTIAL, accepted. The default for the
 *               libraries DT_NEEDED pulls in.
 *   kernels     only the kernels a program is known to launch (--kernels):
 *               each must be in a module with code for the GPU.
 *
 * Internal and unstable.
 */
#ifndef CBC_PROGRAM_H
#define CBC_PROGRAM_H

#include "common.h"
#include <cubincache/binfmt.h>
#include <cubincache/select.h>

struct cbc_inflate; /* elfextra.h */

enum cbc_mod_kind {
    CBC_MOD_IMAGE = 0,
    CBC_MOD_UNIT = 1,
    CBC_MOD_LINKED = 2,
    CBC_MOD_RDC = 3,
    CBC_MOD_BUNDLE = 4,
    CBC_MOD_SELF = 5
};

struct cbc_pmod {
    enum cbc_mod_kind kind;
    size_t file;               /* index into the program's files */
    char label[200];           /* "fatbin container 2 of .nv_fatbin", "embedded bundle 'k'" */
    bool raw;                  /* img are byte ranges (bundle, cubin/PTX file), not fatbin entries */
    struct cbc_image *img;     /* what it loads directly */
    size_t n_img;
    struct cbc_image *rel;     /* linked, rdc: the relocatable code of its units */
    size_t *rel_unit;          /* the unit of each */
    size_t n_rel, n_units;
    /* Kernels: 1 it has some, 0 none (a kernel-less device-link stub), -1
     * not known yet (a cubin, PTX file or bundle is 1 from the start).
     * names/n_names once names_read; kproblem says why they could not be
     * read (the module then counts as having kernels). */
    int8_t kernels;
    bool names_read;
    char **names;
    size_t n_names;
    char *kproblem;
};
void cbc_pmod_release(struct cbc_pmod *m);

struct cbc_pfile {
    char *path;         /* as found on disk; a static library member: "lib.a(member.o)" */
    char *needed_as;    /* the DT_NEEDED name it was found for; NULL for a file named */
    char *needed_by;    /* the path of the file that needs it */
    bool missing;       /* not found, unreadable or not a loadable ELF: `problem` says which */
    char *problem;
    const uint8_t *data; /* its bytes, inside a map the program keeps */
    size_t len;
    bool host;          /* a host ELF (its data sections may hold self-loaded fatbins) */
    /* self-loaded containers, once looked for (scanned) */
    bool scanned;
    struct cbc_pmod *self;
    size_t n_self;
};

struct cbc_program {
    enum cbc_file_type type; /* of the program's own file */
    struct cbc_pfile *files;
    size_t n_files;
    struct cbc_pmod *mods;   /* the registered modules of every file */
    size_t n_mods;
    /* the file data the images point into, kept mapped */
    struct cbc_map *maps;
    size_t n_maps;
    unsigned threads;        /* workers for reading images (cbc_program_open sets it) */
};

struct cbc_program_opts {
    const char *const *lib_dirs; /* searched first for needed libraries (check -L) */
    size_t n_lib_dirs;
    bool no_libs;                /* judge the file alone */
    unsigned threads;            /* 0: one per online CPU (at most 8) */
};

/* Builds the model of the program at `path`. Malformed input is an error
 * (CBC_E_FORMAT naming file and offset); a needed library that cannot be
 * found or read is a file with `missing` set, never skipped in silence. */
enum cbc_status cbc_program_open(const char *path, const struct cbc_program_opts *o,
                                 struct cbc_program *p, struct cbc_err *err);
void cbc_program_release(struct cbc_program *p);

enum cbc_load_how {
    CBC_LOAD_NONE = 0,       /* nothing in the module runs there */
    CBC_LOAD_SASS = 1,       /* a cubin for exactly this GPU */
    CBC_LOAD_SASS_COMPAT = 2, /* a cubin of the same major, lower minor */
    CBC_LOAD_PTX_JIT = 3,    /* PTX, compiled by the driver at load */
    CBC_LOAD_LINK = 4,       /* relocatable code linked by the CUDA runtime at load */
    CBC_LOAD_AFTER_DLINK = 5, /* rdc code that runs once device-linked for that arch */
    CBC_LOAD_NEEDS_DLINK = 6 /* a relocatable cubin no driver loads alone */
};

struct cbc_mod_verdict {
    enum cbc_load_how how;
    struct cbc_target target; /* what loads (or is linked) */
    long image;               /* index into img, or -1 */
    char reason[700];
};

/* How module m loads on a GPU of compute capability q->cc, from the
 * headers alone. */
void cbc_pmod_judge(const struct cbc_program *p, const struct cbc_pmod *m,
                    const struct cbc_select_query *q, struct cbc_mod_verdict *v);
/* Whether a verdict means the module's kernels can run there. */
bool cbc_load_runs(enum cbc_load_how how);
/* "sass-exact", "ptx-jit", "link-at-load", ... for --json. */
const char *cbc_load_how_name(enum cbc_load_how how);
/* "k.o", "libfoo.so needed by prog": the file a module belongs to. */
const char *cbc_pmod_file(const struct cbc_program *p, const struct cbc_pmod *m);

/* ---- reading images and kernels --------------------------------------------- */

/* The bytes of image `img` of module m as the driver sees them: in the
 * mapped file when stored raw, else decompressed into z->buf (valid until
 * z is used again). With `prefix` nonzero, at least its first `prefix`
 * bytes only (or all when shorter). */
enum cbc_status cbc_pmod_image(const struct cbc_program *p, const struct cbc_pmod *m,
                               const struct cbc_image *img, size_t prefix, struct cbc_inflate *z,
                               const uint8_t **out, size_t *len, struct cbc_err *err);

/* Drops the pages of image img of m from the process (cbc_map_forget):
 * called once its bytes are used. */
void cbc_pmod_forget(const struct cbc_program *p, const struct cbc_pmod *m,
                     const struct cbc_image *img);
/* Reads the kernels of the given modules (those not read yet) on the
 * program's workers: kernels, names, kproblem. */
void cbc_program_read_kernels(const struct cbc_program *p, struct cbc_pmod **mods, size_t n);
/* The image a fatbin entry is, as the model lists it. */
struct cbc_image cbc_program_image_of(const struct cbc_fatbin_entry *e, const char *section,
                                      size_t container);

/* Runs fn(ctx, i, z) for i in [0, n) on `threads` workers (0: one per
 * online CPU, at most 8; the calling thread is one of them), each with its
 * own inflate state, items taken in order; fn must touch only what item i
 * owns. cbc_program_parallel uses the program's count. */
void cbc_parallel(unsigned threads, size_t n, void (*fn)(void *ctx, size_t i, struct cbc_inflate *z),
                  void *ctx);
void cbc_program_parallel(const struct cbc_program *p, size_t n,
                          void (*fn)(void *ctx, size_t i, struct cbc_inflate *z), void *ctx);
unsigned cbc_default_threads(void);

/* ---- verdicts by rule --------------------------------------------------------- */

enum cbc_judge_rule {
    CBC_JUDGE_PER_MODULE = 0,
    CBC_JUDGE_DISPATCH = 1,
    CBC_JUDGE_KERNELS = 2
};
const char *cbc_judge_rule_name(enum cbc_judge_rule r); /* "per-module", "dispatch", "kernels" */

enum cbc_fverdict {
    CBC_FV_NO_CODE = 0,    /* no module with kernels */
    CBC_FV_RUNS = 1,       /* every module that counts has code there */
    CBC_FV_PARTIAL = 2,    /* some do, some cannot launch */
    CBC_FV_WONT = 3,       /* nothing that counts runs there, or a broken module it would pick */
    CBC_FV_NEEDS_DLINK = 4 /* a relocatable cubin given alone */
};

struct cbc_judge_opts {
    struct cbc_select_query q;
    enum cbc_judge_rule named_rule; /* the files named (per-module, or dispatch) */
    enum cbc_judge_rule lib_rule;   /* the libraries DT_NEEDED pulls in */
    const char *const *strict_libs; /* libraries judged per module anyway (DT_NEEDED name or base) */
    size_t n_strict_libs;
    const char *const *kernels;     /* --kernels: only these (mangled or demangled); NULL: all */
    size_t n_kernels;
    /* Demangles a C++ name (malloc'd, or NULL); for matching --kernels. */
    char *(*demangle)(const char *mangled);
};

/* One file's verdict on one GPU. */
struct cbc_fjudge {
    enum cbc_judge_rule rule;
    enum cbc_fverdict verdict;
    bool problem;              /* counts against the program (an accepted PARTIAL does not) */
    enum cbc_load_how how;     /* how its modules load, the weakest of them (JIT over SASS) */
    size_t n_mods;             /* registered modules with kernels that count */
    size_t n_load;             /* of those, the ones that load */
    size_t n_kernels_cannot;   /* kernels of the modules that cannot launch */
    size_t *cannot;            /* those modules (indices into mods) */
    size_t n_cannot;
    long broken;               /* dispatch: a module the driver would pick that fails, or -1 */
    size_t n_self, n_self_load; /* self-loaded containers, when scanned */
    char reason[900];
};

/* A whole program's verdict on one GPU. */
struct cbc_pjudge {
    struct cbc_select_query q;
    struct cbc_mod_verdict *mv; /* per registered module */
    struct cbc_fjudge *fj;      /* per file */
    char **not_found;           /* --kernels names in no module */
    size_t n_not_found;
    bool matched_kernels;       /* --kernels: kernels were matched */
};

/* Judges every file of p for one GPU. CBC_E_NOMEM only: an image that
 * cannot be read is part of the verdict (kproblem, broken). */
enum cbc_status cbc_program_judge(struct cbc_program *p, const struct cbc_judge_opts *o,
                                  struct cbc_pjudge *out, struct cbc_err *err);
void cbc_pjudge_release(const struct cbc_program *p, struct cbc_pjudge *j);
/* Which module of a kernels-rule file defines listed kernel names: the
 * names of module m that --kernels asked for (pointers into m->names). */
size_t cbc_pmod_listed(const struct cbc_pmod *m, const struct cbc_judge_opts *o,
                       const char **out, size_t max);

/* ---- GPUs ------------------------------------------------------------------------ */

/* Every compute capability a CUDA GPU has had (3.0 Kepler to 12.1 GB10),
 * independent of what this machine's nvcc builds: 10*major+minor. */
extern const unsigned cbc_gpu_ccs[];
extern const size_t cbc_gpu_n_ccs;
/* Parses a list of GPUs, "9.0", "90", "sm_90", "8.6,9.0 12.0": tokens as
 * for --arch, each naming a real compute capability; "sm_90a"/"90a" is the
 * one GPU 9.0, "100f" the family 10.0 and 10.3 (every CC of that major from
 * its minor). Sorted, without duplicates, at most `max`. CBC_E_USAGE naming
 * the token and listing the known CCs. */
enum cbc_status cbc_gpu_list_parse(const char *spec, unsigned *out, size_t max, size_t *n,
                                   struct cbc_err *err);

#endif
