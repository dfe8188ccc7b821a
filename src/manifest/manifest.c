/* manifest.c: rendering and strict parsing of NAME.manifest.json.
 *
 * cJSON builds and prints the document; parsing walks it with helpers that
 * record the JSON path of the field being read, so every error says which
 * field of which file is wrong and what was expected. Strict where cJSON
 * is lenient: the document is the whole text (no NUL, nothing but white
 * space after it), and integers are whole numbers (cJSON keeps a double:
 * "version": 1.9 would read as 1).
 */
#include "manifest.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Rendering runs on every build, hits included, so the document borrows
 * what it can: keys are literals (cJSON_AddItemToObjectCS) and string
 * values are references to m's strings, which outlive it. */
static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v) /* as cJSON_AddStringToObject: no value, no field */
        cJSON_AddItemToObjectCS(o, k, cJSON_CreateStringReference(v));
}

static void add_num(cJSON *o, const char *k, double v)
{
    cJSON_AddItemToObjectCS(o, k, cJSON_CreateNumber(v));
}

static void add_hash(cJSON *o, const char *k, const struct cbc_hash *h)
{
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(h, hex);
    cJSON_AddItemToObjectCS(o, k, cJSON_CreateString(hex));
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
    if (v)
        add_str(o, k, v);
    else
        cJSON_AddItemToObjectCS(o, k, cJSON_CreateNull());
}

static cJSON *add_obj(cJSON *o, const char *k, cJSON *child)
{
    cJSON_AddItemToObjectCS(o, k, child);
    return child;
}

char *cbc_manifest_render(const struct cbc_manifest *m)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return NULL;
    add_str(root, "format", CBC_MANIFEST_FORMAT);
    add_num(root, "version", CBC_MANIFEST_VERSION);
    add_str(root, "name", m->name);
    cJSON *src = add_obj(root, "source", cJSON_CreateObject());
    if (src) {
        add_str(src, "path", m->source);
        add_hash(src, "xxh3", &m->source_hash);
    }
    if (m->n_linked) {
        cJSON *ls = add_obj(root, "linked_sources", cJSON_CreateArray());
        for (size_t i = 0; ls && i < m->n_linked; i++)
            cJSON_AddItemToArray(ls, cJSON_CreateStringReference(m->linked[i]));
    }
    cJSON *deps = add_obj(root, "dependencies", cJSON_CreateArray());
    for (size_t i = 0; deps && i < m->n_deps; i++) {
        cJSON *d = cJSON_CreateObject();
        if (!d)
            break;
        add_str(d, "path", m->deps[i].path);
        add_hash(d, "xxh3", &m->deps[i].hash);
        cJSON_AddItemToArray(deps, d);
    }
    cJSON *nv = add_obj(root, "nvcc", cJSON_CreateObject());
    if (nv) {
        add_str(nv, "path", m->nvcc);
        add_str(nv, "version", m->nvcc_version);
        add_hash(nv, "id", &m->nvcc_id);
        add_str(nv, "host_compiler", m->host_cc);
        add_hash(nv, "host_id", &m->host_id);
    }
    cJSON *flags = add_obj(root, "flags", cJSON_CreateArray());
    for (size_t i = 0; flags && i < m->n_flags; i++)
        cJSON_AddItemToArray(flags, cJSON_CreateStringReference(m->flags[i]));
    cJSON *env = add_obj(root, "environment", cJSON_CreateObject());
    for (size_t i = 0; env && i < m->env.n; i++)
        add_str_or_null(env, m->env.name[i], m->env.value[i]);
    add_str(root, "cwd", m->cwd);
    add_str_or_null(root, "base_dir", m->base_dir);
    cJSON *arch = add_obj(root, "arch", cJSON_CreateObject());
    if (arch) {
        add_str(arch, "spec", m->arch_spec);
        add_str(arch, "rule", m->arch_rule);
        add_str(arch, "detail", m->arch_detail);
        add_str_or_null(arch, "CUDA_COMPUTE_CAP", m->compute_cap);
    }
    if (m->n_lookups) {
        cJSON *lk = add_obj(root, "lookups", cJSON_CreateArray());
        for (size_t i = 0; lk && i < m->n_lookups; i++) {
            cJSON *o = cJSON_CreateObject(), *names = NULL;
            if (o) {
                add_str(o, "dir", m->lookups[i].dir);
                names = add_obj(o, "absent", cJSON_CreateArray());
                cJSON_AddItemToArray(lk, o);
            }
            for (size_t k = 0; names && k < m->lookups[i].n; k++)
                cJSON_AddItemToArray(names, cJSON_CreateStringReference(m->lookups[i].names[k]));
        }
    }
    cJSON *ents = add_obj(root, "entries", cJSON_CreateArray());
    for (size_t i = 0; ents && i < m->n; i++) {
        const struct cbc_manifest_entry *e = &m->entries[i];
        char name[CBC_TARGET_NAME_MAX];
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddItemToObjectCS(o, "target", cJSON_CreateString(cbc_target_name(&e->target, name)));
        add_str(o, "kind", e->target.kind == CBC_KIND_PTX ? "ptx" : "cubin");
        add_str(o, "file", e->file);
        add_hash(o, "key", &e->key);
        add_hash(o, "xxh3", &e->hash);
        add_num(o, "size", (double)e->size);
        if (e->deps) {
            cJSON *dv = add_obj(o, "deps", cJSON_CreateArray());
            for (size_t k = 0; dv && k < e->n_deps; k++)
                cJSON_AddItemToArray(dv, cJSON_CreateNumber((double)e->deps[k]));
        }
        cJSON_AddItemToArray(ents, o);
    }
    char *text = cJSON_PrintBuffered(root, 32768, 1); /* a project's manifest, unrealloc'd */
    cJSON_Delete(root);
    if (!text)
        return NULL;
    /* end with a newline, as text files do */
    size_t n = strlen(text);
    char *out = realloc(text, n + 2);
    if (!out) {
        free(text);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

/* ---- parsing ------------------------------------------------------------- */

struct rd {
    const char *file;
    struct cbc_err *err;
    enum cbc_status st;
};

static bool fail(struct rd *r, const char *field, const char *what)
{
    if (r->st == CBC_OK) {
        r->st = cbc_err_set(r->err, CBC_E_FORMAT, "manifest '%s': %s: %s", r->file, field, what);
        cbc_err_hint(r->err, "rebuild the bundle with 'cubincache build' to regenerate it");
    }
    return false;
}

static const cJSON *get(struct rd *r, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!j)
        fail(r, field, "missing");
    return j;
}

