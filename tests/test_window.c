/* test_window.c: sliding-window attention: the score tiles a fused windowed kernel computes
 * (counted by hand), the FLOPs and cost of a windowed layer, the alternate layer pattern, the
 * keys' located errors and gpt-oss-120b's parameters against the published figures. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../strategies/strategy.h"
#include "../workloads/workload.h"
#include "model_util.h"
#include "suite_util.h"

static double rel(double got, double want)
{
    return fabs(got - want) / fabs(want);
}

/* 128 x 128 tiles (query tile i, key tile j). The band of query q is keys q - W + 1 .. q, so
 * the first query of tile i, 128 i, reaches back to 128 i - W + 1: with W = 128 that is key
 * 128 i - 127, in tile i - 1; every query of the tile stops at itself (tile i). s = 1024 (8 x 8
 * tiles): tiles i - 1 and i on every row but the first: 2 x 8 - 1 = 15 of 64. */
START_TEST(window_tile_counts_by_hand)
{
    ck_assert_double_eq(cost_window_tile_fraction(1024, 128), 15.0 / 64);
    /* W = 129 reaches 128 i - 128, still tile i - 1; W = 130 reaches 128 i - 129, the last key
     * of tile i - 2: rows of 1, 2, then 3 tiles: 1 + 2 + 6 x 3 = 21 */
    ck_assert_double_eq(cost_window_tile_fraction(1024, 129), 15.0 / 64);
    ck_assert_double_eq(cost_window_tile_fraction(1024, 130), 21.0 / 64);
    /* W = 257 reaches 128 i - 256, the first key of tile i - 2 (21); W = 258 reaches tile i - 3:
     * 1 + 2 + 3 + 5 x 4 = 26 */
    ck_assert_double_eq(cost_window_tile_fraction(1024, 257), 21.0 / 64);
    ck_assert_double_eq(cost_window_tile_fraction(1024, 258), 26.0 / 64);
    /* W = 1: each query sees itself only, the diagonal tiles */
    ck_assert_double_eq(cost_window_tile_fraction(1024, 1), 8.0 / 64);
    /* a window as long as the sequence is the causal mask: 8 x 9 / 2 = 36 */
    ck_assert_double_eq(cost_window_tile_fraction(1024, 1024), 36.0 / 64);
    ck_assert_double_eq(cost_window_tile_fraction(1024, 1e6), 36.0 / 64);
    ck_assert_double_eq(cost_window_tile_fraction(1024, 1024), cost_causal_tile_fraction(1024));
    /* a partial last tile (s = 1000: its queries 896 .. 999 reach back to 769, tile 6) */
    ck_assert_double_eq(cost_window_tile_fraction(1000, 128), 15.0 / 64);
    ck_assert_double_eq(cost_window_tile_fraction(100, 10), 1.0); /* one tile */
    /* GPT-OSS's window at s = 4096: 32 x 32 tiles, 2 x 32 - 1 = 63 of them */
    ck_assert_double_eq(cost_window_tile_fraction(4096, 128), 63.0 / 1024);
}
END_TEST

#define SMALL_HEAD                                                                                 \
    "family: llama\nlayers: 4\nhidden: 64\nheads: 4\nkv_heads: 2\nseq: 512\nvocab: 100\n"          \
    "ffn_hidden: 32\nattention: flash\n"

/* A windowed core counts each query against its W keys: 4 b a d s W FLOPs forward (QK^T and
 * PV, 2 each), the flash backward 2.5 times that. Micro-batch 2, 4 heads of 16, s = 512, W =
 * 128: 4 x 2 x 4 x 16 x 512 x 128 = 33,554,432; a full layer 4 x 2 x 4 x 16 x 512 x 512 =
 * 134,217,728. Alternate: layers 0 and 2 windowed, 1 and 3 full. */
