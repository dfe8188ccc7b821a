/* fatbin.c: fatbin containers and their entries, LZ4 and zstd payloads.
 *
 * Layout (all little-endian; docs/formats.md has the full table):
 *   container: u32 magic 0xBA55ED50, u16 version 1, u16 header size (16),
 *              u64 size of the entries that follow
 *   entry:     u16 kind, u16 0x0101, u32 header size (>= 64), u64 payload
 *              size, u32 compressed size, u32 options offset, u16 minor,
 *              u16 major, u32 arch, u32 name offset, u32 name length,
 *              u64 flags, u64 0, u64 uncompressed size; then the payload
 * Containers may follow each other directly or after zero padding, as in a
 * host's .nv_fatbin. Every size is checked against its container before use.
 */
#include "binfmt_int.h"
#include "elfextra.h"

#include <lz4.h>
#include <stdlib.h>
#include <zstd.h>

#define FATBIN_MAGIC 0xBA55ED50u
#define ENTRY_MIN_HEADER 64
#define MAX_PAYLOAD (1ull << 30)

const char *cbc_fatbin_kind_name(uint16_t kind)
{
    switch (kind) {
    case CBC_FATBIN_PTX: return "PTX";
    case CBC_FATBIN_ELF: return "ELF";
    case CBC_FATBIN_LTOIR: return "LTO-IR";
    default: return "unknown";
    }
}

const char *cbc_compression_name(uint8_t c)
{
    switch (c) {
    case CBC_COMPRESS_LZ4: return "lz4";
    case CBC_COMPRESS_ZSTD: return "zstd";
    default: return "none";
    }
}

static enum cbc_status add_entry(struct cbc_fatbin *fb, size_t *cap, const struct cbc_fatbin_entry *e,
                                 struct cbc_err *err)
{
    if (!cbc_grow(&fb->entries, fb->n, cap, sizeof *fb->entries, 8))
        return cbc_err_oom(err);
    fb->entries[fb->n++] = *e;
    return CBC_OK;
}

/* Decodes the entry header at data[e] of a container ending at `end`,
 * checking its header and payload lie inside. */
static enum cbc_status decode_entry(const uint8_t *data, uint64_t e, uint64_t end, uint64_t base,
                                    const char *name, size_t container,
                                    struct cbc_fatbin_entry *out, struct cbc_err *err)
{
    if (end < e || end - e < ENTRY_MIN_HEADER)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, base + e,
                           "entry header needs %d bytes, %llu left in the container",
                           ENTRY_MIN_HEADER, (unsigned long long)(end < e ? 0 : end - e));
    const uint8_t *h = data + e;
    struct cbc_fatbin_entry ent = {0};
    ent.kind = cbc_rd16(h);
    ent.header_size = cbc_rd32(h + 4);
    ent.payload_size = cbc_rd64(h + 8);
    ent.compressed_size = cbc_rd32(h + 16);
    ent.version_minor = cbc_rd16(h + 24);
    ent.version_major = cbc_rd16(h + 26);
    ent.arch = cbc_rd32(h + 28);
    ent.flags = cbc_rd64(h + 40);
    ent.uncompressed_size = cbc_rd64(h + 56);
    ent.offset = base + e;
    ent.container = container;
    if (ent.header_size < ENTRY_MIN_HEADER || ent.header_size > end - e)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, base + e + 4,
                           "entry header size %u is outside [%d, %llu]", ent.header_size,
                           ENTRY_MIN_HEADER, (unsigned long long)(end - e));
    if (ent.payload_size > end - e - ent.header_size)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, base + e + 8,
                           "entry payload size %llu runs past the container (%llu bytes left)",
                           (unsigned long long)ent.payload_size,
                           (unsigned long long)(end - e - ent.header_size));
    bool lz4 = ent.flags & CBC_FATBIN_FLAG_LZ4, zstd = ent.flags & CBC_FATBIN_FLAG_ZSTD;
    if (lz4 && zstd)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, base + e + 40,
                           "entry flags %#llx claim both LZ4 and zstd compression",
                           (unsigned long long)ent.flags);
    ent.compression = lz4 ? CBC_COMPRESS_LZ4 : zstd ? CBC_COMPRESS_ZSTD : CBC_COMPRESS_NONE;
    if (ent.compression != CBC_COMPRESS_NONE && ent.compressed_size > ent.payload_size)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, base + e + 16,
                           "compressed size %u exceeds the stored payload (%llu bytes)",
                           ent.compressed_size, (unsigned long long)ent.payload_size);
    ent.variant = (ent.flags & CBC_FATBIN_FLAG_ARCH_A)   ? CBC_VARIANT_A
                  : (ent.flags & CBC_FATBIN_FLAG_ARCH_F) ? CBC_VARIANT_F
                                                         : CBC_VARIANT_NONE;
    ent.payload = data + e + ent.header_size;
    *out = ent;
    return CBC_OK;
}

