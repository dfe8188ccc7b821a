/* explain.c: what a Captum user asks of IG beyond one target for a batch:
 * a target per input (or several), NoiseTunnel (SmoothGrad, SmoothGrad
 * squared, VarGrad) and several baselines per input averaged (expected
 * gradients), on either engine (CPU reference or GPU) through one
 * signature.
 *
 * How: the batch is expanded (each input times its noisy samples times its
 * baselines) and given to the engine in one call with a target per row
 * (the built-in engines; on the GPU every target, noisy copy and baseline
 * is one batch, which the engine chunks to its memory budget), or for any
 * other engine in target order, one call per distinct target; then reduced
 * back: the mean over baselines, then over samples the mean (SmoothGrad),
 * the mean of squares (SmoothGrad squared) or the variance (VarGrad).
 * Noise is Gaussian from a seeded generator per input (xoshiro256**,
 * Marsaglia's polar method in double; see expand_inputs), so a run is
 * reproducible and inputs are expanded on several threads.
 *
 * Invariants: every size product is checked for overflow before it is
 * allocated; targets are checked against the model's outputs by the caller
 * (cbc_ig_check_targets, ig_util.c); nothing is written to `out` unless every engine
 * call succeeded (a plan that asks nothing beyond the request is passed to
 * the engine as it is, with the engine's own guarantee); threads write
 * disjoint rows only, so results never depend on how many ran.
 */
#include "ig_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const noise_names[] = {"none", "smoothgrad", "smoothgrad_sq", "vargrad"};

/* Rows of one engine call with a target per row: 4096 inputs with 16
 * noisy copies each (of 784 features, about 1.3 GB of the GPU's per-call
 * arrays besides the budgeted per-step work). */
#define EXPLAIN_ROWS_MAX 65536

bool cbc_ig_noise_parse(const char *name, enum cbc_ig_noise *out)
{
    for (size_t i = 0; i < IG_ARRAY_LEN(noise_names); i++)
        if (!strcmp(name, noise_names[i])) {
            *out = (enum cbc_ig_noise)i;
            return true;
        }
    return false;
}

const char *cbc_ig_noise_name(enum cbc_ig_noise n)
{
    return (unsigned)n < IG_ARRAY_LEN(noise_names) ? noise_names[n] : "unknown";
}

enum cbc_status cbc_ig_engine_cpu(void *mlp, const struct cbc_ig_request *r,
                                  struct cbc_ig_output *out, struct cbc_err *err)
{
    return cbc_ig_cpu_mlp(mlp, r, out, err);
}

enum cbc_status cbc_ig_engine_gpu(void *model, const struct cbc_ig_request *r,
                                  struct cbc_ig_output *out, struct cbc_err *err)
{
    return cbc_ig_gpu_mlp(model, r, out, err);
}

/* ---- the generator ------------------------------------------------------ */

struct rng {
    uint64_t s[4];
    bool has_spare;
    double spare;
};

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t next(struct rng *g)
{
    uint64_t *s = g->s, r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t, s[3] = rotl(s[3], 45);
    return r;
}

static double gauss(struct rng *g)
{
    if (g->has_spare) {
        g->has_spare = false;
        return g->spare;
    }
    double u, v, q;
    do { /* Marsaglia's polar form of Box-Muller */
        u = (double)(next(g) >> 11) * 0x1.0p-53 * 2 - 1;
        v = (double)(next(g) >> 11) * 0x1.0p-53 * 2 - 1;
        q = u * u + v * v;
    } while (q >= 1 || q == 0);
    double f = sqrt(-2 * log(q) / q);
    g->spare = v * f;
    g->has_spare = true;
    return u * f;
}

/* ---- expand, run, reduce ----------------------------------------------- */

static bool mul_ok(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return false;
    *out = a * b;
    return true;
}

/* What the expansion of a batch needs: input b's rows go to the blocks of
 * its (b, j) pairs, at slot[b * T + j] (in target order), each block
 * per_input = S * K rows (sample-major) of F features. */
