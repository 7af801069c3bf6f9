/* chunk.c: segment templates of one model chunk on one kind of GPU: forward, full-recompute
 * replay and backward cut at tensor-parallel collectives, gradient buckets, saved activations;
 * and their cache, one template per (GPU profile, chunk), built when a rank first needs it. */
#include "compile_ctx.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../sim/cost/cost.h"

static void seg_push(segment_list *l, segment sg)
{
    xgrow(&l->seg, sizeof *l->seg, (size_t)l->n + 1, &l->cap);
    l->seg[l->n++] = sg;
}

/* The op's kernels, launched one after another, each run once launched and the GPU free. A
 * straggler (slowdown > 1) runs its kernels slower; the host launches them as fast as ever.
 * Under `precision: fp8` the layers' GEMMs are costed as FP8 GEMMs, the rest at `prec`. With a
 * profile database the passes it matches take their measured kernel times (full: the op graph's
 * op, NULL for a context-parallel ring step, which is never matched); `replay`: a forward
 * replayed for recompute, for the record. */
static void add_op_part(const compile_ctx *cx, segment *sg, const workload_op *full,
                        const workload_op *op, op_pass pass, int replay, unit_part part,
                        const device_spec *dev, double slowdown)
{
    const strategy *s = cx->s;
    precision_t prec = strategy_op_precision(s, op);
    workload_op fp8_core;
    if (prec != s->precision && op->kind == OP_ATTENTION)
        op = cost_attention_in(op, s->precision, prec, &fp8_core);
    /* a split backward: the weight gradient's share of the op's kernels and time in W, the
     * rest in B (a measured backward is split in the model's proportion) */
    double share = 1.0;
    int kw = 0;
    if (part != PART_WHOLE) {
        assert(pass == PASS_BWD);
        double w = cost_op_weight_grad_share(op, prec, dev);
        kw = cost_op_weight_grad_kernels(op);
        share = part == PART_WEIGHT ? w : 1.0 - w;
        if (part == PART_WEIGHT && kw == 0)
            return;
    }
    if (sg->n_ops++ == 0 || op->layer < sg->lo)
        sg->lo = op->layer;
    if (sg->n_ops == 1 || op->layer > sg->hi)
        sg->hi = op->layer;
    double model = cost_op_kernel_seconds(op, pass, prec, dev);
    profile_hit hit;
    profile_match_op(full ? cx->profile : NULL, &cx->wg.model, full, op, pass, prec, dev, model,
                     &hit);
    if (cx->stats && part != PART_WEIGHT)
        profile_stats_add(cx->stats, op, pass, replay, &hit, model);
    double g = hit.seconds * slowdown * share;
    int k = cost_op_kernels(op, pass);
    double c = cost_op_launch_seconds(op, pass);
    if (part != PART_WHOLE && k > 0) {
        int kp = part == PART_WEIGHT ? kw : k - kw;
        c *= (double)kp / k;
        k = kp;
    }
    assert(g >= 0 && c >= 0);
    if (k < 1)
        k = 1;
    for (int j = 0; j < k; j++) {
        sg->cpu += c / k;
        sg->span = (sg->span > sg->cpu ? sg->span : sg->cpu) + g / k;
    }
    sg->gpu += g;
}

static void add_op(const compile_ctx *cx, segment *sg, const workload_op *full,
                   const workload_op *op, op_pass pass, int replay, const device_spec *dev,
                   double slowdown)
{
    add_op_part(cx, sg, full, op, pass, replay, PART_WHOLE, dev, slowdown);
}

/* The attention core under context parallelism: one segment of cp ring steps (the rank's
 * queries against one K/V chunk each), emitted by context_emit_ring. op is the core on seq / cp
 * queries and keys. Causal, load-balanced: step 0 (the rank's own chunk) is that causal
 * kernel, each later step half of the s/cp square of every head without a mask (one query half
 * against the whole chunk, or the whole queries against one half): the kernel on half the heads
 * (context_ring_later_step). Without a mask every step is the full square. */
static void add_ring(segment *sg, const compile_ctx *cx, const workload_op *op, op_pass pass,
                     const device_spec *dev, double slowdown)
{
    assert(sg->n_ops == 0);
    workload_op later;
    context_ring_later_step(op, &later);
    add_op(cx, sg, NULL, op, pass, 0, dev, slowdown);
    sg->gpu0 = sg->gpu;
    for (int j = 1; j < cx->cp; j++)
        add_op(cx, sg, NULL, &later, pass, 0, dev, slowdown);
    sg->ring = 1;
}

