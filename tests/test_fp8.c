/* test_fp8.c: `precision: fp8` (FP8 GEMMs in a bf16 mixed-precision model): the FP8 GEMM cost
 * by hand, the devices' FP8 peaks (H100, H200, B200) and the refusal on GPUs without FP8. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../strategies/strategy.h"
#include "model_util.h"
#include "suite_util.h"

static double rel(double a, double b)
{
    return fabs(a - b) / fabs(b);
}

/* H100 SXM5 datasheet figures (dense). */
static device_spec h100(void)
{
    device_spec d;
    memset(&d, 0, sizeof d);
    strcpy(d.name, "H100-SXM5-80GB");
    d.peak_flops[PREC_FP32] = 66.9e12;
    d.peak_flops[PREC_TF32] = 494.7e12;
    d.peak_flops[PREC_FP16] = 989.4e12;
    d.peak_flops[PREC_BF16] = 989.4e12;
    d.peak_flops[PREC_FP8] = 1978.9e12;
    d.hbm_bw = 3350e9;
    d.hbm_bytes = 80.0 * (1 << 30);
    d.sms = 132;
    return d;
}

/* An FP8 GEMM of a layer (an MLP fc1) */
static workload_op gemm(double m, double n, double k)
{
    workload_op op = gemm_op(m, n, k);
    strcpy(op.name, "layers.0.mlp.fc1");
    op.split = SPLIT_COLUMN;
    op.fp8_gemm = 1;
    return op;
}

/* One FP8 GEMM kernel by hand: 2mnk at the FP8 peak times the tensor-core efficiency of the
 * shape, or its traffic (fp8 inputs, bf16 output) at the sustained bandwidth. */
static double fp8_kernel(double m, double n, double k, const device_spec *d)
{
    double bw = d->hbm_bw * cost_memory_efficiency();
    double compute = 2 * m * n * k / (1978.9e12 * cost_gemm_efficiency(1, m, n, k, PREC_FP8, d));
    return fmax(compute, ((m * k + k * n) * 1 + m * n * 2) / bw);
}

/* Forward: cast X (m x k) and W (k x n) to fp8 with their transposes (read 2, write 1 + 1
 * bytes per element), then the GEMM; backward: cast dY (m x n), then dX and dW. Plus the GPU
 * overhead per modelled kernel (1 forward, 2 backward). */
START_TEST(fp8_gemm_cost_by_hand)
{
    device_spec d = h100();
    double m = 8192, n = 11008, k = 4096;
    workload_op op = gemm(m, n, k);
    double bw = d.hbm_bw * cost_memory_efficiency(), ovh = cost_kernel_gpu_overhead_seconds();
    double fwd = 4 * (m * k + k * n) / bw + fp8_kernel(m, n, k, &d) + ovh;
    double bwd = 4 * (m * n) / bw + fp8_kernel(m, k, n, &d) + fp8_kernel(k, n, m, &d) + 2 * ovh;
    ck_assert(rel(cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP8, &d), fwd) < 1e-12);
    ck_assert(rel(cost_op_kernel_seconds(&op, PASS_BWD, PREC_FP8, &d), bwd) < 1e-12);
    /* the same efficiency machinery as bf16 (tiles, waves, K depth, tensor-core base) */
    ck_assert_double_eq(cost_gemm_efficiency(1, m, n, k, PREC_FP8, &d),
                        cost_gemm_efficiency(1, m, n, k, PREC_BF16, &d));
    /* a large GEMM: at most twice as fast as in bf16 (the peak ratio), slower by the casts */
    double b16 = cost_op_kernel_seconds(&op, PASS_FWD, PREC_BF16, &d);
    double f8 = cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP8, &d);
    ck_assert_msg(f8 > b16 / 2 && f8 < b16, "fp8 %g s, bf16 %g s", f8, b16);
}
END_TEST

/* devices.yaml: the dense FP8 peaks of Hopper (half the datasheet's sparse 3958), the B200
 * entry (HGX B200 datasheet, sparse figures halved), and no FP8 on the A100. */
