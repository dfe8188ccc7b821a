/* records.c: encoding, decoding and matching of dependency lists and
 * records (formats in direct.h). The decoders trust nothing: every count and length
 * is checked against the bytes that remain before anything is allocated,
 * and a list must hash to the id it was asked for.
 */
#include "direct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define RECORD_MAGIC "CBCDEP3\n"
#define CAND_BYTES 33
#define LIST_MAGIC "CBCDLS2\n"
#define LIST_HEADER 24
#define STAMP_BYTES (8 * 5)
#define DEP_FIXED (16 + STAMP_BYTES)
/* probes under one directory above which a changed stamp is refreshed */
#define CBC_PROBE_RESTAMP_MIN 16

bool cbc_dep_list_id(const struct cbc_dep_list *l, struct cbc_hash *id)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        return false;
    bool ok = true;
    cbc_hasher_u64(h, 1, l->n);
    for (size_t i = 0; i < l->n; i++) {
        char *rel = cbc_base_rel(l->base, l->deps[i].path);
        ok = ok && rel;
        cbc_hasher_str(h, 2, rel);
        free(rel);
        cbc_hasher_hash(h, 3, &l->deps[i].hash);
    }
    cbc_hasher_u64(h, 4, l->n_probes);
    for (size_t i = 0; i < l->n_probes; i++) {
        const struct cbc_probe_dir *pd = &l->probes[i];
        char *rel = cbc_base_rel(l->base, pd->dir);
        ok = ok && rel;
        cbc_hasher_str(h, 5, rel);
        free(rel);
        cbc_hasher_u64(h, 6, pd->n);
        for (size_t k = 0; k < pd->n; k++)
            cbc_hasher_str(h, 7, l->names[pd->first + k]);
    }
    cbc_hasher_digest(h, id);
    cbc_hasher_free(h);
    return ok;
}

void cbc_dep_list_release(struct cbc_dep_list *l)
{
    for (size_t i = 0; i < l->n && !l->arena; i++)
        free(l->deps[i].path);
    for (size_t i = 0; i < l->n_probes && !l->arena; i++)
        free(l->probes[i].dir);
    for (size_t i = 0; i < l->n_names && !l->arena; i++)
        free(l->names[i]);
    free(l->deps);
    free(l->probes);
    free(l->names);
    free(l->arena);
    memset(l, 0, sizeof *l);
}

static void rd_stamp(const uint8_t *p, struct cbc_stamp *s)
{
    s->size = cbc_rd64(p);
    s->mtime_ns = cbc_rd64(p + 8);
    s->ctime_ns = cbc_rd64(p + 16);
    s->ino = cbc_rd64(p + 24);
    s->dev = cbc_rd64(p + 32);
}

static void wr_stamp(uint8_t *p, const struct cbc_stamp *s)
{
    cbc_wr64(p, s->size);
    cbc_wr64(p + 8, s->mtime_ns);
    cbc_wr64(p + 16, s->ctime_ns);
    cbc_wr64(p + 24, s->ino);
    cbc_wr64(p + 32, s->dev);
}

/* A u16-length string at p into the arena, a leading "@BASE@" made the
 * base (`base`, of length bl, fits the arena's slack for it); false when
 * it does not fit, is empty or holds a NUL. */
static bool rd_str(const uint8_t *data, size_t len, size_t *p, char *arena, size_t *used,
                   const char *base, size_t bl, char **out)
{
    if (!cbc_in_bounds(len, *p, 2))
        return false;
    uint16_t sl = cbc_rd16(data + *p);
    *p += 2;
    if (sl == 0 || !cbc_in_bounds(len, *p, sl) || memchr(data + *p, 0, sl))
        return false;
    *out = arena + *used;
    const uint8_t *s = data + *p;
    size_t w = 0;
    if (base && sl >= 6 && !memcmp(s, "@BASE@", 6) && (sl == 6 || s[6] == '/')) {
        memcpy(*out, base, bl);
        w = bl;
        s += 6;
        sl = (uint16_t)(sl - 6);
        *p += 6;
    }
    memcpy(*out + w, s, sl);
    (*out)[w + sl] = '\0';
    *used += w + (size_t)sl + 1;
    *p += sl;
    return true;
}

