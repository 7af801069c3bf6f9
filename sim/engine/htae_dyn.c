/* htae_dyn.c: collectives alone on their links once their foreign activities ended
 * (htae_dyn.h). */
#include "htae_dyn.h"

#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "htae_alone.h"
#include "htae_pattern.h"

/* A link and one owner of flows that may cross it: group gi (< n_groups), or transfer task t
 * (n_groups + t); the list visit fills (htae_coll_visit_links' visit): each visited link with
 * `owner`, fatpipe set once a link that is not shared was met. */
typedef struct link_owner {
    sg_link_t link;
    uint32_t owner;
} link_owner;

typedef struct owner_list {
    link_owner *items;
    size_t n, cap;
    uint32_t owner;
    int fatpipe;
} owner_list;

static void visit(sg_link_t link, void *arg)
{
    owner_list *l = arg;
    l->fatpipe |= !sg_link_is_shared(link);
    xgrow(&l->items, sizeof *l->items, l->n + 1, &l->cap);
    l->items[l->n++] = (link_owner){link, l->owner};
}

static int by_link_then_owner(const void *a, const void *b)
{
    const link_owner *x = a, *y = b;
    uintptr_t lx = (uintptr_t)x->link, ly = (uintptr_t)y->link;
    if (lx != ly)
        return (lx > ly) - (lx < ly);
    return (x->owner > y->owner) - (x->owner < y->owner);
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Each group's links (its collectives' and their companion groups'), and which groups may run
 * timed: collectives all on one stream, none an all-to-all-v, no fatpipe. (Over one SimGrid
 * task's hosts, a collective is timed block by block when the blocks' lone rates fit:
 * htae_coll_run_blocks_timed.) */
static void group_links(const exec_graph *g, coll_group **groups, owner_list *l, uint8_t *eligible,
                        uint8_t *spread, uint32_t *n_colls)
{
    int8_t *state = xcalloc(g->n_groups + 1, 1); /* 0 no collective, 1 fits, -1 does not */
    uint8_t *stream = xcalloc(g->n_groups + 1, 1);
    int16_t *on = xmalloc((g->n_groups + 1) * sizeof *on); /* the stream of its first, -1 */
    for (uint32_t gi = 0; gi <= g->n_groups; gi++)
        on[gi] = -1;
    uint32_t *seen = xcalloc((size_t)g->n_groups * 5 + 1, sizeof *seen); /* owner + 1 */
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const graph_collective *col = &g->colls[c];
        uint32_t gi = (uint32_t)col->group;
        const graph_group *gr = &g->groups[gi];
        n_colls[gi]++;
        int s = g->tasks[g->coll_tasks[col->first_task]].stream;
        if (on[gi] < 0)
            on[gi] = (int16_t)s;
        for (uint32_t m = 0; m < gr->tasked; m++) /* two of its collectives may overlap */
            spread[gi] |= g->tasks[g->coll_tasks[col->first_task + m]].stream != on[gi];
        int fits = !col->matrix && (state[gi] == 0 || stream[gi] == s);
        for (uint32_t m = 1; fits && m < gr->tasked; m++)
            fits = g->tasks[g->coll_tasks[col->first_task + m]].stream == s;
        const int32_t *comp;
        int n_comp = graph_coll_companions(g, c, &comp);
        if (!fits)
            state[gi] = -1;
        else if (state[gi] == 0) {
            state[gi] = 1;
            stream[gi] = (uint8_t)s;
        }
        /* each (group, kind) visited once for its owner: companion groups too */
        l->owner = gi;
        l->fatpipe = 0;
        for (int i = -1; i < n_comp; i++) {
            uint32_t gj = i < 0 ? gi : (uint32_t)comp[i];
            size_t slot = (size_t)gj * 5 + (col->matrix ? 4 : (size_t)col->kind);
            if (seen[slot] == gi + 1)
                continue;
            seen[slot] = gi + 1;
            htae_coll_visit_links(groups[gj], col->kind, i < 0 ? col->matrix : NULL, visit, l);
        }
        if (l->fatpipe)
            state[gi] = -1;
    }
    for (uint32_t gi = 0; gi < g->n_groups; gi++)
        eligible[gi] = state[gi] == 1;
    free(seen);
    free(on);
    free(stream);
    free(state);
}

/* Every transfer class's links (its own pair and its companion pairs; owner n_groups + class),
 * a route looked up once per pair. */
