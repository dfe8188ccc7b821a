/* cubincache/ig.h: Integrated Gradients (Sundararajan et al., 2017) for
 * multilayer perceptrons and black-box functions, on the CPU (the
 * reference: double accumulation) and on the GPU (kernels built by
 * cubincache and loaded by its loader).
 *
 *   IG_i(x) = (x_i - x'_i) * integral_0^1 dF(x' + a (x - x'))/dx_i da
 *
 * approximated by a quadrature rule over `steps` points. Every result
 * carries F(x), F(x'), the sum of the attributions and the convergence
 * delta = sum_i IG_i - (F(x) - F(x')) (Captum's sign).
 *
 * Conventions: arrays are row-major float (inputs [n][F], a dense layer's
 * weight [out][in] as PyTorch stores nn.Linear.weight); the caller owns
 * every buffer it passes; functions return a status and fill a caller-owned
 * struct cbc_err; nothing prints. Since 0.1.
 */
#ifndef CUBINCACHE_IG_H
#define CUBINCACHE_IG_H

#include <cubincache/api.h>

#include <cubincache/loader.h>
#include <cubincache/status.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- quadrature ---------------------------------------------------------- */

enum cbc_ig_method {
    CBC_IG_RIEMANN_LEFT = 0,   /* a_k = k/m,        w = 1/m */
    CBC_IG_RIEMANN_RIGHT = 1,  /* a_k = (k+1)/m,    w = 1/m (the paper's eq. 3) */
    CBC_IG_RIEMANN_MIDDLE = 2, /* a_k = (k+1/2)/m,  w = 1/m */
    CBC_IG_TRAPEZOID = 3,      /* a = linspace(0,1,m), w = 1/(m-1), ends halved: a
                                  correct rule, unlike Captum's (m-1)/m-scaled one */
    CBC_IG_GAUSS_LEGENDRE = 4  /* Legendre nodes mapped to [0,1]: a = (1+t)/2, w = w_t/2 */
};

/* Fills alphas[steps] and weights[steps]. CBC_E_USAGE for steps < 1 (< 2 for
 * the trapezoid) or > 100000. Weights sum to 1 for every method. */
CBC_API enum cbc_status cbc_ig_quadrature(enum cbc_ig_method method, int steps, double *alphas,
                                          double *weights, struct cbc_err *err);
/* "gausslegendre" <-> CBC_IG_GAUSS_LEGENDRE (Captum's names); false if unknown. */
CBC_API bool cbc_ig_method_parse(const char *name, enum cbc_ig_method *out);
CBC_API const char *cbc_ig_method_name(enum cbc_ig_method m);

/* ---- models ---------------------------------------------------------------- */

enum cbc_act {
    CBC_ACT_IDENTITY = 0,
    CBC_ACT_RELU = 1,
    CBC_ACT_TANH = 2,
    CBC_ACT_SIGMOID = 3,
    CBC_ACT_GELU = 4,      /* exact: x * Phi(x), as torch.nn.GELU() */
    CBC_ACT_SILU = 5,      /* x * sigmoid(x), torch.nn.SiLU (Swish); since 0.2 */
    CBC_ACT_SOFTPLUS = 6,  /* log(1 + e^x), x above 20, torch.nn.Softplus() defaults */
    CBC_ACT_ELU = 7,       /* x, or e^x - 1 below 0: torch.nn.ELU() (alpha 1) */
    CBC_ACT_LEAKY_RELU = 8, /* x, or slope x below 0: torch.nn.LeakyReLU (slope 0.01) */
    CBC_ACT_SOFTMAX = 9,    /* softmax over the layer's outputs (the last layer only): the
                               target's probability is explained; since 0.2 */
    CBC_ACT_LOG_SOFTMAX = 10 /* its logarithm (the last layer only); since 0.2 */
};
/* PyTorch's default parameters only: "leakyrelu", "LeakyReLU()", "elu". */
CBC_API bool cbc_act_parse(const char *name, enum cbc_act *out);
/* Any parameter as well: "leakyrelu(0.2)", "LeakyReLU(negative_slope=0.2)",
 * "ELU(alpha=0.5)", "Softmax(dim=-1)" (the last dimension only); *param is
 * the slope or alpha, 0 for PyTorch's default (and for activations without
 * one); an explicit slope or alpha of 0 is ReLU. Since 0.2. */
CBC_API bool cbc_act_parse_param(const char *name, enum cbc_act *out, float *param);
CBC_API const char *cbc_act_name(enum cbc_act a);

/* Where a layer's LayerNorm (over its `out` units) sits. Since 0.2. */
enum cbc_norm {
    CBC_NORM_NONE = 0,
    CBC_NORM_BEFORE_ACT = 1, /* Linear, LayerNorm, activation */
    CBC_NORM_AFTER_ACT = 2   /* Linear, activation, LayerNorm */
};

