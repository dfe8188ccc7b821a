/* test_jobserver.c: the GNU make jobserver client (src/bundle/jobserver.c)
 * and the compile budget over it (jobslots.c): the offer as make and cargo
 * spell it, tokens taken without blocking and given back, hostile
 * descriptors refused by name, tokens returned by a signal. */
#include <criterion/criterion.h>

#include "jobserver.h"
#include "jobslots.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Bytes waiting in a pipe, read without blocking (and kept out). */
static size_t drain(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    char buf[256];
    size_t n = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0)
        n += (size_t)r;
    fcntl(fd, F_SETFL, fl);
    return n;
}

Test(jobserver, parses_both_forms_and_the_old_spelling)
{
    struct cbc_js_auth a;
    cbc_jobserver_parse(" -j2 --jobserver-auth=3,4", &a);
    cr_assert_eq(a.kind, CBC_JS_PIPE);
    cr_assert_eq(a.rfd, 3);
    cr_assert_eq(a.wfd, 4);
    cbc_jobserver_parse("-j --jobserver-fds=6,7 --jobserver-auth=8,9", &a); /* cargo: the last */
    cr_assert_eq(a.kind, CBC_JS_PIPE);
    cr_assert_eq(a.rfd, 8);
    cbc_jobserver_parse("-j4 --jobserver-fds=5,6", &a);
    cr_assert_eq(a.kind, CBC_JS_PIPE);
    cr_assert_eq(a.wfd, 6);
    cbc_jobserver_parse("-j8 --jobserver-auth=fifo:/tmp/GMfifo123", &a);
    cr_assert_eq(a.kind, CBC_JS_FIFO);
    cr_assert_str_eq(a.path, "/tmp/GMfifo123");
    cr_assert_str_eq(a.text, "--jobserver-auth=fifo:/tmp/GMfifo123");
}

Test(jobserver, ignores_what_is_not_an_offer)
{
    struct cbc_js_auth a;
    cbc_jobserver_parse("", &a);
    cr_assert_eq(a.kind, CBC_JS_ABSENT);
    cbc_jobserver_parse("-j2 -k", &a);
    cr_assert_eq(a.kind, CBC_JS_ABSENT);
    /* after " -- " come variable assignments, never options */
    cbc_jobserver_parse("-k -- X=--jobserver-auth=3,4", &a);
    cr_assert_eq(a.kind, CBC_JS_ABSENT);
    cbc_jobserver_parse("--jobserver-auth=gmake_semaphore_1234", &a);
    cr_assert_eq(a.kind, CBC_JS_OTHER);
    cbc_jobserver_parse("--jobserver-auth=3,x", &a);
    cr_assert_eq(a.kind, CBC_JS_OTHER);
    cbc_jobserver_parse("--jobserver-auth=fifo:relative", &a);
    cr_assert_eq(a.kind, CBC_JS_OTHER);
    cbc_jobserver_parse("--jobserver-auth=12345678901,2", &a);
    cr_assert_eq(a.kind, CBC_JS_OTHER);
}

Test(jobserver, takes_tokens_without_blocking_and_gives_them_back)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "++", 2), 2);
    struct cbc_js_auth a = {.kind = CBC_JS_PIPE, .rfd = p[0], .wfd = p[1]};
    char why[400];
    struct cbc_jobserver *j = cbc_jobserver_connect(&a, why, sizeof why);
    cr_assert(j, "%s", why);
    cr_assert(cbc_jobserver_acquire(j));
    cr_assert(cbc_jobserver_acquire(j));
    cr_assert(!cbc_jobserver_acquire(j), "a third token out of two");
    cr_assert_eq(cbc_jobserver_held(j), 2);
    /* make's own descriptor keeps its flags */
    cr_assert_eq(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
    cbc_jobserver_release(j);
    cr_assert_eq(drain(p[0]), 1);
    cbc_jobserver_close(j);
    cr_assert_eq(drain(p[0]), 1, "close gives back what is held");
}

Test(jobserver, refuses_descriptors_that_are_not_one_pipe)
{
    char why[400];
    struct cbc_js_auth a = {.kind = CBC_JS_PIPE, .rfd = 900, .wfd = 901};
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "fd 900 is not open"), "%s", why);
    int f = open("/dev/null", O_RDWR);
    a.rfd = a.wfd = f;
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "is not a pipe"), "%s", why);
    int p[2], q[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(pipe(q), 0);
    a.rfd = p[0], a.wfd = q[1];
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "are not the two ends of one pipe"), "%s", why);
    a.rfd = p[1], a.wfd = p[0]; /* swapped: a write end to read */
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "is not open for reading"), "%s", why);
}

