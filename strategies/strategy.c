/* strategy.c: loading a strategy YAML file (DESIGN.md section 3) into a checked strategy tree.
 * Read through sim/base/yaml_read, so every value keeps its line and column for error messages. */
#include "strategy.h"
#include "../sim/base/yaml_read.h"
#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"
#include "pipeline_split.h"
#include "strategy_children.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char *const schedule_table[] = {"gpipe", "1f1b", "interleaved", "zb-h1",
                                             "zb-h2", "zb-v", "dualpipev",   "dualpipe"};
static const char *const recompute_table[] = {"none", "selective", "full", "op"};
static const char *const optimizer_table[] = {"adam", "sgd", "none", "adagrad"};
static const char *const emb_sharding_table[] = {"table-wise", "row-wise", "column-wise",
                                                 "table-row-wise", "data-parallel"};
static const char *const emb_placement_table[] = {"greedy", "round-robin", "memory-balanced",
                                                  "explicit"};
static const char *const axis_table[] = {"tensor", "data", "pipeline", "context"};
const enum_names schedule_names = ENUM_NAMES(schedule_table);
const enum_names recompute_names = ENUM_NAMES(recompute_table);
const enum_names optimizer_names = ENUM_NAMES(optimizer_table);
const enum_names parallel_axis_names = ENUM_NAMES(axis_table);
static const char *const reduce_dtype_table[] = {"fp32", "bf16"};
static const enum_names reduce_dtype_names = ENUM_NAMES(reduce_dtype_table);
const enum_names emb_sharding_names = ENUM_NAMES(emb_sharding_table);
const enum_names emb_placement_names = ENUM_NAMES(emb_placement_table);

/* ---- sections ---- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* workload: NAME | path | mapping. A relative path is tried beside the strategy file first. */
static int load_workload(yread_ctx *c, ynode *n, strategy *s)
{
    s->workload_loc = yread_loc(n);
    if (yread_is_mapping(n)) {
        if (workload_model_read(c, n, "workload", &s->model))
            return c->err->code;
        if (!s->model.name[0]) /* reports need some name */
            snprintf(s->model.name, sizeof s->model.name, "inline");
        return 0;
    }

    const char *name = yread_scalar(n);
    if (!name || !name[0])
        return yread_fail(c, n, "workload", "expected a model name, a path or a mapping, got %s",
                          yread_kind(n));
    char path[1024];
    snprintf(path, sizeof path, "%s", name);
    if (name[0] != '/') {
        const char *slash = strrchr(c->file, '/');
        char beside[1024];
        if (slash)
            snprintf(beside, sizeof beside, "%.*s/%s", (int)(slash - c->file), c->file, name);
        else
            snprintf(beside, sizeof beside, "%s", name);
        if (file_exists(beside))
            snprintf(path, sizeof path, "%s", beside);
    }

    /* An error inside the model file keeps its own location; one without a location (the
     * model was not found) is about this strategy's `workload` value, so point there. */
    ps_error sub;
    ps_error_clear(&sub);
    if (workload_model_load(path, s->data_dir[0] ? s->data_dir : NULL, &s->model, &sub) == 0)
        return 0;
    if (sub.line > 0) {
        if (!c->err->code)
            *c->err = sub;
        return c->err->code;
    }
    if (sub.message[0])
        return yread_fail(c, n, "workload", "%s", sub.message);
    return yread_fail(c, n, "workload", "cannot load workload '%s'", name);
}

static int load_batch(yread_ctx *c, ynode *root, ynode *n, strategy *s)
{
    static const char *const keys[] = {"global", "micro"};
    if (!n)
        return yread_fail(c, root, "batch.global",
                          "missing required key 'batch' "
                          "(batch: {global: N, micro: M})");
    if (yread_expect_mapping(c, n, "batch") || yread_check_keys(c, n, "batch", keys, COUNT(keys)))
        return c->err->code;
    ynode *v = yread_map_get(c, n, "global");
    if (!v)
        return yread_fail(c, n, "batch.global", "missing required key 'global' in batch");
    s->batch_loc = yread_loc(v);
    if (yread_count(c, v, "batch.global", 1, PS_MAX_GLOBAL_BATCH, &s->global_batch))
        return c->err->code;
    if ((v = yread_map_get(c, n, "micro")) &&
        yread_count(c, v, "batch.micro", 1, PS_MAX_GLOBAL_BATCH, &s->micro_batch))
        return c->err->code;
    return 0;
}

