/* publish.c: staging, publishing and retiring a bundle's files (the
 * contract is in publish.h, the layout in manifest/bundledir.c).
 *
 * Every file operation in the out directory goes through its descriptor:
 * names are single components, read with O_NOFOLLOW and replaced by
 * renameat, so a symlink planted at an output's name is replaced, never
 * written through, and never counts as "unchanged".
 */
#include "publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define OUT_LOCK_WAIT_MS 120000 /* another build of this directory publishing */

#define say(r, kind, ...) cbc_say((r)->msg, (r)->msg_ctx, (kind), __VA_ARGS__)

enum cbc_status cbc_stage_init(struct cbc_stage *s, const char *out_dir, const char *name,
                               struct cbc_err *err)
{
    memset(s, 0, sizeof *s);
    s->outfd = s->fd = -1;
    s->out_dir = cbc_strdup(out_dir);
    s->name = cbc_strdup(name);
    if (!s->out_dir || !s->name)
        return cbc_err_oom(err);
    enum cbc_status st = cbc_mkdir_p(out_dir, 0777, err);
    if (st != CBC_OK)
        return st;
    s->outfd = open(out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->outfd < 0)
        return cbc_err_set(err, CBC_E_IO, "cannot open the out directory '%s': %s", out_dir,
                           strerror(errno));
    return CBC_OK;
}

/* Creates the staging directory and takes its lock. Between mkdtemp and
 * flock another build may take the new, unlocked directory for a dead
 * one's and remove it: the lock is then held on a removed directory, which
 * the check after it sees, and the whole step is retried. */
enum cbc_status cbc_stage_begin(struct cbc_stage *s, struct cbc_err *err)
{
    if (s->fd >= 0)
        return CBC_OK;
    for (int attempt = 0; attempt < 8; attempt++) {
        char *tmpl = cbc_bundle_stage_template(s->out_dir, s->name);
        if (!tmpl)
            return cbc_err_oom(err);
        if (!mkdtemp(tmpl)) {
            int e = errno;
            free(tmpl);
            return cbc_err_set(err, CBC_E_IO, "%s a staging directory in '%s': %s",
                               e == ENOSPC || e == EDQUOT ? "no space left to create"
                                                          : "cannot create",
                               s->out_dir, strerror(e));
        }
        const char *base = cbc_path_base(tmpl);
        int fd = openat(s->outfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat a, b;
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &a) == 0 &&
            fstatat(s->outfd, base, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            s->fd = fd;
            s->path = tmpl;
            return CBC_OK;
        }
        if (fd >= 0)
            close(fd);
        free(tmpl);
    }
    return cbc_err_set(err, CBC_E_IO, "cannot create and lock a staging directory in '%s'",
                       s->out_dir);
}

/* Removes every regular file of a staging directory and the directory. */
static void clear_stage(int outfd, int fd, const char *dname)
{
    int dup_fd = dup(fd);
    DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
    if (!d && dup_fd >= 0)
        close(dup_fd);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        struct stat sb;
        if (fstatat(fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode))
            unlinkat(fd, de->d_name, 0);
    }
    if (d)
        closedir(d);
    unlinkat(outfd, dname, AT_REMOVEDIR); /* fails, leaving it, if anything else is inside */
}

void cbc_stage_release(struct cbc_stage *s, bool keep)
{
    if (s->fd >= 0) {
        if (!keep)
            clear_stage(s->outfd, s->fd, cbc_path_base(s->path));
        close(s->fd); /* lets go of the lock */
    }
    if (s->outfd >= 0)
        close(s->outfd);
    free(s->out_dir);
    free(s->name);
    free(s->path);
    memset(s, 0, sizeof *s);
    s->outfd = s->fd = -1;
}

/* An flock of the out directory, waited for: two builds of bundles in one
 * directory publish one after the other. */
static bool lock_out(int fd)
{
    for (int waited = 0; waited < OUT_LOCK_WAIT_MS; waited++) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK)
            return errno == ENOLCK || errno == EINVAL; /* no locks here (NFS): go on unlocked */
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return false;
}

struct retire_list {
    struct cbc_retire *v;
    char **owned; /* file names copied from recovered manifests */
    size_t n, cap, n_owned, cap_owned;
};

static bool retire_add(struct retire_list *l, const char *file, const struct cbc_target *t,
                       const struct cbc_hash *h, bool copy)
{
    char *f = copy ? cbc_strdup(file) : NULL;
    if ((copy && !f) || !cbc_grow(&l->v, l->n, &l->cap, sizeof *l->v, 8) ||
        (copy && !cbc_grow(&l->owned, l->n_owned, &l->cap_owned, sizeof *l->owned, 8))) {
        free(f);
        return false;
    }
    if (copy)
        l->owned[l->n_owned++] = f;
    l->v[l->n++] = (struct cbc_retire){copy ? f : file, *t, *h};
    return true;
}

static void retire_release(struct retire_list *l)
{
    for (size_t i = 0; i < l->n_owned; i++)
        free(l->owned[i]);
    free(l->owned);
    free(l->v);
}

