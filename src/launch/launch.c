/* launch.c: the compiler launcher (contract in launch.h).
 *
 * A hit: parse the command (nvargs.c), key it, find its result through
 * direct mode (src/direct: the files it read last time, stat-checked),
 * verify the output's device code, write the output and the depfile,
 * replay nvcc's stdout and stderr. No nvcc, no preprocessor.
 *
 * A miss: run nvcc as given, asking it for a depfile when the build did
 * not (-MD -MF into a private directory: nvcc writes it from the
 * preprocessing it does anyway, so finding the dependencies costs no
 * extra pass), then verify, store the result and record the files read.
 * A file that changes while nvcc runs makes the result uncacheable, as in
 * `build`.
 *
 * Every compile runs traced (src/trace), its temporaries in a private
 * TMPDIR, so the record holds the places it looked for headers and found
 * nothing, and the files it wrote besides its output (a host compiler's
 * -MF, -fstack-usage or --coverage files) are stored with the result and
 * written again by a hit. Outputs are written as nvcc writes them
 * (cbc_output_write: through a device or FIFO, through a symbolic link).
 *
 * A stored result is one store entry (kind CBC_STORE_RESULT_KIND) holding
 * a result container (src/cache/cache.h) whose members are "output",
 * "depfile" (the body after "target : "), "stdout", "stderr" and
 * "side:<absolute path>" for each file the compile wrote beside its output
 * (at most CBC_LAUNCH_MAX_SIDE of them).
 */
#include "launch.h"

#include "cache.h"
#include "cudadrv.h"
#include "key.h"
#include "nvargs.h"
#include "split.h"
#include "store.h"
#include "why.h"

#include <cubincache/binfmt.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CBC_LAUNCH_MAX_SIDE 16     /* side files stored with one result */
#define CBC_LAUNCH_SIDE_MAX (64u << 20) /* the largest side file stored */
#define SIDE_PREFIX "side:"

/* ---- what the device code of an output must be ----------------------------- */

static bool want_code(const struct cbc_nv_args *a, const struct cbc_target *t)
{
    for (size_t i = 0; i < a->n_codes; i++)
        if (cbc_target_eq(&a->codes[i], t))
            return true;
    return false;
}

/* Every image of a fatbin is code for its label; sets the ones found. */
static bool check_fatbin(const uint8_t *d, size_t len, const char *name, struct cbc_target *seen,
                         size_t *n_seen, size_t cap, char *why, size_t why_len)
{
    struct cbc_fatbin fb;
    struct cbc_err e = {0};
    if (cbc_fatbin_parse(d, len, 0, name, &fb, &e) != CBC_OK) {
        cbc_fmt(why, why_len, "%s", e.msg);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; ok && i < fb.n; i++) {
        const struct cbc_fatbin_entry *en = &fb.entries[i];
        if (en->kind != CBC_FATBIN_ELF && en->kind != CBC_FATBIN_PTX)
            continue; /* LTO IR: nothing to check it against */
        struct cbc_target t = {en->kind == CBC_FATBIN_ELF ? CBC_KIND_SASS : CBC_KIND_PTX,
                               en->variant, (uint16_t)en->arch};
        uint8_t *img = NULL;
        size_t n = 0;
        ok = cbc_fatbin_entry_payload(en, name, &img, &n, &e) == CBC_OK &&
             cbc_binfmt_verify_target(img, n, &t, name, NULL, &e) == CBC_OK;
        free(img);
        if (!ok)
            cbc_fmt(why, why_len, "%s", e.msg);
        else if (*n_seen < cap)
            seen[(*n_seen)++] = t;
    }
    cbc_fatbin_release(&fb);
    return ok;
}

/* The output's device code: each image what its label says, and (when the
 * command says plainly what it asked for) every asked-for target there. */
static bool verify_output(const struct cbc_nv_args *a, const uint8_t *d, size_t len,
                          char *why, size_t why_len)
{
    const char *name = a->output;
    struct cbc_target seen[CBC_NV_MAX_CODES * 2];
    size_t n_seen = 0;
    struct cbc_err e = {0};
    enum cbc_file_type type = cbc_binfmt_detect(d, len);
    if (a->mode == CBC_NV_CUBIN || a->mode == CBC_NV_PTX) {
        bool cubin = a->mode == CBC_NV_CUBIN;
        if (type != (cubin ? CBC_FILE_CUBIN : CBC_FILE_PTX)) {
            snprintf(why, why_len, "'%s' is not %s", name, cubin ? "a cubin" : "PTX");
            return false;
        }
        struct cbc_target t;
        if (cubin) {
            struct cbc_cubin_info ci;
            if (cbc_cubin_parse_target(d, len, name, &ci, &e) != CBC_OK) {
                cbc_fmt(why, why_len, "%s", e.msg);
                return false;
            }
            t = cbc_cubin_target(&ci);
            cbc_cubin_info_release(&ci);
        } else {
            struct cbc_ptx_info pi;
            if (cbc_ptx_header(d, len, name, &pi, &e) != CBC_OK) {
                cbc_fmt(why, why_len, "%s", e.msg);
                return false;
            }
            t = cbc_ptx_target(&pi);
        }
        seen[n_seen++] = t;
    } else if (a->mode == CBC_NV_FATBIN) {
        if (!check_fatbin(d, len, name, seen, &n_seen, CBC_ARRAY_LEN(seen), why, why_len))
            return false;
    } else {
        struct cbc_host_elf h;
        if (cbc_host_elf_parse(d, len, name, &h, &e) != CBC_OK) {
            cbc_fmt(why, why_len, "%s", e.msg);
            return false;
        }
        const struct cbc_host_section *secs[2] = {&h.nv_fatbin, &h.nv_relfatbin};
        for (int s = 0; s < 2; s++)
            if (secs[s]->present &&
                !check_fatbin(d + secs[s]->offset, (size_t)secs[s]->size, name, seen, &n_seen,
                              CBC_ARRAY_LEN(seen), why, why_len))
                return false;
    }
    if (!a->codes_known)
        return true;
    for (size_t i = 0; i < a->n_codes; i++) {
        const struct cbc_target *t = &a->codes[i];
        /* what each mode can hold: -cubin only SASS, -ptx only PTX, a
         * device link only the linked SASS */
        if ((a->mode == CBC_NV_CUBIN || a->mode == CBC_NV_DLINK) && t->kind == CBC_KIND_PTX)
            continue;
        if (a->mode == CBC_NV_PTX && t->kind == CBC_KIND_SASS)
            continue;
        bool found = false;
        for (size_t k = 0; k < n_seen && !found; k++)
            found = cbc_target_eq(&seen[k], t);
        if (!found) {
            char nm[CBC_TARGET_NAME_MAX];
            snprintf(why, why_len, "'%s' has no %s, which the command asked for", name,
                     cbc_target_name(t, nm));
            return false;
        }
    }
    for (size_t k = 0; k < n_seen; k++)
        if (!want_code(a, &seen[k]) && a->mode != CBC_NV_DLINK) {
            char nm[CBC_TARGET_NAME_MAX];
            snprintf(why, why_len, "'%s' holds %s, which the command did not ask for", name,
                     cbc_target_name(&seen[k], nm));
            return false;
        }
    return true;
}

