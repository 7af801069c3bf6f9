/* test_profile.c: the profile database: `protosim profile`'s extraction from small hand-written
 * traces (tests/data/profile, medians and counts by hand), the table file and its errors, and
 * `run --profile`: a table matching one GEMM changes that op and nothing else. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/cost/cost.h"
#include "../sim/engine/htae.h"
#include "../sim/cost/cost_profile.h"
#include "../strategies/compile/compile.h"
#include "../workloads/trace/trace_profile.h"
#include "model_util.h"
#include "sim_util.h"
#include "suite_util.h"

static char path_buf[4][1024];

/* tests/data/profile/NAME (four buffers, used in turn). */
static const char *data(const char *name)
{
    static int k;
    k = (k + 1) % 4;
    snprintf(path_buf[k], sizeof path_buf[k], "%s/tests/data/profile/%s", ps_data_dir(), name);
    return path_buf[k];
}

static const profile_entry *entry(const profile_db *db, const char *op)
{
    for (int i = 0; i < db->n; i++)
        if (!strcmp(db->e[i].op, op))
            return &db->e[i];
    ck_abort_msg("no entry %s", op);
    return NULL;
}

/* ---------------------------------------------------------------- profile */

/* ops.json: aten::linear around aten::addmm, three times, launching kernels of 30, 50, and
 * 25 + 20 us: median 45 us, count 3 for both (the linear holds the addmm's launches); under
 * autograd, aten::mm twice with 70 and 90 us: median (70 + 90) / 2 = 80 us, count 2. A view
 * launches nothing (not recorded); an aten::add without Input Dims launched 12 us (counted as
 * without shapes). Ops that launched: 3 + 3 + 2 + 1 = 9. */
START_TEST(profile_medians_and_counts)
{
    const char *p[] = {data("ops.json")};
    profile_db db;
    trace_profile_info info;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_profile_build(p, 1, NULL, &db, &info, &err) == 0, "%s", err.message);
    ck_assert_str_eq(db.device, "A100-SXM4-80GB");
    ck_assert_int_eq(db.n, 3);
    ck_assert_str_eq(db.e[0].op, "aten::addmm"); /* sorted by op */
    ck_assert_str_eq(db.e[1].op, "aten::linear");
    ck_assert_str_eq(db.e[2].op, "aten::mm");
    const profile_entry *a = entry(&db, "aten::addmm"), *l = entry(&db, "aten::linear"),
                        *m = entry(&db, "aten::mm");
    ck_close(a->seconds, 45e-6, 1e-12);
    ck_assert_int_eq(a->count, 3);
    ck_close(l->seconds, 45e-6, 1e-12);
    ck_assert_int_eq(l->count, 3);
    ck_close(m->seconds, 80e-6, 1e-12);
    ck_assert_int_eq(m->count, 2);
    ck_assert_str_eq(a->dtype, "bf16");
    /* addmm's shapes as recorded: [[2048], [256, 512], [512, 2048], [], []] */
    ck_assert_int_eq(a->n_inputs, 5);
    ck_assert_int_eq(a->ndim[0], 1);
    ck_assert_int_eq(a->ndim[1], 2);
    ck_assert_int_eq(a->ndim[4], 0);
    ck_assert(a->dims[a->first[1]] == 256 && a->dims[a->first[1] + 1] == 512);
    ck_assert(a->dims[a->first[2] + 1] == 2048);
    ck_assert_int_eq(info.ops, 9);
    ck_assert_int_eq(info.without_shapes, 1);
    ck_assert_int_eq(info.occurrences, 8);

    /* written and read back: the same table */
    char tmp[] = "/tmp/protosim_profile_XXXXXX";
    int fd = mkstemp(tmp);
    ck_assert(fd >= 0);
    close(fd);
    ck_assert_msg(profile_db_write(tmp, &db, &err) == 0, "%s", err.message);
    profile_db back;
    ck_assert_msg(profile_db_load(tmp, &back, &err) == 0, "%s", err.message);
    unlink(tmp);
    ck_assert_str_eq(back.device, db.device);
    ck_assert_int_eq(back.n, db.n);
    for (int i = 0; i < db.n; i++) {
        ck_assert_str_eq(back.e[i].op, db.e[i].op);
        ck_assert_str_eq(back.e[i].dtype, db.e[i].dtype);
        ck_close(back.e[i].seconds, db.e[i].seconds, 1e-14); /* cJSON prints 15 digits */
        ck_assert_int_eq(back.e[i].count, db.e[i].count);
        ck_assert_int_eq(back.e[i].n_inputs, db.e[i].n_inputs);
        for (int k = 0; k < db.e[i].n_inputs; k++)
            ck_assert_int_eq(back.e[i].ndim[k], db.e[i].ndim[k]);
    }
    profile_db_free(&back);
    profile_db_free(&db);
}
END_TEST

