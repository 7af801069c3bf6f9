/* test_strategy.c: unit tests of the strategy parser and validator (strategies/strategy.c).
 * Bundled examples must load; every bad fixture in tests/data/strategy must point at its fault. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/vocab.h"
#include "../strategies/strategy.h"
#include "suite_util.h"

static void example_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/strategies/examples/%s", ps_data_dir(), name);
}

static void fixture_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/tests/data/strategy/%s", ps_data_dir(), name);
}

/* Load a file that must load; fails the test with the printed error otherwise. */
static void load_ok(const char *path, strategy *s)
{
    ps_error err;
    ps_error_clear(&err);
    int rc = strategy_load(path, ps_data_dir(), s, &err);
    if (rc)
        ps_error_print(&err, stderr);
    ck_assert_msg(rc == 0, "%s: %s:%d:%d %s: %s", path, err.file, err.line, err.column, err.field,
                  err.message);
}

/* ---- the bundled examples ---- */

typedef struct example_case {
    const char *file;
    int tp, pp, dp, global, micro, gpus, sp;
    pipeline_schedule schedule;
    recompute_mode recompute;
    precision_t precision;
} example_case;

static const example_case examples[] = {
    {"gpt3-1.3b-dp2-tp2.yaml", 2, 1, 2, 16, 2, 4, 1, SCHED_1F1B, RECOMPUTE_SELECTIVE, PREC_BF16},
    {"gpt3-1.3b-pp2-dp2.yaml", 1, 2, 2, 32, 2, 4, 0, SCHED_1F1B, RECOMPUTE_NONE, PREC_BF16},
    {"gpt3-175b-64gpu.yaml", 8, 8, 1, 64, 1, 64, 1, SCHED_1F1B, RECOMPUTE_SELECTIVE, PREC_BF16},
    {"gpt3-175b-1024gpu.yaml", 8, 16, 8, 1536, 1, 1024, 1, SCHED_1F1B, RECOMPUTE_SELECTIVE,
     PREC_BF16},
    {"bert-large-dp8.yaml", 1, 1, 8, 256, 32, 8, 0, SCHED_1F1B, RECOMPUTE_NONE, PREC_FP16},
    {"inline-gpt-small-tp2-dp2.yaml", 2, 1, 2, 32, 4, 4, 0, SCHED_1F1B, RECOMPUTE_NONE, PREC_BF16},
    {"llama3-8b-dgx-h100-tp8.yaml", 8, 1, 1, 16, 1, 8, 1, SCHED_1F1B, RECOMPUTE_SELECTIVE,
     PREC_BF16},
    {"mpt-7b-dgx-h100-dp8.yaml", 1, 1, 8, 256, 8, 8, 0, SCHED_1F1B, RECOMPUTE_FULL, PREC_BF16},
    /* context 2: 1 x 2 x 1 x 4 = 8 GPUs */
    {"llama3-8b-dgx-h100-cp2.yaml", 1, 1, 4, 128, 1, 8, 0, SCHED_1F1B, RECOMPUTE_NONE, PREC_BF16},
    {"llama3-70b-64gpu-fsdp-tp.yaml", 8, 1, 8, 64, 1, 64, 1, SCHED_1F1B, RECOMPUTE_FULL, PREC_BF16},
    {"mixtral-8x7b-dgx-h100-ep8.yaml", 1, 1, 8, 64, 1, 8, 0, SCHED_1F1B, RECOMPUTE_FULL, PREC_BF16},
    /* fp8 is bf16 with FP8 GEMMs (strategy.fp8) */
    {"qwen3-235b-a22b-256gpu-ep32.yaml", 2, 2, 64, 2048, 1, 256, 1, SCHED_1F1B, RECOMPUTE_FULL,
     PREC_BF16},
};

START_TEST(test_example_loads)
{
    const example_case *e = &examples[_i];
    char path[1024];
    example_path(path, sizeof path, e->file);
    strategy s;
    load_ok(path, &s);
    ck_assert_int_eq(s.tp, e->tp);
    ck_assert_int_eq(s.pp, e->pp);
    ck_assert_int_eq(s.dp, e->dp);
    ck_assert_int_eq(s.global_batch, e->global);
    ck_assert_int_eq(s.micro_batch, e->micro);
    ck_assert_int_eq(s.sequence_parallel, e->sp);
    ck_assert_int_eq(s.schedule, e->schedule);
    ck_assert_int_eq(s.recompute, e->recompute);
    ck_assert_int_eq(s.precision, e->precision);
    ck_assert_int_eq(strategy_micro_batches(&s), e->global / (e->micro * e->dp));
    ck_assert(s.model.layers > 0 && s.model.heads > 0);

    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_check_gpus(&s, e->gpus, &err), 0);
    strategy_free(&s);
}
END_TEST

