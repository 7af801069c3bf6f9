/* out_sweep.c: what `protosim sweep` and `protosim merge` write: the ranked table on stdout,
 * the CSV and the JSON of every plan (the SVG plot is in out_plot.c). */
#include "output.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char *status_name(int s)
{
    return enum_name(sweep_plan_status_names, s);
}

void sweep_table_free(sweep_table *t)
{
    cJSON_Delete(t->axes);
    free(t->plans);
    free(t->order);
    memset(t, 0, sizeof *t);
}

/* ---- the table ---- */

static void dlrm_row(FILE *f, const sweep_plan *p, const char *label, const char *mem);

/* The plan column: 36 characters, 7 more with the GPU count ("gpus16 ") in front. */
#define LABEL_WIDTH(t) ((t)->show_gpus ? 43 : 36)

static void table_row(FILE *f, const sweep_table *t, const sweep_plan *p)
{
    char label[128];
    sweep_plan_label(p, t->show_gpus, t->show_bucket, t->show_sp, label, sizeof label);
    char mem[32];
    snprintf(mem, sizeof mem, "%.1f/%.1f", p->fig.peak_memory_bytes / GIB,
             p->fig.memory_capacity_bytes / GIB);
    if (t->dlrm) {
        dlrm_row(f, p, label, mem);
        return;
    }
    if (p->status == SWEEP_PLAN_OK)
        fprintf(f, "%4d  %-*s %9.4f %11.1f %6.1f %15s %8.3f %9.3f %8.3f %8.3f  ok\n", p->rank,
                LABEL_WIDTH(t), label, p->fig.iteration_s, p->fig.tokens_per_s, 100 * p->fig.mfu,
                mem, p->fig.compute_s, p->fig.exposed_comm_s, p->fig.bubble_s, p->fig.idle_s);
    else
        fprintf(f, "%4s  %-*s %9s %11s %6s %15s %8s %9s %8s %8s  %s: %s\n", "-", LABEL_WIDTH(t),
                label, "-", "-", "-", p->status == SWEEP_PLAN_OOM ? mem : "-", "-", "-", "-", "-",
                status_name(p->status), p->reason);
}

/* A dlrm sweep's row: milliseconds, samples/s, the embedding columns (the largest per-GPU lookup
 * time, the all-to-alls' busy time, the lookup imbalance), no tp/pp/MFU/bubble. */
static void dlrm_row(FILE *f, const sweep_plan *p, const char *label, const char *mem)
{
    if (p->status == SWEEP_PLAN_OK)
        fprintf(f, "%4d  %-40s %8.3f %11.0f %13s %9.3f %8.3f %6.2f %8.3f %9.3f %8.3f  ok\n",
                p->rank, label, 1e3 * p->fig.iteration_s, p->fig.samples_per_s, mem,
                1e3 * p->lookup_max_s, 1e3 * p->alltoall_s, p->lookup_imbalance,
                1e3 * p->fig.compute_s, 1e3 * p->fig.exposed_comm_s, 1e3 * p->fig.idle_s);
    else
        fprintf(f, "%4s  %-40s %8s %11s %13s %9s %8s %6s %8s %9s %8s  %s: %s\n", "-", label, "-",
                "-", p->status == SWEEP_PLAN_OOM ? mem : "-", "-", "-", "-", "-", "-", "-",
                status_name(p->status), p->reason);
}

static void dlrm_header(FILE *f)
{
    fprintf(f, "%4s  %-40s %8s %11s %13s %9s %8s %6s %8s %9s %8s  %s\n", "rank", "plan", "iter ms",
            "samples/s", "peak/cap GiB", "lookup ms", "a2a ms", "imbal", "compute", "exp.comm",
            "idle", "status");
}

/* Invalid combinations, counted by reason kind, each with its first reason as an example. */
void out_sweep_invalid(FILE *f, const sweep_table *t)
{
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status != SWEEP_PLAN_INVALID)
            continue;
        int seen = 0, count = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = t->plans[j].status == SWEEP_PLAN_INVALID &&
                   !strcmp(t->plans[j].reason_kind, p->reason_kind);
        if (seen)
            continue;
        for (int j = i; j < t->n; j++)
            count += t->plans[j].status == SWEEP_PLAN_INVALID &&
                     !strcmp(t->plans[j].reason_kind, p->reason_kind);
        fprintf(f, "invalid: %d x %s (e.g. %s)\n", count, p->reason_kind, p->reason);
    }
}

