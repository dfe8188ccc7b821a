/* cmake.c: the lint of CMakeLists.txt and *.cmake: an environment variable
 * ($ENV{VAR}, or ENV{VAR} in an if()) read when CMake configures and used
 * to choose CUDA architectures or flags. CMake runs that code once and
 * caches what it chose; a later change of VAR does not configure again,
 * so the build keeps the old architectures (the incident, in CMake).
 *
 * How: CMake's command syntax (quoted, bracket and unquoted arguments,
 * line and bracket comments), then a run over the commands that carries
 * taint: a variable set from $ENV{X} (or inside an if() on X) is tainted
 * by X, through set, string, list, separate_arguments and foreach; a sink
 * (CMAKE_CUDA_ARCHITECTURES, CMAKE_CUDA_FLAGS*, CUDA_NVCC_FLAGS*, the
 * CUDA_ARCHITECTURES and COMPILE_OPTIONS properties, target_compile_options,
 * add_compile_options, cuda_select_nvcc_arch_flags) reached by a tainted
 * value is a finding. A variable also carries its arch taint: the part of
 * its taint that sits in an element naming CUDA architectures or flags
 * (-DCMAKE_CUDA_ARCHITECTURES=${X}, -gencode ...); the CMAKE_ARGS of
 * ExternalProject_Add (and CMAKE_CACHE_ARGS, FetchContent_Declare's) are a
 * sink for that part only, so -DENABLE_UCX=$ENV{Y} next to it is no
 * finding.
 *
 * Invariants: the scanner never reads past the file; an unterminated
 * argument or comment ends at the end of the file; nothing inside a
 * comment or a bracket argument's text is a command.
 */
#include "lint_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

struct carg {
    const char *p;
    size_t n;
};

#define CM_MAX_ARGS 256

struct cmd {
    const char *name;
    size_t name_len, off;
    struct carg a[CM_MAX_ARGS];
    size_t n;
};

struct taint {
    char *var;
    struct lint_strset env;
    struct lint_strset at; /* the env vars that reach a CUDA arch or flag element */
};

struct cm {
    const struct lint_src *s;
    struct taint *t;
    size_t nt, cap;
    struct lint_strset ctl[32]; /* the env vars the enclosing if()s test */
    size_t depth;
    struct cbc_lint_result *r;
    bool oom;
};

static const char *skip_space_comments(const char *p, const char *end)
{
    while (p < end) {
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
            p++;
        } else if (*p == '#') {
            const char *q = p + 1;
            size_t eq = 0;
            if (q < end && *q == '[') {
                const char *r = q + 1;
                while (r < end && *r == '=')
                    eq++, r++;
                if (r < end && *r == '[') { /* #[==[ ... ]==] */
                    for (r++; r < end; r++)
                        if (*r == ']' && (size_t)(end - r) > eq + 1 &&
                            strspn(r + 1, "=") >= eq && r[1 + eq] == ']')
                            break;
                    p = r < end ? r + eq + 2 : end;
                    continue;
                }
            }
            while (p < end && *p != '\n')
                p++;
        } else {
            break;
        }
    }
    return p;
}

