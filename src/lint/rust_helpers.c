/* rust_helpers.c: what the build helpers a cargo build script calls do to
 * cargo, as data: which variables a call reads without declaring them,
 * which it declares (cargo:rerun-if-env-changed=), which kernel sources it
 * compiles and whether it declares them (cargo:rerun-if-changed=). The
 * built-in models (bindgen_cuda, cudaforge, the cc crate's CUDA mode, the
 * cmake crate) are written in the same line format as a user's own file
 * (`cubincache lint --helpers FILE`, docs in README.md), and go through the
 * same parser:
 *
 *     # comment
 *     CALL  EFFECT...
 *
 * CALL is a path, `crate::item::fn` (a function or a constructor), or
 * `crate::Type.method` (a method on a value the model typed). EFFECT is one
 * of: type=T (the call returns a value of type T; methods on T without a
 * model return T too, as builders do), reads=A,B (read, never declared),
 * declares=A,B, sources=arg / sources+=arg (the first argument names the
 * kernel sources: files, directories or globs; += adds), includes+=arg,
 * watch=arg, default-sources=P,Q (of a constructor), declares-sources (the
 * call prints rerun-if-changed= for the value's sources and watch paths),
 * declares-watch (for the watch paths only), nvcc (it compiles the sources
 * with nvcc), nvcc-if=F (only on a value with flag F), nvcc-declares=A,B
 * (declared when it runs nvcc), prints-rerun (it prints some rerun-if line, which
 * ends cargo's scan of the package), sets=F, sets-if-true=F (the first
 * argument is `true`), unless=F (the reads do not happen on a value with
 * F set), cuda-project (the effects apply only when the argument's
 * directory holds a CMakeLists.txt that enables CUDA), ends (the call
 * returns something else than the builder).
 *
 * Invariants: parsing is bounded by the text's length; a variable name is
 * [A-Za-z0-9_]+ and a flag [a-z0-9_-]+; every error names the file, the
 * line and the word, with the fix.
 */
#include "rust_int.h"

#include <stdlib.h>
#include <string.h>

/* Modelled from each helper's published source; the comment of each block
 * names the version and the file read. Reads that do not change what is
 * built are left out on purpose (bindgen_cuda's RAYON_NUM_THREADS picks a
 * thread count). */
