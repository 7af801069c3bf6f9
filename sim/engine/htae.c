/* htae.c: the executor. One SimGrid actor per (GPU, stream) walks its queue in program order,
 * waits for predecessors on a semaphore, runs the task, and releases its successors. */
#include "htae.h"
#include "htae_links.h"
#include "htae_alone.h"
#include "htae_dyn.h"
#include "htae_prune.h"
#include "htae_clock.h"
#include "htae_coll.h"
#include "htae_solo.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

#include "../base/xalloc.h"

/* Collective constants fitted by scripts/fit_nccl on the nccl-tests all-reduce curves of
 * ../shared/groundtruth (A100 NVSwitch, 2-8 GPUs, 1 MiB - 1 GiB, every (GPU count, octave of
 * size) weighted alike so the 1-32 MiB all-reduces of tensor parallelism count as much as the
 * 1 GiB plateau; held-out sizes: within 12% at every octave, mean |log error| 0.05):
 * - a collective's fixed cost (kernel launch, handshakes, NCCL's low-latency protocols' start);
 * - a protocol latency per ring step on top of the wire latency;
 * - the fraction of link bandwidth NCCL turns into payload (A100: 0.71 of 300 GB/s; the 8-GPU
 *   1 GiB plateau, 229 GB/s of bus bandwidth, comes out 8% slow, the 8-512 MiB range closer).
 * A single launch of 77.5 us fitted to the unweighted rows (97% above 32 MiB) overstated
 * 2-8 MiB all-reduces by 20-90%. V100 DGX-1 curves are a check, not fitted (docs/accuracy.md). */
static const double HTAE_COLL_LAUNCH_S = 40e-6;
static const double HTAE_COLL_STEP_S = 0.5e-6;
static const double HTAE_PROTOCOL_EFFICIENCY = 0.71;
/* More per network step than the route's NIC latencies: not fitted, 0. The only multi-node
 * figure below the plateau in ../shared/groundtruth (the 10 x 8 H100 mean over 32 MiB - 64 GiB)
 * is missed by the bandwidth ramp, not by latency (docs/collectives.md); p3dn's EFA latencies
 * (39 us per network step) describe another network. An option for what-if runs. */
static const double HTAE_COLL_NET_STEP_S = 0.0;
/* Network (NIC, fabric) payload share: fitted by scripts/fit_nccl on the eleven multi-node
 * nccl-tests peaks of ../shared/groundtruth/nccl_more.md, minimising the largest error (the
 * 10 x 8 all-gather and reduce-scatter peaks run 11% below the all-reduce one, which a single
 * NIC efficiency cannot follow; the mean-log fit, 0.96, leaves them at +18%). */
static const double HTAE_NET_EFFICIENCY = 0.89;
/* NVLS payload share of NVLink port bandwidth when a device gives none (devices.yaml gives it
 * per device, NVLS-capable ones only). */
static const double HTAE_NVLS_EFFICIENCY = 0.69;
/* NVLS's fixed cost: NCCL's own tuner charges NVLS 25 us on NVLink where it charges a ring step
 * 0.6-3.4 us, which keeps small all-reduces on the ring. Not fitted: groundtruth has NVLS peaks
 * only, no small NVLS all-reduce. */
static const double HTAE_NVLS_LATENCY_S = 25e-6;
/* NCCL send/recv launch: not fitted (no point-to-point measurements in groundtruth). */
static const double HTAE_P2P_LAUNCH_S = 10e-6;
/* Compute beside communication (docs/cost-model.md, "Compute beside communication"): an NCCL
 * kernel holds one SM per channel for as long as it runs, and the GPU's compute runs on the
 * rest: at (S - held) / S of full speed, S the device's SMs, held = comm_sms x the GPU's
 * communication streams with a kernel running (at most S - 1). Measured on an H200
 * (tests/data/measured/h200_overlap.csv): 86 kernels beside a kernel holding 8-32 SMs are
 * within 13.2% geomean of S / (S - N) (GEMMs lose more, memory-bound kernels less).
 * comm_sms = 24: chosen among NCCL's collective channel counts 16, 24 and 32 on the end-to-end
 * files, each source group held out in turn (docs/accuracy.md, "Fitted constants, held out").
 * A fixed slowdown (>= 0) replaces the rule where a test or the replay (0: measured times
 * include it) asks for one. */
