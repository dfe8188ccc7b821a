/* io.c: safetensors models, .npy and .csv matrices.
 *
 * safetensors: u64 little-endian header length N, N bytes of JSON (cJSON),
 * then the data; each tensor's data_offsets are relative to the data and
 * must equal its shape times its dtype size. Nothing is trusted: the header
 * length, every offset and every shape is checked against the file before
 * a byte is converted, and every weight is checked to be finite.
 * .npy: magic, version, a Python-dict header (descr, fortran_order, shape)
 * parsed by hand, then the data, whose length must match the shape.
 */
#include "ig_int.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes ---------------------------------------------------------------- */

static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            exp = 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            mant &= 0x3ff;
            bits = sign | ((exp + 112) << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float bf16_to_float(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static size_t dtype_size(const char *dt)
{
    if (!strcmp(dt, "F32"))
        return 4;
    if (!strcmp(dt, "F64"))
        return 8;
    if (!strcmp(dt, "F16") || !strcmp(dt, "BF16"))
        return 2;
    return 0;
}

static float convert(const char *dt, const uint8_t *p)
{
    if (!strcmp(dt, "F32")) {
        uint32_t u = ig_rd32(p);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    if (!strcmp(dt, "F64")) {
        uint64_t u = ig_rd64(p);
        double d;
        memcpy(&d, &u, 8);
        return (float)d;
    }
    if (!strcmp(dt, "F16"))
        return half_to_float(ig_rd16(p));
    return bf16_to_float(ig_rd16(p));
}

/* ---- safetensors ------------------------------------------------------------ */

struct tensor {
    const char *name;
    char dtype[8];
    int ndim;
    int64_t shape[2];
    uint64_t begin, end;
};

/* Reads and checks one tensor's header entry. */
static enum cbc_status tensor_info(const char *path, const cJSON *j, uint64_t data_len,
                                   struct tensor *t, struct cbc_err *err)
{
    t->name = j->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsObject(j) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
        cJSON_GetArraySize(of) != 2)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' lacks dtype, shape or data_offsets",
                           path, t->name);
    snprintf(t->dtype, sizeof t->dtype, "%s", dt->valuestring);
    size_t es = dtype_size(dt->valuestring);
    if (!es) {
        ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' has dtype '%s'", path, t->name,
                    dt->valuestring);
        ig_err_hint(err, "save the model in float32, float64, float16 or bfloat16");
        return CBC_E_UNSUPPORTED;
    }
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim < 1 || t->ndim > 2)
        return ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' has %d dimensions; expected 1 or 2",
                           path, t->name, t->ndim);
    uint64_t count = 1;
    for (int i = 0; i < t->ndim; i++) {
        const cJSON *d = cJSON_GetArrayItem(sh, i);
        if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 1e9)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has a bad shape", path, t->name);
        t->shape[i] = (int64_t)d->valuedouble;
        count *= (uint64_t)t->shape[i];
    }
    const cJSON *b = cJSON_GetArrayItem(of, 0), *e = cJSON_GetArrayItem(of, 1);
    if (!cJSON_IsNumber(b) || !cJSON_IsNumber(e) || b->valuedouble < 0 ||
        e->valuedouble < b->valuedouble)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has bad data_offsets", path, t->name);
    t->begin = (uint64_t)b->valuedouble;
    t->end = (uint64_t)e->valuedouble;
    if (t->end > data_len)
        return ig_err_set(err, CBC_E_FORMAT,
                           "'%s': tensor '%s' ends at byte %llu of the data, which has %llu "
                           "(truncated file or lying header)",
                           path, t->name, (unsigned long long)t->end, (unsigned long long)data_len);
    if (t->end - t->begin != count * es)
        return ig_err_set(err, CBC_E_FORMAT,
                           "'%s': tensor '%s' holds %llu bytes but its shape and dtype need %llu",
                           path, t->name, (unsigned long long)(t->end - t->begin),
                           (unsigned long long)(count * es));
    return CBC_OK;
}

