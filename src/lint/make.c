/* make.c: the lint of GNU make files (Makefile, GNUmakefile, makefile,
 * *.mk): a variable that may come from the environment or the make command
 * line (`?=`, `+=` onto nothing, set only under `ifndef X`, or never set),
 * or a `$(shell ...)` that asks the machine's GPU (nvidia-smi,
 * __nvcc_device_query), that chooses the arch flags (-arch, -gencode,
 * --generate-code, --gpu-architecture, -code, sm_XY) of an nvcc recipe of
 * a target that is not .PHONY. make compares only timestamps: after such a
 * value changes, `make` says the object is up to date and keeps the code
 * built for the old GPU (the incident, in make).
 *
 * How: logical lines (backslash continuations, comments), conditionals
 * whose tests taint what they guard, assignments (= := ::= ?= += !=,
 * override/export, target-specific ones), $(foreach) and $(eval) as the
 * cuda-samples Makefiles write them; taint flows through references, and a
 * variable's arch taint is the taint that reaches an arch flag in its
 * value. Two passes settle recursively expanded variables defined after
 * their use. The fix (one per file, at its end) makes the flags a
 * prerequisite: a stamp file rewritten only when the flags change
 * ($(file <)/$(file >), GNU make 4.2), added to every target through
 * .EXTRA_PREREQS (GNU make 4.3, hidden from $^), with a warning on older
 * makes.
 *
 * Invariants: scanning is bounded by the file's length; references nest at
 * most MK_NEST deep and an $(eval) at most MK_EVAL deep; a value's text is
 * never expanded, only searched, so no input makes the lint run anything.
 */
#include "lint_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define MK_NEST 32
#define MK_EVAL 4
#define MK_VARS 4096
#define MK_COND 64

struct mvar {
    char *name;
    struct lint_strset t;  /* the sources its value depends on */
    struct lint_strset at; /* the sources that reach an arch flag in its value */
    bool nvcc;             /* its value names nvcc */
    bool marker;           /* its value holds an arch flag itself */
    bool assigned, first_weak; /* set somewhere; the first assignment was ?= or += */
    bool only_guarded;     /* every assignment sits under a test of the variable itself */
    unsigned branch;       /* the branch of its last plain assignment */
};

struct mcond {
    struct lint_strset src; /* the sources the test depends on */
    char *guards;           /* the variable an ifndef / ifeq ($(X),) tests */
    unsigned id;            /* this branch (an else is another one) */
};

