/* check.c: the verdicts of check.h for bundles (a directory or a manifest)
 * and the dispatch by path; the verdicts of binaries are binary.c's, and
 * the items of a report, which both make, report.c's.
 *
 * Design: integrity comes first (a missing, mislabeled or corrupt file is
 * reported as such whatever else is true), freshness second. Freshness
 * recomputes each entry's result key exactly as `build` would, with the
 * dependency list the manifest recorded: if none of those files changed,
 * no new include can have appeared, so the recorded list is the right one
 * (ccache's direct-mode argument). When the key differs the manifest is
 * compared field by field to name what changed.
 */
#include "check_int.h"

#include "archspec.h"
#include "key.h"
#include "manifest.h"
#include "store.h"

#include <cubincache/binfmt.h>
#include <cubincache/select.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <unistd.h>

/* ---- bundles ------------------------------------------------------------- */

/* What one check run learns once and every bundle it reads shares: file
 * hashes (a header included by 250 bundles is read once), the toolchains
 * identified (once per nvcc and host compiler), the cache they are read
 * from and the key's environment. Read only: check never writes a cache. */
struct toolchain_seen {
    char *nvcc, *ccbin;
    bool ok;
    char why[sizeof ((struct cbc_err *)0)->msg];
    struct cbc_toolchain tc;
};

struct check_run {
    struct cbc_filememo *memo;
    struct cbc_store *store;
    bool store_tried;
    struct toolchain_seen *tcs;
    size_t n_tcs;
};

static void run_init(struct check_run *r)
{
    memset(r, 0, sizeof *r);
}

