/* key.c: result and direct keys.
 *
 * Each input is fed as a tagged, length-prefixed field (cbc_hasher_*), so
 * no two different input sets can produce the same byte stream. The tag
 * values are part of the on-disk format: changing one is a CBC_KEY_VERSION
 * bump. Test vectors in tests/unit/test_key.c freeze the result.
 */
#include "key.h"

#include <stdlib.h>
#include <string.h>

enum {
    TAG_VERSION = 1,
    TAG_KIND = 2,
    TAG_TARGET = 3,
    TAG_SOURCE = 4,
    TAG_SOURCE_HASH = 5,
    TAG_DEP_PATH = 6,
    TAG_DEP_HASH = 7,
    TAG_NVCC = 8,
    TAG_HOST = 9,
    TAG_FLAG = 10,
    TAG_ENV = 11,
    TAG_CWD = 12,
    TAG_NDEPS = 13,
    TAG_NFLAGS = 14,
    TAG_NENV = 15,
};

/* A path or a flag as keyed: the base directory spelled "@BASE@". */
static void feed_path(struct cbc_hasher *h, uint32_t tag, const char *base, const char *s)
{
    if (!base || !s) {
        cbc_hasher_str(h, tag, s);
        return;
    }
    struct cbc_buf b = {0};
    cbc_base_template(base, s, strlen(s), &b);
    if (b.oom)
        abort(); /* a path's worth of bytes; nothing sensible to do without them */
    cbc_hasher_str(h, tag, b.p ? b.p : "");
    cbc_buf_release(&b);
}

static void feed_common(struct cbc_hasher *h, const struct cbc_key_inputs *in, const char *kind)
{
    char name[CBC_TARGET_NAME_MAX];
    cbc_hasher_u64(h, TAG_VERSION, CBC_KEY_VERSION);
    cbc_hasher_str(h, TAG_KIND, kind);
    cbc_hasher_str(h, TAG_TARGET, cbc_target_name(&in->target, name));
    feed_path(h, TAG_SOURCE, in->base, in->source);
    cbc_hasher_hash(h, TAG_SOURCE_HASH, &in->source_hash);
    cbc_hasher_hash(h, TAG_NVCC, &in->nvcc_id);
    cbc_hasher_hash(h, TAG_HOST, &in->host_id);
    cbc_hasher_u64(h, TAG_NFLAGS, in->n_flags);
    for (size_t i = 0; i < in->n_flags; i++)
        feed_path(h, TAG_FLAG, in->base, in->flags[i]);
    cbc_hasher_u64(h, TAG_NENV, in->env.n);
    for (size_t i = 0; i < in->env.n; i++) {
        cbc_hasher_str(h, TAG_ENV, in->env.name[i]);
        cbc_hasher_str(h, TAG_ENV, in->env.value[i]);
    }
}

void cbc_key_result(const struct cbc_key_inputs *in, struct cbc_hash *out)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        abort(); /* 200 bytes; nothing sensible to do without them */
    feed_common(h, in, "result");
    cbc_hasher_u64(h, TAG_NDEPS, in->n_deps);
    for (size_t i = 0; i < in->n_deps; i++) {
        feed_path(h, TAG_DEP_PATH, in->base, in->deps[i].path);
        cbc_hasher_hash(h, TAG_DEP_HASH, &in->deps[i].hash);
    }
    cbc_hasher_digest(h, out);
    cbc_hasher_free(h);
}

void cbc_key_direct(const struct cbc_key_inputs *in, struct cbc_hash *out)
{
    struct cbc_hasher *h = cbc_hasher_new();
    if (!h)
        abort();
    feed_common(h, in, "direct");
    feed_path(h, TAG_CWD, in->base, in->cwd);
    cbc_hasher_digest(h, out);
    cbc_hasher_free(h);
}

bool cbc_key_inputs_make(const struct cbc_key_now *now, const struct cbc_target *t,
                         const struct cbc_dep *deps, size_t n_deps, struct cbc_key_inputs *out)
{
    memset(out, 0, sizeof *out);
    if (!now->source_hash || !now->nvcc_id || !now->host_id)
        return false;
    out->target = *t;
    out->source = now->source;
    out->source_hash = *now->source_hash;
    out->deps = deps;
    out->n_deps = n_deps;
    out->nvcc_id = *now->nvcc_id;
    out->host_id = *now->host_id;
    out->flags = now->flags;
    out->n_flags = now->n_flags;
    if (now->env)
        out->env = *now->env;
    out->cwd = now->cwd;
    out->base = now->base;
    return true;
}

void cbc_key_env_read(char *const *extra, size_t n_extra, struct cbc_env *env)
{
    memset(env, 0, sizeof *env);
    for (size_t i = 0; i < CBC_KEY_ENV_COUNT; i++)
        cbc_env_set(env, cbc_key_env_names[i], getenv(cbc_key_env_names[i]));
    /* a profile naming more than CBC_ENV_MAX variables is refused where it
     * is read (toolid.c), so every name fits */
    for (size_t i = 0; i < n_extra; i++)
        cbc_env_set(env, extra[i], getenv(extra[i]));
}

const char *cbc_flags_ccbin(char *const *flags, size_t n)
{
    const char *found = NULL; /* nvcc takes the last one */
    for (size_t i = 0; i < n; i++) {
        const char *f = flags[i];
        if ((!strcmp(f, "-ccbin") || !strcmp(f, "--compiler-bindir")) && i + 1 < n)
            found = flags[++i];
        else if (!strncmp(f, "-ccbin=", 7))
            found = f + 7;
        else if (!strncmp(f, "--compiler-bindir=", 18))
            found = f + 18;
    }
    return found;
}

bool cbc_flags_keep(char *const *flags, size_t n)
{
    static const char *const opts[] = {"-keep", "--keep", "-save-temps", "--save-temps",
                                       "-keep-dir", "--keep-dir"};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < CBC_ARRAY_LEN(opts); k++)
            if (flags[i] && !strncmp(flags[i], opts[k], strlen(opts[k])))
                return true;
    return false;
}

bool cbc_path_plain(const char *path)
{
    return path && *path &&
           path[strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./+-")] ==
               '\0';
}
