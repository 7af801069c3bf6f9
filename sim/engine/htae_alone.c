/* htae_alone.c: which all-to-alls of folded expert groups run alone on their stand-ins' links
 * (see htae_alone.h). Ordering is decided on the graph in one pass forward: for each task, the
 * latest all-to-all of each candidate group among its ancestors. A candidate's all-to-alls
 * follow one another (one stream of one rank), so all-to-all i precedes collective D exactly
 * when D's latest is i or later. */
#include "htae_alone.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"

typedef struct graph_walk {
    const exec_graph *g;
    uint32_t *pos;  /* [n_tasks] place in its stream */
    uint32_t *item; /* topological order: a task id, or n_tasks + c for collective c */
    uint32_t n_items;
} graph_walk;

/* The next task of t's stream, or UINT32_MAX. */
static uint32_t stream_next(const graph_walk *w, uint32_t t)
{
    const graph_task *k = &w->g->tasks[t];
    uint32_t si = (uint32_t)k->rank * (uint32_t)w->g->n_streams + k->stream;
    uint32_t next = w->g->stream_first[si] + w->pos[t] + 1;
    return next < w->g->stream_first[si + 1] ? w->g->stream_tasks[next] : UINT32_MAX;
}

static void release(const graph_walk *w, uint32_t t, uint32_t *indeg, uint32_t *queue,
                    uint32_t *tail)
{
    const graph_task *k = &w->g->tasks[t];
    for (uint32_t j = 0; j < k->n_succ; j++) {
        uint32_t s = w->g->succ[k->succ_first + j];
        if (--indeg[s] == 0)
            queue[(*tail)++] = s;
    }
    uint32_t s = stream_next(w, t);
    if (s != UINT32_MAX && --indeg[s] == 0)
        queue[(*tail)++] = s;
}

/* Kahn's order (as graph_finalize checks it), a collective one item once all its tasked
 * members are ready. */
static void walk_init(graph_walk *w, const exec_graph *g)
{
    uint32_t n = g->n_tasks;
    w->g = g;
    w->pos = xmalloc((size_t)n * sizeof *w->pos);
    for (uint32_t s = 0; s < (uint32_t)g->n_ranks * (uint32_t)g->n_streams; s++)
        for (uint32_t i = g->stream_first[s]; i < g->stream_first[s + 1]; i++)
            w->pos[g->stream_tasks[i]] = i - g->stream_first[s];
    w->item = xmalloc(((size_t)n + g->n_colls) * sizeof *w->item);
    uint32_t *indeg = xmalloc((size_t)n * sizeof *indeg),
             *queue = xmalloc((size_t)n * sizeof *queue);
    uint32_t *ready = xcalloc((size_t)g->n_colls, sizeof *ready);
    uint32_t head = 0, tail = 0;
    w->n_items = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((indeg[i] = g->tasks[i].n_pred + (w->pos[i] > 0)) == 0)
            queue[tail++] = i;
    while (head < tail) {
        uint32_t t = queue[head++];
        const graph_task *k = &g->tasks[t];
        if (k->kind != TASK_COLLECTIVE) {
            w->item[w->n_items++] = t;
            release(w, t, indeg, queue, &tail);
            continue;
        }
        const graph_collective *c = &g->colls[k->coll];
        uint32_t tasked = g->groups[c->group].tasked;
        if (++ready[k->coll] < tasked)
            continue;
        w->item[w->n_items++] = n + (uint32_t)k->coll;
        for (uint32_t m = 0; m < tasked; m++)
            release(w, g->coll_tasks[c->first_task + m], indeg, queue, &tail);
    }
    assert(head == n); /* finalize checked the graph acyclic */
    free(indeg);
    free(queue);
    free(ready);
}

static void walk_free(graph_walk *w)
{
    free(w->pos);
    free(w->item);
}

/* Forward: latest[t * nc + k] the index (1.., in stream order) of candidate k's latest
 * all-to-all among t's ancestors (0: none); for each collective, the same over its members'
 * ancestors into coll_latest[c * nc + k]. index_of[c]: candidate all-to-all c's own index. */
static void push_latest(const graph_walk *w, uint32_t t, const uint32_t *v, uint32_t nc,
                        uint32_t *latest)
{
    const graph_task *k = &w->g->tasks[t];
    for (uint32_t j = 0; j <= k->n_succ; j++) {
        uint32_t s = j < k->n_succ ? w->g->succ[k->succ_first + j] : stream_next(w, t);
        if (s == UINT32_MAX)
            continue;
        for (uint32_t l = 0; l < nc; l++)
            if (v[l] > latest[(size_t)s * nc + l])
                latest[(size_t)s * nc + l] = v[l];
    }
}

