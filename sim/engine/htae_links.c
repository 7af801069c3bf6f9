/* htae_links.c: per-link bytes and busy time, and the link counters. A link's index is kept in
 * its SimGrid user data (index + 1) while the run lasts; routes are cached in an open-addressing
 * table keyed by the (source, destination) host pair, which also holds the pair's open flows. */
#include "htae_links.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"

/* One ended flow on a counted link: `rate` bytes/s over [t0, t1). */
typedef struct rate_span {
    double t0, t1, rate;
} rate_span;

typedef struct link_acc {
    sg_link_t link;
    double bytes, busy_s, since; /* since: when active last became non-zero */
    int active;                  /* flows in flight on the link */
    int counted;                 /* its counter is recorded */
    rate_span *spans;            /* counted: the flows that ended on it */
    size_t n_spans, cap_spans;
} link_acc;

typedef struct route_slot {
    sg_host_t src, dst; /* src NULL: empty slot */
    int off;            /* into pool: length, then link indices */
    int counted;        /* counting: links of the route that are counted */
    int open;           /* counting: first open flow on the pair (index + 1), 0 none */
    double latency;     /* counting: the route's latency */
} route_slot;

/* A flow in flight (counting), until its end. */
typedef struct open_flow {
    sg_actor_t actor; /* the actor that started it, and will end it */
    double start, bytes;
    int batch; /* its parallel task (index + 1) */
    int next;  /* next open flow of the pair, or next free record (index + 1), 0 none */
} open_flow;

/* The flows one actor started at one instant, none ended since: one parallel task, whose bytes
 * move after the largest latency of its edges' routes (ptask_L07). */
typedef struct flow_batch {
    sg_actor_t actor;
    double at, latency;
    int open; /* its flows in flight */
    int next; /* next free record (index + 1), 0 none */
} flow_batch;

/* An actor's latest batch, in an open-addressing table keyed by the actor. */
typedef struct actor_slot {
    sg_actor_t actor; /* NULL: empty */
    int batch;        /* index + 1, 0 none */
} actor_slot;

struct htae_links {
    link_acc *acc;
    int n_acc;
    size_t cap_acc;
    route_slot *slots;
    size_t n_slots, used; /* n_slots a power of two */
    int *pool;
    size_t n_pool, cap_pool;
    xbt_dynar_t scratch;
    /* Counters (htae_links_count): off unless counting. */
    int counting, count_all, marking;
    sg_host_t *selected; /* count_all 0: the listed GPUs' hosts, sorted by address */
    int n_selected;
    open_flow *flows;
    size_t n_flows, cap_flows;
    int free_flow; /* first free record (index + 1), 0 none */
    flow_batch *batches;
    size_t n_batches, cap_batches;
    int free_batch;
    actor_slot *actors;
    size_t n_actor_slots, used_actors; /* a power of two (or 0) */
    /* Snapshots: snapshot k holds (bytes, busy) of links [0, snap_n[k]) at snap_vals[snap_off[k]] */
    double *snap_t, *snap_vals;
    size_t *snap_off;
    int *snap_n;
    int n_snaps, cap_snaps;
    size_t n_vals, cap_vals;
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
    L->acc[L->n_acc].counted = L->count_all;
    sg_link_set_data(l, (void *)(intptr_t)(L->n_acc + 1));
    return L->n_acc++;
}

static int by_address(const void *pa, const void *pb)
{
    const sg_host_t *ha = pa, *hb = pb;
    uintptr_t a = (uintptr_t)(*ha), b = (uintptr_t)(*hb);
    return a < b ? -1 : a > b;
}

static int is_selected(const htae_links *L, sg_host_t h)
{
    return bsearch(&h, L->selected, (size_t)L->n_selected, sizeof h, by_address) != NULL;
}

/* Counting: the route's counted links (and, selecting GPUs, the check that a route from or to
 * one of them has all its links counted) and its latency. */
