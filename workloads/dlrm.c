/* dlrm.c: recommendation models (`family: dlrm`): the located reader of their keys, the id laws
 * (distinct rows per batch, the share of the hottest rows) and the op graph of one micro-batch. */
#include "workload.h"

#include "../sim/base/xalloc.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const id_law_table[] = {"uniform", "zipf", "unique_ratio"};
const enum_names dlrm_id_law_names = ENUM_NAMES(id_law_table);
static const char *const interaction_table[] = {"dot", "cat", "dcn"};
const enum_names dlrm_interaction_names = ENUM_NAMES(interaction_table);
static const char *const update_table[] = {"sgd", "adagrad", "adam"};
const enum_names emb_update_names = ENUM_NAMES(update_table);
/* only `distribution:` names a law; unique_ratio is its own key */
static const char *const distribution_table[] = {"uniform", "zipf"};

int emb_update_state_words(emb_update u)
{
    return u == EMB_UPDATE_ADAM ? 2 : u == EMB_UPDATE_ADAGRAD ? 1 : 0;
}

/* ---- id laws ---- */

/* Ranks summed exactly before the tail integral of the zipf sums. */
static const double ZIPF_EXACT_RANKS = 4096.0;
/* Simpson intervals of the tail integral (in log rank). */
static const int ZIPF_TAIL_STEPS = 512;

/* A memo of the zipf sums below, pure functions of their arguments that every plan of a sweep
 * asks for again (thousands of pow per call): direct-mapped, exact keys, so values are the
 * same with or without it. Single-threaded, as plan compilation is. */
typedef struct zipf_memo {
    double x, y, z, value;
    int used;
} zipf_memo;
enum { ZIPF_MEMO_SLOTS = 512 };
static zipf_memo memo_harmonic[ZIPF_MEMO_SLOTS], memo_unique[ZIPF_MEMO_SLOTS];

static zipf_memo *memo_slot(zipf_memo *m, double x, double y, double z)
{
    double key[3] = {x, y, z};
    unsigned char b[sizeof key];
    memcpy(b, key, sizeof key);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < sizeof b; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return &m[h % ZIPF_MEMO_SLOTS];
}

static int memo_get(const zipf_memo *e, double x, double y, double z, double *out)
{
    if (!e->used || e->x != x || e->y != y || e->z != z)
        return 0;
    *out = e->value;
    return 1;
}

static double memo_put(zipf_memo *e, double x, double y, double z, double v)
{
    *e = (zipf_memo){x, y, z, v, 1};
    return v;
}

static double zipf_harmonic_sum(double r, double a);

/* H(r, a) = sum_{k=1..r} k^-a, memoized. */
static double zipf_harmonic(double r, double a)
{
    zipf_memo *e = memo_slot(memo_harmonic, r, a, 0);
    double v;
    return memo_get(e, r, a, 0, &v) ? v : memo_put(e, r, a, 0, zipf_harmonic_sum(r, a));
}

/* H(r, a) = sum_{k=1..r} k^-a: exact up to ZIPF_EXACT_RANKS, the midpoint integral of x^-a over
 * (k0 + 1/2, r + 1/2] after (relative error below 1e-6 for k0 = 4096). */
static double zipf_harmonic_sum(double r, double a)
{
    double k0 = fmin(r, ZIPF_EXACT_RANKS), h = 0.0;
    for (double k = 1; k <= k0; k++)
        h += pow(k, -a);
    if (r > k0) {
        double lo = k0 + 0.5, hi = r + 0.5;
        h += fabs(a - 1.0) < 1e-12 ? log(hi / lo)
                                   : (pow(hi, 1.0 - a) - pow(lo, 1.0 - a)) / (1.0 - a);
    }
    return h;
}

