/* strategy.h: the strategy tree users write (DESIGN.md section 3), parsed and validated.
 * Every field keeps the line and column it came from so later checks can point at it. */
#ifndef PROTOSIM_STRATEGY_H
#define PROTOSIM_STRATEGY_H

#include <stdint.h>

#include "../sim/base/error.h"
#include "../topology/cluster.h"
#include "../workloads/workload.h"

typedef enum {
    SCHED_GPIPE,
    SCHED_1F1B,
    SCHED_INTERLEAVED,
    SCHED_ZBH1,
    SCHED_ZBH2,
    SCHED_ZBV,
    SCHED_DUALPIPEV,
    SCHED_DUALPIPE
} pipeline_schedule;
/* Each enum's one name table (the YAML spelling), indexed by value: vocab.h's enum_name and
 * enum_parse look them up. */
extern const enum_names schedule_names, recompute_names, optimizer_names, parallel_axis_names;
/* none; selective: Megatron's (the attention core); full: every layer op replayed; op:
 * op-level selective checkpointing, torchtitan's (workload_op sac_redo / sac_keep) */
typedef enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_OP } recompute_mode;
typedef enum { AXIS_TENSOR, AXIS_DATA, AXIS_PIPELINE, AXIS_CONTEXT } parallel_axis;
/* OPT_NONE: no optimizer step or state (to compare with measurements that exclude it).
 * OPT_ADAGRAD: dlrm plans only (one fp32 accumulator per parameter; strategy_validate). */
typedef enum { OPT_ADAM, OPT_SGD, OPT_NONE, OPT_ADAGRAD } optimizer_kind;
/* strategy.embedding.sharding (dlrm plans, issue 13; strategies/compile/dlrm_plan.c). */
typedef enum {
    EMB_SHARD_TABLE_WISE,
    EMB_SHARD_ROW_WISE,
    EMB_SHARD_COLUMN_WISE,
    EMB_SHARD_TABLE_ROW_WISE,
    EMB_SHARD_DATA_PARALLEL
} emb_sharding;
extern const enum_names emb_sharding_names;
/* strategy.embedding.placement: which GPU owns each table (table-wise). EXPLICIT: a list, the
 * GPU of table 0, 1, ... (strategy.embedding_gpu). */
typedef enum {
    EMB_PLACE_GREEDY,
    EMB_PLACE_ROUND_ROBIN,
    EMB_PLACE_MEMORY_BALANCED,
    EMB_PLACE_EXPLICIT
} emb_placement;
extern const enum_names emb_placement_names;

/* A `children` entry: overrides applied to a subtree selected by module path.
 * Paths: "layers.A-B" / "layers.N" (inclusive layer range), "embedding", "head". */
typedef struct strategy_override {
    char path[64];
    src_loc loc;
    int first_layer, last_layer; /* resolved range; -1/-1 for embedding, L/L for head */
    int has_recompute;
    recompute_mode recompute;
    int has_vocab_parallel;
    int vocab_parallel;
} strategy_override;

