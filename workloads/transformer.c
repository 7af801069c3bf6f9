/* transformer.c: the GPT, BERT and Llama builders (Megatron-LM layout) expanding a model into
 * the op graph of one micro-batch (the sharding of one op: shard.c). */
#include "workload.h"
#include "../sim/base/xalloc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* FLOPs per element of the memory-bound ops (forward; backward counts twice). They only matter
 * when a kernel is compute bound, which these never are on current GPUs. */
static const double LAYERNORM_FLOPS_PER_ELEM = 8.0;   /* mean, variance, normalize, affine */
static const double RMSNORM_FLOPS_PER_ELEM = 5.0;     /* square, mean, rsqrt, scale, weight */
static const double GELU_FLOPS_PER_ELEM = 10.0;       /* bias add + tanh approximation */
static const double SWIGLU_FLOPS_PER_ELEM = 6.0;      /* sigmoid (~4), x * sigmoid, * up */
static const double ROPE_FLOPS_PER_ELEM = 3.0;        /* x cos + rotate_half(x) sin */
static const double RESIDUAL_FLOPS_PER_ELEM = 1.0;    /* the residual add */
static const double DROPOUT_ADD_FLOPS_PER_ELEM = 3.0; /* bias add, mask multiply, residual add */
static const double SOFTMAX_FLOPS_PER_ELEM = 5.0;     /* scale, mask, max, exp, normalize */
static const double MASK_BYTES = 1.0;                 /* dropout masks are stored as bytes */
static const double INDEX_BYTES = 8.0;                /* routing indices are int64 */
static const double UNPERMUTE_FLOPS_PER_ELEM = 2.0;   /* scale by the probability, add */
static const double LOSS_FP32_BYTES = 4.0;            /* cross-entropy works on fp32 logits */
/* `kernels: eager` (unfused PyTorch ops, as HuggingFace models run): element passes of the
 * tanh GELU written as ops (gelu_new: mul, pow, mul, add, mul, tanh, add, mul; 18 element
 * reads+writes forward, about as many in its autograd backward), and its kernel count. Counted
 * from the ops in NeuSight's per-op GPT-2 profiles (scripts/asplos/label). */
static const double EAGER_GELU_TANH_PASSES = 18.0;
static const int EAGER_GELU_TANH_KERNELS = 8;
/* Eager RMSNorm as torchtitan and HuggingFace write it: x.float(), pow(2), mean(-1), + eps,
 * rsqrt, x * rsqrt, type_as(x), * weight. Bytes per element, counted kernel by kernel: forward
 * (e + 4) + 8 + 4 + 8 + (4 + e) + 2e = 28 + 4e over 8 kernels (the two on the per-row scalar
 * move no elements); autograd's backward walks them back: the weight product's two gradients
 * (dx: 2e + e, dw: 2e), the cast (4 + e), x * rsqrt's two (8 + 8), the mean's expand (4), the
 * square's (12) and the sum of the two branches into dx (12), the first cast (4 + e):
 * 52 + 7e over 12 kernels. A fused RMSNorm moves 2e forward and 3e backward. */
static const double EAGER_RMSNORM_FWD_FP32 = 28.0, EAGER_RMSNORM_FWD_E = 4.0;
static const double EAGER_RMSNORM_BWD_FP32 = 52.0, EAGER_RMSNORM_BWD_E = 7.0;
static const int EAGER_RMSNORM_KERNELS = 8; /* forward; backward counts twice */
/* Eager SwiGLU, silu(gate) * up: silu reads gate and writes (2e), the product reads both and
 * writes (3e), per output element: 5e forward over 2 kernels (fused: 3e). Backward: the
 * product's two gradients (d_silu = g * up, d_up = g * silu: 3e each) and silu's (reads g and
 * gate, writes: 3e): 9e (fused: 5e). silu's output is saved as well (e per element). */
static const double EAGER_SWIGLU_FWD_E = 5.0, EAGER_SWIGLU_BWD_E = 9.0;
/* Eager rotary embedding (torchtitan's complex form): x.float() viewed as complex, times the
 * complex64 frequencies, back to real, type_as(x): (e + 4) + 8 + (4 + e) = 16 + 2e per element
 * of Q and K forward, 3 kernels each; its backward the same passes (fused: 2e each way). */
static const double EAGER_ROPE_FP32 = 16.0, EAGER_ROPE_E = 2.0;
static const int EAGER_ROPE_KERNELS_PER_TENSOR = 3;

typedef struct builder {
    workload_graph *g;
    int cap;
    double e;  /* bytes per element of activations and weights */
    int flash; /* fused attention */
    int eager; /* unfused eager ops (workload_model.eager_kernels) */
    model_family family;
    model_activation act;
    int bias, dropout, rms; /* biases; dropout layers; RMSNorm instead of LayerNorm */
    int rms_fused;          /* eager plans: the RMSNorm one kernel (rmsnorm_kernel: fused) */
    model_positions pos;
    double a, kv, d; /* query heads, K/V heads, head dimension */
    const workload_model *m;
} builder;

/* "layers.3" + ".mlp.fc1", or the bare suffix for ops outside the layers (l < 0). */
static const char *op_name(char *buf, size_t cap, int l, const char *suffix)
{
    int n =
        l >= 0 ? snprintf(buf, cap, "layers.%d.%s", l, suffix) : snprintf(buf, cap, "%s", suffix);
    assert(n > 0 && (size_t)n < cap);
    (void)n;
    return buf;
}

