/* strategy_validate.c: THE plan-validity rules (strategy.h strategy_validate), the one place
 * they are written: the schedule's, ZeRO's and HSDP's, the model split over tensor and pipeline
 * ranks, expert and context parallelism, the batch. Errors point at the loaded locations. */
#include "strategy.h"
#include "pipeline_split.h"
#include "schedule.h"
#include "../sim/base/limits.h"

#include <stdio.h>

/* Where a recompute of one of `modes` (a bit per recompute_mode) is in force: the strategy's
 * (at its key, else `fallback`), else the first child's that sets one; *mode gets it. Line 0:
 * none. */
static src_loc recompute_in_force(const strategy *s, unsigned modes, src_loc fallback,
                                  recompute_mode *mode)
{
    *mode = s->recompute;
    if (modes & 1u << s->recompute)
        return s->recompute_loc.line ? s->recompute_loc : fallback;
    for (int i = 0; i < s->n_overrides; i++)
        if (s->overrides[i].has_recompute && (modes & 1u << s->overrides[i].recompute)) {
            *mode = s->overrides[i].recompute;
            return s->overrides[i].loc;
        }
    return (src_loc){0, 0};
}

/* DualPipe and DualPipeV overlap a forward chunk with a backward chunk themselves (their F&B
 * steps): Megatron-Core's merge (expert.overlap_a2a) is another schedule's, and a full or
 * op-level recompute's replay inside the overlapped step is not modelled (the merged passes
 * replay no layer).
 * DualPipe's two copies meet in the middle: an even pipeline degree. The micro-batch count is
 * checked with the batch (validate_batch). */
static int validate_dualpipe(const strategy *s, ps_error *err)
{
    src_loc sl = s->schedule_loc.line ? s->schedule_loc : s->pp_loc;
    const char *name = schedule_name(s->schedule);
    if (s->schedule == SCHED_DUALPIPE && s->pp % 2)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the dualpipe schedule needs an even pipeline degree (its two copies "
                            "of the model meet in the middle), got %d; dualpipev takes any",
                            s->pp);
    if (s->overlap_a2a) {
        src_loc o = s->overlap_a2a_loc.line ? s->overlap_a2a_loc : sl;
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column,
                            "strategy.expert.overlap_a2a",
                            "overlap_a2a is Megatron-Core's merge of 1F1B's steps; the %s "
                            "schedule overlaps its forward and backward chunks itself (drop "
                            "overlap_a2a)",
                            name);
    }
    recompute_mode mode;
    src_loc full = recompute_in_force(s, 1u << RECOMPUTE_FULL | 1u << RECOMPUTE_OP, sl, &mode);
    if (full.line)
        return ps_error_set(err, PS_EINPUT, s->file, full.line, full.column, "strategy.recompute",
                            "%s recompute with the %s schedule is not modelled: its "
                            "overlapped forward and backward steps replay no layer",
                            mode == RECOMPUTE_OP ? "op-level" : "full", name);
    return 0;
}

/* The pipeline schedule's own rules: virtual stages exist only in the interleaved schedule,
 * which needs at least two of them, two stages, and whole rounds of micro-batches. */
static int validate_schedule(const strategy *s, ps_error *err)
{
    src_loc sl = s->schedule_loc.line ? s->schedule_loc : s->pp_loc;
    src_loc vl = s->virtual_stages_loc.line ? s->virtual_stages_loc : sl;
    if (s->schedule == SCHED_INTERLEAVED && s->virtual_stages < 2)
        return ps_error_set(
            err, PS_EINPUT, s->file, vl.line, vl.column, "strategy.pipeline.virtual_stages",
            "the interleaved schedule needs virtual_stages >= 2, got %d", s->virtual_stages);
    if (s->schedule == SCHED_INTERLEAVED && s->pp < 2)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the interleaved schedule needs a pipeline degree >= 2, got %d", s->pp);
    if (s->schedule != SCHED_INTERLEAVED && s->virtual_stages != 1)
        return ps_error_set(err, PS_EINPUT, s->file, vl.line, vl.column,
                            "strategy.pipeline.virtual_stages",
                            "virtual_stages must be 1 unless schedule is interleaved "
                            "(schedule is %s, virtual_stages %d)",
                            schedule_name(s->schedule), s->virtual_stages);
    if (pipeline_splits_backward(s->schedule) && s->pp < 2)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the %s schedule needs a pipeline degree >= 2, got %d",
                            schedule_name(s->schedule), s->pp);
    if (pipeline_splits_backward(s->schedule) && s->zero == 3)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the %s schedule with zero 3 (FSDP) is not modelled: its deferred "
                            "weight gradients would need each unit's parameters gathered again",
                            schedule_name(s->schedule));
    return pipeline_merges_steps(s->schedule) ? validate_dualpipe(s, err) : 0;
}

/* Multi-head latent attention and multi-token prediction are modelled without tensor and
 * context parallelism: Megatron-Core replicates MLA's down-projections over tensor ranks and
 * gathers their latents, and splits MTP's projection, none of which protosim's tensor cuts
 * describe; context parallelism would ring MLA's wider query-key heads. Refused, not
 * approximated. */
