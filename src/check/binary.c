/* binary.c: the verdicts of check.h for a cubin, PTX file, fatbin, host
 * binary or static library.
 *
 * Integrity first, on the bytes of the file named: an image whose code is
 * not for its label (a fatbin entry header, a file name) is mislabeled,
 * one that does not parse or decompress is corrupt, a relocatable cubin
 * that references symbols it does not define needs a device link. Without
 * --arch every image is decompressed and verified; with --arch every ELF
 * image's header is (its SM against its entry header: what the driver
 * refuses with CUDA_ERROR_INVALID_SOURCE) and the images a judged GPU
 * loads are verified whole: an image no judged GPU loads cannot make one
 * fail, and libtorch_cuda.so holds 5.4 GB of them once inflated.
 *
 * Then, with --arch, "will it run on X.Y?" per GPU from the program model
 * (src/program): each file of the program by its rule (per-module for the
 * files named, dispatch for the libraries they need, kernels with
 * --kernels), one verdict per GPU naming the file and module that decide,
 * and every file with GPU code in the item for the details.
 */
#include "check_int.h"

#include "cudadrv.h"
#include "elfextra.h"
#include "program.h"

#include <cubincache/binfmt.h>
#include <cubincache/select.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_GPUS 64

/* ---- the GPUs of --arch -------------------------------------------------------- */

/* Any compute capability a GPU has (program/gpus.c), whatever nvcc builds;
 * "native" the GPUs of this machine; auto, all and all-major as `build`
 * resolves them, each target standing for the GPU of its arch. */
static enum cbc_status gpus_of(const char *spec, unsigned *out, size_t *n, struct cbc_err *err)
{
    *n = 0;
    if (!strcasecmp(spec, "native")) {
        struct cbc_device_info gpus[MAX_GPUS];
        size_t count = 0;
        char why[300] = "";
        cbc_cuda_list_gpus(gpus, MAX_GPUS, &count, why, sizeof why);
        for (size_t i = 0; i < count; i++) {
            unsigned cc = (unsigned)(gpus[i].cc_major * 10 + gpus[i].cc_minor);
            bool dup = false;
            for (size_t k = 0; k < *n; k++)
                dup |= out[k] == cc;
            if (!dup)
                out[(*n)++] = cc;
        }
        if (*n == 0) {
            cbc_err_set(err, CBC_E_USAGE, "--arch native: no GPU found: %s", why[0] ? why : "none");
            cbc_err_hint(err, "name the GPUs to judge, e.g. --arch 9.0 or --arch 8.0,9.0");
            return CBC_E_USAGE;
        }
        return CBC_OK;
    }
    if (strcasecmp(spec, "auto") && strcasecmp(spec, "all") && strcasecmp(spec, "all-major")) {
        enum cbc_status st = cbc_gpu_list_parse(spec, out, MAX_GPUS, n, err);
        if (st != CBC_OK)
            cbc_err_prefix(err, "--arch");
        return st;
    }
    struct cbc_arch_env env;
    cbc_check_arch_env(&env);
    struct cbc_arch_choice ch;
    enum cbc_status st = cbc_arch_resolve(spec, &env, &ch, err);
    if (st != CBC_OK)
        return st;
    for (size_t i = 0; i < ch.n && *n < MAX_GPUS; i++) {
        bool dup = false;
        for (size_t k = 0; k < *n; k++)
            dup |= out[k] == ch.targets[i].arch;
        if (!dup)
            out[(*n)++] = ch.targets[i].arch;
    }
    cbc_arch_choice_release(&ch);
    return CBC_OK;
}

/* ---- integrity ------------------------------------------------------------------- */

struct check_img {
    size_t mod;
    const struct cbc_image *img;
    bool whole;       /* verify it whole (else its header) */
    enum cbc_verdict v; /* CBC_V_OK, or the problem */
    char *msg;
};

struct integrity_job {
    const struct cbc_program *p;
    struct check_img *t;
};

static void verify_img_bytes(void *ctx, size_t i, struct cbc_inflate *z);

static void verify_img(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct integrity_job *j = ctx;
    verify_img_bytes(ctx, i, z);
    /* its pages need not stay resident (a file mapping faults them back) */
    cbc_pmod_forget(j->p, &j->p->mods[j->t[i].mod], j->t[i].img);
}

