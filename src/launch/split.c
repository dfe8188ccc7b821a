/* split.c: an nvcc compile run step by step, the device compile of each
 * virtual arch served from the store (contract in split.h).
 *
 * `nvcc --dryrun` prints one line per step: variable assignments, the host
 * compiler preprocessing the source once per virtual arch (-D__CUDA_ARCH__)
 * and once for the host, cudafe++, cicc per virtual arch, ptxas per real
 * arch, fatbinary, the host compile, and a "-- Filter Dependencies --"
 * pseudo-step that writes -MD's depfile. Temporary files are named
 * TMPDIR/tmpxft_<pid>_<n>-<k>_<stem>.<role>, with k shifting when the arch
 * list does, so keys and stored contents name them by role only ("@@" +
 * the part after k_) and restoring puts this run's names back.
 *
 * A stored arch is a result container (src/cache/cache.h) whose members
 * are its files by role, "pp.d" (its preprocessing's depfile) and
 * "1:<step>"/"2:<step>" for what each step printed. Its text members are
 * stored with the base directory and nvcc's module id (a hash of the
 * source's absolute path, which cicc pastes into internal names) as marks
 * (key.h, cbc_base_template_id), so another checkout is served its own
 * paths and id; the arch's key hashes what cicc reads the same way. An
 * arch whose device code holds the tree or the id where no mark can stand
 * (a cubin's bytes, a PTX byte array: an assert's __FILE__, an internal
 * function's name in a cubin), or whose device-only source (cicc's
 * .cudafe1.gpu) names the tree outside line directives, is path-dependent
 * (cache.h): kept per tree.
 */
#include "split.h"

#include <cubincache/binfmt.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The form of a stored arch, in its content and direct keys: entries of
 * another form are never read as this one. */
#define SPLIT_ENTRY "split-entry-2"

enum kind {
    K_ASSIGN, K_DEV_PP, K_HOST_PP, K_FILTER, K_CUDAFE, K_CICC, K_PTXAS, K_FATBIN, K_HOST_CC,
    K_RM, K_OTHER
};

struct step {
    enum kind kind;
    char *line;
    char **tok;
    size_t ntok;
    unsigned arch;   /* DEV_PP, CICC: the virtual arch; PTXAS: the real one */
    const char *in, *out; /* into tok */
    int group;       /* CICC, PTXAS, DEV_PP: the virtual arch's group, else -1 */
    char dep[PATH_MAX]; /* PP: the dependency file added to it */
    char trace[PATH_MAX]; /* the step's trace log, "" when it did not run traced */
};

struct group {
    unsigned arch;
    int cicc, pp, last_ptxas; /* step indices */
    bool cached;
    struct cbc_hash key;
    bool keyed;
    /* direct mode: without and with the arch list in the key */
    struct cbc_cache_unit u[2];
    bool direct_hit;
    int hit_w; /* which of dt matched */
    /* a direct hit's entry, restored at the arch's preprocessing step (its
     * text needs the module id, which cudafe++ writes before it) */
    uint8_t *pending;
    size_t pending_len;
    bool id_in_source; /* what cicc reads holds the module id itself: not marked */
    bool names_tree;   /* its device code holds the tree or the id (group_entry) */
};

struct run {
    const struct cbc_split_req *req;
    struct cbc_split_result *res;
    struct cbc_err *err;
    struct step *s;
    size_t n;
    struct group g[32];
    size_t ng;
    struct cbc_buf out, errs;
    char pid_prefix[64]; /* "tmpxft_<pid>_<n>-" of this run */
    /* one virtual arch: nvcc names its files "k.ptx", "k.sm_89.cubin";
     * with several, "k.compute_89.ptx", "k.compute_89.sm_89.cubin". Keys
     * and stored files use the second form, so an arch compiled alone is
     * reused when more are added (and back): this run's role -> that one */
    struct rename {
        char run[160], canon[192];
    } ren[16];
    size_t n_ren;
    char dry_trace[PATH_MAX]; /* the dryrun's trace log, "" when untraced */
    unsigned serial;
    char mid[128]; /* nvcc's module id, once cudafe++ wrote it (run_mid) */
    bool mid_read;
};

/* ---- the dryrun --------------------------------------------------------------- */

/* Splits a command line as sh would for nvcc's quoting: spaces outside
 * double quotes separate, quotes go, \" and \\ inside them are literal. */
static char **tokenize(const char *line, size_t *n)
{
    size_t cap = 16;
    char **v = calloc(cap, sizeof *v);
    *n = 0;
    const char *p = line;
    while (v) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        struct cbc_buf b = {0};
        bool q = false;
        for (; *p && (q || (*p != ' ' && *p != '\t')); p++) {
            if (*p == '"') {
                q = !q;
            } else if (q && *p == '\\' && (p[1] == '"' || p[1] == '\\')) {
                cbc_buf_append(&b, p + 1, 1);
                p++;
            } else {
                cbc_buf_append(&b, p, 1);
            }
        }
        if (!b.p && !b.oom)
            cbc_buf_append(&b, "", 0);
        if (b.oom || !b.p) {
            cbc_buf_release(&b);
            break;
        }
        if (*n + 1 >= cap) {
            char **nv = cbc_reallocarray(v, cap * 2, sizeof *v);
            if (!nv) {
                cbc_buf_release(&b);
                break;
            }
            v = nv;
            cap *= 2;
        }
        v[(*n)++] = b.p;
        v[*n] = NULL;
    }
    return v;
}

static const char *after(const struct step *s, const char *opt)
{
    for (size_t i = 0; i + 1 < s->ntok; i++)
        if (!strcmp(s->tok[i], opt))
            return s->tok[i + 1];
    return NULL;
}

static bool has(const struct step *s, const char *opt)
{
    for (size_t i = 0; i < s->ntok; i++)
        if (!strcmp(s->tok[i], opt))
            return true;
    return false;
}

static unsigned arch_of(const char *name, const char *prefix)
{
    size_t pl = strlen(prefix);
    if (!name || strncmp(name, prefix, pl) != 0)
        return 0;
    return (unsigned)strtoul(name + pl, NULL, 10);
}

static void classify(struct step *s)
{
    s->group = -1;
    const char *line = s->line;
    if (!strncmp(line, "-- Filter Dependencies -- > ", 28)) {
        s->kind = K_FILTER;
        s->out = line + 28;
        return;
    }
    size_t nl = strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    if (nl && line[nl] == '=' && !isdigit((unsigned char)line[0])) {
        s->kind = K_ASSIGN;
        return;
    }
    if (!s->ntok) {
        s->kind = K_OTHER;
        return;
    }
    const char *prog = cbc_path_base(s->tok[0]);
    if (!strcmp(prog, "cicc")) {
        s->kind = K_CICC;
        s->arch = arch_of(after(s, "-arch"), "compute_");
        s->out = after(s, "-o");
        for (size_t i = 1; i < s->ntok; i++)
            if (strstr(s->tok[i], ".cpp1.ii"))
                s->in = s->tok[i];
    } else if (!strcmp(prog, "ptxas")) {
        s->kind = K_PTXAS;
        for (size_t i = 1; i < s->ntok; i++) {
            if (!strncmp(s->tok[i], "-arch=sm_", 9))
                s->arch = arch_of(s->tok[i], "-arch=sm_");
            else if (!strcmp(s->tok[i], "-arch") && i + 1 < s->ntok)
                s->arch = arch_of(s->tok[i + 1], "sm_");
            size_t l = strlen(s->tok[i]);
            if (l > 4 && !strcmp(s->tok[i] + l - 4, ".ptx"))
                s->in = s->tok[i];
        }
        s->out = after(s, "-o");
    } else if (!strcmp(prog, "cudafe++")) {
        s->kind = K_CUDAFE;
    } else if (!strcmp(prog, "fatbinary")) {
        s->kind = K_FATBIN;
    } else if (!strcmp(prog, "rm")) {
        s->kind = K_RM;
    } else if (has(s, "-E")) {
        s->kind = K_HOST_PP;
        for (size_t i = 1; i < s->ntok; i++)
            if (!strncmp(s->tok[i], "-D__CUDA_ARCH__=", 16)) {
                s->kind = K_DEV_PP;
                s->arch = (unsigned)strtoul(s->tok[i] + 16, NULL, 10) / 10;
            }
        s->out = after(s, "-o");
    } else if (has(s, "-c")) {
        s->kind = K_HOST_CC;
    } else {
        s->kind = K_OTHER;
    }
}

