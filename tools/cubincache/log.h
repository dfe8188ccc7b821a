/* log.h: the log_file and debug settings of the commands that compile
 * (build, the launcher): one line per launcher call and per build target,
 * hit or miss and why, appended to log_file and, with debug, on stderr
 * (log.c). */
#ifndef CBC_TOOL_LOG_H
#define CBC_TOOL_LOG_H

#include "tool.h"

struct tool_log {
    const struct tool *t;
    int fd;      /* log_file, open for appending; -1 none */
    bool debug;  /* the lines on stderr too */
    char what[160]; /* what the lines are about ("build k.cu", "nvcc") */
};

/* Resolves log_file and debug as the cache at cache_dir (NULL: the
 * default) has them: the environment, else its v1/config. A log file that
 * cannot be opened, or a bad value, is a warning, never an error. */
void tool_log_open(struct tool_log *l, const struct tool *t, const char *cache_dir,
                   const char *what);
bool tool_log_on(const struct tool_log *l);
/* "2026-05-01T18:40:12.345 [4242] WHAT: TEXT", as one append (lines of
 * concurrent processes never interleave); and "PROG: note: WHAT: TEXT" on
 * stderr with debug. */
void tool_log_line(struct tool_log *l, const char *fmt, ...) CBC_PRINTF(2, 3);
void tool_log_close(struct tool_log *l);

#endif
