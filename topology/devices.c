/* devices.c: the GPU device table (datasheet peaks, HBM, SMs, architecture) read from
 * devices.yaml and the user's files over it. Every entry must give every datasheet figure: a
 * silently missing peak would cost ops at zero speed. fp8_tflops alone is optional: a GPU without
 * it has no FP8 tensor cores, and an fp8 plan on it is refused (strategy_check_devices). The
 * fitted figures (NCCL's, the GEMM efficiencies, warp_mma_fraction) are optional: absent, the
 * architecture's apply (arch_figures below), and where the architecture has none either, the
 * cost model's defaults, or a refusal (a warp-mma attention kernel without warp_mma_fraction). */
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
    KEY_ARCH,
    KEY_FP8,            /* optional: FP8 tensor cores */
    KEY_FP4,            /* optional: FP4 (NVFP4) tensor cores */
    KEY_NCCL_LAUNCH_US, /* the optional NCCL figures from here on */
    KEY_NCCL_STEP_US,
    KEY_NVLINK_EFFICIENCY,
    KEY_NVLS_EFFICIENCY,
    KEY_GEMM_EFFICIENCY,   /* optional: the tensor-core GEMM base efficiency (sim/cost/cost.c) */
    KEY_SGEMM_EFFICIENCY,  /* optional: the fp32 SIMT GEMM base efficiency (sim/cost/cost.c) */
    KEY_WARP_MMA_FRACTION, /* optional: warp-level MMA's share of the native tensor-core rate */
    KEY_L2_MIB,            /* optional: L2 cache capacity (the embedding lookup's cache rule) */
    KEY_GEMM_MODEL,        /* optional: roofline | tile (read apart: not a number) */
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
    "architecture",
    "fp8_tflops",
    "fp4_tflops",
    "nccl_launch_us",
    "nccl_step_us",
    "nvlink_efficiency",
    "nvls_efficiency",
    "gemm_efficiency",
    "sgemm_efficiency",
    "warp_mma_fraction",
    "l2_mib",
    "gemm_model",
};

static const char *const arch_name_table[ARCH_COUNT] = {
    "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna1", "cdna2", "cdna3"};
const enum_names gpu_arch_names = ENUM_NAMES(arch_name_table);

/* The fitted figures a GPU takes from its architecture when its entry gives none of its own
 * (-1 or 0: the architecture has none either). Each was fitted on one GPU of the generation and
 * is carried to the others of it (same SM, same libraries), as the entries did by hand before:
 * Volta's SGEMM efficiency on the V100-PCIE-32GB's kernels, Ampere's on the A100-PCIE-40GB's
 * (scripts/fit_kernels); Hopper's tensor-core GEMM efficiency on vidur's H100 timings
 * (scripts/fit_tensor), its warp-MMA share on h100_attention.csv (scripts/fit_attention) and
 * NCCL's figures on the 8 x H100 nccl-tests curve (scripts/fit_nccl). Warp-level MMA is the
 * native tensor-core path from Volta to Ada (1); Blackwell's has not been measured. */
typedef struct arch_fit {
    double nccl_launch_us, nccl_step_us, nvlink_eff, nvls_eff;
    double gemm_eff, sgemm_eff, warp_mma;
    const gemm_tile_params *tiles; /* the tile-and-wave GEMM model's (NULL: none fitted) */
} arch_fit;

/* Tile sets: the CUTLASS/cuBLAS sm80 tensor-core CTA tiles on Ampere; Hopper adds the sm90 tiles
 * the measured kernels name (192x192, 320x128; tests/data/measured/h200_overlap.csv). Fitted
 * (scripts/fit_tiles): Ampere on vidur's 36,516 A100-SXM4-80GB timings, Hopper on its 21,924
 * H100-SXM timings, with the 6.8 us per-kernel cost held. feed and fixed were fitted per clock
 * (27.46 and 42.76 bytes per clock per SM; 527 and 0 cycles) and are stated here against the
 * fp16 FLOPs an SM does per clock (2048 on the A100, 4096 on the H100), so that no clock figure
 * is needed: an SM's L2 feed and its fixed cycles scale with the clock as its tensor rate does.
 * docs/cost-model.md has the held-out errors. */
static const int ampere_tiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {256, 64},
                                      {64, 256},  {128, 64},  {64, 128},  {64, 64}};
static const int hopper_tiles[][2] = {{256, 128}, {128, 256}, {192, 192}, {320, 128},
                                      {128, 320}, {128, 128}, {64, 256},  {256, 64},
                                      {128, 64},  {64, 128},  {64, 64}};
static const gemm_tile_params ampere_tile_params = {
    ampere_tiles, sizeof ampere_tiles / sizeof *ampere_tiles, 0.7571, 27.46 / 2048, 0.7927,
    526.7 * 2048};
static const gemm_tile_params hopper_tile_params = {
    hopper_tiles, sizeof hopper_tiles / sizeof *hopper_tiles, 0.7349, 42.76 / 4096, 0.9132, 0.0};

