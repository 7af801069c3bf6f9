/* Multi-head latent attention and multi-token prediction (DeepSeek-V2/V3): the bundled models'
 * parameters against their configs and published totals, an MLA layer's ops by hand, its
 * latent K/V width, its core's FLOPs and cost, the keys' errors and the plans refused. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/cost/cost.h"
#include "../strategies/strategy.h"
#include "fixture.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

/* MLA's parameters per layer, written out from the config's shapes: the query down-projection
 * (h x q_lora), its norm and up-projection (q_lora x heads (nope + rope)), or without q_lora the
 * direct projection (h x heads (nope + rope)); the K/V down-projection (h x (kv_lora + rope)),
 * its norm, the up-projection (kv_lora x heads (nope + v)), the output (heads v x h). */
static double mla_params(double h, double a, double ql, double kvl, double nope, double rope,
                         double dv)
{
    double q = ql > 0 ? h * ql + ql + ql * a * (nope + rope) : h * a * (nope + rope);
    return q + h * (kvl + rope) + kvl + kvl * a * (nope + dv) + a * dv * h;
}

static void build_named_model(const char *name, int mtp, workload_graph *g)
{
    workload_model m = model_load_named(name);
    m.mtp_layers = mtp;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(workload_build(&m, 1, PREC_BF16, g, &err) == 0, "%s", err.message);
}

/* DeepSeek-V3 (config_671B.json): 61 layers of h 7168, 128 heads, the first 3 dense (18432),
 * then 256 routed experts of 2048 (8 a token) and 1 shared; vocab 129280 untied. Main model:
 * 671,026,404,352 (published 671 B), 37,552,282,624 active (published 37 B). The MTP module
 * (depth 1): its two norms, the 2h x h projection, one MoE layer and the shared head's norm:
 * 11,610,067,968 more (the embedding and output head are the main model's). */
START_TEST(deepseek_v3_parameters)
{
    double h = 7168, a = 128, V = 129280, E = 256, k = 8, f = 2048;
    double attn = mla_params(h, a, 1536, 512, 128, 64, 128) + 2 * h; /* and the layer's norms */
    double moe = h * E + E * 3 * h * f + 3 * h * f, dense = 3 * h * 18432;
    double main_total = 61 * attn + 3 * dense + 58 * moe + 2 * V * h + h;
    double main_active =
        61 * attn + 3 * dense + 58 * (h * E + k * 3 * h * f + 3 * h * f) + 2 * V * h + h;
    double mtp = 2 * h + 2 * h * h + attn + moe + h;
    ck_assert_double_eq(main_total, 671026404352.0);
    ck_assert_double_eq(main_active, 37552282624.0);
    ck_assert_double_eq(mtp, 11610067968.0);
    workload_graph g;
    build_named_model("deepseek-v3", 0, &g);
    ck_assert_double_eq(g.total_params, main_total);
    ck_assert_double_eq(g.active_params, main_active);
    ck_assert_double_eq(round(g.total_params / 1e9), 671);
    ck_assert_double_eq(round(g.active_params / 1e9), 38); /* with embedding and head: 37.6 */
    workload_graph_free(&g);
    build_named_model("deepseek-v3", 1, &g);
    ck_assert_double_eq(g.total_params, main_total + mtp);
    workload_graph_free(&g);
}
END_TEST

/* DeepSeek-V2-Lite: no query compression, 27 layers of h 2048, 16 heads, the first dense
 * (10944), then 64 routed experts of 1408 (6 a token) and 2 shared; vocab 102400 untied:
 * 15,706,484,224 (published 15.7 B) and 2,661,150,208 active, 2,451,435,008 without the
 * embedding (published 2.4 B). */
