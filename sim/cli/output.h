/* output.h: the writers of the `protosim` command: a run's text summary, JSON report and
 * trace (out_run.c) and a plan's fields as JSON (out_plan.c). Engine data in, files out. */
#ifndef PROTOSIM_OUTPUT_H
#define PROTOSIM_OUTPUT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "../../strategies/compile.h"
#include "../../topology/cluster.h"
#include "../htae.h"
#include "../report.h"

/* ---- a plan's fields (out_plan.c) ---- */

/* Add p's fields to obj: tensor, pipeline, data, micro_batch, global_batch, schedule,
 * virtual_stages, zero, recompute, bucket_mb, sequence_parallel, precision. */
void out_plan_json(cJSON *obj, const plan_desc *p);

/* ---- one run (out_run.c) ---- */

void out_run_text(FILE *out, const cluster *c, const compiled_plan *p, const htae_result *r,
                  const report_summary *sum);
/* Both return 0, or PS_EINPUT with err naming the file that could not be written. */
int out_run_json(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                 const report_summary *sum, ps_error *err);
int out_run_trace(const char *path, const cluster *c, const compiled_plan *p, const htae_result *r,
                  ps_error *err);

/* PS_EINPUT "cannot write: <strerror>" naming path. */
int out_write_error(const char *path, ps_error *err);

#endif