/* A section of `strategy` (tensor, pipeline, data): only its known keys, each read by the
 * table; *degree_loc: where rules about its degree point (the value, else the section). */
static int load_section(yread_ctx *c, ynode *n, const char *path, const yfield *fields, int count,
                        src_loc *degree_loc)
{
    const char *keys[8];
    assert(count <= 8);
    for (int i = 0; i < count; i++)
        keys[i] = fields[i].key;
    if (yread_expect_mapping(c, n, path) || yread_check_keys(c, n, path, keys, count))
        return c->err->code;
    ynode *degree = yread_map_get(c, n, "degree");
    *degree_loc = yread_loc(degree ? degree : n);
    return yread_fields(c, n, path, fields, count);
}

static int load_tensor(yread_ctx *c, ynode *n, strategy *s)
{
    const yfield fields[] = {
        {"degree", YFIELD_COUNT, &s->tp, 1, PS_MAX_GPUS, {0}},
        {"sequence_parallel", YFIELD_BOOL, &s->sequence_parallel, 0, 0, {0}},
        {"comm_overlap", YFIELD_BOOL, &s->tp_comm_overlap, 0, 0, {0}},
        {"vocab_parallel", YFIELD_BOOL, &s->vocab_parallel, 0, 0, {0}},
    };
    return load_section(c, n, "strategy.tensor", fields, COUNT(fields), &s->tp_loc);
}

static int load_pipeline(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const keys[] = {
        "degree",           "schedule",           "virtual_stages",    "account_for_embedding",
        "account_for_loss", "first_stage_layers", "last_stage_layers", "layers"};
    int schedule = s->schedule;
    const yfield fields[] = {
        {"degree", YFIELD_COUNT, &s->pp, 1, PS_MAX_GPUS, {0}},
        {"schedule", YFIELD_ENUM, &schedule, 0, 0, schedule_names},
        {"virtual_stages", YFIELD_COUNT, &s->virtual_stages, 1, PS_MAX_LAYERS + 2, {0}},
        {"account_for_embedding", YFIELD_BOOL, &s->account_embedding, 0, 0, {0}},
        {"account_for_loss", YFIELD_BOOL, &s->account_loss, 0, 0, {0}},
        {"first_stage_layers", YFIELD_COUNT, &s->first_stage_layers, 1, PS_MAX_LAYERS, {0}},
        {"last_stage_layers", YFIELD_COUNT, &s->last_stage_layers, 1, PS_MAX_LAYERS, {0}},
    };
    if (yread_expect_mapping(c, n, "strategy.pipeline") ||
        yread_check_keys(c, n, "strategy.pipeline", keys, COUNT(keys)) ||
        yread_fields(c, n, "strategy.pipeline", fields, COUNT(fields)))
        return c->err->code;
    ynode *degree = yread_map_get(c, n, "degree");
    s->pp_loc = yread_loc(degree ? degree : n);
    s->schedule = (pipeline_schedule)schedule;
    /* where strategy_validate points for the schedule and split rules */
    ynode *sched = yread_map_get(c, n, "schedule");
    ynode *vs = yread_map_get(c, n, "virtual_stages");
    s->schedule_loc = sched ? yread_loc(sched) : s->pp_loc;
    s->virtual_stages_loc = vs ? yread_loc(vs) : s->schedule_loc;
    const char *split_keys[] = {"account_for_embedding", "account_for_loss", "first_stage_layers",
                                "last_stage_layers"};
    src_loc *locs[] = {&s->account_embedding_loc, &s->account_loss_loc, &s->first_stage_loc,
                       &s->last_stage_loc};
    for (int i = 0; i < COUNT(split_keys); i++) {
        ynode *v = yread_map_get(c, n, split_keys[i]);
        if (v)
            *locs[i] = yread_loc(v);
    }
    ynode *layers = yread_map_get(c, n, "layers");
    return layers ? pipeline_split_load_layers(c, layers, s) : 0;
}

/* data.fsdp: which PyTorch FSDP implementation ran (strategy.h); the rules are
 * strategy_validate's. */