static void count_route(htae_links *L, route_slot *s)
{
    const int *r = &L->pool[s->off];
    s->counted = 0;
    for (int k = 1; k <= r[0]; k++)
        s->counted += L->acc[r[k]].counted;
    s->latency = cluster_host_route_latency(s->src, s->dst);
    /* htae_links.h: every flow from or to a listed GPU runs on a route htae_links_count marked */
    assert(L->count_all || s->counted == r[0] ||
           (!is_selected(L, s->src) && !is_selected(L, s->dst)));
}

/* The slot of (a, b), its route in pool[off] (length, then link indices) computed once per
 * pair. The pointer holds until the next call (the table may grow). */
static route_slot *slot_of(htae_links *L, sg_host_t a, sg_host_t b)
{
    route_slot *s = find_slot(L->slots, L->n_slots, a, b);
    if (s->src)
        return s;
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
    if (L->counting && !L->marking) /* marking counts its slots when the marks are final */
        count_route(L, s);
    if (++L->used * 2 > L->n_slots) {
        grow_slots(L);
        s = find_slot(L->slots, L->n_slots, a, b);
    }
    return s;
}

/* Mark the links of the route (a, b) counted. */
static void mark_route(htae_links *L, sg_host_t a, sg_host_t b)
{
    if (a == b)
        return;
    const route_slot *s = slot_of(L, a, b);
    const int *r = &L->pool[s->off];
    for (int k = 1; k <= r[0]; k++)
        L->acc[r[k]].counted = 1;
}

void htae_links_count(htae_links *L, const exec_graph *g, const sg_host_t *hosts,
                      const unsigned char *ranks)
{
    assert(!L->counting && L->used == 0);
    if (!ranks)
        return;
    L->counting = 1;
    L->selected = xmalloc((size_t)g->n_ranks * sizeof *L->selected);
    for (int r = 0; r < g->n_ranks; r++)
        if (ranks[r])
            L->selected[L->n_selected++] = hosts[r];
    if (L->n_selected == g->n_ranks) {
        L->count_all = 1; /* no route to mark: every link is counted as it is met */
        return;
    }
    qsort(L->selected, (size_t)L->n_selected, sizeof *L->selected, by_address);
    L->marking = 1;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->kind != TASK_TRANSFER)
            continue;
        if (ranks[k->rank] || ranks[k->peer])
            mark_route(L, hosts[k->rank], hosts[k->peer]);
        const int32_t *pr;
        for (int i = 0, n = graph_companions(g, t, &pr); i < n; i++)
            if (ranks[pr[2 * i]] || ranks[pr[2 * i + 1]])
                mark_route(L, hosts[pr[2 * i]], hosts[pr[2 * i + 1]]);
    }
    for (uint32_t i = 0; i < g->n_groups; i++) {
        const int32_t *m = &g->group_ranks[g->groups[i].first];
        uint32_t n = g->groups[i].n;
        for (uint32_t a = 0; a < n; a++) {
            if (!ranks[m[a]])
                continue;
            for (uint32_t b = 0; b < n; b++) { /* ring and tree edges join group members */
                mark_route(L, hosts[m[a]], hosts[m[b]]);
                mark_route(L, hosts[m[b]], hosts[m[a]]);
            }
        }
    }
    L->marking = 0;
    for (size_t i = 0; i < L->n_slots; i++) /* the slots marking made, with the final marks */
        if (L->slots[i].src)
            count_route(L, &L->slots[i]);
}

/* A free record of a pool of `size`-byte records chained by an int `next` at offset `next_off`
 * (index + 1): the free list's head, or a new one. */
static int pool_take(void *items_ptr, size_t size, size_t next_off, size_t *n, size_t *cap,
                     int *free_head)
{
    char **items = items_ptr;
    int i = *free_head;
    if (i) {
        memcpy(free_head, *items + (size_t)(i - 1) * size + next_off, sizeof *free_head);
        return i;
    }
    xgrow(items, size, *n + 1, cap);
    return (int)++*n;
}

