/* net.c: convolutional networks (struct cbc_net): validation, and the CPU
 * reference every GPU result is tested against.
 *
 * The reference is the textbook algorithm in double, as ig_cpu.c is for
 * MLPs: per input and quadrature point a forward pass through every node,
 * keeping every value, then backpropagation in reverse node order, each
 * node adding its inputs' share into their gradients (a value read by
 * several nodes, a residual's source, sums them). Convolutions loop over
 * output channel, input channel and kernel tap outside and over the output
 * pixels inside, the range of pixels whose tap lands in the input computed
 * once per tap; the backward pass is the same loop scattering into the
 * input's gradient. MaxPool's gradient goes to the first largest element of
 * each window in scan order, as PyTorch's does; ReLU's derivative at 0 is 0.
 *
 * Invariants: cbc_net_validate runs before any pass and is what makes the
 * passes' indexing safe (every shape follows from its inputs' by the
 * operator's rule, every size is below 2^31); nothing here depends on the
 * GPU engine's shortcuts, so agreement between the two means something.
 */
#include "ig_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NET_ELEMS_MAX (1u << 28) /* elements of one value */

static int one(int v)
{
    return v > 0 ? v : 1;
}

size_t cbc_net_features(const struct cbc_net *n)
{
    return (size_t)n->c * (size_t)n->h * (size_t)n->w;
}

static size_t node_elems(const struct cbc_net_node *d)
{
    return (size_t)d->c * (size_t)d->h * (size_t)d->w;
}

size_t cbc_net_outputs(const struct cbc_net *n)
{
    return n->n_nodes > 0 ? node_elems(&n->nodes[n->n_nodes - 1]) : 0;
}

/* The shape of value v: 0 the input, k + 1 node k's output. */
static void value_shape(const struct cbc_net *n, int v, int *c, int *h, int *w)
{
    if (v == 0) {
        *c = n->c, *h = n->h, *w = n->w;
    } else {
        const struct cbc_net_node *d = &n->nodes[v - 1];
        *c = d->c, *h = d->h, *w = d->w;
    }
}

static const char *nname(const struct cbc_net_node *d, int k, char *buf, size_t len)
{
    if (d->name && *d->name)
        snprintf(buf, len, "node %d '%.100s'", k, d->name);
    else
        snprintf(buf, len, "node %d", k);
    return buf;
}

static long first_bad(const float *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        if (!isfinite(v[i]))
            return (long)i;
    return -1;
}

/* Output extent of a window of k taps dilated by d, stride s, over n padded
 * by p0 and p1: 0 when it does not fit. */
static int window_out(int n, int k, int s, int d, int p0, int p1)
{
    long span = (long)d * (k - 1) + 1, padded = (long)n + p0 + p1;
    return padded < span ? 0 : (int)((padded - span) / s + 1);
}

static const char *const op_names[] = {"Conv",   "MaxPool", "AveragePool", "GlobalAveragePool",
                                       "Linear", "Affine",  "Activation",  "Add",
                                       "Concat", "LayerNorm"};

/* Conv, MaxPool and AveragePool: the window's parameters, and a Conv's
 * groups and weights; *oc, *oh and *ow get the shape the window gives. */
