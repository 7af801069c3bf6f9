/* workload.c: models read from YAML (workloads/models/NAME.yaml or a path).
 * The op-graph builders live in transformer.c; this file only knows model descriptions. */
#include "workload.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- model mapping ---- */

static const char *const family_table[] = {"gpt", "bert"};
const enum_names model_family_names = ENUM_NAMES(family_table);
static const char *const activation_table[] = {"gelu", "gelu_tanh", "relu"};
const enum_names model_activation_names = ENUM_NAMES(activation_table);
static const char *const attention_table[] = {"unfused", "flash"};
static const char *const kernels_table[] = {"fused", "eager"};

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

/* One key's value into m. `field` is the key's dotted path. */
static int model_field(yread_ctx *c, int f, yaml_node_t *v, const char *field, workload_model *m)
{
    int *dims[F_COUNT] = {NULL,      NULL,           &m->layers, &m->hidden, &m->heads, &m->seq,
                          &m->vocab, &m->ffn_hidden, NULL,       NULL,       NULL};
    int i;
    switch (f) {
    case F_NAME: {
        const char *s = yread_scalar(v);
        if (!s || !s[0])
            return yread_fail(c, v, field, "expected a name, got %s", yread_kind(v));
        if (strlen(s) >= sizeof m->name)
            return yread_fail(c, v, field, "name longer than %zu characters", sizeof m->name - 1);
        snprintf(m->name, sizeof m->name, "%s", s);
        return 0;
    }
    case F_FAMILY:
    case F_ATTENTION:
    case F_KERNELS:
    case F_ACTIVATION: {
        enum_names names = f == F_FAMILY      ? model_family_names
                           : f == F_ATTENTION ? ENUM_NAMES(attention_table)
                           : f == F_KERNELS   ? ENUM_NAMES(kernels_table)
                                              : model_activation_names;
        if (yread_enum(c, v, field, names, &i))
            return c->err->code;
        if (f == F_FAMILY)
            m->family = (model_family)i;
        else if (f == F_ATTENTION)
            m->flash_attention = i;
        else if (f == F_KERNELS)
            m->eager_kernels = i;
        else
            m->activation = (model_activation)i;
        return 0;
    }
    default: return yread_int(c, v, field, 1, INT_MAX, dims[f]);
    }
}

int workload_model_read(yread_ctx *c, yaml_node_t *node, const char *path, workload_model *out)
{
    assert(c && node && out);
    if (node->type != YAML_MAPPING_NODE)
        return yread_fail(c, node, path, "a model must be a mapping (family, layers, hidden, ...)");
    if (yread_check_keys(c, node, path, model_keys, F_COUNT))
        return c->err->code;

    workload_model m;
    memset(&m, 0, sizeof m);
    char field[160];
    for (int f = 0; f < F_COUNT; f++) {
        yread_join_path(field, sizeof field, path, model_keys[f]);
        yaml_node_t *v = yread_map_get(c, node, model_keys[f]);
        if (v && model_field(c, f, v, field, &m))
            return c->err->code;
        int optional =
            f == F_NAME || f == F_FFN || f == F_ATTENTION || f == F_KERNELS || f == F_ACTIVATION;
        if (!v && !optional)
            return yread_fail(c, node, field, "missing required key '%s'", model_keys[f]);
    }
    if (m.hidden % m.heads != 0) {
        yread_join_path(field, sizeof field, path, "heads");
        return yread_fail(c, yread_map_get(c, node, "heads"), field,
                          "hidden (%d) is not divisible by heads (%d)", m.hidden, m.heads);
    }
    if (!yread_map_get(c, node, "ffn_hidden"))
        m.ffn_hidden = 4 * m.hidden;
    *out = m;
    return 0;
}

int workload_model_from_yaml(yaml_document_t *doc, yaml_node_t *node, const char *file,
                             workload_model *out, ps_error *err)
{
    yread_ctx c = {doc, file, err};
    return workload_model_read(&c, node, "", out);
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
        n = snprintf(path, sizeof path, "%s/workloads/models/%s.yaml",
                     data_dir && *data_dir ? data_dir : ps_data_dir(), name_or_path);
    if (n < 0 || (size_t)n >= sizeof path)
        return ps_error_set(err, PS_EINPUT, name_or_path, 0, 0, "workload",
                            "workload path too long");

    if (access(path, F_OK) != 0)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "workload",
                            "no such workload '%s' (cannot open %s: %s)", name_or_path, path,
                            strerror(errno));
    yaml_document_t doc;
    if (yread_load_file(path, "model file", &doc, err))
        return err->code;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc;
    if (!root)
        rc = ps_error_set(err, PS_EINPUT, path, 1, 1, "", "empty model file");
    else
        rc = workload_model_from_yaml(&doc, root, path, out, err);
    if (rc == 0 && out->name[0] == '\0')
        stem_of(path, out->name, sizeof out->name);
    yaml_document_delete(&doc);
    return rc;
}