static const double HTAE_OVERLAP_SLOWDOWN = -1.0;
static const double HTAE_COMM_SMS = 24.0;

/* Actor stacks, in KiB (3.32's sg_actor_set_stacksize counts KiB, not bytes: measured with
 * strace). The actor code is shallow; the 8 MiB default wastes memory at thousands of actors. */
static const unsigned HTAE_ACTOR_STACK_KIB = 256;

void htae_default_options(htae_options *o)
{
    o->overlap_slowdown = HTAE_OVERLAP_SLOWDOWN;
    o->comm_sms = HTAE_COMM_SMS;
    o->coll_launch_s = HTAE_COLL_LAUNCH_S;
    o->coll_step_s = HTAE_COLL_STEP_S;
    o->coll_net_step_s = HTAE_COLL_NET_STEP_S;
    o->p2p_launch_s = HTAE_P2P_LAUNCH_S;
    o->protocol_efficiency = HTAE_PROTOCOL_EFFICIENCY;
    o->net_efficiency = HTAE_NET_EFFICIENCY;
    o->nvls_efficiency = HTAE_NVLS_EFFICIENCY;
    o->nvls_latency_s = HTAE_NVLS_LATENCY_S;
    o->algo = COLL_ALGO_AUTO;
    o->device_constants = 1;
    o->timed_alone = 1;
    o->inline_collectives = 1;
    o->timed_solo = 1;
    o->counter_ranks = NULL;
    o->snapshot_tasks = NULL;
    o->keep_ready = 0;
}

#include "htae_exec.h"

double htae_ring_latency_terms(const htae_options *o, coll_kind kind, int members,
                               double route_latency)
{
    if (members < 2)
        return 0.0;
    int steps = (kind == COLL_ALLREDUCE ? 2 : 1) * (members - 1);
    return o->coll_launch_s + steps * (o->coll_step_s + route_latency);
}

/* A duration or size the executor can use: finite and not negative. */
static inline int is_amount(double v)
{
    return isfinite(v) && v >= 0.0;
}

static void sleep_for(double s)
{
    if (s > 0.0)
        htae_wait_until(simgrid_get_clock() + s);
}

static void release(exec_state *x, uint32_t t)
{
    const graph_task *k = &x->g->tasks[t];
    stream_state *st = &x->streams[(size_t)k->rank * (size_t)x->g->n_streams + k->stream];
    if (st->waiting_task == (int64_t)t || st->waiting_any) {
        st->waiting_task = -1;
        st->waiting_any = 0;
        sg_sem_release(st->sem);
    }
}

/* A compute stream finishing a task (run_stream_task): a collective that task releases may be
 * claimed for that stream's actor to run (inline_candidate); kept by the actor itself, as
 * releasing a successor lets other actors run before it goes on. */
typedef struct inline_claim {
    const stream_state *by;
    int64_t task;  /* the collective claimed, -1 none */
    uint32_t last; /* with it: the collectives up to this place on its stream, the last of
                      them one the claiming stream's next task waits for */
} inline_claim;

static int inline_candidate(exec_state *x, inline_claim *ic, uint32_t s);

