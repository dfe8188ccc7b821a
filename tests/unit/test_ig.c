/* test_ig.c: the CPU reference against closed forms (linear, sum of
 * squares with each rule's known error, x + x^2 + xy, the paper's ReLU
 * example, Captum's README model), completeness on a smooth MLP, central
 * differences against backpropagation, the quadrature rules themselves,
 * and bad input refused with the tensor named. */
#include <cubincache/ig.h>

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const enum cbc_ig_method all_methods[] = {CBC_IG_RIEMANN_LEFT, CBC_IG_RIEMANN_RIGHT,
                                                 CBC_IG_RIEMANN_MIDDLE, CBC_IG_TRAPEZOID,
                                                 CBC_IG_GAUSS_LEGENDRE};

Test(quadrature, weights_sum_to_one_and_gauss_legendre_is_exact_to_degree_2m_minus_1)
{
    double a[64], w[64];
    for (size_t k = 0; k < 5; k++) {
        for (int m = 2; m <= 64; m *= 2) {
            cr_assert_eq(cbc_ig_quadrature(all_methods[k], m, a, w, NULL), CBC_OK);
            double s = 0;
            for (int i = 0; i < m; i++) {
                s += w[i];
                cr_assert(a[i] >= 0 && a[i] <= 1);
            }
            cr_assert_float_eq(s, 1.0, 1e-12, "%s m=%d", cbc_ig_method_name(all_methods[k]), m);
        }
    }
    for (int m = 1; m <= 20; m++) {
        cbc_ig_quadrature(CBC_IG_GAUSS_LEGENDRE, m, a, w, NULL);
        for (int d = 0; d <= 2 * m - 1; d++) {
            double s = 0;
            for (int i = 0; i < m; i++)
                s += w[i] * pow(a[i], d);
            cr_assert_float_eq(s, 1.0 / (d + 1), 1e-12, "m=%d degree %d", m, d);
        }
    }
    cbc_ig_quadrature(CBC_IG_TRAPEZOID, 5, a, w, NULL);
    cr_assert_float_eq(a[4], 1.0, 1e-15);
    cr_assert_float_eq(w[0], 0.125, 1e-15, "1/(m-1) halved, not Captum's 1/m");
    cr_assert_eq(cbc_ig_quadrature(CBC_IG_TRAPEZOID, 1, a, w, NULL), CBC_E_USAGE);
    cr_assert_eq(cbc_ig_quadrature(CBC_IG_GAUSS_LEGENDRE, 0, a, w, NULL), CBC_E_USAGE);
}

/* ---- host functions with gradients ---------------------------------------- */

static enum cbc_status sumsq(void *ctx, const double *in, size_t rows, size_t F, double *out,
                             struct cbc_err *err)
{
    (void)ctx, (void)err;
    for (size_t r = 0; r < rows; r++) {
        double s = 0;
        for (size_t i = 0; i < F; i++)
            s += in[r * F + i] * in[r * F + i];
        out[r] = s;
    }
    return CBC_OK;
}
static enum cbc_status sumsq_grad(void *ctx, const double *x, size_t F, double *g,
                                  struct cbc_err *err)
{
    (void)ctx, (void)err;
    for (size_t i = 0; i < F; i++)
        g[i] = 2 * x[i];
    return CBC_OK;
}

/* F(x, y) = x + x^2 + x y, and its gradient (1 + 2x + y, x) */
static enum cbc_status xxy_grad(void *ctx, const double *in, size_t F, double *g,
                                struct cbc_err *err)
{
    (void)ctx, (void)err, (void)F;
    g[0] = 1 + 2 * in[0] + in[1];
    g[1] = in[0];
    return CBC_OK;
}
static enum cbc_status xxy(void *ctx, const double *in, size_t rows, size_t F, double *out,
                           struct cbc_err *err)
{
    (void)ctx, (void)err, (void)F;
    for (size_t r = 0; r < rows; r++) {
        double x = in[2 * r], y = in[2 * r + 1];
        out[r] = x + x * x + x * y;
    }
    return CBC_OK;
}

struct run {
    float attr[64];
    double fx[4], fb[4], sum[4], delta[4];
};

static struct cbc_ig_output outputs(struct run *o)
{
    return (struct cbc_ig_output){o->attr, o->fx, o->fb, o->sum, o->delta};
}

