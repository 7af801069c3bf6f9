/* strategy_children.h: the reader of strategy.children, strategy_children.c's, which the loader
 * in strategy.c calls (strategies/strategy*.c only), and the COUNT of a static table both use. */
#ifndef PROTOSIM_STRATEGY_CHILDREN_H
#define PROTOSIM_STRATEGY_CHILDREN_H

#include "strategy.h"
#include "../sim/base/yaml_read.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* strategy.children (strategy_children.c): per-layer overrides into s->overrides (llm models),
 * per-table sharding into s->table_* (dlrm models). 0, or the error code with c->err set. */
int strategy_load_children(yread_ctx *c, ynode *n, strategy *s);

#endif