static const char builtin[] =
    "# bindgen_cuda 0.1.5 (Narsil/bindgen_cuda a6b0c89, src/lib.rs). Builder::default() runs\n"
    "# compute_cap(), which prints rerun-if-env-changed=CUDA_COMPUTE_CAP before reading it, and\n"
    "# cuda_include_dir(), which reads four variables it never declares (the CUDA root: -I and\n"
    "# CUDA_INCLUDE_DIR). Its kernels default to src/**/*.cu. build_ptx() prints rerun-if-changed\n"
    "# for every kernel, include and watch path and declares NVCC_CCBIN; build_lib() declares the\n"
    "# watch paths only and reads NVCC_CCBIN undeclared.\n"
    "bindgen_cuda::Builder::default  type=bindgen_cuda::Builder default-sources=src/**/*.cu"
    " default-includes=src/**/*.cuh declares=CUDA_COMPUTE_CAP"
    " reads=CUDA_PATH,CUDA_ROOT,CUDA_TOOLKIT_ROOT_DIR,CUDNN_LIB\n"
    "bindgen_cuda::Builder.kernel_paths        sources=arg\n"
    "bindgen_cuda::Builder.kernel_paths_glob   sources=arg\n"
    "bindgen_cuda::Builder.include_paths       includes=arg\n"
    "bindgen_cuda::Builder.include_paths_glob  includes=arg\n"
    "bindgen_cuda::Builder.watch               watch=arg\n"
    "bindgen_cuda::Builder.build_ptx  declares=NVCC_CCBIN declares-sources nvcc ends\n"
    "bindgen_cuda::Builder.build_lib  reads=NVCC_CCBIN declares-watch nvcc ends\n"
    "# cudaforge 0.1.5 (haricot/cudaforge 9b8621c, the history of guoqingbao/cudaforge 0.1.0-0.1.5:\n"
    "# src/builder.rs, compute_cap.rs, toolkit.rs). detect_compute_cap() and the builder's\n"
    "# get_compute_cap() read CUDA_COMPUTE_CAP and declare nothing; build_ptx() and build_lib()\n"
    "# declare it and every kernel and watch path. Both find nvcc through NVCC, PATH, CUDA_HOME\n"
    "# and CUDA_PATH (nvcc.exe) before printing anything; build_ptx() never declares NVCC,\n"
    "# neither declares CUDA_HOME nor CUDA_PATH. Kernels default to src/**/*.cu.\n"
    "cudaforge::KernelBuilder::new      type=cudaforge::KernelBuilder default-sources=src/**/*.cu\n"
    "cudaforge::KernelBuilder::default  type=cudaforge::KernelBuilder default-sources=src/**/*.cu\n"
    "cudaforge::KernelBuilder.source_dir    sources+=arg\n"
    "cudaforge::KernelBuilder.source_files  sources+=arg\n"
    "cudaforge::KernelBuilder.source_glob   sources+=arg\n"
    "cudaforge::KernelBuilder.watch         watch=arg\n"
    "cudaforge::KernelBuilder.compute_cap       sets=cap\n"
    "cudaforge::KernelBuilder.compute_cap_arch  sets=cap\n"
    "cudaforge::KernelBuilder.set_compute_cap   sets=cap\n"
    "cudaforge::KernelBuilder.get_compute_cap   reads=CUDA_COMPUTE_CAP unless=cap ends\n"
    "cudaforge::KernelBuilder.require_explicit_compute_cap  reads=CUDA_COMPUTE_CAP unless=cap\n"
    "cudaforge::KernelBuilder.build_ptx  reads=NVCC,CUDA_HOME,CUDA_PATH"
    " declares=CUDA_COMPUTE_CAP,NVCC_CCBIN declares-sources nvcc ends\n"
    "cudaforge::KernelBuilder.build_lib  reads=CUDA_HOME,CUDA_PATH"
    " declares=CUDA_COMPUTE_CAP,NVCC,NVCC_CCBIN declares-sources nvcc ends\n"
    "cudaforge::detect_compute_cap               reads=CUDA_COMPUTE_CAP ends\n"
    "cudaforge::compute_cap::detect_compute_cap  reads=CUDA_COMPUTE_CAP ends\n"
    "cudaforge::ComputeCapability.get_default    reads=CUDA_COMPUTE_CAP ends\n"
    "cudaforge::ComputeCapability.get_for_file   reads=CUDA_COMPUTE_CAP ends\n"
    "cudaforge::CudaToolkit::detect              reads=NVCC,CUDA_HOME,CUDA_PATH ends\n"
    "# cc 1.4.2 (rust-lang/cc-rs a91e05e, src/lib.rs). get_env() prints rerun-if-env-changed=\n"
    "# for every variable the crate reads (NVCC in CUDA mode, CC, CFLAGS, ...), so a script that\n"
    "# compiles with cc declares something and cargo stops scanning its package; cc never\n"
    "# declares the files it compiles.\n"
    "cc::Build::new   type=cc::Build\n"
    "cc::Build.cuda   sets-if-true=cuda\n"
    "cc::Build.file   sources+=arg\n"
    "cc::Build.files  sources+=arg\n"
    "cc::Build.compile      prints-rerun declares=CC,CXX,CFLAGS,CXXFLAGS nvcc-declares=NVCC"
    " nvcc-if=cuda ends\n"
    "cc::Build.try_compile  prints-rerun declares=CC,CXX,CFLAGS,CXXFLAGS nvcc-declares=NVCC"
    " nvcc-if=cuda ends\n"
    "# cmake 0.1.57 (rust-lang/cmake-rs 511160f, src/lib.rs). It configures the project at every\n"
    "# run of the script, asks cc for the compilers (which prints rerun-if-env-changed= lines)\n"
    "# and declares none of the project's files; CMake itself reads CUDAARCHS, CUDAFLAGS,\n"
    "# CUDACXX and CUDAHOSTCXX from the environment when the project enables CUDA.\n"
    "cmake::Config::new  type=cmake::Config sources=arg\n"
    "cmake::Config.build  cuda-project reads=CUDAARCHS,CUDAFLAGS,CUDACXX,CUDAHOSTCXX"
    " prints-rerun nvcc ends\n"
    "cmake::build  cuda-project sources=arg reads=CUDAARCHS,CUDAFLAGS,CUDACXX,CUDAHOSTCXX"
    " prints-rerun nvcc ends\n";

