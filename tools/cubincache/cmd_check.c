/* cmd_check.c: `cubincache check [--arch SPEC] [--json] PATH...`: the
 * pre-deploy gate. The verdicts come from src/check; this file prints them,
 * one line per entry with the problem first (a binary's verdict on a GPU
 * followed by a line per file of the program and the modules that cannot
 * launch, kernels demangled), or one JSON object per line (docs/json.md),
 * and turns them into the exit code: 0 all fine, 1 any problem, 2 usage or
 * unreadable input. After an error no summary is printed: a summary would
 * read as the answer.
 */
#include "check.h"
#include "cmds.h"

#include <cubincache/select.h>
#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

/* How many modules, and kernels of each, the human output names before
 * "... and N more" (all of them with -v; --json always has all). */
#define SHOW_MODULES 8
#define SHOW_KERNELS 4
#define SHOW_NAME 160

static void upper(const char *s, char *out, size_t len)
{
    size_t k = 0;
    for (; *s && k < len - 1; s++)
        out[k++] = (char)(*s >= 'a' && *s <= 'z' ? *s - 32 : *s);
    out[k] = '\0';
}

/* "_Z3k_aPi (k_a(int*))", the demangled part cut at SHOW_NAME characters. */
static void print_kernel(const char *name)
{
    tool_fputs_escaped(name, stdout);
    char *d = gate_demangle(name);
    if (d) {
        if (strlen(d) > SHOW_NAME)
            strcpy(d + SHOW_NAME - 3, "...");
        fputs(" (", stdout);
        tool_fputs_escaped(d, stdout);
        fputc(')', stdout);
        free(d);
    }
}

static void print_file(const struct cbc_check_item *it, const struct cbc_check_file *f,
                       bool verbose)
{
    char status[24];
    upper(cbc_verdict_name(f->verdict), status, sizeof status);
    printf("%-12s %-9s   ", "", it->target);
    tool_fputs_escaped(cbc_path_base(f->path), stdout);
    printf(" [%s]: %s%s: ", f->rule, f->verdict == CBC_V_OK ? "NO GPU CODE" : status,
           f->verdict == CBC_V_PARTIAL && !f->problem ? " (accepted)" : "");
    tool_fputs_escaped(f->reason, stdout);
    fputc('\n', stdout);
    bool dispatch = !strcmp(f->rule, "dispatch");
    size_t show = verbose ? f->n_cannot : dispatch ? 2 : SHOW_MODULES;
    size_t shown_k = verbose ? SIZE_MAX : dispatch ? 2 : SHOW_KERNELS;
    for (size_t m = 0; m < f->n_cannot && m < show; m++) {
        const struct cbc_check_module *cm = &f->cannot[m];
        printf("%-12s %-9s     ", "", "");
        tool_fputs_escaped(cm->label, stdout);
        fputs(": ", stdout);
        tool_fputs_escaped(cm->reason, stdout);
        if (cm->kproblem) {
            fputs("; its kernels cannot be read: ", stdout);
            tool_fputs_escaped(cm->kproblem, stdout);
        }
        fputc('\n', stdout);
        for (size_t k = 0; k < cm->n_kernels && k < shown_k; k++) {
            printf("%-12s %-9s       ", "", "");
            print_kernel(cm->kernels[k]);
            fputc('\n', stdout);
        }
        if (cm->n_kernels > shown_k)
            printf("%-12s %-9s       ... and %zu more kernel%s (-v or --json lists them)\n", "",
                   "", cm->n_kernels - shown_k, cm->n_kernels - shown_k == 1 ? "" : "s");
    }
    if (f->n_cannot > show)
        printf("%-12s %-9s     ... and %zu more module%s without code for it (-v or --json "
               "lists them)\n", "", "", f->n_cannot - show, f->n_cannot - show == 1 ? "" : "s");
}