struct mk {
    const struct lint_src *s;
    struct mvar *v;
    size_t nv, cap;
    struct mcond cond[MK_COND];
    size_t depth;
    unsigned next_branch;
    struct lint_strset phony;
    struct lint_strset loopvars; /* $(foreach) variables in scope: not the environment */
    bool final;                  /* the last pass: recipes are judged */
    /* the rule being read */
    bool in_rule, rule_phony;
    size_t rule_off;
    char *rule_targets;
    /* what the fix stamps, and the sources reported already (one finding
     * per source and file) */
    struct lint_strset stamp, reported;
    struct cbc_lint_result *r;
    bool oom;
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

static struct mvar *var_get(struct mk *m, const char *name, size_t n, bool create)
{
    for (size_t i = 0; i < m->nv; i++)
        if (strlen(m->v[i].name) == n && !memcmp(m->v[i].name, name, n))
            return &m->v[i];
    if (!create || m->nv >= MK_VARS)
        return NULL;
    if (!cbc_grow(&m->v, m->nv, &m->cap, sizeof *m->v, 32)) {
        m->oom = true;
        return NULL;
    }
    struct mvar *v = &m->v[m->nv];
    memset(v, 0, sizeof *v);
    if (!(v->name = cbc_strndup(name, n))) {
        m->oom = true;
        return NULL;
    }
    v->only_guarded = true;
    m->nv++;
    return v;
}

static void add_all(struct mk *m, struct lint_strset *dst, const struct lint_strset *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (!lint_strset_add(dst, src->v[i]))
            m->oom = true;
}

/* Variables make sets itself, automatic ones, and those that describe the
 * machine rather than a build's choice (they do not change between two
 * builds on one machine): never reported as the environment. */
static bool make_own(const char *n, size_t len)
{
    static const char *const own[] = {"MAKE", "MAKEFLAGS", "MAKECMDGOALS", "CURDIR", "SHELL",
                                      "MAKEFILE_LIST", ".FEATURES", ".VARIABLES", "MAKELEVEL",
                                      "MFLAGS", ".DEFAULT_GOAL", "MAKE_VERSION", "MAKEFILES",
                                      ".SHELLFLAGS", ".RECIPEPREFIX", "VPATH", "GPATH",
                                      "SUFFIXES", ".LIBPATTERNS", "MAKE_HOST", "HOME", "PATH",
                                      "PWD", "USER", "OS", "CI"};
    if (len <= 2 && strchr("@<^+*?%|", n[0]))
        return true;
    for (size_t i = 0; i < CBC_ARRAY_LEN(own); i++)
        if (strlen(own[i]) == len && !memcmp(own[i], n, len))
            return true;
    return false;
}

/* Whether variable `name` may hold what the environment or the command
 * line gave it. */
static bool from_env(const struct mk *m, const char *name, size_t n)
{
    if (make_own(name, n))
        return false;
    for (size_t i = 0; i < m->loopvars.n; i++)
        if (strlen(m->loopvars.v[i]) == n && !memcmp(m->loopvars.v[i], name, n))
            return false;
    for (size_t i = 0; i < m->nv; i++)
        if (strlen(m->v[i].name) == n && !memcmp(m->v[i].name, name, n))
            return !m->v[i].assigned || m->v[i].first_weak || m->v[i].only_guarded;
    return true; /* never set in this file */
}

static bool arch_marker(const char *p, size_t n)
{
    /* a bare "-arch x86_64" is the host compiler's (clang on macOS) */
    static const char *const marks[] = {"-arch=", "-gencode", "--generate-code",
                                        "--gpu-architecture", "-code=", "--gpu-code", "sm_",
                                        "compute_"};
    for (size_t k = 0; k < CBC_ARRAY_LEN(marks); k++) {
        size_t ml = strlen(marks[k]);
        for (size_t i = 0; i + ml <= n; i++)
            if (!memcmp(p + i, marks[k], ml))
                return true;
    }
    return false;
}

static bool mentions(const char *p, size_t n, const char *w)
{
    size_t wl = strlen(w);
    for (size_t i = 0; i + wl <= n; i++)
        if (!memcmp(p + i, w, wl))
            return true;
    return false;
}

/* What a text depends on. */
struct dep {
    struct lint_strset t, at;
    bool nvcc;
    struct lint_strset refs; /* top-level variables it references (for the stamp) */
    struct lint_strset envrefs; /* variables it names that may come from the environment */
};

static void dep_free(struct dep *d)
{
    lint_strset_free(&d->t);
    lint_strset_free(&d->at);
    lint_strset_free(&d->refs);
    lint_strset_free(&d->envrefs);
}

static bool gpu_source(const char *s)
{
    return !strcmp(s, "nvidia-smi") || !strcmp(s, "__nvcc_device_query");
}

/* What a test guards with: the variables it names that may come from the
 * environment, and a GPU it asks; not what those variables were computed
 * from (a test of TARGET_ARCH guards with TARGET_ARCH, not with every
 * variable that chose TARGET_ARCH's default). */
static void guard_sources(struct mk *m, const struct dep *d, struct lint_strset *out)
{
    add_all(m, out, &d->envrefs);
    for (size_t i = 0; i < d->t.n; i++)
        if (gpu_source(d->t.v[i]) && !lint_strset_add(out, d->t.v[i]))
            m->oom = true;
}

static void process_line(struct mk *m, const char *p, size_t n, size_t off, int eval_depth,
                         bool recipe);

static void scan_text(struct mk *m, const char *p, size_t n, struct dep *d, int nest,
                      int eval_depth, size_t off);

/* What a reference to v (NULL: an unknown variable) adds to d. */
static void add_var(struct mk *m, struct dep *d, const struct mvar *v)
{
    if (!v)
        return;
    add_all(m, &d->t, &v->t);
    add_all(m, &d->at, &v->at);
    d->nvcc |= v->nvcc;
}

/* $(foreach VAR,LIST,BODY), [a, e) the text after `foreach `: VAR takes
 * the taint of LIST and is a loop variable while BODY is scanned. */
static void scan_foreach(struct mk *m, const char *a, const char *e, struct dep *d, int nest,
                         int eval_depth, size_t off)
{
    const char *c1 = memchr(a, ',', (size_t)(e - a));
    const char *c2 = c1 ? memchr(c1 + 1, ',', (size_t)(e - c1 - 1)) : NULL;
    if (!c1 || !c2)
        return;
    while (a < c1 && is_space(*a))
        a++;
    size_t vl = (size_t)(c1 - a);
    while (vl && is_space(a[vl - 1]))
        vl--;
    struct dep ld = {0};
    scan_text(m, c1 + 1, (size_t)(c2 - c1 - 1), &ld, nest + 1, eval_depth, off);
    struct mvar *lv = vl ? var_get(m, a, vl, true) : NULL;
    char *lname = vl ? cbc_strndup(a, vl) : NULL;
    bool pushed = lname && !lint_strset_has(&m->loopvars, lname) &&
                  lint_strset_add(&m->loopvars, lname);
    if (lv) {
        lint_strset_free(&lv->t);
        add_all(m, &lv->t, &ld.t);
        lint_strset_free(&lv->at);
        add_all(m, &lv->at, &ld.at);
        lv->assigned = true;
        lv->only_guarded = false;
    }
    add_all(m, &d->t, &ld.t);
    scan_text(m, c2 + 1, (size_t)(e - c2 - 1), d, nest + 1, eval_depth, off);
    if (pushed) { /* out of scope again */
        for (size_t k = 0; k < m->loopvars.n; k++)
            if (!strcmp(m->loopvars.v[k], lname)) {
                free(m->loopvars.v[k]);
                m->loopvars.v[k] = m->loopvars.v[--m->loopvars.n];
                break;
            }
    }
    free(lname);
    dep_free(&ld);
}

/* Collects what [p, p+n) depends on: references $(X) ${X} $(X:a=b), the
 * functions inside them ($(shell) asking the GPU, $(foreach) binding its
 * variable, $(eval) run as a line). */
static void scan_text(struct mk *m, const char *p, size_t n, struct dep *d, int nest,
                      int eval_depth, size_t off)
{
    if (nest > MK_NEST)
        return;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '$' || i + 1 >= n)
            continue;
        if (p[i + 1] == '$') {
            i++;
            continue;
        }
        char open = p[i + 1];
        if (open != '(' && open != '{') {
            /* $X: a one-letter reference */
            if (isalnum((unsigned char)open) || open == '_') {
                add_var(m, d, var_get(m, p + i + 1, 1, false));
            }
            i++;
            continue;
        }
        char close = open == '(' ? ')' : '}';
        size_t b = i + 2, e = b;
        int depth = 1;
        while (e < n) {
            if (p[e] == open)
                depth++;
            else if (p[e] == close && --depth == 0)
                break;
            e++;
        }
        /* the word after $( */
        size_t w = b;
        while (w < e && !is_space(p[w]) && p[w] != ':' && p[w] != ',' && p[w] != '$')
            w++;
        const char *name = p + b;
        size_t nl = w - b;
        bool fn = w < e && is_space(p[w]);
        if (fn && nl == 5 && !memcmp(name, "shell", 5)) {
            if (mentions(p + w, e - w, "nvidia-smi") && !lint_strset_add(&d->t, "nvidia-smi"))
                m->oom = true;
            if (mentions(p + w, e - w, "__nvcc_device_query") &&
                !lint_strset_add(&d->t, "__nvcc_device_query"))
                m->oom = true;
            if (mentions(p + w, e - w, "nvcc"))
                d->nvcc = true;
            scan_text(m, p + w, e - w, d, nest + 1, eval_depth, off);
        } else if (fn && nl == 7 && !memcmp(name, "foreach", 7)) {
            scan_foreach(m, p + w + 1, p + e, d, nest, eval_depth, off);
        } else if (fn && nl == 4 && !memcmp(name, "eval", 4)) {
            if (eval_depth < MK_EVAL)
                process_line(m, p + w + 1, e - w - 1, off, eval_depth + 1, false);
        } else if (fn) {
            /* another function: what its arguments reference */
            scan_text(m, p + w, e - w, d, nest + 1, eval_depth, off);
        } else if (nl > 0) {
            struct mvar *v = var_get(m, name, nl, false);
            add_var(m, d, v);
            if (from_env(m, name, nl)) {
                char *nm = cbc_strndup(name, nl);
                if (!nm || !lint_strset_add(&d->t, nm) || !lint_strset_add(&d->envrefs, nm))
                    m->oom = true;
                /* the environment may replace a value that is an arch flag */
                if (nm && v && v->marker && !lint_strset_add(&d->at, nm))
                    m->oom = true;
                free(nm);
            }
            if (nest == 0) {
                char *nm = cbc_strndup(name, nl);
                if (!nm || !lint_strset_add(&d->refs, nm))
                    m->oom = true;
                free(nm);
            }
            if (w < e) /* $(X:a=b), or a computed name: what it references too */
                scan_text(m, p + w, e - w, d, nest + 1, eval_depth, off);
        }
        i = e < n ? e : n;
    }
}

