/* rust.c: the lint of a cargo build script, by cargo's own rule: cargo
 * reads the directives from the whole output of a build script that
 * finishes, so a read of an environment variable (std::env::var, var_os, a
 * bare var() imported from std::env, the iterator forms `.map(env::var)`
 * and `.for_each(|v| ...)` over a list of names, the build helpers of
 * rust_helpers.c) is declared when every path on which the script finishes
 * normally prints `cargo:rerun-if-env-changed=` (or `cargo::`) for it,
 * before the read or after it. A script that runs nvcc must declare its
 * kernel sources with rerun-if-changed once it declares anything.
 *
 * How: the tokens of rust_lex.c, then an abstract run of `fn main` over the
 * token tree. A read that is not declared yet is kept pending with the
 * conditional blocks it sits in (if/else chains and match arms are groups
 * of exclusive blocks); a later declaration resolves the pending reads
 * whose blocks lie inside its own, i.e. every path from the read passes
 * it. A normal finish of the script on the way (`return` in main, exit(0))
 * makes every pending read that may lie on its path a finding. A call of a
 * function of the script runs its body with its parameters bound to the
 * names passed; what a callee declares after it may have returned (return,
 * or `?` / `return Err` whose error the caller swallows) does not resolve
 * the reads made before; a panic, or an error the caller propagates with
 * `?` or unwrap, fails the script and counts for nothing. Names resolve
 * through string literals, consts, statics, `let` bindings of literals,
 * `vec![]`, `.iter().collect()` and `for` loops over literal lists.
 * Functions main never reaches are run too, from an empty state. `--fix`
 * inserts the declaration before the first read on each path.
 *
 * Invariants: every token access is bounds-checked against the file's
 * token count; a file's tokens are its own (no finding from text inside a
 * comment, string or macro_rules! body); the abstract run is bounded (call
 * depth, nesting and a step budget), so a hostile script cannot make it
 * hang; no insertion ever names a glob (a glob's directory, or each file it
 * matches, instead).
 */
#include "rust_int.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 64
#define MAX_DEPTH 12
#define MAX_PARAMS 16
#define STEP_BUDGET 4000000u
#define MAX_NEST 200     /* blocks and array literals followed inside one another */
#define MAX_READS 100000 /* pending reads kept for one script */

struct rfn {
    char *name;
    int file;
    size_t body; /* index of the body's '{' */
    char *params[MAX_PARAMS];
    size_t n_params;
    bool reached;
    bool method; /* takes self: never what a bare name( calls */
    char *impl;  /* the type of the impl block it sits in, or NULL */
    int ret;     /* 0: what it returns not looked at yet, 1: being looked at, 2: done */
    struct lint_strset ret_names; /* the names its tail expression stands for */
};

/* A byte range of a file that is an impl block of a type, or a module. */
struct span {
    int file;
    size_t b, e; /* tokens */
    char *name;
    bool module;
};

struct site {
    int file;
    size_t off;      /* where the finding points */
    size_t stmt_tok; /* the first token of the statement to insert before */
};

/* A value the run follows: the variable names it may stand for, and for a
 * modelled helper's value (a builder) its type, its kernel sources and
 * flags. */
struct val {
    struct lint_strset names;
    bool has_origin; /* a parameter: the finding points where the caller passed it */
    struct site origin;
    const char *type; /* the model's type string; NULL: none */
    struct lint_strset srcs, incs, watch, flags;
    bool srcs_default, incs_default, srcs_unknown;
    /* a struct literal (or an array of them): the names of each field */
    struct vfield *fields;
    size_t n_fields;
};

struct vfield {
    char *name;
    struct lint_strset names;
};

struct binding {
    char *name;
    struct val v;
};

struct frame {
    int file;
    struct binding *b;
    size_t nb, cap;
    size_t exit_h; /* SIZE_MAX until the function may have returned early */
    size_t floor;  /* reads before this seq are not resolved by what follows here */
    size_t depth;
    const char *impl; /* the impl type of the function running (Self) */
    bool root;       /* main, or a function run on its own: its return ends the script */
    bool propagates; /* its caller turns an error return into a failed script */
    struct frame *parent;
};

/* One conditional block on the current path: blocks of one group (the
 * branches of an if/else chain, the arms of a match) exclude each other. */
struct cstep {
    uint32_t group, id;
};

/* A read not (yet) declared on every path that finishes after it. */
struct pread {
    char *name;
    struct site site;
    struct cstep *path;
    size_t n_path;
    size_t seq;
    bool resolved, escaped;
};

/* A modelled helper call that compiles kernels without declaring them. */
struct nvrun {
    struct site site;
    struct lint_strset srcs;
    bool unknown;
    bool declares; /* the call declares its kernels itself */
    const char *call;
};

struct import {
    char *name; /* the local name, "*" for a glob import */
    char *path; /* what it stands for ("cudaforge::KernelBuilder", or the crate for "*") */
};

struct unit {
    struct rfile files[MAX_FILES];
    int n_files;
    const char *via;
    const struct lint_helpers *h;
    struct rfn *fns;
    size_t n_fns, cap_fns;
    struct span *spans;
    size_t n_spans, cap_spans;
    struct binding *consts; /* file-level const and static of strings */
    size_t n_consts, cap_consts;
    struct import *imports;
    size_t n_imports, cap_imports;
    bool imp_var, imp_var_os, imp_vars, imp_vars_os;
    bool cargo2;    /* the script already writes cargo:: directives */
    bool has_rerun; /* it (or a helper it calls) emits some rerun-if directive */
    char **decl;    /* the declared names on the current path */
    size_t n_decl, cap_decl;
    struct pread *reads;
    size_t n_reads, cap_reads, seq;
    struct cstep *cpath;
    size_t n_cpath, cap_cpath;
    uint32_t next_group, next_id;
    int closure; /* inside a closure's body: its return is not the function's */
    /* the condition of an `if` whose block only prints warnings: what it
     * reads does not change what is built (file, byte range) */
    int quiet_file;
    size_t quiet_b, quiet_e;
    struct lint_strset changed; /* rerun-if-changed paths (globs: every file matching) */
    struct lint_strset printed; /* those the script itself prints on every finishing path */
    bool root_exited;           /* main may have returned already on this run */
    bool changed_unknown;       /* one the lint could not resolve */
    struct site nvcc_site;
    bool nvcc, cubincache_emits;
    struct nvrun *nvruns;
    size_t n_nvruns, cap_nvruns;
    bool modelled_nvcc; /* a modelled helper compiles kernels */
    size_t env_findings;
    unsigned long steps;
    int depth; /* nested blocks and array literals being followed: bounded */
    bool oom, budget;
    struct cbc_lint_result *r;
};

/* ---- values -------------------------------------------------------------- */

static void val_free(struct val *v)
{
    lint_strset_free(&v->names);
    lint_strset_free(&v->srcs);
    lint_strset_free(&v->incs);
    lint_strset_free(&v->watch);
    lint_strset_free(&v->flags);
    for (size_t i = 0; i < v->n_fields; i++) {
        free(v->fields[i].name);
        lint_strset_free(&v->fields[i].names);
    }
    free(v->fields);
    v->fields = NULL;
    v->n_fields = 0;
}

static bool set_copy(struct lint_strset *dst, const struct lint_strset *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (!lint_strset_add(dst, src->v[i]))
            return false;
    return true;
}

/* Adds `names` to field `name` (len bytes) of v. */
static bool field_add(struct val *v, const char *name, size_t len, const struct lint_strset *names)
{
    for (size_t i = 0; i < v->n_fields; i++)
        if (strlen(v->fields[i].name) == len && !memcmp(v->fields[i].name, name, len))
            return set_copy(&v->fields[i].names, names);
    struct vfield *nf = realloc(v->fields, (v->n_fields + 1) * sizeof *nf);
    if (!nf)
        return false;
    v->fields = nf;
    struct vfield *x = &v->fields[v->n_fields];
    memset(x, 0, sizeof *x);
    if (!(x->name = cbc_strndup(name, len)))
        return false;
    v->n_fields++;
    return set_copy(&x->names, names);
}

static bool fields_copy(struct val *dst, const struct val *src)
{
    for (size_t i = 0; i < src->n_fields; i++)
        if (!field_add(dst, src->fields[i].name, strlen(src->fields[i].name), &src->fields[i].names))
            return false;
    return true;
}

static bool val_empty(const struct val *v)
{
    return v->names.n == 0 && v->n_fields == 0;
}

static bool val_copy(struct val *dst, const struct val *src)
{
    memset(dst, 0, sizeof *dst);
    dst->has_origin = src->has_origin;
    dst->origin = src->origin;
    dst->type = src->type;
    dst->srcs_default = src->srcs_default;
    dst->incs_default = src->incs_default;
    dst->srcs_unknown = src->srcs_unknown;
    return set_copy(&dst->names, &src->names) && set_copy(&dst->srcs, &src->srcs) &&
           set_copy(&dst->incs, &src->incs) && set_copy(&dst->watch, &src->watch) &&
           set_copy(&dst->flags, &src->flags) && fields_copy(dst, src);
}

static struct val *lookup_mut(struct frame *fr, const char *name, size_t len)
{
    for (size_t i = fr ? fr->nb : 0; i-- > 0;)
        if (strlen(fr->b[i].name) == len && !memcmp(fr->b[i].name, name, len))
            return &fr->b[i].v;
    return NULL;
}

static const struct val *lookup(const struct unit *u, const struct frame *fr, const char *name,
                                size_t len)
{
    for (size_t i = fr ? fr->nb : 0; i-- > 0;)
        if (strlen(fr->b[i].name) == len && !memcmp(fr->b[i].name, name, len))
            return &fr->b[i].v;
    for (size_t i = 0; i < u->n_consts; i++)
        if (strlen(u->consts[i].name) == len && !memcmp(u->consts[i].name, name, len))
            return &u->consts[i].v;
    return NULL;
}

static bool bind(struct binding **b, size_t *nb, size_t *cap, char *name, struct val *v)
{
    if (!name || !cbc_grow(b, *nb, cap, sizeof **b, 8)) {
        free(name);
        val_free(v);
        return false;
    }
    (*b)[(*nb)++] = (struct binding){.name = name, .v = *v};
    return true;
}

/* The ',' ending the element of a list that starts at token i (brackets
 * skipped), or close when it is the last. */
static size_t elem_end(const struct rfile *f, size_t i, size_t close)
{
    while (i < close && !rust_is(f, i, ",")) {
        if (rust_is(f, i, "(") || rust_is(f, i, "[") || rust_is(f, i, "{"))
            i = rust_close_of(f, i);
        i++;
    }
    return i > close ? close : i;
}

/* The arguments of a call (...) after its '(' at `open`: ranges. */
struct args {
    size_t b[32], e[32];
    size_t n;
};
static void split_args(const struct rfile *f, size_t open, struct args *a)
{
    a->n = 0;
    size_t close = rust_close_of(f, open);
    size_t i = open + 1;
    while (i < close && a->n < 32) {
        size_t j = elem_end(f, i, close);
        if (j > i) {
            a->b[a->n] = i;
            a->e[a->n] = j;
            a->n++;
        }
        i = j + 1;
    }
}

/* The names an expression [b, e) stands for: "X", &"X", CONST, &CONST,
 * binding, binding.as_str(), ["A", "B"], &["A", B_CONST], vec!["A"],
 * x.iter(), x.iter().collect::<Vec<_>>(). False (v empty) when the lint
 * cannot tell. */
static bool resolve_at(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                       size_t e, struct val *v);

static bool resolve(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                    size_t e, struct val *v)
{
    memset(v, 0, sizeof *v);
    if (u->depth >= MAX_NEST) { /* a hostile file's [[[[...]]]]: not followed */
        u->budget = true;
        return false;
    }
    u->depth++;
    bool ok = resolve_at(u, fr, f, b, e, v);
    u->depth--;
    return ok;
}

static bool strip_call(const struct rfile *f, size_t b, size_t *e)
{
    static const char *const pass[] = {"as_str",  "as_ref", "to_string", "iter",   "into_iter",
                                       "to_owned", "copied", "cloned",    "collect", "to_vec",
                                       "into",     "clone",  "as_slice"};
    if (*e < b + 4 || !rust_is(f, *e - 1, ")") || !rust_is(f, *e - 2, "("))
        return false;
    size_t m = *e - 3;
    if (rust_is(f, m, ">")) { /* collect::<Vec<_>>() */
        int d = 0;
        while (m > b) {
            if (rust_is(f, m, ">"))
                d++;
            else if (rust_is(f, m, "<") && --d == 0)
                break;
            m--;
        }
        if (m <= b + 2 || !rust_is(f, m - 1, "::"))
            return false;
        m -= 2;
    }
    if (m <= b || !rust_is(f, m - 1, "."))
        return false;
    for (size_t k = 0; k < CBC_ARRAY_LEN(pass); k++)
        if (rust_is(f, m, pass[k])) {
            *e = m - 1;
            return true;
        }
    return false;
}

/* The '(' whose ')' is at `close`, searching back to b; SIZE_MAX when none. */
static size_t open_of(const struct rfile *f, size_t b, size_t close)
{
    for (size_t k = close; k-- > b;)
        if (rust_is(f, k, "(") && rust_close_of(f, k) == close)
            return k;
    return SIZE_MAX;
}

/* Whether the argument [b, e) of .map() keeps each name as it is:
 * String::from, ToString::to_string, |s| s.to_string(), |s| s.into(). */
static bool map_identity(const struct rfile *f, size_t b, size_t e)
{
    if (e == b + 3 && rust_is(f, b + 1, "::") &&
        ((rust_is(f, b, "String") && rust_is(f, b + 2, "from")) ||
         (rust_is(f, b, "ToString") && rust_is(f, b + 2, "to_string")) ||
         (rust_is(f, b, "Into") && rust_is(f, b + 2, "into")) ||
         (rust_is(f, b, "ToOwned") && rust_is(f, b + 2, "to_owned"))))
        return true;
    size_t k = b;
    if (!rust_is(f, k, "|"))
        return false;
    k++;
    while (k < e && (rust_is(f, k, "&") || rust_is(f, k, "*")))
        k++;
    if (!rust_is_ident(f, k) || !rust_is(f, k + 1, "|"))
        return false;
    size_t p = k, q = k + 2;
    while (q < e && (rust_is(f, q, "*") || rust_is(f, q, "&")))
        q++;
    if (!rust_is_ident(f, q) || f->t[q].len != f->t[p].len ||
        memcmp(f->src.text + f->t[q].off, f->src.text + f->t[p].off, f->t[p].len))
        return false;
    q++;
    if (q == e)
        return true;
    return e == q + 4 && rust_is(f, q, ".") && rust_is(f, q + 2, "(") && rust_is(f, q + 3, ")") &&
           (rust_is(f, q + 1, "to_string") || rust_is(f, q + 1, "into") ||
            rust_is(f, q + 1, "to_owned") || rust_is(f, q + 1, "clone"));
}

static struct rfn *find_any_fn(struct unit *u, const char *name, size_t len)
{
    struct rfn *hit = NULL;
    for (size_t i = 0; i < u->n_fns; i++)
        if (strlen(u->fns[i].name) == len && !memcmp(u->fns[i].name, name, len)) {
            if (hit)
                return NULL; /* two of that name: the lint cannot tell which */
            hit = &u->fns[i];
        }
    return hit;
}

/* The names a function of the script returns: its tail expression. */
static const struct lint_strset *fn_returns(struct unit *u, struct rfn *fn)
{
    if (fn->ret == 1)
        return NULL;
    if (fn->ret == 0) {
        fn->ret = 1;
        const struct rfile *f = &u->files[fn->file];
        size_t close = rust_close_of(f, fn->body);
        size_t tail = fn->body + 1;
        for (size_t k = fn->body + 1; k < close && k < f->n; k++) {
            if (rust_is(f, k, "(") || rust_is(f, k, "[") || rust_is(f, k, "{")) {
                size_t c = rust_close_of(f, k);
                if (rust_is(f, k, "{") && c < close && !rust_is(f, c + 1, ".") &&
                    !rust_is(f, c + 1, ")"))
                    tail = c + 1; /* a block statement */
                k = c;
                continue;
            }
            if (rust_is(f, k, ";"))
                tail = k + 1;
        }
        struct val v;
        if (tail < close && close <= f->n && resolve(u, NULL, f, tail, close, &v)) {
            if (!set_copy(&fn->ret_names, &v.names))
                u->oom = true;
            val_free(&v);
        }
        fn->ret = 2;
    }
    return &fn->ret_names;
}

/* [b, e) ends in a call whose '(' is `open`, its name the token before it:
 * .chain(x), .map(identity), once(x), String::from(x), Some(x), a function
 * of the script that returns names. */
