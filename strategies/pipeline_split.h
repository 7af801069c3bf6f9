/* pipeline_split.h: strategy.c's reader of `pipeline.layers` (the split rule itself,
 * strategy_chunk_layers, is public in strategy.h; both live in pipeline_split.c). */
#ifndef PROTOSIM_PIPELINE_SPLIT_H
#define PROTOSIM_PIPELINE_SPLIT_H

#include "../sim/base/yaml_read.h"
#include "strategy.h"

/* pipeline.layers: a list of each model chunk's transformer layers (>= 0 each) into
 * s->chunk_layers (heap-owned), its location into s->chunk_layers_loc. */
int pipeline_split_load_layers(yread_ctx *c, ynode *n, strategy *s);

#endif
