/* collect.c: what one finished compile read and looked for, made into the
 * dependency list its direct-mode record keeps (direct.h), with the
 * verdicts every caller needs: can the result be stored, can it be served
 * from a record, which files did the compile write besides its outputs.
 *
 * One function for `build`, the launcher and the launcher's split compile,
 * so the three cannot disagree on what makes a record safe:
 *  - every file is hashed from its bytes as they are after the compile,
 *    and a ctime (which no one can set) after the compile's start means it
 *    may not be what nvcc read: not cacheable; in the clock tick of the
 *    start, only when a hash taken before the compile differs or there is
 *    none. A modification time in the future says nothing about that and
 *    is reported instead;
 *  - a record needs a whole trace: one that saw the compile read every
 *    file its depfile names (a statically linked host compiler, or one
 *    started without the environment, leaves no such trace), and no input
 *    that mentions __TIME__, __DATE__ or __TIMESTAMP__;
 *  - every place the trace looked at and found empty becomes a probe,
 *    unless it is ours (temporaries) or the compile wrote it itself; a
 *    probe that is there now, though the compile did not write it, appeared
 *    while nvcc ran: not cacheable.
 */
#include "direct.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == '\0');
}

/* One collection: the request, with `own` made absolute for comparing. */
struct cx {
    const struct cbc_collect_in *in;
    char **own;
    size_t n_own;
};

static bool is_own(const struct cx *x, const char *path)
{
    for (size_t i = 0; i < x->n_own; i++)
        if (x->own[i] && under(path, x->own[i]))
            return true;
    return false;
}

static bool is_output(const struct cbc_collect_in *in, const char *path)
{
    for (size_t i = 0; i < in->n_outputs; i++)
        if (in->outputs[i] && !strcmp(in->outputs[i], path))
            return true;
    return false;
}

static void set_why(struct cbc_collect_out *out, bool *flag, const char *fmt, const char *a)
{
    if (*flag && !out->why[0])
        cbc_fmt(out->why, sizeof out->why, fmt, a);
    *flag = false;
}

/* One file the compile read. */
static enum cbc_status take_file(const struct cbc_collect_in *in, struct cbc_collect_out *out,
                                 const char *path, bool dep, uint64_t now, struct cbc_err *err)
{
    struct cbc_hash h;
    struct cbc_stamp st;
    unsigned mentions = 0;
    enum cbc_status s = cbc_filememo_scan(in->memo, path, &h, &st, &mentions, err);
    if (s != CBC_OK)
        return s;
    out->mentions |= mentions;
    /* a file changed before the start has a time at most started_ns; one
     * changed after it a time above started_ns - tick (file times come
     * from the coarse clock, or the fine one); in between is either side,
     * and then only a hash taken before the compile (the lookup's) can say
     * the bytes are the ones nvcc read */
    bool future = st.mtime_ns > now;
    if (future && !out->future && !(out->future = cbc_strdup(path)))
        return cbc_err_oom(err);
    uint64_t changed = future || st.mtime_ns < st.ctime_ns ? st.ctime_ns : st.mtime_ns;
    uint64_t tick = cbc_file_time_tick_ns();
    struct cbc_hash before;
    if (changed > in->started_ns ||
        (changed + tick > in->started_ns &&
         !(cbc_filememo_prior(in->memo, path, &before) && cbc_hash_eq(&before, &h))))
        set_why(out, &out->cacheable, "'%s' changed while nvcc ran", path);
    if (mentions & CBC_MENTIONS_TIME)
        set_why(out, &out->recordable,
                "'%s' mentions __TIME__, __DATE__ or __TIMESTAMP__, which differ at every "
                "compile", path);
    if (in->trace && !cbc_trace_has(in->trace->read, in->trace->n_read, path))
        set_why(out, &out->recordable,
                "the trace of the compile does not show '%s' read (a host compiler the shim "
                "cannot see: statically linked, or started without its environment)", path);
    if (!dep)
        return CBC_OK;
    CBC_ASSERT(out->list.n < in->n_deps); /* one slot per dependency */
    struct cbc_direct_dep *d = &out->list.deps[out->list.n];
    d->path = cbc_strdup(path);
    if (!d->path)
        return cbc_err_oom(err);
    d->hash = h;
    d->stamp = st;
    out->deps[out->list.n] = (struct cbc_dep){d->path, h};
    out->list.n++;
    out->n_deps = out->list.n;
    return CBC_OK;
}