/* "<prefix><index>.<kind>" -> index, with the prefix checked for agreement. */
static long layer_index(const char *name, const char *kind, char *prefix, size_t plen)
{
    size_t n = strlen(name), k = strlen(kind);
    if (n < k + 2 || strcmp(name + n - k, kind) != 0 || name[n - k - 1] != '.')
        return -1;
    size_t end = n - k - 1, start = end;
    while (start > 0 && isdigit((unsigned char)name[start - 1]))
        start--;
    if (start == end || (start > 0 && name[start - 1] != '.') || end - start > 6)
        return -1;
    if (prefix) {
        if (start >= plen)
            return -1;
        memcpy(prefix, name, start);
        prefix[start] = '\0';
    }
    return strtol(name + start, NULL, 10);
}

static int cmp_layer(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b; /* each starts with its index */
    return x < y ? -1 : x > y;
}

static enum cbc_status read_tensor(const char *path, const struct tensor *t, const uint8_t *data,
                                   float *dst, struct cbc_err *err)
{
    size_t es = dtype_size(t->dtype), count = (t->end - t->begin) / es;
    const uint8_t *p = data + t->begin;
    for (size_t i = 0; i < count; i++) {
        dst[i] = convert(t->dtype, p + i * es);
        if (!isfinite(dst[i])) {
            if (t->ndim == 2)
                return ig_err_set(err, CBC_E_NUMERIC, "'%s': tensor '%s' [%zu][%zu] is %g", path,
                                   t->name, i / (size_t)t->shape[1], i % (size_t)t->shape[1],
                                   (double)dst[i]);
            return ig_err_set(err, CBC_E_NUMERIC, "'%s': tensor '%s' [%zu] is %g", path, t->name, i,
                               (double)dst[i]);
        }
    }
    return CBC_OK;
}

void cbc_mlp_owned_free(struct cbc_mlp_owned *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m->storage);
    free(m->activations);
    free(m);
}