typedef struct strategy {
    char file[512];
    char data_dir[512];   /* where workloads/models lives (for named workloads) */
    workload_model model; /* resolved: named, path, or inline */
    src_loc workload_loc;

    int global_batch, micro_batch;
    src_loc batch_loc;
    precision_t precision;      /* of weights, activations, gradients, optimizer and communication;
                              bf16 under `precision: fp8` or `fp4` (strategy_set_precision) */
    int fp8;                    /* `precision: fp8` or `fp4`: the transformer layers' GEMMs run in
                              low precision, gemm_precision */
    precision_t gemm_precision; /* PREC_FP8 or PREC_FP4 when fp8 */
    src_loc precision_loc;
    optimizer_kind optimizer;
    src_loc optimizer_loc; /* the value; line 0: not written */
    /* `master_weights: false`: no fp32 master copy; weights, gradients and optimizer states all
     * in the plan's (bf16/fp16) precision, as a "pure bf16" script keeps them. Default 1. */
    int master_weights;
    src_loc master_loc;
    /* `fp8_attention: true` (Megatron-Core's --fp8-dot-product-attention, Transformer Engine's
     * FP8 fused attention): the fused attention core's GEMMs at the FP8 rate, its Q, K, V, O and
     * their gradients in FP8; needs `precision: fp8` or `fp4` and `attention: flash`. */
    int fp8_attention;
    src_loc fp8_attention_loc;

    /* strategy.embedding (dlrm only): has_embedding 0 when the block is absent (then the
     * tables sit on the one GPU, their update fused into the lookup's backward) */
    int has_embedding;
    emb_sharding embedding_sharding;
    src_loc embedding_loc; /* the block */
    src_loc sharding_loc;  /* the sharding's value */
    /* placement (table-wise): has_placement 0 when not written; EXPLICIT fills embedding_gpu
     * and the location of each list item (checked against data.degree by strategy_validate) */
    int has_placement;
    emb_placement placement;
    src_loc placement_loc;
    int embedding_gpu[DLRM_MAX_TABLES];
    src_loc embedding_gpu_loc[DLRM_MAX_TABLES];
    /* shards: column-wise, the column shards of each table (0: not written) */
    int embedding_shards;
    src_loc shards_loc;
    /* children "tables.N" / "tables.A-B" (dlrm): a table's own sharding (and shards) instead
     * of the root's where table_has_sharding[t]; table_loc the child's key */
    unsigned char table_has_sharding[DLRM_MAX_TABLES];
    emb_sharding table_sharding[DLRM_MAX_TABLES];
    int table_shards[DLRM_MAX_TABLES];
    src_loc table_loc[DLRM_MAX_TABLES], table_shards_loc[DLRM_MAX_TABLES];
    char table_path[DLRM_MAX_TABLES][24]; /* the child's key, "tables.0-2" */
    int has_table_children;
    src_loc table_children_loc; /* the children mapping */
    /* bottom_mlp_gpu: the GPU running the bottom MLP over the whole batch, -1 when not given
     * (the bottom MLP data-parallel like the top one) */
    int bottom_mlp_gpu;
    src_loc bottom_mlp_gpu_loc;
    /* update: sparse (1): the tables' update is not fused into the lookup's backward (a sparse
     * gradient row per lookup, then torch.optim.SGD; sim/cost/cost_embedding.c); 0: fused */
    int embedding_sparse_update;
    src_loc embedding_update_loc;

    int tp; /* tensor.degree */
    int sequence_parallel;
    int vocab_parallel;  /* tensor.vocab_parallel (root default 1) */
    int tp_comm_overlap; /* tensor.comm_overlap: TP collectives overlap their GEMMs */
    src_loc tp_loc;

    int pp; /* pipeline.degree */
    pipeline_schedule schedule;
    int virtual_stages; /* 1 unless interleaved */
    src_loc pp_loc;
    src_loc schedule_loc, virtual_stages_loc; /* where the schedule rules point */
    /* Uneven stages (strategy_chunk_layers; docs/design-notes.md "Uneven pipeline stages"):
     * Megatron-Core's account_for_embedding / account_for_loss (the embedding, the loss
     * counted as one more layer in the even split) and first_stage_layers / last_stage_layers
     * (0: not given), or `layers`, the transformer layers of every model chunk in model order
     * (heap-owned, n_chunk_layers entries; NULL when not given). */
    int account_embedding, account_loss;
    int first_stage_layers, last_stage_layers;
    int *chunk_layers, n_chunk_layers;
    src_loc account_embedding_loc, account_loss_loc, first_stage_loc, last_stage_loc,
        chunk_layers_loc;

    /* context.degree (strategies/compile/context.c): the sequence split in cp chunks, K/V passed
     * around the ring of the cp ranks during attention; they hold the same weights, so
     * gradients reduce (and ZeRO shards) over data x context */
    int cp;
    src_loc cp_loc;

    int dp;   /* data.degree */
    int zero; /* 0..3: optimizer states, + gradients, + parameters sharded (docs/design-notes.md) */
    int shard_degree; /* data.shard_degree (HSDP): shard over groups of this many DP ranks,
                         replicate across them; 0 when not given (the whole DP group) */
    double bucket_mb;
    int dp_overlap;
    int overlap_param_gather; /* ZeRO 1/2: gather parameters under the next forward */
    src_loc dp_loc;
    /* where the ZeRO rules point (the key's value; line 0 when the key was not written) */
    src_loc zero_loc, shard_loc, dp_overlap_loc, gather_loc;
    /* data.fsdp (ZeRO 3; docs/design-notes.md, "FSDP as implemented"): which PyTorch FSDP ran.
     * version 0 (the section not written): the bare model, per-unit collectives and nothing
     * else; 1: FullyShardedDataParallel (flat parameters); 2: fully_shard. reshard_after_forward
     * (default 1): gathered again for the backward; reduce_bf16: reduce_dtype bf16 (default
     * fp32); float8_all_gather: refused (not modelled). */
    int fsdp_version, fsdp_reshard, fsdp_reduce_bf16, fsdp_float8_gather;
    src_loc fsdp_loc, fsdp_version_loc, fsdp_reshard_loc, fsdp_reduce_loc, fsdp_float8_loc;

    /* expert.degree / expert.tensor (MoE models): experts spread over ep ranks, each expert's
     * matrices split over etp, the ep x etp ranks taken from a stage's tensor x data ranks
     * (Megatron-Core's folding); the rest (tp x dp / (ep x etp)) is the expert-data-parallel
     * group reducing expert gradients. Both 1 by default. */
    int ep, etp;
    src_loc ep_loc, etp_loc; /* the values, else the section; line 0: not written */
    /* expert.overlap_a2a: Megatron-Core's --overlap-moe-expert-parallel-comm (combined 1F1B:
     * a micro-batch's forward merged with another's backward, layer by layer, so each one's
     * dispatch and combine all-to-alls run on a communication stream beside the other's
     * compute; one more warm-up forward). expert.delay_wgrad: --delay-wgrad-compute (the
     * backward's weight-gradient GEMMs run after the all-to-all their input gradients feed,
     * which then waits for the input gradients only; refused: not modelled yet). 0 when not
     * written. */
    int overlap_a2a, delay_wgrad;
    src_loc overlap_a2a_loc, delay_wgrad_loc; /* the values; line 0: not written */

    recompute_mode recompute;
    src_loc recompute_loc, bucket_loc; /* the values; line 0: not written */
    /* recompute_modules (with recompute: selective): the WL_RC_* modules recomputed
     * (Megatron-Core's --recompute-modules), WL_RC_CORE_ATTN unless written */
    unsigned recompute_modules;
    src_loc recompute_modules_loc;
    parallel_axis order[4]; /* order[0] varies fastest across ranks */

    strategy_override *overrides;
    int n_overrides;
} strategy;