START_TEST(test_example_models)
{
    char path[1024];
    strategy s;
    example_path(path, sizeof path, "gpt3-175b-64gpu.yaml");
    load_ok(path, &s);
    ck_assert_str_eq(s.model.name, "gpt3-175b");
    ck_assert_int_eq(s.model.layers, 96);
    ck_assert_int_eq(s.n_overrides, 2);
    ck_assert_str_eq(s.overrides[0].path, "layers.0-3");
    ck_assert_int_eq(s.overrides[0].first_layer, 0);
    ck_assert_int_eq(s.overrides[0].last_layer, 3);
    ck_assert_int_eq(s.overrides[0].loc.line, 15);
    ck_assert_int_eq(s.overrides[0].loc.column, 5);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 3), RECOMPUTE_FULL);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 4), RECOMPUTE_SELECTIVE);
    strategy_free(&s);

    example_path(path, sizeof path, "inline-gpt-small-tp2-dp2.yaml");
    load_ok(path, &s);
    ck_assert_str_eq(s.model.name, "gpt-small");
    ck_assert_int_eq(s.model.layers, 12);
    ck_assert_int_eq(s.model.heads, 12);
    ck_assert_int_eq(s.workload_loc.line, 4);
    strategy_free(&s);
}
END_TEST

/* ---- defaults, locations, accessors ---- */

START_TEST(test_defaults)
{
    char path[1024];
    fixture_path(path, sizeof path, "defaults.yaml");
    strategy s;
    load_ok(path, &s);
    ck_assert_int_eq(s.global_batch, 8);
    ck_assert_int_eq(s.micro_batch, 1);
    ck_assert_int_eq(s.precision, PREC_BF16);
    ck_assert_int_eq(s.optimizer, OPT_ADAM);
    ck_assert_int_eq(s.tp, 1);
    ck_assert_int_eq(s.sequence_parallel, 0);
    ck_assert_int_eq(s.vocab_parallel, 1);
    ck_assert_int_eq(s.pp, 1);
    ck_assert_int_eq(s.schedule, SCHED_1F1B);
    ck_assert_int_eq(s.virtual_stages, 1);
    ck_assert_int_eq(s.dp, 1);
    ck_assert_int_eq(s.zero, 0);
    ck_assert(s.bucket_mb == 25.0);
    ck_assert_int_eq(s.dp_overlap, 1);
    ck_assert_int_eq(s.recompute, RECOMPUTE_NONE);
    ck_assert_int_eq(s.cp, 1);
    ck_assert_int_eq(s.order[0], AXIS_TENSOR);
    ck_assert_int_eq(s.order[1], AXIS_CONTEXT);
    ck_assert_int_eq(s.order[2], AXIS_DATA);
    ck_assert_int_eq(s.order[3], AXIS_PIPELINE);
    ck_assert_int_eq(s.n_overrides, 0);
    ck_assert_ptr_null(s.overrides);
    ck_assert_int_eq(s.model.layers, 24);
    ck_assert_int_eq(s.model.heads, 16);
    ck_assert_int_eq(s.workload_loc.line, 2);
    ck_assert_int_eq(s.workload_loc.column, 11);
    ck_assert_int_eq(s.batch_loc.line, 3);
    ck_assert_int_eq(s.batch_loc.column, 17);
    ck_assert_int_eq(strategy_micro_batches(&s), 8);
    ck_assert_str_eq(strstr(s.file, "defaults.yaml"), "defaults.yaml");
    strategy_free(&s);
    strategy_free(&s); /* freeing twice is harmless */
}
END_TEST

START_TEST(test_all_fields)
{
    char path[1024];
    example_path(path, sizeof path, "gpt3-175b-1024gpu.yaml");
    strategy s;
    load_ok(path, &s);
    ck_assert_int_eq(s.zero, 1);
    ck_assert(s.bucket_mb == 25.0);
    ck_assert_int_eq(s.dp_overlap, 1);
    ck_assert_int_eq(s.virtual_stages, 1);
    ck_assert_int_eq(s.optimizer, OPT_ADAM);
    ck_assert_int_eq(strategy_micro_batches(&s), 192);
    ck_assert_int_eq(s.tp_loc.line, 8);
    ck_assert_int_eq(s.tp_loc.column, 22);
    ck_assert_int_eq(s.pp_loc.line, 9);
    ck_assert_int_eq(s.pp_loc.column, 22);
    ck_assert_int_eq(s.dp_loc.line, 10);
    ck_assert_int_eq(s.dp_loc.column, 22);
    strategy_free(&s);
}
END_TEST

