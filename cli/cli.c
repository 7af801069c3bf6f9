/* cli.c: the subcommands' one option parser (cli_parse_options, driven by each subcommand's
 * table) and its helpers (see cli.h): help and usage errors, strict numbers. */
#include "cli.h"
#include "../sim/base/number.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_help(const cli_command *c)
{
    printf("usage:\n%s\n%s", c->synopsis, c->details);
    fputs("options of every subcommand:\n"
          "  --devices FILE      GPUs from FILE, a YAML list in devices.yaml's schema, over the\n"
          "                      bundled table: an entry replaces the GPU of its name or adds one\n"
          "                      (repeatable; also PROTOSIM_DEVICES=FILE[:FILE...])\n",
          stdout);
    return 0;
}

int cli_is_help(const char *arg)
{
    return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

int cli_usage_error(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("protosim: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage:\n%s(protosim %s --help for details)\n", c->synopsis, c->name);
    return PS_EINPUT;
}

int cli_fail(const ps_error *e)
{
    ps_error_print(e, stderr);
    return e->code ? e->code : PS_EINTERNAL;
}

int cli_find_device(const cli_command *c, const char *opt, const char *name, device_table *t,
                    const device_spec **dev)
{
    ps_error err;
    ps_error_clear(&err);
    *dev = NULL;
    if (device_table_load_all(NULL, t, &err))
        return cli_fail(&err);
    *dev = device_table_find(t, name);
    if (*dev)
        return 0;
    device_table_free(t);
    char sources[1200];
    device_table_sources(sources, sizeof sources);
    return cli_usage_error(c, "%s: no device '%s' in %s", opt, name, sources);
}

int cli_parse_int(const char *s, int *out)
{
    return ps_parse_count(s, out);
}

int cli_parse_double(const char *s, double *out)
{
    return ps_parse_decimal(s, out);
}

int cli_parse_size(const char *s, double *out)
{
    return ps_parse_size(s, out);
}

int cli_bad_value(const cli_command *c, const char *opt, const char *what, const char *v,
                  const char *expected)
{
    return cli_usage_error(c, "%s: bad %s '%s' (expected %s)", opt, what, v, expected);
}

int cli_parse_algo(const cli_command *c, const char *opt, const char *v, coll_algo *out)
{
    int a = enum_parse(coll_algo_names, v);
    if (a < 0 || a == COLL_ALGO_DIRECT)
        return cli_bad_value(c, opt, "algorithm", v, "auto, ring, tree or nvls");
    *out = (coll_algo)a;
    return 0;
}

/* The value of option argv[*i] (advancing *i), or NULL after a usage error "X needs a value". */
static const char *cli_value(const cli_command *c, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_usage_error(c, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

static const cli_option *find_option(const cli_option *table, const char *s)
{
    for (const cli_option *o = table; o->name; o++)
        if (!strcmp(s, o->name) || (o->alias && !strcmp(s, o->alias)))
            return o;
    return NULL;
}

/* Value v of option o (typed as opt) into its field; 0, or PS_EINPUT after a usage error. */
static int store_value(const cli_command *c, const cli_option *o, const char *opt, const char *v,
                       char *field)
{
    char expected[64];
    switch (o->kind) {
    case CLI_STRING: *(const char **)(void *)field = v; return 0;
    case CLI_INT: {
        int min = o->has_min ? o->min : 0, *x = (int *)(void *)field;
        if (o->has_max)
            snprintf(expected, sizeof expected, "an integer from %d to %d", min, o->max);
        else
            snprintf(expected, sizeof expected, "an integer >= %d", min);
        if (cli_parse_int(v, x) || *x < min || (o->has_max && *x > o->max))
            return cli_bad_value(c, opt, o->bad ? o->bad : "number", v, expected);
        return 0;
    }
    case CLI_DOUBLE: {
        double *x = (double *)(void *)field;
        if (o->dmax > 0)
            snprintf(expected, sizeof expected, "a decimal number %s 0 and at most %.15g",
                     o->positive ? ">" : ">=", o->dmax);
        else
            snprintf(expected, sizeof expected, "a decimal number %s 0", o->positive ? ">" : ">=");
        if (cli_parse_double(v, x) || (o->positive && *x == 0) || (o->dmax > 0 && *x > o->dmax))
            return cli_bad_value(c, opt, o->bad ? o->bad : "number", v, expected);
        return 0;
    }
    case CLI_SIZE:
        if (cli_parse_size(v, (double *)(void *)field))
            return cli_bad_value(c, opt, "size", v, CLI_SIZE_EXPECTED);
        return 0;
    case CLI_CUSTOM: return o->parse(c, v, field);
    case CLI_FLAG: break;
    }
    return 0;
}

int cli_parse_options(const cli_command *c, const cli_option *table, int argc, char **argv,
                      void *args, const char **pos, int max_pos, int *n_pos)
{
    int n_local = 0;
    if (!n_pos)
        n_pos = &n_local;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        const cli_option *o = find_option(table, s);
        if (cli_is_help(s)) {
            cli_help(c);
            return CLI_HELP_SHOWN;
        } else if (o && o->kind == CLI_FLAG) {
            *(int *)(void *)((char *)args + o->offset) = o->set;
        } else if (o) {
            const char *v = cli_value(c, argc, argv, &i);
            if (!v || store_value(c, o, s, v, (char *)args + o->offset))
                return PS_EINPUT;
        } else if (s[0] == '-') {
            return cli_usage_error(c, "unknown option '%s'", s);
        } else if (*n_pos < max_pos) {
            pos[(*n_pos)++] = s;
        } else {
            return cli_usage_error(c, "unexpected argument '%s'", s);
        }
    }
    return 0;
}

int cli_exit_code(int parse_result)
{
    return parse_result == CLI_HELP_SHOWN ? 0 : parse_result;
}