static void cond_sources(struct mk *m, struct lint_strset *out)
{
    for (size_t d = 0; d < m->depth && d < MK_COND; d++)
        add_all(m, out, &m->cond[d].src);
}

static bool guarded_by(const struct mk *m, const char *name, size_t n)
{
    for (size_t d = 0; d < m->depth && d < MK_COND; d++)
        if (m->cond[d].guards && strlen(m->cond[d].guards) == n &&
            !memcmp(m->cond[d].guards, name, n))
            return true;
    return false;
}

/* A conditional directive at [p, p+n): ifeq/ifneq/ifdef/ifndef/else/endif. */
static bool conditional(struct mk *m, const char *p, size_t n, size_t off, int eval_depth)
{
    size_t w = 0;
    while (w < n && !is_space(p[w]))
        w++;
#define IS(s) (w == sizeof(s) - 1 && !memcmp(p, s, w))
    if (IS("endif")) {
        if (m->depth > 0) {
            m->depth--;
            if (m->depth < MK_COND) {
                lint_strset_free(&m->cond[m->depth].src);
                free(m->cond[m->depth].guards);
                m->cond[m->depth].guards = NULL;
            }
        }
        return true;
    }
    if (IS("else")) {
        /* `else ifeq (...)`: the test joins the ones of this level */
        size_t r = w;
        while (r < n && is_space(p[r]))
            r++;
        if (r < n && m->depth > 0 && m->depth <= MK_COND) {
            struct dep d = {0};
            scan_text(m, p + r, n - r, &d, 0, eval_depth, off);
            guard_sources(m, &d, &m->cond[m->depth - 1].src);
            dep_free(&d);
        }
        if (m->depth > 0 && m->depth <= MK_COND) { /* the else branch is no longer guarded */
            free(m->cond[m->depth - 1].guards);
            m->cond[m->depth - 1].guards = NULL;
            m->cond[m->depth - 1].id = ++m->next_branch;
        }
        return true;
    }
    bool ifdef = IS("ifdef"), ifndef = IS("ifndef"), ifeq = IS("ifeq"), ifneq = IS("ifneq");
#undef IS
    if (!ifdef && !ifndef && !ifeq && !ifneq)
        return false;
    size_t r = w;
    while (r < n && is_space(p[r]))
        r++;
    struct mcond c = {0};
    struct dep d = {0};
    if (ifdef || ifndef) {
        size_t e = r;
        while (e < n && !is_space(p[e]))
            e++;
        if (e > r) {
            if (from_env(m, p + r, e - r)) {
                char *nm = cbc_strndup(p + r, e - r);
                if (!nm || !lint_strset_add(&c.src, nm))
                    m->oom = true;
                free(nm);
            }
            if (ifndef)
                c.guards = cbc_strndup(p + r, e - r);
        }
    } else {
        scan_text(m, p + r, n - r, &d, 0, eval_depth, off);
        guard_sources(m, &d, &c.src);
        /* ifeq ($(X),) guards X */
        const char *q = p + r;
        if (n - r > 4 && (q[0] == '(') && q[1] == '$' && (q[2] == '(' || q[2] == '{')) {
            const char *ce = memchr(q + 3, q[2] == '(' ? ')' : '}', n - r - 3);
            if (ce && ce + 1 < p + n && ce[1] == ',') {
                const char *after = ce + 2;
                while (after < p + n && is_space(*after))
                    after++;
                if (after < p + n && *after == ')' && ifeq)
                    c.guards = cbc_strndup(q + 3, (size_t)(ce - q - 3));
            }
        }
    }
    dep_free(&d);
    c.id = ++m->next_branch;
    if (m->depth < MK_COND)
        m->cond[m->depth] = c;
    else {
        lint_strset_free(&c.src);
        free(c.guards);
    }
    m->depth++;
    return true;
}

