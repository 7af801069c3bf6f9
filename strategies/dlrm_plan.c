/* dlrm_plan.c: the compiler of recommendation-model plans (family dlrm, issue 13) into the
 * execution graph, filling the same compiled_plan as the transformer compiler (pp = chunks = 1,
 * tp = cp = 1) so that `protosim run`, reports and sweeps read it unchanged.
 *
 * Modelled (docs/design-notes.md, "Recommendation models" and "Embedding sharding"): the MLPs
 * and the interaction data-parallel over data.degree GPUs (the bottom MLP optionally on one GPU
 * over the whole batch, `bottom_mlp_gpu`), and the tables either on the one GPU (no `embedding`
 * block: FBGEMM's fused TBE, the update inside the lookup's backward), replicated on every GPU
 * (`sharding: data-parallel`: the lookup's backward scatters the gradients into a dense table
 * gradient, all-reduced, then updated by a dense optimizer step, as TorchRec's data-parallel
 * sharding does) or sharded table-wise (each table on one GPU, which looks it up for every
 * GPU's micro-batch; all-to-alls move the ids to the owners, the pooled vectors back, and
 * their gradients to the owners in the backward, whose TBE keeps the fused update). After the
 * last micro-batch the MLP gradient all-reduce and the tables' (data-parallel) on the DP
 * stream, then the optimizer step. Kernel times only: the host's launch flow shop and the
 * overlap of the gradient all-reduce with the backward are not modelled yet (STATUS.md). */
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

/* Where the tables are and who runs what, resolved once for the whole plan. */
typedef struct dlrm_layout {
    int G, n_tables;
    int sharded;          /* table-wise: owner[] holds each table's GPU */
    int bottom_gpu;       /* -1: the bottom MLP on every GPU (its micro-batch) */
    int first_table;      /* index of the first OP_EMBEDDING_BAG in the op graph */
    int *owner;           /* [n_tables], NULL unless sharded */
    workload_emb *local;  /* [n_tables] at the micro-batch (the one GPU, data-parallel) */
    workload_emb *global; /* [n_tables] at micro x G: what an owner looks up (sharded) */
    double table_elems;
    double pooled_row_bytes; /* per sample, all tables' pooled vectors */
} dlrm_layout;

/* Bytes one table needs on its GPU: its rows in the storage precision plus the fused
 * optimizer's fp32 state per element. */
static double table_bytes(const workload_emb *e)
{
    return e->rows * e->dim * (e->elem_bytes + 4.0 * emb_update_state_words(e->update));
}

/* One table's lookup forward + backward alone on `dev` (its own kernel, the whole L2): the
 * greedy placement's estimate. */
static double table_lookup_seconds(const workload_emb *e, const device_spec *dev)
{
    return cost_embedding_seconds(e, 1, PASS_FWD, dev) +
           cost_embedding_seconds(e, 1, PASS_BWD, dev);
}

/* Place each table in order of decreasing weight (ties: lower table first) on the GPU of least
 * load so far (ties: lower GPU), its weight added to that GPU's load: the greedy rule of
 * TorchRec's greedy perf partitioner, here without storage limits (the memory estimate and
 * the fit rule judge the result). */
static void place_greedy(const double *weight, int n, int G, int *owner)
{
    int order[DLRM_MAX_TABLES];
    for (int t = 0; t < n; t++)
        order[t] = t;
    for (int i = 1; i < n; i++) /* insertion sort: stable, n <= 256 */
        for (int j = i; j > 0 && weight[order[j]] > weight[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    double load[G];
    for (int g = 0; g < G; g++)
        load[g] = 0;
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int g = 1; g < G; g++)
            if (load[g] < load[best])
                best = g;
        owner[order[i]] = best;
        load[best] += weight[order[i]];
    }
}

