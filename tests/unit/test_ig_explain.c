/* test_ig_explain.c: what a Captum user asks beyond one target, against
 * closed forms on the CPU reference: per-input and several targets of a
 * linear model with 3 outputs; SmoothGrad, its square and VarGrad of a
 * linear model (the noise's mean and variance); several baselines averaged;
 * and the models people save: BatchNorm1d folded equal to the unfolded
 * network (before and after the activation), named layers in storage order
 * or --layers, PyTorch's activation spellings, a torch.save file refused
 * with the fix. The GPU engine is compared with these in tests/gpu. */
#include <cubincache/ig.h>

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A linear model F(x) = W x + b, 3 outputs of 4 features. */
static const float W3[3][4] = {{1, -2, 0.5f, 3}, {-1, 0.25f, 2, 0}, {0.5f, 0.5f, -1.5f, 1}};
static const float B3[3] = {0.1f, -0.2f, 0.3f};

static struct cbc_mlp linear3(struct cbc_mlp_layer *L)
{
    *L =
        (struct cbc_mlp_layer){.in = 4, .out = 3, .w = &W3[0][0], .b = B3, .act = CBC_ACT_IDENTITY};
    return (struct cbc_mlp){1, L};
}

static const float X4[3][4] = {{1, 2, 3, 4}, {-1, 0.5f, 2, -3}, {0.2f, -0.4f, 0.6f, 1}};

Test(explain, per_input_and_several_targets_of_a_linear_model_are_w_times_x_minus_baseline)
{
    struct cbc_mlp_layer L;
    struct cbc_mlp m = linear3(&L);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = &X4[0][0];
    r.n = 3;
    r.steps = 8;
    int t1[3] = {2, 0, 1}; /* one per input */
    int t2[6] = {0, 2, 1, 1, 2, 0}; /* two per input */
    for (int pass = 0; pass < 2; pass++) {
        size_t T = pass ? 2 : 1;
        const int *tg = pass ? t2 : t1;
        struct cbc_ig_plan p = {.targets = tg, .n_targets = T};
        float attr[3 * 2 * 4];
        double v[4 * 6];
        struct cbc_ig_output o = {attr, v, v + 3 * T, v + 6 * T, v + 9 * T};
        struct cbc_err e = {0};
        cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e), CBC_OK,
                     "%s", e.msg);
        for (size_t b = 0; b < 3; b++)
            for (size_t j = 0; j < T; j++) {
                int t = tg[b * T + j];
                double fx = B3[t];
                for (int i = 0; i < 4; i++) {
                    cr_assert_float_eq(attr[(b * T + j) * 4 + i], W3[t][i] * X4[b][i], 1e-6,
                                       "input %zu target %d feature %d", b, t, i);
                    fx += W3[t][i] * X4[b][i];
                }
                cr_assert_float_eq(o.f_x[b * T + j], fx, 1e-5);
                cr_assert_float_eq(o.f_base[b * T + j], B3[t], 1e-6);
                cr_assert(fabs(o.delta[b * T + j]) < 1e-5);
            }
    }
    int bad[3] = {0, 3, 1};
    struct cbc_err e = {0};
    cr_assert_eq(cbc_ig_check_targets(bad, 3, 3, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "target 3 (entry 1)") && strstr(e.msg, "outputs 0 to 2"), "%s", e.msg);
}

Test(explain, smoothgrad_of_a_linear_model_is_ig_at_the_mean_input_and_vargrad_the_noise_variance)
{
    struct cbc_mlp_layer L;
    struct cbc_mlp m = linear3(&L);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = &X4[0][0];
    r.n = 1;
    r.steps = 4;
    r.target = 0;
    float plain[4], sg[4], sq[4], vg[4];
    double v[4];
    struct cbc_err e = {0};
    struct cbc_ig_output o = {plain, v, v + 1, v + 2, v + 3};
    struct cbc_ig_plan none = {0};
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &none, &o, NULL, &e), CBC_OK);
    /* no noise at all: SmoothGrad is IG exactly */
    struct cbc_ig_plan p0 = {.noise = CBC_IG_SMOOTHGRAD, .samples = 7, .stdev = 0};
    o.attr = sg;
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p0, &o, NULL, &e), CBC_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(sg[i], plain[i], 1e-7);
    /* N samples of sigma: the mean is within 5 sigma / sqrt(N) of IG, the
     * variance (VarGrad) within 10% of w^2 sigma^2, and SmoothGrad squared is
     * mean^2 + variance */
    const int N = 4000;
    const double sigma = 0.3;
    struct cbc_ig_plan p = {.noise = CBC_IG_SMOOTHGRAD, .samples = N, .stdev = sigma, .seed = 7};
    o.attr = sg;
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e), CBC_OK);
    p.noise = CBC_IG_SMOOTHGRAD_SQ;
    o.attr = sq;
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e), CBC_OK);
    p.noise = CBC_IG_VARGRAD;
    o.attr = vg;
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e), CBC_OK);
    for (int i = 0; i < 4; i++) {
        double w = W3[0][i];
        cr_assert(fabs(sg[i] - plain[i]) <= 5 * fabs(w) * sigma / sqrt(N) + 1e-7,
                  "feature %d: smoothgrad %g, ig %g", i, sg[i], plain[i]);
        cr_assert(fabs(vg[i] - w * w * sigma * sigma) <= 0.1 * w * w * sigma * sigma + 1e-9,
                  "feature %d: vargrad %g, expected %g", i, vg[i], w * w * sigma * sigma);
        cr_assert_float_eq(sq[i], (double)sg[i] * sg[i] + vg[i], 1e-4 * (fabs(sq[i]) + 1e-6));
    }
    /* the seed makes a run reproducible, and another seed gives other noise */
    float again[4], other[4];
    p.noise = CBC_IG_SMOOTHGRAD;
    p.samples = 3;
    o.attr = again;
    cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e);
    float first[4];
    o.attr = first;
    cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e);
    p.seed = 8;
    o.attr = other;
    cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e);
    cr_assert_arr_eq(again, first, sizeof first);
    cr_assert(memcmp(again, other, sizeof other) != 0);
    /* relative stdev: sigma times each input's range (max - min = 3 here) */
    p = (struct cbc_ig_plan){.noise = CBC_IG_VARGRAD, .samples = N, .stdev = 0.1,
                             .stdev_relative = true, .seed = 3};
    o.attr = vg;
    cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, NULL, &e);
    double s2 = 0.3 * 0.3; /* 0.1 x (4 - 1) */
    cr_assert(fabs(vg[3] - 9 * s2) <= 0.1 * 9 * s2, "relative stdev: vargrad %g", vg[3]);
}

