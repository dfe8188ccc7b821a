/* select.c: the selection policy (rules and their sources in select.h).
 *
 * Three passes over the images, one per preference class; inside a class
 * the best candidate wins by (arch, variant rank), so the result does not
 * depend on the order of the images, as measured for the driver.
 */
#include <cubincache/select.h>

#include "common.h"

#include <stdio.h>
#include <string.h>

static const struct {
    int cuda; /* cuDriverGetVersion */
    unsigned isa;
} isa_table[] = {
    {11000, 70}, {11010, 71}, {11020, 72}, {11030, 73}, {11040, 74}, {11050, 75},
    {11060, 76}, {11070, 77}, {11080, 78}, {12000, 80}, {12010, 81}, {12020, 82},
    {12030, 83}, {12040, 84}, {12050, 85}, {12060, 85}, {12070, 86}, {12080, 87},
    {12090, 88}, {13000, 90}, {13010, 91},
};

unsigned cbc_ptx_isa_for_driver(int driver_version)
{
    /* a driver newer than this table knows at least as much: do not guess */
    if (driver_version > isa_table[sizeof isa_table / sizeof *isa_table - 1].cuda + 9)
        return 0;
    unsigned isa = 0;
    for (size_t i = 0; i < sizeof isa_table / sizeof *isa_table; i++)
        if (driver_version >= isa_table[i].cuda)
            isa = isa_table[i].isa;
    return isa;
}

const char *cbc_cuda_for_ptx_isa(unsigned isa)
{
    static const char *const names[] = {"11.0", "11.1", "11.2", "11.3", "11.4", "11.5", "11.6",
                                        "11.7", "11.8", "12.0", "12.1", "12.2", "12.3", "12.4",
                                        "12.5", "12.6", "12.7", "12.8", "12.9", "13.0", "13.1"};
    for (size_t i = 0; i < sizeof isa_table / sizeof *isa_table; i++)
        if (isa_table[i].isa >= isa)
            return names[i];
    return "a newer CUDA";
}

static void name_of(const struct cbc_image *img, char *buf, size_t len)
{
    if (img->fatbin_kind != CBC_FATBIN_ELF && img->fatbin_kind != CBC_FATBIN_PTX) {
        snprintf(buf, len, "%s (arch %u)", img->fatbin_kind == CBC_FATBIN_LTOIR ? "LTO-IR" : "unknown",
                 (unsigned)img->target.arch);
        return;
    }
    snprintf(buf, len, "%s_%u%s", img->target.kind == CBC_KIND_PTX ? "compute" : "sm",
             (unsigned)img->target.arch, cbc_variant_suffix(img->target.variant));
}

bool cbc_image_loadable(const struct cbc_image *img, const struct cbc_select_query *q, char *why,
                        size_t why_len)
{
    char n[48];
    name_of(img, n, sizeof n);
    unsigned a = img->target.arch, M = q->cc / 10, m = q->cc % 10;
    unsigned am = a / 10, an = a % 10;
    const char *fail = NULL;
    char buf[256];
    if (img->needs_dlink) {
        snprintf(buf, sizeof buf, "%s is relocatable code: it needs a device link before a driver "
                 "loads it", n);
        fail = buf;
    } else if (img->fatbin_kind == CBC_FATBIN_LTOIR) {
        fail = "LTO-IR must be linked with nvJitLink; the driver does not load it";
    } else if (img->fatbin_kind != CBC_FATBIN_ELF && img->fatbin_kind != CBC_FATBIN_PTX) {
        fail = "not an image kind the driver loads";
    } else if (img->target.kind == CBC_KIND_SASS) {
        if (img->target.variant == CBC_VARIANT_A) {
            if (a != q->cc) {
                snprintf(buf, sizeof buf, "%s runs only on exactly %u.%u", n, am, an);
                fail = buf;
            }
        } else if (am != M || an > m) {
            snprintf(buf, sizeof buf, "%s runs only on %u.%u to %u.9", n, am, an, am);
            fail = buf;
        }
    } else {
        if (img->target.variant == CBC_VARIANT_A && a != q->cc) {
            snprintf(buf, sizeof buf, "%s PTX is only for exactly %u.%u", n, am, an);
            fail = buf;
        } else if (img->target.variant == CBC_VARIANT_F && (am != M || an > m)) {
            snprintf(buf, sizeof buf, "%s PTX is only for %u.%u to %u.9", n, am, an, am);
            fail = buf;
        } else if (a > q->cc) {
            snprintf(buf, sizeof buf, "%s PTX needs compute capability %u.%u or newer", n, am, an);
            fail = buf;
        } else if (q->driver_isa && img->ptx_isa > q->driver_isa) {
            snprintf(buf, sizeof buf,
                     "%s PTX is ISA %u.%u, newer than the driver's %u.%u "
                     "(CUDA_ERROR_UNSUPPORTED_PTX_VERSION; needs a CUDA %s driver)",
                     n, img->ptx_isa / 10, img->ptx_isa % 10, q->driver_isa / 10,
                     q->driver_isa % 10, cbc_cuda_for_ptx_isa(img->ptx_isa));
            fail = buf;
        }
    }
    if (fail && why)
        snprintf(why, why_len, "%s", fail);
    return fail == NULL;
}