/* Groups each virtual arch's preprocessing, cicc and ptxas steps. False
 * when the shape is not the one this knows. */
static bool group_steps(struct run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        struct step *s = &r->s[i];
        if (s->kind != K_CICC)
            continue;
        if (!s->arch || !s->out || !s->in || r->ng == CBC_ARRAY_LEN(r->g))
            return false;
        struct group *g = &r->g[r->ng];
        memset(g, 0, sizeof *g);
        g->arch = s->arch, g->cicc = (int)i, g->pp = g->last_ptxas = -1;
        s->group = (int)r->ng;
        for (size_t k = 0; k < i; k++)
            if (r->s[k].kind == K_DEV_PP && r->s[k].out && !strcmp(r->s[k].out, s->in))
                g->pp = (int)k, r->s[k].group = (int)r->ng;
        for (size_t k = i + 1; k < r->n; k++)
            if (r->s[k].kind == K_PTXAS && r->s[k].in && !strcmp(r->s[k].in, s->out))
                g->last_ptxas = (int)k, r->s[k].group = (int)r->ng;
        if (g->pp < 0)
            return false;
        r->ng++;
    }
    for (size_t i = 0; i < r->n; i++) {
        enum kind k = r->s[i].kind;
        if (k == K_OTHER || ((k == K_PTXAS || k == K_DEV_PP) && r->s[i].group < 0))
            return false; /* a step this does not know, or one of no arch's group */
    }
    return true;
}

/* ---- temporary names ------------------------------------------------------------ */

/* The length of a temporary name's prefix at p ("tmpxft_0000734_00000000-7_"), or 0. */
static size_t tmp_prefix(const char *p, const char *end)
{
    static const char lead[] = "tmpxft_";
    if ((size_t)(end - p) < sizeof lead - 1 || memcmp(p, lead, sizeof lead - 1) != 0)
        return 0;
    const char *q = p + sizeof lead - 1;
    size_t hex = 0;
    while (q < end && isxdigit((unsigned char)*q))
        q++, hex++;
    if (!hex || q >= end || *q++ != '_')
        return 0;
    size_t dig = 0;
    while (q < end && isdigit((unsigned char)*q))
        q++, dig++;
    if (!dig || q >= end || *q++ != '-')
        return 0;
    dig = 0;
    while (q < end && isdigit((unsigned char)*q))
        q++, dig++;
    if (!dig || q >= end || *q++ != '_')
        return 0;
    return (size_t)(q - p);
}

/* The characters that end a role name in a line or a file. */
static size_t role_len(const char *p, const char *end)
{
    const char *q = p;
    while (q < end && !strchr("\"' \t\n<>,=", *q))
        q++;
    return (size_t)(q - p);
}

/* A role as the keys and the store name it (`to_canon`), or as this run
 * names it; the role itself when the run's shape names it the same. */
static const char *rename_role(const struct run *r, const char *role, size_t rl, bool to_canon,
                               size_t *out_len)
{
    for (size_t i = 0; i < r->n_ren; i++) {
        const char *from = to_canon ? r->ren[i].run : r->ren[i].canon;
        const char *to = to_canon ? r->ren[i].canon : r->ren[i].run;
        if (strlen(from) == rl && !memcmp(from, role, rl)) {
            *out_len = strlen(to);
            return to;
        }
    }
    *out_len = rl;
    return role;
}

/* Temporary names by role: "<tmpdir>/tmpxft_..-7_a.ptx" -> "@D@a.ptx",
 * "tmpxft_..-7_a.ptx" -> "@@a.ptx" (in the several-arch spelling). */
static void normalize(const struct run *r, const char *s, size_t len, struct cbc_buf *b)
{
    const char *end = s + len;
    size_t dl = strlen(r->req->tmpdir);
    for (const char *p = s; p < end;) {
        size_t k;
        bool dir = (size_t)(end - p) > dl + 1 && !memcmp(p, r->req->tmpdir, dl) &&
                   p[dl] == '/' && (k = tmp_prefix(p + dl + 1, end)) != 0;
        if (dir || (k = tmp_prefix(p, end)) != 0) {
            cbc_buf_puts(b, dir ? "@D@" : "@@");
            p += (dir ? dl + 1 : 0) + k;
            size_t rl = role_len(p, end), nl;
            const char *role = rename_role(r, p, rl, true, &nl);
            cbc_buf_append(b, role, nl);
            p += rl;
        } else {
            cbc_buf_append(b, p, 1);
            p++;
        }
    }
}

/* The role of a name in a group: "k.ptx" -> "k.compute_89.ptx",
 * "k.sm_89.cubin" -> "k.compute_89.sm_89.cubin", ...; false when it is
 * none of a group's (or already in that form). */
static bool canon_role(const char *role, unsigned arch, char *out, size_t cap)
{
    static const char *const sfx[] = {".cudafe1.stub.c", ".cudafe1.c", ".cudafe1.gpu",
                                      ".cpp1.ii", ".ptx"};
    char infix[32];
    snprintf(infix, sizeof infix, ".compute_%u.", arch);
    if (strstr(role, infix))
        return false;
    size_t n = strlen(role), cut = 0;
    for (size_t i = 0; i < CBC_ARRAY_LEN(sfx) && !cut; i++) {
        size_t sl = strlen(sfx[i]);
        if (n > sl && !strcmp(role + n - sl, sfx[i]))
            cut = n - sl;
    }
    const char *sm = strstr(role, ".sm_");
    if (!cut && sm && n > 6 && !strcmp(role + n - 6, ".cubin"))
        cut = (size_t)(sm - role);
    if (!cut)
        return false;
    snprintf(out, cap, "%.*s.compute_%u%s", (int)cut, role, arch, role + cut);
    return strlen(out) < cap - 1;
}

