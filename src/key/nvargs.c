/* nvargs.c: the nvcc command line parser of nvargs.h.
 *
 * nvcc options come as "-o x", "-o=x", "--output-file x" or
 * "--output-file=x"; -I, -D, -U, -L, -l and -O also take their value
 * attached ("-Ifoo"). Which options take a value is nvcc 13's --help,
 * below; an option not in either table is a flag for the host compiler
 * (-forward-unknown-to-host-compiler), so what follows it stays a
 * positional argument, and a second input makes the command uncacheable
 * rather than misread.
 */
#include "nvargs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options that take a value: {long, short}. From `nvcc --help` (13.0),
 * plus -MF/-Xcudafe/-Xfatbin, which take one but do not say so there. */
static const char *const with_value[][2] = {
    {"--output-file", "-o"}, {"--pre-include", "-include"}, {"--library", "-l"},
    {"--define-macro", "-D"}, {"--undefine-macro", "-U"}, {"--include-path", "-I"},
    {"--system-include", "-isystem"}, {"--library-path", "-L"},
    {"--output-directory", "-odir"}, {"--compiler-bindir", "-ccbin"},
    {"--archiver-binary", "-arbin"}, {"--cudart", "-cudart"}, {"--cudadevrt", "-cudadevrt"},
    {"--libdevice-directory", "-ldir"}, {"--target-directory", "-target-dir"},
    {"--optimization-info", "-opt-info"}, {"--optimize", "-O"}, {"--Ofast-compile", "-Ofc"},
    {"--dopt", "-dopt"}, {"--ftemplate-backtrace-limit", "-ftemplate-backtrace-limit"},
    {"--ftemplate-depth", "-ftemplate-depth"}, {"--x", "-x"}, {"--std", "-std"},
    {"--machine", "-m"}, {"--compiler-options", "-Xcompiler"}, {"--linker-options", "-Xlinker"},
    {"--archive-options", "-Xarchive"}, {"--ptxas-options", "-Xptxas"},
    {"--nvlink-options", "-Xnvlink"}, {"--cudafe-options", "-Xcudafe"},
    {"--fatbinary-options", "-Xfatbin"},
    {"--static-global-template-stub", "-static-global-template-stub"},
    {"--device-entity-has-hidden-visibility", "-device-entity-has-hidden-visibility"},
    {"--threads", "-t"}, {"--split-compile", "-split-compile"},
    {"--split-compile-extended", "-split-compile-extended"},
    {"--fdevice-time-trace", "-fdevice-time-trace"}, {"--keep-dir", "-keep-dir"},
    {"--time", "-time"}, {"--run-args", "-run-args"}, {"--input-drive-prefix", "-idp"},
    {"--dependency-drive-prefix", "-ddp"}, {"--drive-prefix", "-dp"},
    {"--dependency-target-name", "-MT"}, {"--dependency-output", "-MF"},
    {"--gpu-architecture", "-arch"}, {"--gpu-code", "-code"}, {"--generate-code", "-gencode"},
    {"--relocatable-device-code", "-rdc"}, {"--entries", "-e"},
    {"--maxrregcount", "-maxrregcount"}, {"--ftz", "-ftz"}, {"--prec-div", "-prec-div"},
    {"--prec-sqrt", "-prec-sqrt"}, {"--fmad", "-fmad"}, {"--default-stream", "-default-stream"},
    {"--Werror", "-Werror"}, {"--diag-error", "-diag-error"},
    {"--diag-suppress", "-diag-suppress"}, {"--diag-warn", "-diag-warn"},
    {"--host-linker-script", "-hls"}, {"--brief-diagnostics", "-brief-diag"},
    {"--jump-table-density", "-jtd"}, {"--device-stack-protector", "-device-stack-protector"},
    {"--frandom-seed", "-frandom-seed"}, {"--sanitize", "-sanitize"},
    {"--options-file", "-optf"}, {"--compress-mode", "-compress-mode"},
    {"--qpp-config", "-qpp-config"},
};

