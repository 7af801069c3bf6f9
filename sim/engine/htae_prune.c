/* htae_prune.c: the flows a folded run may leave out of its SimGrid tasks (htae_prune.h). */
#include "htae_prune.h"

#include <stdlib.h>
#include <string.h>

#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"

/* Links crossed by traffic that is not invariant (sorted once filled). */
typedef htae_link_set taint;

static int tainted(const taint *t, sg_link_t link)
{
    return htae_link_set_has(link, (void *)t);
}

/* Whether a collective's loads are shift-invariant: its group and its companion groups marked
 * invariant, and an algorithm whose pattern a rotation of the members maps onto itself. */
static int clean_collective(const exec_graph *g, coll_group **groups, uint32_t c,
                            const htae_options *opt)
{
    const graph_collective *col = &g->colls[c];
    if (col->matrix || !graph_group_invariant(g, col->group))
        return 0;
    coll_algo a = htae_coll_choose(groups[col->group], col->kind, col->bytes, opt);
    if (a != COLL_ALGO_RING && a != COLL_ALGO_DIRECT)
        return 0;
    const int32_t *comp;
    int n = graph_coll_companions(g, c, &comp);
    for (int i = 0; i < n; i++)
        if (!graph_group_invariant(g, comp[i]))
            return 0;
    return 1;
}

/* Every link of the route a -> b into t (when t is not NULL), and whether any is in `dirty`
 * (when it is not NULL). */
static int route_links(const sg_host_t *hosts, int a, int b, xbt_dynar_t d, taint *t,
                       const taint *dirty)
{
    int hit = 0;
    xbt_dynar_reset(d);
    sg_host_get_route(hosts[a], hosts[b], d);
    for (unsigned j = 0; j < xbt_dynar_length(d); j++) {
        sg_link_t l = xbt_dynar_get_as(d, j, sg_link_t);
        if (t)
            htae_link_set_add(l, t);
        if (dirty && tainted(dirty, l))
            hit = 1;
    }
    return hit;
}

/* The links of every collective that is not clean (its companion groups' too) and of every
 * transfer class without an invariant pair set. */
static void taint_links(const exec_graph *g, const htae_tclass *tc, coll_group **groups,
                        const sg_host_t *hosts, const htae_options *opt, taint *t)
{
    uint8_t *seen = xcalloc((size_t)g->n_groups * 4 + 1, 1);
    for (uint32_t c = 0; c < g->n_colls; c++) {
        if (clean_collective(g, groups, c, opt))
            continue;
        const graph_collective *col = &g->colls[c];
        const int32_t *comp;
        int n = graph_coll_companions(g, c, &comp);
        for (int i = -1; i < n; i++) {
            int gi = i < 0 ? col->group : comp[i];
            size_t slot = (size_t)gi * 4 + (size_t)col->kind;
            if (col->matrix || !seen[slot])
                htae_coll_visit_links(groups[gi], col->kind, col->matrix, htae_link_set_add, t);
            seen[slot] = 1;
        }
    }
    free(seen);
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (uint32_t k = 0; k < tc->n; k++) {
        uint32_t x = tc->rep[k];
        int set = g->companion && x < g->n_companion ? g->companion[x] : -1;
        if (set >= 0 && graph_pair_set_invariant(g, set))
            continue;
        route_links(hosts, g->tasks[x].rank, g->tasks[x].peer, d, t, NULL);
        const int32_t *pr;
        for (int i = 0, n = graph_companions(g, x, &pr); i < n; i++)
            route_links(hosts, pr[2 * i], pr[2 * i + 1], d, t, NULL);
    }
    xbt_dynar_free(&d);
    htae_link_set_sort(t);
}

/* Companion groups of clean collectives that hold no computing rank and whose links (for every
 * kind they run) are clean. */
