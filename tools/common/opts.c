/* opts.c: the commands' option parser and usage text (opts.h).
 *
 * getopt_long's tables are built from the command's table on each call:
 * a letter option returns its letter, a long-only one 256 + its index, and
 * the shared -q, -v and --help come after the command's own entries
 * unless the table gives -q or -v a help line of its own. A value is
 * checked before it is stored; the first bad one ends the parse.
 */
#include "opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPTS_MAX 64   /* entries in one command's table, shared ones included */
#define HELP_COL_MAX 26 /* the help column, unless every option is shorter */

static const struct tool_opt shared_quiet = OPT_QUIET("no warnings");
static const struct tool_opt shared_verbose = OPT_VERBOSE("notes too");
static const struct tool_opt shared_help = {.name = "help", .help = "this text"};

static bool is_end(const struct tool_opt *o)
{
    return !o->letter && !o->name;
}

/* The command's entries and then the shared ones it did not give, in
 * usage order; the count, or 0 when the table is too long. */
static size_t all_opts(const struct tool_cmd *cmd, const struct tool_opt **v)
{
    size_t n = 0;
    bool quiet = false, verbose = false;
    for (const struct tool_opt *o = cmd->opts; o && !is_end(o); o++) {
        if (n == OPTS_MAX - 3)
            return 0;
        quiet |= o->kind == TOOL_OPT_QUIET;
        verbose |= o->kind == TOOL_OPT_VERBOSE;
        v[n++] = o;
    }
    if (!quiet)
        v[n++] = &shared_quiet;
    if (!verbose)
        v[n++] = &shared_verbose;
    v[n++] = &shared_help;
    return n;
}

/* "  -a, --arch SPEC", "      --ptx", "  -L DIR" */
static int left_part(const struct tool_opt *o, char *out, size_t len)
{
    char l[8] = "    ";
    if (o->letter)
        snprintf(l, sizeof l, "-%c%s", o->letter, o->name ? ", " : "");
    return snprintf(out, len, "  %s%s%s%s%s", l, o->name ? "--" : "", o->name ? o->name : "",
                    o->metavar ? " " : "", o->metavar ? o->metavar : "");
}

void tool_print_usage(const struct tool *t, FILE *f)
{
    const struct tool_cmd *cmd = t->cmd;
    if (!cmd)
        return;
    const struct tool_opt *v[OPTS_MAX];
    size_t n = all_opts(cmd, v);
    int col = 0;
    char left[128];
    for (size_t i = 0; i < n; i++) {
        int w = left_part(v[i], left, sizeof left) + 2;
        col = w > col && w <= HELP_COL_MAX ? w : col;
    }
    fputs(cmd->synopsis, f);
    for (size_t i = 0; i < n; i++) {
        int w = left_part(v[i], left, sizeof left);
        fprintf(f, "%s%*s", left, w + 2 > col ? 2 : col - w, "");
        for (const char *h = v[i]->help ? v[i]->help : ""; *h;) {
            const char *nl = strchr(h, '\n');
            size_t k = nl ? (size_t)(nl - h) : strlen(h);
            fprintf(f, "%.*s\n", (int)k, h);
            h += k;
            if (*h == '\n' && *++h)
                fprintf(f, "%*s", col, "");
        }
        if (!v[i]->help || !*v[i]->help)
            fputc('\n', f);
    }
    if (cmd->epilog)
        fputs(cmd->epilog, f);
}