static void run_fn(cbc_ig_host_fn f, cbc_ig_host_grad g, size_t F, const float *x, const float *base,
                   enum cbc_ig_method method, int steps, struct run *o)
{
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x;
    r.n = 1;
    r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, base};
    r.method = method;
    r.steps = steps;
    struct cbc_ig_output out = outputs(o);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_ig_cpu_fn(f, g, NULL, F, &r, &out, &err), CBC_OK, "%s", err.msg);
}

Test(ig_cpu, sum_of_squares_is_exact_for_midpoint_trapezoid_and_gauss_and_off_by_d2_over_m_for_left_right)
{
    const float x[3] = {1.5f, -2.0f, 0.25f}, base[3] = {0.5f, 1.0f, -0.75f};
    const int m = 20;
    for (size_t k = 0; k < 5; k++) {
        struct run o;
        run_fn(sumsq, sumsq_grad, 3, x, base, all_methods[k], m, &o);
        for (int i = 0; i < 3; i++) {
            double d = (double)x[i] - base[i];
            double exact = (double)x[i] * x[i] - (double)base[i] * base[i];
            double want = exact;
            if (all_methods[k] == CBC_IG_RIEMANN_LEFT)
                want = exact - d * d / m;
            if (all_methods[k] == CBC_IG_RIEMANN_RIGHT)
                want = exact + d * d / m;
            cr_assert_float_eq(o.attr[i], want, 2e-6, "%s feature %d: %g vs %g",
                               cbc_ig_method_name(all_methods[k]), i, o.attr[i], want);
        }
    }
}

Test(ig_cpu, x_plus_x2_plus_xy_matches_the_closed_form_with_gradient_and_with_differences)
{
    const double a = 0.5, b = -1.0, c = 2.0, d = 1.5; /* baseline (a,b), input (c,d) */
    const float x[2] = {(float)c, (float)d}, base[2] = {(float)a, (float)b};
    double igx = (c - a) * (1 + a + c + b / 2 + d / 2), igy = (d - b) * (a + (c - a) / 2);
    /* the integrand is linear in alpha and F is quadratic: Gauss-Legendre
     * and central differences are both exact, so only float32 rounding is
     * left (0 observed; values near 5 have a float32 ulp of 5e-7) */
    struct run o;
    run_fn(xxy, xxy_grad, 2, x, base, CBC_IG_GAUSS_LEGENDRE, 50, &o);
    cr_assert_float_eq(o.attr[0], igx, 2e-6, "analytic: %g vs %g", o.attr[0], igx);
    cr_assert_float_eq(o.attr[1], igy, 2e-6, "analytic: %g vs %g", o.attr[1], igy);
    cr_assert_float_eq(o.delta[0], 0, 2e-6, "analytic completeness");
    run_fn(xxy, NULL, 2, x, base, CBC_IG_GAUSS_LEGENDRE, 50, &o);
    cr_assert_float_eq(o.attr[0], igx, 2e-6, "differences: %g vs %g", o.attr[0], igx);
    cr_assert_float_eq(o.attr[1], igy, 2e-6, "differences: %g vs %g", o.attr[1], igy);
    cr_assert_float_eq(o.delta[0], 0, 2e-6, "differences completeness");
}

/* ---- MLPs ------------------------------------------------------------------- */

static void run_mlp(const struct cbc_mlp *m, const float *x, size_t n, int target,
                    enum cbc_ig_gradient gr, int steps, struct run *o)
{
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x;
    r.n = n;
    r.target = target;
    r.gradient = gr;
    r.steps = steps;
    struct cbc_ig_output out = outputs(o);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_ig_cpu_mlp(m, &r, &out, &err), CBC_OK, "%s", err.msg);
}

Test(ig_cpu, linear_model_is_exact_for_every_rule)
{
    const float w[4] = {0.5f, -2.0f, 3.0f, 0.25f}, b[1] = {0.7f};
    struct cbc_mlp_layer L = {.in = 4, .out = 1, .w = w, .b = b, .act = CBC_ACT_IDENTITY};
    struct cbc_mlp m = {1, &L};
    const float x[4] = {1, 2, -3, 4}, base[4] = {0.5f, 0, 1, -1};
    for (size_t k = 0; k < 5; k++) {
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x;
        r.n = 1;
        r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, base};
        r.method = all_methods[k];
        r.steps = 7;
        struct run o;
        struct cbc_ig_output out = outputs(&o);
        cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &out, NULL), CBC_OK);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(o.attr[i], w[i] * (x[i] - base[i]), 1e-6);
        cr_assert_float_eq(o.delta[0], 0, 1e-6);
    }
}