/* The same trace twice: every count doubles, the medians stay. */
START_TEST(profile_of_two_traces_adds_counts)
{
    const char *p[] = {data("ops.json"), data("ops.json")};
    profile_db db;
    trace_profile_info info;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_profile_build(p, 2, NULL, &db, &info, &err) == 0, "%s", err.message);
    ck_assert_int_eq(entry(&db, "aten::addmm")->count, 6);
    ck_close(entry(&db, "aten::addmm")->seconds, 45e-6, 1e-12);
    ck_assert_int_eq(entry(&db, "aten::mm")->count, 4);
    ck_close(entry(&db, "aten::mm")->seconds, 80e-6, 1e-12);
    profile_db_free(&db);
}
END_TEST

static void expect_build_error(const char *const *p, int n, const char *device, const char *file,
                               const char *field, const char *words)
{
    profile_db db;
    trace_profile_info info;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_profile_build(p, n, device, &db, &info, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.file, file) != NULL, "file %s", err.file);
    ck_assert_str_eq(err.field, field);
    ck_assert_msg(strstr(err.message, words) != NULL, "message: %s", err.message);
}

/* Without deviceProperties the GPU must be named; with it, a named GPU must be the trace's;
 * traces of two GPUs, and traces without recorded shapes, are refused. */
START_TEST(profile_device_and_shape_errors)
{
    const char *nd[] = {data("no_device.json")};
    expect_build_error(nd, 1, NULL, "no_device.json", "deviceProperties", "--device");
    profile_db db;
    trace_profile_info info;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(trace_profile_build(nd, 1, "A100-SXM4-80GB", &db, &info, &err), 0);
    ck_assert_str_eq(db.device, "A100-SXM4-80GB");
    profile_db_free(&db);
    const char *ops[] = {data("ops.json")};
    expect_build_error(ops, 1, "H100-SXM5-80GB", "ops.json", "deviceProperties",
                       "is A100-SXM4-80GB, not H100-SXM5-80GB");
    const char *two[] = {data("ops.json"), data("v100.json")};
    expect_build_error(two, 2, NULL, "v100.json", "deviceProperties", "V100-SXM2-32GB");
    const char *ns[] = {data("no_shapes.json")};
    expect_build_error(ns, 1, NULL, "no_shapes.json", "traceEvents", "record_shapes");
}
END_TEST

/* deviceProperties' names onto devices.yaml's. */
START_TEST(cuda_device_names)
{
    char out[48];
    ck_assert_int_eq(profile_device_of_cuda_name("NVIDIA A100-SXM4-80GB", out, sizeof out), 0);
    ck_assert_str_eq(out, "A100-SXM4-80GB");
    ck_assert_int_eq(profile_device_of_cuda_name("Tesla V100-SXM2-32GB", out, sizeof out), 0);
    ck_assert_str_eq(out, "V100-SXM2-32GB");
    ck_assert_int_eq(profile_device_of_cuda_name("NVIDIA A100-PG509-200", out, sizeof out), 0);
    ck_assert_str_eq(out, "A100-SXM4-40GB");
    ck_assert_int_eq(profile_device_of_cuda_name("NVIDIA H100 80GB HBM3", out, sizeof out), 0);
    ck_assert_str_eq(out, "H100-SXM5-80GB");
    ck_assert_int_eq(profile_device_of_cuda_name("NVIDIA GeForce RTX 4090", out, sizeof out), -1);
}
END_TEST

/* ---------------------------------------------------------------- the table file */

