/* trace.c: finding the shim, the environment of a traced child, and
 * reading its log (trace.h).
 *
 * The log is a sequence of records "<kind><path>\0" (shim.c); parsing is
 * strict: an unknown kind, an empty or relative path or a missing final
 * NUL makes the whole log unusable, so a damaged trace can never pass for
 * a compile that looked nowhere.
 */
#include "trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CBC_TRACE_SHIM_INSTALLED
#define CBC_TRACE_SHIM_INSTALLED "/usr/local/libexec/cubincache/" CBC_TRACE_SHIM_NAME
#endif
#ifndef CBC_TRACE_LIBEXEC
#define CBC_TRACE_LIBEXEC "libexec"
#endif

/* ---- the shim --------------------------------------------------------------- */

static char g_shim[PATH_MAX];
static bool g_have_shim;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* A file we would preload into compilers: regular, owned by us or root,
 * writable by neither group nor others (nor is the directory it is in). */
static bool trusted(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        (st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 022))
        return false;
    char *dir = cbc_path_dir(path);
    bool ok = dir && stat(dir, &st) == 0 && (st.st_uid == geteuid() || st.st_uid == 0) &&
              !(st.st_mode & 022);
    free(dir);
    return ok;
}

static void find_shim(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *cand[3] = {NULL, NULL, NULL};
    if (n > 0) {
        exe[n] = '\0';
        char *bin = cbc_path_dir(exe);
        if (bin) {
            cand[0] = cbc_asprintf("%s/%s", bin, CBC_TRACE_SHIM_NAME);
            cand[1] = cbc_asprintf("%s/../%s/cubincache/%s", bin, CBC_TRACE_LIBEXEC,
                                   CBC_TRACE_SHIM_NAME);
        }
        free(bin);
    }
    cand[2] = cbc_strdup(CBC_TRACE_SHIM_INSTALLED);
    for (size_t i = 0; i < 3 && !g_have_shim; i++) {
        char *abs = cand[i] ? cbc_path_abs(cand[i]) : NULL;
        if (abs && strlen(abs) < sizeof g_shim && !strpbrk(abs, " :\t\n") && trusted(abs)) {
            memcpy(g_shim, abs, strlen(abs) + 1);
            g_have_shim = true; /* LD_PRELOAD splits at spaces and colons: never such a path */
        }
        free(abs);
    }
    for (size_t i = 0; i < 3; i++)
        free(cand[i]);
}

const char *cbc_trace_shim(void)
{
    pthread_once(&g_once, find_shim);
    return g_have_shim ? g_shim : NULL;
}

enum cbc_status cbc_trace_run_init(struct cbc_trace_run *r, const char *log, const char *tmpdir,
                                   struct cbc_err *err)
{
    memset(r, 0, sizeof *r);
    const char *shim = cbc_trace_shim();
    size_t n = 0;
    if (shim && log) {
        if (log[0] != '/')
            return cbc_err_set(err, CBC_E_USAGE, "a trace log needs an absolute path");
        int fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            return cbc_err_set(err, CBC_E_IO, "cannot create the trace log '%s': %s", log,
                               strerror(errno));
        close(fd);
        const char *old = getenv("LD_PRELOAD");
        r->log = cbc_strdup(log);
        r->env[n++] = old && *old ? cbc_asprintf("LD_PRELOAD=%s %s", shim, old)
                                  : cbc_asprintf("LD_PRELOAD=%s", shim);
        r->env[n++] = cbc_asprintf("%s=%s", CBC_TRACE_LOG_ENV, log);
    }
    if (tmpdir)
        r->env[n++] = cbc_asprintf("TMPDIR=%s", tmpdir);
    for (size_t i = 0; i < n; i++)
        if (!r->env[i] || (shim && log && !r->log)) {
            cbc_trace_run_release(r);
            return cbc_err_oom(err);
        }
    return CBC_OK;
}

void cbc_trace_run_release(struct cbc_trace_run *r)
{
    free(r->log);
    for (size_t i = 0; i < CBC_ARRAY_LEN(r->env); i++)
        free(r->env[i]);
    memset(r, 0, sizeof *r);
}

/* ---- the log ---------------------------------------------------------------- */

struct list {
    char **v;
    size_t n, cap;
};

