/* merge.c: `protosim merge`: read the --json files of a sweep's shards (every field checked,
 * errors name the file and the JSON path), check they belong to one sweep, re-rank, write. */
#include "sweep_run.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"

/* The whole file, NUL-terminated (caller frees); NULL with errno when it cannot be read. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 0, n = 0, r;
    char *buf = NULL;
    do {
        xgrow(&buf, 1, n + 4096 + 1, &cap);
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
    } while (r > 0);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

/* A figure of the outcome: a finite number >= 0 (every time, rate, fraction and byte count the
 * sweep writes is one). */
static int figure(const cJSON *o, const char *key, int optional, const char *file,
                  const char *where, double *out, ps_error *err)
{
    return out_json_num_in(o, key, optional, 0, DBL_MAX, file, where, out, err);
}

/* The outcome fields of a plan record, checked by status. */
static int outcome_from_json(const cJSON *o, const char *file, const char *where, sweep_plan *p,
                             ps_error *err)
{
    int ok = p->status == SWEEP_PLAN_OK, fits = ok || p->status == SWEEP_PLAN_OOM;
    char bw[160];
    snprintf(bw, sizeof bw, "%s.breakdown", where);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "breakdown");
    if (ok && !cJSON_IsObject(b))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, bw, "missing (a simulated plan has one)");
    const char *kind = "", *reason = "";
    if (figure(o, "iteration_time_s", !ok, file, where, &p->fig.iteration_s, err) ||
        figure(o, "tokens_per_s", !ok, file, where, &p->fig.tokens_per_s, err) ||
        figure(o, "samples_per_s", !ok, file, where, &p->fig.samples_per_s, err) ||
        figure(o, "mfu", !ok, file, where, &p->fig.mfu, err) ||
        figure(o, "sim_wall_s", 1, file, where, &p->sim_wall_s, err) ||
        (ok && (figure(b, "compute_s", 0, file, bw, &p->fig.compute_s, err) ||
                figure(b, "exposed_comm_s", 0, file, bw, &p->fig.exposed_comm_s, err) ||
                figure(b, "bubble_s", 0, file, bw, &p->fig.bubble_s, err) ||
                figure(b, "idle_s", 0, file, bw, &p->fig.idle_s, err))) ||
        figure(o, "peak_memory_bytes", !fits, file, where, &p->fig.peak_memory_bytes, err) ||
        figure(o, "memory_capacity_bytes", !fits, file, where, &p->fig.memory_capacity_bytes,
               err) ||
        out_json_str(o, "reason_kind", ok, file, where, &kind, err) ||
        out_json_str(o, "reason", ok, file, where, &reason, err))
        return err->code;
    if (ok && !(p->fig.iteration_s > 0)) {
        char path[192];
        snprintf(path, sizeof path, "%s.iteration_time_s", where);
        return ps_error_set(err, PS_EINPUT, file, 0, 0, path,
                            "must be greater than 0 for a simulated plan");
    }
    snprintf(p->reason_kind, sizeof p->reason_kind, "%s", kind);
    snprintf(p->reason, sizeof p->reason, "%s", reason);
    return 0;
}

/* A plan that was compiled (any status but invalid) spans its GPUs exactly. */
static int plan_spans_gpus(const plan_desc *d, int gpus, const char *file, const char *where,
                           ps_error *err)
{
    long long product = (long long)d->tp * d->cp; /* each factor <= INT_MAX: no overflow */
    product = product > gpus ? product : product * d->pp;
    product = product > gpus ? product : product * d->dp;
    if (product == gpus)
        return 0;
    return ps_error_set(err, PS_EINPUT, file, 0, 0, where,
                        "tensor %d x context %d x pipeline %d x data %d is not the plan's %d "
                        "GPUs",
                        d->tp, d->cp, d->pp, d->dp, gpus);
}

/* A non-negative number at obj.key (required). */
static int nonneg(const cJSON *o, const char *key, const char *file, const char *where, double *out,
                  ps_error *err)
{
    if (out_json_num(o, key, 0, file, where, out, err))
        return err->code;
    if (*out < 0)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, where, "%s must be >= 0, got %g", key,
                            *out);
    return 0;
}

/* A dlrm plan's "embedding" (required in a dlrm sweep, refused in others): the tables, the
 * sharding or each table's (with the proposal), the placement, and the ranking columns of a
 * simulated plan. */
