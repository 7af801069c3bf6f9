/* cmd_sweep.c: the arguments of `protosim sweep` and `protosim merge` (they share the output
 * options), then sweep_run (sweep_run.c) or sweep_merge (merge.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "../sim/base/limits.h"
#include "cli.h"
#include "sweep_run.h"

static int sweep_main(int argc, char **argv);
static int merge_main(int argc, char **argv);

#define OUTPUT_OPTIONS                                                                             \
    "  --top N                 rows of each status in the ranked table (default 20; 0: all)\n"     \
    "  --csv OUT.csv           write every plan as CSV\n"                                          \
    "  --json OUT.json         write every plan as JSON (the input of protosim merge)\n"           \
    "  --plot OUT.svg          write an SVG plot of throughput per plan\n"                         \
    "  --progress, --no-progress  progress on stderr or not (default on): a bar on a terminal,\n"  \
    "                          else a line every 5 s and at the end\n"                             \
    "  --help, -h              this help\n"

typedef struct sweep_args {
    const char *sweep, *cluster;
    sweep_options o;
} sweep_args;

/* --shard K/N into the sweep_options at field; PS_EINPUT after a usage error. */
static int parse_shard(const cli_command *c, const char *v, void *field)
{
    sweep_options *o = field;
    char k[32], n[32];
    const char *slash = strchr(v, '/');
    if (!slash || slash - v >= (long)sizeof k || strlen(slash + 1) >= sizeof n)
        return cli_usage_error(c, "bad --shard '%s' (expected K/N, e.g. 2/8)", v);
    snprintf(k, sizeof k, "%.*s", (int)(slash - v), v);
    snprintf(n, sizeof n, "%s", slash + 1);
    if (cli_parse_int(k, &o->shard_k) || cli_parse_int(n, &o->shard_n) || o->shard_n < 1 ||
        o->shard_k < 1 || o->shard_k > o->shard_n)
        return cli_usage_error(c, "bad --shard '%s' (expected K/N with 1 <= K <= N)", v);
    return 0;
}

#define SWEEP_OPT(field) offsetof(sweep_args, o.field)

/* sweep's options; merge's are the output options, the tail from MERGE_FIRST on. */
static const cli_option sweep_option_table[] = {
    {.name = "--cluster", .kind = CLI_STRING, .offset = offsetof(sweep_args, cluster)},
    {.name = "--jobs",
     .alias = "-j",
     .kind = CLI_INT,
     .offset = SWEEP_OPT(jobs),
     .has_min = 1,
     .min = 1,
     .has_max = 1,
     .max = PS_MAX_JOBS,
     .bad = "job count"},
    {.name = "--shard",
     .kind = CLI_CUSTOM,
     .offset = offsetof(sweep_args, o),
     .parse = parse_shard},
    {.name = "--profile", .kind = CLI_STRING, .offset = SWEEP_OPT(profile)},
    {.name = "--simulate-all", .kind = CLI_FLAG, .offset = SWEEP_OPT(twins), .set = 0},
    {.name = "--dry-run", .kind = CLI_FLAG, .offset = SWEEP_OPT(dry_run), .set = 1},
#define MERGE_FIRST 6
    {.name = "--top", .kind = CLI_INT, .offset = SWEEP_OPT(top), .has_min = 1, .bad = "--top"},
    {.name = "--csv", .kind = CLI_STRING, .offset = SWEEP_OPT(csv)},
    {.name = "--json", .kind = CLI_STRING, .offset = SWEEP_OPT(json)},
    {.name = "--plot", .kind = CLI_STRING, .offset = SWEEP_OPT(plot)},
    {.name = "--progress", .kind = CLI_FLAG, .offset = SWEEP_OPT(progress), .set = 1},
    {.name = "--no-progress", .kind = CLI_FLAG, .offset = SWEEP_OPT(progress), .set = 0},
    {0},
};

const cli_command cli_sweep = {
    "sweep",
    "  protosim sweep SWEEP.yaml --cluster CLUSTER [-j N] [--shard K/N] [--top N]\n"
    "               [--csv OUT] [--json OUT] [--plot OUT.svg] [--progress|--no-progress]\n"
    "               [--profile OPS.json] [--simulate-all] [--dry-run]\n",
    "enumerates the plans of a sweep file, simulates the valid ones in N worker processes and\n"
    "ranks them by iteration time.\n"
    "options:\n"
    "  --cluster CLUSTER       the cluster: protosim cluster's description or a SimGrid XML\n"
    "                          platform (required)\n"
    "  -j N, --jobs N          worker processes (default: the CPU count; at most 1024)\n"
    "  --shard K/N             simulate only the K-th of N slices (merge them with protosim "
    "merge)\n"
    "  --profile OPS.json      measured op times (protosim profile) for every plan, as run's\n"
    "                          --profile\n"
    "  --dry-run               enumerate only: the combinations, the valid plans (this\n"
    "                          shard's with --shard) and the invalid ones by reason; nothing\n"
    "                          is simulated (memory is checked when a plan is)\n"
    "  --simulate-all          simulate every plan (default: a plan whose compiled plan equals\n"
    "                          an already simulated one's, a twin, takes its "
    "result)\n" OUTPUT_OPTIONS,
    sweep_main,
    sweep_option_table,
};

const cli_command cli_merge = {
    "merge",
    "  protosim merge SHARD.json... [--top N] [--csv OUT] [--json OUT] [--plot OUT.svg]\n",
    "re-ranks the --json outputs of the shards of one sweep (written by sweep --shard K/N).\n"
    "Every field is checked: an error names the file and the JSON path (plans[3].schedule).\n"
    "options:\n" OUTPUT_OPTIONS,
    merge_main,
    sweep_option_table + MERGE_FIRST,
};

static int sweep_main(int argc, char **argv)
{
    sweep_args a = {NULL, NULL, {0}};
    sweep_default_options(&a.o);
    int rc = cli_parse_options(&cli_sweep, sweep_option_table, argc, argv, &a, &a.sweep, 1, NULL);
    if (rc)
        return cli_exit_code(rc);
    if (!a.sweep)
        return cli_usage_error(&cli_sweep, "sweep needs a SWEEP.yaml");
    if (!a.cluster)
        return cli_usage_error(&cli_sweep, "sweep needs --cluster CLUSTER");
    ps_error err;
    ps_error_clear(&err);
    return sweep_run(a.sweep, a.cluster, ps_data_dir(), &a.o, &err) ? cli_fail(&err) : 0;
}

static int merge_main(int argc, char **argv)
{
    sweep_args a = {NULL, NULL, {0}};
    sweep_default_options(&a.o);
    const char **inputs = xcalloc((size_t)argc + 1, sizeof *inputs);
    int n = 0;
    int rc = cli_parse_options(&cli_merge, sweep_option_table + MERGE_FIRST, argc, argv, &a, inputs,
                               argc, &n);
    if (!rc && n == 0)
        rc = cli_usage_error(&cli_merge, "merge needs the --json files of the shards");
    if (!rc) {
        ps_error err;
        ps_error_clear(&err);
        rc = sweep_merge(inputs, n, &a.o, &err) ? cli_fail(&err) : 0;
    }
    free(inputs);
    return cli_exit_code(rc);
}