static bool resolve_call(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                         size_t open, struct val *v)
{
    size_t m = open - 1;
    struct args a;
    split_args(f, open, &a);
    bool dot = m > b && rust_is(f, m - 1, ".");
    if (dot && rust_is(f, m, "chain") && a.n == 1) {
        struct val x, y;
        bool ok = resolve(u, fr, f, b, m - 1, &x);
        bool ok2 = ok && resolve(u, fr, f, a.b[0], a.e[0], &y);
        if (ok2 && (!set_copy(&v->names, &x.names) || !set_copy(&v->names, &y.names)))
            u->oom = true;
        if (ok)
            val_free(&x);
        if (ok2)
            val_free(&y);
        return ok2;
    }
    if (dot && rust_is(f, m, "map") && a.n == 1 && map_identity(f, a.b[0], a.e[0]))
        return resolve(u, fr, f, b, m - 1, v);
    if (!dot && a.n == 1 && (rust_is(f, m, "once") || rust_is(f, m, "from") || rust_is(f, m, "Some")))
        return resolve(u, fr, f, a.b[0], a.e[0], v);
    struct rfn *fn = find_any_fn(u, f->src.text + f->t[m].off, f->t[m].len);
    const struct lint_strset *rn = fn ? fn_returns(u, fn) : NULL;
    if (rn && rn->n) {
        if (!set_copy(&v->names, rn))
            u->oom = true;
        return true;
    }
    return false;
}

/* x.field at token b, x a struct literal: the field's names. */
static bool resolve_field(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                          struct val *v)
{
    const struct val *x = lookup(u, fr, f->src.text + f->t[b].off, f->t[b].len);
    for (size_t i = 0; x && i < x->n_fields; i++)
        if (strlen(x->fields[i].name) == f->t[b + 2].len &&
            !memcmp(x->fields[i].name, f->src.text + f->t[b + 2].off, f->t[b + 2].len)) {
            if (!set_copy(&v->names, &x->fields[i].names))
                u->oom = true;
            return v->names.n > 0;
        }
    return false;
}

/* Name { field: expr, ... } (or a path to the name) in [b, e): the names
 * of each field. */
static bool resolve_struct(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                           size_t e, struct val *v)
{
    size_t open = b;
    while (open < e && !rust_is(f, open, "{")) {
        if (!rust_is_ident(f, open) && !rust_is(f, open, "::"))
            return false;
        open++;
    }
    if (open >= e || rust_close_of(f, open) != e - 1)
        return false;
    for (size_t i = open + 1; i < e - 1;) {
        size_t j = elem_end(f, i, e - 1);
        if (j > i + 2 && rust_is_ident(f, i) && rust_is(f, i + 1, ":")) {
            struct val one;
            if (resolve(u, fr, f, i + 2, j, &one)) {
                if (!field_add(v, f->src.text + f->t[i].off, f->t[i].len, &one.names))
                    u->oom = true;
                val_free(&one);
            }
        }
        i = j + 1;
    }
    return v->n_fields > 0;
}

/* The variable (binding, const, static) at token b: its names, fields and
 * origin. */
static bool resolve_var(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                        struct val *v)
{
    const struct val *x = lookup(u, fr, f->src.text + f->t[b].off, f->t[b].len);
    if (!x || val_empty(x))
        return false;
    if (!set_copy(&v->names, &x->names) || !fields_copy(v, x))
        u->oom = true;
    if (x->has_origin) {
        v->has_origin = true;
        v->origin = x->origin;
    }
    return true;
}

/* The array literal [b, e): the names (and fields) of every element;
 * false when one of them does not resolve. */
static bool resolve_array(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                          size_t e, struct val *v)
{
    for (size_t i = b + 1; i < e - 1;) {
        size_t j = elem_end(f, i, e - 1);
        struct val one;
        if (!resolve(u, fr, f, i, j, &one)) {
            val_free(v);
            return false;
        }
        for (size_t k = 0; k < one.names.n; k++)
            if (!lint_strset_add(&v->names, one.names.v[k]))
                u->oom = true;
        if (!fields_copy(v, &one))
            u->oom = true;
        val_free(&one);
        i = j + 1;
    }
    return !val_empty(v);
}

static bool resolve_at(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                       size_t e, struct val *v)
{
    while (b < e && (rust_is(f, b, "&") || rust_is(f, b, "*")))
        b++;
    while (strip_call(f, b, &e))
        ;
    if (b >= e)
        return false;
    if (e >= b + 3 && rust_is(f, e - 1, ")")) { /* a call at the end */
        size_t open = open_of(f, b, e - 1);
        if (open != SIZE_MAX && open > b && rust_is_ident(f, open - 1))
            return resolve_call(u, fr, f, b, open, v);
    }
    if (e == b + 1 && f->t[b].k == T_STR) {
        if (!lint_strset_add(&v->names, rust_str_of(f, b)))
            u->oom = true;
        return true;
    }
    if (e == b + 3 && rust_is_ident(f, b) && rust_is(f, b + 1, ".") && rust_is_ident(f, b + 2))
        return resolve_field(u, fr, f, b, v);
    if (rust_is_ident(f, b) && e > b + 2 && rust_is(f, e - 1, "}"))
        return resolve_struct(u, fr, f, b, e, v);
    if (e == b + 1 && rust_is_ident(f, b))
        return resolve_var(u, fr, f, b, v);
    if (rust_is(f, b, "vec") && rust_is(f, b + 1, "!") && rust_is(f, b + 2, "["))
        b += 2;
    if (rust_is(f, b, "[") && rust_close_of(f, b) == e - 1)
        return resolve_array(u, fr, f, b, e, v);
    return false;
}

/* ---- the declared stack and the pending reads ---------------------------- */

static bool declared(struct unit *u, const char *name)
{
    u->steps += u->n_decl; /* the stack is scanned: a hostile script's thousands of names count */
    for (size_t i = 0; i < u->n_decl; i++)
        if (!strcmp(u->decl[i], name))
            return true;
    return false;
}

static void push_decl(struct unit *u, const char *name)
{
    if (declared(u, name))
        return;
    char *d = cbc_strdup(name);
    if (!d || !cbc_grow(&u->decl, u->n_decl, &u->cap_decl, sizeof *u->decl, 16)) {
        free(d);
        u->oom = true;
        return;
    }
    u->decl[u->n_decl++] = d;
}

static void truncate_to(struct unit *u, struct frame *fr, size_t h)
{
    while (u->n_decl > h)
        free(u->decl[--u->n_decl]);
    if (fr->exit_h != SIZE_MAX && fr->exit_h > h)
        fr->exit_h = h;
}

/* Whether path a (na steps) is a prefix of path b: b lies inside a. */
static bool cpath_prefix(const struct cstep *a, size_t na, const struct cstep *b, size_t nb)
{
    if (na > nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (a[i].group != b[i].group || a[i].id != b[i].id)
            return false;
    return true;
}

/* Whether one run can pass through both a and b: they do not sit in two
 * blocks of one group (two branches of an if, two arms of a match). */
static bool cpath_compatible(const struct cstep *a, size_t na, const struct cstep *b, size_t nb)
{
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++)
        if (a[i].group != b[i].group || a[i].id != b[i].id)
            return a[i].group != b[i].group;
    return true;
}

static size_t frame_floor(const struct frame *fr)
{
    size_t fl = 0;
    for (; fr; fr = fr->parent)
        if (fr->floor > fl)
            fl = fr->floor;
    return fl;
}

/* A declaration runs: `name` is declared from here on this path, and every
 * pending read of it that this point follows on every path is resolved. */
static void declare_name(struct unit *u, const struct frame *fr, const char *name)
{
    push_decl(u, name);
    size_t fl = frame_floor(fr);
    u->steps += u->n_reads; /* the pending reads are looked at: that is work too */
    if (u->steps > STEP_BUDGET) {
        u->budget = true;
        return;
    }
    for (size_t i = 0; i < u->n_reads; i++) {
        struct pread *p = &u->reads[i];
        if (!p->resolved && p->seq >= fl && !strcmp(p->name, name) &&
            cpath_prefix(u->cpath, u->n_cpath, p->path, p->n_path))
            p->resolved = true;
    }
}

/* Variables cargo itself sets for a build script: reading them is fine. */
static bool cargo_sets(const char *v)
{
    static const char *const exact[] = {
        "CARGO", "OUT_DIR", "TARGET", "HOST", "NUM_JOBS", "OPT_LEVEL", "DEBUG", "PROFILE",
        "RUSTC", "RUSTDOC", "RUSTC_LINKER", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER",
    };
    if (!strncmp(v, "CARGO_", 6) || !strncmp(v, "DEP_", 4))
        return true;
    for (size_t i = 0; i < CBC_ARRAY_LEN(exact); i++)
        if (!strcmp(v, exact[i]))
            return true;
    return false;
}

/* A read of `name` at `s`: fine when declared on this path already, else
 * pending (once per path: a later read on the path of a pending one is
 * covered by that one's fix). */
static void record_read(struct unit *u, const char *name, const struct site *s)
{
    if (cargo_sets(name) || declared(u, name))
        return;
    if (s->file == u->quiet_file && s->off >= u->quiet_b && s->off < u->quiet_e)
        return; /* it only decides whether a warning is printed */
    u->steps += u->n_reads;
    if (u->steps > STEP_BUDGET) {
        u->budget = true;
        return;
    }
    for (size_t i = 0; i < u->n_reads; i++) {
        const struct pread *p = &u->reads[i];
        if (!p->resolved && !strcmp(p->name, name) &&
            cpath_prefix(p->path, p->n_path, u->cpath, u->n_cpath))
            return;
    }
    if (u->n_reads >= MAX_READS) {
        u->budget = true;
        return;
    }
    if (!cbc_grow(&u->reads, u->n_reads, &u->cap_reads, sizeof *u->reads, 16)) {
        u->oom = true;
        return;
    }
    struct pread *p = &u->reads[u->n_reads];
    memset(p, 0, sizeof *p);
    p->name = cbc_strdup(name);
    p->site = *s;
    p->seq = ++u->seq;
    if (u->n_cpath) {
        p->path = malloc(u->n_cpath * sizeof *p->path);
        if (p->path)
            memcpy(p->path, u->cpath, u->n_cpath * sizeof *p->path);
        p->n_path = u->n_cpath;
    }
    if (!p->name || (u->n_cpath && !p->path)) {
        free(p->name);
        free(p->path);
        u->oom = true;
        return;
    }
    u->n_reads++;
}

/* The script finishes here (a return from main, exit(0)): every pending
 * read that may lie on this path stays undeclared on it. */
static void script_exit(struct unit *u)
{
    for (size_t i = 0; i < u->n_reads; i++) {
        struct pread *p = &u->reads[i];
        if (!p->resolved &&
            cpath_compatible(p->path, p->n_path, u->cpath, u->n_cpath))
            p->escaped = true;
    }
}

static void cpath_push(struct unit *u, uint32_t group)
{
    if (!cbc_grow(&u->cpath, u->n_cpath, &u->cap_cpath, sizeof *u->cpath, 16)) {
        u->oom = true;
        return;
    }
    u->cpath[u->n_cpath++] = (struct cstep){group, ++u->next_id};
}

/* ---- findings ------------------------------------------------------------ */

/* The text --fix inserts before the statement at token `stmt`: a line in
 * its indentation, or, where the statement does not start its line, the
 * statement followed by a space. Lines end in "\n"; the fix writes the
 * file's own line ending. */
static char *insertion(const struct unit *u, int file, size_t stmt, const char *directive,
                       size_t *at)
{
    const struct rfile *f = &u->files[file];
    size_t off = stmt < f->n ? f->t[stmt].off : f->src.len;
    size_t ls = lint_src_line_start(&f->src, off);
    bool first = true;
    for (size_t k = ls; k < off; k++)
        if (f->src.text[k] != ' ' && f->src.text[k] != '\t')
            first = false;
    if (first) {
        *at = ls;
        return cbc_asprintf("%.*sprintln!(\"%s\");\n", (int)(off - ls), f->src.text + ls,
                            directive);
    }
    *at = off;
    return cbc_asprintf("println!(\"%s\"); ", directive);
}

/* Turns the pending reads that stayed undeclared into findings. */
static void report_reads(struct unit *u)
{
    for (size_t i = 0; i < u->n_reads; i++) {
        struct pread *p = &u->reads[i];
        if (p->resolved && !p->escaped)
            continue;
        const char *name = p->name;
        const struct site *s = &p->site;
        char *directive = cbc_asprintf("cargo%srerun-if-env-changed=%s", u->cargo2 ? "::" : ":",
                                       name);
        size_t at = 0;
        char *ins = directive ? insertion(u, s->file, s->stmt_tok, directive, &at) : NULL;
        char *why = cbc_asprintf(
            "%s is read, and %s on some path on which the build script finishes: cargo will "
            "not rerun the script when %s changes and keeps its old output",
            name,
            p->escaped && p->resolved ? "the script may return before declaring it" : "not declared",
            name);
        char *fix = cbc_asprintf("println!(\"%s\"); before the read (cubincache lint --fix "
                                 "inserts it)",
                                 directive ? directive : "");
        if (!ins || !why || !fix ||
            !lint_add(u->r, CBC_LINT_ENV_UNDECLARED, &u->files[s->file].src, s->off, name, why,
                      fix, ins, at))
            u->oom = true;
        else
            u->env_findings++;
        free(directive);
        free(ins);
        free(why);
        free(fix);
    }
    for (size_t i = 0; i < u->n_reads; i++) {
        free(u->reads[i].name);
        free(u->reads[i].path);
    }
    u->n_reads = 0;
}

/* ---- directives in println!/print! --------------------------------------- */

/* The value of placeholder text `ph` ("" for {}, "0", "name", "name:?")
 * in a format call whose args (after the format) are `a`. */
static bool placeholder(struct unit *u, const struct frame *fr, const struct rfile *f,
                        const struct args *a, size_t first_arg, const char *ph, size_t phlen,
                        size_t *next_pos, struct val *v)
{
    size_t n = 0;
    while (n < phlen && ph[n] != ':')
        n++;
    if (n == 0 || (ph[0] >= '0' && ph[0] <= '9')) {
        size_t k = n == 0 ? (*next_pos)++ : (size_t)strtoul(ph, NULL, 10);
        if (first_arg + k >= a->n)
            return false;
        return resolve(u, fr, f, a->b[first_arg + k], a->e[first_arg + k], v);
    }
    for (size_t k = first_arg; k < a->n; k++) /* name = expr */
        if (a->e[k] > a->b[k] + 2 && rust_is(f, a->b[k] + 1, "=") && f->t[a->b[k]].len == n &&
            !memcmp(f->src.text + f->t[a->b[k]].off, ph, n))
            return resolve(u, fr, f, a->b[k] + 2, a->e[k], v);
    const struct val *x = lookup(u, fr, ph, n);
    if (!x || x->names.n == 0)
        return false;
    if (!set_copy(&v->names, &x->names))
        u->oom = true;
    return true;
}

static bool has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* The rerun-if directive the line at p starts with: where its value
 * starts (NULL when the line is no such directive), and whether it is
 * rerun-if-env-changed. */
static const char *directive_value_at(const char *p, bool *env)
{
    static const char *const forms[] = {"cargo:rerun-if-env-changed=",
                                        "cargo::rerun-if-env-changed=",
                                        "cargo:rerun-if-changed=", "cargo::rerun-if-changed="};
    for (size_t k = 0; k < 4; k++)
        if (!strncmp(p, forms[k], strlen(forms[k]))) {
            *env = k < 2;
            return p + strlen(forms[k]);
        }
    return NULL;
}

/* Appends the n bytes at s to each of the names. */
static void names_append(struct unit *u, struct lint_strset *names, const char *s, size_t n)
{
    for (size_t k = 0; k < names->n; k++) {
        char *w = cbc_asprintf("%s%.*s", names->v[k], (int)n, s);
        if (!w) {
            u->oom = true;
            break;
        }
        free(names->v[k]);
        names->v[k] = w;
    }
}

/* The names a directive's value [d, line_end) stands for: its literal
 * parts and placeholders, each placeholder standing for the names it
 * resolves to (at most 256 combinations). False when a placeholder does
 * not resolve. */
