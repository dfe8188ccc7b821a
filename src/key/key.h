/* key.h: the fingerprint of one target of one source.
 *
 * A result key (the name of a store entry) is XXH3-128 over, in order:
 *   the key format version, the canonical target, the source path and
 *   content hash, every dependency (path and content hash, sorted by path),
 *   the nvcc identity, the host compiler identity, the canonical flags, and
 *   the environment variables nvcc reads that change its output (a struct
 *   cbc_env: the names of common.h and those the installed nvcc.profile
 *   reads, each with its value or "unset").
 * A direct key (the name of a dependency record, which maps to a result key
 * without running the preprocessor, as ccache's direct mode does) is the
 * same minus the dependencies, plus the working directory, because relative
 * -I paths resolve against it. In both, every path under the base directory
 * (base.c) is hashed relative to it, so checkouts of one tree share keys.
 *
 * Not in either key: CUDA_COMPUTE_CAP and the arch spec. They decide which
 * targets are built, and the target is in the key; the manifest records the
 * rule that picked the targets. File modification times are not in the key:
 * a touched file hashes the same.
 *
 * Internal and unstable.
 */
#ifndef CBC_KEY_H
#define CBC_KEY_H

#include "common.h"
#include <cubincache/arch.h>

#include <sys/stat.h>

/* Bump when anything hashed below changes meaning: old entries then miss.
 * 2: the environment is a set of names (the profile's added), and direct
 * records hold the lookups that found nothing.
 * 3: what counts as an output that names its tree (cache.h,
 * cbc_cache_names_tree): version 2 stored some as shared that hold one
 * checkout's __FILE__ or module id. */
#define CBC_KEY_VERSION 3

/* The environment that changes nvcc's output (struct cbc_env,
 * cbc_key_env_names) and struct cbc_dep are in common.h: the manifest
 * records them too. */

struct cbc_key_inputs {
    struct cbc_target target;
    const char *source;              /* absolute path */
    struct cbc_hash source_hash;
    const struct cbc_dep *deps;      /* sorted by path; the source itself excluded */
    size_t n_deps;
    struct cbc_hash nvcc_id;
    struct cbc_hash host_id;
    char *const *flags;              /* nvcc arguments after "--", in order */
    size_t n_flags;
    struct cbc_env env;              /* strings borrowed */
    const char *cwd;                 /* for the direct key only */
    const char *base;                /* the base directory (base.c), or NULL: paths under it are
                                        hashed as "@BASE@/..." */
};

/* What a build of one source keys on now, besides the target and its
 * dependency list: the one description of "the inputs of now" that build
 * and check fill, and that keys are made from (cbc_key_inputs_make) and
 * manifests compared with (cbc_key_changes). */
struct cbc_key_now {
    const char *source;
    const struct cbc_hash *source_hash; /* NULL: the source is gone */
    const char *nvcc, *nvcc_version;
    const struct cbc_hash *nvcc_id;     /* NULL: nvcc cannot be identified */
    const char *host_cc;
    const struct cbc_hash *host_id;     /* NULL: the host compiler cannot be */
    char *const *flags;                 /* nvcc arguments after "--" */
    size_t n_flags;
    const struct cbc_env *env;          /* NULL: none of it set */
    const char *cwd;                    /* NULL: not known, or not compared */
    const char *base;                   /* the base directory, or NULL */
};

/* The inputs of target t's keys: `now`, the target and its dependency list
 * (sorted by path). The only place a struct cbc_key_inputs is filled from
 * the world, so build and check cannot key on different things. False when
 * `now` lacks something a key needs (the source's, nvcc's or the host
 * compiler's hash). */
bool cbc_key_inputs_make(const struct cbc_key_now *now, const struct cbc_target *t,
                         const struct cbc_dep *deps, size_t n_deps, struct cbc_key_inputs *out);

void cbc_key_result(const struct cbc_key_inputs *in, struct cbc_hash *out);
void cbc_key_direct(const struct cbc_key_inputs *in, struct cbc_hash *out);
/* The host compiler named among nvcc flags (-ccbin X, -ccbin=X,
 * --compiler-bindir X, --compiler-bindir=X), pointing into flags; NULL if none. */
const char *cbc_flags_ccbin(char *const *flags, size_t n);
/* Whether nvcc flags keep intermediate files themselves (-keep,
 * -keep-dir, -save-temps, in either spelling): a caller that adds its own
 * -keep-dir then does not. */
