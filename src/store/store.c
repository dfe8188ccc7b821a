/* store.c: the content-addressed cache (format and invariants in store.h).
 *
 * Design choices: one file per entry, so publishing is one rename and no
 * lock is needed for data; entries are verified on every read rather than
 * trusted, so a torn write (power loss, no fsync) or a tampered file is
 * caught and dropped; counters are batched in memory and merged into
 * v1/stats (read, add, one fixed-length write in place; see with_counters)
 * under an flock of the v1 directory when the store is closed and after
 * each entry is stored. LRU order is the entry's mtime, bumped on hit.
 *
 * Every path below v1 goes through the directory descriptor s->fd with no
 * symbolic link allowed (cbc_openat_beneath, cbc_dir_openat): the cache
 * directory may be writable by other users, and a link planted there must
 * never turn a read, a write or a delete towards a file elsewhere.
 */
#include "store.h"
#include "remote.h"

#include <cubincache/binfmt.h>

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
#define BLOB_MAGIC "CBCBLOB\n"
#define BLOB_HEADER 24
#define BLOB_MAX (64ull << 20)
#define SMALL_MAX 4096 /* stats and config */
#define DEFAULT_MAX_SIZE (5ull * 1000 * 1000 * 1000)
#define STALE_TMP_SECONDS 3600
#define LOCK_WAIT_MS 2000

/* Every namespace the store owns; nothing else under v1 is touched. */
static const char *const namespaces[] = {"objects", "direct", "deps", "tools"};

struct cbc_store {
    char *root;  /* <cache>/v1, for messages */
    int fd;      /* <cache>/v1, opened without following a link */
    bool readonly;
    struct cbc_perm perm;
    bool perm_read;
    uint64_t hits, misses, dropped, stores, store_errors, uncacheable;
    int64_t bytes_added; /* running size change since open */
    uint64_t max_size;   /* 0 until read */
    uint64_t seen_bytes; /* the shared running total, as of the last merge */
    /* the second-level cache (remote.h), when one is attached */
    struct cbc_remote *remote;
    bool remote_checked;  /* the skip marker was read */
    bool remote_warned;   /* one warning per process */
    bool last_remote;     /* the last get's hit came from the remote */
    uint64_t remote_hits, remote_misses; /* entries; what the records cost is in bytes/time */
    cbc_msg_fn msg;
    void *msg_ctx;
    struct cbc_remote_stats remote_merged; /* what the counters already hold */
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

/* ---- config: umask and size limit ----------------------------------------- */

/* The value of `key` in v1/config ("key = value" lines), or "" when absent. */
static void config_value(struct cbc_store *s, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    uint8_t *data = NULL;
    size_t n = 0;
    if (cbc_read_at(s->fd, s->root, "config", SMALL_MAX, &data, &n, NULL) != CBC_OK)
        return;
    size_t kl = strlen(key);
    for (const char *p = (const char *)data; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > kl && strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '=')) {
            const char *v = p + kl;
            while (v < p + ll && (*v == ' ' || *v == '='))
                v++;
            size_t vl = (size_t)(p + ll - v);
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\r'))
                vl--;
            if (vl < len) {
                memcpy(out, v, vl);
                out[vl] = '\0';
            }
        }
        p = eol ? eol + 1 : NULL;
    }
    free(data);
}

static const struct cbc_perm *store_perm(struct cbc_store *s)
{
    if (!s->perm_read) {
        s->perm_read = true;
        const char *e = getenv("CUBINCACHE_UMASK");
        char v[16] = "";
        if (!(e && *e))
            config_value(s, "umask", v, sizeof v);
        s->perm.umask = cbc_perm_parse_umask(e && *e ? e : v);
    }
    return &s->perm;
}

/* ---- open and close ---------------------------------------------------------- */

static enum cbc_status open_store(const char *root, bool create, struct cbc_store **out,
                                  struct cbc_err *err)
{
    if (!root)
        return cbc_err_set(err, CBC_E_CACHE, "no cache directory: HOME, XDG_CACHE_HOME and "
                                             "CUBINCACHE_DIR are all unset");
    struct cbc_store *s = calloc(1, sizeof *s);
    if (!s)
        return cbc_err_oom(err);
    s->fd = -1;
    s->readonly = !create;
    const char *e = getenv("CUBINCACHE_UMASK");
    s->perm.umask = cbc_perm_parse_umask(e); /* what creates v1; config is read later */
    s->root = cbc_asprintf("%s/v1", root);
    if (!s->root) {
        free(s);
        return cbc_err_oom(err);
    }
    struct cbc_err me = {0};
    /* the root itself is the user's choice and may be reached through a
     * link; nothing below it is */
    enum cbc_status st = create ? cbc_mkdir_p(root, 0777, &me) : CBC_OK;
    int rootfd = st == CBC_OK ? open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (st == CBC_OK && rootfd < 0)
        st = cbc_err_set(&me, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_CACHE, "%s",
                         strerror(errno));
    if (st == CBC_OK) {
        s->fd = cbc_dir_openat(rootfd, "v1", create, &s->perm);
        if (s->fd < 0)
            st = cbc_err_set(&me, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_CACHE, "%s%s",
                             errno == ELOOP || errno == ENOTDIR ? "v1 is not a directory (a "
                                                                  "symbolic link?): "
                                                                : "v1: ",
                             strerror(errno));
    }
    if (rootfd >= 0)
        close(rootfd);
    if (st != CBC_OK) {
        cbc_store_close(s);
        if (st == CBC_E_NOT_FOUND && !create)
            return cbc_err_set(err, CBC_E_NOT_FOUND, "no cache in '%s'", root);
        return cbc_err_set(err, CBC_E_CACHE, "cache directory '%s' is unusable: %s", root, me.msg);
    }
    *out = s;
    return CBC_OK;
}

