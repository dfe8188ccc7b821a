/* onnx.c: models as torch.onnx.export writes them, read from their graph.
 *
 * The file is a protobuf ModelProto (onnx.proto, decoded by protobuf-c
 * with code generated at build time from the .proto Debian ships). Before
 * protobuf-c sees a byte, wire_check() walks the wire format with the
 * generated descriptors and refuses nesting deeper than WIRE_DEPTH_MAX or
 * more than WIRE_MESSAGES_MAX messages (protobuf-c decodes recursively and
 * allocates per message), so a hostile file can neither exhaust the stack
 * nor multiply its size in memory.
 *
 * Then the graph is run symbolically, node by node in the file's
 * (topological) order, onto a chain of layers (struct cbc_mlp_layer): every
 * value of the graph is a constant or a state of the chain, "layer k at
 * version v in phase p". A Gemm or MatMul by a constant opens a layer; an
 * activation, a LayerNorm, a BatchNorm or a Mul/Add/Sub/Div by a constant
 * changes the open layer (folded into its weights before the activation,
 * into its output's scale and shift after), each change a new version; an
 * Add of the open layer's value and an earlier layer's output (or the
 * input) is its residual. A value read after its layer changed, a layer read
 * by two Linears (a branch), or an operator outside that list is refused
 * naming the node. Only nodes the output depends on are run. Two patterns
 * are recognised first: the Erf form of GELU and Sigmoid(x) * x (SiLU),
 * as the TorchScript exporter writes nn.GELU and nn.SiLU.
 *
 * Invariants: every count, dimension and size from the file is checked
 * before it is used (products for overflow, element counts against the
 * bytes that hold them); external data is read only from a regular file
 * in the model's directory, by a name without "..", after its offset and
 * length are checked against that file's size; folding happens in double,
 * and the weights are checked finite before the model is returned.
 */
#include "ig_int.h"

#include "onnx.pb-c.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WIRE_DEPTH_MAX 32          /* model > graph > node > attribute > graph ... */
#define WIRE_MESSAGES_MAX (1u << 20)
#define ONNX_NODES_MAX 65536
#define ONNX_LAYERS_MAX 1024
#define ONNX_ELEMS_MAX (1ull << 31) /* elements of one tensor */

/* What the model takes: the operators igrun runs, for messages. */
#define ONNX_TAKES                                                                                 \
    "Gemm, MatMul, Add/Sub/Mul/Div by constants, a residual Add, Relu, Tanh, Sigmoid, Gelu, "      \
    "SiLU, Softplus, Elu, LeakyRelu, Softmax, LogSoftmax, BatchNormalization, "                    \
    "LayerNormalization, Flatten, Reshape, Identity, Dropout, Constant"

/* ---- the wire format, checked before protobuf-c decodes it --------------- */

struct wire {
    unsigned messages;
    int depth_seen;
};

static bool varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* 0: fine; 1: malformed; 2: too deep; 3: too many messages. */
static int wire_check(const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end,
                      int depth, struct wire *w)
{
    if (depth > WIRE_DEPTH_MAX)
        return 2;
    if (++w->messages > WIRE_MESSAGES_MAX)
        return 3;
    if (depth > w->depth_seen)
        w->depth_seen = depth;
    while (p < end) {
        uint64_t key, v;
        if (!varint(&p, end, &key) || key >> 3 == 0 || key >> 3 > 0x1fffffff)
            return 1;
        switch (key & 7) {
        case 0:
            if (!varint(&p, end, &v))
                return 1;
            break;
        case 1:
            if (end - p < 8)
                return 1;
            p += 8;
            break;
        case 5:
            if (end - p < 4)
                return 1;
            p += 4;
            break;
        case 2: {
            if (!varint(&p, end, &v) || v > (uint64_t)(end - p))
                return 1;
            const ProtobufCFieldDescriptor *f =
                d ? protobuf_c_message_descriptor_get_field(d, (unsigned)(key >> 3)) : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                int r = wire_check(f->descriptor, p, p + v, depth + 1, w);
                if (r)
                    return r;
            }
            p += v;
            break;
        }
        default: return 1; /* groups (3, 4) are not in onnx.proto; 6 and 7 do not exist */
        }
    }
    return 0;
}

/* ---- constants ----------------------------------------------------------------- */

struct cten {
    int ndim;
    int64_t dims[8];
    size_t count;
    double *v; /* every element, converted (integers too) */
};

static const char *str_or(const char *s, const char *dflt)
{
    return s && *s ? s : dflt;
}

static size_t elem_size(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return 2;
    default: return 0;
    }
}

static const char *type_name(int32_t t)
{
    static const char *const names[] = {"UNDEFINED", "FLOAT",  "UINT8",   "INT8",       "UINT16",
                                        "INT16",     "INT32",  "INT64",   "STRING",     "BOOL",
                                        "FLOAT16",   "DOUBLE", "UINT32",  "UINT64",     "COMPLEX64",
                                        "COMPLEX128", "BFLOAT16"};
    return t >= 0 && (size_t)t < IG_ARRAY_LEN(names) ? names[t] : "an unknown type";
}

static double raw_elem(int32_t t, const uint8_t *p)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
        uint32_t u = ig_rd32(p);
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: {
        uint64_t u = ig_rd64(p);
        double d;
        memcpy(&d, &u, 8);
        return d;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return (double)(int32_t)ig_rd32(p);
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return (double)(int64_t)ig_rd64(p);
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return ig_half_to_float(ig_rd16(p));
    default: return ig_bf16_to_float(ig_rd16(p));
    }
}

/* The bytes of an external tensor: `location` in the model's directory,
 * checked (a relative name without "..", a regular file not reached
 * through a final symbolic link, offset and length inside it) before a byte
 * is read. */
static enum cbc_status read_external(const char *path, const Onnx__TensorProto *t, size_t need,
                                     uint8_t **out, struct cbc_err *err)
{
    const char *loc = NULL, *off_s = NULL, *len_s = NULL;
    for (size_t i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (!e || !e->key)
            continue;
        if (!strcmp(e->key, "location"))
            loc = e->value;
        else if (!strcmp(e->key, "offset"))
            off_s = e->value;
        else if (!strcmp(e->key, "length"))
            len_s = e->value;
    }
    const char *name = str_or(t->name, "(unnamed)");
    if (!loc || !*loc)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' is stored outside the file but "
                          "names no location", path, name);
    bool up = loc[0] == '/' || !strncmp(loc, "../", 3) || strstr(loc, "/../") ||
              !strcmp(loc, "..") || (strlen(loc) >= 3 && !strcmp(loc + strlen(loc) - 3, "/.."));
    if (up || strlen(loc) > 1024) {
        ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' is stored in '%.200s', outside the "
                   "model's directory", path, name, loc);
        ig_err_hint(err, "external data must sit beside the model; export again, or save the "
                         "model with onnx.save(model, path, save_as_external_data=False)");
        return CBC_E_FORMAT;
    }
    uint64_t off = 0, len = need;
    char *e2;
    if (off_s) {
        errno = 0;
        unsigned long long v = strtoull(off_s, &e2, 10);
        if (errno || *e2 || e2 == off_s || off_s[0] == '-')
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has external offset '%.40s'",
                              path, name, off_s);
        off = v;
    }
    if (len_s) {
        errno = 0;
        unsigned long long v = strtoull(len_s, &e2, 10);
        if (errno || *e2 || e2 == len_s || len_s[0] == '-')
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has external length '%.40s'",
                              path, name, len_s);
        len = v;
    }
    if (len != need)
        return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has %llu bytes of external data "
                          "but its shape and type need %zu", path, name, (unsigned long long)len,
                          need);
    const char *slash = strrchr(path, '/');
    size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
    char *full = malloc(dl + strlen(loc) + 1);
    if (!full)
        return ig_err_oom(err);
    memcpy(full, path, dl);
    strcpy(full + dl, loc);
    enum cbc_status st = CBC_OK;
    int fd = open(full, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) {
        st = ig_err_set(err, errno == ENOENT ? CBC_E_NOT_FOUND : CBC_E_IO, "'%s': tensor '%s' is "
                        "stored in '%s', which cannot be opened: %s", path, name, full,
                        strerror(errno));
        if (errno == ENOENT)
            ig_err_hint(err, "copy the data file the exporter wrote beside the model");
    } else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        st = ig_err_set(err, CBC_E_IO, "'%s': tensor '%s' is stored in '%s', which is not a "
                        "regular file", path, name, full);
    } else if (off > (uint64_t)sb.st_size || len > (uint64_t)sb.st_size - off) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' takes bytes %llu to %llu of '%s', "
                        "which has %llu (truncated, or not this model's data)", path, name,
                        (unsigned long long)off, (unsigned long long)(off + len), full,
                        (unsigned long long)sb.st_size);
    }
    uint8_t *buf = st == CBC_OK ? malloc(need ? need : 1) : NULL;
    if (st == CBC_OK && !buf)
        st = ig_err_oom(err);
    for (size_t got = 0; st == CBC_OK && got < need;) {
        ssize_t r = pread(fd, buf + got, need - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            st = ig_err_set(err, CBC_E_IO, "cannot read '%s': %s", full,
                            r < 0 ? strerror(errno) : "it shrank");
        else
            got += (size_t)r;
    }
    if (fd >= 0)
        close(fd);
    free(full);
    if (st != CBC_OK) {
        free(buf);
        return st;
    }
    *out = buf;
    return CBC_OK;
}

/* A TensorProto as doubles, every size checked; `what` names it in errors. */
static enum cbc_status tensor_read(const char *path, const Onnx__TensorProto *t, struct cten *c,
                                   struct cbc_err *err)
{
    memset(c, 0, sizeof *c);
    const char *name = str_or(t->name, "(unnamed)");
    if (t->n_dims > IG_ARRAY_LEN(c->dims))
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' has %zu dimensions", path,
                          name, t->n_dims);
    uint64_t count = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0 || (uint64_t)t->dims[i] > ONNX_ELEMS_MAX)
            return ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' has dimension %lld", path,
                              name, (long long)t->dims[i]);
        count *= (uint64_t)t->dims[i];
        if (count > ONNX_ELEMS_MAX)
            return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' has over 2^31 elements",
                              path, name);
        c->dims[i] = t->dims[i];
    }
    c->ndim = (int)t->n_dims;
    c->count = (size_t)count;
    int32_t dt = t->has_data_type ? t->data_type : 0;
    size_t es = elem_size(dt);
    if (!es) {
        ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': tensor '%s' is of type %s", path, name,
                   type_name(dt));
        ig_err_hint(err, "export the model in float32 (model.float()) before torch.onnx.export");
        return CBC_E_UNSUPPORTED;
    }
    /* the data must be there before anything the size of the shape is
     * allocated: a shape is only a claim */
    const uint8_t *raw = NULL;
    uint8_t *ext = NULL;
    enum cbc_status st = CBC_OK;
    size_t need = c->count * es;
    bool typed = false;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        if ((st = read_external(path, t, need, &ext, err)) == CBC_OK)
            raw = ext;
    } else if (t->has_raw_data) {
        if (t->raw_data.len != need)
            st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' holds %zu bytes but its shape "
                            "and type need %zu", path, name, t->raw_data.len, need);
        raw = t->raw_data.data;
    } else {
        size_t have = dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT    ? t->n_float_data
                      : dt == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ? t->n_double_data
                      : dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT64  ? t->n_int64_data
                                                                    : t->n_int32_data;
        if (have != c->count)
            st = ig_err_set(err, CBC_E_FORMAT, "'%s': tensor '%s' holds %zu values but its shape "
                            "needs %zu", path, name, have, c->count);
        typed = true;
    }
    if (st == CBC_OK && !(c->v = malloc((c->count ? c->count : 1) * sizeof *c->v)))
        st = ig_err_oom(err);
    if (st != CBC_OK) {
        free(ext);
        return st;
    }
    if (typed) {
        for (size_t i = 0; st == CBC_OK && i < c->count; i++)
            switch (dt) {
            case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: c->v[i] = t->float_data[i]; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: c->v[i] = t->double_data[i]; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: c->v[i] = (double)t->int64_data[i]; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: c->v[i] = t->int32_data[i]; break;
            case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
                c->v[i] = ig_half_to_float((uint16_t)t->int32_data[i]);
                break;
            default: c->v[i] = ig_bf16_to_float((uint16_t)t->int32_data[i]); break;
            }
    }
    for (size_t i = 0; st == CBC_OK && raw && i < c->count; i++)
        c->v[i] = raw_elem(dt, raw + i * es);
    free(ext);
    for (size_t i = 0; st == CBC_OK && i < c->count; i++)
        if (!isfinite(c->v[i]))
            st = ig_err_set(err, CBC_E_NUMERIC, "'%s': tensor '%s' [%zu] is %g", path, name, i,
                            c->v[i]);
    if (st != CBC_OK) {
        free(c->v);
        c->v = NULL;
    }
    return st;
}

/* ---- the graph's values -------------------------------------------------- */

enum vkind { V_UNDEF, V_CONST, V_CHAIN, V_NET };

/* Where a chain value stands in its layer. */
enum phase {
    PH_INPUT, /* the model's input, before any Linear */
    PH_Z,     /* a Linear's output, before its activation */
    PH_LN,    /* after a LayerNorm before the activation */
    PH_ACT,   /* after the activation */
    PH_LN2,   /* after a LayerNorm after the activation */
    PH_OUT    /* after a scale, shift or residual of the output */
};

struct val {
    const char *name;
    enum vkind kind;
    struct cten c;
    int layer;   /* -1: the input */
    int version; /* of its layer */
    int width;   /* features per row; 0: unknown (an input of unknown shape) */
    int rank;    /* of the input before Flatten/Reshape; V_NET: of the tensor (2 to 4) */
    int64_t dims[8];
    /* V_NET: a value of the network (0 the input, k + 1 node k's) seen as
     * one input's [nc][nh][nw] (rank 2: nc features) */
    int netv, nc, nh, nw;
};

/* A layer while it is built, in double. */
struct blayer {
    char name[128];
    int in, out;
    double *w, *b, *nw, *nb, *mul, *add, *rmul;
    enum cbc_act act;
    double act_param;
    enum cbc_norm norm;
    double eps;
    enum cbc_residual residual;
    int residual_from;
    enum phase phase;
    int version, frozen; /* frozen: the version a later layer reads (-1 while open) */
};

/* Our view of a node: the file's, or a pattern recognised in its place. */
enum synth { SY_NONE, SY_GELU, SY_SILU };

struct node {
    const Onnx__NodeProto *p;
    int index;
    bool skip, live;
    enum synth synth;
    const char *syn_in, *syn_out;
};

/* An open-addressing index of names: slot k holds a name and its entry's
 * position in the table it indexes (for the values, and for the names). */
struct name_index {
    struct {
        const char *name;
        size_t at;
    } *slot;
    size_t cap; /* a power of two, at least twice the entries */
};

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static bool index_init(struct name_index *ix, size_t entries)
{
    for (ix->cap = 16; ix->cap < 2 * entries; ix->cap *= 2)
        ;
    ix->slot = calloc(ix->cap, sizeof *ix->slot);
    return ix->slot != NULL;
}

/* The position of `name`, or SIZE_MAX; with `add` set, a name not there is
 * entered at position `add_at` (the table's next entry). */
static size_t index_at(struct name_index *ix, const char *name, bool add, size_t add_at)
{
    if (!name || !*name || !ix->cap)
        return SIZE_MAX;
    for (size_t i = hash_str(name) & (ix->cap - 1);; i = (i + 1) & (ix->cap - 1)) {
        if (!ix->slot[i].name) {
            if (!add)
                return SIZE_MAX;
            ix->slot[i].name = name, ix->slot[i].at = add_at;
            return add_at;
        }
        if (!strcmp(ix->slot[i].name, name))
            return ix->slot[i].at;
    }
}

/* Every name the nodes mention: its (last) producer and its readers. */
struct name {
    const char *name;
    int producer; /* node index, -1: none */
    int readers;  /* node inputs and graph outputs reading it */
    int reader;   /* the first reading node */
};

