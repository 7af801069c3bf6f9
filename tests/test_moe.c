/* test_moe.c: mixture-of-experts models: parameter counts of the bundled models against the
 * published figures (computed by hand here), the ops of a MoE layer, the busiest
 * expert-parallel rank's load under imbalance and capacity, and the MoE keys' rules. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../strategies/strategy.h"
#include "../workloads/workload.h"
#include "model_util.h"
#include "suite_util.h"

static void build_named(const char *name, workload_graph *g)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(workload_model_load(name, ps_data_dir(), &m, &err) == 0, "%s: %s", name,
                  err.message);
    ck_assert_msg(workload_build(&m, 1, PREC_BF16, g, &err) == 0, "%s", err.message);
}

/* Parameters of a Llama-style MoE model with untied embeddings, by the formula: per layer
 * attention (Q, K, V, O), two RMSNorm weights, the router (h x E) and E SwiGLU experts of 3
 * h x f matrices; final norm, embedding and LM head. Active: topk of the experts. */
static void moe_params(double L, double h, double a, double kv, double d, double f, double V,
                       double E, double k, double *total, double *active)
{
    double attn = h * (a * d + 2 * kv * d) + a * d * h + 2 * h;
    double experts = E * 3 * h * f, router = h * E;
    *total = L * (attn + router + experts) + h + 2 * V * h;
    *active = L * (attn + router + experts * k / E) + h + 2 * V * h;
}

/* Mixtral 8x7B: published 46.7 B total, 12.9 B active. By hand: attention 4096 x (4096 + 2 x
 * 1024) + 4096 x 4096 = 41,943,040; norms 8,192; router 32,768; experts 8 x 3 x 4096 x 14336 =
 * 1,409,286,144; a layer 1,451,270,144, 32 of them 46,440,644,608; plus 2 x 32000 x 4096 +
 * 4096 = 262,148,096: 46,702,792,704. Active: experts 2 x 176,160,768 = 352,321,536 a layer:
 * 32 x 394,305,536 + 262,148,096 = 12,879,925,248. */
START_TEST(mixtral_8x7b_parameters_by_hand)
{
    workload_graph g;
    build_named("mixtral-8x7b", &g);
    ck_assert_double_eq(g.total_params, 46702792704.0);
    ck_assert_double_eq(g.active_params, 12879925248.0);
    ck_assert_double_eq(round(g.total_params / 1e8) / 10, 46.7);
    ck_assert_double_eq(round(g.active_params / 1e8) / 10, 12.9);
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.experts.fc1")->params, 8.0 * 4096 * 2 * 14336);
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.experts.fc2")->params, 8.0 * 14336 * 4096);
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.router")->params, 4096.0 * 8);
    ck_assert(!has_op(&g, "layers.0.mlp.fc1"));
    workload_graph_free(&g);
}
END_TEST

/* The other bundled models against the formula and their published totals. */
START_TEST(bundled_moe_models_match_published)
{
    static const struct {
        const char *name;
        double L, h, a, kv, d, f, V, E, k, total_b, active_b; /* published, billions */
    } models[] = {
        {"mixtral-8x22b", 56, 6144, 48, 8, 128, 16384, 32768, 8, 2, 141, 39},
        {"qwen3-30b-a3b", 48, 2048, 32, 4, 128, 768, 151936, 128, 8, 30.5, 3.3},
        {"qwen3-235b-a22b", 94, 4096, 64, 4, 128, 1536, 151936, 128, 8, 235, 22},
    };
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        workload_graph g;
        build_named(models[i].name, &g);
        double total, active;
        moe_params(models[i].L, models[i].h, models[i].a, models[i].kv, models[i].d, models[i].f,
                   models[i].V, models[i].E, models[i].k, &total, &active);
        ck_assert_double_eq(g.total_params, total);
        ck_assert_double_eq(g.active_params, active);
        ck_assert_msg(fabs(total / 1e9 - models[i].total_b) / models[i].total_b < 0.01, "%s",
                      models[i].name);
        ck_assert_msg(fabs(active / 1e9 - models[i].active_b) / models[i].active_b < 0.02, "%s",
                      models[i].name);
        workload_graph_free(&g);
    }
}
END_TEST

#define MOE_HEAD                                                                                   \
    "family: llama\nlayers: 3\nhidden: 64\nheads: 8\nseq: 16\nvocab: 100\nffn_hidden: 32\n"

/* A MoE layer's ops on a small model (micro-batch 2: 32 tokens, 4 experts, top-2: 64 routed
 * rows, 16 per expert), shared experts and a leading dense layer. */
