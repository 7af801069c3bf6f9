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
 * backward are not modelled yet (STATUS.md). */
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

/* One piece of a table that GPUs look up: a whole table, a column shard, or a row-wise slice
 * (one on every GPU). */
typedef struct dlrm_shard {
    int table;
    emb_sharding kind; /* DATA_PARALLEL also for the one-GPU plan's tables (update fused) */
    int gpu;           /* its GPU; -1: on every GPU (replicated, row-wise slices, one GPU) */
    int index;         /* column shard index (0 otherwise) */
    workload_emb emb;  /* what its GPU looks up in one micro-batch */
    int node;          /* table-row-wise: the node whose GPUs hold a slice each; else -1 */
} dlrm_shard;

/* Where the tables are and who runs what, resolved once for the whole plan. */
typedef struct dlrm_layout {
    int G, n_tables;
    int comm;       /* sharded tables on more than one GPU: the collectives of the lookups */
    int bottom_gpu; /* -1: the bottom MLP on every GPU (its micro-batch) */
    dlrm_shard *shard;
    int n_shards;
    int placed;     /* shards placed on one GPU (table-wise, column-wise) */
    double rw_dims; /* the row-wise tables' dims: their reduce-scatter, all-gather */
    /* table-row-wise: the nodes (GPUs numbered node by node, `per_node` each; node_of the
     * cluster's) and each node's tables' dims (its reduce-scatter, cross-node all-to-all) */
    const int *node_of;
    int n_nodes, per_node;
    double *twrw_dims;  /* [n_nodes], NULL without table-row-wise tables */
    double dense_elems; /* the data-parallel tables' elements (dense gradient, step) */
    double table_elems;
} dlrm_layout;

static int on_gpu(const dlrm_layout *L, const dlrm_shard *sh, int r)
{
    if (sh->node >= 0)
        return L->node_of[r] == sh->node;
    return sh->gpu < 0 || sh->gpu == r;
}

/* Elements of the slice of the table a shard holds. */
static double shard_elems(const workload_emb *e)
{
    return e->rows / (e->row_shards > 1 ? e->row_shards : 1.0) * e->dim;
}

/* Bytes a shard needs on its GPU: its elements in the storage precision plus the fused
 * optimizer's fp32 state per element. */
static double shard_bytes(const workload_emb *e)
{
    return shard_elems(e) * (e->elem_bytes + 4.0 * emb_update_state_words(e->update));
}

/* One shard's lookup forward + backward alone on `dev` (its own kernel, the whole L2): the
 * greedy placement's estimate. */
static double shard_lookup_seconds(const workload_emb *e, const device_spec *dev)
{
    return cost_embedding_seconds(e, 1, PASS_FWD, dev) +
           cost_embedding_seconds(e, 1, PASS_BWD, dev);
}

/* The indices 0..n-1 in decreasing order of weight, ties in index order (heap-owned). */
static int *by_decreasing_weight(const double *weight, int n)
{
    int *order = xmalloc((size_t)n * sizeof *order);
    for (int t = 0; t < n; t++)
        order[t] = t;
    for (int i = 1; i < n; i++) /* insertion sort: stable */
        for (int j = i; j > 0 && weight[order[j]] > weight[order[j - 1]]; j--) {
            int x = order[j];
            order[j] = order[j - 1];
            order[j - 1] = x;
        }
    return order;
}

/* Place each shard in order of decreasing weight (ties: the earlier first) on the GPU of least
 * load so far (ties: lower GPU), its weight added to that GPU's load: the greedy rule of
 * TorchRec's greedy perf partitioner, here without storage limits (the memory estimate and
 * the fit rule judge the result). */
static void place_greedy(const double *weight, int n, int G, int *owner)
{
    int *order = by_decreasing_weight(weight, n);
    double *load = xcalloc((size_t)G, sizeof *load); /* heap: G is up to the plan's GPUs */
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int g = 1; g < G; g++)
            if (load[g] < load[best])
                best = g;
        owner[order[i]] = best;
        load[best] += weight[order[i]];
    }
    free(load);
    free(order);
}

