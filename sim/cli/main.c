/* main.c: the protosim command: argument parsing only, then the pipeline
 * load strategy -> load cluster -> compile -> simulate -> report, and exit codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../strategies/compile.h"
#include "../../strategies/strategy.h"
#include "../../topology/cluster.h"
#include "../base/error.h"
#include "../htae.h"
#include "../report.h"
#include "../base/xalloc.h"
#include "output.h"
#include "sweep_run.h"

#define PROTOSIM_VERSION "0.1.0"

static void usage(FILE *f)
{
    fputs("usage:\n"
          "  protosim run STRATEGY.yaml --cluster CLUSTER.xml [--json OUT.json]\n"
          "               [--trace OUT.trace.json] [--strict-memory] [--no-fold] [--quiet]\n"
          "  protosim cluster KIND --nodes N [-o FILE] [--nics N] [--nic-gbps GBPS]\n"
          "               [--gpus-per-node N] [--oversubscription X]\n"
          "      KIND: dgx-v100, dgx-a100, dgx-h100\n"
          "  protosim collective --cluster CLUSTER.xml --gpus N --sizes BYTES[,BYTES...]\n"
          "               [--op allreduce|reduce-scatter|all-gather] [--csv OUT]\n"
          "      simulates the collectives one after another (like nccl-tests) and prints\n"
          "      bytes,time_s per size\n"
          "  protosim sweep SWEEP.yaml --cluster CLUSTER.xml [-j N] [--shard K/N] [--top N]\n"
          "               [--csv OUT] [--json OUT] [--plot OUT.svg] [--progress|--no-progress]\n"
          "      enumerates the plans of a sweep file, simulates them in N worker processes\n"
          "      and ranks them; --shard K/N simulates only the K-th of N slices\n"
          "  protosim merge SHARD.json... [--top N] [--csv OUT] [--json OUT] [--plot OUT.svg]\n"
          "      re-ranks the --json outputs of the shards of one sweep\n"
          "  protosim --version\n"
          "exit codes: 0 ok, 1 bad input, 2 plan does not fit (with --strict-memory),\n"
          "            3 internal error\n",
          f);
}

static int fail(const ps_error *e)
{
    ps_error_print(e, stderr);
    return e->code ? e->code : PS_EINTERNAL;
}

static int usage_error(const char *fmt, const char *arg)
{
    fputs("protosim: error: ", stderr);
    fprintf(stderr, fmt, arg);
    fputs("\n", stderr);
    usage(stderr);
    return PS_EINPUT;
}

/* Strict numeric option values: the whole string must parse. */
static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < -1000000000L || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return (!*s || *end) ? -1 : 0;
}