START_TEST(test_recompute_overrides)
{
    char path[1024];
    fixture_path(path, sizeof path, "overrides.yaml");
    strategy s;
    load_ok(path, &s);
    ck_assert_int_eq(s.n_overrides, 4);
    /* layers.0-3 -> full, then layers.2 -> none wins for layer 2 */
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 0), RECOMPUTE_FULL);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 1), RECOMPUTE_FULL);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 2), RECOMPUTE_NONE);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 3), RECOMPUTE_FULL);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 4), RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 23), RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, -1), RECOMPUTE_SELECTIVE);
    ck_assert_int_eq(strategy_recompute_for_layer(&s, 24), RECOMPUTE_FULL); /* head */
    ck_assert_int_eq(s.overrides[2].first_layer, 24);
    ck_assert_int_eq(s.overrides[3].first_layer, -1);
    ck_assert_int_eq(s.overrides[3].last_layer, -1);
    ck_assert_int_eq(s.overrides[1].loc.line, 8);
    ck_assert_int_eq(s.overrides[1].loc.column, 5);
    ck_assert_int_eq(strategy_vocab_parallel_for_layer(&s, -1), 0);
    ck_assert_int_eq(strategy_vocab_parallel_for_layer(&s, 24), 0);
    ck_assert_int_eq(strategy_vocab_parallel_for_layer(&s, 5), 1);
    strategy_free(&s);
    ck_assert_ptr_null(s.overrides);
    ck_assert_int_eq(s.n_overrides, 0);
}
END_TEST

START_TEST(test_check_gpus)
{
    char path[1024];
    fixture_path(path, sizeof path, "gpus_2x2x2.yaml");
    strategy s;
    load_ok(path, &s);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_check_gpus(&s, 8, &err), 0);
    ck_assert_int_eq(err.code, 0);
    ck_assert_int_eq(strategy_check_gpus(&s, 4, &err), PS_EINPUT);
    ck_assert_int_eq(err.code, PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.data.degree");
    ck_assert_int_eq(err.line, 7);
    ck_assert_int_eq(err.column, 22);
    ck_assert_ptr_nonnull(strstr(err.file, "gpus_2x2x2.yaml"));
    ck_assert_msg(strstr(err.message, "= 8") && strstr(err.message, "4 GPUs"),
                  "message should name the product and the GPU count: %s", err.message);
    strategy_free(&s);
}
END_TEST

START_TEST(test_names)
{
    ck_assert_str_eq(schedule_name(SCHED_GPIPE), "gpipe");
    ck_assert_str_eq(schedule_name(SCHED_1F1B), "1f1b");
    ck_assert_str_eq(schedule_name(SCHED_INTERLEAVED), "interleaved");
    ck_assert_str_eq(schedule_name(SCHED_ZBH1), "zb-h1");
    ck_assert_str_eq(schedule_name(SCHED_ZBH2), "zb-h2");
    ck_assert_str_eq(recompute_name(RECOMPUTE_NONE), "none");
    ck_assert_str_eq(recompute_name(RECOMPUTE_SELECTIVE), "selective");
    ck_assert_str_eq(recompute_name(RECOMPUTE_FULL), "full");
    ck_assert_str_eq(recompute_name(RECOMPUTE_OP), "op");
}
END_TEST

/* ---- bad inputs: each must be PS_EINPUT at an exact line, column and field ---- */

typedef struct bad_case {
    const char *file;
    int line, column;
    const char *field;
    const char *needle; /* a piece the message must contain */
} bad_case;