/* ---- the run ----------------------------------------------------------------- */

struct ctx {
    const struct cbc_launch_opts *o;
    struct cbc_launch_result *r;
    struct cbc_err *err;
    struct cbc_nv_args a;
    char *cwd, *source;
    struct cbc_hash source_hash;
    char **flags; /* the arguments as keyed */
    size_t n_flags;
    struct cbc_env env;
    struct cbc_toolchain tc;
    bool have_tc;
    struct cbc_store *store;
    struct cbc_filememo *memo;
    struct cbc_cache cache;
    struct cbc_cache_unit u;
    char tmp[PATH_MAX]; /* the private directory of a miss */
    char native[256];   /* -arch=native: the GPUs it means here ("sm_90,sm_80") */
    char *base;         /* the base directory (key.h), or NULL */
    bool cwd_keyed;     /* the command names a path relative to the working directory */
    bool device_names_tree; /* the compile's device code may name this tree in a form its
                               output's bytes do not show (compile(): split.h, cache.h) */
};

#define say(c, kind, ...) cbc_say((c)->o->msg, (c)->o->msg_ctx, (kind), __VA_ARGS__)

static void set_why(struct ctx *c, const char *fmt, ...) CBC_PRINTF(2, 3);
static void set_why(struct ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->r->why, sizeof c->r->why, fmt, ap);
    va_end(ap);
}

/* Whether the command asks for -arch=native, on its command line or
 * through NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS. */
static bool wants_native(const struct cbc_nv_args *a)
{
    const char *env[] = {getenv("NVCC_PREPEND_FLAGS"), getenv("NVCC_APPEND_FLAGS")};
    for (size_t i = 0; i < CBC_ARRAY_LEN(env); i++)
        if (env[i] && strstr(env[i], "native"))
            return true;
    return a->native;
}

/* What -arch=native means on this machine, as nvcc resolves it: the
 * compute capability of every GPU the driver shows this process (so
 * CUDA_VISIBLE_DEVICES counts, as it does for nvcc). False (why set)
 * when there is none to ask: nvcc then runs as it is. */
static bool resolve_native(struct ctx *c)
{
    struct cbc_device_info gpus[64];
    size_t n = 0;
    char why[200] = "";
    cbc_cuda_list_gpus(gpus, CBC_ARRAY_LEN(gpus), &n, why, sizeof why);
    if (n == 0) {
        set_why(c, "-arch=native, and no GPU to say which arch it means here (%s)",
                why[0] ? why : "none found");
        return false;
    }
    unsigned ccs[64];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned cc = (unsigned)(gpus[i].cc_major * 10 + gpus[i].cc_minor);
        size_t j = 0;
        while (j < k && ccs[j] < cc)
            j++;
        if (j < k && ccs[j] == cc)
            continue;
        memmove(&ccs[j + 1], &ccs[j], (k - j) * sizeof ccs[0]);
        ccs[j] = cc;
        k++;
    }
    size_t off = 0;
    for (size_t i = 0; i < k && off < sizeof c->native; i++)
        off += (size_t)snprintf(c->native + off, sizeof c->native - off, "%ssm_%u",
                                i ? "," : "", ccs[i]);
    return true;
}

/* The arguments as the key sees them: outputs and the depfile's target
 * left out (they are replayed, not keyed), inputs by placeholder (their
 * content is keyed), and what else decides the output: that this is the
 * launcher, and the working directory (-g objects record it). */
static bool skip_output(size_t i, void *a)
{
    return cbc_nv_is_output_arg(a, i);
}

