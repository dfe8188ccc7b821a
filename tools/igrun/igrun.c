/* igrun.c: the bundled Integrated Gradients driver.
 *
 *   igrun --model FILE.onnx|FILE.safetensors --input X.npy|X.csv [--baseline B|zeros|mean|VALUE]
 *         [--steps 50] [--method gausslegendre] [--target K] [--device auto|cuda|cpu]
 *         [--gradient auto|analytic|fd] [--out FILE.json|.csv|.npy] [--plot FILE.svg]
 *         [--tolerance T] [--demo]
 *
 * Reads the model and inputs (every file fully validated by the library),
 * runs on the GPU through the loader when it can, and says plainly when it
 * falls back to the CPU and why. Prints, per input, F(x), F(baseline), the
 * sum of the attributions and the delta; exits 3 when |delta| exceeds
 * --tolerance. Exit codes are those of docs/exit-codes.md.
 */
#include "tool.h"
#include "svg.h"

#include <cubincache/ig.h>
#include <cjson/cJSON.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef IGRUN_DEMO_DIR
#define IGRUN_DEMO_DIR ""
#endif
#ifndef IGRUN_INSTALLED_DEMO_DIR
#define IGRUN_INSTALLED_DEMO_DIR ""
#endif

static const char usage[] =
    "usage: igrun --model FILE.onnx|FILE.safetensors --input X.npy|X.csv [options]\n"
    "       igrun --demo [options]\n"
    "  --model FILE         the model: ONNX (torch.onnx.export(model, x, 'm.onnx'): read\n"
    "                       from its graph; MLPs and convolutional image models), or a\n"
    "                       safetensors state_dict of an MLP (its layers inferred from\n"
    "                       the tensors; see --check-outputs)\n"
    "  --check-outputs Y.npy  the model's own outputs for the inputs ([n][outputs], e.g.\n"
    "                       np.save('y.npy', model(x).detach().numpy())): refuse to\n"
    "                       explain when the model read computes something else\n"
    "  --baseline B.npy|B.csv|zeros|mean|VALUE   default zeros; mean: each feature's\n"
    "                       mean over the inputs\n"
    "  --steps N            quadrature points (default 50)\n"
    "  --method M           gausslegendre (default), riemann_left, riemann_right,\n"
    "                       riemann_middle, riemann_trapezoid\n"
    "  --target T           the output explained: K (every input), pred (each input's\n"
    "                       largest output), K1,K2,... (each, a target axis in the\n"
    "                       outputs) or FILE.npy|.csv (one or more per input); needed\n"
    "                       when the model has more than one output\n"
    "  --baselines B.npy    [K][F]: IG averaged over the K baselines (expected gradients)\n"
    "  --noise N            NoiseTunnel: smoothgrad, smoothgrad_sq or vargrad\n"
    "  --samples N          noisy copies per input (default 5)\n"
    "  --stdev S            the noise's standard deviation (default 1.0); S% is S/100 of\n"
    "                       each input's range (max - min)\n"
    "  --seed N             the noise generator's seed (default 0)\n"
    "  --device D           auto (default: the GPU, else the CPU, saying why), cuda, cpu\n"
    "  --precision P        GPU arithmetic: fp32 (default: FP32 FMA GEMMs, as PyTorch\n"
    "                       float32) or fast (3xTF32 tensor cores, as PyTorch's TF32:\n"
    "                       faster, less accurate); README has the accuracy of each\n"
    "  --gradient G         auto (default: analytic), analytic, fd; naive is a\n"
    "                       per-feature loop, a benchmark baseline\n"
    "  --layers LIST        safetensors: the layers in forward()'s order (default: the\n"
    "                       file's layer_order metadata, or an nn.Sequential's indices)\n"
    "  --activations LIST   safetensors: one per Linear layer (default: from the file's\n"
    "                       metadata), in\n"
    "                       igrun's or PyTorch's spelling: relu, tanh, GELU, SiLU,\n"
    "                       LeakyReLU(0.2), ELU(alpha=0.5), ...; the last may be\n"
    "                       Softmax or LogSoftmax (the target's probability)\n"
    "  --out FILE           results as .json, .csv or .npy (attributions only, shaped\n"
    "                       like the input: [n, C, H, W] for images; [n, T, ...] for T\n"
    "                       targets)\n"
    "  --plot FILE.svg      attributions as SVG: a bar chart, or a heat map with --image\n"
    "  --plot-inputs LIST   the inputs plotted, one panel each (default 0), e.g. 0,5,9\n"
    "  --image [C]xHxW      the input is an H x W image of C channels (default 1; its\n"
    "                       features channel by channel, row by row); an .npy of shape\n"
    "                       [n, H, W] or [n, C, H, W] says so itself\n"
    "  --feature-names FILE one name per feature (a line each, or one line of commas;\n"
    "                       default: an input .csv's header): CSV, JSON and plots use them\n"
    "  --tolerance T        exit 3 when any |delta| exceeds T\n"
    "  --mem-budget SIZE    GPU scratch memory (default: a quarter of what is free)\n"
    "  --demo               the small model and input shipped with cubincache\n"
    "  -q / -v              only errors and the summary / more messages\n";

static char *demo_file(const char *name)
{
    const char *dirs[] = {getenv("IGRUN_DEMO_DIR"), IGRUN_INSTALLED_DEMO_DIR, IGRUN_DEMO_DIR};
    for (size_t i = 0; i < 3; i++) {
        if (!dirs[i] || !*dirs[i])
            continue;
        char *p = cbc_asprintf("%s/%s", dirs[i], name);
        if (p && cbc_is_file(p))
            return p;
        free(p);
    }
    return NULL;
}

