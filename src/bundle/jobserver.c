/* jobserver.c: the GNU make jobserver client of jobserver.h.
 *
 * Design: the descriptors make names are never used as they are. A pipe
 * inherited as R,W is opened again through /proc/self/fd, which gives this
 * process its own open file description of the same pipe, so it can be
 * non-blocking without changing make's (a blocking read that loses the
 * race for a token to another process would hang; O_NONBLOCK on make's
 * own description would change how make reads it). A FIFO is opened
 * read-write and non-blocking: never waiting for a writer, never seeing
 * end-of-file while open. Both descriptors are close-on-exec, so nvcc
 * does not inherit them.
 *
 * Invariants: what R,W names is used only when both are open pipes, R
 * readable and W writable, and the two ends of one pipe (same inode); a
 * FIFO path only when it is a FIFO once opened. One jobserver is connected
 * per process at a time; its tokens are kept in a static array so the
 * signal handler can write them back with write(2) alone, and the handler
 * acts only in the process that took them (a forked child inherits it
 * until it execs). Taking and giving back run with those signals blocked,
 * so a token is never both written back by the handler and kept.
 */
#include "jobserver.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JS_MAX_TOKENS 1024

struct cbc_jobserver {
    int rfd, wfd; /* ours: the same descriptor for a FIFO */
    bool gone;
};

/* What the signal handler needs, in statics it can read. */
static struct {
    int wfd;
    pid_t owner;
    volatile sig_atomic_t n;
    char tok[JS_MAX_TOKENS];
} g_js = {-1, 0, 0, {0}};

static const int g_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static struct sigaction g_old[sizeof g_sigs / sizeof g_sigs[0]];
static bool g_installed[sizeof g_sigs / sizeof g_sigs[0]];
static struct cbc_jobserver *g_conn;

static void on_signal(int sig)
{
    int saved = errno;
    if (getpid() == g_js.owner && g_js.wfd >= 0 && g_js.n > 0) {
        ssize_t w = write(g_js.wfd, g_js.tok, (size_t)g_js.n);
        (void)w;
        g_js.n = 0;
    }
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++)
        if (g_sigs[i] == sig && g_installed[i]) {
            sigaction(sig, &g_old[i], NULL); /* then as before: default kills, re-raised */
            g_installed[i] = false;
        }
    raise(sig);
    errno = saved;
}

static void block_sigs(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++)
        sigaddset(&set, g_sigs[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

/* ---- the offer -------------------------------------------------------------- */

static bool parse_fd(const char *s, const char *end, int *fd)
{
    if (s == end || end - s > 9)
        return false;
    int v = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    *fd = v;
    return true;
}

static void parse_word(const char *w, size_t n, struct cbc_js_auth *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->text, sizeof out->text, "%.*s", (int)n, w);
    const char *v = memchr(w, '=', n) + 1, *end = w + n;
    if ((size_t)(end - v) > 5 && !strncmp(v, "fifo:", 5)) {
        size_t pl = (size_t)(end - v - 5);
        if (pl < sizeof out->path && v[5] == '/') {
            memcpy(out->path, v + 5, pl);
            out->path[pl] = '\0';
            out->kind = CBC_JS_FIFO;
            return;
        }
        out->kind = CBC_JS_OTHER;
        return;
    }
    const char *comma = memchr(v, ',', (size_t)(end - v));
    out->kind = comma && parse_fd(v, comma, &out->rfd) && parse_fd(comma + 1, end, &out->wfd)
                    ? CBC_JS_PIPE
                    : CBC_JS_OTHER;
}

void cbc_jobserver_parse(const char *flags, struct cbc_js_auth *out)
{
    memset(out, 0, sizeof *out);
    if (!flags)
        return;
    static const char *const names[] = {"--jobserver-auth=", "--jobserver-fds="};
    for (const char *p = flags; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *w = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        size_t n = (size_t)(p - w);
        if (n == 2 && !strncmp(w, "--", 2))
            break; /* variable assignments follow */
        for (size_t k = 0; k < 2; k++)
            if (n > strlen(names[k]) && !strncmp(w, names[k], strlen(names[k])))
                parse_word(w, n, out);
    }
}

void cbc_jobserver_offered(struct cbc_js_auth *out, const char **from)
{
    static const char *const vars[] = {"CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (!v)
            continue;
        cbc_jobserver_parse(v, out);
        if (out->kind != CBC_JS_ABSENT) {
            if (from)
                *from = vars[i];
            return;
        }
    }
    memset(out, 0, sizeof *out);
    if (from)
        *from = NULL;
}

/* ---- connecting --------------------------------------------------------------- */

/* Our own description of inherited descriptor fd, opened `how`. */
static int reopen(int fd, int how)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    return open(p, how | O_NONBLOCK | O_CLOEXEC);
}

