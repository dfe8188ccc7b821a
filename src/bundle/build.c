/* build.c: the build engine (contract in build.h).
 *
 * Phases: (1) options, toolchain identity and arch resolution; (2) per
 * target lookup: direct key, dependency record, result key, verified store
 * entry; (3) nvcc for the misses, at most `jobs` at a time, each writing into
 * a private temporary directory, its output verified to be code for its
 * target; (4) store the new entries and records; (5) write the bundle,
 * images first and the manifest last, each only if its bytes changed.
 *
 * A file that changes while nvcc runs (its mtime or ctime is later than the
 * compile's start) makes that result uncacheable: it is used for this build
 * but not stored, since the hash taken afterwards may not be what nvcc read.
 *
 * Device link (several sources, or -rdc): phases 2-4 run for every
 * (source, target) unit with -rdc=true, each unit cached as a one-source
 * build is; then per target the units' relocatable cubins are linked by
 * `nvcc -dlink -cubin` (the device runtime included when used) into the
 * bundle's image, cached under a key of every source, every dependency of
 * every unit, libcudadevrt and the flags with a link marker, which is what
 * the manifest records, so `check` recomputes it like any other key.
 */
#include "build.h"

#include "archspec.h"
#include "cache.h"
#include "jobslots.h"
#include "key.h"
#include "manifest.h"
#include "nvargs.h"
#include "publish.h"
#include "store.h"

#include <cubincache/binfmt.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

enum tstate_kind { T_PENDING, T_HIT, T_MISS };

struct tstate {
    size_t src; /* index into ctx.sources */
    struct cbc_target t;
    char name[CBC_TARGET_NAME_MAX];
    char *file; /* NAME.<target>.cubin|ptx */
    struct cbc_cache_unit u; /* direct key, record, result key; how its lookup went */
    enum tstate_kind state;
    uint8_t *data;
    size_t len;
    struct cbc_dep *deps;
    size_t n_deps;
    bool deps_borrowed; /* paths owned by ctx.direct's list (a hit), else by deps */
    bool preprocessed;  /* a hit found through its preprocessing (another directory's) */
    struct cbc_manifest_lookup *lookups; /* where it looked and found nothing (owned) */
    size_t n_lookups;
    /* compile */
    pid_t pid;
    char *tmp_out, *tmp_dep, *tmp_log, *tmp_trace;
    char *keep; /* nvcc's -keep-dir for it: cicc's device-only source is asked whether the
                   cubin may name the tree (names_tree); NULL when the user's flags keep */
    int exit_code;
    bool cacheable;
};

struct ctx {
    const struct cbc_build_opts *o;
    struct cbc_err *err;
    struct cbc_store *store;
    struct cbc_toolchain tc;
    struct cbc_arch_choice arch;
    struct cbc_filememo *memo;
    char *source; /* sources[0] */
    struct cbc_hash source_hash;
    struct cbc_stamp source_stamp;
    char **sources; /* absolute, in link order */
    struct cbc_hash *source_hashes;
    size_t n_sources;
    /* the flags nvcc compiles with (+ -rdc=true when linking), and those of
     * the bundle's keys and manifest (+ the link marker when linking) */
    char **flags, **key_flags;
    size_t n_flags, n_key_flags;
    bool link;                 /* device-link the units into each target */
    struct tstate *units;      /* link: one per (source, target), source-major */
    size_t n_units;
    struct cbc_dep devrt;      /* link: libcudadevrt.a, when the toolkit has one */
    char *cwd, *out_dir, *name, *nvcc, *ccbin;
    char *dir_name; /* NAME when out_dir is spelled NAME.bundle */
    struct cbc_stage stage; /* the out directory and this build's staging directory */
    bool stage_open;
    struct cbc_env env;
    const char *compute_cap;
    /* the previous build's manifest in the out dir, read only when needed
     * (a miss to explain, outputs to retire); see previous() */
    struct cbc_manifest prev;
    bool have_prev, prev_tried;
    char *manifest_path;
    struct tstate *ts;
    size_t n;
    bool warned_future;
    struct cbc_cache cache; /* lookups and commits over the store (src/cache) */
    char nvtmp[PATH_MAX]; /* nvcc's TMPDIR and the compiles' traces: ours, made at the first
                             compile, removed at the end */
    char *base; /* the base directory (key.h), or NULL */
    bool cwd_keyed; /* the flags name a path relative to the working directory */
};

/* Explanations and progress are formatted only when asked for. */
#define say(c, kind, ...)                                                                          \
    do {                                                                                           \
        if (((kind) != CBC_MSG_EXPLAIN || (c)->o->explain) &&                                      \
            ((kind) != CBC_MSG_PROGRESS || (c)->o->progress))                                      \
            cbc_say((c)->o->msg, (c)->o->msg_ctx, (kind), __VA_ARGS__);                            \
    } while (0)

/* ---- options ------------------------------------------------------------- */

/* Flags that would fight the driver for control of the output. */
static const char *const reserved_flags[] = {
    "-arch", "--gpu-architecture", "-gencode", "--generate-code", "-code", "--gpu-code",
    "-o", "--output-file", "-cubin", "--cubin", "-ptx", "--ptx", "-fatbin", "--fatbin",
    "-c", "--compile", "-E", "--preprocess", "-M", "-MD", "-MMD", "-MF", "-MT", "-MP",
    "--generate-dependencies", "--dependency-output", "-dryrun", "--dryrun", "-run", "--run",
    "-lib", "--lib", "-link", "--link", "-dlink", "--device-link",
};

static bool flag_matches(const char *flag, const char *name)
{
    size_t n = strlen(name);
    return strncmp(flag, name, n) == 0 && (flag[n] == '\0' || flag[n] == '=' ||
                                          (n == 2 && strcmp(name, "-o") == 0 && flag[n]));
}

/* The NVCC_*_FLAGS variable that carries an arch option (the first six
 * reserved flags), as "NAME='value'" in buf; empty when none does. The
 * flags after '--' are checked against the whole reserved list. */
static void env_arch_override(char *buf, size_t len)
{
    static const char *const envs[] = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"};
    buf[0] = '\0';
    for (size_t e = 0; e < CBC_ARRAY_LEN(envs) && !buf[0]; e++) {
        const char *v = getenv(envs[e]);
        for (const char *p = v; p && *p && !buf[0];) {
            while (*p == ' ' || *p == '\t')
                p++;
            size_t n = strcspn(p, " \t");
            char tok[256];
            cbc_fmt(tok, sizeof tok, "%.*s", (int)n, p);
            for (size_t k = 0; k < 6 && !buf[0]; k++)
                if (flag_matches(tok, reserved_flags[k]))
                    cbc_fmt(buf, len, "%s='%s'", envs[e], v);
            p += n;
        }
    }
}

static enum cbc_status check_flags(struct ctx *c)
{
    const struct cbc_build_opts *o = c->o;
    for (size_t i = 0; i < o->n_flags; i++) {
        const char *f = o->flags[i];
        for (size_t k = 0; k < CBC_ARRAY_LEN(reserved_flags); k++) {
            if (!flag_matches(f, reserved_flags[k]))
                continue;
            bool arch = k < 6;
            cbc_err_set(c->err, CBC_E_USAGE, "nvcc flag '%s' after '--' conflicts with what "
                        "cubincache build controls (%s)", f,
                        arch ? "the targets" : "outputs and dependency files");
            cbc_err_hint(c->err, arch ? "remove it and name the targets with --arch, e.g. "
                         "--arch 89,90"
                         : "remove it: use -o DIR, -n NAME and --depfile");
            return CBC_E_USAGE;
        }
    }
    /* the same options in the flags nvcc reads from the environment */
    char why[600];
    env_arch_override(why, sizeof why);
    if (why[0]) {
        cbc_err_set(c->err, CBC_E_USAGE, "%s sets the targets, which cubincache build controls: "
                    "every output would be code for another target than its name", why);
        cbc_err_hint(c->err, "remove the arch option from it and name the targets with --arch, "
                     "e.g. --arch 89,90");
        return CBC_E_USAGE;
    }
    const char *ccbin = cbc_flags_ccbin(o->flags, o->n_flags);
    if (ccbin && !(c->ccbin = cbc_strdup(ccbin)))
        return cbc_err_oom(c->err);
    return CBC_OK;
}

/* The inputs of now, as this build sees them (key.h). */
static struct cbc_key_now build_now(const struct ctx *c, size_t src, bool bundle)
{
    return (struct cbc_key_now){c->sources[src],
                                &c->source_hashes[src],
                                c->tc.nvcc,
                                c->tc.version,
                                &c->tc.nvcc_id,
                                c->tc.host_cc,
                                &c->tc.host_id,
                                bundle ? c->key_flags : c->flags,
                                bundle ? c->n_key_flags : c->n_flags,
                                &c->env,
                                c->cwd_keyed ? c->cwd : NULL,
                                c->base};
}

/* A unit's key inputs (a compile of one source for one target). */
static void key_inputs(const struct ctx *c, const struct tstate *t, struct cbc_key_inputs *in)
{
    struct cbc_key_now now = build_now(c, t->src, false);
    cbc_key_inputs_make(&now, &t->t, t->deps, t->n_deps, in); /* every hash is known here */
}

/* ---- explain ----------------------------------------------------------- */

/* Loads the previous manifest on first use: from `text` when the caller
 * already read the file, else from disk. False when there is none or it
 * does not parse (said once, as a note). */
