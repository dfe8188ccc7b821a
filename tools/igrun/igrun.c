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
#include "opts.h"

#include <cubincache/ig.h>
#include <cjson/cJSON.h>

#include <errno.h>
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
        if (t->n_list == 64 || !tool_parse_int(tok, 0, INT_MAX, &v))
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

/* What the command line asks for, checked (parse_args). */
struct args {
    const char *model, *input, *baseline, *outp, *plot, *acts, *bases, *layers, *fnames_path,
        *check_out;
    int device; /* DEV_AUTO, DEV_CUDA, DEV_CPU */
    double tol; /* -1: none */
    bool demo;
    struct cbc_ig_request req;
    struct cbc_ig_plan plan;
    struct target_spec ts;
    enum cbc_ig_precision precision;
    struct image_spec {
        const char *arg; /* NULL: not given */
        int c, h, w;
    } image;
    struct plot_inputs {
        const char *arg;
        long long v[64];
        size_t n;
    } pin;
    char *dm, *di; /* the demo's files, when --demo found them */
};
enum { DEV_AUTO, DEV_CUDA, DEV_CPU };

/* What igrun holds while it runs (load, open_device, explain, write). */
struct run {
    struct cbc_ig_request req; /* args' with the inputs and baseline filled in */
    struct cbc_ig_plan plan;   /* args' with the targets and baselines */
    struct igmodel M;
    struct cbc_mlp_owned *m;
    struct cbc_matrix X, Bm, Bk;
    struct cbc_ig_gpu *gpu;
    struct cbc_ig_gpu_model *gm;
    struct cbc_ig_gpu_net *gn;
    float *attr;
    double *vals, *bdelta;
    int *targets;
    char **names;
    size_t T, F, K;
    char where[512]; /* the device, for people and the JSON */
    struct cbc_ig_output o;
    bool over; /* some |delta| above --tolerance */
};

static bool method_opt(const char *v, void *d)
{
    return cbc_ig_method_parse(v, d);
}

static bool precision_opt(const char *v, void *d)
{
    return cbc_ig_precision_parse(v, d);
}

static bool noise_opt(const char *v, void *d)
{
    return cbc_ig_noise_parse(v, d);
}

static bool target_opt(const char *v, void *d)
{
    struct target_spec ts = {0};
    if (!parse_target(v, &ts))
        return false;
    *(struct target_spec *)d = ts;
    return true;
}

static bool budget_opt(const char *v, void *d)
{
    uint64_t n;
    if (!cbc_parse_size(v, &n) || n > SIZE_MAX)
        return false;
    *(size_t *)d = (size_t)n;
    return true;
}

/* --stdev S or S%: S/100 of each input's range */
static bool stdev_opt(const char *v, void *d)
{
    struct cbc_ig_plan *plan = d;
    errno = 0;
    char *end;
    double x = strtod(v, &end);
    bool pct = *end == '%' && end[1] == '\0';
    if ((*end && !pct) || end == v || errno || !isfinite(x) || !(x >= 0))
        return false;
    plan->stdev = pct ? x / 100 : x;
    plan->stdev_relative = pct;
    return true;
}

/* --image HxW or CxHxW */
static bool image_opt(const char *v, void *d)
{
    int c = 1, h = 0, w = 0;
    int n = sscanf(v, "%dx%dx%d", &c, &h, &w);
    if (n == 2)
        w = h, h = c, c = 1;
    char tail;
    if ((n != 2 && n != 3) || c < 1 || c > 64 || h < 1 || w < 1 ||
        sscanf(v, n == 2 ? "%*dx%*d%c" : "%*dx%*dx%*d%c", &tail) == 1)
        return false;
    *(struct image_spec *)d = (struct image_spec){v, c, h, w};
    return true;
}

/* --plot-inputs 0,5,9 */
static bool plot_inputs_opt(const char *v, void *d)
{
    struct plot_inputs p = {v, {0}, 0};
    char buf[512];
    if (strlen(v) >= sizeof buf)
        return false;
    strcpy(buf, v);
    for (char *sv = NULL, *tok = strtok_r(buf, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv))
        if (p.n == 64 || !tool_parse_int(tok, 0, INT_MAX, &p.v[p.n++]))
            return false;
    *(struct plot_inputs *)d = p;
    return true;
}

