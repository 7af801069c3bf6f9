/* graph.h: the distributed execution graph the compiler emits and the executor runs: per-GPU
 * streams of tasks in program order, edges across streams and GPUs, collectives over groups. */
#ifndef PROTOSIM_GRAPH_H
#define PROTOSIM_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "vocab.h"

typedef enum { TASK_COMPUTE, TASK_TRANSFER, TASK_COLLECTIVE } task_kind;

/* Streams of one GPU, like CUDA streams: compute, tensor-parallel collectives, pipeline
 * point-to-point, data-parallel collectives, context-parallel ring transfers. */
/* STREAM_EP: expert parallelism's all-to-alls when they overlap the other micro-batch's
 * compute (strategy expert.overlap_a2a); otherwise they run on STREAM_TP */
typedef enum {
    STREAM_COMPUTE,
    STREAM_TP,
    STREAM_PP,
    STREAM_DP,
    STREAM_CP,
    STREAM_EP,
    STREAM_COUNT
} stream_id;

/* A graph's streams need not be these five: a replayed trace has as many as its rank used
 * (CUDA streams, and the framework's CPU threads as streams of their own, graph_create_streams).
 * A CPU thread runs compute tasks only (host work, measured): it never slows down while the GPU
 * communicates, and the report does not count it as GPU time. */
typedef enum { STREAM_KIND_GPU, STREAM_KIND_CPU } stream_kind;

/* What a task is for; the report's breakdown and the trace colour by it. */
typedef enum {
    CAT_FORWARD,
    CAT_BACKWARD,
    CAT_RECOMPUTE,
    CAT_OPTIMIZER,
    CAT_TP_COMM,
    CAT_PP_COMM,
    CAT_DP_COMM,
    CAT_CP_COMM,
    CAT_EP_COMM,  /* expert parallelism: all-to-alls and expert-tensor collectives */
    CAT_EMB_COMM, /* sharded embedding tables (dlrm): ids, pooled vectors, their gradients */
    CAT_HOST,     /* a traced CPU thread's work (replay) */
    CAT_KERNEL,   /* a traced GPU kernel, copy or memset (replay) */
    CAT_COMM,     /* a traced NCCL kernel (replay) */
    CAT_COUNT
} task_category;

typedef enum { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_ALLTOALL } coll_kind;

/* How the GPU's host thread (the framework's Python/C++ thread that launches kernels and NCCL
 * calls) takes part in a task. The host walks its GPU's HOST_ISSUE tasks in program order (task
 * id order), spending host_s on each; it never waits for the GPU except where told to. */
enum {
    HOST_ISSUE = 1, /* the task cannot start on the GPU before the host has issued it */
    HOST_WAIT = 2   /* before issuing, the host blocks until the task's predecessors are done
                         (a blocking receive, then synchronize) */
};

typedef struct graph_task {
    uint8_t kind;     /* task_kind */
    uint8_t stream;   /* stream_id, or below the graph's n_streams */
    uint8_t category; /* task_category */
    uint8_t host;     /* HOST_* flags, 0: the host plays no part */
    int32_t rank;
    int32_t peer;        /* TASK_TRANSFER: destination rank */
    int32_t coll;        /* TASK_COLLECTIVE: collective index */
    int32_t label;       /* index into the label table */
    int32_t micro;       /* micro-batch, -1 if none (for trace names) */
    double seconds;      /* TASK_COMPUTE: duration on an idle GPU */
    double bytes;        /* TRANSFER: payload; COLLECTIVE: per-rank buffer size */
    double host_s;       /* HOST_ISSUE: host time to issue it (launches, framework work) */
    double span;         /* HOST_ISSUE compute: the task cannot end before issue start + span
                              (its kernels' flow shop behind a host that issues them one by
                              one); transfers and collectives start when issuing ends */
    uint32_t succ_first; /* into graph->succ, after finalize */
    uint32_t n_succ;
    uint32_t n_pred;
} graph_task;

