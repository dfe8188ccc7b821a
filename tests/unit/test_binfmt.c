/* test_binfmt.c: the readers on real nvcc 13 output (every real target, the
 * 'a' and 'f' variants, PTX, fatbins in each compression mode, an -rdc
 * object, a host executable) and on the committed malformed files, which
 * must each give CBC_E_FORMAT naming the file and an offset, never a crash. */
#include "fixtures.h"
#include "embedded.h"

#include <cubincache/binfmt.h>

#include <stdio.h>
#include <string.h>

static const char *data_dir(void)
{
    const char *d = getenv("CBC_TESTDATA");
    cr_assert(d && *d, "CBC_TESTDATA is not set");
    return d;
}

static void check_cubin(const char *file, unsigned sm, uint8_t variant)
{
    size_t len;
    uint8_t *d = fixture(file, &len);
    struct cbc_cubin_info ci;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_cubin_parse(d, len, file, &ci, &err), CBC_OK, "%s: %s", file, err.msg);
    cr_assert_eq(ci.sm, sm, "%s: SM %u", file, ci.sm);
    cr_assert_eq(ci.variant, variant, "%s: variant %u", file, ci.variant);
    cr_assert_eq(ci.abi_version, 8, "nvcc 13 writes EI_ABIVERSION 8");
    cr_assert_eq(ci.osabi, 0x41);
    cr_assert_eq(ci.virtual_arch, sm, "%s: virtual arch %u", file, ci.virtual_arch);
    size_t kernels = 0;
    for (size_t i = 0; i < ci.n_funcs; i++)
        if (ci.funcs[i].entry &&
            (!strcmp(ci.funcs[i].name, "scale") || !strcmp(ci.funcs[i].name, "shift")))
            kernels++;
    cr_assert_eq(kernels, 2, "%s: kernels scale and shift", file);
    cr_assert_not(ci.debug);
    cr_assert_eq(cbc_binfmt_detect(d, len), CBC_FILE_CUBIN);
    cbc_cubin_info_release(&ci);
    free(d);
}

Test(binfmt, reads_every_real_target_and_variant)
{
    const unsigned real[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    for (size_t i = 0; i < sizeof real / sizeof *real; i++) {
        char f[64];
        snprintf(f, sizeof f, "k.sm_%u.cubin", real[i]);
        check_cubin(f, real[i], CBC_VARIANT_NONE);
    }
    const unsigned a[] = {90, 100, 103, 110, 120, 121};
    for (size_t i = 0; i < sizeof a / sizeof *a; i++) {
        char f[64];
        snprintf(f, sizeof f, "k.sm_%ua.cubin", a[i]);
        check_cubin(f, a[i], CBC_VARIANT_A);
    }
    const unsigned fam[] = {100, 103, 110, 120, 121};
    for (size_t i = 0; i < sizeof fam / sizeof *fam; i++) {
        char f[64];
        snprintf(f, sizeof f, "k.sm_%uf.cubin", fam[i]);
        check_cubin(f, fam[i], CBC_VARIANT_F);
    }
}

Test(binfmt, reads_virtual_arch_debug_and_relocatable_cubins)
{
    size_t len;
    struct cbc_cubin_info ci;
    uint8_t *d = fixture("k.c80_sm90.cubin", &len);
    cr_assert_eq(cbc_cubin_parse(d, len, "c80", &ci, NULL), CBC_OK);
    cr_assert_eq(ci.sm, 90);
    cr_assert_eq(ci.virtual_arch, 80, "compute_80 -> sm_90 keeps 80 in .note.nv.cuinfo");
    cbc_cubin_info_release(&ci);
    free(d);
    d = fixture("k.debug.cubin", &len);
    cr_assert_eq(cbc_cubin_parse(d, len, "dbg", &ci, NULL), CBC_OK);
    cr_assert(ci.debug);
    bool device_fn = false;
    for (size_t i = 0; i < ci.n_funcs; i++)
        device_fn |= !ci.funcs[i].entry && strstr(ci.funcs[i].name, "sq");
    cr_assert(device_fn, "-G keeps the device function sq, not an entry");
    cbc_cubin_info_release(&ci);
    free(d);
    d = fixture("k.rdc.cubin", &len);
    cr_assert_eq(cbc_cubin_parse(d, len, "rdc", &ci, NULL), CBC_OK);
    cr_assert_eq(ci.e_type, 1, "-rdc cubins are ET_REL");
    cbc_cubin_info_release(&ci);
    free(d);
}

Test(binfmt, reads_ptx_version_target_and_entries)
{
    size_t len;
    struct cbc_ptx_info pi;
    uint8_t *d = fixture("k.compute_90a.ptx", &len);
    cr_assert_eq(cbc_binfmt_detect(d, len), CBC_FILE_PTX);
    cr_assert_eq(cbc_ptx_parse(d, len, "p", &pi, NULL), CBC_OK);
    cr_assert_eq(pi.isa, 90);
    cr_assert_eq(pi.arch, 90);
    cr_assert_eq(pi.variant, CBC_VARIANT_A);
    cr_assert_eq(pi.n_entries, 2);
    free(d);
    const char *junk = "// no directives\n.target sm_90\n";
    struct cbc_err err = {0};
    cr_assert_eq(cbc_ptx_parse((const uint8_t *)junk, strlen(junk), "j.ptx", &pi, &err),
                 CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "j.ptx") && strstr(err.msg, ".version"), "%s", err.msg);
}

