/* test_trace.c: the lookup trace and what a compile's record is made of:
 * the shim's log of real programs (the places they looked at and found
 * nothing, what they read and wrote), strict parsing of logs, and the
 * collection of a finished compile (collect.c): probes grouped under the
 * deepest existing directory, a file where the compile found none makes
 * the record miss, and each reason a result is not cacheable or not
 * recordable. */
#include "direct.h"
#include "trace.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char dir[64];

static void mk(const char *rel, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s", p);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/cbc-trace.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof p, "%s/inc1", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/inc2", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/tmp", dir);
    mkdir(p, 0755);
    mk("inc1/h.h", "#define VAL 1\n");
    mk("k.cu", "#include \"h.h\"\n");
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* Runs a shell line under the shim named by CBC_TRACE_SHIM (the test
 * binary does not sit beside it), logging into dir/tmp/log. */
static void traced(const char *line, char *log, size_t n)
{
    const char *shim = getenv("CBC_TRACE_SHIM");
    cr_assert_not_null(shim, "CBC_TRACE_SHIM is not set (meson sets it)");
    snprintf(log, n, "%s/tmp/log", dir);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    close(fd);
    pid_t p = fork();
    if (p == 0) {
        setenv("LD_PRELOAD", shim, 1);
        setenv(CBC_TRACE_LOG_ENV, log, 1);
        if (chdir(dir) != 0)
            _exit(126);
        execl("/bin/sh", "sh", "-c", line, (char *)NULL);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(p, &status, 0), p);
    cr_assert(WIFEXITED(status), "the traced shell died");
}

static bool has(char *const *v, size_t n, const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    return cbc_trace_has(v, n, p);
}

TestSuite(trace, .init = setup, .fini = teardown);

Test(trace, the_shim_logs_reads_writes_and_empty_places)
{
    char log[128];
    traced("cat inc2/h.h 2>/dev/null; cat inc1/h.h > out.txt; test -e nothere.gch", log,
           sizeof log);
    struct cbc_trace t;
    cr_assert_eq(cbc_trace_load(log, &t, NULL), CBC_OK);
    cr_assert_geq(t.n_procs, 2, "the shell and cat should both have loaded the shim");
    cr_assert(has(t.absent, t.n_absent, "inc2/h.h"), "the empty place is not in the trace");
    cr_assert(has(t.read, t.n_read, "inc1/h.h"), "the read is not in the trace");
    cr_assert(has(t.wrote, t.n_wrote, "out.txt"), "the write is not in the trace");
    cr_assert_not(has(t.read, t.n_read, "out.txt"), "a written file counted as read");
    cbc_trace_release(&t);
}

Test(trace, damaged_logs_are_refused_whole)
{
    struct cbc_trace t;
    static const uint8_t good[] = "R/a\0A/b/c\0W/d\0P/bin/sh";
    cr_assert_eq(cbc_trace_parse(good, sizeof good, "good", &t, NULL), CBC_OK);
    cr_assert_eq(t.n_read, 1);
    cr_assert_eq(t.n_absent, 1);
    cr_assert_eq(t.n_wrote, 1);
    cr_assert_eq(t.n_procs, 1);
    cbc_trace_release(&t);
    cr_assert_eq(cbc_trace_parse(good, sizeof good - 1, "cut", &t, NULL), CBC_E_FORMAT,
                 "a record without its NUL was taken");
    static const uint8_t kind[] = "R/a\0X/b\0";
    cr_assert_eq(cbc_trace_parse(kind, sizeof kind - 1, "kind", &t, NULL), CBC_E_FORMAT);
    static const uint8_t rel[] = "Rrelative\0";
    cr_assert_eq(cbc_trace_parse(rel, sizeof rel - 1, "rel", &t, NULL), CBC_E_FORMAT);
    static const uint8_t empty[] = "A\0";
    cr_assert_eq(cbc_trace_parse(empty, sizeof empty - 1, "empty", &t, NULL), CBC_E_FORMAT);
}

/* A compile that looked for h.h in inc2, then in inc1 where it read it. */
static void fake_compile(struct cbc_trace *t, const char *extra)
{
    char log[128], line[512];
    snprintf(line, sizeof line, "cat k.cu > /dev/null; cat inc2/h.h 2>/dev/null; cat inc1/h.h > "
             "/dev/null; cat inc2/sys/x.h 2>/dev/null; %s", extra ? extra : "true");
    traced(line, log, sizeof log);
    cr_assert_eq(cbc_trace_load(log, t, NULL), CBC_OK);
}

static void collect(const struct cbc_trace *t, uint64_t started, const char *dep,
                    struct cbc_collect_out *out, struct cbc_filememo *m)
{
    char src[128], d[128], own[128];
    snprintf(src, sizeof src, "%s/k.cu", dir);
    snprintf(d, sizeof d, "%s/%s", dir, dep ? dep : "inc1/h.h");
    snprintf(own, sizeof own, "%s/tmp", dir);
    char *deps[] = {d};
    const char *owns[] = {own};
    struct cbc_collect_in in = {deps, 1, src, t, owns, 1, NULL, 0, started, m};
    cr_assert_eq(cbc_collect(&in, out, NULL), CBC_OK);
}

static void age_all(void)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "find '%s' -exec touch -h -d '1 hour ago' {} +", dir);
    cr_assert_eq(system(cmd), 0);
    struct timespec ts = {1, 50000000};
    nanosleep(&ts, NULL); /* the touch set every ctime to now */
}

