/* test_key.c: the fingerprint. One change for each input of the key, no
 * change for a touched file or an unrelated variable, and frozen vectors:
 * XXH3-128's canonical form (checked against the reference implementation)
 * and one full key, so an accidental change of the encoding fails here and
 * is made on purpose, with a CBC_KEY_VERSION bump, or not at all. */
#include "key.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *flags_a[] = {"-O3", "-lineinfo"};
static struct cbc_dep deps_a[] = {
    {"/src/include/a.cuh", {{1}}},
    {"/src/include/b.cuh", {{2}}},
};

static struct cbc_key_inputs base(void)
{
    struct cbc_key_inputs in = {0};
    cbc_target_parse("sm_90", &in.target);
    in.source = "/src/k.cu";
    in.source_hash.b[0] = 0x11;
    in.deps = deps_a;
    in.n_deps = 2;
    in.nvcc_id.b[0] = 0x22;
    in.host_id.b[0] = 0x33;
    in.flags = flags_a;
    in.n_flags = 2;
    in.cwd = "/build";
    return in;
}

static void hex_of(const struct cbc_key_inputs *in, char out[33])
{
    struct cbc_hash h;
    cbc_key_result(in, &h);
    cbc_hash_hex(&h, out);
}

#define ASSERT_KEY_CHANGES(what, ...)                                                           \
    do {                                                                                           \
        struct cbc_key_inputs in = base();                                                         \
        char before[33], after[33];                                                                \
        hex_of(&in, before);                                                                       \
        __VA_ARGS__;                                                                               \
        hex_of(&in, after);                                                                        \
        cr_assert_str_neq(before, after, "changing %s must change the key", what);               \
    } while (0)

Test(hash, canonical_xxh3_128_matches_the_reference_implementation)
{
    /* from python-xxhash's xxh3_128_hexdigest, an independent implementation */
    struct {
        const char *in, *hex;
    } v[] = {
        {"", "99aa06d3014798d86001c324468d497f"},
        {"abc", "06b05ab6733a618578af5f94892f3950"},
        {"cubincache", "01ef4e4a93a58fc38cd9c1022be30c5c"},
    };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
        struct cbc_hash h;
        char hex[33];
        cbc_hash_bytes(v[i].in, strlen(v[i].in), &h);
        cbc_hash_hex(&h, hex);
        cr_assert_str_eq(hex, v[i].hex, "XXH3-128('%s')", v[i].in);
        struct cbc_hash back;
        cr_assert(cbc_hash_from_hex(hex, &back));
        cr_assert(cbc_hash_eq(&h, &back));
    }
    struct cbc_hash h;
    cr_assert_not(cbc_hash_from_hex("99aa06d3014798d86001c324468d497", &h));
    cr_assert_not(cbc_hash_from_hex("99aa06d3014798d86001c324468d497g", &h));
}

#if defined(__x86_64__)
#include <cpuid.h>
/* The state components in use (XGETBV with ECX 1), where the CPU reports
 * them; bit 2: the upper halves of YMM0-15, bit 6: of ZMM0-15 (what SSE code
 * pays for and vzeroupper clears; bit 7, ZMM16-31, is neither). */
static bool xinuse(uint64_t *v)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4)) /* XGETBV ECX 1 */
        return false;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
        return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    *v = (uint64_t)hi << 32 | lo;
    return true;
}
#endif

/* libxxhash's dispatched AVX2 / AVX-512 XXH3 returns with the upper vector
 * state in use; left so, every later SSE instruction and libm call of the
 * thread (and of the threads it creates) runs many times slower. Every
 * hashing function clears it. */
Test(hash, leaves_no_upper_vector_state_in_use)
{
#if defined(__x86_64__)
    static uint8_t buf[1 << 20];
    memset(buf, 7, sizeof buf);
    uint64_t v;
    if (!xinuse(&v))
        cr_skip_test("this CPU does not report the state components in use");
    struct cbc_hash h;
    cbc_hash_bytes(buf, sizeof buf, &h);
    cr_assert(xinuse(&v) && !(v & 0x44), "after cbc_hash_bytes: XINUSE %#llx",
              (unsigned long long)v);
    struct cbc_hasher *hs = cbc_hasher_new();
    cbc_hasher_field(hs, 1, buf, sizeof buf);
    cr_assert(xinuse(&v) && !(v & 0x44), "after cbc_hasher_field: XINUSE %#llx",
              (unsigned long long)v);
    cbc_hasher_digest(hs, &h);
    cbc_hasher_free(hs);
    char path[] = "/tmp/cbc-hash.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0 && write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    close(fd);
    cr_assert_eq(cbc_hash_file(path, &h, NULL, NULL), CBC_OK);
    unlink(path);
    cr_assert(xinuse(&v) && !(v & 0x44), "after cbc_hash_file: XINUSE %#llx",
              (unsigned long long)v);
#else
    cr_skip_test("x86 only");
#endif
}

