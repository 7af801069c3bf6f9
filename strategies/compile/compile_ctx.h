/* compile_ctx.h: the compiler's internal contract (strategies/compile/ only): the compile
 * context every step reads and fills, the per-chunk segment templates, the emit state, and the
 * functions each file of the compiler gives the others. From the bottom up: ranks.c (where
 * ranks sit), context.c, chunk.c (templates), expert.c, fold.c, zero.c, memory.c; compile.c
 * calls them all and nobody calls it. */
#ifndef PROTOSIM_COMPILE_CTX_H
#define PROTOSIM_COMPILE_CTX_H

#include <stdint.h>

#include "compile.h"
#include "../schedule.h"

#define NONE UINT32_MAX

/* Compute between two tensor-parallel collectives, for one micro-batch on one TP rank. The
 * host thread issues its kernels one by one (cpu seconds in all); the GPU runs them as they
 * arrive, so the segment cannot end before `span` after its issue began (a flow shop of the
 * kernels: host launch, then GPU run). The executor plays the host's timeline (HOST_ISSUE):
 * a host-bound pass hides the TP collectives' time behind the issuing of later kernels, as
 * asynchronous NCCL calls do. */
/* What follows a segment: nothing, the tensor-parallel collective(s), or (expert parallelism)
 * the all-to-all carrying tokens or their gradients into the experts (then the expert-tensor
 * all-gather), or out of them (the expert-tensor reduce-scatter, then the all-to-all). */
typedef enum { CUT_NONE, CUT_TP, CUT_EP_IN, CUT_EP_OUT } cut_kind;

typedef struct segment {
    double gpu, cpu, span;
    double params;        /* sharded parameters whose gradients this (backward) segment makes */
    double expert_params; /* the part of params reduced over the expert-data-parallel group */
    int n_ops, lo, hi;    /* how many ops, lowest and highest layer among them */
    int label;
    int cut;     /* cut_kind: what follows */
    int ring;    /* the attention core under context parallelism: cp ring steps (cp kernels in
                    gpu, cpu, span), emitted by context_emit_ring */
    double gpu0; /* ring: step 0's GPU time (the later steps share the rest equally) */
} segment;

typedef struct segment_list {
    segment *seg;
    int n;
    size_t cap;
} segment_list;

/* Everything one model chunk needs on one kind of GPU, the same for every micro-batch. Only the
 * times (gpu, span) and, under expert imbalance, the saved activations (a busier expert rank
 * keeps more routed tokens) depend on the GPU profile: the segments, cuts, labels, buckets and
 * parameters are the same on every GPU (chunk_template_same_shape). */
typedef struct chunk_template {
    segment_list fwd, bwd, rec; /* rec: forward replayed before backward (full recompute) */
    /* A schedule that splits the backward (pipeline_splits_backward): bwd holds the input
     * gradients (B) and wgt the weight gradients (W), segment i of wgt those of bwd's segment i
     * (so the gradient buckets index both alike); wgt's segments have no cut and may be empty.
     * wgt.n == 0 otherwise. */
    segment_list wgt;
    double wgt_act_bytes; /* split: what a micro-batch holds between its B and its W (each
                             weight GEMM's input X and output gradient dY) */
    double params;        /* sharded */
    double expert_params; /* the part of params reduced over expert-data-parallel groups */
    double act_bytes;     /* saved per micro-batch, after recompute savings */
    int *bucket_end;      /* backward segment index closing each gradient bucket */
    double *bucket_bytes;
    uint8_t *bucket_expert; /* 1: expert gradients (over the EDP groups), 0: over DP */
    int *bucket_lo;         /* lowest layer whose parameters the bucket holds */
    int n_buckets;
    int *fwd_bucket; /* per forward segment: the bucket holding its last layer */
    /* FSDP units (ZeRO-3 gathers, reduce-scatters and frees parameters unit by unit): the
     * embedding, each transformer layer and the head (final norm, LM head, loss) of the chunk,
     * in forward order; a unit is named by its layer index (-1 embedding, L head). */
    int n_units;
    int *unit_layer;
    double *unit_params; /* sharded by TP (the routed experts by the expert layout) */
    double *unit_expert; /* the part of unit_params sharded over the EDP groups (FSDP) */
} chunk_template;

