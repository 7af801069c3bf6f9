/* out_run.c: what `protosim run` writes: the text summary and the JSON report of one
 * simulated plan, from the compiled plan, the result and the cluster (the trace: out_trace.c). */
#include "output.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *human_time(double s, char *buf, size_t n)
{
    if (s >= 1.0)
        snprintf(buf, n, "%.3f s", s);
    else if (s >= 1e-3)
        snprintf(buf, n, "%.3f ms", s * 1e3);
    else
        snprintf(buf, n, "%.3f us", s * 1e6);
    return buf;
}

static double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

/* The three busiest links (r->links is busiest first). With folded replicas they cover what
 * was simulated: replica 0's traffic and every data-parallel collective. */
static void links_text(FILE *out, const compiled_plan *p, const htae_result *r, double T)
{
    if (r->n_links == 0)
        return;
    fprintf(out, "  links        (busiest 3 of %d that carried traffic%s)\n", r->n_links,
            p->simulated_replicas < p->dp ? "; replica 0 and the DP collectives: folded" : "");
    if (p->simulated_tp < p->tp || p->simulated_context < p->cp)
        fprintf(out,
                "    (%s folded: their pipeline sends and collectives are "
                "simulated; --no-fold for all)\n",
                p->simulated_tp < p->tp ? "TP peers" : "context ranks");
    for (int i = 0; i < r->n_links && i < 3; i++)
        fprintf(out, "    %-32s %-4s busy %5.1f%%  %10.3f GB\n", r->links[i].name,
                r->links[i].direction, pct(r->links[i].busy_s, T), r->links[i].bytes / 1e9);
}

/* An uneven split (pipeline keys): each model chunk's layers in model order, runs of equal
 * counts as "6 x 10": "; layers per chunk 5, 6 x 10, 5". Nothing for an even split. */
static void print_uneven_split(FILE *out, const compiled_plan *p)
{
    int n = p->pp * p->chunks, even = 1;
    for (int i = 1; i < n; i++)
        even = even && p->chunk_layers[i] == p->chunk_layers[0];
    if (even)
        return;
    fprintf(out, "; layers per chunk ");
    for (int i = 0; i < n;) {
        int j = i;
        while (j < n && p->chunk_layers[j] == p->chunk_layers[i])
            j++;
        fprintf(out, "%s%d", i ? ", " : "", p->chunk_layers[i]);
        if (j - i > 1)
            fprintf(out, " x %d", j - i);
        i = j;
    }
}

/* The model and plan lines of a dlrm plan (strategies/compile/dlrm_plan.c). */
static void out_run_dlrm_plan(FILE *out, const compiled_plan *p)
{
    const workload_dlrm *d = &p->model.dlrm;
    double rows = 0;
    for (int t = 0; t < d->n_tables; t++)
        rows += d->rows[t];
    fprintf(out,
            "  model        %s: dlrm, %d tables (%.2f M rows, %s), interaction %s, %.2f B params\n",
            p->model.name, d->n_tables, rows / 1e6, precision_name(d->embedding_precision),
            enum_name(dlrm_interaction_names, (int)d->interaction), p->params_total / 1e9);
    const dlrm_plan_stats *st = p->dlrm;
    char tables[200];
    if (st && (st->comm || st->per_table)) {
        char place[40] = "";
        if (st->placement >= 0)
            snprintf(place, sizeof place, " (%s)", enum_name(emb_placement_names, st->placement));
        int k = snprintf(tables, sizeof tables, "%s%s%s, shards per GPU",
                         enum_name(emb_sharding_names, st->sharding),
                         st->per_table ? " + per-table children" : "", place);
        for (int r = 0; r < st->gpus && k < (int)sizeof tables - 16; r++)
            k += snprintf(tables + k, sizeof tables - (size_t)k, " %d", st->tables_of_gpu[r]);
        if (st->gpus > 0 && k >= (int)sizeof tables - 16)
            k += snprintf(tables + k, sizeof tables - (size_t)k, " ...");
        if (st->sparse_update && k < (int)sizeof tables - 16)
            snprintf(tables + k, sizeof tables - (size_t)k, "; sparse update");
    } else {
        snprintf(tables, sizeof tables, "%s",
                 p->plan.dense_tables ? "data-parallel (replicated, dense gradients all-reduced)"
                 : st && st->sparse_update
                     ? "on the one GPU (sparse update: a gradient row per lookup, then SGD)"
                     : "on the one GPU (update fused into the lookup)");
    }
    char bottom[48] = "";
    if (st && st->bottom_mlp_gpu >= 0)
        snprintf(bottom, sizeof bottom, "; bottom MLP on GPU %d", st->bottom_mlp_gpu);
    fprintf(out, "  plan         %d GPUs = DP %d (MLPs%s); tables %s; %d micro-batches of %d; %s\n",
            p->gpus, p->dp, bottom, tables, p->micro_batches, p->plan.micro_batch,
            precision_name(p->plan.precision));
    if (st && st->comm)
        fprintf(out,
                "  lookups      max %.3f ms per GPU, imbalance %.2f (max / mean); embedding "
                "collectives %.2f MB sent per iteration\n",
                st->lookup_max_s * 1e3, st->lookup_imbalance, st->alltoall_bytes / 1e6);
}