/* RETIRE in a stage: what the build was about to retire, one
 * "<target> <hash> <file>" line each (canonical names only, so no spaces),
 * written before the first rename: a build killed in the middle of
 * retiring leaves the rest to the next build. */
static void retire_render(struct cbc_buf *b, const struct cbc_retire *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char tn[CBC_TARGET_NAME_MAX], hex[CBC_HASH_HEX_LEN + 1];
        cbc_hash_hex(&v[i].hash, hex);
        cbc_buf_printf(b, "%s %s %s\n", cbc_target_name(&v[i].target, tn), hex, v[i].file);
    }
}

static void retire_parse(struct retire_list *rl, const char *text)
{
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[512], tn[CBC_TARGET_NAME_MAX], hex[CBC_HASH_HEX_LEN + 1], file[300];
        struct cbc_target t;
        struct cbc_hash h;
        if (n < sizeof line) {
            memcpy(line, p, n);
            line[n] = '\0';
            if (sscanf(line, "%23s %32s %299s", tn, hex, file) == 3 && cbc_target_parse(tn, &t) &&
                cbc_hash_from_hex(hex, &h))
                retire_add(rl, file, &t, &h, true);
        }
        p = eol ? eol + 1 : NULL;
    }
}

/* Removes the staging directories of builds of this bundle that died,
 * adding the images their staged manifests name to `rl`: they may already
 * have been renamed into the out directory. */
static void recover_dead(struct cbc_stage *s, const struct cbc_publish_req *r,
                         struct retire_list *rl)
{
    struct cbc_stage_info *v = NULL;
    size_t n = 0;
    if (cbc_bundle_stages(s->outfd, s->name, &v, &n, NULL) != CBC_OK)
        return;
    const char *own = s->path ? cbc_path_base(s->path) : "";
    for (size_t i = 0; i < n; i++) {
        if (v[i].live || !v[i].ours || !strcmp(v[i].dname, own))
            continue;
        int fd = openat(s->outfd, v[i].dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) { /* came back to life: not ours to touch */
            close(fd);
            continue;
        }
        char mname[CBC_NAME_MAX + 32];
        snprintf(mname, sizeof mname, "%s.manifest.json", s->name);
        uint8_t *text = NULL;
        size_t len = 0;
        struct cbc_manifest m;
        if (cbc_read_at(fd, v[i].dname, mname, CBC_MANIFEST_MAX, &text, &len, NULL) == CBC_OK &&
            cbc_manifest_parse((const char *)text, len, mname, &m, NULL) == CBC_OK) {
            for (size_t k = 0; k < m.n; k++)
                retire_add(rl, m.entries[k].file, &m.entries[k].target, &m.entries[k].hash, true);
            cbc_manifest_release(&m);
        }
        free(text);
        text = NULL;
        if (cbc_read_at(fd, v[i].dname, CBC_STAGE_RETIRE, CBC_MANIFEST_MAX, &text, &len, NULL) ==
            CBC_OK)
            retire_parse(rl, (const char *)text);
        free(text);
        clear_stage(s->outfd, fd, v[i].dname);
        close(fd);
        say(r, CBC_MSG_WARNING, "removed '%s/%s', left by a build of '%s' that was interrupted%s",
            s->out_dir, v[i].dname, s->name,
            v[i].publishing ? " while publishing: repairing the bundle" : "");
    }
    free(v);
}

/* Whether the out directory holds exactly these bytes under `name` (a
 * regular file, not a link). */
static bool holds(int outfd, const char *dir, const char *name, const void *data, size_t len)
{
    if (outfd < 0)
        return false;
    uint8_t *old = NULL;
    size_t old_len = 0;
    bool same = cbc_read_at(outfd, dir, name, (uint64_t)len + 1, &old, &old_len, NULL) == CBC_OK &&
                old_len == len && (len == 0 || memcmp(old, data, len) == 0);
    free(old);
    return same;
}

bool cbc_stage_holds(const struct cbc_stage *s, const char *file, const void *data, size_t len)
{
    return holds(s->outfd, s->out_dir, file, data, len);
}

/* Whether `file` in the out directory is one of our images as recorded. */
static bool retirable(int outfd, const char *dir, const char *name, const struct cbc_retire *e)
{
    char *canon = cbc_bundle_file(name, &e->target);
    bool ok = canon && strcmp(canon, e->file) == 0;
    free(canon);
    if (!ok)
        return false;
    uint8_t *data = NULL;
    size_t len = 0;
    if (cbc_read_at(outfd, dir, e->file, CBC_FILE_MAX, &data, &len, NULL) != CBC_OK)
        return false;
    struct cbc_hash h;
    cbc_hash_bytes(data, len, &h);
    free(data);
    return cbc_hash_eq(&h, &e->hash);
}

