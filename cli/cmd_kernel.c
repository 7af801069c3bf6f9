/* cmd_kernel.c: `protosim kernel`: one kernel alone through the cost model (sim/cost/cost.c) on
 * one GPU of the device table: a GEMM, a batched GEMM, fused attention, a norm or an elementwise
 * pass. Prints its time, what it achieves of the GPU's peaks, the GEMM's tiling and what bounds
 * it. The time is the kernel's work (compute or memory, at least the shortest kernel) plus what
 * one CUDA kernel costs besides its work (cost_cuda_kernel_gpu_overhead_seconds), as a profiler
 * times a kernel. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/base/vocab.h"
#include "../sim/base/xalloc.h"
#include "../sim/cost/cost.h"
#include "../sim/cost/cost_tile.h"
#include "../topology/cluster.h"
#include "cli.h"

static int kernel_main(int argc, char **argv);

typedef struct kernel_args {
    const char *gpu, *dtype, *csv, *gemm_model, *shapes;
    int causal, backward, warp_mma;
} kernel_args;

static const cli_option kernel_options[] = {
    {.name = "--gpu", .kind = CLI_STRING, .offset = offsetof(kernel_args, gpu)},
    {.name = "--dtype", .kind = CLI_STRING, .offset = offsetof(kernel_args, dtype)},
    {.name = "--csv", .kind = CLI_STRING, .offset = offsetof(kernel_args, csv)},
    {.name = "--gemm-model", .kind = CLI_STRING, .offset = offsetof(kernel_args, gemm_model)},
    {.name = "--shapes", .kind = CLI_STRING, .offset = offsetof(kernel_args, shapes)},
    {.name = "--causal", .kind = CLI_FLAG, .offset = offsetof(kernel_args, causal), .set = 1},
    {.name = "--backward", .kind = CLI_FLAG, .offset = offsetof(kernel_args, backward), .set = 1},
    {.name = "--warp-mma", .kind = CLI_FLAG, .offset = offsetof(kernel_args, warp_mma), .set = 1},
    {0},
};

const cli_command cli_kernel = {
    "kernel",
    "  protosim kernel gemm M N K | bmm B M N K | attention B H S D | norm N |\n"
    "                  elementwise BYTES --gpu GPU [--dtype fp16|bf16|fp8|fp32|tf32]\n"
    "                  [--causal] [--warp-mma] [--backward] [--gemm-model roofline|tile]\n"
    "                  [--csv OUT]\n"
    "  protosim kernel KERNEL --shapes FILE --gpu GPU [options as above]\n",
    "times one kernel alone with the cost model on one GPU: what it takes, what it achieves\n"
    "of the GPU's peaks, the GEMM's tile and waves over the SMs, and what bounds it (compute,\n"
    "memory, or launch: the per-kernel cost and the shortest kernel outweigh the work). The\n"
    "time is the kernel's work plus what one CUDA kernel costs besides it (docs/cost-model.md).\n"
    "kernels:\n"
    "  gemm M N K          (M x K).(K x N)\n"
    "  bmm B M N K         B of them in one kernel\n"
    "  attention B H S D   fused (flash) attention: B sequences of S tokens, H heads of D\n"
    "  norm N              a fused LayerNorm / RMSNorm over N elements\n"
    "  elementwise BYTES   a memory-bound pass moving BYTES (read + written; K, M, G, Ki...)\n"
    "options:\n"
    "  --gpu GPU           a GPU of the device table (devices.yaml, --devices files; required)\n"
    "  --dtype T           element type (default bf16; attention fp16 or bf16)\n"
    "  --causal            attention: each query sees itself and earlier keys\n"
    "  --warp-mma          attention: FlashAttention-2's warp-level MMA (the GPU's\n"
    "                      warp_mma_fraction of the native tensor-core rate; default the\n"
    "                      native kernel, as cuDNN's and FlashAttention-3's)\n"
    "  --backward          attention and norm: the backward kernel instead of the forward\n"
    "  --gemm-model M      gemm, bmm: roofline (the shape's tile, wave and K-depth efficiency)\n"
    "                      or tile (tiles in waves over the SMs, Ampere and Hopper); default\n"
    "                      the GPU's devices.yaml gemm_model, else roofline\n"
    "  --csv OUT           a header and one row (op,shape,dtype,gpu,time_us,tflops,gbps,tile,\n"
    "                      waves,bound) to OUT ('-': stdout) instead of the text\n"
    "  --shapes FILE       many kernels of one kind in one call: a shape a line (its numbers\n"
    "                      separated by blanks, '#' comments), a row or block each, in order\n"
    "  --help, -h          this help\n",
    kernel_main,
    kernel_options,
};

/* The kernels: their names and how many numbers follow. */
enum { K_GEMM, K_BMM, K_ATTENTION, K_NORM, K_ELEMENTWISE, N_KINDS };
static const char *const kind_names[N_KINDS] = {"gemm", "bmm", "attention", "norm", "elementwise"};
static const int kind_dims[N_KINDS] = {3, 4, 4, 1, 1};
static const char *const kind_shapes[N_KINDS] = {"M N K", "B M N K", "B H S D", "N", "BYTES"};
/* The name of each number, in order. */
static const char *const kind_names_of[N_KINDS][4] = {
    {"M", "N", "K"}, {"B", "M", "N", "K"}, {"B", "H", "S", "D"}, {"N"}, {"BYTES"}};