enum cbc_status cbc_mlp_load_safetensors(const char *path, const char *activations,
                                         struct cbc_mlp_owned **out, struct cbc_err *err)
{
    uint8_t *file;
    size_t len;
    enum cbc_status st = ig_file_read(path, IG_FILE_MAX, &file, &len, err);
    if (st != CBC_OK)
        return st;
    cJSON *root = NULL;
    struct cbc_mlp_owned *m = NULL;
    struct layer_ref {
        long idx;
        const cJSON *w; /* the weight's own header entry, never looked up again by a made name */
    } idx[64];
    size_t nl = 0;
    char prefix[256] = "", p2[256];
    size_t n_bias = 0;
    if (len < 8) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': %zu bytes; a safetensors file starts with an "
                         "8-byte header length", path, len);
        goto out;
    }
    uint64_t hlen = ig_rd64(file);
    if (hlen > CBC_SAFETENSORS_HEADER_MAX) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': header length %llu is over safetensors' limit "
                         "of %llu bytes: not a safetensors file, or a damaged one", path,
                         (unsigned long long)hlen, (unsigned long long)CBC_SAFETENSORS_HEADER_MAX);
        goto out;
    }
    if (hlen > len - 8) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': header length %llu runs past the end of the "
                         "file (%zu bytes): truncated or not safetensors", path,
                         (unsigned long long)hlen, len);
        goto out;
    }
    root = cJSON_ParseWithLength((const char *)file + 8, (size_t)hlen);
    if (!cJSON_IsObject(root)) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': the header is not a JSON object", path);
        goto out;
    }
    const uint8_t *data = file + 8 + hlen;
    uint64_t data_len = len - 8 - hlen;
    /* the layers: every "<i>.weight", in index order */
    const cJSON *j;
    cJSON_ArrayForEach(j, root)
    {
        if (!strcmp(j->string, "__metadata__"))
            continue;
        long i = layer_index(j->string, "weight", nl ? p2 : prefix, sizeof prefix);
        if (i < 0) {
            n_bias++;
            if (layer_index(j->string, "bias", NULL, 0) < 0) {
                st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' is not '<i>.weight' or "
                                 "'<i>.bias' of a Linear layer", path, j->string);
                goto out;
            }
            continue;
        }
        if (nl && strcmp(prefix, p2) != 0) {
            st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' and '%s' have different "
                             "prefixes", path, idx[0].w->string, j->string);
            goto out;
        }
        for (size_t k = 0; k < nl; k++)
            if (idx[k].idx == i) {
                st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' and '%s' are both layer "
                                 "%ld", path, idx[k].w->string, j->string, i);
                goto out;
            }
        if (nl == IG_ARRAY_LEN(idx)) {
            st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': more than %zu layers", path,
                             IG_ARRAY_LEN(idx));
            goto out;
        }
        idx[nl++] = (struct layer_ref){i, j};
    }
    if (!nl) {
        st = ig_err_set(err, CBC_E_NOT_FOUND, "'%s': no '<i>.weight' tensor: not an nn.Sequential "
                         "of Linear layers", path);
        goto out;
    }
    qsort(idx, nl, sizeof *idx, cmp_layer);
    /* activations */
    const char *acts = activations;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    const cJSON *ma = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "activations") : NULL;
    if (!acts && cJSON_IsString(ma))
        acts = ma->valuestring;
    if (!acts) {
        st = ig_err_set(err, CBC_E_NOT_FOUND, "'%s': no activations: the file's __metadata__ has "
                         "no 'activations' entry", path);
        ig_err_hint(err, "pass --activations with one per Linear layer, e.g. tanh,tanh,identity");
        goto out;
    }
    m = calloc(1, sizeof *m);
    if (!m || !(m->layers = calloc(nl, sizeof *m->layers)) || !(m->activations = ig_strdup(acts))) {
        st = ig_err_oom(err);
        goto out;
    }
    size_t na = 0;
    for (char *tok = strtok(m->activations, ", "); tok; tok = strtok(NULL, ", ")) {
        if (na == nl) {
            st = ig_err_set(err, CBC_E_SHAPE, "'%s': %zu activations given for %zu Linear layers "
                             "('%s')", path, na + 1, nl, acts);
            goto out;
        }
        if (!cbc_act_parse(tok, &m->layers[na].act)) {
            st = ig_err_set(err, CBC_E_USAGE, "'%s': unknown activation '%s'", path, tok);
            ig_err_hint(err, "use identity, relu, tanh, sigmoid or gelu");
            goto out;
        }
        na++;
    }
    if (na != nl) {
        st = ig_err_set(err, CBC_E_SHAPE, "'%s': %zu activations ('%s') for %zu Linear layers",
                         path, na, acts, nl);
        goto out;
    }
    free(m->activations);
    m->activations = ig_strdup(acts);
    /* shapes, then the data */
    struct tensor tw[64], tb[64];
    bool has_b[64] = {false};
    size_t total = 0;
    for (size_t l = 0; l < nl; l++) {
        char name[300];
        const char *wname = idx[l].w->string;
        st = tensor_info(path, idx[l].w, data_len, &tw[l], err);
        if (st != CBC_OK)
            goto out;
        if (tw[l].ndim != 2) {
            st = ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' must be 2-D [out][in]", path,
                             wname);
            goto out;
        }
        /* its bias: the same name with "bias" for "weight" */
        snprintf(name, sizeof name, "%.*sbias", (int)(strlen(wname) - 6), wname);
        const cJSON *bj = cJSON_GetObjectItemCaseSensitive(root, name);
        if (bj) {
            st = tensor_info(path, bj, data_len, &tb[l], err);
            if (st != CBC_OK)
                goto out;
            if (tb[l].ndim != 1 || tb[l].shape[0] != tw[l].shape[0]) {
                st = ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' must have shape [%lld]", path,
                                 name, (long long)tw[l].shape[0]);
                goto out;
            }
            has_b[l] = true;
        }
        if (l > 0 && tw[l].shape[1] != tw[l - 1].shape[0]) {
            st = ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' takes %lld inputs but '%s' gives "
                             "%lld outputs", path, tw[l].name, (long long)tw[l].shape[1],
                             tw[l - 1].name, (long long)tw[l - 1].shape[0]);
            goto out;
        }
        if (tw[l].shape[0] < 1 || tw[l].shape[1] < 1) {
            st = ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' is empty", path, tw[l].name);
            goto out;
        }
        total += (size_t)(tw[l].shape[0] * tw[l].shape[1]) + (has_b[l] ? (size_t)tw[l].shape[0] : 0);
    }
    /* the data of two tensors never overlaps (safetensors' own rule): a
     * header that says otherwise lies about at least one of them */
    const struct tensor *all[128];
    size_t na2 = 0;
    for (size_t l = 0; l < nl; l++) {
        all[na2++] = &tw[l];
        if (has_b[l])
            all[na2++] = &tb[l];
    }
    for (size_t i = 0; i < na2; i++)
        for (size_t k = i + 1; k < na2; k++)
            if (all[i]->end > all[i]->begin && all[k]->end > all[k]->begin &&
                all[i]->begin < all[k]->end && all[k]->begin < all[i]->end) {
                st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' (bytes %llu to %llu) and "
                                 "'%s' (bytes %llu to %llu) overlap: the header lies", path,
                                 all[i]->name, (unsigned long long)all[i]->begin,
                                 (unsigned long long)all[i]->end, all[k]->name,
                                 (unsigned long long)all[k]->begin, (unsigned long long)all[k]->end);
                goto out;
            }
    size_t used = 0;
    for (size_t l = 0; l < nl; l++)
        used += has_b[l];
    if (used != n_bias) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': %zu bias tensor%s belong%s to no '<i>.weight' "
                         "of the same name", path, n_bias - used, n_bias - used == 1 ? "" : "s",
                         n_bias - used == 1 ? "s" : "");
        goto out;
    }
    m->storage = malloc(sizeof(float) * (total ? total : 1));
    if (!m->storage) {
        st = ig_err_oom(err);
        goto out;
    }
    float *p = m->storage;
    for (size_t l = 0; l < nl; l++) {
        struct cbc_mlp_layer *L = &m->layers[l];
        L->out = (int)tw[l].shape[0];
        L->in = (int)tw[l].shape[1];
        if ((st = read_tensor(path, &tw[l], data, p, err)) != CBC_OK)
            goto out;
        L->w = p;
        p += (size_t)L->in * (size_t)L->out;
        if (has_b[l]) {
            if ((st = read_tensor(path, &tb[l], data, p, err)) != CBC_OK)
                goto out;
            L->b = p;
            p += (size_t)L->out;
        }
    }
    m->mlp.n_layers = (int)nl;
    m->mlp.layers = m->layers;
