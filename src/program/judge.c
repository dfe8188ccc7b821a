/* judge.c: a program's verdict on one GPU, file by file, by the rules of
 * program.h (per-module, dispatch, kernels).
 *
 * Order of work, cheapest first, so that a verdict reads only what can
 * change it: every module is judged from its entry headers (the driver
 * selects by them); then, on every worker, the kernels of the modules that
 * cannot launch (to name them, and to leave out kernel-less device-link
 * stubs) and of small modules that do, the first bytes of the image each
 * dispatch-judged module would load (its ELF header must say what its
 * entry header claims), and, for --kernels, the kernels of every module;
 * last, and only for a file whose registered modules leave the answer
 * open, the fatbins it loads itself are looked for in its data sections.
 * cbc_program_judge is those steps in that order: judge_modules, then
 * match_kernels for --kernels, then judge_file for each file (its modules
 * counted, then the sentence of its rule).
 */
#include "program.h"

#include "elfextra.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Loading modules whose kernel image is at most this big have their
 * kernels read, to leave nvcc's kernel-less stub (about 1 KB) out of the
 * counts; bigger ones are counted as having kernels. */
#define SMALL_IMAGE (16u << 10)
/* How much of a PTX image shows its .version and .target. */
#define PTX_HEAD 4096u

const char *cbc_judge_rule_name(enum cbc_judge_rule r)
{
    switch (r) {
    case CBC_JUDGE_PER_MODULE: return "per-module";
    case CBC_JUDGE_DISPATCH: return "dispatch";
    case CBC_JUDGE_KERNELS: return "kernels";
    }
    return "per-module";
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static enum cbc_judge_rule rule_of(const struct cbc_pfile *f, const struct cbc_judge_opts *o)
{
    if (!f->needed_as)
        return o->kernels ? CBC_JUDGE_KERNELS : o->named_rule;
    for (size_t i = 0; i < o->n_strict_libs; i++)
        if (!strcmp(o->strict_libs[i], f->needed_as) ||
            !strcmp(o->strict_libs[i], base_of(f->path)) || !strcmp(o->strict_libs[i], f->path))
            return CBC_JUDGE_PER_MODULE;
    return o->lib_rule == CBC_JUDGE_KERNELS ? CBC_JUDGE_DISPATCH : o->lib_rule;
}

/* How weak a way of loading is: SASS, then code linked at load, then JIT. */
static int how_rank(enum cbc_load_how h)
{
    switch (h) {
    case CBC_LOAD_SASS:
    case CBC_LOAD_SASS_COMPAT: return 0;
    case CBC_LOAD_LINK:
    case CBC_LOAD_AFTER_DLINK: return 1;
    case CBC_LOAD_PTX_JIT: return 2;
    case CBC_LOAD_NONE:
    case CBC_LOAD_NEEDS_DLINK: break;
    }
    return 3;
}

static const struct cbc_image *kimage(const struct cbc_pmod *m)
{
    const struct cbc_image *best = NULL;
    const struct cbc_image *v = m->n_img ? m->img : m->rel;
    size_t n = m->n_img ? m->n_img : m->n_rel;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = v[i].uncompressed_size ? v[i].uncompressed_size : v[i].size;
        if ((v[i].fatbin_kind == CBC_FATBIN_ELF || v[i].fatbin_kind == CBC_FATBIN_PTX) &&
            (!best || s < (best->uncompressed_size ? best->uncompressed_size : best->size)))
            best = &v[i];
    }
    return best;
}

static bool small_module(const struct cbc_pmod *m)
{
    const struct cbc_image *k = kimage(m);
    return k && (k->uncompressed_size ? k->uncompressed_size : k->size) <= SMALL_IMAGE;
}

/* ---- --kernels --------------------------------------------------------------- */

