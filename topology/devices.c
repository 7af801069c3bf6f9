/* devices.c: the GPU device table (datasheet peaks, HBM, SMs) read from devices.yaml.
 * Every entry must give every figure: a silently missing peak would cost ops at zero speed.
 * fp8_tflops alone is optional: a GPU without it has no FP8 tensor cores, and an fp8 plan on it
 * is refused (strategy_check_devices); so is warp_mma_fraction, without which a warp-mma
 * attention kernel on the GPU is refused. */
#include "cluster.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "../sim/base/yaml_read.h"

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
    KEY_FP8,            /* optional: FP8 tensor cores */
    KEY_NCCL_LAUNCH_US, /* the optional NCCL figures from here on */
    KEY_NCCL_STEP_US,
    KEY_NVLINK_EFFICIENCY,
    KEY_NVLS_EFFICIENCY,
    KEY_GEMM_EFFICIENCY,   /* optional: the tensor-core GEMM base efficiency (sim/cost/cost.c) */
    KEY_SGEMM_EFFICIENCY,  /* optional: the fp32 SIMT GEMM base efficiency (sim/cost/cost.c) */
    KEY_WARP_MMA_FRACTION, /* optional: warp-level MMA's share of the native tensor-core rate */
    KEY_L2_MIB,            /* optional: L2 cache capacity (the embedding lookup's cache rule) */
    N_KEYS
};

static const char *const device_keys[N_KEYS] = {
    "fp32_tflops",
    "tf32_tflops",
    "fp16_tflops",
    "bf16_tflops",
    "hbm_gbps",
    "hbm_gib",
    "hbm_gb",
    "sms",
    "name",
    "fp8_tflops",
    "nccl_launch_us",
    "nccl_step_us",
    "nvlink_efficiency",
    "nvls_efficiency",
    "gemm_efficiency",
    "sgemm_efficiency",
    "warp_mma_fraction",
    "l2_mib",
};

/* The peak_flops slot of each *_tflops key (precision_t order). */
static const int key_precision[4] = {PREC_FP32, PREC_TF32, PREC_FP16, PREC_BF16};

/* One device entry: every figure present and a positive number (the optional NCCL figures:
 * numbers >= 0, efficiencies in (0, 1]). */
