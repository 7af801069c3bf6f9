/* gemm_roles.h: a compared step's GEMMs by the layer they belong to (`protosim compare`). A
 * linear layer of weight (in, out) over T tokens multiplies matrices of the dimensions {T, in,
 * out} in its forward, its input gradient and its weight gradient alike: the plan's GEMM ops of
 * the traced GPU (sharded as the compiler shards them) give each role its multisets, and a
 * traced GEMM takes the role whose multiset equals the one its launching op's recorded shapes
 * give (trace_call_gemm). Roles that share a multiset cannot be told apart: they are one row. */
#ifndef PROTOSIM_GEMM_ROLES_H
#define PROTOSIM_GEMM_ROLES_H

#include <stddef.h>

#include "../../workloads/trace/trace.h"
#include "../../workloads/workload.h"

/* The roles, by the op's name (workloads/transformer.c). */
typedef enum {
    ROLE_QKV,       /* attn.qkv */
    ROLE_ATTN_OUT,  /* attn.proj */
    ROLE_MLP_IN,    /* mlp.fc1 */
    ROLE_MLP_OUT,   /* mlp.fc2 */
    ROLE_MOE,       /* mlp.router, mlp.experts.*, mlp.shared.* */
    ROLE_HEAD,      /* lm_head; BERT's head.dense and head.decoder */
    ROLE_OTHER,     /* a traced GEMM no plan op matches (attention's batched GEMMs, a GEMM
                       without shapes in a trace with shapes), a plan GEMM of no role above */
    ROLE_NO_SHAPES, /* every GEMM, both sides, when the trace records no GEMM's shapes */
    ROLE_COUNT
} gemm_role;

/* One multiset {m, k, n} of the plan (ascending) and its role. */
typedef struct gemm_shape {
    double d[3];
    int role;
} gemm_shape;

typedef struct gemm_roles {
    gemm_shape *shapes; /* the plan's distinct (multiset, role) pairs */
    int n_shapes;
    size_t cap_shapes;
    int row[ROLE_COUNT]; /* each role's row: the first role sharing a multiset with it, or with
                            a role that does (gemm_roles_measure) */
    int no_shapes;       /* the trace records no GEMM's shapes: one row, ROLE_NO_SHAPES */
    /* Seconds per role; after gemm_roles_measure, per row (on the row's role, 0 on the others). */
    double predicted_s[ROLE_COUNT], measured_s[ROLE_COUNT];
} gemm_roles;

void gemm_roles_init(gemm_roles *g);
void gemm_roles_free(gemm_roles *g);

/* A GEMM op of the plan as the traced GPU runs it (sharded) and its cost-model time. */
void gemm_roles_add_op(gemm_roles *g, const workload_op *op, double seconds);

/* The rows (roles merged by shared multisets), then the GEMMs of rank r of j that its split
 * counts (trace_step_events), by role, their mean per step; the times folded into rows. */
void gemm_roles_measure(gemm_roles *g, const trace_job *j, int r);

/* The name of the row of `role` (a row's first role): "GEMM attention QKV", "GEMM MLP" (MLP in
 * and out together), "GEMM attention output + LM head", ... */
void gemm_roles_name(const gemm_roles *g, int role, char *buf, size_t cap);

#endif
