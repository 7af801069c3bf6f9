/* schedule.c: GPipe, 1F1B and interleaved 1F1B unit orders, following the published
 * schedules (Huang et al. 2019; Narayanan et al. 2021) as Megatron-LM runs them. */
#include "schedule.h"

#include <assert.h>

static pipeline_unit unit(int backward, int micro, int chunk)
{
    pipeline_unit u = {backward, micro, chunk};
    return u;
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

void pipeline_1f1b_order(int stages, int stage, int micro, pipeline_unit *out)
{
    assert(stage >= 0 && stage < stages);
    int warmup = stages - stage - 1;
    if (warmup > micro)
        warmup = micro;
    int n = 0, f = 0, b = 0;
    while (f < warmup)
        out[n++] = unit(0, f++, 0);
    while (f < micro) { /* steady state: one forward, one backward */
        out[n++] = unit(0, f++, 0);
        out[n++] = unit(1, b++, 0);
    }
    while (b < micro) /* cool-down */
        out[n++] = unit(1, b++, 0);
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

void pipeline_interleaved_order(int stages, int stage, int micro, int chunks, pipeline_unit *out)
{
    assert(micro % stages == 0);
    int total = micro * chunks;
    int warmup = (stages - stage - 1) * 2 + (chunks - 1) * stages;
    if (warmup > total)
        warmup = total;
    int n = 0, f = 0, b = 0;
    while (f < warmup)
        out[n++] = interleaved_unit(f++, 0, stages, chunks);
    while (f < total) {
        out[n++] = interleaved_unit(f++, 0, stages, chunks);
        out[n++] = interleaved_unit(b++, 1, stages, chunks);
    }
    while (b < total)
        out[n++] = interleaved_unit(b++, 1, stages, chunks);
}

int pipeline_order(pipeline_schedule s, int stages, int stage, int micro, int chunks,
                   pipeline_unit *out)
{
    switch (s) {
    case SCHED_GPIPE: pipeline_gpipe_order(stages, stage, micro, out); return 2 * micro;
    case SCHED_1F1B: pipeline_1f1b_order(stages, stage, micro, out); return 2 * micro;
    case SCHED_INTERLEAVED:
        pipeline_interleaved_order(stages, stage, micro, chunks, out);
        return 2 * micro * chunks;
    }
    return 0;
}