/* Each table's GPU under the strategy's placement. */
static void place_tables(const strategy *s, const cluster *c, dlrm_layout *L)
{
    int n = L->n_tables, G = L->G;
    double weight[DLRM_MAX_TABLES];
    switch (s->placement) {
    case EMB_PLACE_EXPLICIT:
        for (int t = 0; t < n; t++)
            L->owner[t] = s->embedding_gpu[t];
        return;
    case EMB_PLACE_ROUND_ROBIN:
        for (int t = 0; t < n; t++)
            L->owner[t] = t % G;
        return;
    case EMB_PLACE_GREEDY:
        for (int t = 0; t < n; t++)
            weight[t] = table_lookup_seconds(&L->global[t], c->device[0]);
        break;
    case EMB_PLACE_MEMORY_BALANCED:
        for (int t = 0; t < n; t++)
            weight[t] = table_bytes(&L->global[t]);
        break;
    }
    place_greedy(weight, n, G, L->owner);
}

/* Whether rank r looks up table t. */
static int owns(const dlrm_layout *L, int r, int t)
{
    return !L->sharded || L->owner[t] == r;
}

/* Whether rank r runs the bottom MLP, and at which batch (its micro-batch, or every GPU's). */
static int runs_bottom(const dlrm_layout *L, int r)
{
    return L->bottom_gpu < 0 || L->bottom_gpu == r;
}

static int is_bottom(const workload_op *op)
{
    return !strncmp(op->name, "bottom_mlp.", 11);
}

/* The tables rank r looks up in one pass (its TBE kernel's list) into `out`; their count. */
static int tables_of(const dlrm_layout *L, int r, workload_emb *out)
{
    int n = 0;
    for (int t = 0; t < L->n_tables; t++)
        if (owns(L, r, t))
            out[n++] = L->sharded ? L->global[t] : L->local[t];
    return n;
}

/* One TBE kernel over rank r's tables (their update replaced by *update when not NULL). */
static double tbe_seconds(const dlrm_layout *L, int r, op_pass pass, const emb_update *update,
                          const device_spec *dev)
{
    workload_emb t[DLRM_MAX_TABLES];
    int n = tables_of(L, r, t);
    if (n == 0)
        return 0;
    for (int k = 0; k < n && update; k++)
        t[k].update = *update;
    return cost_embedding_seconds(t, n, pass, dev);
}

/* The three all-to-alls of a sharded plan's micro-batch, bytes member i sends member j: the
 * ids to the tables' owners (int64 ids and one int64 length per sample and table, as
 * TorchRec's input dist), the pooled vectors from the owners to every GPU (micro x dim x the
 * table's bytes per table; with bottom_mlp_gpu its output too, in the MLPs' precision), and
 * in the backward their gradients, the transpose. */
static void alltoall_matrices(const dlrm_layout *L, const workload_dlrm *d, int micro,
                              precision_t prec, int bottom_width, double *ids, double *pooled)
{
    int G = L->G;
    double eb = precision_bytes(d->embedding_precision);
    double ids_to[G], pooled_from[G];
    for (int g = 0; g < G; g++)
        ids_to[g] = pooled_from[g] = 0;
    for (int t = 0; t < L->n_tables; t++) {
        ids_to[L->owner[t]] += micro * (d->pooling[t] + 1.0) * 8.0;
        pooled_from[L->owner[t]] += micro * d->dim[t] * eb;
    }
    if (L->bottom_gpu >= 0)
        pooled_from[L->bottom_gpu] += (double)micro * bottom_width * precision_bytes(prec);
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            ids[i * G + j] = i == j ? 0 : ids_to[j];
            pooled[i * G + j] = i == j ? 0 : pooled_from[i];
        }
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

/* Per GPU: the MLP layers it runs in the plan's precision, their gradients and optimizer state
 * (fp32 master when mixed + adam's two moments, adagrad's accumulator or sgd's momentum, as
 * strategies/memory.c); the tables it holds in their precision with their fused optimizer's
 * fp32 state (a data-parallel table also a dense gradient); the saved activations of one
 * micro-batch of the ops it runs (an owner's lookups and the bottom MLP on bottom_mlp_gpu at
 * the whole batch) and, sharded, the pooled vectors it sends and receives; the reserve. */