Test(explain, several_baselines_average_to_ig_from_their_mean_with_each_delta)
{
    struct cbc_mlp_layer L;
    struct cbc_mlp m = linear3(&L);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = &X4[0][0];
    r.n = 2;
    r.steps = 4;
    r.target = 1;
    static const float bases[3][4] = {{0, 0, 0, 0}, {1, 1, 1, 1}, {-2, 0.5f, 0, 1}};
    struct cbc_ig_plan p = {.baselines = &bases[0][0], .n_baselines = 3};
    float attr[2 * 4];
    double v[8], bd[2 * 3];
    struct cbc_ig_output o = {attr, v, v + 2, v + 4, v + 6};
    struct cbc_err e = {0};
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o, bd, &e), CBC_OK, "%s",
                 e.msg);
    for (int b = 0; b < 2; b++) {
        double fb = 0;
        for (int k = 0; k < 3; k++) {
            double f = B3[1];
            for (int i = 0; i < 4; i++)
                f += W3[1][i] * bases[k][i];
            fb += f / 3;
            cr_assert(fabs(bd[b * 3 + k]) < 1e-5, "input %d baseline %d delta %g", b, k,
                      bd[b * 3 + k]);
        }
        cr_assert_float_eq(o.f_base[b], fb, 1e-5);
        for (int i = 0; i < 4; i++) {
            double mean_b = (bases[0][i] + bases[1][i] + bases[2][i]) / 3;
            cr_assert_float_eq(attr[b * 4 + i], W3[1][i] * (X4[b][i] - mean_b), 1e-5);
        }
    }
}

/* ---- the models people save -------------------------------------------- */

struct st_tensor {
    const char *name;
    int ndim;
    int shape[2];
    const float *data;
};

/* Writes a safetensors file of F32 tensors in the order given. */
static void st_write(const char *path, const struct st_tensor *t, size_t n, const char *meta)
{
    char hdr[8192];
    size_t o = 0, off = 0;
    o += (size_t)snprintf(hdr + o, sizeof hdr - o, "{");
    for (size_t i = 0; i < n; i++) {
        size_t count = (size_t)t[i].shape[0] * (t[i].ndim == 2 ? (size_t)t[i].shape[1] : 1);
        if (t[i].ndim == 2)
            o += (size_t)snprintf(hdr + o, sizeof hdr - o,
                                  "\"%s\":{\"dtype\":\"F32\",\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]},",
                                  t[i].name, t[i].shape[0], t[i].shape[1], off, off + 4 * count);
        else
            o += (size_t)snprintf(hdr + o, sizeof hdr - o,
                                  "\"%s\":{\"dtype\":\"F32\",\"shape\":[%d],\"data_offsets\":[%zu,%zu]},",
                                  t[i].name, t[i].shape[0], off, off + 4 * count);
        off += 4 * count;
    }
    o += (size_t)snprintf(hdr + o, sizeof hdr - o, "\"__metadata__\":{%s}}", meta);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    uint64_t hl = o;
    fwrite(&hl, 8, 1, f);
    fwrite(hdr, 1, o, f);
    for (size_t i = 0; i < n; i++)
        fwrite(t[i].data, 4,
               (size_t)t[i].shape[0] * (t[i].ndim == 2 ? (size_t)t[i].shape[1] : 1), f);
    fclose(f);
}

static const float W1[3][2] = {{1, -1}, {0.5f, 2}, {-1.5f, 0.25f}}, B1[3] = {0.1f, 0, -0.3f};
static const float G[3] = {1.5f, 0.5f, -1}, BE[3] = {0.2f, -0.1f, 0}, MU[3] = {0.3f, -0.5f, 1},
                   VAR[3] = {2, 0.25f, 1};
static const float W2[1][3] = {{1, -2, 0.5f}}, B2[1] = {0.05f};

