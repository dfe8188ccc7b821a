/* elfextra.h: what the program model needs beyond the public readers:
 * static library (ar) members, a host ELF's dynamic section (the shared
 * libraries it needs and where it says to look for them) and its data
 * sections, fatbin entries read one at a time (decompressed into a buffer
 * reused from image to image, or only as far as their first bytes), and
 * fatbin containers found outside the CUDA sections. Bounds-checked like
 * every reader; results point into the input.
 *
 * Internal and unstable.
 */
#ifndef CBC_ELFEXTRA_H
#define CBC_ELFEXTRA_H

#include "common.h"
#include <cubincache/binfmt.h>

struct cbc_ar_member {
    char *name;          /* malloc'd */
    uint64_t offset, size;
    const uint8_t *data; /* inside the input */
};
struct cbc_ar {
    struct cbc_ar_member *v;
    size_t n;
};
/* The members of an ar archive (its symbol and name tables left out). */
enum cbc_status cbc_ar_parse(const uint8_t *data, size_t len, const char *name, struct cbc_ar *out,
                             struct cbc_err *err);
void cbc_ar_release(struct cbc_ar *a);

#define CBC_ELF_NEEDED_MAX 128
struct cbc_elf_dynamic {
    const char *needed[CBC_ELF_NEEDED_MAX]; /* DT_NEEDED, in order */
    size_t n_needed;
    const char *rpath;   /* DT_RPATH or NULL */
    const char *runpath; /* DT_RUNPATH or NULL */
    uint16_t machine;    /* e_machine, to skip libraries of another kind */
};
/* Reads the .dynamic section (absent in a static executable or an object:
 * an empty result, not an error). */
enum cbc_status cbc_elf_dynamic(const uint8_t *data, size_t len, const char *name,
                                struct cbc_elf_dynamic *out, struct cbc_err *err);


/* The data sections of a host ELF other than the CUDA ones: allocated,
 * not executable, with bytes in the file (.rodata, .lrodata, .data,
 * .ldata, ...). A library that loads fatbins itself through the driver
 * (cuFFT's .ldata, cuBLASLt's .cask_resource) keeps them there. */
#define CBC_ELF_DATA_MAX 64
struct cbc_elf_data {
    struct {
        char name[32];
        uint64_t offset, size;
    } v[CBC_ELF_DATA_MAX];
    size_t n;
};
enum cbc_status cbc_elf_data_sections(const uint8_t *data, size_t len, const char *name,
                                      struct cbc_elf_data *out, struct cbc_err *err);

/* Decompression state one thread reuses from image to image: the output
 * buffer grows to the largest image and is kept. Zero-initialise it. */
struct cbc_inflate {
    uint8_t *buf;
    size_t cap;
    void *dctx;    /* ZSTD_DCtx */
    void *dstream; /* ZSTD_DStream, for prefixes */
};
void cbc_inflate_release(struct cbc_inflate *z);

/* cbc_fatbin_parse of data[0, len) lying inside the read-only file mapping
 * map[0, map_len): the pages of the headers it walked are dropped from the
 * process as it goes (cbc_map_forget), so that walking 2,981 entry headers
 * spread over 337 MB does not keep the kernel's folios around each one
 * (measured: 123 MB to 246 MB of them, by how the file was written). Never
 * for memory that is not such a mapping. */
enum cbc_status cbc_fatbin_parse_mapped(const uint8_t *data, size_t len, uint64_t base,
                                        const char *name, const uint8_t *map, size_t map_len,
                                        struct cbc_fatbin *out, struct cbc_err *err);

/* The entry whose header starts at `offset` of data[0, len), its header and
 * payload checked to lie inside (container index 0). */
enum cbc_status cbc_fatbin_entry_at(const uint8_t *data, size_t len, uint64_t offset,
                                    const char *name, struct cbc_fatbin_entry *out,
                                    struct cbc_err *err);
/* The entry's payload as the driver sees it, as cbc_fatbin_entry_payload
 * makes it, without a copy: *out points into the input when it is stored
 * raw, else into z->buf (valid until z is used again). */
enum cbc_status cbc_fatbin_entry_view(const struct cbc_fatbin_entry *e, const char *name,
                                      struct cbc_inflate *z, const uint8_t **out,
                                      size_t *out_len, struct cbc_err *err);
/* The first min(want, size) bytes of it: a zstd or LZ4 payload is decoded
 * only as far as they need (an ELF header is 64 bytes of a 40 MB image). */
enum cbc_status cbc_fatbin_entry_prefix(const struct cbc_fatbin_entry *e, const char *name,
                                        size_t want, struct cbc_inflate *z, const uint8_t **out,
                                        size_t *out_len, struct cbc_err *err);

/* Fatbin containers in data[0, len) (a data section at file offset `base`):
 * the magic at an 8-byte aligned file offset, version 1, a 16-byte header,
 * entries of kinds 1, 2 or 8 that decode and fill the container exactly.
 * Writes up to `max` file offsets to `at`; scanning starts at *resume (0
 * the first time), which is left where the next call goes on (len when
 * done). Anything else is skipped: data that merely holds the magic. */
size_t cbc_fatbin_scan(const uint8_t *data, size_t len, uint64_t base, uint64_t *at, size_t max,
                       uint64_t *resume);

/* The SM a cubin's ELF header names (e_flags, by its ABI version), from its
 * first 64 bytes alone, with the magic, class and e_machine checked. */
enum cbc_status cbc_cubin_header_sm(const uint8_t *data, size_t len, const char *name,
                                    unsigned *sm, struct cbc_err *err);

#endif