enum cbc_status cbc_store_open(const char *root, struct cbc_store **out, struct cbc_err *err)
{
    return open_store(root, true, out, err);
}

enum cbc_status cbc_store_open_existing(const char *root, struct cbc_store **out,
                                        struct cbc_err *err)
{
    return open_store(root, false, out, err);
}

const char *cbc_store_root(const struct cbc_store *s)
{
    return s->root;
}

/* "<ns>/ab/<30 hex><ext>" */
static void rel_path(const char *ns, const struct cbc_hash *key, const char *ext, char *out,
                     size_t len)
{
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(key, hex);
    snprintf(out, len, "%s/%.2s/%s%s", ns, hex, hex + 2, ext);
}

/* ---- counters ---------------------------------------------------------------- */

static const char *const counter_names[] = {
    "hits",        "misses",       "stores",          "dropped",
    "store_errors", "bytes",       "uncacheable",     "remote_hits",
    "remote_misses", "remote_errors", "remote_bytes_read", "remote_bytes_written",
    "remote_time_us"};
enum {
    C_HITS, C_MISSES, C_STORES, C_DROPPED, C_STORE_ERRORS, C_BYTES, C_UNCACHEABLE,
    C_R_HITS, C_R_MISSES, C_R_ERRORS, C_R_READ, C_R_WRITTEN, C_R_TIME, C_COUNT
};

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

/* An exclusive flock of the v1 directory, waited for at most LOCK_WAIT_MS:
 * a holder that never lets go costs counts, never a hang. */
static bool lock_dir(int fd, int how)
{
    for (int waited = 0;; waited++) {
        if (flock(fd, how | LOCK_NB) == 0)
            return true;
        if (errno != EWOULDBLOCK || waited >= LOCK_WAIT_MS)
            return false;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* The counters as text, every value padded to 20 digits: the file has one
 * length whatever the counts, so an in-place rewrite is one pwrite that
 * never leaves a longer tail behind. */
static int format_counters(const uint64_t v[C_COUNT], char *buf, size_t cap)
{
    int n = 0;
    for (int i = 0; i < C_COUNT; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s %20llu\n", counter_names[i],
                      (unsigned long long)v[i]);
    return n;
}

/* Rewrites v1/stats in place when it is a plain file with one name (a link
 * is refused by O_NOFOLLOW, a hard link or anything else by the fstat), so a
 * close costs one pwrite, not a rename. Returns false when the file is not
 * fit for that (or absent); the caller then replaces it. */
static bool counters_in_place(struct cbc_store *s, void (*fn)(uint64_t v[C_COUNT], void *),
                              void *ctx)
{
    int fd = openat(s->fd, "stats", O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    char buf[SMALL_MAX + 1];
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_size < SMALL_MAX)
        got = pread(fd, buf, SMALL_MAX, 0);
    if (got < 0) {
        close(fd);
        return false;
    }
    buf[got] = '\0';
    uint64_t v[C_COUNT] = {0};
    parse_counters(buf, v);
    fn(v, ctx);
    int n = format_counters(v, buf, sizeof buf);
    bool ok = pwrite(fd, buf, (size_t)n, 0) == n && (got <= n || ftruncate(fd, n) == 0);
    close(fd);
    return ok;
}

/* Runs fn on the counters: read v1/stats, fn, and with write_back store
 * the result, all under the directory lock. */
static enum cbc_status with_counters(struct cbc_store *s, void (*fn)(uint64_t v[C_COUNT], void *),
                                     void *ctx, bool write_back, struct cbc_err *err)
{
    bool locked = lock_dir(s->fd, write_back ? LOCK_EX : LOCK_SH);
    if (!locked && write_back)
        return cbc_err_set(err, CBC_E_CACHE, "cannot lock the cache counters in '%s'", s->root);
    enum cbc_status st = CBC_OK;
    if (!(write_back && counters_in_place(s, fn, ctx))) {
        uint8_t *data = NULL;
        size_t len = 0;
        uint64_t v[C_COUNT] = {0};
        if (cbc_read_at(s->fd, s->root, "stats", SMALL_MAX, &data, &len, NULL) == CBC_OK)
            parse_counters((const char *)data, v);
        free(data);
        fn(v, ctx);
        if (write_back) {
            char buf[512];
            int n = format_counters(v, buf, sizeof buf);
            st = cbc_write_at(s->fd, s->root, "stats", buf, (size_t)n, store_perm(s), false, err);
            if (st != CBC_OK)
                st = CBC_E_CACHE;
        }
    }
    if (locked)
        flock(s->fd, LOCK_UN);
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
    v[C_UNCACHEABLE] += s->uncacheable;
    int64_t b = (int64_t)v[C_BYTES] + s->bytes_added;
    v[C_BYTES] = b < 0 ? 0 : (uint64_t)b;
    s->seen_bytes = v[C_BYTES];
    if (s->remote) {
        struct cbc_remote_stats r, *m = &s->remote_merged;
        cbc_remote_stats(s->remote, &r);
        v[C_R_HITS] += s->remote_hits;
        v[C_R_MISSES] += s->remote_misses;
        s->remote_hits = s->remote_misses = 0;
        v[C_R_ERRORS] += r.errors - m->errors;
        v[C_R_READ] += r.bytes_read - m->bytes_read;
        v[C_R_WRITTEN] += r.bytes_written - m->bytes_written;
        v[C_R_TIME] += r.time_us - m->time_us;
        *m = r;
    }
}

static bool remote_counts_pending(const struct cbc_store *s)
{
    if (!s->remote)
        return false;
    struct cbc_remote_stats r;
    cbc_remote_stats(s->remote, &r);
    return s->remote_hits || s->remote_misses || memcmp(&r, &s->remote_merged, sizeof r) != 0;
}

void cbc_store_count(struct cbc_store *s, uint64_t hits, uint64_t misses, uint64_t dropped)
{
    s->hits += hits;
    s->misses += misses;
    s->dropped += dropped;
}

void cbc_store_count_uncacheable(struct cbc_store *s)
{
    s->uncacheable++;
}

void cbc_store_close(struct cbc_store *s)
{
    if (!s)
        return;
    if (s->fd >= 0 && !s->readonly &&
        (s->hits || s->misses || s->stores || s->dropped || s->store_errors || s->uncacheable ||
         s->bytes_added || remote_counts_pending(s)))
        with_counters(s, add_counts, s, true, NULL);
    cbc_remote_free(s->remote);
    if (s->fd >= 0)
        close(s->fd);
    free(s->root);
    free(s);
}

/* ---- sizes and config -------------------------------------------------------- */

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
    char val[64];
    config_value(s, "max_size", val, sizeof val);
    uint64_t x;
    if (val[0] && cbc_parse_size(val, &x) && x > 0)
        v = x;
    s->max_size = v;
    return v;
}

enum cbc_status cbc_store_set_max_size(struct cbc_store *s, uint64_t max_size, struct cbc_err *err)
{
    char um[16];
    config_value(s, "umask", um, sizeof um);
    char text[128];
    int n = snprintf(text, sizeof text, "max_size = %llu\n%s%s%s", (unsigned long long)max_size,
                     um[0] ? "umask = " : "", um, um[0] ? "\n" : "");
    enum cbc_status st =
        cbc_write_at(s->fd, s->root, "config", text, (size_t)n, store_perm(s), false, err);
    if (st != CBC_OK)
        return CBC_E_CACHE;
    s->max_size = max_size;
    return CBC_OK;
}

/* ---- the remote (remote.h) ------------------------------------------------------ */

/* v1/remote-skip: "<hash of the remote's name> <unix time until> <what>\n",
 * written when a remote fails ("skip") or refuses writes ("no-writes"), so
 * the other builds of the next seconds skip it (or only read) instead of
 * each waiting for its timeout and warning again. */
#define SKIP_FILE "remote-skip"

static void name_hash_hex(const struct cbc_store *s, char hex[CBC_HASH_HEX_LEN + 1])
{
    const char *name = cbc_remote_config(s->remote)->name;
    struct cbc_hash h;
    cbc_hash_bytes(name, strlen(name), &h);
    cbc_hash_hex(&h, hex);
}

/* Whether the remote may be asked now: attached, not failed in this
 * process, not marked failed by another within its skip time. */
static bool remote_ready(struct cbc_store *s)
{
    if (!s->remote || !cbc_remote_usable(s->remote))
        return false;
    if (s->remote_checked)
        return true;
    s->remote_checked = true;
    uint8_t *data = NULL;
    size_t len = 0;
    if (cbc_read_at(s->fd, s->root, SKIP_FILE, SMALL_MAX, &data, &len, NULL) != CBC_OK)
        return true;
    char hex[CBC_HASH_HEX_LEN + 1];
    name_hash_hex(s, hex);
    unsigned long long until = 0;
    char what[16] = "skip";
    bool marked = len > CBC_HASH_HEX_LEN && !memcmp(data, hex, CBC_HASH_HEX_LEN) &&
                  sscanf((const char *)data + CBC_HASH_HEX_LEN, " %llu %15s", &until, what) >= 1 &&
                  (unsigned long long)time(NULL) < until;
    free(data);
    bool skip = marked && strcmp(what, "no-writes") != 0;
    if (marked && !skip) {
        cbc_remote_stop_writes(s->remote);
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_NOTE, "remote cache %s: read only: it refused writes less than "
                                    "%u s ago (%s/%s)",
                   cbc_remote_config(s->remote)->name, cbc_remote_config(s->remote)->skip_s,
                   s->root, SKIP_FILE);
    }
    if (skip) {
        cbc_remote_disable(s->remote);
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_NOTE, "remote cache %s skipped: it failed less than %u s ago "
                                    "(%s/%s)",
                   cbc_remote_config(s->remote)->name, cbc_remote_config(s->remote)->skip_s,
                   s->root, SKIP_FILE);
    }
    return !skip;
}

