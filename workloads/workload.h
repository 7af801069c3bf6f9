/* workload.h: models (a family plus dimensions) and the op graph a builder expands them into.
 * The op graph describes ONE micro-batch on the UNSHARDED model; the compiler shards it. */
#ifndef PROTOSIM_WORKLOAD_H
#define PROTOSIM_WORKLOAD_H

#include "../sim/base/error.h"
#include "../sim/base/vocab.h"
#include "../sim/base/yaml_read.h"

/* gpt: LayerNorm, GELU MLP, learned positions, biases, dropout, tied embeddings (GPT-2/3,
 * Megatron's GPT). bert: the same plus token types and the MLM head. llama: RMSNorm, SwiGLU
 * MLP, rotary positions, no biases, no dropout, untied input and output embeddings. The
 * family sets the defaults of the keys below; each can be overridden. dlrm: a recommendation
 * model (workload_dlrm below), read by its own keys and built by workload_build_dlrm. */
typedef enum { FAMILY_GPT, FAMILY_BERT, FAMILY_LLAMA, FAMILY_DLRM } model_family;
extern const enum_names model_family_names;

/* MLP activation. gelu, gelu_tanh and relu: two matrices (fc1, activation, fc2); only
 * `kernels: eager` tells them apart: fused kernels do any of them in one bias-activation pass.
 * gelu_tanh is the tanh approximation written as PyTorch ops (HuggingFace's gelu_new: 8
 * elementwise kernels each way). swiglu is gated: fc1 holds the gate and up projections
 * (2 x ffn_hidden outputs, one GEMM as Megatron's linear_fc1), silu(gate) * up, then fc2. */
/* squared_relu: relu(x)^2 without a gate (Nemotron-4), one fused kernel as Transformer
 * Engine's srelu, costed as gelu's */
typedef enum { ACT_GELU, ACT_GELU_TANH, ACT_RELU, ACT_SWIGLU, ACT_SQUARED_RELU } model_activation;
extern const enum_names model_activation_names;

/* Positions: a learned table (seq x hidden parameters, looked up and added), rotary embedding
 * applied to Q and K in every layer, or ALiBi (a per-head bias on the attention scores, no
 * parameters). */
typedef enum { POS_LEARNED, POS_ROTARY, POS_ALIBI } model_positions;
extern const enum_names model_positions_names;

/* Which layers a sliding window restricts (`sliding_window_layers`): all of them, or the even
 * ones (0, 2, ...) with full causal attention in the odd ones (GPT-OSS). */
typedef enum { WINDOW_ALL, WINDOW_ALTERNATE } model_window_layers;
extern const enum_names model_window_layers_names;

/* What the fused attention kernel issues (`attention_kernel`, with `attention: flash` only):
 * the GPU's native tensor-core path (cuDNN, FlashAttention-3, Transformer Engine on Hopper; any
 * fused kernel before it), or Ampere's warp-level MMA (mma.sync, FlashAttention-2: PyTorch's
 * SDPA flash backend and the flash-attn 2 package), which on Hopper reaches only part of the
 * peak the warp-group MMA (wgmma) reaches: devices.yaml `warp_mma_fraction`. */
typedef enum { ATTN_KERNEL_NATIVE, ATTN_KERNEL_WARP_MMA } model_attention_kernel;
extern const enum_names model_attention_kernel_names;

/* DLRM (workloads/dlrm.c). The id law of every table: `{distribution: uniform}` over its rows,
 * `{distribution: zipf, alpha: a}` (rank k drawn with probability k^-a / H(R, a)), or
 * `{unique_ratio: r}` (a measured share of unique ids in a batch, no rank information). */
typedef enum { IDS_UNIFORM, IDS_ZIPF, IDS_UNIQUE_RATIO } dlrm_id_law;
extern const enum_names dlrm_id_law_names;
/* The feature interaction: pairwise dot products of the (tables + 1) vectors (DLRM), their
 * concatenation, or DCNv2's low-rank cross layers over the concatenation. */
typedef enum { INTERACTION_DOT, INTERACTION_CAT, INTERACTION_DCN } dlrm_interaction;
extern const enum_names dlrm_interaction_names;

enum { DLRM_MAX_TABLES = 256, DLRM_MAX_MLP = 16 };