/* A group of ranks that run collectives together, in ring order. The first `tasked` members
 * take part with a task each; the others (folding's stand-ins, graph_add_group_stand_ins) only
 * lend their links: a collective runs over every member's links once its tasked members have
 * arrived. */
typedef struct graph_group {
    uint32_t first; /* into graph->group_ranks */
    uint32_t n;
    uint32_t tasked; /* n, or fewer with stand-ins */
} graph_group;

typedef struct graph_collective {
    coll_kind kind;
    int32_t group;
    double bytes;        /* per-rank buffer size S (all-to-all-v: the largest row sum) */
    uint32_t first_task; /* into graph->coll_tasks: one task per tasked member, group order */
    double *matrix;      /* all-to-all-v only, else NULL: [n * n] bytes member i sends member j
                            (group order), owned by the graph */
} graph_collective;

typedef struct exec_graph {
    int n_ranks;
    int n_streams;         /* per rank: STREAM_COUNT, or graph_create_streams' count */
    uint8_t *stream_kinds; /* [n_streams] stream_kind */
    char **stream_names;   /* [n_streams], or NULL: stream_name's */
    graph_task *tasks;
    uint32_t n_tasks;
    size_t cap_tasks;

    uint32_t *edges; /* pairs (from, to) until finalize */
    uint32_t n_edges;
    size_t cap_edges;
    uint32_t *succ; /* CSR successor lists, after finalize */

    graph_group *groups;
    uint32_t n_groups;
    size_t cap_groups;
    int32_t *group_ranks;
    uint32_t n_group_ranks;
    size_t cap_group_ranks;

    graph_collective *colls;
    uint32_t n_colls;
    size_t cap_colls;
    uint32_t *coll_tasks;
    uint32_t n_coll_tasks;
    size_t cap_coll_tasks;

    char **labels;
    int n_labels;
    size_t cap_labels;

    double *lag; /* NULL, or [n_lag]: graph_set_lag's per-task start lag (0 for the others) */
    uint32_t n_lag;
    size_t cap_lag;

    uint8_t *floating; /* NULL, or [n_floating]: graph_set_floating's tasks (1), 0 the others */
    uint32_t n_floating;
    size_t cap_floating;

    /* Companion flows of transfers (graph_add_pair_set, graph_set_companions): pair set i is
     * pair_ranks[2 * (pair_first[i] + k)] -> [.. + 1] for k < pair_first[i + 1] - pair_first[i];
     * companion[t] the set of transfer t, -1 none (NULL or t >= n_companion: none). */
    int32_t *pair_ranks;
    uint32_t n_pair_ranks;
    size_t cap_pair_ranks;
    uint32_t *pair_first; /* [n_pair_sets + 1] */
    uint32_t n_pair_sets;
    size_t cap_pair_first;
    int32_t *companion;
    uint32_t n_companion;
    size_t cap_companion;

    /* Companion groups of collectives (graph_set_coll_companions): collective c also runs over
     * comp_span[2 c] groups of comp_groups from comp_span[2 c + 1] on (NULL or c >= n_coll_comp:
     * none). */
    int32_t *comp_groups;
    uint32_t n_comp_groups;
    size_t cap_comp_groups;
    uint32_t *comp_span; /* [2 * n_coll_comp]: count, first */
    uint32_t n_coll_comp;
    size_t cap_coll_comp;

    /* Inner folding's invariant groups and pair sets (graph_set_group_invariant,
     * graph_set_pair_set_invariant): NULL, or 1 at the marked ones (index below n_...). */
    uint8_t *group_invariant;
    uint32_t n_group_invariant;
    size_t cap_group_invariant;
    uint8_t *set_invariant;
    uint32_t n_set_invariant;
    size_t cap_set_invariant;

    /* After finalize: tasks of stream s of rank r are stream_tasks[stream_first[i] ..
     * stream_first[i+1]) with i = r * n_streams + s, in program order. */
    uint32_t *stream_first;
    uint32_t *stream_tasks;
    int finalized;
} exec_graph;

