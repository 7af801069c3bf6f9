/* node_model.c: freeing a node model (node_model.h). */
#include "node_model.h"

#include <stdlib.h>
#include <string.h>

void node_model_free(node_model *m)
{
    free(m->links);
    free(m->gpu_gpu);
    free(m->nic_of_gpu);
    free(m->gpu_nic);
    memset(m, 0, sizeof *m);
}
