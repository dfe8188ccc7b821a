/* cubincache/binfmt.h: readers for what nvcc produces, with no CUDA install:
 * cubin ELF, fatbin containers (LZ4 and zstd payloads), PTX text, and host
 * ELF files carrying .nv_fatbin / __nv_relfatbin, or bundles compiled in by
 * `cubincache embed` (.cbc_bundle).
 *
 * Every reader takes (data, len, name): `name` (may be NULL) is the file
 * name used in error messages. Every offset and size read from the input is
 * checked against `len` before use; malformed input gives CBC_E_FORMAT and
 * a message naming the file, the byte offset and what was expected. Results
 * may point into `data`: they are valid while `data` is. The layouts are
 * NVIDIA's and undocumented; docs/formats.md records what was measured.
 */
#ifndef CUBINCACHE_BINFMT_H
#define CUBINCACHE_BINFMT_H

#include <cubincache/api.h>

#include <cubincache/arch.h>
#include <cubincache/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cbc_file_type {
    CBC_FILE_UNKNOWN = 0,
    CBC_FILE_CUBIN = 1,    /* ELF with e_machine EM_CUDA (190) */
    CBC_FILE_FATBIN = 2,   /* one or more containers, magic 0xBA55ED50 */
    CBC_FILE_PTX = 3,      /* text with a .version directive */
    CBC_FILE_HOST_ELF = 4, /* any other ELF: executable, shared library, object */
    CBC_FILE_LTOIR = 5,    /* NVVM LTO-IR, magic 7f4e43ed */
    CBC_FILE_ARCHIVE = 6   /* a static library: "!<arch>", members are host ELF objects */
};

/* Guesses the type from the first bytes. Never fails. Since 0.1. */
CBC_API enum cbc_file_type cbc_binfmt_detect(const uint8_t *data, size_t len);
CBC_API const char *cbc_file_type_name(enum cbc_file_type t);

/* ---- cubin --------------------------------------------------------------- */

struct cbc_cubin_func {
    const char *name; /* points into the input */
    bool entry;       /* a kernel (__global__), not a device function */
};

#define CBC_CUBIN_UNDEF_MAX 8

struct cbc_cubin_info {
    uint8_t osabi;          /* EI_OSABI: 0x33 (V1) or 0x41 (V2) */
    uint8_t abi_version;    /* EI_ABIVERSION: 7 (V1) or 8 (V2) */
    uint16_t e_type;        /* 2 ET_EXEC; 1 ET_REL for -rdc */
    uint32_t e_flags;
    unsigned sm;            /* 90 for sm_90 */
    unsigned virtual_arch;  /* the PTX arch it came from; 0 when unknown */
    uint8_t variant;        /* enum cbc_variant */
    bool debug;             /* built with -G (DWARF .debug_info) */
    bool lineinfo;          /* built with -lineinfo (.debug_line without .debug_info) */
    const char *tool_cmdline; /* .note.nv.tkinfo command line, or NULL */
    size_t tool_cmdline_len;
    struct cbc_cubin_func *funcs; /* FUNC symbols in .text.* sections */
    size_t n_funcs;
    /* Global symbols it references but does not define (relocatable -rdc
     * cubins: a device function of another unit, the device runtime's
     * __cudaCDP2LaunchDeviceV2): only a device link resolves them, and no
     * driver loads such a cubin alone. Weak references do not count. The
     * first CBC_CUBIN_UNDEF_MAX names point into the input; n_undefined
     * counts them all. cbc_cubin_parse only; 0 after parse_target. */
    const char *undefined[CBC_CUBIN_UNDEF_MAX];
    size_t n_undefined;
};

/* Whether a cubin needs a device link before any driver loads it: it is
 * relocatable (ET_REL) and references symbols it does not define. */
static inline bool cbc_cubin_needs_dlink(const struct cbc_cubin_info *ci)
{
    return ci->e_type == 1 && ci->n_undefined > 0;
}

/* Parses a cubin. On success release `out` with cbc_cubin_info_release. */
CBC_API enum cbc_status cbc_cubin_parse(const uint8_t *data, size_t len, const char *name,
                                        struct cbc_cubin_info *out, struct cbc_err *err);
/* The same checks and fields without the function list (funcs stays NULL):
 * what deciding the cubin's target needs, without walking its symbols. */
CBC_API enum cbc_status cbc_cubin_parse_target(const uint8_t *data, size_t len, const char *name,
                                               struct cbc_cubin_info *out, struct cbc_err *err);
CBC_API void cbc_cubin_info_release(struct cbc_cubin_info *info);
/* The target a cubin is for: SASS, its SM and variant. */
CBC_API struct cbc_target cbc_cubin_target(const struct cbc_cubin_info *info);

/* ---- PTX ----------------------------------------------------------------- */

