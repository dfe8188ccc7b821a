/* meson.c: the lint of meson.build: a value computed when Meson configures
 * from the environment or the machine's GPU (run_command of a shell or
 * python -c that reads $VAR or os.environ, of a script that does, or of
 * nvidia-smi) that ends up in CUDA arguments (cuda_args, nvcc_arch_flags,
 * -arch / -gencode / sm_XY strings, anything naming nvcc). Meson runs
 * run_command once, when it configures; a change of VAR, or another GPU,
 * does not configure again, so the build keeps the old arch.
 *
 * How: Meson's tokens (strings '..' and '''..''', # comments), statements
 * split at newlines outside brackets, taint carried by assignment, foreach
 * and if; one finding per variable per file, at the run_command that read
 * it, once a statement puts a tainted value next to a CUDA argument.
 *
 * Invariants: bounds-checked scanning; a script named by the file is read
 * only as a regular file beside meson.build (no link, at most 1 MiB).
 */
#include "lint_int.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mk { M_ID, M_STR, M_NUM, M_PUNCT, M_NL };
struct mtok {
    uint8_t k;
    size_t off, len;       /* the span in the file */
    size_t sb, sl;         /* M_STR: the content's span */
};

struct mtaint {
    char *var;
    struct lint_strset env;
    size_t origin; /* offset of the run_command that read it */
};

struct ms {
    const struct lint_src *s;
    struct mtok *t;
    size_t n, cap;
    struct mtaint *ta;
    size_t nt, capt;
    struct mtaint *prog; /* find_program('x.sh') / files('x.py'): what running it reads */
    size_t np, capp;
    struct lint_strset ctl[32];
    size_t ctl_origin[32];
    size_t depth;
    struct lint_strset reported;
    struct cbc_lint_result *r;
    char *dir;
    bool oom;
};

static bool mpush(struct ms *m, uint8_t k, size_t off, size_t len, size_t sb, size_t sl)
{
    if (!cbc_grow(&m->t, m->n, &m->cap, sizeof *m->t, 256))
        return false;
    m->t[m->n++] = (struct mtok){k, off, len, sb, sl};
    return true;
}

static bool mlex(struct ms *m)
{
    const char *s = m->s->text, *end = s + m->s->len, *p = s;
    if (m->s->len >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
        p += 3; /* a byte order mark */
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '#') {
            while (p < end && *p != '\n')
                p++;
            continue;
        }
        if (c == '\n') {
            if (depth <= 0 && !mpush(m, M_NL, (size_t)(p - s), 1, 0, 0))
                return false;
            p++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || (c == '\\' && p + 1 < end && p[1] == '\n')) {
            p += c == '\\' ? 2 : 1;
            continue;
        }
        if (c == '\'' || ((c == 'f') && p + 1 < end && p[1] == '\'')) {
            const char *q = c == 'f' ? p + 1 : p;
            bool triple = q + 2 < end && q[1] == '\'' && q[2] == '\'';
            const char *b = q + (triple ? 3 : 1), *e = b;
            if (triple) {
                while (e + 2 < end && !(e[0] == '\'' && e[1] == '\'' && e[2] == '\''))
                    e++;
                if (e + 2 >= end)
                    e = end;
            } else {
                while (e < end && *e != '\'' && *e != '\n') {
                    if (*e == '\\' && e + 1 < end)
                        e++;
                    e++;
                }
            }
            const char *after = e >= end ? end : e + (triple ? 3 : 1);
            if (after > end)
                after = end;
            if (!mpush(m, M_STR, (size_t)(p - s), (size_t)(after - p), (size_t)(b - s),
                       (size_t)((e < end ? e : end) - b)))
                return false;
            p = after;
            continue;
        }
        if (isalpha((unsigned char)c) || c == '_') {
            const char *e = p;
            while (e < end && (isalnum((unsigned char)*e) || *e == '_'))
                e++;
            if (!mpush(m, M_ID, (size_t)(p - s), (size_t)(e - p), 0, 0))
                return false;
            p = e;
            continue;
        }
        if (isdigit((unsigned char)c)) {
            const char *e = p;
            while (e < end && isalnum((unsigned char)*e))
                e++;
            if (!mpush(m, M_NUM, (size_t)(p - s), (size_t)(e - p), 0, 0))
                return false;
            p = e;
            continue;
        }
        if (c == '(' || c == '[' || c == '{')
            depth++;
        else if ((c == ')' || c == ']' || c == '}') && depth > 0)
            depth--;
        size_t len = (p + 1 < end && (c == '+' || c == '=' || c == '!') && p[1] == '=') ? 2 : 1;
        if (!mpush(m, M_PUNCT, (size_t)(p - s), len, 0, 0))
            return false;
        p += len;
    }
    return mpush(m, M_NL, m->s->len, 0, 0, 0);
}