Test(jobserver, refuses_a_fifo_path_that_is_not_a_fifo)
{
    char dir[] = "/tmp/cbc-js.XXXXXX", path[64], why[400];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/plain", dir);
    FILE *f = fopen(path, "w");
    fputs("x", f);
    fclose(f);
    struct cbc_js_auth a = {.kind = CBC_JS_FIFO};
    snprintf(a.path, sizeof a.path, "%s", path);
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "is not a FIFO"), "%s", why);
    snprintf(a.path, sizeof a.path, "%s/none", dir);
    cr_assert_null(cbc_jobserver_connect(&a, why, sizeof why));
    cr_assert(strstr(why, "No such file"), "%s", why);
    /* a FIFO nobody writes: opening it never waits, nor does a take */
    snprintf(a.path, sizeof a.path, "%s/fifo", dir);
    cr_assert_eq(mkfifo(a.path, 0600), 0);
    struct cbc_jobserver *j = cbc_jobserver_connect(&a, why, sizeof why);
    cr_assert(j, "%s", why);
    cr_assert(!cbc_jobserver_acquire(j));
    cr_assert(!cbc_jobserver_gone(j));
    cbc_jobserver_close(j);
    unlink(a.path);
    unlink(path);
    rmdir(dir);
}

Test(jobserver, a_signal_gives_the_tokens_back)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "abc", 3), 3);
    pid_t c = fork();
    if (c == 0) {
        struct cbc_js_auth a = {.kind = CBC_JS_PIPE, .rfd = p[0], .wfd = p[1]};
        char why[400];
        struct cbc_jobserver *j = cbc_jobserver_connect(&a, why, sizeof why);
        if (!j || !cbc_jobserver_acquire(j) || !cbc_jobserver_acquire(j))
            _exit(3);
        raise(SIGTERM);
        _exit(4); /* never: the default action follows the handler */
    }
    int status;
    cr_assert_eq(waitpid(c, &status, 0), c);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM, "status %d", status);
    cr_assert_eq(drain(p[0]), 3, "the two tokens the child held are back");
}

Test(jobslots, the_first_compile_runs_on_the_implicit_job)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    cr_assert_eq(write(p[1], "+", 1), 1);
    char flags[64];
    snprintf(flags, sizeof flags, "-j2 --jobserver-auth=%d,%d", p[0], p[1]);
    setenv("MAKEFLAGS", flags, 1);
    unsetenv("CARGO_MAKEFLAGS");
    struct cbc_jobslots *s = cbc_jobslots_open(8, NULL, NULL, NULL);
    cr_assert(s);
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_NONE);  /* the implicit job */
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_NONE);  /* the one token */
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_BUSY);
    cr_assert_geq(cbc_jobslots_fd(s), 0, "BUSY for a token: a descriptor to wait on");
    cbc_jobslots_release(s, CBC_JOBSLOT_NONE);
    cr_assert_eq(drain(p[0]), 1, "one compile ended: its token is back at once");
    cbc_jobslots_release(s, CBC_JOBSLOT_NONE);
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_NONE, "nothing runs: no token needed");
    cbc_jobslots_close(s);
    unsetenv("MAKEFLAGS");
}

Test(jobslots, an_unusable_offer_is_one_compile_at_a_time)
{
    setenv("MAKEFLAGS", "-j4 --jobserver-auth=950,951", 1);
    unsetenv("CARGO_MAKEFLAGS");
    struct cbc_jobslots *s = cbc_jobslots_open(8, NULL, NULL, NULL);
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_NONE);
    cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_BUSY);
    cr_assert_eq(cbc_jobslots_fd(s), -1, "nothing to wait for but our own compile");
    cbc_jobslots_close(s);
    unsetenv("MAKEFLAGS");
}

Test(jobslots, no_jobserver_no_limit_but_the_callers)
{
    unsetenv("MAKEFLAGS");
    unsetenv("MFLAGS");
    unsetenv("CARGO_MAKEFLAGS");
    unsetenv("CUBINCACHE_SHARED_JOBS");
    struct cbc_jobslots *s = cbc_jobslots_open(0, NULL, NULL, NULL);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(cbc_jobslots_try(s), CBC_JOBSLOT_NONE);
    cbc_jobslots_close(s);
}
