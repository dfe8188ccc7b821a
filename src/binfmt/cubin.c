/* cubin.c: the cubin ELF reader.
 *
 * Reads the ELF64 header and section table of an EM_CUDA (190) file and
 * derives the SM, the virtual arch, the 'a'/'f' variant, -G or -lineinfo,
 * the functions and, for relocatable (-rdc) cubins, the symbols only a
 * device link can resolve, per docs/formats.md:
 *   V1 (EI_ABIVERSION 7):  SM = e_flags & 0xff, virtual = (e_flags >> 16) & 0xff,
 *                          'a' = e_flags & 0x800
 *   V2 (EI_ABIVERSION 8):  SM = (e_flags >> 8) & 0xff, virtual from
 *                          .note.nv.cuinfo, 'a' = .nv.compat attribute 9 == 1
 *   both: 'f' (and 'a' as a fallback) from the -arch in .note.nv.tkinfo.
 * Only those two ABI versions are read: any other EI_ABIVERSION is refused
 * (CBC_E_UNSUPPORTED), never decoded as the nearer one.
 * Invariant: no byte outside [data, data+len) is read; every table entry is
 * bounds-checked before it is decoded.
 */
#include "binfmt_int.h"

#include <stdlib.h>

#define EM_CUDA 190
#define ET_REL 1
#define SHT_SYMTAB 2
#define SHT_NOTE 7
#define SHT_NOBITS 8
/* CUDA section types that, like SHT_NOBITS, occupy no space in the file:
 * their offset and size describe memory, not bytes (docs/formats.md).
 * Measured in nvcc 13 -rdc output: .nv.shared.<kernel> (0x7000000a) runs
 * past the end of the file; .nv.global (0x70000007) holds uninitialised
 * device variables where a non-rdc cubin has SHT_NOBITS. */
#define SHT_CUDA_GLOBAL 0x70000007u
#define SHT_CUDA_SHARED 0x7000000au
#define SHT_CUDA_COMPAT 0x70000086u
#define SHN_UNDEF 0
#define STB_WEAK 2
#define NOTE_CUINFO 1000
#define NOTE_TKINFO 2000
#define STO_CUDA_ENTRY 0x10
#define V1_FLAG_ARCH_A 0x800u

bool cbc_elf_section_in_file(uint32_t type)
{
    return type != SHT_NOBITS && type != SHT_CUDA_GLOBAL && type != SHT_CUDA_SHARED;
}

enum cbc_status cbc_elf_sections(const uint8_t *data, size_t len, const char *name,
                                 struct elf_sections *s, struct cbc_err *err)
{
    if (len < 64)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 0,
                           "file is %zu bytes; an ELF64 header needs 64 (truncated?)", len);
    if (memcmp(data, "\177ELF", 4) != 0)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 0, "expected the ELF magic 7f 45 4c 46");
    if (data[4] != 2)
        return cbc_fmt_err(err, CBC_E_UNSUPPORTED, name, 4,
                           "EI_CLASS is %u; only 64-bit ELF (2) is supported", data[4]);
    if (data[5] != 1)
        return cbc_fmt_err(err, CBC_E_UNSUPPORTED, name, 5,
                           "EI_DATA is %u; only little-endian ELF (1) is supported", data[5]);
    s->shoff = cbc_rd64(data + 40);
    uint16_t shentsize = cbc_rd16(data + 58);
    s->shnum = cbc_rd16(data + 60);
    s->shstrndx = cbc_rd16(data + 62);
    if (s->shoff == 0) {
        s->shnum = 0;
        memset(&s->strtab, 0, sizeof s->strtab);
        return CBC_OK;
    }
    if (shentsize != 64)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 58, "e_shentsize is %u; expected 64",
                           shentsize);
    if (!cbc_in_bounds(len, s->shoff, 64))
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 40,
                           "section header table at %#llx lies past the end of the file (%zu bytes)",
                           (unsigned long long)s->shoff, len);
    struct shdr first = read_shdr(data + s->shoff);
    if (s->shnum == 0) /* extended numbering: the count lives in section 0 */
        s->shnum = first.size > UINT32_MAX ? UINT32_MAX : (uint32_t)first.size;
    if (s->shstrndx == 0xffff)
        s->shstrndx = first.link;
    if ((uint64_t)s->shnum > (len - s->shoff) / 64)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 60,
                           "section header table (%u entries of 64 bytes at %#llx) runs past the "
                           "end of the file (%zu bytes)",
                           s->shnum, (unsigned long long)s->shoff, len);
    memset(&s->strtab, 0, sizeof s->strtab);
    if (s->shstrndx != 0) {
        if (s->shstrndx >= s->shnum)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, 62,
                               "e_shstrndx %u is not a section (there are %u)", s->shstrndx, s->shnum);
        s->strtab = read_shdr(data + s->shoff + 64ull * s->shstrndx);
        if (!cbc_in_bounds(len, s->strtab.offset, s->strtab.size))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, s->shoff + 64ull * s->shstrndx + 24,
                               "section name table (%llu bytes at %#llx) runs past the end of the "
                               "file (%zu bytes)",
                               (unsigned long long)s->strtab.size,
                               (unsigned long long)s->strtab.offset, len);
    }
    return CBC_OK;
}