/* What one kernel is and what the model says of it. */
typedef struct kernel_result {
    double work, compute, memory, flops, bytes, seconds;
    gemm_tiling tiling; /* GEMMs only (tiles 0 otherwise) */
} kernel_result;

/* One number of a shape into *v: sizes are plain integers from 1 to 1e9 (cli_parse_int); BYTES a
 * byte count from 1 with an optional K, M, G, Ki... suffix (cli_parse_size). 0, or -1. */
static int parse_dim(int kind, const char *text, double *v)
{
    int iv = 0;
    if (kind == K_ELEMENTWISE)
        return cli_parse_size(text, v) || *v < 1 ? -1 : 0;
    if (cli_parse_int(text, &iv) || iv < 1)
        return -1;
    *v = iv;
    return 0;
}

/* What a shape's numbers may be, for messages. */
static const char *dim_expected(int kind)
{
    return kind == K_ELEMENTWISE ? CLI_SIZE_EXPECTED ", at least 1"
                                 : "whole numbers from 1 to 1000000000";
}

/* The positional numbers of the shape. */
static int parse_dims(int kind, const char *const *pos, double *dim)
{
    for (int i = 0; i < kind_dims[kind]; i++)
        if (parse_dim(kind, pos[i], &dim[i]))
            return cli_usage_error(&cli_kernel, "%s %s: bad %s '%s' (expected %s)",
                                   kind_names[kind], kind_shapes[kind], kind_names_of[kind][i],
                                   pos[i], dim_expected(kind));
    return 0;
}

/* A GEMM (batch b): its compute at the tiling its model picks (tiles and waves on Ampere and
 * Hopper tensor cores, else the roofline efficiency), its inputs and output through HBM. */
static void time_gemm(double b, double m, double n, double k, precision_t p, const device_spec *d,
                      kernel_result *r)
{
    r->tiling = cost_gemm_model(b, m, n, k, p, d);
    r->flops = 2.0 * b * m * n * k;
    r->compute = r->tiling.compute_s;
    r->bytes = cost_gemm_bytes(b, m, n, k, p);
    r->memory = r->tiling.memory_s;
    r->work = cost_gemm_kernel_seconds(b, m, n, k, p, d);
}

/* Fused attention as the transformer builder states it (workloads/transformer.c): Q, K, V read
 * and O written forward with the row log-sum-exp, backward Q, K, V, O, dO read and dQ, dK, dV
 * written; 4 b h s^2 d FLOPs forward (the causal tiles' share), 2.5 times that backward. Its
 * compute is the kernel's GEMM math alone (the same op with no traffic), its work the longer of
 * that and its traffic, at least the shortest kernel. */