static int chunk_has_op(const compile_ctx *cx, int mc, const workload_op *op)
{
    if (op->layer < 0)
        return compile_chunk_has_embedding(cx, mc);
    if (op->layer >= cx->wg.model.layers)
        return compile_chunk_has_head(cx, mc);
    return op->layer >= compile_chunk_lo(cx, mc) && op->layer < compile_chunk_hi(cx, mc);
}

/* Tensor-parallel collective points (Megatron's f and g operators): forward after a
 * row-parallel GEMM and after a vocab-parallel embedding; backward after the input gradient of
 * a column-parallel or vocab-parallel GEMM. Experts laid out by expert parallelism make none:
 * their tokens come and go by the all-to-alls (expert_cut). */
static int fwd_cut(const compile_ctx *cx, const workload_op *op)
{
    if (cx->tp == 1 || (op->expert && cx->expert_layout))
        return 0;
    if (op->kind == OP_GEMM && op->split == SPLIT_ROW)
        return 1;
    return op->kind == OP_EMBEDDING && strategy_vocab_parallel_for_layer(cx->s, op->layer);
}

static int bwd_cut(const compile_ctx *cx, const workload_op *op)
{
    if (cx->tp == 1 || op->kind != OP_GEMM || (op->expert && cx->expert_layout))
        return 0;
    if (op->split == SPLIT_COLUMN)
        return 1;
    return op->split == SPLIT_VOCAB && strategy_vocab_parallel_for_layer(cx->s, op->layer);
}

/* Expert parallelism's cut after op i of the pass (`next` the op the pass runs after it, -1
 * at the end): into the experts where the next op is a routed-expert op and op i is not (the
 * permute's output forward, the unpermute's input gradient backward), out of them in the
 * reverse case (the last expert GEMM's output forward, the first one's input gradient
 * backward). The expert ops of a layer are consecutive. */
static int expert_cut(const compile_ctx *cx, int i, int next)
{
    if (!cx->expert_layout)
        return CUT_NONE;
    int here = cx->wg.ops[i].expert, there = next >= 0 && cx->wg.ops[next].expert;
    return !here && there ? CUT_EP_IN : here && !there ? CUT_EP_OUT : CUT_NONE;
}

/* Op i as a rank of a profile with routed-expert load `load` runs it: the TP-sharded op, or an
 * expert op at that load (scratch in *tmp). */
static const workload_op *rank_op(const compile_ctx *cx, int i, double load, workload_op *tmp)
{
    const workload_op *op = &cx->wg.ops[i];
    if (!(op->expert && cx->expert_layout) || load == 1.0)
        return &cx->sharded[i];
    workload_op_shard_expert(op, cx->tp, cx->ep, cx->etp, load, tmp);
    return tmp;
}

/* What one pass over a chunk covers, for its label: the embedding (layer -1), transformer
 * layers lo..hi, the "LM head" (everything after the last layer: final norm, LM head, loss). */
typedef struct pass_extent {
    int lo, hi, embedding, head;
} pass_extent;

static void extent_add(pass_extent *e, int layer, int layers)
{
    if (layer < 0)
        e->embedding = 1;
    else if (layer >= layers)
        e->head = 1;
    else {
        if (e->hi < 0 || layer < e->lo)
            e->lo = layer;
        if (layer > e->hi)
            e->hi = layer;
    }
}

/* Every segment of a pass carries the pass's name, so the report's top items add up to what a
 * user can act on: "fwd stage 3, layers 18-23", "bwd stage 0, embedding + layers 0-5",
 * "recompute stage 2, layers 12-17", "fwd embedding + layers 0-23 + LM head" (no stage when
 * the plan is not pipelined). */
