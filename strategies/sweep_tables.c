/* sweep_tables.c: `tables_sharding: auto`: per-table sharding plans proposed the way TorchRec's
 * planner does (docs/design-notes.md, "DLRM sharding sweeps"): per table the shardings that
 * fit one GPU, each with an estimated cost; a greedy walk over them, then the uniform plans. */
#include "sweep_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "../sim/cost/cost.h"

/* The runtime reserve of a GPU (strategies/compile/dlrm_plan.c): a shard must fit in the rest. */
static const double RESERVE_BYTES = 2.0 * 1073741824.0;
/* TorchRec's smallest column shard (planner constants MIN_CW_DIM). */
enum { MIN_COLUMN_DIM = 128, N_SHARDINGS = 5 };

int sweep_tables_column_shards(int dim)
{
    int k = dim / MIN_COLUMN_DIM;
    return k >= 2 && dim % MIN_COLUMN_DIM == 0 ? k : 0;
}

/* One sharding option of one table: the estimated seconds per micro-batch of its busiest
 * shard (lookup forward + backward on its GPU, and the bytes that GPU moves for it over the
 * narrowest route), the bytes of its largest shard and of all its shards. */
typedef struct table_option {
    int sharding;
    double perf_s, storage_max, storage_sum;
    double perf_sum_s; /* over its shards (filled by table_options) */
    int n_shards;
} table_option;

/* What the estimates need, fixed for the sweep. */
typedef struct plan_env {
    const device_spec *dev;
    int G, gpus_per_node, nodes, M;
    double bw;         /* the narrowest route between two GPUs, bytes/s */
    double capacity;   /* a GPU's bytes for tables */
    emb_update update; /* the fused optimizer */
    int adam;
    precision_t emb_prec; /* the tables' */
} plan_env;

static double lookup_s(const workload_emb *e, const device_spec *dev)
{
    return cost_embedding_seconds(e, 1, PASS_FWD, dev) +
           cost_embedding_seconds(e, 1, PASS_BWD, dev);
}

/* One row slice of `over` (row-wise over the GPUs, table-row-wise over a node's) looked up
 * for the whole batch, as strategies/compile/dlrm_plan.c builds it. */
static double slice_s(const workload_emb *global, int over, const device_spec *dev)
{
    workload_emb e = *global;
    e.lookups /= over;
    e.unique /= over;
    e.row_shards = over;
    return lookup_s(&e, dev);
}

/* The options of table t that fit a GPU, cheapest first (ties: the sharding's order); their
 * count. local: the table's lookups at the micro-batch; global: at micro x G. */
