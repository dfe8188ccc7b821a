/* rust_int.h: what the lint's Rust lexer (rust_lex.c) gives the abstract
 * run of a build script (rust.c): a file's tokens, each with its source
 * span, bracket tokens with the index of their match, and the decoded
 * contents of its string literals.
 *
 * Invariants: every bracket's match is a valid index or n (unbalanced);
 * token spans lie inside the file's text; the helpers below check their
 * index against n, so the run never reads past a file's tokens.
 */
#ifndef CBC_RUST_INT_H
#define CBC_RUST_INT_H

#include "lint_int.h"

enum tk { T_IDENT, T_STR, T_CHAR, T_NUM, T_LIFE, T_PUNCT };

struct tok {
    uint8_t k;
    uint32_t off, len; /* the source span */
    uint32_t str;      /* T_STR: index into the file's decoded strings */
    uint32_t match;    /* ( [ {: index of the closing token (n when unbalanced) */
};

struct rfile {
    struct lint_src src;
    struct tok *t;
    size_t n, cap;
    char **strs;
    size_t n_strs, cap_strs;
};

/* Tokenizes f->src (comments, nested block comments, raw/byte/C strings,
 * char literals against lifetimes). A macro_rules! body stays tokens: the
 * scan of items and the run skip it (rust.c). False on out of memory. */
bool rust_lex(struct rfile *f);
/* Whether token i is the punctuation or identifier `text`. */
bool rust_is(const struct rfile *f, size_t i, const char *text);
bool rust_is_ident(const struct rfile *f, size_t i);
/* Token i's decoded string literal, or NULL when it is none. */
const char *rust_str_of(const struct rfile *f, size_t i);
/* A malloc'd copy of identifier token i. */
char *rust_ident_dup(const struct rfile *f, size_t i);
/* The index of the token closing bracket i (n when unbalanced). */
size_t rust_close_of(const struct rfile *f, size_t i);

/* ---- models of build helpers (rust_helpers.c) --------------------------- */

enum fx_list { FX_NONE, FX_SET, FX_ADD };

/* One line of a helper model: what a call does to cargo. */
struct helper_fx {
    char *call;   /* "cudaforge::detect_compute_cap", "cudaforge::KernelBuilder.build_ptx" */
    bool method;  /* `Type.method` */
    char *recv;   /* a method's type */
    char *name;   /* the function's or method's own name */
    char *type;   /* type=: the value the call returns */
    struct lint_strset reads, declares, default_sources, default_includes;
    struct lint_strset nvcc_declares; /* declared when the call runs nvcc (nvcc-declares=) */
    enum fx_list sources, includes, watch; /* from the first argument */
    bool declares_sources, declares_watch, nvcc, prints_rerun, cuda_project, ends;
    char *sets, *sets_if_true, *unless, *nvcc_if; /* flags on the value */
    char *origin; /* "FILE:LINE" of the model */
};

struct lint_helpers {
    struct helper_fx *v;
    size_t n, cap;
};

/* The model of the function or constructor `call` (a full path), or of
 * `method` on a value of `type`; NULL when none. */
const struct helper_fx *lint_helpers_call(const struct lint_helpers *h, const char *call);
const struct helper_fx *lint_helpers_method(const struct lint_helpers *h, const char *type,
                                            const char *method, size_t mlen);
/* Whether a model names crate `name` (len bytes) first. */
bool lint_helpers_crate(const struct lint_helpers *h, const char *name, size_t len);

#endif
