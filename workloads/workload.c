/* workload.c: models read from YAML (workloads/models/NAME.yaml or a path).
 * The op-graph builders live in transformer.c; this file only knows model descriptions. */
#include "workload.h"
#include "../sim/base/limits.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- model mapping ---- */

static const char *const family_table[] = {"gpt", "bert", "llama", "dlrm"};
const enum_names model_family_names = ENUM_NAMES(family_table);
static const char *const activation_table[] = {"gelu", "gelu_tanh", "relu", "swiglu",
                                               "squared_relu"};
const enum_names model_activation_names = ENUM_NAMES(activation_table);
static const char *const positions_table[] = {"learned", "rotary", "alibi"};
const enum_names model_positions_names = ENUM_NAMES(positions_table);
static const char *const window_layers_table[] = {"all", "alternate"};
const enum_names model_window_layers_names = ENUM_NAMES(window_layers_table);
/* `mla` is a name users write for DeepSeek's latent attention: known, so that it is refused
 * as not modelled rather than as a typo */
enum { ATTN_UNFUSED, ATTN_FLASH, ATTN_MLA };
static const char *const attention_table[] = {"unfused", "flash", "mla"};
static const char *const kernels_table[] = {"fused", "eager"};
static const char *const rmsnorm_kernel_table[] = {"composite", "fused"};
static const char *const cross_entropy_table[] = {"fp32", "logits"};
static const char *const attention_kernel_table[] = {"native", "warp-mma"};
const enum_names model_attention_kernel_names = ENUM_NAMES(attention_kernel_table);

void workload_model_init(workload_model *m, model_family family, int layers, int hidden, int heads,
                         int seq, int vocab)
{
    assert(m && hidden > 0 && heads > 0);
    memset(m, 0, sizeof *m);
    int llama = family == FAMILY_LLAMA;
    m->family = family;
    m->layers = layers;
    m->hidden = hidden;
    m->heads = heads;
    m->seq = seq;
    m->vocab = vocab;
    m->kv_heads = heads;
    m->head_dim = hidden % heads == 0 ? hidden / heads : 0;
    m->activation = llama ? ACT_SWIGLU : ACT_GELU;
    m->ffn_hidden = llama ? 0 : 4 * hidden;
    m->positions = llama ? POS_ROTARY : POS_LEARNED;
    m->tied_embeddings = !llama;
    m->bias = !llama;
    m->dropout = !llama;
    m->imbalance = 1.0;
}

int workload_layer_is_moe(const workload_model *m, int l)
{
    return m->experts > 0 && l >= m->dense_layers;
}

int workload_layer_window(const workload_model *m, int l)
{
    assert(m && l >= 0 && m->sliding_window >= 0);
    if (m->window_layers == WINDOW_ALTERNATE && l % 2 == 1)
        return 0;
    return m->sliding_window;
}

double workload_expert_rank_load(const workload_model *m, int ep)
{
    assert(m && ep >= 1);
    int e = m->experts;
    if (e <= 0 || ep == 1)
        return 1.0;
    assert(e % ep == 0);
    double busiest = m->imbalance;
    if (m->capacity_factor > 0 && m->capacity_factor < busiest)
        busiest = m->capacity_factor;
    if (busiest <= 1.0)
        return 1.0;
    /* loads in units of the mean expert load: the busiest expert `busiest`, each other expert
     * (e - busiest) / (e - 1) */
    double others = e > 1 ? (e - busiest) / (e - 1) : 0.0;
    double per_rank = (double)e / ep;
    return (busiest + (per_rank - 1) * others) / per_rank;
}

double workload_expert_other_rank_load(const workload_model *m, int ep)
{
    assert(m && ep >= 1);
    if (m->experts <= 0 || ep == 1)
        return 1.0;
    /* every expert but the busiest carries (experts - top) / (experts - 1) mean loads */
    double top = m->imbalance;
    if (m->capacity_factor > 0 && m->capacity_factor < top)
        top = m->capacity_factor;
    if (top <= 1.0)
        return 1.0;
    return (m->experts - top) / (m->experts - 1);
}