static bool previous(struct ctx *c, const char *text, size_t len)
{
    if (c->prev_tried)
        return c->have_prev;
    c->prev_tried = true;
    struct cbc_err pe = {0};
    enum cbc_status st;
    uint8_t *data = NULL;
    int fd;
    if (text) {
        st = cbc_manifest_parse(text, len, c->manifest_path, &c->prev, &pe);
    } else if (cbc_open_regular(c->manifest_path, O_NOFOLLOW, &fd, NULL, NULL) == CBC_OK) {
        /* never through a link: the manifest decides what is retired */
        st = cbc_fd_read_max(fd, c->manifest_path, CBC_MANIFEST_MAX, &data, &len, &pe);
        close(fd);
        if (st == CBC_OK)
            st = cbc_manifest_parse((const char *)data, len, c->manifest_path, &c->prev, &pe);
        free(data);
    } else {
        return false;
    }
    if (st == CBC_OK && strcmp(c->prev.name, c->name) != 0) {
        st = cbc_err_set(&pe, CBC_E_FORMAT, "it names bundle '%s', not '%s'", c->prev.name,
                         c->name);
        cbc_manifest_release(&c->prev);
    }
    c->have_prev = st == CBC_OK;
    if (!c->have_prev)
        say(c, CBC_MSG_NOTE, "ignoring the previous manifest: %s", pe.msg);
    return c->have_prev;
}

static const struct cbc_manifest_entry *prev_entry(const struct ctx *c, const struct cbc_target *t)
{
    for (size_t i = 0; c->have_prev && i < c->prev.n; i++)
        if (cbc_target_eq(&c->prev.entries[i].target, t))
            return &c->prev.entries[i];
    return NULL;
}

/* Why a target missed, by comparing with the previous manifest in DIR. */
static void explain_miss(struct ctx *c, const struct tstate *t, char *buf, size_t len)
{
    if (c->cache.recache) {
        cbc_fmt(buf, len, "recache is set: every target compiles again");
        return;
    }
    if (t->u.state == CBC_CACHE_DROPPED) {
        cbc_fmt(buf, len, "the cached entry was bad (%s) and was dropped", t->u.why);
        return;
    }
    if (!previous(c, NULL, 0)) {
        cbc_fmt(buf, len, "no previous build of '%s' in '%s'", c->name, c->out_dir);
        return;
    }
    const struct cbc_manifest_entry *pe = prev_entry(c, &t->t);
    if (!pe) {
        const char *was = c->prev.compute_cap, *now = c->compute_cap;
        if ((was || now) && (!was || !now || strcmp(was, now) != 0))
            cbc_fmt(buf, len, "new target: CUDA_COMPUTE_CAP %s -> %s", was ? was : "unset",
                    now ? now : "unset");
        else
            cbc_fmt(buf, len, "new target: arch was %s, is now %s",
                    c->prev.arch_detail ? c->prev.arch_detail : "?",
                    c->arch.detail ? c->arch.detail : c->arch.spec);
        return;
    }
    struct cbc_key_now now = build_now(c, 0, false);
    char *change = NULL;
    if (cbc_key_changes(&c->prev, pe, &now, c->memo, &change, 1) == 1) {
        cbc_fmt(buf, len, "%s", change);
        free(change);
        return;
    }
    cbc_fmt(buf, len, "inputs unchanged since the last build, but the entry is not in this "
                      "cache (cleared, trimmed, or another cache directory)");
}

/* ---- lookup ------------------------------------------------------------ */

/* A hit's dependency list, its paths borrowed from the direct mode's list
 * (which lives until cleanup). */
static enum cbc_status deps_from_list(struct tstate *t, const struct cbc_direct_dep *deps,
                                      size_t n, struct cbc_err *err)
{
    t->deps = calloc(n ? n : 1, sizeof *t->deps);
    if (!t->deps)
        return cbc_err_oom(err);
    for (size_t i = 0; i < n; i++)
        t->deps[i] = (struct cbc_dep){deps[i].path, deps[i].hash};
    t->n_deps = n;
    t->deps_borrowed = true;
    return CBC_OK;
}

/* A copy of a list's probes, as the manifest records them. */
static enum cbc_status keep_lookups(struct tstate *t, const struct cbc_dep_list *l,
                                    struct cbc_err *err)
{
    if (!l || !l->n_probes)
        return CBC_OK;
    t->lookups = calloc(l->n_probes, sizeof *t->lookups);
    if (!t->lookups)
        return cbc_err_oom(err);
    for (size_t d = 0; d < l->n_probes; d++) {
        const struct cbc_probe_dir *pd = &l->probes[d];
        struct cbc_manifest_lookup *lk = &t->lookups[t->n_lookups++];
        lk->dir = cbc_strdup(pd->dir);
        lk->names = calloc(pd->n ? pd->n : 1, sizeof *lk->names);
        if (!lk->dir || !lk->names)
            return cbc_err_oom(err);
        for (size_t k = 0; k < pd->n; k++)
            if (!(lk->names[lk->n++] = cbc_strdup(l->names[pd->first + k])))
                return cbc_err_oom(err);
    }
    return CBC_OK;
}

static void free_lookups(struct cbc_manifest_lookup *v, size_t n, bool strings)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; strings && k < v[i].n; k++)
            free(v[i].names[k]);
        if (strings)
            free(v[i].dir);
        free(v[i].names);
    }
    free(v);
}

static void free_deps(struct tstate *t)
{
    for (size_t i = 0; i < t->n_deps && !t->deps_borrowed; i++)
        free(t->deps[i].path);
    free(t->deps);
    t->deps = NULL;
    t->n_deps = 0;
}

/* prepare -> lookup -> compile -> publish: a target is a hit when the
 * direct mode knows its result key and the store holds a good entry. */
static enum cbc_status lookup(struct ctx *c, struct tstate *t)
{
    struct cbc_key_inputs in;
    key_inputs(c, t, &in);
    cbc_key_direct(&in, &t->u.dt.direct_key);
    if (c->cwd_keyed) { /* and as another working directory has it */
        t->u.has_sibling = true;
        in.cwd = NULL;
        cbc_key_direct(&in, &t->u.sibling);
    }
    t->state = T_MISS;
    char what[CBC_TARGET_NAME_MAX + PATH_MAX];
    snprintf(what, sizeof what, "%s of '%s'", t->name, c->sources[t->src]);
    enum cbc_status st = cbc_cache_lookup(&c->cache, &t->u, &t->t, what, c->err);
    if (st != CBC_OK || t->u.state != CBC_CACHE_HIT)
        return st;
    t->state = T_HIT;
    t->data = t->u.data;
    t->len = t->u.len;
    t->u.data = NULL;
    size_t n;
    const struct cbc_direct_dep *deps = cbc_direct_deps(c->cache.direct, &t->u.dt, &n);
    st = deps_from_list(t, deps, n, c->err);
    return st == CBC_OK ? keep_lookups(t, cbc_cache_unit_list(&c->cache, &t->u), c->err) : st;
}

/* ---- compile ------------------------------------------------------------- */

/* The private TMPDIR of this build's compiles (their traces go there too). */
static enum cbc_status make_nvtmp(struct ctx *c)
{
    if (c->nvtmp[0])
        return CBC_OK;
    const char *base = getenv("TMPDIR");
    snprintf(c->nvtmp, sizeof c->nvtmp, "%s/cubincache-build.XXXXXX",
             base && *base == '/' ? base : "/tmp");
    if (!mkdtemp(c->nvtmp)) {
        c->nvtmp[0] = '\0';
        return cbc_err_set(c->err, CBC_E_IO, "cannot create a temporary directory in '%s': %s",
                           base && *base == '/' ? base : "/tmp", strerror(errno));
    }
    return CBC_OK;
}

/* nvcc's command for one unit into `out`, its depfile `dep` (as the
 * device preprocessing writes it); `preprocess`: that preprocessing alone
 * (nvcc -E: the same files listed, nothing compiled). *xdep is what to
 * free with the vector. */
static char **unit_argv(const struct ctx *c, const struct tstate *t, const char *dep,
                        const char *out, bool preprocess, char gencode[96], char **xdep)
{
    const char *v = cbc_variant_suffix(t->t.variant);
    snprintf(gencode, 96, "arch=compute_%u%s,code=%s_%u%s", (unsigned)t->t.arch, v,
             t->t.kind == CBC_KIND_PTX ? "compute" : "sm", (unsigned)t->t.arch, v);
    size_t n = 0;
    char **argv = calloc(c->n_flags + 20, sizeof *argv);
    *xdep = NULL;
    if (!argv)
        return NULL;
    argv[n++] = c->nvcc;
    for (size_t i = 0; i < c->n_flags; i++)
        argv[n++] = c->flags[i];
    if (preprocess)
        argv[n++] = "-E";
    argv[n++] = t->t.kind == CBC_KIND_PTX ? "-ptx" : "-cubin";
    argv[n++] = "-gencode";
    argv[n++] = gencode;
    /* the dependencies come from the device preprocessing nvcc runs anyway
     * (the host compiler's -E, with this target's __CUDA_ARCH__ defined);
     * nvcc's own -MD would preprocess the source a second time. -Xcompiler
     * splits at commas and nvcc pastes its value into a shell line, so a
     * path with anything but [A-Za-z0-9_./+-] takes nvcc's way. */
    *xdep = cbc_path_plain(dep) ? cbc_asprintf("-MD,-MF,%s", dep) : NULL;
    if (*xdep) {
        argv[n++] = "-Xcompiler";
        argv[n++] = *xdep;
    } else {
        argv[n++] = "-MD";
        argv[n++] = "-MF";
        argv[n++] = (char *)dep;
    }
    if (t->keep && !preprocess) { /* the same output, and cicc's files kept for names_tree */
        argv[n++] = "-keep";
        argv[n++] = "-keep-dir";
        argv[n++] = t->keep;
    }
    argv[n++] = "-o";
    argv[n++] = (char *)out;
    argv[n++] = c->sources[t->src];
    argv[n] = NULL;
    return argv;
}

/* Whether a compiled unit's cubin may name this tree (cbc_cache_names_tree
 * on its bytes, and cicc's device-only source from its -keep-dir); true
 * when that source cannot be read. */
static bool names_tree(const struct ctx *c, const struct tstate *t)
{
    return cbc_cache_names_tree(&c->cache, c->sources[t->src], t->data, t->len) || !t->keep ||
           cbc_cache_keep_dir_names_tree(&c->cache, t->keep);
}