/* Parses one command at p; returns the position after it (end when none). */
static const char *parse_cmd(const char *p, const char *end, const char *base, struct cmd *c)
{
    c->n = 0;
    p = skip_space_comments(p, end);
    if (p >= end)
        return end;
    if (!(isalpha((unsigned char)*p) || *p == '_')) {
        return p + 1; /* not a command: move on */
    }
    c->name = p;
    c->off = (size_t)(p - base);
    while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
        p++;
    c->name_len = (size_t)(p - c->name);
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p >= end || *p != '(') {
        c->name = NULL;
        return p;
    }
    p++;
    int depth = 0;
    for (;;) {
        p = skip_space_comments(p, end);
        if (p >= end)
            return end;
        if (*p == ')') {
            if (depth == 0)
                return p + 1;
            depth--;
            p++;
            continue;
        }
        if (*p == '(') {
            depth++;
            p++;
            continue;
        }
        const char *a = p;
        if (*p == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\' && p + 1 < end)
                    p++;
            if (c->n < CM_MAX_ARGS)
                c->a[c->n++] = (struct carg){a + 1, (size_t)((p < end ? p : end) - a - 1)};
            p = p < end ? p + 1 : end;
            continue;
        }
        if (*p == '[') {
            const char *r = p + 1;
            size_t eq = 0;
            while (r < end && *r == '=')
                eq++, r++;
            if (r < end && *r == '[') {
                const char *body = r + 1;
                for (r = body; r < end; r++)
                    if (*r == ']' && (size_t)(end - r) > eq + 1 && strspn(r + 1, "=") >= eq &&
                        r[1 + eq] == ']')
                        break;
                if (c->n < CM_MAX_ARGS) /* bracket text is literal: no $ENV in it counts */
                    c->a[c->n++] = (struct carg){body, 0};
                p = r < end ? r + eq + 2 : end;
                continue;
            }
        }
        while (p < end && !strchr(" \t\r\n()\"#", *p)) {
            if (*p == '\\' && p + 1 < end)
                p++;
            p++;
        }
        if (p == a) /* a stray quote or '#' inside an unquoted run */
            p++;
        if (c->n < CM_MAX_ARGS)
            c->a[c->n++] = (struct carg){a, (size_t)(p - a)};
    }
}

static bool arg_is(const struct carg *a, const char *s)
{
    return strlen(s) == a->n && !strncmp(a->p, s, a->n);
}

static bool name_is(const struct cmd *c, const char *s)
{
    return strlen(s) == c->name_len && !strncasecmp(c->name, s, c->name_len);
}

static struct taint *find_taint(struct cm *m, const char *v, size_t n)
{
    for (size_t i = 0; i < m->nt; i++)
        if (strlen(m->t[i].var) == n && !strncmp(m->t[i].var, v, n))
            return &m->t[i];
    return NULL;
}

/* Whether an argument names CUDA architectures or nvcc flags. */
static bool cuda_marker(const struct carg *a)
{
    static const char *const marks[] = {"CMAKE_CUDA_ARCHITECTURES", "CMAKE_CUDA_FLAGS",
                                        "CUDA_NVCC_FLAGS", "CUDA_ARCHITECTURES", "CUDA_ARCHS",
                                        "TORCH_CUDA_ARCH_LIST", "-gencode", "--generate-code",
                                        "-arch=", "--gpu-architecture"};
    for (size_t k = 0; k < CBC_ARRAY_LEN(marks); k++) {
        size_t ml = strlen(marks[k]);
        for (size_t i = 0; i + ml <= a->n; i++)
            if (!memcmp(a->p + i, marks[k], ml))
                return true;
    }
    return false;
}

static void arg_env_at(struct cm *m, const struct carg *a, bool cond, struct lint_strset *out,
                       struct lint_strset *at);

/* The env vars an argument reads: $ENV{X} (and ENV{X} when `cond`),
 * and the taint of each ${V} in it. */
static void arg_env(struct cm *m, const struct carg *a, bool cond, struct lint_strset *out)
{
    arg_env_at(m, a, cond, out, NULL);
}

