/* records.c: encoding, decoding and matching of dependency lists and
 * records (formats in direct.h). The decoders trust nothing: every count and length
 * is checked against the bytes that remain before anything is allocated,
 * and a list must hash to the id it was asked for.
 */
#include "direct.h"

#include <stdlib.h>
#include <string.h>

#define RECORD_MAGIC "CBCDEP2\n"
#define LIST_MAGIC "CBCDLS1\n"
#define LIST_HEADER 20
#define DEP_FIXED (16 + 8 * 5)

bool cbc_dep_list_id(const struct cbc_dep_list *l, struct cbc_hash *id)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        return false;
    cbc_hasher_u64(h, 1, l->n);
    for (size_t i = 0; i < l->n; i++) {
        cbc_hasher_str(h, 2, l->deps[i].path);
        cbc_hasher_hash(h, 3, &l->deps[i].hash);
    }
    cbc_hasher_digest(h, id);
    cbc_hasher_free(h);
    return true;
}

void cbc_dep_list_release(struct cbc_dep_list *l)
{
    for (size_t i = 0; i < l->n && !l->arena; i++)
        free(l->deps[i].path);
    free(l->deps);
    free(l->arena);
    memset(l, 0, sizeof *l);
}

enum cbc_status cbc_dep_list_decode(const uint8_t *data, size_t len, const struct cbc_hash *want,
                                    struct cbc_dep_list *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < LIST_HEADER || memcmp(data, LIST_MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency list: bad magic");
    uint64_t recorded = cbc_rd64(data + 8);
    uint32_t nd = cbc_rd32(data + 16);
    size_t p = LIST_HEADER;
    if (nd > (len - p) / (2 + DEP_FIXED))
        return cbc_err_set(err, CBC_E_FORMAT, "dependency list: %u files in %zu bytes", nd, len);
    /* every path is followed by more than its NUL's worth of fixed fields,
     * so all of them fit in len bytes */
    struct cbc_dep_list l = {{{0}}, recorded, calloc(nd ? nd : 1, sizeof *l.deps), 0, malloc(len)};
    if (!l.deps || !l.arena) {
        cbc_dep_list_release(&l);
        return cbc_err_oom(err);
    }
    size_t used = 0;
    for (uint32_t d = 0; d < nd; d++) {
        if (!cbc_in_bounds(len, p, 2))
            goto bad;
        uint16_t pl = cbc_rd16(data + p);
        p += 2;
        if (pl == 0 || !cbc_in_bounds(len, p, (uint64_t)pl + DEP_FIXED) || memchr(data + p, 0, pl))
            goto bad;
        struct cbc_direct_dep *dep = &l.deps[l.n++];
        dep->path = l.arena + used;
        memcpy(dep->path, data + p, pl);
        dep->path[pl] = '\0';
        used += (size_t)pl + 1;
        p += pl;
        memcpy(dep->hash.b, data + p, 16);
        dep->stamp.size = cbc_rd64(data + p + 16);
        dep->stamp.mtime_ns = cbc_rd64(data + p + 24);
        dep->stamp.ctime_ns = cbc_rd64(data + p + 32);
        dep->stamp.ino = cbc_rd64(data + p + 40);
        dep->stamp.dev = cbc_rd64(data + p + 48);
        p += DEP_FIXED;
    }
    if (p != len)
        goto bad;
    if (!cbc_dep_list_id(&l, &l.id)) {
        cbc_dep_list_release(&l);
        return cbc_err_oom(err);
    }
    if (want && !cbc_hash_eq(&l.id, want)) {
        cbc_dep_list_release(&l);
        return cbc_err_set(err, CBC_E_FORMAT, "dependency list: content does not match its id");
    }
    *out = l;
    return CBC_OK;
bad:
    cbc_dep_list_release(&l);
    return cbc_err_set(err, CBC_E_FORMAT, "dependency list: truncated or inconsistent at byte %zu",
                       p);
}

uint8_t *cbc_dep_list_encode(const struct cbc_dep_list *l, size_t *len)
{
    struct cbc_buf b = {0};
    uint8_t tmp[DEP_FIXED];
    cbc_buf_append(&b, LIST_MAGIC, 8);
    cbc_wr64(tmp, l->recorded_ns);
    cbc_wr32(tmp + 8, (uint32_t)l->n);
    cbc_buf_append(&b, tmp, 12);
    for (size_t d = 0; d < l->n; d++) {
        const struct cbc_direct_dep *dep = &l->deps[d];
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
    if (b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    *len = b.len;
    return (uint8_t *)cbc_buf_detach(&b);
}

bool cbc_dep_list_match(const struct cbc_dep_list *l, struct cbc_filememo *memo,
                        bool *stale_stamps)
{
    *stale_stamps = false;
    for (size_t d = 0; d < l->n; d++) {
        const struct cbc_direct_dep *dep = &l->deps[d];
        struct cbc_hash h;
        struct cbc_stamp now;
        if (cbc_filememo_hash(memo, dep->path, &dep->stamp, &dep->hash, l->recorded_ns, &h, &now,
                              NULL) != CBC_OK ||
            !cbc_hash_eq(&h, &dep->hash))
            return false;
        if (!cbc_stamp_eq(&now, &dep->stamp) || !cbc_stamp_trustworthy(&now, l->recorded_ns))
            *stale_stamps = true;
    }
    return true;
}

enum cbc_status cbc_direct_decode(const uint8_t *data, size_t len, struct cbc_direct_rec *out,
                                  struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 12 || memcmp(data, RECORD_MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency record: bad magic");
    uint32_t nc = cbc_rd32(data + 8);
    if (nc > CBC_DIRECT_MAX || len != 12 + 32 * (size_t)nc)
        return cbc_err_set(err, CBC_E_FORMAT,
                           "dependency record: %u candidates in %zu bytes (at most %d, 32 bytes "
                           "each)",
                           nc, len, CBC_DIRECT_MAX);
    for (uint32_t c = 0; c < nc; c++) {
        memcpy(out->c[c].result.b, data + 12 + 32 * c, 16);
        memcpy(out->c[c].list.b, data + 12 + 32 * c + 16, 16);
    }
    out->n = nc;
    return CBC_OK;
}

uint8_t *cbc_direct_encode(const struct cbc_direct_rec *rec, size_t *len)
{
    size_t n = 12 + 32 * rec->n;
    uint8_t *b = malloc(n);
    if (!b)
        return NULL;
    memcpy(b, RECORD_MAGIC, 8);
    cbc_wr32(b + 8, (uint32_t)rec->n);
    for (size_t c = 0; c < rec->n; c++) {
        memcpy(b + 12 + 32 * c, rec->c[c].result.b, 16);
        memcpy(b + 12 + 32 * c + 16, rec->c[c].list.b, 16);
    }
    *len = n;
    return b;
}

void cbc_direct_push(struct cbc_direct_rec *rec, const struct cbc_direct_cand *fresh)
{
    struct cbc_direct_rec out = {{*fresh}, 1};
    for (size_t i = 0; i < rec->n && out.n < CBC_DIRECT_MAX; i++)
        if (!cbc_hash_eq(&rec->c[i].result, &fresh->result))
            out.c[out.n++] = rec->c[i];
    *rec = out;
}
