/* gpu_select.c: which of a cluster's GPUs a plan runs on (run --gpus, compare --gpus, a sweep's
 * gpus): rank lists ("0-7,16-23") and the cluster view a plan of fewer GPUs than the cluster
 * takes (cluster_view). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"
#include "cli.h"

#define RANKS_EXPECTED "ranks and inclusive ranges separated by commas, e.g. 0-7 or 0,3,8-11"

/* One entry of a rank list, "R" or "LO-HI": 0 with *lo <= *hi, or -1. */
static int parse_range(const char *tok, int *lo, int *hi)
{
    char buf[32];
    size_t n = strlen(tok);
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, tok, n + 1);
    char *dash = strchr(buf, '-');
    if (dash)
        *dash = '\0';
    if (cli_parse_int(buf, lo))
        return -1;
    *hi = *lo;
    if (dash && cli_parse_int(dash + 1, hi))
        return -1;
    return *lo <= *hi ? 0 : -1;
}

int cli_rank_list(const char *option, const char *spec, int **ranks, int *n, ps_error *err)
{
    *ranks = NULL;
    *n = 0;
    char *copy = xstrdup(spec);
    int rc = 0, cap = 0;
    for (char *tok = copy, *next; tok && !rc; tok = next) {
        next = strchr(tok, ',');
        if (next)
            *next++ = '\0';
        int lo, hi;
        if (parse_range(tok, &lo, &hi)) {
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "%s: bad rank list '%s' (expected " RANKS_EXPECTED ")", option, spec);
        } else if (hi >= PS_MAX_GPUS || (long)*n + (hi - lo + 1) > PS_MAX_GPUS) {
            rc = ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                              "%s: '%s' lists more than %d GPUs (protosim's limit)", option, spec,
                              PS_MAX_GPUS);
        } else {
            for (int r = lo; r <= hi; r++) {
                if (*n == cap) {
                    cap = cap ? 2 * cap : 16;
                    *ranks = xreallocarray(*ranks, (size_t)cap, sizeof **ranks);
                }
                (*ranks)[(*n)++] = r;
            }
        }
    }
    free(copy);
    if (rc) {
        free(*ranks);
        *ranks = NULL;
        *n = 0;
    }
    return rc;
}

int cli_plan_cluster(const cluster *c, int64_t need, const char *spec, cluster *view,
                     const cluster **use, ps_error *err)
{
    *use = c;
    if (!spec && need >= c->n_gpus)
        return 0; /* the whole cluster; more than it has is the compiler's error */
    int *ranks = NULL, n = 0;
    if (spec) {
        if (cli_rank_list("--gpus", spec, &ranks, &n, err))
            return err->code;
        if (n != need) {
            free(ranks);
            return ps_error_set(err, PS_EINPUT, "", 0, 0, "",
                                "--gpus %s lists %d GPU%s; the plan takes %lld", spec, n,
                                n == 1 ? "" : "s", (long long)need);
        }
    } else {
        n = (int)need;
        ranks = xmalloc((size_t)n * sizeof *ranks);
        for (int i = 0; i < n; i++)
            ranks[i] = i;
    }
    int rc = cluster_view(c, ranks, n, "--gpus", view, err);
    free(ranks);
    if (!rc)
        *use = view;
    return rc;
}

void cli_plan_cluster_free(const cluster *c, cluster *view, const cluster *use)
{
    if (use && use != c)
        cluster_view_free(view);
}