/* The renames of a one-arch run: every file of its group. */
static void plan_renames(struct run *r)
{
    r->n_ren = 0;
    if (r->ng != 1)
        return;
    const struct group *g = &r->g[0];
    const struct step *c = &r->s[g->cicc];
    const char *paths[16];
    size_t np = 0;
    const char *opts[] = {"-o", "--gen_c_file_name", "--stub_file_name", "--gen_device_file_name"};
    for (size_t i = 0; i < CBC_ARRAY_LEN(opts); i++)
        if (after(c, opts[i]))
            paths[np++] = after(c, opts[i]);
    paths[np++] = c->in;
    for (int k = g->cicc + 1; k <= g->last_ptxas && np < CBC_ARRAY_LEN(paths); k++)
        if (r->s[k].kind == K_PTXAS && r->s[k].group == 0 && r->s[k].out)
            paths[np++] = r->s[k].out;
    for (size_t i = 0; i < np && r->n_ren < CBC_ARRAY_LEN(r->ren); i++) {
        const char *base = cbc_path_base(paths[i]), *end = base + strlen(base);
        size_t k = tmp_prefix(base, end);
        if (!k)
            continue;
        struct rename *rn = &r->ren[r->n_ren];
        if (strlen(base + k) < sizeof rn->run &&
            canon_role(base + k, g->arch, rn->canon, sizeof rn->canon)) {
            snprintf(rn->run, sizeof rn->run, "%s", base + k);
            r->n_ren++;
        }
    }
}

/* This run's name for a role, from the dryrun's lines: the prefix of the
 * temporary file whose name ends in `role`. */
static const char *prefix_for(const struct run *r, const char *role, size_t rl)
{
    for (size_t i = 0; i < r->n; i++) {
        const char *line = r->s[i].line, *end = line + strlen(line);
        for (const char *p = line; (p = strstr(p, "tmpxft_")); p++) {
            size_t k = tmp_prefix(p, end);
            if (k && (size_t)(end - p) >= k + rl && !memcmp(p + k, role, rl) &&
                (p + k + rl == end || strchr("\" ", p[k + rl])))
                return p;
        }
    }
    return NULL;
}

/* The inverse of normalize, for this run; false when a role has no name
 * in this run (the stored entry is then not used). */
static bool denormalize(const struct run *r, const uint8_t *s, size_t len, struct cbc_buf *b)
{
    const char *p = (const char *)s, *end = p + len;
    while (p < end) {
        bool dir = (size_t)(end - p) >= 3 && !memcmp(p, "@D@", 3);
        if (!dir && !((size_t)(end - p) >= 2 && !memcmp(p, "@@", 2))) {
            cbc_buf_append(b, p, 1);
            p++;
            continue;
        }
        p += dir ? 3 : 2;
        size_t rl = role_len(p, end), nl;
        const char *role = rename_role(r, p, rl, false, &nl);
        const char *pre = prefix_for(r, role, nl);
        if (!pre)
            return false;
        if (dir) {
            cbc_buf_puts(b, r->req->tmpdir);
            cbc_buf_puts(b, "/");
        }
        cbc_buf_append(b, pre, tmp_prefix(pre, pre + strlen(pre)));
        cbc_buf_append(b, role, nl);
        p += rl;
    }
    return !b->oom;
}

/* ---- running steps --------------------------------------------------------------- */

/* Runs one command line through /bin/sh; its output goes to files named
 * for the step, appended to the run's output afterwards. */
static enum cbc_status sh(struct run *r, size_t i, const char *line, int *code, uint8_t **out,
                          size_t *out_len, uint8_t **err_out, size_t *err_len)
{
    char op[PATH_MAX], ep[PATH_MAX];
    snprintf(op, sizeof op, "%s/.step%zu.out", r->req->tmpdir, i);
    snprintf(ep, sizeof ep, "%s/.step%zu.err", r->req->tmpdir, i);
    char *argv[] = {"/bin/sh", "-c", (char *)line, NULL};
    struct step *s = &r->s[i];
    snprintf(s->trace, sizeof s->trace, "%s/.trace%zu", r->req->tmpdir, i);
    struct cbc_trace_run tr;
    enum cbc_status st = cbc_trace_run_init(&tr, r->req->trace_log ? s->trace : NULL,
                                            r->req->tmpdir, r->err);
    if (st != CBC_OK)
        return st;
    if (!tr.log)
        s->trace[0] = '\0';
    pid_t pid;
    st = cbc_proc_spawn_env(argv, op, ep, tr.env, &pid, r->err);
    cbc_trace_run_release(&tr);
    if (st != CBC_OK)
        return st;
    *code = cbc_proc_wait(pid);
    *out = *err_out = NULL;
    *out_len = *err_len = 0;
    cbc_file_read(op, out, out_len, NULL);
    cbc_file_read(ep, err_out, err_len, NULL);
    unlink(op);
    unlink(ep);
    return CBC_OK;
}

/* ---- the depfile nvcc writes ------------------------------------------------------ */

/* The depfile's names, each once: spelled as the compiler spelled it, told
 * apart by absolute path (a file met relative and absolute is one). */
struct names {
    char **v, **abs;
    size_t n, cap, cap2;
    const char *cwd;
};

static bool add_name(struct names *ns, const char *name, size_t len)
{
    char *nm = cbc_strndup(name, len);
    char *ab = nm ? cbc_path_abs_from(ns->cwd, nm) : NULL;
    bool ok = ab != NULL;
    for (size_t i = 0; ok && i < ns->n; i++)
        if (!strcmp(ns->abs[i], ab)) {
            free(nm), free(ab);
            return true;
        }
    ok = ok && cbc_grow(&ns->v, ns->n, &ns->cap, sizeof *ns->v, 64) &&
         cbc_grow(&ns->abs, ns->n, &ns->cap2, sizeof *ns->abs, 64);
    if (!ok) {
        free(nm), free(ab);
        return false;
    }
    ns->v[ns->n] = nm;
    ns->abs[ns->n++] = ab;
    return true;
}

/* The prerequisites of a gcc -MD file, as spelled there. */
static bool add_deps(const char *path, struct names *ns)
{
    uint8_t *d = NULL;
    size_t len = 0;
    if (cbc_file_read(path, &d, &len, NULL) != CBC_OK)
        return false;
    const char *p = memchr(d, ':', len), *end = (const char *)d + len;
    bool ok = p != NULL;
    for (p = p ? p + 1 : end; ok && p < end;) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' ||
                           (*p == '\\' && p + 1 < end && (p[1] == '\n' || p[1] == '\r'))))
            p += *p == '\\' ? 2 : 1;
        const char *q = p;
        while (q < end && *q != ' ' && *q != '\t' && *q != '\n' && *q != '\r')
            q += *q == '\\' && q + 1 < end && q[1] == ' ' ? 2 : 1;
        if (q == p)
            break;
        ok = add_name(ns, p, (size_t)(q - p));
        p = q;
    }
    free(d);
    return ok;
}

/* nvcc's format: "target : dep \\\n    dep \\\n ...    dep\n", the files
 * of each arch's preprocessing in the order nvcc ran them, then what only
 * the host side read (the order nvcc's own depfile has). An arch served
 * through direct mode was not preprocessed: the depfile its preprocessing
 * wrote is restored with its files (stored as "pp.d"). */
