/* test_direct.c: dependency lists and records: round trips, every
 * truncation and corruption refused without a crash, a list fetched under
 * the wrong id refused, matching by content, the newest candidate first. */
#include "direct.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct cbc_dep_list sample_list(void)
{
    struct cbc_dep_list l = {.recorded_ns = 1001, .deps = calloc(3, sizeof(struct cbc_direct_dep))};
    for (int d = 0; d < 3; d++) {
        char p[64];
        snprintf(p, sizeof p, "/inc/%d.h", d);
        l.deps[l.n].path = strdup(p);
        l.deps[l.n].hash.b[5] = (uint8_t)d;
        l.deps[l.n++].stamp = (struct cbc_stamp){1, 2, 3, 4, (uint64_t)d + 5};
    }
    cr_assert(cbc_dep_list_id(&l, &l.id));
    return l;
}

Test(direct, lists_round_trip_under_their_id)
{
    struct cbc_dep_list l = sample_list(), back;
    size_t len;
    uint8_t *bytes = cbc_dep_list_encode(&l, &len);
    cr_assert_not_null(bytes);
    cr_assert_eq(cbc_dep_list_decode(bytes, len, &l.id, &back, NULL), CBC_OK);
    cr_assert_eq(back.n, 3);
    cr_assert_str_eq(back.deps[2].path, "/inc/2.h");
    cr_assert_eq(back.recorded_ns, 1001);
    cr_assert_eq(back.deps[1].stamp.dev, 6);
    cr_assert(cbc_hash_eq(&back.id, &l.id));
    cbc_dep_list_release(&back);
    free(bytes);
    cbc_dep_list_release(&l);
}

Test(direct, the_id_is_paths_and_contents_not_stamps)
{
    struct cbc_dep_list a = sample_list(), b = sample_list();
    b.deps[0].stamp.mtime_ns = 99;
    b.recorded_ns = 5;
    struct cbc_hash ib;
    cbc_dep_list_id(&b, &ib);
    cr_assert(cbc_hash_eq(&a.id, &ib), "fresh stamps keep the list's id");
    b.deps[1].hash.b[0] ^= 1;
    cbc_dep_list_id(&b, &ib);
    cr_assert_not(cbc_hash_eq(&a.id, &ib), "new content is a new list");
    cbc_dep_list_release(&a);
    cbc_dep_list_release(&b);
}

Test(direct, lists_refuse_truncation_garbage_and_the_wrong_id)
{
    struct cbc_dep_list l = sample_list(), back;
    size_t len;
    uint8_t *bytes = cbc_dep_list_encode(&l, &len);
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(cbc_dep_list_decode(bytes, cut, &l.id, &back, NULL), CBC_E_FORMAT,
                     "cut at %zu", cut);
    uint8_t *more = malloc(len + 1);
    memcpy(more, bytes, len);
    more[len] = 0;
    cr_assert_eq(cbc_dep_list_decode(more, len + 1, &l.id, &back, NULL), CBC_E_FORMAT);
    memcpy(more, bytes, len);
    more[16] = 0xff; /* a lying file count */
    cr_assert_eq(cbc_dep_list_decode(more, len, &l.id, &back, NULL), CBC_E_FORMAT);
    memcpy(more, bytes, len);
    more[len - 50] ^= 1; /* a flipped content hash: not the list asked for */
    cr_assert_eq(cbc_dep_list_decode(more, len, &l.id, &back, NULL), CBC_E_FORMAT);
    free(more);
    free(bytes);
    cbc_dep_list_release(&l);
}

Test(direct, records_round_trip_and_refuse_bad_sizes)
{
    struct cbc_direct_rec r = {0}, back;
    for (int i = 0; i < 3; i++) {
        struct cbc_direct_cand c = {{{(uint8_t)(i + 1)}}, {{(uint8_t)(i + 10)}}};
        cbc_direct_push(&r, &c);
    }
    size_t len;
    uint8_t *bytes = cbc_direct_encode(&r, &len);
    cr_assert_eq(cbc_direct_decode(bytes, len, &back, NULL), CBC_OK);
    cr_assert_eq(back.n, 3);
    cr_assert_eq(back.c[0].result.b[0], 3, "the newest first");
    cr_assert_eq(back.c[2].list.b[0], 10);
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(cbc_direct_decode(bytes, cut, &back, NULL), CBC_E_FORMAT, "cut at %zu", cut);
    bytes[8] = CBC_DIRECT_MAX + 1;
    cr_assert_eq(cbc_direct_decode(bytes, len, &back, NULL), CBC_E_FORMAT);
    free(bytes);
    const uint8_t v1[12] = "CBCDEP1\n\0\0\0\0";
    cr_assert_eq(cbc_direct_decode(v1, sizeof v1, &back, NULL), CBC_E_FORMAT,
                 "an older record is absent, not misread");
}

Test(direct, records_keep_the_newest_candidates_and_one_per_result)
{
    struct cbc_direct_rec r = {0};
    for (int i = 0; i < CBC_DIRECT_MAX + 3; i++) {
        struct cbc_direct_cand c = {{{(uint8_t)i}}, {{0}}};
        cbc_direct_push(&r, &c);
    }
    cr_assert_eq(r.n, CBC_DIRECT_MAX);
    cr_assert_eq(r.c[0].result.b[0], CBC_DIRECT_MAX + 2);
    struct cbc_direct_cand again = {{{CBC_DIRECT_MAX}}, {{7}}};
    cbc_direct_push(&r, &again);
    cr_assert_eq(r.n, CBC_DIRECT_MAX);
    cr_assert_eq(r.c[0].list.b[0], 7);
    for (size_t i = 1; i < r.n; i++)
        cr_assert_neq(r.c[i].result.b[0], CBC_DIRECT_MAX, "one candidate per result");
}

Test(direct, lists_match_by_content)
{
    char path[] = "/tmp/cbc-direct.XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, "v1", 2), 2);
    close(fd);
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_dep_list l = {.recorded_ns = cbc_now_ns(),
                             .deps = calloc(1, sizeof(struct cbc_direct_dep)), .n = 1};
    l.deps[0].path = strdup(path);
    cbc_filememo_hash(m, path, NULL, NULL, 0, &l.deps[0].hash, NULL, NULL);
    cbc_stamp_of(path, &l.deps[0].stamp);
    cbc_filememo_free(m);

    bool stale;
    m = cbc_filememo_new();
    cr_assert(cbc_dep_list_match(&l, m, &stale));
    cr_assert(stale, "stamps taken within a second of the change are not trusted");
    cbc_filememo_free(m);

    fd = open(path, O_WRONLY | O_TRUNC);
    cr_assert_eq(write(fd, "v2", 2), 2);
    close(fd);
    m = cbc_filememo_new();
    cr_assert_not(cbc_dep_list_match(&l, m, &stale), "edited content must not match");
    cbc_filememo_free(m);
    cbc_dep_list_release(&l);
    unlink(path);
}
