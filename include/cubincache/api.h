/* cubincache/api.h: CBC_API, the mark of every function the installed
 * libraries export. The libraries are compiled with hidden visibility, so
 * a function without it stays inside its library: the public headers are
 * the whole ABI (tests/abi/check_exports.py compares the two).
 * Since 0.1.
 */
#ifndef CUBINCACHE_API_H
#define CUBINCACHE_API_H

#if defined(__GNUC__) || defined(__clang__)
#define CBC_API __attribute__((visibility("default")))
#else
#define CBC_API
#endif

#endif
