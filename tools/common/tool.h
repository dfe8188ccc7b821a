/* tool.h: what the commands (cubincache and igrun) share: message
 * printing (errors always, warnings unless -q, notes with -v; NO_COLOR
 * honoured; all of it on stderr), the one mapping from a library status to
 * an exit code (docs/exit-codes.md) and JSON Lines output. The option
 * parser they share is opts.h. A static helper library of tools/,
 * linked into each command; never installed.
 */
#ifndef CBC_TOOL_H
#define CBC_TOOL_H

#include "common.h"

#include <stdio.h>

/* Exit codes, one table for every command. */
enum {
    EXIT_OK = 0,
    EXIT_VERDICT = 1, /* a negative answer: compile error, stale, will not run */
    EXIT_USAGE = 2,   /* bad options, arguments or input files */
    EXIT_TOLERANCE = 3, /* igrun: |delta| above --tolerance */
    EXIT_ENV = 4,     /* cannot be done here: no nvcc, no driver or GPU, I/O failure */
    EXIT_INTERNAL = 5 /* out of memory or a bug */
};

struct tool_cmd;
struct tool {
    const char *prog; /* "cubincache build" */
    int verbosity;    /* -1 quiet, 0 normal, 1 verbose */
    bool color;
    const struct tool_cmd *cmd; /* its options, once tool_parse has read them (opts.h) */
};

/* The index of the first "--" in argv (the options before it are ours,
 * nvcc's come after), or argc when there is none. */
int tool_split_dashdash(int argc, char **argv);

void tool_init(struct tool *t, const char *prog);
void tool_error(const struct tool *t, const struct cbc_err *err);
void tool_errorf(const struct tool *t, const char *fmt, ...) CBC_PRINTF(2, 3);
void tool_warn(const struct tool *t, const char *fmt, ...) CBC_PRINTF(2, 3);
void tool_note(const struct tool *t, const char *fmt, ...) CBC_PRINTF(2, 3);
int tool_exit_code(enum cbc_status st);
/* Prints a JSON object as one line on stdout (the --json outputs are JSON
 * Lines, docs/json.md) and deletes it. */
struct cJSON;
void tool_print_json(struct cJSON *o);
/* Prints s to f with every byte that is not printable escaped (\n, \t,
 * \xNN; C1 controls and invalid UTF-8 included: common.h, cbc_escape), so a
 * value from the environment or a file can never split a one-line record
 * or send the terminal a control sequence. */
void tool_fputs_escaped(const char *s, FILE *f);

#endif