static enum cbc_status check_window(const struct cbc_net_node *d, const char *who,
                                    const char *op, int ic, int ih, int iw, int *oc, int *oh,
                                    int *ow, struct cbc_err *err)
{
    if (d->kh < 1 || d->kw < 1 || d->kh > 1024 || d->kw > 1024 || d->sh < 0 || d->sw < 0 ||
        d->dh < 0 || d->dw < 0 || d->sh > 1024 || d->sw > 1024 || d->dh > 1024 ||
        d->dw > 1024 || d->pt < 0 || d->pl < 0 || d->pb < 0 || d->pr < 0 ||
        d->pt > 4096 || d->pl > 4096 || d->pb > 4096 || d->pr > 4096)
        return ig_err_set(err, CBC_E_SHAPE, "%s (%s): window %dx%d, strides %d, %d, "
                          "dilations %d, %d, padding %d, %d, %d, %d", who, op, d->kh,
                          d->kw, d->sh, d->sw, d->dh, d->dw, d->pt, d->pl, d->pb, d->pr);
    int dh = one(d->dh), dw = one(d->dw);
    if (d->op != CBC_NET_CONV &&
        (d->pt > dh * (d->kh - 1) || d->pb > dh * (d->kh - 1) ||
         d->pl > dw * (d->kw - 1) || d->pr > dw * (d->kw - 1)))
        return ig_err_set(err, CBC_E_SHAPE, "%s (%s): padding %d, %d, %d, %d leaves "
                          "windows with no element of the input (window %dx%d)", who, op,
                          d->pt, d->pl, d->pb, d->pr, d->kh, d->kw);
    if (d->op == CBC_NET_AVGPOOL && (dh != 1 || dw != 1))
        return ig_err_set(err, CBC_E_UNSUPPORTED, "%s (%s): dilations %d, %d", who, op,
                          dh, dw);
    *oh = window_out(ih, d->kh, one(d->sh), dh, d->pt, d->pb);
    *ow = window_out(iw, d->kw, one(d->sw), dw, d->pl, d->pr);
    if (d->op != CBC_NET_CONV)
        return CBC_OK;
    int g = one(d->groups);
    if (ic % g || d->c % g)
        return ig_err_set(err, CBC_E_SHAPE, "%s (Conv): %d groups do not divide %d "
                          "input and %d output channels", who, g, ic, d->c);
    *oc = d->c;
    if (!d->weight)
        return ig_err_set(err, CBC_E_USAGE, "%s (Conv) has no weight", who);
    size_t nw = (size_t)d->c * (size_t)(ic / g) * (size_t)d->kh * (size_t)d->kw;
    if (nw > NET_ELEMS_MAX)
        return ig_err_set(err, CBC_E_SHAPE, "%s (Conv): %zu weights", who, nw);
    long bad = first_bad(d->weight, nw);
    if (bad >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "%s (Conv) weight [%ld] is %g", who, bad,
                          (double)d->weight[bad]);
    if ((bad = first_bad(d->bias, (size_t)d->c)) >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "%s (Conv) bias [%ld] is %g", who, bad,
                          (double)d->bias[bad]);
    return CBC_OK;
}

/* A Linear of in_elems inputs: a flat output, finite weights and bias. */
static enum cbc_status check_linear(const struct cbc_net_node *d, const char *who,
                                    size_t in_elems, struct cbc_err *err)
{
    if (d->h != 1 || d->w != 1)
        return ig_err_set(err, CBC_E_SHAPE, "%s (Linear) gives [%d, %d, %d]: a Linear "
                          "gives a flat vector", who, d->c, d->h, d->w);
    if (!d->weight)
        return ig_err_set(err, CBC_E_USAGE, "%s (Linear) has no weight", who);
    if ((size_t)d->c * in_elems > NET_ELEMS_MAX)
        return ig_err_set(err, CBC_E_SHAPE, "%s (Linear): %d x %zu weights", who, d->c,
                          in_elems);
    long bad = first_bad(d->weight, (size_t)d->c * in_elems);
    if (bad >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "%s (Linear) weight [%ld][%ld] is %g", who,
                          bad / (long)in_elems, bad % (long)in_elems,
                          (double)d->weight[bad]);
    if ((bad = first_bad(d->bias, (size_t)d->c)) >= 0)
        return ig_err_set(err, CBC_E_NUMERIC, "%s (Linear) bias [%ld] is %g", who, bad,
                          (double)d->bias[bad]);
    return CBC_OK;
}

/* The checks of node d's own operator, which reads value d->in[0] of
 * in_elems elements as [ic, ih, iw]; *oc, *oh and *ow come in as that shape
 * and leave as the one the operator's rule gives. */