static int validate_mla(const strategy *s, ps_error *err)
{
    const workload_model *m = &s->model;
    if (!m->mla && m->mtp_layers == 0)
        return 0;
    const char *what = m->mla ? "multi-head latent attention (attention: mla)"
                              : "multi-token prediction (mtp_layers)";
    if (s->tp > 1)
        return ps_error_set(err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column,
                            "strategy.tensor.degree",
                            "%s with tensor parallelism is not modelled yet (its replicated "
                            "down-projections and gathered latents), got degree %d",
                            what, s->tp);
    if (s->cp > 1)
        return ps_error_set(
            err, PS_EINPUT, s->file, s->cp_loc.line, s->cp_loc.column, "strategy.context.degree",
            "%s with context parallelism is not modelled yet, got degree %d", what, s->cp);
    return 0;
}

/* The loaded location of a data key, or the data section's when the key was not written. */
static src_loc data_loc(const strategy *s, src_loc l)
{
    return l.line ? l : s->dp_loc;
}

/* ZeRO's rules: the stage, the shard degree (HSDP), and what each stage is modelled with. */
static int validate_zero(const strategy *s, ps_error *err)
{
    src_loc z = data_loc(s, s->zero_loc), sh = data_loc(s, s->shard_loc);
    src_loc g = data_loc(s, s->gather_loc), o = data_loc(s, s->dp_overlap_loc);
    if (s->zero < 0 || s->zero > 3)
        return ps_error_set(err, PS_EINPUT, s->file, z.line, z.column, "strategy.data.zero",
                            "must be between 0 and 3, got %d", s->zero);
    if (s->shard_degree < 0)
        return ps_error_set(err, PS_EINPUT, s->file, sh.line, sh.column,
                            "strategy.data.shard_degree", "must be >= 1, got %d", s->shard_degree);
    if (s->shard_degree > 0 && s->zero == 0)
        return ps_error_set(err, PS_EINPUT, s->file, sh.line, sh.column,
                            "strategy.data.shard_degree",
                            "shard_degree shards ZeRO state over groups of ranks: it needs zero 1, "
                            "2 or 3 (zero is 0)");
    if (s->shard_degree > 0 && (s->dp * s->cp) % s->shard_degree)
        return ps_error_set(
            err, PS_EINPUT, s->file, sh.line, sh.column, "strategy.data.shard_degree",
            "shard degree %d does not divide the data-parallel degree %d%s", s->shard_degree,
            s->dp * s->cp,
            s->cp > 1 ? " (data x context: the ranks holding the same weights)" : "");
    /* zero 3 with a pipeline runs as PyTorch's pipelining runs FSDP (zero.c, fsdp_keep) */
    if (s->zero == 2 && s->pp > 1)
        return ps_error_set(err, PS_EINPUT, s->file, z.line, z.column, "strategy.data.zero",
                            "zero 2 with a pipeline (degree %d) is not modelled: DeepSpeed's "
                            "pipeline engine takes ZeRO 1 only (zero 3 with a pipeline runs as "
                            "PyTorch's pipelining runs FSDP)",
                            s->pp);
    if (s->overlap_param_gather && s->zero != 1 && s->zero != 2)
        return ps_error_set(err, PS_EINPUT, s->file, g.line, g.column,
                            "strategy.data.overlap_param_gather",
                            "overlap_param_gather gathers the parameters ZeRO 1 and 2 update "
                            "after the optimizer step; with zero %d %s",
                            s->zero,
                            s->zero == 0 ? "nothing is gathered"
                                         : "each unit's parameters are gathered before its "
                                           "forward and backward anyway");
    if (s->zero == 3 && !s->dp_overlap)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, "strategy.data.overlap",
                            "zero 3 without overlap is not modelled: FSDP reduce-scatters each "
                            "unit's gradients as soon as its backward ends");
    return 0;
}

/* Rules that need the model: heads and K/V heads by TP, layers over the model chunks. K/V
 * heads split over TP ranks when there are at least as many (Megatron-Core), so TP must
 * divide them; with fewer, each rank holds the K/V head its query heads use, which needs a
 * whole number of ranks per K/V head. */
static int validate_model_split(const strategy *s, ps_error *err)
{
    const workload_model *m = &s->model;
    if (m->heads % s->tp)
        return ps_error_set(
            err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column, "strategy.tensor.degree",
            "tensor degree %d does not divide the model's %d attention heads", s->tp, m->heads);
    if (m->kv_heads >= s->tp && m->kv_heads % s->tp)
        return ps_error_set(err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column,
                            "strategy.tensor.degree",
                            "tensor degree %d does not divide the model's %d K/V heads "
                            "(kv_heads)",
                            s->tp, m->kv_heads);
    if (m->kv_heads > 0 && m->kv_heads < s->tp && s->tp % m->kv_heads)
        return ps_error_set(err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column,
                            "strategy.tensor.degree",
                            "tensor degree %d is not a multiple of the model's %d K/V heads "
                            "(kv_heads): a rank's query heads would need two K/V heads",
                            s->tp, m->kv_heads);
    return strategy_chunk_layers(s, NULL, err);
}

/* Expert parallelism (Megatron-Core's folding): a stage's tp x dp ranks regrouped as
 * etp x ep x expert-data-parallel; tensor parallelism with experts needs sequence parallelism
 * (Megatron-Core asserts it: the token dispatcher works on sequence-sharded tokens). */
