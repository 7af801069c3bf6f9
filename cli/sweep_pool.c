/* sweep_pool.c: the sweep's worker processes (see sweep_pool.h): workers that simulate plan
 * after plan, the driver's pool that hands plans out and reads records back, twins. */
#include "sweep_pool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sim/base/xalloc.h"
#include "cli.h"
#include "sweep_run.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

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

/* 0, or -1 at end of file or on an error. */
static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* What a simulated plan's record is a function of: its graph (the simulation's only input
 * besides the cluster, the same for every plan) and the compiled plan's fields that
 * run_summarize (report_plan), sweep_plan_record and sweep_plan_record_dlrm read. Plans with
 * equal keys get equal records. Where the steady state may be simulated once, the gate sees
 * the first shorter plan (run.h, window): its graph holds m1 micro-batches, which with the
 * plan's micro-batch count (in the key) determine the whole plan's as much as the compiler
 * does (the same strategy compiled for more micro-batches). */
typedef graph_digest plan_key;

static plan_key plan_key_of(const compiled_plan *plan)
{
    plan_key k;
    graph_digest_init(&k);
    graph_digest_graph(&k, plan->graph);
    int m = compiled_plan_tightest_rank(plan);
    int32_t ints[3] = {plan->gpus, plan->pp, plan->micro_batches};
    double reals[8] = {plan->samples_per_iter,
                       plan->tokens_per_iter,
                       plan->model_flops_per_iter,
                       plan->peak_flops_per_gpu,
                       plan->memory[m].total,
                       plan->memory_capacity_of_rank[m],
                       plan->dlrm ? plan->dlrm->lookup_max_s : -1,
                       plan->dlrm ? plan->dlrm->lookup_imbalance : -1};
    graph_digest_add(&k, ints, sizeof ints);
    graph_digest_add(&k, reals, sizeof reals);
    return k;
}

/* Worker to driver: a key to ask about (the worker waits for the answer), the plan's record,
 * or that the plan is a twin (no record: it takes its plan's at the end of the pass). */
enum { MSG_ASK, MSG_RECORD, MSG_TWIN };
typedef struct worker_msg {
    int kind;
    int ending;     /* 1: the worker ends after this message (it takes no more plans) */
    plan_key key;   /* MSG_ASK */
    sweep_plan rec; /* MSG_RECORD; MSG_ASK and MSG_TWIN: rec.index only */
} worker_msg;

/* Driver to worker, on one pipe: a plan to simulate (its index, an int32_t), and the one-byte
 * answer to a key: simulate, or not (another plan with the key is). */
enum { ANSWER_SIMULATE = 'S', ANSWER_TWIN = 'T' };

/* Send a message about plan p, or end the worker (the driver is gone). */
static void worker_put(int fd, int kind, const plan_key *k, const sweep_plan *p, int ending)
{
    worker_msg m;
    memset(&m, 0, sizeof m);
    m.kind = kind;
    m.ending = ending;
    if (k)
        m.key = *k;
    if (kind == MSG_RECORD)
        m.rec = *p;
    else
        m.rec.index = p->index;
    if (write_all(fd, &m, sizeof m))
        _exit(3);
}

/* Ask the driver whether to simulate the plan of key k; 1 when another plan with it is. */
static int worker_ask(int fd, int cmd_fd, const sweep_plan *p, plan_key k)
{
    worker_put(fd, MSG_ASK, &k, p, 0);
    char a = 0;
    if (read_all(cmd_fd, &a, 1))
        _exit(3);
    return a == ANSWER_TWIN;
}

/* Whether the test hook `var` (sweep_pool.h) names plan `index`. */
static int hook_names(const char *var, int index)
{
    const char *v = getenv(var);
    return v && *v && atoi(v) == index;
}

/* What a worker's gate needs of its plan (worker_gate). */
typedef struct worker_gate_ctx {
    const sweep_spec *spec;
    sweep_plan *p;
    int twins, fd, cmd_fd;
    int kind; /* the message the plan's outcome goes in: MSG_RECORD, or MSG_TWIN */
} worker_gate_ctx;

/* Between compile and simulate: the memory check (a plan that does not fit is not simulated
 * under memory: fit), then whether a plan with the same key is simulated (twins), then the
 * test hooks. */