static workload_op *add_op(builder *bd, const char *name, int layer, op_kind kind, op_split split)
{
    workload_graph *g = bd->g;
    assert(g->n_ops < bd->cap);
    workload_op *op = &g->ops[g->n_ops++];
    memset(op, 0, sizeof *op);
    assert(strlen(name) < sizeof op->name);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->layer = layer;
    op->kind = kind;
    op->split = split;
    op->batch = 1;
    op->kernels = 1;
    op->sac_redo = 1.0; /* op-level SAC: recomputed, nothing kept, unless the builder says */
    return op;
}

/* out = X[m,k] . W[k,n] (+ bias[n]); backward computes dX and dW, each as large as forward. A
 * bias exists only when the model has biases (`bias` asks for one). */
static workload_op *add_gemm(builder *bd, const char *name, int layer, op_split split, double m,
                             double n, double k, int bias)
{
    workload_op *op = add_op(bd, name, layer, OP_GEMM, split);
    op->m = m;
    op->n = n;
    op->k = k;
    op->fwd_flops = 2.0 * m * n * k;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->fwd_bytes = (m * k + k * n + m * n) * bd->e;
    op->bwd_bytes = 2.0 * op->fwd_bytes;
    op->params = k * n + (bias && bd->bias ? n : 0.0);
    return op;
}

/* A memory-bound op over rows x cols elements: bytes per element given for each pass. */
static workload_op *add_pointwise(builder *bd, const char *name, int layer, op_kind kind,
                                  op_split split, double rows, double cols, double flops_per_elem,
                                  double fwd_bytes_per_elem, double bwd_bytes_per_elem)
{
    workload_op *op = add_op(bd, name, layer, kind, split);
    double elems = rows * cols;
    op->m = rows;
    op->n = cols;
    op->fwd_flops = flops_per_elem * elems;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->fwd_bytes = fwd_bytes_per_elem * elems;
    op->bwd_bytes = bwd_bytes_per_elem * elems;
    return op;
}

/* The op last added belongs to recompute module `module` and keeps `keep` of its saved
 * activations when that module is recomputed (WL_RC_*). */
static void rc_tag(builder *bd, unsigned module, double keep)
{
    workload_op *op = &bd->g->ops[bd->g->n_ops - 1];
    op->rc_module = module;
    op->rc_keep = keep;
}

/* LayerNorm (weight and bias, or weight alone without biases) or RMSNorm (weight alone). */
static void add_layernorm(builder *bd, const char *name, int layer, double tokens, double h)
{
    double e = bd->e;
    /* forward reads x, writes y; backward reads dy and x, writes dx */
    workload_op *op =
        add_pointwise(bd, name, layer, OP_LAYERNORM, SPLIT_SEQUENCE, tokens, h,
                      bd->rms ? RMSNORM_FLOPS_PER_ELEM : LAYERNORM_FLOPS_PER_ELEM, 2 * e, 3 * e);
    op->params = bd->bias && !bd->rms ? 2 * h : h;
    if (bd->eager && bd->rms && !bd->rms_fused) {
        op->fwd_bytes = (EAGER_RMSNORM_FWD_FP32 + EAGER_RMSNORM_FWD_E * e) * tokens * h;
        op->bwd_bytes = (EAGER_RMSNORM_BWD_FP32 + EAGER_RMSNORM_BWD_E * e) * tokens * h;
        op->kernels = EAGER_RMSNORM_KERNELS;
    }
    op->fwd_bytes += op->params * e; /* the weights read */
    op->bwd_bytes += op->params * e; /* their gradients written */
    /* its input (for its own backward) and its output (the input the next GEMM saves):
     * kept here so that the TP/SP division of Korthikanti et al. falls out of the split */
    op->act_bytes = 2 * tokens * h * e;
}

/* The residual add closing a block of layer l ("attn.dropout_add", "mlp.dropout_add"). Without
 * dropout ("attn.residual_add", ...) it reads x and the residual and writes the sum; its
 * backward is one pass over the gradient (read dy, write dx), as the fused kernel's. */
static void add_dropout_add(builder *bd, int layer, const char *block, double tokens, double h)
{
    double e = bd->e;
    char nm[48], suffix[32];
    snprintf(suffix, sizeof suffix, "%s.%s", block, bd->dropout ? "dropout_add" : "residual_add");
    const char *name = op_name(nm, sizeof nm, layer, suffix);
    if (!bd->dropout) {
        add_pointwise(bd, name, layer, OP_ELEMENTWISE, SPLIT_SEQUENCE, tokens, h,
                      RESIDUAL_FLOPS_PER_ELEM, 3 * e, 2 * e);
        return;
    }
    /* fused bias-dropout-add: reads x and residual, writes out and mask */
    workload_op *op =
        add_pointwise(bd, name, layer, OP_DROPOUT, SPLIT_SEQUENCE, tokens, h,
                      DROPOUT_ADD_FLOPS_PER_ELEM, 3 * e + MASK_BYTES, 2 * e + MASK_BYTES);
    op->act_bytes = tokens * h * MASK_BYTES;
    if (bd->eager) {
        /* dropout writes its output, then a separate residual add reads it and the residual
         * and writes the sum; the add's backward passes the gradient through, no kernel */
        op->fwd_bytes += 2 * e * tokens * h;
        op->kernels = 2;
    }
}

