/* cubincache/select.h: which image a GPU of compute capability X.Y loads,
 * and why: the CUDA driver's own rules, as one pure function.
 *
 * Loadable (docs/formats.md section 3, measured on an H200 where possible):
 *   SASS sm_XY and sm_XYf  on X.Z with Z >= Y (same major only)
 *   SASS sm_XYa            on exactly X.Y
 *   PTX  compute_XY        on any CC >= X.Y (JIT), if the driver knows its ISA
 *   PTX  compute_XYa       on exactly X.Y;  compute_XYf on X.Z, Z >= Y
 *   LTO-IR, unknown kinds  never
 *   relocatable code that needs a device link (cbc_image.needs_dlink)  never
 * Preference, as the driver's default CU_PREFER_PTX fallback documents it:
 *   1. SASS for exactly X.Y ('a' before 'f' before plain: measured {sm_90,
 *      sm_90a} -> sm_90a on an H200);
 *   2. PTX, highest arch not above X.Y ('a', 'f', plain at equal arch);
 *   3. SASS of the same major and a lower minor, highest first.
 * With prefer_binary (CU_PREFER_BINARY) 3 comes before 2. The order of 2
 * and 3 is documented in cuda.h but cannot be measured on CC 9.0 (there is
 * no lower-minor 9.x target); everything else matches the H200 table.
 *
 * Pure: no I/O, no allocation, no driver. Since 0.1.
 */
#ifndef CUBINCACHE_SELECT_H
#define CUBINCACHE_SELECT_H

#include <cubincache/api.h>

#include <cubincache/binfmt.h>

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cbc_select_how {
    CBC_SELECT_NONE = 0,
    CBC_SELECT_SASS_EXACT = 1,  /* cubin for exactly this CC */
    CBC_SELECT_SASS_COMPAT = 2, /* cubin of the same major, lower minor (incl. 'f' family) */
    CBC_SELECT_PTX_JIT = 3      /* PTX compiled by the driver at load time */
};

struct cbc_select_query {
    unsigned cc;          /* 10*major + minor: 90 for 9.0 */
    unsigned driver_isa;  /* highest PTX ISA the driver knows, 10*major+minor; 0: assume any */
    bool prefer_binary;   /* CU_PREFER_BINARY instead of the default CU_PREFER_PTX */
};

struct cbc_select_result {
    long index;               /* into the image array, -1 when nothing runs */
    enum cbc_select_how how;
    char reason[512];         /* "sm_90 SASS for compute capability 9.0", or why none */
};

/* Whether one image can run on the query's GPU; `why` (may be NULL) gets a
 * short reason when it cannot ("sm_86 runs only on 8.x"). */
CBC_API bool cbc_image_loadable(const struct cbc_image *img, const struct cbc_select_query *q, char *why,
                                size_t why_len);

/* Picks the image the driver would load. Returns result->index. */
CBC_API long cbc_select(const struct cbc_image *imgs, size_t n, const struct cbc_select_query *q,
                        struct cbc_select_result *result);

/* The highest PTX ISA a driver of this CUDA version (cuDriverGetVersion,
 * e.g. 13000) accepts: 13.0 -> 90, 12.8 -> 87. 0 when unknown. */
CBC_API unsigned cbc_ptx_isa_for_driver(int driver_version);
/* The CUDA version that introduced a PTX ISA (90 -> "13.0"), for messages. */
CBC_API const char *cbc_cuda_for_ptx_isa(unsigned isa);

/* Why nothing of a set of images runs on the query's GPU, the one wording
 * every "will not run" and "no image" message uses: "has sm_86, sm_89 and
 * no PTX", or "has compute_90; PTX ISA 9.0 needs a newer driver ...".
 * Writes at most len bytes. Since 0.1. */
CBC_API void cbc_select_none(const struct cbc_image *imgs, size_t n,
                             const struct cbc_select_query *q, char *buf, size_t len);

/* "sm_86, sm_89 and compute_80" style summary of what a set of images
 * holds, for messages. Writes at most len bytes. */
CBC_API void cbc_images_summary(const struct cbc_image *imgs, size_t n, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