Test(key, encoding_is_frozen)
{
    struct cbc_key_inputs in = base();
    char hex[33];
    hex_of(&in, hex);
    cr_assert_str_eq(hex, "cec2ee49b4ec7d56f179699443820afb", "the key encoding changed: bump CBC_KEY_VERSION");
    struct cbc_hash d;
    cbc_key_direct(&in, &d);
    cbc_hash_hex(&d, hex);
    cr_assert_str_eq(hex, "b827500a25e69f62d027ff7c898ffe50", "the direct key encoding changed");
}

Test(key, changes_with_each_input)
{
    ASSERT_KEY_CHANGES("the SM", cbc_target_parse("sm_89", &in.target));
    ASSERT_KEY_CHANGES("the variant", cbc_target_parse("sm_90a", &in.target));
    ASSERT_KEY_CHANGES("SASS to PTX", cbc_target_parse("compute_90", &in.target));
    ASSERT_KEY_CHANGES("the source path", in.source = "/src/other.cu");
    ASSERT_KEY_CHANGES("the source content", in.source_hash.b[15] ^= 1);
    ASSERT_KEY_CHANGES("the nvcc identity", in.nvcc_id.b[3] ^= 1);
    ASSERT_KEY_CHANGES("the host compiler identity", in.host_id.b[3] ^= 1);
    ASSERT_KEY_CHANGES("a flag's value", in.flags = (char *[]){"-O2", "-lineinfo"});
    ASSERT_KEY_CHANGES("the flags' order", in.flags = (char *[]){"-lineinfo", "-O3"});
    ASSERT_KEY_CHANGES("a flag split in two", in.flags = (char *[]){"-O", "3-lineinfo"});
    ASSERT_KEY_CHANGES("the number of flags", in.n_flags = 1);
    ASSERT_KEY_CHANGES("a dependency's content",
                       struct cbc_dep d2[2] = {deps_a[0], deps_a[1]};
                       d2[1].hash.b[0] ^= 0x80; in.deps = d2);
    ASSERT_KEY_CHANGES("a dependency's path",
                       struct cbc_dep d2[2] = {deps_a[0], {"/src/include/c.cuh", deps_a[1].hash}};
                       in.deps = d2);
    ASSERT_KEY_CHANGES("the dependency count", in.n_deps = 1);
    for (size_t i = 0; i < CBC_KEY_ENV_COUNT; i++) {
        ASSERT_KEY_CHANGES(cbc_key_env_names[i], cbc_env_set(&in.env, cbc_key_env_names[i], "-G"));
        ASSERT_KEY_CHANGES("an empty vs unset variable",
                           cbc_env_set(&in.env, cbc_key_env_names[i], ""));
        ASSERT_KEY_CHANGES("a keyed variable, even unset",
                           cbc_env_set(&in.env, cbc_key_env_names[i], NULL));
    }
    ASSERT_KEY_CHANGES("a profile's variable", cbc_env_set(&in.env, "PTXAS_FLAGS", "-O0"));
    ASSERT_KEY_CHANGES("a value moved to another name",
                       cbc_env_set(&in.env, "A", "x"); cbc_env_set(&in.env, "B", NULL);
                       struct cbc_env e2 = {0}; cbc_env_set(&e2, "A", NULL);
                       cbc_env_set(&e2, "B", "x"); struct cbc_hash h1, h2; cbc_key_result(&in, &h1);
                       in.env = e2; cbc_key_result(&in, &h2);
                       cr_assert_not(cbc_hash_eq(&h1, &h2)));
}