/* A residual connection: an earlier tensor of the model (an earlier layer's
 * output h, or the model's input) added to this layer. Since 0.3. */
enum cbc_residual {
    CBC_RESIDUAL_NONE = 0,
    CBC_RESIDUAL_AFTER = 1,     /* h = mul a + add + residual_mul src: after everything
                                   (h = h + relu(fc2 h)) */
    CBC_RESIDUAL_BEFORE_ACT = 2 /* z = W x + b + residual_mul src, before the LayerNorm and
                                   activation (relu(fc2 h + h)) */
};

/* Zero-initialised fields beyond `act` add nothing: PyTorch's default
 * activation parameter, no LayerNorm, no scaling, no residual. A layer
 * computes, in this order:
 *   z = W in + b            (+ residual_mul * src with CBC_RESIDUAL_BEFORE_ACT)
 *   y = LayerNorm(z) or z   (CBC_NORM_BEFORE_ACT)
 *   a = act(y)
 *   a = LayerNorm(a) or a   (CBC_NORM_AFTER_ACT)
 *   h = mul * a + add       (+ residual_mul * src with CBC_RESIDUAL_AFTER)
 * elementwise for mul, add and residual_mul ([out] each, NULL for 1, 0, 1);
 * src is layer residual_from's h (residual_from < this layer), or the
 * model's input for -1, of as many units as this layer has outputs. */
struct cbc_mlp_layer {
    int in, out;
    const float *w;   /* [out][in] */
    const float *b;   /* [out], or NULL for no bias */
    enum cbc_act act; /* applied to this layer's output */
    float act_param;  /* LeakyReLU's negative slope, ELU's alpha; 0: PyTorch's default
                         (0.01, 1.0); since 0.2 */
    enum cbc_norm norm;           /* a LayerNorm over the outputs; since 0.2 */
    const float *norm_w, *norm_b; /* its weight and bias [out], or NULL for 1 and 0 */
    float norm_eps;               /* 0: PyTorch's default, 1e-5 */
    const float *mul, *add;       /* the output's constant scale and shift [out] (a Mul or
                                     Add by a constant in forward(), a BatchNorm after the
                                     activation), or NULL; since 0.3 */
    enum cbc_residual residual;   /* since 0.3 */
    int residual_from;            /* -1: the model's input; else an earlier layer's index */
    const float *residual_mul;    /* [out] or NULL for 1 */
};

struct cbc_mlp {
    int n_layers;
    const struct cbc_mlp_layer *layers;
};

/* Checks shapes chain (layer k's out == layer k+1's in), sizes are positive
 * and every weight and bias is finite, that Softmax and LogSoftmax are on
 * the last layer only (with no LayerNorm after them) and activation
 * parameters and LayerNorm epsilons are finite (eps > 0), that a residual
 * comes from the input or an earlier layer of as many units, and that
 * scales and shifts are finite. CBC_E_SHAPE / CBC_E_NUMERIC / CBC_E_USAGE
 * naming the layer and the tensor. */
CBC_API enum cbc_status cbc_mlp_validate(const struct cbc_mlp *m, struct cbc_err *err);

/* ---- files ----------------------------------------------------------------- */

/* An MLP read from a file, owning its weights. */
struct cbc_mlp_owned {
    struct cbc_mlp mlp;
    struct cbc_mlp_layer *layers;
    float *storage;
    char *activations; /* as given or as found in the file's metadata */
    char *layer_names; /* one per layer, separated by commas ("fc1,fc2,out"); since 0.3 */
    bool from_graph;   /* read from the model's graph (ONNX), not inferred from its
                          parameters (safetensors); since 0.3 */
};

/* Reads an nn.Sequential of Linear layers as safetensors.torch.save_file
 * writes it: tensors "<i>.weight" [out][in] and "<i>.bias" [out] (any common
 * prefix before the index, layers in index order), dtype F32, F64, F16 or
 * BF16. Activations come from `activations` ("tanh,tanh,identity", one per
 * linear layer) or, when that is NULL, from the "activations" entry of the
 * file's __metadata__. Every size and offset is checked against the file;
 * errors name the file and the tensor (CBC_E_FORMAT, CBC_E_SHAPE,
 * CBC_E_NUMERIC for NaN or Inf, CBC_E_UNSUPPORTED for other dtypes). */
CBC_API enum cbc_status cbc_mlp_load_safetensors(const char *path, const char *activations,
                                                 struct cbc_mlp_owned **out, struct cbc_err *err);
