/* trace_graph.c: a job of traces loaded (one trace: SPMD; several: one per rank), and its
 * execution graph: lanes as streams, ops as tasks, NCCL kernels as collectives of the executor
 * over the ranks of their communicator, untraced ranks standing in. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

static int by_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

double trace_step_median(const double *v, int n)
{
    int first = n > 2 ? 1 : 0, m = n - first;
    if (m <= 0)
        return 0.0;
    double *s = xmalloc((size_t)m * sizeof *s);
    memcpy(s, v + first, (size_t)m * sizeof *s);
    qsort(s, (size_t)m, sizeof *s, by_double);
    double med = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
    free(s);
    return med;
}

int trace_job_load(const char *const *paths, int n_paths, int steps, trace_job *out, ps_error *err)
{
    return trace_job_load_et(paths, NULL, n_paths, steps, out, err);
}

int trace_job_load_et(const char *const *paths, const char *const *ets, int n_paths, int steps,
                      trace_job *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    out->ranks = xcalloc((size_t)n_paths, sizeof *out->ranks);
    int rc = 0, chakra = 0;
    for (int i = 0; i < n_paths; i++)
        chakra += tb_is_chakra_file(paths[i]);
    if (chakra && chakra < n_paths)
        rc = ps_error_set(err, PS_EINPUT, paths[0], 0, 0, NULL,
                          "%d of the %d traces are Chakra execution traces, the others Kineto "
                          "(JSON): replay one kind at a time",
                          chakra, n_paths);
    else if (chakra && ets)
        rc = ps_error_set(err, PS_EINPUT, paths[0], 0, 0, "--et",
                          "an execution trace links to a Kineto trace, not a Chakra one");
    else if (chakra && steps > 0)
        rc = ps_error_set(err, PS_EINPUT, paths[0], 0, 0, "--steps",
                          "a Chakra execution trace has no steps to choose from");
    else if (chakra)
        rc = tb_chakra_job(out, paths, n_paths, err);
    for (int i = 0; i < n_paths && !rc && !chakra; i++) {
        trace_events te;
        rc = trace_events_read(paths[i], &te, err);
        if (rc)
            break;
        if (i == 0)
            out->world_size = te.world_size;
        if (te.world_size != out->world_size)
            rc = ps_error_set(err, PS_EINPUT, paths[i], 0, 0, "distributedInfo.world_size",
                              "world size %d, but %s says %d", te.world_size, paths[0],
                              out->world_size);
        if (!rc && n_paths > 1 && !te.has_distributed)
            rc = ps_error_set(err, PS_EINPUT, paths[i], 0, 0, "distributedInfo",
                              "several traces need each one's distributedInfo.rank");
        for (int k = 0; k < i && !rc; k++)
            if (out->ranks[k].rank == te.rank)
                rc = ps_error_set(err, PS_EINPUT, paths[i], 0, 0, "distributedInfo.rank",
                                  "rank %d is also the rank of %s", te.rank, paths[k]);
        if (!rc) {
            rc = tb_build_rank(out, &out->ranks[i], &te, paths[i], ets ? ets[i] : NULL, steps, err);
            out->n_ranks = i + 1;
        }
        trace_events_free(&te);
    }
    if (rc)
        trace_job_free(out);
    return rc;
}

void trace_job_free(trace_job *j)
{
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        free(r->lanes);
        free(r->ops);
        free(r->edges);
        free(r->calls);
        free(r->measured_step);
        free(r->group_ranks);
        free(r->needs);
    }
    free(j->ranks);
    tb_names_free(j);
    memset(j, 0, sizeof *j);
}

void trace_tasks_free(const trace_job *j, uint32_t **task_of)
{
    if (!task_of)
        return;
    for (int i = 0; i < j->n_ranks; i++)
        free(task_of[i]);
    free(task_of);
}

/* Graph-building state: streams (the union of the traces' lane names), labels, groups. */
typedef struct gb {
    const trace_job *j;
    exec_graph *g;
    int n_streams;
    char **stream_name;
    stream_kind *stream_kind;
    int **stream_of; /* [rank][lane] */
    int *label_of;   /* [n_names], -1 until used */
    int **group_key; /* the members of each group made, its size and id */
    int *group_n, *group_id;
    int n_groups;
    uint32_t **task_of;
    int **seq; /* [rank][op]: a collective op's number among its rank's on its communicator */
    uint32_t **colls; /* [rank]: its collective ops */
    int *n_colls;
} gb;

