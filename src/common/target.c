/* target.c: canonical names, parsing and ordering of struct cbc_target.
 *
 * Only the canonical spellings (sm_XY[a|f], compute_XY[a|f]) are accepted
 * here; every friendlier spelling goes through the arch-spec parser in
 * src/key, which produces these values. arch is 2 or 3 digits, the last one
 * the minor: sm_90 = 9.0, sm_121 = 12.1.
 */
#include "common.h"

#include <cubincache/arch.h>

#include <stdio.h>
#include <string.h>

const char *cbc_variant_suffix(uint8_t variant)
{
    return variant == CBC_VARIANT_A ? "a" : variant == CBC_VARIANT_F ? "f" : "";
}

uint8_t cbc_variant_of(char c)
{
    return c == 'a' ? CBC_VARIANT_A : c == 'f' ? CBC_VARIANT_F : CBC_VARIANT_NONE;
}

uint8_t cbc_variant_read(const char **s)
{
    uint8_t v = cbc_variant_of(**s);
    if (v != CBC_VARIANT_NONE)
        (*s)++;
    return v;
}

char *cbc_target_name(const struct cbc_target *t, char *buf)
{
    snprintf(buf, CBC_TARGET_NAME_MAX, "%s_%u%s", t->kind == CBC_KIND_PTX ? "compute" : "sm",
             (unsigned)t->arch, cbc_variant_suffix(t->variant));
    return buf;
}

bool cbc_target_parse(const char *s, struct cbc_target *out)
{
    struct cbc_target t = {0};
    if (strncmp(s, "sm_", 3) == 0) {
        t.kind = CBC_KIND_SASS;
        s += 3;
    } else if (strncmp(s, "compute_", 8) == 0) {
        t.kind = CBC_KIND_PTX;
        s += 8;
    } else {
        return false;
    }
    unsigned v = 0, digits = 0;
    while (*s >= '0' && *s <= '9' && digits < 4) {
        v = v * 10 + (unsigned)(*s++ - '0');
        digits++;
    }
    if (digits < 2 || digits > 3 || v < 10)
        return false;
    t.variant = cbc_variant_read(&s);
    if (*s != '\0')
        return false;
    t.arch = (uint16_t)v;
    *out = t;
    return true;
}

int cbc_target_cmp(const struct cbc_target *a, const struct cbc_target *b)
{
    if (a->arch != b->arch)
        return a->arch < b->arch ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->variant != b->variant)
        return a->variant < b->variant ? -1 : 1;
    return 0;
}

bool cbc_target_eq(const struct cbc_target *a, const struct cbc_target *b)
{
    return cbc_target_cmp(a, b) == 0;
}