START_TEST(windowed_layer_flops_and_pattern)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(model_load_text_as("window",
                                     SMALL_HEAD
                                     "sliding_window: 128\nsliding_window_layers: alternate\n",
                                     &m, &err) == 0,
                  "%s", err.message);
    ck_assert_int_eq(m.sliding_window, 128);
    ck_assert(m.window_layers == WINDOW_ALTERNATE);
    ck_assert_int_eq(workload_layer_window(&m, 0), 128);
    ck_assert_int_eq(workload_layer_window(&m, 1), 0);
    ck_assert_int_eq(workload_layer_window(&m, 2), 128);
    workload_graph g, full;
    ck_assert(workload_build(&m, 2, PREC_BF16, &g, &err) == 0);
    const double windowed = 33554432.0, whole = 134217728.0;
    const workload_op *o = find_op(&g, "layers.0.attn.core");
    ck_assert(o->fused && o->causal && o->window == 128);
    ck_assert_double_eq(o->fwd_flops, windowed);
    ck_assert_double_eq(o->bwd_flops, 2.5 * windowed);
    o = find_op(&g, "layers.1.attn.core");
    ck_assert_int_eq(o->window, 0);
    ck_assert_double_eq(o->fwd_flops, whole);
    ck_assert_int_eq(find_op(&g, "layers.2.attn.core")->window, 128);
    ck_assert_int_eq(find_op(&g, "layers.3.attn.core")->window, 0);
    /* tensor parallelism divides the heads and keeps the window: 2 of the 4 heads a rank */
    workload_op half;
    workload_op_shard(find_op(&g, "layers.0.attn.core"), 2, 1, 1, &half);
    ck_assert_int_eq(half.window, 128);
    ck_assert_double_eq(half.batch, 2 * 2);
    ck_assert_double_eq(half.fwd_flops, windowed / 2);

    /* against the same model without a window: two layers' difference, nothing else; the
     * kernel still reads Q, K, V and writes O (bytes unchanged) */
    workload_model nw = m;
    nw.sliding_window = 0;
    ck_assert(workload_build(&nw, 2, PREC_BF16, &full, &err) == 0);
    ck_assert_double_eq(full.fwd_flops - g.fwd_flops, 2 * (whole - windowed));
    ck_assert_double_eq(find_op(&full, "layers.0.attn.core")->fwd_bytes,
                        find_op(&g, "layers.0.attn.core")->fwd_bytes);
    ck_assert_double_eq(full.total_params, g.total_params);
    workload_graph_free(&g);
    workload_graph_free(&full);

    /* sliding_window_layers defaults to all */
    ck_assert(model_load_text_as("window", SMALL_HEAD "sliding_window: 128\n", &m, &err) == 0);
    ck_assert(m.window_layers == WINDOW_ALL);
    ck_assert(workload_build(&m, 2, PREC_BF16, &g, &err) == 0);
    for (int l = 0; l < 4; l++) {
        char name[32];
        snprintf(name, sizeof name, "layers.%d.attn.core", l);
        ck_assert_int_eq(find_op(&g, name)->window, 128);
        ck_assert_double_eq(find_op(&g, name)->fwd_flops, windowed);
    }
    workload_graph_free(&g);

    /* a window longer than the sequence restricts nothing: s^2 */
    ck_assert(model_load_text_as("window", SMALL_HEAD "sliding_window: 1024\n", &m, &err) == 0);
    ck_assert(workload_build(&m, 2, PREC_BF16, &g, &err) == 0);
    ck_assert_double_eq(find_op(&g, "layers.0.attn.core")->fwd_flops, whole);
    workload_graph_free(&g);
}
END_TEST

/* A100 SXM 80 GB datasheet figures (dense), as tests/test_cost.c. */
static device_spec a100(void)
{
    device_spec d;
    memset(&d, 0, sizeof d);
    strcpy(d.name, "A100-SXM4-80GB");
    d.peak_flops[PREC_FP32] = 19.5e12;
    d.peak_flops[PREC_TF32] = 156e12;
    d.peak_flops[PREC_FP16] = 312e12;
    d.peak_flops[PREC_BF16] = 312e12;
    d.hbm_bw = 2039e9;
    d.hbm_bytes = 80.0 * (1 << 30);
    d.sms = 108;
    return d;
}

/* The fused kernel under a window of 128 at s = 4096 computes 63 of the 32 x 32 score tiles:
 * its GEMM time is 63 / 1024 of the full square's (forward QK^T + PV, backward 2.5x that math at
 * 0.79 of the forward rate); it then reads Q, K, V and writes O as any flash kernel, which at
 * this size takes longer than the math: max(compute, memory) + the per-kernel overhead. */
