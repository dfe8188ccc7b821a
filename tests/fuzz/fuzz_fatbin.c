/* fuzz_fatbin.c: libFuzzer target for fatbin containers: headers, and the
 * LZ4 / zstd payloads of every entry, re-parsed as cubin or PTX, read
 * whole and by their first bytes through a reused buffer; and the search
 * for containers among other data (what a library loads itself). */
#include <cubincache/binfmt.h>

#include "elfextra.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t at[16], resume = 0;
    while (resume < size)
        if (cbc_fatbin_scan(data, size, 0, at, 16, &resume) == 0)
            break;
    struct cbc_fatbin fb;
    if (cbc_fatbin_parse(data, size, 0, "fuzz", &fb, NULL) != CBC_OK)
        return 0;
    struct cbc_inflate z = {0};
    for (size_t i = 0; i < fb.n; i++) {
        /* keep decompression within what a fuzzer can afford */
        if (fb.entries[i].uncompressed_size > (64u << 20))
            continue;
        const uint8_t *v;
        size_t vl;
        unsigned sm;
        if (cbc_fatbin_entry_prefix(&fb.entries[i], "fuzz", 64, &z, &v, &vl, NULL) == CBC_OK)
            cbc_cubin_header_sm(v, vl, "fuzz", &sm, NULL);
        cbc_fatbin_entry_view(&fb.entries[i], "fuzz", &z, &v, &vl, NULL);
        uint8_t *p;
        size_t len;
        if (cbc_fatbin_entry_payload(&fb.entries[i], "fuzz", &p, &len, NULL) != CBC_OK)
            continue;
        if (fb.entries[i].kind == CBC_FATBIN_ELF) {
            struct cbc_cubin_info ci;
            if (cbc_cubin_parse(p, len, "fuzz", &ci, NULL) == CBC_OK)
                cbc_cubin_info_release(&ci);
        } else if (fb.entries[i].kind == CBC_FATBIN_PTX) {
            struct cbc_ptx_info pi;
            cbc_ptx_parse(p, len, "fuzz", &pi, NULL);
        }
        free(p);
    }
    cbc_fatbin_release(&fb);
    cbc_inflate_release(&z);
    return 0;
}