/* The unfolded network: Linear(2,3), [BN, tanh] or [tanh, BN], Linear(3,1). */
static double unfolded(const float x[2], bool bn_first)
{
    double y = B2[0];
    for (int j = 0; j < 3; j++) {
        double z = B1[j] + W1[j][0] * x[0] + W1[j][1] * x[1];
        double a = bn_first ? tanh(G[j] * (z - MU[j]) / sqrt(VAR[j] + 1e-5) + BE[j])
                            : G[j] * (tanh(z) - MU[j]) / sqrt(VAR[j] + 1e-5) + BE[j];
        y += W2[0][j] * a;
    }
    return y;
}

static void check_folded(const char *path, const char *layers, bool bn_first)
{
    struct cbc_mlp_owned *m = NULL;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_mlp_load_safetensors_layers(path, NULL, layers, &m, &e), CBC_OK, "%s",
                 e.msg);
    cr_assert_eq(m->mlp.n_layers, 2);
    static const float xs[4][2] = {{0, 0}, {1, 2}, {-0.7f, 0.4f}, {3, -1}};
    double y[4];
    cr_assert_eq(cbc_mlp_forward(&m->mlp, &xs[0][0], 4, y, &e), CBC_OK);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(y[i], unfolded(xs[i], bn_first), 1e-5, "%s input %d", path, i);
    cbc_mlp_owned_free(m);
}

Test(models, batchnorm_folded_equals_the_unfolded_network_before_and_after_the_activation)
{
    char dir[] = "/tmp/cbc-ig-models.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p1[256], p2[256], p3[256];
    snprintf(p1, sizeof p1, "%s/seq_bn_act.safetensors", dir);
    snprintf(p2, sizeof p2, "%s/seq_act_bn.safetensors", dir);
    snprintf(p3, sizeof p3, "%s/named.safetensors", dir);
    /* nn.Sequential(Linear, BatchNorm1d, Tanh, Linear): 0, 1, (2), 3 */
    struct st_tensor seq1[] = {
        {"0.weight", 2, {3, 2}, &W1[0][0]}, {"0.bias", 1, {3, 0}, B1},
        {"1.weight", 1, {3, 0}, G},         {"1.bias", 1, {3, 0}, BE},
        {"1.running_mean", 1, {3, 0}, MU},  {"1.running_var", 1, {3, 0}, VAR},
        {"3.weight", 2, {1, 3}, &W2[0][0]}, {"3.bias", 1, {1, 0}, B2},
    };
    st_write(p1, seq1, 8, "\"activations\":\"Tanh,Identity\"");
    check_folded(p1, NULL, true);
    /* nn.Sequential(Linear, Tanh, BatchNorm1d, Linear): 0, (1), 2, 3 */
    struct st_tensor seq2[8];
    memcpy(seq2, seq1, sizeof seq1);
    seq2[2].name = "2.weight", seq2[3].name = "2.bias", seq2[4].name = "2.running_mean",
    seq2[5].name = "2.running_var";
    st_write(p2, seq2, 8, "\"activations\":\"nn.Tanh,torch.nn.Identity()\"");
    check_folded(p2, NULL, false);
    /* named layers: their order is the layer_order metadata (state_dict()'s
     * keys) or --layers, never the file's (save_file sorts it by name) */
    struct st_tensor named[8];
    memcpy(named, seq1, sizeof seq1);
    const char *names[] = {"fc1.weight",       "fc1.bias",          "bn1.weight", "bn1.bias",
                           "bn1.running_mean", "bn1.running_var", "fc2.weight", "fc2.bias"};
    for (int i = 0; i < 8; i++)
        named[i].name = names[i];
    const char *order = "\"activations\":\"tanh,identity\",\"layer_order\":\"fc1.weight,"
                        "fc1.bias,bn1.weight,bn1.bias,bn1.running_mean,bn1.running_var,"
                        "bn1.num_batches_tracked,fc2.weight,fc2.bias\"";
    st_write(p3, named, 8, order);
    check_folded(p3, NULL, true);
    check_folded(p3, "fc1,bn1,fc2", true);
    /* stored fc2 first, as the sorted file would have it: the metadata still
     * says the order; without it the file is refused with both fixes */
    struct st_tensor rev[8] = {named[6], named[7], named[0], named[1],
                               named[2], named[3], named[4], named[5]};
    st_write(p3, rev, 8, order);
    check_folded(p3, NULL, true);
    st_write(p3, rev, 8, "\"activations\":\"tanh,identity\"");
    struct cbc_mlp_owned *m = NULL;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p3, NULL, NULL, &m, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "'fc2'") && strstr(e.msg, "'fc1'") && strstr(e.msg, "not numbered") &&
                  strstr(e.msg, "sorts tensors by name") && strstr(e.remedy, "layer_order") &&
                  strstr(e.remedy, "--layers") && strstr(e.remedy, "torch.onnx.export"),
              "%s / %s", e.msg, e.remedy);
    check_folded(p3, "fc1,bn1,fc2", true);
    /* metadata that names a layer the file lacks, or leaves one out, is refused */
    st_write(p3, rev, 8, "\"activations\":\"tanh,identity\",\"layer_order\":\"fc1,fc9,fc2\"");
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p3, NULL, NULL, &m, &e), CBC_E_FORMAT);
    cr_assert(strstr(e.msg, "layer_order names 'fc9'"), "%s", e.msg);
    st_write(p3, rev, 8, "\"activations\":\"tanh,identity\",\"layer_order\":\"fc1,fc2\"");
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p3, NULL, NULL, &m, &e), CBC_E_FORMAT);
    cr_assert(strstr(e.msg, "layer_order does not name 'bn1'"), "%s", e.msg);
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p3, NULL, "fc1,fc2", &m, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "does not name 'bn1'"), "%s", e.msg);
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p3, NULL, "fc1,bn9,fc2", &m, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "'bn9' is not a layer"), "%s", e.msg);
    /* a BatchNorm of the wrong width names itself and the Linear */
    static const float V2[2] = {1, 1};
    struct st_tensor wide[8];
    memcpy(wide, seq1, sizeof seq1);
    wide[4] = (struct st_tensor){"1.running_mean", 1, {2, 0}, V2};
    st_write(p1, wide, 8, "\"activations\":\"tanh,identity\"");
    memset(&e, 0, sizeof e);
    cr_assert_neq(cbc_mlp_load_safetensors_layers(p1, NULL, NULL, &m, &e), CBC_OK);
    cr_assert(strstr(e.msg, "1.running_mean"), "%s", e.msg);
    unlink(p1), unlink(p2), unlink(p3);
    rmdir(dir);
}

