/* test_remote.c: the remote cache's spec parser (what a URL and its
 * attributes mean, that a password or token is never shown, that every bad
 * spec is refused naming its part), its value codec (round trips, raw and
 * zstd, and every damaged value refused), the RESP header parser, the
 * Redis client against servers in this process that trickle a reply or
 * announce a value of 1 GiB (one deadline, the cap before the bytes), and
 * leases against a real redis-server (skipped when none is installed).
 * Builds through a real Redis are tests/cli/remote.sh; HTTP is
 * tests/cli/remote_http.sh. */
#include "backend.h"
#include "remote.h"
#include "store.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static struct cbc_remote_cfg parse_ok(const char *spec)
{
    struct cbc_remote_cfg c;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_remote_parse(spec, &c, &e), CBC_OK, "%s: %s", spec, e.msg);
    return c;
}

Test(remote, url_forms)
{
    struct cbc_remote_cfg c = parse_ok("redis://ci-cache");
    cr_assert_str_eq(c.host, "ci-cache");
    cr_assert_eq(c.port, 6379);
    cr_assert_eq(c.db, 0);
    cr_assert_eq(c.connect_ms, 100);
    cr_assert_eq(c.op_ms, 1000);
    cr_assert_eq(c.skip_s, 60);
    cr_assert(!c.read_only && c.expire_s == 0 && !c.password && !c.user && !c.socket);
    cbc_remote_cfg_release(&c);

    c = parse_ok("redis://bob:p%40ss@10.0.0.5:6380/3|read-only|connect-timeout=50|"
                 "operation-timeout=250|expire=7d|skip-after-failure=30");
    cr_assert_str_eq(c.user, "bob");
    cr_assert_str_eq(c.password, "p@ss");
    cr_assert_str_eq(c.host, "10.0.0.5");
    cr_assert_eq(c.port, 6380);
    cr_assert_eq(c.db, 3);
    cr_assert(c.read_only);
    cr_assert_eq(c.connect_ms, 50);
    cr_assert_eq(c.op_ms, 250);
    cr_assert_eq(c.expire_s, 7 * 86400);
    cr_assert_eq(c.skip_s, 30);
    cr_assert_str_eq(c.name, "redis://bob:***@10.0.0.5:6380/3");
    cbc_remote_cfg_release(&c);

    c = parse_ok("redis://[::1]:7000");
    cr_assert_str_eq(c.host, "::1");
    cr_assert_eq(c.port, 7000);
    cbc_remote_cfg_release(&c);

    c = parse_ok("redis+unix:///run/redis/redis.sock|db=2");
    cr_assert_str_eq(c.socket, "/run/redis/redis.sock");
    cr_assert_null(c.host);
    cr_assert_eq(c.db, 2);
    cbc_remote_cfg_release(&c);

    c = parse_ok("redis://:secret@host|read-only=false");
    cr_assert_null(c.user);
    cr_assert_str_eq(c.password, "secret");
    cr_assert(!c.read_only);
    cr_assert_null(strstr(c.name, "secret"));
    cbc_remote_cfg_release(&c);
}

Test(remote, none_and_bad_specs)
{
    struct cbc_remote_cfg c;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_remote_parse("", &c, &e), CBC_E_NOT_FOUND);
    cr_assert_eq(cbc_remote_parse("none", &c, &e), CBC_E_NOT_FOUND);
    static const struct {
        const char *spec, *says;
    } bad[] = {
        {"ftp://host", "not a redis://"},
        {"rediss://host:6380", "Redis over TLS is not supported"},
        {"redis://host|namespace=a:b", "namespace"},
        {"redis://host|namespace=", "namespace"},
        {"redis://host|max-value=12", "max-value"},
        {"redis://host|max-value=8G", "max-value"},
        {"redis://host|reshare=often", "reshare"},
        {"redis://host|layout=flat", "'layout=flat'"},
        {"redis://host|ca=/etc/ca.pem", "https"},
        {"http://host|ca=/etc/ca.pem", "https"},
        {"http://host|expire=1d", "is for Redis"},
        {"http://host|db=2", "is for Redis"},
        {"http://host/a b", "path"},
        {"http://host/a/../b", "path"},
        {"http://host/%zz", "path"},
        {"http://user@host/", "USER:PASSWORD"},
        {"http://host|layout=bazel", "'layout=bazel'"},
        {"redis://", "no host"},
        {"redis://:topsecret@host:99999", "port"},
        {"redis://host:0", "port"},
        {"redis://host/x", "database"},
        {"redis://host|colour=blue", "'colour=blue'"},
        {"redis://host|connect-timeout=0", "connect-timeout"},
        {"redis://host|expire=soon", "expire"},
        {"redis://host|read-only=maybe", "read-only"},
        {"redis+unix:relative.sock", "absolute path"},
        {"redis://[::1:6379", "']'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        cr_assert_eq(cbc_remote_parse(bad[i].spec, &c, &e), CBC_E_USAGE, "%s", bad[i].spec);
        cr_assert(strstr(e.msg, bad[i].says), "%s: %s", bad[i].spec, e.msg);
        cr_assert_null(strstr(e.msg, "topsecret"), "the password shown: %s", e.msg);
        cr_assert_null(strstr(e.remedy, "topsecret"), "the password shown: %s", e.remedy);
        cr_assert(e.remedy[0], "no remedy for %s", bad[i].spec);
    }
}

