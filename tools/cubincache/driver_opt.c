/* driver_opt.c: --cuda-driver, the driver a deploy check assumes (check,
 * select): a CUDA version in either spelling, mapped to the newest PTX ISA
 * that driver JIT-compiles (cubincache/select.h).
 */
#include "cmds.h"

#include <cubincache/select.h>

#include <errno.h>
#include <stdlib.h>

int parse_cuda_version(const char *s)
{
    char *end;
    errno = 0;
    long major = strtol(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == '\0' && major >= 1000 && major <= 999999)
        return (int)major;
    if (*end != '.' || major < 1 || major > 99 || end[1] < '0' || end[1] > '9')
        return 0;
    long minor = strtol(end + 1, &end, 10);
    if (*end != '\0' || minor < 0 || minor > 9)
        return 0;
    return (int)(major * 1000 + minor * 10);
}

bool tool_parse_driver(const char *s, unsigned *isa)
{
    int v = parse_cuda_version(s);
    if (v < 11000)
        return false;
    *isa = cbc_ptx_isa_for_driver(v);
    return true;
}
