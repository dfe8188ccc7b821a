/* program.c: the program model of program.h, built from the readers of
 * src/binfmt, judged with the selection policy of src/select.
 *
 * How the modules of a host ELF are told apart, from nvcc 13 output
 * (tests/corpus): .nv_fatbin holds one container per non-rdc translation
 * unit, nvcc's kernel-less device-link stub, and, for -rdc builds, the
 * device-linked image; __nv_relfatbin holds one container per -rdc unit
 * (the device runtime's among them), relocatable code only. A .nv_fatbin
 * container whose kernels are all kernels of the relocatable units is the
 * device-linked image of those units; a file with relocatable units and no
 * such container (an object, a static library member) is not linked yet.
 * Kernels are the STO_CUDA_ENTRY functions of an ELF image, or the .entry
 * directives of PTX.
 *
 * Opening reads entry headers only. A module's kernels are read from one
 * of its images, the smallest ELF (else PTX): nvcc compiles every image of
 * a container from the same translation unit, so they define the same
 * kernels; only files with relocatable code need them at open (to tell the
 * device-linked image), everything else when a verdict asks (judge.c).
 * The libraries a host ELF needs are found as ld.so would (ldso.c).
 */
#include "program.h"

#include "elfextra.h"
#include "program_int.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- image bytes and kernels -------------------------------------------------- */

enum cbc_status cbc_pmod_image(const struct cbc_program *p, const struct cbc_pmod *m,
                               const struct cbc_image *img, size_t prefix, struct cbc_inflate *z,
                               const uint8_t **out, size_t *len, struct cbc_err *err)
{
    const struct cbc_pfile *f = &p->files[m->file];
    bool raw = m->raw && img >= m->img && img < m->img + m->n_img;
    if (raw) {
        if (!cbc_in_bounds(f->len, img->offset, img->size))
            return cbc_err_set(err, CBC_E_FORMAT, "'%s': offset %#llx: image of %llu bytes lies "
                               "past the end of the file", f->path,
                               (unsigned long long)img->offset, (unsigned long long)img->size);
        *out = f->data + img->offset;
        *len = (size_t)img->size;
        if (prefix && *len > prefix)
            *len = prefix;
        return CBC_OK;
    }
    struct cbc_fatbin_entry e;
    enum cbc_status st = cbc_fatbin_entry_at(f->data, f->len, img->offset, f->path, &e, err);
    if (st != CBC_OK)
        return st;
    return prefix ? cbc_fatbin_entry_prefix(&e, f->path, prefix, z, out, len, err)
                  : cbc_fatbin_entry_view(&e, f->path, z, out, len, err);
}

void cbc_pmod_forget(const struct cbc_program *p, const struct cbc_pmod *m,
                     const struct cbc_image *img)
{
    const struct cbc_pfile *f = &p->files[m->file];
    /* an entry: its header (at most a few hundred bytes) and payload */
    cbc_map_forget(f->data, f->len, img->offset, img->size + 512);
}

/* The image kernels are read from: the smallest ELF, else the smallest
 * PTX; NULL when there is neither (LTO-IR only). */
static const struct cbc_image *kernel_image(const struct cbc_image *v, size_t n)
{
    const struct cbc_image *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct cbc_image *c = &v[i];
        if (c->fatbin_kind != CBC_FATBIN_ELF && c->fatbin_kind != CBC_FATBIN_PTX)
            continue;
        uint64_t cs = c->uncompressed_size ? c->uncompressed_size : c->size;
        if (!best || (c->fatbin_kind == CBC_FATBIN_ELF && best->fatbin_kind != CBC_FATBIN_ELF))
            best = c;
        else if (c->fatbin_kind == best->fatbin_kind &&
                 cs < (best->uncompressed_size ? best->uncompressed_size : best->size))
            best = c;
    }
    return best;
}

