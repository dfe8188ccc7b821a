/* nvargs.h: an nvcc command line as the compiler launcher and keys see it: what it
 * makes (an object, a cubin, PTX, a fatbin, a device-linked object), from
 * which input, into which file, with which dependency file, for which GPU
 * code, and whether the launcher can cache it at all.
 *
 * Invariants: parsing never fails; a command line the launcher does not
 * fully understand is marked uncacheable (why says which argument), and
 * an uncacheable command is run as it is, never changed. Options and
 * whether they take a value come from nvcc 13's own --help.
 *
 * Internal and unstable.
 */
#ifndef CBC_NVARGS_H
#define CBC_NVARGS_H

#include "common.h"

#include <cubincache/arch.h>

enum cbc_nv_mode {
    CBC_NV_OTHER = 0,  /* linking, preprocessing, ...: never cached */
    CBC_NV_OBJECT,     /* -c / -dc / -dw */
    CBC_NV_CUBIN,      /* -cubin */
    CBC_NV_PTX,        /* -ptx */
    CBC_NV_FATBIN,     /* -fatbin */
    CBC_NV_DLINK       /* -dlink: a device link of objects */
};

#define CBC_NV_MAX_CODES 64

struct cbc_nv_args {
    char *const *argv; /* without the nvcc program; borrowed */
    size_t argc;
    enum cbc_nv_mode mode;
    bool rdc;                   /* relocatable device code (-rdc=true, -dc) */
    size_t n_inputs;
    long input_idx[64];         /* positional inputs */
    long output_idx;            /* index of -o's value, -1: default name */
    char *output;               /* the output file (malloc'd; the default name when no -o) */
    bool md;                    /* -MD: a depfile beside the compile */
    long mf_idx;                /* index of -MF's value, -1 */
    char *depfile;              /* where nvcc writes the depfile (malloc'd), NULL without -MD */
    const char *mt;             /* -MT: the depfile's target (the last one), NULL: the output */
    const char *ccbin;          /* -ccbin, NULL */
    /* The GPU code asked for, when the command says it plainly: SASS and PTX
     * targets. codes_known false: an arch nvcc resolves itself (native, all,
     * its default) or LTO IR; then completeness is not checked. */
    struct cbc_target codes[CBC_NV_MAX_CODES];
    size_t n_codes;
    bool codes_known;
    bool native;                /* -arch=native: the key must name the GPUs it means now */
    char why[256];              /* why the command is not cacheable; "" when it is */
};

/* Parses argv (the arguments after nvcc itself). Never fails; see `why`. */
void cbc_nv_parse(char *const *argv, size_t argc, struct cbc_nv_args *out);
void cbc_nv_release(struct cbc_nv_args *a);

/* Whether argument i is one the key must not see as it is: the output and
 * depfile names and the depfile's target (they are replayed, not keyed). */
bool cbc_nv_is_output_arg(const struct cbc_nv_args *a, size_t i);

/* Whether nvcc arguments name a path relative to the working directory,
 * so what they mean moves with it: an input not starting with '/', the
 * value of a path option (-I, -isystem, -include, -ccbin, -L, -ldir, and
 * the host compiler's -I, -iquote, -idirafter, -imacros, -B, --sysroot,
 * inside -Xcompiler's values too) that does not, and any "./". Only then
 * is the working directory in a direct key (key.c); an argument it cannot
 * classify counts as relative. `skip(i, ctx)`, when given, leaves out
 * arguments (the output and depfile names). */
bool cbc_nv_names_relative(char *const *argv, size_t argc, bool (*skip)(size_t i, void *ctx),
                           void *ctx);

#endif