static const struct tool_choice devices[] = {
    {"auto", DEV_AUTO, false}, {"cuda", DEV_CUDA, false}, {"cpu", DEV_CPU, false}, {NULL, 0, false}};
static const struct tool_choice gradients[] = {
    {"auto", CBC_IG_ANALYTIC, false}, {"analytic", CBC_IG_ANALYTIC, false},
    {"fd", CBC_IG_FD, false},         {"naive", CBC_IG_PER_FEATURE, true},
    {NULL, 0, false}};

/* What no single option's check sees: the operands, the combinations,
 * --demo's files, the files required. */
static int check_args(struct tool *t, int argc, char **argv, struct args *a)
{
    if (optind < argc)
        return tool_usage(t, "unexpected argument '%s'", argv[optind]);
    if (a->bases && strcmp(a->baseline, "zeros") != 0)
        return tool_usage(t, "--baseline and --baselines both given: use one");
    if (a->plot && !ends_with(a->plot, ".svg"))
        return tool_usage(t, "--plot '%s': igrun writes SVG only: name it .svg", a->plot);
    if (a->pin.arg && !a->plot)
        return tool_usage(t, "--plot-inputs without --plot: add --plot FILE.svg");
    if (a->demo) {
        a->dm = a->model ? NULL : demo_file("demo.safetensors");
        a->di = a->input ? NULL : demo_file("demo_input.npy");
        if ((!a->model && !a->dm) || (!a->input && !a->di)) {
            tool_errorf(t, "the demo files (demo.safetensors, demo_input.npy) are not installed");
            fprintf(stderr, "  hint: set IGRUN_DEMO_DIR to cubincache's examples/demo directory\n");
            return EXIT_ENV;
        }
        a->model = a->model ? a->model : a->dm;
        a->input = a->input ? a->input : a->di;
    }
    if (!a->model || !a->input)
        return tool_usage(t, "--model and --input are required (or --demo)");
    if (ends_with(a->model, ".onnx") && (a->acts || a->layers)) {
        tool_errorf(t, "--%s with an ONNX model: the graph says what the layers are and do",
                    a->acts ? "activations" : "layers");
        return EXIT_USAGE;
    }
    return TOOL_PARSED;
}

/* The options into a, every value and combination checked; TOOL_PARSED
 * or the exit code. */