static const arch_fit arch_figures[ARCH_COUNT] = {
    [ARCH_PASCAL] = {-1, -1, 0, 0, 0, 0, 0, NULL},
    [ARCH_VOLTA] = {-1, -1, 0, 0, 0, 0.90, 1, NULL},
    [ARCH_TURING] = {-1, -1, 0, 0, 0, 0, 1, NULL},
    [ARCH_AMPERE] = {-1, -1, 0, 0, 0, 0.82, 1, &ampere_tile_params},
    [ARCH_ADA] = {-1, -1, 0, 0, 0, 0, 1, NULL},
    [ARCH_HOPPER] = {22, 0, 0.795, 0.69, 0.715, 0, 0.52, &hopper_tile_params},
    [ARCH_BLACKWELL] = {-1, -1, 0, 0, 0, 0, 0, NULL},
    [ARCH_CDNA1] = {-1, -1, 0, 0, 0, 0, 0, NULL},
    [ARCH_CDNA2] = {-1, -1, 0, 0, 0, 0, 0, NULL},
    [ARCH_CDNA3] = {-1, -1, 0, 0, 0, 0, 0, NULL},
};

const gemm_tile_params *gpu_arch_tile_params(gpu_arch a)
{
    return a >= 0 && a < ARCH_COUNT ? arch_figures[a].tiles : NULL;
}

static const char *const gemm_model_table[] = {"roofline", "tile"};
const enum_names gemm_model_names = ENUM_NAMES(gemm_model_table);

/* An optional figure: the entry's (>= 0), else the architecture's. */
static double own_or_arch(double own, double arch)
{
    return own >= 0 ? own : arch;
}

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

    yread_join_path(field, sizeof field, path, "architecture");
    ynode *arch = yread_map_get(c, entry, "architecture");
    int a = 0;
    if (!arch)
        return yread_fail(c, entry, field, "device '%s' lacks architecture (one of %s)", spec->name,
                          "pascal, volta, turing, ampere, ada, hopper, blackwell, cdna1, cdna2, "
                          "cdna3");
    if (yread_enum(c, arch, field, gpu_arch_names, &a))
        return c->err->code;
    spec->arch = (gpu_arch)a;
    const arch_fit *af = &arch_figures[a];
    ynode *gm = yread_map_get(c, entry, "gemm_model");
    yread_join_path(field, sizeof field, path, "gemm_model");
    if (gm && yread_enum(c, gm, field, gemm_model_names, &spec->gemm_tiles))
        return c->err->code;
    if (spec->gemm_tiles && !af->tiles)
        return yread_fail(c, gm, field,
                          "device '%s': the tile GEMM model has no fitted parameters for %s "
                          "(only ampere and hopper)",
                          spec->name, arch_name_table[a]);

    double value[N_KEYS] = {0};
    for (int i = 0; i < N_KEYS; i++) {
        if (i == KEY_NAME || i == KEY_ARCH || i == KEY_GEMM_MODEL)
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
        if (!v && i != KEY_HBM_GIB && i != KEY_HBM_GB && i != KEY_FP8 && i != KEY_FP4)
            return yread_fail(c, entry, field, "device '%s' lacks %s", spec->name, device_keys[i]);
    }
    int gib = yread_map_get(c, entry, "hbm_gib") != NULL;
    if (gib == (yread_map_get(c, entry, "hbm_gb") != NULL)) {
        yread_join_path(field, sizeof field, path, "hbm_gib");
        return yread_fail(c, entry, field, "device '%s' needs exactly one of hbm_gib and hbm_gb",
                          spec->name);
    }
    /* Upper bounds far above any GPU (100 PFLOP/s, 100 TB/s, 100 TB, 100,000 SMs, 100 GiB of
     * L2, a 10 s NCCL launch): a figure past them is a typo or a unit mistake, and would overflow
     * the cost model's arithmetic. */
    static const struct {
        int key;
        double max;
    } bounds[] = {{KEY_FP32, 1e5},        {KEY_TF32, 1e5},    {KEY_FP16, 1e5},
                  {KEY_BF16, 1e5},        {KEY_FP8, 1e5},     {KEY_FP4, 1e5},
                  {KEY_HBM_GBPS, 1e5},    {KEY_HBM_GIB, 1e5}, {KEY_HBM_GB, 1e5},
                  {KEY_SMS, 1e5},         {KEY_L2_MIB, 1e5},  {KEY_NCCL_LAUNCH_US, 1e7},
                  {KEY_NCCL_STEP_US, 1e7}};
    for (size_t b = 0; b < sizeof bounds / sizeof *bounds; b++)
        if (value[bounds[b].key] > bounds[b].max) {
            yread_join_path(field, sizeof field, path, device_keys[bounds[b].key]);
            return yread_fail(c, yread_map_get(c, entry, device_keys[bounds[b].key]), field,
                              "device '%s': %s %g is beyond any GPU (at most %g)", spec->name,
                              device_keys[bounds[b].key], value[bounds[b].key], bounds[b].max);
        }
    if (value[KEY_SMS] != floor(value[KEY_SMS])) {
        yread_join_path(field, sizeof field, path, "sms");
        return yread_fail(c, yread_map_get(c, entry, "sms"), field,
                          "device '%s': sms must be an integer", spec->name);
    }

    /* 0 turns off what the architecture would give: NVLS (a Hopper card without NVSwitch) and
     * warp-level MMA; the other fractions are rates a GPU has */
    for (int i = KEY_NVLINK_EFFICIENCY; i <= KEY_WARP_MMA_FRACTION; i++)
        if (value[i] > 1.0 ||
            (value[i] == 0.0 && i != KEY_NVLS_EFFICIENCY && i != KEY_WARP_MMA_FRACTION)) {
            yread_join_path(field, sizeof field, path, device_keys[i]);
            return yread_fail(c, yread_map_get(c, entry, device_keys[i]), field,
                              "device '%s': %s is a fraction in (0, 1], not %g", spec->name,
                              device_keys[i], value[i]);
        }
    double launch_us = own_or_arch(value[KEY_NCCL_LAUNCH_US], af->nccl_launch_us);
    double step_us = own_or_arch(value[KEY_NCCL_STEP_US], af->nccl_step_us);
    spec->coll_launch_s = launch_us < 0 ? -1.0 : launch_us * 1e-6;
    spec->coll_step_s = step_us < 0 ? -1.0 : step_us * 1e-6;
    spec->coll_efficiency = own_or_arch(value[KEY_NVLINK_EFFICIENCY], af->nvlink_eff);
    spec->nvls_efficiency = own_or_arch(value[KEY_NVLS_EFFICIENCY], af->nvls_eff);
    spec->gemm_efficiency = own_or_arch(value[KEY_GEMM_EFFICIENCY], af->gemm_eff);
    spec->sgemm_efficiency = own_or_arch(value[KEY_SGEMM_EFFICIENCY], af->sgemm_eff);
    spec->warp_mma_fraction = own_or_arch(value[KEY_WARP_MMA_FRACTION], af->warp_mma);
    for (int i = KEY_FP32; i <= KEY_BF16; i++)
        spec->peak_flops[key_precision[i]] = value[i] * 1e12;
    spec->peak_flops[PREC_FP8] = value[KEY_FP8] * 1e12; /* 0 when absent */
    spec->peak_flops[PREC_FP4] = value[KEY_FP4] * 1e12; /* 0 when absent */
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

