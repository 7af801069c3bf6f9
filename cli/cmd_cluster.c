/* cmd_cluster.c: `protosim cluster`: its arguments, then the generated cluster (DGX templates, or
 * nodes read from an hwloc export) as a cluster description or a SimGrid XML platform, written
 * only once complete (a rejected request never truncates an existing file). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../topology/cluster.h"
#include "../topology/hwloc_import.h"
#include "../sim/base/limits.h"
#include "cli.h"

static int cluster_main(int argc, char **argv);

typedef struct cluster_args {
    const char *kind, *out_path, *hwloc, *gpu;
    int format_given;
    int racks; /* --racks N: an NVL72 kind's --nodes */
    cluster_gen_opts o;
} cluster_args;

#define CLUSTER_COUNT(opt, field, limit)                                                           \
    {                                                                                              \
        .name = opt, .kind = CLI_INT, .offset = offsetof(cluster_args, o.field), .has_min = 1,     \
        .min = 1, .has_max = 1, .max = limit                                                       \
    }

/* The largest bandwidth (Gb/s per NIC) and oversubscription taken: 1 Pb/s, 1e6. */
#define MAX_NIC_GBPS         1e6
#define MAX_OVERSUBSCRIPTION 1e6

/* --fabric: fat-tree or rail. */
static int parse_fabric(const cli_command *c, const char *v, void *field)
{
    int f = enum_parse(cluster_fabric_names, v);
    if (f < 0)
        return cli_bad_value(c, "--fabric", "fabric", v, "fat-tree or rail");
    *(cluster_fabric *)field = (cluster_fabric)f;
    return 0;
}

/* --format: yaml (a cluster description) or xml. */
static int parse_format(const cli_command *c, const char *v, void *field)
{
    cluster_args *a = field;
    if (strcmp(v, "yaml") && strcmp(v, "xml"))
        return cli_bad_value(c, "--format", "format", v, "yaml or xml");
    a->o.format = strcmp(v, "xml") ? CLUSTER_FORMAT_DESCRIPTION : CLUSTER_FORMAT_XML;
    a->format_given = 1;
    return 0;
}

/* --oversubscription: a ratio >= 1 (0, the default, cannot be asked for). */
static int parse_oversubscription(const cli_command *c, const char *v, void *field)
{
    double *x = field;
    if (cli_parse_double(v, x) || *x < 1 || *x > MAX_OVERSUBSCRIPTION)
        return cli_bad_value(c, "--oversubscription", "number", v,
                             "a decimal number from 1 to 1000000");
    return 0;
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
    if (cli_parse_int(v, &o->nodes) || o->nodes < 1 || o->nodes > PS_MAX_GPUS)
        return cli_bad_value(c, "--nodes", "number", v, "an integer from 1 to 131072");
    return 0;
}

static const cli_option cluster_options[] = {
    {.name = "--nodes",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cluster_args, o),
     .parse = parse_nodes},
    {.name = "--racks",
     .kind = CLI_INT,
     .offset = offsetof(cluster_args, racks),
     .has_min = 1,
     .min = 1,
     .has_max = 1,
     .max = PS_MAX_GPUS / 72},
    {.name = "-o", .kind = CLI_STRING, .offset = offsetof(cluster_args, out_path)},
    {.name = "--format", .kind = CLI_CUSTOM, .offset = 0, .parse = parse_format},
    {.name = "--from-hwloc", .kind = CLI_STRING, .offset = offsetof(cluster_args, hwloc)},
    {.name = "--gpu", .kind = CLI_STRING, .offset = offsetof(cluster_args, gpu)},
    CLUSTER_COUNT("--nics", nics_per_node, PS_MAX_GPUS_PER_NODE),
    {.name = "--nic-gbps",
     .kind = CLI_DOUBLE,
     .offset = offsetof(cluster_args, o.nic_gbps),
     .positive = 1,
     .dmax = MAX_NIC_GBPS},
    CLUSTER_COUNT("--gpus-per-node", gpus_per_node, PS_MAX_GPUS_PER_NODE),
    {.name = "--oversubscription",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cluster_args, o.oversubscription),
     .parse = parse_oversubscription},
    {.name = "--fabric",
     .kind = CLI_CUSTOM,
     .offset = offsetof(cluster_args, o.fabric),
     .parse = parse_fabric},
    CLUSTER_COUNT("--nodes-per-leaf", nodes_per_leaf, PS_MAX_GPUS),
    {0},
};

