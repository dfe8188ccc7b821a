/* size.c: sizes as people write them ("5G", "500M", "1.5GiB") and as the
 * tools print them ("1.2 GB"). K/M/G/T are powers of 1000, Ki/Mi/Gi/Ti of
 * 1024, as in ccache and systemd. */
#include "common.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

bool cbc_parse_size(const char *s, uint64_t *out)
{
    /* digits with an optional fraction: strtod alone would also take "nan",
     * "inf", hex floats and exponents */
    size_t i = 0, digits = 0;
    while (s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (s[i] == '.')
        for (i++; s[i] >= '0' && s[i] <= '9'; i++)
            digits++;
    if (digits == 0)
        return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end != s + i || !isfinite(v) || v < 0)
        return false;
    while (*end == ' ')
        end++;
    double mul = 1;
    char u = (char)toupper((unsigned char)*end);
    if (u == 'K' || u == 'M' || u == 'G' || u == 'T') {
        int pow = u == 'K' ? 1 : u == 'M' ? 2 : u == 'G' ? 3 : 4;
        bool binary = end[1] == 'i' || end[1] == 'I';
        for (int i = 0; i < pow; i++)
            mul *= binary ? 1024.0 : 1000.0;
        end += binary ? 2 : 1;
        if (toupper((unsigned char)*end) == 'B')
            end++;
    } else if (u == 'B') {
        end++;
    }
    if (*end != '\0' || v * mul > 1.8e19)
        return false;
    *out = (uint64_t)(v * mul);
    return true;
}

const char *cbc_format_size(uint64_t bytes, char *buf, size_t len)
{
    const char *units[] = {"B", "kB", "MB", "GB", "TB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

