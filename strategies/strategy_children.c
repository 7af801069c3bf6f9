/* strategy_children.c: strategy.children, the per-module overrides of a strategy file: per-layer
 * recompute and vocab_parallel (llm models), per-table sharding (dlrm models). Read by the loader
 * (strategy.c); checked against the rest of the plan by strategy_validate. */
#include "strategy.h"
#include "strategy_children.h"
#include "../sim/base/yaml_read.h"
#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "PREFIXN" or "PREFIXA-B" (inclusive, up to 9 digits each) into first, last; 0 when it parses. */
static int parse_index_range(const char *p, const char *prefix, int *first, int *last)
{
    size_t k = strlen(prefix);
    if (strncmp(p, prefix, k))
        return -1;
    p += k;
    const char *dash = strchr(p, '-');
    size_t n1 = dash ? (size_t)(dash - p) : strlen(p);
    const char *second = dash ? dash + 1 : p;
    size_t n2 = strlen(second);
    if (n1 == 0 || n1 > 9 || strspn(p, "0123456789") != n1 || n2 == 0 || n2 > 9 ||
        strspn(second, "0123456789") != n2)
        return -1;
    *first = atoi(p);
    *last = atoi(second);
    return 0;
}

/* A children path: "layers.N", "layers.A-B", "embedding" or "head". 0 when it parses. */
static int parse_layer_path(const char *p, int layers, int *first, int *last)
{
    if (!strcmp(p, "embedding")) {
        *first = *last = -1;
        return 0;
    }
    if (!strcmp(p, "head")) {
        *first = *last = layers;
        return 0;
    }
    return parse_index_range(p, "layers.", first, last);
}

static int load_override(yread_ctx *c, ynode *key, ynode *val, int layers, strategy_override *o)
{
    static const char *const keys[] = {"recompute", "tensor"};
    static const char *const tensor_keys[] = {"vocab_parallel"};
    const char *path = yread_scalar(key);
    char field[128];
    snprintf(field, sizeof field, "strategy.children.%s", path ? path : "?");

    if (!path)
        return yread_fail(c, key, "strategy.children",
                          "a children key must be a module path, "
                          "got %s",
                          yread_kind(key));
    if (strlen(path) >= sizeof o->path ||
        parse_layer_path(path, layers, &o->first_layer, &o->last_layer))
        return yread_fail(c, key, field,
                          "unknown module path '%s' (expected layers.N, "
                          "layers.A-B, embedding or head)",
                          path);
    if (strcmp(path, "embedding") && strcmp(path, "head") &&
        (o->first_layer > o->last_layer || o->last_layer >= layers))
        return yread_fail(c, key, field,
                          "layer range '%s' must satisfy 0 <= A <= B < %d "
                          "(the model's layer count)",
                          path, layers);
    snprintf(o->path, sizeof o->path, "%s", path);
    o->loc = yread_loc(key);

    if (yread_expect_mapping(c, val, field) || yread_check_keys(c, val, field, keys, COUNT(keys)))
        return c->err->code;
    ynode *v;
    char sub[160];
    if ((v = yread_map_get(c, val, "recompute"))) {
        int i;
        yread_join_path(sub, sizeof sub, field, "recompute");
        if (yread_enum(c, v, sub, recompute_names, &i))
            return c->err->code;
        o->has_recompute = 1;
        o->recompute = (recompute_mode)i;
    }
    if ((v = yread_map_get(c, val, "tensor"))) {
        yread_join_path(sub, sizeof sub, field, "tensor");
        if (yread_expect_mapping(c, v, sub) ||
            yread_check_keys(c, v, sub, tensor_keys, COUNT(tensor_keys)))
            return c->err->code;
        ynode *vp = yread_map_get(c, v, "vocab_parallel");
        if (vp) {
            yread_join_path(sub, sizeof sub, field, "tensor.vocab_parallel");
            if (o->first_layer >= 0 && o->first_layer < layers)
                return yread_fail(c, vp, sub,
                                  "vocab_parallel splits the embedding and the LM head over the "
                                  "vocabulary: it applies to children embedding and head, not "
                                  "to '%s'",
                                  path);
            if (yread_bool(c, vp, sub, &o->vocab_parallel))
                return c->err->code;
            o->has_vocab_parallel = 1;
        }
    }
    return 0;
}

