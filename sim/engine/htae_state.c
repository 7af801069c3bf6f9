/* htae_state.c: the executor's state set up before the simulation (its per-task and per-rank
 * counters, every group's collective plans, the hosts) and, after it, the result checked and
 * the state freed (htae_exec.h). */
#include "htae_exec.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "htae_solo.h"

static inline int is_amount(double v)
{
    return isfinite(v) && v >= 0.0;
}

/* Step: plan every group's collectives and check a forced algorithm can run its all-reduces. */
int htae_plan_groups(exec_state *x, const cluster *c, ps_error *err)
{
    const exec_graph *g = x->g;
    x->groups = xcalloc(g->n_groups, sizeof *x->groups);
    for (uint32_t i = 0; i < g->n_groups; i++) {
        const graph_group *gr = &g->groups[i];
        x->groups[i] =
            htae_coll_group_create(c, x->hosts, &g->group_ranks[gr->first], (int)gr->n, &x->opt);
        htae_coll_group_set_id(x->groups[i], (int32_t)i);
    }
    for (uint32_t k = 0; k < g->n_colls; k++) {
        const graph_collective *col = &g->colls[k];
        int rc = htae_coll_check(x->groups[col->group], col->kind, x->opt.algo, err);
        if (rc)
            return rc;
    }
    htae_tclass_make(&x->tclass, g);
    htae_prune_plan(&x->prune, g, &x->tclass, x->groups, x->hosts, &x->opt);
    htae_alone_plan(&x->alone, g, &x->tclass, x->groups, x->hosts);
    if (x->opt.timed_alone) {
        htae_dyn_plan(&x->dyn, &x->alone, g, &x->tclass, x->groups, x->hosts);
        x->units = htae_unit_cache_create();
    }
    if (x->opt.timed_solo) {
        /* the floor: the least wait before its tasks start any act of the run has */
        double floor = x->tclass.n ? x->opt.p2p_launch_s : INFINITY;
        for (uint32_t gi = 0; g->n_colls && gi < g->n_groups; gi++) /* companions' too */
            floor = fmin(floor, htae_coll_least_wait(x->groups[gi]));
        x->solo = htae_solo_create(x->links, isfinite(floor) ? floor : 0.0);
        x->tshape = xcalloc((size_t)x->tclass.n + 1, sizeof *x->tshape);
    }
    return 0;
}

/* Step: the SimGrid host of every rank into *out, or an error (and nothing allocated) if one
 * is missing. */
int htae_lookup_hosts(const exec_graph *g, const cluster *c, sg_host_t **out, ps_error *err)
{
    sg_host_t *hosts = xmalloc((size_t)g->n_ranks * sizeof *hosts);
    for (int r = 0; r < g->n_ranks; r++) {
        hosts[r] = c->sg_hosts[r];
        if (!hosts[r]) {
            free(hosts);
            return ps_error_set(err, PS_EINTERNAL, c->file, 0, 0, NULL,
                                "host '%s' is not in the loaded platform", c->host_names[r]);
        }
    }
    *out = hosts;
    return 0;
}

/* Step: the per-task and per-rank state, and each host thread's queue of HOST_ISSUE tasks. */
void htae_state_init(exec_state *x, const exec_graph *g, const htae_options *opt, sg_host_t *hosts,
                     htae_result *out)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    if (opt)
        x->opt = *opt;
    else
        htae_default_options(&x->opt);
    assert((x->opt.overlap_slowdown < 0.0 || is_amount(x->opt.overlap_slowdown)) &&
           is_amount(x->opt.coll_launch_s));
    assert(x->opt.comm_sms >= 0.0);
    assert(is_amount(x->opt.coll_step_s) && is_amount(x->opt.p2p_launch_s));
    assert(is_amount(x->opt.coll_net_step_s) && is_amount(x->opt.nvls_latency_s));
    assert(x->opt.protocol_efficiency > 0.0 && x->opt.protocol_efficiency <= 1.0);
    assert(x->opt.net_efficiency > 0.0 && x->opt.net_efficiency <= 1.0);
    assert(x->opt.nvls_efficiency > 0.0 && x->opt.nvls_efficiency <= 1.0);
    assert(x->opt.algo >= COLL_ALGO_AUTO && x->opt.algo < COLL_ALGO_COUNT);
    x->res = out;
    out->start = xcalloc(g->n_tasks, sizeof *out->start);
    out->end = xcalloc(g->n_tasks, sizeof *out->end);
    x->hosts = hosts;
    x->comm_active = xcalloc((size_t)g->n_ranks, sizeof *x->comm_active);
    x->comm_on_stream =
        xcalloc((size_t)g->n_ranks * (size_t)g->n_streams, sizeof *x->comm_on_stream);
    x->sms = xcalloc((size_t)g->n_ranks, sizeof *x->sms);
    x->computing = xcalloc((size_t)g->n_ranks, sizeof *x->computing);
    x->pending = xmalloc((size_t)g->n_tasks * sizeof *x->pending);
    x->ready = xcalloc(g->n_tasks, sizeof *x->ready);
    x->pred_end = g->lag ? xcalloc(g->n_tasks, sizeof *x->pred_end) : NULL;
    x->coll_arrived = xcalloc(g->n_colls, sizeof *x->coll_arrived);
    x->coll_done = xcalloc(g->n_colls, 1);

    x->host = xcalloc((size_t)g->n_ranks, sizeof *x->host);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        x->pending[t] = g->tasks[t].n_pred + (g->tasks[t].host ? 1u : 0u);
        if (g->tasks[t].host)
            x->host[g->tasks[t].rank].count++;
    }
    for (int r = 0; r < g->n_ranks; r++) {
        host_state *h = &x->host[r];
        h->x = x;
        h->waiting_deps = -1;
        h->tasks = xmalloc((size_t)h->count * sizeof *h->tasks);
        h->count = 0;
    }
    for (uint32_t t = 0; t < g->n_tasks; t++) /* task id order is program order */
        if (g->tasks[t].host) {
            host_state *h = &x->host[g->tasks[t].rank];
            h->tasks[h->count++] = t;
        }
}

