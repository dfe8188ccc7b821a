/* test_arch.c: every arch spelling users write, the rules of auto and
 * native, and the errors for bad specs. GPUs are injected, so these run the
 * same on machines with and without one. */
#include "archspec.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

static const unsigned nvcc13[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};

static struct cbc_device_info fake[4];
static size_t n_fake;
static void fake_gpus(struct cbc_device_info *g, size_t max, size_t *count, char *why,
                      size_t why_len)
{
    *count = n_fake < max ? n_fake : max;
    memcpy(g, fake, *count * sizeof *g);
    if (!n_fake && why)
        snprintf(why, why_len, "no driver (test)");
}
static void set_gpus(size_t n, int major, int minor)
{
    n_fake = n;
    for (size_t i = 0; i < n; i++)
        fake[i] = (struct cbc_device_info){
            .ordinal = (int)i, .name = "Test GPU", .cc_major = major, .cc_minor = minor};
}

static struct cbc_arch_env env_with(const char *cc)
{
    return (struct cbc_arch_env){nvcc13, 12, "nvcc 13.0.88", cc, fake_gpus};
}

/* Resolves and renders "sm_86 compute_86" for compact assertions. */
static enum cbc_status resolve(const char *spec, const char *cc, char *out, size_t len,
                               enum cbc_arch_rule *rule, struct cbc_err *err)
{
    struct cbc_arch_env env = env_with(cc);
    struct cbc_arch_choice ch;
    enum cbc_status st = cbc_arch_resolve(spec, &env, &ch, err);
    out[0] = '\0';
    if (st != CBC_OK)
        return st;
    size_t off = 0;
    for (size_t i = 0; i < ch.n; i++) {
        char n[CBC_TARGET_NAME_MAX];
        off += (size_t)snprintf(out + off, len - off, "%s%s", i ? " " : "",
                                cbc_target_name(&ch.targets[i], n));
    }
    if (rule)
        *rule = ch.rule;
    cbc_arch_choice_release(&ch);
    return st;
}

static void expect(const char *spec, const char *want)
{
    char got[512];
    struct cbc_err err = {0};
    set_gpus(0, 0, 0);
    enum cbc_status st = resolve(spec, NULL, got, sizeof got, NULL, &err);
    cr_assert_eq(st, CBC_OK, "spec '%s' failed: %s", spec, err.msg);
    cr_assert_str_eq(got, want, "spec '%s'", spec);
}

static void expect_error(const char *spec, const char *cc, const char *needle)
{
    char got[512];
    struct cbc_err err = {0};
    set_gpus(0, 0, 0);
    enum cbc_status st = resolve(spec, cc, got, sizeof got, NULL, &err);
    cr_assert_eq(st, CBC_E_ARCH, "spec '%s' should fail, gave '%s'", spec, got);
    cr_assert(strstr(err.msg, needle) || strstr(err.remedy, needle),
              "spec '%s': message '%s' / hint '%s' lacks '%s'", spec, err.msg, err.remedy, needle);
}

Test(arch, accepts_every_single_spelling)
{
    expect("86", "sm_86");
    expect("8.6", "sm_86");
    expect("sm_86", "sm_86");
    expect("SM_86", "sm_86");
    expect("compute_86", "compute_86");
    expect("90a", "sm_90a");
    expect("sm_90a", "sm_90a");
    expect("100f", "sm_100f");
    expect("10.0", "sm_100");
    expect("12.1", "sm_121");
    expect("compute_100f", "compute_100f");
    expect("8.6+PTX", "sm_86 compute_86");
    expect("86+ptx", "sm_86 compute_86");
    expect("86-real", "sm_86");
    expect("86-virtual", "compute_86");
}

Test(arch, accepts_lists_with_any_separator_sorted_and_deduplicated)
{
    expect("90,86;89 75", "sm_75 sm_86 sm_89 sm_90");
    expect(" 86 , 86;8.6 ", "sm_86");
    expect("89\t90\n", "sm_89 sm_90");
    expect("86 90 +PTX", "sm_86 sm_90 compute_90");
    expect("90a;90", "sm_90 sm_90a");
}

Test(arch, all_and_all_major_follow_nvcc_list)
{
    expect("all", "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_103 sm_110 sm_120 sm_121 "
                  "compute_121");
    expect("all-major", "sm_75 sm_80 sm_90 sm_100 sm_110 sm_120 compute_120");
}

Test(arch, auto_prefers_cuda_compute_cap_from_the_environment)
{
    char got[256];
    enum cbc_arch_rule rule;
    set_gpus(1, 8, 6); /* a GPU is present, but the variable wins */
    cr_assert_eq(resolve("auto", "90", got, sizeof got, &rule, NULL), CBC_OK);
    cr_assert_str_eq(got, "sm_90");
    cr_assert_eq(rule, CBC_RULE_ENV);
    cr_assert_eq(resolve("auto", "8.9, 9.0", got, sizeof got, &rule, NULL), CBC_OK);
    cr_assert_str_eq(got, "sm_89 sm_90");
}

