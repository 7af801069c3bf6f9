/* dlrm_shard.c: the tables of a recommendation-model plan as shards (whole tables, column
 * shards, row-wise and table-row-wise slices), their placement on GPUs or nodes, and per GPU
 * what it looks up (its TBE kernel) and the plan's lookup statistics (compiled_plan.dlrm). */
#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"
#include "dlrm_shard.h"

#include <stdlib.h>
#include <string.h>

emb_update dlrm_update_of(optimizer_kind o)
{
    switch (o) {
    case OPT_ADAGRAD: return EMB_UPDATE_ADAGRAD;
    case OPT_ADAM: return EMB_UPDATE_ADAM;
    default: return EMB_UPDATE_SGD;
    }
}

int dlrm_on_gpu(const dlrm_layout *L, const dlrm_shard *sh, int r)
{
    if (sh->node >= 0)
        return L->node_of[r] == sh->node;
    return sh->gpu < 0 || sh->gpu == r;
}

/* Elements of the slice of the table a shard holds. */
double dlrm_shard_elems(const workload_emb *e)
{
    return e->rows / (e->row_shards > 1 ? e->row_shards : 1.0) * e->dim;
}

/* Bytes a shard needs on its GPU: its elements in the storage precision plus the fused
 * optimizer's fp32 state per element. */
static double shard_bytes(const workload_emb *e)
{
    return dlrm_shard_elems(e) * (e->elem_bytes + 4.0 * emb_update_state_words(e->update));
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
int dlrm_build_shards(const strategy *s, const cluster *c, const workload_emb *local,
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
int dlrm_runs_bottom(const dlrm_layout *L, int r)
{
    return L->bottom_gpu < 0 || L->bottom_gpu == r;
}

int dlrm_is_bottom(const workload_op *op)
{
    return !strncmp(op->name, "bottom_mlp.", 11);
}

/* The shards rank r looks up in one pass (its TBE kernel's list) into `out` (n_shards
 * entries); their count. */
static int shards_of(const dlrm_layout *L, int r, workload_emb *out)
{
    int n = 0;
    for (int k = 0; k < L->n_shards; k++)
        if (dlrm_on_gpu(L, &L->shard[k], r))
            out[n++] = L->shard[k].emb;
    return n;
}

/* One TBE kernel over rank r's shards; 0 when it has none. */
double dlrm_tbe_seconds(const dlrm_layout *L, int r, op_pass pass, const device_spec *dev)
{
    workload_emb *t = xmalloc((size_t)L->n_shards * sizeof *t);
    int n = shards_of(L, r, t);
    double secs = n > 0 ? cost_embedding_seconds(t, n, pass, dev) : 0;
    free(t);
    return secs;
}

/* The per-iteration lookup times of each GPU and the shard counts (compiled_plan.dlrm). */
dlrm_plan_stats *dlrm_plan_stats_create(const strategy *s, const cluster *c, const dlrm_layout *L,
                                        int M, double comm_bytes)
{
    dlrm_plan_stats *st = xcalloc(1, sizeof *st);
    int G = L->G;
    st->sharding = s->has_embedding ? (int)s->embedding_sharding : -1;
    st->placement = s->has_placement ? (int)s->placement : -1;
    st->bottom_mlp_gpu = L->bottom_gpu;
    st->per_table = s->has_table_children;
    st->comm = L->comm;
    st->sparse_update = s->embedding_sparse_update;
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
            st->tables_of_gpu[r] += dlrm_on_gpu(L, &L->shard[k], r);
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        st->lookup_s[r] = M * slow *
                          (dlrm_tbe_seconds(L, r, PASS_FWD, c->device[r]) +
                           dlrm_tbe_seconds(L, r, PASS_BWD, c->device[r]));
        sum += st->lookup_s[r];
        if (st->lookup_s[r] > st->lookup_max_s)
            st->lookup_max_s = st->lookup_s[r];
    }
    st->lookup_mean_s = sum / G;
    st->lookup_imbalance = sum > 0 ? st->lookup_max_s / st->lookup_mean_s : 0;
    st->alltoall_bytes = M * comm_bytes;
    return st;
}

void dlrm_layout_free(dlrm_layout *L)
{
    free(L->shard);
    free(L->twrw_dims);
}
