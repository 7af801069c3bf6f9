/* trace_cpu.c: a CPU thread's lane: its time from the window's start to its last event, cut
 * at its runtime calls, at the bounds of its outermost ops and at step starts, each piece kept
 * at its measured length and typed by Lin et al.'s overhead taxonomy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

/* A piece shorter than this (us) is rounding, not time. */
static const double PIECE_EPS_US = 1e-6;
/* A call whose GPU work began more than this (us) before it returned is cut there. */
static const double SPLIT_US = 1.0;

/* The outermost ops of one thread, in time order, with their first launch's start and last
 * launch's end (NAN: the op launches nothing). */
typedef struct lane_ctx {
    build *b;
    int lane, n_ops, oi, between, main;
    double *os, *oe, *first_launch, *last_launch;
    int *name;
    const trace_ev *call; /* the innermost cpu_op around the runtime call being emitted */
    int optimizer;        /* that call is inside an `Optimizer.step#` span */
} lane_ctx;

/* Synchronizing calls by name: the CUDA runtime's, the driver's, and HIP's on ROCm (whose
 * Kineto traces keep the cuda_runtime category with hip names). */
static int sync_kind_of(const trace_ev *rt, const trace_ev *gpu)
{
    static const char *const device[] = {"cudaDeviceSynchronize", "cuCtxSynchronize",
                                         "hipDeviceSynchronize"};
    static const char *const stream[] = {"cudaStreamSynchronize", "cuStreamSynchronize",
                                         "hipStreamSynchronize"};
    static const char *const event[] = {"cudaEventSynchronize", "cuEventSynchronize",
                                        "hipEventSynchronize"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(rt->name, device[i]) == 0)
            return SYNC_DEVICE;
        if (strcmp(rt->name, stream[i]) == 0)
            return SYNC_STREAM;
        if (strcmp(rt->name, event[i]) == 0)
            return SYNC_EVENT;
    }
    /* A copy blocks the host when it is not asynchronous, or when it goes to pageable memory
     * (the CUDA runtime's rule for cudaMemcpyAsync). */
    if (gpu && gpu->kind == EV_COPY && strstr(rt->name, "Memcpy")) {
        if (!strstr(rt->name, "Async"))
            return SYNC_COPY;
        if (strstr(gpu->name, "DtoH") && strstr(gpu->name, "Pageable"))
            return SYNC_COPY;
    }
    return SYNC_NONE;
}

static trace_op cpu_op(const lane_ctx *L, double a_us, double c_us)
{
    const build *b = L->b;
    trace_op op = {.kind = TRACE_CPU,
                   .overhead = TRACE_OVH_BETWEEN_OPS,
                   .lane = L->lane,
                   .name = L->between,
                   .op = -1,
                   .op_seq = -1,
                   .step = tb_step_of(b, a_us),
                   .event = -1,
                   .start = (a_us - b->w0) * 1e-6,
                   .seconds = (c_us - a_us) * 1e-6,
                   .group_at = -1};
    if (!L->main)
        op.overhead = TRACE_OVH_IDLE;
    int i = L->oi;
    if (i < L->n_ops && L->os[i] <= a_us && a_us < L->oe[i]) {
        op.name = op.op = L->name[i];
        op.op_seq = i;
        if (isnan(L->first_launch[i]) || c_us <= L->first_launch[i] + PIECE_EPS_US)
            op.overhead = TRACE_OVH_BEFORE_FIRST_LAUNCH;
        else if (a_us >= L->last_launch[i] - PIECE_EPS_US)
            op.overhead = TRACE_OVH_AFTER_LAST_LAUNCH;
        else
            op.overhead = TRACE_OVH_BETWEEN_LAUNCHES;
    }
    return op;
}

/* The thread's time in [a, end) (us) without runtime calls: pieces cut at op bounds and step
 * starts. */
