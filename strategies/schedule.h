/* schedule.h: pipeline schedules as orders of forward and backward units on one stage.
 * The executor knows nothing of pipelines: these orders are all there is to a schedule. */
#ifndef PROTOSIM_SCHEDULE_H
#define PROTOSIM_SCHEDULE_H

#include "strategy.h"

typedef struct pipeline_unit {
    int backward; /* 0 forward, 1 backward */
    int micro;    /* micro-batch index */
    int chunk;    /* model chunk on this stage (0 unless interleaved) */
    int merged;   /* a forward run merged with the backward unit after it (combined 1F1B) */
} pipeline_unit;

/* Each writes the 2 * micro * chunks units of stage `stage` (of `stages`) into out. */
void pipeline_gpipe_order(int stages, int stage, int micro, pipeline_unit *out);
void pipeline_1f1b_order(int stages, int stage, int micro, pipeline_unit *out);
/* Megatron-LM's interleaved 1F1B; needs micro % stages == 0. */
void pipeline_interleaved_order(int stages, int stage, int micro, int chunks, pipeline_unit *out);

/* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm) on a 1F1B (one stage)
 * or interleaved order: one more warm-up forward, then every steady-state forward `merged`
 * with the backward that follows it (combined_1f1b.py: forward i+1 beside backward i). */
void pipeline_combine_1f1b(pipeline_schedule s, int stages, int stage, int micro, int chunks,
                           pipeline_unit *out);

/* Dispatch on the schedule; returns the number of units (2 * micro * chunks). combined: the
 * combined 1F1B (not with gpipe). */
int pipeline_order(pipeline_schedule s, int stages, int stage, int micro, int chunks, int combined,
                   pipeline_unit *out);

#endif