const char *cbc_elf_section_name(const uint8_t *data, size_t len, const struct elf_sections *s,
                                 uint32_t name_off)
{
    const char *n = cbc_str_at(data, len, s->strtab.offset, s->strtab.size, name_off);
    return n ? n : "";
}

static uint8_t variant_from_cmdline(const char *cmd, size_t n, bool *found)
{
    /* "-arch sm_100f -m 64 ": find "sm_" followed by digits and a suffix */
    for (size_t i = 0; i + 3 < n; i++) {
        if (memcmp(cmd + i, "sm_", 3) != 0)
            continue;
        size_t j = i + 3;
        while (j < n && cmd[j] >= '0' && cmd[j] <= '9')
            j++;
        if (j == i + 3)
            continue;
        *found = true;
        return j < n ? cbc_variant_of(cmd[j]) : CBC_VARIANT_NONE;
    }
    return CBC_VARIANT_NONE;
}

struct notes_out {
    unsigned cuinfo_virtual;
    const char *cmdline;
    size_t cmdline_len;
};

static enum cbc_status parse_notes(const uint8_t *data, size_t len, const char *name,
                                   const struct shdr *sh, struct notes_out *o, struct cbc_err *err)
{
    uint64_t p = sh->offset, end = sh->offset + sh->size;
    while (p < end) {
        if (end - p < 12)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, p,
                               "note header needs 12 bytes, %llu left in the section",
                               (unsigned long long)(end - p));
        uint32_t namesz = cbc_rd32(data + p), descsz = cbc_rd32(data + p + 4),
                 type = cbc_rd32(data + p + 8);
        uint64_t name_off = p + 12;
        uint64_t desc_off = name_off + (((uint64_t)namesz + 3) & ~3ull);
        uint64_t next = desc_off + (((uint64_t)descsz + 3) & ~3ull);
        if (desc_off > end || next > end + 3 || !cbc_in_bounds(end, desc_off, descsz))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, p,
                               "note (name %u bytes, desc %u bytes) runs past its section", namesz,
                               descsz);
        const uint8_t *desc = data + desc_off;
        if (type == NOTE_CUINFO && descsz >= 4) {
            o->cuinfo_virtual = cbc_rd16(desc + 2);
        } else if (type == NOTE_TKINFO && descsz >= 24) {
            uint32_t off_cmd = cbc_rd32(desc + 20);
            uint64_t strtab = desc_off + 24, strsz = descsz - 24;
            const char *cmd = cbc_str_at(data, len, strtab, strsz, off_cmd);
            if (cmd) {
                o->cmdline = cmd;
                o->cmdline_len = strlen(cmd);
            }
        }
        p = next;
    }
    return CBC_OK;
}