Test(key, direct_key_covers_cwd_but_not_dependencies)
{
    struct cbc_key_inputs a = base(), b = base();
    struct cbc_hash da, db, ra, rb;
    b.cwd = "/elsewhere";
    cbc_key_direct(&a, &da);
    cbc_key_direct(&b, &db);
    cbc_key_result(&a, &ra);
    cbc_key_result(&b, &rb);
    cr_assert_not(cbc_hash_eq(&da, &db), "-I. resolves against the working directory");
    cr_assert(cbc_hash_eq(&ra, &rb), "the result key has absolute dependencies instead");
    b = base();
    b.n_deps = 0;
    cbc_key_direct(&b, &db);
    cr_assert(cbc_hash_eq(&da, &db));
}

Test(key, unrelated_environment_does_not_change_the_key)
{
    struct cbc_env e1, e2;
    char *profile[] = {"PTXAS_FLAGS", "INCLUDES"};
    unsetenv("NVCC_APPEND_FLAGS");
    unsetenv("PTXAS_FLAGS");
    cbc_key_env_read(profile, 2, &e1);
    setenv("SOME_UNRELATED_VARIABLE", "1", 1);
    setenv("CUDA_VISIBLE_DEVICES", "3", 1);
    setenv("PATH", "/elsewhere:/usr/bin", 1);
    cbc_key_env_read(profile, 2, &e2);
    cr_assert_eq(e1.n, CBC_KEY_ENV_COUNT + 2);
    cr_assert_eq(e1.n, e2.n);
    for (size_t i = 0; i < e1.n; i++) {
        cr_assert_str_eq(e1.name[i], e2.name[i]);
        cr_assert_eq(e1.value[i] == NULL, e2.value[i] == NULL);
        if (i)
            cr_assert_lt(strcmp(e1.name[i - 1], e1.name[i]), 0, "names out of order");
    }
    setenv("NVCC_APPEND_FLAGS", "-lineinfo", 1);
    setenv("PTXAS_FLAGS", "-O0", 1);
    cbc_key_env_read(profile, 2, &e2);
    cr_assert_str_eq(e2.value[cbc_env_find(&e2, "NVCC_APPEND_FLAGS")], "-lineinfo");
    cr_assert_str_eq(e2.value[cbc_env_find(&e2, "PTXAS_FLAGS")], "-O0");
    cr_assert_eq(cbc_env_find(&e2, "PATH"), -1, "PATH is keyed through what it resolves");
    unsetenv("NVCC_APPEND_FLAGS");
    unsetenv("PTXAS_FLAGS");
}

Test(key, the_profile_names_what_nvcc_reads)
{
    static const char profile[] =
        "\nTOP              = $(_HERE_)/..\n"
        "CICC_PATH        = $(TOP)/nvvm/bin\n"
        "LD_LIBRARY_PATH += $(TOP)/lib:\n"
        "PATH            += $(CICC_PATH):$(_HERE_):\n"
        "INCLUDES        +=  \"-I$(TOP)/$(_TARGET_DIR_)/include\" $(_SPACE_)\n"
        "LIBRARIES        =+ $(_SPACE_) \"-L$(TOP)/lib\"\n"
        "CUDAFE_FLAGS    +=\n"
        "PTXAS_FLAGS     +=\n"
        "# a comment += is no assignment\n"
        "EXTRA = $(SOME_USER_VAR) $(TOP)\n"
        "OPT ?= -O3\n";
    char **v = NULL;
    size_t n = 0;
    cr_assert_eq(cbc_profile_env_parse(profile, sizeof profile - 1, "p", &v, &n, NULL), CBC_OK);
    const char *want[] = {"CUDAFE_FLAGS", "INCLUDES", "LIBRARIES", "OPT", "PTXAS_FLAGS",
                          "SOME_USER_VAR"};
    cr_assert_eq(n, CBC_ARRAY_LEN(want), "%zu names", n);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(v[i], want[i]);
        free(v[i]);
    }
    free(v);
}

