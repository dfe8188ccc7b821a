/* fix.c: `cubincache lint --fix`: applies the findings' insertions, every
 * file or none, or prints them as a unified diff (--dry-run).
 *
 * Invariants: a fix only inserts text at the offsets the lint computed; a
 * file that changed since it was linted (size, inode or mtime), or that is
 * now a symbolic link or not a regular file, stops the whole fix before
 * anything is written; each new file is staged beside its original
 * (".NAME.cbc-lint.XXXXXX", O_EXCL, the original's mode and owner, fsync'ed)
 * and only when all are staged are they renamed over the originals; a
 * failure before that removes every staged file and leaves the tree as it
 * was. A file outside every root (the PATHs given, links resolved: a
 * crate's `build = "../x/build.rs"`, a #[path] module, an include!) stops
 * the fix, naming the file and how the lint reached it. Every inserted line
 * ends as the line it goes before ends (CRLF in a CRLF file), nothing goes
 * before a byte order mark, and an insertion that would print a glob to
 * cargo is refused. Running the fix twice changes nothing the second time.
 */
#include "lint_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct edit {
    size_t at;
    const char *text; /* the finding's, or `own` once prepare() adapted it */
    char *own;
    size_t order;
};

struct ffile {
    const char *path;
    struct edit *e;
    size_t n, cap;
    const struct cbc_lint_finding *first;
    char *old, *neu;
    size_t old_len, neu_len;
    char *tmp;   /* the staged file */
    int dirfd;
    struct stat st;
};

static int cmp_edit(const void *a, const void *b)
{
    const struct edit *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_as_linted(const struct stat *st, const struct cbc_lint_finding *f)
{
    int64_t mt = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
    return S_ISREG(st->st_mode) && (uint64_t)st->st_size == f->file_size &&
           (uint64_t)st->st_ino == f->file_ino && mt == f->file_mtime_ns;
}

/* Whether `text` prints a rerun-if-changed= path holding a wildcard:
 * cargo would take it literally and rerun the script at every build. */
static bool prints_glob(const char *text)
{
    for (const char *p = text; (p = strstr(p, "rerun-if-changed=")) != NULL; p++) {
        const char *v = p + strlen("rerun-if-changed=");
        size_t n = strcspn(v, "\"\r\n");
        if (memchr(v, '*', n) || memchr(v, '?', n) || memchr(v, '[', n))
            return true;
    }
    return false;
}

/* The edit's text with the line ending of the line it goes into, and its
 * place after a byte order mark. */
static bool adapt(struct edit *e, const struct lint_src *s)
{
    if (e->at < 3 && s->len >= 3 && !memcmp(s->text, "\xef\xbb\xbf", 3))
        e->at = 3;
    const char *eol = lint_src_eol(s, e->at);
    if (!strcmp(eol, "\n"))
        return true;
    struct cbc_buf b = {0};
    for (const char *p = e->text; *p; p++) {
        if (*p == '\n' && (p == e->text || p[-1] != '\r'))
            cbc_buf_puts(&b, "\r\n");
        else
            cbc_buf_append(&b, p, 1);
    }
    if (b.oom)
        return false;
    e->own = cbc_buf_detach(&b);
    if (!e->own)
        e->own = cbc_strdup("");
    e->text = e->own;
    return e->own != NULL;
}

/* Reads the file again and builds its new text. */
static enum cbc_status prepare(struct ffile *ff, struct cbc_err *err)
{
    struct lint_src s;
    enum cbc_status st = lint_src_read(ff->path, &s, err);
    if (st != CBC_OK)
        return st;
    for (size_t i = 0; i < ff->n; i++) {
        if (prints_glob(ff->e[i].text)) {
            lint_src_free(&s);
            st = cbc_err_set(err, CBC_E_UNSUPPORTED, "the fix of '%s' would print a glob to "
                                                  "cargo; nothing was fixed", ff->path);
            cbc_err_hint(err, "report this: a rerun-if-changed= path must name a file or a "
                              "directory");
            return st;
        }
        if (!adapt(&ff->e[i], &s)) {
            lint_src_free(&s);
            return cbc_err_oom(err);
        }
    }
    if (!same_as_linted(&s.st, ff->first)) {
        lint_src_free(&s);
        st = cbc_err_set(err, CBC_E_IO, "'%s' changed while it was linted; nothing was fixed",
                         ff->path);
        cbc_err_hint(err, "run cubincache lint --fix again");
        return st;
    }
    ff->st = s.st;
    qsort(ff->e, ff->n, sizeof *ff->e, cmp_edit);
    struct cbc_buf b = {0};
    size_t pos = 0;
    for (size_t i = 0; i < ff->n; i++) {
        const struct edit *e = &ff->e[i];
        if (e->at > s.len)
            continue;
        if (i > 0 && e->at == ff->e[i - 1].at && !strcmp(e->text, ff->e[i - 1].text))
            continue;
        cbc_buf_append(&b, s.text + pos, e->at - pos);
        cbc_buf_puts(&b, e->text);
        pos = e->at;
    }
    cbc_buf_append(&b, s.text + pos, s.len - pos);
    if (b.oom) {
        cbc_buf_release(&b);
        lint_src_free(&s);
        return cbc_err_oom(err);
    }
    ff->old = s.text;
    ff->old_len = s.len;
    s.text = NULL;
    ff->neu_len = b.len;
    ff->neu = cbc_buf_detach(&b);
    if (!ff->neu)
        ff->neu = cbc_strdup("");
    lint_src_free(&s);
    return ff->neu ? CBC_OK : cbc_err_oom(err);
}

/* ---- the diff ------------------------------------------------------------ */

struct lineop {
    bool changed; /* lines come before it, or an insert falls inside it */
    bool del;     /* the old line is shown removed (and its new form added) */
    char *add;    /* the new lines: added before it, or replacing it */
};

static size_t count_lines(const char *p)
{
    size_t c = 0, n = strlen(p);
    for (size_t i = 0; i < n; i++)
        c += p[i] == '\n';
    return c + (n > 0 && p[n - 1] != '\n');
}

static void put_lines(struct cbc_buf *d, char sign, const char *p)
{
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        cbc_buf_printf(d, "%c%.*s\n", sign, (int)n, p);
        if (!nl) {
            cbc_buf_puts(d, "\\ No newline at end of file\n");
            break;
        }
        p = nl + 1;
    }
}