struct expand {
    const struct cbc_ig_request *r;
    const struct cbc_ig_plan *p;
    size_t F, T, S, K, per_input;
    const size_t *slot;
    float *X, *Bx; /* the rows and, when every row has its own, their baselines */
    bool noisy;
};

/* Input b's noise comes from its own generator: xoshiro256** seeded by the
 * splitmix64 outputs 4b to 4b + 3 of the seed (input 0's are the first four),
 * drawn sample by sample, feature by feature. A run is reproducible, input
 * b's noise does not depend on the other inputs, and inputs are expanded
 * on several threads. tests/igrun_noise.py is the same generator. */
static void expand_inputs(void *ctx, size_t b0, size_t b1)
{
    const struct expand *e = ctx;
    const size_t F = e->F, T = e->T, S = e->S, K = e->K;
    const struct cbc_ig_plan *p = e->p;
    for (size_t b = b0; b < b1; b++) {
        const float *x = e->r->x + b * F;
        struct rng g = {{0}, false, 0};
        uint64_t seed = p->seed + 4 * (uint64_t)b * 0x9e3779b97f4a7c15ull;
        for (int i = 0; i < 4; i++)
            g.s[i] = splitmix(&seed);
        double sd = p->stdev;
        if (e->noisy && p->stdev_relative) {
            float lo = x[0], hi = x[0];
            for (size_t i = 1; i < F; i++)
                lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
            sd *= (double)hi - (double)lo;
        }
        float *first = e->X + e->slot[b * T] * e->per_input * F;
        for (size_t s = 0; s < S; s++) {
            float *dst = first + s * K * F;
            for (size_t i = 0; i < F; i++)
                dst[i] = e->noisy ? (float)((double)x[i] + sd * gauss(&g)) : x[i];
            for (size_t k = 1; k < K; k++)
                memcpy(dst + k * F, dst, F * sizeof *dst);
            for (size_t k = 0; e->Bx && k < K; k++)
                memcpy(e->Bx + (e->slot[b * T] * e->per_input + s * K + k) * F,
                       p->baselines ? p->baselines + k * F : e->r->baseline.data + b * F,
                       F * sizeof *e->Bx);
        }
        for (size_t j = 1; j < T; j++) { /* the same rows for the input's other targets */
            memcpy(e->X + e->slot[b * T + j] * e->per_input * F, first,
                   e->per_input * F * sizeof *first);
            if (e->Bx)
                memcpy(e->Bx + e->slot[b * T + j] * e->per_input * F,
                       e->Bx + e->slot[b * T] * e->per_input * F, e->per_input * F * sizeof *e->Bx);
        }
    }
}

/* A pair (input, j-th target) and its target: sorted by target, then
 * pair, so each target's pairs are contiguous and in input order. */
struct pair {
    int target;
    size_t q;
};

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->target != y->target)
        return x->target < y->target ? -1 : 1;
    return x->q < y->q ? -1 : x->q > y->q;
}

/* The reduction of pairs [q0, q1): the mean over baselines, then the
 * noise's statistic over samples, from the rows of the engine call (group)
 * that computed each pair. */
struct reduce {
    const struct cbc_ig_plan *p;
    struct cbc_ig_output *out;
    double *base_delta;
    size_t F, S, K, per_input;
    const size_t *slot, *group;
    const float *A;
    const double *V;
};

