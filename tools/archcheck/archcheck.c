/* archcheck.c: the project's configure-time check of -Dcuda-arch. Meson
 * compiles this with the tool's own parser (src/key/archspec.c and the
 * common pieces it uses) and runs it while it configures, so a bad spec
 * fails then with the message `cubincache build` would give at the first
 * ninja. The spec comes in as ARCH_SPEC (a string literal). Nothing here
 * enumerates GPUs: 'auto' and 'native' are decided when the kernels build,
 * so only their spelling is checked now, and targets are not checked
 * against nvcc's list (build does that).
 */
#include "archspec.h"

#include <stdio.h>
#include <strings.h>

#ifndef ARCH_SPEC
#error "compile with -DARCH_SPEC=\"...\""
#endif

/* the parser reaches the driver only for 'auto' and 'native', and never
 * here: at configure time there is no GPU to ask */
void cbc_cuda_list_gpus(struct cbc_device_info *gpus, size_t max, size_t *count, char *why,
                        size_t why_len)
{
    (void)gpus, (void)max;
    *count = 0;
    if (why && why_len)
        snprintf(why, why_len, "not asked at configure time");
}

int main(void)
{
    const char *spec = ARCH_SPEC;
    if (!strcasecmp(spec, "auto") || !strcasecmp(spec, "native"))
        return 0;
    struct cbc_arch_choice c;
    struct cbc_err err = {0};
    if (cbc_arch_resolve(spec, NULL, &c, &err) != CBC_OK) {
        printf("%s", err.msg);
        if (err.remedy[0])
            printf("\n  hint: %s", err.remedy);
        return 2;
    }
    cbc_arch_choice_release(&c);
    return 0;
}