static int table_options(const plan_env *env, const workload_emb *local, const workload_emb *global,
                         double pooling, table_option *opt)
{
    const int G = env->G;
    const double R = global->rows, d = global->dim, eb = global->elem_bytes;
    const double state = 4.0 * emb_update_state_words(global->update);
    const double bytes = R * d * (eb + state), share = (G - 1.0) / G;
    /* per owning GPU and micro-batch: the ids it receives, the pooled vectors it sends (and
     * their gradients back) */
    const double ids = global->bags * (pooling + 1.0) * 8.0 * share;
    const double pooled = global->bags * d * eb * share;
    const double whole = lookup_s(global, env->dev);
    table_option all[N_SHARDINGS];
    int n = 0;
    /* table-wise: one GPU looks it up for the whole batch */
    all[n++] = (table_option){
        EMB_SHARD_TABLE_WISE, whole + (ids + 2 * pooled) / env->bw, bytes, bytes, 0, 0};
    /* row-wise: every GPU a 1/G slice of the rows and of the lookups (the compiler's slice:
     * rows / G, lookups and distinct rows / G); the partial pooled vectors reduce-scattered
     * forward, their gradients all-gathered backward */
    all[n++] = (table_option){EMB_SHARD_ROW_WISE,
                              slice_s(global, G, env->dev) + (ids + 2 * pooled) / env->bw,
                              ceil(R / G) * d * (eb + state),
                              bytes,
                              0,
                              0};
    int k = sweep_tables_column_shards((int)d);
    if (k) { /* column-wise: k tables of d / k columns, each looked up for the whole batch */
        workload_emb cw = *global;
        cw.dim = d / k;
        all[n++] = (table_option){EMB_SHARD_COLUMN_WISE,
                                  lookup_s(&cw, env->dev) + (ids + 2 * pooled / k) / env->bw,
                                  bytes / k,
                                  bytes,
                                  0,
                                  0};
    }
    if (env->nodes > 1) { /* table-row-wise: rows over one node's GPUs */
        int g = env->gpus_per_node;
        all[n++] = (table_option){EMB_SHARD_TABLE_ROW_WISE,
                                  slice_s(global, g, env->dev) + (ids + 2 * pooled) / env->bw,
                                  ceil(R / g) * d * (eb + state),
                                  bytes,
                                  0,
                                  0};
    }
    /* data-parallel: every GPU its micro-batch, the backward only scatters; per iteration the
     * dense gradient's ring all-reduce and the dense optimizer step, shared by the M
     * micro-batches */
    workload_emb dp = *local;
    dp.update = EMB_UPDATE_SGD;
    double dp_s = cost_embedding_seconds(local, 1, PASS_FWD, env->dev) +
                  cost_embedding_seconds(&dp, 1, PASS_BWD, env->dev) +
                  (2.0 * share * R * d * eb / env->bw +
                   cost_optimizer_seconds(R * d, env->adam, env->emb_prec, 1, env->dev)) /
                      env->M;
    double dp_bytes = R * d * (2 * eb + state);
    all[n++] = (table_option){EMB_SHARD_DATA_PARALLEL, dp_s, dp_bytes, dp_bytes * G, 0, 0};
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = all[i].sharding;
        all[i].n_shards = k == EMB_SHARD_TABLE_WISE       ? 1
                          : k == EMB_SHARD_COLUMN_WISE    ? sweep_tables_column_shards((int)d)
                          : k == EMB_SHARD_TABLE_ROW_WISE ? env->gpus_per_node
                                                          : G;
        all[i].perf_sum_s = all[i].perf_s * all[i].n_shards;
        if (all[i].storage_max <= env->capacity)
            opt[m++] = all[i];
    }
    return m;
}

/* Sort a table's options cheapest first by its busiest shard (depth) or by the sum over its
 * shards (ties: the sharding's order). */
static void sort_options(table_option *opt, int m, int by_sum)
{
    for (int i = 1; i < m; i++) /* insertion sort: stable, at most 5 */
        for (int j = i; j > 0; j--) {
            double a = by_sum ? opt[j].perf_sum_s : opt[j].perf_s;
            double b = by_sum ? opt[j - 1].perf_sum_s : opt[j - 1].perf_s;
            if (!(a < b || (a == b && opt[j].sharding < opt[j - 1].sharding)))
                break;
            table_option x = opt[j];
            opt[j] = opt[j - 1];
            opt[j - 1] = x;
        }
}

/* Append a proposal unless an earlier one is the same. */
static void add_proposal(sweep_spec *s, const unsigned char *pick, int n_tables, size_t *cap)
{
    for (int i = 0; i < s->n_proposals; i++)
        if (!memcmp(s->proposals[i], pick, (size_t)n_tables))
            return;
    xgrow(&s->proposals, sizeof *s->proposals, (size_t)s->n_proposals + 1, cap);
    memset(s->proposals[s->n_proposals], 0, sizeof *s->proposals);
    memcpy(s->proposals[s->n_proposals++], pick, (size_t)n_tables);
}

/* The estimates' constants from the cluster and the base strategy. */
static void plan_env_init(const sweep_spec *s, const cluster *c, plan_env *env)
{
    env->dev = c->device[0];
    env->G = c->n_gpus;
    env->nodes = c->n_nodes > 0 ? c->n_nodes : 1;
    env->gpus_per_node = c->n_gpus / env->nodes;
    env->M = strategy_micro_batches(&s->base);
    if (env->M < 1)
        env->M = 1;
    env->bw = INFINITY;
    for (int a = 0; a < c->n_gpus; a++)
        for (int b = 0; b < c->n_gpus; b++) {
            double bw, lat;
            if (a == b)
                continue;
            cluster_route(c, a, b, &bw, &lat);
            if (bw < env->bw)
                env->bw = bw;
        }
    env->capacity = env->dev->hbm_bytes - RESERVE_BYTES;
    env->adam = s->base.optimizer == OPT_ADAM;
    env->emb_prec = s->base.model.dlrm.embedding_precision;
    env->update = s->base.optimizer == OPT_ADAGRAD ? EMB_UPDATE_ADAGRAD
                  : env->adam                      ? EMB_UPDATE_ADAM
                                                   : EMB_UPDATE_SGD;
}

