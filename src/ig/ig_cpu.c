/* ig_cpu.c: the CPU reference every other result is tested against.
 *
 * Deliberately the textbook algorithm, in double: for every input and
 * every quadrature point, a full forward pass and backpropagation (or 2F
 * central differences), summed with the rule's weights; residuals and
 * constant scales are applied as the layer says (cubincache/ig.h), and
 * backward accumulates each layer's gradient from every reader of its
 * output. It shares none of the GPU engine's shortcuts (the first layer's
 * linearity, summing before the last GEMM), so agreement between the two
 * means something.
 */
#include "ig_int.h"

#include <stdlib.h>
#include <string.h>

struct mlp_scratch {
    double **z;   /* per layer: the Linear's output (and a residual before the activation) */
    double **pre; /* the activation's input: z, or LayerNorm(z) */
    double **a;   /* the activation's output */
    double **h;   /* the layer's output: mul LayerNorm(a) + add + a residual (h[-1] is the
                     input, kept apart) */
    double **gh;  /* backward: dF/dh per layer, accumulated from the next layer and from
                     every residual that reads it */
    double *mean, *rstd; /* per layer: the LayerNorm's statistics */
    double *g;
    int maxw;
};

static void scratch_free(struct mlp_scratch *s, int L)
{
    for (int l = 0; l < L && s->z; l++) {
        free(s->z[l]);
        free(s->pre[l]);
        free(s->a[l]);
        free(s->h[l]);
        free(s->gh[l]);
    }
    free(s->z);
    free(s->pre);
    free(s->a);
    free(s->h);
    free(s->gh);
    free(s->mean);
    free(s->rstd);
    free(s->g);
}

static bool scratch_alloc(struct mlp_scratch *s, const struct cbc_mlp *m)
{
    memset(s, 0, sizeof *s);
    int L = m->n_layers, w = m->layers[0].in;
    for (int l = 0; l < L; l++)
        w = m->layers[l].out > w ? m->layers[l].out : w;
    s->maxw = w;
    if (L < 1 || w < 1) /* a validated model never is */
        return false;
    s->z = calloc((size_t)L, sizeof *s->z);
    s->pre = calloc((size_t)L, sizeof *s->pre);
    s->a = calloc((size_t)L, sizeof *s->a);
    s->h = calloc((size_t)L, sizeof *s->h);
    s->gh = calloc((size_t)L, sizeof *s->gh);
    s->mean = calloc((size_t)L, sizeof *s->mean);
    s->rstd = calloc((size_t)L, sizeof *s->rstd);
    s->g = calloc((size_t)w, sizeof *s->g);
    if (!s->z || !s->pre || !s->a || !s->h || !s->gh || !s->mean || !s->rstd || !s->g)
        return false;
    for (int l = 0; l < L; l++) {
        size_t o = (size_t)m->layers[l].out;
        s->z[l] = calloc(o, sizeof **s->z);
        s->pre[l] = calloc(o, sizeof **s->pre);
        s->a[l] = calloc(o, sizeof **s->a);
        s->h[l] = calloc(o, sizeof **s->h);
        s->gh[l] = calloc(o, sizeof **s->gh);
        if (!s->z[l] || !s->pre[l] || !s->a[l] || !s->h[l] || !s->gh[l])
            return false;
    }
    return true;
}

/* LayerNorm of v[0..n) into out, as torch.nn.LayerNorm (biased variance);
 * its mean and 1/sqrt(var + eps) kept for the backward pass. */
static void layer_norm(const struct cbc_mlp_layer *L, const double *v, double *out, double *mean,
                       double *rstd)
{
    int n = L->out;
    double mu = 0, var = 0;
    for (int j = 0; j < n; j++)
        mu += v[j];
    mu /= n;
    for (int j = 0; j < n; j++)
        var += (v[j] - mu) * (v[j] - mu);
    var /= n;
    double r = 1 / sqrt(var + (L->norm_eps > 0 ? L->norm_eps : 1e-5));
    for (int j = 0; j < n; j++)
        out[j] = (v[j] - mu) * r * (L->norm_w ? L->norm_w[j] : 1) + (L->norm_b ? L->norm_b[j] : 0);
    *mean = mu;
    *rstd = r;
}

