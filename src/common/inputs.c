/* inputs.c: the names of the environment variables that change nvcc's
 * output whatever toolkit is installed, and the ordered set of them a key
 * hashes (common.h). Adding one changes every key that has it set: bump
 * CBC_KEY_VERSION (key/key.h) with it.
 *
 * PATH and LD_LIBRARY_PATH are deliberately not here: they vary with every
 * shell and build tool (cargo puts its target directory in
 * LD_LIBRARY_PATH) and change the output only through the programs they
 * resolve, which are keyed by content (the host compiler nvcc finds on
 * PATH) or by the trace (src/trace: a new program earlier on PATH is a
 * file where a lookup found none).
 */
#include "common.h"

#include <string.h>

const char *const cbc_key_env_names[CBC_KEY_ENV_COUNT] = {
    "NVCC_PREPEND_FLAGS",   /* nvcc inserts these before the command line */
    "NVCC_APPEND_FLAGS",    /* ... and these after it */
    "NVCC_CCBIN",           /* the host compiler nvcc uses */
    "CPATH",                /* include search paths the host preprocessor reads */
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "GCC_EXEC_PREFIX",      /* where gcc finds cc1plus and as */
    "COMPILER_PATH",
    "SOURCE_DATE_EPOCH",    /* gcc's __DATE__ and __TIME__ */
    "DEPENDENCIES_OUTPUT",  /* gcc writes a depfile when these are set */
    "SUNPRO_DEPENDENCIES",
    "CCC_OVERRIDE_OPTIONS", /* clang rewrites its own command line */
    "LANG",                 /* the host compiler's input charset and the language */
    "LC_ALL",               /*   of the diagnostics a hit replays */
    "LC_CTYPE",
    "LC_MESSAGES",
};

long cbc_env_find(const struct cbc_env *e, const char *name)
{
    for (size_t i = 0; i < e->n; i++)
        if (!strcmp(e->name[i], name))
            return (long)i;
    return -1;
}

bool cbc_env_set(struct cbc_env *e, const char *name, const char *value)
{
    size_t i = 0;
    while (i < e->n && strcmp(e->name[i], name) < 0)
        i++;
    if (i < e->n && !strcmp(e->name[i], name)) {
        e->value[i] = value;
        return true;
    }
    if (e->n == CBC_ENV_MAX)
        return false;
    memmove(&e->name[i + 1], &e->name[i], (e->n - i) * sizeof e->name[0]);
    memmove(&e->value[i + 1], &e->value[i], (e->n - i) * sizeof e->value[0]);
    e->name[i] = name;
    e->value[i] = value;
    e->n++;
    CBC_ASSERT((i == 0 || strcmp(e->name[i - 1], name) < 0) &&
               (i + 1 == e->n || strcmp(name, e->name[i + 1]) < 0)); /* sorted, each once */
    return true;
}