int workload_model_check(const workload_model *m, int micro_batch, ps_error *err)
{
    if (m->family == FAMILY_DLRM)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.family",
                            "model '%s': dlrm plans are not simulated yet (issue 13: the model "
                            "and its lookup cost exist, the plans do not)",
                            m->name);
    if (m->layers <= 0 || m->hidden <= 0 || m->heads <= 0 || m->seq <= 0 || m->vocab <= 0 ||
        m->ffn_hidden <= 0 || m->kv_heads <= 0 || m->head_dim <= 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload",
                            "model '%s' has a non-positive dimension", m->name);
    if (m->heads % m->kv_heads != 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.kv_heads",
                            "kv_heads (%d) does not divide heads (%d)", m->kv_heads, m->heads);
    if (m->experts > 0 &&
        (m->experts_topk < 1 || m->experts_topk > m->experts || m->imbalance < 1.0 ||
         m->imbalance > m->experts || m->dense_layers < 0 || m->dense_layers >= m->layers ||
         (m->dense_layers > 0 && m->dense_ffn_hidden <= 0) || m->shared_experts < 0 ||
         m->capacity_factor < 0))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.experts",
                            "model '%s' has inconsistent mixture-of-experts settings", m->name);
    if (m->sliding_window < 0 ||
        (m->sliding_window > 0 && (!m->flash_attention || m->family == FAMILY_BERT)))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.sliding_window",
                            "model '%s': a sliding window needs a causal (gpt, llama) model with "
                            "`attention: flash`",
                            m->name);
    if (m->mla && (m->kv_lora_rank <= 0 || m->qk_nope_dim <= 0 || m->qk_rope_dim <= 0 ||
                   m->v_head_dim <= 0 || m->q_lora_rank < 0 || !m->flash_attention ||
                   m->kv_heads != m->heads || m->head_dim != m->qk_nope_dim + m->qk_rope_dim ||
                   m->sliding_window > 0 || m->positions != POS_ROTARY))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.attention",
                            "model '%s' has inconsistent latent-attention (mla) settings", m->name);
    if (m->mtp_layers < 0 || (m->mtp_layers > 0 && m->family == FAMILY_BERT))
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.mtp_layers",
                            "model '%s': multi-token prediction needs a decoder (gpt, llama)",
                            m->name);
    if (m->attention_kernel == ATTN_KERNEL_WARP_MMA && !m->flash_attention)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "workload.attention_kernel",
                            "model '%s': a warp-mma attention kernel needs `attention: flash`",
                            m->name);
    if (micro_batch <= 0)
        return ps_error_set(err, PS_EINPUT, "", 0, 0, "batch.micro",
                            "micro-batch must be positive, got %d", micro_batch);
    return 0;
}

/* The keys of a model mapping. Required: family and the five dimensions. */
enum {
    F_NAME,
    F_FAMILY,
    F_LAYERS,
    F_HIDDEN,
    F_HEADS,
    F_SEQ,
    F_VOCAB,
    F_FFN,
    F_ATTENTION,
    F_ATTENTION_KERNEL,
    F_KERNELS,
    F_RMSNORM_KERNEL,
    F_CROSS_ENTROPY,
    F_ACTIVATION,
    F_KV_HEADS,
    F_HEAD_DIM,
    F_TIED,
    F_POSITIONS,
    F_BIAS,
    F_DROPOUT,
    F_SLIDING_WINDOW,
    F_WINDOW_LAYERS,
    F_Q_LORA, /* first MLA key */
    F_KV_LORA,
    F_QK_NOPE,
    F_QK_ROPE,
    F_V_HEAD,
    F_MTP,
    F_EXPERTS, /* first MoE key */
    F_EXPERTS_TOPK,
    F_SHARED_EXPERTS,
    F_DENSE_LAYERS,
    F_DENSE_FFN,
    F_CAPACITY,
    F_IMBALANCE,
    F_COUNT
};
static const char *const model_keys[F_COUNT] = {"name",
                                                "family",
                                                "layers",
                                                "hidden",
                                                "heads",
                                                "seq",
                                                "vocab",
                                                "ffn_hidden",
                                                "attention",
                                                "attention_kernel",
                                                "kernels",
                                                "rmsnorm_kernel",
                                                "cross_entropy",
                                                "activation",
                                                "kv_heads",
                                                "head_dim",
                                                "tied_embeddings",
                                                "positions",
                                                "bias",
                                                "dropout",
                                                "sliding_window",
                                                "sliding_window_layers",
                                                "q_lora_rank",
                                                "kv_lora_rank",
                                                "qk_nope_head_dim",
                                                "qk_rope_head_dim",
                                                "v_head_dim",
                                                "mtp_layers",
                                                "experts",
                                                "experts_topk",
                                                "shared_experts",
                                                "dense_layers",
                                                "dense_ffn_hidden",
                                                "capacity_factor",
                                                "imbalance"};

