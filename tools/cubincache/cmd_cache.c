/* cmd_cache.c: `cubincache cache stats|clean|trim|verify`: look after the
 * local store; `cubincache cache remote stats|push|verify`: the remote
 * cache as a whole, for its operators. Human output on stdout for stats
 * (it is the data asked for), --json for one object; problems on stderr.
 */
#include "store.h"
#include "cmds.h"

#include <cjson/cJSON.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage[] =
    "usage: cubincache cache [--cache-dir DIR] stats [--json]\n"
    "       cubincache cache [--cache-dir DIR] clean\n"
    "       cubincache cache [--cache-dir DIR] trim [--max-size SIZE]\n"
    "       cubincache cache [--cache-dir DIR] verify\n"
    "       cubincache cache [--remote SPEC] remote stats [--json] [--max-keys N] [--time-limit S]\n"
    "       cubincache cache [--cache-dir DIR] [--remote SPEC] remote push\n"
    "       cubincache cache [--remote SPEC] remote verify [--delete] [--max-keys N] [--time-limit S]\n"
    "  SIZE: bytes, or with K/M/G/T (powers of 1000) or Ki/Mi/Gi/Ti (powers of 1024);\n"
    "  trim --max-size also makes SIZE the cache's limit from now on\n"
    "  remote: the remote builds would use (--remote, else CUBINCACHE_REMOTE, else 'remote'\n"
    "  in the cache's config); stats and verify list at most N keys (1000000) for at most\n"
    "  S seconds (300); verify --delete deletes the values that fail their checks\n";

static void report_bad(void *ctx, const char *path, const char *why)
{
    const struct tool *t = ctx;
    tool_warn(t, "'%s': %s", path, why);
}

/* CLOCK_MONOTONIC in microseconds: the clock of the store's deadlines. */
static uint64_t monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static void report_key(void *ctx, const char *key, const char *why)
{
    const struct tool *t = ctx;
    tool_warn(t, "'%s': %s", key, why);
}

struct remote_opts {
    const char *spec;
    bool json, del;
    uint64_t max_keys, time_limit_s;
};