/* The remote failed: one warning, and the marker for the other builds. */
static void remote_failed(struct cbc_store *s, const struct cbc_err *e)
{
    const struct cbc_remote_cfg *cfg = cbc_remote_config(s->remote);
    bool failed = !cbc_remote_usable(s->remote);
    if ((failed || !cbc_remote_writable(s->remote)) && cfg->skip_s > 0 && !s->readonly) {
        char hex[CBC_HASH_HEX_LEN + 1], text[128];
        name_hash_hex(s, hex);
        int n = snprintf(text, sizeof text, "%s %llu %s\n", hex,
                         (unsigned long long)time(NULL) + cfg->skip_s,
                         failed ? "skip" : "no-writes");
        cbc_write_at(s->fd, s->root, SKIP_FILE, text, (size_t)n, store_perm(s), false, NULL);
    }
    if (s->remote_warned)
        return;
    s->remote_warned = true;
    if (!cbc_remote_usable(s->remote))
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "%s; building without it (skipped by this process and, "
                                       "for %u s, by the other builds using this cache)",
                   e->msg, cfg->skip_s);
    else
        cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "%s (and, for %u s, by the other builds using this "
                                       "cache)", e->msg, cfg->skip_s);
}

static void remote_bad_value(struct cbc_store *s, const char *why)
{
    cbc_say(s->msg, s->msg_ctx, CBC_MSG_WARNING, "remote cache %s: ignored a bad entry (%s); compiling it here",
               cbc_remote_config(s->remote)->name, why);
}

static bool entry_check(const uint8_t *d, size_t len, const struct cbc_hash *key,
                        const struct cbc_target *t, const char *path, const uint8_t **payload,
                        size_t *plen, char *why, size_t why_len);
static enum cbc_status put_file(struct cbc_store *s, const char *rel, const void *data, size_t len,
                                bool *existed, struct cbc_err *err);