static int load_fsdp(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const keys[] = {"version", "reshard_after_forward", "reduce_dtype",
                                       "float8_all_gather"};
    const yfield fields[] = {
        {"version", YFIELD_INT, &s->fsdp_version, 1, 2, {0}},
        {"reshard_after_forward", YFIELD_BOOL, &s->fsdp_reshard, 0, 0, {0}},
        {"reduce_dtype", YFIELD_ENUM, &s->fsdp_reduce_bf16, 0, 0, reduce_dtype_names},
        {"float8_all_gather", YFIELD_BOOL, &s->fsdp_float8_gather, 0, 0, {0}},
    };
    if (yread_expect_mapping(c, n, "strategy.data.fsdp") ||
        yread_check_keys(c, n, "strategy.data.fsdp", keys, COUNT(keys)) ||
        yread_fields(c, n, "strategy.data.fsdp", fields, COUNT(fields)))
        return c->err->code;
    s->fsdp_loc = yread_loc(n);
    src_loc *locs[] = {&s->fsdp_version_loc, &s->fsdp_reshard_loc, &s->fsdp_reduce_loc,
                       &s->fsdp_float8_loc};
    for (int i = 0; i < COUNT(keys); i++) {
        ynode *v = yread_map_get(c, n, keys[i]);
        if (v)
            *locs[i] = yread_loc(v);
    }
    return 0;
}

static int load_data(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const all[] = {
        "degree", "zero", "shard_degree", "bucket_mb", "overlap_param_gather", "overlap", "fsdp"};
    const yfield fields[] = {
        {"degree", YFIELD_COUNT, &s->dp, 1, PS_MAX_GPUS, {0}},
        {"zero", YFIELD_INT, &s->zero, 0, 3, {0}},
        {"shard_degree", YFIELD_COUNT, &s->shard_degree, 1, PS_MAX_GPUS, {0}},
        {"bucket_mb", YFIELD_POSITIVE, &s->bucket_mb, 0, 0, {0}},
        {"overlap_param_gather", YFIELD_BOOL, &s->overlap_param_gather, 0, 0, {0}},
        {"overlap", YFIELD_BOOL, &s->dp_overlap, 0, 0, {0}},
    };
    if (yread_expect_mapping(c, n, "strategy.data") ||
        yread_check_keys(c, n, "strategy.data", all, COUNT(all)) ||
        yread_fields(c, n, "strategy.data", fields, COUNT(fields)))
        return c->err->code;
    ynode *degree = yread_map_get(c, n, "degree"), *fsdp = yread_map_get(c, n, "fsdp");
    s->dp_loc = yread_loc(degree ? degree : n);
    if (fsdp && load_fsdp(c, fsdp, s))
        return c->err->code;
    /* where the ZeRO rules of strategy_validate point */
    const char *keys[] = {"zero", "shard_degree", "overlap", "overlap_param_gather", "bucket_mb"};
    src_loc *locs[] = {&s->zero_loc, &s->shard_loc, &s->dp_overlap_loc, &s->gather_loc,
                       &s->bucket_loc};
    for (int i = 0; i < COUNT(keys); i++) {
        ynode *v = yread_map_get(c, n, keys[i]);
        if (v)
            *locs[i] = yread_loc(v);
    }
    return 0;
}

static int load_context(yread_ctx *c, ynode *n, strategy *s)
{
    const yfield fields[] = {
        {"degree", YFIELD_COUNT, &s->cp, 1, PS_MAX_GPUS, {0}},
    };
    return load_section(c, n, "strategy.context", fields, COUNT(fields), &s->cp_loc);
}

static int load_expert(yread_ctx *c, ynode *n, strategy *s)
{
    const yfield fields[] = {
        {"degree", YFIELD_COUNT, &s->ep, 1, PS_MAX_GPUS, {0}},
        {"tensor", YFIELD_COUNT, &s->etp, 1, PS_MAX_GPUS, {0}},
        {"overlap_a2a", YFIELD_BOOL, &s->overlap_a2a, 0, 0, {0}},
        {"delay_wgrad", YFIELD_BOOL, &s->delay_wgrad, 0, 0, {0}},
    };
    if (load_section(c, n, "strategy.expert", fields, COUNT(fields), &s->ep_loc))
        return c->err->code;
    ynode *t = yread_map_get(c, n, "tensor");
    s->etp_loc = t ? yread_loc(t) : s->ep_loc;
    ynode *o = yread_map_get(c, n, "overlap_a2a"), *w = yread_map_get(c, n, "delay_wgrad");
    if (o)
        s->overlap_a2a_loc = yread_loc(o);
    if (w)
        s->delay_wgrad_loc = yread_loc(w);
    return 0;
}

