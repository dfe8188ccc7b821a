/* toolid.c: what nvcc "is", for the key: its version, the content of the
 * binaries it runs (nvcc, cicc, ptxas, fatbinary, nvlink, cudafe++, its
 * profile, libdevice) and of the host compiler it preprocesses with, and
 * which environment variables its nvcc.profile reads (they are keyed).
 *
 * Finding out costs three nvcc runs (--version, --list-gpu-code, --dryrun)
 * and hashing ~200 MB, so the result is cached in the tools directory under
 * a name derived from the nvcc path, the -ccbin choice and PATH. The cached
 * record lists every file it depends on with its stat stamp; a later run
 * stats those files and, when all match, uses the record without running
 * anything. Any changed stamp recomputes everything. A wrapper script given
 * as nvcc works: the toolkit is located from nvcc's own --dryrun TOP.
 */
#include "key.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOOLID_FORMAT 2 /* 2: the variables the profile reads */

char *cbc_nvcc_find(const char *explicit_path, struct cbc_err *err)
{
    const char *env = getenv("NVCC");
    const char *cand = explicit_path && *explicit_path ? explicit_path : env && *env ? env : NULL;
    if (cand) {
        char *p = cbc_which(cand);
        if (p && access(p, X_OK) == 0)
            return p;
        free(p);
        cbc_err_set(err, CBC_E_NVCC, "nvcc '%s' (from %s) is not an executable file", cand,
                    explicit_path && *explicit_path ? "--nvcc" : "$NVCC");
        cbc_err_hint(err, "point %s at the CUDA toolkit's nvcc, e.g. /usr/local/cuda/bin/nvcc",
                     explicit_path && *explicit_path ? "--nvcc" : "NVCC");
        return NULL;
    }
    char *p = cbc_which("nvcc");
    if (p)
        return p;
    if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
        return cbc_strdup("/usr/local/cuda/bin/nvcc");
    cbc_err_set(err, CBC_E_NVCC,
                "nvcc not found (looked at --nvcc, $NVCC, PATH and /usr/local/cuda/bin/nvcc)");
    cbc_err_hint(err, "install the CUDA toolkit, or pass --nvcc /path/to/nvcc");
    return NULL;
}

void cbc_toolchain_release(struct cbc_toolchain *tc)
{
    free(tc->nvcc);
    free(tc->version);
    free(tc->top);
    free(tc->host_cc);
    free(tc->supported);
    for (size_t i = 0; i < tc->n_profile_env; i++)
        free(tc->profile_env[i]);
    free(tc->profile_env);
    memset(tc, 0, sizeof *tc);
}

/* ---- nvcc.profile --------------------------------------------------------- */

/* nvcc sets these itself before it reads the profile (_HERE_, _SPACE_,
 * _TARGET_DIR_, ...): the environment's value is never used. */
static bool nvcc_internal(const char *name, size_t n)
{
    return n >= 2 && name[0] == '_' && name[n - 1] == '_';
}

static bool name_in(char **v, size_t n, const char *name, size_t len)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(v[i]) == len && !strncmp(v[i], name, len))
            return true;
    return false;
}

