/* cluster.h: the machine a plan runs on: GPUs in rank order, their device specs, and the
 * SimGrid platform loaded into the engine. Also the generator of common DGX clusters. */
#ifndef PROTOSIM_CLUSTER_H
#define PROTOSIM_CLUSTER_H

#include <stddef.h>
#include <stdio.h>

#include "../sim/base/error.h"
#include "../sim/base/vocab.h"
#include "node_model.h"

/* A GPU's architecture (devices.yaml `architecture`): the generation whose fitted figures a
 * device entry takes where it gives none of its own (devices.c's table) and whose per-generation
 * kernel-model parameters the cost model uses. */
typedef enum gpu_arch {
    ARCH_PASCAL,
    ARCH_VOLTA,
    ARCH_TURING,
    ARCH_AMPERE,
    ARCH_ADA,
    ARCH_HOPPER,
    ARCH_BLACKWELL,
    ARCH_CDNA1,
    ARCH_CDNA2,
    ARCH_CDNA3,
    ARCH_COUNT
} gpu_arch;

extern const enum_names gpu_arch_names; /* "pascal", "volta", ... as devices.yaml spells them */
/* devices.yaml `gemm_model`: "roofline" (0), "tile" (1), device_spec.gemm_tiles's values */
extern const enum_names gemm_model_names;

/* A GPU architecture's tile-and-wave GEMM parameters (the model: sim/cost/cost_tile.c; fitted by
 * scripts/fit_tiles on vidur's per-op fp16 GEMM timings of the generation's GPU): the output tiles
 * its tensor-core GEMM library chooses among (tm x tn), e the tensor pipe's efficiency inside a
 * tile, feed the operand bytes the L2 delivers to an SM per FLOP of its fp16 peak, bh the share of
 * HBM bandwidth a GEMM streams at, fixed a tile's prologue and epilogue in FLOPs of the SM's fp16
 * peak. */
typedef struct gemm_tile_params {
    const int (*tiles)[2];
    int n_tiles;
    double e, feed, bh, fixed;
} gemm_tile_params;

/* The architecture's tile parameters; NULL where none were fitted (all but Ampere and Hopper). */
const gemm_tile_params *gpu_arch_tile_params(gpu_arch a);

/* One GPU model's datasheet figures (dense peaks). Loaded from topology/devices/devices.yaml. */
typedef struct device_spec {
    char name[48];
    gpu_arch arch;
    double peak_flops[PREC_COUNT]; /* FLOP/s indexed by precision_t: FP32, TF32, FP16, BF16,
                                      FP8 (0: no FP8 tensor cores) */
    double hbm_bw;                 /* bytes/s */
    double hbm_bytes;              /* capacity */
    int sms;                       /* streaming multiprocessors */
    /* NCCL's behaviour on this GPU generation, fitted to nccl-tests where measured (-1 for the
     * times, 0 for the efficiencies: not given, the executor's defaults apply): a collective's
     * fixed cost, the latency of one algorithm step, the payload share of NVLink bandwidth, and
     * NVLS's (0: the GPU has no NVLS). */
    double coll_launch_s, coll_step_s, coll_efficiency, nvls_efficiency;
    /* Fraction of the tensor-core peak a large, well-shaped GEMM sustains on this GPU in
     * training (devices.yaml `gemm_efficiency`); 0: the cost model's default (sim/cost/cost.c). */
    double gemm_efficiency;
    /* The same for fp32 GEMMs on the SIMT cores (no tensor cores; devices.yaml
     * `sgemm_efficiency`, fitted per GPU on its kernel data); 0: the cost model's default. */
    double sgemm_efficiency;
    /* The share of the native tensor-core rate that Ampere's warp-level MMA (mma.sync, the
     * FlashAttention-2 kernels) reaches on this GPU, in (0, 1] (devices.yaml
     * `warp_mma_fraction`): 1 where warp MMA is the native path (Volta to Ada), below it on
     * Hopper (warp-group MMA); 0: not given, and a warp-mma attention kernel on the GPU is
     * refused (strategy_check_devices). */
    double warp_mma_fraction;
    /* L2 cache capacity in bytes (devices.yaml `l2_mib`, architecture whitepapers); 0: not
     * given, and what needs it (the embedding lookup's cache rule, sim/cost/cost_embedding.c)
     * refuses the device. */
    double l2_bytes;
    /* How its tensor-core GEMMs are costed (devices.yaml `gemm_model`): 0, the roofline with the
     * shape's tile, wave and K-depth efficiency (the default); 1, tiles in waves over the SMs
     * (sim/cost/cost_tile.c), for the architectures with fitted tile parameters (Ampere, Hopper). */
    int gemm_tiles;
} device_spec;