START_TEST(windowed_attention_cost)
{
    device_spec d = a100();
    workload_model m;
    workload_model_init(&m, FAMILY_LLAMA, 1, 4096, 32, 4096, 32000);
    m.ffn_hidden = 11008;
    m.flash_attention = 1;
    m.sliding_window = 128;
    workload_graph g;
    ps_error err = {0};
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    const workload_op *f = find_op(&g, "layers.0.attn.core");
    ck_assert(f->window == 128 && f->fused && f->causal);
    double b = 32, s = 4096, dh = 128, peak = 312e12, frac = 63.0 / 1024;
    double qk = 2 * b * s * s * dh / (peak * cost_gemm_efficiency(b, s, s, dh, PREC_BF16, &d));
    double av = 2 * b * s * dh * s / (peak * cost_gemm_efficiency(b, s, dh, s, PREC_BF16, &d));
    double ovh = cost_kernel_gpu_overhead_seconds();
    double mem = f->fwd_bytes / (d.hbm_bw * cost_memory_efficiency());
    ck_assert(frac * (qk + av) < mem); /* memory bound once windowed */
    ck_assert(qk + av > mem);          /* compute bound without the window */
    ck_assert(rel(cost_op_kernel_seconds(f, PASS_FWD, PREC_BF16, &d), mem + ovh) < 1e-12);
    /* the math alone (no traffic): the 63 tiles */
    workload_op math = *f;
    math.fwd_bytes = math.bwd_bytes = 0;
    ck_assert(rel(cost_op_kernel_seconds(&math, PASS_FWD, PREC_BF16, &d), frac * (qk + av) + ovh) <
              1e-12);
    ck_assert(rel(cost_op_kernel_seconds(&math, PASS_BWD, PREC_BF16, &d),
                  frac * (qk + av) * 2.5 / 0.79 + 2 * ovh) < 1e-12);
    workload_graph_free(&g);
}
END_TEST

static void expect_error(const char *text, const char *field, int line, int column,
                         const char *words)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(model_load_text_as("window", text, &m, &err), PS_EINPUT);
    ck_assert_msg(strcmp(err.field, field) == 0, "field %s, want %s (%s)", err.field, field,
                  err.message);
    ck_assert_msg(err.line == line && err.column == column, "%s at %d:%d, want %d:%d", field,
                  err.line, err.column, line, column);
    ck_assert_msg(strstr(err.message, words) != NULL, "'%s' lacks '%s'", err.message, words);
    ck_assert_ptr_nonnull(strstr(err.file, "protosim_test_window_"));
}

#define PLAIN_HEAD                                                                                 \
    "family: llama\nlayers: 2\nhidden: 64\nheads: 4\nseq: 512\nvocab: 100\nffn_hidden: 32\n"

/* Each rule at the key to fix (PLAIN_HEAD is 7 lines). */
START_TEST(window_keys_are_located_errors)
{
    expect_error(PLAIN_HEAD "sliding_window_layers: alternate\n", "sliding_window_layers", 8, 24,
                 "without sliding_window");
    expect_error(PLAIN_HEAD "sliding_window: 128\n", "sliding_window", 8, 17,
                 "need `attention: flash`");
    expect_error(PLAIN_HEAD "attention: unfused\nsliding_window: 128\n", "sliding_window", 9, 17,
                 "need `attention: flash`");
    expect_error(PLAIN_HEAD "attention: flash\nsliding_window: 0\n", "sliding_window", 9, 17, "");
    expect_error(PLAIN_HEAD "attention: flash\nsliding_window: 128\nsliding_window_layers: odd\n",
                 "sliding_window_layers", 10, 24, "");
    expect_error("family: bert\nlayers: 2\nhidden: 64\nheads: 4\nseq: 512\nvocab: 100\n"
                 "attention: flash\nsliding_window: 128\n",
                 "sliding_window", 8, 17, "bidirectional");
    /* a model built in code gets the same rule from workload_build */
    workload_model m;
    workload_model_init(&m, FAMILY_GPT, 2, 64, 4, 512, 100);
    m.sliding_window = 128;
    workload_graph g;
    ps_error err = {0};
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "workload.sliding_window");
    m.flash_attention = 1;
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    workload_graph_free(&g);
}
END_TEST

/* Context parallelism splits the ring for the causal mask: refused with a window, at the
 * strategy's context key (line 13: the workload mapping takes lines 2-11). */
