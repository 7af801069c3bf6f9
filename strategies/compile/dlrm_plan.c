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
 * sharding does) or sharded (table-wise: each table on one GPU, which looks it up for every
 * GPU's micro-batch; row-wise: a slice of rows on every GPU; column-wise: column shards placed
 * like tables; table-row-wise: row slices over one node's GPUs; per table with children). The
 * collectives of a sharded plan: the ids to the shards' GPUs, the pooled vectors back
 * (all-to-all, reduce-scatter of row-wise partial sums, table-row-wise's node reduce-scatter
 * and cross-node all-to-all), and in the backward their gradients the other way, before the
 * TBE backward, which keeps the fused update. After the last micro-batch the MLP gradient
 * all-reduce and the tables' (data-parallel) on the DP stream, then the optimizer step. Kernel
 * times only: the host's launch flow shop and the overlap of the gradient all-reduce with the
 * backward are not modelled yet (STATUS.md). The tables' shards and their placement:
 * dlrm_shard.c. */
#include "dlrm_shard.h"
#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runtime state held per GPU besides the model's (CUDA context, allocator reserve): the same
 * reserve as transformer plans (strategies/compile/memory.c). */
static const double DLRM_RUNTIME_RESERVE_BYTES = 2.0 * 1073741824.0;

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

/* The all-to-alls of a sharded plan's micro-batch, bytes member i sends member j: the ids to
 * the shards' GPUs (int64 ids and one int64 length per sample and table, as TorchRec's input
 * dist; a column shard gets every id of its table, a row-wise slice 1/G of them and every
 * length, a table-row-wise slice 1/per_node), and the pooled vectors from the table-wise and
 * column shards' GPUs to every GPU (micro x the shard's dim x the table's bytes; with
 * bottom_mlp_gpu the bottom MLP's output too, in the MLPs' precision); their gradients in the
 * backward are the transpose. */
static void alltoall_matrices(const dlrm_layout *L, const workload_dlrm *d, int micro,
                              precision_t prec, int bottom_width, double *ids, double *pooled)
{
    int G = L->G;
    double eb = precision_bytes(d->embedding_precision);
    double *ids_to = xcalloc((size_t)2 * G, sizeof *ids_to), *pooled_from = ids_to + G;
    double ids_all = 0;
    for (int k = 0; k < L->n_shards; k++) {
        const dlrm_shard *sh = &L->shard[k];
        double pool = d->pooling[sh->table];
        if (sh->kind == EMB_SHARD_ROW_WISE) {
            ids_all += micro * (pool / G + 1.0) * 8.0;
        } else if (sh->node >= 0) { /* to each GPU of the table's node, its bucket's ids */
            for (int g = 0; g < G; g++)
                if (L->node_of[g] == sh->node)
                    ids_to[g] += micro * (pool / L->per_node + 1.0) * 8.0;
        } else if (sh->gpu >= 0) {
            ids_to[sh->gpu] += micro * (pool + 1.0) * 8.0;
            pooled_from[sh->gpu] += micro * sh->emb.dim * eb;
        }
    }
    if (L->bottom_gpu >= 0)
        pooled_from[L->bottom_gpu] += (double)micro * bottom_width * precision_bytes(prec);
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            ids[i * G + j] = i == j ? 0 : ids_to[j] + ids_all;
            pooled[i * G + j] = i == j ? 0 : pooled_from[i];
        }
    free(ids_to);
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
    out->simulated_context = 1;
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
 * strategies/compile/memory.c); the shards it holds in their precision with their fused optimizer's
 * fp32 state (a data-parallel table instead a dense gradient, its state counted with the
 * dense step's); the saved activations of one micro-batch of the ops it runs (a shard's ids,
 * the bottom MLP on bottom_mlp_gpu at the whole batch) and, when sharded, the pooled vectors it
 * receives (micro x the sharded tables' dims) and produces (its shards' bags x dims); the
 * reserve. */
