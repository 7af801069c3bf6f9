/* cli.h: the `protosim` subcommands (one cli_command each, parsed in cmd_*.c) and the helpers
 * their argument parsers share: the table-driven option parser, usage on --help, usage errors,
 * strict numbers. */
#ifndef PROTOSIM_CLI_H
#define PROTOSIM_CLI_H

#include <stddef.h>

#include "../sim/base/error.h"
#include "../sim/engine/htae.h"

struct cli_option;
typedef struct cli_command {
    const char *name;     /* "run" */
    const char *synopsis; /* "protosim run STRATEGY.yaml --cluster CLUSTER.xml [...]" lines */
    const char *details;  /* what it does and each option, for `protosim NAME --help` */
    int (*main)(int argc, char **argv); /* argv: the arguments after the subcommand's name */
    /* its options, the one table: its parser reads it, `protosim help --options NAME` lists it
     * (the bash completion asks), tests/test_cli.c holds --help, the manual page and the
     * guides in docs/ to it */
    const struct cli_option *options;
} cli_command;

extern const cli_command cli_run, cli_replay, cli_profile, cli_cluster, cli_collective, cli_sweep,
    cli_merge, cli_lookup, cli_compare, cli_kernel;

/* `protosim NAME --help`: the subcommand's usage on stdout; returns 0. */
int cli_help(const cli_command *c);
/* "-h" or "--help". */
int cli_is_help(const char *arg);
/* "protosim: error: <fmt...>" and the subcommand's synopsis on stderr; returns PS_EINPUT. */
int cli_usage_error(const cli_command *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Print e once (main's one place for errors); returns its exit code. */
int cli_fail(const ps_error *e);

/* What an input file is, from its first bytes (cli/file_kind.c). */
typedef enum file_kind {
    FILE_UNKNOWN,
    FILE_EMPTY,
    FILE_STRATEGY,
    FILE_SWEEP,
    FILE_MODEL,
    FILE_DEVICES,
    FILE_CLUSTER, /* a protosim cluster description; as expected: --cluster's either kind */
    FILE_PLATFORM,
    FILE_HWLOC,
    FILE_KINETO,
    FILE_ET,
    FILE_CHAKRA,
    FILE_PROFILE,
    FILE_SWEEP_JSON,
    FILE_COUNT
} file_kind;
file_kind cli_file_kind(const char *path);
/* After a loader failed on `path` (err set) where a file of kind `expected` belongs: when the
 * file is recognisably another kind (or empty), err becomes that, naming the subcommand or
 * option that takes it; otherwise err stays the loader's. Returns err's code. */
int cli_file_kind_hint(const char *path, file_kind expected, ps_error *err);

/* One option of a subcommand, in a table ended by {0}. The value goes at `offset` (offsetof)
 * in the args struct given to cli_parse_options. */
typedef enum cli_kind {
    CLI_FLAG,   /* no value: int = set */
    CLI_STRING, /* const char * = the value */
    CLI_INT,    /* int, strict; with has_min, also >= min */
    CLI_DOUBLE, /* double, strict (cli_parse_double) */
    CLI_SIZE,   /* double, a byte count (cli_parse_size) */
    CLI_CUSTOM, /* parse(c, value, field): 0, or PS_EINPUT after its own usage error */
} cli_kind;

typedef struct cli_option {
    const char *name;  /* "--jobs" */
    const char *alias; /* "-j", or NULL */
    cli_kind kind;
    size_t offset;
    int set;          /* CLI_FLAG: the value stored */
    int has_min, min; /* CLI_INT: reject values below min */
    int has_max, max; /* CLI_INT: reject values above max (a limit of sim/base/limits.h) */
    int positive;     /* CLI_DOUBLE: reject 0 */
    double dmax;      /* CLI_DOUBLE: reject values above it (0: no bound) */
    const char *bad;  /* CLI_INT/CLI_DOUBLE: "OPT: bad <bad> '<value>'" (default "number") */
    int (*parse)(const cli_command *c, const char *v, void *field); /* CLI_CUSTOM */
} cli_option;

/* cli_parse_options's result besides 0 and PS_EINPUT: --help was printed (exit 0). */
#define CLI_HELP_SHOWN (-1)

/* Walk argv (the arguments after the subcommand's name): -h/--help prints c's help and returns
 * CLI_HELP_SHOWN; each option of table stores its value into args; up to max_pos positionals
 * go to pos[] in order (*n_pos, when not NULL, counts them from its value). A usage error ("unknown option 'X'", "X needs a
 * value", "bad ... 'V'", "unexpected argument 'X'") returns PS_EINPUT. */
int cli_parse_options(const cli_command *c, const cli_option *table, int argc, char **argv,
                      void *args, const char **pos, int max_pos, int *n_pos);
/* A cli_parse_options result as an exit code (CLI_HELP_SHOWN: 0). */
int cli_exit_code(int parse_result);

/* Strict numbers, the one parser of every number on the command line: the whole string must
 * parse (no sign, spaces, hex, nan or inf). 0, or -1. cli_parse_int: decimal digits, at most 1e9
 * (counts). cli_parse_double: digits, optional fraction and exponent, finite. cli_parse_size:
 * digits then an optional K, M, G, T (powers of 1000; also k) or Ki, Mi, Gi, Ti (powers of
 * 1024): "1M" = 1000000, "1Gi" = 1073741824; at most PS_MAX_BYTES (1e18). */
int cli_parse_int(const char *s, int *out);
int cli_parse_double(const char *s, double *out);
int cli_parse_size(const char *s, double *out);

#define CLI_SIZE_EXPECTED                                                                          \
    "a number of bytes up to 1e18, optionally with K, M, G, T, Ki, Mi, Gi or Ti"

/* An NCCL algorithm name (auto, ring, tree, nvls) into *out: 0, or PS_EINPUT after a usage
 * error naming opt. */
int cli_parse_algo(const cli_command *c, const char *opt, const char *v, coll_algo *out);

/* The GPU `name` given with option `opt` of c, from topology/devices/devices.yaml: loads the
 * table into *t and points *dev at the entry; 0. Else the table's error, or the usage error
 * "OPT: no device 'NAME' in PATH", is printed and returned (*t is then freed). */
int cli_find_device(const cli_command *c, const char *opt, const char *name, device_table *t,
                    const device_spec **dev);

/* A rank list given with `option` ("0-7", "0,3,8-11"; ranks and inclusive ranges, in the
 * order written) into *ranks (caller frees) and *n: 0, or PS_EINPUT naming option (bad syntax,
 * more than PS_MAX_GPUS GPUs). Ranks are not checked against a cluster. */
int cli_rank_list(const char *option, const char *spec, int **ranks, int *n, ps_error *err);

/* The GPUs of c a plan of `need` GPUs runs on (cli/gpu_select.c), in *use: c itself when the
 * plan takes them all (or more: the compiler's error) and spec is NULL; else a view of c
 * (cluster_view, in *view) of spec's GPUs (--gpus LIST, which must list `need` GPUs), or of
 * the first `need` when spec is NULL. 0, or PS_EINPUT naming --gpus. */
int cli_plan_cluster(const cluster *c, int64_t need, const char *spec, cluster *view,
                     const cluster **use, ps_error *err);
/* Free what cli_plan_cluster made (nothing when *use was c). */
void cli_plan_cluster_free(const cluster *c, cluster *view, const cluster *use);

/* The usage error "OPT: bad WHAT 'V' (expected EXPECTED)"; returns PS_EINPUT. */
int cli_bad_value(const cli_command *c, const char *opt, const char *what, const char *v,
                  const char *expected);

#endif