static enum cbc_status start_compile(struct ctx *c, struct tstate *t)
{
    enum cbc_status st = make_nvtmp(c);
    if (st != CBC_OK)
        return st;
    t->tmp_out = cbc_asprintf("%s/%s", c->stage.path, t->file);
    t->tmp_dep = cbc_asprintf("%s/%s.d", c->stage.path, t->file);
    t->tmp_log = cbc_asprintf("%s/%s.log", c->stage.path, t->file);
    t->tmp_trace = cbc_asprintf("%s/%s.trace", c->nvtmp, t->file);
    if (!t->keep && !cbc_flags_keep(c->flags, c->n_flags))
        t->keep = cbc_cache_keep_dir(cbc_asprintf("%s/keep.%s", c->nvtmp, t->file));
    char gencode[96], *xdep = NULL;
    char **argv = t->tmp_out && t->tmp_dep && t->tmp_log && t->tmp_trace
                      ? unit_argv(c, t, t->tmp_dep, t->tmp_out, false, gencode, &xdep)
                      : NULL;
    if (!argv)
        return cbc_err_oom(c->err);
    struct cbc_trace_run tr;
    st = cbc_trace_run_init(&tr, t->tmp_trace, c->nvtmp, c->err);
    if (st == CBC_OK)
        st = cbc_proc_spawn_env(argv, t->tmp_log, t->tmp_log, tr.env, &t->pid, c->err);
    if (!tr.log) { /* not traced: no log to read */
        free(t->tmp_trace);
        free_lookups(t->lookups, t->n_lookups, true);
        t->tmp_trace = NULL;
    }
    cbc_trace_run_release(&tr);
    free(argv);
    free(xdep);
    if (st != CBC_OK)
        cbc_err_hint(c->err, "check that nvcc ('%s') is installed and executable", c->nvcc);
    return st;
}

/* A direct miss of a unit compiled in another working directory: its
 * device preprocessing alone (unit_argv's nvcc -E) lists the files the
 * compile would read, and their result key may be stored. Run for every
 * such unit, `jobs` at a time, before anything compiles. */
static enum cbc_status preprocessed(struct ctx *c, struct tstate *ts, size_t nt, int jobs)
{
    struct pp { struct tstate *t; pid_t pid; char dep[PATH_MAX + 32]; uint64_t started; } *v = NULL;
    size_t n = 0;
    for (size_t i = 0; i < nt; i++)
        n += ts[i].state == T_MISS && ts[i].u.state == CBC_CACHE_MISS &&
             cbc_cache_sibling_seen(&c->cache, &ts[i].u);
    if (!n)
        return CBC_OK;
    enum cbc_status st = make_nvtmp(c);
    if (st != CBC_OK || !(v = calloc(n, sizeof *v)))
        return st != CBC_OK ? st : cbc_err_oom(c->err);
    n = 0;
    for (size_t i = 0; i < nt; i++)
        if (ts[i].state == T_MISS && ts[i].u.state == CBC_CACHE_MISS &&
            cbc_cache_sibling_seen(&c->cache, &ts[i].u))
            v[n++].t = &ts[i];
    char log[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s/pp.log", c->nvtmp);
    for (size_t first = 0; first < n && st == CBC_OK; first += (size_t)jobs) {
        size_t last = first + (size_t)jobs < n ? first + (size_t)jobs : n;
        for (size_t k = first; k < last; k++) {
            struct pp *p = &v[k];
            snprintf(p->dep, sizeof p->dep, "%s/pp.%zu.d", c->nvtmp, k);
            char gencode[96], *xdep = NULL;
            char **argv = unit_argv(c, p->t, p->dep, "/dev/null", true, gencode, &xdep);
            p->started = cbc_now_ns();
            p->pid = -1;
            struct cbc_err e = {0};
            if (!argv || cbc_proc_spawn_env(argv, log, log, NULL, &p->pid, &e) != CBC_OK)
                p->pid = -1;
            free(argv);
            free(xdep);
        }
        for (size_t k = first; k < last; k++) {
            struct pp *p = &v[k];
            struct tstate *t = p->t;
            bool ran = p->pid > 0 && cbc_proc_wait(p->pid) == 0;
            uint8_t *text = NULL;
            size_t len = 0, np = 0;
            char **paths = NULL;
            struct cbc_err e = {0};
            if (!ran || cbc_file_read(p->dep, &text, &len, &e) != CBC_OK ||
                cbc_depfile_parse((const char *)text, len, c->cwd, c->sources[t->src], &paths,
                                  &np, p->dep, &e) != CBC_OK) {
                free(text);
                unlink(p->dep);
                continue;
            }
            free(text);
            unlink(p->dep);
            const char *own[] = {c->nvtmp};
            struct cbc_collect_in in = {paths, np, c->sources[t->src], NULL, own, 1,
                                        NULL, 0, p->started, c->memo};
            struct cbc_collect_out co;
            enum cbc_status cs = cbc_collect(&in, &co, &e);
            cbc_paths_free(paths, np);
            if (cs == CBC_E_NOMEM)
                st = cbc_err_oom(c->err);
            if (cs != CBC_OK)
                continue;
            t->deps = co.cacheable ? calloc(co.n_deps ? co.n_deps : 1, sizeof *t->deps) : NULL;
            for (size_t i = 0; t->deps && i < co.n_deps; i++) {
                t->deps[i] = (struct cbc_dep){cbc_strdup(co.deps[i].path), co.deps[i].hash};
                t->n_deps += t->deps[i].path != NULL;
            }
            size_t want = co.n_deps;
            cbc_collect_release(&co);
            if (!t->deps || t->n_deps != want) {
                free_deps(t);
                continue;
            }
            struct cbc_key_inputs kin;
            key_inputs(c, t, &kin);
            cbc_key_result(&kin, &t->u.result);
            char what[CBC_TARGET_NAME_MAX + PATH_MAX];
            snprintf(what, sizeof what, "%s of '%s'", t->name, c->sources[t->src]);
            st = cbc_cache_lookup_preprocessed(&c->cache, &t->u, &t->t, what, c->err);
            if (st == CBC_OK && t->u.state == CBC_CACHE_HIT) {
                t->state = T_HIT;
                t->preprocessed = true;
                t->data = t->u.data, t->len = t->u.len, t->u.data = NULL;
                st = keep_lookups(t, cbc_cache_unit_list(&c->cache, &t->u), c->err);
            } else {
                free_deps(t); /* the compile lists them again */
            }
        }
    }
    unlink(log);
    free(v);
    return st;
}

/* The status line: the targets compiling now, how many of the misses are
 * done, the time since the first started. */
static void progress(struct ctx *c, struct tstate **who, size_t running, size_t done,
                     size_t total, uint64_t started_ns)
{
    if (!c->o->progress)
        return;
    char now[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < running && off < sizeof now; i++)
        off += (size_t)snprintf(now + off, sizeof now - off, "%s%s%s%s", i ? " " : "",
                                c->link ? cbc_path_base(c->sources[who[i]->src]) : "",
                                c->link ? ":" : "", who[i]->name);
    say(c, CBC_MSG_PROGRESS, "%s: [%zu/%zu] %.1f s%s%s", c->name, done, total,
        (double)(cbc_now_ns() - started_ns) / 1e9, running ? "  compiling " : "", now);
}

static enum cbc_status compile_misses(struct ctx *c, struct tstate *ts, size_t nt,
                                      uint64_t *started_ns)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int jobs = c->o->jobs > 0 ? c->o->jobs : cpus > 0 ? (int)cpus : 1;
    /* a make or cargo jobserver's tokens for every compile beyond the
     * first, when one is offered (jobslots.h) */
    struct cbc_jobslots *slots = cbc_jobslots_open(c->o->jobs, c->store, c->o->msg, c->o->msg_ctx);
    size_t next = 0, running = 0;
    enum cbc_status st = CBC_OK;
    pid_t *pids = calloc(nt ? nt : 1, sizeof *pids);
    struct tstate **who = calloc(nt ? nt : 1, sizeof *who);
    int *slot = calloc(nt ? nt : 1, sizeof *slot);
    if (!pids || !who || !slot) {
        free(pids);
        free(who);
        free(slot);
        cbc_jobslots_close(slots);
        return cbc_err_oom(c->err);
    }
    *started_ns = cbc_now_ns();
    size_t total = 0, done = 0;
    for (size_t i = 0; i < nt; i++)
        total += ts[i].state == T_MISS;
    for (;;) {
        size_t before = running;
        while (st == CBC_OK && running < (size_t)jobs && next < nt) {
            if (ts[next].state != T_MISS) {
                next++;
                continue;
            }
            /* holding a slot, never wait for another (that could deadlock
             * against a build waiting the same way): reap a compile first */
            int sl = cbc_jobslots_try(slots);
            if (sl == CBC_JOBSLOT_BUSY && running > 0)
                break;
            if (sl == CBC_JOBSLOT_BUSY)
                sl = cbc_jobslots_wait(slots, 60000); /* then without one: never hang */
            struct tstate *t = &ts[next++];
            st = start_compile(c, t);
            if (st == CBC_OK) {
                slot[running] = sl;
                pids[running] = t->pid;
                who[running++] = t;
            } else {
                cbc_jobslots_release(slots, sl);
            }
        }
        if (running == 0)
            break;
        if (running != before)
            progress(c, who, running, done, total, *started_ns);
        /* only our own compiles: a host program's other children are not ours to reap */
        int code;
        long i = cbc_proc_wait_any_fd(pids, running, cbc_jobslots_fd(slots), &code);
        if (i < 0)
            continue; /* a jobserver token may be there */
        done++;
        who[i]->exit_code = code;
        who[i]->pid = 0;
        cbc_jobslots_release(slots, slot[i]);
        slot[i] = slot[running - 1];
        pids[i] = pids[running - 1];
        who[i] = who[running - 1];
        running--;
        progress(c, who, running, done, total, *started_ns);
    }
    free(pids);
    free(who);
    free(slot);
    cbc_jobslots_close(slots);
    return st;
}

