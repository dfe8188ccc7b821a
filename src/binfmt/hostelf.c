/* hostelf.c: finds the CUDA sections of a host ELF (executable, shared
 * library, relocatable object): .nv_fatbin, the containers the CUDA runtime
 * registers at start-up, __nv_relfatbin, the -rdc fatbins nvlink reads, and
 * .cbc_bundle, the bundles `cubincache embed` compiled in.
 *
 * Only the section table is read; every section found is checked to lie
 * inside the file. A host ELF without them is valid and simply carries no GPU code.
 */
#include "binfmt_int.h"
#include "elfextra.h"


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
        if (!cbc_elf_section_in_file(sh.type) || !cbc_in_bounds(len, sh.offset, sh.size))
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

#define SHT_DYNAMIC 6
#define DT_NULL 0
#define DT_NEEDED 1
#define DT_RPATH 15
#define DT_RUNPATH 29

enum cbc_status cbc_elf_dynamic(const uint8_t *data, size_t len, const char *name,
                                struct cbc_elf_dynamic *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct elf_sections s;
    enum cbc_status st = cbc_elf_sections(data, len, name, &s, err);
    if (st != CBC_OK)
        return st;
    out->machine = cbc_rd16(data + 18);
    for (uint32_t i = 1; i < s.shnum; i++) {
        struct shdr sh = read_shdr(data + s.shoff + 64ull * i);
        if (sh.type != SHT_DYNAMIC)
            continue;
        if (!cbc_in_bounds(len, sh.offset, sh.size) || sh.link == 0 || sh.link >= s.shnum)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, s.shoff + 64ull * i,
                               "the dynamic section (%llu bytes at %#llx, strings in section %u) "
                               "is not inside the file", (unsigned long long)sh.size,
                               (unsigned long long)sh.offset, sh.link);
        struct shdr strs = read_shdr(data + s.shoff + 64ull * sh.link);
        for (uint64_t k = 0; k + 16 <= sh.size; k += 16) {
            const uint8_t *d = data + sh.offset + k;
            uint64_t tag = cbc_rd64(d), val = cbc_rd64(d + 8);
            if (tag == DT_NULL)
                break;
            if (tag != DT_NEEDED && tag != DT_RPATH && tag != DT_RUNPATH)
                continue;
            const char *str = cbc_str_at(data, len, strs.offset, strs.size, val);
            if (!str)
                return cbc_fmt_err(err, CBC_E_FORMAT, name, sh.offset + k,
                                   "dynamic entry %llu names string %llu, outside its table",
                                   (unsigned long long)tag, (unsigned long long)val);
            if (tag == DT_NEEDED && out->n_needed < CBC_ELF_NEEDED_MAX)
                out->needed[out->n_needed++] = str;
            else if (tag == DT_RPATH)
                out->rpath = str;
            else if (tag == DT_RUNPATH)
                out->runpath = str;
        }
        break;
    }
    return CBC_OK;
}

#define SHT_PROGBITS 1
#define SHF_ALLOC 0x2
#define SHF_EXECINSTR 0x4

enum cbc_status cbc_elf_data_sections(const uint8_t *data, size_t len, const char *name,
                                      struct cbc_elf_data *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct elf_sections s;
    enum cbc_status st = cbc_elf_sections(data, len, name, &s, err);
    if (st != CBC_OK)
        return st;
    for (uint32_t i = 1; i < s.shnum && out->n < CBC_ELF_DATA_MAX; i++) {
        const uint8_t *h = data + s.shoff + 64ull * i;
        struct shdr sh = read_shdr(h);
        uint64_t flags = cbc_rd64(h + 8);
        if (sh.type != SHT_PROGBITS || !(flags & SHF_ALLOC) || (flags & SHF_EXECINSTR) ||
            sh.size < 16)
            continue;
        const char *sname = cbc_elf_section_name(data, len, &s, sh.name);
        if (!strcmp(sname, ".nv_fatbin") || !strcmp(sname, "__nv_relfatbin") ||
            !strcmp(sname, ".nvFatBinSegment") || !strcmp(sname, CBC_EMBED_SECTION))
            continue;
        if (!cbc_in_bounds(len, sh.offset, sh.size))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, s.shoff + 64ull * i + 24,
                               "section %s claims %llu bytes at %#llx, past the end of the file "
                               "(%zu bytes)", sname, (unsigned long long)sh.size,
                               (unsigned long long)sh.offset, len);
        cbc_fmt(out->v[out->n].name, sizeof out->v[out->n].name, "%s", sname);
        out->v[out->n].offset = sh.offset;
        out->v[out->n].size = sh.size;
        out->n++;
    }
    return CBC_OK;
}
