/* bundle.c: bundles from a manifest on disk or embedded in the program, as
 * one list of images; selection; and verified access to an image's bytes.
 *
 * Invariant: cbc_bundle_image_bytes never returns bytes whose XXH3-128
 * differs from the manifest's or whose own arch differs from the label, so
 * nothing unverified reaches cuModuleLoadData. Disk images are read lazily
 * (a program loads one of many) and kept until close. Which bundle on disk
 * a program opens, and which directories it believes, is search.c's.
 */
#include "loader_int.h"

#include "manifest.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Embedded images live in the program's read-only data and cannot change
 * while it runs, so each is verified once per process: the first load pays
 * for the XXH3-128 of its bytes (measured against the driver's first
 * cuModuleLoadData in BENCHMARKS.md), later loads of the same image under
 * the same label, on any device or from any reopened bundle, do not.
 * Images read from disk are verified per bundle object. */
static pthread_mutex_t g_verified_lock = PTHREAD_MUTEX_INITIALIZER;
static struct verified {
    const unsigned char *data;
    size_t size;
    struct cbc_hash hash;
    struct cbc_target target;
} g_verified[64];
static size_t g_n_verified;

/* Whether these bytes were verified against this hash and this label: a
 * bundle that claims other things of the same bytes is checked afresh. */
static bool embedded_verified(const struct verified *v)
{
    bool found = false;
    pthread_mutex_lock(&g_verified_lock);
    for (size_t i = 0; i < g_n_verified && !found; i++)
        found = g_verified[i].data == v->data && g_verified[i].size == v->size &&
                cbc_hash_eq(&g_verified[i].hash, &v->hash) &&
                cbc_target_eq(&g_verified[i].target, &v->target);
    pthread_mutex_unlock(&g_verified_lock);
    return found;
}

static void remember_embedded(const struct verified *v)
{
    pthread_mutex_lock(&g_verified_lock);
    if (g_n_verified < CBC_ARRAY_LEN(g_verified))
        g_verified[g_n_verified++] = *v;
    pthread_mutex_unlock(&g_verified_lock);
}

struct slot {
    struct cbc_image img;
    char *file;                  /* NULL when embedded */
    const unsigned char *data;   /* embedded, or loaded and verified */
    unsigned char *owned;        /* what `data` points to when read from disk */
    size_t size;
    struct cbc_hash hash;
    bool verified;
};

struct cbc_bundle {
    char *name, *origin, *arch_detail;
    struct slot *s;
    struct cbc_image *imgs; /* contiguous copy for the policy */
    size_t n;
};

static enum cbc_status alloc_bundle(struct cbc_bundle **out, size_t n, const char *name,
                                    const char *origin, const char *detail, struct cbc_err *err)
{
    struct cbc_bundle *b = calloc(1, sizeof *b);
    if (!b)
        return cbc_err_oom(err);
    b->s = calloc(n ? n : 1, sizeof *b->s);
    b->imgs = calloc(n ? n : 1, sizeof *b->imgs);
    b->name = cbc_strdup(name ? name : "bundle");
    b->origin = cbc_strdup(origin);
    b->arch_detail = detail ? cbc_strdup(detail) : NULL;
    b->n = n;
    if (!b->s || !b->imgs || !b->name || !b->origin) {
        cbc_bundle_close(b);
        return cbc_err_oom(err);
    }
    *out = b;
    return CBC_OK;
}

/* PTX ISA from the text; SASS images need nothing read. */
static void fill_image(struct slot *s, const struct cbc_target *t, const unsigned char *ptx,
                       size_t len)
{
    s->img.target = *t;
    s->img.fatbin_kind = t->kind == CBC_KIND_PTX ? CBC_FATBIN_PTX : CBC_FATBIN_ELF;
    s->img.size = len;
    if (t->kind == CBC_KIND_PTX && ptx) {
        struct cbc_ptx_info pi;
        if (cbc_ptx_header(ptx, len, NULL, &pi, NULL) == CBC_OK)
            s->img.ptx_isa = pi.isa;
    }
}

/* The bytes of the image file of slot s, read only when it is a regular
 * file of exactly the size its manifest recorded: a 1 GiB file in place of
 * a 4 KB cubin costs one fstat, not a read. Anything else is CBC_E_VERIFY
 * (a FIFO, a device or a directory is reported as what it is), but an
 * absent file, CBC_E_NOT_FOUND. */
