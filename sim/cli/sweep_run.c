/* sweep_run.c: `protosim sweep`: enumerate a sweep's plans, keep this shard's, simulate each in a
 * forked worker (the parent loads the platform once; SimGrid runs once per process), rank. */
#include "sweep_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "cli.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

void sweep_default_options(sweep_options *o)
{
    memset(o, 0, sizeof *o);
    o->progress = -1;
    o->top = 20;
    o->twins = 1;
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

void sweep_plan_record(sweep_plan *p, const report_summary *sum, const htae_result *res)
{
    p->status = SWEEP_PLAN_OK;
    p->iteration_s = sum->iteration_s;
    p->samples_per_s = sum->samples_per_s;
    p->tokens_per_s = sum->tokens_per_s;
    p->mfu = sum->mfu;
    p->peak_memory_bytes = sum->peak_memory_bytes;
    p->memory_capacity_bytes = sum->memory_capacity;
    p->compute_s = sum->compute_s;
    p->exposed_comm_s = sum->exposed_comm_s;
    p->bubble_s = sum->bubble_s;
    p->idle_s = sum->idle_s;
    p->sim_wall_s = res->wall_s;
}

void sweep_plan_record_dlrm(sweep_plan *p, const dlrm_plan_stats *st, const report_summary *sum)
{
    p->dlrm = 1;
    p->lookup_max_s = st->lookup_max_s;
    p->lookup_imbalance = st->lookup_imbalance;
    p->alltoall_s = sum->comm_s[CAT_EMB_COMM];
}

void sweep_plan_copy_outcome(sweep_plan *p, const sweep_plan *src)
{
    p->status = src->status;
    p->iteration_s = src->iteration_s;
    p->samples_per_s = src->samples_per_s;
    p->tokens_per_s = src->tokens_per_s;
    p->mfu = src->mfu;
    p->peak_memory_bytes = src->peak_memory_bytes;
    p->memory_capacity_bytes = src->memory_capacity_bytes;
    p->compute_s = src->compute_s;
    p->exposed_comm_s = src->exposed_comm_s;
    p->bubble_s = src->bubble_s;
    p->idle_s = src->idle_s;
    p->sim_wall_s = 0; /* not simulated */
    p->dlrm = src->dlrm;
    p->lookup_max_s = src->lookup_max_s;
    p->lookup_imbalance = src->lookup_imbalance;
    p->alltoall_s = src->alltoall_s;
}

/* What a simulated plan's record is a function of: its graph (the simulation's only input
 * besides the cluster, the same for every plan) and the compiled plan's fields that
 * report_summarize, sweep_plan_record and sweep_plan_record_dlrm read. Plans with equal keys
 * get equal records. */
typedef htae_digest plan_key;

static plan_key plan_key_of(const compiled_plan *plan)
{
    plan_key k;
    htae_digest_init(&k);
    htae_digest_graph(&k, plan->graph);
    int m = compiled_plan_tightest_rank(plan);
    int32_t ints[2] = {plan->gpus, plan->pp};
    double reals[8] = {plan->samples_per_iter,
                       plan->tokens_per_iter,
                       plan->model_flops_per_iter,
                       plan->peak_flops_per_gpu,
                       plan->memory[m].total,
                       plan->memory_capacity_of_rank[m],
                       plan->dlrm ? plan->dlrm->lookup_max_s : -1,
                       plan->dlrm ? plan->dlrm->lookup_imbalance : -1};
    htae_digest_add(&k, ints, sizeof ints);
    htae_digest_add(&k, reals, sizeof reals);
    return k;
}

/* Worker to driver: a key to ask about (the worker waits for the answer) or the record. */
enum { MSG_ASK, MSG_RECORD };
typedef struct worker_msg {
    int kind;
    plan_key key;   /* MSG_ASK */
    sweep_plan rec; /* MSG_RECORD */
} worker_msg;

/* Driver to worker, one byte: simulate, or not (another plan with the key does). */
enum { ANSWER_SIMULATE = 'S', ANSWER_TWIN = 'T' };

/* Ask the driver whether to simulate the plan of key k; 1 when another plan with it is. */
static int worker_ask(int fd, int answer_fd, const sweep_plan *p, plan_key k)
{
    worker_msg m;
    memset(&m, 0, sizeof m);
    m.kind = MSG_ASK;
    m.key = k;
    m.rec.index = p->index;
    if (write_all(fd, &m, sizeof m))
        _exit(3);
    char a = 0;
    ssize_t r;
    while ((r = read(answer_fd, &a, 1)) < 0 && errno == EINTR)
        ;
    return r == 1 && a == ANSWER_TWIN;
}

static _Noreturn void worker_send(int fd, const sweep_plan *p, int rc)
{
    worker_msg m;
    memset(&m, 0, sizeof m);
    m.kind = MSG_RECORD;
    m.rec = *p;
    _exit(write_all(fd, &m, sizeof m) ? 3 : rc ? 3 : 0);
}

/* The worker: compile, check memory, ask the driver whether a plan with the same key is
 * simulated (answer_fd >= 0), simulate, summarize; the record goes to fd. Never returns.
 * PROTOSIM_SWEEP_CRASH_PLAN=K (a test hook) makes plan K's worker die of SIGSEGV where it would
 * simulate. */
static void worker_main(const sweep_spec *spec, const cluster *c, const profile_db *db,
                        sweep_plan p, int fd, int answer_fd)
{
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
    ps_error err;
    ps_error_clear(&err);
    strategy s;
    compiled_plan plan;
    htae_result res;
    memset(&plan, 0, sizeof plan);
    memset(&res, 0, sizeof res);
    sweep_plan_strategy(spec, &p, &s);
    compile_options copt;
    compile_default_options(&copt);
    copt.profile = db;
    int rc = compile_plan(&s, c, &copt, &plan, &err);
    if (!rc) {
        int m = compiled_plan_tightest_rank(&plan);
        double peak = plan.memory[m].total, capacity = plan.memory_capacity_of_rank[m];
        p.peak_memory_bytes = peak;
        p.memory_capacity_bytes = capacity;
        if (spec->memory_fit && peak > capacity) {
            p.status = SWEEP_PLAN_OOM;
            snprintf(p.reason, sizeof p.reason, "needs %.2f GiB per GPU, has %.2f GiB", peak / GIB,
                     capacity / GIB);
            worker_send(fd, &p, 0);
        }
        if (answer_fd >= 0 && worker_ask(fd, answer_fd, &p, plan_key_of(&plan)))
            _exit(0);
        const char *crash = getenv("PROTOSIM_SWEEP_CRASH_PLAN");
        if (crash && *crash && atoi(crash) == p.index) {
            signal(SIGSEGV, SIG_DFL);
            raise(SIGSEGV);
        }
        rc = htae_run(plan.graph, c, NULL, &res, &err);
    }
    if (!rc) {
        report_summary sum;
        report_summarize(&plan, &res, &sum);
        sweep_plan_record(&p, &sum, &res);
        if (plan.dlrm)
            sweep_plan_record_dlrm(&p, plan.dlrm, &sum);
    } else {
        p.status = SWEEP_PLAN_FAILED;
        snprintf(p.reason_kind, sizeof p.reason_kind, "error");
        snprintf(p.reason, sizeof p.reason, "%.100s%s%.300s", err.field[0] ? err.field : "",
                 err.field[0] ? ": " : "", err.message);
    }
    /* No cleanup: the process ends here and the parent's engine must not be torn down. */
    worker_send(fd, &p, rc);
}

typedef struct worker {
    pid_t pid;
    int fd;        /* its messages */
    int answer_fd; /* the driver's answers, -1 without keys */
    int plan;      /* index into the plans array */
    int twin;      /* 1: told another plan with its key is simulated */
    size_t got;    /* bytes of msg read */
    int recorded;  /* msg holds its record */
    worker_msg msg;
} worker;

/* Keys asked about, each with the plan that is simulated for it: open addressing over a power
 * of two slots, at least twice the plans (so never full). */
typedef struct key_table {
    plan_key *keys;
    int *plan; /* -1: empty slot */
    size_t mask;
} key_table;

static void key_table_init(key_table *t, int n_plans)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)n_plans)
        cap *= 2;
    t->keys = xcalloc(cap, sizeof *t->keys);
    t->plan = xmalloc(cap * sizeof *t->plan);
    for (size_t i = 0; i < cap; i++)
        t->plan[i] = -1;
    t->mask = cap - 1;
}