/* Options that stop the launcher: they run something, print instead of
 * compile, write files it does not know of, or read options from a file. */
static const char *const never_cached[][2] = {
    {"--preprocess", "-E"}, {"--generate-dependencies", "-M"},
    {"--generate-nonsystem-dependencies", "-MM"},
    {"--generate-nonsystem-dependencies-with-compile", "-MMD"},
    {"--run", "-run"}, {"--dryrun", "-dryrun"}, {"--verbose", "-v"}, {"--keep", "-keep"},
    {"--save-temps", "-save-temps"}, {"--keep-dir", "-keep-dir"},
    {"--output-directory", "-odir"}, {"--options-file", "-optf"}, {"--time", "-time"},
    {"--fdevice-time-trace", "-fdevice-time-trace"}, {"--link", "-link"}, {"--lib", "-lib"},
    {"--list-gpu-code", "-code-ls"}, {"--list-gpu-arch", "-arch-ls"}, {"--help", "-h"},
    {"--version", "-V"}, {"--cuda", "-cuda"}, {"--optix-ir", "-optix-ir"},
    {"--ltoir", "-ltoir"}, {"--clean-targets", "-clean"}, {"--fdevice-syntax-only",
    "-fdevice-syntax-only"}, {"--sanitize", "-sanitize"}, {"--jobserver", "-jobserver"},
};

/* The option an argument names: its long name, and its value when
 * attached with '=' (or to -I/-D/-U/-L/-l/-O). */
struct opt {
    const char *name; /* the long name, or the argument itself when unknown */
    bool takes_value;
    const char *attached; /* the value after '=' or attached, else NULL */
};

static bool name_is(const char *arg, size_t len, const char *name)
{
    return strlen(name) == len && strncmp(arg, name, len) == 0;
}

static struct opt classify(const char *arg)
{
    struct opt o = {arg, false, NULL};
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t i = 0; i < CBC_ARRAY_LEN(with_value); i++) {
        if (name_is(arg, len, with_value[i][0]) || name_is(arg, len, with_value[i][1])) {
            o.name = with_value[i][0];
            o.takes_value = true;
            o.attached = eq ? eq + 1 : NULL;
            return o;
        }
    }
    static const char *const attachable[][2] = {{"-I", "--include-path"},
                                                {"-D", "--define-macro"},
                                                {"-U", "--undefine-macro"},
                                                {"-L", "--library-path"},
                                                {"-l", "--library"},
                                                {"-O", "--optimize"}};
    for (size_t i = 0; i < CBC_ARRAY_LEN(attachable); i++)
        if (strncmp(arg, attachable[i][0], 2) == 0 && arg[2]) {
            o.name = attachable[i][1];
            o.takes_value = true;
            o.attached = arg + 2;
            return o;
        }
    return o;
}

static bool is_flag(const char *arg, const char *lng, const char *shrt)
{
    return !strcmp(arg, lng) || !strcmp(arg, shrt);
}

static bool never(const char *arg, const char **which)
{
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    for (size_t i = 0; i < CBC_ARRAY_LEN(never_cached); i++)
        if (name_is(arg, len, never_cached[i][0]) || name_is(arg, len, never_cached[i][1])) {
            *which = never_cached[i][0];
            return true;
        }
    return false;
}

/* ---- the GPU code asked for ------------------------------------------------ */

static void add_code(struct cbc_nv_args *a, const char *name)
{
    struct cbc_target t;
    char buf[32];
    size_t n = strcspn(name, ",]\"' ");
    if (n == 0 || n >= sizeof buf) {
        a->codes_known = false;
        return;
    }
    memcpy(buf, name, n);
    buf[n] = '\0';
    if (!cbc_target_parse(buf, &t)) {
        a->codes_known = false; /* lto_XY, native, all, all-major, or unknown */
        return;
    }
    for (size_t i = 0; i < a->n_codes; i++)
        if (cbc_target_eq(&a->codes[i], &t))
            return;
    if (a->n_codes < CBC_NV_MAX_CODES)
        a->codes[a->n_codes++] = t;
}

