/* test_kernel_cli.c: `protosim kernel` through the binary: each kernel's time, rates, tiling and
 * bound computed by hand from the H100's devices.yaml figures (989.4 TFLOP/s bf16, 3350 GB/s, 132
 * SMs, tensor-core base 0.715), the cost model's memory-bound efficiency (0.62), shortest kernel
 * (2 us) and one CUDA kernel's cost besides its work (17 / 2.5 = 6.8 us); and its usage errors. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "suite_util.h"

/* One CSV row of `protosim kernel ... --csv -` after its header. */
typedef struct {
    char op[32], shape[64], dtype[8], gpu[40], tile[24], waves[16], bound[16];
    double time_us, tflops, gbps;
} csv_row;

static csv_row kernel_csv(const char *const *args)
{
    char *dir = make_tmpdir();
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    const char *head = "op,shape,dtype,gpu,time_us,tflops,gbps,tile,waves,bound\n";
    ck_assert_msg(!strncmp(r.out, head, strlen(head)), "no header:\n%s", r.out);
    csv_row c;
    memset(&c, 0, sizeof c);
    int n = sscanf(r.out + strlen(head),
                   "%31[^,],%63[^,],%7[^,],%39[^,],%lf,%lf,%lf,%23[^,],%15[^,],%15s", c.op, c.shape,
                   c.dtype, c.gpu, &c.time_us, &c.tflops, &c.gbps, c.tile, c.waves, c.bound);
    ck_assert_msg(n == 10, "row of %d fields:\n%s", n, r.out);
    run_free(&r);
    remove_tmpdir(dir);
    return c;
}

static const double BW = 3350e9 * 0.62; /* the H100's HBM at the memory-bound efficiency */

/* 1 MiB moved: 0.505 us of traffic, under the 2 us shortest kernel: 2 + 6.8 = 8.8 us, launch
 * bound, 1048576 B / 8.8 us = 119.16 GB/s. */
START_TEST(elementwise_pays_the_launch_floor)
{
    const char *args[] = {"kernel",         "elementwise", "1Mi", "--gpu",
                          "H100-SXM5-80GB", "--csv",       "-",   NULL};
    csv_row c = kernel_csv(args);
    ck_assert_str_eq(c.op, "elementwise");
    ck_assert_str_eq(c.shape, "1048576");
    ck_assert_double_eq_tol(c.time_us, 8.8, 1e-4);
    ck_assert_double_eq_tol(c.gbps, 1048576 / 8.8e-6 / 1e9, 1e-3);
    ck_assert_str_eq(c.bound, "launch");
    ck_assert_str_eq(c.tile, "-");
}
END_TEST

/* A fused norm over 16,777,216 bf16 elements reads x and writes y: 67,108,864 B, 32.31 us at
 * 2077 GB/s, + 6.8 us; its backward reads dy and x and writes dx: 100,663,296 B. */
START_TEST(norm_is_memory_bound)
{
    const char *fwd[] = {"kernel",         "norm",  "16777216", "--gpu",
                         "H100-SXM5-80GB", "--csv", "-",        NULL};
    csv_row c = kernel_csv(fwd);
    ck_assert_double_eq_tol(c.time_us, 67108864 / BW * 1e6 + 6.8, 1e-3);
    ck_assert_str_eq(c.bound, "memory");
    const char *bwd[] = {"kernel",  "norm", "16777216",   "--gpu", "H100-SXM5-80GB", "--csv", "-",
                         "--dtype", "bf16", "--backward", NULL};
    c = kernel_csv(bwd);
    ck_assert_str_eq(c.op, "norm-bwd");
    ck_assert_double_eq_tol(c.time_us, 100663296 / BW * 1e6 + 6.8, 1e-3);
}
END_TEST

/* A skinny GEMM, (16896 x 8192).(8192 x 128) in bf16: 141,623,296 elements read and written
 * (283,246,592 B: 136.37 us at 2077 GB/s) against 35.4 GFLOP (50.5 us at 0.709 of 989.4 TFLOP/s):
 * memory bound, 143.17 us. Its 128 x 128 tiles are exactly one wave over the 132 SMs (16896 /
 * 128 = 132 tiles): every tiling of one full wave ties at 0.715 x 8192 / (8192 + 64), and the
 * first of the tile set (128 x 128) is taken. */