static void estimate_memory(const strategy *s, const workload_graph *wg,
                            const workload_graph *wg_all, const dlrm_layout *L, compiled_plan *out)
{
    int mixed = s->precision == PREC_FP16 || s->precision == PREC_BF16;
    double opt = s->optimizer == OPT_ADAM ? (mixed ? 12.0 : 8.0) : (mixed ? 8.0 : 4.0);
    double state = 4.0 * emb_update_state_words(dlrm_update_of(s->optimizer));
    double eb = precision_bytes(wg->model.dlrm.embedding_precision);
    out->memory = xmalloc((size_t)out->gpus * sizeof *out->memory);
    out->memory_capacity_of_rank =
        xmalloc((size_t)out->gpus * sizeof *out->memory_capacity_of_rank);
    double received = 0;
    for (int k = 0; k < L->n_shards; k++)
        if (L->comm && L->shard[k].kind != EMB_SHARD_DATA_PARALLEL && L->shard[k].index == 0)
            received += wg->micro_batch * wg->model.dlrm.dim[L->shard[k].table] * eb;
    for (int r = 0; r < out->gpus; r++) {
        double mlp = 0, elems = 0, dense = 0, act = received;
        for (int i = 0; i < wg->n_ops; i++) {
            const workload_op *op = &wg->ops[i];
            if (op->kind != OP_EMBEDDING_BAG && (!dlrm_is_bottom(op) || dlrm_runs_bottom(L, r))) {
                mlp += op->params;
                act += dlrm_is_bottom(op) && L->bottom_gpu == r ? wg_all->ops[i].act_bytes
                                                                : op->act_bytes;
            }
        }
        for (int k = 0; k < L->n_shards; k++) {
            const dlrm_shard *sh = &L->shard[k];
            if (!dlrm_on_gpu(L, sh, r))
                continue;
            if (sh->kind == EMB_SHARD_DATA_PARALLEL)
                dense += dlrm_shard_elems(&sh->emb);
            else
                elems += dlrm_shard_elems(&sh->emb);
            act += sh->emb.lookups * 8.0; /* the ids, kept for the backward */
            if (L->comm && sh->kind != EMB_SHARD_DATA_PARALLEL)
                act += sh->emb.bags * sh->emb.dim * eb;
        }
        memory_estimate me = {0};
        me.weights = mlp * precision_bytes(s->precision) + (elems + dense) * eb;
        me.gradients = mlp * dlrm_plan_grad_elem_bytes(s->precision) + dense * eb;
        me.optimizer = mlp * opt + (elems + dense) * state;
        me.activations = act;
        me.buffers = DLRM_RUNTIME_RESERVE_BYTES;
        me.total = me.weights + me.gradients + me.optimizer + me.activations + me.buffers;
        out->memory[r] = me;
    }
}

/* A micro-batch's collectives of the lookups on one rank (0: none): the ids' all-to-all, then
 * the forward's outputs (the pooled all-to-all, the row-wise reduce-scatter), then the
 * backward's (the gradients' all-to-all, the row-wise all-gather), in that stream order. */
typedef struct dlrm_comm_tasks { /* UINT32_MAX: none on this rank */
    uint32_t ids;
    uint32_t fwd_first, fwd_last; /* pooled and / or reduce-scatter */
    uint32_t grads;               /* the gradients' all-to-all (bottom_mlp_gpu waits for it) */
    uint32_t bwd_first, bwd_last; /* gradients' all-to-all and / or all-gather */
} dlrm_comm_tasks;

/* Per-plan constants of emitting the passes. */
typedef struct dlrm_emit {
    exec_graph *g;
    const workload_graph *wg, *wg_all; /* the micro-batch's ops; at micro x G */
    const dlrm_layout *L;
    precision_t prec;
    const int *label;
    int label_tbe;
} dlrm_emit;

/* One op's kernel on rank r: a bottom MLP op on bottom_mlp_gpu at the whole batch. */
static double op_seconds(const dlrm_emit *e, int i, int r, op_pass pass, const device_spec *dev)
{
    const workload_op *op = &e->wg->ops[i];
    if (dlrm_is_bottom(op) && e->L->bottom_gpu == r)
        op = &e->wg_all->ops[i];
    return cost_op_kernel_seconds(op, pass, e->prec, dev);
}

