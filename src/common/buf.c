/* buf.c: a growable, always NUL-terminated byte buffer and string helpers.
 *
 * Design: appends never fail loudly; an allocation failure sets b->oom and
 * leaves the content unchanged, so builders of long texts (manifests, C
 * sources, depfiles) check once at the end instead of after every append.
 */
#include "common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool buf_reserve(struct cbc_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (extra > SIZE_MAX - b->len - 1) {
        b->oom = true;
        return false;
    }
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void cbc_buf_append(struct cbc_buf *b, const void *data, size_t len)
{
    if (!buf_reserve(b, len))
        return;
    if (len)
        memcpy(b->p + b->len, data, len);
    b->len += len;
    b->p[b->len] = '\0';
}

void cbc_buf_puts(struct cbc_buf *b, const char *s)
{
    cbc_buf_append(b, s, strlen(s));
}

void cbc_buf_printf(struct cbc_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n)) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cbc_buf_release(struct cbc_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

char *cbc_buf_detach(struct cbc_buf *b)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom)
        free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
    return p;
}

void cbc_fmt(char *buf, size_t len, const char *fmt, ...)
{
    if (!len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

char *cbc_strdup(const char *s)
{
    return s ? cbc_strndup(s, strlen(s)) : NULL;
}

char *cbc_strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p)
        return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *cbc_asprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *cbc_reallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return realloc(p, n && size ? n * size : 1);
}

bool cbc_grow(void *vp, size_t n, size_t *cap, size_t size, size_t first)
{
    if (n < *cap)
        return true;
    size_t c = *cap ? (*cap > SIZE_MAX / 2 ? SIZE_MAX : *cap * 2) : first;
    void *old;
    memcpy(&old, vp, sizeof old); /* vp is a T **, read through void * */
    void *v = cbc_reallocarray(old, c, size);
    if (!v)
        return false;
    memcpy(vp, &v, sizeof v);
    *cap = c;
    return true;
}