static void streams_union(gb *x)
{
    const trace_job *j = x->j;
    x->stream_of = xcalloc((size_t)j->n_ranks, sizeof *x->stream_of);
    for (int i = 0; i < j->n_ranks; i++) {
        const trace_rank *r = &j->ranks[i];
        x->stream_of[i] = xmalloc(((size_t)r->n_lanes + 1) * sizeof **x->stream_of);
        for (int l = 0; l < r->n_lanes; l++) {
            int s = 0;
            while (s < x->n_streams && strcmp(x->stream_name[s], r->lanes[l].name) != 0)
                s++;
            if (s == x->n_streams) {
                x->stream_name = xreallocarray(x->stream_name, (size_t)s + 1, sizeof(char *));
                x->stream_kind = xreallocarray(x->stream_kind, (size_t)s + 1, sizeof(stream_kind));
                x->stream_name[s] = xstrdup(r->lanes[l].name);
                x->stream_kind[s] = r->lanes[l].is_cpu ? STREAM_KIND_CPU : STREAM_KIND_GPU;
                x->n_streams++;
            }
            x->stream_of[i][l] = s;
        }
    }
}

static int label_of(gb *x, int name)
{
    if (x->label_of[name] < 0)
        x->label_of[name] = graph_label(x->g, x->j->names[name]);
    return x->label_of[name];
}

/* A collective's members, ascending, into out[group_n]: the ranks the trace names, or the
 * block of group_n consecutive ranks holding the rank. */
static void coll_members(const gb *x, int i, const trace_op *op, int *out)
{
    const trace_rank *r = &x->j->ranks[i];
    int start = r->rank - r->rank % op->group_n;
    for (int k = 0; k < op->group_n; k++)
        out[k] = op->group_at >= 0 ? r->group_ranks[op->group_at + k] : start + k;
}

static int is_member(const int *members, int n, int rank)
{
    for (int k = 0; k < n; k++)
        if (members[k] == rank)
            return 1;
    return 0;
}

/* The group of these members (ascending) with the traced ones first (each doing a task), the
 * others standing in, in ring order after the last traced one. */
static int group_for(gb *x, const int *members, int n)
{
    for (int k = 0; k < x->n_groups; k++)
        if (x->group_n[k] == n && memcmp(x->group_key[k], members, (size_t)n * sizeof(int)) == 0)
            return x->group_id[k];
    const trace_job *j = x->j;
    int *ranks = xmalloc((size_t)n * sizeof *ranks), m = 0, last = 0;
    char *traced = xcalloc((size_t)n, 1);
    for (int i = 0; i < j->n_ranks; i++)
        for (int k = 0; k < n; k++)
            if (members[k] == j->ranks[i].rank)
                traced[k] = 1;
    for (int k = 0; k < n; k++)
        if (traced[k]) {
            ranks[m++] = members[k];
            last = k;
        }
    int tasked = m;
    for (int k = 1; k <= n; k++)
        if (!traced[(last + k) % n])
            ranks[m++] = members[(last + k) % n];
    int id = tasked == n ? graph_add_group(x->g, ranks, n)
                         : graph_add_group_stand_ins(x->g, ranks, n, tasked);
    x->group_key = xreallocarray(x->group_key, (size_t)x->n_groups + 1, sizeof *x->group_key);
    x->group_n = xreallocarray(x->group_n, (size_t)x->n_groups + 1, sizeof *x->group_n);
    x->group_id = xreallocarray(x->group_id, (size_t)x->n_groups + 1, sizeof *x->group_id);
    x->group_key[x->n_groups] = xmalloc((size_t)n * sizeof(int));
    memcpy(x->group_key[x->n_groups], members, (size_t)n * sizeof(int));
    x->group_n[x->n_groups] = n;
    x->group_id[x->n_groups++] = id;
    free(ranks);
    free(traced);
    return id;
}

