/* cmd_select.c: `cubincache select --cc X.Y PATH`: the image a GPU of that
 * compute capability would load from a bundle or binary, and why; the
 * same policy the loader uses at run time. Exit 1 when nothing would run.
 */
#include "archspec.h"
#include "program.h"
#include "cmds.h"

#include <cubincache/loader.h>
#include <cjson/cJSON.h>

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

struct sel {
    struct cbc_select_query q;
    bool json;
    const char **lib_dirs; /* -L, for the libraries a binary needs */
    size_t n_lib_dirs;
    bool no_libs;
    struct cbc_judge_opts jo; /* the rules, as check --arch has them */
};

static int report(const struct sel *s, const char *path, const struct cbc_image *imgs, size_t n,
                  const char *const *files)
{
    struct cbc_select_result r;
    long i = cbc_select(imgs, n, &s->q, &r);
    char name[CBC_TARGET_NAME_MAX] = "";
    if (i >= 0)
        cbc_target_name(&imgs[i].target, name);
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", path);
        char cc[16];
        snprintf(cc, sizeof cc, "%u.%u", s->q.cc / 10, s->q.cc % 10);
        cJSON_AddStringToObject(o, "cc", cc);
        static const char *const how[] = {"none", "sass-exact", "sass-compatible", "ptx-jit"};
        cJSON_AddStringToObject(o, "how", how[r.how]);
        if (i >= 0) {
            cJSON_AddStringToObject(o, "target", name);
            cJSON_AddNumberToObject(o, "index", (double)i);
            if (files && files[i])
                cJSON_AddStringToObject(o, "file", files[i]);
            else
                cJSON_AddNumberToObject(o, "offset", (double)imgs[i].offset);
        } else {
            cJSON_AddNullToObject(o, "target");
        }
        cJSON_AddStringToObject(o, "reason", r.reason);
        tool_print_json(o);
    } else {
        tool_fputs_escaped(path, stdout);
        if (i >= 0 && files && files[i])
            printf(": %s (%s): %s\n", name, cbc_path_base(files[i]), r.reason);
        else if (i >= 0)
            printf(": %s (image %ld at %#llx): %s\n", name, i, (unsigned long long)imgs[i].offset,
                   r.reason);
        else
            printf(": none: %s\n", r.reason);
    }
    return i >= 0 ? EXIT_OK : EXIT_VERDICT;
}

static int select_bundle(struct tool *t, const struct sel *s, const char *manifest)
{
    struct cbc_bundle *b;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_bundle_open_path(manifest, NULL, &b, &err);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    size_t n;
    const struct cbc_image *imgs = cbc_bundle_images(b, &n);
    const char **files = calloc(n ? n : 1, sizeof *files);
    for (size_t i = 0; files && i < n; i++)
        files[i] = cbc_bundle_image_file(b, i);
    int rc = report(s, manifest, imgs, n, files);
    free(files);
    cbc_bundle_close(b);
    return rc;
}

static const char *fverdict_name(enum cbc_fverdict v)
{
    switch (v) {
    case CBC_FV_NO_CODE: return "no GPU code";
    case CBC_FV_RUNS: return "runs";
    case CBC_FV_PARTIAL: return "partial";
    case CBC_FV_WONT: return "will not run";
    case CBC_FV_NEEDS_DLINK: return "needs a device link";
    }
    return "?";
}

/* A binary: every module with kernels of the program (its shared
 * libraries included), one answer each, then one per file with the rule
 * that judged it; exit 1 when that judgement is a problem, in the words
 * `check --arch` uses. */
