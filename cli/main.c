/* main.c: the protosim command: picks the subcommand (cmd_*.c parse their own arguments and
 * answer --help), prints the overview, the version, and returns the exit code. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
        "  protosim --version           the version and the data directory it reads\n"
        "  protosim SUBCOMMAND --help   the subcommand's options (also: protosim help SUBCOMMAND;\n"
        "                               protosim help --options SUBCOMMAND: their names alone)\n"
        "subcommands: run (simulate one plan), replay (a profiler trace), compare (a trace beside\n"
        "  the plan's prediction), profile (measured op times from traces), cluster (write a\n"
        "  platform), collective (time collectives), sweep (simulate and rank many plans),\n"
        "  merge (join sweep shards), lookup (time an embedding-table kernel alone), kernel\n"
        "  (time a GEMM, attention, norm or elementwise kernel alone)\n"
        "every subcommand also takes --devices FILE: GPUs from a YAML list in devices.yaml's\n"
        "  schema over the bundled table (also PROTOSIM_DEVICES=FILE[:FILE...])\n"
        "exit codes: 0 ok, 1 bad input, 2 plan does not fit (with --strict-memory),\n"
        "            3 internal error\n",
        f);
}

/* `--devices FILE` (or --devices=FILE), an option of every subcommand, before or after its name:
 * taken out of argv, the file is appended to PROTOSIM_DEVICES, where every device-table load reads
 * it (device_table_load_all) and sweep's workers inherit it. 0, or PS_EINPUT after a usage
 * error. */
static int take_devices_option(int *argc, char **argv)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *a = argv[i], *file = NULL;
        if (!strcmp(a, "--devices")) {
            if (i + 1 >= *argc || !argv[i + 1][0]) {
                fprintf(stderr, "protosim: error: --devices needs a file (a YAML list of GPUs in "
                                "devices.yaml's schema)\n");
                return PS_EINPUT;
            }
            file = argv[++i];
        } else if (!strncmp(a, "--devices=", 10)) {
            file = a + 10;
            if (!file[0]) {
                fprintf(stderr, "protosim: error: --devices needs a file (a YAML list of GPUs in "
                                "devices.yaml's schema)\n");
                return PS_EINPUT;
            }
        }
        if (!file) {
            argv[out++] = argv[i];
            continue;
        }
        if (strchr(file, ':')) {
            fprintf(stderr,
                    "protosim: error: --devices %s: a device file's name may not hold ':' "
                    "(PROTOSIM_DEVICES separates files with it)\n",
                    file);
            return PS_EINPUT;
        }
        const char *old = getenv("PROTOSIM_DEVICES");
        size_t len = (old ? strlen(old) : 0) + strlen(file) + 2;
        char *list = malloc(len);
        if (!list)
            return PS_EINTERNAL;
        snprintf(list, len, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", file);
        int rc = setenv("PROTOSIM_DEVICES", list, 1);
        free(list);
        if (rc)
            return PS_EINTERNAL;
    }
    if (*argc > 0) {
        argv[out] = NULL;
        *argc = out;
    }
    return 0;
}

/* `protosim help --options NAME`: NAME's options from its table, one a line (aliases too), then
 * those of every subcommand; what the bash completion offers. */
static int list_options(const char *name)
{
    for (int i = 0; name && i < N_COMMANDS; i++) {
        if (strcmp(name, commands[i]->name))
            continue;
        for (const cli_option *o = commands[i]->options; o->name; o++) {
            printf("%s\n", o->name);
            if (o->alias)
                printf("%s\n", o->alias);
        }
        fputs("--devices\n--help\n-h\n", stdout);
        return 0;
    }
    fprintf(stderr, "protosim: error: help --options needs a subcommand (%s)\n",
            name ? "unknown" : "none given");
    overview(stderr);
    return PS_EINPUT;
}

/* What went to stdout reached it: a report that could not be written (a full disk, a closed
 * descriptor) is an error, never exit 0. */
static int stdout_written(int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "protosim: error: standard output: cannot write%s%s\n", errno ? ": " : "",
            errno ? strerror(errno) : "");
    return rc ? rc : PS_EINPUT;
}

static int run_main(int argc, char **argv);

/* A leak checker must see every allocation freed: a build with AddressSanitizer leaves
 * through exit(). */
#if defined(__SANITIZE_ADDRESS__)
#define PROTOSIM_TEARDOWN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PROTOSIM_TEARDOWN 1
#endif
#endif

int main(int argc, char **argv)
{
    int rc = stdout_written(run_main(argc, argv));
#ifndef PROTOSIM_TEARDOWN
    /* Everything is written and closed; what is left is SimGrid's platform, torn down object by
     * object in exit handlers: 90 ms of the 16,384-GPU plan's 1.2 s (2,048 nodes' hosts, links
     * and zones), all of it memory the process is about to give back whole. */
    fflush(NULL); /* every stream still open: SimGrid's log file, say */
    _exit(rc);
#endif
    return rc;
}

static int run_main(int argc, char **argv)
{
    int rc = take_devices_option(&argc, argv);
    if (rc)
        return rc;
    if (argc < 2) {
        overview(stderr);
        return PS_EINPUT;
    }
    const char *cmd = argv[1];
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(cmd, commands[i]->name))
            return commands[i]->main(argc - 2, argv + 2);
    if (!strcmp(cmd, "--version")) {
        printf("protosim %s\ndata: %s\n", PROTOSIM_VERSION, ps_data_dir());
        return 0;
    }
    if (!strcmp(cmd, "help") && argc > 2 && !strcmp(argv[2], "--commands")) {
        for (int i = 0; i < N_COMMANDS; i++) /* the bash completion's list */
            printf("%s\n", commands[i]->name);
        return 0;
    }
    if (!strcmp(cmd, "help") && argc > 2 && !strcmp(argv[2], "--options"))
        return list_options(argc > 3 ? argv[3] : NULL);
    if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
        for (int i = 0; argc > 2 && i < N_COMMANDS; i++) /* protosim help SUBCOMMAND */
            if (!strcmp(argv[2], commands[i]->name))
                return cli_help(commands[i]);
        if (argc > 2) { /* a subcommand that is none */
            fprintf(stderr, "protosim: error: help: unknown subcommand '%s'\n", argv[2]);
            overview(stderr);
            return PS_EINPUT;
        }
        overview(stdout);
        return 0;
    }
    fprintf(stderr, "protosim: error: unknown command '%s'\n", cmd);
    overview(stderr);
    return PS_EINPUT;
}
