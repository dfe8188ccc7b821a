/* fuzz_cubin.c: libFuzzer target for the cubin ELF reader and the label
 * check built on it. Any input must parse or fail cleanly. */
#include <cubincache/binfmt.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cbc_cubin_info ci;
    if (cbc_cubin_parse(data, size, "fuzz", &ci, NULL) == CBC_OK) {
        struct cbc_target t = cbc_cubin_target(&ci);
        for (size_t i = 0; i < ci.n_funcs; i++)
            (void)ci.funcs[i].name[0];
        if (ci.tool_cmdline)
            (void)ci.tool_cmdline[ci.tool_cmdline_len];
        cbc_cubin_info_release(&ci);
        cbc_binfmt_verify_target(data, size, &t, "fuzz", NULL, NULL);
    }
    return 0;
}
