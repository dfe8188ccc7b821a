/* split.h: one nvcc compile run step by step, as `nvcc --dryrun` lists the
 * steps, with the device compile of each virtual arch (cicc, then ptxas
 * for each real arch made from its PTX) served from the store when its
 * input was compiled before: changing a build's arch list from 86;89 to
 * 86;89;90 compiles only compute_90's device code, then the host part.
 *
 * The key of an arch's device compile is its input as cicc sees it: the
 * preprocessed source for that arch (so every header, every macro and
 * __CUDA_ARCH_LIST__, which CUB and Thrust fold into their names, are in
 * it), the module id cudafe++ wrote, and the cicc and ptxas command lines
 * with temporary names taken out, under nvcc's and the host compiler's
 * identity. Direct mode (src/direct) maps the command lines, the source
 * and the files the preprocessing read to that key, so an arch whose files
 * are unchanged is not even preprocessed; its record names the arch list
 * only when one of those files mentions __CUDA_ARCH_LIST__, which is what
 * lets another list reuse it. What is stored is everything those steps wrote and printed;
 * file contents that name a temporary file get the current run's name back
 * when restored.
 *
 * Every step runs traced (src/trace) with TMPDIR in the private directory,
 * each into its own log, so an arch's record holds the places its
 * preprocessing looked for headers and found nothing, and the command's
 * record (launch.c) those of every step.
 *
 * Invariants: every step nvcc lists is run as it lists it (through
 * /bin/sh, in the same order, with its variable assignments), or is one of
 * the cached kinds and restored; a dryrun with a step this does not know,
 * or any step that fails, makes the caller run plain nvcc instead (which
 * gives nvcc's own diagnostics and exit code); every restored cubin and PTX
 * is verified against its arch first.
 *
 * Internal and unstable.
 */
#ifndef CBC_SPLIT_H
#define CBC_SPLIT_H

#include "cache.h"
#include "common.h"
#include "key.h"
#include "store.h"

struct cbc_split_req {
    const char *nvcc;                /* resolved */
    char *const *argv;               /* nvcc's arguments (with any -MD -MF added) */
    size_t argc;
    const char *tmpdir;              /* private, empty: nvcc's TMPDIR for the steps */
    const char *depfile;             /* where nvcc would write its depfile, or NULL */
    const char *dep_target;          /* the depfile's target */
    struct cbc_cache *cache;         /* the store and its direct mode: an arch's lookups and
                                        commits, skipping its preprocessing */
    const struct cbc_key_now *now;   /* the command's inputs of now: ids, env, source, cwd */
    uint64_t started_ns;             /* cbc_now_ns() when the compile began (racy files are
                                        not recorded) */
    const char *trace_log;           /* the command's trace (trace.h): every step's is appended
                                        to it, and an arch served from its record adds what that
                                        record holds; NULL when the compile is not traced */
};

struct cbc_split_result {
    bool done;           /* false: not split (unknown step, or a step failed): run nvcc */
    char why[256];       /* when not done */
    size_t archs, archs_cached; /* virtual archs compiled, and of those served */
    size_t archs_direct;        /* of those served, how many without preprocessing */
    char unrecorded[320];       /* why a compiled arch got no record, "" when all did */
    bool traced;         /* req->trace_log holds the whole command's trace */
    bool names_tree;     /* some arch's device code may name this tree (its entry is kept
                            per tree): so may the command's output, whatever its bytes show */
    char *out, *errs;    /* the steps' stdout and stderr, in order (malloc'd) */
    size_t out_len, errs_len;
};

/* Runs the command split. CBC_OK with done false when it could not; an
 * error only for the launcher's own trouble (memory, the temporary dir). */
enum cbc_status cbc_split_run(const struct cbc_split_req *req, struct cbc_split_result *res,
                              struct cbc_err *err);
void cbc_split_result_release(struct cbc_split_result *res);

/* What `nvcc --dryrun`'s text (its stderr) makes of a command, for tests
 * and the fuzz target: whether it runs split (every step known and in an
 * arch's group), its steps, the virtual archs in order, and the renames of
 * a one-arch run. Never reads past `len`; an error only when out of memory. */
struct cbc_split_plan {
    bool ok;
    size_t steps;
    unsigned archs[32];
    size_t n_archs;
    size_t renames;
};
enum cbc_status cbc_split_plan(const char *text, size_t len, struct cbc_split_plan *out,
                               struct cbc_err *err);

#endif
