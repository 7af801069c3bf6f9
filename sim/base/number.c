/* number.c: strict numbers of the command line (number.h): the whole string is one decimal
 * count, decimal or byte size, or it is refused. */
#include "number.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "limits.h"

/* The length of the run of decimal digits at s. */
static size_t digits(const char *s)
{
    size_t n = 0;
    while (s[n] >= '0' && s[n] <= '9')
        n++;
    return n;
}

int ps_parse_count(const char *s, int *out)
{
    size_t n = digits(s);
    if (n == 0 || s[n] || n > 10)
        return -1;
    long long v = strtoll(s, NULL, 10);
    if (v > 1000000000LL)
        return -1;
    *out = (int)v;
    return 0;
}

int ps_parse_decimal(const char *s, double *out)
{
    /* digits [. digits] [e [+-] digits]: no sign, hex, nan, inf or spaces */
    size_t n = digits(s), i = n;
    if (s[i] == '.') {
        size_t f = digits(s + i + 1);
        n += f;
        i += 1 + f;
    }
    if (n == 0)
        return -1;
    if (s[i] == 'e' || s[i] == 'E') {
        i += (s[i + 1] == '+' || s[i + 1] == '-') ? 2 : 1;
        size_t e = digits(s + i);
        if (e == 0)
            return -1;
        i += e;
    }
    if (s[i])
        return -1;
    *out = strtod(s, NULL);
    return isfinite(*out) ? 0 : -1;
}

int ps_parse_size(const char *s, double *out)
{
    static const struct {
        const char *suffix;
        double scale;
    } units[] = {{"", 1},
                 {"K", 1e3},
                 {"k", 1e3},
                 {"M", 1e6},
                 {"G", 1e9},
                 {"T", 1e12},
                 {"Ki", 1024.0},
                 {"Mi", 1048576.0},
                 {"Gi", 1073741824.0},
                 {"Ti", 1099511627776.0}};
    size_t n = digits(s);
    if (n == 0 || n > 15)
        return -1;
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++)
        if (!strcmp(s + n, units[u].suffix)) {
            double v = strtod(s, NULL) * units[u].scale;
            if (v > PS_MAX_BYTES)
                return -1;
            *out = v;
            return 0;
        }
    return -1;
}
