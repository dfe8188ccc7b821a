/* stamp.c: the one step a build system runs every time, so that the kernel
 * steps themselves need not be: a small text file naming what every
 * bundle's outputs depend on outside its own command line and depfile
 * (the targets `--arch` resolves to now, the toolchain's identity, the
 * environment nvcc reads), rewritten only when that changes.
 *
 * Invariants: the file is replaced whole (temporary + rename) and only
 * when its bytes differ, so its mtime moves exactly when a kernel may
 * build differently and ninja's restat skips everything downstream
 * otherwise; nothing is written when resolving fails; the same arch spec
 * resolves here exactly as `cubincache build` resolves it (cbc_build_arch).
 */
#include "build.h"
#include "archspec.h"
#include "key.h"
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* The file's text. Values are printed as they are: the file is only ever
 * compared, never parsed. */
static void render(struct cbc_buf *b, const struct cbc_arch_choice *arch,
                   const struct cbc_toolchain *tc)
{
    cbc_buf_puts(b, "# cubincache stamp: rewritten only when a kernel may build differently\n");
    cbc_buf_printf(b, "arch %s ->", arch->spec);
    for (size_t i = 0; i < arch->n; i++) {
        char name[CBC_TARGET_NAME_MAX];
        cbc_buf_printf(b, " %s", cbc_target_name(&arch->targets[i], name));
    }
    cbc_buf_printf(b, "\nnvcc %s %s ", tc->nvcc, tc->version);
    char hex[CBC_HASH_HEX_LEN + 1];
    cbc_hash_hex(&tc->nvcc_id, hex);
    cbc_buf_printf(b, "%s\nhost %s ", hex, tc->host_cc ? tc->host_cc : "");
    cbc_hash_hex(&tc->host_id, hex);
    cbc_buf_printf(b, "%s\n", hex);
    struct cbc_env env;
    cbc_key_env_read(tc->profile_env, tc->n_profile_env, &env);
    for (size_t i = 0; i < env.n; i++)
        if (env.value[i])
            cbc_buf_printf(b, "env %s=%s\n", env.name[i], env.value[i]);
}

enum cbc_status cbc_build_stamp(const struct cbc_stamp_opts *o, bool *changed,
                                struct cbc_err *err)
{
    if (changed)
        *changed = false;
    bool check_only = changed == NULL; /* resolve and say, write nothing */
    char *nvcc = cbc_nvcc_find(o->nvcc, err);
    if (!nvcc)
        return CBC_E_NVCC;
    struct cbc_store *store = NULL;
    if (!o->no_cache) { /* only for the toolchain's cached identity */
        char *root = cbc_store_default_root(o->cache_dir);
        struct cbc_err e = {0};
        if (!root || cbc_store_open(root, &store, &e) != CBC_OK)
            store = NULL;
        free(root);
    }
    struct cbc_record_cache tools = store ? cbc_store_tools_cache(store)
                                          : (struct cbc_record_cache){0};
    struct cbc_toolchain tc = {0};
    enum cbc_status st = cbc_toolchain_identify(nvcc, cbc_flags_ccbin(o->flags, o->n_flags),
                                                store ? &tools : NULL, &tc, err);
    struct cbc_arch_choice arch = {0};
    if (st == CBC_OK)
        st = cbc_build_arch(&tc, o->arch, &arch, err);
    if (st == CBC_OK && !check_only) {
        struct cbc_buf b = {0};
        render(&b, &arch, &tc);
        st = b.oom ? cbc_err_oom(err)
                   : cbc_file_update(o->output, b.p, b.len, changed, err);
        cbc_buf_release(&b);
    }
    cbc_arch_choice_release(&arch);
    cbc_toolchain_release(&tc);
    if (store)
        cbc_store_close(store);
    free(nvcc);
    return st;
}
