/* rust.c: the lint of a cargo build script: every read of an environment
 * variable (std::env::var, var_os, a bare var() imported from std::env,
 * env::vars()) must come after a `cargo:rerun-if-env-changed=` (or
 * `cargo::`) for it on every path that reaches the read; a script that runs
 * nvcc must declare its kernel sources with rerun-if-changed.
 *
 * How: the tokens of rust_lex.c, then an abstract run of `fn main` over the
 * token tree:
 * a stack of declared names grows as declarations run and shrinks when a
 * conditional block (if, else, match arm, loop, closure) ends; a call of a
 * function of the script runs its body with its parameters bound to the
 * names passed, so a helper that declares its parameter before reading it
 * makes its callers clean and one that does not makes each call site a
 * finding. What a callee declares after an early exit (return, ?, panic!,
 * exit) does not count for its caller. Names resolve through string
 * literals, consts, statics, `let` bindings of literals and `for` loops over
 * literal lists. Functions main never reaches are run too, from an empty
 * state, so a read behind a call the lint cannot follow is still seen.
 *
 * Invariants: every token access is bounds-checked against the file's
 * token count; a file's tokens are its own (no finding from text inside a
 * comment, string or macro_rules! body); the abstract run is bounded (call
 * depth and a step budget), so a hostile script cannot make it hang.
 */
#include "rust_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_FILES 64
#define MAX_DEPTH 12
#define MAX_PARAMS 16
#define STEP_BUDGET 4000000u
#define MAX_NEST 200 /* blocks and array literals followed inside one another */

struct rfn {
    char *name;
    int file;
    size_t body; /* index of the body's '{' */
    char *params[MAX_PARAMS];
    size_t n_params;
    bool reached;
    bool method; /* takes self: never what a bare name( calls */
};

/* A value that may name environment variables: the names (empty when the
 * lint cannot tell) and, for a parameter, where its caller passed it. */
struct site {
    int file;
    size_t off;       /* where the finding points */
    size_t stmt_tok;  /* the first token of the statement to insert before */
};
struct val {
    struct lint_strset names;
    bool has_origin;
    struct site origin;
};

struct binding {
    char *name;
    struct val v;
};

struct frame {
    int file;
    struct binding *b;
    size_t nb, cap;
    size_t exit_h; /* SIZE_MAX until the function may have exited early */
    size_t depth;
};

struct unit {
    struct rfile files[MAX_FILES];
    int n_files;
    struct rfn *fns;
    size_t n_fns, cap_fns;
    struct binding *consts; /* file-level const and static of strings */
    size_t n_consts, cap_consts;
    bool imp_var, imp_var_os, imp_vars, imp_vars_os;
    bool cargo2;     /* the script already writes cargo:: directives */
    bool has_rerun;  /* it emits some rerun-if directive */
    char **decl;     /* the declared names on the current path */
    size_t n_decl, cap_decl;
    struct lint_strset changed; /* rerun-if-changed paths */
    bool changed_unknown;       /* one the lint could not resolve */
    struct site nvcc_site;
    bool nvcc, cubincache_emits;
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
}

