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
    return r == RECOMPUTE_SELECTIVE ? "sel" : r == RECOMPUTE_FULL ? "full" : "none";
}

void sweep_plan_label(const sweep_plan *p, int show_bucket, int show_sp, char *out, size_t n)
{
    const plan_desc *d = &p->desc;
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
}

void sweep_plan_strategy(const sweep_spec *s, const sweep_plan *p, strategy *out)
{
    strategy_clone(&s->base, out);
    sweep_plan_apply(&p->desc, out);
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
    double v[SWEEP_AXIS_COUNT] = {d->tp,
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
                                  d->ep};
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
}

int sweep_enumerate(const sweep_spec *s, int gpus, sweep_plan **out, int *n, ps_error *err)
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
        check_plan(&s->base, gpus, data_auto, p);
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
