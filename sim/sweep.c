/* sweep.c: the sweep engine: enumerate a sweep's plans, simulate each in a forked worker (the
 * parent loads the platform once; SimGrid runs once per process), rank, and write the outputs. */
#include "sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../strategies/compile.h"
#include "htae.h"
#include "report.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char *const status_names[] = {"ok", "oom", "failed", "invalid", "pending"};

/* Everything the outputs need: the sweep's identity and its plans (sorted by index). */
typedef struct sweep_table {
    char sweep_file[512], cluster_file[512], base[1024], workload[64];
    int gpus, memory_fit, combinations, shard_k, shard_n;
    char hash[17];
    cJSON *axes; /* {"tensor": [4, 8], "data": "auto", ...}, owned */
    int show_bucket, show_sp;
    sweep_plan *plans;
    int n;
    int *order; /* ranked order of plans[] */
    double wall_s;
} sweep_table;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

void sweep_default_options(sweep_options *o)
{
    memset(o, 0, sizeof *o);
    o->progress = -1;
    o->top = 20;
}

/* ---- enumeration ---- */

static const char *short_recompute(int r)
{
    return r == RECOMPUTE_SELECTIVE ? "sel" : r == RECOMPUTE_FULL ? "full" : "none";
}

void sweep_plan_label(const sweep_plan *p, int show_bucket, int show_sp, char *out, size_t n)
{
    char sched[32];
    if (p->schedule == SCHED_INTERLEAVED)
        snprintf(sched, sizeof sched, "int-v%d", p->virtual_stages);
    else
        snprintf(sched, sizeof sched, "%s", schedule_name((pipeline_schedule)p->schedule));
    int k = snprintf(out, n, "tp%d pp%d dp%d mb%d %s zero%d %s", p->tp, p->pp, p->dp,
                     p->micro_batch, sched, p->zero, short_recompute(p->recompute));
    if (show_bucket && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, " b%g", p->bucket_mb);
    if (show_sp && k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, " %s", p->sequence_parallel ? "sp" : "nosp");
}

static void apply_plan(const sweep_plan *p, strategy *s)
{
    s->tp = p->tp;
    s->pp = p->pp;
    s->dp = p->dp;
    s->micro_batch = p->micro_batch;
    s->schedule = (pipeline_schedule)p->schedule;
    s->virtual_stages = p->virtual_stages;
    s->zero = p->zero;
    s->recompute = (recompute_mode)p->recompute;
    s->bucket_mb = p->bucket_mb;
    s->sequence_parallel = p->sequence_parallel;
}

int sweep_plan_strategy(const sweep_spec *s, const sweep_plan *p, strategy *out)
{
    if (strategy_clone(&s->base, out))
        return -1;
    apply_plan(p, out);
    return 0;
}

static void mark_invalid(sweep_plan *p, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void mark_invalid(sweep_plan *p, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
    snprintf(p->reason_kind, sizeof p->reason_kind, "%s", kind);
    p->status = SWEEP_PLAN_INVALID;
}

/* Checks of one combination; marks it invalid with the reason, or leaves it pending. */
static void check_plan(const sweep_spec *s, int gpus, int data_auto, sweep_plan *p)
{
    if (data_auto) {
        if (gpus % (p->tp * p->pp)) {
            mark_invalid(p, "gpus", "tensor %d x pipeline %d does not divide the %d GPUs", p->tp,
                         p->pp, gpus);
            return;
        }
        p->dp = gpus / (p->tp * p->pp);
    }
    if ((long)p->tp * p->pp * p->dp != gpus) {
        mark_invalid(p, "gpus", "tensor %d x pipeline %d x data %d = %ld GPUs, not %d", p->tp,
                     p->pp, p->dp, (long)p->tp * p->pp * p->dp, gpus);
        return;
    }
    strategy v = s->base; /* shallow: only read by strategy_validate */
    apply_plan(p, &v);
    ps_error e;
    ps_error_clear(&e);
    if (strategy_validate(&v, &e)) {
        mark_invalid(p, e.field, "%s", e.message);
        return;
    }
    if (p->schedule == SCHED_INTERLEAVED && p->pp < 2) {
        mark_invalid(p, "strategy.pipeline.schedule",
                     "the interleaved schedule needs a pipeline degree of at least 2");
        return;
    }
    int m = strategy_micro_batches(&v);
    if (p->schedule == SCHED_INTERLEAVED && m % p->pp)
        mark_invalid(p, "strategy.pipeline.schedule",
                     "the interleaved schedule needs the micro-batches per data-parallel rank "
                     "(%d) to be a multiple of the pipeline degree (%d)",
                     m, p->pp);
}

int sweep_enumerate(const sweep_spec *s, int gpus, sweep_plan **out, int *n, ps_error *err)
{
    long total = 1;
    for (int k = 0; k < SWEEP_AXIS_COUNT; k++) {
        total *= sweep_axis_count(s, (sweep_axis_kind)k);
        if (total > s->max_plans) {
            for (int j = k + 1; j < SWEEP_AXIS_COUNT && total < 1L << 40; j++)
                total *= sweep_axis_count(s, (sweep_axis_kind)j);
            src_loc l = s->max_plans_loc.line ? s->max_plans_loc : s->axes_loc;
            return ps_error_set(err, PS_EINPUT, s->file, l.line, l.column, "constraints.max_plans",
                                "the axes give %ld combinations, more than max_plans %d "
                                "(shorten the axes or raise constraints.max_plans)",
                                total, s->max_plans);
        }
    }
    sweep_plan *plans = calloc((size_t)total, sizeof *plans);
    if (!plans)
        return ps_error_set(err, PS_EINTERNAL, s->file, 0, 0, "", "out of memory");
    const strategy *b = &s->base;
    int data_auto = s->axes[SWEEP_DATA].data_auto;
    int digit[SWEEP_AXIS_COUNT] = {0};
    for (long i = 0; i < total; i++) {
        sweep_plan *p = &plans[i];
        p->index = (int)i;
        p->status = SWEEP_PLAN_PENDING;
        double v[SWEEP_AXIS_COUNT] = {b->tp,        b->pp,
                                      b->dp,        b->micro_batch,
                                      b->schedule,  b->virtual_stages,
                                      b->zero,      b->recompute,
                                      b->bucket_mb, b->sequence_parallel};
        for (int k = 0; k < SWEEP_AXIS_COUNT; k++)
            if (s->axes[k].present && !s->axes[k].data_auto)
                v[k] = s->axes[k].values[digit[k]];
        p->tp = (int)v[SWEEP_TENSOR];
        p->pp = (int)v[SWEEP_PIPELINE];
        p->dp = (int)v[SWEEP_DATA];
        p->micro_batch = (int)v[SWEEP_MICRO_BATCH];
        p->schedule = (int)v[SWEEP_SCHEDULE];
        p->virtual_stages = (int)v[SWEEP_VIRTUAL_STAGES];
        p->zero = (int)v[SWEEP_ZERO];
        p->recompute = (int)v[SWEEP_RECOMPUTE];
        p->bucket_mb = v[SWEEP_BUCKET_MB];
        p->sequence_parallel = (int)v[SWEEP_SEQUENCE_PARALLEL];
        check_plan(s, gpus, data_auto, p);
        /* next combination: the last axis varies fastest */
        for (int k = SWEEP_AXIS_COUNT - 1; k >= 0; k--) {
            if (++digit[k] < sweep_axis_count(s, (sweep_axis_kind)k))
                break;
            digit[k] = 0;
        }
    }
    *out = plans;
    *n = (int)total;
    return 0;
}

/* ---- workers ---- */

static const char *signal_label(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL (out of memory?)";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "a signal";
    }
}

