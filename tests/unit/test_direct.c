/* test_direct.c: dependency lists and records: round trips, every
 * truncation and corruption refused without a crash, a list fetched under
 * the wrong id refused, matching by content, the newest candidate first. */
#include "direct.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
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
    cr_assert_eq(cbc_dep_list_decode(bytes, len, &l.id, NULL, &back, NULL), CBC_OK);
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
        cr_assert_eq(cbc_dep_list_decode(bytes, cut, &l.id, NULL, &back, NULL), CBC_E_FORMAT,
                     "cut at %zu", cut);
    uint8_t *more = malloc(len + 1);
    memcpy(more, bytes, len);
    more[len] = 0;
    cr_assert_eq(cbc_dep_list_decode(more, len + 1, &l.id, NULL, &back, NULL), CBC_E_FORMAT);
    memcpy(more, bytes, len);
    more[16] = 0xff; /* a lying file count */
    cr_assert_eq(cbc_dep_list_decode(more, len, &l.id, NULL, &back, NULL), CBC_E_FORMAT);
    memcpy(more, bytes, len);
    more[len - 50] ^= 1; /* a flipped content hash: not the list asked for */
    cr_assert_eq(cbc_dep_list_decode(more, len, &l.id, NULL, &back, NULL), CBC_E_FORMAT);
    free(more);
    free(bytes);
    cbc_dep_list_release(&l);
}

Test(direct, records_round_trip_and_refuse_bad_sizes)
{
    struct cbc_direct_rec r = {0}, back;
    for (int i = 0; i < 3; i++) {
        struct cbc_direct_cand c = {{{(uint8_t)(i + 1)}}, {{(uint8_t)(i + 10)}}, 0};
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
        struct cbc_direct_cand c = {{{(uint8_t)i}}, {{0}}, 0};
        cbc_direct_push(&r, &c);
    }
    cr_assert_eq(r.n, CBC_DIRECT_MAX);
    cr_assert_eq(r.c[0].result.b[0], CBC_DIRECT_MAX + 2);
    struct cbc_direct_cand again = {{{CBC_DIRECT_MAX}}, {{7}}, 0};
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

/* ---- a build's direct mode over a real store ------------------------------ */

struct scratch {
    char dir[64], root[96], file[2][96];
};

static void scratch_init(struct scratch *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/cbc-direct-session.XXXXXX");
    cr_assert_not_null(mkdtemp(s->dir));
    snprintf(s->root, sizeof s->root, "%s/cache", s->dir);
    for (int i = 0; i < 2; i++) {
        snprintf(s->file[i], sizeof s->file[i], "%s/h%d.h", s->dir, i);
        FILE *f = fopen(s->file[i], "w");
        cr_assert_not_null(f);
        fprintf(f, "// header %d\n", i);
        fclose(f);
    }
}

static void scratch_release(struct scratch *s)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    cr_assert_eq(system(cmd), 0);
}

/* The list a compile that read both headers would record. */
static struct cbc_dep_list read_list(const struct scratch *s, struct cbc_filememo *m)
{
    struct cbc_dep_list l = {.deps = calloc(2, sizeof(struct cbc_direct_dep))};
    for (int i = 0; i < 2; i++) {
        l.deps[i].path = strdup(s->file[i]);
        cr_assert_eq(cbc_filememo_hash(m, s->file[i], NULL, NULL, 0, &l.deps[i].hash,
                                       &l.deps[i].stamp, NULL), CBC_OK);
    }
    l.n = 2;
    return l;
}