START_TEST(moe_layer_ops)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(model_load_text(MOE_HEAD "experts: 4\nexperts_topk: 2\nshared_experts: 2\n"
                                           "dense_layers: 1\ndense_ffn_hidden: 96\n",
                                  &m, &err) == 0,
                  "%s", err.message);
    workload_graph g;
    ck_assert(workload_build(&m, 2, PREC_BF16, &g, &err) == 0);
    double t = 32, r = 64, h = 64, f = 32, e = 2;

    /* layer 0 is dense, of width 96 */
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.fc1")->n, 2 * 96);
    ck_assert(!has_op(&g, "layers.0.mlp.router"));

    const workload_op *o = find_op(&g, "layers.1.mlp.router");
    ck_assert(o->kind == OP_GEMM && o->m == t && o->n == 4 && o->k == h);
    ck_assert_double_eq(o->params, h * 4);
    ck_assert(!o->fp8_gemm);
    o = find_op(&g, "layers.1.mlp.router_topk");
    ck_assert(o->kind == OP_SOFTMAX);
    ck_assert_double_eq(o->fwd_bytes, 2 * e * t * 4 + r * (e + 8));
    ck_assert_double_eq(o->act_bytes, t * 4 * e);
    o = find_op(&g, "layers.1.mlp.permute");
    ck_assert_double_eq(o->fwd_bytes, 2 * e * r * h + 8 * r);

    /* grouped GEMM: 4 experts of 16 x 64 x 64 (gate and up) */
    o = find_op(&g, "layers.1.mlp.experts.fc1");
    ck_assert(o->expert && o->fp8_gemm && o->split == SPLIT_COLUMN);
    ck_assert(o->batch == 4 && o->m == 16 && o->n == 2 * f && o->k == h);
    ck_assert_double_eq(o->fwd_flops, 2 * r * 2 * f * h);
    ck_assert_double_eq(o->fwd_bytes, (r * h + 4 * h * 2 * f + r * 2 * f) * e);
    ck_assert_double_eq(o->params, 4 * h * 2 * f);
    ck_assert_double_eq(o->act_bytes, r * h * e);
    o = find_op(&g, "layers.1.mlp.experts.swiglu");
    ck_assert(o->expert && o->m == r && o->n == f);
    o = find_op(&g, "layers.1.mlp.experts.fc2");
    ck_assert(o->split == SPLIT_ROW && o->batch == 4 && o->m == 16 && o->n == h && o->k == f);
    ck_assert_double_eq(o->fwd_flops, 2 * r * h * f);
    o = find_op(&g, "layers.1.mlp.unpermute");
    ck_assert_double_eq(o->fwd_bytes, e * r * h + t * h * e + r * (e + 8));
    ck_assert_double_eq(o->act_bytes, r * h * e);

    /* shared experts: one MLP of 2 x 32 */
    ck_assert_double_eq(find_op(&g, "layers.2.mlp.shared.fc1")->n, 2 * 64);
    ck_assert_double_eq(find_op(&g, "layers.2.mlp.shared.fc2")->params, 64 * h);

    /* tensor parallelism splits each expert's matrices as a dense MLP's */
    workload_op s;
    workload_op_shard(find_op(&g, "layers.1.mlp.experts.fc1"), 2, 0, 1, &s);
    ck_assert(s.batch == 4 && s.m == 16 && s.n == f);
    ck_assert_double_eq(s.params, 4 * h * f);
    ck_assert_double_eq(s.fwd_flops, r * 2 * f * h);
    workload_graph_free(&g);
}
END_TEST

/* The busiest expert-parallel rank's load over the balanced one: 8 experts, the busiest at
 * twice the mean, the other 7 sharing the rest (6/7 each). One expert a rank: 2. Two a rank:
 * (2 + 6/7) / 2 = 10/7. Capacity 1.5 caps the busiest at 1.5: (1.5 + 6.5/7) / 2 = 17/14. */
START_TEST(expert_rank_load_by_hand)
{
    workload_model m;
    workload_model_init(&m, FAMILY_LLAMA, 2, 64, 8, 16, 100);
    ck_assert_double_eq(workload_expert_rank_load(&m, 1), 1.0); /* dense */
    m.experts = 8;
    m.experts_topk = 2;
    ck_assert_double_eq(workload_expert_rank_load(&m, 8), 1.0); /* balanced */
    m.imbalance = 2.0;
    ck_assert_double_eq(workload_expert_rank_load(&m, 1), 1.0);
    ck_assert_double_eq(workload_expert_rank_load(&m, 8), 2.0);
    ck_assert_double_eq_tol(workload_expert_rank_load(&m, 4), 10.0 / 7, 1e-12);
    m.capacity_factor = 1.5;
    ck_assert_double_eq(workload_expert_rank_load(&m, 8), 1.5);
    ck_assert_double_eq_tol(workload_expert_rank_load(&m, 4), 17.0 / 14, 1e-12);
}
END_TEST

static void expect_error(const char *text, const char *field, int line, int column,
                         const char *words)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(model_load_text(text, &m, &err), PS_EINPUT);
    ck_assert_msg(strcmp(err.field, field) == 0, "field %s, want %s (%s)", err.field, field,
                  err.message);
    ck_assert_msg(err.line == line && err.column == column, "%s at %d:%d, want %d:%d", field,
                  err.line, err.column, line, column);
    ck_assert_msg(strstr(err.message, words) != NULL, "'%s' lacks '%s'", err.message, words);
    ck_assert_ptr_nonnull(strstr(err.file, "protosim_test_model_"));
}

