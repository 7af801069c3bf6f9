/* cmd_run.c: `protosim run`: its arguments, then the pipeline load strategy -> load cluster ->
 * compile -> simulate -> report, and the exit code (2: does not fit, with --strict-memory). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "cli.h"
#include "output.h"
#include "sweep_run.h"

static int run_main(int argc, char **argv);

typedef struct run_args {
    const char *strategy, *cluster, *json, *trace, *csv, *algo, *profile, *chakra, *gpus;
    htae_options hopt;
    out_trace_filter trace_filter;
    int no_trace_links, strict, quiet;
    compile_options copt;
} run_args;

/* --trace-ranks: the list's syntax now, its ranks against the plan's GPUs once compiled. */
static int parse_trace_ranks(const cli_command *c, const char *v, void *field)
{
    ps_error err;
    ps_error_clear(&err);
    if (out_trace_ranks(v, -1, NULL, &err))
        return cli_usage_error(c, "%s", err.message);
    *(const char **)field = v;
    return 0;
}

static const cli_option run_options[] = {
    {.name = "--cluster", .kind = CLI_STRING, .offset = offsetof(run_args, cluster)},
    {.name = "--json", .kind = CLI_STRING, .offset = offsetof(run_args, json)},
    {.name = "--trace", .kind = CLI_STRING, .offset = offsetof(run_args, trace)},
    {.name = "--trace-ranks",
     .kind = CLI_CUSTOM,
     .offset = offsetof(run_args, trace_filter.ranks),
     .parse = parse_trace_ranks},
    {.name = "--trace-steps",
     .kind = CLI_INT,
     .offset = offsetof(run_args, trace_filter.steps),
     .has_min = 1,
     .min = 1,
     .bad = "micro-batch count"},
    {.name = "--no-trace-links",
     .kind = CLI_FLAG,
     .offset = offsetof(run_args, no_trace_links),
     .set = 1},
    {.name = "--csv", .kind = CLI_STRING, .offset = offsetof(run_args, csv)},
    {.name = "--nccl-algo", .kind = CLI_STRING, .offset = offsetof(run_args, algo)},
    {.name = "--no-fold", .kind = CLI_FLAG, .offset = offsetof(run_args, copt.fold_data_parallel)},
    {.name = "--profile", .kind = CLI_STRING, .offset = offsetof(run_args, profile)},
    {.name = "--chakra", .kind = CLI_STRING, .offset = offsetof(run_args, chakra)},
    {.name = "--gpus", .kind = CLI_STRING, .offset = offsetof(run_args, gpus)},
    {.name = "--strict-memory", .kind = CLI_FLAG, .offset = offsetof(run_args, strict), .set = 1},
    {.name = "--quiet",
     .alias = "-q",
     .kind = CLI_FLAG,
     .offset = offsetof(run_args, quiet),
     .set = 1},
    {0},
};

