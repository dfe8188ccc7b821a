/* spec.c: a remote's spec (remote.h): the URL and its |-separated
 * attributes, parsed into struct cbc_remote_cfg.
 *
 * Invariants: nothing half-parsed is left behind (the password least);
 * every message shows the spec without its password (`***`) and never the
 * bearer token; an attribute that does not apply to the URL's kind is
 * refused rather than ignored, so a typo never silently changes nothing.
 */
#include "remote.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cbc_remote_cfg_release(struct cbc_remote_cfg *c)
{
    free(c->host);
    free(c->socket);
    free(c->user);
    if (c->password)
        memset(c->password, 0, strlen(c->password));
    free(c->password);
    if (c->bearer_token)
        memset(c->bearer_token, 0, strlen(c->bearer_token));
    free(c->bearer_token);
    free(c->name);
    free(c->ns_name);
    free(c->path);
    free(c->ca_file);
    memset(c, 0, sizeof *c);
}

static bool parse_uint(const char *s, size_t n, uint64_t max, uint64_t *out)
{
    if (n == 0 || n > 19)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* "90", "90s", "30m", "12h", "7d" */
static bool parse_duration(const char *s, size_t n, uint64_t *out)
{
    uint64_t mul = 1;
    if (n > 0 && strchr("smhd", s[n - 1])) {
        mul = s[n - 1] == 's' ? 1 : s[n - 1] == 'm' ? 60 : s[n - 1] == 'h' ? 3600 : 86400;
        n--;
    }
    uint64_t v;
    if (!parse_uint(s, n, 100ull * 365 * 86400, &v))
        return false;
    *out = v * mul;
    return true;
}

/* "256M", "1GiB", "65536": within [1 KiB, 4 GiB] */
static bool parse_value_max(const char *s, size_t n, uint64_t *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    uint64_t v;
    if (!cbc_parse_size(buf, &v) || v < 1024 || v > (4ull << 30))
        return false;
    *out = v;
    return true;
}

static bool ns_name_ok(const char *s, size_t n)
{
    if (n == 0 || n > CBC_REMOTE_NAMESPACE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
            return false;
    return true;
}

/* An HTTP path as given: percent-encoded already, so only the characters
 * a URL path may hold, and no "." or ".." segment. */
static bool http_path_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr("/-._~!$&'()*+,;=:@%", c))
            return false;
        if (c == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
                         !isxdigit((unsigned char)s[i + 2])))
            return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '/')
            continue;
        size_t e = i + 1;
        while (e < n && s[e] != '/')
            e++;
        size_t sl = e - i - 1;
        if ((sl == 1 && s[i + 1] == '.') || (sl == 2 && s[i + 1] == '.' && s[i + 2] == '.'))
            return false;
    }
    return true;
}

static char *pct_decode(const char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2])) {
            char hex[3] = {s[i + 1], s[i + 2], 0};
            o[k++] = (char)strtol(hex, NULL, 16);
            i += 2;
        } else {
            o[k++] = s[i];
        }
    }
    o[k] = '\0';
    return o;
}

static enum cbc_status bad(struct cbc_err *err, const char *spec_shown, const char *what)
{
    cbc_err_set(err, CBC_E_USAGE, "remote '%s': %s", spec_shown, what);
    cbc_err_hint(err, "write it as redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], "
                      "redis+unix:///PATH or http[s]://[USER:PASSWORD@]HOST[:PORT][/PATH], then "
                      "|read-only, |connect-timeout=MS, |operation-timeout=MS, |expire=7d, "
                      "|namespace=NAME, |reshare, |max-value=SIZE, |skip-after-failure=SECONDS "
                      "(README: Sharing a cache across machines)");
    return CBC_E_USAGE;
}

static enum cbc_status bad_attr(struct cbc_err *err, const char *shown, const char *a, size_t n,
                                const char *why)
{
    char what[300];
    snprintf(what, sizeof what, "attribute '%.*s' %s", (int)(n > 100 ? 100 : n), a, why);
    return bad(err, shown, what);
}

static bool is_key(const char *a, size_t kn, const char *s)
{
    return kn == strlen(s) && !strncmp(a, s, kn);
}

