/* htae.c: the executor. One SimGrid actor per (GPU, stream) walks its queue in program order,
 * waits for predecessors on a semaphore, runs the task, and releases its successors. */
#include "htae.h"
#include "htae_rings.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

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
/* NCCL send/recv launch: not fitted (no point-to-point measurements in groundtruth). */
static const double HTAE_P2P_LAUNCH_S = 10e-6;
/* Compute slowdown while NCCL kernels share the SMs: Proteus measured 10-30%. Not identifiable
 * from vTrain (scripts/fit_vtrain: mean |log error| moves < 1% between 0.15 and 0.5, and
 * Kendall tau not at all), so it stays at a value inside the published range. */
static const double HTAE_OVERLAP_SLOWDOWN = 0.15;

/* Actor stacks, in KiB (3.32's sg_actor_set_stacksize counts KiB, not bytes: measured with
 * strace). The actor code is shallow; the 8 MiB default wastes memory at thousands of actors. */
static const unsigned HTAE_ACTOR_STACK_KIB = 256;

void htae_default_options(htae_options *o)
{
    o->overlap_slowdown = HTAE_OVERLAP_SLOWDOWN;
    o->coll_launch_s = HTAE_COLL_LAUNCH_S;
    o->coll_step_s = HTAE_COLL_STEP_S;
    o->p2p_launch_s = HTAE_P2P_LAUNCH_S;
    o->protocol_efficiency = HTAE_PROTOCOL_EFFICIENCY;
}

/* How a group's collectives map onto the platform, computed once per group. */
typedef struct group_plan {
    int n;
    sg_host_t *hosts; /* group order */
    ring_set rings;   /* flat collectives: NCCL-like rings over `hosts` */
    double ring_lat;  /* worst route latency over the rings' edges */
    int k;            /* members per node when hierarchical (several nodes, k > 1 each) */
    int n_nodes;
    sg_host_t *by_node; /* hosts node-major: by_node[node * k + j] */
    double intra_lat, inter_lat;
} group_plan;

struct exec_state;

typedef struct stream_state {
    struct exec_state *x;
    int rank, stream;
    uint32_t first, count; /* into g->stream_tasks */
    int64_t waiting_task;  /* task whose predecessors this actor waits for, or -1 */
    int64_t waiting_coll;  /* collective this actor waits to finish, or -1 */
    sg_sem_t sem;
    sg_exec_t *handles; /* scratch for sub-rings launched together */
} stream_state;

/* A GPU's host thread: walks the rank's HOST_ISSUE tasks in program order. Its own clock runs
 * ahead of simulated time (issuing never waits for the GPU), so it only blocks, as an actor,
 * where the program synchronizes (HOST_WAIT). */
typedef struct host_state {
    struct exec_state *x;
    uint32_t *tasks, count;
    int64_t waiting_deps; /* HOST_WAIT task whose predecessors it waits for, or -1 */
    sg_sem_t sem;
} host_state;

typedef struct exec_state {
    const htae_graph *g;
    htae_options opt;
    sg_host_t *hosts;       /* per rank */
    uint32_t *pending;      /* per task: predecessors not yet done */
    uint32_t *coll_arrived; /* per collective */
    uint8_t *coll_done;
    int *comm_active;                /* per rank: communications in flight touching that GPU */
    struct stream_state **computing; /* per rank: the compute actor mid-task, or NULL */
    stream_state *streams;           /* [n_ranks * STREAM_COUNT] */
    host_state *host;                /* per rank */
    double *ready; /* per HOST_ISSUE task: earliest GPU start (host clock); a compute
                               task's issue start, so it ends no earlier than ready + span */
    group_plan *groups;
    double *matrix; /* n x n bytes scratch for one ring, all zero between uses */
    int matrix_n;
    htae_result *res;
    uint64_t activities;
    uint32_t done_tasks;
} exec_state;

static int ring_steps(coll_kind kind, int n)
{
    return kind == COLL_ALLREDUCE ? 2 * (n - 1) : n - 1;
}

static double ring_edge_factor(coll_kind kind, int n)
{
    double f = (double)(n - 1) / n;
    return kind == COLL_ALLREDUCE ? 2.0 * f : f;
}

