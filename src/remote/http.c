/* http.c: the HTTP backend (backend.h): ccache's HTTP storage protocol
 * through libcurl. A value is the body of GET and PUT under a URL of its
 * own (remote.h gives the layout); HEAD says whether one is there; DELETE
 * removes one. Any server that stores a PUT body and serves it back works:
 * nginx with WebDAV (dav_methods PUT DELETE; create_full_put_path on), a
 * bazel-remote, an S3 bucket behind a proxy.
 *
 * Design choices: one easy handle per remote, so its connection is kept
 * alive between operations; each operation sets CURLOPT_TIMEOUT_MS to the
 * time left before its deadline (curl's own clock then bounds resolving,
 * connecting, TLS, sending and every byte of the reply), and the body is
 * refused from its Content-Length (CURLOPT_MAXFILESIZE_LARGE) or, without
 * one, by the write callback the moment it passes the cap. No proxy from
 * the environment is used (as ccache's HTTP client), no redirect followed.
 * SIGPIPE is held off around each transfer (a TLS write to a closed peer
 * would raise it).
 *
 * The server cannot do a lease (no atomic create-if-absent that every
 * server has) nor list what it holds: those operations are left out and
 * remote.c says "unsupported".
 */
#include "backend.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef CBC_HAVE_CURL
#include <curl/curl.h>
#include <pthread.h>

struct http {
    struct cbc_remote_backend base;
    CURL *h;
    char *root; /* scheme://host:port/path, no final '/' */
    char errbuf[CURL_ERROR_SIZE];
};

/* What a GET gathers: the body while the status is 2xx, at most cap. */
struct sink {
    struct http *hb;
    uint8_t *p;
    size_t len, cap_alloc;
    uint64_t cap;
    bool over, oom;
};

static size_t on_body(char *data, size_t size, size_t n, void *vs)
{
    struct sink *s = vs;
    size_t k = size * n;
    long code = 0;
    curl_easy_getinfo(s->hb->h, CURLINFO_RESPONSE_CODE, &code);
    if (code < 200 || code >= 300)
        return k; /* an error page: not kept */
    if ((uint64_t)s->len + k > s->cap) {
        s->over = true;
        return 0; /* stops the transfer: CURLE_WRITE_ERROR */
    }
    if (s->len + k + 1 > s->cap_alloc) {
        size_t want = s->cap_alloc ? s->cap_alloc * 2 : 65536;
        curl_off_t cl = -1;
        curl_easy_getinfo(s->hb->h, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        if (cl > 0 && (uint64_t)cl <= s->cap && (size_t)cl + 1 > want)
            want = (size_t)cl + 1;
        while (want < s->len + k + 1)
            want *= 2;
        if (want > s->cap + 1)
            want = (size_t)s->cap + 1;
        uint8_t *np = realloc(s->p, want);
        if (!np) {
            s->oom = true;
            return 0;
        }
        s->p = np;
        s->cap_alloc = want;
    }
    memcpy(s->p + s->len, data, k);
    s->len += k;
    return k;
}

static size_t discard(char *data, size_t size, size_t n, void *ctx)
{
    (void)data, (void)ctx;
    return size * n;
}

struct source {
    const uint8_t *p;
    size_t len, off;
};

static size_t on_read(char *buf, size_t size, size_t n, void *vs)
{
    struct source *s = vs;
    size_t k = size * n, left = s->len - s->off;
    if (k > left)
        k = left;
    memcpy(buf, s->p + s->off, k);
    s->off += k;
    return k;
}

static void url_of(struct http *hb, const char *kind, const char *hex, char *out, size_t len)
{
    const struct cbc_remote_cfg *c = hb->base.cfg;
    const char *ns = c->ns_name;
    if (c->flat)
        snprintf(out, len, "%s/v1-%s%s%s-%s", hb->root, ns ? ns : "", ns ? "-" : "", kind, hex);
    else
        snprintf(out, len, "%s/v1/%s%s%s/%.2s/%s", hb->root, ns ? ns : "", ns ? "/" : "", kind,
                 hex, hex + 2);
}

/* The options every request has, for the time left before deadline. */
static bool setup(struct http *hb, const char *url, uint64_t deadline)
{
    const struct cbc_remote_cfg *c = hb->base.cfg;
    CURL *h = hb->h;
    curl_easy_reset(h); /* the live connection and the DNS cache stay */
    int left = rb_left_ms(deadline);
    if (left == 0)
        return false;
    hb->errbuf[0] = '\0';
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, hb->errbuf);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)left);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                     (long)((int)c->connect_ms < left ? (int)c->connect_ms : left));
#if LIBCURL_VERSION_NUM >= 0x075500
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
    curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    curl_easy_setopt(h, CURLOPT_PROXY, "");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "cubincache");
    if (c->user && c->password) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
    } else if (c->bearer_token) {
        curl_easy_setopt(h, CURLOPT_HTTPAUTH, (long)CURLAUTH_BEARER);
        curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, c->bearer_token);
    }
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    return true;
}

