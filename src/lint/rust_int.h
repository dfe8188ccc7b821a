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
 * char literals against lifetimes, macro_rules! bodies dropped). False on
 * out of memory. */
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

#endif
