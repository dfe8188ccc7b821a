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
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: cubincache select --cc X.Y [options] PATH\n"
    "  PATH: a bundle directory, NAME.manifest.json, cubin, fatbin, PTX file or host binary\n"
    "      --cc X.Y           the GPU's compute capability (9.0, 90 and sm_90 all work)\n"
    "      --cuda-driver X.Y  the driver's CUDA version, to judge PTX (default: any)\n"
    "      --prefer-binary    assume CU_PREFER_BINARY instead of the driver's default\n"
    "  -L, --library-path DIR look here first for the shared libraries a binary needs\n"
    "      --no-libs          judge the binary alone, not the libraries it needs\n"
    "      --json             one JSON object per bundle, or per module of a binary\n"
    "  A binary answers per module (each translation unit, device-linked image and\n"
    "  embedded bundle, in it and its libraries); exit 1 when any has nothing for the GPU.\n";

struct sel {
    struct cbc_select_query q;
    bool json;
    const char **lib_dirs; /* -L, for the libraries a binary needs */
    size_t n_lib_dirs;
    bool no_libs;
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

/* A binary: every module with kernels of the program (its shared
 * libraries included), one answer each; exit 1 when any has nothing for
 * the GPU, in the words `check --arch` uses. */
static int select_file(struct tool *t, const struct sel *s, const char *path)
{
    struct cbc_program p;
    struct cbc_err err = {0};
    struct cbc_program_opts po = {s->lib_dirs, s->n_lib_dirs, s->no_libs};
    enum cbc_status st = cbc_program_open(path, &po, &p, &err);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return st == CBC_E_IO ? EXIT_USAGE : tool_exit_code(st);
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
    for (size_t m = 0; m < p.n_mods; m++) {
        const struct cbc_pmod *pm = &p.mods[m];
        if (!cbc_pmod_counts(&p, pm))
            continue;
        struct cbc_mod_verdict v;
        cbc_pmod_judge(&p, pm, &s->q, &v);
        if (!cbc_load_runs(v.how))
            rc = EXIT_VERDICT;
        char tn[CBC_TARGET_NAME_MAX];
        cbc_target_name(&v.target, tn);
        const struct cbc_image *img = v.image >= 0 ? &pm->img[v.image] : NULL;
        if (s->json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "path", path);
            cJSON_AddStringToObject(o, "file", cbc_pmod_file(&p, pm));
            cJSON_AddStringToObject(o, "module", pm->label);
            cJSON_AddStringToObject(o, "cc", cc);
            cJSON_AddStringToObject(o, "how", cbc_load_how_name(v.how));
            if (v.how == CBC_LOAD_NONE)
                cJSON_AddNullToObject(o, "target");
            else
                cJSON_AddStringToObject(o, "target", tn);
            if (img)
                cJSON_AddNumberToObject(o, "offset", (double)img->offset);
            cJSON_AddStringToObject(o, "reason", v.reason);
            tool_print_json(o);
            continue;
        }
        tool_fputs_escaped(path, stdout);
        fputs(": ", stdout);
        if (p.n_mods > 1 || pm->kind != CBC_MOD_IMAGE) {
            tool_fputs_escaped(pm->label, stdout);
            if (pm->file) {
                fputs(" of ", stdout);
                tool_fputs_escaped(cbc_pmod_file(&p, pm), stdout);
            }
            fputs(": ", stdout);
        }
        if (v.how == CBC_LOAD_NONE)
            printf("none: ");
        else if (img)
            printf("%s (image %ld at %#llx): ", tn, v.image, (unsigned long long)img->offset);
        else
            printf("%s (%s): ", tn, cbc_load_how_name(v.how));
        tool_fputs_escaped(v.reason, stdout);
        fputc('\n', stdout);
    }
    cbc_program_release(&p);
    return rc;
}

int cmd_select(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache select");
    enum { O_CC = 256, O_DRIVER, O_PREFER, O_JSON, O_NOLIBS, O_HELP };
    static const struct option longopts[] = {
        {"cc", required_argument, NULL, O_CC},
        {"cuda-driver", required_argument, NULL, O_DRIVER},
        {"prefer-binary", no_argument, NULL, O_PREFER},
        {"library-path", required_argument, NULL, 'L'},
        {"no-libs", no_argument, NULL, O_NOLIBS},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, O_HELP},
        {NULL, 0, NULL, 0},
    };
    struct sel s = {{0, 0, false}, false, NULL, 0, false};
    const char *libs[32];
    s.lib_dirs = libs;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":L:", longopts, NULL)) != -1) {
        switch (c) {
        case 'L':
            if (s.n_lib_dirs == CBC_ARRAY_LEN(libs))
                return tool_usage_error(&t, usage, "at most %zu -L directories", CBC_ARRAY_LEN(libs));
            libs[s.n_lib_dirs++] = optarg;
            break;
        case O_NOLIBS: s.no_libs = true; break;
        case O_CC: {
            struct cbc_target tg[2];
            if (cbc_arch_token_parse(optarg, tg) == 0)
                return tool_usage_error(&t, usage, "--cc '%s': expected a compute capability "
                                        "such as 9.0", optarg);
            s.q.cc = tg[0].arch;
            break;
        }
        case O_DRIVER:
            if (!tool_parse_driver(optarg, &s.q.driver_isa))
                return tool_usage_error(&t, usage, "--cuda-driver '%s': expected a CUDA version "
                                        "such as 12.8 (11.0 or later)", optarg);
            break;
        case O_PREFER: s.q.prefer_binary = true; break;
        case O_JSON: s.json = true; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    if (!s.q.cc)
        return tool_usage_error(&t, usage, "--cc is required");
    if (optind != argc - 1)
        return tool_usage_error(&t, usage, "one PATH expected");
    const char *path = argv[optind];
    size_t pl = strlen(path);
    if (pl > 14 && !strcmp(path + pl - 14, ".manifest.json"))
        return select_bundle(&t, &s, path);
    if (!cbc_is_dir(path))
        return select_file(&t, &s, path);
    DIR *d = opendir(path);
    int rc = EXIT_OK;
    size_t found = 0;
    struct dirent *de;
    while (d && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n <= 14 || strcmp(de->d_name + n - 14, ".manifest.json"))
            continue;
        char *m = cbc_path_join(path, de->d_name);
        int r = select_bundle(&t, &s, m);
        rc = r > rc ? r : rc;
        free(m);
        found++;
    }
    if (d)
        closedir(d);
    if (!found) {
        tool_errorf(&t, "'%s' holds no NAME.manifest.json", path);
        return EXIT_USAGE;
    }
    return rc;
}