/* The longest file name a device table may come from. */
enum { DEVICE_PATH_MAX = 1024 };

/* An entry of a user's file: replaces the table's entry of its name, or is added after them. */
static void table_put(device_table *t, const device_spec *spec)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->specs[i].name, spec->name)) {
            t->specs[i] = *spec;
            return;
        }
    t->specs = xreallocarray(t->specs, (size_t)t->n + 1, sizeof *t->specs);
    t->specs[t->n++] = *spec;
}

/* The next file of a PROTOSIM_DEVICES list from *p on (empty pieces skipped, as in PATH), into
 * out; 0 at the end of the list, -1 for a path longer than out. */
static int next_user_file(const char **p, char *out, size_t size)
{
    while (**p == ':')
        (*p)++;
    if (!**p)
        return 0;
    size_t len = strcspn(*p, ":");
    if (len >= size)
        return -1;
    memcpy(out, *p, len);
    out[len] = 0;
    *p += len;
    return 1;
}

int device_table_load_all(const char *data_dir, device_table *out, ps_error *err)
{
    char path[DEVICE_PATH_MAX];
    snprintf(path, sizeof path, "%s/topology/devices/devices.yaml",
             data_dir && *data_dir ? data_dir : ps_data_dir());
    int rc = device_table_load(path, out, err);
    const char *list = getenv("PROTOSIM_DEVICES");
    for (const char *p = list ? list : ""; !rc;) {
        int more = next_user_file(&p, path, sizeof path);
        if (more < 0)
            rc = ps_error_set(err, PS_EINPUT, "PROTOSIM_DEVICES", 0, 0, "",
                              "a file name longer than %d characters", DEVICE_PATH_MAX - 1);
        if (more <= 0)
            break;
        device_table user;
        rc = device_table_load(path, &user, err);
        for (int i = 0; !rc && i < user.n; i++)
            table_put(out, &user.specs[i]);
        if (!rc)
            device_table_free(&user);
    }
    if (rc)
        device_table_free(out);
    return rc;
}

void device_table_sources(char *buf, size_t size)
{
    const char *list = getenv("PROTOSIM_DEVICES");
    size_t len = (size_t)snprintf(buf, size, "topology/devices/devices.yaml");
    char path[DEVICE_PATH_MAX];
    for (const char *p = list ? list : ""; len < size;) {
        if (next_user_file(&p, path, sizeof path) <= 0)
            break;
        len += (size_t)snprintf(buf + len, size - len, ", %s", path);
    }
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
