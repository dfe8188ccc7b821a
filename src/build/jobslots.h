/* jobslots.h: one user's limit on concurrent compiles across processes
 * (jobslots.c). Internal and unstable. */
#ifndef CBC_JOBSLOTS_H
#define CBC_JOBSLOTS_H

struct cbc_jobslots;

/* n slots (one per CPU); NULL when the slot directory cannot be had (no
 * limit then). */
struct cbc_jobslots *cbc_jobslots_open(unsigned n);
/* A free slot, taken: its index, or -1 when every slot is held. */
int cbc_jobslots_try(struct cbc_jobslots *s);
/* As cbc_jobslots_try, polling until one frees or timeout_ms pass. */
int cbc_jobslots_wait(struct cbc_jobslots *s, unsigned timeout_ms);
void cbc_jobslots_release(struct cbc_jobslots *s, int slot);
void cbc_jobslots_close(struct cbc_jobslots *s);

#endif
