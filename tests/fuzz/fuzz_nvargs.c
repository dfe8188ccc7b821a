/* fuzz_nvargs.c: libFuzzer target for the launcher's nvcc command-line
 * parser: the input split at NUL bytes is argv. Parsing never fails; a
 * cacheable command must name its input among the arguments; the
 * relative-path judgement reads every argument without running past one. */
#include "nvargs.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[128];
    size_t argc = 0;
    for (char *p = buf; argc < 128 && p <= buf + size; p += strlen(p) + 1)
        argv[argc++] = p;
    struct cbc_nv_args a;
    cbc_nv_parse(argv, argc, &a);
    if (!a.why[0] && (a.n_inputs == 0 || a.input_idx[0] < 0 || (size_t)a.input_idx[0] >= argc))
        abort();
    for (size_t i = 0; i < argc; i++)
        cbc_nv_is_output_arg(&a, i);
    cbc_nv_names_relative(argv, argc, NULL, NULL);
    cbc_nv_release(&a);
    free(buf);
    return 0;
}