static bool directive_names(struct unit *u, const struct frame *fr, const struct rfile *f,
                            const struct args *a, const char *d, const char *line_end,
                            size_t *next_pos, struct val *v)
{
    lint_strset_add(&v->names, "");
    for (const char *q = d; q < line_end;) {
        if ((*q == '{' && q[1] == '{') || (*q == '}' && q[1] == '}')) {
            names_append(u, &v->names, q, 1);
            q += 2;
            continue;
        }
        if (*q != '{') {
            const char *r = q;
            while (r < line_end && *r != '{' && !(*r == '}' && r[1] == '}'))
                r++;
            names_append(u, &v->names, q, (size_t)(r - q));
            q = r;
            continue;
        }
        const char *ce = memchr(q, '}', (size_t)(line_end - q));
        struct val ph = {0};
        if (!ce || !placeholder(u, fr, f, a, 1, q + 1, (size_t)(ce - q - 1), next_pos, &ph) ||
            ph.names.n == 0 || v->names.n * ph.names.n > 256) {
            val_free(&ph);
            return false;
        }
        struct lint_strset out = {0};
        for (size_t k = 0; k < v->names.n; k++)
            for (size_t m2 = 0; m2 < ph.names.n; m2++) {
                char *w = cbc_asprintf("%s%s", v->names.v[k], ph.names.v[m2]);
                if (!w || !lint_strset_add(&out, w))
                    u->oom = true;
                free(w);
            }
        lint_strset_free(&v->names);
        v->names = out;
        val_free(&ph);
        q = ce + 1;
    }
    return true;
}

/* A path the script prints rerun-if-changed= for: watched from here on,
 * and printed on every finishing path when no condition, early return or
 * closure lies between it and main. */
static void declare_changed(struct unit *u, const struct frame *fr, const struct rfile *f,
                            const char *path)
{
    while (!strncmp(path, "./", 2))
        path += 2;
    if (has_glob(path))
        lint_note(u->r, "%s prints cargo:rerun-if-changed=%s: cargo takes the "
                        "path literally, finds no such file and reruns the "
                        "script at every build; name the directory instead",
                  f->src.path, path);
    u->steps += u->changed.n + u->printed.n; /* both are scanned */
    if (!lint_strset_add(&u->changed, path))
        u->oom = true;
    bool every = u->n_cpath == 0 && !u->root_exited && u->closure == 0;
    for (const struct frame *q = fr; every && q; q = q->parent)
        every = q->exit_h == SIZE_MAX && q->floor == 0;
    if (every && !lint_strset_add(&u->printed, path))
        u->oom = true;
}

/* A rerun-if-changed= value [d, line_end) the lint cannot resolve: what it
 * may be, each unknown part any text (`src/k/{name}.metal` covers
 * src/k/ **.metal, `{}` everything). */
static void changed_pattern(struct unit *u, const char *d, const char *line_end)
{
    struct cbc_buf g = {0};
    for (const char *q = d; q < line_end; q++) {
        if ((*q == '{' && q[1] == '{') || (*q == '}' && q[1] == '}')) {
            cbc_buf_append(&g, q, 1);
            q++;
        } else if (*q == '{') {
            const char *ce = memchr(q, '}', (size_t)(line_end - q));
            cbc_buf_puts(&g, "**");
            q = ce ? ce : line_end - 1;
        } else {
            cbc_buf_append(&g, q, 1);
        }
    }
    if (g.oom || !g.p || !lint_strset_add(&u->changed, g.p))
        u->changed_unknown = true;
    cbc_buf_release(&g);
}

/* Each directive in the format string of println!/print! whose '(' is at
 * `open`: env declarations are declared now; rerun-if-changed paths are
 * collected. */
static void directives(struct unit *u, struct frame *fr, const struct rfile *f, size_t open)
{
    const char *fmt = rust_str_of(f, open + 1);
    if (!fmt)
        return;
    struct args a;
    split_args(f, open, &a);
    size_t next_pos = 0;
    for (const char *p = fmt; *p;) {
        const char *line_end = strchr(p, '\n');
        if (!line_end)
            line_end = p + strlen(p);
        bool env = false;
        const char *d = directive_value_at(p, &env);
        /* positional {} before this directive on the line still count */
        for (const char *q = p; q < (d ? d : line_end); q++)
            if (*q == '{' && q[1] == '{')
                q++;
            else if (*q == '{' && q[1] == '}')
                next_pos++;
        if (d) {
            u->has_rerun = true;
            struct val v = {0};
            bool ok = directive_names(u, fr, f, &a, d, line_end, &next_pos, &v);
            if (!ok)
                lint_strset_free(&v.names);
            for (size_t k = 0; ok && k < v.names.n; k++) {
                if (env)
                    declare_name(u, fr, v.names.v[k]);
                else
                    declare_changed(u, fr, f, v.names.v[k]);
            }
            if (!ok && !env)
                changed_pattern(u, d, line_end);
            val_free(&v);
        }
        p = *line_end ? line_end + 1 : line_end;
    }
}

/* ---- the abstract run ---------------------------------------------------- */

enum scope { S_UNCOND, S_COND, S_MATCH };

static void run_block(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                      size_t parent_stmt, uint32_t group);
static void run_range(struct unit *u, struct frame *fr, size_t b, size_t e, enum scope kind,
                      size_t parent_stmt, uint32_t group, const char *bvar,
                      const struct val *bval);

static struct rfn *find_fn(struct unit *u, const char *name, size_t len)
{
    for (size_t i = 0; i < u->n_fns; i++)
        if (!u->fns[i].method && !u->fns[i].impl && strlen(u->fns[i].name) == len &&
            !memcmp(u->fns[i].name, name, len))
            return &u->fns[i];
    return NULL;
}

static bool is_module(const struct unit *u, const char *name, size_t len)
{
    for (size_t i = 0; i < u->n_spans; i++)
        if (u->spans[i].module && strlen(u->spans[i].name) == len &&
            !memcmp(u->spans[i].name, name, len))
            return true;
    for (size_t i = 0; i < u->n_fns; i++) /* `mod x;` files: their functions' file stems */
        (void)0;
    return (len == 5 && !memcmp(name, "crate", 5)) || (len == 5 && !memcmp(name, "super", 5)) ||
           (len == 4 && !memcmp(name, "self", 4));
}

/* The function a call at token i (its name, '(' after it) runs: a free
 * function for `name(` and `module::name(`, an associated one of T for
 * `T::name(` and `Self::name(`; NULL for anything else (`Vec::new(`). */
static struct rfn *call_target(struct unit *u, const struct frame *fr, const struct rfile *f,
                               size_t i)
{
    const char *name = f->src.text + f->t[i].off;
    size_t len = f->t[i].len;
    if (i == 0 || !rust_is(f, i - 1, "::"))
        return find_fn(u, name, len);
    if (i < 2 || !rust_is_ident(f, i - 2))
        return NULL;
    const char *q = f->src.text + f->t[i - 2].off;
    size_t ql = f->t[i - 2].len;
    bool self = ql == 4 && !memcmp(q, "Self", 4);
    if (!self && (is_module(u, q, ql) || rust_is(f, i - 2, "self")))
        return find_fn(u, name, len);
    for (size_t k = 0; k < u->n_fns; k++) {
        const struct rfn *fn = &u->fns[k];
        if (fn->method || !fn->impl || strlen(fn->name) != len || memcmp(fn->name, name, len))
            continue;
        if (self ? (fr->impl && !strcmp(fr->impl, fn->impl))
                 : (strlen(fn->impl) == ql && !memcmp(fn->impl, q, ql)))
            return &u->fns[k];
    }
    return NULL;
}

static void run_fn(struct unit *u, struct rfn *fn, struct frame *caller, struct val *args,
                   size_t n_args, bool propagates)
{
    fn->reached = true;
    size_t depth = caller ? caller->depth + 1 : 0;
    if (depth > MAX_DEPTH)
        return;
    struct frame fr = {.file = fn->file, .exit_h = SIZE_MAX, .depth = depth,
                       .root = caller == NULL, .propagates = propagates, .parent = caller,
                       .impl = fn->impl};
    for (size_t i = 0; i < fn->n_params && i < n_args; i++) {
        struct val v;
        if (!val_copy(&v, &args[i]) || !bind(&fr.b, &fr.nb, &fr.cap, cbc_strdup(fn->params[i]), &v))
            u->oom = true;
    }
    size_t h = u->n_decl;
    int closure = u->closure;
    u->closure = 0;
    run_block(u, &fr, fn->body, S_UNCOND, fn->body + 1, 0);
    u->closure = closure;
    if (fr.exit_h != SIZE_MAX && fr.exit_h >= h)
        truncate_to(u, &fr, fr.exit_h);
    for (size_t i = 0; i < fr.nb; i++) {
        free(fr.b[i].name);
        val_free(&fr.b[i].v);
    }
    free(fr.b);
}

/* The '>' matching the '<' at token i, or end when it is not before it. */
static size_t angle_close(const struct rfile *f, size_t i, size_t end)
{
    for (int d = 0; i < end; i++) {
        if (rust_is(f, i, "<"))
            d++;
        else if (rust_is(f, i, ">") && --d == 0)
            break;
    }
    return i;
}

/* The '{' or ';' ending the head of an item from token i (( and [
 * skipped), or end when there is none before it. */
static size_t item_head_end(const struct rfile *f, size_t i, size_t end)
{
    while (i < end && !rust_is(f, i, "{") && !rust_is(f, i, ";")) {
        if (rust_is(f, i, "(") || rust_is(f, i, "["))
            i = rust_close_of(f, i);
        i++;
    }
    return i;
}

/* `fn` at i: the index past the item (its body's '}' + 1, or past ';'). */
static size_t skip_item(const struct rfile *f, size_t i, size_t end)
{
    i = item_head_end(f, i, end);
    if (i < end && rust_is(f, i, "{"))
        i = rust_close_of(f, i);
    return i + 1;
}

/* The ';' ending the statement or expression from token i (brackets
 * skipped), or end when there is none before it. */
static size_t stmt_end(const struct rfile *f, size_t i, size_t end)
{
    while (i < end && !rust_is(f, i, ";")) {
        if (rust_is(f, i, "(") || rust_is(f, i, "[") || rust_is(f, i, "{"))
            i = rust_close_of(f, i);
        i++;
    }
    return i;
}

/* The '{' opening the block of an if or for whose head goes on from token
 * i (( and [ skipped), or end when there is none before it. */
static size_t body_open(const struct rfile *f, size_t i, size_t end)
{
    while (i < end && !rust_is(f, i, "{")) {
        if (rust_is(f, i, "(") || rust_is(f, i, "["))
            i = rust_close_of(f, i);
        i++;
    }
    return i;
}

enum exit_kind { EX_NONE, EX_RETURN, EX_ERROR, EX_FAIL, EX_SCRIPT };

/* What token i does to the run: returns from the function (EX_RETURN),
 * returns an error (EX_ERROR: `?`, `return Err`), fails the script
 * (panic!, exit(N != 0)) or finishes it (exit(0)). */
static enum exit_kind exit_at(const struct rfile *f, size_t i)
{
    if (rust_is(f, i, "return"))
        return rust_is(f, i + 1, "Err") ? EX_ERROR : EX_RETURN;
    if (rust_is(f, i, "?"))
        return EX_ERROR;
    if ((rust_is(f, i, "panic") || rust_is(f, i, "unreachable") || rust_is(f, i, "todo") ||
         rust_is(f, i, "unimplemented")) && rust_is(f, i + 1, "!"))
        return EX_FAIL;
    if (rust_is(f, i, "exit") && rust_is(f, i + 1, "(") && i > 0 && rust_is(f, i - 1, "::"))
        return rust_is(f, i + 2, "0") && rust_is(f, i + 3, ")") ? EX_SCRIPT : EX_FAIL;
    return EX_NONE;
}

static void run_exit(struct unit *u, struct frame *fr, enum exit_kind k)
{
    if (k == EX_NONE || k == EX_FAIL || (u->closure && k != EX_SCRIPT))
        return;
    if (k == EX_SCRIPT || (fr->root && k == EX_RETURN)) {
        script_exit(u);
        u->root_exited = true;
        return;
    }
    if (fr->root || (k == EX_ERROR && fr->propagates))
        return; /* the script fails on that path */
    if (fr->exit_h == SIZE_MAX)
        fr->exit_h = u->n_decl;
    fr->floor = u->seq + 1;
}

static bool is_env_read_name(const struct rfile *f, size_t i, bool *all)
{
    *all = rust_is(f, i, "vars") || rust_is(f, i, "vars_os");
    return *all || rust_is(f, i, "var") || rust_is(f, i, "var_os");
}

/* Whether token i starts a read of the environment: env::var( or a bare
 * var( imported from std::env. Sets *arg_open to the '(' of its call. */
static bool env_read(struct unit *u, const struct rfile *f, size_t i, size_t *arg_open, bool *all)
{
    if (i > 0 && (rust_is(f, i - 1, ".") || rust_is(f, i - 1, "fn")))
        return false;
    if (rust_is(f, i, "env") && rust_is(f, i + 1, "::") && is_env_read_name(f, i + 2, all) &&
        rust_is(f, i + 3, "(")) {
        *arg_open = i + 3;
        return !(i >= 2 && rust_is(f, i - 1, "::") && !rust_is(f, i - 2, "std") && !rust_is(f, i - 2, "core"));
    }
    if (i > 0 && rust_is(f, i - 1, "::"))
        return false;
    if (!is_env_read_name(f, i, all) || !rust_is(f, i + 1, "("))
        return false;
    if (find_fn(u, f->src.text + f->t[i].off, f->t[i].len))
        return false;
    bool imported = rust_is(f, i, "var") ? u->imp_var : rust_is(f, i, "var_os") ? u->imp_var_os
                    : rust_is(f, i, "vars") ? u->imp_vars : u->imp_vars_os;
    *arg_open = i + 1;
    return imported;
}

/* A path naming an env read function without calling it (the argument of
 * .map(std::env::var)): [b, e). */
static bool env_fn_path(const struct unit *u, const struct rfile *f, size_t b, size_t e)
{
    if (b < e && rust_is(f, b, "::"))
        b++;
    bool all;
    if (e == b + 1)
        return !rust_is(f, b, "vars") && is_env_read_name(f, b, &all) &&
               (rust_is(f, b, "var") ? u->imp_var : u->imp_var_os);
    if (e == b + 3 && rust_is(f, b, "env") && rust_is(f, b + 1, "::"))
        return is_env_read_name(f, b + 2, &all) && !all;
    if (e == b + 5 && (rust_is(f, b, "std") || rust_is(f, b, "core")) && rust_is(f, b + 1, "::") &&
        rust_is(f, b + 2, "env") && rust_is(f, b + 3, "::"))
        return is_env_read_name(f, b + 4, &all) && !all;
    return false;
}

static void read_env(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                     size_t open, bool all, size_t stmt)
{
    if (all) {
        char *why = cbc_strdup("the build script reads the whole environment (env::vars): "
                               "cargo cannot know which variables change its output");
        char *fix = cbc_strdup("read the variables it needs by name, each with its "
                               "cargo:rerun-if-env-changed= line");
        if (!why || !fix ||
            !lint_add(u->r, CBC_LINT_ENV_ENUMERATED, &f->src, f->t[i].off, NULL, why, fix,
                      NULL, 0))
            u->oom = true;
        free(why);
        free(fix);
        return;
    }
    struct args a;
    split_args(f, open, &a);
    if (a.n == 0)
        return;
    struct val v;
    if (resolve(u, fr, f, a.b[0], a.e[0], &v)) {
        size_t at = a.b[0];
        while (at < a.e[0] && (rust_is(f, at, "&") || rust_is(f, at, "*")))
            at++;
        struct site s = v.has_origin ? v.origin : (struct site){fr->file, f->t[at].off, stmt};
        for (size_t k = 0; k < v.names.n; k++)
            record_read(u, v.names.v[k], &s);
    }
    val_free(&v);
}

/* Whether the call whose ')' is at `close` fails the script on an error:
 * `?` (when its own caller does) or .unwrap() / .expect(..). */
static bool call_propagates(const struct rfile *f, const struct frame *fr, size_t close)
{
    if (rust_is(f, close + 1, "?"))
        return fr->root || fr->propagates;
    return rust_is(f, close + 1, ".") &&
           (rust_is(f, close + 2, "unwrap") || rust_is(f, close + 2, "expect"));
}

/* A call of a function of the script at i (its name), with '(' at open. */
static void call_fn(struct unit *u, struct frame *fr, const struct rfile *f, struct rfn *fn,
                    size_t open, size_t stmt)
{
    struct args a;
    split_args(f, open, &a);
    struct val vals[MAX_PARAMS];
    size_t n = a.n < MAX_PARAMS ? a.n : MAX_PARAMS;
    for (size_t k = 0; k < n; k++) {
        if (resolve(u, fr, f, a.b[k], a.e[k], &vals[k]) && !vals[k].has_origin) {
            size_t at = a.b[k];
            while (at < a.e[k] && (rust_is(f, at, "&") || rust_is(f, at, "*")))
                at++;
            vals[k].has_origin = true;
            vals[k].origin = (struct site){fr->file, f->t[at].off, stmt};
        }
    }
    run_fn(u, fn, fr, vals, n, call_propagates(f, fr, rust_close_of(f, open)));
    for (size_t k = 0; k < n; k++)
        val_free(&vals[k]);
}