struct ctx {
    const char *path;
    struct cbc_err *err;
    const Onnx__GraphProto *g;
    int opset;
    struct val *vals;
    size_t nv, cap;
    struct name_index vix; /* vals by name */
    struct node *nodes;
    size_t nn;
    struct name *names;
    size_t nnames, names_cap;
    struct name_index nix; /* names by name */
    struct blayer *L;
    int nl;
    /* the input: its pending scale and shift (folded into the first Linear) */
    double *in_mul, *in_add;
    int in_width, in_version, in_frozen;
    struct nbuild *nb; /* the network being built (cbc_net_load_onnx) */
};

static size_t readers(const struct ctx *c, const char *name, struct node **first);

static struct val *val_find(struct ctx *c, const char *name)
{
    size_t at = index_at(&c->vix, name, false, 0);
    return at == SIZE_MAX ? NULL : &c->vals[at];
}

/* A new value `name` (a later definition of a name replaces the earlier). */
static struct val *val_new(struct ctx *c, const char *name)
{
    struct val *old = val_find(c, name);
    if (old) {
        free(old->c.v);
        memset(old, 0, sizeof *old);
        old->name = name;
        return old;
    }
    if (c->nv == c->cap || index_at(&c->vix, name, true, c->nv) != c->nv)
        return NULL; /* sized for every definition up front */
    struct val *v = &c->vals[c->nv++];
    memset(v, 0, sizeof *v);
    v->name = name;
    return v;
}

/* ---- messages ---------------------------------------------------------- */

static const char *node_name(const struct node *n, char *buf, size_t len)
{
    if (n->p->name && *n->p->name)
        snprintf(buf, len, "'%.120s'", n->p->name);
    else
        snprintf(buf, len, "#%d", n->index);
    return buf;
}

static const char *node_op(const struct node *n)
{
    return n->synth == SY_GELU ? "Gelu (Erf form)" : n->synth == SY_SILU ? "SiLU (Sigmoid * x)"
                                                                         : str_or(n->p->op_type, "?");
}

/* An error about node n: "'m.onnx': node 'x' (Op): <what>", with the hint. */
static enum cbc_status node_err(struct ctx *c, const struct node *n, enum cbc_status st,
                                const char *hint, const char *fmt, ...) IG_PRINTF(5, 6);
static enum cbc_status node_err(struct ctx *c, const struct node *n, enum cbc_status st,
                                const char *hint, const char *fmt, ...)
{
    char what[600], nb[140];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    ig_err_set(c->err, st, "'%s': node %s (%s): %s", c->path, node_name(n, nb, sizeof nb),
               node_op(n), what);
    if (hint)
        ig_err_hint(c->err, "%s", hint);
    return st;
}

/* ---- attributes ------------------------------------------------------------- */

static const Onnx__AttributeProto *attr(const struct node *n, const char *name)
{
    for (size_t i = 0; i < n->p->n_attribute; i++)
        if (n->p->attribute[i] && n->p->attribute[i]->name &&
            !strcmp(n->p->attribute[i]->name, name))
            return n->p->attribute[i];
    return NULL;
}

static int64_t attr_int(const struct node *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

static double attr_float(const struct node *n, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

/* ---- helpers on layers ---------------------------------------------------- */

static double *dvec(size_t n, double fill)
{
    double *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++)
        v[i] = fill;
    return v;
}

static void blayer_free(struct blayer *L)
{
    free(L->w), free(L->b), free(L->nw), free(L->nb), free(L->mul), free(L->add), free(L->rmul);
}

/* Whether constant k broadcasts over a row of `width` features: a scalar,
 * or [width], [1, width]. *per: its value at j. */
static bool row_const(const struct val *k, int width)
{
    if (k->kind != V_CONST)
        return false;
    if (k->c.count == 1)
        return true;
    if ((int64_t)k->c.count != width || width < 1)
        return false;
    for (int d = 0; d + 1 < k->c.ndim; d++)
        if (k->c.dims[d] != 1)
            return false;
    return k->c.ndim >= 1;
}

static double kat(const struct val *k, int j)
{
    return k->c.count == 1 ? k->c.v[0] : k->c.v[j];
}

/* The value a node reads at input i, or an error naming both. */
static enum cbc_status input_val(struct ctx *c, const struct node *n, size_t i, struct val **out)
{
    const char *name = i < n->p->n_input ? n->p->input[i] : NULL;
    struct val *v = name && *name ? val_find(c, name) : NULL;
    if (!v || v->kind == V_UNDEF)
        return node_err(c, n, CBC_E_FORMAT, "the file's nodes must come in topological order "
                        "(onnx.checker.check_model says so)",
                        "reads '%.120s', which no earlier node, initializer or input gives",
                        name && *name ? name : "(an absent input)");
    *out = v;
    return CBC_OK;
}

/* The chain's state that may change now: the open layer's latest value
 * (or the input's, before the first Linear). */
static bool is_current(const struct ctx *c, const struct val *v)
{
    if (v->kind != V_CHAIN)
        return false;
    if (v->layer < 0)
        return c->nl == 0 && v->version == c->in_version;
    return v->layer == c->nl - 1 && c->L[v->layer].frozen < 0 &&
           v->version == c->L[v->layer].version;
}

static enum cbc_status not_current(struct ctx *c, const struct node *n, const struct val *v)
{
    if (v->kind == V_CONST)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun runs a chain of layers over the input: "
                        "this node's tensor operand must come from the input",
                        "'%.120s' is a constant where the input's path was expected", v->name);
    const char *what = v->layer < 0 ? "the input" : c->L[v->layer].name;
    if (v->layer >= 0 && c->L[v->layer].frozen >= 0 && v->version == c->L[v->layer].frozen)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun runs one chain of layers, with residual "
                        "Adds onto it; a model whose layers branch is not an MLP it can run",
                        "reads '%.120s', the output of layer '%s', which a later layer already "
                        "reads: the graph branches", v->name, what);
    return node_err(c, n, CBC_E_UNSUPPORTED, "igrun runs one chain of layers: each value is used "
                    "by the next operation only (a residual Add may read a finished layer's "
                    "output)", "reads '%.120s', an earlier state of %s%s%s that has changed since",
                    v->name, v->layer < 0 ? "" : "layer '", what, v->layer < 0 ? "" : "'");
}

/* The output of node n: a new version of the chain at layer `layer`. */
static enum cbc_status chain_out(struct ctx *c, const struct node *n, const char *name, int layer,
                                 int width)
{
    struct val *o = val_new(c, name);
    if (!o)
        return ig_err_oom(c->err);
    o->kind = V_CHAIN;
    o->layer = layer;
    o->width = width;
    o->rank = 2;
    if (layer < 0)
        o->version = ++c->in_version;
    else
        o->version = ++c->L[layer].version;
    (void)n;
    return CBC_OK;
}

/* v * m + t elementwise on the current value (m, t: [width] or NULL), folded
 * where the phase says. */
static enum cbc_status affine(struct ctx *c, const struct node *n, const struct val *v,
                              const double *m, const double *t, const char *out)
{
    int w = v->width;
    if (v->layer < 0) {
        if (w < 1)
            return node_err(c, n, CBC_E_UNSUPPORTED, "give the exported input a fixed shape "
                            "[batch, features]", "the input's width is not known here");
        for (int j = 1; v->rank != 2 && j < w; j++)
            if ((m && m[j] != m[0]) || (t && t[j] != t[0]))
                return node_err(c, n, CBC_E_UNSUPPORTED, "flatten the input first "
                                "(x.flatten(1)), or scale it by one number",
                                "scales an input of %d dimensions feature by feature", v->rank);
        if (!c->in_mul && (!(c->in_mul = dvec((size_t)w, 1)) || !(c->in_add = dvec((size_t)w, 0))))
            return ig_err_oom(c->err);
        for (int j = 0; j < w; j++) {
            double mj = m ? m[j] : 1;
            c->in_mul[j] *= mj;
            c->in_add[j] = c->in_add[j] * mj + (t ? t[j] : 0);
        }
        int rank = v->rank;
        int64_t dims[8];
        memcpy(dims, v->dims, sizeof dims);
        enum cbc_status st = chain_out(c, n, out, -1, w);
        struct val *o = val_find(c, out);
        if (st == CBC_OK && o) {
            o->rank = rank;
            memcpy(o->dims, dims, sizeof dims);
        }
        return st;
    }
    struct blayer *L = &c->L[v->layer];
    switch (L->phase) {
    case PH_Z: /* into the Linear: W, b and a residual before the activation */
        for (int o = 0; o < L->out; o++) {
            double mo = m ? m[o] : 1;
            for (int i = 0; m && i < L->in; i++)
                L->w[(size_t)o * (size_t)L->in + (size_t)i] *= mo;
            L->b[o] = L->b[o] * mo + (t ? t[o] : 0);
            if (L->rmul)
                L->rmul[o] *= mo;
        }
        break;
    case PH_LN: /* into the LayerNorm's affine */
        for (int o = 0; o < L->out; o++) {
            double mo = m ? m[o] : 1;
            L->nw[o] *= mo;
            L->nb[o] = L->nb[o] * mo + (t ? t[o] : 0);
        }
        break;
    default: /* the output's scale and shift */
        if (!L->mul && (!(L->mul = dvec((size_t)L->out, 1)) || !(L->add = dvec((size_t)L->out, 0))))
            return ig_err_oom(c->err);
        for (int o = 0; o < L->out; o++) {
            double mo = m ? m[o] : 1;
            L->mul[o] *= mo;
            L->add[o] = L->add[o] * mo + (t ? t[o] : 0);
            if (L->rmul && L->residual == CBC_RESIDUAL_AFTER)
                L->rmul[o] *= mo;
        }
        L->phase = PH_OUT;
        break;
    }
    return chain_out(c, n, out, v->layer, w);
}

/* ---- the operators ------------------------------------------------------ */

/* Gemm or MatMul: a new layer reading the current value. */
static enum cbc_status op_linear(struct ctx *c, const struct node *n, bool gemm)
{
    struct val *a, *bw, *bc = NULL;
    enum cbc_status st;
    if ((st = input_val(c, n, 0, &a)) != CBC_OK || (st = input_val(c, n, 1, &bw)) != CBC_OK)
        return st;
    if (gemm && n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
        (st = input_val(c, n, 2, &bc)) != CBC_OK)
        return st;
    if (!is_current(c, a))
        return not_current(c, n, a);
    if (bw->kind != V_CONST || bw->c.ndim != 2)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a Linear's weight as a constant "
                        "of the model (an initializer)", "its weight '%.120s' is not a 2-D "
                        "constant", bw->name);
    bool tb = gemm && attr_int(n, "transB", 0), ta = gemm && attr_int(n, "transA", 0);
    if (ta)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "transA=1 is not a Linear layer");
    double alpha = gemm ? attr_float(n, "alpha", 1) : 1, beta = gemm ? attr_float(n, "beta", 1) : 1;
    int64_t out = tb ? bw->c.dims[0] : bw->c.dims[1], in = tb ? bw->c.dims[1] : bw->c.dims[0];
    if (out < 1 || in < 1 || out > INT32_MAX / 64 || in > INT32_MAX / 64)
        return node_err(c, n, CBC_E_SHAPE, NULL, "weight '%.120s' has shape [%lld, %lld]",
                        bw->name, (long long)bw->c.dims[0], (long long)bw->c.dims[1]);
    if (a->layer < 0 && a->rank != 2 && !(a->rank == 1 && !gemm))
        return node_err(c, n, CBC_E_UNSUPPORTED, "flatten the input first: x.flatten(1) or "
                        "nn.Flatten() in the model", "reads the input of %d dimensions",
                        a->rank);
    if (a->width > 0 && a->width != in)
        return node_err(c, n, CBC_E_SHAPE, NULL, "weight '%.120s' of shape [%lld, %lld] takes "
                        "%lld inputs, but '%.120s' has %d", bw->name, (long long)bw->c.dims[0],
                        (long long)bw->c.dims[1], (long long)in, a->name, a->width);
    if (bc && !row_const(bc, (int)out))
        return node_err(c, n, CBC_E_SHAPE, NULL, "bias '%.120s' has %zu values for %lld outputs",
                        bc->name, bc->c.count, (long long)out);
    if (c->nl == ONNX_LAYERS_MAX)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "more than %d layers", ONNX_LAYERS_MAX);
    /* the layer before it is finished: a later residual may read its output */
    if (a->layer >= 0) {
        struct blayer *P = &c->L[a->layer];
        P->frozen = P->version;
    } else {
        c->in_frozen = c->in_version;
        if (!a->width)
            a->width = (int)in;
        if (!c->in_width)
            c->in_width = (int)in;
    }
    struct blayer *L = &c->L[c->nl];
    memset(L, 0, sizeof *L);
    L->frozen = -1;
    L->in = (int)in, L->out = (int)out;
    L->phase = PH_Z;
    L->residual_from = 0;
    const char *wn = bw->name;
    size_t wl = strlen(wn);
    if (wl > 7 && !strcmp(wn + wl - 7, ".weight") && wl - 7 < sizeof L->name)
        snprintf(L->name, sizeof L->name, "%.*s", (int)(wl - 7), wn);
    else if (n->p->name && *n->p->name)
        snprintf(L->name, sizeof L->name, "%.120s", n->p->name);
    else
        snprintf(L->name, sizeof L->name, "%.120s", wn);
    size_t ne = (size_t)in * (size_t)out;
    L->w = malloc(ne * sizeof *L->w);
    L->b = dvec((size_t)out, 0);
    if (!L->w || !L->b) {
        blayer_free(L);
        return ig_err_oom(c->err);
    }
    c->nl++; /* owned by the context from here */
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++)
            L->w[(size_t)o * (size_t)in + (size_t)i] =
                alpha * bw->c.v[tb ? (size_t)o * (size_t)in + (size_t)i
                                   : (size_t)i * (size_t)out + (size_t)o];
    for (int64_t o = 0; bc && o < out; o++)
        L->b[o] = beta * kat(bc, (int)o);
    if (a->layer < 0 && c->in_mul) { /* W (m x + t) + b = (W diag m) x + (W t + b) */
        for (int64_t o = 0; o < out; o++) {
            double acc = L->b[o];
            for (int64_t i = 0; i < in; i++) {
                double *wi = &L->w[(size_t)o * (size_t)in + (size_t)i];
                acc += *wi * c->in_add[i];
                *wi *= c->in_mul[i];
            }
            L->b[o] = acc;
        }
    }
    L->version = -1;
    return chain_out(c, n, n->p->output[0], c->nl - 1, (int)out);
}

static enum cbc_status op_activation(struct ctx *c, const struct node *n, enum cbc_act act,
                                     double param, const char *in_name)
{
    struct val *v = val_find(c, in_name);
    if (!v || v->kind == V_UNDEF) {
        struct val *dummy;
        return input_val(c, n, 0, &dummy);
    }
    if (!is_current(c, v))
        return not_current(c, n, v);
    if (v->layer < 0)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun applies activations to a Linear's "
                        "output", "is applied to the input, before any Linear layer");
    struct blayer *L = &c->L[v->layer];
    if (L->phase != PH_Z && L->phase != PH_LN)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes one activation per Linear layer, "
                        "after its LayerNorm if any",
                        "follows layer '%s''s %s%s: a second activation in one layer", L->name,
                        L->phase == PH_OUT ? "scaling or residual after " : "",
                        cbc_act_name(L->act));
    L->act = act;
    L->act_param = param;
    L->phase = PH_ACT;
    return chain_out(c, n, n->syn_out ? n->syn_out : n->p->output[0], v->layer, v->width);
}

/* Softmax or LogSoftmax over the last axis. */
static enum cbc_status op_softmax(struct ctx *c, const struct node *n, enum cbc_act act)
{
    int64_t axis = attr_int(n, "axis", c->opset >= 13 ? -1 : 1);
    if (axis != -1 && axis != 1)
        return node_err(c, n, CBC_E_UNSUPPORTED, "use dim=-1 (each input's outputs)",
                        "is taken over axis %lld", (long long)axis);
    return op_activation(c, n, act, 0, n->p->input[0]);
}