static bool listed(const struct cbc_judge_opts *o, const char *name, char **dem)
{
    for (size_t i = 0; i < o->n_kernels; i++)
        if (!strcmp(o->kernels[i], name))
            return true;
    if (!o->demangle || strncmp(name, "_Z", 2) != 0)
        return false;
    if (!*dem)
        *dem = o->demangle(name);
    if (!*dem)
        return false;
    /* "k_a(int*)", or its name alone: "k_a", "ns::k<float>" (the return
     * type a template's demangled name starts with left out) */
    const char *d = *dem, *paren = strchr(d, '(');
    size_t n = paren ? (size_t)(paren - d) : strlen(d);
    if (!strncmp(d, "void ", 5) && n > 5)
        d += 5, n -= 5;
    for (size_t i = 0; i < o->n_kernels; i++)
        if (!strcmp(o->kernels[i], *dem) ||
            (strlen(o->kernels[i]) == n && !strncmp(o->kernels[i], d, n)))
            return true;
    return false;
}

size_t cbc_pmod_listed(const struct cbc_pmod *m, const struct cbc_judge_opts *o, const char **out,
                       size_t max)
{
    size_t n = 0;
    for (size_t k = 0; o->kernels && k < m->n_names; k++) {
        char *dem = NULL;
        if (listed(o, m->names[k], &dem)) {
            if (n < max)
                out[n] = m->names[k];
            n++;
        }
        free(dem);
    }
    return n;
}

/* Whether listed name `want` is one of module m's kernels. */
static bool defines(const struct cbc_pmod *m, const struct cbc_judge_opts *o, const char *want)
{
    struct cbc_judge_opts one = *o;
    one.kernels = &want;
    one.n_kernels = 1;
    return cbc_pmod_listed(m, &one, NULL, 0) > 0;
}

/* ---- dispatch: a module the driver would pick that fails ---------------------- */

struct verify_job {
    const struct cbc_program *p;
    const struct cbc_mod_verdict *mv;
    size_t *mods;
    char **why; /* per item: NULL when its picked image is what it claims */
};

static void verify_bytes(void *ctx, size_t i, struct cbc_inflate *z);

static void verify_one(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct verify_job *j = ctx;
    verify_bytes(ctx, i, z);
    const struct cbc_pmod *m = &j->p->mods[j->mods[i]];
    long im = j->mv[j->mods[i]].image;
    if (im >= 0)
        cbc_pmod_forget(j->p, m, &m->img[im]);
}

static void verify_bytes(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct verify_job *j = ctx;
    const struct cbc_pmod *m = &j->p->mods[j->mods[i]];
    const struct cbc_mod_verdict *v = &j->mv[j->mods[i]];
    if (v->image < 0)
        return;
    const struct cbc_image *img = &m->img[v->image];
    const uint8_t *b;
    size_t n;
    struct cbc_err e = {0};
    char tn[CBC_TARGET_NAME_MAX];
    cbc_target_name(&img->target, tn);
    bool ptx = img->fatbin_kind == CBC_FATBIN_PTX;
    if (cbc_pmod_image(j->p, m, img, ptx ? PTX_HEAD : 64, z, &b, &n, &e) != CBC_OK) {
        j->why[i] = cbc_asprintf("its %s image cannot be read: %s", tn, e.msg);
        return;
    }
    if (ptx) {
        struct cbc_ptx_info pi;
        if (cbc_ptx_header(b, n, j->p->files[m->file].path, &pi, &e) != CBC_OK)
            j->why[i] = cbc_asprintf("its %s image is not PTX: %s", tn, e.msg);
        return;
    }
    unsigned sm = 0;
    if (cbc_cubin_header_sm(b, n, j->p->files[m->file].path, &sm, &e) != CBC_OK)
        j->why[i] = cbc_asprintf("its %s image is not a cubin: %s", tn, e.msg);
    else if (sm != img->target.arch)
        j->why[i] = cbc_asprintf("its %s image (at %#llx) holds sm_%u code: the driver picks it "
                                 "by its header and refuses it (CUDA_ERROR_INVALID_SOURCE)",
                                 tn, (unsigned long long)img->offset, sm);
}

