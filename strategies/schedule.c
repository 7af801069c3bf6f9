/* schedule.c: GPipe, 1F1B, interleaved 1F1B and zero-bubble unit orders, following the
 * published schedules (Huang et al. 2019; Narayanan et al. 2021; Qi et al. 2024) as Megatron-LM
 * and its zero-bubble fork run them. */
#include "schedule.h"

#include <assert.h>
#include <stdlib.h>

#include "../sim/base/xalloc.h"

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
    return s == SCHED_ZBH1 || s == SCHED_ZBH2 || s == SCHED_ZBV;
}

int pipeline_units(pipeline_schedule s, int micro, int chunks)
{
    return pipeline_splits_backward(s) ? 3 * micro * chunks : 2 * micro * chunks;
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

/* ZB-V's pass kinds in priority order: chunk 1's forward, chunk 0's, chunk 1's B, chunk 0's,
 * chunk 1's W, chunk 0's. */
enum { ZV_F1, ZV_F0, ZV_B1, ZV_B0, ZV_W1, ZV_W0, ZV_KINDS };

/* Whether pass `kind` of micro-batch j may run on stage i at step t (done: the step each pass
 * ended, -1 not yet): its input is there. */
static int zbv_ready(const int *done, int stages, int micro, int kind, int i, int j, int t)
{
#define ZV_DONE(k, s) (done[((size_t)(k)*stages + (s)) * micro + j])
#define ZV_BY(k, s)   (ZV_DONE(k, s) >= 0 && ZV_DONE(k, s) <= t)
    switch (kind) {
    case ZV_F0: return i == 0 || ZV_BY(ZV_F0, i - 1);
    case ZV_F1: return i == stages - 1 ? ZV_BY(ZV_F0, i) : ZV_BY(ZV_F1, i + 1);
    case ZV_B1: return i == 0 ? ZV_BY(ZV_F1, 0) : ZV_BY(ZV_B1, i - 1);
    case ZV_B0: return i == stages - 1 ? ZV_BY(ZV_B1, i) : ZV_BY(ZV_B0, i + 1);
    case ZV_W1: return ZV_BY(ZV_B1, i);
    default: return ZV_BY(ZV_B0, i);
    }
#undef ZV_BY
#undef ZV_DONE
}

void pipeline_zbv_order(int stages, int stage, int micro, pipeline_unit *out)
{
    assert(stages >= 2 && stage >= 0 && stage < stages && micro >= 1);
    int *done = xmalloc((size_t)ZV_KINDS * stages * micro * sizeof *done);
    int *next = xcalloc((size_t)stages * ZV_KINDS, sizeof *next);
    int *held = xcalloc((size_t)stages, sizeof *held),
        *pick = xmalloc((size_t)stages * sizeof *pick);
    for (size_t k = 0; k < (size_t)ZV_KINDS * stages * micro; k++)
        done[k] = -1;
    static const unit_part part[ZV_KINDS] = {PART_WHOLE, PART_WHOLE,  PART_INPUT,
                                             PART_INPUT, PART_WEIGHT, PART_WEIGHT};
    int n = 0, left = ZV_KINDS * stages * micro;
    for (int t = 0; left > 0; t++) {
        int moved = 0;
        for (int i = 0; i < stages; i++) {
            pick[i] = -1;
            for (int k = 0; k < ZV_KINDS && pick[i] < 0; k++) {
                int j = next[i * ZV_KINDS + k];
                if (j < micro && (k > ZV_F0 || held[i] < 2 * stages) &&
                    zbv_ready(done, stages, micro, k, i, j, t))
                    pick[i] = k;
            }
        }
        for (int i = 0; i < stages; i++) {
            int k = pick[i];
            if (k < 0)
                continue;
            int j = next[i * ZV_KINDS + k]++;
            done[((size_t)k * stages + i) * micro + j] = t + 1;
            held[i] += k <= ZV_F0 ? 1 : k >= ZV_W1 ? -1 : 0;
            if (i == stage) {
                pipeline_unit u = {k >= ZV_B1, j, k % 2 == 0 ? 1 : 0, 0, part[k]};
                out[n++] = u;
            }
            left--;
            moved = 1;
        }
        assert(moved); /* never stuck: tests/test_zb.c runs every stages <= 24, micro <= 96 */
        (void)moved;
    }
    assert(n == 6 * micro);
    free(done);
    free(next);
    free(held);
    free(pick);
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
    case SCHED_ZBV:
        assert(chunks == 2);
        pipeline_zbv_order(stages, stage, micro, out);
        return 6 * micro;
    }
    return 0;
}
