/* schedule.c: GPipe, 1F1B, interleaved 1F1B and zero-bubble unit orders, following the
 * published schedules (Huang et al. 2019; Narayanan et al. 2021; Qi et al. 2024) as Megatron-LM
 * and its zero-bubble fork run them. */
#include "schedule.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    return s == SCHED_ZBH1 || s == SCHED_ZBH2 || s == SCHED_ZBV || s == SCHED_DUALPIPEV ||
           s == SCHED_DUALPIPE;
}

int pipeline_merges_steps(pipeline_schedule s)
{
    return s == SCHED_DUALPIPEV || s == SCHED_DUALPIPE;
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

/* The end of the pass that pass `kind` of micro-batch j on stage i waits for (its input), -1
 * while that one is not scheduled; 0 for the first stage's first forward (no input). */
static double zbv_input(const double *end, int stages, int micro, int kind, int i, int j)
{
#define ZV_END(k, s) (end[((size_t)(k)*stages + (s)) * micro + j])
    switch (kind) {
    case ZV_F0: return i == 0 ? 0.0 : ZV_END(ZV_F0, i - 1);
    case ZV_F1: return i == stages - 1 ? ZV_END(ZV_F0, i) : ZV_END(ZV_F1, i + 1);
    case ZV_B1: return i == 0 ? ZV_END(ZV_F1, 0) : ZV_END(ZV_B1, i - 1);
    case ZV_B0: return i == stages - 1 ? ZV_END(ZV_B1, i) : ZV_END(ZV_B0, i + 1);
    case ZV_W1: return ZV_END(ZV_B1, i);
    default: return ZV_END(ZV_B0, i);
    }
#undef ZV_END
}

/* Whether stage s may start a pass of `kind` now for memory: at most 2 stages chunk forwards
 * pending their W, and a chunk-0 forward only with a slot left for the chunk-1 forward of
 * every micro-batch it has started (its own included): without that reserve a stage whose
 * first chunk runs fast fills up with chunk-0 forwards and waits for ever. */
static int zbv_room(const int *next, const int *held, int stages, int s, int kind)
{
    if (kind > ZV_F0)
        return 1;
    if (kind == ZV_F1)
        return held[s] < 2 * stages;
    int started = next[s * ZV_KINDS + ZV_F0] - next[s * ZV_KINDS + ZV_F1];
    return held[s] + 1 + started + 1 <= 2 * stages;
}

void pipeline_zbv_orders(int stages, int micro, const double *cost, pipeline_unit *out)
{
    assert(stages >= 2 && micro >= 1);
    size_t cells = (size_t)ZV_KINDS * stages * micro;
    double *end = xmalloc(cells * sizeof *end), *clock = xcalloc((size_t)stages, sizeof *clock);
    int *next = xcalloc((size_t)stages * ZV_KINDS, sizeof *next);
    int *held = xcalloc((size_t)stages, sizeof *held),
        *left = xmalloc((size_t)stages * sizeof *left);
    for (size_t k = 0; k < cells; k++)
        end[k] = -1.0;
    for (int i = 0; i < stages; i++)
        left[i] = ZV_KINDS * micro;
    static const unit_part part[ZV_KINDS] = {PART_WHOLE, PART_WHOLE,  PART_INPUT,
                                             PART_INPUT, PART_WEIGHT, PART_WEIGHT};
    int n = 0, remaining = ZV_KINDS * stages * micro;
    for (double t = 0; remaining > 0;) {
        /* at time t every idle stage starts the first ready of its six kinds */
        for (int s = 0; s < stages; s++) {
            if (left[s] == 0 || clock[s] > t)
                continue;
            int pick = -1;
            for (int k = 0; k < ZV_KINDS && pick < 0; k++) {
                int j = next[s * ZV_KINDS + k];
                if (j >= micro || !zbv_room(next, held, stages, s, k))
                    continue;
                double in = zbv_input(end, stages, micro, k, s, j);
                if (in >= 0 && in <= t)
                    pick = k;
            }
            if (pick < 0)
                continue;
            int j = next[s * ZV_KINDS + pick]++;
            double d = cost ? cost[s * ZV_KINDS + pick] : 1.0;
            assert(d > 0);
            clock[s] = t + d;
            end[((size_t)pick * stages + s) * micro + j] = clock[s];
            held[s] += pick <= ZV_F0 ? 1 : pick >= ZV_W1 ? -1 : 0;
            left[s]--;
            remaining--;
            pipeline_unit u = {pick >= ZV_B1, j, pick % 2 == 0 ? 1 : 0, 0, part[pick]};
            out[(size_t)s * 6 * micro + (size_t)(ZV_KINDS * micro - left[s] - 1)] = u;
            n++;
        }
        /* then on to the next event: a stage freed, or an idle stage's input arriving */
        double at = INFINITY;
        for (int s = 0; s < stages && remaining > 0; s++) {
            if (left[s] == 0)
                continue;
            if (clock[s] > t) {
                at = fmin(at, clock[s]);
                continue;
            }
            for (int k = 0; k < ZV_KINDS; k++) {
                int j = next[s * ZV_KINDS + k];
                if (j >= micro || !zbv_room(next, held, stages, s, k))
                    continue;
                double in = zbv_input(end, stages, micro, k, s, j);
                if (in > t)
                    at = fmin(at, in);
            }
        }
        assert(remaining == 0 || isfinite(at)); /* never stuck: tests/test_zb.c */
        t = at;
    }
    assert(n == 6 * micro * stages);
    free(end);
    free(clock);
    free(next);
    free(held);
    free(left);
}

void pipeline_zbv_order(int stages, int stage, int micro, const double *cost, pipeline_unit *out)
{
    assert(stage >= 0 && stage < stages);
    pipeline_unit *all = xmalloc((size_t)stages * 6 * micro * sizeof *all);
    pipeline_zbv_orders(stages, micro, cost, all);
    memcpy(out, all + (size_t)stage * 6 * micro, (size_t)6 * micro * sizeof *out);
    free(all);
}

/* DualPipeV's order on one stage, built as the published schedule steps it (DeepSeek's
 * DualPipe repository, dualpipev.py), with counters per chunk and a FIFO of deferred W. */
typedef struct dpv_state {
    pipeline_unit *out;
    int n, f[2], b[2], *wq, wq_head, wq_tail;
} dpv_state;

static void dpv_forward(dpv_state *st, int chunk, int merged)
{
    pipeline_unit u = unit(0, st->f[chunk]++, chunk);
    u.merged = merged;
    st->out[st->n++] = u;
}

/* A backward of chunk `chunk`: whole, or (zb) its B with its W queued. */
static void dpv_backward(dpv_state *st, int chunk, int zb)
{
    pipeline_unit u = unit(1, st->b[chunk]++, chunk);
    if (zb) {
        u.part = PART_INPUT;
        st->wq[st->wq_tail++] = u.micro * 2 + chunk;
    }
    st->out[st->n++] = u;
}

static void dpv_weight(dpv_state *st)
{
    assert(st->wq_head < st->wq_tail);
    int x = st->wq[st->wq_head++];
    pipeline_unit u = unit(1, x / 2, x % 2);
    u.part = PART_WEIGHT;
    st->out[st->n++] = u;
}

/* A forward of chunk c0 overlapped with a whole backward of chunk c1 (one merged step). */
static void dpv_fwd_bwd(dpv_state *st, int c0, int c1)
{
    dpv_forward(st, c0, 1);
    dpv_backward(st, c1, 0);
}

int pipeline_dualpipev_order(int stages, int stage, int micro, pipeline_unit *out)
{
    assert(stages >= 1 && stage >= 0 && stage < stages && micro >= 2 * stages);
    int r = stage, tail = stages - r - 1;
    dpv_state st = {out, 0, {0, 0}, {0, 0}, xmalloc((size_t)2 * micro * sizeof(int)), 0, 0};
    for (int i = 0; i < 2 * tail; i++) /* 1: chunk 0's warm-up */
        dpv_forward(&st, 0, 0);
    for (int i = 0; i < r + 1; i++) { /* 2: both chunks' forwards in turn */
        dpv_forward(&st, 0, 0);
        dpv_forward(&st, 1, 0);
    }
    for (int i = 0; i < tail; i++) { /* 3: B1 W F1, the W at once (zero bubble) */
        dpv_backward(&st, 1, 1);
        dpv_weight(&st);
        dpv_forward(&st, 1, 0);
    }
    for (int i = 0; i < micro - 2 * stages + r + 1; i++) { /* 4: F0&B1 F1&B0 */
        if (i == 0 && r == stages - 1) { /* the last stage's first pair not overlapped */
            dpv_forward(&st, 0, 0);
            dpv_backward(&st, 1, 0);
        } else {
            dpv_fwd_bwd(&st, 0, 1);
        }
        dpv_fwd_bwd(&st, 1, 0);
    }
    for (int i = 0; i < tail; i++) { /* 5: B1 F1&B0 */
        dpv_backward(&st, 1, 0);
        dpv_fwd_bwd(&st, 1, 0);
    }
    int zb = 0; /* 6: B1 B0, the second half with W deferred */
    for (int i = 0; i < r + 1; i++) {
        if (i == (r + 1) / 2 && r % 2 == 1)
            zb = 1;
        dpv_backward(&st, 1, zb);
        if (i == (r + 1) / 2 && r % 2 == 0)
            zb = 1;
        dpv_backward(&st, 0, zb);
    }
    for (int i = 0; i < tail; i++) { /* 7: W B0 */
        dpv_weight(&st);
        dpv_backward(&st, 0, 1);
    }
    for (int i = 0; i < r + 1; i++) /* 8: the deferred W */
        dpv_weight(&st);
    assert(st.wq_head == st.wq_tail && st.f[0] == micro && st.f[1] == micro && st.b[0] == micro &&
           st.b[1] == micro);
    assert(st.n == 4 * micro + 2 * stages - r - 1);
    free(st.wq);
    return st.n;
}

int pipeline_dualpipe_order(int stages, int stage, int micro, pipeline_unit *out)
{
    assert(stages % 2 == 0 && micro % 2 == 0 && stage >= 0 && stage < stages);
    int half = stage < stages / 2 ? stage : stages - 1 - stage;
    return pipeline_dualpipev_order(stages / 2, half, micro / 2, out);
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
    case SCHED_ZBV: /* at equal pass times; a plan's own are given by the compiler */
        assert(chunks == 2);
        pipeline_zbv_order(stages, stage, micro, NULL, out);
        return 6 * micro;
    case SCHED_DUALPIPE:
        assert(chunks == 2);
        return pipeline_dualpipe_order(stages, stage, micro, out);
    case SCHED_DUALPIPEV:
        assert(chunks == 2);
        return pipeline_dualpipev_order(stages, stage, micro, out);
    }
    return 0;
}