static enum cbc_status parse_bool(const char *v, size_t vn, bool *out)
{
    if (!v || (vn == 4 && !strncmp(v, "true", 4)))
        *out = true;
    else if (vn == 5 && !strncmp(v, "false", 5))
        *out = false;
    else
        return CBC_E_USAGE;
    return CBC_OK;
}

/* One attribute `a` (n bytes, "key" or "key=value"). */
static enum cbc_status parse_attr(struct cbc_remote_cfg *c, const char *a, size_t n,
                                  const char *shown, struct cbc_err *err)
{
    const char *eq = memchr(a, '=', n);
    size_t kn = eq ? (size_t)(eq - a) : n;
    const char *v = eq ? eq + 1 : NULL;
    size_t vn = eq ? n - kn - 1 : 0;
    bool http = c->kind == CBC_REMOTE_HTTP;
    uint64_t x;
    if (is_key(a, kn, "read-only")) {
        if (parse_bool(v, vn, &c->read_only) != CBC_OK)
            return bad(err, shown, "read-only takes true or false");
    } else if (is_key(a, kn, "reshare")) {
        if (parse_bool(v, vn, &c->reshare) != CBC_OK)
            return bad(err, shown, "reshare takes true or false");
    } else if (is_key(a, kn, "connect-timeout") && v && parse_uint(v, vn, 60000, &x) && x > 0) {
        c->connect_ms = (unsigned)x;
    } else if (is_key(a, kn, "operation-timeout") && v && parse_uint(v, vn, 600000, &x) &&
               x > 0) {
        c->op_ms = (unsigned)x;
    } else if (is_key(a, kn, "expire") && v && parse_duration(v, vn, &x)) {
        if (http)
            return bad_attr(err, shown, a, n, "is for Redis: an HTTP server expires what it "
                                              "holds by its own rules");
        c->expire_s = x;
    } else if (is_key(a, kn, "skip-after-failure") && v && parse_duration(v, vn, &x) &&
               x <= 86400) {
        c->skip_s = (unsigned)x;
    } else if (is_key(a, kn, "db") && v && parse_uint(v, vn, 1 << 20, &x)) {
        if (http)
            return bad_attr(err, shown, a, n, "is for Redis");
        c->db = (int)x;
    } else if (is_key(a, kn, "namespace") && v && ns_name_ok(v, vn)) {
        free(c->ns_name);
        if (!(c->ns_name = cbc_strndup(v, vn)))
            return cbc_err_oom(err);
    } else if (is_key(a, kn, "namespace")) {
        return bad_attr(err, shown, a, n, "is not 1 to 64 of A-Z, a-z, 0-9, '.', '_', '-'");
    } else if (is_key(a, kn, "max-value") && v && parse_value_max(v, vn, &x)) {
        c->max_value = x;
    } else if (is_key(a, kn, "max-value")) {
        return bad_attr(err, shown, a, n, "is not a size from 1KiB to 4GiB (such as 256M)");
    } else if (is_key(a, kn, "layout") && v && http &&
               ((vn == 7 && !strncmp(v, "subdirs", 7)) || (vn == 4 && !strncmp(v, "flat", 4)))) {
        c->flat = vn == 4;
    } else if (is_key(a, kn, "ca") && v && vn > 0 && c->tls) {
        free(c->ca_file);
        if (!(c->ca_file = cbc_strndup(v, vn)))
            return cbc_err_oom(err);
    } else if (is_key(a, kn, "ca")) {
        return bad_attr(err, shown, a, n, "names the certificates for https:// (ca=FILE)");
    } else if (is_key(a, kn, "bearer-token") && v && vn > 0 && http) {
        free(c->bearer_token);
        if (!(c->bearer_token = cbc_strndup(v, vn)))
            return cbc_err_oom(err);
    } else {
        /* a token's value never reaches a message */
        bool secret = is_key(a, kn, "bearer-token");
        return bad_attr(err, shown, a, secret ? kn : n, "is unknown, has a bad value or is not "
                                                        "for this kind of remote");
    }
    return CBC_OK;
}

