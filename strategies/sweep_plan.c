/* sweep_plan.c: enumerating a sweep's plans (the cartesian product of its axes) and judging
 * each: the GPU count, then strategy_validate on the base strategy with the plan applied. */
#include "sweep_plan.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../sim/base/xalloc.h"

static const char *const status_names[] = {"ok", "oom", "failed", "invalid", "pending"};
const enum_names sweep_plan_status_names = ENUM_NAMES(status_names);

void sweep_plans_count(const sweep_plan *plans, int n, int counts[SWEEP_PLAN_STATUS_COUNT])
{
    memset(counts, 0, SWEEP_PLAN_STATUS_COUNT * sizeof counts[0]);
    for (int i = 0; i < n; i++)
        if (plans[i].status >= 0 && plans[i].status < SWEEP_PLAN_STATUS_COUNT)
            counts[plans[i].status]++;
}

/* ---- a plan and the strategy ---- */

static const char *short_recompute(int r)
{
    return r == RECOMPUTE_SELECTIVE ? "sel"
           : r == RECOMPUTE_FULL    ? "full"
           : r == RECOMPUTE_OP      ? "op"
                                    : "none";
}

const char *sweep_sharding_short(int sharding)
{
    static const char *const names[] = {"tw", "rw", "cw", "twrw", "dp"};
    return sharding >= 0 && sharding < 5 ? names[sharding] : "?";
}

void sweep_plan_tables_text(const sweep_plan *p, char *out, size_t n)
{
    size_t k = 0;
    out[0] = '\0';
    for (int t = 0; p->proposal >= 0 && t < p->n_tables && k + 6 < n; t++)
        k += (size_t)snprintf(out + k, n - k, "%s%s", t ? " " : "",
                              sweep_sharding_short(p->table_sharding[t]));
}

/* A dlrm plan's label: data degree, micro-batch, the sharding (or the proposal's counts per
 * sharding), the placement. */
static void dlrm_label(const sweep_plan *p, char *out, size_t n)
{
    const plan_desc *d = &p->desc;
    int k = snprintf(out, n, "dp%d mb%d", d->dp, d->micro_batch);
    if (p->proposal >= 0) {
        int count[5] = {0};
        for (int t = 0; t < p->n_tables; t++)
            if (p->table_sharding[t] < 5)
                count[p->table_sharding[t]]++;
        if (k > 0 && (size_t)k < n)
            k += snprintf(out + k, n - (size_t)k, " auto%d", p->proposal);
        for (int i = 0; i < 5; i++)
            if (count[i] && k > 0 && (size_t)k < n)
                k += snprintf(out + k, n - (size_t)k, " %s%d", sweep_sharding_short(i), count[i]);
    } else if (k > 0 && (size_t)k < n) {
        k += snprintf(out + k, n - (size_t)k, " %s",
                      d->emb_sharding < 0 ? "one-gpu"
                                          : enum_name(emb_sharding_names, d->emb_sharding));
        if (d->emb_shards > 0 && k > 0 && (size_t)k < n)
            k += snprintf(out + k, n - (size_t)k, " x%d", d->emb_shards);
    }
    if (d->emb_placement >= 0 && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, " %s", enum_name(emb_placement_names, d->emb_placement));
}

void sweep_plan_label(const sweep_plan *p, int show_gpus, int show_bucket, int show_sp, char *out,
                      size_t n)
{
    const plan_desc *d = &p->desc;
    if (show_gpus) {
        int k = snprintf(out, n, "gpus%d ", p->gpus);
        if (k > 0 && (size_t)k < n) {
            out += k;
            n -= (size_t)k;
        }
    }
    if (p->n_tables > 0) {
        dlrm_label(p, out, n);
        return;
    }
    char sched[32];
    if (d->schedule == SCHED_INTERLEAVED)
        snprintf(sched, sizeof sched, "int-v%d", d->virtual_stages);
    else
        snprintf(sched, sizeof sched, "%s", schedule_name((pipeline_schedule)d->schedule));
    int k = snprintf(out, n, "tp%d pp%d dp%d mb%d %s zero%d %s", d->tp, d->pp, d->dp,
                     d->micro_batch, sched, d->zero, short_recompute(d->recompute));
    if (d->cp > 1 && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, " cp%d", d->cp);
    if (show_bucket && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, " b%g", d->bucket_mb);
    if (show_sp && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, " %s", d->sequence_parallel ? "sp" : "nosp");
    if (d->shard_degree > 0 && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, " shard%d", d->shard_degree);
    if (d->ep > 1 && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, " ep%d", d->ep);
}

