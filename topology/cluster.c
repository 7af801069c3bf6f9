/* cluster.c: loading a cluster: start SimGrid on the platform, find the GPUs, order them into
 * ranks, attach device specs, and group them into nodes (by `node` property, else netzone). */
#include "cluster.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>

#include "../sim/base/xalloc.h"
#include "cluster_desc.h"
#include "platform_scan.h"

/* What cluster_load's checks need to point at a line: the file and its libxml2 scan. */
typedef struct load_ctx {
    const char *path;
    const platform_scan *scan;
} load_ctx;

/* Line of `<host id="NAME"` in the platform file, so errors about a host point at it. */
static int host_line(const load_ctx *lc, const char *name)
{
    return platform_scan_line(lc->scan, "host", name);
}

/* Natural order: digit runs compare as numbers, so n0g2 < n0g10. */
static int natural_compare(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            size_t la = 0, lb = 0;
            while (isdigit((unsigned char)a[la]))
                la++;
            while (isdigit((unsigned char)b[lb]))
                lb++;
            if (la != lb)
                return la < lb ? -1 : 1;
            int c = strncmp(a, b, la);
            if (c)
                return c;
            a += la;
            b += lb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}

static int compare_hosts_by_name(const void *x, const void *y)
{
    const char *a = sg_host_get_name(*(const sg_host_t *)x);
    const char *b = sg_host_get_name(*(const sg_host_t *)y);
    int c = natural_compare(a, b);
    return c ? c : strcmp(a, b);
}

static int parse_rank(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

/* Put the GPU hosts in rank order: by `rank` property if every GPU has one, else by name. */
static int order_ranks(const load_ctx *lc, sg_host_t *gpus, int n, ps_error *err)
{
    int with_rank = 0;
    for (int i = 0; i < n; i++)
        with_rank += sg_host_get_property_value(gpus[i], "rank") != NULL;
    if (with_rank == 0) {
        qsort(gpus, (size_t)n, sizeof *gpus, compare_hosts_by_name);
        return 0;
    }

    sg_host_t *ordered = xcalloc((size_t)n, sizeof *ordered);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *name = sg_host_get_name(gpus[i]);
        const char *value = sg_host_get_property_value(gpus[i], "rank");
        int r;
        if (!value)
            rc = ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "rank",
                              "GPU host '%s' has no rank property, but %d other GPUs have one "
                              "(give every GPU a rank, or none)",
                              name, with_rank);
        else if (parse_rank(value, &r))
            rc =
                ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "rank",
                             "GPU host '%s': rank '%s' is not a non-negative integer", name, value);
        else if (r >= n)
            rc = ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "rank",
                              "GPU host '%s': rank %d leaves a gap (ranks must be 0..%d)", name, r,
                              n - 1);
        else if (ordered[r])
            rc = ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "rank",
                              "GPU hosts '%s' and '%s' both have rank %d",
                              sg_host_get_name(ordered[r]), name, r);
        else
            ordered[r] = gpus[i];
    }
    /* n distinct ranks in 0..n-1 fill every slot, so no gap check is needed beyond r < n. */
    if (!rc)
        memcpy(gpus, ordered, (size_t)n * sizeof *gpus);
    free(ordered);
    return rc;
}

/* The device table's names, comma-separated, into known[cap]. */
static void known_devices(const device_table *t, char *known, size_t cap)
{
    size_t len = 0;
    known[0] = '\0';
    for (int i = 0; i < t->n && len < cap; i++)
        len += (size_t)snprintf(known + len, cap - len, "%s%s", i ? ", " : "", t->specs[i].name);
}

static int unknown_device(const load_ctx *lc, const char *host, const char *gpu,
                          const device_table *t, ps_error *err)
{
    char known[600];
    known_devices(t, known, sizeof known);
    return ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, host), 0, "gpu",
                        "GPU host '%s': unknown device '%s' (known: %s; a GPU of your own comes "
                        "with --devices FILE)",
                        host, gpu, known);
}

/* The node name of rank r's GPU into *out: its `node` property when with_node (the number of
 * GPUs that have one) is not 0, else the netzone holding it. 0, or an error. */
static int node_name(const load_ctx *lc, const cluster *c, int r, int with_node, const char **out,
                     ps_error *err)
{
    const char *name = c->host_names[r];
    *out = with_node ? sg_host_get_property_value(c->sg_hosts[r], "node")
                     : cluster_platform_host_zone(c->sg_hosts[r]);
    if (!*out && with_node)
        return ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "node",
                            "GPU host '%s' has no node property, but %d other GPUs have one "
                            "(give every GPU a node, or none)",
                            name, with_node);
    if (!*out)
        return ps_error_set(err, PS_EINTERNAL, lc->path, 0, 0, "", "host '%s' has no netzone",
                            name);
    return 0;
}