static bool write_depfile(struct run *r)
{
    struct names ns = {.cwd = r->req->now->cwd};
    bool ok = true;
    for (size_t i = 0; ok && i < r->n; i++) {
        const struct step *s = &r->s[i];
        const struct group *g = s->group >= 0 ? &r->g[s->group] : NULL;
        if (s->kind != K_DEV_PP)
            continue;
        if (s->dep[0]) { /* run, or its depfile restored with the arch's files */
            ok = add_deps(s->dep, &ns);
            continue;
        }
        if (!g || !g->direct_hit)
            continue;
        /* an entry stored before depfiles were: the record's files */
        size_t n = 0;
        const struct cbc_direct_dep *dd =
            cbc_direct_deps(r->req->cache->direct, &g->u[g->hit_w].dt, &n);
        ok = add_name(&ns, r->req->now->source, strlen(r->req->now->source));
        for (size_t k = 0; ok && k < n; k++)
            ok = add_name(&ns, dd[k].path, strlen(dd[k].path));
    }
    for (size_t i = 0; ok && i < r->n; i++)
        if (r->s[i].kind == K_HOST_PP)
            ok = add_deps(r->s[i].dep, &ns);
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, r->req->dep_target);
    cbc_buf_puts(&b, " :");
    for (size_t i = 0; i < ns.n; i++) {
        cbc_buf_puts(&b, i ? " \\\n    " : " ");
        cbc_buf_puts(&b, ns.v[i]);
        free(ns.v[i]);
        free(ns.abs[i]);
    }
    free(ns.v);
    free(ns.abs);
    cbc_buf_puts(&b, "\n");
    ok = ok && !b.oom &&
         cbc_file_write_atomic(r->req->depfile, b.p, b.len, 0666, NULL) == CBC_OK;
    cbc_buf_release(&b);
    return ok;
}

/* ---- stored archs ---------------------------------------------------------------- */

/* The role of a temporary path: "@D@a.compute_86.ptx". */
static char *role_of(const struct run *r, const char *path)
{
    struct cbc_buf b = {0};
    normalize(r, path, strlen(path), &b);
    return b.p;
}

/* The files a group's steps write, by role: cicc's four, each ptxas's cubin. */
static size_t group_outputs(const struct run *r, const struct group *g, const char **paths,
                            size_t cap)
{
    const struct step *c = &r->s[g->cicc];
    const char *opts[] = {"-o", "--gen_c_file_name", "--stub_file_name", "--gen_device_file_name"};
    size_t n = 0;
    for (size_t i = 0; i < CBC_ARRAY_LEN(opts) && n < cap; i++) {
        const char *p = after(c, opts[i]);
        if (p)
            paths[n++] = p;
    }
    for (int k = g->cicc + 1; k <= g->last_ptxas && n < cap; k++)
        if (r->s[k].kind == K_PTXAS && r->s[k].group == (int)(g - r->g) && r->s[k].out)
            paths[n++] = r->s[k].out;
    return n;
}

/* A stub or cudafe file names the temporary files next to it; binaries
 * are stored as they are. */
static bool is_text_role(const char *path)
{
    size_t l = strlen(path);
    return !(l > 6 && !strcmp(path + l - 6, ".cubin"));
}

/* The module id cudafe++ wrote for this compile (the file cicc's
 * --module_id_file_name names), or NULL: none, not written yet, or not an
 * id that can be marked (under 8 bytes, or holding '@' or a control byte). */
static const char *run_mid(struct run *r, const struct group *g)
{
    if (!r->mid_read) {
        const char *path = after(&r->s[g->cicc], "--module_id_file_name");
        uint8_t *d = NULL;
        size_t n = 0;
        if (!path || cbc_file_read(path, &d, &n, NULL) != CBC_OK)
            return NULL; /* not yet: asked again later */
        r->mid_read = true;
        bool ok = n >= 8 && n < sizeof r->mid;
        for (size_t i = 0; ok && i < n; i++)
            ok = d[i] > ' ' && d[i] < 0x7f && d[i] != '@';
        if (ok)
            memcpy(r->mid, d, n), r->mid[n] = '\0';
        free(d);
    }
    return r->mid[0] ? r->mid : NULL;
}

/* A text member as stored: this run's temporary names by role, then the
 * base and (unless cicc's input holds it) the module id as marks. */
static bool store_text(struct run *r, const struct group *g, const void *s, size_t n,
                       struct cbc_buf *out)
{
    struct cbc_buf t = {0};
    normalize(r, s ? s : "", s ? n : 0, &t);
    const struct cbc_cache *c = r->req->cache;
    cbc_base_template_id(c ? c->base : NULL, g->id_in_source ? NULL : run_mid(r, g),
                         t.p ? t.p : "", t.len, out);
    bool ok = !t.oom && !out->oom;
    cbc_buf_release(&t);
    return ok;
}

/* The inverse of store_text for this run; false when the member does not
 * fit it (a mark it cannot fill, a role it has no name for). */
static bool load_text(struct run *r, const struct group *g, const uint8_t *s, size_t n,
                      struct cbc_buf *out)
{
    struct cbc_buf t = {0};
    const struct cbc_cache *c = r->req->cache;
    bool ok = cbc_base_expand_id(c ? c->base : NULL, run_mid(r, g), s ? (const char *)s : "",
                                 s ? n : 0, &t) &&
              denormalize(r, t.p ? (const uint8_t *)t.p : (const uint8_t *)"", t.len, out);
    cbc_buf_release(&t);
    return ok;
}

/* The key of a group: what cicc reads (the arch's preprocessed source,
 * its paths under the base as marks), the cicc and ptxas lines by role,
 * nvcc and the host compiler, the environment. The module id is not in it:
 * it is a mark in the entry, or the entry is kept per tree (group_entry). */
static bool group_key(struct run *r, struct group *g)
{
    const struct step *c = &r->s[g->cicc];
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        return false;
    uint8_t *d = NULL;
    size_t n = 0;
    bool ok = cbc_file_read(c->in, &d, &n, NULL) == CBC_OK;
    const char *mid = ok ? run_mid(r, g) : NULL;
    g->id_in_source = mid && memmem(d, n, mid, strlen(mid));
    if (ok) {
        struct cbc_buf t = {0};
        cbc_base_template(r->req->cache ? r->req->cache->base : NULL, (const char *)d, n, &t);
        ok = !t.oom;
        cbc_hasher_str(h, 3, SPLIT_ENTRY);
        cbc_hasher_field(h, 1, t.p ? t.p : "", t.len);
        cbc_buf_release(&t);
    }
    free(d);
    struct cbc_hash content;
    cbc_hasher_digest(h, &content);
    cbc_hasher_free(h);
    if (!ok)
        return false;
    /* the lines, by role, as the key's flags */
    char *flags[16];
    size_t nf = 0;
    struct cbc_buf b = {0};
    normalize(r, c->line, strlen(c->line), &b);
    flags[nf++] = b.p;
    for (int k = g->cicc + 1; k <= g->last_ptxas && nf < CBC_ARRAY_LEN(flags); k++) {
        if (r->s[k].kind != K_PTXAS || r->s[k].group != (int)(g - r->g))
            continue;
        struct cbc_buf pb = {0};
        normalize(r, r->s[k].line, strlen(r->s[k].line), &pb);
        flags[nf++] = pb.p;
    }
    bool all = true;
    for (size_t i = 0; i < nf; i++)
        all &= flags[i] != NULL;
    struct cbc_key_now now = *r->req->now;
    now.source_hash = &content;
    now.flags = flags;
    now.n_flags = nf;
    now.cwd = NULL;
    struct cbc_target t = {CBC_KIND_PTX, CBC_VARIANT_NONE, (uint16_t)g->arch};
    struct cbc_key_inputs in;
    ok = all && cbc_key_inputs_make(&now, &t, NULL, 0, &in);
    if (ok)
        cbc_key_result(&in, &g->key);
    for (size_t i = 0; i < nf; i++)
        free(flags[i]);
    g->keyed = ok;
    return ok;
}

