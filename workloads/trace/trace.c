/* trace.c: the traced graph of one Kineto trace (Daydream's and Lin et al.'s rules): each CPU
 * thread's time cut at its runtime calls and ops, each stream's GPU work, and the edges. */
#include "trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

static const char *const ovh_table[TRACE_OVH_COUNT] = {
    "before_first_launch", "between_launches", "after_last_launch", "between_ops", "launch"};
const enum_names trace_overhead_names = ENUM_NAMES(ovh_table);

/* A kernel that starts this long (us) after both its launch and its stream were ready waited
 * for something else; GPU work on another stream that ended within as long before it is what
 * it waited for (traces without stream-wait records, below). */
static const double INFER_GAP_US = 5.0;
/* The longest launch latency (us) kept: a GPU op that started later than this after what
 * bound it waited for something the trace does not show. */
static const double LAUNCH_LAG_US = 100.0;
/* How long (us) a thread may take to resume after the thread it waits for finished its work
 * (140-620 us in the ResNet trace: the autograd engine handing back to Python). */
static const double THREAD_WAKE_US = 1000.0;
/* The longest gap (us) between a GPU op and the one queued behind it on its stream that is
 * the GPU's own dispatch time (0.75 us typical in the ResNet trace); longer ones are waits. */
static const double DISPATCH_GAP_US = 10.0;
/* A runtime call longer than this (us; a launch takes about 5) that returned just as GPU work
 * ended was blocked by it: the launch queue was full, or the call synchronizes implicitly. */
static const double BLOCKED_CALL_US = 50.0;

static int add_lane(build *b, int is_cpu, const char *name)
{
    trace_rank *r = b->r;
    r->lanes = xreallocarray(r->lanes, (size_t)r->n_lanes + 1, sizeof *r->lanes);
    r->lanes[r->n_lanes].is_cpu = is_cpu;
    snprintf(r->lanes[r->n_lanes].name, sizeof r->lanes[r->n_lanes].name, "%s", name);
    return r->n_lanes++;
}

/* ProfilerStep spans (the last `want`, 0: all) and the window [w0, w1) they cover; without
 * them, the whole trace is one step. */
static void find_steps(build *b, int want)
{
    trace_events *te = b->te;
    trace_ev **st = xmalloc(((size_t)te->n + 1) * sizeof *st);
    int n = 0;
    for (int i = 0; i < te->n; i++)
        if ((te->ev[i].kind == EV_ANNOTATION || te->ev[i].kind == EV_CPU_OP) && /* older: cpu_op */
            strncmp(te->ev[i].name, "ProfilerStep#", 13) == 0)
            st[n++] = &te->ev[i];
    tb_sort_events(st, n);
    int first = 0; /* every step is replayed: a later one needs the GPU work in flight */
    trace_rank *r = b->r;
    r->first_reported = want > 0 && n > want ? n - want : 0;
    if (n > 0) {
        b->n_steps = n - first;
        b->step_start = xmalloc((size_t)b->n_steps * sizeof *b->step_start);
        r->measured_step = xmalloc((size_t)b->n_steps * sizeof *r->measured_step);
        for (int i = 0; i < b->n_steps; i++) {
            b->step_start[i] = st[first + i]->ts;
            r->measured_step[i] = st[first + i]->dur * 1e-6;
        }
        b->w0 = st[first]->ts;
        b->w1 = st[n - 1]->ts + st[n - 1]->dur;
        b->main_thread = st[first]->thread;
        r->has_steps = 1;
    } else {
        b->w0 = INFINITY;
        b->w1 = -INFINITY;
        int *count = xcalloc((size_t)te->n_tids + 1, sizeof *count);
        for (int i = 0; i < te->n; i++) {
            const trace_ev *e = &te->ev[i];
            if (e->kind == EV_GPU_SYNC)
                continue;
            b->w0 = fmin(b->w0, e->ts);
            b->w1 = fmax(b->w1, e->ts + e->dur);
            if (e->kind == EV_RUNTIME)
                count[e->thread]++;
        }
        b->main_thread = 0; /* the thread that makes the most runtime calls */
        for (int t = 1; t < te->n_tids; t++)
            if (count[t] > count[b->main_thread])
                b->main_thread = t;
        free(count);
        b->n_steps = 1;
        b->step_start = xmalloc(sizeof *b->step_start);
        b->step_start[0] = b->w0;
        r->measured_step = xmalloc(sizeof *r->measured_step);
        r->measured_step[0] = (b->w1 - b->w0) * 1e-6;
    }
    r->n_steps = b->n_steps;
    free(st);
}

