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
#include <strings.h>

/* ---- dtypes ---------------------------------------------------------------- */

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
        return ig_half_to_float(ig_rd16(p));
    return ig_bf16_to_float(ig_rd16(p));
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
    free(m->layer_names);
    free(m);
}

/* ---- models: modules of a state_dict ------------------------------------- */

/* One module of the file: the tensors sharing a name before their last '.'
 * ("fc1" of "fc1.weight", "net.3" of "net.3.bias"). */
struct module {
    char name[200];
    const cJSON *weight, *bias, *mean, *var;
    bool other;         /* a parameter this loader does not know */
    const char *other_name;
    uint64_t first;     /* where its data starts: the storage order */
    long index;         /* its trailing number, or -1 */
    enum { M_LINEAR, M_BATCHNORM, M_LAYERNORM, M_UNKNOWN } kind;
    struct tensor tw, tb, tm, tv;
};

/* A tensor the module has, for messages: a BatchNorm without affine
 * parameters has no weight, so never its weight alone. */
static const char *some_tensor(const struct module *m)
{
    const cJSON *t = m->weight ? m->weight : m->bias ? m->bias : m->mean ? m->mean : m->var;
    return t ? t->string : m->name;
}

static long trailing_index(const char *name, char *prefix, size_t plen)
{
    size_t n = strlen(name), start = n;
    while (start > 0 && isdigit((unsigned char)name[start - 1]))
        start--;
    if (start == n || n - start > 6 || (start > 0 && name[start - 1] != '.') || start >= plen)
        return -1;
    memcpy(prefix, name, start);
    prefix[start] = '\0';
    return strtol(name + start, NULL, 10);
}

static int cmp_index(const void *a, const void *b)
{
    const struct module *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* A torch.save file is a zip (PyTorch 1.6+) or a pickle: say so, and how
 * to write safetensors instead. */
static enum cbc_status not_safetensors(const char *path, const uint8_t *file, size_t len,
                                       struct cbc_err *err)
{
    const char *what = NULL;
    if (len >= 4 && !memcmp(file, "PK\x03\x04", 4))
        what = "a PyTorch checkpoint (torch.save's zip format)";
    else if (len >= 2 && file[0] == 0x80 && file[1] >= 2 && file[1] <= 5)
        what = "a Python pickle (torch.save's legacy format)";
    if (!what)
        return CBC_OK;
    ig_err_set(err, CBC_E_FORMAT, "'%s' is %s, not safetensors: igrun does not run pickles", path,
               what);
    ig_err_hint(err, "write safetensors instead: from safetensors.torch import save_file; "
                     "save_file(model.state_dict(), 'model.safetensors', "
                     "metadata={'activations': 'relu,relu,identity'})");
    return CBC_E_FORMAT;
}

static enum cbc_status read_vec(const char *path, const struct tensor *t, const uint8_t *data,
                                int64_t n, double *dst, struct cbc_err *err)
{
    if (t->ndim != 1 || t->shape[0] != n)
        return ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' must have shape [%lld]", path,
                          t->name, (long long)n);
    float *tmp = malloc((size_t)n * sizeof *tmp);
    if (!tmp)
        return ig_err_oom(err);
    enum cbc_status st = read_tensor(path, t, data, tmp, err);
    for (int64_t i = 0; st == CBC_OK && i < n; i++)
        dst[i] = tmp[i];
    free(tmp);
    return st;
}

/* The next activation of a list separated by commas or blanks at *cur,
 * NUL-terminated in place, *cur moved past it: separators inside
 * parentheses ("LeakyReLU(0.2, inplace=True)") belong to it. NULL at the end. */
static char *next_activation(char **cur)
{
    char *s = *cur;
    while (*s == ' ' || *s == ',')
        s++;
    if (!*s)
        return NULL;
    char *e = s;
    int depth = 0;
    for (; *e && (depth > 0 || (*e != ',' && *e != ' ')); e++)
        depth += *e == '(' ? 1 : *e == ')' ? -1 : 0;
    *cur = *e ? e + 1 : e;
    *e = '\0';
    return s;
}

/* The LayerNorm order[k] attached to the Linear layer right before it
 * (layers[li - 1]): before that layer's activation when they are adjacent
 * (in a numbered Sequential, consecutive indices; named modules: the usual
 * Linear, LayerNorm, activation), else after it (a gap in the indices is the
 * activation). Its weight and bias are read into *p. */
static enum cbc_status attach_layer_norm(const char *path, struct module *const *order, size_t k,
                                         size_t li, struct cbc_mlp_layer *layers,
                                         const uint8_t *data, double eps, float **p,
                                         struct cbc_err *err)
{
    const struct module *md = order[k], *prev = k > 0 ? order[k - 1] : NULL;
    if (!prev || prev->kind != M_LINEAR || li == 0)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': LayerNorm '%s' follows %s%s%s: igrun "
                          "takes a LayerNorm right after a Linear layer (before or after its "
                          "activation)", path, md->name, prev ? "'" : "the input",
                          prev ? prev->name : "", prev ? "'" : "");
    struct cbc_mlp_layer *L = &layers[li - 1];
    if (md->tw.ndim != 1 || md->tw.shape[0] != L->out)
        return ig_err_set(err, CBC_E_SHAPE, "'%s': LayerNorm tensor '%s' has shape [%lld] where "
                          "'%s', the Linear layer before it, has %d outputs", path, md->tw.name,
                          (long long)md->tw.shape[0], prev->tw.name, L->out);
    if (md->bias && (md->tb.ndim != 1 || md->tb.shape[0] != L->out))
        return ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' must have shape [%d]", path,
                          md->tb.name, L->out);
    enum cbc_status st = read_tensor(path, &md->tw, data, *p, err);
    if (st != CBC_OK)
        return st;
    L->norm_w = *p;
    *p += L->out;
    if (md->bias) {
        if ((st = read_tensor(path, &md->tb, data, *p, err)) != CBC_OK)
            return st;
        L->norm_b = *p;
        *p += L->out;
    }
    L->norm = prev->index >= 0 && md->index >= 0 && md->index != prev->index + 1
                  ? CBC_NORM_AFTER_ACT
                  : CBC_NORM_BEFORE_ACT;
    L->norm_eps = (float)eps;
    return CBC_OK;
}

