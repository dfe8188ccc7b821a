/* store.c: the content-addressed cache (format and invariants in store.h).
 *
 * Design choices: one file per entry, so publishing is one rename and no
 * lock is needed for data; entries are verified on every read rather than
 * trusted, so a torn write (power loss, no fsync) or a tampered file is
 * caught and dropped; counters are batched in memory and merged into
 * v1/stats under an flock once per process, which keeps a hit to one
 * locked read-modify-write. LRU order is the entry's mtime, bumped on hit.
 */
#include "store.h"

#include <cubincache/binfmt.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ENTRY_MAGIC "CBCOBJ1\n"
#define ENTRY_VERSION 1
#define ENTRY_HEADER 64
#define DEFAULT_MAX_SIZE (5ull * 1000 * 1000 * 1000)
#define STALE_TMP_SECONDS 3600

struct cbc_store {
    char *root;  /* <cache>/v1 */
    char *tools; /* <cache>/v1/tools or NULL */
    uint64_t hits, misses, dropped, stores, store_errors;
    int64_t bytes_added; /* running size change since open */
    uint64_t max_size;   /* 0 until read */
    uint64_t seen_bytes; /* the shared running total, as of the last merge */
};

char *cbc_store_default_root(const char *explicit_dir)
{
    if (explicit_dir && *explicit_dir)
        return cbc_strdup(explicit_dir);
    const char *e = getenv("CUBINCACHE_DIR");
    if (e && *e)
        return cbc_strdup(e);
    e = getenv("XDG_CACHE_HOME");
    if (e && *e)
        return cbc_asprintf("%s/cubincache", e);
    e = getenv("HOME");
    if (e && *e)
        return cbc_asprintf("%s/.cache/cubincache", e);
    return NULL;
}

enum cbc_status cbc_store_open(const char *root, struct cbc_store **out, struct cbc_err *err)
{
    if (!root)
        return cbc_err_set(err, CBC_E_CACHE, "no cache directory: HOME, XDG_CACHE_HOME and "
                                             "CUBINCACHE_DIR are all unset");
    struct cbc_store *s = calloc(1, sizeof *s);
    if (!s)
        return cbc_err_oom(err);
    s->root = cbc_asprintf("%s/v1", root);
    if (!s->root) {
        free(s);
        return cbc_err_oom(err);
    }
    enum cbc_status st = cbc_mkdir_p(s->root, 0755, err);
    if (st != CBC_OK) {
        cbc_store_close(s);
        return cbc_err_set(err, CBC_E_CACHE, "cache directory '%s' is unusable: %s", root,
                           err ? err->msg : "cannot create it");
    }
    char *tools = cbc_asprintf("%s/tools", s->root);
    if (tools && cbc_mkdir_p(tools, 0755, NULL) == CBC_OK)
        s->tools = tools;
    else
        free(tools);
    *out = s;
    return CBC_OK;
}

const char *cbc_store_root(const struct cbc_store *s)
{
    return s->root;
}

const char *cbc_store_tools_dir(const struct cbc_store *s)
{
    return s->tools;
}

static char *entry_path(const struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                        const char *ext)
{
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(key, hex);
    return cbc_asprintf("%s/%s/%.2s/%s%s", s->root, ns, hex, hex + 2, ext);
}

/* ---- counters ------------------------------------------------------------ */

static const char *const counter_names[] = {"hits", "misses", "stores", "dropped", "store_errors",
                                            "bytes"};
enum { C_HITS, C_MISSES, C_STORES, C_DROPPED, C_STORE_ERRORS, C_BYTES, C_COUNT };

/* Lenient parse: a line that does not read as "name number" is skipped, so
 * a stats file torn by a crash costs counts, never an error. */