double htae_ring_latency_terms(const htae_options *o, coll_kind kind, int members,
                               double route_latency)
{
    if (members < 2)
        return 0.0;
    return o->coll_launch_s + ring_steps(kind, members) * (o->coll_step_s + route_latency);
}

static void sleep_for(double s)
{
    if (s > 0.0)
        sg_actor_sleep_for(s);
}

/* Start one collective phase as a single parallel task whose bytes matrix holds every ring
 * edge: rings advance at the pace of their slowest edge, as real rings do, and SimGrid shares
 * every link with all other traffic. rs == NULL: one ring in the order of `hosts`. */
static sg_exec_t rings_start(exec_state *x, sg_host_t *hosts, int n, const ring_set *rs,
                             double edge_bytes)
{
    assert(n >= 2 && n <= x->matrix_n);
    double *m = x->matrix;
    if (rs)
        for (int e = 0; e < rs->n_edges; e++)
            m[(size_t)rs->src[e] * n + (size_t)rs->dst[e]] += rs->share[e] * edge_bytes;
    else
        for (int i = 0; i < n; i++)
            m[(size_t)i * n + (size_t)((i + 1) % n)] = edge_bytes;
    sg_exec_t e = sg_actor_parallel_exec_init(n, hosts, NULL, m);
    if (rs)
        for (int k = 0; k < rs->n_edges; k++)
            m[(size_t)rs->src[k] * n + (size_t)rs->dst[k]] = 0.0;
    else
        for (int i = 0; i < n; i++)
            m[(size_t)i * n + (size_t)((i + 1) % n)] = 0.0;
    sg_exec_start(e);
    x->activities++;
    return e;
}

/* One phase: `count` independent ring groups of `n` hosts each,
 * hosts[r * stride_ring + j * stride_member]; `rs` (count 1 only) gives their rings. */
static void run_rings(exec_state *x, stream_state *st, const sg_host_t *base, int count, int n,
                      int stride_ring, int stride_member, const ring_set *rs, coll_kind kind,
                      double bytes, double lat, double extra_delay)
{
    if (n < 2) {
        sleep_for(extra_delay);
        return;
    }
    /* the ring's step latencies, less the one route latency SimGrid charges the flow itself */
    sleep_for(extra_delay + ring_steps(kind, n) * x->opt.coll_step_s +
              (ring_steps(kind, n) - 1) * lat);
    double edge = ring_edge_factor(kind, n) * bytes / x->opt.protocol_efficiency;
    sg_host_t ring[n];
    for (int r = 0; r < count; r++) {
        for (int j = 0; j < n; j++)
            ring[j] = base[r * stride_ring + j * stride_member];
        st->handles[r] = rings_start(x, ring, n, rs, edge);
    }
    for (int r = 0; r < count; r++)
        sg_exec_wait(st->handles[r]);
}

static void run_collective(exec_state *x, stream_state *st, const htae_collective *col)
{
    const group_plan *gp = &x->groups[col->group];
    if (gp->n < 2)
        return;
    double s = col->bytes, launch = x->opt.coll_launch_s;
    if (gp->k == 0) {
        run_rings(x, st, gp->hosts, 1, gp->n, 0, 1, &gp->rings, col->kind, s, gp->ring_lat, launch);
        return;
    }
    /* Hierarchical: rings inside each node over NVLink, rings across nodes between GPUs of the
     * same local index (each on its own NIC), as NCCL's tree/ring hybrids do. */
    int k = gp->k, m = gp->n_nodes;
    const sg_host_t *h = gp->by_node;
    switch (col->kind) {
    case COLL_ALLREDUCE:
        run_rings(x, st, h, m, k, k, 1, NULL, COLL_REDUCE_SCATTER, s, gp->intra_lat, launch);
        run_rings(x, st, h, k, m, 1, k, NULL, COLL_ALLREDUCE, s / k, gp->inter_lat, 0.0);
        run_rings(x, st, h, m, k, k, 1, NULL, COLL_ALLGATHER, s, gp->intra_lat, 0.0);
        break;
    case COLL_REDUCE_SCATTER:
        run_rings(x, st, h, m, k, k, 1, NULL, COLL_REDUCE_SCATTER, s, gp->intra_lat, launch);
        run_rings(x, st, h, k, m, 1, k, NULL, COLL_REDUCE_SCATTER, s / k, gp->inter_lat, 0.0);
        break;
    case COLL_ALLGATHER:
        run_rings(x, st, h, k, m, 1, k, NULL, COLL_ALLGATHER, s / k, gp->inter_lat, launch);
        run_rings(x, st, h, m, k, k, 1, NULL, COLL_ALLGATHER, s, gp->intra_lat, 0.0);
        break;
    }
}

