/* out_plot.c: a sweep's SVG plot: throughput per plan, best first, coloured by pipeline degree
 * (a dlrm sweep: by sharding),
 * with the plans that do not fit or failed in a strip at the right. */
#include "output.h"

#include <math.h>
#include <string.h>

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

/* The plot's geometry and what it shows. */
typedef struct plot {
    double W, H, L, R, T, B, pw, ph, slot, ymax, step;
    int ticks; /* grid lines above 0: ymax = ticks * step */
    int counts[SWEEP_PLAN_STATUS_COUNT];
    int n_ok, n_bad, slots;
    int pps[16], n_pp; /* pipeline degrees present, ascending: colours and legend */
} plot;

static double nice_step(double range, int ticks)
{
    double raw = range / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return mag * (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10);
}

/* The y axis up to the highest throughput: about 5 round steps, or (where rounding leaves the
 * doubles: near DBL_MAX, among subnormals) 5 plain ones. Always 1 to 10 grid lines, so the
 * plot's size is bounded for any finite input. */
static void y_axis(plot *g, double top)
{
    if (!(top > 0) || !isfinite(top))
        top = 1;
    double step = nice_step(top, 5), n = ceil(top / step);
    if (!(step > 0) || !isfinite(step) || !isfinite(n * step) || n < 1 || n > 10) {
        step = top / 5;
        n = 5;
    }
    if (!(step > 0)) /* top is the smallest subnormal */
        step = top, n = 1;
    g->step = step;
    g->ticks = (int)n;
    g->ymax = step * n;
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
    }
}

static int pp_colour(const plot *g, int pp)
{
    int k = 0;
    while (k < g->n_pp && g->pps[k] != pp)
        k++;
    return k % 10;
}

/* What the bars show: samples/s for a dlrm sweep (no tokens), else tokens/s. */
static double plot_rate(const sweep_table *t, const sweep_plan *p)
{
    return t->dlrm ? p->fig.samples_per_s : p->fig.tokens_per_s;
}

static const char *plot_unit(const sweep_table *t)
{
    return t->dlrm ? "samples/s" : "tokens/s";
}

/* ": 123 tokens/s, 1.234 s, MFU 45.6%" or, dlrm, ": 123 samples/s, 3.688 ms, lookup max
 * 0.383 ms, all-to-all 1.246 ms, imbalance 1.13" */
static void plot_figures(FILE *f, const sweep_table *t, const sweep_plan *p)
{
    if (t->dlrm)
        fprintf(f,
                ": %.0f samples/s, %.3f ms, lookup max %.3f ms, all-to-all %.3f ms, imbalance "
                "%.2f",
                p->fig.samples_per_s, 1e3 * p->fig.iteration_s, 1e3 * p->lookup_max_s,
                1e3 * p->alltoall_s, p->lookup_imbalance);
    else
        fprintf(f, ": %.0f tokens/s, %.3f s, MFU %.1f%%", p->fig.tokens_per_s, p->fig.iteration_s,
                100 * p->fig.mfu);
}

/* The colour key of a plan: its pipeline degree, or a dlrm plan's sharding (emb_sharding; 5
 * per-table proposals, 6 the tables on the one GPU). */
static int plot_key(const sweep_table *t, const sweep_plan *p)
{
    if (!t->dlrm)
        return p->desc.pp;
    return p->proposal >= 0 ? 5 : p->desc.emb_sharding < 0 ? 6 : p->desc.emb_sharding;
}

static void plot_key_name(const sweep_table *t, int key, char *out, size_t n)
{
    if (!t->dlrm)
        snprintf(out, n, "pp %d", key);
    else
        snprintf(out, n, "%s",
                 key == 5   ? "per table (auto)"
                 : key == 6 ? "one GPU"
                            : enum_name(emb_sharding_names, key));
}

static void plot_layout(const sweep_table *t, plot *g)
{
    memset(g, 0, sizeof *g);
    sweep_plans_count(t->plans, t->n, g->counts);
    g->n_ok = g->counts[SWEEP_PLAN_OK];
    g->n_bad = g->counts[SWEEP_PLAN_OOM] + g->counts[SWEEP_PLAN_FAILED];
    g->slots = g->n_ok + g->n_bad;
    /* few plans: their names under the axis (room below); many: rank ticks */
    g->W = 1200, g->H = 600, g->L = 110, g->R = 190, g->T = 70, g->B = g->slots <= 40 ? 200 : 80;
    g->pw = g->W - g->L - g->R, g->ph = g->H - g->T - g->B;
    g->slot = g->slots ? g->pw / g->slots : g->pw;
    double top = 0;
    for (int i = 0; i < t->n; i++)
        if (t->plans[i].status == SWEEP_PLAN_OK && plot_rate(t, &t->plans[i]) > top)
            top = plot_rate(t, &t->plans[i]);
    y_axis(g, top);
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status == SWEEP_PLAN_INVALID || p->status == SWEEP_PLAN_PENDING)
            continue;
        int k = 0;
        while (k < g->n_pp && g->pps[k] != plot_key(t, p))
            k++;
        if (k == g->n_pp && g->n_pp < 16)
            g->pps[g->n_pp++] = plot_key(t, p);
    }
    for (int i = 1; i < g->n_pp; i++) /* insertion sort */
        for (int j = i; j > 0 && g->pps[j - 1] > g->pps[j]; j--) {
            int x = g->pps[j];
            g->pps[j] = g->pps[j - 1];
            g->pps[j - 1] = x;
        }
}