static int read_name(yread_ctx *c, ynode *v, const char *field, workload_model *m)
{
    const char *s = yread_scalar(v);
    if (!s || !s[0])
        return yread_fail(c, v, field, "expected a name, got %s", yread_kind(v));
    if (strlen(s) >= sizeof m->name)
        return yread_fail(c, v, field, "name longer than %zu characters", sizeof m->name - 1);
    snprintf(m->name, sizeof m->name, "%s", s);
    return 0;
}

/* The optional keys over the family's defaults in m; enums through ints. */
static int read_optional(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    int attention = m->flash_attention, activation = (int)m->activation;
    int positions = (int)m->positions, window_layers = (int)m->window_layers;
    int attention_kernel = (int)m->attention_kernel;
    const yfield fields[] = {
        {"ffn_hidden", YFIELD_COUNT, &m->ffn_hidden, 1, PS_MAX_DIM, {0}},
        {"attention", YFIELD_ENUM, &attention, 0, 0, ENUM_NAMES(attention_table)},
        {"attention_kernel", YFIELD_ENUM, &attention_kernel, 0, 0, model_attention_kernel_names},
        {"kernels", YFIELD_ENUM, &m->eager_kernels, 0, 0, ENUM_NAMES(kernels_table)},
        {"rmsnorm_kernel", YFIELD_ENUM, &m->rmsnorm_fused, 0, 0, ENUM_NAMES(rmsnorm_kernel_table)},
        {"cross_entropy", YFIELD_ENUM, &m->loss_logits, 0, 0, ENUM_NAMES(cross_entropy_table)},
        {"activation", YFIELD_ENUM, &activation, 0, 0, model_activation_names},
        {"kv_heads", YFIELD_COUNT, &m->kv_heads, 1, PS_MAX_HEADS, {0}},
        {"head_dim", YFIELD_COUNT, &m->head_dim, 1, PS_MAX_DIM, {0}},
        {"tied_embeddings", YFIELD_BOOL, &m->tied_embeddings, 0, 0, {0}},
        {"positions", YFIELD_ENUM, &positions, 0, 0, model_positions_names},
        {"bias", YFIELD_BOOL, &m->bias, 0, 0, {0}},
        {"dropout", YFIELD_BOOL, &m->dropout, 0, 0, {0}},
        {"sliding_window", YFIELD_COUNT, &m->sliding_window, 1, PS_MAX_SEQ, {0}},
        {"sliding_window_layers", YFIELD_ENUM, &window_layers, 0, 0, model_window_layers_names},
        {"q_lora_rank", YFIELD_COUNT, &m->q_lora_rank, 1, PS_MAX_DIM, {0}},
        {"kv_lora_rank", YFIELD_COUNT, &m->kv_lora_rank, 1, PS_MAX_DIM, {0}},
        {"qk_nope_head_dim", YFIELD_COUNT, &m->qk_nope_dim, 1, PS_MAX_DIM, {0}},
        {"qk_rope_head_dim", YFIELD_COUNT, &m->qk_rope_dim, 1, PS_MAX_DIM, {0}},
        {"v_head_dim", YFIELD_COUNT, &m->v_head_dim, 1, PS_MAX_DIM, {0}},
        {"mtp_layers", YFIELD_COUNT, &m->mtp_layers, 0, PS_MAX_LAYERS, {0}},
        {"experts", YFIELD_COUNT, &m->experts, 1, PS_MAX_EXPERTS, {0}},
        {"experts_topk", YFIELD_COUNT, &m->experts_topk, 1, PS_MAX_EXPERTS, {0}},
        {"shared_experts", YFIELD_COUNT, &m->shared_experts, 0, PS_MAX_EXPERTS, {0}},
        {"dense_layers", YFIELD_COUNT, &m->dense_layers, 0, PS_MAX_LAYERS, {0}},
        {"dense_ffn_hidden", YFIELD_COUNT, &m->dense_ffn_hidden, 1, PS_MAX_DIM, {0}},
        {"capacity_factor", YFIELD_POSITIVE, &m->capacity_factor, 0, 0, {0}},
        {"imbalance", YFIELD_POSITIVE, &m->imbalance, 0, 0, {0}},
    };
    if (yread_fields(c, node, path, fields, (int)(sizeof fields / sizeof *fields)))
        return c->err->code;
    char field[160];
    m->mla = attention == ATTN_MLA;
    m->flash_attention = attention == ATTN_FLASH || m->mla; /* MLA's core is a fused kernel */
    ynode *kernel = yread_map_get(c, node, "attention_kernel");
    if (kernel && !m->flash_attention) {
        yread_join_path(field, sizeof field, path, "attention_kernel");
        return yread_fail(c, kernel, field,
                          "attention_kernel describes the fused attention kernel: it needs "
                          "`attention: flash`");
    }
    m->attention_kernel = (model_attention_kernel)attention_kernel;
    ynode *rms = yread_map_get(c, node, "rmsnorm_kernel");
    if (rms && (m->family != FAMILY_LLAMA || !m->eager_kernels)) {
        yread_join_path(field, sizeof field, path, "rmsnorm_kernel");
        return yread_fail(c, rms, field,
                          "rmsnorm_kernel chooses between the RMSNorm written as PyTorch ops and "
                          "one fused kernel under `kernels: eager`: it needs an RMSNorm model "
                          "(family llama) with `kernels: eager` (fused kernels fuse it anyway)");
    }
    ynode *ce = yread_map_get(c, node, "cross_entropy");
    if (ce && m->loss_logits && !m->eager_kernels) {
        yread_join_path(field, sizeof field, path, "cross_entropy");
        return yread_fail(c, ce, field,
                          "`cross_entropy: logits` is PyTorch's cross-entropy on the model's "
                          "own logits: it needs `kernels: eager` (Megatron's fused "
                          "cross-entropy always works in fp32)");
    }
    m->activation = (model_activation)activation;
    m->positions = (model_positions)positions;
    m->window_layers = (model_window_layers)window_layers;
    return 0;
}