typedef struct device_table {
    device_spec *specs;
    int n;
} device_table;

/* Load a device table (YAML list of mappings with keys name, architecture, fp32_tflops,
 * tf32_tflops, fp16_tflops, bf16_tflops, hbm_gbps, hbm_gib or hbm_gb, sms; optional fp8_tflops,
 * nccl_launch_us, nccl_step_us, nvlink_efficiency, nvls_efficiency, gemm_efficiency,
 * sgemm_efficiency, warp_mma_fraction, l2_mib). An optional figure the entry does not give is
 * its architecture's (devices.c), where the architecture has one. */
int device_table_load(const char *path, device_table *out, ps_error *err);
/* The table every command uses: data_dir's topology/devices/devices.yaml (ps_data_dir() when
 * data_dir is NULL or empty), then each file PROTOSIM_DEVICES names (colon-separated, in order;
 * `protosim ... --devices FILE` appends to it): an entry of such a file replaces the entry of
 * its name or adds one. Errors name the file, line and key. */
int device_table_load_all(const char *data_dir, device_table *out, ps_error *err);
/* Where device_table_load_all reads ("topology/devices/devices.yaml and F1, F2"), for messages
 * that say a GPU is not known. */
void device_table_sources(char *buf, size_t size);
const device_spec *device_table_find(const device_table *t, const char *name);
void device_table_free(device_table *t);

typedef struct cluster {
    char file[512];
    int n_gpus;
    char **host_names; /* [n_gpus], rank order */
    /* [n_gpus]: each rank's SimGrid host (an sg_host_t; void here so that this header needs no
     * SimGrid include), looked up once: SimGrid 3.32 finds a host by name with a linear search
     * of the netzones, which is quadratic over 16,384 GPUs. cluster_host returns it typed. */
    void **sg_hosts;
    /* [n_gpus]: the GPU's node, numbered densely in rank order: nodes are told apart by the
     * host property `node` when every GPU has one (generated platforms), else by the netzone
     * directly holding the GPU (hand-written platforms). */
    int *node_of_rank;
    int n_nodes;
    const device_spec **device; /* [n_gpus], points into `devices` */
    /* [n_gpus]: factor on the GPU's kernel times, from the host property
     * <prop id="slowdown" value="1.2"/> (a straggler 20% slower); 1 when absent. Host (CPU)
     * launch overheads are not scaled. A value that is not a finite number > 0 is a PS_EINPUT
     * error naming the file and host. */
    double *slowdown;
    device_table devices;
    /* What the plan takes of the file's GPUs (cluster_select): the file's GPU count, and each
     * rank's rank in the file ([n_gpus]; NULL while the plan takes every GPU in file order). */
    int file_gpus;
    int *file_rank;
} cluster;

/* Load the platform into the engine cluster_engine_start started (below; loading before is a
 * PS_EINTERNAL error). One per process: SimGrid cannot be reset. GPUs are the hosts with a `gpu`
 * property; ranks follow the `rank` property if every GPU has one, else natural name order.
 * Malformed XML, unknown GPU names, duplicate or gapped ranks, and a `node` property on some GPUs
 * but not all are PS_EINPUT errors; so are the platform mistakes platform_scan.h lists (the file
 * is read with libxml2 first: SimGrid would abort, crash or hang on them), which make every
 * pair of GPUs joined by a route, and links outside the CLUSTER_LINK_* ranges below.
 * data_dir locates topology/devices/devices.yaml. */
int cluster_load(const char *platform_path, const char *data_dir, cluster *out, ps_error *err);

/* The physical ranges cluster_load accepts for every link (PS_EINPUT errors naming the link and
 * its line outside them): bandwidth from 1 MB/s (slower than any interconnect a training job
 * uses; slower would stretch a transfer past the engine's nanosecond precision) to 10 PB/s
 * (above any aggregate link the generator writes), latency from 0 to 1 s. */
#define CLUSTER_LINK_BW_MIN      1e6
#define CLUSTER_LINK_BW_MAX      1e16
#define CLUSTER_LINK_LATENCY_MAX 1.0
void cluster_free(cluster *c);