static int validate_expert(const strategy *s, ps_error *err)
{
    const workload_model *m = &s->model;
    src_loc el = s->ep_loc, tl = s->etp_loc;
    if (m->experts == 0) {
        if (s->ep > 1 || s->etp > 1)
            return ps_error_set(err, PS_EINPUT, s->file, el.line, el.column, "strategy.expert",
                                "expert parallelism needs a mixture-of-experts model (experts)");
        return 0;
    }
    if (s->tp > 1 && !s->sequence_parallel)
        return ps_error_set(err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column,
                            "strategy.tensor.sequence_parallel",
                            "tensor parallelism on a mixture-of-experts model needs "
                            "sequence_parallel: true (as Megatron-Core)");
    if (m->experts % s->ep)
        return ps_error_set(err, PS_EINPUT, s->file, el.line, el.column, "strategy.expert.degree",
                            "expert degree %d does not divide the model's %d experts", s->ep,
                            m->experts);
    if (m->ffn_hidden % s->etp)
        return ps_error_set(err, PS_EINPUT, s->file, tl.line, tl.column, "strategy.expert.tensor",
                            "expert tensor degree %d does not divide ffn_hidden (%d)", s->etp,
                            m->ffn_hidden);
    long ranks = (long)s->tp * s->cp * s->dp, need = (long)s->ep * s->etp;
    if (ranks % need)
        return ps_error_set(err, PS_EINPUT, s->file, el.line, el.column, "strategy.expert.degree",
                            "expert degree %d x expert tensor %d = %ld does not divide a stage's "
                            "tensor %d x context %d x data %d = %ld ranks",
                            s->ep, s->etp, need, s->tp, s->cp, s->dp, ranks);
    /* an expert layout (experts not laid out as the dense MLP) has expert-data-parallel
     * groups: ZeRO 0-2 reduce and shard the expert state over them, ZeRO 3 shards the routed
     * experts over them as torchtitan's efsdp mesh does (expert tensor degree 1 only: torchtitan
     * has no expert tensor parallelism; data x context > 1: protosim's FSDP units exist only
     * then). With HSDP they are split as the data-parallel groups are: the expert groups must
     * lie inside one replica (torchtitan: ep divides dp_shard x cp x tp) */
    int layout = s->ep > 1 || s->etp != s->tp;
    if (!layout)
        return 0;
    long replica = (long)strategy_shard_degree(s) * s->tp;
    if (replica % need)
        return ps_error_set(err, PS_EINPUT, s->file, el.line, el.column, "strategy.expert.degree",
                            "expert degree %d x expert tensor %d = %ld does not divide a "
                            "replica's tensor %d x shard_degree %d = %ld ranks: with HSDP the "
                            "expert groups must lie inside one replica",
                            s->ep, s->etp, need, s->tp, strategy_shard_degree(s), replica);
    if (s->zero == 3 && s->etp != 1)
        return ps_error_set(err, PS_EINPUT, s->file, tl.line, tl.column, "strategy.expert.tensor",
                            "zero 3 (FSDP) with expert tensor degree %d is not modelled: the "
                            "routed experts are sharded over their expert-data-parallel groups "
                            "with expert tensor degree 1 only (as torchtitan)",
                            s->etp);
    if (s->zero == 3 && s->dp * s->cp == 1 && ranks / need > 1)
        return ps_error_set(err, PS_EINPUT, s->file, el.line, el.column, "strategy.expert",
                            "zero 3 (FSDP) with expert degree %d over data x context = 1 is not "
                            "modelled: the routed experts would be sharded over %ld "
                            "expert-data-parallel ranks with no data-parallel FSDP around them",
                            s->ep, ranks / need);
    return 0;
}

/* expert.overlap_a2a and expert.delay_wgrad: the conditions Megatron-Core's
 * TransformerConfig asserts for --overlap-moe-expert-parallel-comm (expert parallelism, a
 * virtual pipeline when pipelined, no full recompute, bf16 or fp16 training) and for
 * --delay-wgrad-compute (the overlap on; then refused as not modelled). protosim's schedule for the combined 1F1B is built
 * on its 1F1B or interleaved order, so GPipe is refused too. */