/* Every entry of a fatbin decompresses to what its header says. */
static void check_fatbin(const char *file, uint8_t elf_compression, uint8_t ptx_compression)
{
    size_t len;
    uint8_t *d = fixture(file, &len);
    struct cbc_fatbin fb;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_fatbin_parse(d, len, 0, file, &fb, &err), CBC_OK, "%s: %s", file, err.msg);
    cr_assert_eq(fb.n, 4, "%s: 4 entries", file);
    cr_assert_eq(fb.n_containers, 1);
    bool seen_a = false, seen_f = false;
    for (size_t i = 0; i < fb.n; i++) {
        const struct cbc_fatbin_entry *e = &fb.entries[i];
        uint8_t *p;
        size_t plen;
        cr_assert_eq(cbc_fatbin_entry_payload(e, file, &p, &plen, &err), CBC_OK, "%s[%zu]: %s",
                     file, i, err.msg);
        if (e->kind == CBC_FATBIN_ELF) {
            cr_assert_eq(e->compression, elf_compression, "%s[%zu] ELF compression", file, i);
            struct cbc_cubin_info ci;
            cr_assert_eq(cbc_cubin_parse(p, plen, file, &ci, NULL), CBC_OK);
            cr_assert_eq(ci.sm, e->arch, "the entry header arch matches the ELF");
            cr_assert_eq(ci.variant, e->variant, "%s[%zu]: flag variant vs ELF", file, i);
            seen_a |= e->variant == CBC_VARIANT_A;
            seen_f |= e->variant == CBC_VARIANT_F;
            cbc_cubin_info_release(&ci);
        } else {
            cr_assert_eq(e->kind, CBC_FATBIN_PTX);
            cr_assert_eq(e->compression, ptx_compression, "%s PTX compression", file);
            struct cbc_ptx_info pi;
            cr_assert_eq(cbc_ptx_parse(p, plen, file, &pi, NULL), CBC_OK);
            cr_assert_eq(pi.arch, 90);
            cr_assert_eq(e->version_major * 10 + e->version_minor, pi.isa);
        }
        free(p);
    }
    cr_assert(seen_a && seen_f, "%s: sm_90a and sm_100f flagged", file);
    cbc_fatbin_release(&fb);
    free(d);
}

Test(binfmt, reads_fatbins_in_every_compression_mode)
{
    check_fatbin("k.none.fatbin", CBC_COMPRESS_NONE, CBC_COMPRESS_NONE);
    check_fatbin("k.speed.fatbin", CBC_COMPRESS_NONE, CBC_COMPRESS_LZ4);
    check_fatbin("k.size.fatbin", CBC_COMPRESS_ZSTD, CBC_COMPRESS_ZSTD);
}

