/* names.c: the string set of program_int.h. Linear: it holds a module's
 * kernels, the directories one library is searched in, the files a
 * program reads, tens to a few thousand names each.
 */
#include "program_int.h"

#include <stdlib.h>
#include <string.h>

bool cbc_names_has(const struct cbc_names *s, const char *x)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], x))
            return true;
    return false;
}

bool cbc_names_add(struct cbc_names *s, const char *x, size_t len)
{
    char *c = cbc_strndup(x, len);
    if (!c || !cbc_grow(&s->v, s->n, &s->cap, sizeof *s->v, 8)) {
        free(c);
        return false;
    }
    if (cbc_names_has(s, c)) {
        free(c);
        return true;
    }
    s->v[s->n++] = c;
    return true;
}

void cbc_names_release(struct cbc_names *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}
