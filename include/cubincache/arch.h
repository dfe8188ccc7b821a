/* cubincache/arch.h: one GPU code target (sm_90a, compute_80, ...) as a
 * value, its canonical name, and the parser for one spelling of it.
 *
 * Invariants: `arch` is 10*major + minor (sm_90 -> 90, sm_121 -> 121), the
 * encoding nvcc, fatbins and cubin e_flags all use; a target is SASS (a
 * cubin for exactly one SM) or PTX (a virtual arch for JIT). The canonical
 * name is what file names, manifests and keys use: "sm_90a", "compute_100f".
 */
#ifndef CUBINCACHE_ARCH_H
#define CUBINCACHE_ARCH_H

#include <cubincache/api.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cbc_code_kind {
    CBC_KIND_SASS = 1, /* machine code, a cubin: sm_XY */
    CBC_KIND_PTX = 2   /* virtual ISA text for the JIT: compute_XY */
};

enum cbc_variant {
    CBC_VARIANT_NONE = 0, /* sm_90: runs on X.Y and later minors of major X */
    CBC_VARIANT_A = 1,    /* sm_90a: arch-specific features, runs only on exactly X.Y */
    CBC_VARIANT_F = 2     /* sm_100f: family-specific, runs on X.Z for Z >= Y */
};

struct cbc_target {
    uint8_t kind;    /* enum cbc_code_kind */
    uint8_t variant; /* enum cbc_variant */
    uint16_t arch;   /* 10*major + minor */
};

#define CBC_TARGET_NAME_MAX 24

static inline unsigned cbc_arch_major(unsigned arch)
{
    return arch / 10;
}
static inline unsigned cbc_arch_minor(unsigned arch)
{
    return arch % 10;
}

/* Writes "sm_90a" / "compute_80" into buf (at least CBC_TARGET_NAME_MAX
 * bytes) and returns buf. Since 0.1. */
CBC_API char *cbc_target_name(const struct cbc_target *t, char *buf);

/* Parses one canonical-style target: sm_XY[a|f] or compute_XY[a|f]. Returns
 * false for anything else (no other spelling: see cbc_arch_spec_parse for
 * "8.6", "90a", "+PTX" and friends). */
CBC_API bool cbc_target_parse(const char *s, struct cbc_target *out);

/* Total order used for sorting target lists: arch, then SASS before PTX,
 * then plain, a, f. Returns <0, 0, >0. */
CBC_API int cbc_target_cmp(const struct cbc_target *a, const struct cbc_target *b);

CBC_API bool cbc_target_eq(const struct cbc_target *a, const struct cbc_target *b);

#ifdef __cplusplus
}
#endif
#endif
