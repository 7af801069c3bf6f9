/* sim_util.c: see sim_util.h. */
#include "sim_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

#include "../sim/base/xalloc.h"

void sim_load(const char *rel, cluster *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ps_data_dir(), rel);
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, &err);
    ck_assert_msg(rc == 0, "cluster_load(%s): %s", path, err.message);
}

char *sim_temp_file(const char *suffix, const char *text)
{
    char *path = xmalloc(64);
    snprintf(path, 64, "/tmp/protosim_test_XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

void sim_strategy_load(const char *rel, strategy *s)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", ps_data_dir(), rel);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(strategy_load(path, ps_data_dir(), s, &err) == 0, "%s", err.message);
}

int sim_strategy_text(const char *text, strategy *s, ps_error *err)
{
    char *path = sim_temp_file("", text);
    ps_error_clear(err);
    int rc = strategy_load(path, ps_data_dir(), s, err);
    unlink(path);
    free(path);
    return rc;
}

void sim_expect_strategy_error(const char *text, const char *field, int line, const char *needle)
{
    strategy s;
    ps_error err;
    ck_assert_int_eq(sim_strategy_text(text, &s, &err), PS_EINPUT);
    ck_assert_str_eq(err.field, field);
    ck_assert_int_eq(err.line, line);
    ck_assert_msg(strstr(err.message, needle), "%s", err.message);
}

int sim_cluster_text(const char *xml, cluster *c, ps_error *err)
{
    char *path = sim_temp_file(".xml", xml); /* SimGrid wants a .xml name */
    ps_error_clear(err);
    cluster_engine_start();
    int rc = cluster_load(path, ps_data_dir(), c, err);
    unlink(path);
    free(path);
    return rc;
}

void sim_load_generated(const char *kind, cluster_gen_opts o, cluster *c)
{
    char *xml = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&xml, &n);
    ck_assert_ptr_nonnull(f);
    ps_error err;
    ps_error_clear(&err);
    o.format = CLUSTER_FORMAT_DESCRIPTION; /* what protosim cluster writes by default */
    ck_assert_msg(cluster_generate(kind, &o, f, &err) == 0, "%s", err.message);
    fclose(f);
    ck_assert_msg(sim_cluster_text(xml, c, &err) == 0, "cluster_load: %s", err.message);
    free(xml);
}

htae_options sim_bare_options(void)
{
    htae_options o;
    memset(&o, 0, sizeof o);
    o.protocol_efficiency = 1.0;
    o.net_efficiency = 1.0;
    o.nvls_efficiency = 1.0;
    o.timed_alone = 1;        /* a speed-up with the same times, as by default */
    o.inline_collectives = 1; /* the same */
    o.timed_solo = 1;         /* the same (nothing is timed while every launch is 0) */
    return o;
}

void sim_run(exec_graph *g, cluster *c, const htae_options *o, htae_result *r)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(graph_finalize(g, &err), 0);
    ck_assert_msg(htae_run(g, c, o, r, &err) == 0, "htae_run: %s", err.message);
}

/* Two nodes of k GPUs, ranks node * k + j. Each GPU has its own NVLink port to its node's
 * switch (100 GB/s per direction, latency nvl_lat[node]: a route inside a node crosses two
 * ports) and its own NIC to a 1000 GB/s fabric (10 GB/s per direction, latency nic_lat[j]: a
 * route between the nodes crosses two NICs). No other latency. */