/* nvcc run by hand, Rust-CUDA's builder, and cubincache with --emit */
static void tool_site(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                      size_t stmt)
{
    bool hit = false;
    if (rust_is(f, i, "Command") && rust_is(f, i + 1, "::") && rust_is(f, i + 2, "new") && rust_is(f, i + 3, "(")) {
        struct args a;
        split_args(f, i + 3, &a);
        struct val v;
        bool known = a.n > 0 && resolve(u, fr, f, a.b[0], a.e[0], &v);
        for (size_t k = 0; known && k < v.names.n; k++) {
            const char *base = strrchr(v.names.v[k], '/');
            base = base ? base + 1 : v.names.v[k];
            if (!strcmp(base, "nvcc") || !strcmp(base, "nvcc.exe"))
                hit = true;
            if (!strcmp(base, "cubincache"))
                u->cubincache_emits |= true;
        }
        if (known)
            val_free(&v);
        for (size_t k = a.n ? a.b[0] : 0; !known && a.n && k < a.e[0]; k++)
            if (rust_is_ident(f, k)) {
                char *id = rust_ident_dup(f, k);
                if (id && strstr(id, "nvcc"))
                    hit = true;
                if (id && strstr(id, "cubincache"))
                    u->cubincache_emits = true;
                free(id);
            }
    } else if (rust_is(f, i, "cuda_builder") || rust_is(f, i, "CudaBuilder")) {
        hit = true;
    }
    if (hit && rust_is(f, i, "Command")) {
        /* nvcc asked what it is (--version, --list-gpu-code) compiles nothing */
        size_t c = rust_close_of(f, i + 3);
        for (size_t k = c + 1; k + 3 < f->n && rust_is(f, k, ".") && rust_is_ident(f, k + 1) &&
                               rust_is(f, k + 2, "(");
             k = rust_close_of(f, k + 2) + 1) {
            const char *a = rust_str_of(f, k + 3);
            if (a && (!strcmp(a, "--version") || !strcmp(a, "-V") || !strncmp(a, "--list-gpu", 10)))
                hit = false;
        }
    }
    if (hit && !u->nvcc) {
        u->nvcc = true;
        u->nvcc_site = (struct site){fr->file, f->t[i].off, stmt};
    }
}

/* ---- build helpers and iterator chains ---------------------------------- */

/* The full path a path expression [b, e) (a::b::c, without ::<T>) stands
 * for through the script's imports; malloc'd, NULL when it is no path. */
static char *full_path(const struct unit *u, const struct rfile *f, size_t b, size_t e,
                       const char *glob_crate)
{
    struct cbc_buf s = {0};
    cbc_buf_append(&s, "", 0);
    for (size_t k = b; k < e; k++) {
        if (rust_is(f, k, "::")) {
            if (rust_is(f, k + 1, "<")) /* turbofish: the path ends */
                break;
            cbc_buf_puts(&s, "::");
            continue;
        }
        if (!rust_is_ident(f, k)) {
            cbc_buf_release(&s);
            return NULL;
        }
        if (k == b) {
            const char *rep = NULL;
            for (size_t m = 0; m < u->n_imports; m++)
                if (f->t[k].len == strlen(u->imports[m].name) &&
                    !memcmp(f->src.text + f->t[k].off, u->imports[m].name, f->t[k].len))
                    rep = u->imports[m].path;
            if (!rep && glob_crate) {
                cbc_buf_puts(&s, glob_crate);
                cbc_buf_puts(&s, "::");
            }
            if (rep) {
                cbc_buf_puts(&s, rep);
                continue;
            }
        }
        cbc_buf_append(&s, f->src.text + f->t[k].off, f->t[k].len);
    }
    if (s.oom) {
        cbc_buf_release(&s);
        return NULL;
    }
    return cbc_buf_detach(&s);
}

/* The model of the call whose path is [b, e), trying glob imports too. */
static const struct helper_fx *call_model(const struct unit *u, const struct rfile *f, size_t b,
                                          size_t e)
{
    if (!u->h)
        return NULL;
    char *p = full_path(u, f, b, e, NULL);
    const struct helper_fx *fx = p ? lint_helpers_call(u->h, p) : NULL;
    free(p);
    for (size_t m = 0; !fx && m < u->n_imports; m++) {
        if (strcmp(u->imports[m].name, "*") != 0)
            continue;
        p = full_path(u, f, b, e, u->imports[m].path);
        fx = p ? lint_helpers_call(u->h, p) : NULL;
        free(p);
    }
    return fx;
}

/* Whether directory `dir` of the package holds a CMakeLists.txt that
 * enables CUDA (project(... CUDA) or enable_language(CUDA)). */
static bool cuda_project(const struct unit *u, const char *dir)
{
    char *sdir = cbc_path_dir(u->files[0].src.path);
    char *cm = sdir && dir && dir[0] != '/' ? cbc_asprintf("%s/%s/CMakeLists.txt", sdir, dir) : NULL;
    free(sdir);
    if (!cm)
        return false;
    uint8_t *data = NULL;
    size_t len = 0;
    struct cbc_err e = {0};
    bool yes = false;
    if (cbc_file_read_max(cm, 1u << 20, &data, &len, &e) == CBC_OK) {
        const char *t = (const char *)data;
        for (const char *p = t; (p = strstr(p, "CUDA")) != NULL; p += 4) {
            const char *ls = p;
            while (ls > t && ls[-1] != '\n')
                ls--;
            const char *q = strstr(ls, "project(");
            const char *q2 = strstr(ls, "enable_language(");
            if ((q && q < p) || (q2 && q2 < p))
                yes = true;
        }
    }
    free(data);
    free(cm);
    return yes;
}

static void set_list(struct unit *u, struct lint_strset *dst, bool *is_default, enum fx_list how,
                     const struct val *arg, bool known, bool *unknown)
{
    if (how == FX_NONE)
        return;
    if (how == FX_SET || *is_default)
        lint_strset_free(dst);
    *is_default = false;
    if (!known) {
        if (unknown)
            *unknown = true;
        return;
    }
    if (!set_copy(dst, &arg->names))
        u->oom = true;
}

static bool val_flag(const struct val *v, const char *flag)
{
    return flag && lint_strset_has(&v->flags, flag);
}

/* Applies model `fx` of the call at token `name_tok` ('(' at `open`) to
 * value `v`. */
static void apply_fx(struct unit *u, struct frame *fr, const struct rfile *f,
                     const struct helper_fx *fx, struct val *v, size_t name_tok, size_t open,
                     size_t stmt)
{
    struct args a;
    split_args(f, open, &a);
    struct val arg = {0};
    bool known = a.n > 0 && resolve(u, fr, f, a.b[0], a.e[0], &arg);
    struct site s = {fr->file, f->t[name_tok].off, stmt};
    if (fx->type) {
        val_free(v);
        memset(v, 0, sizeof *v);
        v->type = fx->type;
        if (!set_copy(&v->srcs, &fx->default_sources) ||
            !set_copy(&v->incs, &fx->default_includes))
            u->oom = true;
        v->srcs_default = fx->default_sources.n > 0;
        v->incs_default = fx->default_includes.n > 0;
    }
    set_list(u, &v->srcs, &v->srcs_default, fx->sources, &arg, known, &v->srcs_unknown);
    set_list(u, &v->incs, &v->incs_default, fx->includes, &arg, known, NULL);
    bool no = false;
    set_list(u, &v->watch, &no, fx->watch, &arg, known, NULL);
    bool cuda = true;
    if (fx->cuda_project) {
        cuda = false;
        for (size_t k = 0; k < v->srcs.n && !cuda; k++)
            cuda = cuda_project(u, v->srcs.v[k]);
    }
    if (fx->sets && !lint_strset_add(&v->flags, fx->sets))
        u->oom = true;
    if (fx->sets_if_true && a.n > 0 && rust_is(f, a.b[0], "true") && a.e[0] == a.b[0] + 1 &&
        !lint_strset_add(&v->flags, fx->sets_if_true))
        u->oom = true;
    for (size_t k = 0; k < fx->declares.n; k++)
        declare_name(u, fr, fx->declares.v[k]);
    if (fx->declares.n || fx->prints_rerun)
        u->has_rerun = true;
    if (cuda && !val_flag(v, fx->unless))
        for (size_t k = 0; k < fx->reads.n; k++)
            record_read(u, fx->reads.v[k], &s);
    if (fx->declares_sources || fx->declares_watch) {
        const struct lint_strset *sets[] = {&v->watch, &v->srcs, &v->incs};
        char *sdir = cbc_path_dir(u->files[0].src.path);
        for (size_t m = 0; m < (fx->declares_sources ? 3u : 1u); m++)
            for (size_t k = 0; k < sets[m]->n; k++) {
                u->has_rerun = true;
                /* a kernel directory: the helper declares the kernels it finds
                 * in it, not the directory (nor the headers beside them) */
                const char *e = sets[m]->v[k];
                char *full = m == 1 && sdir && !has_glob(e) && e[0] != '/' ? cbc_path_join(sdir, e) : NULL;
                char *as = full && cbc_is_dir(full) ? cbc_asprintf("%s/**/*.cu", e) : NULL;
                if (!lint_strset_add(&u->changed, as ? as : e))
                    u->oom = true;
                free(full);
                free(as);
            }
        free(sdir);
        if (fx->declares_sources)
            u->has_rerun = true;
    }
    bool nvcc = cuda && (fx->nvcc || (fx->nvcc_if && val_flag(v, fx->nvcc_if)));
    if (fx->nvcc_if && !val_flag(v, fx->nvcc_if))
        nvcc = false;
    if (nvcc) {
        u->modelled_nvcc = true;
        for (size_t k = 0; k < fx->nvcc_declares.n; k++)
            declare_name(u, fr, fx->nvcc_declares.v[k]);
        if (cbc_grow(&u->nvruns, u->n_nvruns, &u->cap_nvruns, sizeof *u->nvruns, 4)) {
            struct nvrun *nr = &u->nvruns[u->n_nvruns++];
            memset(nr, 0, sizeof *nr);
            nr->site = s;
            nr->unknown = v->srcs_unknown;
            nr->declares = fx->declares_sources;
            nr->call = fx->call;
            if (!set_copy(&nr->srcs, &v->srcs))
                u->oom = true;
        } else {
            u->oom = true;
        }
    }
    if (fx->ends) {
        val_free(v);
        memset(v, 0, sizeof *v);
    }
    val_free(&arg);
}

static bool is_kw(const struct rfile *f, size_t i)
{
    static const char *const kw[] = {"let", "if", "else", "while", "for", "loop", "match",
                                     "return", "fn", "mut", "in", "as", "move", "unsafe",
                                     "async", "await", "const", "static", "use", "mod",
                                     "struct", "enum", "impl", "trait", "type", "where",
                                     "break", "continue", "true", "false", "ref", "pub",
                                     "crate", "super", "self", "Self", "dyn"};
    for (size_t k = 0; k < CBC_ARRAY_LEN(kw); k++)
        if (rust_is(f, i, kw[k]))
            return true;
    return false;
}

/* A closure argument `|p| body` or `move |p: T| { ... }` over [b, e): its
 * parameter's name token (or SIZE_MAX) and its body's range. */
static bool closure_of(const struct rfile *f, size_t b, size_t e, size_t *param, size_t *bb,
                       size_t *be)
{
    if (rust_is(f, b, "move"))
        b++;
    if (!rust_is(f, b, "|"))
        return false;
    size_t k = b + 1;
    while (k < e && (rust_is(f, k, "&") || rust_is(f, k, "mut")))
        k++;
    *param = rust_is_ident(f, k) ? k : SIZE_MAX;
    size_t c = b + 1;
    while (c < e && !rust_is(f, c, "|")) {
        if (rust_is(f, c, "(") || rust_is(f, c, "["))
            c = rust_close_of(f, c);
        c++;
    }
    if (c >= e)
        return false;
    *bb = c + 1;
    *be = e;
    if (rust_is(f, *bb, "->")) { /* |x| -> T { ... } */
        while (*bb < e && !rust_is(f, *bb, "{"))
            (*bb)++;
    }
    if (*bb < e && rust_is(f, *bb, "{") && rust_close_of(f, *bb) == e - 1) {
        (*bb)++;
        *be = e - 1;
    }
    return *bb <= *be;
}

/* The adaptor `m` (token) over names `v` with its first argument [b, e):
 * `.map(env::var)` reads each name; a closure runs with its parameter bound
 * to the names (unconditionally for for_each over a known list). */
static void iter_adaptor(struct unit *u, struct frame *fr, const struct rfile *f, size_t m,
                         size_t b, size_t e, size_t stmt, const struct val *v)
{
    static const char *const adaptors[] = {"map",  "filter_map", "flat_map", "find_map",
                                           "for_each", "try_for_each", "any", "all",
                                           "find", "inspect", "filter", "position",
                                           "and_then", "fold"};
    bool known = false;
    for (size_t k = 0; k < CBC_ARRAY_LEN(adaptors); k++)
        known |= rust_is(f, m, adaptors[k]);
    if (!known || b >= e)
        return;
    if (rust_is(f, m, "fold")) /* fold(init, |acc, x| ...): the closure is second */
        return;
    if (env_fn_path(u, f, b, e)) {
        struct site s = {fr->file, f->t[b].off, stmt};
        for (size_t k = 0; k < v->names.n; k++)
            record_read(u, v->names.v[k], &s);
        return;
    }
    size_t param, bb, be;
    if (!closure_of(f, b, e, &param, &bb, &be))
        return;
    bool each = rust_is(f, m, "for_each") || rust_is(f, m, "try_for_each");
    char *pname = param != SIZE_MAX ? rust_ident_dup(f, param) : NULL;
    struct val pv = {0};
    if (!set_copy(&pv.names, &v->names))
        u->oom = true;
    u->closure++;
    run_range(u, fr, bb, be, each && v->names.n ? S_UNCOND : S_COND, stmt, ++u->next_group,
              pname, pname ? &pv : NULL);
    u->closure--;
    free(pname);
    val_free(&pv);
}

/* The head of a method chain at token i: an array literal or vec![...]
 * (its names), a call of a modelled helper (its value) or a variable
 * (a copy of its value). *k gets the token after the head and *tracked
 * whether the value is known; false when i starts no chain the run
 * follows. */
static bool chain_head(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                       size_t end, size_t stmt, struct val *v, size_t *k, bool *tracked)
{
    if (rust_is(f, i, "[") || (rust_is(f, i, "vec") && rust_is(f, i + 1, "!") && rust_is(f, i + 2, "["))) {
        size_t open = rust_is(f, i, "[") ? i : i + 2;
        size_t c = rust_close_of(f, open);
        if (c >= end || !rust_is(f, c + 1, "."))
            return false;
        *tracked = resolve(u, fr, f, i, c + 1, v);
        *k = c + 1;
        return true;
    }
    if (!rust_is_ident(f, i))
        return false;
    size_t p = i;
    while (rust_is_ident(f, p) && rust_is(f, p + 1, "::") && rust_is_ident(f, p + 2))
        p += 2;
    size_t call_end = p + 1; /* after the last segment */
    if (rust_is(f, call_end, "::") && rust_is(f, call_end + 1, "<"))
        call_end = angle_close(f, call_end + 1, end) + 1;
    if (rust_is(f, call_end, "(")) {
        const struct helper_fx *fx = call_model(u, f, i, p + 1);
        if (!fx)
            return false;
        apply_fx(u, fr, f, fx, v, i, call_end, stmt);
        *tracked = true;
        *k = rust_close_of(f, call_end) + 1;
        return true;
    }
    if (p != i || !rust_is(f, i + 1, "."))
        return false;
    const struct val *x = lookup(u, fr, f->src.text + f->t[i].off, f->t[i].len);
    if (!x || (!x->type && x->names.n == 0))
        return false;
    if (!val_copy(v, x))
        u->oom = true;
    *tracked = true;
    *k = i + 1;
    return true;
}

/* `.m(args)` in a chain whose head is token i, m the method's token and
 * open its '(': a modelled method applied to a builder's value;
 * `names.push("x")` (extend, insert) adds to the variable's names; an
 * adaptor (map, for_each, ...) runs on the names, which the chain no
 * longer stands for, unless it passes them through (iter, chain, rev...). */
