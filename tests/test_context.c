/* test_context.c: context parallelism (strategies/compile/context.c) against numbers computed here: the
 * strategy key and rank layout, the ring transfers' bytes (GQA shrinks them by heads /
 * kv_heads), each rank's attention (1/C of the FLOPs, in C steps), a step waiting for both its
 * K/V transfer and the step before, activations divided by C and gradients over data x context. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../strategies/compile/compile.h"
#include "../strategies/sweep_plan.h"
#include "fixture.h"
#include "sim_util.h"
#include "suite_util.h"

/* A 2-layer Llama with FlashAttention, seq 8192, one sample per iteration. */
static void strategy_text(char *buf, size_t cap, int hidden, int heads, int kv_heads,
                          const char *strat)
{
    snprintf(buf, cap,
             "workload:\n"
             "  name: cp-test\n"
             "  family: llama\n"
             "  layers: 2\n"
             "  hidden: %d\n"
             "  heads: %d\n"
             "  kv_heads: %d\n"
             "  ffn_hidden: 2816\n"
             "  seq: 8192\n"
             "  vocab: 1024\n"
             "  attention: flash\n"
             "batch: {global: 2, micro: 1}\n"
             "precision: bf16\n"
             "optimizer: adam\n"
             "strategy:\n%s",
             hidden, heads, kv_heads, strat);
}

static void load_ok(int hidden, int heads, int kv_heads, const char *strat, strategy *s)
{
    char text[2048];
    strategy_text(text, sizeof text, hidden, heads, kv_heads, strat);
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, s, &err) == 0, "%s", err.message);
}

static void expect_error(const char *strat, const char *field, int line, const char *needle)
{
    char text[2048];
    strategy_text(text, sizeof text, 1024, 8, 8, strat);
    sim_expect_strategy_error(text, field, line, needle);
}

/* Two nodes of `k` GPUs (A100), NVLink 100 GB/s inside a node, 10 GB/s NICs between nodes. */
static void load_nodes(int k, cluster *c)
{
    static const char *const nvl[2] = {"0", "0"}, *const nic[2] = {"0", "0"};
    sim_load_two_nodes(k, nvl, nic, c);
}

/* The plan of load_ok's strategy on load_nodes(k) compiled with fold_data_parallel `fold`. */
static void cp_plan(sim_fixture *f, int k, int hidden, int heads, int kv_heads, const char *strat,
                    int fold)
{
    load_ok(hidden, heads, kv_heads, strat, &f->s);
    load_nodes(k, &f->c);
    compile_options o;
    compile_default_options(&o);
    o.fold_data_parallel = fold;
    fixture_compile(f, &o);
}

static int has_label(const exec_graph *g, uint32_t t, const char *name)
{
    return strcmp(g->labels[g->tasks[t].label], name) == 0;
}

/* The n-th (from 0) task of rank r with label `name`, or of any compute when name is NULL,
 * from task `from` on. */
static uint32_t nth_task(const exec_graph *g, int r, const char *name, uint32_t from, int n)
{
    for (uint32_t t = from; t < g->n_tasks; t++) {
        if (g->tasks[t].rank != r)
            continue;
        if (name ? has_label(g, t, name) : g->tasks[t].kind == TASK_COMPUTE)
            if (n-- == 0)
                return t;
    }
    ck_abort_msg("no task %s on rank %d", name ? name : "compute", r);
    return 0;
}

static const char *const FWD = "cp ring send K/V", *const BWD = "cp ring send K/V + grads";

/* ---- the strategy ---- */

