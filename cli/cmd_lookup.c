/* cmd_lookup.c: `protosim lookup`: the embedding lookup model alone (sim/cost/cost_embedding.c): one
 * table-batched embedding kernel of identical tables on one GPU, forward and backward. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../topology/cluster.h"
#include "../sim/cost/cost.h"
#include "cli.h"

static int lookup_main(int argc, char **argv);

typedef struct lookup_args {
    const char *device, *ids, *update, *precision, *csv;
    int tables, rows, dim, batch;
    double pooling;
} lookup_args;

static const cli_option lookup_options[] = {
    {.name = "--device", .kind = CLI_STRING, .offset = offsetof(lookup_args, device)},
    {.name = "--ids", .kind = CLI_STRING, .offset = offsetof(lookup_args, ids)},
    {.name = "--update", .kind = CLI_STRING, .offset = offsetof(lookup_args, update)},
    {.name = "--precision", .kind = CLI_STRING, .offset = offsetof(lookup_args, precision)},
    {.name = "--csv", .kind = CLI_STRING, .offset = offsetof(lookup_args, csv)},
    {.name = "--tables",
     .kind = CLI_INT,
     .offset = offsetof(lookup_args, tables),
     .has_min = 1,
     .min = 1,
     .bad = "table count"},
    {.name = "--rows",
     .kind = CLI_INT,
     .offset = offsetof(lookup_args, rows),
     .has_min = 1,
     .min = 1,
     .bad = "row count"},
    {.name = "--dim",
     .kind = CLI_INT,
     .offset = offsetof(lookup_args, dim),
     .has_min = 1,
     .min = 1,
     .bad = "dimension"},
    {.name = "--batch",
     .kind = CLI_INT,
     .offset = offsetof(lookup_args, batch),
     .has_min = 1,
     .min = 1,
     .bad = "batch"},
    {.name = "--pooling",
     .kind = CLI_DOUBLE,
     .offset = offsetof(lookup_args, pooling),
     .bad = "pooling"},
    {0},
};

const cli_command cli_lookup = {
    "lookup",
    "  protosim lookup --device NAME --tables N --rows R --dim D --batch B --ids LAW\n"
    "               --update sgd|adagrad|adam [--pooling P] [--precision fp32|fp16|bf16]\n"
    "               [--csv OUT]\n",
    "times one FBGEMM-style table-batched embedding kernel of N identical tables on one GPU:\n"
    "the forward (gather and sum-pool) and the backward with the fused optimizer update, from\n"
    "the id law (docs/cost-model.md, \"DLRM\"). Prints the distinct rows per table, HBM bytes\n"
    "and times.\n"
    "options:\n"
    "  --device NAME       a GPU of the device table (devices.yaml, --devices) with l2_mib\n"
    "                      (required)\n"
    "  --tables N          tables in the kernel (required)\n"
    "  --rows R            rows per table (required)\n"
    "  --dim D             embedding dimension (required)\n"
    "  --batch B           samples (bags per table) (required)\n"
    "  --pooling P         ids per sample per table (default 1: one lookup per bag)\n"
    "  --ids LAW           uniform, zipf:ALPHA or unique:RATIO (required)\n"
    "  --update OPT        the optimizer fused into the backward (required)\n"
    "  --precision P       table precision (default fp32, as FBGEMM's default)\n"
    "  --csv OUT           one CSV row fwd_s,bwd_s,unique_rows,fwd_bytes,bwd_bytes to OUT\n"
    "                      ('-': stdout) instead of the text\n"
    "  --help, -h          this help\n",
    lookup_main,
    lookup_options,
};

/* --ids: uniform | zipf:ALPHA | unique:RATIO into the table's law. */
static int parse_ids(const char *v, workload_emb *e, double *ratio)
{
    double x = 0;
    if (!strcmp(v, "uniform")) {
        e->law = IDS_UNIFORM;
        return 0;
    }
    if (!strncmp(v, "zipf:", 5) && !cli_parse_double(v + 5, &x) && x > 0) {
        e->law = IDS_ZIPF;
        e->alpha = x;
        return 0;
    }
    if (!strncmp(v, "unique:", 7) && !cli_parse_double(v + 7, &x) && x > 0 && x <= 1) {
        e->law = IDS_UNIQUE_RATIO;
        *ratio = x;
        return 0;
    }
    return cli_bad_value(&cli_lookup, "--ids", "id law", v,
                         "uniform, zipf:ALPHA (ALPHA > 0) or unique:RATIO (0 < RATIO <= 1)");
}