/* Shows a compile's output (warnings or errors), labelled by target. */
static void show_log(struct ctx *c, const struct tstate *t)
{
    uint8_t *log = NULL;
    size_t len = 0;
    if (cbc_file_read(t->tmp_log, &log, &len, NULL) != CBC_OK || len == 0) {
        free(log);
        return;
    }
    while (len && (log[len - 1] == '\n' || log[len - 1] == '\r'))
        log[--len] = '\0';
    say(c, CBC_MSG_DIAG, "%s", (char *)log);
    free(log);
}

/* Bytes free in the file system of `path`, or UINT64_MAX when unknown. */
static uint64_t space_left(const char *path)
{
    struct statvfs v;
    if (!path || statvfs(path, &v) != 0)
        return UINT64_MAX;
    return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

/* When nvcc's output is missing, empty or cut short, a full disk is the
 * usual cause: the out directory's, or the one nvcc keeps its
 * intermediates in ($TMPDIR). Names the full one, or returns false. */
static bool disk_full(struct ctx *c, const struct tstate *t)
{
    const char *td = getenv("TMPDIR");
    const char *where[] = {c->stage.path, td && *td ? td : "/tmp"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(where); i++) {
        uint64_t left = space_left(where[i]);
        if (left < (1u << 20)) {
            cbc_err_set(c->err, CBC_E_IO, "no space left on the device of '%s' (%llu bytes "
                        "free): nvcc's output for %s is %s", where[i], (unsigned long long)left,
                        t->name, t->len ? "cut short" : "empty or missing");
            cbc_err_hint(c->err, "free space there (or point TMPDIR elsewhere) and build again; "
                         "nothing was written to the bundle");
            return true;
        }
    }
    return false;
}

static enum cbc_status finish_compile(struct ctx *c, struct tstate *t, uint64_t started_ns)
{
    struct cbc_err e = {0};
    enum cbc_status st = cbc_file_read(t->tmp_out, &t->data, &t->len, &e);
    if (st == CBC_OK && t->len > 0)
        st = cbc_binfmt_verify_target(t->data, t->len, &t->t, t->file, NULL, &e);
    else if (st == CBC_OK)
        st = cbc_err_set(&e, CBC_E_FORMAT, "'%s' is empty", t->file);
    if (st != CBC_OK && st != CBC_E_VERIFY && disk_full(c, t))
        return CBC_E_IO;
    if (st == CBC_E_VERIFY) {
        /* real code, for another target than asked: the flags and NVCC_*_FLAGS
         * were checked for arch options before nvcc ran, so nvcc or a
         * wrapper changed it */
        cbc_err_set(c->err, CBC_E_VERIFY, "nvcc output for %s is not %s code: %s", t->name,
                    t->name, e.msg);
        cbc_err_hint(c->err, "nvcc ('%s'), or a wrapper around it, built another target than the "
                     "-gencode it was given: check that it passes the option through unchanged",
                     c->nvcc);
        return CBC_E_VERIFY;
    }
    if (st != CBC_OK) {
        cbc_err_set(c->err, CBC_E_COMPILE, "nvcc exited 0 but its output for %s is unusable: %s",
                    t->name, e.msg);
        return CBC_E_COMPILE;
    }
    if (t->t.kind == CBC_KIND_SASS && !c->link) {
        /* -rdc output is fine as long as it is whole: a cubin that needs a
         * device link loads nowhere, so it is not a bundle's image */
        struct cbc_cubin_info ci;
        if (cbc_cubin_parse(t->data, t->len, t->file, &ci, NULL) == CBC_OK) {
            bool rel = cbc_cubin_needs_dlink(&ci);
            if (rel)
                cbc_err_set(c->err, CBC_E_UNSUPPORTED, "nvcc output for %s is relocatable code "
                            "that references '%s'%s, which it does not define: it needs a device "
                            "link, which this build was not asked for", t->name,
                            ci.undefined[0], ci.n_undefined > 1 ? " and more" : "");
            cbc_cubin_info_release(&ci);
            if (rel) {
                cbc_err_hint(c->err, "build every source it calls into in one bundle "
                             "(cubincache build a.cu b.cu -n NAME), or pass -rdc=true after '--' "
                             "for the device runtime (dynamic parallelism)");
                return CBC_E_UNSUPPORTED;
            }
        }
    }
    uint8_t *dtext = NULL;
    size_t dlen = 0;
    st = cbc_file_read(t->tmp_dep, &dtext, &dlen, c->err);
    if ((st != CBC_OK || dlen == 0) && disk_full(c, t)) {
        free(dtext);
        return CBC_E_IO;
    }
    char **paths = NULL;
    size_t np = 0;
    if (st == CBC_OK)
        st = cbc_depfile_parse((const char *)dtext, dlen, c->cwd, c->sources[t->src], &paths,
                               &np, t->tmp_dep, c->err);
    free(dtext);
    if (st != CBC_OK)
        return st;
    /* what it read and looked for, for the key and the next hit */
    struct cbc_trace trace = {0};
    struct cbc_err te = {0};
    bool traced = t->tmp_trace && cbc_trace_load(t->tmp_trace, &trace, &te) == CBC_OK;
    const char *own[] = {c->stage.path, c->nvtmp};
    struct cbc_collect_in in = {paths, np, c->sources[t->src], traced ? &trace : NULL, own, 2,
                                NULL, 0, started_ns, c->memo};
    struct cbc_collect_out co;
    st = cbc_collect(&in, &co, c->err);
    cbc_trace_release(&trace);
    cbc_paths_free(paths, np);
    if (st != CBC_OK)
        return st;
    if (co.future && !c->warned_future) {
        c->warned_future = true;
        say(c, CBC_MSG_WARNING, "'%s' has a modification time in the future; check the clock "
            "(or the file's origin) of this machine", co.future);
    }
    /* the key's dependencies: the list's paths, copied (the list goes with co) */
    t->deps = calloc(co.n_deps ? co.n_deps : 1, sizeof *t->deps);
    for (size_t i = 0; t->deps && i < co.n_deps; i++) {
        t->deps[i] = (struct cbc_dep){cbc_strdup(co.deps[i].path), co.deps[i].hash};
        t->n_deps += t->deps[i].path != NULL;
    }
    if (!t->deps || t->n_deps != co.n_deps) {
        cbc_collect_release(&co);
        return cbc_err_oom(c->err);
    }
    st = keep_lookups(t, &co.list, c->err);
    if (st != CBC_OK) {
        cbc_collect_release(&co);
        return st;
    }
    struct cbc_key_inputs in_key;
    key_inputs(c, t, &in_key);
    cbc_key_result(&in_key, &t->u.result);
    if (co.n_side) {
        /* a bundle holds images: what else nvcc wrote would be lost by a hit */
        say(c, CBC_MSG_WARNING, "%s: nvcc also wrote '%s'%s, which a bundle does not hold; "
            "using the result but not caching it", t->name, co.side[0],
            co.n_side > 1 ? " and more" : "");
        cbc_collect_release(&co);
        return CBC_OK;
    }
    enum cbc_commit outcome;
    char why[CBC_ERR_MSG_MAX];
    /* a cubin that names this tree (-G, -lineinfo, __FILE__, an internal
     * name's module id) is no entry for another checkout */
    t->u.path_dependent = names_tree(c, t);
    st = cbc_cache_commit(&c->cache, &t->u, &co, &t->t, t->data, t->len, &outcome, why,
                          sizeof why, c->err);
    if (outcome == CBC_COMMIT_CHANGED)
        say(c, CBC_MSG_WARNING, "%s: %s; using the result but not caching it", t->name, why);
    else if (outcome == CBC_COMMIT_UNRECORDABLE)
        say(c, CBC_MSG_NOTE, "%s: not cached: %s", t->name, why);
    cbc_collect_release(&co);
    return st;
}

/* ---- outputs ------------------------------------------------------------- */

static int cmp_dep(const void *a, const void *b)
{
    return strcmp(((const struct cbc_dep *)a)->path, ((const struct cbc_dep *)b)->path);
}

/* Sorts a dependency list by path, each path once (every list of ours is in
 * this order: the manifest's, check's); returns the new length. */
static size_t sort_unique_deps(struct cbc_dep *d, size_t n)
{
    qsort(d, n, sizeof *d, cmp_dep);
    size_t w = 0;
    for (size_t r = 0; r < n; r++)
        if (!w || strcmp(d[w - 1].path, d[r].path) != 0)
            d[w++] = d[r];
    return w;
}

static bool same_deps(const struct tstate *a, const struct tstate *b)
{
    if (a->n_deps != b->n_deps)
        return false;
    for (size_t k = 0; k < a->n_deps; k++)
        if (!cbc_hash_eq(&a->deps[k].hash, &b->deps[k].hash) ||
            (a->deps[k].path != b->deps[k].path && strcmp(a->deps[k].path, b->deps[k].path) != 0))
            return false;
    return true;
}

/* The manifest for this build. Borrows strings from c; free only the arrays. */
struct lookup_ref {
    const char *dir, *name;
};

static int cmp_lookup_ref(const void *a, const void *b)
{
    const struct lookup_ref *x = a, *y = b;
    int c = strcmp(x->dir, y->dir);
    return c ? c : strcmp(x->name, y->name);
}

/* Every target's lookups, once each, grouped by directory (the strings
 * borrowed from the targets). */
static enum cbc_status merge_lookups(struct ctx *c, struct cbc_manifest *m)
{
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++)
        for (size_t d = 0; d < c->ts[i].n_lookups; d++)
            total += c->ts[i].lookups[d].n;
    if (!total)
        return CBC_OK;
    struct lookup_ref *v = calloc(total, sizeof *v);
    if (!v)
        return cbc_err_oom(c->err);
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++)
        for (size_t d = 0; d < c->ts[i].n_lookups; d++)
            for (size_t k = 0; k < c->ts[i].lookups[d].n; k++)
                v[n++] = (struct lookup_ref){c->ts[i].lookups[d].dir, c->ts[i].lookups[d].names[k]};
    qsort(v, n, sizeof *v, cmp_lookup_ref);
    m->lookups = calloc(n, sizeof *m->lookups);
    for (size_t i = 0; m->lookups && i < n; i++) {
        if (i && !cmp_lookup_ref(&v[i], &v[i - 1]))
            continue;
        if (!m->n_lookups || strcmp(m->lookups[m->n_lookups - 1].dir, v[i].dir)) {
            size_t k = i;
            while (k < n && !strcmp(v[k].dir, v[i].dir))
                k++;
            struct cbc_manifest_lookup *lk = &m->lookups[m->n_lookups++];
            lk->dir = (char *)v[i].dir;
            if (!(lk->names = calloc(k - i, sizeof *lk->names))) {
                free(v);
                return cbc_err_oom(c->err);
            }
        }
        struct cbc_manifest_lookup *lk = &m->lookups[m->n_lookups - 1];
        lk->names[lk->n++] = (char *)v[i].name;
    }
    free(v);
    return m->lookups ? CBC_OK : cbc_err_oom(c->err);
}