/* g (dF/d out) to dF/d v, in place, for out = LayerNorm(v):
 *   dv = rstd (gy - mean(gy) - xhat mean(gy xhat)), gy = g gamma. */
static void layer_norm_back(const struct cbc_mlp_layer *L, const double *v, double mean,
                            double rstd, double *g)
{
    int n = L->out;
    double m1 = 0, m2 = 0;
    for (int j = 0; j < n; j++) {
        double gy = g[j] * (L->norm_w ? L->norm_w[j] : 1);
        m1 += gy;
        m2 += gy * (v[j] - mean) * rstd;
    }
    m1 /= n, m2 /= n;
    for (int j = 0; j < n; j++) {
        double gy = g[j] * (L->norm_w ? L->norm_w[j] : 1);
        g[j] = rstd * (gy - m1 - (v[j] - mean) * rstd * m2);
    }
}

/* The activation of a whole layer: elementwise, or (log-)softmax of the row. */
static void activate(const struct cbc_mlp_layer *L, const double *z, double *a)
{
    int n = L->out;
    if (L->act == CBC_ACT_SOFTMAX || L->act == CBC_ACT_LOG_SOFTMAX) {
        double mx = z[0], sum = 0;
        for (int j = 1; j < n; j++)
            mx = z[j] > mx ? z[j] : mx;
        for (int j = 0; j < n; j++)
            sum += exp(z[j] - mx);
        for (int j = 0; j < n; j++)
            a[j] = L->act == CBC_ACT_SOFTMAX ? exp(z[j] - mx) / sum : z[j] - mx - log(sum);
        return;
    }
    double p = cbc_act_param_of(L);
    for (int j = 0; j < n; j++)
        a[j] = cbc_act_f(L->act, z[j], p);
}

/* g (dF/d a) to dF/d z, in place, given the activation's input z and output a. */
static void activate_back(const struct cbc_mlp_layer *L, const double *z, const double *a,
                          double *g)
{
    int n = L->out;
    double s = 0;
    switch (L->act) {
    case CBC_ACT_SOFTMAX: /* dz = p (g - <g, p>) */
        for (int j = 0; j < n; j++)
            s += g[j] * a[j];
        for (int j = 0; j < n; j++)
            g[j] = a[j] * (g[j] - s);
        return;
    case CBC_ACT_LOG_SOFTMAX: /* dz = g - softmax(z) sum(g) */
        for (int j = 0; j < n; j++)
            s += g[j];
        for (int j = 0; j < n; j++)
            g[j] -= exp(a[j]) * s;
        return;
    default: {
        double p = cbc_act_param_of(L);
        for (int j = 0; j < n; j++)
            g[j] *= cbc_act_df(L->act, z[j], p);
    }
    }
}

/* The tensor a residual of layer L reads: the input x or an earlier layer's h. */
static const double *residual_src(const struct cbc_mlp_layer *L, struct mlp_scratch *s,
                                  const double *x)
{
    return L->residual_from < 0 ? x : s->h[L->residual_from];
}

