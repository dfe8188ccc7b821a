/* names.c: whether an output names the tree it was compiled in (cache.h,
 * cbc_cache_names_tree), so that it is kept per tree (path-dependent) and
 * never served to another checkout, which nvcc would give other bytes.
 *
 * nvcc's output holds the tree in three forms, all looked for:
 *  - a path as bytes: the base or the working directory (-lineinfo and -G
 *    line tables, __FILE__ of an absolute path in a cubin or host code);
 *  - a path as one of PTX's initialised byte arrays ("{47, 119, 47, ...}":
 *    how cicc writes a string such as an assert's __FILE__);
 *  - nvcc's module id, a hash of the source's absolute path that cicc
 *    pastes into internal names ("_ZN33_INTERNAL_87212641_5_as_cu_..."):
 *    found by its form, eight hex digits before "_<length>_<name>_" of the
 *    source's file name, so no id file is needed.
 * Device code inside a host object or a fatbin is looked at decompressed
 * (binfmt), so a compressed fatbin hides nothing.
 *
 * Bytes cannot show every use: a kernel that copies __FILE__ byte by byte
 * is compiled to stores of immediates, and a path's length can be folded
 * into anything. So the device code's source is asked too
 * (cbc_cache_device_code_names_tree): cicc's device-only translation unit
 * (the .cudafe1.gpu file it writes: host functions and their __FILE__ are
 * not in it) naming the tree anywhere but in its line directives.
 *
 * A false "names" costs a compile in another checkout, never a wrong
 * byte; every failure to look (a fatbin that does not parse, no memory,
 * no device-only source) answers "names".
 */
#include "cache.h"

#include <cubincache/binfmt.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* "_<length>_<name>_" of a file name as nvcc spells it in module ids:
 * every byte but letters and digits an underscore. */
static bool id_tail(const char *source, char *out, size_t cap)
{
    const char *bn = source ? strrchr(source, '/') : NULL;
    bn = bn ? bn + 1 : source;
    if (!bn || !*bn)
        return false;
    int n = snprintf(out, cap, "_%zu_", strlen(bn));
    if (n < 0 || (size_t)n + strlen(bn) + 2 > cap)
        return false;
    char *w = out + n;
    for (const char *p = bn; *p; p++)
        *w++ = isalnum((unsigned char)*p) ? *p : '_';
    *w++ = '_';
    *w = '\0';
    return true;
}

static bool holds_module_id(const uint8_t *d, size_t n, const char *tail)
{
    size_t tl = strlen(tail);
    for (const uint8_t *p = d, *end = d + n;
         (size_t)(end - p) >= tl && (p = memmem(p, (size_t)(end - p), tail, tl)) != NULL; p++) {
        if (p - d < 8)
            continue;
        bool hex = true;
        for (int i = 1; i <= 8 && hex; i++)
            hex = isxdigit(p[-i]) != 0;
        if (hex)
            return true;
    }
    return false;
}

bool cbc_ptx_arrays_hold(const uint8_t *s, size_t n, const char *dir)
{
    size_t dl = dir ? strlen(dir) : 0;
    if (!dl || !strcmp(dir, "/") || !s || !n)
        return false;
    const char *p = (const char *)s, *end = p + n;
    struct cbc_buf b = {0};
    bool found = false;
    while (!found && p < end && (p = memchr(p, '{', (size_t)(end - p))) != NULL) {
        b.len = 0;
        bool bytes = true;
        for (p++; p < end && *p != '}' && bytes;) {
            if (*p == ',' || isspace((unsigned char)*p)) {
                p++;
                continue;
            }
            bool hex = end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
            unsigned v = 0;
            size_t digits = 0;
            for (p += hex ? 2 : 0;
                 p < end && v <= 255 && (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p));
                 p++, digits++)
                v = v * (hex ? 16u : 10u) +
                    (unsigned)(isdigit((unsigned char)*p) ? *p - '0' : tolower((unsigned char)*p) - 'a' + 10);
            bytes = digits && v <= 255;
            if (bytes) {
                uint8_t c = (uint8_t)v;
                cbc_buf_append(&b, &c, 1);
            }
        }
        if (b.oom) {
            found = true; /* cannot look: say so */
            break;
        }
        found = bytes && b.len >= dl && memmem(b.p, b.len, dir, dl) != NULL;
    }
    cbc_buf_release(&b);
    return found;
}

static bool is_ptx(const uint8_t *d, size_t n)
{
    return cbc_binfmt_detect(d, n) == CBC_FILE_PTX;
}