/* Restores a group's files from its stored entry; false (nothing written)
 * when the entry does not fit this run. */
static bool restore(struct run *r, struct group *g, const uint8_t *data, size_t len)
{
    struct cbc_result fs;
    bool ok = cbc_result_decode(data, len, &fs, NULL) == CBC_OK;
    const char *paths[16];
    size_t np = ok ? group_outputs(r, g, paths, CBC_ARRAY_LEN(paths)) : 0;
    struct cbc_buf contents[16] = {{0}};
    for (size_t i = 0; ok && i < np; i++) {
        char *role = role_of(r, paths[i]);
        const struct cbc_member *f = role ? cbc_result_get(&fs, role) : NULL;
        free(role);
        if (!f) {
            ok = false;
            break;
        }
        if (is_text_role(paths[i]))
            ok = load_text(r, g, f->data, f->len, &contents[i]);
        else
            cbc_buf_append(&contents[i], f->data, f->len);
        /* the device code must be what its step says */
        const struct step *w = NULL;
        for (int k = g->cicc; k <= g->last_ptxas && !w; k++)
            if (r->s[k].out && !strcmp(r->s[k].out, paths[i]))
                w = &r->s[k];
        if (ok && w) {
            struct cbc_target t = {w->kind == K_PTXAS ? CBC_KIND_SASS : CBC_KIND_PTX,
                                   CBC_VARIANT_NONE, (uint16_t)w->arch};
            struct cbc_target found = {0};
            ok = cbc_binfmt_verify_target((const uint8_t *)contents[i].p, contents[i].len, &t,
                                          paths[i], &found, NULL) != CBC_E_FORMAT &&
                 found.arch == t.arch && found.kind == t.kind;
        }
    }
    /* what the skipped steps printed, in their order (decoded before
     * anything is written) */
    struct cbc_buf printed[2] = {{0}, {0}};
    for (int k = g->cicc; ok && k <= g->last_ptxas; k++) {
        if (r->s[k].group != (int)(g - r->g) || (r->s[k].kind != K_CICC && r->s[k].kind != K_PTXAS))
            continue;
        char nm[32];
        snprintf(nm, sizeof nm, "1:%d", k - g->cicc);
        const struct cbc_member *o = cbc_result_get(&fs, nm);
        if (o && o->len)
            ok = load_text(r, g, o->data, o->len, &printed[0]);
        snprintf(nm, sizeof nm, "2:%d", k - g->cicc);
        o = cbc_result_get(&fs, nm);
        if (ok && o && o->len)
            ok = load_text(r, g, o->data, o->len, &printed[1]);
    }
    for (size_t i = 0; ok && i < np; i++)
        ok = cbc_file_write_atomic(paths[i], contents[i].p ? contents[i].p : "", contents[i].len,
                                   0600, NULL) == CBC_OK;
    /* its preprocessing's depfile, where the step would have written it */
    const struct cbc_member *ppd = ok ? cbc_result_get(&fs, "pp.d") : NULL;
    struct step *pp = &r->s[g->pp];
    if (ppd && !pp->dep[0]) {
        struct cbc_buf b = {0};
        char dep[PATH_MAX];
        snprintf(dep, sizeof dep, "%s/.pp%d.d", r->req->tmpdir, g->pp);
        if (load_text(r, g, ppd->data, ppd->len, &b) &&
            cbc_file_write_atomic(dep, b.p ? b.p : "", b.len, 0600, NULL) == CBC_OK)
            memcpy(pp->dep, dep, strlen(dep) + 1);
        cbc_buf_release(&b);
    }
    if (ok) {
        cbc_buf_append(&r->out, printed[0].p, printed[0].len);
        cbc_buf_append(&r->errs, printed[1].p, printed[1].len);
    }
    cbc_buf_release(&printed[0]);
    cbc_buf_release(&printed[1]);
    for (size_t i = 0; i < CBC_ARRAY_LEN(contents); i++)
        cbc_buf_release(&contents[i]);
    cbc_result_release(&fs);
    return ok;
}

/* The group's entry under its content key (g->key), restored. */
static bool fetch(struct run *r, struct group *g, struct cbc_cache_unit *u)
{
    struct cbc_target rt = cbc_store_result_target();
    char what[64];
    snprintf(what, sizeof what, "device code of compute_%u", g->arch);
    u->result = g->key;
    /* an entry that names this tree is stored under the tree too
     * (commit_group): look for both */
    bool hit = cbc_cache_get_any(r->req->cache, u, &rt, what, NULL) == CBC_OK &&
               u->state == CBC_CACHE_HIT;
    if (!hit)
        return false;
    const struct cbc_cache *c = r->req->cache;
    u->path_dependent = u->path_dependent || cbc_base_names(c->base, c->cwd, u->data, u->len);
    bool ok = restore(r, g, u->data, u->len);
    free(u->data);
    u->data = NULL;
    return ok;
}

/* A group's entry after its steps ran (the steps' output is in outs):
 * every file by role, its preprocessing's depfile, what the steps printed,
 * text as store_text spells it. NULL when a file cannot be stored.
 * g->names_tree: the entry holds the tree (base or working directory) or
 * the module id where no mark stands: in a binary, in PTX's byte arrays,
 * or as written because cicc's input holds the id itself. */
static uint8_t *group_entry(struct run *r, struct group *g, const struct cbc_result *outs,
                            size_t *len)
{
    const char *paths[16];
    size_t np = group_outputs(r, g, paths, CBC_ARRAY_LEN(paths));
    struct cbc_result fs = {0};
    const struct cbc_cache *c = r->req->cache;
    const char *source = r->req->now ? r->req->now->source : NULL, *mid = run_mid(r, g);
    bool ok = c != NULL, saw_gpu = false;
    g->names_tree = g->id_in_source;
    for (size_t i = 0; ok && i < np; i++) {
        uint8_t *d = NULL;
        size_t n = 0;
        char *role = role_of(r, paths[i]);
        ok = role && cbc_file_read(paths[i], &d, &n, NULL) == CBC_OK;
        if (ok && cbc_cache_is_device_tu(paths[i])) {
            saw_gpu = true;
            g->names_tree |= cbc_cache_device_code_names_tree(c, d, n);
        }
        if (ok && is_text_role(paths[i])) {
            /* as stored: what still names the tree has no mark */
            struct cbc_buf b = {0};
            ok = store_text(r, g, d, n, &b) && cbc_result_add(&fs, role, b.p ? b.p : "", b.len);
            g->names_tree |= ok && cbc_cache_names_tree(c, source, (const uint8_t *)b.p, b.len);
            cbc_buf_release(&b);
        } else if (ok) {
            /* a binary naming a temporary file could not be moved to another run */
            ok = !memmem(d, n, "tmpxft_", 7) && cbc_result_add(&fs, role, d, n);
            g->names_tree |= cbc_cache_names_tree(c, source, d, n) ||
                             (mid && memmem(d, n, mid, strlen(mid)));
        }
        free(d);
        free(role);
    }
    /* the arch's depfile, for the depfile of a compile that skips its
     * preprocessing (it names no temporary but its own target) */
    uint8_t *pd = NULL;
    size_t pn = 0;
    if (ok && r->s[g->pp].dep[0] && cbc_file_read(r->s[g->pp].dep, &pd, &pn, NULL) == CBC_OK) {
        struct cbc_buf b = {0};
        ok = store_text(r, g, pd, pn, &b) && cbc_result_add(&fs, "pp.d", b.p ? b.p : "", b.len);
        cbc_buf_release(&b);
    }
    free(pd);
    g->names_tree |= !saw_gpu; /* no device-only source to ask: kept per tree */
    /* an id that could not be read could not be marked: whatever holds it is this tree's */
    g->names_tree |= !mid && after(&r->s[g->cicc], "--module_id_file_name");
    for (size_t i = 0; ok && i < outs->n; i++) {
        struct cbc_buf b = {0};
        ok = store_text(r, g, outs->m[i].data, outs->m[i].len, &b) &&
             cbc_result_add(&fs, outs->m[i].name, b.p ? b.p : "", b.len);
        cbc_buf_release(&b);
    }
    uint8_t *blob = ok ? cbc_result_encode(&fs, len) : NULL;
    cbc_result_release(&fs);
    return blob;
}

