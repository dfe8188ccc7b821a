/* settings.c: the table of settings.h, and how a store resolves one:
 * the environment, else the key in v1/config, else the default, the value
 * checked by the table's checker (a bad one is still the value, reported
 * to whoever asks; its user falls back to the default, or refuses); the
 * reading of v1/config, and the two settings the store itself keeps once
 * resolved (the permissions of new files, the size limit). It calls no
 * other file of the store.
 */
#include "settings.h"
#include "store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *check_size(const char *v)
{
    uint64_t x;
    return cbc_parse_size(v, &x) && x > 0 ? NULL : "expected a size such as 5G, 500M or 1.5GiB";
}

static const char *check_umask(const char *v)
{
    return cbc_perm_parse_umask(v) >= 0 ? NULL : "expected an octal umask such as 002 or 022";
}

static const char *check_remote(const char *v)
{
    struct cbc_remote_cfg cfg;
    static __thread struct cbc_err e;
    enum cbc_status st = cbc_remote_parse(v, &cfg, &e);
    if (st == CBC_OK)
        cbc_remote_cfg_release(&cfg);
    return st == CBC_OK || st == CBC_E_NOT_FOUND ? NULL : e.msg;
}

static const char *check_bool(const char *v)
{
    return !strcmp(v, "") || !strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "true") ||
                   !strcmp(v, "false") || !strcmp(v, "yes") || !strcmp(v, "no")
               ? NULL
               : "expected 1 or 0 (true or false)";
}

bool cbc_setting_on(const char *v)
{
    return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "yes"));
}

int cbc_setting_shared_jobs(const char *v)
{
    if (!v || !*v || !strcmp(v, "0"))
        return 0;
    if (!strcmp(v, "cpus")) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    char *end;
    long n = strtol(v, &end, 10);
    return *end || n < 1 || n > 1024 ? -1 : (int)n;
}

static const char *check_jobs(const char *v)
{
    return cbc_setting_shared_jobs(v) >= 0 ? NULL : "expected a number from 1 to 1024, cpus, or 0";
}
static const char *check_log(const char *v)
{
    return !*v || v[0] == '/' ? NULL : "expected an absolute path";
}

static const char *check_base(const char *v)
{
    return !strcmp(v, "auto") || !strcmp(v, "none") || v[0] == '/'
               ? NULL
               : "expected an absolute directory, none or auto";
}

static const char *check_ms(const char *v)
{
    char *end;
    long x = strtol(v, &end, 10);
    return *v && !*end && x >= 0 ? NULL : "expected milliseconds";
}

const struct cbc_setting_def cbc_settings[CBC_SET_COUNT] = {
    [CBC_SET_CACHE_DIR] = {"cache_dir", "CUBINCACHE_DIR", NULL,
                           "$XDG_CACHE_HOME/cubincache, else ~/.cache/cubincache",
                           "where the cache is (also --cache-dir)", false, false, NULL},
    [CBC_SET_MAX_SIZE] = {"max_size", "CUBINCACHE_MAXSIZE", "max_size", "5G",
                          "the size the cache is trimmed to (least recently used first)", false,
                          false, check_size},
    [CBC_SET_UMASK] = {"umask", "CUBINCACHE_UMASK", "umask", "",
                       "the umask of what the cache creates (002 to share it with a group); "
                       "empty: the process's",
                       false, false, check_umask},
    [CBC_SET_REMOTE] = {"remote", "CUBINCACHE_REMOTE", "remote", "",
                        "a second-level cache (redis://HOST[:PORT][/DB][|attrs] or "
                        "http[s]://HOST[:PORT]/PATH[|attrs], also --remote); empty or none: none",
                        false, false, check_remote},
    [CBC_SET_DISABLE] = {"disable", "CUBINCACHE_DISABLE", NULL, "0",
                         "1: compile without the cache", false, false, check_bool},
    [CBC_SET_BASE_DIR] = {"base_dir", "CUBINCACHE_BASEDIR", "base_dir", "auto",
                          "paths under it are keyed relative to it, so every checkout of a tree "
                          "shares entries: an absolute directory, none, or auto (the "
                          "version-control checkout holding the source)",
                          false, false, check_base},
    [CBC_SET_READ_ONLY] = {"read_only", "CUBINCACHE_READONLY", "read_only", "0",
                           "1: use what the cache holds; store no compile in it (nor in the remote)",
                           false, false, check_bool},
    [CBC_SET_RECACHE] = {"recache", "CUBINCACHE_RECACHE", "recache", "0",
                         "1: serve no hits: compile everything again and store the results",
                         false, false, check_bool},
    [CBC_SET_LOG_FILE] = {"log_file", "CUBINCACHE_LOGFILE", "log_file", "",
                          "a file (absolute path) that gets one line per launcher call and per "
                          "build target: hit or miss, and why",
                          false, false, check_log},
    [CBC_SET_DEBUG] = {"debug", "CUBINCACHE_DEBUG", "debug", "0",
                       "1: the log_file lines on stderr too, and the launcher's notes",
                       false, false, check_bool},
    [CBC_SET_SHARED_JOBS] = {"shared_jobs", "CUBINCACHE_SHARED_JOBS", "shared_jobs", "0",
                             "opt-in: at most this many compiles at once across every build of "
                             "this user without a jobserver (a number, or cpus); 0: none",
                             false, false, check_jobs},
    [CBC_SET_BUNDLE_PATH] = {"bundle_path", "CUBINCACHE_BUNDLE_PATH", NULL, "",
                             "directories (':'-separated) where programs look for installed "
                             "bundles before the installed ones",
                             true, false, NULL},
    [CBC_SET_LIBCUDA] = {"libcuda", "CUBINCACHE_LIBCUDA", NULL, "libcuda.so.1",
                         "the CUDA driver library programs open (test builds only)", true, true,
                         NULL},
    [CBC_SET_PUBLISH_DELAY] = {"test_publish_delay_ms", "CUBINCACHE_TEST_PUBLISH_DELAY_MS", NULL,
                               "0", "stall between writing a file and publishing it (tests)",
                               false, true, check_ms},
};