static int cmd_run(int argc, char **argv)
{
    const char *strategy_path = NULL, *cluster_path = NULL, *json = NULL, *trace = NULL;
    int strict = 0, quiet = 0;
    compile_options copt;
    compile_default_options(&copt);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--cluster") || !strcmp(a, "--json") || !strcmp(a, "--trace")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--cluster"))
                cluster_path = v;
            else if (!strcmp(a, "--json"))
                json = v;
            else
                trace = v;
        } else if (!strcmp(a, "--no-fold")) {
            copt.fold_data_parallel = 0;
        } else if (!strcmp(a, "--strict-memory")) {
            strict = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (a[0] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (!strategy_path) {
            strategy_path = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (!strategy_path)
        return usage_error("%s", "run needs a STRATEGY.yaml");
    if (!cluster_path)
        return usage_error("%s", "run needs --cluster CLUSTER.xml");

    ps_error err;
    ps_error_clear(&err);
    strategy s;
    if (strategy_load(strategy_path, ps_data_dir(), &s, &err))
        return fail(&err);
    cluster c;
    if (cluster_load(cluster_path, ps_data_dir(), &c, &err)) {
        strategy_free(&s);
        return fail(&err);
    }
    compiled_plan plan;
    htae_result res;
    memset(&res, 0, sizeof res);
    int rc = compile_plan(&s, &c, &copt, &plan, &err);
    if (!rc)
        rc = htae_run(plan.graph, &c, NULL, &res, &err);
    if (!rc) {
        report_summary sum;
        report_summarize(&plan, &res, &sum);
        if (!quiet)
            out_run_text(stdout, &c, &plan, &res, &sum);
        if (json)
            rc = out_run_json(json, &c, &plan, &res, &sum, &err);
        if (!rc && trace)
            rc = out_run_trace(trace, &c, &plan, &res, &err);
        if (!rc && strict && sum.peak_memory_bytes > sum.memory_capacity) {
            fprintf(stderr,
                    "protosim: plan needs %.2f GiB per GPU, more than the %.2f GiB it has\n",
                    sum.peak_memory_bytes / 1073741824.0, sum.memory_capacity / 1073741824.0);
            rc = PS_ENOMEM_PLAN;
        }
    }
    if (rc && err.code)
        fail(&err);
    htae_result_free(&res);
    compiled_plan_free(&plan);
    cluster_free(&c);
    strategy_free(&s);
    return rc;
}

static int cmd_cluster(int argc, char **argv)
{
    const char *kind = NULL, *out_path = NULL;
    cluster_gen_opts o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int takes = !strcmp(a, "--nodes") || !strcmp(a, "-o") || !strcmp(a, "--nics") ||
                    !strcmp(a, "--nic-gbps") || !strcmp(a, "--gpus-per-node") ||
                    !strcmp(a, "--oversubscription");
        if (takes) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            const char *v = argv[++i];
            int bad = 0;
            if (!strcmp(a, "--nodes"))
                bad = parse_int(v, &o.nodes);
            else if (!strcmp(a, "--nics"))
                bad = parse_int(v, &o.nics_per_node);
            else if (!strcmp(a, "--gpus-per-node"))
                bad = parse_int(v, &o.gpus_per_node);
            else if (!strcmp(a, "--nic-gbps"))
                bad = parse_double(v, &o.nic_gbps);
            else if (!strcmp(a, "--oversubscription"))
                bad = parse_double(v, &o.oversubscription);
            else
                out_path = v;
            if (bad)
                return usage_error("bad number '%s'", v);
        } else if (a[0] == '-') {
            return usage_error("unknown option '%s'", a);
        } else if (!kind) {
            kind = a;
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (!kind)
        return usage_error("%s", "cluster needs a KIND");
    if (o.nodes < 1)
        return usage_error("%s", "cluster needs --nodes N (N >= 1)");
    /* Generate in memory first: a rejected request must not truncate an existing file. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ps_error err;
    ps_error_clear(&err);
    int rc = mem ? cluster_generate(kind, &o, mem, &err)
                 : ps_error_set(&err, PS_EINTERNAL, NULL, 0, 0, NULL, "out of memory");
    if (mem)
        fclose(mem);
    if (!rc) {
        FILE *f = out_path ? fopen(out_path, "w") : stdout;
        if (!f || fwrite(text, 1, len, f) != len || (f != stdout && fclose(f) != 0))
            rc = ps_error_set(&err, PS_EINPUT, out_path, 0, 0, NULL, "cannot write");
    }
    free(text);
    if (rc)
        return fail(&err);
    return 0;
}

/* Comma-separated byte counts; returns how many, or -1 on a bad entry. */
static int parse_sizes(const char *list, double **out)
{
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    double *v = xcalloc((size_t)n, sizeof *v);
    char *copy = xstrdup(list), *save = NULL;
    int k = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (parse_double(tok, &v[k]) || v[k] < 0) {
            free(copy);
            free(v);
            return -1;
        }
        k++;
    }
    free(copy);
    *out = v;
    return k;
}

static int cmd_collective(int argc, char **argv)
{
    const char *cluster_path = NULL, *sizes_arg = NULL, *op = "allreduce", *csv = NULL;
    int gpus = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--cluster") || !strcmp(a, "--sizes") || !strcmp(a, "--op") ||
            !strcmp(a, "--csv") || !strcmp(a, "--gpus")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--cluster"))
                cluster_path = v;
            else if (!strcmp(a, "--sizes"))
                sizes_arg = v;
            else if (!strcmp(a, "--op"))
                op = v;
            else if (!strcmp(a, "--csv"))
                csv = v;
            else if (parse_int(v, &gpus) || gpus < 1)
                return usage_error("bad GPU count '%s'", v);
        } else {
            return usage_error("unexpected argument '%s'", a);
        }
    }
    if (!cluster_path || !sizes_arg || gpus < 1)
        return usage_error("%s", "collective needs --cluster, --gpus and --sizes");
    coll_kind kind;
    if (!strcmp(op, "allreduce") || !strcmp(op, "all-reduce"))
        kind = COLL_ALLREDUCE;
    else if (!strcmp(op, "reduce-scatter") || !strcmp(op, "reducescatter"))
        kind = COLL_REDUCE_SCATTER;
    else if (!strcmp(op, "all-gather") || !strcmp(op, "allgather"))
        kind = COLL_ALLGATHER;
    else
        return usage_error("unknown collective '%s'", op);
    double *sizes;
    int n = parse_sizes(sizes_arg, &sizes);
    if (n <= 0)
        return usage_error("bad --sizes '%s'", sizes_arg);

    ps_error err;
    ps_error_clear(&err);
    cluster c;
    if (cluster_load(cluster_path, ps_data_dir(), &c, &err)) {
        free(sizes);
        return fail(&err);
    }
    double *times = xcalloc((size_t)n, sizeof *times);
    int rc = htae_time_collectives(&c, kind, gpus, sizes, n, NULL, times, &err);
    if (!rc)
        rc = out_collective_csv(csv, sizes, times, n, &err);
    free(times);
    free(sizes);
    cluster_free(&c);
    return rc ? fail(&err) : 0;
}