/* *view: the GPUs ranks[0..n) of c (distinct ranks of c, each below c->n_gpus) as ranks
 * 0..n-1 in that order: a plan on part of a cluster. Nodes are numbered again densely in order
 * of first use; the platform keeps every host and link (the others sit idle), and the view
 * shares c's device table and platform: free it with cluster_view_free, before c.
 * view->file_gpus and view->file_rank say what it took of the file. A bad list is a PS_EINPUT
 * error whose message starts with `option`: a rank outside the cluster, one listed twice. */
int cluster_view(const cluster *c, const int *ranks, int n, const char *option, cluster *view,
                 ps_error *err);
void cluster_view_free(cluster *view);

/* "0-7", "0-3,8-11": the file ranks c's GPUs are (a contiguous run is written as a range);
 * at most size - 1 characters, cut with "..." when longer. */
void cluster_selected_text(const cluster *c, char *buf, size_t size);

/* The platform route from rank a's GPU to rank b's: its bottleneck bandwidth (bytes/s, the
 * smallest over its links; INFINITY for a == b or a route without links) and its total latency
 * (seconds, 0 for a == b). The compiler uses it to decide whether ranks behave alike. Needs the
 * platform cluster_load loaded. */
void cluster_route(const cluster *c, int a, int b, double *bandwidth, double *latency);
/* The route latency between two hosts of the loaded platform (sg_host_t; 0 for a host and
 * itself), as SimGrid sums it: on a built platform from the description, without SimGrid's
 * route object (the executor asks for every edge of every group's patterns). */
double cluster_host_route_latency(const void *a, const void *b);
/* 1 when cluster_route may be called from another thread while the engine simulates (a built
 * platform: its zone answers from the description and its own copies of the bandwidths, read
 * only); 0 for a platform file, whose routes SimGrid looks up itself. */
int cluster_routes_concurrent(void);

/* Every link of the loaded platform (NICs, NVLink, PCIe, switches) at `factor` times its
 * bandwidth, latencies unchanged: `protosim replay --what-if network:F`. Returns the number of
 * links changed, or -1 (nothing changed) when a link would leave [CLUSTER_LINK_BW_MIN,
 * CLUSTER_LINK_BW_MAX] (network:1e300 hung the engine). Needs the platform cluster_load loaded. */
int cluster_scale_bandwidth(const cluster *c, double factor);

/* The SimGrid shim (topology/platform.cpp): SimGrid reports platform errors as C++ exceptions,
 * which would abort a C caller, so the C++ side catches them and hands back text. For topology/
 * and sim/htae only; the rest of protosim never sees the engine. */

/* Start the SimGrid engine (ptask_L07, TCP-gamma 0, fine timing precision, quiet logs): the
 * first step of every simulation, before cluster_load, once per process (SimGrid cannot be
 * reset; later calls do nothing). The environment variable PROTOSIM_SIMGRID_LOG, e.g.
 * "root.thres:warning", replaces the default critical-only logging. */
void cluster_engine_start(void);
/* Load the platform into the started engine. Returns 0, or -1 with the exception's message in
 * msg and its line in *line (0 when the message names none), or -2 when the engine was not
 * started. For cluster_load. */
int cluster_platform_load(const char *path, char *msg, size_t msg_cap, int *line);
/* Build the platform of a cluster description (cluster_desc.h) into the started engine, which
 * takes d (freed with the engine, whose routes need it): one zone of protosim's own, every GPU
 * host and link of d's layout, routes computed by its fabric rules. hosts[rank] gets each GPU's
 * sg_host_t. Returns 0, or -1 with a message (a platform already loaded), or -2 when the engine
 * was not started. For cluster_load. */
struct cluster_desc;
int cluster_platform_build(struct cluster_desc *d, void **hosts, char *msg, size_t msg_cap);
/* The links' bandwidths were changed (cluster_scale_bandwidth): a built platform's copies of
 * them, which cluster_route reads, are read again. */
void cluster_platform_bandwidths_changed(void);
/* Name of the netzone directly holding `host` (an sg_host_t), or NULL if it has none. The string
 * lives as long as the engine. */
const char *cluster_platform_host_zone(const void *host);