/* As cbc_mlp_load_safetensors, for the state_dict() of any MLP of Linear,
 * BatchNorm1d and LayerNorm layers: modules are the names before the last '.' ("fc1",
 * "net.0"); their order is `layers` ("fc1,bn1,fc2,fc3": every module once),
 * else the __metadata__ entry "layer_order" (the state_dict()'s keys joined
 * by commas, as PyTorch orders them: safetensors.torch.save_file sorts the
 * tensors by name, so the file itself never keeps that order), else their
 * trailing index when all have one (an nn.Sequential); several named
 * modules with neither are refused (CBC_E_USAGE, the hint says both fixes).
 * Conv, Embedding and PReLU parameters are refused by name (CBC_E_UNSUPPORTED)
 * rather than read as something else (2-D weights of a module named like an
 * embedding, "emb", "wte", "wpe"; weights of 3 to 5 dimensions; a 1-D weight
 * alone, unless the module's name says it is a norm). What forward() does
 * without parameters (a residual add, a scaling) is not in a state_dict:
 * cbc_mlp_load_onnx reads it from the graph. A
 * BatchNorm1d (running_mean, running_var, optional weight and bias; eps
 * 1e-5 or __metadata__ "batchnorm_eps") is folded, exactly in eval mode,
 * into the Linear layer before it when nothing comes between (the usual
 * Linear, BatchNorm, activation; in a numbered Sequential a gap in the
 * indices is an activation between them), else into the Linear after it.
 * A LayerNorm (a 1-D weight without running statistics; eps 1e-5 or
 * __metadata__ "layernorm_eps") becomes the `norm` of the Linear right
 * before it: before its activation when adjacent (consecutive indices, or
 * named modules), after it when a Sequential's indices leave a gap;
 * anywhere else it is refused. Activations take PyTorch's parameters
 * (cbc_act_parse_param). A torch.save file (zip or pickle) is refused with
 * what it is and the Python that writes safetensors instead. Since 0.2. */
CBC_API enum cbc_status cbc_mlp_load_safetensors_layers(const char *path, const char *activations,
                                                        const char *layers,
                                                        struct cbc_mlp_owned **out,
                                                        struct cbc_err *err);
CBC_API void cbc_mlp_owned_free(struct cbc_mlp_owned *m);

/* Reads the graph of a model exported by torch.onnx.export (the TorchScript
 * exporter, dynamo=False, or the dynamo one) and maps it onto layers: Gemm,
 * or MatMul by a constant then Add (a Linear); BatchNormalization (folded in
 * eval mode into the Linear before it, or the scale and shift of the layer
 * before it when it follows an activation); LayerNormalization over the last
 * axis; Relu, Tanh, Sigmoid, Gelu (also as the Erf form the TorchScript
 * exporter writes), Sigmoid times its input (SiLU), Softplus, Elu,
 * LeakyRelu; Softmax and LogSoftmax over the last axis of the last layer;
 * Flatten or Reshape of the input; Mul, Add, Sub and Div by constants;
 * Add of two tensors of the graph as a residual (an earlier layer's output,
 * or the input); Identity and Dropout (inference). Any other operator, and
 * any graph that is not a chain of such layers (a branch, a value used after
 * it changed), is refused naming the node, its operator and the fix.
 * Initializers and Constant nodes in float32, float64, float16, bfloat16
 * (int64 for shapes), inline or in an external data file beside the model
 * (its name may not leave the model's directory; offsets and lengths are
 * checked against the file before a byte is read). The protobuf is checked
 * for depth and size before it is decoded (protobuf-c), and every count and
 * size after. Errors name the file and the node or tensor (CBC_E_FORMAT,
 * CBC_E_UNSUPPORTED, CBC_E_SHAPE, CBC_E_NUMERIC). Since 0.3. */
CBC_API enum cbc_status cbc_mlp_load_onnx(const char *path, struct cbc_mlp_owned **out,
                                          struct cbc_err *err);

/* Whether an MLP is the model whose outputs y [n][outputs] were computed
 * (by PyTorch, say) for the inputs x [n][F]: its forward in double must
 * agree with every row of y to 1e-4 of the row's largest magnitude (float32
 * rounding is far below that; a model read wrongly is far above). CBC_OK,
 * or CBC_E_VERIFY naming the first input and output that disagree, both
 * values and the largest difference; *worst (may be NULL) gets the largest
 * relative difference over the rows. Since 0.3. */
CBC_API enum cbc_status cbc_mlp_check_outputs(const struct cbc_mlp *m, const float *x, size_t n,
                                              const float *y, size_t y_cols, double *worst,
                                              struct cbc_err *err);

/* ---- convolutional networks (since 0.4) ---------------------------------- */

/* A network as a graph of operators over each input's tensor, for image
 * models: values are numbered, 0 the input and k + 1 node k's output, and
 * each node reads earlier values only. A value is one input's [C][H][W]
 * in C order (a 1-D signal [C][L] is H = 1, W = L; a flat vector of F
 * features is C = F, H = W = 1), so Flatten, and a Reshape between shapes
 * of as many elements, change no data and are no nodes: a node says how it
 * reads its input (ic, ih, iw) where the shape matters. */