/* A local miss asks the remote: the bytes are a local file, checked by
 * `check` (which fills why); a good one is written here too. */
static bool remote_fetch(struct cbc_store *s, const char *ns, const char *rel,
                         const struct cbc_hash *key, uint8_t **raw, size_t *n)
{
    if (!remote_ready(s))
        return false;
    struct cbc_err e = {0};
    bool bad_value = false;
    char why[400] = "";
    enum cbc_status st = cbc_remote_get(s->remote, ns, key, raw, n, &bad_value, why, sizeof why,
                                        &e);
    if (st == CBC_E_CACHE)
        remote_failed(s, &e);
    else if (bad_value)
        remote_bad_value(s, why);
    (void)rel;
    return st == CBC_OK;
}

static void remote_backfill(struct cbc_store *s, const char *rel, const uint8_t *raw, size_t n,
                            bool entry)
{
    if (s->readonly)
        return;
    bool existed = false;
    if (put_file(s, rel, raw, n, &existed, NULL) == CBC_OK && entry && !existed)
        s->bytes_added += (int64_t)n;
}

static void remote_put(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                       const void *data, size_t len)
{
    if (!remote_ready(s))
        return;
    struct cbc_err e = {0};
    if (cbc_remote_put(s->remote, ns, key, data, len, &e) != CBC_OK)
        remote_failed(s, &e);
}


static enum cbc_status remote_get_entry(struct cbc_store *s, const char *rel,
                                        const struct cbc_hash *key,
                                        const struct cbc_target *target, uint8_t **data,
                                        size_t *len, enum cbc_lookup *result)
{
    uint8_t *raw = NULL;
    size_t n = 0;
    if (!remote_ready(s))
        return CBC_OK;
    if (!remote_fetch(s, "objects", rel, key, &raw, &n)) {
        s->remote_misses++;
        return CBC_OK;
    }
    const uint8_t *payload;
    size_t plen;
    char why[300];
    /* the very check a local entry passes */
    if (!entry_check(raw, n, key, target, rel, &payload, &plen, why, sizeof why)) {
        char full[400];
        snprintf(full, sizeof full, "%s: %s", rel, why);
        remote_bad_value(s, full);
        free(raw);
        s->remote_misses++;
        return CBC_OK;
    }
    s->remote_hits++;
    remote_backfill(s, rel, raw, n, true);
    memmove(raw, payload, plen);
    *data = raw;
    *len = plen;
    *result = CBC_LOOKUP_HIT;
    s->last_remote = true;
    return CBC_OK;
}

static bool remote_get_blob(struct cbc_store *s, const char *ns, const char *rel,
                            const struct cbc_hash *key, uint8_t **raw, size_t *n)
{
    if (!remote_ready(s))
        return false;
    if (!remote_fetch(s, ns, rel, key, raw, n)) {
        /* no direct-mode record: the entry lookup that needs it misses too */
        if (!strcmp(ns, "direct"))
            s->remote_misses++;
        return false;
    }
    if (*n < BLOB_HEADER || memcmp(*raw, BLOB_MAGIC, 8) != 0 || memcmp(*raw + 8, key->b, 16) != 0) {
        remote_bad_value(s, "a record that is not a blob of its key");
        free(*raw);
        *raw = NULL;
        return false;
    }
    remote_backfill(s, rel, *raw, *n, false);
    return true;
}

enum cbc_status cbc_store_attach_remote(struct cbc_store *s, const char *spec, cbc_msg_fn fn,
                                        void *ctx, struct cbc_err *err)
{
    struct cbc_remote_cfg cfg;
    enum cbc_status st = cbc_remote_parse(spec, &cfg, err);
    if (st != CBC_OK)
        return st;
    cbc_remote_free(s->remote);
    s->remote = cbc_remote_new(&cfg);
    if (!s->remote) {
        cbc_remote_cfg_release(&cfg);
        return cbc_err_oom(err);
    }
    s->msg = fn;
    s->msg_ctx = ctx;
    s->remote_checked = s->remote_warned = false;
    memset(&s->remote_merged, 0, sizeof s->remote_merged);
    return CBC_OK;
}

char *cbc_store_remote_spec(struct cbc_store *s, const char *explicit_spec, const char **from)
{
    const char *f = "--remote";
    char *spec = NULL;
    const char *e = getenv("CUBINCACHE_REMOTE");
    char v[SMALL_MAX];
    if (explicit_spec) {
        spec = cbc_strdup(explicit_spec);
    } else if (e) {
        f = "CUBINCACHE_REMOTE";
        spec = cbc_strdup(e);
    } else {
        f = "'remote' in the cache's config";
        config_value(s, "remote", v, sizeof v);
        spec = v[0] ? cbc_strdup(v) : NULL;
    }
    if (from)
        *from = f;
    return spec;
}

enum cbc_status cbc_store_attach_default_remote(struct cbc_store *s, const char *explicit_spec,
                                                cbc_msg_fn fn, void *ctx, struct cbc_err *err)
{
    const char *from = NULL;
    char *spec = cbc_store_remote_spec(s, explicit_spec, &from);
    if (!spec)
        return CBC_OK;
    enum cbc_status st = cbc_store_attach_remote(s, spec, fn, ctx, err);
    free(spec);
    if (st == CBC_E_NOT_FOUND) /* "none" or "" */
        return CBC_OK;
    if (st == CBC_E_USAGE)
        cbc_err_prefix(err, "%s", from);
    return st;
}

const char *cbc_store_remote_name(const struct cbc_store *s)
{
    return s->remote ? cbc_remote_config(s->remote)->name : NULL;
}

bool cbc_store_last_remote(const struct cbc_store *s)
{
    return s->last_remote;
}

