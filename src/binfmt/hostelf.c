/* hostelf.c: finds the CUDA sections of a host ELF (executable, shared
 * library, relocatable object): .nv_fatbin, the containers the CUDA runtime
 * registers at start-up, __nv_relfatbin, the -rdc fatbins nvlink reads, and
 * .cbc_bundle, the bundles `cubincache embed` compiled in.
 *
 * Only the section table is read; every section found is checked to lie
 * inside the file. A host ELF without them is valid and simply carries no GPU code.
 */
#include "binfmt_int.h"

#define SHT_NOBITS 8

enum cbc_status cbc_host_elf_parse(const uint8_t *data, size_t len, const char *name,
                                   struct cbc_host_elf *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct elf_sections s;
    enum cbc_status st = cbc_elf_sections(data, len, name, &s, err);
    if (st != CBC_OK)
        return st;
    out->e_type = cbc_rd16(data + 16);
    out->e_machine = cbc_rd16(data + 18);
    for (uint32_t i = 1; i < s.shnum; i++) {
        uint64_t hoff = s.shoff + 64ull * i;
        struct shdr sh = read_shdr(data + hoff);
        const char *sname = cbc_elf_section_name(data, len, &s, sh.name);
        struct cbc_host_section *dst = NULL;
        if (strcmp(sname, ".nv_fatbin") == 0)
            dst = &out->nv_fatbin;
        else if (strcmp(sname, "__nv_relfatbin") == 0)
            dst = &out->nv_relfatbin;
        else if (strcmp(sname, CBC_EMBED_SECTION) == 0)
            dst = &out->cbc_bundle;
        if (!dst)
            continue;
        if (sh.type == SHT_NOBITS || !cbc_in_bounds(len, sh.offset, sh.size))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, hoff + 24,
                               "section %s claims %llu bytes at %#llx, past the end of the file "
                               "(%zu bytes)",
                               sname, (unsigned long long)sh.size, (unsigned long long)sh.offset,
                               len);
        dst->present = true;
        dst->offset = sh.offset;
        dst->size = sh.size;
    }
    return CBC_OK;
}