Test(binfmt, finds_the_cuda_sections_of_host_files)
{
    size_t len;
    struct cbc_image_list l;
    struct cbc_err err = {0};
    uint8_t *d = fixture("host.exe", &len);
    cr_assert_eq(cbc_binfmt_detect(d, len), CBC_FILE_HOST_ELF);
    cr_assert_eq(cbc_binfmt_images(d, len, "host.exe", &l, &err), CBC_OK, "%s", err.msg);
    size_t sm90 = 0, ptx = 0;
    for (size_t i = 0; i < l.n; i++) {
        cr_assert_str_eq(l.v[i].section, ".nv_fatbin");
        sm90 += l.v[i].target.kind == CBC_KIND_SASS && l.v[i].target.arch == 90;
        ptx += l.v[i].target.kind == CBC_KIND_PTX;
    }
    cr_assert_geq(sm90, 1);
    cr_assert_geq(ptx, 1, "-arch=sm_90 embeds compute_90 PTX");
    cbc_image_list_release(&l);
    free(d);
    d = fixture("k.rdc.o", &len);
    cr_assert_eq(cbc_binfmt_images(d, len, "k.rdc.o", &l, &err), CBC_OK, "%s", err.msg);
    cr_assert_geq(l.n, 1);
    cr_assert_str_eq(l.v[0].section, "__nv_relfatbin");
    cbc_image_list_release(&l);
    free(d);
}

Test(binfmt, verify_target_catches_the_seeds_mislabeled_cubin)
{
    size_t len;
    uint8_t *d = fixture("k.mislabeled.sm_90.cubin", &len);
    struct cbc_target want, found;
    cbc_target_parse("sm_90", &want);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_binfmt_verify_target(d, len, &want, "k.mislabeled.sm_90.cubin", &found, &err),
                 CBC_E_VERIFY);
    cr_assert_eq(found.arch, 89);
    cr_assert(strstr(err.msg, "labelled sm_90 but holds sm_89"), "%s", err.msg);
    free(d);
    d = fixture("k.sm_90.cubin", &len);
    cr_assert_eq(cbc_binfmt_verify_target(d, len, &want, "ok", NULL, NULL), CBC_OK);
    free(d);
}

/* Bytes that are no file are not named as one: the caller's message
 * names them (once "'<buffer>' is labelled sm_89" reached users). */
Test(binfmt, bytes_without_a_file_name_are_not_called_a_buffer)
{
    size_t len;
    uint8_t *d = fixture("k.sm_90.cubin", &len);
    struct cbc_target want;
    cbc_target_parse("sm_89", &want);
    struct cbc_err err = {0};
    cr_assert_eq(cbc_binfmt_verify_target(d, len, &want, NULL, NULL, &err), CBC_E_VERIFY);
    cr_assert(!strncmp(err.msg, "labelled sm_89 but holds sm_90 code", 35), "%s", err.msg);
    struct cbc_cubin_info ci;
    cr_assert_eq(cbc_cubin_parse(d, 40, NULL, &ci, &err), CBC_E_FORMAT);
    cr_assert(!strncmp(err.msg, "offset 0: ", 10) || !strncmp(err.msg, "offset 0x", 9), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "<buffer>"), "%s", err.msg);
    free(d);
}

/* nvcc writes EI_ABIVERSION 7 (V1) or 8 (V2), and the SM sits in a
 * different byte of e_flags for each; any other value is refused, not
 * decoded as one of them (fuzzed cubins with other values passed as sm_89
 * and were decoded as another SM by the driver). */
Test(binfmt, only_the_elf_abi_versions_nvcc_writes_are_read)
{
    size_t len;
    uint8_t *d = fixture("k.sm_90.cubin", &len);
    struct cbc_target want;
    cbc_target_parse("sm_90", &want);
    cr_assert_eq(d[8], 8);
    const uint8_t others[] = {0, 6, 9, 0x41, 255};
    for (size_t i = 0; i < sizeof others; i++) {
        d[8] = others[i];
        struct cbc_cubin_info ci;
        struct cbc_err err = {0};
        cr_assert_eq(cbc_cubin_parse(d, len, "k.sm_90.cubin", &ci, &err), CBC_E_UNSUPPORTED,
                     "EI_ABIVERSION %u", others[i]);
        char want_msg[64];
        snprintf(want_msg, sizeof want_msg, "offset 0x8: EI_ABIVERSION %u", others[i]);
        cr_assert(strstr(err.msg, want_msg), "%s", err.msg);
        cr_assert(strstr(err.msg, "7") && strstr(err.msg, "8"), "%s", err.msg);
        cr_assert_neq(cbc_binfmt_verify_target(d, len, &want, "k.sm_90.cubin", NULL, NULL), CBC_OK);
    }
    d[8] = 8;
    cr_assert_eq(cbc_binfmt_verify_target(d, len, &want, "k.sm_90.cubin", NULL, NULL), CBC_OK);
    free(d);
}