static void task_done_claiming(exec_state *x, uint32_t t, double now, inline_claim *ic)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
    assert(x->done_tasks < g->n_tasks);
    assert(now >= x->res->start[t]);
    x->res->end[t] = now;
    x->done_tasks++;
    for (uint32_t j = 0; j < k->n_succ; j++) {
        uint32_t s = g->succ[k->succ_first + j];
        assert(x->pending[s] > 0);
        if (x->pred_end && now > x->pred_end[s])
            x->pred_end[s] = now;
        if (--x->pending[s] == 0) {
            if (ic && ic->task < 0 && inline_candidate(x, ic, s))
                ic->task = s; /* its own actor stays asleep: run_inlined */
            else
                release(x, s);
        } else if (x->pending[s] == 1) { /* only the host's issue left: a waiting host goes */
            host_state *h = &x->host[g->tasks[s].rank];
            if (h->waiting_deps == (int64_t)s) {
                h->waiting_deps = -1;
                sg_sem_release(h->sem);
            }
        }
    }
}

static void task_done(exec_state *x, uint32_t t, double now)
{
    task_done_claiming(x, t, now, NULL);
}

static void sleep_until(double t)
{
    htae_wait_until(t);
}

/* The host thread of one GPU. Issuing a task takes host_s of host time; the GPU may start a
 * compute task once its issue starts (its kernels trickle in: `span` bounds its end) and a
 * collective or transfer once its issue ends. */
static void host_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    host_state *h = sg_actor_self_get_data();
    exec_state *x = h->x;
    const exec_graph *g = x->g;
    double clock = 0.0;
    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t t = h->tasks[i];
        const graph_task *k = &g->tasks[t];
        if (k->host & HOST_WAIT) {
            while (x->pending[t] > 1) {
                h->waiting_deps = t;
                sg_sem_acquire(h->sem);
            }
            if (simgrid_get_clock() > clock)
                clock = simgrid_get_clock();
        }
        x->ready[t] = k->kind == TASK_COMPUTE ? clock : clock + k->host_s;
        clock += k->host_s;
        assert(x->pending[t] > 0);
        if (--x->pending[t] == 0)
            release(x, t);
    }
}

/* The share of full speed at which rank r's GPU computes now (see run_compute). */
static double comm_rate(const exec_state *x, int r)
{
    int k = x->comm_active[r];
    if (k == 0)
        return 1.0;
    if (x->opt.overlap_slowdown >= 0.0)
        return 1.0 / (1.0 + x->opt.overlap_slowdown);
    double s = x->sms[r];
    assert(s >= 1.0);
    double held = fmin(x->opt.comm_sms * k, s - 1.0);
    return (s - held) / s;
}

/* Compute is a timed wait, kept out of ptask_L07's sharing system (which re-solves every active
 * action at each event): a compiled plan computes on one stream per GPU; a replayed trace's
 * kernels on several streams keep their measured times, which already include any sharing.
 * While communication kernels run on the GPU, its compute progresses at comm_rate's share of
 * full speed: communication starting or ending wakes the computing actors (comm_changed), which
 * re-read the rate, so the result does not depend on which actor runs first. A CPU thread's
 * work is a plain sleep. */
static void run_compute(exec_state *x, stream_state *st, const graph_task *k)
{
    assert(k->kind == TASK_COMPUTE && is_amount(k->seconds));
    double remaining = k->seconds; /* at full speed */
    if (remaining <= 0.0)
        return;
    x->activities++;
    if (graph_stream_is_cpu(x->g, st->stream)) {
        htae_wait_until(simgrid_get_clock() + remaining);
        return;
    }
    st->computing = 1;
    x->computing[k->rank]++;
    while (remaining > 1e-12) {
        double rate = comm_rate(x, k->rank);
        double t0 = simgrid_get_clock();
        int timed_out = htae_sem_acquire_until(st->sem, t0 + remaining / rate);
        double done = (simgrid_get_clock() - t0) * rate;
        remaining = timed_out ? 0.0 : remaining - done;
    }
    st->computing = 0;
    x->computing[k->rank]--;
}

/* Communication on `rank`'s stream started or ended: where that changes how many of its
 * streams communicate, computing actors there re-read their rate. */