static bool mis(const struct ms *m, size_t i, const char *text)
{
    if (i >= m->n || m->t[i].k == M_STR)
        return false;
    size_t n = strlen(text);
    return m->t[i].len == n && !memcmp(m->s->text + m->t[i].off, text, n);
}

static bool str_has(const struct ms *m, size_t i, const char *needle)
{
    const struct mtok *t = &m->t[i];
    size_t n = strlen(needle);
    for (size_t k = 0; k + n <= t->sl; k++)
        if (!memcmp(m->s->text + t->sb + k, needle, n))
            return true;
    return false;
}

static struct mtaint *mfind(struct ms *m, size_t i)
{
    for (size_t k = 0; k < m->nt; k++)
        if (strlen(m->ta[k].var) == m->t[i].len &&
            !memcmp(m->ta[k].var, m->s->text + m->t[i].off, m->t[i].len))
            return &m->ta[k];
    return NULL;
}

static void add_name(struct ms *m, struct lint_strset *out, const char *p, size_t n)
{
    char *v = cbc_strndup(p, n);
    if (!v || !lint_strset_add(out, v))
        m->oom = true;
    free(v);
}

/* Environment reads in text: shell $NAME / ${NAME} (not a name the text
 * assigns), python os.environ['N'] / .get('N') / os.getenv('N'), getenv("N"). */
static void text_env(struct ms *m, const char *p, size_t len, struct lint_strset *out)
{
    const char *end = p + len;
    for (const char *q = p; q < end; q++) {
        const char *b = NULL;
        if (*q == '$') {
            b = q + 1 < end && q[1] == '{' ? q + 2 : q + 1;
        } else {
            static const char *const py[] = {"environ['", "environ[\"", "environ.get('",
                                             "environ.get(\"", "getenv('", "getenv(\""};
            for (size_t k = 0; k < CBC_ARRAY_LEN(py) && !b; k++) {
                size_t n = strlen(py[k]);
                if ((size_t)(end - q) > n && !memcmp(q, py[k], n))
                    b = q + n;
            }
        }
        if (!b || b >= end || !(isupper((unsigned char)*b) || *b == '_'))
            continue;
        const char *e = b;
        while (e < end && (isupper((unsigned char)*e) || isdigit((unsigned char)*e) || *e == '_'))
            e++;
        if (e < end && islower((unsigned char)*e))
            continue;
        /* assigned by the text itself (NAME=...): a local, not the environment */
        bool local = false;
        size_t n = (size_t)(e - b);
        for (const char *a = p; a + n < end && !local; a++)
            if ((a == p || a[-1] == '\n' || a[-1] == ' ' || a[-1] == ';') && !memcmp(a, b, n) &&
                a[n] == '=' && a != b)
                local = true;
        if (!local)
            add_name(m, out, b, n);
        q = e - 1;
    }
}