/* The MLP activation on rows x cols (fc1 output). Fused: one bias-activation kernel. */
static workload_op *add_activation(builder *bd, const char *name, int layer, op_split split,
                                   double rows, double cols)
{
    double e = bd->e;
    if (bd->act == ACT_SWIGLU) {
        /* silu(gate) * up over the fc1 output's two halves (Megatron's bias_swiglu): forward
         * reads both, writes one; backward reads dy and both, writes both gradients; saves
         * its input (both halves) */
        workload_op *op = add_pointwise(bd, name, layer, OP_ELEMENTWISE, split, rows, cols,
                                        SWIGLU_FLOPS_PER_ELEM, 3 * e, 5 * e);
        op->act_bytes = 2 * rows * cols * e;
        if (bd->eager) {
            op->fwd_bytes = EAGER_SWIGLU_FWD_E * e * rows * cols;
            op->bwd_bytes = EAGER_SWIGLU_BWD_E * e * rows * cols;
            op->act_bytes += rows * cols * e;
            op->kernels = 2;
        }
        return op;
    }
    workload_op *op = add_pointwise(bd, name, layer, OP_ELEMENTWISE, split, rows, cols,
                                    GELU_FLOPS_PER_ELEM, 2 * e, 3 * e);
    op->act_bytes = rows * cols * e; /* its input */
    if (bd->eager && bd->act == ACT_GELU_TANH) {
        op->fwd_bytes = EAGER_GELU_TANH_PASSES * e * rows * cols;
        op->bwd_bytes = EAGER_GELU_TANH_PASSES * e * rows * cols;
        op->kernels = EAGER_GELU_TANH_KERNELS;
    }
    return op;
}

/* The unfused core's HBM traffic beyond the flash kernel's: the s x s scores through
 * QK^T, softmax, dropout (when the model has it) and .V, K/V expanded to the query heads under
 * GQA (repeat_interleave, as Megatron's local attention), ALiBi's bias add, and with eager
 * kernels the separate scale and mask passes. q: elements of Q (or of the context), kv: of K
 * (or V). */
static void unfused_attention_traffic(builder *bd, workload_op *op, double scores, double q,
                                      double kv)
{
    double e = bd->e;
    double mask = bd->dropout ? MASK_BYTES : 0.0;
    /* fwd: QK^T (Q + K + S), softmax (2S), dropout (2S + mask), AV (S + V + O), permute (2Q) */
    op->fwd_bytes = e * (6 * q + (bd->dropout ? 6 : 4) * scores) + mask * scores;
    /* bwd: two GEMMs per bmm (4 x (S + 2Q)), dropout (2S + mask), softmax (3S), permute (2Q) */
    op->bwd_bytes = e * (10 * q + (bd->dropout ? 9 : 7) * scores) + mask * scores;
    /* softmax out, and the mask and dropout out */
    op->act_bytes = scores * (bd->dropout ? 2 * e + MASK_BYTES : e);
    op->kernels = bd->dropout ? 5 : 4;
    if (bd->kv < bd->a) {
        /* K and V repeated to every query head (read kv, write q each); backward sums the
         * copies back. The reads of K/V are the K/V part. */
        op->fwd_bytes += e * (2 * kv + 2 * q);
        op->bwd_bytes += e * (2 * q + 2 * kv);
        op->kv.fwd_bytes = op->kv.bwd_bytes = 2 * e * kv;
        op->kernels += 2;
    }
    if (bd->pos == POS_ALIBI) {
        /* the per-head linear bias added to the scores (a pass; its backward passes dy on) */
        op->fwd_bytes += 2 * e * scores;
        op->kernels += 1;
    } else if (!bd->eager && e == 2) {
        op->megatron_softmax = bd->family == FAMILY_BERT ? 2 : 1;
    }
    if (bd->eager) {
        /* the 1/sqrt(d) scale and the mask are kernels of their own, each reading and
         * writing the scores: GPT-2's causal mask is a where() (its backward another
         * pass), BERT's padding mask an add (backward passes through); the scale's
         * backward is a pass */
        op->fwd_bytes += 4 * e * scores;
        op->bwd_bytes += (bd->family == FAMILY_BERT ? 2 : 4) * e * scores;
        op->kernels += 2;
    }
}

/* QK^T, scale+mask+softmax, dropout, .V and the context permute; batch = b * heads. FLOPs are
 * per query head: grouped-query attention changes only the K/V traffic. They count every
 * query against every key, s^2 per head, causal or not (Megatron's convention for MFU); under
 * a sliding window of W, every query against its W keys: s min(s, W). */
static void add_attention_core(builder *bd, int l, double b, double s)
{
    double e = bd->e, a = bd->a, d = bd->d;
    char nm[48];
    workload_op *op =
        add_op(bd, op_name(nm, sizeof nm, l, "attn.core"), l, OP_ATTENTION, SPLIT_HEADS);
    op->batch = b * a;
    op->m = s;
    op->n = s;
    op->k = d;
    double scores = b * a * s * s;
    double q = b * s * a * d;       /* Q, or the context */
    double kv = b * s * bd->kv * d; /* K, or V */
    op->window = workload_layer_window(bd->m, l);
    double keys = op->window > 0 && op->window < s ? op->window : s; /* per query */
    op->fwd_flops = 2.0 * 2.0 * b * s * keys * a * d;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->rc_module = WL_RC_CORE_ATTN;
    op->kv_heads = (int)bd->kv;
    op->causal = bd->family != FAMILY_BERT;
    if (!bd->flash) {
        assert(!op->window); /* workload_model_check */
        unfused_attention_traffic(bd, op, scores, q, kv);
        return;
    }
    /* FlashAttention: one kernel per pass, scores never leave the chip (an ALiBi bias is
     * computed in the kernel); backward recomputes them (5 GEMMs against the forward's 2)
     * from Q, K, V, O and the per-row log-sum-exp. */
    double lse = b * a * s * 4.0;
    op->bwd_flops = 2.5 * op->fwd_flops;
    op->fwd_bytes = e * (2 * q + 2 * kv) + lse; /* read Q, K, V; write O */
    op->bwd_bytes = e * (4 * q + 4 * kv) + lse; /* read Q, K, V, O, dO; write dQ, dK, dV */
    op->kv.fwd_bytes = 2 * e * kv;
    op->kv.bwd_bytes = 4 * e * kv;
    op->act_bytes = lse;
    /* op-level SAC saves the SDPA op's outputs: O and the log-sum-exp */
    op->sac_redo = 0.0;
    op->sac_keep = (e * q + lse) / lse;
    op->kernels = 1;
    op->rc_module = 0;
    op->fused = 1;
    op->warp_mma = bd->m->attention_kernel == ATTN_KERNEL_WARP_MMA;
}

