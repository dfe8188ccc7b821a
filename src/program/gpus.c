/* gpus.c: the compute capabilities real CUDA GPUs have, and the parser of
 * a list of them (`check --arch`, `select --cc`). The question "will this
 * run on our V100s?" is about the GPU, not about what this machine's nvcc
 * can build: every CC below is accepted whatever toolkit is installed.
 *
 * Sources: NVIDIA's CUDA GPU list (developer.nvidia.com/cuda-gpus), the
 * CUDA 12.x and 13.0 programming guides' compute capability tables, nvcc
 * 13.0's --list-gpu-code (sm_88), and the CUDA 13.0 features archive
 * ("SM101 has been renumbered as SM110": Jetson Thor reports 10.1 to CUDA
 * 12.8/12.9 drivers and 11.0 to CUDA 13 ones; both are accepted).
 */
#include "program.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const unsigned cbc_gpu_ccs[] = {
    30, 32, 35, 37,          /* Kepler: GK104, Jetson TK1, GK110, K80 */
    50, 52, 53,              /* Maxwell, Jetson TX1 */
    60, 61, 62,              /* Pascal: P100, GP10x, Jetson TX2 */
    70, 72, 75,              /* Volta V100, Jetson Xavier, Turing */
    80, 86, 87, 88, 89,      /* Ampere A100, GA10x, Jetson Orin, sm_88, Ada */
    90,                      /* Hopper: H100, H200, GH200 */
    100, 101, 103, 110,      /* Blackwell B200, Thor (CUDA 12.8/12.9), B300, Thor */
    120, 121,                /* RTX 50xx / RTX PRO 6000, DGX Spark (GB10) */
};
const size_t cbc_gpu_n_ccs = sizeof cbc_gpu_ccs / sizeof cbc_gpu_ccs[0];

static bool known(unsigned cc)
{
    for (size_t i = 0; i < cbc_gpu_n_ccs; i++)
        if (cbc_gpu_ccs[i] == cc)
            return true;
    return false;
}

static bool add(unsigned *out, size_t max, size_t *n, unsigned cc)
{
    for (size_t i = 0; i < *n; i++)
        if (out[i] == cc)
            return true;
    if (*n >= max)
        return false;
    size_t i = *n;
    while (i > 0 && out[i - 1] > cc) {
        out[i] = out[i - 1];
        i--;
    }
    out[i] = cc;
    (*n)++;
    return true;
}

static void known_list(char *buf, size_t len)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < cbc_gpu_n_ccs && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%u.%u", i ? " " : "", cbc_gpu_ccs[i] / 10,
                                cbc_gpu_ccs[i] % 10);
}

/* One token: [sm_|compute_] (MAJOR.MINOR | NN | NNN) [a|f]. */
static bool token(const char *t, unsigned *cc, char *variant)
{
    const char *p = t;
    if (!strncmp(p, "sm_", 3))
        p += 3;
    else if (!strncmp(p, "compute_", 8))
        p += 8;
    size_t d = 0;
    while (isdigit((unsigned char)p[d]))
        d++;
    unsigned v = 0;
    if (p[d] == '.') {
        if (d < 1 || d > 2 || !isdigit((unsigned char)p[d + 1]))
            return false;
        for (size_t i = 0; i < d; i++)
            v = v * 10 + (unsigned)(p[i] - '0');
        v = v * 10 + (unsigned)(p[d + 1] - '0');
        p += d + 2;
    } else {
        if (d < 2 || d > 3)
            return false;
        for (size_t i = 0; i < d; i++)
            v = v * 10 + (unsigned)(p[i] - '0');
        p += d;
    }
    *variant = 0;
    if (*p == 'a' || *p == 'f')
        *variant = *p++;
    if (*p)
        return false;
    *cc = v;
    return true;
}

enum cbc_status cbc_gpu_list_parse(const char *spec, unsigned *out, size_t max, size_t *n,
                                   struct cbc_err *err)
{
    *n = 0;
    char list[400];
    known_list(list, sizeof list);
    const char *p = spec ? spec : "";
    while (*p) {
        while (*p == ',' || *p == ';' || isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        const char *s = p;
        while (*p && *p != ',' && *p != ';' && !isspace((unsigned char)*p))
            p++;
        char tok[32];
        size_t len = (size_t)(p - s);
        if (len >= sizeof tok)
            len = sizeof tok - 1;
        for (size_t i = 0; i < len; i++)
            tok[i] = (char)tolower((unsigned char)s[i]);
        tok[len] = '\0';
        unsigned cc;
        char var;
        if (!token(tok, &cc, &var)) {
            cbc_err_set(err, CBC_E_USAGE, "GPU '%s' is not a compute capability", tok);
            cbc_err_hint(err, "write a GPU as 9.0, 90 or sm_90 (sm_90a for its 'a' features, 100f "
                         "for the family 10.0 and 10.3); GPUs: %s", list);
            return CBC_E_USAGE;
        }
        if (!known(cc)) {
            cbc_err_set(err, CBC_E_USAGE, "GPU '%s': no CUDA GPU has compute capability %u.%u",
                        tok, cc / 10, cc % 10);
            cbc_err_hint(err, "the compute capabilities of CUDA GPUs: %s", list);
            return CBC_E_USAGE;
        }
        if ((var == 'a' && cc < 90) || (var == 'f' && cc < 100)) {
            cbc_err_set(err, CBC_E_USAGE, "GPU '%s': '%c' targets exist for %s only", tok, var,
                        var == 'a' ? "9.0 and later" : "10.0 and later");
            cbc_err_hint(err, "name the GPU by its compute capability, e.g. %u.%u", cc / 10, cc % 10);
            return CBC_E_USAGE;
        }
        bool ok = true;
        if (var == 'f') {
            /* the family: this minor and every later one of the major */
            for (size_t i = 0; i < cbc_gpu_n_ccs && ok; i++)
                if (cbc_gpu_ccs[i] / 10 == cc / 10 && cbc_gpu_ccs[i] >= cc &&
                    cbc_gpu_ccs[i] != 101 /* Thor, 11.0 since CUDA 13: not of family 10 */)
                    ok = add(out, max, n, cbc_gpu_ccs[i]);
        } else {
            ok = add(out, max, n, cc);
        }
        if (!ok) {
            cbc_err_set(err, CBC_E_USAGE, "more than %zu GPUs in '%s'", max, spec);
            cbc_err_hint(err, "name at most %zu GPUs at once", max);
            return CBC_E_USAGE;
        }
    }
    if (*n == 0) {
        cbc_err_set(err, CBC_E_USAGE, "no GPU named in '%s'", spec ? spec : "");
        cbc_err_hint(err, "write a GPU as 9.0, 90 or sm_90; GPUs: %s", list);
        return CBC_E_USAGE;
    }
    return CBC_OK;
}
