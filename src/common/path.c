/* path.c: lexical path handling (finding programs on PATH is proc.c's).
 *
 * Paths are normalised lexically ("a/./b/../c" -> "a/c"), never through
 * realpath(3): a build tree reached through a symlink keeps the name the
 * user gave, which is what goes into manifests and depfiles.
 */
#include "common.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool cbc_name_valid(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > CBC_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && c != '_' && (i == 0 || (c != '.' && c != '+' && c != '-')))
            return false;
    }
    return true;
}

char *cbc_path_join(const char *a, const char *b)
{
    if (!a || !*a || b[0] == '/')
        return cbc_strdup(b);
    size_t la = strlen(a);
    return cbc_asprintf("%s%s%s", a, a[la - 1] == '/' ? "" : "/", b);
}

/* Folds "." and ".." and duplicate slashes of an absolute path in place. */
static void normalise(char *p)
{
    char *out = p;
    const char *in = p;
    while (*in) {
        while (*in == '/')
            in++;
        const char *seg = in;
        while (*in && *in != '/')
            in++;
        size_t n = (size_t)(in - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            /* drop the last segment written, and its slash; ".." of "/" is "/" */
            while (out > p && out[-1] != '/')
                out--;
            if (out > p)
                out--;
            continue;
        }
        *out++ = '/';
        memmove(out, seg, n);
        out += n;
    }
    if (out == p)
        *out++ = '/';
    *out = '\0';
}

char *cbc_path_abs_from(const char *base_dir, const char *path)
{
    char *r = path[0] == '/' ? cbc_strdup(path) : cbc_path_join(base_dir, path);
    if (r)
        normalise(r);
    return r;
}

char *cbc_path_abs(const char *path)
{
    char cwd[PATH_MAX];
    if (path[0] != '/' && !getcwd(cwd, sizeof cwd))
        return NULL;
    return cbc_path_abs_from(path[0] == '/' ? "/" : cwd, path);
}

const char *cbc_path_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

char *cbc_path_dir(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return cbc_strdup(".");
    if (s == path)
        return cbc_strdup("/");
    return cbc_strndup(path, (size_t)(s - path));
}

char *cbc_path_stem(const char *path)
{
    const char *base = cbc_path_base(path);
    const char *dot = strrchr(base, '.');
    return dot && dot != base ? cbc_strndup(base, (size_t)(dot - base)) : cbc_strdup(base);
}

