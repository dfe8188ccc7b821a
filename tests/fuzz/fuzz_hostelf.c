/* fuzz_hostelf.c: libFuzzer target for whole files as `inspect` and `check`
 * read them: type detection, host ELF sections, the fatbins inside, PTX. */
#include <cubincache/binfmt.h>
#include <cubincache/select.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cbc_host_elf he;
    cbc_host_elf_parse(data, size, "fuzz", &he, NULL);
    struct cbc_image_list l;
    if (cbc_binfmt_images(data, size, "fuzz", &l, NULL) != CBC_OK)
        return 0;
    struct cbc_select_query q = {90, 90, false};
    struct cbc_select_result r;
    cbc_select(l.v, l.n, &q, &r);
    cbc_image_list_release(&l);
    return 0;
}
