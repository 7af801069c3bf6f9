/* shard.c: the part of one op a rank runs: tensor-parallel sharding (workload_op_shard),
 * expert parallelism's share (workload_op_shard_expert), and a GEMM's column slice
 * (workload_op_gemm_slice, op-level selective checkpointing). */
#include "workload.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void divide_work(workload_op *o, double tp)
{
    o->fwd_flops /= tp;
    o->bwd_flops /= tp;
    o->fwd_bytes /= tp;
    o->bwd_bytes /= tp;
    o->act_bytes /= tp;
}

/* A GEMM's traffic is its three matrices: rescale bytes to the sharded shape. */
static void gemm_reshape(workload_op *o, double m, double n, double k)
{
    double before = o->m * o->k + o->k * o->n + o->m * o->n;
    double after = m * k + k * n + m * n;
    assert(before > 0);
    o->fwd_bytes *= after / before;
    o->bwd_bytes *= after / before;
    o->m = m;
    o->n = n;
    o->k = k;
}

/* Split a GEMM's weight on N (column / vocab) or K (row); the bias is split on N only. */
static void shard_gemm(workload_op *o, double tp, int on_n)
{
    double weight = o->k * o->n, bias = o->params - weight;
    assert(bias >= 0);
    if (on_n) {
        gemm_reshape(o, o->m, o->n / tp, o->k);
        o->params = (weight + bias) / tp;
    } else {
        gemm_reshape(o, o->m, o->n, o->k / tp);
        o->params = weight / tp + bias; /* row-parallel bias is added after the all-reduce */
    }
    o->tied_params /= tp; /* a tied weight divides as the weight does */
    o->fwd_flops /= tp;
    o->bwd_flops /= tp;
    o->act_bytes /= tp;
}

/* Fewer K/V heads than TP ranks: each rank holds and computes the one K/V head its query
 * heads use, so the op's K/V part grows to `copies` = tp / kv_heads copies before the split
 * divides everything by tp. A GEMM widens its N (FLOPs, parameters, bias and activations
 * follow N; bytes follow the shape); other ops add their K/V part's work. */
static void replicate_kv(workload_op *o, double copies)
{
    double extra = copies - 1;
    if (o->kind == OP_GEMM) {
        double n = o->n + o->kv.n * extra, r = n / o->n;
        gemm_reshape(o, o->m, n, o->k);
        o->fwd_flops *= r;
        o->bwd_flops *= r;
        o->params *= r;
        o->act_bytes *= r;
    } else {
        o->n += o->kv.n * extra;
        o->fwd_flops += o->kv.fwd_flops * extra;
        o->bwd_flops += o->kv.bwd_flops * extra;
        o->fwd_bytes += o->kv.fwd_bytes * extra;
        o->bwd_bytes += o->kv.bwd_bytes * extra;
        o->act_bytes += o->kv.act_bytes * extra;
    }
    o->kv.n *= copies;
    o->kv.fwd_flops *= copies;
    o->kv.bwd_flops *= copies;
    o->kv.fwd_bytes *= copies;
    o->kv.bwd_bytes *= copies;
    o->kv.act_bytes *= copies;
    o->kv_heads = (int)(o->kv_heads * copies);
}

/* Megatron's FusedScaleMaskSoftmax.is_kernel_available for fp16/bf16 scores of attn_batches
 * (b x heads on this rank) x sq x sk: 16 < sk <= 4096, sq and sk multiples of 4, attn_batches a
 * multiple of 4, and the batches (causal) or rows (padding mask) a multiple of the kernel's
 * batches per 128-thread block (warps of min(32, next_pow2(sk)) lanes, 2 rows a warp when
 * next_pow2(sk) <= 128). */
static int megatron_softmax_fusable(double attn_batches, double sq, double sk, int causal)
{
    long b = (long)attn_batches, q = (long)sq, k = (long)sk;
    if (!(k > 16 && k <= 4096) || q % 4 || k % 4 || b % 4)
        return 0;
    long pow2 = 1;
    while (pow2 < k)
        pow2 *= 2;
    long warp = pow2 < 32 ? pow2 : 32;
    long per_block = (128 / warp) * (pow2 <= 128 ? 2 : 1);
    return causal ? b % per_block == 0 : q % per_block == 0;
}

/* The PyTorch path Megatron takes instead (softmax in fp32, as query-key layer scaling forces):
 * float(), scale, masked_fill, softmax, half() on the scores instead of one kernel, forward
 * and (through autograd) backward. Bytes per score beyond the fused kernel's: forward
 * (2+4) + 8 + (4+1+4) + 8 + (4+2) - 4 = 33; backward (2+4) + 12 + 9 + 8 + (4+2) - 6 = 35. */
static const double UNFUSED_SOFTMAX_FWD_BYTES = 33.0;
static const double UNFUSED_SOFTMAX_BWD_BYTES = 35.0;
static const int UNFUSED_SOFTMAX_KERNELS = 4;

