/* ptx.c: the few facts of a PTX text the tools need: its ISA version
 * (.version), its target (.target sm_XY[a|f]) and how many kernels
 * (.entry) it defines.
 *
 * Only directives at the start of a line (after blanks) count; comments are
 * not parsed, which is fine for what nvcc writes. cbc_ptx_header stops at
 * the first .version and .target (the top of what nvcc writes), for callers
 * that need no kernel count: a bundle open must not scan megabytes. The input need not be
 * NUL-terminated and may be NUL-padded, as inside fatbins.
 */
#include "binfmt_int.h"

#include <ctype.h>

static bool directive(const char *line, size_t n, const char *word, size_t *after)
{
    size_t w = strlen(word);
    if (n < w || memcmp(line, word, w) != 0)
        return false;
    if (n > w && !isspace((unsigned char)line[w]))
        return false;
    *after = w;
    return true;
}

static enum cbc_status parse(const uint8_t *data, size_t len, const char *name, bool header_only,
                             struct cbc_ptx_info *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    const char *text = (const char *)data;
    size_t end = len;
    while (end > 0 && text[end - 1] == '\0')
        end--;
    bool have_version = false, have_target = false;
    size_t line_start = 0;
    while (line_start < end) {
        const char *nl = memchr(text + line_start, '\n', end - line_start);
        size_t eol = nl ? (size_t)(nl - text) : end;
        size_t p = line_start;
        while (p < eol && (text[p] == ' ' || text[p] == '\t'))
            p++;
        const char *line = text + p;
        size_t n = eol - p, a;
        if (!have_version && directive(line, n, ".version", &a)) {
            while (a < n && isspace((unsigned char)line[a]))
                a++;
            unsigned maj = 0, min = 0;
            size_t d = a;
            while (d < n && isdigit((unsigned char)line[d]) && d - a < 3)
                maj = maj * 10 + (unsigned)(line[d++] - '0');
            if (d == a || d >= n || line[d] != '.' || d + 1 >= n ||
                !isdigit((unsigned char)line[d + 1]))
                return cbc_fmt_err(err, CBC_E_FORMAT, name, p,
                                   "'.version' is not followed by MAJOR.MINOR");
            min = (unsigned)(line[d + 1] - '0');
            out->isa = maj * 10 + min;
            have_version = true;
        } else if (!have_target && directive(line, n, ".target", &a)) {
            while (a < n && isspace((unsigned char)line[a]))
                a++;
            if (n - a < 5 || memcmp(line + a, "sm_", 3) != 0)
                return cbc_fmt_err(err, CBC_E_FORMAT, name, p, "'.target' does not name an sm_XY");
            size_t d = a + 3;
            unsigned arch = 0;
            while (d < n && isdigit((unsigned char)line[d]) && d - a < 7)
                arch = arch * 10 + (unsigned)(line[d++] - '0');
            if (d == a + 3 || arch < 10)
                return cbc_fmt_err(err, CBC_E_FORMAT, name, p, "'.target' does not name an sm_XY");
            out->arch = arch;
            out->variant = d < n ? cbc_variant_of(line[d]) : CBC_VARIANT_NONE;
            have_target = true;
        } else if ((n > 7 && memcmp(line, ".entry", 6) == 0 && isspace((unsigned char)line[6])) ||
                   (n > 14 && memcmp(line, ".visible .entry", 15) == 0)) {
            out->n_entries++;
        }
        if (header_only && have_version && have_target)
            break;
        line_start = eol + 1;
    }
    if (!have_version)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 0, "no '.version' directive: not PTX");
    if (!have_target)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 0, "no '.target' directive in the PTX");
    return CBC_OK;
}

struct cbc_target cbc_ptx_target(const struct cbc_ptx_info *info)
{
    return (struct cbc_target){CBC_KIND_PTX, info->variant, (uint16_t)info->arch};
}

enum cbc_status cbc_ptx_parse(const uint8_t *data, size_t len, const char *name,
                              struct cbc_ptx_info *out, struct cbc_err *err)
{
    return parse(data, len, name, false, out, err);
}

enum cbc_status cbc_ptx_header(const uint8_t *data, size_t len, const char *name,
                               struct cbc_ptx_info *out, struct cbc_err *err)
{
    return parse(data, len, name, true, out, err);
}
