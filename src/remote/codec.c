/* codec.c: what the remote's front and its backends share (remote.h,
 * backend.h): the value codec (a header, then the entry as it is or zstd
 * compressed), the names of the keys a Redis server holds, and the
 * monotonic clock every deadline is measured on. It calls nothing of the
 * front or the backends, so they build on it without a circle.
 *
 * Invariants: decompression is bounded by the size the header declares,
 * which must also fit the caller's maximum; a value that fails a check is
 * refused with why, never returned in part.
 */
#include "backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#define VALUE_MAGIC "CBCR"
#define VALUE_HEADER CBC_REMOTE_VALUE_HEADER
#define VALUE_VERSION 1

/* ---- the codec -------------------------------------------------------------- */

enum cbc_status cbc_remote_encode(const void *data, size_t len, uint8_t **out, size_t *out_len,
                                  struct cbc_err *err)
{
    size_t bound = ZSTD_compressBound(len);
    uint8_t *v = malloc(VALUE_HEADER + (bound > len ? bound : len));
    if (!v)
        return cbc_err_oom(err);
    memcpy(v, VALUE_MAGIC, 4);
    v[4] = VALUE_VERSION;
    v[5] = 0;
    v[6] = v[7] = 0;
    cbc_wr64(v + 8, len);
    size_t z = len >= 512 ? ZSTD_compress(v + VALUE_HEADER, bound, data, len, 3) : 0;
    if (len >= 512 && !ZSTD_isError(z) && z + z / 16 < len) { /* worth it: 6% or more */
        v[5] = 1;
        *out_len = VALUE_HEADER + z;
    } else {
        memcpy(v + VALUE_HEADER, data, len);
        *out_len = VALUE_HEADER + len;
    }
    *out = v;
    return CBC_OK;
}

enum cbc_status cbc_remote_decode_max(const uint8_t *v, size_t vlen, uint64_t max, uint8_t **out,
                                      size_t *out_len, char *why, size_t why_len)
{
    if (vlen < VALUE_HEADER || memcmp(v, VALUE_MAGIC, 4) != 0) {
        snprintf(why, why_len, "not a cubincache value (%zu bytes, bad magic)", vlen);
        return CBC_E_FORMAT;
    }
    if (v[4] != VALUE_VERSION || v[5] > 1) {
        snprintf(why, why_len, "value version %u codec %u, expected version %u", v[4], v[5],
                 VALUE_VERSION);
        return CBC_E_FORMAT;
    }
    uint64_t raw = cbc_rd64(v + 8);
    if (raw > max) {
        snprintf(why, why_len, "declares %llu bytes, over the %llu limit (max-value)",
                 (unsigned long long)raw, (unsigned long long)max);
        return CBC_E_FORMAT;
    }
    uint8_t *o = malloc((size_t)raw + 1);
    if (!o) {
        snprintf(why, why_len, "out of memory");
        return CBC_E_NOMEM;
    }
    if (v[5] == 0) {
        if (vlen - VALUE_HEADER != raw) {
            free(o);
            snprintf(why, why_len, "%zu bytes where the header says %llu (truncated?)",
                     vlen - VALUE_HEADER, (unsigned long long)raw);
            return CBC_E_FORMAT;
        }
        memcpy(o, v + VALUE_HEADER, (size_t)raw);
    } else {
        size_t z = ZSTD_decompress(o, (size_t)raw, v + VALUE_HEADER, vlen - VALUE_HEADER);
        if (ZSTD_isError(z) || z != raw) {
            free(o);
            snprintf(why, why_len, "the compressed bytes do not decode to the %llu declared (truncated or damaged)%s%s",
                     (unsigned long long)raw, ZSTD_isError(z) ? ": " : "",
                     ZSTD_isError(z) ? ZSTD_getErrorName(z) : "");
            return CBC_E_FORMAT;
        }
    }
    o[raw] = 0;
    *out = o;
    *out_len = (size_t)raw;
    return CBC_OK;
}

enum cbc_status cbc_remote_decode(const uint8_t *v, size_t vlen, uint8_t **out, size_t *out_len,
                                  char *why, size_t why_len)
{
    return cbc_remote_decode_max(v, vlen, CBC_REMOTE_VALUE_MAX, out, out_len, why, why_len);
}

/* ---- keys ---------------------------------------------------------------------- */

void cbc_rb_redis_key(const struct cbc_remote_cfg *cfg, const char *kind, const char *hex,
                      char *out, size_t len)
{
    snprintf(out, len, "cubincache:v1:%s%s%s:%s", cfg->ns_name ? cfg->ns_name : "",
             cfg->ns_name ? ":" : "", kind, hex);
}

uint64_t cbc_remote_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