/* `cache remote stats|push|verify` on an open store. */
static int cache_remote(struct tool *t, struct cbc_store *s, const char *what,
                        const struct remote_opts *o)
{
    struct cbc_err err = {0};
    enum cbc_status st = cbc_store_attach_default_remote(s, o->spec, NULL, NULL, &err);
    if (st == CBC_OK && !cbc_store_remote_name(s))
        st = cbc_err_set(&err, CBC_E_USAGE, "no remote cache is named: give --remote SPEC, set "
                                            "CUBINCACHE_REMOTE or 'remote' in the cache's config");
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    const char *name = cbc_store_remote_name(s);
    uint64_t deadline = monotonic_us() + o->time_limit_s * 1000000;
    char b1[32];
    if (!strcmp(what, "stats")) {
        struct cbc_store_remote_inventory inv;
        st = cbc_store_remote_inventory(s, o->max_keys, deadline, &inv, &err);
        if (st == CBC_OK && o->json) {
            cJSON *j = cJSON_CreateObject();
            cJSON_AddStringToObject(j, "remote", name);
            cJSON_AddStringToObject(j, "server", inv.version);
            cJSON_AddNumberToObject(j, "keys", (double)inv.keys);
            cJSON_AddNumberToObject(j, "bytes", (double)inv.bytes);
            cJSON_AddNumberToObject(j, "foreign", (double)inv.foreign);
            cJSON_AddBoolToObject(j, "complete", inv.complete);
            cJSON *a = cJSON_AddArrayToObject(j, "namespaces");
            for (size_t i = 0; a && i < inv.n_ns; i++) {
                cJSON *n = cJSON_CreateObject();
                if (inv.ns[i].name[0])
                    cJSON_AddStringToObject(n, "namespace", inv.ns[i].name);
                else
                    cJSON_AddNullToObject(n, "namespace");
                cJSON_AddNumberToObject(n, "objects", (double)inv.ns[i].objects);
                cJSON_AddNumberToObject(n, "direct", (double)inv.ns[i].direct);
                cJSON_AddNumberToObject(n, "deps", (double)inv.ns[i].deps);
                cJSON_AddNumberToObject(n, "lease", (double)inv.ns[i].lease);
                cJSON_AddNumberToObject(n, "bytes", (double)inv.ns[i].bytes);
                cJSON_AddItemToArray(a, n);
            }
            cJSON_AddNumberToObject(j, "namespaces_beyond", (double)inv.ns_others);
            tool_print_json(j);
        } else if (st == CBC_OK) {
            printf("remote           %s\n", name);
            printf("server           %s\n", inv.version);
            printf("keys             %s%" PRIu64 " under cubincache:v1: (%s of values)\n",
                   inv.complete ? "" : "at least ", inv.keys,
                   cbc_format_size(inv.bytes, b1, sizeof b1));
            for (size_t i = 0; i < inv.n_ns; i++)
                printf("  %-14s %" PRIu64 " entries, %" PRIu64 " records, %" PRIu64
                       " dependency lists, %" PRIu64 " leases, %s\n",
                       inv.ns[i].name[0] ? inv.ns[i].name : "(no namespace)", inv.ns[i].objects,
                       inv.ns[i].direct, inv.ns[i].deps, inv.ns[i].lease,
                       cbc_format_size(inv.ns[i].bytes, b1, sizeof b1));
            if (inv.ns_others)
                printf("  %" PRIu64 " keys of more namespaces\n", inv.ns_others);
            if (inv.foreign)
                printf("  %" PRIu64 " keys cubincache does not write\n", inv.foreign);
        }
        if (st == CBC_OK && !inv.complete)
            tool_warn(t, "stopped before the end of the key space (--max-keys %" PRIu64
                         ", --time-limit %" PRIu64 "): the counts are a part",
                      o->max_keys, o->time_limit_s);
    } else if (!strcmp(what, "push")) {
        uint64_t pushed = 0, bytes = 0, bad = 0;
        st = cbc_store_remote_push(s, &pushed, &bytes, &bad, report_bad, t, &err);
        if (st == CBC_OK)
            printf("pushed %" PRIu64 " entries and records (%s) to %s%s\n", pushed,
                   cbc_format_size(bytes, b1, sizeof b1), name,
                   bad ? "; damaged local files left out (cache verify drops them)" : "");
        else if (pushed)
            tool_warn(t, "%" PRIu64 " entries and records were pushed before the failure",
                      pushed);
    } else {
        struct cbc_store_remote_verify v;
        st = cbc_store_remote_verify(s, o->del, o->max_keys, deadline, &v, report_key, t, &err);
        if (st == CBC_OK) {
            printf("verified %" PRIu64 " values in %s: %" PRIu64 " bad%s", v.checked, name, v.bad,
                   o->del ? ", deleted" : "");
            if (v.foreign)
                printf("; %" PRIu64 " key%s cubincache does not write, left alone", v.foreign,
                       v.foreign == 1 ? "" : "s");
            printf("\n");
            if (!v.complete)
                tool_warn(t, "stopped before the end of the key space (--max-keys %" PRIu64
                             ", --time-limit %" PRIu64 "): the rest is not verified",
                          o->max_keys, o->time_limit_s);
            if (v.bad || v.foreign)
                return EXIT_VERDICT;
        }
    }
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    return EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache cache");
    enum { O_CACHE = 256, O_JSON, O_MAX, O_HELP, O_REMOTE, O_DELETE, O_MAX_KEYS, O_TIME_LIMIT };
    static const struct option longopts[] = {
        {"cache-dir", required_argument, NULL, O_CACHE}, {"json", no_argument, NULL, O_JSON},
        {"max-size", required_argument, NULL, O_MAX},    {"help", no_argument, NULL, O_HELP},
        {"quiet", no_argument, NULL, 'q'},               {"remote", required_argument, NULL, O_REMOTE},
        {"delete", no_argument, NULL, O_DELETE},         {"max-keys", required_argument, NULL, O_MAX_KEYS},
        {"time-limit", required_argument, NULL, O_TIME_LIMIT}, {NULL, 0, NULL, 0},
    };
    const char *dir = NULL, *max = NULL;
    bool json = false;
    struct remote_opts ro = {NULL, false, false, 1000000, 300};
    bool remote_only = false; /* an option only `cache remote` takes */
    char *end;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":q", longopts, NULL)) != -1) {
        switch (c) {
        case O_CACHE: dir = optarg; break;
        case O_JSON: json = true; break;
        case O_MAX: max = optarg; break;
        case O_REMOTE: ro.spec = optarg; remote_only = true; break;
        case O_DELETE: ro.del = true; remote_only = true; break;
        case O_MAX_KEYS:
        case O_TIME_LIMIT: {
            unsigned long long v = strtoull(optarg, &end, 10);
            if (!*optarg || *end || *optarg == '-' || v == 0 || v > 1000000000ull)
                return tool_usage_error(&t, usage, "%s '%s': expected a number from 1 to 10^9",
                                        c == O_MAX_KEYS ? "--max-keys" : "--time-limit", optarg);
            if (c == O_MAX_KEYS)
                ro.max_keys = v;
            else
                ro.time_limit_s = v;
            remote_only = true;
            break;
        }
        case 'q': t.verbosity = -1; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    bool remote = optind < argc && !strcmp(argv[optind], "remote");
    if (remote) {
        const char *what = optind + 1 < argc ? argv[optind + 1] : NULL;
        if (!what || optind + 2 != argc)
            return tool_usage_error(&t, usage, !what ? "'remote' needs stats, push or verify"
                                                     : "one action at a time");
        if (strcmp(what, "stats") && strcmp(what, "push") && strcmp(what, "verify"))
            return tool_usage_error(&t, usage, "unknown remote action '%s'", what);
        if (json && strcmp(what, "stats"))
            return tool_usage_error(&t, usage, "--json goes with 'stats'");
        if (ro.del && strcmp(what, "verify"))
            return tool_usage_error(&t, usage, "--delete goes with 'remote verify'");
        if (max)
            return tool_usage_error(&t, usage, "--max-size goes with 'trim'");
        ro.json = json;
        char *root = cbc_store_default_root(dir);
        struct cbc_store *s = NULL;
        struct cbc_err err = {0};
        enum cbc_status st = cbc_store_open(root, &s, &err);
        free(root);
        if (st != CBC_OK) {
            tool_error(&t, &err);
            return tool_exit_code(st);
        }
        int rc = cache_remote(&t, s, what, &ro);
        cbc_store_close(s);
        return rc;
    }
    if (remote_only)
        return tool_usage_error(&t, usage, "--remote, --delete, --max-keys and --time-limit go "
                                           "with 'remote'");
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
                     {"remote_time_us", ss.remote_time_us},
                     {"remote_timeouts", ss.remote_timeouts},
                     {"remote_refusals", ss.remote_refusals},
                     {"remote_bad_values", ss.remote_bad_values},
                     {"remote_reshared", ss.remote_reshared}};
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
                printf("    timeouts     %" PRIu64 "\n", ss.remote_timeouts);
                printf("    refusals     %" PRIu64 " (connection refused, authentication, writes "
                       "refused)\n", ss.remote_refusals);
                printf("    bad values   %" PRIu64 "\n", ss.remote_bad_values);
                printf("  reshared       %" PRIu64 " (local hits written back)\n",
                       ss.remote_reshared);
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