enum cbc_status cbc_publish(struct cbc_stage *s, const struct cbc_publish_req *r,
                            struct cbc_publish_result *res, struct cbc_err *err)
{
    memset(res, 0, sizeof *res);
    if (!lock_out(s->outfd))
        return cbc_err_set(err, CBC_E_IO, "another build has been publishing into '%s' for %d s; "
                           "gave up waiting for it", s->out_dir, OUT_LOCK_WAIT_MS / 1000);
    struct retire_list rl = {0};
    bool *changed = calloc(r->n_files ? r->n_files : 1, sizeof *changed);
    enum cbc_status st = changed ? CBC_OK : cbc_err_oom(err);
    char mname[CBC_NAME_MAX + 32];
    snprintf(mname, sizeof mname, "%s.manifest.json", s->name);
    if (st == CBC_OK)
        recover_dead(s, r, &rl);
    for (size_t i = 0; st == CBC_OK && i < r->n_retire; i++)
        if (!retire_add(&rl, r->retire[i].file, &r->retire[i].target, &r->retire[i].hash, false))
            st = cbc_err_oom(err);
    /* what changes: images, the manifest, and images no longer made */
    for (size_t i = 0; st == CBC_OK && i < r->n_files; i++) {
        const struct cbc_publish_file *f = &r->files[i];
        changed[i] = !holds(s->outfd, s->out_dir, f->file, f->data, f->len);
        res->written += changed[i];
    }
    size_t mlen = strlen(r->manifest_text);
    res->manifest_changed = !holds(s->outfd, s->out_dir, mname, r->manifest_text, mlen);
    size_t n_retire = 0;
    for (size_t i = 0; st == CBC_OK && i < rl.n; i++) {
        bool kept = false;
        for (size_t k = 0; k < r->n_files && !kept; k++)
            kept = strcmp(r->files[k].file, rl.v[i].file) == 0;
        for (size_t k = 0; k < n_retire && !kept; k++)
            kept = strcmp(rl.v[k].file, rl.v[i].file) == 0;
        if (!kept && retirable(s->outfd, s->out_dir, s->name, &rl.v[i]))
            rl.v[n_retire++] = rl.v[i];
    }
    bool any = res->written || res->manifest_changed || n_retire;
    /* stage: every changed file complete on disk before the first rename */
    if (st == CBC_OK && any)
        st = cbc_stage_begin(s, err);
    for (size_t i = 0; st == CBC_OK && any && i < r->n_files; i++)
        if (changed[i])
            st = cbc_write_at(s->fd, s->path, r->files[i].file, r->files[i].data, r->files[i].len,
                              NULL, true, err);
    if (st == CBC_OK && res->manifest_changed)
        st = cbc_write_at(s->fd, s->path, mname, r->manifest_text, mlen, NULL, true, err);
    if (st == CBC_OK && r->depfile)
        st = cbc_file_update(r->depfile, r->depfile_text, strlen(r->depfile_text), NULL, err);
    if (st == CBC_OK && n_retire) {
        struct cbc_buf b = {0};
        retire_render(&b, rl.v, n_retire);
        st = b.oom ? cbc_err_oom(err)
                   : cbc_write_at(s->fd, s->path, CBC_STAGE_RETIRE, b.p, b.len, NULL, true, err);
        cbc_buf_release(&b);
    }
    if (st == CBC_OK && any) {
        char pid[32];
        int pl = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        st = cbc_write_at(s->fd, s->path, CBC_STAGE_MARKER, pid, (size_t)pl, NULL, true, err);
    }
    /* publish: images, then the manifest; a failure from here on leaves the
     * marked stage for the next build (and `check`) to find */
    bool keep = false;
    for (size_t i = 0; st == CBC_OK && any && i <= r->n_files; i++) {
        const char *f = i < r->n_files ? r->files[i].file : mname;
        if (i < r->n_files ? !changed[i] : !res->manifest_changed)
            continue;
        cbc_test_publish_delay();
        if (renameat(s->fd, f, s->outfd, f) != 0) {
            keep = true;
            st = cbc_err_set(err, CBC_E_IO, "cannot publish '%s/%s': %s", s->out_dir, f,
                             strerror(errno));
        } else if (i < r->n_files && r->files[i].hit) {
            say(r, CBC_MSG_EXPLAIN, "%s: rewrote it (it was missing or differed from the cache)",
                f);
        }
    }
    if (st == CBC_OK && any)
        fsync(s->outfd);
    /* retire what this build no longer makes, now that the manifest says so */
    for (size_t i = 0; st == CBC_OK && i < n_retire; i++) {
        cbc_test_publish_delay();
        if (retirable(s->outfd, s->out_dir, s->name, &rl.v[i]) &&
            unlinkat(s->outfd, rl.v[i].file, 0) == 0)
            say(r, CBC_MSG_EXPLAIN, "removed %s: the target is no longer asked for",
                rl.v[i].file);
    }
    flock(s->outfd, LOCK_UN);
    if (keep && s->fd >= 0) {
        /* the lock on the stage goes with the process; leave it marked */
        close(s->fd);
        s->fd = -1;
    }
    retire_release(&rl);
    free(changed);
    return st;
}