static bool var_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    return true;
}

static bool flag_ok(const char *s, size_t n)
{
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
              s[i] == '-'))
            return false;
    return true;
}

/* A path `a::b` (identifiers joined by ::) and, for a method, `.m`. */
static bool call_ok(const char *s, size_t n, bool *method)
{
    *method = false;
    size_t seg = 0, i = 0;
    bool dot = false;
    while (i < n) {
        size_t b = i;
        while (i < n && (var_name_ok(s + i, 1)))
            i++;
        if (i == b || (s[b] >= '0' && s[b] <= '9'))
            return false;
        seg++;
        if (i == n)
            break;
        if (dot)
            return false; /* nothing after the method's name */
        if (s[i] == '.' ) {
            dot = true;
            i++;
        } else if (i + 1 < n && s[i] == ':' && s[i + 1] == ':') {
            i += 2;
        } else {
            return false;
        }
        if (i == n)
            return false;
    }
    *method = dot;
    return seg >= 2;
}

static void fx_free(struct helper_fx *x)
{
    free(x->call);
    free(x->type);
    free(x->name);
    free(x->recv);
    free(x->origin);
    lint_strset_free(&x->reads);
    lint_strset_free(&x->declares);
    lint_strset_free(&x->default_sources);
    lint_strset_free(&x->default_includes);
    lint_strset_free(&x->nvcc_declares);
    free(x->sets);
    free(x->sets_if_true);
    free(x->unless);
    free(x->nvcc_if);
}

void lint_helpers_free(struct lint_helpers *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        fx_free(&h->v[i]);
    free(h->v);
    free(h);
}

/* A comma list into a set, each checked with `ok`. */
static bool add_list(struct lint_strset *set, const char *p, size_t n,
                     bool (*ok)(const char *, size_t), bool *bad)
{
    size_t i = 0;
    while (i <= n) {
        size_t b = i;
        while (i < n && p[i] != ',')
            i++;
        if (ok && !ok(p + b, i - b)) {
            *bad = true;
            return true;
        }
        if (i > b) {
            char *one = cbc_strndup(p + b, i - b);
            if (!one || !lint_strset_add(set, one)) {
                free(one);
                return false;
            }
            free(one);
        } else {
            *bad = true;
            return true;
        }
        i++;
    }
    return true;
}

static bool path_ok(const char *s, size_t n)
{
    if (n == 0 || n > 512 || s[0] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x21 || s[i] == '"' || s[i] == '\\')
            return false;
    return true;
}

static enum cbc_status parse_error(struct cbc_err *err, const char *origin, unsigned line,
                                   const char *what, const char *word, size_t wn)
{
    enum cbc_status st = cbc_err_set(err, CBC_E_USAGE, "%s:%u: %s '%.*s'", origin, line, what,
                                     (int)(wn > 80 ? 80 : wn), word);
    cbc_err_hint(err, "a line is `CALL EFFECT...`: CALL `crate::fn`, `crate::Type::new` or "
                      "`crate::Type.method`; EFFECT one of type=T reads=A,B declares=A,B "
                      "sources=arg sources+=arg includes=arg watch=arg default-sources=P "
                      "declares-sources declares-watch nvcc nvcc-if=F nvcc-declares=A,B "
                      "prints-rerun sets=F "
                      "sets-if-true=F unless=F cuda-project ends (README.md, `cubincache lint`)");
    return st;
}