static void add_files_json(cJSON *o, const struct cbc_check_item *it)
{
    cJSON_AddStringToObject(o, "rule", it->rule);
    cJSON *fa = cJSON_AddArrayToObject(o, "files");
    for (size_t i = 0; fa && i < it->n_files; i++) {
        const struct cbc_check_file *f = &it->files[i];
        cJSON *fo = cJSON_CreateObject();
        cJSON_AddStringToObject(fo, "file", f->path);
        if (f->needed_by)
            cJSON_AddStringToObject(fo, "needed_by", f->needed_by);
        else
            cJSON_AddNullToObject(fo, "needed_by");
        cJSON_AddStringToObject(fo, "rule", f->rule);
        cJSON_AddStringToObject(fo, "status", cbc_verdict_name(f->verdict));
        cJSON_AddBoolToObject(fo, "problem", f->problem);
        cJSON_AddNumberToObject(fo, "modules", (double)f->modules);
        cJSON_AddNumberToObject(fo, "modules_with_code", (double)f->modules_with_code);
        cJSON_AddNumberToObject(fo, "kernels_without_code", (double)f->kernels_without_code);
        if (f->self_loaded >= 0) {
            cJSON_AddNumberToObject(fo, "self_loaded", (double)f->self_loaded);
            cJSON_AddNumberToObject(fo, "self_loaded_with_code", (double)f->self_loaded_with_code);
        } else {
            cJSON_AddNullToObject(fo, "self_loaded");
            cJSON_AddNullToObject(fo, "self_loaded_with_code");
        }
        cJSON_AddStringToObject(fo, "reason", f->reason);
        cJSON *ca = cJSON_AddArrayToObject(fo, "cannot_launch");
        for (size_t m = 0; ca && m < f->n_cannot; m++) {
            const struct cbc_check_module *cm = &f->cannot[m];
            cJSON *mo = cJSON_CreateObject();
            cJSON_AddStringToObject(mo, "module", cm->label);
            cJSON_AddStringToObject(mo, "reason", cm->reason);
            if (cm->kproblem)
                cJSON_AddStringToObject(mo, "kernels_problem", cm->kproblem);
            cJSON *ka = cJSON_AddArrayToObject(mo, "kernels");
            for (size_t k = 0; ka && k < cm->n_kernels; k++) {
                cJSON *ko = cJSON_CreateObject();
                cJSON_AddStringToObject(ko, "name", cm->kernels[k]);
                char *d = gate_demangle(cm->kernels[k]);
                cJSON_AddStringToObject(ko, "demangled", d ? d : cm->kernels[k]);
                free(d);
                cJSON_AddItemToArray(ka, ko);
            }
            cJSON_AddItemToArray(ca, mo);
        }
        cJSON_AddItemToArray(fa, fo);
    }
}

static void print_item(const struct cbc_check_item *it, bool json, bool verbose)
{
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", cbc_verdict_name(it->verdict));
        cJSON_AddStringToObject(o, "path", it->container);
        if (it->file)
            cJSON_AddStringToObject(o, "file", it->file);
        else
            cJSON_AddNullToObject(o, "file");
        if (it->target[0])
            cJSON_AddStringToObject(o, "target", it->target);
        else
            cJSON_AddNullToObject(o, "target");
        cJSON_AddStringToObject(o, "reason", it->reason ? it->reason : "");
        cJSON *ch = cJSON_AddArrayToObject(o, "changes");
        for (size_t i = 0; ch && i < it->n_changes; i++)
            cJSON_AddItemToArray(ch, cJSON_CreateString(it->changes[i]));
        cJSON_AddBoolToObject(o, "problem", it->problem);
        if (it->rule)
            add_files_json(o, it);
        tool_print_json(o);
        return;
    }
    char status[24];
    upper(cbc_verdict_name(it->verdict), status, sizeof status);
    const char *subject = cbc_path_base(it->file ? it->file : it->container);
    /* one line per verdict, whatever a path or an environment value holds */
    printf("%-12s %-9s ", status, it->target[0] ? it->target : "-");
    tool_fputs_escaped(subject, stdout);
    fputs(": ", stdout);
    tool_fputs_escaped(it->reason ? it->reason : "", stdout);
    fputc('\n', stdout);
    for (size_t i = 1; i < it->n_changes; i++) {
        printf("%-12s %-9s   also: ", "", "");
        tool_fputs_escaped(it->changes[i], stdout);
        fputc('\n', stdout);
    }
    /* a binary's verdict: a line per file when there is more than one with
     * GPU code, or when modules cannot launch */
    bool detail = it->n_files > 1 || verbose;
    for (size_t i = 0; i < it->n_files && !detail; i++)
        detail = it->files[i].n_cannot > 1 || it->files[i].verdict == CBC_V_PARTIAL;
    for (size_t i = 0; detail && i < it->n_files; i++)
        print_file(it, &it->files[i], verbose);
}