typedef struct compile_ctx {
    const strategy *s;
    const cluster *c;
    workload_graph wg;
    workload_op *sharded; /* [wg.n_ops]: the part one TP (and context) rank runs */
    /* dp: the ranks holding the same weights of a (stage, tensor index), data x context; the
     * compiler's data index d runs over them, d = data index x cp + context index
     * (compile_rank_of). mcs: model chunks = pp * v */
    int tp, pp, dp, cp, v, mcs, M;
    pipeline_unit *orders; /* ZB-V: every stage's order (pipeline_units each), from the chunks'
                              pass times (compile_orders_init); NULL otherwise */
    int slices;            /* distinct layer slices: mcs, or pp under DualPipe (two copies) */
    int *chunk_first;      /* [slices + 1]: slice i holds layers chunk_first[i] .. [i + 1] - 1
                              (compile_chunk_lo, compile_chunk_hi) */
    int dp_sim; /* data-context indices simulated: dp, or cp (data replica 0) when folded */
    struct context_rings *rings; /* context parallelism's ring steps to link (context.c) */
    double tp_bytes;             /* one TP collective's buffer: b * s * h elements */
    double pp_bytes;             /* one pipeline send */
    double grad_elem;            /* bytes per gradient element in DP reduction */
    /* GPU profiles: the distinct (device, slowdown) pairs of the cluster. Templates are built
     * per (profile, chunk) when first used: tmpl[profile * mcs + mc], built[] says which. */
    int n_prof;
    int *prof_of_rank; /* [n_gpus] */
    const device_spec **prof_dev;
    double *prof_slowdown;
    chunk_template *tmpl; /* [n_prof * mcs] */
    uint8_t *built;       /* [n_prof * mcs] */
    exec_graph *g;
    uint32_t *last_compute; /* per rank: latest compute task emitted, NONE at first */
    int label_tp[3], label_dp[3], label_send_act, label_send_grad, label_opt, label_pipe;
    int label_fsdp_gather[2], label_fsdp_rs, label_hsdp_ar; /* gather: [0] fwd, [1] bwd */
    int label_fsdp_egather[2], label_fsdp_ers; /* the same over the expert-data-parallel groups */
    int label_cp[2];                           /* ring transfers: [0] fwd, [1] bwd */
    /* Expert parallelism (Megatron-Core's folding, compile_expert_stage_index): ep x etp ranks
     * hold the experts, edp = tp x dp / (ep x etp) reduce their gradients. expert_layout: the
     * experts are laid out otherwise than the dense MLP (ep > 1 or etp != tp), so they have
     * their own sharding, all-to-alls and gradient groups. */
    int ep, etp, edp, expert_layout;
    double ep_bytes;   /* one member's all-to-all buffer, balanced: tokens / tp x topk x h */
    double *prof_load; /* [n_prof]: the routed-expert load of the profile's ranks */
    /* Tensor indices simulated: tp, or 1 when the TP peers are folded (fold.c): tensor index 0
     * computes, its peers lend their links (stand-ins in the TP groups, companion pairs of its
     * pipeline sends, companion groups of its DP collectives). */
    int tp_sim;
    int n_sim; /* simulated ranks of a stage: dp_sim x tp_sim, member j = d * tp_sim + t */
    uint8_t *rank_simulated; /* [n_gpus]: 1 for the ranks that compute */
    /* [(d * pp + p) * 2 + next] (TP folding) or [(j * pp + p) * 2 + next] (inner folding, member
     * j): the companion pair set of a folded send, -1 until made (-2: none) */
    int *pp_pairs;
    /* Folded EP groups (fold.c): the simulated block is n_sim < ep x etp ranks of the first EP
     * groups, whose other members join the all-to-alls as stand-ins (`compile_fold_twin`) */
    int ep_stand_in;
    int *tp_group;  /* [pp * dp_sim]: TP group of (stage, replica) */
    int *ep_group;  /* [pp * tp * dp / ep]: EP group (et, edp) of each stage, -1 when it holds no
                       simulated rank (not emitted) */
    int *etp_group; /* [pp * tp * dp / etp] (e, edp), -1 likewise; NULL when etp == 1 */
    /* Expert-data-parallel groups, split as the data-parallel ones are under HSDP (Megatron's
     * intra- and inter-partial expert DP groups, torchtitan's efsdp inside each replica): shard
     * groups of edp_shard = edp / n_shard_groups consecutive EDP indices (the experts inside
     * one replica), [(p * ep + e) * etp + et) * n_shard_groups + r], NULL when edp_shard == 1;
     * replica groups of the n_shard_groups ranks holding the same expert shard,
     * [((p * ep + e) * etp + et) * edp_shard + j], NULL without HSDP. */
    int edp_shard;
    int *edp_group;
    int *edp_rep_group;
    int label_ep[2], label_etp[2]; /* [0] into the experts, [1] out of them */
    int label_edp[3];              /* expert gradient collectives, by coll_kind */
    int label_hsdp_ear;            /* HSDP: expert gradient shards across the replicas */
    int *sim_rank;                 /* [pp * n_sim]: rank of simulated member j of stage p */
    /* Folding inside replica 0 (fold.c, compile_choose_simulated; docs/design-notes.md "Folding
     * inside a replica"): `inner` when the simulated members are tensor indices below tp_sim and
     * context indices below dp_sim < cp, or tp_sim 1 under context or expert parallelism, the
     * others shown to behave like them by shifts of the tensor and context indices that map the
     * plan onto itself. Then every collective and transfer of replica 0 still runs: a group
     * holding a simulated member gives it a task (stand-ins the rest), one without joins the
     * same collective of the group it is a shifted copy of as a companion, and a transfer whose
     * source is not simulated is a companion pair of the simulated one it copies. */
    int inner;
    int *twin_index; /* inner: [tp * dp] the simulated stage index whose timeline i follows */
    int *member_of;  /* inner: [tp * dp] member j of stage index i, -1 when not simulated */
    int *tp_comp;    /* inner: [(p * dp_sim + d) * n_tp_comp + m]: the TP groups of context index
                        d + (m + 1) dp_sim, companions of simulated replica d's */
    int n_tp_comp;   /* cp / dp_sim - 1 */
    int *ep_comp_first, *ep_comp;   /* inner: companion EP groups of ep_group entry k:
                                     ep_comp[ep_comp_first[k] .. ep_comp_first[k + 1]) */
    int *etp_comp_first, *etp_comp; /* the same for etp_group */
    /* inner folding with every EP group inside replica 0: the EDP groups (edp_group, one shard
     * group each) are made as the EP ones, a group holding a simulated member with them tasked
     * first, the others its companions (edp_comp_first, edp_comp) */
    int inner_edp;
    int *edp_comp_first, *edp_comp;
    /* inner: [p * n_sim + j] the pair set of member j's ring transfers' companion pairs, -1
     * until made (-2: none) */
    int *cp_pairs;
    int fsdp; /* ZeRO-3 over more than one rank: per-unit gathers and reduce-scatters */
    /* FSDP under a pipeline (PyTorch's pipelining, torchtitan's reshard_after_forward False):
     * each unit gathered once per step, before its chunk's first forward, kept gathered, its
     * gradients accumulated whole and reduce-scattered once after the chunk's last backward */
    int fsdp_keep;
    int layer_cuts; /* forward segments end at layer boundaries (parameters gated per unit) */
    int shard, n_shard_groups; /* ranks ZeRO shards over, and dp / shard */
    const profile_db *profile; /* measured op times (compile_options.profile), or NULL */
    profile_stats *stats;      /* where template builds record their op passes, or NULL */
} compile_ctx;

