/* images.c: file-type detection and the uniform list of images any input
 * holds (a cubin is one SASS image, a PTX file one PTX image, a fatbin one
 * image per entry, a host ELF one per entry of its fatbins and per image of
 * its embedded bundles), which is what the selection policy, `inspect`,
 * `check` and `select` work on.
 *
 * Fatbin entries are described from their headers; the PTX ISA of a PTX
 * entry is its header version (major.minor). Nothing is decompressed here.
 */
#include "binfmt_int.h"
#include "elfextra.h"

#include <stdlib.h>

#define EM_CUDA 190

enum cbc_file_type cbc_binfmt_detect(const uint8_t *data, size_t len)
{
    if (len >= 4 && cbc_rd32(data) == 0xBA55ED50u)
        return CBC_FILE_FATBIN;
    if (len >= 8 && memcmp(data, "!<arch>\n", 8) == 0)
        return CBC_FILE_ARCHIVE;
    if (len >= 4 && data[0] == 0x7f && data[1] == 'N' && data[2] == 'C' && data[3] == 0xed)
        return CBC_FILE_LTOIR;
    if (len >= 20 && memcmp(data, "\177ELF", 4) == 0)
        return cbc_rd16(data + 18) == EM_CUDA ? CBC_FILE_CUBIN : CBC_FILE_HOST_ELF;
    if (len >= 4 && memcmp(data, "\177ELF", 4) == 0)
        return CBC_FILE_HOST_ELF; /* too short: the ELF reader will say why */
    /* PTX: text whose first directive-looking lines include .version */
    size_t n = len < 4096 ? len : 4096;
    for (size_t i = 0; i + 8 <= n; i++) {
        if (data[i] == 0 && i > 0)
            break;
        if ((i == 0 || data[i - 1] == '\n') && memcmp(data + i, ".version", 8) == 0)
            return CBC_FILE_PTX;
    }
    return CBC_FILE_UNKNOWN;
}

const char *cbc_file_type_name(enum cbc_file_type t)
{
    switch (t) {
    case CBC_FILE_CUBIN: return "cubin";
    case CBC_FILE_FATBIN: return "fatbin";
    case CBC_FILE_PTX: return "ptx";
    case CBC_FILE_HOST_ELF: return "host-elf";
    case CBC_FILE_LTOIR: return "lto-ir";
    case CBC_FILE_ARCHIVE: return "archive";
    case CBC_FILE_UNKNOWN: break;
    }
    return "unknown";
}

static enum cbc_status push(struct cbc_image_list *l, size_t *cap, const struct cbc_image *img,
                            struct cbc_err *err)
{
    if (!cbc_grow(&l->v, l->n, cap, sizeof *l->v, 8))
        return cbc_err_oom(err);
    l->v[l->n++] = *img;
    return CBC_OK;
}

static enum cbc_status from_fatbin(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                   const char *section, struct cbc_image_list *l, size_t *cap,
                                   size_t container_base, size_t *containers, struct cbc_err *err)
{
    struct cbc_fatbin fb;
    enum cbc_status st = cbc_fatbin_parse(data, len, base, name, &fb, err);
    if (st != CBC_OK)
        return st;
    for (size_t i = 0; i < fb.n && st == CBC_OK; i++) {
        const struct cbc_fatbin_entry *e = &fb.entries[i];
        struct cbc_image img = {0};
        img.fatbin_kind = e->kind;
        img.target.kind = e->kind == CBC_FATBIN_PTX ? CBC_KIND_PTX : CBC_KIND_SASS;
        img.target.variant = e->variant;
        img.target.arch = (uint16_t)(e->arch > UINT16_MAX ? UINT16_MAX : e->arch);
        img.ptx_isa = e->kind == CBC_FATBIN_PTX ? e->version_major * 10u + e->version_minor : 0;
        img.offset = e->offset;
        img.size = e->payload_size;
        img.uncompressed_size = e->compression ? e->uncompressed_size : 0;
        img.compression = e->compression;
        img.debug = (e->flags & CBC_FATBIN_FLAG_DEBUG) != 0;
        img.section = section;
        img.needs_dlink = section && strcmp(section, "__nv_relfatbin") == 0;
        img.container = container_base + e->container;
        st = push(l, cap, &img, err);
    }
    *containers = fb.n_containers;
    cbc_fatbin_release(&fb);
    return st;
}

static enum cbc_status from_embedded(const uint8_t *data, size_t len, uint64_t base,
                                     const char *name, struct cbc_image_list *l, size_t *cap,
                                     struct cbc_err *err)
{
    struct cbc_embedded_list el;
    enum cbc_status st = cbc_embedded_parse(data, len, base, name, true, &el, err);
    for (size_t i = 0; st == CBC_OK && i < el.n; i++) {
        const struct cbc_embedded_entry *e = &el.v[i];
        struct cbc_image img = {0};
        img.fatbin_kind = e->target.kind == CBC_KIND_PTX ? CBC_FATBIN_PTX : CBC_FATBIN_ELF;
        img.target = e->target;
        img.ptx_isa = e->ptx_isa;
        img.offset = e->offset;
        img.size = e->size;
        img.section = CBC_EMBED_SECTION;
        img.container = e->record;
        img.bundle = e->bundle;
        st = push(l, cap, &img, err);
    }
    cbc_embedded_release(&el); /* zeroed when parsing failed */
    return st;
}