Test(models, torch_save_files_are_refused_with_the_python_that_writes_safetensors)
{
    char path[] = "/tmp/cbc-ig-pt.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    static const char zip[] = "PK\x03\x04 a torch.save zip", pickle[] = "\x80\x02}q\x00.";
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(ftruncate(fd, 0), 0);
        cr_assert_eq(pwrite(fd, k ? pickle : zip, k ? sizeof pickle : sizeof zip, 0),
                     (ssize_t)(k ? sizeof pickle : sizeof zip));
        struct cbc_mlp_owned *m = NULL;
        struct cbc_err e = {0};
        cr_assert_eq(cbc_mlp_load_safetensors(path, "identity", &m, &e), CBC_E_FORMAT);
        cr_assert(strstr(e.msg, k ? "pickle" : "torch.save") && strstr(e.msg, "not safetensors"),
                  "%s", e.msg);
        cr_assert(strstr(e.remedy, "from safetensors.torch import save_file"), "%s", e.remedy);
    }
    close(fd);
    unlink(path);
}

Test(models, activations_in_pytorchs_spellings)
{
    static const struct {
        const char *s;
        enum cbc_act a;
    } ok[] = {{"relu", CBC_ACT_RELU},          {"ReLU", CBC_ACT_RELU},
              {"nn.ReLU", CBC_ACT_RELU},       {"torch.nn.Tanh()", CBC_ACT_TANH},
              {"Sigmoid", CBC_ACT_SIGMOID},    {"GELU", CBC_ACT_GELU},
              {"Identity", CBC_ACT_IDENTITY},  {"linear", CBC_ACT_IDENTITY}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        enum cbc_act a = CBC_ACT_IDENTITY;
        cr_assert(cbc_act_parse(ok[i].s, &a), "%s", ok[i].s);
        cr_assert_eq(a, ok[i].a, "%s", ok[i].s);
    }
    enum cbc_act a;
    cr_assert(!cbc_act_parse("ReLU6", &a));
    cr_assert(!cbc_act_parse("nn.", &a));
    cr_assert(!cbc_act_parse("", &a));
}

