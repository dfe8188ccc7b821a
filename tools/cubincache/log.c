/* log.c: log_file and debug (log.h). The settings come from the cache's
 * table (src/store/settings.h) when the cache exists, so `cubincache
 * config` shows what is in force; else from the environment alone.
 */
#include "log.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void setting(struct cbc_store *s, enum cbc_setting id, const struct tool *t, char *out,
                    size_t len)
{
    struct cbc_setting_value v;
    struct cbc_err e = {0};
    if (s) {
        if (cbc_store_setting(s, id, &v, &e) != CBC_OK) {
            tool_warn(t, "%s; ignored", e.msg);
            v.value[0] = '\0';
        }
    } else {
        const struct cbc_setting_def *d = &cbc_settings[id];
        const char *env = getenv(d->env);
        snprintf(v.value, sizeof v.value, "%s", env ? env : "");
        const char *bad = *v.value && d->check ? d->check(v.value) : NULL;
        if (bad) {
            tool_warn(t, "%s='%s': %s; ignored", d->env, v.value, bad);
            v.value[0] = '\0';
        }
    }
    snprintf(out, len, "%s", v.value);
}

void tool_log_open(struct tool_log *l, const struct tool *t, const char *cache_dir,
                   const char *what)
{
    memset(l, 0, sizeof *l);
    l->t = t;
    l->fd = -1;
    snprintf(l->what, sizeof l->what, "%s", what);
    char *root = cbc_store_default_root(cache_dir);
    struct cbc_store *s = NULL;
    if (root && cbc_store_open_existing(root, &s, NULL) != CBC_OK)
        s = NULL;
    char path[4096], dbg[16];
    setting(s, CBC_SET_LOG_FILE, t, path, sizeof path);
    setting(s, CBC_SET_DEBUG, t, dbg, sizeof dbg);
    cbc_store_close(s);
    free(root);
    l->debug = cbc_setting_on(dbg);
    if (*path) {
        l->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
        if (l->fd < 0)
            tool_warn(t, "cannot open the log file '%s': %s", path, strerror(errno));
    }
}

bool tool_log_on(const struct tool_log *l)
{
    return l->fd >= 0 || l->debug;
}

void tool_log_line(struct tool_log *l, const char *fmt, ...)
{
    if (!tool_log_on(l))
        return;
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (char *p = text; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' '; /* one record per line, whatever a path holds */
    if (l->debug)
        fprintf(stderr, "%s: note: %s: %s\n", l->t->prog, l->what, text);
    if (l->fd < 0)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    localtime_r(&tv.tv_sec, &tm);
    char line[2400];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02dT%02d:%02d:%02d.%03ld [%ld] %s: %s\n",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (long)(tv.tv_usec / 1000), (long)getpid(), l->what, text);
    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1, line[n - 1] = '\n';
    ssize_t w = write(l->fd, line, (size_t)n); /* O_APPEND: one write, one place */
    (void)w;
}

void tool_log_close(struct tool_log *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}