START_TEST(moe_key_rules_are_located_errors)
{
    expect_error(MOE_HEAD "experts: 4\n", "experts_topk", 8, 10, "need experts_topk");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 5\n", "experts_topk", 9, 15, "exceeds");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 2\nimbalance: 0.5\n", "imbalance", 10, 12,
                 "[1, experts = 4]");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 2\nimbalance: 5\n", "imbalance", 10, 12,
                 "[1, experts = 4]");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 2\ndense_layers: 3\ndense_ffn_hidden: 8\n",
                 "dense_layers", 10, 15, "below layers");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 2\ndense_layers: 1\n", "dense_ffn_hidden", 10,
                 15, "need dense_ffn_hidden");
    expect_error(MOE_HEAD "experts: 4\nexperts_topk: 2\ndense_ffn_hidden: 8\n", "dense_ffn_hidden",
                 10, 19, "without dense_layers");
    expect_error(MOE_HEAD "shared_experts: 1\n", "shared_experts", 8, 17, "give experts too");
    expect_error(MOE_HEAD "experts: 0\n", "experts", 8, 10, "");
}
END_TEST

/* A strategy over `model` with the `strategy:` body given; its error (field, line, column). */
static void expect_strategy_error(const char *model, const char *body, const char *field, int line,
                                  int column, const char *words)
{
    char text[1024], path[64];
    snprintf(text, sizeof text, "workload: %s\nbatch: {global: 24, micro: 1}\nstrategy:\n%s", model,
             body);
    model_write_temp(path, sizeof path, "moe", text);
    strategy s;
    ps_error err = {0};
    int rc = strategy_load(path, ps_data_dir(), &s, &err);
    unlink(path);
    ck_assert_int_eq(rc, PS_EINPUT);
    ck_assert_msg(strcmp(err.field, field) == 0, "field %s, want %s (%s)", err.field, field,
                  err.message);
    ck_assert_msg(err.line == line && err.column == column, "%s at %d:%d, want %d:%d", field,
                  err.line, err.column, line, column);
    ck_assert_msg(strstr(err.message, words) != NULL, "'%s' lacks '%s'", err.message, words);
    ck_assert_ptr_nonnull(strstr(err.file, "protosim_test_moe_"));
}

/* expert: {degree, tensor}: the folding rules of Megatron-Core, each error at its key. */
START_TEST(expert_strategy_rules_are_located_errors)
{
    /* 8 x 1 expert ranks out of tensor 2 x data 2 = 4 */
    expect_strategy_error("mixtral-8x7b",
                          "  tensor: {degree: 2, sequence_parallel: true}\n"
                          "  data: {degree: 2}\n"
                          "  expert: {degree: 8}\n",
                          "strategy.expert.degree", 6, 20, "does not divide a stage's tensor 2");
    /* 4 x 2 = 8 does not divide 2 x 2 */
    expect_strategy_error("mixtral-8x7b",
                          "  tensor: {degree: 2, sequence_parallel: true}\n"
                          "  data: {degree: 2}\n"
                          "  expert: {degree: 4, tensor: 2}\n",
                          "strategy.expert.degree", 6, 20, "4 x expert tensor 2 = 8");
    expect_strategy_error("mixtral-8x7b",
                          "  data: {degree: 6}\n"
                          "  expert: {degree: 3}\n",
                          "strategy.expert.degree", 5, 20, "the model's 8 experts");
    expect_strategy_error("mixtral-8x7b",
                          "  data: {degree: 8}\n"
                          "  expert: {degree: 1, tensor: 3}\n",
                          "strategy.expert.tensor", 5, 31, "ffn_hidden (14336)");
    expect_strategy_error("mixtral-8x7b", "  tensor: {degree: 2}\n",
                          "strategy.tensor.sequence_parallel", 4, 20, "needs sequence_parallel");
    expect_strategy_error("llama2-7b", "  expert: {degree: 2}\n", "strategy.expert", 4, 20,
                          "needs a mixture-of-experts model");
    expect_strategy_error("mixtral-8x7b", "  expert: {degree: 0}\n", "strategy.expert.degree", 4,
                          20, "");
}
END_TEST

/* The bundled example loads: EP8 folded over DP8 on one node. */
START_TEST(ep8_example_loads)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/strategies/examples/mixtral-8x7b-dgx-h100-ep8.yaml",
             ps_data_dir());
    strategy s;
    ps_error err = {0};
    ck_assert_msg(strategy_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    ck_assert_int_eq(s.ep, 8);
    ck_assert_int_eq(s.etp, 1);
    ck_assert_int_eq(s.dp, 8);
    ck_assert_int_eq(s.model.experts, 8);
    strategy_free(&s);
}
END_TEST

static Suite *moe_suite(void)
{
    const TTest *const tests[] = {mixtral_8x7b_parameters_by_hand,
                                  bundled_moe_models_match_published,
                                  moe_layer_ops,
                                  expert_rank_load_by_hand,
                                  moe_key_rules_are_located_errors,
                                  expert_strategy_rules_are_located_errors,
                                  ep8_example_loads,
                                  NULL};
    return suite_of("moe", "model", 0, tests);
}

int main(void)
{
    return suite_run(moe_suite());
}