static void forward(const graph_walk *w, uint32_t nc, const int32_t *cand_of,
                    const uint32_t *index_of, uint32_t *coll_latest)
{
    const exec_graph *g = w->g;
    uint32_t *latest = xcalloc((size_t)g->n_tasks * nc, sizeof *latest);
    uint32_t *v = xmalloc(nc * sizeof *v);
    for (uint32_t i = 0; i < w->n_items; i++) {
        uint32_t t = w->item[i];
        if (t < g->n_tasks) {
            push_latest(w, t, &latest[(size_t)t * nc], nc, latest);
            continue;
        }
        uint32_t c = t - g->n_tasks;
        const graph_collective *col = &g->colls[c];
        uint32_t tasked = g->groups[col->group].tasked;
        memset(v, 0, nc * sizeof *v);
        for (uint32_t m = 0; m < tasked; m++)
            for (uint32_t l = 0; l < nc; l++) {
                uint32_t x = latest[(size_t)g->coll_tasks[col->first_task + m] * nc + l];
                v[l] = x > v[l] ? x : v[l];
            }
        memcpy(&coll_latest[(size_t)c * nc], v, nc * sizeof *v);
        if (cand_of[col->group] >= 0)
            v[cand_of[col->group]] = index_of[c];
        for (uint32_t m = 0; m < tasked; m++)
            push_latest(w, g->coll_tasks[col->first_task + m], v, nc, latest);
    }
    free(v);
    free(latest);
}

typedef struct candidate {
    uint32_t group;
    uint8_t *others;          /* [n_groups]: groups with one of its stand-ins as a member */
    uint32_t *colls, n_colls; /* its all-to-alls */
    int ok;
} candidate;

void htae_link_set_add(sg_link_t link, void *set)
{
    htae_link_set *s = set;
    xgrow(&s->links, sizeof *s->links, s->n + 1, &s->cap);
    s->links[s->n++] = link;
}

static int by_pointer(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (const sg_link_t *)a, y = (uintptr_t) * (const sg_link_t *)b;
    return (x > y) - (x < y);
}

void htae_link_set_sort(htae_link_set *s)
{
    if (s->n)
        qsort(s->links, s->n, sizeof *s->links, by_pointer);
}

int htae_link_set_has(sg_link_t link, void *set)
{
    const htae_link_set *s = set;
    return s->n > 0 && bsearch(&link, s->links, s->n, sizeof *s->links, by_pointer) != NULL;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Candidates: groups with stand-ins whose collectives are all balanced all-to-alls on one
 * stream (so that they follow one another). Returns how many, into *out. */
static uint32_t find_candidates(const exec_graph *g, candidate **out)
{
    int8_t *state = xcalloc(g->n_groups, 1); /* 0 unseen, 1 fits, -1 does not */
    int8_t *stream = xcalloc(g->n_groups, 1);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const graph_collective *col = &g->colls[c];
        const graph_group *gr = &g->groups[col->group];
        int s = g->tasks[g->coll_tasks[col->first_task]].stream;
        int fits = gr->tasked < gr->n && col->kind == COLL_ALLTOALL && !col->matrix;
        if (!fits || (state[col->group] == 1 && stream[col->group] != s))
            state[col->group] = -1;
        else if (state[col->group] == 0) {
            state[col->group] = 1;
            stream[col->group] = (int8_t)s;
        }
    }
    candidate *cs = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t i = 0; i < g->n_groups; i++)
        if (state[i] == 1) {
            xgrow(&cs, sizeof *cs, n + 1, &cap);
            cs[n++] = (candidate){i, xcalloc(g->n_groups, 1), NULL, 0, 1};
        }
    free(stream);
    uint32_t *cand_of = xmalloc(g->n_groups * sizeof *cand_of);
    for (size_t k = 0; k < n; k++)
        cand_of[cs[k].group] = (uint32_t)k;
    for (uint32_t c = 0; c < g->n_colls; c++)
        if (state[g->colls[c].group] == 1)
            cs[cand_of[g->colls[c].group]].n_colls++;
    for (size_t k = 0; k < n; k++) {
        cs[k].colls = xmalloc(cs[k].n_colls * sizeof *cs[k].colls);
        cs[k].n_colls = 0;
    }
    for (uint32_t c = 0; c < g->n_colls; c++)
        if (state[g->colls[c].group] == 1) {
            candidate *k = &cs[cand_of[g->colls[c].group]];
            k->colls[k->n_colls++] = c;
        }
    free(cand_of);
    free(state);
    /* the groups other than itself holding one of its stand-ins */
    uint8_t *stand_in = xcalloc((size_t)g->n_ranks, 1);
    for (size_t k = 0; k < n; k++) {
        const graph_group *gr = &g->groups[cs[k].group];
        for (uint32_t m = gr->tasked; m < gr->n; m++)
            stand_in[g->group_ranks[gr->first + m]] = 1;
        for (uint32_t i = 0; i < g->n_groups; i++)
            for (uint32_t m = 0; i != cs[k].group && m < g->groups[i].n; m++)
                if (stand_in[g->group_ranks[g->groups[i].first + m]]) {
                    cs[k].others[i] = 1;
                    break;
                }
        for (uint32_t m = gr->tasked; m < gr->n; m++)
            stand_in[g->group_ranks[gr->first + m]] = 0;
    }
    free(stand_in);
    *out = cs;
    return (uint32_t)n;
}