static bool val_copy(struct val *dst, const struct val *src)
{
    memset(dst, 0, sizeof *dst);
    dst->has_origin = src->has_origin;
    dst->origin = src->origin;
    for (size_t i = 0; i < src->names.n; i++)
        if (!lint_strset_add(&dst->names, src->names.v[i]))
            return false;
    return true;
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

/* The names an expression [b, e) stands for: "X", &"X", CONST, &CONST,
 * binding, binding.as_str(), ["A", "B"], &["A", B_CONST], x.iter(). False
 * (v empty) when the lint cannot tell. */
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

static bool resolve_at(struct unit *u, const struct frame *fr, const struct rfile *f, size_t b,
                       size_t e, struct val *v)
{
    while (b < e && (rust_is(f, b, "&") || rust_is(f, b, "*")))
        b++;
    /* drop .as_str() .as_ref() .to_string() .iter() .into_iter() .to_owned() */
    while (e >= b + 4 && rust_is(f, e - 1, ")") && rust_is(f, e - 2, "(") && rust_is(f, e - 4, ".") &&
           (rust_is(f, e - 3, "as_str") || rust_is(f, e - 3, "as_ref") || rust_is(f, e - 3, "to_string") ||
            rust_is(f, e - 3, "iter") || rust_is(f, e - 3, "into_iter") || rust_is(f, e - 3, "to_owned") ||
            rust_is(f, e - 3, "copied") || rust_is(f, e - 3, "cloned")))
        e -= 4;
    if (b >= e)
        return false;
    if (e == b + 1 && f->t[b].k == T_STR) {
        if (!lint_strset_add(&v->names, rust_str_of(f, b)))
            u->oom = true;
        return true;
    }
    if (e == b + 1 && rust_is_ident(f, b)) {
        const struct val *x = lookup(u, fr, f->src.text + f->t[b].off, f->t[b].len);
        if (!x || x->names.n == 0)
            return false;
        if (!val_copy(v, x))
            u->oom = true;
        return true;
    }
    if (rust_is(f, b, "[") && rust_close_of(f, b) == e - 1) {
        size_t i = b + 1;
        while (i < e - 1) {
            size_t j = i;
            while (j < e - 1 && !rust_is(f, j, ",")) {
                if (rust_is(f, j, "(") || rust_is(f, j, "[") || rust_is(f, j, "{"))
                    j = rust_close_of(f, j);
                j++;
            }
            struct val one;
            if (!resolve(u, fr, f, i, j, &one)) {
                val_free(v);
                return false;
            }
            for (size_t k = 0; k < one.names.n; k++)
                if (!lint_strset_add(&v->names, one.names.v[k]))
                    u->oom = true;
            val_free(&one);
            i = j + 1;
        }
        return v->names.n > 0;
    }
    return false;
}

/* ---- the declared stack -------------------------------------------------- */

static bool declared(const struct unit *u, const char *name)
{
    for (size_t i = 0; i < u->n_decl; i++)
        if (!strcmp(u->decl[i], name))
            return true;
    return false;
}

static void declare(struct unit *u, const char *name)
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

/* ---- findings ------------------------------------------------------------ */

/* The text --fix inserts before the statement at token `stmt`: a line in
 * its indentation, or, where the statement does not start its line, the
 * statement followed by a space. */
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

static void report_read(struct unit *u, const struct frame *fr, const struct val *v, size_t tok,
                        size_t stmt)
{
    for (size_t i = 0; i < v->names.n; i++) {
        const char *name = v->names.v[i];
        if (cargo_sets(name) || declared(u, name))
            continue;
        struct site s = v->has_origin ? v->origin
                                      : (struct site){fr->file, u->files[fr->file].t[tok].off, stmt};
        char *directive = cbc_asprintf("cargo%srerun-if-env-changed=%s", u->cargo2 ? "::" : ":",
                                       name);
        size_t at = 0;
        char *ins = directive ? insertion(u, s.file, s.stmt_tok, directive, &at) : NULL;
        char *why = cbc_asprintf("%s is read without %s before it on this path: cargo will not "
                                 "rerun the build script when %s changes and keeps its old "
                                 "output",
                                 name, directive ? directive : "a declaration", name);
        char *fix = cbc_asprintf("println!(\"%s\"); before the read (cubincache lint --fix "
                                 "inserts it)",
                                 directive ? directive : "");
        if (!ins || !why || !fix ||
            !lint_add(u->r, CBC_LINT_ENV_UNDECLARED, &u->files[s.file].src, s.off, name, why,
                      fix, ins, at))
            u->oom = true;
        else
            u->env_findings++;
        free(directive);
        free(ins);
        free(why);
        free(fix);
        declare(u, name); /* once per path: after the fix it is declared here */
    }
}

/* ---- directives in println!/print! --------------------------------------- */

/* The arguments of a macro call (...) after the format string: ranges. */
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
        size_t j = i;
        while (j < close && !rust_is(f, j, ",")) {
            if (rust_is(f, j, "(") || rust_is(f, j, "[") || rust_is(f, j, "{"))
                j = rust_close_of(f, j);
            j++;
        }
        if (j > close)
            j = close;
        if (j > i) {
            a->b[a->n] = i;
            a->e[a->n] = j;
            a->n++;
        }
        i = j + 1;
    }
}

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
    if (!x)
        return false;
    if (!val_copy(v, x))
        u->oom = true;
    return true;
}