/* order: a permutation of [tensor, data, pipeline], and of context when it is listed;
 * order[0] varies fastest across ranks. Context left out sits right after tensor, as in
 * Megatron-Core's tp-cp-dp-pp. */
static int load_order(yread_ctx *c, ynode *n, strategy *s)
{
    if (!yread_is_list(n))
        return yread_fail(c, n, "strategy.order",
                          "expected a list of the axes tensor, context, data, pipeline, got %s",
                          yread_kind(n));
    int count = yread_list_len(n);
    int seen[4] = {0, 0, 0, 0}, axes[4], k = 0;
    for (int i = 0; i < count; i++) {
        ynode *item = yread_list_item(c, n, i);
        char field[64];
        snprintf(field, sizeof field, "strategy.order[%d]", i);
        int axis;
        if (yread_enum(c, item, field, parallel_axis_names, &axis))
            return c->err->code;
        if (seen[axis])
            return yread_fail(c, item, field, "axis '%s' appears twice in order", axis_table[axis]);
        seen[axis] = 1;
        axes[k++] = axis;
    }
    if (!(count == 4 || (count == 3 && !seen[AXIS_CONTEXT])))
        return yread_fail(c, n, "strategy.order",
                          "order must list each of tensor, data, pipeline once, and context "
                          "at most once (got %d items)",
                          count);
    for (int i = 0, j = 0; i < count; i++) {
        s->order[j++] = (parallel_axis)axes[i];
        if (count == 3 && axes[i] == AXIS_TENSOR)
            s->order[j++] = AXIS_CONTEXT;
    }
    return 0;
}

/* strategy.embedding.placement: a name, or the explicit list (the GPU of each table; the GPUs
 * are checked against data.degree by strategy_validate, which sweeps rerun). */
static int load_placement(yread_ctx *c, ynode *v, strategy *s)
{
    const char *field = "strategy.embedding.placement";
    s->has_placement = 1;
    s->placement_loc = yread_loc(v);
    if (!yread_is_list(v)) {
        int i;
        if (yread_enum(c, v, field, emb_placement_names, &i))
            return c->err->code;
        if (i == EMB_PLACE_EXPLICIT)
            return yread_fail(c, v, field,
                              "placement must be greedy, round-robin, memory-balanced or a list "
                              "(the GPU of table 0, 1, ...)");
        s->placement = (emb_placement)i;
        return 0;
    }
    int n = yread_list_len(v);
    int tables = s->model.dlrm.n_tables;
    if (n != tables)
        return yread_fail(c, v, field,
                          "placement lists %d GPUs; the model has %d tables (one GPU "
                          "per table, in order)",
                          n, tables);
    for (int t = 0; t < n; t++) {
        ynode *it = yread_list_item(c, v, t);
        char item[64];
        snprintf(item, sizeof item, "%s[%d]", field, t);
        if (yread_int(c, it, item, 0, INT_MAX, &s->embedding_gpu[t]))
            return c->err->code;
        s->embedding_gpu_loc[t] = yread_loc(it);
    }
    s->placement = EMB_PLACE_EXPLICIT;
    return 0;
}

/* strategy.embedding (dlrm models): the tables' sharding, their placement, the bottom MLP's
 * GPU. Which keys go with which sharding is strategy_validate's (validate_embedding). */