START_TEST(context_key_and_order)
{
    strategy s;
    load_ok(1024, 8, 8, "  context: {degree: 2}\n", &s);
    ck_assert_int_eq(s.cp, 2);
    /* default order: Megatron-Core's tp-cp-dp-pp */
    ck_assert_int_eq(s.order[0], AXIS_TENSOR);
    ck_assert_int_eq(s.order[1], AXIS_CONTEXT);
    ck_assert_int_eq(s.order[2], AXIS_DATA);
    ck_assert_int_eq(s.order[3], AXIS_PIPELINE);
    plan_desc d;
    strategy_plan_desc(&s, &d);
    ck_assert_int_eq(d.cp, 2);
    /* ZeRO shards over data x context */
    ck_assert_int_eq(strategy_shard_degree(&s), 2);
    strategy_free(&s);
    /* an order without context puts it right after tensor */
    load_ok(1024, 8, 8, "  context: {degree: 2}\n  order: [data, tensor, pipeline]\n", &s);
    ck_assert_int_eq(s.order[0], AXIS_DATA);
    ck_assert_int_eq(s.order[1], AXIS_TENSOR);
    ck_assert_int_eq(s.order[2], AXIS_CONTEXT);
    ck_assert_int_eq(s.order[3], AXIS_PIPELINE);
    strategy_free(&s);
    load_ok(1024, 8, 8, "  context: {degree: 2}\n  order: [context, data, tensor, pipeline]\n", &s);
    ck_assert_int_eq(s.order[0], AXIS_CONTEXT);
    ck_assert_int_eq(s.order[1], AXIS_DATA);
    strategy_free(&s);
}
END_TEST

START_TEST(context_errors_located)
{
    /* strategy: is line 15, so `context:` is on 16 */
    expect_error("  context: {degree: 0}\n", "strategy.context.degree", 16, "must be");
    /* 8192 tokens do not split into 2 x 3 chunks */
    expect_error("  context: {degree: 3}\n", "strategy.context.degree", 16, "2 x 3 = 6 chunks");
    expect_error("  context: {degree: 2, ring: true}\n", "strategy.context.ring", 16, "ring");
    expect_error("  order: [tensor, data, context]\n", "strategy.order", 16, "at most once");
    /* the GPU count counts context ranks */
    strategy s;
    load_ok(1024, 8, 8, "  context: {degree: 2}\n  data: {degree: 2}\n", &s);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_check_gpus(&s, 2, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.message, "tensor 1 x context 2 x pipeline 1 x data 2 = 4 GPUs"), "%s",
                  err.message);
    ck_assert_int_eq(strategy_check_gpus(&s, 4, &err), 0);
    strategy_free(&s);
    /* unfused attention has no ring steps */
    char text[2048];
    strategy_text(text, sizeof text, 1024, 8, 8, "  context: {degree: 2}\n");
    char *flash = strstr(text, "  attention: flash\n");
    memmove(flash, flash + 19, strlen(flash + 19) + 1);
    ck_assert_int_eq(sim_strategy_text(text, &s, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.context.degree");
    ck_assert_int_eq(err.line, 15);
    ck_assert_msg(strstr(err.message, "attention: flash"), "%s", err.message);
}
END_TEST

/* tensor 2 x context 2 x data 2: rank = t + 2 (c + 2 d) under tensor, context, data; the
 * compiler's data-context index is d x 2 + c. */
START_TEST(rank_layout_by_hand)
{
    strategy s;
    load_ok(1024, 8, 8, "  tensor: {degree: 2}\n  context: {degree: 2}\n  data: {degree: 2}\n", &s);
    ck_assert_int_eq(compile_rank_of(&s, 1, 0 * 2 + 1, 0), 1 + 2 * 1);       /* c 1 */
    ck_assert_int_eq(compile_rank_of(&s, 1, 1 * 2 + 0, 0), 1 + 2 * 2);       /* d 1 */
    ck_assert_int_eq(compile_rank_of(&s, 1, 1 * 2 + 1, 0), 1 + 2 * (1 + 2)); /* both */
    /* context fastest: rank = c + 2 (d + 2 t) */
    s.order[0] = AXIS_CONTEXT;
    s.order[1] = AXIS_DATA;
    s.order[2] = AXIS_TENSOR;
    ck_assert_int_eq(compile_rank_of(&s, 1, 1 * 2 + 0, 0), 0 + 2 * (1 + 2 * 1));
    ck_assert_int_eq(compile_rank_of(&s, 0, 0 * 2 + 1, 0), 1);
    strategy_free(&s);
}
END_TEST

/* ---- the compiled ring ---- */

/* Ring transfers per rank, layer and micro-batch at C = 2: forward one (the K/V chunk), backward
 * two (the K/V chunk, then its gradients back home). A chunk is b x s/C x 2 x kv_heads x
 * head_dim x 2 bytes: 1 x 4096 x 2 x 8 x 128 x 2 = 16,777,216 with 8 K/V heads, 4 times that
 * with 32 (MHA): GQA shrinks them by heads / kv_heads, as it does the QKV GEMM's K/V part. */
static void ring_bytes(int kv_heads, int tp, double *fwd, double *bwd, int *n_fwd, int *n_bwd)
{
    char strat[256];
    snprintf(strat, sizeof strat, "  tensor: {degree: %d}\n  context: {degree: 2}\n", tp);
    sim_fixture f;
    cp_plan(&f, tp, 4096, 32, kv_heads, strat, 0);
    const exec_graph *g = f.p.graph;
    *fwd = *bwd = 0;
    *n_fwd = *n_bwd = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->category != CAT_CP_COMM)
            continue;
        ck_assert_int_eq(k->kind, TASK_TRANSFER);
        ck_assert_int_eq(k->stream, STREAM_CP);
        /* the ring: rank r sends to the other context rank of its tensor index */
        ck_assert_int_eq(k->peer, (k->rank + tp) % (2 * tp));
        if (has_label(g, t, FWD)) {
            *fwd = k->bytes;
            (*n_fwd)++;
        } else {
            ck_assert(has_label(g, t, BWD));
            ck_assert(*bwd == 0 || *bwd == k->bytes);
            *bwd = k->bytes;
            (*n_bwd)++;
        }
    }
    fixture_free(&f);
}