static void label_pass(compile_ctx *cx, segment_list *l, const char *pass, int mc,
                       const pass_extent *e)
{
    char name[128];
    int n = snprintf(name, sizeof name, "%s", pass);
    if (cx->pp > 1)
        n += snprintf(name + n, sizeof name - (size_t)n, " stage %d,", stage_of_chunk(cx, mc));
    const char *sep = " ";
    if (e->embedding) {
        n += snprintf(name + n, sizeof name - (size_t)n, "%sembedding", sep);
        sep = " + ";
    }
    if (e->hi >= 0) {
        if (e->lo == e->hi)
            n += snprintf(name + n, sizeof name - (size_t)n, "%slayer %d", sep, e->lo);
        else
            n += snprintf(name + n, sizeof name - (size_t)n, "%slayers %d-%d", sep, e->lo, e->hi);
        sep = " + ";
    }
    if (e->head)
        snprintf(name + n, sizeof name - (size_t)n, "%sLM head", sep);
    int label = graph_label(cx->g, name);
    for (int i = 0; i < l->n; i++)
        l->seg[i].label = label;
}

/* Parameters an op adds to its chunk. A tied LM head shares the word embedding: with one
 * pipeline stage, a V (the first and last chunks both on stage 0) or DualPipe (each copy's
 * first and last on stages 0 and pp - 1), both are on one stage and held once; otherwise the
 * last stage holds its own copy (Megatron's word_embeddings_for_head), so the op's tied part
 * counts there. */
static double chunk_op_params(const compile_ctx *cx, const workload_op *op)
{
    return op->params - (compile_head_with_embedding(cx) ? op->tied_params : 0.0);
}

/* Parameters an op adds to its FSDP unit (what the unit gathers). A copy of a tied weight on
 * its owner's stage (MTP's lookup of the embedding, past the main layers) is not gathered
 * again. The tied LM head's unit still gathers the shared weight whole, as the embedding's
 * unit does (the weight held once: chunk_op_params). */
static double unit_op_params(const compile_ctx *cx, const workload_op *op, int layers)
{
    int copy = op->layer >= layers && op->kind == OP_EMBEDDING && compile_head_with_embedding(cx);
    return op->params - (copy ? op->tied_params : 0.0);
}

/* Saved activations of an op's forward, after recompute savings. */
static double saved_act_bytes(const compile_ctx *cx, const workload_op *op)
{
    recompute_mode rm = strategy_recompute_for_layer(cx->s, op->layer);
    int layer_op = WORKLOAD_OP_RECOMPUTABLE(op, cx->wg.model.layers);
    if (layer_op && rm == RECOMPUTE_FULL)
        return 0; /* only the layer input is kept: counted once per layer */
    if (strategy_op_recomputed(cx->s, op, cx->wg.model.layers))
        return op->act_bytes * op->rc_keep;
    if (layer_op && rm == RECOMPUTE_OP)
        return op->act_bytes * op->sac_keep;
    return op->act_bytes;
}

/* The chunk's FSDP units: one per layer index among its ops (embedding, layers, head), in
 * forward order, with their (TP-sharded) parameters and the part of them sharded over the
 * expert-data-parallel groups (`expert`: an expert layout's routed-expert op). */
static void add_unit_params(chunk_template *ct, int layer, double params, int expert)
{
    if (ct->n_units == 0 || ct->unit_layer[ct->n_units - 1] != layer) {
        size_t n = (size_t)ct->n_units + 1;
        ct->unit_layer = xreallocarray(ct->unit_layer, n, sizeof *ct->unit_layer);
        ct->unit_params = xreallocarray(ct->unit_params, n, sizeof *ct->unit_params);
        ct->unit_expert = xreallocarray(ct->unit_expert, n, sizeof *ct->unit_expert);
        ct->unit_layer[ct->n_units] = layer;
        ct->unit_expert[ct->n_units] = 0.0;
        ct->unit_params[ct->n_units++] = 0.0;
    }
    ct->unit_params[ct->n_units - 1] += params;
    if (expert)
        ct->unit_expert[ct->n_units - 1] += params;
}

/* Forward, or (replay) the full-recompute replay of the chunk's fully recomputed layers. With
 * cx->layer_cuts a segment also ends where the layer changes, so each can wait for its own
 * parameters (ZeRO gathers); under FSDP the replay too (it runs inside each unit's backward). */