/* plan.embedding of a dlrm plan's JSON: what a ranking of sharding plans reads (the lookup
 * times are the cost model's; alltoall_busy_s the simulated emb-comm busy time of the report's
 * busiest GPU). */
static void out_run_dlrm_json(cJSON *plan, const dlrm_plan_stats *st, double alltoall_busy_s)
{
    cJSON *e = cJSON_AddObjectToObject(plan, "embedding");
    cJSON_AddStringToObject(
        e, "sharding", st->sharding < 0 ? "none" : enum_name(emb_sharding_names, st->sharding));
    if (st->placement >= 0)
        cJSON_AddStringToObject(e, "placement", enum_name(emb_placement_names, st->placement));
    cJSON_AddBoolToObject(e, "per_table_children", st->per_table);
    cJSON_AddNumberToObject(e, "bottom_mlp_gpu", st->bottom_mlp_gpu);
    cJSON *owner = cJSON_AddArrayToObject(e, "gpu_of_table");
    for (int t = 0; t < st->n_tables; t++)
        cJSON_AddItemToArray(owner, cJSON_CreateNumber(st->owner[t]));
    cJSON *tabs = cJSON_AddArrayToObject(e, "shards_per_gpu");
    cJSON *look = cJSON_AddArrayToObject(e, "lookup_s_per_gpu");
    for (int r = 0; r < st->gpus; r++) {
        cJSON_AddItemToArray(tabs, cJSON_CreateNumber(st->tables_of_gpu[r]));
        cJSON_AddItemToArray(look, cJSON_CreateNumber(st->lookup_s[r]));
    }
    cJSON_AddNumberToObject(e, "lookup_max_s", st->lookup_max_s);
    cJSON_AddNumberToObject(e, "lookup_imbalance", st->lookup_imbalance);
    cJSON_AddNumberToObject(e, "alltoall_bytes", st->alltoall_bytes);
    cJSON_AddNumberToObject(e, "alltoall_busy_s", alltoall_busy_s);
}

void out_warn_profile_device(const profile_db *db, const cluster *c)
{
    for (int r = 0; r < c->n_gpus; r++)
        if (!strcmp(c->device[r]->name, db->device))
            return;
    fprintf(stderr,
            "protosim: warning: %s measures %s; the cluster has none: the cost model times every "
            "op\n",
            db->file, db->device);
}

static const char *pass_name(const profile_group *g)
{
    return g->replay ? "recompute" : g->pass == PASS_FWD ? "fwd" : "bwd";
}

/* run --profile: how many op passes the table matched, the share of the kernel time it gives,
 * and the matched ops by name. */
static void profile_text(FILE *out, const compiled_plan *p)
{
    const profile_stats *st = p->profile;
    if (!st)
        return;
    char b1[32], b2[32];
    fprintf(out, "  profile      %s (%s): ", st->file, st->device);
    if (!st->device_in_cluster) {
        fprintf(out, "no GPU of the cluster is one: nothing matched\n");
        return;
    }
    profile_summary ps;
    profile_summarize(st, &ps);
    fprintf(out, "%d of %d op passes matched, %.1f%% of the kernel time measured\n", ps.matched,
            ps.ops, pct(ps.measured, ps.used));
    for (int i = 0; i < ps.n; i++) {
        const profile_group *g = &ps.g[i];
        if (!g->matched)
            continue;
        fprintf(out, "    %-28s %-9s %3d of %3d  %-22s %10s -> %s", g->name, pass_name(g),
                g->matched, g->ops, g->entry_op, human_time(g->model, b1, sizeof b1),
                human_time(g->used, b2, sizeof b2));
        if (g->partly)
            fprintf(out, " (%d with one GEMM modelled)", g->partly);
        fputc('\n', out);
    }
    profile_summary_free(&ps);
}