static void roundtrip(const uint8_t *data, size_t len, int codec)
{
    uint8_t *v, *back;
    size_t vl, bl;
    struct cbc_err e = {0};
    char why[256];
    cr_assert_eq(cbc_remote_encode(data, len, &v, &vl, &e), CBC_OK);
    cr_assert_eq(v[5], codec, "codec %d for %zu bytes", v[5], len);
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_OK, "%s", why);
    cr_assert_eq(bl, len);
    cr_assert(len == 0 || memcmp(back, data, len) == 0);
    free(v);
    free(back);
}

Test(remote, codec_round_trips)
{
    static uint8_t text[100000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (uint8_t)"cubin cubin sass "[i % 17];
    roundtrip(text, 0, 0);
    roundtrip(text, 100, 0);                 /* small: raw */
    roundtrip(text, sizeof text, 1);         /* compressible: zstd */
    static uint8_t noise[4096];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof noise; i++) {
        x = x * 1103515245u + 12345u;
        noise[i] = (uint8_t)(x >> 24);
    }
    roundtrip(noise, sizeof noise, 0); /* zstd would not pay: raw */
}

Test(remote, damaged_values_refused)
{
    static uint8_t text[20000];
    for (size_t i = 0; i < sizeof text; i++)
        text[i] = (uint8_t)(i % 7 == 0 ? 'x' : 'y');
    uint8_t *v, *back = NULL;
    size_t vl, bl;
    struct cbc_err e = {0};
    char why[256];
    cr_assert_eq(cbc_remote_encode(text, sizeof text, &v, &vl, &e), CBC_OK);
    cr_assert_eq(v[5], 1);
    /* truncated */
    cr_assert_eq(cbc_remote_decode(v, vl - 3, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    cr_assert(strstr(why, "truncated"), "%s", why);
    /* shorter than a header, bad magic, unknown codec */
    cr_assert_eq(cbc_remote_decode(v, 10, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    uint8_t save = v[0];
    v[0] = 'X';
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    v[0] = save;
    v[5] = 7;
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    v[5] = 1;
    /* a size over the limit is refused before any allocation */
    uint8_t big[16];
    memcpy(big, v, 16);
    cbc_wr64(v + 8, (uint64_t)CBC_REMOTE_VALUE_MAX + 1);
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    cr_assert(strstr(why, "limit"), "%s", why);
    memcpy(v, big, 16);
    cr_assert_eq(cbc_remote_decode_max(v, vl, sizeof text - 1, &back, &bl, why, sizeof why),
                 CBC_E_FORMAT, "a smaller max-value refuses it");
    cr_assert(strstr(why, "max-value"), "%s", why);
    /* a declared size that is not what the stream holds */
    cbc_wr64(v + 8, sizeof text - 1);
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    memcpy(v, big, 16);
    cr_assert_eq(cbc_remote_decode(v, vl, &back, &bl, why, sizeof why), CBC_OK);
    free(back);
    free(v);
    /* raw: a byte more than declared */
    cr_assert_eq(cbc_remote_encode("abc", 3, &v, &vl, &e), CBC_OK);
    uint8_t *w = malloc(vl + 1);
    memcpy(w, v, vl);
    w[vl] = 'd';
    cr_assert_eq(cbc_remote_decode(w, vl + 1, &back, &bl, why, sizeof why), CBC_E_FORMAT);
    free(w);
    free(v);
}

Test(remote, attributes_of_issue_27)
{
    struct cbc_remote_cfg c = parse_ok("redis://h|namespace=team-a.v2|reshare|max-value=64KiB");
    cr_assert_str_eq(c.ns_name, "team-a.v2");
    cr_assert(c.reshare);
    cr_assert_eq(c.max_value, 65536);
    cbc_remote_cfg_release(&c);
    c = parse_ok("redis://h|reshare=false");
    cr_assert(!c.reshare && !c.ns_name);
    cr_assert_eq(c.max_value, CBC_REMOTE_VALUE_MAX, "the default cap is 256 MiB");
    cbc_remote_cfg_release(&c);
}

Test(remote, http_urls)
{
    struct cbc_remote_cfg c = parse_ok("http://cache.example:8080/ci/cubins/|layout=flat");
    cr_assert_eq(c.kind, CBC_REMOTE_HTTP);
    cr_assert(!c.tls && c.flat);
    cr_assert_str_eq(c.host, "cache.example");
    cr_assert_eq(c.port, 8080);
    cr_assert_str_eq(c.path, "/ci/cubins", "the final '/' is dropped");
    cr_assert_str_eq(c.name, "http://cache.example:8080/ci/cubins/");
    cbc_remote_cfg_release(&c);

    c = parse_ok("https://ci:s%2Fcret@[::1]/c|ca=/tmp/ca.pem|bearer-token=tok123");
    cr_assert(c.tls);
    cr_assert_eq(c.port, 443);
    cr_assert_str_eq(c.host, "::1");
    cr_assert_str_eq(c.user, "ci");
    cr_assert_str_eq(c.password, "s/cret");
    cr_assert_str_eq(c.ca_file, "/tmp/ca.pem");
    cr_assert_str_eq(c.bearer_token, "tok123");
    cr_assert_null(strstr(c.name, "cret"), "%s", c.name);
    cr_assert_null(strstr(c.name, "tok123"), "%s", c.name);
    cr_assert_str_eq(c.name, "https://ci:***@[::1]/c");
    cbc_remote_cfg_release(&c);

    c = parse_ok("http://h");
    cr_assert_eq(c.port, 80);
    cr_assert_str_eq(c.path, "");
    cbc_remote_cfg_release(&c);

    /* a bad value of a token is never echoed */
    struct cbc_err e = {0};
    cr_assert_eq(cbc_remote_parse("redis://h|bearer-token=sekrit", &c, &e), CBC_E_USAGE);
    cr_assert_null(strstr(e.msg, "sekrit"), "%s", e.msg);
}

Test(remote, rediss_is_refused_with_the_reason_and_the_way_out)
{
    struct cbc_remote_cfg c;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_remote_parse("rediss://:pw@h:6380", &c, &e), CBC_E_USAGE);
    cr_assert(strstr(e.msg, "no TLS"), "%s", e.msg);
    cr_assert(strstr(e.remedy, "https://"), "%s", e.remedy);
    cr_assert_null(strstr(e.msg, "pw@"), "%s", e.msg);
}

Test(remote, keys_parse_as_written)
{
    struct cbc_remote_key k;
    const char *a = "cubincache:v1:objects:0123456789abcdef0123456789abcdef";
    cr_assert(cbc_remote_key_parse(a, strlen(a), &k));
    cr_assert_str_eq(k.kind, "objects");
    cr_assert_str_eq(k.ns_name, "");
    cr_assert_eq(k.hash.b[0], 0x01);
    const char *b = "cubincache:v1:team-a:lease:0123456789abcdef0123456789abcdef";
    cr_assert(cbc_remote_key_parse(b, strlen(b), &k));
    cr_assert_str_eq(k.kind, "lease");
    cr_assert_str_eq(k.ns_name, "team-a");
    static const char *const bad[] = {
        "cubincache:v1:objects:0123456789abcdef0123456789abcde",    /* 31 digits */
        "cubincache:v1:objects:0123456789ABCDEF0123456789abcdef",   /* upper case */
        "cubincache:v1:tools:0123456789abcdef0123456789abcdef",     /* never remote */
        "cubincache:v1:a:b:objects:0123456789abcdef0123456789abcdef",
        "cubincache:v2:objects:0123456789abcdef0123456789abcdef",
        "cubincache:v1:weird",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert(!cbc_remote_key_parse(bad[i], strlen(bad[i]), &k), "%s", bad[i]);
    /* the key a namespaced remote writes is the one it parses back */
    struct cbc_remote_cfg c = parse_ok("redis://h|namespace=ns1");
    char name[200];
    cbc_rb_redis_key(&c, "deps", "0123456789abcdef0123456789abcdef", name, sizeof name);
    cr_assert_str_eq(name, "cubincache:v1:ns1:deps:0123456789abcdef0123456789abcdef");
    cr_assert(cbc_remote_key_parse(name, strlen(name), &k));
    cr_assert_str_eq(k.ns_name, "ns1");
    cbc_remote_cfg_release(&c);
}

/* ---- RESP ----------------------------------------------------------------------------- */

static long head(const char *s, struct cbc_resp_head *h)
{
    const char *why = NULL;
    long n = cbc_resp_head((const uint8_t *)s, strlen(s), h, &why);
    if (n < 0)
        cr_assert_not_null(why);
    return n;
}

Test(remote, resp_headers_are_bounds_checked)
{
    struct cbc_resp_head h;
    cr_assert_eq(head("+OK\r\n", &h), 5);
    cr_assert_eq(h.type, '+');
    cr_assert_eq(h.text_len, 2);
    cr_assert_eq(head("$5\r\nhello\r\n", &h), 4);
    cr_assert_eq(h.n, 5);
    cr_assert_eq(head("$1073741824\r\n", &h), 13);
    cr_assert_eq(h.n, 1073741824, "the length is known before any byte of the body");
    cr_assert_eq(head("$-1\r\n", &h), 5);
    cr_assert_eq(h.n, -1);
    cr_assert_eq(head("*-1\r\n", &h), 5);
    cr_assert_eq(head(":-42\r\n", &h), 6);
    cr_assert_eq(h.n, -42);
    cr_assert_eq(head("-ERR no\r\n", &h), 9);
    /* not complete yet */
    cr_assert_eq(head("$12", &h), 0);
    cr_assert_eq(head("$12\r", &h), 0);
    cr_assert_eq(head("", &h), 0);
    /* not RESP */
    cr_assert_eq(head("$-2\r\n", &h), -1);
    cr_assert_eq(head("$1x\r\n", &h), -1);
    cr_assert_eq(head("$\r\n", &h), -1);
    cr_assert_eq(head("$9999999999999999999\r\n", &h), -1);
    cr_assert_eq(head("?x\r\n", &h), -1);
    cr_assert_eq(head("+OK\rX", &h), -1);
    cr_assert_eq(head("\r\n", &h), -1);
    char *longline = malloc(CBC_RESP_LINE_MAX + 10);
    memset(longline, 'a', CBC_RESP_LINE_MAX + 9);
    longline[0] = '+';
    longline[CBC_RESP_LINE_MAX + 9] = '\0';
    cr_assert_eq(head(longline, &h), -1, "a line longer than any Redis sends");
    free(longline);
}

/* ---- servers in this process that hold a client ---------------------------------------- */

enum fake_mode { FAKE_TRICKLE, FAKE_HUGE };
struct fake {
    int lfd, port;
    enum fake_mode mode;
    pthread_t th;
    volatile int stop;
};

static void *fake_main(void *v)
{
    struct fake *f = v;
    while (!f->stop) {
        struct pollfd pf = {f->lfd, POLLIN, 0};
        if (poll(&pf, 1, 50) <= 0)
            continue;
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            continue;
        char cmd[4096];
        if (recv(c, cmd, sizeof cmd, 0) <= 0) {
            close(c);
            continue;
        }
        if (f->mode == FAKE_TRICKLE) { /* a valid 4096-byte value, a byte per 200 ms */
            static const char hdr[] = "$4096\r\n";
            for (size_t i = 0; !f->stop && i < 4104; i++) {
                char b = i < sizeof hdr - 1 ? hdr[i] : 'x';
                if (send(c, &b, 1, MSG_NOSIGNAL) != 1)
                    break;
                usleep(200000);
            }
        } else { /* a value announced as 1 GiB, its bytes for ever */
            static char chunk[65536];
            memset(chunk, 'y', sizeof chunk);
            static const char hdr[] = "$1073741824\r\n";
            ssize_t k = send(c, hdr, sizeof hdr - 1, MSG_NOSIGNAL);
            while (!f->stop && k > 0)
                k = send(c, chunk, sizeof chunk, MSG_NOSIGNAL);
        }
        close(c);
    }
    return NULL;
}

static void fake_start(struct fake *f, enum fake_mode mode)
{
    memset(f, 0, sizeof *f);
    f->mode = mode;
    f->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(f->lfd, 8), 0);
    getsockname(f->lfd, (struct sockaddr *)&a, &al);
    f->port = ntohs(a.sin_port);
    cr_assert_eq(pthread_create(&f->th, NULL, fake_main, f), 0);
}

static void fake_stop(struct fake *f)
{
    f->stop = 1;
    pthread_join(f->th, NULL);
    close(f->lfd);
}

static struct cbc_remote *remote_for(const char *fmt, int port)
{
    char spec[256];
    snprintf(spec, sizeof spec, fmt, port);
    struct cbc_remote_cfg c = parse_ok(spec);
    struct cbc_remote *r = cbc_remote_new(&c);
    cr_assert_not_null(r);
    return r;
}

static long rss_kb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

Test(remote, a_trickled_reply_ends_at_the_one_deadline)
{
    struct fake f;
    fake_start(&f, FAKE_TRICKLE);
    struct cbc_remote *r = remote_for("redis://127.0.0.1:%d|operation-timeout=500", f.port);
    struct cbc_hash key = {{7}};
    uint8_t *data = NULL;
    size_t len = 0;
    bool bad = false;
    char why[400] = "";
    struct cbc_err e = {0};
    uint64_t t0 = cbc_remote_now_us();
    enum cbc_status st = cbc_remote_get(r, "objects", &key, &data, &len, &bad, why, sizeof why, &e);
    uint64_t ms = (cbc_remote_now_us() - t0) / 1000;
    cr_assert_eq(st, CBC_E_CACHE, "%s", e.msg);
    cr_assert(ms >= 450 && ms < 900, "the get took %llu ms, the deadline is 500 ms",
              (unsigned long long)ms);
    cr_assert(strstr(e.msg, "not complete within the operation timeout (500 ms"), "%s", e.msg);
    cr_assert(strstr(e.remedy, "operation-timeout"), "%s", e.remedy);
    struct cbc_remote_stats rs;
    cbc_remote_stats(r, &rs);
    cr_assert_eq(rs.timeouts, 1);
    cr_assert_eq(rs.errors, 1);
    cr_assert(!cbc_remote_usable(r), "a remote that timed out is not asked again");
    cbc_remote_free(r);
    fake_stop(&f);
}

Test(remote, a_value_over_the_cap_is_refused_before_its_bytes)
{
    struct fake f;
    fake_start(&f, FAKE_HUGE);
    long before = rss_kb();
    for (int cap = 0; cap < 2; cap++) {
        struct cbc_remote *r = remote_for(cap ? "redis://127.0.0.1:%d|max-value=64KiB"
                                              : "redis://127.0.0.1:%d", f.port);
        struct cbc_hash key = {{8}};
        uint8_t *data = NULL;
        size_t len = 0;
        bool bad = false;
        char why[400] = "";
        struct cbc_err e = {0};
        uint64_t t0 = cbc_remote_now_us();
        enum cbc_status st = cbc_remote_get(r, "objects", &key, &data, &len, &bad, why,
                                            sizeof why, &e);
        uint64_t ms = (cbc_remote_now_us() - t0) / 1000;
        cr_assert_eq(st, CBC_E_NOT_FOUND, "%s", e.msg);
        cr_assert(bad);
        cr_assert(strstr(why, cap ? "over max-value (65536 bytes)" : "over max-value (268435456"),
                  "%s", why);
        cr_assert(ms < 300, "refused after %llu ms", (unsigned long long)ms);
        struct cbc_remote_stats rs;
        cbc_remote_stats(r, &rs);
        cr_assert_eq(rs.bad_values, 1);
        cr_assert(cbc_remote_usable(r), "a bad value is a miss, not a failure of the server");
        cbc_remote_free(r);
    }
    long grew = rss_kb() - before;
    cr_assert(grew < 16 * 1024, "the peak resident size grew by %ld kB", grew);
    fake_stop(&f);
}

/* ---- a real redis-server ------------------------------------------------------------------ */

struct redis_srv {
    char dir[64];
    int port;
    pid_t pid;
};

/* A redis-server of this test's own on a loopback port, in a temporary
 * directory, as tests/cli/remote.sh starts one; a child that dies with the
 * test process (PR_SET_PDEATHSIG), so a failed assertion leaves no server
 * behind. */
static bool redis_start(struct redis_srv *rs)
{
    if (system("command -v redis-server > /dev/null 2>&1") != 0)
        return false;
    snprintf(rs->dir, sizeof rs->dir, "/tmp/cbc-remote-test.XXXXXX");
    cr_assert_not_null(mkdtemp(rs->dir));
    pid_t parent = getpid();
    for (int tries = 0; tries < 8; tries++) {
        rs->port = 20000 + (int)((unsigned)parent * 7919u + (unsigned)tries * 104729u) % 40000;
        char port[16], log[96];
        snprintf(port, sizeof port, "%d", rs->port);
        snprintf(log, sizeof log, "%s/log", rs->dir);
        rs->pid = fork();
        cr_assert(rs->pid >= 0);
        if (rs->pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(127);
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0), dup2(null, 1), dup2(null, 2);
            execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", rs->dir, "--logfile", log,
                   (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 50; i++) {
            char cmd[128];
            snprintf(cmd, sizeof cmd, "redis-cli -p %d ping 2>/dev/null | grep -q PONG",
                     rs->port);
            if (system(cmd) == 0)
                return true;
            if (waitpid(rs->pid, NULL, WNOHANG) == rs->pid)
                break; /* the port was taken: another */
            usleep(100000);
        }
        kill(rs->pid, SIGKILL);
        waitpid(rs->pid, NULL, 0);
    }
    cr_assert_fail("redis-server did not start (%s/log)", rs->dir);
    return false;
}

/* Gone before it returns: a test may go on to use the remote without it. */
static void redis_stop(struct redis_srv *rs)
{
    cr_assert_eq(kill(rs->pid, SIGTERM), 0);
    int status;
    cr_assert_eq(waitpid(rs->pid, &status, 0), rs->pid);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", rs->dir);
    cr_assert_eq(system(cmd), 0);
}

Test(remote, a_lease_is_held_by_one_at_a_time_and_released_only_by_its_holder)
{
    struct redis_srv srv;
    if (!redis_start(&srv))
        cr_skip_test("redis-server is not installed");
    struct cbc_remote *a = remote_for("redis://127.0.0.1:%d|namespace=lt", srv.port);
    struct cbc_remote *b = remote_for("redis://127.0.0.1:%d|namespace=lt", srv.port);
    struct cbc_remote *ro = remote_for("redis://127.0.0.1:%d|namespace=lt|read-only", srv.port);
    struct cbc_hash key = {{0xab, 0xcd}};
    struct cbc_err e = {0};
    enum cbc_remote_lease got;
    bool released = true;
    cr_assert_eq(cbc_remote_lease_acquire(ro, &key, "r", 10000, &got, &e), CBC_OK, "%s", e.msg);
    cr_assert_eq(got, CBC_REMOTE_LEASE_UNSUPPORTED, "a reader cannot take one, nobody holds it");
    cr_assert_eq(cbc_remote_lease_acquire(a, &key, "token-a", 10000, &got, &e), CBC_OK, "%s", e.msg);
    cr_assert_eq(got, CBC_REMOTE_LEASE_ACQUIRED);
    cr_assert_eq(cbc_remote_lease_acquire(b, &key, "token-b", 10000, &got, &e), CBC_OK);
    cr_assert_eq(got, CBC_REMOTE_LEASE_HELD);
    cr_assert_eq(cbc_remote_lease_acquire(ro, &key, "r", 10000, &got, &e), CBC_OK);
    cr_assert_eq(got, CBC_REMOTE_LEASE_HELD, "a reader sees that a writer holds it");
    /* b cannot release a's lease */
    cr_assert_eq(cbc_remote_lease_release(b, &key, "token-b", &released, &e), CBC_OK, "%s", e.msg);
    cr_assert(!released);
    cr_assert_eq(cbc_remote_lease_acquire(b, &key, "token-b", 10000, &got, &e), CBC_OK);
    cr_assert_eq(got, CBC_REMOTE_LEASE_HELD, "another's release left it in place");
    cr_assert_eq(cbc_remote_lease_release(a, &key, "token-a", &released, &e), CBC_OK, "%s", e.msg);
    cr_assert(released);
    cr_assert_eq(cbc_remote_lease_acquire(b, &key, "token-b", 200, &got, &e), CBC_OK);
    cr_assert_eq(got, CBC_REMOTE_LEASE_ACQUIRED, "released: the next one gets it");
    /* a holder that dies: the lease ends with its ttl */
    usleep(400000);
    cr_assert_eq(cbc_remote_lease_acquire(a, &key, "token-a2", 10000, &got, &e), CBC_OK);
    cr_assert_eq(got, CBC_REMOTE_LEASE_ACQUIRED, "an expired lease is free");
    /* the expired holder's late release does not touch the new holder's */
    cr_assert_eq(cbc_remote_lease_release(b, &key, "token-b", &released, &e), CBC_OK);
    cr_assert(!released);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test \"$(redis-cli -p %d get cubincache:v1:lt:lease:"
                              "abcd0000000000000000000000000000)\" = token-a2",
             srv.port);
    cr_assert_eq(system(cmd), 0, "the lease's key or value is not as documented");
    cbc_remote_free(a);
    cbc_remote_free(b);
    cbc_remote_free(ro);
    redis_stop(&srv);
}

/* A redis-cli command's output, its trailing newline cut. */
static void redis_cli(const struct redis_srv *srv, const char *args, char *out, size_t len)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "redis-cli -p %d %s", srv->port, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\r'))
        out[--n] = '\0';
    cr_assert_eq(pclose(p), 0, "%s", cmd);
}

struct peek_all {
    struct cbc_remote *r;
    unsigned peeked;
};

static bool peek_one(void *ctx, const char *key, const struct cbc_remote_key *k, uint64_t bytes)
{
    (void)key, (void)bytes;
    struct peek_all *pa = ctx;
    uint8_t *d = NULL;
    size_t n = 0;
    bool bad = false;
    char why[200];
    struct cbc_err e = {0};
    cr_assert_not_null(k);
    cr_assert_eq(cbc_remote_peek(pa->r, k->kind, &k->hash, &d, &n, &bad, why, sizeof why, &e),
                 CBC_OK, "%s", e.msg);
    free(d);
    pa->peeked++;
    return true;
}

Test(remote, time_on_the_remote_counts_an_operation_inside_a_listing_once)
{
    struct redis_srv srv;
    if (!redis_start(&srv))
        cr_skip_test("redis-server is not installed");
    struct cbc_remote *r = remote_for("redis://127.0.0.1:%d|namespace=tm", srv.port);
    struct cbc_err e = {0};
    for (unsigned i = 0; i < 300; i++) {
        struct cbc_hash key = {{(uint8_t)i, (uint8_t)(i >> 8), 0x7e}};
        cr_assert_eq(cbc_remote_put(r, "objects", &key, "value", 5, &e), CBC_OK, "%s", e.msg);
    }
    struct cbc_remote_stats before, after;
    cbc_remote_stats(r, &before);
    struct peek_all pa = {r, 0};
    bool complete = false;
    uint64_t t0 = cbc_remote_now_us();
    cr_assert_eq(cbc_remote_list(r, false, false, 1000, 0, peek_one, &pa, &complete, &e), CBC_OK,
                 "%s", e.msg);
    uint64_t wall = cbc_remote_now_us() - t0;
    cbc_remote_stats(r, &after);
    cr_assert(complete);
    cr_assert_eq(pa.peeked, 300);
    uint64_t counted = after.time_us - before.time_us;
    /* the 300 peeks ran inside the listing's batches: counted in them, not again */
    cr_assert(counted > 0 && counted <= wall, "%llu us counted in %llu us",
              (unsigned long long)counted, (unsigned long long)wall);
    cbc_remote_free(r);
    redis_stop(&srv);
}

Test(remote, a_lease_through_the_store_ends_with_its_ttl_and_only_its_holder_releases_it)
{
    struct redis_srv srv;
    if (!redis_start(&srv))
        cr_skip_test("redis-server is not installed");
    char root1[] = "/tmp/cbc-lease-a.XXXXXX", root2[] = "/tmp/cbc-lease-b.XXXXXX";
    cr_assert_not_null(mkdtemp(root1));
    cr_assert_not_null(mkdtemp(root2));
    struct cbc_store *s1, *s2;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_store_open(root1, &s1, &e), CBC_OK);
    cr_assert_eq(cbc_store_open(root2, &s2, &e), CBC_OK);
    char spec[128];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d|namespace=ls", srv.port);
    cr_assert_eq(cbc_store_attach_remote(s1, spec, NULL, NULL, &e), CBC_OK, "%s", e.msg);
    cr_assert_eq(cbc_store_attach_remote(s2, spec, NULL, NULL, &e), CBC_OK, "%s", e.msg);
    struct cbc_hash key = {{0x5e, 0xed}};
    const char *lease_key = "cubincache:v1:ls:lease:5eed0000000000000000000000000000";
    char got[128], args[160];

    /* the protocol of store.h: the holder publishes, then releases; the
     * waiter's next acquire is ACQUIRED and its lookup hits, from the remote */
    struct cbc_store_lease holder, waiter;
    struct cbc_target t = cbc_store_result_target();
    uint8_t *data = NULL;
    size_t len = 0;
    enum cbc_lookup res;
    char why[200];
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &holder), CBC_LEASE_ACQUIRED);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &waiter), CBC_LEASE_HELD);
    cr_assert_eq(cbc_store_put(s1, &key, &t, (const uint8_t *)"compiled", 8, &e), CBC_OK, "%s",
                 e.msg);
    cbc_store_remote_lease_release(s1, &holder);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &waiter), CBC_LEASE_ACQUIRED);
    cr_assert_eq(cbc_store_get(s2, &key, &t, &data, &len, &res, why, sizeof why, &e), CBC_OK,
                 "%s", e.msg);
    cr_assert_eq(res, CBC_LOOKUP_HIT, "the waiter misses the holder's result");
    cr_assert(cbc_store_last_remote(s2));
    cr_assert(len == 8 && !memcmp(data, "compiled", 8));
    free(data);
    cbc_store_remote_lease_release(s2, &waiter);

    /* a holder that dies: held for its ttl (in ms: PX), free after it */
    struct cbc_store_lease dead, l2;
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 1000, &dead), CBC_LEASE_ACQUIRED);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &l2), CBC_LEASE_HELD);
    cr_assert(!l2.acquired);
    snprintf(args, sizeof args, "get %s", lease_key);
    redis_cli(&srv, args, got, sizeof got);
    cr_assert_str_eq(got, dead.token, "the lease's value is its holder's token");
    snprintf(args, sizeof args, "pttl %s", lease_key);
    redis_cli(&srv, args, got, sizeof got);
    long pttl = strtol(got, NULL, 10);
    cr_assert(pttl > 0 && pttl <= 1000, "pttl %s for a ttl of 1000 ms", got);
    usleep(1200000);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &l2), CBC_LEASE_ACQUIRED,
                 "a lease whose holder never released it is free after its ttl");

    /* the late holder's release leaves the new holder's lease alone */
    cbc_store_remote_lease_release(s1, &dead);
    cr_assert(!dead.acquired);
    snprintf(args, sizeof args, "get %s", lease_key);
    redis_cli(&srv, args, got, sizeof got);
    cr_assert_str_eq(got, l2.token, "another's release took the holder's lease");
    /* nor does a lease of the same key with another token */
    struct cbc_store_lease forged = l2;
    forged.token[0] = forged.token[0] == '0' ? '1' : '0';
    cbc_store_remote_lease_release(s1, &forged);
    redis_cli(&srv, args, got, sizeof got);
    cr_assert_str_eq(got, l2.token, "a release with another token took the holder's lease");
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &dead), CBC_LEASE_HELD);

    /* the holder's release frees it at once */
    cbc_store_remote_lease_release(s2, &l2);
    snprintf(args, sizeof args, "exists %s", lease_key);
    redis_cli(&srv, args, got, sizeof got);
    cr_assert_str_eq(got, "0", "the holder's release left the lease in place");
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &dead), CBC_LEASE_ACQUIRED);
    cbc_store_remote_lease_release(s1, &dead);

    /* a remote that fails: NONE, the caller compiles */
    redis_stop(&srv);
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &dead), CBC_LEASE_NONE);
    cr_assert(!dead.acquired);
    cbc_store_close(s1);
    cbc_store_close(s2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", root1, root2);
    cr_assert_eq(system(cmd), 0);
}