/* ---- fatbins a file loads itself ------------------------------------------------ */

static enum cbc_status scan_self(struct cbc_program *p, size_t fi, struct cbc_err *err)
{
    struct cbc_pfile *f = &p->files[fi];
    if (f->scanned || !f->host || f->missing)
        return CBC_OK;
    f->scanned = true;
    struct cbc_elf_data ds;
    if (cbc_elf_data_sections(f->data, f->len, f->path, &ds, NULL) != CBC_OK)
        return CBC_OK; /* its section table was read at open: nothing more to find */
    size_t cap = 0;
    for (size_t s = 0; s < ds.n; s++) {
        const uint8_t *sec = f->data + ds.v[s].offset;
        size_t len = (size_t)ds.v[s].size;
        uint64_t resume = 0, dropped = 0, at[256];
        while (resume < len) {
            size_t n = cbc_fatbin_scan(sec, len, ds.v[s].offset, at, CBC_ARRAY_LEN(at), &resume);
            for (size_t i = 0; i < n; i++) {
                uint64_t off = at[i];
                struct cbc_fatbin fb;
                uint64_t size = 16 + cbc_rd64(f->data + off + 8);
                if (cbc_fatbin_parse(f->data + off, (size_t)size, off, f->path, &fb, NULL) != CBC_OK)
                    continue;
                if (!cbc_grow(&f->self, f->n_self, &cap, sizeof *f->self, 64)) {
                    cbc_fatbin_release(&fb);
                    return cbc_err_oom(err);
                }
                struct cbc_pmod *m = &f->self[f->n_self++];
                memset(m, 0, sizeof *m);
                m->kind = CBC_MOD_SELF;
                m->file = fi;
                m->kernels = -1;
                cbc_fmt(m->label, sizeof m->label, "fatbin at %#llx of %s (loaded by the file "
                        "itself)", (unsigned long long)off, ds.v[s].name);
                m->img = calloc(fb.n ? fb.n : 1, sizeof *m->img);
                if (!m->img) {
                    cbc_fatbin_release(&fb);
                    return cbc_err_oom(err);
                }
                for (size_t k = 0; k < fb.n; k++)
                    m->img[k] = cbc_program_image_of(&fb.entries[k], NULL, 0);
                m->n_img = fb.n;
                cbc_fatbin_release(&fb);
            }
            uint64_t upto = resume < len ? resume : len;
            if (upto > dropped + (8u << 20) || upto == len) {
                /* scanning a 280 MB section must not keep it resident */
                cbc_map_forget(f->data, f->len, ds.v[s].offset + dropped, upto - dropped);
                dropped = upto;
            }
        }
    }
    return CBC_OK;
}

/* ---- one file ------------------------------------------------------------------- */

static void judge_self(const struct cbc_program *p, size_t fi, const struct cbc_select_query *q,
                       struct cbc_fjudge *fj)
{
    const struct cbc_pfile *f = &p->files[fi];
    fj->n_self = f->n_self;
    fj->n_self_load = 0;
    for (size_t i = 0; i < f->n_self; i++) {
        struct cbc_mod_verdict v;
        cbc_pmod_judge(p, &f->self[i], q, &v);
        fj->n_self_load += cbc_load_runs(v.how);
    }
}

static void self_text(const struct cbc_fjudge *fj, unsigned cc, char *buf, size_t len)
{
    if (!fj->n_self)
        buf[0] = '\0';
    else
        cbc_fmt(buf, len, "; %zu of the %zu fatbins it loads itself %s code for %u.%u",
                fj->n_self_load, fj->n_self, fj->n_self_load == 1 ? "has" : "have", cc / 10,
                cc % 10);
}

/* "its module with kernels has" / "all 3 modules with kernels have" */
static void all_have(size_t n, char *buf, size_t len)
{
    if (n == 1)
        cbc_fmt(buf, len, "its module with kernels has");
    else
        cbc_fmt(buf, len, "all %zu modules with kernels have", n);
}