/* arg_env, and the arch taint of the ${V} in it into `at` (may be NULL). */
static void arg_env_at(struct cm *m, const struct carg *a, bool cond, struct lint_strset *out,
                       struct lint_strset *at)
{
    const char *p = a->p, *end = a->p + a->n;
    for (; p < end; p++) {
        bool env = false;
        const char *q = NULL;
        if (p + 5 <= end && !strncmp(p, "$ENV{", 5)) {
            env = true;
            q = p + 5;
        } else if (cond && p + 4 <= end && !strncmp(p, "ENV{", 4) &&
                   (p == a->p || p[-1] != '$')) {
            env = true;
            q = p + 4;
        } else if (p + 2 <= end && !strncmp(p, "${", 2)) {
            q = p + 2;
        } else if (cond && p == a->p && (isalpha((unsigned char)*p) || *p == '_')) {
            q = p; /* if(VAR ...) names a variable */
        }
        if (!q)
            continue;
        const char *e = q;
        while (e < end && (isalnum((unsigned char)*e) || *e == '_'))
            e++;
        if (e == q)
            continue;
        if (env) {
            char *v = cbc_strndup(q, (size_t)(e - q));
            if (!v || !lint_strset_add(out, v))
                m->oom = true;
            free(v);
        } else {
            struct taint *t = find_taint(m, q, (size_t)(e - q));
            for (size_t k = 0; t && k < t->env.n; k++)
                if (!lint_strset_add(out, t->env.v[k]))
                    m->oom = true;
            for (size_t k = 0; t && at && k < t->at.n; k++)
                if (!lint_strset_add(at, t->at.v[k]))
                    m->oom = true;
        }
        p = e - 1;
    }
}

static void set_taint(struct cm *m, const struct carg *var, const struct lint_strset *env,
                      const struct lint_strset *at, bool append)
{
    struct taint *t = find_taint(m, var->p, var->n);
    if (!t && env->n == 0 && (!at || at->n == 0))
        return;
    if (!t) {
        if (!cbc_grow(&m->t, m->nt, &m->cap, sizeof *m->t, 8)) {
            m->oom = true;
            return;
        }
        t = &m->t[m->nt];
        memset(t, 0, sizeof *t);
        if (!(t->var = cbc_strndup(var->p, var->n))) {
            m->oom = true;
            return;
        }
        m->nt++;
    }
    if (!append) {
        lint_strset_free(&t->env);
        lint_strset_free(&t->at);
    }
    for (size_t k = 0; k < env->n; k++)
        if (!lint_strset_add(&t->env, env->v[k]))
            m->oom = true;
    for (size_t k = 0; at && k < at->n; k++)
        if (!lint_strset_add(&t->at, at->v[k]))
            m->oom = true;
}

/* The taint of the variable an argument names (a list's name, not ${it}). */
static void named_env(struct cm *m, const struct carg *a, struct lint_strset *env,
                      struct lint_strset *at)
{
    struct taint *t = find_taint(m, a->p, a->n);
    for (size_t k = 0; t && k < t->env.n; k++)
        if (!lint_strset_add(env, t->env.v[k]))
            m->oom = true;
    for (size_t k = 0; t && k < t->at.n; k++)
        if (!lint_strset_add(at, t->at.v[k]))
            m->oom = true;
}

static bool sink_var(const struct carg *v)
{
    static const char *const exact[] = {"CMAKE_CUDA_ARCHITECTURES", "CMAKE_CUDA_FLAGS",
                                        "CUDA_NVCC_FLAGS", "CMAKE_CUDA_HOST_COMPILER",
                                        "CUDA_ARCHITECTURES"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(exact); i++) {
        size_t n = strlen(exact[i]);
        if (v->n >= n && !strncmp(v->p, exact[i], n) &&
            (v->n == n || (v->p[n] == '_' && (n == 16 || n == 15)))) /* _RELEASE, ... */
            return true;
    }
    return false;
}

static void finding(struct cm *m, const struct cmd *c, const struct lint_strset *env,
                    const char *what)
{
    for (size_t k = 0; k < env->n; k++) {
        char *why = cbc_asprintf("$ENV{%s} is read when CMake configures and chooses %s: CMake "
                                 "keeps the result and does not configure again when %s "
                                 "changes, so the build keeps the old CUDA architectures or "
                                 "flags",
                                 env->v[k], what, env->v[k]);
        char *fix = cbc_asprintf("take the value from a cache variable that users set "
                                 "(-DCMAKE_CUDA_ARCHITECTURES=90) instead of $ENV{%s}, or "
                                 "choose the arch when building (cubincache build keys on "
                                 "CUDA_COMPUTE_CAP)",
                                 env->v[k]);
        if (!why || !fix ||
            !lint_add(m->r, CBC_LINT_CMAKE_ENV, m->s, c->off, env->v[k], why, fix, NULL, 0))
            m->oom = true;
        free(why);
        free(fix);
    }
}