static int in_window(const build *b, const trace_ev *e)
{
    return e->ts >= b->w0 && e->ts < b->w1;
}

/* GPU events with no runtime call (orphan, n of them) are accepted as the backlog of work
 * queued before the profiler began recording (PyTorch's profiler drops its warm-up cycle's
 * events, but a GPU-bound step leaves that cycle's kernels running into the window): each
 * must start before every GPU event of its stream launched in the window, so that it cannot
 * be a dropped launch of the replayed steps. They are replayed as queued at the window's start
 * (LAUNCH_BEFORE_TRACE), for their part inside the window: they hold the GPU and the launch
 * queue as they did when traced (trace_rank.n_backlog counts them). */
static int accept_backlog(build *b, const int *orphan, int n, ps_error *err)
{
    trace_events *te = b->te;
    double *first = xmalloc(((size_t)te->n_streams + 1) * sizeof *first);
    for (int s = 0; s < te->n_streams; s++)
        first[s] = INFINITY;
    for (int i = 0; i < te->n; i++)
        if (b->launch_of[i] >= 0 && te->ev[i].thread >= 0)
            first[te->ev[i].thread] = fmin(first[te->ev[i].thread], te->ev[i].ts);
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) {
        const trace_ev *e = &te->ev[orphan[k]];
        if (e->thread < 0 || e->ts < first[e->thread]) {
            b->launch_of[orphan[k]] = LAUNCH_BEFORE_TRACE;
            continue;
        }
        char f[48];
        rc = ps_error_set(err, PS_EINPUT, b->path, 0, 0, trace_event_field(f, sizeof f, e->idx),
                          "no runtime call has the correlation id %lld of GPU event '%.80s', "
                          "and it runs after GPU work launched in the replayed steps (a launch "
                          "the profiler did not record)",
                          e->corr, e->name);
    }
    b->r->n_backlog = n;
    free(first);
    return rc;
}

/* Every GPU event of the window and the runtime call that launched it (by correlation id);
 * a GPU event whose launch is outside the window belongs to another step and is left out. The
 * backlog of work queued before the trace began is kept (accept_backlog). */
static int match_launches(build *b, ps_error *err)
{
    trace_events *te = b->te;
    char f[48];
    int n_gpu = 0, n_orphan = 0;
    int *orphan = xmalloc(((size_t)te->n + 1) * sizeof *orphan);
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        if (e->kind == EV_RUNTIME && e->corr >= 0)
            tb_map_put(&b->corr, e->corr, i);
    }
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        if (e->kind == EV_GPU_SYNC && e->corr >= 0) { /* a stream sync names its stream */
            int rt = tb_map_get(&b->corr, e->corr);
            double stream = trace_arg_number(e, "stream");
            if (rt >= 0 && !isnan(stream) && stream >= 0)
                b->sync_stream[rt] = e->thread;
        }
        if (e->kind != EV_KERNEL && e->kind != EV_COPY)
            continue;
        if (e->corr < 0) {
            free(orphan);
            return ps_error_set(err, PS_EINPUT, b->path, 0, 0,
                                trace_event_field(f, sizeof f, e->idx),
                                "GPU event '%.80s' has no correlation id", e->name);
        }
        int rt = tb_map_get(&b->corr, e->corr);
        if (rt < 0) {
            orphan[n_orphan++] = i;
            continue;
        }
        if (!in_window(b, &te->ev[rt]))
            continue;
        b->launch_of[i] = rt;
        if (b->gpu_of[rt] < 0)
            b->gpu_of[rt] = i;
        n_gpu++;
    }
    int rc = accept_backlog(b, orphan, n_orphan, err);
    free(orphan);
    if (rc)
        return rc;
    if (n_gpu == 0)
        return ps_error_set(err, PS_EINPUT, b->path, 0, 0, "traceEvents",
                            "no GPU events (kernel, gpu_memcpy, gpu_memset) launched in the "
                            "replayed window");
    return 0;
}