/* A plan's parallel layout and knobs, the fields reports, sweeps and merges name (one JSON
 * writer and reader for them: cli/out_plan.c). Plain data. */
typedef struct plan_desc {
    int tp, pp, dp, cp;
    int micro_batch, global_batch;
    int schedule;       /* pipeline_schedule */
    int virtual_stages; /* 1 unless interleaved */
    int zero;
    int shard_degree; /* data.shard_degree (HSDP); 0: ZeRO shards over the whole DP group */
    int recompute;    /* recompute_mode */
    int sequence_parallel;
    double bucket_mb;
    precision_t precision;
    int ep, etp;      /* expert.degree, expert.tensor (1, 1 without experts) */
    int dense_tables; /* dlrm: embedding {sharding: data-parallel} (replicated, dense grads) */
    /* dlrm: strategy.embedding's sharding and placement (emb_sharding, emb_placement); -1 when
     * not written (no embedding block, no placement) and for other models */
    int emb_sharding, emb_placement;
    int emb_shards; /* dlrm: strategy.embedding.shards (column-wise); 0 when not written */
} plan_desc;

/* A dlrm table's sharding (its child's, else the root's; the root's must exist) and its column
 * shards (column-wise; else 1), with where they were written (the child's key or the root's
 * value). */
emb_sharding strategy_table_sharding(const strategy *s, int t, src_loc *where);
int strategy_table_shards(const strategy *s, int t, src_loc *where);

/* The plan_desc of a strategy's root. */
void strategy_plan_desc(const strategy *s, plan_desc *out);

/* Parse and check what can be checked without a cluster: schema, types, enums, divisibility
 * of heads by TP and of layers by PP x virtual stages, batch by micro x DP. data_dir is the
 * project's data root (for `workload: NAME`). Caller frees with strategy_free. */
int strategy_load(const char *path, const char *data_dir, strategy *out, ps_error *err);
void strategy_free(strategy *s);
/* The same from a mapping inside an already parsed YAML document (an inline strategy, e.g. a
 * sweep file's `base:`); locations point into `file`, the document's file. */