static enum cbc_status parse_text(struct lint_helpers *h, const char *text, size_t len,
                                  const char *origin, struct cbc_err *err)
{
    unsigned line = 0;
    size_t p = 0;
    while (p < len) {
        line++;
        size_t e = p;
        while (e < len && text[e] != '\n')
            e++;
        size_t q = p;
        struct helper_fx x;
        memset(&x, 0, sizeof x);
        bool have_call = false;
        while (q < e) {
            while (q < e && (text[q] == ' ' || text[q] == '\t' || text[q] == '\r'))
                q++;
            if (q >= e || text[q] == '#')
                break;
            size_t wb = q;
            while (q < e && text[q] != ' ' && text[q] != '\t' && text[q] != '\r')
                q++;
            const char *w = text + wb;
            size_t wn = q - wb;
            if (!have_call) {
                bool method;
                if (!call_ok(w, wn, &method))
                    return fx_free(&x), parse_error(err, origin, line, "not a call", w, wn);
                x.call = cbc_strndup(w, wn);
                x.method = method;
                const char *cut = method ? memchr(w, '.', wn) : NULL;
                if (method) {
                    x.recv = cbc_strndup(w, (size_t)(cut - w));
                    x.name = cbc_strndup(cut + 1, wn - (size_t)(cut + 1 - w));
                } else {
                    size_t k = wn;
                    while (k > 0 && w[k - 1] != ':')
                        k--;
                    x.name = cbc_strndup(w + k, wn - k);
                }
                x.origin = cbc_asprintf("%s:%u", origin, line);
                if (!x.call || !x.name || (method && !x.recv) || !x.origin)
                    return fx_free(&x), cbc_err_oom(err);
                have_call = true;
                continue;
            }
            const char *eq = memchr(w, '=', wn);
            size_t kn = eq ? (size_t)(eq - w) : wn;
            const char *v = eq ? eq + 1 : NULL;
            size_t vn = eq ? wn - kn - 1 : 0;
            bool plus = kn > 0 && w[kn - 1] == '+';
            size_t kn2 = plus ? kn - 1 : kn;
#define KEY(s) (kn2 == sizeof(s) - 1 && !memcmp(w, s, kn2))
            bool bad = false, ok = true;
            if (KEY("type") && v && !plus) {
                bool m;
                if (!call_ok(v, vn, &m) || m)
                    bad = true;
                else
                    ok = (x.type = cbc_strndup(v, vn)) != NULL;
            } else if (KEY("reads") && v && !plus) {
                ok = add_list(&x.reads, v, vn, var_name_ok, &bad);
            } else if (KEY("declares") && v && !plus) {
                ok = add_list(&x.declares, v, vn, var_name_ok, &bad);
            } else if (KEY("nvcc-declares") && v && !plus) {
                ok = add_list(&x.nvcc_declares, v, vn, var_name_ok, &bad);
            } else if (KEY("sources") && v && vn == 3 && !memcmp(v, "arg", 3)) {
                x.sources = plus ? FX_ADD : FX_SET;
            } else if (KEY("includes") && v && vn == 3 && !memcmp(v, "arg", 3)) {
                x.includes = plus ? FX_ADD : FX_SET;
            } else if (KEY("watch") && v && vn == 3 && !memcmp(v, "arg", 3)) {
                x.watch = plus ? FX_ADD : FX_SET;
            } else if (KEY("default-sources") && v && !plus) {
                ok = add_list(&x.default_sources, v, vn, path_ok, &bad);
            } else if (KEY("default-includes") && v && !plus) {
                ok = add_list(&x.default_includes, v, vn, path_ok, &bad);
            } else if (KEY("declares-sources") && !v && !plus) {
                x.declares_sources = true;
            } else if (KEY("declares-watch") && !v && !plus) {
                x.declares_watch = true;
            } else if (KEY("nvcc") && !v && !plus) {
                x.nvcc = true;
            } else if (KEY("prints-rerun") && !v && !plus) {
                x.prints_rerun = true;
            } else if (KEY("cuda-project") && !v && !plus) {
                x.cuda_project = true;
            } else if (KEY("ends") && !v && !plus) {
                x.ends = true;
            } else if ((KEY("sets") || KEY("sets-if-true") || KEY("unless") || KEY("nvcc-if")) &&
                       v && !plus) {
                char **slot = KEY("sets") ? &x.sets : KEY("sets-if-true") ? &x.sets_if_true
                              : KEY("unless") ? &x.unless : &x.nvcc_if;
                if (!flag_ok(v, vn) || *slot)
                    bad = true;
                else
                    ok = (*slot = cbc_strndup(v, vn)) != NULL;
            } else {
                return fx_free(&x), parse_error(err, origin, line, "unknown effect", w, wn);
            }
#undef KEY
            if (!ok)
                return fx_free(&x), cbc_err_oom(err);
            if (bad)
                return fx_free(&x), parse_error(err, origin, line, "bad value in", w, wn);
        }
        if (have_call) {
            if (!cbc_grow(&h->v, h->n, &h->cap, sizeof *h->v, 32))
                return fx_free(&x), cbc_err_oom(err);
            h->v[h->n++] = x;
        }
        p = e < len ? e + 1 : e;
    }
    return CBC_OK;
}

