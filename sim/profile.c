/* profile.c: the profile database: its JSON file (cJSON), the CUDA device-name map, and the
 * matching of op-graph ops to measured PyTorch ops (docs/design-notes.md "Profile database"). */
#include "profile.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/xalloc.h"

#define PROFILE_FORMAT 1

/* ---------------------------------------------------------------- the table */

void profile_db_add(profile_db *db, const char *op, const char *dtype, int n_inputs,
                    const int *ndim, const double *dims, double seconds, int count)
{
    assert(n_inputs >= 0 && seconds >= 0 && count >= 1);
    xgrow(&db->e, sizeof *db->e, (size_t)db->n + 1, &db->cap);
    profile_entry *e = &db->e[db->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->op, sizeof e->op, "%s", op);
    snprintf(e->dtype, sizeof e->dtype, "%s", dtype);
    e->n_inputs = n_inputs;
    e->ndim = xmalloc(((size_t)n_inputs + 1) * sizeof *e->ndim);
    e->first = xmalloc(((size_t)n_inputs + 1) * sizeof *e->first);
    int total = 0;
    for (int i = 0; i < n_inputs; i++) {
        e->ndim[i] = ndim[i];
        e->first[i] = total;
        total += ndim[i] > 0 ? ndim[i] : 0;
    }
    e->dims = xmalloc(((size_t)total + 1) * sizeof *e->dims);
    if (total > 0)
        memcpy(e->dims, dims, (size_t)total * sizeof *dims);
    e->seconds = seconds;
    e->count = count;
}

void profile_db_free(profile_db *db)
{
    for (int i = 0; i < db->n; i++) {
        free(db->e[i].ndim);
        free(db->e[i].first);
        free(db->e[i].dims);
    }
    free(db->e);
    memset(db, 0, sizeof *db);
}

/* ---------------------------------------------------------------- reading and writing */

static int bad(ps_error *err, const char *path, const char *field, const char *msg)
{
    return ps_error_set(err, PS_EINPUT, path, 0, 0, field, "%s", msg);
}

static int only_keys(const cJSON *obj, const char *const *keys, const char *path, const char *where,
                     ps_error *err)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        int known = 0;
        for (int k = 0; keys[k] && !known; k++)
            known = strcmp(it->string, keys[k]) == 0;
        if (!known) {
            char f[160];
            snprintf(f, sizeof f, "%s%s%s", where, *where ? "." : "", it->string);
            return bad(err, path, f, "unknown key");
        }
    }
    return 0;
}

/* entries[i].shapes: an array of inputs, each an array of non-negative integer dimensions (or
 * of arrays: a tensor list, kept as "not a shape"). */
static int read_shapes(const cJSON *shapes, const char *path, const char *where, int **ndim,
                       double **dims, int *n_inputs, ps_error *err)
{
    char f[160];
    snprintf(f, sizeof f, "%s.shapes", where);
    if (!cJSON_IsArray(shapes))
        return bad(err, path, f, "missing, or not an array of input shapes");
    int n = cJSON_GetArraySize(shapes), total = 0, i = 0;
    *ndim = xmalloc(((size_t)n + 1) * sizeof **ndim);
    size_t cap = 16;
    *dims = xmalloc(cap * sizeof **dims);
    const cJSON *in;
    cJSON_ArrayForEach(in, shapes)
    {
        snprintf(f, sizeof f, "%s.shapes[%d]", where, i);
        if (!cJSON_IsArray(in))
            return bad(err, path, f, "not an array of dimensions");
        int nd = 0, list = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, in)
        {
            if (cJSON_IsArray(d)) {
                list = 1;
                continue;
            }
            if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble != floor(d->valuedouble))
                return bad(err, path, f, "a dimension is not a non-negative integer");
            xgrow(dims, sizeof **dims, (size_t)total + 1, &cap);
            (*dims)[total++] = d->valuedouble;
            nd++;
        }
        if (list) { /* a tensor list: its dimensions are not kept */
            total -= nd;
            nd = -1;
        }
        (*ndim)[i++] = nd;
    }
    *n_inputs = n;
    return 0;
}