static void key_table_free(key_table *t)
{
    free(t->keys);
    free(t->plan);
}

/* The plan simulated for k; when there is none, plan becomes it and -1 is returned. */
static int key_table_claim(key_table *t, plan_key k, int plan)
{
    size_t i = (size_t)k.a & t->mask;
    for (; t->plan[i] >= 0; i = (i + 1) & t->mask)
        if (t->keys[i].a == k.a && t->keys[i].b == k.b)
            return t->plan[i];
    t->keys[i] = k;
    t->plan[i] = plan;
    return -1;
}

/* The pool: `jobs` worker slots and the poll set over their pipes. */
typedef struct pool {
    const sweep_spec *spec;
    const cluster *c;
    const profile_db *db; /* or NULL */
    sweep_plan *plans;
    int jobs, alive;
    worker *ws;         /* jobs slots; pid 0 when free */
    struct pollfd *pfd; /* jobs entries */
    int *map;           /* pfd entry -> slot */
    key_table *keys;    /* NULL: every plan is simulated */
    int *twin_of;       /* [plans]: the plan simulated in its place, or -1 */
} pool;

/* Finish a worker whose pipe reached end of file: reap it and record its outcome (a twin's
 * comes from its plan's at the end of the pass). */
static void worker_finish(worker *w, sweep_plan *plans)
{
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(w->fd);
    if (w->answer_fd >= 0)
        close(w->answer_fd);
    sweep_plan *p = &plans[w->plan];
    int complete = w->recorded && w->msg.rec.index == p->index;
    if (WIFSIGNALED(st)) {
        p->status = SWEEP_PLAN_FAILED;
        snprintf(p->reason_kind, sizeof p->reason_kind, "crash");
        snprintf(p->reason, sizeof p->reason, "worker killed by %s (signal %d)",
                 signal_label(WTERMSIG(st)), WTERMSIG(st));
    } else if (complete) {
        *p = w->msg.rec;
        if (WEXITSTATUS(st) && p->status != SWEEP_PLAN_FAILED) {
            p->status = SWEEP_PLAN_FAILED;
            snprintf(p->reason, sizeof p->reason, "worker exited with code %d", WEXITSTATUS(st));
        }
    } else if (!(w->twin && WEXITSTATUS(st) == 0)) {
        p->status = SWEEP_PLAN_FAILED;
        snprintf(p->reason_kind, sizeof p->reason_kind, "crash");
        snprintf(p->reason, sizeof p->reason, "worker exited with code %d and no result",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    w->pid = 0;
}

/* A whole message from w: a record is kept; a key is answered (simulate, or a twin of the plan
 * simulated for it). */
static void worker_message(pool *pl, worker *w)
{
    if (w->msg.kind == MSG_RECORD) {
        w->recorded = 1;
        return;
    }
    int first = pl->keys ? key_table_claim(pl->keys, w->msg.key, w->plan) : -1;
    char a = first >= 0 ? ANSWER_TWIN : ANSWER_SIMULATE;
    if (!write_all(w->answer_fd, &a, 1) && first >= 0) { /* else it died: its end says so */
        pl->twin_of[w->plan] = first;
        w->twin = 1;
    }
    w->got = 0;
}

/* Fork a worker for plans[plan] into a free slot. */
static int pool_start(pool *pl, int plan, ps_error *err)
{
    int slot = 0;
    while (pl->ws[slot].pid)
        slot++;
    int fds[2], ans[2] = {-1, -1};
    if (pipe(fds))
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "pipe: %s", strerror(errno));
    if (pl->keys && pipe(ans)) {
        close(fds[0]);
        close(fds[1]);
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        if (pl->keys) {
            close(ans[0]);
            close(ans[1]);
        }
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        if (pl->keys)
            close(ans[1]);
        worker_main(pl->spec, pl->c, pl->db, pl->plans[plan], fds[1], ans[0]);
    }
    close(fds[1]);
    if (pl->keys)
        close(ans[0]);
    worker *w = &pl->ws[slot];
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->fd = fds[0];
    w->answer_fd = ans[1];
    w->plan = plan;
    pl->alive++;
    return 0;
}

/* Wait for the workers' pipes (timeout_ms, -1 forever) and read; returns how many finished,
 * or -1 with err set. */
static int pool_poll(pool *pl, int timeout_ms, ps_error *err)
{
    int np = 0, done = 0;
    for (int i = 0; i < pl->jobs; i++)
        if (pl->ws[i].pid) {
            pl->pfd[np].fd = pl->ws[i].fd;
            pl->pfd[np].events = POLLIN;
            pl->pfd[np].revents = 0;
            pl->map[np++] = i;
        }
    int k = poll(pl->pfd, (nfds_t)np, timeout_ms);
    if (k < 0 && errno != EINTR) {
        ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "poll: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; k > 0 && i < np; i++) {
        if (!pl->pfd[i].revents)
            continue;
        worker *w = &pl->ws[pl->map[i]];
        char *dst = (char *)&w->msg;
        char sink[512];
        ssize_t r = w->recorded ? read(w->fd, sink, sizeof sink)
                                : read(w->fd, dst + w->got, sizeof w->msg - w->got);
        if (r > 0 && !w->recorded) {
            w->got += (size_t)r;
            if (w->got == sizeof w->msg)
                worker_message(pl, w);
        } else if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
            worker_finish(w, pl->plans);
            pl->alive--;
            done++;
        }
    }
    return done;
}