static enum cbc_status parse_entries(const uint8_t *data, uint64_t start, uint64_t end, uint64_t base,
                                     const char *name, size_t container, struct cbc_fatbin *fb,
                                     size_t *cap, struct cbc_err *err)
{
    uint64_t e = start;
    while (e < end) {
        struct cbc_fatbin_entry ent;
        enum cbc_status st = decode_entry(data, e, end, base, name, container, &ent, err);
        if (st == CBC_OK)
            st = add_entry(fb, cap, &ent, err);
        if (st != CBC_OK)
            return st;
        e += ent.header_size + ent.payload_size;
    }
    return CBC_OK;
}

enum cbc_status cbc_fatbin_entry_at(const uint8_t *data, size_t len, uint64_t offset,
                                    const char *name, struct cbc_fatbin_entry *out,
                                    struct cbc_err *err)
{
    if (offset > len)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, offset,
                           "fatbin entry offset lies past the end of the input (%zu bytes)", len);
    return decode_entry(data, offset, len, 0, name, 0, out, err);
}

/* The containers of data[0, len); with `map` (the file mapping data lies
 * in, data = map + map_off), the pages of the headers read are dropped as
 * the walk goes on. */
static enum cbc_status parse_impl(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                  const uint8_t *map, size_t map_len, struct cbc_fatbin *out,
                                  struct cbc_err *err)
{
    memset(out, 0, sizeof *out);
    struct cbc_fatbin fb = {0};
    size_t cap = 0;
    uint64_t off = 0, dropped = 0;
    uint64_t map_off = map ? (uint64_t)(data - map) : 0;
    enum cbc_status st = CBC_OK;
    while (off < len) {
        if (map && off - dropped >= (4u << 20)) {
            cbc_map_forget(map, map_len, map_off + dropped, off - dropped);
            dropped = off;
        }
        if (fb.n_containers > 0) {
            /* zero padding between or after containers */
            while (off < len && data[off] == 0)
                off++;
            if (off >= len)
                break;
        }
        if (len - off < 16) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, base + off,
                             "fatbin container header needs 16 bytes, %llu left",
                             (unsigned long long)(len - off));
            goto fail;
        }
        uint32_t magic = cbc_rd32(data + off);
        uint16_t version = cbc_rd16(data + off + 4), hsize = cbc_rd16(data + off + 6);
        uint64_t size = cbc_rd64(data + off + 8);
        if (magic != FATBIN_MAGIC) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, base + off,
                             "expected the fatbin magic 0xba55ed50, found %#x", magic);
            goto fail;
        }
        if (version != 1) {
            st = cbc_fmt_err(err, CBC_E_UNSUPPORTED, name, base + off + 4,
                             "fatbin container version %u; only version 1 is known", version);
            goto fail;
        }
        if (hsize < 16 || hsize > len - off) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, base + off + 6,
                             "container header size %u is outside [16, %llu]", hsize,
                             (unsigned long long)(len - off));
            goto fail;
        }
        if (size > len - off - hsize) {
            st = cbc_fmt_err(err, CBC_E_FORMAT, name, base + off + 8,
                             "container claims %llu bytes of entries, only %llu remain (truncated?)",
                             (unsigned long long)size, (unsigned long long)(len - off - hsize));
            goto fail;
        }
        st = parse_entries(data, off + hsize, off + hsize + size, base, name, fb.n_containers, &fb,
                           &cap, err);
        if (st != CBC_OK)
            goto fail;
        fb.n_containers++;
        off += hsize + size;
    }
    if (fb.n_containers == 0) {
        st = cbc_fmt_err(err, CBC_E_FORMAT, name, base, "empty input: no fatbin container");
        goto fail;
    }
    if (map)
        cbc_map_forget(map, map_len, map_off + dropped, len - dropped);
    *out = fb;
    return CBC_OK;