static int read_entry(const cJSON *it, int idx, const char *path, profile_db *db, ps_error *err)
{
    static const char *const keys[] = {"op", "shapes", "dtype", "seconds", "count", NULL};
    char where[48], f[160];
    snprintf(where, sizeof where, "entries[%d]", idx);
    if (!cJSON_IsObject(it))
        return bad(err, path, where, "not an object");
    if (only_keys(it, keys, path, where, err))
        return err->code;
    const cJSON *op = cJSON_GetObjectItemCaseSensitive(it, "op");
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(it, "dtype");
    const cJSON *sec = cJSON_GetObjectItemCaseSensitive(it, "seconds");
    const cJSON *count = cJSON_GetObjectItemCaseSensitive(it, "count");
    snprintf(f, sizeof f, "%s.op", where);
    if (!cJSON_IsString(op) || !op->valuestring[0] || strlen(op->valuestring) >= sizeof db->e->op)
        return bad(err, path, f, "missing, or not an op name");
    snprintf(f, sizeof f, "%s.dtype", where);
    if (!cJSON_IsString(dtype) || strlen(dtype->valuestring) >= sizeof db->e->dtype)
        return bad(err, path, f, "missing, or not a dtype name");
    snprintf(f, sizeof f, "%s.seconds", where);
    if (!cJSON_IsNumber(sec))
        return bad(err, path, f, "missing, or not a number");
    if (!(sec->valuedouble >= 0) || !isfinite(sec->valuedouble))
        return ps_error_set(err, PS_EINPUT, path, 0, 0, f,
                            "a measured time must be finite and >= 0 (got %g)", sec->valuedouble);
    snprintf(f, sizeof f, "%s.count", where);
    if (!cJSON_IsNumber(count) || count->valuedouble < 1 ||
        count->valuedouble != floor(count->valuedouble) || count->valuedouble > 1e9)
        return bad(err, path, f, "missing, or not a count >= 1");
    int *ndim = NULL, n = 0;
    double *dims = NULL;
    int rc = read_shapes(cJSON_GetObjectItemCaseSensitive(it, "shapes"), path, where, &ndim, &dims,
                         &n, err);
    if (!rc)
        profile_db_add(db, op->valuestring, dtype->valuestring, n, ndim, dims, sec->valuedouble,
                       (int)count->valuedouble);
    free(ndim);
    free(dims);
    return rc;
}