static enum cbc_status check_operator(const struct cbc_net *n, const struct cbc_net_node *d,
                                      const char *who, const char *op, size_t in_elems, int ic,
                                      int ih, int iw, int *oc, int *oh, int *ow,
                                      struct cbc_err *err)
{
    switch (d->op) {
    case CBC_NET_CONV:
    case CBC_NET_MAXPOOL:
    case CBC_NET_AVGPOOL: return check_window(d, who, op, ic, ih, iw, oc, oh, ow, err);
    case CBC_NET_GLOBAL_AVGPOOL: *oh = *ow = 1; break;
    case CBC_NET_LINEAR:
        *oc = d->c, *oh = d->h, *ow = d->w;
        return check_linear(d, who, in_elems, err);
    case CBC_NET_AFFINE: {
        long bad = first_bad(d->mul, (size_t)d->c);
        if (bad < 0 && (bad = first_bad(d->add, (size_t)d->c)) >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "%s (Affine) shift [%ld] is %g", who, bad,
                              (double)d->add[bad]);
        if (bad >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "%s (Affine) scale [%ld] is %g", who, bad,
                              (double)d->mul[bad]);
        break;
    }
    case CBC_NET_ACT:
        if ((unsigned)d->act > CBC_ACT_LOG_SOFTMAX)
            return ig_err_set(err, CBC_E_USAGE, "%s has an unknown activation", who);
        if (!isfinite(d->act_param) || fabsf(d->act_param) > 1e6f)
            return ig_err_set(err, CBC_E_NUMERIC, "%s (%s): parameter %g", who,
                              cbc_act_name(d->act), (double)d->act_param);
        break;
    case CBC_NET_ADD: {
        int vc, vh, vw, bc, bh, bw;
        value_shape(n, d->in[0], &vc, &vh, &vw);
        value_shape(n, d->in[1], &bc, &bh, &bw);
        if ((size_t)bc * (size_t)bh * (size_t)bw != in_elems)
            return ig_err_set(err, CBC_E_SHAPE, "%s (Add) adds value %d [%d, %d, %d] to value "
                              "%d [%d, %d, %d]", who, d->in[1], bc, bh, bw, d->in[0], vc, vh,
                              vw);
        break;
    }
    case CBC_NET_CONCAT: {
        size_t sum = 0;
        for (int i = 0; i < d->n_in; i++) {
            int bc, bh, bw;
            value_shape(n, d->in[i], &bc, &bh, &bw);
            sum += (size_t)bc * (size_t)bh * (size_t)bw;
        }
        if (sum != node_elems(d))
            return ig_err_set(err, CBC_E_SHAPE, "%s (Concat) of %zu elements gives [%d, %d, "
                              "%d]", who, sum, d->c, d->h, d->w);
        break;
    }
    case CBC_NET_LAYERNORM: {
        if (!(d->eps >= 0 && d->eps < 1))
            return ig_err_set(err, CBC_E_NUMERIC, "%s (LayerNorm): eps %g, expected [0, 1)",
                              who, (double)d->eps);
        long bad = first_bad(d->weight, in_elems);
        if (bad < 0)
            bad = first_bad(d->bias, in_elems);
        if (bad >= 0)
            return ig_err_set(err, CBC_E_NUMERIC, "%s (LayerNorm): a parameter [%ld] is not "
                              "finite", who, bad);
        break;
    }
    }
    return CBC_OK;
}

/* Node k: its operator, the values it reads, its shape, then its operator's
 * own checks and the shape they give against the one it says. */
static enum cbc_status check_node(const struct cbc_net *n, int k, struct cbc_err *err)
{
    char nb[160];
    const struct cbc_net_node *d = &n->nodes[k];
    const char *who = nname(d, k, nb, sizeof nb);
    if ((unsigned)d->op > CBC_NET_LAYERNORM)
        return ig_err_set(err, CBC_E_USAGE, "%s has an unknown operator %d", who, (int)d->op);
    const char *op = op_names[d->op];
    int want_lo = d->op == CBC_NET_ADD ? 2 : d->op == CBC_NET_CONCAT ? 2 : 1;
    int want_hi = d->op == CBC_NET_ADD ? 2 : d->op == CBC_NET_CONCAT ? CBC_NET_INPUTS_MAX : 1;
    if (d->n_in < want_lo || d->n_in > want_hi)
        return ig_err_set(err, CBC_E_USAGE, "%s (%s) reads %d values", who, op, d->n_in);
    for (int i = 0; i < d->n_in; i++)
        if (d->in[i] < 0 || d->in[i] > k)
            return ig_err_set(err, CBC_E_USAGE, "%s (%s) reads value %d: expected the input "
                              "(0) or an earlier node's output (1 to %d)", who, op, d->in[i],
                              k);
    if (d->c < 1 || d->h < 1 || d->w < 1 || node_elems(d) > NET_ELEMS_MAX)
        return ig_err_set(err, CBC_E_SHAPE, "%s (%s) gives shape [%d, %d, %d]", who, op, d->c,
                          d->h, d->w);
    int vc, vh, vw;
    value_shape(n, d->in[0], &vc, &vh, &vw);
    const size_t in_elems = (size_t)vc * (size_t)vh * (size_t)vw;
    const bool spatial = d->op <= CBC_NET_GLOBAL_AVGPOOL;
    /* how it reads its input: the spatial operators say; the others keep
     * their own shape (the same elements) */
    int ic = spatial ? d->ic : d->c, ih = spatial ? d->ih : d->h, iw = spatial ? d->iw : d->w;
    if (d->op != CBC_NET_LINEAR && d->op != CBC_NET_CONCAT &&
        (ic < 1 || ih < 1 || iw < 1 || (size_t)ic * (size_t)ih * (size_t)iw != in_elems))
        return ig_err_set(err, CBC_E_SHAPE, "%s (%s) reads value %d of %zu elements as "
                          "[%d, %d, %d]", who, op, d->in[0], in_elems, ic, ih, iw);
    int oc = ic, oh = ih, ow = iw;
    enum cbc_status st = check_operator(n, d, who, op, in_elems, ic, ih, iw, &oc, &oh, &ow, err);
    if (st != CBC_OK)
        return st;
    if (oc != d->c || oh != d->h || ow != d->w)
        return ig_err_set(err, CBC_E_SHAPE, "%s (%s) of an input [%d, %d, %d] gives [%d, %d, "
                          "%d], but it says [%d, %d, %d]", who, op, ic, ih, iw, oc, oh, ow,
                          d->c, d->h, d->w);
    return CBC_OK;
}