int cmd_check(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache check");
    struct cbc_check_opts o = {0};
    struct gate g;
    gate_init(&g);
    bool json = false;
    const struct tool_opt opts[] = {
        OPT_STR('a', "arch", "SPEC", &o.arch,
                "bundle: targets that must be present; binary: the GPUs to judge\n"
                "(\"will this run on 9.0?\"): any compute capability (3.0 to 12.1),\n"
                "native, or auto as build resolves it"),
        GATE_OPTS(&g),
        OPT_INT('j', "jobs", "N", &o.threads, 0, 16,
                "threads reading images (default 0: one per CPU)"),
        OPT_VERBOSE("every file and module that cannot launch, not the first few"),
        OPT_FLAG(0, "integrity-only", &o.integrity_only,
                 "skip freshness (machines without the sources or nvcc)"),
        OPT_STR(0, "cache-dir", "DIR", &o.cache_dir, "where the cached toolchain identity lives"),
        OPT_FLAG(0, "json", &json, "one JSON object per entry, then a summary object"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache check [options] PATH...\n"
        "  PATH: a bundle directory or NAME.manifest.json (is every image current, correctly\n"
        "        labelled and intact?), or a cubin, fatbin, PTX file or host binary\n",
        opts,
        "  exit: 0 everything fine (an accepted partial too), 1 a problem, 2 usage or unreadable "
        "input\n"};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    o.driver_isa = g.driver_isa;
    o.prefer_binary = g.prefer_binary;
    o.lib_dirs = g.lib_dirs.v;
    o.n_lib_dirs = g.lib_dirs.n;
    o.no_libs = g.no_libs;
    o.named_rule = g.named_rule;
    o.lib_rule = g.lib_rule;
    o.strict_libs = g.strict_libs.v;
    o.n_strict_libs = g.strict_libs.n;
    o.demangle = gate_demangle;
    const char *kernels_file = g.kernels_file;
    if (optind >= argc)
        return tool_usage(&t, "no PATH given");
    char **kn = NULL;
    size_t nk = 0;
    if (kernels_file) {
        if (!o.arch)
            return tool_usage(&t, "--kernels needs --arch: the kernels are judged "
                                    "for the GPUs it names");
        int r = gate_read_kernels(&t, kernels_file, &kn, &nk);
        if (r != EXIT_OK)
            return r;
        o.kernels = (const char *const *)kn;
        o.n_kernels = nk;
    }
    size_t counts[CBC_V_COUNT] = {0};
    size_t problems = 0;
    bool errors = false;
    rc = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        struct cbc_check_report rep = {0};
        struct cbc_err err = {0};
        enum cbc_status st = cbc_check_path(argv[i], &o, &rep, &err);
        for (size_t k = 0; k < rep.n; k++) {
            print_item(&rep.v[k], json, t.verbosity > 0);
            counts[rep.v[k].verdict]++;
            problems += rep.v[k].problem;
            if (rep.v[k].problem && rc == EXIT_OK)
                rc = EXIT_VERDICT;
        }
        for (size_t k = 0; k < rep.notes_n; k++)
            tool_warn(&t, "%s", rep.notes[k]);
        cbc_check_report_release(&rep);
        if (st != CBC_OK) {
            errors = true;
            tool_error(&t, &err);
            /* what check cannot read is bad input (docs/exit-codes.md) */
            int code = st == CBC_E_IO ? EXIT_USAGE : tool_exit_code(st);
            rc = code == EXIT_VERDICT ? EXIT_USAGE : code > rc ? code : rc;
        }
    }
    gate_free_kernels(kn, nk);
    if (errors) {
        /* no summary after an error: it would read as the answer */
    } else if (json) {
        cJSON *o2 = cJSON_CreateObject();
        cJSON *s = cJSON_AddObjectToObject(o2, "summary");
        for (int v = 0; v < CBC_V_COUNT; v++)
            cJSON_AddNumberToObject(s, cbc_verdict_name((enum cbc_verdict)v), (double)counts[v]);
        cJSON_AddNumberToObject(s, "problems", (double)problems);
        cJSON_AddNumberToObject(s, "exit", rc);
        tool_print_json(o2);
    } else if (t.verbosity >= 0) {
        size_t total = 0;
        for (int v = 0; v < CBC_V_COUNT; v++)
            total += counts[v];
        fprintf(stderr, "%s: %zu checked, %zu problem%s\n", t.prog, total, problems,
                problems == 1 ? "" : "s");
    }
    return rc;
}
