/* compare.c: a trace's step beside the plan's prediction on the same GPU (compare.h): the
 * measured split from the trace, the predicted one from the cost model over the op graph and
 * the simulated timeline, the rows sorted by difference. */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"

/* The rows after the kinds, in enum order. */
static const char *const step_part_names[ROW_COUNT - KIND_COUNT] = {
    "host/overhead in segments", "exposed communication", "host-bound gaps", "idle", "whole step",
};

const char *compare_row_name(int row)
{
    return row < KIND_COUNT ? step_kind_names[row] : step_part_names[row - KIND_COUNT];
}

/* The kind of the cost model's op. */
static int kind_of_op(const workload_op *op)
{
    switch (op->kind) {
    case OP_GEMM: return KIND_GEMM;
    case OP_ATTENTION: return KIND_ATTENTION;
    case OP_EMBEDDING:
    case OP_LOSS:
    case OP_EMBEDDING_BAG: return KIND_EMB_LOSS;
    default: return KIND_NORM_ELEM;
    }
}

/* Whether model chunk mc (model order, of p->pp x chunks) holds op: its slice of layers (the
 * chunk's own, or under DualPipe its copy's stage mc mod pp, whose first pp chunks are the
 * slices in order). */
static int chunk_holds(const strategy *s, const compiled_plan *p, int mc, const workload_op *op)
{
    int slice = strategy_slice_of_chunk(s, mc), first = 0;
    for (int i = 0; i < slice; i++)
        first += p->chunk_layers[i];
    if (op->layer < 0)
        return slice == 0;
    if (op->layer >= p->model.layers)
        return slice == strategy_layer_slices(s) - 1;
    return op->layer >= first && op->layer < first + p->chunk_layers[slice];
}

static int rank_holds(const strategy *s, const compiled_plan *p, int rank, const workload_op *op)
{
    int stage = p->stage_of_rank[rank];
    for (int k = 0; k < p->chunks; k++)
        if (chunk_holds(s, p, strategy_chunk_of_stage(s, stage, k), op))
            return 1;
    return 0;
}

/* The cost model's compute per kind on GPU `rank` of the plan, as the compiler costs each op
 * (sharded for the rank, at the plan's precision, x the GPU's slowdown): forward, backward
 * and the recompute's forward, x micro-batches; each GEMM's also to its role in *roles.
 * Context-parallel ring steps and uneven expert loads are not re-derived here: what they
 * change is in the residual. */
static int predicted_ops(const strategy *s, const compiled_plan *p, const cluster *c, int rank,
                         double *kind_s, gemm_roles *roles, ps_error *err)
{
    workload_graph wg;
    if (workload_build(&p->model, s->micro_batch, s->precision, &wg, err))
        return err->code;
    const device_spec *dev = c->device[rank];
    int expert_layout = p->model.experts > 0 && (s->ep > 1 || s->etp != p->tp);
    for (int i = 0; i < wg.n_ops; i++) {
        const workload_op *full = &wg.ops[i];
        if (!rank_holds(s, p, rank, full))
            continue;
        workload_op op;
        if (full->expert && expert_layout)
            workload_op_shard_expert(full, p->tp, s->ep, s->etp, 1.0, &op);
        else
            workload_op_shard(full, p->tp, s->sequence_parallel,
                              strategy_vocab_parallel_for_layer(s, full->layer), &op);
        precision_t prec = strategy_op_precision(s, &op);
        if (prec != s->precision && op.kind == OP_ATTENTION)
            cost_attention_in(&op, s->precision, prec, &op);
        double fwd = cost_op_kernel_seconds(&op, PASS_FWD, prec, dev);
        double bwd = cost_op_kernel_seconds(&op, PASS_BWD, prec, dev);
        recompute_mode rm = strategy_recompute_for_layer(s, op.layer);
        int layer_op = WORKLOAD_OP_RECOMPUTABLE(&op, p->model.layers);
        double again =
            (layer_op && rm == RECOMPUTE_FULL) || strategy_op_runs_again(s, &op, p->model.layers);
        if (layer_op && rm == RECOMPUTE_OP) {
            workload_op tmp;
            const workload_op *part = workload_op_sac_part(&op, &tmp);
            again = part ? cost_op_kernel_seconds(part, PASS_FWD, prec, dev) / fwd : 0.0;
        }
        double op_s = (fwd * (1 + again) + bwd) * c->slowdown[rank] *
                      strategy_chunk_micro_batches(s, p->micro_batches);
        kind_s[kind_of_op(&op)] += op_s;
        if (op.kind == OP_GEMM)
            gemm_roles_add_op(roles, &op, op_s);
    }
    workload_graph_free(&wg);
    return 0;
}

