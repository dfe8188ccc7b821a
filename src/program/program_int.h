/* program_int.h: what the files of src/program share and no one else
 * uses: a small set of strings (names.c) and the ld.so look-alike that
 * finds a program's shared libraries (ldso.c). Internal.
 */
#ifndef CBC_PROGRAM_INT_H
#define CBC_PROGRAM_INT_H

#include "common.h"

/* A set of strings in the order first added, each once. v[0, n) are owned
 * by the set until taken (then the set is forgotten, not released). */
struct cbc_names {
    char **v;
    size_t n, cap;
};
bool cbc_names_has(const struct cbc_names *s, const char *x);
/* Adds the first `len` bytes of `x` unless already there; false when out
 * of memory. */
bool cbc_names_add(struct cbc_names *s, const char *x, size_t len);
void cbc_names_release(struct cbc_names *s);

struct cbc_elf_dynamic; /* elfextra.h */

/* Where the dynamic loader would find a needed library (ldso.c says how).
 * One per program opened: it reads /etc/ld.so.conf at its first search. */
struct cbc_ldso {
    const char *const *lib_dirs; /* searched first (check -L); not owned */
    size_t n_lib_dirs;
    struct cbc_names conf_dirs;  /* ld.so.conf's, once conf_read */
    bool conf_read;
    const char *exec;            /* the program judged; not owned */
    bool secure;                 /* it runs in secure-execution mode (cbc_ldso_secure) */
};
/* Whether the program at `path` runs in ld.so's secure-execution mode:
 * set-user-ID, set-group-ID (with group execute) or file capabilities. */
bool cbc_ldso_secure(const char *path);
/* The path (malloc'd) of library `needed` of the host ELF `from`, whose
 * .dynamic is `dyn`; NULL when not found (or out of memory), with the
 * places searched appended to `searched`, ", " between directories. */
char *cbc_ldso_find(struct cbc_ldso *l, const char *needed, const char *from,
                    const struct cbc_elf_dynamic *dyn, struct cbc_buf *searched);
void cbc_ldso_release(struct cbc_ldso *l);

#endif
