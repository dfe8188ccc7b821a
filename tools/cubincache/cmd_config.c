/* cmd_config.c: `cubincache config` (also `cubincache --show-config`):
 * every setting of the one table (src/store/settings.h) with its value
 * and where that came from, as `ccache --show-config` does; --json for one
 * object per setting. A setting given a value that fails its check is
 * printed with what is wrong, and the command exits 2.
 */
#include "cmds.h"
#include "store.h"

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

int cmd_config(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache config");
    const char *dir = NULL;
    bool json = false;
    const struct tool_opt opts[] = {
        OPT_STR(0, "cache-dir", "DIR", &dir, "the cache whose settings are shown"),
        OPT_FLAG(0, "json", &json, "one JSON object per setting (docs/json.md)"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache config [--cache-dir DIR] [--json] [NAME]\n"
        "  every setting (or NAME's): its value and where it came from (an environment\n"
        "  variable, the cache's v1/config, the command line, or the default)\n",
        opts, NULL};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (optind < argc - 1)
        return tool_usage(&t, "one setting at a time");
    int only = -1;
    if (optind == argc - 1 && (only = cbc_setting_find(argv[optind])) < 0)
        return tool_usage(&t, "no setting named '%s'", argv[optind]);

    char *root = cbc_store_default_root(dir);
    struct cbc_store *s = NULL;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_store_open_existing(root, &s, &err);
    if (st == CBC_E_NOT_FOUND) /* no cache yet: the settings are the environment's and defaults */
        st = cbc_store_open(root, &s, &err);
    if (st != CBC_OK) {
        free(root);
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    char config_path[4200];
    snprintf(config_path, sizeof config_path, "%s/config", cbc_store_root(s));
    rc = EXIT_OK;
    for (int i = 0; i < CBC_SET_COUNT; i++) {
        if (only >= 0 && i != only)
            continue;
        const struct cbc_setting_def *d = &cbc_settings[i];
        struct cbc_setting_value v;
        cbc_store_setting(s, (enum cbc_setting)i, &v, NULL);
        if (i == CBC_SET_CACHE_DIR) { /* the one resolved before the store opens */
            snprintf(v.value, sizeof v.value, "%s", root);
            v.from = dir ? CBC_FROM_OPTION : getenv(d->env) && *getenv(d->env) ? CBC_FROM_ENV
                                                                             : CBC_FROM_DEFAULT;
        }
        char origin[4200];
        cbc_setting_origin((enum cbc_setting)i, v.from, config_path, origin, sizeof origin);
        if (v.bad[0])
            rc = EXIT_USAGE;
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", d->name);
            cJSON_AddStringToObject(o, "value", v.value);
            cJSON_AddStringToObject(o, "from", v.from == CBC_FROM_DEFAULT  ? "default"
                                               : v.from == CBC_FROM_CONFIG ? "config"
                                               : v.from == CBC_FROM_ENV    ? "environment"
                                                                           : "option");
            cJSON_AddStringToObject(o, "origin", origin);
            cJSON_AddStringToObject(o, "default", d->def);
            cJSON_AddStringToObject(o, "help", d->help);
            if (d->env)
                cJSON_AddStringToObject(o, "env", d->env);
            if (d->config_key)
                cJSON_AddStringToObject(o, "config_key", d->config_key);
            cJSON_AddBoolToObject(o, "library", d->library);
            cJSON_AddBoolToObject(o, "test_only", d->test_only);
            if (v.bad[0])
                cJSON_AddStringToObject(o, "error", v.bad);
            tool_print_json(o);
            continue;
        }
        printf("(");
        tool_fputs_escaped(origin, stdout);
        printf(") %s = ", d->name);
        tool_fputs_escaped(v.value, stdout);
        printf("%s%s\n", d->library ? "   [read by programs that link libcubincache]" : "",
               d->test_only ? "   [tests only]" : "");
        if (v.bad[0])
            tool_errorf(&t, "%s: %s", d->name, v.bad);
    }
    cbc_store_close(s);
    free(root);
    return rc;
}
