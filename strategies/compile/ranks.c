/* ranks.c: where the compiler's ranks sit: the rank of a (tensor, data-context, stage) index,
 * a stage's ranks by stage index, and Megatron-Core's regrouping of them for expert
 * parallelism. Every other file of the compiler asks here; this one asks nobody. */
#include <assert.h>

#include "compile_ctx.h"

int compile_rank_of(const strategy *s, int t, int d, int p)
{
    assert(t >= 0 && t < s->tp && d >= 0 && d < s->dp * s->cp && p >= 0 && p < s->pp);
    int coord[4] = {0, 0, 0, 0}, size[4] = {1, 1, 1, 1};
    for (int i = 0; i < 4; i++) {
        switch (s->order[i]) {
        case AXIS_TENSOR:
            coord[i] = t;
            size[i] = s->tp;
            break;
        case AXIS_CONTEXT:
            coord[i] = d % s->cp;
            size[i] = s->cp;
            break;
        case AXIS_DATA:
            coord[i] = d / s->cp;
            size[i] = s->dp;
            break;
        case AXIS_PIPELINE:
            coord[i] = p;
            size[i] = s->pp;
            break;
        }
    }
    int r = coord[0] + size[0] * (coord[1] + size[1] * (coord[2] + size[2] * coord[3]));
    assert(r >= 0 && r < s->tp * s->cp * s->dp * s->pp);
    return r;
}

int compile_expert_stage_index(const compile_ctx *cx, int et, int e, int edp)
{
    assert(et >= 0 && et < cx->etp && e >= 0 && e < cx->ep && edp >= 0 && edp < cx->edp);
    return et + cx->etp * (e + cx->ep * edp);
}

void compile_expert_coords(const compile_ctx *cx, int i, int *et, int *e, int *edp)
{
    assert(i >= 0 && i < cx->tp * cx->dp);
    *et = i % cx->etp;
    *e = (i / cx->etp) % cx->ep;
    *edp = i / (cx->etp * cx->ep);
}

int compile_stage_rank(const compile_ctx *cx, int i, int p)
{
    assert(i >= 0 && i < cx->tp * cx->dp);
    return compile_rank_of(cx->s, i % cx->tp, i / cx->tp, p);
}

/* The routed-expert load of the ranks at stage index i: the busiest rank's for the first EP
 * index (it holds the busiest expert), the others' otherwise; 1 without an expert layout. */
double compile_expert_load(const compile_ctx *cx, int i)
{
    if (!cx->expert_layout)
        return 1.0;
    int et, e, edp;
    compile_expert_coords(cx, i, &et, &e, &edp);
    return e == 0 ? workload_expert_rank_load(&cx->s->model, cx->ep)
                  : workload_expert_other_rank_load(&cx->s->model, cx->ep);
}