/* Whether module name `name` contains `word`, ignoring case. */
static bool name_has(const char *name, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = name; *p; p++)
        if (!strncasecmp(p, word, wl))
            return true;
    return false;
}

/* "fc1, bn1, fc2": the modules in the order they run, for messages. */
static const char *order_list(struct module *const *order, size_t no, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < no && o + 80 < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%.60s", k ? ", " : "", order[k]->name);
    return buf;
}

/* The hint of a shape or layout error: which order the layers ran in and
 * the fixes that apply. */
static void order_hint(struct cbc_err *err, struct module *const *order, size_t no,
                       bool from_meta, bool given, bool numbered)
{
    char list[400];
    ig_err_hint(err, "the layers ran in the order %s (%s): if that is not forward()'s, %s; a "
                "model that is not a chain of Linear layers (a residual, a branch) is read "
                "right only from its graph: export ONNX, torch.onnx.export(model, x, "
                "'model.onnx')", order_list(order, no, list, sizeof list),
                given ? "--layers" : from_meta ? "the layer_order metadata" :
                numbered ? "the Sequential's indices" : "the file's",
                given ? "correct --layers" : "pass --layers in forward()'s order");
}

/* A module whose weight igrun would misread: a Conv (3 to 5 dimensions), an
 * Embedding (a 2-D weight alone, named like one) or a PReLU (a 1-D weight
 * alone, not named like a norm) is refused by name. */
static enum cbc_status refuse_module(const char *path, const struct module *md, int nd,
                                     const cJSON *sh, struct cbc_err *err)
{
    char shape[80] = "";
    for (int i = 0, o = 0; i < nd && i < 6 && o < (int)sizeof shape - 16; i++) {
        const cJSON *d = cJSON_GetArrayItem(sh, i);
        o += snprintf(shape + o, sizeof shape - (size_t)o, "%s%.0f", i ? ", " : "",
                      cJSON_IsNumber(d) ? d->valuedouble : -1.0);
    }
    const char *what = NULL, *fix = NULL;
    if (nd >= 3 && nd <= 5) {
        what = nd == 3 ? "a Conv1d" : nd == 4 ? "a Conv2d" : "a Conv3d";
        fix = "a state_dict holds a convolutional network's weights, not its strides, padding "
              "and pools: export it with torch.onnx.export(model.eval(), (x,), 'model.onnx'), "
              "from whose graph igrun explains it";
    } else if (nd == 2 && !md->bias &&
               (name_has(md->name, "emb") || !strcmp(md->name, "wte") || !strcmp(md->name, "wpe") ||
                (strlen(md->name) > 4 && (!strcmp(md->name + strlen(md->name) - 4, ".wte") ||
                                          !strcmp(md->name + strlen(md->name) - 4, ".wpe"))))) {
        what = "an Embedding's table";
        fix = "an embedding looks rows up by integer index, which igrun does not do: explain "
              "the embeddings' output with Captum's LayerIntegratedGradients, or pass a Linear "
              "layer of that name in --layers order if it really is one";
    } else if (nd == 1 && !md->bias && !name_has(md->name, "norm") && !name_has(md->name, "ln")) {
        what = "a PReLU's slopes (a 1-D weight without a bias)";
        fix = "igrun has no PReLU: use nn.LeakyReLU with the learned slope, or export ONNX "
              "(torch.onnx.export) for a model igrun reads from its graph";
    }
    if (!what)
        return CBC_OK;
    ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' of shape [%s] is %s, not a layer igrun "
               "runs", path, md->weight->string, shape, what);
    ig_err_hint(err, "%s", fix);
    return CBC_E_UNSUPPORTED;
}

/* The modules named by __metadata__ "layer_order" (state_dict() keys, or
 * module names), in order, each once, separated by commas, into buf. */