static bool add_name(char ***v, size_t *n, size_t *cap, const char *name, size_t len)
{
    if (name_in(*v, *n, name, len))
        return true;
    char *s = cbc_strndup(name, len);
    if (!s || !cbc_grow(v, *n, cap, sizeof **v, 16)) {
        free(s);
        return false;
    }
    (*v)[(*n)++] = s;
    return true;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

enum cbc_status cbc_profile_env_parse(const char *text, size_t len, const char *name,
                                      char ***out, size_t *n_out, struct cbc_err *err)
{
    char **reads = NULL, **set = NULL;
    size_t nr = 0, cr = 0, ns = 0, cs = 0;
    bool ok = true;
    for (const char *p = text, *end = text + len; ok && p < end;) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *le = eol ? eol : end, *q = p;
        p = eol ? eol + 1 : end;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        const char *nm = q;
        while (q < le && (*q == '_' || (*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
                          (q > nm && *q >= '0' && *q <= '9')))
            q++;
        size_t nl = (size_t)(q - nm);
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (!nl || q >= le || *nm == '#')
            continue; /* blank, a comment, or not an assignment */
        bool reads_env = (q + 1 < le && (q[0] == '+' || q[0] == '?') && q[1] == '=') ||
                         (q + 1 < le && q[0] == '=' && q[1] == '+');
        if (!reads_env && q[0] != '=')
            continue;
        const char *val = q + (reads_env || (q + 1 < le && q[1] == '+') ? 2 : 1);
        /* $(X) in the value: read from the environment unless set above */
        for (const char *r = val; ok && r + 3 < le; r++) {
            if (r[0] != '$' || r[1] != '(')
                continue;
            const char *x = r + 2, *xe = memchr(x, ')', (size_t)(le - x));
            if (!xe)
                break;
            size_t xl = (size_t)(xe - x);
            if (xl && !nvcc_internal(x, xl) && !name_in(set, ns, x, xl))
                ok = add_name(&reads, &nr, &cr, x, xl);
            r = xe;
        }
        if (ok && reads_env && !nvcc_internal(nm, nl))
            ok = add_name(&reads, &nr, &cr, nm, nl);
        if (ok)
            ok = add_name(&set, &ns, &cs, nm, nl);
    }
    for (size_t i = 0; i < ns; i++)
        free(set[i]);
    free(set);
    /* keyed through what they resolve (common/inputs.c) */
    size_t w = 0;
    for (size_t i = 0; i < nr; i++) {
        if (!strcmp(reads[i], "PATH") || !strcmp(reads[i], "LD_LIBRARY_PATH"))
            free(reads[i]);
        else
            reads[w++] = reads[i];
    }
    nr = w;
    if (!ok) {
        for (size_t i = 0; i < nr; i++)
            free(reads[i]);
        free(reads);
        return cbc_err_oom(err);
    }
    if (nr + CBC_KEY_ENV_COUNT > CBC_ENV_MAX) {
        for (size_t i = 0; i < nr; i++)
            free(reads[i]);
        free(reads);
        cbc_err_set(err, CBC_E_NVCC, "'%s' reads %zu environment variables; cubincache keys at "
                    "most %d", name, nr, CBC_ENV_MAX - CBC_KEY_ENV_COUNT);
        cbc_err_hint(err, "report this toolkit's nvcc.profile to cubincache");
        return CBC_E_NVCC;
    }
    if (nr)
        qsort(reads, nr, sizeof *reads, cmp_name);
    *out = reads;
    *n_out = nr;
    return CBC_OK;
}

static enum cbc_status read_profile_env(struct cbc_toolchain *tc, struct cbc_err *err)
{
    char *p = cbc_path_join(tc->top, "bin/nvcc.profile");
    if (!p)
        return cbc_err_oom(err);
    uint8_t *text = NULL;
    size_t len = 0;
    enum cbc_status st = CBC_OK;
    if (cbc_is_file(p)) {
        st = cbc_file_read_max(p, 1u << 20, &text, &len, err);
        if (st == CBC_OK)
            st = cbc_profile_env_parse((const char *)text, len, p, &tc->profile_env,
                                       &tc->n_profile_env, err);
    }
    free(text);
    free(p);
    return st;
}

/* ---- running nvcc -------------------------------------------------------- */

static enum cbc_status run_nvcc(const char *nvcc, char *const extra[], size_t n_extra, char **out,
                                struct cbc_err *err)
{
    char *argv[16];
    size_t k = 0;
    argv[k++] = (char *)nvcc;
    for (size_t i = 0; i < n_extra && k < CBC_ARRAY_LEN(argv) - 1; i++)
        argv[k++] = extra[i];
    argv[k] = NULL;
    int code = -1;
    enum cbc_status st = cbc_proc_run_capture(argv, out, &code, err);
    if (st != CBC_OK)
        return st;
    if (code != 0) {
        char tail[400];
        snprintf(tail, sizeof tail, "%s", *out);
        free(*out);
        *out = NULL;
        cbc_err_set(err, CBC_E_NVCC, "'%s %s' failed with exit code %d: %s", nvcc,
                    n_extra ? extra[0] : "", code, tail);
        cbc_err_hint(err, "check that '%s' is a working CUDA toolkit nvcc", nvcc);
        return CBC_E_NVCC;
    }
    return CBC_OK;
}

static char *parse_version(const char *text)
{
    /* "Cuda compilation tools, release 13.0, V13.0.88" */
    const char *v = strstr(text, ", V");
    if (!v)
        return NULL;
    v += 3;
    size_t n = strspn(v, "0123456789.");
    return n ? cbc_strndup(v, n) : NULL;
}

static enum cbc_status parse_gpu_codes(const char *text, unsigned **out, size_t *n,
                                       struct cbc_err *err)
{
    unsigned *v = NULL;
    size_t count = 0;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[32];
        if (len < sizeof line) {
            memcpy(line, p, len);
            line[len] = '\0';
            struct cbc_target t;
            if (cbc_target_parse(line, &t) && t.kind == CBC_KIND_SASS && t.variant == 0) {
                unsigned *nv = cbc_reallocarray(v, count + 1, sizeof *nv);
                if (!nv) {
                    free(v);
                    return cbc_err_oom(err);
                }
                v = nv;
                v[count++] = t.arch;
            }
        }
        p = eol ? eol + 1 : p + len;
    }
    if (count == 0) {
        free(v);
        return cbc_err_set(err, CBC_E_NVCC, "'nvcc --list-gpu-code' listed no sm_XY target");
    }
    *out = v;
    *n = count;
    return CBC_OK;
}

