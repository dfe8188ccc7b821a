/* cmds.h: the subcommands of cubincache, one file each (cmd_<name>.c),
 * dispatched from the table in main.c. Each takes its own argv (argv[0] is
 * the subcommand) and returns the exit code.
 */
#ifndef CBC_CMDS_H
#define CBC_CMDS_H

#include "opts.h"
#include "program.h"

/* "12.8" or "12080" -> 12080 (cuDriverGetVersion form); 0 when malformed. */
int parse_cuda_version(const char *s);
/* --cuda-driver X.Y (check, select): the highest PTX ISA that driver takes,
 * 0 for a driver newer than every release cubincache knows (it takes all
 * their PTX). False for a malformed version or one older than CUDA 11.0. */
bool tool_parse_driver(const char *s, unsigned *isa);

/* gate.c, for check and select: a C++ name demangled (malloc'd), or NULL
 * when it is not one or no demangler is at hand; the --kernels file read
 * (names, one per line, '#' comments): an exit code, EXIT_OK when read. */
char *gate_demangle(const char *mangled);
int gate_read_kernels(const struct tool *t, const char *path, char ***out, size_t *n);
void gate_free_kernels(char **v, size_t n);
/* The deploy gate's options that check and select share: where a binary's
 * libraries are searched, which rules judge it, the driver assumed. */
struct gate {
    const char *lib_dir_v[32], *strict_v[32];
    struct tool_list lib_dirs, strict_libs; /* -L, --strict-lib */
    const char *kernels_file;               /* --kernels */
    bool no_libs, prefer_binary;
    unsigned driver_isa;                    /* --cuda-driver; 0: any */
    enum cbc_judge_rule named_rule, lib_rule;
};
void gate_init(struct gate *g); /* no libraries, per-module and dispatch */
extern const struct tool_choice gate_rules[];
bool gate_parse_driver(const char *value, void *isa);
#define GATE_OPTS(g)                                                                            \
    OPT_FN(0, "cuda-driver", "X.Y", &(g)->driver_isa, gate_parse_driver,                      \
           "expected a CUDA version such as 12.8 (11.0 or later)",                             \
           "judge PTX against a driver of this CUDA version (default: any)"),                  \
    OPT_FLAG(0, "prefer-binary", &(g)->prefer_binary,                                          \
             "assume CU_PREFER_BINARY instead of the driver's default"),                       \
    OPT_LIST('L', "library-path", "DIR", &(g)->lib_dirs,                                       \
             "binaries: look here first for the shared libraries they need"),                  \
    OPT_FLAG(0, "no-libs", &(g)->no_libs,                                                      \
             "binaries: judge the file alone, not the libraries it needs"),                    \
    OPT_STR(0, "kernels", "FILE", &(g)->kernels_file,                                          \
            "binaries: judge only these kernels (one per line), the ones the\n"                \
            "program launches; every other module may lack code for the GPU"),                 \
    OPT_ENUM(0, "rule", "RULE", &(g)->named_rule, gate_rules,                                  \
             "the files named: per-module (default: every module with kernels\n"               \
             "needs code for the GPU) or dispatch (at least one has it)"),                     \
    OPT_ENUM(0, "libs", "RULE", &(g)->lib_rule, gate_rules,                                    \
             "the libraries they need: dispatch (default; a library that picks\n"              \
             "its kernels by GPU) or per-module"),                                             \
    OPT_LIST(0, "strict-lib", "NAME", &(g)->strict_libs,                                       \
             "judge this library per module (its DT_NEEDED name or file name)")

int cmd_build(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_select(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_devices(int argc, char **argv);
int cmd_stamp(int argc, char **argv);
int cmd_lint(int argc, char **argv);
/* -s/--show-stats, -z/--zero-stats, -p/--show-config, -V/--version as
 * argv[0] (ccache's spellings); -1 when argv[0] is none of them. */
int cmd_ccache_option(int argc, char **argv);
/* argv[0] is nvcc itself: "nvcc" or a path (the compiler launcher) */
int cmd_nvcc(int argc, char **argv);

#endif