enum cbc_net_op {
    CBC_NET_CONV = 0,     /* y[o] = bias[o] + sum over the group's inputs and the kernel of
                             weight[o][i][kh][kw] x[g i][oh sh - pt + kh dh][ow sw - pl + kw dw]
                             (zero outside), as nn.Conv1d/2d; weight [C][in_C/groups][kh][kw] */
    CBC_NET_MAXPOOL = 1,  /* the largest of each window (padding never wins); its gradient
                             goes to the first largest element in scan order, as autograd's */
    CBC_NET_AVGPOOL = 2,  /* the mean of each window: over kh kw elements, or the ones inside
                             the input when count_include_pad is false */
    CBC_NET_GLOBAL_AVGPOOL = 3, /* [C][H][W] -> [C][1][1] */
    CBC_NET_LINEAR = 4,   /* y = weight x + bias over the input's elements, flattened;
                             weight [C][in elements] */
    CBC_NET_AFFINE = 5,   /* y[ch] = x[ch] mul[ch] + add[ch] over each channel (a BatchNorm
                             not folded into a Conv or Linear, a Mul or Add by a constant) */
    CBC_NET_ACT = 6,      /* an activation of every element; CBC_ACT_SOFTMAX and
                             CBC_ACT_LOG_SOFTMAX over the whole (flat) value */
    CBC_NET_ADD = 7,      /* y = in[0] + in[1] (as many elements): a residual connection */
    CBC_NET_CONCAT = 8,   /* the inputs' elements one after another: channels, when they
                             share H and W */
    CBC_NET_LAYERNORM = 9 /* LayerNorm of the whole (flat) value: weight, bias [C] or NULL, eps */
};

#define CBC_NET_INPUTS_MAX 64 /* inputs of one node (a Concat) */

struct cbc_net_node {
    enum cbc_net_op op;
    const char *name;    /* the model's name for it (messages), or NULL */
    int n_in;            /* values read: 1, 2 (ADD), 2 to CBC_NET_INPUTS_MAX (CONCAT) */
    int in[CBC_NET_INPUTS_MAX];
    int c, h, w;         /* the output's shape (AFFINE: per channel of this shape) */
    int ic, ih, iw;      /* CONV, MAXPOOL, AVGPOOL, GLOBAL_AVGPOOL: in[0] read as [ic][ih][iw]
                            (as many elements as it has: a Reshape is no node); the other
                            operators take their inputs' elements as they are */
    int kh, kw;          /* CONV, MAXPOOL, AVGPOOL: the window */
    int sh, sw, dh, dw;  /* strides and dilations (0 counts as 1) */
    int pt, pl, pb, pr;  /* zero padding: top, left, bottom, right */
    int groups;          /* CONV (0 counts as 1); groups == in_C == C is depthwise */
    bool count_include_pad; /* AVGPOOL */
    const float *weight; /* CONV, LINEAR, LAYERNORM (NULL: ones) */
    const float *bias;   /* CONV, LINEAR, LAYERNORM [C], or NULL */
    const float *mul, *add; /* AFFINE [C] each, or NULL for 1 and 0 */
    float eps;           /* LAYERNORM (0: 1e-5) */
    enum cbc_act act;    /* ACT */
    float act_param;     /* ACT: LeakyReLU's slope, ELU's alpha (0: PyTorch's default) */
};

struct cbc_net {
    int c, h, w;         /* the input's shape: F = c h w features */
    int n_nodes;
    const struct cbc_net_node *nodes; /* the last one's output is the model's */
};

/* Checks every node: inputs are earlier values, of the shapes the operator
 * takes; the output shape is what the operator gives (a Conv's and pool's
 * from the window, strides, dilations and padding, as PyTorch computes them
 * with ceil_mode off); groups divide both channel counts; parameters are
 * present and finite; sizes stay below 2^31 elements per value.
 * CBC_E_SHAPE / CBC_E_NUMERIC / CBC_E_USAGE naming the node. */
CBC_API enum cbc_status cbc_net_validate(const struct cbc_net *n, struct cbc_err *err);
/* Features of the input (c h w) and outputs of the last node. */
CBC_API size_t cbc_net_features(const struct cbc_net *n);
CBC_API size_t cbc_net_outputs(const struct cbc_net *n);

struct cbc_net_owned {
    struct cbc_net net;
    struct cbc_net_node *nodes;
    float *storage;
    char *names;   /* the nodes' names, each NUL-terminated */
    char *summary; /* "1x28x28 conv(6,5x5) relu maxpool ... linear(10)", for messages */
};
CBC_API void cbc_net_owned_free(struct cbc_net_owned *n);

