/* sweep_run.c: `protosim sweep`: enumerate a sweep's plans, keep this shard's, simulate them in
 * forked workers (sweep_pool.c; the parent loads the platform once), rank. */
#include "sweep_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../sim/base/xalloc.h"
#include "cli.h"
#include "sweep_pool.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void sweep_default_options(sweep_options *o)
{
    memset(o, 0, sizeof *o);
    o->progress = -1;
    o->top = 20;
    o->twins = 1;
}

/* ---- records ---- */

void sweep_plan_record(sweep_plan *p, const report_summary *sum, const htae_result *res)
{
    p->status = SWEEP_PLAN_OK;
    p->fig = sum->fig;
    p->sim_wall_s = res->wall_s;
}

void sweep_plan_record_dlrm(sweep_plan *p, const dlrm_plan_stats *st, const report_summary *sum)
{
    p->dlrm = 1;
    p->lookup_max_s = st->lookup_max_s;
    p->lookup_imbalance = st->lookup_imbalance;
    p->alltoall_s = sum->comm_s[CAT_EMB_COMM];
}

void sweep_plan_copy_outcome(sweep_plan *p, const sweep_plan *src)
{
    p->status = src->status;
    p->fig = src->fig;
    p->sim_wall_s = 0; /* not simulated */
    p->dlrm = src->dlrm;
    p->lookup_max_s = src->lookup_max_s;
    p->lookup_imbalance = src->lookup_imbalance;
    p->alltoall_s = src->alltoall_s;
}

/* ---- ranking and outputs ---- */

static int rank_cmp(const void *a, const void *b)
{
    const sweep_plan *p = *(const sweep_plan *const *)a, *q = *(const sweep_plan *const *)b;
    if (p->status != q->status)
        return p->status - q->status; /* ok, oom, failed, invalid */
    if (p->status == SWEEP_PLAN_OK && p->fig.iteration_s != q->fig.iteration_s)
        return p->fig.iteration_s < q->fig.iteration_s ? -1 : 1;
    return p->index - q->index;
}

void sweep_rank(sweep_table *t)
{
    free(t->order);
    t->order = xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof *t->order);
    if (t->n <= 0)
        return;
    const sweep_plan **by = xcalloc((size_t)t->n, sizeof *by);
    for (int i = 0; i < t->n; i++)
        by[i] = &t->plans[i];
    qsort(by, (size_t)t->n, sizeof *by, rank_cmp);
    int r = 0;
    for (int i = 0; i < t->n; i++) {
        t->order[i] = (int)(by[i] - t->plans);
        sweep_plan *p = &t->plans[t->order[i]];
        p->rank = p->status == SWEEP_PLAN_OK ? ++r : 0;
    }
    free(by);
}

int sweep_write_outputs(const sweep_table *t, const sweep_options *o, ps_error *err)
{
    out_sweep_table(stdout, t, o->top);
    fflush(stdout);
    if (o->csv && out_sweep_csv(o->csv, t, err))
        return err->code;
    if (o->json && out_sweep_json(o->json, t, err))
        return err->code;
    if (o->plot && out_sweep_plot(o->plot, t, err))
        return err->code;
    return 0;
}

/* ---- the sweep's identity ---- */

static void fnv_file(uint64_t *h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            *h ^= buf[i];
            *h *= 1099511628211ULL;
        }
    fclose(f);
}

static cJSON *axes_json(const sweep_spec *s)
{
    cJSON *a = cJSON_CreateObject();
    for (int k = 0; k < SWEEP_AXIS_COUNT; k++) {
        const sweep_axis *ax = &s->axes[k];
        const char *name = sweep_axis_name((sweep_axis_kind)k);
        if (!ax->present)
            continue;
        if (ax->data_auto) {
            cJSON_AddStringToObject(a, name, "auto");
            continue;
        }
        cJSON *v = cJSON_AddArrayToObject(a, name);
        for (int i = 0; i < ax->n; i++) {
            double x = ax->values[i];
            if (k == SWEEP_SCHEDULE)
                cJSON_AddItemToArray(v, cJSON_CreateString(schedule_name((pipeline_schedule)x)));
            else if (k == SWEEP_RECOMPUTE)
                cJSON_AddItemToArray(v, cJSON_CreateString(recompute_name((recompute_mode)x)));
            else if (k == SWEEP_SEQUENCE_PARALLEL)
                cJSON_AddItemToArray(v, cJSON_CreateBool(x != 0));
            else if (k == SWEEP_SHARDING && ax->n > 0)
                cJSON_AddItemToArray(v, cJSON_CreateString(enum_name(emb_sharding_names, (int)x)));
            else if (k == SWEEP_PLACEMENT)
                cJSON_AddItemToArray(v, cJSON_CreateString(enum_name(emb_placement_names, (int)x)));
            else
                cJSON_AddItemToArray(v, cJSON_CreateNumber(x));
        }
    }
    return a;
}