static void xml_escape(const char *s, char *out, size_t len)
{
    size_t o = 0;
    for (; *s && o + 7 < len; s++) {
        const char *r = *s == '<' ? "&lt;" : *s == '>' ? "&gt;" : *s == '&' ? "&amp;" : NULL;
        if (r) {
            memcpy(out + o, r, strlen(r));
            o += strlen(r);
        } else {
            out[o++] = *s;
        }
    }
    out[o] = '\0';
}

struct shape {
    size_t n, T, F, K;  /* inputs, targets per input, features, baselines (0: one) */
    const int *targets; /* [n][T] */
    const double *base_delta; /* [n][T][K] or NULL */
    char **names;             /* [F] feature names, or NULL */
};

/* The model igrun explains: an MLP (safetensors, or an ONNX chain of
 * layers) or a convolutional network (an ONNX graph with a Conv or pool). */
struct igmodel {
    struct cbc_mlp_owned *mlp;
    struct cbc_net_owned *net;
    size_t F, outs;
};

static enum cbc_status igmodel_forward(const struct igmodel *m, const float *x, size_t n,
                                       double *out, struct cbc_err *err)
{
    return m->net ? cbc_net_forward(&m->net->net, x, n, out, err)
                  : cbc_mlp_forward(&m->mlp->mlp, x, n, out, err);
}

static enum cbc_status write_json(const char *path, const char *model, const struct cbc_ig_request *r,
                                  const struct cbc_ig_plan *p, const char *device,
                                  const struct cbc_ig_output *o, const struct shape *sh,
                                  struct cbc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddStringToObject(root, "method", cbc_ig_method_name(r->method));
    cJSON_AddNumberToObject(root, "steps", r->steps);
    cJSON_AddStringToObject(root, "device", device);
    cJSON_AddStringToObject(root, "noise", cbc_ig_noise_name(p->noise));
    if (p->noise != CBC_IG_NOISE_NONE) {
        cJSON_AddNumberToObject(root, "samples", p->samples);
        cJSON_AddNumberToObject(root, "stdev", p->stdev);
        cJSON_AddBoolToObject(root, "stdev_relative", p->stdev_relative);
        cJSON_AddNumberToObject(root, "seed", (double)p->seed);
    }
    cJSON_AddNumberToObject(root, "baselines", sh->K ? (double)sh->K : 1);
    if (sh->names) {
        cJSON *fn = cJSON_AddArrayToObject(root, "feature_names");
        for (size_t i = 0; i < sh->F; i++)
            cJSON_AddItemToArray(fn, cJSON_CreateString(sh->names[i]));
    }
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (size_t q = 0; q < sh->n * sh->T; q++) {
        cJSON *in = cJSON_CreateObject();
        cJSON_AddNumberToObject(in, "index", (double)(q / sh->T));
        cJSON_AddNumberToObject(in, "target", sh->targets[q]);
        cJSON_AddNumberToObject(in, "f_x", o->f_x[q]);
        cJSON_AddNumberToObject(in, "f_baseline", o->f_base[q]);
        cJSON_AddNumberToObject(in, "sum", o->sum[q]);
        cJSON_AddNumberToObject(in, "delta", o->delta[q]);
        if (sh->base_delta) {
            cJSON *bd = cJSON_AddArrayToObject(in, "baseline_deltas");
            for (size_t k = 0; k < sh->K; k++)
                cJSON_AddItemToArray(bd, cJSON_CreateNumber(sh->base_delta[q * sh->K + k]));
        }
        cJSON *a = cJSON_AddArrayToObject(in, "attributions");
        for (size_t i = 0; i < sh->F; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber(o->attr[q * sh->F + i]));
        cJSON_AddItemToArray(ins, in);
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text)
        return cbc_err_oom(err);
    enum cbc_status st = cbc_file_write_atomic(path, text, strlen(text), 0644, err);
    free(text);
    return st;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* A CSV field, quoted when it holds a comma, quote or line break. */
static void csv_field(struct cbc_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        cbc_buf_puts(b, s);
        return;
    }
    cbc_buf_puts(b, "\"");
    for (; *s; s++)
        cbc_buf_append(b, *s == '"' ? "\"\"" : s, *s == '"' ? 2 : 1);
    cbc_buf_puts(b, "\"");
}

static void free_names(char **names, size_t n)
{
    for (size_t i = 0; names && i < n; i++)
        free(names[i]);
    free(names);
}

/* Feature names: FILE (one per line, or one line of commas), else the
 * header line of an input .csv (a first line that is not all numbers);
 * NULL when there are none. Exactly F names, or an error naming the file. */
static enum cbc_status feature_names(const char *file, const char *input, size_t F, char ***out,
                                     struct cbc_err *err)
{
    *out = NULL;
    const char *src = file ? file : ends_with(input, ".csv") ? input : NULL;
    if (!src)
        return CBC_OK;
    uint8_t *data;
    size_t len;
    enum cbc_status st = cbc_file_read_max(src, 16u << 20, &data, &len, err);
    if (st != CBC_OK)
        return st;
    char *text = (char *)data;
    if (!file) { /* the input's first line, if it is a header (the reader skipped it) */
        char *nl = strchr(text, '\n');
        if (nl)
            *nl = '\0';
        bool numeric = true;
        for (const char *f = text; numeric;) {
            char *e;
            strtod(f, &e);
            while (*e == ' ' || *e == '\r')
                e++;
            numeric = e != f && (*e == ',' || *e == '\0');
            if (*e != ',')
                break;
            f = e + 1;
        }
        if (numeric) {
            free(data);
            return CBC_OK;
        }
    }
    char **names = calloc(F ? F : 1, sizeof *names);
    size_t n = 0;
    /* a file of several lines has a name per line (commas and all); one line
     * is a list separated by commas */
    const char *nl1 = strchr(text, '\n');
    bool lines = file && nl1 && nl1[1] != '\0' && strspn(nl1 + 1, "\r\n") < strlen(nl1 + 1);
    for (char *sv = NULL, *tok = strtok_r(text, lines ? "\n" : ",\n", &sv); names && tok;
         tok = strtok_r(NULL, lines ? "\n" : ",\n", &sv)) {
        size_t l = strlen(tok);
        while (l && (tok[l - 1] == '\r' || tok[l - 1] == ' '))
            tok[--l] = '\0';
        while (*tok == ' ')
            tok++;
        if (n == F) {
            n++;
            break;
        }
        if (!(names[n++] = cbc_strdup(tok))) {
            free_names(names, n);
            free(data);
            return cbc_err_oom(err);
        }
    }
    free(data);
    if (!names)
        return cbc_err_oom(err);
    if (n != F) {
        free_names(names, F);
        st = cbc_err_set(err, CBC_E_SHAPE, "'%s' names %s%zu features; the model takes %zu",
                         src, n > F ? "more than " : "", n > F ? F : n, F);
        cbc_err_hint(err, "give one name per feature, one per line or separated by commas");
        return st;
    }
    *out = names;
    return CBC_OK;
}

