/* gate.c: what the two deploy-gate commands (check and select) share
 * beyond the library: C++ names demangled for people (libstdc++'s
 * __cxa_demangle, the demangler of the compiler the kernels' host code was
 * built with; mangled names only when the library is absent), and the
 * --kernels file, the kernels a program is known to launch; the options
 * both take (GATE_OPTS in cmds.h).
 */
#include "cmds.h"
#include "program.h"

#include <stdlib.h>
#include <string.h>

#ifdef CBC_HAVE_CXA_DEMANGLE
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);
#endif

char *gate_demangle(const char *mangled)
{
#ifdef CBC_HAVE_CXA_DEMANGLE
    if (!mangled || strncmp(mangled, "_Z", 2) != 0)
        return NULL;
    int status = 0;
    char *d = __cxa_demangle(mangled, NULL, NULL, &status);
    if (status != 0) {
        free(d);
        return NULL;
    }
    return d;
#else
    (void)mangled;
    return NULL;
#endif
}

int gate_read_kernels(const struct tool *t, const char *path, char ***out, size_t *n)
{
    uint8_t *text;
    size_t len;
    struct cbc_err err = {0};
    *out = NULL;
    *n = 0;
    if (cbc_file_read_max(path, 64u << 20, &text, &len, &err) != CBC_OK) {
        cbc_err_prefix(&err, "--kernels");
        cbc_err_hint(&err, "--kernels FILE names the kernels the program launches, one per line "
                     "(mangled, as `cubincache inspect` lists them, or demangled)");
        tool_error(t, &err);
        return EXIT_USAGE;
    }
    size_t cap = 0;
    char *save = NULL;
    for (char *line = strtok_r((char *)text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ' || *line == '\t')
            line++;
        size_t l = strlen(line);
        while (l && (line[l - 1] == ' ' || line[l - 1] == '\t' || line[l - 1] == '\r'))
            line[--l] = '\0';
        if (!l || line[0] == '#')
            continue;
        char *c = cbc_strdup(line);
        if (!c || !cbc_grow(out, *n, &cap, sizeof **out, 16)) {
            free(c);
            free(text);
            tool_errorf(t, "out of memory reading --kernels '%s'", path);
            return EXIT_INTERNAL;
        }
        (*out)[(*n)++] = c;
    }
    free(text);
    if (*n == 0)
        return tool_usage(t, "--kernels '%s' names no kernel (one per line; '#' "
                                "starts a comment)", path);
    return EXIT_OK;
}

void gate_free_kernels(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void gate_init(struct gate *g)
{
    *g = (struct gate){.named_rule = CBC_JUDGE_PER_MODULE, .lib_rule = CBC_JUDGE_DISPATCH};
    g->lib_dirs = (struct tool_list){g->lib_dir_v, 0, CBC_ARRAY_LEN(g->lib_dir_v)};
    g->strict_libs = (struct tool_list){g->strict_v, 0, CBC_ARRAY_LEN(g->strict_v)};
}

const struct tool_choice gate_rules[] = {
    {"per-module", CBC_JUDGE_PER_MODULE, false},
    {"dispatch", CBC_JUDGE_DISPATCH, false},
    {NULL, 0, false},
};

bool gate_parse_driver(const char *value, void *isa)
{
    return tool_parse_driver(value, isa);
}
