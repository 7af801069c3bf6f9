/* file_kind.c: what an input file is, from its first bytes, so that a file given to the wrong
 * subcommand or option is named for what it is (issue 30 item 6): a strategy, a sweep, a model,
 * a device table, a cluster description, a SimGrid platform, an hwloc export, a Kineto trace, a
 * PyTorch execution trace, a Chakra trace, a profile database, a sweep's JSON. Only a loader's
 * failure asks (cli_file_kind_hint): a file the loader accepts is never second-guessed. */
#include <stdio.h>
#include <string.h>

#include "../workloads/trace/trace.h"
#include "cli.h"

static const struct {
    file_kind kind;
    const char *what, *taken_by;
} kinds[FILE_COUNT] = {
    [FILE_UNKNOWN] = {FILE_UNKNOWN, NULL, NULL},
    [FILE_EMPTY] = {FILE_EMPTY, "an empty file", NULL},
    [FILE_STRATEGY] = {FILE_STRATEGY, "a strategy (a plan)", "protosim run STRATEGY.yaml"},
    [FILE_SWEEP] = {FILE_SWEEP, "a sweep (base and axes)", "protosim sweep SWEEP.yaml"},
    [FILE_MODEL] = {FILE_MODEL, "a model", "a strategy's `workload:` (by name or path)"},
    [FILE_DEVICES] = {FILE_DEVICES, "a device table", "--devices FILE"},
    [FILE_CLUSTER] = {FILE_CLUSTER, "a protosim cluster description", "--cluster"},
    [FILE_PLATFORM] = {FILE_PLATFORM, "a SimGrid platform (XML)", "--cluster"},
    [FILE_HWLOC] = {FILE_HWLOC, "an hwloc export (XML)", "protosim cluster --from-hwloc"},
    [FILE_KINETO] = {FILE_KINETO, "a PyTorch profiler (Kineto) trace",
                     "protosim replay, compare or profile"},
    [FILE_ET] = {FILE_ET, "a PyTorch execution trace", "protosim replay TRACE.json --et"},
    [FILE_CHAKRA] = {FILE_CHAKRA, "a Chakra execution trace", "protosim replay"},
    [FILE_PROFILE] = {FILE_PROFILE, "a profile database", "--profile"},
    [FILE_SWEEP_JSON] = {FILE_SWEEP_JSON, "a sweep's JSON (a shard)", "protosim merge"},
};

/* Whether a line of text starts with `key:` at its first column. */
static int has_top_key(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *line = text; line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (!strncmp(line, key, n) && line[n] == ':')
            return 1;
    }
    return 0;
}

file_kind cli_file_kind(const char *path)
{
    static char head[65536];
    int n = trace_file_head(path, head, (int)sizeof head);
    if (n < 0)
        return FILE_UNKNOWN;
    size_t skip = strspn(head, " \t\r\n");
    if ((int)skip == n)
        return FILE_EMPTY;
    char c = head[skip];
    if (c == '<')
        return strstr(head, "<topology")   ? FILE_HWLOC
               : strstr(head, "<platform") ? FILE_PLATFORM
                                           : FILE_UNKNOWN;
    if (c == '{' || c == '[') {
        if (strstr(head, "\"traceEvents\""))
            return FILE_KINETO;
        if (strstr(head, "\"protosim_profile\""))
            return FILE_PROFILE;
        if (strstr(head, "\"nodes\"") && strstr(head, "\"schema\""))
            return FILE_ET;
        if (strstr(head, "\"plans\""))
            return FILE_SWEEP_JSON;
        return FILE_UNKNOWN;
    }
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f)
        return FILE_CHAKRA; /* binary: a varint length, then protobuf */
    if (has_top_key(head, "protosim_cluster"))
        return FILE_CLUSTER;
    if (has_top_key(head, "base") && has_top_key(head, "axes"))
        return FILE_SWEEP;
    if (has_top_key(head, "workload") || has_top_key(head, "strategy"))
        return FILE_STRATEGY;
    if (has_top_key(head, "family") && has_top_key(head, "layers"))
        return FILE_MODEL;
    if (strstr(head, "- name:") && strstr(head, "architecture:"))
        return FILE_DEVICES;
    return FILE_UNKNOWN;
}

int cli_file_kind_hint(const char *path, file_kind expected, ps_error *err)
{
    if (!path || !path[0])
        return err->code;
    file_kind k = cli_file_kind(path);
    /* --cluster takes either kind of cluster; replay reads Chakra traces as well as Kineto's */
    int alike = (expected == FILE_CLUSTER && k == FILE_PLATFORM) ||
                (expected == FILE_KINETO && k == FILE_CHAKRA);
    if (k == FILE_UNKNOWN || k == expected || alike)
        return err->code;
    const char *want = expected == FILE_CLUSTER
                           ? "a cluster (a protosim cluster description or a SimGrid platform)"
                           : kinds[expected].what;
    char msg[sizeof err->message];
    if (k == FILE_EMPTY)
        snprintf(msg, sizeof msg, "an empty file, where %s was expected", want);
    else
        snprintf(msg, sizeof msg, "this is %s, not %s: %s takes it", kinds[k].what, want,
                 kinds[k].taken_by);
    char file[sizeof err->file]; /* path may be err->file itself */
    snprintf(file, sizeof file, "%s", path);
    int code = err->code;
    ps_error_clear(err);
    return ps_error_set(err, code ? code : PS_EINPUT, file, 0, 0, NULL, "%s", msg);
}