/* The kernels of one image's bytes. */
static bool bytes_kernels(const uint8_t *b, size_t n, uint16_t kind, const char *name,
                          struct cbc_names *out, struct cbc_err *err)
{
    if (kind == CBC_FATBIN_ELF) {
        struct cbc_cubin_info ci;
        if (cbc_cubin_parse(b, n, name, &ci, err) != CBC_OK)
            return false;
        bool ok = true;
        for (size_t f = 0; f < ci.n_funcs && ok; f++)
            if (ci.funcs[f].entry)
                ok = cbc_names_add(out, ci.funcs[f].name, strlen(ci.funcs[f].name));
        cbc_cubin_info_release(&ci);
        if (!ok)
            cbc_err_oom(err);
        return ok;
    }
    /* ".entry NAME(" or ".visible .entry NAME(" */
    const char *t = (const char *)b, *end = t + n;
    for (const char *q = t; q && q + 7 < end; q = memchr(q + 1, '.', (size_t)(end - q - 1))) {
        if (memcmp(q, ".entry", 6) != 0 || !isspace((unsigned char)q[6]))
            continue;
        const char *n0 = q + 6;
        while (n0 < end && isspace((unsigned char)*n0))
            n0++;
        const char *n1 = n0;
        while (n1 < end && (isalnum((unsigned char)*n1) || *n1 == '_' || *n1 == '$'))
            n1++;
        if (n1 > n0 && !cbc_names_add(out, n0, (size_t)(n1 - n0))) {
            cbc_err_oom(err);
            return false;
        }
    }
    return true;
}

/* Reads the kernels of images v[0, n) of module m (one image stands for
 * all). Sets m->kernels, m->names; m->kproblem when they cannot be read. */
static void read_kernels(const struct cbc_program *p, struct cbc_pmod *m, const struct cbc_image *v,
                         size_t n, struct cbc_inflate *z)
{
    if (m->names_read)
        return;
    m->names_read = true;
    const struct cbc_image *img = kernel_image(v, n);
    if (!img) {
        /* LTO-IR only: nvJitLink's input, its kernels not listed */
        if (m->kernels < 0)
            m->kernels = n > 0;
        return;
    }
    const uint8_t *b;
    size_t len;
    struct cbc_err e = {0};
    struct cbc_names k = {0};
    bool ok = cbc_pmod_image(p, m, img, 0, z, &b, &len, &e) == CBC_OK &&
              bytes_kernels(b, len, img->fatbin_kind, p->files[m->file].path, &k, &e);
    cbc_pmod_forget(p, m, img);
    if (!ok) {
        m->kproblem = cbc_strdup(e.msg);
        m->kernels = 1; /* unknown: counted as having kernels, never left out */
        cbc_names_release(&k);
        return;
    }
    m->names = k.v;
    m->n_names = k.n;
    if (m->kernels < 0)
        m->kernels = k.n > 0;
}

struct kernels_job {
    const struct cbc_program *p;
    struct cbc_pmod **mods;
};

static void kernels_one(void *ctx, size_t i, struct cbc_inflate *z)
{
    struct kernels_job *j = ctx;
    struct cbc_pmod *m = j->mods[i];
    read_kernels(j->p, m, m->n_img ? m->img : m->rel, m->n_img ? m->n_img : m->n_rel, z);
}

void cbc_program_read_kernels(const struct cbc_program *p, struct cbc_pmod **mods, size_t n)
{
    struct kernels_job j = {p, mods};
    cbc_program_parallel(p, n, kernels_one, &j);
}

/* ---- workers ------------------------------------------------------------------ */

struct pool {
    size_t n, next;
    pthread_mutex_t mu;
    void (*fn)(void *, size_t, struct cbc_inflate *);
    void *ctx;
};

static void *worker(void *arg)
{
    struct pool *pl = arg;
    struct cbc_inflate z = {0};
    for (;;) {
        pthread_mutex_lock(&pl->mu);
        size_t i = pl->next++;
        pthread_mutex_unlock(&pl->mu);
        if (i >= pl->n)
            break;
        pl->fn(pl->ctx, i, &z);
    }
    cbc_inflate_release(&z);
    return NULL;
}

unsigned cbc_default_threads(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return ncpu < 1 ? 1 : ncpu > 8 ? 8 : (unsigned)ncpu;
}

void cbc_program_parallel(const struct cbc_program *p, size_t n,
                          void (*fn)(void *ctx, size_t i, struct cbc_inflate *z), void *ctx)
{
    cbc_parallel(p->threads, n, fn, ctx);
}