/* BatchNormalization (inference): x s + t, s = gamma / sqrt(var + eps). */
static enum cbc_status op_batchnorm(struct ctx *c, const struct node *n)
{
    struct val *x, *k[4];
    enum cbc_status st = input_val(c, n, 0, &x);
    for (size_t i = 0; st == CBC_OK && i < 4; i++)
        st = input_val(c, n, i + 1, &k[i]);
    if (st != CBC_OK)
        return st;
    if (attr_int(n, "training_mode", 0))
        return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before torch.onnx.export",
                        "is in training mode");
    struct node *r;
    for (size_t i = 1; i < n->p->n_output; i++)
        if (readers(c, n->p->output[i], &r))
            return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before torch.onnx.export",
                            "outputs its running statistics (training mode)");
    if (!is_current(c, x))
        return not_current(c, n, x);
    for (int i = 0; i < 4; i++)
        if (!row_const(k[i], x->width) || k[i]->c.count != (size_t)x->width)
            return node_err(c, n, CBC_E_SHAPE, NULL, "'%.120s' has %zu values for %d features",
                            k[i]->name, k[i]->kind == V_CONST ? k[i]->c.count : 0, x->width);
    double eps = attr_float(n, "epsilon", 1e-5);
    if (!(eps >= 0 && eps < 1))
        return node_err(c, n, CBC_E_NUMERIC, NULL, "epsilon %g", eps);
    double *m = dvec((size_t)x->width, 1), *t = dvec((size_t)x->width, 0);
    if (!m || !t) {
        free(m), free(t);
        return ig_err_oom(c->err);
    }
    for (int j = 0; j < x->width && st == CBC_OK; j++) {
        double var = k[3]->c.v[j];
        if (!(var >= 0))
            st = node_err(c, n, CBC_E_NUMERIC, NULL, "variance '%.120s' [%d] is %g", k[3]->name,
                          j, var);
        m[j] = k[0]->c.v[j] / sqrt(var + eps);
        t[j] = k[1]->c.v[j] - m[j] * k[2]->c.v[j];
    }
    if (st == CBC_OK)
        st = affine(c, n, x, m, t, n->p->output[0]);
    free(m), free(t);
    return st;
}

static enum cbc_status op_layernorm(struct ctx *c, const struct node *n)
{
    struct val *x, *sc, *bi = NULL;
    enum cbc_status st;
    if ((st = input_val(c, n, 0, &x)) != CBC_OK || (st = input_val(c, n, 1, &sc)) != CBC_OK)
        return st;
    if (n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
        (st = input_val(c, n, 2, &bi)) != CBC_OK)
        return st;
    struct node *r;
    for (size_t i = 1; i < n->p->n_output; i++)
        if (readers(c, n->p->output[i], &r))
            return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "its mean or inverse deviation is "
                            "used");
    if (!is_current(c, x))
        return not_current(c, n, x);
    int64_t axis = attr_int(n, "axis", -1);
    if (axis != -1 && axis != 1)
        return node_err(c, n, CBC_E_UNSUPPORTED, "normalise each input's features (the last "
                        "axis)", "normalises from axis %lld", (long long)axis);
    if (x->layer < 0)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a LayerNorm right after a Linear "
                        "layer (before or after its activation)", "normalises the input");
    struct blayer *L = &c->L[x->layer];
    if (L->phase != PH_Z && L->phase != PH_ACT)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a LayerNorm right after a Linear "
                        "layer, before or after its activation, and before any scaling or "
                        "residual", "follows layer '%s''s %s", L->name,
                        L->phase == PH_OUT ? "scaling or residual" : "LayerNorm");
    if (!row_const(sc, L->out) || (bi && !row_const(bi, L->out)))
        return node_err(c, n, CBC_E_SHAPE, NULL, "its scale or bias does not have %d values",
                        L->out);
    double eps = attr_float(n, "epsilon", 1e-5);
    if (!(eps > 0 && eps < 1))
        return node_err(c, n, CBC_E_NUMERIC, NULL, "epsilon %g", eps);
    L->nw = dvec((size_t)L->out, 1);
    L->nb = dvec((size_t)L->out, 0);
    if (!L->nw || !L->nb)
        return ig_err_oom(c->err);
    for (int j = 0; j < L->out; j++) {
        L->nw[j] = kat(sc, j);
        L->nb[j] = bi ? kat(bi, j) : 0;
    }
    L->eps = eps;
    L->norm = L->phase == PH_Z ? CBC_NORM_BEFORE_ACT : CBC_NORM_AFTER_ACT;
    L->phase = L->phase == PH_Z ? PH_LN : PH_LN2;
    return chain_out(c, n, n->p->output[0], x->layer, x->width);
}

/* Add, Sub, Mul, Div: by a constant, or (Add) a residual. */
static enum cbc_status op_binary(struct ctx *c, const struct node *n, char op)
{
    struct val *a, *b;
    enum cbc_status st;
    if ((st = input_val(c, n, 0, &a)) != CBC_OK || (st = input_val(c, n, 1, &b)) != CBC_OK)
        return st;
    if (a->kind == V_CONST && b->kind == V_CONST)
        return node_err(c, n, CBC_E_UNSUPPORTED, "export with do_constant_folding=True (the "
                        "default)", "combines two constants");
    if (a->kind == V_CHAIN && b->kind == V_CHAIN) {
        if (op != '+')
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes an Add of two tensors as a "
                            "residual connection; Sub, Mul and Div only by constants",
                            "takes two tensors of the graph ('%.120s', '%.120s')", a->name,
                            b->name);
        struct val *main = is_current(c, a) ? a : is_current(c, b) ? b : NULL;
        struct val *src = main == a ? b : a;
        if (!main)
            return not_current(c, n, a);
        if (main->layer < 0)
            return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "adds to the input before any layer");
        struct blayer *L = &c->L[main->layer];
        bool src_ok = src->kind == V_CHAIN &&
                      (src->layer < 0 ? src->version == 0 && c->in_frozen >= 0 /* raw x */
                                      : src->layer < main->layer &&
                                            src->version == c->L[src->layer].frozen);
        if (!src_ok)
            return node_err(c, n, CBC_E_UNSUPPORTED, "a residual Add must add the output of an "
                            "earlier layer (or the input itself, unscaled) to the current one",
                            "adds '%.120s', which is not an earlier layer's output", src->name);
        if (src->width != L->out)
            return node_err(c, n, CBC_E_SHAPE, NULL, "adds '%.120s' (%d features) to layer "
                            "'%s' (%d outputs)", src->name, src->width, L->name, L->out);
        if (L->residual != CBC_RESIDUAL_NONE)
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes one residual Add per layer",
                            "adds a second residual to layer '%s'", L->name);
        if (L->phase == PH_LN)
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a residual Add before the "
                            "LayerNorm or after the activation", "adds a residual between "
                            "layer '%s''s LayerNorm and its activation", L->name);
        if (!(L->rmul = dvec((size_t)L->out, 1)))
            return ig_err_oom(c->err);
        L->residual = L->phase == PH_Z ? CBC_RESIDUAL_BEFORE_ACT : CBC_RESIDUAL_AFTER;
        L->residual_from = src->layer;
        if (L->phase != PH_Z)
            L->phase = PH_OUT;
        return chain_out(c, n, n->p->output[0], main->layer, main->width);
    }
    struct val *v = a->kind == V_CHAIN ? a : b, *k = a->kind == V_CHAIN ? b : a;
    bool k_left = k == a;
    if (!is_current(c, v))
        return not_current(c, n, v);
    if (v->width < 1 || !row_const(k, v->width))
        return node_err(c, n, CBC_E_SHAPE, "igrun takes constants that are one number or one "
                        "per feature", "constant '%.120s' (%zu values) does not fit a row of %d",
                        k->name, k->c.count, v->width);
    if (op == '/' && k_left)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "divides a constant by the input's path");
    size_t w = (size_t)v->width;
    double *m = NULL, *t = NULL;
    if (op == '+' || op == '-')
        t = dvec(w, 0);
    if (op == '*' || op == '/' || (op == '-' && k_left))
        m = dvec(w, 1);
    if ((!m && (op == '*' || op == '/')) || (!t && (op == '+' || op == '-'))) {
        free(m), free(t);
        return ig_err_oom(c->err);
    }
    for (size_t j = 0; j < w && st == CBC_OK; j++) {
        double kv = kat(k, (int)j);
        switch (op) {
        case '+': t[j] = kv; break;
        case '-':
            if (k_left)
                m[j] = -1, t[j] = kv; /* k - v */
            else
                t[j] = -kv;
            break;
        case '*': m[j] = kv; break;
        default:
            if (kv == 0)
                st = node_err(c, n, CBC_E_NUMERIC, NULL, "divides by 0 ('%.120s')", k->name);
            m[j] = 1 / kv;
        }
    }
    if (st == CBC_OK)
        st = affine(c, n, v, m, t, n->p->output[0]);
    free(m), free(t);
    return st;
}

/* Flatten and Reshape: of the input to [batch, features], or no-ops. */
static enum cbc_status op_shape(struct ctx *c, const struct node *n, bool flatten)
{
    struct val *x, *sh = NULL;
    enum cbc_status st = input_val(c, n, 0, &x);
    if (st == CBC_OK && !flatten)
        st = input_val(c, n, 1, &sh);
    if (st != CBC_OK)
        return st;
    if (x->kind == V_CONST) { /* a constant reshaped: same values (copied first: the
                                 output may be the input's own name) */
        size_t count = x->c.count;
        double *v = malloc((count ? count : 1) * sizeof *v);
        if (!v)
            return ig_err_oom(c->err);
        memcpy(v, x->c.v, count * sizeof *v);
        struct val *o = val_new(c, n->p->output[0]);
        if (!o) {
            free(v);
            return ig_err_oom(c->err);
        }
        o->kind = V_CONST;
        o->c.v = v;
        o->c.count = count;
        o->c.ndim = 1;
        o->c.dims[0] = (int64_t)count;
        return CBC_OK;
    }
    if (!is_current(c, x))
        return not_current(c, n, x);
    int width;
    if (x->layer < 0 && x->rank != 2) {
        uint64_t f = 1;
        for (int d = 1; d < x->rank; d++) {
            if (x->dims[d] < 1)
                return node_err(c, n, CBC_E_UNSUPPORTED, "export with an input of fixed shape "
                                "(dynamic axes on the batch only)", "flattens an input whose "
                                "dimension %d is not known", d);
            f *= (uint64_t)x->dims[d];
            if (f > INT32_MAX / 64)
                return node_err(c, n, CBC_E_SHAPE, NULL, "flattens to over 2^25 features");
        }
        width = (int)f;
    } else {
        width = x->width;
    }
    if (flatten && attr_int(n, "axis", 1) != 1)
        return node_err(c, n, CBC_E_UNSUPPORTED, "flatten from dimension 1 (x.flatten(1))",
                        "flattens from axis %lld", (long long)attr_int(n, "axis", 1));
    if (!flatten) {
        if (sh->kind != V_CONST || sh->c.count != 2)
            return node_err(c, n, CBC_E_UNSUPPORTED, "reshape to [batch, features] with a "
                            "constant shape: x.flatten(1) exports so",
                            "reshapes to a shape that is not two constant numbers");
        double s1 = sh->c.v[1];
        if (!(s1 == -1 || s1 == width))
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun runs rows of features: reshape "
                            "only to [batch, features]", "reshapes rows of %d features to [%g, "
                            "%g]", width, sh->c.v[0], s1);
    }
    /* a shape change, not a value change: the same version */
    int layer = x->layer, version = x->version;
    struct val *o = val_new(c, n->p->output[0]);
    if (!o)
        return ig_err_oom(c->err);
    o->kind = V_CHAIN;
    o->layer = layer;
    o->version = version;
    o->width = width;
    o->rank = 2;
    return CBC_OK;
}

/* Identity, Dropout (inference), Cast to float: the same value. */
static enum cbc_status op_alias(struct ctx *c, const struct node *n)
{
    struct val *x;
    enum cbc_status st = input_val(c, n, 0, &x);
    if (st != CBC_OK)
        return st;
    if (!strcmp(n->p->op_type, "Dropout")) {
        struct val *tm;
        if (n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
            input_val(c, n, 2, &tm) == CBC_OK && tm->kind == V_CONST && tm->c.count == 1 &&
            tm->c.v[0] != 0)
            return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before torch.onnx.export",
                            "is in training mode");
        struct node *r;
        if (n->p->n_output > 1 && readers(c, n->p->output[1], &r))
            return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before "
                            "torch.onnx.export", "its mask is used");
    }
    /* copied before the output is made: it may be the input's own name */
    struct val copy = *x;
    double *data = NULL;
    if (copy.kind == V_CONST) {
        if (!(data = malloc((copy.c.count ? copy.c.count : 1) * sizeof *data)))
            return ig_err_oom(c->err);
        memcpy(data, copy.c.v, copy.c.count * sizeof *data);
    }
    struct val *o = val_new(c, n->p->output[0]);
    if (!o) {
        free(data);
        return ig_err_oom(c->err);
    }
    const char *name = o->name;
    *o = copy;
    o->name = name;
    o->c.v = data;
    return CBC_OK;
}

/* Constant: its value attribute as a constant tensor. */
static enum cbc_status op_constant(struct ctx *c, const struct node *n)
{
    const Onnx__AttributeProto *a = attr(n, "value");
    struct cten t = {0};
    enum cbc_status st = CBC_OK;
    const Onnx__AttributeProto *f = attr(n, "value_float"), *fs = attr(n, "value_floats"),
                               *i1 = attr(n, "value_int"), *is = attr(n, "value_ints");
    if (a && a->t) {
        st = tensor_read(c->path, a->t, &t, c->err);
    } else if ((f && f->has_f) || (i1 && i1->has_i)) {
        t.v = malloc(sizeof *t.v);
        t.count = 1;
        if (t.v)
            t.v[0] = f && f->has_f ? f->f : (double)i1->i;
    } else if ((fs && fs->n_floats) || (is && is->n_ints)) {
        t.count = fs && fs->n_floats ? fs->n_floats : is->n_ints;
        t.ndim = 1;
        t.dims[0] = (int64_t)t.count;
        t.v = malloc(t.count * sizeof *t.v);
        for (size_t k = 0; t.v && k < t.count; k++)
            t.v[k] = fs && fs->n_floats ? fs->floats[k] : (double)is->ints[k];
    } else {
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "holds no numeric value igrun reads");
    }
    if (st == CBC_OK && !t.v)
        st = ig_err_oom(c->err);
    if (st != CBC_OK)
        return st;
    if (n->p->n_output < 1) {
        free(t.v);
        return node_err(c, n, CBC_E_FORMAT, NULL, "has no output");
    }
    struct val *o = val_new(c, n->p->output[0]);
    if (!o) {
        free(t.v);
        return ig_err_oom(c->err);
    }
    o->kind = V_CONST;
    o->c = t;
    return CBC_OK;
}

/* Transpose of a 2-D constant (a weight the exporter did not fold). */
static enum cbc_status op_transpose(struct ctx *c, const struct node *n)
{
    struct val *x;
    enum cbc_status st = input_val(c, n, 0, &x);
    if (st != CBC_OK)
        return st;
    if (x->kind != V_CONST || x->c.ndim != 2)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun runs rows of features: it transposes "
                        "2-D constants (weights) only", "transposes '%.120s'", x->name);
    int64_t r = x->c.dims[0], k = x->c.dims[1];
    double *v = malloc((x->c.count ? x->c.count : 1) * sizeof *v);
    if (!v)
        return ig_err_oom(c->err);
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < k; j++)
            v[(size_t)j * (size_t)r + (size_t)i] = x->c.v[(size_t)i * (size_t)k + (size_t)j];
    struct val *o = val_new(c, n->p->output[0]);
    if (!o) {
        free(v);
        return ig_err_oom(c->err);
    }
    o->kind = V_CONST;
    o->c.v = v;
    o->c.count = (size_t)(r * k);
    o->c.ndim = 2;
    o->c.dims[0] = k, o->c.dims[1] = r;
    return CBC_OK;
}

