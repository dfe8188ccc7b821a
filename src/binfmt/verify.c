/* verify.c: does an image say what its label says?
 *
 * The seed's failure was an sm_89 cubin filed as the build for sm_90; the
 * driver only noticed on the H100. This is the check that notices first:
 * the store runs it on every hit, the build on every fresh compile, `check`
 * on every bundle entry and the loader before cuModuleLoadData.
 */
#include "binfmt_int.h"

enum cbc_status cbc_binfmt_verify_target(const uint8_t *data, size_t len,
                                         const struct cbc_target *want, const char *name,
                                         struct cbc_target *found, struct cbc_err *err)
{
    struct cbc_target got;
    char wn[CBC_TARGET_NAME_MAX], gn[CBC_TARGET_NAME_MAX];
    const char *evidence = "";
    char ev[128];
    cbc_target_name(want, wn);
    if (want->kind == CBC_KIND_SASS) {
        struct cbc_cubin_info ci;
        enum cbc_status st = cbc_cubin_parse_target(data, len, name, &ci, err);
        if (st != CBC_OK)
            return st;
        got = cbc_cubin_target(&ci);
        snprintf(ev, sizeof ev, " (ELF e_flags %#010x, EI_ABIVERSION %u)", ci.e_flags,
                 ci.abi_version);
        evidence = ev;
        cbc_cubin_info_release(&ci);
    } else {
        struct cbc_ptx_info pi;
        enum cbc_status st = cbc_ptx_header(data, len, name, &pi, err);
        if (st != CBC_OK)
            return st;
        got = cbc_ptx_target(&pi);
        got.kind = CBC_KIND_PTX;
        evidence = " (from its .target directive)";
    }
    if (found)
        *found = got;
    if (!cbc_target_eq(&got, want)) {
        cbc_target_name(&got, gn);
        if (want->kind == CBC_KIND_PTX)
            snprintf(gn, sizeof gn, "compute_%u%s", (unsigned)got.arch,
                     cbc_variant_suffix(got.variant));
        /* without a file name the caller's message names the image */
        if (!name)
            return cbc_err_set(err, CBC_E_VERIFY, "labelled %s but holds %s code%s", wn, gn,
                               evidence);
        return cbc_err_set(err, CBC_E_VERIFY, "'%s' is labelled %s but holds %s code%s", name, wn,
                           gn, evidence);
    }
    return CBC_OK;
}