/* Reads an ONNX model (as cbc_mlp_load_onnx) into a network: Conv (1-D and
 * 2-D; strides, padding, dilations, groups), MaxPool, AveragePool
 * (ceil_mode off), GlobalAveragePool and ReduceMean over the spatial axes,
 * BatchNormalization (folded into the Conv, Gemm or MatMul before it when
 * nothing else reads that, else a per-channel scale and shift), Add of two
 * tensors, Concat along channels, Flatten and Reshape, Gemm and MatMul by
 * constants, Add/Sub/Mul/Div by constants of one value or one per channel,
 * the activations of cbc_mlp_load_onnx (the Erf form of GELU and Sigmoid
 * times its input too), LayerNormalization, Softmax and LogSoftmax over the
 * features of a flat value, Identity, Dropout, Cast to float, Constant and
 * Transpose of constants. Any other operator, and an attribute of these it
 * does not run (ceil_mode, auto_pad SAME, an axis other than the channels),
 * is refused naming the node, the operator or attribute, and the fix.
 * Since 0.4. */
CBC_API enum cbc_status cbc_net_load_onnx(const char *path, struct cbc_net_owned **out,
                                          struct cbc_err *err);
/* An ONNX model as igrun reads it: a graph with a Conv, MaxPool,
 * AveragePool or GlobalAveragePool node becomes a network (*net), any other
 * the chain of layers of cbc_mlp_load_onnx (*mlp); the other is NULL.
 * Since 0.4. */
CBC_API enum cbc_status cbc_onnx_load(const char *path, struct cbc_mlp_owned **mlp,
                                      struct cbc_net_owned **net, struct cbc_err *err);

/* The network's outputs for n inputs [n][F], in double: out [n][outputs]. */
CBC_API enum cbc_status cbc_net_forward(const struct cbc_net *net, const float *x, size_t n,
                                        double *out, struct cbc_err *err);
/* As cbc_mlp_check_outputs, for a network. */
CBC_API enum cbc_status cbc_net_check_outputs(const struct cbc_net *net, const float *x, size_t n,
                                              const float *y, size_t y_cols, double *worst,
                                              struct cbc_err *err);

/* A dense float matrix. */
struct cbc_matrix {
    float *data;
    size_t rows, cols;
    int ndim;       /* the file's: 1 to 4 for .npy ([n, H, W] and [n, C, H, W] are images,
                       their trailing dimensions flattened into cols), 2 for .csv; since 0.2 */
    size_t dims[4]; /* the file's shape, as given */
};

/* Reads .npy (<f4, <f8, <i4, <i8, |u1; 1-D is one row, 2-D is rows by
 * columns, 3-D and 4-D are images, one per row, in C order) or .csv (numbers separated by commas; a non-numeric first line
 * is a header), chosen by the file's extension. Errors name the file and the
 * line / field. */
CBC_API enum cbc_status cbc_matrix_load(const char *path, struct cbc_matrix *out, struct cbc_err *err);
/* Writes a float32 .npy. */
CBC_API enum cbc_status cbc_matrix_save_npy(const char *path, const struct cbc_matrix *m,
                                            struct cbc_err *err);
/* Writes a float32 .npy of 1 to 5 dimensions (row-major; 5 since 0.4, for
 * attributions [n][T][C][H][W]). Since 0.2. */
CBC_API enum cbc_status cbc_tensor_save_npy(const char *path, const float *data,
                                            const size_t *dims, int ndim, struct cbc_err *err);
CBC_API void cbc_matrix_release(struct cbc_matrix *m);

/* ---- a request and its results ------------------------------------------ */

enum cbc_ig_baseline_kind {
    CBC_IG_BASELINE_ZEROS = 0,
    CBC_IG_BASELINE_SCALAR = 1,    /* every feature = scalar */
    CBC_IG_BASELINE_SHARED = 2,    /* one [F] array for every input */
    CBC_IG_BASELINE_PER_INPUT = 3  /* an [n][F] array */
};

struct cbc_ig_baseline {
    enum cbc_ig_baseline_kind kind;
    float scalar;
    const float *data;
};

enum cbc_ig_gradient {
    CBC_IG_ANALYTIC = 0, /* backpropagation (MLP only) */
    CBC_IG_FD = 1,       /* central differences, all perturbations batched */
    CBC_IG_PER_FEATURE = 2 /* a per-feature loop: per step and feature two forward
                              passes of one row, one scalar to the host each; the
                              benchmark baseline for CBC_IG_FD, nothing more */
};