static enum cbc_status order_from_metadata(const char *path, const char *order,
                                           const struct module *mods, size_t nm, char *buf,
                                           size_t len, struct cbc_err *err)
{
    size_t o = 0;
    buf[0] = '\0';
    const char *p = order;
    while (*p) {
        while (*p == ',' || *p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ')
            e++;
        if (e == p)
            break;
        size_t tl = (size_t)(e - p);
        /* a module's name itself, or a key: the module is the name before its last '.' */
        const struct module *md = NULL;
        for (int pass = 0; pass < 2 && !md; pass++) {
            size_t ml = tl;
            if (pass == 1) {
                while (ml > 0 && p[ml - 1] != '.')
                    ml--;
                if (ml == 0)
                    break;
                ml--;
            }
            for (size_t k = 0; k < nm && !md; k++)
                if (strlen(mods[k].name) == ml && !strncmp(mods[k].name, p, ml))
                    md = &mods[k];
        }
        if (!md) {
            ig_err_set(err, CBC_E_FORMAT, "'%s': __metadata__ layer_order names '%.*s', which is "
                       "not a tensor or layer of the file", path, (int)(tl > 200 ? 200 : tl), p);
            ig_err_hint(err, "write layer_order from the same state_dict() the file holds: "
                             "','.join(model.state_dict())");
            return CBC_E_FORMAT;
        }
        bool seen = false;
        for (const char *q = buf; *q && !seen;) {
            const char *qe = strchr(q, ',');
            size_t ql = qe ? (size_t)(qe - q) : strlen(q);
            seen = ql == strlen(md->name) && !strncmp(q, md->name, ql);
            q += ql + (qe ? 1 : 0);
        }
        if (!seen) {
            size_t need = strlen(md->name) + 2;
            if (o + need >= len)
                return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': __metadata__ layer_order is too "
                                  "long", path);
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", md->name);
        }
        p = e;
    }
    return CBC_OK;
}

enum cbc_status cbc_mlp_load_safetensors(const char *path, const char *activations,
                                         struct cbc_mlp_owned **out, struct cbc_err *err)
{
    return cbc_mlp_load_safetensors_layers(path, activations, NULL, out, err);
}

/* The modules in the order they run, and where that order came from (for
 * order_hint). */
struct layer_order {
    struct module *at[128];
    size_t n;
    bool from_meta; /* __metadata__ layer_order */
    bool given;     /* --layers */
    bool numbered;  /* the Sequential's indices */
};

/* Every tensor the model reads, to check that no two overlap. */
struct tensor_list {
    const struct tensor *at[256];
    size_t n;
};

/* The header of a file of len bytes: its JSON into *root (the caller
 * deletes it, on error too), the data after it into *data and *data_len. */
static enum cbc_status read_header(const char *path, const uint8_t *file, size_t len,
                                   cJSON **root, const uint8_t **data, uint64_t *data_len,
                                   struct cbc_err *err)
{
    enum cbc_status st = not_safetensors(path, file, len, err);
    if (st != CBC_OK)
        return st;
    if (len < 8)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': %zu bytes; a safetensors file starts with an "
                          "8-byte header length", path, len);
    uint64_t hlen = ig_rd64(file);
    if (hlen > CBC_SAFETENSORS_HEADER_MAX)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': header length %llu is over safetensors' limit "
                          "of %llu bytes: not a safetensors file, or a damaged one", path,
                          (unsigned long long)hlen, (unsigned long long)CBC_SAFETENSORS_HEADER_MAX);
    if (hlen > len - 8)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': header length %llu runs past the end of the "
                          "file (%zu bytes): truncated or not safetensors", path,
                          (unsigned long long)hlen, len);
    *root = cJSON_ParseWithLength((const char *)file + 8, (size_t)hlen);
    if (!cJSON_IsObject(*root))
        return ig_err_set(err, CBC_E_FORMAT, "'%s': the header is not a JSON object", path);
    *data = file + 8 + hlen;
    *data_len = len - 8 - hlen;
    return CBC_OK;
}

/* The modules: the header's tensors grouped by the name before their last
 * '.', into *mods (the caller frees it, on error too) and *nm. */
static enum cbc_status group_modules(const char *path, const cJSON *root, struct module **mods,
                                     size_t *nm, struct cbc_err *err)
{
    int n_entries = cJSON_GetArraySize(root);
    struct module *ms = *mods = calloc(n_entries > 0 ? (size_t)n_entries : 1, sizeof *ms);
    if (!ms)
        return ig_err_oom(err);
    size_t n = 0;
    const cJSON *j;
    cJSON_ArrayForEach(j, root)
    {
        if (!strcmp(j->string, "__metadata__"))
            continue;
        const char *dot = strrchr(j->string, '.');
        const char *param = dot ? dot + 1 : j->string;
        size_t ml = dot ? (size_t)(dot - j->string) : 0;
        if (ml >= sizeof ms[0].name)
            return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor name '%.60s...' is too long",
                              path, j->string);
        struct module *md = NULL;
        for (size_t k = 0; k < n; k++)
            if (strlen(ms[k].name) == ml && !strncmp(ms[k].name, j->string, ml))
                md = &ms[k];
        if (!md) {
            md = &ms[n++];
            memcpy(md->name, j->string, ml);
            md->name[ml] = '\0';
            md->first = UINT64_MAX;
        }
        const cJSON **slot = !strcmp(param, "weight")         ? &md->weight
                             : !strcmp(param, "bias")         ? &md->bias
                             : !strcmp(param, "running_mean") ? &md->mean
                             : !strcmp(param, "running_var")  ? &md->var
                                                              : NULL;
        if (slot)
            *slot = j;
        else if (strcmp(param, "num_batches_tracked") != 0)
            md->other = true, md->other_name = j->string;
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
        const cJSON *b0 = cJSON_IsArray(of) ? cJSON_GetArrayItem(of, 0) : NULL;
        if (cJSON_IsNumber(b0) && b0->valuedouble >= 0 && (uint64_t)b0->valuedouble < md->first)
            md->first = (uint64_t)b0->valuedouble;
    }
    *nm = n;
    return CBC_OK;
}

/* What each module is (Linear, BatchNorm or LayerNorm), and its trailing
 * index; a module of another kind is refused. */