static int parse_args(struct tool *t, int argc, char **argv, struct args *a)
{
    *a = (struct args){.baseline = "zeros", .tol = -1, .precision = CBC_IG_PRECISION_FP32,
                       .plan = {.samples = 5, .stdev = 1.0}};
    cbc_ig_request_defaults(&a->req);
    const struct tool_opt opts[] = {
        OPT_STR(0, "model", "FILE", &a->model,
                "the model: ONNX (torch.onnx.export(model, x, 'm.onnx'): read\n"
                "from its graph; MLPs and convolutional image models), or a\n"
                "safetensors state_dict of an MLP (its layers inferred from\n"
                "the tensors; see --check-outputs)"),
        OPT_STR(0, "input", "X.npy|X.csv", &a->input, "the inputs, one per row (or image)"),
        OPT_STR(0, "check-outputs", "Y.npy", &a->check_out,
                "the model's own outputs for the inputs ([n][outputs], e.g.\n"
                "np.save('y.npy', model(x).detach().numpy())): refuse to\n"
                "explain when the model read computes something else"),
        OPT_STR(0, "baseline", "B", &a->baseline,
                "B.npy|B.csv|zeros|mean|VALUE, default zeros; mean: each\n"
                "feature's mean over the inputs"),
        OPT_INT(0, "steps", "N", &a->req.steps, 1, 100000, "quadrature points (default 50)"),
        OPT_FN(0, "method", "M", &a->req.method, method_opt,
               "expected gausslegendre, riemann_left, riemann_right, riemann_middle or "
               "riemann_trapezoid",
               "gausslegendre (default), riemann_left, riemann_right,\n"
               "riemann_middle, riemann_trapezoid"),
        OPT_FN(0, "target", "T", &a->ts, target_opt,
               "expected an output index, pred, a list such as 1,3,8, or a .npy or .csv file",
               "the output explained: K (every input), pred (each input's\n"
               "largest output), K1,K2,... (each, a target axis in the\n"
               "outputs) or FILE.npy|.csv (one or more per input); needed\n"
               "when the model has more than one output"),
        OPT_STR(0, "baselines", "B.npy", &a->bases,
                "[K][F]: IG averaged over the K baselines (expected gradients)"),
        OPT_FN(0, "noise", "N", &a->plan.noise, noise_opt,
               "expected smoothgrad, smoothgrad_sq or vargrad",
               "NoiseTunnel: smoothgrad, smoothgrad_sq or vargrad"),
        OPT_INT(0, "samples", "N", &a->plan.samples, 1, 100000,
                "noisy copies per input (default 5)"),
        OPT_FN(0, "stdev", "S", &a->plan, stdev_opt,
               "expected a number >= 0, or a percentage of each input's range such as 10%",
               "the noise's standard deviation (default 1.0); S% is S/100 of\n"
               "each input's range (max - min)"),
        OPT_INT(0, "seed", "N", &a->plan.seed, 0, LLONG_MAX,
                "the noise generator's seed (default 0)"),
        OPT_ENUM(0, "device", "D", &a->device, devices,
                 "auto (default: the GPU, else the CPU, saying why), cuda, cpu"),
        OPT_FN(0, "precision", "P", &a->precision, precision_opt, "expected fast or fp32",
               "GPU arithmetic: fp32 (default: FP32 FMA GEMMs, as PyTorch\n"
               "float32) or fast (3xTF32 tensor cores, as PyTorch's TF32:\n"
               "faster, less accurate); README has the accuracy of each"),
        OPT_ENUM(0, "gradient", "G", &a->req.gradient, gradients,
                 "auto (default: analytic), analytic, fd; naive is a\n"
                 "per-feature loop, a benchmark baseline"),
        OPT_STR(0, "layers", "LIST", &a->layers,
                "safetensors: the layers in forward()'s order (default: the\n"
                "file's layer_order metadata, or an nn.Sequential's indices)"),
        OPT_STR(0, "activations", "LIST", &a->acts,
                "safetensors: one per Linear layer (default: from the file's\n"
                "metadata), in igrun's or PyTorch's spelling: relu, tanh, GELU,\n"
                "SiLU, LeakyReLU(0.2), ELU(alpha=0.5), ...; the last may be\n"
                "Softmax or LogSoftmax (the target's probability)"),
        OPT_STR(0, "out", "FILE", &a->outp,
                "results as .json, .csv or .npy (attributions only, shaped\n"
                "like the input: [n, C, H, W] for images; [n, T, ...] for T\n"
                "targets)"),
        OPT_STR(0, "plot", "FILE.svg", &a->plot,
                "attributions as SVG: a bar chart, or a heat map with --image"),
        OPT_FN(0, "plot-inputs", "LIST", &a->pin, plot_inputs_opt,
               "expected up to 64 input indices such as 0,5,9",
               "the inputs plotted, one panel each (default 0), e.g. 0,5,9"),
        OPT_FN(0, "image", "[C]xHxW", &a->image, image_opt,
               "expected HxW or CxHxW such as 28x28 or 3x32x32",
               "the input is an H x W image of C channels (default 1; its\n"
               "features channel by channel, row by row); an .npy of shape\n"
               "[n, H, W] or [n, C, H, W] says so itself"),
        OPT_STR(0, "feature-names", "FILE", &a->fnames_path,
                "one name per feature (a line each, or one line of commas;\n"
                "default: an input .csv's header): CSV, JSON and plots use them"),
        OPT_FN(0, "tolerance", "T", &a->tol, tool_parse_double_opt, "expected a number >= 0",
               "exit 3 when any |delta| exceeds T"),
        OPT_FN(0, "mem-budget", "SIZE", &a->req.mem_budget, budget_opt,
               "expected a size such as 2G",
               "GPU scratch memory (default: a quarter of what is free)"),
        OPT_FLAG(0, "demo", &a->demo, "the small model and input shipped with cubincache"),
        OPT_QUIET("only errors and the summary"),
        OPT_VERBOSE("more messages"),
        OPT_END,
    };
    const struct tool_cmd cmd = {
        "usage: igrun --model FILE.onnx|FILE.safetensors --input X.npy|X.csv [options]\n"
        "       igrun --demo [options]\n",
        opts, NULL};
    int rc = tool_parse(t, &cmd, argc, argv);
    if (rc == TOOL_PARSED)
        rc = check_args(t, argc, argv, a);
    t->cmd = NULL; /* the table was this frame's */
    return rc;
}