void cbc_parallel(unsigned threads, size_t n, void (*fn)(void *ctx, size_t i, struct cbc_inflate *z),
                  void *ctx)
{
    if (!n)
        return;
    struct pool pl = {n, 0, PTHREAD_MUTEX_INITIALIZER, fn, ctx};
    unsigned t = threads ? threads : cbc_default_threads();
    if (t > n)
        t = (unsigned)n;
    pthread_t th[16];
    unsigned started = 0;
    for (unsigned i = 1; i < t && i < CBC_ARRAY_LEN(th); i++)
        if (pthread_create(&th[started], NULL, worker, &pl) == 0)
            started++;
    worker(&pl); /* this thread works too; with no thread started, alone */
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&pl.mu);
}

/* ---- building --------------------------------------------------------------- */

struct builder {
    struct cbc_program *p;
    const struct cbc_program_opts *o;
    size_t cap_files, cap_mods, cap_maps;
    struct cbc_ldso ld;
    struct cbc_names seen; /* "dev:ino" of every file read */
    struct cbc_err *err;
};

static struct cbc_pmod *new_mod(struct builder *b, enum cbc_mod_kind kind, size_t file,
                                const char *label)
{
    struct cbc_program *p = b->p;
    if (!cbc_grow(&p->mods, p->n_mods, &b->cap_mods, sizeof *p->mods, 8))
        return NULL;
    struct cbc_pmod *m = &p->mods[p->n_mods++];
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->file = file;
    m->kernels = -1;
    cbc_fmt(m->label, sizeof m->label, "%s", label);
    return m;
}

static bool push_img(struct cbc_image **v, size_t *n, const struct cbc_image *img)
{
    struct cbc_image *nv = cbc_reallocarray(*v, *n + 1, sizeof **v);
    if (!nv)
        return false;
    *v = nv;
    nv[(*n)++] = *img;
    return true;
}

static size_t new_file(struct builder *b, const char *path, const char *needed_as,
                       const char *needed_by)
{
    struct cbc_program *p = b->p;
    if (!cbc_grow(&p->files, p->n_files, &b->cap_files, sizeof *p->files, 4))
        return SIZE_MAX;
    struct cbc_pfile *f = &p->files[p->n_files];
    memset(f, 0, sizeof *f);
    f->path = cbc_strdup(path);
    f->needed_as = needed_as ? cbc_strdup(needed_as) : NULL;
    f->needed_by = needed_by ? cbc_strdup(needed_by) : NULL;
    if (!f->path)
        return SIZE_MAX;
    return p->n_files++;
}

struct cbc_image cbc_program_image_of(const struct cbc_fatbin_entry *e, const char *section,
                                      size_t container)
{
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
    img.needs_dlink = section && !strcmp(section, "__nv_relfatbin");
    img.container = container;
    return img;
}

struct container {
    struct cbc_image *img;
    size_t n;
};

static void containers_release(struct container *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].img);
    free(c);
}

/* The containers of a fatbin section, with their images (headers only);
 * data[0, len) lies in the file mapping map[0, map_len), whose pages the
 * walk drops as it goes. */
static enum cbc_status read_containers(const uint8_t *data, size_t len, uint64_t base,
                                       const char *name, const char *section, const uint8_t *map,
                                       size_t map_len, struct container **out, size_t *n,
                                       struct cbc_err *err)
{
    *out = NULL;
    *n = 0;
    if (!len)
        return CBC_OK;
    struct cbc_fatbin fb;
    enum cbc_status st = cbc_fatbin_parse_mapped(data, len, base, name, map, map_len, &fb, err);
    if (st != CBC_OK)
        return st;
    struct container *c = calloc(fb.n_containers ? fb.n_containers : 1, sizeof *c);
    if (!c) {
        cbc_fatbin_release(&fb);
        return cbc_err_oom(err);
    }
    for (size_t i = 0; i < fb.n && st == CBC_OK; i++) {
        const struct cbc_fatbin_entry *e = &fb.entries[i];
        struct container *k = &c[e->container];
        struct cbc_image img = cbc_program_image_of(e, section, e->container);
        if (!push_img(&k->img, &k->n, &img))
            st = cbc_err_oom(err);
    }
    *n = fb.n_containers;
    cbc_fatbin_release(&fb);
    if (st != CBC_OK) {
        containers_release(c, *n);
        *n = 0;
        return st;
    }
    *out = c;
    return CBC_OK;
}

