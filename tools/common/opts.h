/* opts.h: the one option parser of the commands (cubincache's subcommands
 * and igrun). A command describes its options in a table: the spelling
 * (a letter, a long name or both), the kind of value and where it goes,
 * and the help line; tool_parse reads argv with getopt_long built from
 * the table and prints the usage made from it. Shared by every command:
 * -q/--quiet, -v/--verbose and --help (a table may give -v its own help
 * line), "option '--x' needs a value", "unknown option '-X'", and a bad
 * value reported as "--name 'VALUE': expected ..." followed by the usage,
 * exit 2.
 *
 * Invariants: a value is stored only after it passed its check, so a
 * command never sees a half-parsed option; an error leaves the exit code
 * and a message on stderr and nothing on stdout; --help prints to stdout
 * and exits 0. optind is left at the first operand (getopt_long permutes
 * the operands after the options, as it did for each command before).
 */
#ifndef CBC_OPTS_H
#define CBC_OPTS_H

#include "tool.h"

#include <getopt.h> /* optind, the first operand after tool_parse */

enum tool_opt_kind {
    TOOL_OPT_FLAG,    /* bool *: true when given */
    TOOL_OPT_STR,     /* const char **: the value (the last one given) */
    TOOL_OPT_LIST,    /* struct tool_list *: each value appended, at most cap */
    TOOL_OPT_INT,     /* an integer of .size bytes within [lo, hi], decimal digits */
    TOOL_OPT_ENUM,    /* an integer or enum of .size bytes: the value of the choice named */
    TOOL_OPT_FN,      /* .parse(value, dest), false for a bad value */
    TOOL_OPT_QUIET,   /* the shared -q (a table entry only to give it its own help) */
    TOOL_OPT_VERBOSE, /* the shared -v, likewise */
};

struct tool_choice {
    const char *name;
    int value;
    bool hidden; /* accepted, not named in help or errors */
};

struct tool_list {
    const char **v;
    size_t n, cap;
};

struct tool_opt {
    int letter;          /* 'a', or 0 for a long-only option */
    const char *name;    /* "arch", or NULL for a letter-only option */
    const char *metavar; /* "SPEC" for an option with a value, NULL for none */
    const char *help;    /* the help text; '\n' starts a continuation line */
    enum tool_opt_kind kind;
    void *dest;
    size_t size;                      /* TOOL_OPT_INT, _ENUM: sizeof the integer at dest */
    long long lo, hi;                 /* TOOL_OPT_INT bounds */
    const struct tool_choice *choices; /* TOOL_OPT_ENUM, ended by {NULL} */
    bool (*parse)(const char *value, void *dest); /* TOOL_OPT_FN */
    const char *expect; /* the error's "expected ..." for a bad value (default: made from
                           the bounds or the choices) */
    bool *seen;         /* set true when the option is given, if not NULL */
};

/* A command: the synopsis and prose above the options ("usage: ...\n"),
 * the options (ended by an entry with neither letter nor name), the prose
 * below them (may be NULL). */
struct tool_cmd {
    const char *synopsis;
    const struct tool_opt *opts;
    const char *epilog;
};

#define TOOL_PARSED (-1)

/* Parses argv[1..argc) (argc may stop before a "--"); -q/-v set
 * t->verbosity. TOOL_PARSED with optind at the first operand, or the exit
 * code to return: EXIT_OK after --help, EXIT_USAGE after an error. The
 * command is remembered in t, for tool_usage and tool_print_usage. */
int tool_parse(struct tool *t, const struct tool_cmd *cmd, int argc, char **argv);

/* The usage made from t's command: synopsis, one line per option (help
 * aligned in one column), epilog. */
void tool_print_usage(const struct tool *t, FILE *f);

/* An error (fmt) and the usage, on stderr; returns EXIT_USAGE. */
int tool_usage(const struct tool *t, const char *fmt, ...) CBC_PRINTF(2, 3);

/* Table entries, in the order letter, long name, value name, where it goes,
 * [its check,] help. */
#define OPT_FLAG(l, n, d, h) {.letter = (l), .name = (n), .help = (h), .kind = TOOL_OPT_FLAG, .dest = (d)}
#define OPT_STR(l, n, mv, d, h)                                                                 \
    {.letter = (l), .name = (n), .metavar = (mv), .help = (h), .kind = TOOL_OPT_STR, .dest = (d)}
#define OPT_LIST(l, n, mv, d, h)                                                                \
    {.letter = (l), .name = (n), .metavar = (mv), .help = (h), .kind = TOOL_OPT_LIST, .dest = (d)}
#define OPT_INT(l, n, mv, d, lo_, hi_, h)                                                       \
    {.letter = (l), .name = (n), .metavar = (mv), .help = (h), .kind = TOOL_OPT_INT, .dest = (d), \
     .size = sizeof *(d), .lo = (lo_), .hi = (hi_)}
#define OPT_ENUM(l, n, mv, d, ch, h)                                                            \
    {.letter = (l), .name = (n), .metavar = (mv), .help = (h), .kind = TOOL_OPT_ENUM, .dest = (d), \
     .size = sizeof *(d), .choices = (ch)}
#define OPT_FN(l, n, mv, d, fn, exp, h)                                                         \
    {.letter = (l), .name = (n), .metavar = (mv), .help = (h), .kind = TOOL_OPT_FN, .dest = (d), \
     .parse = (fn), .expect = (exp)}
#define OPT_QUIET(h) {.letter = 'q', .name = "quiet", .help = (h), .kind = TOOL_OPT_QUIET}
#define OPT_VERBOSE(h) {.letter = 'v', .name = "verbose", .help = (h), .kind = TOOL_OPT_VERBOSE}
#define OPT_END {0}

/* A decimal integer in [lo, hi], all of s (digits, a '-' only before
 * one; no space, no '+', no overflow): TOOL_OPT_INT's check, for values a
 * command parses itself (a list of indices). */
bool tool_parse_int(const char *s, long long lo, long long hi, long long *out);
/* A value parser for TOOL_OPT_FN: double *, finite and >= 0. */
bool tool_parse_double_opt(const char *value, void *dest);

#endif
