/* jobslots.c: a limit on the nvcc processes every `cubincache build` of one
 * user runs at once, so that N builds started by ninja (or make) each with
 * several targets to compile do not run N x targets compilers: one slot per
 * CPU, each a file locked with flock(2) while a compile holds it.
 *
 * Invariants: a slot is released by the kernel when its holder dies, so no
 * crash leaks one; the directory is the user's own (XDG_RUNTIME_DIR, else
 * /tmp/cubincache-jobs-UID created 0700 and checked to be a directory the
 * user owns that nobody else can write, never followed through a symlink),
 * and when it cannot be had the limit is off, never an error; a wait for a
 * slot is bounded, so a holder that hangs cannot hang another build.
 */
#include "jobslots.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct cbc_jobslots {
    int dirfd;
    unsigned n;
    int *fd; /* per slot: the open, locked file, or -1 */
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

struct cbc_jobslots *cbc_jobslots_open(unsigned n)
{
    if (n == 0)
        return NULL;
    struct cbc_jobslots *s = calloc(1, sizeof *s);
    if (!s || !(s->fd = malloc(n * sizeof *s->fd)) || (s->dirfd = open_dir()) < 0) {
        if (s)
            free(s->fd);
        free(s);
        return NULL;
    }
    s->n = n;
    for (unsigned i = 0; i < n; i++)
        s->fd[i] = -1;
    return s;
}

int cbc_jobslots_try(struct cbc_jobslots *s)
{
    if (!s)
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

int cbc_jobslots_wait(struct cbc_jobslots *s, unsigned timeout_ms)
{
    if (!s)
        return -1;
    struct timespec nap = {0, 20 * 1000 * 1000};
    for (unsigned waited = 0;; waited += 20) {
        int i = cbc_jobslots_try(s);
        if (i != CBC_JOBSLOT_BUSY || waited >= timeout_ms)
            return i;
        nanosleep(&nap, NULL);
    }
}

void cbc_jobslots_release(struct cbc_jobslots *s, int slot)
{
    if (!s || slot < 0 || (unsigned)slot >= s->n || s->fd[slot] < 0)
        return;
    close(s->fd[slot]); /* drops the lock */
    s->fd[slot] = -1;
}

void cbc_jobslots_close(struct cbc_jobslots *s)
{
    if (!s)
        return;
    for (unsigned i = 0; i < s->n; i++)
        cbc_jobslots_release(s, (int)i);
    close(s->dirfd);
    free(s->fd);
    free(s);
}
