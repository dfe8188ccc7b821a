/* lint.h: `cubincache lint`: finds the build scripts that read an
 * environment variable which changes their output without telling their
 * build system, so the build system keeps the old output (the incident of
 * docs/lint.md: six of seven build.rs files read CUDA_COMPUTE_CAP
 * undeclared, and an H100 loaded an sm_89 cubin). Four languages:
 * cargo build scripts (rust.c, with the build helpers of rust_helpers.c),
 * CMake (cmake.c), Meson (meson.c) and GNU make (make.c); the tree walk
 * (walk.c) and the all-or-nothing fix (fix.c).
 *
 * Invariants: linting reads files and never writes; every file is opened
 * with O_NOFOLLOW as a regular file, directories are walked beneath their
 * descriptors without following a link; the lexers are bounds-checked and
 * never produce a finding from a comment or a string's contents. A fix
 * only inserts whole lines (or, where a statement does not start its line,
 * one statement or one prerequisite): it never deletes or rewrites user
 * text, never writes outside the PATHs given, writes the file's own line
 * endings after its byte order mark, never emits a glob, and publishes
 * every file or none.
 */
#ifndef CBC_LINT_H
#define CBC_LINT_H

#include "common.h"

enum cbc_lint_rule {
    CBC_LINT_ENV_UNDECLARED, /* build.rs reads VAR without rerun-if-env-changed before it */
    CBC_LINT_ENV_ENUMERATED, /* build.rs reads the whole environment (env::vars) */
    CBC_LINT_NVCC_SOURCES,   /* build.rs runs nvcc without rerun-if-changed for its sources */
    CBC_LINT_CMAKE_ENV,      /* CMake: $ENV{VAR} chooses CUDA archs or flags at configure time */
    CBC_LINT_MESON_ENV,      /* Meson: a configure-time command reads VAR and feeds CUDA args */
    CBC_LINT_MAKE_ENV,       /* GNU make: VAR (environment, command line, the GPU) chooses the
                                arch flags of a target make does not rebuild when VAR changes */
};
/* "env-undeclared", ...: the rule's name in output and JSON */
const char *cbc_lint_rule_name(enum cbc_lint_rule r);

struct cbc_lint_finding {
    enum cbc_lint_rule rule;
    char *file; /* as reached from the PATH given */
    unsigned line, col; /* 1-based; col counts bytes */
    char *var;          /* the variable (or the source path for nvcc-sources); may be NULL */
    char *why;          /* one sentence: what goes stale and when */
    char *fix;          /* one sentence: what to change */
    /* the edit --fix makes: insert `insert` at byte `insert_at` of `file`
     * (NULL when the finding has no automatic fix) */
    char *insert;
    size_t insert_at;
    /* the file as it was read: a fix refuses one that changed since */
    uint64_t file_size, file_ino;
    int64_t file_mtime_ns;
    char *via; /* how the lint reached the file when no PATH named it (a Cargo.toml
                  build key, `mod x;`, include!), or NULL */
};

struct cbc_lint_opts {
    /* the paths given (files or directories); none means "." */
    const char *const *paths;
    size_t n_paths;
    /* files of build-helper models (`--helpers`), read after the built-in
     * ones (src/lint/rust_helpers.c documents the format) */
    const char *const *helper_files;
    size_t n_helper_files;
};

struct cbc_lint_result {
    struct cbc_lint_finding *f;
    size_t n, cap;
    size_t files_read; /* build scripts, CMake and Meson files read */
    char **notes;      /* things a person should know that are not findings */
    size_t n_notes, cap_notes;
    char **roots;      /* the PATHs given, absolute with links resolved: --fix writes
                          only beneath them */
    size_t n_roots;
};

/* Lints every path. CBC_E_IO / CBC_E_USAGE for a path that cannot be read
 * (err names it); findings are not errors. The findings come sorted by file,
 * line and column. */
enum cbc_status cbc_lint_run(const struct cbc_lint_opts *o, struct cbc_lint_result *r,
                             struct cbc_err *err);
void cbc_lint_result_free(struct cbc_lint_result *r);

/* The fix: every finding with an edit, applied to its file. With `diff`
 * non-NULL nothing is written and a unified diff of the change goes there;
 * else every changed file is staged beside itself, then all are renamed
 * over their originals, and a file changed since it was linted (or a
 * symbolic link) stops the whole fix before anything is written, and so
 * does a file outside every root of r (CBC_E_USAGE naming it and how the
 * lint reached it). Each insertion takes the line ending of the line it
 * goes into and comes after a byte order mark. *n_files gets the number
 * of files changed (or that would be). */
enum cbc_status cbc_lint_fix(const struct cbc_lint_result *r, struct cbc_buf *diff,
                             size_t *n_files, struct cbc_err *err);

/* ---- for the language modules (lint_int.h has the rest) ---------------- */
#endif
