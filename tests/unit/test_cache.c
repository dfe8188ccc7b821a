/* test_cache.c: the cache conversation every compile has (cache.h), run
 * with a fake compiler in milliseconds: a miss committed and found by the
 * next process, a bad entry dropped, an input changed during the compile,
 * a header appearing where the compile found none, a store that refuses
 * writes (read-only, and full: RLIMIT_FSIZE), and the result container's
 * round trip and refusal of every truncation and corruption. */
#include "cache.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char dir[64], root[96], src[128], hdr[128], probe[128];

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fputs(text, f);
    fclose(f);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/cbc-cache.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(root, sizeof root, "%s/cache", dir);
    snprintf(src, sizeof src, "%s/k.cu", dir);
    snprintf(hdr, sizeof hdr, "%s/h.h", dir);
    snprintf(probe, sizeof probe, "%s/inc2/h.h", dir);
    char inc2[128];
    snprintf(inc2, sizeof inc2, "%s/inc2", dir);
    mkdir(inc2, 0755);
    put(src, "#include \"h.h\"\n");
    put(hdr, "#define V 1\n");
    /* old files, so their stamps are trusted at once */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "touch -d '1 hour ago' '%s' '%s' '%s'", src, hdr, inc2);
    cr_assert_eq(system(cmd), 0);
    struct timespec ts = {1, 50000000};
    nanosleep(&ts, NULL);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(cache, .init = setup, .fini = teardown);

/* The fake compiler: it reads the source and the header, looked for the
 * header in inc2 first, and "compiles" the header's text into its output.
 * What the shim would have logged, as a trace. */
static void fake_compile(struct cbc_trace *t, uint8_t **out, size_t *len)
{
    char log[1024];
    int n = snprintf(log, sizeof log, "P/bin/fake-nvcc%cR%s%cA%s%cR%s", 0, src, 0, probe, 0, hdr);
    cr_assert_eq(cbc_trace_parse((const uint8_t *)log, (size_t)n + 1, "fake", t, NULL), CBC_OK);
    cr_assert_eq(cbc_file_read(hdr, out, len, NULL), CBC_OK);
}

struct session {
    struct cbc_store *store;
    struct cbc_filememo *memo;
    struct cbc_cache cache;
    int warnings;
};

static void on_msg(void *ctx, enum cbc_msg_kind kind, const char *text)
{
    (void)text;
    if (kind == CBC_MSG_WARNING)
        ((struct session *)ctx)->warnings++;
}

static void open_session(struct session *s, bool read_only)
{
    memset(s, 0, sizeof *s);
    cr_assert_eq(read_only ? cbc_store_open_existing(root, &s->store, NULL)
                           : cbc_store_open(root, &s->store, NULL),
                 CBC_OK);
    s->memo = cbc_filememo_new();
    cr_assert_eq(cbc_cache_init(&s->cache, s->store, s->memo, NULL, NULL, on_msg, s, NULL), CBC_OK);
}

static void close_session(struct session *s)
{
    cbc_cache_release(&s->cache);
    cbc_filememo_free(s->memo);
    cbc_store_close(s->store);
}

static const struct cbc_target sm90 = {CBC_KIND_PTX, 0, 90};
static const struct cbc_hash direct_key = {{0xd1}};

/* A PTX image of sm_90 whose body is the header's text, so it verifies. */
static uint8_t *image_of(const uint8_t *text, size_t n, size_t *len)
{
    struct cbc_buf b = {0};
    cbc_buf_puts(&b, "//\n.version 9.0\n.target sm_90\n.address_size 64\n// ");
    cbc_buf_append(&b, text, n);
    *len = b.len;
    return (uint8_t *)cbc_buf_detach(&b);
}

/* lookup, then on a miss the fake compile and the commit; the outcome */
static enum cbc_commit one_build(struct session *s, enum cbc_cache_state *looked,
                                 void (*during)(void))
{
    struct cbc_cache_unit u = {.dt.direct_key = direct_key};
    cr_assert_eq(cbc_cache_lookup(&s->cache, &u, &sm90, "sm_90 of 'k.cu'", NULL), CBC_OK);
    *looked = u.state;
    free(u.data);
    if (u.state == CBC_CACHE_HIT)
        return CBC_COMMIT_STORED;
    uint64_t started = cbc_now_ns();
    struct cbc_trace t;
    uint8_t *text;
    size_t n, len;
    fake_compile(&t, &text, &n);
    if (during)
        during();
    uint8_t *img = image_of(text, n, &len);
    char *deps[] = {hdr};
    struct cbc_collect_in in = {deps, 1, src, &t, NULL, 0, NULL, 0, started, s->memo};
    struct cbc_collect_out co;
    cr_assert_eq(cbc_collect(&in, &co, NULL), CBC_OK);
    cbc_hash_bytes(text, n, &u.result); /* the caller's result key: here, the content */
    enum cbc_commit outcome;
    char why[256];
    cr_assert_eq(cbc_cache_commit(&s->cache, &u, &co, &sm90, img, len, &outcome, why, sizeof why,
                                  NULL),
                 CBC_OK);
    cbc_collect_release(&co);
    cbc_trace_release(&t);
    free(text);
    free(img);
    return outcome;
}

