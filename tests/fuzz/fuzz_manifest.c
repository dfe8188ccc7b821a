/* fuzz_manifest.c: libFuzzer target for NAME.manifest.json: a manifest
 * that parses renders to text that parses again to the same rendering. */
#include "manifest.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cbc_manifest m;
    if (cbc_manifest_parse((const char *)data, size, "fuzz", &m, NULL) != CBC_OK)
        return 0;
    char *a = cbc_manifest_render(&m);
    struct cbc_manifest back;
    if (a && cbc_manifest_parse(a, strlen(a), "fuzz", &back, NULL) == CBC_OK) {
        char *b = cbc_manifest_render(&back);
        if (b && strcmp(a, b) != 0)
            abort();
        free(b);
        cbc_manifest_release(&back);
    } else if (a) {
        abort(); /* what we render we must read */
    }
    free(a);
    cbc_manifest_release(&m);
    return 0;
}