bool cbc_flags_keep(char *const *flags, size_t n);
/* Whether a path can be pasted into nvcc's shell lines as it is (letters,
 * digits and _./+-): a -keep-dir or -MF of ours that is not is not added. */
bool cbc_path_plain(const char *path);

/* The environment a key covers, from the process's: the names of
 * cbc_key_env_names and `extra` (the toolchain's profile_env), with their
 * values. */
void cbc_key_env_read(char *const *extra, size_t n_extra, struct cbc_env *env);

/* ---- what changed (changes.c) -------------------------------------------- */

struct cbc_manifest;
struct cbc_manifest_entry;
struct cbc_filememo;
/* The inputs of entry `e` that differ between manifest `m` and `now`, as
 * sentences ("dependency '/x/h.cuh' changed"), most specific first: the
 * source, the dependencies (hashed through memo), nvcc, the host compiler,
 * the flags, the environment, the working directory. Writes at most `max`
 * malloc'd strings into out and returns how many. */
size_t cbc_key_changes(const struct cbc_manifest *m, const struct cbc_manifest_entry *e,
                       const struct cbc_key_now *now, struct cbc_filememo *memo, char **out,
                       size_t max);

/* The first place manifest `m` records as looked at and found empty that
 * holds a file now, as a sentence (malloc'd), or NULL: a new header that
 * would shadow one the build read. */
char *cbc_key_lookup_changed(const struct cbc_manifest *m);

/* ---- the base directory (base.c) ------------------------------------------ */

/* The base directory of a compile: `setting` (an absolute directory, or
 * "none", or "auto"/NULL: the version-control checkout holding `source`),
 * malloc'd, or NULL for none. Keys and records spell paths under it as
 * "@BASE@/..." so that every checkout of a tree shares them. */
char *cbc_base_detect(const char *setting, const char *source);
/* A file's path as records store it: "@BASE@/src/k.cu" under the base,
 * else the path itself; NULL for a path that starts with '@' (it would
 * read back as the base) and when out of memory. records.c reads the
 * leading mark back. */
char *cbc_base_rel(const char *base, const char *path);
/* Text with every path-start occurrence of `base` replaced by "@BASE@"
 * and every '@' doubled, and back (depfiles and diagnostics stored with an
 * entry, flags as keyed); one-to-one, so expand(template(t)) == t. */
void cbc_base_template(const char *base, const char *text, size_t len, struct cbc_buf *out);
void cbc_base_expand(const char *base, const char *text, size_t len, struct cbc_buf *out);
/* The same with nvcc's module id `id` (NULL: none) spelled "@MID@" too;
 * expand_id is false when the text holds a mark it has nothing for (no
 * base, no id) or is not such a text (a lone '@'), or when out of memory. */
void cbc_base_template_id(const char *base, const char *id, const char *text, size_t len,
                          struct cbc_buf *out);
bool cbc_base_expand_id(const char *base, const char *id, const char *text, size_t len,
                        struct cbc_buf *out);
/* Whether an output names this tree (its base or working directory):
 * then it is no entry for another tree (debug info, -lineinfo, __FILE__
 * with absolute paths). */
bool cbc_base_names(const char *base, const char *cwd, const uint8_t *data, size_t len);

/* ---- dependency lists (deps.c) ------------------------------------------ */

/* Parses a Makefile-syntax depfile as nvcc -MD writes it: the
 * prerequisites of its first rule, unescaped, made absolute against `cwd`,
 * deduplicated and sorted, `exclude` (the source) removed. */
enum cbc_status cbc_depfile_parse(const char *text, size_t len, const char *cwd, const char *exclude,
                                  char ***paths, size_t *n, const char *name, struct cbc_err *err);
void cbc_paths_free(char **paths, size_t n);
/* Appends a path to a depfile with Makefile escaping (space, '#', '$'). */
void cbc_depfile_escape(struct cbc_buf *b, const char *path);

/* ---- file hashes with a stat shortcut (filememo.c) ----------------------- */

/* What stat says about a file; equal stamps mean "unchanged" unless racy. */
struct cbc_stamp {
    uint64_t size, mtime_ns, ctime_ns, ino, dev;
};
bool cbc_stamp_of(const char *path, struct cbc_stamp *st);
bool cbc_stamp_eq(const struct cbc_stamp *a, const struct cbc_stamp *b);
/* A stamp taken at `recorded_ns` can be trusted only if the file had not
 * been modified within the timestamp granularity before it (git's "racy"
 * rule); otherwise the content must be hashed again. */