/* A GPU op queued behind its stream's previous one (launched before that one ended) starts
 * the GPU's own dispatch gap after it: that gap, when short, stays measured (folded into the
 * op's time); longer gaps are waits the replay predicts. */
static double dispatch_gap_us(const trace_ev *launch, const trace_ev *prev, const trace_ev *e)
{
    double prev_end = prev->ts + prev->dur, gap = e->ts - prev_end;
    int queued = !launch || launch->ts + launch->dur < prev_end; /* NULL: before the trace */
    if (queued && gap > 0 && gap <= DISPATCH_GAP_US)
        return gap;
    return 0.0;
}

/* The runtime call that launched GPU event pos, NULL if queued before the trace began. */
static const trace_ev *launch_event(const build *b, int pos)
{
    return b->launch_of[pos] >= 0 ? &b->te->ev[b->launch_of[pos]] : NULL;
}

/* The op of GPU event e at position pos on lane `lane`: fields from its launch, or for work
 * queued before the trace its part inside the window, with no launching op. */
static trace_op gpu_op_of(build *b, int pos, int lane)
{
    const trace_ev *e = &b->te->ev[pos];
    trace_op op = {.kind = TRACE_GPU,
                   .lane = lane,
                   .name = tb_name(b, e->name),
                   .op = -1,
                   .op_seq = -1,
                   .step = 0,
                   .event = e->idx,
                   .start = (e->ts - b->w0) * 1e-6,
                   .seconds = e->dur * 1e-6,
                   .group_at = -1};
    if (b->launch_of[pos] == LAUNCH_BEFORE_TRACE) {
        op.seconds = fmax(e->ts + e->dur - fmax(e->ts, b->w0), 0.0) * 1e-6;
        return op;
    }
    const trace_op *l = &b->r->ops[b->launch_op[b->launch_of[pos]]];
    op.op = l->op;
    op.step = l->step;
    op.call = l->call;
    op.optimizer = l->optimizer;
    return op;
}

/* GPU lanes: each stream's events in time order, NCCL kernels as collectives. */
static int build_gpu_lanes(build *b, ps_error *err)
{
    trace_events *te = b->te;
    trace_ev **v = xmalloc(((size_t)te->n + 1) * sizeof *v);
    int rc = 0;
    for (int s = 0; s < te->n_streams && !rc; s++) {
        int n = 0;
        for (int i = 0; i < te->n; i++)
            if (b->launch_of[i] != -1 && te->ev[i].thread == s &&
                (te->ev[i].kind == EV_KERNEL || te->ev[i].kind == EV_COPY))
                v[n++] = &te->ev[i];
        if (n == 0)
            continue;
        tb_sort_events(v, n);
        char name[48];
        snprintf(name, sizeof name, "gpu stream %lld", te->streams[s]);
        int lane = add_lane(b, 0, name);
        b->lane_of_stream[s] = lane;
        for (int k = 0; k < n && !rc; k++) {
            const trace_ev *e = v[k];
            int pos = (int)(e - te->ev);
            trace_op op = gpu_op_of(b, pos, lane);
            if (k > 0)
                op.seconds += dispatch_gap_us(launch_event(b, pos), v[k - 1], e) * 1e-6;
            /* an NCCL kernel queued before the trace keeps its measured part: no launch, no
             * annotation says which collective it is */
            if (e->kind == EV_KERNEL && strncasecmp(e->name, "nccl", 4) == 0 &&
                b->launch_of[pos] >= 0)
                rc = tb_coll_info(b, pos, &op, err);
            b->gpu_op[pos] = (int)tb_add_op(b, op);
        }
    }
    free(v);
    return rc;
}

/* The GPU lane of stream s, -1 if it has no op in the window. */
static int lane_of(const build *b, int s)
{
    return s >= 0 ? b->lane_of_stream[s] : -1;
}

/* Each GPU lane's ops in order with their launch times (us): lane l's are ops[first[l] ..
 * first[l + 1]) and launch_ts[same]. */
typedef struct lane_index {
    uint32_t *ops;
    double *launch_ts;
    int *first;
} lane_index;

