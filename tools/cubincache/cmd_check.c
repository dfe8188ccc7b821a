/* cmd_check.c: `cubincache check [--arch SPEC] [--json] PATH...`: the
 * pre-deploy gate. The verdicts come from src/check; this file prints them,
 * one line per entry with the problem first, or one JSON object per line
 * (docs/json.md), and turns them into the exit code: 0 all fine, 1 any
 * problem, 2 usage or unreadable input.
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
    "                         (\"will this run on sm_90?\"), any build --arch spec\n"
    "      --cuda-driver X.Y  judge PTX against a driver of this CUDA version (default: any)\n"
    "      --prefer-binary    assume CU_PREFER_BINARY instead of the driver's default\n"
    "      --integrity-only   skip freshness (machines without the sources or nvcc)\n"
    "  -L, --library-path DIR binaries: look here first for the shared libraries they need\n"
    "      --no-libs          binaries: judge the file alone, not the libraries it needs\n"
    "      --cache-dir DIR    where the cached toolchain identity lives\n"
    "      --json             one JSON object per entry, then a summary object\n"
    "  exit: 0 everything fine, 1 a problem, 2 usage or unreadable input\n";

static void print_item(const struct cbc_check_item *it, bool json)
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
        tool_print_json(o);
        return;
    }
    char status[24];
    size_t k = 0;
    for (const char *p = cbc_verdict_name(it->verdict); *p && k < sizeof status - 1; p++)
        status[k++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    status[k] = '\0';
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
}

int cmd_check(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache check");
    enum { O_JSON = 256, O_DRIVER, O_PREFER, O_INTEGRITY, O_CACHE, O_NOLIBS, O_HELP };
    static const struct option longopts[] = {
        {"arch", required_argument, NULL, 'a'},
        {"json", no_argument, NULL, O_JSON},
        {"cuda-driver", required_argument, NULL, O_DRIVER},
        {"prefer-binary", no_argument, NULL, O_PREFER},
        {"integrity-only", no_argument, NULL, O_INTEGRITY},
        {"cache-dir", required_argument, NULL, O_CACHE},
        {"library-path", required_argument, NULL, 'L'},
        {"no-libs", no_argument, NULL, O_NOLIBS},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    struct cbc_check_opts o = {0};
    const char *libs[32];
    o.lib_dirs = libs;
    bool json = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":a:qL:", longopts, NULL)) != -1) {
        switch (c) {
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
    size_t counts[CBC_V_COUNT] = {0};
    int rc = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        struct cbc_check_report rep = {0};
        struct cbc_err err = {0};
        enum cbc_status st = cbc_check_path(argv[i], &o, &rep, &err);
        for (size_t k = 0; k < rep.n; k++) {
            print_item(&rep.v[k], json);
            counts[rep.v[k].verdict]++;
            if (cbc_verdict_is_problem(rep.v[k].verdict) && rc == EXIT_OK)
                rc = EXIT_VERDICT;
        }
        for (size_t k = 0; k < rep.notes_n; k++)
            tool_warn(&t, "%s", rep.notes[k]);
        cbc_check_report_release(&rep);
        if (st != CBC_OK) {
            tool_error(&t, &err);
            /* what check cannot read is bad input (docs/exit-codes.md) */
            int code = st == CBC_E_IO ? EXIT_USAGE : tool_exit_code(st);
            rc = code == EXIT_VERDICT ? EXIT_USAGE : code > rc ? code : rc;
        }
    }
    if (json) {
        cJSON *o2 = cJSON_CreateObject();
        cJSON *s = cJSON_AddObjectToObject(o2, "summary");
        size_t problems = 0;
        for (int v = 0; v < CBC_V_COUNT; v++) {
            cJSON_AddNumberToObject(s, cbc_verdict_name((enum cbc_verdict)v), (double)counts[v]);
            if (cbc_verdict_is_problem((enum cbc_verdict)v))
                problems += counts[v];
        }
        cJSON_AddNumberToObject(s, "problems", (double)problems);
        cJSON_AddNumberToObject(s, "exit", rc);
        tool_print_json(o2);
    } else if (t.verbosity >= 0) {
        size_t total = 0, problems = 0;
        for (int v = 0; v < CBC_V_COUNT; v++) {
            total += counts[v];
            if (cbc_verdict_is_problem((enum cbc_verdict)v))
                problems += counts[v];
        }
        fprintf(stderr, "%s: %zu checked, %zu problem%s\n", t.prog, total, problems,
                problems == 1 ? "" : "s");
    }
    return rc;
}