typedef struct workload_dlrm {
    int dense_features;
    int bottom_mlp[DLRM_MAX_MLP], n_bottom; /* output widths, input dense_features */
    int top_mlp[DLRM_MAX_MLP], n_top;       /* output widths, the last is 1 (one logit) */
    dlrm_interaction interaction;
    int dcn_layers, dcn_rank; /* dcn only */
    int n_tables;
    int rows[DLRM_MAX_TABLES];       /* rows per table */
    int dim[DLRM_MAX_TABLES];        /* embedding_dim per table */
    double pooling[DLRM_MAX_TABLES]; /* mean ids per sample per table (sum pooling) */
    dlrm_id_law ids;
    double alpha;                    /* zipf */
    double unique_ratio;             /* unique_ratio: unique ids / ids of a batch, in (0, 1] */
    precision_t embedding_precision; /* fp32, fp16 or bf16: storage and lookup */
} workload_dlrm;

/* A model as users write it (workloads/models/NAME.yaml or inline in a strategy). Every field
 * is resolved when read (workload_model_read) or set by workload_model_init: the builders
 * never guess. */
/* Whether the plan's recompute applies to op (transformer layers, and an MTP module's layer). */
/* Megatron-Core's recompute modules (--recompute-modules with --recompute-granularity selective;
 * transformer_config.py): the attention core ("core_attn", the default: the unfused core's
 * scores, softmax and dropout; a fused core keeps only its statistics and is in none), the
 * layer's input and pre-MLP norms ("layernorm": their outputs dropped, inputs kept) and MLA's
 * up-projections ("mla_up_proj": the latents' norms, the query and key/value up-projections and
 * the rotary assembly, run again from the kept latents), the dense MLP of a layer without experts
 * ("mlp": fc1, its activation and fc2 run again from the kept input) and the routed experts'
 * activation ("moe_act": run again from fc1's kept output, fc2's input dropped). */
enum {
    WL_RC_CORE_ATTN = 1u,
    WL_RC_LAYERNORM = 2u,
    WL_RC_MLA_UP_PROJ = 4u,
    WL_RC_MLP = 8u,
    WL_RC_MOE_ACT = 16u
};

#define WORKLOAD_OP_RECOMPUTABLE(op, layers)                                                       \
    ((op)->mtp || ((op)->layer >= 0 && (op)->layer < (layers)))

typedef struct workload_model {
    char name[64];
    model_family family;
    int layers, hidden, heads, seq, vocab;
    int ffn_hidden;      /* default 4 * hidden; required with swiglu */
    int flash_attention; /* `attention: flash`: fused attention, scores kept on chip */
    model_attention_kernel attention_kernel; /* `attention_kernel:` native (default) or
                                              * warp-mma; flash attention only */
    int eager_kernels;           /* `kernels: eager`: unfused PyTorch eager ops (HuggingFace
                                  * models): separate scale and mask passes on the attention
                                  * scores, dropout and residual add apart, activation as
                                  * written; default `kernels: fused` (Megatron's kernels) */
    int rmsnorm_fused;           /* `rmsnorm_kernel: fused` (RMSNorm models): one kernel even
                                  * under `kernels: eager` (PyTorch's nn.RMSNorm / F.rms_norm,
                                  * Apex, TE); `composite`, the eager default, is the RMSNorm
                                  * written as Python ops (torchtitan's, HuggingFace's) */
    int loss_logits;             /* `cross_entropy: logits` (under `kernels: eager`): the loss in
                                  * the logits' own precision (a model cast to bf16 called
                                  * without autocast: log_softmax reads and writes bf16,
                                  * accumulating in fp32); `fp32`, the default, upcasts (autocast,
                                  * an explicit .float(), Megatron's fused cross-entropy) */
    model_activation activation; /* `activation:` gelu (gpt, bert), swiglu (llama), ... */
    int kv_heads;                /* K/V heads (grouped-query attention); default heads */
    int head_dim;                /* per head; default hidden / heads. Q and O project to
                                  * heads x head_dim, K and V to kv_heads x head_dim */
    int tied_embeddings;         /* LM head shares the word embedding (gpt, bert: yes) */
    model_positions positions;   /* learned (gpt, bert), rotary (llama), alibi */
    int bias;                    /* biases on GEMMs and norms (gpt, bert: yes; llama: no) */
    int dropout;                 /* dropout after attention, MLP, embedding and on the scores
                                  * (gpt, bert: yes; llama: no) */
    /* Sliding-window attention (Mistral, GPT-OSS): in the layers `window_layers` names, each
     * query attends to the `sliding_window` positions ending at itself (q - W + 1 .. q), as
     * FlashAttention's window_size (W - 1, 0). 0: no window (full causal attention). Only with
     * flash attention on a causal (gpt, llama) model. */
    int sliding_window;
    model_window_layers window_layers;
    /* Mixture of experts (all 0 for a dense model): `experts` routed experts per MoE layer,
     * each an MLP of width ffn_hidden, `experts_topk` of them per token (top-k routing, no
     * token dropping unless `capacity_factor`); `shared_experts` MLPs of width ffn_hidden every
     * token goes through; the first `dense_layers` layers have a dense MLP of width
     * `dense_ffn_hidden` instead. `imbalance`: the busiest expert's load over the mean (1.0,
     * the default: perfect balance; at most experts). `capacity_factor`: each expert takes at
     * most that many times its balanced share (0: dropless). */
    int experts, experts_topk, shared_experts, dense_layers, dense_ffn_hidden;
    /* Multi-head latent attention (`attention: mla`, DeepSeek-V2/V3): Q from a latent of
     * q_lora_rank (0: projected from the hidden state directly), K and V from a shared latent of
     * kv_lora_rank, each head's query and key qk_nope_dim wide plus a decoupled rotary part of
     * qk_rope_dim (the key's shared by every head), values and output v_head_dim wide; the
     * latents RMS-normed. Then head_dim = qk_nope_dim + qk_rope_dim and kv_heads = heads. */
    int mla, q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    /* Multi-token prediction (DeepSeek-V3): mtp_layers sequential modules after the main model,
     * each predicting one more token: its two RMSNorms, the projection of [embedding; hidden]
     * (2 hidden -> hidden), one transformer layer, and the shared head's norm, logits and loss. */
    int mtp_layers;
    double capacity_factor, imbalance;
    workload_dlrm dlrm; /* family dlrm only; the transformer fields above are then 0 */
} workload_model;