/* The stage holding model chunk mc, and the model chunk stage p holds as its k-th (its unit's
 * `chunk`): strategy.h's mapping, one place for the interleaved and ZB-V layouts. */
static inline int stage_of_chunk(const compile_ctx *cx, int mc)
{
    return strategy_stage_of_chunk(cx->s, mc);
}
static inline int compile_chunk_of(const compile_ctx *cx, int p, int k)
{
    return strategy_chunk_of_stage(cx->s, p, k);
}
/* The layers model chunk mc holds, lo .. hi - 1 (its slice's); whether it holds the embedding
 * (its copy's first) and the head (its copy's last). */
static inline int compile_chunk_lo(const compile_ctx *cx, int mc)
{
    return cx->chunk_first[strategy_slice_of_chunk(cx->s, mc)];
}
static inline int compile_chunk_hi(const compile_ctx *cx, int mc)
{
    return cx->chunk_first[strategy_slice_of_chunk(cx->s, mc) + 1];
}
static inline int compile_chunk_has_embedding(const compile_ctx *cx, int mc)
{
    return strategy_slice_of_chunk(cx->s, mc) == 0;
}
static inline int compile_chunk_has_head(const compile_ctx *cx, int mc)
{
    return strategy_slice_of_chunk(cx->s, mc) == cx->slices - 1;
}
/* Micro-batches through each chunk: M, or M / 2 under DualPipe (each copy's). */
static inline int compile_chunk_micros(const compile_ctx *cx)
{
    return strategy_chunk_micro_batches(cx->s, cx->M);
}
/* Whether pipeline transfers go both ways between neighbours (ZB-V, DualPipeV, DualPipe):
 * sends are posted ahead (non-blocking p2p) and each direction has its own companion pair. */