static int validate_expert_overlap(const strategy *s, ps_error *err)
{
    src_loc o = s->overlap_a2a_loc.line ? s->overlap_a2a_loc : s->ep_loc;
    src_loc w = s->delay_wgrad_loc.line ? s->delay_wgrad_loc : s->ep_loc;
    const char *f = "strategy.expert.overlap_a2a";
    if (s->delay_wgrad && !s->overlap_a2a)
        return ps_error_set(err, PS_EINPUT, s->file, w.line, w.column,
                            "strategy.expert.delay_wgrad",
                            "delay_wgrad needs overlap_a2a: true (Megatron-Core's "
                            "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm)");
    if (s->delay_wgrad)
        return ps_error_set(err, PS_EINPUT, s->file, w.line, w.column,
                            "strategy.expert.delay_wgrad",
                            "delay_wgrad is not modelled yet: protosim's backward segments do not "
                            "split the weight-gradient GEMMs from the input-gradient ones (the "
                            "all-to-alls wait for both)");
    if (!s->overlap_a2a)
        return 0;
    if (s->ep < 2)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, f,
                            "overlap_a2a overlaps expert parallelism's all-to-alls: it needs "
                            "expert.degree >= 2, got %d",
                            s->ep);
    if (s->pp > 1 && s->schedule != SCHED_INTERLEAVED)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, f,
                            "overlap_a2a with a pipeline (degree %d) needs the interleaved "
                            "schedule: Megatron-Core merges forward and backward only in its "
                            "virtual-pipeline schedule (schedule is %s)",
                            s->pp, schedule_name(s->schedule));
    if (s->schedule == SCHED_GPIPE)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, f,
                            "overlap_a2a merges a forward with the backward of 1F1B's steady "
                            "state; the gpipe schedule has none (use 1f1b)");
    if (s->precision != PREC_BF16 && s->precision != PREC_FP16)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, f,
                            "overlap_a2a needs bf16, fp16 or fp8 training (Megatron-Core "
                            "asserts it), got %s",
                            precision_name(s->precision));
    if (s->zero == 3)
        return ps_error_set(err, PS_EINPUT, s->file, o.line, o.column, f,
                            "overlap_a2a with zero 3 (FSDP) is not modelled: the combined 1F1B "
                            "is Megatron-Core's schedule, modelled with its distributed "
                            "optimizer (zero 0-2), not with FSDP's per-unit gathers inside the "
                            "merged steps");
    recompute_mode mode;
    src_loc full = recompute_in_force(s, 1u << RECOMPUTE_FULL, o, &mode);
    if (full.line)
        return ps_error_set(err, PS_EINPUT, s->file, full.line, full.column, "strategy.recompute",
                            "full recompute with expert.overlap_a2a is refused, as "
                            "Megatron-Core refuses it (the merged forward and backward replay "
                            "no layer)");
    return 0;
}

/* Context parallelism (strategies/compile/context.c): the load-balanced causal split cuts the sequence
 * into 2 x cp chunks (Megatron-Core and torchtitan require it divisible), and the ring steps
 * are fused attention kernels (Transformer Engine's, PyTorch's SDPA flash), so the model must
 * run flash attention. */
static int validate_context(const strategy *s, ps_error *err)
{
    const workload_model *m = &s->model;
    src_loc l = s->cp_loc;
    if (s->cp == 1)
        return 0;
    if (m->seq % (2 * s->cp))
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "strategy.context.degree",
                            "context degree %d: the sequence (%d) must divide into 2 x %d = %d "
                            "chunks (the load-balanced causal split)",
                            s->cp, m->seq, s->cp, 2 * s->cp);
    if (!m->flash_attention)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "strategy.context.degree",
                            "context parallelism runs the attention as ring steps of a fused "
                            "attention kernel: the model needs `attention: flash`");
    /* the ring's steps are split for the causal mask (context.c); with a window most K/V chunks
     * would fall outside every query's band and their steps would be skipped */
    if (m->sliding_window > 0)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "strategy.context.degree",
                            "context parallelism with a sliding window (%d) is not modelled: "
                            "its ring steps assume full causal attention",
                            m->sliding_window);
    return 0;
}

/* Rules on the batch: whole micro-batches per data-parallel rank, and for the interleaved
 * schedule whole rounds of them (Megatron-LM's requirement). */
static int validate_batch(const strategy *s, ps_error *err)
{
    long per_step = (long)s->micro_batch * s->dp;
    if (s->global_batch % per_step)
        return ps_error_set(err, PS_EINPUT, s->file, s->batch_loc.line, s->batch_loc.column,
                            "batch.global",
                            "global batch %d is not a multiple of micro batch %d x data "
                            "degree %d = %ld",
                            s->global_batch, s->micro_batch, s->dp, per_step);
    int m = strategy_micro_batches(s);
    src_loc sl = s->schedule_loc.line ? s->schedule_loc : s->pp_loc;
    if (s->schedule == SCHED_INTERLEAVED && m % s->pp != 0)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the interleaved schedule needs the number of micro-batches per "
                            "data-parallel rank (%d) to be a multiple of the pipeline degree (%d)",
                            m, s->pp);
    if (pipeline_merges_steps(s->schedule) && m < 2 * s->pp)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the %s schedule needs at least 2 x pipeline degree = %d "
                            "micro-batches per data-parallel rank, got %d (its steady state "
                            "overlaps a forward with a backward from micro-batch 2 x %d on)",
                            schedule_name(s->schedule), 2 * s->pp, m,
                            s->schedule == SCHED_DUALPIPE ? s->pp / 2 : s->pp);
    if (s->schedule == SCHED_DUALPIPE && m % 2)
        return ps_error_set(err, PS_EINPUT, s->file, sl.line, sl.column,
                            "strategy.pipeline.schedule",
                            "the dualpipe schedule feeds half the micro-batches to each copy of "
                            "the model: it needs an even number per data-parallel rank, got %d",
                            m);
    return 0;
}

