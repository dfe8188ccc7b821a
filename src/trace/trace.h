/* trace.h: what a compile touched, as the preloaded shim (shim.c) saw it:
 * the files it read, the files it wrote and every place it looked for a
 * file and found nothing. The direct mode records the last kind with each
 * compile (src/direct), so that a header that appears where the compile
 * looked first (a new inc2/h.h ahead of inc1/h.h on the -I path, a file
 * beside the source shadowing a system header, a new .gch) is a miss, and
 * uses the first two to check that the trace is whole and to find the
 * files a compile wrote beside its output.
 *
 * Invariants: a trace is only used when the shim was found and trusted
 * (cbc_trace_shim) and the log parses completely; a log with a damaged
 * record is refused (the compile is then not recorded, never recorded
 * with part of its lookups). Paths of reads and writes are absolute and
 * lexically normalised (as depfile paths are); absent paths are absolute
 * but kept as the program spelled them ("bin/../include/x.h"), because
 * the kernel resolves ".." through symbolic links and a probe must be
 * repeated exactly.
 *
 * Internal and unstable.
 */
#ifndef CBC_TRACE_H
#define CBC_TRACE_H

#include "common.h"

/* The log's variable and the shim's file name. */
#define CBC_TRACE_LOG_ENV "CUBINCACHE_TRACE_LOG"
#define CBC_TRACE_SHIM_NAME "cubincache-trace.so"

struct cbc_trace {
    char **read, **wrote, **absent; /* each sorted, without duplicates */
    size_t n_read, n_wrote, n_absent;
    size_t n_procs;                 /* processes that started with the shim */
};

/* The shim to preload (a static string), or NULL when none can be
 * trusted: the first of BIN/cubincache-trace.so (a build tree),
 * BIN/../libexec/cubincache/cubincache-trace.so (an install moved or
 * staged with DESTDIR) and the path it was installed to, where BIN is the
 * running program's directory, that is a regular file owned by this user
 * or root and writable by no one else. Looked up once per process. */
const char *cbc_trace_shim(void);

/* The environment of one traced command: LD_PRELOAD with the shim first
 * (an LD_PRELOAD of the caller's kept after it), CUBINCACHE_TRACE_LOG, and
 * TMPDIR when one is given (so the command's temporaries are in a
 * directory of ours, neither probes nor outputs). Without a shim, only
 * TMPDIR. */
struct cbc_trace_run {
    char *log;    /* the log (created empty, 0600), or NULL when not traced */
    char *env[4]; /* "NAME=VALUE" entries for cbc_proc_spawn_env, NULL-terminated */
};
/* `log` (NULL: not traced) must be an absolute path in a directory of
 * ours; `tmpdir` may be NULL. */
enum cbc_status cbc_trace_run_init(struct cbc_trace_run *r, const char *log, const char *tmpdir,
                                   struct cbc_err *err);
void cbc_trace_run_release(struct cbc_trace_run *r);

/* Reads a log the shim wrote. CBC_E_FORMAT (naming the byte offset) when a
 * record is damaged. */
enum cbc_status cbc_trace_load(const char *log, struct cbc_trace *t, struct cbc_err *err);
/* Reads several logs as one trace (the steps of one compile). */
enum cbc_status cbc_trace_load_many(const char *const *logs, size_t n, struct cbc_trace *t,
                                    struct cbc_err *err);
/* Appends a record to a log, as the shim writes them (what a step that was
 * served from the cache would have logged). */
enum cbc_status cbc_trace_append(const char *log, char kind, const char *path,
                                 struct cbc_err *err);
/* The same from bytes (tests, fuzzing). */
enum cbc_status cbc_trace_parse(const uint8_t *data, size_t len, const char *name,
                                struct cbc_trace *t, struct cbc_err *err);
void cbc_trace_release(struct cbc_trace *t);

/* Whether `path` is one of a sorted list. */
bool cbc_trace_has(char *const *sorted, size_t n, const char *path);

#endif