static void lane_index_build(const build *b, lane_index *x)
{
    const trace_rank *r = b->r;
    x->first = xcalloc((size_t)r->n_lanes + 2, sizeof *x->first);
    x->ops = xmalloc(((size_t)r->n_ops + 1) * sizeof *x->ops);
    x->launch_ts = xmalloc(((size_t)r->n_ops + 1) * sizeof *x->launch_ts);
    for (uint32_t i = 0; i < r->n_ops; i++)
        if (b->ev_of_op[i] >= 0)
            x->first[r->ops[i].lane + 1]++;
    for (int l = 0; l < r->n_lanes; l++)
        x->first[l + 1] += x->first[l];
    int *fill = xcalloc((size_t)r->n_lanes + 1, sizeof *fill);
    for (uint32_t i = 0; i < r->n_ops; i++)
        if (b->ev_of_op[i] >= 0) {
            int l = r->ops[i].lane, k = x->first[l] + fill[l]++;
            x->ops[k] = i;
            const trace_ev *launch = launch_event(b, b->ev_of_op[i]);
            x->launch_ts[k] = launch ? launch->ts : -INFINITY;
        }
    free(fill);
}

static void lane_index_free(lane_index *x)
{
    free(x->ops);
    free(x->launch_ts);
    free(x->first);
}

/* The index of a lane's first op launched at or after time t (us); n if none. */
static int first_launched_from(const double *launch_ts, int n, double t)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (launch_ts[mid] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last op of a lane launched before time t (us), -1 if none. */
static int last_launched_before(const uint32_t *ops, const double *launch_ts, int n, double t)
{
    int lo = first_launched_from(launch_ts, n, t);
    return lo > 0 ? (int)ops[lo - 1] : -1;
}

static double measured_end_us(const build *b, uint32_t op)
{
    const trace_ev *e = &b->te->ev[b->ev_of_op[op]];
    return e->ts + e->dur;
}

/* Edges into each synchronizing call from the GPU work it covers, and its own time: what is
 * left of the call once that work was done. A device synchronization covers the last op
 * launched before it on every stream; a stream synchronization, on its stream when the trace
 * names it; otherwise (an event synchronization, an unnamed stream) the streams whose last
 * launched op was still running when the call began. A blocking copy covers its copy. */
static void sync_edges(build *b, const lane_index *x)
{
    trace_rank *r = b->r;
    for (int rt = 0; rt < b->te->n; rt++) {
        if (b->wait_op[rt] < 0)
            continue;
        const trace_ev *e = &b->te->ev[rt];
        double covered = -INFINITY;
        uint32_t w = (uint32_t)b->wait_op[rt];
        if (b->sync_kind[rt] == SYNC_COPY) {
            uint32_t g = (uint32_t)b->gpu_op[b->gpu_of[rt]];
            tb_add_edge(b, g, w);
            covered = measured_end_us(b, g);
        } else {
            int only = b->sync_kind[rt] == SYNC_STREAM ? lane_of(b, b->sync_stream[rt]) : -1;
            int strict = b->sync_kind[rt] != SYNC_DEVICE && only < 0;
            for (int lane = 0; lane < r->n_lanes; lane++) {
                if (r->lanes[lane].is_cpu || (only >= 0 && lane != only))
                    continue;
                int f = x->first[lane], n = x->first[lane + 1] - f;
                int last = last_launched_before(x->ops + f, x->launch_ts + f, n, e->ts);
                if (last < 0)
                    continue;
                double end = measured_end_us(b, (uint32_t)last);
                if (strict && end <= e->ts)
                    continue;
                tb_add_edge(b, (uint32_t)last, w);
                covered = fmax(covered, end);
            }
        }
        double own = e->ts + e->dur - fmax(e->ts, covered);
        r->ops[w].seconds = fmin(fmax(own, 0.0), e->dur) * 1e-6;
    }
}

typedef struct gpu_end {
    double end; /* measured, us */
    uint32_t op;
    double launch_ts;
} gpu_end;

static int by_end(const void *x, const void *y)
{
    const gpu_end *p = x, *q = y;
    if (p->end != q->end)
        return p->end < q->end ? -1 : 1;
    return p->op < q->op ? -1 : p->op > q->op;
}

/* Blocked calls (BLOCKED_CALL_US): a runtime call that is not a synchronization but returned
 * within INFER_GAP_US after a GPU op launched before it ended waits for that op, and keeps only
 * what is left of it after that op's end; so the host follows the GPU when the GPU is the
 * bottleneck (the launch queue), as it did when traced. */
static void blocked_calls(build *b, const lane_index *x)
{
    trace_rank *r = b->r;
    int n = x->first[r->n_lanes];
    gpu_end *v = xmalloc(((size_t)n + 1) * sizeof *v);
    for (int k = 0; k < n; k++) {
        v[k].end = measured_end_us(b, x->ops[k]);
        v[k].op = x->ops[k];
        v[k].launch_ts = x->launch_ts[k];
    }
    qsort(v, (size_t)n, sizeof *v, by_end);
    for (int rt = 0; rt < b->te->n; rt++) {
        const trace_ev *e = &b->te->ev[rt];
        if (e->kind != EV_RUNTIME || b->launch_op[rt] < 0 || b->wait_op[rt] >= 0 ||
            e->dur <= BLOCKED_CALL_US || r->ops[b->launch_op[rt]].event != e->idx ||
            (b->gpu_of[rt] >= 0 && b->te->ev[b->gpu_of[rt]].ts < e->ts + e->dur))
            continue; /* its own GPU work began before it returned: not blocked by the queue */
        double end = e->ts + e->dur;
        int lo = 0, hi = n; /* first GPU op ending after the call */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (v[mid].end <= end)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int k = lo - 1; k >= 0 && end - v[k].end <= INFER_GAP_US; k--) {
            if (v[k].launch_ts >= e->ts || v[k].end <= e->ts)
                continue; /* launched by this call or after it, or done before it began */
            uint32_t w = (uint32_t)b->launch_op[rt];
            tb_add_edge(b, v[k].op, w);
            r->ops[w].seconds = (end - v[k].end) * 1e-6;
            b->r->n_blocked++;
            break;
        }
    }
    free(v);
}

