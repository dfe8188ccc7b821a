/* fuzz_remote.c: libFuzzer target for the remote's value codec (what a
 * Redis answers), the first line of a Redis reply (RESP: read before the
 * bytes it announces) and its spec parser (a URL from the environment). */
#include "backend.h"
#include "remote.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *out = NULL;
    size_t len = 0;
    char why[256];
    if (cbc_remote_decode(data, size, &out, &len, why, sizeof why) == CBC_OK)
        free(out);
    struct cbc_resp_head h;
    const char *bad = NULL;
    (void)cbc_resp_head(data, size, &h, &bad);
    char *spec = malloc(size + 1);
    if (!spec)
        return 0;
    memcpy(spec, data, size);
    spec[size] = '\0';
    struct cbc_remote_cfg cfg;
    if (cbc_remote_parse(spec, &cfg, NULL) == CBC_OK)
        cbc_remote_cfg_release(&cfg);
    free(spec);
    return 0;
}