static uint8_t *data_file(const char *name, size_t *len)
{
    char *p = cbc_asprintf("%s/%s", data_dir(), name);
    uint8_t *d = NULL;
    cr_assert_eq(cbc_file_read(p, &d, len, NULL), CBC_OK, "%s", p);
    free(p);
    return d;
}

static void expect_malformed(const char *name, const char *needle)
{
    size_t len;
    uint8_t *d = data_file(name, &len);
    struct cbc_image_list l;
    struct cbc_err err = {0};
    enum cbc_status st = cbc_binfmt_images(d, len, name, &l, &err);
    if (st == CBC_OK) {
        /* headers fine: the damage is in a payload */
        for (size_t i = 0; i < l.n && st == CBC_OK; i++) {
            struct cbc_fatbin fb;
            cr_assert_eq(cbc_fatbin_parse(d, len, 0, name, &fb, NULL), CBC_OK);
            for (size_t k = 0; k < fb.n && st == CBC_OK; k++) {
                uint8_t *p;
                size_t pl;
                st = cbc_fatbin_entry_payload(&fb.entries[k], name, &p, &pl, &err);
                if (st == CBC_OK)
                    free(p);
            }
            cbc_fatbin_release(&fb);
        }
        cbc_image_list_release(&l);
    }
    cr_assert(st == CBC_E_FORMAT || st == CBC_E_UNSUPPORTED, "%s: status %d", name, st);
    cr_assert(strstr(err.msg, name), "%s: message names the file: %s", name, err.msg);
    cr_assert(strstr(err.msg, "offset"), "%s: message names the offset: %s", name, err.msg);
    cr_assert(strstr(err.msg, needle), "%s: '%s' lacks '%s'", name, err.msg, needle);
    free(d);
}

Test(binfmt, malformed_inputs_give_errors_naming_file_offset_and_expectation)
{
    expect_malformed("truncated.cubin", "runs past the end");
    expect_malformed("lying_shnum.cubin", "4000 entries");
    expect_malformed("lying_section.cubin", "section name table");
    expect_malformed("elf32.cubin", "64-bit");
    expect_malformed("tiny.cubin", "an ELF64 header needs 64");
    expect_malformed("wrong_magic.fatbin", "not a cubin, fatbin");
    expect_malformed("lying_size.fatbin", "only");
    expect_malformed("lying_entry.fatbin", "payload size");
    expect_malformed("short_entry.fatbin", "header size 8");
    expect_malformed("bad_zstd.fatbin", "zstd payload");
    expect_malformed("lying_lz4.fatbin", "header says");
}

/* Every prefix of a real file either fails with an error that names the
 * file and the byte offset, or (a tail nothing reads was cut) lists images
 * the whole file has: never a crash, never an over-read (exact-size
 * copies, under ASan in CI), never an invented image. */
Test(binfmt, every_prefix_of_real_files_parses_or_fails_cleanly)
{
    const char *files[] = {"k.sm_90.cubin", "k.size.fatbin", "k.speed.fatbin", "host.exe",
                           "k.compute_90.ptx"};
    for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
        size_t len;
        uint8_t *d = fixture(files[f], &len);
        struct cbc_image_list full;
        cr_assert_eq(cbc_binfmt_images(d, len, files[f], &full, NULL), CBC_OK, "%s", files[f]);
        size_t step = len > 20000 ? len / 2000 : 1, failed = 0, cuts = 0;
        for (size_t cut = 0; cut < len; cut += step, cuts++) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan/valgrind see over-reads */
            memcpy(copy, d, cut);
            struct cbc_image_list l;
            struct cbc_err err = {0};
            enum cbc_status st = cbc_binfmt_images(copy, cut, files[f], &l, &err);
            if (st == CBC_OK) {
                cr_assert_leq(l.n, full.n, "%s cut at %zu: more images than the file", files[f],
                              cut);
                for (size_t i = 0; i < l.n; i++) {
                    bool known = false;
                    for (size_t k = 0; k < full.n && !known; k++)
                        known = cbc_target_eq(&l.v[i].target, &full.v[k].target);
                    cr_assert(known, "%s cut at %zu: an image the file does not have", files[f],
                              cut);
                }
                cbc_image_list_release(&l);
            } else {
                failed++;
                cr_assert(st == CBC_E_FORMAT || st == CBC_E_UNSUPPORTED,
                          "%s cut at %zu: status %d (%s)", files[f], cut, st, err.msg);
                cr_assert(strstr(err.msg, files[f]), "%s cut at %zu: '%s' names no file",
                          files[f], cut, err.msg);
                cr_assert(strstr(err.msg, "offset") || strstr(err.msg, "not a cubin"),
                          "%s cut at %zu: '%s' names no offset", files[f], cut, err.msg);
            }
            free(copy);
        }
        /* a binary's structures span it; PTX text is whole once .target is read */
        bool text = strstr(files[f], ".ptx") != NULL;
        cr_assert_gt(failed, text ? 0 : cuts / 2, "%s: only %zu of %zu prefixes refused", files[f],
                     failed, cuts);
        cbc_image_list_release(&full);
        free(d);
    }
}

