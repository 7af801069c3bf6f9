/* cmd_cluster.c: `protosim cluster`: its arguments, then the generated SimGrid platform, written
 * only once complete (a rejected request never truncates an existing file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../topology/cluster.h"
#include "cli.h"

static int cluster_main(int argc, char **argv);

const cli_command cli_cluster = {
    "cluster",
    "  protosim cluster KIND --nodes N [-o FILE] [--nics N] [--nic-gbps GBPS]\n"
    "               [--gpus-per-node N] [--oversubscription X]\n",
    "writes a SimGrid platform of N DGX nodes (NVSwitch or DGX-1 hybrid cube-mesh inside a node,\n"
    "NICs on a non-blocking or oversubscribed fabric).\n"
    "  KIND                    dgx-v100, dgx-a100 or dgx-h100\n"
    "options:\n"
    "  --nodes N               number of nodes (required, N >= 1)\n"
    "  -o FILE                 write to FILE (default: stdout)\n"
    "  --nics N                NICs per node\n"
    "  --nic-gbps GBPS         bandwidth of each NIC\n"
    "  --gpus-per-node N       GPUs per node\n"
    "  --oversubscription X    fabric oversubscription (1: non-blocking)\n"
    "  --help, -h              this help\n",
    cluster_main,
};

/* Option s with value v into o / *out_path; PS_EINPUT on a bad number. */
static int cluster_option(const char *s, const char *v, cluster_gen_opts *o, const char **out_path)
{
    int bad = 0;
    if (!strcmp(s, "--nodes"))
        bad = cli_parse_int(v, &o->nodes);
    else if (!strcmp(s, "--nics"))
        bad = cli_parse_int(v, &o->nics_per_node);
    else if (!strcmp(s, "--gpus-per-node"))
        bad = cli_parse_int(v, &o->gpus_per_node);
    else if (!strcmp(s, "--nic-gbps"))
        bad = cli_parse_double(v, &o->nic_gbps);
    else if (!strcmp(s, "--oversubscription"))
        bad = cli_parse_double(v, &o->oversubscription);
    else
        *out_path = v;
    return bad ? cli_usage_error(&cli_cluster, "bad number '%s'", v) : 0;
}

/* 0 parsed, -1 --help printed (exit 0), PS_EINPUT after a usage error. */
static int parse_cluster(int argc, char **argv, const char **kind, cluster_gen_opts *o,
                         const char **out_path)
{
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        int takes = !strcmp(s, "--nodes") || !strcmp(s, "-o") || !strcmp(s, "--nics") ||
                    !strcmp(s, "--nic-gbps") || !strcmp(s, "--gpus-per-node") ||
                    !strcmp(s, "--oversubscription");
        if (cli_is_help(s)) {
            cli_help(&cli_cluster);
            return -1;
        } else if (takes) {
            const char *v = cli_value(&cli_cluster, argc, argv, &i);
            if (!v || cluster_option(s, v, o, out_path))
                return PS_EINPUT;
        } else if (s[0] == '-') {
            return cli_usage_error(&cli_cluster, "unknown option '%s'", s);
        } else if (!*kind) {
            *kind = s;
        } else {
            return cli_usage_error(&cli_cluster, "unexpected argument '%s'", s);
        }
    }
    if (!*kind)
        return cli_usage_error(&cli_cluster, "cluster needs a KIND");
    if (o->nodes < 1)
        return cli_usage_error(&cli_cluster, "cluster needs --nodes N (N >= 1)");
    return 0;
}

static int cluster_main(int argc, char **argv)
{
    const char *kind = NULL, *out_path = NULL;
    cluster_gen_opts o;
    memset(&o, 0, sizeof o);
    int prc = parse_cluster(argc, argv, &kind, &o, &out_path);
    if (prc)
        return prc < 0 ? 0 : prc;
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
    return rc ? cli_fail(&err) : 0;
}