static void estimate_memory(const strategy *s, const workload_graph *wg,
                            const workload_graph *wg_all, const dlrm_layout *L, int dense_tables,
                            compiled_plan *out)
{
    int mixed = s->precision == PREC_FP16 || s->precision == PREC_BF16;
    double opt = s->optimizer == OPT_ADAM ? (mixed ? 12.0 : 8.0) : (mixed ? 8.0 : 4.0);
    double state = 4.0 * emb_update_state_words(update_of(s->optimizer));
    double eb = precision_bytes(wg->model.dlrm.embedding_precision);
    out->memory = xmalloc((size_t)out->gpus * sizeof *out->memory);
    out->memory_capacity_of_rank =
        xmalloc((size_t)out->gpus * sizeof *out->memory_capacity_of_rank);
    for (int r = 0; r < out->gpus; r++) {
        double mlp = 0, elems = 0, act = 0;
        int t = 0;
        for (int i = 0; i < wg->n_ops; i++) {
            const workload_op *op = &wg->ops[i];
            if (op->kind == OP_EMBEDDING_BAG) {
                if (owns(L, r, t)) {
                    elems += op->params;
                    act += L->sharded ? wg_all->ops[i].act_bytes : op->act_bytes;
                }
                t++;
            } else if (!is_bottom(op) || runs_bottom(L, r)) {
                mlp += op->params;
                act +=
                    is_bottom(op) && L->bottom_gpu == r ? wg_all->ops[i].act_bytes : op->act_bytes;
            }
        }
        if (L->sharded) { /* pooled vectors received (every table, micro) and sent (owned,
                             every GPU's micro-batch) */
            act += wg->micro_batch * L->pooled_row_bytes;
            for (int k = 0; k < L->n_tables; k++)
                if (owns(L, r, k))
                    act += L->global[k].bags * L->global[k].dim * eb;
        }
        memory_estimate me = {0};
        me.weights = mlp * precision_bytes(s->precision) + elems * eb;
        me.gradients =
            mlp * dlrm_plan_grad_elem_bytes(s->precision) + (dense_tables ? elems * eb : 0);
        me.optimizer = mlp * opt + elems * state;
        me.activations = act;
        me.buffers = DLRM_RUNTIME_RESERVE_BYTES;
        me.total = me.weights + me.gradients + me.optimizer + me.activations + me.buffers;
        out->memory[r] = me;
    }
}

/* Per-plan constants of emitting the passes. */
typedef struct dlrm_emit {
    htae_graph *g;
    const workload_graph *wg, *wg_all; /* the micro-batch's ops; at micro x G */
    const dlrm_layout *L;
    const emb_update *bwd_update; /* the TBE backward's update when not the fused optimizer */
    precision_t prec;
    const int *label;
    int label_tbe, label_ids, label_pooled, label_grads;
} dlrm_emit;

/* One op's kernel on rank r: a bottom MLP op on bottom_mlp_gpu at the whole batch. */
static double op_seconds(const dlrm_emit *e, int i, int r, op_pass pass, const device_spec *dev)
{
    const workload_op *op = &e->wg->ops[i];
    if (is_bottom(op) && e->L->bottom_gpu == r)
        op = &e->wg_all->ops[i];
    return cost_op_kernel_seconds(op, pass, e->prec, dev);
}

/* One pass of one micro-batch on rank r: the ops (reverse order backward). Unsharded: the
 * tables as one TBE kernel at the first table's place. Sharded: forward, the ids all-to-all
 * first (beside the bottom MLP), the owner's TBE after it, then the pooled all-to-all the
 * interaction waits for; backward, the gradients' all-to-all after the interaction's
 * backward, beside the bottom MLP's backward, then the TBE backward. a2a[3] holds the micro-
 * batch's all-to-all tasks of rank r (ids, pooled, gradients). Returns the last task. */
