/* test_uneven.c: uneven pipeline stages (strategy_chunk_layers): the layer assignments of
 * Megatron-Core's split options and of an explicit list, by hand; their errors at the key; a
 * compiled uneven plan's stages (parameters, labels, activations, compute) by hand. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../strategies/compile/compile.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* Write `text` to a temporary strategy file and load it; returns strategy_load's code. */
static int load_text(const char *text, strategy *s, ps_error *err, char *path, size_t n)
{
    snprintf(path, n, "/tmp/protosim-uneven-XXXXXX.yaml");
    int fd = mkstemps(path, 5);
    ck_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    ps_error_clear(err);
    int rc = strategy_load(path, ps_data_dir(), s, err);
    unlink(path);
    return rc;
}

/* ---- the assignments, by hand ---- */

typedef struct split_case {
    const char *yaml;
    int chunks;
    int want[64];
} split_case;

#define GPT(layers)                                                                                \
    "workload: {family: gpt, layers: " #layers ", hidden: 256, heads: 4, seq: 64, "                \
    "vocab: 1024}\nbatch: {global: 64, micro: 1}\n"

static const split_case splits[] = {
    /* BLOOM 176B's layout search, Megatron-DeepSpeed's `type:transformer|embedding`: 70 layers
     * + the embedding + the tied head = 72 over 12 stages, 6 each; the first stage holds the
     * embedding and 5 layers, the last 5 layers and the head */
    {GPT(70) "strategy: {pipeline: {degree: 12, account_for_embedding: true, "
             "account_for_loss: true}}\n",
     12,
     {5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5}},
    /* the embedding alone: 7 + 1 = 8 over 4 stages: 1, 2, 2, 2 */
    {GPT(7) "strategy: {pipeline: {degree: 4, account_for_embedding: true}}\n", 4, {1, 2, 2, 2}},
    /* the loss alone, interleaved: 11 + 1 = 12 over 2 stages x 3 = 6 chunks of 2, the last 1 */
    {GPT(11) "strategy: {pipeline: {degree: 2, schedule: interleaved, virtual_stages: 3, "
             "account_for_loss: true}}\n",
     6,
     {2, 2, 2, 2, 2, 1}},
    /* Llama 3.1 405B (Megatron-Bridge): 126 + 2 = 128 over 8 stages x 8 = 64 chunks of 2, the
     * first chunk 1 layer and the embedding, the last 1 layer and the loss */
    {GPT(126) "strategy: {pipeline: {degree: 8, schedule: interleaved, virtual_stages: 8, "
              "account_for_embedding: true, account_for_loss: true}}\n",
     64,
     {1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
      2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
      2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1}},
    /* first 1, last 3 of 10 layers over 4 stages: the 6 left over the 2 middle stages */
    {GPT(10) "strategy: {pipeline: {degree: 4, first_stage_layers: 1, last_stage_layers: 3}}\n",
     4,
     {1, 3, 3, 3}},
    /* first 2 of 14 over 4 stages x 2: stage 0's chunks 1 each; the 12 left over stages 1-3,
     * 4 each, 2 per chunk; chunk k * 4 + p */
    {GPT(14) "strategy: {pipeline: {degree: 4, schedule: interleaved, virtual_stages: 2, "
             "first_stage_layers: 2}}\n",
     8,
     {1, 2, 2, 2, 1, 2, 2, 2}},
    /* last only: 9 layers, 3 stages, last 1: 8 over 2 middle stages */
    {GPT(9) "strategy: {pipeline: {degree: 3, last_stage_layers: 1}}\n", 3, {4, 4, 1}},
    /* two stages, both given: no middle stage */
    {GPT(5) "strategy: {pipeline: {degree: 2, first_stage_layers: 2, last_stage_layers: 3}}\n",
     2,
     {2, 3}},
    /* an explicit list, chunk by chunk in model order; the first chunk may hold only the
     * embedding */
    {GPT(6) "strategy: {pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2, "
            "layers: [0, 3, 2, 1]}}\n",
     4,
     {0, 3, 2, 1}},
    /* no key: the even split */
    {GPT(8) "strategy: {pipeline: {degree: 4}}\n", 4, {2, 2, 2, 2}},
};