static void parse_counters(const char *text, uint64_t v[C_COUNT])
{
    for (const char *p = text; p && *p;) {
        const char *eol = strchr(p, '\n');
        for (int i = 0; i < C_COUNT; i++) {
            size_t n = strlen(counter_names[i]);
            if (strncmp(p, counter_names[i], n) == 0 && p[n] == ' ') {
                char *end;
                unsigned long long x = strtoull(p + n + 1, &end, 10);
                if (end != p + n + 1)
                    v[i] = x;
            }
        }
        p = eol ? eol + 1 : NULL;
    }
}

/* Runs fn on the counters under an exclusive lock of v1/stats. */
static enum cbc_status with_counters(struct cbc_store *s, void (*fn)(uint64_t v[C_COUNT], void *),
                                     void *ctx, bool write_back, struct cbc_err *err)
{
    char *path = cbc_asprintf("%s/stats", s->root);
    if (!path)
        return cbc_err_oom(err);
    int fd = open(path, (write_back ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0644);
    if (fd < 0) {
        enum cbc_status st = errno == ENOENT && !write_back
                                 ? CBC_OK
                                 : cbc_err_set(err, CBC_E_CACHE, "cannot open '%s': %s", path,
                                               strerror(errno));
        if (st == CBC_OK) {
            uint64_t v[C_COUNT] = {0};
            fn(v, ctx);
        }
        free(path);
        return st;
    }
    free(path);
    if (flock(fd, write_back ? LOCK_EX : LOCK_SH) != 0) {
        close(fd);
        return cbc_err_set(err, CBC_E_CACHE, "cannot lock the cache counters: %s", strerror(errno));
    }
    char buf[1024];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    buf[n > 0 ? n : 0] = '\0';
    uint64_t v[C_COUNT] = {0};
    parse_counters(buf, v);
    fn(v, ctx);
    enum cbc_status st = CBC_OK;
    if (write_back) {
        int len = 0;
        for (int i = 0; i < C_COUNT; i++)
            len += snprintf(buf + len, sizeof buf - (size_t)len, "%s %llu\n", counter_names[i],
                            (unsigned long long)v[i]);
        if (pwrite(fd, buf, (size_t)len, 0) != len || ftruncate(fd, len) != 0)
            st = cbc_err_set(err, CBC_E_CACHE, "cannot update the cache counters: %s",
                             strerror(errno));
    }
    close(fd); /* releases the lock */
    return st;
}

static void add_counts(uint64_t v[C_COUNT], void *ctx)
{
    struct cbc_store *s = ctx;
    v[C_HITS] += s->hits;
    v[C_MISSES] += s->misses;
    v[C_STORES] += s->stores;
    v[C_DROPPED] += s->dropped;
    v[C_STORE_ERRORS] += s->store_errors;
    int64_t b = (int64_t)v[C_BYTES] + s->bytes_added;
    v[C_BYTES] = b < 0 ? 0 : (uint64_t)b;
    s->seen_bytes = v[C_BYTES];
}

void cbc_store_count(struct cbc_store *s, uint64_t hits, uint64_t misses, uint64_t dropped)
{
    s->hits += hits;
    s->misses += misses;
    s->dropped += dropped;
}

void cbc_store_close(struct cbc_store *s)
{
    if (!s)
        return;
    if (s->root && (s->hits || s->misses || s->stores || s->dropped || s->store_errors ||
                    s->bytes_added))
        with_counters(s, add_counts, s, true, NULL);
    free(s->root);
    free(s->tools);
    free(s);
}

/* ---- sizes and config -------------------------------------------------- */

uint64_t cbc_store_max_size(struct cbc_store *s)
{
    if (s->max_size)
        return s->max_size;
    uint64_t v = DEFAULT_MAX_SIZE;
    const char *e = getenv("CUBINCACHE_MAXSIZE");
    if (e && *e && cbc_parse_size(e, &v) && v > 0) {
        s->max_size = v;
        return v;
    }
    v = DEFAULT_MAX_SIZE;
    char *path = cbc_asprintf("%s/config", s->root);
    uint8_t *data = NULL;
    size_t len = 0;
    if (path && cbc_file_read(path, &data, &len, NULL) == CBC_OK) {
        const char *p = strstr((const char *)data, "max_size");
        if (p) {
            p += 8;
            while (*p == ' ' || *p == '=')
                p++;
            char val[64];
            size_t n = strcspn(p, "\n");
            if (n < sizeof val) {
                memcpy(val, p, n);
                val[n] = '\0';
                uint64_t x;
                if (cbc_parse_size(val, &x) && x > 0)
                    v = x;
            }
        }
    }
    free(data);
    free(path);
    s->max_size = v;
    return v;
}

enum cbc_status cbc_store_set_max_size(struct cbc_store *s, uint64_t max_size, struct cbc_err *err)
{
    char *path = cbc_asprintf("%s/config", s->root);
    char *text = cbc_asprintf("max_size = %llu\n", (unsigned long long)max_size);
    enum cbc_status st = path && text ? cbc_file_write_atomic(path, text, strlen(text), 0644, err)
                                      : cbc_err_oom(err);
    if (st == CBC_OK)
        s->max_size = max_size;
    free(path);
    free(text);
    return st;
}

/* ---- entries ------------------------------------------------------------- */

/* Verifies an entry file's bytes; on success *payload points inside. */
static bool entry_check(const uint8_t *d, size_t len, const struct cbc_hash *key,
                        const struct cbc_target *t, const char *path, const uint8_t **payload,
                        size_t *plen, char *why, size_t why_len)
{
    if (len < ENTRY_HEADER || memcmp(d, ENTRY_MAGIC, 8) != 0) {
        snprintf(why, why_len, "not a cache entry (bad magic or %zu bytes)", len);
        return false;
    }
    if (cbc_rd32(d + 8) != ENTRY_VERSION) {
        snprintf(why, why_len, "entry format %u, expected %u", cbc_rd32(d + 8), ENTRY_VERSION);
        return false;
    }
    struct cbc_target ft = {d[12], d[13], cbc_rd16(d + 14)};
    if (key && memcmp(d + 16, key->b, 16) != 0) {
        snprintf(why, why_len, "filed under the wrong key");
        return false;
    }
    if (t && !cbc_target_eq(&ft, t)) {
        char a[CBC_TARGET_NAME_MAX], b[CBC_TARGET_NAME_MAX];
        snprintf(why, why_len, "header says %s, expected %s", cbc_target_name(&ft, a),
                 cbc_target_name(t, b));
        return false;
    }
    uint64_t size = cbc_rd64(d + 48);
    if (size != len - ENTRY_HEADER) {
        snprintf(why, why_len, "payload is %zu bytes, header says %llu (truncated?)",
                 len - ENTRY_HEADER, (unsigned long long)size);
        return false;
    }
    struct cbc_hash want, got;
    memcpy(want.b, d + 32, 16);
    cbc_hash_bytes(d + ENTRY_HEADER, (size_t)size, &got);
    if (!cbc_hash_eq(&want, &got)) {
        snprintf(why, why_len, "content hash mismatch");
        return false;
    }
    struct cbc_err e = {0};
    if (cbc_binfmt_verify_target(d + ENTRY_HEADER, (size_t)size, &ft, path, NULL, &e) != CBC_OK) {
        snprintf(why, why_len, "%s", e.msg);
        return false;
    }
    *payload = d + ENTRY_HEADER;
    *plen = (size_t)size;
    return true;
}

enum cbc_status cbc_store_get(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, uint8_t **data, size_t *len,
                              enum cbc_lookup *result, char *why, size_t why_len, struct cbc_err *err)
{
    *result = CBC_LOOKUP_MISS;
    char *path = entry_path(s, "objects", key, ".cbc");
    if (!path)
        return cbc_err_oom(err);
    uint8_t *raw = NULL;
    size_t rlen = 0;
    struct cbc_err e = {0};
    enum cbc_status st = cbc_file_read(path, &raw, &rlen, &e);
    if (st == CBC_E_NOT_FOUND) {
        free(path);
        return CBC_OK;
    }
    if (st != CBC_OK) {
        free(path);
        if (err)
            *err = e;
        return st;
    }
    const uint8_t *payload;
    size_t plen;
    if (!entry_check(raw, rlen, key, target, path, &payload, &plen, why, why_len)) {
        unlink(path);
        s->bytes_added -= (int64_t)rlen;
        free(raw);
        free(path);
        *result = CBC_LOOKUP_DROPPED;
        return CBC_OK;
    }
    memmove(raw, payload, plen);
    utimensat(AT_FDCWD, path, NULL, 0); /* LRU: last use; read-only caches just keep the old time */
    free(path);
    *data = raw;
    *len = plen;
    *result = CBC_LOOKUP_HIT;
    return CBC_OK;
}

static enum cbc_status put_file(struct cbc_store *s, const char *path, const void *data, size_t len,
                                struct cbc_err *err)
{
    char *dir = cbc_path_dir(path);
    enum cbc_status st = dir ? cbc_mkdir_p(dir, 0755, err) : cbc_err_oom(err);
    free(dir);
    if (st == CBC_OK)
        st = cbc_file_write_atomic(path, data, len, 0644, err);
    if (st != CBC_OK) {
        s->store_errors++;
        if (err)
            err->status = CBC_E_CACHE;
        return CBC_E_CACHE;
    }
    return CBC_OK;
}

enum cbc_status cbc_store_put(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, const uint8_t *data, size_t len,
                              struct cbc_err *err)
{
    uint8_t *buf = malloc(ENTRY_HEADER + len);
    char *path = entry_path(s, "objects", key, ".cbc");
    if (!buf || !path) {
        free(buf);
        free(path);
        return cbc_err_oom(err);
    }
    memset(buf, 0, ENTRY_HEADER);
    memcpy(buf, ENTRY_MAGIC, 8);
    cbc_wr32(buf + 8, ENTRY_VERSION);
    buf[12] = target->kind;
    buf[13] = target->variant;
    buf[14] = (uint8_t)target->arch;
    buf[15] = (uint8_t)(target->arch >> 8);
    memcpy(buf + 16, key->b, 16);
    struct cbc_hash h;
    cbc_hash_bytes(data, len, &h);
    memcpy(buf + 32, h.b, 16);
    cbc_wr64(buf + 48, len);
    memcpy(buf + ENTRY_HEADER, data, len);
    bool existed = access(path, F_OK) == 0;
    enum cbc_status st = put_file(s, path, buf, ENTRY_HEADER + len, err);
    free(buf);
    free(path);
    if (st != CBC_OK)
        return st;
    s->stores++;
    if (!existed)
        s->bytes_added += (int64_t)(ENTRY_HEADER + len);

    /* merge the counters now, and trim when the running total says the
     * store has outgrown its limit */
    if (with_counters(s, add_counts, s, true, NULL) == CBC_OK) {
        s->hits = s->misses = s->stores = s->dropped = s->store_errors = 0;
        s->bytes_added = 0;
        uint64_t max = cbc_store_max_size(s);
        if (s->seen_bytes > max)
            cbc_store_trim(s, max - max / 10, NULL, NULL, NULL);
    }
    return CBC_OK;
}

enum cbc_status cbc_store_blob_get(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                                   uint8_t **data, size_t *len, struct cbc_err *err)
{
    char *path = entry_path(s, ns, key, ".dep");
    if (!path)
        return cbc_err_oom(err);
    enum cbc_status st = cbc_file_read(path, data, len, err);
    free(path);
    return st;
}

enum cbc_status cbc_store_blob_put(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                                   const void *data, size_t len, struct cbc_err *err)
{
    char *path = entry_path(s, ns, key, ".dep");
    if (!path)
        return cbc_err_oom(err);
    enum cbc_status st = put_file(s, path, data, len, err);
    free(path);
    return st;
}

/* ---- scanning ------------------------------------------------------------ */

struct scan_item {
    char *path;
    uint64_t size;
    int64_t mtime_ns;
};

struct scan {
    struct scan_item *v;
    size_t n, cap;
    uint64_t total;
};

static int cmp_mtime(const void *a, const void *b)
{
    const struct scan_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

/* Walks ns/xx/ directories. Temporaries (".name.XXXXXX") older than an
 * hour are removed on the way; younger ones belong to a live writer. */
static enum cbc_status scan_ns(struct cbc_store *s, const char *ns, struct scan *out,
                               struct cbc_err *err)
{
    char *base = cbc_asprintf("%s/%s", s->root, ns);
    if (!base)
        return cbc_err_oom(err);
    DIR *top = opendir(base);
    if (!top) {
        free(base);
        return CBC_OK;
    }
    time_t now = time(NULL);
    struct dirent *de;
    enum cbc_status st = CBC_OK;
    while (st == CBC_OK && (de = readdir(top))) {
        if (de->d_name[0] == '.')
            continue;
        char *sub = cbc_asprintf("%s/%s", base, de->d_name);
        DIR *d = sub ? opendir(sub) : NULL;
        struct dirent *fe;
        while (d && st == CBC_OK && (fe = readdir(d))) {
            if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
                continue;
            char *p = cbc_asprintf("%s/%s", sub, fe->d_name);
            struct stat sb;
            if (!p || lstat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) {
                free(p);
                continue;
            }
            if (fe->d_name[0] == '.') {
                if (now - sb.st_mtime > STALE_TMP_SECONDS)
                    unlink(p);
                free(p);
                continue;
            }
            if (!cbc_grow(&out->v, out->n, &out->cap, sizeof *out->v, 256)) {
                free(p);
                st = cbc_err_oom(err);
                break;
            }
            out->v[out->n++] = (struct scan_item){
                p, (uint64_t)sb.st_size,
                (int64_t)sb.st_mtim.tv_sec * 1000000000 + (int64_t)sb.st_mtim.tv_nsec};
            out->total += (uint64_t)sb.st_size;
        }
        if (d)
            closedir(d);
        free(sub);
    }
    closedir(top);
    free(base);
    return st;
}

static void scan_release(struct scan *sc)
{
    for (size_t i = 0; i < sc->n; i++)
        free(sc->v[i].path);
    free(sc->v);
    memset(sc, 0, sizeof *sc);
}

struct read_ctx {
    uint64_t v[C_COUNT];
};

static void copy_counts(uint64_t v[C_COUNT], void *ctx)
{
    memcpy(((struct read_ctx *)ctx)->v, v, sizeof(uint64_t) * C_COUNT);
}

static void set_bytes(uint64_t v[C_COUNT], void *ctx)
{
    v[C_BYTES] = *(uint64_t *)ctx;
}

enum cbc_status cbc_store_stats(struct cbc_store *s, struct cbc_store_stats *out,
                                struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct read_ctx rc = {{0}};
    enum cbc_status st = with_counters(s, copy_counts, &rc, false, err);
    if (st != CBC_OK)
        return st;
    out->hits = rc.v[C_HITS] + s->hits;
    out->misses = rc.v[C_MISSES] + s->misses;
    out->stores = rc.v[C_STORES] + s->stores;
    out->dropped = rc.v[C_DROPPED] + s->dropped;
    out->store_errors = rc.v[C_STORE_ERRORS] + s->store_errors;
    struct scan sc = {0};
    st = scan_ns(s, "objects", &sc, err);
    out->entries = sc.n;
    out->bytes = sc.total;
    scan_release(&sc);
    out->max_size = cbc_store_max_size(s);
    return st;
}

enum cbc_status cbc_store_trim(struct cbc_store *s, uint64_t max_size, uint64_t *removed,
                               uint64_t *removed_bytes, struct cbc_err *err)
{
    struct scan sc = {0};
    enum cbc_status st = scan_ns(s, "objects", &sc, err);
    uint64_t n = 0, b = 0;
    if (st == CBC_OK) {
        if (sc.n) /* qsort must not see the NULL of an empty scan */
            qsort(sc.v, sc.n, sizeof *sc.v, cmp_mtime);
        uint64_t total = sc.total;
        for (size_t i = 0; i < sc.n && total > max_size; i++) {
            if (unlink(sc.v[i].path) == 0) {
                total -= sc.v[i].size;
                n++;
                b += sc.v[i].size;
            }
        }
        /* sweeps stale temporaries of the dependency records and lists too */
        static const char *const small[] = {"direct", "deps"};
        for (size_t i = 0; i < CBC_ARRAY_LEN(small); i++) {
            struct scan dsc = {0};
            scan_ns(s, small[i], &dsc, NULL);
            scan_release(&dsc);
        }
        s->bytes_added = 0;
        with_counters(s, set_bytes, &total, true, NULL);
    }
    scan_release(&sc);
    if (removed)
        *removed = n;
    if (removed_bytes)
        *removed_bytes = b;
    return st;
}

static uint64_t remove_all(struct cbc_store *s, const char *ns)
{
    char *base = cbc_asprintf("%s/%s", s->root, ns);
    uint64_t n = 0;
    DIR *top = base ? opendir(base) : NULL;
    struct dirent *de;
    while (top && (de = readdir(top))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *sub = cbc_asprintf("%s/%s", base, de->d_name);
        DIR *d = sub ? opendir(sub) : NULL;
        struct dirent *fe;
        while (d && (fe = readdir(d))) {
            if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
                continue;
            char *p = cbc_asprintf("%s/%s", sub, fe->d_name);
            if (p && unlink(p) == 0 && fe->d_name[0] != '.')
                n++;
            free(p);
        }
        if (d)
            closedir(d);
        if (sub)
            rmdir(sub);
        free(sub);
    }
    if (top)
        closedir(top);
    free(base);
    return n;
}

enum cbc_status cbc_store_clean(struct cbc_store *s, uint64_t *removed, struct cbc_err *err)
{
    (void)err;
    uint64_t n = remove_all(s, "objects");
    remove_all(s, "direct");
    remove_all(s, "deps");
    uint64_t zero = 0;
    s->bytes_added = 0;
    with_counters(s, set_bytes, &zero, true, NULL);
    if (removed)
        *removed = n;
    return CBC_OK;
}

enum cbc_status cbc_store_verify_all(struct cbc_store *s, uint64_t *checked, uint64_t *dropped,
                                     void (*report)(void *ctx, const char *path, const char *why),
                                     void *ctx, struct cbc_err *err)
{
    struct scan sc = {0};
    enum cbc_status st = scan_ns(s, "objects", &sc, err);
    uint64_t c = 0, d = 0;
    for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
        uint8_t *raw = NULL;
        size_t len = 0;
        if (cbc_file_read(sc.v[i].path, &raw, &len, NULL) != CBC_OK)
            continue; /* removed meanwhile by another process */
        c++;
        /* the file name is the key: check that the header agrees */
        struct cbc_hash key;
        const char *base = cbc_path_base(sc.v[i].path);
        char *dir = cbc_path_dir(sc.v[i].path);
        char hex[CBC_HASH_HEX_LEN + 8];
        snprintf(hex, sizeof hex, "%s%.30s", dir ? cbc_path_base(dir) : "", base);
        free(dir);
        bool have_key = strlen(base) == 34 && cbc_hash_from_hex(hex, &key);
        const uint8_t *payload;
        size_t plen;
        char why[CBC_ERR_MSG_MAX];
        if (!have_key) {
            snprintf(why, sizeof why, "file name is not a key");
        }
        if (!have_key ||
            !entry_check(raw, len, &key, NULL, sc.v[i].path, &payload, &plen, why, sizeof why)) {
            unlink(sc.v[i].path);
            d++;
            if (report)
                report(ctx, sc.v[i].path, why);
        }
        free(raw);
    }
    scan_release(&sc);
    s->dropped += d;
    if (checked)
        *checked = c;
    if (dropped)
        *dropped = d;
    return st;
}