/* One pass of one micro-batch on rank r: the ops (reverse order backward). Without the
 * collectives (one GPU, data-parallel tables): the shards as one TBE kernel at the first
 * table's place. Sharded: forward, the ids' all-to-all first (beside the bottom MLP), the TBE
 * after it, then the outputs' collectives the interaction waits for; backward, the gradients'
 * collectives after the interaction's backward, beside the bottom MLP's backward, then the
 * TBE backward. Returns the last task (always a compute task: the MLPs run on every rank). */
static uint32_t emit_pass(const dlrm_emit *e, op_pass pass, int r, const device_spec *dev,
                          double slow, int micro, const dlrm_comm_tasks *ct)
{
    const workload_graph *wg = e->wg;
    const dlrm_layout *L = e->L;
    task_category cat = pass == PASS_FWD ? CAT_FORWARD : CAT_BACKWARD;
    uint32_t last = 0;
    int tables_done = 0, have_last = 0;
    uint32_t wait_for = 0; /* a collective the next compute task waits for */
    int waiting = 0;
#define EMIT(secs, lab)                                                                            \
    do {                                                                                           \
        last = graph_add_compute(e->g, r, cat, (secs)*slow, (lab), micro);                         \
        have_last = 1;                                                                             \
        if (waiting) {                                                                             \
            graph_add_edge(e->g, wait_for, last);                                                  \
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
            if (!L->comm) {
                double secs = dlrm_tbe_seconds(L, r, pass, dev);
                if (secs > 0)
                    EMIT(secs, e->label_tbe);
            } else if (pass == PASS_FWD) {
                /* the TBE after the ids arrived; the outputs sent after it (and after the
                 * bottom MLP on bottom_mlp_gpu) */
                double secs = dlrm_tbe_seconds(L, r, pass, dev);
                if (secs > 0) {
                    waiting = 1;
                    wait_for = ct->ids;
                    EMIT(secs, e->label_tbe);
                }
                if (have_last && ct->fwd_first != UINT32_MAX)
                    graph_add_edge(e->g, last, ct->fwd_first);
                waiting = ct->fwd_last != UINT32_MAX;
                wait_for = ct->fwd_last;
            } else {
                if (have_last && ct->bwd_first != UINT32_MAX)
                    graph_add_edge(e->g, last, ct->bwd_first);
                if (L->bottom_gpu >= 0) { /* the bottom MLP's gradient comes in the all-to-all */
                    waiting = L->bottom_gpu == r;
                    wait_for = ct->grads;
                }
            }
            continue;
        }
        if (dlrm_is_bottom(op) && !dlrm_runs_bottom(L, r))
            continue;
        EMIT(op_seconds(e, i, r, pass, dev), e->label[i]);
    }
    if (L->comm && pass == PASS_BWD) {
        double secs = dlrm_tbe_seconds(L, r, pass, dev);
        if (secs > 0) {
            waiting = ct->bwd_last != UINT32_MAX;
            wait_for = ct->bwd_last;
            EMIT(secs, e->label_tbe);
        }
    }
#undef EMIT
    assert(have_last);
    return last;
}

/* The labels of the plan's tasks: each op's, the tables' TBE kernel, the collectives', the
 * optimizer step's. */
typedef struct dlrm_labels {
    int *op; /* [n_ops], heap-owned */
    int tbe, ids, pooled, grads, rs, ag, mlp_ar, tab_ar, opt, trs, tx, tag, txg;
} dlrm_labels;

