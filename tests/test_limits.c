/* test_limits.c: issue 14's robustness classes through the binary and the core: checked products
 * of sizes from input, the documented input limits (docs/design-notes.md "Input limits"), the
 * strict command-line numbers, and the YAML rules (depth, size, duplicate children). Every bad
 * input exits 1 with the message and the file:line:column of the field that caused it. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/limits.h"
#include "../sim/base/number.h"
#include "../sim/base/yaml_read.h"
#include "../topology/cluster.h"
#include "cli_util.h"
#include "suite_util.h"

static const char *dgx4 = "topology/clusters/dgx4.xml";

/* ---------------------------------------------------------------- helpers */

/* Write text to dir/name; returns the path (caller frees). */
static char *write_file(const char *dir, const char *name, const char *text)
{
    return write_tmp_file(dir, name, text);
}

/* `protosim run FILE --cluster dgx4` on a strategy written from text: exits 1 with every needle
 * on stderr and the error at FILE:line:column. */
static void expect_run_error(const char *text, int line, int column, const char *const *needles)
{
    char *dir = make_tmpdir();
    char *strat = write_file(dir, "s.yaml", text), *cl = src_path(dgx4);
    const char *args[] = {"run", strat, "--cluster", cl, "--quiet", NULL};
    run_result r = run_protosim(dir, args);
    expect_bad_input(&r, needles);
    char loc[1200];
    snprintf(loc, sizeof loc, "%s:%d:%d: ", strat, line, column);
    ck_assert_msg(strstr(r.err, loc) != NULL, "`%s`: stderr lacks the location %s:\n%s", r.cmd, loc,
                  r.err);
    run_free(&r);
    free(strat), free(cl);
    remove_tmpdir(dir);
}

/* ---------------------------------------------------------------- 1. checked arithmetic */

/* 2^62 x 4 overflows 64 bits: refused at the given location without forming the product. */
START_TEST(checked_products)
{
    ps_error err;
    ps_error_clear(&err);
    int64_t out = -1;
    ps_where w = {"f.yaml", {3, 7}, "x.y"};
    ck_assert_int_eq(ps_mul_checked(1000, 1000, 1000000, w, "what", &out, &err), 0);
    ck_assert_int_eq(out, 1000000);
    ck_assert_int_eq(ps_mul_checked((int64_t)1 << 62, 4, INT64_MAX, w, "bytes", &out, &err),
                     PS_EINPUT);
    ck_assert_str_eq(err.file, "f.yaml");
    ck_assert_int_eq(err.line, 3);
    ck_assert_int_eq(err.column, 7);
    ck_assert_str_eq(err.field, "x.y");
    ck_assert_str_eq(err.message, "bytes: 4611686018427387904 x 4 is more than "
                                  "9223372036854775807 (protosim's limit)");
    ps_error_clear(&err);
    const int64_t f[4] = {65536, 1, 65536, 1};
    ck_assert_int_eq(ps_product_checked(f, 4, 131072, w, "GPUs", NULL, &err), PS_EINPUT);
    ck_assert_str_eq(err.message, "GPUs: 65536 x 1 x 65536 x 1 is more than 131072 (protosim's "
                                  "limit)");
    ck_assert(ps_mul_exceeds(131072, 2, 131072));
    ck_assert(!ps_mul_exceeds(65536, 2, 131072));
}
END_TEST

/* pipeline {degree: 65536, schedule: interleaved, virtual_stages: 65536} was SIGFPE: each value
 * is within the GPU limit or refused at its own field. */
START_TEST(pipeline_virtual_stages_overflow)
{
    const char *needles[] = {"field 'strategy.pipeline.virtual_stages'",
                             "65536 is more than 16386 (protosim's limit)", NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 32, micro: 2}\n"
                     "strategy:\n"
                     "  pipeline: {degree: 65536, schedule: interleaved, virtual_stages: 65536}\n",
                     4, 68, needles);
    /* within each limit, the product of 1024 stages x 64 virtual stages is refused */
    const char *product[] = {"field 'strategy.pipeline.virtual_stages'",
                             "model chunks (pipeline degree x virtual stages): 1024 x 64 is more "
                             "than 16386 (protosim's limit)",
                             NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 32, micro: 2}\n"
                     "strategy:\n"
                     "  pipeline: {degree: 1024, schedule: interleaved, virtual_stages: 64}\n",
                     4, 67, product);
}
END_TEST