/* A script run by run_command: read it beside meson.build, scan it. */
static void script_env(struct ms *m, const char *rel, size_t n, struct lint_strset *out)
{
    char *name = cbc_strndup(rel, n);
    char *path = name && m->dir ? cbc_path_join(m->dir, name) : NULL;
    free(name);
    if (!path) {
        m->oom = true;
        return;
    }
    int fd;
    uint64_t size;
    struct cbc_err e = {0};
    if (cbc_open_regular(path, O_NOFOLLOW, &fd, &size, &e) == CBC_OK) {
        uint8_t *data;
        size_t len;
        if (cbc_fd_read_max(fd, path, 1 << 20, &data, &len, &e) == CBC_OK) {
            text_env(m, (const char *)data, len, out);
            if (strstr((const char *)data, "nvidia-smi"))
                add_name(m, out, "nvidia-smi", 10);
            free(data);
        }
        close(fd);
    }
    free(path);
}

/* What run_command( at `open` (the '(' index) reads. */
static void run_command_env(struct ms *m, size_t open, size_t end, struct lint_strset *out)
{
    bool dash_c = false;
    for (size_t i = open + 1; i < end; i++)
        if (m->t[i].k == M_STR && m->t[i].sl == 2 && !memcmp(m->s->text + m->t[i].sb, "-c", 2))
            dash_c = true;
    int depth = 0;
    for (size_t i = open + 1; i < end; i++) {
        if (mis(m, i, "("))
            depth++;
        if (mis(m, i, ")") && --depth < 0)
            break;
        const struct mtok *t = &m->t[i];
        if (t->k == M_STR) {
            const char *txt = m->s->text + t->sb;
            if (dash_c)
                text_env(m, txt, t->sl, out);
            if (t->sl >= 10 && !memcmp(txt + t->sl - 10, "nvidia-smi", 10))
                add_name(m, out, "nvidia-smi", 10);
            else if (!dash_c && t->sl > 0 && memchr(txt, '.', t->sl) && !memchr(txt, ' ', t->sl))
                script_env(m, txt, t->sl, out); /* 'detect.sh', files('x.py') */
        } else if (t->k == M_ID) {
            struct mtaint *ta = mfind(m, i);
            for (size_t k = 0; ta && k < ta->env.n; k++)
                if (!lint_strset_add(out, ta->env.v[k]))
                    m->oom = true;
            for (size_t p = 0; p < m->np; p++)
                if (strlen(m->prog[p].var) == t->len &&
                    !memcmp(m->prog[p].var, m->s->text + t->off, t->len))
                    for (size_t k = 0; k < m->prog[p].env.n; k++)
                        if (!lint_strset_add(out, m->prog[p].env.v[k]))
                            m->oom = true;
        }
    }
}

/* NAME = find_program('x.sh') or files('x.py'): what running NAME reads,
 * kept apart from taint (running it when building is fine). */
static void mprogram(struct ms *m, size_t lhs, size_t e)
{
    size_t i = lhs + 2;
    if (!(mis(m, i, "find_program") || mis(m, i, "files")) || !mis(m, i + 1, "(") ||
        i + 2 >= e || m->t[i + 2].k != M_STR)
        return;
    struct lint_strset env = {0};
    const struct mtok *t = &m->t[i + 2];
    if (t->sl >= 10 && !memcmp(m->s->text + t->sb + t->sl - 10, "nvidia-smi", 10))
        add_name(m, &env, "nvidia-smi", 10);
    else
        script_env(m, m->s->text + t->sb, t->sl, &env);
    if (env.n && cbc_grow(&m->prog, m->np, &m->capp, sizeof *m->prog, 4) &&
        (m->prog[m->np].var = cbc_strndup(m->s->text + m->t[lhs].off, m->t[lhs].len))) {
        m->prog[m->np].env = env;
        m->prog[m->np].origin = m->t[i].off;
        m->np++;
        return;
    }
    if (env.n)
        m->oom = true;
    lint_strset_free(&env);
}

