/* vocab.h: the small shared words every layer uses: source locations, numeric precisions, and
 * name tables for enums (one table per enum, looked up both ways). Depends on nothing. */
#ifndef PROTOSIM_VOCAB_H
#define PROTOSIM_VOCAB_H

typedef struct src_loc {
    int line, column; /* 1-based; 0 when absent */
} src_loc;

/* Numeric formats of the compute path. fp8 is a GEMM format (Transformer Engine's FP8 GEMMs in
 * a bf16 mixed-precision model: strategy `precision: fp8`); its element is one byte. */
/* PREC_FP4 (NVFP4: 4-bit elements with an 8-bit scale per 16) is a GEMM input format only:
 * precision_bytes is never asked for it (the GEMM costs count its bytes, sim/cost/cost.c). */
typedef enum {
    PREC_FP32,
    PREC_TF32,
    PREC_FP16,
    PREC_BF16,
    PREC_FP8,
    PREC_FP4,
    PREC_COUNT
} precision_t;

int precision_bytes(precision_t p); /* bytes per element: 4 (fp32, tf32), 2, or 1 (fp8) */
const char *precision_name(precision_t p);
int precision_parse(const char *s, precision_t *out); /* 0 ok, -1 unknown name */

/* An enum's names, indexed by value: names[v] for v in [0, count). */
typedef struct enum_names {
    const char *const *names;
    int count;
} enum_names;

#define ENUM_NAMES(table) ((enum_names){(table), (int)(sizeof(table) / sizeof((table)[0]))})

/* names[v], or "?" when v is out of range. */
const char *enum_name(enum_names t, int v);
/* The value whose name is s, or -1. */
int enum_parse(enum_names t, const char *s);

extern const enum_names precision_names;

/* Where bundled data (workloads/models, topology/devices, topology/clusters, strategies/examples)
 * lives: $PROTOSIM_DATA_DIR when set; else an installed tree beside the binary, BIN/../share/
 * protosim (meson install, --destdir or a moved prefix included), when it holds
 * topology/devices/devices.yaml; else the install prefix's share/protosim when it does; else the
 * source tree the binary was built from. Found once per process. */
const char *ps_data_dir(void);

/* Monotonic host seconds, for the wall-clock timings reports give of their own steps. */
double ps_now_s(void);

#endif