START_TEST(gqa_shrinks_ring_transfers)
{
    double fwd, bwd;
    int nf, nb;
    /* 2 ranks x 2 layers x 2 micro-batches */
    ring_bytes(8, 1, &fwd, &bwd, &nf, &nb);
    ck_assert_int_eq(nf, 2 * 2 * 2 * 1);
    ck_assert_int_eq(nb, 2 * 2 * 2 * 2);
    ck_assert_double_eq(fwd, 1.0 * 4096 * 2 * 8 * 128 * 2);
    ck_assert_double_eq(fwd, 16777216.0);
    ck_assert_double_eq(bwd, fwd);
}
END_TEST

/* The same model with 32 K/V heads (MHA): 4 x 16,777,216 bytes a chunk. */
START_TEST(mha_ring_transfers)
{
    double fwd, bwd;
    int nf, nb;
    ring_bytes(32, 1, &fwd, &bwd, &nf, &nb);
    ck_assert_double_eq(fwd, 1.0 * 4096 * 2 * 32 * 128 * 2);
    ck_assert_double_eq(fwd, 4 * 16777216.0);
    ck_assert_double_eq(bwd, fwd);
}
END_TEST

/* Under TP 2 each rank sends its own 4 of the 8 K/V heads: half the bytes. */
START_TEST(tensor_parallel_ring_sends_its_heads)
{
    double fwd, bwd;
    int nf, nb;
    ring_bytes(8, 2, &fwd, &bwd, &nf, &nb);
    ck_assert_double_eq(fwd, 1.0 * 4096 * 2 * 4 * 128 * 2);
    ck_assert_int_eq(nf, 4 * 2 * 2 * 1);
    ck_assert_int_eq(nb, 4 * 2 * 2 * 2);
}
END_TEST

/* GQA's K/V projection: the QKV GEMM's K/V part is 2 x kv_heads x head_dim wide, a quarter of
 * MHA's with 8 of 32 heads. */
START_TEST(gqa_shrinks_kv_projection)
{
    strategy s;
    load_ok(4096, 32, 8, "  context: {degree: 2}\n", &s);
    workload_graph g;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&s.model, 1, PREC_BF16, &g, &err), 0);
    const workload_op *qkv = &g.ops[2];
    ck_assert_str_eq(qkv->name, "layers.0.attn.qkv");
    ck_assert_double_eq(qkv->kv.n, 2.0 * 8 * 128);
    ck_assert_double_eq(qkv->n, 4096.0 + 2.0 * 8 * 128);
    ck_assert_double_eq(2.0 * 32 * 128 / qkv->kv.n, 32.0 / 8);
    workload_graph_free(&g);
    strategy_free(&s);
}
END_TEST

