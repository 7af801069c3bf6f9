/* vocab.c: precisions, the enum name-table lookups of vocab.h, the data directory, the clock.
 * Each enum's table lives beside the module that owns the enum; this file only looks up. */
#include "vocab.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const precision_table[] = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
const enum_names precision_names = ENUM_NAMES(precision_table);

const char *enum_name(enum_names t, int v)
{
    return v >= 0 && v < t.count ? t.names[v] : "?";
}

int enum_parse(enum_names t, const char *s)
{
    for (int i = 0; s && i < t.count; i++)
        if (strcmp(s, t.names[i]) == 0)
            return i;
    return -1;
}

int precision_bytes(precision_t p)
{
    assert(p >= PREC_FP32 && p < PREC_COUNT && p != PREC_FP4);
    /* tf32 is a tensor-core compute mode; tensors stay fp32 in memory */
    return p == PREC_FP8 ? 1 : (p == PREC_FP16 || p == PREC_BF16) ? 2 : 4;
}

const char *precision_name(precision_t p)
{
    assert(p >= PREC_FP32 && p < PREC_COUNT);
    return precision_table[p];
}

int precision_parse(const char *s, precision_t *out)
{
    int v = enum_parse(precision_names, s);
    if (v < 0)
        return -1;
    *out = (precision_t)v;
    return 0;
}

/* Whether dir holds the bundled device table (the one file every command reads). */
static int has_data(const char *dir)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml", dir);
    return access(path, R_OK) == 0;
}

const char *ps_data_dir(void)
{
    const char *d = getenv("PROTOSIM_DATA_DIR");
    if (d && *d)
        return d;
    static char found[PATH_MAX + 32];
    if (found[0])
        return found;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0'; /* BIN */
            slash = strrchr(exe, '/');
            if (slash) {
                *slash = '\0'; /* BIN/.. */
                snprintf(found, sizeof found, "%s/share/protosim", exe[0] ? exe : "");
                if (has_data(found))
                    return found;
            }
        }
    }
    snprintf(found, sizeof found, "%s",
             has_data(PROTOSIM_INSTALL_DATA_DIR) ? PROTOSIM_INSTALL_DATA_DIR : PROTOSIM_SOURCE_DIR);
    return found;
}

double ps_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}