void sim_load_nodes(int m, int k, const char *const *nvl_lat, const char *const *nic_lat,
                    cluster *c)
{
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len);
    ck_assert_ptr_nonnull(f);
    const char *link = "<link id='%s%d_%d' bandwidth='%s' latency='%s' "
                       "sharing_policy='SPLITDUPLEX'/>\n";
    fputs("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM 'https://simgrid.org/simgrid.dtd'>\n"
          "<platform version='4.1'><zone id='cluster' routing='Full'>\n",
          f);
    for (int n = 0; n < m; n++) {
        fprintf(f, "<zone id='node%d' routing='Full'>\n", n);
        for (int j = 0; j < k; j++)
            fprintf(f,
                    "<host id='g%d_%d' speed='1Tf'><prop id='gpu' value='A100-SXM4-80GB'/>"
                    "<prop id='rank' value='%d'/></host>\n",
                    n, j, n * k + j);
        fprintf(f, "<router id='gw%d'/>\n", n);
        for (int j = 0; j < k; j++) {
            fprintf(f, link, "nvl", n, j, "100GBps", nvl_lat[n]);
            fprintf(f, link, "nic", n, j, "10GBps", nic_lat[j]);
        }
        for (int i = 0; i < k; i++)
            for (int j = i + 1; j < k; j++)
                fprintf(f,
                        "<route src='g%d_%d' dst='g%d_%d'><link_ctn id='nvl%d_%d' direction='UP'/>"
                        "<link_ctn id='nvl%d_%d' direction='DOWN'/></route>\n",
                        n, i, n, j, n, i, n, j);
        for (int j = 0; j < k; j++)
            fprintf(f,
                    "<route src='g%d_%d' dst='gw%d'><link_ctn id='nic%d_%d' direction='UP'/>"
                    "</route>\n",
                    n, j, n, n, j);
        fputs("</zone>\n", f);
    }
    fputs("<link id='fabric' bandwidth='1000GBps' latency='0' sharing_policy='SPLITDUPLEX'/>\n", f);
    for (int a = 0; a < m; a++)
        for (int b = a + 1; b < m; b++)
            fprintf(f,
                    "<zoneRoute src='node%d' dst='node%d' gw_src='gw%d' gw_dst='gw%d'>"
                    "<link_ctn id='fabric' direction='UP'/></zoneRoute>\n",
                    a, b, a, b);
    fputs("</zone></platform>\n", f);
    fclose(f);
    ps_error err;
    int rc = sim_cluster_text(xml, c, &err);
    free(xml);
    ck_assert_msg(rc == 0, "cluster_load: %s", err.message);
    ck_assert_int_eq(c->n_gpus, m * k);
    ck_assert_int_eq(c->n_nodes, m);
}

void sim_load_two_nodes(int k, const char *const nvl_lat[2], const char *const *nic_lat, cluster *c)
{
    sim_load_nodes(2, k, nvl_lat, nic_lat, c);
}

cluster *sim_dgx4(void)
{
    static cluster c;
    static int loaded;
    if (!loaded)
        sim_load("topology/clusters/dgx4.xml", &c);
    loaded = 1;
    return &c;
}

const htae_link_stat *sim_find_link(const htae_result *r, const char *name)
{
    for (int i = 0; i < r->n_links; i++)
        if (strcmp(r->links[i].name, name) == 0)
            return &r->links[i];
    ck_abort_msg("link %s not in the result", name);
    return NULL;
}

void sim_load_two_by_two(cluster *c)
{
    static const char *const nvl_lat[2] = {"0", "0"}, *const nic_lat[2] = {"0", "0.5ms"};
    sim_load_two_nodes(2, nvl_lat, nic_lat, c);
}

void sim_dgx4_allreduce(const htae_options *o, double S, double p, double *latency,
                        double *bandwidth)
{
    double B = 300 * GB * o->protocol_efficiency, lat = 2 * 0.7e-6;
    *latency = o->coll_launch_s + 2 * (p - 1) * (o->coll_step_s + lat);
    *bandwidth = 2 * (p - 1) / p * S / B;
}

/* The route from host a to host b is exactly the SimGrid links want[] (any order). */
void sim_expect_route(const char *a, const char *b, const char *const *want)
{
    xbt_dynar_t d = xbt_dynar_new(sizeof(sg_link_t), NULL);
    sg_host_get_route(sg_host_by_name(a), sg_host_by_name(b), d);
    int n = 0;
    while (want[n])
        n++;
    ck_assert_msg((int)xbt_dynar_length(d) == n, "%s -> %s: %u links, want %d", a, b,
                  (unsigned)xbt_dynar_length(d), n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (unsigned k = 0; k < xbt_dynar_length(d) && !found; k++)
            found = !strcmp(sg_link_get_name(xbt_dynar_get_as(d, k, sg_link_t)), want[i]);
        ck_assert_msg(found, "%s -> %s does not cross %s", a, b, want[i]);
    }
    xbt_dynar_free(&d);
}