static int worker_gate(void *ctx, const compiled_plan *plan, ps_error *err)
{
    worker_gate_ctx *w = ctx;
    sweep_plan *p = w->p;
    int m = compiled_plan_tightest_rank(plan);
    double peak = plan->memory[m].total, capacity = plan->memory_capacity_of_rank[m];
    p->fig.peak_memory_bytes = peak;
    p->fig.memory_capacity_bytes = capacity;
    if (w->spec->memory_fit && peak > capacity) {
        p->status = SWEEP_PLAN_OOM;
        snprintf(p->reason, sizeof p->reason, "needs %.2f GiB per GPU, has %.2f GiB", peak / GIB,
                 capacity / GIB);
        return RUN_STOP;
    }
    if (w->twins && worker_ask(w->fd, w->cmd_fd, p, plan_key_of(plan))) {
        w->kind = MSG_TWIN;
        return RUN_STOP;
    }
    if (hook_names("PROTOSIM_SWEEP_CRASH_PLAN", p->index)) {
        signal(SIGSEGV, SIG_DFL);
        raise(SIGSEGV);
    }
    if (hook_names("PROTOSIM_SWEEP_FAIL_PLAN", p->index))
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL,
                            "failed on request (PROTOSIM_SWEEP_FAIL_PLAN)");
    return RUN_SIMULATE;
}

/* One plan in a worker, through the run path: compile, the gate (worker_gate), simulate,
 * summarize; the record (or MSG_TWIN) goes to fd. Returns 0, or 1 when the worker must end
 * after it: a failed plan (a stalled run may leave actors behind), or an engine whose clock
 * cannot be put back to 0 (then each plan gets a worker of its own). */
static int worker_plan(const sweep_spec *spec, const cluster *c, const profile_db *db, sweep_plan p,
                       int twins, int fd, int cmd_fd)
{
    ps_error err;
    ps_error_clear(&err);
    strategy s;
    sweep_plan_strategy(spec, &p, &s);
    compile_options copt;
    compile_default_options(&copt);
    copt.profile = db;
    worker_gate_ctx gate = {spec, &p, twins, fd, cmd_fd, MSG_RECORD};
    cluster view;
    const cluster *use = NULL; /* c, or a view of its first p.gpus */
    int rc = cli_plan_cluster(c, p.gpus, NULL, &view, &use, &err);
    run_request rq = {.c = use,
                      .s = &s,
                      .copt = &copt,
                      .steady = 1,
                      .again = 1,
                      .window = 1, /* the gate sees the shorter plan: run.h */
                      .gate = worker_gate,
                      .gate_ctx = &gate};
    run_outcome run;
    if (!rc)
        rc = run_execute(&rq, &run, &err);
    if (rc) {
        p.status = SWEEP_PLAN_FAILED;
        snprintf(p.reason_kind, sizeof p.reason_kind, "error");
        snprintf(p.reason, sizeof p.reason, "%.100s%s%.300s", err.field[0] ? err.field : "",
                 err.field[0] ? ": " : "", err.message);
        worker_put(fd, MSG_RECORD, NULL, &p, 1);
        return 1; /* what a failed compile or run left is not freed: the worker ends */
    }
    int ending = 0;
    if (!run.stopped) {
        ending = !run.clock_reset;
        sweep_plan_record(&p, &run.sum, &run.res);
        if (run.plan.dlrm)
            sweep_plan_record_dlrm(&p, run.plan.dlrm, &run.sum);
    }
    worker_put(fd, gate.kind, NULL, &p, ending);
    run_outcome_free(&run);
    cli_plan_cluster_free(c, &view, use);
    strategy_free(&s);
    return ending;
}

/* A worker: the plans the driver hands out on cmd_fd, one after another, until it closes the
 * pipe. Never returns. */
static _Noreturn void worker_main(const sweep_spec *spec, const cluster *c, const profile_db *db,
                                  const sweep_plan *plans, int twins, int fd, int cmd_fd)
{
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, STDOUT_FILENO);
        close(devnull);
    }
    int32_t plan;
    while (!read_all(cmd_fd, &plan, sizeof plan))
        if (worker_plan(spec, c, db, plans[plan], twins, fd, cmd_fd))
            break;
    /* No cleanup: the process ends here and the parent's engine must not be torn down. */
    _exit(0);
}

