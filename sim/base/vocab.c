/* vocab.c: precisions, the enum name-table lookups of vocab.h, the data directory, the clock.
 * Each enum's table lives beside the module that owns the enum; this file only looks up. */
#include "vocab.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const precision_table[] = {"fp32", "tf32", "fp16", "bf16", "fp8"};
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
    assert(p >= PREC_FP32 && p < PREC_COUNT);
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

const char *ps_data_dir(void)
{
    const char *d = getenv("PROTOSIM_DATA_DIR");
    return d && *d ? d : PROTOSIM_SOURCE_DIR;
}

double ps_now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}