static void plot_title(FILE *f, const sweep_table *t, const plot *g)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            g->W, g->H, g->W, g->H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    const char *cl = strrchr(t->cluster_file, '/');
    fprintf(f, "<text x=\"%.0f\" y=\"30\" font-size=\"20\" font-weight=\"bold\">Sweep: ", g->L);
    xml_text(f, t->workload);
    fprintf(f, " on ");
    xml_text(f, cl ? cl + 1 : t->cluster_file);
    fprintf(f, " (%d GPUs), throughput per plan, best first</text>\n", t->gpus);
    fprintf(f,
            "<text x=\"%.0f\" y=\"52\" font-size=\"13\" fill=\"#555\">%d simulated, %d do not "
            "fit in memory, %d failed, %d invalid combinations not shown",
            g->L, g->n_ok, g->counts[SWEEP_PLAN_OOM], g->counts[SWEEP_PLAN_FAILED],
            g->counts[SWEEP_PLAN_INVALID]);
    if (g->n_ok) {
        const sweep_plan *best = &t->plans[t->order[0]];
        char label[128];
        sweep_plan_label(best, t->show_gpus, t->show_bucket, t->show_sp, label, sizeof label);
        fprintf(f, "; best: ");
        xml_text(f, label);
        fprintf(f, " (");
        plot_figures(f, t, best);
        fprintf(f, ")");
    }
    fprintf(f, "</text>\n");
}

/* The y grid and axis label, and the strip of plans not simulated. */
static void plot_grid(FILE *f, const sweep_table *t, const plot *g)
{
    for (int k = 0; k <= g->ticks; k++) {
        double y = k == g->ticks ? g->ymax : k * g->step;
        double py = g->T + g->ph - y / g->ymax * g->ph;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                g->L, py, g->L + g->pw, py);
        char tick[32];
        if (y == 0)
            snprintf(tick, sizeof tick, "0");
        else if (g->ymax >= 1e6)
            snprintf(tick, sizeof tick, "%gM", y / 1e6);
        else if (g->ymax >= 1e4)
            snprintf(tick, sizeof tick, "%gk", y / 1e3);
        else
            snprintf(tick, sizeof tick, "%g", y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s</text>\n",
                g->L - 6, py + 4, tick);
    }
    fprintf(f,
            "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" font-size=\"14\" "
            "text-anchor=\"middle\">%s (simulated)</text>\n",
            g->L - 60, g->T + g->ph / 2, plot_unit(t));
    if (!g->n_bad)
        return;
    double x0 = g->L + g->n_ok * g->slot, w = g->n_bad * g->slot;
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>\n",
            x0, g->T, w, g->ph);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "fill=\"#555\">not simulated</text>\n",
            x0 + w / 2, g->T + 16);
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
            "fill=\"#555\">%d OOM, %d failed</text>\n",
            x0 + w / 2, g->T + 32, g->counts[SWEEP_PLAN_OOM], g->counts[SWEEP_PLAN_FAILED]);
}

/* Plan i of the ranking: a bar (ok), a circle (oom) or a cross (failed). */
static void plot_mark(FILE *f, const sweep_table *t, const plot *g, const sweep_plan *p, double cx,
                      const char *label)
{
    const char *col = palette[pp_colour(g, plot_key(t, p))];
    double bw = g->slot < 4 ? g->slot : g->slot * 0.8;
    double r = fmin(6, fmax(2.5, g->slot * 0.35));
    if (p->status == SWEEP_PLAN_OK) {
        double h = plot_rate(t, p) / g->ymax * g->ph;
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
                "<title>#%d %s",
                cx - bw / 2, g->T + g->ph - h, bw, h, col, p->rank, label);
        plot_figures(f, t, p);
        fprintf(f, "</title></rect>\n");
    } else if (p->status == SWEEP_PLAN_OOM) {
        fprintf(f,
                "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.1f\" fill=\"none\" stroke=\"%s\" "
                "stroke-width=\"2\"><title>%s: OOM, %s</title></circle>\n",
                cx, g->T + g->ph - 10, r, col, label, p->reason);
    } else {
        fprintf(f,
                "<path d=\"M%.2f %.2f l8 8 m0 -8 l-8 8\" stroke=\"#d62728\" "
                "stroke-width=\"2\"><title>%s: failed, ",
                cx - 4, g->T + g->ph - 34, label);
        xml_text(f, p->reason);
        fprintf(f, "</title></path>\n");
    }
}