static void expect_load_error(const char *name, const char *field, int line)
{
    profile_db db;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(profile_db_load(data(name), &db, &err), PS_EINPUT);
    ck_assert_msg(strstr(err.file, name) != NULL, "file %s", err.file);
    ck_assert_str_eq(err.field, field);
    ck_assert_int_eq(err.line, line);
}

START_TEST(bad_tables)
{
    expect_load_error("bad_missing.json", "entries[1].seconds", 0);
    expect_load_error("bad_negative.json", "entries[2].seconds", 0);
    expect_load_error("bad_syntax.json", "", 4);
    expect_load_error("bad_count.json", "entries[0].count", 0);
    expect_load_error("bad_key.json", "entries[0].median", 0);
    expect_load_error("bad_shape.json", "entries[0].shapes[1]", 0);
    expect_load_error("bad_device.json", "device", 0);
    profile_db db;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(profile_db_load(data("absent.json"), &db, &err), PS_EINPUT);
}
END_TEST

/* ---------------------------------------------------------------- matching rules */

/* A table of one entry: op, dtype, inputs' shapes (ndim[i] dimensions each, in dims). */
static void one_entry(profile_db *db, const char *device, const char *op, const char *dtype, int n,
                      const int *ndim, const double *dims)
{
    memset(db, 0, sizeof *db);
    snprintf(db->device, sizeof db->device, "%s", device);
    profile_db_add(db, op, dtype, n, ndim, dims, 7e-6, 1);
}

/* Whether the one-entry table matches the forward of a [m x k] . [k x n] GEMM (biased: its
 * parameters k n + n) in bf16 on an A100-SXM4-80GB. */
static int gemm_matches(const char *op, const char *dtype, int n_in, const int *ndim,
                        const double *dims, int biased, const char *device)
{
    static device_spec dev;
    memset(&dev, 0, sizeof dev);
    snprintf(dev.name, sizeof dev.name, "A100-SXM4-80GB");
    dev.peak_flops[PREC_FP32] = 19.5e12;
    dev.peak_flops[PREC_BF16] = 312e12;
    dev.hbm_bw = 2.0e12;
    dev.sms = 108;
    workload_op g = gemm_op(256, 2048, 512);
    g.params = 512.0 * 2048 + (biased ? 2048 : 0);
    workload_model m;
    workload_model_init(&m, FAMILY_GPT, 1, 512, 8, 256, 4096);
    profile_db db;
    one_entry(&db, device, op, dtype, n_in, ndim, dims);
    profile_hit hit;
    int r = profile_match_op(&db, &m, &g, &g, PASS_FWD, PREC_BF16, &dev, 1.0, &hit);
    ck_assert(r ? hit.seconds == 7e-6 : hit.seconds == 1.0);
    profile_db_free(&db);
    return r;
}

