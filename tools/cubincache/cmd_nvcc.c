/* cmd_nvcc.c: `cubincache nvcc ARGS...` and `cubincache /path/to/nvcc
 * ARGS...`, the compiler launcher (src/launch). Every argument belongs to
 * nvcc, so this command has no options of its own: the cache comes from
 * $CUBINCACHE_DIR (CUBINCACHE_DISABLE=1 turns it off) and warnings go to
 * stderr as "cubincache: warning: ...". A command the launcher does not
 * cache is replaced by nvcc itself (exec), so it behaves exactly as nvcc.
 */
#include "cmds.h"
#include "launch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_msg(void *ctx, enum cbc_msg_kind kind, const char *text)
{
    if (kind == CBC_MSG_WARNING)
        tool_warn(ctx, "%s", text);
    else if (kind == CBC_MSG_NOTE && getenv("CUBINCACHE_LAUNCH_DEBUG")) {
        fputs("cubincache: note: ", stderr);
        tool_fputs_escaped(text, stderr);
        fputc('\n', stderr);
    }
}

/* Runs the command as nvcc would, in place of this process. */
static int exec_nvcc(struct tool *t, const char *nvcc, int argc, char **argv)
{
    struct cbc_err err = {0};
    char *path = cbc_launch_nvcc_path(nvcc, &err);
    if (!path) {
        tool_error(t, &err);
        return tool_exit_code(err.status);
    }
    argv[0] = path;
    (void)argc;
    fflush(NULL);
    execv(path, argv);
    tool_errorf(t, "cannot run '%s': %s", path, strerror(errno));
    return EXIT_ENV;
}

static void replay(const char *data, size_t len, FILE *f)
{
    if (data && len)
        fwrite(data, 1, len, f);
    fflush(f);
}

int cmd_nvcc(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache");
    const char *dis = getenv("CUBINCACHE_DISABLE");
    struct cbc_launch_opts o = {
        .nvcc = argv[0],
        .argv = argv + 1,
        .argc = (size_t)(argc - 1),
        .no_cache = dis && *dis && strcmp(dis, "0") != 0,
        .msg = on_msg,
        .msg_ctx = &t,
    };
    struct cbc_launch_result r;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_launch_run(&o, &r, &err);
    if (st != CBC_OK) {
        cbc_launch_result_release(&r);
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    if (r.outcome == CBC_LAUNCH_UNCACHEABLE) {
        if (getenv("CUBINCACHE_LAUNCH_DEBUG"))
            tool_note(&t, "running nvcc as it is: %s", r.why);
        cbc_launch_result_release(&r);
        return exec_nvcc(&t, o.nvcc, argc, argv);
    }
    replay(r.out, r.out_len, stdout);
    replay(r.errs, r.errs_len, stderr);
    int code = r.exit_code;
    cbc_launch_result_release(&r);
    return code;
}