const cli_command cli_cluster = {
    "cluster",
    "  protosim cluster KIND --nodes N [-o FILE] [--format yaml|xml] [--gpu MODEL] [--nics N]\n"
    "               [--nic-gbps GBPS] [--gpus-per-node N] [--fabric fat-tree|rail]\n"
    "               [--nodes-per-leaf K] [--oversubscription X]\n"
    "  protosim cluster gb200-nvl72|gb300-nvl72 --racks N [options]\n"
    "  protosim cluster --nodes KIND:N[,KIND:N...] [-o FILE] [options]\n"
    "  protosim cluster --from-hwloc LSTOPO.xml [--nodes N] [--gpu NAME] [-o FILE] [--format F]\n"
    "               [--nics N] [--nic-gbps GBPS] [--fabric F] [--nodes-per-leaf K]\n"
    "               [--oversubscription X]\n",
    "writes a cluster of N DGX nodes (NVSwitch or DGX-1 hybrid cube-mesh inside a node, NICs on\n"
    "a fat-tree or rail-optimized fabric), of node groups of different kinds, or of N copies of\n"
    "the node an hwloc export describes (GPUs, NVLink, PCIe switches, NICs), for run and sweep.\n"
    "By default it is a cluster description (YAML: each node model once, a few kilobytes at any\n"
    "size, loaded in a fraction of a second); --format xml, or -o FILE.xml, writes the same\n"
    "cluster as a SimGrid XML platform with every route listed (megabytes for thousands of "
    "nodes).\n"
    "  KIND                    dgx-v100 (DGX-1), dgx-2, dgx-a100, dgx-h100, dgx-h200,\n"
    "                          dgx-b200, dgx-b300, dgx-h800, or an NVL72 rack: gb200-nvl72,\n"
    "                          gb300-nvl72 (a node is a rack of 72 GPUs in one NVLink domain)\n"
    "options:\n"
    "  --nodes N               number of nodes (required with KIND, N >= 1; default 1 with\n"
    "                          --from-hwloc); or KIND:N[,KIND:N...]: groups of N nodes of KIND,\n"
    "                          numbered in the order given (no KIND)\n"
    "  --racks N               an NVL72 kind's racks (the same as --nodes N)\n"
    "  --from-hwloc FILE       the node from an hwloc XML export of one machine (lstopo --of\n"
    "                          xml, hwloc 2.x; no KIND); a summary of the import goes to stderr\n"
    "  --gpu NAME              the device-table GPU (devices.yaml, --devices) of every\n"
    "                          GPU, instead of the KIND's (e.g. dgx-a100 --gpu A100-SXM4-40GB)\n"
    "                          or the name hwloc reports\n"
    "  -o FILE                 write to FILE (default: stdout)\n"
    "  --format F              yaml (a cluster description) or xml (a SimGrid platform); default:\n"
    "                          xml when FILE ends in .xml, else yaml\n"
    "  --nics N                NICs per node (with --from-hwloc: only for a file without NICs)\n"
    "  --nic-gbps GBPS         bandwidth of each NIC, Gb/s (required with --from-hwloc)\n"
    "  --gpus-per-node N       GPUs per node (at most 72; a cluster has at most 131072 GPUs)\n"
    "  --fabric F              fat-tree (default: each node's NICs on one leaf switch, leaves\n"
    "                          joined by spines) or rail (rail-optimized, as DGX SuperPOD: NIC i\n"
    "                          of every node of a scalable unit on leaf i; cross-rail traffic\n"
    "                          moves over NVLink to the destination's rail first, as NCCL's PXN)\n"
    "  --nodes-per-leaf K      nodes per leaf switch (fat-tree; default 32 / NICs per node) or "
    "per\n"
    "                          scalable unit (rail; default 32)\n"
    "  --oversubscription X    leaf uplinks carry 1/X of their nodes' NIC bandwidth (X >= 1;\n"
    "                          default 1: non-blocking)\n"
    "  --help, -h              this help\n",
    cluster_main,
    cluster_options,
};