enum cbc_status cbc_net_validate(const struct cbc_net *n, struct cbc_err *err)
{
    if (!n || n->n_nodes < 1 || !n->nodes)
        return ig_err_set(err, CBC_E_SHAPE, "the network has no nodes");
    if (n->n_nodes > 65536)
        return ig_err_set(err, CBC_E_UNSUPPORTED, "the network has %d nodes; at most 65536",
                          n->n_nodes);
    if (n->c < 1 || n->h < 1 || n->w < 1 || cbc_net_features(n) > NET_ELEMS_MAX)
        return ig_err_set(err, CBC_E_SHAPE, "the network's input has shape [%d, %d, %d]", n->c,
                          n->h, n->w);
    for (int k = 0; k < n->n_nodes; k++) {
        enum cbc_status st = check_node(n, k, err);
        if (st != CBC_OK)
            return st;
    }
    return CBC_OK;
}

void cbc_net_owned_free(struct cbc_net_owned *n)
{
    if (!n)
        return;
    free(n->nodes);
    free(n->storage);
    free(n->names);
    free(n->summary);
    free(n);
}

/* ---- the reference passes ----------------------------------------------- */

struct net_scratch {
    double **v;  /* v[0] the input, v[k + 1] node k's output */
    double **g;  /* their gradients */
    size_t *len; /* elements of each */
    int nv;
};

static void scratch_free(struct net_scratch *s)
{
    for (int i = 0; i < s->nv && s->v; i++) {
        free(s->v[i]);
        free(s->g ? s->g[i] : NULL);
    }
    free(s->v), free(s->g), free(s->len);
}

static bool scratch_alloc(struct net_scratch *s, const struct cbc_net *n)
{
    memset(s, 0, sizeof *s);
    s->nv = n->n_nodes + 1;
    s->v = calloc((size_t)s->nv, sizeof *s->v);
    s->g = calloc((size_t)s->nv, sizeof *s->g);
    s->len = calloc((size_t)s->nv, sizeof *s->len);
    if (!s->v || !s->g || !s->len)
        return false;
    for (int i = 0; i < s->nv; i++) {
        s->len[i] = i ? node_elems(&n->nodes[i - 1]) : cbc_net_features(n);
        s->v[i] = calloc(s->len[i], sizeof **s->v);
        s->g[i] = calloc(s->len[i], sizeof **s->g);
        if (!s->v[i] || !s->g[i])
            return false;
    }
    return true;
}

/* The pixels o of [0, out) whose tap at offset off (o * s + off) lands in
 * [0, n): [*lo, *hi). */
static void tap_range(int out, int n, int s, int off, int *lo, int *hi)
{
    int a = off >= 0 ? 0 : (-off + s - 1) / s;
    int b = n - off <= 0 ? 0 : (n - off + s - 1) / s;
    *lo = a;
    *hi = b < out ? b : out;
}

/* Convolution forward (back = false: y from x) or its input gradient
 * (back = true: gx += from gy). */
