/* test_llama.c: Llama-style dense models and MPT: parameter counts against the published
 * figures (computed by hand here), GQA, SwiGLU, RMSNorm and rotary ops, tensor-parallel
 * splitting of the new matrices, and the keys refused as not modelled (with their positions). */
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

static void build_ok(const workload_model *m, int micro_batch, workload_graph *g)
{
    ps_error err = {0};
    ck_assert_msg(workload_build(m, micro_batch, PREC_BF16, g, &err) == 0, "%s", err.message);
}

/* Parameters of a Llama model by the architecture: per layer Q and O (h x a d each), K and V
 * (h x kv d each), gate, up and down (h x f each), two RMSNorm weights; untied input and
 * output embeddings; the final norm. */
static double llama_params(double L, double h, double a, double kv, double d, double f, double V)
{
    return L * (2 * h * a * d + 2 * h * kv * d + 3 * h * f + 2 * h) + 2 * V * h + h;
}

/* Llama 2 7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096 =
 * 6,738,415,616, within 1% of the published 6.74 B; no biases anywhere. */
START_TEST(llama2_7b_params_by_hand)
{
    workload_model m = model_load_named("llama2-7b");
    ck_assert_int_eq(m.family, FAMILY_LLAMA);
    ck_assert_int_eq(m.activation, ACT_SWIGLU);
    ck_assert_int_eq(m.positions, POS_ROTARY);
    ck_assert(!m.bias && !m.dropout && !m.tied_embeddings && m.flash_attention);
    ck_assert_int_eq(m.kv_heads, 32);
    ck_assert_int_eq(m.head_dim, 128);
    workload_graph g;
    build_ok(&m, 1, &g);
    double hand =
        32.0 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2.0 * 4096) + 2.0 * 32000 * 4096 + 4096;
    ck_assert_double_eq(hand, 6738415616.0);
    ck_assert_double_eq(g.total_params, hand);
    ck_assert(fabs(g.total_params / 6.74e9 - 1) < 0.01);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.qkv")->params, 4096.0 * 3 * 4096);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.proj")->params, 4096.0 * 4096);
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.fc1")->params, 4096.0 * 2 * 11008);
    ck_assert_double_eq(find_op(&g, "layers.0.mlp.fc2")->params, 11008.0 * 4096);
    ck_assert_double_eq(find_op(&g, "layers.0.ln1")->params, 4096);
    ck_assert_double_eq(find_op(&g, "final_layernorm")->params, 4096);
    /* untied: the output embedding has its own weight (and gradient) */
    const workload_op *head = find_op(&g, "lm_head");
    ck_assert_double_eq(head->params, 32000.0 * 4096);
    ck_assert_double_eq(head->tied_params, 0);
    ck_assert_double_eq(find_op(&g, "embedding")->params, 32000.0 * 4096);
    /* no dropout: residual adds, no masks saved; rotary on Q and K */
    ck_assert(has_op(&g, "layers.0.attn.residual_add") && !has_op(&g, "layers.0.attn.dropout_add"));
    ck_assert(has_op(&g, "layers.31.attn.rope"));
    workload_graph_free(&g);
}
END_TEST

/* Llama 3 8B: GQA with 8 K/V heads and a 128256-token vocabulary: 8,030,261,248 (8.03 B). */
START_TEST(llama3_8b_params_by_hand)
{
    workload_model m = model_load_named("llama3-8b");
    ck_assert_int_eq(m.kv_heads, 8);
    ck_assert_int_eq(m.vocab, 128256);
    workload_graph g;
    build_ok(&m, 1, &g);
    double hand = 32.0 * (2.0 * 4096 * 4096 + 2.0 * 4096 * 1024 + 3.0 * 4096 * 14336 + 2.0 * 4096) +
                  2.0 * 128256 * 4096 + 4096;
    ck_assert_double_eq(hand, 8030261248.0);
    ck_assert_double_eq(g.total_params, hand);
    ck_assert(fabs(g.total_params / 8.03e9 - 1) < 0.01);
    workload_graph_free(&g);
}
END_TEST

/* Every bundled Llama and MPT model against its published size (1%), and against the count
 * by the architecture (exact). */