/* "its module with kernels has no" / "none of its 3 modules with kernels has" */
static void none_has(size_t n, char *buf, size_t len)
{
    if (n == 1)
        cbc_fmt(buf, len, "its module with kernels has no");
    else
        cbc_fmt(buf, len, "none of its %zu modules with kernels has", n);
}

/* ---- the whole program ------------------------------------------------------------ */

/* What one verdict works on: cbc_program_judge's arguments and the arrays
 * its steps share. */
struct judging {
    struct cbc_program *p;
    const struct cbc_judge_opts *o;
    const struct cbc_select_query *q;
    struct cbc_pjudge *out;
    enum cbc_judge_rule *rule; /* per file */
    long *broken;              /* per file: the module that fails it, or -1 */
    struct cbc_pmod **todo;    /* modules whose kernels are to be read */
    size_t *vmods;             /* dispatch-judged modules whose picked image is verified */
    char **why;                /* per vmods item: why its image fails, or NULL */
};

/* Every module from its entry headers; then, on every worker, the kernels
 * of the modules that cannot launch, of every module of a kernels-rule
 * file and of small modules, and the first bytes of the image each
 * dispatch-judged module would load: the first that fails breaks its file. */
static void judge_modules(struct judging *jg)
{
    struct cbc_program *p = jg->p;
    size_t nt = 0, nv = 0;
    for (size_t m = 0; m < p->n_mods; m++) {
        struct cbc_pmod *pm = &p->mods[m];
        cbc_pmod_judge(p, pm, jg->q, &jg->out->mv[m]);
        bool runs = cbc_load_runs(jg->out->mv[m].how);
        enum cbc_judge_rule r = jg->rule[pm->file];
        if (!pm->names_read && (!runs || r == CBC_JUDGE_KERNELS || small_module(pm)))
            jg->todo[nt++] = pm;
        if (runs && r == CBC_JUDGE_DISPATCH && jg->out->mv[m].image >= 0)
            jg->vmods[nv++] = m;
    }
    cbc_program_read_kernels(p, jg->todo, nt);
    struct verify_job vj = {p, jg->out->mv, jg->vmods, jg->why};
    cbc_program_parallel(p, nv, verify_one, &vj);
    for (size_t i = 0; i < nv; i++) {
        size_t f = p->mods[jg->vmods[i]].file;
        if (jg->why[i] && jg->broken[f] < 0) {
            struct cbc_mod_verdict *v = &jg->out->mv[jg->vmods[i]];
            jg->broken[f] = (long)jg->vmods[i];
            cbc_fmt(v->reason, sizeof v->reason, "%s", jg->why[i]);
        }
    }
}

/* --kernels: the listed names no named file defines (found[k] false) are
 * looked for in the libraries, their kernels read only now. A name a
 * library defines only in modules that cannot launch breaks the library. */
static void kernels_in_libs(struct judging *jg, bool *found)
{
    struct cbc_program *p = jg->p;
    const struct cbc_judge_opts *o = jg->o;
    struct cbc_pjudge *out = jg->out;
    size_t nt = 0;
    for (size_t m = 0; m < p->n_mods; m++)
        if (!p->mods[m].names_read)
            jg->todo[nt++] = &p->mods[m];
    cbc_program_read_kernels(p, jg->todo, nt);
    for (size_t k = 0; k < o->n_kernels; k++) {
        bool any_runs = false;
        long lib_mod = -1;
        for (size_t m = 0; m < p->n_mods; m++) {
            if (found[k] || jg->rule[p->mods[m].file] == CBC_JUDGE_KERNELS ||
                !defines(&p->mods[m], o, o->kernels[k]))
                continue;
            if (cbc_load_runs(out->mv[m].how))
                any_runs = true;
            else if (lib_mod < 0)
                lib_mod = (long)m;
        }
        if (any_runs || lib_mod >= 0)
            found[k] = true;
        if (!any_runs && lib_mod >= 0 && jg->broken[p->mods[lib_mod].file] < 0) {
            /* a library module the program is known to launch from */
            size_t lf = p->mods[lib_mod].file;
            jg->broken[lf] = lib_mod;
            char keep[700];
            cbc_fmt(keep, sizeof keep, "%s", out->mv[lib_mod].reason);
            cbc_fmt(out->mv[lib_mod].reason, sizeof out->mv[lib_mod].reason,
                    "it defines %s, a kernel the program launches (--kernels), and %s",
                    o->kernels[k], keep);
        }
    }
}