/* --from-hwloc: the node of the export, `nodes` copies of it on the fabric of a->o. */
static int generate_from_hwloc(const cluster_args *a, FILE *out, ps_error *err)
{
    hwloc_import_opts io = {.gpu = a->gpu, .nics = a->o.nics_per_node, .nic_gbps = a->o.nic_gbps};
    node_model m;
    char summary[1536];
    int rc = hwloc_import_node(a->hwloc, NULL, &io, &m, summary, sizeof summary, err);
    if (rc)
        return rc;
    fprintf(stderr, "protosim: cluster: %s\n", summary);
    const node_model *models[1] = {&m};
    int nodes = a->o.nodes > 0 ? a->o.nodes : 1;
    rc = a->o.format == CLUSTER_FORMAT_DESCRIPTION
             ? cluster_write_description(models, &nodes, 1, &a->o, out, err)
             : cluster_write_platform(models, &nodes, 1, &a->o, out, err);
    node_model_free(&m);
    return rc;
}

/* The options --from-hwloc excludes: 0, or a usage error. */
static int check_hwloc_options(const cluster_args *a)
{
    if (!a->hwloc)
        return 0;
    if (a->kind)
        return cli_usage_error(&cli_cluster,
                               "--from-hwloc reads the node from %s: give no KIND "
                               "'%s' with it",
                               a->hwloc, a->kind);
    if (a->o.node_groups)
        return cli_usage_error(&cli_cluster, "--from-hwloc takes --nodes N, not a group list '%s'",
                               a->o.node_groups);
    if (a->o.gpus_per_node > 0)
        return cli_usage_error(&cli_cluster, "--gpus-per-node does not apply to --from-hwloc (the "
                                             "file has the GPUs)");
    return 0;
}

static int cluster_main(int argc, char **argv)
{
    cluster_args a;
    memset(&a, 0, sizeof a);
    int rc = cli_parse_options(&cli_cluster, cluster_options, argc, argv, &a, &a.kind, 1, NULL);
    if (rc)
        return cli_exit_code(rc);
    if ((rc = check_hwloc_options(&a)))
        return rc;
    if (a.racks > 0) { /* an NVL72 rack is the kind's node */
        size_t k = a.kind ? strlen(a.kind) : 0;
        if (k < 6 || strcmp(a.kind + k - 6, "-nvl72"))
            return cli_usage_error(&cli_cluster,
                                   "--racks N is for the NVL72 kinds (gb200-nvl72, gb300-nvl72); "
                                   "give %s --nodes N",
                                   a.kind ? a.kind : "KIND");
        if (a.o.nodes > 0 || a.o.node_groups)
            return cli_usage_error(&cli_cluster, "give --racks or --nodes, not both");
        a.o.nodes = a.racks;
    }
    a.o.gpu = a.hwloc ? NULL : a.gpu; /* --from-hwloc hands it to the import */
    if (!a.format_given) {            /* the file's name says XML, else a description */
        size_t len = a.out_path ? strlen(a.out_path) : 0;
        a.o.format = len > 4 && !strcmp(a.out_path + len - 4, ".xml") ? CLUSTER_FORMAT_XML
                                                                      : CLUSTER_FORMAT_DESCRIPTION;
    }
    if (!a.hwloc && !a.kind && !a.o.node_groups)
        return cli_usage_error(&cli_cluster, "cluster needs a KIND (or --from-hwloc FILE)");
    if (!a.hwloc && a.o.nodes < 1 && !a.o.node_groups)
        return cli_usage_error(&cli_cluster, "cluster needs --nodes N (N >= 1)");
    /* Generate in memory first: a rejected request must not truncate an existing file. */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    ps_error err;
    ps_error_clear(&err);
    if (!mem)
        rc = ps_error_set(&err, PS_EINTERNAL, NULL, 0, 0, NULL, "out of memory");
    else if (a.hwloc)
        rc = generate_from_hwloc(&a, mem, &err);
    else
        rc = cluster_generate(a.kind, &a.o, mem, &err);
    if (mem)
        fclose(mem);
    if (!rc) {
        FILE *f = a.out_path ? fopen(a.out_path, "w") : stdout;
        int short_write = f && fwrite(text, 1, len, f) != len;
        int closed = !f || f == stdout || fclose(f) == 0; /* closed on a short write too */
        if (!f || short_write || !closed)
            rc = ps_error_set(&err, PS_EINPUT, a.out_path, 0, 0, NULL, "cannot write");
    }
    free(text);
    return rc ? cli_fail(&err) : 0;
}
