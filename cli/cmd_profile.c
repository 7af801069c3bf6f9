/* cmd_profile.c: `protosim profile`: its arguments, then the pipeline read traces -> measured
 * GPU time per (op, shapes, dtype) -> the profile table `run --profile` reads. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../workloads/trace/trace_profile.h"
#include "cli.h"

static int profile_main(int argc, char **argv);

#define MAX_TRACES 1024

typedef struct profile_args {
    const char *traces[MAX_TRACES];
    int n_traces;
    const char *output, *device;
    int quiet;
} profile_args;

static const cli_option profile_options[] = {
    {.name = "--output",
     .alias = "-o",
     .kind = CLI_STRING,
     .offset = offsetof(profile_args, output)},
    {.name = "--device", .kind = CLI_STRING, .offset = offsetof(profile_args, device)},
    {.name = "--quiet",
     .alias = "-q",
     .kind = CLI_FLAG,
     .offset = offsetof(profile_args, quiet),
     .set = 1},
    {0},
};

const cli_command cli_profile = {
    "profile",
    "  protosim profile TRACE.json[.gz]... -o OPS.json [--device GPU] [--quiet]\n",
    "records the measured GPU time of every PyTorch op (aten::mm, aten::addmm, attention,\n"
    "layer norm, ...) that PyTorch profiler (Kineto) traces recorded with their input shapes\n"
    "(record_shapes=True): the kernels each op launched, added, by (op, input shapes, dtype),\n"
    "as the median of its occurrences and their count (read by run's --profile, which uses\n"
    "them where an op of the plan matches: docs/design-notes.md, \"Profile database\").\n"
    "options:\n"
    "  -o, --output OPS.json   the table to write (required)\n"
    "  --device GPU            the traces' GPU as the device table (devices.yaml, --devices)\n"
    "                          names it\n"
    "                          (default: from the traces' deviceProperties; required when\n"
    "                          they have none)\n"
    "  --quiet, -q             no summary on stdout\n"
    "  --help, -h              this help\n"
    "exit codes: 0 ok, 1 bad input, 3 internal error\n",
    profile_main,
    profile_options,
};

static int profile_main(int argc, char **argv)
{
    profile_args a;
    memset(&a, 0, sizeof a);
    int prc = cli_parse_options(&cli_profile, profile_options, argc, argv, &a, a.traces, MAX_TRACES,
                                &a.n_traces);
    if (!prc && a.n_traces == 0)
        prc = cli_usage_error(&cli_profile, "profile needs a TRACE.json");
    if (!prc && !a.output)
        prc = cli_usage_error(&cli_profile, "profile needs -o OPS.json");
    if (prc)
        return cli_exit_code(prc);
    if (a.device) { /* a GPU of the device table */
        device_table t;
        const device_spec *d;
        if (cli_find_device(&cli_profile, "--device", a.device, &t, &d))
            return PS_EINPUT;
        device_table_free(&t);
    }
    ps_error err;
    ps_error_clear(&err);
    profile_db db;
    trace_profile_info info;
    if (trace_profile_build(a.traces, a.n_traces, a.device, &db, &info, &err)) {
        cli_file_kind_hint(err.file, FILE_KINETO, &err);
        return cli_fail(&err);
    }
    int rc = profile_db_write(a.output, &db, &err);
    if (!rc && !a.quiet)
        printf("profile of %d trace%s on %s: %d entries from %d op occurrences; %d of %d ops "
               "that launched GPU work had no recorded shapes\nwrote %s\n",
               a.n_traces, a.n_traces == 1 ? "" : "s", db.device, db.n, info.occurrences,
               info.without_shapes, info.ops, a.output);
    profile_db_free(&db);
    if (rc)
        return cli_fail(&err);
    return 0;
}