/* The forward GEMM rules on Y[256, 2048] = X[256, 512] W[512, 2048]. */
START_TEST(gemm_forms)
{
    const char *A = "A100-SXM4-80GB";
    /* addmm: bias [n] or [1, n], [m, k], [k, n]; a [m, n] input is not a bias */
    int nd_addmm[] = {1, 2, 2, 0, 0};
    double addmm[] = {2048, 256, 512, 512, 2048};
    ck_assert(gemm_matches("aten::addmm", "bf16", 5, nd_addmm, addmm, 1, A));
    ck_assert(!gemm_matches("aten::addmm", "bf16", 5, nd_addmm, addmm, 0, A)); /* no bias */
    int nd_row[] = {2, 2, 2};
    double row[] = {1, 2048, 256, 512, 512, 2048};
    ck_assert(gemm_matches("aten::addmm", "bf16", 3, nd_row, row, 1, A));
    double full[] = {256, 2048, 256, 512, 512, 2048};
    ck_assert(!gemm_matches("aten::addmm", "bf16", 3, nd_row, full, 1, A));
    /* linear on [8, 32, 512] (m = 8 x 32), weight [n, k], bias [n] */
    int nd_lin[] = {3, 2, 1};
    double lin[] = {8, 32, 512, 2048, 512, 2048};
    ck_assert(gemm_matches("aten::linear", "bf16", 3, nd_lin, lin, 1, A));
    ck_assert(!gemm_matches("aten::linear", "bf16", 3, nd_lin, lin, 0, A));
    int nd_lin0[] = {3, 2};
    ck_assert(gemm_matches("aten::linear", "bf16", 2, nd_lin0, lin, 0, A));
    ck_assert(gemm_matches("aten::linear", "bf16", 2, nd_lin0, lin, 1, A)); /* fused bias */
    /* mm, and matmul of [4, 64, 512] by [512, 2048] */
    int nd_mm[] = {2, 2};
    double mm[] = {256, 512, 512, 2048};
    ck_assert(gemm_matches("aten::mm", "bf16", 2, nd_mm, mm, 0, A));
    ck_assert(gemm_matches("aten::mm", "bf16", 2, nd_mm, mm, 1, A));
    int nd_mat[] = {3, 2};
    double mat[] = {4, 64, 512, 512, 2048};
    ck_assert(gemm_matches("aten::matmul", "bf16", 2, nd_mat, mat, 0, A));
    /* transposed shapes, another dtype, another GPU, a batched bmm: no */
    double mmt[] = {512, 256, 256, 2048};
    ck_assert(!gemm_matches("aten::mm", "bf16", 2, nd_mm, mmt, 0, A));
    ck_assert(!gemm_matches("aten::mm", "fp16", 2, nd_mm, mm, 0, A));
    ck_assert(!gemm_matches("aten::mm", "bf16", 2, nd_mm, mm, 0, "A100-SXM4-40GB"));
    int nd_bmm[] = {3, 3};
    double bmm[] = {1, 256, 512, 1, 512, 2048};
    ck_assert(!gemm_matches("aten::bmm", "bf16", 2, nd_bmm, bmm, 0, A));
}
END_TEST

/* ---------------------------------------------------------------- run --profile */

typedef struct plan {
    strategy s;
    cluster c;
    compiled_plan p;
} plan;

/* one-layer.yaml on one A100-SXM4-80GB, compiled with the table (NULL: none). The engine is
 * started and the cluster loaded once per process (fork mode): later plans reuse c. */
static void compile_plan_with(plan *x, const char *strategy_name, const cluster *c,
                              const profile_db *db)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(strategy_load(data(strategy_name), ps_data_dir(), &x->s, &err) == 0, "%s",
                  err.message);
    compile_options o;
    compile_default_options(&o);
    o.profile = db;
    ck_assert_msg(compile_plan(&x->s, c, &o, &x->p, &err) == 0, "%s", err.message);
}

static void compile_with(plan *x, const cluster *c, const profile_db *db)
{
    compile_plan_with(x, "one-layer.yaml", c, db);
}

static void plan_free(plan *x)
{
    compiled_plan_free(&x->p);
    strategy_free(&x->s);
}

static void load_table(const char *name, profile_db *db)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(profile_db_load(data(name), db, &err) == 0, "%s", err.message);
}

/* The GPT layer's fc1 (256 tokens x 512 -> 2048, with a bias) as the op graph has it. */
static workload_op fc1_op(const plan *x)
{
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&x->s.model, x->s.micro_batch, PREC_BF16, &wg, &err), 0);
    workload_op op = *find_op(&wg, "layers.0.mlp.fc1");
    workload_graph_free(&wg);
    ck_assert(op.n == 4.0 * op.k);
    return op;
}

/* Every task of a and b alike, but compute tasks labelled `changed` (NULL: none), whose
 * seconds differ by delta, and (changed2, delta2) likewise. Returns how many changed. */
static int compare_tasks2(const compiled_plan *a, const compiled_plan *b, const char *changed,
                          double delta, const char *changed2, double delta2)
{
    const exec_graph *ga = a->graph, *gb = b->graph;
    ck_assert_int_eq(ga->n_tasks, gb->n_tasks);
    int n = 0;
    for (uint32_t i = 0; i < ga->n_tasks; i++) {
        const graph_task *x = &ga->tasks[i], *y = &gb->tasks[i];
        ck_assert(x->kind == y->kind && x->rank == y->rank && x->label == y->label);
        ck_assert(x->host_s == y->host_s && x->bytes == y->bytes);
        const char *l = ga->labels[x->label];
        if (x->kind == TASK_COMPUTE &&
            ((changed && !strcmp(l, changed)) || (changed2 && !strcmp(l, changed2)))) {
            ck_close(y->seconds - x->seconds, !strcmp(l, changed ? changed : "") ? delta : delta2,
                     1e-9);
            n++;
        } else {
            ck_assert_msg(x->seconds == y->seconds && x->span == y->span, "task %u (%s) changed", i,
                          l);
        }
    }
    return n;
}