static void plan_groups(htae_prune *pr, const exec_graph *g, coll_group **groups,
                        const uint8_t *computing, const taint *t, const htae_options *opt)
{
    int8_t *state = xcalloc((size_t)g->n_groups + 1, 1);     /* 0 unseen, 1 may go, -1 stays */
    uint8_t *seen = xcalloc((size_t)g->n_groups * 4 + 1, 1); /* (group, kind) whose links are */
    taint one = {0};
    for (uint32_t c = 0; c < g->n_colls; c++) {
        const int32_t *comp;
        int n = graph_coll_companions(g, c, &comp);
        if (n == 0)
            continue;
        int clean = clean_collective(g, groups, c, opt);
        for (int i = 0; i < n; i++) {
            int gi = comp[i];
            size_t slot = (size_t)gi * 4 + (size_t)g->colls[c].kind;
            if (state[gi] < 0 || (clean && seen[slot]))
                continue;
            int ok = clean;
            const graph_group *gr = &g->groups[gi];
            for (uint32_t m = 0; ok && m < gr->n; m++)
                ok = !computing[g->group_ranks[gr->first + m]];
            one.n = 0;
            if (ok)
                htae_coll_visit_links(groups[gi], g->colls[c].kind, NULL, htae_link_set_add, &one);
            for (size_t k = 0; ok && k < one.n; k++)
                ok = !tainted(t, one.links[k]);
            seen[slot] = 1;
            state[gi] = ok ? 1 : -1;
        }
    }
    free(seen);
    free(one.links);
    for (uint32_t gi = 0; gi < g->n_groups; gi++)
        if (state[gi] > 0) {
            pr->drop_group[gi] = 1;
            pr->groups++;
        }
    free(state);
}

/* Pairs of invariant sets between ranks that compute nothing, on clean links; then, per
 * transfer class, the first pair of the worst route latency kept when none of that latency is
 * left (SimGrid charges a task its worst route latency). */
static void plan_pairs(htae_prune *pr, const exec_graph *g, const htae_tclass *tc,
                       const sg_host_t *hosts, const uint8_t *computing, const taint *t)
{
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (uint32_t s = 0; s < g->n_pair_sets; s++) {
        if (!graph_pair_set_invariant(g, (int)s))
            continue;
        for (uint32_t k = g->pair_first[s]; k < g->pair_first[s + 1]; k++) {
            int a = g->pair_ranks[2 * k], b = g->pair_ranks[2 * k + 1];
            if (!computing[a] && !computing[b] && !route_links(hosts, a, b, d, NULL, t)) {
                pr->drop_pair[k] = 1;
                pr->pairs++;
            }
        }
    }
    xbt_dynar_free(&d);
    for (uint32_t c = 0; c < tc->n; c++) {
        uint32_t x = tc->rep[c];
        int set = g->companion && x < g->n_companion ? g->companion[x] : -1;
        if (set < 0 || !graph_pair_set_invariant(g, set))
            continue;
        double all = cluster_host_route_latency(hosts[g->tasks[x].rank], hosts[g->tasks[x].peer]);
        double kept = all;
        uint32_t worst = UINT32_MAX;
        for (uint32_t k = g->pair_first[set]; k < g->pair_first[set + 1]; k++) {
            double l = cluster_host_route_latency(hosts[g->pair_ranks[2 * k]],
                                                  hosts[g->pair_ranks[2 * k + 1]]);
            if (l > all) {
                all = l;
                worst = k;
            }
            if (!pr->drop_pair[k] && l > kept)
                kept = l;
        }
        if (kept < all && worst != UINT32_MAX && pr->drop_pair[worst]) {
            pr->drop_pair[worst] = 0;
            pr->pairs--;
        }
    }
}

void htae_prune_plan(htae_prune *pr, const exec_graph *g, const htae_tclass *tc,
                     coll_group **groups, const sg_host_t *hosts, const htae_options *opt)
{
    memset(pr, 0, sizeof *pr);
    if (g->n_group_invariant == 0 && g->n_set_invariant == 0)
        return;
    uint8_t *computing = xcalloc((size_t)g->n_ranks + 1, 1);
    for (uint32_t k = 0; k < g->n_tasks; k++)
        if (g->tasks[k].kind == TASK_COMPUTE)
            computing[g->tasks[k].rank] = 1;
    taint t = {0};
    taint_links(g, tc, groups, hosts, opt, &t);
    pr->drop_group = xcalloc((size_t)g->n_groups + 1, 1);
    pr->drop_pair = xcalloc((size_t)g->n_pair_ranks / 2 + 1, 1);
    plan_groups(pr, g, groups, computing, &t, opt);
    plan_pairs(pr, g, tc, hosts, computing, &t);
    free(t.links);
    free(computing);
}

void htae_prune_free(htae_prune *pr)
{
    free(pr->drop_group);
    free(pr->drop_pair);
    memset(pr, 0, sizeof *pr);
}