/* The network joining the nodes (platform_write.c's header comment has the model):
 * - CLUSTER_FABRIC_FAT_TREE: all NICs of a node on one leaf switch, nodes_per_leaf nodes per leaf,
 *   the leaves joined by a non-blocking spine through uplinks of 1/oversubscription of what
 *   their nodes' NICs carry;
 * - CLUSTER_FABRIC_RAIL: rail-optimized (DGX SuperPOD): in each scalable unit of nodes_per_leaf
 *   nodes, NIC i of every node on leaf switch i; the units' leaves joined by the spine. */
typedef enum cluster_fabric { CLUSTER_FABRIC_FAT_TREE, CLUSTER_FABRIC_RAIL } cluster_fabric;

/* "fat-tree", "rail": the --fabric names, indexed by cluster_fabric. */
extern const enum_names cluster_fabric_names;

/* What `protosim cluster` writes (--format): a SimGrid XML platform, every route listed (its size
 * grows with the nodes), or a cluster description (cluster_desc.h: the node models once, a few
 * kilobytes whatever the node count, built into SimGrid directly). */
typedef enum cluster_format { CLUSTER_FORMAT_XML, CLUSTER_FORMAT_DESCRIPTION } cluster_format;

/* Options of `protosim cluster KIND --nodes N` or `protosim cluster --nodes KIND:N[,KIND:N...]`.
 * Zero/negative fields take each kind's defaults. */
typedef struct cluster_gen_opts {
    int nodes;
    /* --nodes KIND:N[,KIND:N...]: node groups of different kinds, numbered in the order given
     * (then `nodes` is ignored and the generator's kind must be NULL); NULL: `nodes` of kind. */
    const char *node_groups;
    int nics_per_node;       /* --nics */
    double nic_gbps;         /* --nic-gbps: per NIC, per direction, in Gb/s */
    int gpus_per_node;       /* --gpus-per-node (default 8) */
    double oversubscription; /* --oversubscription: leaf uplinks carry 1/X; 1 = non-blocking */
    cluster_fabric fabric;   /* --fabric (default fat tree) */
    /* --nodes-per-leaf: nodes per leaf switch (fat tree; default 32 / NICs per node, a 64-port
     * leaf with half its ports down) or per scalable unit (rail; default 32, a SuperPOD SU) */
    int nodes_per_leaf;
    /* --gpu: the GPU of every node (a topology/devices/devices.yaml name) instead of its kind's,
     * the rest of the node unchanged (DGX A100 40 GB: dgx-a100 --gpu A100-SXM4-40GB); NULL:
     * the kind's. An unknown name is a PS_EINPUT error naming --gpu. */
    const char *gpu;
    cluster_format format; /* --format (cluster_generate; default XML) */
} cluster_gen_opts;

/* Write a SimGrid platform (or, with opts->format, a cluster description) for KIND (dgx-v100, dgx-2, dgx-a100, dgx-h100, dgx-h200, dgx-b200),
 * or (kind NULL) for the
 * groups of opts->node_groups. Ranks are node-major; each node has its kind's GPU model, NVLink,
 * NICs and intra-node topology; --nics/--nic-gbps/--gpus-per-node apply to every node. Errors of
 * the group list are PS_EINPUT with a message starting "--nodes:". */
int cluster_generate(const char *kind, const cluster_gen_opts *opts, FILE *out, ps_error *err);

/* Write a SimGrid platform of n_groups groups of nodes, group i being group_nodes[i] copies of
 * *models[i], numbered and ranked node-major in that order, joined by the fabric of opts (its
 * nodes, node_groups, nics_per_node, nic_gbps and gpus_per_node fields are ignored: the models
 * carry them). Every GPU host carries the properties gpu, rank and node (its node's number).
 * cluster_generate builds the DGX templates' models and calls it; so does `protosim cluster
 * --from-hwloc`. PS_EINPUT errors name the option: an unknown fabric, nodes_per_leaf < 0,
 * oversubscription in (0, 1), or a rail fabric whose cross-rail routes SimGrid could not pick
 * unambiguously (platform_write.c). */
int cluster_write_platform(const node_model *const *models, const int *group_nodes, int n_groups,
                           const cluster_gen_opts *opts, FILE *out, ps_error *err);

/* The same cluster as a description (cluster_desc.c has the format): the same hosts, links,
 * properties and routes once loaded, with nodes_per_leaf and oversubscription written out. The
 * rail check of cluster_write_platform does not apply: routes are not searched. */
int cluster_write_description(const node_model *const *models, const int *group_nodes, int n_groups,
                              const cluster_gen_opts *opts, FILE *out, ps_error *err);

#endif