static enum cbc_status read_image(const struct slot *s, uint8_t **data, size_t *len,
                                  struct cbc_err *err)
{
    int fd;
    uint64_t size;
    enum cbc_status st = cbc_open_regular(s->file, 0, &fd, &size, err);
    if (st == CBC_E_USAGE) { /* not a regular file: a broken bundle, not a bad argument */
        if (err)
            err->status = CBC_E_VERIFY;
        return CBC_E_VERIFY;
    }
    if (st != CBC_OK)
        return st;
    if (size != s->size)
        st = cbc_err_set(err, CBC_E_VERIFY, "'%s' is %llu bytes, but the manifest recorded %llu "
                         "(replaced or truncated after the build); refusing to read it", s->file,
                         (unsigned long long)size, (unsigned long long)s->size);
    else
        st = cbc_fd_read_max(fd, s->file, s->size, data, len, err);
    close(fd);
    if (st == CBC_OK && *len != s->size) {
        free(*data);
        st = cbc_err_set(err, CBC_E_VERIFY, "'%s' changed size while it was read", s->file);
    }
    if (st == CBC_E_FORMAT) { /* grew past the recorded size while it was read */
        st = CBC_E_VERIFY;
        if (err)
            err->status = st;
    }
    return st;
}

/* The bundle name asked for by an open: `name`, else the one the path
 * spells (DIR/NAME.bundle or NAME.manifest.json), else NULL (malloc'd). */
static char *asked_name(const char *path, const char *name, bool is_dir)
{
    if (name && *name)
        return cbc_strdup(name);
    if (is_dir)
        return cbc_bundle_dir_name(path);
    const char *base = cbc_path_base(path), *suffix = ".manifest.json";
    size_t n = strlen(base), k = strlen(suffix);
    return n > k && !strcmp(base + n - k, suffix) ? cbc_strndup(base, n - k) : NULL;
}

enum cbc_status cbc_bundle_open_path(const char *path, const char *name, struct cbc_bundle **out,
                                     struct cbc_err *err)
{
    bool is_dir = cbc_is_dir(path);
    char *asked = asked_name(path, name, is_dir);
    if (is_dir && !asked)
        return cbc_err_set(err, CBC_E_USAGE, "bundle directory '%s' given without a bundle name "
                           "(and not spelled NAME.bundle)", path);
    char *mpath = is_dir ? cbc_asprintf("%s/%s.manifest.json", path, asked) : cbc_strdup(path);
    if (!mpath) {
        free(asked);
        return cbc_err_oom(err);
    }
    struct cbc_manifest m;
    enum cbc_status st = cbc_manifest_load(mpath, &m, err);
    if (st == CBC_E_NOT_FOUND)
        cbc_err_hint(err, "build the bundle with 'cubincache build -o %s -n %s SOURCE.cu'",
                     is_dir ? path : ".", asked ? asked : "NAME");
    if (st == CBC_OK && asked && strcmp(m.name, asked) != 0) {
        /* another bundle's manifest under this one's name: its images are
         * not the kernels the program asked for */
        st = cbc_err_set(err, CBC_E_FORMAT, "manifest '%s': name: '%s', but the bundle asked for "
                         "is '%s'", mpath, m.name, asked);
        cbc_err_hint(err, "the manifest belongs to another bundle: deploy the bundle '%s' "
                     "(cubincache build -n %s), or ask for '%s'", asked, asked, m.name);
        cbc_manifest_release(&m);
    }
    free(asked);
    if (st != CBC_OK) {
        free(mpath);
        return st;
    }
    struct cbc_bundle *b = NULL;
    st = alloc_bundle(&b, m.n, m.name, mpath, m.arch_detail, err);
    char *dir = cbc_path_dir(mpath);
    for (size_t i = 0; st == CBC_OK && i < m.n; i++) {
        struct slot *s = &b->s[i];
        s->file = cbc_path_join(dir, m.entries[i].file);
        s->hash = m.entries[i].hash;
        s->size = (size_t)m.entries[i].size;
        if (!s->file) {
            st = cbc_err_oom(err);
            break;
        }
        uint8_t *ptx = NULL;
        size_t len = s->size;
        if (m.entries[i].target.kind == CBC_KIND_PTX && read_image(s, &ptx, &len, NULL) != CBC_OK)
            ptx = NULL; /* reported when it is loaded */
        fill_image(s, &m.entries[i].target, ptx, len);
        free(ptx);
        b->imgs[i] = s->img;
    }
    free(dir);
    free(mpath);
    cbc_manifest_release(&m);
    if (st != CBC_OK) {
        cbc_bundle_close(b);
        return st;
    }
    *out = b;
    return CBC_OK;
}

/* The field of struct image s that says something else than the record's
 * entry e, or NULL when none does. */