static void progress_draw(int done, int total, double t0, int final)
{
    double el = cli_now_s() - t0;
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

/* How progress shows on stderr: not at all (--no-progress), a bar redrawn in place (a
 * terminal), or a line every PROGRESS_LINE_S seconds and at the end (a file or a pipe). */
enum { PROGRESS_OFF, PROGRESS_BAR, PROGRESS_LINES };
#define PROGRESS_LINE_S 5.0

/* "sweep: 120/564 plans, 21.3 plans/s, eta 20 s" */
static void progress_line(int done, int total, double t0)
{
    double el = cli_now_s() - t0;
    double rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "sweep: %d/%d plans, %.1f plans/s, eta %.0f s\n", done, total, rate, eta);
    fflush(stderr);
}

/* One progress report in mode (PROGRESS_*) if due (always when final); *last: time of the last. */
static void progress_report(int mode, int done, int total, double t0, double *last, int final)
{
    double t = cli_now_s();
    if (mode == PROGRESS_BAR && (final || t - *last > 0.2 || done == total)) {
        progress_draw(done, total, t0, final);
        *last = t;
    } else if (mode == PROGRESS_LINES && (final || t - *last >= PROGRESS_LINE_S)) {
        progress_line(done, total, t0);
        *last = t;
    }
}