START_TEST(chunk_layers_by_hand)
{
    const split_case *c = &splits[_i];
    strategy s;
    ps_error err;
    char path[64];
    ck_assert_msg(load_text(c->yaml, &s, &err, path, sizeof path) == 0, "case %d: %s", _i,
                  err.message);
    int n[80];
    memset(n, 0xff, sizeof n);
    ck_assert_int_eq(strategy_chunk_layers(&s, n, &err), 0);
    for (int i = 0; i < c->chunks; i++)
        ck_assert_msg(n[i] == c->want[i], "case %d chunk %d: %d, want %d", _i, i, n[i], c->want[i]);
    ck_assert_int_eq(n[c->chunks], -1); /* nothing written beyond */
    strategy_free(&s);
}
END_TEST

/* ---- impossible splits, each at its key ---- */

typedef struct bad_case {
    const char *yaml;
    int line;
    const char *field, *says;
} bad_case;

static const bad_case bad[] = {
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    layers: [3, 4]\n", 6,
     "strategy.pipeline.layers", "add up to 7, but the model has 8"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    layers: [8]\n", 6,
     "strategy.pipeline.layers", "lists 1 model chunks"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 3\n    layers: [4, 0, 4]\n", 6,
     "strategy.pipeline.layers", "model chunk 1 (stage 1) holds no layer"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    layers: [4, -4]\n", 6,
     "strategy.pipeline.layers[1]", ""},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    account_for_loss: true\n"
            "    layers: [4, 4]\n",
     7, "strategy.pipeline.layers", "cannot be combined"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    account_for_embedding: true\n"
            "    first_stage_layers: 3\n",
     7, "strategy.pipeline.first_stage_layers", "cannot be combined"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 4\n    account_for_embedding: true\n", 6,
     "strategy.pipeline.account_for_embedding", "8 layers + embedding = 9 do not split"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    account_for_loss: true\n", 6,
     "strategy.pipeline.account_for_loss", "8 layers + loss = 9"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 3\n    first_stage_layers: 3\n", 6,
     "strategy.pipeline.first_stage_layers", "5 remaining layers do not split evenly"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    first_stage_layers: 3\n"
            "    last_stage_layers: 3\n",
     6, "strategy.pipeline.first_stage_layers", "leave 2 of the model's 8 layers for 0 middle"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 1\n    last_stage_layers: 3\n", 6,
     "strategy.pipeline.last_stage_layers", "needs a pipeline degree >= 2"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    schedule: interleaved\n"
            "    virtual_stages: 2\n    first_stage_layers: 3\n",
     8, "strategy.pipeline.first_stage_layers", "not a multiple of virtual_stages 2"},
    {GPT(8) "strategy:\n  pipeline:\n    degree: 2\n    first_stage_layers: 0\n", 6,
     "strategy.pipeline.first_stage_layers", ""},
    {GPT(7) "strategy:\n  pipeline:\n    degree: 2\n", 5, "strategy.pipeline.degree",
     "pipeline degree 2 does not divide the model's 7 layers"},
    {GPT(2) "strategy:\n  pipeline:\n    degree: 5\n    layers: [0, 1, 1, 0, 0]\n", 5,
     "strategy.pipeline.degree", "more than the model's 2 layers + 2"},
};

START_TEST(impossible_splits_are_located)
{
    const bad_case *c = &bad[_i];
    strategy s;
    ps_error err;
    char path[64];
    ck_assert_msg(load_text(c->yaml, &s, &err, path, sizeof path) != 0, "case %d loaded", _i);
    ck_assert_msg(err.line == c->line && !strcmp(err.field, c->field) &&
                      strstr(err.message, c->says),
                  "case %d: line %d field %s: %s", _i, err.line, err.field, err.message);
    ck_assert_str_eq(err.file, path);
}
END_TEST

/* ---- a compiled uneven plan ---- */

/* Compile `yaml` on two A100s joined by 300 GB/s (loaded once per test process: pass `from` to
 * compile on its cluster, and free f with fixture_free_plan). */