static int compare_tasks(const compiled_plan *a, const compiled_plan *b, const char *changed,
                         double delta)
{
    return compare_tasks2(a, b, changed, delta, NULL, 0);
}

/* The op pass of `name` (layers.0.attn.core, ...) in the record; fails if absent. */
static const profile_use *use_of(const profile_stats *st, const char *name, int pass)
{
    for (int i = 0; i < st->n; i++)
        if (!strcmp(st->use[i].name, name) && st->use[i].pass == pass && !st->use[i].replay)
            return &st->use[i];
    ck_abort_msg("no %s", name);
    return NULL;
}

/* one_gemm.json's one entry: fc1's forward addmm, 20 ms (long enough to outlast the host's
 * launches: this small plan is host-bound with the model's 20 us). */
#define ONE_GEMM_S 20e-3

/* A table whose one entry is fc1's forward addmm (20 ms): that op pass uses 20 ms, every other
 * keeps the model's time; the forward task of each of the 2 micro-batches grows by 20 ms minus
 * the model's fc1 time, nothing else changes. */
START_TEST(one_gemm_changes_that_op_only)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("one_gemm.json", &db);
    plan base, with;
    compile_with(&base, &c, NULL);
    compile_with(&with, &c, &db);
    ck_assert_ptr_null(base.p.profile);
    const profile_stats *st = with.p.profile;
    ck_assert_ptr_nonnull(st);
    ck_assert(st->device_in_cluster);
    workload_op fc1 = fc1_op(&with);
    double model = cost_op_kernel_seconds(&fc1, PASS_FWD, PREC_BF16, c.device[0]);
    int matched = 0;
    for (int i = 0; i < st->n; i++) {
        const profile_use *u = &st->use[i];
        if (u->matched) {
            matched++;
            ck_assert_str_eq(u->name, "layers.0.mlp.fc1");
            ck_assert_int_eq(u->pass, PASS_FWD);
            ck_assert_str_eq(u->entry_op, "aten::addmm");
            ck_assert(u->used == ONE_GEMM_S && u->measured == ONE_GEMM_S);
            ck_close(u->model, model, 1e-12);
        } else {
            ck_assert_msg(u->used == u->model, "%s changed", u->name);
        }
    }
    ck_assert_int_eq(matched, 1);
    ck_assert_int_eq(
        compare_tasks(&base.p, &with.p, "fwd embedding + layer 0 + LM head", ONE_GEMM_S - model),
        2);
    plan_free(&base);
    plan_free(&with);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* The host issues every kernel in turn (its launch cost each), the GPU runs a kernel once
 * launched and free (flow_op: chunk.c's flow shop, as tests/test_compile.c works it out), fc1's
 * forward kernel at `fc1_fwd` seconds: the two micro-batches, then the optimizer step. */
static double iteration_by_hand(const plan *x, const device_spec *dev, double fc1_fwd)
{
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&x->s.model, x->s.micro_batch, PREC_BF16, &wg, &err), 0);
    kernel_flow f = {0, 0};
    for (int mb = 0; mb < x->p.micro_batches; mb++) {
        for (int i = 0; i < wg.n_ops; i++) {
            const workload_op *op = &wg.ops[i];
            double t = !strcmp(op->name, "layers.0.mlp.fc1")
                           ? fc1_fwd
                           : cost_op_kernel_seconds(op, PASS_FWD, PREC_BF16, dev);
            flow_op(&f, op, PASS_FWD, t);
        }
        for (int i = wg.n_ops - 1; i >= 0; i--)
            flow_op(&f, &wg.ops[i], PASS_BWD,
                    cost_op_kernel_seconds(&wg.ops[i], PASS_BWD, PREC_BF16, dev));
    }
    workload_graph_free(&wg);
    return f.gpu + cost_optimizer_seconds(x->p.params_total, 1, PREC_BF16, 1, dev) +
           cost_iteration_overhead_seconds();
}