/* Two collectives (op a of job rank i, op b of job rank k) on the same communicator: same kind,
 * same members. */
static int same_comm(const gb *x, int i, const trace_op *a, int k, const trace_op *b)
{
    if (a->coll != b->coll || a->group_n != b->group_n)
        return 0;
    const trace_rank *ri = &x->j->ranks[i], *rk = &x->j->ranks[k];
    int n = a->group_n;
    if (a->group_at < 0 && b->group_at < 0)
        return ri->rank - ri->rank % n == rk->rank - rk->rank % n;
    if (a->group_at >= 0 && b->group_at >= 0)
        return memcmp(&ri->group_ranks[a->group_at], &rk->group_ranks[b->group_at],
                      (size_t)n * sizeof(int)) == 0;
    int *ma = xmalloc((size_t)n * sizeof *ma), *mb = xmalloc((size_t)n * sizeof *mb);
    coll_members(x, i, a, ma);
    coll_members(x, k, b, mb);
    int same = memcmp(ma, mb, (size_t)n * sizeof *ma) == 0;
    free(ma);
    free(mb);
    return same;
}

/* Each rank's collectives (x->colls), numbered per (kind, communicator) in measured start
 * order (x->seq). */
static void number_collectives(gb *x)
{
    const trace_job *j = x->j;
    x->seq = xcalloc((size_t)j->n_ranks, sizeof *x->seq);
    x->colls = xcalloc((size_t)j->n_ranks, sizeof *x->colls);
    x->n_colls = xcalloc((size_t)j->n_ranks, sizeof *x->n_colls);
    for (int i = 0; i < j->n_ranks; i++) {
        const trace_rank *r = &j->ranks[i];
        x->seq[i] = xmalloc(((size_t)r->n_ops + 1) * sizeof **x->seq);
        x->colls[i] = xmalloc(((size_t)r->n_ops + 1) * sizeof **x->colls);
        for (uint32_t a = 0; a < r->n_ops; a++) {
            x->seq[i][a] = -1;
            if (r->ops[a].kind == TRACE_COLL)
                x->colls[i][x->n_colls[i]++] = a;
        }
        for (int ca = 0; ca < x->n_colls[i]; ca++) {
            uint32_t a = x->colls[i][ca];
            const trace_op *q = &r->ops[a];
            int k = 0;
            for (int cb = 0; cb < x->n_colls[i]; cb++) {
                uint32_t b = x->colls[i][cb];
                const trace_op *p = &r->ops[b];
                if (b != a && (p->start < q->start || (p->start == q->start && b < a)) &&
                    same_comm(x, i, p, i, q))
                    k++;
            }
            x->seq[i][a] = k;
        }
    }
}

/* The op of job rank k matching collective `like` of job rank i (communicator, seq), or -1. */
static int64_t find_coll(const gb *x, int k, int i, const trace_op *like, int seq)
{
    const trace_rank *r = &x->j->ranks[k];
    for (int c = 0; c < x->n_colls[k]; c++) {
        uint32_t a = x->colls[k][c];
        if (x->seq[k][a] == seq && same_comm(x, k, &r->ops[a], i, like))
            return a;
    }
    return -1;
}

/* A collective's task for every traced member, once each of them has reached it on its lane
 * (cur: [rank][lane] cursors into the lane's op list). Returns 1 if made, 0 if a member is not
 * there yet, -1 if a member has no matching collective. */
