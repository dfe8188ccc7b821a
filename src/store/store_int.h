/* store_int.h: what the store's files share, internal to src/store. The
 * store is in tiers, as ccache splits its storage: store.c opens the cache
 * directory and gets and puts its entries and blobs, over local.c (the
 * local tier's files: paths, checks, publication, removal, listing);
 * stats.c keeps the counters; tier.c puts a remote behind the local tier
 * (a local miss asks it, a put writes through, a failure is said once and
 * skipped); maint.c is the one walker that trims, cleans and verifies;
 * settings.c resolves the settings and reads v1/config. The files are
 * layered: settings.c uses none of the others, local.c only settings.c,
 * and store.c is the only one that uses tier.c or maint.c
 * (tests/layering checks). Formats and invariants are in store.h.
 */
#ifndef CBC_STORE_INT_H
#define CBC_STORE_INT_H

#include "remote.h"
#include "settings.h"
#include "store.h"

#include <sys/stat.h>

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
static const char *const namespaces[] = {"objects", "direct", "deps", "tools", "last"};

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
    uint64_t remote_bad; /* values that decoded but failed the store's checks */
    cbc_msg_fn msg;
    void *msg_ctx;
    struct cbc_remote_stats remote_merged; /* what the counters already hold */
    /* settings.h, each resolved once */
    struct cbc_setting_value settings[CBC_SET_COUNT];
    bool setting_read[CBC_SET_COUNT];
};


/* The marker of a remote that failed (tier.c; its temporaries are swept by maint.c). */
#define SKIP_FILE "remote-skip"

/* ---- v1/config and the settings the store keeps (settings.c) ---------------- */

/* The value of `key` in v1/config ("key = value" lines), or "" when absent. */
void cbc_st_config_value(struct cbc_store *s, const char *key, char *out, size_t len);
/* The permissions new files and directories get (the umask setting). */
const struct cbc_perm *cbc_st_perm(struct cbc_store *s);

/* ---- the local tier's files (local.c) ------------------------------------------ */
/* "<ns>/ab/<30 hex><ext>" */
void cbc_st_rel_path(const char *ns, const struct cbc_hash *key, const char *ext, char *out,
                     size_t len);
/* Verifies an entry file's bytes; on success *payload points inside. */
bool cbc_st_entry_check(const uint8_t *d, size_t len, const struct cbc_hash *key,
                        const struct cbc_target *t, const char *path, const uint8_t **payload,
                        size_t *plen, char *why, size_t why_len);
/* Removes `rel` when it is ours (store.c says when); 0 or an errno. */
int cbc_st_remove_ours(struct cbc_store *s, const char *rel, const char *magic);
/* Publishes "<ns>/ab/<name>" beneath v1, creating the two directories. */
enum cbc_status cbc_st_put_file(struct cbc_store *s, const char *rel, const void *data, size_t len,
                                bool *existed, struct cbc_err *err);
/* Whether `raw` (n bytes) is a good blob file of `key`; why says what not. */
bool cbc_st_blob_check(const uint8_t *raw, size_t n, const struct cbc_hash *key, char *why,
                       size_t why_len);

/* ---- counters (stats.c) -------------------------------------------------------- */

enum {
    C_HITS, C_MISSES, C_STORES, C_DROPPED, C_STORE_ERRORS, C_BYTES, C_UNCACHEABLE,
    C_R_HITS, C_R_MISSES, C_R_ERRORS, C_R_READ, C_R_WRITTEN, C_R_TIME,
    /* appended (issue 27): the parts of C_R_ERRORS, and local hits written back */
    C_R_TIMEOUTS, C_R_REFUSALS, C_R_BAD_VALUES, C_R_RESHARED, C_COUNT
};

/* Runs fn on the counters of v1/stats under the directory lock, writing
 * them back when asked. */
enum cbc_status cbc_st_with_counters(struct cbc_store *s, void (*fn)(uint64_t v[C_COUNT], void *),
                                     void *ctx, bool write_back, struct cbc_err *err);
/* fn for cbc_st_with_counters: adds what this process counted (ctx: the store). */
void cbc_st_merge_counts(uint64_t v[C_COUNT], void *ctx);
/* Whether the remote's counts are not merged yet. */
bool cbc_st_counts_pending(const struct cbc_store *s);

/* ---- the remote tier (tier.c) ----------------------------------------------------- */

/* A local miss of an entry: the remote's, checked as a local one, written here. */
enum cbc_status cbc_st_remote_get_entry(struct cbc_store *s, const char *rel,
                                        const struct cbc_hash *key,
                                        const struct cbc_target *target, uint8_t **data,
                                        size_t *len, enum cbc_lookup *result);
/* A local miss of a blob (its raw file), checked and written here. */
bool cbc_st_remote_get_blob(struct cbc_store *s, const char *ns, const char *rel,
                            const struct cbc_hash *key, uint8_t **raw, size_t *n);
/* Writes a local file through to the remote. */
void cbc_st_remote_put(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                       const void *data, size_t len);
/* A local hit of a file (header and all): written back to the remote when
 * it has reshare and lacks the key. */
void cbc_st_remote_reshare(struct cbc_store *s, const char *ns, const struct cbc_hash *key,
                           const void *data, size_t len);
/* Whether the remote may be asked now (attached, not failed here or, by
 * v1/remote-skip, in another build within its skip time). */
bool cbc_st_remote_ready(struct cbc_store *s);
/* The remote failed: one warning (with its hint) and the skip marker. */
void cbc_st_remote_failed(struct cbc_store *s, const struct cbc_err *e);

/* ---- a namespace's listing (local.c), for the walker (maint.c) and stats.c ------- */

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

/* Lists ns/ab/ without following a link and without changing anything. */
enum cbc_status cbc_st_scan_ns(struct cbc_store *s, const char *ns, struct scan *out,
                               struct cbc_err *err);
void cbc_st_scan_release(struct scan *sc);

#endif