static void time_attention(const double *x, const kernel_args *a, op_pass pass, precision_t p,
                           const device_spec *d, kernel_result *r)
{
    double b = x[0], h = x[1], s = x[2], dh = x[3], e = precision_bytes(p);
    double q = b * s * h * dh, lse = b * h * s * 4.0;
    workload_op op;
    memset(&op, 0, sizeof op);
    op.kind = OP_ATTENTION;
    op.batch = b * h;
    op.m = op.n = s;
    op.k = dh;
    op.fused = 1;
    op.causal = a->causal;
    op.warp_mma = a->warp_mma;
    op.kernels = 1;
    double f = 4.0 * b * h * s * s * dh * (a->causal ? cost_causal_tile_fraction(s) : 1.0);
    r->flops = pass == PASS_FWD ? f : 2.5 * f;
    r->compute = cost_attention_kernel_seconds(&op, pass, p, d); /* no traffic: the math */
    op.fwd_bytes = e * 4 * q + lse;
    op.bwd_bytes = e * 8 * q + lse;
    r->bytes = pass == PASS_FWD ? op.fwd_bytes : op.bwd_bytes;
    r->memory = r->bytes / (d->hbm_bw * cost_memory_efficiency());
    r->work = fmax(cost_attention_kernel_seconds(&op, pass, p, d), cost_kernel_min_seconds());
}

/* A memory-bound kernel moving `bytes`. */
static void time_memory(double bytes, const device_spec *d, kernel_result *r)
{
    r->bytes = bytes;
    r->memory = bytes / (d->hbm_bw * cost_memory_efficiency());
    r->work = cost_memory_kernel_seconds(bytes, d);
}

/* What bounds it: the fixed cost (one CUDA kernel's, and the shortest kernel's floor above the
 * work) when it outweighs the work, else the larger of compute and memory. */
static const char *bound_of(const kernel_result *r)
{
    double work = fmax(r->compute, r->memory);
    double fixed = r->seconds - work;
    return fixed > work ? "launch" : r->compute >= r->memory ? "compute" : "memory";
}

static void print_result(FILE *f, const kernel_args *a, int kind, const char *shape,
                         const device_spec *d, precision_t p, const kernel_result *r, int header)
{
    char tile[48] = "-", waves[32] = "-";
    const gemm_tiling *t = &r->tiling;
    if (t->tiles > 0) {
        if (t->split > 1)
            snprintf(tile, sizeof tile, "%dx%d/k%d", t->tile_m, t->tile_n, t->split);
        else
            snprintf(tile, sizeof tile, "%dx%d", t->tile_m, t->tile_n);
        snprintf(waves, sizeof waves, "%.0f", t->waves);
    }
    const char *op = kind_names[kind];
    if (kind == K_ATTENTION && (a->causal || a->warp_mma))
        op = a->causal && a->warp_mma ? "attention-causal-warp-mma"
             : a->causal              ? "attention-causal"
                                      : "attention-warp-mma";
    const char *pass = a->backward ? "-bwd" : "";
    double tflops = r->flops / r->seconds / 1e12, gbps = r->bytes / r->seconds / 1e9;
    if (a->csv) {
        if (header)
            fprintf(f, "op,shape,dtype,gpu,time_us,tflops,gbps,tile,waves,bound\n");
        fprintf(f, "%s%s,%s,%s,%s,%.6g,%.6g,%.6g,%s,%s,%s\n", op, pass, shape, precision_name(p),
                d->name, r->seconds * 1e6, tflops, gbps, tile, waves, bound_of(r));
        return;
    }
    fprintf(f, "%s%s %s %s on %s\n", op, pass, shape, precision_name(p), d->name);
    fprintf(f, "  time      %10.3f us  (work %.3f us + %.1f us a CUDA kernel costs besides it)\n",
            r->seconds * 1e6, r->work * 1e6, cost_cuda_kernel_gpu_overhead_seconds() * 1e6);
    if (r->flops > 0)
        fprintf(f, "  compute   %10.2f TFLOP/s  (%.1f%% of the %s peak, %.0f TFLOP/s)\n", tflops,
                100 * r->flops / r->seconds / cost_gemm_peak_flops(p, d), precision_name(p),
                cost_gemm_peak_flops(p, d) / 1e12);
    fprintf(f, "  memory    %10.1f GB/s     (%.1f%% of %.0f GB/s)\n", gbps,
            100 * r->bytes / r->seconds / d->hbm_bw, d->hbm_bw / 1e9);
    if (t->tiles > 0)
        fprintf(f,
                "  tiling    %s tiles, split-K %d: %.0f tiles in %s waves over %d SMs "
                "(efficiency %.3f)\n",
                tile, t->split, t->tiles, waves, d->sms, t->efficiency);
    fprintf(f, "  bound     %s (compute %.3f us, memory %.3f us)\n", bound_of(r), r->compute * 1e6,
            r->memory * 1e6);
}