Test(models, silu_softplus_elu_leakyrelu_values_and_gradients)
{
    struct {
        enum cbc_act a;
        double z, f;
    } v[] = {
        {CBC_ACT_SILU, 1.0, 1.0 / (1.0 + exp(-1.0))},  {CBC_ACT_SILU, -2.0, -2.0 / (1.0 + exp(2.0))},
        {CBC_ACT_SOFTPLUS, 0.0, log(2.0)},              {CBC_ACT_SOFTPLUS, 30.0, 30.0},
        {CBC_ACT_ELU, -1.0, exp(-1.0) - 1},             {CBC_ACT_ELU, 2.5, 2.5},
        {CBC_ACT_LEAKY_RELU, -2.0, -0.02},              {CBC_ACT_LEAKY_RELU, 3.0, 3.0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        /* one-unit, one-layer models: F(x) = act(x) */
        const float w = 1;
        struct cbc_mlp_layer L = {.in = 1, .out = 1, .w = &w, .act = v[i].a};
        struct cbc_mlp m = {1, &L};
        float x = (float)v[i].z;
        double y;
        cr_assert_eq(cbc_mlp_forward(&m, &x, 1, &y, NULL), CBC_OK);
        cr_assert_float_eq(y, v[i].f, 1e-6, "%s(%g) = %g", cbc_act_name(v[i].a), v[i].z, y);
    }
    /* a 3-layer model per activation: backpropagation agrees with central
     * differences, and IG is complete */
    static const enum cbc_act acts[] = {CBC_ACT_SILU, CBC_ACT_SOFTPLUS, CBC_ACT_ELU,
                                        CBC_ACT_LEAKY_RELU};
    float w1[6 * 5], b1[6], w2[4 * 6], b2[4], w3[4], x[3 * 5];
    uint32_t st = 99;
    float *all[] = {w1, b1, w2, b2, w3, x};
    size_t sz[] = {30, 6, 24, 4, 4, 15};
    for (size_t k = 0; k < 6; k++)
        for (size_t i = 0; i < sz[k]; i++) {
            st = st * 1664525u + 1013904223u;
            all[k][i] = ((float)(st >> 8) / 16777216.0f - 0.5f) * 2.0f;
        }
    for (size_t a = 0; a < 4; a++) {
        struct cbc_mlp_layer L[3] = {
            {.in = 5, .out = 6, .w = w1, .b = b1, .act = acts[a]},
            {.in = 6, .out = 4, .w = w2, .b = b2, .act = acts[a]},
            {.in = 4, .out = 1, .w = w3, .b = NULL, .act = CBC_ACT_IDENTITY}};
        struct cbc_mlp m = {3, L};
        struct cbc_ig_request r;
        cbc_ig_request_defaults(&r);
        r.x = x, r.n = 3, r.steps = 64;
        float an[15], fd[15];
        double v1[12], v2[12];
        struct cbc_ig_output o1 = {an, v1, v1 + 3, v1 + 6, v1 + 9}, o2 = {fd, v2, v2 + 3, v2 + 6, v2 + 9};
        struct cbc_err e = {0};
        cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &o1, &e), CBC_OK, "%s", e.msg);
        r.gradient = CBC_IG_FD;
        cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &o2, &e), CBC_OK, "%s", e.msg);
        /* central differences across LeakyReLU's kink are off by design */
        for (int i = 0; acts[a] != CBC_ACT_LEAKY_RELU && i < 15; i++)
            cr_assert(fabs(an[i] - fd[i]) <= 1e-4 * (fabs(an[i]) + 1e-3), "%s feature %d: %g vs %g",
                      cbc_act_name(acts[a]), i, an[i], fd[i]);
        for (int b = 0; b < 3; b++)
            cr_assert(fabs(o1.delta[b]) < (acts[a] == CBC_ACT_LEAKY_RELU ? 1e-2 : 1e-3) *
                                              (fabs(o1.f_x[b] - o1.f_base[b]) + 1e-3),
                      "%s input %d delta %g", cbc_act_name(acts[a]), b, o1.delta[b]);
    }
    enum cbc_act got;
    cr_assert(cbc_act_parse("nn.SiLU", &got) && got == CBC_ACT_SILU);
    cr_assert(cbc_act_parse("Softplus()", &got) && got == CBC_ACT_SOFTPLUS);
    cr_assert(cbc_act_parse("LeakyReLU", &got) && got == CBC_ACT_LEAKY_RELU);
    cr_assert(cbc_act_parse("leakyrelu(0.01)", &got) && got == CBC_ACT_LEAKY_RELU);
    cr_assert(!cbc_act_parse("leakyrelu(0.2)", &got), "a slope the kernels do not take");
    cr_assert(cbc_act_parse("ELU", &got) && got == CBC_ACT_ELU);
}

/* ---- LayerNorm, softmax outputs, activation parameters ------------------ */

/* The network by hand: Linear(2,3), LayerNorm(3) before or after tanh,
 * Linear(3,1) (torch.nn.LayerNorm: biased variance, eps 1e-5). */
static double ln_by_hand(const float x[2], bool ln_first)
{
    double z[3], a[3], mu = 0, var = 0;
    for (int j = 0; j < 3; j++) {
        z[j] = B1[j] + W1[j][0] * x[0] + W1[j][1] * x[1];
        a[j] = ln_first ? z[j] : tanh(z[j]);
        mu += a[j] / 3;
    }
    for (int j = 0; j < 3; j++)
        var += (a[j] - mu) * (a[j] - mu) / 3;
    double y = B2[0];
    for (int j = 0; j < 3; j++) {
        double n = (a[j] - mu) / sqrt(var + 1e-5) * G[j] + BE[j];
        y += W2[0][j] * (ln_first ? tanh(n) : n);
    }
    return y;
}

