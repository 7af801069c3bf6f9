/* model_util.h: op-graph helpers the workload-level unit tests share (test_workload,
 * test_llama, test_moe, test_ep, test_window): finding an op of a built graph by its module path;
 * the flow shop of a segment's kernels the plan-level tests time by hand. */
#ifndef PROTOSIM_TEST_MODEL_UTIL_H
#define PROTOSIM_TEST_MODEL_UTIL_H

#include <stddef.h>

#include "../sim/cost/cost.h"
#include "../workloads/workload.h"

/* A bf16 GEMM op (m x k).(k x n), batch 1, one kernel: FLOPs 2mnk forward and twice that
 * backward, bytes its three matrices forward and twice that backward. */
workload_op gemm_op(double m, double n, double k);
/* The op named `name` (e.g. "layers.0.mlp.fc1"); fails the test if there is none. */
const workload_op *find_op(const workload_graph *g, const char *name);
/* Whether the graph has an op named `name`. */
int has_op(const workload_graph *g, const char *name);
/* Write `text` to a new temporary file /tmp/protosim_test_STEM_XXXXXX (tests find their files'
 * names in messages by the stem), its name into path (cap bytes); the caller unlinks it. */
void model_write_temp(char *path, size_t cap, const char *stem, const char *text);
/* The bundled model `name` (e.g. "llama2-7b"); fails the test if it does not load. */
workload_model model_load_named(const char *name);
/* workload_model_load of a model file holding `text` (a temporary file, removed after), with
 * the bundled data directory (ps_data_dir). */
int model_load_text(const char *text, workload_model *m, ps_error *err);
/* model_load_text, the file named as model_write_temp names it with `stem`. */
int model_load_text_as(const char *stem, const char *text, workload_model *m, ps_error *err);

/* A segment's kernels as the compiler runs them (strategies/compile/chunk.c's flow shop): the
 * host issues each kernel in turn (its launch cost), the GPU runs it once issued and the
 * previous one is done. host: the host's clock; gpu: when the GPU is free. */
typedef struct kernel_flow {
    double host, gpu;
} kernel_flow;
/* Issue op's `pass` kernels (cost_op_kernels, at least one), `kernel` seconds of GPU time in
 * all, each after its share of the op's launch cost. */
void flow_op(kernel_flow *f, const workload_op *op, op_pass pass, double kernel);

/* The bundled device table (topology/devices/devices.yaml), loaded or the test fails. */
void model_devices(device_table *t);

#endif