static char *get_str(struct rd *r, const cJSON *o, const char *k, const char *field, bool nullable)
{
    const cJSON *j = get(r, o, k, field);
    if (!j)
        return NULL;
    if (nullable && cJSON_IsNull(j))
        return NULL;
    if (!cJSON_IsString(j)) {
        fail(r, field, nullable ? "expected a string or null" : "expected a string");
        return NULL;
    }
    char *s = cbc_strdup(j->valuestring);
    if (!s && r->st == CBC_OK)
        r->st = cbc_err_oom(r->err);
    return s;
}

static void get_hash(struct rd *r, const cJSON *o, const char *k, const char *field,
                     struct cbc_hash *out)
{
    const cJSON *j = get(r, o, k, field);
    if (j && (!cJSON_IsString(j) || !cbc_hash_from_hex(j->valuestring, out)))
        fail(r, field, "expected 32 hexadecimal digits");
}

/* A JSON number that is a whole number in [0, max]: the schema's integer. */
static bool as_uint(const cJSON *j, double max, uint64_t *out)
{
    if (!cJSON_IsNumber(j) || !(j->valuedouble >= 0 && j->valuedouble <= max))
        return false;
    uint64_t v = (uint64_t)j->valuedouble;
    if ((double)v != j->valuedouble)
        return false;
    *out = v;
    return true;
}

static const cJSON *get_obj(struct rd *r, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = get(r, o, k, field);
    if (j && !cJSON_IsObject(j)) {
        fail(r, field, "expected an object");
        return NULL;
    }
    return j;
}

static const cJSON *get_arr(struct rd *r, const cJSON *o, const char *k, const char *field)
{
    const cJSON *j = get(r, o, k, field);
    if (j && !cJSON_IsArray(j)) {
        fail(r, field, "expected an array");
        return NULL;
    }
    return j;
}