Test(models, layernorm_before_and_after_the_activation_is_the_network_pytorch_runs)
{
    char dir[] = "/tmp/cbc-ig-ln.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[256];
    snprintf(p, sizeof p, "%s/ln.safetensors", dir);
    static const float xs[4][2] = {{0, 0}, {1, 2}, {-0.7f, 0.4f}, {3, -1}};
    /* nn.Sequential(Linear, LayerNorm, Tanh, Linear): 0, 1, (2), 3; then
     * Linear, Tanh, LayerNorm, Linear: 0, (1), 2, 3; then named fc1, ln1, fc2 */
    const char *names[3][6] = {{"0.weight", "0.bias", "1.weight", "1.bias", "3.weight", "3.bias"},
                               {"0.weight", "0.bias", "2.weight", "2.bias", "3.weight", "3.bias"},
                               {"fc1.weight", "fc1.bias", "ln1.weight", "ln1.bias", "fc2.weight",
                                "fc2.bias"}};
    for (int k = 0; k < 3; k++) {
        struct st_tensor t[6] = {
            {names[k][0], 2, {3, 2}, &W1[0][0]}, {names[k][1], 1, {3, 0}, B1},
            {names[k][2], 1, {3, 0}, G},         {names[k][3], 1, {3, 0}, BE},
            {names[k][4], 2, {1, 3}, &W2[0][0]}, {names[k][5], 1, {1, 0}, B2},
        };
        st_write(p, t, 6, k < 2 ? "\"activations\":\"Tanh,Identity\""
                                : "\"activations\":\"Tanh,Identity\",\"layer_order\":\"fc1,ln1,fc2\"");
        struct cbc_mlp_owned *m = NULL;
        struct cbc_err e = {0};
        cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_OK, "%s", e.msg);
        cr_assert_eq(m->mlp.layers[0].norm, k == 1 ? CBC_NORM_AFTER_ACT : CBC_NORM_BEFORE_ACT);
        double y[4];
        cr_assert_eq(cbc_mlp_forward(&m->mlp, &xs[0][0], 4, y, &e), CBC_OK);
        for (int i = 0; i < 4; i++)
            cr_assert_float_eq(y[i], ln_by_hand(xs[i], k != 1), 1e-6, "layout %d input %d", k, i);
        cbc_mlp_owned_free(m);
    }
    /* a LayerNorm on the inputs, and one of the wrong width, are refused by name */
    struct st_tensor first[4] = {{"0.weight", 1, {2, 0}, G}, {"0.bias", 1, {2, 0}, BE},
                                 {"1.weight", 2, {3, 2}, &W1[0][0]}, {"1.bias", 1, {3, 0}, B1}};
    st_write(p, first, 4, "\"activations\":\"identity\"");
    struct cbc_mlp_owned *m = NULL;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "LayerNorm '0' follows the input"), "%s", e.msg);
    struct st_tensor wide[6] = {
        {"0.weight", 2, {3, 2}, &W1[0][0]}, {"0.bias", 1, {3, 0}, B1},
        {"1.weight", 1, {2, 0}, G},         {"1.bias", 1, {2, 0}, BE},
        {"3.weight", 2, {1, 3}, &W2[0][0]}, {"3.bias", 1, {1, 0}, B2},
    };
    st_write(p, wide, 6, "\"activations\":\"tanh,identity\"");
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_E_SHAPE);
    cr_assert(strstr(e.msg, "'1.weight'") && strstr(e.msg, "'0.weight'"), "%s", e.msg);
    /* a LayerNorm and a BatchNorm next to each other: neither order is taken */
    struct st_tensor mixed[8] = {
        {"0.weight", 2, {3, 2}, &W1[0][0]}, {"0.bias", 1, {3, 0}, B1},
        {"1.weight", 1, {3, 0}, G},         {"1.bias", 1, {3, 0}, BE},
        {"2.running_mean", 1, {3, 0}, MU},  {"2.running_var", 1, {3, 0}, VAR},
        {"3.weight", 2, {1, 3}, &W2[0][0]}, {"3.bias", 1, {1, 0}, B2},
    };
    st_write(p, mixed, 8, "\"activations\":\"tanh,identity\"");
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "BatchNorm '2' right after LayerNorm '1'"), "%s", e.msg);
    mixed[2].name = "2.weight", mixed[3].name = "2.bias";
    mixed[4].name = "1.running_mean", mixed[5].name = "1.running_var";
    st_write(p, mixed, 8, "\"activations\":\"tanh,identity\"");
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "LayerNorm '2' follows '1'"), "%s", e.msg);
    /* layernorm_eps from the metadata, checked */
    st_write(p, first, 4, "\"activations\":\"identity\",\"layernorm_eps\":\"-1\"");
    memset(&e, 0, sizeof e);
    cr_assert_eq(cbc_mlp_load_safetensors_layers(p, NULL, NULL, &m, &e), CBC_E_FORMAT);
    cr_assert(strstr(e.msg, "layernorm_eps '-1'"), "%s", e.msg);
    unlink(p);
    rmdir(dir);
}

