/* cmd_sweep.c: the arguments of `protosim sweep` and `protosim merge` (they share the output
 * options), then sweep_run (sweep_run.c) or sweep_merge (merge.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "cli.h"
#include "sweep_run.h"

static int sweep_main(int argc, char **argv);
static int merge_main(int argc, char **argv);

#define OUTPUT_OPTIONS                                                                             \
    "  --top N                 rows of each status in the ranked table (default 20; 0: all)\n"     \
    "  --csv OUT.csv           write every plan as CSV\n"                                          \
    "  --json OUT.json         write every plan as JSON (the input of protosim merge)\n"           \
    "  --plot OUT.svg          write an SVG plot of throughput per plan\n"                         \
    "  --progress, --no-progress  show a progress bar on stderr (default: when a terminal)\n"      \
    "  --help, -h              this help\n"

const cli_command cli_sweep = {
    "sweep",
    "  protosim sweep SWEEP.yaml --cluster CLUSTER.xml [-j N] [--shard K/N] [--top N]\n"
    "               [--csv OUT] [--json OUT] [--plot OUT.svg] [--progress|--no-progress]\n",
    "enumerates the plans of a sweep file, simulates the valid ones in N worker processes and\n"
    "ranks them by iteration time.\n"
    "options:\n"
    "  --cluster CLUSTER.xml   the SimGrid platform (required)\n"
    "  -j N, --jobs N          worker processes (default: the CPU count)\n"
    "  --shard K/N             simulate only the K-th of N slices (merge them with protosim "
    "merge)\n" OUTPUT_OPTIONS,
    sweep_main,
};

const cli_command cli_merge = {
    "merge",
    "  protosim merge SHARD.json... [--top N] [--csv OUT] [--json OUT] [--plot OUT.svg]\n",
    "re-ranks the --json outputs of the shards of one sweep (written by sweep --shard K/N).\n"
    "Every field is checked: an error names the file and the JSON path (plans[3].schedule).\n"
    "options:\n" OUTPUT_OPTIONS,
    merge_main,
};

/* --shard K/N into o; PS_EINPUT after a usage error. */
static int parse_shard(const char *v, sweep_options *o)
{
    char k[32], n[32];
    const char *slash = strchr(v, '/');
    if (!slash || slash - v >= (long)sizeof k || strlen(slash + 1) >= sizeof n)
        return cli_usage_error(&cli_sweep, "bad --shard '%s' (expected K/N, e.g. 2/8)", v);
    snprintf(k, sizeof k, "%.*s", (int)(slash - v), v);
    snprintf(n, sizeof n, "%s", slash + 1);
    if (cli_parse_int(k, &o->shard_k) || cli_parse_int(n, &o->shard_n) || o->shard_n < 1 ||
        o->shard_k < 1 || o->shard_k > o->shard_n)
        return cli_usage_error(&cli_sweep, "bad --shard '%s' (expected K/N with 1 <= K <= N)", v);
    return 0;
}

/* Options shared by sweep and merge (c: which); *i is advanced past a consumed value. Returns
 * 0 when consumed, -1 when argv[*i] is not one of them, PS_EINPUT on a bad value. */
static int parse_sweep_option(const cli_command *c, int argc, char **argv, int *i, sweep_options *o)
{
    const char *a = argv[*i];
    int run_only = !strcmp(a, "-j") || !strcmp(a, "--jobs") || !strcmp(a, "--shard");
    int takes = run_only || !strcmp(a, "--csv") || !strcmp(a, "--json") || !strcmp(a, "--plot") ||
                !strcmp(a, "--top");
    if (!strcmp(a, "--progress") || !strcmp(a, "--no-progress")) {
        o->progress = !strcmp(a, "--progress");
        return 0;
    }
    if (!takes || (run_only && c != &cli_sweep))
        return -1;
    const char *v = cli_value(c, argc, argv, i);
    if (!v)
        return PS_EINPUT;
    if (!strcmp(a, "--csv"))
        o->csv = v;
    else if (!strcmp(a, "--json"))
        o->json = v;
    else if (!strcmp(a, "--plot"))
        o->plot = v;
    else if (!strcmp(a, "--top")) {
        if (cli_parse_int(v, &o->top) || o->top < 0)
            return cli_usage_error(c, "bad --top '%s'", v);
    } else if (!strcmp(a, "--shard")) {
        return parse_shard(v, o);
    } else if (cli_parse_int(v, &o->jobs) || o->jobs < 1) {
        return cli_usage_error(c, "bad job count '%s'", v);
    }
    return 0;
}

/* 0 parsed, -1 --help printed (exit 0), PS_EINPUT after a usage error. */
static int parse_sweep(int argc, char **argv, const char **sweep_path, const char **cluster_path,
                       sweep_options *o)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            cli_help(&cli_sweep);
            return -1;
        }
        if (!strcmp(a, "--cluster")) {
            if (!(*cluster_path = cli_value(&cli_sweep, argc, argv, &i)))
                return PS_EINPUT;
            continue;
        }
        int r = parse_sweep_option(&cli_sweep, argc, argv, &i, o);
        if (r > 0)
            return r;
        if (r == 0)
            continue;
        if (a[0] == '-')
            return cli_usage_error(&cli_sweep, "unknown option '%s'", a);
        if (*sweep_path)
            return cli_usage_error(&cli_sweep, "unexpected argument '%s'", a);
        *sweep_path = a;
    }
    if (!*sweep_path)
        return cli_usage_error(&cli_sweep, "sweep needs a SWEEP.yaml");
    if (!*cluster_path)
        return cli_usage_error(&cli_sweep, "sweep needs --cluster CLUSTER.xml");
    return 0;
}

static int sweep_main(int argc, char **argv)
{
    const char *sweep_path = NULL, *cluster_path = NULL;
    sweep_options o;
    sweep_default_options(&o);
    int prc = parse_sweep(argc, argv, &sweep_path, &cluster_path, &o);
    if (prc)
        return prc < 0 ? 0 : prc;
    ps_error err;
    ps_error_clear(&err);
    return sweep_run(sweep_path, cluster_path, ps_data_dir(), &o, &err) ? cli_fail(&err) : 0;
}

/* 0 parsed, -1 --help printed (exit 0), PS_EINPUT after a usage error. */
static int parse_merge(int argc, char **argv, const char **inputs, int *n, sweep_options *o)
{
    for (int i = 0; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            cli_help(&cli_merge);
            return -1;
        }
        int r = parse_sweep_option(&cli_merge, argc, argv, &i, o);
        if (r > 0)
            return r;
        if (r == 0)
            continue;
        if (argv[i][0] == '-')
            return cli_usage_error(&cli_merge, "unknown option '%s'", argv[i]);
        inputs[(*n)++] = argv[i];
    }
    if (*n == 0)
        return cli_usage_error(&cli_merge, "merge needs the --json files of the shards");
    return 0;
}

static int merge_main(int argc, char **argv)
{
    sweep_options o;
    sweep_default_options(&o);
    const char **inputs = xcalloc((size_t)argc + 1, sizeof *inputs);
    int n = 0;
    int rc = parse_merge(argc, argv, inputs, &n, &o);
    if (!rc) {
        ps_error err;
        ps_error_clear(&err);
        rc = sweep_merge(inputs, n, &o, &err) ? cli_fail(&err) : 0;
    }
    free(inputs);
    return rc < 0 ? 0 : rc;
}