/* Forward pass of one point; returns output `target`. */
static double forward(const struct cbc_mlp *m, struct mlp_scratch *s, const double *x, int target)
{
    const double *in = x;
    for (int l = 0; l < m->n_layers; l++) {
        const struct cbc_mlp_layer *L = &m->layers[l];
        const double *src = L->residual ? residual_src(L, s, x) : NULL;
        /* four rows of W at once: four independent sums, each in the order
         * of k, so the same value as one at a time, without waiting on one
         * chain of additions */
        const size_t K = (size_t)L->in;
        int j = 0;
        for (; j + 4 <= L->out; j += 4) {
            const float *w0 = L->w + (size_t)j * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
            double a0 = L->b ? L->b[j] : 0, a1 = L->b ? L->b[j + 1] : 0,
                   a2 = L->b ? L->b[j + 2] : 0, a3 = L->b ? L->b[j + 3] : 0;
            for (size_t k = 0; k < K; k++) {
                a0 += (double)w0[k] * in[k];
                a1 += (double)w1[k] * in[k];
                a2 += (double)w2[k] * in[k];
                a3 += (double)w3[k] * in[k];
            }
            s->z[l][j] = a0, s->z[l][j + 1] = a1, s->z[l][j + 2] = a2, s->z[l][j + 3] = a3;
        }
        for (; j < L->out; j++) {
            const float *w = L->w + (size_t)j * K;
            double acc = L->b ? L->b[j] : 0;
            for (size_t k = 0; k < K; k++)
                acc += (double)w[k] * in[k];
            s->z[l][j] = acc;
        }
        if (L->residual == CBC_RESIDUAL_BEFORE_ACT)
            for (j = 0; j < L->out; j++)
                s->z[l][j] += (L->residual_mul ? L->residual_mul[j] : 1) * src[j];
        if (L->norm == CBC_NORM_BEFORE_ACT)
            layer_norm(L, s->z[l], s->pre[l], &s->mean[l], &s->rstd[l]);
        else
            memcpy(s->pre[l], s->z[l], sizeof(double) * (size_t)L->out);
        activate(L, s->pre[l], s->a[l]);
        if (L->norm == CBC_NORM_AFTER_ACT)
            layer_norm(L, s->a[l], s->h[l], &s->mean[l], &s->rstd[l]);
        else
            memcpy(s->h[l], s->a[l], sizeof(double) * (size_t)L->out);
        for (int j = 0; (L->mul || L->add || L->residual == CBC_RESIDUAL_AFTER) && j < L->out; j++) {
            double v = s->h[l][j] * (L->mul ? L->mul[j] : 1) + (L->add ? L->add[j] : 0);
            if (L->residual == CBC_RESIDUAL_AFTER)
                v += (L->residual_mul ? L->residual_mul[j] : 1) * src[j];
            s->h[l][j] = v;
        }
        in = s->h[l];
    }
    return s->h[m->n_layers - 1][target];
}

/* The gradient of a residual's source += residual_mul * g. */
static void residual_back(const struct cbc_mlp_layer *L, struct mlp_scratch *s, double *grad,
                          const double *g)
{
    double *dst = L->residual_from < 0 ? grad : s->gh[L->residual_from];
    for (int j = 0; j < L->out; j++)
        dst[j] += (L->residual_mul ? L->residual_mul[j] : 1) * g[j];
}

/* Gradient of output `target` with respect to the input, after forward().
 * dF/dh of every layer accumulates what the next layer and every residual
 * reading it send back; a layer is done once every later one is. */
static void backward(const struct cbc_mlp *m, struct mlp_scratch *s, int target, double *grad)
{
    int L = m->n_layers;
    for (int l = 0; l < L; l++)
        memset(s->gh[l], 0, sizeof **s->gh * (size_t)m->layers[l].out);
    memset(grad, 0, sizeof *grad * (size_t)m->layers[0].in);
    s->gh[L - 1][target] = 1; /* dF/dh of the last layer: only the target output */
    for (int l = L - 1; l >= 0; l--) {
        const struct cbc_mlp_layer *Ly = &m->layers[l];
        memcpy(s->g, s->gh[l], sizeof *s->g * (size_t)Ly->out);
        /* s->g holds dF/dh_l: through the residual, scale, LayerNorm and activation
         * to dF/dz_l */
        if (Ly->residual == CBC_RESIDUAL_AFTER)
            residual_back(Ly, s, grad, s->g);
        for (int j = 0; Ly->mul && j < Ly->out; j++)
            s->g[j] *= Ly->mul[j];
        if (Ly->norm == CBC_NORM_AFTER_ACT)
            layer_norm_back(Ly, s->a[l], s->mean[l], s->rstd[l], s->g);
        activate_back(Ly, s->pre[l], s->a[l], s->g);
        if (Ly->norm == CBC_NORM_BEFORE_ACT)
            layer_norm_back(Ly, s->z[l], s->mean[l], s->rstd[l], s->g);
        if (Ly->residual == CBC_RESIDUAL_BEFORE_ACT)
            residual_back(Ly, s, grad, s->g);
        double *dst = l == 0 ? grad : s->gh[l - 1];
        for (int j = 0; j < Ly->out; j++) {
            double gj = s->g[j];
            if (gj == 0)
                continue;
            const float *w = Ly->w + (size_t)j * (size_t)Ly->in;
            for (int k = 0; k < Ly->in; k++)
                dst[k] += gj * (double)w[k];
        }
    }
}

