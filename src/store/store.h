/* store.h: the local content-addressed cache of compiled images.
 *
 * Layout under the cache root (all of it versioned by the "v1" directory,
 * so an incompatible format starts afresh instead of misreading):
 *   v1/objects/ab/<30 hex>.cbc   one entry per result key (format below)
 *   v1/direct/ab/<30 hex>.dep    dependency records      } blobs: a 24-byte
 *   v1/deps/ab/<30 hex>.dep      dependency lists        } header (magic
 *   v1/tools/ab/<30 hex>.dep     toolchain identities    } "CBCBLOB\n", key),
 *   v1/last/ab/<30 hex>.dep      a launcher output's last } then opaque bytes
 *                                compile's inputs         }
 *                                                          then opaque bytes
 *   v1/stats                     counters, "name value" lines
 *   v1/config                    "max_size = 5G", "umask = 002", "remote = redis://..."
 *   v1/remote-skip               a remote that failed, and until when to skip it
 *   .<name>.XXXXXX               a temporary beside what it will become
 *
 * Entry format (little-endian):
 *   off size  meaning
 *   0   8     magic "CBCOBJ1\n"
 *   8   4     entry format version (1)
 *   12  1     kind (1 SASS, 2 PTX, 3 a command's result)  13 1 variant  14 2 arch
 *   16  16    result key (canonical XXH3-128)
 *   32  16    XXH3-128 of the payload
 *   48  8     payload size
 *   56  8     reserved, 0
 *   64  ...   payload: the cubin or PTX exactly as nvcc wrote it
 *
 * Invariants, which hold for a cache directory other users can write:
 *  - nothing under the root is reached through a symbolic link: v1 and
 *    everything below it is opened beneath a directory descriptor with no
 *    link allowed (a planted link is an error or a skipped shard, never
 *    followed);
 *  - the store deletes only what it wrote: regular files whose name is an
 *    entry name ("<30 hex>.cbc" / ".dep" in a two-hex-digit shard) and whose
 *    header carries its magic, and its own temporaries once they are older
 *    than an hour (a live writer's are younger); anything else is reported
 *    and left alone;
 *  - every file is published by renameat of a complete temporary (config
 *    too), so no reader sees part of one, even after kill -9, and a link or
 *    hard link planted at a name is replaced, never written through; the one
 *    exception is v1/stats, rewritten in place under the directory lock by a
 *    single fixed-length pwrite when it is a plain file with one name (else
 *    replaced like the rest);
 *  - every get re-verifies the header, the payload hash and the image's own
 *    arch (cbc_binfmt_verify_target) and drops an entry that fails;
 *  - files are created 0666 and directories 0777 less the umask
 *    ($CUBINCACHE_UMASK, else "umask" in v1/config, else the process's), and
 *    directories inherit a set-group-ID parent's group: a group shares a
 *    cache by making the root group-owned, mode 2775, with umask 002;
 *  - many processes may read and write one store at once; the store never
 *    prints.
 *
 * Internal and unstable.
 */
#ifndef CBC_STORE_H
#define CBC_STORE_H

#include "common.h"
#include <cubincache/arch.h>

struct cbc_store;

/* Opens (creating as needed) the store under `root`. A root that cannot be
 * created, or a v1 that is a symbolic link, gives CBC_E_CACHE; callers
 * degrade to building without a cache. A store that opens may still refuse
 * writes (read-only, full disk): puts then fail with CBC_E_CACHE and reads
 * keep working. */
enum cbc_status cbc_store_open(const char *root, struct cbc_store **out, struct cbc_err *err);
/* Opens an existing store for reading only: creates nothing, writes no
 * counters. CBC_E_NOT_FOUND when there is none. */
enum cbc_status cbc_store_open_existing(const char *root, struct cbc_store **out,
                                        struct cbc_err *err);
/* Flushes the counters and frees. */
void cbc_store_close(struct cbc_store *s);
const char *cbc_store_root(const struct cbc_store *s); /* the v1 directory */
/* The toolchain-identity records of the "tools" namespace, as key/toolid.c
 * takes them. */
struct cbc_record_cache cbc_store_tools_cache(struct cbc_store *s);