/* --kernels: each listed name in the files named, else in the libraries;
 * the names in no module go to out->not_found. */
static enum cbc_status match_kernels(struct judging *jg, struct cbc_err *err)
{
    struct cbc_program *p = jg->p;
    const struct cbc_judge_opts *o = jg->o;
    struct cbc_pjudge *out = jg->out;
    out->matched_kernels = true;
    bool *found = calloc(o->n_kernels ? o->n_kernels : 1, sizeof *found);
    if (!found)
        return cbc_err_oom(err);
    for (size_t k = 0; k < o->n_kernels; k++)
        for (size_t m = 0; m < p->n_mods && !found[k]; m++)
            found[k] = jg->rule[p->mods[m].file] == CBC_JUDGE_KERNELS &&
                       defines(&p->mods[m], o, o->kernels[k]);
    bool rest = false;
    for (size_t k = 0; k < o->n_kernels; k++)
        rest |= !found[k];
    if (rest)
        kernels_in_libs(jg, found);
    enum cbc_status st = CBC_OK;
    for (size_t k = 0; k < o->n_kernels && st == CBC_OK; k++) {
        if (found[k])
            continue;
        char **nn = cbc_reallocarray(out->not_found, out->n_not_found + 1, sizeof *nn);
        if (nn)
            out->not_found = nn;
        char *c = nn ? cbc_strdup(o->kernels[k]) : NULL;
        if (!c)
            st = cbc_err_oom(err);
        else
            nn[out->n_not_found++] = c;
    }
    free(found);
    return st;
}

/* ---- one file's verdict ------------------------------------------------------------ */

/* What a file's modules add up to besides the counts of its cbc_fjudge. */
struct tally {
    size_t needs;     /* modules that need a device link */
    size_t kl_cannot; /* kernels rule: listed kernels in modules that cannot launch */
    bool has_kernels; /* a module that loads is known to have kernels */
};

/* Counts the modules of file f that its rule counts: those that load (the
 * weakest way they do in fj->how) and those that cannot (fj->cannot); for
 * dispatch, the first that cannot only because its PTX is too new for the
 * driver breaks the file. CBC_E_NOMEM only. */
static enum cbc_status count_modules(struct judging *jg, size_t f, struct tally *t,
                                     struct cbc_err *err)
{
    struct cbc_program *p = jg->p;
    struct cbc_fjudge *fj = &jg->out->fj[f];
    int worst = -1;
    for (size_t m = 0; m < p->n_mods; m++) {
        struct cbc_pmod *pm = &p->mods[m];
        if (pm->file != f)
            continue;
        const struct cbc_mod_verdict *v = &jg->out->mv[m];
        bool runs = cbc_load_runs(v->how);
        size_t nl = 0;
        if (fj->rule == CBC_JUDGE_KERNELS) {
            nl = cbc_pmod_listed(pm, jg->o, NULL, 0);
            if (!nl)
                continue;
        } else if (pm->kernels == 0) {
            continue; /* a kernel-less stub */
        }
        fj->n_mods++;
        if (runs) {
            fj->n_load++;
            t->has_kernels |= pm->kernels > 0;
            if (how_rank(v->how) > worst) {
                worst = how_rank(v->how);
                fj->how = v->how;
            }
            continue;
        }
        t->needs += v->how == CBC_LOAD_NEEDS_DLINK;
        size_t *nc = cbc_reallocarray(fj->cannot, fj->n_cannot + 1, sizeof *nc);
        if (!nc)
            return cbc_err_oom(err);
        fj->cannot = nc;
        nc[fj->n_cannot++] = m;
        fj->n_kernels_cannot += fj->rule == CBC_JUDGE_KERNELS ? nl : pm->n_names;
        t->kl_cannot += nl;
        if (fj->rule == CBC_JUDGE_DISPATCH && fj->broken < 0) {
            /* a module the driver would pick, were its PTX not too new */
            struct cbc_select_query lax = *jg->q;
            lax.driver_isa = 0;
            struct cbc_mod_verdict lv;
            cbc_pmod_judge(p, pm, &lax, &lv);
            if (cbc_load_runs(lv.how))
                fj->broken = (long)m;
        }
    }
    return CBC_OK;
}