static void conv(const struct cbc_net_node *d, int ic, int ih, int iw, const double *x, double *y,
                 bool back)
{
    const int g = one(d->groups), icg = ic / g, ocg = d->c / g, sh = one(d->sh), sw = one(d->sw);
    const int dh = one(d->dh), dw = one(d->dw), OH = d->h, OW = d->w;
    if (!back)
        for (int o = 0; o < d->c; o++)
            for (int p = 0; p < OH * OW; p++)
                y[(size_t)o * OH * OW + p] = d->bias ? d->bias[o] : 0;
    for (int o = 0; o < d->c; o++) {
        const int grp = o / ocg;
        for (int i = 0; i < icg; i++) {
            const int ci = grp * icg + i;
            for (int a = 0; a < d->kh; a++) {
                int h0, h1;
                tap_range(OH, ih, sh, a * dh - d->pt, &h0, &h1);
                for (int b = 0; b < d->kw; b++) {
                    int w0, w1;
                    tap_range(OW, iw, sw, b * dw - d->pl, &w0, &w1);
                    const double wt =
                        d->weight[(((size_t)o * icg + i) * d->kh + a) * d->kw + b];
                    if (wt == 0)
                        continue;
                    for (int oy = h0; oy < h1; oy++) {
                        const int iy = oy * sh + a * dh - d->pt;
                        double *yr = y + ((size_t)o * OH + oy) * OW;
                        const double *xr = x + ((size_t)ci * ih + iy) * iw;
                        double *gx = (double *)x + ((size_t)ci * ih + iy) * iw;
                        if (back)
                            for (int ox = w0; ox < w1; ox++)
                                gx[ox * sw + b * dw - d->pl] += wt * yr[ox];
                        else
                            for (int ox = w0; ox < w1; ox++)
                                yr[ox] += wt * xr[ox * sw + b * dw - d->pl];
                    }
                }
            }
        }
    }
}

/* Pools: forward (y from x), or backward (gx += from gy, given x). */
static void pool(const struct cbc_net_node *d, int ih, int iw, const double *x, double *y,
                 double *gx, const double *gy)
{
    const int sh = one(d->sh), sw = one(d->sw), dh = one(d->dh), dw = one(d->dw);
    for (int c = 0; c < d->c; c++)
        for (int oy = 0; oy < d->h; oy++)
            for (int ox = 0; ox < d->w; ox++) {
                const double *xc = x + (size_t)c * ih * iw;
                size_t out = ((size_t)c * d->h + oy) * d->w + ox;
                double best = 0, sum = 0;
                long at = -1;
                int count = 0;
                for (int a = 0; a < d->kh; a++) {
                    int iy = oy * sh - d->pt + a * dh;
                    if (iy < 0 || iy >= ih)
                        continue;
                    for (int b = 0; b < d->kw; b++) {
                        int ix = ox * sw - d->pl + b * dw;
                        if (ix < 0 || ix >= iw)
                            continue;
                        double v = xc[(size_t)iy * iw + ix];
                        if (at < 0 || v > best) /* the first largest, as autograd */
                            best = v, at = (long)iy * iw + ix;
                        sum += v;
                        count++;
                    }
                }
                double div = d->count_include_pad ? (double)d->kh * d->kw : (double)count;
                if (d->op == CBC_NET_MAXPOOL) {
                    if (gx)
                        gx[(size_t)c * ih * iw + (size_t)at] += gy[out];
                    else
                        y[out] = best;
                    continue;
                }
                if (!gx) {
                    y[out] = sum / div;
                    continue;
                }
                for (int a = 0; a < d->kh; a++) {
                    int iy = oy * sh - d->pt + a;
                    if (iy < 0 || iy >= ih)
                        continue;
                    for (int b = 0; b < d->kw; b++) {
                        int ix = ox * sw - d->pl + b;
                        if (ix >= 0 && ix < iw)
                            gx[((size_t)c * ih + iy) * iw + ix] += gy[out] / div;
                    }
                }
            }
}

static double act_param(const struct cbc_net_node *d)
{
    return d->act_param != 0 ? (double)d->act_param : cbc_act_param_default(d->act);
}

/* LayerNorm statistics of v[0..n): mean and 1/sqrt(var + eps). */
static void ln_stats(const struct cbc_net_node *d, const double *v, size_t n, double *mean,
                     double *rstd)
{
    double mu = 0, var = 0;
    for (size_t j = 0; j < n; j++)
        mu += v[j];
    mu /= (double)n;
    for (size_t j = 0; j < n; j++)
        var += (v[j] - mu) * (v[j] - mu);
    var /= (double)n;
    *mean = mu;
    *rstd = 1 / sqrt(var + (d->eps > 0 ? d->eps : 1e-5));
}

