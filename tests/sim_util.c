/* sim_util.c: see sim_util.h. */
#include "sim_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sim_data_dir(void)
{
    const char *d = getenv("PROTOSIM_DATA_DIR");
    return d ? d : ".";
}

void sim_load(const char *rel, cluster *c)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", sim_data_dir(), rel);
    ps_error err;
    ps_error_clear(&err);
    cluster_engine_start();
    int rc = cluster_load(path, sim_data_dir(), c, &err);
    ck_assert_msg(rc == 0, "cluster_load(%s): %s", path, err.message);
}

htae_options sim_bare_options(void)
{
    htae_options o;
    memset(&o, 0, sizeof o);
    o.protocol_efficiency = 1.0;
    return o;
}

void sim_run(htae_graph *g, cluster *c, const htae_options *o, htae_result *r)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_int_eq(htae_graph_finalize(g, &err), 0);
    ck_assert_msg(htae_run(g, c, o, r, &err) == 0, "htae_run: %s", err.message);
}