/* A probe: its guard (the deepest directory on its path that exists now)
 * and its path below it. */
struct probe {
    char *guard;
    const char *name; /* into the probe's path */
};

static int cmp_probe(const void *a, const void *b)
{
    const struct probe *x = a, *y = b;
    int c = strcmp(x->guard, y->guard);
    return c ? c : strcmp(x->name, y->name);
}

/* The deepest existing directory above `path` (malloc'd; "/" at worst).
 * `last` remembers the previous answer, as probes come sorted. */
static char *guard_of(const char *path, char **last_dir, bool *last_is_dir)
{
    char *p = cbc_strdup(path);
    if (!p)
        return NULL;
    for (;;) {
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) {
            strcpy(p, "/");
            return p;
        }
        *slash = '\0';
        bool dir;
        if (*last_dir && !strcmp(*last_dir, p)) {
            dir = *last_is_dir;
        } else {
            struct stat st;
            dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
            free(*last_dir);
            *last_dir = cbc_strdup(p);
            *last_is_dir = dir;
        }
        if (dir)
            return p;
    }
}

static enum cbc_status take_probes(const struct cx *x, struct cbc_collect_out *out,
                                   struct cbc_err *err)
{
    const struct cbc_collect_in *in = x->in;
    const struct cbc_trace *t = in->trace;
    struct probe *v = calloc(t->n_absent ? t->n_absent : 1, sizeof *v);
    if (!v)
        return cbc_err_oom(err);
    size_t n = 0;
    char *last = NULL;
    bool last_dir = false;
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < t->n_absent && st == CBC_OK; i++) {
        const char *raw = t->absent[i];
        char *norm = cbc_path_abs_from("/", raw);
        if (!norm) {
            st = cbc_err_oom(err);
            break;
        }
        bool skip = is_own(x, norm) || is_output(in, norm) ||
                    cbc_trace_has(t->wrote, t->n_wrote, norm) || !strcmp(norm, "/");
        free(norm);
        if (skip)
            continue;
        char *g = guard_of(raw, &last, &last_dir);
        if (!g) {
            st = cbc_err_oom(err);
            break;
        }
        size_t gl = strlen(g);
        v[n].guard = g;
        v[n].name = raw + (gl == 1 ? 1 : gl + 1);
        if (!*v[n].name) { /* the guard itself: it exists, so this was no probe */
            free(g);
            continue;
        }
        n++;
    }
    free(last);
    if (st == CBC_OK && n)
        qsort(v, n, sizeof *v, cmp_probe);
    struct cbc_dep_list *l = &out->list;
    size_t dirs = 0;
    for (size_t i = 0; i < n; i++)
        dirs += i == 0 || strcmp(v[i].guard, v[i - 1].guard) != 0;
    if (st == CBC_OK) {
        l->probes = calloc(dirs ? dirs : 1, sizeof *l->probes);
        l->names = calloc(n ? n : 1, sizeof *l->names);
        if (!l->probes || !l->names)
            st = cbc_err_oom(err);
    }
    for (size_t i = 0; i < n && st == CBC_OK; i++) {
        if (i > 0 && !strcmp(v[i].name, v[i - 1].name) && !strcmp(v[i].guard, v[i - 1].guard))
            continue;
        if (i == 0 || strcmp(v[i].guard, v[i - 1].guard) != 0) {
            struct cbc_probe_dir *pd = &l->probes[l->n_probes++];
            pd->dir = cbc_strdup(v[i].guard);
            pd->first = l->n_names;
            if (!pd->dir) {
                st = cbc_err_oom(err);
                break;
            }
        }
        if (!(l->names[l->n_names] = cbc_strdup(v[i].name))) {
            st = cbc_err_oom(err);
            break;
        }
        l->n_names++;
        l->probes[l->n_probes - 1].n++;
    }
    for (size_t i = 0; i < n; i++)
        free(v[i].guard);
    free(v);
    if (st == CBC_OK && !cbc_dep_list_stamp_probes(l)) {
        char *found = cbc_dep_list_found_probe(l);
        set_why(out, &out->cacheable, "'%s' appeared while nvcc ran (it looked there and found "
                "nothing)", found ? found : "a file");
        free(found);
    }
    return st;
}