/* The sizes a plan multiplies out, checked before any rule divides by them (sim/base/limits.h):
 * its GPUs, tensor x context x pipeline x data, at most PS_MAX_GPUS (the error at the degree
 * whose product passes it), its model chunks, pipeline x virtual stages, and its micro-batches
 * per iteration, global / (micro x data), at most PS_MAX_MICRO_BATCHES, and those times the
 * chunks at most PS_MAX_PIPELINE_UNITS (the schedule's work), and the GPUs times the
 * micro-batches and virtual stages at most PS_MAX_RANK_UNITS (the compiler's tables). */
static int validate_sizes(const strategy *s, ps_error *err)
{
    const int64_t degree[4] = {s->tp, s->cp, s->pp, s->dp};
    const src_loc loc[4] = {s->tp_loc, s->cp_loc, s->pp_loc, s->dp_loc};
    static const char *const field[4] = {"strategy.tensor.degree", "strategy.context.degree",
                                         "strategy.pipeline.degree", "strategy.data.degree"};
    for (int n = 2; n <= 4; n++) {
        int at = n - 1; /* the degree that joins the product, else one that was written */
        for (int k = n - 1; loc[at].line == 0 && k >= 0; k--)
            at = k;
        ps_where w = {s->file, loc[at], field[at]};
        if (ps_product_checked(degree, n, PS_MAX_GPUS, w,
                               "GPUs of the plan (tensor x context x pipeline x data)", NULL, err))
            return err->code;
    }
    int v = strategy_chunks_per_stage(s);
    ps_where vw = {s->file, s->virtual_stages_loc.line ? s->virtual_stages_loc : s->pp_loc,
                   "strategy.pipeline.virtual_stages"};
    if (ps_mul_checked(s->pp, v, PS_MAX_LAYERS + 2, vw,
                       "model chunks (pipeline degree x virtual stages)", NULL, err))
        return err->code;
    int64_t per_step = (int64_t)s->micro_batch * s->dp; /* both at most 2^24: no overflow */
    int64_t micro_batches = s->global_batch / per_step;
    if (micro_batches > PS_MAX_MICRO_BATCHES)
        return ps_error_set(
            err, PS_EINPUT, s->file, s->batch_loc.line, s->batch_loc.column, "batch.global",
            "global batch %d / (micro batch %d x data degree %d) = %lld "
            "micro-batches per iteration, more than %d (protosim's limit)",
            s->global_batch, s->micro_batch, s->dp, (long long)micro_batches, PS_MAX_MICRO_BATCHES);
    /* both factors are within their limits here: the product fits */
    if (micro_batches * s->pp * v > PS_MAX_PIPELINE_UNITS)
        return ps_error_set(err, PS_EINPUT, s->file, s->batch_loc.line, s->batch_loc.column,
                            "batch.global",
                            "%lld micro-batches x %d model chunks (pipeline %d x virtual stages "
                            "%d) = %lld units of pipeline work, more than %d (protosim's limit)",
                            (long long)micro_batches, s->pp * v, s->pp, v,
                            (long long)(micro_batches * s->pp * v), PS_MAX_PIPELINE_UNITS);
    /* GPUs <= 2^17, micro-batches x virtual stages <= 2^20 just above: the product fits */
    int64_t gpus = (int64_t)s->tp * s->cp * s->pp * s->dp;
    if (gpus * micro_batches * v > PS_MAX_RANK_UNITS)
        return ps_error_set(err, PS_EINPUT, s->file, s->batch_loc.line, s->batch_loc.column,
                            "batch.global",
                            "%lld GPUs x %lld micro-batches x %d virtual stages = %lld, more than "
                            "%d (protosim's limit of the plan's per-GPU units)",
                            (long long)gpus, (long long)micro_batches, v,
                            (long long)(gpus * micro_batches * v), PS_MAX_RANK_UNITS);
    return 0;
}

/* strategy.embedding (and children "tables.N") of a dlrm plan: which keys go with which
 * sharding, column shards dividing the tables' dims, the GPUs named in range of data.degree
 * (the plan's GPUs). */