typedef struct worker {
    pid_t pid;  /* 0: no worker in the slot */
    int fd;     /* its messages */
    int cmd_fd; /* plans and answers to it; -1 once closed (it is to end) */
    int plan;   /* the plan it simulates (index into plans), -1 when idle */
    size_t got; /* bytes of msg read */
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
    worker *ws;         /* jobs slots */
    struct pollfd *pfd; /* jobs entries */
    int *map;           /* pfd entry -> slot */
    key_table *keys;    /* NULL: every plan is simulated */
    int *twin_of;       /* [plans]: the plan simulated in its place, or -1 */
} pool;

/* Fork an idle worker into slot. */
static int pool_start(pool *pl, int slot, ps_error *err)
{
    int fds[2], cmd[2];
    if (pipe(fds))
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "pipe: %s", strerror(errno));
    if (pipe(cmd)) {
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
        close(cmd[0]);
        close(cmd[1]);
        return ps_error_set(err, PS_EINTERNAL, NULL, 0, 0, NULL, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        close(cmd[1]);
        for (int i = 0; i < pl->jobs; i++) /* the other workers' pipes: their ends stay theirs */
            if (i != slot && pl->ws[i].pid) {
                close(pl->ws[i].fd);
                if (pl->ws[i].cmd_fd >= 0)
                    close(pl->ws[i].cmd_fd);
            }
        worker_main(pl->spec, pl->c, pl->db, pl->plans, pl->keys != NULL, fds[1], cmd[0]);
    }
    close(fds[1]);
    close(cmd[0]);
    worker *w = &pl->ws[slot];
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->fd = fds[0];
    w->cmd_fd = cmd[1];
    w->plan = -1;
    pl->alive++;
    return 0;
}

/* The worker is to end once idle: it reads end of file. */
static void pool_release(worker *w)
{
    if (w->cmd_fd >= 0)
        close(w->cmd_fd);
    w->cmd_fd = -1;
}

/* Hand plans[plan] to the idle worker w; 0, or -1 when it is gone (then it is released, and
 * its end, read from its pipe, frees the slot). */
static int pool_assign(worker *w, int plan)
{
    int32_t i = plan;
    w->got = 0;
    if (write_all(w->cmd_fd, &i, sizeof i)) {
        pool_release(w);
        return -1;
    }
    w->plan = plan;
    return 0;
}

/* A worker whose pipe reached end of file: reap it; a plan it was on failed. Returns 1 when it
 * was on one. */
static int worker_finish(pool *pl, worker *w)
{
    int st = 0;
    while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(w->fd);
    pool_release(w);
    w->pid = 0;
    pl->alive--;
    if (w->plan < 0)
        return 0;
    sweep_plan *p = &pl->plans[w->plan]; /* if it was told it is a twin, it takes its plan's
                                               outcome after all (twins_resolve) */
    p->status = SWEEP_PLAN_FAILED;
    snprintf(p->reason_kind, sizeof p->reason_kind, "crash");
    if (WIFSIGNALED(st))
        snprintf(p->reason, sizeof p->reason, "worker killed by %s (signal %d)",
                 signal_label(WTERMSIG(st)), WTERMSIG(st));
    else
        snprintf(p->reason, sizeof p->reason, "worker exited with code %d and no result",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    w->plan = -1;
    return 1;
}

/* A whole message from w: a key is answered (simulate, or a twin of the plan simulated for it);
 * a record or a twin's end makes the worker idle. Returns 1 when its plan is done. */
static int worker_message(pool *pl, worker *w)
{
    w->got = 0;
    if (w->plan < 0 || w->msg.rec.index != pl->plans[w->plan].index)
        return 0; /* not its plan's: ignored, its end will tell */
    if (w->msg.kind == MSG_ASK) {
        int first = pl->keys ? key_table_claim(pl->keys, w->msg.key, w->plan) : -1;
        char a = first >= 0 ? ANSWER_TWIN : ANSWER_SIMULATE;
        if (!write_all(w->cmd_fd, &a, 1) && first >= 0) /* else it died: its end says so */
            pl->twin_of[w->plan] = first;
        return 0;
    }
    if (w->msg.kind == MSG_RECORD)
        pl->plans[w->plan] = w->msg.rec;
    w->plan = -1;
    if (w->msg.ending)
        pool_release(w);
    return 1;
}

/* Wait for the workers' pipes (timeout_ms, -1 forever) and read; returns how many plans were
 * done, or -1 with err set. */
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
        ssize_t r = read(w->fd, dst + w->got, sizeof w->msg - w->got);
        if (r > 0) {
            w->got += (size_t)r;
            if (w->got == sizeof w->msg)
                done += worker_message(pl, w);
        } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
            done += worker_finish(pl, w);
        }
    }
    return done;
}