static int load_embedding(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const keys[] = {"sharding", "placement", "shards", "bottom_mlp_gpu",
                                       "update"};
    if (s->model.family != FAMILY_DLRM)
        return yread_fail(c, n, "strategy.embedding",
                          "embedding sharding applies to dlrm models; model '%s' is a %s",
                          s->model.name, enum_name(model_family_names, (int)s->model.family));
    if (yread_expect_mapping(c, n, "strategy.embedding") ||
        yread_check_keys(c, n, "strategy.embedding", keys, COUNT(keys)))
        return c->err->code;
    s->embedding_loc = yread_loc(n);
    ynode *v = yread_map_get(c, n, "sharding");
    if (!v)
        return yread_fail(c, n, "strategy.embedding.sharding",
                          "missing required key 'sharding' in strategy.embedding");
    int i;
    if (yread_enum(c, v, "strategy.embedding.sharding", emb_sharding_names, &i))
        return c->err->code;
    s->has_embedding = 1;
    s->embedding_sharding = (emb_sharding)i;
    s->sharding_loc = yread_loc(v);
    if ((v = yread_map_get(c, n, "placement")) && load_placement(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "shards"))) {
        if (yread_int(c, v, "strategy.embedding.shards", 1, INT_MAX, &s->embedding_shards))
            return c->err->code;
        s->shards_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, n, "bottom_mlp_gpu"))) {
        if (yread_int(c, v, "strategy.embedding.bottom_mlp_gpu", 0, INT_MAX, &s->bottom_mlp_gpu))
            return c->err->code;
        s->bottom_mlp_gpu_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, n, "update"))) { /* fused (FBGEMM's TBE, the default) | sparse */
        static const char *const upd[] = {"fused", "sparse"};
        if (yread_enum(c, v, "strategy.embedding.update", ENUM_NAMES(upd), &i))
            return c->err->code;
        s->embedding_sparse_update = i == 1;
        s->embedding_update_loc = yread_loc(v);
    }
    return 0;
}

/* recompute_modules: Megatron-Core's module names, each modelled (workload.h's WL_RC_*) or
 * refused by name; only with `recompute: selective` (strategy_validate.c). */
static int load_recompute_modules(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const modelled[] = {"core_attn", "layernorm", "mla_up_proj", "mlp",
                                           "moe_act"};
    static const unsigned bits[] = {WL_RC_CORE_ATTN, WL_RC_LAYERNORM, WL_RC_MLA_UP_PROJ, WL_RC_MLP,
                                    WL_RC_MOE_ACT};
    static const char *const refused[] = {"moe", "shared_experts"};
    const char *field = "strategy.recompute_modules";
    if (!yread_is_list(n) || yread_list_len(n) == 0)
        return yread_fail(c, n, field,
                          "expected a non-empty list of module names (core_attn, "
                          "layernorm, mla_up_proj, mlp, moe_act)");
    s->recompute_modules = 0;
    s->recompute_modules_loc = yread_loc(n);
    for (int i = 0; i < yread_list_len(n); i++) {
        ynode *item = yread_list_item(c, n, i);
        const char *name = yread_scalar(item);
        int k = -1;
        for (int j = 0; name && j < (int)COUNT(modelled); j++)
            if (strcmp(name, modelled[j]) == 0)
                k = j;
        if (k >= 0) {
            s->recompute_modules |= bits[k];
            continue;
        }
        for (int j = 0; name && j < (int)COUNT(refused); j++)
            if (strcmp(name, refused[j]) == 0)
                return yread_fail(c, item, field,
                                  "the recompute of Megatron-Core's module %s is not modelled "
                                  "(modelled: core_attn, layernorm, mla_up_proj, mlp, moe_act)",
                                  name);
        return yread_fail(c, item, field,
                          "unknown module %s%s%s (expected core_attn, layernorm, mla_up_proj, "
                          "mlp or moe_act)",
                          name ? "'" : "a non-scalar", name ? name : "", name ? "'" : "");
    }
    return 0;
}

static int load_strategy_section(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const keys[] = {"tensor",   "context",   "pipeline",          "data",
                                       "expert",   "recompute", "recompute_modules", "order",
                                       "children", "embedding"};
    if (yread_expect_mapping(c, n, "strategy") ||
        yread_check_keys(c, n, "strategy", keys, COUNT(keys)))
        return c->err->code;
    ynode *v;
    if ((v = yread_map_get(c, n, "tensor")) && load_tensor(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "context")) && load_context(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "pipeline")) && load_pipeline(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "data")) && load_data(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "expert")) && load_expert(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "recompute"))) {
        int i;
        if (yread_enum(c, v, "strategy.recompute", recompute_names, &i))
            return c->err->code;
        s->recompute = (recompute_mode)i;
        s->recompute_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, n, "recompute_modules")) && load_recompute_modules(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "order")) && load_order(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "children")) && strategy_load_children(c, v, s))
        return c->err->code;
    if ((v = yread_map_get(c, n, "embedding")) && load_embedding(c, v, s))
        return c->err->code;
    return 0;
}

