/* embedded.c: reads and writes the records `cubincache embed` puts in a
 * program's .cbc_bundle section (layout in cubincache/binfmt.h). The record
 * is the one description of an embedded bundle: a deploy check reads it
 * from the binary, and the loader reads the same record at run time
 * (cbc_bundle_open_embedded checks the generated struct against it), so
 * the two see the images exactly alike.
 *
 * Invariants: every size and offset is checked against the record before
 * it is used, and the record against the section; names and targets must
 * be NUL-terminated inside their fields; images lie inside their record,
 * after its descriptors. Results point into the input. What the writer
 * lays out, the reader accepts (tests/unit/test_binfmt.c round-trips it).
 */
#include "binfmt_int.h"
#include "embedded.h"

#include <stdlib.h>

static enum cbc_status push(struct cbc_embedded_list *l, size_t *cap,
                            const struct cbc_embedded_entry *e, struct cbc_err *err)
{
    if (!cbc_grow(&l->v, l->n, cap, sizeof *l->v, 8))
        return cbc_err_oom(err);
    l->v[l->n++] = *e;
    return CBC_OK;
}

/* Hash and label of one image, against its descriptor. */
enum cbc_status cbc_embedded_verify(const struct cbc_embedded_entry *e, const char *name,
                                    struct cbc_err *err)
{
    const char *hex = e->xxh3;
    char tn[CBC_TARGET_NAME_MAX];
    cbc_target_name(&e->target, tn);
    struct cbc_hash h;
    char got[CBC_HASH_HEX_LEN + 1];
    cbc_hash_bytes(e->data, (size_t)e->size, &h);
    cbc_hash_hex(&h, got);
    if (memcmp(got, hex, CBC_HASH_HEX_LEN) != 0)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset,
                           "image %s of embedded bundle '%s' is corrupt: its content hash is %s, "
                           "the bundle recorded %s",
                           tn, e->bundle, got, hex);
    struct cbc_err e2 = {0};
    enum cbc_status st = cbc_binfmt_verify_target(e->data, (size_t)e->size, &e->target, NULL, NULL,
                                                  &e2);
    if (st == CBC_E_VERIFY)
        return cbc_fmt_err(err, CBC_E_VERIFY, name, e->offset,
                           "image %s of embedded bundle '%s' is mislabeled: %s", tn, e->bundle,
                           e2.msg);
    if (st != CBC_OK)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset,
                           "image %s of embedded bundle '%s' is corrupt: %s", tn, e->bundle, e2.msg);
    return CBC_OK;
}

static enum cbc_status record(const uint8_t *data, size_t len, uint64_t base, uint64_t pos,
                              const char *name, bool verify, size_t index,
                              struct cbc_embedded_list *l, size_t *cap, uint64_t *size,
                              struct cbc_err *err)
{
    const uint8_t *r = data + pos;
    const uint64_t at = base + pos, room = len - pos;
    if (room < CBC_EMBED_HEADER || memcmp(r, CBC_EMBED_MAGIC, 8) != 0)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, at,
                           "expected an embedded bundle record (magic \"CBCBNDL\\1\", %u-byte "
                           "header) or zero padding",
                           CBC_EMBED_HEADER);
    uint64_t rs = cbc_rd64(r + 8);
    uint32_t n = cbc_rd32(r + 16), ns = cbc_rd32(r + 20);
    if (rs < CBC_EMBED_HEADER || rs % 8 || rs > room)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, at + 8,
                           "record size %llu: expected a multiple of 8 between %u and the %llu "
                           "bytes left in the section",
                           (unsigned long long)rs, CBC_EMBED_HEADER, (unsigned long long)room);
    if (ns < 8 || ns % 8 || ns > rs - CBC_EMBED_HEADER)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, at + 20,
                           "name size %u: expected a multiple of 8, at least 8, inside the "
                           "%llu-byte record",
                           ns, (unsigned long long)rs);
    const uint64_t desc0 = CBC_EMBED_HEADER + (uint64_t)ns;
    if (n > (rs - desc0) / CBC_EMBED_DESC)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, at + 16,
                           "%u images do not fit their descriptors in the %llu-byte record", n,
                           (unsigned long long)rs);
    const char *bname = (const char *)r + CBC_EMBED_HEADER;
    if (!memchr(bname, 0, ns))
        return cbc_fmt_err(err, CBC_E_FORMAT, name, at + CBC_EMBED_HEADER,
                           "the bundle name is not NUL-terminated inside its %u bytes", ns);
    const uint64_t data0 = desc0 + (uint64_t)n * CBC_EMBED_DESC;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *d = r + desc0 + (uint64_t)i * CBC_EMBED_DESC;
        const uint64_t dat = at + desc0 + (uint64_t)i * CBC_EMBED_DESC;
        struct cbc_embedded_entry e = {0};
        e.bundle = bname;
        e.record = index;
        if (!memchr(d, 0, 16) || !cbc_target_parse((const char *)d, &e.target))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, dat,
                               "descriptor %u of bundle '%s': expected a target such as sm_90 or "
                               "compute_120, NUL-terminated in 16 bytes",
                               i, bname);
        uint64_t off = cbc_rd64(d + 16), sz = cbc_rd64(d + 24);
        if (off < data0 || off > rs || sz > rs - off)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, dat + 16,
                               "image %s of bundle '%s': %llu bytes at record offset %llu lie "
                               "outside the image area [%llu, %llu)",
                               (const char *)d, bname, (unsigned long long)sz,
                               (unsigned long long)off, (unsigned long long)data0,
                               (unsigned long long)rs);
        const char *hex = (const char *)d + 32;
        for (int k = 0; k < CBC_HASH_HEX_LEN; k++)
            if (!((hex[k] >= '0' && hex[k] <= '9') || (hex[k] >= 'a' && hex[k] <= 'f')))
                return cbc_fmt_err(err, CBC_E_FORMAT, name, dat + 32,
                                   "image %s of bundle '%s': expected 32 lowercase hex digits of "
                                   "XXH3-128",
                                   (const char *)d, bname);
        memcpy(e.xxh3, hex, CBC_HASH_HEX_LEN);
        e.offset = at + off;
        e.size = sz;
        e.data = r + off;
        if (e.target.kind == CBC_KIND_PTX) {
            struct cbc_ptx_info pi;
            if (cbc_ptx_header(e.data, (size_t)sz, NULL, &pi, NULL) == CBC_OK)
                e.ptx_isa = pi.isa;
        }
        enum cbc_status st = verify ? cbc_embedded_verify(&e, name, err) : CBC_OK;
        if (st == CBC_OK)
            st = push(l, cap, &e, err);
        if (st != CBC_OK)
            return st;
    }
    *size = rs;
    return CBC_OK;
}