int tool_usage(const struct tool *t, const char *fmt, ...)
{
    char text[4 * CBC_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tool_errorf(t, "%s", text);
    tool_print_usage(t, stderr);
    return EXIT_USAGE;
}

/* How an option is named in a message: its long name when it has one. */
static void spelled(const struct tool_opt *o, char *out, size_t len)
{
    if (o->name)
        snprintf(out, len, "--%s", o->name);
    else
        snprintf(out, len, "-%c", o->letter);
}

bool tool_parse_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9')))
        return false;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* v into the integer (or enum) of `size` bytes at dest; v fits it, the
 * table's bounds say so. */
static void store_int(void *dest, size_t size, long long v)
{
    uint64_t u = (uint64_t)v;
    uint8_t b8 = (uint8_t)u;
    uint16_t b16 = (uint16_t)u;
    uint32_t b32 = (uint32_t)u;
    switch (size) {
    case 1: memcpy(dest, &b8, 1); break;
    case 2: memcpy(dest, &b16, 2); break;
    case 4: memcpy(dest, &b32, 4); break;
    default: memcpy(dest, &u, 8); break;
    }
}

/* "expected a, b or c", the hidden choices left out */
static void choices_text(const struct tool_choice *c, char *out, size_t len)
{
    size_t n = 0, k = 0, off;
    for (const struct tool_choice *p = c; p->name; p++)
        n += !p->hidden;
    off = (size_t)snprintf(out, len, "expected ");
    for (const struct tool_choice *p = c; p->name && off < len; p++) {
        if (p->hidden)
            continue;
        k++;
        off += (size_t)snprintf(out + off, len - off, "%s%s", p->name,
                                k + 1 == n ? " or " : k < n ? ", " : "");
    }
}

/* One option's value checked and stored: TOOL_PARSED, or the exit code. */
static int take(struct tool *t, const struct tool_opt *o, const char *val)
{
    char name[80], why[400];
    spelled(o, name, sizeof name);
    switch (o->kind) {
    case TOOL_OPT_FLAG: *(bool *)o->dest = true; break;
    case TOOL_OPT_STR: *(const char **)o->dest = val; break;
    case TOOL_OPT_QUIET: t->verbosity = -1; break;
    case TOOL_OPT_VERBOSE: t->verbosity = 1; break;
    case TOOL_OPT_LIST: {
        struct tool_list *l = o->dest;
        if (l->n == l->cap)
            return tool_usage(t, "at most %zu %s", l->cap, name);
        l->v[l->n++] = val;
        break;
    }
    case TOOL_OPT_INT: {
        long long v;
        if (!tool_parse_int(val, o->lo, o->hi, &v)) {
            if (o->expect)
                snprintf(why, sizeof why, "%s", o->expect);
            else if (o->hi == LLONG_MAX)
                snprintf(why, sizeof why, "expected a number >= %lld", o->lo);
            else
                snprintf(why, sizeof why, "expected a number from %lld to %lld", o->lo, o->hi);
            return tool_usage(t, "%s '%s': %s", name, val, why);
        }
        store_int(o->dest, o->size, v);
        break;
    }
    case TOOL_OPT_ENUM: {
        const struct tool_choice *c = o->choices;
        while (c->name && strcmp(c->name, val))
            c++;
        if (!c->name) {
            if (o->expect)
                snprintf(why, sizeof why, "%s", o->expect);
            else
                choices_text(o->choices, why, sizeof why);
            return tool_usage(t, "%s '%s': %s", name, val, why);
        }
        store_int(o->dest, o->size, c->value);
        break;
    }
    case TOOL_OPT_FN:
        if (!o->parse(val, o->dest))
            return tool_usage(t, "%s '%s': %s", name, val, o->expect ? o->expect : "not valid");
        break;
    }
    if (o->seen)
        *o->seen = true;
    return TOOL_PARSED;
}

int tool_parse(struct tool *t, const struct tool_cmd *cmd, int argc, char **argv)
{
    t->cmd = cmd;
    const struct tool_opt *v[OPTS_MAX];
    size_t n = all_opts(cmd, v);
    if (!n) {
        tool_errorf(t, "internal: more than %d options", OPTS_MAX - 3);
        return EXIT_INTERNAL;
    }
    struct option longopts[OPTS_MAX + 1];
    char shortopts[2 * OPTS_MAX + 2] = ":";
    size_t nl = 0, ns = 1;
    for (size_t i = 0; i < n; i++) {
        int has = v[i]->metavar ? required_argument : no_argument;
        int val = v[i]->letter ? v[i]->letter : 256 + (int)i;
        if (v[i]->name)
            longopts[nl++] = (struct option){v[i]->name, has, NULL, val};
        if (v[i]->letter) {
            shortopts[ns++] = (char)v[i]->letter;
            if (has == required_argument)
                shortopts[ns++] = ':';
        }
    }
    longopts[nl] = (struct option){NULL, 0, NULL, 0};
    shortopts[ns] = '\0';
    optind = 0; /* glibc: a full restart, so no state of an earlier argv is left */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
        if (c == ':')
            return tool_usage(t, "option '%s' needs a value", argv[optind - 1]);
        const struct tool_opt *o = NULL;
        for (size_t i = 0; !o && i < n && c != '?'; i++)
            if (v[i]->letter ? c == v[i]->letter : c == 256 + (int)i)
                o = v[i];
        if (!o) {
            const char *a = argv[optind - 1];
            if (optopt && !strncmp(a, "--", 2) && strchr(a, '=')) /* --quiet=1 */
                return tool_usage(t, "option '%.*s' takes no value", (int)(strchr(a, '=') - a), a);
            if (optopt > 0 && optopt < 256)
                return tool_usage(t, "unknown option '-%c'", optopt);
            return tool_usage(t, "unknown option '%s'", a);
        }
        if (o == &shared_help) {
            tool_print_usage(t, stdout);
            return EXIT_OK;
        }
        int rc = take(t, o, optarg);
        if (rc != TOOL_PARSED)
            return rc;
    }
    return TOOL_PARSED;
}

bool tool_parse_double_opt(const char *value, void *dest)
{
    errno = 0;
    char *end;
    double v = strtod(value, &end);
    if (*end || end == value || errno || !isfinite(v) || !(v >= 0))
        return false;
    *(double *)dest = v;
    return true;
}