Test(ig_cpu, the_papers_relu_example_gives_1_5_and_minus_0_5)
{
    /* F = ReLU(ReLU(x1) - 1 - ReLU(x2)), baseline 0, x = (3, 1) */
    const float w1[4] = {1, 0, 0, 1}, w2[2] = {1, -1}, b2[1] = {-1};
    struct cbc_mlp_layer L[2] = {{.in = 2, .out = 2, .w = w1, .b = NULL, .act = CBC_ACT_RELU},
                                 {.in = 2, .out = 1, .w = w2, .b = b2, .act = CBC_ACT_RELU}};
    struct cbc_mlp m = {2, L};
    const float x[2] = {3, 1};
    struct run o;
    run_mlp(&m, x, 1, 0, CBC_IG_ANALYTIC, 50, &o);
    cr_assert_float_eq(o.attr[0], 1.5, 1e-6, "%g", o.attr[0]);
    cr_assert_float_eq(o.attr[1], -0.5, 1e-6, "%g", o.attr[1]);
    cr_assert_float_eq(o.fx[0], 1, 1e-12);
}

Test(ig_cpu, captums_readme_toy_model_numbers)
{
    const float w1[9] = {-4, -3, -2, -1, 0, 1, 2, 3, 4}, w2[6] = {-3, -2, -1, 0, 1, 2},
                b2[2] = {1, 1};
    struct cbc_mlp_layer L[2] = {{.in = 3, .out = 3, .w = w1, .b = NULL, .act = CBC_ACT_RELU},
                                 {.in = 3, .out = 2, .w = w2, .b = b2, .act = CBC_ACT_IDENTITY}};
    struct cbc_mlp m = {2, L};
    const float x[6] = {0.2961f, 0.5166f, 0.2517f, 0.6886f, 0.0740f, 0.8665f};
    struct run o;
    run_mlp(&m, x, 2, 0, CBC_IG_ANALYTIC, 2000, &o);
    const double want[6] = {-0.5922, -1.5497, -1.0067, 0, -0.2219, -5.1991};
    for (int i = 0; i < 6; i++)
        cr_assert_float_eq(o.attr[i], want[i], 1e-3, "attr[%d] %g vs %g", i, o.attr[i], want[i]);
}

/* A reproducible random MLP: F -> hidden... -> outputs, weights ~ U(-s, s). */
struct rnd_mlp {
    struct cbc_mlp_layer L[4];
    float *w[4], *b[4];
    struct cbc_mlp m;
};

static uint64_t lcg = 12345;
static float urand(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((lcg >> 40) / (double)(1u << 24)) * 2 - 1;
}

static void make_mlp(struct rnd_mlp *r, const int *sizes, int layers, enum cbc_act act)
{
    for (int l = 0; l < layers; l++) {
        int in = sizes[l], out = sizes[l + 1];
        float s = 1.0f / sqrtf((float)in);
        r->w[l] = malloc(sizeof(float) * (size_t)in * (size_t)out);
        r->b[l] = malloc(sizeof(float) * (size_t)out);
        for (int i = 0; i < in * out; i++)
            r->w[l][i] = urand() * s * 1.5f;
        for (int i = 0; i < out; i++)
            r->b[l][i] = urand() * 0.1f;
        r->L[l] = (struct cbc_mlp_layer){.in = in,
                                         .out = out,
                                         .w = r->w[l],
                                         .b = r->b[l],
                                         .act = l == layers - 1 ? CBC_ACT_IDENTITY : act};
    }
    r->m = (struct cbc_mlp){layers, r->L};
}

static void free_mlp(struct rnd_mlp *r)
{
    for (int l = 0; l < r->m.n_layers; l++) {
        free(r->w[l]);
        free(r->b[l]);
    }
}

