/* archspec.c: arch spellings to canonical targets.
 *
 * Grammar of one token (case-insensitive):
 *   [sm_|compute_] NUMBER [a|f] [+PTX|-real|-virtual]
 *   NUMBER = 2-3 digits ("86", "100") or MAJOR.MINOR ("8.6", "12.1")
 * A bare number or sm_ prefix is SASS; compute_ or -virtual is PTX; +PTX
 * adds the PTX of the same arch. A lone "+PTX" token adds the PTX of the
 * highest SASS target. Tokens are separated by commas, semicolons or white
 * space. The keywords auto, native, all and all-major stand alone.
 *
 * Unlike CMake's CUDA_ARCHITECTURES, a bare "86" means SASS only: every SM
 * target gets its own cubin, PTX is asked for explicitly.
 */
#include "archspec.h"

#include "common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* nvcc 13.0's list, used only when the caller has no nvcc to ask. */
static const unsigned builtin_supported[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};

const char *cbc_arch_rule_name(enum cbc_arch_rule rule)
{
    switch (rule) {
    case CBC_RULE_EXPLICIT: return "explicit";
    case CBC_RULE_ENV: return "CUDA_COMPUTE_CAP";
    case CBC_RULE_DRIVER: return "driver";
    case CBC_RULE_DEFAULT: return "default";
    case CBC_RULE_NATIVE: return "native";
    case CBC_RULE_ALL: return "all";
    }
    return "unknown";
}

static bool ends_with(const char *s, size_t *len, const char *suffix)
{
    size_t n = strlen(suffix);
    if (*len >= n && strncmp(s + *len - n, suffix, n) == 0) {
        *len -= n;
        return true;
    }
    return false;
}

size_t cbc_arch_token_parse(const char *tok, struct cbc_target out[2])
{
    char s[64];
    size_t len = strlen(tok);
    if (len == 0 || len >= sizeof s)
        return 0;
    for (size_t i = 0; i <= len; i++)
        s[i] = (char)tolower((unsigned char)tok[i]);

    bool want_sass = true, want_ptx = false, forced = false;
    if (ends_with(s, &len, "+ptx")) {
        want_ptx = true;
    } else if (ends_with(s, &len, "-real")) {
        forced = true;
    } else if (ends_with(s, &len, "-virtual")) {
        want_sass = false;
        want_ptx = true;
        forced = true;
    }
    s[len] = '\0';

    const char *p = s;
    if (strncmp(p, "sm_", 3) == 0) {
        if (!want_sass)
            return 0; /* sm_86-virtual contradicts itself */
        p += 3;
    } else if (strncmp(p, "compute_", 8) == 0) {
        if (forced && want_sass)
            return 0; /* compute_86-real */
        want_sass = false;
        want_ptx = true;
        p += 8;
    }

    unsigned major = 0, minor = 0, arch;
    size_t dig = 0;
    while (isdigit((unsigned char)p[dig]))
        dig++;
    if (p[dig] == '.') {
        if (dig < 1 || dig > 2 || !isdigit((unsigned char)p[dig + 1]) ||
            isdigit((unsigned char)p[dig + 2]))
            return 0;
        for (size_t i = 0; i < dig; i++)
            major = major * 10 + (unsigned)(p[i] - '0');
        minor = (unsigned)(p[dig + 1] - '0');
        arch = major * 10 + minor;
        p += dig + 2;
    } else {
        if (dig < 2 || dig > 3)
            return 0;
        arch = 0;
        for (size_t i = 0; i < dig; i++)
            arch = arch * 10 + (unsigned)(p[i] - '0');
        p += dig;
    }
    if (arch < 10)
        return 0;
    uint8_t variant = cbc_variant_read(&p);
    if (*p != '\0')
        return 0;

    size_t n = 0;
    if (want_sass)
        out[n++] = (struct cbc_target){CBC_KIND_SASS, variant, (uint16_t)arch};
    if (want_ptx)
        out[n++] = (struct cbc_target){CBC_KIND_PTX, variant, (uint16_t)arch};
    return n;
}

/* ---- target lists -------------------------------------------------------- */

struct tlist {
    struct cbc_target *v;
    size_t n, cap;
};

static bool tlist_add(struct tlist *l, struct cbc_target t)
{
    for (size_t i = 0; i < l->n; i++)
        if (cbc_target_eq(&l->v[i], &t))
            return true;
    if (!cbc_grow(&l->v, l->n, &l->cap, sizeof *l->v, 16))
        return false;
    l->v[l->n++] = t;
    return true;
}

static int cmp_targets(const void *a, const void *b)
{
    return cbc_target_cmp(a, b);
}

