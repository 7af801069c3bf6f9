/* whatif.c: the what-if specs of `protosim replay`: parsed from their text, then applied to the
 * traced graph (kernel times, launches) or to the platform (link bandwidths). */
#include "whatif.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/number.h"
#include "../base/xalloc.h"
#include "../cost/cost.h"
#include "../../workloads/trace/trace_profile.h"

/* Tensors one multi-tensor launch takes (PyTorch's multi_tensor_apply, depth_to_max_tensors
 * for two tensor lists, e.g. _foreach_add_(params, grads): 64; ResNet's traced SGD step
 * launches 3 kernels per 161-tensor foreach op, as 64 per launch gives). */
static const int WHATIF_TENSORS_PER_LAUNCH = 64;
/* The GEMM edge of the large square GEMM whose cost ratio stands for kernels without shapes:
 * such a kernel is taken compute bound at both precisions, as large fp32 GEMMs and
 * convolutions are (ResNet-50's convolutions run at 100-250 flop/byte, above the V100's fp16
 * ridge of 139). */
static const double WHATIF_LARGE_GEMM = 8192.0;

static int spec_error(ps_error *err, const char *text, const char *why)
{
    return ps_error_set(err, PS_EINPUT, "", 0, 0, "", "--what-if '%s': %s", text, why);
}

/* A factor: a strict decimal (ps_parse_decimal: no sign, hex, nan, inf or junk). */
static int parse_factor(const char *v, double *out)
{
    return ps_parse_decimal(v, out);
}

static int compile_regex(whatif_spec *s, const char *pattern, ps_error *err)
{
    if (!*pattern)
        return spec_error(err, s->text, "empty regular expression");
    int rc = regcomp(&s->re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc) {
        char msg[128], why[256];
        regerror(rc, &s->re, msg, sizeof msg);
        snprintf(why, sizeof why, "bad regular expression '%.80s': %s", pattern, msg);
        return spec_error(err, s->text, why);
    }
    s->has_re = 1;
    return 0;
}

int whatif_parse(const char *text, whatif_spec *out, ps_error *err)
{
    memset(out, 0, sizeof *out);
    if (strlen(text) >= sizeof out->text)
        return spec_error(err, "...", "longer than 255 characters");
    snprintf(out->text, sizeof out->text, "%s", text);
    const char *colon = strchr(text, ':');
    size_t head = colon ? (size_t)(colon - text) : strlen(text);
    const char *arg = colon ? colon + 1 : NULL;
    static const char *const expected =
        "expected network:F, scale:REGEX:F, remove:REGEX, amp, fuse-elementwise, "
        "fuse-optimizer, priority:gradients[:BYTES] or device:GPU";
    if (!colon && strcmp(text, "amp") == 0) {
        out->kind = WHATIF_AMP;
        return 0;
    }
    if (!colon && strcmp(text, "fuse-elementwise") == 0) {
        out->kind = WHATIF_FUSE_ELEMENTWISE;
        return 0;
    }
    if (!colon && strcmp(text, "fuse-optimizer") == 0) {
        out->kind = WHATIF_FUSE_OPTIMIZER;
        return 0;
    }
    if (colon && head == 8 && strncmp(text, "priority", 8) == 0) {
        const char *size = strchr(arg, ':');
        if (strncmp(arg, "gradients", 9) != 0 || (arg[9] && arg[9] != ':'))
            return spec_error(err, text, "the only priority is 'gradients'");
        out->kind = WHATIF_PRIORITY_GRADIENTS;
        if (size && (parse_factor(size + 1, &out->factor) || out->factor < 1))
            return spec_error(err, text,
                              "expected priority:gradients or priority:gradients:BYTES, the "
                              "slice size (a number >= 1)");
        return 0;
    }
    if (colon && head == 7 && strncmp(text, "network", 7) == 0) {
        out->kind = WHATIF_NETWORK;
        if (parse_factor(arg, &out->factor) || out->factor <= 0)
            return spec_error(err, text, "the factor must be a number > 0");
        return 0;
    }
    if (colon && head == 6 && strncmp(text, "device", 6) == 0) {
        out->kind = WHATIF_DEVICE;
        if (!*arg || strlen(arg) >= sizeof out->device)
            return spec_error(err, text, "expected device:GPU, a devices.yaml name");
        snprintf(out->device, sizeof out->device, "%s", arg);
        return 0;
    }
    if (colon && head == 6 && strncmp(text, "remove", 6) == 0) {
        out->kind = WHATIF_REMOVE;
        return compile_regex(out, arg, err);
    }
    if (colon && head == 5 && strncmp(text, "scale", 5) == 0) {
        out->kind = WHATIF_SCALE;
        const char *last = strrchr(arg, ':'); /* the factor follows the last colon */
        if (!last)
            return spec_error(err, text, "expected scale:REGEX:F");
        if (parse_factor(last + 1, &out->factor))
            return spec_error(err, text, "the factor after the last ':' must be a number >= 0");
        char pattern[256];
        snprintf(pattern, sizeof pattern, "%.*s", (int)(last - arg), arg);
        return compile_regex(out, pattern, err);
    }
    return spec_error(err, text, expected);
}