Test(ig_cpu, completeness_within_one_percent_at_50_steps_on_a_smooth_mlp)
{
    const int sizes[4] = {16, 32, 24, 1};
    struct rnd_mlp r;
    make_mlp(&r, sizes, 3, CBC_ACT_TANH);
    float x[16 * 4];
    for (int i = 0; i < 16 * 4; i++)
        x[i] = urand() * 2;
    struct run o;
    run_mlp(&r.m, x, 4, 0, CBC_IG_ANALYTIC, 50, &o);
    for (int b = 0; b < 4; b++) {
        double diff = o.fx[b] - o.fb[b];
        /* observed: at most 3.4e-7 of |F(x) - F(x')| (float32 attributions
         * of double sums); 2e-6 is a few times that, and a feature's worth
         * of error (1/16 of the sum) far beyond it */
        cr_assert(fabs(o.delta[b]) <= 2e-6 * fabs(diff) + 1e-9,
                  "input %d: delta %g for F(x)-F(x') %g", b, o.delta[b], diff);
    }
    free_mlp(&r);
}

Test(ig_cpu, central_differences_agree_with_backpropagation)
{
    const int sizes[3] = {12, 20, 3};
    struct rnd_mlp r;
    make_mlp(&r, sizes, 2, CBC_ACT_GELU);
    float x[24];
    for (int i = 0; i < 24; i++)
        x[i] = urand() * 3;
    struct run a, f;
    run_mlp(&r.m, x, 2, 2, CBC_IG_ANALYTIC, 30, &a);
    run_mlp(&r.m, x, 2, 2, CBC_IG_FD, 30, &f);
    double num = 0, den = 0;
    for (int i = 0; i < 24; i++) {
        num += (a.attr[i] - f.attr[i]) * (a.attr[i] - f.attr[i]);
        den += a.attr[i] * a.attr[i];
    }
    cr_assert(sqrt(num / den) < 1e-5, "relative difference %g", sqrt(num / den));
    free_mlp(&r);
}

Test(ig_cpu, bad_inputs_and_models_are_refused_naming_the_tensor)
{
    float w[4] = {1, 2, 3, 4};
    struct cbc_mlp_layer L[2] = {{.in = 2, .out = 2, .w = w, .b = NULL, .act = CBC_ACT_TANH},
                                 {.in = 3, .out = 1, .w = w, .b = NULL, .act = CBC_ACT_IDENTITY}};
    struct cbc_mlp m = {2, L};
    struct cbc_err err = {0};
    cr_assert_eq(cbc_mlp_validate(&m, &err), CBC_E_SHAPE);
    cr_assert(strstr(err.msg, "layer 1 takes 3 inputs but layer 0 gives 2"), "%s", err.msg);
    L[1].in = 2;
    w[3] = NAN;
    cr_assert_eq(cbc_mlp_validate(&m, &err), CBC_E_NUMERIC);
    cr_assert(strstr(err.msg, "layer 0 weight [1][1]"), "%s", err.msg);
    w[3] = 4;
    float x[2] = {1, INFINITY};
    struct run o;
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x;
    r.n = 1;
    struct cbc_ig_output out = outputs(&o);
    cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &out, &err), CBC_E_NUMERIC);
    cr_assert(strstr(err.msg, "input 0 feature 1"), "%s", err.msg);
    x[1] = 0;
    r.target = 5;
    cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &out, &err), CBC_E_USAGE);
    cr_assert(strstr(err.msg, "target 5"), "%s", err.msg);
}

/* ---- residuals, constant scales, targets per input ------------------------- */

Test(ig_cpu, a_scaled_layer_with_a_residual_of_the_input_has_its_closed_form)
{
    /* h = 3 (2 x) + 1 + 0.5 x = 6.5 x + 1: IG from 0 is 6.5 x */
    const float w = 2, mul = 3, add = 1, rmul = 0.5f, x[2] = {0.7f, -1.3f};
    struct cbc_mlp_layer L = {.in = 1, .out = 1, .w = &w, .act = CBC_ACT_IDENTITY, .mul = &mul,
                              .add = &add, .residual = CBC_RESIDUAL_AFTER, .residual_from = -1,
                              .residual_mul = &rmul};
    struct cbc_mlp m = {1, &L};
    struct run o;
    run_mlp(&m, x, 2, 0, CBC_IG_ANALYTIC, 8, &o);
    for (int b = 0; b < 2; b++) {
        cr_assert_float_eq(o.attr[b], 6.5 * x[b], 1e-6, "input %d: %g", b, o.attr[b]);
        cr_assert_float_eq(o.fx[b], 6.5 * x[b] + 1, 1e-6);
        cr_assert_float_eq(o.fb[b], 1, 1e-6);
    }
    /* before the activation: relu(2x + 0.5x) scaled by 3, plus 1 */
    L.residual = CBC_RESIDUAL_BEFORE_ACT;
    L.act = CBC_ACT_RELU;
    run_mlp(&m, x, 2, 0, CBC_IG_ANALYTIC, 8, &o);
    cr_assert_float_eq(o.attr[0], 3 * 2.5 * x[0], 1e-6, "%g", o.attr[0]);
    cr_assert_float_eq(o.attr[1], 0, 1e-7, "%g", o.attr[1]);
}