/* ---- direct mode for an arch ------------------------------------------------------- */

/* A line by role, without its -D__CUDA_ARCH_LIST__=... (the list is keyed
 * apart, and only when a file the compile reads mentions it). *list gets
 * the value (the last one seen). */
static char *direct_line(const struct run *r, const char *line, char *list, size_t list_len)
{
    struct cbc_buf b = {0};
    normalize(r, line, strlen(line), &b);
    if (!b.p)
        return NULL;
    static const char opt[] = "-D__CUDA_ARCH_LIST__=";
    for (char *p; (p = strstr(b.p, opt));) {
        size_t n = strcspn(p, " \"");
        if (list)
            snprintf(list, list_len, "%.*s", (int)(n - (sizeof opt - 1)), p + sizeof opt - 1);
        memmove(p, p + n, strlen(p + n) + 1);
    }
    return b.p;
}

static int host_pp(const struct run *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->s[i].kind == K_HOST_PP)
            return (int)i;
    return -1;
}

/* The direct keys of a group: the arch's preprocessing, the host's, cicc
 * and ptxas by role; [1] also the arch list. */
static bool direct_keys(struct run *r, struct group *g)
{
    int hp = host_pp(r);
    if (hp < 0)
        return false;
    char *flags[20];
    size_t nf = 0;
    char list[256] = "";
    flags[nf++] = cbc_strdup("--cubincache-" SPLIT_ENTRY);
    flags[nf++] = direct_line(r, r->s[g->pp].line, list, sizeof list);
    flags[nf++] = direct_line(r, r->s[hp].line, NULL, 0);
    for (int k = g->cicc; k <= g->last_ptxas && nf < CBC_ARRAY_LEN(flags) - 1; k++)
        if ((r->s[k].kind == K_CICC || r->s[k].kind == K_PTXAS) && r->s[k].group == (int)(g - r->g))
            flags[nf++] = direct_line(r, r->s[k].line, NULL, 0);
    bool ok = true;
    for (size_t i = 0; i < nf; i++)
        ok &= flags[i] != NULL;
    struct cbc_target t = {CBC_KIND_PTX, CBC_VARIANT_NONE, (uint16_t)g->arch};
    for (int with_list = 0; ok && with_list < 2; with_list++) {
        if (with_list)
            flags[nf++] = cbc_asprintf("--cubincache-arch-list=%s", list);
        ok = flags[nf - 1] != NULL;
        struct cbc_key_now now = *r->req->now;
        now.flags = flags;
        now.n_flags = nf;
        struct cbc_key_inputs in;
        ok = ok && cbc_key_inputs_make(&now, &t, NULL, 0, &in);
        if (ok)
            cbc_key_direct(&in, &g->u[with_list].dt.direct_key);
    }
    for (size_t i = 0; i < nf; i++)
        free(flags[i]);
    return ok;
}

/* A group served through direct mode: its files restored without its
 * preprocessing run. */
static bool direct_lookup(struct run *r, struct group *g)
{
    if (!direct_keys(r, g))
        return false;
    struct cbc_target rt = cbc_store_result_target();
    char what[64];
    snprintf(what, sizeof what, "device code of compute_%u", g->arch);
    for (int w = 1; w >= 0; w--) { /* the list-keyed record first: it exists only when needed */
        struct cbc_cache_unit *u = &g->u[w];
        if (cbc_cache_lookup(r->req->cache, u, &rt, what, NULL) != CBC_OK ||
            u->state != CBC_CACHE_HIT)
            continue;
        g->key = u->result;
        g->keyed = true;
        g->pending = u->data, g->pending_len = u->len;
        u->data = NULL;
        g->hit_w = w;
        return g->direct_hit = true;
    }
    return false;
}

/* A direct hit's entry, at its arch's preprocessing step: restored, or
 * the arch is compiled after all (the step runs). */
static bool restore_pending(struct run *r, struct group *g)
{
    bool ok = restore(r, g, g->pending, g->pending_len);
    free(g->pending);
    g->pending = NULL;
    if (!ok)
        g->cached = g->direct_hit = false;
    return ok;
}

/* The union of two sorted path lists (each as cbc_depfile_parse makes them). */
static char **merge_paths(char **a, size_t na, char **b, size_t nb, size_t *n)
{
    char **v = calloc(na + nb + 1, sizeof *v);
    size_t i = 0, k = 0, w = 0;
    while (v && (i < na || k < nb)) {
        int c = i == na ? 1 : k == nb ? -1 : strcmp(a[i], b[k]);
        const char *p = c <= 0 ? a[i] : b[k];
        i += c <= 0;
        k += c >= 0;
        if (!(v[w++] = cbc_strdup(p))) {
            cbc_paths_free(v, w);
            return NULL;
        }
    }
    *n = w;
    return v;
}

/* What a group's preprocessing and the host's read and looked for, from
 * their depfiles and traces; false when the two steps did not both run
 * traced, or their files cannot be read. */
static bool collect_group(struct run *r, struct group *g, struct cbc_filememo *memo,
                          struct cbc_collect_out *out)
{
    int hp = host_pp(r);
    if (hp < 0 || !r->s[g->pp].trace[0] || !r->s[hp].trace[0])
        return false;
    const struct cbc_key_now *now = r->req->now;
    char **files[2] = {NULL, NULL};
    size_t nf[2] = {0, 0};
    bool ok = true;
    const char *dep[2] = {r->s[g->pp].dep, r->s[hp].dep};
    for (int f = 0; ok && f < 2; f++) {
        uint8_t *d = NULL;
        size_t len = 0;
        ok = cbc_file_read(dep[f], &d, &len, NULL) == CBC_OK &&
             cbc_depfile_parse((const char *)d, len, now->cwd, now->source, &files[f], &nf[f],
                               dep[f], NULL) == CBC_OK;
        free(d);
    }
    size_t n = 0;
    char **paths = ok ? merge_paths(files[0], nf[0], files[1], nf[1], &n) : NULL;
    const char *logs[2] = {r->s[g->pp].trace, r->s[hp].trace};
    struct cbc_trace t = {0};
    ok = paths && cbc_trace_load_many(logs, 2, &t, NULL) == CBC_OK;
    const char *own[] = {r->req->tmpdir};
    struct cbc_collect_in in = {paths, n, now->source, &t, own, 1, NULL, 0,
                                r->req->started_ns, memo};
    ok = ok && cbc_collect(&in, out, NULL) == CBC_OK;
    cbc_trace_release(&t);
    cbc_paths_free(paths, n);
    cbc_paths_free(files[0], nf[0]);
    cbc_paths_free(files[1], nf[1]);
    return ok;
}

