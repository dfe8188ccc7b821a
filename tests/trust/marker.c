/* marker.c: a library that says it was loaded: its constructor writes the
 * uids it runs with to the file named by CBC_MARKER. tests/cli/trust.sh and
 * setuid.sh name it as the CUDA driver, where no program linked with the
 * installed libcubincache may ever load it. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void)
{
    const char *path = getenv("CBC_MARKER");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "loaded with uid %d euid %d\n", (int)getuid(), (int)geteuid());
        fclose(f);
    }
}
