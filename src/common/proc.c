/* proc.c: starting nvcc and friends with posix_spawn, waiting, capturing.
 *
 * Design: children get their output redirected to files, not pipes, so a
 * parent running many compiles in parallel never deadlocks on a full pipe
 * and can show each target's diagnostics as one block afterwards.
 */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum cbc_status cbc_proc_spawn(char *const argv[], const char *stdout_path, const char *stderr_path,
                               pid_t *pid, struct cbc_err *err)
{
    posix_spawn_file_actions_t fa;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return cbc_err_oom(err);
    int rc = 0;
    if (stdout_path)
        rc |= posix_spawn_file_actions_addopen(&fa, 1, stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (stderr_path) {
        if (stdout_path && strcmp(stdout_path, stderr_path) == 0)
            rc |= posix_spawn_file_actions_adddup2(&fa, 1, 2);
        else
            rc |= posix_spawn_file_actions_addopen(&fa, 2, stderr_path, O_WRONLY | O_CREAT | O_TRUNC,
                                                   0600);
    }
    if (rc != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return cbc_err_oom(err);
    }
    rc = strchr(argv[0], '/') ? posix_spawn(pid, argv[0], &fa, NULL, argv, environ)
                              : posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0)
        return cbc_err_set(err, CBC_E_NVCC, "cannot run '%s': %s", argv[0], strerror(rc));
    return CBC_OK;
}

int cbc_proc_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return -1;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return -1;
}

enum cbc_status cbc_proc_run_capture(char *const argv[], char **output, int *exit_code,
                                     struct cbc_err *err)
{
    char tmpl[] = "/tmp/cubincache-out.XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0)
        return cbc_err_set(err, CBC_E_IO, "cannot create a temporary file in /tmp: %s",
                           strerror(errno));
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
    return s;
}

uint64_t cbc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