static size_t actor_hash(sg_actor_t a)
{
    uint64_t h = (uint64_t)(uintptr_t)a * 0x9E3779B97F4A7C15ull;
    return (size_t)(h ^ h >> 31);
}

static actor_slot *find_actor(actor_slot *slots, size_t n_slots, sg_actor_t a)
{
    size_t i = actor_hash(a) & (n_slots - 1);
    while (slots[i].actor && slots[i].actor != a)
        i = (i + 1) & (n_slots - 1);
    return &slots[i];
}

/* The calling actor's batch for a flow it starts at `now` on a route of `latency`: the one it
 * started at this instant if none of its flows ended since, else a new one. */
static int batch_of(htae_links *L, double now, double latency)
{
    sg_actor_t self = sg_actor_self();
    if ((L->used_actors + 1) * 2 > L->n_actor_slots) {
        size_t n = L->n_actor_slots ? 2 * L->n_actor_slots : 64;
        actor_slot *t = xcalloc(n, sizeof *t);
        for (size_t i = 0; i < L->n_actor_slots; i++)
            if (L->actors[i].actor)
                *find_actor(t, n, L->actors[i].actor) = L->actors[i];
        free(L->actors);
        L->actors = t;
        L->n_actor_slots = n;
    }
    actor_slot *a = find_actor(L->actors, L->n_actor_slots, self);
    if (!a->actor) {
        a->actor = self;
        L->used_actors++;
    }
    flow_batch *b = a->batch ? &L->batches[a->batch - 1] : NULL;
    if (!b || b->actor != self || b->at != now || b->open == 0) { /* freed, reused, or done */
        a->batch = pool_take(&L->batches, sizeof *L->batches, offsetof(flow_batch, next),
                             &L->n_batches, &L->cap_batches, &L->free_batch);
        b = &L->batches[a->batch - 1];
        *b = (flow_batch){self, now, 0.0, 0, 0};
    }
    if (latency > b->latency)
        b->latency = latency;
    b->open++;
    return a->batch;
}

/* A flow starts on the route of s. */
static void flow_start(htae_links *L, route_slot *s, double bytes, double now)
{
    const int *r = &L->pool[s->off];
    for (int k = 1; k <= r[0]; k++) {
        link_acc *a = &L->acc[r[k]];
        a->bytes += bytes;
        if (a->active++ == 0)
            a->since = now;
    }
    if (!L->counting)
        return;
    int batch = batch_of(L, now, s->latency); /* before taking f: it may move L->flows */
    int i = pool_take(&L->flows, sizeof *L->flows, offsetof(open_flow, next), &L->n_flows,
                      &L->cap_flows, &L->free_flow);
    L->flows[i - 1] = (open_flow){sg_actor_self(), now, bytes, batch, s->open};
    s->open = i;
}

/* Close the open flow of the calling actor on s (htae_links.h: the flows one actor has open on
 * one pair belong to one parallel task, so any of them will do), returning it. */
static open_flow close_flow(htae_links *L, route_slot *s)
{
    sg_actor_t self = sg_actor_self();
    int *link = &s->open;
    while (*link && L->flows[*link - 1].actor != self)
        link = &L->flows[*link - 1].next;
    assert(*link != 0); /* a flow ends in the actor that started it */
    int i = *link;
    open_flow f = L->flows[i - 1];
    for (int j = f.next; j; j = L->flows[j - 1].next)
        assert(L->flows[j - 1].actor != self || L->flows[j - 1].batch == f.batch);
    *link = f.next;
    L->flows[i - 1].next = L->free_flow;
    L->free_flow = i;
    return f;
}

/* The ended flow's bytes over [t0, now) on each counted link of its route, t0 when its task's
 * latency ran out. SimGrid ends a flow no earlier (to its timing precision, about 1e-9 s: a flow
 * of fewer bytes may end as the latency runs out): then over its whole life, and a flow of no
 * duration at all moves nothing a counter can show. */
