/* cmd_replay.c: `protosim replay`: its arguments, then the pipeline load traces -> load cluster
 * -> traced graph -> simulate on the same executor -> report. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../workloads/trace/trace.h"
#include "../sim/base/xalloc.h"
#include "cli.h"
#include "output.h"

static int replay_main(int argc, char **argv);

#define MAX_TRACES   1024
#define MAX_WHAT_IFS 32

typedef struct path_list {
    const char *v[MAX_TRACES];
    int n;
} path_list;

typedef struct what_if_list {
    whatif_spec v[MAX_WHAT_IFS];
    int n;
} what_if_list;

typedef struct replay_args {
    const char *traces[MAX_TRACES];
    int n_traces;
    const char *cluster, *json, *trace, *overheads;
    int steps, quiet;
    what_if_list what_if;
    path_list ets;
} replay_args;

static int parse_what_if(const cli_command *c, const char *v, void *field)
{
    what_if_list *l = field;
    if (l->n == MAX_WHAT_IFS)
        return cli_usage_error(c, "--what-if: at most %d specs", MAX_WHAT_IFS);
    ps_error err;
    ps_error_clear(&err);
    if (whatif_parse(v, &l->v[l->n], &err))
        return cli_usage_error(c, "%s", err.message);
    l->n++;
    return 0;
}

static int parse_et(const cli_command *c, const char *v, void *field)
{
    path_list *l = field;
    if (l->n == MAX_TRACES)
        return cli_usage_error(c, "--et: at most %d execution traces", MAX_TRACES);
    l->v[l->n++] = v;
    return 0;
}

static int parse_steps(const cli_command *c, const char *v, void *field)
{
    if (strcmp(v, "all") == 0) {
        *(int *)field = 0;
        return 0;
    }
    int n;
    if (cli_parse_int(v, &n) || n < 1)
        return cli_bad_value(c, "--steps", "step count", v, "all or a count >= 1");
    *(int *)field = n;
    return 0;
}

static const cli_option replay_options[] = {
    {.name = "--cluster", .kind = CLI_STRING, .offset = offsetof(replay_args, cluster)},
    {.name = "--json", .kind = CLI_STRING, .offset = offsetof(replay_args, json)},
    {.name = "--trace", .kind = CLI_STRING, .offset = offsetof(replay_args, trace)},
    {.name = "--overheads", .kind = CLI_STRING, .offset = offsetof(replay_args, overheads)},
    {.name = "--what-if",
     .kind = CLI_CUSTOM,
     .offset = offsetof(replay_args, what_if),
     .parse = parse_what_if},
    {.name = "--steps",
     .kind = CLI_CUSTOM,
     .offset = offsetof(replay_args, steps),
     .parse = parse_steps},
    {.name = "--et", .kind = CLI_CUSTOM, .offset = offsetof(replay_args, ets), .parse = parse_et},
    {.name = "--quiet",
     .alias = "-q",
     .kind = CLI_FLAG,
     .offset = offsetof(replay_args, quiet),
     .set = 1},
    {0},
};

const cli_command cli_replay = {
    "replay",
    "  protosim replay TRACE.json[.gz]... --cluster CLUSTER [--json OUT.json]\n"
    "               [--trace OUT.trace.json] [--overheads OUT.json] [--what-if SPEC]...\n"
    "               [--steps all|N] [--et ET.json]... [--quiet]\n",
    "replays PyTorch profiler (Kineto) traces on the cluster with the executor of `run`:\n"
    "CPU threads and CUDA streams keep their measured times, launches precede their\n"
    "kernels, synchronizing calls wait for the GPU work they cover, NCCL kernels become\n"
    "collectives simulated on the cluster's links. One trace: every rank of its world\n"
    "(distributedInfo) behaves alike; several: one per rank. Prints measured against\n"
    "predicted step, the time breakdown and the critical path. Also replays Chakra\n"
    "execution traces (protobuf, one NAME.RANK.et per rank, comm_group.json beside them,\n"
    "as `run --chakra` writes): compute nodes keep their durations, collectives and\n"
    "sends run on the cluster; nothing in them is measured, so the step is predicted only.\n"
    "options:\n"
    "  --cluster CLUSTER       the cluster: protosim cluster's description or a SimGrid XML\n"
    "                          platform (required; ranks in order)\n"
    "  --json OUT.json         write the report as JSON\n"
    "  --trace OUT.trace.json  write the replayed timeline (open it at ui.perfetto.dev)\n"
    "  --overheads OUT.json    write Lin et al.'s host overheads per op type and step\n"
    "  --what-if SPEC          transform the replay first (repeatable, in order):\n"
    "                          network:F (every link's bandwidth x F), scale:REGEX:F\n"
    "                          (kernels matching the POSIX extended REGEX x F), remove:REGEX,\n"
    "                          amp (fp32 GEMM/conv kernels at fp16 tensor-core speed),\n"
    "                          fuse-elementwise, fuse-optimizer, device:GPU (kernels re-costed\n"
    "                          for a devices.yaml GPU), priority:gradients[:BYTES] (P3:\n"
    "                          gradient all-reduces first-needed first, optionally sliced;\n"
    "                          the step is then the period of two steps)\n"
    "  --steps all|N           report the last N ProfilerStep spans (default: all; every\n"
    "                          step is replayed, for the GPU work it leaves in flight)\n"
    "  --et ET.json            the PyTorch execution trace (ExecutionTraceObserver) of the\n"
    "                          run a Kineto trace recorded, one per trace in their order:\n"
    "                          a tensor one thread writes and another reads makes the\n"
    "                          reader wait for the writer\n"
    "  --quiet, -q             no summary on stdout\n"
    "  --help, -h              this help\n"
    "exit codes: 0 ok, 1 bad input, 3 internal error\n",
    replay_main,
    replay_options,
};

/* The GPU family in a device name: "V100", "A100", "H100" (letter and three digits), or "". */
static void gpu_family(const char *name, char out[8])
{
    out[0] = '\0';
    for (const char *p = name; *p; p++)
        if (isupper((unsigned char)p[0]) && isdigit((unsigned char)p[1]) &&
            isdigit((unsigned char)p[2]) && isdigit((unsigned char)p[3]) &&
            (p == name || !isalnum((unsigned char)p[-1]))) {
            snprintf(out, 8, "%.4s", p);
            return;
        }
}

