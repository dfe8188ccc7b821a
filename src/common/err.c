/* err.c: the status strings and the helpers that fill a struct cbc_err.
 *
 * cbc_strerror() is a switch without a default so that -Wswitch flags a new
 * status without a message. Every setter tolerates a NULL err (the caller
 * did not want details). cbc_err_set returns the status it was given, so a
 * failure can be reported and returned in one statement; the hint and
 * prefix decorators return nothing, so no status can come from them.
 *
 * Messages quote file names, file contents, environment values and what
 * the driver says, and programs print them as they are: every text is
 * escaped here, where it is made (escape.c: no control character, C1 or
 * invalid UTF-8 reaches a terminal through a message), and a text cut to
 * fit its field ends in "..." so nobody takes it for the whole.
 */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cbc_strerror(enum cbc_status status)
{
    switch (status) {
    case CBC_OK: return "success";
    case CBC_E_NOMEM: return "out of memory";
    case CBC_E_IO: return "input/output error";
    case CBC_E_USAGE: return "usage error";
    case CBC_E_ARCH: return "bad or unsupported arch";
    case CBC_E_FORMAT: return "malformed input";
    case CBC_E_NVCC: return "nvcc could not be run";
    case CBC_E_COMPILE: return "compilation failed";
    case CBC_E_CACHE: return "cache unusable";
    case CBC_E_VERIFY: return "verification failed";
    case CBC_E_NO_IMAGE: return "no image for this GPU";
    case CBC_E_NO_DRIVER: return "no CUDA driver";
    case CBC_E_NO_DEVICE: return "no such GPU";
    case CBC_E_DRIVER: return "CUDA driver error";
    case CBC_E_NOT_FOUND: return "not found";
    case CBC_E_NUMERIC: return "non-finite number";
    case CBC_E_SHAPE: return "shape mismatch";
    case CBC_E_UNSUPPORTED: return "unsupported";
    }
    return "unknown status";
}

/* Formats into a scratch buffer larger than the field, then escapes into
 * it: a text longer than the field is cut by cbc_escape, with its mark. */
static void put_text(char *field, size_t len, const char *fmt, va_list ap) CBC_PRINTF(3, 0);
static void put_text(char *field, size_t len, const char *fmt, va_list ap)
{
    char raw[4 * CBC_ERR_MSG_MAX];
    vsnprintf(raw, sizeof raw, fmt, ap);
    cbc_escape(field, len, raw);
}

enum cbc_status cbc_err_set(struct cbc_err *err, enum cbc_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        err->status = status;
        va_start(ap, fmt);
        put_text(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->remedy[0] = '\0';
    }
    return status;
}

void cbc_err_hint(struct cbc_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    put_text(err->remedy, sizeof err->remedy, fmt, ap);
    va_end(ap);
}

void cbc_err_prefix(struct cbc_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char head[CBC_ERR_MSG_MAX], both[2 * CBC_ERR_MSG_MAX + 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    /* the old message is escaped already, and escapes to itself */
    snprintf(both, sizeof both, "%s: %s", head, err->msg);
    cbc_escape(err->msg, sizeof err->msg, both);
}

enum cbc_status cbc_err_oom(struct cbc_err *err)
{
    return cbc_err_set(err, CBC_E_NOMEM, "out of memory");
}

void cbc_say(cbc_msg_fn fn, void *ctx, enum cbc_msg_kind kind, const char *fmt, ...)
{
    if (!fn)
        return;
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fn(ctx, kind, buf);
}

_Noreturn void cbc_assert_failed(const char *file, int line, const char *func, const char *what)
{
    fprintf(stderr, "cubincache: internal error: %s:%d: %s: '%s' does not hold; please report "
            "this\n", file, line, func, what);
    abort();
}