/* A dlrm children key "tables.N" or "tables.A-B" (inclusive); 0 when it parses. */
static int parse_table_path(const char *p, int *first, int *last)
{
    return parse_index_range(p, "tables.", first, last);
}

/* children of a dlrm plan: per-table sharding, {sharding: S, shards: K}, each table at most
 * once. strategy.embedding gives the root's. */
static int load_table_children(yread_ctx *c, ynode *n, strategy *s)
{
    static const char *const keys[] = {"sharding", "shards"};
    int tables = s->model.dlrm.n_tables;
    int count = yread_map_len(n);
    for (int i = 0; i < count; i++) {
        ypair p = yread_map_pair(c, n, i);
        ynode *k = p.key_node, *v = p.value;
        const char *path = p.key;
        char field[96], sub[128];
        snprintf(field, sizeof field, "strategy.children.%.60s", path ? path : "?");
        int first, last;
        if (!path || parse_table_path(path, &first, &last))
            return yread_fail(c, k, path ? field : "strategy.children",
                              "unknown module path '%s' (a dlrm model's children are tables.N "
                              "or tables.A-B)",
                              path ? path : yread_kind(k));
        if (first > last || last >= tables)
            return yread_fail(c, k, field,
                              "table range '%s' must satisfy 0 <= A <= B < %d (the model's "
                              "tables)",
                              path, tables);
        for (int t = first; t <= last; t++)
            if (s->table_has_sharding[t])
                return yread_fail(c, k, field,
                                  "table %d already has its sharding (from the child at line "
                                  "%d)",
                                  t, s->table_loc[t].line);
        if (yread_expect_mapping(c, v, field) || yread_check_keys(c, v, field, keys, COUNT(keys)))
            return c->err->code;
        ynode *sv = yread_map_get(c, v, "sharding");
        yread_join_path(sub, sizeof sub, field, "sharding");
        if (!sv)
            return yread_fail(c, v, sub, "missing required key 'sharding' in %s", field);
        int sh, shards = 0;
        if (yread_enum(c, sv, sub, emb_sharding_names, &sh))
            return c->err->code;
        ynode *kv = yread_map_get(c, v, "shards");
        yread_join_path(sub, sizeof sub, field, "shards");
        if (kv && yread_int(c, kv, sub, 1, INT_MAX, &shards))
            return c->err->code;
        for (int t = first; t <= last; t++) {
            s->table_has_sharding[t] = 1;
            s->table_sharding[t] = (emb_sharding)sh;
            s->table_shards[t] = shards;
            s->table_loc[t] = yread_loc(k);
            snprintf(s->table_path[t], sizeof s->table_path[t], "%.23s", path);
            s->table_shards_loc[t] = yread_loc(kv);
        }
    }
    s->has_table_children = 1;
    s->table_children_loc = yread_loc(n);
    return 0;
}

/* strategy.children: per-layer overrides (llm models) or per-table sharding (dlrm models). */
int strategy_load_children(yread_ctx *c, ynode *n, strategy *s)
{
    if (yread_expect_mapping(c, n, "strategy.children"))
        return c->err->code;
    if (s->model.family == FAMILY_DLRM)
        return load_table_children(c, n, s);
    int count = yread_map_len(n);
    if (count == 0)
        return 0;
    if (count > PS_MAX_LAYERS + 2)
        return yread_fail(c, n, "strategy.children",
                          "%d children: more than %d (protosim's limit of layers, + 2)", count,
                          PS_MAX_LAYERS + 2);
    s->overrides = xcalloc((size_t)count, sizeof *s->overrides);
    for (int i = 0; i < count; i++) {
        ypair p = yread_map_pair(c, n, i);
        ynode *k = p.key_node;
        if (load_override(c, k, p.value, s->model.layers, &s->overrides[i]))
            return c->err->code;
        s->n_overrides = i + 1;
        /* a repeated path, as every other mapping: the second would silently win */
        for (int j = 0; j < i; j++)
            if (!strcmp(s->overrides[j].path, s->overrides[i].path)) {
                char field[128];
                snprintf(field, sizeof field, "strategy.children.%s", s->overrides[i].path);
                return yread_fail(c, k, field, "duplicate key '%s'", s->overrides[i].path);
            }
    }
    return 0;
}