START_TEST(skinny_gemm_is_memory_bound)
{
    const char *args[] = {"kernel", "gemm",           "16896", "128", "8192",
                          "--gpu",  "H100-SXM5-80GB", "--csv", "-",   NULL};
    csv_row c = kernel_csv(args);
    double bytes = 2.0 * (16896.0 * 8192 + 8192.0 * 128 + 16896.0 * 128);
    ck_assert_double_eq(bytes, 283246592.0);
    double t = bytes / BW + 6.8e-6;
    ck_assert_double_eq_tol(c.time_us, t * 1e6, 1e-3);
    ck_assert_double_eq_tol(c.tflops, 2.0 * 16896 * 128 * 8192 / t / 1e12, 1e-3);
    ck_assert_str_eq(c.tile, "128x128");
    ck_assert_str_eq(c.waves, "1");
    ck_assert_str_eq(c.bound, "memory");
    ck_assert_str_eq(c.dtype, "bf16");
    ck_assert_str_eq(c.gpu, "H100-SXM5-80GB");
}
END_TEST

/* The same GEMM 132 times wider in N is compute bound: 16896 x 16896 x 8192, 4.677 TFLOP at
 * 0.715 x 8192 / 8256 of 989.4 TFLOP/s: 6.663 ms + 6.8 us (17,424 tiles of 128 x 128: 132 full
 * waves, every tiling ties, the first taken). */
START_TEST(square_gemm_is_compute_bound)
{
    const char *args[] = {"kernel", "gemm",           "16896", "16896", "8192",
                          "--gpu",  "H100-SXM5-80GB", "--csv", "-",     NULL};
    csv_row c = kernel_csv(args);
    double flops = 2.0 * 16896 * 16896 * 8192;
    double t = flops / (989.4e12 * 0.715 * 8192 / 8256) + 6.8e-6;
    ck_assert_double_eq_tol(c.time_us, t * 1e6, 1e-2);
    ck_assert_str_eq(c.tile, "128x128");
    ck_assert_str_eq(c.waves, "132");
    ck_assert_str_eq(c.bound, "compute");
}
END_TEST

/* Fused attention, 1 x 132 heads x 1024 tokens x 128 on the H100, bf16. Its two GEMMs per head:
 * QK^T (1024 x 1024 over 128: 64 tiles of 128 x 128 a head, 8448 in all, 64 full waves, k_eff
 * 128 / 192) at 0.715 x 2/3 of 989.4 TFLOP/s, 35.43 GFLOP: 75.13 us; PV (1024 x 128 over 1024:
 * 1056 tiles, 8 full waves, k_eff 1024 / 1088): 53.21 us. Forward 128.34 us of math against
 * 138.9 MB of traffic (Q, K, V, O in bf16, the fp32 log-sum-exp: 66.9 us), so compute bound:
 * 135.14 us. The backward runs 2.5 times the math at 0.79 of the forward's rate (406.1 us)
 * against 277.3 MB (133.5 us). */
START_TEST(attention_by_hand)
{
    double peak = 989.4e12 * 0.715, f = 2.0 * 132 * 1024 * 1024 * 128;
    double qk = f / (peak * 128 / 192), pv = f / (peak * 1024 / 1088), math = qk + pv;
    double q = 1024.0 * 132 * 128, lse = 132 * 1024 * 4.0;
    ck_assert(2 * 4 * q + lse < math * BW);
    const char *fwd[] = {"kernel", "attention",      "1",     "132", "1024", "128",
                         "--gpu",  "H100-SXM5-80GB", "--csv", "-",   NULL};
    csv_row c = kernel_csv(fwd);
    ck_assert_str_eq(c.op, "attention");
    ck_assert_double_eq_tol(c.time_us, (math + 6.8e-6) * 1e6, 1e-3);
    ck_assert_double_eq_tol(c.tflops, 2 * f / (math + 6.8e-6) / 1e12, 1e-3);
    ck_assert_str_eq(c.bound, "compute");
    const char *bwd[] = {"kernel", "attention",      "1",     "132", "1024",       "128",
                         "--gpu",  "H100-SXM5-80GB", "--csv", "-",   "--backward", NULL};
    c = kernel_csv(bwd);
    ck_assert_str_eq(c.op, "attention-bwd");
    ck_assert(2 * 8 * q + lse < math * 2.5 / 0.79 * BW);
    ck_assert_double_eq_tol(c.time_us, (math * 2.5 / 0.79 + 6.8e-6) * 1e6, 1e-3);
    ck_assert_str_eq(c.bound, "compute");
}
END_TEST