/* A step of the load-balanced ring is the rank's s/C queries (two half-chunks) against one s/C
 * K/V chunk. Step 0, its own chunk, is the causal kernel of seq s/C; a later step half the
 * s/C square of each head without a mask, costed as the unmasked kernel on half the heads. In
 * FLOPs (protosim counts the whole s x s score matrix): C steps of at most 4 b (s/C)^2 a d are
 * at most 4 b s^2 a d / C, half the core at C = 2. In 128-row tiles per head (s 8192, C 2):
 * step 0 computes 32 x 33 / 2 = 528 of its 32 x 32, step 1 32 x 32 / 2 = 512; together 1040,
 * half of the whole causal core's 64 x 65 / 2 = 2080. */
START_TEST(attention_flops_halved)
{
    sim_fixture f;
    cp_plan(&f, 1, 4096, 32, 8, "  context: {degree: 2}\n", 1);
    workload_model half = f.s.model;
    half.seq = 4096;
    workload_graph g;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&half, 1, PREC_BF16, &g, &err), 0);
    const workload_op *step = &g.ops[4];
    ck_assert_str_eq(step->name, "layers.0.attn.core");
    ck_assert(step->causal && step->fused);
    double full = 4.0 * 1 * 8192.0 * 8192 * 32 * 128;
    ck_assert_double_eq(step->fwd_flops, 4.0 * 1 * 4096.0 * 4096 * 32 * 128);
    ck_assert_double_eq(2 * step->fwd_flops, full / 2);
    /* the tiles, by hand as above */
    ck_assert_double_eq(cost_causal_tile_fraction(4096) * 32 * 32, 528);
    ck_assert_double_eq(cost_causal_tile_fraction(8192) * 64 * 64, 2080);
    ck_assert_double_eq(528 + 32 * 32 / 2, 2080 / 2);
    workload_op later = *step;
    later.causal = 0;
    later.batch = 32.0 / 2;
    later.fwd_flops /= 2;
    later.bwd_flops /= 2;
    const device_spec *dev = f.c.device[0];
    double f0 = cost_op_kernel_seconds(step, PASS_FWD, PREC_BF16, dev);
    double b0 = cost_op_kernel_seconds(step, PASS_BWD, PREC_BF16, dev);
    double f1 = cost_op_kernel_seconds(&later, PASS_FWD, PREC_BF16, dev);
    double b1 = cost_op_kernel_seconds(&later, PASS_BWD, PREC_BF16, dev);
    /* rank 0: its first forward transfer is followed by the two steps of layer 0 */
    const exec_graph *pg = f.p.graph;
    uint32_t x = nth_task(pg, 0, FWD, 0, 0);
    ck_assert_double_eq_tol(pg->tasks[nth_task(pg, 0, NULL, x, 0)].seconds, f0, 1e-15);
    ck_assert_double_eq_tol(pg->tasks[nth_task(pg, 0, NULL, x, 1)].seconds, f1, 1e-15);
    /* backward: transfer 0, step 0, transfer 1, step 1, then the wait for the gradients */
    uint32_t y = nth_task(pg, 0, BWD, 0, 0);
    ck_assert_double_eq_tol(pg->tasks[nth_task(pg, 0, NULL, y, 0)].seconds, b0, 1e-15);
    ck_assert_double_eq_tol(pg->tasks[nth_task(pg, 0, NULL, y, 1)].seconds, b1, 1e-15);
    ck_assert(nth_task(pg, 0, NULL, y, 1) > nth_task(pg, 0, BWD, 0, 1)); /* posted before */
    ck_assert_double_eq(pg->tasks[nth_task(pg, 0, NULL, y, 2)].seconds, 0.0);
    workload_graph_free(&g);
    fixture_free(&f);
}
END_TEST

/* Simulate with every software overhead off; return the rank-0 timings of layer 0's forward
 * ring in micro-batch 0: transfer 0 (its start and end), the peer's transfer 0 (end), steps 0
 * and 1 (start, end). */
typedef struct ring_times {
    double x_start, x_end, peer_x_end, a0_start, a0_end, a1_start, a1_end;
} ring_times;

static void ring_run(int hidden, int heads, int kv_heads, ring_times *rt)
{
    sim_fixture f;
    cp_plan(&f, 1, hidden, heads, kv_heads, "  context: {degree: 2}\n", 0);
    fixture_run(&f);
    const exec_graph *g = f.p.graph;
    const htae_result *r = &f.r;
    uint32_t x = nth_task(g, 0, FWD, 0, 0), px = nth_task(g, 1, FWD, 0, 0);
    uint32_t a0 = nth_task(g, 0, NULL, x, 0), a1 = nth_task(g, 0, NULL, x, 1);
    *rt = (ring_times){r->start[x], r->end[x],    r->end[px], r->start[a0],
                       r->end[a0],  r->start[a1], r->end[a1]};
    fixture_free(&f);
}

