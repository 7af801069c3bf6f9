/* cmd_collective.c: `protosim collective`: its arguments, then collectives timed one after
 * another on the first N GPUs (like nccl-tests), written as nccl-tests' table or CSV
 * (out_collective.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../topology/cluster.h"
#include "../sim/base/xalloc.h"
#include "../sim/engine/htae.h"
#include "../sim/base/limits.h"
#include "cli.h"
#include "output.h"

static int collective_main(int argc, char **argv);

typedef struct size_list {
    double *v; /* owned */
    int n;
} size_list;

typedef struct collective_args {
    const char *cluster, *op, *csv, *algo;
    size_list sizes;
    int gpus;
} collective_args;

static int parse_sizes(const cli_command *c, const char *list, void *field);

static const cli_option collective_options[] = {
    {.name = "--cluster", .kind = CLI_STRING, .offset = offsetof(collective_args, cluster)},
    {.name = "--sizes",
     .kind = CLI_CUSTOM,
     .offset = offsetof(collective_args, sizes),
     .parse = parse_sizes},
    {.name = "--op", .kind = CLI_STRING, .offset = offsetof(collective_args, op)},
    {.name = "--algo", .kind = CLI_STRING, .offset = offsetof(collective_args, algo)},
    {.name = "--csv", .kind = CLI_STRING, .offset = offsetof(collective_args, csv)},
    {.name = "--gpus",
     .kind = CLI_INT,
     .offset = offsetof(collective_args, gpus),
     .has_min = 1,
     .min = 1,
     .has_max = 1,
     .max = PS_MAX_GPUS,
     .bad = "GPU count"},
    {0},
};

const cli_command cli_collective = {
    "collective",
    "  protosim collective --cluster CLUSTER --gpus N --sizes BYTES[,BYTES...]\n"
    "               [--op allreduce|reduce-scatter|all-gather|all-to-all]\n"
    "               [--algo auto|ring|tree|nvls] [--csv OUT]\n",
    "simulates the collectives one after another on the first N GPUs (like nccl-tests) and\n"
    "prints nccl-tests' table: size, count, type, redop, algorithm, time, algbw, busbw.\n"
    "options:\n"
    "  --cluster CLUSTER       the cluster: protosim cluster's description or a SimGrid XML\n"
    "                          platform (required)\n"
    "  --gpus N                GPUs taking part (required, N >= 1)\n"
    "  --sizes BYTES,...       message sizes in bytes (required); each an integer with an\n"
    "                          optional K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (1024)\n"
    "  --op OP                 allreduce (default), reduce-scatter, all-gather or all-to-all\n"
    "                          (sizes are per-rank buffers; all-gather: the gathered output)\n"
    "  --algo ALGO             all-reduce algorithm, as NCCL_ALGO: auto (default: the least\n"
    "                          predicted time, as NCCL's tuner picks), ring, tree (double\n"
    "                          binary tree across nodes, a chain inside one) or nvls\n"
    "                          (NVLink SHARP, one H100/H200 NVSwitch node)\n"
    "  --csv OUT               write CSV rows bytes,time_s,algbw_GBps,busbw_GBps,algo to OUT\n"
    "                          ('-': stdout) instead of the table\n"
    "  --help, -h              this help\n",
    collective_main,
    collective_options,
};

/* 0 parsed, CLI_HELP_SHOWN, or PS_EINPUT after a usage error. */
static int parse_collective(int argc, char **argv, collective_args *a)
{
    int rc = cli_parse_options(&cli_collective, collective_options, argc, argv, a, NULL, 0, NULL);
    if (rc)
        return rc;
    if (!a->cluster || !a->sizes.n || a->gpus < 1)
        return cli_usage_error(&cli_collective, "collective needs --cluster, --gpus and --sizes");
    return 0;
}

static int parse_kind(const char *op, coll_kind *kind)
{
    if (!strcmp(op, "allreduce") || !strcmp(op, "all-reduce"))
        *kind = COLL_ALLREDUCE;
    else if (!strcmp(op, "reduce-scatter") || !strcmp(op, "reducescatter"))
        *kind = COLL_REDUCE_SCATTER;
    else if (!strcmp(op, "all-gather") || !strcmp(op, "allgather"))
        *kind = COLL_ALLGATHER;
    else if (!strcmp(op, "all-to-all") || !strcmp(op, "alltoall"))
        *kind = COLL_ALLTOALL;
    else
        return -1;
    return 0;
}

/* --sizes: comma-separated sizes (cli_parse_size) into the size_list at field (a repeated
 * --sizes replaces it); 0, or PS_EINPUT after a usage error naming the bad entry. */
static int parse_sizes(const cli_command *c, const char *list, void *field)
{
    size_list *out = field;
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    free(out->v);
    out->v = xcalloc((size_t)n, sizeof *out->v);
    out->n = 0;
    char *copy = xstrdup(list);
    int rc = 0;
    for (char *tok = copy, *next; tok && !rc; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        if (cli_parse_size(tok, &out->v[out->n++]))
            rc = cli_bad_value(c, "--sizes", "size", tok, CLI_SIZE_EXPECTED);
    }
    free(copy);
    return rc;
}

static int collective_main(int argc, char **argv)
{
    collective_args a = {NULL, "allreduce", NULL, "auto", {NULL, 0}, 0};
    int prc = parse_collective(argc, argv, &a);
    coll_kind kind = COLL_ALLREDUCE;
    htae_options opt;
    htae_default_options(&opt);
    if (!prc && parse_kind(a.op, &kind))
        prc = cli_usage_error(&cli_collective, "--op: unknown collective '%s'", a.op);
    if (!prc && cli_parse_algo(&cli_collective, "--algo", a.algo, &opt.algo))
        prc = PS_EINPUT;
    double *sizes = a.sizes.v;
    int n = a.sizes.n;
    if (prc) {
        free(sizes);
        return cli_exit_code(prc);
    }
    ps_error err;
    ps_error_clear(&err);
    cluster c;
    cluster_engine_start(); /* the engine first, then the platform, the actors, the run */
    if (cluster_load(a.cluster, ps_data_dir(), &c, &err)) {
        free(sizes);
        cli_file_kind_hint(a.cluster, FILE_CLUSTER, &err);
        return cli_fail(&err);
    }
    double *times = xcalloc((size_t)n, sizeof *times);
    coll_algo *algos = xcalloc((size_t)n, sizeof *algos);
    int rc = htae_time_collectives(&c, kind, a.gpus, sizes, n, &opt, times, algos, &err);
    out_collective t = {a.cluster, kind, a.gpus, opt.algo, sizes, times, algos, n};
    if (!rc)
        rc = out_collective_write(a.csv, &t, &err);
    free(times);
    free(algos);
    free(sizes);
    cluster_free(&c);
    return rc ? cli_fail(&err) : 0;
}