static enum cbc_status classify_modules(const char *path, struct module *mods, size_t nm,
                                        struct cbc_err *err)
{
    for (size_t k = 0; k < nm; k++) {
        struct module *md = &mods[k];
        if (md->other) {
            ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' belongs to no layer igrun "
                       "runs (Linear, BatchNorm1d, LayerNorm)", path, md->other_name);
            ig_err_hint(err, "export ONNX (torch.onnx.export(model, x, 'model.onnx')): igrun "
                             "then names the operator it does not run, or runs it");
            return CBC_E_UNSUPPORTED;
        }
        if (md->mean || md->var) {
            if (!md->mean || !md->var)
                return ig_err_set(err, CBC_E_FORMAT, "'%s': BatchNorm '%s' has running_%s but no "
                                  "running_%s", path, md->name, md->mean ? "mean" : "var",
                                  md->mean ? "var" : "mean");
            md->kind = M_BATCHNORM;
        } else if (md->weight) {
            const cJSON *sh = cJSON_GetObjectItemCaseSensitive(md->weight, "shape");
            int nd = cJSON_GetArraySize(sh);
            enum cbc_status st = refuse_module(path, md, nd, sh, err);
            if (st != CBC_OK)
                return st;
            md->kind = nd == 2 ? M_LINEAR : M_LAYERNORM;
        } else {
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has no '%s.weight' beside it",
                              path, md->bias ? md->bias->string : md->name, md->name);
        }
        char pre[200];
        md->index = trailing_index(md->name, pre, sizeof pre);
    }
    return CBC_OK;
}

/* The modules in the order list names them (--layers, or layer_order's
 * modules), each once, every module of the file named. */
static enum cbc_status order_listed(const char *path, const char *list, struct module *mods,
                                    size_t nm, struct layer_order *lo, struct cbc_err *err)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        struct module *md = NULL;
        for (size_t k = 0; k < nm; k++)
            if (!strcmp(mods[k].name, tok))
                md = &mods[k];
        if (!md) {
            ig_err_set(err, CBC_E_USAGE, "--layers: '%s' is not a layer of '%s'", tok, path);
            ig_err_hint(err, "its layers are the names before '.weight'");
            return CBC_E_USAGE;
        }
        for (size_t k = 0; k < lo->n; k++)
            if (lo->at[k] == md)
                return ig_err_set(err, CBC_E_USAGE, "--layers names '%s' twice", tok);
        if (lo->n == IG_ARRAY_LEN(lo->at))
            return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': more than %zu layers", path,
                              IG_ARRAY_LEN(lo->at));
        lo->at[lo->n++] = md;
    }
    for (size_t k = 0; k < nm; k++) {
        bool listed = false;
        for (size_t q = 0; q < lo->n; q++)
            listed |= lo->at[q] == &mods[k];
        if (!listed)
            return ig_err_set(err, lo->from_meta ? CBC_E_FORMAT : CBC_E_USAGE,
                              "%s does not name '%s', a layer of '%s'",
                              lo->from_meta ? "__metadata__ layer_order" : "--layers",
                              mods[k].name, path);
    }
    return CBC_OK;
}

/* The modules in the order of the Sequential's indices, sorted by them;
 * named modules, more than one, are refused: their order in the file is
 * not the model's. */
static enum cbc_status order_numbered(const char *path, struct module *mods, size_t nm,
                                      struct layer_order *lo, struct cbc_err *err)
{
    bool numbered = nm > 0;
    char p0[200] = "", pk[200];
    for (size_t k = 0; k < nm; k++) {
        if (mods[k].index < 0 || trailing_index(mods[k].name, pk, sizeof pk) < 0) {
            numbered = false;
            break;
        }
        if (k == 0)
            strcpy(p0, pk);
        else if (strcmp(p0, pk) != 0)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' and '%s' have different "
                              "prefixes", path, some_tensor(&mods[0]), some_tensor(&mods[k]));
    }
    if (!numbered && nm > 1) {
        char list[300] = "";
        size_t o = 0;
        for (size_t k = 0; k < nm && k < 4 && o < sizeof list - 80; k++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s'%.60s'", k ? ", " : "",
                                  mods[k].name);
        if (nm > 4)
            snprintf(list + o, sizeof list - o, " and %zu more", nm - 4);
        ig_err_set(err, CBC_E_USAGE, "'%s': its layers (%s) are named, not numbered, "
                   "and the file does not say their order: "
                   "safetensors.torch.save_file sorts tensors by name, so the order in "
                   "the file is not the model's", path, list);
        ig_err_hint(err, "save with save_file(model.state_dict(), path, metadata={"
                         "'layer_order': ','.join(model.state_dict()), ...}), or pass "
                         "--layers with the layers in forward()'s order, or export ONNX "
                         "(torch.onnx.export(model, x, 'model.onnx')), which igrun reads "
                         "from the graph itself");
        return CBC_E_USAGE;
    }
    lo->numbered = numbered;
    qsort(mods, nm, sizeof *mods, cmp_index);
    for (size_t k = 0; numbered && k + 1 < nm; k++)
        if (mods[k].index == mods[k + 1].index)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' and '%s' are both layer "
                              "%ld", path, some_tensor(&mods[k]), some_tensor(&mods[k + 1]),
                              mods[k].index);
    if (nm > IG_ARRAY_LEN(lo->at))
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': more than %zu layers", path,
                          IG_ARRAY_LEN(lo->at));
    for (size_t k = 0; k < nm; k++)
        lo->at[lo->n++] = &mods[k];
    if (!numbered)
        for (size_t k = 0; k < nm; k++)
            mods[k].index = -1;
    return CBC_OK;
}