/* Sliding windows: what is modelled is a causal band computed by a fused kernel that skips the
 * tiles outside it (sim/cost/cost.c); an unfused core would compute and mask the whole square, and
 * an encoder's window would be two-sided: both refused rather than approximated. */
static int resolve_window(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    char field[160];
    ynode *window = yread_map_get(c, node, "sliding_window");
    ynode *layers = yread_map_get(c, node, "sliding_window_layers");
    if (!window) {
        if (!layers)
            return 0;
        yread_join_path(field, sizeof field, path, "sliding_window_layers");
        return yread_fail(c, layers, field, "sliding_window_layers without sliding_window");
    }
    yread_join_path(field, sizeof field, path, "sliding_window");
    if (m->family == FAMILY_BERT)
        return yread_fail(c, window, field,
                          "a sliding window is modelled for causal (gpt, llama) attention only; "
                          "bert's attention is bidirectional");
    if (!m->flash_attention)
        return yread_fail(c, window, field,
                          "sliding windows need `attention: flash` (the fused kernel skips the "
                          "tiles outside the window; unfused attention is not modelled with one)");
    return 0;
}

/* Multi-head latent attention's keys: all four widths with `attention: mla` (q_lora_rank
 * optional), none without; MLA sets head_dim and kv_heads itself and needs rotary positions (its
 * decoupled RoPE part). Each error at the key to fix. */
