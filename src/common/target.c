/* target.c: canonical names, parsing and ordering of struct cbc_target.
 *
 * Only the canonical spellings (sm_XY[a|f], compute_XY[a|f]) are accepted
 * here; every friendlier spelling goes through the arch-spec parser in
 * src/key, which produces these values. arch is 2 or 3 digits, the last one
 * the minor: sm_90 = 9.0, sm_121 = 12.1.
 */
#include <cubincache/arch.h>

#include <stdio.h>
#include <string.h>

char *cbc_target_name(const struct cbc_target *t, char *buf)
{
    const char *suffix = t->variant == CBC_VARIANT_A ? "a" : t->variant == CBC_VARIANT_F ? "f" : "";
    snprintf(buf, CBC_TARGET_NAME_MAX, "%s_%u%s", t->kind == CBC_KIND_PTX ? "compute" : "sm",
             (unsigned)t->arch, suffix);
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
    if (*s == 'a') {
        t.variant = CBC_VARIANT_A;
        s++;
    } else if (*s == 'f') {
        t.variant = CBC_VARIANT_F;
        s++;
    }
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