static enum cbc_status make_manifest(struct ctx *c, struct cbc_manifest *m)
{
    memset(m, 0, sizeof *m);
    m->name = c->name;
    m->source = c->source;
    m->source_hash = c->source_hash;
    size_t total = 0;
    for (size_t i = 0; i < c->n; i++)
        total += c->ts[i].n_deps;
    m->deps = calloc(total ? total : 1, sizeof *m->deps);
    m->entries = calloc(c->n ? c->n : 1, sizeof *m->entries);
    if (!m->deps || !m->entries)
        return cbc_err_oom(c->err);
    /* Targets usually read the same files: a list equal to an earlier
     * target's adds nothing, so only distinct lists are merged and sorted. */
    for (size_t i = 0; i < c->n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = same_deps(&c->ts[i], &c->ts[j]);
        for (size_t k = 0; k < c->ts[i].n_deps && !seen; k++)
            m->deps[m->n_deps++] = c->ts[i].deps[k];
    }
    m->n_deps = sort_unique_deps(m->deps, m->n_deps);
    m->nvcc = c->tc.nvcc;
    m->nvcc_version = c->tc.version;
    m->nvcc_id = c->tc.nvcc_id;
    m->host_cc = c->tc.host_cc;
    m->host_id = c->tc.host_id;
    m->flags = c->key_flags;
    m->n_flags = c->n_key_flags;
    if (c->link) {
        m->linked = c->sources;
        m->n_linked = c->n_sources;
    }
    m->env = c->env;
    m->cwd = c->cwd;
    m->base_dir = c->base;
    enum cbc_status st = merge_lookups(c, m);
    if (st != CBC_OK)
        return st;
    m->arch_spec = c->arch.spec;
    m->arch_rule = (char *)cbc_arch_rule_name(c->arch.rule);
    m->arch_detail = c->arch.detail ? c->arch.detail : c->arch.spec;
    m->compute_cap = (char *)c->compute_cap;
    for (size_t i = 0; i < c->n; i++) {
        struct tstate *t = &c->ts[i];
        struct cbc_manifest_entry *e = &m->entries[m->n++];
        e->target = t->t;
        e->file = t->file;
        e->key = t->u.result;
        cbc_hash_bytes(t->data, t->len, &e->hash);
        e->size = t->len;
        if (t->n_deps != m->n_deps) {
            e->deps = calloc(t->n_deps ? t->n_deps : 1, sizeof *e->deps);
            if (!e->deps)
                return cbc_err_oom(c->err);
            for (size_t k = 0; k < t->n_deps; k++) {
                struct cbc_dep key = {t->deps[k].path, {{0}}};
                struct cbc_dep *f = bsearch(&key, m->deps, m->n_deps, sizeof *m->deps, cmp_dep);
                e->deps[e->n_deps++] = f ? (size_t)(f - m->deps) : 0;
            }
        }
    }
    return CBC_OK;
}

static void free_manifest_arrays(struct cbc_manifest *m)
{
    free_lookups(m->lookups, m->n_lookups, false);
    for (size_t i = 0; i < m->n; i++)
        free(m->entries[i].deps);
    free(m->entries);
    free(m->deps);
}

/* Opens the out directory once (creating it): compiles stage there, and
 * the bundle is published there. */
static enum cbc_status open_stage(struct ctx *c)
{
    if (c->stage_open)
        return CBC_OK;
    enum cbc_status st = cbc_stage_init(&c->stage, c->out_dir, c->name, c->err);
    c->stage_open = true;
    return st;
}

static enum cbc_status write_outputs(struct ctx *c, struct cbc_build_result *res)
{
    struct cbc_err *err = c->err;
    enum cbc_status st = open_stage(c);
    if (st != CBC_OK)
        return st;
    struct cbc_manifest m;
    st = make_manifest(c, &m);
    char *text = st == CBC_OK ? cbc_manifest_render(&m) : NULL;
    if (st == CBC_OK && !text)
        st = cbc_err_oom(err);
    struct cbc_publish_file *files = calloc(c->n ? c->n : 1, sizeof *files);
    struct cbc_retire *retire = NULL;
    size_t n_retire = 0;
    if (st == CBC_OK && !files)
        st = cbc_err_oom(err);
    for (size_t i = 0; st == CBC_OK && i < c->n; i++)
        files[i] = (struct cbc_publish_file){c->ts[i].file, c->ts[i].data, c->ts[i].len,
                                             c->ts[i].state == T_HIT};
    /* what the previous manifest recorded: the images it may retire (none
     * when it is this very manifest, the common hit, which skips its parse) */
    char mname[CBC_NAME_MAX + 32];
    snprintf(mname, sizeof mname, "%s.manifest.json", c->name);
    if (st == CBC_OK && !cbc_stage_holds(&c->stage, mname, text, strlen(text)) &&
        previous(c, NULL, 0)) {
        retire = calloc(c->prev.n ? c->prev.n : 1, sizeof *retire);
        if (!retire)
            st = cbc_err_oom(err);
        for (size_t i = 0; retire && i < c->prev.n; i++)
            retire[n_retire++] = (struct cbc_retire){c->prev.entries[i].file,
                                                     c->prev.entries[i].target,
                                                     c->prev.entries[i].hash};
    }
    struct cbc_buf dep = {0};
    if (st == CBC_OK && c->o->depfile) {
        cbc_depfile_escape(&dep, c->o->depfile_target ? c->o->depfile_target
                                 : c->dir_name        ? c->out_dir
                                                      : res->manifest_path);
        cbc_buf_puts(&dep, ":");
        cbc_buf_puts(&dep, " \\\n  ");
        cbc_depfile_escape(&dep, c->source);
        for (size_t i = 0; i < m.n_deps; i++) {
            if (!strcmp(m.deps[i].path, c->source))
                continue;
            cbc_buf_puts(&dep, " \\\n  ");
            cbc_depfile_escape(&dep, m.deps[i].path);
        }
        cbc_buf_puts(&dep, "\n");
        if (dep.oom)
            st = cbc_err_oom(err);
    }
    if (st == CBC_OK) {
        struct cbc_publish_req req = {files, c->n, text, retire, n_retire,
                                      c->o->depfile, dep.p, c->o->msg, c->o->msg_ctx};
        struct cbc_publish_result pr;
        st = cbc_publish(&c->stage, &req, &pr, err);
        res->written = pr.written;
        res->manifest_changed = pr.manifest_changed;
    }
    cbc_buf_release(&dep);
    free(retire);
    free(files);
    free(text);
    free_manifest_arrays(&m);
    return st;
}

/* ---- the whole build ----------------------------------------------------- */

/* Whether two paths name one file: the same text once made absolute, or
 * the same inode when both exist. */
static bool same_file(const char *a, const char *b)
{
    char *x = cbc_path_abs(a), *y = cbc_path_abs(b);
    bool same = x && y && strcmp(x, y) == 0;
    free(x);
    free(y);
    struct stat sa, sb;
    return same || (stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
                    sa.st_ino == sb.st_ino);
}

/* ---- device link ---------------------------------------------------------- */


static bool is_rdc_flag(char *const *f, size_t n, size_t i)
{
    static const char *const on[] = {"-rdc=true", "--relocatable-device-code=true"};
    for (size_t k = 0; k < CBC_ARRAY_LEN(on); k++)
        if (!strcmp(f[i], on[k]))
            return true;
    return (!strcmp(f[i], "-rdc") || !strcmp(f[i], "--relocatable-device-code")) && i + 1 < n &&
           !strcmp(f[i + 1], "true");
}

/* The flags of the compiles and of the keys. Linking: several sources, or
 * -rdc=true among the flags (dynamic parallelism in one source). */
static enum cbc_status link_flags(struct ctx *c)
{
    const struct cbc_build_opts *o = c->o;
    bool rdc = false;
    for (size_t i = 0; i < o->n_flags && !rdc; i++)
        rdc = is_rdc_flag(o->flags, o->n_flags, i);
    c->link = rdc || c->n_sources > 1;
    size_t extra = c->link ? 2 : 0;
    c->flags = calloc(o->n_flags + extra + 1, sizeof *c->flags);
    c->key_flags = calloc(o->n_flags + extra + 1, sizeof *c->key_flags);
    if (!c->flags || !c->key_flags)
        return cbc_err_oom(c->err);
    for (size_t i = 0; i < o->n_flags; i++)
        c->flags[c->n_flags++] = c->key_flags[c->n_key_flags++] = o->flags[i];
    if (c->link && !rdc)
        c->flags[c->n_flags++] = c->key_flags[c->n_key_flags++] = "-rdc=true";
    if (c->link) /* a linked image's key is never a one-source compile's */
        c->key_flags[c->n_key_flags++] = "--cubincache-device-link";
    /* the sources are absolute: only a flag can make the cwd matter */
    c->cwd_keyed = cbc_nv_names_relative(c->flags, c->n_flags, NULL, NULL);
    return CBC_OK;
}

/* One unit per (source, target), source-major; each unit's file names its
 * source's place, so units of one target never share a staging name. */