double workload_dlrm_unique_rows(dlrm_id_law law, double alpha, double unique_ratio, double r,
                                 double n)
{
    assert(r >= 1 && n >= 0);
    if (law == IDS_UNIQUE_RATIO)
        return fmin(unique_ratio * n, r);
    if (law == IDS_UNIFORM)
        return r == 1 ? (n > 0 ? 1.0 : 0.0) : -r * expm1(n * log1p(-1.0 / r));
    assert(law == IDS_ZIPF && alpha > 0);
    zipf_memo *e = memo_slot(memo_unique, alpha, r, n);
    double v;
    if (memo_get(e, alpha, r, n, &v))
        return v;
    double h = zipf_harmonic(r, alpha);
    double k0 = fmin(r, ZIPF_EXACT_RANKS), u = 0.0;
    for (double k = 1; k <= k0; k++)
        u += -expm1(n * log1p(-pow(k, -alpha) / h));
    if (r > k0) {
        /* the tail: integral of 1 - exp(-n x^-a / h) dx over (k0 + 1/2, r + 1/2], with x = e^t
         * (the integrand x (1 - exp(...)) in t), by Simpson's rule */
        double t0 = log(k0 + 0.5), t1 = log(r + 0.5), dt = (t1 - t0) / ZIPF_TAIL_STEPS;
        double s = 0.0;
        for (int i = 0; i <= ZIPF_TAIL_STEPS; i++) {
            double x = exp(t0 + i * dt);
            double f = x * -expm1(-n * pow(x, -alpha) / h);
            s += f * (i == 0 || i == ZIPF_TAIL_STEPS ? 1.0 : i % 2 ? 4.0 : 2.0);
        }
        u += s * dt / 3.0;
    }
    return memo_put(e, alpha, r, n, fmin(u, fmin(r, n)));
}

double workload_dlrm_hot_share(dlrm_id_law law, double alpha, double r, double hot)
{
    assert(law != IDS_UNIQUE_RATIO && r >= 1 && hot >= 0);
    if (hot >= r)
        return 1.0;
    if (law == IDS_UNIFORM)
        return hot / r;
    hot = floor(hot);
    return hot < 1 ? 0.0 : zipf_harmonic(hot, alpha) / zipf_harmonic(r, alpha);
}

/* ---- the model mapping ---- */

enum {
    D_NAME,
    D_FAMILY,
    D_DENSE,
    D_BOTTOM,
    D_TOP,
    D_INTERACTION,
    D_EMB_DIM,
    D_TABLES,
    D_POOLING,
    D_IDS,
    D_EMB_PREC,
    D_DCN_LAYERS, /* dcn only */
    D_DCN_RANK,
    D_COUNT
};
static const char *const dlrm_keys[D_COUNT] = {
    "name",    "family",      "dense_features",      "bottom_mlp",
    "top_mlp", "interaction", "embedding_dim",       "tables",
    "pooling", "ids",         "embedding_precision", "dcn_layers",
    "dcn_rank"};

/* A list of 1..cap integers in [1, INT_MAX]; elements are named field[i]. */
static int read_int_list(yread_ctx *c, ynode *v, const char *field, int cap, int *out, int *n)
{
    if (!yread_is_list(v))
        return yread_fail(c, v, field, "expected a list of positive integers, got %s",
                          yread_kind(v));
    int count = yread_list_len(v);
    if (count < 1 || count > cap)
        return yread_fail(c, v, field, "expected 1 to %d entries, got %d", cap, count);
    for (int i = 0; i < count; i++) {
        ynode *item = yread_list_item(c, v, i);
        char f[192];
        snprintf(f, sizeof f, "%s[%d]", field, i);
        if (yread_int(c, item, f, 1, INT_MAX, &out[i]))
            return c->err->code;
    }
    *n = count;
    return 0;
}

/* A number for every table, or a list of exactly n_tables (embedding_dim, pooling). */
static int read_per_table(yread_ctx *c, ynode *v, const char *field, int n_tables, int integer,
                          int *iout, double *dout)
{
    int seq = yread_is_list(v);
    int count = seq ? yread_list_len(v) : 1;
    if (seq && count != n_tables)
        return yread_fail(c, v, field, "expected one entry per table (%d), got %d", n_tables,
                          count);
    for (int t = 0; t < n_tables; t++) {
        ynode *item = seq ? yread_list_item(c, v, t) : v;
        char f[192];
        if (seq)
            snprintf(f, sizeof f, "%s[%d]", field, t);
        else
            snprintf(f, sizeof f, "%s", field);
        if (integer ? yread_int(c, item, f, 1, INT_MAX, &iout[t])
                    : yread_positive(c, item, f, &dout[t]))
            return c->err->code;
    }
    return 0;
}

