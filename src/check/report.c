/* report.c: what the verdicts of bundles (check.c) and of binaries
 * (binary.c) share: the items and notes of a report and the names of
 * verdicts, the target a file name claims, the arch environment --arch is
 * resolved in. Both use it and it uses neither; check.c calls binary.c
 * for a path that is a binary, never the other way round.
 *
 * An item's text is formatted once, when added, cut at 2 KB (a note's at
 * 1 KB); a note past the report's last slot is dropped.
 */
#include "check_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cbc_verdict_name(enum cbc_verdict v)
{
    switch (v) {
    case CBC_V_OK: return "ok";
    case CBC_V_STALE: return "stale";
    case CBC_V_MISSING: return "missing";
    case CBC_V_MISLABELED: return "mislabeled";
    case CBC_V_CORRUPT: return "corrupt";
    case CBC_V_ORPHAN: return "orphan";
    case CBC_V_RUNS: return "runs";
    case CBC_V_JIT: return "runs-jit";
    case CBC_V_WONT_RUN: return "will-not-run";
    case CBC_V_INCOMPLETE: return "incomplete";
    case CBC_V_LINKED: return "runs-linked";
    case CBC_V_NEEDS_DLINK: return "needs-dlink";
    case CBC_V_PARTIAL: return "partial";
    }
    return "unknown";
}

bool cbc_verdict_is_problem(enum cbc_verdict v)
{
    return v != CBC_V_OK && v != CBC_V_RUNS && v != CBC_V_JIT && v != CBC_V_LINKED;
}

struct cbc_check_item *cbc_check_add(struct cbc_check_report *r, enum cbc_verdict v,
                                     const char *container, const char *file, const char *target,
                                     const char *fmt, ...)
{
    if (!cbc_grow(&r->v, r->n, &r->cap, sizeof *r->v, 16))
        return NULL;
    struct cbc_check_item *it = &r->v[r->n++];
    memset(it, 0, sizeof *it);
    it->verdict = v;
    it->container = cbc_strdup(container);
    it->file = file ? cbc_strdup(file) : NULL;
    snprintf(it->target, sizeof it->target, "%s", target ? target : "");
    va_list ap;
    va_start(ap, fmt);
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    it->reason = cbc_strdup(buf);
    it->problem = cbc_verdict_is_problem(v);
    return it;
}

void cbc_check_note(struct cbc_check_report *r, const char *fmt, ...)
{
    if (r->notes_n >= CBC_ARRAY_LEN(r->notes))
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->notes[r->notes_n++] = cbc_strdup(buf);
}

void cbc_check_report_release(struct cbc_check_report *rep)
{
    for (size_t i = 0; i < rep->n; i++) {
        free(rep->v[i].container);
        free(rep->v[i].file);
        free(rep->v[i].reason);
        for (size_t k = 0; k < rep->v[i].n_changes; k++)
            free(rep->v[i].changes[k]);
        free(rep->v[i].changes);
        for (size_t f = 0; f < rep->v[i].n_files; f++) {
            struct cbc_check_file *cf = &rep->v[i].files[f];
            free(cf->path);
            free(cf->needed_by);
            free(cf->reason);
            for (size_t m = 0; m < cf->n_cannot; m++) {
                free(cf->cannot[m].label);
                free(cf->cannot[m].reason);
                free(cf->cannot[m].kproblem);
                for (size_t k = 0; k < cf->cannot[m].n_kernels; k++)
                    free(cf->cannot[m].kernels[k]);
                free(cf->cannot[m].kernels);
            }
            free(cf->cannot);
        }
        free(rep->v[i].files);
    }
    free(rep->v);
    for (size_t i = 0; i < rep->notes_n; i++)
        free(rep->notes[i]);
    memset(rep, 0, sizeof *rep);
}

/* The target a file name claims: "x.sm_90a.cubin" -> sm_90a. */
bool cbc_check_label_from_name(const char *path, struct cbc_target *t)
{
    const char *base = cbc_path_base(path);
    const char *ext = strrchr(base, '.');
    if (!ext || ext == base)
        return false;
    bool cubin = !strcmp(ext, ".cubin"), ptx = !strcmp(ext, ".ptx");
    if (!cubin && !ptx)
        return false;
    const char *p = ext;
    while (p > base && p[-1] != '.')
        p--;
    if (p == base)
        return false;
    char label[32];
    size_t n = (size_t)(ext - p);
    if (n >= sizeof label)
        return false;
    memcpy(label, p, n);
    label[n] = '\0';
    return cbc_target_parse(label, t) && (t->kind == CBC_KIND_PTX) == ptx;
}

void cbc_check_arch_env(struct cbc_arch_env *env)
{
    memset(env, 0, sizeof *env);
    env->nvcc_label = "nvcc";
    env->compute_cap = getenv("CUDA_COMPUTE_CAP");
}
