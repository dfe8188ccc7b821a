/* probe.c: a program linked with libcubincache as a user's program is, for
 * tests/cli/trust.sh and tests/cli/setuid.sh (which install copies of it
 * setuid root and run them as another user). It prints, one line each,
 * who it runs as and what the environment made the library do:
 *   uid RUID euid EUID
 *   driver: what opening the CUDA driver gave (cbc_device_count)
 *   default: the origin of the bundle cbc_bundle_open_default opens for
 *            the embedded probe bundle ("embedded", or a manifest's path)
 *   installed: the origin of cbc_bundle_open_installed(NAME), or its error
 * NAME is the first argument (default which_b90). Exits 0. */
#include <cubincache/loader.h>

#include <stdio.h>
#include <unistd.h>

extern const struct cbc_embedded_bundle cbc_bundle_probe;

static void opened(const char *what, enum cbc_status st, struct cbc_bundle *b,
                   const struct cbc_err *err)
{
    printf("%s: %s\n", what, st == CBC_OK ? cbc_bundle_origin(b) : err->msg);
    cbc_bundle_close(st == CBC_OK ? b : NULL);
}

int main(int argc, char **argv)
{
    printf("uid %d euid %d\n", (int)getuid(), (int)geteuid());
    struct cbc_err err = {0};
    int n = 0;
    enum cbc_status st = cbc_device_count(&n, &err);
    printf("driver: %s\n", st == CBC_OK ? "opened" : err.msg);
    struct cbc_bundle *b = NULL;
    st = cbc_bundle_open_default(&cbc_bundle_probe, &b, &err);
    opened("default", st, b, &err);
    st = cbc_bundle_open_installed(argc > 1 ? argv[1] : "which_b90", &b, &err);
    opened("installed", st, b, &err);
    return 0;
}