static void compile_text(sim_fixture *f, const char *yaml, const sim_fixture *from)
{
    if (from)
        f->c = from->c;
    fixture_text(f, yaml, from ? NULL : "tests/data/htae/two-300GBps.xml");
}

static int count_label(const compiled_plan *p, const char *name)
{
    int found = 0;
    for (uint32_t t = 0; t < p->graph->n_tasks; t++)
        found += p->graph->tasks[t].kind == TASK_COMPUTE &&
                 !strcmp(p->graph->labels[p->graph->tasks[t].label], name);
    return found;
}

#define GPT4                                                                                       \
    "workload: {family: gpt, layers: 4, hidden: 1024, heads: 16, seq: 512, vocab: 8192}\n"         \
    "batch: {global: 8, micro: 1}\nprecision: bf16\n"

/* GPT, 4 layers of 12h^2 + 13h parameters (h 1024, vocab 8192, seq 512, tied head), pp 2 with
 * layers [1, 3]: stage 0 holds the embedding (V + s) h and layer 0, stage 1 layers 1-3, the
 * final layernorm 2h and its own copy of the V h head. Each pass is labelled by its layers;
 * 1F1B keeps 2 micro-batches alive on stage 0 and 1 on stage 1, each of its own chunk's. */
START_TEST(uneven_stages_hold_their_layers)
{
    sim_fixture f, even;
    compile_text(&f, GPT4 "strategy: {pipeline: {degree: 2, layers: [1, 3]}}\n", NULL);
    double h = 1024, V = 8192, s = 512, layer = 12 * h * h + 13 * h;
    double first = (V + s) * h + layer, last = 3 * layer + 2 * h + V * h;
    for (int r = 0; r < 2; r++)
        ck_close(f.p.memory[r].weights, 2 * (f.p.stage_of_rank[r] == 0 ? first : last), 1e-12);
    ck_assert(f.p.chunk_layers[0] == 1 && f.p.chunk_layers[1] == 3);
    const char *want[] = {"fwd stage 0, embedding + layer 0", "bwd stage 0, embedding + layer 0",
                          "fwd stage 1, layers 1-3 + LM head", "bwd stage 1, layers 1-3 + LM head"};
    for (int w = 0; w < 4; w++)
        ck_assert_msg(count_label(&f.p, want[w]) == 8, "%s", want[w]); /* one per micro-batch */

    /* activations: the even plan's stages hold 2 layers each (+ embedding / head); a layer's
     * saved activations are the same on every layer, so stage 1's uneven share is its even
     * one plus one layer's, stage 0's minus one layer's (x micro-batches alive: 2, 1) */
    compile_text(&even, GPT4 "strategy: {pipeline: {degree: 2}}\n", &f);
    double a0 = even.p.memory[0].activations, a1 = even.p.memory[1].activations;
    double per_layer = a1 - f.p.memory[1].activations; /* negative: one layer more */
    ck_close(f.p.memory[0].activations, a0 + 2 * per_layer, 1e-12);
    ck_assert(per_layer < 0);
    fixture_free_plan(&even);
    fixture_free(&f);
}
END_TEST

/* Interleaved, both accounted: 6 layers + 2 = 8 over 2 stages x 2 = 4 chunks of 2: chunk 0
 * the embedding and layer 0, chunk 1 layers 1-2, chunk 2 layers 3-4, chunk 3 layer 5 and the
 * head; stage 0 runs chunks 0 and 2, stage 1 chunks 1 and 3. */
