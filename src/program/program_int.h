/* program_int.h: what the files of src/program share and no one else
 * uses: a small set of strings (names.c). Internal.
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

#endif