/* A file beside the manifest: one path component, not hidden, printable. */
static bool plain_file_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255 || s[0] == '.' || strchr(s, '/'))
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static void parse_entry(struct rd *r, const cJSON *o, size_t i, size_t n_deps,
                        struct cbc_manifest_entry *e)
{
    char f[96];
    snprintf(f, sizeof f, "entries[%zu]", i);
    if (!cJSON_IsObject(o)) {
        fail(r, f, "expected an object");
        return;
    }
    snprintf(f, sizeof f, "entries[%zu].target", i);
    char *t = get_str(r, o, "target", f, false);
    if (t && !cbc_target_parse(t, &e->target))
        fail(r, f, "expected a target such as sm_90, sm_90a or compute_80");
    free(t);
    snprintf(f, sizeof f, "entries[%zu].kind", i);
    char *kind = get_str(r, o, "kind", f, false);
    if (kind && strcmp(kind, e->target.kind == CBC_KIND_PTX ? "ptx" : "cubin") != 0)
        fail(r, f, "does not match the target (sm_ is 'cubin', compute_ is 'ptx')");
    free(kind);
    snprintf(f, sizeof f, "entries[%zu].file", i);
    e->file = get_str(r, o, "file", f, false);
    if (e->file && !plain_file_name(e->file))
        fail(r, f, "expected a plain file name beside the manifest (no '/', no leading '.', no "
                   "control characters)");
    snprintf(f, sizeof f, "entries[%zu].key", i);
    get_hash(r, o, "key", f, &e->key);
    snprintf(f, sizeof f, "entries[%zu].xxh3", i);
    get_hash(r, o, "xxh3", f, &e->hash);
    snprintf(f, sizeof f, "entries[%zu].size", i);
    const cJSON *sz = get(r, o, "size", f);
    if (sz && !as_uint(sz, 9.0e15, &e->size))
        fail(r, f, "expected a non-negative integer");
    const cJSON *dv = cJSON_GetObjectItemCaseSensitive(o, "deps");
    if (dv) {
        snprintf(f, sizeof f, "entries[%zu].deps", i);
        if (!cJSON_IsArray(dv)) {
            fail(r, f, "expected an array of dependency indices");
            return;
        }
        size_t n = (size_t)cJSON_GetArraySize(dv), k = 0;
        e->deps = calloc(n ? n : 1, sizeof *e->deps);
        if (!e->deps) {
            r->st = cbc_err_oom(r->err);
            return;
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, dv)
        {
            uint64_t d;
            if (!as_uint(x, 9.0e15, &d) || d >= n_deps) {
                fail(r, f, "expected indices into 'dependencies'");
                return;
            }
            e->deps[k++] = (size_t)d;
        }
        e->n_deps = k;
    }
}

/* "lookups": [{"dir": "/abs", "absent": ["name", ...]}, ...] */
static void parse_lookups(struct rd *r, const cJSON *lk, struct cbc_manifest *m)
{
    if (!cJSON_IsArray(lk)) {
        fail(r, "lookups", "expected an array");
        return;
    }
    size_t n = (size_t)cJSON_GetArraySize(lk);
    m->lookups = calloc(n ? n : 1, sizeof *m->lookups);
    if (!m->lookups) {
        r->st = cbc_err_oom(r->err);
        return;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, lk)
    {
        char f[64];
        snprintf(f, sizeof f, "lookups[%zu]", m->n_lookups);
        struct cbc_manifest_lookup *l = &m->lookups[m->n_lookups++];
        if (!cJSON_IsObject(o)) {
            fail(r, f, "expected an object");
            return;
        }
        snprintf(f, sizeof f, "lookups[%zu].dir", m->n_lookups - 1);
        l->dir = get_str(r, o, "dir", f, false);
        if (l->dir && l->dir[0] != '/')
            fail(r, f, "expected an absolute directory");
        snprintf(f, sizeof f, "lookups[%zu].absent", m->n_lookups - 1);
        const cJSON *names = get_arr(r, o, "absent", f);
        if (!names || r->st != CBC_OK)
            return;
        size_t k = (size_t)cJSON_GetArraySize(names);
        if (!(l->names = calloc(k ? k : 1, sizeof *l->names))) {
            r->st = cbc_err_oom(r->err);
            return;
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, names)
        {
            if (!cJSON_IsString(x) || !x->valuestring[0] || x->valuestring[0] == '/') {
                fail(r, f, "expected an array of paths relative to 'dir'");
                return;
            }
            if (!(l->names[l->n++] = cbc_strdup(x->valuestring))) {
                r->st = cbc_err_oom(r->err);
                return;
            }
        }
    }
}

