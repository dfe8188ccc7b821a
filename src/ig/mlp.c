/* mlp.c: names, validation and request helpers shared by every IG backend.
 *
 * Validation happens once, before any backend work: a model or input with
 * a NaN, an Inf or shapes that do not chain is refused with the layer (or
 * input) and the index, so no backend ever computes garbage from it.
 */
#include "ig_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const act_names[] = {"identity", "relu",  "tanh",     "sigmoid",
                                        "gelu",     "silu",  "softplus", "elu",
                                        "leakyrelu", "softmax", "logsoftmax"};

/* The value of "x", "negative_slope=x", "alpha=x": the one keyword the
 * activation takes, or a bare number. */
static bool parse_number_arg(const char *arg, const char *keyword, float *out)
{
    size_t kl = strlen(keyword);
    if (!strncasecmp(arg, keyword, kl) && arg[kl] == '=')
        arg += kl + 1;
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end || !isfinite(v) || fabs(v) > 1e6)
        return false;
    *out = (float)v;
    return true;
}

bool cbc_act_parse_param(const char *name, enum cbc_act *out, float *param)
{
    /* igrun's spellings and PyTorch's: "relu", "ReLU", "nn.ReLU", "torch.nn.ReLU()",
     * "nn.LeakyReLU(negative_slope=0.2, inplace=True)" */
    if (!strncmp(name, "torch.", 6))
        name += 6;
    if (!strncmp(name, "nn.", 3))
        name += 3;
    char base[32], args[64] = "";
    const char *paren = strchr(name, '(');
    size_t bl = paren ? (size_t)(paren - name) : strlen(name);
    if (bl == 0 || bl >= sizeof base)
        return false;
    memcpy(base, name, bl);
    base[bl] = '\0';
    if (paren) { /* "(...)": its one argument, blanks and "inplace=..." dropped */
        const char *p = paren + 1, *close = strchr(p, ')');
        if (!close || close[1])
            return false;
        size_t n = 0;
        while (p < close) {
            char tok[64];
            size_t tl = 0;
            for (; p < close && *p != ','; p++)
                if (*p != ' ' && *p != '\t') {
                    if (tl + 1 >= sizeof tok)
                        return false;
                    tok[tl++] = *p;
                }
            tok[tl] = '\0';
            if (p < close)
                p++; /* the comma */
            if (!tl || !strncasecmp(tok, "inplace=", 8))
                continue;
            if (n) /* a second argument */
                return false;
            memcpy(args, tok, tl + 1);
            n = tl;
        }
    }
    enum cbc_act a;
    bool found = false;
    for (size_t i = 0; i < IG_ARRAY_LEN(act_names); i++)
        if (!strcasecmp(base, act_names[i]))
            a = (enum cbc_act)i, found = true;
    static const struct {
        const char *name;
        enum cbc_act act;
    } alias[] = {{"leaky_relu", CBC_ACT_LEAKY_RELU}, {"swish", CBC_ACT_SILU},
                 {"linear", CBC_ACT_IDENTITY},       {"none", CBC_ACT_IDENTITY},
                 {"log_softmax", CBC_ACT_LOG_SOFTMAX}};
    for (size_t i = 0; !found && i < IG_ARRAY_LEN(alias); i++)
        if (!strcasecmp(base, alias[i].name))
            a = alias[i].act, found = true;
    if (!found)
        return false;
    float v = 0;
    if (args[0]) {
        switch (a) {
        case CBC_ACT_LEAKY_RELU:
            if (!parse_number_arg(args, "negative_slope", &v))
                return false;
            break;
        case CBC_ACT_ELU:
            if (!parse_number_arg(args, "alpha", &v))
                return false;
            break;
        case CBC_ACT_SOFTMAX:
        case CBC_ACT_LOG_SOFTMAX: /* over the outputs of each input: the last dimension */
            if (strcmp(args, "dim=-1") && strcmp(args, "dim=1") && strcmp(args, "-1") &&
                strcmp(args, "1"))
                return false;
            break;
        default: return false; /* no parameters */
        }
    }
    if (args[0] && v == 0 && (a == CBC_ACT_LEAKY_RELU || a == CBC_ACT_ELU))
        a = CBC_ACT_RELU; /* a slope or alpha of 0 is ReLU (0 in act_param means the default) */
    *out = a;
    *param = v;
    return true;
}