/* A pass's twins (pool.twin_of) take the outcome of the plan simulated in their place when it
 * is ok; the others (it failed or crashed) go to retry, to be simulated each on its own.
 * Returns how many took an outcome. */
static int twins_resolve(sweep_plan *plans, const int *twin_of, const int *todo, int n_todo,
                         int *retry, int *n_retry)
{
    int n = 0;
    *n_retry = 0;
    for (int i = 0; i < n_todo; i++) {
        int y = todo[i], x = twin_of[y];
        if (x < 0)
            continue;
        if (plans[x].status == SWEEP_PLAN_OK) {
            sweep_plan_copy_outcome(&plans[y], &plans[x]);
            n++;
        } else {
            retry[(*n_retry)++] = y;
        }
    }
    return n;
}

/* Simulate the pending plans todo[0..n_todo) (indices into plans[0..n_plans)) with at most `jobs`
 * workers alive; progress: PROGRESS_*. With twins, a plan whose key (plan_key_of) equals a plan
 * simulated in this call is not simulated and takes its outcome (*n_twins counts them). */
static int run_workers(const sweep_spec *spec, const cluster *c, const profile_db *db,
                       sweep_plan *plans, int n_plans, const int *todo, int n_todo, int jobs,
                       int twins, int progress, int *n_twins, ps_error *err)
{
    pool pl = {spec, c, db, plans, jobs, 0, NULL, NULL, NULL, NULL, NULL};
    pl.ws = xcalloc((size_t)jobs, sizeof *pl.ws);
    pl.pfd = xcalloc((size_t)jobs, sizeof *pl.pfd);
    pl.map = xcalloc((size_t)jobs, sizeof *pl.map);
    key_table keys;
    struct sigaction ignore, saved;
    if (twins) {
        /* an answer to a worker killed meanwhile must fail (EPIPE), not kill the driver */
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &ignore, &saved);
        key_table_init(&keys, n_todo);
        pl.keys = &keys;
        pl.twin_of = xmalloc((size_t)(n_plans > 0 ? n_plans : 1) * sizeof *pl.twin_of);
        for (int i = 0; i < n_plans; i++)
            pl.twin_of[i] = -1;
    }
    double t0 = cli_now_s(), last = t0;
    int next = 0, done = 0, rc = 0;
    if (progress == PROGRESS_BAR)
        progress_draw(0, n_todo, t0, 0);
    while (done < n_todo) {
        while (!rc && pl.alive < jobs && next < n_todo)
            if (!(rc = pool_start(&pl, todo[next], err)))
                next++;
        if (rc && pl.alive == 0)
            break;
        int k = pool_poll(&pl, progress ? 250 : -1, err);
        if (k < 0) {
            rc = err->code;
            break;
        }
        done += k;
        progress_report(progress, done, n_todo, t0, &last, 0);
    }
    progress_report(progress, done, n_todo, t0, &last, 1);
    free(pl.ws);
    free(pl.pfd);
    free(pl.map);
    if (twins) {
        int *retry = xcalloc((size_t)(n_todo > 0 ? n_todo : 1), sizeof *retry), n_retry = 0;
        *n_twins += twins_resolve(plans, pl.twin_of, todo, n_todo, retry, &n_retry);
        if (!rc && n_retry)
            rc = run_workers(spec, c, db, plans, n_plans, retry, n_retry, jobs, 0, progress,
                             n_twins, err);
        free(retry);
        free(pl.twin_of);
        key_table_free(&keys);
        sigaction(SIGPIPE, &saved, NULL);
    }
    return rc;
}