void out_sweep_table(FILE *f, const sweep_table *t, int top)
{
    int c[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, c);
    const char *cl = strrchr(t->cluster_file, '/');
    int lo = t->gpus, hi = 0;
    for (int i = 0; i < t->n; i++) {
        lo = t->plans[i].gpus < lo ? t->plans[i].gpus : lo;
        hi = t->plans[i].gpus > hi ? t->plans[i].gpus : hi;
    }
    char gpus[96];
    if (t->n == 0 || (lo == t->gpus && hi == t->gpus))
        snprintf(gpus, sizeof gpus, "%d GPUs", t->gpus);
    else if (lo == hi)
        snprintf(gpus, sizeof gpus, "the first %d of its %d GPUs", lo, t->gpus);
    else
        snprintf(gpus, sizeof gpus, "%d GPUs; plans take the first %d to %d", t->gpus, lo, hi);
    fprintf(f,
            "sweep %s on %s (%s): %d plans: %d simulated, %d do not fit in memory, "
            "%d failed, %d invalid combinations\n",
            t->sweep_file, cl ? cl + 1 : t->cluster_file, gpus, t->n, c[SWEEP_PLAN_OK],
            c[SWEEP_PLAN_OOM], c[SWEEP_PLAN_FAILED], c[SWEEP_PLAN_INVALID]);
    if (t->shard_n)
        fprintf(f, "shard %d/%d of %d combinations (merge the shards with protosim merge)\n",
                t->shard_k, t->shard_n, t->combinations);
    if (t->dlrm)
        dlrm_header(f);
    else
        fprintf(f, "%4s  %-*s %9s %11s %6s %15s %8s %9s %8s %8s  %s\n", "rank", LABEL_WIDTH(t),
                "plan", "iter s", "tokens/s", "MFU %", "peak/cap GiB", "compute", "exp.comm",
                "bubble", "idle", "status");
    int shown[SWEEP_PLAN_STATUS_COUNT] = {0}, hidden[SWEEP_PLAN_STATUS_COUNT] = {0};
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[t->order[i]];
        if (p->status == SWEEP_PLAN_INVALID || p->status == SWEEP_PLAN_PENDING)
            break;
        if (top > 0 && shown[p->status] >= top) {
            hidden[p->status]++;
            continue;
        }
        shown[p->status]++;
        table_row(f, t, p);
    }
    if (hidden[SWEEP_PLAN_OK] + hidden[SWEEP_PLAN_OOM] + hidden[SWEEP_PLAN_FAILED])
        fprintf(f,
                "... and %d more simulated, %d more oom, %d more failed plans (all in "
                "--csv/--json; --top 0 shows all)\n",
                hidden[SWEEP_PLAN_OK], hidden[SWEEP_PLAN_OOM], hidden[SWEEP_PLAN_FAILED]);
    out_sweep_invalid(f, t);
}

/* ---- CSV ---- */