/* Each directive in the format string of println!/print! at `mac`
 * (the macro's name token): env declarations are declared now;
 * rerun-if-changed paths are collected. */
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
        const char *d = NULL;
        bool env = false;
        static const char *const forms[] = {"cargo:rerun-if-env-changed=",
                                            "cargo::rerun-if-env-changed=",
                                            "cargo:rerun-if-changed=", "cargo::rerun-if-changed="};
        for (size_t k = 0; k < 4 && !d; k++)
            if (!strncmp(p, forms[k], strlen(forms[k]))) {
                d = p + strlen(forms[k]);
                env = k < 2;
            }
        /* positional {} before this directive on the line still count */
        for (const char *q = p; q < (d ? d : line_end); q++)
            if (*q == '{' && q[1] == '{')
                q++;
            else if (*q == '{' && q[1] == '}')
                next_pos++;
        if (d) {
            struct val v = {0};
            bool ok;
            if (*d == '{' && d[1] != '{') {
                const char *ce = memchr(d, '}', (size_t)(line_end - d));
                ok = ce && ce + 1 == line_end &&
                     placeholder(u, fr, f, &a, 1, d + 1, (size_t)(ce - d - 1), &next_pos, &v);
            } else if (!memchr(d, '{', (size_t)(line_end - d))) {
                char *name = cbc_strndup(d, (size_t)(line_end - d));
                ok = name && lint_strset_add(&v.names, name);
                free(name);
            } else {
                ok = false;
            }
            for (size_t k = 0; ok && k < v.names.n; k++) {
                if (env) {
                    declare(u, v.names.v[k]);
                } else {
                    const char *path = v.names.v[k];
                    while (!strncmp(path, "./", 2))
                        path += 2;
                    if (!lint_strset_add(&u->changed, path))
                        u->oom = true;
                }
            }
            if (!ok && !env)
                u->changed_unknown = true;
            val_free(&v);
        }
        p = *line_end ? line_end + 1 : line_end;
    }
}

/* ---- the abstract run ---------------------------------------------------- */

enum scope { S_UNCOND, S_COND, S_MATCH };

static void run_block(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                      size_t parent_stmt, const char *for_var, const struct val *for_val);

static struct rfn *find_fn(struct unit *u, const char *name, size_t len)
{
    for (size_t i = 0; i < u->n_fns; i++)
        if (!u->fns[i].method && strlen(u->fns[i].name) == len &&
            !memcmp(u->fns[i].name, name, len))
            return &u->fns[i];
    return NULL;
}

static void run_fn(struct unit *u, struct rfn *fn, struct val *args, size_t n_args,
                   size_t depth)
{
    fn->reached = true;
    if (depth > MAX_DEPTH)
        return;
    struct frame fr = {.file = fn->file, .exit_h = SIZE_MAX, .depth = depth};
    for (size_t i = 0; i < fn->n_params && i < n_args; i++) {
        struct val v;
        if (!val_copy(&v, &args[i]) || !bind(&fr.b, &fr.nb, &fr.cap, cbc_strdup(fn->params[i]), &v))
            u->oom = true;
    }
    size_t h = u->n_decl;
    run_block(u, &fr, fn->body, S_UNCOND, fn->body + 1, NULL, NULL);
    if (fr.exit_h != SIZE_MAX && fr.exit_h >= h)
        truncate_to(u, &fr, fr.exit_h);
    for (size_t i = 0; i < fr.nb; i++) {
        free(fr.b[i].name);
        val_free(&fr.b[i].v);
    }
    free(fr.b);
}

/* `fn` at i: the index past the item (its body's '}' + 1, or past ';'). */
static size_t skip_item(const struct rfile *f, size_t i, size_t end)
{
    while (i < end && !rust_is(f, i, "{") && !rust_is(f, i, ";")) {
        if (rust_is(f, i, "(") || rust_is(f, i, "["))
            i = rust_close_of(f, i);
        i++;
    }
    if (i < end && rust_is(f, i, "{"))
        i = rust_close_of(f, i);
    return i + 1;
}

