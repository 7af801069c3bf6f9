/* limits.h: protosim's input limits (docs/design-notes.md "Input limits") and the one rule for
 * sizes computed from input: every product is checked against a limit, and exceeding it is an
 * input error at the location of the field that caused it, never a wrap-around. */
#ifndef PROTOSIM_LIMITS_H
#define PROTOSIM_LIMITS_H

#include <stdint.h>

#include "error.h"
#include "vocab.h"

/* Limits no real job reaches, chosen so every run stays within minutes (measured in the notes).
 * Each is an error naming the file, line, column and field (or the option) when exceeded. */
#define PS_MAX_GPUS                                                                                \
    131072                        /* GPUs of a plan (tensor x context x pipeline x data) and of
                                        a generated cluster */
#define PS_MAX_GPUS_PER_NODE 72   /* GPUs of one generated node (an NVL72 rack) */
#define PS_MAX_NODE_MODELS   256  /* node models of one cluster description */
#define PS_MAX_NODE_LINKS    8192 /* links inside one node of a cluster description */
#define PS_MAX_PLATFORM_LINKS                                                                      \
    1048576 /* links of a cluster (nodes' links and the fabric's uplinks; each about 1.5 KB in      \
               SimGrid) */
#define PS_MAX_NODE_PAIRS                                                                          \
    2097152                          /* ordered GPU pairs inside nodes, summed over a generated
                                        cluster (each is a route in the platform file) */
#define PS_MAX_LAYERS       16384    /* transformer layers of a model */
#define PS_MAX_DIM          1048576  /* hidden, ffn_hidden, head_dim, dense_ffn_hidden */
#define PS_MAX_HEADS        65536    /* heads, kv_heads */
#define PS_MAX_SEQ          16777216 /* seq, sliding_window (tokens) */
#define PS_MAX_VOCAB        16777216 /* vocab */
#define PS_MAX_EXPERTS      4096     /* experts, experts_topk, shared_experts */
#define PS_MAX_GLOBAL_BATCH 16777216 /* batch.global (sequences) */
#define PS_MAX_MICRO_BATCHES                                                                       \
    65536 /* micro-batches per pipeline per iteration: global / (micro
                                        x data) */
#define PS_MAX_PIPELINE_UNITS                                                                      \
    1048576 /* micro-batches x model chunks (pipeline x virtual
                                          stages): the pipeline schedule's units of work */
#define PS_MAX_RANK_UNITS                                                                          \
    67108864                           /* GPUs x micro-batches x virtual stages: the compiler's
                                          per-rank tables unfolded (24 bytes each); 131,072
                                          GPUs x 192 micro-batches fits (issue 31) */
#define PS_MAX_SWEEP_PLANS  1000000    /* combinations of a sweep (constraints.max_plans) */
#define PS_MAX_AXIS_VALUES  1024       /* values of one sweep axis */
#define PS_MAX_YAML_DEPTH   64         /* nested mappings and lists in a YAML file */
#define PS_MAX_YAML_BYTES   16777216   /* size of a YAML file (16 MiB) */
#define PS_MAX_JOBS         1024       /* sweep -j */
#define PS_MAX_MERGE_BYTES  1073741824 /* size of one merge input file (1 GiB) */
#define PS_MAX_BYTES        1e18       /* a byte count on the command line (--sizes): 1 EB */
#define PS_MAX_TRACE_DUR_US 1e12       /* a profiler event's dur (us): 11.6 days */

/* Where an operand came from, for the error: the file, the value's location and its field. */
typedef struct ps_where {
    const char *file;
    src_loc loc;
    const char *field;
} ps_where;

/* *out = a * b when it is at most `limit` (a, b >= 0); else a PS_EINPUT error at `w`: "<what>:
 * <a> x <b> is more than <limit>" (overflow included: the product is never formed then). Returns
 * 0 or the error code. */
int ps_mul_checked(int64_t a, int64_t b, int64_t limit, ps_where w, const char *what, int64_t *out,
                   ps_error *err);
/* The same for a product of n factors (what names them, e.g. "tensor x pipeline x data"). */
int ps_product_checked(const int64_t *factors, int n, int64_t limit, ps_where w, const char *what,
                       int64_t *out, ps_error *err);
/* Whether a * b (a, b >= 0) would exceed limit, without forming it. */
int ps_mul_exceeds(int64_t a, int64_t b, int64_t limit);

#endif