/* An assignment at [p, p+n), or false when it is none. */
static bool assignment(struct mk *m, const char *p, size_t n, size_t off, int eval_depth)
{
    /* prefixes */
    for (;;) {
        size_t w = 0;
        while (w < n && !is_space(p[w]))
            w++;
        if ((w == 8 && !memcmp(p, "override", 8)) || (w == 6 && !memcmp(p, "export", 6)) ||
            (w == 7 && !memcmp(p, "private", 7))) {
            while (w < n && is_space(p[w]))
                w++;
            p += w;
            n -= w;
            continue;
        }
        break;
    }
    /* the operator: the first = outside references, after the name */
    size_t i = 0;
    int depth = 0;
    size_t colon = SIZE_MAX;
    while (i < n) {
        char c = p[i];
        if (c == '$' && i + 1 < n && (p[i + 1] == '(' || p[i + 1] == '{')) {
            depth++;
            i += 2;
            continue;
        }
        if ((c == ')' || c == '}') && depth > 0) {
            depth--;
            i++;
            continue;
        }
        if (depth == 0 && c == '=')
            break;
        if (depth == 0 && c == ':' && colon == SIZE_MAX && !(i + 1 < n && (p[i + 1] == '=' || p[i + 1] == ':')))
            colon = i; /* a rule's colon, or a target-specific assignment's */
        i++;
    }
    if (i >= n)
        return false;
    size_t op_b = i;
    while (op_b > 0 && (p[op_b - 1] == ':' || p[op_b - 1] == '?' || p[op_b - 1] == '+' ||
                        p[op_b - 1] == '!'))
        op_b--;
    const char *name_b = p;
    if (colon != SIZE_MAX && colon < op_b) /* target: VAR = value */
        name_b = p + colon + 1;
    while (name_b < p + op_b && is_space(*name_b))
        name_b++;
    size_t nl = (size_t)(p + op_b - name_b);
    while (nl && is_space(name_b[nl - 1]))
        nl--;
    if (nl == 0 || memchr(name_b, ' ', nl) || memchr(name_b, '\t', nl))
        return false;
    char op = p[op_b];
    bool weak = op == '?' || op == '+';
    bool shell = op == '!';
    const char *val = p + i + 1;
    size_t vn = n - i - 1;
    struct dep d = {0};
    scan_text(m, val, vn, &d, 0, eval_depth, off);
    if (shell) { /* VAR != command */
        if (mentions(val, vn, "nvidia-smi") && !lint_strset_add(&d.t, "nvidia-smi"))
            m->oom = true;
        if (mentions(val, vn, "__nvcc_device_query") &&
            !lint_strset_add(&d.t, "__nvcc_device_query"))
            m->oom = true;
    }
    cond_sources(m, &d.t);
    struct mvar *v = var_get(m, name_b, nl, true);
    if (v) {
        if (!v->assigned)
            v->first_weak = weak; /* `?=`, or `+=` onto what the environment gave */
        if (!guarded_by(m, name_b, nl) && !(op == '?'))
            v->only_guarded = false;
        v->assigned = true;
        /* a plain assignment replaces the value of one before it in the same
         * branch (or at the top); one in another branch is an alternative */
        unsigned br = m->depth == 0 ? 0 : m->depth <= MK_COND ? m->cond[m->depth - 1].id : ~0u;
        bool plain = (op == '=' || op == ':') && colon == SIZE_MAX;
        if (plain && (m->depth == 0 || v->branch == br)) {
            lint_strset_free(&v->t);
            lint_strset_free(&v->at);
            v->nvcc = false;
            v->marker = false;
        }
        if (plain)
            v->branch = br;
        add_all(m, &v->t, &d.t);
        add_all(m, &v->at, &d.at);
        if (arch_marker(val, vn)) {
            add_all(m, &v->at, &d.t);
            v->marker = true;
        }
        v->nvcc |= d.nvcc || mentions(val, vn, "nvcc");
    }
    dep_free(&d);
    return true;
}