bool cbc_stamp_trustworthy(const struct cbc_stamp *st, uint64_t recorded_ns);

/* A per-process memo: each file is hashed at most once per run. */
struct cbc_filememo;
struct cbc_filememo *cbc_filememo_new(void);
void cbc_filememo_free(struct cbc_filememo *m);
/* The content hash of `path`. When `known` (may be NULL) carries a stamp
 * and hash recorded earlier at `recorded_ns` and the file's stamp still
 * matches and is trustworthy, the recorded hash is returned without reading
 * the file. *stamp_out (may be NULL) receives the current stamp. */
enum cbc_status cbc_filememo_hash(struct cbc_filememo *m, const char *path,
                                  const struct cbc_stamp *known_stamp,
                                  const struct cbc_hash *known_hash, uint64_t recorded_ns,
                                  struct cbc_hash *out, struct cbc_stamp *stamp_out,
                                  struct cbc_err *err);
/* How many files were read and hashed (the rest came from stamps). */
size_t cbc_filememo_reads(const struct cbc_filememo *m);
/* What a file's text mentions: the time macros (__TIME__, __DATE__,
 * __TIMESTAMP__: a compile that may expand them is never recorded for
 * direct mode, as ccache does) and __CUDA_ARCH_LIST__ (its value then
 * belongs in an arch's key). */
enum { CBC_MENTIONS_TIME = 1, CBC_MENTIONS_ARCH_LIST = 2 };
/* The content hash of `path` and what it mentions, from its bytes as they
 * are now (read once per process: a file hashed earlier through its stamp
 * is read here). */
enum cbc_status cbc_filememo_scan(struct cbc_filememo *m, const char *path, struct cbc_hash *hash,
                                  struct cbc_stamp *stamp, unsigned *mentions,
                                  struct cbc_err *err);
/* The hash this memo held for `path` before cbc_filememo_scan read it again
 * (what a lookup before the compile saw); false when there was none. */
bool cbc_filememo_prior(struct cbc_filememo *m, const char *path, struct cbc_hash *hash);

/* ---- toolchain identity (toolid.c) --------------------------------------- */

struct cbc_toolchain {
    char *nvcc;               /* as resolved from --nvcc / $NVCC / PATH */
    char *version;            /* "13.0.88" */
    char *top;                /* toolkit root nvcc reports (TOP) */
    char *host_cc;            /* host compiler nvcc runs, resolved */
    struct cbc_hash nvcc_id;  /* content of nvcc's binaries and its version */
    struct cbc_hash host_id;  /* content of the host compiler */
    unsigned *supported;      /* plain SASS arches from --list-gpu-code */
    size_t n_supported;
    char **profile_env;       /* the variables nvcc.profile reads (sorted); keyed */
    size_t n_profile_env;
    bool from_cache;          /* identity came from the tools cache, nvcc not run */
    char label[64];           /* "nvcc 13.0.88" */
};

/* The environment variables an nvcc.profile's text reads: those it extends
 * (+=, =+, ?=) and those its values reference ($(X)) before setting them,
 * less nvcc's own (_X_) and PATH and LD_LIBRARY_PATH; sorted, malloc'd. */
enum cbc_status cbc_profile_env_parse(const char *text, size_t len, const char *name,
                                      char ***out, size_t *n_out, struct cbc_err *err);

/* Finds nvcc: explicit, else $NVCC, else nvcc on PATH, else
 * /usr/local/cuda/bin/nvcc. NULL with CBC_E_NVCC in err when none runs. */
char *cbc_nvcc_find(const char *explicit_path, struct cbc_err *err);

/* Identifies nvcc and its host compiler. `ccbin` is the -ccbin value found
 * among the flags (or NULL). With a `cache` (the store's tools records),
 * the identity is cached there with the stamps of every file it depends
 * on, so a later run with the same toolchain runs nothing and reads only
 * stamps. */
enum cbc_status cbc_toolchain_identify(const char *nvcc, const char *ccbin,
                                       const struct cbc_record_cache *cache,
                                       struct cbc_toolchain *tc, struct cbc_err *err);
void cbc_toolchain_release(struct cbc_toolchain *tc);

#endif
