/* ig_int.h: what the IG backends share: activations and their derivatives
 * (double, for the reference), the baseline of input b, and the quadrature
 * with the two extra evaluation points. Internal. */
#ifndef CBC_IG_INT_H
#define CBC_IG_INT_H

#include "common.h"
#include <cubincache/ig.h>

#include <math.h>

static inline double cbc_act_f(enum cbc_act a, double z)
{
    switch (a) {
    case CBC_ACT_IDENTITY: return z;
    case CBC_ACT_RELU: return z > 0 ? z : 0;
    case CBC_ACT_TANH: return tanh(z);
    case CBC_ACT_SIGMOID: return 1 / (1 + exp(-z));
    case CBC_ACT_GELU: return 0.5 * z * (1 + erf(z * 0.70710678118654752440));
    }
    return z;
}

/* d act / dz. ReLU'(0) = 0, as PyTorch. */
static inline double cbc_act_df(enum cbc_act a, double z)
{
    switch (a) {
    case CBC_ACT_IDENTITY: return 1;
    case CBC_ACT_RELU: return z > 0 ? 1 : 0;
    case CBC_ACT_TANH: {
        double t = tanh(z);
        return 1 - t * t;
    }
    case CBC_ACT_SIGMOID: {
        double s = 1 / (1 + exp(-z));
        return s * (1 - s);
    }
    case CBC_ACT_GELU:
        return 0.5 * (1 + erf(z * 0.70710678118654752440)) +
               z * 0.39894228040143267794 * exp(-0.5 * z * z);
    }
    return 1;
}

/* Baseline value of feature i for input b. */
static inline float cbc_ig_base_at(const struct cbc_ig_baseline *bl, size_t b, size_t F, size_t i)
{
    switch (bl->kind) {
    case CBC_IG_BASELINE_ZEROS: return 0;
    case CBC_IG_BASELINE_SCALAR: return bl->scalar;
    case CBC_IG_BASELINE_SHARED: return bl->data[i];
    case CBC_IG_BASELINE_PER_INPUT: return bl->data[b * F + i];
    }
    return 0;
}

/* Quadrature for a request, validated (steps and method). */
enum cbc_status cbc_ig_rule(const struct cbc_ig_request *r, double **alphas, double **weights,
                            struct cbc_err *err);

/* Fills sum and delta from attr, f_x and f_base. */
void cbc_ig_finish(struct cbc_ig_output *out, size_t n, size_t F);

/* Central-difference step for feature i between x and x': scaled to the
 * magnitudes involved (cbrt of float epsilon times max(1, |x|, |x'|)). */
static inline float cbc_ig_fd_step(float x, float base)
{
    float m = fabsf(x) > fabsf(base) ? fabsf(x) : fabsf(base);
    return 4.9e-3f * (m > 1 ? m : 1);
}

/* Scratch the CPU finite differences may take when the request names no
 * budget: perturbed points are evaluated in blocks that fit. */
#define CBC_IG_CPU_FD_BUDGET (256u << 20)

/* safetensors' own limit on its JSON header (MAX_HEADER_SIZE in the Rust
 * crate): a longer one is refused before it is parsed. */
#define CBC_SAFETENSORS_HEADER_MAX 100000000ull

#endif
