/* jobslots.h: how many compiles one build runs at once, and who says so
 * (jobslots.c). Internal and unstable.
 *
 * A build runs at most `-j` (else one per CPU) compiles of its own. Under a
 * GNU make jobserver (make -j, cargo, ninja's pool: jobserver.h) the first
 * runs on the job the build was started with and each further one on a
 * token taken from the jobserver, so a build beside others of the same make
 * or cargo run shares their CPUs instead of adding its own. Without one, a
 * build never waits on anything but its own compiles; the shared_jobs
 * setting (opt-in) adds a limit across every build of this user, one
 * flock(2)ed slot file per job.
 */
#ifndef CBC_JOBSLOTS_H
#define CBC_JOBSLOTS_H

#include "common.h"

struct cbc_jobslots;
struct cbc_store;

#define CBC_JOBSLOT_BUSY (-1) /* no job now: wait for a compile to end (or cbc_jobslots_fd) */
#define CBC_JOBSLOT_NONE (-2) /* a job, with no shared slot to give back */

/* The budget of one build: `jobs` > 0 is -j (a cap on its own compiles,
 * and no shared slots); the jobserver comes from the environment
 * (cbc_jobserver_offered), shared_jobs from `store`'s settings (the
 * environment's when store is NULL). An offer that cannot be used, or a
 * bad shared_jobs, is said once through msg as a warning, and the build
 * runs one compile at a time (as make runs a sub-make then), or without
 * the shared limit. NULL only when out of memory. */
struct cbc_jobslots *cbc_jobslots_open(int jobs, struct cbc_store *store, cbc_msg_fn msg,
                                       void *msg_ctx);
/* A job for one more compile beside those this budget has granted and not
 * released: a shared slot's index, CBC_JOBSLOT_NONE, or CBC_JOBSLOT_BUSY.
 * The first compile of a build never waits on the jobserver; s NULL grants
 * CBC_JOBSLOT_NONE. */
int cbc_jobslots_try(struct cbc_jobslots *s);
/* As cbc_jobslots_try, polling a shared slot while BUSY until timeout_ms
 * pass (then CBC_JOBSLOT_NONE: a build never hangs on another). */
int cbc_jobslots_wait(struct cbc_jobslots *s, unsigned timeout_ms);
/* While the last try was BUSY for want of a jobserver token: a descriptor
 * that polls readable when one may be there; else -1. */
int cbc_jobslots_fd(const struct cbc_jobslots *s);
/* A compile granted `slot` ended (or did not start). */
void cbc_jobslots_release(struct cbc_jobslots *s, int slot);
/* Releases everything (tokens back to the jobserver) and frees. */
void cbc_jobslots_close(struct cbc_jobslots *s);

#endif