static const char *image_disagrees(const struct cbc_embedded_image *s,
                                   const struct cbc_embedded_entry *e)
{
    struct cbc_target t;
    if (!s->target || !cbc_target_parse(s->target, &t) || !cbc_target_eq(&t, &e->target))
        return "target";
    if (s->data != e->data)
        return "data";
    if (s->size != e->size)
        return "size";
    if (!s->xxh3 || strcmp(s->xxh3, e->xxh3) != 0)
        return "xxh3";
    return NULL;
}

static enum cbc_status struct_disagrees(const char *what, const char *field, struct cbc_err *err)
{
    cbc_err_set(err, CBC_E_VERIFY, "%s: the struct's %s is not what its " CBC_EMBED_SECTION " record "
                "says (the record is what 'cubincache check' reads); refusing the bundle", what,
                field);
    cbc_err_hint(err, "the generated C or the record was edited: regenerate it with 'cubincache "
                 "embed' and rebuild the program");
    return CBC_E_VERIFY;
}

/* eb's record, parsed with the reader `check` uses (hashes and labels are
 * verified when an image is loaded, as check verifies them when it reads
 * them), and the struct checked against it field by field. */
static enum cbc_status embedded_record(const struct cbc_embedded_bundle *eb, const char *name,
                                       struct cbc_embedded_list *l, struct cbc_err *err)
{
    char what[64 + CBC_NAME_MAX];
    snprintf(what, sizeof what, "embedded bundle '%s'", name);
    if (!eb->record || eb->record_size < CBC_EMBED_HEADER ||
        memcmp(eb->record, CBC_EMBED_MAGIC, 8) != 0) {
        cbc_err_set(err, CBC_E_FORMAT, "%s carries no " CBC_EMBED_SECTION " record: its C was not "
                    "generated by this version of 'cubincache embed'", what);
        cbc_err_hint(err, "regenerate its C with 'cubincache embed' and rebuild the program");
        return CBC_E_FORMAT;
    }
    /* the header's size bounds every read: the parser sees no byte past it */
    if (cbc_rd64(eb->record + 8) != eb->record_size)
        return struct_disagrees(what, "record_size", err);
    enum cbc_status st = cbc_embedded_parse(eb->record, eb->record_size, 0, what, false, l, err);
    if (st != CBC_OK) {
        cbc_err_hint(err, "regenerate its C with 'cubincache embed' and rebuild the program");
        return st;
    }
    char field[64] = "";
    if (!eb->name || strcmp((const char *)eb->record + CBC_EMBED_HEADER, eb->name) != 0)
        snprintf(field, sizeof field, "name");
    else if (l->n != eb->n)
        snprintf(field, sizeof field, "n");
    for (size_t i = 0; !field[0] && i < l->n; i++) {
        const char *f = image_disagrees(&eb->images[i], &l->v[i]);
        if (f)
            snprintf(field, sizeof field, "images[%zu].%s", i, f);
    }
    if (!field[0])
        return CBC_OK;
    cbc_embedded_release(l);
    return struct_disagrees(what, field, err);
}

enum cbc_status cbc_bundle_open_embedded(const struct cbc_embedded_bundle *eb,
                                         struct cbc_bundle **out, struct cbc_err *err)
{
    const char *name = eb->name ? eb->name : "(unnamed)";
    struct cbc_embedded_list l;
    enum cbc_status st = embedded_record(eb, name, &l, err);
    if (st != CBC_OK)
        return st;
    /* from here on the record is the description: the struct says the same */
    struct cbc_bundle *b = NULL;
    st = alloc_bundle(&b, l.n, name, "embedded", eb->arch_detail, err);
    for (size_t i = 0; st == CBC_OK && i < l.n; i++) {
        const struct cbc_embedded_entry *e = &l.v[i];
        struct slot *s = &b->s[i];
        cbc_hash_from_hex(e->xxh3, &s->hash); /* 32 hex digits: the parser checked */
        s->data = e->data;
        s->size = (size_t)e->size;
        fill_image(s, &e->target, NULL, s->size);
        s->img.ptx_isa = e->ptx_isa;
        b->imgs[i] = s->img;
    }
    cbc_embedded_release(&l);
    if (st != CBC_OK) {
        cbc_bundle_close(b);
        return st;
    }
    *out = b;
    return CBC_OK;
}

void cbc_bundle_close(struct cbc_bundle *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->s && i < b->n; i++) {
        free(b->s[i].file);
        free(b->s[i].owned);
    }
    free(b->s);
    free(b->imgs);
    free(b->name);
    free(b->origin);
    free(b->arch_detail);
    free(b);
}

const char *cbc_bundle_name(const struct cbc_bundle *b)
{
    return b->name;
}