START_TEST(bundled_llama_and_mpt_sizes)
{
    static const struct {
        const char *name;
        double published;
    } rows[] = {
        {"llama2-7b", 6.74e9}, {"llama2-13b", 13.0e9}, {"llama2-70b", 69.0e9},
        {"llama3-8b", 8.03e9}, {"llama3-70b", 70.6e9}, {"llama3-405b", 405e9},
        {"mpt-7b", 6.7e9},     {"mpt-30b", 29.95e9},   {"mpt-70b", 64.86e9},
    };
    double hand[] = {
        llama_params(32, 4096, 32, 32, 128, 11008, 32000),
        llama_params(40, 5120, 40, 40, 128, 13824, 32000),
        llama_params(80, 8192, 64, 8, 128, 28672, 32000),
        llama_params(32, 4096, 32, 8, 128, 14336, 128256),
        llama_params(80, 8192, 64, 8, 128, 28672, 128256),
        llama_params(126, 16384, 128, 8, 128, 53248, 128256),
        /* MPT as released: 12 h^2 per layer, LayerNorm weights only (no_bias), ALiBi (no
         * position table), tied LM head */
        32 * (12.0 * 4096 * 4096 + 2 * 4096) + 50432.0 * 4096 + 4096,
        48 * (12.0 * 7168 * 7168 + 2 * 7168) + 50432.0 * 7168 + 7168,
        /* llm-foundry's MPT-70B: biases (9h on the GEMMs, 2h on the norms: 11h per layer, h
         * on the final norm) and a learned 2048 x h position table */
        80 * (12.0 * 8192 * 8192 + 2 * 8192 + 11 * 8192) + 50368.0 * 8192 + 2048.0 * 8192 +
            2 * 8192,
    };
    ck_assert_double_eq(hand[0], 6738415616.0);
    ck_assert_double_eq(hand[1], 13015864320.0);
    ck_assert_double_eq(hand[2], 68976648192.0);
    ck_assert_double_eq(hand[5], 405853388800.0);
    ck_assert_double_eq(hand[6], 6649286656.0);
    ck_assert_double_eq(hand[8], 64862437376.0); /* NumParams in llm_training_public.csv */
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        workload_model m = model_load_named(rows[i].name);
        workload_graph g;
        build_ok(&m, 1, &g);
        ck_assert_msg(g.total_params == hand[i], "%s: %.0f, by hand %.0f", rows[i].name,
                      g.total_params, hand[i]);
        ck_assert_msg(fabs(g.total_params / rows[i].published - 1) < 0.01, "%s: %.4g vs %.4g",
                      rows[i].name, g.total_params, rows[i].published);
        workload_graph_free(&g);
    }
}
END_TEST

/* llm-foundry's MPT-30B benchmark model (56 heads, learned positions, biases, vocab 50368) at
 * sequence 2048 is the NumParams of its row in llm_training_public.csv, 29,975,214,080. */
START_TEST(mpt_benchmark_config_matches_numparams)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(
        model_load_text("family: gpt\nlayers: 48\nhidden: 7168\nheads: 56\nseq: 2048\n"
                        "vocab: 50368\npositions: learned\nbias: true\ndropout: false\n",
                        &m, &err),
        0);
    workload_graph g;
    build_ok(&m, 1, &g);
    double h = 7168;
    double hand = 48 * (12 * h * h + 13 * h) + 50368 * h + 2048 * h + 2 * h;
    ck_assert_double_eq(hand, 29975214080.0);
    ck_assert_double_eq(g.total_params, hand);
    workload_graph_free(&g);
}
END_TEST

/* GQA shrinks the K/V part of the QKV projection, FLOPs and parameters, by heads / kv_heads
 * exactly, and leaves the attention core's FLOPs (per query head) unchanged. */
