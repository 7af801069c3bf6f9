/* test_chakra.c: `run --chakra DIR` through the binary: the Chakra execution traces of a 4-GPU
 * plan decoded with protobuf-c (workloads/trace/chakra.proto) and checked by hand, node by node
 * where it matters, and the option's errors. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra.pb-c.h"

#include "cli_util.h"
#include "suite_util.h"

static const char *dgx4 = "topology/clusters/dgx4.xml";

/* 2 layers of hidden 256 over 2 pipeline stages and 2 data-parallel replicas: 8 / (2 x 2) = 2
 * micro-batches of 2 per pipeline, no gradient overlap (one all-reduce per replica group). */
static const char *plan_yaml =
    "workload: {family: gpt, layers: 2, hidden: 256, heads: 4, seq: 128, vocab: 1024}\n"
    "batch: {global: 8, micro: 2}\n"
    "precision: bf16\n"
    "optimizer: adam\n"
    "strategy:\n"
    "  tensor: {degree: 1}\n"
    "  pipeline: {degree: 2, schedule: 1f1b}\n"
    "  data: {degree: 2, overlap: false}\n"
    "  recompute: none\n";

/* One rank's file: the metadata's version and the nodes, in file order. */
typedef struct et_file {
    char version[16];
    ChakraProtoMsg__Node **nodes;
    int n;
} et_file;

/* A base-128 varint at *pos of buf[len]; advances *pos. */
static uint64_t varint(const uint8_t *buf, size_t len, size_t *pos)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        ck_assert_msg(*pos < len, "a length runs past the end of the file");
        uint8_t b = buf[(*pos)++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    ck_abort_msg("a length of more than 10 bytes");
    return 0;
}

static et_file read_et(const char *path)
{
    size_t len = 0;
    uint8_t *buf = (uint8_t *)slurp(path, &len);
    size_t pos = 0;
    uint64_t n = varint(buf, len, &pos);
    ck_assert(pos + n <= len);
    ChakraProtoMsg__GlobalMetadata *meta =
        chakra_proto_msg__global_metadata__unpack(NULL, (size_t)n, buf + pos);
    ck_assert_ptr_nonnull(meta);
    et_file f = {.nodes = NULL, .n = 0};
    snprintf(f.version, sizeof f.version, "%s", meta->version);
    chakra_proto_msg__global_metadata__free_unpacked(meta, NULL);
    pos += n;
    while (pos < len) {
        n = varint(buf, len, &pos);
        ck_assert(pos + n <= len);
        f.nodes = realloc(f.nodes, (size_t)(f.n + 1) * sizeof *f.nodes);
        f.nodes[f.n] = chakra_proto_msg__node__unpack(NULL, (size_t)n, buf + pos);
        ck_assert_ptr_nonnull(f.nodes[f.n]);
        f.n++;
        pos += n;
    }
    free(buf);
    return f;
}

static void free_et(et_file *f)
{
    for (int i = 0; i < f->n; i++)
        chakra_proto_msg__node__free_unpacked(f->nodes[i], NULL);
    free(f->nodes);
}

static const ChakraProtoMsg__AttributeProto *attr(const ChakraProtoMsg__Node *n, const char *k)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (!strcmp(n->attr[i]->name, k))
            return n->attr[i];
    ck_abort_msg("node %llu (%s) has no attribute %s", (unsigned long long)n->id, n->name, k);
    return NULL;
}

static int count(const et_file *f, ChakraProtoMsg__NodeType type, const char *name_prefix)
{
    int c = 0;
    for (int i = 0; i < f->n; i++)
        c += f->nodes[i]->type == type &&
             !strncmp(f->nodes[i]->name, name_prefix, strlen(name_prefix));
    return c;
}

/* The k-th node (0-based) of a type whose name starts with name_prefix. */
static const ChakraProtoMsg__Node *nth(const et_file *f, ChakraProtoMsg__NodeType type,
                                       const char *name_prefix, int k)
{
    for (int i = 0; i < f->n; i++)
        if (f->nodes[i]->type == type &&
            !strncmp(f->nodes[i]->name, name_prefix, strlen(name_prefix)) && k-- == 0)
            return f->nodes[i];
    ck_abort_msg("no such node: %s", name_prefix);
    return NULL;
}