/* The optimizer fused into an embedding table's backward, and its state per row element: sgd
 * none, adagrad one fp32 accumulator (FBGEMM's EXACT_ADAGRAD; the row-wise variant is not
 * modelled), adam two fp32 moments. */
typedef enum { EMB_UPDATE_SGD, EMB_UPDATE_ADAGRAD, EMB_UPDATE_ADAM } emb_update;
extern const enum_names emb_update_names;
int emb_update_state_words(emb_update u); /* fp32 words per row element: 0, 1, 2 */

/* One table's lookups in one micro-batch: what the lookup cost needs (sim/cost/cost_embedding.c). */
typedef struct workload_emb {
    double rows, dim;
    double elem_bytes; /* embedding_precision's bytes per element */
    double lookups;    /* ids looked up: micro-batch x pooling */
    double unique;     /* expected distinct rows among them (workload_dlrm_unique_rows) */
    double bags;       /* pooled outputs: the micro-batch */
    dlrm_id_law law;   /* for the share of lookups the L2 serves */
    double alpha;      /* zipf */
    emb_update update; /* the fused optimizer of the backward */
    /* Row-wise shards (sharded plans): the table's rows split evenly over this many GPUs, this
     * being one GPU's slice (rows stays the whole table's, for the id law; lookups and unique
     * are the slice's). 0 or 1: the whole table. */
    double row_shards;
    /* The update is not fused into the lookup's backward (`strategy.embedding.update: sparse`,
     * PyTorch's nn.Embedding(sparse=True) + torch.optim.SGD, as NVIDIA's DLRM): the backward
     * writes one fp32 gradient row per lookup, the optimizer scales them into a new tensor and
     * index-adds them into the table; amp_unscale: fp16 AMP's loss scaler first unscales them
     * (read and written). 0: the fused update. */
    int sparse_update, amp_unscale;
} workload_emb;

/* How an op's work divides under tensor parallelism (Megatron-LM layout). */
typedef enum {
    SPLIT_REPLICATED, /* every TP rank does the whole op (layernorm, dropout, residual) */
    SPLIT_SEQUENCE,   /* replicated, but divided by TP when sequence parallelism is on */
    SPLIT_COLUMN,     /* weight split on N (QKV, MLP fc1): no communication after */
    SPLIT_ROW,        /* weight split on K (attention proj, MLP fc2): all-reduce after */
    SPLIT_HEADS,      /* attention core divided by heads */
    SPLIT_VOCAB       /* embedding / LM head / loss over a vocab-parallel table */
} op_split;