/* The baseline of every input, as --baseline or --baselines says. */
static enum cbc_status load_baseline(const struct args *a, struct run *r, struct cbc_err *err)
{
    size_t F = r->F;
    struct cbc_ig_request *req = &r->req;
    if (a->bases) {
        enum cbc_status st = cbc_matrix_load(a->bases, &r->Bk, err);
        if (st == CBC_OK && r->Bk.cols != F)
            st = cbc_err_set(err, CBC_E_SHAPE, "--baselines '%s' is %zux%zu; expected K x %zu",
                             a->bases, r->Bk.rows, r->Bk.cols, F);
        r->plan.baselines = r->Bk.data;
        r->plan.n_baselines = r->Bk.rows;
        /* checked like a shared baseline, one row at a time */
        for (size_t k = 0; st == CBC_OK && k < r->Bk.rows; k++) {
            struct cbc_ig_request one = *req;
            one.x = r->Bk.data + k * F;
            one.n = 1;
            st = cbc_ig_validate_request(&one, F, err);
            if (st != CBC_OK)
                cbc_err_prefix(err, "--baselines '%s', row %zu", a->bases, k);
        }
        return st;
    }
    const char *baseline = a->baseline;
    char *e2;
    double v = strtod(baseline, &e2);
    if (!strcmp(baseline, "zeros")) {
        req->baseline.kind = CBC_IG_BASELINE_ZEROS;
    } else if (!strcmp(baseline, "mean")) { /* each feature's mean over the inputs */
        r->Bm.data = calloc(F, sizeof *r->Bm.data);
        r->Bm.rows = 1, r->Bm.cols = F;
        if (!r->Bm.data)
            return cbc_err_oom(err);
        for (size_t i = 0; i < F; i++) {
            double acc = 0;
            for (size_t b = 0; b < r->X.rows; b++)
                acc += r->X.data[b * F + i];
            r->Bm.data[i] = (float)(acc / (double)r->X.rows);
        }
        req->baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SHARED, 0, r->Bm.data};
    } else if (*e2 == '\0' && e2 != baseline) {
        req->baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SCALAR, (float)v, NULL};
    } else {
        enum cbc_status st = cbc_matrix_load(baseline, &r->Bm, err);
        if (st != CBC_OK)
            return st;
        if (r->Bm.cols != F || (r->Bm.rows != 1 && r->Bm.rows != r->X.rows))
            return cbc_err_set(err, CBC_E_SHAPE, "baseline '%s' is %zux%zu; expected 1x%zu or "
                               "%zux%zu (several baselines per input: --baselines)", baseline,
                               r->Bm.rows, r->Bm.cols, F, r->X.rows, F);
        req->baseline = (struct cbc_ig_baseline){
            r->Bm.rows == 1 ? CBC_IG_BASELINE_SHARED : CBC_IG_BASELINE_PER_INPUT, 0, r->Bm.data};
    }
    return CBC_OK;
}

/* The model, the inputs, the targets, the names and the baselines, every
 * one checked against the others; the result buffers. */