static void set_defaults(strategy *s)
{
    s->micro_batch = 1;
    s->precision = PREC_BF16;
    s->optimizer = OPT_ADAM;
    s->master_weights = 1;
    s->tp = s->pp = s->dp = s->cp = 1;
    s->ep = s->etp = 1;
    s->vocab_parallel = 1;
    s->bottom_mlp_gpu = -1;
    s->schedule = SCHED_1F1B;
    s->virtual_stages = 1;
    s->zero = 0;
    s->bucket_mb = 25.0;
    s->dp_overlap = 1;
    s->fsdp_reshard = 1;
    s->recompute = RECOMPUTE_NONE;
    s->recompute_modules = WL_RC_CORE_ATTN;
    s->order[0] = AXIS_TENSOR;
    s->order[1] = AXIS_CONTEXT;
    s->order[2] = AXIS_DATA;
    s->order[3] = AXIS_PIPELINE;
}

/* Everything after the YAML parsed: the root mapping, section by section. */
static int load_root(yread_ctx *c, ynode *root, strategy *s)
{
    static const char *const keys[] = {"workload",       "batch",         "precision", "optimizer",
                                       "master_weights", "fp8_attention", "strategy"};
    if (yread_expect_mapping(c, root, "") || yread_check_keys(c, root, "", keys, COUNT(keys)))
        return c->err->code;

    ynode *v = yread_map_get(c, root, "workload");
    if (!v)
        return yread_fail(c, root, "workload",
                          "missing required key 'workload' "
                          "(a model name, a path or a mapping)");
    if (load_workload(c, v, s))
        return c->err->code;
    if (load_batch(c, root, yread_map_get(c, root, "batch"), s))
        return c->err->code;
    int i;
    if ((v = yread_map_get(c, root, "precision"))) {
        if (yread_enum(c, v, "precision", precision_names, &i))
            return c->err->code;
        strategy_set_precision(s, (precision_t)i);
        s->precision_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, root, "optimizer"))) {
        if (yread_enum(c, v, "optimizer", optimizer_names, &i))
            return c->err->code;
        s->optimizer = (optimizer_kind)i;
        s->optimizer_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, root, "master_weights"))) {
        if (yread_bool(c, v, "master_weights", &s->master_weights))
            return c->err->code;
        s->master_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, root, "fp8_attention"))) {
        if (yread_bool(c, v, "fp8_attention", &s->fp8_attention))
            return c->err->code;
        s->fp8_attention_loc = yread_loc(v);
    }
    if ((v = yread_map_get(c, root, "strategy")) && load_strategy_section(c, v, s))
        return c->err->code;
    return strategy_validate(s, c->err);
}

static void start_strategy(strategy *out, const char *path, const char *data_dir)
{
    memset(out, 0, sizeof *out);
    set_defaults(out);
    snprintf(out->file, sizeof out->file, "%s", path);
    snprintf(out->data_dir, sizeof out->data_dir, "%s", data_dir ? data_dir : "");
}

int strategy_load_node(ydoc *doc, ynode *root, const char *file, const char *data_dir,
                       strategy *out, ps_error *err)
{
    ps_error scratch;
    if (!err) {
        ps_error_clear(&scratch);
        err = &scratch;
    }
    start_strategy(out, file, data_dir);
    yread_ctx c = {doc, file, err};
    if (load_root(&c, root, out)) {
        strategy_free(out);
        return err->code;
    }
    return 0;
}

void strategy_clone(const strategy *src, strategy *dst)
{
    *dst = *src;
    dst->overrides = NULL;
    dst->chunk_layers = NULL;
    if (src->n_chunk_layers > 0) {
        dst->chunk_layers = xmalloc((size_t)src->n_chunk_layers * sizeof *dst->chunk_layers);
        memcpy(dst->chunk_layers, src->chunk_layers,
               (size_t)src->n_chunk_layers * sizeof *dst->chunk_layers);
    }
    if (src->n_overrides > 0) {
        dst->overrides = xmalloc((size_t)src->n_overrides * sizeof *dst->overrides);
        memcpy(dst->overrides, src->overrides, (size_t)src->n_overrides * sizeof *dst->overrides);
    }
}