START_TEST(interleaved_accounted_chunks)
{
    sim_fixture f;
    compile_text(&f,
                 "workload: {family: gpt, layers: 6, hidden: 1024, heads: 16, seq: 512, "
                 "vocab: 8192}\nbatch: {global: 8, micro: 1}\nprecision: bf16\n"
                 "strategy: {pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2, "
                 "account_for_embedding: true, account_for_loss: true}}\n",
                 NULL);
    ck_assert_int_eq(f.p.chunks, 2);
    const int split[4] = {1, 2, 2, 1};
    for (int mc = 0; mc < 4; mc++)
        ck_assert_int_eq(f.p.chunk_layers[mc], split[mc]);
    const char *want[] = {"fwd stage 0, embedding + layer 0", "fwd stage 1, layers 1-2",
                          "fwd stage 0, layers 3-4", "fwd stage 1, layer 5 + LM head"};
    for (int w = 0; w < 4; w++)
        ck_assert_msg(count_label(&f.p, want[w]) == 8, "%s", want[w]);
    double h = 1024, V = 8192, s = 512, layer = 12 * h * h + 13 * h;
    double st0 = (V + s) * h + 3 * layer, st1 = 3 * layer + 2 * h + V * h;
    for (int r = 0; r < 2; r++)
        ck_close(f.p.memory[r].weights, 2 * (f.p.stage_of_rank[r] == 0 ? st0 : st1), 1e-12);
    fixture_free(&f);
}
END_TEST

/* Activations alive under interleaving follow the schedule's forward order: with 2 stages x 2
 * chunks and 8 micro-batches, stage 0's warm-up holds (2 - 0 - 1) 2 + (2 - 1) 2 + 1 = 5
 * forwards, of chunks 0, 0, 2, 2, 0 (forward j runs chunk (j mod 4) / 2 of the stage), stage 1's
 * 3, of chunks 1, 1, 3. With 6 layers + 2 accounted over 4 chunks ([1, 2, 2, 1]) and per-pass
 * saved activations E (embedding), A (a layer), H (head): stage 0 holds 3 (E + A) + 2 (2 A),
 * stage 1 2 (2 A) + (A + H). E, A and H come from two 1F1B plans (stage 0 keeps 2 micro-batches,
 * stage 1 one): layers [1, 5] give 2 (E + A) and 5 A + H, layers [2, 4] 2 (E + 2 A). */
START_TEST(interleaved_activations_follow_the_schedule)
{
    sim_fixture il, a, b;
    const char *model = "workload: {family: gpt, layers: 6, hidden: 1024, heads: 16, seq: 512, "
                        "vocab: 8192}\nbatch: {global: 8, micro: 1}\nprecision: bf16\n";
    char text[512];
    snprintf(text, sizeof text,
             "%sstrategy: {pipeline: {degree: 2, schedule: interleaved, virtual_stages: 2, "
             "account_for_embedding: true, account_for_loss: true}}\n",
             model);
    compile_text(&il, text, NULL);
    snprintf(text, sizeof text, "%sstrategy: {pipeline: {degree: 2, layers: [1, 5]}}\n", model);
    compile_text(&a, text, &il);
    snprintf(text, sizeof text, "%sstrategy: {pipeline: {degree: 2, layers: [2, 4]}}\n", model);
    compile_text(&b, text, &il);
    int s0 = il.p.stage_of_rank[0] == 0 ? 0 : 1;
    double A = (b.p.memory[s0].activations - a.p.memory[s0].activations) / 2;
    double E = a.p.memory[s0].activations / 2 - A;
    double H = a.p.memory[1 - s0].activations - 5 * A;
    ck_assert(A > 0 && E > 0 && H > 0);
    ck_close(il.p.memory[s0].activations, 3 * (E + A) + 2 * (2 * A), 1e-12);
    ck_close(il.p.memory[1 - s0].activations, 2 * (2 * A) + (A + H), 1e-12);
    fixture_free_plan(&b);
    fixture_free_plan(&a);
    fixture_free(&il);
}
END_TEST