static int make_collective(gb *x, int i, uint32_t a, uint32_t ***lanes_ops, int **cur,
                           int **n_lane_ops)
{
    const trace_job *j = x->j;
    const trace_op *op = &j->ranks[i].ops[a];
    int *members = xmalloc((size_t)op->group_n * sizeof *members);
    coll_members(x, i, op, members);
    int *member = xmalloc((size_t)j->n_ranks * sizeof *member);
    int64_t *mop = xmalloc((size_t)j->n_ranks * sizeof *mop);
    int m = 0, rc = 1;
    for (int k = 0; k < j->n_ranks && rc == 1; k++) { /* traced members, in rank order */
        if (!is_member(members, op->group_n, j->ranks[k].rank))
            continue;
        int64_t b = find_coll(x, k, i, op, x->seq[i][a]);
        if (b < 0) {
            rc = -1;
            break;
        }
        int lane = j->ranks[k].ops[b].lane;
        if (cur[k][lane] >= n_lane_ops[k][lane] || lanes_ops[k][lane][cur[k][lane]] != b)
            rc = 0;
        member[m] = k;
        mop[m++] = b;
    }
    for (int p = 1; p < m && rc == 1; p++) /* sort by rank: the group's order */
        for (int q = p; q > 0 && j->ranks[member[q]].rank < j->ranks[member[q - 1]].rank; q--) {
            int t = member[q];
            member[q] = member[q - 1];
            member[q - 1] = t;
            int64_t u = mop[q];
            mop[q] = mop[q - 1];
            mop[q - 1] = u;
        }
    if (rc == 1) {
        int grp = group_for(x, members, op->group_n);
        char name[96];
        snprintf(name, sizeof name, "%s %.3g MB (%d GPUs)", coll_kind_name((coll_kind)op->coll),
                 op->bytes / 1e6, op->group_n);
        uint32_t *ids = xmalloc((size_t)op->group_n * sizeof *ids);
        graph_add_collective(x->g, (coll_kind)op->coll, grp, (stream_id)x->stream_of[i][op->lane],
                             op->bytes, CAT_COMM, graph_label(x->g, name), j->ranks[i].ops[a].step,
                             ids);
        for (int p = 0; p < m; p++) {
            int k = member[p];
            x->task_of[k][mop[p]] = ids[p];
            if (j->ranks[k].ops[mop[p]].lag > 0)
                graph_set_lag(x->g, ids[p], j->ranks[k].ops[mop[p]].lag);
            if (j->ranks[k].ops[mop[p]].floating)
                graph_set_floating(x->g, ids[p]);
            cur[k][j->ranks[k].ops[mop[p]].lane]++;
        }
        free(ids);
    }
    free(members);
    free(member);
    free(mop);
    return rc;
}

/* One op's task (not a collective). */
static uint32_t make_task(gb *x, int i, uint32_t a)
{
    const trace_rank *r = &x->j->ranks[i];
    const trace_op *op = &r->ops[a];
    task_category cat =
        r->lanes[op->lane].is_cpu ? CAT_HOST
        : op->kind == TRACE_COMM_MEASURED || op->kind == TRACE_SEND || op->kind == TRACE_RECV
            ? CAT_COMM
            : CAT_KERNEL;
    if (op->kind == TRACE_SEND) /* received by the peer's TRACE_RECV (pair_transfers) */
        return graph_add_transfer(x->g, r->rank, op->peer, (stream_id)x->stream_of[i][op->lane],
                                  op->bytes, cat, label_of(x, op->name), op->step);
    uint32_t t = graph_add_compute_on(x->g, r->rank, x->stream_of[i][op->lane], cat, op->seconds,
                                      label_of(x, op->name), op->step);
    if (op->lag > 0)
        graph_set_lag(x->g, t, op->lag);
    if (op->floating)
        graph_set_floating(x->g, t);
    return t;
}

/* Tasks in each stream's program order: every lane advances until a collective whose traced
 * members have not all reached it; a round without progress means the traces disagree. */