/* Rotary embedding applied to Q and K (one kernel each, Megatron's fused RoPE): forward reads
 * and writes them, backward rotates the gradients back. Nothing saved: the rotated Q and K
 * are the attention core's inputs, counted with the QKV GEMM. */
static void add_rope(builder *bd, int l, double t)
{
    double e = bd->e, qk = (bd->a + bd->kv) * bd->d, kd = bd->kv * bd->d;
    char nm[48];
    workload_op *op = add_pointwise(bd, op_name(nm, sizeof nm, l, "attn.rope"), l, OP_ELEMENTWISE,
                                    SPLIT_COLUMN, t, qk, ROPE_FLOPS_PER_ELEM, 2 * e, 2 * e);
    op->kernels = 2;
    op->kv_heads = (int)bd->kv;
    op->kv.n = kd;
    op->kv.fwd_flops = ROPE_FLOPS_PER_ELEM * t * kd;
    op->kv.bwd_flops = 2.0 * op->kv.fwd_flops;
    op->kv.fwd_bytes = op->kv.bwd_bytes = 2 * e * t * kd;
    if (bd->eager) {
        double per = EAGER_ROPE_FP32 + EAGER_ROPE_E * e;
        op->fwd_bytes = op->bwd_bytes = per * t * qk;
        op->kv.fwd_bytes = op->kv.bwd_bytes = per * t * kd;
        op->kernels = 2 * EAGER_ROPE_KERNELS_PER_TENSOR;
    }
}

/* fc1, activation, fc2 of a dense MLP of width f ("mlp", or "mlp.shared": the shared experts,
 * which every token goes through, as one MLP of their summed width). */
static void add_dense_mlp(builder *bd, int l, const char *prefix, double t, double h, double f)
{
    char nm[48], suffix[32];
    /* fc1: the up projection, or gate and up together when gated (column-parallel: each rank
     * holds its slice of both) */
    /* Megatron-Core's `mlp` recompute module: a layer's dense MLP (not the shared experts) */
    unsigned module = strcmp(prefix, "mlp") == 0 ? WL_RC_MLP : 0;
    snprintf(suffix, sizeof suffix, "%s.fc1", prefix);
    workload_op *op = add_gemm(bd, op_name(nm, sizeof nm, l, suffix), l, SPLIT_COLUMN, t,
                               bd->act == ACT_SWIGLU ? 2 * f : f, h, 1);
    rc_tag(bd, module, 1.0); /* its input is the norm's to keep */
    /* op-level SAC (torchtitan's w1, w3, w2: matmuls 5, 6, 7 of the block): the gate's output
     * saved, the up projection recomputed */
    op->sac_redo = 0.5;
    /* fused bias-activation on the sharded fc1 output: saves its input */
    snprintf(suffix, sizeof suffix, "%s.%s", prefix, bd->act == ACT_SWIGLU ? "swiglu" : "gelu");
    op = add_activation(bd, op_name(nm, sizeof nm, l, suffix), l, SPLIT_COLUMN, t, f);
    op->sac_keep = t * f * bd->e / op->act_bytes; /* of what it saves, the gate's output */
    rc_tag(bd, module, 0.0);
    snprintf(suffix, sizeof suffix, "%s.fc2", prefix);
    op = add_gemm(bd, op_name(nm, sizeof nm, l, suffix), l, SPLIT_ROW, t, h, f, 1);
    op->act_bytes = t * f * bd->e;
    rc_tag(bd, module, 0.0);
    op->sac_redo = 0.0;
    op->sac_keep = (double)h / f; /* its output, t x h, in place of its input */
}

/* One GEMM of every expert at once (a grouped GEMM): `experts` GEMMs of rows x n x k, rows the
 * mean tokens per expert, each expert with its own weight. */
static workload_op *add_expert_gemm(builder *bd, const char *name, int l, op_split split,
                                    double experts, double rows, double n, double k)
{
    workload_op *op = add_gemm(bd, name, l, split, rows, n, k, 1);
    op->batch = experts;
    op->fwd_flops = 2.0 * experts * rows * n * k;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->fwd_bytes = experts * (rows * k + k * n + rows * n) * bd->e;
    op->bwd_bytes = 2.0 * op->fwd_bytes;
    op->params *= experts;
    op->act_bytes = experts * rows * k * bd->e; /* its input */
    op->expert = 1;
    return op;
}

