/* cmd_inspect.c: `cubincache inspect [--json] FILE...`: what a cubin,
 * fatbin, PTX file or host binary holds, without a CUDA install.
 *
 * For every ELF image inside a fatbin the payload is decompressed and read
 * too, so the listing shows its kernels and whether the entry header's arch
 * (what the driver selects by) agrees with the ELF's own SM (what it then
 * loads): a disagreement is the CUDA_ERROR_INVALID_SOURCE case. --json
 * prints one object per file per line (schema in docs/json.md). What the
 * listing quotes of a file name or a file (kernel names, the ptxas command
 * line, bundle and member names) is printed escaped, as every message is.
 *
 * The file is mapped, not read; its entries are decompressed one at a
 * time into a buffer each worker reuses, on every CPU, each entry's text
 * (or JSON) made there and printed in order, and the pages of an entry
 * are dropped once read: libtorch_cuda.so's 2,981 images inflate to 5.4 GB.
 */
#include "elfextra.h"
#include "cmds.h"
#include "program.h"

#include <cubincache/binfmt.h>
#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

static void add_cubin_json(cJSON *o, const struct cbc_cubin_info *ci)
{
    char flags[16];
    snprintf(flags, sizeof flags, "0x%08x", ci->e_flags);
    cJSON_AddNumberToObject(o, "abi_version", ci->abi_version);
    cJSON_AddNumberToObject(o, "osabi", ci->osabi);
    cJSON_AddStringToObject(o, "e_flags", flags);
    cJSON_AddNumberToObject(o, "e_type", ci->e_type);
    cJSON_AddNumberToObject(o, "sm", ci->sm);
    cJSON_AddStringToObject(o, "variant", cbc_variant_suffix(ci->variant));
    if (ci->virtual_arch)
        cJSON_AddNumberToObject(o, "virtual_arch", ci->virtual_arch);
    else
        cJSON_AddNullToObject(o, "virtual_arch");
    cJSON_AddBoolToObject(o, "debug", ci->debug);
    cJSON_AddBoolToObject(o, "lineinfo", ci->lineinfo);
    cJSON_AddBoolToObject(o, "needs_dlink", cbc_cubin_needs_dlink(ci));
    cJSON *u = cJSON_AddArrayToObject(o, "undefined");
    for (size_t i = 0; i < ci->n_undefined && i < CBC_CUBIN_UNDEF_MAX; i++)
        cJSON_AddItemToArray(u, cJSON_CreateString(ci->undefined[i]));
    cJSON *k = cJSON_AddArrayToObject(o, "kernels");
    cJSON *d = cJSON_AddArrayToObject(o, "device_functions");
    for (size_t i = 0; i < ci->n_funcs; i++)
        cJSON_AddItemToArray(ci->funcs[i].entry ? k : d, cJSON_CreateString(ci->funcs[i].name));
    if (ci->tool_cmdline)
        cJSON_AddStringToObject(o, "tool_cmdline", ci->tool_cmdline);
}

/* s into b as tool_fputs_escaped prints it: a worker's text is printed
 * later, as it is. */
static void buf_puts_escaped(struct cbc_buf *b, const char *s)
{
    size_t n = strlen(s);
    while (n) {
        char unit[CBC_ESCAPE_UNIT_MAX];
        size_t used, k = cbc_escape_unit(s, n, unit, &used);
        cbc_buf_append(b, unit, k);
        s += used;
        n -= used;
    }
}

static void buf_funcs(struct cbc_buf *b, const struct cbc_cubin_info *ci, const char *indent)
{
    for (int pass = 0; pass < 2; pass++) {
        size_t n = 0;
        for (size_t i = 0; i < ci->n_funcs; i++) {
            if (ci->funcs[i].entry != (pass == 0))
                continue;
            cbc_buf_printf(b, "%s%s", n ? ", " : indent,
                           n ? "" : pass == 0 ? "kernels: " : "device functions: ");
            buf_puts_escaped(b, ci->funcs[i].name);
            n++;
        }
        if (n)
            cbc_buf_puts(b, "\n");
    }
}