bool cbc_act_parse(const char *name, enum cbc_act *out)
{
    enum cbc_act a;
    float p;
    if (!cbc_act_parse_param(name, &a, &p))
        return false;
    if (p != 0 && p != (float)cbc_act_param_default(a))
        return false; /* a parameter other than PyTorch's default */
    *out = a;
    return true;
}

const char *cbc_act_name(enum cbc_act a)
{
    return (unsigned)a < IG_ARRAY_LEN(act_names) ? act_names[a] : "unknown";
}

static long first_nonfinite(const float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return (long)i;
    return -1;
}

enum cbc_status cbc_mlp_validate(const struct cbc_mlp *m, struct cbc_err *err)
{
    if (!m || m->n_layers < 1 || !m->layers)
        return ig_err_set(err, CBC_E_SHAPE, "the model has no layers");
    for (int l = 0; l < m->n_layers; l++) {
        const struct cbc_mlp_layer *L = &m->layers[l];
        if (L->in < 1 || L->out < 1 || !L->w)
            return ig_err_set(err, CBC_E_SHAPE, "layer %d has shape %dx%d", l, L->out, L->in);
        if (l > 0 && m->layers[l - 1].out != L->in)
            return ig_err_set(err, CBC_E_SHAPE,
                               "layer %d takes %d inputs but layer %d gives %d outputs", l, L->in,
                               l - 1, m->layers[l - 1].out);
        if ((unsigned)L->act >= IG_ARRAY_LEN(act_names))
            return ig_err_set(err, CBC_E_USAGE, "layer %d has an unknown activation", l);
        if ((L->act == CBC_ACT_SOFTMAX || L->act == CBC_ACT_LOG_SOFTMAX) && l != m->n_layers - 1)
            return ig_err_set(err, CBC_E_USAGE, "layer %d: %s is taken on the last layer only", l,
                               cbc_act_name(L->act));
        if ((L->act == CBC_ACT_SOFTMAX || L->act == CBC_ACT_LOG_SOFTMAX) &&
            L->norm == CBC_NORM_AFTER_ACT)
            return ig_err_set(err, CBC_E_USAGE, "layer %d: a LayerNorm after %s is not taken", l,
                               cbc_act_name(L->act));
        if (!isfinite(L->act_param) || fabsf(L->act_param) > 1e6f)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d: activation parameter %g", l,
                               (double)L->act_param);
        if ((unsigned)L->norm > CBC_NORM_AFTER_ACT)
            return ig_err_set(err, CBC_E_USAGE, "layer %d has an unknown LayerNorm position", l);
        if (L->norm != CBC_NORM_NONE && !(L->norm_eps >= 0 && L->norm_eps < 1))
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d: LayerNorm eps %g, expected [0, 1)",
                               l, (double)L->norm_eps);
        long bad = first_nonfinite(L->w, (size_t)L->in * (size_t)L->out);
        if (bad >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d weight [%ld][%ld] is %g", l,
                               bad / L->in, bad % L->in, (double)L->w[bad]);
        if (L->b && (bad = first_nonfinite(L->b, (size_t)L->out)) >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d bias [%ld] is %g", l, bad,
                               (double)L->b[bad]);
        if (L->norm && L->norm_w && (bad = first_nonfinite(L->norm_w, (size_t)L->out)) >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d LayerNorm weight [%ld] is %g", l, bad,
                               (double)L->norm_w[bad]);
        if (L->norm && L->norm_b && (bad = first_nonfinite(L->norm_b, (size_t)L->out)) >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d LayerNorm bias [%ld] is %g", l, bad,
                               (double)L->norm_b[bad]);
        const struct {
            const float *v;
            const char *what;
        } vecs[3] = {{L->mul, "scale"}, {L->add, "shift"}, {L->residual_mul, "residual scale"}};
        for (int q = 0; q < 3; q++)
            if (vecs[q].v && (bad = first_nonfinite(vecs[q].v, (size_t)L->out)) >= 0)
                return ig_err_set(err, CBC_E_NUMERIC, "layer %d %s [%ld] is %g", l, vecs[q].what,
                                  bad, (double)vecs[q].v[bad]);
        if ((unsigned)L->residual > CBC_RESIDUAL_BEFORE_ACT)
            return ig_err_set(err, CBC_E_USAGE, "layer %d has an unknown residual kind", l);
        if (L->residual != CBC_RESIDUAL_NONE) {
            int from = L->residual_from;
            if (from < -1 || from >= l)
                return ig_err_set(err, CBC_E_USAGE, "layer %d adds a residual from layer %d: "
                                  "expected the input (-1) or an earlier layer (0 to %d)", l, from,
                                  l - 1);
            int width = from < 0 ? m->layers[0].in : m->layers[from].out;
            if (width != L->out && from < 0)
                return ig_err_set(err, CBC_E_SHAPE, "layer %d (%d outputs) adds the input as a "
                                  "residual, which has %d features", l, L->out, width);
            if (width != L->out)
                return ig_err_set(err, CBC_E_SHAPE, "layer %d (%d outputs) adds a residual from "
                                  "layer %d, which has %d units", l, L->out, from, width);
        }
    }
    return CBC_OK;
}