static void forward(const struct cbc_net *net, struct net_scratch *s)
{
    for (int k = 0; k < net->n_nodes; k++) {
        const struct cbc_net_node *d = &net->nodes[k];
        const int ic = d->ic, ih = d->ih, iw = d->iw;
        const double *x = s->v[d->in[0]];
        double *y = s->v[k + 1];
        const size_t n_in = s->len[d->in[0]], n_out = s->len[k + 1], plane = (size_t)ih * iw,
                     oplane = (size_t)d->h * d->w;
        switch (d->op) {
        case CBC_NET_CONV: conv(d, ic, ih, iw, x, y, false); break;
        case CBC_NET_MAXPOOL:
        case CBC_NET_AVGPOOL: pool(d, ih, iw, x, y, NULL, NULL); break;
        case CBC_NET_GLOBAL_AVGPOOL:
            for (int c = 0; c < ic; c++) {
                double acc = 0;
                for (size_t p = 0; p < plane; p++)
                    acc += x[c * plane + p];
                y[c] = acc / (double)plane;
            }
            break;
        case CBC_NET_LINEAR:
            for (int o = 0; o < d->c; o++) {
                const float *w = d->weight + (size_t)o * n_in;
                double acc = d->bias ? d->bias[o] : 0;
                for (size_t i = 0; i < n_in; i++)
                    acc += (double)w[i] * x[i];
                y[o] = acc;
            }
            break;
        case CBC_NET_AFFINE:
            for (int c = 0; c < d->c; c++)
                for (size_t p = 0; p < oplane; p++)
                    y[c * oplane + p] =
                        x[c * oplane + p] * (d->mul ? d->mul[c] : 1) + (d->add ? d->add[c] : 0);
            break;
        case CBC_NET_ACT:
            if (d->act == CBC_ACT_SOFTMAX || d->act == CBC_ACT_LOG_SOFTMAX) {
                double mx = x[0], sum = 0;
                for (size_t j = 1; j < n_in; j++)
                    mx = x[j] > mx ? x[j] : mx;
                for (size_t j = 0; j < n_in; j++)
                    sum += exp(x[j] - mx);
                for (size_t j = 0; j < n_in; j++)
                    y[j] = d->act == CBC_ACT_SOFTMAX ? exp(x[j] - mx) / sum : x[j] - mx - log(sum);
            } else {
                double p = act_param(d);
                for (size_t j = 0; j < n_in; j++)
                    y[j] = cbc_act_f(d->act, x[j], p);
            }
            break;
        case CBC_NET_ADD: {
            const double *b = s->v[d->in[1]];
            for (size_t j = 0; j < n_out; j++)
                y[j] = x[j] + b[j];
            break;
        }
        case CBC_NET_CONCAT: {
            size_t off = 0;
            for (int i = 0; i < d->n_in; i++) {
                memcpy(y + off, s->v[d->in[i]], s->len[d->in[i]] * sizeof *y);
                off += s->len[d->in[i]];
            }
            break;
        }
        case CBC_NET_LAYERNORM: {
            double mu, r;
            ln_stats(d, x, n_in, &mu, &r);
            for (size_t j = 0; j < n_in; j++)
                y[j] = (x[j] - mu) * r * (d->weight ? d->weight[j] : 1) +
                       (d->bias ? d->bias[j] : 0);
            break;
        }
        }
    }
}

/* dF/d input into grad, after forward(): the last value's gradient is
 * one-hot at target; every node adds its inputs' share. */