static void create_labels(exec_graph *g, const workload_graph *wg, dlrm_labels *lab)
{
    lab->op = xmalloc((size_t)wg->n_ops * sizeof *lab->op);
    for (int i = 0; i < wg->n_ops; i++)
        lab->op[i] = graph_label(g, wg->ops[i].name);
    lab->tbe = graph_label(g, "tables (TBE)");
    lab->ids = graph_label(g, "emb all-to-all ids");
    lab->pooled = graph_label(g, "emb all-to-all pooled");
    lab->grads = graph_label(g, "emb all-to-all grads");
    lab->rs = graph_label(g, "emb row-wise reduce-scatter");
    lab->ag = graph_label(g, "emb row-wise grad all-gather");
    lab->mlp_ar = graph_label(g, "dp grad all-reduce");
    lab->tab_ar = graph_label(g, "tables dense grad all-reduce");
    lab->opt = graph_label(g, "optimizer step");
    lab->trs = graph_label(g, "emb table-row-wise reduce-scatter");
    lab->tx = graph_label(g, "emb table-row-wise all-to-all");
    lab->tag = graph_label(g, "emb table-row-wise grad all-gather");
    lab->txg = graph_label(g, "emb table-row-wise grad all-to-all");
}

/* The collectives of the lookups, the same at every micro-batch: their groups, the
 * all-to-alls' matrices (NULL when not sharded) and the bytes a micro-batch moves. */
typedef struct dlrm_comm {
    int grp; /* every GPU; -1 on one GPU */
    double *ids_m, *pooled_m, *grads_m;
    int pooled_a2a;
    double rw_bytes;
    int N, P; /* table-row-wise: nodes, GPUs per node */
    int *grp_node, *grp_cross;
    double *cross_m, *cross_t;
    double eb;    /* the tables' element bytes */
    double bytes; /* one micro-batch's, every GPU's sends together */
} dlrm_comm;

/* The sharded plan's all-to-alls (ids, pooled vectors, their gradients the transpose) and the
 * row-wise tables' reduce-scatter and all-gather. */
static void comm_sharded(const dlrm_layout *L, const workload_dlrm *d, int micro, precision_t prec,
                         dlrm_comm *cm)
{
    int G = L->G;
    /* row-wise outputs: every GPU's partial sums for the whole batch, reduce-scattered to each
     * GPU's micro-batch; their gradients all-gathered back (S = the whole batch's vectors) */
    cm->rw_bytes = (double)micro * G * L->rw_dims * cm->eb;
    if (!L->comm)
        return;
    cm->ids_m = xmalloc((size_t)G * G * sizeof *cm->ids_m);
    cm->pooled_m = xmalloc((size_t)G * G * sizeof *cm->pooled_m);
    cm->grads_m = xmalloc((size_t)G * G * sizeof *cm->grads_m);
    alltoall_matrices(L, d, micro, prec, d->bottom_mlp[d->n_bottom - 1], cm->ids_m, cm->pooled_m);
    for (int i = 0; i < G; i++)
        for (int j = 0; j < G; j++) {
            cm->grads_m[i * G + j] = cm->pooled_m[j * G + i];
            cm->bytes += cm->ids_m[i * G + j] + 2 * cm->pooled_m[i * G + j];
        }
    if (L->rw_dims > 0) /* what a ring moves: (G - 1) / G of S per GPU, each way */
        cm->bytes += 2.0 * (G - 1) * cm->rw_bytes;
}

/* table-row-wise: per node a reduce-scatter of its GPUs' partial sums for the whole batch
 * (S = micro x G x the node's dims), then across nodes an all-to-all among the GPUs of the
 * same local index (node n's GPU k holds the sums of the micro-batches of every node's GPU k:
 * micro x dims to each); backward the transpose, then the all-gather */
static void comm_table_row_wise(exec_graph *g, const dlrm_layout *L, int micro, dlrm_comm *cm)
{
    int N = cm->N, P = cm->P, G = L->G;
    if (!L->twrw_dims)
        return;
    cm->grp_node = xmalloc((size_t)N * sizeof *cm->grp_node);
    cm->grp_cross = xmalloc((size_t)P * sizeof *cm->grp_cross);
    int *members = xmalloc((size_t)(N > P ? N : P) * sizeof *members);
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < P; k++)
            members[k] = n * P + k;
        cm->grp_node[n] = P > 1 ? graph_add_group(g, members, P) : -1;
    }
    for (int k = 0; k < P; k++) {
        for (int n = 0; n < N; n++)
            members[n] = n * P + k;
        cm->grp_cross[k] = N > 1 ? graph_add_group(g, members, N) : -1;
    }
    free(members);
    cm->cross_m = xcalloc((size_t)N * N, sizeof *cm->cross_m);
    cm->cross_t = xcalloc((size_t)N * N, sizeof *cm->cross_t);
    for (int n = 0; n < N; n++) {
        double S = (double)micro * G * L->twrw_dims[n] * cm->eb;
        if (P > 1)
            cm->bytes += 2.0 * (P - 1) * S;
        for (int m = 0; m < N; m++)
            if (m != n) {
                cm->cross_m[n * N + m] = (double)micro * L->twrw_dims[n] * cm->eb;
                cm->cross_t[m * N + n] = cm->cross_m[n * N + m];
                cm->bytes += 2.0 * P * cm->cross_m[n * N + m];
            }
    }
}