START_TEST(gqa_shrinks_kv_projection_exactly)
{
    workload_model gqa = model_load_named("llama3-8b");
    workload_model mha = gqa;
    mha.kv_heads = mha.heads;
    int b = 2;
    workload_graph gg, gm;
    build_ok(&gqa, b, &gg);
    build_ok(&mha, b, &gm);
    double t = b * 8192.0, h = 4096, q = 32 * 128.0;
    const workload_op *x = find_op(&gg, "layers.7.attn.qkv"),
                      *y = find_op(&gm, "layers.7.attn.qkv");
    double kv_p_gqa = x->params - h * q, kv_p_mha = y->params - h * q;
    ck_assert_double_eq(kv_p_gqa, 2 * h * 8 * 128);
    ck_assert_double_eq(kv_p_mha / kv_p_gqa, 32.0 / 8.0);
    double kv_f_gqa = x->fwd_flops - 2 * t * h * q, kv_f_mha = y->fwd_flops - 2 * t * h * q;
    ck_assert_double_eq(kv_f_gqa, 2 * t * h * 2 * 8 * 128);
    ck_assert_double_eq(kv_f_mha / kv_f_gqa, 4.0);
    ck_assert_double_eq(x->kv.n, 2 * 8 * 128.0);
    const workload_op *cg = find_op(&gg, "layers.7.attn.core"),
                      *cm = find_op(&gm, "layers.7.attn.core");
    ck_assert_double_eq(cg->fwd_flops, cm->fwd_flops);
    ck_assert_double_eq(cg->fwd_flops, 4.0 * b * 8192 * 8192 * 32 * 128);
    /* flash traffic: Q, K, V in, O out, plus the log-sum-exp; K and V are 8 heads wide */
    double lse = b * 32 * 8192.0 * 4;
    ck_assert_double_eq(cg->fwd_bytes, 2 * (2 * t * q + 2 * t * 8 * 128) + lse);
    ck_assert_double_eq(cg->bwd_bytes, 2 * (4 * t * q + 4 * t * 8 * 128) + lse);
    /* rotary on Q (32 heads) and K (8 heads): read and write each element */
    const workload_op *r = find_op(&gg, "layers.7.attn.rope");
    ck_assert_double_eq(r->fwd_bytes, 2 * 2 * t * (32 + 8) * 128);
    ck_assert_int_eq(r->kernels, 2);
    workload_graph_free(&gg);
    workload_graph_free(&gm);
}
END_TEST

/* SwiGLU: fc1 holds gate and up (h x 2f), fc2 is f x h: 3 x 2 x tokens x h x f FLOPs forward;
 * silu(gate) * up reads both halves and writes one, and saves both. */
START_TEST(swiglu_mlp_flops)
{
    workload_model m = model_load_named("llama2-7b");
    workload_graph g;
    int b = 3;
    build_ok(&m, b, &g);
    double t = b * 4096.0, h = 4096, f = 11008;
    const workload_op *fc1 = find_op(&g, "layers.2.mlp.fc1"),
                      *fc2 = find_op(&g, "layers.2.mlp.fc2");
    const workload_op *act = find_op(&g, "layers.2.mlp.swiglu");
    ck_assert_double_eq(fc1->fwd_flops + fc2->fwd_flops, 3 * 2 * t * h * f);
    ck_assert_double_eq(fc1->n, 2 * f);
    ck_assert_double_eq(fc1->bwd_flops + fc2->bwd_flops, 2 * 3 * 2 * t * h * f);
    ck_assert_double_eq(act->fwd_bytes, 3 * 2 * t * f);
    ck_assert_double_eq(act->bwd_bytes, 5 * 2 * t * f);
    ck_assert_double_eq(act->act_bytes, 2 * t * f * 2);
    ck_assert_double_eq(fc2->act_bytes, t * f * 2);
    workload_graph_free(&g);
}
END_TEST

/* Saved activations of one Llama 2 7B layer with flash attention, no dropout, bf16:
 * ln1 and ln2 (input and output, 2 x 2 t h each), Q K V (3 t h x 2), the context (t h x 2),
 * the swiglu input (2 t f x 2) and fc2's input (t f x 2), and the log-sum-exp (4 bytes per
 * query row and head); RMSNorm reads its weight (h x 2) and writes its gradient. */
START_TEST(llama_layer_activations_and_norms)
{
    workload_model m = model_load_named("llama2-7b");
    workload_graph g;
    int b = 1;
    build_ok(&m, b, &g);
    double t = 4096, h = 4096, f = 11008, e = 2;
    double sum = 0;
    for (int i = 0; i < g.n_ops; i++)
        if (g.ops[i].layer == 3)
            sum += g.ops[i].act_bytes;
    double hand =
        2 * (2 * t * h * e) + 3 * t * h * e + t * h * e + 2 * t * f * e + t * f * e + 32 * t * 4;
    ck_assert_double_eq(sum, hand);
    const workload_op *ln = find_op(&g, "layers.3.ln1");
    ck_assert_int_eq(ln->kind, OP_LAYERNORM);
    ck_assert_double_eq(ln->fwd_bytes, 2 * e * t * h + h * e);
    ck_assert_double_eq(ln->bwd_bytes, 3 * e * t * h + h * e);
    workload_graph_free(&g);
}
END_TEST

