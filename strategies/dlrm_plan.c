/* dlrm_plan.c: the compiler of recommendation-model plans (family dlrm, issue 13) into the
 * execution graph, filling the same compiled_plan as the transformer compiler (pp = chunks = 1,
 * tp = cp = 1) so that `protosim run`, reports and sweeps read it unchanged.
 *
 * Modelled so far (docs/design-notes.md, "Recommendation models"): the MLPs and the
 * interaction data-parallel over data.degree GPUs, and the tables either on the one GPU (no
 * `embedding` block, one GPU only: FBGEMM's fused TBE, the update inside the lookup's
 * backward) or replicated on every GPU (`embedding: {sharding: data-parallel}`: the lookup's
 * backward scatters the gradients into a dense table gradient, all-reduced, then updated by a
 * dense optimizer step, as TorchRec's data-parallel sharding does). Per micro-batch and GPU:
 * the forward ops in model order with the tables as ONE TBE kernel at the first table's place,
 * the backward in reverse; after the last micro-batch the MLP gradient all-reduce and the
 * tables' (data-parallel) on the DP stream, then the optimizer step. Kernel times only: the
 * host's launch flow shop and the overlap of the gradient all-reduce with the backward are
 * not modelled yet (STATUS.md). */
#include "compile.h"
#include "../sim/base/xalloc.h"
#include "../sim/cost.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runtime state held per GPU besides the model's (CUDA context, allocator reserve): the same
 * reserve as transformer plans (strategies/memory.c). */
static const double DLRM_RUNTIME_RESERVE_BYTES = 2.0 * 1073741824.0;

static emb_update update_of(optimizer_kind o)
{
    switch (o) {
    case OPT_ADAGRAD: return EMB_UPDATE_ADAGRAD;
    case OPT_ADAM: return EMB_UPDATE_ADAM;
    default: return EMB_UPDATE_SGD;
    }
}

double dlrm_plan_grad_elem_bytes(precision_t p)
{
    return p == PREC_FP16 ? 2.0 : 4.0; /* as transformer plans: fp16 reduces fp16 gradients */
}

/* The tables' lookups of one micro-batch (the graph's OP_EMBEDDING_BAG ops, in order) into
 * `embs` (at least n_tables entries); their count. */
static int gather_tables(const workload_graph *wg, workload_emb *embs, double *elems)
{
    int n = 0;
    *elems = 0;
    for (int i = 0; i < wg->n_ops; i++)
        if (wg->ops[i].kind == OP_EMBEDDING_BAG) {
            embs[n++] = wg->ops[i].emb;
            *elems += wg->ops[i].params;
        }
    return n;
}

static void describe(const strategy *s, const cluster *c, const workload_graph *wg, int M,
                     compiled_plan *out)
{
    snprintf(out->strategy_file, sizeof out->strategy_file, "%s", s->file);
    out->model = wg->model;
    strategy_plan_desc(s, &out->plan);
    out->gpus = c->n_gpus;
    out->tp = out->pp = out->cp = out->chunks = 1;
    out->dp = s->dp;
    out->zero_shard = s->dp;
    out->simulated_replicas = s->dp;
    out->micro_batches = M;
    out->samples_per_iter = s->global_batch;
    out->tokens_per_iter = 0; /* no sequence: reports show samples */
    out->model_flops_per_iter = (wg->fwd_flops + wg->bwd_flops) * M * s->dp;
    out->params_total = wg->total_params;
    double sum = 0;
    for (int r = 0; r < c->n_gpus; r++)
        sum += c->device[r]->peak_flops[s->precision];
    out->peak_flops_per_gpu = sum / c->n_gpus;
    out->chunk_layers = xcalloc(1, sizeof *out->chunk_layers);
    out->stage_of_rank = xcalloc((size_t)c->n_gpus, sizeof *out->stage_of_rank);
    out->replica_of_rank = xmalloc((size_t)c->n_gpus * sizeof *out->replica_of_rank);
    for (int r = 0; r < c->n_gpus; r++)
        out->replica_of_rank[r] = r;
}