static void end_rule(struct mk *m)
{
    m->in_rule = false;
    free(m->rule_targets);
    m->rule_targets = NULL;
}

/* A rule line `targets: prerequisites` (or `targets:: ...`). */
static bool rule_line(struct mk *m, const char *p, size_t n, size_t off)
{
    int depth = 0;
    size_t i = 0;
    for (; i < n; i++) {
        if (p[i] == '$' && i + 1 < n && (p[i + 1] == '(' || p[i + 1] == '{')) {
            depth++;
            i++;
        } else if ((p[i] == ')' || p[i] == '}') && depth > 0) {
            depth--;
        } else if (depth == 0 && p[i] == ':') {
            break;
        }
    }
    if (i >= n)
        return false;
    end_rule(m);
    size_t tl = i;
    while (tl && is_space(p[tl - 1]))
        tl--;
    m->rule_targets = cbc_strndup(p, tl);
    m->rule_off = off;
    m->in_rule = true;
    if (!m->rule_targets)
        m->oom = true;
    /* .PHONY: a b c */
    if (tl == 6 && !memcmp(p, ".PHONY", 6)) {
        size_t k = i + 1;
        while (k < n) {
            while (k < n && is_space(p[k]))
                k++;
            size_t b = k;
            while (k < n && !is_space(p[k]))
                k++;
            if (k > b) {
                char *w = cbc_strndup(p + b, k - b);
                if (!w || !lint_strset_add(&m->phony, w))
                    m->oom = true;
                free(w);
            }
        }
    }
    /* a recipe on the rule's line: `t: p ; cmd` */
    const char *semi = memchr(p + i, ';', n - i);
    if (semi)
        process_line(m, semi + 1, (size_t)(p + n - semi - 1), off, 0, true);
    return true;
}

