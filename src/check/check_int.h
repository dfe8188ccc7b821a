/* check_int.h: what the bundle verdicts (check.c) and the binary verdicts
 * (binary.c) share, from report.c: adding items and notes to a report, the
 * target a file name claims, the arch environment to resolve --arch in;
 * and the entry to binary.c that check.c dispatches to. Internal.
 */
#ifndef CBC_CHECK_INT_H
#define CBC_CHECK_INT_H

#include "archspec.h"
#include "check.h"

#include <cubincache/arch.h>

/* ---- report.c ---- */

/* Appends an item (the text formatted once); NULL when out of memory. */
struct cbc_check_item *cbc_check_add(struct cbc_check_report *r, enum cbc_verdict v,
                                     const char *container, const char *file, const char *target,
                                     const char *fmt, ...) CBC_PRINTF(6, 7);
/* A note: something not checked and why (printed as a warning). */
void cbc_check_note(struct cbc_check_report *r, const char *fmt, ...) CBC_PRINTF(2, 3);
/* The target a file name claims: "x.sm_90a.cubin" -> sm_90a. */
bool cbc_check_label_from_name(const char *path, struct cbc_target *t);
/* The environment --arch is resolved in when no nvcc is at hand. */
void cbc_check_arch_env(struct cbc_arch_env *env);

/* ---- binary.c ---- */

/* The verdicts of one binary (binary.c). */
enum cbc_status cbc_check_binary(const char *path, const struct cbc_check_opts *o,
                                 struct cbc_check_report *rep, struct cbc_err *err);

#endif