/* gpu-bound.yaml (one GPT layer, hidden 4096, 4 x 2048 tokens, 2 micro-batches): every kernel
 * takes longer than its 60 us launch, so after the first launch the GPU never waits and the
 * iteration is the first launch + the sum of the kernels + the optimizer. A table giving fc1's
 * forward (8192 x 4096 . 4096 x 16384, bias) 50 ms then lengthens the iteration by exactly
 * 2 x (50 ms - the model's fc1 time): the difference times the times it runs. */
START_TEST(gpu_bound_iteration_moves_by_the_difference)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("gpu_bound_fc1.json", &db);
    plan x;
    compile_plan_with(&x, "gpu-bound.yaml", &c, &db);
    ck_assert_int_eq(x.p.micro_batches, 2);
    const device_spec *dev = c.device[0];
    workload_op fc1 = fc1_op(&x);
    ck_assert(fc1.m == 8192 && fc1.n == 16384 && fc1.k == 4096);
    double model = cost_op_kernel_seconds(&fc1, PASS_FWD, PREC_BF16, dev);
    ck_assert(model < 50e-3);
    /* the plan is GPU-bound: every op's kernels outlast their launches */
    workload_graph wg;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(workload_build(&x.s.model, x.s.micro_batch, PREC_BF16, &wg, &err), 0);
    double sum = 0;
    for (int i = 0; i < wg.n_ops; i++)
        for (int pass = PASS_FWD; pass <= PASS_BWD; pass++) {
            const workload_op *op = &wg.ops[i];
            double g = cost_op_kernel_seconds(op, pass, PREC_BF16, dev);
            int k = cost_op_kernels(op, pass) > 0 ? cost_op_kernels(op, pass) : 1;
            ck_assert_msg(g / k > cost_op_launch_seconds(op, pass) / k, "%s is host-bound",
                          op->name);
            sum += g;
        }
    const workload_op *first = &wg.ops[0];
    double first_launch =
        cost_op_launch_seconds(first, PASS_FWD) /
        (cost_op_kernels(first, PASS_FWD) > 0 ? cost_op_kernels(first, PASS_FWD) : 1);
    workload_graph_free(&wg);
    double opt = cost_optimizer_seconds(x.p.params_total, 1, PREC_BF16, 1, dev) +
                 cost_iteration_overhead_seconds();
    double without = first_launch + 2 * sum + opt;
    ck_close(iteration_by_hand(&x, dev, model), without, 1e-12);
    htae_result r;
    ck_assert_msg(htae_run(x.p.graph, &c, NULL, &r, &err) == 0, "%s", err.message);
    ck_close(r.makespan, without + 2 * (50e-3 - model), 1e-9);
    htae_result_free(&r);
    plan_free(&x);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* The simulated iteration with the one-GEMM table is the flow shop with fc1's forward at the
 * table's 20 ms, twice (once per micro-batch); with the model's fc1 it would be shorter by more
 * than 2 x (20 ms - 5 ms): the host issues a micro-batch in about 5 ms. */
START_TEST(one_gemm_iteration_by_hand)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("one_gemm.json", &db);
    plan with;
    compile_with(&with, &c, &db);
    htae_result r;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(htae_run(with.p.graph, &c, NULL, &r, &err) == 0, "%s", err.message);
    ck_close(r.makespan, iteration_by_hand(&with, c.device[0], ONE_GEMM_S), 1e-9);
    workload_op fc1 = fc1_op(&with);
    double model = cost_op_kernel_seconds(&fc1, PASS_FWD, PREC_BF16, c.device[0]);
    ck_assert(r.makespan - iteration_by_hand(&with, c.device[0], model) > 2 * (20e-3 - 5e-3));
    htae_result_free(&r);
    plan_free(&with);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* Entries of other shapes (fc1 on 128 tokens), another dtype (fc1 in fp32), a biased addmm of
 * the shape of the LM head (256 x 512 . 512 x 4096), which has no bias: nothing matches and
 * the execution graph is the one without a table. */