static int make_tasks(gb *x, ps_error *err)
{
    const trace_job *j = x->j;
    uint32_t ***lanes_ops = xcalloc((size_t)j->n_ranks, sizeof *lanes_ops);
    int **cur = xcalloc((size_t)j->n_ranks, sizeof *cur);
    int **n_lane = xcalloc((size_t)j->n_ranks, sizeof *n_lane);
    for (int i = 0; i < j->n_ranks; i++) {
        const trace_rank *r = &j->ranks[i];
        lanes_ops[i] = xcalloc((size_t)r->n_lanes + 1, sizeof **lanes_ops);
        cur[i] = xcalloc((size_t)r->n_lanes + 1, sizeof **cur);
        n_lane[i] = xcalloc((size_t)r->n_lanes + 1, sizeof **n_lane);
        for (int l = 0; l < r->n_lanes; l++)
            lanes_ops[i][l] = xmalloc(((size_t)r->n_ops + 1) * sizeof ***lanes_ops);
        for (uint32_t a = 0; a < r->n_ops; a++) {
            int l = r->ops[a].lane;
            lanes_ops[i][l][n_lane[i][l]++] = a;
        }
    }
    int rc = 0, progress = 1, left = 1;
    while (progress && left && !rc) {
        progress = left = 0;
        for (int i = 0; i < j->n_ranks && !rc; i++)
            for (int l = 0; l < j->ranks[i].n_lanes && !rc; l++)
                while (cur[i][l] < n_lane[i][l]) {
                    uint32_t a = lanes_ops[i][l][cur[i][l]];
                    if (j->ranks[i].ops[a].kind != TRACE_COLL) {
                        x->task_of[i][a] = make_task(x, i, a);
                        cur[i][l]++;
                        progress = 1;
                        continue;
                    }
                    int made = make_collective(x, i, a, lanes_ops, cur, n_lane);
                    if (made < 0)
                        rc = ps_error_set(err, PS_EINPUT, j->ranks[i].file, 0, 0, NULL,
                                          "its collective at traceEvents[%d] has no match in "
                                          "the other traces of its communicator",
                                          j->ranks[i].ops[a].event);
                    if (made <= 0) {
                        left = 1;
                        break;
                    }
                    progress = 1;
                }
    }
    if (!rc && left)
        rc = ps_error_set(err, PS_EINPUT, j->ranks[0].file, 0, 0, NULL,
                          "the traces reach their collectives in orders that cannot all run");
    for (int i = 0; i < j->n_ranks; i++) {
        for (int l = 0; l < j->ranks[i].n_lanes; l++)
            free(lanes_ops[i][l]);
        free(lanes_ops[i]);
        free(cur[i]);
        free(n_lane[i]);
    }
    free(lanes_ops);
    free(cur);
    free(n_lane);
    return rc;
}

static void gb_free(gb *x)
{
    for (int s = 0; s < x->n_streams; s++)
        free(x->stream_name[s]);
    free(x->stream_name);
    free(x->stream_kind);
    for (int i = 0; i < x->j->n_ranks; i++) {
        free(x->stream_of[i]);
        free(x->seq ? x->seq[i] : NULL);
        free(x->colls ? x->colls[i] : NULL);
    }
    free(x->stream_of);
    free(x->seq);
    free(x->colls);
    free(x->n_colls);
    free(x->label_of);
    for (int k = 0; k < x->n_groups; k++)
        free(x->group_key[k]);
    free(x->group_key);
    free(x->group_n);
    free(x->group_id);
}

/* A send or receive op of the job, for pairing: its sender, receiver, tag, job rank and op. */
typedef struct p2p_end {
    int src, dst, tag, i;
    uint32_t op;
} p2p_end;

/* The pair's key: sender, receiver, tag. */
static int by_key(const p2p_end *a, const p2p_end *b)
{
    if (a->src != b->src)
        return a->src < b->src ? -1 : 1;
    if (a->dst != b->dst)
        return a->dst < b->dst ? -1 : 1;
    return a->tag < b->tag ? -1 : a->tag > b->tag;
}

