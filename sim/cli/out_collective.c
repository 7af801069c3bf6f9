/* out_collective.c: what `protosim collective` writes: one "bytes,time_s" row per message size,
 * like the nccl-tests tables it is compared with. */
#include "output.h"

int out_collective_csv(const char *path, const double *sizes, const double *times, int n,
                       ps_error *err)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f)
        return out_write_error(path, err);
    fputs("bytes,time_s\n", f);
    for (int i = 0; i < n; i++)
        fprintf(f, "%.0f,%.9e\n", sizes[i], times[i]);
    if (f != stdout && fclose(f) != 0)
        return out_write_error(path, err);
    return 0;
}
