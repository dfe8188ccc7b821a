/* explain.c: what a Captum user asks of IG beyond one target for a batch:
 * a target per input (or several), NoiseTunnel (SmoothGrad, SmoothGrad
 * squared, VarGrad) and several baselines per input averaged (expected
 * gradients), on either engine (CPU reference or GPU) through one
 * signature.
 *
 * How: the batch is expanded (each input times its noisy samples times its
 * baselines), grouped by target so each engine call explains one output of
 * a batch as large as the data allows (on the GPU all noisy copies and
 * baselines of the inputs sharing a target are one batch), and reduced
 * back: the mean over baselines, then over samples the mean (SmoothGrad),
 * the mean of squares (SmoothGrad squared) or the variance (VarGrad).
 * Noise is Gaussian from a seeded generator (xoshiro256**, Box-Muller in
 * double), so a run is reproducible.
 *
 * Invariants: every size product is checked for overflow before it is
 * allocated; targets are checked against the model's outputs by the caller
 * (cbc_ig_check_targets); nothing is written to `out` unless every engine
 * call succeeded.
 */
#include "ig_int.h"

#include <stdlib.h>
#include <string.h>

static const char *const noise_names[] = {"none", "smoothgrad", "smoothgrad_sq", "vargrad"};

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

enum cbc_status cbc_ig_check_targets(const int *targets, size_t n, int outputs,
                                     struct cbc_err *err)
{
    for (size_t i = 0; i < n; i++)
        if (targets[i] < 0 || targets[i] >= outputs)
            return ig_err_set(err, CBC_E_USAGE, "target %d (entry %zu) is not an output of the "
                              "model: it has outputs 0 to %d", targets[i], i, outputs - 1);
    return CBC_OK;
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
    size_t per_input, rows, cells;
    if (!mul_ok(S, K, &per_input) || !mul_ok(r->n, per_input, &rows) || !mul_ok(rows, F, &cells) ||
        cells > SIZE_MAX / sizeof(float) / 2)
        return ig_err_set(err, CBC_E_USAGE, "%zu inputs x %zu samples x %zu baselines x %zu "
                          "features is too large", r->n, S, K, F);
    enum cbc_status st = CBC_OK;
    /* the expanded inputs and their baselines: row (b, s, k) = (b * S + s) * K + k */
    float *X = malloc((cells ? cells : 1) * sizeof *X);
    float *Bx = NULL;
    bool per_row_base = p->baselines || r->baseline.kind == CBC_IG_BASELINE_PER_INPUT;
    if (per_row_base)
        Bx = malloc((cells ? cells : 1) * sizeof *Bx);
    if (!X || (per_row_base && !Bx)) {
        free(X), free(Bx);
        return ig_err_oom(err);
    }
    struct rng g = {{0}, false, 0};
    uint64_t seed = p->seed;
    for (int i = 0; i < 4; i++)
        g.s[i] = splitmix(&seed);
    for (size_t b = 0; b < r->n; b++) {
        const float *x = r->x + b * F;
        double sd = p->stdev;
        if (noisy && p->stdev_relative) {
            float lo = x[0], hi = x[0];
            for (size_t i = 1; i < F; i++)
                lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
            sd *= (double)hi - (double)lo;
        }
        for (size_t s = 0; s < S; s++) {
            float *dst = X + ((b * S + s) * K) * F;
            for (size_t i = 0; i < F; i++)
                dst[i] = noisy ? (float)((double)x[i] + sd * gauss(&g)) : x[i];
            for (size_t k = 1; k < K; k++)
                memcpy(dst + k * F, dst, F * sizeof *dst);
            for (size_t k = 0; per_row_base && k < K; k++)
                memcpy(Bx + ((b * S + s) * K + k) * F,
                       p->baselines ? p->baselines + k * F : r->baseline.data + b * F,
                       F * sizeof *Bx);
        }
    }
    /* the distinct targets, and for each the rows that explain it */
    size_t n_pairs = r->n * T;
    /* per (pair, sample, baseline): attributions and values, before reduction;
     * a target group holds at most all of them (one input may name a target twice) */
    size_t all_rows, all_cells;
    if (!mul_ok(rows, T, &all_rows) || !mul_ok(all_rows, F, &all_cells) ||
        all_cells > SIZE_MAX / sizeof(double) / 4) {
        free(X), free(Bx);
        return ig_err_set(err, CBC_E_USAGE, "%zu inputs x %zu targets x %zu samples x %zu "
                          "baselines is too large", r->n, T, S, K);
    }
    size_t ac = all_cells ? all_cells : 1, ar = all_rows ? all_rows : 1;
    int *tgt = malloc((n_pairs ? n_pairs : 1) * sizeof *tgt);
    size_t *idx = malloc(ar * sizeof *idx);
    float *gx = malloc(ac * sizeof *gx);
    float *gb = per_row_base ? malloc(ac * sizeof *gb) : NULL;
    float *ga = malloc(ac * sizeof *ga);
    double *gv = malloc(ar * 4 * sizeof *gv);
    float *A = malloc(ac * sizeof *A);
    double *V = malloc(ar * 4 * sizeof *V);
    if (!tgt || !idx || !gx || (per_row_base && !gb) || !ga || !gv || !A || !V) {
        st = ig_err_oom(err);
        goto out;
    }
    for (size_t q = 0; q < n_pairs; q++)
        tgt[q] = p->targets ? p->targets[q] : r->target;
    for (size_t q0 = 0; q0 < n_pairs && st == CBC_OK; q0++) {
        int t = tgt[q0];
        bool first = true; /* the first pair of this target does the work for all */
        for (size_t q = 0; q < q0; q++)
            first &= tgt[q] != t;
        if (!first)
            continue;
        /* gather every row of every pair (b, j) with target t */
        size_t m = 0;
        for (size_t q = q0; q < n_pairs; q++) {
            if (tgt[q] != t)
                continue;
            size_t b = q / T;
            for (size_t e = 0; e < per_input; e++) {
                size_t row = b * per_input + e;
                memcpy(gx + m * F, X + row * F, F * sizeof *gx);
                if (per_row_base)
                    memcpy(gb + m * F, Bx + row * F, F * sizeof *gb);
                idx[m++] = q * per_input + e;
            }
        }
        struct cbc_ig_request sub = *r;
        sub.x = gx;
        sub.n = m;
        sub.target = t;
        if (per_row_base)
            sub.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_PER_INPUT, 0, gb};
        struct cbc_ig_output so = {ga, gv, gv + m, gv + 2 * m, gv + 3 * m};
        st = run(ctx, &sub, &so, err);
        for (size_t i = 0; st == CBC_OK && i < m; i++) {
            memcpy(A + idx[i] * F, ga + i * F, F * sizeof *A);
            V[idx[i] * 4 + 0] = so.f_x[i];
            V[idx[i] * 4 + 1] = so.f_base[i];
            V[idx[i] * 4 + 2] = so.sum[i];
            V[idx[i] * 4 + 3] = so.delta[i];
        }
    }
    if (st != CBC_OK)
        goto out;
    /* reduce: the mean over baselines, then the noise's statistic over samples */
    for (size_t q = 0; q < n_pairs; q++) {
        float *dst = out->attr + q * F;
        double fx = 0, fb = 0, sum = 0, delta = 0;
        for (size_t i = 0; i < F; i++) {
            double m1 = 0, m2 = 0;
            for (size_t s = 0; s < S; s++) {
                double a = 0;
                for (size_t k = 0; k < K; k++)
                    a += A[(q * per_input + s * K + k) * F + i];
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
        for (size_t e = 0; e < per_input; e++) {
            const double *v = V + (q * per_input + e) * 4;
            fx += v[0], fb += v[1], sum += v[2], delta += v[3];
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
                d += V[(q * per_input + s * K + k) * 4 + 3];
            base_delta[q * K + k] = d / (double)S;
        }
    }
out:
    free(X), free(Bx), free(tgt), free(idx), free(gx), free(gb), free(ga), free(gv), free(A),
        free(V);
    return st;
}