START_TEST(deepseek_v2_lite_parameters)
{
    double h = 2048, V = 102400, E = 64, f = 1408;
    double attn = mla_params(h, 16, 0, 512, 128, 64, 128) + 2 * h;
    double shared = 2 * 3 * h * f;
    double total =
        27 * attn + 3 * h * 10944 + 26 * (h * E + E * 3 * h * f + shared) + 2 * V * h + h;
    double active =
        27 * attn + 3 * h * 10944 + 26 * (h * E + 6 * 3 * h * f + shared) + 2 * V * h + h;
    ck_assert_double_eq(total, 15706484224.0);
    ck_assert_double_eq(active, 2661150208.0);
    workload_graph g;
    build_named_model("deepseek-v2-lite", 0, &g);
    ck_assert_double_eq(g.total_params, total);
    ck_assert_double_eq(g.active_params, active);
    ck_assert_double_eq(round(g.total_params / 1e8) / 10, 15.7);
    ck_assert_double_eq(round((g.active_params - V * h) / 1e8) / 10, 2.5);
    workload_graph_free(&g);
}
END_TEST

#define MLA_MODEL                                                                                  \
    "family: llama\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\nffn_hidden: 512\n"     \
    "attention: mla\nq_lora_rank: 96\nkv_lora_rank: 32\nqk_nope_head_dim: 16\n"                    \
    "qk_rope_head_dim: 8\nv_head_dim: 12\n"

/* A small MLA layer by hand (micro-batch 2: t = 128 tokens, h 256, 4 heads, q_lora 96, kv_lora
 * 32, nope 16, rope 8, v 12): q_down 128 x 96 over 256, q_up 128 x (4 x 24 = 96) over 96,
 * kv_down 128 x (32 + 8 = 40) over 256, kv_up 128 x (4 x 28 = 112) over 32, the output
 * 128 x 256 over 4 x 12 = 48; the core's heads 24 wide for Q and K and 12 for V, forward FLOPs
 * 2 b s^2 a (24 + 12) = 2 x 2 x 64^2 x 4 x 36 = 2,359,296. The K/V latent a token carries
 * (kv_down's output) is 40 elements against 2 a (nope + rope) = 192 for MHA's K and V of the
 * same heads; DeepSeek-V3's is 576 = 4.5 x its head size 128 (the paper's "as GQA with 2.25
 * groups"), 1,152 bytes a token a layer in bf16. */
START_TEST(mla_layer_ops_by_hand)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(model_load_text(MLA_MODEL, &m, &err) == 0, "%s", err.message);
    ck_assert(m.mla && m.flash_attention && m.head_dim == 24 && m.kv_heads == 4);
    workload_graph g;
    ck_assert_msg(workload_build(&m, 2, PREC_BF16, &g, &err) == 0, "%s", err.message);
    static const struct {
        const char *name;
        double m, n, k;
    } gemms[] = {{"layers.1.attn.q_down", 128, 96, 256},
                 {"layers.1.attn.q_up", 128, 96, 96},
                 {"layers.1.attn.kv_down", 128, 40, 256},
                 {"layers.1.attn.kv_up", 128, 112, 32},
                 {"layers.1.attn.proj", 128, 256, 48}};
    for (size_t i = 0; i < sizeof gemms / sizeof *gemms; i++) {
        const workload_op *op = find_op(&g, gemms[i].name);
        ck_assert_msg(op->kind == OP_GEMM && op->m == gemms[i].m && op->n == gemms[i].n &&
                          op->k == gemms[i].k,
                      "%s", gemms[i].name);
        ck_assert_double_eq(op->params, gemms[i].n * gemms[i].k);
    }
    ck_assert_int_eq(find_op(&g, "layers.1.attn.q_down")->split, SPLIT_REPLICATED);
    ck_assert_int_eq(find_op(&g, "layers.1.attn.kv_up")->split, SPLIT_COLUMN);
    ck_assert_double_eq(find_op(&g, "layers.1.attn.q_norm")->params, 96);
    ck_assert_double_eq(find_op(&g, "layers.1.attn.kv_norm")->params, 32);
    const workload_op *core = find_op(&g, "layers.1.attn.core");
    ck_assert(core->kind == OP_ATTENTION && core->fused && core->causal);
    ck_assert_double_eq(core->k, 24);
    ck_assert_double_eq(core->v_dim, 12);
    ck_assert_double_eq(core->fwd_flops, 2359296);
    ck_assert(!has_op(&g, "layers.1.attn.qkv"));
    workload_graph_free(&g);
    workload_model v3 = model_load_named("deepseek-v3");
    ck_assert_int_eq(v3.kv_lora_rank + v3.qk_rope_dim, 576);
    ck_assert_double_eq((v3.kv_lora_rank + v3.qk_rope_dim) / 128.0, 4.5);
    ck_assert_double_eq((v3.kv_lora_rank + v3.qk_rope_dim) * precision_bytes(PREC_BF16), 1152);
}
END_TEST

