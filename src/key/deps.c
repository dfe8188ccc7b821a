/* deps.c: Makefile-syntax depfiles, read (nvcc -MD output) and written
 * (for ninja).
 *
 * Reading takes the prerequisites of the first rule only, undoing the
 * escapes GNU make and nvcc use: backslash-newline continues a line, "\ "
 * is a space, "\#" a hash, "$$" a dollar. Writing applies the same escapes.
 */
#include "key.h"

#include <stdlib.h>
#include <string.h>

void cbc_paths_free(char **paths, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

enum cbc_status cbc_depfile_parse(const char *text, size_t len, const char *cwd, const char *exclude,
                                  char ***paths, size_t *n, const char *name, struct cbc_err *err)
{
    size_t i = 0;
    /* skip the target: up to the first ':' followed by blank or end of line */
    for (; i < len; i++) {
        if (text[i] == '\\' && i + 1 < len) {
            i++;
            continue;
        }
        if (text[i] == ':' && (i + 1 >= len || text[i + 1] == ' ' || text[i + 1] == '\t' ||
                               text[i + 1] == '\n' || text[i + 1] == '\r'))
            break;
    }
    if (i >= len)
        return cbc_err_set(err, CBC_E_FORMAT, "depfile '%s': no 'target:' rule found",
                           name ? name : "<buffer>");
    i++;
    char **v = NULL;
    size_t count = 0, cap = 0;
    struct cbc_buf tok = {0};
    enum cbc_status st = CBC_OK;
    for (;;) {
        bool stop = false, flush = false;
        if (i >= len) {
            stop = flush = true;
        } else {
            char c = text[i], d = i + 1 < len ? text[i + 1] : '\0';
            if (c == '\\' && (d == '\n' || (d == '\r' && i + 2 < len && text[i + 2] == '\n'))) {
                i += d == '\n' ? 2 : 3; /* line continuation */
                flush = true;
            } else if (c == '\\' && d && strchr(" #\\:", d)) {
                cbc_buf_append(&tok, &d, 1);
                i += 2;
            } else if (c == '$' && d == '$') {
                cbc_buf_append(&tok, "$", 1);
                i += 2;
            } else if (c == '\n') {
                stop = flush = true; /* end of the first rule */
                i++;
            } else if (c == ' ' || c == '\t' || c == '\r') {
                flush = true;
                i++;
            } else {
                cbc_buf_append(&tok, &c, 1);
                i++;
            }
        }
        if (flush && tok.len) {
            char *abs = tok.oom ? NULL : cbc_path_abs_from(cwd, tok.p);
            tok.len = 0;
            if (!abs) {
                st = cbc_err_oom(err);
                break;
            }
            if (exclude && strcmp(abs, exclude) == 0) {
                free(abs);
            } else {
                if (!cbc_grow(&v, count, &cap, sizeof *v, 64)) {
                    free(abs);
                    st = cbc_err_oom(err);
                    break;
                }
                v[count++] = abs;
            }
        }
        if (stop)
            break;
    }
    cbc_buf_release(&tok);
    if (st != CBC_OK) {
        cbc_paths_free(v, count);
        return st;
    }
    if (count)
        qsort(v, count, sizeof *v, cmp_str);
    size_t w = 0;
    for (size_t r = 0; r < count; r++) {
        if (w && strcmp(v[w - 1], v[r]) == 0) {
            free(v[r]);
            continue;
        }
        v[w++] = v[r];
    }
    *paths = v;
    *n = w;
    return CBC_OK;
}

void cbc_depfile_escape(struct cbc_buf *b, const char *path)
{
    for (const char *p = path; *p; p++) {
        if (*p == ' ' || *p == '#' || *p == '\\')
            cbc_buf_append(b, "\\", 1);
        else if (*p == '$')
            cbc_buf_append(b, "$", 1);
        cbc_buf_append(b, p, 1);
    }
}