fail:
    free(fb.entries);
    return st;
}

enum cbc_status cbc_fatbin_parse(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                 struct cbc_fatbin *out, struct cbc_err *err)
{
    return parse_impl(data, len, base, name, NULL, 0, out, err);
}

enum cbc_status cbc_fatbin_parse_mapped(const uint8_t *data, size_t len, uint64_t base,
                                        const char *name, const uint8_t *map, size_t map_len,
                                        struct cbc_fatbin *out, struct cbc_err *err)
{
    return parse_impl(data, len, base, name, map, map_len, out, err);
}

void cbc_fatbin_release(struct cbc_fatbin *fb)
{
    free(fb->entries);
    memset(fb, 0, sizeof *fb);
}

/* Where an ELF image ends: the furthest of its section table, program
 * header table and section contents. The stored payload is padded to 8
 * bytes; the ELF is what the driver (and a .cubin file) holds. Returns `len`
 * when the headers do not say (then nothing is dropped). */
static uint64_t elf_extent(const uint8_t *p, uint64_t len)
{
    if (len < 64 || memcmp(p, "\177ELF", 4) != 0 || p[4] != 2)
        return len;
    uint64_t phoff = cbc_rd64(p + 32), shoff = cbc_rd64(p + 40);
    uint16_t phes = cbc_rd16(p + 54), phn = cbc_rd16(p + 56), shes = cbc_rd16(p + 58),
             shn = cbc_rd16(p + 60);
    uint64_t end = 64;
    if (phn && cbc_in_bounds(len, phoff, (uint64_t)phes * phn))
        end = phoff + (uint64_t)phes * phn > end ? phoff + (uint64_t)phes * phn : end;
    if (!shn || shes != 64 || !cbc_in_bounds(len, shoff, 64ull * shn))
        return len;
    end = shoff + 64ull * shn > end ? shoff + 64ull * shn : end;
    for (uint16_t i = 1; i < shn; i++) {
        const uint8_t *h = p + shoff + 64ull * i;
        uint32_t type = cbc_rd32(h + 4);
        uint64_t off = cbc_rd64(h + 24), size = cbc_rd64(h + 32);
        if (type == 8 /* SHT_NOBITS */ || size == 0)
            continue;
        if (!cbc_in_bounds(len, off, size))
            return len;
        end = off + size > end ? off + size : end;
    }
    return end;
}

/* Checks the sizes a compressed entry declares before anything is
 * allocated for it. */
static enum cbc_status check_compressed(const struct cbc_fatbin_entry *e, const char *name,
                                        struct cbc_err *err)
{
    if (e->uncompressed_size == 0 || e->uncompressed_size > MAX_PAYLOAD)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset + 56,
                           "uncompressed size %llu of a %s entry is not in (0, 1 GiB]",
                           (unsigned long long)e->uncompressed_size,
                           cbc_compression_name(e->compression));
    if (e->compression == CBC_COMPRESS_LZ4 && e->compressed_size > (uint32_t)INT32_MAX)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset + 16, "LZ4 block too large");
    return CBC_OK;
}

static bool inflate_room(struct cbc_inflate *z, size_t n)
{
    if (z->cap >= n)
        return true;
    size_t cap = z->cap ? z->cap : 1 << 16;
    while (cap < n)
        cap *= 2;
    uint8_t *p = realloc(z->buf, cap);
    if (!p)
        return false;
    z->buf = p;
    z->cap = cap;
    return true;
}