static uint32_t emit_pass(const dlrm_emit *e, op_pass pass, int r, const device_spec *dev,
                          double slow, int micro, const uint32_t *a2a)
{
    const workload_graph *wg = e->wg;
    const dlrm_layout *L = e->L;
    task_category cat = pass == PASS_FWD ? CAT_FORWARD : CAT_BACKWARD;
    uint32_t last = 0;
    int tables_done = 0, have_last = 0;
    uint32_t wait_for = 0; /* an all-to-all the next compute task waits for (0: none) */
    int waiting = 0;
#define EMIT(secs, lab)                                                                            \
    do {                                                                                           \
        last = htae_add_compute(e->g, r, cat, (secs)*slow, (lab), micro);                          \
        have_last = 1;                                                                             \
        if (waiting) {                                                                             \
            htae_add_edge(e->g, wait_for, last);                                                   \
            waiting = 0;                                                                           \
        }                                                                                          \
    } while (0)
    for (int j = 0; j < wg->n_ops; j++) {
        int i = pass == PASS_FWD ? j : wg->n_ops - 1 - j;
        const workload_op *op = &wg->ops[i];
        if (op->kind == OP_EMBEDDING_BAG) {
            if (tables_done)
                continue;
            tables_done = 1;
            if (!L->sharded) {
                EMIT(tbe_seconds(L, r, pass, e->bwd_update, dev), e->label_tbe);
            } else if (pass == PASS_FWD) {
                /* the TBE after the ids arrived, the pooled vectors sent after it (and after
                 * the bottom MLP on bottom_mlp_gpu) */
                double secs = tbe_seconds(L, r, pass, NULL, dev);
                if (secs > 0) {
                    waiting = 1;
                    wait_for = a2a[0];
                    EMIT(secs, e->label_tbe);
                }
                if (have_last)
                    htae_add_edge(e->g, last, a2a[1]);
                waiting = 1;
                wait_for = a2a[1];
            } else {
                if (have_last)
                    htae_add_edge(e->g, last, a2a[2]);
                if (L->bottom_gpu >= 0) { /* the bottom MLP's gradient comes in it */
                    waiting = L->bottom_gpu == r;
                    wait_for = a2a[2];
                }
            }
            continue;
        }
        if (is_bottom(op) && !runs_bottom(L, r))
            continue;
        EMIT(op_seconds(e, i, r, pass, dev), e->label[i]);
    }
    if (L->sharded && pass == PASS_BWD) {
        double secs = tbe_seconds(L, r, pass, NULL, dev);
        waiting = 1;
        wait_for = a2a[2];
        if (secs > 0)
            EMIT(secs, e->label_tbe);
    }
#undef EMIT
    if (waiting || !have_last) { /* nothing after the all-to-all on this rank: end on it */
        assert(L->sharded);
        return wait_for;
    }
    return last;
}

/* The per-iteration lookup times of each GPU and the table counts (compiled_plan.dlrm). */
static dlrm_plan_stats *plan_stats(const strategy *s, const cluster *c, const dlrm_layout *L, int M,
                                   const double *ids_m, const double *pooled_m)
{
    dlrm_plan_stats *st = xcalloc(1, sizeof *st);
    int G = L->G;
    st->sharding = s->has_embedding ? (int)s->embedding_sharding : -1;
    st->placement = s->has_placement ? (int)s->placement : -1;
    st->bottom_mlp_gpu = L->bottom_gpu;
    st->n_tables = L->n_tables;
    st->gpus = G;
    st->owner = xmalloc((size_t)L->n_tables * sizeof *st->owner);
    for (int t = 0; t < L->n_tables; t++)
        st->owner[t] = L->sharded ? L->owner[t] : -1;
    st->tables_of_gpu = xcalloc((size_t)G, sizeof *st->tables_of_gpu);
    st->lookup_s = xcalloc((size_t)G, sizeof *st->lookup_s);
    double sum = 0;
    emb_update scatter = EMB_UPDATE_SGD;
    int dense = s->has_embedding && s->embedding_sharding == EMB_SHARD_DATA_PARALLEL;
    for (int r = 0; r < G; r++) {
        workload_emb t[DLRM_MAX_TABLES];
        st->tables_of_gpu[r] = tables_of(L, r, t);
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        st->lookup_s[r] = M * slow *
                          (tbe_seconds(L, r, PASS_FWD, NULL, c->device[r]) +
                           tbe_seconds(L, r, PASS_BWD, dense ? &scatter : NULL, c->device[r]));
        sum += st->lookup_s[r];
        if (st->lookup_s[r] > st->lookup_max_s)
            st->lookup_max_s = st->lookup_s[r];
    }
    st->lookup_mean_s = sum / G;
    st->lookup_imbalance = sum > 0 ? st->lookup_max_s / st->lookup_mean_s : 0;
    if (ids_m)
        for (int k = 0; k < G * G; k++)
            st->alltoall_bytes += M * (ids_m[k] + 2.0 * pooled_m[k]);
    return st;
}