static enum cbc_status take_side(const struct cx *x, struct cbc_collect_out *out,
                                 struct cbc_err *err)
{
    const struct cbc_collect_in *in = x->in;
    const struct cbc_trace *t = in->trace;
    for (size_t i = 0; i < t->n_wrote; i++) {
        const char *w = t->wrote[i];
        if (is_own(x, w) || is_output(in, w))
            continue;
        char *c = cbc_strdup(w);
        char **nv = c ? cbc_reallocarray(out->side, out->n_side + 1, sizeof *nv) : NULL;
        if (!nv) {
            free(c);
            return cbc_err_oom(err);
        }
        out->side = nv;
        out->side[out->n_side++] = c;
    }
    return CBC_OK;
}

enum cbc_status cbc_collect(const struct cbc_collect_in *in, struct cbc_collect_out *out,
                            struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    out->cacheable = out->recordable = true;
    out->list.deps = calloc(in->n_deps ? in->n_deps : 1, sizeof *out->list.deps);
    out->deps = calloc(in->n_deps ? in->n_deps : 1, sizeof *out->deps);
    if (!out->list.deps || !out->deps) {
        cbc_collect_release(out);
        return cbc_err_oom(err);
    }
    if (!in->trace)
        set_why(out, &out->recordable, "%s",
                "it was not traced (cubincache-trace.so, which records where the compile looked "
                "for headers, was not found beside cubincache or where it was installed)");
    /* a second of slack: file systems round a time written now up to their tick */
    uint64_t now = cbc_now_ns() + 1000000000ull;
    enum cbc_status st = take_file(in, out, in->source, false, now, err);
    for (size_t i = 0; i < in->n_deps && st == CBC_OK; i++)
        st = take_file(in, out, in->deps[i], true, now, err);
    struct cx x = {in, calloc(in->n_own ? in->n_own : 1, sizeof(char *)), in->n_own};
    for (size_t i = 0; x.own && i < in->n_own; i++)
        if (in->own[i] && !(x.own[i] = cbc_path_abs(in->own[i])))
            st = cbc_err_oom(err);
    if (!x.own)
        st = cbc_err_oom(err);
    if (st == CBC_OK && in->trace) {
        if (!in->trace->n_procs)
            set_why(out, &out->recordable, "%s", "the trace is empty: no program of the compile "
                    "loaded the shim");
        st = take_probes(&x, out, err);
    }
    if (st == CBC_OK && in->trace)
        st = take_side(&x, out, err);
    for (size_t i = 0; x.own && i < in->n_own; i++)
        free(x.own[i]);
    free(x.own);
    if (st != CBC_OK)
        cbc_collect_release(out);
    return st;
}

void cbc_collect_release(struct cbc_collect_out *out)
{
    cbc_dep_list_release(&out->list);
    free(out->deps);
    for (size_t i = 0; i < out->n_side; i++)
        free(out->side[i]);
    free(out->side);
    free(out->future);
    memset(out, 0, sizeof *out);
}
