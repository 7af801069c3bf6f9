/* trace_profile.c: measured GPU time per PyTorch op from Kineto traces (the replay reader's
 * events): kernels to their launches by correlation id, launches to the ops around them. */
#include "trace_profile.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/xalloc.h"
#include "trace_internal.h"

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
