/* jobslots.h: one user's limit on concurrent compiles across processes
 * (jobslots.c). Internal and unstable. */
#ifndef CBC_JOBSLOTS_H
#define CBC_JOBSLOTS_H

struct cbc_jobslots;

#define CBC_JOBSLOT_BUSY (-1) /* every slot is held: one will free */
#define CBC_JOBSLOT_NONE (-2) /* no slot can be had (none opens): go on without */

/* n slots (one per CPU); NULL when the slot directory cannot be had (no
 * limit then). */
struct cbc_jobslots *cbc_jobslots_open(unsigned n);
/* A free slot, taken: its index, CBC_JOBSLOT_BUSY when every slot is held,
 * CBC_JOBSLOT_NONE when none can be had (s NULL, or no slot file opens). */
int cbc_jobslots_try(struct cbc_jobslots *s);
/* As cbc_jobslots_try, polling while BUSY until timeout_ms pass. */
int cbc_jobslots_wait(struct cbc_jobslots *s, unsigned timeout_ms);
void cbc_jobslots_release(struct cbc_jobslots *s, int slot);
void cbc_jobslots_close(struct cbc_jobslots *s);

#endif
