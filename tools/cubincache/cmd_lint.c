/* cmd_lint.c: `cubincache lint [--fix [--dry-run]] [--json] [--helpers FILE]
 * [PATH...]`: build scripts that read an environment variable changing
 * their output without declaring it to their build system (cargo build.rs,
 * CMake, Meson, GNU make). Exit 0 clean, 1 findings (after --fix: findings
 * it could not fix), 2 usage, an unreadable input or a fix refused (a file
 * outside the PATHs), 4 when a fix could not be written.
 * Findings go to stdout ("FILE:LINE:COL: [rule] VAR: why" and a "fix:"
 * line, or JSON Lines); notes and errors to stderr.
 */
#include "cmds.h"
#include "lint.h"
#include "opts.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

static void print_finding(const struct cbc_lint_finding *f, bool fixed)
{
    printf("%s:%u:%u: [%s] ", f->file, f->line, f->col, cbc_lint_rule_name(f->rule));
    if (f->var) {
        tool_fputs_escaped(f->var, stdout);
        fputs(": ", stdout);
    }
    fputs(f->why, stdout);
    fputs(fixed ? " (fixed)\n" : "\n", stdout);
    if (!fixed)
        printf("  fix: %s\n", f->fix);
}

static void json_finding(const struct cbc_lint_finding *f, bool fixed)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "file", f->file);
    cJSON_AddNumberToObject(o, "line", f->line);
    cJSON_AddNumberToObject(o, "col", f->col);
    cJSON_AddStringToObject(o, "rule", cbc_lint_rule_name(f->rule));
    if (f->var)
        cJSON_AddStringToObject(o, "var", f->var);
    else
        cJSON_AddNullToObject(o, "var");
    cJSON_AddStringToObject(o, "why", f->why);
    cJSON_AddStringToObject(o, "fix", f->fix);
    cJSON_AddBoolToObject(o, "fixable", f->insert != NULL);
    if (f->via)
        cJSON_AddStringToObject(o, "via", f->via);
    cJSON_AddBoolToObject(o, "fixed", fixed);
    tool_print_json(o);
}

int cmd_lint(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache lint");
    bool fix = false, dry = false, json = false;
    const char *helpers[16];
    struct tool_list hl = {helpers, 0, CBC_ARRAY_LEN(helpers)};
    const struct tool_opt opts[] = {
        OPT_FLAG(0, "fix", &fix, "insert the missing cargo:rerun-if-env-changed= (and\n"
                 "rerun-if-changed= for kernel sources) before each read: every file or none"),
        OPT_FLAG(0, "dry-run", &dry, "with --fix: print the change as a unified diff, write nothing"),
        OPT_FLAG(0, "json", &json, "one JSON object per finding, then a summary (docs/json.md)"),
        OPT_LIST(0, "helpers", "FILE", &hl, "models of your own build helpers (what a call reads\n"
                 "and declares: README.md, `cubincache lint`); may be repeated"),
        OPT_QUIET("no notes"),
        OPT_VERBOSE("also say what was read"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache lint [options] [PATH...]\n"
        "  PATH: a directory (searched recursively; target/, vendor/, build trees and hidden\n"
        "        directories are skipped), a build script (.rs), CMakeLists.txt, *.cmake,\n"
        "        meson.build or a Makefile (GNUmakefile, makefile, *.mk); default: the current\n"
        "        directory. --fix writes only beneath the PATHs given\n",
        opts,
        "exit: 0 clean, 1 findings (left after --fix), 2 usage, unreadable input or a fix\n"
        "      refused, 4 a fix that could not be written\n"};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (dry && !fix)
        return tool_usage(&t, "--dry-run shows what --fix would change: use both");
    if (dry && json)
        return tool_usage(&t, "--dry-run prints a diff, not JSON: drop --json");
    struct cbc_lint_opts o = {.paths = (const char *const *)argv + optind,
                              .n_paths = (size_t)(argc - optind),
                              .helper_files = hl.v,
                              .n_helper_files = hl.n};
    struct cbc_lint_result r = {0};
    struct cbc_err err = {0};
    enum cbc_status st = cbc_lint_run(&o, &r, &err);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        cbc_lint_result_free(&r);
        return st == CBC_E_IO || st == CBC_E_USAGE ? EXIT_USAGE : tool_exit_code(st);
    }
    for (size_t i = 0; i < r.n_notes; i++) /* what a fix does not do: loud with --fix */
        if (fix)
            tool_warn(&t, "%s", r.notes[i]);
        else
            tool_note(&t, "%s", r.notes[i]);
    size_t fixable = 0;
    for (size_t i = 0; i < r.n; i++)
        fixable += r.f[i].insert != NULL;
    bool fixed = false;
    size_t n_files = 0;
    if (fix && fixable > 0) {
        struct cbc_buf diff = {0};
        st = cbc_lint_fix(&r, dry ? &diff : NULL, &n_files, &err);
        if (st != CBC_OK) {
            tool_error(&t, &err);
            cbc_buf_release(&diff);
            cbc_lint_result_free(&r);
            return st == CBC_E_USAGE ? EXIT_USAGE : EXIT_ENV;
        }
        if (dry) {
            fwrite(diff.p ? diff.p : "", 1, diff.len, stdout);
            cbc_buf_release(&diff);
        }
        fixed = !dry;
    }
    size_t left = 0;
    for (size_t i = 0; i < r.n; i++) {
        bool done = fixed && r.f[i].insert;
        left += !done;
        if (dry)
            continue;
        if (json)
            json_finding(&r.f[i], done);
        else
            print_finding(&r.f[i], done);
    }
    if (json) {
        cJSON *o2 = cJSON_CreateObject();
        cJSON *s = cJSON_AddObjectToObject(o2, "summary");
        cJSON_AddNumberToObject(s, "files", (double)r.files_read);
        cJSON_AddNumberToObject(s, "findings", (double)r.n);
        cJSON_AddNumberToObject(s, "fixed", fixed ? (double)(r.n - left) : 0);
        cJSON_AddNumberToObject(s, "files_fixed", fixed ? (double)n_files : 0);
        cJSON_AddNumberToObject(s, "exit", left ? EXIT_VERDICT : EXIT_OK);
        tool_print_json(o2);
    } else if (dry) {
        tool_note(&t, "%zu finding(s); --fix would change %zu file(s)", r.n, n_files);
    } else if (t.verbosity >= 0) {
        if (fixed)
            fprintf(stderr, "cubincache lint: %zu file(s) read, %zu finding(s), %zu fixed in "
                            "%zu file(s), %zu left\n",
                    r.files_read, r.n, r.n - left, n_files, left);
        else if (r.n || t.verbosity > 0)
            fprintf(stderr, "cubincache lint: %zu file(s) read, %zu finding(s)%s\n",
                    r.files_read, r.n,
                    fixable ? " (cubincache lint --fix fixes the ones it can)" : "");
    }
    cbc_lint_result_free(&r);
    return left ? EXIT_VERDICT : EXIT_OK;
}