typedef enum {
    OP_GEMM,      /* [batch x] (m x k) . (k x n) */
    OP_ATTENTION, /* QK^T, softmax, dropout, .V of one layer as batched GEMMs: batch=b*heads */
    OP_SOFTMAX,
    OP_LAYERNORM,   /* LayerNorm, or RMSNorm (family llama) */
    OP_ELEMENTWISE, /* residual add, gelu, swiglu, rotary embedding, bias */
    OP_DROPOUT,
    OP_EMBEDDING,    /* table lookup (forward), scatter-add (backward) */
    OP_LOSS,         /* softmax cross-entropy over the vocab */
    OP_EMBEDDING_BAG /* one recommendation table: ids looked up and sum-pooled (forward); the
                        pooled gradients scattered to the unique rows with the optimizer's
                        update fused in (backward, FBGEMM's TBE). Costed from `emb` */
} op_kind;

typedef struct workload_op {
    char name[48]; /* module path, e.g. "layers.3.mlp.fc1" */
    int layer;     /* transformer layer index; -1 embedding, layers for the head */
    op_kind kind;
    op_split split;
    double batch, m, n, k; /* GEMM/attention shape of the forward pass (batch=1 for GEMM) */
    double fwd_flops;      /* whole op, unsharded */
    double bwd_flops;      /* gradients w.r.t. input and weights */
    double fwd_bytes;      /* HBM bytes read+written by the forward kernel(s) */
    double bwd_bytes;
    double params;    /* parameter count held by this op */
    double act_bytes; /* activation bytes saved for backward (no recompute) */
    int kernels;      /* kernel launches in forward (backward assumed 2x) */
    int cuda_kernels; /* 1: `kernels` counts CUDA kernels (ops written kernel by kernel, as
                         DLRM's); 0: modelled kernels of Megatron's fused graph, about 2.5 CUDA
                         kernels each (sim/cost/cost.c). The transformer graph's ops stay 0 under
                         `kernels: eager` too: their counts leave out the small ops such models
                         also run (views made contiguous, casts, masks), which the 2.5 stands
                         for; counted as CUDA kernels, NeuSight's eager rows go from 6.0% to
                         8.3% (session 38, docs/accuracy.md) */
    /* The recompute modules (WL_RC_*) the op belongs to: under `recompute: selective` with one of
     * them in the plan's recompute_modules its forward runs again in backward and it keeps
     * rc_keep of act_bytes (the module's input it needs to run again); 0: none. */
    unsigned rc_module;
    double rc_keep;
    int rc_no_redo; /* 1: the module's recompute drops this op's saved input (another op of the
                       module produced it) but does not run this op again */
    /* Op-level selective checkpointing (`recompute: op`, torchtitan's `selective_ac_option =
     * "op"`; layer ops of dense llama models): the share of the op's forward run again in
     * backward (GEMMs: the share of N whose matmul PyTorch numbers even in the block; every
     * other op 1; fused attention 0), and the share of act_bytes kept. */
    double sac_redo, sac_keep;
    double v_dim; /* OP_ATTENTION: the head dimension of V and the output where it differs from
                     the query-key one in k (MLA: 128 against 192); 0: the same */
    int fused;    /* OP_ATTENTION as one kernel keeping scores on chip (FlashAttention) */
    int warp_mma; /* fused OP_ATTENTION whose GEMMs issue warp-level MMA (FlashAttention-2,
                         `attention_kernel: warp-mma`): at the device's warp_mma_fraction */
    int gram;     /* OP_GEMM of one operand with itself, Z = X X^T per batch entry (DLRM's dot
                         interaction): X is read once, and the backward is ONE GEMM,
                         dX = (dZ + dZ^T) X, of the forward's FLOPs */
    int causal;   /* OP_ATTENTION: each query attends to itself and earlier positions only
                         (decoders; BERT's encoder attends everywhere) */
    int window;   /* OP_ATTENTION (causal, fused): each query attends to the `window`
                         positions ending at itself only; 0: no window */
    int megatron_softmax; /* OP_ATTENTION: Megatron's fused scale-mask-softmax, which falls back
                               to PyTorch ops for shapes its kernel refuses (checked when
                               sharding): 1 causal mask, 2 padding mask, 0 not used */
    int fp8_gemm;       /* a linear layer of a transformer layer: an FP8 GEMM under `precision: fp8`
                     (Transformer Engine's fp8_autocast covers the layers, not the LM head) */
    double tied_params; /* part of params shared with another op (an LM head tied to the
                             word embedding): counted once in the model's total; a pipeline
                             stage without that op holds its own copy (Megatron) */
    /* The part of the op that belongs to the K/V heads (grouped-query attention), included in
     * the fields above: the N width of a GEMM (its FLOPs, bytes, parameters and activations
     * follow the shape), or for other ops their FLOPs, bytes and activations. With fewer K/V
     * heads than TP ranks each rank holds and computes the K/V head its query heads use:
     * sharding multiplies this part by tp / kv_heads before dividing by tp. */
    int kv_heads; /* 0: the op has no K/V part */
    /* A routed-expert op (the experts' grouped GEMMs and their activation): batch is the
     * number of experts, m the mean tokens per expert. Expert parallelism divides batch and
     * scales m to the busiest rank's load (workload_expert_rank_load). */
    int expert;
    /* An op of a multi-token-prediction module's transformer layer (numbered `layers`, the
     * head's): recomputed under the plan's recompute as the layers are (Megatron-Core's
     * MultiTokenPredictionLayer checkpoints it). */
    int mtp;
    /* A GEMM whose weight is another op's on the same stage (MTP's output head uses the main
     * head's): no parameters of its own, but a weight gradient computed all the same. */
    int shares_weight;
    struct {
        double n, fwd_flops, bwd_flops, fwd_bytes, bwd_bytes, act_bytes;
    } kv;
    workload_emb emb; /* OP_EMBEDDING_BAG only */
} workload_op;

