/* cmd_devices.c: `cubincache devices [--json] [BUNDLE]`: the GPUs the CUDA
 * driver reports (name, compute capability, memory, driver version) and,
 * given a bundle, which of its images each GPU would load. Without a
 * driver or GPU it says so and exits 4.
 */
#include "cmds.h"

#include <cubincache/loader.h>
#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

int cmd_devices(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache devices");
    bool json = false;
    const char *name = NULL;
    const struct tool_opt opts[] = {
        OPT_STR('n', "name", "NAME", &name, "the bundle in DIR"),
        OPT_FLAG(0, "json", &json, "one JSON object per GPU (docs/json.md)"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache devices [--json] [BUNDLE]\n"
        "  BUNDLE: a NAME.manifest.json (or DIR with --name NAME)\n",
        opts, NULL};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (argc - optind > 1)
        return tool_usage(&t, "at most one BUNDLE");
    struct cbc_err err = {0};
    struct cbc_bundle *b = NULL;
    if (optind < argc) {
        enum cbc_status st = cbc_bundle_open_path(argv[optind], name, &b, &err);
        if (st != CBC_OK) {
            tool_error(&t, &err);
            return tool_exit_code(st);
        }
    }
    int count = 0;
    enum cbc_status st = cbc_device_count(&count, &err);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        cbc_bundle_close(b);
        return tool_exit_code(st);
    }
    for (int i = 0; i < count; i++) {
        struct cbc_device_info d;
        if ((st = cbc_device_query(i, &d, &err)) != CBC_OK)
            break;
        struct cbc_select_result r = {0};
        long pick = -1;
        char target[CBC_TARGET_NAME_MAX] = "";
        if (b) {
            struct cbc_select_query q = {(unsigned)(d.cc_major * 10 + d.cc_minor), d.ptx_isa, false};
            pick = cbc_bundle_select(b, &q, &r);
            size_t n;
            if (pick >= 0)
                cbc_target_name(&cbc_bundle_images(b, &n)[pick].target, target);
        }
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "ordinal", i);
            cJSON_AddStringToObject(o, "name", d.name);
            char cc[16], drv[16], isa[16];
            snprintf(cc, sizeof cc, "%d.%d", d.cc_major, d.cc_minor);
            snprintf(drv, sizeof drv, "%d.%d", d.driver_version / 1000, (d.driver_version % 1000) / 10);
            snprintf(isa, sizeof isa, "%u.%u", d.ptx_isa / 10, d.ptx_isa % 10);
            cJSON_AddStringToObject(o, "compute_capability", cc);
            cJSON_AddNumberToObject(o, "memory_bytes", (double)d.total_mem);
            cJSON_AddStringToObject(o, "driver_cuda_version", drv);
            cJSON_AddStringToObject(o, "driver_ptx_isa", isa);
            if (b) {
                cJSON *l = cJSON_AddObjectToObject(o, "bundle");
                cJSON_AddStringToObject(l, "name", cbc_bundle_name(b));
                if (pick >= 0)
                    cJSON_AddStringToObject(l, "target", target);
                else
                    cJSON_AddNullToObject(l, "target");
                cJSON_AddStringToObject(l, "reason", r.reason);
            }
            tool_print_json(o);
        } else {
            /* the GPU's name is the driver's text: shown escaped */
            char name[4 * sizeof d.name];
            cbc_escape(name, sizeof name, d.name);
            printf("GPU %d: %s, compute capability %d.%d, %.1f GB, driver CUDA %d.%d (PTX ISA %u.%u)\n",
                   i, name, d.cc_major, d.cc_minor, (double)d.total_mem / 1e9,
                   d.driver_version / 1000, (d.driver_version % 1000) / 10, d.ptx_isa / 10,
                   d.ptx_isa % 10);
            if (b && pick >= 0)
                printf("  %s would load %s: %s\n", cbc_bundle_name(b), target, r.reason);
            else if (b)
                printf("  %s: nothing loads: %s\n", cbc_bundle_name(b), r.reason);
        }
    }
    cbc_bundle_close(b);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    return EXIT_OK;
}
