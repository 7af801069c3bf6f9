/* test_chakra.c: `run --chakra DIR` through the binary: the Chakra execution traces of a 4-GPU
 * plan decoded with protobuf-c (workloads/trace/chakra.proto) and checked by hand, node by node
 * where it matters, and the option's errors. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chakra.pb-c.h"

#include "../sim/engine/htae.h"
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

/* ---- Chakra in: ETs written here, replayed through the binary ---- */

/* One node to write: id, name, type, dependencies, duration, and integer / string attributes
 * (names NULL-terminated). */
typedef struct et_node {
    uint64_t id;
    const char *name;
    ChakraProtoMsg__NodeType type;
    uint64_t deps[4];
    int n_deps;
    uint64_t duration_us;
    const char *int_names[6];
    int64_t ints[6];
    const char *pg; /* pg_name, or NULL */
} et_node;

static void put_varint_msg(FILE *f, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = malloc(n + 1), len[10];
    protobuf_c_message_pack(m, buf);
    int k = 0;
    for (uint64_t v = n; k == 0 || v; v >>= 7)
        len[k++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
    ck_assert_uint_eq(fwrite(len, 1, (size_t)k, f), (size_t)k);
    ck_assert_uint_eq(fwrite(buf, 1, n, f), n);
    free(buf);
}

/* DIR/NAME: the metadata, then the nodes. */
static char *write_et(const char *dir, const char *name, const et_node *nodes, int n)
{
    char *path = tmp_path(dir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ChakraProtoMsg__GlobalMetadata meta = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    meta.version = (char *)"0.0.4";
    put_varint_msg(f, &meta.base);
    for (int i = 0; i < n; i++) {
        ChakraProtoMsg__Node nd = CHAKRA_PROTO_MSG__NODE__INIT;
        ChakraProtoMsg__AttributeProto a[7], *ap[7];
        size_t na = 0;
        for (int k = 0; k < 6 && nodes[i].int_names[k]; k++) {
            chakra_proto_msg__attribute_proto__init(&a[na]);
            a[na].name = (char *)nodes[i].int_names[k];
            a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
            a[na].int64_val = nodes[i].ints[k];
            ap[na] = &a[na];
            na++;
        }
        if (nodes[i].pg) {
            chakra_proto_msg__attribute_proto__init(&a[na]);
            a[na].name = (char *)"pg_name";
            a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
            a[na].string_val = (char *)nodes[i].pg;
            ap[na] = &a[na];
            na++;
        }
        nd.id = nodes[i].id;
        nd.name = (char *)nodes[i].name;
        nd.type = nodes[i].type;
        nd.n_data_deps = (size_t)nodes[i].n_deps;
        nd.data_deps = (uint64_t *)nodes[i].deps;
        nd.duration_micros = nodes[i].duration_us;
        nd.n_attr = na;
        nd.attr = ap;
        put_varint_msg(f, &nd.base);
    }
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* `replay PATHS --cluster CLUSTER --json` through the binary: its predicted step (s). */
static double replayed_step(const char *dir, const char *const *paths, int n, const char *cluster)
{
    char *cl = src_path(cluster), *json = tmp_path(dir, "replay.json");
    const char *args[16] = {"replay"};
    int k = 1;
    for (int i = 0; i < n; i++)
        args[k++] = paths[i];
    const char *tail[] = {"--cluster", cl, "--json", json, "-q", NULL};
    for (int i = 0; tail[i]; i++)
        args[k++] = tail[i];
    args[k] = NULL;
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *root = parse_json_file(json);
    double t = num_field(root, "iteration_time_s");
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(root, "measured_step_s")));
    cJSON_Delete(root);
    free(cl), free(json);
    return t;
}

static const char *two_gpus = "tests/data/htae/two-100GBps.xml"; /* 100 GB/s, no latency */

/* One rank: a (100 us), b (200 us, after a), c (50 us, independent): one compute stream runs them
 * one after another in a dependency order, 350 us. */
START_TEST(chakra_compute_nodes_replay_by_hand)
{
    char *dir = make_tmpdir();
    const et_node n[] = {
        {.id = 1, .name = "a", .type = COMP, .duration_us = 100},
        {.id = 2, .name = "b", .type = COMP, .deps = {1}, .n_deps = 1, .duration_us = 200},
        {.id = 3, .name = "c", .type = COMP, .duration_us = 50}};
    char *p = write_et(dir, "one.et", n, 3);
    const char *paths[] = {p};
    ck_assert_double_eq_tol(replayed_step(dir, paths, 1, two_gpus), 350e-6, 1e-9);
    free(p);
    remove_tmpdir(dir);
}
END_TEST

/* Two ranks: rank 0 computes 100 us, then sends 1 GB to rank 1 (tag 7); rank 1 receives it and
 * computes 50 us. The send starts at 100 us, pays the executor's point-to-point launch (10 us)
 * and moves 1e9 bytes at 100e9 bytes/s (10 ms); rank 1's compute follows: 100 + 10 + 10000 + 50
 * us. */
START_TEST(chakra_send_recv_replay_by_hand)
{
    htae_options o;
    htae_default_options(&o);
    char *dir = make_tmpdir();
    const et_node r0[] = {{.id = 0, .name = "a", .type = COMP, .duration_us = 100},
                          {.id = 1,
                           .name = "send",
                           .type = SEND,
                           .deps = {0},
                           .n_deps = 1,
                           .int_names = {"comm_src", "comm_dst", "comm_tag", "comm_size"},
                           .ints = {0, 1, 7, 1000000000}}};
    const et_node r1[] = {
        {.id = 0,
         .name = "recv",
         .type = RECV,
         .int_names = {"comm_src", "comm_dst", "comm_tag", "comm_size"},
         .ints = {0, 1, 7, 1000000000}},
        {.id = 1, .name = "b", .type = COMP, .deps = {0}, .n_deps = 1, .duration_us = 50}};
    char *p0 = write_et(dir, "job.0.et", r0, 2), *p1 = write_et(dir, "job.1.et", r1, 2);
    const char *paths[] = {p0, p1};
    double want = 100e-6 + o.p2p_launch_s + 1e9 / 100e9 + 50e-6;
    ck_assert_double_eq_tol(replayed_step(dir, paths, 2, two_gpus), want, 1e-9);
    free(p0), free(p1);
    remove_tmpdir(dir);
}
END_TEST

/* run --chakra's 4-GPU plan read back: every rank replays; the step has its GPU work (the
 * longest rank's compute nodes) and no more than run's iteration, which also pays the host. */
START_TEST(chakra_round_trip)
{
    char *dir = make_tmpdir();
    char *strat = write_tmp_file(dir, "plan.yaml", plan_yaml), *cl = src_path(dgx4);
    char *out = tmp_path(dir, "et"), *json = tmp_path(dir, "run.json");
    const char *args[] = {"run", strat,    "--cluster", cl,   "--chakra",
                          out,   "--json", json,        "-q", NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *root = parse_json_file(json);
    double run_s = num_field(root, "iteration_time_s");
    cJSON_Delete(root);
    char *paths[4];
    double busiest = 0;
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof name, "et/protosim.%d.et", k);
        paths[k] = tmp_path(dir, name);
        et_file f = read_et(paths[k]);
        double sum = 0;
        for (int i = 0; i < f.n; i++)
            if (f.nodes[i]->type == COMP)
                sum += f.nodes[i]->duration_micros * 1e-6;
        busiest = sum > busiest ? sum : busiest;
        free_et(&f);
    }
    double step = replayed_step(dir, (const char *const *)paths, 4, dgx4);
    ck_assert_msg(step >= busiest - 1e-9 && step <= run_s, "replayed %g s, compute %g s, run %g s",
                  step, busiest, run_s);
    for (int k = 0; k < 4; k++)
        free(paths[k]);
    free(strat), free(cl), free(out), free(json);
    remove_tmpdir(dir);
}
END_TEST

