/* walk.c: which files `cubincache lint` reads: for each PATH, a file by its
 * name (build.rs or any .rs given, CMakeLists.txt or *.cmake, meson.build,
 * Makefile, GNUmakefile, makefile or *.mk), a directory recursively. In a
 * directory tree: a crate's build script (the `build` key of its
 * Cargo.toml, else build.rs beside it), every build.rs, CMake, Meson and
 * make files. Skipped: hidden directories (.git),
 * target/, vendored trees (vendor/, third_party/, node_modules/, a crate
 * with .cargo-checksum.json) and build directories (CMakeCache.txt,
 * build.ninja, meson-private/, CACHEDIR.TAG inside).
 *
 * Invariants: directories are opened beneath their parent's descriptor with
 * O_NOFOLLOW, so a symbolic link is never followed into another tree (a
 * link to a file is not linted either: the fix would replace the link);
 * a script is linted once however it is reached; findings are sorted by
 * file, line, column; the roots (the PATHs given, resolved) are recorded
 * for the fix, which writes nothing outside them.
 */
#include "lint_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { K_NONE, K_RUST, K_CMAKE, K_MESON, K_MAKE };

static enum kind kind_of(const char *name, bool given)
{
    size_t n = strlen(name);
    if (!strcmp(name, "build.rs") || (given && n > 3 && !strcmp(name + n - 3, ".rs")))
        return K_RUST;
    if (!strcmp(name, "CMakeLists.txt") || (n > 6 && !strcmp(name + n - 6, ".cmake")))
        return K_CMAKE;
    if (!strcmp(name, "meson.build"))
        return K_MESON;
    if (!strcmp(name, "Makefile") || !strcmp(name, "GNUmakefile") || !strcmp(name, "makefile") ||
        (n > 3 && !strcmp(name + n - 3, ".mk")))
        return K_MAKE;
    return K_NONE;
}

struct walk {
    struct cbc_lint_result *r;
    struct lint_strset scripts; /* linted already */
    const struct lint_helpers *h;
    struct cbc_err *err;
};

static enum cbc_status lint_one(struct walk *w, const char *path, enum kind k, const char *via)
{
    if (k == K_RUST) {
        if (lint_strset_has(&w->scripts, path))
            return CBC_OK;
        if (!lint_strset_add(&w->scripts, path))
            return cbc_err_oom(w->err);
        return lint_rust_script(path, via, w->h, w->r, w->err);
    }
    if (k == K_MAKE)
        return lint_make_file(path, w->r, w->err);
    if (k == K_CMAKE)
        return lint_cmake_file(path, w->r, w->err);
    if (k == K_MESON)
        return lint_meson_file(path, w->r, w->err);
    return CBC_OK;
}

/* The build script a Cargo.toml names: `build = "path"` in [package]
 * (NULL for `build = false` or none). *set says whether the key is there. */
