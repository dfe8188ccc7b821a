/* cmd_build.c: `cubincache build`, the per-target compile driver.
 *
 * Parses the command line (options before "--", nvcc's after) and hands
 * everything to the build engine (src/bundle); this file only prints,
 * including the one updating status line of a cold build on a terminal.
 */
#include "build.h"
#include "cmds.h"
#include "opts.h"
#include "log.h"
#include "manifest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct printer {
    struct tool *t;
    struct tool_log log; /* log_file and debug: the --explain lines, hit or miss and why */
    bool explain;
    bool status;     /* a status line is on the terminal now */
    bool erase;      /* the terminal takes ESC [ K (not NO_COLOR, not TERM=dumb) */
    size_t last_len; /* without erase: the status line's length, to pad over */
};

/* The status line goes away before anything else is printed. */
static void clear_status(struct printer *p)
{
    if (!p->status)
        return;
    if (p->erase)
        fputs("\r\033[K", stderr);
    else
        fprintf(stderr, "\r%*s\r", (int)p->last_len, "");
    p->status = false;
}

/* The variables outside the key's own list that change what build makes:
 * the targets (CUDA_COMPUTE_CAP), which nvcc and host compiler run. (No
 * variable names the driver 'auto' asks: the installed cudadrv opens
 * libcuda.so.1 only.) */
static const char *const cargo_env[] = {"CUDA_COMPUTE_CAP", "NVCC", "PATH"};

static bool system_dir(const char *d)
{
    static const char *const sys[] = {"/usr", "/etc", "/lib", "/lib32", "/lib64", "/bin",
                                      "/sbin", "/opt/nvidia"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(sys); i++) {
        size_t n = strlen(sys[i]);
        if (!strncmp(d, sys[i], n) && (d[n] == '/' || d[n] == '\0'))
            return true;
    }
    return !strcmp(d, "/");
}

/* cargo's directives for what the bundle was made of, all or nothing: a
 * path cargo would read as more than one line is refused, never printed. */
static int emit_cargo(struct tool *t, const char *manifest)
{
    struct cbc_manifest m;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_manifest_load(manifest, &m, &err);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    /* composed whole first, printed only when every path is one line */
    struct cbc_buf out = {0};
    const char *files[3] = {m.source, m.nvcc, m.host_cc};
    bool one_line = true;
    for (size_t i = 0; one_line && i < m.n_deps + 3; i++) {
        const char *p = i < 3 ? files[i] : m.deps[i - 3].path;
        one_line = !p || !strpbrk(p, "\r\n");
        if (one_line && p && *p)
            cbc_buf_printf(&out, "cargo:rerun-if-changed=%s\n", p);
    }
    /* the directories where the compile looked for a header and found
     * none, so that a new one there reruns the script: cargo rescans a
     * named directory, all of it, at every build, so not the system's or
     * the toolkit's, and never one that holds the bundle (the crate's root
     * holds target/, which every build writes into) */
    char *toolkit = m.nvcc ? cbc_path_dir(m.nvcc) : NULL, *top = toolkit ? cbc_path_dir(toolkit)
                                                                         : NULL;
    char *here = cbc_path_abs(manifest), *bundle = here ? cbc_path_dir(here) : NULL;
    for (size_t i = 0; one_line && i < m.n_lookups; i++) {
        const char *d = m.lookups[i].dir;
        size_t dl = strlen(d);
        bool holds_bundle = bundle && !strncmp(bundle, d, dl) &&
                            (bundle[dl] == '/' || bundle[dl] == '\0' || dl == 1);
        if (system_dir(d) || holds_bundle ||
            (top && strcmp(top, "/") && !strncmp(d, top, strlen(top))))
            continue;
        one_line = !strpbrk(d, "\r\n");
        if (one_line)
            cbc_buf_printf(&out, "cargo:rerun-if-changed=%s\n", d);
    }
    free(toolkit);
    free(top);
    free(here);
    free(bundle);
    for (size_t i = 0; i < CBC_ARRAY_LEN(cargo_env); i++)
        cbc_buf_printf(&out, "cargo:rerun-if-env-changed=%s\n", cargo_env[i]);
    for (size_t i = 0; i < m.env.n; i++)
        cbc_buf_printf(&out, "cargo:rerun-if-env-changed=%s\n", m.env.name[i]);
    cbc_manifest_release(&m);
    int rc = EXIT_OK;
    if (!one_line) {
        tool_errorf(t, "'%s' records a path with a line break; cargo would read it as "
                    "directives, so none are printed", manifest);
        rc = EXIT_USAGE;
    } else if (out.oom) {
        tool_errorf(t, "out of memory");
        rc = EXIT_INTERNAL;
    } else if (fwrite(out.p, 1, out.len, stdout) != out.len || fflush(stdout) != 0) {
        tool_errorf(t, "cannot write to standard output");
        rc = EXIT_ENV;
    }
    cbc_buf_release(&out);
    return rc;
}

static void on_msg(void *ctx, enum cbc_msg_kind kind, const char *text)
{
    struct printer *p = ctx;
    if (kind == CBC_MSG_PROGRESS) {
        size_t len = strlen(text);
        fputc('\r', stderr);
        tool_fputs_escaped(text, stderr);
        if (p->erase)
            fputs("\033[K", stderr);
        else
            fprintf(stderr, "%*s", len < p->last_len ? (int)(p->last_len - len) : 0, "");
        fflush(stderr);
        p->last_len = len;
        p->status = true;
        return;
    }
    clear_status(p);
    switch (kind) {
    case CBC_MSG_WARNING: tool_warn(p->t, "%s", text); break;
    case CBC_MSG_NOTE: tool_note(p->t, "%s", text); break;
    case CBC_MSG_EXPLAIN:
        if (p->explain) {
            fprintf(stderr, "%s: explain: ", p->t->prog);
            tool_fputs_escaped(text, stderr);
            fputc('\n', stderr);
        }
        tool_log_line(&p->log, "%s", text);
        break;
    case CBC_MSG_DIAG: fprintf(stderr, "%s\n", text); break; /* nvcc's own words, as it prints them */
    case CBC_MSG_PROGRESS: break;
    }
}