static void build_forward(compile_ctx *cx, int mc, const device_spec *dev, double slowdown,
                          double load, int replay, chunk_template *ct)
{
    const workload_graph *wg = &cx->wg;
    segment_list *l = replay ? &ct->rec : &ct->fwd;
    int cut_layers = replay ? cx->fsdp : cx->layer_cuts;
    pass_extent e = {0, -1, 0, 0};
    segment cur;
    memset(&cur, 0, sizeof cur);
    int any = 0;
    workload_op tmp;
    for (int i = 0; i < wg->n_ops; i++) {
        const workload_op *op = rank_op(cx, i, load, &tmp);
        int layer = wg->ops[i].layer;
        if (!chunk_has_op(cx, mc, &wg->ops[i]))
            continue;
        recompute_mode rm = replay && WORKLOAD_OP_RECOMPUTABLE(&wg->ops[i], wg->model.layers)
                                ? strategy_recompute_for_layer(cx->s, layer)
                                : RECOMPUTE_NONE;
        if (replay && (rm != RECOMPUTE_FULL && rm != RECOMPUTE_OP))
            continue;
        const workload_op *full = &wg->ops[i];
        workload_op part;
        if (rm == RECOMPUTE_OP) { /* op-level SAC: the op, a slice of it, or nothing again */
            const workload_op *again = workload_op_sac_part(op, &part);
            if (!again)
                continue;
            if (again != op)
                full = NULL; /* no measured op matches a slice */
            op = again;
        }
        if ((cut_layers && cur.n_ops > 0 && cur.lo != op->layer) ||
            (context_ring_op(cx, &wg->ops[i]) && cur.n_ops > 0)) {
            seg_push(l, cur);
            memset(&cur, 0, sizeof cur);
        }
        if (context_ring_op(cx, &wg->ops[i]))
            add_ring(&cur, cx, op, PASS_FWD, dev, slowdown);
        else
            add_op(cx, &cur, full, op, PASS_FWD, replay, dev, slowdown);
        extent_add(&e, op->layer, wg->model.layers);
        any = 1;
        if (!replay) {
            ct->params += chunk_op_params(cx, op);
            int expert = op->expert && cx->expert_layout;
            if (expert)
                ct->expert_params += op->params;
            ct->act_bytes += saved_act_bytes(cx, op);
            add_unit_params(ct, op->layer, unit_op_params(cx, op, wg->model.layers), expert);
        }
        int cut =
            fwd_cut(cx, &wg->ops[i]) ? CUT_TP : expert_cut(cx, i, i + 1 < wg->n_ops ? i + 1 : -1);
        if (cut != CUT_NONE || cur.ring) {
            cur.cut = cur.ring ? CUT_NONE : cut;
            seg_push(l, cur);
            memset(&cur, 0, sizeof cur);
        }
    }
    if (any && (cur.gpu + cur.cpu > 0 || (!replay && l->n == 0)))
        seg_push(l, cur);
    label_pass(cx, l, replay ? "recompute" : "fwd", mc, &e);
}

/* Push the backward segment being built (and, split, its W twin: no cut, no ring), then
 * start both afresh. */
static void push_backward(chunk_template *ct, segment *cur, segment *wcur, int split)
{
    seg_push(&ct->bwd, *cur);
    if (split) {
        wcur->params = cur->params;
        wcur->expert_params = cur->expert_params;
        seg_push(&ct->wgt, *wcur);
    }
    memset(cur, 0, sizeof *cur);
    memset(wcur, 0, sizeof *wcur);
}

/* Backward, in reverse. With overlapped data parallelism a segment also ends where a layer's
 * gradients are complete, so buckets can start while earlier layers run. A schedule that
 * splits the backward builds B (input gradients, with the cuts) in bwd and W (weight
 * gradients) in wgt, segment for segment. */