/* One GPU per node: the K/V chunk crosses two 10 GB/s NICs. hidden 1024, 8 K/V heads of 128:
 * 1 x 4096 x 2 x 8 x 128 x 2 = 16,777,216 bytes = 1.6777216 ms, far longer than a step of
 * 8 heads: step 1 starts when the chunk from the other rank has arrived, step 0 ran beside
 * the transfer. */
START_TEST(ring_step_waits_for_its_chunk)
{
    ring_times t;
    ring_run(1024, 8, 8, &t);
    ck_assert_double_eq_tol(t.x_end - t.x_start, 16777216.0 / 10e9, 1e-12);
    ck_assert(t.a0_start < t.x_end && t.a0_end < t.x_end); /* overlapped */
    ck_assert(t.x_start <= t.a0_start + 1e-12);
    ck_assert_double_eq_tol(t.a1_start, t.peer_x_end, 1e-12);
    /* both ranks start their transfers together (each waits for the other to reach the ring) */
    ck_assert_double_eq_tol(t.peer_x_end, t.x_end, 1e-12);
}
END_TEST

/* hidden 8192 with 64 heads and one K/V head: the chunk is 1 x 4096 x 2 x 1 x 128 x 2 =
 * 2,097,152 bytes (0.2097152 ms), a step is 4 x 4096^2 x 64 x 128 FLOPs (0.55 TFLOP, about
 * 2 ms on an A100): step 1 starts when step 0 ends, the transfer long done. */
START_TEST(ring_step_waits_for_the_step_before)
{
    ring_times t;
    ring_run(8192, 64, 1, &t);
    ck_assert_double_eq_tol(t.x_end - t.x_start, 2097152.0 / 10e9, 1e-12);
    ck_assert(t.peer_x_end < t.a0_end);
    ck_assert_double_eq_tol(t.a1_start, t.a0_end, 1e-12);
}
END_TEST

/* ---- memory and gradients ---- */

/* Context 2 against data 2 on the same 2 GPUs (same weights per GPU, ZeRO-1 over 2 ranks in
 * both): activations (every saved tensor is per token) exactly halve, weights, gradients and
 * optimizer state are the same; the gradients reduce over the 2 context ranks. */
START_TEST(activations_divided_gradients_over_context)
{
    sim_fixture fc, fd;
    cp_plan(&fc, 1, 1024, 8, 8, "  context: {degree: 2}\n  data: {zero: 1}\n", 1);
    fd.c = fc.c; /* the same 2 GPUs */
    load_ok(1024, 8, 8, "  data: {degree: 2, zero: 1}\n", &fd.s);
    fixture_compile(&fd, NULL);
    const compiled_plan pc = fc.p, pd = fd.p;
    for (int r = 0; r < 2; r++) {
        ck_assert_double_eq_tol(pc.memory[r].activations * 2, pd.memory[r].activations,
                                1e-9 * pd.memory[r].activations);
        ck_assert_double_eq(pc.memory[r].weights, pd.memory[r].weights);
        ck_assert_double_eq(pc.memory[r].optimizer, pd.memory[r].optimizer);
        ck_assert_double_eq(pc.memory[r].gradients, pd.memory[r].gradients);
    }
    ck_assert_int_eq(pc.zero_shard, 2);
    ck_assert_int_eq(pc.dp, 1);
    ck_assert_int_eq(pc.cp, 2);
    /* the same gradient collectives, over the same 2 GPUs */
    int nc = 0, nd = 0;
    const exec_graph *g = pc.graph;
    for (uint32_t k = 0; k < g->n_colls; k++)
        if (g->tasks[g->coll_tasks[g->colls[k].first_task]].category == CAT_DP_COMM) {
            ck_assert_int_eq(g->groups[g->colls[k].group].n, 2);
            nc++;
        }
    g = pd.graph;
    for (uint32_t k = 0; k < g->n_colls; k++)
        nd += g->tasks[g->coll_tasks[g->colls[k].first_task]].category == CAT_DP_COMM;
    ck_assert_int_gt(nc, 0);
    ck_assert_int_eq(nc, nd);
    /* a global batch of 2 is 2 micro-batches on the one data replica, 1 on each of 2 */
    ck_assert_int_eq(pc.micro_batches, 2);
    ck_assert_int_eq(pd.micro_batches, 1);
    fixture_free_plan(&fd);
    fixture_free(&fc);
}
END_TEST

