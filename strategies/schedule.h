/* schedule.h: pipeline schedules as orders of forward and backward units on one stage.
 * The executor knows nothing of pipelines: these orders are all there is to a schedule. */
#ifndef PROTOSIM_SCHEDULE_H
#define PROTOSIM_SCHEDULE_H

#include "strategy.h"

/* What of a backward a unit runs: all of it, or (zero-bubble schedules) its input-gradient
 * part B (what the previous stage waits for) or its weight-gradient part W (the weight GEMMs'
 * dW = X^T dY, which nothing downstream waits for but the gradient reduction). */
typedef enum { PART_WHOLE = 0, PART_INPUT = 1, PART_WEIGHT = 2 } unit_part;

typedef struct pipeline_unit {
    int backward; /* 0 forward, 1 backward */
    int micro;    /* micro-batch index */
    int chunk;    /* model chunk on this stage (0 unless interleaved) */
    int merged;   /* a forward run merged with the backward unit after it (combined 1F1B) */
    int part;     /* unit_part of a backward (PART_WHOLE for a forward) */
} pipeline_unit;

/* Whether the schedule splits each backward into B and W units. */
int pipeline_splits_backward(pipeline_schedule s);
/* Whether the schedule itself merges a forward with a backward of another micro-batch (DualPipe,
 * DualPipeV: their F&B steps). */
int pipeline_merges_steps(pipeline_schedule s);
/* Units a stage's order holds: 2 * micro * chunks, 3 * micro * chunks when the backward is split
 * (DualPipeV: at most that; it splits only some backwards, pipeline_order says how many). */
int pipeline_units(pipeline_schedule s, int micro, int chunks);
/* Whether a unit completes its micro-batch's weight gradients (a whole backward or a W). */
int pipeline_unit_makes_grads(pipeline_unit u);

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

/* Zero-bubble schedules (Qi et al., ICLR 2024, section 3.1), each backward split into B and W.
 * ZB-H1: 1F1B's warm-up (stages - stage - 1 forwards), then steady F B W rounds of which the
 * first `stage` defer their W to the tail, so the input gradients race back up the pipeline
 * and the last stages fill their cool-down with W; a stage never holds more than `stages`
 * micro-batches whose W is pending (1F1B's peak). Bubble (p - 1)(t_F + t_B - t_W).
 * ZB-H2: 2 (stages - stage - 1) warm-up forwards and 2 stage deferred W: up to 2 stages - 1
 * micro-batches held, the bubble before each stage's first B filled with forwards; with
 * t_F = t_B = t_W every stage runs without a gap from its first forward to its last W. */
void pipeline_zb_order(int h2, int stages, int stage, int micro, pipeline_unit *out);

/* ZB-V (Qi et al., section 6): two chunks a stage in a V (stage s holds chunks s and
 * 2 stages - 1 - s: the forward goes down the stages and back up, the loss on stage 0), each
 * backward split into B and W. The order of every stage comes from one list schedule of all of
 * them over the passes' times (cost[s * 6 + k]: stage s's chunk 1 forward, chunk 0 forward,
 * chunk 1 B, chunk 0 B, chunk 1 W, chunk 0 W; NULL: all equal), as the zero-bubble fork
 * schedules from profiled times: at each moment every idle stage runs the first ready of those
 * six kinds in that order, its forwards held to 2 stages chunk passes not yet through their W
 * (1F1B's activation memory) with a slot kept for the chunk-1 forward of every micro-batch it
 * has started (else a stage with a fast first chunk fills up and waits for ever), else waits
 * for its next input. At equal times and m >= 2 stages its iteration is 6 m chunk passes and a
 * bubble of 2 at 2 and 3 stages, 3-4 at 4, 10-12 at 8 and 22-26 at 16 (about 1.5 stages)
 * against 1F1B's 6 (stages - 1): ZB-H1's level; the fork's own search leaves stages - 1 (its
 * warm-up is finer). It never stalls (tests/test_zb.c: equal times for stages <= 24, random
 * times for stages <= 12). Units: chunk 0 or 1, micro-batches in order within each kind. */
void pipeline_zbv_order(int stages, int stage, int micro, const double *cost, pipeline_unit *out);
/* Every stage's ZB-V order at once, stage s's 6 micro units at out + s * 6 micro. */
void pipeline_zbv_orders(int stages, int micro, const double *cost, pipeline_unit *out);

/* DualPipeV (DeepSeek-AI's DualPipe repository, dualpipev.py; DualPipe "cut in half" by Sea AI
 * Lab): ZB-V's V of two chunks a stage (stage s holds chunks s and 2 stages - 1 - s, the loss on
 * stage 0), every micro-batch through both, in the published eight steps: 2 (stages - s - 1)
 * chunk-0 forwards; s + 1 pairs F0 F1; stages - s - 1 rounds B1 W F1 (the W at once); then
 * micro - 2 stages + s + 1 rounds of two merged steps, a chunk-0 forward overlapped with a whole
 * chunk-1 backward and a chunk-1 forward with a chunk-0 backward (`merged` on the forward; the
 * last stage runs its first pair apart); stages - s - 1 rounds of B1 then F1&B0; s + 1 pairs B1
 * B0 whose second half defer their W; stages - s - 1 rounds W B0 (deferred); the s + 1 W left.
 * A backward is whole (part PART_WHOLE: its B and W together) unless deferred. Needs micro >=
 * 2 stages. Returns the units: 4 micro + 2 stages - s - 1. Bubble (stages - 1)(F&B + B - 3W)
 * in chunk passes (the repository's table, with PP = 2 stages chunks). */
int pipeline_dualpipev_order(int stages, int stage, int micro, pipeline_unit *out);

/* DualPipe (DeepSeek-V3 report, section 3.2.1; dualpipe.py): two copies of the model, each in
 * `stages` stages, one fed micro-batches at stage 0 and the other at stage stages - 1, micro / 2
 * each. Stage s runs the copy it meets first as chunk 0 (its position h = min(s, stages - 1 - s)
 * from that copy's start) and the other as chunk 1 (position stages - 1 - h); stages s and
 * stages - 1 - s run the same order, DualPipeV's for stage h of stages / 2 with micro / 2 (its
 * steps are dualpipe.py's with half_rank and half_num_chunks; the middle stages hand chunk 0's
 * output to each other where DualPipeV's last stage hands it to itself). Needs stages and micro
 * even and micro >= 2 stages. Micro-batch indices 0 .. micro / 2 - 1 within each chunk. Bubble
 * (stages / 2 - 1)(F&B + B - 3W) in whole-stage passes. */
int pipeline_dualpipe_order(int stages, int stage, int micro, pipeline_unit *out);

/* Dispatch on the schedule; returns the number of units (pipeline_units). combined: the
 * combined 1F1B (not with gpipe or a zero-bubble schedule). */
int pipeline_order(pipeline_schedule s, int stages, int stage, int micro, int chunks, int combined,
                   pipeline_unit *out);

#endif
