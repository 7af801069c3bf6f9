/* trace_read.h: the first pass over a Kineto trace (inside workloads/ only): the file, gzip or
 * not, parsed by cJSON into the events the traced graph is built from. */
#ifndef PROTOSIM_TRACE_READ_H
#define PROTOSIM_TRACE_READ_H

#include <cjson/cJSON.h>

#include "trace.h"

typedef enum {
    EV_CPU_OP,     /* cat cpu_op */
    EV_ANNOTATION, /* cat user_annotation (ProfilerStep#N, nccl:..., ## forward ##) */
    EV_RUNTIME,    /* cat cuda_runtime, cuda_driver */
    EV_KERNEL,     /* cat kernel */
    EV_COPY,       /* cat gpu_memcpy, gpu_memset */
    EV_GPU_SYNC    /* cat cuda_sync on the GPU's side (stream waits, synchronizations) */
} ev_kind;

typedef struct trace_ev {
    int kind;       /* ev_kind */
    int idx;        /* index in traceEvents */
    int thread;     /* CPU events: into trace_events.tids; GPU events: into .streams */
    double ts, dur; /* microseconds, as in the file */
    long long corr; /* correlation id, -1 if none */
    const char *name;
    const cJSON *args; /* may be NULL */
} trace_ev;

typedef struct trace_events {
    cJSON *root; /* its nodes live in arena's blocks (trace_read.c) */
    void *arena;
    trace_ev *ev;
    int n;
    long long *tids; /* CPU threads, in order of first appearance */
    int n_tids;
    long long *streams; /* CUDA streams */
    int n_streams;
    int world_size, rank, has_distributed;
    char device[64];
} trace_events;

/* The whole file, decompressed when it is gzip (gzread passes other files through), with a
 * terminating NUL beyond *len; *out is the caller's. */
int trace_file_read(const char *path, char **out, size_t *len, ps_error *err);

/* Read and parse `path` and classify its events; *out owns the cJSON tree. */
int trace_events_read(const char *path, trace_events *out, ps_error *err);
void trace_events_free(trace_events *t);

/* "traceEvents[i]" into buf, for located errors. */
const char *trace_event_field(char *buf, size_t cap, int idx);

/* The named numeric argument of an event, or NAN. */
double trace_arg_number(const trace_ev *e, const char *key);

#endif
