/* binfmt_int.h: helpers shared by the binary readers: the one error format
 * ("'<file>': offset 0x1f0: <what was expected>", or "offset 0x1f0: ..."
 * for bytes that are no file, which the caller's message names) and a
 * bounds-checked string fetch. Internal.
 */
#ifndef CBC_BINFMT_INT_H
#define CBC_BINFMT_INT_H

#include "common.h"
#include <cubincache/binfmt.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

CBC_PRINTF(5, 6)
static inline enum cbc_status cbc_fmt_err(struct cbc_err *err, enum cbc_status st, const char *name,
                                          uint64_t offset, const char *fmt, ...)
{
    if (!err)
        return st;
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!name)
        return cbc_err_set(err, st, "offset %#llx: %s", (unsigned long long)offset, what);
    return cbc_err_set(err, st, "'%s': offset %#llx: %s", name, (unsigned long long)offset, what);
}

/* The NUL-terminated string at [base+idx] inside [base, base+size) of a
 * buffer of `len` bytes, or NULL when it is out of bounds or unterminated. */
static inline const char *cbc_str_at(const uint8_t *data, size_t len, uint64_t base, uint64_t size,
                                     uint64_t idx)
{
    if (!cbc_in_bounds(len, base, size) || idx >= size)
        return NULL;
    const uint8_t *s = data + base + idx;
    if (!memchr(s, 0, (size_t)(size - idx)))
        return NULL;
    return (const char *)s;
}

/* ---- ELF64 section table, shared by the cubin and host ELF readers ---- */
struct shdr {
    uint32_t name, type;
    uint64_t offset, size;
    uint32_t link;
    uint64_t entsize;
};

/* Decodes a 64-byte section header; the caller has bounds-checked p. */
static inline struct shdr read_shdr(const uint8_t *p)
{
    return (struct shdr){cbc_rd32(p), cbc_rd32(p + 4), cbc_rd64(p + 24), cbc_rd64(p + 32),
                         cbc_rd32(p + 40), cbc_rd64(p + 56)};
}

/* A validated section table: every header lies inside the file, and so does
 * the section name table. */
struct elf_sections {
    uint64_t shoff;
    uint32_t shnum, shstrndx;
    struct shdr strtab;
};

/* Whether a section of this type has its bytes in the file: not for
 * SHT_NOBITS, nor for the CUDA types that behave like it (cubin.c). */
bool cbc_elf_section_in_file(uint32_t type);

/* Validates the ELF64 little-endian header and section table. */
enum cbc_status cbc_elf_sections(const uint8_t *data, size_t len, const char *name,
                                 struct elf_sections *s, struct cbc_err *err);
/* A section's name, or "" when its offset is out of bounds. */
const char *cbc_elf_section_name(const uint8_t *data, size_t len, const struct elf_sections *s,
                                 uint32_t name_off);

#endif
