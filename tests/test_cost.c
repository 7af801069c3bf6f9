/* test_cost.c: the roofline cost model: compute-bound GEMMs, memory-bound ops, tile and wave
 * quantization, launch overheads and the optimizer step, checked against hand arithmetic. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "../sim/cost.h"

/* A100 SXM 80 GB datasheet figures (dense). */
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

static workload_op gemm(double m, double n, double k)
{
    workload_op op;
    memset(&op, 0, sizeof op);
    strcpy(op.name, "test.gemm");
    op.kind = OP_GEMM;
    op.split = SPLIT_REPLICATED;
    op.batch = 1;
    op.m = m;
    op.n = n;
    op.k = k;
    op.fwd_flops = 2 * m * n * k;
    op.bwd_flops = 2 * op.fwd_flops;
    op.fwd_bytes = (m * k + k * n + m * n) * 2;
    op.bwd_bytes = 2 * op.fwd_bytes;
    op.kernels = 1;
    return op;
}

static double rel(double a, double b)
{
    return fabs(a / b - 1);
}

START_TEST(big_gemm_is_compute_bound)
{
    device_spec d = a100();
    double n = 8192;
    workload_op op = gemm(n, n, n);
    double eff = cost_gemm_efficiency(1, n, n, n, PREC_BF16, &d);
    ck_assert_msg(eff > 0.6 && eff <= 0.85, "eff %.3f", eff);
    double compute = 2 * n * n * n / (312e12 * eff);
    double memory = 3 * n * n * 2 / (2039e9 * cost_memory_efficiency());
    ck_assert(memory < compute);
    double t = cost_op_kernel_seconds(&op, PASS_FWD, PREC_BF16, &d);
    ck_assert_msg(rel(t, compute) < 1e-12, "%g vs %g", t, compute);
    /* backward: dX and dW, each the forward's square shape */
    ck_assert(rel(cost_op_kernel_seconds(&op, PASS_BWD, PREC_BF16, &d), 2 * compute) < 1e-12);

    /* fp32 runs on the SIMT peak, an order of magnitude slower */
    double t32 = cost_op_kernel_seconds(&op, PASS_FWD, PREC_FP32, &d);
    ck_assert(t32 > 10 * t);
    /* a device with no bf16 unit falls back to fp32 instead of dividing by zero */
    device_spec v = d;
    v.peak_flops[PREC_BF16] = 0;
    ck_assert(rel(cost_op_kernel_seconds(&op, PASS_FWD, PREC_BF16, &v), t32) < 1e-12);
}
END_TEST

START_TEST(memory_bound_op)
{
    device_spec d = a100();
    workload_op op;
    memset(&op, 0, sizeof op);
    op.kind = OP_LAYERNORM;
    op.batch = 1;
    op.m = 8192;
    op.n = 12288;
    op.fwd_flops = 8 * op.m * op.n;
    op.fwd_bytes = 2 * 2 * op.m * op.n;
    op.bwd_flops = 2 * op.fwd_flops;
    op.bwd_bytes = 3 * 2 * op.m * op.n;
    op.kernels = 1;
    double t = cost_op_kernel_seconds(&op, PASS_FWD, PREC_BF16, &d);
    ck_assert(rel(t, op.fwd_bytes / (2039e9 * cost_memory_efficiency())) < 1e-12);
    t = cost_op_kernel_seconds(&op, PASS_BWD, PREC_BF16, &d);
    ck_assert(rel(t, op.bwd_bytes / (2039e9 * cost_memory_efficiency())) < 1e-12);
    ck_assert(cost_memory_efficiency() > 0 && cost_memory_efficiency() <= 1);
}
END_TEST

START_TEST(tile_quantization)
{
    device_spec d = a100();
    workload_op a = gemm(129, 8192, 8192), b = gemm(256, 8192, 8192), c = gemm(128, 8192, 8192);
    double ta = cost_op_kernel_seconds(&a, PASS_FWD, PREC_FP16, &d);
    double tb = cost_op_kernel_seconds(&b, PASS_FWD, PREC_FP16, &d);
    double tc = cost_op_kernel_seconds(&c, PASS_FWD, PREC_FP16, &d);
    ck_assert_msg(rel(ta, tb) < 1e-12, "m=129 %g s, m=256 %g s", ta, tb);
    ck_assert_msg(rel(tc, tb / 2) < 1e-12, "m=128 %g s, m=256 %g s", tc, tb);
}
END_TEST

