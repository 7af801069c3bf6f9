/* schedule.c: GPipe, 1F1B, interleaved 1F1B and zero-bubble unit orders, following the
 * published schedules (Huang et al. 2019; Narayanan et al. 2021; Qi et al. 2024) as Megatron-LM
 * and its zero-bubble fork run them. */
#include "schedule.h"

#include <assert.h>

static pipeline_unit unit(int backward, int micro, int chunk)
{
    pipeline_unit u = {backward, micro, chunk, 0, PART_WHOLE};
    return u;
}

static pipeline_unit part_unit(int micro, unit_part part)
{
    pipeline_unit u = {1, micro, 0, 0, part};
    return u;
}

int pipeline_splits_backward(pipeline_schedule s)
{
    return s == SCHED_ZBH1 || s == SCHED_ZBH2;
}

int pipeline_units(pipeline_schedule s, int micro, int chunks)
{
    return pipeline_splits_backward(s) ? 3 * micro : 2 * micro * chunks;
}

int pipeline_unit_makes_grads(pipeline_unit u)
{
    return u.backward && u.part != PART_INPUT;
}

void pipeline_gpipe_order(int stages, int stage, int micro, pipeline_unit *out)
{
    (void)stages;
    (void)stage;
    int n = 0;
    for (int m = 0; m < micro; m++)
        out[n++] = unit(0, m, 0);
    for (int m = 0; m < micro; m++)
        out[n++] = unit(1, m, 0);
}

/* 1F1B; extra (0 or 1): the combined 1F1B, one more warm-up forward and the steady state's
 * forwards merged. */
static void order_1f1b(int stages, int stage, int micro, int extra, pipeline_unit *out)
{
    assert(stage >= 0 && stage < stages);
    int warmup = stages - stage - 1 + extra;
    if (warmup > micro)
        warmup = micro;
    int n = 0, f = 0, b = 0;
    while (f < warmup)
        out[n++] = unit(0, f++, 0);
    while (f < micro) { /* steady state: one forward, one backward */
        out[n] = unit(0, f++, 0);
        out[n++].merged = extra;
        out[n++] = unit(1, b++, 0);
    }
    while (b < micro) /* cool-down */
        out[n++] = unit(1, b++, 0);
}

void pipeline_1f1b_order(int stages, int stage, int micro, pipeline_unit *out)
{
    order_1f1b(stages, stage, micro, 0, out);
}

/* Forward unit k of the interleaved schedule runs chunk (k / stages) % chunks on micro-batch
 * (k / (stages * chunks)) * stages + k % stages; backward units walk the chunks in reverse. */
static pipeline_unit interleaved_unit(int k, int backward, int stages, int chunks)
{
    int group = k % (stages * chunks);
    int chunk = group / stages;
    if (backward)
        chunk = chunks - 1 - chunk;
    int micro = (k / (stages * chunks)) * stages + k % stages;
    return unit(backward, micro, chunk);
}

static void order_interleaved(int stages, int stage, int micro, int chunks, int extra,
                              pipeline_unit *out)
{
    assert(micro % stages == 0);
    int total = micro * chunks;
    int warmup =
        (stages - stage - 1) * 2 + (chunks - 1) * stages + extra; /* extra: as order_1f1b */
    if (warmup > total)
        warmup = total;
    int n = 0, f = 0, b = 0;
    while (f < warmup)
        out[n++] = interleaved_unit(f++, 0, stages, chunks);
    while (f < total) {
        out[n] = interleaved_unit(f++, 0, stages, chunks);
        out[n++].merged = extra;
        out[n++] = interleaved_unit(b++, 1, stages, chunks);
    }
    while (b < total)
        out[n++] = interleaved_unit(b++, 1, stages, chunks);
}

void pipeline_interleaved_order(int stages, int stage, int micro, int chunks, pipeline_unit *out)
{
    order_interleaved(stages, stage, micro, chunks, 0, out);
}

/* Warm-up forwards, then rounds of F and B each followed by a W once `defer` rounds have
 * passed; the cool-down's B each followed by a W while more than `defer` are pending; then
 * the deferred W. */
void pipeline_zb_order(int h2, int stages, int stage, int micro, pipeline_unit *out)
{
    assert(stage >= 0 && stage < stages && micro >= 1);
    int warmup = (h2 ? 2 : 1) * (stages - stage - 1), defer = (h2 ? 2 : 1) * stage;
    if (warmup > micro)
        warmup = micro;
    int n = 0, f = 0, b = 0, w = 0, round = 0;
    while (f < warmup)
        out[n++] = unit(0, f++, 0);
    while (f < micro) {
        out[n++] = unit(0, f++, 0);
        out[n++] = part_unit(b++, PART_INPUT);
        if (++round > defer)
            out[n++] = part_unit(w++, PART_WEIGHT);
    }
    while (b < micro) {
        out[n++] = part_unit(b++, PART_INPUT);
        if (b - w > defer)
            out[n++] = part_unit(w++, PART_WEIGHT);
    }
    while (w < micro)
        out[n++] = part_unit(w++, PART_WEIGHT);
    assert(n == 3 * micro);
}

void pipeline_combine_1f1b(pipeline_schedule s, int stages, int stage, int micro, int chunks,
                           pipeline_unit *out)
{
    assert(s != SCHED_GPIPE);
    if (s == SCHED_INTERLEAVED)
        order_interleaved(stages, stage, micro, chunks, 1, out);
    else
        order_1f1b(stages, stage, micro, 1, out);
}

int pipeline_order(pipeline_schedule s, int stages, int stage, int micro, int chunks, int combined,
                   pipeline_unit *out)
{
    if (combined) {
        pipeline_combine_1f1b(s, stages, stage, micro, chunks, out);
        return s == SCHED_INTERLEAVED ? 2 * micro * chunks : 2 * micro;
    }
    switch (s) {
    case SCHED_GPIPE: pipeline_gpipe_order(stages, stage, micro, out); return 2 * micro;
    case SCHED_1F1B: pipeline_1f1b_order(stages, stage, micro, out); return 2 * micro;
    case SCHED_INTERLEAVED:
        pipeline_interleaved_order(stages, stage, micro, chunks, out);
        return 2 * micro * chunks;
    case SCHED_ZBH1:
    case SCHED_ZBH2:
        assert(chunks == 1);
        pipeline_zb_order(s == SCHED_ZBH2, stages, stage, micro, out);
        return 3 * micro;
    }
    return 0;
}
