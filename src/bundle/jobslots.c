/* jobslots.c: the compile budget of one build (jobslots.h): a cap on its
 * own compiles, the GNU make jobserver when one is offered, and the opt-in
 * shared slots.
 *
 * Design: the jobserver's tokens are counted, not tied to compiles: with
 * `running` compiles granted, the build needs running - 1 tokens (the
 * first runs on the job the build itself holds), so a compile that ends
 * gives a token back whenever more are held than that, and one more is
 * read only when a compile is to start beside the others. A build that
 * cannot get a token runs its compiles one at a time: it never waits for
 * one with nothing running, so a jobserver that never gives a token (or
 * that is gone) slows a build, never stops it.
 *
 * The shared slots (shared_jobs): one file per slot in the user's own
 * directory (XDG_RUNTIME_DIR, else /tmp/cubincache-jobs-UID created 0700
 * and checked to be a directory the user owns that nobody else can write,
 * never followed through a symlink), each flock(2)ed while a compile holds
 * it; the kernel frees a slot when its holder dies, a wait for one is
 * bounded, and when the directory cannot be had the limit is off, never an
 * error. They are off by default: a build then waits on nothing but its
 * own compiles, whatever else the user runs.
 */
#include "jobslots.h"
#include "jobserver.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cbc_jobslots {
    struct cbc_jobserver *js;
    bool serial;      /* a jobserver is offered but unusable: one compile at a time */
    bool want_token;  /* the last try was BUSY for want of a token */
    size_t running;   /* granted and not released */
    int dirfd;        /* shared slots: their directory, or -1 */
    unsigned n;       /* shared slots: how many */
    int *fd;          /* per slot: the open, locked file, or -1 */
};

/* The user's own directory for the slots, opened; -1 when there is none. */
static int open_dir(void)
{
    char path[4096];
    const char *rt = getenv("XDG_RUNTIME_DIR");
    if (rt && *rt == '/')
        snprintf(path, sizeof path, "%s/cubincache-jobs", rt);
    else
        snprintf(path, sizeof path, "/tmp/cubincache-jobs-%u", (unsigned)getuid());
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & 022))) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* shared_jobs as the store (or, without one, the environment) has it. */
static int shared_jobs(struct cbc_store *store, cbc_msg_fn msg, void *msg_ctx)
{
    const struct cbc_setting_def *d = &cbc_settings[CBC_SET_SHARED_JOBS];
    struct cbc_setting_value v;
    struct cbc_err e = {0};
    if (store) {
        if (cbc_store_setting(store, CBC_SET_SHARED_JOBS, &v, &e) != CBC_OK) {
            cbc_say(msg, msg_ctx, CBC_MSG_WARNING, "%s; no shared limit on compiles", e.msg);
            return 0;
        }
    } else {
        const char *env = getenv(d->env);
        snprintf(v.value, sizeof v.value, "%s", env ? env : "");
    }
    int n = cbc_setting_shared_jobs(v.value);
    if (n < 0)
        cbc_say(msg, msg_ctx, CBC_MSG_WARNING, "%s='%s': %s; no shared limit on compiles",
                d->env, v.value, d->check(v.value));
    return n < 0 ? 0 : n;
}

struct cbc_jobslots *cbc_jobslots_open(int jobs, struct cbc_store *store, cbc_msg_fn msg,
                                       void *msg_ctx)
{
    struct cbc_jobslots *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->dirfd = -1;
    struct cbc_js_auth a;
    const char *from = NULL;
    cbc_jobserver_offered(&a, &from);
    if (a.kind != CBC_JS_ABSENT) {
        char why[600];
        s->js = cbc_jobserver_connect(&a, why, sizeof why);
        if (!s->js) {
            s->serial = true;
            cbc_say(msg, msg_ctx, CBC_MSG_WARNING,
                    "%s offers a jobserver (%s) that cannot be used: %s; running one compile "
                    "at a time",
                    from, a.text, why);
        }
    }
    int n = jobs > 0 ? 0 : shared_jobs(store, msg, msg_ctx);
    if (n > 0 && (s->fd = malloc((size_t)n * sizeof *s->fd)) && (s->dirfd = open_dir()) >= 0) {
        s->n = (unsigned)n;
        for (int i = 0; i < n; i++)
            s->fd[i] = -1;
    }
    return s;
}

/* A free shared slot, taken: its index, BUSY when every slot is held, NONE
 * when there are none (off, or no slot file opens). */
static int try_slot(struct cbc_jobslots *s)
{
    if (s->n == 0)
        return CBC_JOBSLOT_NONE;
    unsigned start = (unsigned)getpid() % s->n; /* spread first tries over the slots */
    bool held = false; /* some slot is another build's, so one may free */
    for (unsigned k = 0; k < s->n; k++) {
        unsigned i = (start + k) % s->n;
        if (s->fd[i] >= 0) {
            held = true; /* ours: frees when a compile of ours ends */
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "slot.%u", i);
        int fd = openat(s->dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            continue; /* not a slot (a planted link, say): never one */
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            s->fd[i] = fd;
            return (int)i;
        }
        held = true;
        close(fd);
    }
    return held ? CBC_JOBSLOT_BUSY : CBC_JOBSLOT_NONE;
}

int cbc_jobslots_try(struct cbc_jobslots *s)
{
    if (!s)
        return CBC_JOBSLOT_NONE;
    s->want_token = false;
    if (s->running > 0) {
        if (s->serial)
            return CBC_JOBSLOT_BUSY;
        if (s->js && cbc_jobserver_held(s->js) < s->running && !cbc_jobserver_acquire(s->js)) {
            s->want_token = !cbc_jobserver_gone(s->js);
            return CBC_JOBSLOT_BUSY;
        }
    }
    int slot = try_slot(s);
    if (slot == CBC_JOBSLOT_BUSY) {
        if (s->js && cbc_jobserver_held(s->js) > (s->running > 0 ? s->running - 1 : 0))
            cbc_jobserver_release(s->js); /* the token waits in the jobserver, not with us */
        return slot;
    }
    s->running++;
    return slot;
}

int cbc_jobslots_wait(struct cbc_jobslots *s, unsigned timeout_ms)
{
    if (!s)
        return CBC_JOBSLOT_NONE;
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (unsigned waited = 0;; waited += 20) {
        int i = cbc_jobslots_try(s);
        if (i != CBC_JOBSLOT_BUSY)
            return i;
        if (waited >= timeout_ms) {
            s->running++; /* waited enough: then without a slot */
            return CBC_JOBSLOT_NONE;
        }
        nanosleep(&nap, NULL);
    }
}

int cbc_jobslots_fd(const struct cbc_jobslots *s)
{
    return s && s->want_token ? cbc_jobserver_fd(s->js) : -1;
}

void cbc_jobslots_release(struct cbc_jobslots *s, int slot)
{
    if (!s)
        return;
    if (slot >= 0 && (unsigned)slot < s->n && s->fd[slot] >= 0) {
        close(s->fd[slot]); /* drops the lock */
        s->fd[slot] = -1;
    }
    if (s->running > 0)
        s->running--;
    while (s->js && cbc_jobserver_held(s->js) > (s->running > 0 ? s->running - 1 : 0))
        cbc_jobserver_release(s->js);
}

void cbc_jobslots_close(struct cbc_jobslots *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->n; i++)
        if (s->fd[i] >= 0)
            close(s->fd[i]);
    cbc_jobserver_close(s->js);
    if (s->dirfd >= 0)
        close(s->dirfd);
    free(s->fd);
    free(s);
}
