/* out_compare.c: `protosim compare`'s outputs: the table per traced rank (text), and the same
 * rows as JSON and CSV. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

/* The difference as a percentage of the measured value; NAN when nothing was measured. */
static double percent(const compare_row *r)
{
    return r->measured_s > 0 ? 100.0 * (r->predicted_s - r->measured_s) / r->measured_s : NAN;
}

/* Whether the table shows row r: the whole step, and rows with time on either side. */
static int shown(const compare_row *r)
{
    return r->row == ROW_STEP || r->measured_s != 0 || r->predicted_s != 0;
}

void out_compare_text(FILE *f, const out_compare *x)
{
    for (int i = 0; i < x->n; i++) {
        const compare_table *t = &x->t[i];
        int w = 28; /* the first column: its longest name shown */
        for (int k = 0; k < t->n_rows; k++)
            if (shown(&t->rows[k]) && (int)strlen(t->rows[k].name) > w)
                w = (int)strlen(t->rows[k].name);
        fprintf(f, "compare %s (rank %d, mean of %d step%s) with %s on %s\n", t->trace, t->rank,
                t->steps, t->steps == 1 ? "" : "s", x->strategy, x->cluster);
        fprintf(f, "  %-*s %12s %12s %14s %9s\n", w, "kind", "measured ms", "predicted ms",
                "difference ms", "%");
        for (int k = 0; k < t->n_rows; k++) {
            const compare_row *r = &t->rows[k];
            if (!shown(r))
                continue; /* neither side has any */
            if (r->row == ROW_STEP)
                fprintf(f, "  %s\n", "----");
            double pc = percent(r);
            char pct[32];
            snprintf(pct, sizeof pct, isnan(pc) ? "-" : "%+.1f", pc);
            fprintf(f, "  %-*s %12.3f %12.3f %+14.3f %9s\n", w, r->name, r->measured_s * 1e3,
                    r->predicted_s * 1e3, (r->predicted_s - r->measured_s) * 1e3, pct);
        }
        fprintf(f,
                "  predicted compute of GPU %d: %.3f ms simulated = %.3f ms of the ops' kernels "
                "(cost model) %+.3f ms host/overhead in segments\n",
                t->rank, t->simulated_compute_s * 1e3,
                (t->simulated_compute_s - t->residual_s) * 1e3, t->residual_s * 1e3);
    }
}

int out_compare_json(const char *path, const out_compare *x, ps_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "strategy", x->strategy);
    cJSON_AddStringToObject(root, "cluster", x->cluster);
    cJSON *tables = cJSON_AddArrayToObject(root, "tables");
    for (int i = 0; i < x->n; i++) {
        const compare_table *t = &x->t[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "trace", t->trace);
        cJSON_AddNumberToObject(o, "rank", t->rank);
        cJSON_AddNumberToObject(o, "steps", t->steps);
        cJSON_AddNumberToObject(o, "simulated_compute_ms", t->simulated_compute_s * 1e3);
        cJSON_AddNumberToObject(o, "residual_ms", t->residual_s * 1e3);
        cJSON *rows = cJSON_AddArrayToObject(o, "rows");
        for (int k = 0; k < t->n_rows; k++) {
            const compare_row *r = &t->rows[k];
            cJSON *it = cJSON_CreateObject();
            cJSON_AddStringToObject(it, "kind", r->name);
            cJSON_AddNumberToObject(it, "measured_ms", r->measured_s * 1e3);
            cJSON_AddNumberToObject(it, "predicted_ms", r->predicted_s * 1e3);
            cJSON_AddNumberToObject(it, "difference_ms", (r->predicted_s - r->measured_s) * 1e3);
            double pc = percent(r);
            if (isnan(pc))
                cJSON_AddNullToObject(it, "difference_pct");
            else
                cJSON_AddNumberToObject(it, "difference_pct", pc);
            cJSON_AddItemToArray(rows, it);
        }
        cJSON_AddItemToArray(tables, o);
    }
    return out_json_file(path, root, err);
}

int out_compare_csv(const char *path, const out_compare *x, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return out_write_error(path, err);
    fputs("trace,rank,kind,measured_ms,predicted_ms,difference_ms,difference_pct\n", f);
    for (int i = 0; i < x->n; i++)
        for (int k = 0; k < x->t[i].n_rows; k++) {
            const compare_row *r = &x->t[i].rows[k];
            double pc = percent(r);
            fprintf(f, "%s,%d,%s,%.6f,%.6f,%.6f,", x->t[i].trace, x->t[i].rank, r->name,
                    r->measured_s * 1e3, r->predicted_s * 1e3,
                    (r->predicted_s - r->measured_s) * 1e3);
            if (!isnan(pc))
                fprintf(f, "%.3f", pc);
            fputc('\n', f);
        }
    return fclose(f) != 0 ? out_write_error(path, err) : 0;
}
