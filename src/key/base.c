/* base.c: the base directory (key.h): paths under it are keyed and
 * recorded relative to it, so two checkouts of one tree (two CI runners,
 * a laptop, build-debug beside build) share keys, records and entries, as
 * ccache's base_dir does; an output that names the tree is told apart
 * (cbc_base_names).
 *
 * The spelling: a path "<base>/rest" is "@BASE@/rest", the base itself
 * "@BASE@", and every '@' of the text "@@", so the spelling is one-to-one
 * (a file named "@BASE@" elsewhere never turns into this tree). Text that names the tree (a depfile, nvcc's diagnostics) is
 * stored with the base replaced the same way and given this tree's base
 * back when served. Nothing is ever rewritten in binary outputs.
 *
 * The split compile's text files (cicc's stub and host-side files, PTX)
 * also name nvcc's module id, a hash of the source's absolute path: with
 * an id given it is spelled "@MID@" (cbc_base_template_id), and serving
 * puts this compile's id back; a text that holds a mark the serving
 * compile cannot fill is refused whole (cbc_base_expand_id).
 */
#include "key.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MARK "@BASE@"
#define MARK_LEN 6
#define ID_MARK "@MID@"
#define ID_MARK_LEN 5

char *cbc_base_detect(const char *setting, const char *source)
{
    if (setting && *setting && strcmp(setting, "auto") != 0) {
        if (!strcmp(setting, "none") || setting[0] != '/')
            return NULL;
        char *d = cbc_path_abs(setting);
        if (d && strcmp(d, "/") == 0) { /* the whole file system: no base at all */
            free(d);
            return NULL;
        }
        return d;
    }
    /* auto: the checkout the source is in (a version-control root) */
    char *dir = source ? cbc_path_dir(source) : NULL;
    static const char *const marks[] = {".git", ".hg", ".svn", ".jj", ".pijul", "_darcs"};
    while (dir && strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0) {
        for (size_t i = 0; i < CBC_ARRAY_LEN(marks); i++) {
            char *m = cbc_path_join(dir, marks[i]);
            struct stat st;
            bool found = m && lstat(m, &st) == 0;
            free(m);
            if (found)
                return dir;
        }
        char *up = cbc_path_dir(dir);
        free(dir);
        dir = up;
    }
    free(dir);
    return NULL;
}

static bool name_byte(char c)
{
    return c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

/* Whether text[at..] starts the base: the base followed by '/' or the end
 * of a path (a quote, a blank, a separator). */
static size_t base_at(const char *base, size_t bl, const char *p, const char *end)
{
    if ((size_t)(end - p) < bl || memcmp(p, base, bl) != 0)
        return 0;
    if (p + bl == end)
        return bl;
    return p[bl] == '/' || !name_byte(p[bl]) ? bl : 0;
}

/* Whether a path can start at p: the text's start, after a byte no name
 * holds ('=', ',', a blank, a quote), or right after an option's letters
 * ("-I/w/proj/inc", "-isystem/w/...", "-Xcompiler=-I/w/..."), but never
 * inside another path ("/x/w/proj" under base "/w/proj"). */
static bool path_start(const char *text, const char *p)
{
    if (p == text || !name_byte(p[-1]))
        return true;
    const char *q = p;
    while (q > text && (q[-1] == '-' || q[-1] == '_' || (q[-1] >= 'a' && q[-1] <= 'z') ||
                        (q[-1] >= 'A' && q[-1] <= 'Z')))
        q--;
    return q < p && *q == '-' && (q == text || !name_byte(q[-1]));
}

void cbc_base_template(const char *base, const char *text, size_t len, struct cbc_buf *out)
{
    cbc_base_template_id(base, NULL, text, len, out);
}

void cbc_base_template_id(const char *base, const char *id, const char *text, size_t len,
                          struct cbc_buf *out)
{
    size_t bl = base ? strlen(base) : 0, il = id ? strlen(id) : 0;
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        size_t k = bl && path_start(text, p) ? base_at(base, bl, p, end) : 0;
        if (k) {
            cbc_buf_append(out, MARK, MARK_LEN);
            p += k;
        } else if (il && (size_t)(end - p) >= il && !memcmp(p, id, il)) {
            cbc_buf_append(out, ID_MARK, ID_MARK_LEN);
            p += il;
        } else if (*p == '@') {
            cbc_buf_append(out, "@@", 2);
            p++;
        } else {
            cbc_buf_append(out, p, 1);
            p++;
        }
    }
}

/* The inverse of the template. strict: a mark with nothing to fill it, or
 * a lone '@', refuses the text (false); else the mark stays as it is and
 * "@MID@" is no mark. */
static bool expand(const char *base, const char *id, bool strict, const char *text, size_t len,
                   struct cbc_buf *out)
{
    const char *end = text + len;
    for (const char *p = text; p < end;) {
        if (end - p >= 2 && p[0] == '@' && p[1] == '@') {
            cbc_buf_append(out, "@", 1);
            p += 2;
        } else if ((size_t)(end - p) >= MARK_LEN && !memcmp(p, MARK, MARK_LEN)) {
            if (!base && strict)
                return false;
            cbc_buf_puts(out, base ? base : MARK);
            p += MARK_LEN;
        } else if (strict && (size_t)(end - p) >= ID_MARK_LEN &&
                   !memcmp(p, ID_MARK, ID_MARK_LEN)) {
            if (!id || !*id)
                return false;
            cbc_buf_puts(out, id);
            p += ID_MARK_LEN;
        } else if (strict && *p == '@') {
            return false; /* no text templated here has a lone '@' */
        } else {
            cbc_buf_append(out, p, 1);
            p++;
        }
    }
    return !out->oom;
}

void cbc_base_expand(const char *base, const char *text, size_t len, struct cbc_buf *out)
{
    expand(base, NULL, false, text, len, out);
}

bool cbc_base_expand_id(const char *base, const char *id, const char *text, size_t len,
                        struct cbc_buf *out)
{
    return expand(base, id, true, text, len, out);
}

char *cbc_base_rel(const char *base, const char *path)
{
    if (path && path[0] == '@')
        return NULL; /* would read back as the base: such a path is not recorded */
    struct cbc_buf b = {0};
    const char *rest = path ? path : "";
    if (base && path && base_at(base, strlen(base), path, path + strlen(path)) == strlen(base)) {
        cbc_buf_puts(&b, MARK);
        rest = path + strlen(base);
    }
    cbc_buf_puts(&b, rest);
    return b.oom ? (cbc_buf_release(&b), NULL) : b.p ? cbc_buf_detach(&b) : cbc_strdup("");
}

bool cbc_base_names(const char *base, const char *cwd, const uint8_t *data, size_t len)
{
    const char *dirs[2] = {base, cwd};
    if (!data || len == 0)
        return false;
    for (int i = 0; i < 2; i++)
        if (dirs[i] && strcmp(dirs[i], "/") != 0 && memmem(data, len, dirs[i], strlen(dirs[i])))
            return true;
    return false;
}