int compile_dlrm_plan(const strategy *s, const cluster *c, compiled_plan *out, ps_error *err)
{
    assert(s->model.family == FAMILY_DLRM);
    memset(out, 0, sizeof *out);
    if (strategy_validate(s, err) || strategy_check_gpus(s, c->n_gpus, err) ||
        strategy_check_devices(s, c, err))
        return err->code;
    int G = c->n_gpus, M = strategy_micro_batches(s), micro = s->micro_batch;
    int sharded = s->has_embedding && s->embedding_sharding == EMB_SHARD_TABLE_WISE;
    int dense_tables = s->has_embedding && s->embedding_sharding == EMB_SHARD_DATA_PARALLEL;
    emb_update upd = update_of(s->optimizer);
    /* wg_all: the same ops at every GPU's micro-batch, what an owner looks up and the bottom
     * MLP on bottom_mlp_gpu computes */
    workload_graph wg, wg_all;
    if (workload_build_dlrm(&s->model, micro, s->precision, upd, &wg, err))
        return err->code;
    if (workload_build_dlrm(&s->model, micro * G, s->precision, upd, &wg_all, err)) {
        workload_graph_free(&wg);
        return err->code;
    }
    const workload_dlrm *d = &wg.model.dlrm;
    dlrm_layout L = {0};
    L.G = G;
    L.sharded = sharded;
    L.bottom_gpu = s->bottom_mlp_gpu;
    L.local = xmalloc((size_t)d->n_tables * sizeof *L.local);
    L.global = xmalloc((size_t)d->n_tables * sizeof *L.global);
    double elems_all;
    L.n_tables = gather_tables(&wg, L.local, &L.table_elems);
    gather_tables(&wg_all, L.global, &elems_all);
    for (L.first_table = 0; wg.ops[L.first_table].kind != OP_EMBEDDING_BAG; L.first_table++)
        ;
    for (int t = 0; t < L.n_tables; t++)
        L.pooled_row_bytes += d->dim[t] * precision_bytes(d->embedding_precision);
    if (sharded) {
        L.owner = xmalloc((size_t)L.n_tables * sizeof *L.owner);
        place_tables(s, c, &L);
    }
    double mlp_params = 0, bottom_params = 0;
    for (int i = 0; i < wg.n_ops; i++)
        if (wg.ops[i].kind != OP_EMBEDDING_BAG) {
            mlp_params += wg.ops[i].params;
            if (is_bottom(&wg.ops[i]))
                bottom_params += wg.ops[i].params;
        }
    int bottom_width = d->bottom_mlp[d->n_bottom - 1];
    describe(s, c, &wg, M, out);
    estimate_memory(s, &wg, &wg_all, &L, dense_tables, out);
    for (int r = 0; r < G; r++)
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;

    htae_graph *g = htae_graph_create(G);
    int *label = xmalloc((size_t)wg.n_ops * sizeof *label);
    for (int i = 0; i < wg.n_ops; i++)
        label[i] = htae_label(g, wg.ops[i].name);
    /* a data-parallel table's backward only scatters the gradients (no fused state) */
    emb_update scatter = EMB_UPDATE_SGD;
    dlrm_emit e = {g,
                   &wg,
                   &wg_all,
                   &L,
                   dense_tables ? &scatter : NULL,
                   s->precision,
                   label,
                   htae_label(g, "tables (TBE)"),
                   htae_label(g, "emb all-to-all ids"),
                   htae_label(g, "emb all-to-all pooled"),
                   htae_label(g, "emb all-to-all grads")};
    int label_mlp_ar = htae_label(g, "dp grad all-reduce");
    int label_tab_ar = htae_label(g, "tables dense grad all-reduce");
    int label_opt = htae_label(g, "optimizer step");

    int *ranks = xmalloc((size_t)G * sizeof *ranks);
    for (int r = 0; r < G; r++)
        ranks[r] = r;
    int grp = G > 1 ? htae_add_group(g, ranks, G) : -1;
    free(ranks);
    double *ids_m = NULL, *pooled_m = NULL, *grads_m = NULL;
    uint32_t *a2a = NULL; /* [M][3][G]: each micro-batch's ids, pooled, gradient tasks */
    if (sharded && G > 1) {
        ids_m = xmalloc((size_t)G * G * sizeof *ids_m);
        pooled_m = xmalloc((size_t)G * G * sizeof *pooled_m);
        grads_m = xmalloc((size_t)G * G * sizeof *grads_m);
        alltoall_matrices(&L, d, micro, s->precision, bottom_width, ids_m, pooled_m);
        for (int i = 0; i < G; i++)
            for (int j = 0; j < G; j++)
                grads_m[i * G + j] = pooled_m[j * G + i];
        a2a = xmalloc((size_t)M * 3 * G * sizeof *a2a);
    }
    uint32_t *last = xmalloc((size_t)G * sizeof *last);
    for (int mb = 0; mb < M; mb++) {
        uint32_t *k = a2a ? a2a + (size_t)mb * 3 * G : NULL;
        if (k) { /* the stream order of every rank: ids, pooled, gradients */
            htae_add_alltoallv(g, grp, STREAM_TP, ids_m, CAT_EMB_COMM, e.label_ids, mb, k);
            htae_add_alltoallv(g, grp, STREAM_TP, pooled_m, CAT_EMB_COMM, e.label_pooled, mb,
                               k + G);
            htae_add_alltoallv(g, grp, STREAM_TP, grads_m, CAT_EMB_COMM, e.label_grads, mb,
                               k + 2 * G);
        }
        for (int r = 0; r < G; r++) {
            const device_spec *dev = c->device[r];
            double slow = c->slowdown ? c->slowdown[r] : 1.0;
            uint32_t mine[3] = {0, 0, 0};
            if (k)
                for (int w = 0; w < 3; w++)
                    mine[w] = k[w * G + r];
            emit_pass(&e, PASS_FWD, r, dev, slow, mb, mine);
            last[r] = emit_pass(&e, PASS_BWD, r, dev, slow, mb, mine);
        }
    }
    /* the MLP gradients data-parallel GPUs share (not the bottom MLP's when on one GPU) */
    double dp_params = mlp_params - (L.bottom_gpu >= 0 ? bottom_params : 0);
    uint32_t *dp_last = NULL;
    if (G > 1) {
        dp_last = xmalloc((size_t)G * sizeof *dp_last);
        uint32_t *ids = xmalloc((size_t)G * sizeof *ids);
        htae_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP,
                            dp_params * dlrm_plan_grad_elem_bytes(s->precision), CAT_DP_COMM,
                            label_mlp_ar, -1, ids);
        for (int r = 0; r < G; r++) {
            htae_add_edge(g, last[r], ids[r]);
            dp_last[r] = ids[r];
        }
        if (dense_tables) {
            htae_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP,
                                L.table_elems * precision_bytes(d->embedding_precision),
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
        double params =
            runs_bottom(&L, r) ? dp_params + (L.bottom_gpu >= 0 ? bottom_params : 0) : dp_params;
        double secs = cost_optimizer_seconds(params, adam, s->precision, dev);
        if (dense_tables)
            secs += cost_optimizer_seconds(L.table_elems, adam, d->embedding_precision, dev);
        uint32_t t = htae_add_compute(
            g, r, CAT_OPTIMIZER, secs * slow + cost_iteration_overhead_seconds(), label_opt, -1);
        htae_add_edge(g, dp_last ? dp_last[r] : last[r], t);
    }
    out->dlrm = plan_stats(s, c, &L, M, ids_m, pooled_m);
    free(dp_last);
    free(last);
    free(a2a);
    free(ids_m);
    free(pooled_m);
    free(grads_m);
    free(label);
    free(L.owner);
    free(L.local);
    free(L.global);
    workload_graph_free(&wg);
    workload_graph_free(&wg_all);
    out->graph = g;
    return htae_graph_finalize(g, err);
}