static bool sink_tok(const struct ms *m, size_t i)
{
    const struct mtok *t = &m->t[i];
    if (t->k == M_ID) {
        const char *p = m->s->text + t->off;
        return (t->len == 9 && !memcmp(p, "cuda_args", 9)) ||
               (t->len == 15 && !memcmp(p, "nvcc_arch_flags", 15)) ||
               memmem(p, t->len, "nvcc", 4) != NULL;
    }
    if (t->k == M_STR) {
        static const char *const marks[] = {"-arch", "-gencode", "--gpu-architecture",
                                            "--gpu-code", "sm_", "compute_", "nvcc"};
        if (t->sl == 4 && !memcmp(m->s->text + t->sb, "cuda", 4))
            return true; /* language: 'cuda' */
        for (size_t k = 0; k < CBC_ARRAY_LEN(marks); k++)
            if (str_has(m, i, marks[k]))
                return true;
    }
    return false;
}

static void mreport(struct ms *m, const struct lint_strset *env, size_t origin, size_t sink)
{
    unsigned sl, sc;
    lint_src_pos(m->s, m->t[sink].off, &sl, &sc);
    for (size_t k = 0; k < env->n; k++) {
        const char *v = env->v[k];
        if (lint_strset_has(&m->reported, v))
            continue;
        if (!lint_strset_add(&m->reported, v)) {
            m->oom = true;
            return;
        }
        bool gpu = !strcmp(v, "nvidia-smi");
        char *why = gpu ? cbc_asprintf("the GPU is asked (nvidia-smi) when Meson configures and "
                                       "the answer picks CUDA arguments (line %u): Meson does "
                                       "not configure again on another GPU, so the build keeps "
                                       "the old arch", sl)
                        : cbc_asprintf("%s is read when Meson configures and picks CUDA "
                                       "arguments (line %u): Meson does not configure again "
                                       "when %s changes, so the build keeps the old arch",
                                       v, sl, v);
        char *fix = cbc_strdup("make the arch an option (-Dcuda-arch=...) or decide it when "
                               "building: a custom_target running `cubincache build` behind "
                               "`cubincache stamp` (examples/meson-consumer)");
        if (!why || !fix ||
            !lint_add(m->r, CBC_LINT_MESON_ENV, m->s, origin, v, why, fix, NULL, 0))
            m->oom = true;
        free(why);
        free(fix);
    }
}

