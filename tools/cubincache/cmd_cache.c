/* cmd_cache.c: `cubincache cache stats|clean|trim|verify`: look after the
 * local store; `cubincache cache remote stats|push|verify`: the remote
 * cache as a whole, for its operators. Human output on stdout for stats
 * (it is the data asked for), --json for one object; problems on stderr.
 */
#include "store.h"
#include "cmds.h"

#include <cjson/cJSON.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* `cache stats --json`: one object (through cJSON: the directory is a
 * path, which may need escaping). */
static void stats_json(const struct cbc_store *s, const struct cbc_store_stats *ss,
                       const char *remote)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "cache_dir", cbc_store_root(s));
    const struct {
        const char *k;
        uint64_t v;
    } f[] = {{"hits", ss->hits},
             {"misses", ss->misses},
             {"stores", ss->stores},
             {"dropped", ss->dropped},
             {"store_errors", ss->store_errors},
             {"uncacheable", ss->uncacheable},
             {"entries", ss->entries},
             {"bytes", ss->bytes},
             {"max_size", ss->max_size},
             {"remote_hits", ss->remote_hits},
             {"remote_misses", ss->remote_misses},
             {"remote_errors", ss->remote_errors},
             {"remote_bytes_read", ss->remote_bytes_read},
             {"remote_bytes_written", ss->remote_bytes_written},
             {"remote_time_us", ss->remote_time_us},
             {"remote_timeouts", ss->remote_timeouts},
             {"remote_refusals", ss->remote_refusals},
             {"remote_bad_values", ss->remote_bad_values},
             {"remote_reshared", ss->remote_reshared}};
    for (size_t i = 0; o && i < CBC_ARRAY_LEN(f); i++)
        cJSON_AddNumberToObject(o, f[i].k, (double)f[i].v);
    if (remote)
        cJSON_AddStringToObject(o, "remote", remote);
    else
        cJSON_AddNullToObject(o, "remote");
    tool_print_json(o);
}

/* `cache stats`: a table for people, the remote's part only when there is
 * one now or its counters are not zero. */
static void stats_text(const struct cbc_store *s, const struct cbc_store_stats *ss,
                       const char *remote)
{
    char b1[32], b2[32];
    uint64_t lookups = ss->hits + ss->misses;
    printf("cache directory  %s\n", cbc_store_root(s));
    printf("hits             %" PRIu64 "%s", ss->hits, lookups ? "" : "\n");
    if (lookups)
        printf(" (%.1f%%)\n", 100.0 * (double)ss->hits / (double)lookups);
    printf("misses           %" PRIu64 "\n", ss->misses);
    printf("stored           %" PRIu64 "\n", ss->stores);
    printf("bad entries      %" PRIu64 " dropped\n", ss->dropped);
    printf("store errors     %" PRIu64 "\n", ss->store_errors);
    printf("uncacheable      %" PRIu64 " (launcher commands run as they are)\n", ss->uncacheable);
    printf("entries          %" PRIu64 "\n", ss->entries);
    printf("size             %s of %s\n", cbc_format_size(ss->bytes, b1, sizeof b1),
           cbc_format_size(ss->max_size, b2, sizeof b2));
    if (!remote && !ss->remote_hits && !ss->remote_misses && !ss->remote_errors)
        return;
    uint64_t rl = ss->remote_hits + ss->remote_misses;
    printf("remote           %s\n", remote ? remote : "(none now)");
    printf("  remote hits    %" PRIu64, ss->remote_hits);
    if (rl)
        printf(" (%.1f%% of the entries that missed here)",
               100.0 * (double)ss->remote_hits / (double)rl);
    printf("\n  remote misses  %" PRIu64 "\n", ss->remote_misses);
    printf("  remote errors  %" PRIu64 " (bad entries, failures, refused writes)\n",
           ss->remote_errors);
    printf("    timeouts     %" PRIu64 "\n", ss->remote_timeouts);
    printf("    refusals     %" PRIu64 " (connection refused, authentication, writes "
           "refused)\n", ss->remote_refusals);
    printf("    bad values   %" PRIu64 "\n", ss->remote_bad_values);
    printf("  reshared       %" PRIu64 " (local hits written back)\n", ss->remote_reshared);
    printf("  remote read    %s\n", cbc_format_size(ss->remote_bytes_read, b1, sizeof b1));
    printf("  remote written %s\n", cbc_format_size(ss->remote_bytes_written, b1, sizeof b1));
    printf("  remote time    %.3f s\n", (double)ss->remote_time_us / 1e6);
}

