/* search.c: where the loader looks for a bundle that is not compiled in,
 * and which directories it believes.
 *
 * The places, in order: each entry of CUBINCACHE_BUNDLE_PATH (a ':' list,
 * the one meaning of the variable; read with secure_getenv, so never in a
 * privileged program), then, for cbc_bundle_open_installed, PREFIX/share/
 * cubincache when the program runs from a directory PREFIX/bin, then this
 * library's DATADIR/cubincache. cbc_bundle_open_default searches the
 * variable's list only and falls back to the embedded bundle.
 *
 * Trust: a bundle is used only when every directory from / down to its
 * manifest, the bundle's own directory and the manifest included, is owned
 * by root or by the program's effective user and writable by no one else,
 * as ssh checks ~/.ssh. Anyone who could write one of them could plant the
 * kernels the program runs, and the manifest's hashes would not help: the
 * planter writes the manifest. One relaxation: a sticky directory (/tmp)
 * owned by root or us may lie above, since no one else can rename or
 * remove what is ours in it. A place that fails is skipped and named, with the
 * directory at fault, in the error when nothing is found; relative entries
 * are refused.
 */
#include "loader_int.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CBC_DATADIR
#define CBC_DATADIR "/usr/local/share"
#endif

/* Whether `st`, the file at `path`, may decide what the program loads:
 * owned by root or us, writable by no one else (`above`: a directory
 * above the manifest, where a sticky one is fine). Else false, with the
 * reason in why. */
static bool trusted_one(const char *path, const struct stat *st, bool above, char *why,
                        size_t len)
{
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        cbc_fmt(why, len, "'%s' is owned by uid %u, neither root nor this program's user (%u)",
                path, (unsigned)st->st_uid, (unsigned)geteuid());
        return false;
    }
    bool sticky_ok = above && S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !sticky_ok) {
        cbc_fmt(why, len, "'%s' is writable by %s (mode %04o)", path,
                st->st_mode & S_IWOTH ? "every user" : "its group",
                (unsigned)(st->st_mode & 07777));
        return false;
    }
    return true;
}

/* Whether the manifest at `path` and every directory above it may be
 * trusted (file comment); else false with the first one at fault in why. */
static bool trusted_path(const char *path, char *why, size_t len)
{
    char *real = realpath(path, NULL);
    if (!real) {
        cbc_fmt(why, len, "'%s' cannot be resolved: %s", path, strerror(errno));
        return false;
    }
    bool ok = true;
    /* "/", "/a", "/a/b", ... then the manifest itself */
    for (char *p = real;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        const char *at = p == real ? "/" : real;
        struct stat st;
        if (stat(at, &st) != 0) {
            cbc_fmt(why, len, "cannot stat '%s': %s", at, strerror(errno));
            ok = false;
        } else {
            ok = trusted_one(at, &st, c != '\0', why, len);
        }
        *p = c;
        if (!ok || c == '\0')
            break;
    }
    free(real);
    return ok;
}

/* The manifest of bundle `name` in `dir`: DIR/NAME.manifest.json or
 * DIR/NAME.bundle/NAME.manifest.json (malloc'd), or NULL when neither is
 * a file. */
static char *find_in_dir(const char *dir, const char *name)
{
    char *p = cbc_asprintf("%s/%s.manifest.json", dir, name);
    if (p && !cbc_is_file(p)) {
        free(p);
        p = cbc_asprintf("%s/%s.bundle/%s.manifest.json", dir, name, name);
        if (p && !cbc_is_file(p)) {
            free(p);
            p = NULL;
        }
    }
    return p;
}

/* One place: the manifest of `name` there when it holds one we may trust
 * (malloc'd), else NULL; the place is added to `looked`, with why it was
 * skipped when it was. */