static void profile_json(cJSON *root, const compiled_plan *p)
{
    const profile_stats *st = p->profile;
    if (!st)
        return;
    profile_summary ps;
    profile_summarize(st, &ps);
    cJSON *o = cJSON_AddObjectToObject(root, "profile");
    cJSON_AddStringToObject(o, "file", st->file);
    cJSON_AddStringToObject(o, "device", st->device);
    cJSON_AddBoolToObject(o, "device_in_cluster", st->device_in_cluster);
    cJSON_AddNumberToObject(o, "op_passes", ps.ops);
    cJSON_AddNumberToObject(o, "matched", ps.matched);
    cJSON_AddNumberToObject(o, "model_kernel_s", ps.model);
    cJSON_AddNumberToObject(o, "kernel_s", ps.used);
    cJSON_AddNumberToObject(o, "measured_s", ps.measured);
    cJSON_AddNumberToObject(o, "measured_share", ps.used > 0 ? ps.measured / ps.used : 0.0);
    cJSON *by = cJSON_AddArrayToObject(o, "by_op");
    for (int i = 0; i < ps.n; i++) {
        const profile_group *g = &ps.g[i];
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "name", g->name);
        cJSON_AddStringToObject(it, "pass", pass_name(g));
        cJSON_AddNumberToObject(it, "ops", g->ops);
        cJSON_AddNumberToObject(it, "matched", g->matched);
        cJSON_AddNumberToObject(it, "partly", g->partly);
        cJSON_AddStringToObject(it, "entry_op", g->entry_op);
        cJSON_AddNumberToObject(it, "model_kernel_s", g->model);
        cJSON_AddNumberToObject(it, "kernel_s", g->used);
        cJSON_AddNumberToObject(it, "measured_s", g->measured);
        cJSON_AddItemToArray(by, it);
    }
    profile_summary_free(&ps);
}