static enum cbc_status load(const struct tool *t, const struct args *a, struct run *r,
                            struct cbc_err *err)
{
    r->req = a->req;
    r->plan = a->plan;
    enum cbc_status st = ends_with(a->model, ".onnx")
                             ? cbc_onnx_load(a->model, &r->m, &r->M.net, err)
                             : cbc_mlp_load_safetensors_layers(a->model, a->acts, a->layers, &r->m,
                                                               err);
    r->M.mlp = r->m;
    if (st == CBC_OK)
        st = cbc_matrix_load(a->input, &r->X, err);
    if (st != CBC_OK)
        return st;
    const struct cbc_mlp *mlp = r->m ? &r->m->mlp : NULL;
    r->M.F = r->M.net ? cbc_net_features(&r->M.net->net) : (size_t)mlp->layers[0].in;
    r->M.outs = r->M.net ? cbc_net_outputs(&r->M.net->net)
                         : (size_t)mlp->layers[mlp->n_layers - 1].out;
    r->F = r->M.F;
    if (r->X.cols != r->F)
        return cbc_err_set(err, CBC_E_SHAPE, "'%s' has %zu features per input but the model "
                           "'%s' takes %zu", a->input, r->X.cols, a->model, r->F);
    if (a->check_out)
        st = check_outputs(a->check_out, &r->M, &r->X, t->verbosity, err);
    else if (r->m && !r->m->from_graph && t->verbosity >= 0 && !a->demo)
        tool_warn(t, "'%s': layers inferred from its tensors; what forward() does without "
                  "parameters (a residual add, a scaling) is not in the file: export ONNX "
                  "(torch.onnx.export(model, x, 'model.onnx')) or pass --check-outputs Y.npy "
                  "with the model's outputs for these inputs", a->model);
    if (st == CBC_OK)
        st = resolve_targets(&a->ts, &r->M, &r->X, &r->targets, &r->T, err);
    if (st == CBC_OK)
        st = feature_names(a->fnames_path, a->input, r->F, &r->names, err);
    if (st == CBC_OK)
        st = load_baseline(a, r, err);
    r->req.x = r->X.data;
    r->req.n = r->X.rows;
    r->plan.targets = r->targets;
    r->plan.n_targets = r->T;
    r->K = r->plan.baselines ? r->plan.n_baselines : 0;
    if (st == CBC_OK)
        st = cbc_ig_validate_request(&r->req, r->F, err);
    if (st != CBC_OK)
        return st;
    size_t NQ = r->X.rows * r->T, na = NQ * r->F;
    r->attr = calloc(na > 0 ? na : 1, sizeof *r->attr);
    r->vals = calloc(4 * NQ > 0 ? 4 * NQ : 1, sizeof *r->vals);
    r->bdelta = r->K ? calloc(NQ * r->K, sizeof *r->bdelta) : NULL;
    if (!r->attr || !r->vals || (r->K && !r->bdelta))
        return cbc_err_oom(err);
    r->o = (struct cbc_ig_output){r->attr, r->vals, r->vals + NQ, r->vals + 2 * NQ,
                                  r->vals + 3 * NQ};
    return CBC_OK;
}

/* The GPU unless --device cpu; with auto, the CPU (saying why) when the
 * GPU cannot take the model. An exit code. */
