/* elfextra.h: what the program model needs beyond the public readers:
 * static library (ar) members, and a host ELF's dynamic section (the
 * shared libraries it needs and where it says to look for them). Bounds-
 * checked like every reader; results point into the input.
 *
 * Internal and unstable.
 */
#ifndef CBC_ELFEXTRA_H
#define CBC_ELFEXTRA_H

#include "common.h"

struct cbc_ar_member {
    char *name;          /* malloc'd */
    uint64_t offset, size;
    const uint8_t *data; /* inside the input */
};
struct cbc_ar {
    struct cbc_ar_member *v;
    size_t n;
};
/* The members of an ar archive (its symbol and name tables left out). */
enum cbc_status cbc_ar_parse(const uint8_t *data, size_t len, const char *name, struct cbc_ar *out,
                             struct cbc_err *err);
void cbc_ar_release(struct cbc_ar *a);

#define CBC_ELF_NEEDED_MAX 128
struct cbc_elf_dynamic {
    const char *needed[CBC_ELF_NEEDED_MAX]; /* DT_NEEDED, in order */
    size_t n_needed;
    const char *rpath;   /* DT_RPATH or NULL */
    const char *runpath; /* DT_RUNPATH or NULL */
    uint16_t machine;    /* e_machine, to skip libraries of another kind */
};
/* Reads the .dynamic section (absent in a static executable or an object:
 * an empty result, not an error). */
enum cbc_status cbc_elf_dynamic(const uint8_t *data, size_t len, const char *name,
                                struct cbc_elf_dynamic *out, struct cbc_err *err);

#endif
