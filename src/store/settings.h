/* settings.h: every setting of cubincache in one table: its name, the
 * environment variable and the cache-config key that set it, its default,
 * how its value is checked, and whether only tests use it. The store
 * resolves each once (environment over v1/config over default) and says
 * where the value came from; `cubincache config` prints the table so.
 *
 * The library's own variables (read by programs that link libcubincache,
 * not by the command) are listed here too, marked so, because a user asks
 * "what does cubincache read?" once, not per binary.
 *
 * Internal and unstable.
 */
#ifndef CBC_SETTINGS_H
#define CBC_SETTINGS_H

#include "common.h"

enum cbc_setting {
    CBC_SET_CACHE_DIR,  /* where the cache is */
    CBC_SET_MAX_SIZE,   /* the cache's size limit */
    CBC_SET_UMASK,      /* the permissions of what the cache creates */
    CBC_SET_REMOTE,     /* the second-level cache */
    CBC_SET_DISABLE,    /* compile without the cache */
    CBC_SET_BASE_DIR,   /* paths keyed relative to it, so checkouts share entries */
    CBC_SET_BUNDLE_PATH, /* (libcubincache) where programs look for installed bundles */
    CBC_SET_LIBCUDA,    /* (libcubincache, test builds) the driver library to open */
    CBC_SET_PUBLISH_DELAY, /* (tests) stall between writing and publishing a file */
    CBC_SET_COUNT
};

enum cbc_setting_from {
    CBC_FROM_DEFAULT = 0,
    CBC_FROM_CONFIG = 1,  /* v1/config */
    CBC_FROM_ENV = 2,
    CBC_FROM_OPTION = 3   /* the command line */
};

struct cbc_setting_def {
    const char *name;       /* "max_size" */
    const char *env;        /* "CUBINCACHE_MAXSIZE", or NULL */
    const char *config_key; /* the key in v1/config, or NULL when the config cannot set it */
    const char *def;        /* the default, as text ("" for none) */
    const char *help;       /* what it is, one line */
    bool library;           /* read by programs linking libcubincache, not by the command */
    bool test_only;
    /* NULL when the value is fine, else what is wrong with it */
    const char *(*check)(const char *value);
};

extern const struct cbc_setting_def cbc_settings[CBC_SET_COUNT];

/* One setting's value and where it came from. */
struct cbc_setting_value {
    char value[4096];
    enum cbc_setting_from from;
    char bad[256]; /* "": the value passes its check; else what is wrong with it */
};

/* The setting's name as the table spells it, or its id; -1 when unknown. */
int cbc_setting_find(const char *name);
/* The words for where a value came from ("CUBINCACHE_MAXSIZE",
 * "/home/u/.cache/cubincache/v1/config", "default"), into buf. */
const char *cbc_setting_origin(enum cbc_setting id, enum cbc_setting_from from,
                               const char *config_path, char *buf, size_t len);

#endif
