/* rust_lex.c: the Rust lexer of the lint (rust_int.h): enough of Rust to
 * never take text inside a comment or a string for code: nested block
 * comments, raw strings r#"..."#, byte and C strings, char literals told
 * from lifetimes, numbers with suffixes. (A macro_rules! body is lexed like
 * any code; rust.c skips it as an item.)
 */
#include "rust_int.h"

#include <stdlib.h>
#include <string.h>

/* ---- lexing -------------------------------------------------------------- */

static bool is_id0(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool is_id(unsigned char c)
{
    return is_id0(c) || (c >= '0' && c <= '9');
}

static bool push_tok(struct rfile *f, uint8_t k, size_t off, size_t len, uint32_t str)
{
    if (!cbc_grow(&f->t, f->n, &f->cap, sizeof *f->t, 256))
        return false;
    f->t[f->n++] = (struct tok){.k = k, .off = (uint32_t)off, .len = (uint32_t)len, .str = str};
    return true;
}

/* Decodes a string's body [b, e) (escapes unless raw) and keeps it. */
static bool add_str(struct rfile *f, const char *b, const char *e, bool raw, uint32_t *idx)
{
    struct cbc_buf out = {0};
    cbc_buf_append(&out, "", 0);
    for (const char *p = b; p < e; p++) {
        if (raw || *p != '\\' || p + 1 >= e) {
            cbc_buf_append(&out, p, 1);
            continue;
        }
        char c = *++p;
        switch (c) {
        case 'n': cbc_buf_append(&out, "\n", 1); break;
        case 't': cbc_buf_append(&out, "\t", 1); break;
        case 'r': cbc_buf_append(&out, "\r", 1); break;
        case '0': cbc_buf_append(&out, "\0", 0); break;
        case 'x':
            if (p + 2 < e && cbc_hex_digit(p[1]) >= 0 && cbc_hex_digit(p[2]) >= 0) {
                char v = (char)(cbc_hex_digit(p[1]) * 16 + cbc_hex_digit(p[2]));
                cbc_buf_append(&out, &v, 1);
                p += 2;
            }
            break;
        case 'u': /* \u{...}: kept out; names never need it */
            while (p < e && *p != '}')
                p++;
            break;
        case '\n': /* a continuation: the newline and the next line's indent go */
            while (p + 1 < e && (p[1] == ' ' || p[1] == '\t' || p[1] == '\n' || p[1] == '\r'))
                p++;
            break;
        default: cbc_buf_append(&out, &c, 1); break;
        }
    }
    if (out.oom || !cbc_grow(&f->strs, f->n_strs, &f->cap_strs, sizeof *f->strs, 32)) {
        cbc_buf_release(&out);
        return false;
    }
    *idx = (uint32_t)f->n_strs;
    f->strs[f->n_strs++] = out.p;
    return true;
}

/* A comment at p (a line comment, or a block comment with nested ones):
 * the text after it, p itself when p starts none. An unterminated block
 * comment ends at the end. */
static const char *skip_comment(const char *p, const char *end)
{
    if (*p != '/' || p + 1 >= end)
        return p;
    if (p[1] == '/') {
        while (p < end && *p != '\n')
            p++;
        return p;
    }
    if (p[1] != '*')
        return p;
    int depth = 1;
    p += 2;
    while (p < end && depth > 0) {
        if (*p == '/' && p + 1 < end && p[1] == '*') {
            depth++;
            p += 2;
        } else if (*p == '*' && p + 1 < end && p[1] == '/') {
            depth--;
            p += 2;
        } else {
            p++;
        }
    }
    return p;
}

/* The opening quote of the string literal at p ("..", b"..", c"..",
 * r#".."#, br"..", cr".."), whether it is raw and with how many hashes;
 * NULL when p starts no string. */
static const char *string_quote(const char *p, const char *end, bool *raw, size_t *hashes)
{
    const char *q = p;
    if ((*q == 'b' || *q == 'c') && q + 1 < end && (q[1] == '"' || q[1] == 'r'))
        q++;
    *raw = false;
    *hashes = 0;
    if (*q == 'r' && q + 1 < end && (q[1] == '"' || q[1] == '#')) {
        const char *h = q + 1;
        size_t n = 0;
        while (h < end && *h == '#')
            n++, h++;
        if (h < end && *h == '"') {
            *raw = true;
            *hashes = n;
            return h;
        }
    }
    return *q == '"' ? q : NULL;
}

/* The raw string whose token starts at p and whose quote q follows
 * `hashes` hashes: its body kept as it is. Returns the text after it
 * (the end when it is unterminated), NULL on out of memory. */
static const char *lex_raw_string(struct rfile *f, const char *p, const char *q, size_t hashes,
                                  const char *end)
{
    const char *body = q + 1, *e = body;
    for (;; e++) {
        if (e >= end)
            break;
        if (*e == '"') {
            size_t k = 0;
            while (k < hashes && e + 1 + k < end && e[1 + k] == '#')
                k++;
            if (k == hashes)
                break;
        }
    }
    uint32_t idx;
    if (!add_str(f, body, e, true, &idx))
        return NULL;
    const char *after = e < end ? e + 1 + hashes : end;
    if (after > end)
        after = end;
    if (!push_tok(f, T_STR, (size_t)(p - f->src.text), (size_t)(after - p), idx))
        return NULL;
    return after;
}

/* The string whose token starts at p and whose quote is q: its body kept
 * decoded. Returns the text after it, NULL on out of memory. */
static const char *lex_string(struct rfile *f, const char *p, const char *q, const char *end)
{
    const char *e = q + 1;
    while (e < end && *e != '"') {
        if (*e == '\\' && e + 1 < end)
            e++;
        e++;
    }
    uint32_t idx;
    if (!add_str(f, q + 1, e, false, &idx))
        return NULL;
    const char *after = e < end ? e + 1 : end;
    if (!push_tok(f, T_STR, (size_t)(p - f->src.text), (size_t)(after - p), idx))
        return NULL;
    return after;
}

/* The quote at p: a char literal ('a', '\n', 'é') or a lifetime ('a,
 * 'static). Returns the text after it, NULL on out of memory. */
static const char *lex_quote(struct rfile *f, const char *p, const char *end)
{
    size_t off = (size_t)(p - f->src.text);
    const char *e = p + 1;
    if (e < end && *e == '\\') {
        e += 2;
        while (e < end && *e != '\'' && *e != '\n')
            e++;
        e = e < end ? e + 1 : end;
        return push_tok(f, T_CHAR, off, (size_t)(e - p), 0) ? e : NULL;
    }
    size_t cl = 1;
    if (e < end) {
        unsigned char u = (unsigned char)*e;
        cl = u >= 0xf0 ? 4 : u >= 0xe0 ? 3 : u >= 0xc0 ? 2 : 1;
    }
    if (e + cl < end && e[cl] == '\'')
        return push_tok(f, T_CHAR, off, cl + 2, 0) ? e + cl + 1 : NULL;
    while (e < end && is_id((unsigned char)*e))
        e++;
    return push_tok(f, T_LIFE, off, (size_t)(e - p), 0) ? e : NULL;
}

/* The identifier at p. Returns the text after it, NULL on out of memory. */
static const char *lex_ident(struct rfile *f, const char *p, const char *end)
{
    const char *e = p;
    while (e < end && is_id((unsigned char)*e))
        e++;
    if (!push_tok(f, T_IDENT, (size_t)(p - f->src.text), (size_t)(e - p), 0))
        return NULL;
    return e;
}

/* The number at p, with its suffix and its fraction. Returns the text
 * after it, NULL on out of memory. */
static const char *lex_number(struct rfile *f, const char *p, const char *end)
{
    const char *e = p;
    while (e < end &&
           (is_id((unsigned char)*e) || (*e == '.' && e + 1 < end && e[1] >= '0' && e[1] <= '9')))
        e++;
    if (!push_tok(f, T_NUM, (size_t)(p - f->src.text), (size_t)(e - p), 0))
        return NULL;
    return e;
}

/* The punctuation at p: one byte, or ::, => and ->. Returns the text
 * after it, NULL on out of memory. */
static const char *lex_punct(struct rfile *f, const char *p, const char *end)
{
    char c = *p;
    size_t len = 1;
    if (p + 1 < end &&
        ((c == ':' && p[1] == ':') || (c == '=' && p[1] == '>') || (c == '-' && p[1] == '>')))
        len = 2;
    if (!push_tok(f, T_PUNCT, (size_t)(p - f->src.text), len, 0))
        return NULL;
    return p + len;
}

/* Each bracket token's match: the index of the token closing it, n when
 * it is unbalanced. False on out of memory. */
static bool match_brackets(struct rfile *f)
{
    size_t *stack = malloc((f->n + 1) * sizeof *stack);
    if (!stack)
        return false;
    size_t sp = 0;
    for (size_t i = 0; i < f->n; i++) {
        f->t[i].match = (uint32_t)f->n;
        if (f->t[i].k != T_PUNCT || f->t[i].len != 1)
            continue;
        char ch = f->src.text[f->t[i].off];
        if (ch == '(' || ch == '[' || ch == '{') {
            stack[sp++] = i;
        } else if ((ch == ')' || ch == ']' || ch == '}') && sp > 0) {
            f->t[stack[--sp]].match = (uint32_t)i;
        }
    }
    free(stack);
    return true;
}

/* Lexes the whole file; false only on out of memory (malformed text lexes
 * to something, and an unterminated string or comment ends at the end). */
bool rust_lex(struct rfile *f)
{
    const char *s = f->src.text, *end = s + f->src.len;
    const char *p = s;
    if (f->src.len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
        p += 3; /* a byte order mark is no identifier */
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
            p++;
            continue;
        }
        const char *next = skip_comment(p, end);
        if (next != p) {
            p = next;
            continue;
        }
        bool raw;
        size_t hashes;
        const char *q = string_quote(p, end, &raw, &hashes);
        if (q && raw)
            next = lex_raw_string(f, p, q, hashes, end);
        else if (q)
            next = lex_string(f, p, q, end);
        else if (c == 'b' && p + 1 < end && p[1] == '\'') /* b'x': a byte */
            next = lex_quote(f, p + 1, end);
        else if (c == '\'')
            next = lex_quote(f, p, end);
        else if (c == 'r' && p + 2 < end && p[1] == '#' && is_id0((unsigned char)p[2]))
            next = lex_ident(f, p + 2, end); /* r#ident: the ident without r# */
        else if (is_id0(c))
            next = lex_ident(f, p, end);
        else if (c >= '0' && c <= '9')
            next = lex_number(f, p, end);
        else
            next = lex_punct(f, p, end);
        if (!next)
            return false;
        p = next;
    }
    return match_brackets(f);
}

/* ---- token helpers ------------------------------------------------------- */

bool rust_is(const struct rfile *f, size_t i, const char *text)
{
    if (i >= f->n || f->t[i].k == T_STR || f->t[i].k == T_CHAR)
        return false;
    size_t n = strlen(text);
    return f->t[i].len == n && !memcmp(f->src.text + f->t[i].off, text, n);
}
bool rust_is_ident(const struct rfile *f, size_t i)
{
    return i < f->n && f->t[i].k == T_IDENT;
}
const char *rust_str_of(const struct rfile *f, size_t i)
{
    return i < f->n && f->t[i].k == T_STR ? f->strs[f->t[i].str] : NULL;
}
char *rust_ident_dup(const struct rfile *f, size_t i)
{
    return cbc_strndup(f->src.text + f->t[i].off, f->t[i].len);
}
size_t rust_close_of(const struct rfile *f, size_t i)
{
    return i < f->n ? f->t[i].match : f->n;
}