static enum cbc_status make_units(struct ctx *c)
{
    c->units = calloc(c->n_sources * c->n, sizeof *c->units);
    if (!c->units)
        return cbc_err_oom(c->err);
    for (size_t s = 0; s < c->n_sources; s++)
        for (size_t i = 0; i < c->n; i++) {
            struct tstate *u = &c->units[c->n_units++];
            u->src = s;
            u->t = c->ts[i].t;
            snprintf(u->name, sizeof u->name, "%s", c->ts[i].name);
            u->file = cbc_asprintf("unit%zu.%s.cubin", s, c->ts[i].name);
            if (!u->file)
                return cbc_err_oom(c->err);
        }
    /* the device runtime nvcc -dlink pulls in when a unit uses it */
    const char *rel[] = {"lib64/libcudadevrt.a", "targets/x86_64-linux/lib/libcudadevrt.a",
                         "targets/sbsa-linux/lib/libcudadevrt.a"};
    for (size_t k = 0; k < CBC_ARRAY_LEN(rel) && !c->devrt.path && c->tc.top; k++) {
        char *p = cbc_path_join(c->tc.top, rel[k]);
        if (p && cbc_is_file(p))
            c->devrt.path = p;
        else
            free(p);
    }
    if (c->devrt.path)
        return cbc_filememo_hash(c->memo, c->devrt.path, NULL, NULL, 0, &c->devrt.hash, NULL,
                                 c->err);
    return CBC_OK;
}

/* --depfile must not name a file the build reads or writes: it would be
 * overwritten with a list of paths. */
static enum cbc_status check_depfile(struct ctx *c)
{
    const char *d = c->o->depfile;
    if (!d)
        return CBC_OK;
    const char *what = NULL;
    char *mpath = cbc_asprintf("%s/%s.manifest.json", c->out_dir, c->name);
    if (!mpath)
        return cbc_err_oom(c->err);
    for (size_t i = 0; !what && i < c->n_sources; i++)
        if (same_file(d, c->sources[i]))
            what = "a source";
    else if (same_file(d, mpath))
        what = "the bundle's manifest";
    for (size_t i = 0; !what && i < c->n; i++) {
        char *p = cbc_path_join(c->out_dir, c->ts[i].file);
        if (p && same_file(d, p))
            what = "one of the bundle's images";
        free(p);
    }
    free(mpath);
    if (!what)
        return CBC_OK;
    cbc_err_set(c->err, CBC_E_USAGE, "--depfile '%s' is %s; it would be overwritten", d, what);
    cbc_err_hint(c->err, "name a file of its own, e.g. --depfile %s/%s.d", c->out_dir, c->name);
    return CBC_E_USAGE;
}

static enum cbc_status prepare(struct ctx *c)
{
    const struct cbc_build_opts *o = c->o;
    struct cbc_err *err = c->err;
    if (!o->source || !*o->source)
        return cbc_err_set(err, CBC_E_USAGE, "no source file given");
    const char *const one[1] = {o->source};
    const char *const *srcs = o->n_sources ? (const char *const *)o->sources : one;
    size_t nsrc = o->n_sources ? o->n_sources : 1;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return cbc_err_set(err, CBC_E_IO, "cannot read the working directory: %s",
                           strerror(errno));
    c->cwd = cbc_strdup(cwd);
    c->source = cbc_path_abs(o->source);
    c->out_dir = cbc_strdup(o->out_dir && *o->out_dir ? o->out_dir : ".");
    /* an out dir spelled NAME.bundle names the bundle (and is the depfile's target) */
    c->dir_name = cbc_bundle_dir_name(c->out_dir);
    c->name = o->name && *o->name ? cbc_strdup(o->name)
              : c->dir_name       ? cbc_strdup(c->dir_name)
                                  : cbc_path_stem(o->source);
    c->memo = cbc_filememo_new();
    if (!c->cwd || !c->source || !c->out_dir || !c->name || !c->memo)
        return cbc_err_oom(err);
    if (c->dir_name && strcmp(c->dir_name, c->name) != 0) {
        cbc_err_set(err, CBC_E_USAGE, "--name '%s' but the out dir '%s' is spelled as bundle "
                    "'%s'", c->name, c->out_dir, c->dir_name);
        cbc_err_hint(err, "drop --name, or use --out-dir %s.bundle", c->name);
        return CBC_E_USAGE;
    }
    if (!cbc_name_valid(c->name)) {
        cbc_err_set(err, CBC_E_USAGE, "%s '%s' is not a bundle name", o->name && *o->name
                    ? "--name" : "the source's stem", c->name);
        cbc_err_hint(err, "use 1 to %d letters, digits, '_', '.', '+' or '-', starting with a "
                     "letter, digit or '_'%s", CBC_NAME_MAX, o->name && *o->name ? ""
                     : ", with --name");
        return CBC_E_USAGE;
    }
    c->sources = calloc(nsrc, sizeof *c->sources);
    c->source_hashes = calloc(nsrc, sizeof *c->source_hashes);
    if (!c->sources || !c->source_hashes)
        return cbc_err_oom(err);
    for (size_t i = 0; i < nsrc; i++) {
        char *abs = i ? cbc_path_abs(srcs[i]) : cbc_strdup(c->source);
        if (!abs)
            return cbc_err_oom(err);
        for (size_t k = 0; k < c->n_sources; k++)
            if (!strcmp(c->sources[k], abs)) {
                free(abs);
                return cbc_err_set(err, CBC_E_USAGE, "source '%s' is given twice", srcs[i]);
            }
        c->sources[c->n_sources++] = abs;
        if (!cbc_is_file(abs)) {
            cbc_err_set(err, CBC_E_NOT_FOUND, "source '%s' does not exist or is not a file",
                        srcs[i]);
            cbc_err_hint(err, "check the path; it is taken relative to '%s'", c->cwd);
            return CBC_E_NOT_FOUND;
        }
    }
    enum cbc_status st = check_flags(c);
    if (st == CBC_OK)
        st = link_flags(c);
    if (st != CBC_OK)
        return st;
    c->nvcc = cbc_nvcc_find(o->nvcc, err);
    if (!c->nvcc)
        return CBC_E_NVCC;
    if (!o->no_cache) {
        char *root = cbc_store_default_root(o->cache_dir);
        struct cbc_err e = {0};
        if (cbc_store_open(root, &c->store, &e) != CBC_OK) {
            say(c, CBC_MSG_WARNING, "%s; compiling without the cache", e.msg);
            c->store = NULL;
        }
        free(root);
        if (c->store) {
            enum cbc_status rs = cbc_store_attach_default_remote(c->store, o->remote, o->msg,
                                                                 o->msg_ctx, err);
            if (rs != CBC_OK)
                return rs;
        }
    }
    c->base = cbc_cache_base(c->store, c->source, o->msg, o->msg_ctx);
    st = cbc_cache_init(&c->cache, c->store, c->memo, c->base, c->cwd, o->msg, o->msg_ctx, err);
    if (st != CBC_OK)
        return st;
    struct cbc_record_cache tools = c->store ? cbc_store_tools_cache(c->store)
                                             : (struct cbc_record_cache){0};
    st = cbc_toolchain_identify(c->nvcc, c->ccbin, c->store ? &tools : NULL, &c->tc, err);
    if (st != CBC_OK)
        return st;
    cbc_key_env_read(c->tc.profile_env, c->tc.n_profile_env, &c->env);
    c->compute_cap = getenv("CUDA_COMPUTE_CAP");
    st = cbc_build_arch(&c->tc, o->arch, &c->arch, err);
    if (st != CBC_OK)
        return st;
    size_t n = c->arch.n;
    struct cbc_target ptx = {0};
    if (o->ptx) {
        unsigned hi = 0;
        for (size_t i = 0; i < c->arch.n; i++)
            hi = c->arch.targets[i].arch > hi ? c->arch.targets[i].arch : hi;
        ptx = (struct cbc_target){CBC_KIND_PTX, CBC_VARIANT_NONE, (uint16_t)hi};
        for (size_t i = 0; i < c->arch.n; i++)
            if (cbc_target_eq(&c->arch.targets[i], &ptx))
                ptx.kind = 0;
        if (ptx.kind)
            n++;
    }
    c->ts = calloc(n, sizeof *c->ts);
    if (!c->ts)
        return cbc_err_oom(err);
    for (size_t i = 0; i < n; i++) {
        struct tstate *t = &c->ts[c->n++];
        t->t = i < c->arch.n ? c->arch.targets[i] : ptx;
        cbc_target_name(&t->t, t->name);
        t->file = cbc_bundle_file(c->name, &t->t);
        if (!t->file)
            return cbc_err_oom(err);
        if (c->link && t->t.kind == CBC_KIND_PTX) {
            cbc_err_set(err, CBC_E_USAGE, "target %s: a device-linked bundle holds linked SASS "
                        "only; PTX of relocatable code cannot be loaded", t->name);
            cbc_err_hint(err, "drop %s from --arch (and --ptx), or build without -rdc from one "
                         "source", t->name);
            return CBC_E_USAGE;
        }
    }
    if (c->link && (st = make_units(c)) != CBC_OK)
        return st;
    st = check_depfile(c);
    for (size_t i = 0; st == CBC_OK && i < c->n_sources; i++)
        st = cbc_filememo_hash(c->memo, c->sources[i], NULL, NULL, 0, &c->source_hashes[i],
                               i ? NULL : &c->source_stamp, err);
    if (st == CBC_OK)
        c->source_hash = c->source_hashes[0];
    return st;
}