START_TEST(unmatched_table_changes_nothing)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("unmatched.json", &db);
    plan base, with;
    compile_with(&base, &c, NULL);
    compile_with(&with, &c, &db);
    for (int i = 0; i < with.p.profile->n; i++)
        ck_assert_int_eq(with.p.profile->use[i].matched, 0);
    ck_assert_int_eq(compare_tasks(&base.p, &with.p, NULL, 0), 0);
    plan_free(&base);
    plan_free(&with);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* The one-GEMM table for an H100 on an A100 cluster: not used. */
START_TEST(device_mismatch_matches_nothing)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("other_device.json", &db);
    plan base, with;
    compile_with(&base, &c, NULL);
    compile_with(&with, &c, &db);
    ck_assert(!with.p.profile->device_in_cluster);
    for (int i = 0; i < with.p.profile->n; i++)
        ck_assert_int_eq(with.p.profile->use[i].matched, 0);
    ck_assert_int_eq(compare_tasks(&base.p, &with.p, NULL, 0), 0);
    plan_free(&base);
    plan_free(&with);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* The table `profile` builds from ops.json: fc1's forward is its addmm (45 us); fc1's backward
 * input gradient dX = dY . W^T, [256 x 2048] . [2048 x 512], is its aten::mm (80 us), the
 * weight gradient [512 x 256] . [256 x 2048] is not in the table: the model's GEMM kernel plus
 * one kernel's GPU overhead. That mm is also fc2's forward product (256 x 2048 . 2048 x 512):
 * fc2 has a bias but no biased entry, so its plain GEMM is taken (80 us). Nothing else
 * changes: 45 + 80 + 80 = 205 us measured. */
START_TEST(table_from_trace_changes_matched_ops_only)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    const char *p[] = {data("ops.json")};
    profile_db db;
    trace_profile_info info;
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(trace_profile_build(p, 1, NULL, &db, &info, &err) == 0, "%s", err.message);
    plan with;
    compile_with(&with, &c, &db);
    const device_spec *dev = c.device[0];
    double dw = cost_gemm_kernel_seconds(1, 512, 2048, 256, PREC_BF16, dev) +
                cost_kernel_gpu_overhead_seconds();
    const profile_stats *st = with.p.profile;
    int matched = 0;
    for (int i = 0; i < st->n; i++) {
        const profile_use *u = &st->use[i];
        matched += u->matched > 0;
        if (!u->matched)
            ck_assert_msg(u->used == u->model, "%s changed", u->name);
    }
    ck_assert_int_eq(matched, 3);
    const profile_use *f1 = use_of(st, "layers.0.mlp.fc1", PASS_FWD);
    const profile_use *b1 = use_of(st, "layers.0.mlp.fc1", PASS_BWD);
    const profile_use *f2 = use_of(st, "layers.0.mlp.fc2", PASS_FWD);
    ck_assert_str_eq(f1->entry_op, "aten::addmm");
    ck_close(f1->used, 45e-6, 1e-12);
    ck_assert(b1->parts == 2 && b1->matched == 1);
    ck_assert_str_eq(b1->entry_op, "aten::mm");
    ck_close(b1->measured, 80e-6, 1e-12);
    ck_close(b1->used, 80e-6 + dw, 1e-12);
    ck_assert_str_eq(f2->entry_op, "aten::mm");
    ck_close(f2->used, 80e-6, 1e-12);
    ck_assert_int_eq(use_of(st, "layers.0.mlp.fc2", PASS_BWD)->matched, 0);
    /* the execution graph: the forward task of each micro-batch by fc1's and fc2's forward
     * changes, the backward one by fc1's backward change, every other task as without it */
    plan base;
    compile_with(&base, &c, NULL);
    double df = f1->used - f1->model + f2->used - f2->model;
    double db_ = 80e-6 + dw - b1->model;
    ck_assert_int_eq(compare_tasks2(&base.p, &with.p, "fwd embedding + layer 0 + LM head", df,
                                    "bwd embedding + layer 0 + LM head", db_),
                     4);
    workload_op fc1 = fc1_op(&with);
    ck_close(f1->model, cost_op_kernel_seconds(&fc1, PASS_FWD, PREC_BF16, dev), 1e-12);
    ck_close(b1->model, cost_op_kernel_seconds(&fc1, PASS_BWD, PREC_BF16, dev), 1e-12);
    plan_free(&base);
    profile_summary s;
    profile_summarize(st, &s);
    ck_assert_int_eq(s.matched, 3);
    int partly = 0;
    for (int i = 0; i < s.n; i++)
        partly += s.g[i].partly;
    ck_assert_int_eq(partly, 1);
    ck_close(s.measured, 205e-6, 1e-12);
    profile_summary_free(&s);
    plan_free(&with);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* attention_norm.json on the flash GPT layer: the core's forward is the flash SDPA entry on
 * [1, 8, 256, 64] (11 us: 2 occurrences beat the efficient one on [2, 4, 256, 64], also 8
 * heads x batch), its backward 33 us; ln1, ln2 and final_layernorm (256 x 512) 5 us forward, 7
 * us backward: 8 op passes matched, 11 + 33 + 3 x (5 + 7) = 80 us measured. */