out:
    cJSON_Delete(root);
    free(file);
    if (st != CBC_OK) {
        cbc_mlp_owned_free(m);
        return st;
    }
    *out = m;
    return CBC_OK;
}

/* ---- npy ------------------------------------------------------------------ */

void cbc_matrix_release(struct cbc_matrix *m)
{
    free(m->data);
    memset(m, 0, sizeof *m);
}

/* Finds 'key': in a Python dict literal and returns a pointer after the colon. */
static const char *dict_value(const char *h, size_t n, const char *key)
{
    char pat[32];
    snprintf(pat, sizeof pat, "'%s':", key);
    size_t pl = strlen(pat);
    for (size_t i = 0; i + pl <= n; i++)
        if (!memcmp(h + i, pat, pl)) {
            const char *v = h + i + pl;
            while (v < h + n && *v == ' ')
                v++;
            return v;
        }
    return NULL;
}

static enum cbc_status load_npy(const char *path, const uint8_t *d, size_t len, struct cbc_matrix *out,
                                struct cbc_err *err)
{
    if (len < 10 || memcmp(d, "\x93NUMPY", 6) != 0)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': not a .npy file (no \\x93NUMPY magic)", path);
    unsigned major = d[6];
    size_t hl, off;
    if (major == 1) {
        hl = ig_rd16(d + 8);
        off = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': truncated .npy header", path);
        hl = ig_rd32(d + 8);
        off = 12;
    } else {
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': .npy version %u", path, major);
    }
    if (hl > len - off)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': .npy header length %zu runs past the file",
                           path, hl);
    const char *h = (const char *)d + off;
    const char *descr = dict_value(h, hl, "descr"), *fo = dict_value(h, hl, "fortran_order"),
               *shape = dict_value(h, hl, "shape");
    if (!descr || !fo || !shape)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': .npy header lacks descr, fortran_order or shape",
                           path);
    bool fortran = !strncmp(fo, "True", 4);
    char kind[8] = "";
    if (*descr == '\'') {
        size_t k = 0;
        for (const char *c = descr + 1; *c && *c != '\'' && k < sizeof kind - 1 && c < h + hl; c++)
            kind[k++] = *c;
        kind[k] = '\0';
    }
    /* byte order, type letter, size: '<f4', '>i2', '|u1', '|b1' */
    char order = kind[0], type = kind[1];
    long es = kind[0] && kind[1] ? strtol(kind + 2, NULL, 10) : 0;
    bool known = (order == '<' || order == '>' || order == '|' || order == '=') &&
                 ((type == 'f' && (es == 2 || es == 4 || es == 8)) ||
                  ((type == 'i' || type == 'u') && (es == 1 || es == 2 || es == 4 || es == 8)) ||
                  (type == 'b' && es == 1));
    if (!known)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': dtype '%s'; expected a float (f2, f4, "
                           "f8), integer (i1 to i8, u1 to u8) or bool array", path, kind);
    /* shape: "(a, b)" or "(a,)" */
    if (*shape != '(')
        return ig_err_set(err, CBC_E_FORMAT, "'%s': bad shape in the .npy header", path);
    long dims[3];
    int nd = 0;
    const char *c = shape + 1;
    while (c < h + hl && *c != ')' && nd < 3) {
        while (*c == ' ' || *c == ',')
            c++;
        if (*c == ')')
            break;
        char *end;
        errno = 0;
        long v = strtol(c, &end, 10);
        if (end == c || errno || v < 0)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': bad shape in the .npy header", path);
        dims[nd++] = v;
        c = end;
    }
    if (nd < 1 || nd > 2)
        return ig_err_set(err, CBC_E_SHAPE, "'%s': a %d-D array; expected 1-D (one input) or 2-D "
                           "(inputs x features)", path, nd);
    size_t rows = nd == 2 ? (size_t)dims[0] : 1, cols = (size_t)dims[nd - 1];
    if (rows && cols > SIZE_MAX / rows / (size_t)es)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': shape too large", path);
    size_t need = rows * cols * (size_t)es, at = off + hl;
    if (len - at < need)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': holds %zu bytes of data, the shape needs %zu "
                           "(truncated)", path, len - at, need);
    float *v = malloc(sizeof(float) * (rows && cols ? rows * cols : 1));
    if (!v)
        return ig_err_oom(err);
    const uint8_t *p = d + at;
    bool big = order == '>';
    for (size_t i = 0; i < rows * cols; i++) {
        /* element i of the file: row-major, or column-major when Fortran-ordered */
        size_t r = fortran ? i % rows : i / cols, c2 = fortran ? i / rows : i % cols;
        uint8_t b8[8];
        for (long k = 0; k < es; k++)
            b8[k] = p[i * (size_t)es + (size_t)(big ? es - 1 - k : k)];
        uint64_t u = 0;
        for (long k = es - 1; k >= 0; k--)
            u = u << 8 | b8[k];
        float x;
        if (type == 'f' && es == 2) {
            x = half_to_float((uint16_t)u);
        } else if (type == 'f' && es == 4) {
            uint32_t w = (uint32_t)u;
            memcpy(&x, &w, 4);
        } else if (type == 'f') {
            double dd;
            memcpy(&dd, &u, 8);
            x = (float)dd;
        } else if (type == 'i') {
            int64_t sv = es == 8 ? (int64_t)u : (int64_t)(u << (64 - 8 * es)) >> (64 - 8 * es);
            x = (float)sv;
        } else {
            x = (float)u; /* unsigned and bool */
        }
        v[r * cols + c2] = x;
    }
    out->data = v;
    out->rows = rows;
    out->cols = cols;
    return CBC_OK;
}