static void emit_gap(lane_ctx *L, double a, double end)
{
    build *b = L->b;
    while (end - a > PIECE_EPS_US) {
        while (L->oi < L->n_ops && L->oe[L->oi] <= a + PIECE_EPS_US)
            L->oi++;
        double cut = end;
        if (L->oi < L->n_ops)
            cut = fmin(cut, L->os[L->oi] > a + PIECE_EPS_US ? L->os[L->oi] : L->oe[L->oi]);
        int s = tb_step_of(b, a);
        if (s + 1 < b->n_steps && b->step_start[s + 1] > a)
            cut = fmin(cut, b->step_start[s + 1]);
        tb_add_op(b, cpu_op(L, a, cut));
        a = cut;
    }
}

/* A runtime call: its own op (a blocking copy: a launch op, then its wait). */
static void emit_runtime(lane_ctx *L, int rt, double end)
{
    build *b = L->b;
    const trace_ev *e = &b->te->ev[rt];
    while (L->oi < L->n_ops && L->oe[L->oi] <= e->ts + PIECE_EPS_US)
        L->oi++;
    trace_op op = cpu_op(L, e->ts, end);
    op.kind = TRACE_RUNTIME;
    op.overhead = TRACE_OVH_LAUNCH;
    op.name = tb_name(b, e->name);
    op.event = e->idx;
    op.call = tb_call(b, L->call);
    op.optimizer = L->optimizer;
    const trace_ev *gpu = b->gpu_of[rt] >= 0 ? &b->te->ev[b->gpu_of[rt]] : NULL;
    int kind = sync_kind_of(e, gpu);
    b->sync_kind[rt] = (uint8_t)kind;
    if (kind == SYNC_COPY) {
        trace_op launch = op;
        launch.seconds = 0.0;
        b->launch_op[rt] = (int)tb_add_op(b, launch);
    } else if (kind == SYNC_NONE && gpu && gpu->ts >= e->ts && gpu->ts < end - SPLIT_US) {
        /* its GPU work began before it returned (a pageable copy staged while the DMA runs, a
         * kernel started within its launch): the call up to then launches it, the rest follows */
        trace_op launch = op;
        launch.seconds = (gpu->ts - e->ts) * 1e-6;
        b->launch_op[rt] = (int)tb_add_op(b, launch);
        op.start = (gpu->ts - b->w0) * 1e-6;
        op.seconds = (end - gpu->ts) * 1e-6;
        tb_add_op(b, op);
        return;
    }
    uint32_t id = tb_add_op(b, op);
    if (kind != SYNC_COPY)
        b->launch_op[rt] = (int)id;
    if (kind != SYNC_NONE)
        b->wait_op[rt] = (int)id;
}

/* Outermost cpu_ops of thread t in the window, and the span of their launches. */
static void find_outermost(lane_ctx *L, trace_ev **v, int n)
{
    build *b = L->b;
    L->os = xmalloc(((size_t)n + 1) * sizeof *L->os);
    L->oe = xmalloc(((size_t)n + 1) * sizeof *L->oe);
    L->first_launch = xmalloc(((size_t)n + 1) * sizeof *L->first_launch);
    L->last_launch = xmalloc(((size_t)n + 1) * sizeof *L->last_launch);
    L->name = xmalloc(((size_t)n + 1) * sizeof *L->name);
    double cur_end = -INFINITY;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        if (e->kind != EV_CPU_OP || e->ts < cur_end || tb_is_module_call(e->name))
            continue;
        cur_end = e->ts + e->dur;
        L->os[L->n_ops] = e->ts;
        L->oe[L->n_ops] = cur_end;
        L->first_launch[L->n_ops] = L->last_launch[L->n_ops] = NAN;
        L->name[L->n_ops++] = tb_name(b, e->name);
    }
    int o = 0;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        if (e->kind != EV_RUNTIME || b->gpu_of[e - b->te->ev] < 0)
            continue;
        while (o < L->n_ops && L->oe[o] <= e->ts)
            o++;
        if (o >= L->n_ops || L->os[o] > e->ts)
            continue;
        if (isnan(L->first_launch[o]))
            L->first_launch[o] = e->ts;
        L->last_launch[o] = e->ts + e->dur;
    }
}

