/* htae.c: the executor. One SimGrid actor per (GPU, stream) walks its queue in program order,
 * waits for predecessors on a semaphore, runs the task, and releases its successors. */
#include "htae.h"
#include "htae_links.h"
#include "htae_rings.h"

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

#include "base/xalloc.h"

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
    double ring_lat;  /* worst route latency over the rings' edges (one activity carries them) */
    int k;            /* members per node when hierarchical (several nodes, k > 1 each), else 0 */
    int n_nodes;
    sg_host_t *by_node; /* hosts node-major: by_node[node * k + j] */
    double *intra_lat;  /* [n_nodes]: worst route latency of each node's ring */
    double *inter_lat;  /* [k]: of each ring across the nodes (members of one local index) */
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
    int *ring_of;       /* scratch: the ring of each handle */
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
    int max_rings;  /* most rings one collective phase starts at once (stream handles) */
    double *matrix; /* n x n bytes scratch for one ring, all zero between uses */
    int matrix_n;
    htae_result *res;
    htae_links *links; /* per-link bytes and busy time */
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

/* A duration or size the executor can use: finite and not negative. */
static inline int is_amount(double v)
{
    return isfinite(v) && v >= 0.0;
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
    assert(is_amount(edge_bytes));
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
    htae_links_ring(x->links, hosts, n, rs, edge_bytes, 1, simgrid_get_clock());
    sg_exec_start(e);
    x->activities++;
    return e;
}

/* One phase of a collective: `count` independent rings of `n` hosts each, member j of ring r
 * being base[r * stride_ring + j * stride_member]; ring r's route latency is lat[r]. */
typedef struct ring_phase {
    const sg_host_t *base;
    int count, n, stride_ring, stride_member;
    const ring_set *rs; /* count 1 only: the rings over the n hosts; NULL: one ring in order */
    const double *lat;  /* [count] */
} ring_phase;

/* Run one phase: each ring starts after its own step latencies (less the one route latency
 * SimGrid charges its flow), so a ring on slower routes starts later; rings start in order of
 * that delay, and the phase ends with the last ring. */
static void run_rings(exec_state *x, stream_state *st, const ring_phase *ph, coll_kind kind,
                      double bytes, double extra_delay)
{
    int n = ph->n, count = ph->count;
    if (n < 2) {
        sleep_for(extra_delay);
        return;
    }
    assert(count >= 1 && count <= x->max_rings);
    int steps = ring_steps(kind, n);
    int order[count]; /* rings by latency: a stable insertion sort, linear on alike rings */
    for (int r = 0; r < count; r++) {
        int i = r;
        for (; i > 0 && ph->lat[order[i - 1]] > ph->lat[r]; i--)
            order[i] = order[i - 1];
        order[i] = r;
    }
    double edge = ring_edge_factor(kind, n) * bytes / x->opt.protocol_efficiency;
    double waited = 0.0;
    sg_host_t ring[n];
    for (int i = 0; i < count; i++) {
        int r = order[i];
        assert(is_amount(ph->lat[r]));
        double delay = extra_delay + steps * x->opt.coll_step_s + (steps - 1) * ph->lat[r];
        if (i == 0 || delay > waited) {
            sleep_for(delay - waited);
            waited = delay;
        }
        for (int j = 0; j < n; j++)
            ring[j] = ph->base[r * ph->stride_ring + j * ph->stride_member];
        st->handles[r] = rings_start(x, ring, n, ph->rs, edge);
        st->ring_of[r] = r;
    }
    /* Each ring's flows end in the link accounting when that ring ends. */
    for (int left = count; left > 0; left--) {
        ssize_t i = sg_exec_wait_any(st->handles, (size_t)left);
        assert(i >= 0 && i < left);
        for (int j = 0; j < n; j++)
            ring[j] = ph->base[st->ring_of[i] * ph->stride_ring + j * ph->stride_member];
        htae_links_ring(x->links, ring, n, ph->rs, edge, 0, simgrid_get_clock());
        st->handles[i] = st->handles[left - 1];
        st->ring_of[i] = st->ring_of[left - 1];
    }
}

