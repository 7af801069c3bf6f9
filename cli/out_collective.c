/* out_collective.c: what `protosim collective` writes: the nccl-tests table (size, count, type,
 * redop, time, algbw, busbw, and the algorithm that ran) on stdout, or CSV rows for scripts.
 * Bus bandwidth follows nccl-tests' PERFORMANCE.md: algbw = size / time, busbw = algbw times
 * 2(n-1)/n for all-reduce and (n-1)/n for reduce-scatter, all-gather and all-to-all. */
#include <string.h>

#include "../sim/engine/htae.h"
#include "output.h"

double out_collective_bus_factor(coll_kind kind, int gpus)
{
    if (gpus < 2)
        return 0.0;
    double f = (double)(gpus - 1) / gpus;
    return kind == COLL_ALLREDUCE ? 2.0 * f : f;
}

static void write_table(FILE *f, const out_collective *t)
{
    double bus = out_collective_bus_factor(t->kind, t->gpus);
    fprintf(f, "# protosim collective: %s on %d GPU%s of %s, algorithm %s\n",
            coll_kind_name(t->kind), t->gpus, t->gpus == 1 ? "" : "s", t->cluster,
            enum_name(coll_algo_names, (int)t->forced));
    fprintf(f, "#\n#%13s %13s %7s %6s %7s %10s %8s %8s\n", "size", "count", "type", "redop", "algo",
            "time", "algbw", "busbw");
    fprintf(f, "#%13s %13s %7s %6s %7s %10s %8s %8s\n", "(B)", "(elements)", "", "", "", "(us)",
            "(GB/s)", "(GB/s)");
    for (int i = 0; i < t->n; i++) {
        double algbw = t->times[i] > 0 ? t->sizes[i] / t->times[i] / 1e9 : 0.0;
        fprintf(f, " %13.0f %13.0f %7s %6s %7s %10.2f %8.2f %8.2f\n", t->sizes[i], t->sizes[i] / 4,
                "float", t->kind == COLL_ALLTOALL ? "none" : "sum",
                enum_name(coll_algo_names, (int)t->algos[i]), t->times[i] * 1e6, algbw,
                algbw * bus);
    }
}

int out_collective_write(const char *csv_path, const out_collective *t, ps_error *err)
{
    if (!csv_path) {
        write_table(stdout, t);
        return 0;
    }
    int to_stdout = !strcmp(csv_path, "-");
    FILE *f = to_stdout ? stdout : fopen(csv_path, "w");
    if (!f)
        return out_write_error(csv_path, err);
    double bus = out_collective_bus_factor(t->kind, t->gpus);
    fputs("bytes,time_s,algbw_GBps,busbw_GBps,algo\n", f);
    for (int i = 0; i < t->n; i++) {
        double algbw = t->times[i] > 0 ? t->sizes[i] / t->times[i] / 1e9 : 0.0;
        fprintf(f, "%.0f,%.9e,%.4f,%.4f,%s\n", t->sizes[i], t->times[i], algbw, algbw * bus,
                enum_name(coll_algo_names, (int)t->algos[i]));
    }
    if (!to_stdout && fclose(f) != 0)
        return out_write_error(csv_path, err);
    return 0;
}