/* Node of each rank, numbered densely in rank order: by the `node` property if any GPU has one
 * (then every GPU must), else by the netzone holding the host. Ranks are usually node-major, so
 * the last node seen is tried first. */
static int assign_nodes(const load_ctx *lc, cluster *c, ps_error *err)
{
    int with_node = 0;
    for (int r = 0; r < c->n_gpus; r++)
        with_node += sg_host_get_property_value(c->sg_hosts[r], "node") != NULL;
    const char **names = xcalloc((size_t)c->n_gpus, sizeof *names);
    c->n_nodes = 0;
    for (int r = 0; r < c->n_gpus; r++) {
        const char *z;
        int rc = node_name(lc, c, r, with_node, &z, err);
        if (rc) {
            free(names);
            return rc;
        }
        int k = c->n_nodes - 1;
        if (k < 0 || strcmp(names[k], z))
            for (k = 0; k < c->n_nodes && strcmp(names[k], z);)
                k++;
        if (k == c->n_nodes)
            names[c->n_nodes++] = z;
        c->node_of_rank[r] = k;
    }
    free(names);
    return 0;
}

/* The GPU's `slowdown` property: a finite number > 0, 1 when absent. */
static int parse_slowdown(const load_ctx *lc, sg_host_t host, double *out, ps_error *err)
{
    const char *value = sg_host_get_property_value(host, "slowdown");
    *out = 1.0;
    if (!value)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(value, &end);
    if (end == value || *end || errno || !isfinite(v) || v <= 0) {
        const char *name = sg_host_get_name(host);
        return ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "slowdown",
                            "GPU host '%s': slowdown '%s' is not a finite number > 0 (1.2: "
                            "kernels 20%% slower)",
                            name, value);
    }
    *out = v;
    return 0;
}

/* Every link's bandwidth and latency in the ranges of cluster.h (CLUSTER_LINK_*): SimGrid takes
 * any number, and nan, inf, zero or absurd values hang, crash or give meaningless times. */
static int check_links(const load_ctx *lc, ps_error *err)
{
    size_t n = sg_link_count();
    sg_link_t *links = sg_link_list();
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        double bw = sg_link_get_bandwidth(links[i]), lat = sg_link_get_latency(links[i]);
        int bw_ok = bw >= CLUSTER_LINK_BW_MIN && bw <= CLUSTER_LINK_BW_MAX; /* false for nan */
        int lat_ok = lat >= 0 && lat <= CLUSTER_LINK_LATENCY_MAX;
        if (bw_ok && lat_ok)
            continue;
        /* a SPLITDUPLEX link L is loaded as L_UP and L_DOWN */
        char name[300];
        snprintf(name, sizeof name, "%s", sg_link_get_name(links[i]));
        int line = platform_scan_line(lc->scan, "link", name);
        size_t len = strlen(name);
        for (int k = 0; !line && k < 2; k++) {
            const char *suffix = k ? "_DOWN" : "_UP";
            size_t sl = strlen(suffix);
            if (len > sl && !strcmp(name + len - sl, suffix)) {
                name[len - sl] = '\0';
                line = platform_scan_line(lc->scan, "link", name);
            }
        }
        if (!bw_ok)
            rc = ps_error_set(err, PS_EINPUT, lc->path, line, 0, "bandwidth",
                              "link '%s': bandwidth %g B/s is outside [%g, %g] B/s (1 MB/s to "
                              "10 PB/s)",
                              name, bw, CLUSTER_LINK_BW_MIN, CLUSTER_LINK_BW_MAX);
        else
            rc = ps_error_set(err, PS_EINPUT, lc->path, line, 0, "latency",
                              "link '%s': latency %g s is outside [0, %g] s", name, lat,
                              CLUSTER_LINK_LATENCY_MAX);
    }
    free(links);
    return rc;
}

/* Every host's speed a finite number > 0 (SimGrid takes 0, negative and nan speeds). */
static int check_hosts(const load_ctx *lc, ps_error *err)
{
    size_t n = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        double speed = sg_host_get_speed(hosts[i]);
        if (!(speed > 0 && isfinite(speed))) {
            const char *name = sg_host_get_name(hosts[i]);
            rc = ps_error_set(err, PS_EINPUT, lc->path, host_line(lc, name), 0, "speed",
                              "host '%s': speed %g flop/s is not a finite number > 0", name, speed);
        }
    }
    free(hosts);
    return rc;
}

/* Load the file platform_scan.c checked into SimGrid, then check its links and hosts. */
static int load_platform(const load_ctx *lc, ps_error *err)
{
    char msg[700];
    int line;
    int loaded = cluster_platform_load(lc->path, msg, sizeof msg, &line);
    if (loaded)
        return ps_error_set(err, loaded == -2 ? PS_EINTERNAL : PS_EINPUT, lc->path, line, 0, "",
                            "%s", msg);
    return check_links(lc, err) || check_hosts(lc, err) ? err->code : 0;
}

