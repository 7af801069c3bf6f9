/* cmd_cluster.c: `protosim cluster`: its arguments, then the generated SimGrid platform, written
 * only once complete (a rejected request never truncates an existing file). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../topology/cluster.h"
#include "cli.h"

static int cluster_main(int argc, char **argv);

const cli_command cli_cluster = {
    "cluster",
    "  protosim cluster KIND --nodes N [-o FILE] [--nics N] [--nic-gbps GBPS]\n"
    "               [--gpus-per-node N] [--oversubscription X]\n"
    "  protosim cluster --nodes KIND:N[,KIND:N...] [-o FILE] [options]\n",
    "writes a SimGrid platform of N DGX nodes (NVSwitch or DGX-1 hybrid cube-mesh inside a node,\n"
    "NICs on a non-blocking or oversubscribed fabric), or of node groups of different kinds.\n"
    "  KIND                    dgx-v100 (DGX-1), dgx-2, dgx-a100, dgx-h100 or dgx-h200\n"
    "options:\n"
    "  --nodes N               number of nodes (required, N >= 1); or KIND:N[,KIND:N...]:\n"
    "                          groups of N nodes of KIND, numbered in the order given (no KIND)\n"
    "  -o FILE                 write to FILE (default: stdout)\n"
    "  --nics N                NICs per node\n"
    "  --nic-gbps GBPS         bandwidth of each NIC\n"
    "  --gpus-per-node N       GPUs per node\n"
    "  --oversubscription X    fabric oversubscription (1: non-blocking)\n"
    "  --help, -h              this help\n",
    cluster_main,
};

typedef struct cluster_args {
    const char *kind, *out_path;
    cluster_gen_opts o;
} cluster_args;

#define CLUSTER_COUNT(opt, field)                                                                  \
    {                                                                                              \
        .name = opt, .kind = CLI_INT, .offset = offsetof(cluster_args, o.field), .has_min = 1,     \
        .min = 1                                                                                   \
    }

/* --nodes: a node count, or (with a ':') a group list the generator checks. */
static int parse_nodes(const cli_command *c, const char *v, void *field)
{
    cluster_gen_opts *o = field;
    if (strchr(v, ':')) {
        o->node_groups = v;
        return 0;
    }
    o->node_groups = NULL;
    if (cli_parse_int(v, &o->nodes) || o->nodes < 1)
        return cli_bad_value(c, "--nodes", "number", v, "an integer >= 1");
    return 0;
}

static const cli_option cluster_options[] = {
    {.name = "--nodes",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cluster_args, o),
     .parse = parse_nodes},
    {.name = "-o", .kind = CLI_STRING, .offset = offsetof(cluster_args, out_path)},
    CLUSTER_COUNT("--nics", nics_per_node),
    {.name = "--nic-gbps", .kind = CLI_DOUBLE, .offset = offsetof(cluster_args, o.nic_gbps)},
    CLUSTER_COUNT("--gpus-per-node", gpus_per_node),
    {.name = "--oversubscription",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cluster_args, o.oversubscription)},
    {0},
};

static int cluster_main(int argc, char **argv)
{
    cluster_args a;
    memset(&a, 0, sizeof a);
    int rc = cli_parse_options(&cli_cluster, cluster_options, argc, argv, &a, &a.kind, 1, NULL);
    if (rc)
        return cli_exit_code(rc);
    if (!a.kind && !a.o.node_groups)
        return cli_usage_error(&cli_cluster, "cluster needs a KIND");
    if (a.o.nodes < 1 && !a.o.node_groups)
        return cli_usage_error(&cli_cluster, "cluster needs --nodes N (N >= 1)");
    /* Generate in memory first: a rejected request must not truncate an existing file. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ps_error err;
    ps_error_clear(&err);
    rc = mem ? cluster_generate(a.kind, &a.o, mem, &err)
             : ps_error_set(&err, PS_EINTERNAL, NULL, 0, 0, NULL, "out of memory");
    if (mem)
        fclose(mem);
    if (!rc) {
        FILE *f = a.out_path ? fopen(a.out_path, "w") : stdout;
        if (!f || fwrite(text, 1, len, f) != len || (f != stdout && fclose(f) != 0))
            rc = ps_error_set(&err, PS_EINPUT, a.out_path, 0, 0, NULL, "cannot write");
    }
    free(text);
    return rc ? cli_fail(&err) : 0;
}