/* The kernel's precision on this GPU: 0, or a usage error. */
static int check_dtype(int kind, const kernel_args *a, const device_spec *d, precision_t *p)
{
    if (precision_parse(a->dtype, p))
        return cli_bad_value(&cli_kernel, "--dtype", "type", a->dtype,
                             "fp16, bf16, fp8, fp4, fp32 or tf32");
    if (*p == PREC_FP8 && d->peak_flops[PREC_FP8] <= 0)
        return cli_usage_error(&cli_kernel, "--dtype fp8: %s has no FP8 tensor cores", d->name);
    if (*p == PREC_FP4 && d->peak_flops[PREC_FP4] <= 0)
        return cli_usage_error(&cli_kernel, "--dtype fp4: %s has no FP4 tensor cores", d->name);
    if (kind == K_ATTENTION && *p != PREC_FP16 && *p != PREC_BF16)
        return cli_usage_error(&cli_kernel, "--dtype %s: fused attention runs fp16 or bf16",
                               a->dtype);
    if (kind != K_GEMM && kind != K_BMM && (*p == PREC_FP8 || *p == PREC_FP4))
        return cli_usage_error(&cli_kernel, "--dtype %s: only GEMMs are modelled in it", a->dtype);
    if (a->causal && kind != K_ATTENTION)
        return cli_usage_error(&cli_kernel, "--causal: only attention is causal");
    if (a->warp_mma && kind != K_ATTENTION)
        return cli_usage_error(&cli_kernel, "--warp-mma: an attention kernel's option");
    if (a->warp_mma && d->warp_mma_fraction <= 0)
        return cli_usage_error(
            &cli_kernel,
            "--warp-mma: %s has no warp_mma_fraction in devices.yaml (warp-level "
            "MMA is not modelled on it)",
            d->name);
    if (a->backward && kind != K_ATTENTION && kind != K_NORM)
        return cli_usage_error(&cli_kernel, "--backward: only attention and norm have one "
                                            "backward kernel here");
    return 0;
}

/* One kernel of shape x, printed to f (the CSV header first when header). */
static void run_kernel(const kernel_args *a, int kind, const double *x, const device_spec *d,
                       precision_t p, FILE *f, int header)
{
    kernel_result r;
    memset(&r, 0, sizeof r);
    op_pass pass = a->backward ? PASS_BWD : PASS_FWD;
    if (kind == K_GEMM || kind == K_BMM) {
        const double *s = kind == K_BMM ? x + 1 : x;
        time_gemm(kind == K_BMM ? x[0] : 1.0, s[0], s[1], s[2], p, d, &r);
    } else if (kind == K_ATTENTION) {
        time_attention(x, a, pass, p, d, &r);
    } else {
        /* a fused norm reads x and writes y (2e), its backward reads dy and x, writes dx (3e) */
        double e = precision_bytes(p);
        time_memory(kind == K_NORM ? x[0] * e * (a->backward ? 3 : 2) : x[0], d, &r);
    }
    r.seconds = r.work + cost_cuda_kernel_gpu_overhead_seconds();
    char shape[96];
    int n = 0;
    for (int i = 0; i < kind_dims[kind]; i++)
        n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%.0f", i ? "x" : "", x[i]);
    print_result(f, a, kind, shape, d, p, &r, header);
}