/* NVIDIA's PyTorch DLRM placement (its distribute_to_buckets rule): shards in decreasing order
 * of weight (ties: the earlier first), each to the open bucket of least weight so far (ties:
 * the bucket first in the previous order), a bucket closing once it holds ceil(n / G) shards
 * (a nearly uniform count); GPU i takes the i-th bucket to close, then the open ones in their
 * last order. */
static void place_capped(const double *weight, int n, int G, int *owner)
{
    int *order = by_decreasing_weight(weight, n);
    int cap = (n + G - 1) / G, n_open = G, n_closed = 0;
    int *open = xmalloc((size_t)4 * G * sizeof *open), *closed = open + G, *count = open + 2 * G,
        *gpu_of_bucket = open + 3 * G;
    double *sum = xmalloc((size_t)G * sizeof *sum);
    int *bucket = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *bucket);
    for (int b = 0; b < G; b++) {
        open[b] = b;
        count[b] = 0;
        sum[b] = 0;
    }
    for (int i = 0; i < n; i++) {
        int b = open[0];
        bucket[order[i]] = b;
        sum[b] += weight[order[i]];
        if (++count[b] == cap) {
            closed[n_closed++] = b;
            memmove(open, open + 1, (size_t)(--n_open) * sizeof *open);
        }
        for (int k = 1; k < n_open; k++) /* stable: by weight so far */
            for (int j = k; j > 0 && sum[open[j]] < sum[open[j - 1]]; j--) {
                int x = open[j];
                open[j] = open[j - 1];
                open[j - 1] = x;
            }
    }
    for (int k = 0; k < n_closed; k++)
        gpu_of_bucket[closed[k]] = k;
    for (int k = 0; k < n_open; k++)
        gpu_of_bucket[open[k]] = n_closed + k;
    for (int t = 0; t < n; t++)
        owner[t] = gpu_of_bucket[bucket[t]];
    free(bucket);
    free(order);
    free(open);
    free(sum);
}

/* The GPU of each table-wise table and column shard under the strategy's placement. An explicit
 * list names each table's GPU; a column-wise table's shard j goes to the GPU after it j times
 * (mod G). */
static void place_shards(const strategy *s, const cluster *c, dlrm_layout *L)
{
    int n = 0, G = L->G;
    dlrm_shard **p = xmalloc((size_t)L->n_shards * sizeof *p);
    for (int k = 0; k < L->n_shards; k++)
        if (L->shard[k].kind == EMB_SHARD_TABLE_WISE || L->shard[k].kind == EMB_SHARD_COLUMN_WISE)
            p[n++] = &L->shard[k];
    double *weight = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *weight);
    int *owner = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *owner);
    for (int k = 0; k < n; k++) {
        switch (s->placement) {
        case EMB_PLACE_EXPLICIT:
            owner[k] = (s->embedding_gpu[p[k]->table] + p[k]->index) % G;
            break;
        case EMB_PLACE_ROUND_ROBIN: owner[k] = k % G; break;
        case EMB_PLACE_GREEDY: weight[k] = shard_lookup_seconds(&p[k]->emb, c->device[0]); break;
        case EMB_PLACE_MEMORY_BALANCED: weight[k] = shard_bytes(&p[k]->emb); break;
        }
    }
    if (s->placement == EMB_PLACE_GREEDY)
        place_greedy(weight, n, G, owner);
    else if (s->placement == EMB_PLACE_MEMORY_BALANCED)
        place_capped(weight, n, G, owner);
    for (int k = 0; k < n; k++)
        p[k]->gpu = owner[k];
    L->placed = n;
    free(owner);
    free(weight);
    free(p);
}

/* The node of each table-row-wise table under the strategy's placement, the same rules over
 * the nodes as place_shards' over the GPUs (an explicit list: the node of the table's GPU). */