static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The worker: compile, check memory, simulate, summarize; the record goes to fd. Never
 * returns. PROTOSIM_SWEEP_CRASH_PLAN=K (a test hook) makes plan K's worker die of SIGSEGV. */
static void worker_main(const sweep_spec *spec, const cluster *c, int memory_fit, sweep_plan p,
                        int fd)
{
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
    const char *crash = getenv("PROTOSIM_SWEEP_CRASH_PLAN");
    if (crash && *crash && atoi(crash) == p.index) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    ps_error err;
    ps_error_clear(&err);
    strategy s;
    compiled_plan plan;
    htae_result res;
    memset(&plan, 0, sizeof plan);
    memset(&res, 0, sizeof res);
    int rc = sweep_plan_strategy(spec, &p, &s)
                 ? ps_error_set(&err, PS_EINTERNAL, NULL, 0, 0, NULL, "out of memory")
                 : compile_plan(&s, c, NULL, &plan, &err);
    if (!rc) {
        double peak = 0;
        for (int r = 0; r < plan.gpus; r++)
            if (plan.memory[r].total > peak)
                peak = plan.memory[r].total;
        p.peak_memory_bytes = peak;
        p.memory_capacity_bytes = plan.memory_capacity;
        if (memory_fit && peak > plan.memory_capacity) {
            p.status = SWEEP_PLAN_OOM;
            snprintf(p.reason, sizeof p.reason, "needs %.2f GiB per GPU, has %.2f GiB", peak / GIB,
                     plan.memory_capacity / GIB);
            _exit(write_all(fd, &p, sizeof p) ? 3 : 0);
        }
        rc = htae_run(plan.graph, c, NULL, &res, &err);
    }
    if (!rc) {
        report_summary sum;
        report_summarize(&plan, &res, &sum);
        p.status = SWEEP_PLAN_OK;
        p.iteration_s = sum.iteration_s;
        p.samples_per_s = sum.samples_per_s;
        p.tokens_per_s = sum.tokens_per_s;
        p.mfu = sum.mfu;
        p.peak_memory_bytes = sum.peak_memory_bytes;
        p.memory_capacity_bytes = sum.memory_capacity;
        p.compute_s = sum.compute_s;
        p.exposed_comm_s = sum.exposed_comm_s;
        p.bubble_s = sum.bubble_s;
        p.idle_s = sum.idle_s;
        p.sim_wall_s = res.wall_s;
    } else {
        p.status = SWEEP_PLAN_FAILED;
        snprintf(p.reason_kind, sizeof p.reason_kind, "error");
        snprintf(p.reason, sizeof p.reason, "%.100s%s%.300s", err.field[0] ? err.field : "",
                 err.field[0] ? ": " : "", err.message);
    }
    /* No cleanup: the process ends here and the parent's engine must not be torn down. */
    int wrc = write_all(fd, &p, sizeof p);
    _exit(wrc ? 3 : rc ? 3 : 0);
}

typedef struct worker {
    pid_t pid;
    int fd;
    int plan; /* index into the plans array */
    size_t got;
    sweep_plan rec;
} worker;