static void ctl_env(struct cm *m, struct lint_strset *out)
{
    for (size_t d = 0; d < m->depth && d < 32; d++)
        for (size_t k = 0; k < m->ctl[d].n; k++)
            if (!lint_strset_add(out, m->ctl[d].v[k]))
                m->oom = true;
}

/* if() and elseif(): the env vars the condition tests guard what the
 * commands up to endif() set (32 levels are followed). */
static void cond_enter(struct cm *m, const struct cmd *c)
{
    if (name_is(c, "if"))
        m->depth++;
    if (m->depth == 0 || m->depth > 32)
        return;
    struct lint_strset *top = &m->ctl[m->depth - 1];
    if (name_is(c, "if"))
        lint_strset_free(top);
    for (size_t i = 0; i < c->n; i++)
        arg_env(m, &c->a[i], true, top);
}

static void cond_leave(struct cm *m)
{
    if (m->depth > 0 && m->depth <= 32)
        lint_strset_free(&m->ctl[m->depth - 1]);
    if (m->depth > 0)
        m->depth--;
}

/* A command that sets a variable: the variable, its first value argument,
 * a list it reads by its name, whether it keeps what the variable held,
 * whether the command itself is a sink. */
struct assign {
    const struct carg *out;
    size_t first;
    const struct carg *from;
    bool append, sink_fn;
};

/* string(SUB ...) and list(SUB ...): which argument SUB sets, from which. */
static void string_list_assign(const struct cmd *c, struct assign *as)
{
    const struct carg *sub = &c->a[0];
    bool list = name_is(c, "list");
    if (arg_is(sub, "APPEND") || arg_is(sub, "PREPEND") || arg_is(sub, "INSERT")) {
        as->out = &c->a[1], as->first = 2, as->append = true;
    } else if (arg_is(sub, "CONCAT")) {
        as->out = &c->a[1], as->first = 2;
    } else if (arg_is(sub, "JOIN") && c->n >= 4 && list) {
        as->out = &c->a[3], as->first = 2, as->from = &c->a[1];
    } else if (arg_is(sub, "JOIN") && c->n >= 3) {
        as->out = &c->a[2], as->first = 3;
    } else if (arg_is(sub, "REPLACE") && c->n >= 4 && !list) {
        as->out = &c->a[3], as->first = 1;
    } else if (arg_is(sub, "REGEX") && c->n >= 5) {
        as->out = &c->a[4], as->first = 2;
    } else if ((arg_is(sub, "TOLOWER") || arg_is(sub, "TOUPPER") || arg_is(sub, "STRIP")) &&
               c->n >= 3) {
        as->out = &c->a[2], as->first = 1;
    } else if (list && (arg_is(sub, "GET") || arg_is(sub, "SUBLIST")) && c->n >= 4) {
        as->out = &c->a[c->n - 1], as->first = c->n, as->from = &c->a[1];
    } else if (list && (arg_is(sub, "TRANSFORM") || arg_is(sub, "FILTER") ||
                        arg_is(sub, "REMOVE_DUPLICATES") || arg_is(sub, "REMOVE_ITEM") ||
                        arg_is(sub, "SORT") || arg_is(sub, "REVERSE"))) {
        as->out = &c->a[1], as->first = c->n, as->append = true; /* in place: what guards it joins */
    }
}

/* Whether c sets a variable (set, string, list, separate_arguments,
 * cuda_select_nvcc_arch_flags, foreach), and how. */