/* Dispatch, with at least one module with kernels that loads: looks
 * further than the small ones read so far, stopping at the first that has
 * kernels; a kernel-less stub found on the way no longer counts. */
static void find_kernels_that_load(struct judging *jg, size_t f, struct tally *t)
{
    struct cbc_program *p = jg->p;
    struct cbc_fjudge *fj = &jg->out->fj[f];
    for (size_t m = 0; !t->has_kernels && fj->n_load && m < p->n_mods; m++) {
        struct cbc_pmod *pm = &p->mods[m];
        if (pm->file != f || !cbc_load_runs(jg->out->mv[m].how) || pm->kernels == 0)
            continue;
        if (pm->kernels < 0) {
            struct cbc_pmod *one = pm;
            cbc_program_read_kernels(p, &one, 1);
        }
        t->has_kernels = pm->kernels != 0;
        if (pm->kernels == 0) {
            fj->n_load--;
            fj->n_mods--;
        }
    }
}

static void verdict_kernels(const struct judging *jg, struct cbc_fjudge *fj,
                            const struct tally *t)
{
    unsigned M = jg->q->cc / 10, mi = jg->q->cc % 10;
    if (fj->n_mods == 0) {
        fj->verdict = CBC_FV_NO_CODE;
        cbc_fmt(fj->reason, sizeof fj->reason, "defines none of the %zu kernels of "
                "--kernels", jg->o->n_kernels);
    } else if (fj->n_cannot == 0) {
        fj->verdict = CBC_FV_RUNS;
        cbc_fmt(fj->reason, sizeof fj->reason, "kernels rule: every kernel of --kernels "
                "it defines is in a module with code for %u.%u (%zu module%s)", M, mi,
                fj->n_load, fj->n_load == 1 ? "" : "s");
    } else {
        fj->verdict = CBC_FV_WONT;
        fj->problem = true;
        cbc_fmt(fj->reason, sizeof fj->reason, "kernels rule: %zu of the kernels it "
                "launches (--kernels) %s in %zu module%s with no code for %u.%u",
                t->kl_cannot, t->kl_cannot == 1 ? "is" : "are", fj->n_cannot,
                fj->n_cannot == 1 ? "" : "s", M, mi);
    }
}

/* `self`: what the fatbins it loads itself have (self_text). */
static void verdict_per_module(const struct judging *jg, struct cbc_fjudge *fj,
                               const struct tally *t, const char *self)
{
    unsigned M = jg->q->cc / 10, mi = jg->q->cc % 10;
    char words[80];
    if (t->needs && t->needs == fj->n_mods) {
        fj->verdict = CBC_FV_NEEDS_DLINK;
        fj->problem = true;
        return;
    }
    if (fj->n_mods == 0 && fj->n_self == 0) {
        fj->verdict = CBC_FV_NO_CODE;
        cbc_fmt(fj->reason, sizeof fj->reason, "no module with kernels");
    } else if (fj->n_mods == 0) {
        /* only fatbins it loads itself, choosing which */
        fj->verdict = fj->n_self_load ? CBC_FV_RUNS : CBC_FV_WONT;
        fj->problem = !fj->n_self_load;
        cbc_fmt(fj->reason, sizeof fj->reason, "no module the CUDA runtime registers has "
                "kernels%s", self);
    } else if (fj->n_cannot == 0) {
        fj->verdict = CBC_FV_RUNS;
        all_have(fj->n_load, words, sizeof words);
        cbc_fmt(fj->reason, sizeof fj->reason, "%s code for %u.%u", words, M, mi);
    } else if (fj->n_load == 0 && fj->n_self_load == 0) {
        fj->verdict = CBC_FV_WONT;
        fj->problem = true;
        none_has(fj->n_mods, words, sizeof words);
        cbc_fmt(fj->reason, sizeof fj->reason, "%s code for %u.%u%s", words, M, mi, self);
    } else {
        fj->verdict = CBC_FV_PARTIAL;
        fj->problem = true;
        cbc_fmt(fj->reason, sizeof fj->reason, "%zu of %zu modules with kernels (%zu "
                "kernel%s) cannot launch on %u.%u%s", fj->n_cannot, fj->n_mods,
                fj->n_kernels_cannot, fj->n_kernels_cannot == 1 ? "" : "s", M, mi, self);
    }
}