/* ---- ranking and outputs ---- */

static int rank_cmp(const void *a, const void *b)
{
    const sweep_plan *p = *(const sweep_plan *const *)a, *q = *(const sweep_plan *const *)b;
    if (p->status != q->status)
        return p->status - q->status; /* ok, oom, failed, invalid */
    if (p->status == SWEEP_PLAN_OK && p->iteration_s != q->iteration_s)
        return p->iteration_s < q->iteration_s ? -1 : 1;
    return p->index - q->index;
}

void sweep_rank(sweep_table *t)
{
    free(t->order);
    t->order = xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof *t->order);
    if (t->n <= 0)
        return;
    const sweep_plan **by = xcalloc((size_t)t->n, sizeof *by);
    for (int i = 0; i < t->n; i++)
        by[i] = &t->plans[i];
    qsort(by, (size_t)t->n, sizeof *by, rank_cmp);
    int r = 0;
    for (int i = 0; i < t->n; i++) {
        t->order[i] = (int)(by[i] - t->plans);
        sweep_plan *p = &t->plans[t->order[i]];
        p->rank = p->status == SWEEP_PLAN_OK ? ++r : 0;
    }
    free(by);
}

int sweep_write_outputs(const sweep_table *t, const sweep_options *o, ps_error *err)
{
    out_sweep_table(stdout, t, o->top);
    fflush(stdout);
    if (o->csv && out_sweep_csv(o->csv, t, err))
        return err->code;
    if (o->json && out_sweep_json(o->json, t, err))
        return err->code;
    if (o->plot && out_sweep_plot(o->plot, t, err))
        return err->code;
    return 0;
}