static int variant_rank(uint8_t v)
{
    return v == CBC_VARIANT_A ? 3 : v == CBC_VARIANT_F ? 2 : 1;
}

static bool better(const struct cbc_image *a, const struct cbc_image *b)
{
    if (!b)
        return true;
    if (a->target.arch != b->target.arch)
        return a->target.arch > b->target.arch;
    return variant_rank(a->target.variant) > variant_rank(b->target.variant);
}

void cbc_images_summary(const struct cbc_image *imgs, size_t n, char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    if (n == 0) {
        snprintf(buf, len, "no images");
        return;
    }
    for (size_t i = 0; i < n && off < len; i++) {
        char nm[48];
        name_of(&imgs[i], nm, sizeof nm);
        bool dup = false;
        for (size_t k = 0; k < i && !dup; k++) {
            char other[48];
            name_of(&imgs[k], other, sizeof other);
            dup = strcmp(nm, other) == 0;
        }
        if (!dup)
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", nm);
    }
}

long cbc_select(const struct cbc_image *imgs, size_t n, const struct cbc_select_query *q,
                struct cbc_select_result *r)
{
    memset(r, 0, sizeof *r);
    r->index = -1;
    const struct cbc_image *exact = NULL, *compat = NULL, *ptx = NULL;
    long ie = -1, ic = -1, ip = -1;
    for (size_t i = 0; i < n; i++) {
        const struct cbc_image *img = &imgs[i];
        if (!cbc_image_loadable(img, q, NULL, 0))
            continue;
        if (img->target.kind == CBC_KIND_PTX) {
            if (better(img, ptx))
                ptx = img, ip = (long)i;
        } else if (img->target.arch == q->cc) {
            if (better(img, exact))
                exact = img, ie = (long)i;
        } else if (better(img, compat)) {
            compat = img, ic = (long)i;
        }
    }
    unsigned M = q->cc / 10, m = q->cc % 10;
    char nm[48];
    if (exact) {
        name_of(exact, nm, sizeof nm);
        r->index = ie;
        r->how = CBC_SELECT_SASS_EXACT;
        snprintf(r->reason, sizeof r->reason, "%s SASS, built for exactly compute capability %u.%u",
                 nm, M, m);
        return r->index;
    }
    const struct cbc_image *first = q->prefer_binary ? compat : ptx;
    if (!first)
        first = q->prefer_binary ? ptx : compat;
    if (first == ptx && ptx) {
        name_of(ptx, nm, sizeof nm);
        r->index = ip;
        r->how = CBC_SELECT_PTX_JIT;
        snprintf(r->reason, sizeof r->reason,
                 "PTX JIT from %s (no SASS for exactly %u.%u; the driver compiles the PTX at load, "
                 "needs a driver for PTX ISA %u.%u or newer)",
                 nm, M, m, ptx->ptx_isa / 10, ptx->ptx_isa % 10);
        return r->index;
    }
    if (first == compat && compat) {
        name_of(compat, nm, sizeof nm);
        r->index = ic;
        r->how = CBC_SELECT_SASS_COMPAT;
        snprintf(r->reason, sizeof r->reason,
                 "%s SASS, binary-compatible with %u.%u (same major, lower or equal minor)", nm, M,
                 m);
        return r->index;
    }
    char what[400];
    cbc_select_none(imgs, n, q, what, sizeof what);
    snprintf(r->reason, sizeof r->reason, "will not run on compute capability %u.%u: %s", M, m,
             what);
    return -1;
}

void cbc_select_none(const struct cbc_image *imgs, size_t n, const struct cbc_select_query *q,
                     char *buf, size_t len)
{
    /* what there is, and for the first PTX image why it does not fit */
    char have[256];
    cbc_images_summary(imgs, n, have, sizeof have);
    bool any_ptx = false;
    char why[256] = "";
    for (size_t i = 0; i < n; i++) {
        any_ptx |= imgs[i].target.kind == CBC_KIND_PTX && imgs[i].fatbin_kind == CBC_FATBIN_PTX;
        if (!why[0] && imgs[i].target.kind == CBC_KIND_PTX)
            cbc_image_loadable(&imgs[i], q, why, sizeof why);
    }
    snprintf(buf, len, "has %s%s%s%s", have, any_ptx ? "" : " and no PTX",
             why[0] ? "; " : "", why);
}