/* What to say about an operator igrun does not run. */
static const char *unsupported_hint(const char *op)
{
    if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MaxPool") ||
        !strcmp(op, "AveragePool") || !strcmp(op, "GlobalAveragePool"))
        return "a convolutional network: cbc_onnx_load or cbc_net_load_onnx reads it as one "
               "(igrun --model does)";
    if (!strcmp(op, "Gather"))
        return "an embedding lookup (nn.Embedding) reads integer inputs: igrun explains "
               "float features; attribute to the embeddings' output with Captum's "
               "LayerIntegratedGradients";
    if (!strcmp(op, "PRelu"))
        return "igrun has no PReLU: use nn.LeakyReLU(slope) with the learned slope, or "
               "explain with Captum";
    if (!strcmp(op, "Shape") || !strcmp(op, "Concat") || !strcmp(op, "Unsqueeze") ||
        !strcmp(op, "Slice"))
        return "a shape computed at run time (x.view(x.size(0), -1)): write x.flatten(1) or "
               "nn.Flatten() instead";
    if (!strcmp(op, "ReduceMean") || !strcmp(op, "Pow") || !strcmp(op, "Sqrt"))
        return "a LayerNorm exported in pieces: export with opset_version=17 or later, which "
               "has LayerNormalization";
    return "igrun runs: " ONNX_TAKES;
}

/* Whether run_node knows operator `op` (of the standard domain). */
static bool known_op(const char *op)
{
    static const char *const ops[] = {
        "Relu",    "Tanh",    "Sigmoid", "Softplus", "Elu",     "LeakyRelu",          "Gelu",
        "Softmax", "LogSoftmax", "Gemm", "MatMul",   "Add",     "Sub",                "Mul",
        "Div",     "BatchNormalization", "LayerNormalization",  "Flatten",            "Reshape",
        "Identity", "Dropout", "Cast",   "Constant", "Transpose"};
    for (size_t i = 0; i < IG_ARRAY_LEN(ops); i++)
        if (!strcmp(op, ops[i]))
            return true;
    return false;
}

/* Whether operator op is an elementwise activation: *act and its parameter
 * (PyTorch's spelling of LeakyRelu(0) is ReLU), or an error in *st naming
 * the node (a parameter out of range, the tanh form of GELU). */
static bool activation_of(struct ctx *c, const struct node *n, const char *op, enum cbc_act *act,
                          double *param, enum cbc_status *st)
{
    static const struct {
        const char *name;
        enum cbc_act act;
    } acts[] = {{"Relu", CBC_ACT_RELU},         {"Tanh", CBC_ACT_TANH},
                {"Sigmoid", CBC_ACT_SIGMOID},   {"Softplus", CBC_ACT_SOFTPLUS},
                {"Elu", CBC_ACT_ELU},           {"LeakyRelu", CBC_ACT_LEAKY_RELU},
                {"Gelu", CBC_ACT_GELU}};
    *st = CBC_OK;
    for (size_t i = 0; i < IG_ARRAY_LEN(acts); i++) {
        if (strcmp(op, acts[i].name))
            continue;
        double p = 0;
        if (acts[i].act == CBC_ACT_ELU)
            p = attr_float(n, "alpha", 1.0);
        if (acts[i].act == CBC_ACT_LEAKY_RELU)
            p = attr_float(n, "alpha", 0.01);
        const Onnx__AttributeProto *ap = attr(n, "approximate");
        if (!isfinite(p) || fabs(p) > 1e6)
            *st = node_err(c, n, CBC_E_NUMERIC, NULL, "alpha %g", p);
        else if (acts[i].act == CBC_ACT_GELU && ap && ap->has_s &&
                 !(ap->s.len == 4 && !memcmp(ap->s.data, "none", 4)))
            *st = node_err(c, n, CBC_E_UNSUPPORTED, "use nn.GELU() (approximate='none')",
                           "is the tanh approximation of GELU");
        *act = acts[i].act == CBC_ACT_LEAKY_RELU && p == 0 ? CBC_ACT_RELU : acts[i].act;
        *param = *act == CBC_ACT_RELU ? 0 : p;
        return true;
    }
    return false;
}

static enum cbc_status run_node(struct ctx *c, struct node *n)
{
    const char *op = str_or(n->p->op_type, "");
    const char *dom = str_or(n->p->domain, "");
    if (n->synth == SY_GELU)
        return op_activation(c, n, CBC_ACT_GELU, 0, n->syn_in);
    if (n->synth == SY_SILU)
        return op_activation(c, n, CBC_ACT_SILU, 0, n->syn_in);
    if (*dom && strcmp(dom, "ai.onnx"))
        return node_err(c, n, CBC_E_UNSUPPORTED, "export with the standard operators (the "
                        "dynamo exporter's model.optimize() inlines its functions)",
                        "is an operator of domain '%.80s'", dom);
    if (n->p->n_output < 1 || !n->p->output[0] || !*n->p->output[0])
        return node_err(c, n, CBC_E_FORMAT, NULL, "has no output");
    if (n->p->n_input < 1 && strcmp(op, "Constant"))
        return node_err(c, n, CBC_E_FORMAT, NULL, "has no input");
    enum cbc_act act;
    double prm;
    enum cbc_status ast;
    if (activation_of(c, n, op, &act, &prm, &ast))
        return ast != CBC_OK ? ast : op_activation(c, n, act, prm, n->p->input[0]);
    if (!strcmp(op, "Softmax"))
        return op_softmax(c, n, CBC_ACT_SOFTMAX);
    if (!strcmp(op, "LogSoftmax"))
        return op_softmax(c, n, CBC_ACT_LOG_SOFTMAX);
    if (!strcmp(op, "Gemm"))
        return op_linear(c, n, true);
    if (!strcmp(op, "MatMul"))
        return op_linear(c, n, false);
    if (!strcmp(op, "Add"))
        return op_binary(c, n, '+');
    if (!strcmp(op, "Sub"))
        return op_binary(c, n, '-');
    if (!strcmp(op, "Mul"))
        return op_binary(c, n, '*');
    if (!strcmp(op, "Div"))
        return op_binary(c, n, '/');
    if (!strcmp(op, "BatchNormalization"))
        return op_batchnorm(c, n);
    if (!strcmp(op, "LayerNormalization"))
        return op_layernorm(c, n);
    if (!strcmp(op, "Flatten"))
        return op_shape(c, n, true);
    if (!strcmp(op, "Reshape"))
        return op_shape(c, n, false);
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout"))
        return op_alias(c, n);
    if (!strcmp(op, "Cast")) {
        int64_t to = attr_int(n, "to", 0);
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
            return op_alias(c, n);
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "casts to %s", type_name((int32_t)to));
    }
    if (!strcmp(op, "Constant"))
        return op_constant(c, n);
    if (!strcmp(op, "Transpose"))
        return op_transpose(c, n);
    return node_err(c, n, CBC_E_UNSUPPORTED, unsupported_hint(op), "is not an operator igrun "
                    "runs");
}

/* ---- patterns: the Erf form of GELU, and Sigmoid(x) * x ------------------ */

static struct name *name_find(const struct ctx *c, const char *name)
{
    size_t at = index_at((struct name_index *)&c->nix, name, false, 0);
    return at == SIZE_MAX ? NULL : &c->names[at];
}

static struct name *name_add(struct ctx *c, const char *name)
{
    struct name *e = name_find(c, name);
    if (e || !name || !*name || c->nnames == c->names_cap)
        return e;
    index_at(&c->nix, name, true, c->nnames);
    e = &c->names[c->nnames++];
    *e = (struct name){name, -1, 0, -1};
    return e;
}

/* The table of names: producers and readers of every value the nodes
 * mention (recomputed after patterns replace nodes). */
static void index_names(struct ctx *c)
{
    for (size_t i = 0; i < c->nnames; i++)
        c->names[i].producer = -1, c->names[i].readers = 0, c->names[i].reader = -1;
    for (size_t i = 0; i < c->nn; i++) {
        struct node *n = &c->nodes[i];
        if (n->skip)
            continue;
        for (size_t k = 0; k < (n->synth ? 1 : n->p->n_input); k++) {
            struct name *e = name_add(c, n->synth ? n->syn_in : n->p->input[k]);
            if (e && e->readers++ == 0)
                e->reader = (int)i;
        }
        for (size_t k = 0; k < n->p->n_output; k++) {
            struct name *e = name_add(c, n->p->output[k]);
            if (e)
                e->producer = (int)i;
        }
    }
    for (size_t i = 0; i < c->g->n_output; i++) {
        struct name *e = c->g->output[i] ? name_add(c, c->g->output[i]->name) : NULL;
        if (e)
            e->readers++;
    }
}

/* The nodes reading value `name`: how many, and the first. */
static size_t readers(const struct ctx *c, const char *name, struct node **first)
{
    const struct name *e = name_find(c, name);
    *first = e && e->reader >= 0 ? &c->nodes[e->reader] : NULL;
    return e ? (size_t)e->readers : 0;
}

/* The producer of value `name` among the nodes. */
static struct node *producer(struct ctx *c, const char *name)
{
    const struct name *e = name_find(c, name);
    return e && e->producer >= 0 && !c->nodes[e->producer].skip ? &c->nodes[e->producer] : NULL;
}

static bool is_op(const struct node *n, const char *op)
{
    return n && !n->skip && n->synth == SY_NONE && n->p->op_type && !strcmp(n->p->op_type, op) &&
           n->p->n_output >= 1 && n->p->output[0];
}

/* The other input of a two-input node, and whether it is the scalar k. */
static const char *other_input(const struct node *n, const char *name)
{
    if (n->p->n_input != 2)
        return NULL;
    return !strcmp(n->p->input[0], name) ? n->p->input[1]
           : !strcmp(n->p->input[1], name) ? n->p->input[0]
                                           : NULL;
}

static bool scalar_is(struct ctx *c, const char *name, double want)
{
    const struct val *v = name ? val_find(c, name) : NULL;
    return v && v->kind == V_CONST && v->c.count == 1 && fabs(v->c.v[0] - want) <= 1e-6 * fabs(want);
}

static void find_patterns(struct ctx *c)
{
    for (size_t i = 0; i < c->nn; i++) {
        struct node *e = &c->nodes[i], *r;
        if (is_op(e, "Sigmoid") && e->p->n_input == 1) { /* y = x * Sigmoid(x) */
            const char *x = e->p->input[0], *s = e->p->output[0];
            if (readers(c, s, &r) == 1 && is_op(r, "Mul") && other_input(r, s) &&
                !strcmp(other_input(r, s), x)) {
                e->skip = true;
                r->synth = SY_SILU, r->syn_in = x, r->syn_out = r->p->output[0];
            }
            continue;
        }
        if (!is_op(e, "Erf") || e->p->n_input != 1)
            continue;
        /* d = x / sqrt(2) (or x * 1/sqrt(2)); e = Erf(d); p = e + 1; then
         * 0.5 * x * p in either order */
        struct node *d = producer(c, e->p->input[0]);
        if (!d || (!is_op(d, "Div") && !is_op(d, "Mul")) || d->p->n_input != 2 ||
            readers(c, d->p->output[0], &r) != 1)
            continue;
        const char *x = d->p->input[0];
        if (!scalar_is(c, d->p->input[1], is_op(d, "Div") ? 1.4142135623730951 : 0.7071067811865476))
            continue;
        struct node *p, *q, *y;
        if (readers(c, e->p->output[0], &p) != 1 || !is_op(p, "Add") ||
            !scalar_is(c, other_input(p, e->p->output[0]), 1.0) ||
            readers(c, p->p->output[0], &q) != 1 || !is_op(q, "Mul"))
            continue;
        const char *qo = other_input(q, p->p->output[0]);
        if (!qo)
            continue;
        struct node *half = NULL;
        if (!strcmp(qo, x)) { /* (x * p) * 0.5 */
            if (readers(c, q->p->output[0], &y) != 1 || !is_op(y, "Mul") ||
                !scalar_is(c, other_input(y, q->p->output[0]), 0.5))
                continue;
        } else { /* (x * 0.5) * p */
            half = producer(c, qo);
            if (!is_op(half, "Mul") || !other_input(half, x) ||
                !scalar_is(c, other_input(half, x), 0.5) || readers(c, qo, &r) != 1)
                continue;
            y = q;
        }
        d->skip = e->skip = p->skip = true;
        if (half)
            half->skip = true;
        if (y != q)
            q->skip = true;
        y->synth = SY_GELU, y->syn_in = x, y->syn_out = y->p->output[0];
    }
}

/* Marks the nodes the graph's output depends on: a worklist from the
 * output back through each value's producer. */
static enum cbc_status mark_live(struct ctx *c, const char *out)
{
    int *work = malloc((c->nn + 1) * sizeof *work);
    if (!work)
        return ig_err_oom(c->err);
    size_t nw = 0;
    const struct name *e = name_find(c, out);
    if (e && e->producer >= 0 && !c->nodes[e->producer].live) {
        c->nodes[e->producer].live = true;
        work[nw++] = e->producer;
    }
    while (nw) {
        const struct node *n = &c->nodes[work[--nw]];
        for (size_t k = 0; k < (n->synth ? 1 : n->p->n_input); k++) {
            e = name_find(c, n->synth ? n->syn_in : n->p->input[k]);
            if (e && e->producer >= 0 && !c->nodes[e->producer].live &&
                !c->nodes[e->producer].skip) {
                c->nodes[e->producer].live = true;
                work[nw++] = e->producer;
            }
        }
    }
    free(work);
    return CBC_OK;
}

/* ---- the whole model --------------------------------------------------------- */

static enum cbc_status graph_input(struct ctx *c, const Onnx__ValueInfoProto *in)
{
    struct val *v = val_new(c, in->name);
    if (!v)
        return ig_err_oom(c->err);
    v->kind = V_CHAIN;
    v->layer = -1;
    v->version = 0;
    const Onnx__TypeProto *tp = in->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the input '%s' is not a tensor",
                          c->path, in->name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int32_t et = tt->has_elem_type ? tt->elem_type : 0;
    if (et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && et != ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE &&
        et != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 && et != ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16) {
        ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the input '%s' is of type %s: igrun "
                   "explains float features", c->path, in->name, type_name(et));
        ig_err_hint(c->err, "%s", unsupported_hint("Gather"));
        return CBC_E_UNSUPPORTED;
    }
    const Onnx__TensorShapeProto *sh = tt->shape;
    v->rank = sh ? (int)sh->n_dim : 2;
    if (v->rank < 1 || v->rank > 8)
        return ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the input '%s' has %d dimensions",
                          c->path, in->name, v->rank);
    for (int d = 0; sh && d < v->rank; d++) {
        const Onnx__TensorShapeProto__Dimension *dm = sh->dim[d];
        v->dims[d] = dm && dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                             dm->dim_value > 0
                         ? dm->dim_value
                         : 0;
    }
    if (v->rank == 1) { /* one input of F features */
        v->width = v->dims[0] > 0 && v->dims[0] <= (1 << 22) ? (int)v->dims[0] : 0;
        v->rank = 2;
    } else if (v->rank == 2) {
        v->width = v->dims[1] > 0 && v->dims[1] <= (1 << 22) ? (int)v->dims[1] : 0;
    } else { /* an image: its features once flattened, when every dimension is known */
        uint64_t f = 1;
        for (int d = 1; d < v->rank && f; d++)
            f = v->dims[d] > 0 && f * (uint64_t)v->dims[d] <= (1u << 22) ? f * (uint64_t)v->dims[d] : 0;
        v->width = (int)f;
    }
    c->in_width = v->width;
    return CBC_OK;
}

static enum cbc_status finish(struct ctx *c, struct cbc_mlp_owned **out)
{
    struct cbc_err *err = c->err;
    const Onnx__ValueInfoProto *go = c->g->output[0];
    struct val *v = val_find(c, go->name);
    if (!v || v->kind != V_CHAIN || v->layer < 0)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': the output '%s' is not computed from "
                          "the input by a Linear layer", c->path, go->name);
    if (v->layer != c->nl - 1 || v->version != c->L[v->layer].version ||
        c->L[v->layer].frozen >= 0)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': the output '%s' is not the end of the "
                          "chain of layers (an earlier state of layer '%s')", c->path, go->name,
                          c->L[v->layer].name);
    size_t total = 0, names = 1;
    for (int l = 0; l < c->nl; l++) {
        const struct blayer *L = &c->L[l];
        total += (size_t)L->in * (size_t)L->out + 7 * (size_t)L->out;
        names += strlen(L->name) + 1;
    }
    struct cbc_mlp_owned *m = calloc(1, sizeof *m);
    enum cbc_status st = CBC_OK;
    if (!m || !(m->layers = calloc((size_t)c->nl, sizeof *m->layers)) ||
        !(m->storage = malloc(total * sizeof *m->storage)) ||
        !(m->layer_names = malloc(names)) || !(m->activations = malloc(32 * (size_t)c->nl + 1))) {
        cbc_mlp_owned_free(m);
        return ig_err_oom(err);
    }
    float *p = m->storage;
    m->layer_names[0] = m->activations[0] = '\0';