/* The one JSON document `text` holds, or NULL with r->st set: no NUL in
 * it, nothing but white space after the document. */
static cJSON *parse_whole(struct rd *r, const char *text, size_t len)
{
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        r->st = cbc_err_set(r->err, CBC_E_FORMAT, "manifest '%s': byte %zu is a NUL: not JSON "
                            "text (damaged, or padded after the document)", r->file,
                            (size_t)(nul - text));
        cbc_err_hint(r->err, "rebuild the bundle with 'cubincache build' to regenerate it");
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && at >= text && at <= text + len ? (long)(at - text) : -1;
        r->st = cbc_err_set(r->err, CBC_E_FORMAT, "manifest '%s': not valid JSON (near byte %ld)",
                            r->file, off);
    } else {
        size_t at = (size_t)(end - text);
        while (at < len && (text[at] == ' ' || text[at] == '\t' || text[at] == '\r' ||
                            text[at] == '\n'))
            at++;
        if (at < len) {
            r->st = cbc_err_set(r->err, CBC_E_FORMAT, "manifest '%s': byte %zu: more text after "
                                "the JSON document, which ends at byte %zu", r->file, at,
                                (size_t)(end - text));
            cJSON_Delete(root);
            root = NULL;
        }
    }
    if (!root)
        cbc_err_hint(r->err, "rebuild the bundle with 'cubincache build' to regenerate it");
    return root;
}

/* "format" and "version": a manifest this cubincache reads, or false. */
static bool parse_header(struct rd *r, const cJSON *root)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    uint64_t version = 0;
    if (!cJSON_IsObject(root) || !cJSON_IsString(fmt) ||
        strcmp(fmt->valuestring, CBC_MANIFEST_FORMAT) != 0) {
        fail(r, "format", "expected \"" CBC_MANIFEST_FORMAT "\": not a cubincache manifest");
        return false;
    }
    if (!as_uint(ver, 1e9, &version)) {
        fail(r, "version", "expected an integer");
        return false;
    }
    if (version != CBC_MANIFEST_VERSION) {
        r->st = cbc_err_set(r->err, CBC_E_UNSUPPORTED, "manifest '%s': version %llu; this "
                            "cubincache reads version %d", r->file, (unsigned long long)version,
                            CBC_MANIFEST_VERSION);
        cbc_err_hint(r->err, "rebuild the bundle with this cubincache");
        return false;
    }
    return true;
}

/* "linked_sources": the sources of a device-linked bundle, source.path first. */
static void parse_linked(struct rd *r, const cJSON *ls, struct cbc_manifest *m)
{
    size_t n = cJSON_IsArray(ls) ? (size_t)cJSON_GetArraySize(ls) : 0;
    if (!n)
        fail(r, "linked_sources", "expected a non-empty array of source paths");
    else if (!(m->linked = calloc(n, sizeof *m->linked)))
        r->st = cbc_err_oom(r->err);
    const cJSON *f = m->linked ? ls->child : NULL;
    for (; f; f = f->next) {
        if (!cJSON_IsString(f) || !f->valuestring[0]) {
            fail(r, "linked_sources", "expected an array of source paths");
            break;
        }
        if (!(m->linked[m->n_linked++] = cbc_strdup(f->valuestring))) {
            r->st = cbc_err_oom(r->err);
            break;
        }
    }
    if (r->st == CBC_OK && m->n_linked && m->source && strcmp(m->linked[0], m->source) != 0)
        fail(r, "linked_sources", "its first source is not source.path");
}

/* "dependencies": [{path, xxh3}, ...] */
static void parse_deps(struct rd *r, const cJSON *deps, struct cbc_manifest *m)
{
    size_t n = (size_t)cJSON_GetArraySize(deps);
    m->deps = calloc(n ? n : 1, sizeof *m->deps);
    if (!m->deps) {
        r->st = cbc_err_oom(r->err);
        return;
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, deps)
    {
        char f[64];
        snprintf(f, sizeof f, "dependencies[%zu]", m->n_deps);
        if (!cJSON_IsObject(d)) {
            fail(r, f, "expected an object");
            break;
        }
        struct cbc_dep *dep = &m->deps[m->n_deps++];
        snprintf(f, sizeof f, "dependencies[%zu].path", m->n_deps - 1);
        dep->path = get_str(r, d, "path", f, false);
        snprintf(f, sizeof f, "dependencies[%zu].xxh3", m->n_deps - 1);
        get_hash(r, d, "xxh3", f, &dep->hash);
    }
}