static char *cargo_build_key(int dirfd, const char *dir, bool *set)
{
    *set = false;
    int fd = openat(dirfd, "Cargo.toml", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    uint8_t *data = NULL;
    size_t len = 0;
    struct cbc_err e = {0};
    struct stat st;
    bool ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
              cbc_fd_read_max(fd, dir, 1 << 20, &data, &len, &e) == CBC_OK;
    close(fd);
    if (!ok)
        return NULL;
    char *res = NULL;
    bool in_package = false;
    for (char *line = (char *)data; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *p = line + strspn(line, " \t");
        if (*p == '[')
            in_package = !strncmp(p, "[package]", 9);
        else if (in_package && !strncmp(p, "build", 5)) {
            char *q = p + 5 + strspn(p + 5, " \t");
            if (*q == '=') {
                q++;
                q += strspn(q, " \t");
                *set = true;
                if (*q == '"') {
                    char *e2 = strchr(q + 1, '"');
                    if (e2)
                        res = cbc_strndup(q + 1, (size_t)(e2 - q - 1));
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(data);
    return res;
}

static bool skip_dir(const char *name)
{
    static const char *const names[] = {"target", "vendor", "third_party", "node_modules"};
    if (name[0] == '.')
        return true;
    for (size_t i = 0; i < CBC_ARRAY_LEN(names); i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}

static bool build_tree(int dirfd)
{
    static const char *const marks[] = {"CMakeCache.txt", "build.ninja", "meson-private",
                                        "CACHEDIR.TAG", ".cargo-checksum.json"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(marks); i++)
        if (faccessat(dirfd, marks[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum cbc_status walk_dir(struct walk *w, int dirfd, const char *path, int depth)
{
    if (depth > 64)
        return CBC_OK;
    if (depth > 0 && build_tree(dirfd)) /* one given by name is linted */
        return CBC_OK;
    DIR *d = fdopendir(dup(dirfd));
    if (!d)
        return cbc_err_set(w->err, CBC_E_IO, "cannot read directory '%s': %s", path,
                           strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    enum cbc_status st = CBC_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *nm = cbc_strdup(de->d_name);
        if (!nm || !cbc_grow(&names, n, &cap, sizeof *names, 32)) {
            free(nm);
            st = cbc_err_oom(w->err);
            break;
        }
        names[n++] = nm;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str); /* the same order on every file system */
    /* a crate: its build script as Cargo.toml names it */
    bool crate = false;
    for (size_t i = 0; i < n && st == CBC_OK; i++)
        if (!strcmp(names[i], "Cargo.toml"))
            crate = true;
    if (crate && st == CBC_OK) {
        bool set;
        char *key = cargo_build_key(dirfd, path, &set);
        if (key) {
            char *p = cbc_path_join(path, key);
            struct stat sst;
            if (!p)
                st = cbc_err_oom(w->err);
            else if (lstat(p, &sst) == 0 && S_ISREG(sst.st_mode)) {
                char *via = cbc_asprintf("the `build` key of %s/Cargo.toml", path);
                st = via ? lint_one(w, p, K_RUST, via) : cbc_err_oom(w->err);
                free(via);
            }
            free(p);
        }
        free(key);
    }
    for (size_t i = 0; i < n && st == CBC_OK; i++) {
        struct stat sst;
        if (fstatat(dirfd, names[i], &sst, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        char *p = !strcmp(path, ".") ? cbc_strdup(names[i]) : cbc_path_join(path, names[i]);
        if (!p) {
            st = cbc_err_oom(w->err);
            break;
        }
        if (S_ISDIR(sst.st_mode) && !skip_dir(names[i])) {
            int sub = openat(dirfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0) {
                st = walk_dir(w, sub, p, depth + 1);
                close(sub);
            }
        } else if (S_ISREG(sst.st_mode)) {
            st = lint_one(w, p, kind_of(names[i], false), NULL);
        }
        free(p);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return st;
}

static int cmp_finding(const void *a, const void *b)
{
    const struct cbc_lint_finding *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    if (c)
        return c;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return (x->var && y->var) ? strcmp(x->var, y->var) : 0;
}

enum cbc_status cbc_lint_run(const struct cbc_lint_opts *o, struct cbc_lint_result *r,
                             struct cbc_err *err)
{
    static const char *const dot[] = {"."};
    const char *const *paths = o->n_paths ? o->paths : dot;
    size_t n_paths = o->n_paths ? o->n_paths : 1;
    struct walk w = {.r = r, .err = err};
    struct lint_helpers *h = NULL;
    enum cbc_status st = lint_helpers_load(&h, o->helper_files, o->n_helper_files, err);
    if (st != CBC_OK)
        return st;
    w.h = h;
    r->roots = calloc(n_paths, sizeof *r->roots);
    if (!r->roots) {
        lint_helpers_free(h);
        return cbc_err_oom(err);
    }
    for (size_t i = 0; i < n_paths; i++) {
        char *real = realpath(paths[i], NULL); /* a missing path fails below, by its name */
        if (real)
            r->roots[r->n_roots++] = real;
    }
    for (size_t i = 0; i < n_paths && st == CBC_OK; i++) {
        struct stat sst;
        if (lstat(paths[i], &sst) != 0) {
            st = cbc_err_set(err, CBC_E_IO, "cannot read '%s': %s", paths[i], strerror(errno));
            break;
        }
        if (S_ISLNK(sst.st_mode) && stat(paths[i], &sst) == 0 && S_ISDIR(sst.st_mode)) {
            /* a link given by name is the user's choice for a directory */
        } else if (S_ISLNK(sst.st_mode)) {
            st = cbc_err_set(err, CBC_E_USAGE, "'%s' is a symbolic link", paths[i]);
            cbc_err_hint(err, "lint the file it points to: a fix would replace the link");
            break;
        }
        if (S_ISDIR(sst.st_mode)) {
            int fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (fd < 0) {
                st = cbc_err_set(err, CBC_E_IO, "cannot open directory '%s': %s", paths[i],
                                 strerror(errno));
                break;
            }
            st = walk_dir(&w, fd, paths[i], 0);
            close(fd);
        } else {
            enum kind k = kind_of(cbc_path_base(paths[i]), true);
            if (k == K_NONE) {
                st = cbc_err_set(err, CBC_E_USAGE,
                                 "'%s' is not a build script, CMake, Meson or make file", paths[i]);
                cbc_err_hint(err, "give a .rs build script, CMakeLists.txt, a .cmake file, "
                                  "meson.build, a Makefile (GNUmakefile, makefile, *.mk) or a "
                                  "directory");
                break;
            }
            st = lint_one(&w, paths[i], k, NULL);
        }
    }
    lint_strset_free(&w.scripts);
    lint_helpers_free(h);
    if (r->n > 1)
        qsort(r->f, r->n, sizeof *r->f, cmp_finding);
    return st;
}