enum cbc_status cbc_dep_list_decode(const uint8_t *data, size_t len, const struct cbc_hash *want,
                                    const char *base, struct cbc_dep_list *out,
                                    struct cbc_err *err)
{
    size_t bl = base ? strlen(base) : 0;
    memset(out, 0, sizeof *out);
    if (len < LIST_HEADER || memcmp(data, LIST_MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency list: bad magic");
    uint64_t recorded = cbc_rd64(data + 8);
    uint32_t nd = cbc_rd32(data + 16), np = cbc_rd32(data + 20);
    size_t p = LIST_HEADER;
    /* every file takes more than 2 + DEP_FIXED bytes, every probe
     * directory more than 2 + STAMP_BYTES + 4, every name more than 2 */
    if (nd > (len - p) / (2 + DEP_FIXED) || np > (len - p) / (2 + STAMP_BYTES + 4))
        return cbc_err_set(err, CBC_E_FORMAT, "dependency list: %u files and %u directories in "
                           "%zu bytes", nd, np, len);
    /* every string is followed by more than its NUL's worth of bytes (or is
     * the last name, whose length field stands in), so all fit in len */
    /* every file and directory may gain the base in place of its 6-byte mark */
    size_t arena = len + ((size_t)nd + np) * bl;
    struct cbc_dep_list l = {.recorded_ns = recorded,
                             .deps = calloc(nd ? nd : 1, sizeof *l.deps),
                             .probes = calloc(np ? np : 1, sizeof *l.probes),
                             .arena = malloc(arena),
                             .base = base};
    if (!l.deps || !l.probes || !l.arena) {
        cbc_dep_list_release(&l);
        return cbc_err_oom(err);
    }
    size_t used = 0, names_cap = 0;
    for (uint32_t d = 0; d < nd; d++) {
        struct cbc_direct_dep *dep = &l.deps[l.n];
        if (!rd_str(data, len, &p, l.arena, &used, base, bl, &dep->path) ||
            !cbc_in_bounds(len, p, DEP_FIXED))
            goto bad;
        l.n++;
        memcpy(dep->hash.b, data + p, 16);
        rd_stamp(data + p + 16, &dep->stamp);
        p += DEP_FIXED;
    }
    for (uint32_t d = 0; d < np; d++) {
        struct cbc_probe_dir *pd = &l.probes[l.n_probes];
        if (!rd_str(data, len, &p, l.arena, &used, base, bl, &pd->dir) ||
            !cbc_in_bounds(len, p, STAMP_BYTES + 4))
            goto bad;
        l.n_probes++;
        rd_stamp(data + p, &pd->stamp);
        uint32_t k = cbc_rd32(data + p + STAMP_BYTES);
        p += STAMP_BYTES + 4;
        if (k > (len - p) / 3)
            goto bad;
        pd->first = l.n_names;
        for (uint32_t i = 0; i < k; i++) {
            if (!cbc_grow(&l.names, l.n_names, &names_cap, sizeof *l.names, 64)) {
                cbc_dep_list_release(&l);
                return cbc_err_oom(err);
            }
            if (!rd_str(data, len, &p, l.arena, &used, NULL, 0, &l.names[l.n_names]))
                goto bad;
            l.n_names++;
            pd->n++;
        }
    }
    if (p != len)
        goto bad;
    CBC_ASSERT(used <= arena); /* every string fitted the arena */
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

static bool wr_str(struct cbc_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > UINT16_MAX)
        return false;
    uint8_t l2[2] = {(uint8_t)n, (uint8_t)(n >> 8)};
    cbc_buf_append(b, l2, 2);
    cbc_buf_append(b, s, n);
    return true;
}

uint8_t *cbc_dep_list_encode(const struct cbc_dep_list *l, size_t *len)
{
    struct cbc_buf b = {0};
    uint8_t tmp[DEP_FIXED + 4];
    cbc_buf_append(&b, LIST_MAGIC, 8);
    cbc_wr64(tmp, l->recorded_ns);
    cbc_wr32(tmp + 8, (uint32_t)l->n);
    cbc_wr32(tmp + 12, (uint32_t)l->n_probes);
    cbc_buf_append(&b, tmp, 16);
    bool ok = true;
    for (size_t d = 0; ok && d < l->n; d++) {
        const struct cbc_direct_dep *dep = &l->deps[d];
        char *rel = cbc_base_rel(l->base, dep->path);
        ok = rel && wr_str(&b, rel);
        free(rel);
        memcpy(tmp, dep->hash.b, 16);
        wr_stamp(tmp + 16, &dep->stamp);
        cbc_buf_append(&b, tmp, DEP_FIXED);
    }
    for (size_t d = 0; ok && d < l->n_probes; d++) {
        const struct cbc_probe_dir *pd = &l->probes[d];
        char *rel = cbc_base_rel(l->base, pd->dir);
        ok = rel && wr_str(&b, rel);
        free(rel);
        wr_stamp(tmp, &pd->stamp);
        cbc_wr32(tmp + STAMP_BYTES, (uint32_t)pd->n);
        cbc_buf_append(&b, tmp, STAMP_BYTES + 4);
        for (size_t k = 0; ok && k < pd->n; k++)
            ok = wr_str(&b, l->names[pd->first + k]);
    }
    if (!ok || b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    *len = b.len;
    return (uint8_t *)cbc_buf_detach(&b);
}

/* Whether dir/name is absent as a lookup of it finds it: nothing there,
 * or a component that is not a directory. Any other answer (a file, a
 * permission error) is not absent. */
static bool still_absent(const char *dir, const char *name)
{
    char *p = cbc_asprintf("%s/%s", dir, name);
    struct stat st;
    bool gone = p && stat(p, &st) != 0 && (errno == ENOENT || errno == ENOTDIR);
    free(p);
    return gone;
}

/* 1: every probe of pd still absent, and its stamp proved it; 0: all
 * absent, checked name by name; -1: one is there. */
static int probes_absent(const struct cbc_dep_list *l, const struct cbc_probe_dir *pd,
                         uint64_t recorded_ns, char **found)
{
    struct cbc_stamp now;
    if (!found && cbc_stamp_of(pd->dir, &now) && cbc_stamp_eq(&now, &pd->stamp) &&
        cbc_stamp_trustworthy(&now, recorded_ns))
        return 1;
    for (size_t k = 0; k < pd->n; k++)
        if (!still_absent(pd->dir, l->names[pd->first + k])) {
            if (found)
                *found = cbc_asprintf("%s/%s", pd->dir, l->names[pd->first + k]);
            return -1;
        }
    return 0;
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
    for (size_t d = 0; d < l->n_probes; d++) {
        int r = probes_absent(l, &l->probes[d], l->recorded_ns, NULL);
        if (r < 0)
            return false;
        /* a fresh stamp pays when it spares many stats; a directory of a
         * few names (the working directory, which every build writes
         * into) is cheaper checked by name than rewritten at every hit */
        if (r == 0 && l->probes[d].n > CBC_PROBE_RESTAMP_MIN)
            *stale_stamps = true;
    }
    return true;
}

char *cbc_dep_list_found_probe(const struct cbc_dep_list *l)
{
    char *found = NULL;
    for (size_t d = 0; d < l->n_probes && !found; d++)
        probes_absent(l, &l->probes[d], l->recorded_ns, &found);
    return found;
}

bool cbc_dep_list_stamp_probes(struct cbc_dep_list *l)
{
    bool all = true;
    for (size_t d = 0; d < l->n_probes; d++) {
        struct cbc_probe_dir *pd = &l->probes[d];
        /* the stamp first, then the names: a file that appears in between
         * is seen by the names, one that appears after changes the stamp */
        if (!cbc_stamp_of(pd->dir, &pd->stamp))
            memset(&pd->stamp, 0, sizeof pd->stamp);
        for (size_t k = 0; k < pd->n; k++)
            if (!still_absent(pd->dir, l->names[pd->first + k])) {
                memset(&pd->stamp, 0, sizeof pd->stamp);
                all = false;
                break;
            }
    }
    return all;
}

enum cbc_status cbc_direct_decode(const uint8_t *data, size_t len, struct cbc_direct_rec *out,
                                  struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    if (len < 12 || memcmp(data, RECORD_MAGIC, 8) != 0)
        return cbc_err_set(err, CBC_E_FORMAT, "dependency record: bad magic");
    uint32_t nc = cbc_rd32(data + 8);
    if (nc > CBC_DIRECT_MAX || len != 12 + CAND_BYTES * (size_t)nc)
        return cbc_err_set(err, CBC_E_FORMAT,
                           "dependency record: %u candidates in %zu bytes (at most %d, %d bytes "
                           "each)",
                           nc, len, CBC_DIRECT_MAX, CAND_BYTES);
    for (uint32_t c = 0; c < nc; c++) {
        const uint8_t *p = data + 12 + CAND_BYTES * c;
        memcpy(out->c[c].result.b, p, 16);
        memcpy(out->c[c].list.b, p + 16, 16);
        out->c[c].flags = p[32];
        if (out->c[c].flags & ~CBC_CAND_PATH_DEPENDENT)
            return cbc_err_set(err, CBC_E_FORMAT, "dependency record: unknown flags %#x",
                               out->c[c].flags);
    }
    out->n = nc;
    return CBC_OK;
}

uint8_t *cbc_direct_encode(const struct cbc_direct_rec *rec, size_t *len)
{
    size_t n = 12 + CAND_BYTES * rec->n;
    uint8_t *b = malloc(n);
    if (!b)
        return NULL;
    memcpy(b, RECORD_MAGIC, 8);
    cbc_wr32(b + 8, (uint32_t)rec->n);
    for (size_t c = 0; c < rec->n; c++) {
        uint8_t *p = b + 12 + CAND_BYTES * c;
        memcpy(p, rec->c[c].result.b, 16);
        memcpy(p + 16, rec->c[c].list.b, 16);
        p[32] = rec->c[c].flags;
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
