/* out_plan.c: a plan's fields as JSON and back, the one place the run report, the sweep outputs
 * and merge name them (the names are the strategy's: tensor, pipeline, data, ...). */
#include "output.h"

#include <limits.h>
#include <float.h>
#include <math.h>
#include <string.h>

void out_plan_json(cJSON *obj, const plan_desc *p)
{
    cJSON_AddNumberToObject(obj, "tensor", p->tp);
    cJSON_AddNumberToObject(obj, "pipeline", p->pp);
    cJSON_AddNumberToObject(obj, "data", p->dp);
    cJSON_AddNumberToObject(obj, "context", p->cp);
    cJSON_AddNumberToObject(obj, "micro_batch", p->micro_batch);
    cJSON_AddNumberToObject(obj, "global_batch", p->global_batch);
    cJSON_AddStringToObject(obj, "schedule", schedule_name((pipeline_schedule)p->schedule));
    cJSON_AddNumberToObject(obj, "virtual_stages", p->virtual_stages);
    cJSON_AddNumberToObject(obj, "zero", p->zero);
    if (p->shard_degree > 0) /* HSDP only: absent, ZeRO shards over the whole DP group */
        cJSON_AddNumberToObject(obj, "shard_degree", p->shard_degree);
    cJSON_AddStringToObject(obj, "recompute", recompute_name((recompute_mode)p->recompute));
    cJSON_AddNumberToObject(obj, "bucket_mb", p->bucket_mb);
    cJSON_AddBoolToObject(obj, "sequence_parallel", p->sequence_parallel);
    cJSON_AddStringToObject(obj, "precision", precision_name(p->precision));
    cJSON_AddNumberToObject(obj, "expert", p->ep);
    cJSON_AddNumberToObject(obj, "expert_tensor", p->etp);
}

cJSON *out_figures_json(cJSON *obj, const plan_figures *f)
{
    cJSON_AddNumberToObject(obj, "iteration_time_s", f->iteration_s);
    cJSON_AddNumberToObject(obj, "samples_per_s", f->samples_per_s);
    cJSON_AddNumberToObject(obj, "tokens_per_s", f->tokens_per_s);
    cJSON_AddNumberToObject(obj, "mfu", f->mfu);
    cJSON *b = cJSON_AddObjectToObject(obj, "breakdown");
    cJSON_AddNumberToObject(b, "compute_s", f->compute_s);
    cJSON_AddNumberToObject(b, "exposed_comm_s", f->exposed_comm_s);
    cJSON_AddNumberToObject(b, "bubble_s", f->bubble_s);
    cJSON_AddNumberToObject(b, "idle_s", f->idle_s);
    return b;
}

/* ---- typed readers ---- */

static const char *json_type(const cJSON *v)
{
    return cJSON_IsNumber(v)   ? "a number"
           : cJSON_IsString(v) ? "a string"
           : cJSON_IsBool(v)   ? "a boolean"
           : cJSON_IsNull(v)   ? "null"
           : cJSON_IsArray(v)  ? "an array"
                               : "an object";
}

/* obj[key] with its JSON path "where.key" for messages. */
typedef struct json_field {
    const cJSON *v;
    char path[128];
} json_field;

/* 1: present; 0: missing and optional; -1: missing and required (an error naming the path). */
static int lookup(const cJSON *obj, const char *key, int optional, const char *file,
                  const char *where, json_field *f, ps_error *err)
{
    snprintf(f->path, sizeof f->path, "%s%s%s", where, where[0] ? "." : "", key);
    f->v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
    if (f->v)
        return 1;
    if (optional)
        return 0;
    ps_error_set(err, PS_EINPUT, file, 0, 0, f->path, "missing");
    return -1;
}

int out_json_int(const cJSON *obj, const char *key, int optional, long lo, long hi,
                 const char *file, const char *where, int *out, ps_error *err)
{
    json_field f;
    int found = lookup(obj, key, optional, file, where, &f, err);
    if (found <= 0)
        return found ? err->code : 0;
    if (!cJSON_IsNumber(f.v))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, f.path, "must be an integer, got %s",
                            json_type(f.v));
    double x = f.v->valuedouble;
    if (x != floor(x) || x < (double)lo || x > (double)hi)
        return ps_error_set(err, PS_EINPUT, file, 0, 0, f.path,
                            "must be an integer between %ld and %ld, got %g", lo, hi, x);
    *out = (int)x;
    return 0;
}

/* lookup, and a present value must pass `is` ("must be EXPECT, got a string"). */
static int typed(const cJSON *obj, const char *key, int optional, const char *file,
                 const char *where, cJSON_bool (*is)(const cJSON *const), const char *expect,
                 json_field *f, ps_error *err)
{
    int found = lookup(obj, key, optional, file, where, f, err);
    if (found > 0 && !is(f->v)) {
        ps_error_set(err, PS_EINPUT, file, 0, 0, f->path, "must be %s, got %s", expect,
                     json_type(f->v));
        return -1;
    }
    return found;
}