/* First word of a --dryrun command line, unquoted. */
static char *first_word(const char *s)
{
    while (*s == ' ')
        s++;
    if (*s == '"') {
        const char *e = strchr(s + 1, '"');
        return e ? cbc_strndup(s + 1, (size_t)(e - s - 1)) : NULL;
    }
    return cbc_strndup(s, strcspn(s, " \n"));
}

static enum cbc_status parse_dryrun(const char *text, char **top, char **host, struct cbc_err *err)
{
    *top = *host = NULL;
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (len > 3 && strncmp(p, "#$ ", 3) == 0) {
            const char *cmd = p + 3;
            if (!*top && strncmp(cmd, "TOP=", 4) == 0) {
                char *raw = cbc_strndup(cmd + 4, len - 7);
                *top = raw ? cbc_path_abs(raw) : NULL;
                free(raw);
            } else if (!*host) {
                char *line = cbc_strndup(cmd, len - 3);
                if (line && strstr(line, " -E ") && strstr(line, "__CUDA_ARCH__"))
                    *host = first_word(line);
                free(line);
            }
        }
        p = eol ? eol + 1 : p + len;
    }
    if (!*top || !*host) {
        free(*top);
        free(*host);
        *top = *host = NULL;
        return cbc_err_set(err, CBC_E_NVCC,
                           "cannot tell from 'nvcc --dryrun' where the toolkit (TOP) or the host "
                           "compiler is");
    }
    return CBC_OK;
}

/* ---- the cached record ------------------------------------------------- */

struct file_rec {
    char *path;
    struct cbc_stamp stamp;
};

static void stamp_to_json(cJSON *o, const struct cbc_stamp *s)
{
    char b[32];
#define PUT(f)                                                                                     \
    snprintf(b, sizeof b, "%llu", (unsigned long long)s->f);                                       \
    cJSON_AddStringToObject(o, #f, b)
    PUT(size);
    PUT(mtime_ns);
    PUT(ctime_ns);
    PUT(ino);
    PUT(dev);
#undef PUT
}

static bool u64_field(const cJSON *o, const char *k, uint64_t *v)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(j))
        return false;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(j->valuestring, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

static bool stamp_from_json(const cJSON *o, struct cbc_stamp *s)
{
    return u64_field(o, "size", &s->size) && u64_field(o, "mtime_ns", &s->mtime_ns) &&
           u64_field(o, "ctime_ns", &s->ctime_ns) && u64_field(o, "ino", &s->ino) &&
           u64_field(o, "dev", &s->dev);
}

static const char *str_field(const cJSON *o, const char *k)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(j) ? j->valuestring : NULL;
}