static void count_flow(htae_links *L, route_slot *s, double now)
{
    open_flow f = close_flow(L, s);
    flow_batch *b = &L->batches[f.batch - 1];
    double t0 = f.start + b->latency;
    assert(b->open > 0);
    if (--b->open == 0) {
        b->next = L->free_batch;
        L->free_batch = f.batch;
    }
    if (now <= t0)
        t0 = f.start;
    if (now <= t0 || s->counted == 0)
        return;
    rate_span span = {t0, now, f.bytes / (now - t0)};
    const int *r = &L->pool[s->off];
    for (int k = 1; k <= r[0]; k++) {
        link_acc *a = &L->acc[r[k]];
        if (!a->counted)
            continue;
        xgrow(&a->spans, sizeof *a->spans, a->n_spans + 1, &a->cap_spans);
        a->spans[a->n_spans++] = span;
    }
}

static void flow_end(htae_links *L, route_slot *s, double now)
{
    const int *r = &L->pool[s->off];
    for (int k = 1; k <= r[0]; k++) {
        link_acc *a = &L->acc[r[k]];
        assert(a->active > 0 && now >= a->since);
        if (--a->active == 0)
            a->busy_s += now - a->since;
    }
    if (L->counting)
        count_flow(L, s, now);
}

void htae_links_start(htae_links *L, sg_host_t src, sg_host_t dst, double bytes, double now)
{
    assert(src != dst && bytes > 0.0);
    flow_start(L, slot_of(L, src, dst), bytes, now);
}

void htae_links_end(htae_links *L, sg_host_t src, sg_host_t dst, double now)
{
    flow_end(L, slot_of(L, src, dst), now);
}

const int *htae_links_route(htae_links *L, sg_host_t src, sg_host_t dst, int *len)
{
    assert(src != dst);
    const route_slot *s = slot_of(L, src, dst);
    *len = L->pool[s->off];
    return &L->pool[s->off + 1];
}

double htae_links_bandwidth(const htae_links *L, int id)
{
    assert(id >= 0 && id < L->n_acc);
    return sg_link_get_bandwidth(L->acc[id].link);
}

int htae_links_shared(const htae_links *L, int id)
{
    assert(id >= 0 && id < L->n_acc);
    return sg_link_is_shared(L->acc[id].link);
}

