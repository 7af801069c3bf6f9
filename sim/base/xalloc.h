/* xalloc.h: protosim's one out-of-memory policy. Every heap allocation goes through these; on
 * failure they print "protosim: error: out of memory" and exit 3 (internal error), never return
 * NULL, so callers need no failure path. Freeing stays plain free(). */
#ifndef PROTOSIM_XALLOC_H
#define PROTOSIM_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t size);
/* Zeroed; fails (exit 3) also when n * size overflows. */
void *xcalloc(size_t n, size_t size);
/* n * size bytes; p may be NULL. On failure p is not freed, but the process exits anyway. */
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);

/* Grow *items (element size `size`, capacity *cap) so it holds at least `need` elements,
 * doubling; new memory is not zeroed. */
void xgrow(void *items_ptr, size_t size, size_t need, size_t *cap);

#endif
