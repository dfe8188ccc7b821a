/* stats.c: the store's counters (store_int.h). Counts are batched in
 * memory and merged into v1/stats (read, add, one fixed-length write in
 * place) under an flock of the v1 directory when the store is closed and
 * after each entry is stored; a stats file torn by a crash costs counts,
 * never an error.
 */
#include "store_int.h"

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

/* ---- counters ---------------------------------------------------------------- */

static const char *const counter_names[] = {
    "hits",        "misses",       "stores",          "dropped",
    "store_errors", "bytes",       "uncacheable",     "remote_hits",
    "remote_misses", "remote_errors", "remote_bytes_read", "remote_bytes_written",
    "remote_time_us",
    /* appended: older files lack them (read as 0), older readers skip them */
    "remote_timeouts", "remote_refusals", "remote_bad_values", "remote_reshared"};
_Static_assert(CBC_ARRAY_LEN(counter_names) == C_COUNT, "a counter without its name");

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
enum cbc_status cbc_st_with_counters(struct cbc_store *s, void (*fn)(uint64_t v[C_COUNT], void *),
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
            char buf[SMALL_MAX];
            int n = format_counters(v, buf, sizeof buf);
            st = cbc_write_at(s->fd, s->root, "stats", buf, (size_t)n, cbc_st_perm(s), false, err);
            if (st != CBC_OK)
                st = CBC_E_CACHE;
        }
    }
    if (locked)
        flock(s->fd, LOCK_UN);
    return st;
}

void cbc_st_merge_counts(uint64_t v[C_COUNT], void *ctx)
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
        v[C_R_ERRORS] += r.errors - m->errors + s->remote_bad;
        v[C_R_BAD_VALUES] += s->remote_bad;
        s->remote_hits = s->remote_misses = s->remote_bad = 0;
        v[C_R_READ] += r.bytes_read - m->bytes_read;
        v[C_R_WRITTEN] += r.bytes_written - m->bytes_written;
        v[C_R_TIME] += r.time_us - m->time_us;
        v[C_R_TIMEOUTS] += r.timeouts - m->timeouts;
        v[C_R_REFUSALS] += r.refusals - m->refusals;
        v[C_R_BAD_VALUES] += r.bad_values - m->bad_values;
        v[C_R_RESHARED] += r.reshared - m->reshared;
        *m = r;
    }
}

bool cbc_st_counts_pending(const struct cbc_store *s)
{
    if (!s->remote)
        return false;
    struct cbc_remote_stats r;
    cbc_remote_stats(s->remote, &r);
    return s->remote_hits || s->remote_misses || s->remote_bad ||
           memcmp(&r, &s->remote_merged, sizeof r) != 0;
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

static void copy_counts(uint64_t v[C_COUNT], void *ctx)
{
    memcpy(ctx, v, sizeof(uint64_t) * C_COUNT);
}

enum cbc_status cbc_store_stats(struct cbc_store *s, struct cbc_store_stats *out,
                                struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    uint64_t v[C_COUNT] = {0};
    enum cbc_status st = cbc_st_with_counters(s, copy_counts, v, false, err);
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
    out->remote_timeouts = v[C_R_TIMEOUTS];
    out->remote_refusals = v[C_R_REFUSALS];
    out->remote_bad_values = v[C_R_BAD_VALUES];
    out->remote_reshared = v[C_R_RESHARED];
    struct scan sc = {0};
    st = cbc_st_scan_ns(s, "objects", &sc, err);
    out->entries = sc.entries;
    out->bytes = sc.total;
    cbc_st_scan_release(&sc);
    out->max_size = cbc_store_max_size(s);
    return st;
}


static void zero_counts(uint64_t v[C_COUNT], void *ctx)
{
    (void)ctx;
    uint64_t bytes = v[C_BYTES];
    memset(v, 0, sizeof(uint64_t) * C_COUNT);
    v[C_BYTES] = bytes;
}

enum cbc_status cbc_store_zero_stats(struct cbc_store *s, struct cbc_err *err)
{
    s->hits = s->misses = s->stores = s->dropped = s->store_errors = s->uncacheable = 0;
    s->remote_hits = s->remote_misses = 0;
    return cbc_st_with_counters(s, zero_counts, NULL, true, err);
}
