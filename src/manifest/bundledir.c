/* bundledir.c: a bundle's layout in its out directory, shared by the build
 * that writes it and `check` that judges it.
 *
 *   NAME.manifest.json            the bundle's description, published last
 *   NAME.<target>.cubin | .ptx    one image per target (the canonical names)
 *   .NAME.cubincache-XXXXXX/      a build's staging directory, mode 0700,
 *                                 flocked by the build that owns it for as long
 *                                 as it runs: nvcc's outputs and logs, the staged
 *                                 images and manifest, and the marker
 *                                 PUBLISHING once the renames into the out
 *                                 directory have begun
 * The out directory may be spelled NAME.bundle (a build system's one
 * declared output for the kernel step, which `ninja clean` removes whole and
 * `meson install` copies): its name then names the bundle.
 * A staging directory nobody holds the lock of belongs to a build that died:
 * with PUBLISHING the bundle may be a mix of two builds (INCOMPLETE: rerun
 * the build, which repairs it), without it nothing was published.
 */
#include "manifest.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STAGE_INFIX ".cubincache-"

char *cbc_bundle_dir_name(const char *path)
{
    const char *base = cbc_path_base(path);
    size_t n = strlen(base);
    static const char ext[] = ".bundle";
    if (n <= sizeof ext - 1 || memcmp(base + n - (sizeof ext - 1), ext, sizeof ext - 1) != 0)
        return NULL;
    char *name = cbc_strndup(base, n - (sizeof ext - 1));
    if (name && !cbc_name_valid(name)) {
        free(name);
        return NULL;
    }
    return name;
}

char *cbc_bundle_file(const char *name, const struct cbc_target *t)
{
    char tn[CBC_TARGET_NAME_MAX];
    return cbc_asprintf("%s.%s.%s", name, cbc_target_name(t, tn),
                        t->kind == CBC_KIND_PTX ? "ptx" : "cubin");
}

bool cbc_bundle_file_label(const char *file, const char *name, struct cbc_target *t)
{
    size_t n = strlen(name), f = strlen(file);
    if (f <= n + 1 || strncmp(file, name, n) != 0 || file[n] != '.')
        return false;
    const char *ext = strrchr(file, '.');
    if (!ext || ext <= file + n)
        return false;
    char label[CBC_TARGET_NAME_MAX];
    size_t ll = (size_t)(ext - (file + n + 1));
    if (ll == 0 || ll >= sizeof label)
        return false;
    memcpy(label, file + n + 1, ll);
    label[ll] = '\0';
    if (!cbc_target_parse(label, t))
        return false;
    return !strcmp(ext, t->kind == CBC_KIND_PTX ? ".ptx" : ".cubin");
}

bool cbc_bundle_is_stage(const char *name, const char *dname)
{
    size_t n = strlen(name), il = strlen(STAGE_INFIX), d = strlen(dname);
    return d == 1 + n + il + 6 && dname[0] == '.' && strncmp(dname + 1, name, n) == 0 &&
           strncmp(dname + 1 + n, STAGE_INFIX, il) == 0;
}

char *cbc_bundle_stage_template(const char *out_dir, const char *name)
{
    return cbc_asprintf("%s/.%s" STAGE_INFIX "XXXXXX", out_dir, name);
}

enum cbc_status cbc_bundle_stages(int outfd, const char *name, struct cbc_stage_info **out,
                                  size_t *n, struct cbc_err *err)
{
    *out = NULL;
    *n = 0;
    int dfd = openat(outfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return cbc_err_set(err, CBC_E_IO, "cannot list the out directory: %s", strerror(errno));
    }
    size_t cap = 0;
    enum cbc_status st = CBC_OK;
    struct dirent *de;
    while (st == CBC_OK && (de = readdir(d))) {
        if (!cbc_bundle_is_stage(name, de->d_name))
            continue;
        struct stat sb;
        if (fstatat(outfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(sb.st_mode))
            continue;
        int sfd = openat(outfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0)
            continue; /* another user's: not ours to judge */
        struct cbc_stage_info si = {0};
        snprintf(si.dname, sizeof si.dname, "%s", de->d_name);
        si.ours = sb.st_uid == geteuid();
        si.publishing = faccessat(sfd, CBC_STAGE_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        if (flock(sfd, LOCK_EX | LOCK_NB) == 0)
            flock(sfd, LOCK_UN);
        else
            si.live = true;
        close(sfd);
        if (!cbc_grow(out, *n, &cap, sizeof **out, 4)) {
            st = cbc_err_oom(err);
            break;
        }
        (*out)[(*n)++] = si;
    }
    closedir(d);
    if (st != CBC_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return st;
}