static bool assign_of(const struct cmd *c, struct assign *as)
{
    if ((name_is(c, "string") || name_is(c, "list")) && c->n >= 2) {
        string_list_assign(c, as);
        return as->out != NULL;
    }
    if ((name_is(c, "set") && c->n >= 1) || (name_is(c, "separate_arguments") && c->n >= 2) ||
        (name_is(c, "cuda_select_nvcc_arch_flags") && c->n >= 1) ||
        (name_is(c, "foreach") && c->n >= 2)) {
        as->out = &c->a[0];
        as->first = 1;
        /* cuda_select_nvcc_arch_flags makes nvcc -gencode flags of what it is given */
        as->sink_fn = name_is(c, "cuda_select_nvcc_arch_flags");
        return true;
    }
    return false;
}

/* foreach(V IN LISTS L...): the taint of each list named. (foreach(V IN
 * ITEMS ...) and foreach(V ${L}) are value arguments.) */
static void foreach_lists(struct cm *m, const struct cmd *c, struct lint_strset *env,
                          struct lint_strset *at)
{
    bool lists = false;
    for (size_t i = 1; i < c->n; i++) {
        if (arg_is(&c->a[i], "IN") || arg_is(&c->a[i], "ITEMS") || arg_is(&c->a[i], "RANGE") ||
            arg_is(&c->a[i], "ZIP_LISTS"))
            continue;
        if (arg_is(&c->a[i], "LISTS")) {
            lists = true;
            continue;
        }
        if (lists)
            named_env(m, &c->a[i], env, at);
    }
}

/* The variable an assignment sets takes the taint of its values (their
 * arch taint from the elements naming CUDA architectures or flags); a
 * sink so tainted is a finding. */
static void run_assign(struct cm *m, const struct cmd *c, const struct assign *as,
                       struct lint_strset *env, struct lint_strset *at)
{
    for (size_t i = as->first; i < c->n; i++) {
        if (&c->a[i] == as->out)
            continue;
        struct lint_strset one = {0};
        arg_env_at(m, &c->a[i], false, &one, at);
        if (cuda_marker(&c->a[i])) {
            ctl_env(m, &one); /* what the guarding if()s test picks this flag */
            for (size_t k = 0; k < one.n; k++)
                if (!lint_strset_add(at, one.v[k]))
                    m->oom = true;
        }
        for (size_t k = 0; k < one.n; k++)
            if (!lint_strset_add(env, one.v[k]))
                m->oom = true;
        lint_strset_free(&one);
    }
    const struct carg *out = as->out;
    if (!out->n || out->n >= 256)
        return;
    set_taint(m, out, env, at, as->append);
    if ((sink_var(out) || as->sink_fn) && env->n) {
        char what[300];
        cbc_fmt(what, sizeof what, "%.*s", (int)out->n, out->p);
        finding(m, c, env, as->sink_fn ? "nvcc -gencode flags (cuda_select_nvcc_arch_flags)" : what);
    }
}

/* ExternalProject_Add, FetchContent_Declare: the arguments after
 * CMAKE_ARGS / CMAKE_CACHE_ARGS, up to the next keyword, are a sink for
 * their arch taint only. */
static void external_project(struct cm *m, const struct cmd *c)
{
    bool in = false;
    struct lint_strset src = {0};
    for (size_t i = 1; i < c->n; i++) {
        const struct carg *a = &c->a[i];
        bool kw = a->n > 1 && a->p[0] != '-' && a->p[0] != '$';
        for (size_t k = 0; kw && k < a->n; k++)
            kw = (a->p[k] >= 'A' && a->p[k] <= 'Z') || a->p[k] == '_';
        if (kw) {
            in = arg_is(a, "CMAKE_ARGS") || arg_is(a, "CMAKE_CACHE_ARGS") ||
                 arg_is(a, "CMAKE_CACHE_DEFAULT_ARGS");
            continue;
        }
        if (!in)
            continue;
        struct lint_strset one = {0};
        arg_env_at(m, a, false, &one, &src);
        if (cuda_marker(a))
            for (size_t k = 0; k < one.n; k++)
                if (!lint_strset_add(&src, one.v[k]))
                    m->oom = true;
        lint_strset_free(&one);
    }
    if (src.n) {
        char what[300];
        cbc_fmt(what, sizeof what, "the CUDA architectures or flags %.*s passes to a "
                                   "project it builds (CMAKE_ARGS)",
                c->n ? (int)(c->a[0].n > 64 ? 64 : c->a[0].n) : 0, c->n ? c->a[0].p : "");
        finding(m, c, &src, what);
    }
    lint_strset_free(&src);
}