Test(models, activation_parameters_and_softmax_are_spelled_as_pytorch_does)
{
    static const struct {
        const char *name;
        enum cbc_act act;
        float param;
    } ok[] = {
        {"LeakyReLU(0.2)", CBC_ACT_LEAKY_RELU, 0.2f},
        {"nn.LeakyReLU(negative_slope=0.2, inplace=True)", CBC_ACT_LEAKY_RELU, 0.2f},
        {"leaky_relu", CBC_ACT_LEAKY_RELU, 0},
        {"ELU(alpha=0.5)", CBC_ACT_ELU, 0.5f},
        {"torch.nn.Softmax(dim=-1)", CBC_ACT_SOFTMAX, 0},
        {"softmax", CBC_ACT_SOFTMAX, 0},
        {"LogSoftmax(dim=1)", CBC_ACT_LOG_SOFTMAX, 0},
        {"log_softmax", CBC_ACT_LOG_SOFTMAX, 0},
        {"LeakyReLU(0)", CBC_ACT_RELU, 0}, /* not the default slope: 0 is ReLU */
        {"ELU(alpha=0.0)", CBC_ACT_RELU, 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        enum cbc_act a;
        float p = -1;
        cr_assert(cbc_act_parse_param(ok[i].name, &a, &p), "%s", ok[i].name);
        cr_assert(a == ok[i].act && p == ok[i].param, "%s: %d %g", ok[i].name, a, (double)p);
    }
    static const char *bad[] = {"Softmax(dim=0)", "ReLU(0.2)", "LeakyReLU(0.2, 0.3)",
                                "LeakyReLU(slope=x)", "LeakyReLU(0.2", "ELU(nan)", "Tanhh"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        enum cbc_act a;
        float p;
        cr_assert(!cbc_act_parse_param(bad[i], &a, &p), "%s", bad[i]);
    }
    /* the 0.1 API's parser takes PyTorch's defaults only */
    enum cbc_act a;
    cr_assert(cbc_act_parse("LeakyReLU(negative_slope=0.01)", &a) && a == CBC_ACT_LEAKY_RELU);
    cr_assert(!cbc_act_parse("LeakyReLU(0.2)", &a));
    /* a softmax anywhere but the last layer is refused */
    const float w[4] = {1, 0, 0, 1};
    struct cbc_mlp_layer L[2] = {{.in = 2, .out = 2, .w = w, .act = CBC_ACT_SOFTMAX},
                                 {.in = 2, .out = 2, .w = w, .act = CBC_ACT_IDENTITY}};
    struct cbc_mlp m = {2, L};
    struct cbc_err e = {0};
    cr_assert_eq(cbc_mlp_validate(&m, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "layer 0: softmax is taken on the last layer only"), "%s", e.msg);
    /* the parameter is the one the model runs with: F(-1) of one unit */
    const float one = 1, minus1 = -1;
    static const struct {
        enum cbc_act act;
        float param;
        double want;
    } f[] = {{CBC_ACT_LEAKY_RELU, 0.2f, -0.2}, {CBC_ACT_LEAKY_RELU, 0, -0.01},
             {CBC_ACT_ELU, 0.5f, 0.5 * (exp(-1.0) - 1)}, {CBC_ACT_ELU, 0, exp(-1.0) - 1}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        struct cbc_mlp_layer U = {.in = 1, .out = 1, .w = &one, .act = f[i].act,
                                  .act_param = f[i].param};
        struct cbc_mlp um = {1, &U};
        double y;
        cr_assert_eq(cbc_mlp_forward(&um, &minus1, 1, &y, &e), CBC_OK);
        cr_assert_float_eq(y, f[i].want, 1e-7, "%s(%g): %g", cbc_act_name(f[i].act),
                           (double)f[i].param, y);
    }
}

/* A random 3-layer model with every new piece in turn: its gradient (the
 * reference's backpropagation through LayerNorm and softmax) equals central
 * differences of its forward pass (IG with one midpoint step is the
 * gradient there times x - x'; more steps would put some next to a kink of
 * LeakyReLU or ELU, where differences average two slopes), and its IG over
 * 2000 steps is complete. */
Test(ig_cpu, layernorm_softmax_and_parameters_backpropagate_as_their_forward_differentiates)
{
    enum { F = 5, H = 7, O = 4, N = 3 };
    float w1[H * F], b1[H], w2[H * H], b2[H], w3[O * H], b3[O], g[H], be[H], x[N * F];
    unsigned s = 12345;
    float *all[] = {w1, b1, w2, b2, w3, b3, g, be, x};
    size_t len[] = {H * F, H, H * H, H, O * H, O, H, H, N * F};
    for (size_t k = 0; k < 9; k++)
        for (size_t i = 0; i < len[k]; i++) {
            s = s * 1103515245u + 12345u;
            all[k][i] = ((float)(s >> 8 & 0xffff) / 65536.0f - 0.5f) * (k == 8 ? 4 : 1.6f);
        }
    static const struct {
        enum cbc_norm n1, n2;
        enum cbc_act a1, out;
        float p1;
    } v[] = {
        {CBC_NORM_BEFORE_ACT, CBC_NORM_NONE, CBC_ACT_TANH, CBC_ACT_IDENTITY, 0},
        {CBC_NORM_AFTER_ACT, CBC_NORM_BEFORE_ACT, CBC_ACT_GELU, CBC_ACT_IDENTITY, 0},
        {CBC_NORM_NONE, CBC_NORM_NONE, CBC_ACT_LEAKY_RELU, CBC_ACT_SOFTMAX, 0.2f},
        {CBC_NORM_BEFORE_ACT, CBC_NORM_AFTER_ACT, CBC_ACT_ELU, CBC_ACT_LOG_SOFTMAX, 0.5f},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        struct cbc_mlp_layer L[3] = {
            {.in = F, .out = H, .w = w1, .b = b1, .act = v[k].a1, .act_param = v[k].p1,
             .norm = v[k].n1, .norm_w = g, .norm_b = be},
            {.in = H, .out = H, .w = w2, .b = b2, .act = CBC_ACT_SILU, .norm = v[k].n2,
             .norm_w = g, .norm_eps = 1e-3f},
            {.in = H, .out = O, .w = w3, .b = b3, .act = v[k].out},
        };
        struct cbc_mlp m = {3, L};
        float a_an[N * F], a_fd[N * F];
        double vals[2][4 * N];
        for (int run = 0; run < 3; run++) { /* midpoint analytic, midpoint FD, 2000 steps */
            struct cbc_ig_request r;
            cbc_ig_request_defaults(&r);
            r.x = x, r.n = N, r.target = 2;
            r.steps = run < 2 ? 1 : 2000, r.method = CBC_IG_RIEMANN_MIDDLE;
            r.gradient = run == 1 ? CBC_IG_FD : CBC_IG_ANALYTIC;
            int slot = run == 1 ? 1 : 0;
            struct cbc_ig_output o = {run == 1 ? a_fd : a_an, vals[slot], vals[slot] + N,
                                      vals[slot] + 2 * N, vals[slot] + 3 * N};
            struct cbc_err e = {0};
            cr_assert_eq(cbc_ig_cpu_mlp(&m, &r, &o, &e), CBC_OK, "%s", e.msg);
            if (run == 1)
                for (int i = 0; i < N * F; i++)
                    cr_assert_float_eq(a_an[i], a_fd[i], 1e-5 + 1e-3 * fabsf(a_fd[i]),
                                       "variant %zu attr %d: %g analytic, %g by differences", k,
                                       i, (double)a_an[i], (double)a_fd[i]);
        }
        for (int b = 0; b < N; b++) {
            cr_assert(fabs(vals[0][3 * N + b]) < 1e-4, "variant %zu input %d delta %g", k, b,
                      vals[0][3 * N + b]);
            if (v[k].out == CBC_ACT_SOFTMAX) /* a probability */
                cr_assert(vals[0][b] > 0 && vals[0][b] < 1, "F(x) %g", vals[0][b]);
        }
    }
}

/* An engine that is not built in: counts its calls and whether each had a
 * target per row, then runs the CPU reference. */
struct counting {
    const struct cbc_mlp *m;
    int calls, with_targets;
};

static enum cbc_status counting_engine(void *ctx, const struct cbc_ig_request *r,
                                       struct cbc_ig_output *out, struct cbc_err *err)
{
    struct counting *c = ctx;
    c->calls++;
    c->with_targets += r->targets != NULL;
    return cbc_ig_cpu_mlp(c->m, r, out, err);
}

Test(explain, built_in_engines_take_a_target_per_row_and_others_one_call_per_target)
{
    struct cbc_mlp_layer L;
    struct cbc_mlp m = linear3(&L);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = &X4[0][0];
    r.n = 3;
    r.steps = 8;
    int tg[6] = {2, 0, 0, 2, 1, 2}; /* two per input, three distinct */
    struct cbc_ig_plan p = {.targets = tg, .n_targets = 2, .noise = CBC_IG_SMOOTHGRAD,
                            .samples = 3, .stdev = 0.2, .seed = 4};
    float a1[24], a2[24];
    double v1[24], v2[24];
    struct cbc_ig_output o1 = {a1, v1, v1 + 6, v1 + 12, v1 + 18},
                         o2 = {a2, v2, v2 + 6, v2 + 12, v2 + 18};
    struct cbc_err e = {0};
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, 4, &r, &p, &o1, NULL, &e), CBC_OK, "%s",
                 e.msg);
    struct counting c = {&m, 0, 0};
    cr_assert_eq(cbc_ig_explain(counting_engine, &c, 4, &r, &p, &o2, NULL, &e), CBC_OK, "%s",
                 e.msg);
    cr_assert_eq(c.calls, 3, "one call per distinct target, not %d", c.calls);
    cr_assert_eq(c.with_targets, 0);
    for (int i = 0; i < 24; i++)
        cr_assert_float_eq(a1[i], a2[i], 1e-6, "attribution %d: %g vs %g", i, a1[i], a2[i]);
    for (int i = 0; i < 24; i++)
        cr_assert_float_eq(v1[i], v2[i], 1e-6, "value %d", i);
}