static void comm_create(exec_graph *g, const dlrm_layout *L, const workload_dlrm *d, int micro,
                        precision_t prec, dlrm_comm *cm)
{
    int G = L->G;
    memset(cm, 0, sizeof *cm);
    int *ranks = xmalloc((size_t)G * sizeof *ranks);
    for (int r = 0; r < G; r++)
        ranks[r] = r;
    cm->grp = G > 1 ? graph_add_group(g, ranks, G) : -1;
    free(ranks);
    cm->eb = precision_bytes(d->embedding_precision);
    cm->pooled_a2a = L->placed > 0 || L->bottom_gpu >= 0;
    cm->N = L->n_nodes;
    cm->P = L->per_node;
    comm_sharded(L, d, micro, prec, cm);
    comm_table_row_wise(g, L, micro, cm);
}

static void comm_free(dlrm_comm *cm)
{
    free(cm->ids_m);
    free(cm->pooled_m);
    free(cm->grads_m);
    free(cm->grp_node);
    free(cm->grp_cross);
    free(cm->cross_m);
    free(cm->cross_t);
}

/* Notes the tasks `tk` of one collective over `members` (n ranks) in each rank's stream order:
 * the forward's outputs (fwd 1) or the backward's (fwd 0). */
static void note_collective(dlrm_comm_tasks *ct, const uint32_t *tk, const int *members, int n,
                            int fwd)
{
    for (int q = 0; q < n; q++) {
        dlrm_comm_tasks *t = &ct[members[q]];
        if (fwd && t->fwd_first == UINT32_MAX)
            t->fwd_first = tk[q];
        if (!fwd && t->bwd_first == UINT32_MAX)
            t->bwd_first = tk[q];
        *(fwd ? &t->fwd_last : &t->bwd_last) = tk[q];
    }
}

/* The members of table-row-wise node n's group (node 1) or of local index n's group across
 * the nodes (node 0) into sub; their count. */
static int twrw_members(const dlrm_comm *cm, int node, int n, int *sub)
{
    if (node) {
        for (int k = 0; k < cm->P; k++)
            sub[k] = n * cm->P + k;
        return cm->P;
    }
    for (int m = 0; m < cm->N; m++)
        sub[m] = m * cm->P + n;
    return cm->N;
}

/* Micro-batch mb's collectives of the lookups into ct (one per rank), in every rank's stream
 * order: ids; pooled, row-wise reduce-scatter, table-row-wise reduce-scatter and all-to-all;
 * then the backward's. `all` lists the ranks; tk and sub are scratch of G entries. */