static bool check_pipe_fd(int fd, int want, struct stat *st, char *why, size_t len)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fstat(fd, st) != 0) {
        snprintf(why, len, "fd %d is not open (make passes its jobserver only to the commands "
                           "of rules it knows run make: prefix the recipe line with '+')", fd);
        return false;
    }
    if (!S_ISFIFO(st->st_mode)) {
        snprintf(why, len, "fd %d is not a pipe (make passes its jobserver only to the "
                           "commands of rules it knows run make: prefix the recipe line with "
                           "'+')", fd);
        return false;
    }
    int acc = fl & O_ACCMODE;
    if ((want == O_RDONLY && acc == O_WRONLY) || (want == O_WRONLY && acc == O_RDONLY)) {
        snprintf(why, len, "fd %d is not open for %s", fd,
                 want == O_RDONLY ? "reading" : "writing");
        return false;
    }
    return true;
}

static void install(struct cbc_jobserver *j)
{
    g_conn = j;
    g_js.wfd = j->wfd;
    g_js.owner = getpid();
    g_js.n = 0;
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++) {
        struct sigaction now;
        g_installed[i] = false;
        if (sigaction(g_sigs[i], NULL, &now) != 0 || now.sa_handler != SIG_DFL ||
            (now.sa_flags & SA_SIGINFO))
            continue; /* ignored, or someone's handler: left as it is */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof g_sigs / sizeof g_sigs[0]; k++)
            sigaddset(&sa.sa_mask, g_sigs[k]);
        if (sigaction(g_sigs[i], &sa, &g_old[i]) == 0)
            g_installed[i] = true;
    }
}

/* What cbc_jobserver_early saw of the offered descriptors at start. */
static struct {
    bool taken;
    struct cbc_js_auth auth;
    bool ok;
    struct stat rs, ws;
    char why[400];
} g_early;

void cbc_jobserver_early(void)
{
    cbc_jobserver_offered(&g_early.auth, NULL);
    g_early.taken = true;
    if (g_early.auth.kind != CBC_JS_PIPE)
        return;
    g_early.ok = check_pipe_fd(g_early.auth.rfd, O_RDONLY, &g_early.rs, g_early.why,
                               sizeof g_early.why) &&
                 check_pipe_fd(g_early.auth.wfd, O_WRONLY, &g_early.ws, g_early.why,
                               sizeof g_early.why);
}

/* Whether R,W name the pipe they named at start (when that was looked at):
 * a descriptor closed to this process then may since be a file of ours. */
static bool same_as_early(const struct cbc_js_auth *a, const struct stat *rs,
                          const struct stat *ws, char *why, size_t len)
{
    if (!g_early.taken || g_early.auth.kind != CBC_JS_PIPE || g_early.auth.rfd != a->rfd ||
        g_early.auth.wfd != a->wfd)
        return true;
    if (g_early.rs.st_ino != rs->st_ino || g_early.rs.st_dev != rs->st_dev ||
        g_early.ws.st_ino != ws->st_ino || g_early.ws.st_dev != ws->st_dev) {
        snprintf(why, len, "fds %d,%d no longer name the pipe they named when this process "
                           "started", a->rfd, a->wfd);
        return false;
    }
    return true;
}