/* The modules' order: --layers, else __metadata__ layer_order
 * (state_dict()'s), else the Sequential's indices; never the file's own
 * order, which safetensors.torch.save_file sorts by name. */
static enum cbc_status order_modules(const char *path, const cJSON *meta, const char *layers,
                                     struct module *mods, size_t nm, struct layer_order *lo,
                                     struct cbc_err *err)
{
    const cJSON *mo = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "layer_order")
                                           : NULL;
    char meta_order[4096];
    lo->given = layers != NULL;
    if (!layers && cJSON_IsString(mo)) {
        enum cbc_status st = order_from_metadata(path, mo->valuestring, mods, nm, meta_order,
                                                 sizeof meta_order, err);
        if (st != CBC_OK)
            return st;
        layers = meta_order;
        lo->from_meta = true;
    }
    return layers ? order_listed(path, layers, mods, nm, lo, err)
                  : order_numbered(path, mods, nm, lo, err);
}

/* __metadata__ batchnorm_eps and layernorm_eps into *eps and *ln_eps, where
 * the file has them. */
static enum cbc_status read_eps(const char *path, const cJSON *meta, double *eps, double *ln_eps,
                                struct cbc_err *err)
{
    const cJSON *me = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "batchnorm_eps") : NULL;
    const cJSON *mle = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "layernorm_eps") : NULL;
    for (int q = 0; q < 2; q++) {
        const cJSON *e = q ? mle : me;
        if (!cJSON_IsString(e))
            continue;
        char *e2;
        double v = strtod(e->valuestring, &e2);
        if (*e2 || !(v > 0 && v < 1))
            return ig_err_set(err, CBC_E_FORMAT, "'%s': __metadata__ %s '%s' is not a number in "
                              "(0, 1)", path, q ? "layernorm_eps" : "batchnorm_eps",
                              e->valuestring);
        *(q ? ln_eps : eps) = v;
    }
    return CBC_OK;
}

/* A model of nl Linear layers into *mp (the caller frees it, on error too),
 * each with its activation: one per Linear layer, from activations, else
 * from the __metadata__ activations entry. */
static enum cbc_status new_model(const char *path, const char *activations, const cJSON *meta,
                                 size_t nl, struct cbc_mlp_owned **mp, struct cbc_err *err)
{
    const char *acts = activations;
    const cJSON *ma = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "activations") : NULL;
    if (!acts && cJSON_IsString(ma))
        acts = ma->valuestring;
    if (!acts) {
        ig_err_set(err, CBC_E_NOT_FOUND, "'%s': no activations: the file's __metadata__ has "
                   "no 'activations' entry", path);
        ig_err_hint(err, "pass --activations with one per Linear layer, e.g. tanh,tanh,identity");
        return CBC_E_NOT_FOUND;
    }
    struct cbc_mlp_owned *m = *mp = calloc(1, sizeof *m);
    if (!m || !(m->layers = calloc(nl, sizeof *m->layers)) || !(m->activations = ig_strdup(acts)))
        return ig_err_oom(err);
    size_t na = 0;
    char *cur = m->activations;
    for (char *tok = next_activation(&cur); tok; tok = next_activation(&cur)) {
        if (na == nl) {
            ig_err_set(err, CBC_E_SHAPE, "'%s': %zu activations given for %zu Linear layers "
                       "('%s')", path, na + 1, nl, acts);
            ig_err_hint(err, "give one activation per Linear layer, in forward()'s order "
                             "(--activations or the activations metadata)");
            return CBC_E_SHAPE;
        }
        if (!cbc_act_parse_param(tok, &m->layers[na].act, &m->layers[na].act_param)) {
            ig_err_set(err, CBC_E_USAGE, "'%s': unknown activation '%s'", path, tok);
            ig_err_hint(err, "use identity, relu, tanh, sigmoid, gelu, silu, softplus, elu, "
                             "leakyrelu, softmax or logsoftmax (PyTorch's spellings too: "
                             "Identity, ReLU, nn.Tanh, SiLU, LeakyReLU(0.2), ELU(alpha=0.5), "
                             "Softmax(dim=-1), the last one on the last layer only)");
            return CBC_E_USAGE;
        }
        na++;
    }
    if (na != nl) {
        ig_err_set(err, CBC_E_SHAPE, "'%s': %zu activations ('%s') for %zu Linear layers",
                   path, na, acts, nl);
        ig_err_hint(err, "give one activation per Linear layer, in forward()'s order "
                         "(--activations or the activations metadata)");
        return CBC_E_SHAPE;
    }
    free(m->activations);
    m->activations = ig_strdup(acts);
    return CBC_OK;
}

/* The header entry of every tensor the modules use, checked against the
 * data (data_len bytes), and each Linear's shape against its bias and the
 * Linear before it; the tensors into ts, the floats the model's storage
 * needs into *total. */