int strategy_load_node(ydoc *doc, ynode *root, const char *file, const char *data_dir,
                       strategy *out, ps_error *err);
/* THE plan-validity rules, the one place they are written: degrees >= 1; the schedule's
 * (virtual stages only when interleaved, and then >= 2 of them and >= 2 stages); ZeRO stage,
 * shard degree (needs ZeRO, divides DP) and what each stage composes with (ZeRO 2/3 not with a
 * pipeline, overlap_param_gather only with ZeRO 1/2, ZeRO 3 only with overlap) and bucket size; heads divisible by TP, the layers split over
 * PP x virtual stages (strategy_chunk_layers); the global batch by micro
 * x DP and, interleaved, the micro-batches per DP rank by PP; expert parallelism (a MoE model;
 * expert degree dividing experts; expert degree x expert tensor dividing tensor x data; expert
 * tensor dividing ffn_hidden; sequence parallelism with tensor parallelism, as Megatron-Core;
 * an expert layout, ep > 1 or etp != tp, not with ZeRO 3 or HSDP); context parallelism (the
 * sequence divisible by 2 x context, flash attention). strategy_load, the sweep
 * enumerator and the compiler call it. Errors point at the loaded locations of the fields. */
int strategy_validate(const strategy *s, ps_error *err);
/* Deep copy (overrides and chunk_layers are heap-owned); free dst with strategy_free. */
void strategy_clone(const strategy *src, strategy *dst);

/* The GPUs the plan takes: tp * cp * pp * dp (INT64_MAX / 2 when that overflows or a degree is
 * negative). */
int64_t strategy_gpus(const strategy *s);
/* Check the plan against the number of GPUs: tp * cp * pp * dp must equal it. */
int strategy_check_gpus(const strategy *s, int gpus, ps_error *err);
/* Check the plan against the cluster's GPUs: an fp8 plan needs FP8 tensor cores on every GPU
 * (an error at the strategy's `precision`, naming the GPU and its model), a dlrm plan the L2
 * size, and `attention_kernel: warp-mma` the GPUs' warp_mma_fraction (errors at `workload`). */
int strategy_check_devices(const strategy *s, const cluster *c, ps_error *err);

/* Whether the schedule places two chunks a stage in a V (ZB-V, DualPipeV). */
static inline int strategy_vshape(const strategy *s)
{
    return s->schedule == SCHED_ZBV || s->schedule == SCHED_DUALPIPEV;
}
/* DualPipe (bidirectional): two copies of the model, each split into pp stages, the first fed
 * at stage 0 and the second at stage pp - 1; model chunk mc < pp is the first copy's stage mc
 * (on stage mc), chunk pp + k the second copy's stage k (on stage pp - 1 - k): the same
 * placement as the V, each chunk a whole stage's layers. */
static inline int strategy_two_copies(const strategy *s)
{
    return s->schedule == SCHED_DUALPIPE;
}
/* Model chunks each pipeline stage holds: the interleaved schedule's virtual stages, two in a V
 * (ZB-V, DualPipeV: stage p holds chunks p and 2 pp - 1 - p) or under DualPipe (the same
 * chunks, one of each copy), otherwise one. */
static inline int strategy_chunks_per_stage(const strategy *s)
{
    return s->schedule == SCHED_INTERLEAVED               ? s->virtual_stages
           : strategy_vshape(s) || strategy_two_copies(s) ? 2
                                                          : 1;
}
/* The distinct slices of layers the chunks hold: one a chunk, but pp under DualPipe (chunks mc
 * and pp + mc hold the same, slice mc mod pp). */
static inline int strategy_layer_slices(const strategy *s)
{
    return strategy_two_copies(s) ? s->pp : s->pp * strategy_chunks_per_stage(s);
}
static inline int strategy_slice_of_chunk(const strategy *s, int mc)
{
    return strategy_two_copies(s) ? mc % s->pp : mc;
}
/* The model chunk stage p holds as its k-th, and the stage holding model chunk mc: k pp + p
 * (mc mod pp), or a V (p, 2 pp - 1 - p). Under DualPipe chunk 0 is the one whose copy the stage
 * meets first (its position min(p, pp - 1 - p) from that copy's start, the order's phase 0). */