static void place_nodes(const strategy *s, const cluster *c, dlrm_layout *L)
{
    int n = 0, N = L->n_nodes;
    dlrm_shard **p = xmalloc((size_t)L->n_shards * sizeof *p);
    for (int k = 0; k < L->n_shards; k++)
        if (L->shard[k].kind == EMB_SHARD_TABLE_ROW_WISE)
            p[n++] = &L->shard[k];
    double *weight = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *weight);
    int *node = xmalloc((size_t)(n > 0 ? n : 1) * sizeof *node);
    for (int k = 0; k < n; k++) {
        switch (s->placement) {
        case EMB_PLACE_EXPLICIT: node[k] = L->node_of[s->embedding_gpu[p[k]->table]]; break;
        case EMB_PLACE_ROUND_ROBIN: node[k] = k % N; break;
        case EMB_PLACE_GREEDY: weight[k] = shard_lookup_seconds(&p[k]->emb, c->device[0]); break;
        case EMB_PLACE_MEMORY_BALANCED: weight[k] = shard_bytes(&p[k]->emb); break;
        }
    }
    if (s->placement == EMB_PLACE_GREEDY)
        place_greedy(weight, n, N, node);
    else if (s->placement == EMB_PLACE_MEMORY_BALANCED)
        place_capped(weight, n, N, node);
    for (int k = 0; k < n; k++) {
        p[k]->node = node[k];
        L->twrw_dims[node[k]] += p[k]->emb.dim;
    }
    free(node);
    free(weight);
    free(p);
}

/* Table-row-wise needs nodes of equal GPU counts, numbered in rank order (rank r on node
 * r / per_node), as TorchRec's intra- and cross-node process groups. */
static int check_nodes(const strategy *s, const cluster *c, int table, ps_error *err)
{
    int N = c->n_nodes, G = c->n_gpus;
    int ok = c->node_of_rank && N >= 1 && G % N == 0;
    for (int r = 0; ok && r < G; r++)
        ok = c->node_of_rank[r] == r / (G / N);
    if (ok)
        return 0;
    src_loc at;
    strategy_table_sharding(s, table, &at);
    return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column,
                        s->table_has_sharding[table] ? "strategy.children"
                                                     : "strategy.embedding.sharding",
                        "table-row-wise sharding (table %d) needs nodes of equal GPU counts "
                        "numbered in rank order; the cluster's %d GPUs on %d nodes are not",
                        table, G, N);
}

/* The shards of every table: `local` / `global` the tables' lookups at the micro-batch and at
 * every GPU's (an owner looks up the whole batch; a row-wise slice its 1/G of it, a
 * table-row-wise slice 1/per_node). */