static void build_backward(compile_ctx *cx, int mc, const device_spec *dev, double slowdown,
                           double load, chunk_template *ct)
{
    const workload_graph *wg = &cx->wg;
    const strategy *s = cx->s;
    int per_layer = cx->dp > 1 && (s->dp_overlap || cx->fsdp);
    int split = pipeline_splits_backward(s->schedule);
    unit_part in = split ? PART_INPUT : PART_WHOLE;
    double e = precision_bytes(s->precision);
    pass_extent ext = {0, -1, 0, 0};
    segment cur, wcur;
    memset(&cur, 0, sizeof cur);
    memset(&wcur, 0, sizeof wcur);
    const workload_op *last = NULL;
    workload_op tmp;
    for (int i = wg->n_ops - 1; i >= 0; i--) {
        const workload_op *op = rank_op(cx, i, load, &tmp);
        if (!chunk_has_op(cx, mc, &wg->ops[i]))
            continue;
        int ring = context_ring_op(cx, &wg->ops[i]);
        double held = cur.gpu + cur.cpu + wcur.gpu + wcur.cpu;
        if ((per_layer && last && last->layer != op->layer && held > 0) || (ring && cur.n_ops > 0))
            push_backward(ct, &cur, &wcur, split);
        if (ring) {
            assert(!op->rc_module); /* a fused core: nothing for selective recompute */
            add_ring(&cur, cx, op, PASS_BWD, dev, slowdown);
        } else {
            add_op_part(cx, &cur, &wg->ops[i], op, PASS_BWD, 0, in, dev, slowdown);
            if (split) {
                add_op_part(cx, &wcur, &wg->ops[i], op, PASS_BWD, 0, PART_WEIGHT, dev, slowdown);
                if (op->kind == OP_GEMM && cost_op_weight_grad_kernels(op) > 0)
                    ct->wgt_act_bytes += op->batch * (op->m * op->k + op->m * op->n) * e;
            }
        }
        if (strategy_op_runs_again(s, op, wg->model.layers))
            add_op(cx, &cur, &wg->ops[i], op, PASS_FWD, 1, dev, slowdown);
        extent_add(&ext, op->layer, wg->model.layers);
        cur.params += chunk_op_params(cx, op);
        if (op->expert && cx->expert_layout)
            cur.expert_params += op->params;
        last = &cx->sharded[i];
        int cut = bwd_cut(cx, &wg->ops[i]) ? CUT_TP : expert_cut(cx, i, i - 1);
        if (cut != CUT_NONE || ring) {
            cur.cut = ring ? CUT_NONE : cut;
            push_backward(ct, &cur, &wcur, split);
        }
    }
    if (last && (cur.gpu + cur.cpu + wcur.gpu + wcur.cpu > 0 || ct->bwd.n == 0))
        push_backward(ct, &cur, &wcur, split);
    label_pass(cx, &ct->bwd, split ? "bwd-input" : "bwd", mc, &ext);
    if (split)
        label_pass(cx, &ct->wgt, "bwd-weight", mc, &ext);
}

/* Gradient buckets, filled in backward order as gradients become ready. Buckets run from the
 * top layers down; a forward segment needs every bucket up to the first one (in that order)
 * reaching down to its highest layer. */
static void build_buckets(const compile_ctx *cx, chunk_template *ct)
{
    int layers = cx->wg.model.layers;
    size_t cap = (size_t)2 * ct->bwd.n + 1; /* a dense and an expert bucket per segment */
    ct->bucket_end = xmalloc(cap * sizeof *ct->bucket_end);
    ct->bucket_bytes = xmalloc(cap * sizeof *ct->bucket_bytes);
    ct->bucket_lo = xmalloc(cap * sizeof *ct->bucket_lo);
    ct->bucket_expert = xmalloc(cap * sizeof *ct->bucket_expert);
    /* dense and expert gradients fill their own buckets (Megatron-Core's separate expert
     * buffers); without an expert layout every gradient is dense */
    double bucket = cx->s->bucket_mb * 1e6, acc[2] = {0, 0};
    int lo[2] = {layers, layers};
    for (int i = 0; i < ct->bwd.n; i++) {
        const segment *sg = &ct->bwd.seg[i];
        double part[2] = {sg->params - sg->expert_params, sg->expert_params};
        for (int x = 0; x < 2; x++) {
            acc[x] += part[x] * cx->grad_elem;
            if ((x == 0 || part[x] > 0) && sg->lo < lo[x])
                lo[x] = sg->lo;
            if (acc[x] >= bucket || (i == ct->bwd.n - 1 && acc[x] > 0)) {
                ct->bucket_end[ct->n_buckets] = i;
                ct->bucket_lo[ct->n_buckets] = lo[x];
                ct->bucket_expert[ct->n_buckets] = (uint8_t)x;
                ct->bucket_bytes[ct->n_buckets++] = acc[x];
                acc[x] = 0;
                lo[x] = layers;
            }
        }
    }
    ct->fwd_bucket = xmalloc((size_t)(ct->fwd.n + 1) * sizeof *ct->fwd_bucket);
    for (int i = 0; i < ct->fwd.n; i++) {
        int b = 0;
        /* expert buckets without an expert shard peer are never gathered */
        while (b < ct->n_buckets - 1 && (ct->bucket_lo[b] > ct->fwd.seg[i].hi ||
                                         (ct->bucket_expert[b] && cx->edp_shard == 1)))
            b++;
        ct->fwd_bucket[i] = b;
    }
}