static void emit_lookup_comm(exec_graph *g, const dlrm_layout *L, const dlrm_comm *cm,
                             const dlrm_labels *lab, int micro, int mb, const int *all,
                             dlrm_comm_tasks *ct, uint32_t *tk, int *sub)
{
    int G = L->G, N = cm->N, P = cm->P, grp = cm->grp;
    graph_add_alltoallv(g, grp, STREAM_TP, cm->ids_m, CAT_EMB_COMM, lab->ids, mb, tk);
    for (int r = 0; r < G; r++)
        ct[r].ids = tk[r];
    if (cm->pooled_a2a) {
        graph_add_alltoallv(g, grp, STREAM_TP, cm->pooled_m, CAT_EMB_COMM, lab->pooled, mb, tk);
        note_collective(ct, tk, all, G, 1);
    }
    if (L->rw_dims > 0) {
        graph_add_collective(g, COLL_REDUCE_SCATTER, grp, STREAM_TP, cm->rw_bytes, CAT_EMB_COMM,
                             lab->rs, mb, tk);
        note_collective(ct, tk, all, G, 1);
    }
    for (int n = 0; L->twrw_dims && P > 1 && n < N; n++) {
        if (L->twrw_dims[n] == 0)
            continue;
        graph_add_collective(g, COLL_REDUCE_SCATTER, cm->grp_node[n], STREAM_TP,
                             (double)micro * G * L->twrw_dims[n] * cm->eb, CAT_EMB_COMM, lab->trs,
                             mb, tk);
        note_collective(ct, tk, sub, twrw_members(cm, 1, n, sub), 1);
    }
    for (int k = 0; L->twrw_dims && N > 1 && k < P; k++) {
        graph_add_alltoallv(g, cm->grp_cross[k], STREAM_TP, cm->cross_m, CAT_EMB_COMM, lab->tx, mb,
                            tk);
        note_collective(ct, tk, sub, twrw_members(cm, 0, k, sub), 1);
    }
    if (cm->pooled_a2a) {
        graph_add_alltoallv(g, grp, STREAM_TP, cm->grads_m, CAT_EMB_COMM, lab->grads, mb, tk);
        for (int r = 0; r < G; r++)
            ct[r].grads = tk[r];
        note_collective(ct, tk, all, G, 0);
    }
    if (L->rw_dims > 0) {
        graph_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, cm->rw_bytes, CAT_EMB_COMM, lab->ag,
                             mb, tk);
        note_collective(ct, tk, all, G, 0);
    }
    for (int k = 0; L->twrw_dims && N > 1 && k < P; k++) {
        graph_add_alltoallv(g, cm->grp_cross[k], STREAM_TP, cm->cross_t, CAT_EMB_COMM, lab->txg, mb,
                            tk);
        note_collective(ct, tk, sub, twrw_members(cm, 0, k, sub), 0);
    }
    for (int n = 0; L->twrw_dims && P > 1 && n < N; n++) {
        if (L->twrw_dims[n] == 0)
            continue;
        graph_add_collective(g, COLL_ALLGATHER, cm->grp_node[n], STREAM_TP,
                             (double)micro * G * L->twrw_dims[n] * cm->eb, CAT_EMB_COMM, lab->tag,
                             mb, tk);
        note_collective(ct, tk, sub, twrw_members(cm, 1, n, sub), 0);
    }
}

/* Every micro-batch: its lookups' collectives, then each rank's forward and backward. Fills
 * last (each rank's last backward task) and, when sharded, last_comm (its last collective). */
static void emit_micro_batches(const dlrm_emit *e, const cluster *c, const dlrm_comm *cm,
                               const dlrm_labels *lab, int micro, int M, uint32_t *last,
                               uint32_t *last_comm)
{
    const dlrm_layout *L = e->L;
    int G = L->G;
    const uint32_t NONE = UINT32_MAX;
    uint32_t *tk = xmalloc((size_t)G * sizeof *tk);
    dlrm_comm_tasks *ct = xmalloc((size_t)G * sizeof *ct);
    int *all = xmalloc((size_t)G * sizeof *all), *sub = xmalloc((size_t)G * sizeof *sub);
    for (int r = 0; r < G; r++)
        all[r] = r;
    for (int mb = 0; mb < M; mb++) {
        for (int r = 0; r < G; r++)
            ct[r] = (dlrm_comm_tasks){NONE, NONE, NONE, 0, NONE, NONE};
        if (L->comm)
            emit_lookup_comm(e->g, L, cm, lab, micro, mb, all, ct, tk, sub);
        for (int r = 0; r < G; r++) {
            const device_spec *dev = c->device[r];
            double slow = c->slowdown ? c->slowdown[r] : 1.0;
            if (L->comm)
                last_comm[r] = ct[r].bwd_last != NONE ? ct[r].bwd_last : ct[r].ids;
            emit_pass(e, PASS_FWD, r, dev, slow, mb, &ct[r]);
            last[r] = emit_pass(e, PASS_BWD, r, dev, slow, mb, &ct[r]);
        }
    }
    free(all);
    free(sub);
    free(ct);
    free(tk);
}