/* A mixture-of-experts MLP (Megatron-Core's MoELayer): the router GEMM (hidden -> experts
 * logits), softmax and top-k, the permute gathering each token's copies into expert order,
 * the experts' grouped GEMMs over tokens x topk rows (mean tokens per expert: tokens x topk /
 * experts; expert parallelism scales them to the busiest rank), the unpermute summing the
 * weighted copies back, and the shared experts beside them. Returns the router's op index. */
static int add_moe_mlp(builder *bd, int l, double t, double h, double f)
{
    const workload_model *m = bd->m;
    double e = bd->e, E = m->experts, k = m->experts_topk, r = t * k;
    char nm[48];
    int router = bd->g->n_ops;
    /* the router is replicated over TP (each rank routes its tokens); its weight is not FP8 */
    add_gemm(bd, op_name(nm, sizeof nm, l, "mlp.router"), l, SPLIT_SEQUENCE, t, E, h, 0);
    /* softmax over the logits (read, write the probabilities), then top-k: writes k
     * probabilities and k int64 indices a token; backward reads dy and the probabilities,
     * writes dlogits. Saves the probabilities. */
    workload_op *op = add_pointwise(bd, op_name(nm, sizeof nm, l, "mlp.router_topk"), l, OP_SOFTMAX,
                                    SPLIT_SEQUENCE, t, E, SOFTMAX_FLOPS_PER_ELEM, 2 * e, 3 * e);
    op->fwd_bytes += r * (e + INDEX_BYTES);
    op->act_bytes = t * E * e;
    op->kernels = 2;
    /* permute: gathers r rows of h (read, write) by the routing map; backward scatter-adds
     * them back */
    op = add_pointwise(bd, op_name(nm, sizeof nm, l, "mlp.permute"), l, OP_ELEMENTWISE,
                       SPLIT_SEQUENCE, r, h, 0.0, 2 * e, 2 * e);
    op->fwd_bytes += r * INDEX_BYTES;
    op->bwd_bytes += r * INDEX_BYTES;

    double fc1 = bd->act == ACT_SWIGLU ? 2 * f : f;
    add_expert_gemm(bd, op_name(nm, sizeof nm, l, "mlp.experts.fc1"), l, SPLIT_COLUMN, E, r / E,
                    fc1, h);
    op = add_activation(bd,
                        op_name(nm, sizeof nm, l,
                                bd->act == ACT_SWIGLU ? "mlp.experts.swiglu" : "mlp.experts.gelu"),
                        l, SPLIT_COLUMN, r, f);
    op->expert = 1;
    rc_tag(bd, WL_RC_MOE_ACT, 1.0); /* run again from fc1's output, which it keeps */
    add_expert_gemm(bd, op_name(nm, sizeof nm, l, "mlp.experts.fc2"), l, SPLIT_ROW, E, r / E, h, f);
    rc_tag(bd, WL_RC_MOE_ACT, 0.0); /* its input, the activation's output, dropped */
    bd->g->ops[bd->g->n_ops - 1].rc_no_redo = 1;

    /* unpermute: scales each copy by its probability and sums a token's k copies (reads r
     * rows and probabilities, writes t rows); backward reads dy and the saved expert outputs
     * (for the probabilities' gradient), writes the copies' gradients */
    op = add_pointwise(bd, op_name(nm, sizeof nm, l, "mlp.unpermute"), l, OP_ELEMENTWISE,
                       SPLIT_SEQUENCE, r, h, UNPERMUTE_FLOPS_PER_ELEM, e, 2 * e);
    op->fwd_bytes += t * h * e + r * (e + INDEX_BYTES);
    op->bwd_bytes += t * h * e + r * (e + INDEX_BYTES);
    op->act_bytes = r * h * e;
    if (m->shared_experts > 0)
        add_dense_mlp(bd, l, "mlp.shared", t, h, (double)m->shared_experts * f);
    return router;
}

/* A layer's second half: the norm, the dense or MoE MLP, the residual; then every GEMM of the
 * layer from op `first` on but the router is an FP8 GEMM under `precision: fp8`. */
static void add_layer_mlp(builder *bd, int l, double t, double h, double f, int first)
{
    char nm[48];
    add_layernorm(bd, op_name(nm, sizeof nm, l, "ln2"), l, t, h);
    rc_tag(bd, WL_RC_LAYERNORM, 0.5); /* its input kept, its output run again */
    int router = -1;
    if (workload_layer_is_moe(bd->m, l))
        router = add_moe_mlp(bd, l, t, h, f);
    else
        add_dense_mlp(bd, l, "mlp", t, h, bd->m->experts > 0 ? bd->m->dense_ffn_hidden : f);
    add_dropout_add(bd, l, "mlp", t, h);
    for (int i = first; i < bd->g->n_ops; i++)
        bd->g->ops[i].fp8_gemm = bd->g->ops[i].kind == OP_GEMM && i != router;
}

/* Multi-head latent attention (DeepSeek-V2/V3, as Megatron-Core's MLASelfAttention trains it,
 * without absorbing the up-projections): the down-projections of the normed input to the query
 * latent (q_lora_rank wide) and to the shared K/V latent plus the decoupled rotary key
 * (kv_lora_rank + qk_rope), the latents RMS-normed, the up-projections to every head's query
 * (qk_nope + qk_rope) and to every head's key and value (qk_nope + v), RoPE on the rotary parts,
 * the fused core with query-key heads qk_nope + qk_rope wide and values v wide, and the output
 * projection from heads x v. Without q_lora_rank the query is projected from the input
 * directly. The down-projections are replicated over tensor ranks in Megatron-Core (parallel
 * mode "duplicated"); tensor parallelism with MLA is refused (strategy_validate.c). */