/* One line of a --shapes file into x (its numbers, up to '#'): how many it holds (0: a blank or
 * comment line), or -1 after an error naming the file, line and column. */
static int shape_line(const kernel_args *a, int kind, int ln, char *line, double *x)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    int n = 0;
    for (char *t = line;;) {
        t += strspn(t, " \t\r\n");
        if (!*t)
            break;
        size_t w = strcspn(t, " \t\r\n");
        int last = t[w] == '\0';
        t[w] = '\0';
        if (n >= kind_dims[kind] || parse_dim(kind, t, &x[n])) {
            fprintf(stderr, "protosim: error: %s:%d:%d: %s: bad %s '%s' (a line holds %s: %s)\n",
                    a->shapes, ln, (int)(t - line) + 1, kind_names[kind],
                    n < kind_dims[kind] ? kind_names_of[kind][n] : "number", t, kind_shapes[kind],
                    dim_expected(kind));
            return -1;
        }
        n++;
        if (last)
            break;
        t += w + 1;
    }
    if (n > 0 && n < kind_dims[kind]) {
        fprintf(stderr, "protosim: error: %s:%d:1: %s needs %s (%d numbers), got %d\n", a->shapes,
                ln, kind_names[kind], kind_shapes[kind], kind_dims[kind], n);
        return -1;
    }
    return n;
}

/* --shapes FILE: one shape a line (the kernel's numbers separated by blanks; '#' starts a
 * comment; blank lines skipped), every line read and checked into *shapes (*rows of them; the
 * caller frees it) before anything is timed or written. */
static int read_shapes(const kernel_args *a, int kind, double (**shapes)[4], int *rows)
{
    *shapes = NULL;
    *rows = 0;
    FILE *in = fopen(a->shapes, "r");
    if (!in)
        return cli_usage_error(&cli_kernel, "--shapes: cannot read %s", a->shapes);
    char line[1024];
    int rc = 0, cap = 0;
    for (int ln = 1; !rc && fgets(line, sizeof line, in); ln++) {
        size_t len = strlen(line);
        if (len == sizeof line - 1 && line[len - 1] != '\n' && !feof(in)) {
            fprintf(stderr, "protosim: error: %s:%d:1: line longer than %d characters\n", a->shapes,
                    ln, (int)sizeof line - 2);
            rc = PS_EINPUT;
            break;
        }
        double x[4] = {0};
        int n = shape_line(a, kind, ln, line, x);
        if (n < 0)
            rc = PS_EINPUT;
        if (n <= 0)
            continue;
        if (*rows == cap) {
            cap = cap ? 2 * cap : 64;
            *shapes = xreallocarray(*shapes, (size_t)cap, sizeof **shapes);
        }
        memcpy((*shapes)[(*rows)++], x, sizeof x);
    }
    if (!rc && ferror(in)) {
        fprintf(stderr, "protosim: error: --shapes: cannot read %s (%s)\n", a->shapes,
                "not a readable text file");
        rc = PS_EINPUT;
    }
    fclose(in);
    if (!rc && *rows == 0) {
        fprintf(stderr, "protosim: error: %s:1:1: no shape in the file\n", a->shapes);
        rc = PS_EINPUT;
    }
    return rc;
}