static void progress_draw(int done, int total, double t0, int final)
{
    double el = ps_now_s() - t0;
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

#define PROGRESS_LINE_S 5.0

/* "sweep: 120/564 plans, 21.3 plans/s, eta 20 s" */
static void progress_line(int done, int total, double t0)
{
    double el = ps_now_s() - t0;
    double rate = el > 0 ? done / el : 0;
    double eta = rate > 0 ? (total - done) / rate : 0;
    fprintf(stderr, "sweep: %d/%d plans, %.1f plans/s, eta %.0f s\n", done, total, rate, eta);
    fflush(stderr);
}

/* One progress report in mode (PROGRESS_*) if due (always when final); *last: time of the last.
 * Lines come every PROGRESS_LINE_S seconds. */
static void progress_report(int mode, int done, int total, double t0, double *last, int final)
{
    double t = ps_now_s();
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

/* Step: hand out todo[*next ..] to idle workers, starting workers in empty slots while plans
 * are left; idle workers with nothing left are released. */
static int pool_feed(pool *pl, const int *todo, int n_todo, int *next, ps_error *err)
{
    for (int i = 0; i < pl->jobs; i++) {
        worker *w = &pl->ws[i];
        if (!w->pid && *next < n_todo) {
            int rc = pool_start(pl, i, err);
            if (rc)
                return rc;
        }
        if (!w->pid || w->plan >= 0 || w->cmd_fd < 0)
            continue;
        if (*next == n_todo)
            pool_release(w);
        else if (!pool_assign(w, todo[*next]))
            ++*next;
    }
    return 0;
}

int sweep_pool_run(const sweep_spec *spec, const cluster *c, const profile_db *db,
                   sweep_plan *plans, int n_plans, const int *todo, int n_todo, int jobs, int twins,
                   int progress, int *n_twins, ps_error *err)
{
    if (jobs > n_todo)
        jobs = n_todo > 0 ? n_todo : 1;
    pool pl = {spec, c, db, plans, jobs, 0, NULL, NULL, NULL, NULL, NULL};
    pl.ws = xcalloc((size_t)jobs, sizeof *pl.ws);
    pl.pfd = xcalloc((size_t)jobs, sizeof *pl.pfd);
    pl.map = xcalloc((size_t)jobs, sizeof *pl.map);
    key_table keys;
    /* a plan or an answer to a worker killed meanwhile must fail (EPIPE), not kill the driver */
    struct sigaction ignore, saved;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ignore, &saved);
    if (twins) {
        key_table_init(&keys, n_todo);
        pl.keys = &keys;
        pl.twin_of = xmalloc((size_t)(n_plans > 0 ? n_plans : 1) * sizeof *pl.twin_of);
        for (int i = 0; i < n_plans; i++)
            pl.twin_of[i] = -1;
    }
    double t0 = ps_now_s(), last = t0;
    int next = 0, done = 0, rc = 0;
    if (progress == PROGRESS_BAR)
        progress_draw(0, n_todo, t0, 0);
    while (pl.alive || next < n_todo) {
        if (!rc)
            rc = pool_feed(&pl, todo, n_todo, &next, err);
        if (rc) /* no new worker: let the others end */
            for (int i = 0; i < jobs; i++)
                if (pl.ws[i].pid && pl.ws[i].plan < 0)
                    pool_release(&pl.ws[i]);
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
    for (int i = 0; i < jobs; i++) /* after an error: end the workers left */
        if (pl.ws[i].pid) {
            kill(pl.ws[i].pid, SIGKILL);
            worker_finish(&pl, &pl.ws[i]);
        }
    free(pl.ws);
    free(pl.pfd);
    free(pl.map);
    if (twins) {
        int *retry = xcalloc((size_t)(n_todo > 0 ? n_todo : 1), sizeof *retry), n_retry = 0;
        *n_twins += twins_resolve(plans, pl.twin_of, todo, n_todo, retry, &n_retry);
        if (!rc && n_retry)
            rc = sweep_pool_run(spec, c, db, plans, n_plans, retry, n_retry, jobs, 0, progress,
                                n_twins, err);
        free(retry);
        free(pl.twin_of);
        key_table_free(&keys);
    }
    sigaction(SIGPIPE, &saved, NULL);
    return rc;
}