/* set_target_properties(... PROPERTIES key value ...), set_property(...
 * PROPERTY key values...): the values of CUDA_ARCHITECTURES,
 * COMPILE_OPTIONS and COMPILE_FLAGS are a sink. */
static void target_properties(struct cm *m, const struct cmd *c, struct lint_strset *env)
{
    bool props = false, sink = false;
    for (size_t i = 0; i < c->n; i++) {
        const struct carg *a = &c->a[i];
        if (arg_is(a, "PROPERTIES") || arg_is(a, "PROPERTY")) {
            props = true;
            continue;
        }
        if (!props)
            continue;
        if (arg_is(a, "CUDA_ARCHITECTURES") || arg_is(a, "COMPILE_OPTIONS") ||
            arg_is(a, "COMPILE_FLAGS")) {
            sink = true;
            continue;
        }
        if (sink)
            arg_env(m, a, false, env);
        if (name_is(c, "set_target_properties") && sink)
            sink = false; /* key value pairs */
    }
    if (env->n)
        finding(m, c, env, "a target's CUDA_ARCHITECTURES or compile options");
}

/* One command: its effect on the taint and the if() guards, a finding
 * where a tainted value reaches a sink. */
static void run_cmd(struct cm *m, const struct cmd *c)
{
    if (name_is(c, "if") || name_is(c, "elseif")) {
        cond_enter(m, c);
        return;
    }
    if (name_is(c, "endif")) {
        cond_leave(m);
        return;
    }
    struct lint_strset env = {0}, at = {0};
    ctl_env(m, &env);
    struct assign as = {0};
    if (assign_of(c, &as)) {
        if (name_is(c, "foreach"))
            foreach_lists(m, c, &env, &at);
        if (as.from)
            named_env(m, as.from, &env, &at);
        run_assign(m, c, &as, &env, &at);
    } else if (name_is(c, "ExternalProject_Add") || name_is(c, "FetchContent_Declare")) {
        external_project(m, c);
    } else if (name_is(c, "target_compile_options") || name_is(c, "add_compile_options")) {
        for (size_t i = 0; i < c->n; i++)
            arg_env(m, &c->a[i], false, &env);
        if (env.n)
            finding(m, c, &env, name_is(c, "add_compile_options") ? "add_compile_options"
                                                                  : "target_compile_options");
    } else if (name_is(c, "set_target_properties") || name_is(c, "set_property")) {
        target_properties(m, c, &env);
    }
    lint_strset_free(&env);
    lint_strset_free(&at);
}

enum cbc_status lint_cmake_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err)
{
    struct lint_src s;
    enum cbc_status st = lint_src_read(path, &s, err);
    if (st != CBC_OK)
        return st;
    r->files_read++;
    struct cm m = {.s = &s, .r = r};
    struct cmd *c = malloc(sizeof *c);
    if (!c) {
        lint_src_free(&s);
        return cbc_err_oom(err);
    }
    const char *p = s.text, *end = s.text + s.len;
    while (p < end && !m.oom) {
        c->name = NULL;
        p = parse_cmd(p, end, s.text, c);
        if (c->name)
            run_cmd(&m, c);
    }
    for (size_t i = 0; i < m.nt; i++) {
        free(m.t[i].var);
        lint_strset_free(&m.t[i].env);
        lint_strset_free(&m.t[i].at);
    }
    free(m.t);
    for (size_t d = 0; d < 32; d++)
        lint_strset_free(&m.ctl[d]);
    free(c);
    lint_src_free(&s);
    return m.oom ? cbc_err_oom(err) : CBC_OK;
}