static enum cbc_status check_shapes(const char *path, const struct layer_order *lo,
                                    uint64_t data_len, struct tensor_list *ts, size_t *total,
                                    struct cbc_err *err)
{
    enum cbc_status st;
    const struct module *prev_lin = NULL;
    for (size_t k = 0; k < lo->n; k++) {
        struct module *md = lo->at[k];
        if (md->kind == M_LINEAR) {
            if ((st = tensor_info(path, md->weight, data_len, &md->tw, err)) != CBC_OK)
                return st;
            if (md->tw.shape[0] < 1 || md->tw.shape[1] < 1)
                return ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' is empty", path,
                                  md->tw.name);
            if (md->bias) {
                if ((st = tensor_info(path, md->bias, data_len, &md->tb, err)) != CBC_OK)
                    return st;
                if (md->tb.ndim != 1 || md->tb.shape[0] != md->tw.shape[0])
                    return ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' must have shape "
                                      "[%lld]", path, md->tb.name, (long long)md->tw.shape[0]);
                ts->at[ts->n++] = &md->tb;
            }
            if (prev_lin && md->tw.shape[1] != prev_lin->tw.shape[0]) {
                ig_err_set(err, CBC_E_SHAPE, "'%s': tensor '%s' [%lld, %lld] takes %lld "
                           "inputs but '%s' [%lld, %lld] gives %lld outputs", path,
                           md->tw.name, (long long)md->tw.shape[0],
                           (long long)md->tw.shape[1], (long long)md->tw.shape[1],
                           prev_lin->tw.name, (long long)prev_lin->tw.shape[0],
                           (long long)prev_lin->tw.shape[1],
                           (long long)prev_lin->tw.shape[0]);
                order_hint(err, lo->at, lo->n, lo->from_meta, lo->given, lo->numbered);
                return CBC_E_SHAPE;
            }
            ts->at[ts->n++] = &md->tw;
            *total += (size_t)(md->tw.shape[0] * md->tw.shape[1]) + (size_t)md->tw.shape[0];
            prev_lin = md;
        } else if (md->kind == M_LAYERNORM) {
            if ((st = tensor_info(path, md->weight, data_len, &md->tw, err)) != CBC_OK ||
                (md->bias && (st = tensor_info(path, md->bias, data_len, &md->tb, err)) != CBC_OK))
                return st;
            ts->at[ts->n++] = &md->tw;
            if (md->bias)
                ts->at[ts->n++] = &md->tb;
            *total += 2 * (size_t)md->tw.shape[0];
        } else {
            if ((st = tensor_info(path, md->mean, data_len, &md->tm, err)) != CBC_OK ||
                (st = tensor_info(path, md->var, data_len, &md->tv, err)) != CBC_OK ||
                (md->weight && (st = tensor_info(path, md->weight, data_len, &md->tw, err)) != CBC_OK) ||
                (md->bias && (st = tensor_info(path, md->bias, data_len, &md->tb, err)) != CBC_OK))
                return st;
            ts->at[ts->n++] = &md->tm;
            ts->at[ts->n++] = &md->tv;
            if (md->weight)
                ts->at[ts->n++] = &md->tw;
            if (md->bias)
                ts->at[ts->n++] = &md->tb;
        }
        if (ts->n > IG_ARRAY_LEN(ts->at) - 4)
            return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': too many tensors", path);
    }
    return CBC_OK;
}

/* The data of two tensors never overlaps (safetensors' own rule): a header
 * that says otherwise lies about at least one of them. */
static enum cbc_status check_overlap(const char *path, const struct tensor_list *ts,
                                     struct cbc_err *err)
{
    const struct tensor *const *all = ts->at;
    for (size_t i = 0; i < ts->n; i++)
        for (size_t k = i + 1; k < ts->n; k++)
            if (all[i]->end > all[i]->begin && all[k]->end > all[k]->begin &&
                all[i]->begin < all[k]->end && all[k]->begin < all[i]->end)
                return ig_err_set(err, CBC_E_FORMAT, "'%s': tensors '%s' (bytes %llu to %llu) and "
                                  "'%s' (bytes %llu to %llu) overlap: the header lies", path,
                                  all[i]->name, (unsigned long long)all[i]->begin,
                                  (unsigned long long)all[i]->end, all[k]->name,
                                  (unsigned long long)all[k]->begin,
                                  (unsigned long long)all[k]->end);
    return CBC_OK;
}

/* The Linear layers' weights and biases (0 where there is none) into
 * layers, their data from *p on; lin_of[i] gets layer i's module. */
static enum cbc_status read_linears(const char *path, const struct layer_order *lo,
                                    const uint8_t *data, struct cbc_mlp_layer *layers,
                                    const struct module **lin_of, float **p, struct cbc_err *err)
{
    enum cbc_status st;
    size_t li = 0;
    for (size_t k = 0; k < lo->n; k++) {
        const struct module *md = lo->at[k];
        if (md->kind != M_LINEAR)
            continue;
        lin_of[li] = md;
        struct cbc_mlp_layer *L = &layers[li++];
        L->out = (int)md->tw.shape[0];
        L->in = (int)md->tw.shape[1];
        if ((st = read_tensor(path, &md->tw, data, *p, err)) != CBC_OK)
            return st;
        L->w = *p;
        *p += (size_t)L->in * (size_t)L->out;
        if (md->bias && (st = read_tensor(path, &md->tb, data, *p, err)) != CBC_OK)
            return st;
        if (!md->bias)
            memset(*p, 0, (size_t)L->out * sizeof **p);
        L->b = *p;
        *p += (size_t)L->out;
    }
    return CBC_OK;
}

/* BatchNorm md over nf features as y = scale x + shift: gamma / sqrt(var +
 * eps) and beta - scale mean (gamma 1 and beta 0 where it has none). */