struct cbc_ptx_info {
    unsigned isa;          /* .version 9.0 -> 90 */
    unsigned arch;         /* .target sm_90a -> 90 */
    uint8_t variant;       /* from the .target suffix */
    size_t n_entries;      /* .entry directives */
};

CBC_API enum cbc_status cbc_ptx_parse(const uint8_t *data, size_t len, const char *name,
                                      struct cbc_ptx_info *out, struct cbc_err *err);
/* The same, stopping at the first .version and .target: n_entries stays 0. */
CBC_API enum cbc_status cbc_ptx_header(const uint8_t *data, size_t len, const char *name,
                                       struct cbc_ptx_info *out, struct cbc_err *err);
CBC_API struct cbc_target cbc_ptx_target(const struct cbc_ptx_info *info);

/* ---- fatbin -------------------------------------------------------------- */

enum cbc_fatbin_kind { CBC_FATBIN_PTX = 1, CBC_FATBIN_ELF = 2, CBC_FATBIN_LTOIR = 8 };
enum cbc_compression { CBC_COMPRESS_NONE = 0, CBC_COMPRESS_LZ4 = 1, CBC_COMPRESS_ZSTD = 2 };

#define CBC_FATBIN_FLAG_64BIT 0x1ull
#define CBC_FATBIN_FLAG_DEBUG 0x2ull
#define CBC_FATBIN_FLAG_LINUX 0x10ull
#define CBC_FATBIN_FLAG_LZ4 0x2000ull
#define CBC_FATBIN_FLAG_ZSTD 0x8000ull
#define CBC_FATBIN_FLAG_ARCH_A 0x100000ull
#define CBC_FATBIN_FLAG_ARCH_F 0x200000ull

struct cbc_fatbin_entry {
    uint16_t kind;             /* enum cbc_fatbin_kind, or an unknown value as read */
    uint32_t header_size;
    uint64_t offset;           /* of the entry header, from the start of the input */
    uint64_t payload_size;     /* stored bytes (padded to 8) */
    uint32_t compressed_size;  /* exact compressed length; 0 when stored raw */
    uint64_t uncompressed_size;
    uint16_t version_major, version_minor; /* ELF: 1.8; PTX: the ISA, e.g. 9.0 */
    uint32_t arch;             /* 90, 100, 121: no suffix here */
    uint64_t flags;
    uint8_t variant;           /* from flags 0x100000 / 0x200000 */
    uint8_t compression;       /* enum cbc_compression */
    size_t container;          /* index of its container */
    const uint8_t *payload;    /* stored bytes, inside the input */
};

struct cbc_fatbin {
    struct cbc_fatbin_entry *entries;
    size_t n;
    size_t n_containers;
};

/* Parses one or more containers laid back to back (zero padding between
 * them is skipped). `base` is added to reported offsets, for containers
 * inside a host ELF section. */
CBC_API enum cbc_status cbc_fatbin_parse(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                         struct cbc_fatbin *out, struct cbc_err *err);
CBC_API void cbc_fatbin_release(struct cbc_fatbin *fb);

/* The entry's payload as the driver would see it: decompressed when the
 * entry is LZ4 or zstd, with padding dropped for uncompressed ELF. *out is
 * malloc'd. Refuses (CBC_E_FORMAT) outputs over 1 GiB and sizes that lie. */
CBC_API enum cbc_status cbc_fatbin_entry_payload(const struct cbc_fatbin_entry *e, const char *name,
                                                 uint8_t **out, size_t *out_len, struct cbc_err *err);

CBC_API const char *cbc_fatbin_kind_name(uint16_t kind);
CBC_API const char *cbc_compression_name(uint8_t c);

/* ---- host ELF ------------------------------------------------------------ */

struct cbc_host_section {
    bool present;
    uint64_t offset, size;
};

struct cbc_host_elf {
    uint16_t e_type;    /* 1 object, 2 executable, 3 shared object / PIE */
    uint16_t e_machine;
    struct cbc_host_section nv_fatbin;   /* .nv_fatbin: containers the runtime registers */
    struct cbc_host_section nv_relfatbin; /* __nv_relfatbin: -rdc objects, for nvlink */
    struct cbc_host_section cbc_bundle;   /* .cbc_bundle: bundles `cubincache embed` compiled in */
};

CBC_API enum cbc_status cbc_host_elf_parse(const uint8_t *data, size_t len, const char *name,
                                           struct cbc_host_elf *out, struct cbc_err *err);