/* One module's answer: the image the GPU would load, or why none. */
static void report_module(const struct sel *s, const struct cbc_program *p,
                          const struct cbc_pmod *pm, const struct cbc_mod_verdict *v,
                          const struct cbc_fjudge *fj, const char *path, const char *cc)
{
    bool runs = cbc_load_runs(v->how);
    char tn[CBC_TARGET_NAME_MAX];
    cbc_target_name(&v->target, tn);
    const struct cbc_image *img = v->image >= 0 ? &pm->img[v->image] : NULL;
    /* a module without code counts against the program unless its
     * file's rule accepts it (a library that picks kernels by GPU) */
    bool counts = !runs && fj->problem;
    if (s->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "path", path);
        cJSON_AddStringToObject(o, "file", cbc_pmod_file(p, pm));
        cJSON_AddStringToObject(o, "module", pm->label);
        cJSON_AddStringToObject(o, "cc", cc);
        cJSON_AddStringToObject(o, "how", cbc_load_how_name(v->how));
        if (v->how == CBC_LOAD_NONE)
            cJSON_AddNullToObject(o, "target");
        else
            cJSON_AddStringToObject(o, "target", tn);
        if (img)
            cJSON_AddNumberToObject(o, "offset", (double)img->offset);
        cJSON_AddStringToObject(o, "rule", cbc_judge_rule_name(fj->rule));
        cJSON_AddBoolToObject(o, "problem", counts);
        cJSON_AddStringToObject(o, "reason", v->reason);
        tool_print_json(o);
        return;
    }
    tool_fputs_escaped(path, stdout);
    fputs(": ", stdout);
    if (p->n_mods > 1 || pm->kind != CBC_MOD_IMAGE) {
        tool_fputs_escaped(pm->label, stdout);
        if (pm->file) {
            fputs(" of ", stdout);
            tool_fputs_escaped(cbc_pmod_file(p, pm), stdout);
        }
        fputs(": ", stdout);
    }
    if (v->how == CBC_LOAD_NONE)
        printf("none: ");
    else if (img)
        printf("%s (image %ld at %#llx): ", tn, v->image, (unsigned long long)img->offset);
    else
        printf("%s (%s): ", tn, cbc_load_how_name(v->how));
    tool_fputs_escaped(v->reason, stdout);
    if (!runs && !counts) {
        fputs(" (accepted: ", stdout);
        tool_fputs_escaped(cbc_path_base(cbc_pmod_file(p, pm)), stdout);
        printf(" is judged by the %s rule)", cbc_judge_rule_name(fj->rule));
    }
    fputc('\n', stdout);
}

static int select_file(struct tool *t, const struct sel *s, const char *path)
{
    struct cbc_program p;
    struct cbc_err err = {0};
    struct cbc_program_opts po = {s->lib_dirs, s->n_lib_dirs, s->no_libs, 0};
    enum cbc_status st = cbc_program_open(path, &po, &p, &err);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return st == CBC_E_IO ? EXIT_USAGE : tool_exit_code(st);
    }
    struct cbc_pjudge j;
    st = cbc_program_judge(&p, &s->jo, &j, &err);
    if (st != CBC_OK) {
        cbc_program_release(&p);
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    int rc = EXIT_OK;
    char cc[16];
    snprintf(cc, sizeof cc, "%u.%u", s->q.cc / 10, s->q.cc % 10);
    for (size_t f = 1; f < p.n_files; f++) {
        if (!p.files[f].missing)
            continue;
        rc = EXIT_VERDICT;
        if (s->json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "path", path);
            cJSON_AddStringToObject(o, "file", p.files[f].path);
            cJSON_AddStringToObject(o, "cc", cc);
            cJSON_AddStringToObject(o, "how", "missing");
            cJSON_AddNullToObject(o, "target");
            cJSON_AddStringToObject(o, "reason", p.files[f].problem ? p.files[f].problem : "");
            tool_print_json(o);
        } else {
            /* names read from the binaries' DT_NEEDED: shown escaped */
            const char *parts[] = {path, ": ", p.files[f].needed_as, ": missing: needed by ",
                                   p.files[f].needed_by, ", ", p.files[f].problem, "\n"};
            for (size_t k = 0; k < CBC_ARRAY_LEN(parts); k++)
                if (k % 2)
                    fputs(parts[k], stdout);
                else
                    tool_fputs_escaped(parts[k], stdout);
        }
    }
    for (size_t k = 0; k < j.n_not_found; k++) {
        rc = EXIT_VERDICT;
        if (s->json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "path", path);
            cJSON_AddStringToObject(o, "kernel", j.not_found[k]);
            cJSON_AddStringToObject(o, "cc", cc);
            cJSON_AddStringToObject(o, "how", "missing");
            cJSON_AddNullToObject(o, "target");
            cJSON_AddStringToObject(o, "reason", "a kernel of --kernels that no module defines");
            tool_print_json(o);
        } else {
            tool_fputs_escaped(path, stdout);
            fputs(": kernel ", stdout);
            tool_fputs_escaped(j.not_found[k], stdout);
            fputs(" of --kernels: missing: no module defines it\n", stdout);
        }
    }
    for (size_t m = 0; m < p.n_mods; m++) {
        const struct cbc_pmod *pm = &p.mods[m];
        const struct cbc_fjudge *fj = &j.fj[pm->file];
        /* a kernel-less stub, or a module --kernels leaves out */
        if (pm->kernels == 0 ||
            (fj->rule == CBC_JUDGE_KERNELS && !cbc_pmod_listed(pm, &s->jo, NULL, 0)))
            continue;
        report_module(s, &p, pm, &j.mv[m], fj, path, cc);
    }
    for (size_t f = 0; f < p.n_files; f++) {
        const struct cbc_fjudge *fj = &j.fj[f];
        if (p.files[f].missing)
            continue;
        if (fj->problem)
            rc = EXIT_VERDICT;
        if (fj->verdict == CBC_FV_NO_CODE && (f || p.n_files > 1))
            continue;
        if (s->json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "path", path);
            cJSON_AddStringToObject(o, "file", p.files[f].path);
            cJSON_AddStringToObject(o, "cc", cc);
            cJSON_AddStringToObject(o, "rule", cbc_judge_rule_name(fj->rule));
            cJSON_AddStringToObject(o, "verdict", fverdict_name(fj->verdict));
            cJSON_AddBoolToObject(o, "problem", fj->problem);
            cJSON_AddStringToObject(o, "reason", fj->reason);
            tool_print_json(o);
        } else if (p.n_files > 1 || fj->verdict == CBC_FV_PARTIAL || fj->broken >= 0) {
            tool_fputs_escaped(path, stdout);
            fputs(": ", stdout);
            tool_fputs_escaped(cbc_path_base(p.files[f].path), stdout);
            printf(" [%s]: %s%s: ", cbc_judge_rule_name(fj->rule), fverdict_name(fj->verdict),
                   fj->verdict == CBC_FV_PARTIAL && !fj->problem ? " (accepted)" : "");
            tool_fputs_escaped(fj->reason, stdout);
            fputc('\n', stdout);
        }
    }
    cbc_pjudge_release(&p, &j);
    cbc_program_release(&p);
    return rc;
}