/* ids: {distribution: uniform} | {distribution: zipf, alpha: a} | {unique_ratio: r} */
static int read_ids(yread_ctx *c, ynode *v, const char *field, workload_dlrm *d)
{
    static const char *const keys[] = {"distribution", "alpha", "unique_ratio"};
    if (yread_expect_mapping(c, v, field) || yread_check_keys(c, v, field, keys, 3))
        return c->err->code;
    char f[192];
    ynode *dist = yread_map_get(c, v, "distribution");
    ynode *alpha = yread_map_get(c, v, "alpha");
    ynode *ratio = yread_map_get(c, v, "unique_ratio");
    if (ratio) {
        yread_join_path(f, sizeof f, field, "unique_ratio");
        if (dist)
            return yread_fail(c, ratio, f, "give either distribution or unique_ratio, not both");
        if (alpha)
            return yread_fail(c, ratio, f, "alpha belongs to `distribution: zipf`");
        if (yread_positive(c, ratio, f, &d->unique_ratio))
            return c->err->code;
        if (d->unique_ratio > 1.0)
            return yread_fail(c, ratio, f,
                              "unique_ratio (distinct ids over ids in a batch) must lie in (0, "
                              "1], got %g",
                              d->unique_ratio);
        d->ids = IDS_UNIQUE_RATIO;
        return 0;
    }
    yread_join_path(f, sizeof f, field, "distribution");
    if (!dist)
        return yread_fail(c, v, f, "missing 'distribution' (uniform or zipf) or 'unique_ratio'");
    int law = 0;
    if (yread_enum(c, dist, f, ENUM_NAMES(distribution_table), &law))
        return c->err->code;
    d->ids = law == 0 ? IDS_UNIFORM : IDS_ZIPF;
    yread_join_path(f, sizeof f, field, "alpha");
    if (d->ids == IDS_ZIPF && !alpha)
        return yread_fail(c, dist, f, "a zipf law needs alpha (its exponent)");
    if (d->ids == IDS_UNIFORM && alpha)
        return yread_fail(c, alpha, f, "alpha is the exponent of `distribution: zipf`");
    if (alpha && yread_positive(c, alpha, f, &d->alpha))
        return c->err->code;
    return 0;
}

static int read_precision(yread_ctx *c, ynode *v, const char *field, precision_t *out)
{
    const char *s = yread_scalar(v);
    precision_t p;
    if (!s || precision_parse(s, &p) != 0)
        return yread_fail(c, v, field, "expected fp32, fp16 or bf16, got %s",
                          s ? s : yread_kind(v));
    if (p != PREC_FP32 && p != PREC_FP16 && p != PREC_BF16)
        return yread_fail(c, v, field,
                          "tables stored in %s are not modelled; expected fp32, fp16 or bf16", s);
    *out = p;
    return 0;
}