static void transfer_links(const exec_graph *g, const htae_tclass *tc, const sg_host_t *hosts,
                           owner_list *l)
{
    uint64_t *keys = NULL; /* pair (src, dst) << 0, class: sorted by pair */
    uint32_t *task = NULL;
    size_t n = 0, cap = 0, cap_t = 0;
    for (uint32_t c = 0; c < tc->n; c++) {
        uint32_t t = tc->rep[c];
        const graph_task *k = &g->tasks[t];
        const int32_t *pr;
        int np = graph_companions(g, t, &pr);
        for (int i = -1; i < np; i++) {
            uint32_t a = (uint32_t)(i < 0 ? k->rank : pr[2 * i]);
            uint32_t b = (uint32_t)(i < 0 ? k->peer : pr[2 * i + 1]);
            xgrow(&keys, sizeof *keys, n + 1, &cap);
            xgrow(&task, sizeof *task, n + 1, &cap_t);
            keys[n] = (uint64_t)a << 32 | b;
            task[n++] = c;
        }
    }
    uint64_t *packed = xmalloc((n + 1) * 2 * sizeof *packed);
    for (size_t i = 0; i < n; i++) {
        packed[2 * i] = keys[i];
        packed[2 * i + 1] = task[i];
    }
    qsort(packed, n, 2 * sizeof *packed, by_u64); /* by pair (first word) */
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && packed[2 * j] == packed[2 * i])
            j++;
        xbt_dynar_reset(d);
        sg_host_get_route(hosts[packed[2 * i] >> 32], hosts[(uint32_t)packed[2 * i]], d);
        for (size_t q = i; q < j; q++) {
            l->owner = g->n_groups + (uint32_t)packed[2 * q + 1];
            for (unsigned r = 0; r < xbt_dynar_length(d); r++)
                visit(xbt_dynar_get_as(d, r, sg_link_t), l);
        }
        i = j;
    }
    xbt_dynar_free(&d);
    free(packed);
    free(keys);
    free(task);
}

/* Groups' foreign owners: for each group, the distinct other owners on its links, as pairs
 * (group << 32 | owner) into *out; returns their count. */
static size_t foreign_pairs(const owner_list *l, uint32_t n_groups, uint64_t **out)
{
    /* runs of one link: run r is l->items[run[r] .. run[r + 1]) */
    size_t *run = xmalloc((l->n + 2) * sizeof *run), n_runs = 0;
    for (size_t i = 0; i < l->n; i++)
        if (i == 0 || l->items[i].link != l->items[i - 1].link)
            run[n_runs++] = i;
    run[n_runs] = l->n;
    /* each group's runs */
    uint32_t *first = xcalloc((size_t)n_groups + 2, sizeof *first);
    for (size_t r = 0; r < n_runs; r++)
        for (size_t i = run[r]; i < run[r + 1]; i++)
            if (l->items[i].owner < n_groups &&
                (i == run[r] || l->items[i].owner != l->items[i - 1].owner))
                first[l->items[i].owner + 1]++;
    for (uint32_t gi = 0; gi < n_groups; gi++)
        first[gi + 1] += first[gi];
    uint32_t *runs_of = xmalloc(((size_t)first[n_groups] + 1) * sizeof *runs_of);
    uint32_t *fill = xcalloc((size_t)n_groups + 1, sizeof *fill);
    for (size_t r = 0; r < n_runs; r++)
        for (size_t i = run[r]; i < run[r + 1]; i++)
            if (l->items[i].owner < n_groups &&
                (i == run[r] || l->items[i].owner != l->items[i - 1].owner))
                runs_of[first[l->items[i].owner] + fill[l->items[i].owner]++] = (uint32_t)r;
    free(fill);
    uint32_t max_owner = 0;
    for (size_t i = 0; i < l->n; i++)
        max_owner = l->items[i].owner > max_owner ? l->items[i].owner : max_owner;
    uint32_t *mark = xcalloc((size_t)max_owner + 2, sizeof *mark);
    uint64_t *pairs = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t gi = 0; gi < n_groups; gi++)
        for (uint32_t k = first[gi]; k < first[gi + 1]; k++) {
            size_t r = runs_of[k];
            for (size_t i = run[r]; i < run[r + 1]; i++) {
                uint32_t o = l->items[i].owner;
                if (o == gi || mark[o] == gi + 1)
                    continue;
                mark[o] = gi + 1;
                xgrow(&pairs, sizeof *pairs, n + 1, &cap);
                pairs[n++] = (uint64_t)gi << 32 | o;
            }
        }
    free(mark);
    free(runs_of);
    free(first);
    free(run);
    *out = pairs;
    return n;
}

/* CSR from pairs (key << 32 | value) sorted by key: first[0 .. n_keys], list. */
static void csr(const uint64_t *pairs, size_t n, uint32_t n_keys, uint32_t **first, uint32_t **list)
{
    *first = xcalloc((size_t)n_keys + 2, sizeof **first);
    *list = xmalloc((n + 1) * sizeof **list);
    for (size_t i = 0; i < n; i++)
        (*first)[(pairs[i] >> 32) + 1]++;
    for (uint32_t k = 0; k < n_keys; k++)
        (*first)[k + 1] += (*first)[k];
    for (size_t i = 0; i < n; i++)
        (*list)[i] = (uint32_t)pairs[i];
}

/* Each link of the sorted list once, with its one owner or HTAE_DYN_OWNERS: also for a group
 * whose collectives are on more than one stream (spread), two of which may cross it at once. */