/* curl_easy_perform with SIGPIPE held off, and a SIGPIPE it raised taken. */
static CURLcode perform(CURL *h)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    bool was = sigismember(&pending, SIGPIPE);
    CURLcode rc = curl_easy_perform(h);
    sigpending(&pending);
    if (!was && sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* A transfer that did not complete: how, for remote.c. */
static enum rb_result transfer_failed(struct http *hb, CURLcode rc, const char *method,
                                      char *detail, size_t dn)
{
    const struct cbc_remote_cfg *c = hb->base.cfg;
    const char *e = hb->errbuf[0] ? hb->errbuf : curl_easy_strerror(rc);
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: {
        curl_off_t got = 0;
        curl_easy_getinfo(hb->h, CURLINFO_SIZE_DOWNLOAD_T, &got);
        double ct = 0;
        curl_easy_getinfo(hb->h, CURLINFO_CONNECT_TIME, &ct);
        if (ct == 0 && strstr(e, "onnect"))
            snprintf(detail, dn, "cannot connect: no connection within the connect timeout "
                                 "(%u ms)", c->connect_ms);
        else if (got == 0)
            snprintf(detail, dn, "no answer within the operation timeout (%u ms): %s", c->op_ms,
                     e);
        else
            snprintf(detail, dn, "the reply was not complete within the operation timeout "
                                 "(%u ms): %s", c->op_ms, e);
        return RB_TIMEOUT;
    }
    case CURLE_COULDNT_CONNECT:
        snprintf(detail, dn, "cannot connect: %s", e);
        return RB_REFUSED;
    case CURLE_COULDNT_RESOLVE_HOST:
        snprintf(detail, dn, "cannot connect: cannot resolve the host: %s", e);
        return RB_ERROR;
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CONNECT_ERROR:
        snprintf(detail, dn, "TLS: %s (name the certificates that sign the server's with "
                             "|ca=FILE)", e);
        return RB_ERROR;
    default:
        snprintf(detail, dn, "%s failed: %s", method, e);
        return RB_ERROR;
    }
}

static enum rb_result status_failed(long code, const char *method, bool write, char *detail,
                                    size_t dn)
{
    const char *why = code == 401 || code == 407 ? " (credentials missing or wrong)"
                      : code == 403              ? " (forbidden)"
                      : code == 405              ? " (the method is not allowed: dav_methods "
                                                   "PUT DELETE in nginx)"
                      : code == 413              ? " (too large for the server: nginx "
                                                   "client_max_body_size)"
                      : code == 507              ? " (the server is full)"
                                                 : "";
    snprintf(detail, dn, "%s refused: HTTP %ld%s", method, code, why);
    if (write && (code == 401 || code == 403 || code == 405 || code == 413 || code == 507))
        return RB_NO_WRITES;
    if (code == 401 || code == 403 || code == 407)
        return RB_REFUSED;
    return RB_ERROR;
}