/* After a group's device code is known (compiled, or restored under its
 * content key): its entry when it was compiled (`entry`), and the record
 * that finds it next time without preprocessing (with the arch list in the
 * key when a file mentions it). An entry is stored even when no record can
 * be: it is keyed on what cicc reads. */
static void commit_group(struct run *r, struct group *g, struct cbc_filememo *memo,
                         const uint8_t *entry, size_t len)
{
    if (!g->keyed)
        return;
    struct cbc_collect_out co;
    bool collected = collect_group(r, g, memo, &co);
    struct cbc_cache_unit *u = &g->u[collected && co.mentions & CBC_MENTIONS_ARCH_LIST ? 1 : 0];
    u->result = g->key;
    /* device code that names its tree (an assert's __FILE__, a path in a
     * string) is this tree's alone: stored and recorded as such, so another
     * checkout compiles its own; a restored entry's fetch said it already */
    if (entry)
        u->path_dependent = g->names_tree ||
                            cbc_base_names(r->req->cache->base, r->req->cache->cwd, entry, len);
    else
        u->path_dependent = g->u[0].path_dependent;
    struct cbc_target rt = cbc_store_result_target();
    enum cbc_commit outcome;
    cbc_cache_commit(r->req->cache, u, collected ? &co : NULL, &rt, entry, len, &outcome, NULL,
                     0, NULL);
    if ((!collected || outcome != CBC_COMMIT_STORED) && !r->res->unrecorded[0])
        cbc_fmt(r->res->unrecorded, sizeof r->res->unrecorded, "compute_%u: %s", g->arch,
                !collected ? "its preprocessing or the host's did not run traced"
                : co.why[0] ? co.why : "the cache did not store it");
    if (collected && outcome != CBC_COMMIT_STORED && entry) /* no record: the entry still */
        cbc_cache_commit(r->req->cache, u, NULL, &rt, entry, len, &outcome, NULL, 0, NULL);
    if (collected)
        cbc_collect_release(&co);
}

/* What the command's trace needs of a group served from its record
 * without preprocessing: the files the record holds, as read, and its
 * probes, as looked for. */
static bool trace_served(const struct run *r, const struct group *g)
{
    const struct cbc_dep_list *l = cbc_cache_unit_list(r->req->cache, &g->u[g->hit_w]);
    bool ok = l != NULL;
    for (size_t i = 0; ok && i < l->n; i++)
        ok = cbc_trace_append(r->req->trace_log, 'R', l->deps[i].path, NULL) == CBC_OK;
    for (size_t d = 0; ok && d < l->n_probes; d++)
        for (size_t k = 0; ok && k < l->probes[d].n; k++) {
            char *p = cbc_asprintf("%s/%s", l->probes[d].dir, l->names[l->probes[d].first + k]);
            ok = p && cbc_trace_append(r->req->trace_log, 'A', p, NULL) == CBC_OK;
            free(p);
        }
    return ok;
}

/* Every step's trace into the command's, then what the served groups stand
 * in for. False when one cannot be: the command is then not recorded. */
static bool gather_traces(const struct run *r)
{
    const char *log = r->req->trace_log;
    if (!log)
        return true;
    struct cbc_buf all = {0};
    for (size_t i = 0; i <= r->n; i++) {
        const char *t = i < r->n ? r->s[i].trace : r->dry_trace;
        uint8_t *d = NULL;
        size_t len = 0;
        if (!t[0])
            continue;
        if (cbc_file_read(t, &d, &len, NULL) != CBC_OK) {
            cbc_buf_release(&all);
            return false;
        }
        cbc_buf_append(&all, d, len);
        free(d);
    }
    bool ok = !all.oom && cbc_file_write_atomic(log, all.p ? all.p : "", all.len, 0600, NULL) ==
                              CBC_OK;
    cbc_buf_release(&all);
    for (size_t k = 0; ok && k < r->ng; k++)
        if (r->g[k].direct_hit)
            ok = trace_served(r, &r->g[k]);
    return ok;
}

/* ---- the whole compile ------------------------------------------------------------ */

static void unquote_assign(const char *line, char *name, size_t nl, const char **value)
{
    const char *eq = strchr(line, '=');
    size_t n = (size_t)(eq - line) < nl ? (size_t)(eq - line) : nl - 1;
    memcpy(name, line, n);
    name[n] = '\0';
    *value = eq + 1;
}

static enum cbc_status parse_dryrun(struct run *r, char *text, size_t len, bool *ok);

static enum cbc_status dryrun(struct run *r, bool *ok)
{
    const struct cbc_split_req *q = r->req;
    char **argv = calloc(q->argc + 3, sizeof *argv);
    if (!argv)
        return cbc_err_oom(r->err);
    argv[0] = (char *)q->nvcc;
    argv[1] = "--dryrun";
    for (size_t i = 0; i < q->argc; i++)
        argv[i + 2] = q->argv[i];
    char op[PATH_MAX];
    snprintf(op, sizeof op, "%s/.dryrun", q->tmpdir);
    snprintf(r->dry_trace, sizeof r->dry_trace, "%s/.trace-dryrun", q->tmpdir);
    struct cbc_trace_run tr;
    enum cbc_status st = cbc_trace_run_init(&tr, q->trace_log ? r->dry_trace : NULL, q->tmpdir,
                                            r->err);
    if (st != CBC_OK) {
        free(argv);
        return st;
    }
    if (!tr.log)
        r->dry_trace[0] = '\0';
    pid_t pid;
    st = cbc_proc_spawn_env(argv, op, op, tr.env, &pid, r->err);
    cbc_trace_run_release(&tr);
    int code = st == CBC_OK ? cbc_proc_wait(pid) : -1;
    free(argv);
    if (st != CBC_OK)
        return st;
    uint8_t *text = NULL;
    size_t len = 0;
    *ok = code == 0 && cbc_file_read(op, &text, &len, NULL) == CBC_OK;
    unlink(op);
    st = *ok ? parse_dryrun(r, (char *)text, len, ok) : CBC_OK;
    free(text);
    return st;
}

/* The steps of a dryrun's text (edited in place: lines are cut at their
 * ends), classified and grouped by virtual arch; *ok false when it is not a
 * shape this runs split. */
static enum cbc_status parse_dryrun(struct run *r, char *text, size_t len, bool *ok)
{
    *ok = true;
    size_t cap = 0;
    for (char *line = text, *next; *ok && line && line < text + len; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "#$ ", 3) != 0) {
            *ok = *line == '\0'; /* anything else: not a shape this knows */
            continue;
        }
        if (!cbc_grow(&r->s, r->n, &cap, sizeof *r->s, 32))
            return cbc_err_oom(r->err);
        struct step *s = &r->s[r->n++];
        memset(s, 0, sizeof *s);
        size_t l = strlen(line + 3);
        while (l && (line[3 + l - 1] == ' ' || line[3 + l - 1] == '\r'))
            l--;
        s->line = cbc_strndup(line + 3, l);
        s->tok = s->line ? tokenize(s->line, &s->ntok) : NULL;
        if (!s->line || !s->tok)
            return cbc_err_oom(r->err);
        classify(s);
    }
    /* no virtual arch (a host-only compile): nothing to cache per arch */
    *ok = *ok && r->n && group_steps(r) && r->ng;
    if (*ok)
        plan_renames(r);
    return CBC_OK;
}