/* The lane of CPU thread t (events v[0..n) of the window, time order). */
static void build_lane(build *b, int t, trace_ev **v, int n)
{
    trace_rank *r = b->r;
    char name[48];
    if (t == b->main_thread)
        snprintf(name, sizeof name, "cpu main");
    else
        snprintf(name, sizeof name, "cpu thread %d", r->n_lanes);
    r->lanes = xreallocarray(r->lanes, (size_t)r->n_lanes + 1, sizeof *r->lanes);
    r->lanes[r->n_lanes].is_cpu = 1;
    b->lane_of_thread[t] = r->n_lanes;
    snprintf(r->lanes[r->n_lanes].name, sizeof r->lanes[r->n_lanes].name, "%s", name);
    lane_ctx L = {b,
                  r->n_lanes++,
                  0,
                  0,
                  tb_name(b, "between ops"),
                  t == b->main_thread,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  NULL,
                  0};
    find_outermost(&L, v, n);
    double end = b->w1;
    if (t != b->main_thread) {
        end = b->w0;
        for (int i = 0; i < n; i++)
            if (v[i]->kind != EV_ANNOTATION)
                end = fmax(end, v[i]->ts + v[i]->dur);
    }
    double cursor = b->w0;
    int last_rt = -1;
    const trace_ev **open = xmalloc(((size_t)n + 1) * sizeof *open); /* spans around v[i] */
    int n_open = 0;
    for (int i = 0; i < n; i++) {
        const trace_ev *e = v[i];
        while (n_open > 0 && open[n_open - 1]->ts + open[n_open - 1]->dur <= e->ts)
            n_open--;
        if (e->kind != EV_RUNTIME) {
            open[n_open++] = e;
            continue;
        }
        L.call = NULL;
        L.optimizer = 0;
        for (int k = n_open; k-- > 0;) {
            if (open[k]->kind == EV_CPU_OP && !L.call)
                L.call = open[k];
            if (open[k]->kind == EV_ANNOTATION)
                L.optimizer = 1;
        }
        int rt = (int)(e - b->te->ev);
        if (e->ts < cursor - PIECE_EPS_US && last_rt >= 0) { /* nested in the previous call */
            b->launch_op[rt] = b->launch_op[last_rt];
            continue;
        }
        emit_gap(&L, cursor, e->ts);
        double e_end = fmin(e->ts + e->dur, end);
        emit_runtime(&L, rt, e_end);
        cursor = fmax(e_end, e->ts);
        last_rt = rt;
    }
    emit_gap(&L, cursor, end);
    free(open);
    free(L.os);
    free(L.oe);
    free(L.first_launch);
    free(L.last_launch);
    free(L.name);
}

void tb_build_cpu_lanes(build *b)
{
    trace_events *te = b->te;
    trace_ev **v = xmalloc(((size_t)te->n + 1) * sizeof *v);
    for (int k = -1; k < te->n_tids; k++) { /* the main thread first */
        int t = k < 0 ? b->main_thread : k;
        if (k >= 0 && t == b->main_thread)
            continue;
        int n = 0, busy = 0;
        for (int i = 0; i < te->n; i++) {
            const trace_ev *e = &te->ev[i];
            if (e->thread != t || e->ts < b->w0 || e->ts >= b->w1)
                continue;
            if (e->kind == EV_CPU_OP || e->kind == EV_RUNTIME) {
                v[n++] = &te->ev[i];
                busy = 1;
            } else if (e->kind == EV_ANNOTATION && strncmp(e->name, "Optimizer.step#", 15) == 0) {
                v[n++] = &te->ev[i]; /* what fuse-optimizer looks for */
            }
        }
        if (!busy && t != b->main_thread)
            continue;
        tb_sort_events(v, n);
        build_lane(b, t, v, n);
    }
    free(v);
}