/* Building a graph wrongly (a rank, peer, group, label, stream or category out of range, a
 * negative or non-finite duration or size, a transfer to its own rank, a group naming a rank
 * twice, an edge to a missing task) is a bug in the caller: the builders and finalize assert,
 * they do not return errors. Memory comes from xalloc (exit 3 when exhausted). */
exec_graph *graph_create(int n_ranks);
/* A graph whose ranks each have n_streams streams (1..255) of the given kinds and names (copied)
 * instead of the five of stream_id. */
exec_graph *graph_create_streams(int n_ranks, int n_streams, const stream_kind *kinds,
                                 const char *const *names);
void graph_free(exec_graph *g);

/* Intern a label (task names in traces). */
int graph_label(exec_graph *g, const char *name);

uint32_t graph_add_compute(exec_graph *g, int rank, task_category cat, double seconds, int label,
                           int micro);
/* A compute task on any stream of the rank: a GPU stream's kernel, or a CPU thread's work. */
uint32_t graph_add_compute_on(exec_graph *g, int rank, int stream, task_category cat,
                              double seconds, int label, int micro);
/* A point-to-point transfer issued by `src` on stream `stream`. The receiver only depends on it:
 * add an edge from it to at least one task of `dst` (finalize asserts it has a successor), or,
 * when `dst` is a folded rank, to a task of the rank whose timeline it follows. */
uint32_t graph_add_transfer(exec_graph *g, int src, int dst, stream_id stream, double bytes,
                            task_category cat, int label, int micro);
/* A group of ranks, ring order as given. Callers create each group once and reuse its id. */
int graph_add_group(exec_graph *g, const int *ranks, int n);
/* A group whose members after the first `tasked` are stand-ins: its collectives give them no
 * task but run over their links too, starting when the tasked members have all arrived (folded
 * expert parallelism: the members outside the simulated replicas reach each all-to-all when
 * their simulated counterparts do, strategies/compile/fold.c). */
int graph_add_group_stand_ins(exec_graph *g, const int *ranks, int n, int tasked);
/* One collective over `group`: adds one task per tasked member on `stream`; their ids are
 * written to task_ids (in group order) when it is not NULL. Returns the collective index. */
/* An uneven all-to-all (all-to-all-v, MoE token routing): member i sends matrix[i * n + j]
 * bytes to member j (n the group's size, group order; the diagonal stays local and is
 * ignored); the matrix is copied. Same task ids and result as graph_add_collective. */
int graph_add_alltoallv(exec_graph *g, int group, stream_id stream, const double *matrix,
                        task_category cat, int label, int micro, uint32_t *task_ids);
int graph_add_collective(exec_graph *g, coll_kind kind, int group, stream_id stream, double bytes,
                         task_category cat, int label, int micro, uint32_t *task_ids);
void graph_add_edge(exec_graph *g, uint32_t from, uint32_t to);
/* Task t cannot start before lag seconds after its last explicit predecessor (an edge's source,
 * not its stream's previous task) ended: a replayed kernel's launch latency on an idle GPU. */
void graph_set_lag(exec_graph *g, uint32_t t, double lag);
/* Task t floats on its stream: it may overtake the floating tasks before it in program order
 * that are not ready yet (their order is a priority: the first ready one runs), never a task
 * that does not float (a fence). P3's priority among gradient collectives (sim/whatif/whatif_priority.c). */
void graph_set_floating(exec_graph *g, uint32_t t);
/* A set of n (src[i] -> dst[i]) rank pairs, each src != dst; returns its id. */
int graph_add_pair_set(exec_graph *g, const int *src, const int *dst, int n);
/* Transfer t moves its bytes between every pair of `set` too, in the same SimGrid task as its own
 * flow (tensor-parallel folding, strategies/compile/fold.c: the folded peers' pipeline sends, which
 * share links with the simulated one's and end when it does). The pairs' ranks need no task. */