static void supported_list(const struct cbc_arch_env *env, const unsigned **v, size_t *n)
{
    if (env && env->supported && env->n_supported) {
        *v = env->supported;
        *n = env->n_supported;
    } else {
        *v = builtin_supported;
        *n = CBC_ARRAY_LEN(builtin_supported);
    }
}

static bool is_supported(const struct cbc_arch_env *env, unsigned arch)
{
    const unsigned *v;
    size_t n;
    supported_list(env, &v, &n);
    for (size_t i = 0; i < n; i++)
        if (v[i] == arch)
            return true;
    return false;
}

static void supported_text(const struct cbc_arch_env *env, char *buf, size_t len)
{
    const unsigned *v;
    size_t n, off = 0;
    supported_list(env, &v, &n);
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%ssm_%u", i ? " " : "", v[i]);
    if (off < len)
        snprintf(buf + off, len - off,
                 ", the 'a' variants of sm_90 and later and the 'f' variants of sm_100 and later");
}

static const char *nvcc_label(const struct cbc_arch_env *env)
{
    return env && env->nvcc_label ? env->nvcc_label : "nvcc";
}

static enum cbc_status validate(const struct cbc_arch_env *env, const struct cbc_target *t,
                                const char *label, struct cbc_err *err)
{
    char name[CBC_TARGET_NAME_MAX], list[512];
    cbc_target_name(t, name);
    const char *why = NULL;
    if (t->variant == CBC_VARIANT_A && t->arch < 90)
        why = "'a' (architecture-specific) variants exist for sm_90 and later only";
    else if (t->variant == CBC_VARIANT_F && t->arch < 100)
        why = "'f' (family-specific) variants exist for sm_100 and later only";
    else if (!is_supported(env, t->arch))
        why = "";
    if (!why)
        return CBC_OK;
    supported_text(env, list, sizeof list);
    cbc_err_set(err, CBC_E_ARCH, "%s: %s cannot be built by %s%s%s", label, name,
                nvcc_label(env), *why ? ": " : "", why);
    cbc_err_hint(err, "%s can build: %s", nvcc_label(env), list);
    return CBC_E_ARCH;
}

