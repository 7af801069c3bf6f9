/* model_util.c: see model_util.h. */
#include "../sim/base/vocab.h"
#include "model_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int model_load_text(const char *text, workload_model *m, ps_error *err)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/protosim_test_model_XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    int rc = workload_model_load(path, ps_data_dir(), m, err);
    unlink(path);
    return rc;
}

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

workload_op gemm_op(double m, double n, double k)
{
    workload_op op;
    memset(&op, 0, sizeof op);
    strcpy(op.name, "test.gemm");
    op.kind = OP_GEMM;
    op.split = SPLIT_REPLICATED;
    op.batch = 1;
    op.m = m;
    op.n = n;
    op.k = k;
    op.fwd_flops = 2 * m * n * k;
    op.bwd_flops = 2 * op.fwd_flops;
    op.fwd_bytes = (m * k + k * n + m * n) * 2;
    op.bwd_bytes = 2 * op.fwd_bytes;
    op.kernels = 1;
    return op;
}
