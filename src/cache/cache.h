/* cache.h: the one conversation a compile has with the cache, the same for
 * `cubincache build`, the launcher and the launcher's split compile:
 *
 *   lookup   direct key -> record (every file read unchanged, every place
 *            looked at still empty: direct.h) -> result key -> the entry
 *            under it, verified as the target it is filed under (store.h);
 *            a bad entry is dropped and reported, never served;
 *   compile  the caller's (nvcc, traced: src/trace);
 *   commit   what the compile read and looked for (cbc_collect), and only
 *            when that is safe, the entry under its result key, then the
 *            record that lets the next lookup find it without nvcc; a store
 *            that refuses the write (read-only, full) is reported once and
 *            the build goes on uncached.
 *
 * The result key is the caller's: build and the launcher make it from the
 * inputs and the files read (key.h), the split compile from what cicc
 * reads. What a command's result holds beyond one image (the launcher's
 * output, depfile, stdout, stderr, side files; an arch's files) is one
 * container, struct cbc_result, whose format is below.
 *
 * Result container (little-endian), decoded with every length checked:
 *   0  8  magic "CBCRSLT1"     8  4  member count N (at most CBC_RESULT_MAX)
 *   then N times: 2 name length L (1..4096), L bytes of name (no NUL),
 *                 8 size S, S bytes
 * names unique. The members' meaning is the caller's.
 *
 * Invariants: nothing is stored for a compile whose inputs changed while it
 * ran or whose record would not be safe (collect.c says which); a lookup
 * serves nothing it has not verified; the module never prints: messages go
 * through the callback it is given.
 *
 * Internal and unstable.
 */
#ifndef CBC_CACHE_H
#define CBC_CACHE_H

#include "direct.h"

/* ---- the result container (result.c) ------------------------------------ */

#define CBC_RESULT_MAX 64
#define CBC_RESULT_NAME_MAX 4096

struct cbc_member {
    char *name;    /* owned */
    uint8_t *data; /* owned (never NULL once added: "" for an empty member) */
    size_t len;
};

struct cbc_result {
    struct cbc_member m[CBC_RESULT_MAX];
    size_t n;
};

/* Adds a copy of `data` under `name` (replacing a member of that name).
 * False when full, out of memory, or the name is empty, too long or holds
 * a NUL. */
bool cbc_result_add(struct cbc_result *r, const char *name, const void *data, size_t len);
const struct cbc_member *cbc_result_get(const struct cbc_result *r, const char *name);
/* malloc'd bytes, or NULL when out of memory. */
uint8_t *cbc_result_encode(const struct cbc_result *r, size_t *len);
/* Decodes into copies; CBC_E_FORMAT (with the byte offset) on any damage. */
enum cbc_status cbc_result_decode(const uint8_t *d, size_t len, struct cbc_result *r,
                                  struct cbc_err *err);
void cbc_result_release(struct cbc_result *r);

/* ---- one process's cache (cache.c) ---------------------------------------- */

struct cbc_cache {
    struct cbc_store *store;   /* NULL: no cache: lookups miss, commits store nothing */
    struct cbc_direct *direct;
    struct cbc_filememo *memo; /* borrowed */
    const char *base, *cwd;    /* this tree: its base directory (may be NULL), the working
                                  directory; borrowed */
    cbc_msg_fn msg;
    void *msg_ctx;
    bool warned_write;         /* "cannot write to the cache" said once */
    bool read_only;            /* the read_only setting: commits store nothing */
    bool recache;              /* the recache setting: lookups find nothing */
};

/* Whether an output (a cubin, PTX, a fatbin, a host object) of a compile
 * of `source` names this tree: its base or working directory, as bytes or
 * as a PTX byte array, or nvcc's module id (a hash of the source's path),
 * device code in fatbins looked at decompressed (names.c). Such an output
 * is path-dependent (cbc_cache_unit): another checkout compiles its own. */
bool cbc_cache_names_tree(const struct cbc_cache *c, const char *source, const uint8_t *d,
                          size_t n);
/* Whether `path` names cicc's device-only translation unit (NAME.cudafe1.gpu). */
bool cbc_cache_is_device_tu(const char *path);
/* Whether cicc's device-only translation unit (its .cudafe1.gpu file)
 * names this tree outside its line directives: device code that may use
 * the path (__FILE__ in a kernel) in a form no byte search finds. */
bool cbc_cache_device_code_names_tree(const struct cbc_cache *c, const uint8_t *gpu, size_t n);
/* `path` (malloc'd, may be NULL) made the -keep-dir of one compile, in a
 * temporary directory of ours: returned when it can go into nvcc's shell
 * lines as it is (cbc_path_plain) and is a directory now (made 0700, or
 * made before for the same compile); else freed, and NULL. */
char *cbc_cache_keep_dir(char *path);
/* The same of the .cudafe1.gpu file in `keep` (nvcc's -keep-dir of one
 * compile); true when there is none. */
bool cbc_cache_keep_dir_names_tree(const struct cbc_cache *c, const char *keep);
/* Whether one of PTX's initialised byte arrays holds `dir` (names.c). */
bool cbc_ptx_arrays_hold(const uint8_t *s, size_t n, const char *dir);
/* The base directory for a compile of `source` under the store's base_dir
 * setting (cbc_base_detect), malloc'd; NULL for none (no store, "none", no
 * checkout found, or a bad value, which is warned about through msg). */
