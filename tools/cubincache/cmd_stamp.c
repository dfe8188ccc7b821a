/* cmd_stamp.c: `cubincache stamp -o FILE [--arch SPEC]`: the one step a
 * Meson or ninja build runs every time (build_always_stale), so that the
 * kernel steps can depend on its output and their depfiles instead of
 * running every time. The file changes only when the resolved targets,
 * the toolchain or the environment nvcc reads change; with ninja's restat
 * an unchanged stamp leaves every kernel step alone. `--check` resolves
 * the spec and writes nothing: a configure step uses it to reject a bad
 * -Dcuda-arch with the message `build` would give.
 */
#include "build.h"
#include "cmds.h"
#include "opts.h"

#include <stdlib.h>
#include <string.h>

int cmd_stamp(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache stamp");
    int split = tool_split_dashdash(argc, argv);
    struct cbc_stamp_opts o = {0};
    bool check = false;
    const struct tool_opt opts[] = {
        OPT_STR('o', "output", "FILE", &o.output,
                "the stamp: rewritten only when a kernel may build differently"),
        OPT_STR('a', "arch", "SPEC", &o.arch, "as `cubincache build --arch` (default auto)"),
        OPT_FLAG(0, "check", &check, "only resolve SPEC: exit 0, or 2 with what `build` would say"),
        OPT_STR(0, "nvcc", "PATH", &o.nvcc, "nvcc (default $NVCC, PATH, /usr/local/cuda/bin/nvcc)"),
        OPT_STR(0, "cache-dir", "DIR", &o.cache_dir, "where the toolchain's identity is cached"),
        OPT_VERBOSE("say whether FILE changed"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache stamp [options] -o FILE [-- NVCC_ARGS...]\n"
        "       cubincache stamp --check [--arch SPEC]\n",
        opts, "  NVCC_ARGS: flags every kernel shares (a -ccbin there names the host compiler)\n"};
    int rc = tool_parse(&t, &cmd, split, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (optind < split)
        return tool_usage(&t, "unexpected '%s' (nvcc arguments go after '--')", argv[optind]);
    if (!check && !o.output)
        return tool_usage(&t, "no stamp file given: use -o FILE");
    if (check && o.output)
        return tool_usage(&t, "--check writes nothing; drop -o");
    o.flags = split < argc ? argv + split + 1 : NULL;
    o.n_flags = split < argc ? (size_t)(argc - split - 1) : 0;
    const char *dis = getenv("CUBINCACHE_DISABLE");
    o.no_cache = dis && *dis && strcmp(dis, "0") != 0;
    bool changed = false;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_build_stamp(&o, check ? NULL : &changed, &err);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        return tool_exit_code(st);
    }
    if (!check)
        tool_note(&t, "'%s' %s", o.output, changed ? "rewritten" : "unchanged");
    return EXIT_OK;
}