static bool add_rel(struct cbc_pmod *m, const struct container *rel, size_t nr)
{
    for (size_t u = 0; u < nr; u++)
        for (size_t i = 0; i < rel[u].n; i++) {
            size_t *ru = cbc_reallocarray(m->rel_unit, m->n_rel + 1, sizeof *ru);
            if (!ru)
                return false;
            m->rel_unit = ru;
            if (!push_img(&m->rel, &m->n_rel, &rel[u].img[i]))
                return false;
            m->rel_unit[m->n_rel - 1] = u;
        }
    m->n_units = nr;
    return true;
}

/* The modules of one host ELF (an executable, a shared library, an object,
 * a static library member). */
static enum cbc_status host_modules(struct builder *b, size_t file, const uint8_t *data,
                                    size_t len, const char *name)
{
    struct cbc_host_elf he;
    enum cbc_status st = cbc_host_elf_parse(data, len, name, &he, b->err);
    if (st != CBC_OK)
        return st;
    struct cbc_program *p = b->p;
    p->files[file].data = data;
    p->files[file].len = len;
    p->files[file].host = true;
    struct container *fat = NULL, *rel = NULL;
    size_t nf = 0, nr = 0;
    if (he.nv_fatbin.present)
        st = read_containers(data + he.nv_fatbin.offset, (size_t)he.nv_fatbin.size,
                             he.nv_fatbin.offset, name, ".nv_fatbin", data, len, &fat, &nf, b->err);
    if (st == CBC_OK && he.nv_relfatbin.present)
        st = read_containers(data + he.nv_relfatbin.offset, (size_t)he.nv_relfatbin.size,
                             he.nv_relfatbin.offset, name, "__nv_relfatbin", data, len, &rel, &nr,
                             b->err);
    size_t first = p->n_mods;
    for (size_t c = 0; st == CBC_OK && c < nf; c++) {
        char label[200];
        cbc_fmt(label, sizeof label, "fatbin container %zu of .nv_fatbin", c);
        struct cbc_pmod *m = new_mod(b, CBC_MOD_UNIT, file, label);
        if (!m) {
            st = cbc_err_oom(b->err);
            break;
        }
        m->img = fat[c].img;
        m->n_img = fat[c].n;
        fat[c].img = NULL;
    }
    /* relocatable code: the device-linked image is the container whose
     * kernels are all the units' (kernels read now, on every worker) */
    struct cbc_pmod *ul = NULL;
    if (st == CBC_OK && nr) {
        ul = calloc(nr, sizeof *ul);
        struct cbc_pmod **todo = calloc(nf + nr, sizeof *todo);
        if (!ul || !todo) {
            free(todo);
            st = cbc_err_oom(b->err);
        } else {
            size_t nt = 0;
            for (size_t c = 0; c < nf; c++)
                todo[nt++] = &p->mods[first + c];
            for (size_t u = 0; u < nr; u++) {
                ul[u].file = file;
                ul[u].kernels = -1;
                ul[u].img = rel[u].img;
                ul[u].n_img = rel[u].n;
                todo[nt++] = &ul[u];
            }
            cbc_program_read_kernels(p, todo, nt);
            free(todo);
        }
    }
    struct cbc_names relk = {0};
    for (size_t u = 0; ul && u < nr; u++)
        for (size_t k = 0; k < ul[u].n_names; k++)
            if (!cbc_names_add(&relk, ul[u].names[k], strlen(ul[u].names[k])))
                st = cbc_err_oom(b->err);
    bool linked_any = false;
    for (size_t c = 0; st == CBC_OK && nr && c < nf; c++) {
        struct cbc_pmod *m = &p->mods[first + c];
        bool linked = m->n_names > 0;
        for (size_t k = 0; linked && k < m->n_names; k++)
            linked = cbc_names_has(&relk, m->names[k]);
        if (!linked)
            continue;
        linked_any = true;
        m->kind = CBC_MOD_LINKED;
        cbc_fmt(m->label, sizeof m->label, "device-linked image (container %zu of .nv_fatbin)", c);
        if (!add_rel(m, rel, nr))
            st = cbc_err_oom(b->err);
    }
    if (st == CBC_OK && nr && !linked_any) {
        char label[200];
        cbc_fmt(label, sizeof label, "-rdc code of %zu unit%s in __nv_relfatbin, not yet "
                "device-linked", nr, nr == 1 ? "" : "s");
        struct cbc_pmod *m = new_mod(b, CBC_MOD_RDC, file, label);
        if (!m || !add_rel(m, rel, nr))
            st = cbc_err_oom(b->err);
        if (m) {
            m->kernels = relk.n > 0;
            m->names_read = true;
            m->names = relk.v;
            m->n_names = relk.n;
            memset(&relk, 0, sizeof relk);
        }
    }
    cbc_names_release(&relk);
    for (size_t u = 0; ul && u < nr; u++) {
        for (size_t k = 0; k < ul[u].n_names; k++)
            free(ul[u].names[k]);
        free(ul[u].names);
        free(ul[u].kproblem);
    }
    free(ul);
    containers_release(fat, nf);
    containers_release(rel, nr);
    if (st == CBC_OK && he.cbc_bundle.present && he.cbc_bundle.size) {
        struct cbc_embedded_list el;
        st = cbc_embedded_parse(data + he.cbc_bundle.offset, (size_t)he.cbc_bundle.size,
                                he.cbc_bundle.offset, name, true, &el, b->err);
        for (size_t r = 0; st == CBC_OK && r < el.n_records; r++) {
            struct cbc_pmod *m = NULL;
            for (size_t i = 0; st == CBC_OK && i < el.n; i++) {
                const struct cbc_embedded_entry *e = &el.v[i];
                if (e->record != r)
                    continue;
                if (!m) {
                    char label[200];
                    cbc_fmt(label, sizeof label, "embedded bundle '%s'", e->bundle);
                    if (!(m = new_mod(b, CBC_MOD_BUNDLE, file, label))) {
                        st = cbc_err_oom(b->err);
                        break;
                    }
                    m->kernels = 1; /* a bundle is built from a kernel source */
                    m->raw = true;
                }
                struct cbc_image img = {0};
                img.fatbin_kind = e->target.kind == CBC_KIND_PTX ? CBC_FATBIN_PTX : CBC_FATBIN_ELF;
                img.target = e->target;
                img.ptx_isa = e->ptx_isa;
                img.offset = e->offset;
                img.size = e->size;
                img.section = CBC_EMBED_SECTION;
                img.container = e->record;
                if (!push_img(&m->img, &m->n_img, &img))
                    st = cbc_err_oom(b->err);
            }
        }
        cbc_embedded_release(&el);
    }
    return st;
}