void cbc_inflate_release(struct cbc_inflate *z)
{
    free(z->buf);
    ZSTD_freeDCtx(z->dctx);
    ZSTD_freeDStream(z->dstream);
    memset(z, 0, sizeof *z);
}

/* Decompresses the whole entry into p[0, cap), cap being its declared size. */
static enum cbc_status inflate_all(const struct cbc_fatbin_entry *e, const char *name,
                                   struct cbc_inflate *z, uint8_t *p, size_t cap,
                                   struct cbc_err *err)
{
    uint64_t at = e->offset + e->header_size;
    size_t got = 0;
    if (e->compression == CBC_COMPRESS_LZ4) {
        int r = LZ4_decompress_safe((const char *)e->payload, (char *)p, (int)e->compressed_size,
                                    (int)(cap > INT32_MAX ? INT32_MAX : cap));
        if (r < 0)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, at,
                               "LZ4 payload (%u bytes) does not decompress", e->compressed_size);
        got = (size_t)r;
    } else {
        if (z && !z->dctx && !(z->dctx = ZSTD_createDCtx()))
            return cbc_err_oom(err);
        size_t r = z ? ZSTD_decompressDCtx(z->dctx, p, cap, e->payload, e->compressed_size)
                     : ZSTD_decompress(p, cap, e->payload, e->compressed_size);
        if (ZSTD_isError(r))
            return cbc_fmt_err(err, CBC_E_FORMAT, name, at,
                               "zstd payload (%u bytes) does not decompress: %s",
                               e->compressed_size, ZSTD_getErrorName(r));
        got = r;
    }
    if (got != cap)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset + 56,
                           "entry decompresses to %zu bytes but its header says %llu", got,
                           (unsigned long long)e->uncompressed_size);
    return CBC_OK;
}

/* The bytes of an uncompressed entry the driver sees: ELF without its
 * padding to 8, everything else as stored. */
static size_t raw_len(const struct cbc_fatbin_entry *e)
{
    return (size_t)(e->kind == CBC_FATBIN_ELF ? elf_extent(e->payload, e->payload_size)
                                              : e->payload_size);
}

enum cbc_status cbc_fatbin_entry_view(const struct cbc_fatbin_entry *e, const char *name,
                                      struct cbc_inflate *z, const uint8_t **out,
                                      size_t *out_len, struct cbc_err *err)
{
    if (e->compression == CBC_COMPRESS_NONE) {
        *out = e->payload;
        *out_len = raw_len(e);
        return CBC_OK;
    }
    enum cbc_status st = check_compressed(e, name, err);
    if (st != CBC_OK)
        return st;
    size_t cap = (size_t)e->uncompressed_size;
    if (!inflate_room(z, cap))
        return cbc_err_oom(err);
    st = inflate_all(e, name, z, z->buf, cap, err);
    if (st != CBC_OK)
        return st;
    *out = z->buf;
    *out_len = cap;
    return CBC_OK;
}