/* The fused core's time takes each GEMM at its own width: QK^T over the query-key heads (24),
 * PV over the values (12); the same core with values as wide as the keys takes longer. */
START_TEST(mla_core_cost_uses_the_value_width)
{
    device_table t;
    model_devices(&t);
    const device_spec *dev = device_table_find(&t, "H100-SXM5-80GB");
    ck_assert(dev);
    workload_op op;
    memset(&op, 0, sizeof op);
    op.kind = OP_ATTENTION;
    op.batch = 64;
    op.m = op.n = 4096;
    op.k = 192;
    op.v_dim = 128;
    op.fused = op.causal = 1;
    op.kernels = 1;
    op.fwd_bytes = 1e6;
    double mla = cost_attention_kernel_seconds(&op, PASS_FWD, PREC_BF16, dev);
    op.v_dim = 0; /* V as wide as K: 192 */
    double wide = cost_attention_kernel_seconds(&op, PASS_FWD, PREC_BF16, dev);
    ck_assert_msg(mla < wide, "%g %g", mla, wide);
    device_table_free(&t);
}
END_TEST

/* Multi-token prediction (depth 1 on the small MLA model): after the main loss, the shared
 * embedding's lookup, two norms, the 2h -> h projection (2 x 256 x 256 parameters), one more
 * transformer layer numbered as the head (2), the shared head's norm, logits and loss. */
START_TEST(mtp_module_ops)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(model_load_text(MLA_MODEL "mtp_layers: 1\n", &m, &err) == 0, "%s", err.message);
    workload_graph g;
    ck_assert_msg(workload_build(&m, 2, PREC_BF16, &g, &err) == 0, "%s", err.message);
    const workload_op *p = find_op(&g, "mtp.0.eh_proj");
    ck_assert(p->layer == 2 && p->m == 128 && p->n == 256 && p->k == 512);
    ck_assert_double_eq(p->params, 2 * 256 * 256);
    ck_assert_int_eq(find_op(&g, "layers.2.attn.kv_up")->layer, 2);
    /* the main head's weight on the same stage: no parameters of its own, a weight gradient */
    ck_assert(find_op(&g, "mtp.0.lm_head")->params == 0);
    ck_assert(find_op(&g, "mtp.0.lm_head")->shares_weight);
    ck_assert(find_op(&g, "layers.2.attn.kv_up")->mtp && !find_op(&g, "layers.1.attn.kv_up")->mtp);
    ck_assert(find_op(&g, "mtp.0.embedding")->tied_params == 1000 * 256);
    ck_assert(has_op(&g, "mtp.0.loss"));
    workload_graph_free(&g);
}
END_TEST

/* The model `text` is an input error at a located key containing `field`, saying `needle`. */
static void expect_model_error(const char *text, const char *field, const char *needle)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(model_load_text(text, &m, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.field, field), "%s: %s", err.field, err.message);
    ck_assert_msg(strstr(err.message, needle), "%s", err.message);
    ck_assert_int_gt(err.line, 0);
}

