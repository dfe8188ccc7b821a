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

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cubincache check [options] PATH...\n"
    "  PATH: a bundle directory or NAME.manifest.json (is every image current, correctly\n"
    "        labelled and intact?), or a cubin, fatbin, PTX file or host binary\n"
    "  -a, --arch SPEC        bundle: targets that must be present; binary: the GPUs to judge\n"
    "                         (\"will this run on 9.0?\"): any compute capability (3.0 to 12.1),\n"
    "                         native, or auto as build resolves it\n"
    "      --kernels FILE     binary: judge only these kernels (one per line), the ones the\n"
    "                         program launches; every other module may lack code for the GPU\n"
    "      --rule RULE        the files named: per-module (default: every module with kernels\n"
    "                         needs code for the GPU) or dispatch (at least one has it)\n"
    "      --libs RULE        the libraries they need: dispatch (default; a library that picks\n"
    "                         its kernels by GPU) or per-module\n"
    "      --strict-lib NAME  judge this library per module (its DT_NEEDED name or file name)\n"
    "  -j, --jobs N           threads reading images (default: one per CPU)\n"
    "  -v, --verbose          every file and module that cannot launch, not the first few\n"
    "      --cuda-driver X.Y  judge PTX against a driver of this CUDA version (default: any)\n"
    "      --prefer-binary    assume CU_PREFER_BINARY instead of the driver's default\n"
    "      --integrity-only   skip freshness (machines without the sources or nvcc)\n"
    "  -L, --library-path DIR binaries: look here first for the shared libraries they need\n"
    "      --no-libs          binaries: judge the file alone, not the libraries it needs\n"
    "      --cache-dir DIR    where the cached toolchain identity lives\n"
    "      --json             one JSON object per entry, then a summary object\n"
    "  exit: 0 everything fine (an accepted partial too), 1 a problem, 2 usage or unreadable input\n";

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
    enum { O_JSON = 256, O_DRIVER, O_PREFER, O_INTEGRITY, O_CACHE, O_NOLIBS, O_HELP, O_KERNELS,
           O_RULE, O_LIBS, O_STRICT_LIB };
    static const struct option longopts[] = {
        {"arch", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, O_JSON},
        {"cuda-driver", required_argument, NULL, O_DRIVER},
        {"prefer-binary", no_argument, NULL, O_PREFER},
        {"integrity-only", no_argument, NULL, O_INTEGRITY},
        {"cache-dir", required_argument, NULL, O_CACHE},
        {"library-path", required_argument, NULL, 'L'},
        {"no-libs", no_argument, NULL, O_NOLIBS},
        {"kernels", required_argument, NULL, O_KERNELS},
        {"rule", required_argument, NULL, O_RULE},
        {"libs", required_argument, NULL, O_LIBS},
        {"strict-lib", required_argument, NULL, O_STRICT_LIB},
        {"jobs", required_argument, NULL, 'j'},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    struct cbc_check_opts o = {0};
    o.named_rule = CBC_JUDGE_PER_MODULE;
    o.lib_rule = CBC_JUDGE_DISPATCH;
    const char *libs[32], *strict[32];
    o.lib_dirs = libs;
    o.strict_libs = strict;
    o.demangle = gate_demangle;
    bool json = false;
    const char *kernels_file = NULL;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":a:qvj:L:", longopts, NULL)) != -1) {
        switch (c) {
        case O_KERNELS: kernels_file = optarg; break;
        case O_RULE:
        case O_LIBS: {
            int r = gate_rule_opt(&t, usage, c == O_RULE ? "--rule" : "--libs", optarg,
                                  c == O_RULE ? &o.named_rule : &o.lib_rule);
            if (r != EXIT_OK)
                return r;
            break;
        }
        case O_STRICT_LIB:
            if (o.n_strict_libs == CBC_ARRAY_LEN(strict))
                return tool_usage_error(&t, usage, "at most %zu --strict-lib", CBC_ARRAY_LEN(strict));
            strict[o.n_strict_libs++] = optarg;
            break;
        case 'j': {
            char *end;
            long n = strtol(optarg, &end, 10);
            if (*end || n < 0 || n > 16)
                return tool_usage_error(&t, usage, "--jobs '%s': expected 0 (one per CPU) to 16",
                                        optarg);
            o.threads = (unsigned)n;
            break;
        }
        case 'v': t.verbosity = 1; break;
        case 'a': o.arch = optarg; break;
        case 'L':
            if (o.n_lib_dirs == CBC_ARRAY_LEN(libs))
                return tool_usage_error(&t, usage, "at most %zu -L directories", CBC_ARRAY_LEN(libs));
            libs[o.n_lib_dirs++] = optarg;
            break;
        case O_NOLIBS: o.no_libs = true; break;
        case O_JSON: json = true; break;
        case O_DRIVER:
            if (!tool_parse_driver(optarg, &o.driver_isa))
                return tool_usage_error(&t, usage, "--cuda-driver '%s': expected a CUDA version "
                                        "such as 12.8 (11.0 or later)", optarg);
            break;
        case O_PREFER: o.prefer_binary = true; break;
        case O_INTEGRITY: o.integrity_only = true; break;
        case O_CACHE: o.cache_dir = optarg; break;
        case 'q': t.verbosity = -1; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    if (optind >= argc)
        return tool_usage_error(&t, usage, "no PATH given");
    char **kn = NULL;
    size_t nk = 0;
    if (kernels_file) {
        if (!o.arch)
            return tool_usage_error(&t, usage, "--kernels needs --arch: the kernels are judged "
                                    "for the GPUs it names");
        int r = gate_read_kernels(&t, usage, kernels_file, &kn, &nk);
        if (r != EXIT_OK)
            return r;
        o.kernels = (const char *const *)kn;
        o.n_kernels = nk;
    }
    size_t counts[CBC_V_COUNT] = {0};
    size_t problems = 0;
    bool errors = false;
    int rc = EXIT_OK;
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