static bool exits(const struct rfile *f, size_t i)
{
    if (rust_is(f, i, "return") || rust_is(f, i, "?"))
        return true;
    if ((rust_is(f, i, "panic") || rust_is(f, i, "unreachable") || rust_is(f, i, "todo") ||
         rust_is(f, i, "unimplemented")) && rust_is(f, i + 1, "!"))
        return true;
    return rust_is(f, i, "exit") && rust_is(f, i + 1, "(") && i > 0 && rust_is(f, i - 1, "::");
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

static void read_env(struct unit *u, struct frame *fr, const struct rfile *f, size_t i,
                     size_t open, bool all, size_t stmt)
{
    if (all) {
        char *why = cbc_strdup("the build script reads the whole environment (env::vars): "
                               "cargo cannot know which variables change its output");
        char *fix = cbc_strdup("read the variables it needs by name, each after its "
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
        report_read(u, fr, &v, at, stmt);
    }
    val_free(&v);
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
    run_fn(u, fn, vals, n, fr->depth + 1);
    for (size_t k = 0; k < n; k++)
        val_free(&vals[k]);
}

/* nvcc, the CUDA builder crates, and cubincache with --emit */
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
    } else if (rust_is(f, i, "cuda") && i > 0 && rust_is(f, i - 1, ".") && rust_is(f, i + 1, "(") &&
               rust_is(f, i + 2, "true")) {
        hit = true; /* cc::Build::new().cuda(true) */
    } else if (rust_is(f, i, "bindgen_cuda") || rust_is(f, i, "cuda_builder") || rust_is(f, i, "CudaBuilder")) {
        hit = true;
    }
    if (hit && !u->nvcc) {
        u->nvcc = true;
        u->nvcc_site = (struct site){fr->file, f->t[i].off, stmt};
    }
}

/* The block whose '{' is at `open`, run as `kind`. Reads report at the
 * statement they are in (parent_stmt inside a match's arms). */
static void run_block_at(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                         size_t parent_stmt, const char *for_var, const struct val *for_val);

static void run_block(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                      size_t parent_stmt, const char *for_var, const struct val *for_val)
{
    if (u->depth >= MAX_NEST) { /* a hostile file's {{{{...}}}}: the stack stays bounded */
        u->budget = true;
        return;
    }
    u->depth++;
    run_block_at(u, fr, open, kind, parent_stmt, for_var, for_val);
    u->depth--;
}