/* tensor 65536 x pipeline 65536: the plan's GPUs, at the degree whose product passes the limit. */
START_TEST(plan_gpus_overflow)
{
    const char *needles[] = {"field 'strategy.pipeline.degree'",
                             "GPUs of the plan (tensor x context x pipeline x data): 65536 x 1 x "
                             "65536 is more than 131072 (protosim's limit)",
                             NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 32, micro: 2}\n"
                     "strategy:\n"
                     "  tensor: {degree: 65536}\n"
                     "  pipeline: {degree: 65536}\n",
                     5, 22, needles);
}
END_TEST

/* Sweep axes tensor [65536], pipeline [65536], data: auto was SIGFPE in the sweep parent: the
 * 2^32 product now divides nothing, an impossible sweep at its axes. */
START_TEST(sweep_degree_product)
{
    char *dir = make_tmpdir();
    char *base = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml"), *cl = src_path(dgx4);
    char text[1400];
    snprintf(text, sizeof text,
             "base: %s\naxes:\n  tensor: [65536]\n  pipeline: [65536]\n  data: auto\n", base);
    char *sweep = write_file(dir, "sw.yaml", text);
    const char *args[] = {"sweep", sweep, "--cluster", cl, "--no-progress", NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {"field 'axes'",
                             "tensor 65536 x context 1 x pipeline 65536 does not "
                             "divide the 4 GPUs",
                             NULL};
    expect_bad_input(&r, needles);
    ck_assert_int_eq(location_line(r.err, sweep), 3);
    run_free(&r);
    free(base), free(cl), free(sweep);
    remove_tmpdir(dir);
}
END_TEST

/* hidden: 1000000000, heads: 1 (4 x hidden overflowed int: "non-positive dimension", no
 * location) and layers: 300000000 (exit 3, out of memory): limits at their keys. */
START_TEST(model_dimensions)
{
    const char *hidden[] = {"field 'workload.hidden'",
                            "1000000000 is more than 1048576 (protosim's limit)", NULL};
    expect_run_error("workload: {name: x, family: gpt, layers: 2, hidden: 1000000000, heads: 1,\n"
                     "           seq: 1024, vocab: 50304}\n"
                     "batch: {global: 32, micro: 4}\n"
                     "strategy: {data: {degree: 4}}\n",
                     1, 53, hidden);
    const char *layers[] = {"field 'workload.layers'",
                            "300000000 is more than 16384 (protosim's limit)", NULL};
    expect_run_error("workload: {name: x, family: gpt, layers: 300000000, hidden: 768, heads: 12,\n"
                     "           seq: 1024, vocab: 50304}\n"
                     "batch: {global: 32, micro: 4}\n"
                     "strategy: {data: {degree: 4}}\n",
                     1, 42, layers);
}
END_TEST

/* ---------------------------------------------------------------- 2. input limits */

/* batch.global 4000000 on 4 data ranks is 10^6 micro-batches (minutes of work before). */
START_TEST(micro_batches_limit)
{
    const char *needles[] = {"field 'batch.global'",
                             "global batch 4000000 / (micro batch 1 x data degree 4) = 1000000 "
                             "micro-batches per iteration, more than 65536 (protosim's limit)",
                             NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 4000000, micro: 1}\n"
                     "strategy: {data: {degree: 4}}\n",
                     2, 17, needles);
    const char *global[] = {"field 'batch.global'",
                            "20000000 is more than 16777216 (protosim's limit)", NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 20000000, micro: 1}\n"
                     "strategy: {data: {degree: 4}}\n",
                     2, 17, global);
}
END_TEST

/* layers: 10000000 (minutes of work before). */
START_TEST(layers_limit)
{
    const char *needles[] = {"field 'workload.layers'",
                             "10000000 is more than 16384 (protosim's limit)", NULL};
    expect_run_error("workload: {name: x, family: gpt, layers: 10000000, hidden: 768, heads: 12,\n"
                     "           seq: 1024, vocab: 50304}\n"
                     "batch: {global: 32, micro: 4}\n"
                     "strategy: {data: {degree: 4}}\n",
                     1, 42, needles);
}
END_TEST

/* YAML nested 100,000 deep (34-68 s before) stops at the 65th level, at once. */
START_TEST(yaml_depth_limit)
{
    size_t n = 100000;
    char *text = malloc(2 * n + 128);
    int k = sprintf(text, "workload: gpt3-1.3b\nbatch: {global: 32, micro: 2}\nstrategy: ");
    memset(text + k, '[', n);
    memset(text + k + n, ']', n);
    strcpy(text + k + 2 * n, "\n");
    /* libyaml marks the 65th level at column 74 of line 3 (the 64th '[', where its item
     * starts) */
    const char *needles[] = {"the strategy file nests mappings and lists more than 64 deep "
                             "(protosim's limit)",
                             NULL};
    expect_run_error(text, 3, 74, needles);
    free(text);
}
END_TEST