static int resolve_mla(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    char field[160];
    static const int required[] = {F_KV_LORA, F_QK_NOPE, F_QK_ROPE, F_V_HEAD};
    ynode *mtp = yread_map_get(c, node, "mtp_layers");
    if (mtp && m->mtp_layers > 0 && m->family == FAMILY_BERT) {
        yread_join_path(field, sizeof field, path, "mtp_layers");
        return yread_fail(c, mtp, field,
                          "multi-token prediction predicts the next tokens: it needs a decoder "
                          "(family gpt or llama), not bert");
    }
    if (!m->mla) {
        for (int f = F_Q_LORA; f <= F_V_HEAD; f++) {
            ynode *v = yread_map_get(c, node, model_keys[f]);
            if (!v)
                continue;
            yread_join_path(field, sizeof field, path, model_keys[f]);
            return yread_fail(c, v, field,
                              "'%s' is a latent-attention key: it needs `attention: mla`",
                              model_keys[f]);
        }
        return 0;
    }
    ynode *at = yread_map_get(c, node, "attention");
    if (m->family == FAMILY_BERT) {
        yread_join_path(field, sizeof field, path, "attention");
        return yread_fail(c, at, field,
                          "`attention: mla` is a decoder's causal attention (DeepSeek): family gpt "
                          "or llama, not bert");
    }
    if (m->bias) {
        yread_join_path(field, sizeof field, path, "bias");
        ynode *b = yread_map_get(c, node, "bias");
        return yread_fail(c, b ? b : at, field,
                          "`attention: mla` has no biases on its projections (DeepSeek): give "
                          "bias: false%s",
                          b ? "" : " (the gpt family's default is true)");
    }
    for (size_t i = 0; i < sizeof required / sizeof *required; i++)
        if (!yread_map_get(c, node, model_keys[required[i]])) {
            yread_join_path(field, sizeof field, path, model_keys[required[i]]);
            return yread_fail(c, at, field,
                              "`attention: mla` needs %s (kv_lora_rank, qk_nope_head_dim, "
                              "qk_rope_head_dim and v_head_dim; q_lora_rank optional)",
                              model_keys[required[i]]);
        }
    static const char *const own[] = {"head_dim", "kv_heads", "sliding_window"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) {
        ynode *v = yread_map_get(c, node, own[i]);
        if (!v)
            continue;
        yread_join_path(field, sizeof field, path, own[i]);
        return yread_fail(c, v, field,
                          "%s is not a key of `attention: mla` (its heads are qk_nope_head_dim + "
                          "qk_rope_head_dim wide, values v_head_dim, every head its own K and V%s)",
                          own[i], i == 2 ? "; a window is not modelled with it" : "");
    }
    if (m->positions != POS_ROTARY) {
        yread_join_path(field, sizeof field, path, "positions");
        return yread_fail(
            c, yread_map_get(c, node, "positions") ? yread_map_get(c, node, "positions") : at,
            field,
            "`attention: mla` applies rotary positions to its decoupled part: "
            "it needs `positions: rotary` (the llama family's default)");
    }
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    m->kv_heads = m->heads;
    return 0;
}