/* Fills tc from a record if every file it names is unchanged. */
static bool load_cached(const struct cbc_record_cache *cache, const struct cbc_hash *id,
                        struct cbc_toolchain *tc)
{
    uint8_t *data;
    size_t len;
    if (cache->get(cache->ctx, id, &data, &len) != CBC_OK)
        return false;
    cJSON *root = cJSON_ParseWithLength((const char *)data, len);
    free(data);
    if (!root)
        return false;
    bool ok = false;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    const cJSON *sup = cJSON_GetObjectItemCaseSensitive(root, "supported");
    uint64_t recorded = 0;
    if (!cJSON_IsNumber(fmt) || fmt->valueint != TOOLID_FORMAT || !cJSON_IsArray(files) ||
        !cJSON_IsArray(sup) || !u64_field(root, "recorded_ns", &recorded))
        goto out;
    const cJSON *f;
    cJSON_ArrayForEach(f, files)
    {
        struct cbc_stamp want, now;
        const char *p = str_field(f, "path");
        if (!p || !stamp_from_json(f, &want) || !cbc_stamp_of(p, &now) ||
            !cbc_stamp_eq(&want, &now) || !cbc_stamp_trustworthy(&now, recorded))
            goto out;
    }
    const char *version = str_field(root, "version"), *top = str_field(root, "top"),
               *host = str_field(root, "host_cc");
    struct cbc_hash nid, hid;
    if (!version || !top || !host || !cbc_hash_from_hex(str_field(root, "nvcc_id"), &nid) ||
        !cbc_hash_from_hex(str_field(root, "host_id"), &hid))
        goto out;
    size_t n = (size_t)cJSON_GetArraySize(sup);
    unsigned *v = n ? calloc(n, sizeof *v) : NULL;
    if (!v)
        goto out;
    size_t i = 0;
    cJSON_ArrayForEach(f, sup)
    {
        if (!cJSON_IsNumber(f) || f->valueint < 10) {
            free(v);
            goto out;
        }
        v[i++] = (unsigned)f->valueint;
    }
    const cJSON *penv = cJSON_GetObjectItemCaseSensitive(root, "profile_env");
    size_t np = cJSON_IsArray(penv) ? (size_t)cJSON_GetArraySize(penv) : 0;
    char **pv = calloc(np ? np : 1, sizeof *pv);
    size_t k = 0;
    cJSON_ArrayForEach(f, penv)
    {
        if (!pv || !cJSON_IsString(f) || np + CBC_KEY_ENV_COUNT > CBC_ENV_MAX ||
            !(pv[k] = cbc_strdup(f->valuestring)))
            break;
        k++;
    }
    if (!cJSON_IsArray(penv) || k != np) {
        for (size_t j = 0; j < k; j++)
            free(pv[j]);
        free(pv);
        free(v);
        goto out;
    }
    tc->profile_env = pv;
    tc->n_profile_env = np;
    tc->version = cbc_strdup(version);
    tc->top = cbc_strdup(top);
    tc->host_cc = cbc_strdup(host);
    tc->supported = v;
    tc->n_supported = n;
    tc->nvcc_id = nid;
    tc->host_id = hid;
    ok = tc->version && tc->top && tc->host_cc;
out:
    cJSON_Delete(root);
    return ok;
}