void whatif_spec_free(whatif_spec *s)
{
    if (s->has_re)
        regfree(&s->re);
    s->has_re = 0;
}

/* ---- helpers on the traced graph ---- */

static int icontains(const char *s, const char *sub)
{
    size_t n = strlen(sub);
    for (; *s; s++)
        if (strncasecmp(s, sub, n) == 0)
            return 1;
    return 0;
}

/* GEMM-class kernels: cuBLAS and CUTLASS GEMMs, cuDNN's convolution engines (scudnn implicit
 * GEMMs and Winograd, dgrad and wgrad engines). A convolution's data transforms (winograd
 * Data/Filter/Output, nchwToNhwc, offsets, wgrad reductions) are memory-bound helpers: not. */
static int is_gemm_kernel(const char *name)
{
    static const char *const keys[] = {"gemm",      "scudnn", "dgrad_engine",
                                       "wgrad_alg", "xmma",   "cutlass"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (icontains(name, keys[i]))
            return 1;
    return 0;
}

/* The precision a GEMM-class kernel computes in, from its library name: half (h884, h1688,
 * h16816, f16, half), bf16, tf32 tensor ops (tf32, s1688, s16816), else fp32 SIMT. */
static precision_t kernel_precision(const char *name)
{
    if (icontains(name, "bf16"))
        return PREC_BF16;
    static const char *const half[] = {"h884", "h1688", "h16816", "f16", "half", "hgemm"};
    for (size_t i = 0; i < sizeof half / sizeof half[0]; i++)
        if (icontains(name, half[i]))
            return PREC_FP16;
    if (icontains(name, "tf32") || icontains(name, "s1688") || icontains(name, "s16816"))
        return PREC_TF32;
    return PREC_FP32;
}

static int is_copy(const char *name)
{
    return strncmp(name, "Memcpy", 6) == 0 || strncmp(name, "Memset", 6) == 0;
}

static int input_is_float(const trace_job *j, const trace_call *c, int i)
{
    return c->type[i] >= 0 && strcmp(j->names[c->type[i]], "float") == 0;
}

/* The GEMM of a launching op with fp32 shapes (trace_call_gemm); 0 if it has none or its
 * operands are not fp32. */
static int call_gemm_shape(const trace_job *j, const trace_call *c, double *b, double *m, double *n,
                           double *k)
{
    int a, w;
    return trace_call_gemm(j, c, &a, &w, b, m, n, k) && input_is_float(j, c, a) &&
           input_is_float(j, c, w);
}

/* The traced GPU of rank r (see whatif.h). */
static const device_spec *traced_device(const whatif_spec *s, const trace_rank *r, const cluster *c,
                                        ps_error *err)
{
    if (!r->device[0])
        return c->device[0];
    char name[128]; /* a GPU the map does not know may still be in devices.yaml by its name */
    (void)profile_device_of_cuda_name(r->device, name, sizeof name);
    const device_spec *d = device_table_find(&c->devices, name);
    if (!d) {
        char why[600];
        snprintf(why, sizeof why,
                 "%.300s was traced on '%.60s', which the device table (devices.yaml and "
                 "--devices files) does not have: its kernels cannot be re-costed",
                 r->file, r->device);
        spec_error(err, s->text, why);
    }
    return d;
}

/* Each GPU op's launching runtime call (the edges runtime -> GPU), -1 if none. */
static int32_t *launch_of_ops(const trace_rank *r)
{
    int32_t *v = xmalloc(((size_t)r->n_ops + 1) * sizeof *v);
    for (uint32_t i = 0; i < r->n_ops; i++)
        v[i] = -1;
    for (uint32_t e = 0; e < r->n_edges; e++) {
        uint32_t a = r->edges[2 * e], b = r->edges[2 * e + 1];
        if (r->ops[a].kind == TRACE_RUNTIME &&
            (r->ops[b].kind == TRACE_GPU || r->ops[b].kind == TRACE_COLL))
            v[b] = (int32_t)a;
    }
    return v;
}

static void set_kernel(trace_op *op, double seconds, whatif_effect *eff)
{
    eff->kernels++;
    eff->kernel_s_before += op->seconds;
    eff->kernel_s_after += seconds;
    op->seconds = seconds;
}

/* ---- the specs ---- */

/* NCCL kernels the executor does not model keep their measured time: network:F takes them
 * bandwidth bound, x 1/F (in kernel_s_before/after; kernels counts links). */
static void scale_measured_comm(trace_job *j, double f, whatif_effect *eff)
{
    for (int i = 0; i < j->n_ranks; i++)
        for (uint32_t k = 0; k < j->ranks[i].n_ops; k++) {
            trace_op *op = &j->ranks[i].ops[k];
            if (op->kind != TRACE_COMM_MEASURED)
                continue;
            eff->kernel_s_before += op->seconds;
            op->seconds *= f;
            eff->kernel_s_after += op->seconds;
        }
}

static void apply_regex(const whatif_spec *s, trace_job *j, whatif_effect *eff)
{
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        for (uint32_t k = 0; k < r->n_ops; k++) {
            trace_op *op = &r->ops[k];
            if (op->kind != TRACE_GPU || regexec(&s->re, j->names[op->name], 0, NULL, 0) != 0)
                continue;
            set_kernel(op, s->kind == WHATIF_REMOVE ? 0.0 : op->seconds * s->factor, eff);
        }
    }
}