/* A unified diff of one file (3 lines of context), from its edits. */
static void diff_file(const struct ffile *ff, struct cbc_buf *d)
{
    size_t nl = 0;
    for (size_t i = 0; i < ff->old_len; i++)
        nl += ff->old[i] == '\n';
    if (ff->old_len && ff->old[ff->old_len - 1] != '\n')
        nl++;
    if (nl == 0)
        return;
    size_t *ls = malloc((nl + 1) * sizeof *ls);
    struct lineop *op = calloc(nl, sizeof *op);
    if (!ls || !op) {
        d->oom = true;
        free(ls), free(op);
        return;
    }
    size_t k = 0;
    ls[0] = 0;
    for (size_t i = 0; i < ff->old_len && k + 1 < nl + 1; i++)
        if (ff->old[i] == '\n')
            ls[++k] = i + 1;
    ls[nl] = ff->old_len;
    size_t ei = 0;
    for (k = 0; k < nl; k++) {
        size_t b = ls[k], e = ls[k + 1] + (k + 1 == nl); /* the last line takes edits at the end */
        size_t first = ei;
        bool inside = false;
        for (; ei < ff->n && ff->e[ei].at < e; ei++) {
            size_t tl = strlen(ff->e[ei].text);
            if (ff->e[ei].at != b || tl == 0 || ff->e[ei].text[tl - 1] != '\n')
                inside = true;
        }
        if (ei == first)
            continue;
        struct cbc_buf t = {0};
        cbc_buf_append(&t, "", 0);
        size_t pos = b;
        for (size_t j = first; j < ei; j++) {
            if (j > first && ff->e[j].at == ff->e[j - 1].at &&
                !strcmp(ff->e[j].text, ff->e[j - 1].text))
                continue;
            if (inside)
                cbc_buf_append(&t, ff->old + pos, ff->e[j].at - pos);
            cbc_buf_puts(&t, ff->e[j].text);
            pos = ff->e[j].at;
        }
        if (inside) {
            size_t le = ls[k + 1];
            if (le > pos && ff->old[le - 1] == '\n')
                le--;
            cbc_buf_append(&t, ff->old + pos, le - pos);
            if (le < ls[k + 1])
                cbc_buf_append(&t, "\n", 1);
        }
        if (t.oom) {
            d->oom = true;
            cbc_buf_release(&t);
            continue;
        }
        op[k] = (struct lineop){.changed = true, .del = inside, .add = cbc_buf_detach(&t)};
    }
    cbc_buf_printf(d, "--- a/%s\n+++ b/%s\n", ff->path, ff->path);
    const size_t ctx = 3;
    size_t shift = 0; /* new lines minus old lines before the hunk */
    size_t done = 0;  /* old lines whose shift is counted */
    k = 0;
    while (k < nl) {
        if (!op[k].changed) {
            k++;
            continue;
        }
        size_t hb = k > ctx ? k - ctx : 0;
        if (hb < done)
            hb = done;
        size_t he = k;
        for (size_t j = k; j < nl; j++)
            if (op[j].changed) {
                if (j > he + 2 * ctx)
                    break;
                he = j;
            }
        size_t last = he + ctx < nl ? he + ctx : nl - 1;
        for (; done < hb; done++)
            if (op[done].changed)
                shift += count_lines(op[done].add) - (op[done].del ? 1 : 0);
        size_t old_n = last - hb + 1, new_n = 0;
        for (size_t j = hb; j <= last; j++)
            new_n += (op[j].changed ? count_lines(op[j].add) : 0) + (op[j].del ? 0 : 1);
        cbc_buf_printf(d, "@@ -%zu,%zu +%zu,%zu @@\n", hb + 1, old_n, hb + 1 + shift, new_n);
        for (size_t j = hb; j <= last; j++) {
            const char *line = ff->old + ls[j];
            size_t len = ls[j + 1] - ls[j];
            if (len && line[len - 1] == '\n')
                len--;
            if (op[j].changed && op[j].del) {
                cbc_buf_printf(d, "-%.*s\n", (int)len, line);
                put_lines(d, '+', op[j].add);
                continue;
            }
            if (op[j].changed)
                put_lines(d, '+', op[j].add);
            cbc_buf_printf(d, " %.*s\n", (int)len, line);
        }
        for (; done <= last; done++)
            if (op[done].changed)
                shift += count_lines(op[done].add) - (op[done].del ? 1 : 0);
        k = last + 1;
    }
    for (k = 0; k < nl; k++)
        free(op[k].add);
    free(ls), free(op);
}