void out_run_text(FILE *out, const cluster *c, const run_outcome *run)
{
    const compiled_plan *p = &run->plan;
    const htae_result *r = &run->res;
    const report_summary *sum = &run->sum;
    const report_critical_path *cp = &run->path;
    char b1[32], b2[32];
    const double GiB = 1073741824.0;
    const workload_model *m = &p->model;
    const plan_desc *d = &p->plan;
    fprintf(out, "protosim: %s on %s\n", p->strategy_file, c->file);
    if (m->family == FAMILY_DLRM) {
        out_run_dlrm_plan(out, p);
    } else {
        fprintf(out, "  model        %s: %d layers, hidden %d, %d heads, seq %d, %.2f B params\n",
                m->name, m->layers, m->hidden, m->heads, m->seq, p->params_total / 1e9);
        fprintf(out, "  plan         %d GPUs = TP %d x ", p->gpus, p->tp);
        if (p->cp > 1)
            fprintf(out, "CP %d x ", p->cp);
        fprintf(out, "PP %d x DP %d; %s, %d micro-batches of %d", p->pp, p->dp,
                schedule_name(d->schedule), p->micro_batches, d->micro_batch);
        if (p->chunks > 1 && (d->schedule == SCHED_ZBV || d->schedule == SCHED_DUALPIPEV))
            fprintf(out, ", 2 chunks a stage in a V");
        else if (d->schedule == SCHED_DUALPIPE)
            fprintf(out, ", two copies of the model fed from both ends");
        else if (p->chunks > 1)
            fprintf(out, ", %d virtual stages", p->chunks);
        print_uneven_split(out, p);
        fprintf(out, "; %s; recompute %s%s", precision_name(d->precision),
                recompute_name(d->recompute), d->sequence_parallel ? "; sequence parallel" : "");
        if (m->experts > 0)
            fprintf(out, "; experts %d: EP %d x ETP %d", m->experts, d->ep, d->etp);
        if (d->zero)
            fprintf(out, "; ZeRO-%d", d->zero);
        if (d->zero && p->zero_shard < p->dp * p->cp)
            fprintf(out, " (HSDP: shards of %d GPUs, %d replicas)", p->zero_shard,
                    p->dp * p->cp / p->zero_shard);
        fputc('\n', out);
    }
    if (c->file_rank) {
        char ranks[96];
        cluster_selected_text(c, ranks, sizeof ranks);
        fprintf(out, "  gpus         %d of the cluster's %d: %s (hosts %s", c->n_gpus, c->file_gpus,
                ranks, c->host_names[0]);
        if (c->n_gpus > 1)
            fprintf(out, " .. %s", c->host_names[c->n_gpus - 1]);
        fputs(")\n", out);
    }
    fprintf(out, "  iteration    %s\n", human_time(sum->fig.iteration_s, b1, sizeof b1));
    if (p->tokens_per_iter > 0)
        fprintf(out, "  throughput   %.2f samples/s, %.0f tokens/s\n", sum->fig.samples_per_s,
                sum->fig.tokens_per_s);
    else
        fprintf(out, "  throughput   %.2f samples/s\n", sum->fig.samples_per_s);
    fprintf(out, "  MFU          %.1f%%\n", 100.0 * sum->fig.mfu);
    fprintf(out, "  memory       %.2f GiB peak (GPU %d) of %.2f GiB%s\n",
            sum->fig.peak_memory_bytes / GiB, sum->peak_memory_rank,
            sum->fig.memory_capacity_bytes / GiB,
            sum->fig.peak_memory_bytes > sum->fig.memory_capacity_bytes ? "  ** does not fit **"
                                                                        : "");
    double T = sum->fig.iteration_s;
    fprintf(out, "  breakdown    (GPU %d, the busiest)\n", sum->busiest_rank);
    fprintf(out, "    compute         %12s  %5.1f%%\n",
            human_time(sum->fig.compute_s, b1, sizeof b1), pct(sum->fig.compute_s, T));
    fprintf(out, "    exposed comm    %12s  %5.1f%%\n",
            human_time(sum->fig.exposed_comm_s, b1, sizeof b1), pct(sum->fig.exposed_comm_s, T));
    fprintf(out, "    pipeline bubble %12s  %5.1f%%\n",
            human_time(sum->fig.bubble_s, b1, sizeof b1), pct(sum->fig.bubble_s, T));
    fprintf(out, "    idle            %12s  %5.1f%%\n", human_time(sum->fig.idle_s, b1, sizeof b1),
            pct(sum->fig.idle_s, T));
    if (sum->n_top) {
        fprintf(out, "  top items    (GPU %d)\n", sum->busiest_rank);
        for (int i = 0; i < sum->n_top; i++)
            fprintf(out, "    %-40s %12s\n", p->graph->labels[sum->top[i].label],
                    human_time(sum->top[i].seconds, b1, sizeof b1));
    }
    report_path_item top[REPORT_TOP];
    int n_top = report_critical_path_top(cp, top, REPORT_TOP);
    if (n_top) {
        fprintf(out, "  critical path (%d items, the largest)\n", cp->n);
        for (int i = 0; i < n_top; i++)
            fprintf(out, "    %-48s %12s  %5.1f%%  %s\n", top[i].name,
                    human_time(top[i].seconds, b1, sizeof b1), pct(top[i].seconds, T), top[i].kind);
    }
    links_text(out, p, r, T);
    profile_text(out, p);
    fprintf(out, "  simulator    %llu tasks, %llu activities in %.3f s (%.0f activities/s)",
            (unsigned long long)run->tasks, (unsigned long long)r->activities, r->wall_s,
            r->wall_s > 0 ? (double)r->activities / r->wall_s : 0.0);
    if (r->timed_colls)
        fprintf(out, "; %u collectives alone on their links timed", r->timed_colls);
    if (r->solo_acts)
        fprintf(out, "; %u transfers and collectives timed while alone (%u turned into tasks)",
                r->solo_acts, r->solo_turned);
    if (p->simulated_replicas < p->dp)
        fprintf(out, "; %d of %d data-parallel replicas simulated (folded)", p->simulated_replicas,
                p->dp);
    if (p->simulated_tp < p->tp)
        fprintf(out, "; tensor index 0 of %d computes (TP peers folded)", p->tp);
    if (p->simulated_context < p->cp)
        fprintf(out, "; context indices 0-%d of %d compute (context ranks folded)",
                p->simulated_context - 1, p->cp);
    if (run->steady.used)
        fprintf(out, "; %d of %d micro-batches simulated (steady state, period %s",
                run->steady.simulated, run->steady.micro_batches,
                human_time(run->steady.period_s, b1, sizeof b1));
    if (run->steady.used && run->steady.approx_s > 0) /* no exact period: one to a tolerance */
        fprintf(out,
                ", approximate: it repeats to within %s, so each of the %d inserted periods may "
                "be off by as much, the iteration by up to %s",
                human_time(run->steady.approx_s, b1, sizeof b1), run->steady.inserted,
                human_time(run->steady.inserted * run->steady.approx_s, b2, sizeof b2));
    if (run->steady.used)
        fputc(')', out);
    /* the host's whole time, not the engine's alone: building and summing a graph of millions
     * of tasks takes longer than simulating its steady state (issue 30) */
    fprintf(out, "; host %.3f s: compile %.3f, simulate %.3f, summarize %.3f\n",
            run->compile_s + run->simulate_s + run->summarize_s, run->compile_s, run->simulate_s,
            run->summarize_s);
}