enum cbc_status cbc_fatbin_entry_prefix(const struct cbc_fatbin_entry *e, const char *name,
                                        size_t want, struct cbc_inflate *z, const uint8_t **out,
                                        size_t *out_len, struct cbc_err *err)
{
    if (e->compression == CBC_COMPRESS_NONE) {
        size_t n = raw_len(e);
        *out = e->payload;
        *out_len = n < want ? n : want;
        return CBC_OK;
    }
    enum cbc_status st = check_compressed(e, name, err);
    if (st != CBC_OK)
        return st;
    size_t n = want < e->uncompressed_size ? want : (size_t)e->uncompressed_size;
    if (!inflate_room(z, n ? n : 1))
        return cbc_err_oom(err);
    uint64_t at = e->offset + e->header_size;
    size_t got = 0;
    if (e->compression == CBC_COMPRESS_LZ4) {
        /* the block decoder stops once n bytes are out */
        int r = LZ4_decompress_safe_partial((const char *)e->payload, (char *)z->buf,
                                            (int)e->compressed_size, (int)n, (int)z->cap);
        if (r < 0)
            return cbc_fmt_err(err, CBC_E_FORMAT, name, at,
                               "LZ4 payload (%u bytes) does not decompress", e->compressed_size);
        got = (size_t)r < n ? (size_t)r : n;
    } else {
        /* a zstd stream decodes one block at a time: only the blocks that
         * hold the first n bytes are decoded */
        if (!z->dstream && !(z->dstream = ZSTD_createDStream()))
            return cbc_err_oom(err);
        ZSTD_initDStream(z->dstream);
        ZSTD_inBuffer in = {e->payload, e->compressed_size, 0};
        ZSTD_outBuffer o = {z->buf, n, 0};
        while (o.pos < o.size) {
            size_t r = ZSTD_decompressStream(z->dstream, &o, &in);
            if (ZSTD_isError(r))
                return cbc_fmt_err(err, CBC_E_FORMAT, name, at,
                                   "zstd payload (%u bytes) does not decompress: %s",
                                   e->compressed_size, ZSTD_getErrorName(r));
            if (r == 0 || (in.pos == in.size && o.pos < o.size))
                break; /* the frame ended */
        }
        got = o.pos;
    }
    if (got < n)
        return cbc_fmt_err(err, CBC_E_FORMAT, name, e->offset + 56,
                           "entry decompresses to %zu bytes but its header says %llu", got,
                           (unsigned long long)e->uncompressed_size);
    *out = z->buf;
    *out_len = got;
    return CBC_OK;
}

enum cbc_status cbc_fatbin_entry_payload(const struct cbc_fatbin_entry *e, const char *name,
                                         uint8_t **out, size_t *out_len, struct cbc_err *err)
{
    if (e->compression == CBC_COMPRESS_NONE) {
        size_t n = raw_len(e);
        uint8_t *p = malloc(n ? n : 1);
        if (!p)
            return cbc_err_oom(err);
        memcpy(p, e->payload, n);
        *out = p;
        *out_len = n;
        return CBC_OK;
    }
    enum cbc_status st = check_compressed(e, name, err);
    if (st != CBC_OK)
        return st;
    size_t cap = (size_t)e->uncompressed_size;
    uint8_t *p = malloc(cap);
    if (!p)
        return cbc_err_oom(err);
    st = inflate_all(e, name, NULL, p, cap, err);
    if (st != CBC_OK) {
        free(p);
        return st;
    }
    *out = p;
    *out_len = cap;
    return CBC_OK;
}

/* ---- containers outside the CUDA sections ---------------------------------- */

size_t cbc_fatbin_scan(const uint8_t *data, size_t len, uint64_t base, uint64_t *at, size_t max,
                       uint64_t *resume)
{
    static const uint8_t magic[4] = {0x50, 0xed, 0x55, 0xba};
    size_t n = 0;
    uint64_t p = *resume;
    while (n < max && p + 16 <= len) {
        const uint8_t *hit = memmem(data + p, len - p, magic, sizeof magic);
        if (!hit) {
            p = len;
            break;
        }
        p = (uint64_t)(hit - data);
        if ((base + p) % 8 != 0) {
            p++;
            continue;
        }
        if (len - p < 16 || cbc_rd16(data + p + 4) != 1 || cbc_rd16(data + p + 6) != 16) {
            p += 8;
            continue;
        }
        uint64_t size = cbc_rd64(data + p + 8);
        bool ok = size >= ENTRY_MIN_HEADER && size <= len - p - 16;
        /* every entry decodes, is a kind the driver or nvJitLink knows, and
         * they fill the container exactly */
        uint64_t e = p + 16, end = ok ? p + 16 + size : 0;
        while (ok && e < end) {
            struct cbc_fatbin_entry ent;
            ok = decode_entry(data, e, end, base, NULL, 0, &ent, NULL) == CBC_OK &&
                 (ent.kind == CBC_FATBIN_PTX || ent.kind == CBC_FATBIN_ELF ||
                  ent.kind == CBC_FATBIN_LTOIR);
            if (ok)
                e += ent.header_size + ent.payload_size;
        }
        if (!ok) {
            p += 8;
            continue;
        }
        at[n++] = base + p;
        p = end;
    }
    *resume = n == max ? p : len;
    return n;
}