static void run_block_at(struct unit *u, struct frame *fr, size_t open, enum scope kind,
                         size_t parent_stmt, const char *for_var, const struct val *for_val)
{
    const struct rfile *f = &u->files[fr->file];
    size_t close = rust_close_of(f, open);
    if (close > f->n)
        close = f->n;
    size_t h0 = u->n_decl;
    size_t nb0 = fr->nb;
    if (for_var) {
        struct val v;
        if (!val_copy(&v, for_val) || !bind(&fr->b, &fr->nb, &fr->cap, cbc_strdup(for_var), &v))
            u->oom = true;
    }
    size_t stmt = open + 1;
    enum { P_NONE, P_COND, P_MATCH, P_FOR, P_UNCOND } pending = P_NONE;
    char *loop_var = NULL;
    struct val loop_val = {0};
    bool loop_known = false;
    int depth = 0;
    for (size_t i = open + 1; i < close; i++) {
        if (++u->steps > STEP_BUDGET) {
            u->budget = true;
            break;
        }
        size_t anchor = kind == S_MATCH ? parent_stmt : stmt;
        const struct tok *t = &f->t[i];
        if (kind == S_MATCH && depth == 0 && rust_is(f, i, ",")) {
            truncate_to(u, fr, h0); /* each arm starts from the match's state */
            continue;
        }
        if (rust_is(f, i, "(") || rust_is(f, i, "[")) {
            depth++;
            continue;
        }
        if (rust_is(f, i, ")") || rust_is(f, i, "]")) {
            depth--;
            continue;
        }
        if (rust_is(f, i, ";") && depth <= 0) {
            stmt = i + 1;
            pending = P_NONE;
            depth = 0;
            continue;
        }
        if (rust_is(f, i, "#") && (rust_is(f, i + 1, "[") || (rust_is(f, i + 1, "!") && rust_is(f, i + 2, "[")))) {
            i = rust_close_of(f, rust_is(f, i + 1, "[") ? i + 1 : i + 2); /* an attribute */
            if (i >= close)
                break;
            continue; /* a fix goes before the attribute, which stays with its item */
        }
        if (depth == 0 && (rust_is(f, i, "fn") || rust_is(f, i, "impl") || rust_is(f, i, "mod") ||
                           rust_is(f, i, "struct") || rust_is(f, i, "enum") || rust_is(f, i, "trait") ||
                           rust_is(f, i, "use") || (rust_is(f, i, "macro_rules") && rust_is(f, i + 1, "!")))) {
            if (rust_is(f, i, "fn") && !rust_is_ident(f, i + 1)) /* fn(x) types */
                continue;
            i = skip_item(f, i, close) - 1;
            stmt = i + 1;
            continue;
        }
        if (t->k == T_IDENT && depth == 0) {
            if (rust_is(f, i, "if") || rust_is(f, i, "while") || rust_is(f, i, "else") || rust_is(f, i, "loop"))
                pending = P_COND;
            else if (rust_is(f, i, "match"))
                pending = P_MATCH;
            else if (rust_is(f, i, "unsafe") || rust_is(f, i, "async"))
                pending = pending == P_NONE ? P_UNCOND : pending;
            else if (rust_is(f, i, "for") && rust_is_ident(f, i + 1) && rust_is(f, i + 2, "in")) {
                pending = P_FOR;
                free(loop_var);
                val_free(&loop_val);
                loop_var = rust_ident_dup(f, i + 1);
                size_t e = i + 3;
                while (e < close && !rust_is(f, e, "{")) {
                    if (rust_is(f, e, "(") || rust_is(f, e, "["))
                        e = rust_close_of(f, e);
                    e++;
                }
                loop_known = resolve(u, fr, f, i + 3, e, &loop_val);
            } else if ((rust_is(f, i, "let") || rust_is(f, i, "const") || rust_is(f, i, "static")) &&
                       i == stmt) {
                size_t n = i + 1;
                if (rust_is(f, n, "mut"))
                    n++;
                size_t eq = n + 1;
                if (rust_is_ident(f, n)) {
                    while (eq < close && !rust_is(f, eq, "=") && !rust_is(f, eq, ";")) {
                        if (rust_is(f, eq, "(") || rust_is(f, eq, "[") || rust_is(f, eq, "{"))
                            eq = rust_close_of(f, eq);
                        eq++;
                    }
                }
                if (rust_is_ident(f, n) && rust_is(f, eq, "=")) {
                    size_t e = eq + 1;
                    while (e < close && !rust_is(f, e, ";")) {
                        if (rust_is(f, e, "(") || rust_is(f, e, "[") || rust_is(f, e, "{"))
                            e = rust_close_of(f, e);
                        e++;
                    }
                    struct val v;
                    if (resolve(u, fr, f, eq + 1, e, &v) &&
                        !bind(&fr->b, &fr->nb, &fr->cap, rust_ident_dup(f, n), &v))
                        u->oom = true;
                }
            }
        }
        if (exits(f, i) && fr->exit_h == SIZE_MAX)
            fr->exit_h = u->n_decl;
        if (rust_is(f, i, "{")) {
            size_t j = rust_close_of(f, i);
            enum scope sk = S_COND;
            bool same_scope = false;
            const char *fv = NULL;
            const struct val *fval = NULL;
            if (i > 0 && (rust_is(f, i - 1, "else") || rust_is(f, i - 1, "loop"))) {
                sk = S_COND;
            } else if (i > 0 && (rust_is(f, i - 1, "unsafe") || rust_is(f, i - 1, "async") ||
                                 rust_is(f, i - 1, "move") || rust_is(f, i - 1, "const"))) {
                sk = S_UNCOND;
            } else if (depth == 0 && pending == P_MATCH) {
                sk = S_MATCH;
            } else if (depth == 0 && pending == P_FOR) {
                sk = loop_known && loop_val.names.n > 0 ? S_UNCOND : S_COND;
                fv = loop_var;
                fval = &loop_val;
            } else if (depth == 0 && pending == P_COND) {
                sk = S_COND;
            } else if (depth == 0 && pending == P_UNCOND) {
                sk = S_UNCOND;
            } else if (i > 0 && (rust_is(f, i - 1, "|") || rust_is(f, i - 1, "=>"))) {
                sk = S_COND; /* a closure's body, a match arm's block */
            } else if (i > 0 && (rust_is_ident(f, i - 1) || rust_is(f, i - 1, ">")) &&
                       !rust_is(f, i - 1, "return") && !rust_is(f, i - 1, "in")) {
                same_scope = true; /* a struct literal: its fields are expressions here */
            } else {
                sk = S_UNCOND; /* a block expression */
            }
            if (depth == 0)
                pending = P_NONE;
            if (same_scope)
                continue; /* run its tokens in this block */
            run_block(u, fr, i, sk, anchor, fv, fval);
            i = j < close ? j : close;
            if (depth == 0 && !rust_is(f, i + 1, "else") && !rust_is(f, i + 1, ".") &&
                !rust_is(f, i + 1, "?") && !rust_is(f, i + 1, ",") && !rust_is(f, i + 1, ")") &&
                !rust_is(f, i + 1, ";") && kind != S_MATCH)
                stmt = i + 1;
            continue;
        }
        if (t->k != T_IDENT)
            continue;
        size_t open2;
        bool all;
        if (env_read(u, f, i, &open2, &all)) {
            read_env(u, fr, f, i, open2, all, anchor);
            continue;
        }
        if ((rust_is(f, i, "println") || rust_is(f, i, "print")) && rust_is(f, i + 1, "!") && rust_is(f, i + 2, "(")) {
            directives(u, fr, f, i + 2);
            continue;
        }
        tool_site(u, fr, f, i, anchor);
        if (rust_is(f, i + 1, "(") && !(i > 0 && (rust_is(f, i - 1, ".") || rust_is(f, i - 1, "fn")))) {
            struct rfn *fn = find_fn(u, f->src.text + t->off, t->len);
            if (fn)
                call_fn(u, fr, f, fn, i + 1, anchor);
        }
    }
    if (kind != S_UNCOND)
        truncate_to(u, fr, h0);
    free(loop_var);
    val_free(&loop_val);
    while (fr->nb > nb0) {
        fr->nb--;
        free(fr->b[fr->nb].name);
        val_free(&fr->b[fr->nb].v);
    }
}