void sweep_plan_apply(const plan_desc *d, strategy *s)
{
    s->tp = d->tp;
    s->pp = d->pp;
    s->dp = d->dp;
    s->cp = d->cp;
    s->micro_batch = d->micro_batch;
    s->global_batch = d->global_batch;
    s->schedule = (pipeline_schedule)d->schedule;
    s->virtual_stages = d->virtual_stages;
    s->zero = d->zero;
    s->shard_degree = d->shard_degree;
    s->recompute = (recompute_mode)d->recompute;
    s->bucket_mb = d->bucket_mb;
    s->sequence_parallel = d->sequence_parallel;
    s->ep = d->ep;
    s->etp = d->etp;
    strategy_set_precision(s, d->precision);
    if (s->model.family == FAMILY_DLRM) {
        s->has_embedding = d->emb_sharding >= 0;
        if (s->has_embedding)
            s->embedding_sharding = (emb_sharding)d->emb_sharding;
        s->has_placement = d->emb_placement >= 0;
        if (s->has_placement) /* an explicit list stays the base's */
            s->placement = (emb_placement)d->emb_placement;
        s->embedding_shards = d->emb_shards;
    }
}

/* The tables of p whose sharding is not the root's become children "tables.N" (a column-wise
 * one with TorchRec's column shards, also when its shards differ from the root's). */
static void set_table_children(const sweep_plan *p, strategy *s)
{
    const workload_dlrm *d = &s->model.dlrm;
    int root = (int)s->embedding_sharding;
    s->has_table_children = 0;
    s->embedding_shards = 0;
    for (int t = 0; t < p->n_tables && root == EMB_SHARD_COLUMN_WISE; t++)
        if (p->table_sharding[t] == root) {
            s->embedding_shards = sweep_tables_column_shards(d->dim[t]);
            break;
        }
    for (int t = 0; t < p->n_tables; t++) {
        int k = p->table_sharding[t];
        int shards = k == EMB_SHARD_COLUMN_WISE ? sweep_tables_column_shards(d->dim[t]) : 0;
        s->table_has_sharding[t] =
            k != root || (k == EMB_SHARD_COLUMN_WISE && shards != s->embedding_shards);
        if (!s->table_has_sharding[t])
            continue;
        s->table_sharding[t] = (emb_sharding)k;
        s->table_shards[t] = shards;
        s->table_loc[t] = s->table_shards_loc[t] = s->embedding_loc;
        snprintf(s->table_path[t], sizeof s->table_path[t], "tables.%d", t);
        s->has_table_children = 1;
    }
}

void sweep_plan_apply_tables(const sweep_plan *p, strategy *s)
{
    if (p->proposal < 0)
        return;
    int count[5] = {0}, root = 0;
    for (int t = 0; t < p->n_tables; t++)
        count[p->table_sharding[t]]++;
    for (int i = 1; i < 5; i++)
        if (count[i] > count[root])
            root = i;
    s->has_embedding = 1;
    s->embedding_sharding = (emb_sharding)root;
    set_table_children(p, s);
}

void sweep_plan_strategy(const sweep_spec *s, const sweep_plan *p, strategy *out)
{
    strategy_clone(&s->base, out);
    sweep_plan_apply(&p->desc, out);
    sweep_plan_apply_tables(p, out);
}

/* ---- validity ---- */