/* Megatron's tensor-parallel layout of the new matrices: gate/up column-parallel, down
 * row-parallel; K/V heads split over TP when kv_heads >= tp, and when tp > kv_heads each rank
 * holds the one K/V head its query heads use. Llama 2 70B: 64 query heads, 8 K/V heads, d 128. */
START_TEST(tensor_parallel_split_of_llama_matrices)
{
    workload_model m = model_load_named("llama2-70b");
    workload_graph g;
    build_ok(&m, 1, &g);
    double t = 4096, h = 8192, d = 128, f = 28672;
    const workload_op *qkv = find_op(&g, "layers.0.attn.qkv");
    const workload_op *core = find_op(&g, "layers.0.attn.core");
    const workload_op *rope = find_op(&g, "layers.0.attn.rope");
    workload_op o;
    /* tp 4 and 8: 2 and 1 K/V heads per rank */
    static const int tps[] = {4, 8, 16, 32};
    static const double q_heads[] = {16, 8, 4, 2}, kv_heads[] = {2, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        double n = (q_heads[i] + 2 * kv_heads[i]) * d;
        workload_op_shard(qkv, tps[i], 0, 0, &o);
        ck_assert_double_eq(o.n, n);
        ck_assert_double_eq(o.k, h);
        ck_assert_double_eq(o.params, h * n);
        ck_assert_double_eq(o.fwd_flops, 2 * t * h * n);
        ck_assert_double_eq(o.act_bytes, t * n * 2);
        ck_assert_double_eq(o.fwd_bytes, (t * h + h * n + t * n) * 2);
        workload_op_shard(core, tps[i], 0, 0, &o);
        ck_assert_double_eq(o.batch, q_heads[i]);
        ck_assert_double_eq(o.fwd_flops, core->fwd_flops / tps[i]);
        double lse = q_heads[i] * t * 4;
        ck_assert_double_eq(o.fwd_bytes,
                            2 * (2 * t * q_heads[i] * d + 2 * t * kv_heads[i] * d) + lse);
        workload_op_shard(rope, tps[i], 0, 0, &o);
        ck_assert_double_eq(o.fwd_bytes, 2 * 2 * t * (q_heads[i] + kv_heads[i]) * d);
    }
    workload_op_shard(find_op(&g, "layers.0.mlp.fc1"), 8, 0, 0, &o);
    ck_assert_double_eq(o.n, 2 * f / 8);
    ck_assert_double_eq(o.params, h * 2 * f / 8);
    workload_op_shard(find_op(&g, "layers.0.mlp.swiglu"), 8, 0, 0, &o);
    ck_assert_double_eq(o.n, f / 8);
    ck_assert_double_eq(o.act_bytes, 2 * t * f * 2 / 8);
    workload_op_shard(find_op(&g, "layers.0.mlp.fc2"), 8, 0, 0, &o);
    ck_assert_double_eq(o.k, f / 8);
    ck_assert_double_eq(o.params, f * h / 8); /* no bias */
    /* the untied LM head splits over a vocab-parallel TP group like the embedding */
    workload_op_shard(find_op(&g, "lm_head"), 8, 0, 1, &o);
    ck_assert_double_eq(o.params, 32000 * h / 8);
    ck_assert_double_eq(o.tied_params, 0);
    workload_graph_free(&g);
}
END_TEST

/* A model key that is wrong, or a feature that is not modelled, is an error at its line and
 * column naming the key. */
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

#define LLAMA_HEAD "family: llama\nlayers: 2\nhidden: 64\nheads: 8\nseq: 16\nvocab: 100\n"

START_TEST(not_modelled_keys_are_located_errors)
{
    /* MLA is modelled (tests/test_mla.c); without its widths it is an error at the attention
     * key naming the first one missing */
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nattention: mla\n", "kv_lora_rank", 8, 12,
                 "`attention: mla` needs kv_lora_rank");
    /* the MoE keys' values are checked first (tests/test_moe.c: their rules) */
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nexperts: many\n", "experts", 8, 10, "integer");
    expect_error(LLAMA_HEAD "ffn_hidden: 128\ncapacity_factor: -1\n", "capacity_factor", 8, 18, "");
}
END_TEST