static enum cbc_status write_csv(const char *path, const struct cbc_ig_output *o,
                                 const struct shape *sh, struct cbc_err *err)
{
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, "input,target,f_x,f_baseline,sum,delta");
    for (size_t i = 0; i < sh->F; i++) {
        if (sh->names) {
            cbc_buf_puts(&b, ",");
            csv_field(&b, sh->names[i]);
        } else {
            cbc_buf_printf(&b, ",a%zu", i);
        }
    }
    cbc_buf_puts(&b, "\n");
    for (size_t q = 0; q < sh->n * sh->T; q++) {
        cbc_buf_printf(&b, "%zu,%d,%.9g,%.9g,%.9g,%.9g", q / sh->T, sh->targets[q], o->f_x[q],
                       o->f_base[q], o->sum[q], o->delta[q]);
        for (size_t i = 0; i < sh->F; i++)
            cbc_buf_printf(&b, ",%.9g", o->attr[q * sh->F + i]);
        cbc_buf_puts(&b, "\n");
    }
    enum cbc_status st = b.oom ? cbc_err_oom(err) : cbc_file_write_atomic(path, b.p, b.len, 0644, err);
    cbc_buf_release(&b);
    return st;
}

/* A decimal integer in [lo, hi], all of s, no overflow, no sign tricks. */
static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!*s || !(isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))))
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}


/* --target: "pred", "K", "K1,K2,..." or a file. */
struct target_spec {
    const char *arg; /* NULL: none given */
    bool pred;
    int list[64];
    size_t n_list;
    const char *file;
};

static bool parse_target(const char *s, struct target_spec *t)
{
    t->arg = s;
    if (!strcmp(s, "pred")) {
        t->pred = true;
        return true;
    }
    if (ends_with(s, ".npy") || ends_with(s, ".csv")) {
        t->file = s;
        return true;
    }
    char buf[512];
    if (strlen(s) >= sizeof buf)
        return false;
    strcpy(buf, s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long v;
        if (t->n_list == 64 || !parse_int(tok, 0, INT_MAX, &v))
            return false;
        t->list[t->n_list++] = (int)v;
    }
    return t->n_list > 0;
}

/* The targets of every input, [n][T], as the spec says. */
static enum cbc_status resolve_targets(const struct target_spec *ts, const struct igmodel *m,
                                       const struct cbc_matrix *X, int **out, size_t *T,
                                       struct cbc_err *err)
{
    int outs = (int)m->outs;
    size_t n = X->rows;
    *out = NULL;
    *T = 1;
    if (!ts->arg && outs > 1) {
        enum cbc_status st = cbc_err_set(err, CBC_E_USAGE, "the model has %d outputs: say which "
                                         "to explain with --target", outs);
        cbc_err_hint(err, "--target K (0 to %d) for every input, --target pred for each "
                          "input's largest output, --target 0,1,... for several, or "
                          "--target FILE.npy with one per input", outs - 1);
        return st;
    }
    struct cbc_matrix tf = {0};
    enum cbc_status st = CBC_OK;
    if (ts->file) {
        st = cbc_matrix_load(ts->file, &tf, err);
        if (st == CBC_OK && tf.rows == 1 && tf.cols == n) { /* 1-D: one per input */
            tf.rows = n;
            tf.cols = 1;
        }
        if (st == CBC_OK && tf.rows != n)
            st = cbc_err_set(err, CBC_E_SHAPE, "--target '%s' has %zu rows for %zu inputs",
                             ts->file, tf.rows, n);
        if (st == CBC_OK)
            *T = tf.cols;
    } else if (ts->n_list) {
        *T = ts->n_list;
    }
    size_t nt = n * *T;
    int *t = st == CBC_OK ? calloc(nt > 0 ? nt : 1, sizeof *t) : NULL;
    if (st == CBC_OK && !t)
        st = cbc_err_oom(err);
    double *y = NULL;
    if (st == CBC_OK && ts->pred) {
        size_t ny = n * (size_t)outs;
        y = malloc((ny > 0 ? ny : 1) * sizeof *y);
        st = y ? igmodel_forward(m, X->data, n, y, err) : cbc_err_oom(err);
    }
    for (size_t b = 0; st == CBC_OK && b < n; b++) {
        for (size_t j = 0; j < *T; j++) {
            size_t q = b * *T + j;
            if (ts->pred) {
                int best = 0;
                for (int o = 1; o < outs; o++)
                    if (y[b * (size_t)outs + (size_t)o] > y[b * (size_t)outs + (size_t)best])
                        best = o;
                t[q] = best;
            } else if (ts->file) {
                float v = tf.data[q];
                if (!(v >= 0 && v < (float)outs && v == floorf(v))) {
                    st = cbc_err_set(err, CBC_E_USAGE, "--target '%s', input %zu: %g is not an "
                                     "output of the model (0 to %d)", ts->file, b, (double)v,
                                     outs - 1);
                    break;
                }
                t[q] = (int)v;
            } else {
                t[q] = ts->n_list ? ts->list[j] : 0;
            }
        }
    }
    if (st == CBC_OK && !ts->file && (st = cbc_ig_check_targets(t, n * *T, outs, err)) != CBC_OK)
        cbc_err_prefix(err, "--target %s", ts->arg ? ts->arg : "0");
    free(y);
    cbc_matrix_release(&tf);
    if (st != CBC_OK) {
        free(t);
        return st;
    }
    *out = t;
    return CBC_OK;
}