static enum cbc_status cache_stats(struct tool *t, struct cbc_store *s, bool json,
                                   struct cbc_err *err)
{
    struct cbc_store_stats ss;
    enum cbc_status st = cbc_store_stats(s, &ss, err);
    /* the remote builds would use now: its name, never its password */
    char *remote = NULL;
    char *spec = cbc_store_remote_spec(s, NULL, NULL);
    struct cbc_err re = {0};
    if (spec && cbc_store_attach_remote(s, spec, NULL, NULL, &re) == CBC_OK)
        remote = cbc_strdup(cbc_store_remote_name(s));
    else if (spec && re.status == CBC_E_USAGE)
        tool_warn(t, "%s", re.msg);
    free(spec);
    if (st == CBC_OK && json)
        stats_json(s, &ss, remote);
    else if (st == CBC_OK)
        stats_text(s, &ss, remote);
    free(remote);
    return st;
}

/* `cache clean|trim|verify`: an exit code (verify: 1 when it dropped or
 * left anything). */
static int cache_local(struct tool *t, struct cbc_store *s, const char *action,
                       uint64_t max_size)
{
    struct cbc_err err = {0};
    enum cbc_status st = CBC_OK;
    char b1[32], b2[32];
    if (!strcmp(action, "clean")) {
        uint64_t n = 0;
        st = cbc_store_clean(s, &n, report_bad, t, &err);
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
        st = cbc_store_verify_all(s, &checked, &dropped, &left, report_bad, t, &err);
        if (st == CBC_OK && !left)
            printf("verified %" PRIu64 " entries: %" PRIu64 " bad, dropped\n", checked, dropped);
        else if (st == CBC_OK)
            printf("verified %" PRIu64 " entries: %" PRIu64 " bad, dropped; %" PRIu64
                   " file%s that %s not the cache's, left alone\n",
                   checked, dropped, left, left == 1 ? "" : "s", left == 1 ? "is" : "are");
        if (st == CBC_OK && (dropped || left))
            return EXIT_VERDICT;
    }
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    return EXIT_OK;
}

/* The store under --cache-dir (or the default), then what the action
 * does with it. */
static int with_store(struct tool *t, const char *dir, const char *action, bool json,
                      uint64_t max_size, const struct remote_opts *ro)
{
    char *root = cbc_store_default_root(dir);
    struct cbc_store *s = NULL;
    struct cbc_err err = {0};
    enum cbc_status st = root ? cbc_store_open(root, &s, &err) : cbc_err_oom(&err);
    free(root);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    int rc;
    if (ro)
        rc = cache_remote(t, s, action, ro);
    else if (!strcmp(action, "stats"))
        rc = (st = cache_stats(t, s, json, &err)) == CBC_OK ? EXIT_OK : EXIT_INTERNAL;
    else
        rc = cache_local(t, s, action, max_size);
    if (st != CBC_OK) {
        tool_error(t, &err);
        rc = tool_exit_code(st);
    }
    cbc_store_close(s);
    return rc;
}

static bool one_of(const char *s, const char *const *v)
{
    for (; *v; v++)
        if (!strcmp(s, *v))
            return true;
    return false;
}