static void comm_changed(exec_state *x, int rank, int stream, int delta)
{
    int *on = &x->comm_on_stream[(size_t)rank * (size_t)x->g->n_streams + (size_t)stream];
    int was = *on > 0;
    *on += delta;
    assert(*on >= 0);
    if ((*on > 0) == was)
        return;
    x->comm_active[rank] += was ? -1 : 1;
    if (x->computing[rank] == 0)
        return;
    stream_state *st = &x->streams[(size_t)rank * (size_t)x->g->n_streams];
    for (int s = 0; s < x->g->n_streams; s++)
        if (st[s].computing)
            sg_sem_release(st[s].sem);
}

/* A transfer's flows as an act of htae_solo: pair i from hosts[i] to hosts[n + i], each moving
 * the task's bytes (0 for a pair left out, drop). */
typedef struct transfer_act {
    exec_state *x;
    int n;
    const sg_host_t *hosts;
    const uint8_t *drop;
    double bytes;
} transfer_act;

static void transfer_begin(void *ctx, int block, double now)
{
    const transfer_act *a = ctx;
    (void)block;
    for (int i = 0; i < a->n; i++)
        htae_links_start(a->x->links, a->hosts[i], a->hosts[a->n + i], a->bytes, now);
}

static void transfer_end(void *ctx, int block, double now)
{
    const transfer_act *a = ctx;
    (void)block;
    for (int i = 0; i < a->n; i++)
        htae_links_end(a->x->links, a->hosts[i], a->hosts[a->n + i], now);
}

/* The transfer's SimGrid task over `share` of its bytes (1: run whole), started. */
static sg_exec_t transfer_task(void *ctx, int block, double share)
{
    const transfer_act *a = ctx;
    (void)block;
    int n = a->n;
    double *bytes = xcalloc((size_t)4 * n * n, sizeof *bytes);
    for (int i = 0; i < n; i++)
        bytes[(size_t)i * 2 * n + (size_t)(n + i)] =
            i && a->drop && a->drop[i] ? 0.0 : a->bytes * share;
    sg_exec_t e = sg_actor_parallel_exec_init(2 * n, a->hosts, NULL, bytes);
    free(bytes);
    sg_exec_start(e); /* counted with the act (run_transfer) */
    return e;
}

/* The transfer class's shape (htae_solo.h), built when first met. */
static const solo_shape *transfer_shape(exec_state *x, uint32_t t, const transfer_act *a)
{
    uint32_t c = x->tclass.of[t];
    if (!x->tshape[c]) {
        int n = a->n, first[2] = {0, n};
        double *w = xmalloc((size_t)n * sizeof *w);
        for (int i = 0; i < n; i++)
            w[i] = i && a->drop && a->drop[i] ? 0.0 : 1.0;
        x->tshape[c] = htae_solo_shape(x->links, 1, first, a->hosts, a->hosts + n, w);
        free(w);
    }
    return x->tshape[c];
}

/* A transfer and its companion pairs (graph_set_companions), if any: one SimGrid task whose flows
 * (source i -> destination i, hosts [0, n) then [n, 2n)) each carry the task's bytes; timed
 * while alone on its links (htae_solo.h). */