static enum cbc_status batchnorm_affine(const char *path, const struct module *md,
                                        const uint8_t *data, int64_t nf, double eps,
                                        double *scale, double *shift, struct cbc_err *err)
{
    double *g = malloc((size_t)nf * sizeof *g), *bb = malloc((size_t)nf * sizeof *bb);
    if (!g || !bb) {
        free(g), free(bb);
        return ig_err_oom(err);
    }
    enum cbc_status st = read_vec(path, &md->tm, data, nf, shift, err); /* the mean, for now */
    if (st == CBC_OK)
        st = read_vec(path, &md->tv, data, nf, scale, err); /* the variance */
    for (int64_t i = 0; st == CBC_OK && i < nf; i++)
        g[i] = 1, bb[i] = 0;
    if (st == CBC_OK && md->weight)
        st = read_vec(path, &md->tw, data, nf, g, err);
    if (st == CBC_OK && md->bias)
        st = read_vec(path, &md->tb, data, nf, bb, err);
    for (int64_t i = 0; st == CBC_OK && i < nf; i++) {
        if (!(scale[i] >= 0)) {
            st = ig_err_set(err, CBC_E_NUMERIC, "'%s': tensor '%s' [%lld] is %g: a variance "
                            "is never negative", path, md->tv.name, (long long)i, scale[i]);
            break;
        }
        double sc = g[i] / sqrt(scale[i] + eps);
        shift[i] = bb[i] - sc * shift[i];
        scale[i] = sc;
    }
    free(g), free(bb);
    return st;
}

/* scale and shift folded into layer L: onto its output when after_prev,
 * else onto its input. */
static void fold_affine(struct cbc_mlp_layer *L, bool after_prev, const double *scale,
                        const double *shift)
{
    float *w = (float *)L->w, *bias = (float *)L->b;
    if (after_prev) { /* y = s (W x + b) + t */
        for (int o = 0; o < L->out; o++) {
            for (int i = 0; i < L->in; i++)
                w[(size_t)o * (size_t)L->in + (size_t)i] =
                    (float)(scale[o] * w[(size_t)o * (size_t)L->in + (size_t)i]);
            bias[o] = (float)(scale[o] * bias[o] + shift[o]);
        }
    } else { /* W (s a + t) + b = (W diag s) a + (W t + b) */
        for (int o = 0; o < L->out; o++) {
            double acc = bias[o];
            for (int i = 0; i < L->in; i++) {
                float *wi = &w[(size_t)o * (size_t)L->in + (size_t)i];
                acc += (double)*wi * shift[i];
                *wi = (float)(*wi * scale[i]);
            }
            bias[o] = (float)acc;
        }
    }
}

/* BatchNorm lo->at[k], li Linear layers (of nl) before it, folded into its
 * neighbour: the Linear before it when nothing comes between (Linear,
 * BatchNorm, activation: the usual order; in a numbered Sequential, a gap
 * in the indices is an activation), else the Linear after it. */
static enum cbc_status fold_batchnorm(const char *path, const struct layer_order *lo, size_t k,
                                      size_t li, size_t nl, struct cbc_mlp_layer *layers,
                                      const struct module *const *lin_of, const uint8_t *data,
                                      double eps, struct cbc_err *err)
{
    struct module *const *order = lo->at;
    const struct module *md = order[k];
    if (k > 0 && order[k - 1]->kind == M_LAYERNORM)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': BatchNorm '%s' right after LayerNorm "
                          "'%s' is not taken", path, md->name, order[k - 1]->name);
    bool after_prev = li > 0 && k > 0 && order[k - 1]->kind == M_LINEAR &&
                      (order[k - 1]->index < 0 || md->index == order[k - 1]->index + 1);
    if (!after_prev && li >= nl)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': BatchNorm '%s' follows an activation "
                          "after the last Linear layer: it cannot be folded into one", path,
                          md->name);
    struct cbc_mlp_layer *L = &layers[after_prev ? li - 1 : li];
    int64_t nf = after_prev ? L->out : L->in;
    double *scale = malloc((size_t)nf * sizeof *scale);
    double *shift = malloc((size_t)nf * sizeof *shift);
    enum cbc_status st = scale && shift ? batchnorm_affine(path, md, data, nf, eps, scale, shift,
                                                           err)
                                        : ig_err_oom(err);
    if (st == CBC_E_SHAPE) {
        ig_err_set(err, CBC_E_SHAPE, "'%s': BatchNorm '%s' (tensor '%s') has %lld "
                   "features where '%s', the Linear layer %s it, has %lld %s", path,
                   md->name, md->tm.name, (long long)md->tm.shape[0],
                   lin_of[after_prev ? li - 1 : li]->tw.name,
                   after_prev ? "before" : "after", (long long)nf,
                   after_prev ? "outputs" : "inputs");
        order_hint(err, lo->at, lo->n, lo->from_meta, lo->given, lo->numbered);
    }
    if (st == CBC_OK)
        fold_affine(L, after_prev, scale, shift);
    free(scale), free(shift);
    return st;
}