/* The key, then each file's order. */
static int by_pair(const void *x, const void *y)
{
    const p2p_end *a = x, *b = y;
    int c = by_key(a, b);
    if (c)
        return c;
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    return a->op < b->op ? -1 : a->op > b->op;
}

/* Each send's transfer on to its receive: the k-th send of (sender, receiver, tag) with the
 * k-th receive of it, in each file's order; one left over is an input error. */
static int pair_transfers(gb *x, ps_error *err)
{
    const trace_job *j = x->j;
    p2p_end *v[2] = {NULL, NULL};
    size_t n[2] = {0, 0}, cap[2] = {0, 0};
    for (int i = 0; i < j->n_ranks; i++)
        for (uint32_t a = 0; a < j->ranks[i].n_ops; a++) {
            const trace_op *op = &j->ranks[i].ops[a];
            if (op->kind != TRACE_SEND && op->kind != TRACE_RECV)
                continue;
            int s = op->kind == TRACE_RECV, me = j->ranks[i].rank;
            xgrow(&v[s], sizeof *v[s], n[s] + 1, &cap[s]);
            v[s][n[s]++] = (p2p_end){s ? op->peer : me, s ? me : op->peer, op->tag, i, a};
        }
    for (int s = 0; s < 2; s++)
        if (n[s])
            qsort(v[s], n[s], sizeof *v[s], by_pair);
    int rc = 0;
    size_t k = 0;
    for (size_t q = 0; q < n[0] || k < n[1]; q++) {
        const p2p_end *snd = q < n[0] ? &v[0][q] : NULL, *rcv = k < n[1] ? &v[1][k] : NULL;
        int c = !snd ? 1 : !rcv ? -1 : by_key(snd, rcv);
        if (c != 0) {
            const p2p_end *e = c < 0 ? snd : rcv;
            const trace_rank *r = &j->ranks[e->i];
            char field[32];
            snprintf(field, sizeof field, "nodes[%d]", r->ops[e->op].event);
            rc = ps_error_set(err, PS_EINPUT, r->file, 0, 0, field,
                              "a %s of rank %d to rank %d, tag %d, has no matching %s",
                              c < 0 ? "send" : "receive", e->src, e->dst, e->tag,
                              c < 0 ? "receive" : "send");
            break;
        }
        graph_add_edge(x->g, x->task_of[snd->i][snd->op], x->task_of[rcv->i][rcv->op]);
        k++;
    }
    free(v[0]);
    free(v[1]);
    return rc;
}

/* The op of job rank *i that task t stands for (the first, when several share it); 0 if none. */
static int op_of_task(const gb *x, uint32_t t, int *i, uint32_t *o)
{
    for (*i = 0; *i < x->j->n_ranks; (*i)++)
        for (*o = 0; *o < x->j->ranks[*i].n_ops; (*o)++)
            if (x->task_of[*i][*o] == t)
                return 1;
    return 0;
}

/* The traced graph has a cycle (graph_finalize): the input is at fault, not the simulator. Names
 * the two events of the cycle's first step across lanes or ranks (a launch, a wait read from the
 * trace or inferred, or collectives matched in the order each rank reached them), both files'
 * events where they differ. */
