/* result.c: the result container of cache.h (format there): the named
 * members a stored compile is made of. Decoding copies, so a result
 * outlives the bytes it came from; every count and length is checked
 * against what remains before anything is allocated.
 */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

#define MAGIC "CBCRSLT1"

static bool name_ok(const char *name, size_t n)
{
    return n > 0 && n <= CBC_RESULT_NAME_MAX && !memchr(name, 0, n);
}

static long find(const struct cbc_result *r, const char *name, size_t n)
{
    for (size_t i = 0; i < r->n; i++)
        if (strlen(r->m[i].name) == n && !memcmp(r->m[i].name, name, n))
            return (long)i;
    return -1;
}

static bool add(struct cbc_result *r, const char *name, size_t nl, const void *data, size_t len)
{
    if (!name_ok(name, nl))
        return false;
    long at = find(r, name, nl);
    if (at < 0 && r->n == CBC_RESULT_MAX)
        return false;
    uint8_t *d = malloc(len ? len : 1);
    char *nm = at < 0 ? cbc_strndup(name, nl) : NULL;
    if (!d || (at < 0 && !nm)) {
        free(d);
        free(nm);
        return false;
    }
    if (len)
        memcpy(d, data, len);
    CBC_ASSERT(at >= 0 || find(r, name, nl) < 0); /* names are unique */
    struct cbc_member *m = at >= 0 ? &r->m[at] : &r->m[r->n++];
    if (at >= 0)
        free(m->data);
    else
        m->name = nm;
    m->data = d;
    m->len = len;
    return true;
}

bool cbc_result_add(struct cbc_result *r, const char *name, const void *data, size_t len)
{
    return add(r, name, strlen(name), data, len);
}

const struct cbc_member *cbc_result_get(const struct cbc_result *r, const char *name)
{
    long i = find(r, name, strlen(name));
    return i < 0 ? NULL : &r->m[i];
}

uint8_t *cbc_result_encode(const struct cbc_result *r, size_t *len)
{
    struct cbc_buf b = {0};
    uint8_t h[8];
    cbc_buf_append(&b, MAGIC, 8);
    cbc_wr32(h, (uint32_t)r->n);
    cbc_buf_append(&b, h, 4);
    for (size_t i = 0; i < r->n; i++) {
        size_t nl = strlen(r->m[i].name);
        uint8_t l2[2] = {(uint8_t)nl, (uint8_t)(nl >> 8)};
        cbc_buf_append(&b, l2, 2);
        cbc_buf_append(&b, r->m[i].name, nl);
        cbc_wr64(h, r->m[i].len);
        cbc_buf_append(&b, h, 8);
        cbc_buf_append(&b, r->m[i].data, r->m[i].len);
    }
    if (b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    *len = b.len;
    return (uint8_t *)b.p;
}

enum cbc_status cbc_result_decode(const uint8_t *d, size_t len, struct cbc_result *r,
                                  struct cbc_err *err)
{
    memset(r, 0, sizeof *r);
    if (len < 12 || memcmp(d, MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "cached result: not a result container");
    uint32_t n = cbc_rd32(d + 8);
    size_t off = 12;
    if (n > CBC_RESULT_MAX)
        return cbc_err_set(err, CBC_E_FORMAT, "cached result: %u members (at most %d)", n,
                           CBC_RESULT_MAX);
    for (uint32_t i = 0; i < n; i++) {
        if (!cbc_in_bounds(len, off, 2))
            goto bad;
        size_t nl = cbc_rd16(d + off);
        off += 2;
        if (!cbc_in_bounds(len, off, (uint64_t)nl + 8))
            goto bad;
        const char *name = (const char *)d + off;
        uint64_t dl = cbc_rd64(d + off + nl);
        size_t at = off + nl + 8;
        if (!name_ok(name, nl) || find(r, name, nl) >= 0 || !cbc_in_bounds(len, at, dl))
            goto bad;
        if (!add(r, name, nl, d + at, (size_t)dl)) {
            cbc_result_release(r);
            return cbc_err_oom(err);
        }
        off = at + (size_t)dl;
    }
    if (off != len)
        goto bad;
    return CBC_OK;
bad:
    cbc_result_release(r);
    return cbc_err_set(err, CBC_E_FORMAT, "cached result: truncated or inconsistent at byte %zu",
                       off);
}

void cbc_result_release(struct cbc_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->m[i].name);
        free(r->m[i].data);
    }
    memset(r, 0, sizeof *r);
}
