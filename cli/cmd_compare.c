/* cmd_compare.c: `protosim compare`: its arguments, then the pipeline load traces, strategy and
 * cluster -> the plan simulated and set beside each traced rank, kind by kind -> the table. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "output.h"

static int compare_main(int argc, char **argv);

#define MAX_INPUTS 1025 /* traces, then the strategy */

typedef struct compare_args {
    const char *inputs[MAX_INPUTS];
    int n_inputs;
    const char *cluster, *json, *csv, *gpus;
    int quiet;
} compare_args;

static const cli_option compare_options[] = {
    {.name = "--cluster", .kind = CLI_STRING, .offset = offsetof(compare_args, cluster)},
    {.name = "--json", .kind = CLI_STRING, .offset = offsetof(compare_args, json)},
    {.name = "--csv", .kind = CLI_STRING, .offset = offsetof(compare_args, csv)},
    {.name = "--gpus", .kind = CLI_STRING, .offset = offsetof(compare_args, gpus)},
    {.name = "--quiet",
     .alias = "-q",
     .kind = CLI_FLAG,
     .offset = offsetof(compare_args, quiet),
     .set = 1},
    {0},
};

const cli_command cli_compare = {
    "compare",
    "  protosim compare TRACE.json[.gz]... STRATEGY.yaml --cluster CLUSTER [--json OUT.json]\n"
    "               [--csv OUT.csv] [--gpus LIST] [--quiet]\n",
    "sets a measured training step (PyTorch profiler traces of the plan) beside protosim's\n"
    "prediction of the same plan, kind by kind: GEMMs by layer role (from their recorded\n"
    "shapes), attention, norms and elementwise, embedding and loss, optimizer, each collective\n"
    "kind, exposed communication, host-bound gaps, idle: measured, predicted, difference,\n"
    "largest first, then the whole step. The measured side is the mean over the trace's\n"
    "ProfilerStep spans; each trace is the rank its distributedInfo names (0 without it) and\n"
    "is compared with that GPU of the plan.\n"
    "options:\n"
    "  --cluster CLUSTER       the cluster: protosim cluster's description or a SimGrid XML\n"
    "                          platform (required)\n"
    "  --json OUT.json         write the tables as JSON\n"
    "  --csv OUT.csv           write the rows as CSV\n"
    "  --gpus LIST             the cluster's GPUs the plan runs on, as run --gpus (default:\n"
    "                          all of them, or the first N when the plan takes N of more)\n"
    "  --quiet, -q             no table on stdout\n"
    "  --help, -h              this help\n"
    "exit codes: 0 ok, 1 bad input, 3 internal error\n",
    compare_main,
    compare_options,
};

static int compare_report(const compare_args *a, const out_compare *x, ps_error *err)
{
    if (!a->quiet)
        out_compare_text(stdout, x);
    if (a->json && out_compare_json(a->json, x, err))
        return err->code;
    if (a->csv && out_compare_csv(a->csv, x, err))
        return err->code;
    return 0;
}

/* Strategy, cluster, comparison, report; the job loaded. */
static int compare_with_plan(const compare_args *a, const trace_job *job, ps_error *err)
{
    const char *strategy_file = a->inputs[a->n_inputs - 1];
    strategy s;
    if (strategy_load(strategy_file, ps_data_dir(), &s, err))
        return cli_file_kind_hint(strategy_file, FILE_STRATEGY, err);
    cluster file, view;
    const cluster *c = NULL;
    cluster_engine_start();
    if (cluster_load(a->cluster, ps_data_dir(), &file, err)) {
        strategy_free(&s);
        return cli_file_kind_hint(a->cluster, FILE_CLUSTER, err);
    }
    compare_table *t;
    int n;
    int rc = cli_plan_cluster(&file, strategy_gpus(&s), a->gpus, &view, &c, err);
    if (!rc)
        rc = compare_job(job, &s, c, &t, &n, err);
    if (!rc) {
        out_compare x = {t, n, strategy_file, file.file};
        rc = compare_report(a, &x, err);
        free(t);
    }
    cli_plan_cluster_free(&file, &view, c);
    cluster_free(&file);
    strategy_free(&s);
    return rc;
}

static int compare_main(int argc, char **argv)
{
    compare_args a;
    memset(&a, 0, sizeof a);
    int prc = cli_parse_options(&cli_compare, compare_options, argc, argv, &a, a.inputs, MAX_INPUTS,
                                &a.n_inputs);
    if (!prc && a.n_inputs < 2)
        prc = cli_usage_error(&cli_compare, "compare needs a TRACE.json and a STRATEGY.yaml");
    if (!prc && !a.cluster)
        prc = cli_usage_error(&cli_compare, "compare needs --cluster CLUSTER");
    if (prc)
        return cli_exit_code(prc);
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load(a.inputs, a.n_inputs - 1, 0, &job, &err)) {
        cli_file_kind_hint(err.file, FILE_KINETO, &err);
        return cli_fail(&err);
    }
    if (job.ranks[0].chakra) { /* nothing measured to compare with */
        ps_error_set(&err, PS_EINPUT, job.ranks[0].file, 0, 0, NULL,
                     "compare needs a measured trace (Kineto); a Chakra execution trace carries "
                     "no measured times (replay it instead)");
        trace_job_free(&job);
        return cli_fail(&err);
    }
    int rc = compare_with_plan(&a, &job, &err);
    if (rc)
        cli_fail(&err);
    trace_job_free(&job);
    return rc;
}