START_TEST(bad_llama_keys_are_located_errors)
{
    /* 3 K/V heads cannot serve 8 query heads evenly */
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nkv_heads: 3\n", "kv_heads", 8, 11,
                 "does not divide heads");
    /* a gated MLP has no standard width */
    expect_error(LLAMA_HEAD, "ffn_hidden", 1, 9, "swiglu MLP needs ffn_hidden");
    expect_error("family: gpt\nlayers: 2\nhidden: 64\nheads: 8\nseq: 16\nvocab: 100\n"
                 "activation: swiglu\n",
                 "ffn_hidden", 7, 13, "swiglu MLP needs ffn_hidden");
    expect_error(LLAMA_HEAD "ffn_hidden: 128\npositions: sinusoidal\n", "positions", 8, 12,
                 "sinusoidal");
    expect_error(LLAMA_HEAD "ffn_hidden: 128\ntied_embeddings: maybe\n", "tied_embeddings", 8, 18,
                 "");
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nhead_dim: 0\n", "head_dim", 8, 11, "");
    /* hidden 60 over 8 heads needs head_dim; with it, Q/K/V use heads x head_dim */
    expect_error("family: llama\nlayers: 2\nhidden: 60\nheads: 8\nseq: 16\nvocab: 100\n"
                 "ffn_hidden: 128\n",
                 "heads", 4, 8, "give head_dim");
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(
        model_load_text("family: llama\nlayers: 2\nhidden: 60\nheads: 8\nhead_dim: 16\n"
                        "kv_heads: 2\nseq: 16\nvocab: 100\nffn_hidden: 128\n",
                        &m, &err),
        0);
    workload_graph g;
    build_ok(&m, 1, &g);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.qkv")->params, 60.0 * (8 + 2 * 2) * 16);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.proj")->params, 8.0 * 16 * 60);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.proj")->k, 128);
    workload_graph_free(&g);
}
END_TEST

/* `rmsnorm_kernel: fused` under `kernels: eager`: PyTorch's nn.RMSNorm is one kernel (read x,
 * write y, 2e an element forward; dy and x read, dx written, 3e backward; plus the weight),
 * where the composite eager RMSNorm moves 28 + 4e and 52 + 7e over 8 kernels. In bf16 (e = 2)
 * over 1 x 16 tokens x 64: 4 x 1024 + 128 and 6 x 1024 + 128 bytes against 36 x 1024 + 128 and
 * 66 x 1024 + 128. The key needs an RMSNorm model with eager kernels. */
START_TEST(rmsnorm_kernel_fused_under_eager)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(model_load_text(LLAMA_HEAD "ffn_hidden: 128\nkernels: eager\n"
                                                "rmsnorm_kernel: fused\n",
                                     &m, &err),
                     0);
    workload_model composite = m;
    composite.rmsnorm_fused = 0;
    workload_graph g, c;
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    ck_assert_int_eq(workload_build(&composite, 1, PREC_BF16, &c, &err), 0);
    const workload_op *f = find_op(&g, "layers.0.ln1"), *e = find_op(&c, "layers.0.ln1");
    double elems = 16.0 * 64, weight = 64 * 2.0;
    ck_assert_double_eq_tol(f->fwd_bytes, 4 * elems + weight, 1e-9);
    ck_assert_double_eq_tol(f->bwd_bytes, 6 * elems + weight, 1e-9);
    ck_assert_int_eq(f->kernels, 1);
    ck_assert_double_eq_tol(e->fwd_bytes, 36 * elems + weight, 1e-9);
    ck_assert_double_eq_tol(e->bwd_bytes, 66 * elems + weight, 1e-9);
    ck_assert_int_eq(e->kernels, 8);
    workload_graph_free(&g);
    workload_graph_free(&c);
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nrmsnorm_kernel: fused\n", "rmsnorm_kernel", 8, 17,
                 "needs an RMSNorm model");
    expect_error("family: gpt\nlayers: 2\nhidden: 64\nheads: 8\nseq: 16\nvocab: 100\n"
                 "kernels: eager\nrmsnorm_kernel: composite\n",
                 "rmsnorm_kernel", 8, 17, "needs an RMSNorm model");
}
END_TEST