static int cycle_error(const gb *x, ps_error *err)
{
    enum { SHOWN = 64 };
    uint32_t cyc[SHOWN];
    uint32_t len = graph_find_cycle(x->g, cyc, SHOWN), n = len < SHOWN ? len : SHOWN;
    assert(len >= 1);
    int ia = 0, ib = 0;
    uint32_t oa = 0, ob = 0;
    int found = 0;
    for (uint32_t k = 0; k < n && !found; k++) {
        uint32_t a = cyc[k], b = cyc[(k + 1) % n];
        found = op_of_task(x, a, &ia, &oa) && op_of_task(x, b, &ib, &ob) &&
                (ia != ib || x->j->ranks[ia].ops[oa].lane != x->j->ranks[ib].ops[ob].lane);
    }
    if (!found && !(op_of_task(x, cyc[0], &ia, &oa) && op_of_task(x, cyc[1 % n], &ib, &ob)))
        ia = ib = 0, oa = ob = 0;
    const trace_rank *ra = &x->j->ranks[ia], *rb = &x->j->ranks[ib];
    const trace_op *a = &ra->ops[oa], *b = &rb->ops[ob];
    char field[48];
    const char *ev = ra->chakra ? "nodes" : "traceEvents"; /* what `event` indexes */
    snprintf(field, sizeof field, "%s[%d]", ev, a->event);
    ps_error_clear(err);
    return ps_error_set(err, PS_EINPUT, ra->file, 0, 0, field,
                        "'%.60s' (%s, rank %d) must end before %s[%d] '%.60s' (%s, "
                        "rank %d%s%s) starts, which must end before it starts, through a cycle "
                        "of %u ops: the dependencies read from the trace (each lane's order, "
                        "launches, event waits, synchronizations, collectives matched across "
                        "ranks) contradict each other, as a stream waiting on an event recorded "
                        "after it does",
                        x->j->names[a->name], ra->lanes[a->lane].name, ra->rank, ev, b->event,
                        x->j->names[b->name], rb->lanes[b->lane].name, rb->rank,
                        ia != ib ? ", " : "", ia != ib ? rb->file : "", len);
}

int trace_job_graph(const trace_job *j, int n_gpus, exec_graph **out, uint32_t ***task_of,
                    ps_error *err)
{
    *out = NULL;
    *task_of = NULL;
    if (j->world_size > n_gpus)
        return ps_error_set(err, PS_EINPUT, j->ranks[0].file, 0, 0, "distributedInfo.world_size",
                            "a world of %d ranks does not fit the cluster's %d GPUs", j->world_size,
                            n_gpus);
    gb x;
    memset(&x, 0, sizeof x);
    x.j = j;
    streams_union(&x);
    if (x.n_streams > 255) {
        int n = x.n_streams;
        gb_free(&x);
        return ps_error_set(err, PS_EINPUT, j->ranks[0].file, 0, 0, "traceEvents",
                            "the traces use %d CPU threads and GPU streams (by name, over all "
                            "ranks); the executor takes at most 255",
                            n);
    }
    x.g = graph_create_streams(n_gpus, x.n_streams, x.stream_kind,
                               (const char *const *)x.stream_name);
    x.label_of = xmalloc(((size_t)j->n_names + 1) * sizeof *x.label_of);
    memset(x.label_of, 0xff, ((size_t)j->n_names + 1) * sizeof *x.label_of);
    x.task_of = xcalloc((size_t)j->n_ranks, sizeof *x.task_of);
    for (int i = 0; i < j->n_ranks; i++)
        x.task_of[i] = xmalloc(((size_t)j->ranks[i].n_ops + 1) * sizeof **x.task_of);
    number_collectives(&x);
    int rc = make_tasks(&x, err);
    for (int i = 0; i < j->n_ranks && !rc; i++) {
        const trace_rank *r = &j->ranks[i];
        for (uint32_t e = 0; e < r->n_edges; e++) {
            uint32_t from = x.task_of[i][r->edges[2 * e]], to = x.task_of[i][r->edges[2 * e + 1]];
            if (from != to)
                graph_add_edge(x.g, from, to);
        }
    }
    if (!rc)
        rc = pair_transfers(&x, err);
    if (!rc && graph_finalize(x.g, err))
        rc = cycle_error(&x, err); /* finalize fails on a cycle alone */
    gb_free(&x);
    if (rc) {
        graph_free(x.g);
        trace_tasks_free(j, x.task_of);
        return rc;
    }
    *out = x.g;
    *task_of = x.task_of;
    return 0;
}