/* ---- .cbc_bundle records (cubincache embed) ------------------------------ */

/* A record holding the given real cubins, as `cubincache embed` lays it out. */
static size_t make_record(uint8_t *rec, size_t cap, const char *name, const char *const *targets,
                          uint8_t *const *imgs, const size_t *sizes, size_t n)
{
    const size_t ns = (strlen(name) + 1 + 7) / 8 * 8;
    size_t at = CBC_EMBED_HEADER + ns + n * CBC_EMBED_DESC;
    memset(rec, 0, cap);
    memcpy(rec, CBC_EMBED_MAGIC, 8);
    cbc_wr32(rec + 16, (uint32_t)n);
    cbc_wr32(rec + 20, (uint32_t)ns);
    memcpy(rec + CBC_EMBED_HEADER, name, strlen(name));
    for (size_t i = 0; i < n; i++) {
        uint8_t *d = rec + CBC_EMBED_HEADER + ns + i * CBC_EMBED_DESC;
        at = (at + 63) / 64 * 64;
        cr_assert_leq(at + sizes[i], cap);
        strcpy((char *)d, targets[i]);
        cbc_wr64(d + 16, at);
        cbc_wr64(d + 24, sizes[i]);
        struct cbc_hash h;
        char hex[CBC_HASH_HEX_LEN + 1];
        cbc_hash_bytes(imgs[i], sizes[i], &h);
        cbc_hash_hex(&h, hex);
        memcpy(d + 32, hex, CBC_HASH_HEX_LEN);
        memcpy(rec + at, imgs[i], sizes[i]);
        at += sizes[i];
    }
    at = (at + 63) / 64 * 64;
    cbc_wr64(rec + 8, at);
    return at;
}