/* ---- entries ------------------------------------------------------------------ */

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
    if (ft.kind != CBC_STORE_RESULT_KIND &&
        cbc_binfmt_verify_target(d + ENTRY_HEADER, (size_t)size, &ft, path, NULL, &e) != CBC_OK) {
        snprintf(why, why_len, "%s", e.msg);
        return false;
    }
    *payload = d + ENTRY_HEADER;
    *plen = (size_t)size;
    return true;
}

/* Removes `rel` when it is a regular file starting with `magic`, or one a
 * torn write of ours left (empty, or a zero-filled header: power lost after
 * the rename reached the disk but before the data did): the one way
 * anything in the store is deleted. 0 on success, else an errno (EPERM: it
 * is not the store's, left alone). */
static int remove_ours(struct cbc_store *s, const char *rel, const char *magic)
{
    char dir[64];
    const char *slash = strrchr(rel, '/');
    if (!slash || (size_t)(slash - rel) >= sizeof dir)
        return EINVAL;
    memcpy(dir, rel, (size_t)(slash - rel));
    dir[slash - rel] = '\0';
    int dfd = cbc_openat_beneath(s->fd, dir, O_RDONLY | O_DIRECTORY, 0);
    if (dfd < 0)
        return errno;
    int fd = openat(dfd, slash + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int rc = fd < 0 ? errno : 0;
    if (fd >= 0) {
        struct stat st;
        static const char zeros[8];
        char head[8];
        ssize_t got = 0;
        if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            rc = EPERM;
        else if (magic && st.st_size > 0 &&
                 ((got = pread(fd, head, 8, 0)) != 8 ||
                  (memcmp(head, magic, 8) != 0 && memcmp(head, zeros, 8) != 0)))
            rc = EPERM;
        close(fd);
    }
    if (rc == 0 && unlinkat(dfd, slash + 1, 0) != 0)
        rc = errno;
    close(dfd);
    return rc;
}

enum cbc_status cbc_store_get(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, uint8_t **data, size_t *len,
                              enum cbc_lookup *result, char *why, size_t why_len, struct cbc_err *err)
{
    *result = CBC_LOOKUP_MISS;
    s->last_remote = false;
    char rel[80];
    rel_path("objects", key, ".cbc", rel, sizeof rel);
    int fd = cbc_openat_beneath(s->fd, rel, O_RDONLY | O_NONBLOCK, 0);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return remote_get_entry(s, rel, key, target, data, len, result);
        return cbc_err_set(err, CBC_E_CACHE, "cannot open '%s/%s': %s", s->root, rel,
                           errno == ELOOP || errno == EXDEV ? "a symbolic link is on the way"
                                                            : strerror(errno));
    }
    struct stat sb;
    uint8_t *raw = NULL;
    size_t rlen = 0;
    enum cbc_status st = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode)
                             ? cbc_fd_read_max(fd, rel, CBC_FILE_MAX, &raw, &rlen, err)
                             : cbc_err_set(err, CBC_E_CACHE, "'%s/%s' is not a regular file",
                                           s->root, rel);
    if (st != CBC_OK) {
        close(fd);
        return st;
    }
    const uint8_t *payload;
    size_t plen;
    if (!entry_check(raw, rlen, key, target, rel, &payload, &plen, why, why_len)) {
        close(fd);
        free(raw);
        if (remove_ours(s, rel, ENTRY_MAGIC) == 0)
            s->bytes_added -= (int64_t)rlen;
        *result = CBC_LOOKUP_DROPPED;
        return CBC_OK;
    }
    futimens(fd, NULL); /* LRU: last use; a read-only cache just keeps the old time */
    close(fd);
    memmove(raw, payload, plen);
    *data = raw;
    *len = plen;
    *result = CBC_LOOKUP_HIT;
    return CBC_OK;
}