/* Where the cache is when nothing says otherwise: --cache-dir, else
 * $CUBINCACHE_DIR, else $XDG_CACHE_HOME/cubincache, else ~/.cache/cubincache. */
char *cbc_store_default_root(const char *explicit_dir);

enum cbc_lookup {
    CBC_LOOKUP_MISS = 0,
    CBC_LOOKUP_HIT = 1,
    CBC_LOOKUP_DROPPED = 2 /* an entry was there but failed verification and is gone */
};

/* Looks up an entry. On a hit *data (malloc'd) and *len hold the payload.
 * On DROPPED, `why` says what was wrong. Only I/O trouble other than
 * absence is an error. */
enum cbc_status cbc_store_get(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, uint8_t **data, size_t *len,
                              enum cbc_lookup *result, char *why, size_t why_len, struct cbc_err *err);
/* Entries are images of one target (verified as such on every read), or
 * the outputs of a whole command (the compiler launcher, src/launch): a
 * result entry, filed with this target, whose bytes are verified by their
 * content hash here and by their reader beyond that. */
#define CBC_STORE_RESULT_KIND 3
static inline struct cbc_target cbc_store_result_target(void)
{
    return (struct cbc_target){CBC_STORE_RESULT_KIND, 0, 0};
}

/* Publishes an entry atomically; may trim the store afterwards when it
 * outgrows its limit. */
enum cbc_status cbc_store_put(struct cbc_store *s, const struct cbc_hash *key,
                              const struct cbc_target *target, const uint8_t *data, size_t len,
                              struct cbc_err *err);

/* The namespaces of opaque records, by what they hold; where each lives
 * under v1/ is the store's business alone. */
enum cbc_store_ns {
    CBC_STORE_DIRECT, /* direct-mode records (src/direct) */
    CBC_STORE_DEPS,   /* dependency lists (src/direct) */
    CBC_STORE_TOOLS,  /* toolchain identities (key/toolid.c, via cbc_store_tools_cache) */
    CBC_STORE_LAST    /* what a launcher output was last compiled from, to say why it
                         missed (src/launch/why.c); this machine's, never the remote's */
};

/* Opaque records by key in a namespace: whole-file get/put with atomic
 * publish. get gives CBC_E_NOT_FOUND when absent, or when the file is not
 * a blob of this key (a foreign or damaged file reads as absent and is
 * rewritten by the next put). */
enum cbc_status cbc_store_blob_get(struct cbc_store *s, enum cbc_store_ns ns,
                                   const struct cbc_hash *key, uint8_t **data, size_t *len,
                                   struct cbc_err *err);
enum cbc_status cbc_store_blob_put(struct cbc_store *s, enum cbc_store_ns ns,
                                   const struct cbc_hash *key, const void *data, size_t len,
                                   struct cbc_err *err);
/* The same, in this cache alone: a blob whose bytes matter only here (a
 * dependency list with this machine's stamps refreshed on a hit), which a
 * remote neither needs nor should be written by a hit for. */
enum cbc_status cbc_store_blob_put_local(struct cbc_store *s, enum cbc_store_ns ns,
                                         const struct cbc_hash *key, const void *data,
                                         size_t len, struct cbc_err *err);

/* ---- the second-level cache (src/remote) ---------------------------------- */

/* Puts a remote cache (a spec of remote.h: redis://..., http://...)
 * behind this store: a local miss of an entry, a direct-mode record or a
 * dependency list asks it; what it returns is verified by the checks a
 * local file passes and written here; puts are written through to it (not
 * for a read-only remote); with |reshare a local hit is written back when
 * the remote lacks it (one round trip per hit to find out). Toolchain
 * identities stay local. A remote that fails is skipped
 * for the rest of the process and, through v1/remote-skip, by the builds of
 * the next skip-after-failure seconds; fn gets one warning per process.
 * CBC_E_USAGE for a bad spec, CBC_E_NOT_FOUND for "none" or "". */
enum cbc_status cbc_store_attach_remote(struct cbc_store *s, const char *spec, cbc_msg_fn fn,
                                        void *ctx, struct cbc_err *err);
/* The remote to use: `explicit_spec` (--remote), else $CUBINCACHE_REMOTE,
 * else "remote = ..." in v1/config; NULL when none is named. *from (may be
 * NULL) names where it came from, for messages. */