static int embedding_from_json(const cJSON *o, int dlrm, const char *file, const char *where,
                               sweep_plan *p, ps_error *err)
{
    char ew[96];
    snprintf(ew, sizeof ew, "%s.embedding", where);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "embedding");
    p->proposal = -1;
    p->desc.emb_sharding = p->desc.emb_placement = -1;
    if (!e && !dlrm)
        return 0;
    if (!dlrm)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, ew,
                            "present in the sweep of a model that is not dlrm");
    if (!cJSON_IsObject(e))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, ew,
                            "missing or not an object (every plan of a dlrm sweep has one)");
    if (out_json_int(e, "tables", 0, 1, DLRM_MAX_TABLES, file, ew, &p->n_tables, err) ||
        out_json_int(e, "proposal", 1, 0, INT_MAX, file, ew, &p->proposal, err))
        return err->code;
    if (cJSON_HasObjectItem(e, "proposal")) {
        char aw[128];
        snprintf(aw, sizeof aw, "%s.tables_sharding", ew);
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(e, "tables_sharding");
        if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != p->n_tables)
            return ps_error_set(err, PS_EINPUT, file, 0, 0, aw,
                                "must be an array of %d shardings (one per table)", p->n_tables);
        for (int t = 0; t < p->n_tables; t++) {
            const cJSON *v = cJSON_GetArrayItem(a, t);
            int k = cJSON_IsString(v) ? enum_parse(emb_sharding_names, v->valuestring) : -1;
            if (k < 0)
                return ps_error_set(err, PS_EINPUT, file, 0, 0, aw,
                                    "item %d is not a sharding (table-wise, row-wise, "
                                    "column-wise, table-row-wise or data-parallel)",
                                    t);
            p->table_sharding[t] = (unsigned char)k;
        }
    } else {
        p->proposal = -1;
        if (cJSON_HasObjectItem(e, "sharding") &&
            out_json_enum(e, "sharding", emb_sharding_names, file, ew, &p->desc.emb_sharding, err))
            return err->code;
    }
    if (out_json_int(e, "shards", 1, 2, INT_MAX, file, ew, &p->desc.emb_shards, err))
        return err->code;
    if (cJSON_HasObjectItem(e, "placement") &&
        out_json_enum(e, "placement", emb_placement_names, file, ew, &p->desc.emb_placement, err))
        return err->code;
    p->desc.dense_tables = p->proposal < 0 && p->desc.emb_sharding == EMB_SHARD_DATA_PARALLEL;
    if (p->status != SWEEP_PLAN_OK)
        return 0;
    p->dlrm = 1;
    if (nonneg(e, "lookup_max_s", file, ew, &p->lookup_max_s, err) ||
        nonneg(e, "alltoall_s", file, ew, &p->alltoall_s, err) ||
        nonneg(e, "lookup_imbalance", file, ew, &p->lookup_imbalance, err))
        return err->code;
    return 0;
}

/* plans[j] of a shard file: index in [0, combinations), a final status (never "pending"), the
 * plan's fields (out_plan_from_json) and the outcome its status calls for. */
static int plan_from_json(const cJSON *o, int j, const sweep_table *t, const char *file,
                          sweep_plan *p, ps_error *err)
{
    char where[64];
    snprintf(where, sizeof where, "plans[%d]", j);
    memset(p, 0, sizeof *p);
    if (!cJSON_IsObject(o))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, where, "must be a plan record (an object)");
    const char *status = NULL;
    if (out_json_int(o, "index", 0, 0, t->combinations - 1L, file, where, &p->index, err) ||
        out_json_enum(o, "status", sweep_plan_status_names, file, where, &p->status, err))
        return err->code;
    if (p->status == SWEEP_PLAN_PENDING) {
        out_json_str(o, "status", 0, file, where, &status, err);
        char path[96];
        snprintf(path, sizeof path, "%s.status", where);
        return ps_error_set(err, PS_EINPUT, file, 0, 0, path,
                            "'%s' is not the status of a processed plan (expected ok, oom, "
                            "failed or invalid)",
                            status);
    }
    p->gpus = t->gpus; /* written when the sweep varies it */
    if (out_json_int(o, "gpus", 1, 1, t->gpus, file, where, &p->gpus, err) ||
        out_plan_from_json(o, file, where, &p->desc, err) ||
        embedding_from_json(o, t->dlrm, file, where, p, err) ||
        (p->status != SWEEP_PLAN_INVALID && plan_spans_gpus(&p->desc, p->gpus, file, where, err)))
        return err->code;
    return outcome_from_json(o, file, where, p, err);
}