/* The MLA keys' errors, each at its key. */
START_TEST(mla_key_errors)
{
    static const struct {
        const char *text, *field, *needle;
    } cases[] = {
        {"family: llama\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\n"
         "ffn_hidden: 512\nkv_lora_rank: 32\n",
         "kv_lora_rank", "needs `attention: mla`"},
        {"family: llama\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\n"
         "ffn_hidden: 512\nattention: mla\nkv_lora_rank: 32\nqk_nope_head_dim: 16\n"
         "qk_rope_head_dim: 8\n",
         "v_head_dim", "needs v_head_dim"},
        {MLA_MODEL "head_dim: 64\n", "head_dim", "not a key of `attention: mla`"},
        {MLA_MODEL "positions: learned\n", "positions", "rotary"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_model_error(cases[i].text, cases[i].field, cases[i].needle);
}
END_TEST

/* Tensor and context parallelism with MLA (or MTP) are refused at their keys. */
START_TEST(mla_refused_with_tensor_or_context_parallelism)
{
    static const struct {
        const char *strategy, *field;
    } cases[] = {
        {"  tensor: {degree: 2}\n", "strategy.tensor.degree"},
        {"  context: {degree: 2}\n", "strategy.context.degree"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[1024];
        snprintf(
            text, sizeof text,
            "workload: {family: llama, layers: 2, hidden: 256, heads: 4, seq: 64, vocab: 1000, "
            "ffn_hidden: 512, attention: mla, kv_lora_rank: 32, qk_nope_head_dim: 16, "
            "qk_rope_head_dim: 8, v_head_dim: 12}\nbatch: {global: 4, micro: 1}\n"
            "strategy:\n%s",
            cases[i].strategy);
        strategy s;
        ps_error err;
        ps_error_clear(&err);
        ck_assert_int_eq(sim_strategy_text(text, &s, &err), PS_EINPUT);
        ck_assert_str_eq(err.field, cases[i].field);
        ck_assert_msg(strstr(err.message, "not modelled yet"), "%s", err.message);
    }
}
END_TEST

/* Nemotron-4's squared-ReLU MLP (activation: squared_relu): ungated, so fc1 is h x ffn (not
 * 2 ffn as swiglu's gate and up), and its activation pass is one kernel costed as gelu's. */
START_TEST(squared_relu_mlp_is_ungated)
{
    static const char *const base = "family: gpt\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\n"
                                    "vocab: 1000\nffn_hidden: 1024\nbias: false\n";
    char text[512];
    workload_graph g[2];
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, "%sactivation: %s\n", base, i ? "squared_relu" : "gelu");
        workload_model m;
        ps_error err = {0};
        ck_assert_msg(model_load_text(text, &m, &err) == 0, "%s", err.message);
        ck_assert_int_eq(m.activation, i ? ACT_SQUARED_RELU : ACT_GELU);
        ck_assert_msg(workload_build(&m, 1, PREC_BF16, &g[i], &err) == 0, "%s", err.message);
    }
    const workload_op *fc1 = find_op(&g[1], "layers.0.mlp.fc1");
    ck_assert(fc1->n == 1024 && fc1->k == 256 && fc1->params == 1024 * 256);
    const workload_op *a = find_op(&g[1], "layers.0.mlp.gelu"),
                      *b = find_op(&g[0], "layers.0.mlp.gelu");
    ck_assert(a->fwd_bytes == b->fwd_bytes && a->bwd_bytes == b->bwd_bytes && a->kernels == 1);
    workload_graph_free(&g[0]);
    workload_graph_free(&g[1]);
}
END_TEST

/* The small MLA model (its extra keys `model`) on two stages of one layer and two replicas on
 * four.xml, bf16, the strategy's recompute lines `recompute`: each stage's weights and
 * activations (its GPU of replica 0) and stage 0's backward kernel time. */
typedef struct small_args {
    const char *model, *recompute;
} small_args;

typedef struct small_out {
    double weights[2], act[2], bwd0;
} small_out;

static void small_child(const void *arg, void *out)
{
    const small_args *a = arg;
    char text[1024];
    snprintf(text, sizeof text,
             "workload: {family: llama, layers: 2, hidden: 256, heads: 4, seq: 64, vocab: 1000, "
             "ffn_hidden: 512, attention: mla, q_lora_rank: 96, kv_lora_rank: 32, "
             "qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 12%s}\n"
             "batch: {global: 4, micro: 1}\nprecision: bf16\n"
             "strategy:\n  pipeline: {degree: 2, layers: [1, 1]}\n  data: {degree: 2}\n%s",
             a->model, a->recompute);
    sim_fixture f;
    fixture_text(&f, text, "tests/data/hetero/four.xml");
    small_out *o = out;
    for (int p = 0; p < 2; p++) {
        int r = compile_rank_of(&f.s, 0, 0, p);
        o->weights[p] = f.p.memory[r].weights;
        o->act[p] = f.p.memory[r].activations;
    }
    o->bwd0 = 0;
    int r0 = compile_rank_of(&f.s, 0, 0, 0);
    for (uint32_t t = 0; t < f.p.graph->n_tasks; t++)
        if (f.p.graph->tasks[t].rank == r0 && f.p.graph->tasks[t].kind == TASK_COMPUTE &&
            f.p.graph->tasks[t].category == CAT_BACKWARD)
            o->bwd0 += f.p.graph->tasks[t].seconds;
    fixture_free(&f);
}

static small_out small_plan(const char *model, const char *recompute)
{
    small_args a = {model, recompute};
    small_out o;
    fixture_forked(small_child, &a, &o, sizeof o);
    return o;
}

/* A plan of the small MLA model with MTP on two stages of 2 GPUs (four.xml), `layers: [1, 1]`:
 * the last stage holds layer 1, the final norm and output head (1000 x 256), and the MTP module:
 * the embedding's copy (1000 x 256), two norms, the 512 x 256 projection, one more layer and its
 * final norm; its output head is the main one's, not counted again. bf16: 2 bytes each. With
 * `recompute: full` the MTP layer keeps only its input (64 tokens x 256 x 2 bytes), so the
 * module adds to the last stage's activations its norms' (enorm, hnorm and its final norm, each
 * input and output: 3 x 2 x 32,768), its loss's fp32 softmax (64 x 1000 x 4) and that input:
 * 485,376 bytes. */
START_TEST(mtp_on_the_last_stage)
{
    double h = 256, v = 1000;
    double layer = mla_params(h, 4, 96, 32, 16, 8, 12) + 2 * h + 3 * h * 512;
    double last = layer + h + v * h + (v * h + 2 * h + 2 * h * h + layer + h);
    small_out with = small_plan(", mtp_layers: 1", "  recompute: full\n");
    small_out without = small_plan("", "  recompute: full\n");
    ck_assert_double_eq(with.weights[1], 2 * last);
    ck_assert_double_eq(without.weights[1], 2 * (layer + h + v * h));
    ck_assert_double_eq(with.act[1] - without.act[1],
                        3 * 2 * 64 * 256 * 2 + 64 * 1000 * 4 + 64 * 256 * 2);
}
END_TEST

/* Megatron-Core's recompute modules on the small MLA model, two stages of one layer, 1F1B (stage
 * 0 holds 2 micro-batches of t = 64 tokens), bf16. `recompute: selective` alone recomputes the
 * core, which is fused here: nothing. mla_up_proj drops, per layer and micro-batch, the normed
 * query latent (q_norm's output, 64 x 96 x 2 = 12,288 bytes), Q (64 x 4 x 24 x 2 = 12,288), the
 * normed K/V latent (64 x 32 x 2 = 4,096) and K and V (64 x 4 x (24 + 12) x 2 = 18,432): 47,104,
 * and runs those ops' forwards again in backward (stage 0's backward kernels take longer);
 * layernorm adds ln1's and ln2's outputs (2 x 64 x 256 x 2 = 65,536). rc_run: small_plan under
 * selective recompute with the strategy lines `modules`, stage 0's activations and backward. */
typedef struct rc_out {
    double act, bwd;
} rc_out;

static rc_out rc_run(const char *model, const char *modules)
{
    char recompute[256];
    snprintf(recompute, sizeof recompute, "  recompute: selective\n%s", modules);
    small_out o = small_plan(model, recompute);
    return (rc_out){o.act[0], o.bwd0};
}

/* The same plan: `mlp` drops the dense MLP's SwiGLU input (fc1's output, 64 x 2 x 512 x 2 =
 * 131,072 bytes) and fc2's input (64 x 512 x 2 = 65,536) and runs fc1, the SwiGLU and fc2
 * again. With 4 experts, top-2, every layer is a MoE layer (r = 64 x 2 = 128 routed rows):
 * `moe_act` drops the experts' fc2 input (128 x 512 x 2 = 131,072) and runs the SwiGLU again
 * (not fc2: its input is what was dropped), and `mlp` changes nothing there (a MoE layer's
 * experts and shared experts are modules of their own). */
START_TEST(recompute_modules_drop_and_redo)
{
    rc_out base = rc_run("", ""), attn = rc_run("", "  recompute_modules: [core_attn]\n");
    rc_out mla = rc_run("", "  recompute_modules: [mla_up_proj]\n");
    rc_out both = rc_run("", "  recompute_modules: [layernorm, mla_up_proj]\n");
    rc_out mlp = rc_run("", "  recompute_modules: [mlp]\n");
    ck_assert_double_eq(attn.act, base.act);
    ck_assert_double_eq(base.act - mla.act, 2 * 47104.0);
    ck_assert_double_eq(mla.act - both.act, 2 * 65536.0);
    ck_assert(mla.bwd > base.bwd && both.bwd > mla.bwd);
    ck_assert_double_eq(base.act - mlp.act, 2 * (131072.0 + 65536.0));
    ck_assert(mlp.bwd > base.bwd);
    const char *moe = ", experts: 4, experts_topk: 2";
    rc_out mbase = rc_run(moe, ""), mact = rc_run(moe, "  recompute_modules: [moe_act]\n");
    rc_out mmlp = rc_run(moe, "  recompute_modules: [mlp]\n");
    ck_assert_double_eq(mbase.act - mact.act, 2 * 131072.0);
    ck_assert(mact.bwd > mbase.bwd);
    ck_assert_double_eq(mmlp.act, mbase.act);
    ck_assert_double_eq(mmlp.bwd, mbase.bwd);
}
END_TEST

/* recompute_modules: a module not modelled, an unknown one, and the key without selective
 * recompute, each at its place. */
START_TEST(recompute_modules_errors)
{
    static const struct {
        const char *text, *field, *message;
        int line;
    } cases[] = {
        {"  recompute: selective\n  recompute_modules: [moe]\n", "strategy.recompute_modules",
         "moe is not modelled", 6},
        {"  recompute: selective\n  recompute_modules: [attn]\n", "strategy.recompute_modules",
         "unknown module 'attn'", 6},
        {"  recompute: full\n  recompute_modules: [layernorm]\n", "strategy.recompute_modules",
         "needs recompute: selective", 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[1024];
        snprintf(text, sizeof text,
                 "workload: {family: llama, layers: 2, hidden: 256, heads: 4, seq: 64, "
                 "vocab: 1000, ffn_hidden: 512}\nbatch: {global: 4, micro: 1}\n"
                 "strategy:\n  data: {degree: 1}\n%s",
                 cases[i].text);
        sim_expect_strategy_error(text, cases[i].field, cases[i].line, cases[i].message);
    }
}
END_TEST

/* The keys MLA and MTP refuse where they do not apply, each at its key. */
START_TEST(mla_and_mtp_need_a_decoder)
{
    static const struct {
        const char *text, *field, *needle;
    } cases[] = {
        {"family: bert\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\n"
         "mtp_layers: 1\n",
         "mtp_layers", "needs a decoder"},
        {"family: bert\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\n"
         "positions: rotary\nbias: false\nattention: mla\nkv_lora_rank: 32\n"
         "qk_nope_head_dim: 16\nqk_rope_head_dim: 8\nv_head_dim: 12\n",
         "attention", "not bert"},
        {"family: gpt\nlayers: 2\nhidden: 256\nheads: 4\nseq: 64\nvocab: 1000\n"
         "positions: rotary\nattention: mla\nkv_lora_rank: 32\nqk_nope_head_dim: 16\n"
         "qk_rope_head_dim: 8\nv_head_dim: 12\n",
         "bias", "no biases"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_model_error(cases[i].text, cases[i].field, cases[i].needle);
}
END_TEST

static Suite *mla_suite(void)
{
    Suite *s = suite_create("mla");
    const TTest *const tests[] = {deepseek_v3_parameters,
                                  deepseek_v2_lite_parameters,
                                  mla_layer_ops_by_hand,
                                  mla_core_cost_uses_the_value_width,
                                  mtp_module_ops,
                                  mla_key_errors,
                                  mla_refused_with_tensor_or_context_parallelism,
                                  squared_relu_mlp_is_ungated,
                                  mtp_on_the_last_stage,
                                  mla_and_mtp_need_a_decoder,
                                  recompute_modules_drop_and_redo,
                                  recompute_modules_errors,
                                  NULL};
    suite_add_tests(s, "core", 60, tests);
    return s;
}

int main(void)
{
    return suite_run(mla_suite());
}
