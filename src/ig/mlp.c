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
                                        "leakyrelu"};

bool cbc_act_parse(const char *name, enum cbc_act *out)
{
    /* igrun's spellings and PyTorch's: "relu", "ReLU", "nn.ReLU", "torch.nn.ReLU()" */
    if (!strncmp(name, "torch.", 6))
        name += 6;
    if (!strncmp(name, "nn.", 3))
        name += 3;
    size_t n = strlen(name);
    if (n >= 2 && !strcmp(name + n - 2, "()"))
        n -= 2;
    /* PyTorch's default parameters, the only ones the kernels take:
     * LeakyReLU(0.01), ELU(1.0) */
    char norm[32];
    if (n < sizeof norm) {
        memcpy(norm, name, n);
        norm[n] = '\0';
        if (!strcasecmp(norm, "leaky_relu") || !strcasecmp(norm, "leakyrelu(0.01)") ||
            !strcasecmp(norm, "leaky_relu(0.01)") || !strcasecmp(norm, "LeakyReLU(negative_slope=0.01)")) {
            *out = CBC_ACT_LEAKY_RELU;
            return true;
        }
        if (!strcasecmp(norm, "elu(1.0)") || !strcasecmp(norm, "elu(1)") ||
            !strcasecmp(norm, "ELU(alpha=1.0)") || !strcasecmp(norm, "swish")) {
            *out = !strcasecmp(norm, "swish") ? CBC_ACT_SILU : CBC_ACT_ELU;
            return true;
        }
    }
    for (size_t i = 0; i < IG_ARRAY_LEN(act_names); i++)
        if (strlen(act_names[i]) == n && !strncasecmp(name, act_names[i], n)) {
            *out = (enum cbc_act)i;
            return true;
        }
    if ((n == 6 && !strncasecmp(name, "linear", 6)) || (n == 4 && !strncasecmp(name, "none", 4))) {
        *out = CBC_ACT_IDENTITY;
        return true;
    }
    return false;
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
        long bad = first_nonfinite(L->w, (size_t)L->in * (size_t)L->out);
        if (bad >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d weight [%ld][%ld] is %g", l,
                               bad / L->in, bad % L->in, (double)L->w[bad]);
        if (L->b && (bad = first_nonfinite(L->b, (size_t)L->out)) >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "layer %d bias [%ld] is %g", l, bad,
                               (double)L->b[bad]);
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