enum cbc_status cbc_mlp_load_safetensors_layers(const char *path, const char *activations,
                                                const char *layers, struct cbc_mlp_owned **out,
                                                struct cbc_err *err)
{
    uint8_t *file;
    size_t len;
    enum cbc_status st = ig_file_read(path, IG_FILE_MAX, &file, &len, err);
    if (st != CBC_OK)
        return st;
    cJSON *root = NULL;
    struct cbc_mlp_owned *m = NULL;
    struct module *mods = NULL;
    struct layer_order lo = {.n = 0};
    struct tensor_list ts = {.n = 0};
    size_t nm = 0, nl = 0, total = 0;
    const uint8_t *data = NULL;
    uint64_t data_len = 0;
    double eps = 1e-5, ln_eps = 1e-5; /* torch.nn.BatchNorm1d's and LayerNorm's defaults */
    if ((st = read_header(path, file, len, &root, &data, &data_len, err)) != CBC_OK ||
        (st = group_modules(path, root, &mods, &nm, err)) != CBC_OK ||
        (st = classify_modules(path, mods, nm, err)) != CBC_OK)
        goto out;
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    if ((st = order_modules(path, meta, layers, mods, nm, &lo, err)) != CBC_OK)
        goto out;
    for (size_t k = 0; k < lo.n; k++)
        nl += lo.at[k]->kind == M_LINEAR;
    if (!nl) {
        st = ig_err_set(err, CBC_E_NOT_FOUND, "'%s': no Linear layer (a 2-D '<name>.weight' "
                         "tensor): not an MLP's state_dict", path);
        goto out;
    }
    if ((st = read_eps(path, meta, &eps, &ln_eps, err)) != CBC_OK ||
        (st = new_model(path, activations, meta, nl, &m, err)) != CBC_OK ||
        (st = check_shapes(path, &lo, data_len, &ts, &total, err)) != CBC_OK ||
        (st = check_overlap(path, &ts, err)) != CBC_OK)
        goto out;
    m->storage = malloc(sizeof(float) * (total ? total : 1));
    if (!m->storage) {
        st = ig_err_oom(err);
        goto out;
    }
    /* the Linear layers, then each LayerNorm attached to one and each
     * BatchNorm folded into one */
    float *p = m->storage;
    const struct module *lin_of[IG_ARRAY_LEN(lo.at)];
    if ((st = read_linears(path, &lo, data, m->layers, lin_of, &p, err)) != CBC_OK)
        goto out;
    for (size_t k = 0, li = 0; k < lo.n && st == CBC_OK; k++) {
        if (lo.at[k]->kind == M_LINEAR)
            li++;
        else if (lo.at[k]->kind == M_LAYERNORM)
            st = attach_layer_norm(path, lo.at, k, li, m->layers, data, ln_eps, &p, err);
        else
            st = fold_batchnorm(path, &lo, k, li, nl, m->layers, lin_of, data, eps, err);
    }
    if (st != CBC_OK)
        goto out;
    m->mlp.n_layers = (int)nl;
    m->mlp.layers = m->layers;
    st = cbc_mlp_validate(&m->mlp, err);
out:
    cJSON_Delete(root);
    free(file);
    free(mods);
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
    long dims[5];
    int nd = 0;
    const char *c = shape + 1;
    while (c < h + hl && *c != ')' && nd < 5) {
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
    if (nd < 1 || nd > 4)
        return ig_err_set(err, CBC_E_SHAPE, "'%s': a %s-D array; expected 1-D (one input), 2-D "
                           "(inputs x features), or images [n, H, W] or [n, C, H, W]", path,
                           nd > 4 ? "5-or-more" : "0");
    if (nd > 2 && fortran)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': a Fortran-ordered %d-D array; save it "
                          "in C order (numpy.ascontiguousarray)", path, nd);
    size_t rows = nd >= 2 ? (size_t)dims[0] : 1, cols = (size_t)dims[nd - 1];
    for (int k = 1; k < nd - 1; k++) { /* an image's trailing dimensions are its features */
        if (dims[k] && cols > SIZE_MAX / (size_t)dims[k])
            return ig_err_set(err, CBC_E_FORMAT, "'%s': shape too large", path);
        cols *= (size_t)dims[k];
    }

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
            x = ig_half_to_float((uint16_t)u);
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
    out->ndim = nd;
    for (int k = 0; k < 4; k++)
        out->dims[k] = k < nd ? (size_t)dims[k] : 0;
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
    out->ndim = 2;
    out->dims[0] = rows;
    out->dims[1] = cols;
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
    size_t dims[2] = {m->rows, m->cols};
    return cbc_tensor_save_npy(path, m->data, dims, 2, err);
}

enum cbc_status cbc_tensor_save_npy(const char *path, const float *data, const size_t *dims,
                                    int ndim, struct cbc_err *err)
{
    if (ndim < 1 || ndim > 5)
        return ig_err_set(err, CBC_E_USAGE, "'%s': a %d-D array; 1 to 5 dimensions are written",
                          path, ndim);
    char shape[160] = "";
    size_t n = 1, o = 0;
    for (int d = 0; d < ndim; d++) {
        if (dims[d] && n > SIZE_MAX / dims[d])
            return ig_err_oom(err);
        n *= dims[d];
        o += (size_t)snprintf(shape + o, sizeof shape - o, "%zu, ", dims[d]);
    }
    if (ndim > 1)
        shape[o - 1] = '\0'; /* (a, b) not (a, b, ) */
    char head[200];
    int hl = snprintf(head, sizeof head, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
                      shape);
    int total = 10 + hl + 1, pad = (64 - total % 64) % 64;
    size_t hdr = (size_t)(total + pad);
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
        memcpy(&u, &data[i], 4);
        ig_wr32(p, u);
    }
    enum cbc_status st = ig_file_write_atomic(path, b, hdr + 4 * n, 0644, err);
    free(b);
    return st;
}