/* Finish a worker whose pipe reached end of file: reap it and record its outcome. */
static void worker_finish(worker *w, sweep_plan *plans)
{
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(w->fd);
    sweep_plan *p = &plans[w->plan];
    int complete = w->got == sizeof w->rec && w->rec.index == p->index;
    if (WIFSIGNALED(st)) {
        p->status = SWEEP_PLAN_FAILED;
        snprintf(p->reason_kind, sizeof p->reason_kind, "crash");
        snprintf(p->reason, sizeof p->reason, "worker killed by %s (signal %d)",
                 signal_label(WTERMSIG(st)), WTERMSIG(st));
    } else if (complete) {
        *p = w->rec;
        if (WEXITSTATUS(st) && p->status != SWEEP_PLAN_FAILED) {
            p->status = SWEEP_PLAN_FAILED;
            snprintf(p->reason, sizeof p->reason, "worker exited with code %d", WEXITSTATUS(st));
        }
    } else {
        p->status = SWEEP_PLAN_FAILED;
        snprintf(p->reason_kind, sizeof p->reason_kind, "crash");
        snprintf(p->reason, sizeof p->reason, "worker exited with code %d and no result",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    w->pid = 0;
}

static void progress_draw(int done, int total, double t0, int final)
{
    double el = now_s() - t0;
    double rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    int width = 30, fill = total ? done * width / total : width;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] %d/%d plans  %.1f plans/s  ETA %d:%02d ", bar, done, total, rate,
            (int)eta / 60, (int)eta % 60);
    if (final)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Simulate the pending plans of `todo` with at most `jobs` workers alive. */
static int run_workers(const sweep_spec *spec, const cluster *c, sweep_plan *plans, const int *todo,
                       int n_todo, int jobs, int progress, ps_error *err)
{
    worker *ws = calloc((size_t)jobs, sizeof *ws);
    struct pollfd *pfd = calloc((size_t)jobs, sizeof *pfd);
    if (!ws || !pfd) {
        free(ws);
        free(pfd);
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "out of memory");
    }
    double t0 = now_s(), last_draw = 0;
    int next = 0, done = 0, alive = 0, rc = 0;
    if (progress)
        progress_draw(0, n_todo, t0, 0);
    while (done < n_todo) {
        while (alive < jobs && next < n_todo) {
            int slot = 0;
            while (ws[slot].pid)
                slot++;
            int fds[2];
            if (pipe(fds)) {
                rc = ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "pipe: %s", strerror(errno));
                break;
            }
            fflush(stdout);
            fflush(stderr);
            pid_t pid = fork();
            if (pid < 0) {
                close(fds[0]);
                close(fds[1]);
                rc = ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "fork: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                close(fds[0]);
                worker_main(spec, c, spec->memory_fit, plans[todo[next]], fds[1]);
            }
            close(fds[1]);
            worker *w = &ws[slot];
            memset(w, 0, sizeof *w);
            w->pid = pid;
            w->fd = fds[0];
            w->plan = todo[next];
            next++;
            alive++;
        }
        if (rc && alive == 0)
            break;
        int np = 0;
        int map[jobs > 0 ? jobs : 1];
        for (int i = 0; i < jobs; i++)
            if (ws[i].pid) {
                pfd[np].fd = ws[i].fd;
                pfd[np].events = POLLIN;
                pfd[np].revents = 0;
                map[np++] = i;
            }
        int k = poll(pfd, (nfds_t)np, progress ? 250 : -1);
        if (k < 0 && errno != EINTR) {
            rc = ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "poll: %s", strerror(errno));
            break;
        }
        for (int i = 0; k > 0 && i < np; i++) {
            if (!pfd[i].revents)
                continue;
            worker *w = &ws[map[i]];
            char *dst = (char *)&w->rec;
            char sink[512];
            ssize_t r = w->got < sizeof w->rec ? read(w->fd, dst + w->got, sizeof w->rec - w->got)
                                               : read(w->fd, sink, sizeof sink);
            if (r > 0 && w->got < sizeof w->rec) {
                w->got += (size_t)r;
            } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
                worker_finish(w, plans);
                alive--;
                done++;
            }
        }
        if (progress && (now_s() - last_draw > 0.2 || done == n_todo)) {
            progress_draw(done, n_todo, t0, 0);
            last_draw = now_s();
        }
    }
    if (progress)
        progress_draw(done, n_todo, t0, 1);
    free(ws);
    free(pfd);
    return rc;
}

/* ---- ranking ---- */

static const sweep_plan *g_rank_plans;

static int rank_cmp(const void *a, const void *b)
{
    const sweep_plan *p = &g_rank_plans[*(const int *)a], *q = &g_rank_plans[*(const int *)b];
    if (p->status != q->status)
        return p->status - q->status; /* ok, oom, failed, invalid */
    if (p->status == SWEEP_PLAN_OK && p->iteration_s != q->iteration_s)
        return p->iteration_s < q->iteration_s ? -1 : 1;
    return p->index - q->index;
}

static void rank_plans(sweep_table *t)
{
    free(t->order);
    t->order = malloc((size_t)(t->n ? t->n : 1) * sizeof *t->order);
    for (int i = 0; i < t->n; i++)
        t->order[i] = i;
    g_rank_plans = t->plans;
    qsort(t->order, (size_t)t->n, sizeof *t->order, rank_cmp);
    int r = 0;
    for (int i = 0; i < t->n; i++) {
        sweep_plan *p = &t->plans[t->order[i]];
        p->rank = p->status == SWEEP_PLAN_OK ? ++r : 0;
    }
}

static void count_status(const sweep_table *t, int counts[5])
{
    memset(counts, 0, 5 * sizeof counts[0]);
    for (int i = 0; i < t->n; i++)
        counts[t->plans[i].status]++;
}

/* ---- outputs ---- */

static void print_table(FILE *f, const sweep_table *t, int top)
{
    int c[5];
    count_status(t, c);
    const char *cl = strrchr(t->cluster_file, '/');
    fprintf(f,
            "sweep %s on %s (%d GPUs): %d plans: %d simulated, %d do not fit in memory, "
            "%d failed, %d invalid combinations\n",
            t->sweep_file, cl ? cl + 1 : t->cluster_file, t->gpus, t->n, c[SWEEP_PLAN_OK],
            c[SWEEP_PLAN_OOM], c[SWEEP_PLAN_FAILED], c[SWEEP_PLAN_INVALID]);
    if (t->shard_n)
        fprintf(f, "shard %d/%d of %d combinations (merge the shards with protosim merge)\n",
                t->shard_k, t->shard_n, t->combinations);
    fprintf(f, "%4s  %-36s %9s %11s %6s %15s %8s %9s %8s %8s  %s\n", "rank", "plan", "iter s",
            "tokens/s", "MFU %", "peak/cap GiB", "compute", "exp.comm", "bubble", "idle", "status");
    int shown[5] = {0}, hidden[5] = {0};
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[t->order[i]];
        if (p->status == SWEEP_PLAN_INVALID)
            break;
        if (top > 0 && shown[p->status] >= top) {
            hidden[p->status]++;
            continue;
        }
        shown[p->status]++;
        char label[128];
        sweep_plan_label(p, t->show_bucket, t->show_sp, label, sizeof label);
        char mem[32];
        snprintf(mem, sizeof mem, "%.1f/%.1f", p->peak_memory_bytes / GIB,
                 p->memory_capacity_bytes / GIB);
        if (p->status == SWEEP_PLAN_OK) {
            fprintf(f, "%4d  %-36s %9.4f %11.1f %6.1f %15s %8.3f %9.3f %8.3f %8.3f  ok\n", p->rank,
                    label, p->iteration_s, p->tokens_per_s, 100 * p->mfu, mem, p->compute_s,
                    p->exposed_comm_s, p->bubble_s, p->idle_s);
        } else {
            fprintf(f, "%4s  %-36s %9s %11s %6s %15s %8s %9s %8s %8s  %s: %s\n", "-", label, "-",
                    "-", "-", p->status == SWEEP_PLAN_OOM ? mem : "-", "-", "-", "-", "-",
                    status_names[p->status], p->reason);
        }
    }
    if (hidden[SWEEP_PLAN_OK] + hidden[SWEEP_PLAN_OOM] + hidden[SWEEP_PLAN_FAILED])
        fprintf(f,
                "... and %d more simulated, %d more oom, %d more failed plans (all in "
                "--csv/--json; --top 0 shows all)\n",
                hidden[SWEEP_PLAN_OK], hidden[SWEEP_PLAN_OOM], hidden[SWEEP_PLAN_FAILED]);
    /* invalid combinations: counted by reason */
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status != SWEEP_PLAN_INVALID)
            continue;
        int seen = 0, count = 0;
        for (int j = 0; j < i && !seen; j++)
            seen = t->plans[j].status == SWEEP_PLAN_INVALID &&
                   !strcmp(t->plans[j].reason_kind, p->reason_kind);
        if (seen)
            continue;
        for (int j = i; j < t->n; j++)
            count += t->plans[j].status == SWEEP_PLAN_INVALID &&
                     !strcmp(t->plans[j].reason_kind, p->reason_kind);
        fprintf(f, "invalid: %d x %s (e.g. %s)\n", count, p->reason_kind, p->reason);
    }
}