enum cbc_status cbc_binfmt_images(const uint8_t *data, size_t len, const char *name,
                                  struct cbc_image_list *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct cbc_image_list l = {0};
    size_t cap = 0, containers = 0;
    enum cbc_status st = CBC_OK;
    l.type = cbc_binfmt_detect(data, len);
    switch (l.type) {
    case CBC_FILE_CUBIN: {
        struct cbc_cubin_info ci;
        st = cbc_cubin_parse(data, len, name, &ci, err);
        if (st != CBC_OK)
            break;
        struct cbc_image img = {.fatbin_kind = CBC_FATBIN_ELF, .target = cbc_cubin_target(&ci),
                                .size = len, .debug = ci.debug,
                                .needs_dlink = cbc_cubin_needs_dlink(&ci)};
        cbc_cubin_info_release(&ci);
        st = push(&l, &cap, &img, err);
        break;
    }
    case CBC_FILE_PTX: {
        struct cbc_ptx_info pi;
        st = cbc_ptx_parse(data, len, name, &pi, err);
        if (st != CBC_OK)
            break;
        struct cbc_image img = {.fatbin_kind = CBC_FATBIN_PTX, .target = cbc_ptx_target(&pi),
                                .ptx_isa = pi.isa, .size = len};
        st = push(&l, &cap, &img, err);
        break;
    }
    case CBC_FILE_FATBIN:
        st = from_fatbin(data, len, 0, name, NULL, &l, &cap, 0, &containers, err);
        break;
    case CBC_FILE_HOST_ELF: {
        struct cbc_host_elf he;
        st = cbc_host_elf_parse(data, len, name, &he, err);
        if (st == CBC_OK && he.nv_fatbin.present && he.nv_fatbin.size)
            st = from_fatbin(data + he.nv_fatbin.offset, (size_t)he.nv_fatbin.size,
                             he.nv_fatbin.offset, name, ".nv_fatbin", &l, &cap, 0, &containers, err);
        size_t c2 = 0;
        if (st == CBC_OK && he.nv_relfatbin.present && he.nv_relfatbin.size)
            st = from_fatbin(data + he.nv_relfatbin.offset, (size_t)he.nv_relfatbin.size,
                             he.nv_relfatbin.offset, name, "__nv_relfatbin", &l, &cap, containers,
                             &c2, err);
        if (st == CBC_OK && he.cbc_bundle.present && he.cbc_bundle.size)
            st = from_embedded(data + he.cbc_bundle.offset, (size_t)he.cbc_bundle.size,
                               he.cbc_bundle.offset, name, &l, &cap, err);
        break;
    }
    case CBC_FILE_LTOIR: {
        struct cbc_image img = {.fatbin_kind = CBC_FATBIN_LTOIR, .size = len};
        st = push(&l, &cap, &img, err);
        break;
    }
    case CBC_FILE_ARCHIVE: {
        /* every member object's images, containers numbered across them */
        struct cbc_ar a;
        st = cbc_ar_parse(data, len, name, &a, err);
        size_t base = 0;
        for (size_t i = 0; st == CBC_OK && i < a.n; i++) {
            const struct cbc_ar_member *m = &a.v[i];
            if (cbc_binfmt_detect(m->data, (size_t)m->size) != CBC_FILE_HOST_ELF)
                continue;
            struct cbc_host_elf he;
            st = cbc_host_elf_parse(m->data, (size_t)m->size, name, &he, err);
            size_t c1 = 0, c2 = 0;
            if (st == CBC_OK && he.nv_fatbin.present && he.nv_fatbin.size)
                st = from_fatbin(m->data + he.nv_fatbin.offset, (size_t)he.nv_fatbin.size,
                                 m->offset + he.nv_fatbin.offset, name, ".nv_fatbin", &l, &cap,
                                 base, &c1, err);
            if (st == CBC_OK && he.nv_relfatbin.present && he.nv_relfatbin.size)
                st = from_fatbin(m->data + he.nv_relfatbin.offset, (size_t)he.nv_relfatbin.size,
                                 m->offset + he.nv_relfatbin.offset, name, "__nv_relfatbin", &l,
                                 &cap, base + c1, &c2, err);
            base += c1 + c2;
        }
        cbc_ar_release(&a);
        break;
    }
    case CBC_FILE_UNKNOWN:
        st = cbc_fmt_err(err, CBC_E_FORMAT, name, 0,
                         "not a cubin, fatbin, PTX file or ELF file (first bytes do not match any)");
        break;
    }
    if (st != CBC_OK) {
        free(l.v);
        return st;
    }
    *out = l;
    return CBC_OK;
}

void cbc_image_list_release(struct cbc_image_list *l)
{
    free(l->v);
    memset(l, 0, sizeof *l);
}
