/* sweep_spec.c: parsing a sweep file (base strategy, axes, constraints) through sim/base/yaml_read,
 * so every error names file:line:column and the field, as the strategy parser does. */
#include "sweep_spec.h"
#include "../sim/base/limits.h"
#include "../sim/base/yaml_read.h"
#include "../sim/base/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const axis_names[SWEEP_AXIS_COUNT] = {
    "gpus",           "tensor", "pipeline",     "data",      "micro_batch", "schedule",
    "virtual_stages", "zero",   "shard_degree", "recompute", "bucket_mb",   "sequence_parallel",
    "context",        "expert", "sharding",     "placement", "shards",      "tables_sharding"};
const enum_names sweep_axis_names = ENUM_NAMES(axis_names);

/* The placements a sweep axis may name (an explicit list stays the base strategy's). */
static const char *const placement_axis_table[] = {"greedy", "round-robin", "memory-balanced"};
static const enum_names placement_axis_names = ENUM_NAMES(placement_axis_table);

/* One value of axis k, as stored in sweep_axis.values. */
static int axis_value(yread_ctx *c, sweep_axis_kind k, ynode *n, const char *field, double *out)
{
    int iv;
    switch (k) {
    case SWEEP_SHARDING:
    case SWEEP_PLACEMENT:
        if (yread_enum(c, n, field, k == SWEEP_SHARDING ? emb_sharding_names : placement_axis_names,
                       &iv))
            return c->err->code;
        *out = iv;
        return 0;
    case SWEEP_SCHEDULE:
    case SWEEP_RECOMPUTE:
        if (yread_enum(c, n, field, k == SWEEP_SCHEDULE ? schedule_names : recompute_names, &iv))
            return c->err->code;
        *out = iv;
        return 0;
    case SWEEP_SEQUENCE_PARALLEL:
        if (yread_bool(c, n, field, &iv))
            return c->err->code;
        *out = iv;
        return 0;
    case SWEEP_BUCKET_MB: return yread_positive(c, n, field, out);
    case SWEEP_SHARDS:
        if (yread_int(c, n, field, 2, 1 << 20, &iv))
            return c->err->code;
        *out = iv;
        return 0;
    case SWEEP_ZERO:
        if (yread_int(c, n, field, 0, 3, &iv))
            return c->err->code;
        *out = iv;
        return 0;
    default: /* degrees, micro-batches, virtual stages: the strategy's limits */
        if (yread_count(c, n, field, 1,
                        k == SWEEP_MICRO_BATCH      ? PS_MAX_GLOBAL_BATCH
                        : k == SWEEP_VIRTUAL_STAGES ? PS_MAX_LAYERS + 2
                                                    : PS_MAX_GPUS,
                        &iv))
            return c->err->code;
        *out = iv;
        return 0;
    }
}

static int load_axes(yread_ctx *c, ynode *m, sweep_spec *s)
{
    if (!yread_is_mapping(m))
        return yread_fail(c, m, "axes", "expected a mapping of axis: [values], got %s",
                          yread_kind(m));
    s->axes_loc = yread_loc(m);
    int pairs = yread_map_len(m);
    for (int p = 0; p < pairs; p++) {
        ypair kv = yread_map_pair(c, m, p);
        ynode *k = kv.key_node, *v = kv.value;
        const char *name = kv.key;
        int kind = enum_parse(sweep_axis_names, name);
        char field[128];
        snprintf(field, sizeof field, "axes.%s", name ? name : "?");
        if (kind < 0) {
            char list[256] = "";
            for (int i = 0; i < SWEEP_AXIS_COUNT; i++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", axis_names[i]);
            }
            return yread_fail(c, k, field, "unknown axis '%s' (expected %s)", name ? name : "?",
                              list);
        }
        sweep_axis *a = &s->axes[kind];
        if (a->present)
            return yread_fail(c, k, field, "duplicate axis '%s'", name);
        a->present = 1;
        a->loc = yread_loc(v);
        const char *sv = yread_scalar(v);
        if ((kind == SWEEP_DATA || kind == SWEEP_TABLES_SHARDING) && sv && !strcmp(sv, "auto")) {
            a->data_auto = 1;
            continue;
        }
        if (kind == SWEEP_TABLES_SHARDING)
            return yread_fail(c, v, field,
                              "expected auto (per-table shardings proposed the way TorchRec's "
                              "planner does), got %s",
                              sv ? sv : yread_kind(v));
        if (!yread_is_list(v))
            return yread_fail(c, v, field, "expected a non-empty list of values%s, got %s",
                              kind == SWEEP_DATA ? " or auto" : "", yread_kind(v));
        int n = yread_list_len(v);
        if (n == 0)
            return yread_fail(c, v, field, "empty list: an axis needs at least one value");
        if (n > PS_MAX_AXIS_VALUES)
            return yread_fail(c, v, field, "%d values: more than %d (protosim's limit)", n,
                              PS_MAX_AXIS_VALUES);
        a->values = xcalloc((size_t)n, sizeof *a->values);
        for (int i = 0; i < n; i++) {
            ynode *item = yread_list_item(c, v, i);
            char f[160];
            snprintf(f, sizeof f, "%s[%d]", field, i);
            if (axis_value(c, (sweep_axis_kind)kind, item, f, &a->values[i]))
                return c->err->code;
            for (int j = 0; j < i; j++)
                if (a->values[j] == a->values[i])
                    return yread_fail(c, item, f, "value repeated in axis '%s'", name);
            a->n = i + 1;
        }
    }
    return 0;
}

