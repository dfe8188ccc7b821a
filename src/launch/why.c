/* why.c: what a launcher output was last compiled from (why.h).
 *
 * Design: the record is a bundle manifest (docs/manifest.md) of one entry,
 * rendered and parsed by src/manifest, so the comparison is the one `build
 * --explain` and `check` make (cbc_key_changes): the source, every file
 * read, the places looked at in vain, nvcc, the host compiler, the flags,
 * the environment, the working directory. The entry's target is a
 * placeholder (a launcher's result is not one target; its device code is
 * checked elsewhere) and its file is "output". The key is the working
 * directory and the output as spelled, so it names "this command" across
 * edits of any input, and it stays on this machine (no remote).
 *
 * Invariant: a record that is absent, torn or of another format reads as
 * "no earlier compile", never as an error.
 */
#include "why.h"
#include "manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct cbc_hash why_key(const char *cwd, const char *output)
{
    struct cbc_hasher *h = cbc_hasher_new();
    struct cbc_hash k = {{0}};
    if (!h)
        return k;
    cbc_hasher_str(h, 1, "launcher-last-compile");
    cbc_hasher_str(h, 2, cwd);
    cbc_hasher_str(h, 3, output);
    cbc_hasher_digest(h, &k);
    cbc_hasher_free(h);
    return k;
}

void cbc_why_remember(struct cbc_store *s, const char *cwd, const char *output,
                      const struct cbc_key_now *now, const struct cbc_dep *deps, size_t n,
                      const struct cbc_dep_list *list)
{
    if (!s || !now->source_hash || !now->nvcc_id)
        return;
    struct cbc_manifest_lookup *lk = list && list->n_probes
                                         ? calloc(list->n_probes, sizeof *lk)
                                         : NULL;
    size_t nl = 0;
    for (size_t i = 0; lk && i < list->n_probes; i++) {
        const struct cbc_probe_dir *p = &list->probes[i];
        lk[nl++] = (struct cbc_manifest_lookup){p->dir, list->names + p->first, p->n};
    }
    struct cbc_manifest_entry e = {.target = {CBC_KIND_SASS, 0, 52}, .file = "output"};
    struct cbc_manifest m = {
        .name = "launcher",
        .source = (char *)now->source,
        .source_hash = *now->source_hash,
        .deps = (struct cbc_dep *)deps,
        .n_deps = n,
        .nvcc = (char *)now->nvcc,
        .nvcc_version = (char *)now->nvcc_version,
        .host_cc = (char *)now->host_cc,
        .nvcc_id = *now->nvcc_id,
        .flags = (char **)now->flags,
        .n_flags = now->n_flags,
        .cwd = (char *)(now->cwd ? now->cwd : cwd),
        .base_dir = (char *)now->base,
        .arch_spec = "launcher",
        .arch_rule = "launcher",
        .arch_detail = "the command's own -arch and -gencode",
        .entries = &e,
        .n = 1,
        .lookups = lk,
        .n_lookups = nl,
    };
    if (now->host_id)
        m.host_id = *now->host_id;
    if (now->env)
        m.env = *now->env;
    char *text = cbc_manifest_render(&m);
    free(lk);
    if (!text)
        return;
    struct cbc_hash k = why_key(cwd, output);
    cbc_store_blob_put(s, CBC_STORE_LAST, &k, text, strlen(text), NULL);
    free(text);
}

void cbc_why_missed(struct cbc_store *s, const char *cwd, const char *output,
                    const struct cbc_key_now *now, struct cbc_filememo *memo, char *buf,
                    size_t len)
{
    struct cbc_hash k = why_key(cwd, output);
    uint8_t *raw = NULL;
    size_t n = 0;
    struct cbc_manifest m;
    memset(&m, 0, sizeof m);
    if (!s || cbc_store_blob_get(s, CBC_STORE_LAST, &k, &raw, &n, NULL) != CBC_OK ||
        cbc_manifest_parse((const char *)raw, n, "the launcher's last compile", &m, NULL) !=
            CBC_OK ||
        m.n != 1) {
        free(raw);
        cbc_manifest_release(&m);
        snprintf(buf, len, "no earlier compile of '%s' in '%s' is recorded in this cache",
                 output, cwd);
        return;
    }
    free(raw);
    char *change = NULL;
    if (cbc_key_changes(&m, &m.entries[0], now, memo, &change, 1) == 1) {
        snprintf(buf, len, "%s", change);
        free(change);
    } else {
        snprintf(buf, len, "inputs unchanged since the last compile, but its result is not in "
                           "this cache (cleared, trimmed, or another cache directory)");
    }
    cbc_manifest_release(&m);
}