/* cbc_mlp_forward over inputs [b0, b1), each range with its own scratch. */
struct mlp_fwd {
    const struct cbc_mlp *m;
    const float *x;
    double *out;
    bool oom; /* set by any range that could not allocate (no row of it written) */
};

static void mlp_fwd_range(void *ctx, size_t b0, size_t b1)
{
    struct mlp_fwd *f = ctx;
    const struct cbc_mlp *m = f->m;
    struct mlp_scratch s;
    size_t F = (size_t)m->layers[0].in, outs = (size_t)m->layers[m->n_layers - 1].out;
    double *in = malloc(F * sizeof *in);
    bool ok = in && scratch_alloc(&s, m);
    for (size_t b = b0; ok && b < b1; b++) {
        for (size_t i = 0; i < F; i++)
            in[i] = f->x[b * F + i];
        forward(m, &s, in, 0);
        memcpy(f->out + b * outs, s.h[m->n_layers - 1], outs * sizeof *f->out);
    }
    if (in)
        scratch_free(&s, m->n_layers);
    free(in);
    if (!ok)
        __atomic_store_n(&f->oom, true, __ATOMIC_RELAXED);
}

enum cbc_status cbc_mlp_forward(const struct cbc_mlp *m, const float *x, size_t n, double *out,
                                struct cbc_err *err)
{
    enum cbc_status st = cbc_mlp_validate(m, err); /* sizes the scratch from the model */
    if (st != CBC_OK)
        return st;
    size_t work = 0;
    for (int l = 0; l < m->n_layers; l++)
        work += (size_t)m->layers[l].in * (size_t)m->layers[l].out;
    struct mlp_fwd f = {m, x, out, false};
    ig_parallel_ranges(n, n * work, mlp_fwd_range, &f);
    return f.oom ? ig_err_oom(err) : CBC_OK;
}

struct mlp_fn_ctx {
    const struct cbc_mlp *m;
    struct mlp_scratch *s;
    int target;
};

static enum cbc_status mlp_host_fn(void *ctx, const double *in, size_t rows, size_t F, double *out,
                                   struct cbc_err *err)
{
    (void)err;
    struct mlp_fn_ctx *c = ctx;
    for (size_t r = 0; r < rows; r++)
        out[r] = forward(c->m, c->s, in + r * F, c->target);
    return CBC_OK;
}

static enum cbc_status mlp_host_grad(void *ctx, const double *x, size_t F, double *grad,
                                     struct cbc_err *err)
{
    (void)F;
    (void)err;
    struct mlp_fn_ctx *c = ctx;
    forward(c->m, c->s, x, c->target);
    backward(c->m, c->s, c->target, grad);
    return CBC_OK;
}