/* A model with every kind of residual and scale: input -> 6 (tanh, residual
 * of the input before it), 6 (silu, LayerNorm before it, residual of layer 0
 * after it, scaled), 6 (elu, LayerNorm after it, residual of the input),
 * 3 (identity, scale and shift). */
struct graph_mlp {
    struct rnd_mlp r;
    float vec[12][6];
    struct cbc_mlp_layer L[4];
    struct cbc_mlp m;
};

static void make_graph_mlp(struct graph_mlp *g)
{
    const int sizes[5] = {6, 6, 6, 6, 3};
    make_mlp(&g->r, sizes, 4, CBC_ACT_TANH);
    for (int k = 0; k < 12; k++)
        for (int j = 0; j < 6; j++)
            g->vec[k][j] = 0.5f + 0.5f * urand() * (k % 2 ? -1 : 1);
    memcpy(g->L, g->r.L, sizeof g->L);
    g->L[0].residual = CBC_RESIDUAL_BEFORE_ACT, g->L[0].residual_from = -1;
    g->L[0].residual_mul = g->vec[0];
    g->L[1].act = CBC_ACT_SILU, g->L[1].norm = CBC_NORM_BEFORE_ACT;
    g->L[1].norm_w = g->vec[1], g->L[1].norm_b = g->vec[2];
    g->L[1].residual = CBC_RESIDUAL_AFTER, g->L[1].residual_from = 0;
    g->L[1].mul = g->vec[3], g->L[1].add = g->vec[4], g->L[1].residual_mul = g->vec[5];
    g->L[2].act = CBC_ACT_ELU, g->L[2].act_param = 0.7f, g->L[2].norm = CBC_NORM_AFTER_ACT;
    g->L[2].norm_w = g->vec[6], g->L[2].norm_b = g->vec[7];
    g->L[2].residual = CBC_RESIDUAL_AFTER, g->L[2].residual_from = -1;
    g->L[3].mul = g->vec[8], g->L[3].add = g->vec[9];
    g->m = (struct cbc_mlp){4, g->L};
}

Test(ig_cpu, residuals_and_scales_backpropagate_as_central_differences_say)
{
    struct graph_mlp g;
    make_graph_mlp(&g);
    cr_assert_eq(cbc_mlp_validate(&g.m, NULL), CBC_OK);
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = urand() * 2;
    /* one right-Riemann step from 0: attr_i = x_i dF/dx_i (x), the gradient itself */
    for (int t = 0; t < 3; t++) {
        struct run a, f;
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 2, r.target = t, r.method = CBC_IG_RIEMANN_RIGHT, r.steps = 1;
        struct cbc_ig_output oa = outputs(&a), of = outputs(&f);
        struct cbc_err err = {0};
        cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r, &oa, &err), CBC_OK, "%s", err.msg);
        r.gradient = CBC_IG_FD;
        cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r, &of, &err), CBC_OK, "%s", err.msg);
        for (int i = 0; i < 12; i++)
            cr_assert(fabs(a.attr[i] - f.attr[i]) <= 2e-5 * (fabs(a.attr[i]) + 1e-2),
                      "target %d feature %d: backprop %g, central differences %g", t, i,
                      a.attr[i], f.attr[i]);
        /* and completeness over the whole path (ELU's derivative jumps at 0, so
         * the quadrature converges slowly: measured 1e-4 of F(x) - F(x')) */
        r.gradient = CBC_IG_ANALYTIC, r.method = CBC_IG_GAUSS_LEGENDRE, r.steps = 256;
        cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r, &oa, &err), CBC_OK, "%s", err.msg);
        for (int b = 0; b < 2; b++)
            cr_assert(fabs(a.delta[b]) <= 1e-3 * (fabs(a.fx[b]) + fabs(a.fb[b]) + 1e-2),
                      "target %d input %d: delta %g", t, b, a.delta[b]);
    }
    free_mlp(&g.r);
}