/* "shard": null or absent (the whole sweep: 0/0), or [k, n] with 1 <= k <= n. */
static int shard_from_json(const cJSON *m, const char *file, int *k, int *n, ps_error *err)
{
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, "shard");
    *k = *n = 0;
    if (!sh || cJSON_IsNull(sh))
        return 0;
    const cJSON *a = cJSON_GetArrayItem(sh, 0), *b = cJSON_GetArrayItem(sh, 1);
    int ok = cJSON_IsArray(sh) && cJSON_GetArraySize(sh) == 2 && cJSON_IsNumber(a) &&
             cJSON_IsNumber(b) && a->valuedouble >= 1 && a->valuedouble <= b->valuedouble &&
             b->valuedouble <= INT_MAX && a->valuedouble == floor(a->valuedouble) &&
             b->valuedouble == floor(b->valuedouble);
    if (!ok)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, "sweep.shard",
                            "must be null or [k, n] with integers 1 <= k <= n");
    *k = (int)a->valuedouble;
    *n = (int)b->valuedouble;
    return 0;
}

/* The sweep's header from the first file. */
static int header_from_json(const cJSON *m, const char *file, sweep_table *t, ps_error *err)
{
    const char *hash = NULL, *sweep = "", *cl = "", *base = "", *wl = "", *family = "";
    t->memory_fit = 1;
    if (out_json_str(m, "hash", 0, file, "sweep", &hash, err) ||
        out_json_str(m, "file", 1, file, "sweep", &sweep, err) ||
        out_json_str(m, "cluster", 1, file, "sweep", &cl, err) ||
        out_json_str(m, "base", 1, file, "sweep", &base, err) ||
        out_json_str(m, "workload", 1, file, "sweep", &wl, err) ||
        out_json_str(m, "family", 1, file, "sweep", &family, err) ||
        (cJSON_HasObjectItem(m, "memory") &&
         out_json_enum(m, "memory", sweep_memory_names, file, "sweep", &t->memory_fit, err)) ||
        out_json_int(m, "gpus", 0, 1, INT_MAX, file, "sweep", &t->gpus, err) ||
        out_json_int(m, "combinations", 0, 0, INT_MAX, file, "sweep", &t->combinations, err))
        return err->code;
    snprintf(t->hash, sizeof t->hash, "%s", hash);
    snprintf(t->sweep_file, sizeof t->sweep_file, "%s", sweep);
    snprintf(t->cluster_file, sizeof t->cluster_file, "%s", cl);
    snprintf(t->base, sizeof t->base, "%s", base);
    snprintf(t->workload, sizeof t->workload, "%s", wl);
    if (family[0] && strcmp(family, "dlrm"))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, "sweep.family",
                            "'%s' is not a family with its own columns (only dlrm is written)",
                            family);
    t->dlrm = family[0] != '\0';
    const cJSON *axes = cJSON_GetObjectItemCaseSensitive(m, "axes");
    t->axes = cJSON_IsObject(axes) ? cJSON_Duplicate(axes, 1) : cJSON_CreateObject();
    t->show_bucket = cJSON_HasObjectItem(t->axes, "bucket_mb");
    t->show_sp = cJSON_HasObjectItem(t->axes, "sequence_parallel");
    t->show_gpus = cJSON_HasObjectItem(t->axes, "gpus");
    return 0;
}

/* A shard's wall time at most (a thousand years): their sum stays finite. */
#define MERGE_WALL_MAX_S 3.2e10

/* State across the inputs. */
typedef struct merge_state {
    sweep_table t;
    size_t cap;
    int *seen_shard, n_seen; /* the shard numbers read so far, one per input */
    size_t seen_cap;
    const char *first;
} merge_state;

/* Check one file's header against the first's and record its shard. */
static int merge_header(merge_state *ms, const cJSON *m, const char *file, ps_error *err)
{
    sweep_table *t = &ms->t;
    int k, n;
    const char *hash = NULL;
    if (shard_from_json(m, file, &k, &n, err) ||
        out_json_str(m, "hash", 0, file, "sweep", &hash, err))
        return err->code;
    if (!ms->first) {
        if (header_from_json(m, file, t, err))
            return err->code;
        ms->first = file;
        t->shard_n = n;
    } else if (strcmp(hash, t->hash)) {
        return ps_error_set(err, PS_EINPUT, file, 0, 0, "sweep.hash",
                            "comes from a different sweep than %s (sweep file, base strategy "
                            "or cluster differ: hash %s, not %s)",
                            ms->first, hash, t->hash);
    } else if (n != t->shard_n) {
        return ps_error_set(err, PS_EINPUT, file, 0, 0, "sweep.shard",
                            "was split into %d shards, %s into %d", n, ms->first, t->shard_n);
    }
    if (n > 0) {
        for (int i = 0; i < ms->n_seen; i++)
            if (ms->seen_shard[i] == k)
                return ps_error_set(err, PS_EINPUT, file, 0, 0, "sweep.shard",
                                    "shard %d/%d given twice", k, n);
        xgrow(&ms->seen_shard, sizeof *ms->seen_shard, (size_t)ms->n_seen + 1, &ms->seen_cap);
        ms->seen_shard[ms->n_seen++] = k;
    }
    double wall = 0;
    if (out_json_num_in(m, "wall_s", 1, 0, MERGE_WALL_MAX_S, file, "sweep", &wall, err))
        return err->code;
    t->wall_s += wall;
    return 0;
}

