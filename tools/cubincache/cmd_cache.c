/* cmd_cache.c: `cubincache cache stats|clean|trim|verify`: look after the
 * local store. Human output on stdout for stats (it is the data asked for),
 * --json for one object; problems on stderr.
 */
#include "store.h"
#include "cmds.h"

#include <cjson/cJSON.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cubincache cache [--cache-dir DIR] stats [--json]\n"
    "       cubincache cache [--cache-dir DIR] clean\n"
    "       cubincache cache [--cache-dir DIR] trim [--max-size SIZE]\n"
    "       cubincache cache [--cache-dir DIR] verify\n"
    "  SIZE: bytes, or with K/M/G/T (powers of 1000) or Ki/Mi/Gi/Ti (powers of 1024);\n"
    "  trim --max-size also makes SIZE the cache's limit from now on\n";

static void report_bad(void *ctx, const char *path, const char *why)
{
    const struct tool *t = ctx;
    tool_warn(t, "'%s': %s", path, why);
}

int cmd_cache(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache cache");
    enum { O_CACHE = 256, O_JSON, O_MAX, O_HELP };
    static const struct option longopts[] = {
        {"cache-dir", required_argument, NULL, O_CACHE}, {"json", no_argument, NULL, O_JSON},
        {"max-size", required_argument, NULL, O_MAX},    {"help", no_argument, NULL, O_HELP},
        {"quiet", no_argument, NULL, 'q'},               {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *max = NULL;
    bool json = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":q", longopts, NULL)) != -1) {
        switch (c) {
        case O_CACHE: dir = optarg; break;
        case O_JSON: json = true; break;
        case O_MAX: max = optarg; break;
        case 'q': t.verbosity = -1; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    if (optind != argc - 1)
        return tool_usage_error(&t, usage, optind >= argc ? "no action given"
                                                          : "one action at a time");
    const char *action = argv[optind];
    if (strcmp(action, "stats") && strcmp(action, "clean") && strcmp(action, "trim") &&
        strcmp(action, "verify"))
        return tool_usage_error(&t, usage, "unknown action '%s'", action);
    uint64_t max_size = 0;
    if (max && (strcmp(action, "trim") || !cbc_parse_size(max, &max_size) || max_size == 0))
        return tool_usage_error(&t, usage, strcmp(action, "trim")
                                               ? "--max-size goes with 'trim'"
                                               : "--max-size '%s': expected a size such as 500M",
                                max);
    if (json && strcmp(action, "stats"))
        return tool_usage_error(&t, usage, "--json goes with 'stats'");

    char *root = cbc_store_default_root(dir);
    struct cbc_store *s = NULL;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_store_open(root, &s, &err);
    if (st != CBC_OK) {
        free(root);
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    char b1[32], b2[32];
    if (!strcmp(action, "stats")) {
        struct cbc_store_stats ss;
        st = cbc_store_stats(s, &ss, &err);
        /* the remote builds would use now: its name, never its password */
        char *remote = NULL;
        char *spec = cbc_store_remote_spec(s, NULL, NULL);
        struct cbc_err re = {0};
        if (spec && cbc_store_attach_remote(s, spec, NULL, NULL, &re) == CBC_OK)
            remote = cbc_strdup(cbc_store_remote_name(s));
        else if (spec && re.status == CBC_E_USAGE)
            tool_warn(&t, "%s", re.msg);
        free(spec);
        if (st == CBC_OK && json) {
            /* through cJSON: the directory is a path, which may need escaping */
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "cache_dir", cbc_store_root(s));
            const struct {
                const char *k;
                uint64_t v;
            } f[] = {{"hits", ss.hits},       {"misses", ss.misses},
                     {"stores", ss.stores},   {"dropped", ss.dropped},
                     {"store_errors", ss.store_errors}, {"uncacheable", ss.uncacheable},
                     {"entries", ss.entries},
                     {"bytes", ss.bytes},     {"max_size", ss.max_size},
                     {"remote_hits", ss.remote_hits}, {"remote_misses", ss.remote_misses},
                     {"remote_errors", ss.remote_errors},
                     {"remote_bytes_read", ss.remote_bytes_read},
                     {"remote_bytes_written", ss.remote_bytes_written},
                     {"remote_time_us", ss.remote_time_us}};
            for (size_t i = 0; o && i < CBC_ARRAY_LEN(f); i++)
                cJSON_AddNumberToObject(o, f[i].k, (double)f[i].v);
            if (remote)
                cJSON_AddStringToObject(o, "remote", remote);
            else
                cJSON_AddNullToObject(o, "remote");
            tool_print_json(o);
        } else if (st == CBC_OK) {
            uint64_t lookups = ss.hits + ss.misses;
            printf("cache directory  %s\n", cbc_store_root(s));
            printf("hits             %" PRIu64 "%s", ss.hits, lookups ? "" : "\n");
            if (lookups)
                printf(" (%.1f%%)\n", 100.0 * (double)ss.hits / (double)lookups);
            printf("misses           %" PRIu64 "\n", ss.misses);
            printf("stored           %" PRIu64 "\n", ss.stores);
            printf("bad entries      %" PRIu64 " dropped\n", ss.dropped);
            printf("store errors     %" PRIu64 "\n", ss.store_errors);
            printf("uncacheable      %" PRIu64 " (launcher commands run as they are)\n",
                   ss.uncacheable);
            printf("entries          %" PRIu64 "\n", ss.entries);
            printf("size             %s of %s\n", cbc_format_size(ss.bytes, b1, sizeof b1),
                   cbc_format_size(ss.max_size, b2, sizeof b2));
            if (remote || ss.remote_hits || ss.remote_misses || ss.remote_errors) {
                uint64_t rl = ss.remote_hits + ss.remote_misses;
                printf("remote           %s\n", remote ? remote : "(none now)");
                printf("  remote hits    %" PRIu64, ss.remote_hits);
                if (rl)
                    printf(" (%.1f%% of the entries that missed here)",
                           100.0 * (double)ss.remote_hits / (double)rl);
                printf("\n  remote misses  %" PRIu64 "\n", ss.remote_misses);
                printf("  remote errors  %" PRIu64 " (bad entries, failures, refused writes)\n",
                       ss.remote_errors);
                printf("  remote read    %s\n",
                       cbc_format_size(ss.remote_bytes_read, b1, sizeof b1));
                printf("  remote written %s\n",
                       cbc_format_size(ss.remote_bytes_written, b1, sizeof b1));
                printf("  remote time    %.3f s\n", (double)ss.remote_time_us / 1e6);
            }
        }
        free(remote);
    } else if (!strcmp(action, "clean")) {
        uint64_t n = 0;
        st = cbc_store_clean(s, &n, report_bad, &t, &err);
        if (st == CBC_OK)
            printf("removed %" PRIu64 " entries from %s\n", n, cbc_store_root(s));
    } else if (!strcmp(action, "trim")) {
        if (max_size)
            st = cbc_store_set_max_size(s, max_size, &err);
        uint64_t n = 0, bytes = 0;
        if (st == CBC_OK)
            st = cbc_store_trim(s, cbc_store_max_size(s), &n, &bytes, &err);
        if (st == CBC_OK)
            printf("removed %" PRIu64 " entries (%s); limit %s\n", n,
                   cbc_format_size(bytes, b1, sizeof b1),
                   cbc_format_size(cbc_store_max_size(s), b2, sizeof b2));
    } else {
        uint64_t checked = 0, dropped = 0, left = 0;
        st = cbc_store_verify_all(s, &checked, &dropped, &left, report_bad, &t, &err);
        if (st == CBC_OK && !left)
            printf("verified %" PRIu64 " entries: %" PRIu64 " bad, dropped\n", checked, dropped);
        else if (st == CBC_OK)
            printf("verified %" PRIu64 " entries: %" PRIu64 " bad, dropped; %" PRIu64
                   " file%s that %s not the cache's, left alone\n",
                   checked, dropped, left, left == 1 ? "" : "s", left == 1 ? "is" : "are");
        if (st == CBC_OK && (dropped || left))
            st = CBC_E_VERIFY;
        cbc_store_close(s);
        free(root);
        return st == CBC_E_VERIFY ? EXIT_VERDICT : st == CBC_OK ? EXIT_OK : tool_exit_code(st);
    }
    cbc_store_close(s);
    free(root);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    return EXIT_OK;
}
