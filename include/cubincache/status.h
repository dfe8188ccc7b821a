/* cubincache/status.h: the one status enum of the library and the error
 * record every fallible call fills.
 *
 * Invariants: the enum is append-only; values are never renumbered or
 * reused, because tools and users switch on them. cbc_strerror() is a switch
 * with no default, so adding a value without a message is a compile warning.
 * Libraries never print and never exit: they return a status and put the
 * sentence a person can act on into a caller-owned struct cbc_err.
 */
#ifndef CUBINCACHE_STATUS_H
#define CUBINCACHE_STATUS_H

#include <cubincache/api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum cbc_status {
    CBC_OK = 0,
    CBC_E_NOMEM = 1,       /* an allocation failed */
    CBC_E_IO = 2,          /* a file could not be read, written or created */
    CBC_E_USAGE = 3,       /* an argument or option is wrong */
    CBC_E_ARCH = 4,        /* an arch spec is malformed or names a target nvcc cannot build */
    CBC_E_FORMAT = 5,      /* an input file is malformed (bad magic, truncated, lying size) */
    CBC_E_NVCC = 6,        /* nvcc could not be found or run */
    CBC_E_COMPILE = 7,     /* nvcc ran and reported an error */
    CBC_E_CACHE = 8,       /* the cache directory is unusable */
    CBC_E_VERIFY = 9,      /* an image failed verification: content hash or SM label */
    CBC_E_NO_IMAGE = 10,   /* nothing in a bundle can run on the device */
    CBC_E_NO_DRIVER = 11,  /* libcuda.so.1 could not be loaded or initialised */
    CBC_E_NO_DEVICE = 12,  /* the driver reports no such GPU */
    CBC_E_DRIVER = 13,     /* a CUDA driver call failed */
    CBC_E_NOT_FOUND = 14,  /* a named thing (kernel, tensor, entry, file) is absent */
    CBC_E_NUMERIC = 15,    /* NaN or Inf where a finite number is required */
    CBC_E_SHAPE = 16,      /* array shapes that do not fit together */
    CBC_E_UNSUPPORTED = 17 /* valid input this version does not handle */
};

/* Capacity of the two texts of struct cbc_err, terminating NUL included. */
#define CBC_ERR_MSG_MAX 1024
#define CBC_ERR_REMEDY_MAX 512

/* What went wrong and how to fix it. msg starts lower-case, names the
 * subject (file, field, offset) and has no final full stop; remedy is empty
 * when there is nothing better to say than msg. Owned by the caller; a
 * zero-initialised struct is a valid empty one. */
struct cbc_err {
    enum cbc_status status;
    char msg[CBC_ERR_MSG_MAX];
    char remedy[CBC_ERR_REMEDY_MAX];
};

/* A short, static, English description of a status ("malformed input").
 * Never NULL; unknown values give "unknown status". Since 0.1. */
CBC_API const char *cbc_strerror(enum cbc_status status);

#ifdef __cplusplus
}
#endif
#endif