/* The other side of a thread wait: piece `wait` of one thread waits for op `done` of another.
 * If that other thread was idle and woke up just after the waiting thread began to wait (within
 * THREAD_WAKE_US), it was handed its work then (backward() waking the autograd thread): its
 * idle piece follows the op before the wait and keeps what is left after that op's end. */
static void thread_wake(build *b, uint32_t wait, uint32_t done)
{
    trace_rank *r = b->r;
    if (wait == 0 || r->ops[wait - 1].lane != r->ops[wait].lane)
        return;
    double begin = r->ops[wait].start * 1e6;
    for (uint32_t j = done; j-- > 0 && r->ops[j].lane == r->ops[done].lane;) {
        trace_op *idle = &r->ops[j];
        double end = b->end_s[j] * 1e6;
        if (end < begin - INFER_GAP_US)
            return; /* before the wait began: nothing woke it there */
        if (idle->overhead != TRACE_OVH_IDLE || idle->start * 1e6 > begin ||
            end - begin > THREAD_WAKE_US)
            continue;
        tb_add_edge(b, wait - 1, j);
        idle->seconds = fmax(0.0, end - begin) * 1e-6;
        r->n_thread_wakes++;
        return;
    }
}

/* Thread waits: a piece of a CPU thread's time outside runtime calls, longer than
 * BLOCKED_CALL_US, that ended within THREAD_WAKE_US after another thread of the rank finished
 * its work (the op after which that thread idles, or its last), waited for it: the main thread
 * in backward() for the autograd thread. It follows that op and keeps what is left after it. */