static bool is_sep(char c)
{
    return c == ',' || c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const char *const token_help =
    "write targets as 86, 8.6, sm_86, compute_86, 90a, 100f, 8.6+PTX, 86-real or 86-virtual, "
    "separated by commas, semicolons or spaces; or one of auto, native, all, all-major";

/* Explicit list. `what` labels it in messages: "arch '86,foo'" or "CUDA_COMPUTE_CAP='x'". */
static enum cbc_status parse_list(const char *spec, const char *what, const struct cbc_arch_env *env,
                                  struct tlist *out, struct cbc_err *err)
{
    bool lone_ptx = false;
    size_t ntok = 0;
    const char *p = spec;
    while (*p) {
        while (is_sep(*p))
            p++;
        if (!*p)
            break;
        const char *start = p;
        while (*p && !is_sep(*p))
            p++;
        char tok[64];
        size_t len = (size_t)(p - start);
        if (len >= sizeof tok)
            len = sizeof tok - 1;
        memcpy(tok, start, len);
        tok[len] = '\0';
        ntok++;
        if (strcasecmp(tok, "+ptx") == 0) {
            lone_ptx = true;
            continue;
        }
        if (!strcasecmp(tok, "auto") || !strcasecmp(tok, "native") || !strcasecmp(tok, "all") ||
            !strcasecmp(tok, "all-major")) {
            if (strncmp(what, "arch", 4) != 0) {
                cbc_err_set(err, CBC_E_ARCH, "%s: '%s' is a keyword, not a target", what, tok);
                cbc_err_hint(err, "set it to targets such as 90 or 8.9,9.0, or unset it");
                return CBC_E_ARCH;
            }
            cbc_err_set(err, CBC_E_ARCH, "%s: '%s' cannot be combined with other targets", what, tok);
            cbc_err_hint(err, "use '%s' alone, or list the targets", tok);
            return CBC_E_ARCH;
        }
        struct cbc_target t[2];
        size_t n = cbc_arch_token_parse(tok, t);
        if (n == 0) {
            cbc_err_set(err, CBC_E_ARCH, "%s: '%s' is not a GPU target", what, tok);
            cbc_err_hint(err, "%s", token_help);
            return CBC_E_ARCH;
        }
        for (size_t i = 0; i < n; i++) {
            enum cbc_status s = validate(env, &t[i], what, err);
            if (s != CBC_OK)
                return s;
            if (!tlist_add(out, t[i]))
                return cbc_err_oom(err);
        }
    }
    if (ntok == 0) {
        cbc_err_set(err, CBC_E_ARCH, "%s is empty", what);
        cbc_err_hint(err, "%s", token_help);
        return CBC_E_ARCH;
    }
    if (lone_ptx) {
        const struct cbc_target *hi = NULL;
        for (size_t i = 0; i < out->n; i++)
            if (out->v[i].kind == CBC_KIND_SASS && (!hi || cbc_target_cmp(&out->v[i], hi) > 0))
                hi = &out->v[i];
        if (!hi) {
            cbc_err_set(err, CBC_E_ARCH, "%s: '+PTX' needs a SASS target to add PTX for", what);
            cbc_err_hint(err, "write e.g. '90 +PTX' or 'compute_90'");
            return CBC_E_ARCH;
        }
        struct cbc_target t = *hi;
        t.kind = CBC_KIND_PTX;
        if (!tlist_add(out, t))
            return cbc_err_oom(err);
    }
    return CBC_OK;
}

static enum cbc_status from_all(const struct cbc_arch_env *env, bool major_only, struct tlist *out,
                                struct cbc_err *err)
{
    const unsigned *v;
    size_t n;
    supported_list(env, &v, &n);
    unsigned hi = 0, last_major = 0;
    /* nvcc's list is ordered by arch; keep a local sorted copy to be sure */
    unsigned sorted[64];
    size_t m = n < CBC_ARRAY_LEN(sorted) ? n : CBC_ARRAY_LEN(sorted);
    memcpy(sorted, v, m * sizeof *v);
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            unsigned t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    for (size_t i = 0; i < m; i++) {
        unsigned a = sorted[i];
        if (major_only && cbc_arch_major(a) == last_major)
            continue;
        last_major = cbc_arch_major(a);
        if (!tlist_add(out, (struct cbc_target){CBC_KIND_SASS, CBC_VARIANT_NONE, (uint16_t)a}))
            return cbc_err_oom(err);
        if (a > hi)
            hi = a;
    }
    if (hi && !tlist_add(out, (struct cbc_target){CBC_KIND_PTX, CBC_VARIANT_NONE, (uint16_t)hi}))
        return cbc_err_oom(err);
    return CBC_OK;
}

/* Targets for the GPUs the driver reports. Sets *count to the number of GPUs. */
static enum cbc_status from_gpus(const char *spec, const struct cbc_arch_env *env, struct tlist *out,
                                 size_t *count, char **detail, char *why, size_t why_len,
                                 struct cbc_err *err)
{
    struct cbc_device_info gpus[64];
    void (*list)(struct cbc_device_info *, size_t, size_t *, char *, size_t) =
        env && env->list_gpus ? env->list_gpus : cbc_cuda_list_gpus;
    why[0] = '\0';
    list(gpus, CBC_ARRAY_LEN(gpus), count, why, why_len);
    if (*count == 0)
        return CBC_OK;
    const unsigned *sup;
    size_t nsup;
    supported_list(env, &sup, &nsup);
    unsigned lo = 0, hi = 0;
    for (size_t i = 0; i < nsup; i++) {
        if (!lo || sup[i] < lo)
            lo = sup[i];
        if (sup[i] > hi)
            hi = sup[i];
    }
    struct cbc_buf d = {0};
    for (size_t i = 0; i < *count; i++) {
        unsigned a = (unsigned)(gpus[i].cc_major * 10 + gpus[i].cc_minor);
        cbc_buf_printf(&d, "%sGPU %d %s (%d.%d)", i ? "; " : "", gpus[i].ordinal, gpus[i].name,
                       gpus[i].cc_major, gpus[i].cc_minor);
        struct cbc_target t = {CBC_KIND_SASS, CBC_VARIANT_NONE, (uint16_t)a};
        if (!is_supported(env, a)) {
            if (a > hi) {
                /* newer than this nvcc: its highest PTX JIT-compiles there */
                t = (struct cbc_target){CBC_KIND_PTX, CBC_VARIANT_NONE, (uint16_t)hi};
                cbc_buf_printf(&d, " newer than %s: PTX compute_%u for JIT", nvcc_label(env), hi);
            } else {
                cbc_buf_release(&d);
                cbc_err_set(err, CBC_E_ARCH,
                            "arch '%s': GPU %d (%s, compute capability %d.%d) cannot be targeted by %s "
                            "(lowest target sm_%u)",
                            spec, gpus[i].ordinal, gpus[i].name, gpus[i].cc_major, gpus[i].cc_minor,
                            nvcc_label(env), lo);
                cbc_err_hint(err, "use an older CUDA toolkit for this GPU, or name other "
                             "targets with --arch");
                return CBC_E_ARCH;
            }
        }
        if (!tlist_add(out, t)) {
            cbc_buf_release(&d);
            return cbc_err_oom(err);
        }
    }
    *detail = cbc_buf_detach(&d);
    return CBC_OK;
}

static void trim_copy(const char *s, char *out, size_t len)
{
    while (isspace((unsigned char)*s))
        s++;
    snprintf(out, len, "%s", s);
    size_t n = strlen(out);
    while (n && isspace((unsigned char)out[n - 1]))
        out[--n] = '\0';
}

enum cbc_status cbc_arch_resolve(const char *spec, const struct cbc_arch_env *env,
                                 struct cbc_arch_choice *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    char s[1024];
    trim_copy(spec ? spec : "", s, sizeof s);
    struct tlist l = {0};
    enum cbc_status st = CBC_OK;
    char why[512] = "";
    char *detail = NULL;
    enum cbc_arch_rule rule = CBC_RULE_EXPLICIT;

    if (strcasecmp(s, "auto") == 0) {
        char cc[256] = "";
        if (env && env->compute_cap)
            trim_copy(env->compute_cap, cc, sizeof cc);
        if (cc[0]) {
            rule = CBC_RULE_ENV;
            char what[300];
            snprintf(what, sizeof what, "CUDA_COMPUTE_CAP='%s'", cc);
            st = parse_list(cc, what, env, &l, err);
            if (st == CBC_OK)
                detail = cbc_asprintf("CUDA_COMPUTE_CAP=%s", cc);
        } else {
            size_t count = 0;
            st = from_gpus(s, env, &l, &count, &detail, why, sizeof why, err);
            if (st == CBC_OK && count > 0) {
                rule = CBC_RULE_DRIVER;
            } else if (st == CBC_OK) {
                rule = CBC_RULE_DEFAULT;
                /* the default set, less what this nvcc cannot build */
                struct tlist all = {0};
                st = parse_list(CBC_ARCH_DEFAULT_SPEC, "arch (default set)", NULL, &all, err);
                for (size_t i = 0; st == CBC_OK && i < all.n; i++)
                    if (is_supported(env, all.v[i].arch) && !tlist_add(&l, all.v[i]))
                        st = cbc_err_oom(err);
                free(all.v);
                detail = cbc_asprintf("CUDA_COMPUTE_CAP unset and no GPU (%s): default set %s",
                                      why[0] ? why : "none found", CBC_ARCH_DEFAULT_SPEC);
            }
        }
    } else if (strcasecmp(s, "native") == 0) {
        rule = CBC_RULE_NATIVE;
        size_t count = 0;
        st = from_gpus(s, env, &l, &count, &detail, why, sizeof why, err);
        if (st == CBC_OK && count == 0) {
            st = cbc_err_set(err, CBC_E_ARCH, "arch 'native': no GPU found: %s",
                             why[0] ? why : "none");
            cbc_err_hint(err, "use --arch auto (CUDA_COMPUTE_CAP, else the GPUs, else a "
                         "default set) or name the targets, e.g. --arch 90");
        }
    } else if (strcasecmp(s, "all") == 0 || strcasecmp(s, "all-major") == 0) {
        rule = CBC_RULE_ALL;
        st = from_all(env, strcasecmp(s, "all-major") == 0, &l, err);
        detail = cbc_asprintf("%s from %s", s, nvcc_label(env));
    } else {
        char what[1100];
        snprintf(what, sizeof what, "arch '%s'", s);
        st = parse_list(s, what, env, &l, err);
    }

    if (st == CBC_OK && l.n == 0) {
        st = cbc_err_set(err, CBC_E_ARCH, "arch '%s' selects no target %s can build", s,
                         nvcc_label(env));
        cbc_err_hint(err, "name the targets with --arch, e.g. --arch 90");
    }
    if (st != CBC_OK || (!detail && rule != CBC_RULE_EXPLICIT)) {
        free(l.v);
        free(detail);
        return st != CBC_OK ? st : cbc_err_oom(err);
    }
    qsort(l.v, l.n, sizeof *l.v, cmp_targets);
    out->targets = l.v;
    out->n = l.n;
    out->rule = rule;
    out->spec = cbc_strdup(s);
    out->detail = detail;
    if (!out->spec) {
        cbc_arch_choice_release(out);
        return cbc_err_oom(err);
    }
    return CBC_OK;
}

void cbc_arch_choice_release(struct cbc_arch_choice *c)
{
    free(c->targets);
    free(c->spec);
    free(c->detail);
    memset(c, 0, sizeof *c);
}