struct cbc_ig_request {
    const float *x;                   /* [n][F] */
    size_t n;
    struct cbc_ig_baseline baseline;
    enum cbc_ig_method method;        /* default (zero-initialised): riemann_left; use
                                         cbc_ig_request_defaults for Captum's */
    int steps;
    int target;                       /* output index explained */
    enum cbc_ig_gradient gradient;
    size_t mem_budget;                /* GPU scratch bytes; 0: a quarter of free memory */
    bool device_pointers;             /* GPU only: x, the baseline array and out->attr are
                                         device addresses (CUdeviceptr values as pointers),
                                         for data already on the GPU; f_x .. delta stay host */
    const int *targets;               /* [n], a host array: the output explained for each
                                         input, in one call (the output layer and the
                                         backward's seed take each row's); NULL: `target`
                                         for every input. Since 0.3. */
};

/* method = gausslegendre, steps = 50, target = 0, analytic, zeros baseline. */
CBC_API void cbc_ig_request_defaults(struct cbc_ig_request *r);

struct cbc_ig_output {
    float *attr;    /* [n][F] */
    double *f_x;    /* [n] F(x) */
    double *f_base; /* [n] F(x') */
    double *sum;    /* [n] sum_i attr */
    double *delta;  /* [n] sum - (F(x) - F(x')) */
};

/* Rejects NaN or Inf in inputs and baselines, naming the input and feature. */
CBC_API enum cbc_status cbc_ig_validate_request(const struct cbc_ig_request *r, size_t features,
                                                struct cbc_err *err);

/* ---- CPU: the reference ------------------------------------------------ */

/* IG of an MLP. Analytic gradients by backpropagation in double, or FD;
 * CBC_IG_PER_FEATURE is not a CPU mode. */
CBC_API enum cbc_status cbc_ig_cpu_mlp(const struct cbc_mlp *m, const struct cbc_ig_request *r,
                                       struct cbc_ig_output *out, struct cbc_err *err);

/* IG of a network on the CPU: per input and quadrature point a forward
 * pass and backpropagation through every node in double (or central
 * differences with CBC_IG_FD); a target per input (r->targets) taken.
 * Since 0.4. */
CBC_API enum cbc_status cbc_ig_cpu_net(const struct cbc_net *net, const struct cbc_ig_request *r,
                                       struct cbc_ig_output *out, struct cbc_err *err);

/* A black-box function of F features, evaluated on `rows` points at once:
 * out[r] = F(in[r][0..F)). Return CBC_OK, or an error (which aborts). */
typedef enum cbc_status (*cbc_ig_host_fn)(void *ctx, const double *in, size_t rows, size_t F,
                                          double *out, struct cbc_err *err);
/* Its gradient at one point, or NULL to use central differences. */
typedef enum cbc_status (*cbc_ig_host_grad)(void *ctx, const double *x, size_t F, double *grad,
                                            struct cbc_err *err);

CBC_API enum cbc_status cbc_ig_cpu_fn(cbc_ig_host_fn f, cbc_ig_host_grad grad, void *ctx, size_t F,
                                      const struct cbc_ig_request *r, struct cbc_ig_output *out,
                                      struct cbc_err *err);

/* ---- explanations: targets per input, NoiseTunnel, several baselines ------ */

enum cbc_ig_noise {
    CBC_IG_NOISE_NONE = 0,
    CBC_IG_SMOOTHGRAD = 1,    /* the mean of the attributions of the noisy copies */
    CBC_IG_SMOOTHGRAD_SQ = 2, /* the mean of their squares */
    CBC_IG_VARGRAD = 3        /* their variance */
};
/* "smoothgrad", "smoothgrad_sq", "vargrad" (Captum's nt_type), "none". Since 0.2. */
CBC_API bool cbc_ig_noise_parse(const char *name, enum cbc_ig_noise *out);
CBC_API const char *cbc_ig_noise_name(enum cbc_ig_noise n);

/* What to explain beyond a request: zero-initialised, it adds nothing. */
struct cbc_ig_plan {
    const int *targets;  /* [n][n_targets]: the outputs explained for each input;
                            NULL: the request's target for every input */
    size_t n_targets;    /* targets per input (0 counts as 1) */
    enum cbc_ig_noise noise;
    int samples;         /* noisy copies of each input (Captum's nt_samples) */
    double stdev;        /* of the Gaussian noise added to every feature (Captum's stdevs) */
    bool stdev_relative; /* the noise's stdev is stdev times (max - min) of each input */
    uint64_t seed;       /* the noise generator's seed: a run is reproducible, and input b's
                            noise depends on the seed and b only */
    const float *baselines; /* [n_baselines][F]: IG of each input averaged over every one of
                               them (expected gradients; Captum's multiple baselines); NULL:
                               the request's baseline */
    size_t n_baselines;
};

/* An IG engine: cbc_ig_engine_cpu (ctx: const struct cbc_mlp *) or
 * cbc_ig_engine_gpu (ctx: struct cbc_ig_gpu_model *); for networks below. */
typedef enum cbc_status (*cbc_ig_engine_fn)(void *ctx, const struct cbc_ig_request *r,
                                            struct cbc_ig_output *out, struct cbc_err *err);