static char *read_text(const char *path, ps_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot open the profile table");
        return NULL;
    }
    size_t cap = 1 << 16, n = 0, got;
    char *buf = xmalloc(cap);
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n < 2) {
            cap *= 2;
            buf = xreallocarray(buf, cap, 1);
        }
    }
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Line and column of byte `at` of text, 1-based. */
static void locate(const char *text, const char *at, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (const char *p = text; p < at && *p; p++) {
        if (*p == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int profile_db_load(const char *path, profile_db *out, ps_error *err)
{
    static const char *const keys[] = {"protosim_profile", "device", "sources", "entries", NULL};
    memset(out, 0, sizeof *out);
    char *text = read_text(path, err);
    if (!text)
        return err->code;
    cJSON *root = cJSON_Parse(text);
    if (!root) {
        int line = 0, col = 0;
        const char *at = cJSON_GetErrorPtr();
        if (at)
            locate(text, at, &line, &col);
        free(text);
        return ps_error_set(err, PS_EINPUT, path, line, col, NULL, "not JSON: a syntax error");
    }
    free(text);
    snprintf(out->file, sizeof out->file, "%s", path);
    int rc = 0;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "protosim_profile");
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *entries = cJSON_GetObjectItemCaseSensitive(root, "entries");
    if (!cJSON_IsObject(root))
        rc = bad(err, path, NULL, "not a profile table: not a JSON object");
    else if (only_keys(root, keys, path, "", err))
        rc = err->code;
    else if (!cJSON_IsNumber(fmt) || fmt->valuedouble != PROFILE_FORMAT)
        rc = bad(err, path, "protosim_profile", "missing, or not 1 (the format's version)");
    else if (!cJSON_IsString(dev) || !dev->valuestring[0] ||
             strlen(dev->valuestring) >= sizeof out->device)
        rc = bad(err, path, "device", "missing, or not a GPU name");
    else if (!cJSON_IsArray(entries))
        rc = bad(err, path, "entries", "missing, or not an array");
    if (!rc) {
        snprintf(out->device, sizeof out->device, "%s", dev->valuestring);
        int i = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, entries)
        {
            if ((rc = read_entry(it, i++, path, out, err)))
                break;
        }
    }
    cJSON_Delete(root);
    if (rc) {
        profile_db_free(out);
        return rc;
    }
    return 0;
}

int profile_db_write(const char *path, const profile_db *db, ps_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "protosim_profile", PROFILE_FORMAT);
    cJSON_AddStringToObject(root, "device", db->device);
    cJSON *entries = cJSON_AddArrayToObject(root, "entries");
    for (int i = 0; i < db->n; i++) {
        const profile_entry *e = &db->e[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "op", e->op);
        cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
        for (int k = 0; k < e->n_inputs; k++) {
            cJSON *in = cJSON_CreateArray();
            if (e->ndim[k] < 0) /* a tensor list: its shapes are not kept */
                cJSON_AddItemToArray(in, cJSON_CreateArray());
            for (int d = 0; d < e->ndim[k]; d++)
                cJSON_AddItemToArray(in, cJSON_CreateNumber(e->dims[e->first[k] + d]));
            cJSON_AddItemToArray(shapes, in);
        }
        cJSON_AddStringToObject(o, "dtype", e->dtype);
        cJSON_AddNumberToObject(o, "seconds", e->seconds);
        cJSON_AddNumberToObject(o, "count", e->count);
        cJSON_AddItemToArray(entries, o);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    if (!ok)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write the profile table");
    return 0;
}

/* ---------------------------------------------------------------- names */

int profile_device_of_cuda_name(const char *cuda_name, char *out, size_t cap)
{
    /* CUDA's names (cudaGetDeviceProperties, as Kineto's deviceProperties and nvidia-smi show
     * them) that differ from devices.yaml's beyond the "NVIDIA " / "Tesla " prefix */
    static const char *const alias[][2] = {
        {"A100-PG509-200", "A100-SXM4-40GB"}, /* the SXM4 40 GB board's part number (108 SMs) */
        {"A100 80GB PCIe", "A100-PCIE-80GB"}, {"H100 80GB HBM3", "H100-SXM5-80GB"},
        {"H100", "H100-SXM5-80GB"},           {"H200", "H200-SXM-141GB"},
        {"B200", "B200-SXM-180GB"},
    };
    static const char *const direct[] = {"P100-SXM2-16GB",
                                         "P100-PCIE-16GB",
                                         "V100-SXM2-32GB",
                                         "V100-SXM2-16GB",
                                         "V100-SXM3-32GB",
                                         "V100-PCIE-32GB",
                                         "T4",
                                         "A100-SXM4-40GB",
                                         "A100-SXM4-80GB",
                                         "A100-PCIE-40GB",
                                         "L4",
                                         "P4"};
    const char *s = cuda_name;
    if (!strncmp(s, "NVIDIA ", 7))
        s += 7;
    else if (!strncmp(s, "Tesla ", 6))
        s += 6;
    for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
        if (!strcmp(s, alias[i][0])) {
            snprintf(out, cap, "%s", alias[i][1]);
            return 0;
        }
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (!strcmp(s, direct[i])) {
            snprintf(out, cap, "%s", direct[i]);
            return 0;
        }
    return -1;
}

const char *profile_dtype_of_torch_type(const char *type)
{
    static const char *const map[][2] = {{"float", "fp32"},
                                         {"c10::Half", "fp16"},
                                         {"c10::BFloat16", "bf16"},
                                         {"c10::Float8_e4m3fn", "fp8"},
                                         {"c10::Float8_e5m2", "fp8"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(type, map[i][0]))
            return map[i][1];
    return NULL;
}

/* ---------------------------------------------------------------- matching */

/* Input i's dimensions (*d) and count, -1 when absent or not a shape. */
static int in_dims(const profile_entry *e, int i, const double **d)
{
    if (i >= e->n_inputs || e->ndim[i] < 0)
        return -1;
    *d = e->dims + e->first[i];
    return e->ndim[i];
}

/* Product of the first n of d. */
static double prod(const double *d, int n)
{
    double p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

typedef struct gemm_shape {
    double m, n, k;
} gemm_shape;

/* The GEMM an entry computes, [m x k] . [k x n], and its rank in the preference order of the
 * bias it has (biased: addmm 1, linear with a bias 2; unbiased: mm 1, linear without a bias 2,
 * 2-D matmul 3); 0 when the entry is not one such GEMM. */
static int entry_gemm(const profile_entry *e, int biased, gemm_shape *g)
{
    const double *a = NULL, *b = NULL, *c = NULL;
    int na, nb, nc;
    if (!strcmp(e->op, "aten::addmm")) {
        if (!biased || in_dims(e, 0, &c) < 1 || in_dims(e, 1, &a) != 2 || in_dims(e, 2, &b) != 2)
            return 0;
        nc = e->ndim[0];
        /* a bias row broadcast over the rows: [n] or [1, n] */
        if (!(nc == 1 || (nc == 2 && c[0] == 1)) || c[nc - 1] != b[1] || a[1] != b[0])
            return 0;
        *g = (gemm_shape){a[0], b[1], a[1]};
        return 1;
    }
    if (!strcmp(e->op, "aten::mm")) {
        if (biased || in_dims(e, 0, &a) != 2 || in_dims(e, 1, &b) != 2 || a[1] != b[0])
            return 0;
        *g = (gemm_shape){a[0], b[1], a[1]};
        return 1;
    }
    if (!strcmp(e->op, "aten::linear")) {
        /* input [..., k], weight [n, k], bias [n] or absent ([] when recorded as None) */
        na = in_dims(e, 0, &a);
        nb = in_dims(e, 1, &b);
        nc = in_dims(e, 2, &c);
        int has_bias = nc == 1;
        if (na < 2 || nb != 2 || a[na - 1] != b[1] || has_bias != biased ||
            (has_bias && c[0] != b[0]) || (!has_bias && nc > 0))
            return 0;
        *g = (gemm_shape){prod(a, na - 1), b[0], b[1]};
        return 2;
    }
    if (!strcmp(e->op, "aten::matmul")) {
        if (biased || e->n_inputs != 2 || in_dims(e, 0, &a) != 2 || in_dims(e, 1, &b) != 2 ||
            a[1] != b[0])
            return 0;
        *g = (gemm_shape){a[0], b[1], a[1]};
        return 3;
    }
    return 0;
}

/* The dtype a plan's precision runs its ops in, as the trace names tensors (a tf32 plan's
 * tensors are fp32: the math mode is not in the trace); NULL for fp8 (not matched). */
static const char *dtype_of(precision_t prec)
{
    switch (prec) {
    case PREC_FP32:
    case PREC_TF32: return "fp32";
    case PREC_FP16: return "fp16";
    case PREC_BF16: return "bf16";
    default: return NULL;
    }
}

/* The best entry for a GEMM [m x k] . [k x n]: of the most preferred op that has one, the
 * entry with the most occurrences (the first in the table on a tie). */
static const profile_entry *find_gemm(const profile_db *db, const char *dtype, int biased, double m,
                                      double n, double k)
{
    const profile_entry *best = NULL;
    int best_rank = 0;
    for (int i = 0; i < db->n; i++) {
        const profile_entry *e = &db->e[i];
        gemm_shape g;
        int r = strcmp(e->dtype, dtype) ? 0 : entry_gemm(e, biased, &g);
        if (!r || g.m != m || g.n != n || g.k != k)
            continue;
        if (!best || r < best_rank || (r == best_rank && e->count > best->count)) {
            best = e;
            best_rank = r;
        }
    }
    return best;
}

/* Whether the entry's op is one of names[] (NULL-terminated). */
static int op_in(const profile_entry *e, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (!strcmp(e->op, names[i]))
            return 1;
    return 0;
}

/* Most occurrences among the entries accepted by ok(e, op) (first on a tie). */
static const profile_entry *find_best(const profile_db *db, const char *dtype,
                                      int (*ok)(const profile_entry *, const workload_op *, int),
                                      const workload_op *op, int pass)
{
    const profile_entry *best = NULL;
    for (int i = 0; i < db->n; i++) {
        const profile_entry *e = &db->e[i];
        if (!strcmp(e->dtype, dtype) && ok(e, op, pass) && (!best || e->count > best->count))
            best = e;
    }
    return best;
}

/* Fused attention: query, key and value [B, H, S, D] alike (inputs 0-2 forward, 1-3 after the
 * output gradient backward), B x H = the op's batch, S its sequence, D its head size. */
static int attention_ok(const profile_entry *e, const workload_op *op, int pass)
{
    static const char *const fwd[] = {"aten::_scaled_dot_product_flash_attention",
                                      "aten::_scaled_dot_product_efficient_attention",
                                      "aten::_scaled_dot_product_cudnn_attention", NULL};
    static const char *const bwd[] = {"aten::_scaled_dot_product_flash_attention_backward",
                                      "aten::_scaled_dot_product_efficient_attention_backward",
                                      "aten::_scaled_dot_product_cudnn_attention_backward", NULL};
    if (!op_in(e, pass == PASS_FWD ? fwd : bwd))
        return 0;
    int at = pass == PASS_FWD ? 0 : 1;
    const double *q, *x;
    if (in_dims(e, at, &q) != 4)
        return 0;
    for (int i = 1; i < 3; i++)
        if (in_dims(e, at + i, &x) != 4 || memcmp(q, x, 4 * sizeof *q) != 0)
            return 0;
    return q[0] * q[1] == op->batch && q[2] == op->m && q[3] == op->k;
}

/* LayerNorm over the last dimension: input [..., H] (the gradient's and input's forward, the
 * first two backward), rows = the leading dimensions' product. */
static int layernorm_ok(const profile_entry *e, const workload_op *op, int pass)
{
    const double *x, *y;
    int n = in_dims(e, 0, &x);
    if (pass == PASS_FWD) {
        if (strcmp(e->op, "aten::native_layer_norm") || n < 2)
            return 0;
    } else if (strcmp(e->op, "aten::native_layer_norm_backward") || n < 2 ||
               in_dims(e, 1, &y) != n || memcmp(x, y, (size_t)n * sizeof *x) != 0) {
        return 0;
    }
    return prod(x, n - 1) == op->m && x[n - 1] == op->n;
}

int profile_match_op(const profile_db *db, const workload_model *model, const workload_op *full,
                     const workload_op *op, op_pass pass, precision_t prec, const device_spec *dev,
                     double model_seconds, profile_hit *hit)
{
    memset(hit, 0, sizeof *hit);
    hit->parts = op->kind == OP_GEMM && pass == PASS_BWD ? 2 : 1;
    hit->seconds = model_seconds;
    const char *dtype = dtype_of(prec);
    if (!db || !dtype || strcmp(db->device, dev->name) != 0 || op->expert)
        return 0;
    if (op->kind == OP_GEMM) {
        if (op->batch != 1 || op->kernels != 1 || !(op->m > 0 && op->n > 0 && op->k > 0))
            return 0;
        double m = op->m, n = op->n, k = op->k;
        int biased = full->params > full->k * full->n;
        if (pass == PASS_FWD) {
            hit->entry[0] = find_gemm(db, dtype, biased, m, n, k);
        } else {
            /* dX = dY . W^T: [m x n] . [n x k]; dW = X^T . dY: [k x m] . [m x n] */
            hit->entry[0] = find_gemm(db, dtype, 0, m, k, n);
            hit->entry[1] = find_gemm(db, dtype, 0, k, n, m);
        }
    } else if (op->kind == OP_ATTENTION) {
        if (!op->fused || op->window > 0 || model->kv_heads != model->heads)
            return 0;
        hit->entry[0] = find_best(db, dtype, attention_ok, op, pass);
    } else if (op->kind == OP_LAYERNORM) {
        if (model->family == FAMILY_LLAMA) /* RMSNorm */
            return 0;
        hit->entry[0] = find_best(db, dtype, layernorm_ok, op, pass);
    }
    for (int i = 0; i < hit->parts; i++)
        hit->matched += hit->entry[i] != NULL;
    if (hit->matched == hit->parts) {
        hit->seconds = 0;
        for (int i = 0; i < hit->parts; i++)
            hit->seconds += hit->entry[i]->seconds;
    } else if (hit->matched) {
        /* one GEMM of the backward measured; the other is the model's one kernel with its GPU
         * overhead (each backward GEMM is one of the pass's two kernels) */
        int measured = hit->entry[0] ? 0 : 1;
        double m = op->m, n = op->n, k = op->k;
        double other = measured == 0 ? cost_gemm_kernel_seconds(1, k, n, m, prec, dev)
                                     : cost_gemm_kernel_seconds(1, m, k, n, prec, dev);
        hit->seconds = hit->entry[measured]->seconds + other + cost_kernel_gpu_overhead_seconds();
    }
    return hit->matched;
}

/* ---------------------------------------------------------------- the record */

profile_stats *profile_stats_create(const profile_db *db, const cluster *c)
{
    profile_stats *st = xcalloc(1, sizeof *st);
    snprintf(st->file, sizeof st->file, "%s", db->file);
    snprintf(st->device, sizeof st->device, "%s", db->device);
    for (int r = 0; r < c->n_gpus && !st->device_in_cluster; r++)
        st->device_in_cluster = strcmp(c->device[r]->name, db->device) == 0;
    return st;
}

void profile_stats_add(profile_stats *st, const workload_op *op, op_pass pass, int replay,
                       const profile_hit *hit, double model)
{
    xgrow(&st->use, sizeof *st->use, (size_t)st->n + 1, &st->cap);
    profile_use *u = &st->use[st->n++];
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%s", op->name);
    u->pass = pass;
    u->replay = replay;
    u->parts = hit->parts;
    u->matched = hit->matched;
    for (int i = 0; i < hit->parts && !u->entry_op[0]; i++)
        if (hit->entry[i])
            snprintf(u->entry_op, sizeof u->entry_op, "%s", hit->entry[i]->op);
    u->model = model;
    u->used = hit->seconds;
    for (int i = 0; i < hit->parts; i++)
        if (hit->entry[i])
            u->measured += hit->entry[i]->seconds;
}

void profile_stats_free(profile_stats *st)
{
    free(st->use);
    memset(st, 0, sizeof *st);
}

/* "layers.3.mlp.fc1" -> "layers.*.mlp.fc1"; other names as they are. */
static void group_name(const char *name, char *out, size_t cap)
{
    const char *p = name + 7;
    if (strncmp(name, "layers.", 7) != 0 || !(*p >= '0' && *p <= '9')) {
        snprintf(out, cap, "%s", name);
        return;
    }
    while (*p >= '0' && *p <= '9')
        p++;
    snprintf(out, cap, "layers.*%s", p);
}

void profile_summarize(const profile_stats *st, profile_summary *out)
{
    memset(out, 0, sizeof *out);
    size_t cap = 0;
    for (int i = 0; i < st->n; i++) {
        const profile_use *u = &st->use[i];
        char name[48];
        group_name(u->name, name, sizeof name);
        int k = 0;
        while (k < out->n && !(out->g[k].pass == u->pass && out->g[k].replay == u->replay &&
                               !strcmp(out->g[k].name, name)))
            k++;
        if (k == out->n) {
            xgrow(&out->g, sizeof *out->g, (size_t)out->n + 1, &cap);
            memset(&out->g[k], 0, sizeof out->g[k]);
            snprintf(out->g[k].name, sizeof out->g[k].name, "%s", name);
            out->g[k].pass = u->pass;
            out->g[k].replay = u->replay;
            out->n++;
        }
        profile_group *g = &out->g[k];
        g->ops++;
        g->matched += u->matched > 0;
        if (!g->entry_op[0] && u->entry_op[0])
            snprintf(g->entry_op, sizeof g->entry_op, "%s", u->entry_op);
        g->model += u->model;
        g->used += u->used;
        g->measured += u->measured;
        out->ops++;
        out->matched += u->matched > 0;
        out->model += u->model;
        out->used += u->used;
        out->measured += u->measured;
    }
}

void profile_summary_free(profile_summary *s)
{
    free(s->g);
    memset(s, 0, sizeof *s);
}