/* --csv FILE writes the same header and row as --csv - (nothing on stdout). */
START_TEST(csv_to_a_file)
{
    char *dir = make_tmpdir();
    char *out = tmp_path(dir, "k.csv");
    const char *args[] = {"kernel",         "elementwise", "1Mi", "--gpu",
                          "H100-SXM5-80GB", "--csv",       out,   NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_str_eq(r.out, "");
    char *text = slurp(out, NULL);
    ck_assert_str_eq(text, "op,shape,dtype,gpu,time_us,tflops,gbps,tile,waves,bound\n"
                           "elementwise,1048576,bf16,H100-SXM5-80GB,8.8,0,119.156,-,-,"
                           "launch\n");
    free(text);
    free(out);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* Usage errors exit 1 naming what is wrong. */
START_TEST(kernel_usage_errors)
{
    struct {
        const char *args[12];
        const char *needle;
    } bad[] = {
        {{"kernel", "conv", "1", "--gpu", "H100-SXM5-80GB", NULL}, "unknown kernel 'conv'"},
        {{"kernel", "gemm", "1", "2", "--gpu", "H100-SXM5-80GB", NULL}, "gemm needs M N K"},
        {{"kernel", "gemm", "1", "0", "3", "--gpu", "H100-SXM5-80GB", NULL}, "bad N '0'"},
        {{"kernel", "gemm", "1e3", "2", "3", "--gpu", "H100-SXM5-80GB", NULL}, "bad M '1e3'"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "H100-SXM5-80GB", "--warp-mma", NULL},
         "an attention kernel's option"},
        {{"kernel", "attention", "1", "2", "64", "64", "--gpu", "B200-SXM-180GB", "--warp-mma",
          NULL},
         "has no warp_mma_fraction"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "H100-SXM5-80GB", "--csv", "/dev/full", NULL},
         "--csv: cannot write /dev/full"},
        {{"kernel", "gemm", "1", "2", "3", NULL}, "kernel needs --gpu"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "NOPE", NULL}, "no device 'NOPE'"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "A100-SXM4-80GB", "--dtype", "fp8", NULL},
         "no FP8 tensor cores"},
        {{"kernel", "attention", "1", "2", "64", "64", "--gpu", "H100-SXM5-80GB", "--dtype", "fp32",
          NULL},
         "fused attention runs fp16 or bf16"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "H100-SXM5-80GB", "--causal", NULL},
         "only attention is causal"},
        {{"kernel", "elementwise", "8", "--gpu", "H100-SXM5-80GB", "--backward", NULL},
         "only attention and norm"},
        {{"kernel", NULL}, "kernel needs a kernel"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "L40S", "--gemm-model", "tile", NULL},
         "has no fitted tile parameters"},
        {{"kernel", "gemm", "1", "2", "3", "--gpu", "L40S", "--gemm-model", "waves", NULL},
         "roofline or tile"},
        {{"kernel", "norm", "8", "--gpu", "H100-SXM5-80GB", "--gemm-model", "tile", NULL},
         "only gemm and bmm"},
    };
    char *dir = make_tmpdir();
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run_result r = run_protosim(dir, bad[i].args);
        const char *needles[] = {bad[i].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    remove_tmpdir(dir);
}
END_TEST

/* The text form names the kernel, its tiling and its bound; causal attention on an H100 is
 * compute bound and achieves under the bf16 peak. */