static void print_funcs(const struct cbc_cubin_info *ci, const char *indent)
{
    struct cbc_buf b = {0};
    buf_funcs(&b, ci, indent);
    if (b.p)
        fputs(b.p, stdout);
    cbc_buf_release(&b);
}

/* -G, -lineinfo or neither: the sections tell (e_flags differ by arch). */
static const char *debug_kind(const struct cbc_cubin_info *ci)
{
    return ci->debug ? ", debug (-G)" : ci->lineinfo ? ", line info (-lineinfo)" : "";
}

static void print_cubin(const char *file, size_t len, const struct cbc_cubin_info *ci)
{
    tool_fputs_escaped(file, stdout);
    printf(": cubin sm_%u%s, %zu bytes (ELF %s, EI_ABIVERSION %u, e_flags 0x%08x, %s)", ci->sm,
           cbc_variant_suffix(ci->variant), len, ci->abi_version >= 8 ? "V2" : "V1", ci->abi_version,
           ci->e_flags, ci->e_type == 1 ? "relocatable" : "executable");
    if (ci->virtual_arch)
        printf(", from compute_%u", ci->virtual_arch);
    printf("%s\n", debug_kind(ci));
    if (cbc_cubin_needs_dlink(ci)) {
        printf("  relocatable: needs device link (undefined: ");
        for (size_t i = 0; i < ci->n_undefined && i < CBC_CUBIN_UNDEF_MAX; i++) {
            fputs(i ? ", " : "", stdout);
            tool_fputs_escaped(ci->undefined[i], stdout);
        }
        printf("%s)\n", ci->n_undefined > CBC_CUBIN_UNDEF_MAX ? ", ..." : "");
    } else if (ci->e_type == 1) {
        printf("  relocatable (-rdc), but it references nothing it does not define: loads as is\n");
    }
    print_funcs(ci, "  ");
    if (ci->tool_cmdline) {
        fputs("  ptxas command line: ", stdout);
        tool_fputs_escaped(ci->tool_cmdline, stdout);
        fputc('\n', stdout);
    }
}

/* What one entry of a fatbin says, made on a worker: its text or its JSON
 * object, and whether it is a problem. */
struct entry_out {
    char *text;
    cJSON *json;
    bool problem;
};

struct fatbin_job {
    const char *file;
    const uint8_t *file_data; /* the mapping (entry offsets are into it), for dropping pages */
    size_t file_len;
    const char *section;
    const struct cbc_fatbin *fb;
    bool json;
    struct entry_out *out;
};

