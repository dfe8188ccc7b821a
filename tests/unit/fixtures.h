/* fixtures.h: access to the real nvcc output tests/fixtures/make_fixtures.sh
 * made for this test run ($CBC_FIXTURES). */
#ifndef CBC_TEST_FIXTURES_H
#define CBC_TEST_FIXTURES_H

#include "common.h"

#include <criterion/criterion.h>
#include <stdlib.h>

static inline char *fixture_path(const char *name)
{
    const char *dir = getenv("CBC_FIXTURES");
    cr_assert(dir && *dir, "CBC_FIXTURES is not set: run through meson test");
    return cbc_asprintf("%s/%s", dir, name);
}

/* The bytes of a fixture; the test fails if it cannot be read. */
static inline uint8_t *fixture(const char *name, size_t *len)
{
    char *p = fixture_path(name);
    uint8_t *data = NULL;
    struct cbc_err err = {0};
    cr_assert_eq(cbc_file_read(p, &data, len, &err), CBC_OK, "%s", err.msg);
    free(p);
    return data;
}

#endif