void graph_set_companions(exec_graph *g, uint32_t t, int set);
/* Transfer t's companion pairs: their count, and *pairs (src, dst interleaved), or 0. */
int graph_companions(const exec_graph *g, uint32_t t, const int32_t **pairs);
/* Collective c (not an all-to-all-v) also runs the same collective over groups[0 .. n), each
 * of its group's size, in the same SimGrid task (tensor-parallel folding: the folded peers'
 * gradient collectives, strategies/compile/zero.c); their members need no task. */
void graph_set_coll_companions(exec_graph *g, int c, const int *groups, int n);
/* Collective c's companion groups: their count, and *groups, or 0. */
int graph_coll_companions(const exec_graph *g, uint32_t c, const int32_t **groups);
/* Folding inside a replica (strategies/compile/fold.c): group gi's collectives, with their
 * companion groups, and the flows of pair set `set` with their transfer's own load each link as
 * much as its image under the fold's shifts, which are the same tasks: so the executor may leave
 * out flows between ranks that compute nothing, on links no other traffic crosses, the images'
 * links bounding the task as they would (sim/engine/htae_prune.c). */
void graph_set_group_invariant(exec_graph *g, int gi);
void graph_set_pair_set_invariant(exec_graph *g, int set);
int graph_group_invariant(const exec_graph *g, int gi);
int graph_pair_set_invariant(const exec_graph *g, int set);
/* Make the host take part in task t (see HOST_*); span only matters for compute tasks. */
void graph_set_host(exec_graph *g, uint32_t t, unsigned flags, double host_s, double span);

/* Build successor lists and stream orders; fail (PS_EINTERNAL) on a cycle, counting the
 * implicit program-order edges of each stream. Asserts what the executor relies on: every
 * task's fields in range, every transfer received (a successor: on its peer, or a folded
 * peer's twin), every collective one task per tasked group member on that
 * member's rank. */
int graph_finalize(exec_graph *g, ps_error *err);
/* After graph_finalize failed on a cycle: one cycle, as tasks each of which must finish before
 * the next can (and the last before the first): an edge, a stream's program order, or two
 * members of one collective (each waits for the other to arrive). Writes at most max of them
 * to out and returns the cycle's length (0 if the graph has none). */
uint32_t graph_find_cycle(const exec_graph *g, uint32_t *out, uint32_t max);
/* After graph_finalize: each task's edge predecessors as CSR (*first: [n_tasks + 1] into
 * *preds) and the task before it on its stream (*prev: [n_tasks], UINT32_MAX for a stream's
 * first). The caller frees the three. */
void graph_predecessors(const exec_graph *g, uint32_t **first, uint32_t **preds, uint32_t **prev);

/* A 128-bit digest (two 64-bit lanes of a splitmix64 chain): equal inputs give equal digests;
 * different ones collide with odds of about 2^-128 per pair (no adversary here). */
typedef struct graph_digest {
    uint64_t a, b;
} graph_digest;

void graph_digest_init(graph_digest *d);
/* Append n bytes (and their count: "ab" + "c" differs from "a" + "bc"). */
void graph_digest_add(graph_digest *d, const void *data, size_t n);
/* Append everything of a finalized graph that the executor and the report read: ranks,
 * streams (kinds, names), tasks, successor lists, stream orders, groups, collectives (with
 * their matrices), labels, lags, floating flags, transfers' companion pairs, companion groups,
 * invariant flags. Two graphs with equal digests are one graph to the sweep, which simulates
 * one of them (cli/sweep_run.c). A field added to exec_graph must be added here (graph.c
 * asserts the struct's size to remind). */
void graph_digest_graph(graph_digest *d, const exec_graph *g);

/* Name tables (vocab.h) and their lookups. */
extern const enum_names task_category_names, stream_names, coll_kind_names;
const char *task_category_name(task_category c);
const char *stream_name(stream_id s);
/* Stream s of g's ranks: its name and whether it is a CPU thread. */
const char *graph_stream_name(const exec_graph *g, int s);
int graph_stream_is_cpu(const exec_graph *g, int s);
const char *coll_kind_name(coll_kind k);

#endif
