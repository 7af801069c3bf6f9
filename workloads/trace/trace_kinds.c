/* trace_kinds.c: the kinds of a step's GPU work: the table that sorts traced kernels into them,
 * and a step's split (per kind, exposed communication, host-bound gaps, idle) from its spans. */
#include "trace_kinds.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../sim/base/xalloc.h"

const char *const step_kind_names[KIND_COUNT] = {
    "GEMM",
    "attention",
    "norms and elementwise",
    "embedding and loss",
    "optimizer",
    "other kernels",
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "send/recv",
    "other collectives",
};

int step_kind_is_comm(int kind)
{
    return kind >= KIND_ALLREDUCE;
}

/* What a row's pattern is matched against. */
enum { ON_KERNEL, ON_CALL, ON_OP, ON_OPTIMIZER };

typedef struct kind_rule {
    int kind, on;
    const char *pattern; /* a case-insensitive substring; ON_OPTIMIZER: none */
} kind_rule;

/* The one classification, first match wins: NCCL kernels by collective (ReduceScatter and
 * AllReduce before Reduce), then the optimizer step, attention, the embedding and loss (by the
 * ops around the launch: their kernels are sorts, gathers and softmaxes), GEMMs (by kernel
 * library or launching op; memsets and copies first: cuBLAS clears its workspace), then norms
 * and elementwise work. */
static const kind_rule rules[] = {
    {KIND_REDUCE_SCATTER, ON_KERNEL, "ReduceScatter"},
    {KIND_ALLREDUCE, ON_KERNEL, "AllReduce"},
    {KIND_ALLGATHER, ON_KERNEL, "AllGather"},
    {KIND_ALLTOALL, ON_KERNEL, "AllToAll"},
    {KIND_SENDRECV, ON_KERNEL, "SendRecv"},
    {KIND_SENDRECV, ON_KERNEL, "ncclDevKernel_Send"},
    {KIND_SENDRECV, ON_KERNEL, "ncclDevKernel_Recv"},
    {KIND_SENDRECV, ON_KERNEL, "ncclKernel_Send"},
    {KIND_SENDRECV, ON_KERNEL, "ncclKernel_Recv"},
    {KIND_OTHER_COMM, ON_KERNEL, "nccl"},
    {KIND_OPTIMIZER, ON_OPTIMIZER, NULL},
    {KIND_OPTIMIZER, ON_KERNEL, "multi_tensor_apply"},
    {KIND_OPTIMIZER, ON_KERNEL, "adam"},
    {KIND_OPTIMIZER, ON_CALL, "_foreach_"},
    {KIND_ATTENTION, ON_KERNEL, "flash"},
    {KIND_ATTENTION, ON_KERNEL, "fmha"},
    {KIND_ATTENTION, ON_KERNEL, "attention"},
    {KIND_ATTENTION, ON_CALL, "attention"},
    {KIND_ATTENTION, ON_OP, "scaled_dot_product"},
    {KIND_ATTENTION, ON_OP, "Attention"},
    {KIND_EMB_LOSS, ON_CALL, "embedding"},
    {KIND_EMB_LOSS, ON_OP, "Embedding"},
    {KIND_EMB_LOSS, ON_KERNEL, "nll_loss"},
    {KIND_EMB_LOSS, ON_CALL, "log_softmax"},
    {KIND_EMB_LOSS, ON_CALL, "cross_entropy"},
    {KIND_EMB_LOSS, ON_OP, "NllLoss"},
    {KIND_EMB_LOSS, ON_OP, "LogSoftmax"},
    {KIND_NORM_ELEM, ON_KERNEL, "memcpy"},
    {KIND_NORM_ELEM, ON_KERNEL, "memset"},
    {KIND_GEMM, ON_KERNEL, "gemm"},
    {KIND_GEMM, ON_KERNEL, "nvjet"},
    {KIND_GEMM, ON_KERNEL, "cutlass"},
    {KIND_GEMM, ON_KERNEL, "xmma"},
    {KIND_GEMM, ON_KERNEL, "cublas"},
    {KIND_GEMM, ON_CALL, "aten::mm"},
    {KIND_GEMM, ON_CALL, "aten::addmm"},
    {KIND_GEMM, ON_CALL, "aten::bmm"},
    {KIND_GEMM, ON_CALL, "aten::baddbmm"},
    {KIND_GEMM, ON_CALL, "aten::matmul"},
    {KIND_GEMM, ON_CALL, "aten::linear"},
    {KIND_NORM_ELEM, ON_KERNEL, "norm"},
    {KIND_NORM_ELEM, ON_KERNEL, "softmax"},
    {KIND_NORM_ELEM, ON_KERNEL, "gelu"},
    {KIND_NORM_ELEM, ON_KERNEL, "silu"},
    {KIND_NORM_ELEM, ON_KERNEL, "dropout"},
    {KIND_NORM_ELEM, ON_KERNEL, "elementwise"},
    {KIND_NORM_ELEM, ON_KERNEL, "reduce"},
    {KIND_NORM_ELEM, ON_KERNEL, "copy"},
    {KIND_NORM_ELEM, ON_KERNEL, "fill"},
    {KIND_NORM_ELEM, ON_CALL, "norm"},
};

static int has(const char *s, const char *pattern)
{
    if (!s)
        return 0;
    size_t n = strlen(pattern);
    for (; *s; s++)
        if (strncasecmp(s, pattern, n) == 0)
            return 1;
    return 0;
}