static void inspect_entry(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct fatbin_job *j = ctx;
    const struct cbc_fatbin_entry *e = &j->fb->entries[i];
    struct entry_out *r = &j->out[i];
    const char *file = j->file;
    char target[48];
    snprintf(target, sizeof target, "%s_%u%s",
             e->kind == CBC_FATBIN_PTX ? "compute" : e->kind == CBC_FATBIN_ELF ? "sm" : "arch",
             e->arch, cbc_variant_suffix(e->variant));
    const uint8_t *p = NULL;
    size_t plen = 0;
    struct cbc_err pe = {0};
    bool have = (e->kind == CBC_FATBIN_ELF || e->kind == CBC_FATBIN_PTX) &&
                cbc_fatbin_entry_view(e, file, z, &p, &plen, &pe) == CBC_OK;
    struct cbc_cubin_info ci;
    bool have_ci = have && e->kind == CBC_FATBIN_ELF && cbc_cubin_parse(p, plen, file, &ci, &pe) == CBC_OK;
    struct cbc_ptx_info pi;
    bool have_pi = have && e->kind == CBC_FATBIN_PTX && cbc_ptx_parse(p, plen, file, &pi, &pe) == CBC_OK;
    bool bad_arch = have_ci && ci.sm != e->arch;
    r->problem = bad_arch || pe.msg[0];
    if (j->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "container", (double)e->container);
        cJSON_AddStringToObject(o, "kind", cbc_fatbin_kind_name(e->kind));
        cJSON_AddStringToObject(o, "target", target);
        cJSON_AddNumberToObject(o, "arch", e->arch);
        cJSON_AddStringToObject(o, "variant", cbc_variant_suffix(e->variant));
        char fl[24];
        snprintf(fl, sizeof fl, "0x%llx", (unsigned long long)e->flags);
        cJSON_AddStringToObject(o, "flags", fl);
        cJSON_AddNumberToObject(o, "offset", (double)e->offset);
        cJSON_AddNumberToObject(o, "stored_size", (double)e->payload_size);
        cJSON_AddStringToObject(o, "compression", cbc_compression_name(e->compression));
        cJSON_AddNumberToObject(o, "size", (double)(have ? plen : e->uncompressed_size));
        if (e->kind == CBC_FATBIN_PTX) {
            char isa[16];
            snprintf(isa, sizeof isa, "%u.%u", e->version_major, e->version_minor);
            cJSON_AddStringToObject(o, "ptx_isa", isa);
        }
        if (j->section)
            cJSON_AddStringToObject(o, "section", j->section);
        if (have_ci) {
            cJSON *c = cJSON_AddObjectToObject(o, "cubin");
            add_cubin_json(c, &ci);
        }
        if (bad_arch)
            cJSON_AddStringToObject(o, "problem", "entry header arch differs from the ELF's SM");
        else if (pe.msg[0])
            cJSON_AddStringToObject(o, "problem", pe.msg);
        r->json = o;
    } else {
        struct cbc_buf b = {0};
        cbc_buf_printf(&b, "  [%zu] %-6s %-13s", i, cbc_fatbin_kind_name(e->kind), target);
        if (e->kind == CBC_FATBIN_PTX)
            cbc_buf_printf(&b, " ISA %u.%u", e->version_major, e->version_minor);
        if (e->compression)
            cbc_buf_printf(&b, " %s %u -> %llu bytes", cbc_compression_name(e->compression),
                           e->compressed_size, (unsigned long long)e->uncompressed_size);
        else
            cbc_buf_printf(&b, " %llu bytes", (unsigned long long)e->payload_size);
        cbc_buf_printf(&b, " at %#llx%s\n", (unsigned long long)e->offset,
                       e->flags & CBC_FATBIN_FLAG_DEBUG ? ", debug" : "");
        if (bad_arch)
            cbc_buf_printf(&b, "      PROBLEM: the entry header says arch %u but the ELF is sm_%u; "
                           "the driver selects by the header and then refuses the image "
                           "(CUDA_ERROR_INVALID_SOURCE)\n", e->arch, ci.sm);
        else if (pe.msg[0])
            cbc_buf_printf(&b, "      PROBLEM: %s\n", pe.msg);
        if (have_ci)
            buf_funcs(&b, &ci, "      ");
        if (have_pi)
            cbc_buf_printf(&b, "      PTX .target sm_%u%s, %zu kernel%s\n", pi.arch,
                           cbc_variant_suffix(pi.variant), pi.n_entries, pi.n_entries == 1 ? "" : "s");
        r->text = b.oom ? NULL : cbc_buf_detach(&b);
        cbc_buf_release(&b);
    }
    if (have_ci)
        cbc_cubin_info_release(&ci);
    /* its pages need not stay resident once read */
    cbc_map_forget(j->file_data, j->file_len, e->offset, e->header_size + e->payload_size);
}

/* One fatbin's entries; `section` is NULL for a .fatbin file. `data` is
 * `base` bytes into the mapping file_data, as entry offsets are. */