char *cbc_cache_base(struct cbc_store *store, const char *source, cbc_msg_fn msg, void *msg_ctx);
/* `store` may be NULL; its read_only and recache settings are read here
 * (a commit then stores nothing, a lookup finds nothing and records
 * nothing). `memo`, `base` and `cwd` are borrowed and must
 * outlive the cache. Records spell paths under `base` relative to it, so
 * another checkout of the tree finds them; an entry whose output names the
 * tree is filed under this tree (base and cwd) as well. */
enum cbc_status cbc_cache_init(struct cbc_cache *c, struct cbc_store *store,
                               struct cbc_filememo *memo, const char *base, const char *cwd,
                               cbc_msg_fn msg, void *msg_ctx, struct cbc_err *err);
/* Stores the fresh stamps of lists whose match needed hashing, then frees
 * what the cache holds (not the store). */
void cbc_cache_release(struct cbc_cache *c);

enum cbc_cache_state {
    CBC_CACHE_MISS = 0,
    CBC_CACHE_HIT = 1,
    CBC_CACHE_DROPPED = 2 /* an entry was found, failed verification, and is gone */
};

/* One compile between its lookup and its commit. */
struct cbc_cache_unit {
    struct cbc_direct_target dt; /* dt.direct_key is the caller's; the rest is the lookup's */
    struct cbc_hash result;      /* the result key: the lookup's, or the caller's */
    enum cbc_cache_state state;
    bool remote;                 /* the hit came from the remote */
    uint8_t *data;               /* a hit's payload (malloc'd; the caller frees it) */
    size_t len;
    char why[CBC_ERR_MSG_MAX];   /* DROPPED: what was wrong */
    bool path_dependent;         /* the output names its tree: the lookup found it so, or the
                                    caller says so before the commit (cbc_base_names) */
    struct cbc_hash sibling;     /* the direct key without the working directory, when the
                                    command is keyed with it (has_sibling): a commit then
                                    also indexes the result for cbc_cache_lookup_preprocessed */
    bool has_sibling;
};

/* Finds u->dt.direct_key's result and its entry, verified as `target`.
 * `what` names the compile in messages ("sm_90 of 'k.cu'"). CBC_OK
 * whatever it found (u->state says); an error only when out of memory. A
 * store that cannot be read is a miss, with a warning. */
enum cbc_status cbc_cache_lookup(struct cbc_cache *c, struct cbc_cache_unit *u,
                                 const struct cbc_target *target, const char *what,
                                 struct cbc_err *err);
/* The entry under u->result alone (a key the caller made), as the lookup
 * reads it. */
enum cbc_status cbc_cache_get(struct cbc_cache *c, struct cbc_cache_unit *u,
                              const struct cbc_target *target, const char *what,
                              struct cbc_err *err);
/* The entry under u->result whether it was stored shared or for this tree
 * (path-dependent): u->path_dependent says which was found. */
enum cbc_status cbc_cache_get_any(struct cbc_cache *c, struct cbc_cache_unit *u,
                                  const struct cbc_target *target, const char *what,
                                  struct cbc_err *err);
/* Whether this command was compiled in another working directory to a
 * result this directory's record (read by the lookup) does not hold (a
 * commit links u->sibling): then a direct miss is worth a preprocessing. */
bool cbc_cache_sibling_seen(struct cbc_cache *c, const struct cbc_cache_unit *u);
/* A direct miss's second chance: u->result made by the caller from the
 * files a preprocessing just read (nvcc -M: the same list a compile's -MD
 * gives). Served only when a stored list vouches for that result here,
 * its files unchanged and every place it looked still empty (a commit
 * indexes each result by its list): the compile's other steps looked for
 * programs too. A hit links the command's own record to that list. */
enum cbc_status cbc_cache_lookup_preprocessed(struct cbc_cache *c, struct cbc_cache_unit *u,
                                              const struct cbc_target *target, const char *what,
                                              struct cbc_err *err);
/* The list a lookup matched (borrowed until cbc_cache_release), or NULL. */
const struct cbc_dep_list *cbc_cache_unit_list(const struct cbc_cache *c,
                                               const struct cbc_cache_unit *u);

enum cbc_commit {
    CBC_COMMIT_STORED = 0,       /* the entry and its record are in the cache */
    CBC_COMMIT_CHANGED = 1,      /* an input changed while the compile ran: use, do not store */
    CBC_COMMIT_UNRECORDABLE = 2, /* the record would not be safe (co->why) */
    CBC_COMMIT_UNWRITABLE = 3,   /* the store refused the write (said once) */
    CBC_COMMIT_NO_STORE = 4      /* there is no cache, or read_only is set */
};

/* Commits a compile collected into `co` (its list is taken): when `data`
 * is not NULL, the entry (`target`, data) under u->result, then the record
 * (u->result, the list) under the direct key. With `co` NULL, the entry
 * alone (a device link, keyed on files its units' records vouch for).
 * *why (may be NULL) gets the reason for any outcome but STORED. CBC_OK
 * unless out of memory. */
enum cbc_status cbc_cache_commit(struct cbc_cache *c, struct cbc_cache_unit *u,
                                 struct cbc_collect_out *co, const struct cbc_target *target,
                                 const void *data, size_t len, enum cbc_commit *outcome,
                                 char *why, size_t why_len, struct cbc_err *err);

#endif