enum cbc_status cbc_ig_cpu_mlp(const struct cbc_mlp *m, const struct cbc_ig_request *r,
                               struct cbc_ig_output *out, struct cbc_err *err)
{
    enum cbc_status st = cbc_mlp_validate(m, err);
    if (st != CBC_OK)
        return st;
    int outs = m->layers[m->n_layers - 1].out;
    if (r->target < 0 || r->target >= outs)
        return ig_err_set(err, CBC_E_USAGE, "target %d: the model has outputs 0 to %d", r->target,
                           outs - 1);
    if (r->gradient == CBC_IG_PER_FEATURE)
        return ig_err_set(err, CBC_E_USAGE, "the per-feature loop (--gradient naive) is a GPU benchmark mode");
    if (r->targets && (st = cbc_ig_check_targets(r->targets, r->n, outs, err)) != CBC_OK)
        return st;
    struct mlp_scratch s;
    if (!scratch_alloc(&s, m)) {
        scratch_free(&s, m->n_layers);
        return ig_err_oom(err);
    }
    const size_t F = (size_t)m->layers[0].in;
    cbc_ig_host_grad grad = r->gradient == CBC_IG_ANALYTIC ? mlp_host_grad : NULL;
    struct mlp_fn_ctx c = {m, &s, r->target};
    if (!r->targets) {
        st = cbc_ig_cpu_fn(mlp_host_fn, grad, &c, F, r, out, err);
    } else { /* a target per input: the same computation, one input at a time */
        st = cbc_ig_validate_request(r, F, err);
        for (size_t b = 0; st == CBC_OK && b < r->n; b++) {
            struct cbc_ig_request one = *r;
            one.x = r->x + b * F;
            one.n = 1;
            one.targets = NULL;
            if (r->baseline.kind == CBC_IG_BASELINE_PER_INPUT)
                one.baseline.data = r->baseline.data + b * F;
            c.target = r->targets[b];
            struct cbc_ig_output o1 = {out->attr + b * F, out->f_x + b, out->f_base + b,
                                       out->sum ? out->sum + b : NULL,
                                       out->delta ? out->delta + b : NULL};
            st = cbc_ig_cpu_fn(mlp_host_fn, grad, &c, F, &one, &o1, err);
        }
    }
    scratch_free(&s, m->n_layers);
    return st;
}

enum cbc_status cbc_ig_cpu_fn(cbc_ig_host_fn f, cbc_ig_host_grad grad, void *ctx, size_t F,
                              const struct cbc_ig_request *r, struct cbc_ig_output *out,
                              struct cbc_err *err)
{
    enum cbc_status st = cbc_ig_validate_request(r, F, err);
    if (st != CBC_OK)
        return st;
    double *alphas, *weights;
    st = cbc_ig_rule(r, &alphas, &weights, err);
    if (st != CBC_OK)
        return st;
    /* finite differences: the 2F perturbed points of a step go to f in
     * blocks of B features, 2B points of F doubles each, within the budget
     * (all F at once would take 16 F^2 bytes: 2.3 GB at F = 12000) */
    size_t budget = r->mem_budget ? r->mem_budget : CBC_IG_CPU_FD_BUDGET;
    size_t B = budget / (2 * F * sizeof(double));
    B = B < 1 ? 1 : B > F ? F : B;
    double *x = calloc(F, sizeof *x), *base = calloc(F, sizeof *base), *acc = calloc(F, sizeof *acc),
           *g = calloc(F, sizeof *g), *pts = calloc(grad ? 2 * F : 2 * F * B, sizeof *pts),
           *vals = calloc(2 * B, sizeof *vals), *h = calloc(F, sizeof *h),
           *point = calloc(F, sizeof *point);
    if (!x || !base || !acc || !g || !pts || !vals || !h || !point) {
        st = ig_err_oom(err);
        goto out;
    }
    for (size_t b = 0; b < r->n && st == CBC_OK; b++) {
        for (size_t i = 0; i < F; i++) {
            x[i] = r->x[b * F + i];
            base[i] = cbc_ig_base_at(&r->baseline, b, F, i);
            acc[i] = 0;
            h[i] = cbc_ig_fd_step((float)x[i], (float)base[i]);
        }
        double two[2];
        memcpy(pts, x, F * sizeof *pts);
        memcpy(pts + F, base, F * sizeof *pts);
        if ((st = f(ctx, pts, 2, F, two, err)) != CBC_OK)
            break;
        out->f_x[b] = two[0];
        out->f_base[b] = two[1];
        for (int k = 0; k < r->steps && st == CBC_OK; k++) {
            double *p = pts; /* the point, then (FD) its 2F perturbations */
            for (size_t i = 0; i < F; i++)
                p[i] = base[i] + alphas[k] * (x[i] - base[i]);
            if (grad) {
                st = grad(ctx, p, F, g, err);
            } else {
                memcpy(point, p, F * sizeof *p); /* pts is overwritten below */
                for (size_t i0 = 0; st == CBC_OK && i0 < F; i0 += B) {
                    size_t nb = F - i0 < B ? F - i0 : B;
                    for (size_t j = 0; j < nb; j++) {
                        memcpy(pts + (2 * j) * F, point, F * sizeof *pts);
                        memcpy(pts + (2 * j + 1) * F, point, F * sizeof *pts);
                        pts[(2 * j) * F + i0 + j] += h[i0 + j];
                        pts[(2 * j + 1) * F + i0 + j] -= h[i0 + j];
                    }
                    st = f(ctx, pts, 2 * nb, F, vals, err);
                    for (size_t j = 0; st == CBC_OK && j < nb; j++)
                        g[i0 + j] = (vals[2 * j] - vals[2 * j + 1]) / (2 * h[i0 + j]);
                }
            }
            for (size_t i = 0; st == CBC_OK && i < F; i++)
                acc[i] += weights[k] * g[i];
        }
        for (size_t i = 0; i < F; i++)
            out->attr[b * F + i] = (float)((x[i] - base[i]) * acc[i]);
    }
    if (st == CBC_OK)
        cbc_ig_finish(out, r->n, F);
out:
    free(x);
    free(base);
    free(acc);
    free(g);
    free(pts);
    free(vals);
    free(h);
    free(point);
    free(alphas);
    free(weights);
    return st;
}

