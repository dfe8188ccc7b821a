/* test_select.c: the selection policy as a table. The CC 9.0 rows are the
 * ones measured on an H200 (docs/formats.md section 3, "D:"); the others
 * follow the documented rules for the GPUs we could not measure on. */
#include <cubincache/select.h>

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/* Builds images from "sm_90 compute_80 lto_90 ..."; PTX ISA 9.0 unless a
 * "@isa" suffix says otherwise ("compute_90@99"). */
static size_t images(const char *spec, struct cbc_image *out)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    size_t n = 0;
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        struct cbc_image img = {0};
        unsigned isa = 90;
        char *at = strchr(tok, '@');
        if (at) {
            *at = '\0';
            isa = (unsigned)atoi(at + 1);
        }
        if (!strncmp(tok, "lto_", 4)) {
            img.fatbin_kind = CBC_FATBIN_LTOIR;
            img.target.kind = CBC_KIND_SASS;
            img.target.arch = (uint16_t)atoi(tok + 4);
        } else {
            cr_assert(cbc_target_parse(tok, &img.target), "bad image '%s'", tok);
            img.fatbin_kind = img.target.kind == CBC_KIND_PTX ? CBC_FATBIN_PTX : CBC_FATBIN_ELF;
            img.ptx_isa = img.target.kind == CBC_KIND_PTX ? isa : 0;
        }
        out[n++] = img;
    }
    return n;
}

/* Expects `spec` on `cc` with `isa` to pick `want` (a target name, or
 * "none") by `how`. */
static void row(const char *spec, unsigned cc, unsigned isa, bool prefer_binary, const char *want,
                enum cbc_select_how how)
{
    struct cbc_image img[16];
    size_t n = images(spec, img);
    struct cbc_select_query q = {cc, isa, prefer_binary};
    struct cbc_select_result r;
    long i = cbc_select(img, n, &q, &r);
    if (!strcmp(want, "none")) {
        cr_assert_eq(i, -1, "{%s} on %u: expected none, got index %ld (%s)", spec, cc, i, r.reason);
        cr_assert_eq(r.how, CBC_SELECT_NONE);
        return;
    }
    cr_assert_geq(i, 0, "{%s} on %u: expected %s, got none: %s", spec, cc, want, r.reason);
    char name[CBC_TARGET_NAME_MAX];
    cbc_target_name(&img[i].target, name);
    cr_assert_str_eq(name, want, "{%s} on %u", spec, cc);
    cr_assert_eq(r.how, how, "{%s} on %u: how", spec, cc);
}

Test(select, matches_every_measured_h200_row)
{
    const unsigned H = 90, ISA = 90;
    row("sm_80", H, ISA, false, "none", 0);
    row("sm_100", H, ISA, false, "none", 0);
    row("sm_100f", H, ISA, false, "none", 0);
    row("sm_90", H, ISA, false, "sm_90", CBC_SELECT_SASS_EXACT);
    row("sm_90a", H, ISA, false, "sm_90a", CBC_SELECT_SASS_EXACT);
    row("compute_75", H, ISA, false, "compute_75", CBC_SELECT_PTX_JIT);
    row("compute_80", H, ISA, false, "compute_80", CBC_SELECT_PTX_JIT);
    row("compute_90", H, ISA, false, "compute_90", CBC_SELECT_PTX_JIT);
    row("compute_90a", H, ISA, false, "compute_90a", CBC_SELECT_PTX_JIT);
    row("compute_100", H, ISA, false, "none", 0);
    row("compute_100f", H, ISA, false, "none", 0);
    row("compute_90@99", H, ISA, false, "none", 0);
    row("sm_80 sm_90 compute_80 compute_90", H, ISA, false, "sm_90", CBC_SELECT_SASS_EXACT);
    row("sm_90 compute_90", H, ISA, false, "sm_90", CBC_SELECT_SASS_EXACT);
    row("compute_90 sm_90", H, ISA, false, "sm_90", CBC_SELECT_SASS_EXACT);
    row("sm_80 compute_80", H, ISA, false, "compute_80", CBC_SELECT_PTX_JIT);
    row("compute_80 compute_90", H, ISA, false, "compute_90", CBC_SELECT_PTX_JIT);
    row("compute_90 compute_80", H, ISA, false, "compute_90", CBC_SELECT_PTX_JIT);
    row("sm_90 sm_90a", H, ISA, false, "sm_90a", CBC_SELECT_SASS_EXACT);
    row("sm_90a sm_90", H, ISA, false, "sm_90a", CBC_SELECT_SASS_EXACT);
    row("sm_100 compute_100", H, ISA, false, "none", 0);
    row("lto_90", H, ISA, false, "none", 0);
}

Test(select, follows_the_documented_rules_on_other_gpus)
{
    row("sm_86", 89, 90, false, "sm_86", CBC_SELECT_SASS_COMPAT);
    row("sm_80 sm_86", 89, 90, false, "sm_86", CBC_SELECT_SASS_COMPAT);
    row("sm_86 compute_86", 89, 90, false, "compute_86", CBC_SELECT_PTX_JIT);
    row("sm_86 compute_86", 89, 90, true, "sm_86", CBC_SELECT_SASS_COMPAT);
    row("sm_89", 86, 90, false, "none", 0);
    row("sm_100f", 103, 90, false, "sm_100f", CBC_SELECT_SASS_COMPAT);
    row("sm_100a", 103, 90, false, "none", 0);
    row("sm_103f", 100, 90, false, "none", 0);
    row("compute_100f", 103, 90, false, "compute_100f", CBC_SELECT_PTX_JIT);
    row("compute_100f", 120, 90, false, "none", 0);
    row("compute_120f", 121, 90, false, "compute_120f", CBC_SELECT_PTX_JIT);
    row("sm_121", 120, 90, false, "none", 0);
    row("compute_80", 120, 90, false, "compute_80", CBC_SELECT_PTX_JIT);
    row("compute_90a", 100, 90, false, "none", 0);
    row("compute_90", 90, 0, false, "compute_90", CBC_SELECT_PTX_JIT); /* ISA unknown: assume ok */
    row("compute_90@90", 90, 88, false, "none", 0);                  /* a CUDA 12.9 driver */
}

Test(select, none_explains_what_the_binary_has_and_why_it_cannot_run)
{
    struct cbc_image img[4];
    size_t n = images("sm_86 sm_89", img);
    struct cbc_select_query q = {90, 90, false};
    struct cbc_select_result r;
    cr_assert_eq(cbc_select(img, n, &q, &r), -1);
    cr_assert(strstr(r.reason, "has sm_86, sm_89 and no PTX"), "%s", r.reason);
    n = images("compute_90@91", img);
    q.driver_isa = 90;
    cr_assert_eq(cbc_select(img, n, &q, &r), -1);
    cr_assert(strstr(r.reason, "newer than the driver's 9.0"), "%s", r.reason);
    cr_assert(strstr(r.reason, "CUDA 13.1"), "%s", r.reason);
}

Test(select, driver_versions_map_to_ptx_isa)
{
    cr_assert_eq(cbc_ptx_isa_for_driver(13000), 90);
    cr_assert_eq(cbc_ptx_isa_for_driver(12080), 87);
    cr_assert_eq(cbc_ptx_isa_for_driver(12060), 85);
    cr_assert_eq(cbc_ptx_isa_for_driver(13010), 91);
    cr_assert_eq(cbc_ptx_isa_for_driver(10000), 0);
    cr_assert_str_eq(cbc_cuda_for_ptx_isa(90), "13.0");
    cr_assert_str_eq(cbc_cuda_for_ptx_isa(87), "12.8");
}