int cmd_build(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache build");
    int split = tool_split_dashdash(argc, argv);
    struct cbc_build_opts o = {0};
    struct printer pr = {.t = &t};
    o.msg = on_msg;
    o.msg_ctx = &pr;
    static const struct tool_choice emit_formats[] = {{"cargo", 1, false}, {NULL, 0, false}};
    int emit = 0;
    const struct tool_opt opts[] = {
        OPT_STR('a', "arch", "SPEC", &o.arch,
                "targets: 86, 8.6, sm_86, compute_86, 90a, 100f, 8.6+PTX,\n"
                "lists, all, all-major, native, auto (default auto)"),
        OPT_STR('o', "out-dir", "DIR", &o.out_dir,
                "where the bundle goes (default .); a DIR spelled NAME.bundle\n"
                "names the bundle and is the depfile's target"),
        OPT_STR('n', "name", "NAME", &o.name,
                "output stem (default: NAME of NAME.bundle, else SOURCE's stem)"),
        OPT_FLAG(0, "ptx", &o.ptx, "also emit PTX of the highest arch, for JIT on newer GPUs"),
        OPT_STR(0, "depfile", "FILE", &o.depfile, "write a Makefile-syntax depfile for ninja"),
        OPT_STR(0, "depfile-target", "T", &o.depfile_target,
                "the output the depfile names (default DIR/NAME.manifest.json,\n"
                "or DIR itself when spelled NAME.bundle)"),
        OPT_STR(0, "nvcc", "PATH", &o.nvcc,
                "nvcc to run (default $NVCC, PATH, /usr/local/cuda/bin/nvcc)"),
        OPT_STR(0, "cache-dir", "DIR", &o.cache_dir,
                "cache (default $CUBINCACHE_DIR, $XDG_CACHE_HOME/cubincache,\n"
                "~/.cache/cubincache); CUBINCACHE_DISABLE=1 turns it off"),
        OPT_STR(0, "remote", "SPEC", &o.remote,
                "a shared cache behind the local one: redis://HOST[:PORT][/DB]\n"
                "[|read-only] ... (default $CUBINCACHE_REMOTE, else 'remote' in\n"
                "the cache's config; 'none' for none)"),
        OPT_INT('j', "jobs", "N", &o.jobs, 1, 1024,
                "parallel nvcc processes on a miss at most (default: one per\n"
                "CPU); under a make or cargo jobserver, each beyond the\n"
                "first takes one of its tokens"),
        OPT_FLAG(0, "explain", &pr.explain, "say per target hit or miss, and which input changed"),
        OPT_ENUM(0, "emit", "cargo", &emit, emit_formats,
                 "after the build (hit or miss), print for a cargo build.rs\n"
                 "rerun-if-changed of every source, dependency and the\n"
                 "toolchain, rerun-if-env-changed of every variable that\n"
                 "changes what is built"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache build [options] SOURCE.cu [MORE.cu...] [-- NVCC_ARGS...]\n"
        "  several sources (or -rdc=true in NVCC_ARGS) are compiled with -rdc and\n"
        "  device-linked per target (device runtime included) into one image each\n",
        opts, NULL};
    int rc = tool_parse(&t, &cmd, split, argv);
    if (rc != TOOL_PARSED)
        return rc;
    o.explain = pr.explain;
    if (optind >= split)
        return tool_usage(&t, "no SOURCE.cu given");
    o.source = argv[optind];
    if (split - optind > 1) {
        o.sources = (const char *const *)argv + optind;
        o.n_sources = (size_t)(split - optind);
    }
    o.flags = split < argc ? argv + split + 1 : NULL;
    o.n_flags = split < argc ? (size_t)(argc - split - 1) : 0;
    const char *dis = getenv("CUBINCACHE_DISABLE");
    o.no_cache = dis && *dis && strcmp(dis, "0") != 0;
    char what[200];
    snprintf(what, sizeof what, "build %s -> %s", o.source, o.out_dir ? o.out_dir : ".");
    tool_log_open(&pr.log, &t, o.cache_dir, what);
    o.explain = o.explain || tool_log_on(&pr.log);

    /* a status line only for a person at a terminal: not under ninja or
     * make (their pipes), not with -q, and plain with NO_COLOR or TERM=dumb */
    const char *term = getenv("TERM"), *nc = getenv("NO_COLOR");
    o.progress = t.verbosity >= 0 && isatty(STDERR_FILENO) && !(term && !strcmp(term, "dumb"));
    pr.erase = !(nc && *nc) && !(term && !strcmp(term, "dumb"));
    struct cbc_build_result res;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_build_run(&o, &res, &err);
    clear_status(&pr);
    if (st != CBC_OK)
        tool_log_line(&pr.log, "failed: %s", err.msg);
    tool_log_close(&pr.log);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        cbc_build_result_release(&res);
        return tool_exit_code(st);
    }
    tool_note(&t, "%zu targets: %zu hit, %zu miss; %zu images rewritten; manifest %s", res.n_targets,
              res.hits, res.misses, res.written, res.manifest_changed ? "rewritten" : "unchanged");
    rc = emit ? emit_cargo(&t, res.manifest_path) : EXIT_OK;
    cbc_build_result_release(&res);
    return rc;
}