enum cbc_status lint_helpers_load(struct lint_helpers **out, const char *const *files, size_t n,
                                  struct cbc_err *err)
{
    struct lint_helpers *h = calloc(1, sizeof *h);
    if (!h)
        return cbc_err_oom(err);
    enum cbc_status st = parse_text(h, builtin, sizeof builtin - 1, "(built-in helpers)", err);
    for (size_t i = 0; i < n && st == CBC_OK; i++) {
        uint8_t *data = NULL;
        size_t len = 0;
        st = cbc_file_read_max(files[i], 1u << 20, &data, &len, err);
        if (st == CBC_OK && memchr(data, '\0', len))
            st = cbc_err_set(err, CBC_E_USAGE, "'%s' is not a text file of helper models",
                             files[i]);
        if (st == CBC_OK)
            st = parse_text(h, (const char *)data, len, files[i], err);
        free(data);
    }
    if (st != CBC_OK) {
        lint_helpers_free(h);
        return st;
    }
    *out = h;
    return CBC_OK;
}

/* The last model of `call` wins: a user's file comes after the built-ins
 * and replaces a model it repeats. */
const struct helper_fx *lint_helpers_call(const struct lint_helpers *h, const char *call)
{
    for (size_t i = h ? h->n : 0; i-- > 0;)
        if (!h->v[i].method && !strcmp(h->v[i].call, call))
            return &h->v[i];
    return NULL;
}

const struct helper_fx *lint_helpers_method(const struct lint_helpers *h, const char *type,
                                            const char *method, size_t mlen)
{
    for (size_t i = h ? h->n : 0; i-- > 0;)
        if (h->v[i].method && !strcmp(h->v[i].recv, type) && strlen(h->v[i].name) == mlen &&
            !memcmp(h->v[i].name, method, mlen))
            return &h->v[i];
    return NULL;
}

/* Whether some model's call starts with `crate::`: the script names a
 * modelled crate. */
bool lint_helpers_crate(const struct lint_helpers *h, const char *name, size_t len)
{
    for (size_t i = 0; h && i < h->n; i++)
        if (!strncmp(h->v[i].call, name, len) && h->v[i].call[len] == ':')
            return true;
    return false;
}