Test(ig_cpu, a_target_per_input_is_one_call_per_target)
{
    struct graph_mlp g;
    make_graph_mlp(&g);
    float x[18];
    for (int i = 0; i < 18; i++)
        x[i] = urand() * 2;
    const int targets[3] = {2, 0, 2};
    struct run all;
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = 3, r.targets = targets;
    float base[18];
    for (int i = 0; i < 18; i++)
        base[i] = 0.1f * (float)i;
    r.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, base};
    struct cbc_ig_output o = outputs(&all);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r, &o, &err), CBC_OK, "%s", err.msg);
    for (int b = 0; b < 3; b++) {
        struct run one;
        struct cbc_ig_request r1 = r;
        r1.targets = NULL, r1.target = targets[b], r1.x = x + 6 * b, r1.n = 1;
        r1.baseline.data = base + 6 * b;
        struct cbc_ig_output o1 = outputs(&one);
        cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r1, &o1, &err), CBC_OK, "%s", err.msg);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(one.attr[i], all.attr[6 * b + i], "input %d feature %d", b, i);
        cr_assert_eq(one.fx[0], all.fx[b]);
        cr_assert_eq(one.delta[0], all.delta[b]);
    }
    const int bad[3] = {0, 3, 1};
    r.targets = bad;
    cr_assert_eq(cbc_ig_cpu_mlp(&g.m, &r, &o, &err), CBC_E_USAGE);
    cr_assert(strstr(err.msg, "target 3 (entry 1)"), "%s", err.msg);
    free_mlp(&g.r);
}

Test(ig_cpu, residuals_from_nowhere_or_of_another_width_are_refused)
{
    struct graph_mlp g;
    make_graph_mlp(&g);
    struct cbc_err err = {0};
    g.L[1].residual_from = 1;
    cr_assert_eq(cbc_mlp_validate(&g.m, &err), CBC_E_USAGE);
    cr_assert(strstr(err.msg, "layer 1 adds a residual from layer 1"), "%s", err.msg);
    g.L[1].residual_from = 0;
    g.L[3].residual = CBC_RESIDUAL_AFTER, g.L[3].residual_from = 2;
    cr_assert_eq(cbc_mlp_validate(&g.m, &err), CBC_E_SHAPE);
    cr_assert(strstr(err.msg, "layer 3 (3 outputs) adds a residual from layer 2, which has 6"),
              "%s", err.msg);
    g.L[3].residual = CBC_RESIDUAL_NONE;
    g.vec[8][2] = NAN;
    cr_assert_eq(cbc_mlp_validate(&g.m, &err), CBC_E_NUMERIC);
    cr_assert(strstr(err.msg, "layer 3 scale [2] is nan"), "%s", err.msg);
    free_mlp(&g.r);
}

Test(ig_cpu, check_outputs_passes_rounding_and_refuses_another_model)
{
    struct graph_mlp g;
    make_graph_mlp(&g);
    float x[12], y[6];
    double yd[6];
    for (int i = 0; i < 12; i++)
        x[i] = urand() * 2;
    cr_assert_eq(cbc_mlp_forward(&g.m, x, 2, yd, NULL), CBC_OK);
    for (int i = 0; i < 6; i++)
        y[i] = (float)yd[i] * (1 + 3e-7f); /* float32 rounding and a little more */
    struct cbc_err err = {0};
    double worst = -1;
    cr_assert_eq(cbc_mlp_check_outputs(&g.m, x, 2, y, 3, &worst, &err), CBC_OK, "%s", err.msg);
    cr_assert(worst >= 0 && worst < 1e-6, "%g", worst);
    /* the same layers without the residual of layer 1: another model */
    g.L[1].residual = CBC_RESIDUAL_NONE;
    cr_assert_eq(cbc_mlp_check_outputs(&g.m, x, 2, y, 3, &worst, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "input 0, output") && strstr(err.msg, "not the model"), "%s",
              err.msg);
    cr_assert_eq(cbc_mlp_check_outputs(&g.m, x, 2, y, 2, NULL, &err), CBC_E_SHAPE);
    free_mlp(&g.r);
}