/* The bytes themselves, and PTX's arrays when they are PTX. */
static bool flat_names(const struct cbc_cache *c, const char *tail, const uint8_t *d, size_t n)
{
    return cbc_base_names(c->base, c->cwd, d, n) || (tail[0] && holds_module_id(d, n, tail)) ||
           (is_ptx(d, n) && (cbc_ptx_arrays_hold(d, n, c->base) || cbc_ptx_arrays_hold(d, n, c->cwd)));
}

/* Every entry of the fatbin containers in d[off, off + len), decompressed. */
static bool fatbin_names(const struct cbc_cache *c, const char *tail, const uint8_t *d,
                         size_t len)
{
    struct cbc_fatbin fb;
    if (cbc_fatbin_parse(d, len, 0, NULL, &fb, NULL) != CBC_OK)
        return true;
    bool names = false;
    for (size_t i = 0; i < fb.n && !names; i++) {
        uint8_t *p = NULL;
        size_t pn = 0;
        if (cbc_fatbin_entry_payload(&fb.entries[i], NULL, &p, &pn, NULL) != CBC_OK) {
            names = true;
            break;
        }
        names = flat_names(c, tail, p, pn);
        free(p);
    }
    cbc_fatbin_release(&fb);
    return names;
}

bool cbc_cache_names_tree(const struct cbc_cache *c, const char *source, const uint8_t *d,
                          size_t n)
{
    char tail[300] = "";
    if (!id_tail(source, tail, sizeof tail))
        tail[0] = '\0';
    if (!d || !n)
        return false;
    if (flat_names(c, tail, d, n))
        return true;
    switch (cbc_binfmt_detect(d, n)) {
    case CBC_FILE_FATBIN:
        return fatbin_names(c, tail, d, n);
    case CBC_FILE_HOST_ELF: {
        struct cbc_host_elf h;
        if (cbc_host_elf_parse(d, n, NULL, &h, NULL) != CBC_OK)
            return true; /* cannot look inside */
        const struct cbc_host_section *s[] = {&h.nv_fatbin, &h.nv_relfatbin};
        for (size_t i = 0; i < 2; i++)
            if (s[i]->present && s[i]->size && s[i]->offset <= n && s[i]->size <= n - s[i]->offset &&
                fatbin_names(c, tail, d + s[i]->offset, (size_t)s[i]->size))
                return true;
        return false;
    }
    default: {
        /* anything else that carries a fatbin (an archive's members) is
         * not looked into: kept per tree */
        static const uint8_t magic[4] = {0x50, 0xed, 0x55, 0xba};
        return memmem(d, n, magic, sizeof magic) != NULL;
    }
    }
}

bool cbc_cache_device_code_names_tree(const struct cbc_cache *c, const uint8_t *gpu, size_t n)
{
    const char *dirs[2] = {c->base, c->cwd};
    if (!gpu || !n)
        return false;
    const char *p = (const char *)gpu, *end = p + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *q = p;
        while (q < le && (*q == ' ' || *q == '\t'))
            q++;
        if (q < le && *q != '#') /* a line directive names the tree for debug info only */
            for (int i = 0; i < 2; i++)
                if (dirs[i] && strcmp(dirs[i], "/") != 0 &&
                    memmem(q, (size_t)(le - q), dirs[i], strlen(dirs[i])))
                    return true;
        p = le + 1;
    }
    return false;
}

bool cbc_cache_is_device_tu(const char *path)
{
    size_t l = strlen(path);
    return l > 12 && strcmp(path + l - 12, ".cudafe1.gpu") == 0;
}

char *cbc_cache_keep_dir(char *path)
{
    struct stat sb;
    if (path && cbc_path_plain(path) &&
        (mkdir(path, 0700) == 0 || (errno == EEXIST && lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))))
        return path;
    free(path);
    return NULL;
}

bool cbc_cache_keep_dir_names_tree(const struct cbc_cache *c, const char *keep)
{
    DIR *d = opendir(keep);
    if (!d)
        return true;
    bool names = true, found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        if (!cbc_cache_is_device_tu(e->d_name))
            continue;
        found = true;
        char *p = cbc_path_join(keep, e->d_name);
        uint8_t *g = NULL;
        size_t gn = 0;
        if (p && cbc_file_read(p, &g, &gn, NULL) == CBC_OK)
            names = cbc_cache_device_code_names_tree(c, g, gn);
        free(g);
        free(p);
    }
    closedir(d);
    return names;
}