static void mark_invalid(sweep_plan *p, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mark_invalid(sweep_plan *p, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    snprintf(p->reason_kind, sizeof p->reason_kind, "%s", kind);
    p->status = SWEEP_PLAN_INVALID;
}

/* Whether a sharding places its shards by the placement (table-wise, column-wise, and
 * table-row-wise, which places a table on a node; strategy_validate's rule). */
static int is_placed(int k)
{
    return k == EMB_SHARD_TABLE_WISE || k == EMB_SHARD_COLUMN_WISE || k == EMB_SHARD_TABLE_ROW_WISE;
}

/* Whether a dlrm plan places tables on GPUs: else a placement means nothing for it. */
static int places_tables(const sweep_plan *p)
{
    if (p->proposal < 0)
        return is_placed(p->desc.emb_sharding);
    for (int t = 0; t < p->n_tables; t++)
        if (is_placed(p->table_sharding[t]))
            return 1;
    return 0;
}

/* The shards axis applies to column-wise plans: another plan drops the shards, and only the
 * axis's first value's plan stays (the others are the same plan: invalid, with that reason).
 * 1 when marked invalid. */
static int drop_shards(const sweep_spec *s, sweep_plan *p, const int *digit)
{
    plan_desc *d = &p->desc;
    if (d->emb_shards == 0 || d->emb_sharding == EMB_SHARD_COLUMN_WISE || p->proposal >= 0)
        return 0;
    const sweep_axis *a = &s->axes[SWEEP_SHARDS];
    if (a->present && digit[SWEEP_SHARDS] > 0) {
        mark_invalid(p, "shards",
                     "shards %d: the plan is not column-wise, the same plan as with shards %g",
                     d->emb_shards, a->values[0]);
        return 1;
    }
    d->emb_shards = 0;
    return 0;
}

/* A dlrm plan whose tables take no placement (row-wise, data-parallel) drops
 * the base's or the axis's placement; with a placement axis, only its first value's plan
 * stays, the others are the same plan (invalid, with that reason). 1 when marked invalid. */
static int drop_placement(const sweep_spec *s, sweep_plan *p, const int *digit)
{
    plan_desc *d = &p->desc;
    if (drop_shards(s, p, digit))
        return 1;
    if (d->emb_placement < 0 || places_tables(p))
        return 0;
    const sweep_axis *a = &s->axes[SWEEP_PLACEMENT];
    if (a->present && digit[SWEEP_PLACEMENT] > 0) {
        mark_invalid(p, "placement",
                     "placement %s: no table of this plan is placed (row-wise or "
                     "data-parallel), the same plan as with placement %s",
                     enum_name(emb_placement_names, d->emb_placement),
                     enum_name(emb_placement_names, (int)a->values[0]));
        return 1;
    }
    d->emb_placement = -1;
    return 0;
}

/* Judges one combination: marks it invalid with the reason, or leaves it pending. With
 * `data: auto` the data degree is derived from the GPU count first. */
static void check_plan(const strategy *base, int gpus, int data_auto, sweep_plan *p)
{
    plan_desc *d = &p->desc;
    if (data_auto) {
        /* each factor is at most PS_MAX_GPUS (2^17): the product fits in 64 bits */
        int64_t tcp = (int64_t)d->tp * d->cp * d->pp;
        if (gpus % tcp) {
            mark_invalid(p, "gpus",
                         "tensor %d x context %d x pipeline %d does not divide the %d GPUs", d->tp,
                         d->cp, d->pp, gpus);
            return;
        }
        d->dp = (int)(gpus / tcp);
    }
    strategy v = *base; /* shallow: only read */
    sweep_plan_apply(d, &v);
    sweep_plan_apply_tables(p, &v);
    ps_error e;
    ps_error_clear(&e);
    if (strategy_check_gpus(&v, gpus, &e)) {
        mark_invalid(p, "gpus", "%s", e.message);
        return;
    }
    ps_error_clear(&e);
    if (strategy_validate(&v, &e))
        mark_invalid(p, e.field, "%s", e.message);
}

/* ---- enumeration ---- */

/* Combinations of the axes; PS_EINPUT beyond constraints.max_plans. */
static int count_combinations(const sweep_spec *s, long *total, ps_error *err)
{
    long t = 1;
    for (int k = 0; k < SWEEP_AXIS_COUNT; k++) {
        t *= sweep_axis_count(s, (sweep_axis_kind)k);
        if (t <= s->max_plans)
            continue;
        for (int j = k + 1; j < SWEEP_AXIS_COUNT && t < 1L << 40; j++)
            t *= sweep_axis_count(s, (sweep_axis_kind)j);
        src_loc l = s->max_plans_loc.line ? s->max_plans_loc : s->axes_loc;
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "constraints.max_plans",
                            "the axes give %ld combinations, more than max_plans %d "
                            "(shorten the axes or raise constraints.max_plans)",
                            t, s->max_plans);
    }
    *total = t;
    return 0;
}