static void run_collective(exec_state *x, stream_state *st, const htae_collective *col)
{
    const group_plan *gp = &x->groups[col->group];
    if (gp->n < 2)
        return;
    double s = col->bytes, launch = x->opt.coll_launch_s;
    if (gp->k == 0) {
        ring_phase flat = {gp->hosts, 1, gp->n, 0, 1, &gp->rings, &gp->ring_lat};
        run_rings(x, st, &flat, col->kind, s, launch);
        return;
    }
    /* Hierarchical: rings inside each node over NVLink, rings across nodes between GPUs of the
     * same local index (each on its own NIC), as NCCL's tree/ring hybrids do. */
    int k = gp->k, m = gp->n_nodes;
    ring_phase intra = {gp->by_node, m, k, k, 1, NULL, gp->intra_lat};
    ring_phase inter = {gp->by_node, k, m, 1, k, NULL, gp->inter_lat};
    switch (col->kind) {
    case COLL_ALLREDUCE:
        run_rings(x, st, &intra, COLL_REDUCE_SCATTER, s, launch);
        run_rings(x, st, &inter, COLL_ALLREDUCE, s / k, 0.0);
        run_rings(x, st, &intra, COLL_ALLGATHER, s, 0.0);
        break;
    case COLL_REDUCE_SCATTER:
        run_rings(x, st, &intra, COLL_REDUCE_SCATTER, s, launch);
        run_rings(x, st, &inter, COLL_REDUCE_SCATTER, s / k, 0.0);
        break;
    case COLL_ALLGATHER:
        run_rings(x, st, &inter, COLL_ALLGATHER, s / k, launch);
        run_rings(x, st, &intra, COLL_ALLGATHER, s, 0.0);
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
    assert(x->done_tasks < g->n_tasks);
    assert(now >= x->res->start[t]);
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
        assert(x->pending[t] > 0);
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
    assert(k->kind == TASK_COMPUTE && is_amount(k->seconds));
    assert(x->computing[k->rank] == NULL);
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
    assert(k->kind == TASK_TRANSFER && k->peer >= 0 && k->peer < x->g->n_ranks);
    assert(k->peer != k->rank && is_amount(k->bytes));
    if (k->bytes <= 0.0)
        return;
    comm_changed(x, k->rank, 1);
    comm_changed(x, k->peer, 1);
    sleep_for(x->opt.p2p_launch_s);
    sg_host_t pair[2] = {x->hosts[k->rank], x->hosts[k->peer]};
    double bytes[4] = {0.0, k->bytes, 0.0, 0.0};
    sg_exec_t e = sg_actor_parallel_exec_init(2, pair, NULL, bytes);
    htae_links_start(x->links, pair[0], pair[1], k->bytes, simgrid_get_clock());
    sg_exec_start(e);
    x->activities++;
    sg_exec_wait(e);
    htae_links_end(x->links, pair[0], pair[1], simgrid_get_clock());
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
    assert(!x->coll_done[k->coll] && x->coll_arrived[k->coll] < gr->n);

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
        assert(k->rank == st->rank && k->stream == st->stream);
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

/* The flat plan, every group has one: rings over the members' hosts in group order. */
static void plan_flat(exec_state *x, const int32_t *ranks, int n, group_plan *gp)
{
    gp->n = n;
    gp->hosts = xmalloc((size_t)n * sizeof *gp->hosts);
    for (int i = 0; i < n; i++)
        gp->hosts[i] = x->hosts[ranks[i]];
    htae_rings_build(gp->hosts, n, &gp->rings);
    gp->ring_lat = 0.0;
    for (int e = 0; e < gp->rings.n_edges; e++) {
        double l = route_latency(gp->hosts[gp->rings.src[e]], gp->hosts[gp->rings.dst[e]]);
        if (l > gp->ring_lat)
            gp->ring_lat = l;
    }
}

/* The hierarchical plan, for a group spread over several nodes with the same number k > 1 of
 * members on each (the phases split the buffer k ways across nodes, so unequal nodes would
 * move the wrong volumes: such groups keep the flat plan, gp->k == 0). Each ring keeps its
 * own route latency: nodes, and NICs of one node, need not be alike. */
static void plan_hierarchy(const cluster *c, const int32_t *ranks, group_plan *gp)
{
    int n = gp->n;
    int nodes[n], count[n], m = 0; /* nodes in order of first appearance, member counts */
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
    int k = count[0];
    gp->k = k;
    gp->n_nodes = m;
    gp->by_node = xmalloc((size_t)n * sizeof *gp->by_node);
    int fill[m];
    memset(fill, 0, sizeof fill);
    for (int i = 0; i < n; i++) {
        int node = c->node_of_rank[ranks[i]], j;
        for (j = 0; nodes[j] != node; j++)
            ;
        gp->by_node[j * k + fill[j]++] = gp->hosts[i];
    }
    gp->intra_lat = xmalloc((size_t)m * sizeof *gp->intra_lat);
    for (int j = 0; j < m; j++)
        gp->intra_lat[j] = ring_latency(&gp->by_node[j * k], k, 1);
    gp->inter_lat = xmalloc((size_t)k * sizeof *gp->inter_lat);
    for (int j = 0; j < k; j++)
        gp->inter_lat[j] = ring_latency(&gp->by_node[j], m, k);
}

/* Step: plan every group's collectives (flat or hierarchical) and size the scratch they use. */
static void plan_groups(exec_state *x, const cluster *c)
{
    const htae_graph *g = x->g;
    x->groups = xcalloc(g->n_groups, sizeof *x->groups);
    x->max_rings = 1;
    for (uint32_t i = 0; i < g->n_groups; i++) {
        const htae_group *gr = &g->groups[i];
        group_plan *gp = &x->groups[i];
        plan_flat(x, &g->group_ranks[gr->first], (int)gr->n, gp);
        plan_hierarchy(c, &g->group_ranks[gr->first], gp);
        if (gp->n > x->matrix_n)
            x->matrix_n = gp->n;
        if (gp->k > x->max_rings)
            x->max_rings = gp->k;
        if (gp->n_nodes > x->max_rings)
            x->max_rings = gp->n_nodes;
    }
    x->matrix = xcalloc((size_t)x->matrix_n * (size_t)x->matrix_n, sizeof *x->matrix);
}

/* Step: the SimGrid host of every rank into *out, or an error (and nothing allocated) if one
 * is missing. */
static int lookup_hosts(const htae_graph *g, const cluster *c, sg_host_t **out, ps_error *err)
{
    sg_host_t *hosts = xmalloc((size_t)g->n_ranks * sizeof *hosts);
    for (int r = 0; r < g->n_ranks; r++) {
        hosts[r] = sg_host_by_name(c->host_names[r]);
        if (!hosts[r]) {
            free(hosts);
            return ps_error_set(err, PS_EINTERNAL, c->file, 0, 0, NULL,
                                "host '%s' is not in the loaded platform", c->host_names[r]);
        }
    }
    *out = hosts;
    return 0;
}

/* Step: the per-task and per-rank state, and each host thread's queue of HOST_ISSUE tasks. */
static void state_init(exec_state *x, const htae_graph *g, const htae_options *opt,
                       sg_host_t *hosts, htae_result *out)
{
    memset(x, 0, sizeof *x);
    x->g = g;
    if (opt)
        x->opt = *opt;
    else
        htae_default_options(&x->opt);
    assert(is_amount(x->opt.overlap_slowdown) && is_amount(x->opt.coll_launch_s));
    assert(is_amount(x->opt.coll_step_s) && is_amount(x->opt.p2p_launch_s));
    assert(x->opt.protocol_efficiency > 0.0 && x->opt.protocol_efficiency <= 1.0);
    x->res = out;
    out->start = xcalloc(g->n_tasks, sizeof *out->start);
    out->end = xcalloc(g->n_tasks, sizeof *out->end);
    x->hosts = hosts;
    x->comm_active = xcalloc((size_t)g->n_ranks, sizeof *x->comm_active);
    x->computing = xcalloc((size_t)g->n_ranks, sizeof *x->computing);
    x->pending = xmalloc((size_t)g->n_tasks * sizeof *x->pending);
    x->ready = xcalloc(g->n_tasks, sizeof *x->ready);
    x->coll_arrived = xcalloc(g->n_colls, sizeof *x->coll_arrived);
    x->coll_done = xcalloc(g->n_colls, 1);

    x->host = xcalloc((size_t)g->n_ranks, sizeof *x->host);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        x->pending[t] = g->tasks[t].n_pred + (g->tasks[t].host ? 1u : 0u);
        if (g->tasks[t].host)
            x->host[g->tasks[t].rank].count++;
    }
    for (int r = 0; r < g->n_ranks; r++) {
        host_state *h = &x->host[r];
        h->x = x;
        h->waiting_deps = -1;
        h->tasks = xmalloc((size_t)h->count * sizeof *h->tasks);
        h->count = 0;
    }
    for (uint32_t t = 0; t < g->n_tasks; t++) /* task id order is program order */
        if (g->tasks[t].host) {
            host_state *h = &x->host[g->tasks[t].rank];
            h->tasks[h->count++] = t;
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
    const htae_graph *g = x->g;
    size_t n_streams = (size_t)g->n_ranks * STREAM_COUNT;
    x->streams = xcalloc(n_streams, sizeof *x->streams);
    char name[64];
    for (size_t i = 0; i < n_streams; i++) {
        stream_state *st = &x->streams[i];
        st->x = x;
        st->rank = (int)(i / STREAM_COUNT);
        st->stream = (int)(i % STREAM_COUNT);
        st->first = g->stream_first[i];
        st->count = g->stream_first[i + 1] - g->stream_first[i];
        st->waiting_task = st->waiting_coll = -1;
        if (st->count == 0)
            continue;
        st->sem = sg_sem_init(0);
        st->handles = xmalloc((size_t)x->max_rings * sizeof *st->handles);
        st->ring_of = xmalloc((size_t)x->max_rings * sizeof *st->ring_of);
        snprintf(name, sizeof name, "gpu%d:%s", st->rank, stream_name(st->stream));
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

/* Step: after the engine stopped, check every task ran and fill in the makespan. */
static int collect_result(exec_state *x, ps_error *err)
{
    const htae_graph *g = x->g;
    htae_result *out = x->res;
    out->activities = x->activities;
    if (x->done_tasks != g->n_tasks)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "simulation stalled: %u of %u tasks ran (dependency deadlock)",
                            x->done_tasks, g->n_tasks);
    for (uint32_t t = 0; t < g->n_tasks; t++) {
        assert(is_amount(out->start[t]) && out->end[t] >= out->start[t]);
        if (out->end[t] > out->makespan)
            out->makespan = out->end[t];
    }
    return 0;
}

/* Step: free everything state_init, plan_groups and start_actors made (not the result). */
static void state_free(exec_state *x)
{
    const htae_graph *g = x->g;
    if (x->streams)
        for (size_t i = 0; i < (size_t)g->n_ranks * STREAM_COUNT; i++) {
            if (x->streams[i].count)
                sg_sem_destroy(x->streams[i].sem);
            free(x->streams[i].handles);
            free(x->streams[i].ring_of);
        }
    if (x->groups)
        for (uint32_t i = 0; i < g->n_groups; i++) {
            free(x->groups[i].hosts);
            htae_rings_free(&x->groups[i].rings);
            free(x->groups[i].by_node);
            free(x->groups[i].intra_lat);
            free(x->groups[i].inter_lat);
        }
    for (int r = 0; r < g->n_ranks; r++) {
        if (x->host[r].count)
            sg_sem_destroy(x->host[r].sem);
        free(x->host[r].tasks);
    }
    free(x->host);
    free(x->ready);
    free(x->groups);
    free(x->streams);
    free(x->matrix);
    free(x->pending);
    free(x->coll_arrived);
    free(x->coll_done);
    free(x->comm_active);
    free(x->computing);
    free(x->hosts);
}

int htae_run(const htae_graph *g, const cluster *c, const htae_options *opt, htae_result *out,
             ps_error *err)
{
    assert(g->finalized);
    memset(out, 0, sizeof *out);
    if (g->n_ranks != c->n_gpus)
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "graph has %d ranks but the cluster %d GPUs", g->n_ranks, c->n_gpus);
    sg_host_t *hosts = NULL;
    int rc = lookup_hosts(g, c, &hosts, err);
    if (rc)
        return rc;
    struct timespec w0, w1;
    clock_gettime(CLOCK_MONOTONIC, &w0);

    exec_state x;
    state_init(&x, g, opt, hosts, out);
    plan_groups(&x, c);
    x.links = htae_links_create();
    start_actors(&x);
    simgrid_run();
    rc = collect_result(&x, err);
    if (!rc)
        htae_links_collect(x.links, out);
    htae_links_free(x.links);
    state_free(&x);
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
    for (int i = 0; i < r->n_links; i++)
        free(r->links[i].name);
    free(r->links);
    r->links = NULL;
    r->n_links = 0;
}

int htae_time_collectives(const cluster *c, coll_kind kind, int gpus, const double *sizes,
                          int n_sizes, const htae_options *opt, double *times, ps_error *err)
{
    if (gpus < 1 || gpus > c->n_gpus)
        return ps_error_set(err, PS_EINPUT, c->file, 0, 0, "gpus",
                            "%d GPUs asked, the cluster has %d", gpus, c->n_gpus);
    assert(n_sizes >= 0);
    for (int i = 0; i < n_sizes; i++) /* the graph builders assert it: check input first */
        if (!is_amount(sizes[i]))
            return ps_error_set(err, PS_EINPUT, NULL, 0, 0, "sizes",
                                "collective size %g is not a finite number of bytes >= 0",
                                sizes[i]);
    htae_graph *g = htae_graph_create(c->n_gpus);
    int ranks[gpus];
    for (int i = 0; i < gpus; i++)
        ranks[i] = i;
    int grp = htae_add_group(g, ranks, gpus);
    int label = htae_label(g, coll_kind_name(kind));
    uint32_t *first = xmalloc((size_t)n_sizes * sizeof *first);
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
