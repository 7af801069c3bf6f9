/* trace_profile.c: the profile database file (cJSON), and measured GPU time per PyTorch op from
 * Kineto traces (the replay reader): kernels to launches by correlation id, launches to ops. */
#include "trace_profile.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "trace_build.h"

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
    static const char *const keys[] = {"protosim_profile", "device", "entries", NULL};
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
                                         "L40S",
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
    snprintf(out, cap, "%s", s);
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (!strcmp(s, direct[i]))
            return 0;
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

/* One occurrence of an op: its key (op, shapes, dtype) and the GPU time it launched. */
typedef struct sample {
    char *key; /* "op\x1fshapes\x1fdtype", for sorting */
    const char *op, *dtype;
    char *shapes; /* Input Dims as compact JSON */
    double seconds;
} sample;

typedef struct samples {
    sample *v;
    int n;
    size_t cap;
} samples;

/* The dtype of an op's inputs: the first floating-point "Input type", else the first non-empty
 * one, else "". */
static const char *op_dtype(const cJSON *types)
{
    const cJSON *t;
    const char *first = "";
    cJSON_ArrayForEach(t, types)
    {
        if (!cJSON_IsString(t))
            continue;
        const char *d = profile_dtype_of_torch_type(t->valuestring);
        if (d)
            return d;
        if (!first[0])
            first = t->valuestring;
    }
    return first;
}

/* The GPU name of one trace as devices.yaml names it, against `device` (given or taken from an
 * earlier trace; "" when none yet). */
static int trace_device(const trace_events *te, const char *path, int given, char *device,
                        size_t cap, ps_error *err)
{
    char mapped[48] = "";
    if (te->device[0] && profile_device_of_cuda_name(te->device, mapped, sizeof mapped)) {
        if (given)
            return 0; /* a GPU the map does not know: the user names it */
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "deviceProperties",
                            "GPU '%s' is not one protosim knows: name its devices.yaml entry "
                            "with --device",
                            te->device);
    }
    if (!mapped[0]) {
        if (device[0])
            return 0;
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "deviceProperties",
                            "the trace names no GPU: name its devices.yaml entry with --device");
    }
    if (device[0] && strcmp(device, mapped) != 0)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "deviceProperties",
                            "the trace's GPU '%s' is %s, not %s%s", te->device, mapped, device,
                            given ? " (--device)" : " (an earlier trace's)");
    snprintf(device, cap, "%s", mapped);
    return 0;
}

/* Every op of the trace that launched GPU work, with its launched time, into s. */
static void trace_samples(const trace_events *te, samples *s, trace_profile_info *info)
{
    /* GPU microseconds each runtime call launched (kernels, copies, memsets by correlation) */
    double *launched = xcalloc((size_t)te->n + 1, sizeof *launched);
    tb_map corr;
    tb_map_init(&corr, (size_t)te->n);
    for (int i = 0; i < te->n; i++)
        if (te->ev[i].kind == EV_RUNTIME && te->ev[i].corr >= 0)
            tb_map_put(&corr, te->ev[i].corr, i);
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        int r = (e->kind == EV_KERNEL || e->kind == EV_COPY) && e->corr >= 0
                    ? tb_map_get(&corr, e->corr)
                    : -1;
        if (r >= 0)
            launched[r] += e->dur;
    }
    tb_map_free(&corr);

    /* per thread, ops and the launching calls in time order; the open ops are a stack */
    trace_ev **v = xmalloc(((size_t)te->n + 1) * sizeof *v);
    int *open = xmalloc(((size_t)te->n + 1) * sizeof *open);
    double *sum = xcalloc((size_t)te->n + 1, sizeof *sum);
    for (int th = 0; th < te->n_tids; th++) {
        int n = 0;
        for (int i = 0; i < te->n; i++) {
            const trace_ev *e = &te->ev[i];
            if (e->thread == th && ((e->kind == EV_CPU_OP && !strncmp(e->name, "aten::", 6)) ||
                                    (e->kind == EV_RUNTIME && launched[i] > 0)))
                v[n++] = &te->ev[i];
        }
        tb_sort_events(v, n);
        int depth = 0;
        for (int i = 0; i < n; i++) {
            const trace_ev *e = v[i];
            int pos = (int)(e - te->ev);
            while (depth > 0 && te->ev[open[depth - 1]].ts + te->ev[open[depth - 1]].dur <= e->ts)
                depth--;
            if (e->kind == EV_CPU_OP)
                open[depth++] = pos;
            else
                for (int k = 0; k < depth; k++)
                    sum[open[k]] += launched[pos];
        }
    }
    for (int i = 0; i < te->n; i++) {
        const trace_ev *e = &te->ev[i];
        if (e->kind != EV_CPU_OP || sum[i] <= 0)
            continue;
        info->ops++;
        const cJSON *dims =
            e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input Dims") : NULL;
        const cJSON *types =
            e->args ? cJSON_GetObjectItemCaseSensitive(e->args, "Input type") : NULL;
        if (!cJSON_IsArray(dims)) {
            info->without_shapes++;
            continue;
        }
        xgrow(&s->v, sizeof *s->v, (size_t)s->n + 1, &s->cap);
        sample *x = &s->v[s->n++];
        x->op = e->name;
        x->dtype = cJSON_IsArray(types) ? op_dtype(types) : "";
        x->shapes = cJSON_PrintUnformatted(dims);
        size_t len = strlen(x->op) + strlen(x->shapes) + strlen(x->dtype) + 3;
        x->key = xmalloc(len);
        snprintf(x->key, len, "%s\x1f%s\x1f%s", x->op, x->shapes, x->dtype);
        x->seconds = sum[i] * 1e-6;
    }
    free(v);
    free(open);
    free(sum);
    free(launched);
}