/* Whether every target of the current rule is .PHONY (it always runs). */
static bool rule_phony(const struct mk *m)
{
    const char *t = m->rule_targets;
    if (!t || !*t)
        return false;
    bool all = true, any = false;
    while (*t) {
        while (*t && is_space(*t))
            t++;
        const char *b = t;
        while (*t && !is_space(*t))
            t++;
        if (t > b) {
            any = true;
            char *w = cbc_strndup(b, (size_t)(t - b));
            if (!w || !lint_strset_has(&m->phony, w))
                all = false;
            free(w);
        }
    }
    return any && all;
}

static void recipe(struct mk *m, const char *p, size_t n, size_t off)
{
    if (!m->final || !m->in_rule || rule_phony(m))
        return;
    struct dep d = {0};
    scan_text(m, p, n, &d, 0, 0, off);
    bool nvcc = d.nvcc || mentions(p, n, "nvcc");
    struct lint_strset src = {0};
    add_all(m, &src, &d.at);
    if (arch_marker(p, n))
        add_all(m, &src, &d.t);
    if (nvcc && src.n > 0) {
        for (size_t k = 0; k < d.refs.n; k++) {
            struct mvar *v = var_get(m, d.refs.v[k], strlen(d.refs.v[k]), false);
            if ((v && v->at.n > 0) || (arch_marker(p, n) && from_env(m, d.refs.v[k], strlen(d.refs.v[k]))))
                if (!lint_strset_add(&m->stamp, d.refs.v[k]))
                    m->oom = true;
        }
        unsigned line, col;
        lint_src_pos(m->s, off, &line, &col);
        for (size_t k = 0; k < src.n; k++) {
            const char *s = src.v[k];
            if (lint_strset_has(&m->reported, s))
                continue;
            if (!lint_strset_add(&m->reported, s))
                m->oom = true;
            bool gpu = !strcmp(s, "nvidia-smi") || !strcmp(s, "__nvcc_device_query");
            char *why = gpu ? cbc_asprintf("$(shell %s ...) asks the machine's GPU when make "
                                           "reads the file and chooses the arch flags of the "
                                           "nvcc recipe of %s (line %u): make compares only "
                                           "timestamps, so on another GPU it calls the old "
                                           "objects up to date and keeps their old arch",
                                           s, m->rule_targets ? m->rule_targets : "a target",
                                           line)
                            : cbc_asprintf("%s (from the environment or `make %s=`) chooses "
                                           "the arch flags of the nvcc recipe of %s (line %u): "
                                           "make compares only timestamps, so after %s "
                                           "changes it calls the old objects up to date and "
                                           "keeps their old arch",
                                           s, s, m->rule_targets ? m->rule_targets : "a target",
                                           line, s);
            char *fix = cbc_strdup("make the flags a prerequisite: a file rewritten only when "
                                   "they change, in .EXTRA_PREREQS (cubincache lint --fix "
                                   "appends it), or build the kernels with cubincache build, "
                                   "which keys on the arch");
            if (!why || !fix ||
                !lint_add(m->r, CBC_LINT_MAKE_ENV, m->s, m->rule_off, s, why, fix, NULL, 0))
                m->oom = true;
            free(why);
            free(fix);
        }
    }
    lint_strset_free(&src);
    dep_free(&d);
}

/* One logical line (continuations joined, comment cut) at file offset off. */
static void process_line(struct mk *m, const char *p, size_t n, size_t off, int eval_depth,
                         bool is_recipe)
{
    if (is_recipe) {
        recipe(m, p, n, off);
        return;
    }
    while (n && is_space(*p))
        p++, n--;
    while (n && is_space(p[n - 1]))
        n--;
    if (n == 0)
        return;
    if (conditional(m, p, n, off, eval_depth))
        return;
    size_t w = 0;
    while (w < n && !is_space(p[w]))
        w++;
    if ((w == 7 && (!memcmp(p, "include", 7) || !memcmp(p, "sinclude", 7))) ||
        (w == 8 && !memcmp(p, "-include", 8)) || (w == 5 && !memcmp(p, "vpath", 5)) ||
        (w == 8 && !memcmp(p, "unexport", 8)) || (w == 8 && !memcmp(p, "undefine", 8)))
        return;
    if (assignment(m, p, n, off, eval_depth))
        return;
    if (eval_depth == 0 && rule_line(m, p, n, off))
        return;
    /* a bare $(eval ...), $(info ...), $(foreach ... $(eval)) line */
    struct dep d = {0};
    scan_text(m, p, n, &d, 0, eval_depth, off);
    dep_free(&d);
}