/* The combination digit[] selects: the base plan with each present axis's value. */
static void combination(const sweep_spec *s, const int digit[SWEEP_AXIS_COUNT], plan_desc *d)
{
    strategy_plan_desc(&s->base, d);
    d->virtual_stages = s->base.virtual_stages;
    double v[SWEEP_AXIS_COUNT] = {0,
                                  d->tp,
                                  d->pp,
                                  d->dp,
                                  d->micro_batch,
                                  d->schedule,
                                  d->virtual_stages,
                                  d->zero,
                                  d->shard_degree,
                                  d->recompute,
                                  d->bucket_mb,
                                  d->sequence_parallel,
                                  d->cp,
                                  d->ep,
                                  d->emb_sharding,
                                  d->emb_placement,
                                  d->emb_shards,
                                  0};
    for (int k = 0; k < SWEEP_AXIS_COUNT; k++)
        if (s->axes[k].present && !s->axes[k].data_auto)
            v[k] = s->axes[k].values[digit[k]];
    d->tp = (int)v[SWEEP_TENSOR];
    d->pp = (int)v[SWEEP_PIPELINE];
    d->dp = (int)v[SWEEP_DATA];
    d->micro_batch = (int)v[SWEEP_MICRO_BATCH];
    d->schedule = (int)v[SWEEP_SCHEDULE];
    d->virtual_stages = (int)v[SWEEP_VIRTUAL_STAGES];
    d->zero = (int)v[SWEEP_ZERO];
    d->shard_degree = (int)v[SWEEP_SHARD_DEGREE];
    d->recompute = (int)v[SWEEP_RECOMPUTE];
    d->bucket_mb = v[SWEEP_BUCKET_MB];
    d->sequence_parallel = (int)v[SWEEP_SEQUENCE_PARALLEL];
    d->cp = (int)v[SWEEP_CONTEXT];
    d->ep = (int)v[SWEEP_EXPERT];
    d->emb_sharding = (int)v[SWEEP_SHARDING];
    d->emb_placement = (int)v[SWEEP_PLACEMENT];
    d->emb_shards = (int)v[SWEEP_SHARDS];
    if (d->emb_sharding >= 0 && s->axes[SWEEP_SHARDING].present)
        d->dense_tables = d->emb_sharding == EMB_SHARD_DATA_PARALLEL;
}

/* A dlrm plan's tables: their count and, under tables_sharding: auto, the proposal. */
static void combination_tables(const sweep_spec *s, const int digit[SWEEP_AXIS_COUNT],
                               sweep_plan *p)
{
    p->proposal = -1;
    if (s->base.model.family != FAMILY_DLRM)
        return;
    p->n_tables = s->base.model.dlrm.n_tables;
    if (!s->axes[SWEEP_TABLES_SHARDING].present)
        return;
    p->proposal = digit[SWEEP_TABLES_SHARDING];
    memcpy(p->table_sharding, s->proposals[p->proposal], (size_t)p->n_tables);
    p->desc.dense_tables = 0;
}

int sweep_enumerate(const sweep_spec *s, int cluster_gpus, sweep_plan **out, int *n, ps_error *err)
{
    long total = 0;
    if (count_combinations(s, &total, err))
        return err->code;
    sweep_plan *plans = xcalloc((size_t)total, sizeof *plans);
    int data_auto = s->axes[SWEEP_DATA].data_auto;
    int digit[SWEEP_AXIS_COUNT] = {0};
    for (long i = 0; i < total; i++) {
        sweep_plan *p = &plans[i];
        p->index = (int)i;
        p->status = SWEEP_PLAN_PENDING;
        combination(s, digit, &p->desc);
        combination_tables(s, digit, p);
        p->gpus = s->axes[SWEEP_GPUS].present ? (int)s->axes[SWEEP_GPUS].values[digit[SWEEP_GPUS]]
                  : s->gpus                   ? s->gpus
                                              : cluster_gpus;
        if (!drop_placement(s, p, digit))
            check_plan(&s->base, p->gpus, data_auto, p);
        /* next combination: the last axis varies fastest */
        for (int k = SWEEP_AXIS_COUNT - 1; k >= 0; k--) {
            if (++digit[k] < sweep_axis_count(s, (sweep_axis_kind)k))
                break;
            digit[k] = 0;
        }
    }
    *out = plans;
    *n = (int)total;
    return 0;
}