/* A YAML file over 16 MiB is refused before parsing (a comment that long, here). */
START_TEST(yaml_size_limit)
{
    char *dir = make_tmpdir();
    char *path = tmp_path(dir, "big.yaml");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("workload: gpt3-1.3b\n#", f);
    for (int i = 0; i < PS_MAX_YAML_BYTES / 64 + 1; i++)
        fputs("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", f);
    fclose(f);
    char *cl = src_path(dgx4);
    const char *args[] = {"run", path, "--cluster", cl, NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {path,
                             "the strategy file is larger than 16777216 bytes (protosim's "
                             "limit: 16 MiB)",
                             NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(path), free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* cluster --nodes 100000 or --gpus-per-node 100000 (unbounded memory before). */
START_TEST(cluster_size_limits)
{
    char *dir = make_tmpdir();
    static const struct {
        const char *args[10];
        const char *needle;
    } cases[] = {
        {{"cluster", "dgx-h100", "--nodes", "100000", NULL},
         "--nodes: the cluster would have 800000 GPUs, more than 131072 (protosim's limit)"},
        {{"cluster", "dgx-h100", "--nodes", "200000", NULL},
         "--nodes: bad number '200000' (expected an integer from 1 to 131072)"},
        {{"cluster", "dgx-h100", "--nodes", "20000", NULL},
         "--nodes: the cluster would have 160000 GPUs, more than 131072 (protosim's limit)"},
        {{"cluster", "--nodes", "dgx-h100:10000,dgx-a100:10000", NULL},
         "--nodes: the cluster would have 160000 GPUs, more than 131072 (protosim's limit)"},
        {{"cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "100000", NULL},
         "--gpus-per-node: bad number '100000' (expected an integer from 1 to 72)"},
        /* 1000 nodes of 72 GPUs: 1000 x 72 x 71 = 5,112,000 routes inside nodes (XML lists
         * them; a description does not) */
        {{"cluster", "dgx-h100", "--nodes", "1000", "--gpus-per-node", "72", "--format", "xml",
          NULL},
         "--nodes: the nodes would hold 5112000 ordered GPU pairs"},
        {{"cluster", "dgx-h100", "--nodes", "2", "--nics", "0", NULL},
         "--nics: bad number '0' (expected an integer from 1 to 72)"},
        {{"cluster", "dgx-h100", "--nodes", "2", "--gpus-per-node", "0", NULL},
         "--gpus-per-node: bad number '0' (expected an integer from 1 to 72)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r = run_protosim(dir, cases[i].args);
        const char *needles[] = {cases[i].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    remove_tmpdir(dir);
}
END_TEST

/* sweep -j 10000000 (a stack overflow from a variable-length array before), constraints and
 * axes beyond their limits. */
START_TEST(sweep_limits)
{
    char *dir = make_tmpdir();
    char *ex = src_path("strategies/examples/sweep-gpt3-1.3b-dgx4.yaml"), *cl = src_path(dgx4);
    const char *jobs[] = {"sweep", ex, "--cluster", cl, "-j", "10000000", NULL};
    run_result r = run_protosim(dir, jobs);
    const char *needles[] = {"-j: bad job count '10000000' (expected an integer from 1 to 1024)",
                             NULL};
    expect_bad_input(&r, needles);
    run_free(&r);

    char *base = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char text[1400];
    snprintf(text, sizeof text,
             "base: %s\naxes:\n  tensor: [1, 2]\nconstraints:\n  max_plans: 2000000\n", base);
    char *sweep = write_file(dir, "sw.yaml", text);
    const char *args[] = {"sweep", sweep, "--cluster", cl, "--no-progress", NULL};
    r = run_protosim(dir, args);
    const char *max_plans[] = {"field 'constraints.max_plans'",
                               "2000000 is more than 1000000 (protosim's limit)", NULL};
    expect_bad_input(&r, max_plans);
    ck_assert_int_eq(location_line(r.err, sweep), 5);
    run_free(&r);
    free(sweep);

    /* 1025 values of one axis */
    size_t cap = 16 * 1025 + 2048;
    char *big = malloc(cap);
    int k = snprintf(big, cap, "base: %s\naxes:\n  micro_batch: [", base);
    for (int i = 1; i <= 1025; i++)
        k += snprintf(big + k, cap - (size_t)k, "%s%d", i > 1 ? ", " : "", i);
    snprintf(big + k, cap - (size_t)k, "]\n");
    sweep = write_file(dir, "axis.yaml", big);
    const char *args2[] = {"sweep", sweep, "--cluster", cl, "--no-progress", NULL};
    r = run_protosim(dir, args2);
    const char *axis[] = {"field 'axes.micro_batch'",
                          "1025 values: more than 1024 (protosim's "
                          "limit)",
                          NULL};
    expect_bad_input(&r, axis);
    ck_assert_int_eq(location_line(r.err, sweep), 3);
    run_free(&r);
    free(big), free(sweep), free(base), free(ex), free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* Micro-batches x model chunks: 65,536 x 32 stages is 2^21 units of pipeline work (146 s and
 * 1.4 GB measured before the limit). */
START_TEST(pipeline_units_limit)
{
    const char *needles[] = {"field 'batch.global'",
                             "65536 micro-batches x 32 model chunks (pipeline 32 x virtual stages "
                             "1) = 2097152 units of pipeline work, more than 1048576 (protosim's "
                             "limit)",
                             NULL};
    expect_run_error("workload: {name: x, family: gpt, layers: 64, hidden: 768, heads: 12,\n"
                     "           seq: 1024, vocab: 50304}\n"
                     "batch: {global: 65536, micro: 1}\n"
                     "strategy: {pipeline: {degree: 32}}\n",
                     3, 17, needles);
}
END_TEST

/* GPUs x micro-batches x virtual stages: 131,072 GPUs x 1,024 micro-batches would need 3 GB of
 * the compiler's per-GPU tables. */
START_TEST(rank_units_limit)
{
    const char *needles[] = {"field 'batch.global'",
                             "131072 GPUs x 1024 micro-batches x 1 virtual stages = 134217728, "
                             "more than 67108864 (protosim's limit of the plan's per-GPU units)",
                             NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 16777216, micro: 1}\n"
                     "strategy: {tensor: {degree: 8}, data: {degree: 16384}}\n",
                     2, 17, needles);
}
END_TEST

/* A merge input over 1 GiB is refused before it is read (a sparse file here). */
START_TEST(merge_input_limit)
{
    char *dir = make_tmpdir();
    char *path = tmp_path(dir, "huge.json");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)PS_MAX_MERGE_BYTES + 1), 0);
    fclose(f);
    const char *args[] = {"merge", path, NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {path,
                             "1073741825 bytes: more than 1073741824 (protosim's limit for "
                             "a merge input: 1 GiB)",
                             NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(path);
    remove_tmpdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- wrong exits */

/* A repeated children path is an error, as in every other mapping (the second used to win). */
START_TEST(duplicate_children)
{
    const char *needles[] = {"field 'strategy.children.layers.0-3'", "duplicate key 'layers.0-3'",
                             NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 32, micro: 2}\n"
                     "strategy:\n"
                     "  data: {degree: 4}\n"
                     "  children:\n"
                     "    layers.0-3: {recompute: full}\n"
                     "    layers.0-3: {recompute: none}\n",
                     7, 5, needles);
}
END_TEST

/* vocab_parallel splits the embedding and the LM head: refused on a layer range. */
START_TEST(vocab_parallel_on_layers)
{
    const char *needles[] = {"field 'strategy.children.layers.2.tensor.vocab_parallel'",
                             "it applies to children embedding and head, not to 'layers.2'", NULL};
    expect_run_error("workload: gpt3-1.3b\n"
                     "batch: {global: 32, micro: 2}\n"
                     "strategy:\n"
                     "  tensor: {degree: 2}\n"
                     "  data: {degree: 2}\n"
                     "  children:\n"
                     "    layers.2: {tensor: {vocab_parallel: false}}\n"
                     "    head: {tensor: {vocab_parallel: false}}\n",
                     7, 41, needles);
}
END_TEST

/* Numbers are plain decimals in every YAML file: the device table's optional NCCL figures
 * refused quoted and hex numbers no more than the other keys. */
START_TEST(device_numbers_are_plain)
{
    static const char *const values[] = {"'5'", "0x10", ".inf", "nan"};
    for (int i = 0; i < 4; i++) {
        char *dir = make_tmpdir();
        char text[512];
        snprintf(text, sizeof text,
                 "- {name: G, fp32_tflops: 1, tf32_tflops: 1, fp16_tflops: 1, bf16_tflops: 1,\n"
                 "   hbm_gbps: 1, hbm_gib: 1, sms: 1, nccl_launch_us: %s,\n"
                 "   architecture: volta}\n",
                 values[i]);
        char *path = write_file(dir, "devices.yaml", text);
        device_table t;
        ps_error err;
        ps_error_clear(&err);
        ck_assert_int_eq(device_table_load(path, &t, &err), PS_EINPUT);
        ck_assert_int_eq(err.line, 2);
        ck_assert_int_eq(err.column, 53);
        ck_assert_str_eq(err.field, "nccl_launch_us"); /* items are found by line */
        ck_assert_msg(strstr(err.message, "expected a number") != NULL, "%s", err.message);
        free(path);
        remove_tmpdir(dir);
    }
}
END_TEST

/* ---------------------------------------------------------------- 5. command-line numbers */

START_TEST(strict_numbers)
{
    double v;
    int n;
    ck_assert_int_eq(ps_parse_size("1Ki", &v), 0);
    ck_assert(v == 1024.0);
    ck_assert_int_eq(ps_parse_size("1Mi", &v), 0);
    ck_assert(v == 1048576.0);
    ck_assert_int_eq(ps_parse_size("1G", &v), 0);
    ck_assert(v == 1e9);
    ck_assert_int_eq(ps_parse_size("1000000T", &v), 0); /* 1e18: the limit itself */
    ck_assert(v == 1e18);
    static const char *const bad_sizes[] = {"nan",  "inf",      "1e308", "0x10", "-1",
                                            "1.5K", "2000000T", "1 K",   "1KB",  ""};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof *bad_sizes; i++)
        ck_assert_msg(ps_parse_size(bad_sizes[i], &v) == -1, "'%s' taken", bad_sizes[i]);
    ck_assert_int_eq(ps_parse_decimal("1e3", &v), 0);
    ck_assert(v == 1000.0);
    static const char *const bad_decimals[] = {"nan", "inf", "1e309", "0x10", "-2", "1.5e", " 1"};
    for (size_t i = 0; i < sizeof bad_decimals / sizeof *bad_decimals; i++)
        ck_assert_msg(ps_parse_decimal(bad_decimals[i], &v) == -1, "'%s' taken", bad_decimals[i]);
    ck_assert_int_eq(ps_parse_count("1000000000", &n), 0);
    ck_assert_int_eq(ps_parse_count("1000000001", &n), -1);
    ck_assert_int_eq(ps_parse_count("1e3", &n), -1);
}
END_TEST

/* collective --sizes nan|inf|1e308|0x10 and a size past 1e18, through the binary. */
START_TEST(collective_sizes)
{
    char *dir = make_tmpdir();
    char *cl = src_path(dgx4);
    static const char *const sizes[] = {"nan", "inf", "1e308", "0x10", "2000000T"};
    for (int i = 0; i < 5; i++) {
        const char *args[] = {"collective", "--cluster", cl,       "--gpus",
                              "2",          "--sizes",   sizes[i], NULL};
        run_result r = run_protosim(dir, args);
        char want[160];
        snprintf(want, sizeof want, "--sizes: bad size '%s' (expected a number of bytes up to 1e18",
                 sizes[i]);
        const char *needles[] = {want, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    const char *gpus[] = {"collective", "--cluster", cl, "--gpus", "200000", "--sizes", "1M", NULL};
    run_result r = run_protosim(dir, gpus);
    const char *needles[] = {
        "--gpus: bad GPU count '200000' (expected an integer from 1 to 131072)", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

static Suite *limits_suite(void)
{
    const TTest *const tests[] = {checked_products,
                                  pipeline_virtual_stages_overflow,
                                  plan_gpus_overflow,
                                  sweep_degree_product,
                                  model_dimensions,
                                  micro_batches_limit,
                                  layers_limit,
                                  yaml_depth_limit,
                                  yaml_size_limit,
                                  cluster_size_limits,
                                  sweep_limits,
                                  pipeline_units_limit,
                                  rank_units_limit,
                                  merge_input_limit,
                                  duplicate_children,
                                  vocab_parallel_on_layers,
                                  device_numbers_are_plain,
                                  strict_numbers,
                                  collective_sizes,
                                  NULL};
    return suite_of("limits", "limits", 120, tests);
}

int main(void)
{
    return suite_run(limits_suite());
}