/* One statement [b, e) (e is its M_NL). */
static void mstmt(struct ms *m, size_t b, size_t e)
{
    if (b >= e)
        return;
    if (mis(m, b, "if") || mis(m, b, "elif")) {
        if (mis(m, b, "if"))
            m->depth++;
        if (m->depth == 0 || m->depth > 32)
            return;
        struct lint_strset *top = &m->ctl[m->depth - 1];
        lint_strset_free(top);
        m->ctl_origin[m->depth - 1] = m->t[b].off;
        for (size_t i = b + 1; i < e; i++) {
            struct mtaint *ta = m->t[i].k == M_ID ? mfind(m, i) : NULL;
            for (size_t k = 0; ta && k < ta->env.n; k++) {
                if (!lint_strset_add(top, ta->env.v[k]))
                    m->oom = true;
                m->ctl_origin[m->depth - 1] = ta->origin;
            }
            if (mis(m, i, "run_command") && mis(m, i + 1, "("))
                run_command_env(m, i + 1, e, top);
        }
        return;
    }
    if (mis(m, b, "endif")) {
        if (m->depth > 0 && m->depth <= 32)
            lint_strset_free(&m->ctl[m->depth - 1]);
        if (m->depth > 0)
            m->depth--;
        return;
    }
    struct lint_strset env = {0};
    size_t origin = m->t[b].off;
    bool has_origin = false;
    for (size_t d = 0; d < m->depth && d < 32; d++)
        for (size_t k = 0; k < m->ctl[d].n; k++) {
            if (!lint_strset_add(&env, m->ctl[d].v[k]))
                m->oom = true;
            origin = m->ctl_origin[d];
            has_origin = true;
        }
    size_t lhs = SIZE_MAX, rhs = b;
    if (m->t[b].k == M_ID && (mis(m, b + 1, "=") || mis(m, b + 1, "+="))) {
        lhs = b;
        rhs = b + 2;
        mprogram(m, b, e);
    } else if (mis(m, b, "foreach") && b + 2 < e && m->t[b + 1].k == M_ID) {
        size_t colon = b + 1;
        while (colon < e && !mis(m, colon, ":"))
            colon++;
        lhs = b + 1;
        rhs = colon + 1;
    }
    bool sink = false;
    size_t sink_at = b, in_cmd_until = 0; /* a command's own arguments are no sink */
    for (size_t i = rhs; i < e; i++) {
        if (mis(m, i, "run_command") && mis(m, i + 1, "(")) {
            int d = 0;
            for (in_cmd_until = i + 1; in_cmd_until < e; in_cmd_until++)
                if (mis(m, in_cmd_until, "("))
                    d++;
                else if (mis(m, in_cmd_until, ")") && --d == 0)
                    break;
            size_t before = env.n;
            run_command_env(m, i + 1, e, &env);
            if (env.n > before && !has_origin) {
                origin = m->t[i].off;
                has_origin = true;
            }
        } else if (m->t[i].k == M_ID && i != lhs) {
            struct mtaint *ta = mfind(m, i);
            for (size_t k = 0; ta && k < ta->env.n; k++) {
                if (!lint_strset_add(&env, ta->env.v[k]))
                    m->oom = true;
                if (!has_origin) {
                    origin = ta->origin;
                    has_origin = true;
                }
            }
        }
        if (!sink && i > in_cmd_until && sink_tok(m, i)) {
            sink = true;
            sink_at = i;
        }
    }
    if (lhs != SIZE_MAX && lhs < m->n) {
        struct mtaint *ta = mfind(m, lhs);
        if (!ta && env.n) {
            if (cbc_grow(&m->ta, m->nt, &m->capt, sizeof *m->ta, 8) &&
                (m->ta[m->nt].var = cbc_strndup(m->s->text + m->t[lhs].off, m->t[lhs].len))) {
                ta = &m->ta[m->nt++];
                memset(&ta->env, 0, sizeof ta->env);
                ta->origin = origin;
            } else {
                m->oom = true;
            }
        }
        if (ta) {
            if (!mis(m, lhs + 1, "+=") && !env.n)
                lint_strset_free(&ta->env); /* reassigned from something clean */
            for (size_t k = 0; k < env.n; k++)
                if (!lint_strset_add(&ta->env, env.v[k]))
                    m->oom = true;
            if (env.n)
                ta->origin = origin;
        }
    }
    if (sink && env.n)
        mreport(m, &env, origin, sink_at);
    lint_strset_free(&env);
}

enum cbc_status lint_meson_file(const char *path, struct cbc_lint_result *r, struct cbc_err *err)
{
    struct lint_src s;
    enum cbc_status st = lint_src_read(path, &s, err);
    if (st != CBC_OK)
        return st;
    r->files_read++;
    struct ms m = {.s = &s, .r = r, .dir = cbc_path_dir(path)};
    if (!m.dir || !mlex(&m))
        m.oom = true;
    size_t b = 0;
    for (size_t i = 0; i < m.n && !m.oom; i++)
        if (m.t[i].k == M_NL) {
            mstmt(&m, b, i);
            b = i + 1;
        }
    for (size_t i = 0; i < m.nt; i++) {
        free(m.ta[i].var);
        lint_strset_free(&m.ta[i].env);
    }
    free(m.ta);
    for (size_t i = 0; i < m.np; i++) {
        free(m.prog[i].var);
        lint_strset_free(&m.prog[i].env);
    }
    free(m.prog);
    for (size_t d = 0; d < 32; d++)
        lint_strset_free(&m.ctl[d]);
    lint_strset_free(&m.reported);
    free(m.t);
    free(m.dir);
    lint_src_free(&s);
    return m.oom ? cbc_err_oom(err) : CBC_OK;
}