/* The mixture-of-experts rules, each error at the key to fix. */
static int resolve_moe(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    char field[160];
    ynode *experts = yread_map_get(c, node, "experts");
    if (!experts) {
        for (int f = F_EXPERTS + 1; f < F_COUNT; f++) {
            ynode *v = yread_map_get(c, node, model_keys[f]);
            if (!v)
                continue;
            yread_join_path(field, sizeof field, path, model_keys[f]);
            return yread_fail(c, v, field, "'%s' is a mixture-of-experts key: give experts too",
                              model_keys[f]);
        }
        return 0;
    }
    ynode *topk = yread_map_get(c, node, "experts_topk");
    ynode *imb = yread_map_get(c, node, "imbalance");
    ynode *dense = yread_map_get(c, node, "dense_layers");
    ynode *dense_ffn = yread_map_get(c, node, "dense_ffn_hidden");
    if (!topk) {
        yread_join_path(field, sizeof field, path, "experts_topk");
        return yread_fail(c, experts, field, "experts need experts_topk (experts per token)");
    }
    if (m->experts_topk > m->experts) {
        yread_join_path(field, sizeof field, path, "experts_topk");
        return yread_fail(c, topk, field, "experts_topk (%d) exceeds experts (%d)", m->experts_topk,
                          m->experts);
    }
    if (imb && (m->imbalance < 1.0 || m->imbalance > m->experts)) {
        yread_join_path(field, sizeof field, path, "imbalance");
        return yread_fail(c, imb, field,
                          "imbalance (the busiest expert's load over the mean) must lie in "
                          "[1, experts = %d], got %g",
                          m->experts, m->imbalance);
    }
    if (dense && m->dense_layers >= m->layers) {
        yread_join_path(field, sizeof field, path, "dense_layers");
        return yread_fail(c, dense, field, "dense_layers (%d) must be below layers (%d)",
                          m->dense_layers, m->layers);
    }
    if (m->dense_layers > 0 && !dense_ffn) {
        yread_join_path(field, sizeof field, path, "dense_ffn_hidden");
        return yread_fail(c, dense, field, "dense layers need dense_ffn_hidden (their width)");
    }
    if (dense_ffn && m->dense_layers == 0) {
        yread_join_path(field, sizeof field, path, "dense_ffn_hidden");
        return yread_fail(c, dense_ffn, field, "dense_ffn_hidden without dense_layers > 0");
    }
    return 0;
}

/* Cross-key rules and the defaults that depend on other keys, each error at the key to fix. */
static int resolve_model(yread_ctx *c, ynode *node, const char *path, workload_model *m)
{
    char field[160];
    ynode *head_dim = yread_map_get(c, node, "head_dim");
    ynode *kv = yread_map_get(c, node, "kv_heads");
    if (!head_dim && m->hidden % m->heads != 0) {
        yread_join_path(field, sizeof field, path, "heads");
        return yread_fail(c, yread_map_get(c, node, "heads"), field,
                          "hidden (%d) is not divisible by heads (%d); give head_dim", m->hidden,
                          m->heads);
    }
    if (!head_dim)
        m->head_dim = m->hidden / m->heads;
    if (!kv)
        m->kv_heads = m->heads;
    if (m->heads % m->kv_heads != 0) {
        yread_join_path(field, sizeof field, path, "kv_heads");
        return yread_fail(c, kv, field,
                          "kv_heads (%d) does not divide heads (%d): every K/V head serves "
                          "the same number of query heads",
                          m->kv_heads, m->heads);
    }
    if (!yread_map_get(c, node, "ffn_hidden")) {
        if (m->activation == ACT_SWIGLU) {
            yread_join_path(field, sizeof field, path, "ffn_hidden");
            ynode *at = yread_map_get(c, node, "activation");
            return yread_fail(c, at ? at : yread_map_get(c, node, "family"), field,
                              "a swiglu MLP needs ffn_hidden (its width has no standard "
                              "default)");
        }
        ynode *hidden = yread_map_get(c, node, "hidden");
        yread_join_path(field, sizeof field, path, "hidden");
        int64_t ffn;
        if (ps_mul_checked(4, m->hidden, INT_MAX, (ps_where){c->file, yread_loc(hidden), field},
                           "the default ffn_hidden, 4 x hidden", &ffn, c->err))
            return c->err->code;
        m->ffn_hidden = (int)ffn;
    }
    return 0;
}

/* family: dlrm has its own keys (workloads/dlrm.c) */
static int read_dlrm(yread_ctx *c, ynode *node, const char *path, workload_model *out)
{
    workload_model m;
    memset(&m, 0, sizeof m);
    m.family = FAMILY_DLRM;
    ynode *name = yread_map_get(c, node, "name");
    char field[160];
    yread_join_path(field, sizeof field, path, "name");
    if ((name && read_name(c, name, field, &m)) || workload_dlrm_read(c, node, path, &m))
        return c->err->code;
    *out = m;
    return 0;
}