static void chain_method(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                         size_t k, size_t m, size_t open, size_t stmt, struct val *v)
{
    if (v->type) {
        const struct helper_fx *fx =
            lint_helpers_method(u->h, v->type, f->src.text + f->t[m].off, f->t[m].len);
        if (fx)
            apply_fx(u, fr, f, fx, v, m, open, stmt);
    } else if (v->names.n > 0 && k == i + 1 && rust_is_ident(f, i) &&
               (rust_is(f, m, "push") || rust_is(f, m, "extend") || rust_is(f, m, "insert"))) {
        /* names.push("x"): the binding may hold it from here on */
        struct args a;
        split_args(f, open, &a);
        struct val more;
        size_t ai = rust_is(f, m, "insert") ? 1 : 0;
        struct val *x = lookup_mut(fr, f->src.text + f->t[i].off, f->t[i].len);
        if (a.n > ai && x && resolve(u, fr, f, a.b[ai], a.e[ai], &more)) {
            if (!set_copy(&x->names, &more.names))
                u->oom = true;
            val_free(&more);
        }
        lint_strset_free(&v->names);
    } else if (v->names.n > 0) {
        static const char *const pass[] = {"iter", "into_iter", "copied", "cloned",
                                           "chain", "rev", "take", "skip"};
        bool through = false;
        for (size_t q = 0; q < CBC_ARRAY_LEN(pass); q++)
            through |= rust_is(f, m, pass[q]);
        if (!through) {
            struct args a;
            split_args(f, open, &a);
            if (a.n > 0)
                iter_adaptor(u, fr, f, m, a.b[0], a.e[0], stmt, v);
            lint_strset_free(&v->names);
        }
    }
}

/* `let [mut] x [: T] = <chain>;` or `x = <chain>;`, the chain's head at
 * token i and the token before its value at i - 2: x holds the builder. */
static void bind_chain(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                       size_t stmt, const struct val *v)
{
    size_t q = i - 2;
    if (!rust_is(f, q, ">") && !rust_is_ident(f, q) && !rust_is(f, q, ")"))
        return;
    size_t s = q;
    while (s > stmt && !rust_is(f, s, "let"))
        s--;
    if (rust_is(f, s, "let")) {
        size_t nm = rust_is(f, s + 1, "mut") ? s + 2 : s + 1;
        if (rust_is_ident(f, nm)) {
            struct val b2;
            if (!val_copy(&b2, v) || !bind(&fr->b, &fr->nb, &fr->cap, rust_ident_dup(f, nm), &b2))
                u->oom = true;
        }
    } else if (q == stmt && rust_is_ident(f, q)) {
        struct val *x = lookup_mut(fr, f->src.text + f->t[q].off, f->t[q].len);
        if (x) {
            struct val b2;
            if (!val_copy(&b2, v))
                u->oom = true;
            val_free(x);
            *x = b2;
        }
    }
}

/* Evaluates the chain that starts at token i: a base (a call of a modelled
 * helper, a binding, a const, an array literal) and then .method(args), ?,
 * .await. Applies the helpers' effects and the iterator adaptors; binds the
 * result when the chain is the whole right side of `let x =` or `x =`.
 * Only called where i starts an expression. */
static void eval_chain(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                       size_t end, size_t stmt)
{
    struct val v = {0};
    size_t k = i;
    bool tracked = false;
    if (!chain_head(u, fr, f, i, end, stmt, &v, &k, &tracked))
        return;
    /* .method(args) ... */
    while (k < end && !u->oom) {
        if (rust_is(f, k, "?")) {
            k++;
            continue;
        }
        if (!rust_is(f, k, ".") || !rust_is_ident(f, k + 1))
            break;
        size_t m = k + 1, open = m + 1;
        if (rust_is(f, open, "::") && rust_is(f, open + 1, "<"))
            open = angle_close(f, open + 1, end) + 1;
        if (!rust_is(f, open, "(")) { /* .await, a field */
            k = open;
            if (!rust_is(f, m, "await"))
                tracked = false;
            continue;
        }
        size_t close = rust_close_of(f, open);
        if (close >= end)
            break;
        chain_method(u, fr, f, i, k, m, open, stmt, &v);
        k = close + 1;
    }
    if (tracked && v.type && rust_is(f, k, ";") && i >= 2 && rust_is(f, i - 1, "="))
        bind_chain(u, fr, f, i, stmt, &v);
    val_free(&v);
}

/* Whether token i can start an expression whose chain eval_chain follows. */
static bool chain_start(const struct unit *u, const struct rfile *f, size_t i)
{
    if (i > 0 && (rust_is(f, i - 1, ".") || rust_is(f, i - 1, "::") || rust_is(f, i - 1, "fn")))
        return false;
    if (rust_is(f, i, "[") || (rust_is(f, i, "vec") && rust_is(f, i + 1, "!")))
        return true;
    if (!rust_is_ident(f, i) || is_kw(f, i))
        return false;
    (void)u;
    return rust_is(f, i + 1, "::") || rust_is(f, i + 1, ".") || rust_is(f, i + 1, "(");
}

/* ---- blocks -------------------------------------------------------------- */

static void run_block(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                      size_t parent_stmt, uint32_t group)
{
    const struct rfile *f = &u->files[fr->file];
    size_t close = rust_close_of(f, open);
    if (close > f->n)
        close = f->n;
    run_range(u, fr, open + 1, close, kind, parent_stmt, group, NULL, NULL);
}

static void run_range_at(struct unit *u, struct frame *fr, size_t b, size_t close,
                         enum scope kind, size_t parent_stmt, const char *bvar,
                         const struct val *bval);

/* The tokens [b, e) as a block of `kind` (a conditional one in `group`),
 * with `bvar` bound to `bval` (a loop's or closure's variable). */
static void run_range(struct unit *u, struct frame *fr, size_t b, size_t e, enum scope kind,
                      size_t parent_stmt, uint32_t group, const char *bvar,
                      const struct val *bval)
{
    if (u->depth >= MAX_NEST) { /* a hostile file's {{{{...}}}}: the stack stays bounded */
        u->budget = true;
        return;
    }
    u->depth++;
    size_t nc = u->n_cpath;
    if (kind != S_UNCOND)
        cpath_push(u, group ? group : ++u->next_group);
    run_range_at(u, fr, b, e, kind, parent_stmt, bvar, bval);
    u->n_cpath = nc;
    u->depth--;
}

/* Whether the `if` at token i guards a block that only prints warnings
 * (println!("cargo:warning=..."), eprintln!) and has no else: then
 * [*b, *e) gets the byte range of its condition. */
static bool warning_only_if(const struct rfile *f, size_t i, size_t close, size_t *b, size_t *e)
{
    size_t k = body_open(f, i + 1, close);
    if (k >= close)
        return false;
    size_t c = rust_close_of(f, k);
    if (c >= close || rust_is(f, c + 1, "else") || c == k + 1)
        return false;
    for (size_t j = k + 1; j < c;) {
        bool out = rust_is(f, j, "println") || rust_is(f, j, "print");
        bool err = rust_is(f, j, "eprintln") || rust_is(f, j, "eprint");
        if (!(out || err) || !rust_is(f, j + 1, "!") || !rust_is(f, j + 2, "("))
            return false;
        if (out) {
            const char *fmt = rust_str_of(f, j + 3);
            if (!fmt || (strncmp(fmt, "cargo:warning=", 14) && strncmp(fmt, "cargo::warning=", 15)))
                return false;
        }
        j = rust_close_of(f, j + 2) + 1;
        if (rust_is(f, j, ";"))
            j++;
    }
    *b = f->t[i].off;
    *e = f->t[k].off;
    return true;
}

/* What a keyword at depth 0 says of the next '{' there: an if/else
 * branch, a loop's body, a match's arms, a for loop's body, a block that
 * always runs (unsafe, async). */
enum pend { P_NONE, P_IF, P_COND, P_MATCH, P_FOR, P_UNCOND };

/* run_range_at's state between the tokens of its block. */
struct block_run {
    size_t b, close; /* the block's tokens */
    enum scope kind;
    size_t stmt; /* the first token of the statement being run */
    enum pend pending;
    char *loop_var; /* a for loop's variable, what it runs over, whether known */
    struct val loop_val;
    bool loop_known;
    uint32_t chain_group; /* the group of the if/else chain being run */
    int depth;            /* ( and [ open */
};

/* Whether token i, after an attribute, starts an item or a binding (the
 * attribute stays with it) rather than a statement it may leave out. */
static bool attr_keeps(const struct rfile *f, size_t i)
{
    return rust_is(f, i, "#") || rust_is(f, i, "fn") || rust_is(f, i, "use") ||
           rust_is(f, i, "mod") || rust_is(f, i, "struct") || rust_is(f, i, "enum") ||
           rust_is(f, i, "impl") || rust_is(f, i, "const") || rust_is(f, i, "static") ||
           rust_is(f, i, "let") || rust_is(f, i, "pub");
}

/* The statement after a #[cfg(...)] closing at token a: it may not be
 * compiled, so what it declares counts only on the path that has it (what
 * it reads is read on that path too). Runs it; returns its last token. */
static size_t run_cfg_stmt(struct unit *u, struct frame *fr, const struct rfile *f, size_t a,
                           size_t close, size_t anchor)
{
    size_t j = a + 1;
    if (rust_is(f, j, "{")) {
        j = rust_close_of(f, j);
        if (j < close && rust_is(f, j + 1, ";"))
            j++;
    } else {
        j = stmt_end(f, j, close);
    }
    if (j >= close)
        j = close - 1;
    bool block = rust_is(f, a + 1, "{");
    run_range(u, fr, block ? a + 2 : a + 1, block ? rust_close_of(f, a + 1) : j + 1, S_COND,
              anchor, 0, NULL, NULL);
    return j;
}

/* The attribute at token i (#[...], #![...]): returns the token closing
 * it, or the last token of the statement a #[cfg(...)] guards, run. */
static size_t attribute(struct unit *u, struct frame *fr, const struct rfile *f,
                        struct block_run *st, size_t i, size_t anchor)
{
    size_t ob = rust_is(f, i + 1, "[") ? i + 1 : i + 2;
    bool cfg = rust_is(f, i + 1, "[") && rust_is(f, ob + 1, "cfg") && rust_is(f, ob + 2, "(");
    i = rust_close_of(f, ob);
    if (i >= st->close)
        return i;
    if (cfg && st->depth == 0 && i + 1 < st->close && !attr_keeps(f, i + 1)) {
        i = run_cfg_stmt(u, fr, f, i, st->close, anchor);
        st->stmt = i + 1;
    }
    return i;
}

/* Whether token i starts an item, which the run steps over. */
static bool item_keyword(const struct rfile *f, size_t i)
{
    return rust_is(f, i, "fn") || rust_is(f, i, "impl") || rust_is(f, i, "mod") ||
           rust_is(f, i, "struct") || rust_is(f, i, "enum") || rust_is(f, i, "trait") ||
           rust_is(f, i, "use") || (rust_is(f, i, "macro_rules") && rust_is(f, i + 1, "!"));
}

/* `for NAME in EXPR {` at token i: the body's variable and what it runs
 * over. */
static void for_head(struct unit *u, struct frame *fr, const struct rfile *f,
                     struct block_run *st, size_t i)
{
    st->pending = P_FOR;
    free(st->loop_var);
    val_free(&st->loop_val);
    st->loop_var = rust_ident_dup(f, i + 1);
    size_t e = body_open(f, i + 3, st->close);
    st->loop_known = resolve(u, fr, f, i + 3, e, &st->loop_val);
}

/* `let NAME = EXPR;` (const, static) at token i: NAME bound to what EXPR
 * stands for. */
static void let_binding(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                        size_t close)
{
    size_t n = i + 1;
    if (rust_is(f, n, "mut"))
        n++;
    if (!rust_is_ident(f, n))
        return;
    size_t eq = n + 1;
    while (eq < close && !rust_is(f, eq, "=") && !rust_is(f, eq, ";")) {
        if (rust_is(f, eq, "(") || rust_is(f, eq, "[") || rust_is(f, eq, "{"))
            eq = rust_close_of(f, eq);
        eq++;
    }
    if (!rust_is(f, eq, "="))
        return;
    size_t e = stmt_end(f, eq + 1, close);
    struct val v;
    if (resolve(u, fr, f, eq + 1, e, &v) && !bind(&fr->b, &fr->nb, &fr->cap, rust_ident_dup(f, n), &v))
        u->oom = true;
}

/* A keyword at depth 0, token i: what the next '{' opens, an if/else
 * chain's group (and a condition that only leads to warnings), a for
 * loop's variable, a let's binding. */
static void keyword(struct unit *u, struct frame *fr, const struct rfile *f, struct block_run *st,
                    size_t i)
{
    if (rust_is(f, i, "if") || rust_is(f, i, "else")) {
        bool chain_head = rust_is(f, i, "if") && !(i > st->b && rust_is(f, i - 1, "else"));
        if (chain_head)
            st->chain_group = ++u->next_group;
        size_t qb, qe;
        if (chain_head && warning_only_if(f, i, st->close, &qb, &qe)) {
            u->quiet_file = fr->file;
            u->quiet_b = qb;
            u->quiet_e = qe;
        }
        st->pending = P_IF;
    } else if (rust_is(f, i, "while") || rust_is(f, i, "loop")) {
        st->pending = P_COND;
    } else if (rust_is(f, i, "match")) {
        st->pending = P_MATCH;
    } else if (rust_is(f, i, "unsafe") || rust_is(f, i, "async")) {
        st->pending = st->pending == P_NONE ? P_UNCOND : st->pending;
    } else if (rust_is(f, i, "for") && rust_is_ident(f, i + 1) && rust_is(f, i + 2, "in")) {
        for_head(u, fr, f, st, i);
    } else if ((rust_is(f, i, "let") || rust_is(f, i, "const") || rust_is(f, i, "static")) &&
               i == st->stmt) {
        let_binding(u, fr, f, i, st->close);
    }
}

/* How the block a '{' opens runs. */
struct block_kind {
    enum scope kind;
    uint32_t group;
    bool same_scope; /* a struct literal: its fields are expressions of this block */
    bool closure;    /* a closure's body */
    const char *var; /* a for loop's variable and its value */
    const struct val *val;
};

static struct block_kind block_kind(const struct rfile *f, const struct block_run *st, size_t i)
{
    struct block_kind k = {.kind = S_COND};
    bool top = st->depth == 0;
    if (i > 0 && rust_is(f, i - 1, "else")) {
        k.group = st->chain_group;
    } else if (i > 0 && rust_is(f, i - 1, "loop")) {
        k.kind = S_COND;
    } else if (i > 0 && (rust_is(f, i - 1, "unsafe") || rust_is(f, i - 1, "async") ||
                         rust_is(f, i - 1, "move") || rust_is(f, i - 1, "const"))) {
        k.kind = S_UNCOND;
    } else if (top && st->pending == P_MATCH) {
        k.kind = S_MATCH;
    } else if (top && st->pending == P_FOR) {
        k.kind = st->loop_known && !val_empty(&st->loop_val) ? S_UNCOND : S_COND;
        k.var = st->loop_var;
        k.val = &st->loop_val;
    } else if (top && st->pending == P_IF) {
        k.group = st->chain_group;
    } else if (top && st->pending == P_COND) {
        k.kind = S_COND;
    } else if (top && st->pending == P_UNCOND) {
        k.kind = S_UNCOND;
    } else if (i > 0 && (rust_is(f, i - 1, "|") || rust_is(f, i - 1, "=>"))) {
        k.closure = rust_is(f, i - 1, "|"); /* a closure's body, a match arm's block */
    } else if (i > 0 && (rust_is_ident(f, i - 1) || rust_is(f, i - 1, ">")) &&
               !rust_is(f, i - 1, "return") && !rust_is(f, i - 1, "in")) {
        k.same_scope = true; /* a struct literal: its fields are expressions here */
    } else {
        k.kind = S_UNCOND; /* a block expression */
    }
    return k;
}

/* The block '{' at token i opens, run unless it is a struct literal's;
 * returns the token to go on from. */
static size_t inner_block(struct unit *u, struct frame *fr, const struct rfile *f,
                          struct block_run *st, size_t i, size_t anchor)
{
    size_t j = rust_close_of(f, i);
    struct block_kind k = block_kind(f, st, i);
    if (st->depth == 0)
        st->pending = P_NONE;
    if (k.same_scope)
        return i; /* run its tokens in this block */
    u->closure += k.closure;
    size_t jc = j < st->close ? j : st->close;
    run_range(u, fr, i + 1, jc, k.kind, anchor, k.group, k.var, k.val);
    u->closure -= k.closure;
    i = jc;
    if (st->depth == 0 && !rust_is(f, i + 1, "else") && !rust_is(f, i + 1, ".") &&
        !rust_is(f, i + 1, "?") && !rust_is(f, i + 1, ",") && !rust_is(f, i + 1, ")") &&
        !rust_is(f, i + 1, ";") && st->kind != S_MATCH)
        st->stmt = i + 1;
    return i;
}