/* The table's header: files, identity hash (so merge can refuse shards of different sweeps),
 * axes, shard. */
static void table_identity(sweep_table *t, const sweep_spec *spec, const char *sweep_path,
                           const char *cluster_path, const sweep_options *o)
{
    uint64_t h = 1469598103934665603ULL;
    fnv_file(&h, spec->file);
    if (spec->base_file[0])
        fnv_file(&h, spec->base_file);
    fnv_file(&h, cluster_path);
    if (o->profile) /* shards costed with another table are another sweep */
        fnv_file(&h, o->profile);
    snprintf(t->hash, sizeof t->hash, "%016llx", (unsigned long long)h);
    snprintf(t->sweep_file, sizeof t->sweep_file, "%s", sweep_path);
    snprintf(t->cluster_file, sizeof t->cluster_file, "%s", cluster_path);
    snprintf(t->base, sizeof t->base, "%s", spec->base_file[0] ? spec->base_file : "(inline)");
    snprintf(t->workload, sizeof t->workload, "%s", spec->base.model.name);
    t->memory_fit = spec->memory_fit;
    t->axes = axes_json(spec);
    t->show_bucket = spec->axes[SWEEP_BUCKET_MB].present;
    t->show_sp = spec->axes[SWEEP_SEQUENCE_PARALLEL].present;
    t->show_gpus = spec->axes[SWEEP_GPUS].present;
    t->dlrm = spec->base.model.family == FAMILY_DLRM;
    t->shard_k = o->shard_k;
    t->shard_n = o->shard_n;
}

/* Enumerate into t; PS_EINPUT when the GPU constraint or every combination is impossible. */
static int table_enumerate(sweep_table *t, sweep_spec *spec, const cluster *c,
                           const char *cluster_path, ps_error *err)
{
    if (spec->gpus > c->n_gpus)
        return ps_error_set(err, PS_EINPUT, spec->file, spec->gpus_loc.line, spec->gpus_loc.column,
                            "constraints.gpus",
                            "impossible constraint: %d GPUs, but the cluster %s has %d GPUs",
                            spec->gpus, cluster_path, c->n_gpus);
    const sweep_axis *ga = &spec->axes[SWEEP_GPUS];
    for (int i = 0; ga->present && i < ga->n; i++)
        if (ga->values[i] > c->n_gpus)
            return ps_error_set(err, PS_EINPUT, spec->file, ga->loc.line, ga->loc.column,
                                "axes.gpus", "%g GPUs, but the cluster %s has %d GPUs",
                                ga->values[i], cluster_path, c->n_gpus);
    t->gpus = c->n_gpus;
    /* tables_sharding: auto proposes for the GPUs the plans take: one count (constraints.gpus,
     * else the cluster's), on those GPUs */
    const sweep_axis *ta = &spec->axes[SWEEP_TABLES_SHARDING];
    if (ta->present && ga->present)
        return ps_error_set(err, PS_EINPUT, spec->file, ga->loc.line, ga->loc.column, "axes.gpus",
                            "tables_sharding: auto proposes each table's sharding for one GPU "
                            "count; the gpus axis varies it (sweep one count at a time, with "
                            "constraints.gpus)");
    cluster view;
    const cluster *on = c;
    if (ta->present && spec->gpus && cli_plan_cluster(c, spec->gpus, NULL, &view, &on, err))
        return err->code;
    int rc = sweep_tables_propose(spec, on, err);
    cli_plan_cluster_free(c, &view, on);
    if (rc)
        return err->code;
    if (sweep_enumerate(spec, c->n_gpus, &t->plans, &t->n, err))
        return err->code;
    t->combinations = t->n;
    int cnt[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, cnt);
    if (!cnt[SWEEP_PLAN_PENDING])
        return ps_error_set(err, PS_EINPUT, spec->file, spec->axes_loc.line, spec->axes_loc.column,
                            "axes",
                            "impossible constraints: none of the %d combinations is a valid "
                            "plan on %d GPUs (first: %s)",
                            t->n, c->n_gpus, t->n ? t->plans[0].reason : "-");
    return 0;
}

/* Keep this shard's plans (enumeration is identical in every shard); the pending ones' indices
 * into *todo (caller frees). */