static int validate_embedding(const strategy *s, ps_error *err)
{
    const workload_dlrm *d = &s->model.dlrm;
    int placed = 0;  /* tables placed by `placement`: table-wise, column-wise, table-row-wise */
    int sharded = 0; /* tables not data-parallel */
    for (int t = 0; t < d->n_tables; t++) {
        src_loc at, kat;
        emb_sharding k = strategy_table_sharding(s, t, &at);
        int own = s->table_has_sharding[t];
        int written = own ? s->table_shards[t] : s->embedding_shards;
        int shards = strategy_table_shards(s, t, &kat);
        char sfield[96];
        if (own)
            snprintf(sfield, sizeof sfield, "strategy.children.%s.shards", s->table_path[t]);
        else
            snprintf(sfield, sizeof sfield, "strategy.embedding.shards");
        placed |= k == EMB_SHARD_TABLE_WISE || k == EMB_SHARD_COLUMN_WISE ||
                  k == EMB_SHARD_TABLE_ROW_WISE;
        sharded |= k != EMB_SHARD_DATA_PARALLEL;
        if (k == EMB_SHARD_COLUMN_WISE && written == 0)
            return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, sfield,
                                "column-wise sharding of table %d needs `shards` (its column "
                                "shards, each a table of dim / shards)",
                                t);
        if (k != EMB_SHARD_COLUMN_WISE && written > 0)
            return ps_error_set(err, PS_EINPUT, s->file, kat.line, kat.column, sfield,
                                "shards apply to column-wise tables; table %d is %s", t,
                                enum_name(emb_sharding_names, (int)k));
        if (k == EMB_SHARD_COLUMN_WISE && (shards < 2 || d->dim[t] % shards))
            return ps_error_set(err, PS_EINPUT, s->file, kat.line, kat.column, sfield,
                                "%d column shards of table %d: needs at least 2 dividing its "
                                "dim %d",
                                shards, t, d->dim[t]);
    }
    if (!placed && s->has_placement)
        return ps_error_set(err, PS_EINPUT, s->file, s->placement_loc.line, s->placement_loc.column,
                            "strategy.embedding.placement",
                            "placement applies to table-wise, column-wise and table-row-wise "
                            "tables; these are on every GPU (row-wise or data-parallel)");
    if (!sharded && s->bottom_mlp_gpu >= 0)
        return ps_error_set(err, PS_EINPUT, s->file, s->bottom_mlp_gpu_loc.line,
                            s->bottom_mlp_gpu_loc.column, "strategy.embedding.bottom_mlp_gpu",
                            "bottom_mlp_gpu needs sharded tables (its output joins their "
                            "all-to-all); these are data-parallel");
    /* update: sparse is PyTorch's sparse gradient + torch.optim.SGD (NVIDIA's DLRM) */
    src_loc u = s->embedding_update_loc;
    if (s->embedding_sparse_update && s->optimizer != OPT_SGD)
        return ps_error_set(err, PS_EINPUT, s->file, u.line, u.column, "strategy.embedding.update",
                            "a sparse (unfused) table update is modelled for optimizer sgd only "
                            "(torch.optim.SGD), not %s: not modelled yet (issue 13)",
                            enum_name(optimizer_names, (int)s->optimizer));
    if (s->embedding_sparse_update && !sharded)
        return ps_error_set(err, PS_EINPUT, s->file, u.line, u.column, "strategy.embedding.update",
                            "data-parallel tables have a dense gradient (all-reduced, then a "
                            "dense step): `update: sparse` applies to sharded tables");
    if (placed && !s->has_placement)
        return ps_error_set(err, PS_EINPUT, s->file, s->embedding_loc.line, s->embedding_loc.column,
                            "strategy.embedding.placement",
                            "table-wise, column-wise and table-row-wise sharding need a placement "
                            "(greedy, round-robin, memory-balanced or a list: the GPU of table 0, "
                            "1, ...)");
    if (s->has_placement && s->placement == EMB_PLACE_EXPLICIT)
        for (int t = 0; t < d->n_tables; t++)
            if (s->embedding_gpu[t] >= s->dp) {
                char field[64];
                snprintf(field, sizeof field, "strategy.embedding.placement[%d]", t);
                return ps_error_set(err, PS_EINPUT, s->file, s->embedding_gpu_loc[t].line,
                                    s->embedding_gpu_loc[t].column, field,
                                    "GPU %d of table %d is out of range: the plan has %d GPUs "
                                    "(data.degree), numbered from 0",
                                    s->embedding_gpu[t], t, s->dp);
            }
    if (s->bottom_mlp_gpu >= s->dp)
        return ps_error_set(err, PS_EINPUT, s->file, s->bottom_mlp_gpu_loc.line,
                            s->bottom_mlp_gpu_loc.column, "strategy.embedding.bottom_mlp_gpu",
                            "GPU %d is out of range: the plan has %d GPUs (data.degree), numbered "
                            "from 0",
                            s->bottom_mlp_gpu, s->dp);
    return 0;
}

/* dlrm plans (strategies/compile/dlrm_plan.c): MLPs data-parallel over data.degree GPUs, the tables
 * on the one GPU, replicated (embedding: {sharding: data-parallel}) or sharded, per table with
 * children. */
