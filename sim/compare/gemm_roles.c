/* gemm_roles.c: the GEMMs of a compared step by layer role (gemm_roles.h): the plan's multisets
 * per role, the rows they merge into, the traced GEMMs matched to them. */
#include "gemm_roles.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../sim/base/xalloc.h"
#include "../../workloads/trace/trace_kinds.h"

/* What a row's name says of each role. */
static const char *const role_words[ROLE_COUNT] = {
    "attention QKV",  "attention output", "MLP in", "MLP out",
    "router/experts", "LM head",          "other",  "(no shapes in the trace)",
};

/* The role of a plan op by its name ("layers.3.attn.qkv", "lm_head"). */
static int role_of_op(const char *name)
{
    static const struct {
        const char *part;
        int role;
    } parts[] = {
        {".attn.qkv", ROLE_QKV},     {".attn.proj", ROLE_ATTN_OUT}, {".mlp.fc1", ROLE_MLP_IN},
        {".mlp.fc2", ROLE_MLP_OUT},  {".mlp.router", ROLE_MOE},     {".mlp.experts.", ROLE_MOE},
        {".mlp.shared.", ROLE_MOE},  {"lm_head", ROLE_HEAD},        {"head.dense", ROLE_HEAD},
        {"head.decoder", ROLE_HEAD}, {".attn.q_down", ROLE_QKV},    {".attn.q_up", ROLE_QKV},
        {".attn.kv_down", ROLE_QKV}, {".attn.kv_up", ROLE_QKV},     {".attn.q", ROLE_QKV},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (strstr(name, parts[i].part))
            return parts[i].role;
    return ROLE_OTHER;
}

/* {m, k, n} ascending. */
static void multiset(double m, double k, double n, double d[3])
{
    double v[3] = {m, k, n};
    for (int i = 1; i < 3; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    memcpy(d, v, sizeof v);
}

/* Equal multisets: dimensions are whole numbers (a sharded plan's may not be, then it matches
 * no traced one). */
static int same(const double a[3], const double b[3])
{
    return fabs(a[0] - b[0]) < 0.5 && fabs(a[1] - b[1]) < 0.5 && fabs(a[2] - b[2]) < 0.5;
}

void gemm_roles_init(gemm_roles *g)
{
    memset(g, 0, sizeof *g);
    for (int q = 0; q < ROLE_COUNT; q++)
        g->row[q] = q;
}

void gemm_roles_free(gemm_roles *g)
{
    free(g->shapes);
    g->shapes = NULL;
}

void gemm_roles_add_op(gemm_roles *g, const workload_op *op, double seconds)
{
    gemm_shape s = {{0}, role_of_op(op->name)};
    multiset(op->m, op->k, op->n, s.d);
    g->predicted_s[s.role] += seconds;
    for (int i = 0; i < g->n_shapes; i++)
        if (g->shapes[i].role == s.role && same(g->shapes[i].d, s.d))
            return;
    xgrow(&g->shapes, sizeof *g->shapes, (size_t)g->n_shapes + 1, &g->cap_shapes);
    g->shapes[g->n_shapes++] = s;
}

/* Roles sharing a multiset into one row, the row of the first of them (a few roles: merge
 * until nothing changes). */
static void merge_rows(gemm_roles *g)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (int a = 0; a < g->n_shapes; a++)
            for (int b = 0; b < g->n_shapes; b++) {
                int ra = g->row[g->shapes[a].role], rb = g->row[g->shapes[b].role];
                if (ra >= rb || !same(g->shapes[a].d, g->shapes[b].d))
                    continue;
                for (int q = 0; q < ROLE_COUNT; q++)
                    if (g->row[q] == rb)
                        g->row[q] = ra;
                changed = 1;
            }
    }
}

/* The measured side's sums over the reported steps. */
typedef struct measuring {
    const gemm_roles *g;
    const trace_job *j;
    const trace_rank *r;
    double role_s[ROLE_COUNT], total_s;
    int shapes; /* a GEMM with recorded shapes was seen */
} measuring;

/* The role of a traced GEMM: the first plan multiset equal to its launching op's. */
static int role_of_call(const measuring *x, const trace_call *c)
{
    int a, w;
    double b, m, n, k, d[3];
    if (!trace_call_gemm(x->j, c, &a, &w, &b, &m, &n, &k) || b != 1)
        return ROLE_OTHER; /* attention's batched GEMMs, or shapes not recorded */
    multiset(m, k, n, d);
    for (int i = 0; i < x->g->n_shapes; i++)
        if (same(x->g->shapes[i].d, d))
            return x->g->shapes[i].role;
    return ROLE_OTHER;
}

static void measure_event(void *ctx, uint32_t i, int kind)
{
    measuring *x = ctx;
    if (kind != KIND_GEMM)
        return;
    const trace_op *o = &x->r->ops[i];
    const trace_call *c = &x->r->calls[o->call];
    double s = o->start + o->seconds - o->start; /* as the split counts it */
    x->shapes |= c->n_in > 0;
    x->role_s[role_of_call(x, c)] += s;
    x->total_s += s;
}

void gemm_roles_measure(gemm_roles *g, const trace_job *j, int r)
{
    measuring x = {.g = g, .j = j, .r = &j->ranks[r]};
    trace_step_events(j, r, measure_event, &x);
    double per_step = 1.0 / (x.r->n_steps - x.r->first_reported);
    g->no_shapes = !x.shapes;
    if (g->no_shapes) {
        double predicted = 0;
        for (int q = 0; q < ROLE_COUNT; q++) {
            predicted += g->predicted_s[q];
            g->predicted_s[q] = g->measured_s[q] = 0;
            g->row[q] = ROLE_NO_SHAPES;
        }
        g->predicted_s[ROLE_NO_SHAPES] = predicted;
        g->measured_s[ROLE_NO_SHAPES] = x.total_s * per_step;
        return;
    }
    merge_rows(g);
    for (int q = 0; q < ROLE_COUNT; q++)
        g->measured_s[q] = x.role_s[q] * per_step;
    for (int q = 0; q < ROLE_COUNT; q++)
        if (g->row[q] != q) {
            g->predicted_s[g->row[q]] += g->predicted_s[q];
            g->measured_s[g->row[q]] += g->measured_s[q];
            g->predicted_s[q] = g->measured_s[q] = 0;
        }
}

void gemm_roles_name(const gemm_roles *g, int role, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "GEMM");
    const char *sep = " ";
    if (g->no_shapes) {
        snprintf(buf + n, cap - (size_t)n, " %s", role_words[ROLE_NO_SHAPES]);
        return;
    }
    for (int q = 0; q < ROLE_COUNT && n >= 0 && (size_t)n < cap; q++) {
        if (g->row[q] != role || (q == ROLE_MLP_OUT && g->row[ROLE_MLP_IN] == role))
            continue; /* another row's, or said with MLP in */
        const char *w = q == ROLE_MLP_IN && g->row[ROLE_MLP_OUT] == role ? "MLP" : role_words[q];
        n += snprintf(buf + n, cap - (size_t)n, "%s%s", sep, w);
        sep = " + ";
    }
}
