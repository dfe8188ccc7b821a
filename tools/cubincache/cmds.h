/* cmds.h: the subcommands of cubincache, one file each (cmd_<name>.c),
 * dispatched from the table in main.c. Each takes its own argv (argv[0] is
 * the subcommand) and returns the exit code.
 */
#ifndef CBC_CMDS_H
#define CBC_CMDS_H

#include "tool.h"

/* "12.8" or "12080" -> 12080 (cuDriverGetVersion form); 0 when malformed. */
int parse_cuda_version(const char *s);
/* --cuda-driver X.Y (check, select): the highest PTX ISA that driver takes,
 * 0 for a driver newer than every release cubincache knows (it takes all
 * their PTX). False for a malformed version or one older than CUDA 11.0. */
bool tool_parse_driver(const char *s, unsigned *isa);

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
