/* main.c: the cubincache command: one table of subcommands, each in its own
 * cmd_<name>.c (git's builtin layout). Usage strings live with the commands.
 */
#include "cmds.h"
#include "jobserver.h"

#include <stdio.h>
#include <string.h>

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"build", cmd_build, "compile one .cu for each SM target, through the cache"},
    {"cache", cmd_cache, "show, trim, clean or verify the cache"},
    {"config", cmd_config, "every setting, its value and where it came from"},
    {"inspect", cmd_inspect, "what a cubin, fatbin, PTX file or host binary holds"},
    {"check", cmd_check, "before deploy: is every image current, labelled right, intact; will it run"},
    {"select", cmd_select, "the image a GPU of compute capability X.Y would load, and why"},
    {"embed", cmd_embed, "a bundle as C source to compile into the program"},
    {"stamp", cmd_stamp, "a file that changes only when the kernels may build differently (ninja restat)"},
    {"devices", cmd_devices, "the GPUs here and, with a bundle, what each would load"},
    {"lint", cmd_lint, "build scripts that read the environment without declaring it (--fix)"},
};
/* not in the table: `cubincache nvcc ARGS...` / `cubincache /path/to/nvcc ARGS...`,
 * the compiler launcher (cmd_nvcc.c), which takes nvcc's arguments as they are */

static void help(FILE *f)
{
    fprintf(f, "usage: cubincache COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < CBC_ARRAY_LEN(commands); i++)
        fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "  nvcc ARGS  (or /path/to/nvcc ARGS) the compiler launcher: nvcc through the "
               "cache\n");
    fprintf(f, "\noptions, as ccache spells them:\n"
               "  -s, --show-stats    the cache's statistics (cache stats)\n"
               "  -z, --zero-stats    set the statistics to 0\n"
               "  -p, --show-config   every setting, its value and where it came from (config)\n"
               "  -V, --version       the version\n");
    fprintf(f, "\n'cubincache COMMAND --help' describes a command; exit codes are in "
               "docs/exit-codes.md\n");
}

int main(int argc, char **argv)
{
    cbc_jobserver_early(); /* before anything is opened: make's descriptors, if any */
    if (argc < 2) {
        help(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(stdout);
        return EXIT_OK;
    }
    if (argv[1][0] == '-') { /* as ccache spells them: -s, -z, -p, -V */
        int rc = cmd_ccache_option(argc - 1, argv + 1);
        if (rc >= 0)
            return rc;
        fprintf(stderr, "cubincache: error: unknown option '%s'\n", argv[1]);
        help(stderr);
        return EXIT_USAGE;
    }
    for (size_t i = 0; i < CBC_ARRAY_LEN(commands); i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    /* the compiler launcher: cubincache nvcc ..., cubincache /path/to/nvcc ... */
    if (!strncmp(cbc_path_base(argv[1]), "nvcc", 4) &&
        (!strcmp(argv[1], "nvcc") || strchr(argv[1], '/')))
        return cmd_nvcc(argc - 1, argv + 1);
    fprintf(stderr, "cubincache: error: unknown command '%s'\n", argv[1]);
    help(stderr);
    return EXIT_USAGE;
}