static bool push(struct list *l, char *s)
{
    if (!s || !cbc_grow(&l->v, l->n, &l->cap, sizeof *l->v, 64)) {
        free(s);
        return false;
    }
    l->v[l->n++] = s;
    return true;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t sort_unique(char **v, size_t n)
{
    if (n)
        qsort(v, n, sizeof *v, cmp_str);
    size_t w = 0;
    for (size_t r = 0; r < n; r++) {
        if (w && !strcmp(v[w - 1], v[r])) {
            free(v[r]);
            continue;
        }
        v[w++] = v[r];
    }
    for (size_t i = 1; i < w; i++)
        CBC_ASSERT(strcmp(v[i - 1], v[i]) < 0); /* what cbc_trace_has searches */
    return w;
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

enum cbc_status cbc_trace_parse(const uint8_t *data, size_t len, const char *name,
                                struct cbc_trace *t, struct cbc_err *err)
{
    memset(t, 0, sizeof *t);
    struct list rd = {0}, wr = {0}, ab = {0};
    size_t off = 0;
    bool ok = true;
    while (ok && off < len) {
        const uint8_t *end = memchr(data + off, 0, len - off);
        char kind = (char)data[off];
        if (!end || end - (data + off) < 2 || data[off + 1] != '/' || !strchr("PRWA", kind))
            break;
        const char *path = (const char *)data + off + 1;
        if (kind == 'P')
            t->n_procs++;
        else if (kind == 'R')
            ok = push(&rd, cbc_path_abs_from("/", path));
        else if (kind == 'W')
            ok = push(&wr, cbc_path_abs_from("/", path));
        else
            ok = push(&ab, cbc_strdup(path));
        off = (size_t)(end - data) + 1;
    }
    if (!ok || off != len) {
        free_list(rd.v, rd.n);
        free_list(wr.v, wr.n);
        free_list(ab.v, ab.n);
        memset(t, 0, sizeof *t);
        if (!ok)
            return cbc_err_oom(err);
        return cbc_err_set(err, CBC_E_FORMAT, "trace '%s': damaged record at byte %zu",
                           name ? name : "<buffer>", off);
    }
    t->read = rd.v, t->n_read = sort_unique(rd.v, rd.n);
    t->wrote = wr.v, t->n_wrote = sort_unique(wr.v, wr.n);
    t->absent = ab.v, t->n_absent = sort_unique(ab.v, ab.n);
    return CBC_OK;
}

enum cbc_status cbc_trace_load(const char *log, struct cbc_trace *t, struct cbc_err *err)
{
    uint8_t *data = NULL;
    size_t len = 0;
    memset(t, 0, sizeof *t);
    enum cbc_status st = cbc_file_read(log, &data, &len, err);
    if (st == CBC_OK)
        st = cbc_trace_parse(data, len, log, t, err);
    free(data);
    return st;
}

enum cbc_status cbc_trace_load_many(const char *const *logs, size_t n, struct cbc_trace *t,
                                    struct cbc_err *err)
{
    struct cbc_buf all = {0};
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        uint8_t *data = NULL;
        size_t len = 0;
        enum cbc_status st = cbc_file_read(logs[i], &data, &len, err);
        if (st == CBC_OK && len && data[len - 1] != '\0')
            st = cbc_err_set(err, CBC_E_FORMAT, "trace '%s': its last record is cut short",
                             logs[i]);
        if (st == CBC_OK)
            cbc_buf_append(&all, data, len);
        free(data);
        if (st != CBC_OK) {
            cbc_buf_release(&all);
            return st;
        }
    }
    if (all.oom) {
        cbc_buf_release(&all);
        return cbc_err_oom(err);
    }
    enum cbc_status st = cbc_trace_parse((const uint8_t *)all.p, all.len, n ? logs[0] : NULL, t,
                                         err);
    cbc_buf_release(&all);
    return st;
}

enum cbc_status cbc_trace_append(const char *log, char kind, const char *path, struct cbc_err *err)
{
    int fd = open(log, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return cbc_err_set(err, CBC_E_IO, "cannot open the trace log '%s': %s", log,
                           strerror(errno));
    size_t n = strlen(path);
    char *rec = malloc(n + 2);
    if (!rec) {
        close(fd);
        return cbc_err_oom(err);
    }
    rec[0] = kind;
    memcpy(rec + 1, path, n + 1);
    ssize_t w = write(fd, rec, n + 2);
    int e = errno;
    free(rec);
    close(fd);
    if (w != (ssize_t)(n + 2))
        return cbc_err_set(err, CBC_E_IO, "cannot write the trace log '%s': %s", log,
                           w < 0 ? strerror(e) : "short write");
    return CBC_OK;
}

void cbc_trace_release(struct cbc_trace *t)
{
    free_list(t->read, t->n_read);
    free_list(t->wrote, t->n_wrote);
    free_list(t->absent, t->n_absent);
    memset(t, 0, sizeof *t);
}

bool cbc_trace_has(char *const *sorted, size_t n, const char *path)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(sorted[mid], path);
        if (c == 0)
            return true;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}