const cli_command cli_run = {
    "run",
    "  protosim run STRATEGY.yaml --cluster CLUSTER [--json OUT.json]\n"
    "               [--trace OUT.trace.json [--trace-ranks SPEC] [--trace-steps N]\n"
    "                [--no-trace-links]]\n"
    "               [--csv OUT.csv] [--nccl-algo ALGO] [--strict-memory] [--no-fold]\n"
    "               [--profile OPS.json] [--chakra DIR] [--gpus LIST] [--quiet]\n",
    "simulates one training iteration of the plan STRATEGY.yaml on the cluster and prints a\n"
    "summary (iteration time, throughput, MFU, memory, time breakdown, top items).\n"
    "options:\n"
    "  --cluster CLUSTER       the cluster: protosim cluster's description or a SimGrid XML\n"
    "                          platform (required)\n"
    "  --json OUT.json         write the report as JSON\n"
    "  --trace OUT.trace.json  write a Chrome trace (open it at ui.perfetto.dev), with flow\n"
    "                          arrows from each pipeline send to the task that consumes it\n"
    "                          and a counter track of GB/s per link that carried traffic\n"
    "                          (links alike share a track); a GPU folding simulated once\n"
    "                          draws its stage's tasks, marked copy_of\n"
    "  --trace-ranks SPEC      trace only these GPUs: ranks and inclusive ranges separated by\n"
    "                          commas, e.g. 0-7 or 0,3,8-11 (default: every GPU); link\n"
    "                          counters: every link with every GPU traced, else the links\n"
    "                          between a traced GPU and the GPUs it shares a collective or\n"
    "                          a transfer with\n"
    "  --trace-steps N         trace only the tasks of the first N micro-batches, and those of\n"
    "                          none (optimizer, gradient collectives) (default: all); link\n"
    "                          counters cover the whole iteration\n"
    "  --no-trace-links        no link counters in the trace (they take memory while\n"
    "                          simulating: 24 bytes per flow and counted link)\n"
    "  --csv OUT.csv           write the plan as one CSV row (the columns of sweep --csv)\n"
    "  --nccl-algo ALGO        all-reduce algorithm, as NCCL_ALGO: auto (default: chosen per\n"
    "                          all-reduce as NCCL's tuner does), ring, tree or nvls; an error\n"
    "                          if one of the plan's groups cannot run it\n"
    "  --strict-memory         exit 2 when the plan does not fit in GPU memory\n"
    "  --no-fold               simulate every data-parallel replica, tensor-parallel\n"
    "                          peer and context rank (default: fold those that provably\n"
    "                          behave alike)\n"
    "  --profile OPS.json      measured op times (`protosim profile`): op passes of the plan\n"
    "                          that match an entry on a GPU of its device take its time\n"
    "  --chakra DIR            write the execution graph of every GPU as Chakra execution\n"
    "                          traces (DIR/protosim.RANK.et, DIR/comm_group.json) for\n"
    "                          ASTRA-sim and other Chakra tools; simulates every GPU\n"
    "                          (as --no-fold) and every micro-batch\n"
    "  --gpus LIST             the cluster's GPUs the plan runs on, in rank order: ranks and\n"
    "                          inclusive ranges, e.g. 0-7 or 8-15,0-7 (default: all of\n"
    "                          them, or the first N when the plan takes N of more)\n"
    "  --quiet, -q             no summary on stdout\n"
    "  --help, -h              this help\n"
    "exit codes: 0 ok, 1 bad input, 2 plan does not fit (with --strict-memory),\n"
    "            3 internal error\n",
    run_main,
    run_options,
};

/* 0 parsed, CLI_HELP_SHOWN, or PS_EINPUT after a usage error. */
static int parse_run(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    compile_default_options(&a->copt);
    int rc = cli_parse_options(&cli_run, run_options, argc, argv, a, &a->strategy, 1, NULL);
    if (rc)
        return rc;
    if (!a->strategy)
        return cli_usage_error(&cli_run, "run needs a STRATEGY.yaml");
    if (!a->cluster)
        return cli_usage_error(&cli_run, "run needs --cluster CLUSTER");
    htae_default_options(&a->hopt);
    if (a->chakra) /* every GPU's graph: none folded into another's */
        a->copt.fold_data_parallel = 0;
    if (a->algo && cli_parse_algo(&cli_run, "--nccl-algo", a->algo, &a->hopt.algo))
        return PS_EINPUT;
    if (!a->trace && (a->trace_filter.ranks || a->trace_filter.steps || a->no_trace_links))
        return cli_usage_error(&cli_run, "%s needs --trace OUT.trace.json",
                               a->trace_filter.ranks   ? "--trace-ranks"
                               : a->trace_filter.steps ? "--trace-steps"
                                                       : "--no-trace-links");
    return 0;
}