Test(remote, leases_through_the_store)
{
    struct redis_srv srv;
    if (!redis_start(&srv))
        cr_skip_test("redis-server is not installed");
    char root1[] = "/tmp/cbc-lease-a.XXXXXX", root2[] = "/tmp/cbc-lease-b.XXXXXX";
    cr_assert_not_null(mkdtemp(root1));
    cr_assert_not_null(mkdtemp(root2));
    struct cbc_store *s1, *s2;
    struct cbc_err e = {0};
    cr_assert_eq(cbc_store_open(root1, &s1, &e), CBC_OK);
    cr_assert_eq(cbc_store_open(root2, &s2, &e), CBC_OK);
    struct cbc_hash key = {{1, 2, 3, 4}};
    struct cbc_store_lease l1, l2;
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &l1), CBC_LEASE_NONE,
                 "no remote: the caller compiles");
    char spec[128];
    snprintf(spec, sizeof spec, "redis://127.0.0.1:%d", srv.port);
    cr_assert_eq(cbc_store_attach_remote(s1, spec, NULL, NULL, &e), CBC_OK, "%s", e.msg);
    cr_assert_eq(cbc_store_attach_remote(s2, spec, NULL, NULL, &e), CBC_OK, "%s", e.msg);
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &l1), CBC_LEASE_ACQUIRED);
    cr_assert(l1.acquired);
    cr_assert_eq(strlen(l1.token), 32);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &l2), CBC_LEASE_HELD);
    cr_assert_str_neq(l1.token, l2.token, "each acquire its own token");
    cbc_store_remote_lease_release(s2, &l2); /* not acquired: nothing */
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &l2), CBC_LEASE_HELD);
    cbc_store_remote_lease_release(s1, &l1);
    cr_assert(!l1.acquired);
    cr_assert_eq(cbc_store_remote_lease_acquire(s2, &key, 5000, &l2), CBC_LEASE_ACQUIRED);
    cbc_store_remote_lease_release(s2, &l2);
    /* HTTP has no leases: the caller compiles */
    cr_assert_eq(cbc_store_attach_remote(s1, "http://127.0.0.1:9/c", NULL, NULL, &e), CBC_OK);
    cr_assert_eq(cbc_store_remote_lease_acquire(s1, &key, 5000, &l1), CBC_LEASE_NONE);
    cbc_store_close(s1);
    cbc_store_close(s2);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", root1, root2);
    cr_assert_eq(system(cmd), 0);
    redis_stop(&srv);
}
