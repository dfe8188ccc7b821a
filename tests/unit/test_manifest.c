/* test_manifest.c: the bundle manifest: a deterministic round trip, and
 * errors that name the file and the field for every kind of damage. */
#include "manifest.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static struct cbc_dep deps[] = {{"/inc/a.h", {{1}}}, {"/inc/b.h", {{2}}}};
static char *flags[] = {"-O3", "-DX=1"};

static struct cbc_manifest sample(struct cbc_manifest_entry *ents)
{
    struct cbc_manifest m = {0};
    m.name = "k";
    m.source = "/src/k.cu";
    m.source_hash.b[0] = 9;
    m.deps = deps;
    m.n_deps = 2;
    m.nvcc = "/usr/local/cuda/bin/nvcc";
    m.nvcc_version = "13.0.88";
    m.host_cc = "/usr/bin/gcc";
    m.flags = flags;
    m.n_flags = 2;
    cbc_env_set(&m.env, "NVCC_PREPEND_FLAGS", NULL);
    cbc_env_set(&m.env, "NVCC_APPEND_FLAGS", "-lineinfo");
    cbc_env_set(&m.env, "PTXAS_FLAGS", "-O0");
    static char *lk_names[] = {"h.h", "sys/x.h"};
    static struct cbc_manifest_lookup lk[] = {{"/src/inc2", lk_names, 2}};
    m.lookups = lk;
    m.n_lookups = 1;
    m.cwd = "/build";
    m.arch_spec = "auto";
    m.arch_rule = "CUDA_COMPUTE_CAP";
    m.arch_detail = "CUDA_COMPUTE_CAP=90";
    m.compute_cap = "90";
    cbc_target_parse("sm_90", &ents[0].target);
    ents[0].file = "k.sm_90.cubin";
    ents[0].size = 3832;
    ents[0].key.b[1] = 1;
    cbc_target_parse("compute_90", &ents[1].target);
    ents[1].file = "k.compute_90.ptx";
    ents[1].size = 700;
    static size_t only_b[] = {1};
    ents[1].deps = only_b;
    ents[1].n_deps = 1;
    m.entries = ents;
    m.n = 2;
    return m;
}

Test(manifest, renders_deterministically_and_round_trips)
{
    struct cbc_manifest_entry ents[2] = {0};
    struct cbc_manifest m = sample(ents);
    char *a = cbc_manifest_render(&m), *b = cbc_manifest_render(&m);
    cr_assert_str_eq(a, b);
    struct cbc_manifest back;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_manifest_parse(a, strlen(a), "k.manifest.json", &back, &err), CBC_OK, "%s",
                 err.msg);
    char *c = cbc_manifest_render(&back);
    cr_assert_str_eq(a, c, "parse(render(m)) renders the same");
    cr_assert_eq(back.n, 2);
    cr_assert_str_eq(back.entries[1].file, "k.compute_90.ptx");
    cr_assert_eq(back.entries[1].target.kind, CBC_KIND_PTX);
    cr_assert_eq(back.env.n, 3);
    cr_assert_null(back.env.value[cbc_env_find(&back.env, "NVCC_PREPEND_FLAGS")]);
    cr_assert_str_eq(back.env.value[cbc_env_find(&back.env, "NVCC_APPEND_FLAGS")], "-lineinfo");
    cr_assert_str_eq(back.env.value[cbc_env_find(&back.env, "PTXAS_FLAGS")], "-O0");
    cr_assert_eq(back.n_lookups, 1);
    cr_assert_str_eq(back.lookups[0].dir, "/src/inc2");
    cr_assert_eq(back.lookups[0].n, 2);
    cr_assert_str_eq(back.lookups[0].names[1], "sys/x.h");
    size_t n;
    const struct cbc_dep **d = cbc_manifest_entry_deps(&back, &back.entries[1], &n);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(d[0]->path, "/inc/b.h");
    free(d);
    d = cbc_manifest_entry_deps(&back, &back.entries[0], &n);
    cr_assert_eq(n, 2);
    free(d);
    cbc_manifest_release(&back);
    free(a);
    free(b);
    free(c);
}

/* Replaces the first `from` in a rendered sample by `to` and expects a
 * parse error whose message holds `needle`. */
static void expect_bad(const char *from, const char *to, const char *needle, enum cbc_status want)
{
    struct cbc_manifest_entry ents[2] = {0};
    struct cbc_manifest m = sample(ents);
    char *text = cbc_manifest_render(&m);
    char *at = strstr(text, from);
    cr_assert_not_null(at, "sample lacks '%s'", from);
    struct cbc_buf b = {0};
    cbc_buf_append(&b, text, (size_t)(at - text));
    cbc_buf_puts(&b, to);
    cbc_buf_puts(&b, at + strlen(from));
    struct cbc_manifest back;
    struct cbc_err err = {0};
    /* without an error record too: the status alone must say it failed */
    cr_assert_eq(cbc_manifest_parse(b.p, b.len, "bad.manifest.json", &back, NULL), want,
                 "%s -> %s with a NULL err", from, to);
    cr_assert_eq(cbc_manifest_parse(b.p, b.len, "bad.manifest.json", &back, &err), want,
                 "%s -> %s", from, to);
    cr_assert(strstr(err.msg, "bad.manifest.json"), "names the file: %s", err.msg);
    cr_assert(strstr(err.msg, needle), "'%s' lacks '%s'", err.msg, needle);
    cbc_buf_release(&b);
    free(text);
}

