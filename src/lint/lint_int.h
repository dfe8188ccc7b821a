/* lint_int.h: what the lint's language modules share: one source file in
 * memory with its line table, adding findings, and the per-language entry
 * points walk.c calls.
 *
 * Invariants: a struct lint_src owns a NUL-terminated copy of the file
 * (text[len] == 0), so a lexer may look one byte ahead without a bounds
 * check failing; positions are byte offsets into it.
 */
#ifndef CBC_LINT_INT_H
#define CBC_LINT_INT_H

#include "lint.h"

#include <sys/stat.h>

/* The largest file linted: build scripts and CMake files are small; a
 * bigger one is almost surely generated and is reported, not read. */
#define LINT_FILE_MAX (8u << 20)

struct lint_src {
    char *path;  /* as given or reached */
    char *text;  /* NUL-terminated */
    size_t len;
    size_t *lines; /* byte offset of each line's start */
    size_t n_lines;
    struct stat st; /* at read time: a fix refuses a file changed since */
    char *via;      /* how the lint reached it when not by a PATH given ("`mod x;` in ..."),
                       or NULL */
};

/* Reads `path` (a regular file, never through a symlink at its last
 * component). CBC_E_IO / CBC_E_USAGE naming the file. */
enum cbc_status lint_src_read(const char *path, struct lint_src *s, struct cbc_err *err);
void lint_src_free(struct lint_src *s);
/* 1-based line and column of byte `off`. */
void lint_src_pos(const struct lint_src *s, size_t off, unsigned *line, unsigned *col);
/* Offset of the start of the line holding `off`. */
size_t lint_src_line_start(const struct lint_src *s, size_t off);

/* Appends a finding (strings are copied; insert may be NULL). False on
 * out of memory. A finding at the same file, offset, rule and variable as
 * one already recorded is dropped (several call paths reach one read). */
bool lint_add(struct cbc_lint_result *r, enum cbc_lint_rule rule, const struct lint_src *s,
              size_t off, const char *var, const char *why, const char *fix, const char *insert,
              size_t insert_at);
bool lint_note(struct cbc_lint_result *r, const char *fmt, ...) CBC_PRINTF(2, 3);
/* The line ending of the line holding `off` ("\r\n" or "\n"; the file's
 * first line's when that line has none). */
const char *lint_src_eol(const struct lint_src *s, size_t off);

/* The models of build helpers: the built-in ones, then those of `files`
 * (rust_helpers.c documents the line format). CBC_E_USAGE naming the file,
 * line and word of a bad line. */
struct lint_helpers;
enum cbc_status lint_helpers_load(struct lint_helpers **h, const char *const *files, size_t n,
                                  struct cbc_err *err);
void lint_helpers_free(struct lint_helpers *h);

/* Language modules. rust: the module files the script includes are found
 * and read by the module itself, relative to the script; `via` (may be
 * NULL) says how the walk reached the script (a Cargo.toml build key). */
enum cbc_status lint_rust_script(const char *path, const char *via, const struct lint_helpers *h,
                                 struct cbc_lint_result *r, struct cbc_err *err);
enum cbc_status lint_make_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err);
enum cbc_status lint_cmake_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err);
enum cbc_status lint_meson_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err);

/* A small set of strings (variable names). */
struct lint_strset {
    char **v;
    size_t n, cap;
};
bool lint_strset_add(struct lint_strset *s, const char *str);
bool lint_strset_has(const struct lint_strset *s, const char *str);
void lint_strset_free(struct lint_strset *s);

#endif
