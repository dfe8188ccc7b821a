/* embedded.h: writing the records of CBC_EMBED_SECTION (layout in
 * cubincache/binfmt.h), the inverse of cbc_embedded_parse, kept beside it
 * so the two cannot drift. Used by `cubincache embed` and by tests that
 * need a record. Internal. */
#ifndef CBC_EMBEDDED_H
#define CBC_EMBEDDED_H

#include "common.h"
#include <cubincache/binfmt.h>

/* Appends to `out` one record for bundle `name` (a valid bundle name) and
 * the n images of v, of which target, data, size and xxh3 are read as the
 * descriptors will hold them (nothing is verified here); sets each
 * v[i].offset to its image's offset from the record's start. The record is
 * a multiple of 64 bytes, images are 64-byte aligned, and PTX gets the NUL
 * the driver wants after its `size` bytes. CBC_E_USAGE for a name that is
 * not a bundle name, CBC_E_NOMEM. */
enum cbc_status cbc_embedded_write(const char *name, struct cbc_embedded_entry *v, size_t n,
                                   struct cbc_buf *out, struct cbc_err *err);

#endif