/* The logical lines of the file: a recipe line starts with a tab inside a
 * rule; `define NAME ... endef` is an assignment of its body. */
static void pass(struct mk *m)
{
    const char *t = m->s->text, *end = t + m->s->len;
    const char *p = t;
    if (m->s->len >= 3 && !memcmp(t, "\xef\xbb\xbf", 3))
        p += 3; /* a byte order mark */
    end_rule(m);
    struct cbc_buf line = {0};
    while (p < end && !m->oom) {
        size_t off = (size_t)(p - t);
        bool tab = *p == '\t';
        bool is_recipe = tab && m->in_rule;
        cbc_buf_release(&line);
        memset(&line, 0, sizeof line);
        /* join continuations; cut the comment of a make line */
        bool comment = false;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            const char *le = nl ? nl : end;
            const char *seg_end = le;
            if (seg_end > p && seg_end[-1] == '\r')
                seg_end--;
            bool cont = seg_end > p && seg_end[-1] == '\\';
            if (cont) { /* an even run of backslashes does not continue */
                size_t bs = 0;
                for (const char *q = seg_end - 1; q >= p && *q == '\\'; q--)
                    bs++;
                cont = bs % 2 == 1;
            }
            const char *text_end = cont ? seg_end - 1 : seg_end;
            if (!comment) {
                const char *c = p;
                if (!is_recipe)
                    for (; c < text_end; c++)
                        if (*c == '#' && (c == p || c[-1] != '\\'))
                            break;
                cbc_buf_append(&line, p, (size_t)((is_recipe ? text_end : c) - p));
                if (!is_recipe && c < text_end)
                    comment = true;
                if (cont)
                    cbc_buf_append(&line, " ", 1);
            }
            p = nl ? nl + 1 : end;
            if (!cont)
                break;
        }
        if (line.oom) {
            m->oom = true;
            break;
        }
        const char *lp = line.p ? line.p : "";
        size_t ln = line.len;
        if (!is_recipe) {
            size_t k = 0;
            while (k < ln && is_space(lp[k]))
                k++;
            if (k == ln) /* a blank line inside a rule does not end it */
                continue;
            if (ln - k >= 6 && !memcmp(lp + k, "define", 6) && (ln - k == 6 || is_space(lp[k + 6]))) {
                /* define NAME [=]: the body up to endef is its value */
                size_t nb = k + 6;
                while (nb < ln && is_space(lp[nb]))
                    nb++;
                size_t ne = nb;
                while (ne < ln && !is_space(lp[ne]) && lp[ne] != '=')
                    ne++;
                const char *body = p;
                while (p < end) {
                    const char *nl = memchr(p, '\n', (size_t)(end - p));
                    const char *le = nl ? nl : end;
                    const char *q = p;
                    while (q < le && is_space(*q))
                        q++;
                    bool endef = le - q >= 5 && !memcmp(q, "endef", 5);
                    if (endef) {
                        struct cbc_buf a = {0};
                        cbc_buf_append(&a, lp + nb, ne - nb);
                        cbc_buf_puts(&a, " = ");
                        cbc_buf_append(&a, body, (size_t)(p - body));
                        for (size_t z = 0; z < a.len; z++)
                            if (a.p[z] == '\n' || a.p[z] == '\r')
                                a.p[z] = ' ';
                        if (!a.oom && ne > nb)
                            assignment(m, a.p, a.len, off, 0);
                        cbc_buf_release(&a);
                        p = nl ? nl + 1 : end;
                        break;
                    }
                    p = nl ? nl + 1 : end;
                }
                continue;
            }
            if (m->in_rule && !tab) {
                if (conditional(m, lp + k, ln - k, off, 0))
                    continue; /* a conditional between recipe lines */
                end_rule(m);
            }
        }
        process_line(m, lp, ln, off, 0, is_recipe);
    }
    cbc_buf_release(&line);
    end_rule(m);
    for (size_t d = 0; d < m->depth && d < MK_COND; d++) {
        lint_strset_free(&m->cond[d].src);
        free(m->cond[d].guards);
        m->cond[d].guards = NULL;
    }
    m->depth = 0;
}

/* Whether the file carries the fix's stamp of every variable the fix
 * would stamp now (`CUBINCACHE_FLAGS := $(strip $(A) $(B))`) and adds it to
 * .EXTRA_PREREQS. */