int strategy_load(const char *path, const char *data_dir, strategy *out, ps_error *err)
{
    ps_error scratch; /* the helpers read err->code, so never let it be NULL */
    if (!err) {
        ps_error_clear(&scratch);
        err = &scratch;
    }
    start_strategy(out, path, data_dir);

    ydoc *doc;
    if (yread_load_file(path, "strategy file", &doc, err))
        return err->code;

    yread_ctx c = {doc, path, err};
    ynode *root = yread_root(doc);
    int rc;
    if (!root)
        rc = ps_error_set(err, PS_EINPUT, path, 1, 1, "workload",
                          "the strategy file is empty (missing required key 'workload')");
    else
        rc = load_root(&c, root, out);
    yread_doc_free(doc);

    if (rc) {
        strategy_free(out);
        return rc;
    }
    return 0;
}

void strategy_free(strategy *s)
{
    if (!s)
        return;
    free(s->overrides);
    s->overrides = NULL;
    s->n_overrides = 0;
    free(s->chunk_layers);
    s->chunk_layers = NULL;
    s->n_chunk_layers = 0;
}

int64_t strategy_gpus(const strategy *s)
{
    /* checked: four degrees of up to 2^17 each would overflow 64 bits */
    int64_t product = 1;
    const int64_t degree[4] = {s->tp, s->cp, s->pp, s->dp};
    for (int i = 0; i < 4; i++)
        product = degree[i] < 0 || ps_mul_exceeds(product, degree[i], INT64_MAX / 2)
                      ? INT64_MAX / 2
                      : product * degree[i];
    return product;
}

int strategy_check_gpus(const strategy *s, int gpus, ps_error *err)
{
    int64_t product = strategy_gpus(s);
    if (product == gpus)
        return 0;
    /* Point at the data degree when it was written (it is what users usually derive from the
     * GPU count), else at the tensor degree, else at the pipeline degree. */
    src_loc l = s->dp_loc;
    const char *field = "strategy.data.degree";
    if (l.line == 0 && s->tp_loc.line) {
        l = s->tp_loc;
        field = "strategy.tensor.degree";
    } else if (l.line == 0 && s->pp_loc.line) {
        l = s->pp_loc;
        field = "strategy.pipeline.degree";
    }
    if (s->cp > 1)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                            "tensor %d x context %d x pipeline %d x data %d = %lld GPUs, but the "
                            "cluster has %d GPUs",
                            s->tp, s->cp, s->pp, s->dp, (long long)product, gpus);
    return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                        "tensor %d x pipeline %d x data %d = %lld GPUs, but the cluster has "
                        "%d GPUs",
                        s->tp, s->pp, s->dp, (long long)product, gpus);
}

/* The override in force for `layer` that sets recompute (vocab 0) or vocab_parallel (vocab 1),
 * or NULL. Overrides apply in file order, so the last one that matches wins. */
static const strategy_override *override_for(const strategy *s, int layer, int vocab)
{
    const strategy_override *found = NULL;
    for (int i = 0; i < s->n_overrides; i++) {
        const strategy_override *o = &s->overrides[i];
        if ((vocab ? o->has_vocab_parallel : o->has_recompute) && layer >= o->first_layer &&
            layer <= o->last_layer)
            found = o;
    }
    return found;
}

recompute_mode strategy_recompute_for_layer(const strategy *s, int layer)
{
    const strategy_override *o = override_for(s, layer, 0);
    return o ? o->recompute : s->recompute;
}

int strategy_vocab_parallel_for_layer(const strategy *s, int layer)
{
    const strategy_override *o = override_for(s, layer, 1);
    return o ? o->vocab_parallel : s->vocab_parallel;
}

emb_sharding strategy_table_sharding(const strategy *s, int t, src_loc *where)
{
    assert(s->model.family == FAMILY_DLRM && t >= 0 && t < s->model.dlrm.n_tables);
    if (s->table_has_sharding[t]) {
        if (where)
            *where = s->table_loc[t];
        return s->table_sharding[t];
    }
    assert(s->has_embedding);
    if (where)
        *where = s->sharding_loc;
    return s->embedding_sharding;
}

int strategy_table_shards(const strategy *s, int t, src_loc *where)
{
    int own = s->table_has_sharding[t];
    if (where)
        *where = own ? s->table_shards_loc[t] : s->shards_loc;
    int k = own ? s->table_shards[t] : s->embedding_shards;
    return k > 0 ? k : 1;
}