START_TEST(device_fp8_peaks)
{
    device_table t;
    model_devices(&t);
    ps_error err = {0};
    const device_spec *h = device_table_find(&t, "H100-SXM5-80GB");
    const device_spec *h2 = device_table_find(&t, "H200-SXM-141GB");
    const device_spec *b = device_table_find(&t, "B200-SXM-180GB");
    const device_spec *a = device_table_find(&t, "A100-SXM4-80GB");
    ck_assert(h && h2 && b && a);
    ck_assert_double_eq(h->peak_flops[PREC_FP8], 1978.9e12);
    ck_assert_double_eq(h2->peak_flops[PREC_FP8], 1978.9e12);
    ck_assert_double_eq(b->peak_flops[PREC_FP8], 4500e12);
    ck_assert_double_eq(b->peak_flops[PREC_BF16], 2250e12);
    ck_assert_double_eq(b->peak_flops[PREC_TF32], 1100e12);
    ck_assert_double_eq(b->peak_flops[PREC_FP32], 75e12);
    ck_assert_double_eq(b->hbm_bytes, 180e9);
    ck_assert_double_eq(b->hbm_bw, 7700e9);
    ck_assert_int_eq(b->sms, 148);
    ck_assert_double_eq(a->peak_flops[PREC_FP8], 0);
    device_table_free(&t);

    /* fp8_tflops is checked like the other peaks */
    char tmp[] = "/tmp/protosim_test_fp8_XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs("- name: X\n  fp32_tflops: 1\n  tf32_tflops: 1\n  fp16_tflops: 1\n  bf16_tflops: 1\n"
          "  fp8_tflops: -2\n  hbm_gbps: 1\n  hbm_gib: 1\n  sms: 1\n  architecture: hopper\n",
          f);
    fclose(f);
    ck_assert_int_eq(device_table_load(tmp, &t, &err), PS_EINPUT);
    unlink(tmp);
    ck_assert_str_eq(err.field, "fp8_tflops");
    ck_assert_int_eq(err.line, 6);
    ck_assert_int_eq(err.column, 15);

    /* gemm_efficiency is a fraction in (0, 1] */
    char tmp2[] = "/tmp/protosim_test_fp8_XXXXXX";
    fd = mkstemp(tmp2);
    ck_assert_int_ge(fd, 0);
    f = fdopen(fd, "w");
    fputs("- name: X\n  fp32_tflops: 1\n  tf32_tflops: 1\n  fp16_tflops: 1\n  bf16_tflops: 1\n"
          "  hbm_gbps: 1\n  hbm_gib: 1\n  sms: 1\n  gemm_efficiency: 1.5\n  architecture: hopper\n",
          f);
    fclose(f);
    ps_error_clear(&err);
    ck_assert_int_eq(device_table_load(tmp2, &t, &err), PS_EINPUT);
    unlink(tmp2);
    ck_assert_str_eq(err.field, "gemm_efficiency");
    ck_assert_int_eq(err.line, 9);
    ck_assert_int_eq(err.column, 20);
}
END_TEST

static int load_strategy(const char *precision, strategy *s, ps_error *err)
{
    char text[512], path[64];
    snprintf(text, sizeof text,
             "workload: llama2-7b\nbatch: {global: 8, micro: 1}\nprecision: %s\n"
             "strategy:\n  data: {degree: 2}\n",
             precision);
    model_write_temp(path, sizeof path, "fp8", text);
    int rc = strategy_load(path, ps_data_dir(), s, err);
    unlink(path);
    return rc;
}

/* `precision: fp8` is bf16 mixed precision with FP8 GEMMs; plans report fp8; a GPU without
 * FP8 tensor cores is an error at the strategy's precision, naming the GPU. */