static void explain_arch(struct ctx *c)
{
    char list[512] = "";
    size_t off = 0;
    for (size_t i = 0; i < c->n && off < sizeof list; i++)
        off += (size_t)snprintf(list + off, sizeof list - off, "%s%s", i ? " " : "", c->ts[i].name);
    say(c, CBC_MSG_EXPLAIN, "arch '%s' -> %s (rule: %s; %s)", c->arch.spec, list,
        cbc_arch_rule_name(c->arch.rule), c->arch.detail ? c->arch.detail : "as written");
    if (!c->o->explain)
        return;
    if (previous(c, NULL, 0) && c->prev.arch_detail &&
        (!c->arch.detail || strcmp(c->prev.arch_detail, c->arch.detail) != 0)) {
        char plist[512] = "";
        off = 0;
        for (size_t i = 0; i < c->prev.n && off < sizeof plist; i++) {
            char nm[CBC_TARGET_NAME_MAX];
            off += (size_t)snprintf(plist + off, sizeof plist - off, "%s%s", i ? " " : "",
                                    cbc_target_name(&c->prev.entries[i].target, nm));
        }
        say(c, CBC_MSG_EXPLAIN, "the previous build had %s (rule: %s; %s)", plist,
            c->prev.arch_rule ? c->prev.arch_rule : "?", c->prev.arch_detail);
    }
}

static void release_targets(struct tstate *ts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct tstate *t = &ts[i];
        if (t->pid > 0) {
            kill(t->pid, SIGTERM);
            cbc_proc_wait(t->pid);
        }
        if (t->tmp_out)
            unlink(t->tmp_out);
        if (t->tmp_dep)
            unlink(t->tmp_dep);
        if (t->tmp_log)
            unlink(t->tmp_log);
        if (t->tmp_trace)
            unlink(t->tmp_trace);
        free(t->tmp_out);
        free(t->tmp_dep);
        free(t->tmp_log);
        free(t->tmp_trace);
        free(t->keep);
        free_lookups(t->lookups, t->n_lookups, true);
        free(t->file);
        free(t->data);
        free_deps(t);
    }
    free(ts);
}

static void cleanup(struct ctx *c)
{
    release_targets(c->ts, c->n);
    release_targets(c->units, c->n_units);
    cbc_cache_release(&c->cache);
    for (size_t i = 0; i < c->n_sources; i++)
        free(c->sources[i]);
    free(c->sources);
    free(c->source_hashes);
    free(c->flags);
    free(c->key_flags);
    free(c->devrt.path);
    if (c->stage_open)
        cbc_stage_release(&c->stage, false);
    if (c->have_prev)
        cbc_manifest_release(&c->prev);
    cbc_arch_choice_release(&c->arch);
    cbc_toolchain_release(&c->tc);
    cbc_filememo_free(c->memo);
    cbc_store_close(c->store);
    if (c->nvtmp[0])
        cbc_tmpdir_remove(c->nvtmp);
    free(c->source);
    free(c->cwd);
    free(c->base);
    free(c->out_dir);
    free(c->dir_name);
    free(c->name);
    free(c->nvcc);
    free(c->ccbin);
}

enum cbc_status cbc_build_arch(const struct cbc_toolchain *tc, const char *spec,
                               struct cbc_arch_choice *out, struct cbc_err *err)
{
    struct cbc_arch_env aenv = {tc->supported, tc->n_supported, tc->label,
                                getenv("CUDA_COMPUTE_CAP"), NULL};
    return cbc_arch_resolve(spec ? spec : "auto", &aenv, out, err);
}

/* ---- compile once per fleet ------------------------------------------------ */

/* How long a lease holds (above a build's usual compile time: one that runs
 * longer is compiled twice, never wrongly) and how long a waiter trusts its
 * holder: a builder that died holds the others up this long at most. */
#define LEASE_TTL_MS 180000u
#define LEASE_POLL_MS 150u

/* Before compiling its misses, a builder sharing a remote takes one lease
 * on the set of units it builds (the hash of their direct keys: the eight
 * builders of one kernel for one arch list share it). Another builder
 * holding it is compiling the same units: this one waits for it, polling
 * the lease (one small SET NX each, no remote miss counted), then looks its
 * misses up again, uses what hits and compiles the rest. Bounded by
 * LEASE_TTL_MS; with no remote, or one without leases, nothing waits. One
 * lease for the whole set, never one per unit: two builders each holding a
 * unit the other waits for would wait out the bound. The lease is released
 * by fleet_release, after the commits the waiters' lookups read. */
static enum cbc_status fleet_wait(struct ctx *c, struct tstate *ts, size_t nt,
                                  struct cbc_store_lease *lease)
{
    size_t misses = 0;
    for (size_t i = 0; i < nt; i++)
        misses += ts[i].state == T_MISS;
    if (!misses || !c->store)
        return CBC_OK;
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        return cbc_err_oom(c->err);
    cbc_hasher_str(h, 1, "cubincache build lease");
    for (size_t i = 0; i < nt; i++)
        cbc_hasher_hash(h, 2, &ts[i].u.dt.direct_key);
    struct cbc_hash key;
    cbc_hasher_digest(h, &key);
    cbc_hasher_free(h);
    enum cbc_lease_state ls = cbc_store_remote_lease_acquire(c->store, &key, LEASE_TTL_MS, lease);
    if (ls != CBC_LEASE_HELD)
        return CBC_OK; /* ours (compile, then release), or no leases to be had */
    say(c, CBC_MSG_NOTE, "another builder is compiling these targets; waiting for its results "
        "(at most %u s)", LEASE_TTL_MS / 1000);
    const uint64_t until = cbc_now_ns() + (uint64_t)LEASE_TTL_MS * 1000000u;
    unsigned jitter = (unsigned)getpid();
    while (ls == CBC_LEASE_HELD && cbc_now_ns() < until) {
        jitter = jitter * 1103515245u + 12345u;
        struct timespec pause = {0, (long)(LEASE_POLL_MS + (jitter >> 16) % 100u) * 1000000L};
        nanosleep(&pause, NULL);
        ls = cbc_store_remote_lease_acquire(c->store, &key, LEASE_TTL_MS, lease);
    }
    /* released (its results are there), expired, the remote gone, or the
     * bound: what hits now is used, the rest compiled here */
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < nt && st == CBC_OK; i++)
        if (ts[i].state == T_MISS) {
            free_deps(&ts[i]); /* a miss holds none; the lookup sets them on a hit */
            st = lookup(c, &ts[i]);
        }
    return st;
}

static void fleet_release(struct ctx *c, struct cbc_store_lease *lease)
{
    if (c->store)
        cbc_store_remote_lease_release(c->store, lease);
}

static enum cbc_status compile_units(struct ctx *c, struct tstate *ts, size_t nt, size_t *hits,
                                     size_t *nmiss, size_t *dropped);

/* Phases 2-4 for a set of units: lookup, the misses compiled (at most
 * `jobs` at once), their results verified and stored. */
static enum cbc_status run_units(struct ctx *c, struct tstate *ts, size_t nt, size_t *hits,
                                 size_t *nmiss, size_t *dropped)
{
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < nt && st == CBC_OK; i++)
        st = lookup(c, &ts[i]);
    if (st == CBC_OK && c->cwd_keyed)
        st = preprocessed(c, ts, nt, c->o->jobs > 0 ? c->o->jobs : 4);
    struct cbc_store_lease lease = {0};
    if (st == CBC_OK)
        st = fleet_wait(c, ts, nt, &lease);
    if (st == CBC_OK)
        st = compile_units(c, ts, nt, hits, nmiss, dropped);
    fleet_release(c, &lease); /* after the commits: a waiter's lookup then hits */
    return st;
}

/* Phases 3-4 for units looked up: the hits counted and explained, the
 * misses compiled, verified and stored. */
static enum cbc_status compile_units(struct ctx *c, struct tstate *ts, size_t nt, size_t *hits,
                                     size_t *nmiss, size_t *dropped)
{
    enum cbc_status st = CBC_OK;
    size_t misses = 0;
    for (size_t i = 0; i < nt; i++) {
        struct tstate *t = &ts[i];
        const char *of = c->link ? cbc_path_base(c->sources[t->src]) : NULL;
        if (t->state == T_HIT) {
            (*hits)++;
            if (t->u.remote)
                say(c, CBC_MSG_EXPLAIN, "%s%s%s: remote hit (%s)", of ? of : "", of ? " " : "",
                    t->name, cbc_store_remote_name(c->store));
            else
                say(c, CBC_MSG_EXPLAIN, "%s%s%s: hit%s", of ? of : "", of ? " " : "", t->name,
                    t->preprocessed ? " (compiled in another directory; found through its "
                                      "preprocessing)" : "");
        } else {
            if (c->o->explain && !c->link) {
                char why[1024];
                explain_miss(c, t, why, sizeof why);
                say(c, CBC_MSG_EXPLAIN, "%s: miss: %s", t->name, why);
            } else if (c->link) {
                say(c, CBC_MSG_EXPLAIN, "%s %s: miss", of, t->name);
            }
            misses++;
        }
        *dropped += t->u.state == CBC_CACHE_DROPPED;
    }
    *nmiss = misses;
    if (!misses)
        return CBC_OK;
    st = open_stage(c);
    if (st == CBC_OK)
        st = cbc_stage_begin(&c->stage, c->err);
    if (st != CBC_OK)
        return st;
    uint64_t started = cbc_now_ns();
    st = compile_misses(c, ts, nt, &started);
    size_t failed = 0;
    for (size_t i = 0; i < nt; i++) {
        struct tstate *t = &ts[i];
        if (t->state != T_MISS || !t->tmp_log)
            continue;
        show_log(c, t);
        if (t->exit_code != 0)
            failed++;
    }
    if (st == CBC_OK && failed) {
        struct tstate *first = NULL;
        for (size_t i = 0; i < nt && !first; i++)
            if (ts[i].state == T_MISS && ts[i].exit_code != 0)
                first = &ts[i];
        /* a full disk makes nvcc fail too: say that, not "compile error" */
        if (disk_full(c, first))
            st = CBC_E_IO;
        else
            st = cbc_err_set(c->err, CBC_E_COMPILE, "nvcc failed for %zu of %zu targets of '%s' "
                             "(first: %s); nothing was written or cached for them", failed,
                             misses, c->o->n_sources ? c->o->sources[first->src] : c->o->source,
                             first->name);
    }
    for (size_t i = 0; i < nt && st == CBC_OK; i++)
        if (ts[i].state == T_MISS)
            st = finish_compile(c, &ts[i], started);
    return st;
}