START_TEST(context_with_window_is_refused)
{
    const char *text = "workload:\n"
                       "  family: llama\n"
                       "  layers: 2\n"
                       "  hidden: 64\n"
                       "  heads: 4\n"
                       "  seq: 512\n"
                       "  vocab: 100\n"
                       "  ffn_hidden: 32\n"
                       "  attention: flash\n"
                       "  sliding_window: 128\n"
                       "batch: {global: 2, micro: 1}\n"
                       "strategy:\n"
                       "  context: {degree: 2}\n";
    char path[64];
    model_write_temp(path, sizeof path, "window", text);
    strategy s;
    ps_error err = {0};
    int rc = strategy_load(path, ps_data_dir(), &s, &err);
    unlink(path);
    ck_assert_int_eq(rc, PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.context.degree");
    ck_assert_int_eq(err.line, 13);
    ck_assert_msg(strstr(err.message, "sliding window") != NULL, "%s", err.message);
    /* the same model without context parallelism loads */
    char ok[1024];
    snprintf(ok, sizeof ok, "%.*s", (int)(strstr(text, "strategy:") - text), text);
    model_write_temp(path, sizeof path, "window", ok);
    rc = strategy_load(path, ps_data_dir(), &s, &err);
    unlink(path);
    ck_assert_msg(rc == 0, "%s", err.message);
    ck_assert_int_eq(s.model.sliding_window, 128);
    strategy_free(&s);
}
END_TEST

/* gpt-oss-120b by hand. A layer: QKV 2880 x (64 x 64 + 2 x 8 x 64) = 14,745,600 and its bias
 * 5,120; output 4,096 x 2,880 = 11,796,480 and bias 2,880; two RMSNorm weights 5,760; router
 * 2,880 x 128 = 368,640: 26,924,480. Experts: 128 x (2880 x 5760 + 5760 + 2880 x 2880 + 2880)
 * = 128 x 24,891,840 = 3,186,155,520. 36 layers of 3,213,080,000 = 115,670,880,000, plus the
 * embedding and LM head 2 x 201,088 x 2,880 = 1,158,266,880 and the final norm 2,880:
 * 116,829,149,760 (published 116.83 B). Active: 26,924,480 + 4 x 24,891,840 = 126,491,840 a
 * layer, x 36 = 4,553,706,240, + 1,158,269,760 = 5,711,976,000; the model card's 5.13 B leaves
 * out the embedding table: 5,711,976,000 - 579,133,440 = 5,132,842,560. */
START_TEST(gpt_oss_120b_parameters_by_hand)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_msg(workload_model_load("gpt-oss-120b", ps_data_dir(), &m, &err) == 0, "%s",
                  err.message);
    workload_graph g;
    ck_assert_msg(workload_build(&m, 1, PREC_BF16, &g, &err) == 0, "%s", err.message);
    ck_assert_double_eq(g.total_params, 116829149760.0);
    ck_assert_double_eq(g.active_params, 5711976000.0);
    ck_assert(rel(g.total_params / 1e9, 116.83) < 0.02);
    ck_assert(rel((g.active_params - 201088.0 * 2880) / 1e9, 5.13) < 0.02);
    ck_assert_int_eq(find_op(&g, "layers.0.attn.core")->window, 128);
    ck_assert_int_eq(find_op(&g, "layers.1.attn.core")->window, 0);
    ck_assert_int_eq(find_op(&g, "layers.34.attn.core")->window, 128);
    ck_assert_int_eq(find_op(&g, "layers.35.attn.core")->window, 0);
    workload_graph_free(&g);
}
END_TEST

/* The bundled example loads with row 103's layout and the model's window. */
START_TEST(gpt_oss_example_loads)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/strategies/examples/gpt-oss-120b-64gpu-ep8.yaml",
             ps_data_dir());
    strategy s;
    ps_error err = {0};
    ck_assert_msg(strategy_load(path, ps_data_dir(), &s, &err) == 0, "%s", err.message);
    ck_assert(s.tp == 1 && s.pp == 4 && s.dp == 16 && s.ep == 8 && s.etp == 1);
    ck_assert_int_eq(s.model.sliding_window, 128);
    ck_assert(s.model.window_layers == WINDOW_ALTERNATE);
    strategy_free(&s);
}
END_TEST

static Suite *window_suite(void)
{
    const TTest *const tests[] = {window_tile_counts_by_hand,     windowed_layer_flops_and_pattern,
                                  windowed_attention_cost,        window_keys_are_located_errors,
                                  context_with_window_is_refused, gpt_oss_120b_parameters_by_hand,
                                  gpt_oss_example_loads,          NULL};
    return suite_of("window", "window", 0, tests);
}

int main(void)
{
    return suite_run(window_suite());
}
