/* xalloc.c: checked allocation (xalloc.h): out of memory is an internal error, exit 3.
 * A simulator that cannot allocate has no useful way to go on, so no caller handles NULL. */
#include "xalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

static _Noreturn void out_of_memory(size_t bytes)
{
    fprintf(stderr, "protosim: error: out of memory (allocating %zu bytes)\n", bytes);
    exit(PS_EINTERNAL);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        out_of_memory(size);
    return p;
}

void *xcalloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        out_of_memory(SIZE_MAX);
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        out_of_memory(n * size);
    return p;
}

void *xreallocarray(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        out_of_memory(SIZE_MAX);
    void *q = realloc(p, n * size > 0 ? n * size : 1);
    if (!q)
        out_of_memory(n * size);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = xmalloc(n);
    memcpy(p, s, n);
    return p;
}

void xgrow(void *items_ptr, size_t size, size_t need, size_t *cap)
{
    void **items = items_ptr;
    if (need <= *cap)
        return;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            out_of_memory(SIZE_MAX);
        c *= 2;
    }
    *items = xreallocarray(*items, c, size);
    *cap = c;
}