static void add_mla_attention(builder *bd, int l, double b, double s, double h)
{
    const workload_model *m = bd->m;
    double e = bd->e, t = b * s, a = bd->a;
    double nope = m->qk_nope_dim, rope = m->qk_rope_dim, dv = m->v_head_dim;
    double qlr = m->q_lora_rank, kvlr = m->kv_lora_rank, dqk = nope + rope;
    char nm[48];
    workload_op *op;
    if (qlr > 0) {
        /* the normed input both down-projections read is ln1's (add_layernorm keeps it) */
        add_gemm(bd, op_name(nm, sizeof nm, l, "attn.q_down"), l, SPLIT_REPLICATED, t, qlr, h, 0);
        add_layernorm(bd, op_name(nm, sizeof nm, l, "attn.q_norm"), l, t, qlr);
        rc_tag(bd, WL_RC_MLA_UP_PROJ, 0.5); /* the latent kept */
        op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.q_up"), l, SPLIT_COLUMN, t, a * dqk, qlr,
                      0);
        op->act_bytes += t * a * dqk * e; /* Q, kept for the core */
        rc_tag(bd, WL_RC_MLA_UP_PROJ, 0.0);
    } else {
        op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.q"), l, SPLIT_COLUMN, t, a * dqk, h, 0);
        op->act_bytes += t * a * dqk * e; /* Q, kept for the core */
    }
    /* the latent goes through its norm (which keeps it), the rotary key through RoPE */
    add_gemm(bd, op_name(nm, sizeof nm, l, "attn.kv_down"), l, SPLIT_REPLICATED, t, kvlr + rope, h,
             0);
    add_layernorm(bd, op_name(nm, sizeof nm, l, "attn.kv_norm"), l, t, kvlr);
    rc_tag(bd, WL_RC_MLA_UP_PROJ, 0.5);
    op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.kv_up"), l, SPLIT_COLUMN, t, a * (nope + dv),
                  kvlr, 0);
    op->act_bytes += t * a * (dqk + dv) * e; /* K (with the rotary part) and V, for the core */
    rc_tag(bd, WL_RC_MLA_UP_PROJ, 0.0);
    /* RoPE on the query's rotary part (every head) and the shared rotary key, in Megatron-Core's
     * fused MLA kernels, which also assemble the core's inputs: read the query and the K/V
     * up-projection's output and the rotary key, write Q, K (the rotary key in every head) and
     * V whole; backward the same passes over the gradients */
    op = add_pointwise(bd, op_name(nm, sizeof nm, l, "attn.rope"), l, OP_ELEMENTWISE, SPLIT_COLUMN,
                       t, a * rope + rope, ROPE_FLOPS_PER_ELEM, 0, 0);
    op->fwd_bytes = op->bwd_bytes =
        e * t * (a * dqk + a * (nope + dv) + rope + 2 * a * dqk + a * dv);
    op->kernels = 2;
    rc_tag(bd, WL_RC_MLA_UP_PROJ, 0.0);
    /* the core: fused, query-key heads dqk wide, values dv */
    op = add_op(bd, op_name(nm, sizeof nm, l, "attn.core"), l, OP_ATTENTION, SPLIT_HEADS);
    op->batch = b * a;
    op->m = s;
    op->n = s;
    op->k = dqk;
    op->v_dim = dv;
    double q = b * s * a * dqk, k = q, v = b * s * a * dv, o = v, lse = b * a * s * 4.0;
    op->fwd_flops = 2.0 * b * s * s * a * (dqk + dv);
    /* QK^T again, dQ and dK over the query-key width, dP and dV over the values' */
    op->bwd_flops = 2.0 * b * s * s * a * (3 * dqk + 2 * dv);
    op->fwd_bytes = e * (q + k + v + o) + lse;     /* read Q, K, V; write O */
    op->bwd_bytes = e * 2 * (q + k + v + o) + lse; /* and their gradients */
    op->act_bytes = lse;
    op->causal = 1;
    op->kernels = 1;
    op->fused = 1;
    op->warp_mma = m->attention_kernel == ATTN_KERNEL_WARP_MMA;
    op->sac_redo = 0.0;
    op->sac_keep = (e * o + lse) / lse;
    op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.proj"), l, SPLIT_ROW, t, h, a * dv, 0);
    op->act_bytes = t * a * dv * e; /* the attention output */
}

static void add_layer(builder *bd, int l, double b, double s, double h, double f)
{
    double e = bd->e;
    double t = b * s; /* tokens */
    double qd = bd->a * bd->d, kd = bd->kv * bd->d;
    char nm[48];
    workload_op *op;
    int first = bd->g->n_ops;

    add_layernorm(bd, op_name(nm, sizeof nm, l, "ln1"), l, t, h);
    /* op-level SAC keeps the block's input (half of what the first norm saves) */
    bd->g->ops[first].sac_keep = 0.5;
    rc_tag(bd, WL_RC_LAYERNORM, 0.5);
    if (bd->m->mla) {
        add_mla_attention(bd, l, b, s, h);
        add_dropout_add(bd, l, "attn", t, h);
        add_layer_mlp(bd, l, t, h, f, first);
        return;
    }
    /* Q, K and V in one column-parallel GEMM (Megatron's linear_qkv) */
    op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.qkv"), l, SPLIT_COLUMN, t, qd + 2 * kd, h, 1);
    op->act_bytes = t * (qd + 2 * kd) * e; /* Q, K, V: kept even under selective recompute */
    op->kv_heads = (int)bd->kv;
    op->kv.n = 2 * kd;
    /* op-level SAC (torchtitan's wq, wk, wv: matmuls 1-3 of the block): K recomputed, Q and V
     * kept; the output projection (matmul 4) recomputed whole */
    op->sac_redo = kd / (qd + 2 * kd);
    op->sac_keep = (qd + kd) / (qd + 2 * kd);
    if (bd->pos == POS_ROTARY)
        add_rope(bd, l, t);
    add_attention_core(bd, l, b, s);
    op = add_gemm(bd, op_name(nm, sizeof nm, l, "attn.proj"), l, SPLIT_ROW, t, h, qd, 1);
    op->act_bytes = t * qd * e; /* the attention output: op-level SAC keeps it with the core */
    add_dropout_add(bd, l, "attn", t, h);
    add_layer_mlp(bd, l, t, h, f, first);
}