static void run_transfer(exec_state *x, uint32_t t)
{
    const graph_task *k = &x->g->tasks[t];
    assert(k->kind == TASK_TRANSFER && k->peer >= 0 && k->peer < x->g->n_ranks);
    assert(k->peer != k->rank && is_amount(k->bytes));
    if (k->bytes <= 0.0)
        return;
    const int32_t *pr = NULL;
    int n = 1 + graph_companions(x->g, t, &pr);
    /* pairs left out of the task (htae_prune.h): their bytes still count on their links */
    const uint8_t *drop = NULL;
    if (n > 1 && x->prune.drop_pair)
        drop = x->prune.drop_pair + x->g->pair_first[x->g->companion[t]] - 1;
    /* up to 8 flows (a TP group's sends) on the actor's stack: no allocation per transfer */
    enum { STACK_FLOWS = 8 };
    int32_t ends_s[2 * STACK_FLOWS]; /* sources, then destinations */
    sg_host_t hosts_s[2 * STACK_FLOWS];
    int heap = n > STACK_FLOWS;
    int32_t *ends = heap ? xmalloc((size_t)2 * n * sizeof *ends) : ends_s;
    sg_host_t *hosts = heap ? xmalloc((size_t)2 * n * sizeof *hosts) : hosts_s;
    for (int i = 0; i < n; i++) {
        ends[i] = i ? pr[2 * (i - 1)] : k->rank;
        ends[n + i] = i ? pr[2 * (i - 1) + 1] : k->peer;
        hosts[i] = x->hosts[ends[i]];
        hosts[n + i] = x->hosts[ends[n + i]];
    }
    for (int i = 0; i < 2 * n; i++)
        comm_changed(x, ends[i], k->stream, 1);
    transfer_act a = {x, n, hosts, drop, k->bytes};
    solo_ops ops = {transfer_begin, transfer_task, transfer_end, &a};
    int real = -1;
    x->activities++;
    if (!x->solo || !htae_solo_run(x->solo, transfer_shape(x, t, &a), x->opt.p2p_launch_s, k->bytes,
                                   &ops, &real)) { /* its SimGrid task, whole */
        sleep_for(x->opt.p2p_launch_s);
        transfer_begin(&a, 0, simgrid_get_clock());
        sg_exec_wait(transfer_task(&a, 0, 1.0));
        transfer_end(&a, 0, simgrid_get_clock());
        htae_solo_real_end(x->solo, real);
    }
    htae_dyn_transfer_ended(&x->dyn, t);
    for (int i = 0; i < 2 * n; i++)
        comm_changed(x, ends[i], k->stream, -1);
    if (heap) {
        free(hosts);
        free(ends);
    }
}

static int dyn_theirs(const void *dyn, sg_link_t link, const int32_t *owners, int n)
{
    return htae_dyn_link_theirs(dyn, link, owners, n);
}

/* The last member to arrive runs the collective for everyone; the others sleep on their
 * semaphores until it is done, as NCCL blocks until all ranks have launched the kernel. */
static void run_collective_task(exec_state *x, stream_state *st, uint32_t t)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
    const graph_collective *col = &g->colls[k->coll];
    const graph_group *gr = &g->groups[col->group];
    const uint32_t *members = &g->coll_tasks[col->first_task];
    assert(!x->coll_done[k->coll] && x->coll_arrived[k->coll] < gr->tasked);

    if (++x->coll_arrived[k->coll] < gr->tasked) { /* stand-ins (if any) take no task */
        st->waiting_coll = k->coll;
        while (!x->coll_done[k->coll])
            sg_sem_acquire(st->sem);
        st->waiting_coll = -1;
        return;
    }
    double t0 = simgrid_get_clock();
    for (uint32_t i = 0; i < gr->tasked; i++) {
        x->res->start[members[i]] = t0;
        comm_changed(x, g->tasks[members[i]].rank, g->tasks[members[i]].stream, 1);
    }
    coll_run_ctx cx = {&x->opt,
                       x->links,
                       &x->activities,
                       &x->timed_colls,
                       htae_dyn_now(&x->dyn, (uint32_t)col->group),
                       x->units,
                       x->prune.drop_group,
                       x->solo,
                       x->opt.timed_alone ? dyn_theirs : NULL,
                       &x->dyn};
    int lean = htae_alone_now(&x->alone, (uint32_t)k->coll, x->coll_done);
    x->lean_colls += (uint32_t)lean;
    const int32_t *comp;
    int n_comp = graph_coll_companions(g, (uint32_t)k->coll, &comp);
    if (n_comp)
        htae_coll_run_with(x->groups, col->group, comp, n_comp, col->kind, col->bytes, &cx);
    else
        htae_coll_run(x->groups[col->group], col->kind, col->bytes, col->matrix, lean, &cx);
    double t1 = simgrid_get_clock();
    htae_dyn_collective_ended(&x->dyn, (uint32_t)col->group);
    x->coll_done[k->coll] = 1;
    for (uint32_t i = 0; i < gr->tasked; i++) {
        const graph_task *m = &g->tasks[members[i]];
        comm_changed(x, m->rank, m->stream, -1);
        task_done(x, members[i], t1);
        stream_state *other = &x->streams[(size_t)m->rank * (size_t)g->n_streams + m->stream];
        if (other->waiting_coll == (int64_t)k->coll)
            sg_sem_release(other->sem);
    }
}