/* Whether group G's collectives, in graph order (order[0 .. n)), chain: each shares a member
 * with the next, the two on that member's one stream (so the first ends before the next
 * starts). */
static int chains(const exec_graph *g, const uint32_t *order, uint32_t n)
{
    for (uint32_t i = 0; i + 1 < n; i++) {
        const graph_collective *a = &g->colls[order[i]], *b = &g->colls[order[i + 1]];
        uint32_t tasked = g->groups[a->group].tasked, m = 0;
        for (; m < tasked; m++)
            if (g->tasks[g->coll_tasks[a->first_task + m]].stream ==
                g->tasks[g->coll_tasks[b->first_task + m]].stream)
                break;
        if (m == tasked)
            return 0;
    }
    return 1;
}

typedef struct done_list {
    uint32_t *ids;
    size_t n, cap;
} done_list;

/* Candidate k's waits: for each all-to-all i (in order), the last collective of each group
 * holding its stand-ins (ord[j][0 .. n[j]), chained) that it does not precede. The lists
 * change only where some group's last one moves, so consecutive all-to-alls share one. */
static void add_waits(htae_alone *a, const candidate *cand, uint32_t k, const uint32_t *const *ord,
                      const uint32_t *n, uint32_t q, const uint32_t *coll_latest, uint32_t nc,
                      done_list *dl)
{
    uint32_t *d = xcalloc(q ? q : 1, sizeof *d); /* first of ord[j] that all-to-all i precedes */
    uint32_t at = 0, count = 0;
    for (uint32_t i = 1; i <= cand->n_colls; i++) {
        int moved = i == 1;
        for (uint32_t j = 0; j < q; j++)
            while (d[j] < n[j] && coll_latest[(size_t)ord[j][d[j]] * nc + k] < i) {
                d[j]++;
                moved = 1;
            }
        if (moved) {
            at = (uint32_t)dl->n;
            for (uint32_t j = 0; j < q; j++)
                if (d[j] > 0) {
                    xgrow(&dl->ids, sizeof *dl->ids, dl->n + 1, &dl->cap);
                    dl->ids[dl->n++] = ord[j][d[j] - 1];
                }
            count = (uint32_t)dl->n - at;
        }
        a->first[cand->colls[i - 1]] = at;
        a->count[cand->colls[i - 1]] = count;
    }
    free(d);
}

/* A transfer class's key: source, destination, companion pair set (-1 none). */
static void tclass_key(const exec_graph *g, uint32_t t, int32_t key[3])
{
    key[0] = g->tasks[t].rank;
    key[1] = g->tasks[t].peer;
    key[2] = g->companion && t < g->n_companion ? g->companion[t] : -1;
}

static uint64_t tclass_hash(const int32_t key[3])
{
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 3; i++)
        h = (h ^ (uint32_t)key[i]) * 0xBF58476D1CE4E5B9ull;
    return h ^ h >> 31;
}