static int merge_file(merge_state *ms, const char *file, ps_error *err)
{
    struct stat st; /* the input limit (sim/base/limits.h), before reading */
    if (stat(file, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > PS_MAX_MERGE_BYTES)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, NULL,
                            "%lld bytes: more than %d (protosim's limit for a merge input: 1 GiB)",
                            (long long)st.st_size, PS_MAX_MERGE_BYTES);
    char *text = read_text(file);
    if (!text)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, NULL, "cannot read: %s", strerror(errno));
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 0);
    if (!root) {
        int line = 1, col = 1;
        for (const char *c = text; end && c < end; c++)
            line += *c == '\n', col = *c == '\n' ? 1 : col + 1;
        free(text);
        return ps_error_set(err, PS_EINPUT, file, line, col, NULL,
                            "not JSON (the --json output of protosim sweep)");
    }
    free(text);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "sweep");
    const cJSON *plans = cJSON_GetObjectItemCaseSensitive(root, "plans");
    int rc = 0;
    if (!cJSON_IsObject(m) || !cJSON_IsArray(plans))
        rc = ps_error_set(err, PS_EINPUT, file, 0, 0, NULL,
                          "not the --json output of protosim sweep (%s)",
                          !cJSON_IsObject(m) ? "no \"sweep\" object" : "no \"plans\" array");
    if (!rc)
        rc = merge_header(ms, m, file, err);
    int np = rc ? 0 : cJSON_GetArraySize(plans);
    if (np > 0)
        xgrow(&ms->t.plans, sizeof *ms->t.plans, (size_t)ms->t.n + (size_t)np, &ms->cap);
    for (int j = 0; j < np && !rc; j++) {
        rc = plan_from_json(cJSON_GetArrayItem(plans, j), j, &ms->t, file, &ms->t.plans[ms->t.n],
                            err);
        ms->t.n += !rc;
    }
    cJSON_Delete(root);
    return rc;
}

static int by_index(const void *a, const void *b)
{
    return ((const sweep_plan *)a)->index - ((const sweep_plan *)b)->index;
}

/* Plans sorted by index, none twice; a warning for missing shards. */
static int merge_check(merge_state *ms, ps_error *err)
{
    sweep_table *t = &ms->t;
    if (t->n > 0)
        qsort(t->plans, (size_t)t->n, sizeof *t->plans, by_index);
    for (int i = 1; i < t->n; i++)
        if (t->plans[i].index == t->plans[i - 1].index)
            return ps_error_set(err, PS_EINPUT, NULL, 0, 0, NULL,
                                "plan %d appears in more than one input (the same shard "
                                "given twice?)",
                                t->plans[i].index);
    int missing = t->shard_n > 0 ? t->shard_n - ms->n_seen : 0; /* inputs' shards are distinct */
    if (missing)
        fprintf(stderr,
                "protosim: warning: %d of %d shards missing: the ranking covers %d of %d "
                "plans\n",
                missing, t->shard_n, t->n, t->combinations);
    return 0;
}

int sweep_merge(const char *const *inputs, int n_inputs, const sweep_options *o, ps_error *err)
{
    merge_state ms;
    memset(&ms, 0, sizeof ms);
    int rc = 0;
    for (int i = 0; i < n_inputs && !rc; i++)
        rc = merge_file(&ms, inputs[i], err);
    if (!rc)
        rc = merge_check(&ms, err);
    if (!rc) {
        ms.t.shard_n = ms.t.shard_k = 0;
        sweep_rank(&ms.t);
        rc = sweep_write_outputs(&ms.t, o, err);
    }
    free(ms.seen_shard);
    sweep_table_free(&ms.t);
    return rc;
}