START_TEST(text_output)
{
    char *dir = make_tmpdir();
    const char *args[] = {"kernel", "attention",      "2", "32", "4096", "128", "--causal",
                          "--gpu",  "H100-SXM5-80GB", NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "attention-causal 2x32x4096x128 bf16 on H100-SXM5-80GB"), "%s",
                  r.out);
    ck_assert_msg(strstr(r.out, "bound     compute"), "%s", r.out);
    run_free(&r);
    const char *gemm[] = {"kernel",         "bmm", "4", "1024", "1024", "1024", "--gpu",
                          "A100-SXM4-80GB", NULL};
    r = run_protosim(dir, gemm);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "bmm 4x1024x1024x1024 bf16 on A100-SXM4-80GB"), "%s", r.out);
    ck_assert_msg(strstr(r.out, "tiling    "), "%s", r.out);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* --gemm-model tile on the H100 (Hopper's fitted tile parameters, tests/test_cost.c). A tiny
 * (64 x 64).(64 x 64) fp16 GEMM: one 128 x 64 tile (or 64 x 64: the same operand bytes) streams
 * 2 B x (64 + 64) x 64 = 16,384 B into its SM at 42.76 / 4096 B per FLOP of the SM's 7.4955
 * TFLOP/s (78.25 GB/s): 0.2094 us, over its math (0.095 us), and no shortest-kernel floor (the
 * roofline's): 0.2094 + 6.8 us, bound by the per-kernel cost ("launch"). A skinny (1 x 8192).(8192 x 8192) one streams its 134,250,496 B of HBM at
 * 0.9132 of 3350 GB/s: memory bound, 43.88 + 6.8 us. */
START_TEST(tile_model_by_hand)
{
    const double p16_sm = 989.4e12 / 132, feed = 42.76 / 4096 * p16_sm;
    const char *tiny[] = {"kernel", "gemm",           "64",      "64",   "64",
                          "--gpu",  "H100-SXM5-80GB", "--dtype", "fp16", "--gemm-model",
                          "tile",   "--csv",          "-",       NULL};
    csv_row c = kernel_csv(tiny);
    ck_assert_double_eq_tol(c.time_us, 2.0 * 128 * 64 / feed * 1e6 + 6.8, 1e-4);
    ck_assert_str_eq(c.bound, "launch");
    const char *skinny[] = {"kernel", "gemm",           "1",       "8192", "8192",
                            "--gpu",  "H100-SXM5-80GB", "--dtype", "fp16", "--gemm-model",
                            "tile",   "--csv",          "-",       NULL};
    c = kernel_csv(skinny);
    double bytes = 2.0 * (8192 + 8192.0 * 8192 + 8192);
    ck_assert_double_eq_tol(c.time_us, bytes / (3350e9 * 0.9132) * 1e6 + 6.8, 1e-3);
    ck_assert_str_eq(c.bound, "memory");
    ck_assert_str_eq(c.waves, "1");
}
END_TEST

/* --shapes: one row a shape, in order, each the row of the single call (the 1 MiB elementwise
 * pass: 8.8 us as above; 1Gi: 1073741824 B at 2077 GB/s + 6.8 us), a header once; comments and
 * blank lines skipped. A bad line is an error naming the file, line and column. */
START_TEST(many_shapes_in_one_call)
{
    char *dir = make_tmpdir();
    char *ok = write_tmp_file(dir, "ok.txt", "# bytes\n1Mi\n\n  1Gi   # a gibibyte\n");
    const char *args[] = {"kernel",         "elementwise", "--shapes", ok,  "--gpu",
                          "H100-SXM5-80GB", "--csv",       "-",        NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    const char *head = "op,shape,dtype,gpu,time_us,tflops,gbps,tile,waves,bound\n";
    ck_assert_msg(!strncmp(r.out, head, strlen(head)) && !strstr(r.out + 1, "op,shape"), "%s",
                  r.out);
    double t1 = 0, t2 = 0;
    char s1[32], s2[32];
    ck_assert_int_eq(sscanf(r.out + strlen(head),
                            "elementwise,%31[^,],bf16,H100-SXM5-80GB,%lf,%*s\n"
                            "elementwise,%31[^,],bf16,H100-SXM5-80GB,%lf",
                            s1, &t1, s2, &t2),
                     4);
    ck_assert_str_eq(s1, "1048576");
    ck_assert_str_eq(s2, "1073741824");
    ck_assert_double_eq_tol(t1, 8.8, 1e-4);
    ck_assert_double_eq_tol(t2, 1073741824 / BW * 1e6 + 6.8, 1e-2);
    run_free(&r);
    char *bad = write_tmp_file(dir, "bad.txt", "128 128 128\n# two\n64 x 64\n");
    char *short_line = write_tmp_file(dir, "short.txt", "128 128\n");
    char *empty = write_tmp_file(dir, "empty.txt", "# nothing\n\n");
    struct {
        const char *args[12];
        const char *needle[3];
    } errs[] = {
        {{"kernel", "gemm", "--shapes", bad, "--gpu", "H100-SXM5-80GB", NULL},
         {"bad.txt:3:4", "bad N 'x'", NULL}},
        {{"kernel", "gemm", "--shapes", short_line, "--gpu", "H100-SXM5-80GB", NULL},
         {"short.txt:1:1", "got 2", NULL}},
        {{"kernel", "gemm", "--shapes", empty, "--gpu", "H100-SXM5-80GB", NULL},
         {"empty.txt:1:1", "no shape", NULL}},
        {{"kernel", "gemm", "1", "2", "3", "--shapes", empty, "--gpu", "H100-SXM5-80GB", NULL},
         {"not after gemm", NULL}},
        {{"kernel", "gemm", "--shapes", "nowhere.txt", "--gpu", "H100-SXM5-80GB", NULL},
         {"cannot read nowhere.txt", NULL}},
    };
    for (size_t i = 0; i < sizeof errs / sizeof *errs; i++) {
        r = run_protosim(dir, errs[i].args);
        expect_bad_input(&r, errs[i].needle);
        run_free(&r);
    }
    free(ok);
    free(bad);
    free(short_line);
    free(empty);
    remove_tmpdir(dir);
}
END_TEST

/* An Ada card nobody bundled, 4 SMs, 10 TFLOP/s fp16/bf16 and 1000 GB/s, given only by its
 * datasheet figures. A (256 x 4096).(4096 x 256) bf16 GEMM: 128 x 128 tiles, 4 tiles on the 4 SMs,
 * one full wave; the tensor-core base is the cost model's default 0.73 (Ada has no fitted figure
 * of its own), times the K depth 4096 / (4096 + 64): 536,870,912 FLOP at 10e12 x 0.71877 =
 * 74.69 us, over the memory time (4,325,376 B at 620 GB/s = 6.98 us), + 6.8 us. A second file
 * naming the same GPU with twice the peak replaces it (later files win): 37.35 + 6.8 us. */
#define TINY_ADA                                                                                   \
    "- name: TINY-ADA\n  architecture: ada\n  fp32_tflops: 1\n  tf32_tflops: 5\n"                  \
    "  hbm_gbps: 1000\n  hbm_gib: 8\n  sms: 4\n"
START_TEST(a_gpu_given_only_by_its_datasheet)
{
    char *dir = make_tmpdir();
    char *one = write_tmp_file(dir, "one.yaml", TINY_ADA "  fp16_tflops: 10\n  bf16_tflops: 10\n");
    char *two = write_tmp_file(dir, "two.yaml", TINY_ADA "  fp16_tflops: 20\n  bf16_tflops: 20\n");
    const double flop = 2.0 * 256 * 256 * 4096, eff = 0.73 * 4096 / (4096 + 64);
    const char *args[] = {"kernel",   "gemm",  "256", "256",       "4096", "--gpu",
                          "TINY-ADA", "--csv", "-",   "--devices", one,    NULL};
    csv_row c = kernel_csv(args);
    ck_assert_str_eq(c.gpu, "TINY-ADA");
    ck_assert_str_eq(c.tile, "128x128");
    ck_assert_str_eq(c.waves, "1");
    ck_assert_str_eq(c.bound, "compute");
    ck_assert_double_eq_tol(c.time_us, flop / (10e12 * eff) * 1e6 + 6.8, 1e-3);
    char eq[600];
    snprintf(eq, sizeof eq, "--devices=%s", two);
    const char *both[] = {"kernel", "gemm", "256",       "256", "4096", "--gpu", "TINY-ADA",
                          "--csv",  "-",    "--devices", one,   eq,     NULL};
    c = kernel_csv(both);
    ck_assert_double_eq_tol(c.time_us, flop / (20e12 * eff) * 1e6 + 6.8, 1e-3);
    free(one);
    free(two);
    remove_tmpdir(dir);
}
END_TEST

/* The same GPU end to end: `cluster --gpu` builds a node of it and `run` simulates the bundled
 * BERT plan on it, both given the file; the report's memory capacity is the file's 48 GiB. Without
 * the file, the cluster's GPU is unknown (exit 1, with the hint). */
START_TEST(a_users_gpu_end_to_end)
{
    char *dir = make_tmpdir();
    char *devs = write_tmp_file(dir, "gpus.yaml",
                                "- name: MY-ADA\n  architecture: ada\n  fp32_tflops: 91.6\n"
                                "  tf32_tflops: 183\n  fp16_tflops: 362.05\n  bf16_tflops: 362.05\n"
                                "  hbm_gbps: 864\n  hbm_gib: 48\n  sms: 142\n");
    char *cl = tmp_path(dir, "ada.yaml"), *out = tmp_path(dir, "r.json");
    char *plan = src_path("strategies/examples/bert-large-dp8.yaml");
    const char *gen[] = {"cluster",   "dgx-a100", "--nodes", "1", "--gpu", "MY-ADA",
                         "--devices", devs,       "-o",      cl,  NULL};
    run_result r = run_protosim(dir, gen);
    expect_exit(&r, 0);
    run_free(&r);
    const char *run[] = {"run", plan,     "--cluster", cl,        "--devices",
                         devs,  "--json", out,         "--quiet", NULL};
    r = run_protosim(dir, run);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *j = parse_json_file(out);
    ck_assert_double_eq(num_field(j, "memory_capacity_bytes"), 48.0 * 1073741824.0);
    ck_assert(num_field(j, "iteration_time_s") > 0);
    cJSON_Delete(j);
    const char *without[] = {"run", plan, "--cluster", cl, "--quiet", NULL};
    r = run_protosim(dir, without);
    const char *needles[] = {"unknown device 'MY-ADA'", "--devices FILE", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(devs);
    free(cl);
    free(out);
    free(plan);
    remove_tmpdir(dir);
}
END_TEST

/* A device file's mistakes are input errors naming the file, the line and the key; so are
 * --devices without a file and an unknown architecture. */
START_TEST(device_file_errors)
{
    char *dir = make_tmpdir();
    char *no_sms = write_tmp_file(dir, "no_sms.yaml",
                                  "- name: X\n  architecture: ada\n  fp32_tflops: 1\n"
                                  "  tf32_tflops: 1\n  fp16_tflops: 1\n  bf16_tflops: 1\n"
                                  "  hbm_gbps: 1\n  hbm_gib: 1\n");
    char *bad_arch =
        write_tmp_file(dir, "arch.yaml", "- name: X\n  architecture: kepler\n  fp32_tflops: 1\n");
    char *no_arch = write_tmp_file(dir, "noarch.yaml", "- name: X\n  fp32_tflops: 1\n");
    char *ada_tiles =
        write_tmp_file(dir, "tiles.yaml", "- name: X\n  architecture: ada\n  gemm_model: tile\n");
    char *huge = write_tmp_file(dir, "huge.yaml",
                                "- name: X\n  architecture: hopper\n  fp32_tflops: 1\n"
                                "  tf32_tflops: 1\n  fp16_tflops: 1e300\n  bf16_tflops: 1\n"
                                "  hbm_gbps: 1\n  hbm_gib: 1\n  sms: 1\n");
    struct {
        const char *args[12];
        const char *needle[3];
    } bad[] = {
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", no_sms, NULL},
         {"no_sms.yaml:1", "lacks sms", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", bad_arch, NULL},
         {"arch.yaml:2", "architecture", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", no_arch, NULL},
         {"noarch.yaml:1", "lacks architecture", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", ada_tiles, NULL},
         {"tiles.yaml:3", "no fitted parameters for ada", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", huge, NULL},
         {"huge.yaml:5", "fp16_tflops 1e+300 is beyond any GPU", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", NULL},
         {"--devices needs a file", NULL}},
        {{"kernel", "norm", "8", "--gpu", "X", "--devices", "nowhere.yaml", NULL},
         {"nowhere.yaml", NULL}},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run_result r = run_protosim(dir, bad[i].args);
        expect_bad_input(&r, bad[i].needle);
        run_free(&r);
    }
    free(no_sms);
    free(bad_arch);
    free(no_arch);
    free(ada_tiles);
    free(huge);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {elementwise_pays_the_launch_floor,
                                  norm_is_memory_bound,
                                  skinny_gemm_is_memory_bound,
                                  square_gemm_is_compute_bound,
                                  attention_by_hand,
                                  csv_to_a_file,
                                  kernel_usage_errors,
                                  text_output,
                                  a_gpu_given_only_by_its_datasheet,
                                  tile_model_by_hand,
                                  a_users_gpu_end_to_end,
                                  many_shapes_in_one_call,
                                  device_file_errors,
                                  NULL};
    return suite_run(suite_of("kernel_cli", "kernel_cli", 120, tests));
}
