/* model_util.c: see model_util.h. */
#include "../sim/base/vocab.h"
#include "model_util.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void model_write_temp(char *path, size_t cap, const char *stem, const char *text)
{
    snprintf(path, cap, "/tmp/protosim_test_%s_XXXXXX", stem);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
}

workload_model model_load_named(const char *name)
{
    workload_model m;
    ps_error err = {0};
    int rc = workload_model_load(name, ps_data_dir(), &m, &err);
    ck_assert_msg(rc == 0, "%s: %s", name, err.message);
    return m;
}

int model_load_text(const char *text, workload_model *m, ps_error *err)
{
    return model_load_text_as("model", text, m, err);
}

int model_load_text_as(const char *stem, const char *text, workload_model *m, ps_error *err)
{
    char path[64];
    model_write_temp(path, sizeof path, stem, text);
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

void flow_op(kernel_flow *f, const workload_op *op, op_pass pass, double kernel)
{
    double launch = cost_op_launch_seconds(op, pass);
    int k = cost_op_kernels(op, pass);
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        f->host += launch / k;
        f->gpu = (f->gpu > f->host ? f->gpu : f->host) + kernel / k;
    }
}

void model_devices(device_table *t)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml", ps_data_dir());
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(device_table_load(path, t, &err) == 0, "%s", err.message);
}