typedef struct workload_graph {
    workload_model model;
    int micro_batch;
    precision_t precision;
    workload_op *ops; /* forward order */
    int n_ops;
    double total_params;         /* each parameter once (tied copies not counted again) */
    double active_params;        /* those one token uses: experts_topk of the routed experts */
    double fwd_flops, bwd_flops; /* sums over ops, one micro-batch */
} workload_graph;

/* A model of `family` with the family's defaults (activation, positions, bias, dropout, tied
 * embeddings), kv_heads = heads, head_dim = hidden / heads (0 when not divisible: set it),
 * ffn_hidden = 4 * hidden unless the activation is gated (then 0: set it). For models built in
 * code; files and inline models go through workload_model_read. */
void workload_model_init(workload_model *m, model_family family, int layers, int hidden, int heads,
                         int seq, int vocab);

/* Whether layer l has a mixture-of-experts MLP (experts > 0 and l >= dense_layers). */
int workload_layer_is_moe(const workload_model *m, int l);
/* The sliding window of layer l's attention (0: full): sliding_window in every layer, or under
 * `alternate` in the even layers only. */
int workload_layer_window(const workload_model *m, int l);

/* The routed-expert load of the busiest of `ep` expert-parallel ranks (each holding experts /
 * ep experts), over the load of one rank under perfect balance (mean x experts / ep): the
 * busiest expert carries min(imbalance, capacity_factor) x the mean (capacity drops the rest),
 * the other experts share the remaining tokens evenly, and the busiest rank holds the busiest
 * expert and experts / ep - 1 others. 1.0 under balance or with ep == 1. */
double workload_expert_rank_load(const workload_model *m, int ep);
/* The load of each of the other ep - 1 ranks under the same rule (they hold experts / ep
 * experts of (experts - busiest) / (experts - 1) mean loads each), over a balanced rank's. */
double workload_expert_other_rank_load(const workload_model *m, int ep);

/* Parse a model mapping with the located reader; `path` is the mapping's dotted path in its
 * document ("" in a model file, "workload" inline in a strategy), so errors name
 * "workload.hidden" or "hidden". Unknown or repeated keys, missing or non-positive dimensions
 * and unknown enum values are errors at their line and column, and so are what is not
 * modelled (`attention: mla`), kv_heads not dividing heads, swiglu without ffn_hidden, and the
 * mixture-of-experts rules: a MoE key without `experts`, experts without experts_topk, topk
 * above experts, imbalance outside [1, experts], dense_layers not below layers or without
 * dense_ffn_hidden (and the width without the layers); sliding_window_layers without
 * sliding_window, a sliding window without `attention: flash` or on bert, and attention_kernel
 * without `attention: flash`. The one model parser: files and inline models both go through it. */