/* An identifier at token i that no keyword took: a read of the
 * environment, directives printed, a build tool's site, a method chain, a
 * call of one of the script's functions. */
static void run_ident(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                      size_t close, size_t anchor)
{
    size_t open;
    bool all;
    if (env_read(u, f, i, &open, &all)) {
        read_env(u, fr, f, i, open, all, anchor);
        return;
    }
    if ((rust_is(f, i, "println") || rust_is(f, i, "print")) && rust_is(f, i + 1, "!") &&
        rust_is(f, i + 2, "(")) {
        directives(u, fr, f, i + 2);
        return;
    }
    tool_site(u, fr, f, i, anchor);
    if (chain_start(u, f, i))
        eval_chain(u, fr, f, i, close, anchor);
    if (rust_is(f, i + 1, "(") && !(i > 0 && (rust_is(f, i - 1, ".") || rust_is(f, i - 1, "fn")))) {
        struct rfn *fn = call_target(u, fr, f, i);
        if (fn)
            call_fn(u, fr, f, fn, i + 1, anchor);
    }
}

static void run_range_at(struct unit *u, struct frame *fr, size_t b, size_t close,
                         enum scope kind, size_t parent_stmt, const char *bvar,
                         const struct val *bval)
{
    const struct rfile *f = &u->files[fr->file];
    size_t h0 = u->n_decl;
    size_t nb0 = fr->nb;
    if (bvar) {
        struct val v;
        if (!val_copy(&v, bval) || !bind(&fr->b, &fr->nb, &fr->cap, cbc_strdup(bvar), &v))
            u->oom = true;
    }
    struct block_run st = {.b = b, .close = close, .kind = kind, .stmt = b, .pending = P_NONE};
    for (size_t i = b; i < close; i++) {
        if (++u->steps > STEP_BUDGET) {
            u->budget = true;
            break;
        }
        size_t anchor = kind == S_MATCH ? parent_stmt : st.stmt;
        const struct tok *t = &f->t[i];
        if (kind == S_MATCH && st.depth == 0 && rust_is(f, i, ",")) {
            truncate_to(u, fr, h0); /* each arm starts from the match's state */
            if (u->n_cpath > 0)
                u->cpath[u->n_cpath - 1].id = ++u->next_id; /* the next arm */
            continue;
        }
        if (rust_is(f, i, "[") && chain_start(u, f, i))
            eval_chain(u, fr, f, i, close, anchor);
        if (rust_is(f, i, "(") || rust_is(f, i, "[")) {
            st.depth++;
            continue;
        }
        if (rust_is(f, i, ")") || rust_is(f, i, "]")) {
            st.depth--;
            continue;
        }
        if (rust_is(f, i, ";") && st.depth <= 0) {
            st.stmt = i + 1;
            st.pending = P_NONE;
            st.depth = 0;
            continue;
        }
        if (rust_is(f, i, "#") && (rust_is(f, i + 1, "[") || (rust_is(f, i + 1, "!") && rust_is(f, i + 2, "[")))) {
            i = attribute(u, fr, f, &st, i, anchor);
            if (i >= close)
                break;
            continue; /* a fix goes before the attribute, which stays with its item */
        }
        if (st.depth == 0 && item_keyword(f, i)) {
            if (rust_is(f, i, "fn") && !rust_is_ident(f, i + 1)) /* fn(x) types */
                continue;
            i = skip_item(f, i, close) - 1;
            st.stmt = i + 1;
            continue;
        }
        if (t->k == T_IDENT && st.depth == 0)
            keyword(u, fr, f, &st, i);
        run_exit(u, fr, exit_at(f, i));
        if (rust_is(f, i, "{")) {
            i = inner_block(u, fr, f, &st, i, anchor);
            continue;
        }
        if (t->k == T_IDENT)
            run_ident(u, fr, f, i, close, anchor);
    }
    if (kind != S_UNCOND)
        truncate_to(u, fr, h0);
    free(st.loop_var);
    val_free(&st.loop_val);
    while (fr->nb > nb0) {
        fr->nb--;
        free(fr->b[fr->nb].name);
        val_free(&fr->b[fr->nb].v);
    }
}

/* ---- items: functions, consts, imports, modules -------------------------- */

static enum cbc_status add_file(struct unit *u, const char *path, const char *via,
                                struct cbc_err *err);

static void add_import(struct unit *u, const char *name, size_t nlen, const char *path)
{
    for (size_t k = 0; k < u->n_imports; k++)
        if (strlen(u->imports[k].name) == nlen && !memcmp(u->imports[k].name, name, nlen) &&
            !strcmp(u->imports[k].path, path) && strcmp(u->imports[k].name, "*") != 0)
            return;
    if (!cbc_grow(&u->imports, u->n_imports, &u->cap_imports, sizeof *u->imports, 8)) {
        u->oom = true;
        return;
    }
    char *n = cbc_strndup(name, nlen), *p = cbc_strdup(path);
    if (!n || !p) {
        free(n), free(p);
        u->oom = true;
        return;
    }
    u->imports[u->n_imports++] = (struct import){n, p};
}

/* `use` tree at [i, end) with `prefix` ("a::b") before it: records what
 * each name imported stands for. */
static void use_tree(struct unit *u, const struct rfile *f, size_t i, size_t end,
                     const char *prefix, int depth)
{
    if (depth > 8)
        return;
    struct cbc_buf p = {0};
    cbc_buf_puts(&p, prefix);
    size_t last = SIZE_MAX;
    while (i < end) {
        if (rust_is(f, i, "{")) {
            size_t c = rust_close_of(f, i);
            if (c > end)
                c = end;
            size_t k = i + 1;
            while (k < c) {
                size_t j = k;
                while (j < c && !rust_is(f, j, ",")) {
                    if (rust_is(f, j, "{"))
                        j = rust_close_of(f, j);
                    j++;
                }
                if (j > c)
                    j = c;
                if (!p.oom)
                    use_tree(u, f, k, j, p.p ? p.p : "", depth + 1);
                k = j + 1;
            }
            cbc_buf_release(&p);
            return;
        }
        if (rust_is(f, i, "*")) {
            if (p.p && p.len)
                add_import(u, "*", 1, p.p);
            cbc_buf_release(&p);
            return;
        }
        if (rust_is(f, i, "as") && last != SIZE_MAX && rust_is_ident(f, i + 1)) {
            if (p.p)
                add_import(u, f->src.text + f->t[i + 1].off, f->t[i + 1].len, p.p);
            cbc_buf_release(&p);
            return;
        }
        if (rust_is_ident(f, i)) {
            if (!rust_is(f, i, "self")) {
                if (p.len)
                    cbc_buf_puts(&p, "::");
                cbc_buf_append(&p, f->src.text + f->t[i].off, f->t[i].len);
            }
            last = i;
        }
        i++;
    }
    if (last != SIZE_MAX && p.p && !p.oom && !rust_is(f, last, "self"))
        add_import(u, f->src.text + f->t[last].off, f->t[last].len, p.p);
    else if (last != SIZE_MAX && p.p && !p.oom && rust_is(f, last, "self")) {
        const char *seg = strrchr(p.p, ':');
        seg = seg ? seg + 1 : p.p;
        add_import(u, seg, strlen(seg), p.p);
    }
    if (p.oom)
        u->oom = true;
    cbc_buf_release(&p);
}

static void scan_use(struct unit *u, const struct rfile *f, size_t i, size_t end)
{
    size_t e = i + 1;
    while (e < end && !rust_is(f, e, ";")) {
        if (rust_is(f, e, "{"))
            e = rust_close_of(f, e);
        e++;
    }
    if (e > end)
        e = end;
    size_t b = i + 1;
    if (rust_is(f, b, "::"))
        b++;
    use_tree(u, f, b, e, "", 0);
    for (size_t k = 0; k < u->n_imports; k++) {
        const struct import *im = &u->imports[k];
        if (!strcmp(im->name, "*") && !strcmp(im->path, "std::env"))
            u->imp_var = u->imp_var_os = u->imp_vars = u->imp_vars_os = true;
        else if (!strcmp(im->path, "std::env::var") && !strcmp(im->name, "var"))
            u->imp_var = true;
        else if (!strcmp(im->path, "std::env::var_os") && !strcmp(im->name, "var_os"))
            u->imp_var_os = true;
        else if (!strcmp(im->path, "std::env::vars") && !strcmp(im->name, "vars"))
            u->imp_vars = true;
        else if (!strcmp(im->path, "std::env::vars_os") && !strcmp(im->name, "vars_os"))
            u->imp_vars_os = true;
    }
}

static bool add_span(struct unit *u, int fi, size_t b, size_t e, char *name, bool module)
{
    if (!name || !cbc_grow(&u->spans, u->n_spans, &u->cap_spans, sizeof *u->spans, 8)) {
        free(name);
        return false;
    }
    u->spans[u->n_spans++] = (struct span){fi, b, e, name, module};
    return true;
}

/* impl blocks (`impl<T> Trait for Type<T> {`: Type) and inline modules of
 * file fi. */
static bool scan_spans(struct unit *u, int fi)
{
    const struct rfile *f = &u->files[fi];
    for (size_t i = 0; i < f->n; i++) {
        if (rust_is(f, i, "mod") && rust_is_ident(f, i + 1) && rust_is(f, i + 2, "{")) {
            if (!add_span(u, fi, i + 2, rust_close_of(f, i + 2), rust_ident_dup(f, i + 1), true))
                return false;
            continue;
        }
        if (!rust_is(f, i, "impl") || (i > 0 && (rust_is(f, i - 1, "->") || rust_is(f, i - 1, "(") ||
                                                 rust_is(f, i - 1, ",") || rust_is(f, i - 1, "<") ||
                                                 rust_is(f, i - 1, "&") || rust_is(f, i - 1, ":"))))
            continue;
        size_t k = i + 1, last = SIZE_MAX;
        int ang = 0;
        for (; k < f->n && !(ang == 0 && (rust_is(f, k, "{") || rust_is(f, k, ";"))); k++) {
            if (rust_is(f, k, "<"))
                ang++;
            else if (rust_is(f, k, ">") && ang > 0)
                ang--;
            else if (ang == 0 && rust_is(f, k, "where"))
                break;
            else if (ang == 0 && rust_is_ident(f, k) && !rust_is(f, k, "for") && !rust_is(f, k, "dyn"))
                last = k;
        }
        while (k < f->n && !rust_is(f, k, "{") && !rust_is(f, k, ";"))
            k++;
        if (k < f->n && rust_is(f, k, "{") && last != SIZE_MAX &&
            !add_span(u, fi, k, rust_close_of(f, k), rust_ident_dup(f, last), false))
            return false;
    }
    return true;
}

/* The parameters of a function listed in (po, pc): the name of each
 * `name: T` at the top level, a placeholder for a pattern or self, and
 * whether it takes self. False on out of memory. */
static bool scan_params(const struct rfile *f, struct rfn *fn, size_t po, size_t pc)
{
    size_t k = po + 1;
    size_t sp = k;
    while (sp < pc && (rust_is(f, sp, "&") || rust_is(f, sp, "mut") || f->t[sp].k == T_LIFE))
        sp++;
    fn->method = rust_is(f, sp, "self");
    while (k < pc && fn->n_params < MAX_PARAMS) {
        size_t s = k;
        if (rust_is(f, s, "mut"))
            s++;
        if (rust_is_ident(f, s) && rust_is(f, s + 1, ":"))
            fn->params[fn->n_params++] = rust_ident_dup(f, s);
        else if (fn->n_params < MAX_PARAMS)
            fn->params[fn->n_params++] = cbc_strdup("\x01"); /* a pattern or self */
        while (k < pc && !rust_is(f, k, ",")) {
            if (rust_is(f, k, "<")) /* generics: skip to the matching '>' */
                k = angle_close(f, k, pc);
            else if (rust_is(f, k, "(") || rust_is(f, k, "[") || rust_is(f, k, "{"))
                k = rust_close_of(f, k);
            k++;
        }
        k++;
    }
    for (size_t q = 0; q < fn->n_params; q++)
        if (!fn->params[q])
            return false;
    return true;
}

/* `fn NAME(...)` at token i, its parameters opening at po: a function with
 * a body is recorded with the innermost impl around it. */
static enum cbc_status scan_fn(struct unit *u, int fi, size_t i, size_t po, struct cbc_err *err)
{
    const struct rfile *f = &u->files[fi];
    size_t pc = rust_close_of(f, po);
    size_t b = item_head_end(f, pc + 1, f->n);
    if (b >= f->n || !rust_is(f, b, "{"))
        return CBC_OK;
    if (!cbc_grow(&u->fns, u->n_fns, &u->cap_fns, sizeof *u->fns, 16))
        return cbc_err_oom(err);
    struct rfn *fn = &u->fns[u->n_fns];
    memset(fn, 0, sizeof *fn);
    fn->name = rust_ident_dup(f, i + 1);
    fn->file = fi;
    fn->body = b;
    if (!fn->name)
        return cbc_err_oom(err);
    for (size_t q = 0; q < u->n_spans; q++) /* the innermost impl around it */
        if (!u->spans[q].module && u->spans[q].file == fi && u->spans[q].b < i && u->spans[q].e > i)
            fn->impl = u->spans[q].name;
    u->n_fns++;
    return scan_params(f, fn, po, pc) ? CBC_OK : cbc_err_oom(err);
}

/* `const NAME: T = EXPR;` (static) at token i: a file-level binding. */
static enum cbc_status scan_const(struct unit *u, const struct rfile *f, size_t i,
                                  struct cbc_err *err)
{
    size_t n = i + 1;
    if (rust_is(f, n, "mut"))
        n++;
    size_t eq = n + 1;
    while (eq < f->n && !rust_is(f, eq, "=") && !rust_is(f, eq, ";") && !rust_is(f, eq, "{")) {
        if (rust_is(f, eq, "(") || rust_is(f, eq, "["))
            eq = rust_close_of(f, eq); /* [&str; 2] */
        eq++;
    }
    if (!rust_is_ident(f, n) || !rust_is(f, eq, "="))
        return CBC_OK;
    size_t e = stmt_end(f, eq + 1, f->n);
    struct val v;
    if (resolve(u, NULL, f, eq + 1, e, &v) &&
        !bind(&u->consts, &u->n_consts, &u->cap_consts, rust_ident_dup(f, n), &v))
        return cbc_err_oom(err);
    return CBC_OK;
}

/* `mod NAME;` (after #[path = "x.rs"] too) at token i: the module's file
 * is linted with the script, or a note says it is not there. */
static enum cbc_status scan_mod(struct unit *u, int fi, size_t i, struct cbc_err *err)
{
    const struct rfile *f = &u->files[fi];
    char *dir = cbc_path_dir(f->src.path);
    char *name = rust_ident_dup(f, i + 1);
    const char *path_attr = NULL;
    if (i >= 6 && rust_is(f, i - 1, "]") && rust_is(f, i - 3, "=") && rust_is(f, i - 4, "path"))
        path_attr = rust_str_of(f, i - 2);
    const char *base = cbc_path_base(f->src.path);
    bool root = fi == 0 || !strcmp(base, "mod.rs");
    char *stem = cbc_path_stem(f->src.path);
    char *sub = root ? cbc_strdup(dir) : cbc_asprintf("%s/%s", dir, stem ? stem : "");
    char *c1 = path_attr ? cbc_asprintf("%s/%s", dir, path_attr)
                         : cbc_asprintf("%s/%s.rs", sub ? sub : ".", name ? name : "");
    char *c2 = cbc_asprintf("%s/%s/mod.rs", sub ? sub : ".", name ? name : "");
    char *via = cbc_asprintf("%s `mod %s;` in %s", path_attr ? "the #[path] of" : "",
                             name ? name : "", f->src.path);
    if (!dir || !name || !stem || !sub || !c1 || !c2 || !via) {
        free(dir), free(name), free(stem), free(sub), free(c1), free(c2), free(via);
        return cbc_err_oom(err);
    }
    enum cbc_status st = CBC_OK;
    const char *v2 = via[0] == ' ' ? via + 1 : via;
    if (cbc_is_file(c1))
        st = add_file(u, c1, v2, err);
    else if (!path_attr && cbc_is_file(c2))
        st = add_file(u, c2, v2, err);
    else
        lint_note(u->r, "%s: module '%s' not found next to it; its reads are not linted",
                  f->src.path, name);
    free(dir), free(name), free(stem), free(sub), free(c1), free(c2), free(via);
    return st;
}