static char *temp_file(const char *content)
{
    char *path = strdup("/tmp/cbc-key-test.XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    return path;
}

Test(key, touched_file_hashes_the_same_and_edited_file_differs)
{
    char *path = temp_file("__device__ int f();\n");
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_hash h1, h2, h3;
    struct cbc_stamp s1;
    cr_assert_eq(cbc_filememo_hash(m, path, NULL, NULL, 0, &h1, &s1, NULL), CBC_OK);
    cbc_filememo_free(m);
    /* touch: new mtime and ctime, same bytes */
    struct timespec ts[2] = {{0, UTIME_NOW}, {12345, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
    m = cbc_filememo_new();
    cr_assert_eq(cbc_filememo_hash(m, path, &s1, &h1, cbc_now_ns(), &h2, NULL, NULL), CBC_OK);
    cr_assert_eq(cbc_filememo_reads(m), 1, "a changed stamp must be checked by reading");
    cr_assert(cbc_hash_eq(&h1, &h2), "touching must not change the content hash");
    cbc_filememo_free(m);
    /* edit with the same size and the old mtime put back: only the ctime
     * tells. The stamp and hash recorded before the edit, and trusted by
     * time (recorded well after that stamp's last change), must not be
     * used: the file is read again and its new hash returned. */
    struct cbc_stamp before;
    cr_assert(cbc_stamp_of(path, &before));
    uint64_t recorded = before.ctime_ns + 5000000000ull;
    m = cbc_filememo_new();
    cr_assert_eq(cbc_filememo_hash(m, path, &before, &h1, recorded, &h3, NULL, NULL), CBC_OK);
    cr_assert_eq(cbc_filememo_reads(m), 0, "an unchanged, trusted stamp reads nothing");
    cbc_filememo_free(m);
    usleep(20000); /* past the file system's timestamp tick */
    FILE *f = fopen(path, "r+");
    fputs("__device__ int g();\n", f);
    fclose(f);
    struct timespec back[2] = {{0, UTIME_OMIT}, {12345, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, back, 0), 0);
    struct cbc_stamp after;
    cr_assert(cbc_stamp_of(path, &after));
    cr_assert_eq(after.size, before.size);
    cr_assert_eq(after.mtime_ns, before.mtime_ns, "the old mtime is back");
    cr_assert_neq(after.ctime_ns, before.ctime_ns, "the edit moved the ctime");
    m = cbc_filememo_new();
    cr_assert_eq(cbc_filememo_hash(m, path, &before, &h1, recorded, &h3, NULL, NULL), CBC_OK);
    cr_assert_eq(cbc_filememo_reads(m), 1, "a changed ctime must be checked by reading");
    cr_assert_not(cbc_hash_eq(&h1, &h3), "the edit must be seen through the ctime");
    cbc_filememo_free(m);
    unlink(path);
    free(path);
}

Test(key, fresh_stamps_are_not_trusted)
{
    struct cbc_stamp s = {10, 5000000000ull, 5000000000ull, 1, 1};
    cr_assert_not(cbc_stamp_trustworthy(&s, 5000000000ull), "written in the same tick");
    cr_assert_not(cbc_stamp_trustworthy(&s, 5500000000ull), "within the racy window");
    cr_assert(cbc_stamp_trustworthy(&s, 7000000000ull));
}

Test(key, stamp_match_skips_reading_the_file)
{
    char *path = temp_file("int x;\n");
    struct cbc_filememo *m = cbc_filememo_new();
    struct cbc_hash real, fake = {{0xab}}, got;
    struct cbc_stamp st;
    cr_assert_eq(cbc_filememo_hash(m, path, NULL, NULL, 0, &real, &st, NULL), CBC_OK);
    cbc_filememo_free(m);
    m = cbc_filememo_new();
    /* a trusted stamp is believed: the recorded hash comes back unread */
    cr_assert_eq(cbc_filememo_hash(m, path, &st, &fake, st.ctime_ns + 3000000000ull, &got, NULL,
                                   NULL),
                 CBC_OK);
    cr_assert(cbc_hash_eq(&got, &fake));
    cr_assert_eq(cbc_filememo_reads(m), 0);
    cbc_filememo_free(m);
    unlink(path);
    free(path);
}

/* ---- the one builder of key inputs (cbc_key_inputs_make) ------------------ */

/* A tripwire. build and check both key through cbc_key_inputs_make, so an
 * input added there reaches both; an input added to struct cbc_key_inputs
 * or struct cbc_key_now without it changes these sizes. Then: set it in
 * cbc_key_inputs_make (key.c), hash it in key.c, compare it in changes.c,
 * record it in the manifest if `check` must see it, add it to the tests
 * below and only then update the sizes. */
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(struct cbc_key_inputs) == 1144,
               "a key input was added: see the tripwire in tests/unit/test_key.c");
_Static_assert(sizeof(struct cbc_key_now) == 96,
               "an input of now was added: see the tripwire in tests/unit/test_key.c");
#endif

static struct cbc_env env_now_of(void)
{
    struct cbc_env e = {0};
    cbc_env_set(&e, "NVCC_PREPEND_FLAGS", "-G");
    cbc_env_set(&e, "NVCC_CCBIN", "/usr/bin/g++-12");
    cbc_env_set(&e, "CPLUS_INCLUDE_PATH", "/x");
    cbc_env_set(&e, "PTXAS_FLAGS", NULL);
    return e;
}
static struct cbc_env env_now;

static struct cbc_key_now now_base(struct cbc_hash *src, struct cbc_hash *nvcc,
                                   struct cbc_hash *host)
{
    *src = (struct cbc_hash){{0x11}};
    *nvcc = (struct cbc_hash){{0x22}};
    *host = (struct cbc_hash){{0x33}};
    env_now = env_now_of();
    return (struct cbc_key_now){"/src/k.cu", src, "nvcc", "13.0.88", nvcc, "g++", host,
                                flags_a, 2, &env_now, "/build", NULL};
}

static void keys_of(const struct cbc_key_now *now, struct cbc_hash *result, struct cbc_hash *direct)
{
    struct cbc_target t;
    cbc_target_parse("sm_90", &t);
    struct cbc_key_inputs in;
    cr_assert(cbc_key_inputs_make(now, &t, deps_a, 2, &in));
    cbc_key_result(&in, result);
    cbc_key_direct(&in, direct);
}

/* Each field of now either changes a key, or is a name that a hash already
 * covers (nvcc and host compiler: their ids). */
#define ASSERT_NOW_MATTERS(what, keyed, ...)                                                    \
    do {                                                                                           \
        struct cbc_hash s_, n_, h_, r0, d0, r1, d1;                                                \
        struct cbc_key_now now = now_base(&s_, &n_, &h_);                                          \
        keys_of(&now, &r0, &d0);                                                                   \
        __VA_ARGS__;                                                                               \
        keys_of(&now, &r1, &d1);                                                                   \
        bool changed = !cbc_hash_eq(&r0, &r1) || !cbc_hash_eq(&d0, &d1);                           \
        cr_assert_eq(changed, keyed, "%s %s change a key", what, keyed ? "must" : "must not");    \
    } while (0)

Test(key, the_builder_keys_on_every_input_of_now)
{
    struct cbc_hash other = {{0x77}};
    ASSERT_NOW_MATTERS("the source path", true, now.source = "/src/other.cu");
    ASSERT_NOW_MATTERS("the source content", true, now.source_hash = &other);
    ASSERT_NOW_MATTERS("the nvcc identity", true, now.nvcc_id = &other);
    ASSERT_NOW_MATTERS("the host compiler identity", true, now.host_id = &other);
    ASSERT_NOW_MATTERS("the flags", true, now.flags = (char *[]){"-O2", "-lineinfo"});
    ASSERT_NOW_MATTERS("the flag count", true, now.n_flags = 1);
    ASSERT_NOW_MATTERS("the working directory", true, now.cwd = "/elsewhere");
    for (size_t i = 0; i < env_now_of().n; i++) {
        struct cbc_env env2 = env_now_of();
        env2.value[i] = "changed";
        ASSERT_NOW_MATTERS(env2.name[i], true, now.env = &env2);
    }
    ASSERT_NOW_MATTERS("nvcc's path (its id is keyed)", false, now.nvcc = "/opt/nvcc");
    ASSERT_NOW_MATTERS("nvcc's version text", false, now.nvcc_version = "13.1");
    ASSERT_NOW_MATTERS("the host compiler's path", false, now.host_cc = "/opt/g++");
}

Test(key, the_builder_is_what_the_keys_were_frozen_with)
{
    struct cbc_hash s_, n_, h_, r, d;
    struct cbc_key_now now = now_base(&s_, &n_, &h_);
    now.env = NULL;
    keys_of(&now, &r, &d);
    struct cbc_key_inputs in = base();
    struct cbc_hash r0, d0;
    cbc_key_result(&in, &r0);
    cbc_key_direct(&in, &d0);
    cr_assert(cbc_hash_eq(&r, &r0) && cbc_hash_eq(&d, &d0),
              "cbc_key_inputs_make fills the inputs differently from the frozen ones");
}

Test(key, the_builder_refuses_what_it_cannot_key)
{
    struct cbc_hash s_, n_, h_;
    struct cbc_target t;
    cbc_target_parse("sm_90", &t);
    struct cbc_key_inputs in;
    struct cbc_key_now now = now_base(&s_, &n_, &h_);
    now.source_hash = NULL;
    cr_assert_not(cbc_key_inputs_make(&now, &t, NULL, 0, &in), "keyed a source that is gone");
    now = now_base(&s_, &n_, &h_);
    now.nvcc_id = NULL;
    cr_assert_not(cbc_key_inputs_make(&now, &t, NULL, 0, &in), "keyed an unidentified nvcc");
    now = now_base(&s_, &n_, &h_);
    now.host_id = NULL;
    cr_assert_not(cbc_key_inputs_make(&now, &t, NULL, 0, &in), "keyed an unknown host compiler");
}

/* ---- the base directory ---------------------------------------------------- */

static char *templ(const char *base, const char *text)
{
    struct cbc_buf b = {0};
    cbc_base_template(base, text, strlen(text), &b);
    cbc_buf_append(&b, "", 1);
    return cbc_buf_detach(&b);
}

static char *expand(const char *base, const char *text)
{
    struct cbc_buf b = {0};
    cbc_base_expand(base, text, strlen(text), &b);
    cbc_buf_append(&b, "", 1);
    return cbc_buf_detach(&b);
}

Test(base, spells_the_tree_only_where_a_path_of_it_starts)
{
    static const struct { const char *in, *want; } cases[] = {
        {"/w/proj/src/k.cu", "@BASE@/src/k.cu"},
        {"/w/proj", "@BASE@"},
        {"-I/w/proj/inc", "-I@BASE@/inc"},
        {"k.o: /w/proj/a.h \\\n /w/proj/b.h", "k.o: @BASE@/a.h \\\n @BASE@/b.h"},
        {"\"/w/proj/x\"", "\"@BASE@/x\""},
        {"/w/proj2/k.cu", "/w/proj2/k.cu"},     /* a sibling named alike */
        {"/w/proj.old/k.cu", "/w/proj.old/k.cu"},
        {"/x/w/proj/k.cu", "/x/w/proj/k.cu"},   /* the base inside another path */
        {"-isystem/w/proj/i", "-isystem@BASE@/i"},
        {"-Xcompiler=-I/w/proj/i,-DA=/w/proj", "-Xcompiler=-I@BASE@/i,-DA=@BASE@"},
        {"a-I/w/proj", "a-I/w/proj"},
        {"a@BASE@b", "a@@BASE@@b"},             /* a literal mark stays itself */
        {"@@", "@@@@"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *t = templ("/w/proj", cases[i].in);
        cr_assert_str_eq(t, cases[i].want, "template of '%s'", cases[i].in);
        char *back = expand("/w/proj", t);
        cr_assert_str_eq(back, cases[i].in, "expand(template('%s'))", cases[i].in);
        free(t);
        free(back);
    }
    char *other = expand("/ci/run7", "k.o: @BASE@/a.h @@x");
    cr_assert_str_eq(other, "k.o: /ci/run7/a.h @x", "another tree gets its own base back");
    free(other);
}

Test(base, two_checkouts_share_keys_and_other_paths_do_not)
{
    struct cbc_hash s, n, h, ra, da, rb, db, rc, dc;
    char *fa[] = {"-I/w/a/inc", "-O3"}, *fb[] = {"-I/w/b/inc", "-O3"};
    struct cbc_dep dep_a[] = {{"/w/a/inc/h.h", {{1}}}}, dep_b[] = {{"/w/b/inc/h.h", {{1}}}};
    struct cbc_key_now a = now_base(&s, &n, &h), b, c;
    a.source = "/w/a/k.cu", a.flags = fa, a.cwd = "/w/a", a.base = "/w/a";
    b = a, b.source = "/w/b/k.cu", b.flags = fb, b.cwd = "/w/b", b.base = "/w/b";
    c = b, c.base = NULL;
    struct cbc_target t;
    cbc_target_parse("sm_90", &t);
    struct cbc_key_inputs in;
    cbc_key_inputs_make(&a, &t, dep_a, 1, &in);
    cbc_key_result(&in, &ra), cbc_key_direct(&in, &da);
    cbc_key_inputs_make(&b, &t, dep_b, 1, &in);
    cbc_key_result(&in, &rb), cbc_key_direct(&in, &db);
    cbc_key_inputs_make(&c, &t, dep_b, 1, &in);
    cbc_key_result(&in, &rc), cbc_key_direct(&in, &dc);
    cr_assert(cbc_hash_eq(&ra, &rb) && cbc_hash_eq(&da, &db), "the same tree in two places");
    cr_assert_not(cbc_hash_eq(&rb, &rc) || cbc_hash_eq(&db, &dc), "no base: absolute paths");
}

Test(base, detection_finds_the_checkout_and_honours_the_setting)
{
    char dir[] = "/tmp/cbc-base.XXXXXX";
    cr_assert(mkdtemp(dir));
    char git[256], src[256], sub[256];
    snprintf(git, sizeof git, "%s/.git", dir);
    snprintf(sub, sizeof sub, "%s/src", dir);
    snprintf(src, sizeof src, "%s/src/k.cu", dir);
    cr_assert_eq(mkdir(sub, 0700), 0);
    char *none = cbc_base_detect("auto", src);
    cr_assert_null(none, "no checkout, no base: got '%s'", none ? none : "");
    cr_assert_eq(mkdir(git, 0700), 0);
    char *got = cbc_base_detect("auto", src);
    cr_assert_str_eq(got, dir);
    free(got);
    cr_assert_null(cbc_base_detect("none", src));
    cr_assert_null(cbc_base_detect("/", src), "the whole file system is no base");
    got = cbc_base_detect(sub, src);
    cr_assert_str_eq(got, sub);
    free(got);
    cr_assert_null(cbc_base_rel("/w", "@BASE@/x"), "a path that reads back as the base");
    got = cbc_base_rel("/w", "/w/x");
    cr_assert_str_eq(got, "@BASE@/x");
    free(got);
    rmdir(git), rmdir(sub), rmdir(dir);
}

Test(base, an_output_that_names_the_tree_is_told_apart)
{
    const char with[] = "\x7f" "ELF..../w/proj/src/k.cu..", without[] = "\x7f" "ELF..src/k.cu..";
    cr_assert(cbc_base_names("/w/proj", "/w/proj/build", (const uint8_t *)with, sizeof with));
    cr_assert_not(cbc_base_names("/w/proj", "/w/proj/build", (const uint8_t *)without,
                                 sizeof without));
    cr_assert(cbc_base_names(NULL, "/w/proj", (const uint8_t *)with, sizeof with),
              "the working directory counts without a base");
}

Test(base, the_module_id_is_a_mark_and_only_this_compile_fills_it)
{
    const char *id = "_87212641_5_as_cu__Z1kPf";
    const char text[] = "# 2 \"/w/a/src/as.cu\"\n_ZN33_INTERNAL_87212641_5_as_cu__Z1kPf4cubeEf @x";
    struct cbc_buf t = {0}, e = {0};
    cbc_base_template_id("/w/a", id, text, strlen(text), &t);
    cbc_buf_append(&t, "", 1);
    cr_assert_str_eq(t.p, "# 2 \"@BASE@/src/as.cu\"\n_ZN33_INTERNAL@MID@4cubeEf @@x");
    /* another checkout, its own id: its own paths and names */
    cr_assert(cbc_base_expand_id("/w/b", "_0badf00d_5_as_cu__Z1kPf", t.p, t.len - 1, &e));
    cbc_buf_append(&e, "", 1);
    cr_assert_str_eq(e.p, "# 2 \"/w/b/src/as.cu\"\n_ZN33_INTERNAL_0badf00d_5_as_cu__Z1kPf4cubeEf @x");
    cbc_buf_release(&e);
    /* the same id back: the text as it was */
    cr_assert(cbc_base_expand_id("/w/a", id, t.p, t.len - 1, &e));
    cr_assert(e.len == strlen(text) && !memcmp(e.p, text, e.len));
    cbc_buf_release(&e);
    /* a mark this compile has nothing for is refused, never left in */
    cr_assert_not(cbc_base_expand_id("/w/b", NULL, t.p, t.len - 1, &e), "no id, yet expanded");
    cbc_buf_release(&e);
    cr_assert_not(cbc_base_expand_id(NULL, id, t.p, t.len - 1, &e), "no base, yet expanded");
    cbc_buf_release(&e);
    cr_assert_not(cbc_base_expand_id("/w/b", id, "a@b", 3, &e), "a lone '@' read as a mark");
    cbc_buf_release(&e);
    cbc_buf_release(&t);
}