START_TEST(attention_and_layernorm_match)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("attention_norm.json", &db);
    plan x;
    compile_plan_with(&x, "one-layer-flash.yaml", &c, &db);
    const profile_stats *st = x.p.profile;
    ck_assert(use_of(st, "layers.0.attn.core", PASS_FWD)->used == 11e-6);
    ck_assert_str_eq(use_of(st, "layers.0.attn.core", PASS_FWD)->entry_op,
                     "aten::_scaled_dot_product_flash_attention");
    ck_assert(use_of(st, "layers.0.attn.core", PASS_BWD)->used == 33e-6);
    const char *norms[] = {"layers.0.ln1", "layers.0.ln2", "final_layernorm"};
    for (int i = 0; i < 3; i++) {
        ck_assert(use_of(st, norms[i], PASS_FWD)->used == 5e-6);
        ck_assert(use_of(st, norms[i], PASS_BWD)->used == 7e-6);
    }
    profile_summary s;
    profile_summarize(st, &s);
    ck_assert_int_eq(s.matched, 8);
    ck_close(s.measured, 80e-6, 1e-12);
    profile_summary_free(&s);
    plan_free(&x);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

/* The same table on a Llama layer with 2 K/V heads for 8 query heads: RMSNorm and grouped-query
 * attention are not matched (the GQA entry's shapes are not taken for the op's either); its
 * embedding, one lookup of a 4096 x 512 table by 256 tokens, is (forward only: 3 us). On the
 * GPT layer (learned positions, dropout) the same entry is not. */
START_TEST(rmsnorm_and_gqa_not_matched)
{
    cluster c;
    sim_load("tests/data/htae/one.xml", &c);
    profile_db db;
    load_table("attention_norm.json", &db);
    plan x;
    compile_plan_with(&x, "one-layer-gqa.yaml", &c, &db);
    const profile_stats *st = x.p.profile;
    for (int i = 0; i < st->n; i++)
        if (strcmp(st->use[i].name, "embedding") || st->use[i].pass != PASS_FWD)
            ck_assert_msg(st->use[i].matched == 0, "%s matched", st->use[i].name);
    ck_assert(use_of(st, "embedding", PASS_FWD)->used == 3e-6);
    ck_assert_str_eq(use_of(st, "embedding", PASS_FWD)->entry_op, "aten::embedding");
    plan_free(&x);
    plan gpt;
    compile_plan_with(&gpt, "one-layer-flash.yaml", &c, &db);
    ck_assert_int_eq(use_of(gpt.p.profile, "embedding", PASS_FWD)->matched, 0);
    plan_free(&gpt);
    profile_db_free(&db);
    cluster_free(&c);
}
END_TEST

static Suite *profile_suite(void)
{
    const TTest *const tests[] = {profile_medians_and_counts,
                                  profile_of_two_traces_adds_counts,
                                  profile_device_and_shape_errors,
                                  cuda_device_names,
                                  bad_tables,
                                  gemm_forms,
                                  one_gemm_changes_that_op_only,
                                  one_gemm_iteration_by_hand,
                                  gpu_bound_iteration_moves_by_the_difference,
                                  unmatched_table_changes_nothing,
                                  device_mismatch_matches_nothing,
                                  table_from_trace_changes_matched_ops_only,
                                  attention_and_layernorm_match,
                                  rmsnorm_and_gqa_not_matched,
                                  NULL};
    return suite_of("profile", "profile", 60, tests);
}

int main(void)
{
    return suite_run(profile_suite());
}