enum cbc_status cbc_embedded_parse(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                   bool verify, struct cbc_embedded_list *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct cbc_embedded_list l = {0};
    size_t cap = 0;
    enum cbc_status st = CBC_OK;
    uint64_t pos = 0;
    while (st == CBC_OK && pos < len) {
        /* zero padding between records (the linker aligns each), or at the end */
        size_t z = len - pos < 8 ? (size_t)(len - pos) : 8;
        static const uint8_t zeros[8];
        if (memcmp(data + pos, zeros, z) == 0) {
            pos += z;
            continue;
        }
        uint64_t rs = 0;
        st = record(data, len, base, pos, name, verify, l.n_records, &l, &cap, &rs, err);
        if (st == CBC_OK) {
            l.n_records++;
            pos += rs;
        }
    }
    if (st != CBC_OK) {
        free(l.v);
        return st;
    }
    *out = l;
    return CBC_OK;
}

void cbc_embedded_release(struct cbc_embedded_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}

static uint64_t align64(uint64_t v)
{
    return (v + 63) / 64 * 64;
}

enum cbc_status cbc_embedded_write(const char *name, struct cbc_embedded_entry *v, size_t n,
                                   struct cbc_buf *out, struct cbc_err *err)
{
    if (!cbc_name_valid(name))
        return cbc_err_set(err, CBC_E_USAGE, "'%s' is not a bundle name", name);
    /* layout: header, name, descriptors, then the images 64-byte aligned */
    const uint64_t ns = (strlen(name) + 1 + 7) / 8 * 8;
    uint64_t at = CBC_EMBED_HEADER + ns + (uint64_t)n * CBC_EMBED_DESC;
    for (size_t i = 0; i < n; i++) {
        v[i].offset = at = align64(at);
        at += v[i].size + (v[i].target.kind == CBC_KIND_PTX ? 1 : 0); /* PTX: its NUL */
    }
    const uint64_t total = align64(at);
    const size_t start = out->len;
    uint8_t word[CBC_EMBED_HEADER] = {0};
    memcpy(word, CBC_EMBED_MAGIC, 8);
    cbc_wr64(word + 8, total);
    cbc_wr32(word + 16, (uint32_t)n);
    cbc_wr32(word + 20, (uint32_t)ns);
    cbc_buf_append(out, word, sizeof word);
    static const uint8_t zeros[64];
    cbc_buf_append(out, name, strlen(name));
    cbc_buf_append(out, zeros, (size_t)(ns - strlen(name)));
    for (size_t i = 0; i < n; i++) {
        uint8_t d[CBC_EMBED_DESC] = {0};
        cbc_target_name(&v[i].target, (char *)d); /* at most 15 characters and the NUL */
        cbc_wr64(d + 16, v[i].offset);
        cbc_wr64(d + 24, v[i].size);
        memcpy(d + 32, v[i].xxh3, CBC_HASH_HEX_LEN);
        cbc_buf_append(out, d, sizeof d);
    }
    for (size_t i = 0; i < n && !out->oom; i++) {
        cbc_buf_append(out, zeros, (size_t)(start + v[i].offset - out->len));
        cbc_buf_append(out, v[i].data, (size_t)v[i].size);
    }
    /* PTX NULs and the tail: at most 64 bytes after the last image's end */
    if (!out->oom)
        cbc_buf_append(out, zeros, (size_t)(start + total - out->len));
    return out->oom ? cbc_err_oom(err) : CBC_OK;
}
