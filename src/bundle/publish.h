/* publish.h: a bundle's files written all or nothing (layout in
 * manifest/bundledir.c).
 *
 * A build stages every output in its staging directory inside the out
 * directory (same file system), written and fsync'ed; only then, holding an
 * flock of the out directory, it marks the stage PUBLISHING, renames the
 * changed images into place, then the manifest, and only after that removes
 * the outputs the build no longer makes. So:
 *  - a failure before the first rename (ENOSPC, a compile error, a bad
 *    input) changes nothing in the out directory;
 *  - a build killed during the renames leaves a marked stage nobody holds:
 *    `check` calls the bundle INCOMPLETE, and the next build of the bundle
 *    removes the stage and repairs the bundle;
 *  - a file is retired only when it is a regular file in the out directory
 *    whose name is the canonical name of its target for this bundle and
 *    whose content hash is the one a manifest of ours recorded: a tampered
 *    manifest cannot name a source file, a symlink or another bundle's file.
 *
 * Internal and unstable.
 */
#ifndef CBC_PUBLISH_H
#define CBC_PUBLISH_H

#include "build.h"
#include "manifest.h"

struct cbc_stage {
    int outfd;   /* the out directory */
    int fd;      /* the staging directory, flocked while it lives; -1 before begin */
    char *out_dir, *name, *path;
};

/* Opens (creating it) the out directory; no staging directory yet. */
enum cbc_status cbc_stage_init(struct cbc_stage *s, const char *out_dir, const char *name,
                               struct cbc_err *err);
/* Whether the out directory holds exactly these bytes under `file` (a
 * plain file, never through a link). */
bool cbc_stage_holds(const struct cbc_stage *s, const char *file, const void *data, size_t len);
/* Creates and locks the staging directory (once; later calls do nothing). */
enum cbc_status cbc_stage_begin(struct cbc_stage *s, struct cbc_err *err);
/* Removes the staging directory (unless `keep`) and closes everything. */
void cbc_stage_release(struct cbc_stage *s, bool keep);

struct cbc_publish_file {
    const char *file; /* canonical image name */
    const uint8_t *data;
    size_t len;
    bool hit;         /* from the cache: say so when it had to be rewritten */
};

/* What an earlier manifest of ours recorded about an image. */
struct cbc_retire {
    const char *file;
    struct cbc_target target;
    struct cbc_hash hash;
};

struct cbc_publish_req {
    const struct cbc_publish_file *files;
    size_t n_files;
    const char *manifest_text; /* the new NAME.manifest.json */
    const struct cbc_retire *retire; /* the previous manifest's images */
    size_t n_retire;
    const char *depfile;       /* NULL: none */
    const char *depfile_text;
    void (*msg)(void *ctx, enum cbc_msg_kind kind, const char *text);
    void *msg_ctx;
};

struct cbc_publish_result {
    size_t written;        /* images whose bytes changed */
    bool manifest_changed;
};

/* Publishes the bundle as described above. */
enum cbc_status cbc_publish(struct cbc_stage *s, const struct cbc_publish_req *r,
                            struct cbc_publish_result *res, struct cbc_err *err);

#endif
