/* out_plan.c: a plan's fields as JSON, the one place the run report and the sweep outputs
 * name them (the names are the strategy's: tensor, pipeline, data, ...). */
#include "output.h"

void out_plan_json(cJSON *obj, const plan_desc *p)
{
    cJSON_AddNumberToObject(obj, "tensor", p->tp);
    cJSON_AddNumberToObject(obj, "pipeline", p->pp);
    cJSON_AddNumberToObject(obj, "data", p->dp);
    cJSON_AddNumberToObject(obj, "micro_batch", p->micro_batch);
    cJSON_AddNumberToObject(obj, "global_batch", p->global_batch);
    cJSON_AddStringToObject(obj, "schedule", schedule_name((pipeline_schedule)p->schedule));
    cJSON_AddNumberToObject(obj, "virtual_stages", p->virtual_stages);
    cJSON_AddNumberToObject(obj, "zero", p->zero);
    cJSON_AddStringToObject(obj, "recompute", recompute_name((recompute_mode)p->recompute));
    cJSON_AddNumberToObject(obj, "bucket_mb", p->bucket_mb);
    cJSON_AddBoolToObject(obj, "sequence_parallel", p->sequence_parallel);
    cJSON_AddStringToObject(obj, "precision", precision_name(p->precision));
}
