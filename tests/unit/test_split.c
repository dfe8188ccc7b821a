/* test_split.c: the dryrun classifier of the split compile, on nvcc 13's
 * real --dryrun text (tests/data/dryrun, from `nvcc --dryrun` here with
 * PATH shortened): which commands run split, with which virtual archs, and
 * that a step it does not know makes the command run whole. */
#include "split.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/dryrun/%s", getenv("CBC_TESTDATA"), name);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    buf[*len] = '\0';
    fclose(f);
    return buf;
}

static struct cbc_split_plan plan_of(const char *text, size_t len)
{
    struct cbc_split_plan p;
    cr_assert_eq(cbc_split_plan(text, len, &p, NULL), CBC_OK);
    return p;
}

Test(split, real_dryruns_plan_their_archs)
{
    static const struct { const char *file; size_t n; unsigned archs[2]; size_t renames; } c[] = {
        {"object-2arch.txt", 2, {86, 90}, 0},
        {"object-1arch.txt", 1, {90, 0}, 1},
        {"object-rdc.txt", 2, {89, 90}, 0},
        {"object-md.txt", 1, {90, 0}, 1},
        {"fatbin-2sass.txt", 1, {80, 0}, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        size_t len;
        char *t = slurp(c[i].file, &len);
        struct cbc_split_plan p = plan_of(t, len);
        cr_assert(p.ok, "%s does not run split", c[i].file);
        cr_assert_eq(p.n_archs, c[i].n, "%s: %zu archs", c[i].file, p.n_archs);
        for (size_t k = 0; k < c[i].n; k++)
            cr_assert_eq(p.archs[k], c[i].archs[k], "%s arch %zu", c[i].file, k);
        cr_assert_geq(p.renames, c[i].renames, "%s: a one-arch run renames its files",
                      c[i].file);
        free(t);
    }
}

Test(split, an_unknown_step_or_shape_runs_whole)
{
    size_t len;
    char *t = slurp("object-2arch.txt", &len);
    /* a step this does not know, before the host compile */
    char *odd = malloc(len + 64);
    char *host = strstr(t, "#$ fatbinary");
    cr_assert(host);
    size_t at = (size_t)(host - t);
    memcpy(odd, t, at);
    int n = sprintf(odd + at, "#$ some-new-tool --do-things\n");
    memcpy(odd + at + n, t + at, len - at);
    cr_assert_not(plan_of(odd, len + (size_t)n).ok);
    /* a line that is no step */
    memcpy(odd, t, len);
    memcpy(odd + len, "nvcc warning : something\n", 25);
    cr_assert_not(plan_of(odd, len + 25).ok);
    cr_assert_not(plan_of("", 0).ok, "nothing at all");
    /* a plan with no device compile (fuzz_dryrun found it: a cut dryrun) */
    size_t hl;
    char *plain = slurp("object-2arch.txt", &hl);
    char *keep = malloc(hl + 1), *w = keep;
    for (char *line = strtok(plain, "\n"); line; line = strtok(NULL, "\n"))
        if (!strstr(line, "cicc") && !strstr(line, "ptxas") && !strstr(line, "__CUDA_ARCH__=") &&
            !strstr(line, "fatbinary"))
            w += sprintf(w, "%s\n", line);
    cr_assert_not(plan_of(keep, (size_t)(w - keep)).ok, "no virtual arch: nothing to split");
    free(keep);
    free(plain);
    free(odd);
    free(t);
}

Test(split, every_cut_of_a_real_dryrun_is_read_safely)
{
    size_t len;
    char *t = slurp("object-2arch.txt", &len);
    for (size_t cut = 0; cut < len; cut += 7) {
        char *c = malloc(cut ? cut : 1);
        memcpy(c, t, cut);
        struct cbc_split_plan p;
        cr_assert_eq(cbc_split_plan(c, cut, &p, NULL), CBC_OK);
        free(c);
    }
    free(t);
}