static void backward(const struct cbc_net *net, struct net_scratch *s, int target, double *grad)
{
    for (int i = 0; i < s->nv; i++)
        memset(s->g[i], 0, s->len[i] * sizeof **s->g);
    s->g[net->n_nodes][target] = 1;
    for (int k = net->n_nodes - 1; k >= 0; k--) {
        const struct cbc_net_node *d = &net->nodes[k];
        const int ic = d->ic, ih = d->ih, iw = d->iw;
        const double *x = s->v[d->in[0]], *y = s->v[k + 1], *gy = s->g[k + 1];
        double *gx = s->g[d->in[0]];
        const size_t n_in = s->len[d->in[0]], n_out = s->len[k + 1], plane = (size_t)ih * iw,
                     oplane = (size_t)d->h * d->w;
        switch (d->op) {
        case CBC_NET_CONV: conv(d, ic, ih, iw, gx, (double *)gy, true); break;
        case CBC_NET_MAXPOOL:
        case CBC_NET_AVGPOOL: pool(d, ih, iw, x, NULL, gx, gy); break;
        case CBC_NET_GLOBAL_AVGPOOL:
            for (int c = 0; c < ic; c++)
                for (size_t p = 0; p < plane; p++)
                    gx[c * plane + p] += gy[c] / (double)plane;
            break;
        case CBC_NET_LINEAR:
            for (int o = 0; o < d->c; o++) {
                const float *w = d->weight + (size_t)o * n_in;
                if (gy[o] != 0)
                    for (size_t i = 0; i < n_in; i++)
                        gx[i] += gy[o] * (double)w[i];
            }
            break;
        case CBC_NET_AFFINE:
            for (int c = 0; c < d->c; c++)
                for (size_t p = 0; p < oplane; p++)
                    gx[c * oplane + p] += gy[c * oplane + p] * (d->mul ? d->mul[c] : 1);
            break;
        case CBC_NET_ACT:
            if (d->act == CBC_ACT_SOFTMAX) { /* dx = p (g - <g, p>) */
                double dot = 0;
                for (size_t j = 0; j < n_in; j++)
                    dot += gy[j] * y[j];
                for (size_t j = 0; j < n_in; j++)
                    gx[j] += y[j] * (gy[j] - dot);
            } else if (d->act == CBC_ACT_LOG_SOFTMAX) { /* dx = g - softmax(x) sum(g) */
                double sum = 0;
                for (size_t j = 0; j < n_in; j++)
                    sum += gy[j];
                for (size_t j = 0; j < n_in; j++)
                    gx[j] += gy[j] - exp(y[j]) * sum;
            } else {
                double p = act_param(d);
                for (size_t j = 0; j < n_in; j++)
                    gx[j] += gy[j] * cbc_act_df(d->act, x[j], p);
            }
            break;
        case CBC_NET_ADD: {
            double *gb = s->g[d->in[1]];
            for (size_t j = 0; j < n_out; j++)
                gx[j] += gy[j];
            for (size_t j = 0; j < n_out; j++)
                gb[j] += gy[j];
            break;
        }
        case CBC_NET_CONCAT: {
            size_t off = 0;
            for (int i = 0; i < d->n_in; i++) {
                double *gi = s->g[d->in[i]];
                for (size_t j = 0; j < s->len[d->in[i]]; j++)
                    gi[j] += gy[off + j];
                off += s->len[d->in[i]];
            }
            break;
        }
        case CBC_NET_LAYERNORM: { /* dx = rstd (gy' - mean(gy') - xhat mean(gy' xhat)) */
            double mu, r, m1 = 0, m2 = 0;
            ln_stats(d, x, n_in, &mu, &r);
            for (size_t j = 0; j < n_in; j++) {
                double gj = gy[j] * (d->weight ? d->weight[j] : 1);
                m1 += gj;
                m2 += gj * (x[j] - mu) * r;
            }
            m1 /= (double)n_in, m2 /= (double)n_in;
            for (size_t j = 0; j < n_in; j++) {
                double gj = gy[j] * (d->weight ? d->weight[j] : 1);
                gx[j] += r * (gj - m1 - (x[j] - mu) * r * m2);
            }
            break;
        }
        }
    }
    memcpy(grad, s->g[0], s->len[0] * sizeof *grad);
}

/* cbc_net_forward over inputs [b0, b1), each range with its own scratch. */
struct net_fwd {
    const struct cbc_net *net;
    const float *x;
    double *out;
    bool oom; /* set by any range that could not allocate */
};

static void net_fwd_range(void *ctx, size_t b0, size_t b1)
{
    struct net_fwd *f = ctx;
    const struct cbc_net *net = f->net;
    struct net_scratch s;
    bool ok = scratch_alloc(&s, net);
    const size_t F = cbc_net_features(net), outs = cbc_net_outputs(net);
    for (size_t b = b0; ok && b < b1; b++) {
        for (size_t i = 0; i < F; i++)
            s.v[0][i] = f->x[b * F + i];
        forward(net, &s);
        memcpy(f->out + b * outs, s.v[net->n_nodes], outs * sizeof *f->out);
    }
    scratch_free(&s);
    if (!ok)
        __atomic_store_n(&f->oom, true, __ATOMIC_RELAXED);
}

enum cbc_status cbc_net_forward(const struct cbc_net *net, const float *x, size_t n, double *out,
                                struct cbc_err *err)
{
    enum cbc_status st = cbc_net_validate(net, err);
    if (st != CBC_OK)
        return st;
    struct net_fwd f = {net, x, out, false};
    /* a network's work per input is not summed here: every input pays */
    ig_parallel_ranges(n, n << 18, net_fwd_range, &f);
    return f.oom ? ig_err_oom(err) : CBC_OK;
}

struct net_fn_ctx {
    const struct cbc_net *net;
    struct net_scratch *s;
    int target;
};