static void csv_row(FILE *f, const sweep_table *t, const sweep_plan *p)
{
    const plan_desc *d = &p->desc;
    char label[128];
    sweep_plan_label(p, t->show_gpus, t->show_bucket, t->show_sp, label, sizeof label);
    char reason[sizeof p->reason];
    snprintf(reason, sizeof reason, "%s", p->reason);
    for (char *q = reason; *q; q++)
        if (*q == '"')
            *q = '\'';
    if (p->rank)
        fprintf(f, "%d,", p->rank);
    else
        fputs(",", f);
    fprintf(f, "%d,%s,%s,%d,%d,%d,%d,%d,%d,%s,%d,%d,%s,%g,%s,%d,%d,", p->index, label,
            status_name(p->status), p->gpus, d->tp, d->pp, d->dp, d->cp, d->micro_batch,
            schedule_name((pipeline_schedule)d->schedule), d->virtual_stages, d->zero,
            recompute_name((recompute_mode)d->recompute), d->bucket_mb,
            d->sequence_parallel ? "true" : "false", d->ep, d->etp);
    /* an OOM plan has figures only when it was simulated (run --csv); sweeps prune them */
    int figures =
        p->status == SWEEP_PLAN_OK || (p->status == SWEEP_PLAN_OOM && p->fig.iteration_s > 0);
    if (figures)
        fprintf(f, "%.9g,%.9g,%.9g,%.6g,", p->fig.iteration_s, p->fig.tokens_per_s,
                p->fig.samples_per_s, p->fig.mfu);
    else
        fputs(",,,,", f);
    if (p->status == SWEEP_PLAN_OK || p->status == SWEEP_PLAN_OOM)
        fprintf(f, "%.0f,%.0f,", p->fig.peak_memory_bytes, p->fig.memory_capacity_bytes);
    else
        fputs(",,", f);
    if (figures)
        fprintf(f, "%.9g,%.9g,%.9g,%.9g,", p->fig.compute_s, p->fig.exposed_comm_s, p->fig.bubble_s,
                p->fig.idle_s);
    else
        fputs(",,,,", f);
    char tables[4 * DLRM_MAX_TABLES + 1];
    sweep_plan_tables_text(p, tables, sizeof tables);
    fprintf(f, "%s,%s,%s,",
            p->proposal < 0 && d->emb_sharding >= 0 ? enum_name(emb_sharding_names, d->emb_sharding)
                                                    : "",
            d->emb_placement >= 0 ? enum_name(emb_placement_names, d->emb_placement) : "", tables);
    if (p->status == SWEEP_PLAN_OK && p->dlrm)
        fprintf(f, "%.9g,%.9g,%.9g,", p->lookup_max_s, p->alltoall_s, p->lookup_imbalance);
    else
        fputs(",,,", f);
    fprintf(f, "\"%s\"\n", reason);
}

int out_sweep_csv(const char *path, const sweep_table *t, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return out_write_error(path, err);
    fputs("rank,index,plan,status,gpus,tensor,pipeline,data,context,micro_batch,schedule,virtual_"
          "stages,"
          "zero,recompute,bucket_mb,sequence_parallel,expert,expert_tensor,iteration_time_s,"
          "tokens_per_s,samples_per_s,"
          "mfu,peak_memory_bytes,memory_capacity_bytes,compute_s,exposed_comm_s,bubble_s,"
          "idle_s,sharding,placement,tables_sharding,lookup_max_s,alltoall_s,lookup_imbalance,"
          "reason\n",
          f);
    for (int i = 0; i < t->n; i++)
        csv_row(f, t, &t->plans[t->order[i]]);
    if (fclose(f))
        return out_write_error(path, err);
    return 0;
}

/* ---- JSON ---- */

/* A dlrm plan's "embedding": the tables, the sharding (or each table's, under tables_sharding:
 * auto), the placement and, simulated, the ranking columns. */
static cJSON *embedding_json(const sweep_plan *p)
{
    const plan_desc *d = &p->desc;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "tables", p->n_tables);
    if (p->proposal >= 0) {
        cJSON_AddNumberToObject(e, "proposal", p->proposal);
        cJSON *a = cJSON_AddArrayToObject(e, "tables_sharding");
        for (int t = 0; t < p->n_tables; t++)
            cJSON_AddItemToArray(
                a, cJSON_CreateString(enum_name(emb_sharding_names, p->table_sharding[t])));
    } else if (d->emb_sharding >= 0) {
        cJSON_AddStringToObject(e, "sharding", enum_name(emb_sharding_names, d->emb_sharding));
    }
    if (d->emb_placement >= 0)
        cJSON_AddStringToObject(e, "placement", enum_name(emb_placement_names, d->emb_placement));
    if (d->emb_shards > 0)
        cJSON_AddNumberToObject(e, "shards", d->emb_shards);
    if (p->status == SWEEP_PLAN_OK && p->dlrm) {
        cJSON_AddNumberToObject(e, "lookup_max_s", p->lookup_max_s);
        cJSON_AddNumberToObject(e, "alltoall_s", p->alltoall_s);
        cJSON_AddNumberToObject(e, "lookup_imbalance", p->lookup_imbalance);
    }
    return e;
}