static void verify_img_bytes(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct integrity_job *j = ctx;
    struct check_img *t = &j->t[i];
    const struct cbc_pmod *m = &j->p->mods[t->mod];
    const struct cbc_image *img = t->img;
    const char *path = j->p->files[m->file].path;
    bool ptx = img->fatbin_kind == CBC_FATBIN_PTX;
    const uint8_t *b;
    size_t n;
    struct cbc_err e = {0};
    char nm[CBC_TARGET_NAME_MAX];
    struct cbc_target want = img->target;
    cbc_target_name(&want, nm);
    /* PTX names its target at the top: its first 4 KB are the whole check */
    if (cbc_pmod_image(j->p, m, img, ptx ? 4096 : t->whole ? 0 : 64, z, &b, &n, &e) != CBC_OK) {
        t->v = CBC_V_CORRUPT;
        t->msg = cbc_asprintf("entry at %#llx: %s", (unsigned long long)img->offset, e.msg);
        return;
    }
    if (!ptx && !t->whole) {
        unsigned sm = 0;
        if (cbc_cubin_header_sm(b, n, path, &sm, &e) != CBC_OK) {
            t->v = CBC_V_CORRUPT;
            t->msg = cbc_asprintf("entry at %#llx: %s", (unsigned long long)img->offset, e.msg);
        } else if (sm != want.arch) {
            t->v = CBC_V_MISLABELED;
            t->msg = cbc_asprintf("fatbin entry at %#llx: '%s' is labelled %s but holds sm_%u code "
                                  "(its ELF header); the driver selects by the entry header and "
                                  "then refuses the image (CUDA_ERROR_INVALID_SOURCE)",
                                  (unsigned long long)img->offset, path, nm, sm);
        }
        return;
    }
    enum cbc_status st = cbc_binfmt_verify_target(b, n, &want, path, NULL, &e);
    if (st == CBC_E_VERIFY) {
        t->v = CBC_V_MISLABELED;
        t->msg = cbc_asprintf("fatbin entry at %#llx: %s; the driver selects by the entry header "
                              "and then refuses the image (CUDA_ERROR_INVALID_SOURCE)",
                              (unsigned long long)img->offset, e.msg);
    } else if (st != CBC_OK) {
        t->v = CBC_V_CORRUPT;
        t->msg = cbc_asprintf("entry at %#llx: %s", (unsigned long long)img->offset, e.msg);
    }
}

static bool picked_by(const struct cbc_program *p, const struct cbc_pmod *m, size_t i,
                      const unsigned *ccs, size_t nccs, const struct cbc_check_opts *o)
{
    for (size_t g = 0; g < nccs; g++) {
        struct cbc_select_query q = {ccs[g], o->driver_isa, o->prefer_binary};
        struct cbc_mod_verdict v;
        cbc_pmod_judge(p, m, &q, &v);
        if (v.image == (long)i)
            return true;
    }
    return false;
}

/* Every ELF and PTX entry of the files named must decompress and carry the
 * code its header claims. Returns false when one does not (items added). */
static bool check_entries(const char *path, const struct cbc_program *p, const unsigned *ccs,
                          size_t nccs, const struct cbc_check_opts *o, struct cbc_check_report *rep,
                          struct cbc_err *err, enum cbc_status *st)
{
    struct check_img *t = NULL;
    size_t n = 0, cap = 0;
    for (size_t mi = 0; mi < p->n_mods; mi++) {
        const struct cbc_pmod *m = &p->mods[mi];
        if (p->files[m->file].needed_as || m->raw)
            continue;
        for (int rel = 0; rel < 2; rel++) {
            const struct cbc_image *v = rel ? m->rel : m->img;
            size_t nv = rel ? m->n_rel : m->n_img;
            /* a linked module carries every unit's relocatable code: the
             * units are checked once, with the first linked module */
            if (rel && m->kind == CBC_MOD_LINKED) {
                bool first = true;
                for (size_t k = 0; k < mi; k++)
                    first &= !(p->mods[k].file == m->file && p->mods[k].kind == CBC_MOD_LINKED);
                if (!first)
                    continue;
            }
            for (size_t i = 0; i < nv; i++) {
                if (v[i].fatbin_kind != CBC_FATBIN_ELF && v[i].fatbin_kind != CBC_FATBIN_PTX)
                    continue;
                if (!cbc_grow(&t, n, &cap, sizeof *t, 64)) {
                    free(t);
                    *st = cbc_err_oom(err);
                    return false;
                }
                t[n] = (struct check_img){mi, &v[i], !o->arch, CBC_V_OK, NULL};
                if (o->arch && !rel)
                    t[n].whole = picked_by(p, m, i, ccs, nccs, o);
                n++;
            }
        }
    }
    struct integrity_job j = {p, t};
    cbc_program_parallel(p, n, verify_img, &j);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (t[i].v != CBC_V_OK) {
            char nm[CBC_TARGET_NAME_MAX];
            cbc_check_add(rep, t[i].v, path, p->files[p->mods[t[i].mod].file].path,
                          cbc_target_name(&t[i].img->target, nm), "%s",
                          t[i].msg ? t[i].msg : "unreadable");
            ok = false;
        }
        free(t[i].msg);
    }
    free(t);
    return ok;
}