/* ---- items: functions, consts, imports, modules -------------------------- */

static enum cbc_status add_file(struct unit *u, const char *path, struct cbc_err *err);

static void scan_use(struct unit *u, const struct rfile *f, size_t i, size_t end)
{
    /* use std::env::var; use std::env::{var, vars_os}; use std::env::*; */
    if (!(rust_is(f, i + 1, "std") && rust_is(f, i + 2, "::") && rust_is(f, i + 3, "env") && rust_is(f, i + 4, "::")))
        return;
    for (size_t k = i + 5; k < end && !rust_is(f, k, ";"); k++) {
        if (rust_is(f, k, "*"))
            u->imp_var = u->imp_var_os = u->imp_vars = u->imp_vars_os = true;
        else if (rust_is(f, k, "as") )
            k++; /* var as v: not followed */
        else if (rust_is(f, k, "var") && !rust_is(f, k + 1, "as"))
            u->imp_var = true;
        else if (rust_is(f, k, "var_os") && !rust_is(f, k + 1, "as"))
            u->imp_var_os = true;
        else if (rust_is(f, k, "vars") && !rust_is(f, k + 1, "as"))
            u->imp_vars = true;
        else if (rust_is(f, k, "vars_os") && !rust_is(f, k + 1, "as"))
            u->imp_vars_os = true;
    }
}