Test(binfmt, embedded_records_are_read_verified_and_bounds_checked)
{
    size_t l86, l90;
    uint8_t *c86 = fixture("k.sm_86.cubin", &l86), *c90 = fixture("k.sm_90.cubin", &l90);
    const size_t cap = 2 * (l86 + l90) + 4096;
    uint8_t *sec = calloc(1, 2 * cap);
    const char *t2[] = {"sm_86", "sm_90"};
    uint8_t *i2[] = {c86, c90};
    size_t s2[] = {l86, l90};
    /* two records, the second after 64 bytes of alignment padding */
    size_t r1 = make_record(sec, cap, "one", t2, i2, s2, 2);
    size_t r2 = make_record(sec + r1 + 64, cap, "two", t2 + 1, i2 + 1, s2 + 1, 1);
    size_t len = r1 + 64 + r2;
    struct cbc_embedded_list el;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_embedded_parse(sec, len, 0x1000, "prog", true, &el, &err), CBC_OK, "%s", err.msg);
    cr_assert_eq(el.n, 3);
    cr_assert_eq(el.n_records, 2);
    cr_assert_str_eq(el.v[0].bundle, "one");
    cr_assert_str_eq(el.v[2].bundle, "two");
    cr_assert_eq(el.v[1].target.arch, 90);
    cr_assert_eq(el.v[2].record, 1);
    cr_assert_eq(el.v[0].offset % 64, 0);
    cr_assert_eq(memcmp(el.v[1].data, c90, l90), 0);
    cbc_embedded_release(&el);

    /* a flipped byte: corrupt; a relabelled image: mislabeled */
    uint64_t off90 = cbc_rd64(sec + CBC_EMBED_HEADER + 8 + CBC_EMBED_DESC + 16);
    sec[off90 + 100] ^= 1;
    cr_assert_eq(cbc_embedded_parse(sec, len, 0, "prog", true, &el, &err), CBC_E_FORMAT);
    cr_assert(strstr(err.msg, "image sm_90 of embedded bundle 'one' is corrupt"), "%s", err.msg);
    cr_assert_eq(cbc_embedded_parse(sec, len, 0, "prog", false, &el, &err), CBC_OK);
    cbc_embedded_release(&el);
    sec[off90 + 100] ^= 1;
    memcpy(sec + CBC_EMBED_HEADER + 8, "sm_89", 5);
    cr_assert_eq(cbc_embedded_parse(sec, len, 0, "prog", true, &el, &err), CBC_E_VERIFY);
    cr_assert(strstr(err.msg, "image sm_89 of embedded bundle 'one' is mislabeled: labelled sm_89 "
                              "but holds sm_86 code"), "%s", err.msg);
    cr_assert_null(strstr(err.msg, "<buffer>"), "bytes that are no file named as one: %s", err.msg);
    memcpy(sec + CBC_EMBED_HEADER + 8, "sm_86", 5);

    /* lies about sizes and offsets, and bad fields, name file and offset */
    static const struct {
        size_t at;
        uint64_t value;
        int width;
        const char *needle;
    } lies[] = {
        {8, 1u << 30, 8, "record size"},
        {8, 20, 8, "record size"},
        {16, 1u << 28, 4, "images do not fit"},
        {20, 3, 4, "name size"},
        {CBC_EMBED_HEADER + 8 + 16, 8, 8, "outside the image area"},
        {CBC_EMBED_HEADER + 8 + 24, 1ull << 40, 8, "outside the image area"},
        {CBC_EMBED_HEADER + 8, 0x7a7a7a7a, 4, "expected a target"},
        {CBC_EMBED_HEADER + 8 + 32, 0x5a5a5a5a, 4, "hex digits"},
        {0, 0x41, 1, "magic"},
    };
    for (size_t i = 0; i < sizeof lies / sizeof lies[0]; i++) {
        uint8_t *bad = malloc(len);
        memcpy(bad, sec, len);
        if (lies[i].width == 8)
            cbc_wr64(bad + lies[i].at, lies[i].value);
        else if (lies[i].width == 4)
            cbc_wr32(bad + lies[i].at, (uint32_t)lies[i].value);
        else
            bad[lies[i].at] = (uint8_t)lies[i].value;
        cr_assert_eq(cbc_embedded_parse(bad, len, 0, "prog", false, &el, &err), CBC_E_FORMAT,
                     "lie %zu accepted", i);
        cr_assert(strstr(err.msg, "'prog': offset") && strstr(err.msg, lies[i].needle),
                  "lie %zu: %s", i, err.msg);
        free(bad);
    }
    /* every truncation fails with an error naming the file and the offset,
     * or reads whole records only (the empty prefix reads none) */
    size_t refused = 0;
    for (size_t cut = 0; cut < len; cut += 7) {
        struct cbc_err te = {0};
        enum cbc_status st = cbc_embedded_parse(sec, cut, 0, "prog", true, &el, &te);
        if (st == CBC_OK) {
            cr_assert(el.n == 0 || el.n == 2, "cut at %zu read %zu images of 2", cut, el.n);
            cbc_embedded_release(&el);
        } else {
            refused++;
            cr_assert_eq(st, CBC_E_FORMAT, "cut at %zu: status %d", cut, st);
            cr_assert(strstr(te.msg, "'prog': offset"), "cut at %zu: %s", cut, te.msg);
        }
    }
    cr_assert_gt(refused, len / 7 / 2, "only %zu truncations refused", refused);
    free(sec);
    free(c86);
    free(c90);
}

/* The writer `cubincache embed` uses lays out byte for byte what the
 * layout of binfmt.h (as make_record reads it) says, and the reader reads
 * it back verified; PTX gets the NUL the driver wants after its bytes. */