static int by_key_then_time(const void *a, const void *b)
{
    const sample *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->seconds < y->seconds ? -1 : x->seconds > y->seconds;
}

/* Input Dims (compact JSON from the trace) as profile_db_add wants them. */
static void parse_shapes(const char *json, int **ndim, double **dims, int *n_inputs)
{
    cJSON *a = cJSON_Parse(json);
    assert(cJSON_IsArray(a));
    int n = cJSON_GetArraySize(a), total = 0, i = 0;
    *ndim = xmalloc(((size_t)n + 1) * sizeof **ndim);
    size_t cap = 16;
    *dims = xmalloc(cap * sizeof **dims);
    const cJSON *in;
    cJSON_ArrayForEach(in, a)
    {
        int nd = 0, shape = cJSON_IsArray(in);
        const cJSON *d;
        if (shape)
            cJSON_ArrayForEach(d, in) shape = shape && cJSON_IsNumber(d) && d->valuedouble >= 0;
        if (shape)
            cJSON_ArrayForEach(d, in)
            {
                xgrow(dims, sizeof **dims, (size_t)total + 1, &cap);
                (*dims)[total++] = d->valuedouble;
                nd++;
            }
        (*ndim)[i++] = shape ? nd : -1;
    }
    *n_inputs = n;
    cJSON_Delete(a);
}

/* Median of the sorted v[0..n): the middle one, or the mean of the two middle ones. */
static double median_of(const sample *v, int n)
{
    return n % 2 ? v[n / 2].seconds : 0.5 * (v[n / 2 - 1].seconds + v[n / 2].seconds);
}

int trace_profile_build(const char *const *paths, int n_paths, const char *device, profile_db *out,
                        trace_profile_info *info, ps_error *err)
{
    memset(out, 0, sizeof *out);
    memset(info, 0, sizeof *info);
    if (device)
        snprintf(out->device, sizeof out->device, "%s", device);
    trace_events *te = xcalloc((size_t)n_paths + 1, sizeof *te);
    samples s = {0};
    int rc = 0, read = 0;
    for (int p = 0; p < n_paths && !rc; p++) {
        if ((rc = trace_events_read(paths[p], &te[p], err)))
            break;
        read++;
        rc = trace_device(&te[p], paths[p], device != NULL, out->device, sizeof out->device, err);
        if (!rc)
            trace_samples(&te[p], &s, info);
    }
    if (!rc && s.n == 0)
        rc = ps_error_set(err, PS_EINPUT, paths[n_paths - 1], 0, 0, "traceEvents",
                          "no op with recorded shapes (\"Input Dims\") launched GPU work: "
                          "profile with record_shapes=True");
    if (!rc) {
        qsort(s.v, (size_t)s.n, sizeof *s.v, by_key_then_time);
        for (int i = 0; i < s.n;) {
            int j = i;
            while (j < s.n && !strcmp(s.v[j].key, s.v[i].key))
                j++;
            int *ndim, n_inputs;
            double *dims;
            parse_shapes(s.v[i].shapes, &ndim, &dims, &n_inputs);
            profile_db_add(out, s.v[i].op, s.v[i].dtype, n_inputs, ndim, dims,
                           median_of(s.v + i, j - i), j - i);
            info->occurrences += j - i;
            free(ndim);
            free(dims);
            i = j;
        }
    }
    for (int i = 0; i < s.n; i++) {
        free(s.v[i].key);
        cJSON_free(s.v[i].shapes);
    }
    free(s.v);
    for (int p = 0; p < read; p++)
        trace_events_free(&te[p]);
    free(te);
    if (rc)
        profile_db_free(out);
    return rc;
}
