/* main.c: the protosim command: picks the subcommand (cmd_*.c parse their own arguments and
 * answer --help), prints the overview, the version, and returns the exit code. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define PROTOSIM_VERSION "0.1.0"

static const cli_command *const commands[] = {
    &cli_run,        &cli_replay, &cli_compare, &cli_profile, &cli_cluster,
    &cli_collective, &cli_sweep,  &cli_merge,   &cli_lookup,  &cli_kernel};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void overview(FILE *f)
{
    fputs("usage:\n", f);
    for (int i = 0; i < N_COMMANDS; i++)
        fputs(commands[i]->synopsis, f);
    fputs(
        "  protosim --version\n"
        "  protosim SUBCOMMAND --help   the subcommand's options\n"
        "subcommands: run (simulate one plan), replay (a profiler trace), compare (a trace beside\n"
        "  the plan's prediction), profile (measured op times from traces), cluster (write a\n"
        "  platform), collective (time collectives), sweep (simulate and rank many plans),\n"
        "  merge (join sweep shards), lookup (time an embedding-table kernel alone), kernel\n"
        "  (time a GEMM, attention, norm or elementwise kernel alone)\n"
        "exit codes: 0 ok, 1 bad input, 2 plan does not fit (with --strict-memory),\n"
        "            3 internal error\n",
        f);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        overview(stderr);
        return PS_EINPUT;
    }
    const char *cmd = argv[1];
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(cmd, commands[i]->name))
            return commands[i]->main(argc - 2, argv + 2);
    if (!strcmp(cmd, "--version")) {
        printf("protosim %s\n", PROTOSIM_VERSION);
        return 0;
    }
    if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
        for (int i = 0; argc > 2 && i < N_COMMANDS; i++) /* protosim help SUBCOMMAND */
            if (!strcmp(argv[2], commands[i]->name))
                return cli_help(commands[i]);
        overview(stdout);
        return 0;
    }
    fprintf(stderr, "protosim: error: unknown command '%s'\n", cmd);
    overview(stderr);
    return PS_EINPUT;
}