Test(trace, a_shadowing_header_makes_the_record_miss)
{
    age_all();
    uint64_t started = cbc_now_ns();
    struct cbc_trace t;
    fake_compile(&t, NULL);
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_collect_out out;
    collect(&t, started, NULL, &out, m);
    cr_assert(out.cacheable, "%s", out.why);
    cr_assert(out.recordable, "%s", out.why);
    cr_assert_eq(out.n_side, 0);
    /* grouped under the deepest directory that exists: inc2 for both */
    char inc2[128];
    snprintf(inc2, sizeof inc2, "%s/inc2", dir);
    bool found = false;
    for (size_t i = 0; i < out.list.n_probes; i++)
        if (!strcmp(out.list.probes[i].dir, inc2)) {
            found = true;
            cr_assert_eq(out.list.probes[i].n, 2, "inc2 should hold h.h and sys/x.h");
        }
    cr_assert(found, "no probe under '%s'", inc2);
    out.list.recorded_ns = cbc_now_ns();
    bool stale;
    cr_assert(cbc_dep_list_match(&out.list, m, &stale));
    cbc_filememo_free(m);
    mk("inc2/h.h", "#define VAL 2\n");
    m = cbc_filememo_new();
    cr_assert_not(cbc_dep_list_match(&out.list, m, &stale), "the shadowing header matched");
    cbc_filememo_free(m);
    cbc_collect_release(&out);
    cbc_trace_release(&t);
}

Test(trace, each_reason_not_to_cache_is_found)
{
    age_all();
    struct cbc_trace t;
    struct cbc_collect_out out;
    struct cbc_filememo *m;
    /* a file the trace did not see read: not recordable */
    mk("other.h", "//\n");
    age_all();
    uint64_t started = cbc_now_ns();
    fake_compile(&t, NULL);
    m = cbc_filememo_new();
    collect(&t, started, "other.h", &out, m);
    cr_assert_not(out.recordable, "a dependency the trace never read was recordable");
    cr_assert(strstr(out.why, "other.h"), "%s", out.why);
    cbc_collect_release(&out);
    cbc_filememo_free(m);
    cbc_trace_release(&t);
    /* the time macros: not recordable */
    mk("inc1/h.h", "const char *when = __DATE__;\n");
    age_all();
    started = cbc_now_ns();
    fake_compile(&t, NULL);
    m = cbc_filememo_new();
    collect(&t, started, NULL, &out, m);
    cr_assert_not(out.recordable, "__DATE__ was recordable");
    cbc_collect_release(&out);
    cbc_filememo_free(m);
    cbc_trace_release(&t);
    /* an input changed after the start: not cacheable */
    mk("inc1/h.h", "#define VAL 1\n");
    age_all();
    started = cbc_now_ns();
    fake_compile(&t, NULL);
    mk("inc1/h.h", "#define VAL 3\n");
    m = cbc_filememo_new();
    collect(&t, started, NULL, &out, m);
    cr_assert_not(out.cacheable, "a header edited during the compile was cacheable");
    cbc_collect_release(&out);
    cbc_filememo_free(m);
    cbc_trace_release(&t);
    /* a place that was empty is not empty any more: not cacheable */
    age_all();
    started = cbc_now_ns();
    fake_compile(&t, NULL);
    mk("inc2/h.h", "#define VAL 2\n");
    m = cbc_filememo_new();
    collect(&t, started, NULL, &out, m);
    cr_assert_not(out.cacheable, "a header that appeared during the compile was cacheable");
    cbc_collect_release(&out);
    cbc_filememo_free(m);
    cbc_trace_release(&t);
}

Test(trace, side_outputs_and_future_times_are_reported)
{
    age_all();
    char cmd[256];
    snprintf(cmd, sizeof cmd, "touch -d '+2 hours' '%s/inc1/h.h'", dir);
    cr_assert_eq(system(cmd), 0);
    struct timespec ts = {1, 50000000};
    nanosleep(&ts, NULL);
    uint64_t started = cbc_now_ns();
    struct cbc_trace t;
    fake_compile(&t, "echo x > side.su; echo y > tmp/ours");
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_collect_out out;
    collect(&t, started, NULL, &out, m);
    cr_assert(out.cacheable, "a future mtime alone made it uncacheable: %s", out.why);
    cr_assert_not_null(out.future, "the future modification time was not reported");
    cr_assert_eq(out.n_side, 1, "expected side.su only, got %zu", out.n_side);
    cr_assert(strstr(out.side[0], "side.su"));
    cbc_collect_release(&out);
    cbc_filememo_free(m);
    cbc_trace_release(&t);
}