static void release(exec_state *x, uint32_t t)
{
    const htae_task *k = &x->g->tasks[t];
    stream_state *st = &x->streams[(size_t)k->rank * STREAM_COUNT + k->stream];
    if (st->waiting_task == (int64_t)t) {
        st->waiting_task = -1;
        sg_sem_release(st->sem);
    }
}

static void task_done(exec_state *x, uint32_t t, double now)
{
    const htae_graph *g = x->g;
    const htae_task *k = &g->tasks[t];
    x->res->end[t] = now;
    x->done_tasks++;
    for (uint32_t j = 0; j < k->n_succ; j++) {
        uint32_t s = g->succ[k->succ_first + j];
        assert(x->pending[s] > 0);
        if (--x->pending[s] == 0) {
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

static void sleep_until(double t)
{
    double now = simgrid_get_clock();
    if (t > now)
        sg_actor_sleep_for(t - now);
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
    const htae_graph *g = x->g;
    double clock = 0.0;
    for (uint32_t i = 0; i < h->count; i++) {
        uint32_t t = h->tasks[i];
        const htae_task *k = &g->tasks[t];
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
        if (--x->pending[t] == 0)
            release(x, t);
    }
}

/* A GPU's compute stream is its only user of the SMs in this model, so compute is a timed
 * wait, kept out of ptask_L07's sharing system (which re-solves every active action at each
 * event). While any communication touches the GPU, compute progresses at 1 / (1 + slowdown)
 * of full speed: communication starting or ending wakes the computing actor (comm_changed),
 * which re-reads the rate, so the result does not depend on which actor runs first. */
static void run_compute(exec_state *x, stream_state *st, const htae_task *k)
{
    double remaining = k->seconds; /* at full speed */
    if (remaining <= 0.0)
        return;
    x->computing[k->rank] = st;
    x->activities++;
    while (remaining > 1e-12) {
        double rate = x->comm_active[k->rank] > 0 ? 1.0 / (1.0 + x->opt.overlap_slowdown) : 1.0;
        double t0 = simgrid_get_clock();
        int timed_out = sg_sem_acquire_timeout(st->sem, remaining / rate);
        double done = (simgrid_get_clock() - t0) * rate;
        remaining = timed_out ? 0.0 : remaining - done;
    }
    x->computing[k->rank] = NULL;
}

/* Communication on `rank` started or ended: a computing actor there re-reads its rate. */
static void comm_changed(exec_state *x, int rank, int delta)
{
    x->comm_active[rank] += delta;
    assert(x->comm_active[rank] >= 0);
    if (x->computing[rank])
        sg_sem_release(x->computing[rank]->sem);
}

static void run_transfer(exec_state *x, const htae_task *k)
{
    if (k->bytes <= 0.0)
        return;
    comm_changed(x, k->rank, 1);
    comm_changed(x, k->peer, 1);
    sleep_for(x->opt.p2p_launch_s);
    sg_host_t pair[2] = {x->hosts[k->rank], x->hosts[k->peer]};
    double bytes[4] = {0.0, k->bytes, 0.0, 0.0};
    sg_exec_t e = sg_actor_parallel_exec_init(2, pair, NULL, bytes);
    sg_exec_start(e);
    x->activities++;
    sg_exec_wait(e);
    comm_changed(x, k->rank, -1);
    comm_changed(x, k->peer, -1);
}

/* The last member to arrive runs the collective for everyone; the others sleep on their
 * semaphores until it is done, as NCCL blocks until all ranks have launched the kernel. */
static void run_collective_task(exec_state *x, stream_state *st, uint32_t t)
{
    const htae_graph *g = x->g;
    const htae_task *k = &g->tasks[t];
    const htae_collective *col = &g->colls[k->coll];
    const htae_group *gr = &g->groups[col->group];
    const uint32_t *members = &g->coll_tasks[col->first_task];

    if (++x->coll_arrived[k->coll] < gr->n) {
        st->waiting_coll = k->coll;
        while (!x->coll_done[k->coll])
            sg_sem_acquire(st->sem);
        st->waiting_coll = -1;
        return;
    }
    double t0 = simgrid_get_clock();
    for (uint32_t i = 0; i < gr->n; i++) {
        x->res->start[members[i]] = t0;
        comm_changed(x, g->tasks[members[i]].rank, 1);
    }
    run_collective(x, st, col);
    double t1 = simgrid_get_clock();
    x->coll_done[k->coll] = 1;
    for (uint32_t i = 0; i < gr->n; i++) {
        const htae_task *m = &g->tasks[members[i]];
        comm_changed(x, m->rank, -1);
        task_done(x, members[i], t1);
        stream_state *other = &x->streams[(size_t)m->rank * STREAM_COUNT + m->stream];
        if (other->waiting_coll == (int64_t)k->coll)
            sg_sem_release(other->sem);
    }
}

static void stream_actor(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    stream_state *st = sg_actor_self_get_data();
    exec_state *x = st->x;
    const htae_graph *g = x->g;
    for (uint32_t i = 0; i < st->count; i++) {
        uint32_t t = g->stream_tasks[st->first + i];
        const htae_task *k = &g->tasks[t];
        while (x->pending[t] > 0) {
            st->waiting_task = t;
            sg_sem_acquire(st->sem);
        }
        if (k->host)
            sleep_until(x->ready[t]);
        if (k->kind == TASK_COLLECTIVE) {
            run_collective_task(x, st, t);
            continue;
        }
        x->res->start[t] = simgrid_get_clock();
        if (k->kind == TASK_COMPUTE) {
            run_compute(x, st, k);
            if (k->host)
                sleep_until(x->ready[t] + k->span); /* the host was still issuing them */
        } else {
            run_transfer(x, k);
        }
        task_done(x, t, simgrid_get_clock());
    }
}

static double route_latency(sg_host_t a, sg_host_t b)
{
    return a == b ? 0.0 : sg_host_get_route_latency(a, b);
}

static double ring_latency(const sg_host_t *h, int n, int stride)
{
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double l = route_latency(h[i * stride], h[((i + 1) % n) * stride]);
        if (l > worst)
            worst = l;
    }
    return worst;
}

/* Decide flat or hierarchical for a group, and cache hosts and latencies. */
static void plan_group(exec_state *x, const cluster *c, int gi, group_plan *gp)
{
    const htae_graph *g = x->g;
    const htae_group *gr = &g->groups[gi];
    const int32_t *ranks = &g->group_ranks[gr->first];
    int n = (int)gr->n;
    gp->n = n;
    gp->hosts = malloc((size_t)n * sizeof *gp->hosts);
    for (int i = 0; i < n; i++)
        gp->hosts[i] = x->hosts[ranks[i]];
    htae_rings_build(gp->hosts, n, &gp->rings);
    gp->ring_lat = 0.0;
    for (int e = 0; e < gp->rings.n_edges; e++) {
        double l = route_latency(gp->hosts[gp->rings.src[e]], gp->hosts[gp->rings.dst[e]]);
        if (l > gp->ring_lat)
            gp->ring_lat = l;
    }
    gp->k = 0;
    gp->by_node = NULL;

    /* nodes in order of first appearance, with their member counts */
    int nodes[n], count[n], m = 0;
    for (int i = 0; i < n; i++) {
        int node = c->node_of_rank[ranks[i]], j;
        for (j = 0; j < m && nodes[j] != node; j++)
            ;
        if (j == m) {
            nodes[m] = node;
            count[m++] = 0;
        }
        count[j]++;
    }
    if (m < 2 || count[0] < 2)
        return;
    for (int j = 1; j < m; j++)
        if (count[j] != count[0])
            return;
    gp->k = count[0];
    gp->n_nodes = m;
    gp->by_node = malloc((size_t)n * sizeof *gp->by_node);
    int fill[m];
    memset(fill, 0, sizeof fill);
    for (int i = 0; i < n; i++) {
        int node = c->node_of_rank[ranks[i]], j;
        for (j = 0; nodes[j] != node; j++)
            ;
        gp->by_node[j * gp->k + fill[j]++] = gp->hosts[i];
    }
    gp->intra_lat = ring_latency(gp->by_node, gp->k, 1);
    gp->inter_lat = ring_latency(gp->by_node, m, gp->k);
}

int htae_run(const htae_graph *g, const cluster *c, const htae_options *opt, htae_result *out,
             ps_error *err)
{
    assert(g->finalized);
    if (g->n_ranks != c->n_gpus)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "graph has %d ranks but the cluster %d GPUs", g->n_ranks, c->n_gpus);
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);

    memset(out, 0, sizeof *out);
    out->start = calloc((size_t)g->n_tasks + 1, sizeof *out->start);
    out->end = calloc((size_t)g->n_tasks + 1, sizeof *out->end);

    exec_state x;
    memset(&x, 0, sizeof x);
    x.g = g;
    if (opt)
        x.opt = *opt;
    else
        htae_default_options(&x.opt);
    x.res = out;
    x.hosts = malloc((size_t)g->n_ranks * sizeof *x.hosts);
    x.comm_active = calloc((size_t)g->n_ranks, sizeof *x.comm_active);
    x.computing = calloc((size_t)g->n_ranks, sizeof *x.computing);
    for (int r = 0; r < g->n_ranks; r++) {
        x.hosts[r] = sg_host_by_name(c->host_names[r]);
        if (!x.hosts[r])
            return ps_error_set(err, PS_EINTERNAL, c->file, 0, 0, NULL,
                                "host '%s' is not in the loaded platform", c->host_names[r]);
    }
    x.pending = malloc((size_t)g->n_tasks * sizeof *x.pending + 1);
    x.ready = calloc((size_t)g->n_tasks + 1, sizeof *x.ready);
    x.host = calloc((size_t)g->n_ranks, sizeof *x.host);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        x.pending[t] = g->tasks[t].n_pred + (g->tasks[t].host ? 1u : 0u);
        if (g->tasks[t].host)
            x.host[g->tasks[t].rank].count++;
    }
    for (int r = 0; r < g->n_ranks; r++) {
        host_state *h = &x.host[r];
        h->x = &x;
        h->waiting_deps = -1;
        h->tasks = malloc((size_t)h->count * sizeof *h->tasks + 1);
        h->count = 0;
    }
    for (uint32_t t = 0; t < g->n_tasks; t++) /* task id order is program order */
        if (g->tasks[t].host) {
            host_state *h = &x.host[g->tasks[t].rank];
            h->tasks[h->count++] = t;
        }
    x.coll_arrived = calloc((size_t)g->n_colls + 1, sizeof *x.coll_arrived);
    x.coll_done = calloc((size_t)g->n_colls + 1, 1);

    int max_rings = 1;
    x.groups = calloc((size_t)g->n_groups + 1, sizeof *x.groups);
    for (uint32_t i = 0; i < g->n_groups; i++) {
        plan_group(&x, c, (int)i, &x.groups[i]);
        if (x.groups[i].n > x.matrix_n)
            x.matrix_n = x.groups[i].n;
        if (x.groups[i].k > max_rings)
            max_rings = x.groups[i].k;
        if (x.groups[i].n_nodes > max_rings)
            max_rings = x.groups[i].n_nodes;
    }
    x.matrix = calloc((size_t)x.matrix_n * (size_t)x.matrix_n + 1, sizeof *x.matrix);

    size_t n_streams = (size_t)g->n_ranks * STREAM_COUNT;
    x.streams = calloc(n_streams, sizeof *x.streams);
    for (size_t i = 0; i < n_streams; i++) {
        stream_state *st = &x.streams[i];
        st->x = &x;
        st->rank = (int)(i / STREAM_COUNT);
        st->stream = (int)(i % STREAM_COUNT);
        st->first = g->stream_first[i];
        st->count = g->stream_first[i + 1] - g->stream_first[i];
        st->waiting_task = st->waiting_coll = -1;
        if (st->count == 0)
            continue;
        st->sem = sg_sem_init(0);
        st->handles = malloc((size_t)max_rings * sizeof *st->handles);
        char name[64];
        snprintf(name, sizeof name, "gpu%d:%s", st->rank, stream_name(st->stream));
        sg_actor_t a = sg_actor_init(name, x.hosts[st->rank]);
        sg_actor_set_stacksize(a, HTAE_ACTOR_STACK_KIB);
        sg_actor_set_data(a, st);
        sg_actor_start_(a, stream_actor, 0, NULL);
    }

    for (int r = 0; r < g->n_ranks; r++) {
        host_state *h = &x.host[r];
        if (h->count == 0)
            continue;
        h->sem = sg_sem_init(0);
        char name[64];
        snprintf(name, sizeof name, "gpu%d:host", r);
        sg_actor_t a = sg_actor_init(name, x.hosts[r]);
        sg_actor_set_stacksize(a, HTAE_ACTOR_STACK_KIB);
        sg_actor_set_data(a, h);
        sg_actor_start_(a, host_actor, 0, NULL);
    }

    simgrid_run();

    int rc = 0;
    if (x.done_tasks != g->n_tasks)
        rc = ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                          "simulation stalled: %u of %u tasks ran (dependency deadlock)",
                          x.done_tasks, g->n_tasks);
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (out->end[t] > out->makespan)
            out->makespan = out->end[t];
    out->activities = x.activities;

    for (size_t i = 0; i < n_streams; i++) {
        if (x.streams[i].count)
            sg_sem_destroy(x.streams[i].sem);
        free(x.streams[i].handles);
    }
    for (uint32_t i = 0; i < g->n_groups; i++) {
        free(x.groups[i].hosts);
        htae_rings_free(&x.groups[i].rings);
        free(x.groups[i].by_node);
    }
    for (int r = 0; r < g->n_ranks; r++) {
        if (x.host[r].count)
            sg_sem_destroy(x.host[r].sem);
        free(x.host[r].tasks);
    }
    free(x.host);
    free(x.ready);
    free(x.groups);
    free(x.streams);
    free(x.matrix);
    free(x.pending);
    free(x.coll_arrived);
    free(x.coll_done);
    free(x.comm_active);
    free(x.computing);
    free(x.hosts);

    clock_gettime(CLOCK_MONOTONIC, &w1);
    out->wall_s = (double)(w1.tv_sec - w0.tv_sec) + 1e-9 * (double)(w1.tv_nsec - w0.tv_nsec);
    return rc;
}