#define TO_FLOAT(dst, src, count)                                                                  \
    do {                                                                                           \
        for (size_t q_ = 0; q_ < (count); q_++)                                                    \
            p[q_] = (float)(src)[q_];                                                              \
        (dst) = p;                                                                                 \
        p += (count);                                                                              \
    } while (0)
    for (int l = 0; l < c->nl; l++) {
        const struct blayer *B = &c->L[l];
        struct cbc_mlp_layer *L = &m->layers[l];
        size_t o = (size_t)B->out;
        L->in = B->in, L->out = B->out;
        TO_FLOAT(L->w, B->w, (size_t)B->in * o);
        TO_FLOAT(L->b, B->b, o);
        L->act = B->act;
        L->act_param = (float)B->act_param;
        L->norm = B->norm;
        if (B->norm) {
            TO_FLOAT(L->norm_w, B->nw, o);
            TO_FLOAT(L->norm_b, B->nb, o);
            L->norm_eps = (float)B->eps;
        }
        if (B->mul) {
            TO_FLOAT(L->mul, B->mul, o);
            TO_FLOAT(L->add, B->add, o);
        }
        L->residual = B->residual;
        L->residual_from = B->residual_from;
        if (B->rmul)
            TO_FLOAT(L->residual_mul, B->rmul, o);
        strcat(m->layer_names, l ? "," : "");
        strcat(m->layer_names, B->name);
        char a[32];
        if (B->act == CBC_ACT_LEAKY_RELU || B->act == CBC_ACT_ELU)
            snprintf(a, sizeof a, "%s%s(%g)", l ? "," : "", cbc_act_name(B->act), B->act_param);
        else
            snprintf(a, sizeof a, "%s%s", l ? "," : "", cbc_act_name(B->act));
        strcat(m->activations, a);
    }
#undef TO_FLOAT
    m->mlp.n_layers = c->nl;
    m->mlp.layers = m->layers;
    m->from_graph = true;
    st = cbc_mlp_validate(&m->mlp, err);
    if (st != CBC_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        ig_err_set(err, st, "'%s': %s", c->path, msg);
        cbc_mlp_owned_free(m);
        return st;
    }
    *out = m;
    return CBC_OK;
}

/* ---- networks: the graph as it is (cbc_net_load_onnx) --------------------
 *
 * The same nodes run onto a struct cbc_net instead: every value of the
 * graph is a constant or a value of the network (V_NET: which one, and the
 * shape the graph gives it, per input); a Conv, pool, Linear, activation,
 * Add, Concat, LayerNorm or per-channel scale is a node of the network, a
 * Flatten or Reshape only a new shape of the same value. A per-channel
 * scale and shift (BatchNormalization, Mul/Add/Sub/Div by a constant) is
 * folded, in double, into the Conv, Linear or scale that produced its
 * input when nothing else reads that value, else a node of its own. */

#define NET_NODES_MAX 16384
#define NET_VALUE_MAX (1 << 28) /* elements of one value, as cbc_net_validate */

struct nbnode {
    struct cbc_net_node d;
    double *w, *b, *mul, *add; /* weight (CONV, LINEAR, LAYERNORM), bias, AFFINE's */
    size_t nw, nbias;
    char name[128];
};

struct nbuild {
    struct nbnode *v;
    int n;
    int in_c, in_h, in_w;
};

static void nbuild_free(struct nbuild *b)
{
    for (int i = 0; b && i < b->n; i++)
        free(b->v[i].w), free(b->v[i].b), free(b->v[i].mul), free(b->v[i].add);
    if (b)
        free(b->v);
    free(b);
}

#define NET_TAKES                                                                                  \
    "Conv, MaxPool, AveragePool, GlobalAveragePool, ReduceMean over the spatial axes, "           \
    "BatchNormalization, Add, Concat, Flatten, Reshape, Gemm, MatMul, Add/Sub/Mul/Div by "         \
    "constants, Relu, Tanh, Sigmoid, Gelu, SiLU, Softplus, Elu, LeakyRelu, Softmax, "              \
    "LogSoftmax, LayerNormalization, Identity, Dropout, Cast, Constant, Transpose"

static const char *net_hint(const char *op)
{
    if (!strcmp(op, "Shape") || !strcmp(op, "Gather") || !strcmp(op, "Unsqueeze") ||
        !strcmp(op, "Slice") || !strcmp(op, "Squeeze"))
        return "a shape computed at run time (x.view(x.size(0), -1)): write x.flatten(1) or "
               "nn.Flatten() instead";
    if (!strcmp(op, "PRelu"))
        return "igrun has no PReLU: use nn.LeakyReLU(slope) with the learned slope, or "
               "explain with Captum";
    if (!strcmp(op, "ConvTranspose") || !strcmp(op, "Resize") || !strcmp(op, "Upsample"))
        return "igrun explains classifiers (convolutions, pools, a Linear head); an "
               "upsampling decoder is not one it runs: explain it with Captum";
    return "igrun runs: " NET_TAKES;
}

static bool net_known_op(const char *op)
{
    static const char *const ops[] = {
        "Conv",     "MaxPool",   "AveragePool", "GlobalAveragePool", "ReduceMean", "Concat",
        "Relu",     "Tanh",      "Sigmoid",     "Softplus",          "Elu",        "LeakyRelu",
        "Gelu",     "Softmax",   "LogSoftmax",  "Gemm",              "MatMul",     "Add",
        "Sub",      "Mul",       "Div",         "BatchNormalization", "LayerNormalization",
        "Flatten",  "Reshape",   "Identity",    "Dropout",           "Cast",       "Constant",
        "Transpose"};
    for (size_t i = 0; i < IG_ARRAY_LEN(ops); i++)
        if (!strcmp(op, ops[i]))
            return true;
    return false;
}

/* A value of the network read by node n at input i. */
static enum cbc_status net_in(struct ctx *c, const struct node *n, size_t i, struct val **out)
{
    enum cbc_status st = input_val(c, n, i, out);
    if (st == CBC_OK && (*out)->kind != V_NET)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun explains the input through the graph: a "
                        "tensor operand must come from the input",
                        "'%.120s' is a constant where a tensor of the graph was expected",
                        (*out)->name);
    return st;
}

/* The output of node n: value netv of the network, seen as [nc][nh][nw] at rank. */
static enum cbc_status net_out(struct ctx *c, const char *name, int netv, int rank, int nc, int nh,
                               int nw)
{
    struct val *o = val_new(c, name);
    if (!o)
        return ig_err_oom(c->err);
    o->kind = V_NET;
    o->netv = netv, o->rank = rank, o->nc = nc, o->nh = nh, o->nw = nw;
    o->width = (int)((size_t)nc * nh * nw);
    return CBC_OK;
}

static size_t velems(const struct val *v)
{
    return (size_t)v->nc * (size_t)v->nh * (size_t)v->nw;
}

/* A new node of the network reading x as it is seen. */
static enum cbc_status nb_add(struct ctx *c, const struct node *n, enum cbc_net_op op,
                              const struct val *x, struct nbnode **out)
{
    struct nbuild *b = c->nb;
    if (b->n == NET_NODES_MAX)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "more than %d nodes", NET_NODES_MAX);
    if (b->n % 64 == 0) {
        struct nbnode *v = realloc(b->v, (size_t)(b->n + 64) * sizeof *v);
        if (!v)
            return ig_err_oom(c->err);
        b->v = v;
    }
    struct nbnode *d = &b->v[b->n++];
    memset(d, 0, sizeof *d);
    d->d.op = op;
    d->d.n_in = 1;
    d->d.in[0] = x->netv;
    d->d.ic = x->nc, d->d.ih = x->nh, d->d.iw = x->nw;
    d->d.c = x->nc, d->d.h = x->nh, d->d.w = x->nw;
    if (n->p->name && *n->p->name)
        snprintf(d->name, sizeof d->name, "%.120s", n->p->name);
    else
        snprintf(d->name, sizeof d->name, "#%d", n->index);
    *out = d;
    return CBC_OK;
}

/* The node that produced network value v (v > 0), when it is the last. */
static struct nbnode *producer_node(struct ctx *c, const struct val *v)
{
    return v->netv > 0 && v->netv <= c->nb->n ? &c->nb->v[v->netv - 1] : NULL;
}

/* Whether constant k is one number, or one per channel of x (broadcast as
 * ONNX does: [C], [1, C] of a flat value; [C, 1, 1], [1, C, 1, 1] of an
 * image; [C, 1], [1, C, 1] of a signal). */
static bool chan_const(const struct val *k, const struct val *x)
{
    if (k->kind != V_CONST)
        return false;
    if (k->c.count == 1)
        return true;
    if ((int64_t)k->c.count != x->nc || k->c.ndim > x->rank)
        return false;
    for (int j = 0; j < k->c.ndim; j++) {
        int full = x->rank - k->c.ndim + j; /* the tensor's axis it lines up with */
        if (full != 1 && k->c.dims[j] != 1)
            return false;
    }
    return true;
}

/* x * m + t per channel of x (m, t: [x->nc] or NULL), folded into the node
 * that made x when nothing else reads it, else a node of its own. */
static enum cbc_status net_affine(struct ctx *c, const struct node *n, const struct val *x,
                                  const double *m, const double *t, const char *out)
{
    struct node *first;
    struct nbnode *p = producer_node(c, x);
    const int C = x->nc;
    int netv = x->netv, rank = x->rank, nh = x->nh, nw = x->nw;
    if (p && p->d.c == C && readers(c, x->name, &first) == 1 &&
        (p->d.op == CBC_NET_CONV || p->d.op == CBC_NET_LINEAR || p->d.op == CBC_NET_AFFINE)) {
        if (p->d.op == CBC_NET_AFFINE) {
            for (int ch = 0; ch < C; ch++) {
                double mo = m ? m[ch] : 1;
                p->mul[ch] *= mo;
                p->add[ch] = p->add[ch] * mo + (t ? t[ch] : 0);
            }
        } else {
            size_t per = p->nw / (size_t)C;
            for (int o = 0; o < C; o++) {
                double mo = m ? m[o] : 1;
                for (size_t i = 0; m && i < per; i++)
                    p->w[(size_t)o * per + i] *= mo;
                p->b[o] = p->b[o] * mo + (t ? t[o] : 0);
            }
        }
        return net_out(c, out, netv, rank, C, nh, nw);
    }
    struct nbnode *d;
    enum cbc_status st = nb_add(c, n, CBC_NET_AFFINE, x, &d);
    if (st != CBC_OK)
        return st;
    if (!(d->mul = dvec((size_t)C, 1)) || !(d->add = dvec((size_t)C, 0)))
        return ig_err_oom(c->err);
    for (int ch = 0; ch < C; ch++) {
        d->mul[ch] = m ? m[ch] : 1;
        d->add[ch] = t ? t[ch] : 0;
    }
    return net_out(c, out, c->nb->n, rank, C, nh, nw);
}

/* ints attribute `name` into out[0..max): its count, or -1 when absent. */
static int attr_ints(const struct node *n, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->n_ints)
        return -1;
    int k = a->n_ints > (size_t)max ? max + 1 : (int)a->n_ints;
    for (int i = 0; i < k && i < max; i++)
        out[i] = a->ints[i];
    return k;
}

static bool attr_str_is(const struct node *n, const char *name, const char *want)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a || !a->has_s)
        return !strcmp(want, "NOTSET");
    return a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* The window of a Conv or pool over x (rank 3: a signal, rank 4: an image):
 * kernel k (kh, kw), strides, dilations, pads; auto_pad and ceil_mode
 * resolved (ceil_mode only where it changes nothing). */
static enum cbc_status window_attrs(struct ctx *c, const struct node *n, const struct val *x,
                                    const int64_t *kern, struct cbc_net_node *d, bool pool)
{
    const int nd = x->rank - 2; /* spatial dimensions: 1 or 2 */
    int64_t st[2] = {1, 1}, dl[2] = {1, 1}, pd[4] = {0, 0, 0, 0}, tmp[8];
    int k;
    if ((k = attr_ints(n, "strides", tmp, 8)) >= 0) {
        if (k != nd)
            return node_err(c, n, CBC_E_FORMAT, NULL, "has %d strides for %d spatial axes", k, nd);
        memcpy(st, tmp, sizeof(int64_t) * (size_t)nd);
    }
    if ((k = attr_ints(n, "dilations", tmp, 8)) >= 0) {
        if (k != nd)
            return node_err(c, n, CBC_E_FORMAT, NULL, "has %d dilations for %d spatial axes", k,
                            nd);
        memcpy(dl, tmp, sizeof(int64_t) * (size_t)nd);
    }
    if ((k = attr_ints(n, "pads", tmp, 8)) >= 0) {
        if (k != 2 * nd)
            return node_err(c, n, CBC_E_FORMAT, NULL, "has %d pads for %d spatial axes", k, nd);
        memcpy(pd, tmp, sizeof(int64_t) * (size_t)(2 * nd));
    }
    for (int i = 0; i < nd; i++)
        if (kern[i] < 1 || kern[i] > 1024 || st[i] < 1 || st[i] > 1024 || dl[i] < 1 ||
            dl[i] > 1024 || pd[i] < 0 || pd[i] > 4096 || pd[nd + i] < 0 || pd[nd + i] > 4096)
            return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "has a kernel of %lld, stride %lld, "
                            "dilation %lld, pads %lld and %lld on axis %d", (long long)kern[i],
                            (long long)st[i], (long long)dl[i], (long long)pd[i],
                            (long long)pd[nd + i], i + 2);
    const int64_t in[2] = {nd == 2 ? x->nh : x->nw, x->nw};
    bool same_up = attr_str_is(n, "auto_pad", "SAME_UPPER"),
         same_lo = attr_str_is(n, "auto_pad", "SAME_LOWER");
    if (!attr_str_is(n, "auto_pad", "NOTSET") && !attr_str_is(n, "auto_pad", "VALID") &&
        !same_up && !same_lo)
        return node_err(c, n, CBC_E_UNSUPPORTED, "export with explicit padding",
                        "has an unknown auto_pad");
    for (int i = 0; i < nd; i++) {
        if (attr_str_is(n, "auto_pad", "VALID"))
            pd[i] = pd[nd + i] = 0;
        if (same_up || same_lo) {
            int64_t out = (in[i] + st[i] - 1) / st[i];
            int64_t total = (out - 1) * st[i] + (kern[i] - 1) * dl[i] + 1 - in[i];
            total = total < 0 ? 0 : total;
            pd[i] = same_up ? total / 2 : total - total / 2;
            pd[nd + i] = total - pd[i];
        }
    }
    if (pool && attr_int(n, "ceil_mode", 0)) {
        for (int i = 0; i < nd; i++) { /* the same windows when the division is exact */
            int64_t span = (kern[i] - 1) * dl[i] + 1, len = in[i] + pd[i] + pd[nd + i] - span;
            if (len >= 0 && len % st[i])
                return node_err(c, n, CBC_E_UNSUPPORTED, "use ceil_mode=False (PyTorch's "
                                "default), or pad the input so the windows fit exactly",
                                "takes ceil_mode=1, whose last window on axis %d is partial", i + 2);
        }
    }
    if (nd == 2) {
        d->kh = (int)kern[0], d->kw = (int)kern[1], d->sh = (int)st[0], d->sw = (int)st[1];
        d->dh = (int)dl[0], d->dw = (int)dl[1];
        d->pt = (int)pd[0], d->pl = (int)pd[1], d->pb = (int)pd[2], d->pr = (int)pd[3];
    } else {
        d->kh = 1, d->kw = (int)kern[0], d->sh = 1, d->sw = (int)st[0], d->dh = 1;
        d->dw = (int)dl[0], d->pl = (int)pd[0], d->pr = (int)pd[1];
    }
    int64_t oh = ((int64_t)d->ih + d->pt + d->pb - ((int64_t)d->dh * (d->kh - 1) + 1));
    int64_t ow = ((int64_t)d->iw + d->pl + d->pr - ((int64_t)d->dw * (d->kw - 1) + 1));
    if (oh < 0 || ow < 0)
        return node_err(c, n, CBC_E_SHAPE, NULL, "a window of %dx%d does not fit the input of "
                        "%dx%d", d->kh, d->kw, d->ih, d->iw);
    if (pool && (d->pt > d->dh * (d->kh - 1) || d->pb > d->dh * (d->kh - 1) ||
                 d->pl > d->dw * (d->kw - 1) || d->pr > d->dw * (d->kw - 1)))
        return node_err(c, n, CBC_E_UNSUPPORTED, "pad a pool by at most half its window (as "
                        "PyTorch requires)", "pads %d, %d, %d, %d with a window of %dx%d",
                        d->pt, d->pl, d->pb, d->pr, d->kh, d->kw);
    d->h = (int)(oh / d->sh + 1), d->w = (int)(ow / d->sw + 1);
    return CBC_OK;
}