/* --check-outputs: the model read must compute the outputs the model gave
 * for these inputs. */
static enum cbc_status check_outputs(const char *path, const struct igmodel *m,
                                     const struct cbc_matrix *X, int verbosity,
                                     struct cbc_err *err)
{
    struct cbc_matrix Y = {0};
    enum cbc_status st = cbc_matrix_load(path, &Y, err);
    size_t outs = m->outs;
    if (st == CBC_OK && Y.rows == 1 && Y.cols == X->rows && outs == 1) /* 1-D: one per input */
        Y.rows = X->rows, Y.cols = 1;
    if (st == CBC_OK && (Y.rows != X->rows || Y.cols != outs)) {
        st = cbc_err_set(err, CBC_E_SHAPE, "--check-outputs '%s' is %zux%zu; the model gives %zu "
                         "outputs for each of the %zu inputs", path, Y.rows, Y.cols, outs, X->rows);
        cbc_err_hint(err, "save the model's outputs for exactly these inputs: "
                          "np.save('y.npy', model(x).detach().numpy())");
    }
    double worst = 0;
    if (st == CBC_OK)
        st = m->net ? cbc_net_check_outputs(&m->net->net, X->data, X->rows, Y.data, Y.cols,
                                            &worst, err)
                    : cbc_mlp_check_outputs(&m->mlp->mlp, X->data, X->rows, Y.data, Y.cols,
                                            &worst, err);
    if (st == CBC_E_VERIFY) {
        cbc_err_prefix(err, "--check-outputs '%s'", path);
        cbc_err_hint(err, "the layers were read wrongly or forward() does more than its "
                          "parameters show: export ONNX (torch.onnx.export(model, x, "
                          "'model.onnx')); for safetensors, check --layers and --activations");
    } else if (st == CBC_OK && verbosity > 0) {
        fprintf(stderr, "igrun: the model's outputs agree with '%s' (largest relative "
                        "difference %.2g)\n", path, worst);
    }
    cbc_matrix_release(&Y);
    return st;
}

