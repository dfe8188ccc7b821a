/* common.h: the internal helpers every module shares: error setters, a
 * growable byte buffer, file I/O with atomic publish, path handling, XXH3-128
 * hashing with a fixed on-disk byte order, explicit-endian readers and
 * process spawning.
 *
 * Internal and unstable: the tools may use it, users of the library must not.
 * Invariants: functions that allocate return NULL (or CBC_E_NOMEM) on
 * failure and leave outputs untouched; hashes are stored and printed in
 * XXH128's canonical (big-endian) form so on-disk keys are the same on every
 * host; every reader takes (pointer, length) and never reads past the end.
 * This code is also in libcubincache, which privileged programs may link:
 * every environment variable it reads is read with secure_getenv (none in
 * a setuid, setgid or capability-raising program).
 */
#ifndef CBC_COMMON_H
#define CBC_COMMON_H

#include <cubincache/status.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__GNUC__)
#define CBC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CBC_PRINTF(a, b)
#endif

#define CBC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* An invariant the prose around it states, checked in debug builds (any
 * build without NDEBUG, which is Meson's default): a violation is a bug of
 * ours, reported with where and what, then abort(). Never for input
 * checks: hostile input is an error, not a crash. */
#ifndef NDEBUG
#define CBC_ASSERT(cond)                                                                           \
    ((cond) ? (void)0 : cbc_assert_failed(__FILE__, __LINE__, __func__, #cond))
#else
#define CBC_ASSERT(cond) ((void)0)
#endif
_Noreturn void cbc_assert_failed(const char *file, int line, const char *func, const char *what);

/* ---- errors (err.c) ---------------------------------------------------- */
/* cbc_err_set returns `status` so callers can `return cbc_err_set(...)`.
 * The two decorators return nothing: a status must come from where the
 * failure was decided, never from an err that may be NULL (a NULL err once
 * turned failures into CBC_OK here). */
enum cbc_status cbc_err_set(struct cbc_err *err, enum cbc_status status, const char *fmt, ...)
    CBC_PRINTF(3, 4);
void cbc_err_hint(struct cbc_err *err, const char *fmt, ...) CBC_PRINTF(2, 3);
void cbc_err_prefix(struct cbc_err *err, const char *fmt, ...) CBC_PRINTF(2, 3);
enum cbc_status cbc_err_oom(struct cbc_err *err);

/* ---- growable buffer (buf.c) ------------------------------------------- */
/* Always NUL-terminated when p != NULL; len excludes the NUL. A failed append
 * sets `oom` and leaves the content as it was; check it once at the end. */
struct cbc_buf {
    char *p;
    size_t len, cap;
    bool oom;
};
void cbc_buf_append(struct cbc_buf *b, const void *data, size_t len);
void cbc_buf_puts(struct cbc_buf *b, const char *s);
void cbc_buf_printf(struct cbc_buf *b, const char *fmt, ...) CBC_PRINTF(2, 3);
void cbc_buf_release(struct cbc_buf *b);
/* Hands the string over to the caller (NULL if empty or on oom). */
char *cbc_buf_detach(struct cbc_buf *b);

/* snprintf into a fixed buffer where cutting a long text short is the
 * intended behaviour (messages); always NUL-terminates. */
void cbc_fmt(char *buf, size_t len, const char *fmt, ...) CBC_PRINTF(3, 4);

/* ---- printable text (escape.c) ---------------------------------------- */
/* What is quoted into a message or printed may come from a file, the
 * environment or the driver: every byte that is not printable is shown as
 * an escape (\n, \t, \r, \xNN), C1 controls (U+0080..U+009F) and invalid
 * UTF-8 included; printable ASCII and valid UTF-8 pass. Escaped text
 * escapes to itself. */
#define CBC_ESCAPE_UNIT_MAX 8
/* The visible form of the next unit of s (n > 0 bytes left: one byte, or a
 * whole UTF-8 sequence) into out, not NUL-terminated; returns its length
 * and sets *used to the input bytes it stands for. */
size_t cbc_escape_unit(const char *s, size_t n, char out[CBC_ESCAPE_UNIT_MAX], size_t *used);
/* Into a fixed buffer (len > 0), NUL-terminated; a text that does not fit
 * is cut between units and ends in "...", and false is returned. */
bool cbc_escape(char *out, size_t len, const char *s);

char *cbc_strdup(const char *s);
char *cbc_strndup(const char *s, size_t n);
char *cbc_asprintf(const char *fmt, ...) CBC_PRINTF(1, 2);
void *cbc_reallocarray(void *p, size_t n, size_t size);
/* Room for element n of a growable array: when n == *cap, the array at
 * *(T **)vp is reallocated to twice *cap (`first` when empty). Returns
 * false, leaving the array as it was, when memory runs out. */
bool cbc_grow(void *vp, size_t n, size_t *cap, size_t size, size_t first);

/* ---- files (fs.c) ------------------------------------------------------ */
/* Every file the project reads is opened with cbc_open_regular: FIFOs,
 * devices, sockets and directories are refused (CBC_E_USAGE, "'/dev/zero'
 * is a character device, not a regular file") before a byte is read, so no
 * input can block a read forever or stream without end. */
#define CBC_FILE_MAX (4ull << 30) /* the largest file read whole: 4 GiB */
/* Opens `path` read-only (extra open flags, e.g. O_NOFOLLOW, in `flags`),
 * refusing anything but a regular file. *size (may be NULL) gets its size. */
enum cbc_status cbc_open_regular(const char *path, int flags, int *fd, uint64_t *size,
                                 struct cbc_err *err);
/* Reads the rest of fd, at most `max` bytes (CBC_E_FORMAT beyond, naming
 * the limit). *data is malloc'd, NUL-terminated (not counted). */
enum cbc_status cbc_fd_read_max(int fd, const char *path, uint64_t max, uint8_t **data,
                                size_t *len, struct cbc_err *err);
/* Reads a whole regular file of at most `max` bytes. */
enum cbc_status cbc_file_read_max(const char *path, uint64_t max, uint8_t **data, size_t *len,
                                  struct cbc_err *err);
/* A regular file mapped read-only (binaries of any size are read without
 * copying them). An empty file maps to data NULL, len 0. */
struct cbc_map {
    const uint8_t *data;
    size_t len;
};
enum cbc_status cbc_file_map(const char *path, struct cbc_map *m, struct cbc_err *err);
void cbc_file_unmap(struct cbc_map *m);
/* Reads a whole regular file (at most CBC_FILE_MAX bytes). */
enum cbc_status cbc_file_read(const char *path, uint8_t **data, size_t *len, struct cbc_err *err);
/* Writes through a temporary in the same directory and rename(2): a reader
 * sees the old file or the whole new one, never a part, even after kill -9.
 * `mode` is the permission of the new file (e.g. 0644). */
enum cbc_status cbc_file_write_atomic(const char *path, const void *data, size_t len, mode_t mode,
                                      struct cbc_err *err);
/* Writes a file the command line named as an output, the way the compiler
 * cubincache stands in for writes it: a device or FIFO there (/dev/null)
 * is written through, never replaced; a symbolic link is followed and its
 * target replaced (the link stays); a regular file is replaced by rename
 * of a complete temporary and keeps its mode; a new file gets 0666 less
 * the umask. */
enum cbc_status cbc_output_write(const char *path, const void *data, size_t len,
                                 struct cbc_err *err);
/* A file of cubincache's own (a stamp, a depfile, generated C) written as
 * cbc_file_write_atomic does, a symbolic link replaced and never followed,
 * except that a device or FIFO there is written to, never replaced; left
 * alone (its mtime too) when it already holds exactly these bytes.
 * *changed (may be NULL) says which. */
enum cbc_status cbc_file_update(const char *path, const void *data, size_t len, bool *changed,
                                struct cbc_err *err);
/* Test hook: stalls between writing a temporary and publishing it when
 * CUBINCACHE_TEST_PUBLISH_DELAY_MS is set, so tests can kill a writer there. */
void cbc_test_publish_delay(void);
/* Removes a private directory of ours (mkdtemp'd) with the files its
 * commands left in it, never following a link; a subdirectory stays (and
 * so does the directory then). */
void cbc_tmpdir_remove(const char *path);
/* mkdir -p; existing directories are fine. */
enum cbc_status cbc_mkdir_p(const char *path, mode_t mode, struct cbc_err *err);
bool cbc_is_dir(const char *path);
bool cbc_is_file(const char *path);

/* ---- beneath a directory, never through a symlink (dirfs.c) ------------- */
/* For the trees cubincache owns: the cache and a bundle's outputs. */
struct cbc_perm {
    int umask; /* < 0: the process umask (applied by the kernel); else this one */
};
/* Opens `rel` ("objects/ab/x.cbc") beneath dirfd; -1 with errno ELOOP or
 * EXDEV when any component is a symbolic link (or ".."). */
int cbc_openat_beneath(int dirfd, const char *rel, int flags, mode_t mode);
/* Opens directory `name` of dirfd without following a symlink, creating it
 * (0777 less the umask) when `create` and absent; -1 with errno. */
int cbc_dir_openat(int dirfd, const char *name, bool create, const struct cbc_perm *perm);
/* Publishes `name` in dirfd: a complete temporary ".<name>.XXXXXX" (written,
 * fsync'ed when `sync`), then renameat. A symlink at `name` is replaced, never
 * followed. `dir` names the directory in messages; ENOSPC says no space. */
enum cbc_status cbc_write_at(int dirfd, const char *dir, const char *name, const void *data,
                             size_t len, const struct cbc_perm *perm, bool sync,
                             struct cbc_err *err);
/* Reads regular file `rel` beneath dirfd (no symlinks), at most `max` bytes. */
enum cbc_status cbc_read_at(int dirfd, const char *dir, const char *rel, uint64_t max,
                            uint8_t **data, size_t *len, struct cbc_err *err);
/* Whether `cand` is a temporary of `name` as cbc_write_at makes them. */
bool cbc_temp_name_of(const char *name, const char *cand);
/* An octal umask ("002"), or -1 when `s` is not one. */
int cbc_perm_parse_umask(const char *s);

/* ---- paths (path.c) ---------------------------------------------------- */
/* A bundle name: 1 to 128 of [A-Za-z0-9_.+-], starting with a letter, digit
 * or '_' (so never hidden, never "." or "..", never a path). */
#define CBC_NAME_MAX 128
bool cbc_name_valid(const char *name);
char *cbc_path_join(const char *a, const char *b);
/* Lexically normalised absolute path ("." and ".." folded, no symlinks
 * resolved), relative paths taken against the current directory. */
char *cbc_path_abs(const char *path);
char *cbc_path_abs_from(const char *base_dir, const char *path);
/* Pointer into `path` after the last '/'. */
const char *cbc_path_base(const char *path);
/* Directory part ("." when there is none). */
char *cbc_path_dir(const char *path);
/* Final component without its last extension ("a/b.cu" -> "b"). */
char *cbc_path_stem(const char *path);


/* ---- hashing (hash.c) -------------------------------------------------- */
/* XXH3-128 in canonical big-endian byte order: the on-disk and printed form. */
struct cbc_hash {
    uint8_t b[16];
};
#define CBC_HASH_HEX_LEN 32
void cbc_hash_bytes(const void *data, size_t len, struct cbc_hash *out);
void cbc_hash_hex(const struct cbc_hash *h, char out[CBC_HASH_HEX_LEN + 1]);
/* The value of one hex digit (either case), -1 for anything else. */
int cbc_hex_digit(char c);
/* Parses exactly 32 hex digits; false on anything else. */
bool cbc_hash_from_hex(const char *hex, struct cbc_hash *out);
bool cbc_hash_eq(const struct cbc_hash *a, const struct cbc_hash *b);
/* Streams a file through XXH3-128. */
enum cbc_status cbc_hash_file(const char *path, struct cbc_hash *out, uint64_t *size,
                              struct cbc_err *err);

/* ---- messages from a library to its command --------------------------- */
/* Libraries never print: what a command should show goes through a
 * callback (build, the launcher), tagged with how loud it is. */
enum cbc_msg_kind {
    CBC_MSG_WARNING = 0, /* shown unless -q */
    CBC_MSG_NOTE = 1,    /* shown with -v */
    CBC_MSG_EXPLAIN = 2, /* shown with --explain */
    CBC_MSG_DIAG = 3,    /* nvcc's own output, always shown */
    CBC_MSG_PROGRESS = 4 /* what is compiling now, for a status line on a terminal */
};
typedef void (*cbc_msg_fn)(void *ctx, enum cbc_msg_kind kind, const char *text);
/* Formats a message and hands it to fn (nothing when fn is NULL). */
void cbc_say(cbc_msg_fn fn, void *ctx, enum cbc_msg_kind kind, const char *fmt, ...)
    CBC_PRINTF(4, 5);

/* ---- target variants (target.c) ---------------------------------------- */
/* The one spelling of a variant suffix (enum cbc_variant): "a", "f" or "". */
const char *cbc_variant_suffix(uint8_t variant);
/* The variant a suffix character names: 'a', 'f', else CBC_VARIANT_NONE. */
uint8_t cbc_variant_of(char c);
/* Reads an optional variant suffix ('a' or 'f') at *s, advancing past it;
 * CBC_VARIANT_NONE, *s unchanged, when there is none. */
uint8_t cbc_variant_read(const char **s);

/* ---- the vocabulary of a build's inputs (inputs.c) --------------------- */
/* Shared by key/ (which hashes them) and manifest/ (which records them), so
 * the manifest, and the loader that reads it, need nothing of key/. */

/* The environment variables that change nvcc's output whatever toolkit is
 * installed: nvcc's documented ones and those of the host compilers it
 * runs (inputs.c says why each). The installed nvcc.profile adds every
 * variable it reads (key/toolid.c). */
#define CBC_KEY_ENV_COUNT 16
extern const char *const cbc_key_env_names[CBC_KEY_ENV_COUNT];

/* The environment a key covers: names in ascending byte order, each once,
 * with its value (NULL when unset, which differs from empty). */
#define CBC_ENV_MAX 64
struct cbc_env {
    size_t n;
    const char *name[CBC_ENV_MAX];
    const char *value[CBC_ENV_MAX];
};
/* Adds (or sets) name = value, keeping the order; false when full. The
 * strings are borrowed. */
bool cbc_env_set(struct cbc_env *e, const char *name, const char *value);
/* The index of `name`, or -1. */
long cbc_env_find(const struct cbc_env *e, const char *name);

/* One file a build read: its path and content. */
struct cbc_dep {
    char *path;           /* absolute, lexically normalised */
    struct cbc_hash hash; /* XXH3-128 of the content */
};

/* A streaming hasher over typed, length-prefixed fields, so that field
 * boundaries can never be confused ("ab"+"c" differs from "a"+"bc"). */
struct cbc_hasher;
struct cbc_hasher *cbc_hasher_new(void);
void cbc_hasher_free(struct cbc_hasher *h);
void cbc_hasher_field(struct cbc_hasher *h, uint32_t tag, const void *data, size_t len);
void cbc_hasher_str(struct cbc_hasher *h, uint32_t tag, const char *s); /* NULL hashes as absent */
void cbc_hasher_u64(struct cbc_hasher *h, uint32_t tag, uint64_t v);
void cbc_hasher_hash(struct cbc_hasher *h, uint32_t tag, const struct cbc_hash *v);
void cbc_hasher_digest(const struct cbc_hasher *h, struct cbc_hash *out);

/* A keyed record cache (the store provides one for toolchain identities):
 * get gives CBC_E_NOT_FOUND when absent; put is best effort. */
struct cbc_record_cache {
    void *ctx;
    enum cbc_status (*get)(void *ctx, const struct cbc_hash *key, uint8_t **data, size_t *len);
    void (*put)(void *ctx, const struct cbc_hash *key, const void *data, size_t len);
};

/* ---- explicit-endian readers (bytes.h style, inline) -------------------- */
static inline uint16_t cbc_rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t cbc_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t cbc_rd64(const uint8_t *p)
{
    return (uint64_t)cbc_rd32(p) | ((uint64_t)cbc_rd32(p + 4) << 32);
}
static inline void cbc_wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline void cbc_wr64(uint8_t *p, uint64_t v)
{
    cbc_wr32(p, (uint32_t)v);
    cbc_wr32(p + 4, (uint32_t)(v >> 32));
}
/* True when [off, off+len) lies inside a buffer of `size` bytes, without
 * overflow. The one bounds check every parser goes through. */
static inline bool cbc_in_bounds(uint64_t size, uint64_t off, uint64_t len)
{
    return off <= size && len <= size - off;
}

/* ---- processes (proc.c) ------------------------------------------------ */
/* Finds `name` on $PATH (or returns a copy when it contains '/'); NULL if absent. */
char *cbc_which(const char *name);
/* Starts argv[0] (searched on PATH when it has no '/') with stdout and
 * stderr sent to the given files (NULL: inherited; the same path for both
 * merges them), under a guard that kills the command and everything it
 * started when the calling process dies, however it dies. *pid is the
 * guard's: wait for it, or SIGTERM it to stop the whole command. */
enum cbc_status cbc_proc_spawn(char *const argv[], const char *stdout_path, const char *stderr_path,
                               pid_t *pid, struct cbc_err *err);
/* The same with "NAME=VALUE" entries (NULL-terminated; may be NULL) added
 * to the command's environment, the caller's left as it is. */
enum cbc_status cbc_proc_spawn_env(char *const argv[], const char *stdout_path,
                                   const char *stderr_path, char *const env[], pid_t *pid,
                                   struct cbc_err *err);
/* Waits; returns the exit code, 128+signal for a signal, -1 on wait error. */
int cbc_proc_wait(pid_t pid);
/* Waits until one of pids[0..n) ends (only these: never another child of
 * the process); returns its index and its code as cbc_proc_wait does. */
long cbc_proc_wait_any(const pid_t *pids, size_t n, int *code);
/* Runs to completion capturing stdout and stderr together (malloc'd, NUL-terminated). */
enum cbc_status cbc_proc_run_capture(char *const argv[], char **output, int *exit_code,
                                     struct cbc_err *err);

/* ---- sizes (size.c) ------------------------------------------------------ */
/* Parses "5G", "500M", "1.5GiB", "1024" (bytes). K/M/G/T are powers of
 * 1000, Ki/Mi/Gi/Ti powers of 1024. */
bool cbc_parse_size(const char *s, uint64_t *out);
/* "1.2 GB" style text into buf. */
const char *cbc_format_size(uint64_t bytes, char *buf, size_t len);

/* ---- time -------------------------------------------------------------- */
uint64_t cbc_now_ns(void); /* CLOCK_REALTIME in nanoseconds */
/* The tick of CLOCK_REALTIME_COARSE, which file times come from (or the
 * fine clock, on kernels with multigrain timestamps): a file changed after
 * a reading T of cbc_now_ns has a time above T - tick. */
uint64_t cbc_file_time_tick_ns(void);

#endif