/* The kernel (or each of --shapes, all read first) to --csv OUT or stdout. */
static int run_all(const kernel_args *a, int kind, const double *x, const device_spec *d)
{
    precision_t p = PREC_BF16;
    if (check_dtype(kind, a, d, &p))
        return PS_EINPUT;
    double(*shapes)[4] = NULL;
    int rows = 1;
    if (a->shapes && read_shapes(a, kind, &shapes, &rows)) {
        free(shapes);
        return PS_EINPUT;
    }
    FILE *f = stdout;
    if (a->csv && strcmp(a->csv, "-") && !(f = fopen(a->csv, "w"))) {
        free(shapes);
        return cli_usage_error(&cli_kernel, "--csv: cannot write %s", a->csv);
    }
    for (int i = 0; i < rows; i++)
        run_kernel(a, kind, shapes ? shapes[i] : x, d, p, f, i == 0);
    free(shapes);
    int bad = ferror(f);
    if (f != stdout)
        bad |= fclose(f) != 0;
    else
        bad |= fflush(f) != 0;
    if (bad)
        return cli_usage_error(&cli_kernel, "--csv: cannot write %s", a->csv ? a->csv : "stdout");
    return 0;
}

static int kernel_main(int argc, char **argv)
{
    kernel_args a = {NULL, "bf16", NULL, NULL, NULL, 0, 0, 0};
    const char *pos[6] = {0};
    int n_pos = 0;
    int prc = cli_parse_options(&cli_kernel, kernel_options, argc, argv, &a, pos, 6, &n_pos);
    if (prc)
        return cli_exit_code(prc);
    if (n_pos < 1)
        return cli_usage_error(&cli_kernel, "kernel needs a kernel: gemm, bmm, attention, norm "
                                            "or elementwise");
    int kind = 0;
    while (kind < N_KINDS && strcmp(pos[0], kind_names[kind]))
        kind++;
    if (kind == N_KINDS)
        return cli_usage_error(&cli_kernel,
                               "unknown kernel '%s' (expected gemm, bmm, attention, "
                               "norm or elementwise)",
                               pos[0]);
    double x[4] = {0};
    if (a.shapes && n_pos > 1)
        return cli_usage_error(&cli_kernel, "--shapes: give the shapes in the file, not after %s",
                               kind_names[kind]);
    if (!a.shapes && n_pos - 1 != kind_dims[kind])
        return cli_usage_error(&cli_kernel, "%s needs %s (%d numbers), got %d", kind_names[kind],
                               kind_shapes[kind], kind_dims[kind], n_pos - 1);
    if (!a.shapes && parse_dims(kind, pos + 1, x))
        return PS_EINPUT;
    if (!a.gpu)
        return cli_usage_error(&cli_kernel, "kernel needs --gpu");
    device_table t;
    const device_spec *d;
    if (cli_find_device(&cli_kernel, "--gpu", a.gpu, &t, &d))
        return PS_EINPUT;
    device_spec spec = *d; /* --gemm-model: this GPU costed by the model named */
    int rc = 0, model = a.gemm_model ? enum_parse(gemm_model_names, a.gemm_model) : d->gemm_tiles;
    if (model < 0)
        rc = cli_bad_value(&cli_kernel, "--gemm-model", "model", a.gemm_model, "roofline or tile");
    else if (a.gemm_model && kind != K_GEMM && kind != K_BMM)
        rc = cli_usage_error(&cli_kernel, "--gemm-model: only gemm and bmm have one");
    else if (a.gemm_model && model == 1 && !cost_tile_fitted(d))
        rc = cli_usage_error(&cli_kernel,
                             "--gemm-model tile: %s's architecture (%s) has no fitted tile "
                             "parameters (only ampere and hopper)",
                             d->name, enum_name(gpu_arch_names, d->arch));
    else if (a.gemm_model && model == 1 && strcmp(a.dtype, "fp32") == 0)
        rc = cli_usage_error(&cli_kernel, "--gemm-model tile: the tile model is of tensor-core "
                                          "GEMMs; fp32 runs on the SIMT cores (the roofline)");
    spec.gemm_tiles = model;
    if (!rc)
        rc = run_all(&a, kind, x, &spec);
    device_table_free(&t);
    return rc;
}
