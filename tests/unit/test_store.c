/* test_store.c: the cache store: hits verified, every kind of bad entry
 * dropped (corrupt, truncated, mislabeled, misfiled), atomic publish, LRU
 * trim, counters, sizes. Entries hold real nvcc output. */
#include "fixtures.h"
#include "store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *new_root(void)
{
    char *root = strdup("/tmp/cbc-store-test.XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    return root;
}

static struct cbc_store *open_store(const char *root)
{
    struct cbc_store *s;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_store_open(root, &s, &err), CBC_OK, "%s", err.msg);
    return s;
}

static char *object_path(const char *root, const struct cbc_hash *key)
{
    char hex[33];
    cbc_hash_hex(key, hex);
    return cbc_asprintf("%s/v1/objects/%.2s/%s.cbc", root, hex, hex + 2);
}

static void rm_rf(const char *root)
{
    char *cmd = cbc_asprintf("rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
}

static struct cbc_target T(const char *name)
{
    struct cbc_target t;
    cr_assert(cbc_target_parse(name, &t), "%s", name);
    return t;
}

Test(store, put_then_get_is_a_verified_hit)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *cubin = fixture("k.sm_90.cubin", &len);
    struct cbc_hash key = {{1, 2, 3}};
    struct cbc_target t = T("sm_90");
    cr_assert_eq(cbc_store_put(s, &key, &t, cubin, len, NULL), CBC_OK);
    uint8_t *got = NULL;
    size_t glen = 0;
    enum cbc_lookup r;
    char why[256];
    cr_assert_eq(cbc_store_get(s, &key, &t, &got, &glen, &r, why, sizeof why, NULL), CBC_OK);
    cr_assert_eq(r, CBC_LOOKUP_HIT);
    cr_assert_eq(glen, len);
    cr_assert_eq(memcmp(got, cubin, len), 0);
    free(got);
    struct cbc_hash other = {{9}};
    cr_assert_eq(cbc_store_get(s, &other, &t, &got, &glen, &r, why, sizeof why, NULL), CBC_OK);
    cr_assert_eq(r, CBC_LOOKUP_MISS);
    cbc_store_close(s);
    free(cubin);
    rm_rf(root);
    free(root);
}

/* Puts a good entry, damages its file with `damage`, expects DROPPED with
 * `needle` in the reason, and the file gone when it still carries the
 * store's header (else it is not provably the store's: left, then replaced
 * by the next put). */
static void expect_dropped_as(const char *fixture_name, const char *label,
                              void (*damage)(const char *path), const char *needle, bool removed)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *img = fixture(fixture_name, &len);
    struct cbc_hash key = {{7, 7}};
    struct cbc_target t = T(label);
    cr_assert_eq(cbc_store_put(s, &key, &t, img, len, NULL), CBC_OK);
    char *path = object_path(root, &key);
    if (damage)
        damage(path);
    uint8_t *got = NULL;
    size_t glen;
    enum cbc_lookup r;
    char why[512] = "";
    cr_assert_eq(cbc_store_get(s, &key, &t, &got, &glen, &r, why, sizeof why, NULL), CBC_OK);
    cr_assert_eq(r, CBC_LOOKUP_DROPPED, "a bad entry must not be served (%s)", fixture_name);
    cr_assert(strstr(why, needle), "reason '%s' lacks '%s'", why, needle);
    if (removed) {
        cr_assert_neq(access(path, F_OK), 0, "a dropped entry is removed");
    } else {
        cr_assert_eq(access(path, F_OK), 0, "a file without the store's header is left alone");
        cr_assert_eq(cbc_store_put(s, &key, &t, img, len, NULL), CBC_OK);
        cr_assert_eq(cbc_store_get(s, &key, &t, &got, &glen, &r, why, sizeof why, NULL), CBC_OK);
        cr_assert_eq(r, CBC_LOOKUP_HIT, "the next put replaces it");
        free(got);
    }
    cbc_store_close(s);
    free(path);
    free(img);
    rm_rf(root);
    free(root);
}

static void expect_dropped(const char *fixture_name, const char *label,
                           void (*damage)(const char *path), const char *needle)
{
    expect_dropped_as(fixture_name, label, damage, needle, true);
}

static void flip_last_byte(const char *path)
{
    FILE *f = fopen(path, "r+");
    fseek(f, -1, SEEK_END);
    int c = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(c ^ 0x40, f);
    fclose(f);
}