void strategy_plan_desc(const strategy *s, plan_desc *out)
{
    memset(out, 0, sizeof *out);
    out->tp = s->tp;
    out->pp = s->pp;
    out->dp = s->dp;
    out->cp = s->cp;
    out->micro_batch = s->micro_batch;
    out->global_batch = s->global_batch;
    out->schedule = s->schedule;
    out->virtual_stages = s->schedule == SCHED_INTERLEAVED ? s->virtual_stages : 1;
    out->zero = s->zero;
    out->shard_degree = s->shard_degree;
    out->recompute = s->recompute;
    out->sequence_parallel = s->sequence_parallel;
    out->bucket_mb = s->bucket_mb;
    out->precision = strategy_precision(s);
    out->ep = s->ep;
    out->etp = s->etp;
    out->dense_tables = s->has_embedding && s->embedding_sharding == EMB_SHARD_DATA_PARALLEL;
    out->emb_sharding = s->has_embedding ? (int)s->embedding_sharding : -1;
    out->emb_placement = s->has_placement ? (int)s->placement : -1;
    out->emb_shards = s->embedding_shards;
}

void strategy_set_precision(strategy *s, precision_t p)
{
    s->fp8 = p == PREC_FP8 || p == PREC_FP4;
    s->gemm_precision = s->fp8 ? p : PREC_BF16;
    s->precision = s->fp8 ? PREC_BF16 : p;
}

precision_t strategy_precision(const strategy *s)
{
    return s->fp8 ? s->gemm_precision : s->precision;
}

int strategy_check_devices(const strategy *s, const cluster *c, ps_error *err)
{
    /* the lookup cost's L2 rule needs the cache size (sim/cost/cost_embedding.c) */
    for (int r = 0; s->model.family == FAMILY_DLRM && r < c->n_gpus; r++)
        if (!(c->device[r]->l2_bytes > 0))
            return ps_error_set(err, PS_EINPUT, s->file, s->workload_loc.line,
                                s->workload_loc.column, "workload",
                                "dlrm plans need the GPUs' L2 size for the embedding lookup "
                                "cost, which GPU %d (%s) lacks (no l2_mib in its device entry, "
                                "devices.yaml or a --devices file)",
                                r, c->device[r]->name);
    for (int r = 0; s->fp8 && r < c->n_gpus; r++)
        if (!(c->device[r]->peak_flops[s->gemm_precision] > 0)) {
            int fp4 = s->gemm_precision == PREC_FP4;
            return ps_error_set(err, PS_EINPUT, s->file, s->precision_loc.line,
                                s->precision_loc.column, "precision",
                                "precision %s needs %s tensor cores, which GPU %d (%s) lacks "
                                "(no %s in its device entry)",
                                fp4 ? "fp4" : "fp8", fp4 ? "FP4" : "FP8", r, c->device[r]->name,
                                fp4 ? "fp4_tflops" : "fp8_tflops");
        }
    /* FlashAttention-2's rate is the device's measured warp-MMA share, never a silent 1 */
    for (int r = 0; s->model.attention_kernel == ATTN_KERNEL_WARP_MMA && r < c->n_gpus; r++)
        if (!(c->device[r]->warp_mma_fraction > 0))
            return ps_error_set(err, PS_EINPUT, s->file, s->workload_loc.line,
                                s->workload_loc.column, "workload.attention_kernel",
                                "attention_kernel warp-mma needs the GPUs' warp-level MMA rate, "
                                "which GPU %d (%s) lacks (no warp_mma_fraction in its device "
                                "entry or its architecture)",
                                r, c->device[r]->name);
    return 0;
}

int strategy_shard_degree(const strategy *s)
{
    return s->shard_degree > 0 ? s->shard_degree : s->dp * s->cp;
}

int strategy_micro_batches(const strategy *s)
{
    if (s->micro_batch <= 0 || s->dp <= 0)
        return 0;
    return s->global_batch / (s->micro_batch * s->dp);
}

const char *schedule_name(pipeline_schedule s)
{
    return enum_name(schedule_names, (int)s);
}

const char *recompute_name(recompute_mode r)
{
    return enum_name(recompute_names, (int)r);
}