static void plot_marks(FILE *f, const sweep_table *t, const plot *g)
{
    if (g->slots > 40 && g->n_ok)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"64\" fill=\"white\" "
                "stroke=\"#999\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                "font-weight=\"bold\">best plans</text>\n",
                g->L + g->pw * 0.28 - 8, g->T + 8, g->pw * 0.52, g->L + g->pw * 0.28, g->T + 22);
    for (int i = 0; i < g->slots && i < t->n; i++) {
        const sweep_plan *p = &t->plans[t->order[i]];
        double cx = g->L + (i + 0.5) * g->slot;
        char label[128];
        sweep_plan_label(p, t->show_gpus, t->show_bucket, t->show_sp, label, sizeof label);
        plot_mark(f, t, g, p, cx, label);
        /* plan names under the axis when there is room, else the best three above their bars */
        if (g->slots <= 40) {
            fprintf(f,
                    "<text transform=\"translate(%.1f,%.1f) rotate(-60)\" font-size=\"10\" "
                    "text-anchor=\"end\">%s</text>\n",
                    cx + 3, g->T + g->ph + 10, label);
        } else if (p->status == SWEEP_PLAN_OK && p->rank <= 3) {
            /* numbered marker over the bar; the names go in the box */
            double h = plot_rate(t, p) / g->ymax * g->ph;
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" "
                    "text-anchor=\"middle\">%d</text>\n",
                    g->L + 8 + 14 * (p->rank - 1), g->T + g->ph - h - 6, p->rank);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%d. ", g->L + g->pw * 0.28,
                    g->T + 22 + 17 * p->rank, p->rank);
            xml_text(f, label);
            plot_figures(f, t, p);
            fprintf(f, "</text>\n");
        }
    }
}

static void plot_axes(FILE *f, const plot *g)
{
    double L = g->L, T = g->T, ph = g->ph, pw = g->pw;
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T,
            L, T + ph);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L,
            T + ph, L + pw, T + ph);
    if (g->slots > 40 && g->n_ok) {
        double xs = nice_step(g->n_ok, 8);
        if (xs < 1)
            xs = 1;
        for (double k = xs; k <= g->n_ok; k += xs) {
            double x = L + (k - 0.5) * g->slot;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>"
                    "<text x=\"%.1f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">%g"
                    "</text>\n",
                    x, T + ph, x, T + ph + 5, x, T + ph + 19, k);
        }
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" text-anchor=\"middle\">%s</text>\n",
            L + pw / 2, g->H - 10, g->slots > 40 ? "plan rank (best first)" : "plans, best first");
}

static void plot_legend(FILE *f, const sweep_table *t, const plot *g)
{
    double lx = g->L + g->pw + 24, ly = g->T + 10;
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", lx,
            ly, t->dlrm ? "sharding" : "pipeline degree");
    for (int k = 0; k < g->n_pp; k++) {
        double y = ly + 22 + 22 * k;
        char name[32];
        plot_key_name(t, g->pps[k], name, sizeof name);
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">%s</text>\n",
                lx, y - 11, palette[k % 10], lx + 22, y, name);
    }
    double y = ly + 22 + 22 * g->n_pp + 14;
    fprintf(f,
            "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"5\" fill=\"none\" stroke=\"#333\" "
            "stroke-width=\"2\"/><text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">does not fit "
            "(OOM)</text>\n",
            lx + 7, y - 4, lx + 22, y);
    fprintf(f,
            "<path d=\"M%.0f %.0f l8 8 m0 -8 l-8 8\" stroke=\"#d62728\" stroke-width=\"2\"/>"
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">failed</text>\n",
            lx + 3, y + 14, lx + 22, y + 22);
}

int out_sweep_plot(const char *path, const sweep_table *t, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return out_write_error(path, err);
    plot g;
    plot_layout(t, &g);
    plot_title(f, t, &g);
    plot_grid(f, t, &g);
    plot_marks(f, t, &g);
    plot_axes(f, &g);
    plot_legend(f, t, &g);
    fprintf(f, "</svg>\n");
    if (fclose(f))
        return out_write_error(path, err);
    return 0;
}
