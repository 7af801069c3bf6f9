/* cli.c: helpers shared by the subcommands' argument parsers (see cli.h): help and usage
 * errors, option values, strict numbers. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_help(const cli_command *c)
{
    printf("usage:\n%s\n%s", c->synopsis, c->details);
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

const char *cli_value(const cli_command *c, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        cli_usage_error(c, "%s needs a value", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

int cli_parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < -1000000000L || v > 1000000000L)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    *out = strtod(s, &end);
    return (!*s || *end) ? -1 : 0;
}