enum cbc_status cbc_mlp_check_outputs(const struct cbc_mlp *m, const float *x, size_t n,
                                      const float *y, size_t y_cols, double *worst,
                                      struct cbc_err *err)
{
    enum cbc_status st = cbc_mlp_validate(m, err);
    if (st != CBC_OK)
        return st;
    size_t outs = (size_t)m->layers[m->n_layers - 1].out;
    if (y_cols != outs)
        return ig_err_set(err, CBC_E_SHAPE, "the outputs given have %zu columns; the model has "
                          "%zu outputs", y_cols, outs);
    if (outs && n > SIZE_MAX / outs / sizeof(double))
        return ig_err_oom(err);
    size_t cells = n * outs;
    double *f = malloc((cells ? cells : 1) * sizeof *f);
    if (!f)
        return ig_err_oom(err);
    st = cbc_mlp_forward(m, x, n, f, err);
    if (st == CBC_OK)
        st = ig_compare_outputs(f, y, n, outs, worst, err);
    free(f);
    return st;
}

/* Whether the forward results f [n][outs] agree with the model's own
 * outputs y: every row to 1e-4 of its largest magnitude (float32 rounding
 * is far below that; a model read wrongly far above). */
enum cbc_status ig_compare_outputs(const double *f, const float *y, size_t n, size_t outs,
                                   double *worst, struct cbc_err *err)
{
    enum cbc_status st = CBC_OK;
    double w = 0;
    for (size_t b = 0; st == CBC_OK && b < n; b++) {
        /* the row's scale: its largest magnitude, ours or theirs */
        double scale = 0, d = 0;
        size_t at = 0;
        for (size_t j = 0; j < outs; j++) {
            double yj = y[b * outs + j], fj = f[b * outs + j];
            if (!isfinite(yj)) {
                st = ig_err_set(err, CBC_E_NUMERIC, "the given output %zu of input %zu is %g", j,
                                b, yj);
                break;
            }
            scale = fmax(scale, fmax(fabs(yj), fabs(fj)));
            if (fabs(fj - yj) > d)
                d = fabs(fj - yj), at = j;
        }
        double rel = scale > 0 ? d / scale : 0;
        w = fmax(w, rel);
        if (st == CBC_OK && d > 1e-4 * scale + 1e-30)
            st = ig_err_set(err, CBC_E_VERIFY, "input %zu, output %zu: the model read gives %.9g "
                            "where the model's own output is %.9g (%.2g of the row's largest "
                            "magnitude; rounding stays below 1e-4): this is not the model that "
                            "computed them", b, at, f[b * outs + at], (double)y[b * outs + at], rel);
    }
    if (worst)
        *worst = w;
    return st;
}