void cbc_pmod_release(struct cbc_pmod *m)
{
    free(m->img);
    free(m->rel);
    free(m->rel_unit);
    for (size_t k = 0; k < m->n_names; k++)
        free(m->names[k]);
    free(m->names);
    free(m->kproblem);
    memset(m, 0, sizeof *m);
}

/* ---- files -------------------------------------------------------------------- */

static enum cbc_status map_file(struct builder *b, const char *path, struct cbc_map *out)
{
    struct cbc_program *p = b->p;
    if (!cbc_grow(&p->maps, p->n_maps, &b->cap_maps, sizeof *p->maps, 4))
        return cbc_err_oom(b->err);
    enum cbc_status st = cbc_file_map(path, &p->maps[p->n_maps], b->err);
    if (st == CBC_OK)
        *out = p->maps[p->n_maps++];
    return st;
}

static bool seen_before(struct builder *b, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return false;
    char key[64];
    snprintf(key, sizeof key, "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    if (cbc_names_has(&b->seen, key))
        return true;
    cbc_names_add(&b->seen, key, strlen(key));
    return false;
}

static enum cbc_status add_host(struct builder *b, size_t file, const uint8_t *data, size_t len,
                                const char *path, int depth);

/* The libraries a host ELF needs, each with its own modules. */
static enum cbc_status add_needed(struct builder *b, const uint8_t *data, size_t len,
                                  const char *path, int depth)
{
    struct cbc_elf_dynamic dyn;
    enum cbc_status st = cbc_elf_dynamic(data, len, path, &dyn, b->err);
    if (st != CBC_OK || depth > 32)
        return st;
    for (size_t i = 0; st == CBC_OK && i < dyn.n_needed; i++) {
        struct cbc_buf searched = {0};
        char *lib = cbc_ldso_find(&b->ld, dyn.needed[i], path, &dyn, &searched);
        if (lib && seen_before(b, lib)) {
            free(lib);
            cbc_buf_release(&searched);
            continue;
        }
        size_t f = new_file(b, lib ? lib : dyn.needed[i], dyn.needed[i], path);
        if (f == SIZE_MAX) {
            free(lib);
            cbc_buf_release(&searched);
            return cbc_err_oom(b->err);
        }
        if (!lib) {
            b->p->files[f].missing = true;
            b->p->files[f].problem = cbc_asprintf("not found (searched %s)",
                                                  searched.p ? searched.p : "nothing");
            cbc_buf_release(&searched);
            continue;
        }
        cbc_buf_release(&searched);
        /* a library's trouble is the library's verdict, not an error of the program */
        struct cbc_map mp;
        struct cbc_err e = {0};
        struct cbc_err *outer = b->err;
        b->err = &e;
        enum cbc_status ls = map_file(b, lib, &mp);
        if (ls == CBC_OK)
            ls = add_host(b, f, mp.data, mp.len, lib, depth + 1);
        b->err = outer;
        if (ls == CBC_E_NOMEM)
            st = cbc_err_oom(b->err);
        else if (ls != CBC_OK) {
            b->p->files[f].missing = true;
            b->p->files[f].problem = cbc_asprintf("cannot be read: %s", e.msg);
        }
        free(lib);
    }
    return st;
}

static enum cbc_status add_host(struct builder *b, size_t file, const uint8_t *data, size_t len,
                                const char *path, int depth)
{
    enum cbc_status st = host_modules(b, file, data, len, path);
    if (st == CBC_OK && !(b->o && b->o->no_libs))
        st = add_needed(b, data, len, path, depth);
    return st;
}

static enum cbc_status add_archive(struct builder *b, const uint8_t *data, size_t len,
                                   const char *path)
{
    struct cbc_ar a;
    enum cbc_status st = cbc_ar_parse(data, len, path, &a, b->err);
    for (size_t i = 0; st == CBC_OK && i < a.n; i++) {
        const struct cbc_ar_member *m = &a.v[i];
        if (cbc_binfmt_detect(m->data, (size_t)m->size) != CBC_FILE_HOST_ELF)
            continue;
        char *fp = cbc_asprintf("%s(%s)", path, m->name);
        size_t f = fp ? new_file(b, fp, NULL, NULL) : SIZE_MAX;
        if (f == SIZE_MAX) {
            free(fp);
            st = cbc_err_oom(b->err);
            break;
        }
        st = host_modules(b, f, m->data, (size_t)m->size, fp);
        free(fp);
    }
    cbc_ar_release(&a);
    return st;
}

enum cbc_status cbc_program_open(const char *path, const struct cbc_program_opts *o,
                                 struct cbc_program *p, struct cbc_err *err)
{
    memset(p, 0, sizeof *p);
    p->threads = o && o->threads ? o->threads : cbc_default_threads();
    struct builder b = {.p = p, .o = o, .err = err};
    if (o) {
        b.ld.lib_dirs = o->lib_dirs;
        b.ld.n_lib_dirs = o->n_lib_dirs;
    }
    b.ld.exec = path;
    b.ld.secure = cbc_ldso_secure(path);
    size_t root = new_file(&b, path, NULL, NULL);
    if (root == SIZE_MAX)
        return cbc_err_oom(err);
    struct cbc_map mp;
    enum cbc_status st = map_file(&b, path, &mp);
    if (st == CBC_OK) {
        seen_before(&b, path);
        p->files[root].data = mp.data;
        p->files[root].len = mp.len;
        p->type = mp.len >= 8 && !memcmp(mp.data, "!<arch>\n", 8) ? CBC_FILE_ARCHIVE
                                                                 : cbc_binfmt_detect(mp.data, mp.len);
        switch (p->type) {
        case CBC_FILE_HOST_ELF: st = add_host(&b, root, mp.data, mp.len, path, 0); break;
        case CBC_FILE_ARCHIVE: st = add_archive(&b, mp.data, mp.len, path); break;
        case CBC_FILE_FATBIN: {
            struct container *c = NULL;
            size_t n = 0;
            st = read_containers(mp.data, mp.len, 0, path, NULL, mp.data, mp.len, &c, &n, err);
            for (size_t i = 0; st == CBC_OK && i < n; i++) {
                char label[64];
                cbc_fmt(label, sizeof label, "fatbin container %zu", i);
                struct cbc_pmod *m = new_mod(&b, CBC_MOD_IMAGE, root, label);
                if (!m) {
                    st = cbc_err_oom(err);
                    break;
                }
                m->img = c[i].img;
                m->n_img = c[i].n;
                c[i].img = NULL;
            }
            containers_release(c, n);
            break;
        }
        default: {
            struct cbc_image_list l;
            st = cbc_binfmt_images(mp.data, mp.len, path, &l, err);
            struct cbc_pmod *m = st == CBC_OK ? new_mod(&b, CBC_MOD_IMAGE, root, cbc_path_base(path))
                                              : NULL;
            if (st == CBC_OK && !m)
                st = cbc_err_oom(err);
            if (m) {
                m->img = l.v;
                m->n_img = l.n;
                m->raw = true;
                l.v = NULL;
                m->kernels = 1; /* a cubin or PTX file is given to be loaded */
            }
            cbc_image_list_release(&l);
            break;
        }
        }
    }
    cbc_ldso_release(&b.ld);
    cbc_names_release(&b.seen);
    if (st != CBC_OK)
        cbc_program_release(p);
    return st;
}

void cbc_program_release(struct cbc_program *p)
{
    for (size_t i = 0; i < p->n_files; i++) {
        for (size_t k = 0; k < p->files[i].n_self; k++)
            cbc_pmod_release(&p->files[i].self[k]);
        free(p->files[i].self);
        free(p->files[i].path);
        free(p->files[i].needed_as);
        free(p->files[i].needed_by);
        free(p->files[i].problem);
    }
    free(p->files);
    for (size_t i = 0; i < p->n_mods; i++)
        cbc_pmod_release(&p->mods[i]);
    free(p->mods);
    for (size_t i = 0; i < p->n_maps; i++)
        cbc_file_unmap(&p->maps[i]);
    free(p->maps);
    memset(p, 0, sizeof *p);
}

/* ---- judging -------------------------------------------------------------------- */

const char *cbc_load_how_name(enum cbc_load_how how)
{
    switch (how) {
    case CBC_LOAD_NONE: return "none";
    case CBC_LOAD_SASS: return "sass-exact";
    case CBC_LOAD_SASS_COMPAT: return "sass-compatible";
    case CBC_LOAD_PTX_JIT: return "ptx-jit";
    case CBC_LOAD_LINK: return "link-at-load";
    case CBC_LOAD_AFTER_DLINK: return "after-device-link";
    case CBC_LOAD_NEEDS_DLINK: return "needs-device-link";
    }
    return "none";
}

bool cbc_load_runs(enum cbc_load_how how)
{
    return how != CBC_LOAD_NONE && how != CBC_LOAD_NEEDS_DLINK;
}

const char *cbc_pmod_file(const struct cbc_program *p, const struct cbc_pmod *m)
{
    return m->file < p->n_files ? p->files[m->file].path : "?";
}

/* A relocatable target every unit of the module has, loadable on q's GPU,
 * the best by the selection policy; false when there is none. *why says
 * which unit lacks what, when there is none. */
static bool link_target(const struct cbc_pmod *m, const struct cbc_select_query *q,
                        struct cbc_target *out, char *why, size_t why_len)
{
    struct cbc_image cand[64];
    size_t nc = 0;
    for (size_t i = 0; i < m->n_rel && nc < CBC_ARRAY_LEN(cand); i++) {
        const struct cbc_image *r = &m->rel[i];
        if (r->fatbin_kind != CBC_FATBIN_ELF)
            continue; /* linking PTX at load is not measured: never counted on */
        bool dup = false;
        for (size_t k = 0; k < nc && !dup; k++)
            dup = cbc_target_eq(&cand[k].target, &r->target);
        if (dup)
            continue;
        bool all = true;
        size_t missing_unit = 0;
        for (size_t u = 0; u < m->n_units && all; u++) {
            bool has = false;
            for (size_t k = 0; k < m->n_rel && !has; k++)
                has = m->rel_unit[k] == u && m->rel[k].fatbin_kind == CBC_FATBIN_ELF &&
                      cbc_target_eq(&m->rel[k].target, &r->target);
            if (!has)
                all = false, missing_unit = u;
        }
        if (!all) {
            (void)missing_unit;
            continue;
        }
        cand[nc] = *r;
        cand[nc].needs_dlink = false;
        nc++;
    }
    struct cbc_select_result sr;
    long pick = nc ? cbc_select(cand, nc, q, &sr) : -1;
    if (pick >= 0) {
        *out = cand[pick].target;
        return true;
    }
    /* why not: the targets each unit has */
    struct cbc_buf b = {0};
    for (size_t u = 0; u < m->n_units && u < 6; u++) {
        cbc_buf_printf(&b, "%sunit %zu has", u ? "; " : "", u);
        size_t shown = 0;
        for (size_t k = 0; k < m->n_rel; k++) {
            if (m->rel_unit[k] != u)
                continue;
            char tn[CBC_TARGET_NAME_MAX];
            cbc_target_name(&m->rel[k].target, tn);
            cbc_buf_printf(&b, "%s %s", shown++ ? "," : "", tn);
        }
        if (!shown)
            cbc_buf_puts(&b, " nothing");
    }
    cbc_fmt(why, why_len, "%s", b.p ? b.p : "no relocatable code");
    cbc_buf_release(&b);
    return false;
}

void cbc_pmod_judge(const struct cbc_program *p, const struct cbc_pmod *m,
                    const struct cbc_select_query *q, struct cbc_mod_verdict *v)
{
    (void)p;
    memset(v, 0, sizeof *v);
    v->image = -1;
    struct cbc_select_result r = {0};
    long pick = m->n_img ? cbc_select(m->img, m->n_img, q, &r) : -1;
    unsigned M = q->cc / 10, mi = q->cc % 10;
    char tn[CBC_TARGET_NAME_MAX];
    if (pick >= 0) {
        v->image = pick;
        v->target = m->img[pick].target;
        v->how = r.how == CBC_SELECT_SASS_EXACT    ? CBC_LOAD_SASS
                 : r.how == CBC_SELECT_SASS_COMPAT ? CBC_LOAD_SASS_COMPAT
                                                   : CBC_LOAD_PTX_JIT;
        cbc_fmt(v->reason, sizeof v->reason, "%s", r.reason);
        return;
    }
    if (m->n_img == 1 && m->img[0].needs_dlink && !m->n_rel) {
        v->how = CBC_LOAD_NEEDS_DLINK;
        v->target = m->img[0].target;
        cbc_fmt(v->reason, sizeof v->reason, "%s is relocatable code that references symbols it "
                "does not define: it needs a device link (nvcc -dlink) before any driver loads it",
                cbc_target_name(&m->img[0].target, tn));
        return;
    }
    char why[400] = "";
    if (m->n_rel && link_target(m, q, &v->target, why, sizeof why)) {
        cbc_target_name(&v->target, tn);
        if (m->kind == CBC_MOD_LINKED) {
            char have[200];
            cbc_images_summary(m->img, m->n_img, have, sizeof have);
            v->how = CBC_LOAD_LINK;
            cbc_fmt(v->reason, sizeof v->reason,
                    "relocatable %s code of its %zu -rdc unit%s (__nv_relfatbin), linked by the "
                    "CUDA runtime when the program loads: the device-linked image has %s, nothing "
                    "for %u.%u", tn, m->n_units, m->n_units == 1 ? "" : "s", have, M, mi);
        } else {
            v->how = CBC_LOAD_AFTER_DLINK;
            cbc_fmt(v->reason, sizeof v->reason,
                    "relocatable %s code in every unit: runs once device-linked for %s "
                    "(nvcc -dlink -arch=%s, or by the runtime at load if the program's "
                    "device link lacks it)", tn, tn, tn);
        }
        return;
    }
    v->how = CBC_LOAD_NONE;
    if (m->n_rel && m->n_img) {
        char have[200];
        cbc_images_summary(m->img, m->n_img, have, sizeof have);
        cbc_fmt(v->reason, sizeof v->reason, "will not run on compute capability %u.%u: the "
                "device-linked image has %s, and no arch loadable there is in the relocatable "
                "code of every unit (%s)", M, mi, have, why);
    } else if (m->n_rel) {
        cbc_fmt(v->reason, sizeof v->reason, "will not run on compute capability %u.%u: no arch "
                "loadable there is in the relocatable code of every unit (%s)", M, mi, why);
    } else {
        cbc_fmt(v->reason, sizeof v->reason, "%s", r.reason);
    }
}