/* The interaction and its cross-key rules, each error at the key to fix. */
static int resolve_interaction(yread_ctx *c, ynode *node, const char *path, workload_dlrm *d)
{
    char f[192];
    ynode *layers = yread_map_get(c, node, "dcn_layers");
    ynode *rank = yread_map_get(c, node, "dcn_rank");
    if (d->interaction != INTERACTION_DCN) {
        ynode *v = layers ? layers : rank;
        if (v) {
            yread_join_path(f, sizeof f, path, layers ? "dcn_layers" : "dcn_rank");
            return yread_fail(c, v, f, "'%s' belongs to `interaction: dcn`",
                              layers ? "dcn_layers" : "dcn_rank");
        }
    } else {
        yread_join_path(f, sizeof f, path, "dcn_layers");
        if (!layers)
            return yread_fail(c, yread_map_get(c, node, "interaction"), f,
                              "`interaction: dcn` needs dcn_layers (cross layers)");
        if (yread_int(c, layers, f, 1, 64, &d->dcn_layers))
            return c->err->code;
        yread_join_path(f, sizeof f, path, "dcn_rank");
        if (!rank)
            return yread_fail(c, yread_map_get(c, node, "interaction"), f,
                              "`interaction: dcn` needs dcn_rank (the low-rank projection)");
        if (yread_int(c, rank, f, 1, INT_MAX, &d->dcn_rank))
            return c->err->code;
    }
    if (d->top_mlp[d->n_top - 1] != 1) {
        yread_join_path(f, sizeof f, path, "top_mlp");
        return yread_fail(c, yread_map_get(c, node, "top_mlp"), f,
                          "the top MLP ends in one logit (binary cross-entropy): its last width "
                          "must be 1, got %d",
                          d->top_mlp[d->n_top - 1]);
    }
    if (d->interaction == INTERACTION_DOT) {
        int bottom = d->bottom_mlp[d->n_bottom - 1];
        for (int t = 0; t < d->n_tables; t++)
            if (d->dim[t] != bottom) {
                yread_join_path(f, sizeof f, path, "embedding_dim");
                return yread_fail(c, yread_map_get(c, node, "embedding_dim"), f,
                                  "the dot interaction multiplies the bottom MLP's output (%d) "
                                  "with every embedding: table %d has dim %d",
                                  bottom, t, d->dim[t]);
            }
    }
    return 0;
}

int workload_dlrm_read(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    if (yread_check_keys(c, node, path, dlrm_keys, D_COUNT))
        return c->err->code;
    char f[192];
    for (int k = D_DENSE; k <= D_EMB_PREC; k++)
        if (!yread_map_get(c, node, dlrm_keys[k])) {
            yread_join_path(f, sizeof f, path, dlrm_keys[k]);
            return yread_fail(c, node, f,
                              "missing required key '%s' (a dlrm model has no "
                              "defaults)",
                              dlrm_keys[k]);
        }
    workload_dlrm *d = &m->dlrm;
    int inter = 0;
    ynode *v;
#define DLRM_FIELD(key) (yread_join_path(f, sizeof f, path, key), v = yread_map_get(c, node, key))
    if ((DLRM_FIELD("dense_features"), yread_int(c, v, f, 1, INT_MAX, &d->dense_features)) ||
        (DLRM_FIELD("bottom_mlp"),
         read_int_list(c, v, f, DLRM_MAX_MLP, d->bottom_mlp, &d->n_bottom)) ||
        (DLRM_FIELD("top_mlp"), read_int_list(c, v, f, DLRM_MAX_MLP, d->top_mlp, &d->n_top)) ||
        (DLRM_FIELD("interaction"), yread_enum(c, v, f, dlrm_interaction_names, &inter)) ||
        (DLRM_FIELD("tables"), read_int_list(c, v, f, DLRM_MAX_TABLES, d->rows, &d->n_tables)) ||
        (DLRM_FIELD("embedding_dim"), read_per_table(c, v, f, d->n_tables, 1, d->dim, NULL)) ||
        (DLRM_FIELD("pooling"), read_per_table(c, v, f, d->n_tables, 0, NULL, d->pooling)) ||
        (DLRM_FIELD("ids"), read_ids(c, v, f, d)) ||
        (DLRM_FIELD("embedding_precision"), read_precision(c, v, f, &d->embedding_precision)))
        return c->err->code;
#undef DLRM_FIELD
    d->interaction = (dlrm_interaction)inter;
    return resolve_interaction(c, node, path, d);
}

/* ---- the op graph ---- */

typedef struct dlrm_builder {
    workload_graph *g;
    int cap;
    double e; /* bytes per element of the MLPs and interaction (the plan's precision) */
} dlrm_builder;