static int write_csv(const char *path, const sweep_table *t, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    fputs("rank,index,plan,status,tensor,pipeline,data,micro_batch,schedule,virtual_stages,zero,"
          "recompute,bucket_mb,sequence_parallel,iteration_time_s,tokens_per_s,samples_per_s,"
          "mfu,peak_memory_bytes,memory_capacity_bytes,compute_s,exposed_comm_s,bubble_s,"
          "idle_s,reason\n",
          f);
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[t->order[i]];
        char label[128];
        sweep_plan_label(p, t->show_bucket, t->show_sp, label, sizeof label);
        char reason[sizeof p->reason];
        snprintf(reason, sizeof reason, "%s", p->reason);
        for (char *q = reason; *q; q++)
            if (*q == '"')
                *q = '\'';
        if (p->rank)
            fprintf(f, "%d,", p->rank);
        else
            fputs(",", f);
        fprintf(f, "%d,%s,%s,%d,%d,%d,%d,%s,%d,%d,%s,%g,%s,", p->index, label,
                status_names[p->status], p->tp, p->pp, p->dp, p->micro_batch,
                schedule_name((pipeline_schedule)p->schedule), p->virtual_stages, p->zero,
                recompute_name((recompute_mode)p->recompute), p->bucket_mb,
                p->sequence_parallel ? "true" : "false");
        if (p->status == SWEEP_PLAN_OK)
            fprintf(f, "%.9g,%.9g,%.9g,%.6g,", p->iteration_s, p->tokens_per_s, p->samples_per_s,
                    p->mfu);
        else
            fputs(",,,,", f);
        if (p->status == SWEEP_PLAN_OK || p->status == SWEEP_PLAN_OOM)
            fprintf(f, "%.0f,%.0f,", p->peak_memory_bytes, p->memory_capacity_bytes);
        else
            fputs(",,", f);
        if (p->status == SWEEP_PLAN_OK)
            fprintf(f, "%.9g,%.9g,%.9g,%.9g,", p->compute_s, p->exposed_comm_s, p->bubble_s,
                    p->idle_s);
        else
            fputs(",,,,", f);
        fprintf(f, "\"%s\"\n", reason);
    }
    if (fclose(f))
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write");
    return 0;
}

static cJSON *plan_json(const sweep_table *t, const sweep_plan *p)
{
    cJSON *o = cJSON_CreateObject();
    char label[128];
    sweep_plan_label(p, t->show_bucket, t->show_sp, label, sizeof label);
    cJSON_AddNumberToObject(o, "index", p->index);
    if (p->rank)
        cJSON_AddNumberToObject(o, "rank", p->rank);
    else
        cJSON_AddNullToObject(o, "rank");
    cJSON_AddStringToObject(o, "plan", label);
    cJSON_AddStringToObject(o, "status", status_names[p->status]);
    cJSON_AddNumberToObject(o, "tensor", p->tp);
    cJSON_AddNumberToObject(o, "pipeline", p->pp);
    cJSON_AddNumberToObject(o, "data", p->dp);
    cJSON_AddNumberToObject(o, "micro_batch", p->micro_batch);
    cJSON_AddStringToObject(o, "schedule", schedule_name((pipeline_schedule)p->schedule));
    cJSON_AddNumberToObject(o, "virtual_stages", p->virtual_stages);
    cJSON_AddNumberToObject(o, "zero", p->zero);
    cJSON_AddStringToObject(o, "recompute", recompute_name((recompute_mode)p->recompute));
    cJSON_AddNumberToObject(o, "bucket_mb", p->bucket_mb);
    cJSON_AddBoolToObject(o, "sequence_parallel", p->sequence_parallel);
    if (p->status == SWEEP_PLAN_OK) {
        cJSON_AddNumberToObject(o, "iteration_time_s", p->iteration_s);
        cJSON_AddNumberToObject(o, "tokens_per_s", p->tokens_per_s);
        cJSON_AddNumberToObject(o, "samples_per_s", p->samples_per_s);
        cJSON_AddNumberToObject(o, "mfu", p->mfu);
        cJSON *b = cJSON_AddObjectToObject(o, "breakdown");
        cJSON_AddNumberToObject(b, "compute_s", p->compute_s);
        cJSON_AddNumberToObject(b, "exposed_comm_s", p->exposed_comm_s);
        cJSON_AddNumberToObject(b, "bubble_s", p->bubble_s);
        cJSON_AddNumberToObject(b, "idle_s", p->idle_s);
        cJSON_AddNumberToObject(o, "sim_wall_s", p->sim_wall_s);
    }
    if (p->status == SWEEP_PLAN_OK || p->status == SWEEP_PLAN_OOM) {
        cJSON_AddNumberToObject(o, "peak_memory_bytes", p->peak_memory_bytes);
        cJSON_AddNumberToObject(o, "memory_capacity_bytes", p->memory_capacity_bytes);
    }
    if (p->status == SWEEP_PLAN_INVALID || p->status == SWEEP_PLAN_FAILED ||
        p->status == SWEEP_PLAN_OOM) {
        cJSON_AddStringToObject(o, "reason_kind", p->reason_kind);
        cJSON_AddStringToObject(o, "reason", p->reason);
    }
    return o;
}