static const bad_case bad[] = {
    {"unknown_key.yaml", 6, 5, "strategy.tensor.degre", "unknown key 'degre'"},
    {"unknown_top_key.yaml", 3, 1, "batch_size", "unknown key 'batch_size'"},
    {"tp_heads.yaml", 5, 20, "strategy.tensor.degree", "16 attention heads"},
    {"pp_layers.yaml", 6, 13, "strategy.pipeline.degree", "24 layers"},
    {"interleaved_layers.yaml", 5, 22, "strategy.pipeline.degree", "= 16"},
    {"batch_div.yaml", 3, 17, "batch.global", "global batch 30"},
    {"bad_enum.yaml", 5, 35, "strategy.pipeline.schedule", "'zigzag'"},
    {"bad_precision.yaml", 4, 12, "precision", "'fp6'"},
    {"bad_order.yaml", 5, 25, "strategy.order[2]", "twice"},
    {"bad_order_axis.yaml", 7, 7, "strategy.order[1]", "'expert'"},
    {"bad_order_short.yaml", 5, 10, "strategy.order", "got 2 items"},
    {"bad_children_path.yaml", 7, 5, "strategy.children.encoder", "unknown module path"},
    {"bad_children_range.yaml", 6, 5, "strategy.children.layers.20-24", "< 24"},
    {"bad_children_key.yaml", 6, 26, "strategy.children.embedding.tensor.degree",
     "unknown key 'degree'"},
    {"malformed.yaml", 4, 9, "", "while parsing a flow mapping"},
    {"missing_workload_name.yaml", 2, 11, "workload", "no-such-model"},
    {"missing_workload.yaml", 2, 1, "workload", "missing required key 'workload'"},
    {"missing_global.yaml", 3, 8, "batch.global", "missing required key 'global'"},
    {"bad_int_float.yaml", 4, 27, "strategy.data.degree", "expected an integer, got '2.5'"},
    {"bad_int_string.yaml", 3, 17, "batch.global", "expected an integer, got 'abc'"},
    {"bad_int_negative.yaml", 5, 20, "strategy.tensor.degree", "at least 1"},
    {"bad_bool.yaml", 5, 42, "strategy.tensor.sequence_parallel", "'maybe'"},
    {"bad_zero.yaml", 5, 27, "strategy.data.zero", "between 0 and 3"},
    {"bad_bucket.yaml", 5, 32, "strategy.data.bucket_mb", "greater than 0"},
    {"bad_shard_divide.yaml", 5, 44, "strategy.data.shard_degree",
     "shard degree 3 does not divide the data-parallel degree 4"},
    {"bad_shard_zero0.yaml", 5, 35, "strategy.data.shard_degree", "needs zero 1, 2 or 3"},
    {"bad_zero_pipeline.yaml", 6, 27, "strategy.data.zero", "zero 2 with a pipeline (degree 2)"},
    {"bad_zero3_gather.yaml", 5, 52, "strategy.data.overlap_param_gather", "with zero 3"},
    {"bad_zero3_no_overlap.yaml", 5, 39, "strategy.data.overlap", "zero 3 without overlap"},
    {"bad_gather_zero0.yaml", 5, 43, "strategy.data.overlap_param_gather", "with zero 0"},
    {"bad_virtual_stages.yaml", 5, 57, "strategy.pipeline.virtual_stages", "interleaved"},
    {"bad_interleaved.yaml", 5, 35, "strategy.pipeline.virtual_stages", ">= 2"},
    {"bad_interleaved_pp1.yaml", 5, 35, "strategy.pipeline.schedule", "pipeline degree >= 2"},
    {"interleaved_micro.yaml", 6, 35, "strategy.pipeline.schedule",
     "micro-batches per data-parallel rank (3) to be a multiple of the pipeline degree (2)"},
    {"two_documents.yaml", 4, 1, "", "a second YAML document"},
    {"bad_master_fp32.yaml", 4, 17, "master_weights", "needs precision bf16 or fp16"},
    {"bad_master_bool.yaml", 3, 17, "master_weights", "true"},
};

START_TEST(test_bad_input)
{
    const bad_case *b = &bad[_i];
    char path[1024];
    fixture_path(path, sizeof path, b->file);
    strategy s;
    ps_error err;
    ps_error_clear(&err);
    int rc = strategy_load(path, ps_data_dir(), &s, &err);
    ck_assert_msg(rc == PS_EINPUT, "%s: expected PS_EINPUT, got %d", b->file, rc);
    ck_assert_int_eq(err.code, PS_EINPUT);
    ck_assert_msg(err.line == b->line && err.column == b->column,
                  "%s: expected %d:%d, got %d:%d (%s)", b->file, b->line, b->column, err.line,
                  err.column, err.message);
    ck_assert_msg(!strcmp(err.field, b->field), "%s: expected field '%s', got '%s' (%s)", b->file,
                  b->field, err.field, err.message);
    ck_assert_msg(strstr(err.message, b->needle), "%s: message '%s' lacks '%s'", b->file,
                  err.message, b->needle);
    ck_assert_msg(!strcmp(err.file, path), "%s: error names file '%s'", b->file, err.file);
    ck_assert_ptr_null(s.overrides); /* a failed load owns nothing */
}
END_TEST