char *cbc_store_remote_spec(struct cbc_store *s, const char *explicit_spec, const char **from);
/* Attaches the remote cbc_store_remote_spec names, if any: CBC_OK when
 * there is none, CBC_E_USAGE (err prefixed with where the spec came from)
 * for a bad one. */
enum cbc_status cbc_store_attach_default_remote(struct cbc_store *s, const char *explicit_spec,
                                                cbc_msg_fn fn, void *ctx, struct cbc_err *err);
/* The attached remote's name (its URL without a password), or NULL. */
const char *cbc_store_remote_name(const struct cbc_store *s);
/* Whether the last cbc_store_get hit came from the remote. */
bool cbc_store_last_remote(const struct cbc_store *s);

/* ---- compile once per fleet: leases on the remote ---------------------------- */

/* Of N cold builders about to compile the same unit, one compiles and the
 * others use its result: before compiling a miss, a builder takes a lease
 * on the key that missed (the direct key of the unit, say) in the remote.
 * The lease only says who compiles; the result travels as any other entry
 * (the holder's cbc_store_put writes it through, a waiter's lookup asks
 * the remote on its local miss).
 *
 * How a caller uses it, for one unit whose lookup just missed (a scheduler
 * polls each waiting unit in turn while others compile; nothing here
 * sleeps):
 *
 *   struct cbc_store_lease l;
 *   bool waited = false;
 *   uint64_t until = 0;              // the wait's end, set at the first HELD
 *   for (;;) {
 *       enum cbc_lease_state ls = cbc_store_remote_lease_acquire(s, &key, TTL_MS, &l);
 *       if (ls == CBC_LEASE_HELD) {  // another builder compiles it
 *           if (!waited)
 *               waited = true, until = now + WAIT_MS;
 *           if (now >= until)
 *               { compile; put; break; }        // bounded: compile without a lease
 *           sleep or serve other units for POLL_MS; continue;
 *       }
 *       // ACQUIRED (this builder holds it) or NONE (no lease to be had)
 *       if (waited && the same lookup hits now)  // the holder's result arrived
 *           { cbc_store_remote_lease_release(s, &l); use the hit; break; }
 *       compile; publish as now: every record the lookup reads (entry,
 *       direct record, dependency list), written through to the remote;
 *       cbc_store_remote_lease_release(s, &l);  // after the puts, also when the
 *       break;                                  // compile failed; no-op unless ACQUIRED
 *   }
 *
 * - Poll with acquire, not with lookups: while the lease is held a poll is
 *   one SET NX of a few bytes and counts no remote miss; it returns
 *   ACQUIRED once the holder released it (look up again: its result is
 *   there) or its ttl ran out (the holder died: the lookup misses and this
 *   builder compiles, and holds the lease for the others meanwhile).
 * - Look up again only after a wait: an ACQUIRED at the first call means
 *   nobody held the lease when the lookup missed a moment before, so
 *   compiling is right (a result that landed in between costs one compile,
 *   as without leases).
 * - Release only after every put the waiters' lookup needs: releasing
 *   first makes the next waiter's lookup miss and compile again. A holder
 *   whose compile failed releases too (without puts): the next waiter then
 *   compiles, so a failing unit is compiled by the waiters one after
 *   another, each bounded by its WAIT_MS.
 * - TTL_MS: above the unit's usual compile time (say 2 to 5 minutes); a
 *   compile that outlives it lets a waiter compile it too (twice, not
 *   wrong). WAIT_MS: how long a waiter trusts the holder, from its first
 *   HELD (TTL_MS is the natural choice: by then the holder released or its
 *   lease expired). POLL_MS: 100 to 250 ms, with jitter.
 * - NONE at any call: compile now (after a wait, look up first, as above).
 *
 * What acquire returns, on every call a fresh `*lease` (key, a new token,
 * acquired):
 *   ACQUIRED  this process holds "cubincache:v1:[NAMESPACE:]lease:<32 hex
 *             of key>", set to the lease's token (128 random bits, new for
 *             each acquire) by SET NX PX TTL_MS: atomic across the fleet;
 *             it ends at release or after TTL_MS, whichever comes first,
 *             so a builder that dies holds the others up at most TTL_MS;
 *             lease->acquired is true.
 *   HELD      another holds it (a read-only remote says this too, from a
 *             GET, when a writer holds it).
 *   NONE      no lease to be had: no remote attached, TTL_MS 0, the remote
 *             failed now or is skipped by v1/remote-skip (a failure warns
 *             once through the attached message function and marks it, as
 *             any remote operation does), the backend has no leases (HTTP),
 *             or the client may not write (read-only, or the server refused
 *             a write) and nobody holds it.
 * Each call is one remote operation (connecting first when there is no
 * connection), bounded by the remote's operation timeout. Neither call
 * fails otherwise: the caller can always compile. Not thread-safe, as the
 * store is not.
 *
 * release gives the lease back only while it still holds this lease's
 * token (a server-side compare-and-delete, one Lua EVAL): a lease that
 * expired and was taken by another builder stays that builder's. It does
 * nothing for a lease not acquired (HELD, NONE, released already), clears
 * lease->acquired, and when the remote failed, stopped taking writes
 * (full) or refuses EVAL (an ACL) it leaves the lease to expire by its
 * ttl. */
