/* inputs.c: the names of the environment variables that change nvcc's
 * output, in the order every cache key hashes them (common.h). Appending
 * one changes every key: bump CBC_KEY_VERSION (key/key.h) with it.
 */
#include "common.h"

const char *const cbc_key_env_names[CBC_KEY_ENV_COUNT] = {
    "NVCC_PREPEND_FLAGS", /* nvcc inserts these before the command line */
    "NVCC_APPEND_FLAGS",  /* ... and these after it */
    "NVCC_CCBIN",         /* the host compiler nvcc uses */
    "CPATH",              /* include search paths the host preprocessor reads */
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
};
