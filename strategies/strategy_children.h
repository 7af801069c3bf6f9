/* strategy_internal.h: what the files of the strategy loader share (strategies/strategy*.c
 * only): the section readers that live outside strategy.c. */
#ifndef PROTOSIM_STRATEGY_INTERNAL_H
#define PROTOSIM_STRATEGY_INTERNAL_H

#include "strategy.h"
#include "../sim/base/yaml_read.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* strategy.children (strategy_children.c): per-layer overrides into s->overrides (llm models),
 * per-table sharding into s->table_* (dlrm models). 0, or the error code with c->err set. */
int strategy_load_children(yread_ctx *c, yaml_node_t *n, strategy *s);

#endif