static void reduce_pairs(void *ctx, size_t q0, size_t q1)
{
    const struct reduce *rd = ctx;
    const struct cbc_ig_plan *p = rd->p;
    struct cbc_ig_output *out = rd->out;
    double *base_delta = rd->base_delta;
    const size_t F = rd->F, S = rd->S, K = rd->K, per_input = rd->per_input;
    const size_t *slot = rd->slot, *group = rd->group;
    const float *A = rd->A;
    const double *V = rd->V;
    for (size_t q = q0; q < q1; q++) {
        /* the values are laid out per engine call: this pair's group */
        size_t j = slot[q], row0 = j * per_input, g0 = group[2 * j], g1 = group[2 * j + 1];
        size_t m = (g1 - g0) * per_input, off = row0 - g0 * per_input;
        const double *gv = V + g0 * per_input * 4;
        const float *a0 = A + row0 * F;
        float *dst = out->attr + q * F;
        for (size_t i = 0; i < F; i++) {
            double m1 = 0, m2 = 0;
            for (size_t s = 0; s < S; s++) {
                double a = 0;
                for (size_t k = 0; k < K; k++)
                    a += a0[(s * K + k) * F + i];
                a /= (double)K;
                m1 += a;
                m2 += a * a;
            }
            m1 /= (double)S;
            m2 /= (double)S;
            double v = p->noise == CBC_IG_SMOOTHGRAD_SQ ? m2
                       : p->noise == CBC_IG_VARGRAD     ? (m2 - m1 * m1 > 0 ? m2 - m1 * m1 : 0)
                                                        : m1;
            dst[i] = (float)v;
        }
        double fx = 0, fb = 0, sum = 0, delta = 0;
        for (size_t e2 = 0; e2 < per_input; e2++) {
            fx += gv[off + e2], fb += gv[m + off + e2];
            sum += gv[2 * m + off + e2], delta += gv[3 * m + off + e2];
        }
        out->f_x[q] = fx / (double)per_input;
        out->f_base[q] = fb / (double)per_input;
        out->sum[q] = p->noise == CBC_IG_NOISE_NONE || p->noise == CBC_IG_SMOOTHGRAD
                          ? sum / (double)per_input
                          : 0;
        if (p->noise != CBC_IG_NOISE_NONE && p->noise != CBC_IG_SMOOTHGRAD)
            for (size_t i = 0; i < F; i++)
                out->sum[q] += dst[i];
        out->delta[q] = delta / (double)per_input;
        for (size_t k = 0; base_delta && k < K; k++) { /* each baseline's delta, over samples */
            double d = 0;
            for (size_t s = 0; s < S; s++)
                d += gv[3 * m + off + s * K + k];
            base_delta[q * K + k] = d / (double)S;
        }
    }
}