/* "sm_86,compute_86", "[sm_86,compute_86]" or "\"sm_86,compute_86\"" */
static void add_code_list(struct cbc_nv_args *a, const char *list)
{
    for (const char *p = list; *p;) {
        while (*p == '[' || *p == '"' || *p == '\'' || *p == ',' || *p == ' ')
            p++;
        if (!*p || *p == ']')
            break;
        add_code(a, p);
        p += strcspn(p, ",]\"'");
    }
}

/* -gencode arch=compute_86,code=[sm_86,compute_86] */
static void add_gencode(struct cbc_nv_args *a, const char *spec)
{
    const char *code = strstr(spec, "code=");
    while (code && code > spec && code[-1] != ',' && code[-1] != ' ' && code[-1] != '"')
        code = strstr(code + 1, "code=");
    if (!code) {
        a->codes_known = false;
        return;
    }
    add_code_list(a, code + 5);
}

/* -arch X [-code Y]: what nvcc builds from them (nvcc --help on
 * --gpu-architecture and --gpu-code). */
static void add_arch(struct cbc_nv_args *a, const char *arch, const char *code)
{
    struct cbc_target t;
    if (code) {
        add_code_list(a, code);
        return;
    }
    if (!arch || !cbc_target_parse(arch, &t)) {
        a->codes_known = false; /* native, all, all-major */
        return;
    }
    add_code(a, arch);
    if (t.kind == CBC_KIND_SASS) { /* -arch=sm_XY: its SASS and the PTX of compute_XY */
        char ptx[32];
        snprintf(ptx, sizeof ptx, "compute_%s", arch + 3);
        add_code(a, ptx);
    }
}

/* ---- the parser ------------------------------------------------------------- */

static void uncacheable(struct cbc_nv_args *a, const char *fmt, const char *what)
{
    if (!a->why[0])
        snprintf(a->why, sizeof a->why, fmt, what);
}

static char *default_output(const char *input, enum cbc_nv_mode mode)
{
    const char *base = cbc_path_base(input);
    const char *dot = strrchr(base, '.');
    size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    const char *ext = mode == CBC_NV_CUBIN    ? ".cubin"
                      : mode == CBC_NV_PTX    ? ".ptx"
                      : mode == CBC_NV_FATBIN ? ".fatbin"
                      : mode == CBC_NV_DLINK  ? "_dlink.o"
                                              : ".o";
    return cbc_asprintf("%.*s%s", (int)stem, base, ext);
}

