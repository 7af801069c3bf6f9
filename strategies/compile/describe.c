/* describe.c: what a compiled plan tells the report besides its graph (its sizes, figures,
 * chunk split and rank maps), and the labels the compiler names its tasks with. */
#include <stdio.h>

#include "../../sim/base/xalloc.h"
#include "compile_ctx.h"

/* The plan-level facts the report needs, and the rank -> (stage, replica) maps. */
void compile_describe_plan(compile_ctx *cx, compiled_plan *out)
{
    const strategy *s = cx->s;
    const cluster *c = cx->c;
    const workload_model *m = &cx->wg.model;
    snprintf(out->strategy_file, sizeof out->strategy_file, "%s", s->file);
    out->model = *m;
    strategy_plan_desc(s, &out->plan);
    out->gpus = c->n_gpus;
    out->tp = cx->tp;
    out->pp = cx->pp;
    out->dp = s->dp;
    out->cp = cx->cp;
    out->zero_shard = cx->shard;
    out->chunks = cx->v;
    out->micro_batches = cx->M;
    out->samples_per_iter = s->global_batch;
    out->tokens_per_iter = (double)s->global_batch * m->seq;
    out->model_flops_per_iter = (cx->wg.fwd_flops + cx->wg.bwd_flops) * cx->M * s->dp;
    out->params_total = cx->wg.total_params;
    /* the mean of the GPUs' peaks, so that gpus x it is the cluster's peak (exactly the one
     * GPU model's peak on a homogeneous cluster) */
    double peak0 = c->device[0]->peak_flops[s->precision], sum = 0;
    int same = 1;
    for (int r = 0; r < c->n_gpus; r++) {
        sum += c->device[r]->peak_flops[s->precision];
        same = same && c->device[r]->peak_flops[s->precision] == peak0;
    }
    out->peak_flops_per_gpu = same ? peak0 : sum / c->n_gpus;
    out->simulated_replicas = cx->dp_sim < cx->cp ? 1 : cx->dp_sim / cx->cp;
    out->simulated_context = cx->dp_sim < cx->cp ? cx->dp_sim : cx->cp;
    out->simulated_tp = cx->tp_sim;
    out->chunk_layers = xmalloc((size_t)cx->mcs * sizeof *out->chunk_layers);
    for (int mc = 0; mc < cx->mcs; mc++)
        out->chunk_layers[mc] = compile_chunk_hi(cx, mc) - compile_chunk_lo(cx, mc);
    out->stage_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->stage_of_rank);
    out->replica_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->replica_of_rank);
    out->twin_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->twin_of_rank);
    for (int p = 0; p < cx->pp; p++)
        for (int d = 0; d < cx->dp; d++)
            for (int t = 0; t < cx->tp; t++) {
                out->stage_of_rank[compile_rank_of(s, t, d, p)] = p;
                out->replica_of_rank[compile_rank_of(s, t, d, p)] = d;
                out->twin_of_rank[compile_rank_of(s, t, d, p)] = compile_twin_rank(cx, t, d, p);
            }
}

/* The graph labels of the plan's collectives, transfers and steps, interned once. */
void compile_intern_labels(compile_ctx *cx)
{
    exec_graph *g = cx->g;
    cx->label_tp[COLL_ALLREDUCE] = graph_label(g, "tp all-reduce");
    cx->label_tp[COLL_REDUCE_SCATTER] = graph_label(g, "tp reduce-scatter");
    cx->label_tp[COLL_ALLGATHER] = graph_label(g, "tp all-gather");
    cx->label_dp[COLL_ALLREDUCE] = graph_label(g, "dp grad all-reduce");
    cx->label_dp[COLL_REDUCE_SCATTER] = graph_label(g, "dp grad reduce-scatter");
    cx->label_dp[COLL_ALLGATHER] = graph_label(g, "dp param all-gather");
    cx->label_send_act = graph_label(g, "pp send activations");
    cx->label_send_grad = graph_label(g, "pp send gradients");
    cx->label_opt = graph_label(g, "optimizer step");
    cx->label_pipe = graph_label(g, "pipeline runtime");
    cx->label_fsdp_gather[0] = graph_label(g, "fsdp param all-gather fwd");
    cx->label_fsdp_gather[1] = graph_label(g, "fsdp param all-gather bwd");
    cx->label_fsdp_rs = graph_label(g, "fsdp grad reduce-scatter");
    cx->label_hsdp_ar = graph_label(g, "hsdp grad all-reduce");
    cx->label_fsdp_egather[0] = graph_label(g, "fsdp expert all-gather fwd");
    cx->label_fsdp_egather[1] = graph_label(g, "fsdp expert all-gather bwd");
    cx->label_fsdp_ers = graph_label(g, "fsdp expert reduce-scatter");
    cx->label_cp[0] = graph_label(g, "cp ring send K/V");
    cx->label_cp[1] = graph_label(g, "cp ring send K/V + grads");
    cx->label_ep[0] = graph_label(g, "ep all-to-all to experts");
    cx->label_ep[1] = graph_label(g, "ep all-to-all from experts");
    cx->label_etp[0] = graph_label(g, "etp all-gather");
    cx->label_etp[1] = graph_label(g, "etp reduce-scatter");
    cx->label_edp[COLL_ALLREDUCE] = graph_label(g, "edp expert grad all-reduce");
    cx->label_edp[COLL_REDUCE_SCATTER] = graph_label(g, "edp expert grad reduce-scatter");
    cx->label_edp[COLL_ALLGATHER] = graph_label(g, "edp expert param all-gather");
    cx->label_hsdp_ear = graph_label(g, "hsdp expert grad all-reduce");
}