/* A linked image's dependencies: every other source, every file a unit of
 * its target read, the device runtime; each path once. */
static enum cbc_status link_deps(struct ctx *c, struct tstate *b, struct tstate **u)
{
    size_t cap = c->n_sources + 1;
    for (size_t s = 0; s < c->n_sources; s++)
        cap += u[s]->n_deps;
    b->deps = calloc(cap, sizeof *b->deps);
    if (!b->deps)
        return cbc_err_oom(c->err);
    b->deps_borrowed = true; /* paths belong to the units, the sources and devrt */
    for (size_t s = 0; s < c->n_sources; s++) {
        if (s > 0) /* the first is the key's source, not a dependency */
            b->deps[b->n_deps++] = (struct cbc_dep){c->sources[s], c->source_hashes[s]};
        for (size_t k = 0; k < u[s]->n_deps; k++)
            if (strcmp(u[s]->deps[k].path, c->sources[0]) != 0)
                b->deps[b->n_deps++] = u[s]->deps[k];
    }
    if (c->devrt.path)
        b->deps[b->n_deps++] = c->devrt;
    b->n_deps = sort_unique_deps(b->deps, b->n_deps);
    /* and every unit's lookups, for the manifest (copied: units and link
     * targets are released apart) */
    size_t nl = 0;
    for (size_t s = 0; s < c->n_sources; s++)
        nl += u[s]->n_lookups;
    if (!nl)
        return CBC_OK;
    if (!(b->lookups = calloc(nl, sizeof *b->lookups)))
        return cbc_err_oom(c->err);
    for (size_t s = 0; s < c->n_sources; s++)
        for (size_t d = 0; d < u[s]->n_lookups; d++) {
            const struct cbc_manifest_lookup *from = &u[s]->lookups[d];
            struct cbc_manifest_lookup *to = &b->lookups[b->n_lookups++];
            to->dir = cbc_strdup(from->dir);
            to->names = calloc(from->n ? from->n : 1, sizeof *to->names);
            if (!to->dir || !to->names)
                return cbc_err_oom(c->err);
            for (size_t k = 0; k < from->n; k++)
                if (!(to->names[to->n++] = cbc_strdup(from->names[k])))
                    return cbc_err_oom(c->err);
        }
    return CBC_OK;
}

/* Links the units of target b with nvcc -dlink -cubin into b->data. */
static enum cbc_status run_link(struct ctx *c, struct tstate *b, struct tstate **u)
{
    enum cbc_status st = open_stage(c);
    if (st == CBC_OK)
        st = cbc_stage_begin(&c->stage, c->err);
    if (st != CBC_OK)
        return st;
    char **in = calloc(c->n_sources, sizeof *in);
    char **argv = calloc(c->n_flags + c->n_sources + 16, sizeof *argv);
    b->tmp_out = cbc_asprintf("%s/linked.%s.cubin", c->stage.path, b->name);
    b->tmp_log = cbc_asprintf("%s/linked.%s.log", c->stage.path, b->name);
    if (!in || !argv || !b->tmp_out || !b->tmp_log)
        st = cbc_err_oom(c->err);
    for (size_t s = 0; st == CBC_OK && s < c->n_sources; s++) {
        in[s] = cbc_asprintf("%s/in.%s", c->stage.path, u[s]->file);
        st = in[s] ? cbc_file_write_atomic(in[s], u[s]->data, u[s]->len, 0600, c->err)
                   : cbc_err_oom(c->err);
    }
    char gencode[96];
    const char *v = cbc_variant_suffix(b->t.variant);
    snprintf(gencode, sizeof gencode, "arch=compute_%u%s,code=sm_%u%s", (unsigned)b->t.arch, v,
             (unsigned)b->t.arch, v);
    size_t n = 0;
    if (st == CBC_OK) {
        argv[n++] = c->nvcc;
        for (size_t i = 0; i < c->n_flags; i++)
            argv[n++] = c->flags[i];
        argv[n++] = "-dlink";
        argv[n++] = "-cubin";
        argv[n++] = "-gencode";
        argv[n++] = gencode;
        for (size_t s = 0; s < c->n_sources; s++)
            argv[n++] = in[s];
        argv[n++] = "-o";
        argv[n++] = b->tmp_out;
        st = cbc_proc_spawn(argv, b->tmp_log, b->tmp_log, &b->pid, c->err);
    }
    int code = st == CBC_OK ? cbc_proc_wait(b->pid) : 0;
    b->pid = 0;
    if (st == CBC_OK && code != 0) {
        show_log(c, b);
        st = cbc_err_set(c->err, CBC_E_COMPILE, "the device link for %s of '%s' failed (nvcc "
                         "-dlink exited %d); nothing was written or cached for it", b->name,
                         c->name, code);
        cbc_err_hint(c->err, "every device function a source calls must be defined in one of "
                     "the bundle's sources");
    }
    for (size_t s = 0; in && s < c->n_sources; s++) {
        if (in[s])
            unlink(in[s]);
        free(in[s]);
    }
    free(in);
    free(argv);
    struct cbc_err e = {0};
    if (st == CBC_OK)
        st = cbc_file_read(b->tmp_out, &b->data, &b->len, &e);
    if (st == CBC_OK)
        st = cbc_binfmt_verify_target(b->data, b->len, &b->t, b->file, NULL, &e);
    struct cbc_cubin_info ci;
    if (st == CBC_OK && cbc_cubin_parse(b->data, b->len, b->file, &ci, &e) == CBC_OK) {
        if (cbc_cubin_needs_dlink(&ci))
            st = cbc_err_set(&e, CBC_E_VERIFY, "it still references '%s'", ci.undefined[0]);
        cbc_cubin_info_release(&ci);
    }
    if (st != CBC_OK && c->err->status == CBC_OK) {
        cbc_err_set(c->err, CBC_E_COMPILE, "the device link for %s gave an unusable image: %s",
                    b->name, e.msg);
        st = CBC_E_COMPILE;
    }
    return st;
}

/* Whether a linked image names this tree: one of its units does (their
 * device code may use the path in a form the image's bytes do not show),
 * or its bytes do (cbc_cache_names_tree, any source's module id). */
static bool link_names_tree(const struct ctx *c, const struct tstate *b, struct tstate **u)
{
    for (size_t i = 0; i < c->n_sources; i++)
        if (u[i]->u.path_dependent ||
            cbc_cache_names_tree(&c->cache, c->sources[i], b->data, b->len))
            return true;
    return false;
}

/* Per target: the linked image from the store, else linked from its units
 * and stored. A target is a hit when no unit compiled and the store had
 * the link. */
static enum cbc_status link_targets(struct ctx *c, struct cbc_build_result *res)
{
    struct tstate **u = calloc(c->n_sources, sizeof *u);
    if (!u)
        return cbc_err_oom(c->err);
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < c->n && st == CBC_OK; i++) {
        struct tstate *b = &c->ts[i];
        bool units_hit = true;
        for (size_t s = 0; s < c->n_sources; s++) {
            u[s] = &c->units[s * c->n + i];
            units_hit = units_hit && u[s]->state == T_HIT;
        }
        st = link_deps(c, b, u);
        if (st != CBC_OK)
            break;
        struct cbc_key_now now = build_now(c, 0, true);
        struct cbc_key_inputs in;
        cbc_key_inputs_make(&now, &b->t, b->deps, b->n_deps, &in);
        cbc_key_result(&in, &b->u.result);
        char what[CBC_TARGET_NAME_MAX + 16];
        snprintf(what, sizeof what, "link of %s", b->name);
        /* a link of units kept per tree is kept per tree too (link_names_tree) */
        st = cbc_cache_get_any(&c->cache, &b->u, &b->t, what, c->err);
        if (st != CBC_OK)
            break;
        if (b->u.state == CBC_CACHE_HIT) {
            b->state = units_hit ? T_HIT : T_MISS;
            b->data = b->u.data, b->len = b->u.len, b->u.data = NULL;
            say(c, CBC_MSG_EXPLAIN, "%s: link: hit", b->name);
        } else {
            b->state = T_MISS;
            say(c, CBC_MSG_EXPLAIN, "%s: link: miss", b->name);
            st = run_link(c, b, u);
            enum cbc_commit outcome;
            if (st == CBC_OK) { /* keyed on the units' files, which their records vouch for */
                b->u.path_dependent = link_names_tree(c, b, u);
                st = cbc_cache_commit(&c->cache, &b->u, NULL, &b->t, b->data, b->len, &outcome,
                                      NULL, 0, c->err);
            }
        }
        if (b->state == T_HIT)
            res->hits++;
        else
            res->misses++;
    }
    free(u);
    return st;
}

enum cbc_status cbc_build_run(const struct cbc_build_opts *o, struct cbc_build_result *res,
                              struct cbc_err *err)
{
    memset(res, 0, sizeof *res);
    struct ctx c = {.o = o, .err = err};
    enum cbc_status st = prepare(&c);
    if (st != CBC_OK)
        goto out;
    res->n_targets = c.n;
    res->manifest_path = cbc_asprintf("%s/%s.manifest.json", c.out_dir, c.name);
    if (!res->manifest_path) {
        st = cbc_err_oom(err);
        goto out;
    }
    c.manifest_path = res->manifest_path;
    explain_arch(&c);
    if (c.link) {
        size_t hits = 0, misses = 0;
        st = run_units(&c, c.units, c.n_units, &hits, &misses, &res->dropped);
        if (st == CBC_OK)
            st = link_targets(&c, res);
    } else {
        st = run_units(&c, c.ts, c.n, &res->hits, &res->misses, &res->dropped);
    }
    if (st != CBC_OK)
        goto out;
    st = write_outputs(&c, res);
out:
    if (c.store)
        cbc_store_count(c.store, res->hits, res->misses, res->dropped);
    cleanup(&c);
    return st;
}

void cbc_build_result_release(struct cbc_build_result *res)
{
    free(res->manifest_path);
    memset(res, 0, sizeof *res);
}