static void run_release(struct check_run *r)
{
    cbc_filememo_free(r->memo);
    cbc_store_close(r->store);
    for (size_t i = 0; i < r->n_tcs; i++) {
        free(r->tcs[i].nvcc);
        free(r->tcs[i].ccbin);
        if (r->tcs[i].ok)
            cbc_toolchain_release(&r->tcs[i].tc);
    }
    free(r->tcs);
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The toolchain `nvcc` (with `ccbin`) is, identified at most once per run;
 * NULL with *why set when it cannot be here. */
static const struct cbc_toolchain *run_toolchain(struct check_run *r,
                                                 const struct cbc_check_opts *o, const char *nvcc,
                                                 const char *ccbin, const char **why)
{
    for (size_t i = 0; i < r->n_tcs; i++)
        if (same_str(r->tcs[i].nvcc, nvcc) && same_str(r->tcs[i].ccbin, ccbin)) {
            *why = r->tcs[i].why;
            return r->tcs[i].ok ? &r->tcs[i].tc : NULL;
        }
    struct toolchain_seen *v = cbc_reallocarray(r->tcs, r->n_tcs + 1, sizeof *v);
    if (!v) {
        *why = "out of memory";
        return NULL;
    }
    r->tcs = v;
    struct toolchain_seen *t = &v[r->n_tcs++];
    memset(t, 0, sizeof *t);
    t->nvcc = cbc_strdup(nvcc);
    t->ccbin = ccbin ? cbc_strdup(ccbin) : NULL;
    if (!r->store_tried) {
        r->store_tried = true;
        char *root = cbc_store_default_root(o->cache_dir);
        if (root && cbc_store_open_existing(root, &r->store, NULL) != CBC_OK)
            r->store = NULL;
        free(root);
    }
    struct cbc_record_cache tools = r->store ? cbc_store_tools_cache(r->store)
                                             : (struct cbc_record_cache){0};
    struct cbc_err e = {0};
    if (!cbc_is_file(nvcc))
        snprintf(t->why, sizeof t->why, "not found");
    else if (cbc_toolchain_identify(nvcc, ccbin, r->store ? &tools : NULL, &t->tc, &e) == CBC_OK)
        t->ok = true;
    else
        snprintf(t->why, sizeof t->why, "%s", e.msg);
    *why = t->why;
    return t->ok ? &t->tc : NULL;
}

/* One bundle's view of the run: its source's hash and its toolchain. */
struct fresh {
    bool enabled;
    struct cbc_filememo *memo;
    struct cbc_hash source_hash;
    bool have_source;
    const struct cbc_toolchain *tc;
    struct cbc_env env; /* what the key covers with this toolchain */
};

static void fresh_init(struct fresh *f, struct check_run *r, const struct cbc_manifest *m,
                       const struct cbc_check_opts *o, struct cbc_check_report *rep)
{
    memset(f, 0, sizeof *f);
    if (o->integrity_only)
        return;
    if (!r->memo)
        r->memo = cbc_filememo_new();
    f->enabled = true;
    f->memo = r->memo;
    f->have_source = f->memo && cbc_filememo_hash(f->memo, m->source, NULL, NULL, 0, &f->source_hash,
                                                  NULL, NULL) == CBC_OK;
    const char *why = "";
    f->tc = run_toolchain(r, o, m->nvcc, cbc_flags_ccbin(m->flags, m->n_flags), &why);
    cbc_key_env_read(f->tc ? f->tc->profile_env : NULL, f->tc ? f->tc->n_profile_env : 0,
                     &f->env);
    if (!f->tc)
        cbc_check_note(rep, "nvcc '%s' cannot be identified here (%s): entries are stale until it can",
                       m->nvcc, why[0] ? why : "not found");
}

/* Stale-or-ok for one intact entry. */
static void judge_freshness(const struct cbc_manifest *m, const struct cbc_manifest_entry *e,
                            struct fresh *f, const char *mpath, const char *file,
                            struct cbc_check_report *rep)
{
    char nm[CBC_TARGET_NAME_MAX];
    cbc_target_name(&e->target, nm);
    /* the inputs of now, as build would see them with the manifest's
     * source and flags (the working directory is in no result key) */
    struct cbc_key_now now = {
        m->source,
        f->have_source ? &f->source_hash : NULL,
        f->tc ? f->tc->nvcc : m->nvcc,
        f->tc ? f->tc->version : "?",
        f->tc ? &f->tc->nvcc_id : NULL,
        f->tc ? f->tc->host_cc : m->host_cc,
        f->tc ? &f->tc->host_id : NULL,
        m->flags,
        m->n_flags,
        &f->env,
        NULL,
        m->base_dir,
    };
    size_t nd = 0;
    const struct cbc_dep **deps = cbc_manifest_entry_deps(m, e, &nd);
    struct cbc_dep *cur = calloc(nd ? nd : 1, sizeof *cur);
    bool complete = deps && cur;
    for (size_t i = 0; complete && i < nd; i++) {
        cur[i].path = deps[i]->path;
        complete = cbc_filememo_hash(f->memo, deps[i]->path, NULL, NULL, 0, &cur[i].hash, NULL,
                                     NULL) == CBC_OK;
    }
    struct cbc_key_inputs in;
    bool same = false;
    if (complete && cbc_key_inputs_make(&now, &e->target, cur, nd, &in)) {
        struct cbc_hash k;
        cbc_key_result(&in, &k);
        same = cbc_hash_eq(&k, &e->key);
    }
    free(deps);
    free(cur);
    char *shadow = same ? cbc_key_lookup_changed(m) : NULL;
    if (same && !shadow) {
        cbc_check_add(rep, CBC_V_OK, mpath, file, nm, "current");
        return;
    }
    if (shadow) {
        cbc_check_add(rep, CBC_V_STALE, mpath, file, nm, "%s", shadow);
        free(shadow);
        return;
    }
    char *changes[16];
    size_t nc = cbc_key_changes(m, e, &now, f->memo, changes, CBC_ARRAY_LEN(changes));
    struct cbc_check_item *it =
        cbc_check_add(rep, CBC_V_STALE, mpath, file, nm, "%s",
            nc ? changes[0] : "its key no longer matches (built by another cubincache version?)");
    if (it && nc) {
        it->changes = calloc(nc, sizeof *it->changes);
        for (size_t i = 0; it->changes && i < nc; i++)
            it->changes[it->n_changes++] = changes[i];
        if (!it->changes)
            for (size_t i = 0; i < nc; i++)
                free(changes[i]);
    }
}

static bool in_choice(const struct cbc_arch_choice *ch, const struct cbc_target *t)
{
    for (size_t k = 0; k < ch->n; k++)
        if (cbc_target_eq(&ch->targets[k], t))
            return true;
    return false;
}

static bool has_target(const struct cbc_manifest *m, const struct cbc_target *t)
{
    for (size_t i = 0; i < m->n; i++)
        if (cbc_target_eq(&m->entries[i].target, t))
            return true;
    return false;
}

/* The targets a build would ask for now, when that can be told here. */
static bool asked_now(const struct cbc_manifest *m, const struct cbc_check_opts *o,
                      const struct fresh *f, struct cbc_arch_choice *ch, char *why, size_t why_len,
                      struct cbc_check_report *rep, struct cbc_err *err, enum cbc_status *st)
{
    struct cbc_arch_env env;
    cbc_check_arch_env(&env);
    if (f->tc) {
        env.supported = f->tc->supported;
        env.n_supported = f->tc->n_supported;
        env.nvcc_label = f->tc->label;
    }
    const char *spec = o->arch ? o->arch : m->arch_spec;
    bool envdep = !strcasecmp(spec, "auto") || !strcasecmp(spec, "native");
    *st = CBC_OK;
    if (!o->arch && !envdep)
        return false; /* explicit targets: the manifest's own list is what is asked */
    *st = cbc_arch_resolve(spec, &env, ch, err);
    if (*st != CBC_OK)
        return false;
    if (!o->arch && ch->rule == CBC_RULE_DEFAULT && m->arch_rule &&
        strcmp(m->arch_rule, cbc_arch_rule_name(CBC_RULE_DEFAULT)) != 0) {
        cbc_check_note(rep, "%s: arch not re-checked: it was decided by %s, and here there is neither "
                  "CUDA_COMPUTE_CAP nor a GPU (pass --arch to require targets)",
             m->name, m->arch_detail);
        cbc_arch_choice_release(ch);
        return false;
    }
    if (o->arch)
        snprintf(why, why_len, "asked for by --arch %s", o->arch);
    else if (m->compute_cap || env.compute_cap)
        snprintf(why, why_len, "arch environment changed: CUDA_COMPUTE_CAP %s -> %s",
                 m->compute_cap ? m->compute_cap : "unset",
                 env.compute_cap ? env.compute_cap : "unset");
    else
        snprintf(why, why_len, "arch environment changed: %s -> %s", m->arch_detail,
                 ch->detail ? ch->detail : ch->spec);
    return true;
}

/* The staging directories builds of this bundle left in its directory. A
 * marked one nobody holds is an interrupted publish: *incomplete says so,
 * and the bundle's differing files are reported as INCOMPLETE, not corrupt. */
static void judge_stages(const char *mpath, const char *dir, const struct cbc_manifest *m,
                         struct cbc_check_report *rep, bool *incomplete)
{
    *incomplete = false;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct cbc_stage_info *v = NULL;
    size_t n = 0;
    if (fd < 0 || cbc_bundle_stages(fd, m->name, &v, &n, NULL) != CBC_OK)
        n = 0;
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < n; i++) {
        char *p = cbc_path_join(dir, v[i].dname);
        if (v[i].publishing && !v[i].live) {
            *incomplete = true;
            cbc_check_add(rep, CBC_V_INCOMPLETE, mpath, p, NULL,
                "a build of '%s' was interrupted while publishing: the files may mix two "
                "builds; rerun the build, which repairs the bundle and removes '%s'",
                m->name, v[i].dname);
        } else if (v[i].publishing) {
            *incomplete = true;
            cbc_check_add(rep, CBC_V_INCOMPLETE, mpath, p, NULL,
                "a build of '%s' is publishing it right now; check again when it ends", m->name);
        } else if (!v[i].live) {
            cbc_check_note(rep, "'%s' is left over from a build of '%s' that died before publishing "
                      "(nothing of it reached the bundle); the next build removes it",
                 p ? p : v[i].dname, m->name);
        }
        free(p);
    }
    free(v);
}