/* ---- csv -------------------------------------------------------------------- */

static enum cbc_status load_csv(const char *path, const char *text, size_t len,
                                struct cbc_matrix *out, struct cbc_err *err)
{
    size_t cap = 1024, n = 0, rows = 0, cols = 0, line = 0;
    float *v = malloc(sizeof(float) * cap);
    if (!v)
        return ig_err_oom(err);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        line++;
        const char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q == eol) { /* blank line */
            p = eol + 1;
            continue;
        }
        size_t c = 0;
        bool header = false;
        while (q < eol) {
            char *e;
            errno = 0;
            float x = strtof(q, &e);
            if (e == q) {
                if (rows == 0 && c == 0) {
                    header = true; /* a non-numeric first line: column names */
                    break;
                }
                free(v);
                return ig_err_set(err, CBC_E_FORMAT, "'%s': line %zu field %zu is not a number",
                                   path, line, c + 1);
            }
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                float *nv = nc < SIZE_MAX / sizeof *v ? realloc(v, nc * sizeof *v) : NULL;
                if (!nv) {
                    free(v);
                    return ig_err_oom(err);
                }
                v = nv;
                cap = nc;
            }
            v[n++] = x;
            c++;
            q = e;
            while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r'))
                q++;
            if (q < eol && *q == ',')
                q++;
            else if (q < eol) {
                free(v);
                return ig_err_set(err, CBC_E_FORMAT, "'%s': line %zu field %zu: expected a comma",
                                   path, line, c);
            }
        }
        if (!header) {
            if (rows == 0)
                cols = c;
            else if (c != cols) {
                free(v);
                return ig_err_set(err, CBC_E_SHAPE, "'%s': line %zu has %zu fields, the first row "
                                   "has %zu", path, line, c, cols);
            }
            rows++;
        }
        p = eol + 1;
    }
    if (!rows) {
        free(v);
        return ig_err_set(err, CBC_E_FORMAT, "'%s': no rows of numbers", path);
    }
    out->data = v;
    out->rows = rows;
    out->cols = cols;
    return CBC_OK;
}