static void truncate_half(const char *path)
{
    struct stat st;
    stat(path, &st);
    cr_assert_eq(truncate(path, st.st_size / 2), 0);
}

static void other_magic(const char *path)
{
    FILE *f = fopen(path, "r+");
    fputs("XXXXXXXX", f);
    fclose(f);
}

static void zero_header(const char *path)
{
    FILE *f = fopen(path, "r+");
    for (int i = 0; i < 64; i++)
        fputc(0, f);
    fclose(f);
}

Test(store, corrupt_entry_is_dropped)
{
    expect_dropped("k.sm_90.cubin", "sm_90", flip_last_byte, "hash");
}

Test(store, truncated_entry_is_dropped)
{
    expect_dropped("k.sm_90.cubin", "sm_90", truncate_half, "truncated");
}

Test(store, entry_with_another_magic_is_not_served_and_left_alone)
{
    expect_dropped_as("k.sm_90.cubin", "sm_90", other_magic, "magic", false);
}

Test(store, entry_zeroed_by_a_torn_write_is_dropped)
{
    expect_dropped("k.sm_90.cubin", "sm_90", zero_header, "magic");
}

Test(store, mislabeled_cubin_is_dropped_even_with_a_good_hash)
{
    /* the seed's file: sm_89 code filed as sm_90, hash intact */
    expect_dropped("k.sm_89.cubin", "sm_90", NULL, "labelled sm_90 but holds sm_89");
}

Test(store, plain_entry_holding_arch_specific_code_is_dropped)
{
    expect_dropped("k.sm_90a.cubin", "sm_90", NULL, "holds sm_90a");
}

Test(store, ptx_labelled_for_another_arch_is_dropped)
{
    expect_dropped("k.compute_80.ptx", "compute_90", NULL, "compute_80");
}

Test(store, entry_under_the_wrong_key_is_dropped)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *img = fixture("k.sm_90.cubin", &len);
    struct cbc_hash k1 = {{1}}, k2 = {{2}};
    struct cbc_target t = T("sm_90");
    cbc_store_put(s, &k1, &t, img, len, NULL);
    char *p1 = object_path(root, &k1), *p2 = object_path(root, &k2);
    char *dir = cbc_path_dir(p2);
    cbc_mkdir_p(dir, 0755, NULL);
    cr_assert_eq(rename(p1, p2), 0);
    uint8_t *got;
    size_t glen;
    enum cbc_lookup r;
    char why[256];
    cbc_store_get(s, &k2, &t, &got, &glen, &r, why, sizeof why, NULL);
    cr_assert_eq(r, CBC_LOOKUP_DROPPED);
    cr_assert(strstr(why, "wrong key"), "%s", why);
    cbc_store_close(s);
    free(p1);
    free(p2);
    free(dir);
    free(img);
    rm_rf(root);
    free(root);
}

static size_t count_files(const char *dir)
{
    char *cmd = cbc_asprintf("find '%s' -type f -name '*.cbc' | wc -l", dir);
    FILE *p = popen(cmd, "r");
    size_t n = 0;
    cr_assert_eq(fscanf(p, "%zu", &n), 1);
    pclose(p);
    free(cmd);
    return n;
}

Test(store, trim_removes_least_recently_used_first)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *img = fixture("k.sm_90.cubin", &len);
    struct cbc_target t = T("sm_90");
    struct cbc_hash keys[5];
    for (int i = 0; i < 5; i++) {
        keys[i] = (struct cbc_hash){{(uint8_t)(0x10 + i)}};
        cr_assert_eq(cbc_store_put(s, &keys[i], &t, img, len, NULL), CBC_OK);
        char *p = object_path(root, &keys[i]);
        struct timespec ts[2] = {{1000 + i, 0}, {1000 + i, 0}};
        utimensat(AT_FDCWD, p, ts, 0);
        free(p);
    }
    /* a hit makes the oldest the newest */
    uint8_t *got;
    size_t glen;
    enum cbc_lookup r;
    char why[64];
    cbc_store_get(s, &keys[0], &t, &got, &glen, &r, why, sizeof why, NULL);
    cr_assert_eq(r, CBC_LOOKUP_HIT);
    free(got);
    uint64_t removed = 0, bytes = 0;
    uint64_t entry = len + 64;
    cr_assert_eq(cbc_store_trim(s, 2 * entry, &removed, &bytes, NULL), CBC_OK);
    cr_assert_eq(removed, 3);
    cr_assert_eq(bytes, 3 * entry);
    cr_assert_eq(count_files(root), 2);
    char *p0 = object_path(root, &keys[0]), *p4 = object_path(root, &keys[4]),
         *p1 = object_path(root, &keys[1]);
    cr_assert_eq(access(p0, F_OK), 0, "the recently hit entry survives");
    cr_assert_eq(access(p4, F_OK), 0, "the newest entry survives");
    cr_assert_neq(access(p1, F_OK), 0);
    free(p0);
    free(p4);
    free(p1);
    cbc_store_close(s);
    free(img);
    rm_rf(root);
    free(root);
}