/* ---- the sweep's identity ---- */

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
        const char *name = sweep_axis_name((sweep_axis_kind)k);
        if (!ax->present)
            continue;
        if (ax->data_auto) {
            cJSON_AddStringToObject(a, name, "auto");
            continue;
        }
        cJSON *v = cJSON_AddArrayToObject(a, name);
        for (int i = 0; i < ax->n; i++) {
            double x = ax->values[i];
            if (k == SWEEP_SCHEDULE)
                cJSON_AddItemToArray(v, cJSON_CreateString(schedule_name((pipeline_schedule)x)));
            else if (k == SWEEP_RECOMPUTE)
                cJSON_AddItemToArray(v, cJSON_CreateString(recompute_name((recompute_mode)x)));
            else if (k == SWEEP_SEQUENCE_PARALLEL)
                cJSON_AddItemToArray(v, cJSON_CreateBool(x != 0));
            else if (k == SWEEP_SHARDING && ax->n > 0)
                cJSON_AddItemToArray(v, cJSON_CreateString(enum_name(emb_sharding_names, (int)x)));
            else if (k == SWEEP_PLACEMENT)
                cJSON_AddItemToArray(v, cJSON_CreateString(enum_name(emb_placement_names, (int)x)));
            else
                cJSON_AddItemToArray(v, cJSON_CreateNumber(x));
        }
    }
    return a;
}

/* The table's header: files, identity hash (so merge can refuse shards of different sweeps),
 * axes, shard. */
static void table_identity(sweep_table *t, const sweep_spec *spec, const char *sweep_path,
                           const char *cluster_path, const sweep_options *o)
{
    uint64_t h = 1469598103934665603ULL;
    fnv_file(&h, spec->file);
    if (spec->base_file[0])
        fnv_file(&h, spec->base_file);
    fnv_file(&h, cluster_path);
    if (o->profile) /* shards costed with another table are another sweep */
        fnv_file(&h, o->profile);
    snprintf(t->hash, sizeof t->hash, "%016llx", (unsigned long long)h);
    snprintf(t->sweep_file, sizeof t->sweep_file, "%s", sweep_path);
    snprintf(t->cluster_file, sizeof t->cluster_file, "%s", cluster_path);
    snprintf(t->base, sizeof t->base, "%s", spec->base_file[0] ? spec->base_file : "(inline)");
    snprintf(t->workload, sizeof t->workload, "%s", spec->base.model.name);
    t->memory_fit = spec->memory_fit;
    t->axes = axes_json(spec);
    t->show_bucket = spec->axes[SWEEP_BUCKET_MB].present;
    t->show_sp = spec->axes[SWEEP_SEQUENCE_PARALLEL].present;
    t->dlrm = spec->base.model.family == FAMILY_DLRM;
    t->shard_k = o->shard_k;
    t->shard_n = o->shard_n;
}

/* Enumerate into t; PS_EINPUT when the GPU constraint or every combination is impossible. */
static int table_enumerate(sweep_table *t, sweep_spec *spec, const cluster *c,
                           const char *cluster_path, ps_error *err)
{
    if (spec->gpus && spec->gpus != c->n_gpus)
        return ps_error_set(err, PS_EINPUT, spec->file, spec->gpus_loc.line, spec->gpus_loc.column,
                            "constraints.gpus",
                            "impossible constraint: %d GPUs, but the cluster %s has %d GPUs",
                            spec->gpus, cluster_path, c->n_gpus);
    t->gpus = c->n_gpus;
    if (sweep_tables_propose(spec, c, err))
        return err->code;
    if (sweep_enumerate(spec, c->n_gpus, &t->plans, &t->n, err))
        return err->code;
    t->combinations = t->n;
    int cnt[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, cnt);
    if (!cnt[SWEEP_PLAN_PENDING])
        return ps_error_set(err, PS_EINPUT, spec->file, spec->axes_loc.line, spec->axes_loc.column,
                            "axes",
                            "impossible constraints: none of the %d combinations is a valid "
                            "plan on %d GPUs (first: %s)",
                            t->n, c->n_gpus, t->n ? t->plans[0].reason : "-");
    return 0;
}