int trace_kind_of(const char *kernel, const char *call, const char *op, int optimizer)
{
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        const kind_rule *k = &rules[i];
        const char *s = k->on == ON_KERNEL ? kernel : k->on == ON_CALL ? call : op;
        if (k->on == ON_OPTIMIZER ? optimizer : has(s, k->pattern))
            return k->kind;
    }
    return KIND_OTHER;
}

static int by_start(const void *a, const void *b)
{
    const step_span *x = a, *y = b;
    return (x->t0 > y->t0) - (x->t0 < y->t0);
}

/* Length of the union of v's spans (sorted by start): every span, or compute only. */
static double union_s(const step_span *v, int n, int comm_too)
{
    double total = 0, a = 0, b = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (!comm_too && step_kind_is_comm(v[i].kind))
            continue;
        if (v[i].t0 > b) {
            if (b > a)
                total += b - a;
            a = v[i].t0;
            b = v[i].t1;
        } else if (v[i].t1 > b)
            b = v[i].t1;
    }
    if (b > a)
        total += b - a;
    return total;
}

void step_split_add(step_span *v, int n, double step_s, step_split *out)
{
    qsort(v, (size_t)n, sizeof *v, by_start);
    double busy = union_s(v, n, 1), compute = union_s(v, n, 0), host = 0, end = -INFINITY;
    for (int i = 0; i < n; i++) {
        out->kind_s[v[i].kind] += v[i].t1 - v[i].t0;
        /* a gap ends at v[i]: the GPU waited for its host if it issued v[i] during the gap */
        if (i > 0 && v[i].t0 > end && v[i].issued > end)
            host += v[i].t0 - end;
        if (v[i].t1 > end)
            end = v[i].t1;
    }
    out->busy_s += busy;
    out->exposed_comm_s += busy - compute;
    out->host_bound_s += host;
    out->idle_s += step_s - busy - host;
    out->step_s += step_s;
}

void step_split_scale(step_split *s, double f)
{
    for (int k = 0; k < KIND_COUNT; k++)
        s->kind_s[k] *= f;
    s->busy_s *= f;
    s->exposed_comm_s *= f;
    s->host_bound_s *= f;
    s->idle_s *= f;
    s->step_s *= f;
}

static const char *name_of(const trace_job *j, int i)
{
    return i >= 0 && i < j->n_names ? j->names[i] : NULL;
}

/* When the host issued each GPU op: the latest start of a runtime call with an edge to it. */
static double *issue_times(const trace_rank *r)
{
    double *t = xmalloc(((size_t)r->n_ops + 1) * sizeof *t);
    for (uint32_t i = 0; i < r->n_ops; i++)
        t[i] = -INFINITY;
    for (uint32_t e = 0; e < r->n_edges; e++) {
        uint32_t a = r->edges[2 * e], b = r->edges[2 * e + 1];
        if (r->ops[a].kind == TRACE_RUNTIME && r->ops[a].start > t[b])
            t[b] = r->ops[a].start;
    }
    return t;
}

/* The kind of op i of tr if a step's split counts it (GPU work its host issued in the window),
 * -1 if not. */
static int counted_kind(const trace_job *j, const trace_rank *tr, uint32_t i, const double *issued)
{
    const trace_op *o = &tr->ops[i];
    if (issued[i] == -INFINITY ||
        (o->kind != TRACE_GPU && o->kind != TRACE_COLL && o->kind != TRACE_COMM_MEASURED))
        return -1; /* not GPU work, or queued before the trace: another step's */
    const char *call = o->call > 0 ? name_of(j, tr->calls[o->call].name) : NULL;
    int kind = trace_kind_of(name_of(j, o->name), call, name_of(j, o->op), o->optimizer);
    if (o->kind != TRACE_GPU && !step_kind_is_comm(kind))
        kind = KIND_OTHER_COMM; /* an NCCL kernel by the importer, whatever its name */
    return kind;
}

int trace_step_split(const trace_job *j, int r, step_split *out)
{
    const trace_rank *tr = &j->ranks[r];
    memset(out, 0, sizeof *out);
    double *issued = issue_times(tr);
    step_span *v = xmalloc(((size_t)tr->n_ops + 1) * sizeof *v);
    int counted = 0, steps = tr->n_steps - tr->first_reported;
    for (int s = tr->first_reported; s < tr->n_steps; s++) {
        int n = 0;
        for (uint32_t i = 0; i < tr->n_ops; i++) {
            const trace_op *o = &tr->ops[i];
            int kind = o->step == s ? counted_kind(j, tr, i, issued) : -1;
            if (kind >= 0)
                v[n++] = (step_span){o->start, o->start + o->seconds, kind, issued[i]};
        }
        counted += n;
        step_split_add(v, n, tr->measured_step[s], out);
    }
    step_split_scale(out, 1.0 / steps);
    free(v);
    free(issued);
    return counted;
}

void trace_step_events(const trace_job *j, int r, void (*fn)(void *ctx, uint32_t op, int kind),
                       void *ctx)
{
    const trace_rank *tr = &j->ranks[r];
    double *issued = issue_times(tr);
    for (uint32_t i = 0; i < tr->n_ops; i++) {
        int s = tr->ops[i].step;
        int kind = s >= tr->first_reported && s < tr->n_steps ? counted_kind(j, tr, i, issued) : -1;
        if (kind >= 0)
            fn(ctx, i, kind);
    }
    free(issued);
}
