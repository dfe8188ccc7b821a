/* ccache_opts.c: the options a ccache user types first, as ccache spells
 * them: -s/--show-stats (`cache stats`), -z/--zero-stats, -p/--show-config
 * (`config`), -V/--version. Each is the subcommand it names, so there is
 * one implementation of each; the extra arguments go to it
 * (`cubincache -s --json`, `cubincache -p --cache-dir DIR`).
 */
#include "cmds.h"
#include "store.h"

#include <cubincache/version.h>

#include <stdlib.h>
#include <string.h>

static int zero_stats(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache --zero-stats");
    const char *dir = NULL;
    const struct tool_opt opts[] = {
        OPT_STR(0, "cache-dir", "DIR", &dir, "the cache (default: as build finds it)"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache -z|--zero-stats [--cache-dir DIR]\n"
        "  sets the cache's counters (hits, misses, stored, ...) to 0; the entries stay\n",
        opts, NULL};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (optind < argc)
        return tool_usage(&t, "unexpected argument '%s'", argv[optind]);
    char *root = cbc_store_default_root(dir);
    struct cbc_store *s = NULL;
    struct cbc_err err = {0};
    enum cbc_status st = root ? cbc_store_open(root, &s, &err) : cbc_err_oom(&err);
    if (st == CBC_OK)
        st = cbc_store_zero_stats(s, &err);
    if (st == CBC_OK)
        printf("statistics zeroed in %s\n", cbc_store_root(s));
    cbc_store_close(s);
    free(root);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    return EXIT_OK;
}

int cmd_ccache_option(int argc, char **argv)
{
    const char *o = argv[0];
    if (!strcmp(o, "-s") || !strcmp(o, "--show-stats")) {
        /* `cache [OPTIONS] stats`: the options before the action */
        char **v = calloc((size_t)argc + 2, sizeof *v);
        if (!v)
            return EXIT_INTERNAL;
        v[0] = "cache";
        for (int i = 1; i < argc; i++)
            v[i] = argv[i];
        v[argc] = "stats";
        int rc = cmd_cache(argc + 1, v);
        free(v);
        return rc;
    }
    if (!strcmp(o, "-z") || !strcmp(o, "--zero-stats"))
        return zero_stats(argc, argv);
    if (!strcmp(o, "-p") || !strcmp(o, "--show-config"))
        return cmd_config(argc, argv);
    if (!strcmp(o, "-V") || !strcmp(o, "--version")) {
        printf("cubincache %s\n", CUBINCACHE_VERSION_STRING);
        return EXIT_OK;
    }
    return -1;
}
