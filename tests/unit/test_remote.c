/* test_remote.c: the remote cache's spec parser (what a URL and its
 * attributes mean, that a password is never shown, that every bad spec is
 * refused naming its part) and its value codec (round trips, raw and zstd,
 * and every damaged value refused). The client against a real Redis is
 * tests/cli/remote.sh. */
#include "remote.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

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
        {"http://host", "not a redis://"},
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