CBC_API enum cbc_status cbc_ig_engine_cpu(void *mlp, const struct cbc_ig_request *r,
                                          struct cbc_ig_output *out, struct cbc_err *err);
CBC_API enum cbc_status cbc_ig_engine_gpu(void *model, const struct cbc_ig_request *r,
                                          struct cbc_ig_output *out, struct cbc_err *err);
/* The same for networks (since 0.4): cbc_ig_engine_cpu_net (ctx: const
 * struct cbc_net *) and cbc_ig_engine_gpu_net (ctx: struct cbc_ig_gpu_net *). */
CBC_API enum cbc_status cbc_ig_engine_cpu_net(void *net, const struct cbc_ig_request *r,
                                              struct cbc_ig_output *out, struct cbc_err *err);
CBC_API enum cbc_status cbc_ig_engine_gpu_net(void *net, const struct cbc_ig_request *r,
                                              struct cbc_ig_output *out, struct cbc_err *err);

/* IG of a request under a plan. Each input is expanded into its noisy
 * copies times its baselines; with the built-in engines (cbc_ig_engine_cpu,
 * cbc_ig_engine_gpu) every row goes to one engine call with its own target
 * (cbc_ig_request.targets: on the GPU, every target, noisy copy and baseline
 * is one batch, chunked by the engine to its memory budget); another engine
 * gets one call per distinct target, the rows grouped by target (since
 * 0.2). Then the rows are reduced: the mean over
 * baselines, then the noise's statistic over samples. out has T =
 * max(n_targets, 1) rows per input, input-major: attr [n][T][F]; f_x,
 * f_base, sum, delta [n][T] are means over samples and baselines (sum is
 * that of the reduced attributions for smoothgrad_sq and vargrad);
 * base_delta (may be NULL) [n][T][n_baselines] gets each baseline's delta,
 * averaged over samples. Host arrays only. Targets must be outputs of the
 * model (cbc_ig_check_targets). Since 0.2. */
CBC_API enum cbc_status cbc_ig_explain(cbc_ig_engine_fn run, void *ctx, size_t F,
                                       const struct cbc_ig_request *r,
                                       const struct cbc_ig_plan *p, struct cbc_ig_output *out,
                                       double *base_delta, struct cbc_err *err);
/* CBC_E_USAGE naming the first of targets[0..n) that is not in [0, outputs). */
CBC_API enum cbc_status cbc_ig_check_targets(const int *targets, size_t n, int outputs,
                                             struct cbc_err *err);
/* The model's outputs for n inputs, in double: out [n][outputs] (for
 * explaining each input's predicted class). Since 0.2. */
CBC_API enum cbc_status cbc_mlp_forward(const struct cbc_mlp *m, const float *x, size_t n,
                                        double *out, struct cbc_err *err);

/* ---- GPU ------------------------------------------------------------------ */

struct cbc_ig_gpu;       /* the engine: loaded kernels, a stream, scratch */
struct cbc_ig_gpu_model; /* an MLP's weights on the device */

/* Loads the IG kernels on GPU `device` from `bundle`, or, when bundle is
 * NULL, from the ig_kernels bundle built into this library for its
 * configured targets (CUBINCACHE_BUNDLE_PATH overrides it). Errors are the
 * loader's:
 * CBC_E_NO_DRIVER, CBC_E_NO_DEVICE, CBC_E_NO_IMAGE with its explanation. */
CBC_API enum cbc_status cbc_ig_gpu_open(int device, struct cbc_bundle *bundle, const struct cbc_load_opts *o,
                                        struct cbc_ig_gpu **out, struct cbc_err *err);
CBC_API void cbc_ig_gpu_close(struct cbc_ig_gpu *g);
/* "GPU 0 NVIDIA H200 (compute capability 9.0), kernels sm_90" */
CBC_API const char *cbc_ig_gpu_describe(const struct cbc_ig_gpu *g);

CBC_API enum cbc_status cbc_ig_gpu_upload(struct cbc_ig_gpu *g, const struct cbc_mlp *m,
                                          struct cbc_ig_gpu_model **out, struct cbc_err *err);
CBC_API void cbc_ig_gpu_model_free(struct cbc_ig_gpu_model *m);