static int write_json(const char *path, const sweep_table *t, ps_error *err)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(root, "sweep");
    cJSON_AddStringToObject(m, "file", t->sweep_file);
    cJSON_AddStringToObject(m, "cluster", t->cluster_file);
    cJSON_AddStringToObject(m, "base", t->base);
    cJSON_AddStringToObject(m, "workload", t->workload);
    cJSON_AddNumberToObject(m, "gpus", t->gpus);
    cJSON_AddStringToObject(m, "memory", t->memory_fit ? "fit" : "ignore");
    cJSON_AddItemToObject(m, "axes", cJSON_Duplicate(t->axes, 1));
    cJSON_AddStringToObject(m, "hash", t->hash);
    cJSON_AddNumberToObject(m, "combinations", t->combinations);
    if (t->shard_n) {
        cJSON *sh = cJSON_AddArrayToObject(m, "shard");
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shard_k));
        cJSON_AddItemToArray(sh, cJSON_CreateNumber(t->shard_n));
    } else {
        cJSON_AddNullToObject(m, "shard");
    }
    cJSON_AddNumberToObject(m, "wall_s", t->wall_s);
    int c[5];
    count_status(t, c);
    cJSON *cn = cJSON_AddObjectToObject(root, "counts");
    cJSON_AddNumberToObject(cn, "plans", t->n);
    cJSON_AddNumberToObject(cn, "valid", t->n - c[SWEEP_PLAN_INVALID]);
    for (int s = SWEEP_PLAN_OK; s <= SWEEP_PLAN_INVALID; s++)
        cJSON_AddNumberToObject(cn, status_names[s], c[s]);
    cJSON *by = cJSON_AddObjectToObject(root, "invalid_by_reason");
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status != SWEEP_PLAN_INVALID)
            continue;
        cJSON *v = cJSON_GetObjectItemCaseSensitive(by, p->reason_kind);
        if (v)
            cJSON_SetNumberValue(v, v->valuedouble + 1);
        else
            cJSON_AddNumberToObject(by, p->reason_kind, 1);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "plans");
    for (int i = 0; i < t->n; i++)
        cJSON_AddItemToArray(arr, plan_json(t, &t->plans[t->order[i]]));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    int rc = 0;
    if (!f || fputs(text, f) < 0 || fputc('\n', f) < 0)
        rc = ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    if (f && fclose(f) && !rc)
        rc = ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write");
    free(text);
    return rc;
}

/* ---- the SVG plot ---- */

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