/* The simulated GPU `rank`'s tasks as spans (v: [g->n_tasks]); the optimizer's and each
 * collective kind's time into kind_s; the compute of forward, backward and recompute tasks
 * into *compute. Returns the spans' count. */
static int predicted_spans(const exec_graph *g, const htae_result *r, int rank, step_span *v,
                           double *kind_s, double *compute)
{
    static const int coll_kinds[] = {[COLL_ALLREDUCE] = KIND_ALLREDUCE,
                                     [COLL_REDUCE_SCATTER] = KIND_REDUCE_SCATTER,
                                     [COLL_ALLGATHER] = KIND_ALLGATHER,
                                     [COLL_ALLTOALL] = KIND_ALLTOALL};
    int n = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        const graph_task *k = &g->tasks[t];
        if (k->rank != rank || g->stream_kinds[k->stream] != STREAM_KIND_GPU)
            continue;
        double d = r->end[t] - r->start[t];
        int kind = KIND_OTHER;
        if (k->kind == TASK_COLLECTIVE)
            kind = coll_kinds[g->colls[k->coll].kind];
        else if (k->kind == TASK_TRANSFER)
            kind = KIND_SENDRECV;
        else if (k->category == CAT_OPTIMIZER)
            kind = KIND_OPTIMIZER;
        else
            *compute += d;
        if (kind != KIND_OTHER)
            kind_s[kind] += d;
        double issued = (k->host & HOST_ISSUE) && r->ready ? r->ready[t] : -INFINITY;
        v[n++] = (step_span){r->start[t], r->end[t], kind, issued};
    }
    return n;
}

/* The gate: the host's issue times kept (htae_result.ready), no snapshot taken. */
static int by_difference(const void *a, const void *b)
{
    const compare_row *x = a, *y = b;
    double dx = fabs(x->predicted_s - x->measured_s), dy = fabs(y->predicted_s - y->measured_s);
    if (dx != dy)
        return (dx < dy) - (dx > dy);
    if (x->row != y->row)
        return (x->row > y->row) - (x->row < y->row); /* ties in the rows' order */
    return (x->role > y->role) - (x->role < y->role);
}

static void add_row(compare_table *t, int row, double measured_s, double predicted_s)
{
    compare_row *r = &t->rows[t->n_rows++];
    *r =
        (compare_row){.row = row, .role = -1, .measured_s = measured_s, .predicted_s = predicted_s};
    snprintf(r->name, sizeof r->name, "%s", compare_row_name(row));
}

/* The rows: the kinds, GEMM as its roles' rows, the residual, the step's parts, sorted by
 * |difference|; the whole step last. */
static void table_rows(compare_table *t)
{
    const step_split *m = &t->measured, *p = &t->predicted;
    const gemm_roles *g = &t->roles;
    t->n_rows = 0;
    for (int k = 0; k < KIND_COUNT; k++) {
        if (k != KIND_GEMM) {
            add_row(t, k, m->kind_s[k], p->kind_s[k]);
            continue;
        }
        for (int q = 0; q < ROLE_COUNT; q++) {
            if (g->row[q] != q || (q == ROLE_NO_SHAPES) != g->no_shapes)
                continue; /* in another role's row, or not this trace's kind of row */
            compare_row *r = &t->rows[t->n_rows++];
            *r = (compare_row){.row = KIND_GEMM,
                               .role = q,
                               .measured_s = g->measured_s[q],
                               .predicted_s = g->predicted_s[q]};
            gemm_roles_name(g, q, r->name, sizeof r->name);
        }
    }
    add_row(t, ROW_RESIDUAL, 0.0, t->residual_s);
    add_row(t, ROW_EXPOSED, m->exposed_comm_s, p->exposed_comm_s);
    add_row(t, ROW_HOST_BOUND, m->host_bound_s, p->host_bound_s);
    add_row(t, ROW_IDLE, m->idle_s, p->idle_s);
    qsort(t->rows, (size_t)t->n_rows, sizeof t->rows[0], by_difference);
    add_row(t, ROW_STEP, m->step_s, p->step_s);
}