/* Word (+ learned position, + token type for BERT) lookup, add, dropout: the passes the model
 * has. The token-type lookup of BERT is counted as parameters only (a 2-row table). */
static void add_embedding(builder *bd, const workload_model *m, double b)
{
    double e = bd->e;
    double s = m->seq, h = m->hidden, v = m->vocab;
    double elems = b * s * h;
    double tables = m->positions == POS_LEARNED ? 2 : 1;
    workload_op *op = add_op(bd, "embedding", -1, OP_EMBEDDING, SPLIT_VOCAB);
    op->m = b * s;
    op->n = v;
    op->k = h;
    op->fwd_flops = tables * elems;
    op->bwd_flops = 2.0 * op->fwd_flops;
    /* lookups (2 each), the add of two tables (3), dropout (2 + mask) */
    op->fwd_bytes = e * elems * (2 * tables + 3 * (tables - 1));
    /* scatter-adds of dy (1 each), dropout backward (2 + mask), and zeroing + accumulating the
     * dense table gradient */
    op->bwd_bytes = e * elems * tables + 2 * v * h * e;
    op->kernels = (int)(2 * tables - 1);
    if (m->dropout) {
        op->fwd_bytes += (2 * e + MASK_BYTES) * elems;
        op->bwd_bytes += (2 * e + MASK_BYTES) * elems;
        op->act_bytes = MASK_BYTES * elems;
        op->kernels += 1;
    }
    op->params = v * h + (tables - 1) * s * h + (m->family == FAMILY_BERT ? 2 * h : 0.0);
}

static void add_loss(builder *bd, const char *name, int L, double tokens, double v)
{
    double e = bd->e;
    /* Megatron's vocab-parallel cross-entropy, one pass per step over the tokens x vocab/tp
     * logits: cast to fp32 (read e, write 4), max (read 4), subtract in place (8), exp (8),
     * sum (4), divide in place (8): the fp32 softmax is kept for backward. Backward: scale the
     * softmax by the incoming gradient in place (8), then cast back (read 4, write e). */
    workload_op *op =
        add_pointwise(bd, name, L, OP_LOSS, SPLIT_VOCAB, tokens, v, SOFTMAX_FLOPS_PER_ELEM,
                      e + 9 * LOSS_FP32_BYTES, 3 * LOSS_FP32_BYTES + e);
    op->act_bytes = tokens * v * LOSS_FP32_BYTES; /* the fp32 softmax kept for backward */
    op->kernels = 8;
    if (bd->eager) {
        /* PyTorch's F.cross_entropy (autocast runs it in fp32): cast to fp32 (read e, write 4;
         * none in fp32 training), log_softmax (read 4, write 4), nll_loss (one element a row);
         * backward: nll_loss's dense gradient (write 4), log_softmax's (read 4 twice, write 4),
         * the cast back (read 4, write e). 36 bytes an element in bf16 where Megatron's pass
         * moves 52: tests/data/measured/{h100,h200}_memops.csv time it (docs/cost-model.md).
         * `cross_entropy: logits`: the same passes in the logits' precision, no cast (the bf16
         * steps' traces run cunn_SoftMaxForward / Backward on bf16): 6 e an element. */
        double f32 = bd->m->loss_logits ? e : LOSS_FP32_BYTES;
        int cast = e != f32;
        double elems = tokens * v;
        op->act_bytes = elems * f32; /* the log_softmax output kept for backward */
        op->fwd_bytes = ((cast ? e + f32 : 0) + 2 * f32) * elems;
        op->bwd_bytes = (f32 + 3 * f32 + (cast ? f32 + e : 0)) * elems;
        op->kernels = cast ? 2 : 1; /* forward (the row-wise nll aside); backward counts twice */
    }
}

/* After the layers: final norm and LM head (GPT, Llama) or BERT's MLM head, then the loss.
 * A tied head's weight is the word embedding's (tied_params). */
static void add_head(builder *bd, const workload_model *m, double t)
{
    const int L = m->layers;
    const double h = m->hidden, v = m->vocab;
    workload_op *op;
    if (m->family != FAMILY_BERT) {
        add_layernorm(bd, "final_layernorm", L, t, h);
        op = add_gemm(bd, "lm_head", L, SPLIT_VOCAB, t, v, h, 0);
    } else {
        /* MLM head: dense + gelu + layernorm (replicated in Megatron), then the decoder */
        op = add_gemm(bd, "head.dense", L, SPLIT_REPLICATED, t, h, h, 1);
        op->act_bytes = t * h * bd->e;
        op = add_pointwise(bd, "head.gelu", L, OP_ELEMENTWISE, SPLIT_REPLICATED, t, h,
                           GELU_FLOPS_PER_ELEM, 2 * bd->e, 3 * bd->e);
        op->act_bytes = t * h * bd->e;
        add_layernorm(bd, "head.layernorm", L, t, h);
        op = add_gemm(bd, "head.decoder", L, SPLIT_VOCAB, t, v, h, 1);
    }
    if (m->tied_embeddings)
        op->tied_params = v * h;
    add_loss(bd, "loss", L, t, v);
}