/* The iteration of an uneven 1F1B plan, by hand. GPT, 4 layers, h 4096, seq 2048 (GPU-bound:
 * kernels outlast their launches), untied head, no optimizer, 4 micro-batches, pp 2 with layers
 * [1, 3] on two A100s joined by 300 GB/s, every executor overhead off (the compiler's host
 * costs stay: kernel launches, the pipeline runtime's step u before each unit). Stage 0 (the
 * embedding and layer 0) is much faster than stage 1 (layers 1-3 and the head), so stage 1
 * paces the pipeline:
 *   - F0, B0, F1: a pass's span from a cold start (the flow of its kernels: host launch, then
 *     GPU); b1: stage 1's backward kernels alone (its host has issued them long before);
 *     x = one activation, b s h x 2 bytes / 300 GB/s.
 *   - stage 0: step, F0 of micro-batch 0, send (x). Stage 1 then, for each micro-batch: its
 *     step once the input is in (u), F1 (cold: the GPU waited), B1 (b1), and the next
 *     micro-batch's activations are sent only once it posts the receive after B1 (x).
 *   - after stage 1's last backward: send (x), stage 0's step and cold B0.
 *   T = u + F0 + M (x + u + F1 + b1) + x + u + B0.
 * Stage 1 is the busiest: compute M (F1 + b1), exposed communication the M sends it waits
 * for, and the bubble the rest: (M + 2) u + F0 + x + B0. */
typedef struct passes {
    double span[2][2]; /* [stage][backward] */
    double kernels[2][2];
} passes;

static void pass_by_hand(const strategy *s, const device_spec *dev, int first_stage1_layer,
                         passes *out)
{
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&s->model, s->micro_batch, s->precision, &wg, &err), 0);
    memset(out, 0, sizeof *out);
    for (int st = 0; st < 2; st++)
        for (int b = 0; b < 2; b++) {
            kernel_flow fl = {0, 0};
            op_pass pass = b ? PASS_BWD : PASS_FWD;
            for (int j = 0; j < wg.n_ops; j++) {
                const workload_op *op = &wg.ops[b ? wg.n_ops - 1 - j : j];
                if ((op->layer >= first_stage1_layer) != st)
                    continue;
                double kernel = cost_op_kernel_seconds(op, pass, s->precision, dev);
                flow_op(&fl, op, pass, kernel);
                out->kernels[st][b] += kernel;
            }
            out->span[st][b] = fl.gpu;
        }
    workload_graph_free(&wg);
}

START_TEST(uneven_iteration_by_hand)
{
    sim_fixture f;
    compile_text(&f,
                 "workload: {family: gpt, layers: 4, hidden: 4096, heads: 32, seq: 2048, "
                 "vocab: 8192, tied_embeddings: false}\nbatch: {global: 4, micro: 1}\n"
                 "precision: bf16\noptimizer: none\n"
                 "strategy: {pipeline: {degree: 2, layers: [1, 3]}}\n",
                 NULL);
    passes h;
    pass_by_hand(&f.s, f.c.device[0], 1, &h);
    int M = f.p.micro_batches;
    ck_assert_int_eq(M, 4);
    double u = cost_pipeline_unit_overhead_seconds(), x = 2048.0 * 4096 * 2 / 300e9;
    double F0 = h.span[0][0], B0 = h.span[0][1], F1 = h.span[1][0], b1 = h.kernels[1][1];
    double T = u + F0 + M * (x + u + F1 + b1) + x + u + B0;

    fixture_run(&f); /* every executor overhead off */
    ck_close(f.r.makespan, T, 1e-7);
    ck_assert_int_eq(f.sum.busiest_rank, 1);
    ck_close(f.sum.fig.compute_s, M * (F1 + b1), 1e-7);
    ck_close(f.sum.fig.exposed_comm_s, M * x, 1e-6);
    ck_close(f.sum.fig.bubble_s, (M + 2) * u + F0 + x + B0, 1e-6);
    fixture_free(&f);
}
END_TEST

static Suite *uneven_suite(void)
{
    Suite *s = suite_create("uneven");
    const TTest *const tests[] = {uneven_stages_hold_their_layers, interleaved_accounted_chunks,
                                  interleaved_activations_follow_the_schedule,
                                  uneven_iteration_by_hand, NULL};
    TCase *tc = suite_add_tests(s, "core", 120, tests);
    tcase_add_loop_test(tc, chunk_layers_by_hand, 0, (int)(sizeof splits / sizeof *splits));
    tcase_add_loop_test(tc, impossible_splits_are_located, 0, (int)(sizeof bad / sizeof *bad));
    return s;
}

int main(void)
{
    return suite_run(uneven_suite());
}