START_TEST(wave_quantization)
{
    device_spec d = a100();
    /* 108 tiles fill one wave; 109 need two, so run as long as 216 */
    double e108 = cost_gemm_efficiency(1, 128, 128 * 108, 4096, PREC_BF16, &d);
    double e109 = cost_gemm_efficiency(1, 128, 128 * 109, 4096, PREC_BF16, &d);
    double e216 = cost_gemm_efficiency(1, 128, 128 * 216, 4096, PREC_BF16, &d);
    ck_assert(rel(e216, e108) < 1e-12);
    ck_assert(rel(e109, e108 * 109.0 / 216) < 1e-12);
    /* batches count as tiles too */
    double eb = cost_gemm_efficiency(109, 128, 128, 4096, PREC_BF16, &d);
    ck_assert(rel(eb, e109) < 1e-12);
    /* shallow k is less efficient */
    ck_assert(cost_gemm_efficiency(1, 4096, 4096, 64, PREC_BF16, &d) <
              cost_gemm_efficiency(1, 4096, 4096, 4096, PREC_BF16, &d));
}
END_TEST

START_TEST(launch_overhead)
{
    device_spec d = a100();
    workload_op op = gemm(64, 64, 64);
    op.kernels = 5;
    double launch = cost_kernel_launch_seconds();
    ck_assert(launch > 0 && launch < 1e-4);
    ck_assert(rel(cost_op_launch_seconds(&op, PASS_FWD), 5 * launch) < 1e-12);
    ck_assert(rel(cost_op_launch_seconds(&op, PASS_BWD), 10 * launch) < 1e-12);
    double k = cost_op_kernel_seconds(&op, PASS_FWD, PREC_BF16, &d);
    ck_assert(k > 0);
    ck_assert(rel(cost_op_seconds(&op, PASS_FWD, PREC_BF16, &d), k + 5 * launch) < 1e-12);
}
END_TEST

START_TEST(transformer_ops_cost)
{
    device_spec d = a100();
    workload_model m = {"t", FAMILY_GPT, 2, 2048, 16, 2048, 51200, 8192};
    workload_graph g;
    ps_error err = {0};
    ck_assert_int_eq(workload_build(&m, 1, PREC_BF16, &g, &err), 0);
    double fwd = 0, bwd = 0;
    for (int i = 0; i < g.n_ops; i++) {
        double f = cost_op_kernel_seconds(&g.ops[i], PASS_FWD, PREC_BF16, &d);
        double b = cost_op_kernel_seconds(&g.ops[i], PASS_BWD, PREC_BF16, &d);
        ck_assert_msg(f > 0 && b > 0, "%s: fwd %g bwd %g", g.ops[i].name, f, b);
        fwd += f;
        bwd += b;
    }
    /* never faster than the peak, and within reach of it for these large shapes */
    double ideal = g.fwd_flops / 312e12;
    ck_assert_msg(fwd > ideal && fwd < 3 * ideal, "fwd %g s, ideal %g s", fwd, ideal);
    ck_assert(bwd > 1.5 * fwd && bwd < 3 * fwd);
    workload_graph_free(&g);
}
END_TEST

START_TEST(optimizer_memory_bound)
{
    device_spec d = a100();
    double p = 1e9;
    double adam = cost_optimizer_seconds(p, 1, PREC_BF16, &d);
    double adam2 = cost_optimizer_seconds(2 * p, 1, PREC_BF16, &d);
    double sgd = cost_optimizer_seconds(p, 0, PREC_BF16, &d);
    /* 16-40 bytes per parameter over the sustained bandwidth */
    double lo = p * 16 / 2039e9, hi = p * 40 / (2039e9 * cost_memory_efficiency());
    ck_assert_msg(adam > lo && adam < hi, "adam %g s", adam);
    ck_assert(rel(adam2 - adam, adam - cost_optimizer_seconds(0, 1, PREC_BF16, &d)) < 1e-9);
    ck_assert(sgd < adam);
}
END_TEST

static Suite *cost_suite(void)
{
    Suite *s = suite_create("cost");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, big_gemm_is_compute_bound);
    tcase_add_test(tc, memory_bound_op);
    tcase_add_test(tc, tile_quantization);
    tcase_add_test(tc, wave_quantization);
    tcase_add_test(tc, launch_overhead);
    tcase_add_test(tc, transformer_ops_cost);
    tcase_add_test(tc, optimizer_memory_bound);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(cost_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed != 0;
}