static const char *const memory_table[] = {"ignore", "fit"};
const enum_names sweep_memory_names = ENUM_NAMES(memory_table);

static int load_constraints(yread_ctx *c, ynode *m, sweep_spec *s)
{
    static const char *const keys[] = {"gpus", "memory", "max_plans"};
    ynode *v;
    if (yread_expect_mapping(c, m, "constraints") || yread_check_keys(c, m, "constraints", keys, 3))
        return c->err->code;
    if ((v = yread_map_get(c, m, "gpus"))) {
        s->gpus_loc = yread_loc(v);
        if (yread_count(c, v, "constraints.gpus", 1, PS_MAX_GPUS, &s->gpus))
            return c->err->code;
    }
    if ((v = yread_map_get(c, m, "memory")) &&
        yread_enum(c, v, "constraints.memory", sweep_memory_names, &s->memory_fit))
        return c->err->code;
    if ((v = yread_map_get(c, m, "max_plans"))) {
        s->max_plans_loc = yread_loc(v);
        if (yread_count(c, v, "constraints.max_plans", 1, PS_MAX_SWEEP_PLANS, &s->max_plans))
            return c->err->code;
    }
    return 0;
}

/* base: a strategy file (relative to the sweep file) or an inline strategy mapping. */
static int load_base(yread_ctx *c, ynode *n, const char *data_dir, sweep_spec *s)
{
    if (yread_is_mapping(n)) {
        s->base_file[0] = '\0';
        return strategy_load_node(c->doc, n, c->file, data_dir, &s->base, c->err);
    }
    const char *path = yread_scalar(n);
    if (!path || !path[0])
        return yread_fail(c, n, "base",
                          "expected a strategy file path or an inline strategy "
                          "mapping, got %s",
                          yread_kind(n));
    const char *slash = strrchr(c->file, '/');
    if (path[0] != '/' && slash)
        snprintf(s->base_file, sizeof s->base_file, "%.*s/%s", (int)(slash - c->file), c->file,
                 path);
    else
        snprintf(s->base_file, sizeof s->base_file, "%s", path);
    /* An error inside the base file keeps its own location; a missing file points here. */
    ps_error sub;
    ps_error_clear(&sub);
    if (strategy_load(s->base_file, data_dir, &s->base, &sub) == 0)
        return 0;
    if (sub.line > 0) {
        *c->err = sub;
        return c->err->code;
    }
    return yread_fail(c, n, "base", "%s: %s", s->base_file, sub.message);
}

/* The embedding axes need a dlrm base; tables_sharding proposes the root sharding too, so not
 * with the sharding axis. */