/* A cluster of another GPU family than a trace's is worth saying, not an error: measured
 * kernel times are kept as traced. */
static void warn_family(const trace_job *j, const cluster *c)
{
    char want[8], have[8];
    gpu_family(c->device[0]->name, have);
    for (int i = 0; i < j->n_ranks; i++) {
        gpu_family(j->ranks[i].device, want);
        if (want[0] && have[0] && strcmp(want, have) != 0) {
            fprintf(stderr,
                    "protosim: warning: %s was traced on %s, the cluster has %s GPUs: kernels "
                    "keep their traced times\n",
                    j->ranks[i].file, j->ranks[i].device, c->device[0]->name);
            return;
        }
    }
}

/* NCCL kernels kept at their measured time are worth saying: the cluster does not change them. */
static void warn_measured_comm(const trace_job *j)
{
    for (int i = 0; i < j->n_ranks; i++)
        if (j->ranks[i].n_comm_measured > 0)
            fprintf(stderr,
                    "protosim: warning: %s: %d NCCL kernel%s (first: %s) not modelled as "
                    "collectives (kind, or size not in the trace): measured times kept\n",
                    j->ranks[i].file, j->ranks[i].n_comm_measured,
                    j->ranks[i].n_comm_measured == 1 ? "" : "s", j->ranks[i].comm_measured_what);
}

static int replay_report(const replay_args *a, const out_replay *x, ps_error *err)
{
    if (!a->quiet)
        out_replay_text(stdout, x);
    if (a->json && out_replay_json(a->json, x, err))
        return err->code;
    if (a->overheads && out_replay_overheads(a->overheads, x, err))
        return err->code;
    if (a->trace && out_replay_trace(a->trace, x, err))
        return err->code;
    return 0;
}

/* The job's graph through the run path: built, simulated, summarized (path: with the critical
 * path). */
