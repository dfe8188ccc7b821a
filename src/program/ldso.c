/* ldso.c: the ld.so look-alike of program_int.h: where the dynamic loader
 * would find a DT_NEEDED library of a host ELF, so that a program is
 * judged with the libraries it would run with (glibc's rules, ld.so(8)).
 *
 * A name with a '/' is that path (relative to the needing file's
 * directory). Any other name is looked for in these directories, in this
 * order, each once (the first place it appears counts):
 *   1. the caller's (check -L), first;
 *   2. the needing file's DT_RPATH, unless it has a DT_RUNPATH;
 *   3. LD_LIBRARY_PATH, of this process's environment;
 *   4. the needing file's DT_RUNPATH;
 *   5. the directories of /etc/ld.so.conf and of the files its `include`
 *      lines glob (their own includes are not followed), read at the
 *      first search of a struct cbc_ldso, each file at most 1 MiB;
 *   6. the system ones: the multiarch directories of x86-64 and aarch64,
 *      /lib64, /usr/lib64, /lib, /usr/lib.
 * $ORIGIN and ${ORIGIN} in 2 to 4 stand for the directory of the needing
 * file, its links resolved. A program that runs in secure-execution mode
 * (set-user-ID, set-group-ID, file capabilities: what the kernel marks
 * AT_SECURE when an ordinary user starts it) is searched as glibc's ld.so
 * searches it: LD_LIBRARY_PATH is not read, an RPATH or RUNPATH element
 * naming $ORIGIN anywhere but at its start is dropped, and one of the
 * program's own only when it names a system directory (below). A
 * candidate is taken only when it is a regular
 * file (links followed) and a 64-bit ELF of the needing file's machine
 * (e_machine), as ld.so skips a library of another kind; else the search
 * goes on.
 *
 * Not modelled: /etc/ld.so.cache (the directories of ld.so.conf and the
 * system ones stand for it), hwcaps subdirectories, the DT_RPATH of the
 * files that loaded the needing one, LD_PRELOAD. A library not found says
 * where it was looked for (`searched`), in the order above, and what
 * secure-execution mode left out, so the verdict can name them.
 */
#include "program_int.h"

#include "elfextra.h"

#include <ctype.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ld.so's own directories, after ld.so.conf's: where an executable's
 * $ORIGIN may lead in secure-execution mode. */
static const char *const sys_dirs[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                                       "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                       "/lib64", "/usr/lib64", "/lib", "/usr/lib"};

bool cbc_ldso_secure(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    if ((st.st_mode & S_ISUID) || ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP)))
        return true;
    return getxattr(path, "security.capability", NULL, 0) >= 0;
}

static void read_ld_conf(struct cbc_ldso *l, const char *path, int depth)
{
    uint8_t *text = NULL;
    size_t len = 0;
    if (depth > 8 || cbc_file_read_max(path, 1 << 20, &text, &len, NULL) != CBC_OK)
        return;
    char *dir = cbc_path_dir(path);
    char *outer = NULL;
    for (char *line = strtok_r((char *)text, "\n", &outer); line;
         line = strtok_r(NULL, "\n", &outer)) {
        char *h = strchr(line, '#');
        if (h)
            *h = '\0';
        while (isspace((unsigned char)*line))
            line++;
        size_t n = strlen(line);
        while (n && isspace((unsigned char)line[n - 1]))
            line[--n] = '\0';
        if (!n)
            continue;
        if (!strncmp(line, "include", 7) && isspace((unsigned char)line[7])) {
            char *pat = line + 8;
            while (isspace((unsigned char)*pat))
                pat++;
            char *full = pat[0] == '/' ? cbc_strdup(pat) : cbc_path_join(dir, pat);
            glob_t g;
            if (full && glob(full, 0, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc; i++) {
                    uint8_t *inc = NULL;
                    size_t il = 0;
                    if (cbc_file_read_max(g.gl_pathv[i], 1 << 20, &inc, &il, NULL) == CBC_OK) {
                        char *sp = NULL;
                        for (char *l2 = strtok_r((char *)inc, "\n", &sp); l2;
                             l2 = strtok_r(NULL, "\n", &sp)) {
                            while (isspace((unsigned char)*l2))
                                l2++;
                            if (*l2 == '/')
                                cbc_names_add(&l->conf_dirs, l2, strcspn(l2, " \t#"));
                        }
                    }
                    free(inc);
                }
                globfree(&g);
            }
            free(full);
            continue;
        }
        if (line[0] == '/')
            cbc_names_add(&l->conf_dirs, line, strcspn(line, " \t"));
    }
    free(dir);
    free(text);
}

/* Whether `path` is an ELF shared object of this machine. */
static bool loadable_lib(const char *path, uint16_t machine)
{
    int fd;
    if (cbc_open_regular(path, 0, &fd, NULL, NULL) != CBC_OK)
        return false;
    uint8_t h[20];
    bool ok = pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && !memcmp(h, "\177ELF", 4) &&
              h[4] == 2 && cbc_rd16(h + 18) == machine;
    close(fd);
    return ok;
}

/* Whether directory `d` (len bytes) is one of sys_dirs, after dropping
 * empty and "." components; a ".." makes it untrusted. */