int workload_model_read(yread_ctx *c, ynode *node, const char *path, workload_model *out);
/* The same for a whole document's node, path "" (`file` names the document for messages). */
int workload_model_from_yaml(ydoc *doc, ynode *node, const char *file, workload_model *out,
                             ps_error *err);
/* Load workloads/models/NAME.yaml (searched in data_dir/workloads/models) or a path. */
int workload_model_load(const char *name_or_path, const char *data_dir, workload_model *out,
                        ps_error *err);

/* The rules workload_build relies on, for models however made (files and inline models have
 * passed them with located errors already): positive dimensions, kv_heads dividing heads,
 * consistent mixture-of-experts keys, a sliding window only with flash attention on a causal
 * model, a warp-mma attention kernel only with flash attention, a positive micro-batch. Errors name the field, without a location. */
int workload_model_check(const workload_model *m, int micro_batch, ps_error *err);

/* Expand a model into the op graph of one micro-batch. Caller frees with workload_graph_free. */
int workload_build(const workload_model *m, int micro_batch, precision_t prec, workload_graph *out,
                   ps_error *err);
void workload_graph_free(workload_graph *g);

/* ---- DLRM (workloads/dlrm.c) ---- */

/* The keys of a `family: dlrm` mapping (the family key already read): dense_features,
 * bottom_mlp, top_mlp, interaction (+ dcn_layers, dcn_rank for dcn), embedding_dim, tables,
 * pooling, ids, embedding_precision; all required (no defaults), each error located. */
int workload_dlrm_read(yread_ctx *c, ynode *node, const char *path, workload_model *m);
/* Expected distinct rows among n ids drawn independently from a table of r rows under the law
 * (uniform: r (1 - (1 - 1/r)^n); zipf: sum over ranks of 1 - (1 - p_k)^n, exact over the first
 * ranks and an integral over the tail; unique_ratio: ratio x n, at most r). */
double workload_dlrm_unique_rows(dlrm_id_law law, double alpha, double unique_ratio, double r,
                                 double n);
/* Share of the ids that fall on the `hot` most likely rows of r (uniform: hot / r; zipf:
 * H(hot, alpha) / H(r, alpha)). 1 when hot >= r. Not defined for unique_ratio (no ranks). */
double workload_dlrm_hot_share(dlrm_id_law law, double alpha, double r, double hot);
/* The op graph of one micro-batch of a DLRM with its embedding tables updated by `update`. */
int workload_build_dlrm(const workload_model *m, int micro_batch, precision_t prec,
                        emb_update update, workload_graph *out, ps_error *err);

/* The columns [0, share x N) of GEMM `op` as a GEMM of their own (FLOPs, bytes, parameters and
 * activations follow N), share in (0, 1]: what op-level selective checkpointing recomputes of a
 * fused projection (the K of a QKV GEMM, the up half of gate-and-up). */
void workload_op_gemm_slice(const workload_op *op, double share, workload_op *out);
/* What op-level selective checkpointing runs again of layer op `op` in backward: op itself
 * (sac_redo 1), its N slice written into *tmp (0 < sac_redo < 1, GEMMs only), or NULL. */
const workload_op *workload_op_sac_part(const workload_op *op, workload_op *tmp);
/* The part of `op` one tensor-parallel rank runs: shape, FLOPs, bytes, params and activations
 * divided as its split says (SPLIT_SEQUENCE only when sequence_parallel; SPLIT_VOCAB only when
 * vocab_parallel), its K/V part replicated first when tp > kv_heads (tp must then be a
 * multiple of kv_heads, and otherwise kv_heads a multiple of tp: strategy_validate checks).
 * tp == 1 copies the op. */
void workload_op_shard(const workload_op *op, int tp, int sequence_parallel, int vocab_parallel,
                       workload_op *out);
/* The part of a routed-expert op (op->expert) one rank runs under expert parallelism
 * (Megatron-Core's folding): its experts / ep experts, each split over etp ranks (fc1 and the
 * activation on their columns, fc2 on its rows), on the tokens its ep x etp group gathers: a
 * rank of the tensor group holds tokens / tp (sequence parallelism), the all-to-all brings its
 * experts' share from ep ranks and the expert-tensor all-gather etp of those, so the mean rows
 * per expert grow by ep x etp / tp, and by `load` (workload_expert_rank_load) on an unbalanced
 * rank. FLOPs: the op's x load / tp; parameters: the op's / (ep x etp). */
void workload_op_shard_expert(const workload_op *op, int tp, int ep, int etp, double load,
                              workload_op *out);

#endif