int out_json_num(const cJSON *obj, const char *key, int optional, const char *file,
                 const char *where, double *out, ps_error *err)
{
    json_field f;
    int found = typed(obj, key, optional, file, where, cJSON_IsNumber, "a number", &f, err);
    if (found > 0 && !isfinite(f.v->valuedouble))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, f.path, "must be a finite number");
    if (found > 0)
        *out = f.v->valuedouble;
    return found < 0 ? err->code : 0;
}

int out_json_num_in(const cJSON *obj, const char *key, int optional, double lo, double hi,
                    const char *file, const char *where, double *out, ps_error *err)
{
    double x = lo;
    if (out_json_num(obj, key, optional, file, where, &x, err))
        return err->code;
    if (x < lo || x > hi) {
        char path[128];
        snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
        return hi == DBL_MAX
                   ? ps_error_set(err, PS_EINPUT, file, 0, 0, path,
                                  "must be a number >= %g, got %g", lo, x)
                   : ps_error_set(err, PS_EINPUT, file, 0, 0, path,
                                  "must be a number between %g and %g, got %g", lo, hi, x);
    }
    if (cJSON_HasObjectItem(obj, key))
        *out = x;
    return 0;
}

int out_json_str(const cJSON *obj, const char *key, int optional, const char *file,
                 const char *where, const char **out, ps_error *err)
{
    json_field f;
    int found = typed(obj, key, optional, file, where, cJSON_IsString, "a string", &f, err);
    if (found > 0)
        *out = f.v->valuestring;
    return found < 0 ? err->code : 0;
}

int out_json_bool(const cJSON *obj, const char *key, int optional, const char *file,
                  const char *where, int *out, ps_error *err)
{
    json_field f;
    int found = typed(obj, key, optional, file, where, cJSON_IsBool, "true or false", &f, err);
    if (found > 0)
        *out = cJSON_IsTrue(f.v);
    return found < 0 ? err->code : 0;
}

int out_json_enum(const cJSON *obj, const char *key, enum_names names, const char *file,
                  const char *where, int *out, ps_error *err)
{
    const char *s = NULL;
    if (out_json_str(obj, key, 0, file, where, &s, err))
        return err->code;
    int v = enum_parse(names, s);
    if (v >= 0) {
        *out = v;
        return 0;
    }
    char path[128], list[256] = "";
    snprintf(path, sizeof path, "%s%s%s", where, where[0] ? "." : "", key);
    for (int i = 0; i < names.count; i++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%s",
                 i == 0                ? ""
                 : i + 1 < names.count ? ", "
                                       : " or ",
                 names.names[i]);
    }
    return ps_error_set(err, PS_EINPUT, file, 0, 0, path, "unknown %s '%s' (expected %s)", key, s,
                        list);
}

/* ---- a plan's fields ---- */

int out_plan_from_json(const cJSON *obj, const char *file, const char *where, plan_desc *out,
                       ps_error *err)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(obj))
        return ps_error_set(err, PS_EINPUT, file, 0, 0, where, "must be an object, got %s",
                            json_type(obj));
    int prec = 0;
    char path[128];
    if (out_json_int(obj, "tensor", 0, 1, INT_MAX, file, where, &out->tp, err) ||
        out_json_int(obj, "pipeline", 0, 1, INT_MAX, file, where, &out->pp, err) ||
        out_json_int(obj, "data", 0, 1, INT_MAX, file, where, &out->dp, err) ||
        out_json_int(obj, "context", 1, 1, INT_MAX, file, where, &out->cp, err) ||
        out_json_int(obj, "micro_batch", 0, 1, INT_MAX, file, where, &out->micro_batch, err) ||
        out_json_int(obj, "global_batch", 0, 1, INT_MAX, file, where, &out->global_batch, err) ||
        out_json_enum(obj, "schedule", schedule_names, file, where, &out->schedule, err) ||
        out_json_int(obj, "virtual_stages", 0, 1, INT_MAX, file, where, &out->virtual_stages,
                     err) ||
        out_json_int(obj, "zero", 0, 0, 3, file, where, &out->zero, err) ||
        out_json_int(obj, "shard_degree", 1, 1, INT_MAX, file, where, &out->shard_degree, err) ||
        out_json_enum(obj, "recompute", recompute_names, file, where, &out->recompute, err) ||
        out_json_num(obj, "bucket_mb", 0, file, where, &out->bucket_mb, err) ||
        out_json_bool(obj, "sequence_parallel", 0, file, where, &out->sequence_parallel, err) ||
        out_json_enum(obj, "precision", precision_names, file, where, &prec, err) ||
        out_json_int(obj, "expert", 1, 1, INT_MAX, file, where, &out->ep, err) ||
        out_json_int(obj, "expert_tensor", 1, 1, INT_MAX, file, where, &out->etp, err))
        return err->code;
    if (out->ep == 0) /* written before expert parallelism: none */
        out->ep = 1;
    if (out->etp == 0)
        out->etp = 1;
    if (!(out->bucket_mb > 0)) {
        snprintf(path, sizeof path, "%s%sbucket_mb", where, where[0] ? "." : "");
        return ps_error_set(err, PS_EINPUT, file, 0, 0, path, "must be greater than 0, got %g",
                            out->bucket_mb);
    }
    out->precision = (precision_t)prec;
    if (out->cp == 0) /* written before context parallelism existed: none */
        out->cp = 1;
    return 0;
}