static void check_softmax_fusion(workload_op *op)
{
    if (!op->megatron_softmax ||
        megatron_softmax_fusable(op->batch, op->m, op->n, op->megatron_softmax == 1))
        return;
    double scores = op->batch * op->m * op->n;
    op->fwd_bytes += UNFUSED_SOFTMAX_FWD_BYTES * scores;
    op->bwd_bytes += UNFUSED_SOFTMAX_BWD_BYTES * scores;
    op->kernels += UNFUSED_SOFTMAX_KERNELS;
    op->megatron_softmax = 0;
}

void workload_op_gemm_slice(const workload_op *op, double share, workload_op *out)
{
    assert(op->kind == OP_GEMM && share > 0 && share <= 1);
    *out = *op;
    shard_gemm(out, 1.0 / share, 1); /* a column split over 1 / share ranks, rank 0's part */
}

const workload_op *workload_op_sac_part(const workload_op *op, workload_op *tmp)
{
    if (op->sac_redo >= 1.0)
        return op;
    if (op->sac_redo <= 0.0)
        return NULL;
    workload_op_gemm_slice(op, op->sac_redo, tmp);
    return tmp;
}

/* Divide `out` (a copy of op) as op's split says, over tp > 1 ranks. */
static void shard_by_split(const workload_op *op, int tp, int sequence_parallel, int vocab_parallel,
                           workload_op *out)
{
    const double t = tp;

    switch (op->split) {
    case SPLIT_REPLICATED: break;
    case SPLIT_SEQUENCE:
        if (sequence_parallel) {
            out->m /= t;
            divide_work(out, t);
        }
        break;
    case SPLIT_COLUMN:
    case SPLIT_ROW: /* the weight is split on N (column) or on K (row) */
        if (op->kind == OP_GEMM) {
            shard_gemm(out, t, op->split == SPLIT_COLUMN);
            break;
        }
        if (op->split == SPLIT_COLUMN)
            out->n /= t;
        else
            out->k /= t;
        divide_work(out, t);
        out->params /= t;
        break;
    case SPLIT_HEADS:
        out->batch /= t;
        divide_work(out, t);
        out->params /= t;
        break;
    case SPLIT_VOCAB:
        if (!vocab_parallel)
            break;
        if (op->kind == OP_GEMM) {
            shard_gemm(out, t, 1);
        } else if (op->kind == OP_EMBEDDING) {
            /* each rank looks up its slice of the table and writes a full (masked) output
             * that is then all-reduced: only the word table divides */
            double word = op->n * op->k;
            assert(op->params >= word);
            out->n /= t;
            out->params = word / t + (op->params - word);
        } else {
            out->n /= t;
            divide_work(out, t);
            out->params /= t;
        }
        break;
    }
}

void workload_op_shard(const workload_op *op, int tp, int sequence_parallel, int vocab_parallel,
                       workload_op *out)
{
    assert(op && out && tp >= 1);
    *out = *op;
    if (op->kv_heads > 0 && tp > op->kv_heads) {
        assert(tp % op->kv_heads == 0); /* strategy_validate */
        replicate_kv(out, (double)tp / op->kv_heads);
    }
    if (tp > 1) {
        const workload_op whole = *out;
        shard_by_split(&whole, tp, sequence_parallel, vocab_parallel, out);
    }
    check_softmax_fusion(out);
    assert(out->fwd_flops >= 0 && out->fwd_bytes >= 0 && out->params >= 0);
}

void workload_op_shard_expert(const workload_op *op, int tp, int ep, int etp, double load,
                              workload_op *out)
{
    assert(op && out && op->expert && tp >= 1 && ep >= 1 && etp >= 1 && load > 0);
    assert(op->split == SPLIT_COLUMN || op->split == SPLIT_ROW);
    *out = *op;
    int on_n = op->split == SPLIT_COLUMN;
    double rows = (double)ep * etp / tp * load; /* mean rows per expert grow by this */
    double work = load / tp;                    /* FLOPs and elementwise traffic */
    out->m = op->m * rows;
    if (on_n)
        out->n = op->n / etp;
    else
        out->k = op->k / etp;
    out->params = op->params / ((double)ep * etp);
    out->fwd_flops = op->fwd_flops * work;
    out->bwd_flops = op->bwd_flops * work;
    if (op->kind == OP_GEMM) {
        /* E grouped GEMMs: E / ep of them, each of the new shape; traffic follows the shape */
        double before = op->batch * (op->m * op->k + op->k * op->n + op->m * op->n);
        out->batch = op->batch / ep;
        double after = out->batch * (out->m * out->k + out->k * out->n + out->m * out->n);
        assert(before > 0);
        out->fwd_bytes = op->fwd_bytes * after / before;
        out->bwd_bytes = op->bwd_bytes * after / before;
        out->act_bytes = op->act_bytes * (out->batch * out->m * out->k) /
                         (op->batch * op->m * op->k); /* its input */
    } else {
        out->fwd_bytes = op->fwd_bytes * work;
        out->bwd_bytes = op->bwd_bytes * work;
        out->act_bytes = op->act_bytes * work;
    }
    assert(out->fwd_flops >= 0 && out->fwd_bytes >= 0 && out->params >= 0);
}
