/* direct.c: encoding, decoding and matching of dependency records (format
 * in direct.h). The decoder trusts nothing: every count and length is
 * checked against the bytes that remain before anything is allocated.
 */
#include "direct.h"

#include <stdlib.h>
#include <string.h>

#define DIRECT_MAGIC "CBCDEP1\n"
#define DEP_FIXED (16 + 8 * 5)

void cbc_direct_cand_release(struct cbc_direct_cand *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->deps[i].path);
    free(c->deps);
    memset(c, 0, sizeof *c);
}

void cbc_direct_release(struct cbc_direct_rec *rec)
{
    for (size_t i = 0; i < rec->n; i++)
        cbc_direct_cand_release(&rec->c[i]);
    free(rec->c);
    memset(rec, 0, sizeof *rec);
}

enum cbc_status cbc_direct_decode(const uint8_t *data, size_t len, struct cbc_direct_rec *out,
                                  struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 12 || memcmp(data, DIRECT_MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency record: bad magic");
    uint32_t nc = cbc_rd32(data + 8);
    if (nc > CBC_DIRECT_MAX)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency record: %u candidates", nc);
    struct cbc_direct_rec rec = {calloc(nc ? nc : 1, sizeof *rec.c), 0};
    if (!rec.c)
        return cbc_err_oom(err);
    size_t p = 12;
    for (uint32_t c = 0; c < nc; c++) {
        if (!cbc_in_bounds(len, p, 28))
            goto bad;
        struct cbc_direct_cand *cand = &rec.c[rec.n++];
        memcpy(cand->result.b, data + p, 16);
        cand->recorded_ns = cbc_rd64(data + p + 16);
        uint32_t nd = cbc_rd32(data + p + 24);
        p += 28;
        if (nd > (len - p) / (2 + DEP_FIXED))
            goto bad;
        cand->deps = calloc(nd ? nd : 1, sizeof *cand->deps);
        if (!cand->deps)
            goto oom;
        for (uint32_t d = 0; d < nd; d++) {
            if (!cbc_in_bounds(len, p, 2))
                goto bad;
            uint16_t pl = cbc_rd16(data + p);
            p += 2;
            if (pl == 0 || !cbc_in_bounds(len, p, (uint64_t)pl + DEP_FIXED) ||
                memchr(data + p, 0, pl))
                goto bad;
            struct cbc_direct_dep *dep = &cand->deps[cand->n];
            dep->path = cbc_strndup((const char *)data + p, pl);
            if (!dep->path)
                goto oom;
            cand->n++;
            p += pl;
            memcpy(dep->hash.b, data + p, 16);
            dep->stamp.size = cbc_rd64(data + p + 16);
            dep->stamp.mtime_ns = cbc_rd64(data + p + 24);
            dep->stamp.ctime_ns = cbc_rd64(data + p + 32);
            dep->stamp.ino = cbc_rd64(data + p + 40);
            dep->stamp.dev = cbc_rd64(data + p + 48);
            p += DEP_FIXED;
        }
    }
    if (p != len)
        goto bad;
    *out = rec;
    return CBC_OK;
bad:
    cbc_direct_release(&rec);
    return cbc_err_set(err, CBC_E_FORMAT, "dependency record: truncated or inconsistent at byte %zu",
                       p);
oom:
    cbc_direct_release(&rec);
    return cbc_err_oom(err);
}

uint8_t *cbc_direct_encode(const struct cbc_direct_rec *rec, size_t *len)
{
    struct cbc_buf b = {0};
    uint8_t tmp[DEP_FIXED + 28];
    cbc_buf_append(&b, DIRECT_MAGIC, 8);
    cbc_wr32(tmp, (uint32_t)rec->n);
    cbc_buf_append(&b, tmp, 4);
    for (size_t c = 0; c < rec->n; c++) {
        const struct cbc_direct_cand *cand = &rec->c[c];
        memcpy(tmp, cand->result.b, 16);
        cbc_wr64(tmp + 16, cand->recorded_ns);
        cbc_wr32(tmp + 24, (uint32_t)cand->n);
        cbc_buf_append(&b, tmp, 28);
        for (size_t d = 0; d < cand->n; d++) {
            const struct cbc_direct_dep *dep = &cand->deps[d];
            size_t pl = strlen(dep->path);
            if (pl == 0 || pl > UINT16_MAX) {
                cbc_buf_release(&b);
                return NULL;
            }
            tmp[0] = (uint8_t)pl;
            tmp[1] = (uint8_t)(pl >> 8);
            cbc_buf_append(&b, tmp, 2);
            cbc_buf_append(&b, dep->path, pl);
            memcpy(tmp, dep->hash.b, 16);
            cbc_wr64(tmp + 16, dep->stamp.size);
            cbc_wr64(tmp + 24, dep->stamp.mtime_ns);
            cbc_wr64(tmp + 32, dep->stamp.ctime_ns);
            cbc_wr64(tmp + 40, dep->stamp.ino);
            cbc_wr64(tmp + 48, dep->stamp.dev);
            cbc_buf_append(&b, tmp, DEP_FIXED);
        }
    }
    if (b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    *len = b.len;
    return (uint8_t *)cbc_buf_detach(&b);
}

long cbc_direct_match(const struct cbc_direct_rec *rec, struct cbc_filememo *memo,
                      bool *stale_stamps)
{
    *stale_stamps = false;
    for (size_t c = 0; c < rec->n; c++) {
        const struct cbc_direct_cand *cand = &rec->c[c];
        bool ok = true, stale = false;
        for (size_t d = 0; d < cand->n && ok; d++) {
            const struct cbc_direct_dep *dep = &cand->deps[d];
            struct cbc_hash h;
            struct cbc_stamp now;
            if (cbc_filememo_hash(memo, dep->path, &dep->stamp, &dep->hash, cand->recorded_ns, &h,
                                  &now, NULL) != CBC_OK ||
                !cbc_hash_eq(&h, &dep->hash)) {
                ok = false;
                break;
            }
            if (!cbc_stamp_eq(&now, &dep->stamp) ||
                !cbc_stamp_trustworthy(&now, cand->recorded_ns))
                stale = true;
        }
        if (ok) {
            *stale_stamps = stale;
            return (long)c;
        }
    }
    return -1;
}

enum cbc_status cbc_direct_push(struct cbc_direct_rec *rec, struct cbc_direct_cand *fresh,
                                struct cbc_err *err)
{
    struct cbc_direct_cand *v = calloc(CBC_DIRECT_MAX, sizeof *v);
    if (!v)
        return cbc_err_oom(err);
    size_t n = 0;
    v[n++] = *fresh;
    memset(fresh, 0, sizeof *fresh);
    for (size_t i = 0; i < rec->n; i++) {
        if (n < CBC_DIRECT_MAX && !cbc_hash_eq(&rec->c[i].result, &v[0].result))
            v[n++] = rec->c[i];
        else
            cbc_direct_cand_release(&rec->c[i]);
    }
    free(rec->c);
    rec->c = v;
    rec->n = n;
    return CBC_OK;
}