int out_write_error(const char *path, ps_error *err)
{
    return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
}

int out_json_file(const char *path, cJSON *root, ps_error *err)
{
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!text || !f || fputs(text, f) < 0 || fputc('\n', f) < 0)
        rc = out_write_error(path, err);
    if (f && fclose(f) && !rc)
        rc = out_write_error(path, err);
    free(text);
    return rc;
}

int out_run_json(const char *path, const cluster *c, const run_outcome *run, double load_s,
                 ps_error *err)
{
    const compiled_plan *p = &run->plan;
    const htae_result *r = &run->res;
    const report_summary *sum = &run->sum;
    const report_critical_path *cp = &run->path;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "strategy", p->strategy_file);
    cJSON_AddStringToObject(root, "cluster", c->file);
    cJSON_AddStringToObject(root, "workload", p->model.name);
    cJSON *b = out_figures_json(root, &sum->fig);
    cJSON_AddNumberToObject(b, "gpu", sum->busiest_rank);
    cJSON_AddNumberToObject(root, "peak_memory_bytes", sum->fig.peak_memory_bytes);
    cJSON_AddNumberToObject(root, "memory_capacity_bytes", sum->fig.memory_capacity_bytes);
    cJSON_AddBoolToObject(root, "fits_in_memory",
                          sum->fig.peak_memory_bytes <= sum->fig.memory_capacity_bytes);
    cJSON_AddNumberToObject(root, "gpus_over_memory", compiled_plan_gpus_over_memory(p));
    cJSON_AddNumberToObject(root, "memory_excess_bytes",
                            fmax(0.0, sum->fig.peak_memory_bytes - sum->fig.memory_capacity_bytes));
    cJSON_AddNumberToObject(root, "gpus", p->gpus);
    /* the cluster's GPUs the plan ran on, by their rank in the cluster file */
    cJSON_AddNumberToObject(root, "cluster_gpus", c->file_rank ? c->file_gpus : c->n_gpus);
    if (c->file_rank) { /* else every GPU, in the file's order */
        cJSON *taken = cJSON_AddArrayToObject(root, "cluster_ranks");
        for (int g = 0; g < c->n_gpus; g++)
            cJSON_AddItemToArray(taken, cJSON_CreateNumber(c->file_rank[g]));
    }

    cJSON *plan = cJSON_AddObjectToObject(root, "plan");
    out_plan_json(plan, &p->plan);
    cJSON_AddNumberToObject(plan, "micro_batches", p->micro_batches);
    if (p->dlrm)
        out_run_dlrm_json(plan, p->dlrm, sum->comm_s[CAT_EMB_COMM]);
    cJSON *split = cJSON_AddArrayToObject(plan, "chunk_layers");
    for (int mc = 0; mc < p->pp * p->chunks; mc++)
        cJSON_AddItemToArray(split, cJSON_CreateNumber(p->chunk_layers[mc]));
    if (!cJSON_HasObjectItem(plan, "shard_degree")) /* written above when set: the same value */
        cJSON_AddNumberToObject(plan, "shard_degree", p->zero_shard);

    cJSON *cs = cJSON_AddObjectToObject(b, "comm_busy_s");
    for (int k = CAT_TP_COMM; k <= CAT_EMB_COMM; k++)
        cJSON_AddNumberToObject(cs, task_category_name(k), sum->comm_s[k]);

    const memory_estimate *me = &p->memory[sum->peak_memory_rank];
    cJSON *mem = cJSON_AddObjectToObject(root, "memory");
    cJSON_AddNumberToObject(mem, "gpu", sum->peak_memory_rank);
    cJSON_AddNumberToObject(mem, "weights_bytes", me->weights);
    cJSON_AddNumberToObject(mem, "gradients_bytes", me->gradients);
    cJSON_AddNumberToObject(mem, "optimizer_bytes", me->optimizer);
    cJSON_AddNumberToObject(mem, "activations_bytes", me->activations);
    cJSON_AddNumberToObject(mem, "buffers_bytes", me->buffers);

    cJSON *top = cJSON_AddArrayToObject(root, "top_items");
    for (int i = 0; i < sum->n_top; i++) {
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "name", p->graph->labels[sum->top[i].label]);
        cJSON_AddNumberToObject(it, "seconds", sum->top[i].seconds);
        cJSON_AddItemToArray(top, it);
    }

    cJSON *crit = cJSON_AddArrayToObject(root, "critical_path");
    for (int i = 0; i < cp->n; i++) {
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "name", cp->items[i].name);
        cJSON_AddStringToObject(it, "kind", cp->items[i].kind);
        cJSON_AddNumberToObject(it, "seconds", cp->items[i].seconds);
        cJSON_AddItemToArray(crit, it);
    }

    cJSON *links = cJSON_AddArrayToObject(root, "links"); /* busiest first, as r->links */
    for (int i = 0; i < r->n_links; i++) {
        const htae_link_stat *l = &r->links[i];
        cJSON *it = cJSON_CreateObject();
        cJSON_AddStringToObject(it, "id", l->name);
        cJSON_AddStringToObject(it, "direction", l->direction);
        cJSON_AddNumberToObject(it, "bytes", l->bytes);
        cJSON_AddNumberToObject(it, "busy_fraction",
                                sum->fig.iteration_s > 0 ? l->busy_s / sum->fig.iteration_s : 0.0);
        cJSON_AddItemToArray(links, it);
    }

    profile_json(root, p);

    cJSON *sim = cJSON_AddObjectToObject(root, "simulator");
    cJSON_AddNumberToObject(sim, "wall_s", r->wall_s);
    cJSON_AddNumberToObject(sim, "activities", (double)r->activities);
    cJSON_AddNumberToObject(sim, "tasks", (double)run->tasks);
    cJSON_AddNumberToObject(sim, "timed_collectives", r->timed_colls);
    cJSON_AddNumberToObject(sim, "timed_while_alone", r->solo_acts);
    cJSON_AddNumberToObject(sim, "turned_into_tasks", r->solo_turned);
    cJSON_AddNumberToObject(sim, "flows_left_out_of_turned_tasks", (double)r->solo_left_out);
    cJSON_AddNumberToObject(sim, "simulated_replicas", p->simulated_replicas);
    cJSON_AddNumberToObject(sim, "simulated_tensor_indices", p->simulated_tp);
    cJSON_AddNumberToObject(sim, "simulated_context_indices", p->simulated_context);
    cJSON_AddNumberToObject(sim, "activities_per_s", r->wall_s > 0 ? r->activities / r->wall_s : 0);
    cJSON *st = cJSON_AddObjectToObject(sim, "steady_state");
    cJSON_AddNumberToObject(st, "micro_batches", run->steady.micro_batches);
    cJSON_AddNumberToObject(st, "simulated_micro_batches", run->steady.simulated);
    if (run->steady.used)
        cJSON_AddNumberToObject(st, "period_s", run->steady.period_s);
    if (run->steady.used && run->steady.approx_s > 0) {
        cJSON_AddNumberToObject(st, "approx_s", run->steady.approx_s);
        cJSON_AddNumberToObject(st, "inserted_periods", run->steady.inserted);
        cJSON_AddNumberToObject(st, "approx_bound_s", run->steady.inserted * run->steady.approx_s);
    }
    if (!run->steady.used)
        cJSON_AddStringToObject(st, "not_used", run->steady.why);
    cJSON *ph = cJSON_AddObjectToObject(sim, "steps_s"); /* where the command's time went */
    cJSON_AddNumberToObject(ph, "load", load_s);
    cJSON_AddNumberToObject(ph, "compile", run->compile_s);
    cJSON_AddNumberToObject(ph, "simulate", run->simulate_s);
    cJSON_AddNumberToObject(ph, "summarize", run->summarize_s);

    return out_json_file(path, root, err);
}