/* A dispatch verdict on n modules with kernels that all have code for the
 * GPU or none has (`words_of` says which), or on none registered (n == 0). */
static void dispatch_all_or_none(struct cbc_fjudge *fj, size_t n,
                                 void (*words_of)(size_t n, char *buf, size_t len), unsigned cc,
                                 const char *self)
{
    if (!n) {
        cbc_fmt(fj->reason, sizeof fj->reason, "dispatch rule: no module the CUDA runtime "
                "registers has kernels%s", self);
        return;
    }
    char words[80];
    words_of(n, words, sizeof words);
    cbc_fmt(fj->reason, sizeof fj->reason, "dispatch rule: %s code for %u.%u%s", words, cc / 10,
            cc % 10, self);
}

/* `self`: what the fatbins it loads itself have (self_text). */
static void verdict_dispatch(const struct judging *jg, struct cbc_fjudge *fj,
                             const struct tally *t, const char *self)
{
    unsigned M = jg->q->cc / 10, mi = jg->q->cc % 10;
    if (fj->broken >= 0) {
        const struct cbc_pmod *bm = &jg->p->mods[fj->broken];
        fj->verdict = CBC_FV_WONT;
        fj->problem = true;
        cbc_fmt(fj->reason, sizeof fj->reason, "dispatch rule: %s has code for %u.%u "
                "but it fails there: %s", bm->label, M, mi, jg->out->mv[fj->broken].reason);
        return;
    }
    if (fj->n_mods == 0 && fj->n_self == 0) {
        fj->verdict = CBC_FV_NO_CODE;
        cbc_fmt(fj->reason, sizeof fj->reason, "no module with kernels");
    } else if (!t->has_kernels && fj->n_self_load == 0) {
        fj->verdict = CBC_FV_WONT;
        fj->problem = true;
        dispatch_all_or_none(fj, fj->n_mods, none_has, jg->q->cc, self);
    } else if (fj->n_cannot == 0) {
        fj->verdict = CBC_FV_RUNS;
        dispatch_all_or_none(fj, fj->n_load, all_have, jg->q->cc, self);
    } else {
        fj->verdict = CBC_FV_PARTIAL;
        if (!fj->n_load)
            fj->how = CBC_LOAD_SASS;
        cbc_fmt(fj->reason, sizeof fj->reason, "dispatch rule: %zu of %zu modules with "
                "kernels %s code for %u.%u%s; the other %zu (%zu kernel%s) %s for other "
                "GPUs: code that picks its kernels by GPU at run time never launches them "
                "there", fj->n_load, fj->n_mods, fj->n_load == 1 ? "has" : "have", M, mi,
                self, fj->n_cannot, fj->n_kernels_cannot,
                fj->n_kernels_cannot == 1 ? "" : "s", fj->n_cannot == 1 ? "is" : "are");
    }
}

