/* cost_profile.c: the matching of op-graph ops to measured PyTorch ops (docs/design-notes.md
 * "Profile database") and the record of a compile's matches. */
#include "cost_profile.h"

#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"

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
 * matmul of [..., k] by [k, n] 3); 0 when the entry is not one such GEMM. */
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
        /* [..., k] . [k, n]: the leading dimensions flattened into m (PyTorch folds them) */
        na = in_dims(e, 0, &a);
        if (biased || e->n_inputs != 2 || na < 2 || in_dims(e, 1, &b) != 2 || a[na - 1] != b[0])
            return 0;
        *g = (gemm_shape){prod(a, na - 1), b[1], b[0]};
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

/* The best entry among those of bias `biased` for a GEMM [m x k] . [k x n]: of the most
 * preferred op that has one, the entry with the most occurrences (the first in the table on a
 * tie). */
static const profile_entry *find_gemm_biased(const profile_db *db, const char *dtype, int biased,
                                             double m, double n, double k)
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

/* A GEMM with a bias runs as addmm or a biased linear in eager PyTorch, and as a plain GEMM
 * where the bias is fused into the next kernel (Megatron's skip_bias_add: mm, then bias-GELU or
 * bias-dropout-add); the op graph's GEMM costs the product alone, so both measure it. A GEMM
 * without one never matches a biased op (its time holds a bias add the op does not do). */
static const profile_entry *find_gemm(const profile_db *db, const char *dtype, int biased, double m,
                                      double n, double k)
{
    const profile_entry *e = biased ? find_gemm_biased(db, dtype, 1, m, n, k) : NULL;
    return e ? e : find_gemm_biased(db, dtype, 0, m, n, k);
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

/* LayerNorm over the last dimension: [..., H] (forward its input; backward its output gradient
 * and its input, alike), rows = the leading dimensions' product. */
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

/* A table lookup: weight [V, H], indices of any shape whose product is the op's tokens. */
static int embedding_ok(const profile_entry *e, const workload_op *op, int pass)
{
    const double *w, *x;
    int ni = in_dims(e, 1, &x);
    if (pass != PASS_FWD || strcmp(e->op, "aten::embedding") || in_dims(e, 0, &w) != 2 || ni < 1)
        return 0;
    return w[0] == op->n && w[1] == op->k && prod(x, ni) == op->m;
}

int profile_match_op(const profile_db *db, const workload_model *model, const workload_op *full,
                     const workload_op *op, op_pass pass, precision_t prec, const device_spec *dev,
                     double model_seconds, profile_hit *hit)
{
    memset(hit, 0, sizeof *hit);
    hit->parts = op->kind == OP_GEMM && !op->gram && pass == PASS_BWD ? 2 : 1;
    hit->seconds = model_seconds;
    const char *dtype = dtype_of(prec);
    if (!db || !dtype || strcmp(db->device, dev->name) != 0 || op->expert)
        return 0;
    if (op->kind == OP_GEMM) {
        if (op->batch != 1 || op->gram || op->kernels != 1 ||
            !(op->m > 0 && op->n > 0 && op->k > 0))
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
        if (!op->fused || op->window > 0 || model->kv_heads != model->heads ||
            (op->v_dim > 0 && op->v_dim != op->k))
            return 0;
        hit->entry[0] = find_best(db, dtype, attention_ok, op, pass);
    } else if (op->kind == OP_LAYERNORM) {
        if (model->family == FAMILY_LLAMA) /* RMSNorm */
            return 0;
        hit->entry[0] = find_best(db, dtype, layernorm_ok, op, pass);
    } else if (op->kind == OP_EMBEDDING) {
        /* one lookup: no learned positions, no dropout, no token types, the table whole */
        if (model->positions == POS_LEARNED || model->dropout || model->family == FAMILY_BERT ||
            op->n != full->n || op->kernels != 1)
            return 0;
        hit->entry[0] = find_best(db, dtype, embedding_ok, op, pass);
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
        hit->seconds = hit->entry[measured]->seconds + other + cost_op_gpu_overhead_seconds(op);
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
        g->partly += u->matched > 0 && u->matched < u->parts;
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