static workload_op *dlrm_op(dlrm_builder *bd, const char *name, op_kind kind)
{
    workload_graph *g = bd->g;
    assert(g->n_ops < bd->cap);
    workload_op *op = &g->ops[g->n_ops++];
    memset(op, 0, sizeof *op);
    assert(strlen(name) < sizeof op->name);
    snprintf(op->name, sizeof op->name, "%s", name);
    op->layer = -1;
    op->kind = kind;
    op->split = SPLIT_REPLICATED;
    op->batch = 1;
    op->kernels = 1;
    op->cuda_kernels = 1; /* written kernel by kernel: no op stands for several */
    return op;
}

/* [batch x] X[m,k] . W[k,n] as transformer.c's GEMMs: backward dX and dW, twice the forward.
 * `weights`: W is a parameter (the MLPs, DCN) rather than an activation (the dot's batched
 * GEMM of the vectors with themselves). */
static workload_op *dlrm_gemm(dlrm_builder *bd, const char *name, double batch, double m, double n,
                              double k, int weights)
{
    workload_op *op = dlrm_op(bd, name, OP_GEMM);
    op->batch = batch;
    op->m = m;
    op->n = n;
    op->k = k;
    op->fwd_flops = 2.0 * batch * m * n * k;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->fwd_bytes = batch * (m * k + k * n + m * n) * bd->e;
    op->bwd_bytes = 2.0 * op->fwd_bytes;
    op->params = weights ? k * n + n : 0.0; /* weight and bias */
    op->act_bytes = batch * m * k * bd->e;  /* the input, saved for dW */
    return op;
}

/* A memory-bound op over `elems` elements: bytes per element in each pass. */
static workload_op *dlrm_pointwise(dlrm_builder *bd, const char *name, double elems,
                                   double flops_per_elem, double fwd_e, double bwd_e)
{
    workload_op *op = dlrm_op(bd, name, OP_ELEMENTWISE);
    op->m = elems;
    op->n = 1;
    op->fwd_flops = flops_per_elem * elems;
    op->bwd_flops = 2.0 * op->fwd_flops;
    op->fwd_bytes = fwd_e * elems;
    op->bwd_bytes = bwd_e * elems;
    return op;
}

/* Linear layers with a ReLU after each (the bias-ReLU is its own elementwise kernel, as in apex's
 * fused MLP that DLE runs: read and write forward; backward one kernel reading the gradient and
 * the output, writing the GEMMs' input and the bias gradient); the top MLP's last layer (the
 * logit) has none. Returns the output width. */
static int add_mlp(dlrm_builder *bd, const char *prefix, double b, int in, const int *widths, int n,
                   int last_relu)
{
    char name[48];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s.%d", prefix, i);
        dlrm_gemm(bd, name, 1, b, widths[i], in, 1);
        if (i < n - 1 || last_relu) {
            snprintf(name, sizeof name, "%s.%d.relu", prefix, i);
            dlrm_pointwise(bd, name, b * widths[i], 1.0, 2 * bd->e, 3 * bd->e);
        }
        in = widths[i];
    }
    return in;
}

static void add_tables(dlrm_builder *bd, const workload_dlrm *d, double b, emb_update update)
{
    double eb = precision_bytes(d->embedding_precision);
    for (int t = 0; t < d->n_tables; t++) {
        char name[48];
        snprintf(name, sizeof name, "tables.%d", t);
        workload_op *op = dlrm_op(bd, name, OP_EMBEDDING_BAG);
        workload_emb *e = &op->emb;
        e->rows = d->rows[t];
        e->dim = d->dim[t];
        e->elem_bytes = eb;
        e->lookups = b * d->pooling[t];
        e->unique =
            workload_dlrm_unique_rows(d->ids, d->alpha, d->unique_ratio, e->rows, e->lookups);
        e->bags = b;
        e->law = d->ids;
        e->alpha = d->alpha;
        e->update = update;
        op->m = b;
        op->n = e->dim;
        op->params = e->rows * e->dim;
        op->fwd_flops = e->lookups * e->dim; /* the sums of the pooling */
        op->bwd_flops = op->fwd_flops;
        op->act_bytes = e->lookups * 8.0; /* the ids, kept for the backward */
    }
}

/* Interaction of the bottom MLP's output (width `bottom`) with the tables' pooled vectors;
 * returns the width the top MLP reads. */