static int validate_dlrm(const strategy *s, ps_error *err)
{
    const struct {
        int bad;
        src_loc loc;
        const char *field, *what;
    } axes[] = {
        {s->tp > 1, s->tp_loc, "strategy.tensor.degree", "tensor parallelism"},
        {s->pp > 1, s->pp_loc, "strategy.pipeline.degree", "pipeline parallelism"},
        {s->cp > 1, s->cp_loc, "strategy.context.degree", "context parallelism"},
        {s->ep > 1 || s->etp > 1 || s->overlap_a2a || s->delay_wgrad, s->ep_loc, "strategy.expert",
         "expert parallelism"},
        {s->zero > 0, data_loc(s, s->zero_loc), "strategy.data.zero", "ZeRO"},
        /* knobs of those (or of the transformer compiler) a dlrm plan would ignore */
        {s->schedule_loc.line > 0, s->schedule_loc, "strategy.pipeline.schedule",
         "a pipeline schedule"},
        {s->virtual_stages_loc.line > 0, s->virtual_stages_loc, "strategy.pipeline.virtual_stages",
         "virtual pipeline stages"},
        {s->sequence_parallel || s->tp_comm_overlap, s->tp_loc, "strategy.tensor",
         "sequence parallelism or tensor comm_overlap"},
        {s->recompute_loc.line > 0, s->recompute_loc, "strategy.recompute", "recompute"},
        {s->bucket_loc.line > 0, s->bucket_loc, "strategy.data.bucket_mb",
         "gradient bucketing (one all-reduce after the backward)"},
        {s->dp_overlap_loc.line > 0, s->dp_overlap_loc, "strategy.data.overlap",
         "the all-reduce's overlap with the backward"},
        {s->gather_loc.line > 0, s->gather_loc, "strategy.data.overlap_param_gather",
         "overlap_param_gather"},
    };
    for (size_t i = 0; i < sizeof axes / sizeof axes[0]; i++)
        if (axes[i].bad)
            return ps_error_set(err, PS_EINPUT, s->file, axes[i].loc.line, axes[i].loc.column,
                                axes[i].field,
                                "%s is not modelled for dlrm models yet (their MLPs are "
                                "data-parallel, their tables sharded by strategy.embedding)",
                                axes[i].what);
    if (s->fp8)
        return ps_error_set(err, PS_EINPUT, s->file, s->precision_loc.line, s->precision_loc.column,
                            "precision", "%s MLPs are not modelled for dlrm models",
                            precision_name(s->gemm_precision));
    if (s->optimizer == OPT_NONE)
        return ps_error_set(err, PS_EINPUT, s->file, s->optimizer_loc.line, s->optimizer_loc.column,
                            "optimizer",
                            "optimizer none is not modelled for dlrm models: the tables' update "
                            "is part of the lookup's backward (sgd | adagrad | adam)");
    if (s->dp > 1 && !s->has_embedding)
        return ps_error_set(err, PS_EINPUT, s->file, s->dp_loc.line, s->dp_loc.column,
                            "strategy.embedding",
                            "a dlrm plan on %d GPUs needs strategy.embedding (how the tables are "
                            "sharded: table-wise, row-wise, column-wise, table-row-wise or "
                            "data-parallel)",
                            s->dp);
    if (s->has_table_children && !s->has_embedding)
        return ps_error_set(err, PS_EINPUT, s->file, s->table_children_loc.line,
                            s->table_children_loc.column, "strategy.children",
                            "per-table sharding needs strategy.embedding (the other tables' "
                            "sharding)");
    if (s->has_embedding && validate_embedding(s, err))
        return err->code;
    return validate_batch(s, err);
}

/* data.fsdp: the FSDP implementation (docs/design-notes.md, "FSDP as implemented"), for ZeRO 3
 * only; what its mechanisms are not modelled with is refused at the key that asks for it. */
static int validate_fsdp(const strategy *s, ps_error *err)
{
    src_loc f = s->fsdp_loc, v = s->fsdp_version_loc.line ? s->fsdp_version_loc : f;
    const char *why = NULL;
    if (!f.line)
        return 0;
    if (s->zero != 3)
        return ps_error_set(err, PS_EINPUT, s->file, f.line, f.column, "strategy.data.fsdp",
                            "fsdp names the PyTorch FSDP that runs ZeRO 3: it needs zero 3 "
                            "(zero is %d)",
                            s->zero);
    if (!s->fsdp_version)
        return ps_error_set(err, PS_EINPUT, s->file, f.line, f.column, "strategy.data.fsdp",
                            "missing required key 'version' in fsdp (1: FullyShardedDataParallel, "
                            "2: fully_shard)");
    if (s->fsdp_float8_gather)
        return ps_error_set(err, PS_EINPUT, s->file, s->fsdp_float8_loc.line,
                            s->fsdp_float8_loc.column, "strategy.data.fsdp.float8_all_gather",
                            "float8 all-gathers (fp8 bytes, a scale, the cast of the shard, the "
                            "weights' fp8 casts skipped in the GEMMs) are not modelled");
    if (s->dp * s->cp == 1) /* FSDP shards over the data x context ranks */
        why = "on one rank (data x context degree 1: nothing is sharded, yet the casts, copies "
              "and one-rank collectives run: +15% on one H200, "
              "tests/data/measured/h200_fsdp2_steps.csv)";
    else if (s->pp > 1)
        why = "with a pipeline (unsharded gradients accumulated across micro-batches)";
    else if (s->ep > 1 || s->etp > 1)
        why = "with an expert layout (two meshes per unit)";
    else if (s->precision != PREC_BF16 || !s->master_weights)
        why = "except in bf16 mixed precision with fp32 master weights (fp32 shards cast to bf16 "
              "parameters)";
    if (why)
        return ps_error_set(err, PS_EINPUT, s->file, v.line, v.column, "strategy.data.fsdp.version",
                            "FSDP's copies and casts are not modelled %s", why);
    return 0;
}

/* recompute_modules names what selective recompute runs again: it needs `recompute: selective`
 * at the strategy or in a child (Megatron-Core's --recompute-modules needs
 * --recompute-granularity selective). */
static int validate_recompute_modules(const strategy *s, ps_error *err)
{
    if (!s->recompute_modules_loc.line || s->recompute == RECOMPUTE_SELECTIVE)
        return 0;
    for (int i = 0; i < s->n_overrides; i++)
        if (s->overrides[i].has_recompute && s->overrides[i].recompute == RECOMPUTE_SELECTIVE)
            return 0;
    src_loc l = s->recompute_modules_loc;
    return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "strategy.recompute_modules",
                        "recompute_modules names what selective recompute runs again: it needs "
                        "recompute: selective (recompute is %s)",
                        recompute_name(s->recompute));
}