/* Bad Chakra input is an input error naming the file and the node. */
static void expect_replay_error(const char *dir, const char *const *paths, int n,
                                const char *const *needles)
{
    char *cl = src_path(two_gpus);
    const char *args[16] = {"replay"};
    int k = 1;
    for (int i = 0; i < n; i++)
        args[k++] = paths[i];
    args[k++] = "--cluster";
    args[k++] = cl;
    args[k] = NULL;
    run_result r = run_protosim(dir, args);
    expect_bad_input(&r, needles);
    run_free(&r);
    free(cl);
}

START_TEST(chakra_input_errors_name_the_node)
{
    char *dir = make_tmpdir();
    const et_node unknown_dep[] = {{.id = 5, .name = "a", .type = COMP, .deps = {9}, .n_deps = 1}};
    char *p = write_et(dir, "dep.et", unknown_dep, 1);
    const char *n1[] = {"dep.et", "nodes[0]", "depends on node id 9, which the file lacks", NULL};
    expect_replay_error(dir, (const char *const[]){p}, 1, n1);
    free(p);
    const et_node cycle[] = {{.id = 1, .name = "a", .type = COMP, .deps = {2}, .n_deps = 1},
                             {.id = 2, .name = "b", .type = COMP, .deps = {1}, .n_deps = 1}};
    p = write_et(dir, "cycle.et", cycle, 2);
    const char *n2[] = {"cycle.et", "nodes[0]", "a cycle among the file's nodes", NULL};
    expect_replay_error(dir, (const char *const[]){p}, 1, n2);
    free(p);
    const et_node mem[] = {
        {.id = 1, .name = "load", .type = CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE}};
    p = write_et(dir, "mem.et", mem, 1);
    const char *n3[] = {"mem.et", "nodes[0]", "node type 2 is not modelled", NULL};
    expect_replay_error(dir, (const char *const[]){p}, 1, n3);
    free(p);
    const et_node bcast[] = {{.id = 1,
                              .name = "b",
                              .type = COLL,
                              .int_names = {"comm_type", "comm_size"},
                              .ints = {5, 1000}}};
    p = write_et(dir, "bcast.et", bcast, 1);
    const char *n4[] = {"bcast.et", "nodes[0]", "comm_type 5: only ALL_REDUCE", NULL};
    expect_replay_error(dir, (const char *const[]){p}, 1, n4);
    free(p);
    /* a process group with no comm_group.json beside the traces */
    const et_node pg[] = {{.id = 1,
                           .name = "ar",
                           .type = COLL,
                           .int_names = {"comm_type", "comm_size"},
                           .ints = {0, 1000},
                           .pg = "7"}};
    p = write_et(dir, "pg.et", pg, 1);
    const char *n5[] = {"pg.et", "nodes[0]", "process group '7' needs", "comm_group.json", NULL};
    expect_replay_error(dir, (const char *const[]){p}, 1, n5);
    free(p);
    /* a send nobody receives */
    const et_node s0[] = {{.id = 0,
                           .name = "send",
                           .type = SEND,
                           .int_names = {"comm_src", "comm_dst", "comm_tag", "comm_size"},
                           .ints = {0, 1, 3, 100}}};
    const et_node s1[] = {{.id = 0, .name = "b", .type = COMP, .duration_us = 5}};
    char *q0 = write_et(dir, "x.0.et", s0, 1), *q1 = write_et(dir, "x.1.et", s1, 1);
    const char *n6[] = {"x.0.et", "nodes[0]",
                        "a send of rank 0 to rank 1, tag 3, has no matching receive", NULL};
    expect_replay_error(dir, (const char *const[]){q0, q1}, 2, n6);
    /* two files without ranks in their names */
    char *u0 = write_et(dir, "u.et", s1, 1), *u1 = write_et(dir, "v.et", s1, 1);
    const char *n7[] = {"u.et", "NAME.RANK.et", NULL};
    expect_replay_error(dir, (const char *const[]){u0, u1}, 2, n7);
    /* a Kineto trace beside a Chakra one */
    char *kin = src_path("tests/data/replay/sync.json");
    const char *n8[] = {"1 of the 2 traces are Chakra execution traces", NULL};
    expect_replay_error(dir, (const char *const[]){kin, q1}, 2, n8);
    /* not protobuf at all */
    char *junk = write_tmp_file(dir, "junk.et", "\xff\xff\xff");
    const char *n9[] = {"junk.et", "metadata", "runs past the end of the file", NULL};
    expect_replay_error(dir, (const char *const[]){junk}, 1, n9);
    free(q0), free(q1), free(u0), free(u1), free(kin), free(junk);
    remove_tmpdir(dir);
}
END_TEST

int main(void)
{
    const TTest *const tests[] = {four_gpu_plan_as_chakra,
                                  chakra_dir_errors_name_it,
                                  chakra_compute_nodes_replay_by_hand,
                                  chakra_send_recv_replay_by_hand,
                                  chakra_round_trip,
                                  chakra_input_errors_name_the_node,
                                  NULL};
    return suite_run(suite_of("chakra", "chakra", 120, tests));
}