static void age(const char *path, int seconds_ago)
{
    struct timespec t[2] = {{time(NULL) - seconds_ago, 0}, {time(NULL) - seconds_ago, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* Past the racy window (filememo.c): a stamp taken now of a file changed
 * before this is trusted. */
static void past_racy_window(void)
{
    struct timespec t = {1, 100000000};
    nanosleep(&t, NULL);
}

/* One lookup in a session of its own: whether it matched, and how many
 * files it had to read to know. */
static bool lookup_once(const struct scratch *s, const struct cbc_hash *dk, struct cbc_hash *result,
                        size_t *reads)
{
    struct cbc_store *st;
    cr_assert_eq(cbc_store_open(s->root, &st, NULL), CBC_OK);
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_direct *d = cbc_direct_new(st, m, NULL);
    struct cbc_direct_target t = {.direct_key = *dk};
    bool matched = false;
    cr_assert_eq(cbc_direct_lookup(d, &t, &matched, result, NULL), CBC_OK);
    if (matched) {
        size_t n = 0;
        const struct cbc_direct_dep *deps = cbc_direct_deps(d, &t, &n);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(deps[1].path, s->file[1]);
    }
    cbc_direct_refresh(d);
    *reads = cbc_filememo_reads(m);
    cbc_direct_free(d);
    cbc_filememo_free(m);
    cbc_store_close(st);
    return matched;
}

Test(direct, a_recorded_compile_is_found_by_the_next_build)
{
    struct scratch s;
    scratch_init(&s);
    for (int i = 0; i < 2; i++)
        age(s.file[i], 3600);
    past_racy_window(); /* the ages set the files' ctime to now */
    struct cbc_hash dk[2] = {{{1}}, {{2}}}, res[2] = {{{0xa1}}, {{0xa2}}}, got;
    size_t reads;
    cr_assert_not(lookup_once(&s, &dk[0], &got, &reads), "an empty cache matched");

    /* two targets of one source: one list, two records */
    struct cbc_store *st;
    cr_assert_eq(cbc_store_open(s.root, &st, NULL), CBC_OK);
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_direct *d = cbc_direct_new(st, m, NULL);
    for (int k = 0; k < 2; k++) {
        struct cbc_direct_target t = {.direct_key = dk[k]};
        bool matched;
        cr_assert_eq(cbc_direct_lookup(d, &t, &matched, &got, NULL), CBC_OK);
        cr_assert_not(matched);
        struct cbc_dep_list l = read_list(&s, m);
        cr_assert(cbc_direct_record(d, &t, &res[k], 0, &l, NULL));
        cbc_dep_list_release(&l);
    }
    cbc_direct_free(d);
    cbc_filememo_free(m);
    cbc_store_close(st);

    for (int k = 0; k < 2; k++) {
        cr_assert(lookup_once(&s, &dk[k], &got, &reads), "target %d not found", k);
        cr_assert(cbc_hash_eq(&got, &res[k]), "target %d found another result", k);
        cr_assert_eq(reads, 0, "old, unchanged files were read (%zu): stamps should do", reads);
    }
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(find '%s/v1/deps' -name '*.dep' | wc -l) = 1", s.root);
    cr_assert_eq(system(cmd), 0, "the two targets of one source do not share one list");

    /* a touch (new stamps, same content) matches by hashing, once: the
     * refresh stores the new stamps, and the build after reads nothing */
    age(s.file[0], 7200);
    past_racy_window();
    cr_assert(lookup_once(&s, &dk[0], &got, &reads));
    cr_assert_gt(reads, 0, "a touched file was trusted on its old stamp");
    cr_assert(lookup_once(&s, &dk[0], &got, &reads));
    cr_assert_eq(reads, 0, "the refreshed stamps were not stored (%zu files read)", reads);

    /* an edit misses */
    FILE *f = fopen(s.file[1], "a");
    fprintf(f, "// edited\n");
    fclose(f);
    age(s.file[1], 3600);
    cr_assert_not(lookup_once(&s, &dk[1], &got, &reads), "an edited header still matched");
    scratch_release(&s);
}

/* ---- probes: places looked at and found empty ------------------------------ */

/* A list of no files and probes under s->dir: "inc2/h.h", "h.h", and
 * "sub/x.h" (under a directory that does not exist either). */
static struct cbc_dep_list probe_list(const struct scratch *s)
{
    struct cbc_dep_list l = {.recorded_ns = cbc_now_ns(),
                             .deps = calloc(1, sizeof(struct cbc_direct_dep)),
                             .probes = calloc(1, sizeof(struct cbc_probe_dir)),
                             .names = calloc(3, sizeof(char *))};
    l.probes[0] = (struct cbc_probe_dir){strdup(s->dir), {0}, 0, 3};
    l.names[0] = strdup("h.h");
    l.names[1] = strdup("inc2/h.h");
    l.names[2] = strdup("sub/x.h");
    l.n_probes = 1;
    l.n_names = 3;
    cr_assert(cbc_dep_list_stamp_probes(&l));
    cr_assert(cbc_dep_list_id(&l, &l.id));
    return l;
}

Test(direct, probes_round_trip_and_are_part_of_the_id)
{
    struct scratch s;
    scratch_init(&s);
    struct cbc_dep_list l = probe_list(&s), back;
    size_t len;
    uint8_t *bytes = cbc_dep_list_encode(&l, &len);
    cr_assert_not_null(bytes);
    cr_assert_eq(cbc_dep_list_decode(bytes, len, &l.id, NULL, &back, NULL), CBC_OK);
    cr_assert_eq(back.n_probes, 1);
    cr_assert_eq(back.n_names, 3);
    cr_assert_str_eq(back.probes[0].dir, s.dir);
    cr_assert_str_eq(back.names[back.probes[0].first + 2], "sub/x.h");
    cr_assert(cbc_stamp_eq(&back.probes[0].stamp, &l.probes[0].stamp));
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(cbc_dep_list_decode(bytes, cut, &l.id, NULL, &back, NULL), CBC_E_FORMAT,
                     "cut at %zu", cut);
    bytes[20] = 0xff; /* a lying directory count */
    cr_assert_eq(cbc_dep_list_decode(bytes, len, NULL, NULL, &back, NULL), CBC_E_FORMAT);
    free(bytes);
    struct cbc_hash before = l.id, after;
    free(l.names[2]);
    l.names[2] = strdup("sub/y.h");
    cbc_dep_list_id(&l, &after);
    cr_assert_not(cbc_hash_eq(&before, &after), "another probe is another list");
    l.probes[0].stamp.mtime_ns++;
    struct cbc_hash again;
    l.names[2][4] = 'x';
    cbc_dep_list_id(&l, &again);
    cr_assert(cbc_hash_eq(&before, &again), "a directory's stamp is not part of the id");
    cbc_dep_list_release(&l);
    scratch_release(&s);
}

Test(direct, a_file_where_the_compile_found_none_is_a_miss)
{
    const char *names[] = {"h.h", "inc2/h.h", "sub/x.h"};
    for (size_t which = 0; which < 3; which++) {
        struct scratch s;
        scratch_init(&s);
        char p[256];
        age(s.dir, 3600);
        past_racy_window();
        struct cbc_dep_list l = probe_list(&s);
        l.recorded_ns = cbc_now_ns();
        bool stale;
        struct cbc_filememo *m = cbc_filememo_new();
        cr_assert(cbc_dep_list_match(&l, m, &stale), "nothing appeared, yet no match");
        cr_assert_not(stale, "an old directory's stamp was not trusted");
        /* a new header where the compile looked first */
        snprintf(p, sizeof p, "%s/%s", s.dir, names[which]);
        if (which > 0) {
            char d[256];
            snprintf(d, sizeof d, "%s/%s", s.dir, which == 1 ? "inc2" : "sub");
            cr_assert_eq(mkdir(d, 0755), 0);
        }
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fclose(f);
        cr_assert_not(cbc_dep_list_match(&l, m, &stale), "'%s' appeared and still matched",
                      names[which]);
        char *found = cbc_dep_list_found_probe(&l);
        cr_assert_not_null(found);
        cr_assert_str_eq(found, p);
        free(found);
        cbc_filememo_free(m);
        cbc_dep_list_release(&l);
        scratch_release(&s);
    }
}

Test(direct, a_changed_directory_is_checked_by_name_and_refreshed)
{
    struct scratch s;
    scratch_init(&s);
    age(s.dir, 3600);
    past_racy_window();
    struct cbc_dep_list l = probe_list(&s);
    l.recorded_ns = cbc_now_ns();
    /* an unrelated file in the directory changes its stamp, not the answer */
    char p[256];
    snprintf(p, sizeof p, "%s/unrelated.txt", s.dir);
    FILE *f = fopen(p, "w");
    fclose(f);
    bool stale;
    struct cbc_filememo *m = cbc_filememo_new();
    cr_assert(cbc_dep_list_match(&l, m, &stale), "an unrelated file made a miss");
    cbc_filememo_free(m);
    /* stamping again (a refresh) takes the directory as it is now */
    struct cbc_stamp old = l.probes[0].stamp;
    cr_assert(cbc_dep_list_stamp_probes(&l));
    cr_assert_not(cbc_stamp_eq(&old, &l.probes[0].stamp), "the refresh kept the old stamp");
    /* and a stamp taken while a probe is present is never kept */
    snprintf(p, sizeof p, "%s/h.h", s.dir);
    f = fopen(p, "w");
    fclose(f);
    cr_assert_not(cbc_dep_list_stamp_probes(&l), "a present probe was stamped as absent");
    struct cbc_stamp zero = {0};
    cr_assert(cbc_stamp_eq(&l.probes[0].stamp, &zero));
    unlink(p);
    m = cbc_filememo_new();
    cr_assert(cbc_dep_list_match(&l, m, &stale), "gone again, but no match");
    cbc_filememo_free(m);
    cbc_dep_list_release(&l);
    scratch_release(&s);
}