/* Cost ratio of a GEMM-class kernel between (prec_a, dev_a) and (prec_b, dev_b): its shape's
 * when the launching op recorded one, else the large square GEMM's. */
static double gemm_ratio(const trace_job *j, const trace_rank *r, const trace_op *op,
                         precision_t prec_a, const device_spec *dev_a, precision_t prec_b,
                         const device_spec *dev_b)
{
    double b = 1, m = WHATIF_LARGE_GEMM, n = WHATIF_LARGE_GEMM, k = WHATIF_LARGE_GEMM;
    if (!call_gemm_shape(j, &r->calls[op->call], &b, &m, &n, &k))
        b = 1, m = n = k = WHATIF_LARGE_GEMM;
    return cost_gemm_kernel_seconds(b, m, n, k, prec_b, dev_b) /
           cost_gemm_kernel_seconds(b, m, n, k, prec_a, dev_a);
}

static int apply_amp(const whatif_spec *s, trace_job *j, const cluster *c, whatif_effect *eff,
                     ps_error *err)
{
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        const device_spec *dev = traced_device(s, r, c, err);
        if (!dev)
            return err->code;
        for (uint32_t k = 0; k < r->n_ops; k++) {
            trace_op *op = &r->ops[k];
            const char *name = j->names[op->name];
            if (op->kind != TRACE_GPU || !is_gemm_kernel(name))
                continue;
            precision_t prec = kernel_precision(name);
            if (prec == PREC_FP16 || prec == PREC_BF16)
                continue;
            set_kernel(op, op->seconds * gemm_ratio(j, r, op, prec, dev, PREC_FP16, dev), eff);
        }
    }
    return 0;
}

static int apply_device(const whatif_spec *s, trace_job *j, const cluster *c, whatif_effect *eff,
                        ps_error *err)
{
    const device_spec *to = device_table_find(&c->devices, s->device);
    if (!to)
        return spec_error(err, s->text,
                          "not a GPU of the device table (devices.yaml and --devices files)");
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        const device_spec *from = traced_device(s, r, c, err);
        if (!from)
            return err->code;
        for (uint32_t k = 0; k < r->n_ops; k++) {
            trace_op *op = &r->ops[k];
            const char *name = j->names[op->name];
            if (op->kind != TRACE_GPU || is_copy(name))
                continue;
            double ratio = from->hbm_bw / to->hbm_bw; /* memory-bound kernels */
            if (is_gemm_kernel(name)) {
                precision_t prec = kernel_precision(name);
                ratio = gemm_ratio(j, r, op, prec, from, prec, to);
            }
            set_kernel(op, op->seconds * ratio, eff);
        }
        snprintf(r->device, sizeof r->device, "%s", to->name);
    }
    return 0;
}

