/* binary.c: the verdicts of check.h for a cubin, PTX file, fatbin, host
 * binary or static library.
 *
 * Integrity first, on the file's own bytes: an image whose code is not for
 * its label (a fatbin entry header, a file name) is mislabeled, one that
 * does not parse or decompress is corrupt, a relocatable cubin that
 * references symbols it does not define needs a device link. Then, with
 * --arch, "will it run on sm_XY?" from the program model (src/program):
 * per GPU, the worst verdict over every module with kernels, of the file
 * and of the shared libraries it needs, naming the module that decides.
 */
#include "check_int.h"

#include "program.h"

#include <cubincache/binfmt.h>
#include <cubincache/select.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every ELF and PTX entry of a fatbin must decompress and carry the code
 * its header claims: the driver selects by the header and then refuses the
 * image. */
static bool check_fatbin_entries(const char *path, const uint8_t *data, size_t len, uint64_t base,
                                 struct cbc_check_report *rep)
{
    struct cbc_fatbin fb;
    struct cbc_err e = {0};
    if (cbc_fatbin_parse(data, len, base, path, &fb, &e) != CBC_OK) {
        cbc_check_add(rep, CBC_V_CORRUPT, path, path, NULL, "%s", e.msg);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < fb.n; i++) {
        const struct cbc_fatbin_entry *en = &fb.entries[i];
        if (en->kind != CBC_FATBIN_ELF && en->kind != CBC_FATBIN_PTX)
            continue;
        uint8_t *p;
        size_t pl;
        if (cbc_fatbin_entry_payload(en, path, &p, &pl, &e) != CBC_OK) {
            cbc_check_add(rep, CBC_V_CORRUPT, path, path, NULL, "entry %zu: %s", i, e.msg);
            ok = false;
            continue;
        }
        struct cbc_target want = {en->kind == CBC_FATBIN_PTX ? CBC_KIND_PTX : CBC_KIND_SASS,
                                  en->variant, (uint16_t)en->arch};
        char nm[CBC_TARGET_NAME_MAX];
        enum cbc_status st = cbc_binfmt_verify_target(p, pl, &want, path, NULL, &e);
        if (st == CBC_E_VERIFY) {
            cbc_check_add(rep, CBC_V_MISLABELED, path, path, cbc_target_name(&want, nm),
                          "fatbin entry %zu at %#llx: %s; the driver selects by the entry header "
                          "and then refuses the image (CUDA_ERROR_INVALID_SOURCE)",
                          i, (unsigned long long)en->offset, e.msg);
            ok = false;
        } else if (st != CBC_OK) {
            cbc_check_add(rep, CBC_V_CORRUPT, path, path, cbc_target_name(&want, nm),
                          "entry %zu: %s", i, e.msg);
            ok = false;
        }
        free(p);
    }
    cbc_fatbin_release(&fb);
    return ok;
}

/* The integrity of one host ELF's CUDA sections. */
static bool check_host(const char *path, const uint8_t *data, size_t len,
                       struct cbc_check_report *rep)
{
    struct cbc_host_elf he;
    struct cbc_err e = {0};
    if (cbc_host_elf_parse(data, len, path, &he, &e) != CBC_OK) {
        cbc_check_add(rep, CBC_V_CORRUPT, path, path, NULL, "%s", e.msg);
        return false;
    }
    bool ok = true;
    if (he.nv_fatbin.present && he.nv_fatbin.size)
        ok &= check_fatbin_entries(path, data + he.nv_fatbin.offset, (size_t)he.nv_fatbin.size,
                                   he.nv_fatbin.offset, rep);
    if (he.nv_relfatbin.present && he.nv_relfatbin.size)
        ok &= check_fatbin_entries(path, data + he.nv_relfatbin.offset,
                                   (size_t)he.nv_relfatbin.size, he.nv_relfatbin.offset, rep);
    return ok;
}

static enum cbc_verdict verdict_of(enum cbc_load_how how)
{
    switch (how) {
    case CBC_LOAD_SASS:
    case CBC_LOAD_SASS_COMPAT: return CBC_V_RUNS;
    case CBC_LOAD_PTX_JIT: return CBC_V_JIT;
    case CBC_LOAD_LINK:
    case CBC_LOAD_AFTER_DLINK: return CBC_V_LINKED;
    case CBC_LOAD_NEEDS_DLINK: return CBC_V_NEEDS_DLINK;
    case CBC_LOAD_NONE: break;
    }
    return CBC_V_WONT_RUN;
}

static int verdict_rank(enum cbc_verdict v)
{
    return v == CBC_V_WONT_RUN || v == CBC_V_NEEDS_DLINK ? 3 : v == CBC_V_JIT ? 2
           : v == CBC_V_LINKED                           ? 1
                                                         : 0;
}

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

/* "fatbin container 1 of .nv_fatbin" of the program itself, or with the
 * library it lives in. */