/* The tables' lookups of the base model at `batch` (the graph's OP_EMBEDDING_BAG ops). */
static int tables_at(const sweep_spec *s, int batch, emb_update update, workload_emb *out,
                     ps_error *err)
{
    workload_graph g;
    if (workload_build_dlrm(&s->base.model, batch, s->base.precision, update, &g, err))
        return err->code;
    int n = 0;
    for (int i = 0; i < g.n_ops; i++)
        if (g.ops[i].kind == OP_EMBEDDING_BAG)
            out[n++] = g.ops[i].emb;
    workload_graph_free(&g);
    return 0;
}

int sweep_tables_propose(sweep_spec *s, const cluster *c, ps_error *err)
{
    const sweep_axis *a = &s->axes[SWEEP_TABLES_SHARDING];
    if (!a->present)
        return 0;
    if (c->n_gpus < 2)
        return ps_error_set(err, PS_EINPUT, s->file, a->loc.line, a->loc.column,
                            "axes.tables_sharding",
                            "sharding plans need at least 2 GPUs; the cluster has %d", c->n_gpus);
    plan_env env;
    plan_env_init(s, c, &env);
    if (!(env.dev->l2_bytes > 0)) /* the lookup's cache rule needs it (cost_embedding.c) */
        return ps_error_set(err, PS_EINPUT, s->file, a->loc.line, a->loc.column,
                            "axes.tables_sharding",
                            "the sharding planner costs the embedding lookups on %s, which has "
                            "no l2_mib in the device table (the lookup's cache rule needs it)",
                            env.dev->name);
    const workload_dlrm *d = &s->base.model.dlrm;
    int n = d->n_tables;
    static workload_emb local[DLRM_MAX_TABLES], global[DLRM_MAX_TABLES];
    static table_option opt[DLRM_MAX_TABLES][N_SHARDINGS];
    int n_opt[DLRM_MAX_TABLES], idx[DLRM_MAX_TABLES];
    if (tables_at(s, s->base.micro_batch, env.update, local, err) ||
        tables_at(s, s->base.micro_batch * env.G, env.update, global, err))
        return err->code;
    for (int t = 0; t < n; t++) {
        n_opt[t] = table_options(&env, &local[t], &global[t], d->pooling[t], opt[t]);
        idx[t] = 0;
        if (n_opt[t] == 0)
            return ps_error_set(err, PS_EINPUT, s->file, a->loc.line, a->loc.column,
                                "axes.tables_sharding",
                                "table %d (%d rows of dim %d) fits no GPU of %.1f GiB under any "
                                "sharding",
                                t, d->rows[t], d->dim[t], env.dev->hbm_bytes / 1073741824.0);
    }
    size_t cap = 0;
    unsigned char pick[DLRM_MAX_TABLES];
    /* greedy, twice (options by their busiest shard, then by the sum over their shards):
     * every table its cheapest option, then the table whose current option has the largest
     * shard (then the largest total; then the lower table) takes its next one */
    for (int by_sum = 0; by_sum < 2; by_sum++) {
        for (int t = 0; t < n; t++) {
            sort_options(opt[t], n_opt[t], by_sum);
            idx[t] = 0;
        }
        for (;;) {
            for (int t = 0; t < n; t++)
                pick[t] = (unsigned char)opt[t][idx[t]].sharding;
            add_proposal(s, pick, n, &cap);
            int best = -1;
            for (int t = 0; t < n; t++) {
                if (idx[t] + 1 >= n_opt[t])
                    continue;
                const table_option *o = &opt[t][idx[t]];
                const table_option *b = best < 0 ? NULL : &opt[best][idx[best]];
                if (!b || o->storage_max > b->storage_max ||
                    (o->storage_max == b->storage_max && o->storage_sum > b->storage_sum))
                    best = t;
            }
            if (best < 0)
                break;
            idx[best]++;
        }
    }
    /* uniform: one sharding for every table, where it fits them all */
    for (int k = 0; k < N_SHARDINGS; k++) {
        int all = 1;
        for (int t = 0; t < n && all; t++) {
            int has = 0;
            for (int i = 0; i < n_opt[t]; i++)
                has |= opt[t][i].sharding == k;
            all = has;
        }
        if (!all)
            continue;
        memset(pick, k, (size_t)n);
        add_proposal(s, pick, n, &cap);
    }
    return 0;
}
