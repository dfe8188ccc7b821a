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
 *   bundle   a bundle `cubincache embed` compiled in.
 * A program runs on a GPU only if every module with kernels does; nvcc's
 * kernel-less device-link stubs are left out.
 *
 * Internal and unstable.
 */
#ifndef CBC_PROGRAM_H
#define CBC_PROGRAM_H

#include "common.h"
#include <cubincache/binfmt.h>
#include <cubincache/select.h>

enum cbc_mod_kind {
    CBC_MOD_IMAGE = 0,
    CBC_MOD_UNIT = 1,
    CBC_MOD_LINKED = 2,
    CBC_MOD_RDC = 3,
    CBC_MOD_BUNDLE = 4
};

struct cbc_pmod {
    enum cbc_mod_kind kind;
    size_t file;               /* index into the program's files */
    char label[200];           /* "fatbin container 2 of .nv_fatbin", "embedded bundle 'k'" */
    struct cbc_image *img;     /* what it loads directly */
    size_t n_img;
    struct cbc_image *rel;     /* linked, rdc: the relocatable code of its units */
    size_t *rel_unit;          /* the unit of each */
    size_t n_rel, n_units;
    bool kernels;              /* it has kernels (a kernel-less stub does not count) */
};

struct cbc_pfile {
    char *path;         /* as found on disk; a static library member: "lib.a(member.o)" */
    char *needed_as;    /* the DT_NEEDED name it was found for; NULL for the program itself */
    char *needed_by;    /* the path of the file that needs it */
    bool missing;       /* not found, unreadable or not a loadable ELF: `problem` says which */
    char *problem;
};

struct cbc_program {
    enum cbc_file_type type; /* of the program's own file */
    struct cbc_pfile *files;
    size_t n_files;
    struct cbc_pmod *mods;
    size_t n_mods;
    /* the file data the images point into, kept mapped */
    struct cbc_map *maps;
    size_t n_maps;
};

struct cbc_program_opts {
    const char *const *lib_dirs; /* searched first for needed libraries (check -L) */
    size_t n_lib_dirs;
    bool no_libs;                /* judge the file alone */
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

/* How module m loads on a GPU of compute capability q->cc. */
void cbc_pmod_judge(const struct cbc_program *p, const struct cbc_pmod *m,
                    const struct cbc_select_query *q, struct cbc_mod_verdict *v);
/* Whether a verdict means the module's kernels can run there. */
bool cbc_load_runs(enum cbc_load_how how);
/* "sass-exact", "ptx-jit", "link-at-load", ... for --json. */
const char *cbc_load_how_name(enum cbc_load_how how);
/* Whether the module counts for the program's verdict: it has kernels, or
 * no module of the program has any (then every module counts). */
bool cbc_pmod_counts(const struct cbc_program *p, const struct cbc_pmod *m);
/* "k.o", "libfoo.so needed by prog": the file a module belongs to. */
const char *cbc_pmod_file(const struct cbc_program *p, const struct cbc_pmod *m);

#endif