/* Op-level selective checkpointing (`recompute: op`) is torchtitan's policy on its Llama block:
 * it saves the outputs of the SDPA kernels and of the odd-numbered `mm` calls of the block (wq,
 * wv, w1, w2 of seven) and recomputes the rest, so the model must run those ops as the policy
 * sees them. */
static int validate_op_recompute(const strategy *s, ps_error *err)
{
    src_loc at = {0, 0};
    if (s->recompute == RECOMPUTE_OP)
        at = s->recompute_loc;
    for (int i = 0; i < s->n_overrides && !at.line; i++)
        if (s->overrides[i].has_recompute && s->overrides[i].recompute == RECOMPUTE_OP)
            at = s->overrides[i].loc;
    if (!at.line && s->recompute != RECOMPUTE_OP)
        return 0;
    const workload_model *m = &s->model;
    const char *why = m->family != FAMILY_LLAMA
                          ? "for this family: it numbers the matmuls of torchtitan's Llama block "
                            "(family llama)"
                      : m->experts > 0 ? "for mixture-of-experts layers (their grouped GEMMs are "
                                         "not the mm calls the policy numbers)"
                      : !m->flash_attention
                          ? "without attention: flash (the policy saves the fused "
                            "SDPA kernels' outputs)"
                      : m->activation != ACT_SWIGLU ? "without activation: swiglu (it numbers "
                                                      "w1, w3, w2 of torchtitan's FeedForward)"
                      : m->bias   ? "with biases (a biased linear layer runs addmm, which the "
                                    "policy neither saves nor numbers)"
                      : s->fp8    ? "with fp8 or fp4 (the policy also saves the amax reductions "
                                    "of Float8 training)"
                      : s->tp > 1 ? "with tensor parallelism (the policy keeps the "
                                    "reduce-scatters' outputs and recomputes the all-gathers)"
                      : s->cp > 1 ? "with context parallelism (the ring's attention steps are "
                                    "not the SDPA calls the policy saves)"
                                  : NULL;
    if (!why)
        return 0;
    return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, "strategy.recompute",
                        "op-level selective checkpointing (recompute: op) is not modelled %s", why);
}

int strategy_validate(const strategy *s, ps_error *err)
{
    ps_error scratch;
    if (!err) {
        ps_error_clear(&scratch);
        err = &scratch;
    }
    if (s->tp < 1 || s->pp < 1 || s->dp < 1 || s->cp < 1 || s->micro_batch < 1 ||
        s->virtual_stages < 1)
        return ps_error_set(err, PS_EINPUT, s->file, s->tp_loc.line, s->tp_loc.column, "strategy",
                            "degrees, micro batch and virtual stages must be >= 1");
    if (validate_sizes(s, err))
        return err->code;
    if (!s->master_weights && (s->model.family == FAMILY_DLRM || s->fp8 ||
                               (s->precision != PREC_BF16 && s->precision != PREC_FP16)))
        return ps_error_set(
            err, PS_EINPUT, s->file, s->master_loc.line, s->master_loc.column, "master_weights",
            "master_weights: false keeps weights, gradients and optimizer states in the plan's "
            "precision: %s",
            s->model.family == FAMILY_DLRM ? "not modelled for recommendation models"
            : s->fp8 ? "not modelled with fp8 or fp4 (its bf16 weights keep an fp32 master here)"
                     : "it needs precision bf16 or fp16 (fp32 has no master copy)");
    if (validate_fsdp(s, err))
        return err->code;
    if (validate_op_recompute(s, err) || validate_recompute_modules(s, err))
        return err->code;
    if (s->fp8_attention && (!s->fp8 || !s->model.flash_attention))
        return ps_error_set(err, PS_EINPUT, s->file, s->fp8_attention_loc.line,
                            s->fp8_attention_loc.column, "fp8_attention",
                            "fp8_attention runs the fused attention kernel in FP8: it needs %s",
                            !s->fp8 ? "precision: fp8 or fp4 (Transformer Engine's FP8 recipe)"
                                    : "a fused attention core (the model's attention: flash)");
    if (s->model.family == FAMILY_DLRM)
        return validate_dlrm(s, err);
    if (s->optimizer == OPT_ADAGRAD)
        return ps_error_set(err, PS_EINPUT, s->file, s->optimizer_loc.line, s->optimizer_loc.column,
                            "optimizer",
                            "adagrad is modelled for dlrm models only (adam | sgd | none)");
    if (validate_schedule(s, err))
        return err->code;
    if (validate_zero(s, err))
        return err->code;
    if (!(s->bucket_mb > 0))
        return ps_error_set(err, PS_EINPUT, s->file, s->dp_loc.line, s->dp_loc.column,
                            "strategy.data.bucket_mb", "must be greater than 0, got %g",
                            s->bucket_mb);
    if (validate_mla(s, err) || validate_model_split(s, err) || validate_expert(s, err) ||
        validate_expert_overlap(s, err) || validate_context(s, err))
        return err->code;
    return validate_batch(s, err);
}