START_TEST(fp8_strategy_and_device_check)
{
    strategy s;
    ps_error err = {0};
    ck_assert_int_eq(load_strategy("fp8", &s, &err), 0);
    ck_assert_int_eq(s.precision, PREC_BF16);
    ck_assert_int_eq(s.fp8, 1);
    ck_assert_int_eq(strategy_precision(&s), PREC_FP8);
    plan_desc pd;
    strategy_plan_desc(&s, &pd);
    ck_assert_int_eq(pd.precision, PREC_FP8);

    device_spec hopper = h100(), ampere = h100();
    strcpy(ampere.name, "A100-SXM4-80GB");
    ampere.peak_flops[PREC_FP8] = 0;
    const device_spec *devs[2] = {&hopper, &hopper};
    cluster c;
    memset(&c, 0, sizeof c);
    c.n_gpus = 2;
    c.device = devs;
    ck_assert_int_eq(strategy_check_devices(&s, &c, &err), 0);
    devs[1] = &ampere;
    ck_assert_int_eq(strategy_check_devices(&s, &c, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "precision");
    ck_assert_int_eq(err.line, 3);
    ck_assert_int_eq(err.column, 12);
    ck_assert_ptr_nonnull(strstr(err.message, "GPU 1 (A100-SXM4-80GB) lacks"));
    ck_assert_ptr_nonnull(strstr(err.file, "protosim_test_fp8_"));
    strategy_free(&s);

    ps_error_clear(&err);
    ck_assert_int_eq(load_strategy("bf16", &s, &err), 0);
    ck_assert(!s.fp8);
    ck_assert_int_eq(strategy_check_devices(&s, &c, &err), 0);
    strategy_set_precision(&s, PREC_FP8);
    ck_assert(s.fp8 && s.precision == PREC_BF16);
    strategy_free(&s);
}
END_TEST

/* Which GEMMs run in FP8: the transformer layers' linear layers, not the LM head (nor the
 * attention core, which stays a bf16 kernel). */
START_TEST(fp8_covers_the_layer_gemms)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(workload_model_load("llama3-8b", ps_data_dir(), &m, &err), 0);
    workload_graph g;
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    int fp8 = 0;
    for (int i = 0; i < g.n_ops; i++) {
        const workload_op *op = &g.ops[i];
        int layer_gemm = op->kind == OP_GEMM && op->layer >= 0 && op->layer < m.layers;
        ck_assert_msg(op->fp8_gemm == layer_gemm, "%s", op->name);
        fp8 += op->fp8_gemm;
    }
    ck_assert_int_eq(fp8, 4 * 32); /* qkv, proj, fc1 (gate + up), fc2 */
    workload_graph_free(&g);
}
END_TEST

/* `precision: fp4` (NVFP4 GEMMs on Blackwell): one GEMM by hand on a B200 (dense FP4 peak
 * 9000 TFLOP/s): forward casts X and W (read 2 bytes an element, write the 4-bit copy and its
 * transpose with an E4M3 scale per 16: 2 x 0.5625), then the GEMM at the FP4 peak times the
 * shape's efficiency, or its traffic (0.5625-byte inputs, bf16 output); backward casts dY. The
 * plan: bf16 mixed precision with the fp4 GEMM flag; a GPU without fp4_tflops is an error. */
START_TEST(fp4_gemm_and_plan)
{
    device_table t;
    model_devices(&t);
    const device_spec *b = device_table_find(&t, "B200-SXM-180GB");
    const device_spec *h = device_table_find(&t, "H100-SXM5-80GB");
    ck_assert(b && h);
    ck_assert_double_eq(b->peak_flops[PREC_FP4], 9000e12);
    ck_assert_double_eq(device_table_find(&t, "GB200")->peak_flops[PREC_FP4], 10000e12);
    ck_assert_double_eq(device_table_find(&t, "GB300")->peak_flops[PREC_FP4], 15000e12);
    ck_assert(h->peak_flops[PREC_FP4] == 0);
    double m = 8192, n = 11008, k = 4096;
    workload_op op = gemm(m, n, k);
    double bw = b->hbm_bw * cost_memory_efficiency(), ovh = cost_kernel_gpu_overhead_seconds();
    double gemm_s = fmax(2 * m * n * k / (9000e12 * cost_gemm_efficiency(1, m, n, k, PREC_FP4, b)),
                         ((m * k + k * n) * 0.5625 + m * n * 2) / bw);
    double fwd = (2 + 2 * 0.5625) * (m * k + k * n) / bw + gemm_s + ovh;
    ck_assert(rel(cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP4, b), fwd) < 1e-12);
    ck_assert(cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP4, b) <
              cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP8, b));

    strategy s;
    ps_error err = {0};
    ck_assert_int_eq(load_strategy("fp4", &s, &err), 0);
    ck_assert(s.fp8 && s.precision == PREC_BF16 && s.gemm_precision == PREC_FP4);
    ck_assert_int_eq(strategy_precision(&s), PREC_FP4);
    const device_spec *devs[2] = {b, h};
    cluster c;
    memset(&c, 0, sizeof c);
    c.n_gpus = 2;
    c.device = devs;
    ck_assert_int_eq(strategy_check_devices(&s, &c, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "precision");
    ck_assert_ptr_nonnull(strstr(err.message, "precision fp4 needs FP4 tensor cores, which GPU 1 "
                                              "(H100-SXM5-80GB) lacks (no fp4_tflops"));
    strategy_free(&s);
    device_table_free(&t);
}
END_TEST

