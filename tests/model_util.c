/* model_util.c: see model_util.h. */
#include "model_util.h"

#include <check.h>
#include <string.h>

int has_op(const workload_graph *g, const char *name)
{
    for (int i = 0; i < g->n_ops; i++)
        if (strcmp(g->ops[i].name, name) == 0)
            return 1;
    return 0;
}

const workload_op *find_op(const workload_graph *g, const char *name)
{
    for (int i = 0; i < g->n_ops; i++)
        if (strcmp(g->ops[i].name, name) == 0)
            return &g->ops[i];
    ck_abort_msg("no op %s", name);
    return NULL;
}
