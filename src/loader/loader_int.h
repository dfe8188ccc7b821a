/* loader_int.h: what the loader's files share. Internal. */
#ifndef CBC_LOADER_INT_H
#define CBC_LOADER_INT_H

#include "common.h"
#include <cubincache/loader.h>

#endif
