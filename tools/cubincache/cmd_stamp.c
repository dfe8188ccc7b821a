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

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cubincache stamp [options] -o FILE [-- NVCC_ARGS...]\n"
    "       cubincache stamp --check [--arch SPEC]\n"
    "  -o, --output FILE     the stamp: rewritten only when a kernel may build differently\n"
    "  -a, --arch SPEC       as `cubincache build --arch` (default auto)\n"
    "      --check           only resolve SPEC: exit 0, or 2 with what `build` would say\n"
    "      --nvcc PATH       nvcc (default $NVCC, PATH, /usr/local/cuda/bin/nvcc)\n"
    "      --cache-dir DIR   where the toolchain's identity is cached\n"
    "  -q, --quiet           no warnings    -v, --verbose   say whether FILE changed\n"
    "  NVCC_ARGS: flags every kernel shares (a -ccbin there names the host compiler)\n";

int cmd_stamp(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache stamp");
    int split = tool_split_dashdash(argc, argv);
    enum { O_CHECK = 256, O_NVCC, O_CACHE, O_HELP };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"arch", required_argument, NULL, 'a'},
        {"check", no_argument, NULL, O_CHECK},    {"nvcc", required_argument, NULL, O_NVCC},
        {"cache-dir", required_argument, NULL, O_CACHE},
        {"quiet", no_argument, NULL, 'q'},        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, O_HELP},      {NULL, 0, NULL, 0},
    };
    struct cbc_stamp_opts o = {0};
    bool check = false;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(split, argv, ":o:a:qv", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o.output = optarg; break;
        case 'a': o.arch = optarg; break;
        case O_CHECK: check = true; break;
        case O_NVCC: o.nvcc = optarg; break;
        case O_CACHE: o.cache_dir = optarg; break;
        case 'q': t.verbosity = -1; break;
        case 'v': t.verbosity = 1; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    if (optind < split)
        return tool_usage_error(&t, usage, "unexpected '%s' (nvcc arguments go after '--')",
                                argv[optind]);
    if (!check && !o.output)
        return tool_usage_error(&t, usage, "no stamp file given: use -o FILE");
    if (check && o.output)
        return tool_usage_error(&t, usage, "--check writes nothing; drop -o");
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