static void run_stream_task(exec_state *x, stream_state *st, uint32_t t);

/* Task t is a collective whose time no other activity can change, run by one member, with no
 * launch lag: any actor may run it, whenever it may start. */
static int inline_collective(const exec_state *x, uint32_t t)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
    if (k->kind != TASK_COLLECTIVE || !x->opt.timed_alone || g->floating ||
        (t < g->n_lag && g->lag[t] > 0.0))
        return 0;
    const graph_collective *col = &g->colls[k->coll];
    const int32_t *comp;
    return g->groups[col->group].tasked == 1 && !col->matrix &&
           htae_dyn_always(&x->dyn, (uint32_t)col->group) &&
           !graph_coll_companions(g, (uint32_t)k->coll, &comp);
}

/* Collective s, just released by compute stream a's task, may be run by a's actor: a timed
 * collective of one tasked member (its peers folded) of a group with no foreign activity (it
 * runs alone whoever starts it, htae_dyn_always), its own stream's actor asleep waiting for it,
 * and a's next task waiting for it too (a could do nothing meanwhile). Running it there spares
 * the two actors' hand-over: the same start, the same time. */
static int inline_candidate(exec_state *x, inline_claim *ic, uint32_t s)
{
    const exec_graph *g = x->g;
    const stream_state *a = ic->by;
    const graph_task *k = &g->tasks[s];
    if (k->rank != a->rank || k->stream == a->stream || !inline_collective(x, s))
        return 0;
    const stream_state *b = &x->streams[(size_t)k->rank * (size_t)g->n_streams + k->stream];
    if (b->waiting_task != (int64_t)s || b->next >= b->count ||
        g->stream_tasks[b->first + b->next] != s || a->next >= a->count)
        return 0;
    uint32_t mine = g->stream_tasks[a->first + a->next];
    /* a's next task waits for s, or for one of the few collectives after it on s's stream (and
     * so, in stream order, for every one before that one too): the last such one */
    int found = 0;
    for (uint32_t i = b->next; i < b->count && i < b->next + 4; i++) {
        uint32_t t = g->stream_tasks[b->first + i];
        const graph_task *c = &g->tasks[t];
        if (i > b->next && !inline_collective(x, t))
            break;
        for (uint32_t j = 0; j < c->n_succ; j++)
            if (g->succ[c->succ_first + j] == mine) {
                ic->last = i;
                found = 1;
            }
    }
    return found;
}

/* The collective claimed by inline_candidate, run on its own stream's behalf; then that stream's
 * actor goes on with its next task (woken now if it may start). */
static void run_inlined(exec_state *x, const inline_claim *ic)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[ic->task];
    stream_state *b = &x->streams[(size_t)k->rank * (size_t)g->n_streams + k->stream];
    /* the claimed collective, then those after it up to ic->last while each may start (its
     * predecessors done, the host's issue among them): the claiming stream's next task waits
     * for all of them, so running them here delays nothing */
    while (b->next <= ic->last) {
        uint32_t t = g->stream_tasks[b->first + b->next];
        if (x->pending[t] > 0)
            break;
        b->next++;
        run_stream_task(x, b, t);
        x->inlined_colls++;
    }
    if (b->next >= b->count || x->pending[g->stream_tasks[b->first + b->next]] == 0) {
        b->waiting_task = -1;
        sg_sem_release(b->sem);
    } else {
        b->waiting_task = g->stream_tasks[b->first + b->next];
    }
}

