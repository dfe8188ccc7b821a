/* ig_int.h: what the IG library's files share: activations and their
 * derivatives (double, for the reference), the baseline of input b, the
 * quadrature with the two extra evaluation points, and the small helpers of
 * ig_util.c. Internal to libcubincache-ig, which includes no header of
 * libcubincache but the public ones (docs/architecture.md). */
#ifndef CBC_IG_INT_H
#define CBC_IG_INT_H

#include <cubincache/ig.h>
#include <cubincache/status.h>

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define IG_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define IG_FILE_MAX (4ull << 30) /* the largest model or input file read: 4 GiB */

/* ---- ig_util.c -------------------------------------------------------- */

/* Fills err (may be NULL) and returns status. */
enum cbc_status ig_err_set(struct cbc_err *err, enum cbc_status status, const char *fmt, ...)
    IG_PRINTF(3, 4);
void ig_err_hint(struct cbc_err *err, const char *fmt, ...) IG_PRINTF(2, 3);
enum cbc_status ig_err_oom(struct cbc_err *err);
/* fn(ctx, b0, b1) over [0, n) split into ranges, on up to 16 threads when
 * `work` (elements touched) pays for them; the results never depend on how
 * many ran, as each range writes its own rows only. */
typedef void (*ig_range_fn)(void *ctx, size_t b0, size_t b1);
void ig_parallel_ranges(size_t n, size_t work, ig_range_fn fn, void *ctx);
char *ig_strdup(const char *s);
/* IEEE half and bfloat16 bits to float (subnormals, Inf and NaN kept). */
float ig_half_to_float(uint16_t h);
float ig_bf16_to_float(uint16_t h);
/* "512 B", "1.5 MB" (powers of 1000). */
const char *ig_format_size(uint64_t bytes, char *buf, size_t len);
/* A whole regular file of at most max bytes; CBC_E_NOT_FOUND, CBC_E_IO,
 * CBC_E_FORMAT (too large). */
enum cbc_status ig_file_read(const char *path, uint64_t max, uint8_t **data, size_t *len,
                             struct cbc_err *err);
/* Replaces path by a complete new file (temporary created with mode less
 * the umask, then rename). */
enum cbc_status ig_file_write_atomic(const char *path, const void *data, size_t len, int mode,
                                     struct cbc_err *err);

/* Little-endian reads and writes of unaligned bytes. */
static inline uint16_t ig_rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint32_t ig_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t ig_rd64(const uint8_t *p)
{
    return (uint64_t)ig_rd32(p) | (uint64_t)ig_rd32(p + 4) << 32;
}
static inline void ig_wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16), p[3] = (uint8_t)(v >> 24);
}

/* ---- onnx.c -------------------------------------------------------------- */

/* cbc_mlp_load_onnx on a file already in memory (path names it in errors,
 * and its directory holds any external data): what the fuzzer drives. */
enum cbc_status ig_onnx_load_mem(const char *path, const uint8_t *data, size_t len,
                                 struct cbc_mlp_owned **out, struct cbc_err *err);
/* The same for any reader: want 0 the chain of layers, 1 a network, 2 a
 * network when the graph has a Conv or pool, else the chain (mlp NULL: a
 * network always). Exactly one of *mlp, *net is set on success. */
enum cbc_status ig_onnx_load_any_mem(const char *path, const uint8_t *data, size_t len, int want,
                                     struct cbc_mlp_owned **mlp, struct cbc_net_owned **net,
                                     struct cbc_err *err);

/* ---- shared by the CPU reference and the GPU engine ------------------ */

/* The parameter an activation runs with: the layer's, or PyTorch's
 * default when it is 0 (LeakyReLU 0.01, ELU 1). */
static inline double cbc_act_param_default(enum cbc_act a)
{
    return a == CBC_ACT_LEAKY_RELU ? 0.01 : a == CBC_ACT_ELU ? 1.0 : 0.0;
}
static inline double cbc_act_param_of(const struct cbc_mlp_layer *L)
{
    return L->act_param != 0 ? (double)L->act_param : cbc_act_param_default(L->act);
}

/* An elementwise activation at z, with its parameter p (Softmax and
 * LogSoftmax act on whole rows: the CPU reference's forward handles them). */
static inline double cbc_act_f(enum cbc_act a, double z, double p)
{
    switch (a) {
    case CBC_ACT_IDENTITY: return z;
    case CBC_ACT_RELU: return z > 0 ? z : 0;
    case CBC_ACT_TANH: return tanh(z);
    case CBC_ACT_SIGMOID: return 1 / (1 + exp(-z));
    case CBC_ACT_GELU: return 0.5 * z * (1 + erf(z * 0.70710678118654752440));
    case CBC_ACT_SILU: return z / (1 + exp(-z));
    case CBC_ACT_SOFTPLUS: return z > 20 ? z : log1p(exp(z));
    case CBC_ACT_ELU: return z > 0 ? z : p * expm1(z);
    case CBC_ACT_LEAKY_RELU: return z > 0 ? z : p * z;
    case CBC_ACT_SOFTMAX:
    case CBC_ACT_LOG_SOFTMAX: break;
    }
    return z;
}

/* d act / dz. ReLU'(0) = 0, as PyTorch. */
static inline double cbc_act_df(enum cbc_act a, double z, double p)
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
    case CBC_ACT_SILU: {
        double s = 1 / (1 + exp(-z));
        return s * (1 + z * (1 - s));
    }
    case CBC_ACT_SOFTPLUS: return z > 20 ? 1 : 1 / (1 + exp(-z));
    case CBC_ACT_ELU: return z > 0 ? 1 : p * exp(z);
    case CBC_ACT_LEAKY_RELU: return z > 0 ? 1 : p;
    case CBC_ACT_SOFTMAX:
    case CBC_ACT_LOG_SOFTMAX: break;
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

/* Whether forward results f [n][outs] are the model's own outputs y (the
 * rule of cbc_mlp_check_outputs): CBC_OK or CBC_E_VERIFY naming the first
 * disagreement; *worst (may be NULL) the largest relative difference. */
enum cbc_status ig_compare_outputs(const double *f, const float *y, size_t n, size_t outs,
                                   double *worst, struct cbc_err *err);

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