static void thread_waits(build *b)
{
    trace_rank *r = b->r;
    gpu_end *v = xmalloc(((size_t)r->n_ops + 1) * sizeof *v); /* ops ending a thread's work */
    int n = 0;
    for (uint32_t i = 0; i < r->n_ops; i++) {
        const trace_op *op = &r->ops[i];
        int last = i + 1 == r->n_ops || r->ops[i + 1].lane != op->lane; /* lanes are runs */
        if (!r->lanes[op->lane].is_cpu || op->overhead == TRACE_OVH_IDLE ||
            !(last || r->ops[i + 1].overhead == TRACE_OVH_IDLE))
            continue;
        v[n].end = b->end_s[i] * 1e6;
        v[n++].op = i;
    }
    qsort(v, (size_t)n, sizeof *v, by_end);
    for (uint32_t i = 0; i < r->n_ops; i++) {
        trace_op *p = &r->ops[i];
        double end = b->end_s[i] * 1e6, start = p->start * 1e6;
        if (p->kind != TRACE_CPU || !r->lanes[p->lane].is_cpu || p->overhead == TRACE_OVH_IDLE ||
            end - start <= BLOCKED_CALL_US)
            continue;
        int lo = 0, hi = n; /* first finishing op ending after the piece */
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (v[mid].end <= end)
                lo = mid + 1;
            else
                hi = mid;
        }
        for (int k = lo - 1; k >= 0 && end - v[k].end <= THREAD_WAKE_US; k--) {
            if (r->ops[v[k].op].lane == p->lane || v[k].end <= start)
                continue;
            tb_add_edge(b, v[k].op, i);
            p->seconds = (end - v[k].end) * 1e-6;
            r->n_thread_waits++;
            thread_wake(b, i, v[k].op);
            break;
        }
    }
    free(v);
}

/* Each GPU op whose start was bound by an explicit predecessor (its launch, another stream)
 * rather than its stream's previous op keeps its measured lag after that predecessor's end,
 * up to LAUNCH_LAG_US: an idle GPU starts a kernel some microseconds after its launch returns
 * (6-80 us in the recsys trace). */
static void launch_lags(build *b)
{
    trace_rank *r = b->r;
    double *bound = xmalloc(((size_t)r->n_ops + 1) * sizeof *bound); /* us */
    for (uint32_t i = 0; i < r->n_ops; i++)
        bound[i] = -INFINITY;
    for (uint32_t e = 0; e < r->n_edges; e++) {
        uint32_t from = r->edges[2 * e], to = r->edges[2 * e + 1];
        double end = b->ev_of_op[from] >= 0 ? measured_end_us(b, from)
                                            : b->w0 + b->end_s[from] * 1e6; /* absolute */
        bound[to] = fmax(bound[to], end);
    }
    double *prev_end = xmalloc(((size_t)r->n_lanes + 1) * sizeof *prev_end);
    for (int l = 0; l < r->n_lanes; l++)
        prev_end[l] = -INFINITY;
    for (uint32_t i = 0; i < r->n_ops; i++) { /* a lane's ops are in order */
        if (b->ev_of_op[i] < 0)
            continue;
        trace_op *op = &r->ops[i];
        double start = b->te->ev[b->ev_of_op[i]].ts, lag = start - bound[i];
        if (bound[i] > prev_end[op->lane] && lag > 0 && lag <= LAUNCH_LAG_US)
            op->lag = lag * 1e-6;
        prev_end[op->lane] = measured_end_us(b, i);
    }
    free(bound);
    free(prev_end);
}

/* Launch edges, synchronizations, and cross-stream waits: recorded ones (cuda_sync "Stream
 * Wait Event" with the event's record), or, in traces that record none, inferred ones. */
static void add_edges(build *b)
{
    trace_events *te = b->te;
    int recorded = 0;
    for (int i = 0; i < te->n; i++)
        if (b->gpu_op[i] >= 0 && b->launch_of[i] >= 0)
            tb_add_edge(b, b->launch_op[b->launch_of[i]], (uint32_t)b->gpu_op[i]);
    lane_index x;
    lane_index_build(b, &x);
    sync_edges(b, &x);
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        const cJSON *on =
            e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "wait_on_stream") : NULL;
        double rec = trace_arg_number(e, "wait_on_cuda_event_record_corr_id");
        if (e->kind != EV_GPU_SYNC || !cJSON_IsNumber(on))
            continue;
        recorded = 1;
        int rec_rt = isnan(rec) ? -1 : tb_map_get(&b->corr, (long long)rec);
        int wait_rt = e->corr >= 0 ? tb_map_get(&b->corr, e->corr) : -1;
        int from_lane = -1;
        for (int s = 0; s < te->n_streams; s++)
            if (te->streams[s] == (long long)on->valuedouble)
                from_lane = lane_of(b, s);
        int to_lane = lane_of(b, e->thread);
        if (rec_rt < 0 || wait_rt < 0 || from_lane < 0 || to_lane < 0 || from_lane == to_lane)
            continue;
        int f = x.first[from_lane], n = x.first[from_lane + 1] - f;
        int from = last_launched_before(x.ops + f, x.launch_ts + f, n, te->ev[rec_rt].ts);
        f = x.first[to_lane];
        n = x.first[to_lane + 1] - f; /* the first op launched after the wait call */
        int k = first_launched_from(x.launch_ts + f, n, te->ev[wait_rt].ts);
        if (from >= 0 && k < n)
            tb_add_edge(b, (uint32_t)from, x.ops[f + k]);
    }
    blocked_calls(b, &x);
    thread_waits(b);
    lane_index_free(&x);
    if (!recorded)
        tb_infer_waits(b, INFER_GAP_US);
    launch_lags(b);
}