static int add_interaction(dlrm_builder *bd, const workload_dlrm *d, double b, int bottom)
{
    double cat = bottom;
    for (int t = 0; t < d->n_tables; t++)
        cat += d->dim[t];
    if (d->interaction == INTERACTION_DOT) {
        /* Z = X X^T per sample over the (tables + 1) vectors of dim `bottom`, then the strict
         * lower triangle gathered and concatenated with the bottom output */
        double f = d->n_tables + 1.0, pairs = f * (f - 1) / 2;
        workload_op *dot = dlrm_gemm(bd, "interaction.dot", b, f, f, bottom, 0);
        /* X X^T: X read once; backward dX = (dZ + dZ^T) X, one GEMM of the forward's FLOPs
         * reading dZ and X and writing dX */
        dot->gram = 1;
        dot->fwd_bytes = b * (f * bottom + f * f) * bd->e;
        dot->bwd_flops = dot->fwd_flops;
        dot->bwd_bytes = b * (f * f + 2.0 * f * bottom) * bd->e;
        dlrm_pointwise(bd, "interaction.gather", b * (pairs + bottom), 0.0, 2 * bd->e, 2 * bd->e);
        return (int)(pairs + bottom);
    }
    dlrm_pointwise(bd, "interaction.cat", b * cat, 0.0, 2 * bd->e, 2 * bd->e);
    if (d->interaction == INTERACTION_CAT)
        return (int)cat;
    /* DCNv2 low-rank cross layer: x_{l+1} = x0 * (U (V^T x_l) + c) + x_l */
    char name[48];
    for (int l = 0; l < d->dcn_layers; l++) {
        snprintf(name, sizeof name, "interaction.cross.%d.v", l);
        dlrm_gemm(bd, name, 1, b, d->dcn_rank, cat, 1)->params -= d->dcn_rank; /* V: no bias */
        snprintf(name, sizeof name, "interaction.cross.%d.u", l);
        dlrm_gemm(bd, name, 1, b, cat, d->dcn_rank, 1);
        snprintf(name, sizeof name, "interaction.cross.%d.mul_add", l);
        dlrm_pointwise(bd, name, b * cat, 2.0, 4 * bd->e, 5 * bd->e);
    }
    return (int)cat;
}

int workload_build_dlrm(const workload_model *m, int micro_batch, precision_t prec,
                        emb_update update, workload_graph *out, ps_error *err)
{
    assert(m && out && m->family == FAMILY_DLRM);
    const workload_dlrm *d = &m->dlrm;
    if (micro_batch <= 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "batch.micro",
                            "micro-batch must be positive, got %d", micro_batch);
    if (prec == PREC_FP8 || prec == PREC_FP4)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "precision",
                            "%s MLPs are not modelled for dlrm", precision_name(prec));
    memset(out, 0, sizeof *out);
    out->model = *m;
    out->micro_batch = micro_batch;
    out->precision = prec;
    dlrm_builder bd = {out, 0, precision_bytes(prec)};
    bd.cap = 2 * (d->n_bottom + d->n_top) + d->n_tables + 3 * d->dcn_layers + 4;
    out->ops = xcalloc((size_t)bd.cap, sizeof *out->ops);
    double b = micro_batch;

    int bottom = add_mlp(&bd, "bottom_mlp", b, d->dense_features, d->bottom_mlp, d->n_bottom, 1);
    add_tables(&bd, d, b, update);
    int top_in = add_interaction(&bd, d, b, bottom);
    add_mlp(&bd, "top_mlp", b, top_in, d->top_mlp, d->n_top, 0);
    /* sigmoid + binary cross-entropy over the logits (fp32) */
    dlrm_pointwise(&bd, "loss", b, 8.0, 8.0, 8.0);

    for (int i = 0; i < out->n_ops; i++) {
        out->total_params += out->ops[i].params;
        out->fwd_flops += out->ops[i].fwd_flops;
        out->bwd_flops += out->ops[i].bwd_flops;
    }
    out->active_params = out->total_params;
    return 0;
}
