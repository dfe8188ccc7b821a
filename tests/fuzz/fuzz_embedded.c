/* fuzz_embedded.c: libFuzzer target for the records `cubincache embed`
 * writes into .cbc_bundle: headers, names, descriptors, image bounds, then
 * each image verified (hash, and its code against its label). */
#include <cubincache/binfmt.h>

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cbc_embedded_list el;
    if (cbc_embedded_parse(data, size, 0, "fuzz", false, &el, NULL) != CBC_OK)
        return 0;
    for (size_t i = 0; i < el.n; i++)
        cbc_embedded_verify(&el.v[i], "fuzz", NULL);
    cbc_embedded_release(&el);
    return 0;
}