Test(arch, auto_uses_the_driver_gpus_when_the_variable_is_unset_or_empty)
{
    char got[256];
    enum cbc_arch_rule rule;
    set_gpus(2, 9, 0);
    cr_assert_eq(resolve("auto", NULL, got, sizeof got, &rule, NULL), CBC_OK);
    cr_assert_str_eq(got, "sm_90");
    cr_assert_eq(rule, CBC_RULE_DRIVER);
    cr_assert_eq(resolve("auto", "  ", got, sizeof got, &rule, NULL), CBC_OK);
    cr_assert_eq(rule, CBC_RULE_DRIVER);
}

Test(arch, auto_falls_back_to_the_documented_default_without_gpu)
{
    char got[256];
    enum cbc_arch_rule rule;
    set_gpus(0, 0, 0);
    cr_assert_eq(resolve("auto", NULL, got, sizeof got, &rule, NULL), CBC_OK);
    cr_assert_str_eq(got, "sm_75 sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 compute_120");
    cr_assert_eq(rule, CBC_RULE_DEFAULT);
}

Test(arch, auto_gives_ptx_for_a_gpu_newer_than_nvcc_and_refuses_an_older_one)
{
    char got[256];
    struct cbc_err err = {0};
    set_gpus(1, 13, 0);
    cr_assert_eq(resolve("auto", NULL, got, sizeof got, NULL, &err), CBC_OK);
    cr_assert_str_eq(got, "compute_121");
    set_gpus(1, 7, 0);
    cr_assert_eq(resolve("auto", NULL, got, sizeof got, NULL, &err), CBC_E_ARCH);
    cr_assert(strstr(err.msg, "7.0") && strstr(err.msg, "sm_75"), "%s", err.msg);
}

Test(arch, native_needs_a_gpu_and_says_what_to_do_instead)
{
    char got[256];
    struct cbc_err err = {0};
    set_gpus(1, 8, 9);
    cr_assert_eq(resolve("native", NULL, got, sizeof got, NULL, &err), CBC_OK);
    cr_assert_str_eq(got, "sm_89");
    set_gpus(0, 0, 0);
    cr_assert_eq(resolve("native", NULL, got, sizeof got, NULL, &err), CBC_E_ARCH);
    cr_assert(strstr(err.msg, "no GPU"), "%s", err.msg);
    cr_assert(strstr(err.remedy, "auto"), "%s", err.remedy);
}

Test(arch, rejects_targets_nvcc_cannot_build_and_lists_what_it_can)
{
    expect_error("sm_70", NULL, "sm_70");
    expect_error("sm_70", NULL, "sm_75 sm_80");
    expect_error("101", NULL, "sm_101");
    expect_error("89a", NULL, "'a'");
    expect_error("90f", NULL, "'f'");
    expect_error("compute_72", NULL, "compute_72");
}

Test(arch, rejects_malformed_specs_naming_the_token)
{
    expect_error("", NULL, "empty");
    expect_error("foo", NULL, "'foo'");
    expect_error("86,bar", NULL, "'bar'");
    expect_error("8.66", NULL, "'8.66'");
    expect_error("9", NULL, "'9'");
    expect_error("sm_86-virtual", NULL, "'sm_86-virtual'");
    expect_error("compute_86-real", NULL, "'compute_86-real'");
    expect_error("auto,90", NULL, "cannot be combined");
    expect_error("+PTX", NULL, "+PTX");
    expect_error("sm_90b", NULL, "'sm_90b'");
}

Test(arch, bad_cuda_compute_cap_is_named_in_the_error)
{
    expect_error("auto", "ninety", "CUDA_COMPUTE_CAP='ninety'");
    expect_error("auto", "auto", "CUDA_COMPUTE_CAP");
}

Test(arch, canonical_names_round_trip)
{
    const char *names[] = {"sm_75", "sm_90a", "sm_100f", "compute_80", "compute_121a", "sm_121"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        struct cbc_target t;
        char buf[CBC_TARGET_NAME_MAX];
        cr_assert(cbc_target_parse(names[i], &t), "%s", names[i]);
        cr_assert_str_eq(cbc_target_name(&t, buf), names[i]);
    }
    struct cbc_target t;
    cr_assert_not(cbc_target_parse("sm_9", &t));
    cr_assert_not(cbc_target_parse("sm_90x", &t));
    cr_assert_not(cbc_target_parse("86", &t));
    cr_assert_not(cbc_target_parse("sm_1000", &t));
}