static int replay_run(const trace_job *job, const cluster *c, int path, run_outcome *out,
                      ps_error *err)
{
    htae_options o;
    htae_default_options(&o);
    o.overlap_slowdown = 0.0; /* measured kernel times already include any interference */
    run_request rq = {.c = c, .job = job, .hopt = &o, .path = path};
    return run_execute(&rq, out, err);
}

/* The predicted step of the unchanged job, before the what-ifs change it. */
static int unchanged_step(const trace_job *job, const cluster *c, double *out, ps_error *err)
{
    run_outcome run;
    int rc = replay_run(job, c, 0, &run, err);
    if (!rc)
        *out = run.replay.iteration_s;
    run_outcome_free(&run);
    return rc;
}

static void free_what_ifs(replay_args *a)
{
    for (int i = 0; i < a->what_if.n; i++)
        whatif_spec_free(&a->what_if.v[i]);
}

static int replay_main(int argc, char **argv)
{
    replay_args a;
    memset(&a, 0, sizeof a);
    a.n_traces = 0;
    int prc = cli_parse_options(&cli_replay, replay_options, argc, argv, &a, a.traces, MAX_TRACES,
                                &a.n_traces);
    if (!prc && a.n_traces == 0)
        prc = cli_usage_error(&cli_replay, "replay needs a TRACE.json");
    if (!prc && !a.cluster)
        prc = cli_usage_error(&cli_replay, "replay needs --cluster CLUSTER");
    if (!prc && a.ets.n && a.ets.n != a.n_traces)
        prc = cli_usage_error(&cli_replay, "--et: %d execution traces for %d traces (one each)",
                              a.ets.n, a.n_traces);
    if (prc) {
        free_what_ifs(&a);
        return cli_exit_code(prc);
    }
    ps_error err;
    ps_error_clear(&err);
    trace_job job;
    if (trace_job_load_et(a.traces, a.ets.n ? a.ets.v : NULL, a.n_traces, a.steps, &job, &err)) {
        int et = 0; /* was it one of the --et files? */
        for (int i = 0; i < a.ets.n; i++)
            et |= !strcmp(err.file, a.ets.v[i]);
        cli_file_kind_hint(err.file, et ? FILE_ET : FILE_KINETO, &err);
        free_what_ifs(&a);
        return cli_fail(&err);
    }
    cluster c;
    cluster_engine_start();
    if (cluster_load(a.cluster, ps_data_dir(), &c, &err)) {
        trace_job_free(&job);
        free_what_ifs(&a);
        cli_file_kind_hint(a.cluster, FILE_CLUSTER, &err);
        return cli_fail(&err);
    }
    warn_family(&job, &c);
    warn_measured_comm(&job);
    whatif_effect effects[MAX_WHAT_IFS];
    double unchanged = 0;
    int rc = 0;
    if (whatif_wants_steady_state(a.what_if.v, a.what_if.n, &job))
        whatif_steady_state(&job); /* compared period with period */
    if (a.what_if.n > 0)
        rc = unchanged_step(&job, &c, &unchanged, &err);
    for (int i = 0; i < a.what_if.n && !rc; i++) {
        rc = whatif_apply(&a.what_if.v[i], &job, &c, &effects[i], &err);
        if (!rc && a.what_if.v[i].kind == WHATIF_PRIORITY_GRADIENTS && effects[i].kernels == 0)
            fprintf(stderr,
                    "protosim: note: --what-if '%s': %s has no gradient collective (an "
                    "all-reduce launched by autograd's AccumulateGrad) in its last step: "
                    "nothing to reorder, the step is unchanged\n",
                    a.what_if.v[i].text, job.ranks[0].file);
    }
    run_outcome run;
    memset(&run, 0, sizeof run);
    if (!rc)
        rc = replay_run(&job, &c, 1, &run, &err);
    if (!rc) {
        out_replay x = {&job,      &c,          run.graph, &run.res,    &run.replay,
                        &run.path, a.what_if.v, effects,   a.what_if.n, unchanged};
        rc = replay_report(&a, &x, &err);
    }
    if (rc)
        cli_fail(&err);
    run_outcome_free(&run);
    cluster_free(&c);
    trace_job_free(&job);
    free_what_ifs(&a);
    return rc;
}