static enum cbc_status spatial_in(struct ctx *c, const struct node *n, const struct val *x)
{
    if (x->rank != 3 && x->rank != 4)
        return node_err(c, n, CBC_E_UNSUPPORTED, "give it an image [batch, C, H, W] or a "
                        "signal [batch, C, L]", "reads '%.120s' of rank %d", x->name, x->rank);
    return CBC_OK;
}

static enum cbc_status nop_conv(struct ctx *c, const struct node *n)
{
    struct val *x, *w, *b = NULL;
    enum cbc_status st;
    if ((st = net_in(c, n, 0, &x)) != CBC_OK || (st = input_val(c, n, 1, &w)) != CBC_OK)
        return st;
    if (n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
        (st = input_val(c, n, 2, &b)) != CBC_OK)
        return st;
    if ((st = spatial_in(c, n, x)) != CBC_OK)
        return st;
    if (w->kind != V_CONST || w->c.ndim != x->rank)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a Conv's weight as a constant of "
                        "the model", "its weight '%.120s' is not a constant of %d dimensions",
                        w->name, x->rank);
    int64_t g = attr_int(n, "group", 1), oc = w->c.dims[0], icg = w->c.dims[1];
    if (g < 1 || g > x->nc || x->nc % g || oc < 1 || oc > (1 << 20) || oc % g ||
        icg * g != x->nc)
        return node_err(c, n, CBC_E_SHAPE, NULL, "weight '%.120s' [%lld, %lld, ...] in %lld "
                        "groups does not fit '%.120s' of %d channels", w->name, (long long)oc,
                        (long long)icg, (long long)g, x->name, x->nc);
    int64_t kern[2], tmp[8];
    for (int i = 0; i < x->rank - 2; i++)
        kern[i] = w->c.dims[2 + i];
    int k = attr_ints(n, "kernel_shape", tmp, 8);
    for (int i = 0; k >= 0 && i < x->rank - 2; i++)
        if (k != x->rank - 2 || tmp[i] != kern[i])
            return node_err(c, n, CBC_E_SHAPE, NULL, "kernel_shape disagrees with weight "
                            "'%.120s'", w->name);
    if (b && (b->kind != V_CONST || (int64_t)b->c.count != oc))
        return node_err(c, n, CBC_E_SHAPE, NULL, "bias '%.120s' has %zu values for %lld "
                        "channels", b->name, b->kind == V_CONST ? b->c.count : 0, (long long)oc);
    struct nbnode *d;
    if ((st = nb_add(c, n, CBC_NET_CONV, x, &d)) != CBC_OK)
        return st;
    d->d.groups = (int)g;
    d->d.c = (int)oc;
    if ((st = window_attrs(c, n, x, kern, &d->d, false)) != CBC_OK)
        return st;
    if ((size_t)d->d.c * d->d.h * d->d.w > NET_VALUE_MAX)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "gives %d x %d x %d values per input",
                        d->d.c, d->d.h, d->d.w);
    d->nw = w->c.count, d->nbias = (size_t)oc;
    if (!(d->w = malloc(d->nw * sizeof *d->w)) || !(d->b = dvec((size_t)oc, 0)))
        return ig_err_oom(c->err);
    memcpy(d->w, w->c.v, d->nw * sizeof *d->w);
    for (int64_t o = 0; b && o < oc; o++)
        d->b[o] = b->c.v[o];
    return net_out(c, n->p->output[0], c->nb->n, x->rank, d->d.c, d->d.h, d->d.w);
}

static enum cbc_status nop_pool(struct ctx *c, const struct node *n, enum cbc_net_op op)
{
    struct val *x;
    enum cbc_status st = net_in(c, n, 0, &x);
    if (st == CBC_OK)
        st = spatial_in(c, n, x);
    if (st != CBC_OK)
        return st;
    struct node *r;
    if (op != CBC_NET_GLOBAL_AVGPOOL && n->p->n_output > 1 && readers(c, n->p->output[1], &r))
        return node_err(c, n, CBC_E_UNSUPPORTED, "return the pooled values only "
                        "(return_indices=False)", "its indices are used");
    struct nbnode *d;
    if ((st = nb_add(c, n, op, x, &d)) != CBC_OK)
        return st;
    if (op == CBC_NET_GLOBAL_AVGPOOL) {
        d->d.h = d->d.w = 1;
        return net_out(c, n->p->output[0], c->nb->n, x->rank, x->nc, 1, 1);
    }
    int64_t kern[2];
    int k = attr_ints(n, "kernel_shape", kern, 2);
    if (k != x->rank - 2)
        return node_err(c, n, CBC_E_FORMAT, NULL, "has %d kernel_shape values for %d spatial "
                        "axes", k, x->rank - 2);
    if ((st = window_attrs(c, n, x, kern, &d->d, true)) != CBC_OK)
        return st;
    if (op == CBC_NET_AVGPOOL) {
        if (d->d.dh != 1 || d->d.dw != 1)
            return node_err(c, n, CBC_E_UNSUPPORTED, "nn.AvgPool has no dilation",
                            "averages with dilations %d, %d", d->d.dh, d->d.dw);
        d->d.count_include_pad = attr_int(n, "count_include_pad", 0) != 0;
    }
    return net_out(c, n->p->output[0], c->nb->n, x->rank, x->nc, d->d.h, d->d.w);
}

/* ReduceMean over the spatial axes: a GlobalAveragePool (keepdims or not). */
static enum cbc_status nop_reducemean(struct ctx *c, const struct node *n)
{
    struct val *x, *ax = NULL;
    enum cbc_status st = net_in(c, n, 0, &x);
    if (st != CBC_OK)
        return st;
    int64_t axes[8];
    int k = attr_ints(n, "axes", axes, 8);
    if (k < 0 && n->p->n_input > 1 && n->p->input[1] && *n->p->input[1]) {
        if ((st = input_val(c, n, 1, &ax)) != CBC_OK)
            return st;
        if (ax->kind == V_CONST && ax->c.count <= 8) {
            k = (int)ax->c.count;
            for (int i = 0; i < k; i++)
                axes[i] = (int64_t)ax->c.v[i];
        }
    }
    bool seen[8] = {false};
    for (int i = 0; i < k && i < 8; i++) {
        int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
        if (a >= 0 && a < 8)
            seen[a] = true;
    }
    bool spatial = (x->rank == 4 && k == 2 && seen[2] && seen[3]) ||
                   (x->rank == 3 && k == 1 && seen[2]);
    if (!spatial)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a mean over the spatial axes "
                        "(x.mean((2, 3)), nn.AdaptiveAvgPool2d(1))",
                        "takes the mean over other axes");
    struct nbnode *d;
    if ((st = nb_add(c, n, CBC_NET_GLOBAL_AVGPOOL, x, &d)) != CBC_OK)
        return st;
    d->d.h = d->d.w = 1;
    bool keep = attr_int(n, "keepdims", 1) != 0;
    return net_out(c, n->p->output[0], c->nb->n, keep ? x->rank : 2, x->nc, 1, 1);
}

/* Gemm, MatMul by a constant: a Linear of a flat value. */
static enum cbc_status nop_linear(struct ctx *c, const struct node *n, bool gemm)
{
    struct val *x, *w, *bc = NULL;
    enum cbc_status st;
    if ((st = net_in(c, n, 0, &x)) != CBC_OK || (st = input_val(c, n, 1, &w)) != CBC_OK)
        return st;
    if (gemm && n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
        (st = input_val(c, n, 2, &bc)) != CBC_OK)
        return st;
    if (x->rank != 2)
        return node_err(c, n, CBC_E_UNSUPPORTED, "flatten first: x.flatten(1) or nn.Flatten()",
                        "multiplies '%.120s' of rank %d", x->name, x->rank);
    if (w->kind != V_CONST || w->c.ndim != 2)
        return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes a Linear's weight as a constant "
                        "of the model (an initializer)", "its weight '%.120s' is not a 2-D "
                        "constant", w->name);
    if (gemm && attr_int(n, "transA", 0))
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "transA=1 is not a Linear layer");
    bool tb = gemm && attr_int(n, "transB", 0);
    double alpha = gemm ? attr_float(n, "alpha", 1) : 1, beta = gemm ? attr_float(n, "beta", 1) : 1;
    int64_t out = tb ? w->c.dims[0] : w->c.dims[1], in = tb ? w->c.dims[1] : w->c.dims[0];
    if (in != (int64_t)velems(x) || out < 1 || out > (1 << 24))
        return node_err(c, n, CBC_E_SHAPE, NULL, "weight '%.120s' of shape [%lld, %lld] takes "
                        "%lld inputs, but '%.120s' has %zu", w->name, (long long)w->c.dims[0],
                        (long long)w->c.dims[1], (long long)in, x->name, velems(x));
    if (bc && !row_const(bc, (int)out))
        return node_err(c, n, CBC_E_SHAPE, NULL, "bias '%.120s' has %zu values for %lld outputs",
                        bc->name, bc->c.count, (long long)out);
    struct nbnode *d;
    if ((st = nb_add(c, n, CBC_NET_LINEAR, x, &d)) != CBC_OK)
        return st;
    d->d.c = (int)out, d->d.h = d->d.w = 1;
    d->nw = (size_t)in * (size_t)out, d->nbias = (size_t)out;
    if (!(d->w = malloc(d->nw * sizeof *d->w)) || !(d->b = dvec((size_t)out, 0)))
        return ig_err_oom(c->err);
    for (int64_t o = 0; o < out; o++)
        for (int64_t i = 0; i < in; i++)
            d->w[(size_t)o * (size_t)in + (size_t)i] =
                alpha * w->c.v[tb ? (size_t)o * (size_t)in + (size_t)i
                                  : (size_t)i * (size_t)out + (size_t)o];
    for (int64_t o = 0; bc && o < out; o++)
        d->b[o] = beta * kat(bc, (int)o);
    return net_out(c, n->p->output[0], c->nb->n, 2, (int)out, 1, 1);
}

static enum cbc_status nop_act(struct ctx *c, const struct node *n, enum cbc_act act, double prm,
                               const char *in_name, const char *out_name)
{
    struct val *x = val_find(c, in_name);
    if (!x || x->kind == V_UNDEF) {
        struct val *dummy;
        return input_val(c, n, 0, &dummy);
    }
    if (x->kind != V_NET) {
        struct val *dummy;
        return net_in(c, n, 0, &dummy);
    }
    if ((act == CBC_ACT_SOFTMAX || act == CBC_ACT_LOG_SOFTMAX) && x->rank != 2)
        return node_err(c, n, CBC_E_UNSUPPORTED, "take it over the classes of flat outputs "
                        "(dim=-1 after flatten)", "is taken over axis 1 of a tensor of rank %d",
                        x->rank);
    struct nbnode *d;
    enum cbc_status st = nb_add(c, n, CBC_NET_ACT, x, &d);
    if (st != CBC_OK)
        return st;
    d->d.act = act;
    d->d.act_param = (float)prm;
    return net_out(c, out_name, c->nb->n, x->rank, x->nc, x->nh, x->nw);
}

static enum cbc_status nop_batchnorm(struct ctx *c, const struct node *n)
{
    struct val *x, *k[4];
    enum cbc_status st = net_in(c, n, 0, &x);
    for (size_t i = 0; st == CBC_OK && i < 4; i++)
        st = input_val(c, n, i + 1, &k[i]);
    if (st != CBC_OK)
        return st;
    struct node *r;
    if (attr_int(n, "training_mode", 0))
        return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before torch.onnx.export",
                        "is in training mode");
    for (size_t i = 1; i < n->p->n_output; i++)
        if (readers(c, n->p->output[i], &r))
            return node_err(c, n, CBC_E_UNSUPPORTED, "call model.eval() before torch.onnx.export",
                            "outputs its running statistics (training mode)");
    for (int i = 0; i < 4; i++)
        if (k[i]->kind != V_CONST || k[i]->c.count != (size_t)x->nc)
            return node_err(c, n, CBC_E_SHAPE, NULL, "'%.120s' has %zu values for %d channels",
                            k[i]->name, k[i]->kind == V_CONST ? k[i]->c.count : 0, x->nc);
    double eps = attr_float(n, "epsilon", 1e-5);
    if (!(eps >= 0 && eps < 1))
        return node_err(c, n, CBC_E_NUMERIC, NULL, "epsilon %g", eps);
    double *m = dvec((size_t)x->nc, 1), *t = dvec((size_t)x->nc, 0);
    if (!m || !t) {
        free(m), free(t);
        return ig_err_oom(c->err);
    }
    for (int j = 0; j < x->nc && st == CBC_OK; j++) {
        double var = k[3]->c.v[j];
        if (!(var >= 0))
            st = node_err(c, n, CBC_E_NUMERIC, NULL, "variance '%.120s' [%d] is %g", k[3]->name,
                          j, var);
        m[j] = k[0]->c.v[j] / sqrt(var + eps);
        t[j] = k[1]->c.v[j] - m[j] * k[2]->c.v[j];
    }
    if (st == CBC_OK)
        st = net_affine(c, n, x, m, t, n->p->output[0]);
    free(m), free(t);
    return st;
}

static enum cbc_status nop_layernorm(struct ctx *c, const struct node *n)
{
    struct val *x, *sc, *bi = NULL;
    enum cbc_status st;
    if ((st = net_in(c, n, 0, &x)) != CBC_OK || (st = input_val(c, n, 1, &sc)) != CBC_OK)
        return st;
    if (n->p->n_input > 2 && n->p->input[2] && *n->p->input[2] &&
        (st = input_val(c, n, 2, &bi)) != CBC_OK)
        return st;
    struct node *r;
    for (size_t i = 1; i < n->p->n_output; i++)
        if (readers(c, n->p->output[i], &r))
            return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "its mean or inverse deviation is "
                            "used");
    int64_t axis = attr_int(n, "axis", -1);
    if (axis < 0)
        axis += x->rank;
    if (axis != 1 && !(x->rank == 2 && axis == 1))
        return node_err(c, n, CBC_E_UNSUPPORTED, "normalise each input's features as a whole "
                        "(nn.LayerNorm of the flattened features)", "normalises from axis %lld "
                        "of a tensor of rank %d", (long long)attr_int(n, "axis", -1), x->rank);
    const size_t E = velems(x);
    if (sc->kind != V_CONST || (sc->c.count != 1 && sc->c.count != E) ||
        (bi && (bi->kind != V_CONST || (bi->c.count != 1 && bi->c.count != E))))
        return node_err(c, n, CBC_E_SHAPE, NULL, "its scale or bias does not have %zu values", E);
    double eps = attr_float(n, "epsilon", 1e-5);
    if (!(eps > 0 && eps < 1))
        return node_err(c, n, CBC_E_NUMERIC, NULL, "epsilon %g", eps);
    struct nbnode *d;
    if ((st = nb_add(c, n, CBC_NET_LAYERNORM, x, &d)) != CBC_OK)
        return st;
    d->d.eps = (float)eps;
    d->nw = d->nbias = E;
    if (!(d->w = dvec(E, 1)) || !(d->b = dvec(E, 0)))
        return ig_err_oom(c->err);
    for (size_t j = 0; j < E; j++) {
        d->w[j] = sc->c.count == 1 ? sc->c.v[0] : sc->c.v[j];
        d->b[j] = !bi ? 0 : bi->c.count == 1 ? bi->c.v[0] : bi->c.v[j];
    }
    return net_out(c, n->p->output[0], c->nb->n, x->rank, x->nc, x->nh, x->nw);
}