/* After the last micro-batch, on the DP stream: the all-reduce of the MLP gradients
 * data-parallel GPUs share (dp_params), then the data-parallel tables' dense gradients'.
 * Returns each rank's last of them (heap-owned), NULL on one GPU. */
static uint32_t *emit_gradient_sync(exec_graph *g, const dlrm_layout *L, const dlrm_comm *cm,
                                    const dlrm_labels *lab, precision_t prec, double dp_params,
                                    const uint32_t *last, const uint32_t *last_comm)
{
    int G = L->G;
    if (G == 1)
        return NULL;
    uint32_t *dp_last = xmalloc((size_t)G * sizeof *dp_last);
    uint32_t *ids = xmalloc((size_t)G * sizeof *ids);
    graph_add_collective(g, COLL_ALLREDUCE, cm->grp, STREAM_DP,
                         dp_params * dlrm_plan_grad_elem_bytes(prec), CAT_DP_COMM, lab->mlp_ar, -1,
                         ids);
    for (int r = 0; r < G; r++) {
        /* a GPU's backward ends with its last kernel and its last gradient collective (a
         * GPU without shards has nothing after it) */
        graph_add_edge(g, last[r], ids[r]);
        if (last_comm)
            graph_add_edge(g, last_comm[r], ids[r]);
        dp_last[r] = ids[r];
    }
    if (L->dense_elems > 0) {
        graph_add_collective(g, COLL_ALLREDUCE, cm->grp, STREAM_DP, L->dense_elems * cm->eb,
                             CAT_DP_COMM, lab->tab_ar, -1, ids);
        for (int r = 0; r < G; r++)
            dp_last[r] = ids[r];
    }
    free(ids);
    return dp_last;
}

/* Each rank's optimizer step after its gradients are in (dp_last, or its backward on one GPU):
 * its MLP parameters (the bottom MLP's too on bottom_mlp_gpu), the data-parallel tables'. */
static void emit_optimizer_steps(exec_graph *g, const strategy *s, const cluster *c,
                                 const dlrm_layout *L, const workload_dlrm *d, int label_opt,
                                 double dp_params, double bottom_params, const uint32_t *dp_last,
                                 const uint32_t *last)
{
    for (int r = 0; r < L->G; r++) {
        const device_spec *dev = c->device[r];
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        int adam = s->optimizer == OPT_ADAM;
        /* adagrad's step moves the bytes of sgd with momentum: one fp32 state word read and
         * written per parameter (docs/design-notes.md) */
        double params = dlrm_runs_bottom(L, r)
                            ? dp_params + (L->bottom_gpu >= 0 ? bottom_params : 0)
                            : dp_params;
        double secs = cost_optimizer_seconds(params, adam, s->precision, 1, dev);
        if (L->dense_elems > 0)
            secs += cost_optimizer_seconds(L->dense_elems, adam, d->embedding_precision, 1, dev);
        uint32_t t = graph_add_compute(
            g, r, CAT_OPTIMIZER, secs * slow + cost_iteration_overhead_seconds(), label_opt, -1);
        graph_add_edge(g, dp_last ? dp_last[r] : last[r], t);
    }
}

/* The op graphs of the plan (wg at the micro-batch; wg_all at every GPU's, what an owner looks
 * up and the bottom MLP on bottom_mlp_gpu computes) and the tables' layout. 0, or a located
 * error with nothing left to free. */