static double nice_step(double range, int ticks)
{
    double raw = range / ticks, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return mag * (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10);
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

static int write_plot(const char *path, const sweep_table *t, ps_error *err)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write: %s", strerror(errno));
    int c[5];
    count_status(t, c);
    int n_ok = c[SWEEP_PLAN_OK], n_bad = c[SWEEP_PLAN_OOM] + c[SWEEP_PLAN_FAILED];
    int slots = n_ok + n_bad;
    /* few plans: their names under the axis (room below); many: rank ticks */
    const double W = 1200, H = 600, L = 110, R = 190, T = 70, B = slots <= 40 ? 200 : 80;
    double pw = W - L - R, ph = H - T - B;
    double slot = slots ? pw / slots : pw;
    double ymax = 0;
    for (int i = 0; i < t->n; i++)
        if (t->plans[i].status == SWEEP_PLAN_OK && t->plans[i].tokens_per_s > ymax)
            ymax = t->plans[i].tokens_per_s;
    if (ymax <= 0)
        ymax = 1;
    double step = nice_step(ymax, 5);
    ymax = ceil(ymax / step) * step;
    /* pipeline degrees present, for colours and the legend */
    int pps[16], n_pp = 0;
    for (int i = 0; i < t->n; i++) {
        const sweep_plan *p = &t->plans[i];
        if (p->status == SWEEP_PLAN_INVALID || p->status == SWEEP_PLAN_PENDING)
            continue;
        int k = 0;
        while (k < n_pp && pps[k] != p->pp)
            k++;
        if (k == n_pp && n_pp < 16)
            pps[n_pp++] = p->pp;
    }
    for (int i = 1; i < n_pp; i++) /* insertion sort */
        for (int j = i; j > 0 && pps[j - 1] > pps[j]; j--) {
            int x = pps[j];
            pps[j] = pps[j - 1];
            pps[j - 1] = x;
        }

    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    const char *cl = strrchr(t->cluster_file, '/');
    fprintf(f, "<text x=\"%.0f\" y=\"30\" font-size=\"20\" font-weight=\"bold\">Sweep: ", L);
    xml_text(f, t->workload);
    fprintf(f, " on ");
    xml_text(f, cl ? cl + 1 : t->cluster_file);
    fprintf(f, " (%d GPUs), throughput per plan, best first</text>\n", t->gpus);
    fprintf(f,
            "<text x=\"%.0f\" y=\"52\" font-size=\"13\" fill=\"#555\">%d simulated, %d do not "
            "fit in memory, %d failed, %d invalid combinations not shown",
            L, n_ok, c[SWEEP_PLAN_OOM], c[SWEEP_PLAN_FAILED], c[SWEEP_PLAN_INVALID]);
    if (n_ok) {
        const sweep_plan *best = &t->plans[t->order[0]];
        char label[128];
        sweep_plan_label(best, t->show_bucket, t->show_sp, label, sizeof label);
        fprintf(f, "; best: ");
        xml_text(f, label);
        fprintf(f, " (%.0f tokens/s, MFU %.1f%%)", best->tokens_per_s, 100 * best->mfu);
    }
    fprintf(f, "</text>\n");

    /* grid and y axis */
    for (double y = 0; y <= ymax * 1.0001; y += step) {
        double py = T + ph - y / ymax * ph;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>\n",
                L, py, L + pw, py);
        char tick[32];
        if (y == 0)
            snprintf(tick, sizeof tick, "0");
        else if (ymax >= 1e6)
            snprintf(tick, sizeof tick, "%gM", y / 1e6);
        else if (ymax >= 1e4)
            snprintf(tick, sizeof tick, "%gk", y / 1e3);
        else
            snprintf(tick, sizeof tick, "%g", y);
        fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s</text>\n",
                L - 6, py + 4, tick);
    }
    fprintf(f,
            "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" font-size=\"14\" "
            "text-anchor=\"middle\">tokens/s (simulated)</text>\n",
            L - 60, T + ph / 2);

    /* OOM/failed strip */
    if (n_bad) {
        double x0 = L + n_ok * slot;
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>\n",
                x0, T, n_bad * slot, ph);
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                "fill=\"#555\">not simulated</text>\n",
                x0 + n_bad * slot / 2, T + 16);
        fprintf(f,
                "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" "
                "fill=\"#555\">%d OOM, %d failed</text>\n",
                x0 + n_bad * slot / 2, T + 32, c[SWEEP_PLAN_OOM], c[SWEEP_PLAN_FAILED]);
    }
    double bw = slot < 4 ? slot : slot * 0.8;
    if (slots > 40 && n_ok)
        fprintf(f,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"64\" fill=\"white\" "
                "stroke=\"#999\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" "
                "font-weight=\"bold\">best plans</text>\n",
                L + pw * 0.28 - 8, T + 8, pw * 0.52, L + pw * 0.28, T + 22);
    double r = fmin(6, fmax(2.5, slot * 0.35));
    for (int i = 0; i < n_ok + n_bad && i < t->n; i++) {
        const sweep_plan *p = &t->plans[t->order[i]];
        int k = 0;
        while (k < n_pp && pps[k] != p->pp)
            k++;
        const char *col = palette[k % 10];
        double cx = L + (i + 0.5) * slot;
        char label[128];
        sweep_plan_label(p, t->show_bucket, t->show_sp, label, sizeof label);
        if (p->status == SWEEP_PLAN_OK) {
            double h = p->tokens_per_s / ymax * ph;
            fprintf(f,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
                    "<title>#%d %s: %.1f tokens/s, %.4f s, MFU %.1f%%</title></rect>\n",
                    cx - bw / 2, T + ph - h, bw, h, col, p->rank, label, p->tokens_per_s,
                    p->iteration_s, 100 * p->mfu);
        } else if (p->status == SWEEP_PLAN_OOM) {
            fprintf(f,
                    "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.1f\" fill=\"none\" stroke=\"%s\" "
                    "stroke-width=\"2\"><title>%s: OOM, %s</title></circle>\n",
                    cx, T + ph - 10, r, col, label, p->reason);
        } else {
            fprintf(f,
                    "<path d=\"M%.2f %.2f l8 8 m0 -8 l-8 8\" stroke=\"#d62728\" "
                    "stroke-width=\"2\"><title>%s: failed, ",
                    cx - 4, T + ph - 34, label);
            xml_text(f, p->reason);
            fprintf(f, "</title></path>\n");
        }
        /* plan names under the axis when there is room, else the best three above their bars */
        if (slots <= 40) {
            fprintf(f,
                    "<text transform=\"translate(%.1f,%.1f) rotate(-60)\" font-size=\"10\" "
                    "text-anchor=\"end\">%s</text>\n",
                    cx + 3, T + ph + 10, label);
        } else if (p->status == SWEEP_PLAN_OK && p->rank <= 3) {
            /* numbered marker over the bar; the names go in the box below */
            double h = p->tokens_per_s / ymax * ph;
            fprintf(f,
                    "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\" "
                    "text-anchor=\"middle\">%d</text>\n",
                    L + 8 + 14 * (p->rank - 1), T + ph - h - 6, p->rank);
            fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%d. ", L + pw * 0.28,
                    T + 22 + 17 * p->rank, p->rank);
            xml_text(f, label);
            fprintf(f, ": %.0f tokens/s, %.3f s, MFU %.1f%%</text>\n", p->tokens_per_s,
                    p->iteration_s, 100 * p->mfu);
        }
    }
    /* axes */
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T,
            L, T + ph);
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L,
            T + ph, L + pw, T + ph);
    if (slots > 40 && n_ok) {
        double xs = nice_step(n_ok, 8);
        if (xs < 1)
            xs = 1;
        for (double k = xs; k <= n_ok; k += xs) {
            double x = L + (k - 0.5) * slot;
            fprintf(f,
                    "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>"
                    "<text x=\"%.1f\" y=\"%.0f\" font-size=\"12\" text-anchor=\"middle\">%g"
                    "</text>\n",
                    x, T + ph, x, T + ph + 5, x, T + ph + 19, k);
        }
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" text-anchor=\"middle\">%s</text>\n",
            L + pw / 2, H - 10, slots > 40 ? "plan rank (best first)" : "plans, best first");

    /* legend */
    double lx = L + pw + 24, ly = T + 10;
    fprintf(f,
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">pipeline "
            "degree</text>\n",
            lx, ly);
    for (int k = 0; k < n_pp; k++) {
        double y = ly + 22 + 22 * k;
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"14\" height=\"14\" fill=\"%s\"/>"
                "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">pp %d</text>\n",
                lx, y - 11, palette[k % 10], lx + 22, y, pps[k]);
    }
    double y = ly + 22 + 22 * n_pp + 14;
    fprintf(f,
            "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"5\" fill=\"none\" stroke=\"#333\" "
            "stroke-width=\"2\"/><text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">does not fit "
            "(OOM)</text>\n",
            lx + 7, y - 4, lx + 22, y);
    fprintf(f,
            "<path d=\"M%.0f %.0f l8 8 m0 -8 l-8 8\" stroke=\"#d62728\" stroke-width=\"2\"/>"
            "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\">failed</text>\n",
            lx + 3, y + 14, lx + 22, y + 22);
    fprintf(f, "</svg>\n");
    if (fclose(f))
        return ps_error_set(err, PS_EINPUT, path, 0, 0, NULL, "cannot write");
    return 0;
}

static int write_outputs(const sweep_table *t, const sweep_options *o, ps_error *err)
{
    print_table(stdout, t, o->top);
    fflush(stdout);
    if (o->csv && write_csv(o->csv, t, err))
        return err->code;
    if (o->json && write_json(o->json, t, err))
        return err->code;
    if (o->plot && write_plot(o->plot, t, err))
        return err->code;
    return 0;
}

static void table_free(sweep_table *t)
{
    cJSON_Delete(t->axes);
    free(t->plans);
    free(t->order);
    memset(t, 0, sizeof *t);
}

/* ---- sweep identity ---- */

static void fnv_file(uint64_t *h, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    unsigned char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < n; i++) {
            *h ^= buf[i];
            *h *= 1099511628211ULL;
        }
    fclose(f);
}