static enum cbc_status do_fatbin(const char *file, const uint8_t *data, size_t len, uint64_t base,
                                 const char *section, cJSON *arr, struct cbc_err *err,
                                 bool *mismatch, const uint8_t *file_data, size_t file_len)
{
    struct cbc_fatbin fb;
    enum cbc_status st = cbc_fatbin_parse_mapped(data, len, base, file, file_data, file_len, &fb, err);
    if (st != CBC_OK)
        return st;
    if (!arr)
        printf("  %s%s%zu container%s, %zu entr%s\n", section ? section : "", section ? ": " : "",
               fb.n_containers, fb.n_containers == 1 ? "" : "s", fb.n, fb.n == 1 ? "y" : "ies");
    struct entry_out *out = calloc(fb.n ? fb.n : 1, sizeof *out);
    if (!out) {
        cbc_fatbin_release(&fb);
        return cbc_err_oom(err);
    }
    struct fatbin_job j = {file, file_data, file_len, section, &fb, arr != NULL, out};
    cbc_parallel(0, fb.n, inspect_entry, &j);
    for (size_t i = 0; i < fb.n; i++) {
        *mismatch |= out[i].problem;
        if (arr && out[i].json)
            cJSON_AddItemToArray(arr, out[i].json);
        else if (out[i].text)
            fputs(out[i].text, stdout);
        free(out[i].text);
    }
    free(out);
    cbc_fatbin_release(&fb);
    return st;
}

/* The bundles `cubincache embed` compiled into a host binary. A corrupt
 * or mislabeled image is reported (and counted as a problem) without
 * hiding the others: the records are read first, then each image is
 * verified on its own. */
static enum cbc_status do_embedded(const char *file, const uint8_t *data, size_t len, uint64_t base,
                                   cJSON *arr, struct cbc_err *err, bool *problem)
{
    struct cbc_embedded_list el;
    enum cbc_status st = cbc_embedded_parse(data, len, base, file, false, &el, err);
    if (st != CBC_OK)
        return st;
    if (!arr)
        printf("  " CBC_EMBED_SECTION ": %zu embedded bundle%s, %zu image%s\n", el.n_records,
               el.n_records == 1 ? "" : "s", el.n, el.n == 1 ? "" : "s");
    for (size_t i = 0; i < el.n; i++) {
        const struct cbc_embedded_entry *e = &el.v[i];
        char tn[CBC_TARGET_NAME_MAX];
        cbc_target_name(&e->target, tn);
        struct cbc_err ve = {0};
        const bool bad = cbc_embedded_verify(e, file, &ve) != CBC_OK;
        struct cbc_cubin_info ci;
        bool have_ci = e->target.kind == CBC_KIND_SASS &&
                       cbc_cubin_parse(e->data, (size_t)e->size, file, &ci, NULL) == CBC_OK;
        *problem |= bad;
        if (arr) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "section", CBC_EMBED_SECTION);
            cJSON_AddStringToObject(o, "bundle", e->bundle);
            cJSON_AddNumberToObject(o, "container", (double)e->record);
            cJSON_AddStringToObject(o, "kind", cbc_fatbin_kind_name(e->target.kind == CBC_KIND_PTX
                                                                        ? CBC_FATBIN_PTX
                                                                        : CBC_FATBIN_ELF));
            cJSON_AddStringToObject(o, "target", tn);
            cJSON_AddNumberToObject(o, "offset", (double)e->offset);
            cJSON_AddNumberToObject(o, "size", (double)e->size);
            if (e->ptx_isa) {
                char isa[16];
                snprintf(isa, sizeof isa, "%u.%u", e->ptx_isa / 10, e->ptx_isa % 10);
                cJSON_AddStringToObject(o, "ptx_isa", isa);
            }
            if (bad)
                cJSON_AddStringToObject(o, "problem", ve.msg);
            cJSON_AddItemToArray(arr, o);
        } else {
            char bundle[4 * CBC_NAME_MAX];
            cbc_escape(bundle, sizeof bundle, e->bundle);
            printf("    [%zu] bundle %-14s %-6s %-12s %9llu bytes at %#llx", i, bundle,
                   e->target.kind == CBC_KIND_PTX ? "PTX" : "SASS", tn,
                   (unsigned long long)e->size, (unsigned long long)e->offset);
            if (e->ptx_isa)
                printf(", PTX ISA %u.%u", e->ptx_isa / 10, e->ptx_isa % 10);
            printf("\n");
            if (bad)
                printf("      PROBLEM: %s\n", ve.msg);
            if (have_ci)
                print_funcs(&ci, "      ");
        }
        if (have_ci)
            cbc_cubin_info_release(&ci);
    }
    cbc_embedded_release(&el);
    return CBC_OK;
}

