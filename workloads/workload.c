/* workload.c: models read from YAML (workloads/models/NAME.yaml or a path).
 * The op-graph builders live in transformer.c; this file only knows model descriptions. */
#include "workload.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- model mapping ---- */

static int node_line(const yaml_node_t *n)
{
    return (int)n->start_mark.line + 1;
}
static int node_col(const yaml_node_t *n)
{
    return (int)n->start_mark.column + 1;
}

static const char *scalar_text(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A positive int from a scalar; anything else is an error naming the field. */
static int parse_dim(const yaml_node_t *v, const char *file, const char *field, int *out,
                     ps_error *err)
{
    const char *s = scalar_text(v);
    if (!s)
        return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), field,
                            "expected a positive integer, got a %s",
                            v->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || x > INT_MAX)
        return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), field,
                            "expected a positive integer, got '%s'", s);
    if (x <= 0)
        return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), field,
                            "must be positive, got %ld", x);
    *out = (int)x;
    return 0;
}

enum {
    F_NAME,
    F_FAMILY,
    F_LAYERS,
    F_HIDDEN,
    F_HEADS,
    F_SEQ,
    F_VOCAB,
    F_FFN,
    F_ATTENTION,
    F_KERNELS,
    F_ACTIVATION,
    F_COUNT
};
static const char *const model_keys[F_COUNT] = {"name",      "family",  "layers",    "hidden",
                                                "heads",     "seq",     "vocab",     "ffn_hidden",
                                                "attention", "kernels", "activation"};

int workload_model_from_yaml(yaml_document_t *doc, yaml_node_t *node, const char *file,
                             workload_model *out, ps_error *err)
{
    assert(doc && node && out);
    if (node->type != YAML_MAPPING_NODE)
        return ps_error_set(err, PS_EINPUT, file, node_line(node), node_col(node), "",
                            "a model must be a mapping (family, layers, hidden, ...)");

    workload_model m;
    memset(&m, 0, sizeof m);
    int seen[F_COUNT] = {0};
    int *dims[F_COUNT] = {NULL,     NULL,          &m.layers, &m.hidden, &m.heads, &m.seq,
                          &m.vocab, &m.ffn_hidden, NULL,      NULL,      NULL};

    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        assert(k && v);
        const char *key = scalar_text(k);
        if (!key)
            return ps_error_set(err, PS_EINPUT, file, node_line(k), node_col(k), "",
                                "model keys must be plain names");
        int f = 0;
        while (f < F_COUNT && strcmp(key, model_keys[f]) != 0)
            f++;
        if (f == F_COUNT)
            return ps_error_set(err, PS_EINPUT, file, node_line(k), node_col(k), key,
                                "unknown model key '%s' (expected name, family, layers, "
                                "hidden, heads, seq, vocab, ffn_hidden, attention, kernels, "
                                "activation)",
                                key);
        if (seen[f])
            return ps_error_set(err, PS_EINPUT, file, node_line(k), node_col(k), key,
                                "duplicate key '%s'", key);
        seen[f] = 1;

        if (f == F_ATTENTION) {
            const char *a = scalar_text(v);
            if (a && strcmp(a, "flash") == 0)
                m.flash_attention = 1;
            else if (!a || strcmp(a, "unfused") != 0)
                return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                    "unknown attention '%s' (expected unfused or flash)",
                                    a ? a : "");
        } else if (f == F_KERNELS) {
            const char *a = scalar_text(v);
            if (a && strcmp(a, "eager") == 0)
                m.eager_kernels = 1;
            else if (!a || strcmp(a, "fused") != 0)
                return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                    "unknown kernels '%s' (expected fused or eager)", a ? a : "");
        } else if (f == F_ACTIVATION) {
            const char *a = scalar_text(v);
            if (a && strcmp(a, "gelu") == 0)
                m.activation = ACT_GELU;
            else if (a && strcmp(a, "gelu_tanh") == 0)
                m.activation = ACT_GELU_TANH;
            else if (a && strcmp(a, "relu") == 0)
                m.activation = ACT_RELU;
            else
                return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                    "unknown activation '%s' (expected gelu, gelu_tanh or relu)",
                                    a ? a : "");
        } else if (f == F_NAME || f == F_FAMILY) {
            const char *s = scalar_text(v);
            if (!s)
                return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                    "expected a string");
            if (f == F_NAME) {
                if (strlen(s) >= sizeof m.name)
                    return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                        "name longer than %zu characters", sizeof m.name - 1);
                snprintf(m.name, sizeof m.name, "%s", s);
            } else if (strcmp(s, "gpt") == 0) {
                m.family = FAMILY_GPT;
            } else if (strcmp(s, "bert") == 0) {
                m.family = FAMILY_BERT;
            } else {
                return ps_error_set(err, PS_EINPUT, file, node_line(v), node_col(v), key,
                                    "unknown family '%s' (expected gpt or bert)", s);
            }
        } else {
            int rc = parse_dim(v, file, key, dims[f], err);
            if (rc)
                return rc;
        }
    }

    for (int f = F_FAMILY; f < F_COUNT; f++) {
        if (!seen[f] && f != F_FFN && f != F_ATTENTION && f != F_KERNELS && f != F_ACTIVATION)
            return ps_error_set(err, PS_EINPUT, file, node_line(node), node_col(node),
                                model_keys[f], "missing required key '%s'", model_keys[f]);
    }
    if (m.hidden % m.heads != 0)
        return ps_error_set(err, PS_EINPUT, file, node_line(node), node_col(node), "heads",
                            "hidden (%d) is not divisible by heads (%d)", m.hidden, m.heads);
    if (!seen[F_FFN])
        m.ffn_hidden = 4 * m.hidden;
    *out = m;
    return 0;
}

/* ---- loading a model file ---- */

static int looks_like_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n >= 5 && strcmp(s + n - 5, ".yaml") == 0);
}

/* "dir/gpt3-175b.yaml" -> "gpt3-175b" */
static void stem_of(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n >= 5 && strcmp(base + n - 5, ".yaml") == 0)
        n -= 5;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

int workload_model_load(const char *name_or_path, const char *data_dir, workload_model *out,
                        ps_error *err)
{
    assert(name_or_path && out);
    char path[512];
    int n;
    if (looks_like_path(name_or_path))
        n = snprintf(path, sizeof path, "%s", name_or_path);
    else
        n = snprintf(path, sizeof path, "%s/workloads/models/%s.yaml", data_dir ? data_dir : ".",
                     name_or_path);
    if (n < 0 || (size_t)n >= sizeof path)
        return ps_error_set(err, PS_EINPUT, name_or_path, 0, 0, "workload",
                            "workload path too long");

    FILE *f = fopen(path, "rb");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "workload",
                            "no such workload '%s' (cannot open %s: %s)", name_or_path, path,
                            strerror(errno));

    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        return ps_error_set(err, PS_EINTERNAL, path, 0, 0, "", "cannot start the YAML parser");
    }
    yaml_parser_set_input_file(&parser, f);
    int rc = 0;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = ps_error_set(err, PS_EINPUT, path, (int)parser.problem_mark.line + 1,
                          (int)parser.problem_mark.column + 1, "", "malformed YAML: %s%s%s",
                          parser.problem ? parser.problem : "parse error",
                          parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        fclose(f);
        return rc;
    }

    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root)
        rc = ps_error_set(err, PS_EINPUT, path, 1, 1, "", "empty model file");
    else
        rc = workload_model_from_yaml(&doc, root, path, out, err);
    if (rc == 0 && out->name[0] == '\0')
        stem_of(path, out->name, sizeof out->name);

    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}