void cbc_ig_request_defaults(struct cbc_ig_request *r)
{
    memset(r, 0, sizeof *r);
    r->method = CBC_IG_GAUSS_LEGENDRE;
    r->steps = 50;
    r->baseline.kind = CBC_IG_BASELINE_ZEROS;
    r->gradient = CBC_IG_ANALYTIC;
}

enum cbc_status cbc_ig_validate_request(const struct cbc_ig_request *r, size_t F,
                                        struct cbc_err *err)
{
    if (!r->x || r->n == 0)
        return ig_err_set(err, CBC_E_USAGE, "no inputs");
    if (F == 0)
        return ig_err_set(err, CBC_E_SHAPE, "inputs have no features");
    long bad = first_nonfinite(r->x, r->n * F);
    if (bad >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "input %ld feature %ld is %g", bad / (long)F,
                           bad % (long)F, (double)r->x[bad]);
    const struct cbc_ig_baseline *b = &r->baseline;
    if (b->kind == CBC_IG_BASELINE_SCALAR && !isfinite(b->scalar))
        return ig_err_set(err, CBC_E_NUMERIC, "the baseline value is %g", (double)b->scalar);
    if ((b->kind == CBC_IG_BASELINE_SHARED || b->kind == CBC_IG_BASELINE_PER_INPUT) && !b->data)
        return ig_err_set(err, CBC_E_USAGE, "the baseline array is missing");
    size_t nb = b->kind == CBC_IG_BASELINE_SHARED ? F : b->kind == CBC_IG_BASELINE_PER_INPUT ? r->n * F : 0;
    if (nb && (bad = first_nonfinite(b->data, nb)) >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "baseline %ld feature %ld is %g", bad / (long)F,
                           bad % (long)F, (double)b->data[bad]);
    return CBC_OK;
}

enum cbc_status cbc_ig_rule(const struct cbc_ig_request *r, double **alphas, double **weights,
                            struct cbc_err *err)
{
    if (r->steps < 1 || r->steps > 100000)
        return ig_err_set(err, CBC_E_USAGE, "steps %d: expected 1 to 100000", r->steps);
    *alphas = calloc((size_t)r->steps, sizeof **alphas);
    *weights = calloc((size_t)r->steps, sizeof **weights);
    if (!*alphas || !*weights) {
        free(*alphas);
        free(*weights);
        return ig_err_oom(err);
    }
    enum cbc_status st = cbc_ig_quadrature(r->method, r->steps, *alphas, *weights, err);
    if (st != CBC_OK) {
        free(*alphas);
        free(*weights);
    }
    return st;
}

void cbc_ig_finish(struct cbc_ig_output *out, size_t n, size_t F)
{
    for (size_t b = 0; b < n; b++) {
        double s = 0;
        for (size_t i = 0; i < F; i++)
            s += out->attr[b * F + i];
        if (out->sum)
            out->sum[b] = s;
        if (out->delta)
            out->delta[b] = s - (out->f_x[b] - out->f_base[b]);
    }
}