static int select_dir(struct tool *t, const struct sel *s, const char *path);

int cmd_select(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache select");
    struct sel s = {0};
    struct gate g;
    gate_init(&g);
    const char *cc = NULL;
    const struct tool_opt opts[] = {
        OPT_STR(0, "cc", "X.Y", &cc, "the GPU's compute capability (9.0, 90 and sm_90 all work)"),
        GATE_OPTS(&g),
        OPT_FLAG(0, "json", &s.json, "one JSON object per bundle, or per module of a binary"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache select --cc X.Y [options] PATH\n"
        "  PATH: a bundle directory, NAME.manifest.json, cubin, fatbin, PTX file or host binary\n",
        opts,
        "  A binary answers per module (each translation unit, device-linked image and\n"
        "  embedded bundle, in it and its libraries), then per file with the rule that judged\n"
        "  it (as check --arch does); exit 1 when that verdict is a problem: a module of the\n"
        "  file named with nothing for the GPU, a library with nothing for it.\n"};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (!cc)
        return tool_usage(&t, "--cc is required");
    unsigned ccs[8];
    size_t n = 0;
    struct cbc_err e = {0};
    if (cbc_gpu_list_parse(cc, ccs, CBC_ARRAY_LEN(ccs), &n, &e) != CBC_OK) {
        cbc_err_prefix(&e, "--cc");
        tool_error(&t, &e);
        return EXIT_USAGE;
    }
    if (n != 1)
        return tool_usage(&t, "--cc '%s' names %zu GPUs; select answers for one (check --arch "
                          "judges several)", cc, n);
    if (optind != argc - 1)
        return tool_usage(&t, "one PATH expected");
    s.q.cc = ccs[0];
    s.q.driver_isa = g.driver_isa;
    s.q.prefer_binary = g.prefer_binary;
    s.lib_dirs = g.lib_dirs.v;
    s.n_lib_dirs = g.lib_dirs.n;
    s.no_libs = g.no_libs;
    s.jo.named_rule = g.named_rule;
    s.jo.lib_rule = g.lib_rule;
    s.jo.strict_libs = g.strict_libs.v;
    s.jo.n_strict_libs = g.strict_libs.n;
    s.jo.demangle = gate_demangle;
    const char *kernels_file = g.kernels_file;
    s.jo.q = s.q;
    char **kn = NULL;
    size_t nk = 0;
    if (kernels_file) {
        int r = gate_read_kernels(&t, kernels_file, &kn, &nk);
        if (r != EXIT_OK)
            return r;
        s.jo.kernels = (const char *const *)kn;
        s.jo.n_kernels = nk;
    }
    const char *path = argv[optind];
    size_t pl = strlen(path);
    if (pl > 14 && !strcmp(path + pl - 14, ".manifest.json"))
        rc = select_bundle(&t, &s, path);
    else if (!cbc_is_dir(path))
        rc = select_file(&t, &s, path);
    else
        rc = select_dir(&t, &s, path);
    gate_free_kernels(kn, nk);
    return rc;
}

static int select_dir(struct tool *t, const struct sel *s, const char *path)
{
    DIR *d = opendir(path);
    int rc = EXIT_OK;
    size_t found = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 14 || strcmp(de->d_name + n - 14, ".manifest.json"))
            continue;
        char *m = cbc_path_join(path, de->d_name);
        int r = select_bundle(t, s, m);
        rc = r > rc ? r : rc;
        free(m);
        found++;
    }
    if (d)
        closedir(d);
    if (!found) {
        tool_errorf(t, "'%s' holds no NAME.manifest.json", path);
        return EXIT_USAGE;
    }
    return rc;
}