Test(explain, more_rows_than_one_call_takes_are_sliced_with_the_same_result)
{
    /* 4100 inputs x 16 noisy copies: 65600 rows, past the 65536 of one call */
    struct cbc_mlp_layer L;
    struct cbc_mlp m = linear3(&L);
    const size_t n = 4100, F = 4;
    float *x = malloc(n * F * sizeof *x), *a1 = malloc(n * F * sizeof *a1),
          *a2 = malloc(n * F * sizeof *a2);
    double *v1 = malloc(4 * n * sizeof *v1), *v2 = malloc(4 * n * sizeof *v2);
    int *tg = malloc(n * sizeof *tg);
    cr_assert(x && a1 && a2 && v1 && v2 && tg);
    for (size_t i = 0; i < n * F; i++)
        x[i] = X4[i % 3][i % 4] * (float)(1 + i % 5);
    for (size_t b = 0; b < n; b++)
        tg[b] = (int)(b % 3);
    struct cbc_ig_request r;
    cbc_ig_request_defaults(&r);
    r.x = x, r.n = n, r.steps = 2;
    struct cbc_ig_plan p = {.targets = tg, .noise = CBC_IG_SMOOTHGRAD, .samples = 16,
                            .stdev = 0.1, .seed = 2};
    struct cbc_ig_output o1 = {a1, v1, v1 + n, v1 + 2 * n, v1 + 3 * n},
                         o2 = {a2, v2, v2 + n, v2 + 2 * n, v2 + 3 * n};
    struct cbc_err e = {0};
    cr_assert_eq(cbc_ig_explain(cbc_ig_engine_cpu, &m, F, &r, &p, &o1, NULL, &e), CBC_OK, "%s",
                 e.msg);
    struct counting c = {&m, 0, 0};
    cr_assert_eq(cbc_ig_explain(counting_engine, &c, F, &r, &p, &o2, NULL, &e), CBC_OK, "%s",
                 e.msg);
    for (size_t i = 0; i < n * F; i++)
        cr_assert_float_eq(a1[i], a2[i], 1e-5, "attribution %zu: %g vs %g", i, a1[i], a2[i]);
    for (size_t i = 0; i < 4 * n; i++)
        cr_assert_float_eq(v1[i], v2[i], 1e-5, "value %zu", i);
    free(x), free(a1), free(a2), free(v1), free(v2), free(tg);
}