/* Build chunk mc's segments with op costs on `dev`, GPU (kernel) times multiplied by
 * `slowdown`, routed-expert ops at `load` (workload_op_shard_expert; 1 balanced), its gradient
 * buckets and activation bytes. Labels are interned in cx->g. */
static void chunk_template_build(compile_ctx *cx, int mc, const device_spec *dev, double slowdown,
                                 double load, chunk_template *ct)
{
    assert(mc >= 0 && mc < cx->mcs && slowdown > 0 && load > 0);
    memset(ct, 0, sizeof *ct);
    build_forward(cx, mc, dev, slowdown, load, 0, ct);

    /* full recompute keeps each such layer's input (sequence-parallel: a 1/tp slice) */
    for (int l = compile_chunk_lo(cx, mc); l < compile_chunk_hi(cx, mc); l++)
        if (strategy_recompute_for_layer(cx->s, l) == RECOMPUTE_FULL)
            ct->act_bytes += cx->tp_bytes / (cx->s->sequence_parallel ? cx->tp : 1);
    /* and each multi-token-prediction layer's, on the last chunk */
    int L = cx->wg.model.layers;
    if (compile_chunk_has_head(cx, mc) && strategy_recompute_for_layer(cx->s, L) == RECOMPUTE_FULL)
        ct->act_bytes +=
            cx->wg.model.mtp_layers * cx->tp_bytes / (cx->s->sequence_parallel ? cx->tp : 1);

    build_forward(cx, mc, dev, slowdown, load, 1, ct);
    build_backward(cx, mc, dev, slowdown, load, ct);
    build_buckets(cx, ct);
}

static void chunk_template_free(chunk_template *ct)
{
    free(ct->fwd.seg);
    free(ct->bwd.seg);
    free(ct->rec.seg);
    free(ct->wgt.seg);
    free(ct->bucket_end);
    free(ct->bucket_bytes);
    free(ct->bucket_lo);
    free(ct->bucket_expert);
    free(ct->fwd_bucket);
    free(ct->unit_layer);
    free(ct->unit_params);
    free(ct->unit_expert);
}

const chunk_template *chunk_template_of(compile_ctx *cx, int r, int mc)
{
    assert(r >= 0 && r < cx->c->n_gpus && mc >= 0 && mc < cx->mcs);
    int k = cx->prof_of_rank[r];
    assert(k >= 0 && k < cx->n_prof);
    size_t i = (size_t)k * cx->mcs + (size_t)mc;
    if (!cx->built[i]) {
        chunk_template_build(cx, mc, cx->prof_dev[k], cx->prof_slowdown[k], cx->prof_load[k],
                             &cx->tmpl[i]);
        cx->built[i] = 1;
    }
    return &cx->tmpl[i];
}

/* A pass's kernel time on the reference templates, at least 0.1 us (a pass launches). */
static double pass_seconds(const segment_list *a, const segment_list *b)
{
    double t = 0;
    for (int i = 0; i < a->n; i++)
        t += a->seg[i].gpu;
    for (int i = 0; b && i < b->n; i++)
        t += b->seg[i].gpu;
    return t > 1e-7 ? t : 1e-7;
}

void compile_orders_init(compile_ctx *cx)
{
    cx->orders = NULL;
    if (cx->s->schedule != SCHED_ZBV) /* the one schedule ordered by the plan's own times */
        return;
    int n = pipeline_units(cx->s->schedule, cx->M, cx->v);
    double *cost = xmalloc((size_t)cx->pp * 6 * sizeof *cost);
    for (int p = 0; p < cx->pp; p++) /* pipeline_zbv_order's kinds: each chunk 1 before 0 */
        for (int c = 0; c < 2; c++) {
            const chunk_template *ct = compile_chunk_ref(cx, compile_chunk_of(cx, p, 1 - c));
            cost[p * 6 + c] = pass_seconds(&ct->fwd, NULL);
            cost[p * 6 + 2 + c] = pass_seconds(&ct->rec, &ct->bwd);
            cost[p * 6 + 4 + c] = pass_seconds(&ct->wgt, NULL);
        }
    cx->orders = xmalloc((size_t)cx->pp * n * sizeof *cx->orders);
    assert(n == 6 * cx->M);
    pipeline_zbv_orders(cx->pp, cx->M, cost, cx->orders);
    free(cost);
}

