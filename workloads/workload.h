/* workload.h: models (a family plus dimensions) and the op graph a builder expands them into.
 * The op graph describes ONE micro-batch on the UNSHARDED model; the compiler shards it. */
#ifndef PROTOSIM_WORKLOAD_H
#define PROTOSIM_WORKLOAD_H

#include <yaml.h>

#include "../sim/base/error.h"
#include "../sim/base/vocab.h"
#include "../sim/base/yaml_read.h"

typedef enum { FAMILY_GPT, FAMILY_BERT } model_family;
extern const enum_names model_family_names;

/* MLP activation. Only `kernels: eager` tells them apart: fused kernels do any of them in one
 * bias-activation pass. gelu_tanh is the tanh approximation written as PyTorch ops
 * (HuggingFace's gelu_new: 8 elementwise kernels each way). */
typedef enum { ACT_GELU, ACT_GELU_TANH, ACT_RELU } model_activation;
extern const enum_names model_activation_names;

/* A model as users write it (workloads/models/NAME.yaml or inline in a strategy). */
typedef struct workload_model {
    char name[64];
    model_family family;
    int layers, hidden, heads, seq, vocab;
    int ffn_hidden;              /* default 4 * hidden */
    int flash_attention;         /* `attention: flash`: fused attention, scores kept on chip */
    int eager_kernels;           /* `kernels: eager`: unfused PyTorch eager ops (HuggingFace
                                  * models): separate scale and mask passes on the attention
                                  * scores, dropout and residual add apart, activation as
                                  * written; default `kernels: fused` (Megatron's kernels) */
    model_activation activation; /* `activation:` gelu (default), gelu_tanh, relu */
} workload_model;

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
    OP_LAYERNORM,
    OP_ELEMENTWISE, /* residual add, gelu, bias */
    OP_DROPOUT,
    OP_EMBEDDING, /* table lookup (forward), scatter-add (backward) */
    OP_LOSS       /* softmax cross-entropy over the vocab */
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
    int selective;    /* 1 if selective recompute drops (and recomputes) this op's saved state */
    int fused;        /* OP_ATTENTION as one kernel keeping scores on chip (FlashAttention) */
    int megatron_softmax; /* OP_ATTENTION: Megatron's fused scale-mask-softmax, which falls back
                               to PyTorch ops for shapes its kernel refuses (checked when
                               sharding): 1 causal mask, 2 padding mask, 0 not used */
} workload_op;

typedef struct workload_graph {
    workload_model model;
    int micro_batch;
    precision_t precision;
    workload_op *ops; /* forward order */
    int n_ops;
    double total_params;
    double fwd_flops, bwd_flops; /* sums over ops, one micro-batch */
} workload_graph;

/* Parse a model mapping with the located reader; `path` is the mapping's dotted path in its
 * document ("" in a model file, "workload" inline in a strategy), so errors name
 * "workload.hidden" or "hidden". Unknown or repeated keys, missing or non-positive dimensions
 * and unknown enum values are errors at their line and column. The one model parser: files and
 * inline models both go through it. */
int workload_model_read(yread_ctx *c, yaml_node_t *node, const char *path, workload_model *out);
/* The same for a whole document's node, path "" (`file` names the document for messages). */
int workload_model_from_yaml(yaml_document_t *doc, yaml_node_t *node, const char *file,
                             workload_model *out, ps_error *err);
/* Load workloads/models/NAME.yaml (searched in data_dir/workloads/models) or a path. */
int workload_model_load(const char *name_or_path, const char *data_dir, workload_model *out,
                        ps_error *err);

/* Expand a model into the op graph of one micro-batch. Caller frees with workload_graph_free. */
int workload_build(const workload_model *m, int micro_batch, precision_t prec, workload_graph *out,
                   ps_error *err);
void workload_graph_free(workload_graph *g);

/* The part of `op` one tensor-parallel rank runs: shape, FLOPs, bytes, params and activations
 * divided as its split says (SPLIT_SEQUENCE only when sequence_parallel; SPLIT_VOCAB only when
 * vocab_parallel). tp == 1 copies the op. */
void workload_op_shard(const workload_op *op, int tp, int sequence_parallel, int vocab_parallel,
                       workload_op *out);

#endif