/* Run task t of the stream once its predecessors are done. */
static void run_stream_task(exec_state *x, stream_state *st, uint32_t t)
{
    const exec_graph *g = x->g;
    const graph_task *k = &g->tasks[t];
    assert(k->rank == st->rank && k->stream == st->stream);
    assert(x->pending[t] == 0);
    if (k->host)
        sleep_until(x->ready[t]);
    if (t < g->n_lag && g->lag[t] > 0.0) /* launch latency after its launch */
        sleep_until(x->pred_end[t] + g->lag[t]);
    if (k->kind == TASK_COLLECTIVE) {
        run_collective_task(x, st, t);
        return;
    }
    x->res->start[t] = simgrid_get_clock();
    if (x->opt.snapshot_tasks && x->opt.snapshot_tasks[t])
        htae_links_snapshot(x->links, x->res->start[t]);
    if (k->kind == TASK_COMPUTE) {
        run_compute(x, st, k);
        if (k->host)
            sleep_until(x->ready[t] + k->span); /* the host was still issuing them */
    } else {
        run_transfer(x, t);
    }
    inline_claim ic = {st, -1, 0};
    int may =
        k->kind == TASK_COMPUTE && x->opt.inline_collectives && !graph_stream_is_cpu(g, st->stream);
    task_done_claiming(x, t, simgrid_get_clock(), may ? &ic : NULL);
    if (ic.task >= 0)
        run_inlined(x, &ic);
}

static int is_floating(const exec_graph *g, uint32_t t)
{
    return t < g->n_floating && g->floating[t];
}

/* A stream with floating tasks (graph_set_floating): the next task is the first not yet run
 * unless it floats and is not ready: then the first ready floating task after it, up to the
 * first task that does not float. Nothing ready: wait for any of its tasks to be released. */
static void stream_actor_floating(stream_state *st)
{
    exec_state *x = st->x;
    const exec_graph *g = x->g;
    const uint32_t *tasks = g->stream_tasks + st->first;
    uint8_t *ran = xcalloc((size_t)st->count + 1, 1);
    uint32_t first = 0; /* the first task not yet run */
    while (first < st->count) {
        int64_t pick = -1;
        for (uint32_t i = first; i < st->count; i++) {
            if (ran[i])
                continue;
            if (i > first && !is_floating(g, tasks[i]))
                break; /* a fence: nothing passes it */
            if (x->pending[tasks[i]] == 0) {
                pick = i;
                break;
            }
            if (!is_floating(g, tasks[i]))
                break; /* the first task, not floating: wait for it */
        }
        if (pick < 0) {
            st->waiting_any = 1;
            sg_sem_acquire(st->sem);
            continue;
        }
        ran[pick] = 1;
        run_stream_task(x, st, tasks[pick]);
        while (first < st->count && ran[first])
            first++;
    }
    free(ran);
}

static void stream_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    stream_state *st = sg_actor_self_get_data();
    exec_state *x = st->x;
    const exec_graph *g = x->g;
    if (g->floating) {
        stream_actor_floating(st);
        return;
    }
    while (st->next < st->count) { /* next: another actor may have run one (run_inlined) */
        uint32_t t = g->stream_tasks[st->first + st->next];
        if (x->pending[t] > 0) {
            st->waiting_task = t;
            sg_sem_acquire(st->sem);
            continue;
        }
        st->next++;
        run_stream_task(x, st, t);
    }
}