/* IG of an uploaded MLP; r->gradient selects analytic, batched FD or the
 * per-feature loop (both FD modes use the model's forward as the black box).
 * A model with a LayerNorm, a Softmax or LogSoftmax output, an activation
 * parameter other than PyTorch's default, a constant scale or shift of a
 * layer's output or a residual runs on a layered path (a GEMM per layer,
 * then its LayerNorm, activation, scale and residual over whole rows); the
 * others on fused kernels. Both hold the CPU reference's results to float
 * rounding, and both take a target per input (r->targets, analytic mode
 * only) in the same call. A residual of the model's input is refused at
 * upload (CBC_E_UNSUPPORTED: the CPU reference runs it).
 * Small analytic requests (inputs up to 256 KiB on the host, or device
 * pointers; a zero or scalar baseline) are recorded as a CUDA graph the
 * second time the same shape comes and replayed from then on, which takes
 * one input from a dozen launches to one; CUBINCACHE_IG_NO_GRAPHS set when
 * the engine opens turns this off. Calls on one engine must not overlap
 * (one stream, one workspace). */
CBC_API enum cbc_status cbc_ig_gpu_mlp(struct cbc_ig_gpu_model *m, const struct cbc_ig_request *r,
                                       struct cbc_ig_output *out, struct cbc_err *err);

struct cbc_ig_gpu_net; /* a network's parameters on the device */

/* A network on the device: its weights, and the plan of its per-row
 * buffers (a buffer is reused once nothing later reads it). The first
 * network uploaded loads the network kernels (their own bundle,
 * ig_net_kernels, embedded as ig_kernels is). Since 0.4. */
CBC_API enum cbc_status cbc_ig_gpu_upload_net(struct cbc_ig_gpu *g, const struct cbc_net *net,
                                              struct cbc_ig_gpu_net **out, struct cbc_err *err);
CBC_API void cbc_ig_gpu_net_free(struct cbc_ig_gpu_net *m);
/* IG of an uploaded network: rows (input, step) of as many inputs as the
 * memory budget holds go forward and backward through every node at once,
 * one kernel per node; a target per input (r->targets) in the same call;
 * CBC_IG_FD uses the forward as a black box. Convolutions and pools are
 * the project's own kernels (implicit GEMM; depthwise ones direct); at
 * CBC_IG_PRECISION_FP32, the default, their sums are accumulated in double
 * (products of float32 are exact there), at FAST in float. The CPU
 * reference (cbc_ig_cpu_net) is the oracle of tests/gpu. Since 0.4. */
CBC_API enum cbc_status cbc_ig_gpu_net(struct cbc_ig_gpu_net *m, const struct cbc_ig_request *r,
                                       struct cbc_ig_output *out, struct cbc_err *err);
/* Device bytes one row (input, quadrature point) takes; a call of n inputs
 * and S steps uses about n (S + 2) times this, chunked to the budget. */
CBC_API size_t cbc_ig_gpu_net_row_bytes(const struct cbc_ig_gpu_net *m);

/* A black-box forward on the device: out[r] = F(in[r][0..F)) for `rows`
 * rows of device memory (addresses as CUdeviceptr values), queued on
 * `stream` (a CUstream). */
typedef enum cbc_status (*cbc_ig_device_fn)(void *ctx, uint64_t in, uint64_t out, size_t rows,
                                            size_t F, void *stream, struct cbc_err *err);

/* IG of a black box by central differences: every perturbation of a chunk
 * of steps goes to `f` in one call (r->gradient CBC_IG_FD), or one feature
 * at a time (CBC_IG_PER_FEATURE). */
CBC_API enum cbc_status cbc_ig_gpu_fn(struct cbc_ig_gpu *g, cbc_ig_device_fn f, void *ctx, size_t F,
                                      const struct cbc_ig_request *r, struct cbc_ig_output *out,
                                      struct cbc_err *err);

enum cbc_ig_precision {
    CBC_IG_PRECISION_FAST = 0, /* 3xTF32 tensor cores: faster, less accurate (opt-in, as
                                  PyTorch's allow_tf32) */
    CBC_IG_PRECISION_FP32 = 1  /* FP32 FMA GEMMs, as PyTorch float32 with TF32 off: the
                                  default of an engine since 0.3 */
};
/* "fast", "fp32". Since 0.2. */
CBC_API bool cbc_ig_precision_parse(const char *name, enum cbc_ig_precision *out);
/* How the engine computes from now on (recorded CUDA graphs are dropped);
 * an engine opens in CBC_IG_PRECISION_FP32 (since 0.3; FAST before).
 * README's igrun section has the accuracy and speed of each. Since 0.2. */
CBC_API void cbc_ig_gpu_set_precision(struct cbc_ig_gpu *g, enum cbc_ig_precision p);

/* The uploaded MLP's output `target` as a cbc_ig_device_fn (ctx is the
 * model; the target is taken from cbc_ig_gpu_model_set_target). */
CBC_API enum cbc_status cbc_ig_gpu_mlp_forward(void *model, uint64_t in, uint64_t out, size_t rows,
                                               size_t F, void *stream, struct cbc_err *err);
CBC_API void cbc_ig_gpu_model_set_target(struct cbc_ig_gpu_model *m, int target);

#ifdef __cplusplus
}
#endif
#endif