/* The per-rank arrays of n GPUs (cluster_free frees them). */
static void alloc_ranks(cluster *c, int n)
{
    c->n_gpus = n;
    c->host_names = xcalloc((size_t)n, sizeof *c->host_names);
    c->sg_hosts = xcalloc((size_t)n, sizeof *c->sg_hosts);
    c->node_of_rank = xcalloc((size_t)n, sizeof *c->node_of_rank);
    c->device = xcalloc((size_t)n, sizeof *c->device);
    c->slowdown = xcalloc((size_t)n, sizeof *c->slowdown);
}

/* Rank order, device, slowdown and node of every GPU host. */
static int load_gpus(const load_ctx *lc, cluster *out, ps_error *err)
{
    size_t n_hosts = sg_host_count();
    sg_host_t *hosts = sg_host_list();
    int n = 0;
    for (size_t i = 0; i < n_hosts; i++)
        if (sg_host_get_property_value(hosts[i], "gpu"))
            hosts[n++] = hosts[i];
    if (n == 0) {
        free(hosts);
        return ps_error_set(err, PS_EINPUT, lc->path, 0, 0, "gpu",
                            "no GPU in the platform (GPUs are hosts with "
                            "<prop id=\"gpu\" value=\"A100-SXM4-80GB\"/>, say)");
    }

    int rc = order_ranks(lc, hosts, n, err);
    if (!rc)
        alloc_ranks(out, n);
    for (int r = 0; !rc && r < n; r++) {
        const char *name = sg_host_get_name(hosts[r]);
        const char *gpu = sg_host_get_property_value(hosts[r], "gpu");
        out->host_names[r] = xstrdup(name);
        out->sg_hosts[r] = hosts[r];
        if (!(out->device[r] = device_table_find(&out->devices, gpu)))
            rc = unknown_device(lc, name, gpu, &out->devices, err);
        else
            rc = parse_slowdown(lc, hosts[r], &out->slowdown[r], err);
    }
    free(hosts);
    return rc ? rc : assign_nodes(lc, out, err);
}

/* A cluster description's platform, built (cluster_desc.h): the GPUs come in rank order with
 * their nodes; an unknown GPU is an error at the model naming it. The engine takes d. */
static int load_description(cluster_desc *d, cluster *out, ps_error *err)
{
    const fabric *f = &d->layout;
    for (int i = 0; i < d->n_models; i++)
        if (!device_table_find(&out->devices, d->models[i].gpu)) {
            char known[600];
            known_devices(&out->devices, known, sizeof known);
            ps_error_set(err, PS_EINPUT, d->file, d->gpu_loc[i].line, d->gpu_loc[i].column,
                         "node_models.gpu",
                         "node model '%s': unknown device '%s' (known: %s; a GPU of your own "
                         "comes with --devices FILE)",
                         d->models[i].kind, d->models[i].gpu, known);
            cluster_desc_free(d);
            return err->code;
        }
    int n = f->gpus;
    out->n_nodes = f->nodes;
    alloc_ranks(out, n);
    for (int r = 0; r < n; r++) {
        int node = f->node_of_rank[r];
        out->node_of_rank[r] = node;
        out->device[r] = device_table_find(&out->devices, f->models[f->model_of[node]]->gpu);
        out->slowdown[r] = 1.0;
    }
    for (int i = 0; i < d->n_slow; i++)
        out->slowdown[d->slow_rank[i]] = d->slow_factor[i];
    char msg[700];
    int built = cluster_platform_build(d, out->sg_hosts, msg, sizeof msg); /* d is the engine's */
    if (built)
        return ps_error_set(err, built == -2 ? PS_EINTERNAL : PS_EINPUT, out->file, 0, 0, "", "%s",
                            msg);
    for (int r = 0; r < n; r++)
        out->host_names[r] = xstrdup(sg_host_get_name(out->sg_hosts[r]));
    return 0;
}

int cluster_load(const char *platform_path, const char *data_dir, cluster *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->file, sizeof out->file, "%s", platform_path);

    if (cluster_desc_sniff(platform_path)) {
        cluster_desc *d;
        int rc = cluster_desc_load(platform_path, &d, err);
        if (!rc && (rc = device_table_load_all(data_dir, &out->devices, err)))
            cluster_desc_free(d);
        if (!rc)
            rc = load_description(d, out, err);
        if (rc)
            cluster_free(out);
        return rc;
    }

    /* SimGrid aborts, crashes, hangs or exits on some files instead of throwing: read the file
     * with libxml2 first (platform_scan.c). */
    platform_scan *scan;
    int rc = platform_scan_file(platform_path, &scan, err);
    if (rc)
        return rc;
    load_ctx lc = {platform_path, scan};
    rc = device_table_load_all(data_dir, &out->devices, err);
    if (!rc)
        rc = load_platform(&lc, err);
    if (!rc)
        rc = load_gpus(&lc, out, err);
    if (!rc)
        rc = platform_scan_check_pairs(scan, err);
    platform_scan_free(scan);
    if (rc)
        cluster_free(out);
    return rc;
}

