/* htae_lean.c: a balanced all-to-all's lean task (htae_coll_lean): the fewer flows SimGrid cannot
 * tell from the full ones while nothing else crosses the group's private links; and the links
 * each collective of a group may cross (htae_coll_visit_links). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../base/xalloc.h"
#include "htae_clock.h"
#include "htae_fast.h"
#include "htae_solo.h"

/* The members' slots in the task of `p` as start_block numbers them (first appearance in edge
 * order) into slot[n]; returns how many take part. */
static int task_slots(const coll_group *gp, const pattern *p, int *slot)
{
    int h = 0;
    for (int m = 0; m < gp->n; m++)
        slot[m] = -1;
    for (int e = 0; e < p->n_edges; e++) {
        if (slot[p->src[e]] < 0)
            slot[p->src[e]] = h++;
        if (slot[p->dst[e]] < 0)
            slot[p->dst[e]] = h++;
    }
    return h;
}

typedef struct edge_link {
    sg_link_t link;
    int edge;
} edge_link;

static int by_edge_link(const void *a, const void *b)
{
    const edge_link *x = a, *y = b;
    if (x->link != y->link)
        return x->link < y->link ? -1 : 1;
    return (x->edge > y->edge) - (x->edge < y->edge);
}

/* Whether two distinct edges of p join the same pair (start_block would sum them in a cell). */
static int repeats_pair(const pattern *p)
{
    for (int a = 0; a < p->n_edges; a++)
        for (int b = a + 1; b < p->n_edges; b++)
            if (p->src[a] == p->src[b] && p->dst[a] == p->dst[b])
                return 1;
    return 0;
}

int htae_coll_lean(coll_group *gp, int (*shared)(sg_link_t link, void *arg), void *arg)
{
    if (gp->n < 2 || gp->n > HTAE_PTASK_MAX_HOSTS)
        return 0;
    if (!gp->has_direct)
        htae_pattern_build_direct(gp);
    const pattern *p = &gp->direct;
    int ne = p->n_edges;
    if (ne < 2 || repeats_pair(p))
        return 0;

    /* every (link, edge) of the pattern, sorted by link */
    edge_link *el = NULL;
    size_t n_el = 0, cap = 0;
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int e = 0; e < ne; e++) {
        xbt_dynar_reset(d);
        sg_host_get_route(gp->hosts[p->src[e]], gp->hosts[p->dst[e]], d);
        for (unsigned i = 0; i < xbt_dynar_length(d); i++) {
            xgrow(&el, sizeof *el, n_el + 1, &cap);
            el[n_el++] = (edge_link){xbt_dynar_get_as(d, i, sg_link_t), e};
        }
    }
    xbt_dynar_free(&d);
    qsort(el, n_el, sizeof *el, by_edge_link);

    /* An edge is kept when one of its links may carry other traffic, or carries more than this
     * edge (private links on one edge each can be told apart by bandwidth and load alone). */
    uint8_t *keep = xcalloc((size_t)ne, 1);
    int ok = 1;
    size_t n_private = 0;
    for (size_t i = 0; i < n_el;) {
        size_t j = i;
        while (j < n_el && el[j].link == el[i].link)
            j++;
        if (!sg_link_is_shared(el[i].link))
            ok = 0; /* a fatpipe loads the largest flow, not the sum: keep it simple */
        if (j - i > 1 || shared(el[i].link, arg))
            for (size_t k = i; k < j; k++)
                keep[el[k].edge] = 1;
        else
            el[n_private++] = el[i]; /* a private link on one edge */
        i = j;
    }
    /* every private link on a dropped edge needs a twin on a kept one: the same bandwidth and
     * the same load (its edge's weight); else its own edge is kept, a twin for the next */
    for (size_t i = 0; ok && i < n_private; i++) {
        if (keep[el[i].edge])
            continue;
        double bw = sg_link_get_bandwidth(el[i].link), w = p->w[el[i].edge];
        int twin = 0;
        for (size_t k = 0; k < n_private && !twin; k++)
            twin = keep[el[k].edge] && p->w[el[k].edge] == w &&
                   sg_link_get_bandwidth(el[k].link) == bw;
        if (!twin)
            keep[el[i].edge] = 1;
    }
    /* SimGrid charges a task its worst route latency: keep an edge that has the full task's
     * (direct.max_lat may be the n (n - 1) pattern's, equal to 1e-12 only) */
    double lat = 0.0, full = 0.0;
    int worst = 0;
    for (int e = 0; e < ne; e++) {
        double l = htae_route_latency(gp->hosts[p->src[e]], gp->hosts[p->dst[e]]);
        if (l > full) {
            full = l;
            worst = e;
        }
        if (keep[e] && l > lat)
            lat = l;
    }
    if (lat != full)
        keep[worst] = 1;
    int kept = 0;
    for (int e = 0; e < ne; e++)
        kept += keep[e];
    free(el);
    if (!ok || kept == ne) {
        free(keep);
        return 0;
    }

    /* the lean task: the kept edges, their hosts in the order the full task takes them */
    int *slot = xmalloc((size_t)gp->n * sizeof *slot);
    task_slots(gp, p, slot);
    htae_pattern_free(&gp->lean);
    for (int e = 0; e < ne; e++)
        if (keep[e])
            htae_pattern_add_edge(&gp->lean, p->src[e], p->dst[e], p->w[e]);
    gp->lean.max_lat = p->max_lat;
    uint8_t *used = xcalloc((size_t)gp->n, 1);
    for (int e = 0; e < gp->lean.n_edges; e++)
        used[gp->lean.src[e]] = used[gp->lean.dst[e]] = 1;
    int *by_slot = xmalloc((size_t)gp->n * sizeof *by_slot), h = 0;
    for (int m = 0; m < gp->n; m++)
        by_slot[m] = -1;
    for (int m = 0; m < gp->n; m++)
        if (used[m])
            by_slot[slot[m]] = m;
    int *lean_of = xmalloc((size_t)gp->n * sizeof *lean_of);
    free(gp->lean_hosts);
    gp->lean_hosts = xmalloc((size_t)gp->n * sizeof *gp->lean_hosts);
    for (int s = 0; s < gp->n; s++)
        if (by_slot[s] >= 0) {
            lean_of[by_slot[s]] = h;
            gp->lean_hosts[h++] = gp->hosts[by_slot[s]];
        }
    gp->lean_n = h;
    free(gp->lean_slot);
    gp->lean_slot = xmalloc(2 * (size_t)gp->lean.n_edges * sizeof *gp->lean_slot);
    for (int e = 0; e < gp->lean.n_edges; e++) {
        gp->lean_slot[2 * e] = lean_of[gp->lean.src[e]];
        gp->lean_slot[2 * e + 1] = lean_of[gp->lean.dst[e]];
    }
    free(lean_of);
    free(by_slot);
    free(used);
    free(slot);
    free(keep);
    return 1;
}