static bool key_flags(struct ctx *c)
{
    c->flags = calloc(c->a.argc + 2, sizeof *c->flags);
    if (!c->flags)
        return false;
    /* the inputs as spelled (__FILE__ is what the command line says), by
     * content too; the working directory only in the direct key, and only
     * when the command names a path relative to it */
    c->flags[c->n_flags++] = cbc_strdup("--cubincache-launcher=2");
    if (c->native[0])
        c->flags[c->n_flags++] = cbc_asprintf("--cubincache-native=%s", c->native);
    for (size_t i = 0; i < c->a.argc; i++)
        if (!cbc_nv_is_output_arg(&c->a, i))
            c->flags[c->n_flags++] = cbc_strdup(c->a.argv[i]);
    c->cwd_keyed = cbc_nv_names_relative(c->a.argv, c->a.argc, skip_output, &c->a);
    c->u.has_sibling = c->cwd_keyed && c->a.mode != CBC_NV_DLINK;
    for (size_t i = 0; i < c->n_flags; i++)
        if (!c->flags[i])
            return false;
    return true;
}

static struct cbc_key_now key_now(const struct ctx *c)
{
    return (struct cbc_key_now){c->source,      &c->source_hash, c->tc.nvcc,
                                c->tc.version,  &c->tc.nvcc_id,  c->tc.host_cc,
                                &c->tc.host_id, c->flags,        c->n_flags,
                                &c->env,        c->cwd_keyed ? c->cwd : NULL, c->base};
}

static void keys(const struct ctx *c, const struct cbc_dep *deps, size_t n, struct cbc_hash *direct,
                 struct cbc_hash *result)
{
    struct cbc_key_now now = key_now(c);
    struct cbc_target t = cbc_store_result_target();
    struct cbc_key_inputs in;
    cbc_key_inputs_make(&now, &t, deps, n, &in);
    if (direct)
        cbc_key_direct(&in, direct);
    if (result)
        cbc_key_result(&in, result);
}

/* The direct key as another working directory has it (cache.h, sibling). */
static void sibling_key(const struct ctx *c, struct cbc_hash *out)
{
    struct cbc_key_now now = key_now(c);
    now.cwd = NULL;
    struct cbc_target t = cbc_store_result_target();
    struct cbc_key_inputs in;
    cbc_key_inputs_make(&now, &t, NULL, 0, &in);
    cbc_key_direct(&in, out);
}


/* The depfile as the build asked for it: nvcc's list of files under the
 * target this command names. */
static enum cbc_status write_depfile(struct ctx *c, const uint8_t *body, size_t n)
{
    const char *target = c->a.mt ? c->a.mt : c->a.output;
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, target);
    cbc_buf_puts(&b, " : ");
    cbc_base_expand(c->base, (const char *)body, n, &b); /* this tree's paths */
    enum cbc_status st = b.oom ? cbc_err_oom(c->err)
                               : cbc_output_write(c->a.depfile, b.p, b.len, c->err);
    cbc_buf_release(&b);
    return st;
}

/* Text stored with an entry (a depfile, nvcc's messages): the base
 * directory spelled "@BASE@", so another checkout gets its own paths. */
static bool add_text(struct ctx *c, struct cbc_result *res, const char *name, const void *text,
                     size_t n)
{
    struct cbc_buf b = {0};
    cbc_base_template(c->base, text, n, &b);
    bool ok = !b.oom && cbc_result_add(res, name, b.p ? b.p : "", b.len);
    cbc_buf_release(&b);
    return ok;
}