/* The predicted split of GPU `rank` from the run. */
static int predict_rank(const strategy *s, const cluster *c, const run_outcome *run, int rank,
                        compare_table *t, ps_error *err)
{
    const exec_graph *g = run->graph;
    memset(&t->predicted, 0, sizeof t->predicted);
    if (predicted_ops(s, &run->plan, c, rank, t->predicted.kind_s, &t->roles, err))
        return err->code;
    step_span *v = xmalloc(((size_t)g->n_tasks + 1) * sizeof *v);
    double kinds[KIND_COUNT] = {0}, compute = 0;
    int n = predicted_spans(g, &run->res, rank, v, kinds, &compute);
    if (n == 0) {
        free(v);
        return ps_error_set(err, PS_EINPUT, t->trace, 0, 0, NULL,
                            "GPU %d of the plan runs no task: nothing to compare its trace with",
                            rank);
    }
    step_split spans;
    memset(&spans, 0, sizeof spans);
    step_split_add(v, n, run->sum.fig.iteration_s, &spans);
    free(v);
    double ops = 0;
    for (int k = 0; k < KIND_COUNT; k++) {
        if (step_kind_is_comm(k) || k == KIND_OPTIMIZER)
            t->predicted.kind_s[k] = kinds[k];
        else
            ops += t->predicted.kind_s[k];
    }
    t->predicted.busy_s = spans.busy_s;
    t->predicted.exposed_comm_s = spans.exposed_comm_s;
    t->predicted.host_bound_s = spans.host_bound_s;
    t->predicted.idle_s = spans.idle_s;
    t->predicted.step_s = spans.step_s;
    t->simulated_compute_s = compute;
    t->residual_s = compute - ops;
    return 0;
}

/* Simulate the plan once, every task of every GPU (the timeline is read task by task, and any
 * rank may be traced: nothing is folded, as with run --no-fold; a folded twin's streams would
 * hold only its collectives). */
static int simulate(const strategy *s, const cluster *c, run_outcome *run, ps_error *err)
{
    htae_options o;
    htae_default_options(&o);
    o.keep_ready = 1; /* the host's issue times: which gaps are host-bound */
    compile_options copt;
    compile_default_options(&copt);
    copt.fold_data_parallel = 0;
    run_request rq = {.c = c, .s = s, .copt = &copt, .hopt = &o};
    return run_execute(&rq, run, err);
}

int compare_job(const trace_job *job, const strategy *s, const cluster *c, compare_table **tables,
                int *n, ps_error *err)
{
    *tables = NULL;
    *n = 0;
    if (s->model.family == FAMILY_DLRM)
        return ps_error_set(err, PS_EINPUT, NULL, 0, 0, NULL,
                            "compare: the plan is a recommendation model (family dlrm): only "
                            "transformer plans are compared");
    compare_table *t = xcalloc((size_t)job->n_ranks, sizeof *t);
    for (int i = 0; i < job->n_ranks; i++)
        gemm_roles_init(&t[i].roles);
    run_outcome run;
    memset(&run, 0, sizeof run);
    int rc = simulate(s, c, &run, err);
    for (int i = 0; i < job->n_ranks && !rc; i++) {
        const trace_rank *tr = &job->ranks[i];
        t[i].trace = tr->file;
        t[i].rank = tr->rank;
        t[i].steps = tr->n_steps - tr->first_reported;
        if (tr->rank >= run.plan.gpus)
            rc = ps_error_set(err, PS_EINPUT, tr->file, 0, 0, NULL,
                              "traced rank %d is outside the plan's %d GPU%s", tr->rank,
                              run.plan.gpus, run.plan.gpus == 1 ? "" : "s");
        else if (trace_step_split(job, i, &t[i].measured) == 0)
            rc = ps_error_set(err, PS_EINPUT, tr->file, 0, 0, NULL,
                              "no GPU event in the reported steps: nothing to compare");
        else
            rc = predict_rank(s, c, &run, tr->rank, &t[i], err);
        if (!rc) {
            gemm_roles_measure(&t[i].roles, job, i);
            table_rows(&t[i]);
        }
        gemm_roles_free(&t[i].roles);
    }
    run_outcome_free(&run);
    if (rc) {
        free(t);
        return rc;
    }
    *tables = t;
    *n = job->n_ranks;
    return 0;
}