static int table_shard(sweep_table *t, const sweep_options *o, int **todo)
{
    if (o->shard_n > 0) {
        int m = 0;
        for (int i = 0; i < t->n; i++)
            if (t->plans[i].index % o->shard_n == o->shard_k - 1)
                t->plans[m++] = t->plans[i];
        t->n = m;
    }
    *todo = xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof **todo);
    int n_todo = 0;
    for (int i = 0; i < t->n; i++)
        if (t->plans[i].status == SWEEP_PLAN_PENDING)
            (*todo)[n_todo++] = i;
    return n_todo;
}

static int simulate(sweep_table *t, const sweep_spec *spec, const cluster *c, const profile_db *db,
                    const sweep_options *o, double t0, ps_error *err)
{
    int *todo;
    int n_todo = table_shard(t, o, &todo);
    int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    int progress = o->progress == 0        ? PROGRESS_OFF
                   : isatty(STDERR_FILENO) ? PROGRESS_BAR
                                           : PROGRESS_LINES;
    double ts = ps_now_s();
    int n_twins = 0;
    int rc = sweep_pool_run(spec, c, db, t->plans, t->n, todo, n_todo, jobs, o->twins, progress,
                            &n_twins, err);
    free(todo);
    if (rc)
        return rc;
    double sim_s = ps_now_s() - ts;
    t->wall_s = ps_now_s() - t0;
    sweep_rank(t);
    int cnt[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, cnt);
    char twins[96] = "";
    if (n_twins)
        snprintf(twins, sizeof twins, " (%d of them twins: the compiled plan of another)", n_twins);
    fprintf(stderr,
            "sweep: %d plans processed in %.1f s with %d workers (%.1f plans/s): "
            "%d simulated%s, %d oom, %d failed; %d invalid combinations skipped\n",
            n_todo, sim_s, jobs, sim_s > 0 ? n_todo / sim_s : 0.0, cnt[SWEEP_PLAN_OK], twins,
            cnt[SWEEP_PLAN_OOM], cnt[SWEEP_PLAN_FAILED], cnt[SWEEP_PLAN_INVALID]);
    return 0;
}

/* --dry-run: what the sweep would simulate, from its enumeration alone. */
static void dry_run(sweep_table *t, const char *sweep_path, const char *cluster_path,
                    const sweep_options *o)
{
    int *todo;
    int combinations = t->n, valid = table_shard(t, o, &todo);
    free(todo);
    fprintf(stdout, "sweep %s on %s (%d GPUs): %d combinations, %d valid", sweep_path, cluster_path,
            t->gpus, combinations, valid);
    if (o->shard_n)
        fprintf(stdout, " in shard %d/%d", o->shard_k, o->shard_n);
    fprintf(stdout, " (to simulate, memory checked first), %d invalid; nothing simulated\n",
            t->n - valid);
    out_sweep_invalid(stdout, t);
}

int sweep_run(const char *sweep_path, const char *cluster_path, const char *data_dir,
              const sweep_options *o, ps_error *err)
{
    double t0 = ps_now_s();
    sweep_spec spec;
    if (sweep_spec_load(sweep_path, data_dir, &spec, err))
        return cli_file_kind_hint(sweep_path, FILE_SWEEP, err);
    cluster c;
    cluster_engine_start(); /* the engine first, then the platform, the actors, the run */
    if (cluster_load(cluster_path, data_dir, &c, err)) {
        sweep_spec_free(&spec);
        return cli_file_kind_hint(cluster_path, FILE_CLUSTER, err);
    }
    profile_db db;
    memset(&db, 0, sizeof db);
    if (o->profile && profile_db_load(o->profile, &db, err)) {
        cli_file_kind_hint(o->profile, FILE_PROFILE, err);
        cluster_free(&c);
        sweep_spec_free(&spec);
        return err->code;
    }
    if (o->profile)
        out_warn_profile_device(&db, &c);
    sweep_table t;
    memset(&t, 0, sizeof t);
    int rc = table_enumerate(&t, &spec, &c, cluster_path, err);
    if (!rc && o->dry_run) {
        dry_run(&t, sweep_path, cluster_path, o);
        sweep_table_free(&t);
        profile_db_free(&db);
        cluster_free(&c);
        sweep_spec_free(&spec);
        return 0;
    }
    if (!rc) {
        table_identity(&t, &spec, sweep_path, cluster_path, o);
        rc = simulate(&t, &spec, &c, o->profile ? &db : NULL, o, t0, err);
    }
    if (!rc)
        rc = sweep_write_outputs(&t, o, err);
    sweep_table_free(&t);
    profile_db_free(&db);
    cluster_free(&c);
    sweep_spec_free(&spec);
    return rc;
}