static int build_shards(const strategy *s, const cluster *c, const workload_emb *local,
                        const workload_emb *global, dlrm_layout *L, ps_error *err)
{
    int G = L->G, n = 0, cap = L->n_tables;
    L->shard = xmalloc((size_t)cap * sizeof *L->shard);
    L->node_of = c->node_of_rank;
    L->n_nodes = c->n_nodes > 0 ? c->n_nodes : 1;
    L->per_node = G / L->n_nodes;
    for (int t = 0; t < L->n_tables; t++) {
        emb_sharding k =
            s->has_embedding ? strategy_table_sharding(s, t, NULL) : EMB_SHARD_TABLE_WISE;
        int shards = k == EMB_SHARD_COLUMN_WISE && G > 1 ? strategy_table_shards(s, t, NULL) : 1;
        if (n + shards > cap) {
            cap = 2 * cap + shards;
            L->shard = xreallocarray(L->shard, (size_t)cap, sizeof *L->shard);
        }
        dlrm_shard sh = {.table = t, .kind = k, .gpu = -1, .index = 0, .node = -1};
        L->table_elems += local[t].rows * local[t].dim;
        if (k == EMB_SHARD_DATA_PARALLEL) { /* dense gradient: the backward only scatters */
            sh.emb = local[t];
            sh.emb.update = EMB_UPDATE_SGD;
            L->shard[n++] = sh;
            L->dense_elems += local[t].rows * local[t].dim;
        } else if (G == 1) { /* the one GPU holds the whole table, update fused */
            sh.kind = EMB_SHARD_TABLE_WISE;
            sh.gpu = 0;
            sh.emb = local[t];
            L->shard[n++] = sh;
        } else if (k == EMB_SHARD_ROW_WISE || k == EMB_SHARD_TABLE_ROW_WISE) {
            int over = G;
            if (k == EMB_SHARD_TABLE_ROW_WISE) {
                if (check_nodes(s, c, t, err))
                    return err->code;
                over = L->per_node;
                if (!L->twrw_dims)
                    L->twrw_dims = xcalloc((size_t)L->n_nodes, sizeof *L->twrw_dims);
            }
            sh.emb = global[t];
            sh.emb.lookups /= over;
            sh.emb.unique /= over;
            sh.emb.row_shards = over;
            L->shard[n++] = sh;
            if (k == EMB_SHARD_ROW_WISE)
                L->rw_dims += global[t].dim;
            L->comm = 1;
        } else { /* table-wise, or column-wise: `shards` tables of dim / shards */
            for (int j = 0; j < shards; j++) {
                sh.gpu = 0;
                sh.index = j;
                sh.emb = global[t];
                sh.emb.dim /= shards;
                L->shard[n++] = sh;
            }
            L->comm = 1;
        }
    }
    L->n_shards = n;
    for (int i = 0; i < n; i++) /* update: sparse (not for dense data-parallel tables) */
        if (s->embedding_sparse_update && L->shard[i].kind != EMB_SHARD_DATA_PARALLEL) {
            L->shard[i].emb.sparse_update = 1;
            L->shard[i].emb.amp_unscale = s->precision == PREC_FP16; /* the loss scaler */
        }
    if (L->comm)
        place_shards(s, c, L);
    if (L->twrw_dims)
        place_nodes(s, c, L);
    return 0;
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

/* The shards rank r looks up in one pass (its TBE kernel's list) into `out` (n_shards
 * entries); their count. */
static int shards_of(const dlrm_layout *L, int r, workload_emb *out)
{
    int n = 0;
    for (int k = 0; k < L->n_shards; k++)
        if (on_gpu(L, &L->shard[k], r))
            out[n++] = L->shard[k].emb;
    return n;
}

/* One TBE kernel over rank r's shards; 0 when it has none. */
static double tbe_seconds(const dlrm_layout *L, int r, op_pass pass, const device_spec *dev)
{
    workload_emb *t = xmalloc((size_t)L->n_shards * sizeof *t);
    int n = shards_of(L, r, t);
    double secs = n > 0 ? cost_embedding_seconds(t, n, pass, dev) : 0;
    free(t);
    return secs;
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
 * strategies/memory.c); the shards it holds in their precision with their fused optimizer's
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
    double state = 4.0 * emb_update_state_words(update_of(s->optimizer));
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
            if (op->kind != OP_EMBEDDING_BAG && (!is_bottom(op) || runs_bottom(L, r))) {
                mlp += op->params;
                act +=
                    is_bottom(op) && L->bottom_gpu == r ? wg_all->ops[i].act_bytes : op->act_bytes;
            }
        }
        for (int k = 0; k < L->n_shards; k++) {
            const dlrm_shard *sh = &L->shard[k];
            if (!on_gpu(L, sh, r))
                continue;
            if (sh->kind == EMB_SHARD_DATA_PARALLEL)
                dense += shard_elems(&sh->emb);
            else
                elems += shard_elems(&sh->emb);
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
    htae_graph *g;
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
    if (is_bottom(op) && e->L->bottom_gpu == r)
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
            if (!L->comm) {
                double secs = tbe_seconds(L, r, pass, dev);
                if (secs > 0)
                    EMIT(secs, e->label_tbe);
            } else if (pass == PASS_FWD) {
                /* the TBE after the ids arrived; the outputs sent after it (and after the
                 * bottom MLP on bottom_mlp_gpu) */
                double secs = tbe_seconds(L, r, pass, dev);
                if (secs > 0) {
                    waiting = 1;
                    wait_for = ct->ids;
                    EMIT(secs, e->label_tbe);
                }
                if (have_last && ct->fwd_first != UINT32_MAX)
                    htae_add_edge(e->g, last, ct->fwd_first);
                waiting = ct->fwd_last != UINT32_MAX;
                wait_for = ct->fwd_last;
            } else {
                if (have_last && ct->bwd_first != UINT32_MAX)
                    htae_add_edge(e->g, last, ct->bwd_first);
                if (L->bottom_gpu >= 0) { /* the bottom MLP's gradient comes in the all-to-all */
                    waiting = L->bottom_gpu == r;
                    wait_for = ct->grads;
                }
            }
            continue;
        }
        if (is_bottom(op) && !runs_bottom(L, r))
            continue;
        EMIT(op_seconds(e, i, r, pass, dev), e->label[i]);
    }
    if (L->comm && pass == PASS_BWD) {
        double secs = tbe_seconds(L, r, pass, dev);
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

/* The per-iteration lookup times of each GPU and the shard counts (compiled_plan.dlrm). */
static dlrm_plan_stats *plan_stats(const strategy *s, const cluster *c, const dlrm_layout *L, int M,
                                   double comm_bytes)
{
    dlrm_plan_stats *st = xcalloc(1, sizeof *st);
    int G = L->G;
    st->sharding = s->has_embedding ? (int)s->embedding_sharding : -1;
    st->placement = s->has_placement ? (int)s->placement : -1;
    st->bottom_mlp_gpu = L->bottom_gpu;
    st->per_table = s->has_table_children;
    st->comm = L->comm;
    st->n_tables = L->n_tables;
    st->gpus = G;
    st->owner = xmalloc((size_t)L->n_tables * sizeof *st->owner);
    for (int t = 0; t < L->n_tables; t++)
        st->owner[t] = -1;
    for (int k = L->n_shards - 1; k >= 0; k--) /* a column-wise table: its first shard's */
        st->owner[L->shard[k].table] = L->shard[k].gpu;
    st->tables_of_gpu = xcalloc((size_t)G, sizeof *st->tables_of_gpu);
    st->lookup_s = xcalloc((size_t)G, sizeof *st->lookup_s);
    double sum = 0;
    for (int r = 0; r < G; r++) {
        for (int k = 0; k < L->n_shards; k++)
            st->tables_of_gpu[r] += on_gpu(L, &L->shard[k], r);
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        st->lookup_s[r] =
            M * slow *
            (tbe_seconds(L, r, PASS_FWD, c->device[r]) + tbe_seconds(L, r, PASS_BWD, c->device[r]));
        sum += st->lookup_s[r];
        if (st->lookup_s[r] > st->lookup_max_s)
            st->lookup_max_s = st->lookup_s[r];
    }
    st->lookup_mean_s = sum / G;
    st->lookup_imbalance = sum > 0 ? st->lookup_max_s / st->lookup_mean_s : 0;
    st->alltoall_bytes = M * comm_bytes;
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
    L.bottom_gpu = s->bottom_mlp_gpu;
    L.n_tables = d->n_tables;
    workload_emb *local = xmalloc((size_t)d->n_tables * sizeof *local);
    workload_emb *global = xmalloc((size_t)d->n_tables * sizeof *global);
    double elems;
    gather_tables(&wg, local, &elems);
    gather_tables(&wg_all, global, &elems);
    int rc = build_shards(s, c, local, global, &L, err);
    free(local);
    free(global);
    if (rc) {
        free(L.shard);
        free(L.twrw_dims);
        workload_graph_free(&wg);
        workload_graph_free(&wg_all);
        return rc;
    }
    double mlp_params = 0, bottom_params = 0;
    for (int i = 0; i < wg.n_ops; i++)
        if (wg.ops[i].kind != OP_EMBEDDING_BAG) {
            mlp_params += wg.ops[i].params;
            if (is_bottom(&wg.ops[i]))
                bottom_params += wg.ops[i].params;
        }
    int bottom_width = d->bottom_mlp[d->n_bottom - 1];
    double eb = precision_bytes(d->embedding_precision);
    describe(s, c, &wg, M, out);
    estimate_memory(s, &wg, &wg_all, &L, out);
    for (int r = 0; r < G; r++)
        out->memory_capacity_of_rank[r] = c->device[r]->hbm_bytes;

    htae_graph *g = htae_graph_create(G);
    int *label = xmalloc((size_t)wg.n_ops * sizeof *label);
    for (int i = 0; i < wg.n_ops; i++)
        label[i] = htae_label(g, wg.ops[i].name);
    dlrm_emit e = {g, &wg, &wg_all, &L, s->precision, label, htae_label(g, "tables (TBE)")};
    int label_ids = htae_label(g, "emb all-to-all ids");
    int label_pooled = htae_label(g, "emb all-to-all pooled");
    int label_grads = htae_label(g, "emb all-to-all grads");
    int label_rs = htae_label(g, "emb row-wise reduce-scatter");
    int label_ag = htae_label(g, "emb row-wise grad all-gather");
    int label_mlp_ar = htae_label(g, "dp grad all-reduce");
    int label_tab_ar = htae_label(g, "tables dense grad all-reduce");
    int label_opt = htae_label(g, "optimizer step");

    int *ranks = xmalloc((size_t)G * sizeof *ranks);
    for (int r = 0; r < G; r++)
        ranks[r] = r;
    int grp = G > 1 ? htae_add_group(g, ranks, G) : -1;
    free(ranks);
    double *ids_m = NULL, *pooled_m = NULL, *grads_m = NULL, comm_bytes = 0;
    int pooled_a2a = L.placed > 0 || L.bottom_gpu >= 0;
    /* row-wise outputs: every GPU's partial sums for the whole batch, reduce-scattered to each
     * GPU's micro-batch; their gradients all-gathered back (S = the whole batch's vectors) */
    double rw_bytes = (double)micro * G * L.rw_dims * eb;
    if (L.comm) {
        ids_m = xmalloc((size_t)G * G * sizeof *ids_m);
        pooled_m = xmalloc((size_t)G * G * sizeof *pooled_m);
        grads_m = xmalloc((size_t)G * G * sizeof *grads_m);
        alltoall_matrices(&L, d, micro, s->precision, bottom_width, ids_m, pooled_m);
        for (int i = 0; i < G; i++)
            for (int j = 0; j < G; j++) {
                grads_m[i * G + j] = pooled_m[j * G + i];
                comm_bytes += ids_m[i * G + j] + 2 * pooled_m[i * G + j];
            }
        if (L.rw_dims > 0) /* what a ring moves: (G - 1) / G of S per GPU, each way */
            comm_bytes += 2.0 * (G - 1) * rw_bytes;
    }
    /* table-row-wise: per node a reduce-scatter of its GPUs' partial sums for the whole
     * batch (S = micro x G x the node's dims), then across nodes an all-to-all among the GPUs
     * of the same local index (node n's GPU k holds the sums of the micro-batches of every
     * node's GPU k: micro x dims to each); backward the transpose, then the all-gather */
    int N = L.n_nodes, P = L.per_node;
    int *grp_node = NULL, *grp_cross = NULL;
    double *cross_m = NULL, *cross_t = NULL;
    if (L.twrw_dims) {
        grp_node = xmalloc((size_t)N * sizeof *grp_node);
        grp_cross = xmalloc((size_t)P * sizeof *grp_cross);
        int *members = xmalloc((size_t)(N > P ? N : P) * sizeof *members);
        for (int n = 0; n < N; n++) {
            for (int k = 0; k < P; k++)
                members[k] = n * P + k;
            grp_node[n] = P > 1 ? htae_add_group(g, members, P) : -1;
        }
        for (int k = 0; k < P; k++) {
            for (int n = 0; n < N; n++)
                members[n] = n * P + k;
            grp_cross[k] = N > 1 ? htae_add_group(g, members, N) : -1;
        }
        free(members);
        cross_m = xcalloc((size_t)N * N, sizeof *cross_m);
        cross_t = xcalloc((size_t)N * N, sizeof *cross_t);
        for (int n = 0; n < N; n++) {
            double S = (double)micro * G * L.twrw_dims[n] * eb;
            if (P > 1)
                comm_bytes += 2.0 * (P - 1) * S;
            for (int m = 0; m < N; m++)
                if (m != n) {
                    cross_m[n * N + m] = (double)micro * L.twrw_dims[n] * eb;
                    cross_t[m * N + n] = cross_m[n * N + m];
                    comm_bytes += 2.0 * P * cross_m[n * N + m];
                }
        }
    }
    int label_trs = htae_label(g, "emb table-row-wise reduce-scatter");
    int label_tx = htae_label(g, "emb table-row-wise all-to-all");
    int label_tag = htae_label(g, "emb table-row-wise grad all-gather");
    int label_txg = htae_label(g, "emb table-row-wise grad all-to-all");
    const uint32_t NONE = UINT32_MAX;
    uint32_t *tk = xmalloc((size_t)G * sizeof *tk);
    dlrm_comm_tasks *ct = xmalloc((size_t)G * sizeof *ct);
    uint32_t *last = xmalloc((size_t)G * sizeof *last);
    uint32_t *last_comm = L.comm ? xmalloc((size_t)G * sizeof *last_comm) : NULL;
/* the tasks of one collective over `members` ranks, in stream order on each: the forward's
 * outputs (fwd 1) or the backward's (fwd 0) */
#define NOTE(members, n, fwd)                                                                      \
    for (int q = 0; q < (n); q++) {                                                                \
        int r_ = (members)[q];                                                                     \
        if ((fwd) && ct[r_].fwd_first == NONE)                                                     \
            ct[r_].fwd_first = tk[q];                                                              \
        if (!(fwd) && ct[r_].bwd_first == NONE)                                                    \
            ct[r_].bwd_first = tk[q];                                                              \
        *((fwd) ? &ct[r_].fwd_last : &ct[r_].bwd_last) = tk[q];                                    \
    }
    int *all = xmalloc((size_t)G * sizeof *all), *sub = xmalloc((size_t)G * sizeof *sub);
    for (int r = 0; r < G; r++)
        all[r] = r;
    for (int mb = 0; mb < M; mb++) {
        for (int r = 0; r < G; r++)
            ct[r] = (dlrm_comm_tasks){NONE, NONE, NONE, 0, NONE, NONE};
        if (L.comm) { /* every rank's stream order: ids; pooled, row-wise reduce-scatter,
                         table-row-wise reduce-scatter and all-to-all; then the backward's */
            htae_add_alltoallv(g, grp, STREAM_TP, ids_m, CAT_EMB_COMM, label_ids, mb, tk);
            for (int r = 0; r < G; r++)
                ct[r].ids = tk[r];
            if (pooled_a2a) {
                htae_add_alltoallv(g, grp, STREAM_TP, pooled_m, CAT_EMB_COMM, label_pooled, mb, tk);
                NOTE(all, G, 1);
            }
            if (L.rw_dims > 0) {
                htae_add_collective(g, COLL_REDUCE_SCATTER, grp, STREAM_TP, rw_bytes, CAT_EMB_COMM,
                                    label_rs, mb, tk);
                NOTE(all, G, 1);
            }
            for (int n = 0; L.twrw_dims && P > 1 && n < N; n++) {
                if (L.twrw_dims[n] == 0)
                    continue;
                htae_add_collective(g, COLL_REDUCE_SCATTER, grp_node[n], STREAM_TP,
                                    (double)micro * G * L.twrw_dims[n] * eb, CAT_EMB_COMM,
                                    label_trs, mb, tk);
                for (int k = 0; k < P; k++)
                    sub[k] = n * P + k;
                NOTE(sub, P, 1);
            }
            for (int k = 0; L.twrw_dims && N > 1 && k < P; k++) {
                htae_add_alltoallv(g, grp_cross[k], STREAM_TP, cross_m, CAT_EMB_COMM, label_tx, mb,
                                   tk);
                for (int n = 0; n < N; n++)
                    sub[n] = n * P + k;
                NOTE(sub, N, 1);
            }
            if (pooled_a2a) {
                htae_add_alltoallv(g, grp, STREAM_TP, grads_m, CAT_EMB_COMM, label_grads, mb, tk);
                for (int r = 0; r < G; r++)
                    ct[r].grads = tk[r];
                NOTE(all, G, 0);
            }
            if (L.rw_dims > 0) {
                htae_add_collective(g, COLL_ALLGATHER, grp, STREAM_TP, rw_bytes, CAT_EMB_COMM,
                                    label_ag, mb, tk);
                NOTE(all, G, 0);
            }
            for (int k = 0; L.twrw_dims && N > 1 && k < P; k++) {
                htae_add_alltoallv(g, grp_cross[k], STREAM_TP, cross_t, CAT_EMB_COMM, label_txg, mb,
                                   tk);
                for (int n = 0; n < N; n++)
                    sub[n] = n * P + k;
                NOTE(sub, N, 0);
            }
            for (int n = 0; L.twrw_dims && P > 1 && n < N; n++) {
                if (L.twrw_dims[n] == 0)
                    continue;
                htae_add_collective(g, COLL_ALLGATHER, grp_node[n], STREAM_TP,
                                    (double)micro * G * L.twrw_dims[n] * eb, CAT_EMB_COMM,
                                    label_tag, mb, tk);
                for (int k = 0; k < P; k++)
                    sub[k] = n * P + k;
                NOTE(sub, P, 0);
            }
        }
        for (int r = 0; r < G; r++) {
            const device_spec *dev = c->device[r];
            double slow = c->slowdown ? c->slowdown[r] : 1.0;
            if (L.comm)
                last_comm[r] = ct[r].bwd_last != NONE ? ct[r].bwd_last : ct[r].ids;
            emit_pass(&e, PASS_FWD, r, dev, slow, mb, &ct[r]);
            last[r] = emit_pass(&e, PASS_BWD, r, dev, slow, mb, &ct[r]);
        }
    }
#undef NOTE
    free(all);
    free(sub);
    free(ct);
    free(tk);
    free(grp_node);
    free(grp_cross);
    free(cross_m);
    free(cross_t);
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
            /* a GPU's backward ends with its last kernel and its last gradient collective (a
             * GPU without shards has nothing after it) */
            htae_add_edge(g, last[r], ids[r]);
            if (last_comm)
                htae_add_edge(g, last_comm[r], ids[r]);
            dp_last[r] = ids[r];
        }
        if (L.dense_elems > 0) {
            htae_add_collective(g, COLL_ALLREDUCE, grp, STREAM_DP, L.dense_elems * eb, CAT_DP_COMM,
                                label_tab_ar, -1, ids);
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
        if (L.dense_elems > 0)
            secs += cost_optimizer_seconds(L.dense_elems, adam, d->embedding_precision, dev);
        uint32_t t = htae_add_compute(
            g, r, CAT_OPTIMIZER, secs * slow + cost_iteration_overhead_seconds(), label_opt, -1);
        htae_add_edge(g, dp_last ? dp_last[r] : last[r], t);
    }
    out->dlrm = plan_stats(s, c, &L, M, comm_bytes);
    free(dp_last);
    free(last);
    free(last_comm);
    free(ids_m);
    free(pooled_m);
    free(grads_m);
    free(label);
    free(L.shard);
    free(L.twrw_dims);
    workload_graph_free(&wg);
    workload_graph_free(&wg_all);
    out->graph = g;
    return htae_graph_finalize(g, err);
}