int cmd_cache(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache cache");
    const char *dir = NULL, *max = NULL;
    bool json = false;
    struct remote_opts ro = {NULL, false, false, 1000000, 300};
    bool remote_only = false; /* an option only `cache remote` takes */
    struct tool_opt opts[] = {
        OPT_STR(0, "cache-dir", "DIR", &dir, "the local cache (default: as build finds it)"),
        OPT_FLAG(0, "json", &json, "stats: one JSON object (docs/json.md)"),
        OPT_STR(0, "max-size", "SIZE", &max, "trim: the cache's limit, from now on"),
        OPT_STR(0, "remote", "SPEC", &ro.spec, "remote: the remote cache (redis://..., http://...)"),
        OPT_FLAG(0, "delete", &ro.del, "remote verify: delete the values that fail their checks"),
        OPT_INT(0, "max-keys", "N", &ro.max_keys, 1, 1000000000,
                "remote stats, verify: list at most N keys (default 1000000)"),
        OPT_INT(0, "time-limit", "S", &ro.time_limit_s, 1, 1000000000,
                "remote stats, verify: for at most S seconds (default 300)"),
        OPT_END,
    };
    for (struct tool_opt *o = opts; o->name; o++) /* the options of `cache remote` */
        if (one_of(o->name, (const char *const[]){"remote", "delete", "max-keys", "time-limit",
                                                  NULL}))
            o->seen = &remote_only;
    const struct tool_cmd cmd = {
        "usage: cubincache cache [--cache-dir DIR] stats [--json]\n"
        "       cubincache cache [--cache-dir DIR] clean\n"
        "       cubincache cache [--cache-dir DIR] trim [--max-size SIZE]\n"
        "       cubincache cache [--cache-dir DIR] verify\n"
        "       cubincache cache [--remote SPEC] remote stats [--json] [--max-keys N] "
        "[--time-limit S]\n"
        "       cubincache cache [--cache-dir DIR] [--remote SPEC] remote push\n"
        "       cubincache cache [--remote SPEC] remote verify [--delete] [--max-keys N] "
        "[--time-limit S]\n",
        opts,
        "  SIZE: bytes, or with K/M/G/T (powers of 1000) or Ki/Mi/Gi/Ti (powers of 1024)\n"
        "  remote: the remote builds would use (--remote, else CUBINCACHE_REMOTE, else 'remote'\n"
        "  in the cache's config)\n"};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (optind < argc && !strcmp(argv[optind], "remote")) {
        const char *what = optind + 1 < argc ? argv[optind + 1] : NULL;
        if (!what || optind + 2 != argc)
            return tool_usage(&t, !what ? "'remote' needs stats, push or verify"
                                        : "one action at a time");
        if (!one_of(what, (const char *const[]){"stats", "push", "verify", NULL}))
            return tool_usage(&t, "unknown remote action '%s'", what);
        if (json && strcmp(what, "stats"))
            return tool_usage(&t, "--json goes with 'stats'");
        if (ro.del && strcmp(what, "verify"))
            return tool_usage(&t, "--delete goes with 'remote verify'");
        if (max)
            return tool_usage(&t, "--max-size goes with 'trim'");
        ro.json = json;
        return with_store(&t, dir, what, json, 0, &ro);
    }
    if (remote_only)
        return tool_usage(&t, "--remote, --delete, --max-keys and --time-limit go with 'remote'");
    if (optind != argc - 1)
        return tool_usage(&t, optind >= argc ? "no action given" : "one action at a time");
    const char *action = argv[optind];
    if (!one_of(action, (const char *const[]){"stats", "clean", "trim", "verify", NULL}))
        return tool_usage(&t, "unknown action '%s'", action);
    uint64_t max_size = 0;
    if (max && strcmp(action, "trim"))
        return tool_usage(&t, "--max-size goes with 'trim'");
    if (max && (!cbc_parse_size(max, &max_size) || max_size == 0))
        return tool_usage(&t, "--max-size '%s': expected a size such as 500M", max);
    if (json && strcmp(action, "stats"))
        return tool_usage(&t, "--json goes with 'stats'");
    return with_store(&t, dir, action, json, max_size, NULL);
}