static bool already_stamped(const struct mk *m)
{
    const char *t = m->s->text, *end = t + m->s->len;
    const char *p = NULL;
    for (const char *q = t; q < end && (q = strstr(q, "CUBINCACHE_FLAGS := $(strip")) != NULL; q++)
        if (q == t || q[-1] == '\n')
            p = q;
    if (!p || !strstr(t, ".EXTRA_PREREQS += $(CUBINCACHE_FLAGS_STAMP)"))
        return false;
    const char *le = memchr(p, '\n', (size_t)(end - p));
    size_t n = le ? (size_t)(le - p) : (size_t)(end - p);
    for (size_t k = 0; k < m->stamp.n; k++) {
        char *ref = cbc_asprintf("$(%s)", m->stamp.v[k]);
        bool in = ref && mentions(p, n, ref);
        free(ref);
        if (!in)
            return false;
    }
    return true;
}

/* The fix, appended to the file: the stamp of the flags, rewritten only
 * when they change, as a prerequisite of every target. */
static char *fix_text(const struct mk *m)
{
    struct cbc_buf b = {0};
    const struct lint_src *s = m->s;
    if (s->len && s->text[s->len - 1] != '\n')
        cbc_buf_puts(&b, "\n");
    const char *base = cbc_path_base(s->path);
    cbc_buf_puts(&b, "\n# cubincache lint --fix: make compares only timestamps, so a change of "
                     "the\n# arch flags below did not rebuild what they compiled. This file "
                     "changes\n# when they do and is a prerequisite of every target.\n");
    cbc_buf_printf(&b, "CUBINCACHE_FLAGS_STAMP := .cubincache-flags.%s\n", base);
    cbc_buf_puts(&b, "CUBINCACHE_FLAGS := $(strip");
    for (size_t k = 0; k < m->stamp.n; k++)
        cbc_buf_printf(&b, " $(%s)", m->stamp.v[k]);
    cbc_buf_puts(&b, ")\n"
                     "ifneq ($(file <$(CUBINCACHE_FLAGS_STAMP)),$(CUBINCACHE_FLAGS))\n"
                     "$(file >$(CUBINCACHE_FLAGS_STAMP),$(CUBINCACHE_FLAGS))\n"
                     "endif\n"
                     ".EXTRA_PREREQS += $(CUBINCACHE_FLAGS_STAMP)\n"
                     "$(if $(filter extra-prereqs,$(.FEATURES)),,$(warning GNU make 4.3 or "
                     "later is needed for the arch flags to be a prerequisite))\n");
    if (b.oom) {
        cbc_buf_release(&b);
        return NULL;
    }
    return cbc_buf_detach(&b);
}

enum cbc_status lint_make_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err)
{
    struct lint_src s;
    enum cbc_status st = lint_src_read(path, &s, err);
    if (st != CBC_OK)
        return st;
    r->files_read++;
    struct mk m = {.s = &s, .r = r};
    size_t first = r->n;
    pass(&m); /* which variables the file sets, and how */
    for (size_t i = 0; i < m.nv; i++) {
        lint_strset_free(&m.v[i].t);
        lint_strset_free(&m.v[i].at);
        m.v[i].nvcc = false;
    }
    pass(&m); /* what they depend on */
    m.final = true;
    pass(&m); /* once more, for those used before they are set, and the recipes */
    bool fixed = !m.oom && r->n > first && already_stamped(&m);
    if (fixed) { /* a fix made the flags a prerequisite already */
        for (size_t i = first; i < r->n; i++) {
            free(r->f[i].file), free(r->f[i].var), free(r->f[i].why), free(r->f[i].fix);
            free(r->f[i].insert), free(r->f[i].via);
        }
        r->n = first;
    }
    if (!m.oom && r->n > first && m.stamp.n > 0 &&
        !mentions(s.text, s.len, "CUBINCACHE_FLAGS_STAMP")) {
        char *ins = fix_text(&m);
        if (!ins)
            m.oom = true;
        for (size_t i = first; ins && i < r->n; i++) {
            r->f[i].insert = cbc_strdup(ins);
            r->f[i].insert_at = s.len;
            if (!r->f[i].insert)
                m.oom = true;
        }
        free(ins);
    }
    for (size_t i = 0; i < m.nv; i++) {
        free(m.v[i].name);
        lint_strset_free(&m.v[i].t);
        lint_strset_free(&m.v[i].at);
    }
    free(m.v);
    lint_strset_free(&m.phony);
    lint_strset_free(&m.loopvars);
    lint_strset_free(&m.stamp);
    lint_strset_free(&m.reported);
    lint_src_free(&s);
    return m.oom ? cbc_err_oom(err) : CBC_OK;
}