enum cbc_status cbc_ig_explain(cbc_ig_engine_fn run, void *ctx, size_t F,
                               const struct cbc_ig_request *r, const struct cbc_ig_plan *p,
                               struct cbc_ig_output *out, double *base_delta, struct cbc_err *err)
{
    if (r->device_pointers)
        return ig_err_set(err, CBC_E_USAGE, "an explanation plan takes host arrays, not device "
                          "pointers");
    size_t T = p->n_targets ? p->n_targets : 1;
    bool noisy = p->noise != CBC_IG_NOISE_NONE;
    size_t S = noisy ? (size_t)p->samples : 1;
    size_t K = p->baselines ? p->n_baselines : 1;
    if (noisy && (p->samples < 1 || p->samples > 100000))
        return ig_err_set(err, CBC_E_USAGE, "%d noise samples: expected 1 to 100000", p->samples);
    if (noisy && !(p->stdev >= 0 && isfinite(p->stdev)))
        return ig_err_set(err, CBC_E_USAGE, "noise stdev %g: expected a finite number >= 0",
                          p->stdev);
    if (p->baselines && K == 0)
        return ig_err_set(err, CBC_E_SHAPE, "no baselines given");
    if (!r->x || r->n == 0)
        return ig_err_set(err, CBC_E_USAGE, "no inputs");
    /* one target for all, no noise, the request's baseline: the engine's own call */
    bool one_target = T == 1 && !noisy && !p->baselines;
    for (size_t q = 1; one_target && p->targets && q < r->n; q++)
        one_target = p->targets[q] == p->targets[0];
    if (one_target) {
        struct cbc_ig_request sub = *r;
        if (p->targets)
            sub.target = p->targets[0];
        return run(ctx, &sub, out, err);
    }
    /* every row: (pair, sample, baseline), pairs (input, j-th target) in
     * target order, so each engine call is one contiguous slice */
    size_t per_input, n_pairs, rows, cells;
    if (!mul_ok(S, K, &per_input) || !mul_ok(r->n, T, &n_pairs) ||
        !mul_ok(n_pairs, per_input, &rows) || !mul_ok(rows, F, &cells) ||
        cells > SIZE_MAX / sizeof(double) / 4)
        return ig_err_set(err, CBC_E_USAGE, "%zu inputs x %zu targets x %zu samples x %zu "
                          "baselines x %zu features is too large", r->n, T, S, K, F);
    bool per_row_base = p->baselines || r->baseline.kind == CBC_IG_BASELINE_PER_INPUT;
    size_t cl = cells ? cells : 1;
    struct pair *order = malloc(n_pairs * sizeof *order);
    size_t *slot = malloc(n_pairs * sizeof *slot), *group = malloc(2 * n_pairs * sizeof *group);
    float *X = malloc(cl * sizeof *X), *Bx = per_row_base ? malloc(cl * sizeof *Bx) : NULL;
    float *A = malloc(cl * sizeof *A);
    double *V = malloc(rows * 4 * sizeof *V);
    int *row_targets = NULL; /* a target per row, for the engines that take them */
    enum cbc_status st = CBC_OK;
    if (!order || !slot || !group || !X || (per_row_base && !Bx) || !A || !V) {
        st = ig_err_oom(err);
        goto out;
    }
    for (size_t q = 0; q < n_pairs; q++)
        order[q] = (struct pair){p->targets ? p->targets[q] : r->target, q};
    /* the built-in engines take a target per row (analytic gradients on the
     * GPU): every row in one call, in pair order; any other engine gets one
     * call per distinct target, the pairs sorted by target */
    const bool per_row = run == cbc_ig_engine_cpu ||
                         (run == cbc_ig_engine_gpu && r->gradient == CBC_IG_ANALYTIC);
    row_targets = per_row ? malloc(rows * sizeof *row_targets) : NULL;
    if (per_row && !row_targets) {
        st = ig_err_oom(err);
        goto out;
    }
    if (!per_row)
        qsort(order, n_pairs, sizeof *order, cmp_pair);
    for (size_t j = 0; j < n_pairs; j++) {
        slot[order[j].q] = j;
        for (size_t e2 = 0; per_row && e2 < per_input; e2++)
            row_targets[j * per_input + e2] = order[j].target;
    }
    struct expand e = {r, p, F, T, S, K, per_input, slot, X, Bx, noisy};
    ig_parallel_ranges(r->n, rows * F, expand_inputs, &e);
    /* one engine call per distinct target, or (a target per row) for slices
     * of at most EXPLAIN_ROWS_MAX rows, which bounds what one call puts on
     * the GPU besides its budgeted per-step work */
    const size_t slice = per_input < EXPLAIN_ROWS_MAX ? EXPLAIN_ROWS_MAX / per_input : 1;
    for (size_t j0 = 0; j0 < n_pairs && st == CBC_OK;) {
        size_t j1 = j0 + 1;
        while (j1 < n_pairs && (per_row ? j1 - j0 < slice : order[j1].target == order[j0].target))
            j1++;
        for (size_t j = j0; j < j1; j++) /* the engine call that computed pair j */
            group[2 * j] = j0, group[2 * j + 1] = j1;
        size_t m = (j1 - j0) * per_input, row0 = j0 * per_input;
        struct cbc_ig_request sub = *r;
        sub.x = X + row0 * F;
        sub.n = m;
        sub.target = order[j0].target;
        sub.targets = per_row ? row_targets + row0 : NULL;
        if (per_row_base)
            sub.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, Bx + row0 * F};
        double *v = V + row0 * 4;
        struct cbc_ig_output so = {A + row0 * F, v, v + m, v + 2 * m, v + 3 * m};
        st = run(ctx, &sub, &so, err);
        j0 = j1;
    }
    if (st != CBC_OK)
        goto out;
    struct reduce rd = {p, out, base_delta, F, S, K, per_input, slot, group, A, V};
    ig_parallel_ranges(n_pairs, rows * F, reduce_pairs, &rd);
out:
    free(order), free(slot), free(group), free(X), free(Bx), free(A), free(V), free(row_targets);
    return st;
}