/* `include!("x.rs")` at token i: the file is linted with the script. */
static enum cbc_status scan_include(struct unit *u, int fi, size_t i, struct cbc_err *err)
{
    const struct rfile *f = &u->files[fi];
    char *dir = cbc_path_dir(f->src.path);
    char *p = dir ? cbc_asprintf("%s/%s", dir, rust_str_of(f, i + 3)) : NULL;
    char *via = cbc_asprintf("include!(\"%s\") in %s", rust_str_of(f, i + 3), f->src.path);
    enum cbc_status st = CBC_OK;
    if (!p || !via)
        st = cbc_err_oom(err);
    else if (cbc_is_file(p))
        st = add_file(u, p, via, err);
    free(dir);
    free(p);
    free(via);
    return st;
}

static enum cbc_status scan_items(struct unit *u, int fi, struct cbc_err *err)
{
    struct rfile *f = &u->files[fi];
    if (!scan_spans(u, fi))
        return cbc_err_oom(err);
    for (size_t i = 0; i < f->n; i++) {
        if (rust_is(f, i, "macro_rules") && rust_is(f, i + 1, "!")) {
            i = skip_item(f, i, f->n) - 1;
            continue;
        }
        if (rust_is(f, i, "#") && rust_is(f, i + 1, "[") && rust_is(f, i + 2, "cfg") && rust_is(f, i + 3, "(") &&
            rust_is(f, i + 4, "test") && rust_is(f, i + 5, ")")) {
            i = skip_item(f, rust_close_of(f, i + 1) + 1, f->n) - 1; /* test code never runs */
            continue;
        }
        if (rust_is(f, i, "use"))
            scan_use(u, f, i, f->n);
        size_t po = i + 2; /* fn name<T>(...) */
        if (rust_is(f, i, "fn") && rust_is_ident(f, i + 1) && rust_is(f, po, "<"))
            po = angle_close(f, po, f->n) + 1;
        enum cbc_status st = CBC_OK;
        if (rust_is(f, i, "fn") && rust_is_ident(f, i + 1) && rust_is(f, po, "(") &&
            !(i > 0 && rust_is(f, i - 1, "("))) {
            st = scan_fn(u, fi, i, po, err);
        } else if ((rust_is(f, i, "const") || rust_is(f, i, "static")) && !rust_is(f, i + 1, "fn")) {
            st = scan_const(u, f, i, err);
        } else if (rust_is(f, i, "mod") && rust_is_ident(f, i + 1) && rust_is(f, i + 2, ";")) {
            st = scan_mod(u, fi, i, err);
        } else if (rust_is(f, i, "include") && rust_is(f, i + 1, "!") && rust_is(f, i + 2, "(") &&
                   rust_str_of(f, i + 3) && rust_is(f, i + 4, ")")) {
            st = scan_include(u, fi, i, err);
        }
        if (st != CBC_OK)
            return st;
        f = &u->files[fi];
    }
    return CBC_OK;
}

static enum cbc_status add_file(struct unit *u, const char *path, const char *via,
                                struct cbc_err *err)
{
    for (int i = 0; i < u->n_files; i++)
        if (!strcmp(u->files[i].src.path, path))
            return CBC_OK;
    if (u->n_files >= MAX_FILES) {
        lint_note(u->r, "%s: more than %d module files; the rest are not linted", path,
                  MAX_FILES);
        return CBC_OK;
    }
    int fi = u->n_files;
    struct rfile *f = &u->files[fi];
    memset(f, 0, sizeof *f);
    enum cbc_status st = lint_src_read(path, &f->src, err);
    if (st != CBC_OK)
        return st;
    if (via && !(f->src.via = cbc_strdup(via))) {
        lint_src_free(&f->src);
        return cbc_err_oom(err);
    }
    u->n_files++;
    u->r->files_read++;
    if (!rust_lex(f))
        return cbc_err_oom(err);
    for (size_t i = 0; i < f->n; i++) {
        const char *s = rust_str_of(f, i);
        if (!s)
            continue;
        for (const char *p = s; (p = strstr(p, "cargo:")) != NULL; p++) {
            if (p != s && p[-1] != '\n')
                continue;
            if (!strncmp(p, "cargo::", 7))
                u->cargo2 = true;
            if (!strncmp(p, "cargo:rerun-if", 14) || !strncmp(p, "cargo::rerun-if", 15))
                u->has_rerun = true;
        }
    }
    return scan_items(u, fi, err);
}

/* ---- after the run: sources and cargo's default scan --------------------- */

static char *package_root(const char *script)
{
    char *dir = cbc_path_dir(script);
    for (int up = 0; dir && up < 8; up++) {
        char *toml = cbc_path_join(dir, "Cargo.toml");
        bool found = toml && cbc_is_file(toml);
        free(toml);
        if (found)
            return dir;
        char *parent = cbc_path_join(dir, "..");
        free(dir);
        dir = parent;
    }
    free(dir);
    return NULL;
}

/* A string of the script that names a file or directory of the package
 * (relative, no "..", not under target/): what it reads. */
static bool package_path(const char *root, const char *s)
{
    if (!*s || s[0] == '/' || strstr(s, "..") || strpbrk(s, "{:= \t\n*?[") ||
        !strncmp(s, "target", 6) || strlen(s) > 512 || !strcmp(s, "."))
        return false;
    char *p = cbc_path_join(root, s);
    struct stat st;
    bool ok = p && lstat(p, &st) == 0 && (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode));
    free(p);
    return ok;
}

static bool is_cuda_source(const char *s)
{
    size_t n = strlen(s);
    if (strpbrk(s, ":= \t\n{")) /* a directive or a command line, not a path */
        return false;
    return (n > 3 && !strcmp(s + n - 3, ".cu")) || (n > 4 && !strcmp(s + n - 4, ".cuh"));
}

/* Glob matching of cargo-relative paths: a star and `?` within a component,
 * a double star across components (followed by a slash it also matches no
 * directory), [...] a class. Iterative over both strings: O(|p| * |s|). */
static bool glob_match(const char *p, const char *s)
{
    size_t np = strlen(p), ns = strlen(s);
    if (np > 1024 || ns > 1024)
        return false;
    /* prev[j]: p[0..i) matches s[0..j) */
    bool *prev = calloc(ns + 1, 1), *cur = calloc(ns + 1, 1);
    if (!prev || !cur) {
        free(prev), free(cur);
        return false;
    }
    prev[0] = true;
    for (size_t i = 0; i < np; i++) {
        memset(cur, 0, ns + 1);
        char c = p[i];
        if (c == '*' && i + 1 < np && p[i + 1] == '*') {
            /* ** : any run of characters, '/' included */
            bool slash = i + 2 < np && p[i + 2] == '/';
            bool any = false;
            for (size_t j = 0; j <= ns; j++) {
                any |= prev[j];
                cur[j] = any;
            }
            if (slash) { /* double star and slash may also match no directory at all */
                i += 2;
                bool *t2 = calloc(ns + 1, 1);
                if (!t2) {
                    free(prev), free(cur);
                    return false;
                }
                for (size_t j = 0; j < ns; j++)
                    if (cur[j] && s[j] == '/')
                        t2[j + 1] = true;
                for (size_t j = 0; j <= ns; j++)
                    t2[j] |= prev[j];
                memcpy(cur, t2, ns + 1);
                free(t2);
            } else {
                i++;
            }
        } else if (c == '*') {
            bool any = false;
            for (size_t j = 0; j <= ns; j++) {
                if (j > 0 && s[j - 1] == '/')
                    any = false;
                any |= prev[j];
                cur[j] = any;
            }
        } else if (c == '[') {
            size_t k = i + 1;
            bool neg = k < np && (p[k] == '!' || p[k] == '^');
            if (neg)
                k++;
            size_t cb = k;
            while (k < np && (p[k] != ']' || k == cb))
                k++;
            if (k >= np) { /* no closing bracket: a literal '[' */
                for (size_t j = 0; j < ns; j++)
                    cur[j + 1] = prev[j] && s[j] == '[';
            } else {
                for (size_t j = 0; j < ns; j++) {
                    if (!prev[j] || s[j] == '/')
                        continue;
                    bool in = false;
                    for (size_t q = cb; q < k; q++) {
                        if (q + 2 < k && p[q + 1] == '-') {
                            in |= s[j] >= p[q] && s[j] <= p[q + 2];
                            q += 2;
                        } else {
                            in |= s[j] == p[q];
                        }
                    }
                    cur[j + 1] = in != neg;
                }
                i = k;
            }
        } else {
            for (size_t j = 0; j < ns; j++)
                cur[j + 1] = prev[j] && (c == '?' ? s[j] != '/' : s[j] == c);
        }
        bool *t = prev;
        prev = cur;
        cur = t;
    }
    bool m = prev[ns];
    free(prev), free(cur);
    return m;
}

/* The directory part of a glob before its first wildcard (src for
 * src, double star, slash, star .cu); "" when the glob starts with one. */
static char *glob_dir(const char *g)
{
    const char *w = strpbrk(g, "*?[");
    if (!w)
        return cbc_strdup(g);
    const char *slash = NULL;
    for (const char *p = g; p < w; p++)
        if (*p == '/')
            slash = p;
    return cbc_strndup(g, slash ? (size_t)(slash - g) : 0);
}

static bool covered(const struct lint_strset *changed, const char *path)
{
    while (!strncmp(path, "./", 2))
        path += 2;
    char *pd = has_glob(path) ? glob_dir(path) : NULL;
    bool yes = false;
    for (size_t i = 0; i < changed->n && !yes; i++) {
        const char *c = changed->v[i];
        while (!strncmp(c, "./", 2))
            c += 2;
        if (has_glob(c)) {
            yes = glob_match(c, path); /* a glob path is matched as the text it is */
            continue;
        }
        const char *p = pd ? pd : path;
        size_t n = strlen(c);
        while (n > 0 && c[n - 1] == '/')
            n--;
        if (n == 0)
            continue;
        if (n == 1 && c[0] == '.') /* the whole package */
            yes = true;
        else if (!strncmp(p, c, n) && (p[n] == '\0' || p[n] == '/'))
            yes = true;
    }
    free(pd);
    return yes;
}

/* What a fix declares for source pattern `s` of the package at `root`:
 * the path itself, a glob's directory (cargo scans a directory), or, for a
 * glob at the package's top, each file it matches. Never a glob. */