static void link_owners(htae_dyn *d, const owner_list *l, const uint8_t *spread)
{
    d->o_link = xmalloc((l->n + 1) * sizeof *d->o_link);
    d->o_owner = xmalloc((l->n + 1) * sizeof *d->o_owner);
    for (size_t i = 0; i < l->n;) {
        size_t j = i + 1;
        uint32_t owner = l->items[i].owner;
        for (; j < l->n && l->items[j].link == l->items[i].link; j++)
            if (l->items[j].owner != owner)
                owner = HTAE_DYN_OWNERS;
        if (owner < d->n_groups && spread[owner])
            owner = HTAE_DYN_OWNERS;
        d->o_link[d->n_o] = l->items[i].link;
        d->o_owner[d->n_o++] = owner;
        i = j;
    }
}

int htae_dyn_link_theirs(const htae_dyn *d, sg_link_t link, const int32_t *owners, int n)
{
    size_t lo = 0, hi = d->n_o;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)d->o_link[mid] < (uintptr_t)link)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == d->n_o || d->o_link[lo] != link || d->o_owner[lo] == HTAE_DYN_OWNERS)
        return 0;
    for (int k = 0; k < n; k++)
        if (owners[k] >= 0 && (uint32_t)owners[k] == d->o_owner[lo])
            return 1;
    return 0;
}

void htae_dyn_plan(htae_dyn *d, htae_alone *a, const exec_graph *g, const htae_tclass *tc,
                   coll_group **groups, const sg_host_t *hosts)
{
    memset(d, 0, sizeof *d);
    d->n_groups = g->n_groups;
    d->eligible = xcalloc(g->n_groups + 1, 1);
    d->foreign = xcalloc(g->n_groups + 1, sizeof *d->foreign);
    d->ended = xcalloc(g->n_groups + 1, sizeof *d->ended);
    uint32_t *n_colls = xcalloc(g->n_groups + 1, sizeof *n_colls);
    owner_list l = {0};
    uint8_t *spread = xcalloc(g->n_groups + 1, 1);
    group_links(g, groups, &l, d->eligible, spread, n_colls);
    transfer_links(g, tc, hosts, &l);
    d->t_class = tc->of;
    if (l.n)
        qsort(l.items, l.n, sizeof *l.items, by_link_then_owner);
    link_owners(d, &l, spread);
    free(spread);
    uint64_t *pairs;
    size_t n = foreign_pairs(&l, g->n_groups, &pairs);
    free(l.items);
    /* group -> foreign count; then swap to (owner << 32 | group) for the notify lists */
    size_t n_t = 0, n_g = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t gi = (uint32_t)(pairs[i] >> 32), o = (uint32_t)pairs[i];
        d->foreign[gi] += o < g->n_groups ? n_colls[o] : tc->size[o - g->n_groups];
    }
    uint64_t *by_t = xmalloc((n + 1) * sizeof *by_t), *by_g = xmalloc((n + 1) * sizeof *by_g);
    for (size_t i = 0; i < n; i++) {
        uint32_t gi = (uint32_t)(pairs[i] >> 32), o = (uint32_t)pairs[i];
        if (o < g->n_groups)
            by_g[n_g++] = (uint64_t)o << 32 | gi;
        else
            by_t[n_t++] = (uint64_t)(o - g->n_groups) << 32 | gi;
    }
    free(pairs);
    qsort(by_t, n_t, sizeof *by_t, by_u64);
    qsort(by_g, n_g, sizeof *by_g, by_u64);
    csr(by_t, n_t, tc->n, &d->t_first, &d->t_list);
    csr(by_g, n_g, g->n_groups, &d->g_first, &d->g_list);
    for (uint32_t c = 0; c < g->n_colls; c++) { /* alone from the start: timed, never lean */
        uint32_t gi = (uint32_t)g->colls[c].group;
        if (d->eligible[gi] && d->foreign[gi] == 0)
            a->lean[c] = 0;
    }
    free(by_t);
    free(by_g);
    free(n_colls);
}

int htae_dyn_now(const htae_dyn *d, uint32_t gi)
{
    return d->eligible && d->eligible[gi] && d->ended[gi] == d->foreign[gi];
}

int htae_dyn_always(const htae_dyn *d, uint32_t gi)
{
    return d->eligible && d->eligible[gi] && d->foreign[gi] == 0;
}

void htae_dyn_transfer_ended(htae_dyn *d, uint32_t t)
{
    if (!d->t_first)
        return;
    uint32_t c = d->t_class[t];
    for (uint32_t k = d->t_first[c]; k < d->t_first[c + 1]; k++)
        d->ended[d->t_list[k]]++;
}

void htae_dyn_collective_ended(htae_dyn *d, uint32_t gi)
{
    if (!d->g_first)
        return;
    for (uint32_t k = d->g_first[gi]; k < d->g_first[gi + 1]; k++)
        d->ended[d->g_list[k]]++;
}

void htae_dyn_free(htae_dyn *d)
{
    free(d->eligible);
    free(d->foreign);
    free(d->ended);
    free(d->t_first);
    free(d->t_list);
    free(d->g_first);
    free(d->g_list);
    free(d->o_link);
    free(d->o_owner);
    memset(d, 0, sizeof *d);
}