typedef struct cp_run {
    const char *strat;
    int fold;
} cp_run;

static void cp_makespan(const void *arg, void *out)
{
    const cp_run *x = arg;
    sim_fixture f;
    cp_plan(&f, 2, 1024, 8, 8, x->strat, x->fold);
    ck_assert_int_eq(f.p.simulated_replicas, x->fold ? 1 : 2);
    htae_default_options(&f.o);
    fixture_run(&f);
    *(double *)out = f.r.makespan;
}

/* Simulate in a child (fixture_forked: SimGrid runs once per process); the iteration time. */
static double simulate(const char *strat, int fold)
{
    cp_run x = {strat, fold};
    double makespan;
    fixture_forked(cp_makespan, &x, &makespan, sizeof makespan);
    return makespan;
}

/* Context 2 x data 2 on two nodes of 2 GPUs (the context ring inside a node): folding simulates
 * data replica 0, where context index 1 is a shifted copy of index 0 (inner folding: one rank
 * computes), and gives the unfolded time (within the executor's 0.5%). */
START_TEST(folded_replicas_keep_context_ranks)
{
    const char *strat = "  context: {degree: 2}\n  data: {degree: 2, zero: 1}\n";
    double folded = simulate(strat, 1), full = simulate(strat, 0);
    ck_assert_msg(fabs(folded / full - 1) < 0.005, "folded %.9g, unfolded %.9g", folded, full);
}
END_TEST

/* Inner folding (strategies/compile/fold.c): tensor 2 x context 2 on two nodes of 2 GPUs, rank
 * t + 2 c, so each TP pair shares a node and each ring crosses between the nodes both ways.
 * Shifting the tensor or the context index maps the plan onto itself, so rank 0 alone computes;
 * its ring sends to rank 2 carry the other ranks' as companion pairs: 1 -> 3, 2 -> 0, 3 -> 1;
 * its TP collectives run over the pair {0, 1} with 1 a stand-in. */
START_TEST(inner_folding_one_rank_computes)
{
    sim_fixture f;
    cp_plan(&f, 2, 1024, 8, 8, "  tensor: {degree: 2}\n  context: {degree: 2}\n", 1);
    ck_assert_int_eq(f.p.simulated_tp, 1);
    ck_assert_int_eq(f.p.simulated_context, 1);
    const exec_graph *g = f.p.graph;
    int rings = 0, tp = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->kind == TASK_COMPUTE)
            ck_assert_int_eq(k->rank, 0);
        if (k->category == CAT_CP_COMM) {
            const int32_t *pr;
            ck_assert_int_eq(k->rank, 0);
            ck_assert_int_eq(k->peer, 2);
            ck_assert_int_eq(graph_companions(g, t, &pr), 3);
            int want[6] = {1, 3, 2, 0, 3, 1};
            for (int i = 0; i < 6; i++)
                ck_assert_int_eq(pr[i], want[i]);
            rings++;
        }
        if (k->category == CAT_TP_COMM) {
            const graph_group *gr = &g->groups[g->colls[k->coll].group];
            ck_assert_int_eq(gr->n, 2);
            ck_assert_int_eq(gr->tasked, 1);
            ck_assert_int_eq(g->group_ranks[gr->first + 1], 1);
            tp++;
        }
    }
    ck_assert_int_gt(rings, 0);
    ck_assert_int_gt(tp, 0);
    fixture_free(&f);
}
END_TEST

static void inner_run(const void *arg, void *out)
{
    const cp_run *x = arg;
    sim_fixture f;
    cp_plan(&f, 2, 1024, 8, 8, x->strat, x->fold);
    htae_default_options(&f.o);
    fixture_run(&f);
    double *o = out;
    o[0] = f.r.makespan;
    o[1] = f.r.pruned;
    fixture_free(&f);
}