static int build_layout(const strategy *s, const cluster *c, workload_graph *wg,
                        workload_graph *wg_all, dlrm_layout *L, ps_error *err)
{
    int G = c->n_gpus, micro = s->micro_batch;
    emb_update upd = dlrm_update_of(s->optimizer);
    if (workload_build_dlrm(&s->model, micro, s->precision, upd, wg, err))
        return err->code;
    if (workload_build_dlrm(&s->model, micro * G, s->precision, upd, wg_all, err)) {
        workload_graph_free(wg);
        return err->code;
    }
    const workload_dlrm *d = &wg->model.dlrm;
    memset(L, 0, sizeof *L);
    L->G = G;
    L->bottom_gpu = s->bottom_mlp_gpu;
    L->n_tables = d->n_tables;
    workload_emb *local = xmalloc((size_t)d->n_tables * sizeof *local);
    workload_emb *global = xmalloc((size_t)d->n_tables * sizeof *global);
    double elems;
    gather_tables(wg, local, &elems);
    gather_tables(wg_all, global, &elems);
    int rc = dlrm_build_shards(s, c, local, global, L, err);
    free(local);
    free(global);
    if (rc) {
        dlrm_layout_free(L);
        workload_graph_free(wg);
        workload_graph_free(wg_all);
    }
    return rc;
}

/* The graph of one iteration: every micro-batch's lookups' collectives and passes, the
 * gradients' all-reduces, the optimizer steps; the lookup statistics into out->dlrm. */
static exec_graph *emit_iteration(const strategy *s, const cluster *c, const workload_graph *wg,
                                  const workload_graph *wg_all, const dlrm_layout *L, int M,
                                  compiled_plan *out)
{
    const workload_dlrm *d = &wg->model.dlrm;
    int G = L->G;
    double mlp_params = 0, bottom_params = 0;
    for (int i = 0; i < wg->n_ops; i++)
        if (wg->ops[i].kind != OP_EMBEDDING_BAG) {
            mlp_params += wg->ops[i].params;
            if (dlrm_is_bottom(&wg->ops[i]))
                bottom_params += wg->ops[i].params;
        }
    exec_graph *g = graph_create(G);
    dlrm_labels lab;
    create_labels(g, wg, &lab);
    dlrm_emit e = {g, wg, wg_all, L, s->precision, lab.op, lab.tbe};
    dlrm_comm cm;
    comm_create(g, L, d, s->micro_batch, s->precision, &cm);
    uint32_t *last = xmalloc((size_t)G * sizeof *last);
    uint32_t *last_comm = L->comm ? xmalloc((size_t)G * sizeof *last_comm) : NULL;
    emit_micro_batches(&e, c, &cm, &lab, s->micro_batch, M, last, last_comm);
    /* the MLP gradients data-parallel GPUs share (not the bottom MLP's when on one GPU) */
    double dp_params = mlp_params - (L->bottom_gpu >= 0 ? bottom_params : 0);
    uint32_t *dp_last =
        emit_gradient_sync(g, L, &cm, &lab, s->precision, dp_params, last, last_comm);
    emit_optimizer_steps(g, s, c, L, d, lab.opt, dp_params, bottom_params, dp_last, last);
    out->dlrm = dlrm_plan_stats_create(s, c, L, M, cm.bytes);
    free(dp_last);
    free(last);
    free(last_comm);
    comm_free(&cm);
    free(lab.op);
    return g;
}

int compile_dlrm_plan(const strategy *s, const cluster *c, compiled_plan *out, ps_error *err)
{
    assert(s->model.family == FAMILY_DLRM);
    memset(out, 0, sizeof *out);
    if (strategy_validate(s, err) || strategy_check_gpus(s, c->n_gpus, err) ||
        strategy_check_devices(s, c, err))
        return err->code;
    int M = strategy_micro_batches(s);
    workload_graph wg, wg_all;
    dlrm_layout L;
    int rc = build_layout(s, c, &wg, &wg_all, &L, err);
    if (rc)
        return rc;
    describe(s, c, &wg, M, out);
    estimate_memory(s, &wg, &wg_all, &L, out);
    for (int r = 0; r < c->n_gpus; r++)
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;
    exec_graph *g = emit_iteration(s, c, &wg, &wg_all, &L, M, out);
    dlrm_layout_free(&L);
    workload_graph_free(&wg);
    workload_graph_free(&wg_all);
    out->graph = g;
    return graph_finalize(g, err);
}