/* One host ELF's CUDA sections; `member` names it inside a static library
 * (then `base` is its offset there). */
static enum cbc_status do_host(const char *file, const uint8_t *data, size_t len, uint64_t base,
                               const char *member, cJSON *arr, struct cbc_err *err, bool *problem,
                               const struct cbc_map *mp)
{
    struct cbc_host_elf he;
    enum cbc_status st = cbc_host_elf_parse(data, len, file, &he, err);
    if (st != CBC_OK)
        return st;
    static const char *const kinds[] = {"none", "relocatable object", "executable",
                                        "shared object or PIE"};
    if (!arr) {
        fputs(member ? "  member " : "", stdout);
        tool_fputs_escaped(member ? member : file, stdout);
        printf(": host ELF (%s), %zu bytes\n", he.e_type < 4 ? kinds[he.e_type] : "other", len);
    }
    const struct {
        const char *name;
        const struct cbc_host_section *s;
    } secs[] = {{".nv_fatbin", &he.nv_fatbin}, {"__nv_relfatbin", &he.nv_relfatbin}};
    bool any = false;
    for (size_t i = 0; i < 2 && st == CBC_OK; i++) {
        if (!secs[i].s->present)
            continue;
        any = true;
        st = do_fatbin(file, data + secs[i].s->offset, (size_t)secs[i].s->size,
                       base + secs[i].s->offset, secs[i].name, arr, err, problem, mp->data, mp->len);
    }
    if (st == CBC_OK && he.cbc_bundle.present) {
        any = true;
        st = do_embedded(file, data + he.cbc_bundle.offset, (size_t)he.cbc_bundle.size,
                         base + he.cbc_bundle.offset, arr, err, problem);
    }
    if (!any && !arr)
        printf("  no .nv_fatbin, __nv_relfatbin or " CBC_EMBED_SECTION " section: no GPU code\n");
    return st;
}