static enum cbc_cache_state build_once(bool read_only, enum cbc_commit *outcome, int *warnings,
                                       void (*during)(void))
{
    struct session s;
    open_session(&s, read_only);
    enum cbc_cache_state looked;
    enum cbc_commit o = one_build(&s, &looked, during);
    if (outcome)
        *outcome = o;
    if (warnings)
        *warnings = s.warnings;
    close_session(&s);
    return looked;
}

Test(cache, a_committed_compile_is_a_hit_for_the_next_process)
{
    enum cbc_commit o;
    cr_assert_eq(build_once(false, &o, NULL, NULL), CBC_CACHE_MISS, "an empty cache hit");
    cr_assert_eq(o, CBC_COMMIT_STORED);
    cr_assert_eq(build_once(false, NULL, NULL, NULL), CBC_CACHE_HIT, "the commit was not found");
    put(hdr, "#define V 2\n");
    cr_assert_eq(build_once(false, NULL, NULL, NULL), CBC_CACHE_MISS, "an edited header hit");
}

Test(cache, a_header_where_the_compile_found_none_is_a_miss)
{
    build_once(false, NULL, NULL, NULL);
    put(probe, "#define V 3\n");
    cr_assert_eq(build_once(false, NULL, NULL, NULL), CBC_CACHE_MISS, "the shadowing header hit");
}

Test(cache, a_bad_entry_is_dropped_not_served)
{
    build_once(false, NULL, NULL, NULL);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "f=$(find '%s/v1/objects' -name '*.cbc' | head -1); "
             "printf 'X' | dd of=\"$f\" bs=1 seek=80 conv=notrunc 2>/dev/null", root);
    cr_assert_eq(system(cmd), 0);
    int warnings;
    cr_assert_eq(build_once(false, NULL, &warnings, NULL), CBC_CACHE_DROPPED);
    cr_assert_eq(warnings, 1, "a dropped entry is reported once");
    cr_assert_eq(build_once(false, NULL, NULL, NULL), CBC_CACHE_HIT, "the rebuilt entry was not stored");
}

static void edit_header(void)
{
    put(hdr, "#define V 9\n");
}

static void plant_probe(void)
{
    put(probe, "#define V 7\n");
}

Test(cache, an_input_changed_during_the_compile_is_not_stored)
{
    enum cbc_commit o;
    build_once(false, &o, NULL, edit_header);
    cr_assert_eq(o, CBC_COMMIT_CHANGED);
    cr_assert_eq(build_once(false, NULL, NULL, NULL), CBC_CACHE_MISS, "a racy result was stored");
    unlink(probe);
    build_once(false, &o, NULL, plant_probe);
    cr_assert_eq(o, CBC_COMMIT_CHANGED, "a header that appeared during the compile was stored");
}

Test(cache, a_read_only_store_is_said_once_and_the_build_goes_on)
{
    struct cbc_store *st;
    cr_assert_eq(cbc_store_open(root, &st, NULL), CBC_OK); /* it exists, empty */
    cbc_store_close(st);
    enum cbc_commit o;
    int warnings;
    cr_assert_eq(build_once(true, &o, &warnings, NULL), CBC_CACHE_MISS);
    cr_assert_eq(o, CBC_COMMIT_UNWRITABLE);
    cr_assert_eq(warnings, 1);
}

Test(cache, a_full_disk_is_said_once_and_the_build_goes_on)
{
    struct cbc_store *st;
    cr_assert_eq(cbc_store_open(root, &st, NULL), CBC_OK);
    cbc_store_close(st);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {16, 16}; /* every file write past 16 bytes fails with EFBIG */
    struct session s;
    open_session(&s, false);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
    enum cbc_cache_state looked;
    enum cbc_commit o = one_build(&s, &looked, NULL);
    enum cbc_commit o2 = one_build(&s, &looked, NULL);
    rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &rl);
    cr_assert_eq(o, CBC_COMMIT_UNWRITABLE);
    cr_assert_eq(o2, CBC_COMMIT_UNWRITABLE);
    cr_assert_eq(s.warnings, 1, "%d warnings for two refused writes", s.warnings);
    close_session(&s);
}