static int parse_entry(yread_ctx *c, ynode *entry, const char *path, device_spec *spec)
{
    memset(spec, 0, sizeof *spec);
    if (!yread_is_mapping(entry))
        return yread_fail(c, entry, path, "a device entry must be a mapping of name and figures");
    if (yread_check_keys(c, entry, path, device_keys, N_KEYS))
        return c->err->code;

    char field[96];
    yread_join_path(field, sizeof field, path, "name");
    ynode *name = yread_map_get(c, entry, "name");
    const char *s = name ? yread_scalar(name) : NULL;
    if (!name)
        return yread_fail(c, entry, field, "device entry without a name");
    if (!s || !s[0] || strlen(s) >= sizeof spec->name)
        return yread_fail(c, name, field, "name must be a string of 1 to 47 characters");
    snprintf(spec->name, sizeof spec->name, "%s", s);

    double value[N_KEYS] = {0};
    for (int i = 0; i < N_KEYS; i++) {
        if (i == KEY_NAME)
            continue;
        yread_join_path(field, sizeof field, path, device_keys[i]);
        ynode *v = yread_map_get(c, entry, device_keys[i]);
        if (i >= KEY_NCCL_LAUNCH_US) { /* optional, may be 0; absent: -1 */
            value[i] = -1.0;
            if (v && yread_nonnegative(c, v, field, &value[i]))
                return c->err->code;
            continue;
        }
        if (v && yread_positive(c, v, field, &value[i]))
            return c->err->code;
        if (!v && i != KEY_HBM_GIB && i != KEY_HBM_GB && i != KEY_FP8)
            return yread_fail(c, entry, field, "device '%s' lacks %s", spec->name, device_keys[i]);
    }
    int gib = yread_map_get(c, entry, "hbm_gib") != NULL;
    if (gib == (yread_map_get(c, entry, "hbm_gb") != NULL)) {
        yread_join_path(field, sizeof field, path, "hbm_gib");
        return yread_fail(c, entry, field, "device '%s' needs exactly one of hbm_gib and hbm_gb",
                          spec->name);
    }
    if (value[KEY_SMS] != floor(value[KEY_SMS])) {
        yread_join_path(field, sizeof field, path, "sms");
        return yread_fail(c, yread_map_get(c, entry, "sms"), field,
                          "device '%s': sms must be an integer", spec->name);
    }

    for (int i = KEY_NVLINK_EFFICIENCY; i <= KEY_WARP_MMA_FRACTION; i++)
        if (value[i] > 1.0 || value[i] == 0.0) {
            yread_join_path(field, sizeof field, path, device_keys[i]);
            return yread_fail(c, yread_map_get(c, entry, device_keys[i]), field,
                              "device '%s': %s is a fraction in (0, 1], not %g", spec->name,
                              device_keys[i], value[i]);
        }
    spec->coll_launch_s = value[KEY_NCCL_LAUNCH_US] < 0 ? -1.0 : value[KEY_NCCL_LAUNCH_US] * 1e-6;
    spec->coll_step_s = value[KEY_NCCL_STEP_US] < 0 ? -1.0 : value[KEY_NCCL_STEP_US] * 1e-6;
    spec->coll_efficiency = value[KEY_NVLINK_EFFICIENCY];
    spec->nvls_efficiency = value[KEY_NVLS_EFFICIENCY];
    spec->gemm_efficiency = value[KEY_GEMM_EFFICIENCY] < 0 ? 0.0 : value[KEY_GEMM_EFFICIENCY];
    spec->sgemm_efficiency = value[KEY_SGEMM_EFFICIENCY] < 0 ? 0.0 : value[KEY_SGEMM_EFFICIENCY];
    spec->warp_mma_fraction = value[KEY_WARP_MMA_FRACTION] < 0 ? 0.0 : value[KEY_WARP_MMA_FRACTION];
    for (int i = KEY_FP32; i <= KEY_BF16; i++)
        spec->peak_flops[key_precision[i]] = value[i] * 1e12;
    spec->peak_flops[PREC_FP8] = value[KEY_FP8] * 1e12; /* 0 when absent */
    spec->hbm_bw = value[KEY_HBM_GBPS] * 1e9;
    spec->hbm_bytes = gib ? value[KEY_HBM_GIB] * 1073741824.0 : value[KEY_HBM_GB] * 1e9;
    spec->sms = (int)value[KEY_SMS];
    spec->l2_bytes = value[KEY_L2_MIB] < 0 ? 0.0 : value[KEY_L2_MIB] * 1048576.0;
    return 0;
}

int device_table_load(const char *path, device_table *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    ydoc *doc;
    if (yread_load_file(path, "device table", &doc, err))
        return err->code;

    yread_ctx c = {doc, path, err};
    int rc = 0;
    ynode *root = yread_root(doc);
    if (!root || !yread_is_list(root)) {
        rc = ps_error_set(err, PS_EINPUT, path, root ? yread_loc(root).line : 1,
                          root ? yread_loc(root).column : 1, "",
                          "the device table must be a list of devices");
        goto done;
    }

    int n = yread_list_len(root);
    out->specs = xcalloc(n ? (size_t)n : 1, sizeof *out->specs);
    for (int i = 0; i < n; i++) {
        ynode *entry = yread_list_item(&c, root, i);
        /* fields are named by their key alone: each device is a list item, found by its line */
        rc = parse_entry(&c, entry, "", &out->specs[i]);
        if (rc)
            goto done;
        if (device_table_find(out, out->specs[i].name)) {
            rc =
                yread_fail(&c, yread_map_get(&c, entry, "name"), "name", "device name given twice");
            goto done;
        }
        out->n = i + 1;
    }

done:
    yread_doc_free(doc);
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