static bool trusted_dir(const char *d, size_t len)
{
    struct cbc_buf n = {0};
    bool ok = len && d[0] == '/';
    for (size_t i = 0; ok && i < len;) {
        while (i < len && d[i] == '/')
            i++;
        size_t j = i;
        while (j < len && d[j] != '/')
            j++;
        if (j - i == 2 && d[i] == '.' && d[i + 1] == '.')
            ok = false;
        else if (j > i && !(j - i == 1 && d[i] == '.')) {
            cbc_buf_puts(&n, "/");
            cbc_buf_append(&n, d + i, j - i);
        }
        i = j;
    }
    bool found = false;
    for (size_t k = 0; ok && !n.oom && n.p && k < CBC_ARRAY_LEN(sys_dirs); k++)
        found = found || !strcmp(n.p, sys_dirs[k]);
    cbc_buf_release(&n);
    return found;
}

/* Appends the directories of a ':' list, $ORIGIN expanded, to `dirs`. In
 * secure-execution mode (`secure`), as glibc's _dl_dst_substitute: an
 * element naming $ORIGIN other than at its start is dropped, and with
 * `own` (the list is the program's own) one naming it must come out as a
 * system directory; each dropped element is named in `dropped`. */
static void add_path_list(struct cbc_names *dirs, const char *list, const char *origin,
                          bool secure, bool own, struct cbc_buf *dropped)
{
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        struct cbc_buf d = {0};
        bool dst = false, keep = true;
        for (size_t i = 0; i < n;) {
            size_t t = n - i >= 7 && !strncmp(p + i, "$ORIGIN", 7)     ? 7
                       : n - i >= 9 && !strncmp(p + i, "${ORIGIN}", 9) ? 9
                                                                       : 0;
            if (t) {
                if (secure && (i != 0 || (i + t < n && p[i + t] != '/')))
                    keep = false;
                cbc_buf_puts(&d, origin);
                dst = true;
                i += t;
            } else {
                cbc_buf_append(&d, p + i, 1);
                i++;
            }
        }
        if (secure && dst && keep && own)
            keep = trusted_dir(d.p, d.len);
        if (!keep)
            cbc_buf_printf(dropped, "%s%.*s", dropped->len ? ", " : "", (int)n, p);
        else if (d.len && !d.oom)
            cbc_names_add(dirs, d.p, d.len);
        cbc_buf_release(&d);
        p = e ? e + 1 : NULL;
    }
}

char *cbc_ldso_find(struct cbc_ldso *l, const char *needed, const char *from,
                    const struct cbc_elf_dynamic *dyn, struct cbc_buf *searched)
{
    if (strchr(needed, '/')) {
        char *dir = cbc_path_dir(from);
        char *p = needed[0] == '/' ? cbc_strdup(needed) : cbc_path_join(dir, needed);
        free(dir);
        if (p && loadable_lib(p, dyn->machine))
            return p;
        cbc_buf_printf(searched, "%s", p ? p : needed);
        free(p);
        return NULL;
    }
    if (!l->conf_read) {
        l->conf_read = true;
        read_ld_conf(l, "/etc/ld.so.conf", 0);
    }
    char *real = realpath(from, NULL);
    char *origin = cbc_path_dir(real ? real : from);
    free(real);
    struct cbc_names dirs = {0};
    struct cbc_buf dropped = {0};
    const bool own = l->exec && !strcmp(from, l->exec);
    for (size_t i = 0; i < l->n_lib_dirs; i++)
        cbc_names_add(&dirs, l->lib_dirs[i], strlen(l->lib_dirs[i]));
    if (!dyn->runpath)
        add_path_list(&dirs, dyn->rpath, origin, l->secure, own, &dropped);
    const char *llp = getenv("LD_LIBRARY_PATH");
    if (!l->secure)
        add_path_list(&dirs, llp, origin, false, false, &dropped);
    add_path_list(&dirs, dyn->runpath, origin, l->secure, own, &dropped);
    for (size_t i = 0; i < l->conf_dirs.n; i++)
        cbc_names_add(&dirs, l->conf_dirs.v[i], strlen(l->conf_dirs.v[i]));
    for (size_t i = 0; i < CBC_ARRAY_LEN(sys_dirs); i++)
        cbc_names_add(&dirs, sys_dirs[i], strlen(sys_dirs[i]));
    char *found = NULL;
    for (size_t i = 0; i < dirs.n && !found; i++) {
        char *p = cbc_path_join(dirs.v[i], needed);
        if (p && loadable_lib(p, dyn->machine))
            found = p;
        else
            free(p);
        if (!found)
            cbc_buf_printf(searched, "%s%s", i ? ", " : "", dirs.v[i]);
    }
    if (!found && l->secure && ((llp && *llp) || dropped.len))
        cbc_buf_printf(searched, "; not read, as ld.so reads no such path for a set-user-ID, "
                       "set-group-ID or capability program: %s%s%s%s",
                       llp && *llp ? "LD_LIBRARY_PATH " : "", llp && *llp ? llp : "",
                       llp && *llp && dropped.len ? ", " : "", dropped.p ? dropped.p : "");
    cbc_buf_release(&dropped);
    cbc_names_release(&dirs);
    free(origin);
    return found;
}

void cbc_ldso_release(struct cbc_ldso *l)
{
    cbc_names_release(&l->conf_dirs);
}