static void where(const struct cbc_program *p, const struct cbc_pmod *m, char *buf, size_t len)
{
    if (m->file == 0)
        cbc_fmt(buf, len, "%s", m->label);
    else
        cbc_fmt(buf, len, "%s of %s", m->label, cbc_pmod_file(p, m));
}

/* --arch: one verdict per GPU compute capability, the worst module's. */
static enum cbc_status judge_gpus(const char *path, const struct cbc_program *p,
                                  const struct cbc_check_opts *o, struct cbc_check_report *rep,
                                  struct cbc_err *err)
{
    struct cbc_arch_env env;
    cbc_check_arch_env(&env);
    struct cbc_arch_choice ch;
    enum cbc_status st = cbc_arch_resolve(o->arch, &env, &ch, err);
    if (st != CBC_OK)
        return st;
    size_t counted = 0;
    for (size_t m = 0; m < p->n_mods; m++)
        counted += cbc_pmod_counts(p, &p->mods[m]);
    unsigned done[64];
    size_t nd = 0;
    for (size_t i = 0; i < ch.n && nd < CBC_ARRAY_LEN(done); i++) {
        unsigned cc = ch.targets[i].arch;
        bool dup = false;
        for (size_t k = 0; k < nd; k++)
            dup |= done[k] == cc;
        if (dup)
            continue;
        done[nd++] = cc;
        char gpu[24];
        snprintf(gpu, sizeof gpu, "sm_%u", cc);
        struct cbc_select_query q = {cc, o->driver_isa, o->prefer_binary};
        enum cbc_verdict worst = CBC_V_RUNS;
        char msg[1200] = "";
        int worst_rank = -1;
        for (size_t m = 0; m < p->n_mods; m++) {
            const struct cbc_pmod *pm = &p->mods[m];
            if (!cbc_pmod_counts(p, pm))
                continue;
            struct cbc_mod_verdict v;
            cbc_pmod_judge(p, pm, &q, &v);
            enum cbc_verdict vv = verdict_of(v.how);
            if (verdict_rank(vv) <= worst_rank)
                continue;
            worst_rank = verdict_rank(vv);
            worst = vv;
            char w[400], r[900];
            where(p, pm, w, sizeof w);
            reason_of(pm, &v, r, sizeof r);
            if (counted <= 1 && (pm->file == 0 || vv == CBC_V_RUNS))
                cbc_fmt(msg, sizeof msg, "%s", r); /* the file's one module */
            else if (counted <= 1)
                cbc_fmt(msg, sizeof msg, "%s: %s", w, r);
            else if (vv == CBC_V_RUNS)
                cbc_fmt(msg, sizeof msg, "runs: all %zu modules with kernels have SASS for it",
                        counted);
            else
                cbc_fmt(msg, sizeof msg, "%s: %s", w, r);
        }
        if (counted == 0)
            cbc_fmt(msg, sizeof msg, "no GPU code");
        cbc_check_add(rep, counted ? worst : CBC_V_OK, path, NULL, gpu, "%s", msg);
    }
    cbc_arch_choice_release(&ch);
    return CBC_OK;
}

enum cbc_status cbc_check_binary(const char *path, const struct cbc_check_opts *o,
                                 struct cbc_check_report *rep, struct cbc_err *err)
{
    struct cbc_map mp;
    enum cbc_status st = cbc_file_map(path, &mp, err);
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
    st = cbc_binfmt_images(mp.data, mp.len, path, &l, &e);
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
    if (ok && type == CBC_FILE_FATBIN)
        ok = check_fatbin_entries(path, mp.data, mp.len, 0, rep);
    if (ok && type == CBC_FILE_HOST_ELF)
        ok = check_host(path, mp.data, mp.len, rep);
    st = CBC_OK;
    if (ok && o->arch) {
        struct cbc_program p;
        struct cbc_program_opts po = {o->lib_dirs, o->n_lib_dirs, o->no_libs};
        st = cbc_program_open(path, &po, &p, err);
        if (st == CBC_OK) {
            for (size_t f = 1; f < p.n_files; f++)
                if (p.files[f].missing)
                    cbc_check_add(rep, CBC_V_MISSING, path, p.files[f].path, NULL,
                                  "'%s', needed by '%s', %s: the GPU code it may carry is not "
                                  "judged (pass -L DIR where it is, or --no-libs)",
                                  p.files[f].needed_as ? p.files[f].needed_as : p.files[f].path,
                                  p.files[f].needed_by ? p.files[f].needed_by : path,
                                  p.files[f].problem ? p.files[f].problem : "is missing");
            st = judge_gpus(path, &p, o, rep, err);
            cbc_program_release(&p);
        }
    } else if (ok) {
        char have[512];
        cbc_images_summary(l.v, l.n, have, sizeof have);
        cbc_check_add(rep, CBC_V_OK, path, path, NULL, "%s: %s", cbc_file_type_name(type),
                      l.n ? have : "no GPU code");
    }
    cbc_image_list_release(&l);
    cbc_file_unmap(&mp);
    return st;
}
