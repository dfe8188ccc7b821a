/* test_common.c: the shared helpers whose behaviour every message relies
 * on: escaping what a message quotes (no byte a terminal would obey gets
 * through: C0, DEL, C1 controls, invalid UTF-8), and error texts that are
 * escaped where they are made and say so when they are cut short. */
#include "common.h"

#include <criterion/criterion.h>
#include <string.h>

static const char *esc(const char *s)
{
    static char out[256];
    cbc_escape(out, sizeof out, s);
    return out;
}

/* No byte of the text is a control a terminal acts on, nor the start of a
 * C1 control in UTF-8 (0xc2 0x80..0x9f). */
static void assert_inert(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        cr_assert(*p >= 0x20 && *p != 0x7f, "raw control 0x%02x in '%s'", *p, s);
        cr_assert(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "raw C1 control in '%s'", s);
    }
}

Test(common, escape_shows_c0_controls_and_del)
{
    cr_assert_str_eq(esc("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    cr_assert_str_eq(esc("\033]0;owned\007"), "\\x1b]0;owned\\x07");
    cr_assert_str_eq(esc("x\177y"), "x\\x7fy");
}

Test(common, escape_shows_c1_controls_in_utf8_and_raw)
{
    /* U+009B CSI and U+0085 NEL as UTF-8: both bytes escaped */
    cr_assert_str_eq(esc("a\xc2\x9b" "2Jb"), "a\\xc2\\x9b2Jb");
    cr_assert_str_eq(esc("\xc2\x85"), "\\xc2\\x85");
    /* the same controls as single Latin-1 bytes: invalid UTF-8 */
    cr_assert_str_eq(esc("\x9b" "2J"), "\\x9b2J");
}

Test(common, escape_shows_every_kind_of_invalid_utf8)
{
    cr_assert_str_eq(esc("\xc0\xaf"), "\\xc0\\xaf");             /* overlong '/' */
    cr_assert_str_eq(esc("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");    /* overlong, 3 bytes */
    cr_assert_str_eq(esc("\xed\xa0\x80"), "\\xed\\xa0\\x80");    /* a surrogate */
    cr_assert_str_eq(esc("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
    cr_assert_str_eq(esc("\xe2\x82"), "\\xe2\\x82");             /* truncated */
    cr_assert_str_eq(esc("\xff\xfe"), "\\xff\\xfe");
}

Test(common, escape_keeps_printable_text_and_valid_utf8)
{
    const char *ok = "/opt/k\xc3\xa9rnels/\xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0x"; /* é € 😀 NBSP */
    cr_assert_str_eq(esc(ok), ok);
    cr_assert_str_eq(esc("plain 'text' \\ here"), "plain 'text' \\ here");
}

Test(common, escaped_text_escapes_to_itself)
{
    const char *hostile = "\033[2J\xc2\x9b\x9b\xed\xa0\x80\n\xc3\xa9";
    char once[256], twice[256];
    cbc_escape(once, sizeof once, hostile);
    cbc_escape(twice, sizeof twice, once);
    cr_assert_str_eq(once, twice);
    assert_inert(once);
}

Test(common, a_cut_escape_ends_in_a_mark_between_units)
{
    char out[12];
    cr_assert(cbc_escape(out, sizeof out, "abcdefgh"));
    cr_assert_str_eq(out, "abcdefgh");
    cr_assert_not(cbc_escape(out, sizeof out, "abcdefghijklmnop"));
    cr_assert_str_eq(out, "abcdefgh...");
    /* never half an escape or half a UTF-8 sequence before the mark */
    cr_assert_not(cbc_escape(out, sizeof out, "abcdef\033xyz"));
    cr_assert_str_eq(out, "abcdef...");
    cr_assert_not(cbc_escape(out, sizeof out, "abcdefg\xe2\x82\xacxyz"));
    cr_assert_str_eq(out, "abcdefg...");
}

Test(common, error_texts_are_escaped_where_they_are_made)
{
    struct cbc_err err = {0};
    cbc_err_set(&err, CBC_E_FORMAT, "'%s': bad", "k\033]0;x\007.cubin");
    cr_assert_str_eq(err.msg, "'k\\x1b]0;x\\x07.cubin': bad");
    cbc_err_hint(&err, "rebuild '%s'", "\xc2\x9b" "2J");
    cr_assert_str_eq(err.remedy, "rebuild '\\xc2\\x9b2J'");
    cbc_err_prefix(&err, "bundle '%s'", "b\n");
    cr_assert_str_eq(err.msg, "bundle 'b\\n': 'k\\x1b]0;x\\x07.cubin': bad");
}

Test(common, an_error_text_cut_to_fit_says_so)
{
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    struct cbc_err err = {0};
    cbc_err_set(&err, CBC_E_NOT_FOUND, "not found in %s", big);
    size_t n = strlen(err.msg);
    cr_assert_eq(n, CBC_ERR_MSG_MAX - 1);
    cr_assert_str_eq(err.msg + n - 3, "...");
    cbc_err_prefix(&err, "head");
    cr_assert_str_eq(err.msg + strlen(err.msg) - 3, "...");
    cr_assert_eq(strncmp(err.msg, "head: not found in xx", 21), 0, "%s", err.msg);
    cbc_err_hint(&err, "%s", big);
    cr_assert_eq(strlen(err.remedy), CBC_ERR_REMEDY_MAX - 1);
    cr_assert_str_eq(err.remedy + CBC_ERR_REMEDY_MAX - 4, "...");
}