static cJSON *axes_json(const sweep_spec *s)
{
    cJSON *a = cJSON_CreateObject();
    for (int k = 0; k < SWEEP_AXIS_COUNT; k++) {
        const sweep_axis *ax = &s->axes[k];
        if (!ax->present)
            continue;
        if (ax->data_auto) {
            cJSON_AddStringToObject(a, sweep_axis_name((sweep_axis_kind)k), "auto");
            continue;
        }
        cJSON *v = cJSON_AddArrayToObject(a, sweep_axis_name((sweep_axis_kind)k));
        for (int i = 0; i < ax->n; i++) {
            double x = ax->values[i];
            if (k == SWEEP_SCHEDULE)
                cJSON_AddItemToArray(v, cJSON_CreateString(schedule_name((pipeline_schedule)x)));
            else if (k == SWEEP_RECOMPUTE)
                cJSON_AddItemToArray(v, cJSON_CreateString(recompute_name((recompute_mode)x)));
            else if (k == SWEEP_SEQUENCE_PARALLEL)
                cJSON_AddItemToArray(v, cJSON_CreateBool(x != 0));
            else
                cJSON_AddItemToArray(v, cJSON_CreateNumber(x));
        }
    }
    return a;
}

int sweep_run(const char *sweep_path, const char *cluster_path, const char *data_dir,
              const sweep_options *o, ps_error *err)
{
    double t0 = now_s();
    sweep_spec spec;
    if (sweep_spec_load(sweep_path, data_dir, &spec, err))
        return err->code;
    cluster c;
    if (cluster_load(cluster_path, data_dir, &c, err)) {
        sweep_spec_free(&spec);
        return err->code;
    }
    sweep_table t;
    memset(&t, 0, sizeof t);
    int *todo = NULL;
    int rc = 0;
    if (spec.gpus && spec.gpus != c.n_gpus) {
        rc = ps_error_set(err, PS_EINPUT, spec.file, spec.gpus_loc.line, spec.gpus_loc.column,
                          "constraints.gpus",
                          "impossible constraint: %d GPUs, but the cluster "
                          "%s has %d GPUs",
                          spec.gpus, cluster_path, c.n_gpus);
        goto out;
    }
    t.gpus = c.n_gpus;
    if ((rc = sweep_enumerate(&spec, c.n_gpus, &t.plans, &t.n, err)))
        goto out;
    t.combinations = t.n;
    int valid = 0;
    for (int i = 0; i < t.n; i++)
        valid += t.plans[i].status == SWEEP_PLAN_PENDING;
    if (!valid) {
        rc = ps_error_set(err, PS_EINPUT, spec.file, spec.axes_loc.line, spec.axes_loc.column,
                          "axes",
                          "impossible constraints: none of the %d combinations is a "
                          "valid plan on %d GPUs (first: %s)",
                          t.n, c.n_gpus, t.n ? t.plans[0].reason : "-");
        goto out;
    }
    /* identity of the sweep, so merge can refuse shards of different sweeps */
    uint64_t h = 1469598103934665603ULL;
    fnv_file(&h, spec.file);
    if (spec.base_file[0])
        fnv_file(&h, spec.base_file);
    fnv_file(&h, cluster_path);
    snprintf(t.hash, sizeof t.hash, "%016llx", (unsigned long long)h);
    snprintf(t.sweep_file, sizeof t.sweep_file, "%s", sweep_path);
    snprintf(t.cluster_file, sizeof t.cluster_file, "%s", cluster_path);
    snprintf(t.base, sizeof t.base, "%s", spec.base_file[0] ? spec.base_file : "(inline)");
    snprintf(t.workload, sizeof t.workload, "%s", spec.base.model.name);
    t.memory_fit = spec.memory_fit;
    t.axes = axes_json(&spec);
    t.show_bucket = spec.axes[SWEEP_BUCKET_MB].present;
    t.show_sp = spec.axes[SWEEP_SEQUENCE_PARALLEL].present;
    t.shard_k = o->shard_k;
    t.shard_n = o->shard_n;

    /* keep this shard's plans only (enumeration is identical in every shard) */
    if (o->shard_n > 0) {
        int m = 0;
        for (int i = 0; i < t.n; i++)
            if (t.plans[i].index % o->shard_n == o->shard_k - 1)
                t.plans[m++] = t.plans[i];
        t.n = m;
    }
    todo = malloc((size_t)(t.n ? t.n : 1) * sizeof *todo);
    int n_todo = 0;
    for (int i = 0; i < t.n; i++)
        if (t.plans[i].status == SWEEP_PLAN_PENDING)
            todo[n_todo++] = i;
    int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    int progress = o->progress >= 0 ? o->progress : isatty(STDERR_FILENO);
    double ts = now_s();
    if ((rc = run_workers(&spec, &c, t.plans, todo, n_todo, jobs, progress, err)))
        goto out;
    double sim_s = now_s() - ts;
    t.wall_s = now_s() - t0;
    rank_plans(&t);
    int cnt[5];
    count_status(&t, cnt);
    fprintf(stderr,
            "sweep: %d plans processed in %.1f s with %d workers (%.1f plans/s): "
            "%d simulated, %d oom, %d failed; %d invalid combinations skipped\n",
            n_todo, sim_s, jobs, sim_s > 0 ? n_todo / sim_s : 0.0, cnt[SWEEP_PLAN_OK],
            cnt[SWEEP_PLAN_OOM], cnt[SWEEP_PLAN_FAILED], cnt[SWEEP_PLAN_INVALID]);
    rc = write_outputs(&t, o, err);
out:
    free(todo);
    table_free(&t);
    cluster_free(&c);
    sweep_spec_free(&spec);
    return rc;
}

/* ---- merge ---- */

static int status_of(const char *s)
{
    for (int i = 0; i < 5; i++)
        if (s && !strcmp(s, status_names[i]))
            return i;
    return -1;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int enum_of(const char *s, const char *(*name)(int), int n)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, name(i)))
            return i;
    return 0;
}

static const char *sched_n(int i)
{
    return schedule_name((pipeline_schedule)i);
}
static const char *recomp_n(int i)
{
    return recompute_name((recompute_mode)i);
}