START_TEST(test_missing_file)
{
    strategy s;
    ps_error err;
    ps_error_clear(&err);
    const char *path = "/nonexistent/dir/strategy.yaml";
    ck_assert_int_eq(strategy_load(path, ps_data_dir(), &s, &err), PS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.message, "cannot open"));
    ck_assert_str_eq(err.file, path);
    ck_assert_int_eq(strategy_load(path, ps_data_dir(), &s, NULL), PS_EINPUT); /* NULL err ok */
}
END_TEST

/* A directory is not a strategy file: the loader says so instead of "malformed YAML". */
START_TEST(test_directory_is_refused)
{
    strategy s;
    ps_error err;
    ps_error_clear(&err);
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/data/strategy", ps_data_dir());
    ck_assert_int_eq(strategy_load(path, ps_data_dir(), &s, &err), PS_EINPUT);
    ck_assert_str_eq(err.message, "cannot read strategy file: is a directory");
    ck_assert_str_eq(err.file, path);
}
END_TEST

/* Every enum name table reads back: each name parses to its own value, and nothing else does. */
START_TEST(test_enum_tables_round_trip)
{
    const enum_names tables[] = {schedule_names,      recompute_names, optimizer_names,
                                 parallel_axis_names, precision_names, emb_sharding_names};
    const int counts[] = {8, 4, 4, 4, 6, 5}; /* optimizer: adam sgd none adagrad */
    for (int t = 0; t < 6; t++) {
        ck_assert_int_eq(tables[t].count, counts[t]);
        for (int v = 0; v < tables[t].count; v++)
            ck_assert_int_eq(enum_parse(tables[t], enum_name(tables[t], v)), v);
        ck_assert_int_eq(enum_parse(tables[t], "zigzag"), -1);
        ck_assert_int_eq(enum_parse(tables[t], NULL), -1);
        ck_assert_str_eq(enum_name(tables[t], tables[t].count), "?");
    }
}
END_TEST

/* A strategy changed in memory is checked by the same rules as a loaded one. */
START_TEST(test_validate_in_memory)
{
    char path[1024];
    fixture_path(path, sizeof path, "defaults.yaml");
    strategy s;
    load_ok(path, &s);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(strategy_validate(&s, &err), 0);
    s.schedule = SCHED_INTERLEAVED; /* on one stage */
    s.virtual_stages = 2;
    ck_assert_int_eq(strategy_validate(&s, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, "strategy.pipeline.schedule");
    strategy_free(&s);
}
END_TEST

/* A strategy naming a model file by a path relative to itself finds it there. */
START_TEST(test_workload_relative_path)
{
    char dir[] = "/tmp/protosim_strategy_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char model[PATH_MAX], strat[PATH_MAX];
    snprintf(model, sizeof model, "%s/tiny.yaml", dir);
    snprintf(strat, sizeof strat, "%s/plan.yaml", dir);
    FILE *f = fopen(model, "w");
    ck_assert_ptr_nonnull(f);
    fputs("family: gpt\nlayers: 4\nhidden: 256\nheads: 4\nseq: 128\nvocab: 1024\n", f);
    fclose(f);
    f = fopen(strat, "w");
    ck_assert_ptr_nonnull(f);
    fputs("workload: tiny.yaml\nbatch: {global: 4}\nstrategy: {pipeline: {degree: 2}}\n", f);
    fclose(f);

    strategy s;
    load_ok(strat, &s);
    ck_assert_int_eq(s.model.layers, 4);
    ck_assert_str_eq(s.model.name, "tiny");
    strategy_free(&s);
    remove(strat);
    remove(model);
    remove(dir);
}
END_TEST

static Suite *strategy_suite(void)
{
    Suite *s = suite_create("strategy");
    const TTest *const examples_tests[] = {test_example_models, NULL};
    TCase *tc = suite_add_tests(s, "examples", 0, examples_tests);
    tcase_add_loop_test(tc, test_example_loads, 0, (int)(sizeof examples / sizeof *examples));
    const TTest *const semantics_tests[] = {test_defaults,
                                            test_all_fields,
                                            test_recompute_overrides,
                                            test_check_gpus,
                                            test_names,
                                            test_workload_relative_path,
                                            NULL};
    suite_add_tests(s, "semantics", 0, semantics_tests);
    const TTest *const errors_tests[] = {test_missing_file, test_directory_is_refused,
                                         test_enum_tables_round_trip, test_validate_in_memory,
                                         NULL};
    tc = suite_add_tests(s, "errors", 0, errors_tests);
    tcase_add_loop_test(tc, test_bad_input, 0, (int)(sizeof bad / sizeof *bad));
    return s;
}

int main(void)
{
    return suite_run(strategy_suite());
}