/* HOST[:PORT] of [begin, end) into c; *after at what follows (the path). */
static enum cbc_status parse_hostport(struct cbc_remote_cfg *c, const char *hb, const char *end,
                                      const char **after, const char *shown, struct cbc_err *err)
{
    const char *he;
    if (hb < end && *hb == '[') { /* [::1]:6379 */
        he = memchr(hb, ']', (size_t)(end - hb));
        if (!he)
            return bad(err, shown, "an IPv6 address lacks its ']'");
        c->host = cbc_strndup(hb + 1, (size_t)(he - hb - 1));
        he++;
    } else {
        he = hb;
        while (he < end && *he != ':' && *he != '/')
            he++;
        c->host = cbc_strndup(hb, (size_t)(he - hb));
    }
    if (!c->host)
        return cbc_err_oom(err);
    if (!*c->host)
        return bad(err, shown, "no host");
    for (const char *p = c->host; *p; p++)
        if ((unsigned char)*p <= ' ' || strchr("@/?#\\", *p))
            return bad(err, shown, "the host holds a character no host name has");
    const char *p = he;
    if (p < end && *p == ':') {
        const char *pe = p + 1;
        while (pe < end && *pe != '/')
            pe++;
        uint64_t port;
        if (!parse_uint(p + 1, (size_t)(pe - p - 1), 65535, &port) || port == 0)
            return bad(err, shown, "the port is not a number from 1 to 65535");
        c->port = (int)port;
        p = pe;
    }
    *after = p;
    return CBC_OK;
}

static enum cbc_status parse(const char *spec, struct cbc_remote_cfg *c, struct cbc_err *err)
{
    if (!spec || !*spec || !strcmp(spec, "none"))
        return CBC_E_NOT_FOUND;
    c->port = 6379;
    c->connect_ms = 100;
    c->op_ms = 1000;
    c->skip_s = 60;
    c->max_value = CBC_REMOTE_VALUE_MAX;
    size_t ul = strcspn(spec, "|");
    const char *url = spec;
    const char *end = url + ul;
    bool unix_sock = !strncmp(url, "redis+unix:", 11);
    const char *rest;
    if (unix_sock) {
        rest = url + 11;
    } else if (!strncmp(url, "redis://", 8)) {
        rest = url + 8;
    } else if (!strncmp(url, "http://", 7) || !strncmp(url, "https://", 8)) {
        c->kind = CBC_REMOTE_HTTP;
        c->tls = url[4] == 's';
        c->port = c->tls ? 443 : 80;
        rest = url + (c->tls ? 8 : 7);
    } else if (!strncmp(url, "rediss://", 9)) {
        cbc_err_set(err, CBC_E_USAGE, "remote 'rediss://...': Redis over TLS is not supported: "
                                      "this cubincache speaks to Redis through hiredis %s, "
                                      "which has no TLS (Debian 12 ships hiredis 0.14)",
#ifdef CBC_HIREDIS_VERSION
                    CBC_HIREDIS_VERSION
#else
                    "(not built in)"
#endif
        );
        cbc_err_hint(err, "reach Redis over a trusted network or a tunnel (stunnel, ssh -L) and "
                          "name it redis://, or share the cache through an HTTPS server "
                          "(https://HOST/PATH|ca=FILE)");
        return CBC_E_USAGE;
    } else {
        return bad(err, "(not shown)", "it is not a redis://, redis+unix:, http:// or https:// URL");
    }
    if (unix_sock && !strncmp(rest, "//", 2))
        rest += 2;
    /* [USER][:PASSWORD]@ (the last '@' before the path: a password may hold
     * one unescaped) */
    const char *auth_end = end;
    if (c->kind == CBC_REMOTE_HTTP) {
        const char *slash = memchr(rest, '/', (size_t)(end - rest));
        const char *at_last = NULL;
        for (const char *q = rest; q < end; q++)
            if (*q == '@')
                at_last = q;
        /* a '/' inside the password comes before the last '@' */
        auth_end = slash && (!at_last || slash > at_last) ? slash : end;
    }
    const char *at = rest < auth_end ? memrchr(rest, '@', (size_t)(auth_end - rest)) : NULL;
    const char *colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
    const char *auth_b = rest;
    /* the spec as messages show it: never the password */
    char shown[512];
    if (at)
        snprintf(shown, sizeof shown, "%.*s%.*s%s@%.*s", (int)(auth_b - url), url,
                 (int)((colon ? colon : at) - auth_b), auth_b, colon ? ":***" : "",
                 (int)(end - at - 1), at + 1);
    else
        snprintf(shown, sizeof shown, "%.*s", (int)ul, url);
    if (at) {
        const char *ue = colon ? colon : at;
        if (ue > auth_b && !(c->user = pct_decode(auth_b, (size_t)(ue - auth_b))))
            return cbc_err_oom(err);
        if (colon && !(c->password = pct_decode(colon + 1, (size_t)(at - colon - 1))))
            return cbc_err_oom(err);
        if (c->kind == CBC_REMOTE_HTTP && (!c->user || !c->password))
            return bad(err, shown, "HTTP credentials are USER:PASSWORD@");
        rest = at + 1;
    }
    enum cbc_status st;
    if (unix_sock) {
        if (rest >= end || *rest != '/')
            return bad(err, shown, "a unix socket needs an absolute path");
        if (!(c->socket = cbc_strndup(rest, (size_t)(end - rest))))
            return cbc_err_oom(err);
    } else if (c->kind == CBC_REMOTE_HTTP) {
        const char *p;
        if ((st = parse_hostport(c, rest, end, &p, shown, err)) != CBC_OK)
            return st;
        size_t pl = (size_t)(end - p);
        while (pl > 0 && p[pl - 1] == '/')
            pl--;
        if (!http_path_ok(p, pl))
            return bad(err, shown, "the path holds a character a URL path cannot (a space, "
                                   "'?', '#', a bad %-escape) or a '.' or '..' segment");
        if (!(c->path = cbc_strndup(p, pl)))
            return cbc_err_oom(err);
    } else {
        const char *p;
        if ((st = parse_hostport(c, rest, end, &p, shown, err)) != CBC_OK)
            return st;
        if (p < end && *p == '/') {
            uint64_t db;
            if (p + 1 < end && !parse_uint(p + 1, (size_t)(end - p - 1), 1 << 20, &db))
                return bad(err, shown, "the database after '/' is not a number");
            if (p + 1 < end)
                c->db = (int)db;
        }
    }
    for (const char *a = spec + ul; *a == '|';) {
        a++;
        size_t n = strcspn(a, "|");
        if ((st = parse_attr(c, a, n, shown, err)) != CBC_OK)
            return st;
        a += n;
    }
    if (!(c->name = cbc_strdup(shown)))
        return cbc_err_oom(err);
    return CBC_OK;
}