int workload_model_read(yread_ctx *c, ynode *node, const char *path, workload_model *out)
{
    assert(c && node && out);
    if (!yread_is_mapping(node))
        return yread_fail(c, node, path, "a model must be a mapping (family, layers, hidden, ...)");

    /* family first: it sets the keys and the defaults of the others */
    char field[160];
    int family = 0;
    ynode *fam = yread_map_get(c, node, "family");
    yread_join_path(field, sizeof field, path, "family");
    if (fam && yread_enum(c, fam, field, model_family_names, &family))
        return c->err->code;
    if (fam && family == FAMILY_DLRM)
        return read_dlrm(c, node, path, out);
    if (yread_check_keys(c, node, path, model_keys, F_COUNT))
        return c->err->code;
    int dims[F_VOCAB + 1] = {0};
    /* the dimensions' limits (sim/base/limits.h), indexed by key */
    static const int dim_max[F_VOCAB + 1] = {[F_LAYERS] = PS_MAX_LAYERS,
                                             [F_HIDDEN] = PS_MAX_DIM,
                                             [F_HEADS] = PS_MAX_HEADS,
                                             [F_SEQ] = PS_MAX_SEQ,
                                             [F_VOCAB] = PS_MAX_VOCAB};
    for (int f = F_FAMILY; f <= F_VOCAB; f++) {
        yread_join_path(field, sizeof field, path, model_keys[f]);
        ynode *v = yread_map_get(c, node, model_keys[f]);
        if (!v)
            return yread_fail(c, node, field, "missing required key '%s'", model_keys[f]);
        if (f == F_FAMILY ? yread_enum(c, v, field, model_family_names, &family)
                          : yread_count(c, v, field, 1, dim_max[f], &dims[f]))
            return c->err->code;
    }
    workload_model m;
    workload_model_init(&m, (model_family)family, dims[F_LAYERS], dims[F_HIDDEN], dims[F_HEADS],
                        dims[F_SEQ], dims[F_VOCAB]);
    ynode *name = yread_map_get(c, node, "name");
    if (name) {
        yread_join_path(field, sizeof field, path, "name");
        if (read_name(c, name, field, &m))
            return c->err->code;
    }
    if (read_optional(c, node, path, &m) || resolve_model(c, node, path, &m) ||
        resolve_mla(c, node, path, &m) || resolve_window(c, node, path, &m) ||
        resolve_moe(c, node, path, &m))
        return c->err->code;
    *out = m;
    return 0;
}

int workload_model_from_yaml(ydoc *doc, ynode *node, const char *file, workload_model *out,
                             ps_error *err)
{
    yread_ctx c = {doc, file, err};
    return workload_model_read(&c, node, "", out);
}

/* ---- loading a model file ---- */

static int looks_like_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') != NULL || (n >= 5 && strcmp(s + n - 5, ".yaml") == 0);
}

/* "dir/gpt3-175b.yaml" -> "gpt3-175b" */
static void stem_of(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n >= 5 && strcmp(base + n - 5, ".yaml") == 0)
        n -= 5;
    if (n >= cap)
        n = cap - 1;
    memcpy(out, base, n);
    out[n] = '\0';
}

int workload_model_load(const char *name_or_path, const char *data_dir, workload_model *out,
                        ps_error *err)
{
    assert(name_or_path && out);
    char path[512];
    int n;
    if (looks_like_path(name_or_path))
        n = snprintf(path, sizeof path, "%s", name_or_path);
    else
        n = snprintf(path, sizeof path, "%s/workloads/models/%s.yaml",
                     data_dir && *data_dir ? data_dir : ps_data_dir(), name_or_path);
    if (n < 0 || (size_t)n >= sizeof path)
        return ps_error_set(err, PS_EINPUT, name_or_path, 0, 0, "workload",
                            "workload path too long");

    if (access(path, F_OK) != 0)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, "workload",
                            "no such workload '%s' (cannot open %s: %s)", name_or_path, path,
                            strerror(errno));
    ydoc *doc;
    if (yread_load_file(path, "model file", &doc, err))
        return err->code;
    ynode *root = yread_root(doc);
    int rc;
    if (!root)
        rc = ps_error_set(err, PS_EINPUT, path, 1, 1, "", "empty model file");
    else
        rc = workload_model_from_yaml(doc, root, path, out, err);
    if (rc == 0 && out->name[0] == '\0')
        stem_of(path, out->name, sizeof out->name);
    yread_doc_free(doc);
    return rc;
}