/* `fp8_attention: true` (Transformer Engine's FP8 fused attention): Llama 3 8B's fused core at
 * micro-batch 1 (b 1, 32 heads, 8 K/V heads, s 8192, d 128): Q and O are b s a d = 33,554,432
 * elements each, K and V b s kv d = 8,388,608; forward bytes in bf16 2 (2 x 33,554,432 + 2 x
 * 8,388,608) + the fp32 log-sum-exp (b a s x 4 = 1,048,576) = 168,820,736, in FP8 half of the
 * tensors: 84,934,656. The core is compute-bound there: its GEMMs at the FP8 peak (twice H100's
 * bf16) take half the bf16 time, the GPU overhead aside (to 0.1%: the tile model's tiles are
 * its precision's). The
 * plan: only with fp8 or fp4 precision (an error at the key), and the attention core runs in FP8
 * while the other non-GEMM ops keep the plan's precision. */
START_TEST(fp8_attention_core)
{
    workload_model m;
    ps_error err = {0};
    ck_assert_int_eq(workload_model_load("llama3-8b", ps_data_dir(), &m, &err), 0);
    m.seq = 8192;
    workload_graph g;
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    const workload_op *core = NULL;
    for (int i = 0; i < g.n_ops && !core; i++)
        if (strcmp(g.ops[i].name, "layers.0.attn.core") == 0)
            core = &g.ops[i];
    ck_assert(core && core->fused);
    ck_assert_double_eq(core->fwd_bytes, 168820736.0);
    workload_op f8;
    cost_attention_in(core, PREC_BF16, PREC_FP8, &f8);
    ck_assert_double_eq(f8.fwd_bytes, 84934656.0);
    ck_assert(f8.fwd_flops == core->fwd_flops && f8.bwd_bytes < core->bwd_bytes);
    device_spec d = h100();
    double ovh = cost_kernel_gpu_overhead_seconds();
    double t16 = cost_op_kernel_seconds(core, PASS_FWD, PREC_BF16, &d) - ovh;
    double t8 = cost_op_kernel_seconds(&f8, PASS_FWD, PREC_FP8, &d) - ovh;
    ck_assert_msg(rel(t8, t16 / 2) < 1e-3, "fp8 %g s, bf16 %g s", t8, t16);

    strategy s;
    ck_assert_int_eq(load_strategy("fp8\nfp8_attention: true", &s, &err), 0);
    ck_assert(s.fp8_attention);
    ck_assert_int_eq(strategy_op_precision(&s, core), PREC_FP8);
    const workload_op *norm = &g.ops[0];
    ck_assert_int_eq(strategy_op_precision(&s, norm), PREC_BF16);
    strategy_free(&s);
    ps_error_clear(&err);
    ck_assert_int_eq(load_strategy("bf16\nfp8_attention: true", &s, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "fp8_attention");
    ck_assert_int_eq(err.line, 4);
    ck_assert_ptr_nonnull(strstr(err.message, "needs precision: fp8 or fp4"));
    workload_graph_free(&g);
}
END_TEST

static Suite *fp8_suite(void)
{
    const TTest *const tests[] = {fp8_gemm_cost_by_hand,
                                  device_fp8_peaks,
                                  fp8_strategy_and_device_check,
                                  fp8_covers_the_layer_gemms,
                                  fp4_gemm_and_plan,
                                  fp8_attention_core,
                                  NULL};
    return suite_of("fp8", "core", 0, tests);
}

int main(void)
{
    return suite_run(fp8_suite());
}