Test(cache, results_round_trip_and_refuse_damage)
{
    struct cbc_result r = {0}, back;
    cr_assert(cbc_result_add(&r, "output", "OBJ", 3));
    cr_assert(cbc_result_add(&r, "stderr", "", 0));
    cr_assert(cbc_result_add(&r, "side:/x/y.d", "y.o: y.c\n", 9));
    cr_assert(cbc_result_add(&r, "output", "OBJ2", 4), "a member is replaced by name");
    cr_assert_not(cbc_result_add(&r, "", "x", 1), "an empty name was taken");
    size_t len;
    uint8_t *b = cbc_result_encode(&r, &len);
    cr_assert_eq(cbc_result_decode(b, len, &back, NULL), CBC_OK);
    cr_assert_eq(back.n, 3);
    cr_assert_eq(cbc_result_get(&back, "output")->len, 4);
    cr_assert_eq(memcmp(cbc_result_get(&back, "side:/x/y.d")->data, "y.o: y.c\n", 9), 0);
    cr_assert_eq(cbc_result_get(&back, "stderr")->len, 0);
    cbc_result_release(&back);
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(cbc_result_decode(b, cut, &back, NULL), CBC_E_FORMAT, "cut at %zu", cut);
    uint8_t *more = malloc(len + 1);
    memcpy(more, b, len);
    more[len] = 0;
    cr_assert_eq(cbc_result_decode(more, len + 1, &back, NULL), CBC_E_FORMAT, "trailing byte");
    memcpy(more, b, len);
    more[8] = 0xff; /* a lying count */
    cr_assert_eq(cbc_result_decode(more, len, &back, NULL), CBC_E_FORMAT);
    memcpy(more, b, len);
    more[12] = 0; /* a name of length 0 */
    more[13] = 0;
    cr_assert_eq(cbc_result_decode(more, len, &back, NULL), CBC_E_FORMAT);
    /* a second member of the same name */
    struct cbc_result two = {0};
    cbc_result_add(&two, "a", "1", 1);
    cbc_result_add(&two, "b", "2", 1);
    size_t tl;
    uint8_t *tb = cbc_result_encode(&two, &tl);
    tb[12 + 2 + 1 + 8 + 1 + 2] = 'a';
    cr_assert_eq(cbc_result_decode(tb, tl, &back, NULL), CBC_E_FORMAT, "a name twice");
    free(tb);
    cbc_result_release(&two);
    free(more);
    free(b);
    cbc_result_release(&r);
}

/* ---- outputs that name their tree (names.c) --------------------------------- */

Test(names, a_ptx_byte_array_a_module_id_and_a_path_name_the_tree)
{
    struct cbc_cache c = {.base = "/w/a", .cwd = "/w/a/build"};
    /* "/w/a/k.cu" as cicc writes an assert's __FILE__ */
    const char ptx[] = ".version 9.0\n.target sm_90\n"
                       ".global .align 1 .b8 $str[10] = {47, 119, 47, 97, 47, 107, 46, 99, 117};\n";
    cr_assert(cbc_cache_names_tree(&c, "/w/a/k.cu", (const uint8_t *)ptx, sizeof ptx - 1));
    const char ptx2[] = ".version 9.0\n.target sm_90\n"
                        ".global .align 1 .b8 $str[4] = {47, 119, 47, 0};\n";
    cr_assert_not(cbc_cache_names_tree(&c, "/w/a/k.cu", (const uint8_t *)ptx2, sizeof ptx2 - 1));
    /* an internal function's name holds nvcc's module id for "as.cu" */
    const char cubin[] = "bytes\0_ZN33_INTERNAL_87212641_5_as_cu__Z1kPf4cubeEf\0";
    cr_assert(cbc_cache_names_tree(&c, "/w/a/src/as.cu", (const uint8_t *)cubin, sizeof cubin));
    cr_assert_not(cbc_cache_names_tree(&c, "/w/a/src/bs.cu", (const uint8_t *)cubin, sizeof cubin),
                  "another file's id taken for this one's");
    const char plain[] = "bytes\0_Z1kPf\0src/k.cu\0";
    cr_assert_not(cbc_cache_names_tree(&c, "/w/a/src/k.cu", (const uint8_t *)plain, sizeof plain));
    const char path[] = "bytes\0/w/a/build/x\0";
    cr_assert(cbc_cache_names_tree(&c, "/w/a/src/k.cu", (const uint8_t *)path, sizeof path));
    /* an ELF this cannot look into is kept per tree */
    const char elf[] = "\x7f" "ELF\x02\x01\x01";
    cr_assert(cbc_cache_names_tree(&c, "/w/a/src/k.cu", (const uint8_t *)elf, sizeof elf));
}