void htae_result_free(htae_result *r)
{
    free(r->start);
    free(r->end);
    r->start = r->end = NULL;
}

int htae_time_collectives(const cluster *c, coll_kind kind, int gpus, const double *sizes,
                          int n_sizes, const htae_options *opt, double *times, ps_error *err)
{
    if (gpus < 1 || gpus > c->n_gpus)
        return ps_error_set(err, PS_EINPUT, c->file, 0, 0, "gpus",
                            "%d GPUs asked, the cluster has %d", gpus, c->n_gpus);
    htae_graph *g = htae_graph_create(c->n_gpus);
    int ranks[gpus];
    for (int i = 0; i < gpus; i++)
        ranks[i] = i;
    int grp = htae_add_group(g, ranks, gpus);
    int label = htae_label(g, coll_kind_name(kind));
    uint32_t *first = malloc((size_t)(n_sizes + 1) * sizeof *first);
    uint32_t members[gpus];
    for (int i = 0; i < n_sizes; i++) {
        htae_add_collective(g, kind, grp, STREAM_TP, sizes[i], CAT_TP_COMM, label, i, members);
        first[i] = members[0];
    }
    int rc = htae_graph_finalize(g, err);
    htae_result r;
    memset(&r, 0, sizeof r);
    if (!rc)
        rc = htae_run(g, c, opt, &r, err);
    for (int i = 0; !rc && i < n_sizes; i++)
        times[i] = r.end[first[i]] - r.start[first[i]];
    htae_result_free(&r);
    free(first);
    htae_graph_free(g);
    return rc;
}
