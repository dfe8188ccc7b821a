/* filememo.c: content hashes of input files, each computed at most once per
 * process, and skipped entirely when a stat stamp recorded earlier still
 * matches.
 *
 * The stamp is (size, mtime, ctime, inode, device). ctime cannot be set by
 * users, so a content change that restores mtime is still seen. A stamp is
 * trusted only when the file was last changed at least CBC_RACY_NS before
 * the stamp was recorded: a write inside the same timestamp tick would
 * otherwise go unnoticed (git's racy-entry rule).
 */
#include "key.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <stdlib.h>
#include <string.h>

/* 1 s: well above the tick of ext4, xfs, btrfs and tmpfs (a jiffy) and of
 * NFS servers with second timestamps. */
#define CBC_RACY_NS 1000000000ull

bool cbc_stamp_of(const char *path, struct cbc_stamp *st)
{
    struct stat s;
    if (stat(path, &s) != 0)
        return false;
    st->size = (uint64_t)s.st_size;
    st->mtime_ns = (uint64_t)s.st_mtim.tv_sec * 1000000000u + (uint64_t)s.st_mtim.tv_nsec;
    st->ctime_ns = (uint64_t)s.st_ctim.tv_sec * 1000000000u + (uint64_t)s.st_ctim.tv_nsec;
    st->ino = (uint64_t)s.st_ino;
    st->dev = (uint64_t)s.st_dev;
    return true;
}

bool cbc_stamp_eq(const struct cbc_stamp *a, const struct cbc_stamp *b)
{
    return a->size == b->size && a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns &&
           a->ino == b->ino && a->dev == b->dev;
}

bool cbc_stamp_trustworthy(const struct cbc_stamp *st, uint64_t recorded_ns)
{
    uint64_t changed = st->mtime_ns > st->ctime_ns ? st->mtime_ns : st->ctime_ns;
    return changed + CBC_RACY_NS <= recorded_ns;
}

struct slot {
    char *path;
    struct cbc_hash hash;
    struct cbc_stamp stamp;
    uint64_t h;
    bool scanned;      /* read in this process: `mentions` is known */
    unsigned mentions; /* CBC_MENTIONS_* */
    bool has_prior;    /* the hash known before the scan read the file again */
    struct cbc_hash prior;
};

struct cbc_filememo {
    struct slot *slots;
    size_t cap, used, reads;
};

struct cbc_filememo *cbc_filememo_new(void)
{
    struct cbc_filememo *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    m->cap = 256;
    m->slots = calloc(m->cap, sizeof *m->slots);
    if (!m->slots) {
        free(m);
        return NULL;
    }
    return m;
}

void cbc_filememo_free(struct cbc_filememo *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].path);
    free(m->slots);
    free(m);
}

static struct slot *find(struct cbc_filememo *m, const char *path, uint64_t h)
{
    size_t i = (size_t)h & (m->cap - 1);
    while (m->slots[i].path) {
        if (m->slots[i].h == h && strcmp(m->slots[i].path, path) == 0)
            return &m->slots[i];
        i = (i + 1) & (m->cap - 1);
    }
    return &m->slots[i];
}

static bool grow(struct cbc_filememo *m)
{
    size_t cap = m->cap * 2;
    struct slot *s = calloc(cap, sizeof *s);
    if (!s)
        return false;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].path)
            continue;
        size_t j = (size_t)m->slots[i].h & (cap - 1);
        while (s[j].path)
            j = (j + 1) & (cap - 1);
        s[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = s;
    m->cap = cap;
    return true;
}

