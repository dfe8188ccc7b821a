/* manifest.h: NAME.manifest.json, the description of one bundle: every
 * image `cubincache build` wrote and everything its keys were made of.
 * The schema is documented in docs/manifest.md.
 *
 * Invariants: rendering is deterministic (no timestamps, fixed field
 * order), so an unchanged build rewrites nothing; parsing is strict: a
 * field of the wrong type, a hash that is not 32 hex digits, a target that
 * does not parse or a file name with a '/' is an error naming the manifest
 * and the field. File names are relative to the manifest's directory.
 *
 * This module is the file format only: it depends on common/ and nothing
 * else, so the loader reads manifests without linking key/. Comparing a
 * manifest with the inputs of now is key/changes.c.
 *
 * Internal and unstable: the loader's public API reads manifests for users.
 */
#ifndef CBC_MANIFEST_H
#define CBC_MANIFEST_H

#include "common.h"
#include <cubincache/arch.h>

#define CBC_MANIFEST_FORMAT "cubincache-manifest"
#define CBC_MANIFEST_VERSION 1
/* The largest manifest read: a project's is kilobytes (a thousand
 * dependencies make 150 KB); anything near this is not one of ours. */
#define CBC_MANIFEST_MAX (8ull << 20)

struct cbc_manifest_entry {
    struct cbc_target target;
    char *file;           /* "ig_kernels.sm_90.cubin" */
    struct cbc_hash key;  /* result key */
    struct cbc_hash hash; /* XXH3-128 of the file */
    uint64_t size;
    size_t *deps;         /* indices into the manifest's deps; NULL: all of them */
    size_t n_deps;
};

/* Places the build looked for a file and found nothing (src/trace): under
 * `dir` (an existing directory then), each of `names` (paths relative to
 * it). A file there now would be read instead: the bundle is stale. */
struct cbc_manifest_lookup {
    char *dir;
    char **names;
    size_t n;
};

struct cbc_manifest {
    char *name;
    char *source;
    struct cbc_hash source_hash;
    struct cbc_dep *deps;
    size_t n_deps;
    char *nvcc, *nvcc_version, *host_cc;
    struct cbc_hash nvcc_id, host_id;
    char **flags;
    size_t n_flags;
    struct cbc_env env; /* parsed: names and values owned (release frees them) */
    char *cwd;
    char *base_dir; /* the base directory the keys were made under (key.h), or NULL */
    char *arch_spec, *arch_rule, *arch_detail, *compute_cap;
    struct cbc_manifest_entry *entries;
    size_t n;
    /* a device-linked bundle ("linked_sources", absent otherwise): every
     * source compiled with -rdc and linked into each entry, in link order;
     * the first is `source`, the others are also in `deps` */
    char **linked;
    size_t n_linked;
    /* "lookups" (absent in manifests of older builds, or of compiles that
     * were not traced), every target's, sorted by directory and name */
    struct cbc_manifest_lookup *lookups;
    size_t n_lookups;
};

/* NUL-terminated JSON text (malloc'd), or NULL when out of memory. */
char *cbc_manifest_render(const struct cbc_manifest *m);
enum cbc_status cbc_manifest_parse(const char *text, size_t len, const char *name,
                                   struct cbc_manifest *m, struct cbc_err *err);
enum cbc_status cbc_manifest_load(const char *path, struct cbc_manifest *m, struct cbc_err *err);
void cbc_manifest_release(struct cbc_manifest *m);

/* The dependency list of one entry (all of the manifest's when it has none
 * of its own), as a freshly allocated array of pointers into m->deps. */
const struct cbc_dep **cbc_manifest_entry_deps(const struct cbc_manifest *m,
                                               const struct cbc_manifest_entry *e, size_t *n);


/* ---- the bundle's directory (bundledir.c) --------------------------------- */

/* NAME of a directory spelled ".../NAME.bundle" (malloc'd), or NULL. */
char *cbc_bundle_dir_name(const char *path);
/* The canonical image file of a target: "NAME.sm_90a.cubin",
 * "NAME.compute_120.ptx" (malloc'd). The only names a build writes. */
char *cbc_bundle_file(const char *name, const struct cbc_target *t);
/* The target a file name of bundle `name` claims ("k.sm_90.cubin" -> sm_90);
 * false when it is not a canonical image name of that bundle. */
bool cbc_bundle_file_label(const char *file, const char *name, struct cbc_target *t);

#define CBC_STAGE_MARKER "PUBLISHING"
#define CBC_STAGE_RETIRE "RETIRE" /* what the build will retire once published */
/* Whether a directory entry is a staging directory of bundle `name`. */
bool cbc_bundle_is_stage(const char *name, const char *dname);
/* "OUT/.NAME.cubincache-XXXXXX", for mkdtemp (malloc'd). */
char *cbc_bundle_stage_template(const char *out_dir, const char *name);

struct cbc_stage_info {
    char dname[256];
    bool live;       /* its build still holds the lock */
    bool publishing; /* the renames into the out directory had begun */
    bool ours;       /* owned by this user */
};
/* The staging directories of bundle `name` in the directory `outfd`. */
enum cbc_status cbc_bundle_stages(int outfd, const char *name, struct cbc_stage_info **out,
                                  size_t *n, struct cbc_err *err);

#endif