/* The plan as the one row of a sweep table, written by the sweep's CSV writer. */
static int run_csv(const char *path, const compiled_plan *plan, const htae_result *res,
                   const report_summary *sum, ps_error *err)
{
    sweep_plan p;
    memset(&p, 0, sizeof p);
    p.desc = plan->plan;
    p.gpus = plan->gpus;
    p.rank = 1;
    sweep_plan_record(&p, sum, res);
    if (sum->fig.peak_memory_bytes > sum->fig.memory_capacity_bytes)
        p.status = SWEEP_PLAN_OOM; /* simulated all the same: its figures stay in the row */
    int order = 0;
    sweep_table t;
    memset(&t, 0, sizeof t);
    t.plans = &p;
    t.n = 1;
    t.order = &order;
    return out_sweep_csv(path, &t, err);
}

/* A plan that does not fit in GPU memory says so first, on stderr (with --quiet too): the
 * tightest GPU, by how much, what most of it is, how many GPUs are over; the figures that follow
 * are as if memory were unlimited. 1 if it does not fit. */
static int memory_verdict(const run_outcome *run)
{
    const compiled_plan *p = &run->plan;
    const report_summary *sum = &run->sum;
    if (sum->fig.peak_memory_bytes <= sum->fig.memory_capacity_bytes)
        return 0;
    int r = sum->peak_memory_rank, over = compiled_plan_gpus_over_memory(p);
    const memory_estimate *m = &p->memory[r];
    const char *names[5] = {"weights", "gradients", "optimizer state", "activations", "buffers"};
    double parts[5] = {m->weights, m->gradients, m->optimizer, m->activations, m->buffers};
    int big = 0;
    for (int k = 1; k < 5; k++)
        if (parts[k] > parts[big])
            big = k;
    const double GiB = 1073741824.0;
    fprintf(stderr,
            "protosim: the plan does not fit in GPU memory: GPU %d needs %.2f GiB of its %.2f "
            "GiB (%.2f GiB over; %d of %d GPUs over), most of it %s (%.2f GiB; weights %.2f, "
            "gradients %.2f, optimizer state %.2f, activations %.2f, buffers %.2f GiB). The "
            "report's figures are as if memory were unlimited.\n",
            r, sum->fig.peak_memory_bytes / GiB, sum->fig.memory_capacity_bytes / GiB,
            (sum->fig.peak_memory_bytes - sum->fig.memory_capacity_bytes) / GiB, over, p->gpus,
            names[big], parts[big] / GiB, m->weights / GiB, m->gradients / GiB, m->optimizer / GiB,
            m->activations / GiB, m->buffers / GiB);
    return 1;
}

/* Summary, report files and the memory verdict of a simulated plan; load_s: host seconds of
 * loading the strategy and the cluster. */
static int run_report(const run_args *a, const cluster *c, const run_outcome *run, double load_s,
                      ps_error *err)
{
    const compiled_plan *plan = &run->plan;
    const htae_result *res = &run->res;
    const report_summary *sum = &run->sum;
    int rc = 0;
    int oom = memory_verdict(run);
    if (!a->quiet)
        out_run_text(stdout, c, run);
    if (a->json && out_run_json(a->json, c, run, load_s, err))
        rc = err->code;
    else if (a->trace && out_run_trace(a->trace, c, plan, res, &a->trace_filter, err))
        rc = err->code;
    else if (a->csv && run_csv(a->csv, plan, res, sum, err))
        rc = err->code;
    else if (a->chakra && out_run_chakra(a->chakra, plan, err))
        rc = err->code;
    if (rc)
        return rc;
    return a->strict && oom ? PS_ENOMEM_PLAN : 0; /* the verdict above said why */
}

/* The gate between compile and simulate: the traced GPUs, whose links are counted (their ranks
 * against the plan's GPUs, known now). */
typedef struct run_counted {
    run_args *a;
    unsigned char *counted;
} run_counted;

/* --nccl-algo picks the all-reduce algorithm: on a plan without an all-reduce over two GPUs or
 * more it changes nothing, and says so. */