static void declarable(struct unit *u, const char *root, const char *s, struct lint_strset *out)
{
    while (!strncmp(s, "./", 2))
        s += 2;
    if (!has_glob(s)) {
        if (!lint_strset_add(out, s))
            u->oom = true;
        return;
    }
    char *d = glob_dir(s);
    if (d && d[0]) {
        if (!lint_strset_add(out, d))
            u->oom = true;
        free(d);
        return;
    }
    free(d);
    DIR *dir = root ? opendir(root) : NULL;
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    while (dir && (de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.' || !glob_match(s, de->d_name))
            continue;
        char *nm = cbc_strdup(de->d_name);
        if (!nm || !cbc_grow(&names, n, &cap, sizeof *names, 8)) {
            free(nm);
            u->oom = true;
            break;
        }
        names[n++] = nm;
    }
    if (dir)
        closedir(dir);
    for (size_t i = 0; i < n; i++) {
        size_t m = i;
        for (size_t j = i + 1; j < n; j++)
            if (strcmp(names[j], names[m]) < 0)
                m = j;
        char *t = names[i];
        names[i] = names[m];
        names[m] = t;
        if (!lint_strset_add(out, names[i]))
            u->oom = true;
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of the package (beneath `root`, from its directory `rel`)
 * that glob `g` matches (and, with `uncovered`, no rerun-if-changed=
 * covers); links are not followed, the walk is bounded. */
static void glob_files(struct unit *u, const char *root, const char *g, int fd_depth,
                       const char *rel, bool uncovered, struct lint_strset *out, size_t *budget)
{
    if (fd_depth > 16 || *budget == 0)
        return;
    char *dir = rel[0] ? cbc_path_join(root, rel) : cbc_strdup(root);
    DIR *d = dir ? opendir(dir) : NULL;
    free(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL && *budget > 0) {
        (*budget)--;
        if (de->d_name[0] == '.' || !strcmp(de->d_name, "target"))
            continue;
        char *r2 = rel[0] ? cbc_asprintf("%s/%s", rel, de->d_name) : cbc_strdup(de->d_name);
        char *full = r2 ? cbc_path_join(root, r2) : NULL;
        struct stat st;
        if (full && lstat(full, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                glob_files(u, root, g, fd_depth + 1, r2, uncovered, out, budget);
            else if (S_ISREG(st.st_mode) && glob_match(g, r2) &&
                     !(uncovered && covered(&u->changed, r2)) && !lint_strset_add(out, r2))
                u->oom = true;
        }
        free(r2);
        free(full);
    }
    closedir(d);
}

static void source_finding(struct unit *u, const char *root, const struct site *ns,
                           const char *src, const char *by, const struct lint_strset *files,
                           bool header)
{
    struct lint_strset decl = {0};
    declarable(u, root, src, &decl);
    if (decl.n == 0) {
        lint_strset_free(&decl);
        return;
    }
    struct cbc_buf ins = {0}, dlist = {0};
    size_t at = 0;
    for (size_t k = 0; k < decl.n; k++) {
        char *d = cbc_asprintf("cargo%srerun-if-changed=%s", u->cargo2 ? "::" : ":", decl.v[k]);
        size_t at1 = 0;
        char *one = d ? insertion(u, ns->file, ns->stmt_tok, d, &at1) : NULL;
        if (!one)
            u->oom = true;
        else
            cbc_buf_puts(&ins, one);
        at = at1;
        cbc_buf_printf(&dlist, "%sprintln!(\"%s\");", k ? " " : "", d ? d : "");
        free(d);
        free(one);
        if (!lint_strset_add(&u->changed, decl.v[k]))
            u->oom = true;
    }
    const struct rfile *nf = &u->files[ns->file];
    struct cbc_buf which = {0};
    for (size_t k = 0; files && k < files->n && k < 4; k++)
        cbc_buf_printf(&which, "%s%s", k ? ", " : "", files->v[k]);
    if (files && files->n > 4)
        cbc_buf_printf(&which, " and %zu more", files->n - 4);
    char *why = header ? cbc_asprintf("the kernels the build script compiles with nvcc%s%s "
                                      "include %s, and no rerun-if-changed= covers it: cargo "
                                      "will not rebuild them when %s changes",
                                      by ? " through " : "", by ? by : "", src, src)
              : files ? cbc_asprintf("the build script compiles the kernels %s matches with "
                                     "nvcc%s%s but declares rerun-if directives without %s: "
                                     "cargo will not rebuild them when they change",
                                     src, by ? " through " : "", by ? by : "",
                                     which.p ? which.p : "them")
                      : cbc_asprintf("the build script compiles %s with nvcc%s%s but declares "
                                     "rerun-if directives without it: cargo will not rebuild "
                                     "the kernel when %s changes",
                                     src, by ? " through " : "", by ? by : "", src);
    cbc_buf_release(&which);
    char *fix = cbc_asprintf("%s (cubincache lint --fix inserts it)", dlist.p ? dlist.p : "");
    char *text = cbc_buf_detach(&ins);
    if (!text || !why || !fix || dlist.oom ||
        !lint_add(u->r, CBC_LINT_NVCC_SOURCES, &nf->src, ns->off, src, why, fix, text, at))
        u->oom = true;
    free(text), free(why), free(fix);
    cbc_buf_release(&dlist);
    lint_strset_free(&decl);
}

/* The package file a quoted #include names from `from` (a package
 * path): the directory of `from` first, then the package's top; NULL when
 * neither holds it, or it leaves the package. */
static char *include_target(const char *root, const char *from, const char *name)
{
    if (name[0] == '/' || strstr(name, "..") || strlen(name) > 512)
        return NULL;
    char *dir = cbc_path_dir(from);
    char *cands[2] = {dir && strcmp(dir, ".") ? cbc_asprintf("%s/%s", dir, name) : cbc_strdup(name),
                      cbc_strdup(name)};
    free(dir);
    char *hit = NULL;
    for (int k = 0; k < 2 && !hit; k++) {
        char *full = cands[k] ? cbc_path_join(root, cands[k]) : NULL;
        struct stat st;
        if (full && lstat(full, &st) == 0 && S_ISREG(st.st_mode)) {
            hit = cands[k];
            cands[k] = NULL;
        }
        free(full);
    }
    free(cands[0]), free(cands[1]);
    return hit;
}

/* Adds the quoted includes of package file `rel` to `seen`, recursively
 * (bounded). */
static void scan_includes(struct unit *u, const char *root, const char *rel,
                          struct lint_strset *seen, int depth)
{
    if (depth > 16 || seen->n > 2000)
        return;
    char *full = cbc_path_join(root, rel);
    uint8_t *data = NULL;
    size_t len = 0;
    struct cbc_err e = {0};
    bool ok = full && cbc_file_read_max(full, 4u << 20, &data, &len, &e) == CBC_OK;
    free(full);
    if (!ok)
        return;
    const char *t = (const char *)data, *end = t + len;
    for (const char *p = t; p < end;) {
        const char *le = memchr(p, '\n', (size_t)(end - p));
        if (!le)
            le = end;
        const char *q = p;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (q < le && *q == '#') {
            q++;
            while (q < le && (*q == ' ' || *q == '\t'))
                q++;
            if ((size_t)(le - q) > 8 && !memcmp(q, "include", 7)) {
                q += 7;
                while (q < le && (*q == ' ' || *q == '\t'))
                    q++;
                const char *ce = q < le && *q == '"' ? memchr(q + 1, '"', (size_t)(le - q - 1)) : NULL;
                if (ce) {
                    char *name = cbc_strndup(q + 1, (size_t)(ce - q - 1));
                    char *hit = name ? include_target(root, rel, name) : NULL;
                    if (hit && !lint_strset_has(seen, hit)) {
                        if (!lint_strset_add(seen, hit))
                            u->oom = true;
                        scan_includes(u, root, hit, seen, depth + 1);
                    }
                    free(name);
                    free(hit);
                }
            }
        }
        p = le < end ? le + 1 : end;
    }
    free(data);
}

/* Each header a compiled kernel of the package includes and nothing
 * declares: a finding at the call (or the nvcc command) that compiles it. */
static void header_findings(struct unit *u, const char *root)
{
    size_t nsites = u->n_nvruns + (u->nvcc ? 1 : 0);
    for (size_t i = 0; i < nsites; i++) {
        const struct site *site = i < u->n_nvruns ? &u->nvruns[i].site : &u->nvcc_site;
        const char *by = i < u->n_nvruns ? u->nvruns[i].call : NULL;
        struct lint_strset kernels = {0}, seen = {0};
        if (i < u->n_nvruns) {
            const struct lint_strset *srcs = &u->nvruns[i].srcs;
            for (size_t k = 0; k < srcs->n; k++) {
                const char *src = srcs->v[k];
                while (!strncmp(src, "./", 2))
                    src += 2;
                char *full = cbc_path_join(root, src);
                bool dir = full && cbc_is_dir(full);
                free(full);
                char *g = dir ? cbc_asprintf("%s/**/*.cu", src) : NULL;
                const char *pat = g ? g : src;
                if (has_glob(pat)) {
                    size_t budget = 20000;
                    char *gd = glob_dir(pat);
                    struct lint_strset all = {0}; /* every file it matches */
                    if (gd)
                        glob_files(u, root, pat, 0, gd, false, &all, &budget);
                    free(gd);
                    for (size_t m = 0; m < all.n; m++)
                        if (!lint_strset_add(&kernels, all.v[m]))
                            u->oom = true;
                    lint_strset_free(&all);
                } else if (!lint_strset_add(&kernels, pat)) {
                    u->oom = true;
                }
                free(g);
            }
        } else {
            for (int fi = 0; fi < u->n_files; fi++)
                for (size_t k = 0; k < u->files[fi].n; k++) {
                    const char *s = rust_str_of(&u->files[fi], k);
                    if (s && is_cuda_source(s) && !strchr(s, '{') && !has_glob(s) &&
                        package_path(root, s) && !lint_strset_add(&kernels, s))
                        u->oom = true;
                }
        }
        for (size_t k = 0; k < kernels.n; k++)
            scan_includes(u, root, kernels.v[k], &seen, 0);
        if (seen.n > 1)
            qsort(seen.v, seen.n, sizeof *seen.v, cmp_str);
        for (size_t k = 0; k < seen.n; k++)
            if (!covered(&u->changed, seen.v[k]) && !lint_strset_has(&kernels, seen.v[k]))
                source_finding(u, root, site, seen.v[k], by, NULL, true);
        lint_strset_free(&kernels);
        lint_strset_free(&seen);
    }
}

/* The finding whose insertion the files a script names join: the earliest
 * edit in the script itself, else the first one; NULL when none inserts. */
static struct cbc_lint_finding *first_insert(struct cbc_lint_result *r, size_t first_finding,
                                             const char *script)
{
    struct cbc_lint_finding *first = NULL;
    for (size_t i = first_finding; i < r->n; i++) {
        struct cbc_lint_finding *g = &r->f[i];
        if (!g->insert)
            continue;
        bool in_script = !strcmp(g->file, script);
        if (!first || (in_script && (strcmp(first->file, script) != 0 ||
                                     g->insert_at < first->insert_at)))
            first = g;
    }
    return first;
}

/* The files of the package under root that the script's strings name (a
 * glob: each file it matches) and no rerun-if-changed= covers yet. */
static void named_files(struct unit *u, const char *root, struct lint_strset *paths)
{
    for (int fi = 0; root && fi < u->n_files; fi++)
        for (size_t i = 0; i < u->files[fi].n; i++) {
            const char *s = rust_str_of(&u->files[fi], i);
            if (!s || strlen(s) > 512 || strchr(s, '\n'))
                continue;
            struct lint_strset one = {0};
            if (has_glob(s) && !strpbrk(s, "{:= \t"))
                declarable(u, root, s, &one);
            else if (!lint_strset_add(&one, s))
                u->oom = true;
            for (size_t k = 0; k < one.n; k++)
                if (package_path(root, one.v[k]) && !covered(&u->changed, one.v[k]) &&
                    !lint_strset_add(paths, one.v[k]))
                    u->oom = true;
            lint_strset_free(&one);
        }
}

/* cargo rescans the whole package while a script emits no rerun-if
 * directive; the fix's first one ends that, so it declares the files the
 * script names as well (or a note says it cannot tell which). */
static void declare_named_files(struct unit *u, size_t first_finding, const char *root)
{
    struct cbc_lint_result *r = u->r;
    const char *script = u->files[0].src.path;
    struct cbc_lint_finding *first = first_insert(r, first_finding, script);
    struct lint_strset paths = {0};
    named_files(u, root, &paths);
    if (first && paths.n > 0) {
        struct cbc_buf b = {0};
        cbc_buf_puts(&b, first->insert);
        const char *txt = first->insert;
        size_t indent = strspn(txt, " \t");
        bool line = txt[strlen(txt) - 1] == '\n';
        for (size_t k = 0; k < paths.n; k++) {
            if (line)
                cbc_buf_printf(&b, "%.*sprintln!(\"cargo%srerun-if-changed=%s\");\n",
                               (int)indent, txt, u->cargo2 ? "::" : ":", paths.v[k]);
            else
                cbc_buf_printf(&b, "println!(\"cargo%srerun-if-changed=%s\"); ",
                               u->cargo2 ? "::" : ":", paths.v[k]);
            if (!lint_strset_add(&u->changed, paths.v[k]))
                u->oom = true;
        }
        if (b.oom) {
            u->oom = true;
            cbc_buf_release(&b);
        } else {
            free(first->insert);
            first->insert = cbc_buf_detach(&b);
        }
    } else if (first) {
        lint_note(r, "%s emits no rerun-if directive, so cargo reruns it after any change "
                     "in its package; once it declares a variable cargo watches only what "
                     "it declares: add cargo:rerun-if-changed= for each file it reads",
                  script);
    }
    lint_strset_free(&paths);
}

/* The kernels modelled helpers compile without declaring them: each
 * source (each file a glob matches now) that no rerun-if-changed= covers. */
static void helper_kernel_findings(struct unit *u, const char *root)
{
    for (size_t i = 0; i < u->n_nvruns; i++) {
        const struct nvrun *nr = &u->nvruns[i];
        for (size_t k = 0; !nr->declares && k < nr->srcs.n; k++) {
            const char *src = nr->srcs.v[k];
            if (covered(&u->changed, src))
                continue;
            if (!has_glob(src)) {
                source_finding(u, root, &nr->site, src, nr->call, NULL, false);
                continue;
            }
            /* a glob: the files it matches now, each covered or not */
            struct lint_strset left = {0};
            size_t budget = 20000;
            char *gd = glob_dir(src);
            if (root && gd)
                glob_files(u, root, src, 0, gd, true, &left, &budget);
            free(gd);
            if (left.n > 1)
                qsort(left.v, left.n, sizeof *left.v, cmp_str);
            if (left.n)
                source_finding(u, root, &nr->site, src, nr->call, &left, false);
            lint_strset_free(&left);
        }
        if (!nr->declares && nr->unknown && nr->srcs.n == 0 && u->changed.n == 0)
            lint_note(u->r, "%s: cannot tell which kernels %s compiles; once the script declares "
                            "anything cargo watches only what it declares: print "
                            "cargo:rerun-if-changed= for their directory",
                      u->files[0].src.path, nr->call);
    }
}

/* nvcc run by hand: the kernel sources the script's strings name that no
 * rerun-if-changed= covers, or, when it names none and declares no
 * path, a finding at the nvcc call. */
static void nvcc_source_findings(struct unit *u, const char *root)
{
    struct lint_strset srcs = {0};
    for (int fi = 0; fi < u->n_files; fi++)
        for (size_t i = 0; i < u->files[fi].n; i++) {
            const char *s = rust_str_of(&u->files[fi], i);
            if (s && is_cuda_source(s) && !strchr(s, '{') && !strchr(s, '\n') &&
                (has_glob(s) || package_path(root, s)) && !covered(&u->changed, s) &&
                !lint_strset_add(&srcs, s))
                u->oom = true;
        }
    const struct site *ns = &u->nvcc_site;
    for (size_t k = 0; k < srcs.n; k++) {
        const char *p = srcs.v[k];
        while (!strncmp(p, "./", 2))
            p += 2;
        if (!covered(&u->changed, p))
            source_finding(u, root, ns, p, NULL, NULL, false);
    }
    if (srcs.n == 0 && u->changed.n == 0) {
        const struct rfile *nf = &u->files[ns->file];
        if (!lint_add(u->r, CBC_LINT_NVCC_SOURCES, &nf->src, ns->off, NULL,
                      "the build script runs nvcc and declares rerun-if directives but no "
                      "rerun-if-changed: cargo will not rebuild the kernels when their "
                      "sources change",
                      "println!(\"cargo:rerun-if-changed=DIR\"); for the directory of the "
                      "kernel sources",
                      NULL, 0))
            u->oom = true;
    }
    lint_strset_free(&srcs);
}

/* What the run leaves to check once it is over: the files a script that
 * declared nothing names, the kernels and headers nvcc compiles that no
 * rerun-if-changed= covers. */
static void after_run(struct unit *u, size_t first_finding)
{
    const char *script = u->files[0].src.path;
    char *root = package_root(script);
    if (!root) /* a script given without its crate: paths are taken from its directory */
        root = cbc_path_dir(script);
    if (!u->has_rerun && u->env_findings > 0)
        declare_named_files(u, first_finding, root);
    bool declares = u->has_rerun || u->env_findings > 0;
    /* kernels a modelled helper compiles without declaring them */
    if (declares && !u->cubincache_emits)
        helper_kernel_findings(u, root);
    /* the headers the kernels include: inputs of nvcc as much as the kernels */
    if (declares && !u->cubincache_emits && root && !u->changed_unknown)
        header_findings(u, root);
    if (u->nvcc && !u->cubincache_emits && declares && !u->changed_unknown)
        nvcc_source_findings(u, root);
    free(root);
}

/* A script that prints rerun-if-changed= for a path that does not exist
 * (a literal glob, a file of another directory) on every path is rerun by
 * cargo at every build: nothing it reads or compiles goes stale, and its
 * crate is never fresh. Its findings become one note. */
static void always_rerun(struct unit *u, size_t first_finding)
{
    char *root = package_root(u->files[0].src.path);
    if (!root)
        root = cbc_path_dir(u->files[0].src.path);
    const char *missing = NULL;
    for (size_t i = 0; root && i < u->printed.n && !missing; i++) {
        const char *p = u->printed.v[i];
        char *full = p[0] == '/' ? cbc_strdup(p) : cbc_path_join(root, p);
        struct stat st;
        if (full && lstat(full, &st) != 0)
            missing = p;
        free(full);
    }
    if (missing) {
        struct cbc_lint_result *r = u->r;
        size_t w = first_finding, dropped = 0;
        for (size_t i = first_finding; i < r->n; i++) {
            struct cbc_lint_finding *g = &r->f[i];
            bool ours = false;
            for (int fi = 0; fi < u->n_files && !ours; fi++)
                ours = !strcmp(g->file, u->files[fi].src.path);
            if (ours && (g->rule == CBC_LINT_ENV_UNDECLARED || g->rule == CBC_LINT_NVCC_SOURCES)) {
                free(g->file), free(g->var), free(g->why), free(g->fix), free(g->insert);
                free(g->via);
                dropped++;
                continue;
            }
            r->f[w++] = *g;
        }
        r->n = w;
        lint_note(r, "%s prints cargo:rerun-if-changed=%s, which does not exist: cargo reruns "
                     "the script at every build, so what it reads cannot go stale (%zu "
                     "finding(s) not reported) and the crate is never fresh; print paths that "
                     "exist",
                  u->files[0].src.path, missing, dropped);
    }
    free(root);
}

static void run_root(struct unit *u, struct rfn *fn)
{
    truncate_to(u, &(struct frame){.exit_h = SIZE_MAX}, 0);
    u->n_cpath = 0;
    u->root_exited = false;
    run_fn(u, fn, NULL, NULL, 0, false);
    report_reads(u);
}

enum cbc_status lint_rust_script(const char *path, const char *via, const struct lint_helpers *h,
                                 struct cbc_lint_result *r, struct cbc_err *err)
{
    struct unit *u = calloc(1, sizeof *u);
    if (!u)
        return cbc_err_oom(err);
    u->quiet_file = -1;
    u->r = r;
    u->h = h;
    size_t first_finding = r->n;
    enum cbc_status st = add_file(u, path, via, err);
    if (st == CBC_OK) {
        struct rfn *main_fn = NULL;
        for (size_t i = 0; i < u->n_fns; i++)
            if (u->fns[i].file == 0 && !strcmp(u->fns[i].name, "main"))
                main_fn = &u->fns[i];
        if (main_fn)
            run_root(u, main_fn);
        /* what main does not reach (called through a path the lint cannot
         * follow, a closure, a trait, another cfg's main): from an empty
         * state */
        for (size_t i = 0; i < u->n_fns && !u->budget; i++)
            if (!u->fns[i].reached)
                run_root(u, &u->fns[i]);
        after_run(u, first_finding);
        always_rerun(u, first_finding);
        if (u->budget)
            lint_note(r, "%s: too complex to follow to the end; the lint stopped early", path);
        if (u->oom)
            st = cbc_err_oom(err);
    }
    for (size_t i = 0; i < u->n_reads; i++) { /* what an error left pending */
        free(u->reads[i].name);
        free(u->reads[i].path);
    }
    for (int i = 0; i < u->n_files; i++) {
        struct rfile *f = &u->files[i];
        for (size_t k = 0; k < f->n_strs; k++)
            free(f->strs[k]);
        free(f->strs);
        free(f->t);
        lint_src_free(&f->src);
    }
    for (size_t i = 0; i < u->n_fns; i++) {
        free(u->fns[i].name);
        for (size_t k = 0; k < u->fns[i].n_params; k++)
            free(u->fns[i].params[k]);
    }
    for (size_t i = 0; i < u->n_fns; i++)
        lint_strset_free(&u->fns[i].ret_names);
    free(u->fns);
    for (size_t i = 0; i < u->n_spans; i++)
        free(u->spans[i].name);
    free(u->spans);
    for (size_t i = 0; i < u->n_consts; i++) {
        free(u->consts[i].name);
        val_free(&u->consts[i].v);
    }
    free(u->consts);
    for (size_t i = 0; i < u->n_imports; i++) {
        free(u->imports[i].name);
        free(u->imports[i].path);
    }
    free(u->imports);
    for (size_t i = 0; i < u->n_decl; i++)
        free(u->decl[i]);
    free(u->decl);
    free(u->reads);
    free(u->cpath);
    for (size_t i = 0; i < u->n_nvruns; i++)
        lint_strset_free(&u->nvruns[i].srcs);
    free(u->nvruns);
    lint_strset_free(&u->changed);
    lint_strset_free(&u->printed);
    free(u);
    return st;
}