enum cbc_status cbc_matrix_load(const char *path, struct cbc_matrix *out, struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    uint8_t *d;
    size_t len;
    enum cbc_status st = ig_file_read(path, IG_FILE_MAX, &d, &len, err);
    if (st != CBC_OK)
        return st;
    size_t pl = strlen(path);
    if (pl > 4 && !strcmp(path + pl - 4, ".csv"))
        st = load_csv(path, (const char *)d, len, out, err);
    else
        st = load_npy(path, d, len, out, err);
    free(d);
    return st;
}

enum cbc_status cbc_matrix_save_npy(const char *path, const struct cbc_matrix *m, struct cbc_err *err)
{
    char head[128];
    int hl = snprintf(head, sizeof head, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu, %zu), }",
                      m->rows, m->cols);
    int total = 10 + hl + 1, pad = (64 - total % 64) % 64;
    size_t n = m->rows * m->cols, hdr = (size_t)(total + pad);
    if (n > (SIZE_MAX - hdr) / 4)
        return ig_err_oom(err);
    uint8_t *b = malloc(hdr + 4 * n), *p = b;
    if (!b)
        return ig_err_oom(err);
    memcpy(p, "\x93NUMPY\x01\x00", 8);
    p[8] = (uint8_t)((hl + pad + 1) & 0xff);
    p[9] = (uint8_t)((hl + pad + 1) >> 8);
    memcpy(p + 10, head, (size_t)hl);
    memset(p + 10 + hl, ' ', (size_t)pad);
    p[hdr - 1] = '\n';
    p += hdr;
    for (size_t i = 0; i < n; i++, p += 4) { /* little-endian, as '<f4' says */
        uint32_t u;
        memcpy(&u, &m->data[i], 4);
        ig_wr32(p, u);
    }
    enum cbc_status st = ig_file_write_atomic(path, b, hdr + 4 * n, 0644, err);
    free(b);
    return st;
}