/* Per GPU (all alike): MLP weights in the plan's precision, gradients, optimizer state (fp32
 * master when mixed + adam's two moments, adagrad's accumulator or sgd's momentum, as
 * strategies/memory.c), the tables in their precision with their fused optimizer's fp32
 * state (a data-parallel table also a dense gradient), one micro-batch's saved activations,
 * the runtime reserve. */
static void estimate_memory(const strategy *s, const workload_graph *wg, double table_elems,
                            int dense_tables, compiled_plan *out)
{
    double mlp = wg->total_params - table_elems;
    int mixed = s->precision == PREC_FP16 || s->precision == PREC_BF16;
    double opt = s->optimizer == OPT_ADAM ? (mixed ? 12.0 : 8.0) : (mixed ? 8.0 : 4.0);
    double eb = precision_bytes(wg->model.dlrm.embedding_precision);
    double state = 4.0 * emb_update_state_words(update_of(s->optimizer));
    memory_estimate me = {0};
    me.weights = mlp * precision_bytes(s->precision) + table_elems * eb;
    me.gradients =
        mlp * dlrm_plan_grad_elem_bytes(s->precision) + (dense_tables ? table_elems * eb : 0);
    me.optimizer = mlp * opt + table_elems * state;
    for (int i = 0; i < wg->n_ops; i++)
        me.activations += wg->ops[i].act_bytes;
    me.buffers = DLRM_RUNTIME_RESERVE_BYTES;
    me.total = me.weights + me.gradients + me.optimizer + me.activations + me.buffers;
    out->memory = xmalloc((size_t)out->gpus * sizeof *out->memory);
    out->memory_capacity_of_rank =
        xmalloc((size_t)out->gpus * sizeof *out->memory_capacity_of_rank);
    for (int r = 0; r < out->gpus; r++)
        out->memory[r] = me;
}

/* One pass of one micro-batch on rank r: the ops (reverse order backward), the tables as one
 * TBE kernel at the first table's place; returns the last task. */
static uint32_t emit_pass(htae_graph *g, const workload_graph *wg, const workload_emb *embs,
                          int n_tables, const emb_update *bwd_update, op_pass pass, int r,
                          const device_spec *dev, double slow, precision_t prec, int micro,
                          const int *label, int label_tbe)
{
    uint32_t last = 0;
    int tbe_done = 0;
    for (int j = 0; j < wg->n_ops; j++) {
        int i = pass == PASS_FWD ? j : wg->n_ops - 1 - j;
        const workload_op *op = &wg->ops[i];
        task_category cat = pass == PASS_FWD ? CAT_FORWARD : CAT_BACKWARD;
        double secs;
        int lab = label[i];
        if (op->kind == OP_EMBEDDING_BAG) {
            if (tbe_done)
                continue;
            tbe_done = 1;
            workload_emb t[n_tables];
            memcpy(t, embs, (size_t)n_tables * sizeof *t);
            for (int k = 0; k < n_tables && bwd_update; k++)
                t[k].update = *bwd_update;
            secs = cost_embedding_seconds(t, n_tables, pass, dev);
            lab = label_tbe;
        } else {
            secs = cost_op_kernel_seconds(op, pass, prec, dev);
        }
        last = htae_add_compute(g, r, cat, secs * slow, lab, micro);
    }
    return last;
}