void compile_orders_free(compile_ctx *cx)
{
    free(cx->orders);
    cx->orders = NULL;
}

int compile_stage_order(const compile_ctx *cx, int p, pipeline_unit *out)
{
    int n = pipeline_units(cx->s->schedule, cx->M, cx->v);
    if (!cx->orders) /* n: the most a stage's order holds, its own count returned */
        return pipeline_order(cx->s->schedule, cx->pp, p, cx->M, cx->v, cx->s->overlap_a2a, out);
    memcpy(out, cx->orders + (size_t)p * n, (size_t)n * sizeof *out);
    return n;
}

const chunk_template *compile_chunk_ref(compile_ctx *cx, int mc)
{
    return chunk_template_of(cx, compile_rank_of(cx->s, 0, 0, stage_of_chunk(cx, mc)), mc);
}

void chunk_profiles_init(compile_ctx *cx)
{
    const cluster *c = cx->c;
    double *load = xmalloc((size_t)c->n_gpus * sizeof *load);
    for (int p = 0; p < cx->pp; p++)
        for (int i = 0; i < cx->tp * cx->dp; i++)
            load[compile_stage_rank(cx, i, p)] = compile_expert_load(cx, i);
    cx->prof_of_rank = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_of_rank);
    cx->prof_dev = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_dev);
    cx->prof_slowdown = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_slowdown);
    cx->prof_load = xmalloc((size_t)c->n_gpus * sizeof *cx->prof_load);
    cx->n_prof = 0;
    for (int r = 0; r < c->n_gpus; r++) {
        double slow = c->slowdown ? c->slowdown[r] : 1.0;
        int k = 0;
        while (k < cx->n_prof && !(cx->prof_dev[k] == c->device[r] &&
                                   cx->prof_slowdown[k] == slow && cx->prof_load[k] == load[r]))
            k++;
        if (k == cx->n_prof) {
            cx->prof_dev[k] = c->device[r];
            cx->prof_slowdown[k] = slow;
            cx->prof_load[k] = load[r];
            cx->n_prof++;
        }
        cx->prof_of_rank[r] = k;
    }
    free(load);
    cx->tmpl = xcalloc((size_t)cx->n_prof * cx->mcs, sizeof *cx->tmpl);
    cx->built = xcalloc((size_t)cx->n_prof * cx->mcs, 1);
}

void chunk_profiles_free(compile_ctx *cx)
{
    for (size_t i = 0; i < (size_t)cx->n_prof * cx->mcs; i++)
        if (cx->built[i])
            chunk_template_free(&cx->tmpl[i]);
    free(cx->tmpl);
    free(cx->built);
    free(cx->prof_of_rank);
    free(cx->prof_dev);
    free(cx->prof_slowdown);
    free(cx->prof_load);
}

static int same_segments(const segment_list *a, const segment_list *b)
{
    if (a->n != b->n)
        return 0;
    for (int i = 0; i < a->n; i++) {
        const segment *x = &a->seg[i], *y = &b->seg[i];
        if (x->cut != y->cut || x->ring != y->ring || x->label != y->label ||
            x->params != y->params || x->expert_params != y->expert_params || x->lo != y->lo ||
            x->hi != y->hi)
            return 0;
    }
    return 1;
}

int chunk_template_same_shape(const chunk_template *a, const chunk_template *b)
{
    if (!same_segments(&a->fwd, &b->fwd) || !same_segments(&a->bwd, &b->bwd) ||
        !same_segments(&a->rec, &b->rec) || !same_segments(&a->wgt, &b->wgt) ||
        a->n_buckets != b->n_buckets || a->params != b->params ||
        a->expert_params != b->expert_params || a->n_units != b->n_units)
        return 0;
    for (int i = 0; i < a->n_units; i++)
        if (a->unit_layer[i] != b->unit_layer[i] || a->unit_params[i] != b->unit_params[i] ||
            a->unit_expert[i] != b->unit_expert[i])
            return 0;
    for (int i = 0; i < a->n_buckets; i++)
        if (a->bucket_end[i] != b->bucket_end[i] || a->bucket_bytes[i] != b->bucket_bytes[i] ||
            a->bucket_expert[i] != b->bucket_expert[i])
            return 0;
    return 1;
}