static inline int compile_two_way(const compile_ctx *cx)
{
    return strategy_vshape(cx->s) || strategy_two_copies(cx->s);
}
/* Whether the embedding and the head of a copy are on one stage (one stage, a V, DualPipe's
 * stages 0 and pp - 1): a tied head then shares the embedding's weight. */
static inline int compile_head_with_embedding(const compile_ctx *cx)
{
    return cx->pp == 1 || compile_two_way(cx);
}

/* Where ranks sit (ranks.c; compile_rank_of in compile.h). Expert parallelism's rank groups
 * (Megatron-Core's folding), the one place they are derived: a stage's ranks numbered
 * i = t + tp x d (tensor index fastest) are regrouped as i = et + etp x (e + ep x edp): et the
 * expert-tensor index, e the expert-parallel index (which experts), edp the
 * expert-data-parallel index. Returns i; compile_stage_rank maps i to a rank. */
int compile_expert_stage_index(const compile_ctx *cx, int et, int e, int edp);
/* The inverse: stage index i's expert-tensor, expert-parallel and expert-data-parallel
 * indices. */
void compile_expert_coords(const compile_ctx *cx, int i, int *et, int *e, int *edp);
int compile_stage_rank(const compile_ctx *cx, int i, int p);
/* The routed-expert load of the ranks at stage index i: the busiest rank's for EP index 0 (it
 * holds the busiest expert), the others' otherwise; 1 without an expert layout. */
double compile_expert_load(const compile_ctx *cx, int i);

/* Chunk templates (chunk.c), per GPU profile: the distinct (device, slowdown, expert load)
 * triples of the ranks, found by chunk_profiles_init (cx->prof_*, tmpl, built) and released
 * with the templates by chunk_profiles_free. */
void chunk_profiles_init(compile_ctx *cx);
void chunk_profiles_free(compile_ctx *cx);
/* Chunk mc's template on rank r's GPU, built the first time a rank of that GPU profile needs
 * it. Every profile cuts a chunk into the same segments; only their times differ. */
const chunk_template *chunk_template_of(compile_ctx *cx, int r, int mc);
/* The template of chunk mc on its first rank (replica 0, tensor index 0): what is the same on
 * every GPU (segments, buckets, units, parameters) is read from it, and the activations the
 * memory estimate counts (the first rank holds the busiest expert: the most of them). */
const chunk_template *compile_chunk_ref(compile_ctx *cx, int mc);
/* Whether a and b have the same segments (count, cuts, labels, parameters) and buckets. */
int chunk_template_same_shape(const chunk_template *a, const chunk_template *b);

/* What emit_plan's steps (compile.c, data parallelism in zero.c) hand each other. Tables
 * indexed by xidx (per simulated replica, tensor index, chunk, micro-batch) tie each pipeline
 * transfer to the unit that consumes it. */