/* The arguments into one table (all N alike); 0, or PS_EINPUT after a usage error. */
static int lookup_table(const lookup_args *a, workload_emb *e)
{
    memset(e, 0, sizeof *e);
    double ratio = 0;
    precision_t p = PREC_FP32;
    int update = 0;
    if (!a->device || !a->ids || !a->update || a->tables < 1 || a->rows < 1 || a->dim < 1 ||
        a->batch < 1)
        return cli_usage_error(&cli_lookup, "lookup needs --device, --tables, --rows, --dim, "
                                            "--batch, --ids and --update");
    if (a->pooling <= 0)
        return cli_bad_value(&cli_lookup, "--pooling", "pooling", "0", "a positive number");
    if (parse_ids(a->ids, e, &ratio))
        return PS_EINPUT;
    if ((update = enum_parse(emb_update_names, a->update)) < 0)
        return cli_bad_value(&cli_lookup, "--update", "optimizer", a->update,
                             "sgd, adagrad or adam");
    if (precision_parse(a->precision, &p) || (p != PREC_FP32 && p != PREC_FP16 && p != PREC_BF16))
        return cli_bad_value(&cli_lookup, "--precision", "precision", a->precision,
                             "fp32, fp16 or bf16");
    e->rows = a->rows;
    e->dim = a->dim;
    e->elem_bytes = precision_bytes(p);
    e->bags = a->batch;
    e->lookups = a->batch * a->pooling;
    e->unique = workload_dlrm_unique_rows(e->law, e->alpha, ratio, e->rows, e->lookups);
    e->update = (emb_update)update;
    return 0;
}

static int lookup_main(int argc, char **argv)
{
    lookup_args a = {NULL, NULL, NULL, "fp32", NULL, 0, 0, 0, 0, 1.0};
    int prc = cli_parse_options(&cli_lookup, lookup_options, argc, argv, &a, NULL, 0, NULL);
    workload_emb e = {0};
    if (!prc)
        prc = lookup_table(&a, &e);
    if (prc)
        return cli_exit_code(prc);
    device_table t;
    const device_spec *dev;
    if (cli_find_device(&cli_lookup, "--device", a.device, &t, &dev))
        return PS_EINPUT;
    int rc = 0;
    if (dev->l2_bytes <= 0)
        rc = cli_usage_error(&cli_lookup,
                             "--device: %s has no l2_mib in its device entry (the "
                             "lookup's cache rule needs it)",
                             a.device);
    if (rc) {
        device_table_free(&t);
        return rc;
    }
    workload_emb *tables = calloc((size_t)a.tables, sizeof *tables);
    for (int i = 0; i < a.tables && tables; i++)
        tables[i] = e;
    double l2 = dev->l2_bytes / a.tables;
    double fwd_b = a.tables * cost_embedding_bytes(&e, PASS_FWD, l2);
    double bwd_b = a.tables * cost_embedding_bytes(&e, PASS_BWD, l2);
    double fwd = tables ? cost_embedding_seconds(tables, a.tables, PASS_FWD, dev) : 0;
    double bwd = tables ? cost_embedding_seconds(tables, a.tables, PASS_BWD, dev) : 0;
    free(tables);
    FILE *f = stdout;
    if (a.csv && strcmp(a.csv, "-") && !(f = fopen(a.csv, "w"))) {
        device_table_free(&t);
        return cli_usage_error(&cli_lookup, "--csv: cannot write %s", a.csv);
    }
    if (a.csv)
        fprintf(f, "%.9g,%.9g,%.9g,%.9g,%.9g\n", fwd, bwd, e.unique, fwd_b, bwd_b);
    else
        fprintf(f,
                "%d tables x %d rows x dim %d on %s, %g ids per table (%d bags), ids %s\n"
                "distinct rows per table  %.1f\n"
                "forward   %10.4f ms  %10.1f MB\n"
                "backward  %10.4f ms  %10.1f MB  (%s)\n",
                a.tables, a.rows, a.dim, dev->name, e.lookups, a.batch, a.ids, e.unique, fwd * 1e3,
                fwd_b / 1e6, bwd * 1e3, bwd_b / 1e6, a.update);
    if (f != stdout)
        fclose(f);
    device_table_free(&t);
    return 0;
}