/* Returns the exit code for one file. */
static int inspect_one(struct tool *t, const char *file, bool json)
{
    struct cbc_map mp;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_file_map(file, &mp, &err);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return EXIT_USAGE;
    }
    const uint8_t *data = mp.data;
    size_t len = mp.len;
    enum cbc_file_type type = cbc_binfmt_detect(data, len);
    cJSON *root = json ? cJSON_CreateObject() : NULL;
    cJSON *arr = NULL;
    if (root) {
        cJSON_AddStringToObject(root, "file", file);
        cJSON_AddStringToObject(root, "type", cbc_file_type_name(type));
        cJSON_AddNumberToObject(root, "size", (double)len);
    }
    bool problem = false;
    switch (type) {
    case CBC_FILE_CUBIN: {
        struct cbc_cubin_info ci;
        st = cbc_cubin_parse(data, len, file, &ci, &err);
        if (st == CBC_OK) {
            if (root)
                add_cubin_json(cJSON_AddObjectToObject(root, "cubin"), &ci);
            else
                print_cubin(file, len, &ci);
            cbc_cubin_info_release(&ci);
        }
        break;
    }
    case CBC_FILE_PTX: {
        struct cbc_ptx_info pi;
        st = cbc_ptx_parse(data, len, file, &pi, &err);
        if (st == CBC_OK && root) {
            cJSON *p = cJSON_AddObjectToObject(root, "ptx");
            char isa[16];
            snprintf(isa, sizeof isa, "%u.%u", pi.isa / 10, pi.isa % 10);
            cJSON_AddStringToObject(p, "isa", isa);
            char tg[32];
            snprintf(tg, sizeof tg, "sm_%u%s", pi.arch, cbc_variant_suffix(pi.variant));
            cJSON_AddStringToObject(p, "target", tg);
            cJSON_AddNumberToObject(p, "kernels", (double)pi.n_entries);
        } else if (st == CBC_OK) {
            char where[64];
            if (pi.variant == CBC_VARIANT_A)
                snprintf(where, sizeof where, "exactly compute capability %u.%u", pi.arch / 10,
                         pi.arch % 10);
            else if (pi.variant == CBC_VARIANT_F)
                snprintf(where, sizeof where, "compute capability %u.%u to %u.9", pi.arch / 10,
                         pi.arch % 10, pi.arch / 10);
            else
                snprintf(where, sizeof where, "compute capability %u.%u and newer", pi.arch / 10,
                         pi.arch % 10);
            tool_fputs_escaped(file, stdout);
            printf(": PTX ISA %u.%u for sm_%u%s (JIT on %s), %zu kernel%s\n", pi.isa / 10,
                   pi.isa % 10, pi.arch, cbc_variant_suffix(pi.variant), where, pi.n_entries,
                   pi.n_entries == 1 ? "" : "s");
        }
        break;
    }
    case CBC_FILE_FATBIN:
        if (!root) {
            tool_fputs_escaped(file, stdout);
            printf(": fatbin, %zu bytes\n", len);
        } else
            arr = cJSON_AddArrayToObject(root, "entries");
        st = do_fatbin(file, data, len, 0, NULL, arr, &err, &problem, mp.data, mp.len);
        break;
    case CBC_FILE_HOST_ELF:
        if (root)
            arr = cJSON_AddArrayToObject(root, "entries");
        st = do_host(file, data, len, 0, NULL, arr, &err, &problem, &mp);
        break;
    case CBC_FILE_ARCHIVE: {
        /* a static library: each member object as a host ELF */
        struct cbc_ar a;
        st = cbc_ar_parse(data, len, file, &a, &err);
        if (st != CBC_OK)
            break;
        if (root)
            arr = cJSON_AddArrayToObject(root, "entries");
        else {
            tool_fputs_escaped(file, stdout);
            printf(": static library, %zu member%s\n", a.n, a.n == 1 ? "" : "s");
        }
        for (size_t i = 0; i < a.n && st == CBC_OK; i++) {
            if (cbc_binfmt_detect(a.v[i].data, (size_t)a.v[i].size) != CBC_FILE_HOST_ELF)
                continue;
            st = do_host(file, a.v[i].data, (size_t)a.v[i].size, a.v[i].offset, a.v[i].name, arr,
                         &err, &problem, &mp);
        }
        cbc_ar_release(&a);
        break;
    }
    case CBC_FILE_LTOIR:
        if (!root) {
            tool_fputs_escaped(file, stdout);
            printf(": NVVM LTO-IR, %zu bytes (linked by nvJitLink; not loadable by the driver)\n",
                   len);
        }
        break;
    case CBC_FILE_UNKNOWN:
        st = cbc_err_set(&err, CBC_E_FORMAT,
                         "'%s': not a cubin, fatbin, PTX file or ELF file (first bytes match none)",
                         file);
        break;
    }
    cbc_file_unmap(&mp);
    if (root) {
        if (st != CBC_OK)
            cJSON_AddStringToObject(root, "error", err.msg);
        tool_print_json(root);
    }
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    return problem ? EXIT_VERDICT : EXIT_OK;
}

int cmd_inspect(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "cubincache inspect");
    bool json = false;
    const struct tool_opt opts[] = {
        OPT_FLAG(0, "json", &json, "one JSON object per file (docs/json.md)"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: cubincache inspect [--json] FILE...\n"
        "  FILE: a cubin, fatbin, PTX file, executable, shared library, object\n"
        "        or static library\n",
        opts, NULL};
    int rc = tool_parse(&t, &cmd, argc, argv);
    if (rc != TOOL_PARSED)
        return rc;
    if (optind >= argc)
        return tool_usage(&t, "no FILE given");
    int worst = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        rc = inspect_one(&t, argv[i], json);
        if (rc > worst)
            worst = rc;
    }
    return worst;
}
