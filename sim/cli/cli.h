/* cli.h: the `protosim` subcommands (one cli_command each, parsed in cmd_*.c) and the helpers
 * their argument parsers share: usage on --help, usage errors, strict numbers, option values. */
#ifndef PROTOSIM_CLI_H
#define PROTOSIM_CLI_H

#include "../base/error.h"

typedef struct cli_command {
    const char *name;     /* "run" */
    const char *synopsis; /* "protosim run STRATEGY.yaml --cluster CLUSTER.xml [...]" lines */
    const char *details;  /* what it does and each option, for `protosim NAME --help` */
    int (*main)(int argc, char **argv); /* argv: the arguments after the subcommand's name */
} cli_command;

extern const cli_command cli_run, cli_cluster, cli_collective, cli_sweep, cli_merge;

/* `protosim NAME --help`: the subcommand's usage on stdout; returns 0. */
int cli_help(const cli_command *c);
/* "-h" or "--help". */
int cli_is_help(const char *arg);
/* "protosim: error: <fmt...>" and the subcommand's synopsis on stderr; returns PS_EINPUT. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print e once (main's one place for errors); returns its exit code. */
int cli_fail(const ps_error *e);

/* The value of option argv[*i] (advancing *i), or NULL after a usage error "X needs a value". */
const char *cli_value(const cli_command *c, int argc, char **argv, int *i);
/* Strict numbers: the whole string must parse. 0, or -1. */
int cli_parse_int(const char *s, int *out);
int cli_parse_double(const char *s, double *out);

#endif