static int compat_attr9(const uint8_t *data, const struct shdr *sh)
{
    int result = -1;
    uint64_t p = sh->offset, end = sh->offset + sh->size;
    while (p < end && end - p >= 4) {
        uint8_t fmt = data[p], attr = data[p + 1];
        if (fmt == 4) {
            uint64_t n = cbc_rd16(data + p + 2);
            if (n > end - p - 4)
                break;
            p += 4 + n;
            continue;
        }
        if (attr == 9 && fmt == 2)
            result = cbc_rd16(data + p + 2);
        p += 4;
    }
    return result;
}

static enum cbc_status parse(const uint8_t *data, size_t len, const char *name, bool want_funcs,
                             struct cbc_cubin_info *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct elf_sections s;
    enum cbc_status st = cbc_elf_sections(data, len, name, &s, err);
    if (st != CBC_OK)
        return st;
    uint16_t machine = cbc_rd16(data + 18);
    if (machine != EM_CUDA)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 18,
                           "e_machine is %u; a cubin has EM_CUDA (190)", machine);
    struct cbc_cubin_info info = {0};
    info.osabi = data[7];
    info.abi_version = data[8];
    info.e_type = cbc_rd16(data + 16);
    info.e_flags = cbc_rd32(data + 48);
    /* the SM's byte in e_flags depends on the ABI: another value would be
     * decoded as one of the two by guess, and the driver may read it as
     * another SM */
    if (info.abi_version != 7 && info.abi_version != 8)
        return cbc_fmt_err(err, CBC_E_UNSUPPORTED, name, 8,
                           "EI_ABIVERSION %u: nvcc writes 7 (ABI V1, CUDA 12 and older) or 8 "
                           "(ABI V2, CUDA 13, and CUDA 12.8 for sm_100 and newer)",
                           info.abi_version);
    bool v2 = info.abi_version == 8;
    if (v2) {
        /* the e_flags bits above the SM differ for -G and -lineinfo by arch
         * (0x0f / 0x09 on sm_90, 0x10 / 0x09 on sm_120): the sections tell */
        info.sm = (info.e_flags >> 8) & 0xff;
    } else {
        info.sm = info.e_flags & 0xff;
        info.virtual_arch = (info.e_flags >> 16) & 0xff;
        if (info.e_flags & V1_FLAG_ARCH_A)
            info.variant = CBC_VARIANT_A;
    }
    if (info.sm < 10)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 48,
                           "e_flags %#x encode SM %u, which is not a GPU architecture",
                           info.e_flags, info.sm);

    struct notes_out notes = {0};
    int attr9 = -1;
    size_t cap = 0;
    for (uint32_t i = 1; i < s.shnum; i++) {
        uint64_t hoff = s.shoff + 64ull * i;
        struct shdr sh = read_shdr(data + hoff);
        if (cbc_elf_section_in_file(sh.type) && !cbc_in_bounds(len, sh.offset, sh.size)) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, hoff + 24,
                             "section %u (%s) claims %llu bytes at %#llx, past the end of the file "
                             "(%zu bytes)",
                             i, cbc_elf_section_name(data, len, &s, sh.name),
                             (unsigned long long)sh.size, (unsigned long long)sh.offset, len);
            goto fail;
        }
        const char *sname = cbc_elf_section_name(data, len, &s, sh.name);
        /* every cubin has .debug_frame; -G adds DWARF info, -lineinfo only
         * the line table */
        if (strcmp(sname, ".debug_info") == 0)
            info.debug = true;
        else if (strcmp(sname, ".debug_line") == 0)
            info.lineinfo = true;
        if (sh.type == SHT_NOTE) {
            st = parse_notes(data, len, name, &sh, &notes, err);
            if (st != CBC_OK)
                goto fail;
        } else if (sh.type == SHT_CUDA_COMPAT) {
            attr9 = compat_attr9(data, &sh);
        } else if (sh.type == SHT_SYMTAB && want_funcs) {
            if (sh.entsize != 24 || sh.link == 0 || sh.link >= s.shnum) {
                st = cbc_fmt_err(err, CBC_E_FORMAT, name, hoff,
                                 "symbol table %u has entry size %llu and string table %u; expected "
                                 "24 and a valid section",
                                 i, (unsigned long long)sh.entsize, sh.link);
                goto fail;
            }
            struct shdr strs = read_shdr(data + s.shoff + 64ull * sh.link);
            for (uint64_t k = 0; k + 24 <= sh.size; k += 24) {
                const uint8_t *sym = data + sh.offset + k;
                uint8_t stype = sym[4] & 0xf, bind = sym[4] >> 4, other = sym[5];
                uint16_t shndx = cbc_rd16(sym + 6);
                if (shndx == SHN_UNDEF && bind != STB_WEAK && bind != 0 /* STB_LOCAL */) {
                    /* a reference only a device link can resolve */
                    const char *uname = cbc_str_at(data, len, strs.offset, strs.size, cbc_rd32(sym));
                    if (uname && *uname) {
                        if (info.n_undefined < CBC_ARRAY_LEN(info.undefined))
                            info.undefined[info.n_undefined] = uname;
                        info.n_undefined++;
                    }
                    continue;
                }
                if (stype != 2 /* STT_FUNC */ || shndx == 0 || shndx >= s.shnum)
                    continue;
                struct shdr target = read_shdr(data + s.shoff + 64ull * shndx);
                if (strncmp(cbc_elf_section_name(data, len, &s, target.name), ".text.", 6) != 0)
                    continue;
                const char *fname = cbc_str_at(data, len, strs.offset, strs.size, cbc_rd32(sym));
                if (!fname) {
                    st = cbc_fmt_err(err, CBC_E_FORMAT, name, sh.offset + k,
                                     "symbol name offset %u lies outside its string table",
                                     cbc_rd32(sym));
                    goto fail;
                }
                if (!cbc_grow(&info.funcs, info.n_funcs, &cap, sizeof *info.funcs, 8)) {
                    st = cbc_err_oom(err);
                    goto fail;
                }
                info.funcs[info.n_funcs++] =
                    (struct cbc_cubin_func){fname, (other & STO_CUDA_ENTRY) != 0};
            }
        }
    }
    if (info.debug)
        info.lineinfo = false; /* -G: more than line info */
    if (v2 && notes.cuinfo_virtual)
        info.virtual_arch = notes.cuinfo_virtual;
    info.tool_cmdline = notes.cmdline;
    info.tool_cmdline_len = notes.cmdline_len;
    if (v2 && attr9 == 1)
        info.variant = CBC_VARIANT_A;
    if (notes.cmdline) {
        bool found = false;
        uint8_t v = variant_from_cmdline(notes.cmdline, notes.cmdline_len, &found);
        if (found && v != CBC_VARIANT_NONE)
            info.variant = v;
    }
    *out = info;
    return CBC_OK;
fail:
    free(info.funcs);
    return st;
}

enum cbc_status cbc_cubin_parse(const uint8_t *data, size_t len, const char *name,
                                struct cbc_cubin_info *out, struct cbc_err *err)
{
    return parse(data, len, name, true, out, err);
}

enum cbc_status cbc_cubin_parse_target(const uint8_t *data, size_t len, const char *name,
                                       struct cbc_cubin_info *out, struct cbc_err *err)
{
    return parse(data, len, name, false, out, err);
}

void cbc_cubin_info_release(struct cbc_cubin_info *info)
{
    free(info->funcs);
    memset(info, 0, sizeof *info);
}

struct cbc_target cbc_cubin_target(const struct cbc_cubin_info *info)
{
    return (struct cbc_target){CBC_KIND_SASS, info->variant, (uint16_t)info->sm};
}
