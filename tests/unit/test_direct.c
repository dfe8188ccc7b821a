/* test_direct.c: dependency records: round trip, every truncation and
 * corruption refused without a crash, matching by content. */
#include "direct.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct cbc_direct_rec sample(void)
{
    struct cbc_direct_rec r = {calloc(2, sizeof(struct cbc_direct_cand)), 2};
    for (int c = 0; c < 2; c++) {
        r.c[c].result.b[0] = (uint8_t)(c + 1);
        r.c[c].recorded_ns = 1000 + (uint64_t)c;
        r.c[c].n = 2;
        r.c[c].deps = calloc(2, sizeof(struct cbc_direct_dep));
        for (int d = 0; d < 2; d++) {
            char p[64];
            snprintf(p, sizeof p, "/inc/%d/%d.h", c, d);
            r.c[c].deps[d].path = strdup(p);
            r.c[c].deps[d].hash.b[5] = (uint8_t)d;
            r.c[c].deps[d].stamp = (struct cbc_stamp){1, 2, 3, 4, 5};
        }
    }
    return r;
}

Test(direct, round_trips)
{
    struct cbc_direct_rec r = sample(), back;
    size_t len;
    uint8_t *bytes = cbc_direct_encode(&r, &len);
    cr_assert_not_null(bytes);
    cr_assert_eq(cbc_direct_decode(bytes, len, &back, NULL), CBC_OK);
    cr_assert_eq(back.n, 2);
    cr_assert_str_eq(back.c[1].deps[1].path, "/inc/1/1.h");
    cr_assert_eq(back.c[1].recorded_ns, 1001);
    cr_assert_eq(back.c[0].deps[0].stamp.dev, 5);
    cr_assert(cbc_hash_eq(&back.c[1].result, &r.c[1].result));
    cbc_direct_release(&back);
    cbc_direct_release(&r);
    free(bytes);
}

Test(direct, refuses_every_truncation_and_trailing_garbage)
{
    struct cbc_direct_rec r = sample(), back;
    size_t len;
    uint8_t *bytes = cbc_direct_encode(&r, &len);
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(cbc_direct_decode(bytes, cut, &back, NULL), CBC_E_FORMAT, "cut at %zu", cut);
    uint8_t *more = malloc(len + 1);
    memcpy(more, bytes, len);
    more[len] = 0;
    cr_assert_eq(cbc_direct_decode(more, len + 1, &back, NULL), CBC_E_FORMAT);
    /* a lying dependency count */
    memcpy(more, bytes, len);
    more[12 + 24] = 0xff;
    cr_assert_eq(cbc_direct_decode(more, len, &back, NULL), CBC_E_FORMAT);
    free(more);
    free(bytes);
    cbc_direct_release(&r);
}

Test(direct, matches_by_content_and_keeps_the_newest_first)
{
    char path[] = "/tmp/cbc-direct.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, "v1", 2), 2);
    close(fd);
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_hash h1;
    cbc_filememo_hash(m, path, NULL, NULL, 0, &h1, NULL, NULL);
    cbc_filememo_free(m);

    struct cbc_direct_rec r = {0};
    struct cbc_direct_cand c1 = {{{0xa1}}, cbc_now_ns(), calloc(1, sizeof(struct cbc_direct_dep)), 1};
    c1.deps[0].path = strdup(path);
    c1.deps[0].hash = h1;
    cbc_stamp_of(path, &c1.deps[0].stamp);
    cr_assert_eq(cbc_direct_push(&r, &c1, NULL), CBC_OK);

    bool stale;
    m = cbc_filememo_new();
    cr_assert_eq(cbc_direct_match(&r, m, &stale), 0);
    cbc_filememo_free(m);

    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "v2", 2), 2);
    close(fd);
    m = cbc_filememo_new();
    cr_assert_eq(cbc_direct_match(&r, m, &stale), -1, "edited content must not match");
    cbc_filememo_free(m);

    for (int i = 0; i < CBC_DIRECT_MAX + 3; i++) {
        struct cbc_direct_cand c = {{{(uint8_t)i}}, 1, calloc(1, sizeof(struct cbc_direct_dep)), 0};
        cr_assert_eq(cbc_direct_push(&r, &c, NULL), CBC_OK);
    }
    cr_assert_eq(r.n, CBC_DIRECT_MAX);
    cr_assert_eq(r.c[0].result.b[0], CBC_DIRECT_MAX + 2);
    cbc_direct_release(&r);
    unlink(path);
}