static int is_elementwise(const trace_job *j, const trace_op *op)
{
    return op->kind == TRACE_GPU && strstr(j->names[op->name], "elementwise_kernel");
}

static int is_optimizer_kernel(const trace_job *j, const trace_op *op)
{
    if (op->kind != TRACE_GPU || strstr(j->names[op->name], "multi_tensor_apply"))
        return 0; /* already one launch for many tensors */
    return op->optimizer || (op->op >= 0 && strncmp(j->names[op->op], "aten::_foreach_", 15) == 0);
}

/* Kernel `k` drops out of a fused launch: no GPU time, and its launch call no longer happens. */
static void drop_launch(trace_rank *r, const int32_t *launch, uint32_t k, whatif_effect *eff)
{
    if (launch[k] < 0)
        return;
    trace_op *l = &r->ops[launch[k]];
    eff->launches_removed++;
    eff->host_s_removed += l->seconds;
    l->seconds = 0.0;
}

/* Same launching op instance: launched by the same outermost op of one thread. */
static int same_op(const trace_rank *r, const int32_t *launch, uint32_t a, uint32_t b)
{
    if (launch[a] < 0 || launch[b] < 0)
        return 0;
    const trace_op *x = &r->ops[launch[a]], *y = &r->ops[launch[b]];
    return x->lane == y->lane && x->op_seq >= 0 && x->op_seq == y->op_seq;
}

/* Bytes per element of a profiler `Input type`, 0 if not a known tensor type. */
static double type_bytes(const char *t)
{
    static const struct {
        const char *name;
        double bytes;
    } types[] = {{"float", 4},         {"c10::Half", 2},  {"c10::BFloat16", 2}, {"double", 8},
                 {"long", 8},          {"int", 4},        {"short", 2},         {"bool", 1},
                 {"unsigned char", 1}, {"signed char", 1}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(t, types[i].name) == 0)
            return types[i].bytes;
    return 0;
}

/* An elementwise kernel's traffic from its launching op's shapes: each tensor input (rank >= 1)
 * read and one output written, of the largest input's elements (broadcasting) and its type's
 * size; *inputs: the tensor inputs. 0 if the shapes are missing or a type is unknown. */
static double elementwise_bytes(const trace_job *j, const trace_call *c, double *inputs)
{
    double numel = 0, size = 0;
    *inputs = 0;
    for (int i = 0; i < c->n_in; i++) {
        if (c->rank[i] < 1)
            continue; /* a scalar */
        double b = c->type[i] >= 0 ? type_bytes(j->names[c->type[i]]) : 0;
        if (b == 0)
            return 0;
        double n = 1;
        for (int d = 0; d < c->rank[i] && d < TRACE_CALL_DIMS; d++)
            n *= c->dims[i][d];
        numel = fmax(numel, n);
        size = fmax(size, b);
        *inputs += 1;
    }
    return *inputs > 0 ? (*inputs + 1) * numel * size : 0;
}

/* The fused time of run ops[k..e): with shapes, the measured time x the cost model's memory time
 * ratio, i.e. of bytes (memory time is bytes / (HBM x efficiency)): the fused kernel reads the
 * run's tensor inputs less the k - 1 intermediates each member passes on, and writes one output;
 * the members read and wrote all of theirs. Without shapes, the run's longest kernel (a fused
 * chain streams its operands once: about its largest member's traffic). */
static double fused_seconds(const trace_job *j, const trace_rank *r, uint32_t k, uint32_t e)
{
    double longest = 0, sum = 0, unfused = 0, inputs = 0, largest = 0;
    int shaped = 1;
    for (uint32_t x = k; x < e; x++) {
        longest = fmax(longest, r->ops[x].seconds);
        sum += r->ops[x].seconds;
        double in, b = elementwise_bytes(j, &r->calls[r->ops[x].call], &in);
        if (b == 0)
            shaped = 0;
        unfused += b;
        inputs += in;
        largest = fmax(largest, b / (in + 1)); /* one tensor's bytes */
    }
    if (!shaped)
        return longest;
    double fused = (inputs - (double)(e - k - 1) + 1) * largest;
    return sum * fmin(1.0, fused / unfused);
}