/* The plan above simulated: its ring sends' companion pairs between the two GPUs that compute
 * nothing, 1 -> 3 and 3 -> 1, cross only links no other traffic crosses (their images, 0 -> 2
 * and 2 -> 0, run in full), so they are left out of SimGrid's tasks (htae_prune.h), and the
 * iteration is the unfolded one's (to 1e-12); unfolded nothing is left out. */
START_TEST(inner_folding_leaves_flows_out)
{
    const char *strat = "  tensor: {degree: 2}\n  context: {degree: 2}\n";
    cp_run a = {strat, 1}, b = {strat, 0};
    double folded[2], full[2];
    fixture_forked(inner_run, &a, folded, sizeof folded);
    fixture_forked(inner_run, &b, full, sizeof full);
    ck_assert_double_ge(folded[1], 2);
    ck_assert_double_eq(full[1], 0);
    ck_assert_msg(fabs(folded[0] / full[0] - 1) < 1e-12, "folded %.12g, full %.12g", folded[0],
                  full[0]);
}
END_TEST

/* A sweep over context {1, 2, 4} x tensor {1, 2} with data auto on 8 GPUs (seq 8192, 8 heads,
 * global batch 8): data = 8 / (tensor x context); context 4 with tensor 2 leaves data 1,
 * context 4 with tensor 1 data 2, all valid (8192 divides into 8 chunks). Context is the last
 * axis: it varies fastest. */
START_TEST(sweep_context_axis)
{
    char strat[2048], text[4096];
    strategy_text(strat, sizeof strat, 1024, 8, 8, "    data: {degree: 1}\n");
    /* indent the strategy under base: */
    char *q = text;
    q += sprintf(q, "base:\n");
    for (const char *line = strat; *line;) {
        const char *nl = strchr(line, '\n');
        q += sprintf(q, "  %.*s\n", (int)(nl - line), line);
        line = nl + 1;
    }
    sprintf(q, "axes:\n  tensor: [1, 2]\n  context: [1, 2, 4]\n  data: auto\n");
    char *g = strstr(text, "global: 2");
    g[8] = '8';
    char *path = sim_temp_file("", text);
    sweep_spec sp;
    ps_error err;
    ps_error_clear(&err);
    int rc = sweep_spec_load(path, ps_data_dir(), &sp, &err);
    unlink(path);
    free(path);
    ck_assert_msg(rc == 0, "%s\n%s", err.message, text);
    sweep_plan *plans;
    int n;
    ck_assert_int_eq(sweep_enumerate(&sp, 8, &plans, &n, &err), 0);
    ck_assert_int_eq(n, 6);
    const int tp[6] = {1, 1, 1, 2, 2, 2}, cp[6] = {1, 2, 4, 1, 2, 4}, dp[6] = {8, 4, 2, 4, 2, 1};
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(plans[i].status, SWEEP_PLAN_PENDING);
        ck_assert_int_eq(plans[i].desc.tp, tp[i]);
        ck_assert_int_eq(plans[i].desc.cp, cp[i]);
        ck_assert_int_eq(plans[i].desc.dp, dp[i]);
    }
    char label[128];
    sweep_plan_label(&plans[4], 0, 0, 0, label, sizeof label);
    ck_assert_str_eq(label, "tp2 pp1 dp2 mb1 1f1b zero0 none cp2");
    free(plans);
    sweep_spec_free(&sp);
}
END_TEST

static Suite *context_suite(void)
{
    const TTest *const tests[] = {context_key_and_order,
                                  context_errors_located,
                                  rank_layout_by_hand,
                                  gqa_shrinks_ring_transfers,
                                  mha_ring_transfers,
                                  tensor_parallel_ring_sends_its_heads,
                                  gqa_shrinks_kv_projection,
                                  attention_flops_halved,
                                  ring_step_waits_for_its_chunk,
                                  ring_step_waits_for_the_step_before,
                                  activations_divided_gradients_over_context,
                                  folded_replicas_keep_context_ranks,
                                  inner_folding_one_rank_computes,
                                  inner_folding_leaves_flows_out,
                                  sweep_context_axis,
                                  NULL};
    return suite_of("context", "context", 120, tests);
}

int main(void)
{
    return suite_run(context_suite());
}