/* Add, Sub, Mul, Div: by a constant (per channel), or Add of two tensors. */
static enum cbc_status nop_binary(struct ctx *c, const struct node *n, char op)
{
    struct val *a, *b;
    enum cbc_status st;
    if ((st = input_val(c, n, 0, &a)) != CBC_OK || (st = input_val(c, n, 1, &b)) != CBC_OK)
        return st;
    if (a->kind == V_CONST && b->kind == V_CONST)
        return node_err(c, n, CBC_E_UNSUPPORTED, "export with do_constant_folding=True (the "
                        "default)", "combines two constants");
    if (a->kind == V_NET && b->kind == V_NET) {
        if (op != '+')
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun takes an Add of two tensors (a "
                            "residual connection); Sub, Mul and Div only by constants",
                            "takes two tensors of the graph ('%.120s', '%.120s')", a->name,
                            b->name);
        if (a->rank != b->rank || a->nc != b->nc || a->nh != b->nh || a->nw != b->nw)
            return node_err(c, n, CBC_E_UNSUPPORTED, "igrun adds tensors of one shape (no "
                            "broadcasting between them)", "adds '%.120s' [%d, %d, %d] and "
                            "'%.120s' [%d, %d, %d]", a->name, a->nc, a->nh, a->nw, b->name,
                            b->nc, b->nh, b->nw);
        struct nbnode *d;
        if ((st = nb_add(c, n, CBC_NET_ADD, a, &d)) != CBC_OK)
            return st;
        d->d.n_in = 2;
        d->d.in[1] = b->netv;
        return net_out(c, n->p->output[0], c->nb->n, a->rank, a->nc, a->nh, a->nw);
    }
    struct val *v = a->kind == V_NET ? a : b, *k = a->kind == V_NET ? b : a;
    bool k_left = k == a;
    if (v->kind != V_NET) {
        struct val *dummy;
        return net_in(c, n, k_left ? 1 : 0, &dummy);
    }
    if (!chan_const(k, v))
        return node_err(c, n, CBC_E_SHAPE, "igrun takes constants that are one number or one "
                        "per channel ([C, 1, 1] of an image)", "constant '%.120s' (%zu values) "
                        "is not one per channel of '%.120s' (%d channels)", k->name,
                        k->kind == V_CONST ? k->c.count : 0, v->name, v->nc);
    if (op == '/' && k_left)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "divides a constant by a tensor");
    size_t C = (size_t)v->nc;
    double *m = dvec(C, 1), *t = dvec(C, 0);
    if (!m || !t) {
        free(m), free(t);
        return ig_err_oom(c->err);
    }
    for (size_t j = 0; j < C && st == CBC_OK; j++) {
        double kv = kat(k, (int)j);
        switch (op) {
        case '+': t[j] = kv; break;
        case '-':
            if (k_left)
                m[j] = -1, t[j] = kv;
            else
                t[j] = -kv;
            break;
        case '*': m[j] = kv; break;
        default:
            if (kv == 0)
                st = node_err(c, n, CBC_E_NUMERIC, NULL, "divides by 0 ('%.120s')", k->name);
            m[j] = 1 / kv;
        }
    }
    if (st == CBC_OK)
        st = net_affine(c, n, v, op == '+' || (op == '-' && !k_left) ? NULL : m,
                        op == '*' || op == '/' ? NULL : t, n->p->output[0]);
    free(m), free(t);
    return st;
}

static enum cbc_status nop_concat(struct ctx *c, const struct node *n)
{
    struct val *x0;
    enum cbc_status st = net_in(c, n, 0, &x0);
    if (st != CBC_OK)
        return st;
    int64_t axis = attr_int(n, "axis", 1);
    if (axis < 0)
        axis += x0->rank;
    if (axis != 1)
        return node_err(c, n, CBC_E_UNSUPPORTED, "concatenate along the channels (dim=1)",
                        "concatenates along axis %lld", (long long)attr_int(n, "axis", 1));
    if (n->p->n_input < 1 || n->p->n_input > CBC_NET_INPUTS_MAX)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "concatenates %zu tensors (at most %d)",
                        n->p->n_input, CBC_NET_INPUTS_MAX);
    if (n->p->n_input == 1)
        return net_out(c, n->p->output[0], x0->netv, x0->rank, x0->nc, x0->nh, x0->nw);
    struct nbnode *d;
    if ((st = nb_add(c, n, CBC_NET_CONCAT, x0, &d)) != CBC_OK)
        return st;
    long C = 0;
    for (size_t i = 0; i < n->p->n_input; i++) {
        struct val *x;
        if ((st = net_in(c, n, i, &x)) != CBC_OK)
            return st;
        if (x->rank != x0->rank || x->nh != x0->nh || x->nw != x0->nw)
            return node_err(c, n, CBC_E_SHAPE, NULL, "input '%.120s' is [%d, %d, %d], input "
                            "'%.120s' [%d, %d, %d]: only the channels may differ", x->name, x->nc,
                            x->nh, x->nw, x0->name, x0->nc, x0->nh, x0->nw);
        d->d.in[i] = x->netv;
        C += x->nc;
    }
    if ((size_t)C * (size_t)x0->nh * (size_t)x0->nw > NET_VALUE_MAX)
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "gives %ld channels", C);
    d->d.n_in = (int)n->p->n_input;
    d->d.c = (int)C;
    return net_out(c, n->p->output[0], c->nb->n, x0->rank, (int)C, x0->nh, x0->nw);
}

/* Flatten and Reshape of a tensor of the network: the same value, seen
 * anew (of a constant: op_shape). */
static enum cbc_status nop_shape(struct ctx *c, const struct node *n, bool flatten)
{
    struct val *x, *sh = NULL;
    enum cbc_status st = input_val(c, n, 0, &x);
    if (st == CBC_OK && !flatten)
        st = input_val(c, n, 1, &sh);
    if (st != CBC_OK)
        return st;
    if (x->kind == V_CONST)
        return op_shape(c, n, flatten);
    if (x->kind != V_NET)
        return net_in(c, n, 0, &x);
    const size_t E = velems(x);
    if (flatten) {
        int64_t axis = attr_int(n, "axis", 1);
        if (axis != 1 && !(axis == -1 && x->rank == 2) && !(axis + x->rank == 1))
            return node_err(c, n, CBC_E_UNSUPPORTED, "flatten from dimension 1 (x.flatten(1))",
                            "flattens from axis %lld", (long long)axis);
        return net_out(c, n->p->output[0], x->netv, 2, (int)E, 1, 1);
    }
    if (sh->kind != V_CONST || sh->c.count < 2 || sh->c.count > 4)
        return node_err(c, n, CBC_E_UNSUPPORTED, "reshape with a constant shape of 2 to 4 "
                        "dimensions: x.flatten(1) exports so", "reshapes to a shape that is not "
                        "2 to 4 constant numbers");
    /* the batch stays first; of the others one may be -1, and 0 copies */
    int64_t d[4] = {0, 1, 1, 1}, known = 1;
    int rank = (int)sh->c.count, free_at = -1;
    const int64_t xd[4] = {0, x->rank == 2 ? (int64_t)E : x->nc, x->rank == 4 ? x->nh : x->nw,
                           x->nw};
    for (int i = 1; i < rank; i++) {
        double v = sh->c.v[i];
        if (v == -1 && free_at < 0) {
            free_at = i;
            continue;
        }
        if (v == 0 && i < x->rank)
            v = (double)xd[i];
        if (!(v >= 1 && v <= NET_VALUE_MAX) || v != floor(v))
            return node_err(c, n, CBC_E_UNSUPPORTED, "reshape to [batch, ...] with positive "
                            "sizes", "reshapes to a size %g on axis %d", sh->c.v[i], i);
        d[i] = (int64_t)v;
        known *= d[i];
        if (known > NET_VALUE_MAX)
            return node_err(c, n, CBC_E_SHAPE, NULL, "reshapes to over 2^28 elements");
    }
    if (free_at > 0) {
        if (E % (size_t)known)
            return node_err(c, n, CBC_E_SHAPE, NULL, "cannot reshape %zu elements per input "
                            "with -1", E);
        d[free_at] = (int64_t)(E / (size_t)known);
        known *= d[free_at];
    }
    if ((size_t)known != E)
        return node_err(c, n, CBC_E_SHAPE, "igrun reshapes each input, the batch first",
                        "reshapes %zu elements per input to %lld", E, (long long)known);
    if (rank == 2)
        return net_out(c, n->p->output[0], x->netv, 2, (int)E, 1, 1);
    if (rank == 3)
        return net_out(c, n->p->output[0], x->netv, 3, (int)d[1], 1, (int)d[2]);
    return net_out(c, n->p->output[0], x->netv, 4, (int)d[1], (int)d[2], (int)d[3]);
}

static enum cbc_status net_run_node(struct ctx *c, struct node *n)
{
    const char *op = str_or(n->p->op_type, "");
    const char *dom = str_or(n->p->domain, "");
    if (n->synth == SY_GELU)
        return nop_act(c, n, CBC_ACT_GELU, 0, n->syn_in, n->syn_out);
    if (n->synth == SY_SILU)
        return nop_act(c, n, CBC_ACT_SILU, 0, n->syn_in, n->syn_out);
    if (*dom && strcmp(dom, "ai.onnx"))
        return node_err(c, n, CBC_E_UNSUPPORTED, "export with the standard operators (the "
                        "dynamo exporter's model.optimize() inlines its functions)",
                        "is an operator of domain '%.80s'", dom);
    if (n->p->n_output < 1 || !n->p->output[0] || !*n->p->output[0])
        return node_err(c, n, CBC_E_FORMAT, NULL, "has no output");
    if (n->p->n_input < 1 && strcmp(op, "Constant"))
        return node_err(c, n, CBC_E_FORMAT, NULL, "has no input");
    enum cbc_act act;
    double prm;
    enum cbc_status ast;
    if (activation_of(c, n, op, &act, &prm, &ast))
        return ast != CBC_OK ? ast : nop_act(c, n, act, prm, n->p->input[0], n->p->output[0]);
    if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax")) {
        int64_t axis = attr_int(n, "axis", c->opset >= 13 ? -1 : 1);
        if (axis != -1 && axis != 1)
            return node_err(c, n, CBC_E_UNSUPPORTED, "use dim=-1 (each input's outputs)",
                            "is taken over axis %lld", (long long)axis);
        return nop_act(c, n, op[0] == 'S' ? CBC_ACT_SOFTMAX : CBC_ACT_LOG_SOFTMAX, 0,
                       n->p->input[0], n->p->output[0]);
    }
    if (!strcmp(op, "Conv"))
        return nop_conv(c, n);
    if (!strcmp(op, "MaxPool"))
        return nop_pool(c, n, CBC_NET_MAXPOOL);
    if (!strcmp(op, "AveragePool"))
        return nop_pool(c, n, CBC_NET_AVGPOOL);
    if (!strcmp(op, "GlobalAveragePool"))
        return nop_pool(c, n, CBC_NET_GLOBAL_AVGPOOL);
    if (!strcmp(op, "ReduceMean"))
        return nop_reducemean(c, n);
    if (!strcmp(op, "Concat"))
        return nop_concat(c, n);
    if (!strcmp(op, "Gemm") || !strcmp(op, "MatMul"))
        return nop_linear(c, n, op[0] == 'G');
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div"))
        return nop_binary(c, n, op[0] == 'A' ? '+' : op[0] == 'S' ? '-' : op[0] == 'M' ? '*' : '/');
    if (!strcmp(op, "BatchNormalization"))
        return nop_batchnorm(c, n);
    if (!strcmp(op, "LayerNormalization"))
        return nop_layernorm(c, n);
    if (!strcmp(op, "Flatten") || !strcmp(op, "Reshape"))
        return nop_shape(c, n, op[0] == 'F');
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout"))
        return op_alias(c, n);
    if (!strcmp(op, "Cast")) {
        int64_t to = attr_int(n, "to", 0);
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE)
            return op_alias(c, n);
        return node_err(c, n, CBC_E_UNSUPPORTED, NULL, "casts to %s", type_name((int32_t)to));
    }
    if (!strcmp(op, "Constant"))
        return op_constant(c, n);
    if (!strcmp(op, "Transpose"))
        return op_transpose(c, n);
    return node_err(c, n, CBC_E_UNSUPPORTED, net_hint(op), "is not an operator igrun runs");
}

/* The network's summary for messages: "3x32x32 conv(16,3x3) relu ... linear(10)". */
static void net_summary(const struct cbc_net *net, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%dx%dx%d", net->c, net->h, net->w);
    for (int k = 0; k < net->n_nodes && o < len; k++) {
        const struct cbc_net_node *d = &net->nodes[k];
        switch (d->op) {
        case CBC_NET_CONV:
            o += (size_t)snprintf(buf + o, len - o, " conv(%d,%dx%d%s)", d->c, d->kh, d->kw,
                                  d->groups > 1 && d->groups == d->c ? ",depthwise"
                                  : d->groups > 1                    ? ",grouped"
                                                                     : "");
            break;
        case CBC_NET_MAXPOOL: o += (size_t)snprintf(buf + o, len - o, " maxpool"); break;
        case CBC_NET_AVGPOOL: o += (size_t)snprintf(buf + o, len - o, " avgpool"); break;
        case CBC_NET_GLOBAL_AVGPOOL: o += (size_t)snprintf(buf + o, len - o, " gap"); break;
        case CBC_NET_LINEAR: o += (size_t)snprintf(buf + o, len - o, " linear(%d)", d->c); break;
        case CBC_NET_AFFINE: o += (size_t)snprintf(buf + o, len - o, " scale"); break;
        case CBC_NET_ACT:
            o += (size_t)snprintf(buf + o, len - o, " %s", cbc_act_name(d->act));
            break;
        case CBC_NET_ADD: o += (size_t)snprintf(buf + o, len - o, " add"); break;
        case CBC_NET_CONCAT: o += (size_t)snprintf(buf + o, len - o, " concat"); break;
        case CBC_NET_LAYERNORM: o += (size_t)snprintf(buf + o, len - o, " layernorm"); break;
        }
    }
    if (o >= len && len > 4)
        strcpy(buf + len - 4, "...");
}