void htae_tclass_make(htae_tclass *tc, const exec_graph *g)
{
    memset(tc, 0, sizeof *tc);
    tc->of = xmalloc(((size_t)g->n_tasks + 1) * sizeof *tc->of);
    uint32_t n_x = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        n_x += g->tasks[t].kind == TASK_TRANSFER;
    size_t mask = 15;
    while (mask + 1 < 2 * (size_t)n_x)
        mask = 2 * mask + 1;
    uint32_t *slot = xmalloc((mask + 1) * sizeof *slot); /* a class, UINT32_MAX: empty */
    for (size_t i = 0; i <= mask; i++)
        slot[i] = UINT32_MAX;
    size_t cap = 0, cap_s = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        tc->of[t] = UINT32_MAX;
        if (g->tasks[t].kind != TASK_TRANSFER)
            continue;
        int32_t key[3], other[3];
        tclass_key(g, t, key);
        size_t i = (size_t)tclass_hash(key) & mask;
        for (; slot[i] != UINT32_MAX; i = (i + 1) & mask) {
            tclass_key(g, tc->rep[slot[i]], other);
            if (!memcmp(key, other, sizeof key))
                break;
        }
        if (slot[i] == UINT32_MAX) {
            xgrow(&tc->rep, sizeof *tc->rep, (size_t)tc->n + 1, &cap);
            xgrow(&tc->size, sizeof *tc->size, (size_t)tc->n + 1, &cap_s);
            tc->rep[tc->n] = t;
            tc->size[tc->n] = 0;
            slot[i] = tc->n++;
        }
        tc->of[t] = slot[i];
        tc->size[slot[i]]++;
    }
    free(slot);
}

void htae_tclass_free(htae_tclass *tc)
{
    free(tc->of);
    free(tc->rep);
    free(tc->size);
    memset(tc, 0, sizeof *tc);
}

/* Every (source, destination) pair of a transfer or of its companion pairs
 * (graph_set_companions), sorted, once each: (source << 32 | destination); returns the count. */
static size_t transfer_pairs(const exec_graph *g, const htae_tclass *tc, uint64_t **out)
{
    uint64_t *pairs = NULL;
    size_t n_pairs = 0, cap = 0;
    for (uint32_t c = 0; c < tc->n; c++) {
        uint32_t t = tc->rep[c];
        const graph_task *k = &g->tasks[t];
        const int32_t *pr;
        int n = graph_companions(g, t, &pr);
        xgrow(&pairs, sizeof *pairs, n_pairs + 1 + (size_t)n, &cap);
        pairs[n_pairs++] = (uint64_t)(uint32_t)k->rank << 32 | (uint32_t)k->peer;
        for (int i = 0; i < n; i++)
            pairs[n_pairs++] = (uint64_t)(uint32_t)pr[2 * i] << 32 | (uint32_t)pr[2 * i + 1];
    }
    if (n_pairs)
        qsort(pairs, n_pairs, sizeof *pairs, by_u64);
    size_t m = 0;
    for (size_t i = 0; i < n_pairs; i++)
        if (i == 0 || pairs[i] != pairs[i - 1])
            pairs[m++] = pairs[i];
    *out = pairs;
    return m;
}

/* Call fn on each link of the route of every pair of transfer_pairs. */
static void visit_pair_links(const uint64_t *pairs, size_t n_pairs, const sg_host_t *hosts,
                             void (*fn)(sg_link_t, void *), void *arg)
{
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (size_t i = 0; i < n_pairs; i++) {
        xbt_dynar_reset(d);
        sg_host_get_route(hosts[pairs[i] >> 32], hosts[(uint32_t)pairs[i]], d);
        for (unsigned j = 0; j < xbt_dynar_length(d); j++)
            fn(xbt_dynar_get_as(d, j, sg_link_t), arg);
    }
    xbt_dynar_free(&d);
}

/* The links of every transfer and of every group's collectives but the candidate's own and
 * those of the groups holding its stand-ins. */
static void shared_links(const exec_graph *g, coll_group **groups, const sg_host_t *hosts,
                         const uint64_t *pairs, size_t n_pairs, const candidate *cand,
                         htae_link_set *s)
{
    s->n = 0;
    uint8_t *seen = xcalloc((size_t)g->n_groups * 5, 1); /* per group: 4 kinds + all-to-all-v */
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const graph_collective *col = &g->colls[c];
        uint32_t gi = (uint32_t)col->group;
        if (gi == cand->group || cand->others[gi])
            continue;
        size_t slot = (size_t)gi * 5 + (col->matrix ? 4 : (size_t)col->kind);
        if (seen[slot])
            continue;
        seen[slot] = 1;
        htae_coll_visit_links(groups[gi], col->kind, col->matrix, htae_link_set_add, s);
    }
    free(seen);
    visit_pair_links(pairs, n_pairs, hosts, htae_link_set_add, s);
    htae_link_set_sort(s);
}