/* File f's verdict by its rule. CBC_E_NOMEM only. */
static enum cbc_status judge_file(struct judging *jg, size_t f, struct cbc_err *err)
{
    struct cbc_program *p = jg->p;
    struct cbc_fjudge *fj = &jg->out->fj[f];
    fj->rule = jg->rule[f];
    fj->broken = jg->broken[f];
    fj->how = CBC_LOAD_SASS;
    if (p->files[f].missing)
        return CBC_OK;
    struct tally t = {0};
    enum cbc_status st = count_modules(jg, f, &t, err);
    if (st != CBC_OK)
        return st;
    /* fatbins the file loads itself decide only for a file whose
     * registered modules have no kernels (cuFFT: one kernel-less sm_75
     * module, 29,341 fatbins in .ldata): where it registers modules with
     * kernels, those are its code (cuSPARSE's .rodata holds sm_70 LTO
     * fatbins, its 119 modules nothing for 7.0). Looked for only then:
     * a pass over its data sections (290 MB for cuFFT) */
    char self[160] = "";
    if (fj->rule == CBC_JUDGE_DISPATCH && fj->broken < 0)
        find_kernels_that_load(jg, f, &t);
    if (fj->rule != CBC_JUDGE_KERNELS && fj->n_mods == 0) {
        st = scan_self(p, f, err);
        judge_self(p, f, jg->q, fj);
    }
    self_text(fj, jg->q->cc, self, sizeof self);
    switch (fj->rule) {
    case CBC_JUDGE_KERNELS: verdict_kernels(jg, fj, &t); break;
    case CBC_JUDGE_PER_MODULE: verdict_per_module(jg, fj, &t, self); break;
    case CBC_JUDGE_DISPATCH: verdict_dispatch(jg, fj, &t, self); break;
    }
    return st;
}

enum cbc_status cbc_program_judge(struct cbc_program *p, const struct cbc_judge_opts *o,
                                  struct cbc_pjudge *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    out->q = o->q;
    out->mv = calloc(p->n_mods ? p->n_mods : 1, sizeof *out->mv);
    out->fj = calloc(p->n_files ? p->n_files : 1, sizeof *out->fj);
    enum cbc_judge_rule *rule = calloc(p->n_files ? p->n_files : 1, sizeof *rule);
    struct cbc_pmod **todo = calloc(p->n_mods ? p->n_mods : 1, sizeof *todo);
    size_t *vmods = calloc(p->n_mods ? p->n_mods : 1, sizeof *vmods);
    char **why = calloc(p->n_mods ? p->n_mods : 1, sizeof *why);
    long *broken = calloc(p->n_files ? p->n_files : 1, sizeof *broken);
    enum cbc_status st = CBC_OK;
    if (!out->mv || !out->fj || !rule || !todo || !vmods || !why || !broken)
        st = cbc_err_oom(err);
    for (size_t f = 0; st == CBC_OK && f < p->n_files; f++) {
        rule[f] = rule_of(&p->files[f], o);
        broken[f] = -1;
    }
    struct judging jg = {p, o, &o->q, out, rule, broken, todo, vmods, why};
    if (st == CBC_OK)
        judge_modules(&jg);
    if (st == CBC_OK && o->kernels)
        st = match_kernels(&jg, err);
    for (size_t f = 0; st == CBC_OK && f < p->n_files; f++)
        st = judge_file(&jg, f, err);
    for (size_t i = 0; why && i < p->n_mods; i++)
        free(why[i]);
    free(why);
    free(vmods);
    free(todo);
    free(rule);
    free(broken);
    if (st != CBC_OK)
        cbc_pjudge_release(p, out);
    return st;
}

void cbc_pjudge_release(const struct cbc_program *p, struct cbc_pjudge *j)
{
    for (size_t f = 0; j->fj && f < p->n_files; f++)
        free(j->fj[f].cannot);
    free(j->fj);
    free(j->mv);
    for (size_t i = 0; i < j->n_not_found; i++)
        free(j->not_found[i]);
    free(j->not_found);
    memset(j, 0, sizeof *j);
}