static cJSON *plan_json(const sweep_table *t, const sweep_plan *p)
{
    cJSON *o = cJSON_CreateObject();
    char label[128];
    sweep_plan_label(p, t->show_gpus, t->show_bucket, t->show_sp, label, sizeof label);
    cJSON_AddNumberToObject(o, "index", p->index);
    if (p->rank)
        cJSON_AddNumberToObject(o, "rank", p->rank);
    else
        cJSON_AddNullToObject(o, "rank");
    cJSON_AddStringToObject(o, "plan", label);
    cJSON_AddStringToObject(o, "status", status_name(p->status));
    cJSON_AddNumberToObject(o, "gpus", p->gpus);
    out_plan_json(o, &p->desc);
    if (p->status == SWEEP_PLAN_OK) {
        out_figures_json(o, &p->fig);
        cJSON_AddNumberToObject(o, "sim_wall_s", p->sim_wall_s);
    }
    if (p->n_tables > 0)
        cJSON_AddItemToObject(o, "embedding", embedding_json(p));
    if (p->status == SWEEP_PLAN_OK || p->status == SWEEP_PLAN_OOM) {
        cJSON_AddNumberToObject(o, "peak_memory_bytes", p->fig.peak_memory_bytes);
        cJSON_AddNumberToObject(o, "memory_capacity_bytes", p->fig.memory_capacity_bytes);
    }
    if (p->status == SWEEP_PLAN_INVALID || p->status == SWEEP_PLAN_FAILED ||
        p->status == SWEEP_PLAN_OOM) {
        cJSON_AddStringToObject(o, "reason_kind", p->reason_kind);
        cJSON_AddStringToObject(o, "reason", p->reason);
    }
    return o;
}

static cJSON *sweep_json(const sweep_table *t)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "file", t->sweep_file);
    cJSON_AddStringToObject(m, "cluster", t->cluster_file);
    cJSON_AddStringToObject(m, "base", t->base);
    cJSON_AddStringToObject(m, "workload", t->workload);
    if (t->dlrm)
        cJSON_AddStringToObject(m, "family", "dlrm");
    cJSON_AddNumberToObject(m, "gpus", t->gpus);
    cJSON_AddStringToObject(m, "memory", enum_name(sweep_memory_names, t->memory_fit));
    cJSON_AddItemToObject(m, "axes", t->axes ? cJSON_Duplicate(t->axes, 1) : cJSON_CreateObject());
    cJSON_AddStringToObject(m, "hash", t->hash);
    cJSON_AddNumberToObject(m, "combinations", t->combinations);
    if (t->shard_n) {
        cJSON *sh = cJSON_AddArrayToObject(m, "shard");
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shard_k));
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shard_n));
    } else {
        cJSON_AddNullToObject(m, "shard");
    }
    cJSON_AddNumberToObject(m, "wall_s", t->wall_s);
    return m;
}

static cJSON *counts_json(const sweep_table *t)
{
    int c[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, c);
    cJSON *cn = cJSON_CreateObject();
    cJSON_AddNumberToObject(cn, "plans", t->n);
    cJSON_AddNumberToObject(cn, "valid", t->n - c[SWEEP_PLAN_INVALID]);
    for (int s = SWEEP_PLAN_OK; s <= SWEEP_PLAN_INVALID; s++)
        cJSON_AddNumberToObject(cn, status_name(s), c[s]);
    return cn;
}

int out_sweep_json(const char *path, const sweep_table *t, ps_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "sweep", sweep_json(t));
    cJSON_AddItemToObject(root, "counts", counts_json(t));
    cJSON *by = cJSON_AddObjectToObject(root, "invalid_by_reason");
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status != SWEEP_PLAN_INVALID)
            continue;
        cJSON *v = cJSON_GetObjectItemCaseSensitive(by, p->reason_kind);
        if (v)
            cJSON_SetNumberValue(v, v->valuedouble + 1);
        else
            cJSON_AddNumberToObject(by, p->reason_kind, 1);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "plans");
    for (int i = 0; i < t->n; i++)
        cJSON_AddItemToArray(arr, plan_json(t, &t->plans[t->order[i]]));
    return out_json_file(path, root, err);
}