static enum cbc_status net_finish(struct ctx *c, struct cbc_net_owned **out)
{
    struct nbuild *b = c->nb;
    const Onnx__ValueInfoProto *go = c->g->output[0];
    struct val *v = val_find(c, go->name);
    if (!v || v->kind != V_NET || v->netv == 0)
        return ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the output '%s' is not computed "
                          "from the input by the graph's operators", c->path, go->name);
    if (v->netv != b->n)
        return ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the output '%s' is not the last "
                          "value the graph computes", c->path, go->name);
    size_t total = 0, names = 0;
    for (int k = 0; k < b->n; k++) {
        const struct nbnode *d = &b->v[k];
        total += d->nw + d->nbias + (d->mul ? 2 * (size_t)d->d.c : 0);
        names += strlen(d->name) + 1;
    }
    struct cbc_net_owned *m = calloc(1, sizeof *m);
    if (!m || !(m->nodes = calloc((size_t)b->n, sizeof *m->nodes)) ||
        !(m->storage = malloc((total ? total : 1) * sizeof *m->storage)) ||
        !(m->names = malloc(names)) || !(m->summary = malloc(1024))) {
        cbc_net_owned_free(m);
        return ig_err_oom(c->err);
    }
    float *p = m->storage;
    char *nm = m->names;
    for (int k = 0; k < b->n; k++) {
        const struct nbnode *s = &b->v[k];
        struct cbc_net_node *d = &m->nodes[k];
        *d = s->d;
        const struct {
            const double *src;
            size_t count;
            const float **dst;
        } arrays[4] = {{s->w, s->nw, &d->weight},
                       {s->b, s->nbias, &d->bias},
                       {s->mul, s->mul ? (size_t)s->d.c : 0, &d->mul},
                       {s->add, s->add ? (size_t)s->d.c : 0, &d->add}};
        for (int a = 0; a < 4; a++) {
            if (!arrays[a].src)
                continue;
            for (size_t q = 0; q < arrays[a].count; q++)
                p[q] = (float)arrays[a].src[q];
            *arrays[a].dst = p;
            p += arrays[a].count;
        }
        strcpy(nm, s->name);
        d->name = nm;
        nm += strlen(s->name) + 1;
    }
    m->net.c = b->in_c, m->net.h = b->in_h, m->net.w = b->in_w;
    m->net.n_nodes = b->n;
    m->net.nodes = m->nodes;
    enum cbc_status st = cbc_net_validate(&m->net, c->err);
    if (st != CBC_OK) {
        char msg[sizeof c->err->msg];
        snprintf(msg, sizeof msg, "%s", c->err->msg);
        ig_err_set(c->err, st, "'%s': %s", c->path, msg);
        cbc_net_owned_free(m);
        return st;
    }
    net_summary(&m->net, m->summary, 1024);
    *out = m;
    return CBC_OK;
}

/* The network of every live node. */
static enum cbc_status run_net(struct ctx *c, struct cbc_net_owned **out)
{
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; i < c->nn && st == CBC_OK; i++) {
        struct node *n = &c->nodes[i];
        const char *op = str_or(n->p->op_type, "");
        if (!n->skip && n->live && !n->synth && !net_known_op(op) && !*str_or(n->p->domain, ""))
            st = node_err(c, n, CBC_E_UNSUPPORTED, net_hint(op), "is not an operator igrun runs");
    }
    if (st != CBC_OK)
        return st;
    if (!(c->nb = calloc(1, sizeof *c->nb)))
        return ig_err_oom(c->err);
    /* the input: its shape per input, every dimension known */
    const Onnx__ValueInfoProto *gi = NULL;
    for (size_t i = 0; i < c->g->n_input; i++) {
        struct val *v = val_find(c, c->g->input[i]->name);
        if (v && v->kind == V_CHAIN)
            gi = c->g->input[i];
    }
    struct val *x = gi ? val_find(c, gi->name) : NULL;
    if (!x)
        return ig_err_set(c->err, CBC_E_FORMAT, "'%s': the graph has no input", c->path);
    int64_t d[4] = {0, 1, 1, 1};
    if (x->rank < 2 || x->rank > 4)
        return ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the input '%s' has %d dimensions: "
                          "igrun takes [batch, features], [batch, C, L] or [batch, C, H, W]",
                          c->path, gi->name, x->rank);
    uint64_t elems = 1;
    for (int i = 1; i < x->rank; i++) {
        d[i] = x->dims[i];
        if (d[i] < 1 || (elems *= (uint64_t)d[i]) > NET_VALUE_MAX) {
            ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': the input '%s' has no fixed size on "
                       "axis %d", c->path, gi->name, i);
            ig_err_hint(c->err, "export with a fixed input shape: dynamic axes on the batch only");
            return CBC_E_UNSUPPORTED;
        }
    }
    int rank = x->rank;
    if (rank == 2)
        c->nb->in_c = (int)d[1], c->nb->in_h = c->nb->in_w = 1;
    else if (rank == 3)
        c->nb->in_c = (int)d[1], c->nb->in_h = 1, c->nb->in_w = (int)d[2];
    else
        c->nb->in_c = (int)d[1], c->nb->in_h = (int)d[2], c->nb->in_w = (int)d[3];
    x->kind = V_NET;
    x->netv = 0, x->nc = c->nb->in_c, x->nh = c->nb->in_h, x->nw = c->nb->in_w;
    for (size_t i = 0; i < c->nn && st == CBC_OK; i++) {
        struct node *n = &c->nodes[i];
        if (n->skip || !n->live || (n->p->op_type && !strcmp(n->p->op_type, "Constant")))
            continue;
        st = net_run_node(c, n);
    }
    if (st == CBC_OK)
        st = net_finish(c, out);
    return st;
}

/* Whether the live graph holds a convolution or pool: an image model. */
static bool is_convolutional(const struct ctx *c)
{
    for (size_t i = 0; i < c->nn; i++) {
        const struct node *n = &c->nodes[i];
        const char *op = str_or(n->p->op_type, "");
        if (!n->skip && n->live && !*str_or(n->p->domain, "") &&
            (!strcmp(op, "Conv") || !strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") ||
             !strcmp(op, "GlobalAveragePool")))
            return true;
    }
    return false;
}

/* The part of reading a model both readers share: the wire check, the
 * decoding, the tables of values and names, initializers, the input,
 * Constant nodes, the patterns and which nodes the output depends on.
 * The caller releases c and *mpp with onnx_end whatever this returns. */
static enum cbc_status onnx_begin(struct ctx *c, Onnx__ModelProto **mpp, const char *path,
                                  const uint8_t *data, size_t len, struct cbc_err *err)
{
    *mpp = NULL;
    struct wire w = {0, 0};
    int wr = wire_check(&onnx__model_proto__descriptor, data, data + len, 0, &w);
    if (wr) {
        ig_err_set(err, wr == 1 ? CBC_E_FORMAT : CBC_E_UNSUPPORTED,
                   wr == 1   ? "'%s': not an ONNX model (the protobuf is malformed or truncated)"
                   : wr == 2 ? "'%s': the protobuf nests deeper than %d messages"
                             : "'%s': the protobuf holds over %u messages",
                   path, wr == 2 ? WIRE_DEPTH_MAX : (int)WIRE_MESSAGES_MAX);
        if (wr == 1)
            ig_err_hint(err, "write it with torch.onnx.export(model, x, 'model.onnx')");
        return err ? err->status : CBC_E_FORMAT;
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    *mpp = mp;
    if (!mp) {
        ig_err_set(err, CBC_E_FORMAT, "'%s': not an ONNX model (protobuf-c cannot decode it)",
                   path);
        ig_err_hint(err, "write it with torch.onnx.export(model, x, 'model.onnx')");
        return CBC_E_FORMAT;
    }
    c->path = path;
    c->err = err;
    c->g = mp->graph;
    c->in_frozen = -1;
    enum cbc_status st = CBC_OK;
    const Onnx__GraphProto *g = mp->graph;
    for (size_t i = 0; i < mp->n_opset_import; i++)
        if (mp->opset_import[i] && mp->opset_import[i]->has_version &&
            (!mp->opset_import[i]->domain || !*mp->opset_import[i]->domain ||
             !strcmp(mp->opset_import[i]->domain, "ai.onnx")))
            c->opset = (int)mp->opset_import[i]->version;
    if (!g) {
        st = ig_err_set(err, CBC_E_FORMAT, "'%s': the model has no graph", path);
        return st;
    }
    if (g->n_node > ONNX_NODES_MAX || g->n_initializer > ONNX_NODES_MAX ||
        g->n_input > ONNX_NODES_MAX) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': %zu nodes and %zu initializers: more than "
                        "an MLP igrun runs", path, g->n_node, g->n_initializer);
        return st;
    }
    /* every name the graph defines: initializers, inputs, node outputs */
    size_t defs = g->n_initializer + g->n_input + 1;
    for (size_t i = 0; i < g->n_node; i++)
        defs += g->node[i] ? g->node[i]->n_output : 0;
    if (defs > 8u * ONNX_NODES_MAX) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': %zu values: more than an MLP igrun runs",
                        path, defs);
        return st;
    }
    c->cap = defs;
    c->vals = calloc(defs, sizeof *c->vals);
    bool vix_ok = index_init(&c->vix, defs);
    c->nodes = calloc(g->n_node + 1, sizeof *c->nodes);
    c->L = calloc(ONNX_LAYERS_MAX, sizeof *c->L);
    size_t refs = g->n_output + 1;
    for (size_t i = 0; i < g->n_node; i++)
        refs += g->node[i] ? g->node[i]->n_input + g->node[i]->n_output : 0;
    if (refs > 32u * ONNX_NODES_MAX) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': %zu node inputs and outputs: more than an "
                        "MLP igrun runs", path, refs);
        return st;
    }
    c->names_cap = refs;
    c->names = calloc(refs, sizeof *c->names);
    if (!c->vals || !vix_ok || !c->nodes || !c->L || !c->names || !index_init(&c->nix, refs)) {
        st = ig_err_oom(err);
        return st;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!np)
            continue;
        for (size_t k = 0; k < np->n_input; k++)
            if (!np->input[k]) {
                st = ig_err_set(err, CBC_E_FORMAT, "'%s': node #%zu has an unnamed input", path,
                                i);
                return st;
            }
        for (size_t k = 0; k < np->n_output; k++)
            if (!np->output[k]) {
                st = ig_err_set(err, CBC_E_FORMAT, "'%s': node #%zu has an unnamed output", path,
                                i);
                return st;
            }
        c->nodes[c->nn++] = (struct node){np, (int)i, false, false, SY_NONE, NULL, NULL};
    }
    if (g->n_output != 1 || !g->output[0] || !g->output[0]->name) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': the graph has %zu outputs; igrun explains "
                        "a model of one output tensor", path, g->n_output);
        ig_err_hint(err, "return one tensor from forward() (the logits or probabilities)");
        return st;
    }
    /* initializers; then the one input that is not an initializer */
    for (size_t i = 0; i < g->n_initializer && st == CBC_OK; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t || !t->name || !*t->name) {
            st = ig_err_set(err, CBC_E_FORMAT, "'%s': initializer #%zu has no name", path, i);
            break;
        }
        struct val *v = val_new(c, t->name);
        if (!v) {
            st = ig_err_oom(err);
            break;
        }
        if ((st = tensor_read(path, t, &v->c, err)) == CBC_OK)
            v->kind = V_CONST;
    }
    if (st != CBC_OK)
        return st;
    if (g->n_sparse_initializer) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': sparse initializers are not read", path);
        return st;
    }
    const Onnx__ValueInfoProto *input = NULL;
    size_t n_inputs = 0;
    for (size_t i = 0; i < g->n_input; i++) {
        const Onnx__ValueInfoProto *in = g->input[i];
        if (!in || !in->name || !*in->name) {
            st = ig_err_set(err, CBC_E_FORMAT, "'%s': graph input #%zu has no name", path, i);
            return st;
        }
        const struct val *v = val_find(c, in->name);
        if (v && v->kind == V_CONST)
            continue; /* an initializer listed as an input (IR version 3) */
        input = in;
        n_inputs++;
    }
    if (n_inputs != 1) {
        st = ig_err_set(err, CBC_E_UNSUPPORTED, "'%s': the graph takes %zu inputs; igrun explains "
                        "a model of one input tensor", path, n_inputs);
        return st;
    }
    if ((st = graph_input(c, input)) != CBC_OK)
        return st;
    /* Constant nodes first, so patterns can read them; they are run again in order */
    for (size_t i = 0; i < c->nn && st == CBC_OK; i++)
        if (c->nodes[i].p->op_type && !strcmp(c->nodes[i].p->op_type, "Constant"))
            st = op_constant(c, &c->nodes[i]);
    if (st != CBC_OK)
        return st;
    index_names(c);
    find_patterns(c); /* patterns never share a node: the counts it reads stay true */
    index_names(c);
    if ((st = mark_live(c, g->output[0]->name)) != CBC_OK)
        return st;
    return CBC_OK;
}

static void onnx_end(struct ctx *c, Onnx__ModelProto *mp)
{
    for (size_t i = 0; i < c->nv; i++)
        free(c->vals[i].c.v);
    for (int l = 0; c->L && l < c->nl; l++)
        blayer_free(&c->L[l]);
    free(c->vals), free(c->vix.slot), free(c->nodes), free(c->L), free(c->in_mul), free(c->in_add);
    free(c->names), free(c->nix.slot);
    nbuild_free(c->nb);
    if (mp)
        onnx__model_proto__free_unpacked(mp, NULL);
}

/* The chain of layers: every live node run onto it. */
static enum cbc_status run_chain(struct ctx *c, struct cbc_mlp_owned **out)
{
    enum cbc_status st = CBC_OK;
    /* an operator igrun never runs is named before anything else is said */
    for (size_t i = 0; i < c->nn && st == CBC_OK; i++) {
        struct node *n = &c->nodes[i];
        const char *op = str_or(n->p->op_type, "");
        if (!n->skip && n->live && !n->synth && !known_op(op) && !*str_or(n->p->domain, ""))
            st = node_err(c, n, CBC_E_UNSUPPORTED, unsupported_hint(op), "is not an operator "
                          "igrun runs");
    }
    for (size_t i = 0; i < c->nn && st == CBC_OK; i++) {
        struct node *n = &c->nodes[i];
        if (n->skip || !n->live || (n->p->op_type && !strcmp(n->p->op_type, "Constant")))
            continue;
        st = run_node(c, n);
    }
    if (st == CBC_OK && c->nl == 0)
        st = ig_err_set(c->err, CBC_E_UNSUPPORTED, "'%s': no Linear layer (Gemm or MatMul) "
                        "between the input and the output", c->path);
    if (st == CBC_OK)
        st = finish(c, out);
    return st;
}

enum cbc_status ig_onnx_load_mem(const char *path, const uint8_t *data, size_t len,
                                 struct cbc_mlp_owned **out, struct cbc_err *err)
{
    *out = NULL;
    struct ctx c = {0};
    Onnx__ModelProto *mp;
    enum cbc_status st = onnx_begin(&c, &mp, path, data, len, err);
    if (st == CBC_OK)
        st = run_chain(&c, out);
    onnx_end(&c, mp);
    return st;
}

enum cbc_status cbc_mlp_load_onnx(const char *path, struct cbc_mlp_owned **out, struct cbc_err *err)
{
    uint8_t *file;
    size_t len;
    enum cbc_status st = ig_file_read(path, IG_FILE_MAX / 2, &file, &len, err);
    if (st != CBC_OK)
        return st;
    st = ig_onnx_load_mem(path, file, len, out, err);
    free(file);
    return st;
}

/* Reads a model in memory into whichever form `want` asks: 0 the chain of
 * layers (ig_onnx_load_mem), 1 a network, 2 a network when the graph is
 * convolutional, else the chain. */
enum cbc_status ig_onnx_load_any_mem(const char *path, const uint8_t *data, size_t len, int want,
                                     struct cbc_mlp_owned **mlp, struct cbc_net_owned **net,
                                     struct cbc_err *err)
{
    if (mlp)
        *mlp = NULL;
    *net = NULL;
    struct ctx c = {0};
    Onnx__ModelProto *mp;
    enum cbc_status st = onnx_begin(&c, &mp, path, data, len, err);
    if (st == CBC_OK) {
        if (want == 1 || (want == 2 && is_convolutional(&c)) || !mlp)
            st = run_net(&c, net);
        else
            st = run_chain(&c, mlp);
    }
    onnx_end(&c, mp);
    return st;
}

static enum cbc_status load_file(const char *path, int want, struct cbc_mlp_owned **mlp,
                                 struct cbc_net_owned **net, struct cbc_err *err)
{
    uint8_t *file;
    size_t len;
    enum cbc_status st = ig_file_read(path, IG_FILE_MAX / 2, &file, &len, err);
    if (st != CBC_OK)
        return st;
    st = ig_onnx_load_any_mem(path, file, len, want, mlp, net, err);
    free(file);
    return st;
}

enum cbc_status cbc_net_load_onnx(const char *path, struct cbc_net_owned **out, struct cbc_err *err)
{
    *out = NULL;
    return load_file(path, 1, NULL, out, err);
}

enum cbc_status cbc_onnx_load(const char *path, struct cbc_mlp_owned **mlp,
                              struct cbc_net_owned **net, struct cbc_err *err)
{
    *mlp = NULL;
    *net = NULL;
    return load_file(path, 2, mlp, net, err);
}