static int plan_from_json(const cJSON *o, sweep_plan *p)
{
    memset(p, 0, sizeof *p);
    p->status = status_of(str(o, "status"));
    if (p->status < 0 || !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "index")))
        return -1;
    p->index = (int)num(o, "index");
    p->tp = (int)num(o, "tensor");
    p->pp = (int)num(o, "pipeline");
    p->dp = (int)num(o, "data");
    p->micro_batch = (int)num(o, "micro_batch");
    p->schedule = enum_of(str(o, "schedule"), sched_n, 3);
    p->virtual_stages = (int)num(o, "virtual_stages");
    p->zero = (int)num(o, "zero");
    p->recompute = enum_of(str(o, "recompute"), recomp_n, 3);
    p->bucket_mb = num(o, "bucket_mb");
    p->sequence_parallel = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "sequence_parallel"));
    p->iteration_s = num(o, "iteration_time_s");
    p->tokens_per_s = num(o, "tokens_per_s");
    p->samples_per_s = num(o, "samples_per_s");
    p->mfu = num(o, "mfu");
    p->peak_memory_bytes = num(o, "peak_memory_bytes");
    p->memory_capacity_bytes = num(o, "memory_capacity_bytes");
    p->sim_wall_s = num(o, "sim_wall_s");
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "breakdown");
    if (b) {
        p->compute_s = num(b, "compute_s");
        p->exposed_comm_s = num(b, "exposed_comm_s");
        p->bubble_s = num(b, "bubble_s");
        p->idle_s = num(b, "idle_s");
    }
    snprintf(p->reason_kind, sizeof p->reason_kind, "%s",
             str(o, "reason_kind") ? str(o, "reason_kind") : "");
    snprintf(p->reason, sizeof p->reason, "%s", str(o, "reason") ? str(o, "reason") : "");
    return 0;
}

static int by_index(const void *a, const void *b)
{
    return ((const sweep_plan *)a)->index - ((const sweep_plan *)b)->index;
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

int sweep_merge(const char *const *inputs, int n_inputs, const sweep_options *o, ps_error *err)
{
    sweep_table t;
    memset(&t, 0, sizeof t);
    int rc = 0, cap = 0;
    int *seen_shard = NULL;
    for (int i = 0; i < n_inputs && !rc; i++) {
        char *text = read_text(inputs[i]);
        if (!text) {
            rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, NULL, "cannot read: %s",
                              strerror(errno));
            break;
        }
        cJSON *root = cJSON_Parse(text);
        free(text);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "sweep");
        const cJSON *plans = cJSON_GetObjectItemCaseSensitive(root, "plans");
        const char *hash = str(m, "hash");
        if (!root || !cJSON_IsObject(m) || !cJSON_IsArray(plans) || !hash) {
            rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, NULL,
                              "not the --json output of protosim sweep");
            cJSON_Delete(root);
            break;
        }
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(m, "shard");
        int k = cJSON_IsArray(sh) ? (int)cJSON_GetArrayItem(sh, 0)->valuedouble : 0;
        int n = cJSON_IsArray(sh) ? (int)cJSON_GetArrayItem(sh, 1)->valuedouble : 0;
        if (i == 0) {
            snprintf(t.hash, sizeof t.hash, "%s", hash);
            snprintf(t.sweep_file, sizeof t.sweep_file, "%s", str(m, "file") ? str(m, "file") : "");
            snprintf(t.cluster_file, sizeof t.cluster_file, "%s",
                     str(m, "cluster") ? str(m, "cluster") : "");
            snprintf(t.base, sizeof t.base, "%s", str(m, "base") ? str(m, "base") : "");
            snprintf(t.workload, sizeof t.workload, "%s",
                     str(m, "workload") ? str(m, "workload") : "");
            t.gpus = (int)num(m, "gpus");
            t.combinations = (int)num(m, "combinations");
            const char *mem = str(m, "memory");
            t.memory_fit = !mem || strcmp(mem, "ignore");
            t.axes = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(m, "axes"), 1);
            t.show_bucket = cJSON_HasObjectItem(t.axes, "bucket_mb");
            t.show_sp = cJSON_HasObjectItem(t.axes, "sequence_parallel");
            t.shard_n = n;
            seen_shard = calloc((size_t)(n > 0 ? n + 1 : 1), sizeof *seen_shard);
        } else if (strcmp(hash, t.hash)) {
            rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, "sweep.hash",
                              "comes from a different sweep than %s (sweep file, base strategy "
                              "or cluster differ: hash %s, not %s)",
                              inputs[0], hash, t.hash);
        } else if (n != t.shard_n) {
            rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, "sweep.shard",
                              "was split into %d shards, %s into %d", n, inputs[0], t.shard_n);
        }
        if (!rc && n > 0 && k >= 1 && k <= n) {
            if (seen_shard[k])
                rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, "sweep.shard",
                                  "shard %d/%d given twice", k, n);
            seen_shard[k] = 1;
        }
        t.wall_s += num(m, "wall_s");
        int np = cJSON_GetArraySize(plans);
        if (!rc && t.n + np > cap) {
            cap = (t.n + np) * 2;
            t.plans = realloc(t.plans, (size_t)cap * sizeof *t.plans);
        }
        for (int j = 0; j < np && !rc; j++)
            if (plan_from_json(cJSON_GetArrayItem(plans, j), &t.plans[t.n++]))
                rc = ps_error_set(err, PS_EINPUT, inputs[i], 0, 0, "plans",
                                  "plan %d is not a sweep plan record", j);
        cJSON_Delete(root);
    }
    if (!rc) {
        qsort(t.plans, (size_t)t.n, sizeof *t.plans, by_index);
        for (int i = 1; i < t.n && !rc; i++)
            if (t.plans[i].index == t.plans[i - 1].index)
                rc = ps_error_set(err, PS_EINPUT, NULL, 0, 0, NULL,
                                  "plan %d appears in more than one input (the same shard "
                                  "given twice?)",
                                  t.plans[i].index);
    }
    if (!rc) {
        int missing = 0;
        for (int k = 1; k <= t.shard_n; k++)
            missing += !seen_shard[k];
        if (missing)
            fprintf(stderr,
                    "protosim: warning: %d of %d shards missing: the ranking covers "
                    "%d of %d plans\n",
                    missing, t.shard_n, t.n, t.combinations);
        t.shard_n = t.shard_k = 0;
        rank_plans(&t);
        rc = write_outputs(&t, o, err);
    }
    free(seen_shard);
    table_free(&t);
    return rc;
}