void tb_free(build *b)
{
    tb_map_free(&b->corr);
    free(b->step_start);
    free(b->launch_of);
    free(b->gpu_of);
    free(b->launch_op);
    free(b->wait_op);
    free(b->gpu_op);
    free(b->sync_kind);
    free(b->sync_stream);
    free(b->lane_of_stream);
    free(b->lane_of_thread);
    free(b->ev_of_op);
    free(b->end_s);
    free(b->comm_ev);
}

static void build_init(build *b, trace_job *j, trace_rank *r, trace_events *te, const char *path)
{
    memset(b, 0, sizeof *b);
    b->j = j;
    b->r = r;
    b->te = te;
    b->path = path;
    size_t n = (size_t)te->n + 1;
    tb_map_init(&b->corr, n);
    b->launch_of = xmalloc(n * sizeof *b->launch_of);
    b->gpu_of = xmalloc(n * sizeof *b->gpu_of);
    b->launch_op = xmalloc(n * sizeof *b->launch_op);
    b->wait_op = xmalloc(n * sizeof *b->wait_op);
    b->gpu_op = xmalloc(n * sizeof *b->gpu_op);
    b->sync_kind = xcalloc(n, sizeof *b->sync_kind);
    b->sync_stream = xmalloc(n * sizeof *b->sync_stream);
    for (size_t i = 0; i < n; i++)
        b->launch_of[i] = b->gpu_of[i] = b->launch_op[i] = b->wait_op[i] = b->gpu_op[i] =
            b->sync_stream[i] = -1;
    b->lane_of_stream = xmalloc(((size_t)te->n_streams + 1) * sizeof *b->lane_of_stream);
    for (int s = 0; s <= te->n_streams; s++)
        b->lane_of_stream[s] = -1;
    b->lane_of_thread = xmalloc(((size_t)te->n_tids + 1) * sizeof *b->lane_of_thread);
    for (int t = 0; t <= te->n_tids; t++)
        b->lane_of_thread[t] = -1;
}

/* One trace into job rank r. */
int tb_build_rank(trace_job *j, trace_rank *r, trace_events *te, const char *path,
                  const char *et_path, int steps, ps_error *err)
{
    build b;
    build_init(&b, j, r, te, path);
    snprintf(r->file, sizeof r->file, "%s", path);
    r->rank = te->rank;
    snprintf(r->device, sizeof r->device, "%s", te->device);
    xgrow(&r->calls, sizeof *r->calls, 1, &r->cap_calls); /* calls[0]: none known */
    memset(r->calls, 0, sizeof *r->calls);
    r->calls[0].name = -1;
    r->n_calls = 1;
    find_steps(&b, steps);
    int rc = match_launches(&b, err);
    if (!rc)
        tb_build_cpu_lanes(&b);
    if (!rc) {
        b.ev_of_op = xmalloc(((size_t)te->n + r->n_ops + 1) * sizeof *b.ev_of_op);
        rc = build_gpu_lanes(&b, err);
    }
    if (!rc) {
        for (uint32_t i = 0; i < r->n_ops; i++)
            b.ev_of_op[i] = -1;
        for (int i = 0; i < te->n; i++)
            if (b.gpu_op[i] >= 0)
                b.ev_of_op[b.gpu_op[i]] = i;
        add_edges(&b);
        tb_infer_params(&b);
        if (et_path)
            rc = tb_et_link(&b, et_path, err);
    }
    r->main_lane = 0;
    tb_free(&b);
    return rc;
}