int cbc_setting_find(const char *name)
{
    for (int i = 0; i < CBC_SET_COUNT; i++)
        if (!strcmp(cbc_settings[i].name, name))
            return i;
    return -1;
}

const char *cbc_setting_origin(enum cbc_setting id, enum cbc_setting_from from,
                               const char *config_path, char *buf, size_t len)
{
    switch (from) {
    case CBC_FROM_DEFAULT: cbc_fmt(buf, len, "default"); break;
    case CBC_FROM_CONFIG: cbc_fmt(buf, len, "%s", config_path); break;
    case CBC_FROM_ENV: cbc_fmt(buf, len, "%s", cbc_settings[id].env); break;
    case CBC_FROM_OPTION: cbc_fmt(buf, len, "the command line"); break;
    }
    return buf;
}

enum cbc_status cbc_store_setting(struct cbc_store *s, enum cbc_setting id,
                                  struct cbc_setting_value *out, struct cbc_err *err)
{
    const struct cbc_setting_def *d = &cbc_settings[id];
    if (!s->setting_read[id]) {
        struct cbc_setting_value *v = &s->settings[id];
        memset(v, 0, sizeof *v);
        const char *e = d->env ? getenv(d->env) : NULL;
        char c[sizeof v->value] = "";
        if (d->config_key)
            cbc_st_config_value(s, d->config_key, c, sizeof c);
        if (e && *e) {
            cbc_fmt(v->value, sizeof v->value, "%s", e);
            v->from = CBC_FROM_ENV;
        } else if (c[0]) {
            cbc_fmt(v->value, sizeof v->value, "%s", c);
            v->from = CBC_FROM_CONFIG;
        } else {
            cbc_fmt(v->value, sizeof v->value, "%s", d->def);
        }
        const char *bad = v->from != CBC_FROM_DEFAULT && d->check ? d->check(v->value) : NULL;
        if (bad)
            cbc_fmt(v->bad, sizeof v->bad, "%s", bad);
        s->setting_read[id] = true;
    }
    *out = s->settings[id];
    if (!out->bad[0])
        return CBC_OK;
    if (out->from == CBC_FROM_ENV)
        return cbc_err_set(err, CBC_E_USAGE, "%s='%s': %s", d->env, out->value, out->bad);
    return cbc_err_set(err, CBC_E_USAGE, "'%s' in %s/config: %s", d->config_key, s->root,
                       out->bad);
}

/* ---- the config file, and what the store keeps of it ---------------------- */

/* The value of `key` in v1/config ("key = value" lines), or "" when absent. */
void cbc_st_config_value(struct cbc_store *s, const char *key, char *out, size_t len)
{
    out[0] = '\0';
    uint8_t *data = NULL;
    size_t n = 0;
    if (cbc_read_at(s->fd, s->root, "config", SMALL_MAX, &data, &n, NULL) != CBC_OK)
        return;
    size_t kl = strlen(key);
    for (const char *p = (const char *)data; p && *p;) {
        const char *eol = strchr(p, '\n');
        size_t ll = eol ? (size_t)(eol - p) : strlen(p);
        if (ll > kl && strncmp(p, key, kl) == 0 && (p[kl] == ' ' || p[kl] == '=')) {
            const char *v = p + kl;
            while (v < p + ll && (*v == ' ' || *v == '='))
                v++;
            size_t vl = (size_t)(p + ll - v);
            while (vl && (v[vl - 1] == ' ' || v[vl - 1] == '\r'))
                vl--;
            if (vl < len) {
                memcpy(out, v, vl);
                out[vl] = '\0';
            }
        }
        p = eol ? eol + 1 : NULL;
    }
    free(data);
}

const struct cbc_perm *cbc_st_perm(struct cbc_store *s)
{
    if (!s->perm_read) {
        s->perm_read = true;
        struct cbc_setting_value v;
        cbc_store_setting(s, CBC_SET_UMASK, &v, NULL);
        s->perm.umask = cbc_perm_parse_umask(v.value);
    }
    return &s->perm;
}

uint64_t cbc_store_max_size(struct cbc_store *s)
{
    if (s->max_size)
        return s->max_size;
    struct cbc_setting_value v;
    cbc_store_setting(s, CBC_SET_MAX_SIZE, &v, NULL);
    uint64_t x = DEFAULT_MAX_SIZE;
    if (!cbc_parse_size(v.value, &x) || x == 0)
        x = DEFAULT_MAX_SIZE;
    s->max_size = x;
    return x;
}