/* any_stages: whether the directory may hold staging directories (check_dir
 * has listed it already and says none: no second listing per bundle). */
static enum cbc_status check_manifest(struct check_run *run, const char *mpath, bool any_stages,
                                      const struct cbc_check_opts *o,
                                      struct cbc_check_report *rep, char ***named, size_t *n_named,
                                      struct cbc_err *err)
{
    struct cbc_manifest m;
    enum cbc_status st = cbc_manifest_load(mpath, &m, err);
    if (st != CBC_OK)
        return st;
    char *dir = cbc_path_dir(mpath);
    bool incomplete = false;
    if (dir && any_stages)
        judge_stages(mpath, dir, &m, rep, &incomplete);
    struct fresh f;
    fresh_init(&f, run, &m, o, rep);
    struct cbc_arch_choice ch = {0};
    char why[512] = "";
    bool asked = asked_now(&m, o, &f, &ch, why, sizeof why, rep, err, &st);
    for (size_t i = 0; st == CBC_OK && i < m.n; i++) {
        const struct cbc_manifest_entry *e = &m.entries[i];
        char nm[CBC_TARGET_NAME_MAX];
        cbc_target_name(&e->target, nm);
        char *path = cbc_path_join(dir, e->file);
        if (named) {
            char **nv = cbc_reallocarray(*named, *n_named + 1, sizeof **named);
            if (nv) {
                *named = nv;
                (*named)[(*n_named)++] = cbc_strdup(path);
            }
        }
        char *canon = cbc_bundle_file(m.name, &e->target);
        struct cbc_target named_as;
        bool has_label = cbc_bundle_file_label(e->file, m.name, &named_as) ||
                         cbc_check_label_from_name(e->file, &named_as);
        uint8_t *data = NULL;
        size_t len = 0;
        struct cbc_err e2 = {0};
        if (cbc_file_read(path, &data, &len, &e2) != CBC_OK) {
            cbc_check_add(rep, incomplete ? CBC_V_INCOMPLETE : CBC_V_MISSING, mpath, path, nm,
                "the manifest names %s, which %s", e->file,
                e2.status == CBC_E_NOT_FOUND ? "does not exist" : "cannot be read");
        } else if (canon && strcmp(canon, e->file) != 0) {
            /* a build names every image after its target: this entry was edited */
            char ln[CBC_TARGET_NAME_MAX];
            if (has_label)
                cbc_check_add(rep, CBC_V_MISLABELED, mpath, path, nm,
                    "'%s' is named for %s but the manifest files it as %s (a build would call "
                    "it %s)", e->file, cbc_target_name(&named_as, ln), nm, canon);
            else
                cbc_check_add(rep, CBC_V_MISLABELED, mpath, path, nm,
                    "'%s' is not the name a build gives %s of '%s' (%s)", e->file, nm, m.name,
                    canon);
        } else {
            struct cbc_hash h;
            cbc_hash_bytes(data, len, &h);
            enum cbc_status vs = cbc_binfmt_verify_target(data, len, &e->target, path, NULL, &e2);
            bool differs = len != e->size || !cbc_hash_eq(&h, &e->hash);
            if (vs == CBC_E_VERIFY)
                cbc_check_add(rep, CBC_V_MISLABELED, mpath, path, nm, "%s", e2.msg);
            else if (differs && incomplete)
                cbc_check_add(rep, CBC_V_INCOMPLETE, mpath, path, nm,
                    "content differs from the manifest after an interrupted build: rerun it");
            else if (vs != CBC_OK)
                cbc_check_add(rep, CBC_V_CORRUPT, mpath, path, nm, "unparseable: %s", e2.msg);
            else if (differs)
                cbc_check_add(rep, CBC_V_CORRUPT, mpath, path, nm,
                    "content differs from the manifest (%zu bytes, manifest says %llu; hash %s): "
                    "modified or truncated after the build",
                    len, (unsigned long long)e->size,
                    cbc_hash_eq(&h, &e->hash) ? "equal" : "differs");
            else if (asked && !o->arch && !in_choice(&ch, &e->target))
                cbc_check_add(rep, CBC_V_STALE, mpath, path, nm, "%s; %s is no longer asked for", why, nm);
            else if (f.enabled)
                judge_freshness(&m, e, &f, mpath, path, rep);
            else
                cbc_check_add(rep, CBC_V_OK, mpath, path, nm, "intact (freshness not checked)");
        }
        free(canon);
        free(data);
        free(path);
    }
    for (size_t k = 0; st == CBC_OK && asked && k < ch.n; k++) {
        char nm[CBC_TARGET_NAME_MAX];
        if (!has_target(&m, &ch.targets[k]))
            cbc_check_add(rep, CBC_V_MISSING, mpath, NULL, cbc_target_name(&ch.targets[k], nm),
                "%s: %s has no %s", why, m.name, nm);
    }
    if (asked)
        cbc_arch_choice_release(&ch);
    free(dir);
    cbc_manifest_release(&m);
    return st;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum cbc_status check_dir(struct check_run *run, const char *dir,
                                 const struct cbc_check_opts *o,
                                 struct cbc_check_report *rep, struct cbc_err *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return cbc_err_set(err, CBC_E_IO, "cannot open directory '%s'", dir);
    char **names = NULL, **stages = NULL;
    size_t n = 0, n_stages = 0;
    bool any_stages = false;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *infix = strstr(de->d_name, ".cubincache-");
        if (de->d_name[0] == '.' && infix && infix > de->d_name + 1) {
            /* a staging directory: judged with its bundle, or below when it has none */
            any_stages = true;
            char **sv = cbc_reallocarray(stages, n_stages + 1, sizeof *stages);
            if (sv) {
                stages = sv;
                stages[n_stages++] = cbc_strndup(de->d_name + 1, (size_t)(infix - de->d_name - 1));
            }
            continue;
        }
        if (de->d_name[0] == '.')
            continue;
        char **nv = cbc_reallocarray(names, n + 1, sizeof *names);
        if (!nv)
            break;
        names = nv;
        names[n++] = cbc_strdup(de->d_name);
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, cmp_str);
    char **named = NULL;
    size_t n_named = 0, manifests = 0;
    enum cbc_status st = CBC_OK;
    for (size_t i = 0; st == CBC_OK && i < n; i++) {
        if (!names[i] || !ends_with(names[i], ".manifest.json"))
            continue;
        char *p = cbc_path_join(dir, names[i]);
        st = check_manifest(run, p, any_stages, o, rep, &named, &n_named, err);
        free(p);
        manifests++;
    }
    /* bundles spelled NAME.bundle (a build system's one output per bundle),
     * one level down; a symbolic link is not followed */
    for (size_t i = 0; st == CBC_OK && i < n; i++) {
        struct stat sb;
        char *p = names[i] && ends_with(names[i], ".bundle") ? cbc_path_join(dir, names[i]) : NULL;
        if (p && lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            st = check_dir(run, p, o, rep, err);
            manifests++;
        }
        free(p);
    }
    for (size_t i = 0; st == CBC_OK && i < n; i++) {
        if (!names[i] || !(ends_with(names[i], ".cubin") || ends_with(names[i], ".ptx") ||
                           (!manifests && ends_with(names[i], ".fatbin"))))
            continue;
        char *p = cbc_path_join(dir, names[i]);
        bool is_named = false;
        for (size_t k = 0; k < n_named && !is_named; k++)
            is_named = named[k] && strcmp(named[k], p) == 0;
        if (!manifests) {
            st = cbc_check_binary(p, o, rep, err);
        } else if (!is_named) {
            struct cbc_target label;
            char extra[600] = "";
            uint8_t *data;
            size_t len;
            struct cbc_err e = {0};
            if (cbc_check_label_from_name(p, &label) && cbc_file_read(p, &data, &len, NULL) == CBC_OK) {
                if (cbc_binfmt_verify_target(data, len, &label, p, NULL, &e) != CBC_OK)
                    cbc_fmt(extra, sizeof extra, "; also: %s", e.msg);
                free(data);
            }
            cbc_check_add(rep, CBC_V_ORPHAN, dir, p, NULL,
                "no manifest in '%s' names it (left over from an older build?)%s", dir, extra);
        }
        free(p);
    }
    /* staging directories of bundles whose first build died before its
     * manifest was published */
    for (size_t i = 0; st == CBC_OK && i < n_stages; i++) {
        bool dup = false;
        for (size_t k = 0; k < i && !dup; k++)
            dup = stages[k] && stages[i] && !strcmp(stages[k], stages[i]);
        char *mp = stages[i] && !dup ? cbc_asprintf("%s/%s.manifest.json", dir, stages[i]) : NULL;
        if (mp && !cbc_is_file(mp)) {
            struct cbc_manifest fake = {.name = stages[i]};
            bool incomplete;
            judge_stages(dir, dir, &fake, rep, &incomplete);
        }
        free(mp);
    }
    for (size_t i = 0; i < n_stages; i++)
        free(stages[i]);
    free(stages);
    if (st == CBC_OK && !manifests && rep->n == 0)
        st = cbc_err_set(err, CBC_E_NOT_FOUND,
                         "'%s' holds no NAME.manifest.json and no cubin, PTX or fatbin", dir);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    for (size_t i = 0; i < n_named; i++)
        free(named[i]);
    free(named);
    return st;
}

enum cbc_status cbc_check_path(const char *path, const struct cbc_check_opts *o,
                               struct cbc_check_report *rep, struct cbc_err *err)
{
    struct check_run run;
    run_init(&run);
    enum cbc_status st;
    if (cbc_is_dir(path))
        st = check_dir(&run, path, o, rep, err);
    else if (ends_with(path, ".manifest.json"))
        st = check_manifest(&run, path, true, o, rep, NULL, NULL, err);
    else
        st = cbc_check_binary(path, o, rep, err);
    run_release(&run);
    return st;
}