void htae_alone_plan(htae_alone *a, const exec_graph *g, const htae_tclass *tc, coll_group **groups,
                     const sg_host_t *hosts)
{
    memset(a, 0, sizeof *a);
    a->lean = xcalloc(g->n_colls, 1);
    a->first = xcalloc(g->n_colls, sizeof *a->first);
    a->count = xcalloc(g->n_colls, sizeof *a->count);
    candidate *cs;
    uint32_t nc = find_candidates(g, &cs);
    if (nc == 0) {
        free(cs);
        return;
    }

    /* each candidate all-to-all's index; the latest of each candidate before every collective */
    int32_t *cand_of = xmalloc(g->n_groups * sizeof *cand_of);
    uint32_t *index_of = xcalloc(g->n_colls, sizeof *index_of);
    for (uint32_t i = 0; i < g->n_groups; i++)
        cand_of[i] = -1;
    for (uint32_t k = 0; k < nc; k++) {
        cand_of[cs[k].group] = (int32_t)k;
        for (uint32_t i = 0; i < cs[k].n_colls; i++)
            index_of[cs[k].colls[i]] = i + 1;
    }
    graph_walk w;
    walk_init(&w, g);
    uint32_t *coll_latest = xmalloc((size_t)g->n_colls * nc * sizeof *coll_latest);
    forward(&w, nc, cand_of, index_of, coll_latest);

    /* every group holding stand-ins of a candidate: its collectives in graph order */
    uint32_t *first = xcalloc((size_t)g->n_groups + 1, sizeof *first);
    uint32_t *order = xmalloc((g->n_colls ? g->n_colls : 1) * sizeof *order);
    for (uint32_t c = 0; c < g->n_colls; c++)
        first[g->colls[c].group + 1]++;
    for (uint32_t i = 0; i < g->n_groups; i++)
        first[i + 1] += first[i];
    for (uint32_t i = 0; i < w.n_items; i++)
        if (w.item[i] >= g->n_tasks) {
            uint32_t c = w.item[i] - g->n_tasks;
            order[first[g->colls[c].group]++] = c;
        }
    for (uint32_t i = g->n_groups; i > 0; i--) /* back to each group's start */
        first[i] = first[i - 1];
    first[0] = 0;
    /* per candidate: the groups holding its stand-ins, which must chain */
    const uint32_t **ord = xmalloc(g->n_groups * sizeof *ord);
    uint32_t *n_ord = xmalloc(g->n_groups * sizeof *n_ord);
    done_list dl = {0};
    for (uint32_t k = 0; k < nc; k++) {
        uint32_t q = 0;
        for (uint32_t gi = 0; gi < g->n_groups && cs[k].ok; gi++)
            if (cs[k].others[gi]) {
                ord[q] = &order[first[gi]];
                n_ord[q] = first[gi + 1] - first[gi];
                cs[k].ok = chains(g, ord[q], n_ord[q]);
                q++;
            }
        if (cs[k].ok)
            add_waits(a, &cs[k], k, ord, n_ord, q, coll_latest, nc, &dl);
    }
    free(ord);
    free(n_ord);
    free(first);
    free(order);
    free(coll_latest);
    free(index_of);
    free(cand_of);
    walk_free(&w);

    htae_link_set s = {0};
    uint64_t *pairs = NULL;
    size_t n_pairs = 0;
    for (uint32_t k = 0; k < nc; k++) {
        if (cs[k].ok) {
            if (!pairs) /* the transfers' pairs, once */
                n_pairs = transfer_pairs(g, tc, &pairs);
            shared_links(g, groups, hosts, pairs, n_pairs, &cs[k], &s);
            cs[k].ok = htae_coll_lean(groups[cs[k].group], htae_link_set_has, &s);
        }
        for (uint32_t i = 0; cs[k].ok && i < cs[k].n_colls; i++)
            a->lean[cs[k].colls[i]] = 1;
        free(cs[k].others);
        free(cs[k].colls);
    }
    free(s.links);
    free(pairs);
    free(cs);

    a->done = dl.ids;
}

int htae_alone_now(const htae_alone *a, uint32_t c, const uint8_t *coll_done)
{
    if (!a->lean[c])
        return 0;
    for (uint32_t i = a->first[c]; i < a->first[c] + a->count[c]; i++)
        if (!coll_done[a->done[i]])
            return 0;
    return 1;
}

void htae_alone_free(htae_alone *a)
{
    free(a->lean);
    free(a->first);
    free(a->count);
    free(a->done);
    memset(a, 0, sizeof *a);
}