/* fuse-elementwise: a run of consecutive elementwise kernels on one stream launched by one op
 * (optimizer kernels are fuse-optimizer's) becomes its first kernel, at fused_seconds; the
 * others and their launches go. */
static void apply_fuse_elementwise(trace_job *j, whatif_effect *eff)
{
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        int32_t *launch = launch_of_ops(r);
        uint32_t k = 0;
        while (k < r->n_ops) {
            uint32_t e = k + 1;
            if (is_elementwise(j, &r->ops[k]) && !is_optimizer_kernel(j, &r->ops[k]))
                while (e < r->n_ops && r->ops[e].lane == r->ops[k].lane &&
                       is_elementwise(j, &r->ops[e]) && !is_optimizer_kernel(j, &r->ops[e]) &&
                       same_op(r, launch, k, e))
                    e++;
            if (e - k >= 2) {
                set_kernel(&r->ops[k], fused_seconds(j, r, k, e), eff);
                for (uint32_t x = k + 1; x < e; x++) {
                    set_kernel(&r->ops[x], 0.0, eff);
                    drop_launch(r, launch, x, eff);
                }
            }
            k = e;
        }
        free(launch);
    }
}

/* fuse-optimizer: consecutive optimizer kernels of one name on one stream (a per-tensor loop)
 * become launches of WHATIF_TENSORS_PER_LAUNCH tensors: each chunk's first kernel takes the
 * chunk's work, the smallest kernel's time being the per-kernel floor paid once:
 * min + sum (t - min); the others and their launches go. */
static void apply_fuse_optimizer(trace_job *j, whatif_effect *eff)
{
    for (int i = 0; i < j->n_ranks; i++) {
        trace_rank *r = &j->ranks[i];
        int32_t *launch = launch_of_ops(r);
        uint32_t k = 0;
        while (k < r->n_ops) {
            uint32_t e = k + 1;
            if (is_optimizer_kernel(j, &r->ops[k]))
                while (e < r->n_ops && e - k < (uint32_t)WHATIF_TENSORS_PER_LAUNCH &&
                       r->ops[e].lane == r->ops[k].lane && is_optimizer_kernel(j, &r->ops[e]) &&
                       r->ops[e].name == r->ops[k].name)
                    e++;
            if (e - k >= 2) {
                double floor = INFINITY, sum = 0;
                for (uint32_t x = k; x < e; x++) {
                    floor = fmin(floor, r->ops[x].seconds);
                    sum += r->ops[x].seconds;
                }
                set_kernel(&r->ops[k], sum - (double)(e - k - 1) * floor, eff);
                for (uint32_t x = k + 1; x < e; x++) {
                    set_kernel(&r->ops[x], 0.0, eff);
                    drop_launch(r, launch, x, eff);
                }
            }
            k = e;
        }
        free(launch);
    }
}

int whatif_apply(const whatif_spec *s, trace_job *j, const cluster *c, whatif_effect *eff,
                 ps_error *err)
{
    memset(eff, 0, sizeof *eff);
    switch (s->kind) {
    case WHATIF_NETWORK:
        eff->kernels = cluster_scale_bandwidth(c, s->factor);
        if (eff->kernels < 0)
            return spec_error(err, s->text,
                              "the factor takes a link of the cluster outside the bandwidths "
                              "protosim accepts (1 MB/s to 10 PB/s)");
        scale_measured_comm(j, 1.0 / s->factor, eff);
        return 0;
    case WHATIF_SCALE:
    case WHATIF_REMOVE: apply_regex(s, j, eff); return 0;
    case WHATIF_AMP: return apply_amp(s, j, c, eff, err);
    case WHATIF_DEVICE: return apply_device(s, j, c, eff, err);
    case WHATIF_FUSE_ELEMENTWISE: apply_fuse_elementwise(j, eff); return 0;
    case WHATIF_FUSE_OPTIMIZER: apply_fuse_optimizer(j, eff); return 0;
    case WHATIF_PRIORITY_GRADIENTS: return whatif_priority_gradients(s, j, eff, err);
    }
    return 0;
}
