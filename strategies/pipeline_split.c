/* pipeline_split.c: which transformer layers each model chunk holds (strategy_chunk_layers):
 * the even split, or Megatron-Core's uneven options and an explicit list, each error at its key. */
#include "pipeline_split.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "../sim/base/limits.h"
#include "../sim/base/xalloc.h"

/* Where a pipeline split rule points: the key's value, else the pipeline degree. */
static src_loc split_loc(const strategy *s, src_loc l)
{
    return l.line ? l : s->pp_loc;
}

/* `layers`: every chunk listed, adding up to the model's layers, none empty but the first
 * (it holds the embedding) and the last (the LM head and loss). */
static int split_listed(const strategy *s, int mcs, int *n, ps_error *err)
{
    src_loc l = s->chunk_layers_loc;
    const char *field = "strategy.pipeline.layers";
    if (s->account_embedding || s->account_loss || s->first_stage_layers || s->last_stage_layers)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                            "layers lists every model chunk's layers: it cannot be combined with "
                            "account_for_embedding, account_for_loss, first_stage_layers or "
                            "last_stage_layers");
    if (s->n_chunk_layers != mcs)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                            "lists %d model chunks, but pipeline degree %d x virtual stages %d "
                            "makes %d",
                            s->n_chunk_layers, s->pp, mcs / s->pp, mcs);
    long sum = 0;
    for (int i = 0; i < mcs; i++) {
        sum += s->chunk_layers[i];
        if (s->chunk_layers[i] == 0 && i > 0 && i < mcs - 1)
            return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                                "model chunk %d (stage %d) holds no layer: only the first chunk "
                                "(the embedding) or the last (the LM head and loss) may",
                                i, strategy_stage_of_chunk(s, i));
        n[i] = s->chunk_layers[i];
    }
    if (sum != s->model.layers)
        return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, field,
                            "the model chunks' layers add up to %ld, but the model has %d", sum,
                            s->model.layers);
    return 0;
}

/* first_stage_layers / last_stage_layers (Megatron-Core's num_layers_in_first/last_pipeline_
 * stage): those stages hold that many, shared equally by their chunks; the middle stages split
 * the rest evenly, and each middle stage's share evenly over its chunks. */
static int split_first_last(const strategy *s, int v, int *n, ps_error *err)
{
    int f = s->first_stage_layers, l = s->last_stage_layers, pp = s->pp;
    const char *field =
        f ? "strategy.pipeline.first_stage_layers" : "strategy.pipeline.last_stage_layers";
    src_loc at = split_loc(s, f ? s->first_stage_loc : s->last_stage_loc);
    if (s->account_embedding || s->account_loss)
        return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, field,
                            "first_stage_layers and last_stage_layers cannot be combined with "
                            "account_for_embedding or account_for_loss (as Megatron-Core)");
    if (pp < 2)
        return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, field,
                            "needs a pipeline degree >= 2, got %d", pp);
    const int given[2] = {f, l};
    const src_loc locs[2] = {s->first_stage_loc, s->last_stage_loc};
    const char *names[2] = {"first_stage_layers", "last_stage_layers"};
    for (int i = 0; i < 2; i++)
        if (given[i] % v) {
            src_loc k = split_loc(s, locs[i]);
            char key[64];
            snprintf(key, sizeof key, "strategy.pipeline.%s", names[i]);
            return ps_error_set(err, PS_EINPUT, s->file, k.line, k.column, key,
                                "%s %d is not a multiple of virtual_stages %d (the stage's "
                                "chunks hold equal shares)",
                                names[i], given[i], v);
        }
    int middle_stages = pp - (f > 0) - (l > 0);
    long middle = (long)s->model.layers - f - l;
    if (middle < 0 || (middle > 0) != (middle_stages > 0))
        return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, field,
                            "first_stage_layers %d + last_stage_layers %d leave %ld of the "
                            "model's %d layers for %d middle stages",
                            f, l, middle, s->model.layers, middle_stages);
    if (middle_stages > 0 && (middle % middle_stages || (middle / middle_stages) % v))
        return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column, field,
                            "the %ld remaining layers do not split evenly over %d middle stages "
                            "x virtual_stages %d",
                            middle, middle_stages, v);
    int per_middle = middle_stages > 0 ? (int)(middle / middle_stages) : 0;
    for (int k = 0; k < v; k++)
        for (int p = 0; p < pp; p++)
            n[strategy_chunk_of_stage(s, p, k)] = (p == 0 && f        ? f
                                                   : p == pp - 1 && l ? l
                                                                      : per_middle) /
                                                  v;
    return 0;
}

