/* why.h: why a launcher call missed (why.c): what each output was last
 * compiled from, kept per working directory and output path in the
 * store's "last" namespace, compared with the inputs of now as `build
 * --explain` compares a bundle's manifest (cbc_key_changes), so the first
 * input that differs is named. Internal and unstable.
 */
#ifndef CBC_WHY_H
#define CBC_WHY_H

#include "direct.h"
#include "key.h"
#include "store.h"

/* Records that the command of `output` (run in `cwd`) compiled from `now`
 * and read deps[0..n) (absolute paths), looking in vain where `list`'s
 * probes say. A cache: failure is silent. */
void cbc_why_remember(struct cbc_store *s, const char *cwd, const char *output,
                      const struct cbc_key_now *now, const struct cbc_dep *deps, size_t n,
                      const struct cbc_dep_list *list);
/* Why the command of `output` missed, as a sentence into buf: the first
 * input that differs from the last compile recorded, "no earlier compile
 * of 'k.o' in this cache", or that the inputs are the same and the entry
 * is gone. */
void cbc_why_missed(struct cbc_store *s, const char *cwd, const char *output,
                    const struct cbc_key_now *now, struct cbc_filememo *memo, char *buf,
                    size_t len);

#endif