void cluster_free(cluster *c)
{
    if (c->host_names)
        for (int i = 0; i < c->n_gpus; i++)
            free(c->host_names[i]);
    free(c->host_names);
    free(c->sg_hosts);
    free(c->node_of_rank);
    free(c->device);
    free(c->slowdown);
    free(c->file_rank);
    device_table_free(&c->devices);
    c->host_names = NULL;
    c->sg_hosts = NULL;
    c->node_of_rank = NULL;
    c->device = NULL;
    c->slowdown = NULL;
    c->file_rank = NULL;
    c->n_gpus = c->n_nodes = c->file_gpus = 0;
}

/* The file's rank of c's rank i (c itself when it is no view). */
static int file_rank_of(const cluster *c, int i)
{
    return c->file_rank ? c->file_rank[i] : i;
}

int cluster_view(const cluster *c, const int *ranks, int n, const char *option, cluster *view,
                 ps_error *err)
{
    int total = c->n_gpus;
    unsigned char *taken = xcalloc((size_t)total, 1);
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= total) {
            free(taken);
            return ps_error_set(err, PS_EINPUT, NULL, 0, 0, NULL,
                                "%s: GPU %d is not in the cluster (%s has GPUs 0-%d)", option,
                                ranks[i], c->file, total - 1);
        }
        if (taken[ranks[i]]++) {
            free(taken);
            return ps_error_set(err, PS_EINPUT, NULL, 0, 0, NULL, "%s: GPU %d is listed twice",
                                option, ranks[i]);
        }
    }
    free(taken);
    *view = *c; /* the file's name, the device table (shared) */
    alloc_ranks(view, n);
    view->file_rank = xcalloc((size_t)n, sizeof *view->file_rank);
    view->file_gpus = c->file_gpus ? c->file_gpus : total;
    int *node_new = xmalloc((size_t)(c->n_nodes > 0 ? c->n_nodes : 1) * sizeof *node_new);
    for (int k = 0; k < c->n_nodes; k++)
        node_new[k] = -1;
    view->n_nodes = 0;
    for (int i = 0; i < n; i++) {
        int r = ranks[i], old = c->node_of_rank[r];
        view->file_rank[i] = file_rank_of(c, r);
        view->host_names[i] = xstrdup(c->host_names[r]);
        view->sg_hosts[i] = c->sg_hosts[r];
        view->device[i] = c->device[r];
        view->slowdown[i] = c->slowdown[r];
        if (node_new[old] < 0)
            node_new[old] = view->n_nodes++;
        view->node_of_rank[i] = node_new[old];
    }
    free(node_new);
    return 0;
}

void cluster_view_free(cluster *view)
{
    memset(&view->devices, 0, sizeof view->devices); /* the cluster's */
    cluster_free(view);
}

void cluster_selected_text(const cluster *c, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; i < c->n_gpus && k + 1 < size;) {
        int a = file_rank_of(c, i), j = i;
        while (j + 1 < c->n_gpus && file_rank_of(c, j + 1) == a + (j + 1 - i))
            j++;
        int b = a + (j - i);
        char part[32];
        int m = a == b ? snprintf(part, sizeof part, "%s%d", i ? "," : "", a)
                       : snprintf(part, sizeof part, "%s%d-%d", i ? "," : "", a, b);
        if (k + (size_t)m + 4 >= size) {
            snprintf(buf + k, size - k, "...");
            return;
        }
        memcpy(buf + k, part, (size_t)m + 1);
        k += (size_t)m;
        i = j + 1;
    }
}

int cluster_scale_bandwidth(const cluster *c, double factor)
{
    assert(c && factor > 0 && isfinite(factor));
    (void)c;
    size_t n = sg_link_count();
    sg_link_t *links = sg_link_list();
    int inside = 1;
    for (size_t i = 0; i < n && inside; i++) {
        double bw = sg_link_get_bandwidth(links[i]) * factor;
        inside = bw >= CLUSTER_LINK_BW_MIN && bw <= CLUSTER_LINK_BW_MAX;
    }
    for (size_t i = 0; i < n && inside; i++)
        sg_link_set_bandwidth(links[i], sg_link_get_bandwidth(links[i]) * factor);
    free(links);
    if (inside)
        cluster_platform_bandwidths_changed();
    return inside ? (int)n : -1;
}