/* ---- verdicts per GPU ---------------------------------------------------------- */

/* The sentence for one module's verdict: short for what runs. */
static void reason_of(const struct cbc_pmod *m, const struct cbc_mod_verdict *v, char *buf,
                      size_t len)
{
    char nm[CBC_TARGET_NAME_MAX];
    cbc_target_name(&v->target, nm);
    switch (v->how) {
    case CBC_LOAD_SASS: cbc_fmt(buf, len, "runs (%s SASS)", nm); break;
    case CBC_LOAD_SASS_COMPAT:
        cbc_fmt(buf, len, "runs (%s SASS, binary-compatible minor)", nm);
        break;
    case CBC_LOAD_PTX_JIT: {
        unsigned isa = v->image >= 0 ? m->img[v->image].ptx_isa : 0;
        cbc_fmt(buf, len, "runs through PTX JIT from %s (needs a driver for PTX ISA %u.%u or "
                "newer)", nm, isa / 10, isa % 10);
        break;
    }
    default: cbc_fmt(buf, len, "%s", v->reason); break;
    }
}

static enum cbc_verdict verdict_of_file(const struct cbc_fjudge *fj)
{
    switch (fj->verdict) {
    case CBC_FV_NO_CODE: return CBC_V_OK;
    case CBC_FV_PARTIAL: return CBC_V_PARTIAL;
    case CBC_FV_WONT: return CBC_V_WONT_RUN;
    case CBC_FV_NEEDS_DLINK: return CBC_V_NEEDS_DLINK;
    case CBC_FV_RUNS: break;
    }
    switch (fj->how) {
    case CBC_LOAD_PTX_JIT: return CBC_V_JIT;
    case CBC_LOAD_LINK:
    case CBC_LOAD_AFTER_DLINK: return CBC_V_LINKED;
    default: return CBC_V_RUNS;
    }
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The module of file f the reason names: the first that cannot launch (or
 * the broken one), else the weakest that loads, else the first. */
static long decisive(const struct cbc_program *p, const struct cbc_pjudge *j, size_t f)
{
    const struct cbc_fjudge *fj = &j->fj[f];
    if (fj->broken >= 0)
        return fj->broken;
    if (fj->n_cannot)
        return (long)fj->cannot[0];
    long first = -1;
    for (size_t m = 0; m < p->n_mods; m++) {
        if (p->mods[m].file != f || p->mods[m].kernels == 0 || !cbc_load_runs(j->mv[m].how))
            continue;
        if (j->mv[m].how == fj->how)
            return (long)m;
        if (first < 0)
            first = (long)m;
    }
    return first;
}

static char *dup_or_null(const char *s)
{
    return s ? cbc_strdup(s) : NULL;
}

static enum cbc_status file_detail(const struct cbc_program *p, const struct cbc_pjudge *j,
                                   const struct cbc_judge_opts *jo, size_t f,
                                   struct cbc_check_file *cf)
{
    const struct cbc_fjudge *fj = &j->fj[f];
    const struct cbc_pfile *pf = &p->files[f];
    memset(cf, 0, sizeof *cf);
    cf->path = cbc_strdup(pf->path);
    cf->needed_by = dup_or_null(pf->needed_by);
    cf->rule = cbc_judge_rule_name(fj->rule);
    cf->verdict = verdict_of_file(fj);
    cf->problem = fj->problem;
    cf->modules = fj->n_mods;
    cf->modules_with_code = fj->n_load;
    cf->kernels_without_code = fj->n_kernels_cannot;
    cf->self_loaded = pf->scanned ? (long)fj->n_self : -1;
    cf->self_loaded_with_code = pf->scanned ? (long)fj->n_self_load : -1;
    cf->reason = cbc_strdup(fj->reason);
    if (!cf->path || !cf->reason)
        return CBC_E_NOMEM;
    if (!fj->n_cannot)
        return CBC_OK;
    cf->cannot = calloc(fj->n_cannot, sizeof *cf->cannot);
    if (!cf->cannot)
        return CBC_E_NOMEM;
    for (size_t i = 0; i < fj->n_cannot; i++) {
        const struct cbc_pmod *m = &p->mods[fj->cannot[i]];
        struct cbc_check_module *cm = &cf->cannot[cf->n_cannot++];
        cm->label = cbc_strdup(m->label);
        char r[900];
        reason_of(m, &j->mv[fj->cannot[i]], r, sizeof r);
        cm->reason = cbc_strdup(r);
        cm->kproblem = dup_or_null(m->kproblem);
        size_t nk = fj->rule == CBC_JUDGE_KERNELS ? cbc_pmod_listed(m, jo, NULL, 0) : m->n_names;
        cm->kernels = calloc(nk ? nk : 1, sizeof *cm->kernels);
        if (!cm->label || !cm->reason || !cm->kernels)
            return CBC_E_NOMEM;
        if (fj->rule == CBC_JUDGE_KERNELS) {
            const char **ls = calloc(nk ? nk : 1, sizeof *ls);
            if (!ls)
                return CBC_E_NOMEM;
            cbc_pmod_listed(m, jo, ls, nk);
            for (size_t k = 0; k < nk; k++)
                if ((cm->kernels[cm->n_kernels] = cbc_strdup(ls[k])))
                    cm->n_kernels++;
            free(ls);
        } else {
            for (size_t k = 0; k < nk; k++)
                if ((cm->kernels[cm->n_kernels] = cbc_strdup(m->names[k])))
                    cm->n_kernels++;
        }
    }
    return CBC_OK;
}

/* The one sentence of a GPU's verdict. */
static void item_reason(const struct cbc_program *p, const struct cbc_pjudge *j, size_t f,
                        enum cbc_verdict v, bool accepted, char *buf, size_t len)
{
    const struct cbc_fjudge *fj = &j->fj[f];
    const struct cbc_pfile *pf = &p->files[f];
    unsigned M = j->q.cc / 10, mi = j->q.cc % 10;
    long dm = decisive(p, j, f);
    char mr[900] = "", lead[600] = "";
    if (dm >= 0)
        reason_of(&p->mods[dm], &j->mv[dm], mr, sizeof mr);
    if (pf->needed_as)
        cbc_fmt(lead, sizeof lead, "%s, needed by %s: ", base(pf->path),
                pf->needed_by ? base(pf->needed_by) : "?");
    const char *label = dm >= 0 ? p->mods[dm].label : "";
    if (accepted && !pf->needed_as) {
        /* a file named, judged by the dispatch rule (--rule dispatch) */
        cbc_fmt(buf, len, "accepted: %s; first %s: %s", fj->reason, label, mr);
        return;
    }
    if (accepted) {
        char own[400], libs[600] = "";
        const struct cbc_fjudge *f0 = &j->fj[0];
        if (f0->verdict == CBC_FV_NO_CODE)
            cbc_fmt(own, sizeof own, "it has no GPU code of its own");
        else
            cbc_fmt(own, sizeof own, "its own %zu module%s with kernels %s code for %u.%u",
                    f0->n_load, f0->n_load == 1 ? "" : "s", f0->n_load == 1 ? "has" : "have", M, mi);
        size_t nl = 0, off = 0;
        for (size_t k = 0; k < p->n_files; k++) {
            if (j->fj[k].verdict != CBC_FV_PARTIAL || !p->files[k].needed_as)
                continue;
            if (nl++ < 4 && off < sizeof libs)
                off += (size_t)snprintf(libs + off, sizeof libs - off, "%s%s %zu of %zu",
                                        off ? ", " : "", base(p->files[k].path), j->fj[k].n_load,
                                        j->fj[k].n_mods);
        }
        cbc_fmt(buf, len, "accepted: %s; %zu librar%s it needs %s modules only for other GPUs "
                "too (%s%s modules with code for %u.%u), which the dispatch rule accepts: a "
                "library that picks its kernels by GPU at run time looks like this, and a program "
                "that launches one of those kernels itself fails with \"no kernel image\"", own, nl,
                nl == 1 ? "y" : "ies", nl == 1 ? "has" : "have", libs, nl > 4 ? ", ..." : "", M,
                mi);
        return;
    }
    switch (v) {
    case CBC_V_PARTIAL:
        cbc_fmt(buf, len, "%s%zu of %zu modules with kernels (%zu kernel%s) cannot launch on "
                "compute capability %u.%u; first %s: %s. A program that launches one of them "
                "fails with \"no kernel image\" (cudaErrorNoKernelImageForDevice); one that picks "
                "its kernels by GPU at run time looks like this: --kernels FILE judges only the "
                "kernels it launches", lead, fj->n_cannot, fj->n_mods, fj->n_kernels_cannot,
                fj->n_kernels_cannot == 1 ? "" : "s", M, mi, label, mr);
        break;
    case CBC_V_WONT_RUN:
    case CBC_V_NEEDS_DLINK:
        if (dm < 0)
            cbc_fmt(buf, len, "%s%s", lead, fj->reason);
        else if (fj->rule == CBC_JUDGE_DISPATCH || fj->rule == CBC_JUDGE_KERNELS ||
                 fj->n_mods > 1)
            cbc_fmt(buf, len, "%s%s; %s: %s", lead, fj->reason, label, mr);
        else if (!pf->needed_as)
            cbc_fmt(buf, len, "%s", mr);
        else
            cbc_fmt(buf, len, "%s%s: %s", lead, label, mr);
        break;
    default:
        if (fj->n_mods == 0 && fj->n_self)
            cbc_fmt(buf, len, "%sruns: %s", lead, fj->reason);
        else if (fj->rule == CBC_JUDGE_KERNELS)
            cbc_fmt(buf, len, "%sruns: %s", lead, fj->reason);
        else if (fj->n_load <= 1)
            cbc_fmt(buf, len, "%s%s", lead, mr);
        else if (v == CBC_V_RUNS)
            cbc_fmt(buf, len, "%sruns: all %zu modules with kernels have SASS for it", lead,
                    fj->n_load);
        else
            cbc_fmt(buf, len, "%s%s: %s", lead, label, mr);
        break;
    }
}

static enum cbc_status judge_gpu(const char *path, struct cbc_program *p, unsigned cc,
                                 const struct cbc_check_opts *o, bool first,
                                 struct cbc_check_report *rep, struct cbc_err *err)
{
    struct cbc_judge_opts jo = {0};
    jo.q = (struct cbc_select_query){cc, o->driver_isa, o->prefer_binary};
    jo.named_rule = o->named_rule;
    jo.lib_rule = o->lib_rule;
    jo.strict_libs = o->strict_libs;
    jo.n_strict_libs = o->n_strict_libs;
    jo.kernels = o->kernels;
    jo.n_kernels = o->n_kernels;
    jo.demangle = o->demangle;
    struct cbc_pjudge j;
    enum cbc_status st = cbc_program_judge(p, &jo, &j, err);
    if (st != CBC_OK)
        return st;
    char gpu[24];
    snprintf(gpu, sizeof gpu, "sm_%u", cc);
    if (first)
        for (size_t k = 0; k < j.n_not_found; k++)
            cbc_check_add(rep, CBC_V_MISSING, path, NULL, NULL,
                          "kernel '%s' of --kernels is in no module of '%s' or of the libraries "
                          "it needs: the list is stale, or the kernel is in a library the program "
                          "opens with dlopen (check that library by its path)",
                          j.not_found[k], path);
    /* the file that decides: the first with a problem, else a library
     * accepted with a partial verdict, else the weakest that runs */
    long dec = -1;
    bool accepted = false;
    for (size_t f = 0; f < p->n_files && dec < 0; f++)
        if (!p->files[f].missing && j.fj[f].problem)
            dec = (long)f;
    for (size_t f = 0; f < p->n_files && dec < 0; f++)
        if (!p->files[f].missing && j.fj[f].verdict == CBC_FV_PARTIAL)
            dec = (long)f, accepted = true;
    enum cbc_verdict v = CBC_V_OK;
    if (dec < 0) {
        int worst = -1;
        for (size_t f = 0; f < p->n_files; f++) {
            if (p->files[f].missing || j.fj[f].verdict == CBC_FV_NO_CODE)
                continue;
            enum cbc_verdict fv = verdict_of_file(&j.fj[f]);
            int r = fv == CBC_V_JIT ? 2 : fv == CBC_V_LINKED ? 1 : 0;
            if (r > worst)
                worst = r, v = fv, dec = (long)f;
        }
    } else {
        v = accepted ? CBC_V_PARTIAL : verdict_of_file(&j.fj[dec]);
    }
    struct cbc_check_item *it;
    if (dec < 0) {
        it = cbc_check_add(rep, CBC_V_OK, path, NULL, gpu, "no GPU code");
    } else {
        char reason[1800];
        item_reason(p, &j, (size_t)dec, v, accepted, reason, sizeof reason);
        it = cbc_check_add(rep, v, path, NULL, gpu, "%s", reason);
    }
    if (!it) {
        cbc_pjudge_release(p, &j);
        return cbc_err_oom(err);
    }
    it->problem = dec >= 0 && !accepted && j.fj[dec].problem;
    it->rule = cbc_judge_rule_name(j.fj[0].rule);
    for (size_t f = 0; f < p->n_files; f++)
        if (!p->files[f].needed_as && p->files[f].data) {
            it->rule = cbc_judge_rule_name(j.fj[f].rule);
            break;
        }
    size_t nf = 0;
    for (size_t f = 0; f < p->n_files; f++)
        nf += !p->files[f].missing && (j.fj[f].verdict != CBC_FV_NO_CODE || !p->files[f].needed_as);
    it->files = calloc(nf ? nf : 1, sizeof *it->files);
    if (!it->files) {
        cbc_pjudge_release(p, &j);
        return cbc_err_oom(err);
    }
    for (size_t f = 0; f < p->n_files && st == CBC_OK; f++) {
        if (p->files[f].missing ||
            (j.fj[f].verdict == CBC_FV_NO_CODE && p->files[f].needed_as))
            continue;
        st = file_detail(p, &j, &jo, f, &it->files[it->n_files]);
        it->n_files++;
        if (st != CBC_OK)
            st = cbc_err_oom(err);
    }
    cbc_pjudge_release(p, &j);
    return st;
}

enum cbc_status cbc_check_binary(const char *path, const struct cbc_check_opts *o,
                                 struct cbc_check_report *rep, struct cbc_err *err)
{
    unsigned ccs[MAX_GPUS];
    size_t nccs = 0;
    enum cbc_status st = o->arch ? gpus_of(o->arch, ccs, &nccs, err) : CBC_OK;
    if (st != CBC_OK)
        return st;
    struct cbc_map mp;
    st = cbc_file_map(path, &mp, err);
    if (st != CBC_OK)
        return st;
    enum cbc_file_type type = cbc_binfmt_detect(mp.data, mp.len);
    if (type == CBC_FILE_UNKNOWN) {
        cbc_file_unmap(&mp);
        cbc_err_set(err, CBC_E_FORMAT, "'%s': not a cubin, fatbin, PTX file, ELF file, static "
                    "library or manifest", path);
        cbc_err_hint(err, "check takes a bundle directory, a NAME.manifest.json, or a binary");
        return CBC_E_FORMAT;
    }
    struct cbc_image_list l = {0};
    struct cbc_err e = {0};
    bool ok = true;
    if (o->arch && type == CBC_FILE_HOST_ELF) {
        /* the program model reads the fatbins (dropping their pages as it
         * goes); what is left to verify here is the embedded bundles */
        struct cbc_host_elf he;
        st = cbc_host_elf_parse(mp.data, mp.len, path, &he, &e);
        if (st == CBC_OK && he.cbc_bundle.present && he.cbc_bundle.size) {
            struct cbc_embedded_list el;
            st = cbc_embedded_parse(mp.data + he.cbc_bundle.offset, (size_t)he.cbc_bundle.size,
                                    he.cbc_bundle.offset, path, true, &el, &e);
            cbc_embedded_release(&el);
        }
    } else {
        st = cbc_binfmt_images(mp.data, mp.len, path, &l, &e);
    }
    cbc_map_forget(mp.data, mp.len, 0, mp.len);
    if (st != CBC_OK) {
        /* an embedded image whose code is not for its label: mislabeled */
        cbc_check_add(rep, st == CBC_E_VERIFY ? CBC_V_MISLABELED : CBC_V_CORRUPT, path, path, NULL,
                      "%s", e.msg);
        ok = false;
    }
    struct cbc_target label;
    if (ok && (type == CBC_FILE_CUBIN || type == CBC_FILE_PTX) &&
        cbc_check_label_from_name(path, &label)) {
        char nm[CBC_TARGET_NAME_MAX];
        if (cbc_binfmt_verify_target(mp.data, mp.len, &label, path, NULL, &e) == CBC_E_VERIFY) {
            cbc_check_add(rep, CBC_V_MISLABELED, path, path, cbc_target_name(&label, nm), "%s",
                          e.msg);
            ok = false;
        }
    }
    if (ok && type == CBC_FILE_CUBIN) {
        struct cbc_cubin_info ci;
        if (cbc_cubin_parse(mp.data, mp.len, path, &ci, NULL) == CBC_OK) {
            if (cbc_cubin_needs_dlink(&ci)) {
                char nm[CBC_TARGET_NAME_MAX];
                struct cbc_target t = cbc_cubin_target(&ci);
                cbc_check_add(rep, CBC_V_NEEDS_DLINK, path, path, cbc_target_name(&t, nm),
                              "relocatable code (-rdc) referencing %zu symbol%s it does not "
                              "define (%s%s): no driver loads it without a device link "
                              "(nvcc -dlink)", ci.n_undefined, ci.n_undefined == 1 ? "" : "s",
                              ci.undefined[0], ci.n_undefined > 1 ? ", ..." : "");
                ok = false;
            }
            cbc_cubin_info_release(&ci);
        }
    }
    st = CBC_OK;
    struct cbc_program p;
    bool open = false;
    if (ok && (type == CBC_FILE_FATBIN || type == CBC_FILE_HOST_ELF ||
               type == CBC_FILE_ARCHIVE || o->arch)) {
        struct cbc_program_opts po = {o->lib_dirs, o->n_lib_dirs, o->no_libs || !o->arch,
                                      o->threads};
        st = cbc_program_open(path, &po, &p, err);
        open = st == CBC_OK;
    }
    if (open && ok)
        ok = check_entries(path, &p, ccs, nccs, o, rep, err, &st);
    if (open && ok && o->arch && st == CBC_OK) {
        for (size_t f = 1; f < p.n_files; f++)
            if (p.files[f].missing)
                cbc_check_add(rep, CBC_V_MISSING, path, p.files[f].path, NULL,
                              "'%s', needed by '%s', %s: the GPU code it may carry is not "
                              "judged (pass -L DIR where it is, or --no-libs)",
                              p.files[f].needed_as ? p.files[f].needed_as : p.files[f].path,
                              p.files[f].needed_by ? p.files[f].needed_by : path,
                              p.files[f].problem ? p.files[f].problem : "is missing");
        for (size_t g = 0; g < nccs && st == CBC_OK; g++)
            st = judge_gpu(path, &p, ccs[g], o, g == 0, rep, err);
    } else if (ok && st == CBC_OK) {
        char have[512];
        cbc_images_summary(l.v, l.n, have, sizeof have);
        cbc_check_add(rep, CBC_V_OK, path, path, NULL, "%s: %s", cbc_file_type_name(type),
                      l.n ? have : "no GPU code");
    }
    if (open)
        cbc_program_release(&p);
    cbc_image_list_release(&l);
    cbc_file_unmap(&mp);
    return st;
}
