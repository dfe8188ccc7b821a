/* jobserver.h: a client of the GNU make jobserver, the way make -j, cargo
 * (CARGO_MAKEFLAGS, for build scripts) and ninja share CPUs between the
 * processes of one build: a pipe or named FIFO holding one byte per job
 * that may run beside the ones already running. Every process the build
 * starts holds one job implicitly; each further child it runs at once
 * needs a byte read from the jobserver, written back when the child ends.
 * (jobserver.c.) Internal and unstable.
 *
 * Both forms GNU make writes are read: `--jobserver-auth=fifo:PATH` (make
 * 4.4 and later, ninja's pool) and `--jobserver-auth=R,W` (make 4.3 and
 * before, cargo), and the older spelling `--jobserver-fds=R,W`.
 *
 * Invariants: a connected jobserver is read and written only through
 * descriptors of this process's own (non-blocking, close-on-exec), so a
 * read never blocks and never changes the flags make's descriptors carry;
 * every byte taken is written back, by cbc_jobserver_release or _close, or
 * by the handler this module keeps for SIGINT, SIGTERM, SIGHUP and SIGQUIT
 * while a jobserver is connected, which returns the bytes and then lets the
 * signal do what it did before (kill -9 loses them, as it does for make).
 */
#ifndef CBC_JOBSERVER_H
#define CBC_JOBSERVER_H

#include <stdbool.h>
#include <stddef.h>

enum cbc_js_kind {
    CBC_JS_ABSENT = 0, /* no jobserver is offered */
    CBC_JS_PIPE = 1,   /* --jobserver-auth=R,W: inherited descriptors */
    CBC_JS_FIFO = 2,   /* --jobserver-auth=fifo:PATH */
    CBC_JS_OTHER = 3   /* an offer in a form this client cannot use (text says which) */
};

struct cbc_js_auth {
    enum cbc_js_kind kind;
    int rfd, wfd;     /* CBC_JS_PIPE */
    char path[4096];  /* CBC_JS_FIFO */
    char text[300];   /* the option as written, for messages */
};

/* The jobserver a MAKEFLAGS-style value offers: the last
 * --jobserver-auth= or --jobserver-fds= word before " -- " (what follows
 * is variable assignments). Never fails: a word that does not parse is
 * CBC_JS_OTHER. */
void cbc_jobserver_parse(const char *flags, struct cbc_js_auth *out);

/* The offer in this process's environment: CARGO_MAKEFLAGS, else
 * MAKEFLAGS, else MFLAGS (cargo sets the first for build scripts). *from
 * (may be NULL) is set to the variable's name. */
void cbc_jobserver_offered(struct cbc_js_auth *out, const char **from);

struct cbc_jobserver;

/* Looks at the descriptors the environment's offer names, once, before the
 * process opens anything: make closes them to the commands of rules it
 * does not know run make, and by the time a build connects, those numbers
 * may be files of its own. A program calls it first thing in main;
 * cbc_jobserver_connect then refuses descriptors that were not an open
 * pipe at start, or name another file now. */
void cbc_jobserver_early(void);

/* Connects to the jobserver `a` names. NULL, with `why` saying what is
 * wrong ("fd 3 is not open", "'/tmp/x' is not a FIFO"), when it cannot be
 * used; the caller then runs one child at a time, as make does. */
struct cbc_jobserver *cbc_jobserver_connect(const struct cbc_js_auth *a, char *why,
                                            size_t why_len);
/* Takes a token when one is there, without waiting. False when none is
 * (or the jobserver is gone: cbc_jobserver_gone). */
bool cbc_jobserver_acquire(struct cbc_jobserver *j);
/* A descriptor that polls readable when a token may be there; -1 once the
 * jobserver is gone. */
int cbc_jobserver_fd(const struct cbc_jobserver *j);
/* Whether the jobserver went away (every writer closed, or an error):
 * nothing more can be taken; what is held is still written back. */
bool cbc_jobserver_gone(const struct cbc_jobserver *j);
/* Tokens taken and not yet given back. */
size_t cbc_jobserver_held(const struct cbc_jobserver *j);
/* Gives one token back (none when none is held). */
void cbc_jobserver_release(struct cbc_jobserver *j);
/* Gives every token back, restores the signal handlers, frees. NULL is
 * fine. */
void cbc_jobserver_close(struct cbc_jobserver *j);

#endif