sg_link_t htae_links_link(const htae_links *L, int id)
{
    assert(id >= 0 && id < L->n_acc);
    return L->acc[id].link;
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

int htae_link_stat_cmp(const void *pa, const void *pb)
{
    const htae_link_stat *a = pa, *b = pb;
    if (a->busy_s != b->busy_s)
        return a->busy_s > b->busy_s ? -1 : 1;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* A change of a counter at t: d bytes/s, n flows. */
typedef struct rate_event {
    double t, d;
    int n;
} rate_event;

/* By time, then change: links with the same spans sum them in the same order, so their
 * counters come out bit for bit alike (the trace merges such links into one track). */
static int by_time(const void *pa, const void *pb)
{
    const rate_event *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    if (a->d != b->d)
        return a->d < b->d ? -1 : 1;
    return a->n - b->n;
}

/* The link's counter from its spans: a point at each time the sum changes, 0 when no flow is
 * on (exactly: the running sum's rounding is dropped there). */
static void collect_counter(const link_acc *a, htae_link_stat *s)
{
    size_t n = 2 * a->n_spans;
    if (n == 0)
        return;
    rate_event *ev = xmalloc(n * sizeof *ev);
    for (size_t i = 0; i < a->n_spans; i++) {
        ev[2 * i] = (rate_event){a->spans[i].t0, a->spans[i].rate, 1};
        ev[2 * i + 1] = (rate_event){a->spans[i].t1, -a->spans[i].rate, -1};
    }
    qsort(ev, n, sizeof *ev, by_time);
    s->rate = xmalloc(n * sizeof *s->rate);
    double sum = 0.0;
    int flows = 0;
    for (size_t i = 0; i < n;) {
        double t = ev[i].t;
        for (; i < n && ev[i].t == t; i++) {
            sum += ev[i].d;
            flows += ev[i].n;
        }
        assert(flows >= 0);
        double v = flows == 0 || sum < 0.0 ? 0.0 : sum;
        if (flows == 0)
            sum = 0.0;
        if (s->n_rate == 0 || s->rate[s->n_rate - 1].rate != v)
            s->rate[s->n_rate++] = (htae_rate_point){t, v};
    }
    assert(flows == 0 && s->rate[s->n_rate - 1].rate == 0.0);
    s->rate = xreallocarray(s->rate, (size_t)s->n_rate, sizeof *s->rate);
    free(ev);
}

void htae_links_snapshot(htae_links *L, double now)
{
    if (L->n_snaps == L->cap_snaps) {
        L->cap_snaps = L->cap_snaps ? 2 * L->cap_snaps : 64;
        L->snap_t = xreallocarray(L->snap_t, (size_t)L->cap_snaps, sizeof *L->snap_t);
        L->snap_off = xreallocarray(L->snap_off, (size_t)L->cap_snaps, sizeof *L->snap_off);
        L->snap_n = xreallocarray(L->snap_n, (size_t)L->cap_snaps, sizeof *L->snap_n);
    }
    size_t need = L->n_vals + 2 * (size_t)L->n_acc;
    if (need > L->cap_vals) {
        L->cap_vals = need > 2 * L->cap_vals ? need : 2 * L->cap_vals;
        L->snap_vals = xreallocarray(L->snap_vals, L->cap_vals, sizeof *L->snap_vals);
    }
    int k = L->n_snaps++;
    L->snap_t[k] = now;
    L->snap_off[k] = L->n_vals;
    L->snap_n[k] = L->n_acc;
    for (int i = 0; i < L->n_acc; i++) {
        const link_acc *a = &L->acc[i];
        L->snap_vals[L->n_vals++] = a->bytes;
        L->snap_vals[L->n_vals++] = a->busy_s + (a->active > 0 ? now - a->since : 0.0);
    }
}

/* The snapshots into out, for the links in out->links (sorted). */
static void collect_snapshots(const htae_links *L, htae_result *out)
{
    if (L->n_snaps == 0)
        return;
    size_t n = (size_t)L->n_snaps * (size_t)out->n_links;
    out->n_snaps = L->n_snaps;
    out->snap_t = xmalloc((size_t)L->n_snaps * sizeof *out->snap_t);
    memcpy(out->snap_t, L->snap_t, (size_t)L->n_snaps * sizeof *out->snap_t);
    out->snap_bytes = xcalloc(n + 1, sizeof *out->snap_bytes);
    out->snap_busy = xcalloc(n + 1, sizeof *out->snap_busy);
    for (int k = 0; k < L->n_snaps; k++)
        for (int j = 0; j < out->n_links; j++) {
            int i = out->links[j].index;
            if (i >= L->snap_n[k])
                continue; /* not used yet then */
            size_t at = (size_t)k * (size_t)out->n_links + (size_t)j;
            out->snap_bytes[at] = L->snap_vals[L->snap_off[k] + 2 * (size_t)i];
            out->snap_busy[at] = L->snap_vals[L->snap_off[k] + 2 * (size_t)i + 1];
        }
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
        s->index = i;
        collect_counter(a, s);
    }
    qsort(out->links, (size_t)out->n_links, sizeof *out->links, htae_link_stat_cmp);
    collect_snapshots(L, out);
}

void htae_links_free(htae_links *L)
{
    if (!L)
        return;
    for (int i = 0; i < L->n_acc; i++) {
        sg_link_set_data(L->acc[i].link, NULL);
        free(L->acc[i].spans);
    }
    xbt_dynar_free(&L->scratch);
    free(L->acc);
    free(L->slots);
    free(L->pool);
    free(L->selected);
    free(L->flows);
    free(L->batches);
    free(L->actors);
    free(L->snap_t);
    free(L->snap_vals);
    free(L->snap_off);
    free(L->snap_n);
    free(L);
}