static int chunk_layers(const strategy *s, int v, int mcs, int *n, ps_error *err)
{
    int L = s->model.layers, pp = s->pp;
    if (s->chunk_layers)
        return split_listed(s, mcs, n, err);
    if (s->first_stage_layers || s->last_stage_layers)
        return split_first_last(s, v, n, err);

    /* the even split, the embedding and the loss counted as a layer each when accounted for */
    long slots = (long)L + s->account_embedding + s->account_loss;
    if (slots % mcs) {
        if (s->account_embedding || s->account_loss) {
            src_loc at =
                split_loc(s, s->account_embedding ? s->account_embedding_loc : s->account_loss_loc);
            return ps_error_set(err, PS_EINPUT, s->file, at.line, at.column,
                                s->account_embedding ? "strategy.pipeline.account_for_embedding"
                                                     : "strategy.pipeline.account_for_loss",
                                "the model's %d layers%s%s = %ld do not split evenly over "
                                "pipeline degree %d x virtual stages %d",
                                L, s->account_embedding ? " + embedding" : "",
                                s->account_loss ? " + loss" : "", slots, pp, v);
        }
        if (v > 1)
            return ps_error_set(err, PS_EINPUT, s->file, s->pp_loc.line, s->pp_loc.column,
                                "strategy.pipeline.degree",
                                "pipeline degree %d x virtual_stages %d = %d does not divide "
                                "the model's %d layers (uneven stages: account_for_embedding, "
                                "account_for_loss, first_stage_layers, last_stage_layers or "
                                "layers)",
                                pp, v, mcs, L);
        return ps_error_set(err, PS_EINPUT, s->file, s->pp_loc.line, s->pp_loc.column,
                            "strategy.pipeline.degree",
                            "pipeline degree %d does not divide the model's %d layers (uneven "
                            "stages: account_for_embedding, account_for_loss, "
                            "first_stage_layers, last_stage_layers or layers)",
                            pp, L);
    }
    for (int i = 0; i < mcs; i++)
        n[i] = (int)(slots / mcs);
    n[0] -= s->account_embedding;
    n[mcs - 1] -= s->account_loss;
    assert(n[0] >= 0 && n[mcs - 1] >= 0);
    return 0;
}

int strategy_chunk_layers(const strategy *s, int *count, ps_error *err)
{
    if (strategy_two_copies(s)) { /* each copy split as a one-chunk pipeline: the slices */
        strategy one = *s;
        one.schedule = SCHED_1F1B;
        return strategy_chunk_layers(&one, count, err);
    }
    int v = strategy_chunks_per_stage(s);
    long mcs = (long)s->pp * v;
    /* every chunk but the first and the last holds a layer, whatever the split */
    if (mcs > (long)s->model.layers + 2)
        return ps_error_set(err, PS_EINPUT, s->file, s->pp_loc.line, s->pp_loc.column,
                            "strategy.pipeline.degree",
                            "pipeline degree %d x virtual stages %d = %ld model chunks is more "
                            "than the model's %d layers + 2 (the embedding, the loss)",
                            s->pp, v, mcs, s->model.layers);
    int *n = count ? count : xmalloc((size_t)mcs * sizeof *n);
    int rc = chunk_layers(s, v, (int)mcs, n, err);
    if (!count)
        free(n);
    return rc;
}

int pipeline_split_load_layers(yread_ctx *c, ynode *n, strategy *s)
{
    if (!yread_is_list(n))
        return yread_fail(c, n, "strategy.pipeline.layers",
                          "expected a list of each model chunk's layers, got %s", yread_kind(n));
    int count = yread_list_len(n);
    if (count == 0)
        return yread_fail(c, n, "strategy.pipeline.layers", "the list is empty");
    if (count > PS_MAX_LAYERS + 2)
        return yread_fail(c, n, "strategy.pipeline.layers",
                          "%d model chunks: more than %d (protosim's limit of layers, + 2)", count,
                          PS_MAX_LAYERS + 2);
    s->chunk_layers = xcalloc((size_t)count, sizeof *s->chunk_layers);
    s->n_chunk_layers = count;
    s->chunk_layers_loc = yread_loc(n);
    for (int i = 0; i < count; i++) {
        ynode *item = yread_list_item(c, n, i);
        char field[64];
        snprintf(field, sizeof field, "strategy.pipeline.layers[%d]", i);
        if (yread_count(c, item, field, 0, PS_MAX_LAYERS, &s->chunk_layers[i]))
            return c->err->code;
    }
    return 0;
}
