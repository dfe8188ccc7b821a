/* escape.c: text that is safe to show on a terminal.
 *
 * A message or a listing may quote a file name, bytes of a file, an
 * environment value or what the driver says; on a terminal such text could
 * carry a control sequence (ESC, or a C1 control such as U+009B CSI, which
 * terminals reading UTF-8 obey) that retitles, clears or rewrites it.
 * Everything that is not printable is shown as a visible escape instead:
 * \n, \t and \r, \xNN for the other C0 controls and DEL, and \xNN for each
 * byte of a C1 control (U+0080..U+009F) and of anything that is not valid
 * UTF-8 (stray continuation bytes, overlong forms, surrogates, code points
 * past U+10FFFF, truncated sequences). Printable ASCII and valid UTF-8 from
 * U+00A0 up pass unchanged.
 *
 * Invariant: the output is printable ASCII plus valid UTF-8 without C1, so
 * escaping escaped text changes nothing (a message escaped by the library
 * and again by the command that prints it reads the same).
 */
#include "common.h"

#include <string.h>

/* The length of the valid UTF-8 sequence at s (n bytes left) that encodes a
 * printable code point (U+00A0 and up), or 0. */
static size_t utf8_printable(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
               : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (len == 0 || n < len)
        return 0;
    /* the second byte's range excludes overlong forms, surrogates and
     * code points past U+10FFFF (RFC 3629, section 4) */
    unsigned char lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
    if (c == 0xc2)
        lo = 0xa0; /* U+0080..U+009F: the C1 controls */
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return len;
}

size_t cbc_escape_unit(const char *s, size_t n, char out[CBC_ESCAPE_UNIT_MAX], size_t *used)
{
    const unsigned char *u = (const unsigned char *)s;
    static const char hex[] = "0123456789abcdef";
    unsigned char c = u[0];
    *used = 1;
    if (c >= 0x20 && c < 0x7f) {
        out[0] = (char)c;
        return 1;
    }
    if (c == '\n' || c == '\t' || c == '\r') {
        out[0] = '\\';
        out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        return 2;
    }
    size_t len = c >= 0x80 ? utf8_printable(u, n) : 0;
    if (len) {
        memcpy(out, s, len);
        *used = len;
        return len;
    }
    /* a C1 control escapes both of its bytes, so neither reaches the
     * terminal; anything else invalid one byte at a time */
    size_t k = c == 0xc2 && n >= 2 && u[1] >= 0x80 && u[1] <= 0x9f ? 2 : 1;
    for (size_t i = 0; i < k; i++) {
        out[4 * i] = '\\';
        out[4 * i + 1] = 'x';
        out[4 * i + 2] = hex[u[i] >> 4];
        out[4 * i + 3] = hex[u[i] & 15];
    }
    *used = k;
    return 4 * k;
}

bool cbc_escape(char *out, size_t len, const char *s)
{
    if (len == 0)
        return false;
    /* `safe`: the last unit boundary that leaves room for "...", where a
     * text that does not fit is cut, so no escape or UTF-8 sequence is
     * ever cut in two */
    size_t n = s ? strlen(s) : 0, at = 0, safe = 0;
    while (n) {
        char unit[CBC_ESCAPE_UNIT_MAX];
        size_t used, k = cbc_escape_unit(s, n, unit, &used);
        if (at + k > len - 1) {
            if (len < 4)
                out[0] = '\0';
            else
                memcpy(out + safe, "...", 4);
            return false;
        }
        memcpy(out + at, unit, k);
        at += k;
        if (len >= 4 && at <= len - 4)
            safe = at;
        s += used;
        n -= used;
    }
    out[at] = '\0';
    return true;
}