Test(binfmt, the_record_writer_lays_out_what_the_reader_reads)
{
    size_t l86, l90, lptx;
    uint8_t *c86 = fixture("k.sm_86.cubin", &l86), *c90 = fixture("k.sm_90.cubin", &l90);
    uint8_t *ptx = fixture("k.compute_90.ptx", &lptx);
    const char *t2[] = {"sm_86", "sm_90"};
    uint8_t *i2[] = {c86, c90};
    size_t s2[] = {l86, l90};
    const size_t cap = l86 + l90 + 4096;
    uint8_t *want = calloc(1, cap);
    size_t wlen = make_record(want, cap, "one", t2, i2, s2, 2);
    struct cbc_embedded_entry v[3] = {0};
    for (size_t i = 0; i < 3; i++) {
        cr_assert(cbc_target_parse(i < 2 ? t2[i] : "compute_90", &v[i].target));
        v[i].data = i < 2 ? i2[i] : ptx;
        v[i].size = i < 2 ? s2[i] : lptx;
        struct cbc_hash h;
        cbc_hash_bytes(v[i].data, (size_t)v[i].size, &h);
        cbc_hash_hex(&h, v[i].xxh3);
    }
    struct cbc_buf rec = {0};
    cr_assert_eq(cbc_embedded_write("one", v, 2, &rec, NULL), CBC_OK);
    cr_assert_eq(rec.len, wlen);
    cr_assert_eq(memcmp(rec.p, want, wlen), 0, "the writer and the layout differ");
    cbc_buf_release(&rec);
    cr_assert_eq(cbc_embedded_write("with_ptx", v, 3, &rec, NULL), CBC_OK);
    struct cbc_embedded_list el;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_embedded_parse((const uint8_t *)rec.p, rec.len, 0, "rec", true, &el, &err),
                 CBC_OK, "%s", err.msg);
    cr_assert_eq(el.n, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_eq(el.v[i].offset, v[i].offset);
        cr_assert_eq(el.v[i].offset % 64, 0);
        cr_assert(cbc_target_eq(&el.v[i].target, &v[i].target));
        cr_assert_eq(memcmp(el.v[i].data, v[i].data, (size_t)v[i].size), 0);
    }
    cr_assert_eq(el.v[2].ptx_isa, 90);
    cr_assert_eq(el.v[2].data[lptx], '\0', "PTX is followed by its NUL");
    cr_assert_eq(rec.len % 64, 0);
    cbc_embedded_release(&el);
    cbc_buf_release(&rec);
    cr_assert_eq(cbc_embedded_write("../x", v, 1, &rec, NULL), CBC_E_USAGE);
    cbc_buf_release(&rec);
    free(want);
    free(ptx);
    free(c86);
    free(c90);
}

/* An uncompressed ELF entry's payload is padded in the fatbin; the image
 * the driver gets (and that a .cubin file holds) ends where the ELF does. */
Test(binfmt, uncompressed_elf_entries_lose_their_padding)
{
    size_t len;
    uint8_t *cubin = fixture("k.sm_80.cubin", &len);
    size_t pad = 24, total = 16 + 64 + len + pad;
    uint8_t *fb = calloc(1, total);
    cbc_wr32(fb, 0xBA55ED50u);
    fb[4] = 1;
    fb[6] = 16;
    cbc_wr64(fb + 8, 64 + len + pad);
    uint8_t *e = fb + 16;
    e[0] = 2;          /* ELF */
    e[2] = e[3] = 1;   /* 0x0101 */
    cbc_wr32(e + 4, 64);
    cbc_wr64(e + 8, len + pad);
    cbc_wr32(e + 28, 80);
    cbc_wr64(e + 40, 0x11);
    memcpy(e + 64, cubin, len);
    struct cbc_fatbin f;
    cr_assert_eq(cbc_fatbin_parse(fb, total, 0, "padded", &f, NULL), CBC_OK);
    cr_assert_eq(f.n, 1);
    uint8_t *p = NULL;
    size_t pl = 0;
    cr_assert_eq(cbc_fatbin_entry_payload(&f.entries[0], "padded", &p, &pl, NULL), CBC_OK);
    cr_assert_eq(pl, len, "payload %zu bytes, the cubin %zu", pl, len);
    cr_assert_eq(memcmp(p, cubin, len), 0);
    free(p);
    cbc_fatbin_release(&f);
    free(fb);
    free(cubin);
}