struct cbc_jobserver *cbc_jobserver_connect(const struct cbc_js_auth *a, char *why,
                                            size_t why_len)
{
    snprintf(why, why_len, "%s", "");
    if (g_conn) {
        snprintf(why, why_len, "this process is already connected to a jobserver");
        return NULL;
    }
    int rfd = -1, wfd = -1;
    struct stat rs, ws;
    switch (a->kind) {
    case CBC_JS_ABSENT:
        snprintf(why, why_len, "no jobserver is offered");
        return NULL;
    case CBC_JS_OTHER:
        snprintf(why, why_len, "'%s' is not a form this client reads (fifo:PATH or R,W)",
                 a->text);
        return NULL;
    case CBC_JS_PIPE:
        if (g_early.taken && g_early.auth.kind == CBC_JS_PIPE && g_early.auth.rfd == a->rfd &&
            g_early.auth.wfd == a->wfd && !g_early.ok) {
            snprintf(why, why_len, "%s", g_early.why); /* what start saw: closed, not a pipe */
            return NULL;
        }
        if (!check_pipe_fd(a->rfd, O_RDONLY, &rs, why, why_len) ||
            !check_pipe_fd(a->wfd, O_WRONLY, &ws, why, why_len) ||
            !same_as_early(a, &rs, &ws, why, why_len))
            return NULL;
        if (rs.st_ino != ws.st_ino || rs.st_dev != ws.st_dev) {
            snprintf(why, why_len, "fds %d and %d are not the two ends of one pipe", a->rfd,
                     a->wfd);
            return NULL;
        }
        rfd = reopen(a->rfd, O_RDONLY);
        wfd = rfd >= 0 ? reopen(a->wfd, O_WRONLY) : -1;
        if (wfd < 0) {
            int e = errno;
            if (rfd >= 0)
                close(rfd);
            snprintf(why, why_len, "cannot open the pipe of fds %d,%d again through "
                                   "/proc/self/fd: %s", a->rfd, a->wfd, strerror(e));
            return NULL;
        }
        break;
    case CBC_JS_FIFO:
        /* never blocks: O_NONBLOCK, and read-write needs no other end */
        rfd = open(a->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (rfd < 0) {
            snprintf(why, why_len, "cannot open '%s': %s", a->path, strerror(errno));
            return NULL;
        }
        if (fstat(rfd, &rs) != 0 || !S_ISFIFO(rs.st_mode)) {
            close(rfd);
            snprintf(why, why_len, "'%s' is not a FIFO", a->path);
            return NULL;
        }
        wfd = rfd;
        break;
    }
    struct cbc_jobserver *j = calloc(1, sizeof *j);
    if (!j) {
        close(rfd);
        if (wfd != rfd)
            close(wfd);
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    j->rfd = rfd;
    j->wfd = wfd;
    install(j);
    return j;
}

/* ---- tokens ------------------------------------------------------------------ */

bool cbc_jobserver_acquire(struct cbc_jobserver *j)
{
    if (!j || j->gone || g_js.n >= JS_MAX_TOKENS)
        return false;
    sigset_t old;
    block_sigs(&old);
    char c;
    ssize_t r;
    do
        r = read(j->rfd, &c, 1);
    while (r < 0 && errno == EINTR);
    if (r == 1)
        g_js.tok[g_js.n++] = c;
    else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        j->gone = true; /* every writer closed it, or it broke */
    sigprocmask(SIG_SETMASK, &old, NULL);
    return r == 1;
}

int cbc_jobserver_fd(const struct cbc_jobserver *j)
{
    return j && !j->gone ? j->rfd : -1;
}

bool cbc_jobserver_gone(const struct cbc_jobserver *j)
{
    return j && j->gone;
}

size_t cbc_jobserver_held(const struct cbc_jobserver *j)
{
    return j ? (size_t)g_js.n : 0;
}

void cbc_jobserver_release(struct cbc_jobserver *j)
{
    if (!j || g_js.n == 0)
        return;
    sigset_t old;
    block_sigs(&old);
    char c = g_js.tok[g_js.n - 1];
    ssize_t w;
    do
        w = write(j->wfd, &c, 1);
    while (w < 0 && errno == EINTR);
    /* a pipe that cannot take one byte back (full: nobody reads it) is not
     * a jobserver; the token is dropped rather than waited for */
    g_js.n--;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

void cbc_jobserver_close(struct cbc_jobserver *j)
{
    if (!j)
        return;
    while (g_js.n > 0)
        cbc_jobserver_release(j);
    for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++)
        if (g_installed[i]) {
            sigaction(g_sigs[i], &g_old[i], NULL);
            g_installed[i] = false;
        }
    g_js.wfd = -1;
    g_conn = NULL;
    if (j->wfd != j->rfd)
        close(j->wfd);
    close(j->rfd);
    free(j);
}