enum cbc_status cbc_filememo_hash(struct cbc_filememo *m, const char *path,
                                  const struct cbc_stamp *known_stamp,
                                  const struct cbc_hash *known_hash, uint64_t recorded_ns,
                                  struct cbc_hash *out, struct cbc_stamp *stamp_out,
                                  struct cbc_err *err)
{
    uint64_t h = XXH3_64bits(path, strlen(path));
    struct slot *s = find(m, path, h);
    if (s->path) {
        *out = s->hash;
        if (stamp_out)
            *stamp_out = s->stamp;
        return CBC_OK;
    }
    struct cbc_stamp now;
    if (!cbc_stamp_of(path, &now))
        return cbc_err_set(err, CBC_E_NOT_FOUND, "cannot stat '%s'", path);
    struct cbc_hash hash;
    if (known_stamp && known_hash && cbc_stamp_eq(known_stamp, &now) &&
        cbc_stamp_trustworthy(&now, recorded_ns)) {
        hash = *known_hash;
    } else {
        uint64_t size;
        enum cbc_status st = cbc_hash_file(path, &hash, &size, err);
        if (st != CBC_OK)
            return st;
        m->reads++;
    }
    if ((m->used + 1) * 2 > m->cap) {
        if (!grow(m))
            return cbc_err_oom(err);
        s = find(m, path, h);
    }
    s->path = cbc_strdup(path);
    if (!s->path)
        return cbc_err_oom(err);
    s->hash = hash;
    s->stamp = now;
    s->h = h;
    m->used++;
    *out = hash;
    if (stamp_out)
        *stamp_out = now;
    return CBC_OK;
}

static unsigned mentions_of(const uint8_t *d, size_t n)
{
    unsigned m = 0;
    static const char *const time_macros[] = {"__TIME__", "__DATE__", "__TIMESTAMP__"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(time_macros); i++)
        if (memmem(d, n, time_macros[i], strlen(time_macros[i])))
            m |= CBC_MENTIONS_TIME;
    if (memmem(d, n, "__CUDA_ARCH_LIST__", 18))
        m |= CBC_MENTIONS_ARCH_LIST;
    return m;
}

enum cbc_status cbc_filememo_scan(struct cbc_filememo *m, const char *path, struct cbc_hash *hash,
                                  struct cbc_stamp *stamp, unsigned *mentions, struct cbc_err *err)
{
    uint64_t h = XXH3_64bits(path, strlen(path));
    struct slot *s = find(m, path, h);
    if (s->path && s->scanned) {
        *hash = s->hash;
        if (stamp)
            *stamp = s->stamp;
        *mentions = s->mentions;
        return CBC_OK;
    }
    /* the stamp before the bytes: a change after it shows in the stamp */
    struct cbc_stamp now;
    if (!cbc_stamp_of(path, &now))
        return cbc_err_set(err, CBC_E_NOT_FOUND, "cannot stat '%s'", path);
    uint8_t *data = NULL;
    size_t n = 0;
    enum cbc_status st = cbc_file_read(path, &data, &n, err);
    if (st != CBC_OK)
        return st;
    m->reads++;
    struct cbc_hash fh;
    cbc_hash_bytes(data, n, &fh);
    unsigned found = mentions_of(data, n);
    free(data);
    if (!s->path) {
        if ((m->used + 1) * 2 > m->cap) {
            if (!grow(m))
                return cbc_err_oom(err);
            s = find(m, path, h);
        }
        s->path = cbc_strdup(path);
        if (!s->path)
            return cbc_err_oom(err);
        s->h = h;
        m->used++;
    } else {
        s->has_prior = true;
        s->prior = s->hash;
    }
    s->hash = fh;
    s->stamp = now;
    s->scanned = true;
    s->mentions = found;
    *hash = fh;
    if (stamp)
        *stamp = now;
    *mentions = found;
    return CBC_OK;
}

bool cbc_filememo_prior(struct cbc_filememo *m, const char *path, struct cbc_hash *hash)
{
    struct slot *s = find(m, path, XXH3_64bits(path, strlen(path)));
    if (!s->path || !s->has_prior)
        return false;
    *hash = s->prior;
    return true;
}

size_t cbc_filememo_reads(const struct cbc_filememo *m)
{
    return m->reads;
}