int compile_dlrm_plan(const strategy *s, const cluster *c, compiled_plan *out, ps_error *err)
{
    assert(s->model.family == FAMILY_DLRM);
    memset(out, 0, sizeof *out);
    if (strategy_validate(s, err) || strategy_check_gpus(s, c->n_gpus, err) ||
        strategy_check_devices(s, c, err))
        return err->code;
    workload_graph wg;
    if (workload_build_dlrm(&s->model, s->micro_batch, s->precision, update_of(s->optimizer), &wg,
                            err))
        return err->code;
    int G = c->n_gpus, M = strategy_micro_batches(s);
    int dense_tables = s->has_embedding && s->embedding_sharding == EMB_SHARD_DATA_PARALLEL;
    workload_emb *embs = xmalloc((size_t)wg.model.dlrm.n_tables * sizeof *embs);
    double table_elems;
    int n_tables = gather_tables(&wg, embs, &table_elems);
    double mlp_params = wg.total_params - table_elems;
    describe(s, c, &wg, M, out);
    estimate_memory(s, &wg, table_elems, dense_tables, out);
    for (int r = 0; r < G; r++)
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;

    htae_graph *g = htae_graph_create(G);
    int *label = xmalloc((size_t)wg.n_ops * sizeof *label);
    for (int i = 0; i < wg.n_ops; i++)
        label[i] = htae_label(g, wg.ops[i].name);
    int label_tbe = htae_label(g, "tables (TBE)");
    int label_mlp_ar = htae_label(g, "dp grad all-reduce");
    int label_tab_ar = htae_label(g, "tables dense grad all-reduce");
    int label_opt = htae_label(g, "optimizer step");
    /* a data-parallel table's backward only scatters the gradients (no fused state) */
    emb_update scatter = EMB_UPDATE_SGD;
    uint32_t *last = xmalloc((size_t)G * sizeof *last);
    for (int r = 0; r < G; r++) {
        const device_spec *dev = c->device[r];
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        for (int mb = 0; mb < M; mb++) {
            emit_pass(g, &wg, embs, n_tables, NULL, PASS_FWD, r, dev, slow, s->precision, mb, label,
                      label_tbe);
            last[r] = emit_pass(g, &wg, embs, n_tables, dense_tables ? &scatter : NULL, PASS_BWD, r,
                                dev, slow, s->precision, mb, label, label_tbe);
        }
    }
    uint32_t *dp_last = NULL;
    if (G > 1) {
        int *ranks = xmalloc((size_t)G * sizeof *ranks);
        for (int r = 0; r < G; r++)
            ranks[r] = r;
        int grp = htae_add_group(g, ranks, G);
        free(ranks);
        dp_last = xmalloc((size_t)G * sizeof *dp_last);
        uint32_t *ids = xmalloc((size_t)G * sizeof *ids);
        htae_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP,
                            mlp_params * dlrm_plan_grad_elem_bytes(s->precision), CAT_DP_COMM,
                            label_mlp_ar, -1, ids);
        for (int r = 0; r < G; r++) {
            htae_add_edge(g, last[r], ids[r]);
            dp_last[r] = ids[r];
        }
        if (dense_tables) {
            htae_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP,
                                table_elems * precision_bytes(wg.model.dlrm.embedding_precision),
                                CAT_DP_COMM, label_tab_ar, -1, ids);
            for (int r = 0; r < G; r++)
                dp_last[r] = ids[r];
        }
        free(ids);
    }
    for (int r = 0; r < G; r++) {
        const device_spec *dev = c->device[r];
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        int adam = s->optimizer == OPT_ADAM;
        /* adagrad's step moves the bytes of sgd with momentum: one fp32 state word read and
         * written per parameter (docs/design-notes.md) */
        double secs = cost_optimizer_seconds(mlp_params, adam, s->precision, dev);
        if (dense_tables)
            secs +=
                cost_optimizer_seconds(table_elems, adam, wg.model.dlrm.embedding_precision, dev);
        uint32_t t = htae_add_compute(
            g, r, CAT_OPTIMIZER, secs * slow + cost_iteration_overhead_seconds(), label_opt, -1);
        htae_add_edge(g, dp_last ? dp_last[r] : last[r], t);
    }
    free(dp_last);
    free(last);
    free(label);
    free(embs);
    workload_graph_free(&wg);
    out->graph = g;
    return htae_graph_finalize(g, err);
}