static void free_steps(struct run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        for (size_t k = 0; k < r->s[i].ntok; k++)
            free(r->s[i].tok[k]);
        free(r->s[i].tok);
        free(r->s[i].line);
    }
    free(r->s);
    for (size_t k = 0; k < r->ng; k++)
        free(r->g[k].pending);
}

enum cbc_status cbc_split_run(const struct cbc_split_req *req, struct cbc_split_result *res,
                              struct cbc_err *err)
{
    memset(res, 0, sizeof *res);
    struct run r = {.req = req, .res = res, .err = err};
    bool ok = false;
    enum cbc_status st = dryrun(&r, &ok);
    if (st != CBC_OK || !ok) {
        if (st == CBC_OK)
            snprintf(res->why, sizeof res->why, "nvcc --dryrun lists steps this does not split");
        free_steps(&r);
        return st;
    }
    /* the steps' environment: nvcc's assignments, as it sets them; ours is
     * put back afterwards, for whatever runs next */
    struct saved_env {
        char name[128];
        char *value; /* NULL: was unset */
    } saved[64];
    size_t n_saved = 0;
    struct cbc_result outs[CBC_ARRAY_LEN(r.g)];
    memset(outs, 0, sizeof outs);
    struct cbc_filememo *memo = cbc_filememo_new();
    if (!memo) {
        free_steps(&r);
        return cbc_err_oom(err);
    }
    /* archs whose files are unchanged: restored before anything runs */
    for (size_t k = 0; k < r.ng; k++)
        r.g[k].cached = direct_lookup(&r, &r.g[k]);
    for (size_t i = 0; ok && i < r.n; i++) {
        struct step *s = &r.s[i];
        struct group *g = s->group >= 0 ? &r.g[s->group] : NULL;
        if (s->kind == K_ASSIGN) {
            char name[128];
            const char *value;
            unquote_assign(s->line, name, sizeof name, &value);
            bool known = false;
            for (size_t k = 0; k < n_saved && !known; k++)
                known = !strcmp(saved[k].name, name);
            if (!known && n_saved < CBC_ARRAY_LEN(saved)) {
                snprintf(saved[n_saved].name, sizeof saved[n_saved].name, "%s", name);
                const char *old = getenv(name);
                saved[n_saved++].value = old ? cbc_strdup(old) : NULL;
            } else if (!known) {
                ok = false; /* more than this can put back */
                break;
            }
            setenv(name, value, 1);
            continue;
        }
        if (s->kind == K_FILTER) {
            ok = req->depfile && write_depfile(&r);
            continue;
        }
        if (s->kind == K_RM)
            continue; /* the directory is removed whole afterwards */
        if (s->kind == K_DEV_PP && g && g->cached && (!g->pending || restore_pending(&r, g)))
            continue; /* served through direct mode: its output is not needed */
        if (s->kind == K_CICC && g->cached) {
            res->names_tree |= g->u[g->hit_w].path_dependent;
            res->archs++;
            res->archs_cached++;
            res->archs_direct++;
            continue;
        }
        if (s->kind == K_CICC) {
            res->archs++;
            if (group_key(&r, g) && fetch(&r, g, &g->u[0])) {
                res->names_tree |= g->u[0].path_dependent;
                g->cached = true;
                res->archs_cached++;
                commit_group(&r, g, memo, NULL, 0); /* next time without preprocessing */
                continue;
            }
        }
        if ((s->kind == K_PTXAS) && g && g->cached)
            continue;
        char *line = s->line;
        if (s->kind == K_DEV_PP || s->kind == K_HOST_PP) {
            /* the files it reads, from the preprocessing it does anyway */
            snprintf(s->dep, sizeof s->dep, "%s/.pp%zu.d", req->tmpdir, i);
            line = cbc_asprintf("%s -MD -MF \"%s\"", s->line, s->dep);
            if (!line) {
                st = cbc_err_oom(err);
                break;
            }
        }
        int code = -1;
        uint8_t *o = NULL, *e = NULL;
        size_t ol = 0, el = 0;
        st = sh(&r, i, line, &code, &o, &ol, &e, &el);
        if (line != s->line)
            free(line);
        if (st == CBC_OK && ol)
            cbc_buf_append(&r.out, o, ol);
        if (st == CBC_OK && el)
            cbc_buf_append(&r.errs, e, el);
        if (st == CBC_OK && g && (s->kind == K_CICC || s->kind == K_PTXAS)) {
            char nm[32];
            snprintf(nm, sizeof nm, "1:%d", (int)i - g->cicc);
            cbc_result_add(&outs[s->group], nm, o, ol);
            snprintf(nm, sizeof nm, "2:%d", (int)i - g->cicc);
            cbc_result_add(&outs[s->group], nm, e, el);
        }
        free(o);
        free(e);
        if (st != CBC_OK)
            break;
        if (code != 0) {
            ok = false;
            snprintf(res->why, sizeof res->why, "a step failed (exit %d): %.*s", code, 120,
                     s->line);
            break;
        }
        if (g && g->keyed && !g->cached &&
            (int)i == (g->last_ptxas >= 0 ? g->last_ptxas : g->cicc)) {
            size_t len = 0;
            uint8_t *entry = group_entry(&r, g, &outs[s->group], &len);
            res->names_tree |= !entry || g->names_tree;
            commit_group(&r, g, memo, entry, len);
            free(entry);
        }
    }
    for (size_t k = 0; k < n_saved; k++) {
        if (saved[k].value)
            setenv(saved[k].name, saved[k].value, 1);
        else
            unsetenv(saved[k].name);
        free(saved[k].value);
    }
    for (size_t i = 0; i < CBC_ARRAY_LEN(outs); i++)
        cbc_result_release(&outs[i]);
    cbc_filememo_free(memo);
    bool done = st == CBC_OK && ok && !r.out.oom && !r.errs.oom;
    res->traced = done && req->trace_log && gather_traces(&r);
    free_steps(&r);
    if (done) {
        res->done = true;
        res->out = r.out.p, res->out_len = r.out.len;
        res->errs = r.errs.p, res->errs_len = r.errs.len;
        return CBC_OK;
    }
    if (st == CBC_OK && !res->why[0])
        snprintf(res->why, sizeof res->why, "the split compile could not finish");
    cbc_buf_release(&r.out);
    cbc_buf_release(&r.errs);
    return st;
}

void cbc_split_result_release(struct cbc_split_result *res)
{
    free(res->out);
    free(res->errs);
    memset(res, 0, sizeof *res);
}

enum cbc_status cbc_split_plan(const char *text, size_t len, struct cbc_split_plan *out,
                               struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    char *copy = malloc(len + 1);
    if (!copy)
        return cbc_err_oom(err);
    memcpy(copy, text, len);
    copy[len] = '\0';
    struct run r = {.err = err};
    bool ok = false;
    enum cbc_status st = parse_dryrun(&r, copy, len, &ok);
    out->ok = st == CBC_OK && ok;
    out->steps = r.n;
    for (size_t i = 0; out->ok && i < r.ng && out->n_archs < CBC_ARRAY_LEN(out->archs); i++)
        out->archs[out->n_archs++] = r.g[i].arch;
    out->renames = r.n_ren;
    free_steps(&r);
    free(copy);
    return st;
}