void htae_coll_visit_links(coll_group *gp, coll_kind kind, const double *matrix,
                           void (*visit)(sg_link_t link, void *arg), void *arg)
{
    if (gp->n < 2)
        return;
    const pattern *ps[3];
    int n_ps = 0;
    pattern v = {0};
    if (matrix) { /* any all-to-all-v: every pair */
        for (int i = 0; i < gp->n; i++)
            for (int j = 0; j < gp->n; j++)
                if (i != j)
                    htae_pattern_add_edge(&v, i, j, 1.0);
        ps[n_ps++] = &v;
    } else if (kind == COLL_ALLTOALL) {
        if (!gp->has_direct)
            htae_pattern_build_direct(gp);
        ps[n_ps++] = &gp->direct;
    } else {
        ps[n_ps++] = &gp->ring;
        if (kind == COLL_ALLREDUCE && gp->has_tree)
            ps[n_ps++] = &gp->tree;
        if (kind == COLL_ALLREDUCE && gp->has_nvls)
            ps[n_ps++] = &gp->nvls;
    }
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int i = 0; i < n_ps; i++)
        for (int e = 0; e < ps[i]->n_edges; e++) {
            xbt_dynar_reset(d);
            sg_host_get_route(gp->hosts[ps[i]->src[e]], gp->hosts[ps[i]->dst[e]], d);
            for (unsigned k = 0; k < xbt_dynar_length(d); k++)
                visit(xbt_dynar_get_as(d, k, sg_link_t), arg);
        }
    xbt_dynar_free(&d);
    htae_pattern_free(&v);
}

/* The balanced all-to-all as its lean task (htae_coll_lean): the same wait, one SimGrid task of
 * the kept edges, and every edge of the full pattern in the link statistics. */
void htae_coll_run_lean(coll_group *gp, double scale, double latency, coll_run_ctx *cx)
{
    const pattern *p = &gp->direct;
    pattern *l = &gp->lean;
    double wait = latency - p->max_lat;
    /* held on its links while it runs, so that no act is timed over them (htae_solo.h) */
    uint64_t key = (uint64_t)(uintptr_t)l * 0x9E3779B97F4A7C15ull | 1;
    int real;
    htae_coll_solo(gp, l, NULL, scale, wait, 0, &key, 0, cx, &real);
    if (wait > 0.0)
        htae_wait_until(simgrid_get_clock() + wait);
    int h = gp->lean_n;
    double *mx = xcalloc((size_t)h * (size_t)h, sizeof *mx);
    for (int e = 0; e < l->n_edges; e++)
        mx[(size_t)gp->lean_slot[2 * e] * h + (size_t)gp->lean_slot[2 * e + 1]] += scale * l->w[e];
    sg_exec_t task = sg_actor_parallel_exec_init(h, gp->lean_hosts, NULL, mx);
    free(mx);
    double now = simgrid_get_clock();
    for (int e = 0; e < p->n_edges; e++)
        htae_links_start(cx->links, gp->hosts[p->src[e]], gp->hosts[p->dst[e]], scale * p->w[e],
                         now);
    sg_exec_start(task);
    (*cx->activities)++;
    ssize_t i = sg_exec_wait_any(&task, 1);
    assert(i == 0);
    (void)i;
    now = simgrid_get_clock();
    for (int e = 0; e < p->n_edges; e++)
        htae_links_end(cx->links, gp->hosts[p->src[e]], gp->hosts[p->dst[e]], now);
    htae_solo_real_end(cx->solo, real);
}
