/* htae_nccltests.c: collectives timed alone on a cluster, one size after another, as
 * nccl-tests times them (htae_time_collectives; `protosim collective`, scripts/validate's nccl
 * file): a graph of one collective per size on one group, run by the executor. */
#include "htae.h"
#include "htae_coll.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"

int htae_time_collectives(const cluster *c, coll_kind kind, int gpus, const double *sizes,
                          int n_sizes, const htae_options *opt, double *times, coll_algo *algos,
                          ps_error *err)
{
    if (gpus < 1 || gpus > c->n_gpus)
        return ps_error_set(err, PS_EINPUT, c->file, 0, 0, "gpus",
                            "%d GPUs asked, the cluster has %d", gpus, c->n_gpus);
    assert(n_sizes >= 0);
    for (int i = 0; i < n_sizes; i++) /* the graph builders assert it: check input first */
        if (!(isfinite(sizes[i]) && sizes[i] >= 0.0))
            return ps_error_set(err, PS_EINPUT, NULL, 0, 0, "sizes",
                                "collective size %g is not a finite number of bytes >= 0",
                                sizes[i]);
    exec_graph *g = graph_create(c->n_gpus);
    int *ranks = xmalloc((size_t)gpus * sizeof *ranks); /* heap: up to 131,072 GPUs */
    for (int i = 0; i < gpus; i++)
        ranks[i] = i;
    /* one member tasked, the others standing in (they lend their links): nothing else runs, so
     * every member reaches each collective when member 0 does, and one actor runs them all
     * instead of one a GPU (131,072 actors' guarded stacks exceed Linux's 65,530 mappings) */
    int grp = graph_add_group_stand_ins(g, ranks, gpus, 1);
    free(ranks);
    int label = graph_label(g, coll_kind_name(kind));
    uint32_t *first = xmalloc((size_t)n_sizes * sizeof *first);
    uint32_t *members = xmalloc((size_t)gpus * sizeof *members);
    for (int i = 0; i < n_sizes; i++) {
        graph_add_collective(g, kind, grp, STREAM_TP, sizes[i], CAT_TP_COMM, label, i, members);
        first[i] = members[0];
    }
    free(members);
    int rc = graph_finalize(g, err);
    htae_result r;
    memset(&r, 0, sizeof r);
    if (!rc)
        rc = htae_run(g, c, opt, &r, err);
    for (int i = 0; !rc && i < n_sizes; i++)
        times[i] = r.end[first[i]] - r.start[first[i]];
    if (!rc && algos) { /* the choice the run made, from the same plan */
        htae_options o;
        if (opt)
            o = *opt;
        else
            htae_default_options(&o);
        sg_host_t *hosts = xmalloc((size_t)gpus * sizeof *hosts);
        for (int i = 0; i < gpus; i++)
            hosts[i] = c->sg_hosts[i];
        coll_group *gp = htae_coll_group_create(c, hosts, &g->group_ranks[0], gpus, &o);
        for (int i = 0; i < n_sizes; i++)
            algos[i] = gpus < 2 ? COLL_ALGO_AUTO : htae_coll_choose(gp, kind, sizes[i], &o);
        htae_coll_group_free(gp);
        free(hosts);
    }
    htae_result_free(&r);
    free(first);
    graph_free(g);
    return rc;
}