Test(store, put_over_the_limit_trims_automatically)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *img = fixture("k.sm_90.cubin", &len);
    struct cbc_target t = T("sm_90");
    cr_assert_eq(cbc_store_set_max_size(s, 3 * (len + 64), NULL), CBC_OK);
    for (int i = 0; i < 6; i++) {
        struct cbc_hash k = {{(uint8_t)(0x40 + i)}};
        cr_assert_eq(cbc_store_put(s, &k, &t, img, len, NULL), CBC_OK);
    }
    cr_assert_leq(count_files(root), 3);
    cbc_store_close(s);
    free(img);
    rm_rf(root);
    free(root);
}

Test(store, counters_accumulate_across_processes_and_survive_a_torn_file)
{
    char *root = new_root();
    for (int i = 0; i < 3; i++) {
        struct cbc_store *s = open_store(root);
        cbc_store_count(s, 2, 1, 0);
        cbc_store_close(s);
    }
    struct cbc_store *s = open_store(root);
    struct cbc_store_stats st;
    cr_assert_eq(cbc_store_stats(s, &st, NULL), CBC_OK);
    cr_assert_eq(st.hits, 6);
    cr_assert_eq(st.misses, 3);
    cbc_store_close(s);
    char *p = cbc_asprintf("%s/v1/stats", root);
    cbc_file_write_atomic(p, "hits 1\nmiss", 11, 0644, NULL);
    s = open_store(root);
    cr_assert_eq(cbc_store_stats(s, &st, NULL), CBC_OK);
    cr_assert_eq(st.hits, 1);
    cr_assert_eq(st.misses, 0);
    cbc_store_close(s);
    free(p);
    rm_rf(root);
    free(root);
}

Test(store, unusable_root_is_reported_not_crashed)
{
    struct cbc_store *s;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_store_open("/proc/version/cache", &s, &err), CBC_E_CACHE);
    cr_assert(strstr(err.msg, "/proc/version/cache"), "%s", err.msg);
}

Test(store, verify_all_finds_and_drops_bad_entries)
{
    char *root = new_root();
    struct cbc_store *s = open_store(root);
    size_t len;
    uint8_t *img = fixture("k.sm_90.cubin", &len);
    struct cbc_target t = T("sm_90");
    struct cbc_hash good = {{0x51}}, bad = {{0x52}};
    cbc_store_put(s, &good, &t, img, len, NULL);
    cbc_store_put(s, &bad, &t, img, len, NULL);
    char *p = object_path(root, &bad);
    flip_last_byte(p);
    uint64_t checked = 0, dropped = 0;
    cr_assert_eq(cbc_store_verify_all(s, &checked, &dropped, NULL, NULL, NULL, NULL), CBC_OK);
    cr_assert_eq(checked, 2);
    cr_assert_eq(dropped, 1);
    cr_assert_neq(access(p, F_OK), 0);
    cbc_store_close(s);
    free(p);
    free(img);
    rm_rf(root);
    free(root);
}

Test(store, sizes_parse_in_both_unit_systems)
{
    uint64_t v;
    cr_assert(cbc_parse_size("1024", &v) && v == 1024);
    cr_assert(cbc_parse_size("5G", &v) && v == 5000000000ull);
    cr_assert(cbc_parse_size("500M", &v) && v == 500000000ull);
    cr_assert(cbc_parse_size("1.5GiB", &v) && v == 1610612736ull);
    cr_assert(cbc_parse_size("64Ki", &v) && v == 65536);
    cr_assert_not(cbc_parse_size("lots", &v));
    cr_assert_not(cbc_parse_size("5Q", &v));
    cr_assert_not(cbc_parse_size("-1G", &v));
}
