/* htae_links.c: per-link bytes and busy time. A link's index is kept in its SimGrid user data
 * (index + 1) while the run lasts; routes are cached in an open-addressing table keyed by the
 * (source, destination) host pair. */
#include "htae_links.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "base/xalloc.h"

typedef struct link_acc {
    sg_link_t link;
    double bytes, busy_s, since; /* since: when active last became non-zero */
    int active;                  /* flows in flight on the link */
} link_acc;

typedef struct route_slot {
    sg_host_t src, dst; /* src NULL: empty slot */
    int off;            /* into pool: length, then link indices */
} route_slot;

struct htae_links {
    link_acc *acc;
    int n_acc;
    size_t cap_acc;
    route_slot *slots;
    size_t n_slots, used; /* n_slots a power of two */
    int *pool;
    size_t n_pool, cap_pool;
    xbt_dynar_t scratch;
};

htae_links *htae_links_create(void)
{
    htae_links *L = xcalloc(1, sizeof *L);
    L->n_slots = 256;
    L->slots = xcalloc(L->n_slots, sizeof *L->slots);
    L->scratch = xbt_dynar_new(sizeof(sg_link_t), NULL);
    return L;
}

static size_t pair_hash(sg_host_t a, sg_host_t b)
{
    uint64_t h = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uintptr_t)b + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= h >> 29;
    return (size_t)(h * 0xBF58476D1CE4E5B9ull >> 17);
}

static route_slot *find_slot(route_slot *slots, size_t n_slots, sg_host_t a, sg_host_t b)
{
    size_t i = pair_hash(a, b) & (n_slots - 1);
    while (slots[i].src && (slots[i].src != a || slots[i].dst != b))
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

static void grow_slots(htae_links *L)
{
    size_t n = L->n_slots * 2;
    route_slot *s = xcalloc(n, sizeof *s);
    for (size_t i = 0; i < L->n_slots; i++)
        if (L->slots[i].src)
            *find_slot(s, n, L->slots[i].src, L->slots[i].dst) = L->slots[i];
    free(L->slots);
    L->slots = s;
    L->n_slots = n;
}

static int link_index(htae_links *L, sg_link_t l)
{
    intptr_t d = (intptr_t)sg_link_get_data(l);
    if (d > 0)
        return (int)(d - 1);
    xgrow(&L->acc, sizeof *L->acc, (size_t)L->n_acc + 1, &L->cap_acc);
    memset(&L->acc[L->n_acc], 0, sizeof *L->acc);
    L->acc[L->n_acc].link = l;
    sg_link_set_data(l, (void *)(intptr_t)(L->n_acc + 1));
    return L->n_acc++;
}

/* The route of (a, b) as pool[off] = length, then link indices: computed once per pair. */
static const int *route_of(htae_links *L, sg_host_t a, sg_host_t b)
{
    route_slot *s = find_slot(L->slots, L->n_slots, a, b);
    if (s->src)
        return &L->pool[s->off];
    xbt_dynar_reset(L->scratch);
    sg_host_get_route(a, b, L->scratch);
    size_t len = xbt_dynar_length(L->scratch);
    xgrow(&L->pool, sizeof *L->pool, L->n_pool + len + 1, &L->cap_pool);
    int off = (int)L->n_pool;
    L->pool[L->n_pool++] = (int)len;
    for (size_t k = 0; k < len; k++)
        L->pool[L->n_pool++] = link_index(L, xbt_dynar_get_as(L->scratch, (unsigned)k, sg_link_t));
    s->src = a;
    s->dst = b;
    s->off = off;
    if (++L->used * 2 > L->n_slots)
        grow_slots(L);
    return &L->pool[off];
}

void htae_links_start(htae_links *L, sg_host_t src, sg_host_t dst, double bytes, double now)
{
    assert(src != dst && bytes > 0.0);
    const int *r = route_of(L, src, dst);
    for (int k = 1; k <= r[0]; k++) {
        link_acc *a = &L->acc[r[k]];
        a->bytes += bytes;
        if (a->active++ == 0)
            a->since = now;
    }
}

void htae_links_end(htae_links *L, sg_host_t src, sg_host_t dst, double now)
{
    const int *r = route_of(L, src, dst);
    for (int k = 1; k <= r[0]; k++) {
        link_acc *a = &L->acc[r[k]];
        assert(a->active > 0 && now >= a->since);
        if (--a->active == 0)
            a->busy_s += now - a->since;
    }
}

void htae_links_ring(htae_links *L, sg_host_t *hosts, int n, const ring_set *rs, double edge_bytes,
                     int start, double now)
{
    int edges = rs ? rs->n_edges : n;
    for (int e = 0; e < edges; e++) {
        sg_host_t a = hosts[rs ? rs->src[e] : e], b = hosts[rs ? rs->dst[e] : (e + 1) % n];
        double bytes = rs ? rs->share[e] * edge_bytes : edge_bytes;
        if (bytes <= 0.0)
            continue;
        if (start)
            htae_links_start(L, a, b, bytes, now);
        else
            htae_links_end(L, a, b, now);
    }
}

/* "up" / "down" for the halves of a split-duplex link (SimGrid names them <id>_UP, <id>_DOWN),
 * "both" for a link whose directions share one capacity. */
static const char *direction_of(const char *name)
{
    size_t n = strlen(name);
    if (n > 3 && strcmp(name + n - 3, "_UP") == 0)
        return "up";
    if (n > 5 && strcmp(name + n - 5, "_DOWN") == 0)
        return "down";
    return "both";
}

static int busiest_first(const void *pa, const void *pb)
{
    const htae_link_stat *a = pa, *b = pb;
    if (a->busy_s != b->busy_s)
        return a->busy_s > b->busy_s ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

void htae_links_collect(const htae_links *L, htae_result *out)
{
    out->n_links = 0;
    out->links = xcalloc((size_t)L->n_acc + 1, sizeof *out->links);
    for (int i = 0; i < L->n_acc; i++) {
        const link_acc *a = &L->acc[i];
        assert(a->active == 0);
        if (a->bytes <= 0.0)
            continue;
        htae_link_stat *s = &out->links[out->n_links++];
        s->name = xstrdup(sg_link_get_name(a->link));
        s->direction = direction_of(s->name);
        s->bytes = a->bytes;
        s->busy_s = a->busy_s;
    }
    qsort(out->links, (size_t)out->n_links, sizeof *out->links, busiest_first);
}

void htae_links_free(htae_links *L)
{
    if (!L)
        return;
    for (int i = 0; i < L->n_acc; i++)
        sg_link_set_data(L->acc[i].link, NULL);
    xbt_dynar_free(&L->scratch);
    free(L->acc);
    free(L->slots);
    free(L->pool);
    free(L);
}
