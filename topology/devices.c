/* devices.c: the GPU device table (datasheet peaks, HBM, SMs) read from devices.yaml.
 * Every entry must give every figure: a silently missing peak would cost ops at zero speed. */
#include "cluster.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

enum {
    KEY_FP32,
    KEY_TF32,
    KEY_FP16,
    KEY_BF16,
    KEY_HBM_GBPS,
    KEY_HBM_GIB,
    KEY_HBM_GB,
    KEY_SMS,
    KEY_NAME,
    N_KEYS
};

static const char *const device_keys[N_KEYS] = {
    "fp32_tflops", "tf32_tflops", "fp16_tflops", "bf16_tflops", "hbm_gbps",
    "hbm_gib",     "hbm_gb",      "sms",         "name",
};

/* The peak_flops slot of each *_tflops key (precision_t order). */
static const int key_precision[4] = {PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16};

static int node_error(ps_error *err, const char *path, const yaml_node_t *n, const char *field,
                      const char *msg)
{
    return ps_error_set(err, PS_EINPUT, path, (int)n->start_mark.line + 1,
                        (int)n->start_mark.column + 1, field, "%s", msg);
}

static int scalar_number(const yaml_node_t *n, double *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return -1;
    const char *s = (const char *)n->data.scalar.value;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v) || v <= 0)
        return -1;
    *out = v;
    return 0;
}

static int parse_entry(const char *path, yaml_document_t *doc, const yaml_node_t *entry,
                       device_spec *spec, ps_error *err)
{
    if (entry->type != YAML_MAPPING_NODE)
        return node_error(err, path, entry, "",
                          "a device entry must be a mapping of name and figures");

    double value[N_KEYS] = {0};
    int seen[N_KEYS] = {0};
    memset(spec, 0, sizeof *spec);

    for (yaml_node_pair_t *p = entry->data.mapping.pairs.start; p < entry->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        if (k->type != YAML_SCALAR_NODE)
            return node_error(err, path, k, "", "keys must be plain names");
        const char *key = (const char *)k->data.scalar.value;
        int i = 0;
        while (i < N_KEYS && strcmp(key, device_keys[i]))
            i++;
        if (i == N_KEYS)
            return ps_error_set(err, PS_EINPUT, path, (int)k->start_mark.line + 1,
                                (int)k->start_mark.column + 1, key,
                                "unknown key (expected name, fp32_tflops, tf32_tflops, "
                                "fp16_tflops, bf16_tflops, hbm_gbps, hbm_gib or hbm_gb, sms)");
        if (seen[i])
            return node_error(err, path, k, key, "key given twice");
        seen[i] = 1;
        if (i == KEY_NAME) {
            if (v->type != YAML_SCALAR_NODE || !v->data.scalar.length ||
                v->data.scalar.length >= sizeof spec->name)
                return node_error(err, path, v, key, "name must be a string of 1 to 47 characters");
            memcpy(spec->name, v->data.scalar.value, v->data.scalar.length + 1);
        } else if (scalar_number(v, &value[i])) {
            return node_error(err, path, v, key, "expected a positive number");
        }
    }

    if (!seen[KEY_NAME])
        return node_error(err, path, entry, "name", "device entry without a name");
    for (int i = 0; i < N_KEYS; i++) {
        if (i == KEY_NAME || i == KEY_HBM_GIB || i == KEY_HBM_GB || seen[i])
            continue;
        return ps_error_set(err, PS_EINPUT, path, (int)entry->start_mark.line + 1,
                            (int)entry->start_mark.column + 1, device_keys[i],
                            "device '%s' lacks %s", spec->name, device_keys[i]);
    }
    if (seen[KEY_HBM_GIB] == seen[KEY_HBM_GB])
        return ps_error_set(err, PS_EINPUT, path, (int)entry->start_mark.line + 1,
                            (int)entry->start_mark.column + 1, "hbm_gib",
                            "device '%s' needs exactly one of hbm_gib and hbm_gb", spec->name);
    if (value[KEY_SMS] != floor(value[KEY_SMS]))
        return ps_error_set(err, PS_EINPUT, path, (int)entry->start_mark.line + 1,
                            (int)entry->start_mark.column + 1, "sms",
                            "device '%s': sms must be an integer", spec->name);

    for (int i = KEY_FP32; i <= KEY_BF16; i++)
        spec->peak_flops[key_precision[i]] = value[i] * 1e12;
    spec->hbm_bw = value[KEY_HBM_GBPS] * 1e9;
    spec->hbm_bytes =
        seen[KEY_HBM_GIB] ? value[KEY_HBM_GIB] * 1073741824.0 : value[KEY_HBM_GB] * 1e9;
    spec->sms = (int)value[KEY_SMS];
    return 0;
}

int device_table_load(const char *path, device_table *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "", "cannot open device table: %s",
                            strerror(errno));

    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        ps_error_set(err, PS_EINPUT, path, (int)parser.problem_mark.line + 1,
                     (int)parser.problem_mark.column + 1, "", "YAML syntax error: %s",
                     parser.problem ? parser.problem : "unknown");
        yaml_parser_delete(&parser);
        fclose(f);
        return PS_EINPUT;
    }
    yaml_parser_delete(&parser);
    fclose(f);

    int rc = 0;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root || root->type != YAML_SEQUENCE_NODE) {
        rc = ps_error_set(err, PS_EINPUT, path, root ? (int)root->start_mark.line + 1 : 1,
                          root ? (int)root->start_mark.column + 1 : 1, "",
                          "the device table must be a list of devices");
        goto done;
    }

    int n = (int)(root->data.sequence.items.top - root->data.sequence.items.start);
    out->specs = calloc(n ? (size_t)n : 1, sizeof *out->specs);
    if (!out->specs) {
        rc = ps_error_set(err, PS_EINTERNAL, path, 0, 0, "", "out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        yaml_node_t *entry = yaml_document_get_node(&doc, root->data.sequence.items.start[i]);
        rc = parse_entry(path, &doc, entry, &out->specs[i], err);
        if (rc)
            goto done;
        if (device_table_find(out, out->specs[i].name)) {
            rc = node_error(err, path, entry, "name", "device name given twice");
            goto done;
        }
        out->n = i + 1;
    }

done:
    yaml_document_delete(&doc);
    if (rc)
        device_table_free(out);
    return rc;
}

const device_spec *device_table_find(const device_table *t, const char *name)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->specs[i].name, name))
            return &t->specs[i];
    return NULL;
}

void device_table_free(device_table *t)
{
    free(t->specs);
    t->specs = NULL;
    t->n = 0;
}