/* ---- staging and publishing ---------------------------------------------- */

static enum cbc_status stage(struct ffile *ff, struct cbc_err *err)
{
    char *dir = cbc_path_dir(ff->path);
    if (!dir)
        return cbc_err_oom(err);
    ff->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (ff->dirfd < 0) {
        enum cbc_status st = cbc_err_set(err, CBC_E_IO, "cannot open directory '%s': %s", dir,
                                         strerror(errno));
        free(dir);
        return st;
    }
    free(dir);
    const char *base = cbc_path_base(ff->path);
    int fd = -1;
    for (int tries = 0; tries < 16 && fd < 0; tries++) {
        uint32_t rnd = 0;
        if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
            rnd = (uint32_t)getpid() ^ (uint32_t)tries * 2654435761u;
        free(ff->tmp);
        ff->tmp = cbc_asprintf(".%s.cbc-lint.%08x", base, rnd);
        if (!ff->tmp)
            return cbc_err_oom(err);
        fd = openat(ff->dirfd, ff->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    ff->st.st_mode & 07777);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        free(ff->tmp);
        ff->tmp = NULL;
        return cbc_err_set(err, CBC_E_IO, "cannot create a file beside '%s': %s", ff->path,
                           strerror(errno));
    }
    if (fchmod(fd, ff->st.st_mode & 07777) != 0 ||
        (fchown(fd, ff->st.st_uid, ff->st.st_gid) != 0 && errno != EPERM)) {
        /* the mode is kept; the owner only where we may set it */
    }
    size_t off = 0;
    while (off < ff->neu_len) {
        ssize_t w = write(fd, ff->neu + off, ff->neu_len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return cbc_err_set(err, CBC_E_IO, "cannot write beside '%s': %s", ff->path,
                               strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0)
        return cbc_err_set(err, CBC_E_IO, "cannot write beside '%s': %s", ff->path,
                           strerror(errno));
    return CBC_OK;
}

/* Whether `path` lies beneath a root of r (or is a root given as a file),
 * its directory's links resolved. */
static bool under_roots(const struct cbc_lint_result *r, const char *path)
{
    char *dir = cbc_path_dir(path);
    char *rd = dir ? realpath(dir, NULL) : NULL;
    free(dir);
    if (!rd)
        return false;
    char *full = cbc_path_join(rd, cbc_path_base(path));
    free(rd);
    bool in = false;
    for (size_t i = 0; full && i < r->n_roots && !in; i++) {
        size_t n = strlen(r->roots[i]);
        struct stat st;
        bool is_dir = stat(r->roots[i], &st) == 0 && S_ISDIR(st.st_mode);
        if (is_dir)
            in = !strncmp(full, r->roots[i], n) && (full[n] == '/' || (n == 1 && full[0] == '/'));
        else
            in = !strcmp(full, r->roots[i]);
    }
    free(full);
    return in;
}

enum cbc_status cbc_lint_fix(const struct cbc_lint_result *r, struct cbc_buf *diff,
                             size_t *n_files, struct cbc_err *err)
{
    *n_files = 0;
    struct ffile *files = NULL;
    size_t nf = 0, capf = 0;
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < r->n && st == CBC_OK; i++) {
        const struct cbc_lint_finding *f = &r->f[i];
        if (!f->insert)
            continue;
        struct ffile *ff = NULL;
        for (size_t k = 0; k < nf; k++)
            if (!strcmp(files[k].path, f->file))
                ff = &files[k];
        if (!ff) {
            if (!cbc_grow(&files, nf, &capf, sizeof *files, 8)) {
                st = cbc_err_oom(err);
                break;
            }
            ff = &files[nf++];
            memset(ff, 0, sizeof *ff);
            ff->path = f->file;
            ff->first = f;
            ff->dirfd = -1;
        }
        if (!cbc_grow(&ff->e, ff->n, &ff->cap, sizeof *ff->e, 8)) {
            st = cbc_err_oom(err);
            break;
        }
        ff->e[ff->n] = (struct edit){f->insert_at, f->insert, NULL, i};
        ff->n++;
    }
    for (size_t k = 0; k < nf && st == CBC_OK; k++) {
        if (!under_roots(r, files[k].path)) {
            const char *via = files[k].first->via;
            if (via)
                st = cbc_err_set(err, CBC_E_USAGE, "'%s' is outside the paths given (the lint "
                                                   "reached it through %s): nothing was fixed",
                                 files[k].path, via);
            else
                st = cbc_err_set(err, CBC_E_USAGE,
                                 "'%s' is outside the paths given: nothing was fixed",
                                 files[k].path);
            cbc_err_hint(err, "--fix writes only beneath the PATHs it is given: add the "
                              "file's directory to them, or declare the variables there by "
                              "hand");
            break;
        }
    }
    for (size_t k = 0; k < nf && st == CBC_OK; k++) {
        struct stat lst;
        if (lstat(files[k].path, &lst) != 0 || !S_ISREG(lst.st_mode)) {
            st = cbc_err_set(err, CBC_E_USAGE, "'%s' is no longer a regular file; nothing was "
                                               "fixed", files[k].path);
            break;
        }
        st = prepare(&files[k], err);
    }
    if (st == CBC_OK && diff) {
        for (size_t k = 0; k < nf; k++)
            diff_file(&files[k], diff);
        if (diff->oom)
            st = cbc_err_oom(err);
    } else if (st == CBC_OK) {
        for (size_t k = 0; k < nf && st == CBC_OK; k++)
            st = stage(&files[k], err);
        if (st == CBC_OK)
            cbc_test_publish_delay(); /* a test changes a file here */
        /* the last look before publishing: still the files we read */
        for (size_t k = 0; k < nf && st == CBC_OK; k++) {
            struct stat lst;
            if (lstat(files[k].path, &lst) != 0 || !same_as_linted(&lst, files[k].first)) {
                st = cbc_err_set(err, CBC_E_IO,
                                 "'%s' changed while it was being fixed; nothing was fixed",
                                 files[k].path);
                cbc_err_hint(err, "run cubincache lint --fix again");
            }
        }
        for (size_t k = 0; k < nf && st == CBC_OK; k++) {
            if (renameat(files[k].dirfd, files[k].tmp, files[k].dirfd,
                         cbc_path_base(files[k].path)) != 0) {
                st = cbc_err_set(err, CBC_E_IO, "cannot replace '%s': %s (%zu of %zu files "
                                                "were fixed before it)",
                                 files[k].path, strerror(errno), k, nf);
                break;
            }
            free(files[k].tmp);
            files[k].tmp = NULL;
        }
    }
    if (st == CBC_OK)
        *n_files = nf;
    for (size_t k = 0; k < nf; k++) {
        if (files[k].tmp && files[k].dirfd >= 0)
            unlinkat(files[k].dirfd, files[k].tmp, 0);
        if (files[k].dirfd >= 0)
            close(files[k].dirfd);
        free(files[k].tmp);
        for (size_t j = 0; j < files[k].n; j++)
            free(files[k].e[j].own);
        free(files[k].e);
        free(files[k].old);
        free(files[k].neu);
    }
    free(files);
    return st;
}