static enum rb_result h_get(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            uint64_t cap, uint64_t expire_s, uint64_t deadline, uint8_t **data,
                            size_t *len, bool *touch_refused, char *detail, size_t dn)
{
    (void)expire_s, (void)touch_refused; /* the server expires by its own rules */
    struct http *hb = (struct http *)b;
    char url[1024];
    url_of(hb, kind, hex, url, sizeof url);
    if (!setup(hb, url, deadline))
        return transfer_failed(hb, CURLE_OPERATION_TIMEDOUT, "GET", detail, dn);
    struct sink s = {hb, NULL, 0, 0, cap, false, false};
    curl_easy_setopt(hb->h, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(hb->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(hb->h, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(hb->h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cap);
    CURLcode rc = perform(hb->h);
    long code = 0;
    curl_easy_getinfo(hb->h, CURLINFO_RESPONSE_CODE, &code);
    if (rc == CURLE_FILESIZE_EXCEEDED || (rc == CURLE_WRITE_ERROR && s.over)) {
        free(s.p);
        snprintf(detail, dn, "a value over max-value (%llu bytes)%s",
                 (unsigned long long)(cap - CBC_REMOTE_VALUE_HEADER),
                 rc == CURLE_FILESIZE_EXCEEDED ? " by its Content-Length; not read"
                                               : "; the rest not read");
        return RB_BAD;
    }
    if (rc != CURLE_OK || s.oom) {
        free(s.p);
        if (s.oom) {
            snprintf(detail, dn, "out of memory");
            return RB_ERROR;
        }
        return transfer_failed(hb, rc, "GET", detail, dn);
    }
    if (code == 404 || code == 410) {
        free(s.p);
        return RB_ABSENT;
    }
    if (code != 200) {
        free(s.p);
        return status_failed(code, "GET", false, detail, dn);
    }
    if (!s.p && !(s.p = malloc(1))) {
        snprintf(detail, dn, "out of memory");
        return RB_ERROR;
    }
    s.p[s.len] = '\0';
    *data = s.p;
    *len = s.len;
    return RB_OK;
}

/* A request with no body either way (HEAD, DELETE): RB_OK with its status
 * in *code, or how the transfer failed. */
static enum rb_result bodiless(struct http *hb, const char *kind, const char *hex,
                               const char *method, uint64_t deadline, long *code, char *detail,
                               size_t dn)
{
    char url[1024];
    url_of(hb, kind, hex, url, sizeof url);
    if (!setup(hb, url, deadline))
        return transfer_failed(hb, CURLE_OPERATION_TIMEDOUT, method, detail, dn);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(hb->h, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(hb->h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(hb->h, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = perform(hb->h);
    if (rc != CURLE_OK)
        return transfer_failed(hb, rc, method, detail, dn);
    *code = 0;
    curl_easy_getinfo(hb->h, CURLINFO_RESPONSE_CODE, code);
    return RB_OK;
}

/* HEAD: whether the key is there. */
static enum rb_result h_touch(struct cbc_remote_backend *b, const char *kind, const char *hex,
                              uint64_t expire_s, uint64_t deadline, char *detail, size_t dn)
{
    (void)expire_s;
    long code = 0;
    enum rb_result r = bodiless((struct http *)b, kind, hex, "HEAD", deadline, &code, detail, dn);
    if (r != RB_OK || code == 200)
        return r;
    if (code == 404 || code == 410)
        return RB_ABSENT;
    return status_failed(code, "HEAD", false, detail, dn);
}

static enum rb_result h_put(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            const void *data, size_t len, uint64_t expire_s, bool if_absent,
                            uint64_t deadline, char *detail, size_t dn)
{
    struct http *hb = (struct http *)b;
    if (if_absent) { /* as ccache: HEAD, then PUT */
        enum rb_result r = h_touch(b, kind, hex, expire_s, deadline, detail, dn);
        if (r == RB_OK)
            return RB_EXISTS;
        if (r != RB_ABSENT)
            return r;
    }
    char url[1024];
    url_of(hb, kind, hex, url, sizeof url);
    if (!setup(hb, url, deadline))
        return transfer_failed(hb, CURLE_OPERATION_TIMEDOUT, "PUT", detail, dn);
    struct source src = {data, len, 0};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/octet-stream");
    struct curl_slist *h2 = hdr ? curl_slist_append(hdr, "Expect:") : NULL; /* no 100-continue wait */
    if (!h2) {
        curl_slist_free_all(hdr);
        snprintf(detail, dn, "out of memory");
        return RB_ERROR;
    }
    hdr = h2;
    curl_easy_setopt(hb->h, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(hb->h, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(hb->h, CURLOPT_READDATA, &src);
    curl_easy_setopt(hb->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)len);
    curl_easy_setopt(hb->h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(hb->h, CURLOPT_WRITEFUNCTION, discard);
    CURLcode rc = perform(hb->h);
    curl_easy_setopt(hb->h, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdr);
    if (rc != CURLE_OK)
        return transfer_failed(hb, rc, "PUT", detail, dn);
    long code = 0;
    curl_easy_getinfo(hb->h, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300)
        return RB_OK;
    return status_failed(code, "PUT", true, detail, dn);
}

static enum rb_result h_del(struct cbc_remote_backend *b, const char *kind, const char *hex,
                            uint64_t deadline, char *detail, size_t dn)
{
    long code = 0;
    enum rb_result r = bodiless((struct http *)b, kind, hex, "DELETE", deadline, &code, detail,
                                dn);
    if (r != RB_OK || (code >= 200 && code < 300))
        return r;
    if (code == 404 || code == 410)
        return RB_ABSENT;
    return status_failed(code, "DELETE", true, detail, dn);
}

static void h_disconnect(struct cbc_remote_backend *b)
{
    struct http *hb = (struct http *)b;
    /* a new handle: the old one's connection goes with it */
    CURL *n = curl_easy_init();
    if (n) {
        curl_easy_cleanup(hb->h);
        hb->h = n;
    }
}

static void h_free(struct cbc_remote_backend *b)
{
    struct http *hb = (struct http *)b;
    curl_easy_cleanup(hb->h);
    free(hb->root);
    free(hb);
}

static const struct rb_ops http_ops = {
    .get = h_get,
    .put = h_put,
    .touch = h_touch,
    .del = h_del,
    .acquire = NULL, /* no atomic create-if-absent every server has */
    .release = NULL,
    .list = NULL, /* no listing every server has */
    .version = NULL,
    .disconnect = h_disconnect,
    .free = h_free,
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct cbc_remote_backend *cbc_rb_http_new(const struct cbc_remote_cfg *cfg)
{
    pthread_once(&curl_once, curl_start);
    struct http *hb = calloc(1, sizeof *hb);
    if (!hb)
        return NULL;
    hb->base.ops = &http_ops;
    hb->base.cfg = cfg;
    bool v6 = strchr(cfg->host, ':') != NULL;
    hb->h = curl_easy_init();
    char *u = cbc_asprintf("%s://%s%s%s:%d%s", cfg->tls ? "https" : "http", v6 ? "[" : "",
                           cfg->host, v6 ? "]" : "", cfg->port, cfg->path ? cfg->path : "");
    if (!hb->h || !u) {
        if (hb->h)
            curl_easy_cleanup(hb->h);
        free(u);
        free(hb);
        return NULL;
    }
    hb->root = u;
    return &hb->base;
}

#else /* no libcurl */

struct cbc_remote_backend *cbc_rb_http_new(const struct cbc_remote_cfg *cfg)
{
    (void)cfg;
    return NULL;
}

#endif
