/* tool.c: message printing and exit codes for the commands (tool.h).
 *
 * Errors read "cubincache build: error: <what>" with an optional indented
 * "hint: <remedy>" line; colour only on a terminal and never with NO_COLOR.
 * Every message is escaped where it is printed (common.h, cbc_escape): what
 * it quotes of a file name, a file, the environment or the driver can
 * never move the cursor, retitle or clear the terminal, or forge a line.
 */
#include "tool.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tool_init(struct tool *t, const char *prog)
{
    t->prog = prog;
    t->verbosity = 0;
    const char *nc = getenv("NO_COLOR");
    t->color = isatty(2) && !(nc && *nc);
}

static void vmsg(const struct tool *t, const char *label, const char *color, const char *fmt,
                 va_list ap) CBC_PRINTF(4, 0);
static void vmsg(const struct tool *t, const char *label, const char *color, const char *fmt,
                 va_list ap)
{
    char text[4 * CBC_ERR_MSG_MAX];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    fprintf(stderr, "%s: %s%s%s: ", t->prog, t->color ? color : "", label, t->color ? "\033[0m" : "");
    tool_fputs_escaped(text, stderr);
    fputs(n >= (int)sizeof text ? "...\n" : "\n", stderr); /* cut: say so */
}

void tool_errorf(const struct tool *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg(t, "error", "\033[1;31m", fmt, ap);
    va_end(ap);
}

void tool_error(const struct tool *t, const struct cbc_err *err)
{
    tool_errorf(t, "%s", err->msg[0] ? err->msg : cbc_strerror(err->status));
    if (err->remedy[0]) {
        fprintf(stderr, "  %shint:%s ", t->color ? "\033[1;36m" : "", t->color ? "\033[0m" : "");
        tool_fputs_escaped(err->remedy, stderr);
        fputc('\n', stderr);
    }
}

void tool_warn(const struct tool *t, const char *fmt, ...)
{
    if (t->verbosity < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(t, "warning", "\033[1;33m", fmt, ap);
    va_end(ap);
}

void tool_note(const struct tool *t, const char *fmt, ...)
{
    if (t->verbosity < 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    vmsg(t, "note", "\033[1;34m", fmt, ap);
    va_end(ap);
}

int tool_exit_code(enum cbc_status st)
{
    switch (st) {
    case CBC_OK: return EXIT_OK;
    case CBC_E_COMPILE:
    case CBC_E_VERIFY:
    case CBC_E_NO_IMAGE: return EXIT_VERDICT;
    case CBC_E_USAGE:
    case CBC_E_ARCH:
    case CBC_E_FORMAT:
    case CBC_E_NOT_FOUND:
    case CBC_E_NUMERIC:
    case CBC_E_SHAPE:
    case CBC_E_UNSUPPORTED: return EXIT_USAGE;
    case CBC_E_IO:
    case CBC_E_NVCC:
    case CBC_E_CACHE:
    case CBC_E_NO_DRIVER:
    case CBC_E_NO_DEVICE:
    case CBC_E_DRIVER: return EXIT_ENV;
    case CBC_E_NOMEM: return EXIT_INTERNAL;
    }
    return EXIT_INTERNAL;
}

void tool_fputs_escaped(const char *s, FILE *f)
{
    size_t n = s ? strlen(s) : 0;
    while (n) {
        char unit[CBC_ESCAPE_UNIT_MAX];
        size_t used, k = cbc_escape_unit(s, n, unit, &used);
        fwrite(unit, 1, k, f);
        s += used;
        n -= used;
    }
}

void tool_print_json(struct cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    if (s)
        puts(s);
    free(s);
    cJSON_Delete(o);
}

int tool_split_dashdash(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--") == 0)
            return i;
    return argc;
}