/* "flags": nvcc's, as strings */
static void parse_flags(struct rd *r, const cJSON *flags, struct cbc_manifest *m)
{
    size_t n = (size_t)cJSON_GetArraySize(flags);
    m->flags = calloc(n ? n : 1, sizeof *m->flags);
    if (!m->flags) {
        r->st = cbc_err_oom(r->err);
        return;
    }
    const cJSON *f;
    cJSON_ArrayForEach(f, flags)
    {
        if (!cJSON_IsString(f)) {
            fail(r, "flags", "expected an array of strings");
            break;
        }
        if (!(m->flags[m->n_flags++] = cbc_strdup(f->valuestring))) {
            r->st = cbc_err_oom(r->err);
            break;
        }
    }
}

/* "environment": {NAME: value or null}, each name once */
static void parse_env(struct rd *r, const cJSON *env, struct cbc_manifest *m)
{
    for (const cJSON *v = env ? env->child : NULL; v && r->st == CBC_OK; v = v->next) {
        char f[96];
        snprintf(f, sizeof f, "environment.%.60s", v->string);
        if (!cJSON_IsString(v) && !cJSON_IsNull(v)) {
            fail(r, f, "expected a string or null");
            break;
        }
        if (cbc_env_find(&m->env, v->string) >= 0) {
            fail(r, f, "appears twice");
            break;
        }
        char *name = cbc_strdup(v->string);
        char *value = cJSON_IsString(v) ? cbc_strdup(v->valuestring) : NULL;
        if (!name || (cJSON_IsString(v) && !value) || !cbc_env_set(&m->env, name, value)) {
            bool full = name && (!cJSON_IsString(v) || value);
            free(name);
            free(value);
            if (full)
                fail(r, "environment", "more variables than any nvcc reads");
            else
                r->st = cbc_err_oom(r->err);
        }
    }
}

/* "entries": one per target, no target and no file twice */
static void parse_entries(struct rd *r, const cJSON *ents, struct cbc_manifest *m)
{
    size_t n = (size_t)cJSON_GetArraySize(ents);
    m->entries = calloc(n ? n : 1, sizeof *m->entries);
    if (!m->entries) {
        r->st = cbc_err_oom(r->err);
        return;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, ents)
    {
        parse_entry(r, e, m->n, m->n_deps, &m->entries[m->n]);
        m->n++;
        for (size_t k = 0; r->st == CBC_OK && k + 1 < m->n; k++) {
            char f[64];
            snprintf(f, sizeof f, "entries[%zu]", m->n - 1);
            if (cbc_target_eq(&m->entries[k].target, &m->entries[m->n - 1].target))
                fail(r, f, "names the same target as an earlier entry");
            else if (!strcmp(m->entries[k].file, m->entries[m->n - 1].file))
                fail(r, f, "names the same file as an earlier entry");
        }
        if (r->st != CBC_OK)
            break;
    }
}