enum cbc_status cbc_remote_parse(const char *spec, struct cbc_remote_cfg *c, struct cbc_err *err)
{
    memset(c, 0, sizeof *c);
    enum cbc_status st = parse(spec, c, err);
    if (st != CBC_OK)
        cbc_remote_cfg_release(c); /* nothing half-parsed is left, the password least */
    return st;
}

bool cbc_remote_key_parse(const char *key, size_t len, struct cbc_remote_key *out)
{
    static const char prefix[] = "cubincache:v1:";
    const size_t pl = sizeof prefix - 1;
    memset(out, 0, sizeof *out);
    if (len < pl + CBC_HASH_HEX_LEN + 2 || memcmp(key, prefix, pl) != 0)
        return false;
    /* the last field: 32 hex digits; before it the kind; before that, if
     * anything, the namespace */
    const char *hex = key + len - CBC_HASH_HEX_LEN;
    if (hex[-1] != ':')
        return false;
    char h[CBC_HASH_HEX_LEN + 1];
    memcpy(h, hex, CBC_HASH_HEX_LEN);
    h[CBC_HASH_HEX_LEN] = '\0';
    for (int i = 0; i < CBC_HASH_HEX_LEN; i++)
        if (!isxdigit((unsigned char)h[i]) || isupper((unsigned char)h[i]))
            return false;
    if (!cbc_hash_from_hex(h, &out->hash))
        return false;
    const char *mid = key + pl, *mid_end = hex - 1;
    const char *colon = memchr(mid, ':', (size_t)(mid_end - mid));
    const char *kind = colon ? colon + 1 : mid;
    size_t kl = (size_t)(mid_end - kind);
    static const char *const kinds[] = {"objects", "direct", "deps", "lease"};
    bool known = false;
    for (size_t i = 0; i < CBC_ARRAY_LEN(kinds); i++)
        known |= kl == strlen(kinds[i]) && !memcmp(kind, kinds[i], kl);
    if (!known)
        return false;
    memcpy(out->kind, kind, kl);
    if (colon) {
        size_t nl = (size_t)(colon - mid);
        if (!ns_name_ok(mid, nl))
            return false;
        memcpy(out->ns_name, mid, nl);
    }
    return true;
}