typedef struct emit_state {
    size_t nx;
    uint32_t *fwd_first, *bwd_first; /* the consuming unit's first task */
    uint32_t *fwd_prev, *bwd_prev;   /* the receiver's task just before it: posts the receive */
    uint32_t *fwd_in, *bwd_in;       /* the transfer feeding it */
    int maxseg, maxfseg, maxbuckets;
    /* backward segment tasks (bwd_seg_index): gradient-ready points for DP buckets, every
     * micro-batch's under ZeRO 2 (gradients reduced each micro-batch), else the last one's */
    uint32_t *bwd_seg;
    int seg_mbs;      /* micro-batches bwd_seg holds: M, or 1 (the last) */
    uint32_t *segids; /* [maxseg * tp] scratch */
    uint32_t *gates;  /* [maxfseg * tp] scratch */
    /* data-parallel groups of (stage, tensor index) = p * tp + t: shard groups of `shard`
     * consecutive DP indices ([.. * n_shard_groups + g]), and with HSDP the replica groups of
     * the ranks holding the same shard ([.. * shard + j]; -1 without HSDP); -1 if dp == 1 */
    int *shard_group, *replica_group;
    uint32_t *gather;   /* ZeRO overlapped gathers: [(rank * mcs + mc) * maxbuckets + b], or NULL */
    uint32_t *last_dp;  /* per rank: its latest DP collective task (the stream runs in order) */
    uint32_t *opt_task; /* per rank */
    pipeline_unit *units;
    /* ZeRO-3: each stage's FSDP units in program order (fsdp_seq[p * fsdp_cap + k]), and for
     * every simulated member j = d * tp_sim + t of stage p the tasks of the k-th:
     * fsdp_task[((p * n_sim + j) * fsdp_cap + k) * 3 + FSDP_FIRST / FSDP_BEFORE / FSDP_LAST] */
    struct fsdp_step *fsdp_seq;
    int *fsdp_n; /* [pp]: steps per stage */
    int fsdp_cap;
    uint32_t *fsdp_task;
    int *fsdp_next; /* [pp * n_sim]: next step to record, per (stage, member) */
} emit_state;

/* One step of a stage's FSDP program: unit `unit` of chunk mc, forward or backward, for
 * micro-batch mb. */
typedef struct fsdp_step {
    int mc, unit, backward, mb;
} fsdp_step;

enum { FSDP_FIRST, FSDP_BEFORE, FSDP_LAST };

/* Index of backward segment `seg` of chunk mc, micro-batch mb at (d, t) in es->bwd_seg. */
size_t bwd_seg_index(const compile_ctx *cx, const emit_state *es, int d, int t, int mc, int mb,
                     int seg);

/* describe.c: the plan-level facts the report needs and the rank -> (stage, replica) maps into
 * out; the labels (cx->label_*) interned in cx->g. */
void compile_describe_plan(compile_ctx *cx, compiled_plan *out);
void compile_intern_labels(compile_ctx *cx);

/* Data parallelism (zero.c), the steps of emit_plan in order: the tables (init/free), the
 * groups, ZeRO 1/2's overlapped parameter gathers (before the pipeline), FSDP's per-unit
 * gathers and reduce-scatters (after it), the gradient buckets of ZeRO 0-2, DualPipe's
 * all-reduce between the model's two copies, the optimizer and
 * ZeRO 1/2's gather of the updated parameters. */
void zero_state_init(compile_ctx *cx, emit_state *es);
void zero_state_free(compile_ctx *cx, emit_state *es);
void zero_make_groups(compile_ctx *cx, emit_state *es);
void zero_emit_param_gathers(compile_ctx *cx, emit_state *es);
void zero_emit_fsdp(compile_ctx *cx, emit_state *es);
void zero_emit_grad_buckets(compile_ctx *cx, emit_state *es);
void zero_emit_copy_sync(compile_ctx *cx, emit_state *es);
void zero_emit_optimizer(compile_ctx *cx, const compiled_plan *out, emit_state *es);
void zero_emit_param_allgather(compile_ctx *cx, emit_state *es);
/* Sharded parameters a rank of stage p holds (all its chunks). */
double zero_stage_params(compile_ctx *cx, int p);
/* The part of it reduced and sharded over the expert-data-parallel groups. */
double zero_stage_expert_params(compile_ctx *cx, int p);

