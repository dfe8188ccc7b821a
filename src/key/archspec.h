/* archspec.h: from what users write ("86", "8.6+PTX", "sm_90a;100f",
 * "native", "auto") to a sorted, duplicate-free list of canonical targets,
 * and the record of which rule decided it.
 *
 * Internal and unstable. Invariants: the result is sorted by
 * cbc_target_cmp and holds no duplicates; every target in it is one nvcc
 * can build (when the caller supplied nvcc's list); the rule and its detail
 * say why these targets, for the manifest and --explain.
 */
#ifndef CBC_ARCHSPEC_H
#define CBC_ARCHSPEC_H

#include "cudadrv.h"
#include <cubincache/arch.h>
#include <cubincache/status.h>

enum cbc_arch_rule {
    CBC_RULE_EXPLICIT = 0, /* the spec named the targets */
    CBC_RULE_ENV = 1,      /* auto: CUDA_COMPUTE_CAP from the build's environment */
    CBC_RULE_DRIVER = 2,   /* auto: the GPUs the CUDA driver reports */
    CBC_RULE_DEFAULT = 3,  /* auto: no CUDA_COMPUTE_CAP, no GPU: the documented default set */
    CBC_RULE_NATIVE = 4,   /* native: the GPUs of this machine, required */
    CBC_RULE_ALL = 5       /* all / all-major: from nvcc's own list */
};

/* Where a spec is resolved: what nvcc can build and how to see GPUs. */
struct cbc_arch_env {
    /* Plain SASS arches nvcc can build (from --list-gpu-code); NULL/0: do
     * not validate (used where nvcc is unknown, e.g. `check` of a file). */
    const unsigned *supported;
    size_t n_supported;
    const char *nvcc_label;  /* "nvcc 13.0.88", for messages */
    const char *compute_cap; /* value of CUDA_COMPUTE_CAP or NULL when unset */
    /* GPU enumeration; NULL means cbc_cuda_list_gpus. Tests inject fakes. */
    void (*list_gpus)(struct cbc_device_info *gpus, size_t max, size_t *count, char *why, size_t why_len);
};

struct cbc_arch_choice {
    struct cbc_target *targets;
    size_t n;
    enum cbc_arch_rule rule;
    char *spec;   /* the spec as given */
    char *detail; /* "CUDA_COMPUTE_CAP=90", "GPU 0 NVIDIA H200 (9.0)", "no GPU: <why>" */
};

/* The default of "auto" when neither CUDA_COMPUTE_CAP nor a GPU decides. */
#define CBC_ARCH_DEFAULT_SPEC "75,80,86,89,90,100,120,compute_120"

const char *cbc_arch_rule_name(enum cbc_arch_rule rule);

/* Resolves `spec`. CBC_E_ARCH with a message naming the bad token and a
 * remedy listing what nvcc can build. On success the caller releases `out`. */
enum cbc_status cbc_arch_resolve(const char *spec, const struct cbc_arch_env *env,
                                 struct cbc_arch_choice *out, struct cbc_err *err);
void cbc_arch_choice_release(struct cbc_arch_choice *c);

/* Parses one spelling ("8.6", "sm_90a", "100f-real", "compute_80", "86+PTX")
 * into up to two targets (SASS and/or PTX); returns how many, 0 when the
 * token is not a target spelling. No validation against nvcc. */
size_t cbc_arch_token_parse(const char *tok, struct cbc_target out[2]);

#endif