Test(manifest, errors_name_the_file_and_the_field)
{
    expect_bad("\"sm_90\"", "\"sm_9x\"", "entries[0].target", CBC_E_FORMAT);
    expect_bad("\"k.sm_90.cubin\"", "\"../../etc/passwd\"", "entries[0].file", CBC_E_FORMAT);
    expect_bad("\"kind\":\t\"cubin\"", "\"kind\":\t\"ptx\"", "entries[0].kind", CBC_E_FORMAT);
    expect_bad("\"size\":\t3832", "\"size\":\t-5", "entries[0].size", CBC_E_FORMAT);
    expect_bad("\"xxh3\":\t\"09", "\"xxh3\":\t\"zz", "source.xxh3", CBC_E_FORMAT);
    expect_bad("\"cwd\"", "\"cwdx\"", "cwd: missing", CBC_E_FORMAT);
    expect_bad("\"deps\":\t[1]", "\"deps\":\t[7]", "entries[1].deps", CBC_E_FORMAT);
    expect_bad("\"version\":\t1", "\"version\":\t99", "version 99", CBC_E_UNSUPPORTED);
    expect_bad("\"cubincache-manifest\"", "\"other\"", "not a cubincache manifest", CBC_E_FORMAT);
    expect_bad("{", "[", "not valid JSON", CBC_E_FORMAT);
}

/* A manifest is untrusted input: what it names must be a bundle of ours,
 * never a path, a hidden file or C text. */
Test(manifest, names_and_files_are_checked_as_untrusted_input)
{
    expect_bad("\"name\":\t\"k\"", "\"name\":\t\"x */ int pwn; /*\"", "name: expected a bundle name",
               CBC_E_FORMAT);
    expect_bad("\"name\":\t\"k\"", "\"name\":\t\".hidden\"", "name: expected a bundle name",
               CBC_E_FORMAT);
    expect_bad("\"name\":\t\"k\"", "\"name\":\t\"..\"", "name: expected", CBC_E_FORMAT);
    expect_bad("\"k.sm_90.cubin\"", "\".k.sm_90.cubin\"", "entries[0].file", CBC_E_FORMAT);
    expect_bad("\"k.sm_90.cubin\"", "\"k\\n.cubin\"", "entries[0].file", CBC_E_FORMAT);
    expect_bad("\"k.compute_90.ptx\"", "\"k.sm_90.cubin\"", "the same file as an earlier entry",
               CBC_E_FORMAT);
}

/* Where the schema says integer, 1.9 is not 1 and 3832.5 no size. */
Test(manifest, numbers_are_integers_where_the_schema_says_integer)
{
    expect_bad("\"version\":\t1", "\"version\":\t1.9", "version: expected an integer",
               CBC_E_FORMAT);
    expect_bad("\"version\":\t1", "\"version\":\t\"1\"", "version: expected an integer",
               CBC_E_FORMAT);
    expect_bad("\"size\":\t3832", "\"size\":\t3832.5", "entries[0].size: expected a non-negative "
               "integer", CBC_E_FORMAT);
    expect_bad("\"size\":\t3832", "\"size\":\t1e300", "entries[0].size", CBC_E_FORMAT);
    expect_bad("\"deps\":\t[1]", "\"deps\":\t[0.5]", "entries[1].deps", CBC_E_FORMAT);
}

/* Parses the rendered sample with `tail` (n bytes, NULs included)
 * appended; returns the status, err filled. */
static enum cbc_status parse_with_tail(const char *tail, size_t n, struct cbc_err *err)
{
    struct cbc_manifest_entry ents[2] = {0};
    struct cbc_manifest m = sample(ents);
    char *text = cbc_manifest_render(&m);
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, text);
    cbc_buf_append(&b, tail, n);
    struct cbc_manifest back;
    enum cbc_status st = cbc_manifest_parse(b.p, b.len, "t.manifest.json", &back, err);
    if (st == CBC_OK)
        cbc_manifest_release(&back);
    cbc_buf_release(&b);
    free(text);
    return st;
}

/* The document is the whole file: bytes after it, NULs or not, are
 * damage (or a second document), never ignored. */
Test(manifest, nothing_may_follow_the_document)
{
    struct cbc_err err = {0};
    cr_assert_eq(parse_with_tail(" \n\t\r\n", 5, &err), CBC_OK, "%s", err.msg);
    cr_assert_eq(parse_with_tail("\0garbage", 8, &err), CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "t.manifest.json") && strstr(err.msg, "is a NUL"), "%s", err.msg);
    cr_assert_eq(parse_with_tail("\0\0\0", 3, &err), CBC_E_FORMAT);
    cr_assert_eq(parse_with_tail("{\"format\": 1}", 13, &err), CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "after the JSON document"), "%s", err.msg);
    cr_assert_eq(parse_with_tail("x", 1, &err), CBC_E_FORMAT);
}