/* Step: after the engine stopped, check every task ran and fill in the makespan. */
int htae_collect_result(exec_state *x, ps_error *err)
{
    const exec_graph *g = x->g;
    htae_result *out = x->res;
    out->activities = x->activities;
    out->lean_colls = x->lean_colls;
    out->timed_colls = x->timed_colls;
    out->inlined_colls = x->inlined_colls;
    htae_solo_counts(x->solo, &out->solo_acts, &out->solo_turned, &out->solo_left_out);
    out->pruned = x->prune.groups + x->prune.pairs;
    if (x->done_tasks != g->n_tasks)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "simulation stalled: %u of %u tasks ran (dependency deadlock)",
                            x->done_tasks, g->n_tasks);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        assert(is_amount(out->start[t]) && out->end[t] >= out->start[t]);
        if (out->end[t] > out->makespan)
            out->makespan = out->end[t];
    }
    return 0;
}

/* Step: times from the run's start, if SimGrid's clock could not be put back to 0
 * (htae_clock_restart) after an earlier run in the process (replay --what-if runs the unchanged
 * job, then the changed one; a sweep worker runs many plans). */
void htae_shift_result(htae_result *out, uint32_t n_tasks, double origin)
{
    if (origin == 0.0)
        return;
    for (uint32_t t = 0; t < n_tasks; t++) {
        out->start[t] -= origin;
        out->end[t] -= origin;
    }
    out->makespan -= origin;
    for (int i = 0; i < out->n_links; i++)
        for (int k = 0; k < out->links[i].n_rate; k++)
            out->links[i].rate[k].t -= origin;
    for (int k = 0; k < out->n_snaps; k++)
        out->snap_t[k] -= origin;
    if (out->ready)
        for (uint32_t t = 0; t < n_tasks; t++)
            out->ready[t] = out->ready[t] > 0.0 ? out->ready[t] - origin : 0.0;
}

/* Step: free everything state_init, plan_groups and start_actors made (not the result). */
void htae_state_free(exec_state *x)
{
    const exec_graph *g = x->g;
    if (x->streams)
        for (size_t i = 0; i < (size_t)g->n_ranks * (size_t)g->n_streams; i++) {
            if (x->streams[i].count)
                sg_sem_destroy(x->streams[i].sem);
        }
    if (x->groups)
        for (uint32_t i = 0; i < g->n_groups; i++)
            htae_coll_group_free(x->groups[i]);
    for (int r = 0; r < g->n_ranks; r++) {
        if (x->host[r].sem)
            sg_sem_destroy(x->host[r].sem);
        free(x->host[r].tasks);
    }
    free(x->host);
    free(x->ready);
    free(x->pred_end);
    free(x->groups);
    htae_alone_free(&x->alone);
    htae_dyn_free(&x->dyn);
    for (uint32_t i = 0; x->tshape && i < x->tclass.n; i++)
        htae_solo_shape_free(x->tshape[i]);
    free(x->tshape);
    htae_solo_free(x->solo);
    htae_tclass_free(&x->tclass);
    htae_prune_free(&x->prune);
    htae_unit_cache_free(x->units);
    free(x->streams);
    free(x->pending);
    free(x->coll_arrived);
    free(x->coll_done);
    free(x->comm_active);
    free(x->comm_on_stream);
    free(x->sms);
    free(x->computing);
    free(x->hosts);
}