static void warn_algo_unused(const run_args *a, const exec_graph *g)
{
    if (!a->algo || a->hopt.algo == COLL_ALGO_AUTO)
        return;
    unsigned kinds = 0;
    for (uint32_t k = 0; k < g->n_colls; k++)
        if (g->groups[g->colls[k].group].n >= 2)
            kinds |= 1u << g->colls[k].kind;
    if (kinds & 1u << COLL_ALLREDUCE)
        return;
    char list[96] = "";
    for (int k = 0; k <= COLL_ALLTOALL; k++)
        if (kinds & 1u << k)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", list[0] ? ", " : "",
                     coll_kind_name((coll_kind)k));
    fprintf(stderr,
            "protosim: warning: --nccl-algo %s changes nothing: the plan has no all-reduce over "
            "two GPUs or more (%s%s), and NCCL's other collectives have one algorithm each\n",
            a->algo, list[0] ? "its collectives: " : "no collectives", list);
}

static int count_links(void *ctx, const compiled_plan *plan, ps_error *err)
{
    run_counted *rc = ctx;
    run_args *a = rc->a;
    warn_algo_unused(a, plan->graph);
    if (!a->trace_filter.ranks && !(a->trace && !a->no_trace_links))
        return RUN_SIMULATE;
    rc->counted = xcalloc((size_t)plan->gpus, 1);
    if (a->trace_filter.ranks &&
        out_trace_ranks(a->trace_filter.ranks, plan->gpus, rc->counted, err))
        return err->code;
    if (!a->trace_filter.ranks)
        memset(rc->counted, 1, (size_t)plan->gpus);
    a->hopt.counter_ranks = a->trace && !a->no_trace_links ? rc->counted : NULL;
    return RUN_SIMULATE;
}

static int run_main(int argc, char **argv)
{
    run_args a;
    int prc = parse_run(argc, argv, &a);
    if (prc)
        return cli_exit_code(prc);
    ps_error err;
    ps_error_clear(&err);
    double t0 = ps_now_s();
    strategy s;
    if (strategy_load(a.strategy, ps_data_dir(), &s, &err)) {
        cli_file_kind_hint(a.strategy, FILE_STRATEGY, &err);
        return cli_fail(&err);
    }
    cluster file, view;
    const cluster *cp = NULL;
    cluster_engine_start(); /* the engine first, then the platform, the actors, the run */
    if (cluster_load(a.cluster, ps_data_dir(), &file, &err)) {
        strategy_free(&s);
        cli_file_kind_hint(a.cluster, FILE_CLUSTER, &err);
        return cli_fail(&err);
    }
    if (cli_plan_cluster(&file, strategy_gpus(&s), a.gpus, &view, &cp, &err)) {
        cluster_free(&file);
        strategy_free(&s);
        return cli_fail(&err);
    }
    const cluster *c = cp;
    profile_db db;
    memset(&db, 0, sizeof db);
    if (a.profile) {
        if (profile_db_load(a.profile, &db, &err)) {
            cli_file_kind_hint(a.profile, FILE_PROFILE, &err);
            cli_plan_cluster_free(&file, &view, c);
            cluster_free(&file);
            strategy_free(&s);
            return cli_fail(&err);
        }
        a.copt.profile = &db;
        out_warn_profile_device(&db, c);
    }
    double load_s = ps_now_s() - t0;
    run_counted counted = {&a, NULL};
    run_request rq = {.c = c,
                      .s = &s,
                      .copt = &a.copt,
                      .hopt = &a.hopt,
                      /* a trace shows every task as simulated, Chakra writes every task: the
                       * steady state is not skipped */
                      .steady = !a.trace && !a.chakra,
                      .path = !a.quiet || a.json, /* nothing else shows the critical path */
                      .window = 1,                /* count_links reads no task */
                      .gate = count_links,
                      .gate_ctx = &counted};
    run_outcome run;
    int rc = run_execute(&rq, &run, &err);
    if (!rc)
        rc = run_report(&a, c, &run, load_s, &err);
    if (rc && err.code)
        cli_fail(&err);
    free(counted.counted);
    run_outcome_free(&run);
    profile_db_free(&db);
    cli_plan_cluster_free(&file, &view, c);
    cluster_free(&file);
    strategy_free(&s);
    return rc;
}