/* Expert parallelism in the graph (expert.c). The simulated ranks of each stage and their TP,
 * EP, ETP and EDP groups (cx->sim_rank, tp_group, ep_group, etp_group, edp_shard, edp_group,
 * edp_rep_group); free with compile_free_stage_groups. */
void compile_make_stage_groups(compile_ctx *cx);
void compile_free_stage_groups(compile_ctx *cx);
/* The expert groups of a stage, by kind. */
enum { KIND_EP, KIND_ETP, KIND_EDP };
/* The members of expert group `entry` of a stage, as stage indices: an EP group (entry
 * x etp + et) over its EP indices, an ETP group (x ep + e) over its expert-tensor indices, an
 * EDP group (e etp + et) over its expert-data-parallel indices. Under inner folding the
 * simulated ones first; returns their count (all of them otherwise). */
int compile_expert_members(const compile_ctx *cx, int kind, int entry, int *idx);
/* The collectives of an expert cut (CUT_EP_IN or CUT_EP_OUT) on stage p's simulated ranks:
 * member j waits for after[j] and its last collective becomes after[j]. */
void compile_emit_expert_cut(compile_ctx *cx, int p, int cut, int micro, uint32_t *after);

/* Context parallelism (context.c, docs/design-notes.md "Context parallelism"). The ops one
 * context rank runs (cp > 1), before tensor sharding: the model built on seq / cp tokens (every
 * op but the attention core divides along the sequence; the core is ring step 0, queries and
 * keys of seq / cp), with the full model's parameters. Fills out (free with
 * workload_graph_free). */
int context_rank_ops(const compile_ctx *cx, workload_graph *out, ps_error *err);
/* Whether op (of cx->wg) runs as ring steps: the attention core when cp > 1. */
int context_ring_op(const compile_ctx *cx, const workload_op *op);
/* The kernel of a ring step after the first, from the (sharded) step-0 core `op`: under a
 * causal mask half the tiles of the s/cp square of every head, unmasked (half the heads'
 * squares, no mask); without a mask the op itself. */
void context_ring_later_step(const workload_op *op, workload_op *out);
/* Ring bookkeeping for the plan (cx->rings), and its release. */
void context_rings_init(compile_ctx *cx);
void context_rings_free(compile_ctx *cx);
/* Emit ring segment sg on `rank` (its cp steps, each overlapping the transfer carrying the
 * next step's K/V to the next context rank; backward also their gradients): forward or
 * replay when cat is not CAT_BACKWARD. `after` (NONE for none) is what the segment waits for
 * besides the stream. Returns the first step; *end gets the ring's last task. */
uint32_t context_emit_ring(compile_ctx *cx, int rank, const segment *sg, task_category cat,
                           int micro, uint32_t after, uint32_t *end);
/* After every rank's segments: each ring step waits for the transfer from the previous context
 * rank, and a transfer for its receiver to reach the ring (NCCL's send/recv rendezvous). */
void context_link_rings(compile_ctx *cx);
/* Bytes of one K/V chunk a ring step passes on (a TP rank's K/V heads, seq / cp tokens). */
double context_kv_chunk_bytes(const compile_ctx *cx);

/* The simulated rank (stage index below n_sim) whose timeline folded rank i (stage index)
 * follows: i itself when simulated; with blocks i % n_sim; with stand-ins the one of the same
 * expert-tensor index and load (fold.c). */
int compile_fold_twin(const compile_ctx *cx, int i);
/* The computing rank whose timeline the rank at (tensor index t, data-context index d, stage p)
 * follows: itself when it computes; with TP folded tensor index 0 of its data-context index
 * modulo dp_sim; inner folding's or the expert stand-ins' twin (compile_fold_twin); with
 * blocks, the rank at its stage index modulo n_sim. */
int compile_twin_rank(const compile_ctx *cx, int t, int d, int p);
/* Stage index i moved by a tensor indices and b context indices (each modulo its degree; the
 * data index kept): the shifts inner folding shows to map the plan onto itself. */
int compile_shift_index(const compile_ctx *cx, int i, int a, int b);
/* Inner folding: the stage indices of replica 0 that do not compute and whose twin is stage
 * index `self`, into out (room for tp x cp); returns their count. */
