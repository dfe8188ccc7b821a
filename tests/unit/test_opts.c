/* test_opts.c: the commands' one option parser (tools/common/opts.h):
 * every kind stores only a value that passed its check, the messages
 * name the option and the value, the shared -q/-v/--help exist in every
 * table, and the usage text made from the table keeps one help column. */
#include "opts.h"

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>
#include <string.h>

/* Everything written to the redirected stream f so far. */
static char *drain(FILE *f)
{
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

static char *err_text(void)
{
    fflush(stderr);
    return drain(cr_get_redirected_stderr());
}

struct vals {
    bool flag;
    const char *str;
    const char *dirs[2];
    struct tool_list list;
    int jobs;
    uint64_t keys;
    enum { MODE_A = 3, MODE_B = 7, MODE_SECRET = 9 } mode;
    double tol;
};

static const struct tool_choice modes[] = {
    {"a", MODE_A, false}, {"b", MODE_B, false}, {"secret", MODE_SECRET, true}, {NULL, 0, false}};

/* Parses the NULL-ended words (argv[0] "cmd") with a table of every kind. */
static int parse(struct tool *t, struct vals *v, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    *v = (struct vals){.jobs = 4, .keys = 10, .mode = MODE_A, .tol = -1};
    v->list = (struct tool_list){v->dirs, 0, 2};
    static struct tool_opt opts[] = {
        OPT_FLAG('f', "flag", NULL, "a flag"),
        OPT_STR('o', "out", "FILE", NULL, "a file"),
        OPT_LIST('L', "library-path", "DIR", NULL, "a directory; may be repeated"),
        OPT_INT('j', "jobs", "N", (int *)NULL, 1, 8, "jobs\nsecond line"),
        OPT_INT(0, "max-keys", "N", (uint64_t *)NULL, 1, 1000000000, "keys"),
        OPT_ENUM(0, "mode", "M", (int *)NULL, modes, "a or b"),
        OPT_FN(0, "tolerance", "T", NULL, tool_parse_double_opt, "expected a number >= 0", "t"),
        OPT_END,
    };
    void *dest[] = {&v->flag, &v->str, &v->list, &v->jobs, &v->keys, &v->mode, &v->tol};
    for (size_t i = 0; i < 7; i++)
        opts[i].dest = dest[i];
    static const struct tool_cmd cmd = {"usage: cmd [options] FILE...\n", opts, "  the end\n"};
    tool_init(t, "cmd");
    return tool_parse(t, &cmd, argc, argv);
}

#define ARGV(...) ((char *[]){"cmd", __VA_ARGS__, NULL})

Test(opts, every_kind_stores_its_value_and_operands_come_last)
{
    struct tool t;
    struct vals v;
    char **argv = ARGV("x.cu", "-f", "-o", "out.o", "-L", "d1", "--library-path=d2", "-j3",
                       "--max-keys", "1000000000", "--mode", "b", "--tolerance", "0.5", "-v",
                       "y.cu");
    cr_assert_eq(parse(&t, &v, argv), TOOL_PARSED);
    cr_assert(v.flag);
    cr_assert_str_eq(v.str, "out.o");
    cr_assert_eq(v.list.n, 2);
    cr_assert_str_eq(v.list.v[0], "d1");
    cr_assert_str_eq(v.list.v[1], "d2");
    cr_assert_eq(v.jobs, 3);
    cr_assert_eq(v.keys, 1000000000u);
    cr_assert_eq(v.mode, MODE_B);
    cr_assert_float_eq(v.tol, 0.5, 1e-12);
    cr_assert_eq(t.verbosity, 1);
    /* the operands, permuted after the options as getopt_long does */
    cr_assert_eq(optind, 15);
    cr_assert_str_eq(argv[optind], "x.cu");
    cr_assert_str_eq(argv[optind + 1], "y.cu");
}

Test(opts, the_shared_quiet_and_a_hidden_choice)
{
    struct tool t;
    struct vals v;
    cr_assert_eq(parse(&t, &v, ARGV("-q", "--mode", "secret")), TOOL_PARSED);
    cr_assert_eq(t.verbosity, -1);
    cr_assert_eq(v.mode, MODE_SECRET);
}

Test(opts, a_bad_number_is_refused_by_name_and_nothing_is_stored, .init = cr_redirect_stderr)
{
    static const char *bad[] = {"0", "9", "+3", " 3", "3x", "", "-1", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        struct tool t;
        struct vals v;
        cr_assert_eq(parse(&t, &v, ARGV("--jobs", (char *)bad[i])), EXIT_USAGE, "'%s'", bad[i]);
        cr_assert_eq(v.jobs, 4, "'%s' stored", bad[i]);
    }
    char *e = err_text();
    cr_assert(strstr(e, "cmd: error: --jobs '0': expected a number from 1 to 8\n"), "%s", e);
    cr_assert(strstr(e, "--jobs '3x': expected"), "%s", e);
    cr_assert(strstr(e, "usage: cmd [options] FILE...\n"), "the usage follows the error: %s", e);
}

Test(opts, bad_values_of_each_kind_name_what_is_expected, .init = cr_redirect_stderr)
{
    struct tool t;
    struct vals v;
    cr_assert_eq(parse(&t, &v, ARGV("--mode", "c")), EXIT_USAGE);
    cr_assert_eq(v.mode, MODE_A);
    cr_assert_eq(parse(&t, &v, ARGV("--tolerance", "-1")), EXIT_USAGE);
    cr_assert_eq(v.tol, -1);
    cr_assert_eq(parse(&t, &v, ARGV("-L", "a", "-L", "b", "-L", "c")), EXIT_USAGE);
    cr_assert_eq(v.list.n, 2);
    cr_assert_eq(parse(&t, &v, ARGV("--max-keys", "0")), EXIT_USAGE);
    char *e = err_text();
    /* the hidden choice is not named */
    cr_assert(strstr(e, "--mode 'c': expected a or b\n"), "%s", e);
    cr_assert(strstr(e, "--tolerance '-1': expected a number >= 0\n"), "%s", e);
    cr_assert(strstr(e, "at most 2 --library-path\n"), "%s", e);
    cr_assert(strstr(e, "--max-keys '0': expected a number from 1 to 1000000000\n"), "%s", e);
}

Test(opts, missing_and_unknown_options_are_named, .init = cr_redirect_stderr)
{
    struct tool t;
    struct vals v;
    cr_assert_eq(parse(&t, &v, ARGV("x.cu", "--out")), EXIT_USAGE);
    cr_assert_eq(parse(&t, &v, ARGV("-o")), EXIT_USAGE);
    cr_assert_eq(parse(&t, &v, ARGV("--frobnicate")), EXIT_USAGE);
    cr_assert_eq(parse(&t, &v, ARGV("-fX")), EXIT_USAGE);
    cr_assert_eq(parse(&t, &v, ARGV("--flag=1")), EXIT_USAGE);
    cr_assert_eq(v.flag, false, "a flag given a value is not set");
    char *e = err_text();
    cr_assert(strstr(e, "option '--out' needs a value\n"), "%s", e);
    cr_assert(strstr(e, "option '-o' needs a value\n"), "%s", e);
    cr_assert(strstr(e, "unknown option '--frobnicate'\n"), "%s", e);
    cr_assert(strstr(e, "unknown option '-X'\n"), "%s", e);
    cr_assert(strstr(e, "option '--flag' takes no value\n"), "%s", e);
}

Test(opts, help_prints_the_usage_from_the_table_on_stdout, .init = cr_redirect_stdout)
{
    struct tool t;
    struct vals v;
    cr_assert_eq(parse(&t, &v, ARGV("--jobs", "2", "--help", "--jobs", "0")), EXIT_OK);
    fflush(stdout);
    char *u = drain(cr_get_redirected_stdout());
    cr_assert(!strncmp(u, "usage: cmd [options] FILE...\n", 29), "%s", u);
    /* one help column: the longest left part ("  -L, --library-path DIR") plus two */
    cr_assert(strstr(u, "\n  -L, --library-path DIR  a directory; may be repeated\n"), "%s", u);
    cr_assert(strstr(u, "\n  -j, --jobs N            jobs\n"
                        "                          second line\n"), "%s", u);
    cr_assert(strstr(u, "\n      --max-keys N        keys\n"), "%s", u);
    cr_assert(strstr(u, "\n  -f, --flag              a flag\n"), "%s", u);
    /* the shared options, then the epilog */
    cr_assert(strstr(u, "\n  -q, --quiet             no warnings\n"
                        "  -v, --verbose           notes too\n"
                        "      --help              this text\n"
                        "  the end\n"), "%s", u);
}

Test(opts, a_table_gives_verbose_its_own_help_once, .init = cr_redirect_stdout)
{
    static const struct tool_opt opts[] = {OPT_VERBOSE("say more"), OPT_END};
    static const struct tool_cmd cmd = {"usage: c2\n", opts, NULL};
    struct tool t;
    tool_init(&t, "c2");
    cr_assert_eq(tool_parse(&t, &cmd, 2, (char *[]){"c2", "--verbose", NULL}), TOOL_PARSED);
    cr_assert_eq(t.verbosity, 1);
    tool_print_usage(&t, stdout);
    fflush(stdout);
    char *u = drain(cr_get_redirected_stdout());
    cr_assert_str_eq(u, "usage: c2\n"
                        "  -v, --verbose  say more\n"
                        "  -q, --quiet    no warnings\n"
                        "      --help     this text\n");
}

Test(opts, argc_stops_before_the_double_dash)
{
    struct tool t;
    struct vals v;
    char **argv = ARGV("-f", "k.cu", "--", "-o", "x");
    cr_assert_eq(tool_split_dashdash(6, argv), 3);
    cr_assert_eq(parse(&t, &v, (char *[]){argv[0], argv[1], argv[2], NULL}), TOOL_PARSED);
    cr_assert(v.flag);
    cr_assert_null(v.str, "nvcc's -o is not ours");
}