enum cbc_status cbc_manifest_parse(const char *text, size_t len, const char *name,
                                   struct cbc_manifest *m, struct cbc_err *err)
{
    memset(m, 0, sizeof *m);
    struct rd r = {name ? name : "<buffer>", err, CBC_OK};
    cJSON *root = parse_whole(&r, text, len);
    if (!root)
        return r.st;
    if (!parse_header(&r, root))
        goto out;
    m->name = get_str(&r, root, "name", "name", false);
    if (m->name && !cbc_name_valid(m->name))
        fail(&r, "name", "expected a bundle name: 1 to 128 letters, digits, '_', '.', '+' or '-', "
                         "starting with a letter, digit or '_'");
    const cJSON *src = get_obj(&r, root, "source", "source");
    if (src) {
        m->source = get_str(&r, src, "path", "source.path", false);
        get_hash(&r, src, "xxh3", "source.xxh3", &m->source_hash);
    }
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(root, "linked_sources");
    if (ls && r.st == CBC_OK)
        parse_linked(&r, ls, m);
    const cJSON *deps = get_arr(&r, root, "dependencies", "dependencies");
    if (deps && r.st == CBC_OK)
        parse_deps(&r, deps, m);
    const cJSON *nv = get_obj(&r, root, "nvcc", "nvcc");
    if (nv) {
        m->nvcc = get_str(&r, nv, "path", "nvcc.path", false);
        m->nvcc_version = get_str(&r, nv, "version", "nvcc.version", false);
        get_hash(&r, nv, "id", "nvcc.id", &m->nvcc_id);
        m->host_cc = get_str(&r, nv, "host_compiler", "nvcc.host_compiler", false);
        get_hash(&r, nv, "host_id", "nvcc.host_id", &m->host_id);
    }
    const cJSON *flags = get_arr(&r, root, "flags", "flags");
    if (flags && r.st == CBC_OK)
        parse_flags(&r, flags, m);
    parse_env(&r, get_obj(&r, root, "environment", "environment"), m);
    m->cwd = get_str(&r, root, "cwd", "cwd", false);
    if (cJSON_GetObjectItemCaseSensitive(root, "base_dir"))
        m->base_dir = get_str(&r, root, "base_dir", "base_dir", true);
    const cJSON *arch = get_obj(&r, root, "arch", "arch");
    if (arch) {
        m->arch_spec = get_str(&r, arch, "spec", "arch.spec", false);
        m->arch_rule = get_str(&r, arch, "rule", "arch.rule", false);
        m->arch_detail = get_str(&r, arch, "detail", "arch.detail", false);
        m->compute_cap = get_str(&r, arch, "CUDA_COMPUTE_CAP", "arch.CUDA_COMPUTE_CAP", true);
    }
    const cJSON *lk = cJSON_GetObjectItemCaseSensitive(root, "lookups");
    if (lk && r.st == CBC_OK)
        parse_lookups(&r, lk, m);
    const cJSON *ents = get_arr(&r, root, "entries", "entries");
    if (ents && r.st == CBC_OK)
        parse_entries(&r, ents, m);
out:
    cJSON_Delete(root);
    if (r.st != CBC_OK)
        cbc_manifest_release(m);
    return r.st;
}

enum cbc_status cbc_manifest_load(const char *path, struct cbc_manifest *m, struct cbc_err *err)
{
    uint8_t *data;
    size_t len;
    enum cbc_status st = cbc_file_read_max(path, CBC_MANIFEST_MAX, &data, &len, err);
    if (st != CBC_OK)
        return st;
    st = cbc_manifest_parse((const char *)data, len, path, m, err);
    free(data);
    return st;
}

void cbc_manifest_release(struct cbc_manifest *m)
{
    free(m->name);
    free(m->source);
    for (size_t i = 0; i < m->n_linked; i++)
        free(m->linked[i]);
    free(m->linked);
    for (size_t i = 0; i < m->n_deps; i++)
        free(m->deps[i].path);
    free(m->deps);
    free(m->nvcc);
    free(m->nvcc_version);
    free(m->host_cc);
    for (size_t i = 0; i < m->n_flags; i++)
        free(m->flags[i]);
    free(m->flags);
    for (size_t i = 0; i < m->env.n; i++) {
        free((char *)m->env.name[i]);
        free((char *)m->env.value[i]);
    }
    free(m->cwd);
    free(m->base_dir);
    free(m->arch_spec);
    free(m->arch_rule);
    free(m->arch_detail);
    free(m->compute_cap);
    for (size_t i = 0; i < m->n_lookups; i++) {
        free(m->lookups[i].dir);
        for (size_t k = 0; k < m->lookups[i].n; k++)
            free(m->lookups[i].names[k]);
        free(m->lookups[i].names);
    }
    free(m->lookups);
    for (size_t i = 0; i < m->n; i++) {
        free(m->entries[i].file);
        free(m->entries[i].deps);
    }
    free(m->entries);
    memset(m, 0, sizeof *m);
}

const struct cbc_dep **cbc_manifest_entry_deps(const struct cbc_manifest *m,
                                               const struct cbc_manifest_entry *e, size_t *n)
{
    size_t count = e->deps ? e->n_deps : m->n_deps;
    const struct cbc_dep **v = calloc(count ? count : 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < count; i++)
        v[i] = &m->deps[e->deps ? e->deps[i] : i];
    *n = count;
    return v;
}

