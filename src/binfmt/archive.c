/* archive.c: static libraries (ar archives), whose members are the
 * objects a program links; each member's CUDA sections are read like any
 * host ELF's.
 *
 * Layout: the magic "!<arch>\n", then members, each a 60-byte header
 * (name[16] date[12] uid[6] gid[6] mode[8] size[10] "`\n", sizes in
 * decimal text) followed by `size` bytes and a pad byte to an even offset.
 * Names: "foo.o/" (GNU), "/123" (GNU, an offset into the "//" table of
 * long names), "#1/N" (BSD: the name is the first N bytes of the data),
 * and the symbol tables "/", "/SYM64/" and "__.SYMDEF" are skipped.
 * Every size and offset is checked against the input.
 */
#include "binfmt_int.h"
#include "elfextra.h"

#include <stdlib.h>

#define AR_MAGIC "!<arch>\n"
#define AR_HDR 60

static bool dec(const uint8_t *p, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0, digits = 0;
    for (; i < n && p[i] == ' '; i++)
        ;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, digits++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    for (; i < n; i++)
        if (p[i] != ' ')
            return false;
    *out = v;
    return digits > 0;
}

void cbc_ar_release(struct cbc_ar *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i].name);
    free(a->v);
    memset(a, 0, sizeof *a);
}

enum cbc_status cbc_ar_parse(const uint8_t *data, size_t len, const char *name, struct cbc_ar *out,
                             struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 8 || memcmp(data, AR_MAGIC, 8) != 0)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, 0, "expected the ar magic '!<arch>'");
    struct cbc_ar a = {0};
    size_t cap = 0;
    uint64_t off = 8, longs_off = 0, longs_len = 0;
    enum cbc_status st = CBC_OK;
    while (off < len && st == CBC_OK) {
        if (len - off < AR_HDR) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, off, "member header needs %d bytes, %llu left",
                             AR_HDR, (unsigned long long)(len - off));
            break;
        }
        const uint8_t *h = data + off;
        uint64_t size;
        if (h[58] != '`' || h[59] != '\n' || !dec(h + 48, 10, &size)) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, off, "malformed member header");
            break;
        }
        uint64_t body = off + AR_HDR;
        if (!cbc_in_bounds(len, body, size)) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, off + 48,
                             "member of %llu bytes runs past the end of the archive (%zu bytes)",
                             (unsigned long long)size, len);
            break;
        }
        char nm[300];
        size_t nl = 16;
        while (nl && h[nl - 1] == ' ')
            nl--;
        memcpy(nm, h, nl);
        nm[nl] = '\0';
        uint64_t dstart = body, dsize = size;
        bool skip = false;
        if (!strcmp(nm, "/") || !strcmp(nm, "/SYM64/") || !strncmp(nm, "__.SYMDEF", 9)) {
            skip = true;
        } else if (!strcmp(nm, "//")) {
            longs_off = body;
            longs_len = size;
            skip = true;
        } else if (nm[0] == '/' && nm[1] >= '0' && nm[1] <= '9') {
            uint64_t lo;
            if (!dec((const uint8_t *)nm + 1, strlen(nm) - 1, &lo) || lo >= longs_len) {
                st = cbc_fmt_err(err, CBC_E_FORMAT, name, off, "long member name '%s' lies outside "
                                 "the name table", nm);
                break;
            }
            const uint8_t *ln = data + longs_off + lo;
            size_t k = 0;
            while (lo + k < longs_len && ln[k] != '/' && ln[k] != '\n' && k < sizeof nm - 1)
                k++;
            memcpy(nm, ln, k);
            nm[k] = '\0';
        } else if (!strncmp(nm, "#1/", 3)) {
            uint64_t bl;
            if (!dec((const uint8_t *)nm + 3, strlen(nm) - 3, &bl) || bl > size ||
                bl >= sizeof nm) {
                st = cbc_fmt_err(err, CBC_E_FORMAT, name, off, "BSD member name length '%s'", nm);
                break;
            }
            memcpy(nm, data + body, bl);
            nm[bl] = '\0';
            nm[strnlen(nm, bl)] = '\0';
            dstart += bl;
            dsize -= bl;
        } else if (nl && nm[nl - 1] == '/') {
            nm[nl - 1] = '\0';
        }
        if (!skip) {
            char *copy = cbc_strdup(nm);
            if (!copy || !cbc_grow(&a.v, a.n, &cap, sizeof *a.v, 8)) {
                free(copy);
                st = cbc_err_oom(err);
                break;
            }
            a.v[a.n++] = (struct cbc_ar_member){copy, dstart, dsize, data + dstart};
        }
        off = body + size + (size & 1);
    }
    if (st != CBC_OK) {
        cbc_ar_release(&a);
        return st;
    }
    *out = a;
    return CBC_OK;
}