static enum cbc_status scan_items(struct unit *u, int fi, struct cbc_err *err)
{
    struct rfile *f = &u->files[fi];
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
        if (rust_is(f, i, "fn") && rust_is_ident(f, i + 1) && rust_is(f, po, "<")) {
            for (int d = 0; po < f->n; po++) {
                if (rust_is(f, po, "<"))
                    d++;
                else if (rust_is(f, po, ">") && --d == 0)
                    break;
            }
            po++;
        }
        if (rust_is(f, i, "fn") && rust_is_ident(f, i + 1) && rust_is(f, po, "(") &&
            !(i > 0 && rust_is(f, i - 1, "("))) {
            size_t pc = rust_close_of(f, po);
            size_t b = pc + 1;
            while (b < f->n && !rust_is(f, b, "{") && !rust_is(f, b, ";")) {
                if (rust_is(f, b, "(") || rust_is(f, b, "["))
                    b = rust_close_of(f, b);
                b++;
            }
            if (b >= f->n || !rust_is(f, b, "{"))
                continue;
            if (!cbc_grow(&u->fns, u->n_fns, &u->cap_fns, sizeof *u->fns, 16))
                return cbc_err_oom(err);
            struct rfn *fn = &u->fns[u->n_fns];
            memset(fn, 0, sizeof *fn);
            fn->name = rust_ident_dup(f, i + 1);
            fn->file = fi;
            fn->body = b;
            if (!fn->name)
                return cbc_err_oom(err);
            u->n_fns++;
            /* parameters: `name: T` at the top level of (...) */
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
                    if (rust_is(f, k, "(") || rust_is(f, k, "[") || rust_is(f, k, "{") || rust_is(f, k, "<")) {
                        if (rust_is(f, k, "<")) { /* generics: skip to the matching '>' */
                            int d = 0;
                            for (; k < pc; k++) {
                                if (rust_is(f, k, "<"))
                                    d++;
                                else if (rust_is(f, k, ">") && --d == 0)
                                    break;
                            }
                        } else {
                            k = rust_close_of(f, k);
                        }
                    }
                    k++;
                }
                k++;
            }
            for (size_t q = 0; q < fn->n_params; q++)
                if (!fn->params[q])
                    return cbc_err_oom(err);
            continue;
        }
        if ((rust_is(f, i, "const") || rust_is(f, i, "static")) && !rust_is(f, i + 1, "fn")) {
            size_t n = i + 1;
            if (rust_is(f, n, "mut"))
                n++;
            size_t eq = n + 1;
            while (eq < f->n && !rust_is(f, eq, "=") && !rust_is(f, eq, ";") && !rust_is(f, eq, "{")) {
                if (rust_is(f, eq, "(") || rust_is(f, eq, "["))
                    eq = rust_close_of(f, eq); /* [&str; 2] */
                eq++;
            }
            if (rust_is_ident(f, n) && rust_is(f, eq, "=")) {
                size_t e = eq + 1;
                while (e < f->n && !rust_is(f, e, ";")) {
                    if (rust_is(f, e, "(") || rust_is(f, e, "[") || rust_is(f, e, "{"))
                        e = rust_close_of(f, e);
                    e++;
                }
                struct val v;
                if (resolve(u, NULL, f, eq + 1, e, &v) &&
                    !bind(&u->consts, &u->n_consts, &u->cap_consts, rust_ident_dup(f, n), &v))
                    return cbc_err_oom(err);
            }
            continue;
        }
        /* mod NAME; and #[path = "x.rs"] mod NAME; and include!("x.rs") */
        if (rust_is(f, i, "mod") && rust_is_ident(f, i + 1) && rust_is(f, i + 2, ";")) {
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
            if (!dir || !name || !stem || !sub || !c1 || !c2) {
                free(dir), free(name), free(stem), free(sub), free(c1), free(c2);
                return cbc_err_oom(err);
            }
            enum cbc_status st = CBC_OK;
            if (cbc_is_file(c1))
                st = add_file(u, c1, err);
            else if (!path_attr && cbc_is_file(c2))
                st = add_file(u, c2, err);
            else
                lint_note(u->r, "%s: module '%s' not found next to it; its reads are not linted",
                          f->src.path, name);
            free(dir), free(name), free(stem), free(sub), free(c1), free(c2);
            if (st != CBC_OK)
                return st;
            f = &u->files[fi];
            continue;
        }
        if (rust_is(f, i, "include") && rust_is(f, i + 1, "!") && rust_is(f, i + 2, "(") && rust_str_of(f, i + 3) &&
            rust_is(f, i + 4, ")")) {
            char *dir = cbc_path_dir(f->src.path);
            char *p = dir ? cbc_asprintf("%s/%s", dir, rust_str_of(f, i + 3)) : NULL;
            enum cbc_status st = CBC_OK;
            if (!p)
                st = cbc_err_oom(err);
            else if (cbc_is_file(p))
                st = add_file(u, p, err);
            free(dir);
            free(p);
            if (st != CBC_OK)
                return st;
            f = &u->files[fi];
        }
    }
    return CBC_OK;
}