/* Publishes "<ns>/ab/<name>" beneath v1, creating the two directories. */
static enum cbc_status put_file(struct cbc_store *s, const char *rel, const void *data, size_t len,
                                bool *existed, struct cbc_err *err)
{
    char ns[16], shard[3];
    const char *a = strchr(rel, '/');
    size_t nl = (size_t)(a - rel);
    memcpy(ns, rel, nl);
    ns[nl] = '\0';
    memcpy(shard, a + 1, 2);
    shard[2] = '\0';
    const struct cbc_perm *perm = store_perm(s);
    int nfd = cbc_dir_openat(s->fd, ns, true, perm);
    int sfd = nfd >= 0 ? cbc_dir_openat(nfd, shard, true, perm) : -1;
    int e = errno;
    if (nfd >= 0)
        close(nfd);
    enum cbc_status st = CBC_OK;
    if (sfd < 0) {
        st = cbc_err_set(err, CBC_E_CACHE, "cannot create '%s/%s/%s': %s", s->root, ns, shard,
                         e == ELOOP || e == ENOTDIR ? "not a directory (a symbolic link?)"
                                                    : strerror(e));
    } else {
        if (existed)
            *existed = faccessat(sfd, a + 4, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
        char dir[300];
        snprintf(dir, sizeof dir, "%s/%s/%s", s->root, ns, shard);
        st = cbc_write_at(sfd, dir, a + 4, data, len, perm, false, err);
        close(sfd);
    }
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
    if (s->readonly)
        return cbc_err_set(err, CBC_E_CACHE, "the cache '%s' is open for reading only", s->root);
    uint8_t *buf = malloc(ENTRY_HEADER + len);
    if (!buf)
        return cbc_err_oom(err);
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
    char rel[80];
    rel_path("objects", key, ".cbc", rel, sizeof rel);
    bool existed = false;
    enum cbc_status st = put_file(s, rel, buf, ENTRY_HEADER + len, &existed, err);
    remote_put(s, "objects", key, buf, ENTRY_HEADER + len);
    free(buf);
    if (st != CBC_OK)
        return st;
    s->stores++;
    if (!existed)
        s->bytes_added += (int64_t)(ENTRY_HEADER + len);

    /* merge the counters now, and trim when the running total says the
     * store has outgrown its limit */
    if (with_counters(s, add_counts, s, true, NULL) == CBC_OK) {
        s->hits = s->misses = s->stores = s->dropped = s->store_errors = s->uncacheable = 0;
        s->bytes_added = 0;
        uint64_t max = cbc_store_max_size(s);
        if (s->seen_bytes > max)
            cbc_store_trim(s, max - max / 10, NULL, NULL, NULL);
    }
    return CBC_OK;
}

/* The directory of a blob namespace (one of namespaces[]). */
static const char *ns_dir(enum cbc_store_ns ns)
{
    switch (ns) {
    case CBC_STORE_DIRECT: return "direct";
    case CBC_STORE_DEPS: return "deps";
    case CBC_STORE_TOOLS: return "tools";
    }
    return NULL;
}

enum cbc_status cbc_store_blob_get(struct cbc_store *s, enum cbc_store_ns which,
                                   const struct cbc_hash *key, uint8_t **data, size_t *len,
                                   struct cbc_err *err)
{
    const char *ns = ns_dir(which);
    if (!ns)
        return cbc_err_set(err, CBC_E_USAGE, "no blob namespace %d in the store", (int)which);
    char rel[80];
    rel_path(ns, key, ".dep", rel, sizeof rel);
    uint8_t *raw = NULL;
    size_t n = 0;
    enum cbc_status st = cbc_read_at(s->fd, s->root, rel, BLOB_MAX, &raw, &n, err);
    if (st == CBC_E_NOT_FOUND && which != CBC_STORE_TOOLS && /* a machine's own identities */
        remote_get_blob(s, ns, rel, key, &raw, &n))
        st = CBC_OK;
    if (st != CBC_OK)
        return st;
    if (n < BLOB_HEADER || memcmp(raw, BLOB_MAGIC, 8) != 0 || memcmp(raw + 8, key->b, 16) != 0) {
        free(raw);
        return cbc_err_set(err, CBC_E_NOT_FOUND, "'%s/%s' is not a blob of its key", s->root,
                           rel);
    }
    memmove(raw, raw + BLOB_HEADER, n - BLOB_HEADER + 1); /* the NUL too */
    *data = raw;
    *len = n - BLOB_HEADER;
    return CBC_OK;
}

enum cbc_status cbc_store_blob_put(struct cbc_store *s, enum cbc_store_ns which,
                                   const struct cbc_hash *key, const void *data, size_t len,
                                   struct cbc_err *err)
{
    const char *ns = ns_dir(which);
    if (!ns)
        return cbc_err_set(err, CBC_E_USAGE, "no blob namespace %d in the store", (int)which);
    if (s->readonly)
        return cbc_err_set(err, CBC_E_CACHE, "the cache '%s' is open for reading only", s->root);
    uint8_t *buf = malloc(BLOB_HEADER + len);
    if (!buf)
        return cbc_err_oom(err);
    memcpy(buf, BLOB_MAGIC, 8);
    memcpy(buf + 8, key->b, 16);
    memcpy(buf + BLOB_HEADER, data, len);
    char rel[80];
    rel_path(ns, key, ".dep", rel, sizeof rel);
    enum cbc_status st = put_file(s, rel, buf, BLOB_HEADER + len, NULL, err);
    if (which != CBC_STORE_TOOLS)
        remote_put(s, ns, key, buf, BLOB_HEADER + len);
    free(buf);
    return st;
}

static enum cbc_status tools_get(void *ctx, const struct cbc_hash *key, uint8_t **data,
                                 size_t *len)
{
    return cbc_store_blob_get(ctx, CBC_STORE_TOOLS, key, data, len, NULL);
}

static void tools_put(void *ctx, const struct cbc_hash *key, const void *data, size_t len)
{
    cbc_store_blob_put(ctx, CBC_STORE_TOOLS, key, data, len, NULL); /* a cache: failure is fine */
}

struct cbc_record_cache cbc_store_tools_cache(struct cbc_store *s)
{
    return (struct cbc_record_cache){s, tools_get, tools_put};
}

/* ---- scanning ------------------------------------------------------------------- */

enum item_kind { I_ENTRY, I_TEMP, I_FOREIGN };

struct scan_item {
    char rel[96]; /* "<ns>/ab/<name>" */
    enum item_kind kind;
    uint64_t size;
    int64_t mtime_ns;
};

struct scan {
    struct scan_item *v;
    size_t n, cap;
    uint64_t total;   /* bytes of entries */
    size_t entries;
};

static int cmp_mtime(const void *a, const void *b)
{
    const struct scan_item *x = a, *y = b;
    return x->mtime_ns < y->mtime_ns ? -1 : x->mtime_ns > y->mtime_ns;
}

static bool is_hex(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* "<30 hex><ext>" */
static bool entry_name(const char *name, const char *ext)
{
    size_t n = strlen(name), el = strlen(ext);
    return n == 30 + el && is_hex(name, 30) && strcmp(name + 30, ext) == 0;
}

/* ".<30 hex><ext>.XXXXXX" */
static bool temp_name(const char *name, const char *ext)
{
    size_t n = strlen(name), el = strlen(ext);
    if (n != 30 + el + 8)
        return false;
    char final[48];
    memcpy(final, name + 1, 30 + el);
    final[30 + el] = '\0';
    return entry_name(final, ext) && cbc_temp_name_of(final, name);
}

static bool scan_push(struct scan *out, const char *ns, const char *shard, const char *name,
                      enum item_kind kind, const struct stat *sb)
{
    if (!cbc_grow(&out->v, out->n, &out->cap, sizeof *out->v, 256))
        return false;
    struct scan_item *it = &out->v[out->n++];
    snprintf(it->rel, sizeof it->rel, "%s/%s%s%s", ns, shard, *shard ? "/" : "", name);
    it->kind = kind;
    it->size = (uint64_t)sb->st_size;
    it->mtime_ns = (int64_t)sb->st_mtim.tv_sec * 1000000000 + (int64_t)sb->st_mtim.tv_nsec;
    if (kind == I_ENTRY) {
        out->total += it->size;
        out->entries++;
    }
    return true;
}

/* Lists ns/ab/ without following a link and without changing anything:
 * entries, the store's temporaries, and everything else as foreign. */
static enum cbc_status scan_ns(struct cbc_store *s, const char *ns, struct scan *out,
                               struct cbc_err *err)
{
    const char *ext = strcmp(ns, "objects") == 0 ? ".cbc" : ".dep";
    int nfd = cbc_dir_openat(s->fd, ns, false, NULL);
    if (nfd < 0) {
        if (errno == ENOENT)
            return CBC_OK;
        struct stat sb = {0};
        if (fstatat(s->fd, ns, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
            !scan_push(out, ns, "", "", I_FOREIGN, &sb))
            return cbc_err_oom(err);
        return CBC_OK;
    }
    DIR *top = fdopendir(nfd);
    if (!top) {
        close(nfd);
        return cbc_err_oom(err);
    }
    struct dirent *de;
    enum cbc_status st = CBC_OK;
    while (st == CBC_OK && (de = readdir(top))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat sb;
        if (fstatat(nfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        bool shard = strlen(de->d_name) == 2 && is_hex(de->d_name, 2) && S_ISDIR(sb.st_mode);
        int sfd = shard ? cbc_dir_openat(nfd, de->d_name, false, NULL) : -1;
        if (sfd < 0) {
            if (!scan_push(out, ns, "", de->d_name, I_FOREIGN, &sb))
                st = cbc_err_oom(err);
            continue;
        }
        DIR *d = fdopendir(sfd);
        if (!d) {
            close(sfd);
            continue;
        }
        struct dirent *fe;
        while (st == CBC_OK && (fe = readdir(d))) {
            if (!strcmp(fe->d_name, ".") || !strcmp(fe->d_name, ".."))
                continue;
            struct stat fb;
            if (fstatat(sfd, fe->d_name, &fb, AT_SYMLINK_NOFOLLOW) != 0)
                continue; /* removed meanwhile by another process */
            enum item_kind k = I_FOREIGN;
            if (S_ISREG(fb.st_mode) && entry_name(fe->d_name, ext))
                k = I_ENTRY;
            else if (S_ISREG(fb.st_mode) && temp_name(fe->d_name, ext))
                k = I_TEMP;
            if (!scan_push(out, ns, de->d_name, fe->d_name, k, &fb))
                st = cbc_err_oom(err);
        }
        closedir(d);
    }
    closedir(top);
    return st;
}

static void scan_release(struct scan *sc)
{
    free(sc->v);
    memset(sc, 0, sizeof *sc);
}

/* Removes temporaries of this store older than an hour: in every
 * namespace, and those of stats, config and remote-skip. */
static void sweep_temps(struct cbc_store *s, const struct scan *sc)
{
    time_t now = time(NULL);
    for (size_t i = 0; sc && i < sc->n; i++)
        if (sc->v[i].kind == I_TEMP && now - sc->v[i].mtime_ns / 1000000000 > STALE_TMP_SECONDS)
            remove_ours(s, sc->v[i].rel, NULL);
    DIR *d = NULL;
    int fd = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0 && !(d = fdopendir(fd)))
        close(fd);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        struct stat sb;
        if ((cbc_temp_name_of("stats", de->d_name) || cbc_temp_name_of("config", de->d_name) ||
             cbc_temp_name_of(SKIP_FILE, de->d_name)) &&
            fstatat(s->fd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode) &&
            now - sb.st_mtime > STALE_TMP_SECONDS)
            unlinkat(s->fd, de->d_name, 0);
    }
    if (d)
        closedir(d);
}

static void copy_counts(uint64_t v[C_COUNT], void *ctx)
{
    memcpy(ctx, v, sizeof(uint64_t) * C_COUNT);
}

static void set_bytes(uint64_t v[C_COUNT], void *ctx)
{
    v[C_BYTES] = *(uint64_t *)ctx;
}

enum cbc_status cbc_store_stats(struct cbc_store *s, struct cbc_store_stats *out,
                                struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    uint64_t v[C_COUNT] = {0};
    enum cbc_status st = with_counters(s, copy_counts, v, false, err);
    if (st != CBC_OK)
        return st;
    out->hits = v[C_HITS] + s->hits;
    out->misses = v[C_MISSES] + s->misses;
    out->stores = v[C_STORES] + s->stores;
    out->dropped = v[C_DROPPED] + s->dropped;
    out->store_errors = v[C_STORE_ERRORS] + s->store_errors;
    out->uncacheable = v[C_UNCACHEABLE] + s->uncacheable;
    out->remote_hits = v[C_R_HITS];
    out->remote_misses = v[C_R_MISSES];
    out->remote_errors = v[C_R_ERRORS];
    out->remote_bytes_read = v[C_R_READ];
    out->remote_bytes_written = v[C_R_WRITTEN];
    out->remote_time_us = v[C_R_TIME];
    struct scan sc = {0};
    st = scan_ns(s, "objects", &sc, err);
    out->entries = sc.entries;
    out->bytes = sc.total;
    scan_release(&sc);
    out->max_size = cbc_store_max_size(s);
    return st;
}

static enum cbc_status removal_failed(struct cbc_store *s, const char *rel, int e,
                                      struct cbc_err *err)
{
    return cbc_err_set(err, CBC_E_CACHE, "cannot remove '%s/%s': %s", s->root, rel, strerror(e));
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
        for (size_t i = 0; st == CBC_OK && i < sc.n && total > max_size; i++) {
            if (sc.v[i].kind != I_ENTRY)
                continue;
            int e = remove_ours(s, sc.v[i].rel, ENTRY_MAGIC);
            if (e == 0 || e == ENOENT) { /* ENOENT: another process got there first */
                total -= sc.v[i].size;
                n += e == 0;
                b += e == 0 ? sc.v[i].size : 0;
            } else if (e != EPERM) {
                st = removal_failed(s, sc.v[i].rel, e, err);
            }
        }
        sweep_temps(s, &sc);
        /* and the stale temporaries of the other namespaces */
        for (size_t k = 1; k < CBC_ARRAY_LEN(namespaces); k++) {
            struct scan o = {0};
            if (scan_ns(s, namespaces[k], &o, NULL) == CBC_OK)
                sweep_temps(s, &o);
            scan_release(&o);
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

static void report_foreign(const struct cbc_store *s, const struct scan_item *it,
                           cbc_store_report_fn report, void *ctx)
{
    if (!report || it->kind != I_FOREIGN)
        return;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", s->root, it->rel);
    report(ctx, path, "not a cache entry (a foreign file, a directory or a symbolic link); left "
                      "alone");
}

enum cbc_status cbc_store_clean(struct cbc_store *s, uint64_t *removed, cbc_store_report_fn report,
                                void *ctx, struct cbc_err *err)
{
    uint64_t n = 0;
    enum cbc_status st = CBC_OK;
    for (size_t k = 0; k < CBC_ARRAY_LEN(namespaces) && st == CBC_OK; k++) {
        bool objects = k == 0;
        struct scan sc = {0};
        st = scan_ns(s, namespaces[k], &sc, err);
        for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
            if (sc.v[i].kind != I_ENTRY) {
                report_foreign(s, &sc.v[i], report, ctx);
                continue;
            }
            int e = remove_ours(s, sc.v[i].rel, objects ? ENTRY_MAGIC : BLOB_MAGIC);
            if (e == 0)
                n += objects;
            else if (e == EPERM && report) {
                char path[512];
                snprintf(path, sizeof path, "%s/%s", s->root, sc.v[i].rel);
                report(ctx, path, "named like an entry but without the store's header; left alone");
            } else if (e != ENOENT && e != EPERM) {
                st = removal_failed(s, sc.v[i].rel, e, err);
            }
        }
        if (st == CBC_OK)
            sweep_temps(s, &sc);
        /* empty shard directories; a link or a non-empty one stays */
        int nfd = cbc_dir_openat(s->fd, namespaces[k], false, NULL);
        for (int h = 0; nfd >= 0 && st == CBC_OK && h < 256; h++) {
            char shard[3];
            snprintf(shard, sizeof shard, "%02x", h);
            unlinkat(nfd, shard, AT_REMOVEDIR);
        }
        if (nfd >= 0)
            close(nfd);
        scan_release(&sc);
    }
    if (st == CBC_OK) {
        uint64_t zero = 0;
        s->bytes_added = 0;
        with_counters(s, set_bytes, &zero, true, NULL);
    }
    if (removed)
        *removed = n;
    return st;
}

enum cbc_status cbc_store_verify_all(struct cbc_store *s, uint64_t *checked, uint64_t *dropped,
                                     uint64_t *left, cbc_store_report_fn report, void *ctx,
                                     struct cbc_err *err)
{
    uint64_t c = 0, d = 0, l = 0;
    enum cbc_status st = CBC_OK;
    for (size_t k = 0; k < CBC_ARRAY_LEN(namespaces) && st == CBC_OK; k++) {
        bool objects = k == 0;
        struct scan sc = {0};
        st = scan_ns(s, namespaces[k], &sc, err);
        for (size_t i = 0; st == CBC_OK && i < sc.n; i++) {
            const struct scan_item *it = &sc.v[i];
            if (it->kind != I_ENTRY) {
                l += it->kind == I_FOREIGN;
                report_foreign(s, it, report, ctx);
                continue;
            }
            uint8_t *raw = NULL;
            size_t len = 0;
            if (cbc_read_at(s->fd, s->root, it->rel, objects ? CBC_FILE_MAX : BLOB_MAX, &raw, &len,
                            NULL) != CBC_OK)
                continue; /* removed meanwhile by another process */
            c++;
            /* the file name is the key: the header must agree */
            const char *slash = strchr(it->rel, '/');
            char hex[CBC_HASH_HEX_LEN + 1];
            snprintf(hex, sizeof hex, "%.2s%.30s", slash + 1, slash + 4);
            struct cbc_hash key;
            cbc_hash_from_hex(hex, &key);
            const char *magic = objects ? ENTRY_MAGIC : BLOB_MAGIC;
            char why[CBC_ERR_MSG_MAX] = "";
            static const uint8_t zeros[8];
            bool ours = len < 8 || memcmp(raw, magic, 8) == 0 || memcmp(raw, zeros, 8) == 0;
            bool good;
            if (objects) {
                const uint8_t *payload;
                size_t plen;
                good = entry_check(raw, len, &key, NULL, it->rel, &payload, &plen, why, sizeof why);
            } else {
                good = len >= BLOB_HEADER && ours && memcmp(raw + 8, key.b, 16) == 0;
                if (!good)
                    snprintf(why, sizeof why, "%s", ours ? "filed under the wrong key"
                                                         : "not a blob (bad magic)");
            }
            free(raw);
            if (good)
                continue;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", s->root, it->rel);
            if (!ours) {
                l++;
                if (report)
                    report(ctx, path, "named like an entry but without the store's header; "
                                      "left alone");
                continue;
            }
            int e = remove_ours(s, it->rel, magic);
            if (e == 0) {
                d++;
                if (report)
                    report(ctx, path, why);
            } else if (e != ENOENT) {
                st = removal_failed(s, it->rel, e, err);
            }
        }
        scan_release(&sc);
    }
    s->dropped += d;
    if (checked)
        *checked = c;
    if (dropped)
        *dropped = d;
    if (left)
        *left = l;
    return st;
}
