/* fuzz_cache.c: libFuzzer target for what the cache reads back from disk
 * or a remote: the result container, dependency lists (with probes),
 * direct-mode records and trace logs. The first byte picks the reader; a
 * decoded value is encoded again and must decode to the same. */
#include "cache.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void result(const uint8_t *d, size_t n)
{
    struct cbc_result r;
    if (cbc_result_decode(d, n, &r, NULL) != CBC_OK)
        return;
    size_t len;
    uint8_t *b = cbc_result_encode(&r, &len);
    if (b && (len != n || memcmp(b, d, n) != 0))
        abort(); /* a container decodes to exactly what encodes it */
    free(b);
    cbc_result_release(&r);
}

static void deplist(const uint8_t *d, size_t n)
{
    struct cbc_dep_list l;
    if (cbc_dep_list_decode(d, n, NULL, NULL, &l, NULL) != CBC_OK)
        return;
    size_t len;
    uint8_t *b = cbc_dep_list_encode(&l, &len);
    struct cbc_dep_list again;
    if (b && cbc_dep_list_decode(b, len, &l.id, NULL, &again, NULL) != CBC_OK)
        abort();
    if (b)
        cbc_dep_list_release(&again);
    free(b);
    cbc_dep_list_release(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    switch (data[0] % 4) {
    case 0:
        result(d, n);
        break;
    case 1:
        deplist(d, n);
        break;
    case 2: {
        struct cbc_direct_rec r;
        cbc_direct_decode(d, n, &r, NULL);
        break;
    }
    default: {
        struct cbc_trace t;
        if (cbc_trace_parse(d, n, "fuzz", &t, NULL) == CBC_OK)
            cbc_trace_release(&t);
    }
    }
    return 0;
}