enum cbc_lease_state {
    CBC_LEASE_ACQUIRED = 0,
    CBC_LEASE_HELD = 1,
    CBC_LEASE_NONE = 2
};
struct cbc_store_lease {
    struct cbc_hash key;
    char token[CBC_HASH_HEX_LEN + 1];
    bool acquired; /* true after ACQUIRED, until release */
};
enum cbc_lease_state cbc_store_remote_lease_acquire(struct cbc_store *s, const struct cbc_hash *key,
                                                    unsigned ttl_ms, struct cbc_store_lease *lease);
void cbc_store_remote_lease_release(struct cbc_store *s, struct cbc_store_lease *lease);

/* ---- settings (settings.h) ------------------------------------------------ */

#include "settings.h"
/* A setting as this store resolves it: the environment, else v1/config,
 * else the default (what the value is and where it came from), resolved
 * once per store. A value that fails its check is still the value, and
 * CBC_E_USAGE names the variable or the config file and what is wrong;
 * *out is filled either way. */
enum cbc_status cbc_store_setting(struct cbc_store *s, enum cbc_setting id,
                                  struct cbc_setting_value *out, struct cbc_err *err);

/* ---- counters, limits, maintenance -------------------------------------- */

struct cbc_store_stats {
    uint64_t hits, misses, stores, dropped, store_errors;
    uint64_t uncacheable; /* launcher commands run as they are (src/launch) */
    uint64_t entries, bytes; /* from a scan of objects/ */
    uint64_t max_size;
    /* the remote's part (remote hits are hits too) */
    uint64_t remote_hits, remote_misses, remote_errors;
    uint64_t remote_bytes_read, remote_bytes_written, remote_time_us;
    /* parts of remote_errors: operations out of time, refusals (connection
     * refused, authentication, writes refused: OOM, READONLY, NOPERM, HTTP
     * 401/403/405/507), bad values (undecodable, over max-value, the wrong
     * type, failed the checks); and local hits written back (reshare) */
    uint64_t remote_timeouts, remote_refusals, remote_bad_values, remote_reshared;
};

/* Adds to the counters kept in memory; written to v1/stats on close. */
void cbc_store_count(struct cbc_store *s, uint64_t hits, uint64_t misses, uint64_t dropped);
/* One command the launcher could not cache and ran as it is. */
void cbc_store_count_uncacheable(struct cbc_store *s);

enum cbc_status cbc_store_stats(struct cbc_store *s, struct cbc_store_stats *out,
                                struct cbc_err *err);
/* Sets every counter to 0 (`ccache -z`); the size the cache takes is
 * kept, as it is not a count of events. CBC_E_CACHE when v1/stats cannot
 * be locked or written. */
enum cbc_status cbc_store_zero_stats(struct cbc_store *s, struct cbc_err *err);
/* The size limit: $CUBINCACHE_MAXSIZE, else v1/config, else 5 GB. */
uint64_t cbc_store_max_size(struct cbc_store *s);
enum cbc_status cbc_store_set_max_size(struct cbc_store *s, uint64_t max_size, struct cbc_err *err);