static inline int strategy_chunk_of_stage(const strategy *s, int p, int k)
{
    if (strategy_two_copies(s) && 2 * p >= s->pp)
        k = 1 - k;
    if (strategy_vshape(s) || strategy_two_copies(s))
        return k == 0 ? p : 2 * s->pp - 1 - p;
    return k * s->pp + p;
}
static inline int strategy_stage_of_chunk(const strategy *s, int mc)
{
    if (strategy_vshape(s) || strategy_two_copies(s))
        return mc < s->pp ? mc : 2 * s->pp - 1 - mc;
    return mc % s->pp;
}
/* The chunk a micro-batch's forward goes to after chunk mc, and the one before it; -1 at its
 * copy's (or the model's) end. */
static inline int strategy_next_chunk(const strategy *s, int mc)
{
    int mcs = s->pp * strategy_chunks_per_stage(s);
    if (strategy_two_copies(s))
        return mc % s->pp == s->pp - 1 ? -1 : mc + 1;
    return mc + 1 < mcs ? mc + 1 : -1;
}
static inline int strategy_prev_chunk(const strategy *s, int mc)
{
    if (strategy_two_copies(s))
        return mc % s->pp == 0 ? -1 : mc - 1;
    return mc > 0 ? mc - 1 : -1;
}
/* Micro-batches through each model chunk: all of them, or under DualPipe each copy's half. */
static inline int strategy_chunk_micro_batches(const strategy *s, int micro)
{
    return strategy_two_copies(s) ? micro / 2 : micro;
}

/* The precision as users write it: `fp8` is bf16 mixed precision with FP8 GEMMs (Transformer
 * Engine's fp8_autocast), `fp4` the same with NVFP4 GEMMs (Transformer Engine's NVFP4 recipe):
 * precision bf16, the fp8 flag and gemm_precision. strategy_precision reads it back. */
void strategy_set_precision(strategy *s, precision_t p);
precision_t strategy_precision(const strategy *s);

/* The precision op runs at: FP8 for the fused attention core under fp8_attention, the plan's
 * gemm_precision for the layers' GEMMs under fp8/fp4, else the plan's precision. */
static inline precision_t strategy_op_precision(const strategy *s, const workload_op *op)
{
    if (s->fp8_attention && op->kind == OP_ATTENTION && op->fused)
        return PREC_FP8;
    return s->fp8 && op->fp8_gemm ? s->gemm_precision : s->precision;
}

/* Recompute mode and vocab parallelism in force for a layer (-1 embedding, L head). */
recompute_mode strategy_recompute_for_layer(const strategy *s, int layer);
/* Whether selective recompute runs op's forward again in backward (and drops all but rc_keep
 * of its saved activations): a layer op, selective recompute in force for its layer, the op in
 * one of the plan's recompute_modules. */
static inline int strategy_op_recomputed(const strategy *s, const workload_op *op, int layers)
{
    return WORKLOAD_OP_RECOMPUTABLE(op, layers) &&
           strategy_recompute_for_layer(s, op->layer) == RECOMPUTE_SELECTIVE &&
           (op->rc_module & s->recompute_modules) != 0;
}
/* Whether selective recompute runs op's forward again in backward: recomputed, and not an op
 * whose saved input another op of its module produced (rc_no_redo). */
static inline int strategy_op_runs_again(const strategy *s, const workload_op *op, int layers)
{
    return strategy_op_recomputed(s, op, layers) && !op->rc_no_redo;
}
int strategy_vocab_parallel_for_layer(const strategy *s, int layer); /* last match wins */

/* Transformer layers of each model chunk, pp x virtual stages of them in model order (chunk
 * k * pp + p is stage p's k-th; the first holds the embedding, the last the LM head and loss):
 * the even split, or the pipeline keys' uneven one. An impossible split is an error at its
 * key. count may be NULL (only check). */
int strategy_chunk_layers(const strategy *s, int *count, ps_error *err);
int strategy_micro_batches(const strategy *s); /* global / (micro * dp) */
/* The ranks ZeRO shards over: data.shard_degree when given, else data x context (the ranks
 * holding the same weights). */
int strategy_shard_degree(const strategy *s);

const char *schedule_name(pipeline_schedule s);
const char *recompute_name(recompute_mode r);

#endif