static void save_cached(const struct cbc_record_cache *cache, const struct cbc_hash *id,
                        const struct cbc_toolchain *tc, const struct file_rec *files,
                        size_t n_files, uint64_t recorded_ns)
{
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return;
    char hex[CBC_HASH_HEX_LEN + 1], b[32];
    cJSON_AddNumberToObject(root, "format", TOOLID_FORMAT);
    snprintf(b, sizeof b, "%llu", (unsigned long long)recorded_ns);
    cJSON_AddStringToObject(root, "recorded_ns", b);
    cJSON_AddStringToObject(root, "nvcc", tc->nvcc);
    cJSON_AddStringToObject(root, "version", tc->version);
    cJSON_AddStringToObject(root, "top", tc->top);
    cJSON_AddStringToObject(root, "host_cc", tc->host_cc);
    cbc_hash_hex(&tc->nvcc_id, hex);
    cJSON_AddStringToObject(root, "nvcc_id", hex);
    cbc_hash_hex(&tc->host_id, hex);
    cJSON_AddStringToObject(root, "host_id", hex);
    cJSON *sup = cJSON_AddArrayToObject(root, "supported");
    for (size_t i = 0; sup && i < tc->n_supported; i++)
        cJSON_AddItemToArray(sup, cJSON_CreateNumber(tc->supported[i]));
    cJSON *penv = cJSON_AddArrayToObject(root, "profile_env");
    for (size_t i = 0; penv && i < tc->n_profile_env; i++)
        cJSON_AddItemToArray(penv, cJSON_CreateString(tc->profile_env[i]));
    cJSON *arr = cJSON_AddArrayToObject(root, "files");
    for (size_t i = 0; arr && i < n_files; i++) {
        cJSON *o = cJSON_CreateObject();
        if (!o)
            break;
        cJSON_AddStringToObject(o, "path", files[i].path);
        stamp_to_json(o, &files[i].stamp);
        cJSON_AddItemToArray(arr, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (text)
        cache->put(cache->ctx, id, text, strlen(text)); /* a cache: failure is fine */
    free(text);
}

/* ---- identification ---------------------------------------------------- */

static const char *const toolkit_files[] = {
    "bin/nvcc",      "bin/ptxas",          "bin/fatbinary",
    "bin/nvlink",    "bin/cudafe++",       "bin/nvcc.profile",
    "nvvm/bin/cicc", "nvvm/libdevice/libdevice.10.bc",
};

static enum cbc_status hash_files(struct file_rec *files, size_t n, struct cbc_hash *out,
                                  const char *extra, struct cbc_err *err)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        return cbc_err_oom(err);
    if (extra)
        cbc_hasher_str(h, 1, extra);
    for (size_t i = 0; i < n; i++) {
        struct cbc_hash fh;
        enum cbc_status st = cbc_hash_file(files[i].path, &fh, NULL, err);
        if (st != CBC_OK) {
            cbc_hasher_free(h);
            return st;
        }
        cbc_hasher_str(h, 2, cbc_path_base(files[i].path));
        cbc_hasher_hash(h, 3, &fh);
    }
    cbc_hasher_digest(h, out);
    cbc_hasher_free(h);
    return CBC_OK;
}

static enum cbc_status identify(struct cbc_toolchain *tc, const char *ccbin, struct file_rec *files,
                                size_t *n_files, struct cbc_err *err)
{
    char *out = NULL;
    char *args_version[] = {"--version"};
    enum cbc_status st = run_nvcc(tc->nvcc, args_version, 1, &out, err);
    if (st != CBC_OK)
        return st;
    tc->version = parse_version(out);
    free(out);
    if (!tc->version)
        return cbc_err_set(err, CBC_E_NVCC, "'%s --version' did not print a version (', Vx.y.z')",
                           tc->nvcc);

    char *args_list[] = {"--list-gpu-code"};
    st = run_nvcc(tc->nvcc, args_list, 1, &out, err);
    if (st != CBC_OK)
        return st;
    st = parse_gpu_codes(out, &tc->supported, &tc->n_supported, err);
    free(out);
    if (st != CBC_OK)
        return st;

    char arch[32];
    snprintf(arch, sizeof arch, "-arch=sm_%u", tc->supported[0]);
    char *args_dry[8] = {"--dryrun", "-cubin", arch, "-o", "/dev/null", "cubincache-probe.cu"};
    size_t nd = 6;
    if (ccbin) {
        args_dry[nd++] = "-ccbin";
        args_dry[nd++] = (char *)ccbin;
    }
    st = run_nvcc(tc->nvcc, args_dry, nd, &out, err);
    if (st != CBC_OK)
        return st;
    char *host_word = NULL;
    st = parse_dryrun(out, &tc->top, &host_word, err);
    free(out);
    if (st == CBC_OK)
        st = read_profile_env(tc, err);
    if (st != CBC_OK) {
        free(host_word);
        return st;
    }
    tc->host_cc = cbc_which(host_word);
    if (!tc->host_cc) {
        cbc_err_set(err, CBC_E_NVCC, "nvcc's host compiler '%s' is not on PATH", host_word);
        free(host_word);
        cbc_err_hint(err, "install it, or name another with -- -ccbin PATH or NVCC_CCBIN");
        return CBC_E_NVCC;
    }
    free(host_word);

    /* nvcc as called (perhaps a wrapper), then the toolkit's binaries */
    size_t n = 0;
    char *abs_nvcc = cbc_path_abs(tc->nvcc);
    files[n++].path = abs_nvcc;
    for (size_t i = 0; i < CBC_ARRAY_LEN(toolkit_files); i++) {
        char *p = cbc_path_join(tc->top, toolkit_files[i]);
        if (p && cbc_is_file(p) && strcmp(p, abs_nvcc ? abs_nvcc : "") != 0)
            files[n++].path = p;
        else
            free(p);
    }
    size_t n_nvcc = n;
    files[n++].path = cbc_strdup(tc->host_cc);
    *n_files = n;
    for (size_t i = 0; i < n; i++) {
        if (!files[i].path)
            return cbc_err_oom(err);
        if (!cbc_stamp_of(files[i].path, &files[i].stamp))
            return cbc_err_set(err, CBC_E_NVCC, "cannot stat '%s'", files[i].path);
    }
    st = hash_files(files, n_nvcc, &tc->nvcc_id, tc->version, err);
    if (st == CBC_OK)
        st = hash_files(files + n_nvcc, 1, &tc->host_id, NULL, err);
    return st;
}

enum cbc_status cbc_toolchain_identify(const char *nvcc, const char *ccbin,
                                       const struct cbc_record_cache *cache,
                                       struct cbc_toolchain *tc, struct cbc_err *err)
{
    memset(tc, 0, sizeof *tc);
    tc->nvcc = cbc_strdup(nvcc);
    if (!tc->nvcc)
        return cbc_err_oom(err);

    bool have_id = false;
    struct cbc_hash id;
    if (cache) {
        struct cbc_hasher *h = cbc_hasher_new();
        char *abs = cbc_path_abs(nvcc);
        if (h && abs) {
            cbc_hasher_str(h, 1, abs);
            cbc_hasher_str(h, 2, ccbin);
            cbc_hasher_str(h, 3, getenv("NVCC_CCBIN"));
            cbc_hasher_str(h, 4, getenv("PATH"));
            cbc_hasher_digest(h, &id);
            have_id = true;
        }
        cbc_hasher_free(h);
        free(abs);
        if (have_id && load_cached(cache, &id, tc)) {
            tc->from_cache = true;
            snprintf(tc->label, sizeof tc->label, "nvcc %s", tc->version);
            return CBC_OK;
        }
    }

    struct file_rec files[CBC_ARRAY_LEN(toolkit_files) + 2];
    memset(files, 0, sizeof files);
    size_t n_files = 0;
    uint64_t started = cbc_now_ns();
    enum cbc_status st = identify(tc, ccbin, files, &n_files, err);
    if (st == CBC_OK) {
        snprintf(tc->label, sizeof tc->label, "nvcc %s", tc->version);
        if (have_id)
            save_cached(cache, &id, tc, files, n_files, started);
    }
    for (size_t i = 0; i < CBC_ARRAY_LEN(files); i++)
        free(files[i].path);
    if (st != CBC_OK) {
        char *keep = tc->nvcc;
        tc->nvcc = NULL;
        cbc_toolchain_release(tc);
        free(keep);
    }
    return st;
}