static char *look_in(const char *dir, const char *name, struct cbc_buf *looked)
{
    cbc_buf_printf(looked, "%s'%s'", looked->len ? ", " : "", dir);
    if (dir[0] != '/') {
        cbc_buf_puts(looked, " (skipped: a relative directory)");
        return NULL;
    }
    char *m = find_in_dir(dir, name);
    char why[PATH_MAX + 128];
    if (m && !trusted_path(m, why, sizeof why)) {
        cbc_buf_printf(looked, " (skipped: %s)", why);
        free(m);
        m = NULL;
    }
    return m;
}

/* Each entry of CUBINCACHE_BUNDLE_PATH in turn (empty ones name nothing). */
static char *look_in_list(const char *name, struct cbc_buf *looked)
{
    const char *env = secure_getenv("CUBINCACHE_BUNDLE_PATH");
    char *found = NULL;
    for (const char *p = env ? env : ""; !found && *p;) {
        size_t n = strcspn(p, ":");
        char *d = n ? cbc_strndup(p, n) : NULL;
        if (d)
            found = look_in(d, name, looked);
        else if (n)
            looked->oom = true;
        free(d);
        p += n + (p[n] == ':');
    }
    return found;
}

/* PREFIX/share/cubincache when the program is PREFIX/bin/PROGRAM (a
 * prefix moved whole keeps its bundles); NULL otherwise: a program in
 * /tmp/x/ does not make /tmp/share/cubincache a place to look. */
static char *beside_bin(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *bin = cbc_path_dir(exe);
    char *prefix = bin && !strcmp(cbc_path_base(bin), "bin") ? cbc_path_dir(bin) : NULL;
    char *d = prefix ? cbc_asprintf("%s/share/cubincache", strcmp(prefix, "/") ? prefix : "")
                     : NULL;
    free(prefix);
    free(bin);
    return d;
}

enum cbc_status cbc_bundle_open_default(const struct cbc_embedded_bundle *eb,
                                        struct cbc_bundle **out, struct cbc_err *err)
{
    *out = NULL;
    struct cbc_buf looked = {0};
    char *found = eb->name && cbc_name_valid(eb->name) ? look_in_list(eb->name, &looked) : NULL;
    enum cbc_status st;
    if (looked.oom) {
        st = cbc_err_oom(err);
    } else if (found) {
        st = cbc_bundle_open_path(found, eb->name, out, err);
        if (st != CBC_OK)
            cbc_err_prefix(err, "CUBINCACHE_BUNDLE_PATH");
    } else {
        st = cbc_bundle_open_embedded(eb, out, err);
    }
    free(found);
    cbc_buf_release(&looked);
    return st;
}

enum cbc_status cbc_bundle_open_installed(const char *name, struct cbc_bundle **out,
                                          struct cbc_err *err)
{
    *out = NULL;
    if (!name || !cbc_name_valid(name))
        return cbc_err_set(err, CBC_E_USAGE, "'%s' is not a bundle name", name ? name : "(null)");
    struct cbc_buf looked = {0};
    char *found = look_in_list(name, &looked);
    char *bin = found ? NULL : beside_bin();
    if (bin)
        found = look_in(bin, name, &looked);
    if (!found)
        found = look_in(CBC_DATADIR "/cubincache", name, &looked);
    enum cbc_status st;
    if (looked.oom) {
        st = cbc_err_oom(err);
    } else if (!found) {
        st = cbc_err_set(err, CBC_E_NOT_FOUND, "bundle '%s' is not installed: no %s.manifest.json "
                         "or %s.bundle/ in %s", name, name, name, looked.p);
        cbc_err_hint(err, "install it (Meson: install_dir: get_option('datadir') / 'cubincache') "
                     "or point CUBINCACHE_BUNDLE_PATH at the directory that holds it; a "
                     "directory skipped must be owned by root or this user and writable by "
                     "no one else, all the way up");
    } else {
        st = cbc_bundle_open_path(found, name, out, err);
    }
    free(bin);
    free(found);
    cbc_buf_release(&looked);
    return st;
}