/* ---- bundles compiled in by `cubincache embed` ---------------------------- */
/* `cubincache embed` writes each bundle as one record in the section
 * CBC_EMBED_SECTION, so `check`, `inspect` and `select` find the images a
 * program carries without running it. The loader reads the same record
 * with the same reader (cbc_bundle_open_embedded refuses a generated
 * struct that says anything else of it), so what check judges is what the
 * loader loads. Records follow each other (zero padding between them is
 * skipped); all integers are little-endian:
 *
 *   0   8  magic CBC_EMBED_MAGIC
 *   8   8  record size in bytes, padding included (a multiple of 8)
 *   16  4  number of images n
 *   20  4  name size s (a multiple of 8): the bundle name, NUL-terminated
 *   24  s  name
 *   ..  n descriptors of CBC_EMBED_DESC bytes:
 *         16  target, NUL-terminated ("sm_90", "compute_120")
 *          8  image offset from the record's start
 *          8  image size (PTX text: its NUL follows, not counted)
 *         32  XXH3-128 of the image, 32 hex digits
 *   ..  the images, each 64-byte aligned inside the record. */
#define CBC_EMBED_SECTION ".cbc_bundle"
#define CBC_EMBED_MAGIC "CBCBNDL\001"
#define CBC_EMBED_HEADER 24u
#define CBC_EMBED_DESC 64u

struct cbc_embedded_entry {
    const char *bundle;        /* the bundle's name (points into the input) */
    struct cbc_target target;  /* from the descriptor */
    unsigned ptx_isa;          /* PTX images: their .version; else 0 */
    uint64_t offset;           /* of the image, from the input's start plus base */
    uint64_t size;
    const uint8_t *data;       /* inside the input */
    size_t record;             /* index of its record */
    char xxh3[33];             /* as recorded: 32 hex digits */
};
struct cbc_embedded_list {
    struct cbc_embedded_entry *v;
    size_t n, n_records;
};
/* Parses the records of a CBC_EMBED_SECTION's contents. With `verify`,
 * every image is also checked against its descriptor: a content hash that
 * differs gives CBC_E_FORMAT (corrupt), code for another target than the
 * label CBC_E_VERIFY (mislabeled). Release with cbc_embedded_release. */
CBC_API enum cbc_status cbc_embedded_parse(const uint8_t *data, size_t len, uint64_t base, const char *name,
                                           bool verify, struct cbc_embedded_list *out, struct cbc_err *err);
CBC_API void cbc_embedded_release(struct cbc_embedded_list *l);
/* Verifies one image as cbc_embedded_parse does with `verify`. */
CBC_API enum cbc_status cbc_embedded_verify(const struct cbc_embedded_entry *e, const char *name,
                                            struct cbc_err *err);

/* ---- every image of any file --------------------------------------------- */

/* One loadable (or not) image, whatever file it came from. */
struct cbc_image {
    uint16_t fatbin_kind;       /* enum cbc_fatbin_kind (a cubin or PTX file maps to ELF / PTX) */
    struct cbc_target target;   /* SASS or PTX, arch and variant */
    unsigned ptx_isa;           /* PTX ISA as 10*major+minor; 0 for SASS or unknown */
    uint64_t offset;            /* where it starts in the file */
    uint64_t size;              /* stored size */
    uint64_t uncompressed_size; /* 0 when stored raw */
    uint8_t compression;        /* enum cbc_compression */
    bool debug;
    /* Relocatable code no driver loads alone: an entry of __nv_relfatbin (the
     * input of a device link), or a cubin that references symbols it does
     * not define. The selection policy never picks one; see the program
     * model (check, select) for when such code is linked. */
    bool needs_dlink;
    const char *section;        /* ".nv_fatbin", "__nv_relfatbin", ".cbc_bundle" or NULL */
    size_t container;           /* fatbin container, or embedded record */
    const char *bundle;         /* in .cbc_bundle: the bundle's name; else NULL */
};

struct cbc_image_list {
    enum cbc_file_type type;
    struct cbc_image *v;
    size_t n;
};

/* Lists every image of a cubin, PTX file, fatbin or host ELF (its fatbins
 * and its embedded bundles, the latter verified as cbc_embedded_parse
 * does). A host ELF with no CUDA sections gives an empty list, not an
 * error. */
CBC_API enum cbc_status cbc_binfmt_images(const uint8_t *data, size_t len, const char *name,
                                          struct cbc_image_list *out, struct cbc_err *err);
CBC_API void cbc_image_list_release(struct cbc_image_list *l);

/* ---- label verification -------------------------------------------------- */

/* Checks that `data` really is an image for `want`: a cubin whose ELF says
 * that SM and variant, or PTX whose .target says that arch and variant.
 * CBC_E_VERIFY with a message naming what the bytes say when they disagree
 * (the "mislabeled cubin" case); CBC_E_FORMAT when they do not parse.
 * *found (may be NULL) receives what the bytes say. */
CBC_API enum cbc_status cbc_binfmt_verify_target(const uint8_t *data, size_t len,
                                                 const struct cbc_target *want, const char *name,
                                                 struct cbc_target *found, struct cbc_err *err);

#ifdef __cplusplus
}
#endif
#endif
