/* quadrature.c: the quadrature rules of IG, with Captum's names.
 *
 * Gauss-Legendre nodes are found by Newton's method on the Legendre
 * polynomial (three-term recurrence) from Chebyshev-like starting points,
 * in double, to 1e-15; nodes are mirrored, so the rule is exactly
 * symmetric. The trapezoid is the correct one (weights 1/(m-1), ends
 * halved), not Captum's, whose weights sum to (m-1)/m.
 */
#include "ig_int.h"

#include <math.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static const char *const method_names[] = {"riemann_left", "riemann_right", "riemann_middle",
                                           "riemann_trapezoid", "gausslegendre"};

bool cbc_ig_method_parse(const char *name, enum cbc_ig_method *out)
{
    for (size_t i = 0; i < IG_ARRAY_LEN(method_names); i++)
        if (!strcmp(name, method_names[i])) {
            *out = (enum cbc_ig_method)i;
            return true;
        }
    if (!strcmp(name, "trapezoid")) {
        *out = CBC_IG_TRAPEZOID;
        return true;
    }
    return false;
}

const char *cbc_ig_method_name(enum cbc_ig_method m)
{
    return (unsigned)m < IG_ARRAY_LEN(method_names) ? method_names[m] : "unknown";
}

static void gauss_legendre(int m, double *a, double *w)
{
    for (int i = 0; i < (m + 1) / 2; i++) {
        double t = cos(M_PI * (i + 0.75) / (m + 0.5)), dp = 0;
        for (int it = 0; it < 100; it++) {
            double p0 = 1, p1 = t;
            for (int k = 2; k <= m; k++) {
                double p2 = ((2.0 * k - 1) * t * p1 - (k - 1.0) * p0) / k;
                p0 = p1;
                p1 = p2;
            }
            dp = m * (t * p1 - p0) / (t * t - 1);
            double dt = p1 / dp;
            t -= dt;
            if (fabs(dt) < 1e-15)
                break;
        }
        /* recompute the derivative at the converged node for the weight */
        double p0 = 1, p1 = t;
        for (int k = 2; k <= m; k++) {
            double p2 = ((2.0 * k - 1) * t * p1 - (k - 1.0) * p0) / k;
            p0 = p1;
            p1 = p2;
        }
        dp = m == 1 ? 1 : m * (t * p1 - p0) / (t * t - 1);
        double wt = 2 / ((1 - t * t) * dp * dp);
        /* nodes on [-1,1] descending from t; map to [0,1] ascending */
        a[i] = (1 - t) / 2;
        a[m - 1 - i] = (1 + t) / 2;
        w[i] = w[m - 1 - i] = wt / 2;
    }
    if (m % 2 == 1) /* the middle node is exactly 1/2 */
        a[m / 2] = 0.5;
}

enum cbc_status cbc_ig_quadrature(enum cbc_ig_method method, int steps, double *alphas,
                                  double *weights, struct cbc_err *err)
{
    int min = method == CBC_IG_TRAPEZOID ? 2 : 1;
    if (steps < min || steps > 100000)
        return ig_err_set(err, CBC_E_USAGE, "steps %d: %s needs %d to 100000 steps", steps,
                           cbc_ig_method_name(method), min);
    double m = steps;
    switch (method) {
    case CBC_IG_RIEMANN_LEFT:
    case CBC_IG_RIEMANN_RIGHT:
    case CBC_IG_RIEMANN_MIDDLE: {
        double off = method == CBC_IG_RIEMANN_LEFT ? 0 : method == CBC_IG_RIEMANN_RIGHT ? 1 : 0.5;
        for (int k = 0; k < steps; k++) {
            alphas[k] = (k + off) / m;
            weights[k] = 1 / m;
        }
        return CBC_OK;
    }
    case CBC_IG_TRAPEZOID:
        for (int k = 0; k < steps; k++) {
            alphas[k] = k / (m - 1);
            weights[k] = (k == 0 || k == steps - 1 ? 0.5 : 1.0) / (m - 1);
        }
        return CBC_OK;
    case CBC_IG_GAUSS_LEGENDRE:
        gauss_legendre(steps, alphas, weights);
        return CBC_OK;
    }
    return ig_err_set(err, CBC_E_USAGE, "unknown quadrature method %d", (int)method);
}