static enum cbc_status add_file(struct unit *u, const char *path, struct cbc_err *err)
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
    if (!*s || s[0] == '/' || strstr(s, "..") || strpbrk(s, "{:= \t\n") ||
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

static bool covered(const struct lint_strset *changed, const char *path)
{
    while (!strncmp(path, "./", 2))
        path += 2;
    for (size_t i = 0; i < changed->n; i++) {
        size_t n = strlen(changed->v[i]);
        while (n > 0 && changed->v[i][n - 1] == '/')
            n--;
        if (!strncmp(path, changed->v[i], n) && (path[n] == '\0' || path[n] == '/'))
            return true;
    }
    return false;
}

static void after_run(struct unit *u, size_t first_finding)
{
    struct cbc_lint_result *r = u->r;
    const char *script = u->files[0].src.path;
    char *root = package_root(script);
    /* cargo rescans the whole package while a script emits no rerun-if
     * directive; the fix's first one ends that, so it declares the files
     * the script names as well */
    if (!u->has_rerun && u->env_findings > 0) {
        /* the earliest edit in the script itself, else the first one */
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
        struct lint_strset paths = {0};
        for (int fi = 0; root && fi < u->n_files; fi++)
            for (size_t i = 0; i < u->files[fi].n; i++) {
                const char *s = rust_str_of(&u->files[fi], i);
                if (s && package_path(root, s) && !covered(&u->changed, s) &&
                    !lint_strset_add(&paths, s))
                    u->oom = true;
            }
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
    if (u->nvcc && !u->cubincache_emits && (u->has_rerun || u->env_findings > 0) &&
        !u->changed_unknown) {
        struct lint_strset srcs = {0};
        for (int fi = 0; fi < u->n_files; fi++)
            for (size_t i = 0; i < u->files[fi].n; i++) {
                const char *s = rust_str_of(&u->files[fi], i);
                if (s && is_cuda_source(s) && !strchr(s, '{') && !strchr(s, '\n') &&
                    !covered(&u->changed, s) && !lint_strset_add(&srcs, s))
                    u->oom = true;
            }
        const struct site *ns = &u->nvcc_site;
        const struct rfile *nf = &u->files[ns->file];
        for (size_t k = 0; k < srcs.n; k++) {
            const char *p = srcs.v[k];
            while (!strncmp(p, "./", 2))
                p += 2;
            char *d = cbc_asprintf("cargo%srerun-if-changed=%s", u->cargo2 ? "::" : ":", p);
            size_t at = 0;
            char *ins = d ? insertion(u, ns->file, ns->stmt_tok, d, &at) : NULL;
            char *why = cbc_asprintf("the build script compiles %s with nvcc but declares "
                                     "rerun-if directives without it: cargo will not rebuild "
                                     "the kernel when %s changes",
                                     p, p);
            char *fix = cbc_asprintf("println!(\"%s\"); (cubincache lint --fix inserts it)",
                                     d ? d : "");
            if (!ins || !why || !fix ||
                !lint_add(r, CBC_LINT_NVCC_SOURCES, &nf->src, ns->off, p, why, fix, ins, at))
                u->oom = true;
            free(d), free(ins), free(why), free(fix);
        }
        if (srcs.n == 0 && u->changed.n == 0) {
            if (!lint_add(r, CBC_LINT_NVCC_SOURCES, &nf->src, ns->off, NULL,
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
    free(root);
}

enum cbc_status lint_rust_script(const char *path, struct cbc_lint_result *r, struct cbc_err *err)
{
    struct unit *u = calloc(1, sizeof *u);
    if (!u)
        return cbc_err_oom(err);
    u->r = r;
    size_t first_finding = r->n;
    enum cbc_status st = add_file(u, path, err);
    if (st == CBC_OK) {
        struct rfn *main_fn = NULL;
        for (size_t i = 0; i < u->n_fns; i++)
            if (u->fns[i].file == 0 && !strcmp(u->fns[i].name, "main"))
                main_fn = &u->fns[i];
        if (main_fn)
            run_fn(u, main_fn, NULL, 0, 0);
        /* what main does not reach (called through a path the lint cannot
         * follow, a closure, a trait): from an empty state */
        for (size_t i = 0; i < u->n_fns && !u->budget; i++) {
            if (u->fns[i].reached)
                continue;
            struct frame fr = {.file = u->fns[i].file, .exit_h = SIZE_MAX};
            truncate_to(u, &fr, 0);
            run_fn(u, &u->fns[i], NULL, 0, 0);
        }
        after_run(u, first_finding);
        if (u->budget)
            lint_note(r, "%s: too complex to follow to the end; the lint stopped early", path);
        if (u->oom)
            st = cbc_err_oom(err);
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
    free(u->fns);
    for (size_t i = 0; i < u->n_consts; i++) {
        free(u->consts[i].name);
        val_free(&u->consts[i].v);
    }
    free(u->consts);
    for (size_t i = 0; i < u->n_decl; i++)
        free(u->decl[i]);
    free(u->decl);
    lint_strset_free(&u->changed);
    free(u);
    return st;
}