const char *cbc_bundle_origin(const struct cbc_bundle *b)
{
    return b->origin;
}

const char *cbc_bundle_arch_detail(const struct cbc_bundle *b)
{
    return b->arch_detail;
}

const struct cbc_image *cbc_bundle_images(const struct cbc_bundle *b, size_t *n)
{
    *n = b->n;
    return b->imgs;
}

const char *cbc_bundle_image_file(const struct cbc_bundle *b, size_t i)
{
    return i < b->n ? b->s[i].file : NULL;
}

long cbc_bundle_select(const struct cbc_bundle *b, const struct cbc_select_query *q,
                       struct cbc_select_result *r)
{
    return cbc_select(b->imgs, b->n, q, r);
}

/* "sm_90 image 'DIR/k.sm_90.cubin'" or "embedded sm_90 image", for messages. */
static const char *image_what(const struct slot *s, char *buf, size_t len)
{
    char name[CBC_TARGET_NAME_MAX];
    cbc_target_name(&s->img.target, name);
    if (s->file)
        snprintf(buf, len, "%s image '%s'", name, s->file);
    else
        snprintf(buf, len, "embedded %s image", name);
    return buf;
}

enum cbc_status cbc_bundle_image_bytes(struct cbc_bundle *b, size_t i, const unsigned char **data,
                                       size_t *size, struct cbc_err *err)
{
    if (i >= b->n)
        return cbc_err_set(err, CBC_E_USAGE, "bundle '%s' has no image %zu", b->name, i);
    struct slot *s = &b->s[i];
    const char *label = s->file; /* NULL when embedded: the messages name the image */
    char what[CBC_TARGET_NAME_MAX + 4096];
    const struct verified key = {s->data, s->size, s->hash, s->img.target};
    if (!s->verified && !s->file && embedded_verified(&key))
        s->verified = true;
    if (!s->verified) {
        if (!s->data) {
            uint8_t *d;
            size_t len;
            enum cbc_status st = read_image(s, &d, &len, err);
            if (st != CBC_OK) {
                cbc_err_prefix(err, "bundle '%s'", b->name);
                cbc_err_hint(err, "the manifest names %s; rebuild or redeploy the bundle",
                             cbc_path_base(s->file));
                return st;
            }
            s->owned = d;
            s->data = d;
            s->size = len;
        }
        /* The hash reads every byte from memory, once; the label check
         * after it then finds the ELF header, section table and notes in
         * cache. A mislabeled image is still reported as mislabeled. */
        struct cbc_hash h;
        cbc_hash_bytes(s->data, s->size, &h);
        enum cbc_status st = cbc_binfmt_verify_target(s->data, s->size, &s->img.target, label, NULL,
                                                      err);
        if (st != CBC_OK) {
            cbc_err_prefix(err, "bundle '%s': refusing to load %s", b->name,
                           st == CBC_E_VERIFY ? "a mislabeled image" : "an unreadable image");
            if (err)
                err->status = CBC_E_VERIFY;
            cbc_err_hint(err, "rebuild the bundle with 'cubincache build', or run "
                         "'cubincache check' on it");
            return CBC_E_VERIFY;
        }
        if (s->img.target.kind == CBC_KIND_SASS) {
            /* relocatable code that needs a device link: no driver loads it
             * (cuModuleLoadData would fail on its undefined symbols) */
            struct cbc_cubin_info ci;
            if (cbc_cubin_parse(s->data, s->size, label, &ci, NULL) == CBC_OK) {
                bool rel = cbc_cubin_needs_dlink(&ci);
                if (rel)
                    cbc_err_set(err, CBC_E_VERIFY, "bundle '%s': %s is relocatable code "
                                "referencing '%s' it does not define: it needs a device link; "
                                "refusing to load it", b->name, image_what(s, what, sizeof what),
                                ci.undefined[0]);
                cbc_cubin_info_release(&ci);
                if (rel) {
                    cbc_err_hint(err, "build the bundle without -rdc, or device-link it first");
                    return CBC_E_VERIFY;
                }
            }
        }
        if (!cbc_hash_eq(&h, &s->hash)) {
            cbc_err_set(err, CBC_E_VERIFY,
                        "bundle '%s': %s does not match the hash recorded for it (corrupt or "
                        "replaced after the build); refusing to load it", b->name,
                        image_what(s, what, sizeof what));
            cbc_err_hint(err, "rebuild the bundle, or run 'cubincache check' on it");
            return CBC_E_VERIFY;
        }
        s->verified = true;
        if (!s->file)
            remember_embedded(&key);
    }
    *data = s->data;
    *size = s->size;
    return CBC_OK;
}