/* Whether node n depends on node id d. */
static int depends(const ChakraProtoMsg__Node *n, uint64_t d)
{
    for (size_t i = 0; i < n->n_data_deps; i++)
        if (n->data_deps[i] == d)
            return 1;
    return 0;
}

/* Whether node `to` is reachable from node `from` over data dependencies in f. */
static int reaches(const et_file *f, uint64_t from, uint64_t to)
{
    if (from == to)
        return 1;
    const ChakraProtoMsg__Node *n = NULL;
    for (int i = 0; i < f->n; i++)
        if (f->nodes[i]->id == to)
            n = f->nodes[i];
    ck_assert_ptr_nonnull(n);
    for (size_t i = 0; i < n->n_data_deps; i++)
        if (reaches(f, from, n->data_deps[i]))
            return 1;
    return 0;
}

static const ChakraProtoMsg__NodeType COMP = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE,
                                      SEND = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE,
                                      RECV = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE,
                                      COLL = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;

START_TEST(four_gpu_plan_as_chakra)
{
    char *dir = make_tmpdir();
    char *strat = write_tmp_file(dir, "plan.yaml", plan_yaml), *cl = src_path(dgx4);
    char *out = tmp_path(dir, "et");
    const char *args[] = {"run", strat, "--cluster", cl, "--chakra", out, "-q", NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);

    /* ranks 0, 1: stage 0 of replicas 0 and 1; ranks 2, 3: stage 1 (the node names and the
     * sends' peers below say so) */
    et_file f[4];
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "et/protosim.%d.et", k);
        char *path = tmp_path(dir, name);
        f[k] = read_et(path);
        free(path);
        ck_assert_str_eq(f[k].version, "0.0.4");
        /* node ids are the file order */
        for (int i = 0; i < f[k].n; i++)
            ck_assert_uint_eq(f[k].nodes[i]->id, (uint64_t)i);
    }
    /* Each rank, by hand: per micro-batch (2) a forward and a backward, each behind the
     * pipeline's runtime unit (4 in all); 2 pipeline sends (activations forward on stage 0,
     * gradients backward on stage 1) and 2 receives of the other kind; one gradient all-reduce
     * (no overlap); the optimizer step: 14 nodes. */
    for (int k = 0; k < 4; k++) {
        int stage0 = k < 2;
        ck_assert_int_eq(f[k].n, 14);
        ck_assert_int_eq(count(&f[k], COMP, stage0 ? "fwd stage 0" : "fwd stage 1"), 2);
        ck_assert_int_eq(count(&f[k], COMP, stage0 ? "bwd stage 0" : "bwd stage 1"), 2);
        ck_assert_int_eq(count(&f[k], COMP, "pipeline runtime"), 4);
        ck_assert_int_eq(count(&f[k], COMP, "optimizer step"), 1);
        ck_assert_int_eq(count(&f[k], SEND, stage0 ? "pp send activations" : "pp send grad"), 2);
        ck_assert_int_eq(count(&f[k], RECV, stage0 ? "pp send grad" : "pp send activations"), 2);
        ck_assert_int_eq(count(&f[k], COLL, "dp grad all-reduce"), 1);
    }
    /* activations and their gradients: micro-batch 2 x seq 128 x hidden 256 x 2 bytes */
    const ChakraProtoMsg__Node *send0 = nth(&f[0], SEND, "pp send activations", 0);
    ck_assert_int_eq(attr(send0, "comm_size")->int64_val, 2 * 128 * 256 * 2);
    ck_assert_int_eq(attr(send0, "comm_src")->int32_val, 0);
    int peer = attr(send0, "comm_dst")->int32_val; /* rank 0's stage-1 partner */
    ck_assert(peer == 2 || peer == 3);
    /* the send waits for the forward it carries; the receive on the peer has the same tag, and
     * the peer's first forward waits for it */
    const ChakraProtoMsg__Node *fwd0 = nth(&f[0], COMP, "fwd stage 0", 0);
    ck_assert(depends(send0, fwd0->id));
    const ChakraProtoMsg__Node *recv0 = nth(&f[peer], RECV, "pp send activations", 0);
    ck_assert_int_eq(attr(recv0, "comm_tag")->int32_val, attr(send0, "comm_tag")->int32_val);
    ck_assert_int_eq(attr(recv0, "comm_src")->int32_val, 0);
    ck_assert_int_eq(attr(recv0, "comm_dst")->int32_val, peer);
    const ChakraProtoMsg__Node *pfwd0 = nth(&f[peer], COMP, "fwd stage 1", 0);
    ck_assert(reaches(&f[peer], recv0->id, pfwd0->id));
    /* stage 0's first backward waits for the gradient its partner sends back */
    const ChakraProtoMsg__Node *grad0 = nth(&f[peer], SEND, "pp send grad", 0);
    const ChakraProtoMsg__Node *rgrad0 = nth(&f[0], RECV, "pp send grad", 0);
    ck_assert_int_eq(attr(rgrad0, "comm_tag")->int32_val, attr(grad0, "comm_tag")->int32_val);
    ck_assert(reaches(&f[0], rgrad0->id, nth(&f[0], COMP, "bwd stage 0", 0)->id));
    /* the stream's order: the second forward after the first, the optimizer after both
     * backwards and the all-reduce */
    ck_assert(reaches(&f[0], fwd0->id, nth(&f[0], COMP, "fwd stage 0", 1)->id));
    const ChakraProtoMsg__Node *ar = nth(&f[0], COLL, "dp grad all-reduce", 0);
    const ChakraProtoMsg__Node *opt = nth(&f[0], COMP, "optimizer step", 0);
    ck_assert(reaches(&f[0], ar->id, opt->id));
    ck_assert(reaches(&f[0], nth(&f[0], COMP, "bwd stage 0", 1)->id, ar->id));
    /* the all-reduce: fp32 gradients of stage 0's parameters, by hand: word and position
     * embeddings 1024 x 256 + 128 x 256, layer 0's 12 x 256^2 + 13 x 256 */
    ck_assert_int_eq(attr(ar, "comm_type")->int64_val,
                     CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE);
    ck_assert_int_eq(attr(ar, "comm_size")->int64_val,
                     4 * (1024 * 256 + 128 * 256 + 12 * 256 * 256 + 13 * 256));
    /* its process group holds ranks 0 and 1, the two replicas of stage 0 */
    char *groups_path = tmp_path(dir, "et/comm_group.json");
    cJSON *groups = parse_json_file(groups_path);
    const cJSON *pg = cJSON_GetObjectItemCaseSensitive(groups, attr(ar, "pg_name")->string_val);
    ck_assert(cJSON_IsArray(pg) && cJSON_GetArraySize(pg) == 2);
    ck_assert_int_eq(cJSON_GetArrayItem(pg, 0)->valueint, 0);
    ck_assert_int_eq(cJSON_GetArrayItem(pg, 1)->valueint, 1);
    /* compute: the modelled time in microseconds; the backward's is longer */
    ck_assert_uint_gt(fwd0->duration_micros, 0);
    ck_assert_uint_gt(nth(&f[0], COMP, "bwd stage 0", 0)->duration_micros, fwd0->duration_micros);
    for (int k = 0; k < 4; k++)
        free_et(&f[k]);
    cJSON_Delete(groups);
    free(groups_path), free(strat), free(cl), free(out);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(chakra_dir_errors_name_it)
{
    char *dir = make_tmpdir();
    char *strat = write_tmp_file(dir, "plan.yaml", plan_yaml), *cl = src_path(dgx4);
    char *file = write_tmp_file(dir, "a-file", "x\n");
    const char *args[] = {"run", strat, "--cluster", cl, "--chakra", file, "-q", NULL};
    run_result r = run_protosim(dir, args);
    const char *needles[] = {"a-file", "--chakra", "not a directory", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    const char *missing[] = {"run", strat, "--cluster", cl, "--chakra", NULL};
    r = run_protosim(dir, missing);
    expect_exit(&r, 1);
    ck_assert_ptr_nonnull(strstr(r.err, "--chakra"));
    run_free(&r);
    free(strat), free(cl), free(file);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {four_gpu_plan_as_chakra, chakra_dir_errors_name_it, NULL};
    return suite_run(suite_of("chakra", "chakra", 120, tests));
}