void cbc_nv_parse(char *const *argv, size_t argc, struct cbc_nv_args *a)
{
    memset(a, 0, sizeof *a);
    a->argv = argv;
    a->argc = argc;
    a->output_idx = a->mf_idx = -1;
    a->codes_known = true;
    const char *arch = NULL, *code = NULL;
    bool gencode = false, any_arch = false;
    int modes = 0;
    for (size_t i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || !arg[1]) {
            if (!strcmp(arg, "-"))
                uncacheable(a, "%s", "the input is standard input ('-'), which cannot be keyed");
            if (a->n_inputs < CBC_ARRAY_LEN(a->input_idx))
                a->input_idx[a->n_inputs] = (long)i;
            a->n_inputs++;
            continue;
        }
        const char *which;
        if (never(arg, &which)) {
            uncacheable(a, "%s runs, prints or writes what the launcher does not cache", which);
            continue;
        }
        struct opt o = classify(arg);
        const char *val = o.attached;
        long val_idx = -1;
        if (o.takes_value && !val) {
            if (i + 1 >= argc) {
                uncacheable(a, "%s has no value", arg);
                continue;
            }
            val = argv[++i];
            val_idx = (long)i;
        }
        if (o.takes_value && !strcmp(o.name, "--output-file")) {
            if (val_idx < 0)
                uncacheable(a, "%s: give the output as a separate argument", arg);
            a->output_idx = val_idx;
        } else if (o.takes_value && !strcmp(o.name, "--dependency-output")) {
            if (val_idx < 0)
                uncacheable(a, "%s: give the depfile as a separate argument", arg);
            a->mf_idx = val_idx;
        } else if (o.takes_value && !strcmp(o.name, "--dependency-target-name")) {
            a->mt = val;
        } else if (o.takes_value && !strcmp(o.name, "--compiler-bindir")) {
            a->ccbin = val;
        } else if (o.takes_value && !strcmp(o.name, "--gpu-architecture")) {
            arch = val;
            any_arch = true;
            a->native = a->native || !strcmp(val, "native");
        } else if (o.takes_value && !strcmp(o.name, "--generate-code")) {
            add_gencode(a, val);
            gencode = any_arch = true;
            a->native = a->native || strstr(val, "native") != NULL;
        } else if (o.takes_value && !strcmp(o.name, "--gpu-code")) {
            code = val;
            a->native = a->native || strstr(val, "native") != NULL;
        } else if (o.takes_value && !strcmp(o.name, "--relocatable-device-code")) {
            a->rdc = !strcmp(val, "true");
        } else if (is_flag(arg, "--compile", "-c")) {
            a->mode = CBC_NV_OBJECT, modes++;
        } else if (is_flag(arg, "--device-c", "-dc") || is_flag(arg, "--device-w", "-dw")) {
            a->mode = CBC_NV_OBJECT, a->rdc = true, modes++;
        } else if (is_flag(arg, "--cubin", "-cubin")) {
            a->mode = CBC_NV_CUBIN, modes++;
        } else if (is_flag(arg, "--ptx", "-ptx")) {
            a->mode = CBC_NV_PTX, modes++;
        } else if (is_flag(arg, "--fatbin", "-fatbin")) {
            a->mode = CBC_NV_FATBIN, modes++;
        } else if (is_flag(arg, "--device-link", "-dlink")) {
            a->mode = CBC_NV_DLINK, modes++;
        } else if (is_flag(arg, "--generate-dependencies-with-compile", "-MD")) {
            a->md = true;
        }
    }
    if (modes > 1)
        uncacheable(a, "%s", "more than one of -c, -dc, -cubin, -ptx, -fatbin, -dlink");
    if (a->mode == CBC_NV_OTHER)
        uncacheable(a, "%s", "no -c, -dc, -cubin, -ptx, -fatbin or -dlink: a link or other step");
    if (a->mode != CBC_NV_DLINK && a->n_inputs != 1)
        uncacheable(a, "%s", a->n_inputs ? "more than one input" : "no input file");
    if (a->mode == CBC_NV_DLINK && (a->n_inputs == 0 || a->n_inputs > CBC_ARRAY_LEN(a->input_idx)))
        uncacheable(a, "%s", "-dlink of no inputs, or of too many");
    if (a->mode == CBC_NV_DLINK && a->md)
        uncacheable(a, "%s", "-MD with -dlink");
    /* the GPU code asked for */
    if (gencode && (arch || code))
        a->codes_known = false; /* nvcc merges the two; do not guess how */
    else if (!gencode)
        add_arch(a, arch, code);
    if (!any_arch)
        a->codes_known = false; /* nvcc's default arch */
    if (a->why[0])
        return;
    const char *in = argv[a->input_idx[0]];
    a->output = a->output_idx >= 0 ? cbc_strdup(argv[a->output_idx])
                                   : default_output(in, a->mode);
    if (a->md) {
        if (a->mf_idx >= 0) {
            a->depfile = cbc_strdup(argv[a->mf_idx]);
        } else if (a->output) {
            /* nvcc's default: the output with its extension replaced by .d */
            const char *base = cbc_path_base(a->output);
            const char *dot = strrchr(base, '.');
            size_t keep = dot && dot != base ? (size_t)(dot - a->output) : strlen(a->output);
            a->depfile = cbc_asprintf("%.*s.d", (int)keep, a->output);
        }
    }
}