/* What maintenance found that is not the store's: files it left alone. */
typedef void (*cbc_store_report_fn)(void *ctx, const char *path, const char *why);

/* Removes least recently used entries (by mtime, refreshed on every hit)
 * until the objects take at most `max_size` bytes; also removes its own
 * temporaries older than an hour, left by killed writers. CBC_E_CACHE when
 * an entry it should remove cannot be (a read-only cache). */
enum cbc_status cbc_store_trim(struct cbc_store *s, uint64_t max_size, uint64_t *removed,
                               uint64_t *removed_bytes, struct cbc_err *err);
/* Removes every entry and record, and temporaries older than an hour;
 * keeps config. Files that are not the store's are reported through
 * `report` (may be NULL) and left alone. CBC_E_CACHE when an entry cannot
 * be removed (read-only cache), naming it and why. */
enum cbc_status cbc_store_clean(struct cbc_store *s, uint64_t *removed, cbc_store_report_fn report,
                                void *ctx, struct cbc_err *err);

/* Verifies every entry as a get would, and every blob's header; drops the
 * bad ones (*dropped). Files that are not the store's are counted in *left
 * and left alone. `report` is called for each with the reason. */
enum cbc_status cbc_store_verify_all(struct cbc_store *s, uint64_t *checked, uint64_t *dropped,
                                     uint64_t *left, cbc_store_report_fn report, void *ctx,
                                     struct cbc_err *err);

/* ---- operators: the remote as a whole (remote_maint.c) --------------------------- */

#define CBC_INVENTORY_NS_MAX 32
/* What the remote holds for cubincache, from a bounded listing. */
struct cbc_store_remote_inventory {
    char version[64];       /* the server's ("redis 7.0.15") */
    uint64_t keys, bytes;   /* keys under cubincache:v1:, their values' bytes (STRLEN) */
    uint64_t foreign;       /* keys there that cubincache does not write */
    struct {
        char name[65]; /* "" for none; 64 characters at most (remote.h) */
        uint64_t objects, direct, deps, lease, bytes;
    } ns[CBC_INVENTORY_NS_MAX];
    size_t n_ns;
    uint64_t ns_others;     /* keys of namespaces beyond the first CBC_INVENTORY_NS_MAX */
    bool complete;          /* the whole key space was seen (not cut by the limits) */
};
/* Lists every namespace's keys, at most max_keys, until deadline_us
 * (CLOCK_MONOTONIC in microseconds; 0: none), each operation under the remote's
 * timeout. CBC_E_NOT_FOUND without a remote; CBC_E_UNSUPPORTED for one
 * that cannot list (HTTP); CBC_E_CACHE when it fails. */
enum cbc_status cbc_store_remote_inventory(struct cbc_store *s, uint64_t max_keys,
                                           uint64_t deadline_us,
                                           struct cbc_store_remote_inventory *out,
                                           struct cbc_err *err);
/* Uploads every local entry and record (not toolchain identities) that
 * passes its local checks, replacing what the remote holds under its key
 * (the damaged ones are counted in *bad and reported, never sent).
 * CBC_E_USAGE for a read-only remote; CBC_E_CACHE when it fails or
 * refuses writes (what was pushed so far stays). */
enum cbc_status cbc_store_remote_push(struct cbc_store *s, uint64_t *pushed, uint64_t *bytes,
                                      uint64_t *bad, cbc_store_report_fn report, void *ctx,
                                      struct cbc_err *err);
struct cbc_store_remote_verify {
    uint64_t checked, bad, deleted, foreign;
    bool complete;
};
/* Fetches every value of the remote's namespace (at most max_keys, until
 * deadline_us) and checks it exactly as a local file is checked (the value
 * codec, then the entry's header, key, content hash and image arch, or the
 * record's header and key); reports each bad one, and with delete_bad
 * deletes it. Keys that cubincache does not write are reported and left
 * alone; leases are skipped. Errors as cbc_store_remote_inventory. */
enum cbc_status cbc_store_remote_verify(struct cbc_store *s, bool delete_bad, uint64_t max_keys,
                                        uint64_t deadline_us, struct cbc_store_remote_verify *out,
                                        cbc_store_report_fn report, void *ctx,
                                        struct cbc_err *err);

#endif
