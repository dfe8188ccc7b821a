/* hash.c: XXH3-128 over bytes, files and typed fields, in canonical form.
 *
 * Where libxxhash has its x86 dispatcher, the widest vector unit of the CPU
 * at hand computes the same XXH3. Its AVX2 and AVX-512 code returns with the
 * upper halves of the vector registers in use (no vzeroupper): every later
 * SSE instruction and libm call of the thread, and of every thread it then
 * creates, ran many times slower (glibc's log() 25x on the H200 machine's
 * Xeon: a process that loaded a module through us and then did host math
 * paid for it). Invariant: every function here that ran dispatched code
 * returns with the upper state clear (tests/unit/test_key.c reads it back).
 *
 * The canonical form (XXH128_canonicalFromHash, big-endian) is what goes on
 * disk and into hex, so a key written on one host reads the same on any
 * other. Fields are fed as {u32 tag, u64 length, bytes} in little-endian,
 * which makes every key an unambiguous encoding of its inputs; the test
 * vectors in tests/unit/test_key.c (Test(hash, ...) and
 * Test(key, encoding_is_frozen)) freeze both.
 */
#include "common.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#ifdef CBC_XXH_DISPATCH
#include <xxh_x86dispatch.h> /* XXH3_* become their run-time dispatched forms */
#endif

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(CBC_XXH_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx"))) static void zero_upper(void)
{
    __builtin_ia32_vzeroupper();
}
/* Clears the upper vector state the dispatched XXH3 left in use. */
static void clear_upper(void)
{
    if (__builtin_cpu_supports("avx")) /* libgcc's CPU model, read-only after start-up */
        zero_upper();
}
#else
static void clear_upper(void)
{
}
#endif

static void to_canonical(XXH128_hash_t h, struct cbc_hash *out)
{
    clear_upper();
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, h);
    memcpy(out->b, c.digest, sizeof out->b);
}

void cbc_hash_bytes(const void *data, size_t len, struct cbc_hash *out)
{
    to_canonical(XXH3_128bits(data, len), out);
}

void cbc_hash_hex(const struct cbc_hash *h, char out[CBC_HASH_HEX_LEN + 1])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[2 * i] = digits[h->b[i] >> 4];
        out[2 * i + 1] = digits[h->b[i] & 15];
    }
    out[CBC_HASH_HEX_LEN] = '\0';
}

int cbc_hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool cbc_hash_from_hex(const char *hex, struct cbc_hash *out)
{
    if (!hex || strlen(hex) != CBC_HASH_HEX_LEN)
        return false;
    for (int i = 0; i < 16; i++) {
        int hi = cbc_hex_digit(hex[2 * i]), lo = cbc_hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out->b[i] = (uint8_t)(hi << 4 | lo);
    }
    return true;
}

bool cbc_hash_eq(const struct cbc_hash *a, const struct cbc_hash *b)
{
    return memcmp(a->b, b->b, sizeof a->b) == 0;
}

enum cbc_status cbc_hash_file(const char *path, struct cbc_hash *out, uint64_t *size,
                              struct cbc_err *err)
{
    int fd;
    enum cbc_status os = cbc_open_regular(path, 0, &fd, NULL, err);
    if (os != CBC_OK)
        return os;
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    static __thread uint8_t chunk[1 << 16];
    uint64_t total = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            close(fd);
            clear_upper();
            return cbc_err_set(err, CBC_E_IO, "cannot read '%s': %s", path, strerror(e));
        }
        if (n == 0)
            break;
        XXH3_128bits_update(&st, chunk, (size_t)n);
        total += (uint64_t)n;
    }
    clear_upper();
    close(fd);
    to_canonical(XXH3_128bits_digest(&st), out);
    if (size)
        *size = total;
    return CBC_OK;
}

struct cbc_hasher {
    XXH3_state_t st;
};

struct cbc_hasher *cbc_hasher_new(void)
{
    struct cbc_hasher *h = malloc(sizeof *h);
    if (h)
        XXH3_128bits_reset(&h->st);
    return h;
}

void cbc_hasher_free(struct cbc_hasher *h)
{
    free(h);
}

void cbc_hasher_field(struct cbc_hasher *h, uint32_t tag, const void *data, size_t len)
{
    uint8_t head[12];
    cbc_wr32(head, tag);
    cbc_wr64(head + 4, (uint64_t)len);
    XXH3_128bits_update(&h->st, head, sizeof head);
    if (len)
        XXH3_128bits_update(&h->st, data, len);
    clear_upper();
}

void cbc_hasher_str(struct cbc_hasher *h, uint32_t tag, const char *s)
{
    if (!s) {
        /* absent differs from empty: tag with the top bit set, no bytes */
        cbc_hasher_field(h, tag | 0x80000000u, NULL, 0);
        return;
    }
    cbc_hasher_field(h, tag, s, strlen(s));
}

void cbc_hasher_u64(struct cbc_hasher *h, uint32_t tag, uint64_t v)
{
    uint8_t b[8];
    cbc_wr64(b, v);
    cbc_hasher_field(h, tag, b, sizeof b);
}

void cbc_hasher_hash(struct cbc_hasher *h, uint32_t tag, const struct cbc_hash *v)
{
    cbc_hasher_field(h, tag, v->b, sizeof v->b);
}

void cbc_hasher_digest(const struct cbc_hasher *h, struct cbc_hash *out)
{
    to_canonical(XXH3_128bits_digest(&h->st), out);
}