int compile_twin_copies(const compile_ctx *cx, int self, int *out);
/* The pair set src[k] -> dst[k] (k < n) of such copies' transfers, marked invariant; -2 when n
 * is 0 (the tables' "none": -1 is "not made yet"). */
int compile_copies_pair_set(compile_ctx *cx, const int *src, const int *dst, int n);
/* Inner folding: the shift (*a, *b) that moves stage index i's twin onto i (i in replica 0). */
void compile_twin_shift(const compile_ctx *cx, int i, int *a, int *b);
/* The folded pipeline sends' and ring transfers' pair-set tables (pp_pairs, cp_pairs), made
 * once n_sim is known; compile_fold_free releases them with inner folding's tables. */
void compile_fold_tables(compile_ctx *cx);
void compile_fold_free(compile_ctx *cx);
/* The companion pairs of member j's pipeline send x from stage p to q (next 1, or previous 0):
 * with TP folded its tensor peers' sends, under inner folding the sends of every rank of
 * replica 0 whose twin it is; nothing otherwise. */
void compile_send_companions(compile_ctx *cx, uint32_t x, int j, int p, int q, int next);

/* The replicas simulated (fold.c): all of them, or with folding (opt) the first block closed
 * under the context rings and expert groups when the others provably behave like it: sets
 * dp_sim and n_sim. Needs cp, tp, dp, ep, etp, expert_layout. */
void compile_choose_simulated(compile_ctx *cx, const compile_options *opt);

/* PyTorch FSDP's copies around its collectives (fsdp_copy.c; ZeRO 3 with data.fsdp.version,
 * nothing otherwise). Bytes per element of the reduce-scatter: fsdp.reduce_dtype's, else
 * cx->grad_elem. */
double fsdp_reduce_elem(const compile_ctx *cx);
/* Around the FSDP step of stage p about to be recorded (emit_fsdp_units), on each simulated
 * member's compute stream: before its first task FSDP2's all-gather copy-out when the step
 * gathers (it becomes first[j], the task the gather gates); after its last, for a backward,
 * FSDP2's reduce-scatter copy-in (it becomes last[j], what the reduce-scatter waits for). */
void fsdp_copy_unit_open(compile_ctx *cx, const emit_state *es, int p, uint32_t *first,
                         uint32_t *after);
void fsdp_copy_unit_close(compile_ctx *cx, const emit_state *es, int p, uint32_t *last,
                          uint32_t *after);
/* On the DP stream of each simulated replica d of (p, t), for a unit of P parameters: right
 * before its all-gather the copy-in (waiting for dep[d]); before its reduce-scatter FSDP1's
 * cast and pre-divide (waiting for dep[d]); after the reduce-scatter (and HSDP's all-reduce)
 * the cast and accumulation of the shard. */
void fsdp_copy_gather_in(compile_ctx *cx, int p, int t, double P, int mb, const uint32_t *dep);
void fsdp_copy_reduce_pre(compile_ctx *cx, int p, int t, double P, int mb, const uint32_t *dep);
void fsdp_copy_reduce_post(compile_ctx *cx, int p, int t, double P, int mb);
/* Whether FSDP step st all-gathers its unit (zero.c). */
int zero_fsdp_gathers(const compile_ctx *cx, fsdp_step st);

/* ZB-V: schedule every stage's passes from its chunks' times (chunk.c), once the templates
 * exist; nothing for the other schedules. Freed by compile_orders_free. */
void compile_orders_init(compile_ctx *cx);
void compile_orders_free(compile_ctx *cx);
/* Stage p's unit order (at most pipeline_units of them) into out; returns how many. */
int compile_stage_order(const compile_ctx *cx, int p, pipeline_unit *out);
/* Every rank's memory (compile_estimate_memory of its stage's chunks) and its GPU's HBM into
 * out->memory and out->memory_capacity_of_rank. */
void compile_estimate_plan_memory(compile_ctx *cx, compiled_plan *out);
/* Per-GPU memory of a rank on stage p (needs the stage's templates). */
void compile_estimate_memory(const compile_ctx *cx, const chunk_template *const *stage_chunks,
                             int p, memory_estimate *me);

#endif