/* Multi-token prediction (DeepSeek-V3, Megatron-Core's MultiTokenPredictionBlock), after the
 * main head on the last stage: module k looks up the next tokens' embeddings (the word
 * embedding, shared: on a later stage than the embedding's its copy, as the tied head's),
 * RMS-norms them and the previous hidden state, projects the two concatenated (2h -> h), runs
 * one transformer layer (numbered `layers`, the head's, so it lives on the last stage), and the
 * shared head's norm, logits (the output layer's weight, shared) and loss. Tensor parallelism
 * with it is refused (strategy_validate.c). */
static void add_mtp(builder *bd, const workload_model *m, double b, double s, double f)
{
    const int L = m->layers;
    const double h = m->hidden, v = m->vocab, t = b * s, e = bd->e;
    const workload_op *emb = &bd->g->ops[0];
    assert(emb->kind == OP_EMBEDDING);
    char nm[48];
    for (int k = 0; k < m->mtp_layers; k++) {
        snprintf(nm, sizeof nm, "mtp.%d.embedding", k);
        workload_op *op = add_op(bd, nm, L, OP_EMBEDDING, SPLIT_VOCAB);
        workload_op keep = *op;
        *op = *emb;
        snprintf(op->name, sizeof op->name, "%s", keep.name);
        op->layer = L;
        op->tied_params = op->params;
        op->bwd_bytes -= 2 * v * h * e; /* the table's gradient is zeroed once, by the embedding */
        snprintf(nm, sizeof nm, "mtp.%d.enorm", k);
        add_layernorm(bd, nm, L, t, h);
        snprintf(nm, sizeof nm, "mtp.%d.hnorm", k);
        add_layernorm(bd, nm, L, t, h);
        snprintf(nm, sizeof nm, "mtp.%d.eh_proj", k);
        op = add_gemm(bd, nm, L, SPLIT_REPLICATED, t, h, 2 * h, 0);
        op->fp8_gemm = 1; /* its input (the two normed halves) is the norms' to keep */
        int first = bd->g->n_ops;
        add_layer(bd, L, b, s, h, f);
        for (int i = first; i < bd->g->n_ops; i++)
            bd->g->ops[i].mtp = 1;
        snprintf(nm, sizeof nm, "mtp.%d.final_layernorm", k);
        add_layernorm(bd, nm, L, t, h);
        snprintf(nm, sizeof nm, "mtp.%d.lm_head", k);
        op = add_gemm(bd, nm, L, SPLIT_VOCAB, t, v, h, 0);
        op->params = 0; /* the output layer's weight, on the same stage */
        op->shares_weight = 1;
        snprintf(nm, sizeof nm, "mtp.%d.loss", k);
        add_loss(bd, nm, L, t, v);
    }
}

int workload_build(const workload_model *m, int micro_batch, precision_t prec, workload_graph *out,
                   ps_error *err)
{
    assert(m && out);
    memset(out, 0, sizeof *out);
    int rc = workload_model_check(m, micro_batch, err);
    if (rc)
        return rc;

    const int L = m->layers;
    const double b = micro_batch, s = m->seq, h = m->hidden;
    const double f = m->ffn_hidden, t = b * s;
    const int per_layer = 28, extra = 8 + m->mtp_layers * (per_layer + 8);

    out->model = *m;
    out->micro_batch = micro_batch;
    out->precision = prec;
    builder bd = {out,
                  L * per_layer + extra,
                  precision_bytes(prec),
                  m->flash_attention,
                  m->eager_kernels,
                  m->family,
                  m->activation,
                  m->bias,
                  m->dropout,
                  m->family == FAMILY_LLAMA,
                  m->rmsnorm_fused,
                  m->positions,
                  m->heads,
                  m->kv_heads,
                  m->head_dim,
                  m};
    out->ops = xcalloc((size_t)bd.cap, sizeof *out->ops);

    add_embedding(&bd, m, b);
    if (m->family == FAMILY_BERT)
        add_layernorm(&bd, "embedding.layernorm", -1, t, h);
    for (int l = 0; l < L; l++)
        add_layer(&bd, l, b, s, h, f);
    add_head(&bd, m, t);
    add_mtp(&bd, m, b, s, f);
    assert(out->n_ops <= bd.cap);

    for (int i = 0; i < out->n_ops; i++) {
        const workload_op *o = &out->ops[i];
        assert(o->fwd_flops >= 0 && o->bwd_flops >= 0 && o->fwd_bytes >= 0 && o->params >= 0);
        assert(o->tied_params >= 0 && o->tied_params <= o->params);
        out->total_params += o->params - o->tied_params;
        /* a token uses topk of a routed-expert GEMM's experts */
        out->active_params +=
            o->expert ? o->params * m->experts_topk / m->experts : o->params - o->tied_params;
        out->fwd_flops += o->fwd_flops;
        out->bwd_flops += o->bwd_flops;
    }
    return 0;
}

void workload_graph_free(workload_graph *g)
{
    if (!g)
        return;
    free(g->ops);
    g->ops = NULL;
    g->n_ops = 0;
}