void cbc_nv_release(struct cbc_nv_args *a)
{
    free(a->output);
    free(a->depfile);
    memset(a, 0, sizeof *a);
}

bool cbc_nv_is_output_arg(const struct cbc_nv_args *a, size_t i)
{
    if ((long)i == a->output_idx || (long)i == a->mf_idx)
        return true;
    if (i + 1 == (size_t)a->output_idx || i + 1 == (size_t)a->mf_idx)
        return true; /* the option itself */
    const char *arg = a->argv[i];
    if (is_flag(arg, "--dependency-target-name", "-MT"))
        return true;
    if (i > 0 && is_flag(a->argv[i - 1], "--dependency-target-name", "-MT"))
        return true;
    return !strncmp(arg, "-MT=", 4) || !strncmp(arg, "--dependency-target-name=", 25);
}

/* ---- paths relative to the working directory ------------------------------ */

static bool relative(const char *v)
{
    return v && v[0] != '/';
}

/* nvcc's options whose value is a file or a directory. */
static bool path_option(const char *name)
{
    static const char *const paths[] = {"--include-path", "--system-include", "--pre-include",
                                        "--compiler-bindir", "--library-path",
                                        "--libdevice-directory", "--output-directory",
                                        "--keep-dir", "--options-file", "--archiver-binary"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(paths); i++)
        if (!strcmp(name, paths[i]))
            return true;
    return false;
}

/* A host compiler option naming a path, attached ("-Iinc") or not ("-I"
 * with the path in the next piece: *pending). */
static bool host_piece_relative(const char *p, bool *pending)
{
    static const char *const pre[] = {"-I", "-iquote", "-isystem", "-idirafter", "-imacros",
                                      "-include", "-B", "--sysroot=", "-isysroot", "-L"};
    if (*pending) {
        *pending = false;
        return relative(p);
    }
    if (strstr(p, "./"))
        return true;
    for (size_t i = 0; i < CBC_ARRAY_LEN(pre); i++) {
        size_t n = strlen(pre[i]);
        if (!strncmp(p, pre[i], n)) {
            if (!p[n]) {
                *pending = true;
                return false;
            }
            return relative(p + n);
        }
    }
    return false;
}

/* -Xcompiler's value: host options, comma-separated. */
static bool host_relative(const char *v, bool *pending)
{
    char piece[4096];
    for (const char *p = v;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n >= sizeof piece)
            return true; /* unreadable: count it as relative */
        memcpy(piece, p, n);
        piece[n] = '\0';
        if (host_piece_relative(piece, pending))
            return true;
        if (!comma)
            return false;
        p = comma + 1;
    }
}

bool cbc_nv_names_relative(char *const *argv, size_t argc, bool (*skip)(size_t i, void *ctx),
                           void *ctx)
{
    bool host_pending = false; /* a host option split across -Xcompiler values */
    for (size_t i = 0; i < argc; i++) {
        if (skip && skip(i, ctx))
            continue;
        const char *arg = argv[i];
        if (strstr(arg, "./"))
            return true;
        if (arg[0] != '-' || !arg[1]) {
            if (relative(arg))
                return true; /* an input, or a value this does not know */
            continue;
        }
        struct opt o = classify(arg);
        if (!o.takes_value) {
            /* forwarded to the host compiler; a separate value ("-iquote inc")
             * is the next argument, judged as an input is */
            bool next = false;
            if (host_piece_relative(arg, &next))
                return true;
            continue;
        }
        const char *val = o.attached;
        if (!val) {
            if (i + 1 >= argc)
                return false;
            val = argv[++i];
        }
        if (path_option(o.name) && relative(val))
            return true;
        if (!strcmp(o.name, "--compiler-options") && host_relative(val, &host_pending))
            return true;
    }
    return false;
}
