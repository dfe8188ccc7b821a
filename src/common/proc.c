/* proc.c: starting nvcc and friends, waiting for them, capturing output.
 *
 * Design: children get their output redirected to files, not pipes, so a
 * parent running many compiles in parallel never deadlocks on a full pipe
 * and can show each target's diagnostics as one block afterwards.
 *
 * Invariants: a child never outlives the process that started it, however
 * that process ends (kill -9 included): each command runs under a small
 * guard, a fork of ours that leads its own process group, asks the kernel
 * for SIGTERM when its parent dies (PR_SET_PDEATHSIG), and on that signal
 * kills the whole group (nvcc, cicc, ptxas, the host compiler). The guard
 * exits with the command's status (128 + N for a signal). We only ever
 * wait for pids we started: a host program's other children are never
 * reaped by us.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t g_child; /* the guard's command */

char *cbc_which(const char *name)
{
    if (strchr(name, '/'))
        return cbc_strdup(name);
    const char *path = secure_getenv("PATH");
    if (!path)
        return NULL;
    for (const char *p = path;;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        char *cand = n ? cbc_asprintf("%.*s/%s", (int)n, p, name) : cbc_asprintf("./%s", name);
        if (cand && access(cand, X_OK) == 0 && cbc_is_file(cand))
            return cand;
        free(cand);
        if (!e)
            break;
        p = e + 1;
    }
    return NULL;
}


static void guard_kill_group(int sig)
{
    (void)sig;
    if (getpgrp() == getpid())
        kill(0, SIGKILL); /* the guard's own group: itself and everything it started */
    else if (g_child > 0)
        kill(g_child, SIGKILL); /* no group of its own: never signal the caller's */
    _exit(128 + SIGKILL);
}

static int redirect(int fd, const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (f < 0)
        return -1;
    if (f != fd) {
        if (dup2(f, fd) < 0)
            return -1;
        close(f);
    }
    return 0;
}

static _Noreturn void guard_main(char *const argv[], const char *stdout_path,
                                 const char *stderr_path, char *const env[], pid_t parent)
{
    setpgid(0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = guard_kill_group;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) /* the parent died before the line above */
        guard_kill_group(0);
    pid_t c = fork();
    if (c < 0)
        _exit(127);
    g_child = c;
    if (c == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        bool same = stdout_path && stderr_path && strcmp(stdout_path, stderr_path) == 0;
        if ((stdout_path && redirect(1, stdout_path) != 0) ||
            (stderr_path && (same ? dup2(1, 2) < 0 : redirect(2, stderr_path) != 0)))
            _exit(127);
        for (size_t i = 0; env && env[i]; i++)
            if (putenv(env[i]) != 0)
                _exit(127);
        if (strchr(argv[0], '/'))
            execv(argv[0], argv);
        else
            execvp(argv[0], argv);
        int e = errno;
        dprintf(2, "cannot run '%s': %s\n", argv[0], strerror(e));
        _exit(127);
    }
    int status;
    while (waitpid(c, &status, 0) < 0)
        if (errno != EINTR)
            _exit(127);
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    _exit(128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

enum cbc_status cbc_proc_spawn(char *const argv[], const char *stdout_path, const char *stderr_path,
                               pid_t *pid, struct cbc_err *err)
{
    return cbc_proc_spawn_env(argv, stdout_path, stderr_path, NULL, pid, err);
}

enum cbc_status cbc_proc_spawn_env(char *const argv[], const char *stdout_path,
                                   const char *stderr_path, char *const env[], pid_t *pid,
                                   struct cbc_err *err)
{
    if (!strchr(argv[0], '/')) {
        char *p = cbc_which(argv[0]);
        if (!p)
            return cbc_err_set(err, CBC_E_NVCC, "cannot run '%s': not found on PATH", argv[0]);
        free(p);
    } else if (access(argv[0], X_OK) != 0) {
        return cbc_err_set(err, CBC_E_NVCC, "cannot run '%s': %s", argv[0], strerror(errno));
    }
    pid_t parent = getpid();
    fflush(NULL);
    pid_t g = fork();
    if (g < 0)
        return cbc_err_set(err, CBC_E_NVCC, "cannot run '%s': %s", argv[0], strerror(errno));
    if (g == 0)
        guard_main(argv, stdout_path, stderr_path, env, parent);
    *pid = g;
    return CBC_OK;
}

static int status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

int cbc_proc_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    return status_code(status);
}

long cbc_proc_wait_any(const pid_t *pids, size_t n, int *code)
{
    if (n == 0)
        return -1;
    for (;;) {
        for (size_t i = 0; i < n; i++) {
            int status;
            pid_t r = waitpid(pids[i], &status, WNOHANG);
            if (r == pids[i]) {
                *code = status_code(status);
                return (long)i;
            }
            if (r < 0 && errno != EINTR) {
                *code = -1; /* not ours any more (ECHILD): never success */
                return (long)i;
            }
        }
        /* sleep until one of them ends: pidfds where the kernel has them
         * (5.3+), else a short nap */
        struct pollfd fds[64];
        size_t nf = 0;
#ifdef SYS_pidfd_open
        for (size_t i = 0; i < n && nf < CBC_ARRAY_LEN(fds); i++) {
            long fd = syscall(SYS_pidfd_open, pids[i], 0);
            if (fd < 0)
                break;
            fds[nf++] = (struct pollfd){(int)fd, POLLIN, 0};
        }
#endif
        if (nf == n) {
            poll(fds, nf, 1000);
        } else {
            struct timespec ts = {0, 5000000};
            nanosleep(&ts, NULL);
        }
        for (size_t i = 0; i < nf; i++)
            close(fds[i].fd);
    }
}

enum cbc_status cbc_proc_run_capture(char *const argv[], char **output, int *exit_code,
                                     struct cbc_err *err)
{
    const char *td = secure_getenv("TMPDIR");
    char *tmpl = cbc_asprintf("%s/cubincache-out.XXXXXX", td && *td == '/' ? td : "/tmp");
    if (!tmpl)
        return cbc_err_oom(err);
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        enum cbc_status s = cbc_err_set(err, CBC_E_IO, "cannot create a temporary file '%s': %s",
                                        tmpl, strerror(errno));
        free(tmpl);
        return s;
    }
    close(fd);
    pid_t pid;
    enum cbc_status s = cbc_proc_spawn(argv, tmpl, tmpl, &pid, err);
    if (s == CBC_OK) {
        int code = cbc_proc_wait(pid);
        uint8_t *data = NULL;
        size_t len = 0;
        s = cbc_file_read(tmpl, &data, &len, err);
        if (s == CBC_OK) {
            *output = (char *)data;
            *exit_code = code;
        }
    }
    unlink(tmpl);
    free(tmpl);
    return s;
}

uint64_t cbc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t cbc_file_time_tick_ns(void)
{
    struct timespec ts;
    uint64_t t = 0;
    if (clock_getres(CLOCK_REALTIME_COARSE, &ts) == 0)
        t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return t > 1000000 ? t : 1000000; /* a jiffy, and never under 1 ms */
}
