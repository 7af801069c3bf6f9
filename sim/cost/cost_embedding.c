/* cost_embedding.c: the embedding lookup (FBGEMM's table-batched embedding, TBE): bytes moved by
 * the forward gather and pooling and by the backward's sparse fused update, from the id law. */
#include "cost.h"

#include <assert.h>
#include <math.h>

/* Bytes of an id and of an offset (int64, as TorchRec's KeyedJaggedTensor hands them to TBE). */
static const double EMB_ID_BYTES = 8.0;
/* The backward sorts (id, position) pairs by id (cub's radix sort): per pass it reads and writes
 * a 64-bit key and a 32-bit value; one pass per 8 bits of the row index. */
static const double EMB_SORT_PAIR_BYTES = 12.0;
static const double EMB_SORT_DIGIT_BITS = 8.0;
/* Fraction of the HBM bandwidth the backward sustains: a sort, then per distinct row a gather of
 * its gradients, a read-modify-write of the row and of its optimizer state at scattered
 * addresses. Fitted on the two H100 TBE backward rows of dlrm_public.csv (sgd and adam, the same
 * tables and ids: 0.50 and 0.51 of 3.35 TB/s; docs/cost-model.md, "DLRM"). The forward needs no
 * constant of its own: with the L2 rule it runs at the memory-bound kernels' COST_MEM_EFF. */
static const double EMB_BWD_EFF = 0.50;

/* The GPUs a table's rows are split over (1: the whole table). */
static double row_shards(const workload_emb *e)
{
    return e->row_shards > 1 ? e->row_shards : 1.0;
}

/* Rows the forward reads from HBM: the lookups that miss the L2 share `l2` (bytes) of the kernel
 * (the share's capacity holds the table's hottest rows; lookups of other rows miss), and never
 * fewer than the distinct rows (each is read once). With unique_ratio (no ranks) the whole
 * touched set hits when it fits the share, none of the repeats otherwise. A row-wise slice of
 * s GPUs: ids are hashed, so its hottest K rows are the table's ranks 1, s + 1, ... and its
 * lookups hit them with the share the table's K x s hottest rows have. */
double cost_embedding_rows_read(const workload_emb *e, double l2)
{
    assert(e && e->rows >= 1 && e->dim > 0 && e->elem_bytes > 0 && l2 >= 0);
    double row_bytes = e->dim * e->elem_bytes, hot_share;
    if (e->law == IDS_UNIQUE_RATIO)
        hot_share = e->unique * row_bytes <= l2 ? 1.0 : 0.0;
    else
        hot_share = workload_dlrm_hot_share(e->law, e->alpha, e->rows,
                                            floor(l2 / row_bytes) * row_shards(e));
    return fmax(e->unique, e->lookups * (1.0 - hot_share));
}

double cost_embedding_bytes(const workload_emb *e, op_pass pass, double l2)
{
    assert(e && e->lookups >= e->unique && e->bags > 0);
    double row_bytes = e->dim * e->elem_bytes;
    double ids = e->lookups * EMB_ID_BYTES + (e->bags + 1) * EMB_ID_BYTES;
    double pooled = e->bags * e->dim * e->elem_bytes; /* outputs, or their gradients */
    if (pass == PASS_FWD)
        return cost_embedding_rows_read(e, l2) * row_bytes + ids + pooled;
    double passes = ceil(log2(fmax(e->rows / row_shards(e), 2.0)) / EMB_SORT_DIGIT_BITS);
    /* the fused update sorts the ids; the sparse one index-adds without sorting */
    double sort = e->sparse_update ? 0.0 : e->lookups * EMB_SORT_PAIR_BYTES * 2.0 * passes;
    /* each lookup gathers its bag's gradient; each distinct row and its state are read and
     * written once (the sparse update: the table's rows by its index_add, no state) */
    double grads = e->lookups * e->dim * e->elem_bytes;
    double state = e->dim * 4.0 * emb_update_state_words(e->update);
    return ids + sort + grads + e->unique * 2.0 * (row_bytes + state);
}

/* The sparse (unfused) update's streaming passes over its one fp32 gradient row per lookup:
 * written by the backward, read and written by the optimizer's scaling (a new tensor), read by
 * its index_add; read and written once more by fp16 AMP's unscale. */
static const double EMB_SPARSE_PASSES = 4.0, EMB_SPARSE_UNSCALE_PASSES = 2.0;

double cost_embedding_sparse_stream_bytes(const workload_emb *e)
{
    assert(e);
    if (!e->sparse_update)
        return 0.0;
    return e->lookups * e->dim * 4.0 *
           (EMB_SPARSE_PASSES + (e->amp_unscale ? EMB_SPARSE_UNSCALE_PASSES : 0.0));
}

double cost_embedding_seconds(const workload_emb *tables, int n, op_pass pass,
                              const device_spec *dev)
{
    assert(tables && n > 0 && dev && dev->hbm_bw > 0);
    assert(dev->l2_bytes > 0); /* callers refuse devices without l2_mib */
    double bytes = 0.0, stream = 0.0;
    int extra = 0; /* kernels of the sparse update's streaming passes */
    for (int t = 0; t < n; t++) {
        bytes += cost_embedding_bytes(&tables[t], pass, dev->l2_bytes / n);
        if (pass == PASS_BWD && tables[t].sparse_update) {
            stream += cost_embedding_sparse_stream_bytes(&tables[t]);
            extra = tables[t].amp_unscale ? 2 : 1; /* the scaling, and the unscale */
        }
    }
    double eff = pass == PASS_FWD ? cost_memory_efficiency() : EMB_BWD_EFF;
    int kernels = (pass == PASS_FWD ? 1 : 2) + extra;
    /* the sparse update's plain streaming passes run at the memory-bound kernels' efficiency */
    double t = fmax(bytes / (dev->hbm_bw * eff) + stream / (dev->hbm_bw * cost_memory_efficiency()),
                    kernels * cost_kernel_min_seconds()) +
               kernels * cost_cuda_kernel_gpu_overhead_seconds();
    assert(t >= 0 && isfinite(t));
    return t;
}