/* Keep this shard's plans (enumeration is identical in every shard); the pending ones' indices
 * into *todo (caller frees). */
static int table_shard(sweep_table *t, const sweep_options *o, int **todo)
{
    if (o->shard_n > 0) {
        int m = 0;
        for (int i = 0; i < t->n; i++)
            if (t->plans[i].index % o->shard_n == o->shard_k - 1)
                t->plans[m++] = t->plans[i];
        t->n = m;
    }
    *todo = xcalloc((size_t)(t->n > 0 ? t->n : 1), sizeof **todo);
    int n_todo = 0;
    for (int i = 0; i < t->n; i++)
        if (t->plans[i].status == SWEEP_PLAN_PENDING)
            (*todo)[n_todo++] = i;
    return n_todo;
}

static int simulate(sweep_table *t, const sweep_spec *spec, const cluster *c, const profile_db *db,
                    const sweep_options *o, double t0, ps_error *err)
{
    int *todo;
    int n_todo = table_shard(t, o, &todo);
    int jobs = o->jobs > 0 ? o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (jobs < 1)
        jobs = 1;
    int progress = o->progress == 0        ? PROGRESS_OFF
                   : isatty(STDERR_FILENO) ? PROGRESS_BAR
                                           : PROGRESS_LINES;
    double ts = cli_now_s();
    int n_twins = 0;
    int rc = run_workers(spec, c, db, t->plans, t->n, todo, n_todo, jobs, o->twins, progress,
                         &n_twins, err);
    free(todo);
    if (rc)
        return rc;
    double sim_s = cli_now_s() - ts;
    t->wall_s = cli_now_s() - t0;
    sweep_rank(t);
    int cnt[SWEEP_PLAN_STATUS_COUNT];
    sweep_plans_count(t->plans, t->n, cnt);
    char twins[96] = "";
    if (n_twins)
        snprintf(twins, sizeof twins, " (%d of them twins: the compiled plan of another)", n_twins);
    fprintf(stderr,
            "sweep: %d plans processed in %.1f s with %d workers (%.1f plans/s): "
            "%d simulated%s, %d oom, %d failed; %d invalid combinations skipped\n",
            n_todo, sim_s, jobs, sim_s > 0 ? n_todo / sim_s : 0.0, cnt[SWEEP_PLAN_OK], twins,
            cnt[SWEEP_PLAN_OOM], cnt[SWEEP_PLAN_FAILED], cnt[SWEEP_PLAN_INVALID]);
    return 0;
}

int sweep_run(const char *sweep_path, const char *cluster_path, const char *data_dir,
              const sweep_options *o, ps_error *err)
{
    double t0 = cli_now_s();
    sweep_spec spec;
    if (sweep_spec_load(sweep_path, data_dir, &spec, err))
        return err->code;
    cluster c;
    cluster_engine_start(); /* the engine first, then the platform, the actors, the run */
    if (cluster_load(cluster_path, data_dir, &c, err)) {
        sweep_spec_free(&spec);
        return err->code;
    }
    profile_db db;
    memset(&db, 0, sizeof db);
    if (o->profile && profile_db_load(o->profile, &db, err)) {
        cluster_free(&c);
        sweep_spec_free(&spec);
        return err->code;
    }
    if (o->profile)
        out_warn_profile_device(&db, &c);
    sweep_table t;
    memset(&t, 0, sizeof t);
    int rc = table_enumerate(&t, &spec, &c, cluster_path, err);
    if (!rc) {
        table_identity(&t, &spec, sweep_path, cluster_path, o);
        rc = simulate(&t, &spec, &c, o->profile ? &db : NULL, o, t0, err);
    }
    if (!rc)
        rc = sweep_write_outputs(&t, o, err);
    sweep_table_free(&t);
    profile_db_free(&db);
    cluster_free(&c);
    sweep_spec_free(&spec);
    return rc;
}