static int open_device(const struct tool *t, const struct args *a, struct run *r)
{
    snprintf(r->where, sizeof r->where, "CPU (reference, double accumulation)");
    if (a->device != DEV_CPU) {
        struct cbc_err ge = {0};
        struct cbc_load_opts lo = {.rebuild_hint = "-Dcuda-arch=<this GPU> or CUDA_COMPUTE_CAP"};
        enum cbc_status st = cbc_ig_gpu_open(0, NULL, &lo, &r->gpu, &ge);
        if (st == CBC_OK)
            cbc_ig_gpu_set_precision(r->gpu, a->precision);
        if (st == CBC_OK)
            st = r->M.net ? cbc_ig_gpu_upload_net(r->gpu, &r->M.net->net, &r->gn, &ge)
                          : cbc_ig_gpu_upload(r->gpu, &r->m->mlp, &r->gm, &ge);
        if (st == CBC_OK) {
            snprintf(r->where, sizeof r->where, "%s", cbc_ig_gpu_describe(r->gpu));
        } else if (a->device == DEV_CUDA) {
            tool_error(t, &ge);
            return tool_exit_code(st);
        } else {
            tool_warn(t, "no GPU run: %s; falling back to the CPU", ge.msg);
            cbc_ig_gpu_model_free(r->gm);
            r->gm = NULL;
            cbc_ig_gpu_net_free(r->gn);
            r->gn = NULL;
            cbc_ig_gpu_close(r->gpu);
            r->gpu = NULL;
        }
    }
    if (!r->gpu && r->req.gradient == CBC_IG_PER_FEATURE) {
        tool_errorf(t, "--gradient naive is a per-feature GPU loop; it has no CPU form");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* The one line that says what is explained, how and where. */
static void print_plan(const struct args *a, const struct run *r)
{
    char arch[1024] = "";
    size_t off = 0;
    if (r->M.net)
        snprintf(arch, sizeof arch, "%s", r->M.net->summary);
    else
        off += (size_t)snprintf(arch + off, sizeof arch - off, "%d", r->m->mlp.layers[0].in);
    for (int l = 0; !r->M.net && l < r->m->mlp.n_layers && off < sizeof arch; l++)
        off += (size_t)snprintf(arch + off, sizeof arch - off, "-%d", r->m->mlp.layers[l].out);
    char what[160];
    if (a->ts.pred)
        snprintf(what, sizeof what, "each input's predicted output");
    else if (a->ts.file)
        snprintf(what, sizeof what, "targets from %s", a->ts.file);
    else if (r->T > 1)
        snprintf(what, sizeof what, "%zu targets", r->T);
    else
        snprintf(what, sizeof what, "target %d", r->targets[0]);
    char extra[200] = "";
    const struct cbc_ig_plan *plan = &r->plan;
    if (plan->noise != CBC_IG_NOISE_NONE)
        snprintf(extra, sizeof extra, ", %s of %d samples, stdev %g%s",
                 cbc_ig_noise_name(plan->noise), plan->samples,
                 plan->stdev_relative ? plan->stdev * 100 : plan->stdev,
                 plan->stdev_relative ? "% of each input's range" : "");
    if (r->K)
        snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
                 ", averaged over %zu baselines", r->K);
    const struct cbc_mlp_owned *m = r->m;
    fprintf(stderr, "igrun: %s (%s; %s%s%s), %zu input%s, %s %d steps, %s%s, %s gradients, "
            "on %s\n", a->model, arch, m ? m->activations : "a convolutional network",
            m && m->layer_names ? "; layers " : "", m && m->layer_names ? m->layer_names : "",
            r->X.rows, r->X.rows == 1 ? "" : "s", cbc_ig_method_name(r->req.method),
            r->req.steps, what, extra,
            r->req.gradient == CBC_IG_ANALYTIC ? "analytic"
            : r->req.gradient == CBC_IG_FD     ? "finite-difference"
                                               : "naive",
            r->where);
}

/* "  largest: [3] +0.5 ..." for one input and target: the five largest
 * attributions by magnitude. */
static void print_largest(const float *a, size_t F, char **names)
{
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

/* The attributions, then a line per input and target and the summary
 * (always, -q included). An exit code. */
static int explain(const struct tool *t, const struct args *a, struct run *r)
{
    if (t->verbosity >= 0)
        print_plan(a, r);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool net = r->M.net != NULL;
    cbc_ig_engine_fn engine = net ? (r->gpu ? cbc_ig_engine_gpu_net : cbc_ig_engine_cpu_net)
                                  : (r->gpu ? cbc_ig_engine_gpu : cbc_ig_engine_cpu);
    void *ectx = net ? (r->gpu ? (void *)r->gn : (void *)&r->M.net->net)
                     : (r->gpu ? (void *)r->gm : (void *)&r->m->mlp);
    struct cbc_err err = {0};
    enum cbc_status st = cbc_ig_explain(engine, ectx, r->F, &r->req, &r->plan, &r->o, r->bdelta,
                                        &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != CBC_OK) {
        tool_error(t, &err);
        return tool_exit_code(st);
    }
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    tool_note(t, "%.3f ms", ms);
    double worst = 0, mean_abs = 0, tol = a->tol;
    size_t n_over = 0, NQ = r->X.rows * r->T;
    const struct cbc_ig_output *o = &r->o;
    for (size_t q = 0; q < NQ; q++) {
        bool bad = tol >= 0 && fabs(o->delta[q]) > tol;
        n_over += bad;
        worst = fabs(o->delta[q]) > worst ? fabs(o->delta[q]) : worst;
        mean_abs += fabs(o->delta[q]) / (double)NQ;
        if (t->verbosity < 0)
            continue;
        printf("input %zu, target %d: F(x) = %.6g, F(baseline) = %.6g, sum(attributions) = %.6g, "
               "delta = %.3g%s\n",
               q / r->T, r->targets[q], o->f_x[q], o->f_base[q], o->sum[q], o->delta[q],
               bad ? "  EXCEEDS --tolerance" : "");
        if (NQ <= 8)
            print_largest(r->attr + q * r->F, r->F, r->names);
    }
    r->over = n_over > 0;
    printf("igrun: %zu input%s x %zu target%s: max |delta| %.3g, mean |delta| %.3g%s, %.3f ms on "
           "%s\n", r->X.rows, r->X.rows == 1 ? "" : "s", r->T, r->T == 1 ? "" : "s", worst,
           mean_abs, tol >= 0 ? (n_over ? ", some over --tolerance" : ", all within --tolerance")
                              : "", ms, r->gpu ? "the GPU" : "the CPU");
    return EXIT_OK;
}

/* --out: .json, .csv, or .npy shaped like the input ([n, C, H, W] for
 * images, as Captum returns them), a target axis after the first when
 * there are several. */
static enum cbc_status write_out(const struct args *a, const struct run *r, struct cbc_err *err)
{
    struct shape sh = {r->X.rows, r->T, r->F, r->K, r->targets, r->bdelta, r->names};
    const char *outp = a->outp;
    if (ends_with(outp, ".json"))
        return write_json(outp, a->model, &r->req, &r->plan, r->where, &r->o, &sh, err);
    if (ends_with(outp, ".csv"))
        return write_csv(outp, &r->o, &sh, err);
    if (!ends_with(outp, ".npy"))
        return cbc_err_set(err, CBC_E_USAGE, "--out '%s': expected .json, .csv or .npy", outp);
    size_t dims[5] = {r->X.rows};
    int nd = 1;
    if (r->T > 1)
        dims[nd++] = r->T;
    if (r->X.ndim >= 3)
        for (int d = 1; d < r->X.ndim; d++)
            dims[nd++] = r->X.dims[d];
    else
        dims[nd++] = r->F;
    return cbc_tensor_save_npy(outp, r->attr, dims, nd, err);
}

/* --plot: a panel per --plot-inputs input; an image-shaped .npy ([n, H, W],
 * [n, C, H, W]) is drawn as one. */
static enum cbc_status write_plot(const struct args *a, const struct run *r, struct cbc_err *err)
{
    const struct cbc_matrix *X = &r->X;
    size_t F = r->F, T = r->T;
    int ic = a->image.c, ih = a->image.h, iw = a->image.w;
    if (!a->image.arg && X->ndim == 3)
        ic = 1, ih = (int)X->dims[1], iw = (int)X->dims[2];
    else if (!a->image.arg && X->ndim == 4 && X->dims[1] <= 64)
        ic = (int)X->dims[1], ih = (int)X->dims[2], iw = (int)X->dims[3];
    if (ih && (size_t)ic * (size_t)ih * (size_t)iw != F) {
        char spec[64];
        if (ic > 1)
            snprintf(spec, sizeof spec, "%dx%dx%d", ic, ih, iw);
        else
            snprintf(spec, sizeof spec, "%dx%d", ih, iw);
        return cbc_err_set(err, CBC_E_USAGE, "--image %s is %zu features; the model takes %zu",
                           spec, (size_t)ic * (size_t)ih * (size_t)iw, F);
    }
    struct plot_inputs pin = a->pin;
    if (!pin.n)
        pin.v[pin.n++] = 0;
    struct igrun_panel panels[64];
    char titles[64][600];
    for (size_t k = 0; k < pin.n; k++) {
        if ((size_t)pin.v[k] >= X->rows)
            return cbc_err_set(err, CBC_E_USAGE, "--plot-inputs: input %lld of %zu", pin.v[k],
                               X->rows);
        size_t q = (size_t)pin.v[k] * T; /* its first target */
        const struct cbc_ig_plan *plan = &r->plan;
        char title[600];
        snprintf(title, sizeof title, "%s, input %lld of %zu, target %d, %s %d steps%s%s: "
                 "F(x) = %.4g, F(baseline) = %.4g, delta = %.2g",
                 cbc_path_base(a->model), pin.v[k], X->rows, r->targets[q],
                 cbc_ig_method_name(r->req.method), r->req.steps,
                 plan->noise != CBC_IG_NOISE_NONE ? ", " : "",
                 plan->noise != CBC_IG_NOISE_NONE ? cbc_ig_noise_name(plan->noise) : "",
                 r->o.f_x[q], r->o.f_base[q], r->o.delta[q]);
        xml_escape(title, titles[k], sizeof titles[k]);
        panels[k] = (struct igrun_panel){X->data + (size_t)pin.v[k] * F, r->attr + q * F,
                                         titles[k], NULL};
    }
    char **xnames = NULL; /* the names, XML-escaped */
    if (r->names) {
        xnames = calloc(F, sizeof *xnames);
        for (size_t i = 0; xnames && i < F; i++)
            if ((xnames[i] = malloc(6 * strlen(r->names[i]) + 8)))
                xml_escape(r->names[i], xnames[i], 6 * strlen(r->names[i]) + 8);
    }
    for (size_t k = 0; k < pin.n; k++)
        panels[k].names = xnames;
    enum cbc_status st = igrun_plot_svg(a->plot, panels, pin.n, F, ih, iw, ic, err);
    free_names(xnames, xnames ? F : 0);
    return st;
}

static void run_release(struct run *r)
{
    cbc_ig_gpu_model_free(r->gm);
    cbc_ig_gpu_net_free(r->gn);
    cbc_ig_gpu_close(r->gpu);
    cbc_mlp_owned_free(r->m);
    cbc_net_owned_free(r->M.net);
    cbc_matrix_release(&r->X);
    cbc_matrix_release(&r->Bm);
    cbc_matrix_release(&r->Bk);
    free(r->attr);
    free(r->vals);
    free(r->bdelta);
    free(r->targets);
    free_names(r->names, r->F);
}

/* parse, load, run, write */
int main(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "igrun");
    struct args a;
    int rc = parse_args(&t, argc, argv, &a);
    if (rc != TOOL_PARSED) {
        free(a.dm);
        free(a.di);
        return rc;
    }
    struct run r = {0};
    struct cbc_err err = {0};
    enum cbc_status st = load(&t, &a, &r, &err);
    rc = st == CBC_OK ? EXIT_OK : (tool_error(&t, &err), tool_exit_code(st));
    if (rc == EXIT_OK)
        rc = open_device(&t, &a, &r);
    if (rc == EXIT_OK)
        rc = explain(&t, &a, &r);
    if (rc == EXIT_OK) {
        st = a.outp ? write_out(&a, &r, &err) : CBC_OK;
        if (st == CBC_OK && a.plot)
            st = write_plot(&a, &r, &err);
        if (st != CBC_OK) {
            tool_error(&t, &err);
            rc = tool_exit_code(st);
        } else if (r.over) {
            tool_errorf(&t, "|delta| exceeds --tolerance %g: raise --steps or use gausslegendre",
                        a.tol);
            rc = EXIT_TOLERANCE;
        }
    }
    run_release(&r);
    free(a.dm);
    free(a.di);
    return rc;
}