static void start_actor(const char *name, sg_host_t where, void (*code)(int, char **), void *data)
{
    sg_actor_t a = sg_actor_init(name, where);
    sg_actor_set_stacksize(a, HTAE_ACTOR_STACK_KIB);
    sg_actor_set_data(a, data);
    sg_actor_start_(a, code, 0, NULL);
}

/* Step: one actor per (GPU, stream) with tasks, then one per GPU host thread with tasks. */
static void start_actors(exec_state *x)
{
    const exec_graph *g = x->g;
    size_t per = (size_t)g->n_streams, n_streams = (size_t)g->n_ranks * per;
    x->streams = xcalloc(n_streams, sizeof *x->streams);
    char name[64];
    for (size_t i = 0; i < n_streams; i++) {
        stream_state *st = &x->streams[i];
        st->x = x;
        st->rank = (int)(i / per);
        st->stream = (int)(i % per);
        st->first = g->stream_first[i];
        st->count = g->stream_first[i + 1] - g->stream_first[i];
        st->waiting_task = st->waiting_coll = -1;
        if (st->count == 0)
            continue;
        st->sem = sg_sem_init(0);
        snprintf(name, sizeof name, "gpu%d:%s", st->rank, graph_stream_name(g, st->stream));
        start_actor(name, x->hosts[st->rank], stream_actor, st);
    }
    for (int r = 0; r < g->n_ranks; r++) {
        host_state *h = &x->host[r];
        if (h->count == 0)
            continue;
        h->sem = sg_sem_init(0);
        snprintf(name, sizeof name, "gpu%d:host", r);
        start_actor(name, x->hosts[r], host_actor, h);
    }
}

int htae_run(const exec_graph *g, const cluster *c, const htae_options *opt, htae_result *out,
             ps_error *err)
{
    assert(g->finalized);
    memset(out, 0, sizeof *out);
    if (g->n_ranks != c->n_gpus)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "graph has %d ranks but the cluster %d GPUs", g->n_ranks, c->n_gpus);
    sg_host_t *hosts = NULL;
    int rc = htae_lookup_hosts(g, c, &hosts, err);
    if (rc)
        return rc;
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);

    exec_state x;
    htae_state_init(&x, g, opt, hosts, out);
    for (int r = 0; r < g->n_ranks; r++)
        x.sms[r] = c->device[r] ? c->device[r]->sms : 0;
    x.links = htae_links_create();
    htae_links_count(x.links, g, hosts, x.opt.counter_ranks);
    rc = htae_plan_groups(&x, c, err);
    htae_clock_restart();                /* a run in a process that ran another starts from 0 too */
    double origin = simgrid_get_clock(); /* 0 unless the clock could not be reset */
    if (!rc) {
        start_actors(&x);
        simgrid_run();
        rc = htae_collect_result(&x, err);
    }
    if (!rc) {
        htae_links_collect(x.links, out);
        if (x.opt.snapshot_tasks || x.opt.keep_ready) {
            out->ready = xmalloc(((size_t)g->n_tasks + 1) * sizeof *out->ready);
            memcpy(out->ready, x.ready, (size_t)g->n_tasks * sizeof *out->ready);
        }
        htae_shift_result(out, g->n_tasks, origin);
    }
    htae_links_free(x.links);
    htae_state_free(&x);
    if (rc) {
        htae_result_free(out);
        return rc;
    }

    clock_gettime(CLOCK_MONOTONIC, &w1);
    out->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    return 0;
}

void htae_result_free(htae_result *r)
{
    free(r->start);
    free(r->end);
    r->start = r->end = NULL;
    for (int i = 0; i < r->n_links; i++) {
        free(r->links[i].name);
        free(r->links[i].rate);
    }
    free(r->links);
    r->links = NULL;
    r->n_links = 0;
    free(r->ready);
    free(r->snap_t);
    free(r->snap_bytes);
    free(r->snap_busy);
    r->ready = r->snap_t = r->snap_bytes = r->snap_busy = NULL;
    r->n_snaps = 0;
}
