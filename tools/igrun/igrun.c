/* igrun.c: the bundled Integrated Gradients driver.
 *
 *   igrun --model FILE.safetensors --input X.npy|X.csv [--baseline B|zeros|VALUE]
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
    "usage: igrun --model FILE.safetensors --input X.npy|X.csv [options]\n"
    "       igrun --demo [options]\n"
    "  --baseline B.npy|B.csv|zeros|VALUE   default zeros\n"
    "  --steps N            quadrature points (default 50)\n"
    "  --method M           gausslegendre (default), riemann_left, riemann_right,\n"
    "                       riemann_middle, riemann_trapezoid\n"
    "  --target K           the output explained (default 0)\n"
    "  --device D           auto (default: the GPU, else the CPU, saying why), cuda, cpu\n"
    "  --gradient G         auto (default: analytic), analytic, fd; naive is a\n"
    "                       per-feature loop, a benchmark baseline\n"
    "  --activations LIST   one per Linear layer (default: from the file's metadata)\n"
    "  --out FILE           results as .json, .csv or .npy (attributions only)\n"
    "  --plot FILE.svg      the first input's attributions (heat map for images)\n"
    "  --image HxW          the input's image shape (default: square feature counts)\n"
    "  --tolerance T        exit 3 when any |delta| exceeds T\n"
    "  --mem-budget SIZE    GPU scratch memory (default: a quarter of what is free)\n"
    "  --demo               the small model and input shipped with cubincache\n"
    "  -q / -v              fewer / more messages\n";

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

static enum cbc_status write_json(const char *path, const char *model, const struct cbc_ig_request *r,
                                  const char *device, const struct cbc_ig_output *o, size_t F,
                                  struct cbc_err *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model", model);
    cJSON_AddStringToObject(root, "method", cbc_ig_method_name(r->method));
    cJSON_AddNumberToObject(root, "steps", r->steps);
    cJSON_AddNumberToObject(root, "target", r->target);
    cJSON_AddStringToObject(root, "device", device);
    cJSON *ins = cJSON_AddArrayToObject(root, "inputs");
    for (size_t b = 0; b < r->n; b++) {
        cJSON *in = cJSON_CreateObject();
        cJSON_AddNumberToObject(in, "index", (double)b);
        cJSON_AddNumberToObject(in, "f_x", o->f_x[b]);
        cJSON_AddNumberToObject(in, "f_baseline", o->f_base[b]);
        cJSON_AddNumberToObject(in, "sum", o->sum[b]);
        cJSON_AddNumberToObject(in, "delta", o->delta[b]);
        cJSON *a = cJSON_AddArrayToObject(in, "attributions");
        for (size_t i = 0; i < F; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber(o->attr[b * F + i]));
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

static enum cbc_status write_csv(const char *path, const struct cbc_ig_output *o, size_t n, size_t F,
                                 struct cbc_err *err)
{
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, "input,f_x,f_baseline,sum,delta");
    for (size_t i = 0; i < F; i++)
        cbc_buf_printf(&b, ",a%zu", i);
    cbc_buf_puts(&b, "\n");
    for (size_t r = 0; r < n; r++) {
        cbc_buf_printf(&b, "%zu,%.9g,%.9g,%.9g,%.9g", r, o->f_x[r], o->f_base[r], o->sum[r],
                       o->delta[r]);
        for (size_t i = 0; i < F; i++)
            cbc_buf_printf(&b, ",%.9g", o->attr[r * F + i]);
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

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int main(int argc, char **argv)
{
    struct tool t;
    tool_init(&t, "igrun");
    enum {
        O_MODEL = 256, O_INPUT, O_BASE, O_STEPS, O_METHOD, O_TARGET, O_DEVICE, O_GRAD, O_OUT, O_PLOT,
        O_TOL, O_DEMO, O_ACTS, O_IMAGE, O_BUDGET, O_HELP
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
        {"quiet", no_argument, NULL, 'q'},             {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, O_HELP},           {NULL, 0, NULL, 0},
    };
    const char *model = NULL, *input = NULL, *baseline = "zeros", *device = "auto",
               *gradient = "auto", *outp = NULL, *plot = NULL, *acts = NULL, *image = NULL;
    double tol = -1;
    bool demo = false;
    struct cbc_ig_request req;
    cbc_ig_request_defaults(&req);
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
        case O_TARGET: {
            long long v;
            if (!parse_int(optarg, 0, INT_MAX, &v))
                return tool_usage_error(&t, usage, "--target '%s': expected an output index",
                                        optarg);
            req.target = (int)v;
            break;
        }
        case O_DEVICE: device = optarg; break;
        case O_GRAD: gradient = optarg; break;
        case O_OUT: outp = optarg; break;
        case O_PLOT: plot = optarg; break;
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
    int ih = 0, iw = 0;
    if (image && (sscanf(image, "%dx%d", &ih, &iw) != 2 || ih < 1 || iw < 1))
        return tool_usage_error(&t, usage, "--image '%s': expected HxW such as 28x28", image);

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
    struct cbc_mlp_owned *m = NULL;
    struct cbc_matrix X = {0}, Bm = {0};
    struct cbc_ig_gpu *gpu = NULL;
    struct cbc_ig_gpu_model *gm = NULL;
    float *attr = NULL;
    double *vals = NULL;
    enum cbc_status st = cbc_mlp_load_safetensors(model, acts, &m, &err);
    if (st == CBC_OK)
        st = cbc_matrix_load(input, &X, &err);
    size_t F = 0, outs = 0;
    if (st == CBC_OK) {
        F = (size_t)m->mlp.layers[0].in;
        outs = (size_t)m->mlp.layers[m->mlp.n_layers - 1].out;
        if (X.cols != F)
            st = cbc_err_set(&err, CBC_E_SHAPE, "'%s' has %zu features per input but the model "
                             "'%s' takes %zu", input, X.cols, model, F);
        else if ((size_t)req.target >= outs)
            st = cbc_err_set(&err, CBC_E_USAGE, "--target %d: the model has outputs 0 to %zu",
                             req.target, outs - 1);
    }
    if (st == CBC_OK) {
        char *e2;
        double v = strtod(baseline, &e2);
        if (!strcmp(baseline, "zeros")) {
            req.baseline.kind = CBC_IG_BASELINE_ZEROS;
        } else if (*e2 == '\0' && e2 != baseline) {
            req.baseline = (struct cbc_ig_baseline){CBC_IG_BASELINE_SCALAR, (float)v, NULL};
        } else if ((st = cbc_matrix_load(baseline, &Bm, &err)) == CBC_OK) {
            if (Bm.cols != F || (Bm.rows != 1 && Bm.rows != X.rows))
                st = cbc_err_set(&err, CBC_E_SHAPE, "baseline '%s' is %zux%zu; expected 1x%zu or "
                                 "%zux%zu", baseline, Bm.rows, Bm.cols, F, X.rows, F);
            else
                req.baseline = (struct cbc_ig_baseline){
                    Bm.rows == 1 ? CBC_IG_BASELINE_SHARED : CBC_IG_BASELINE_PER_INPUT, 0, Bm.data};
        }
    }
    req.x = X.data;
    req.n = X.rows;
    if (st == CBC_OK)
        st = cbc_ig_validate_request(&req, F, &err);
    if (st == CBC_OK) {
        attr = calloc(X.rows * F, sizeof *attr);
        vals = calloc(4 * X.rows, sizeof *vals);
        if (!attr || !vals)
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
            st = cbc_ig_gpu_upload(gpu, &m->mlp, &gm, &ge);
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
            cbc_ig_gpu_close(gpu);
            gpu = NULL;
        }
    }
    if (!gpu && req.gradient == CBC_IG_PER_FEATURE) {
        tool_errorf(&t, "--gradient naive is a per-feature GPU loop; it has no CPU form");
        rc = EXIT_USAGE;
        goto out;
    }
    char arch[256] = "";
    size_t off = 0;
    off += (size_t)snprintf(arch + off, sizeof arch - off, "%d", m->mlp.layers[0].in);
    for (int l = 0; l < m->mlp.n_layers && off < sizeof arch; l++)
        off += (size_t)snprintf(arch + off, sizeof arch - off, "-%d", m->mlp.layers[l].out);
    if (t.verbosity >= 0)
        fprintf(stderr, "igrun: %s (%s; %s), %zu input%s, %s %d steps, target %d, %s gradients, on %s\n",
                model, arch, m->activations, X.rows, X.rows == 1 ? "" : "s",
                cbc_ig_method_name(req.method), req.steps, req.target,
                req.gradient == CBC_IG_ANALYTIC ? "analytic" : req.gradient == CBC_IG_FD ? "finite-difference" : "naive",
                where);
    struct cbc_ig_output o = {attr, vals, vals + X.rows, vals + 2 * X.rows, vals + 3 * X.rows};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = gpu ? cbc_ig_gpu_mlp(gm, &req, &o, &err) : cbc_ig_cpu_mlp(&m->mlp, &req, &o, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (st != CBC_OK) {
        tool_error(&t, &err);
        rc = tool_exit_code(st);
        goto out;
    }
    tool_note(&t, "%.3f ms", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    bool over = false;
    for (size_t b = 0; b < X.rows; b++) {
        bool bad = tol >= 0 && fabs(o.delta[b]) > tol;
        over |= bad;
        printf("input %zu: F(x) = %.6g, F(baseline) = %.6g, sum(attributions) = %.6g, delta = %.3g%s\n",
               b, o.f_x[b], o.f_base[b], o.sum[b], o.delta[b], bad ? "  EXCEEDS --tolerance" : "");
        if (X.rows <= 8 && t.verbosity >= 0) {
            /* the five largest attributions by magnitude */
            size_t top[5] = {0};
            int k = 0;
            for (int j = 0; j < 5 && (size_t)j < F; j++) {
                size_t best = SIZE_MAX;
                for (size_t i = 0; i < F; i++) {
                    bool used = false;
                    for (int q = 0; q < k; q++)
                        used |= top[q] == i;
                    if (!used && (best == SIZE_MAX || fabsf(attr[b * F + i]) > fabsf(attr[b * F + best])))
                        best = i;
                }
                top[k++] = best;
            }
            printf("  largest:");
            for (int j = 0; j < k; j++)
                printf(" [%zu] %+.4g", top[j], attr[b * F + top[j]]);
            printf("\n");
        }
    }
    if (outp) {
        struct cbc_matrix A = {attr, X.rows, F};
        st = ends_with(outp, ".json") ? write_json(outp, model, &req, where, &o, F, &err)
             : ends_with(outp, ".csv") ? write_csv(outp, &o, X.rows, F, &err)
             : ends_with(outp, ".npy") ? cbc_matrix_save_npy(outp, &A, &err)
                                       : cbc_err_set(&err, CBC_E_USAGE, "--out '%s': expected .json, "
                                                     ".csv or .npy", outp);
    }
    if (st == CBC_OK && plot) {
        if (!image) {
            int s = (int)lround(sqrt((double)F));
            if (s >= 4 && (size_t)s * (size_t)s == F)
                ih = iw = s;
        }
        char title[512], esc[600];
        snprintf(title, sizeof title, "%s, input 0 of %zu: F(x) = %.4g, F(baseline) = %.4g, delta = %.2g",
                 cbc_path_base(model), X.rows, o.f_x[0], o.f_base[0], o.delta[0]);
        xml_escape(title, esc, sizeof esc);
        st = igrun_plot_svg(plot, X.data, attr, F, ih, iw, esc, &err);
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
    cbc_ig_gpu_close(gpu);
    cbc_mlp_owned_free(m);
    cbc_matrix_release(&X);
    cbc_matrix_release(&Bm);
    free(attr);
    free(vals);
    free(dm);
    free(di);
    return rc;
}