/* `cross_entropy: logits` under `kernels: eager`: F.cross_entropy on a bf16 model's own logits
 * (no autocast, no .float()): log_softmax reads and writes bf16 (2e an element forward, e = 2),
 * backward the dense nll gradient written and log_softmax's read twice and written (4e), the
 * bf16 output kept (e); one kernel forward (nll aside). The default upcasts: cast (e + 4),
 * log_softmax (8) forward, 4 + 12 + (4 + e) backward, 4 kept, two kernels. Over 16 tokens x 100
 * logits: 4 x 1600, 8 x 1600, 2 x 1600 bytes against 14, 22 and 4 x 1600. The key needs eager
 * kernels (Megatron's fused cross-entropy is always fp32). */
START_TEST(cross_entropy_in_the_logits_precision)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(model_load_text(LLAMA_HEAD
                                     "ffn_hidden: 128\nkernels: eager\ncross_entropy: logits\n",
                                     &m, &err),
                     0);
    ck_assert(m.loss_logits);
    workload_model up = m;
    up.loss_logits = 0;
    workload_graph g, u;
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    ck_assert_int_eq(workload_build(&up, 1, PREC_BF16, &u, &err), 0);
    const workload_op *l = find_op(&g, "loss"), *f = find_op(&u, "loss");
    double elems = 16.0 * 100;
    ck_assert_double_eq_tol(l->fwd_bytes, 4 * elems, 1e-9);
    ck_assert_double_eq_tol(l->bwd_bytes, 8 * elems, 1e-9);
    ck_assert_double_eq_tol(l->act_bytes, 2 * elems, 1e-9);
    ck_assert_int_eq(l->kernels, 1);
    ck_assert_double_eq_tol(f->fwd_bytes, 14 * elems, 1e-9);
    ck_assert_double_eq_tol(f->bwd_bytes, 22 * elems, 1e-9);
    ck_assert_double_eq_tol(f->act_bytes, 4 * elems, 1e-9);
    ck_assert_int_eq(f->kernels, 2);
    workload_graph_free(&g);
    workload_graph_free(&u);
    /* in fp32 training both are the same passes: nothing to cast */
    ck_assert_int_eq(workload_build(&m, 1, PREC_FP32, &g, &err), 0);
    ck_assert_int_eq(workload_build(&up, 1, PREC_FP32, &u, &err), 0);
    ck_assert_double_eq_tol(find_op(&g, "loss")->fwd_bytes, find_op(&u, "loss")->fwd_bytes, 1e-9);
    ck_assert_double_eq_tol(find_op(&g, "loss")->bwd_bytes, find_op(&u, "loss")->bwd_bytes, 1e-9);
    workload_graph_free(&g);
    workload_graph_free(&u);
    expect_error(LLAMA_HEAD "ffn_hidden: 128\ncross_entropy: logits\n", "cross_entropy", 8, 16,
                 "needs `kernels: eager`");
    expect_error(LLAMA_HEAD "ffn_hidden: 128\nkernels: eager\ncross_entropy: bf16\n",
                 "cross_entropy", 9, 16, "");
}
END_TEST

/* Inline in a strategy, a model error is reported under `workload.` at its own position. */
START_TEST(inline_refusal_names_workload_path)
{
    const char *text = "workload: {family: llama, layers: 2, hidden: 64, heads: 8, seq: 16,\n"
                       "           vocab: 100, ffn_hidden: 128, imbalance: 4}\n"
                       "batch: {global: 1, micro: 1}\n";
    char path[64];
    model_write_temp(path, sizeof path, "llama", text);
    strategy s;
    ps_error err = {0};
    ck_assert_int_eq(strategy_load(path, ps_data_dir(), &s, &err), PS_EINPUT);
    unlink(path);
    ck_assert_str_eq(err.field, "workload.imbalance");
    ck_assert_int_eq(err.line, 2);
    ck_assert_int_eq(err.column, 52);
    ck_assert_ptr_nonnull(strstr(err.message, "give experts too"));
}
END_TEST

/* K/V heads and the tensor degree: kv_heads >= tp must be divisible by tp, tp > kv_heads a
 * multiple of kv_heads; the error is at the tensor degree. */