int main(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "igrun");
    enum {
        O_MODEL = 256, O_INPUT, O_BASE, O_STEPS, O_METHOD, O_TARGET, O_DEVICE, O_GRAD, O_OUT, O_PLOT,
        O_TOL, O_DEMO, O_ACTS, O_IMAGE, O_BUDGET, O_BASES, O_NOISE, O_SAMPLES, O_STDEV, O_SEED,
        O_LAYERS, O_PRECISION, O_PLOT_INPUTS, O_FNAMES, O_CHECK_OUT, O_HELP
    };
    static const struct option longopts[] = {
        {"model", required_argument, NULL, O_MODEL},   {"input", required_argument, NULL, O_INPUT},
        {"baseline", required_argument, NULL, O_BASE}, {"steps", required_argument, NULL, O_STEPS},
        {"method", required_argument, NULL, O_METHOD}, {"target", required_argument, NULL, O_TARGET},
        {"device", required_argument, NULL, O_DEVICE}, {"gradient", required_argument, NULL, O_GRAD},
        {"out", required_argument, NULL, O_OUT},       {"plot", required_argument, NULL, O_PLOT},
        {"tolerance", required_argument, NULL, O_TOL}, {"demo", no_argument, NULL, O_DEMO},
        {"activations", required_argument, NULL, O_ACTS},
        {"image", required_argument, NULL, O_IMAGE},   {"mem-budget", required_argument, NULL, O_BUDGET},
        {"baselines", required_argument, NULL, O_BASES}, {"noise", required_argument, NULL, O_NOISE},
        {"samples", required_argument, NULL, O_SAMPLES}, {"stdev", required_argument, NULL, O_STDEV},
        {"seed", required_argument, NULL, O_SEED},     {"layers", required_argument, NULL, O_LAYERS},
        {"precision", required_argument, NULL, O_PRECISION},
        {"plot-inputs", required_argument, NULL, O_PLOT_INPUTS},
        {"feature-names", required_argument, NULL, O_FNAMES},
        {"check-outputs", required_argument, NULL, O_CHECK_OUT},
        {"quiet", no_argument, NULL, 'q'},             {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, O_HELP},           {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *input = NULL, *baseline = "zeros", *device = "auto",
               *gradient = "auto", *outp = NULL, *plot = NULL, *acts = NULL, *image = NULL,
               *bases = NULL, *layers = NULL, *plot_inputs = NULL, *fnames_path = NULL,
               *check_out = NULL;
    double tol = -1;
    bool demo = false;
    struct cbc_ig_request req;
    cbc_ig_request_defaults(&req);
    struct cbc_ig_plan plan = {.samples = 5, .stdev = 1.0};
    struct target_spec ts = {0};
    enum cbc_ig_precision precision = CBC_IG_PRECISION_FP32;
    opterr = 0;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, ":qv", longopts, NULL)) != -1) {
        switch (c) {
        case O_MODEL: model = optarg; break;
        case O_INPUT: input = optarg; break;
        case O_BASE: baseline = optarg; break;
        case O_STEPS: {
            long long v;
            if (!parse_int(optarg, 1, 100000, &v))
                return tool_usage_error(&t, usage, "--steps '%s': expected 1 to 100000", optarg);
            req.steps = (int)v;
            break;
        }
        case O_METHOD:
            if (!cbc_ig_method_parse(optarg, &req.method))
                return tool_usage_error(&t, usage, "--method '%s' is unknown", optarg);
            break;
        case O_TARGET:
            memset(&ts, 0, sizeof ts);
            if (!parse_target(optarg, &ts))
                return tool_usage_error(&t, usage, "--target '%s': expected an output index, "
                                        "pred, a list such as 1,3,8, or a .npy or .csv file",
                                        optarg);
            break;
        case O_DEVICE: device = optarg; break;
        case O_GRAD: gradient = optarg; break;
        case O_OUT: outp = optarg; break;
        case O_PLOT: plot = optarg; break;
        case O_PLOT_INPUTS: plot_inputs = optarg; break;
        case O_FNAMES: fnames_path = optarg; break;
        case O_CHECK_OUT: check_out = optarg; break;
        case O_TOL:
            errno = 0;
            tol = strtod(optarg, &end);
            if (*end || end == optarg || errno || !isfinite(tol) || !(tol >= 0))
                return tool_usage_error(&t, usage, "--tolerance '%s': expected a number >= 0", optarg);
            break;
        case O_DEMO: demo = true; break;
        case O_ACTS: acts = optarg; break;
        case O_IMAGE: image = optarg; break;
        case O_BUDGET: {
            uint64_t v;
            if (!cbc_parse_size(optarg, &v))
                return tool_usage_error(&t, usage, "--mem-budget '%s': expected a size such as 2G",
                                        optarg);
            req.mem_budget = (size_t)v;
            break;
        }
        case O_BASES: bases = optarg; break;
        case O_LAYERS: layers = optarg; break;
        case O_PRECISION:
            if (!cbc_ig_precision_parse(optarg, &precision))
                return tool_usage_error(&t, usage, "--precision '%s': expected fast or fp32",
                                        optarg);
            break;
        case O_NOISE:
            if (!cbc_ig_noise_parse(optarg, &plan.noise))
                return tool_usage_error(&t, usage, "--noise '%s': expected smoothgrad, "
                                        "smoothgrad_sq or vargrad", optarg);
            break;
        case O_SAMPLES: {
            long long v;
            if (!parse_int(optarg, 1, 100000, &v))
                return tool_usage_error(&t, usage, "--samples '%s': expected 1 to 100000", optarg);
            plan.samples = (int)v;
            break;
        }
        case O_STDEV: {
            errno = 0;
            double v = strtod(optarg, &end);
            bool pct = *end == '%' && end[1] == '\0';
            if ((*end && !pct) || end == optarg || errno || !isfinite(v) || !(v >= 0))
                return tool_usage_error(&t, usage, "--stdev '%s': expected a number >= 0, or a "
                                        "percentage of each input's range such as 10%%", optarg);
            plan.stdev = pct ? v / 100 : v;
            plan.stdev_relative = pct;
            break;
        }
        case O_SEED: {
            long long v;
            if (!parse_int(optarg, 0, LLONG_MAX, &v))
                return tool_usage_error(&t, usage, "--seed '%s': expected a number >= 0", optarg);
            plan.seed = (uint64_t)v;
            break;
        }
        case 'q': t.verbosity = -1; break;
        case 'v': t.verbosity = 1; break;
        case O_HELP: fputs(usage, stdout); return EXIT_OK;
        case ':': return tool_usage_error(&t, usage, "option '%s' needs a value", argv[optind - 1]);
        default: return tool_unknown_option(&t, usage, argv);
        }
    }
    if (optind < argc)
        return tool_usage_error(&t, usage, "unexpected argument '%s'", argv[optind]);
    if (strcmp(device, "auto") && strcmp(device, "cuda") && strcmp(device, "cpu"))
        return tool_usage_error(&t, usage, "--device '%s': expected auto, cuda or cpu", device);
    if (!strcmp(gradient, "auto") || !strcmp(gradient, "analytic"))
        req.gradient = CBC_IG_ANALYTIC;
    else if (!strcmp(gradient, "fd"))
        req.gradient = CBC_IG_FD;
    else if (!strcmp(gradient, "naive"))
        req.gradient = CBC_IG_PER_FEATURE;
    else
        return tool_usage_error(&t, usage, "--gradient '%s': expected auto, analytic or fd", gradient);
    if (bases && strcmp(baseline, "zeros") != 0)
        return tool_usage_error(&t, usage, "--baseline and --baselines both given: use one");
    int ih = 0, iw = 0, ic = 1;
    if (image) { /* HxW, or CxHxW for C channels */
        int n = sscanf(image, "%dx%dx%d", &ic, &ih, &iw);
        if (n == 2)
            iw = ih, ih = ic, ic = 1;
        char tail;
        if ((n != 2 && n != 3) || ic < 1 || ic > 64 || ih < 1 || iw < 1 ||
            sscanf(image, n == 2 ? "%*dx%*d%c" : "%*dx%*dx%*d%c", &tail) == 1)
            return tool_usage_error(&t, usage, "--image '%s': expected HxW or CxHxW such as 28x28 "
                                    "or 3x32x32", image);
    }
    if (plot && !ends_with(plot, ".svg"))
        return tool_usage_error(&t, usage, "--plot '%s': igrun writes SVG only: name it .svg", plot);
    if (plot_inputs && !plot)
        return tool_usage_error(&t, usage, "--plot-inputs without --plot: add --plot FILE.svg");
    long long pin[64];
    size_t n_pin = 0;
    if (plot_inputs) {
        char buf[512];
        if (strlen(plot_inputs) >= sizeof buf)
            return tool_usage_error(&t, usage, "--plot-inputs: too long");
        strcpy(buf, plot_inputs);
        for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv))
            if (n_pin == 64 || !parse_int(tok, 0, INT_MAX, &pin[n_pin++]))
                return tool_usage_error(&t, usage, "--plot-inputs '%s': expected up to 64 input "
                                        "indices such as 0,5,9", plot_inputs);
    }

    char *dm = NULL, *di = NULL;
    if (demo) {
        dm = model ? NULL : demo_file("demo.safetensors");
        di = input ? NULL : demo_file("demo_input.npy");
        if ((!model && !dm) || (!input && !di)) {
            free(dm);
            free(di);
            tool_errorf(&t, "the demo files (demo.safetensors, demo_input.npy) are not installed");
            fprintf(stderr, "  hint: set IGRUN_DEMO_DIR to cubincache's examples/demo directory\n");
            return EXIT_ENV;
        }
        model = model ? model : dm;
        input = input ? input : di;
    }
    if (!model || !input) {
        free(dm);
        free(di);
        return tool_usage_error(&t, usage, "--model and --input are required (or --demo)");
    }

    int rc = EXIT_OK;
    struct cbc_err err = {0};
    struct igmodel M = {0};
    struct cbc_mlp_owned *m = NULL;
    struct cbc_matrix X = {0}, Bm = {0}, Bk = {0};
    struct cbc_ig_gpu *gpu = NULL;
    struct cbc_ig_gpu_model *gm = NULL;
    struct cbc_ig_gpu_net *gn = NULL;
    float *attr = NULL;
    double *vals = NULL, *bdelta = NULL;
    int *targets = NULL;
    char **names = NULL;
    size_t T = 1;
    size_t F = 0;
    bool onnx = ends_with(model, ".onnx");
    if (onnx && (acts || layers)) {
        tool_errorf(&t, "--%s with an ONNX model: the graph says what the layers are and do",
                    acts ? "activations" : "layers");
        rc = EXIT_USAGE;
        goto out;
    }
    enum cbc_status st = onnx ? cbc_onnx_load(model, &m, &M.net, &err)
                              : cbc_mlp_load_safetensors_layers(model, acts, layers, &m, &err);
    M.mlp = m;
    if (st == CBC_OK)
        st = cbc_matrix_load(input, &X, &err);
    if (st == CBC_OK) {
        M.F = M.net ? cbc_net_features(&M.net->net) : (size_t)m->mlp.layers[0].in;
        M.outs = M.net ? cbc_net_outputs(&M.net->net)
                       : (size_t)m->mlp.layers[m->mlp.n_layers - 1].out;
        F = M.F;
        if (X.cols != F)
            st = cbc_err_set(&err, CBC_E_SHAPE, "'%s' has %zu features per input but the model "
                             "'%s' takes %zu", input, X.cols, model, F);
    }
    if (st == CBC_OK && check_out)
        st = check_outputs(check_out, &M, &X, t.verbosity, &err);
    else if (st == CBC_OK && m && !m->from_graph && t.verbosity >= 0 && !demo)
        tool_warn(&t, "'%s': layers inferred from its tensors; what forward() does without "
                  "parameters (a residual add, a scaling) is not in the file: export ONNX "
                  "(torch.onnx.export(model, x, 'model.onnx')) or pass --check-outputs Y.npy "
                  "with the model's outputs for these inputs", model);
    if (st == CBC_OK)
        st = resolve_targets(&ts, &M, &X, &targets, &T, &err);
    if (st == CBC_OK)
        st = feature_names(fnames_path, input, F, &names, &err);
    if (st == CBC_OK && !bases) {
        char *e2;
        double v = strtod(baseline, &e2);
        if (!strcmp(baseline, "zeros")) {
            req.baseline.kind = CBC_IG_BASELINE_ZEROS;
        } else if (!strcmp(baseline, "mean")) { /* each feature's mean over the inputs */
            Bm.data = calloc(F, sizeof *Bm.data);
            Bm.rows = 1, Bm.cols = F;
            if (!Bm.data)
                st = cbc_err_oom(&err);
            for (size_t i = 0; st == CBC_OK && i < F; i++) {
                double acc = 0;
                for (size_t b = 0; b < X.rows; b++)
                    acc += X.data[b * F + i];
                Bm.data[i] = (float)(acc / (double)X.rows);
            }
            req.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, Bm.data};
        } else if (*e2 == '\0' && e2 != baseline) {
            req.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SCALAR, (float)v, NULL};
        } else if ((st = cbc_matrix_load(baseline, &Bm, &err)) == CBC_OK) {
            if (Bm.cols != F || (Bm.rows != 1 && Bm.rows != X.rows))
                st = cbc_err_set(&err, CBC_E_SHAPE, "baseline '%s' is %zux%zu; expected 1x%zu or "
                                 "%zux%zu (several baselines per input: --baselines)", baseline,
                                 Bm.rows, Bm.cols, F, X.rows, F);
            else
                req.baseline = (struct cbc_ig_baseline){
                    Bm.rows == 1 ? CBC_IG_BASELINE_SHARED : CBC_IG_BASELINE_PER_INPUT, 0, Bm.data};
        }
    } else if (st == CBC_OK) {
        st = cbc_matrix_load(bases, &Bk, &err);
        if (st == CBC_OK && Bk.cols != F)
            st = cbc_err_set(&err, CBC_E_SHAPE, "--baselines '%s' is %zux%zu; expected K x %zu",
                             bases, Bk.rows, Bk.cols, F);
        plan.baselines = Bk.data;
        plan.n_baselines = Bk.rows;
        /* checked like a shared baseline, one row at a time */
        for (size_t k = 0; st == CBC_OK && k < Bk.rows; k++) {
            struct cbc_ig_request one = req;
            one.x = Bk.data + k * F;
            one.n = 1;
            st = cbc_ig_validate_request(&one, F, &err);
            if (st != CBC_OK)
                cbc_err_prefix(&err, "--baselines '%s', row %zu", bases, k);
        }
    }
    req.x = X.data;
    req.n = X.rows;
    plan.targets = targets;
    plan.n_targets = T;
    size_t K = plan.baselines ? plan.n_baselines : 0;
    if (st == CBC_OK)
        st = cbc_ig_validate_request(&req, F, &err);
    if (st == CBC_OK) {
        size_t na = X.rows * T * F, nv = 4 * X.rows * T;
        attr = calloc(na > 0 ? na : 1, sizeof *attr);
        vals = calloc(nv > 0 ? nv : 1, sizeof *vals);
        bdelta = K ? calloc(X.rows * T * K, sizeof *bdelta) : NULL;
        if (!attr || !vals || (K && !bdelta))
            st = cbc_err_oom(&err);
    }
    if (st != CBC_OK) {
        tool_error(&t, &err);
        rc = tool_exit_code(st);
        goto out;
    }

    /* the device */
    char where[512] = "CPU (reference, double accumulation)";
    if (strcmp(device, "cpu") != 0) {
        struct cbc_err ge = {0};
        struct cbc_load_opts lo = {.rebuild_hint = "-Dcuda-arch=<this GPU> or CUDA_COMPUTE_CAP"};
        st = cbc_ig_gpu_open(0, NULL, &lo, &gpu, &ge);
        if (st == CBC_OK)
            cbc_ig_gpu_set_precision(gpu, precision);
        if (st == CBC_OK)
            st = M.net ? cbc_ig_gpu_upload_net(gpu, &M.net->net, &gn, &ge)
                       : cbc_ig_gpu_upload(gpu, &m->mlp, &gm, &ge);
        if (st == CBC_OK) {
            snprintf(where, sizeof where, "%s", cbc_ig_gpu_describe(gpu));
        } else if (!strcmp(device, "cuda")) {
            tool_error(&t, &ge);
            rc = tool_exit_code(st);
            goto out;
        } else {
            tool_warn(&t, "no GPU run: %s; falling back to the CPU", ge.msg);
            cbc_ig_gpu_model_free(gm);
            gm = NULL;
            cbc_ig_gpu_net_free(gn);
            gn = NULL;
            cbc_ig_gpu_close(gpu);
            gpu = NULL;
        }
    }
    if (!gpu && req.gradient == CBC_IG_PER_FEATURE) {
        tool_errorf(&t, "--gradient naive is a per-feature GPU loop; it has no CPU form");
        rc = EXIT_USAGE;
        goto out;
    }
    char arch[1024] = "";
    size_t off = 0;
    if (M.net)
        snprintf(arch, sizeof arch, "%s", M.net->summary);
    else
        off += (size_t)snprintf(arch + off, sizeof arch - off, "%d", m->mlp.layers[0].in);
    for (int l = 0; !M.net && l < m->mlp.n_layers && off < sizeof arch; l++)
        off += (size_t)snprintf(arch + off, sizeof arch - off, "-%d", m->mlp.layers[l].out);
    char what[160];
    if (ts.pred)
        snprintf(what, sizeof what, "each input's predicted output");
    else if (ts.file)
        snprintf(what, sizeof what, "targets from %s", ts.file);
    else if (T > 1)
        snprintf(what, sizeof what, "%zu targets", T);
    else
        snprintf(what, sizeof what, "target %d", targets[0]);
    char extra[200] = "";
    if (plan.noise != CBC_IG_NOISE_NONE)
        snprintf(extra, sizeof extra, ", %s of %d samples, stdev %g%s", cbc_ig_noise_name(plan.noise),
                 plan.samples, plan.stdev_relative ? plan.stdev * 100 : plan.stdev,
                 plan.stdev_relative ? "% of each input's range" : "");
    if (K)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", averaged over %zu baselines",
                 K);
    if (t.verbosity >= 0)
        fprintf(stderr, "igrun: %s (%s; %s%s%s), %zu input%s, %s %d steps, %s%s, %s gradients, "
                "on %s\n", model, arch, m ? m->activations : "a convolutional network",
                m && m->layer_names ? "; layers " : "", m && m->layer_names ? m->layer_names : "",
                X.rows, X.rows == 1 ? "" : "s",
                cbc_ig_method_name(req.method), req.steps, what, extra,
                req.gradient == CBC_IG_ANALYTIC ? "analytic" : req.gradient == CBC_IG_FD ? "finite-difference" : "naive",
                where);
    size_t NQ = X.rows * T;
    struct cbc_ig_output o = {attr, vals, vals + NQ, vals + 2 * NQ, vals + 3 * NQ};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cbc_ig_engine_fn engine = M.net ? (gpu ? cbc_ig_engine_gpu_net : cbc_ig_engine_cpu_net)
                                    : (gpu ? cbc_ig_engine_gpu : cbc_ig_engine_cpu);
    void *ectx = M.net ? (gpu ? (void *)gn : (void *)&M.net->net)
                       : (gpu ? (void *)gm : (void *)&m->mlp);
    st = cbc_ig_explain(engine, ectx, F, &req, &plan, &o, bdelta, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        rc = tool_exit_code(st);
        goto out;
    }
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    tool_note(&t, "%.3f ms", ms);
    bool over = false;
    double worst = 0, mean_abs = 0;
    size_t n_over = 0;
    for (size_t q = 0; q < NQ; q++) {
        size_t b = q / T;
        bool bad = tol >= 0 && fabs(o.delta[q]) > tol;
        over |= bad;
        n_over += bad;
        worst = fabs(o.delta[q]) > worst ? fabs(o.delta[q]) : worst;
        mean_abs += fabs(o.delta[q]) / (double)NQ;
        if (t.verbosity < 0)
            continue;
        printf("input %zu, target %d: F(x) = %.6g, F(baseline) = %.6g, sum(attributions) = %.6g, "
               "delta = %.3g%s\n",
               b, targets[q], o.f_x[q], o.f_base[q], o.sum[q], o.delta[q],
               bad ? "  EXCEEDS --tolerance" : "");
        if (NQ <= 8) {
            /* the five largest attributions by magnitude */
            const float *a = attr + q * F;
            size_t top[5] = {0};
            int k = 0;
            for (int j = 0; j < 5 && (size_t)j < F; j++) {
                size_t best = SIZE_MAX;
                for (size_t i = 0; i < F; i++) {
                    bool used = false;
                    for (int z = 0; z < k; z++)
                        used |= top[z] == i;
                    if (!used && (best == SIZE_MAX || fabsf(a[i]) > fabsf(a[best])))
                        best = i;
                }
                top[k++] = best;
            }
            printf("  largest:");
            for (int j = 0; j < k; j++)
                if (names)
                    printf(" %s %+.4g", names[top[j]], a[top[j]]);
                else
                    printf(" [%zu] %+.4g", top[j], a[top[j]]);
            printf("\n");
        }
    }
    /* the summary: always, -q included */
    printf("igrun: %zu input%s x %zu target%s: max |delta| %.3g, mean |delta| %.3g%s, %.3f ms on %s\n",
           X.rows, X.rows == 1 ? "" : "s", T, T == 1 ? "" : "s", worst, mean_abs,
           tol >= 0 ? (n_over ? ", some over --tolerance" : ", all within --tolerance") : "", ms,
           gpu ? "the GPU" : "the CPU");
    struct shape sh = {X.rows, T, F, K, targets, bdelta, names};
    if (outp) {
        /* .npy: shaped like the input ([n, C, H, W] for images, as Captum returns
         * them), a target axis after the first when there are several */
        size_t dims[5] = {X.rows};
        int nd = 1;
        if (T > 1)
            dims[nd++] = T;
        if (X.ndim >= 3)
            for (int d = 1; d < X.ndim; d++)
                dims[nd++] = X.dims[d];
        else
            dims[nd++] = F;
        st = ends_with(outp, ".json") ? write_json(outp, model, &req, &plan, where, &o, &sh, &err)
             : ends_with(outp, ".csv") ? write_csv(outp, &o, &sh, &err)
             : ends_with(outp, ".npy")
                 ? cbc_tensor_save_npy(outp, attr, dims, nd, &err)
                 : cbc_err_set(&err, CBC_E_USAGE, "--out '%s': expected .json, .csv or .npy", outp);
    }
    if (st == CBC_OK && plot) {
        /* an image-shaped .npy ([n, H, W], [n, C, H, W]) is drawn as one */
        if (!image && X.ndim == 3)
            ic = 1, ih = (int)X.dims[1], iw = (int)X.dims[2];
        else if (!image && X.ndim == 4 && X.dims[1] <= 64)
            ic = (int)X.dims[1], ih = (int)X.dims[2], iw = (int)X.dims[3];
        if (ih && (size_t)ic * (size_t)ih * (size_t)iw != F) {
            char spec[64];
            if (ic > 1)
                snprintf(spec, sizeof spec, "%dx%dx%d", ic, ih, iw);
            else
                snprintf(spec, sizeof spec, "%dx%d", ih, iw);
            st = cbc_err_set(&err, CBC_E_USAGE, "--image %s is %zu features; the model takes %zu",
                             spec, (size_t)ic * (size_t)ih * (size_t)iw, F);
        }
        if (!n_pin)
            pin[n_pin++] = 0;
        struct igrun_panel panels[64];
        char titles[64][600];
        for (size_t k = 0; st == CBC_OK && k < n_pin; k++) {
            if ((size_t)pin[k] >= X.rows) {
                st = cbc_err_set(&err, CBC_E_USAGE, "--plot-inputs: input %lld of %zu", pin[k],
                                 X.rows);
                break;
            }
            size_t q = (size_t)pin[k] * T; /* its first target */
            char title[600];
            snprintf(title, sizeof title, "%s, input %lld of %zu, target %d, %s %d steps%s%s: "
                     "F(x) = %.4g, F(baseline) = %.4g, delta = %.2g",
                     cbc_path_base(model), pin[k], X.rows, targets[q],
                     cbc_ig_method_name(req.method), req.steps,
                     plan.noise != CBC_IG_NOISE_NONE ? ", " : "",
                     plan.noise != CBC_IG_NOISE_NONE ? cbc_ig_noise_name(plan.noise) : "",
                     o.f_x[q], o.f_base[q], o.delta[q]);
            xml_escape(title, titles[k], sizeof titles[k]);
            panels[k] = (struct igrun_panel){X.data + (size_t)pin[k] * F, attr + q * F, titles[k],
                                             NULL};
        }
        char **xnames = NULL; /* the names, XML-escaped */
        if (st == CBC_OK && names) {
            xnames = calloc(F, sizeof *xnames);
            for (size_t i = 0; xnames && i < F; i++)
                if ((xnames[i] = malloc(6 * strlen(names[i]) + 8)))
                    xml_escape(names[i], xnames[i], 6 * strlen(names[i]) + 8);
        }
        for (size_t k = 0; k < n_pin; k++)
            panels[k].names = xnames;
        if (st == CBC_OK)
            st = igrun_plot_svg(plot, panels, n_pin, F, ih, iw, ic, &err);
        free_names(xnames, xnames ? F : 0);
    }
    if (st != CBC_OK) {
        tool_error(&t, &err);
        rc = tool_exit_code(st);
    } else if (over) {
        tool_errorf(&t, "|delta| exceeds --tolerance %g: raise --steps or use gausslegendre", tol);
        rc = EXIT_TOLERANCE;
    }
out:
    cbc_ig_gpu_model_free(gm);
    cbc_ig_gpu_net_free(gn);
    cbc_ig_gpu_close(gpu);
    cbc_mlp_owned_free(m);
    cbc_net_owned_free(M.net);
    cbc_matrix_release(&X);
    cbc_matrix_release(&Bm);
    cbc_matrix_release(&Bk);
    free(attr);
    free(vals);
    free(bdelta);
    free(targets);
    free_names(names, F);
    free(dm);
    free(di);
    return rc;
}
