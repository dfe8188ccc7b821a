/* lint.c: what the lint's languages share: a source file in memory with its
 * line table, findings (deduplicated by place, rule and variable), notes and
 * string sets.
 *
 * Invariants: a source is read with O_NOFOLLOW as a regular file of at most
 * LINT_FILE_MAX bytes and is NUL-terminated; lint_src_pos never reads past
 * the line table.
 */
#include "lint_int.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *cbc_lint_rule_name(enum cbc_lint_rule r)
{
    switch (r) {
    case CBC_LINT_ENV_UNDECLARED: return "env-undeclared";
    case CBC_LINT_ENV_ENUMERATED: return "env-enumerated";
    case CBC_LINT_NVCC_SOURCES: return "nvcc-sources";
    case CBC_LINT_CMAKE_ENV: return "cmake-env";
    case CBC_LINT_MESON_ENV: return "meson-env";
    case CBC_LINT_MAKE_ENV: return "make-env";
    }
    return "unknown";
}

enum cbc_status lint_src_read(const char *path, struct lint_src *s, struct cbc_err *err)
{
    memset(s, 0, sizeof *s);
    int fd;
    uint64_t size;
    enum cbc_status st = cbc_open_regular(path, O_NOFOLLOW, &fd, &size, err);
    if (st != CBC_OK)
        return st;
    if (fstat(fd, &s->st) != 0) {
        close(fd);
        return cbc_err_set(err, CBC_E_IO, "cannot stat '%s'", path);
    }
    uint8_t *data;
    size_t len;
    st = cbc_fd_read_max(fd, path, LINT_FILE_MAX, &data, &len, err);
    close(fd);
    if (st != CBC_OK)
        return st;
    s->text = (char *)data;
    s->len = len;
    s->path = cbc_strdup(path);
    size_t n = 1;
    for (size_t i = 0; i < len; i++)
        n += data[i] == '\n';
    s->lines = malloc(n * sizeof *s->lines);
    if (!s->path || !s->lines) {
        lint_src_free(s);
        return cbc_err_oom(err);
    }
    s->lines[0] = 0;
    s->n_lines = 1;
    for (size_t i = 0; i < len; i++)
        if (data[i] == '\n')
            s->lines[s->n_lines++] = i + 1;
    return CBC_OK;
}

void lint_src_free(struct lint_src *s)
{
    free(s->path);
    free(s->text);
    free(s->lines);
    free(s->via);
    memset(s, 0, sizeof *s);
}


static size_t line_index(const struct lint_src *s, size_t off)
{
    size_t lo = 0, hi = s->n_lines; /* the last line starting at or before off */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->lines[mid] <= off)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

const char *lint_src_eol(const struct lint_src *s, size_t off)
{
    if (s->len == 0)
        return "\n";
    size_t i = s->n_lines > 1 ? line_index(s, off < s->len ? off : s->len - 1) : 0;
    size_t end = i + 1 < s->n_lines ? s->lines[i + 1] : 0;
    if (end == 0) /* the last line has no end: the first line's */
        end = s->n_lines > 1 ? s->lines[1] : 0;
    return end >= 2 && s->text[end - 1] == '\n' && s->text[end - 2] == '\r' ? "\r\n" : "\n";
}

void lint_src_pos(const struct lint_src *s, size_t off, unsigned *line, unsigned *col)
{
    size_t i = line_index(s, off);
    *line = (unsigned)i + 1;
    *col = (unsigned)(off - s->lines[i]) + 1;
}

size_t lint_src_line_start(const struct lint_src *s, size_t off)
{
    size_t ls = s->lines[line_index(s, off)];
    if (ls == 0 && s->len >= 3 && !memcmp(s->text, "\xef\xbb\xbf", 3) && off >= 3)
        ls = 3; /* the first line starts after a byte order mark */
    return ls;
}

bool lint_add(struct cbc_lint_result *r, enum cbc_lint_rule rule, const struct lint_src *s,
              size_t off, const char *var, const char *why, const char *fix, const char *insert,
              size_t insert_at)
{
    unsigned line, col;
    lint_src_pos(s, off, &line, &col);
    for (size_t i = 0; i < r->n; i++) {
        const struct cbc_lint_finding *g = &r->f[i];
        if (g->rule == rule && g->line == line && g->col == col && !strcmp(g->file, s->path) &&
            ((!g->var && !var) || (g->var && var && !strcmp(g->var, var))))
            return true;
    }
    if (!cbc_grow(&r->f, r->n, &r->cap, sizeof *r->f, 16))
        return false;
    struct cbc_lint_finding *f = &r->f[r->n];
    memset(f, 0, sizeof *f);
    f->rule = rule;
    f->line = line;
    f->col = col;
    f->file = cbc_strdup(s->path);
    f->var = var ? cbc_strdup(var) : NULL;
    f->why = cbc_strdup(why);
    f->fix = cbc_strdup(fix);
    f->insert = insert ? cbc_strdup(insert) : NULL;
    f->insert_at = insert_at;
    f->file_size = (uint64_t)s->st.st_size;
    f->file_ino = (uint64_t)s->st.st_ino;
    f->file_mtime_ns = (int64_t)s->st.st_mtim.tv_sec * 1000000000 + s->st.st_mtim.tv_nsec;
    f->via = s->via ? cbc_strdup(s->via) : NULL;
    if (!f->file || (var && !f->var) || !f->why || !f->fix || (insert && !f->insert) ||
        (s->via && !f->via)) {
        free(f->via);
        free(f->file);
        free(f->var);
        free(f->why);
        free(f->fix);
        free(f->insert);
        return false;
    }
    r->n++;
    return true;
}

bool lint_note(struct cbc_lint_result *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return false;
    for (size_t i = 0; i < r->n_notes; i++)
        if (!strcmp(r->notes[i], s)) {
            free(s);
            return true;
        }
    if (!cbc_grow(&r->notes, r->n_notes, &r->cap_notes, sizeof *r->notes, 4)) {
        free(s);
        return false;
    }
    r->notes[r->n_notes++] = s;
    return true;
}

void cbc_lint_result_free(struct cbc_lint_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->f[i].file);
        free(r->f[i].var);
        free(r->f[i].why);
        free(r->f[i].fix);
        free(r->f[i].insert);
        free(r->f[i].via);
    }
    free(r->f);
    for (size_t i = 0; i < r->n_roots; i++)
        free(r->roots[i]);
    free(r->roots);
    for (size_t i = 0; i < r->n_notes; i++)
        free(r->notes[i]);
    free(r->notes);
    memset(r, 0, sizeof *r);
}

bool lint_strset_add(struct lint_strset *s, const char *str)
{
    if (lint_strset_has(s, str))
        return true;
    if (!cbc_grow(&s->v, s->n, &s->cap, sizeof *s->v, 8))
        return false;
    if (!(s->v[s->n] = cbc_strdup(str)))
        return false;
    s->n++;
    return true;
}

bool lint_strset_has(const struct lint_strset *s, const char *str)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], str))
            return true;
    return false;
}

void lint_strset_free(struct lint_strset *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}