static int load_strategy(const char *model, int tp, ps_error *err)
{
    char text[512], path[64];
    snprintf(text, sizeof text,
             "workload: {%s}\nbatch: {global: 8, micro: 1}\nstrategy:\n"
             "  tensor: {degree: %d}\n",
             model, tp);
    model_write_temp(path, sizeof path, "llama", text);
    strategy s;
    int rc = strategy_load(path, ps_data_dir(), &s, err);
    unlink(path);
    if (rc == 0)
        strategy_free(&s);
    return rc;
}

START_TEST(kv_heads_against_tensor_degree)
{
    const char *m48_12 = "family: llama, layers: 2, hidden: 768, heads: 48, kv_heads: 12, seq: "
                         "16, vocab: 100, ffn_hidden: 128";
    const char *m48_4 = "family: llama, layers: 2, hidden: 768, heads: 48, kv_heads: 4, seq: "
                        "16, vocab: 100, ffn_hidden: 128";
    ps_error err = {0};
    ck_assert_int_eq(load_strategy(m48_12, 4, &err), 0);
    ck_assert_int_eq(load_strategy(m48_12, 8, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.tensor.degree");
    ck_assert_int_eq(err.line, 4);
    ck_assert_int_eq(err.column, 20);
    ck_assert_ptr_nonnull(strstr(err.message, "does not divide the model's 12 K/V heads"));
    ps_error_clear(&err);
    ck_assert_int_eq(load_strategy(m48_12, 24, &err), 0); /* 2 ranks per K/V head */
    ck_assert_int_eq(load_strategy(m48_4, 8, &err), 0);
    ck_assert_int_eq(load_strategy(m48_4, 6, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.tensor.degree");
    ck_assert_ptr_nonnull(strstr(err.message, "not a multiple of the model's 4 K/V heads"));
}
END_TEST

/* An MPT as released: ALiBi adds no table and (with flash) no traffic; without biases its
 * GEMMs and LayerNorms hold weights only; the tied head is counted once. Unfused attention
 * pays the bias add on the scores. */
START_TEST(mpt_alibi_no_bias_tied)
{
    workload_model m = model_load_named("mpt-7b");
    ck_assert_int_eq(m.family, FAMILY_GPT);
    ck_assert_int_eq(m.positions, POS_ALIBI);
    ck_assert(!m.bias && !m.dropout && m.tied_embeddings);
    workload_graph g;
    build_ok(&m, 1, &g);
    double h = 4096, t = 2048;
    ck_assert_double_eq(find_op(&g, "embedding")->params, 50432 * h);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.qkv")->params, 3 * h * h);
    ck_assert_double_eq(find_op(&g, "layers.0.ln2")->params, h);
    ck_assert_double_eq(find_op(&g, "lm_head")->tied_params, 50432 * h);
    ck_assert(!has_op(&g, "layers.0.attn.rope"));
    workload_graph_free(&g);
    m.flash_attention = 0;
    build_ok(&m, 1, &g);
    const workload_op *un = find_op(&g, "layers.0.attn.core");
    double scores = 32 * t * t, q = t * h;
    /* QK^T, softmax, AV, permute without dropout (6Q + 4S), and the ALiBi add (2S) */
    ck_assert_double_eq(un->fwd_bytes, 2 * (6 * q + 4 * scores) + 2 * 2 * scores);
    ck_assert_int_eq(un->kernels, 5);
    ck_assert_int_eq(un->megatron_softmax, 0);
    ck_assert_double_eq(un->act_bytes, 2 * scores);
    workload_graph_free(&g);
}
END_TEST

static Suite *llama_suite(void)
{
    const TTest *const tests[] = {llama2_7b_params_by_hand,
                                  llama3_8b_params_by_hand,
                                  bundled_llama_and_mpt_sizes,
                                  mpt_benchmark_config_matches_numparams,
                                  gqa_shrinks_kv_projection_exactly,
                                  swiglu_mlp_flops,
                                  llama_layer_activations_and_norms,
                                  tensor_parallel_split_of_llama_matrices,
                                  not_modelled_keys_are_located_errors,
                                  bad_llama_keys_are_located_errors,
                                  rmsnorm_kernel_fused_under_eager,
                                  cross_entropy_in_the_logits_precision,
                                  inline_refusal_names_workload_path,
                                  kv_heads_against_tensor_degree,
                                  mpt_alibi_no_bias_tied,
                                  NULL};
    return suite_of("llama", "core", 0, tests);
}

int main(void)
{
    return suite_run(llama_suite());
}