/* Options shared by sweep and merge; *i is advanced past a consumed value. Returns 0 when
 * consumed, -1 when argv[*i] is not one of them, PS_EINPUT on a bad value. */
static int parse_sweep_option(int argc, char **argv, int *i, sweep_options *o, int allow_run)
{
    const char *a = argv[*i];
    int run_only = !strcmp(a, "-j") || !strcmp(a, "--jobs") || !strcmp(a, "--shard");
    int takes = run_only || !strcmp(a, "--csv") || !strcmp(a, "--json") || !strcmp(a, "--plot") ||
                !strcmp(a, "--top");
    if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
        o->progress = !strcmp(a, "--progress");
        return 0;
    }
    if (!takes || (run_only && !allow_run))
        return -1;
    if (*i + 1 >= argc)
        return usage_error("%s needs a value", a);
    const char *v = argv[++*i];
    if (!strcmp(a, "--csv"))
        o->csv = v;
    else if (!strcmp(a, "--json"))
        o->json = v;
    else if (!strcmp(a, "--plot"))
        o->plot = v;
    else if (!strcmp(a, "--top")) {
        if (parse_int(v, &o->top) || o->top < 0)
            return usage_error("bad --top '%s'", v);
    } else if (!strcmp(a, "--shard")) {
        char k[32], n[32];
        const char *slash = strchr(v, '/');
        if (!slash || slash - v >= (long)sizeof k || strlen(slash + 1) >= sizeof n)
            return usage_error("bad --shard '%s' (expected K/N, e.g. 2/8)", v);
        snprintf(k, sizeof k, "%.*s", (int)(slash - v), v);
        snprintf(n, sizeof n, "%s", slash + 1);
        if (parse_int(k, &o->shard_k) || parse_int(n, &o->shard_n) || o->shard_n < 1 ||
            o->shard_k < 1 || o->shard_k > o->shard_n)
            return usage_error("bad --shard '%s' (expected K/N with 1 <= K <= N)", v);
    } else if (parse_int(v, &o->jobs) || o->jobs < 1) {
        return usage_error("bad job count '%s'", v);
    }
    return 0;
}

static int cmd_sweep(int argc, char **argv)
{
    const char *sweep_path = NULL, *cluster_path = NULL;
    sweep_options o;
    sweep_default_options(&o);
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--cluster")) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", a);
            cluster_path = argv[++i];
            continue;
        }
        int r = parse_sweep_option(argc, argv, &i, &o, 1);
        if (r > 0)
            return r;
        if (r == 0)
            continue;
        if (a[0] == '-')
            return usage_error("unknown option '%s'", a);
        if (sweep_path)
            return usage_error("unexpected argument '%s'", a);
        sweep_path = a;
    }
    if (!sweep_path)
        return usage_error("%s", "sweep needs a SWEEP.yaml");
    if (!cluster_path)
        return usage_error("%s", "sweep needs --cluster CLUSTER.xml");
    ps_error err;
    ps_error_clear(&err);
    return sweep_run(sweep_path, cluster_path, ps_data_dir(), &o, &err) ? fail(&err) : 0;
}

static int cmd_merge(int argc, char **argv)
{
    sweep_options o;
    sweep_default_options(&o);
    const char **inputs = xcalloc((size_t)argc + 1, sizeof *inputs);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        int r = parse_sweep_option(argc, argv, &i, &o, 0);
        if (r > 0) {
            free(inputs);
            return r;
        }
        if (r == 0)
            continue;
        if (argv[i][0] == '-') {
            free(inputs);
            return usage_error("unknown option '%s'", argv[i]);
        }
        inputs[n++] = argv[i];
    }
    if (n == 0) {
        free(inputs);
        return usage_error("%s", "merge needs the --json files of the shards");
    }
    ps_error err;
    ps_error_clear(&err);
    int rc = sweep_merge(inputs, n, &o, &err);
    free(inputs);
    return rc ? fail(&err) : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return PS_EINPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "run"))
        return cmd_run(argc - 2, argv + 2);
    if (!strcmp(cmd, "cluster"))
        return cmd_cluster(argc - 2, argv + 2);
    if (!strcmp(cmd, "collective"))
        return cmd_collective(argc - 2, argv + 2);
    if (!strcmp(cmd, "sweep"))
        return cmd_sweep(argc - 2, argv + 2);
    if (!strcmp(cmd, "merge"))
        return cmd_merge(argc - 2, argv + 2);
    if (!strcmp(cmd, "--version")) {
        printf("protosim %s\n", PROTOSIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    return usage_error("unknown command '%s'", cmd);
}