static char *expand_text(const struct ctx *c, const struct cbc_member *m)
{
    struct cbc_buf b = {0};
    cbc_base_expand(c->base, (const char *)m->data, m->len, &b);
    if (b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    return b.p ? cbc_buf_detach(&b) : cbc_strdup("");
}

static enum cbc_status serve(struct ctx *c, const struct cbc_result *res)
{
    const struct cbc_member *out = cbc_result_get(res, "output"),
                            *dep = cbc_result_get(res, "depfile"),
                            *so = cbc_result_get(res, "stdout"), *se = cbc_result_get(res, "stderr");
    enum cbc_status st = cbc_output_write(c->a.output, out->data, out->len, c->err);
    if (st == CBC_OK && c->a.md)
        st = write_depfile(c, dep->data, dep->len);
    for (size_t i = 0; st == CBC_OK && i < res->n; i++)
        if (!strncmp(res->m[i].name, SIDE_PREFIX, strlen(SIDE_PREFIX)))
            st = cbc_output_write(res->m[i].name + strlen(SIDE_PREFIX), res->m[i].data,
                                  res->m[i].len, c->err);
    if (st != CBC_OK)
        return st;
    c->r->outcome = CBC_LAUNCH_HIT;
    c->r->exit_code = 0;
    if (so && !(c->r->out = expand_text(c, so)))
        return cbc_err_oom(c->err);
    c->r->out_len = so ? strlen(c->r->out) : 0;
    if (se && !(c->r->errs = expand_text(c, se)))
        return cbc_err_oom(c->err);
    c->r->errs_len = se ? strlen(c->r->errs) : 0;
    return CBC_OK;
}

/* Whether a stored result is whole: an output, a depfile when the command
 * asks for one, and side files only at absolute paths. */
static bool result_whole(const struct ctx *c, const struct cbc_result *res)
{
    if (!cbc_result_get(res, "output") || (c->a.md && !cbc_result_get(res, "depfile")))
        return false;
    size_t sides = 0;
    for (size_t i = 0; i < res->n; i++)
        if (!strncmp(res->m[i].name, SIDE_PREFIX, strlen(SIDE_PREFIX)) &&
            (res->m[i].name[strlen(SIDE_PREFIX)] != '/' || ++sides > CBC_LAUNCH_MAX_SIDE))
            return false;
    return true;
}

/* Serves u's payload when it is a whole, verified result of this command. */
static enum cbc_status serve_unit(struct ctx *c, bool *hit)
{
    struct cbc_result res;
    bool good = cbc_result_decode(c->u.data, c->u.len, &res, NULL) == CBC_OK;
    free(c->u.data);
    c->u.data = NULL;
    good = good && result_whole(c, &res);
    char vwhy[512] = "";
    const struct cbc_member *out = good ? cbc_result_get(&res, "output") : NULL;
    enum cbc_status st = CBC_OK;
    if (good && !verify_output(&c->a, out->data, out->len, vwhy, sizeof vwhy)) {
        good = false;
        say(c, CBC_MSG_WARNING, "the cached '%s' failed verification (%s); compiling again",
            c->a.output, vwhy);
    }
    if (good) {
        st = serve(c, &res);
        *hit = st == CBC_OK;
    }
    cbc_result_release(&res);
    return st;
}

static enum cbc_status read_deps(struct ctx *c, const char *df, char **dep_text, size_t *dep_len,
                                 char ***paths, size_t *np, struct cbc_err *e);

/* A direct miss of a command compiled in another working directory: nvcc
 * -M lists the files the compile would read (the list its -MD writes),
 * and their result key may be stored (cbc_cache_lookup_preprocessed). */
static enum cbc_status preprocessed(struct ctx *c)
{
    const char *tdir = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/cubincache-pp.XXXXXX", tdir && *tdir ? tdir : "/tmp");
    if (!mkdtemp(dir))
        return CBC_OK; /* no preprocessing: the compile finds out */
    char *dep = cbc_asprintf("%s/pp.d", dir), *log = cbc_asprintf("%s/log", dir);
    char **argv = calloc(c->a.argc + 5, sizeof *argv);
    enum cbc_status st = CBC_OK;
    if (!dep || !log || !argv) {
        st = cbc_err_oom(c->err);
        goto out;
    }
    size_t n = 0;
    argv[n++] = (char *)c->tc.nvcc;
    for (size_t i = 0; i < c->a.argc; i++)
        if (!cbc_nv_is_output_arg(&c->a, i) && strcmp(c->a.argv[i], "-MD") != 0 &&
            strcmp(c->a.argv[i], "--generate-dependencies-with-compile") != 0)
            argv[n++] = c->a.argv[i];
    argv[n++] = "-M";
    argv[n++] = "-o";
    argv[n++] = dep;
    uint64_t started = cbc_now_ns();
    pid_t pid;
    struct cbc_err e = {0};
    if (cbc_proc_spawn_env(argv, log, log, NULL, &pid, &e) != CBC_OK || cbc_proc_wait(pid) != 0)
        goto out;
    char *text = NULL, **paths = NULL;
    size_t len = 0, np = 0;
    struct cbc_collect_out co;
    const char *own[] = {dir};
    if (read_deps(c, dep, &text, &len, &paths, &np, &e) == CBC_OK) {
        struct cbc_collect_in ci = {paths, np, c->source, NULL, own, 1, NULL, 0, started, c->memo};
        enum cbc_status cs = cbc_collect(&ci, &co, &e);
        if (cs == CBC_E_NOMEM)
            st = cbc_err_oom(c->err);
        if (cs == CBC_OK) {
            if (co.cacheable) {
                keys(c, co.deps, co.n_deps, NULL, &c->u.result);
                struct cbc_target rt = cbc_store_result_target();
                char what[PATH_MAX + 4];
                snprintf(what, sizeof what, "'%s'", c->a.output);
                st = cbc_cache_lookup_preprocessed(&c->cache, &c->u, &rt, what, c->err);
            }
            cbc_collect_release(&co);
        }
    }
    cbc_paths_free(paths, np);
    free(text);
out:
    free(argv);
    if (dep)
        unlink(dep);
    if (log)
        unlink(log);
    free(dep);
    free(log);
    rmdir(dir);
    return st;
}

/* A hit, when the command's result is stored and still good: through its
 * direct record, else (compiled in another working directory) through a
 * preprocessing. */
static enum cbc_status lookup(struct ctx *c, bool *hit)
{
    *hit = false;
    keys(c, NULL, 0, &c->u.dt.direct_key, NULL);
    if (c->u.has_sibling)
        sibling_key(c, &c->u.sibling);
    struct cbc_target rt = cbc_store_result_target();
    char what[PATH_MAX + 4];
    snprintf(what, sizeof what, "'%s'", c->a.output);
    enum cbc_status st = cbc_cache_lookup(&c->cache, &c->u, &rt, what, c->err);
    bool pp = false;
    if (st == CBC_OK && c->u.state == CBC_CACHE_MISS && c->u.has_sibling &&
        cbc_cache_sibling_seen(&c->cache, &c->u)) {
        st = preprocessed(c);
        pp = st == CBC_OK && c->u.state == CBC_CACHE_HIT;
        if (pp)
            say(c, CBC_MSG_NOTE, "'%s': compiled in another directory; found through nvcc -M",
                c->a.output);
    }
    if (st == CBC_OK && c->u.state == CBC_CACHE_HIT)
        st = serve_unit(c, hit);
    if (st != CBC_OK || !c->o->explain)
        return st;
    char ex[600];
    size_t exl = sizeof ex;
    if (*hit && c->u.remote)
        cbc_fmt(ex, exl, "remote hit (%s)", cbc_store_remote_name(c->store));
    else if (*hit)
        cbc_fmt(ex, exl, "hit%s", pp ? " (compiled in another directory; found through nvcc -M)"
                                     : "");
    else if (c->cache.recache)
        cbc_fmt(ex, exl, "miss: recache is set");
    else if (c->u.state == CBC_CACHE_DROPPED)
        cbc_fmt(ex, exl, "miss: the cached entry was bad (%s) and was dropped", c->u.why);
    else if (c->u.state == CBC_CACHE_HIT)
        cbc_fmt(ex, exl, "miss: the cached result failed verification");
    else {
        struct cbc_key_now now = key_now(c);
        char why[560];
        cbc_why_missed(c->store, c->cwd, c->a.output, &now, c->memo, why, sizeof why);
        cbc_fmt(ex, exl, "miss: %s", why);
    }
    cbc_fmt(c->r->explain, sizeof c->r->explain, "'%s': %s", c->a.output, ex);
    return st;
}

static enum cbc_status read_small(const char *path, char **out, size_t *len, struct cbc_err *err)
{
    uint8_t *d = NULL;
    enum cbc_status st = cbc_file_read(path, &d, len, err);
    *out = (char *)d;
    return st;
}

/* The body of nvcc's depfile: everything after "<target> : ". */
static const char *depfile_body(const char *text, size_t len, size_t *n)
{
    const char *sep = memmem(text, len, " : ", 3);
    if (!sep)
        return NULL;
    *n = len - (size_t)(sep + 3 - text);
    return sep + 3;
}

/* The files a compile read: its depfile's, or a device link's inputs. */
static enum cbc_status read_deps(struct ctx *c, const char *df, char **dep_text, size_t *dep_len,
                                 char ***paths, size_t *np, struct cbc_err *e)
{
    if (c->a.mode == CBC_NV_DLINK) {
        *np = c->a.n_inputs > 1 ? c->a.n_inputs - 1 : 0;
        *paths = calloc(*np ? *np : 1, sizeof **paths);
        for (size_t i = 0; *paths && i < *np; i++)
            if (!((*paths)[i] = cbc_path_abs_from(c->cwd, c->a.argv[c->a.input_idx[i + 1]])))
                return cbc_err_oom(e);
        return *paths ? CBC_OK : cbc_err_oom(e);
    }
    enum cbc_status st = read_small(df, dep_text, dep_len, e);
    if (st == CBC_OK)
        st = cbc_depfile_parse(*dep_text, *dep_len, c->cwd, c->source, paths, np, df, e);
    return st;
}

/* The side files a compile wrote, added to the result; false (why set)
 * when one cannot be stored. */
static bool add_side(struct ctx *c, const struct cbc_collect_out *co, struct cbc_result *res)
{
    if (co->n_side > CBC_LAUNCH_MAX_SIDE) {
        set_why(c, "the compile wrote %zu files besides its output (at most %d are stored)",
                co->n_side, CBC_LAUNCH_MAX_SIDE);
        return false;
    }
    for (size_t i = 0; i < co->n_side; i++) {
        uint8_t *d = NULL;
        size_t n = 0;
        struct cbc_err e = {0};
        char *name = cbc_asprintf(SIDE_PREFIX "%s", co->side[i]);
        bool ok = name && cbc_file_read_max(co->side[i], CBC_LAUNCH_SIDE_MAX, &d, &n, &e) == CBC_OK &&
                  cbc_result_add(res, name, d, n);
        free(name);
        free(d);
        if (!ok) {
            set_why(c, "a file the compile wrote cannot be stored: %s",
                    e.msg[0] ? e.msg : co->side[i]);
            return false;
        }
    }
    return true;
}

/* Runs nvcc (step by step where it can, split.h), traced; on success
 * stores what it made. */
/* One nvcc run of the launcher's: what store_output reads of it, and what
 * compile releases. */
struct nv_run {
    bool ran;         /* nvcc (or the split) ran: code is its exit code */
    int code;
    char *own_dep;    /* the depfile we asked nvcc for, when the command has none */
    char *log;        /* the trace's log */
    struct cbc_trace_run tr;
    bool traced;      /* the log holds what this compile opened and looked for */
    uint64_t started; /* when it began: what changed after is "changed while nvcc ran" */
};

/* -c and -fatbin step by step, each virtual arch's device code from the
 * store when it was compiled before (split.h). *split false: run nvcc as
 * one command (the split says why in a note). */
static enum cbc_status split_compile(struct ctx *c, char **argv, size_t n, struct nv_run *nr,
                                     bool *split)
{
    char steps[PATH_MAX + 8];
    snprintf(steps, sizeof steps, "%s/steps", c->tmp);
    struct cbc_key_now now = key_now(c);
    struct cbc_split_req q = {c->tc.nvcc, argv + 1, n - 1, steps,
                              nr->own_dep ? nr->own_dep : c->a.depfile,
                              c->a.mt ? c->a.mt : c->a.output, &c->cache, &now,
                              nr->started, nr->tr.log};
    struct cbc_split_result sr;
    enum cbc_status st;
    if (mkdir(steps, 0700) != 0)
        st = cbc_err_set(c->err, CBC_E_IO, "cannot create '%s': %s", steps, strerror(errno));
    else
        st = cbc_split_run(&q, &sr, c->err);
    if (st == CBC_OK && sr.done) {
        *split = true;
        nr->traced = sr.traced;
        nr->code = 0;
        c->r->out = sr.out, c->r->out_len = sr.out_len;
        c->r->errs = sr.errs, c->r->errs_len = sr.errs_len;
        c->r->archs = sr.archs, c->r->archs_cached = sr.archs_cached;
        c->device_names_tree = sr.names_tree;
        sr.out = sr.errs = NULL;
        say(c, CBC_MSG_NOTE,
            "'%s': device code of %zu of %zu virtual archs from the cache (%zu not "
            "preprocessed)%s%s",
            c->a.output, sr.archs_cached, sr.archs, sr.archs_direct,
            sr.unrecorded[0] ? "; not recorded: " : "", sr.unrecorded);
    } else if (st == CBC_OK) {
        say(c, CBC_MSG_NOTE, "'%s' compiled as one nvcc command: %s", c->a.output, sr.why);
    }
    if (st == CBC_OK)
        cbc_split_result_release(&sr);
    cbc_tmpdir_remove(steps);
    if (st == CBC_OK && !*split && nr->tr.log) /* the split's steps are no part of this run */
        st = cbc_file_write_atomic(nr->tr.log, "", 0, 0600, c->err);
    return st;
}

/* nvcc's command in our temporary directory, traced, with the depfile and
 * cicc's kept files we need: split, or as one command. */
static enum cbc_status run_nvcc(struct ctx *c, struct nv_run *nr)
{
    const char *base = getenv("TMPDIR");
    snprintf(c->tmp, sizeof c->tmp, "%s/cubincache-nvcc.XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(c->tmp))
        return cbc_err_set(c->err, CBC_E_IO, "cannot create a temporary directory in '%s': %s",
                           base && *base ? base : "/tmp", strerror(errno));
    bool want_dep = !c->a.md && c->a.mode != CBC_NV_DLINK;
    char *out_path = cbc_asprintf("%s/stdout", c->tmp), *err_path = cbc_asprintf("%s/stderr", c->tmp);
    nr->own_dep = want_dep ? cbc_asprintf("%s/deps.d", c->tmp) : NULL;
    char *nvtmp = cbc_asprintf("%s/t", c->tmp);
    nr->log = cbc_asprintf("%s/trace", c->tmp);
    char **argv = calloc(c->a.argc + 8, sizeof *argv);
    enum cbc_status st = CBC_OK;
    if (!out_path || !err_path || !argv || !nvtmp || !nr->log || (want_dep && !nr->own_dep))
        st = cbc_err_oom(c->err);
    else if (mkdir(nvtmp, 0700) != 0)
        st = cbc_err_set(c->err, CBC_E_IO, "cannot create '%s': %s", nvtmp, strerror(errno));
    else
        st = cbc_trace_run_init(&nr->tr, nr->log, nvtmp, c->err);
    if (st != CBC_OK) {
        free(out_path), free(err_path), free(argv), free(nvtmp);
        return st;
    }
    size_t n = 0;
    argv[n++] = (char *)c->tc.nvcc;
    for (size_t i = 0; i < c->a.argc; i++)
        argv[n++] = c->a.argv[i];
    if (nr->own_dep) { /* nvcc writes it from the preprocessing it does anyway */
        argv[n++] = "-MD";
        argv[n++] = "-MF";
        argv[n++] = nr->own_dep;
    }
    /* -cubin, -ptx: cicc's files kept (the same output) for names_tree */
    bool own_keep = (c->a.mode == CBC_NV_CUBIN || c->a.mode == CBC_NV_PTX) &&
                    !cbc_flags_keep(c->a.argv, c->a.argc);
    char *keep = own_keep ? cbc_cache_keep_dir(cbc_asprintf("%s/keep", c->tmp)) : NULL;
    if (keep) {
        argv[n++] = "-keep";
        argv[n++] = "-keep-dir";
        argv[n++] = keep;
    }
    nr->started = cbc_now_ns();
    nr->code = -1;
    nr->ran = true;
    bool split = false;
    nr->traced = nr->tr.log != NULL;
    c->device_names_tree = true; /* until a look says otherwise */
    if (c->a.mode == CBC_NV_OBJECT || c->a.mode == CBC_NV_FATBIN)
        st = split_compile(c, argv, n, nr, &split);
    if (st == CBC_OK && !split) {
        pid_t pid;
        st = cbc_proc_spawn_env(argv, out_path, err_path, nr->tr.env, &pid, c->err);
        nr->code = st == CBC_OK ? cbc_proc_wait(pid) : -1;
        if (st == CBC_OK) {
            size_t l;
            if (read_small(out_path, &c->r->out, &l, NULL) == CBC_OK)
                c->r->out_len = l;
            if (read_small(err_path, &c->r->errs, &l, NULL) == CBC_OK)
                c->r->errs_len = l;
        }
    }
    if (st == CBC_OK && nr->code == 0 && keep)
        c->device_names_tree = cbc_cache_keep_dir_names_tree(&c->cache, keep);
    else if (!split && c->a.mode != CBC_NV_OBJECT && c->a.mode != CBC_NV_FATBIN)
        c->device_names_tree = false; /* no device compile of a source: its bytes tell */
    free(keep);
    free(argv);
    free(out_path);
    free(err_path);
    free(nvtmp);
    return st;
}

/* A successful compile's output, checked, with what it read, into the
 * store when that is safe (cbc_cache_commit); why not, otherwise. */
static enum cbc_status store_output(struct ctx *c, const struct nv_run *nr)
{
    enum cbc_status st = CBC_OK;
    uint8_t *output = NULL;
    struct cbc_result res = {0};
    size_t out_len = 0;
    char *dep_text = NULL;
    size_t dep_len = 0;
    struct cbc_err e = {0};
    char why[512] = "";
    char **paths = NULL;
    size_t np = 0;
    struct cbc_trace trace = {0};
    struct cbc_collect_out co = {0};
    bool collected = false;
    if (cbc_file_read(c->a.output, &output, &out_len, &e) != CBC_OK) {
        set_why(c, "nvcc succeeded but its output cannot be read: %s", e.msg);
        goto out;
    }
    if (!verify_output(&c->a, output, out_len, why, sizeof why)) {
        set_why(c, "%.300s", why);
        say(c, CBC_MSG_WARNING, "not caching '%s': %s", c->a.output, why);
        goto out;
    }
    const char *df = nr->own_dep ? nr->own_dep : c->a.depfile;
    if (read_deps(c, df, &dep_text, &dep_len, &paths, &np, &e) != CBC_OK) {
        set_why(c, "nvcc's dependency file cannot be read: %s", e.msg);
        goto out;
    }
    if (nr->traced && cbc_trace_load(nr->tr.log, &trace, &e) != CBC_OK) {
        set_why(c, "the compile's trace cannot be read: %s", e.msg);
        goto out;
    }
    char *out_abs = cbc_path_abs_from(c->cwd, c->a.output);
    char *dep_abs = c->a.depfile ? cbc_path_abs_from(c->cwd, c->a.depfile) : NULL;
    const char *outs[] = {out_abs, dep_abs};
    const char *own[] = {c->tmp};
    struct cbc_collect_in ci = {paths, np, c->source, nr->traced ? &trace : NULL, own, 1, outs, 2,
                                nr->started, c->memo};
    enum cbc_status cs = out_abs ? cbc_collect(&ci, &co, &e) : cbc_err_oom(&e);
    free(out_abs);
    free(dep_abs);
    if (cs == CBC_E_NOMEM) {
        st = cbc_err_oom(c->err);
        goto out;
    }
    if (cs != CBC_OK) {
        set_why(c, "a file nvcc read cannot be hashed: %s", e.msg);
        goto out;
    }
    collected = true;
    if (co.future)
        say(c, CBC_MSG_WARNING, "'%s' has a modification time in the future; check the clock "
            "(or the file's origin) of this machine", co.future);
    if (!co.cacheable) {
        set_why(c, "%s", co.why);
        say(c, CBC_MSG_WARNING, "%s: %s; using the result but not caching it", c->a.output,
            co.why);
        goto out;
    }
    if (!co.recordable) {
        set_why(c, "%s", co.why);
        say(c, CBC_MSG_NOTE, "not caching '%s': %s", c->a.output, co.why);
        goto out;
    }
    if (c->a.md) {
        size_t bl = 0;
        const char *body = dep_text ? depfile_body(dep_text, dep_len, &bl) : NULL;
        if (!body) {
            set_why(c, "nvcc's depfile '%s' is not in the form \"target : files\"", c->a.depfile);
            goto out;
        }
        if (!add_text(c, &res, "depfile", body, bl)) {
            st = cbc_err_oom(c->err);
            goto out;
        }
    }
    if (!cbc_result_add(&res, "output", output, out_len) ||
        (c->r->out_len && !add_text(c, &res, "stdout", c->r->out, c->r->out_len)) ||
        (c->r->errs_len && !add_text(c, &res, "stderr", c->r->errs, c->r->errs_len))) {
        st = cbc_err_oom(c->err);
        goto out;
    }
    if (!add_side(c, &co, &res)) {
        say(c, CBC_MSG_NOTE, "not caching '%s': %s", c->a.output, c->r->why);
        goto out;
    }
    /* an output that names this tree is no entry for another checkout */
    c->u.path_dependent = c->device_names_tree ||
                          cbc_cache_names_tree(&c->cache, c->source, output, out_len) || co.n_side;
    size_t blen = 0;
    uint8_t *blob = cbc_result_encode(&res, &blen);
    if (!blob) {
        st = cbc_err_oom(c->err);
        goto out;
    }
    keys(c, co.deps, co.n_deps, NULL, &c->u.result);
    if (!c->cache.read_only) { /* what the next miss of this output is compared with */
        struct cbc_key_now now = key_now(c);
        cbc_why_remember(c->store, c->cwd, c->a.output, &now, co.deps, co.n_deps, &co.list);
    }
    struct cbc_target rt = cbc_store_result_target();
    enum cbc_commit outcome;
    char cwhy[CBC_ERR_MSG_MAX];
    st = cbc_cache_commit(&c->cache, &c->u, &co, &rt, blob, blen, &outcome, cwhy, sizeof cwhy,
                          c->err);
    free(blob);
    if (outcome == CBC_COMMIT_STORED)
        c->r->outcome = CBC_LAUNCH_MISS;
    else
        set_why(c, "%s", cwhy);
out:
    cbc_result_release(&res);
    if (collected)
        cbc_collect_release(&co);
    cbc_trace_release(&trace);
    cbc_paths_free(paths, np);
    free(dep_text);
    free(output);
    return st;
}

/* A miss: nvcc runs, and what it wrote is stored when that is safe. */
static enum cbc_status compile(struct ctx *c)
{
    struct nv_run nr = {0};
    enum cbc_status st = run_nvcc(c, &nr);
    if (nr.ran && (st != CBC_OK || nr.code != 0)) {
        c->r->exit_code = nr.code;
        if (st == CBC_OK)
            c->r->outcome = CBC_LAUNCH_FAILED;
    } else if (nr.ran) {
        c->r->exit_code = 0;
        c->r->outcome = CBC_LAUNCH_NOT_STORED;
        st = store_output(c, &nr);
    }
    cbc_trace_run_release(&nr.tr);
    free(nr.own_dep);
    free(nr.log);
    return st;
}

static void cleanup(struct ctx *c)
{
    if (c->tmp[0]) {
        /* only what compile() put there, by name, and nvcc's temporaries */
        const char *names[] = {"stdout", "stderr", "deps.d", "trace"};
        char p[PATH_MAX + 16];
        for (size_t i = 0; i < CBC_ARRAY_LEN(names); i++) {
            snprintf(p, sizeof p, "%s/%s", c->tmp, names[i]);
            unlink(p);
        }
        snprintf(p, sizeof p, "%s/t", c->tmp);
        cbc_tmpdir_remove(p);
        rmdir(c->tmp);
    }
    cbc_cache_release(&c->cache);
    cbc_filememo_free(c->memo);
    cbc_store_close(c->store);
    if (c->have_tc)
        cbc_toolchain_release(&c->tc);
    for (size_t i = 0; i < c->n_flags; i++)
        free(c->flags[i]);
    free(c->flags);
    free(c->cwd);
    free(c->source);
    free(c->base);
    cbc_nv_release(&c->a);
}

char *cbc_launch_nvcc_path(const char *nvcc, struct cbc_err *err)
{
    char *p = cbc_which(nvcc);
    if (p && access(p, X_OK) == 0)
        return p;
    free(p);
    if (!strcmp(nvcc, "nvcc") && access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
        return cbc_strdup("/usr/local/cuda/bin/nvcc");
    cbc_err_set(err, CBC_E_NVCC, "cannot run '%s': %s", nvcc,
                strchr(nvcc, '/') ? "not an executable file" : "not found on PATH");
    cbc_err_hint(err, "name nvcc by its path: cubincache /usr/local/cuda/bin/nvcc ARGS...");
    return NULL;
}

/* Counts a command run as it is in the cache's statistics. */
static void count_uncacheable(const struct cbc_launch_opts *o)
{
    char *root = cbc_store_default_root(o->cache_dir);
    struct cbc_store *s = NULL;
    if (root && cbc_store_open(root, &s, NULL) == CBC_OK) {
        cbc_store_count_uncacheable(s);
        cbc_store_close(s);
    }
    free(root);
}

enum cbc_status cbc_launch_run(const struct cbc_launch_opts *o, struct cbc_launch_result *r,
                               struct cbc_err *err)
{
    memset(r, 0, sizeof *r);
    struct ctx c = {.o = o, .r = r, .err = err};
    cbc_nv_parse(o->argv, o->argc, &c.a);
    enum cbc_status st = CBC_OK;
    if (o->no_cache)
        set_why(&c, "the cache is disabled (CUBINCACHE_DISABLE)");
    else if (c.a.why[0])
        set_why(&c, "%s", c.a.why);
    if (!r->why[0]) {
        char cwd[PATH_MAX];
        c.cwd = getcwd(cwd, sizeof cwd) ? cbc_strdup(cwd) : NULL;
        c.source = c.cwd ? cbc_path_abs(c.a.argv[c.a.input_idx[0]]) : NULL;
        c.memo = cbc_filememo_new();
        if (!c.cwd || !c.source || !c.memo)
            st = c.cwd ? cbc_err_oom(err)
                       : cbc_err_set(err, CBC_E_IO, "cannot read the working directory: %s",
                                     strerror(errno));
    }
    if (st == CBC_OK && !r->why[0]) {
        struct cbc_err e = {0};
        if (!cbc_is_file(c.source) ||
            cbc_filememo_hash(c.memo, c.source, NULL, NULL, 0, &c.source_hash, NULL, &e) != CBC_OK)
            set_why(&c, "the input '%s' is not a readable file", c.source);
    }
    if (st == CBC_OK && !r->why[0]) {
        char *root = cbc_store_default_root(o->cache_dir);
        struct cbc_err e = {0};
        if (!root || cbc_store_open(root, &c.store, &e) != CBC_OK)
            set_why(&c, "the cache cannot be opened: %s", e.msg[0] ? e.msg : "out of memory");
        free(root);
        if (c.store) /* a bad remote spec must not stop a compile: nvcc runs as it is */
            if (cbc_store_attach_default_remote(c.store, NULL, o->msg, o->msg_ctx, &e) != CBC_OK)
                set_why(&c, "%s", e.msg);
    }
    if (st == CBC_OK && !r->why[0]) {
        struct cbc_record_cache tools = cbc_store_tools_cache(c.store);
        char *nvcc = cbc_launch_nvcc_path(o->nvcc, err);
        if (!nvcc) {
            st = CBC_E_NVCC;
        } else {
            st = cbc_toolchain_identify(nvcc, c.a.ccbin, &tools, &c.tc, err);
            c.have_tc = st == CBC_OK;
            free(nvcc);
        }
    }
    if (st == CBC_OK && !r->why[0] && wants_native(&c.a))
        resolve_native(&c);
    if (st == CBC_OK && !r->why[0]) {
        cbc_key_env_read(c.tc.profile_env, c.tc.n_profile_env, &c.env);
        c.base = cbc_cache_base(c.store, c.source, o->msg, o->msg_ctx);
        st = cbc_cache_init(&c.cache, c.store, c.memo, c.base, c.cwd, o->msg, o->msg_ctx, err);
        if (st == CBC_OK && !key_flags(&c))
            st = cbc_err_oom(err);
    }
    if (r->why[0] && st == CBC_OK) {
        r->outcome = CBC_LAUNCH_UNCACHEABLE;
        cleanup(&c);
        if (!o->no_cache)
            count_uncacheable(o);
        return CBC_OK;
    }
    bool hit = false;
    if (st == CBC_OK)
        st = lookup(&c, &hit);
    if (st == CBC_OK && !hit)
        st = compile(&c);
    if (st == CBC_OK && c.store)
        cbc_store_count(c.store, hit, r->outcome == CBC_LAUNCH_MISS ||
                                          r->outcome == CBC_LAUNCH_NOT_STORED, 0);
    cleanup(&c);
    return st;
}

void cbc_launch_result_release(struct cbc_launch_result *r)
{
    free(r->out);
    free(r->errs);
    memset(r, 0, sizeof *r);
}