static int check_dlrm_axes(yread_ctx *c, sweep_spec *s)
{
    static const sweep_axis_kind dlrm_axes[] = {SWEEP_SHARDING, SWEEP_PLACEMENT, SWEEP_SHARDS,
                                                SWEEP_TABLES_SHARDING};
    for (int i = 0; i < 4; i++) {
        const sweep_axis *a = &s->axes[dlrm_axes[i]];
        char field[64];
        snprintf(field, sizeof field, "axes.%s", axis_names[dlrm_axes[i]]);
        if (a->present && s->base.model.family != FAMILY_DLRM)
            return ps_error_set(c->err, PS_EINPUT, c->file, a->loc.line, a->loc.column, field,
                                "axis '%s' applies to dlrm models; the base's model '%s' is a %s",
                                axis_names[dlrm_axes[i]], s->base.model.name,
                                enum_name(model_family_names, (int)s->base.model.family));
    }
    const sweep_axis *t = &s->axes[SWEEP_TABLES_SHARDING];
    if (t->present && (s->axes[SWEEP_SHARDING].present || s->axes[SWEEP_SHARDS].present))
        return ps_error_set(c->err, PS_EINPUT, c->file, t->loc.line, t->loc.column,
                            "axes.tables_sharding",
                            "tables_sharding: auto proposes every table's sharding and column "
                            "shards (the uniform plans included): drop the %s axis",
                            s->axes[SWEEP_SHARDING].present ? "sharding" : "shards");
    return 0;
}

static int load_sweep_root(yread_ctx *c, ynode *root, const char *data_dir, sweep_spec *s)
{
    static const char *const keys[] = {"base", "axes", "constraints"};
    if (!yread_is_mapping(root))
        return yread_fail(c, root, "",
                          "a sweep file is a mapping with base, axes and constraints, "
                          "got %s",
                          yread_kind(root));
    ynode *base = NULL, *axes = NULL, *cons = NULL;
    int pairs = yread_map_len(root);
    for (int p = 0; p < pairs; p++) {
        ypair kv = yread_map_pair(c, root, p);
        ynode *k = kv.key_node, *v = kv.value;
        const char *name = kv.key;
        ynode **slot = NULL;
        for (int i = 0; name && i < 3; i++)
            if (!strcmp(name, keys[i]))
                slot = i == 0 ? &base : i == 1 ? &axes : &cons;
        if (!slot)
            return yread_fail(c, k, name ? name : "",
                              "unknown key '%s' (expected base, axes, "
                              "constraints)",
                              name ? name : "?");
        if (*slot)
            return yread_fail(c, k, name, "duplicate key '%s'", name);
        *slot = v;
    }
    if (!base)
        return yread_fail(c, root, "base",
                          "missing required key 'base' (a strategy file or an "
                          "inline strategy)");
    if (!axes)
        return yread_fail(c, root, "axes", "missing required key 'axes'");
    if (load_axes(c, axes, s))
        return c->err->code;
    if (cons && load_constraints(c, cons, s))
        return c->err->code;
    if (load_base(c, base, data_dir, s))
        return c->err->code;
    if (s->gpus && s->axes[SWEEP_GPUS].present)
        return ps_error_set(c->err, PS_EINPUT, c->file, s->gpus_loc.line, s->gpus_loc.column,
                            "constraints.gpus",
                            "the gpus axis varies the GPU count: drop constraints.gpus");
    return check_dlrm_axes(c, s);
}

int sweep_spec_load(const char *path, const char *data_dir, sweep_spec *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    out->memory_fit = 1;
    out->max_plans = 100000;
    snprintf(out->file, sizeof out->file, "%s", path);
    ydoc *doc;
    if (yread_load_file(path, "sweep file", &doc, err))
        return err->code;
    yread_ctx c = {doc, path, err};
    ynode *root = yread_root(doc);
    int rc = root ? load_sweep_root(&c, root, data_dir, out)
                  : ps_error_set(err, PS_EINPUT, path, 1, 1, "base", "the sweep file is empty");
    yread_doc_free(doc);
    if (rc)
        sweep_spec_free(out);
    return rc;
}

void sweep_spec_free(sweep_spec *s)
{
    free(s->proposals);
    s->proposals = NULL;
    s->n_proposals = 0;
    for (int i = 0; i < SWEEP_AXIS_COUNT; i++) {
        free(s->axes[i].values);
        s->axes[i].values = NULL;
        s->axes[i].n = 0;
    }
    strategy_free(&s->base);
}

const char *sweep_axis_name(sweep_axis_kind k)
{
    return enum_name(sweep_axis_names, (int)k);
}

int sweep_axis_count(const sweep_spec *s, sweep_axis_kind k)
{
    const sweep_axis *a = &s->axes[k];
    if (k == SWEEP_TABLES_SHARDING && a->present)
        return s->n_proposals;
    return a->present && !a->data_auto ? a->n : 1;
}
