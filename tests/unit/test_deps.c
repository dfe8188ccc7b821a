/* test_deps.c: reading nvcc's depfiles (escapes, continuations, relative
 * paths) and writing ninja's, and lexical path normalisation. */
#include "key.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static void parse(const char *text, const char *exclude, char ***v, size_t *n)
{
    cr_assert_eq(cbc_depfile_parse(text, strlen(text), "/b", exclude, v, n, "t.d", NULL), CBC_OK,
                 "parse of: %s", text);
}

Test(deps, reads_nvcc_output_with_continuations_sorted_and_unique)
{
    char **v;
    size_t n;
    parse("x.cubin : k.cu \\\n    /usr/include/a.h \\\n    h.cuh \\\n    /usr/include/a.h\n", "/b/k.cu",
          &v, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(v[0], "/b/h.cuh");
    cr_assert_str_eq(v[1], "/usr/include/a.h");
    cbc_paths_free(v, n);
}

Test(deps, unescapes_spaces_hashes_and_dollars_and_folds_dots)
{
    char **v;
    size_t n;
    parse("o: my\\ dir/a\\ b.h c\\#1.h d$$x.h ../up/e.h ./f.h\n", NULL, &v, &n);
    cr_assert_eq(n, 5);
    cr_assert_str_eq(v[0], "/b/c#1.h");
    cr_assert_str_eq(v[1], "/b/d$x.h");
    cr_assert_str_eq(v[2], "/b/f.h");
    cr_assert_str_eq(v[3], "/b/my dir/a b.h");
    cr_assert_str_eq(v[4], "/up/e.h");
    cbc_paths_free(v, n);
}

Test(deps, takes_only_the_first_rule_and_handles_crlf)
{
    char **v;
    size_t n;
    parse("o: a.h \\\r\n b.h\r\nb.h:\nother: c.h\n", NULL, &v, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(v[0], "/b/a.h");
    cr_assert_str_eq(v[1], "/b/b.h");
    cbc_paths_free(v, n);
}

Test(deps, rejects_text_without_a_rule)
{
    char **v;
    size_t n;
    struct cbc_err err = {0};
    const char *t = "no rule here";
    cr_assert_eq(cbc_depfile_parse(t, strlen(t), "/b", NULL, &v, &n, "bad.d", &err), CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "bad.d"), "%s", err.msg);
}

Test(deps, escaping_round_trips)
{
    const char *paths[] = {"/a b/c#d$e.h", "/plain.h"};
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, "out:");
    for (int i = 0; i < 2; i++) {
        cbc_buf_puts(&b, " ");
        cbc_depfile_escape(&b, paths[i]);
    }
    cbc_buf_puts(&b, "\n");
    char **v;
    size_t n;
    parse(b.p, NULL, &v, &n);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(v[0], paths[0]);
    cr_assert_str_eq(v[1], paths[1]);
    cbc_paths_free(v, n);
    cbc_buf_release(&b);
}

Test(path, normalises_lexically)
{
    struct {
        const char *base, *in, *want;
    } v[] = {
        {"/work/main/build", "../kernels/k.cu", "/work/main/kernels/k.cu"},
        {"/a/b", "./c/./d", "/a/b/c/d"},
        {"/a/b", "../../../x", "/x"},
        {"/", "a//b/", "/a/b"},
        {"/q", "/abs/../p", "/p"},
        {"/a", "..", "/"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        char *r = cbc_path_abs_from(v[i].base, v[i].in);
        cr_assert_str_eq(r, v[i].want, "%s + %s", v[i].base, v[i].in);
        free(r);
    }
    char *d = cbc_path_dir("a/b/c.cu"), *s = cbc_path_stem("a/b/c.x.cu");
    cr_assert_str_eq(d, "a/b");
    cr_assert_str_eq(s, "c.x");
    cr_assert_str_eq(cbc_path_base("a/b/c.cu"), "c.cu");
    free(d);
    free(s);
}