static enum cbc_status net_host_fn(void *ctx, const double *in, size_t rows, size_t F, double *out,
                                   struct cbc_err *err)
{
    (void)err;
    struct net_fn_ctx *c = ctx;
    for (size_t r = 0; r < rows; r++) {
        memcpy(c->s->v[0], in + r * F, F * sizeof *in);
        forward(c->net, c->s);
        out[r] = c->s->v[c->net->n_nodes][c->target];
    }
    return CBC_OK;
}

static enum cbc_status net_host_grad(void *ctx, const double *x, size_t F, double *grad,
                                     struct cbc_err *err)
{
    (void)err;
    struct net_fn_ctx *c = ctx;
    memcpy(c->s->v[0], x, F * sizeof *x);
    forward(c->net, c->s);
    backward(c->net, c->s, c->target, grad);
    return CBC_OK;
}

enum cbc_status cbc_ig_cpu_net(const struct cbc_net *net, const struct cbc_ig_request *r,
                               struct cbc_ig_output *out, struct cbc_err *err)
{
    enum cbc_status st = cbc_net_validate(net, err);
    if (st != CBC_OK)
        return st;
    const int outs = (int)cbc_net_outputs(net);
    if (r->target < 0 || r->target >= outs)
        return ig_err_set(err, CBC_E_USAGE, "target %d: the model has outputs 0 to %d", r->target,
                          outs - 1);
    if (r->gradient == CBC_IG_PER_FEATURE)
        return ig_err_set(err, CBC_E_USAGE, "the per-feature loop (--gradient naive) is a GPU "
                          "benchmark mode");
    if (r->device_pointers)
        return ig_err_set(err, CBC_E_USAGE, "the CPU reference takes host arrays");
    if (r->targets && (st = cbc_ig_check_targets(r->targets, r->n, outs, err)) != CBC_OK)
        return st;
    struct net_scratch s;
    if (!scratch_alloc(&s, net)) {
        scratch_free(&s);
        return ig_err_oom(err);
    }
    const size_t F = cbc_net_features(net);
    cbc_ig_host_grad grad = r->gradient == CBC_IG_ANALYTIC ? net_host_grad : NULL;
    struct net_fn_ctx c = {net, &s, r->target};
    if (!r->targets) {
        st = cbc_ig_cpu_fn(net_host_fn, grad, &c, F, r, out, err);
    } else { /* a target per input: one input at a time */
        st = cbc_ig_validate_request(r, F, err);
        for (size_t b = 0; st == CBC_OK && b < r->n; b++) {
            struct cbc_ig_request one_r = *r;
            one_r.x = r->x + b * F;
            one_r.n = 1;
            one_r.targets = NULL;
            if (r->baseline.kind == CBC_IG_BASELINE_PER_INPUT)
                one_r.baseline.data = r->baseline.data + b * F;
            c.target = r->targets[b];
            struct cbc_ig_output o1 = {out->attr + b * F, out->f_x + b, out->f_base + b,
                                       out->sum ? out->sum + b : NULL,
                                       out->delta ? out->delta + b : NULL};
            st = cbc_ig_cpu_fn(net_host_fn, grad, &c, F, &one_r, &o1, err);
        }
    }
    scratch_free(&s);
    return st;
}

enum cbc_status cbc_ig_engine_cpu_net(void *net, const struct cbc_ig_request *r,
                                      struct cbc_ig_output *out, struct cbc_err *err)
{
    return cbc_ig_cpu_net(net, r, out, err);
}

enum cbc_status cbc_net_check_outputs(const struct cbc_net *net, const float *x, size_t n,
                                      const float *y, size_t y_cols, double *worst,
                                      struct cbc_err *err)
{
    enum cbc_status st = cbc_net_validate(net, err);
    if (st != CBC_OK)
        return st;
    size_t outs = cbc_net_outputs(net);
    if (y_cols != outs)
        return ig_err_set(err, CBC_E_SHAPE, "the outputs given have %zu columns; the model has "
                          "%zu outputs", y_cols, outs);
    if (outs && n > SIZE_MAX / outs / sizeof(double))
        return ig_err_oom(err);
    size_t cells = n * outs;
    double *f = malloc((cells ? cells : 1) * sizeof *f);
    if (!f)
        return ig_err_oom(err);
    st = cbc_net_forward(net, x, n, f, err);
    if (st == CBC_OK)
        st = ig_compare_outputs(f, y, n, outs, worst, err);
    free(f);
    return st;
}
