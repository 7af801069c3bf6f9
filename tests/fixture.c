/* fixture.c: the plan-level tests' setup and teardown (fixture.h). */
#include "fixture.h"

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "../sim/run/run.h"
#include "sim_util.h"

void fixture_compile(sim_fixture *f, const compile_options *o)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(compile_plan(&f->s, &f->c, o, &f->p, &err) == 0, "%s", err.message);
    f->o = sim_bare_options();
    f->ran = 0;
}

void fixture_load(sim_fixture *f, const char *strategy_rel, const char *cluster_rel)
{
    sim_strategy_load(strategy_rel, &f->s);
    if (cluster_rel)
        sim_load(cluster_rel, &f->c);
}

void fixture_files(sim_fixture *f, const char *strategy_rel, const char *cluster_rel)
{
    fixture_load(f, strategy_rel, cluster_rel);
    fixture_compile(f, NULL);
}

void fixture_text(sim_fixture *f, const char *text, const char *cluster_rel)
{
    ps_error err;
    ck_assert_msg(sim_strategy_text(text, &f->s, &err) == 0, "%s", err.message);
    if (cluster_rel)
        sim_load(cluster_rel, &f->c);
    fixture_compile(f, NULL);
}

void fixture_run(sim_fixture *f)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(htae_run(f->p.graph, &f->c, &f->o, &f->r, &err) == 0, "%s", err.message);
    f->ran = 1;
    run_summarize(&f->p, &f->r, &f->sum);
}

void fixture_pass_seconds(const sim_fixture *f, double *busy)
{
    const exec_graph *g = f->p.graph;
    for (int r = 0; r < f->p.gpus; r++)
        busy[r] = 0;
    for (uint32_t t = 0; t < g->n_tasks; t++)
        if (g->tasks[t].kind == TASK_COMPUTE && g->tasks[t].category != CAT_OPTIMIZER)
            busy[g->tasks[t].rank] += g->tasks[t].seconds;
}

void fixture_free_plan(sim_fixture *f)
{
    if (f->ran)
        htae_result_free(&f->r);
    compiled_plan_free(&f->p);
    strategy_free(&f->s);
}

void fixture_free(sim_fixture *f)
{
    fixture_free_plan(f);
    cluster_free(&f->c);
}

void fixture_forked(void (*child)(const void *arg, void *out), const void *arg, void *out,
                    size_t size)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        child(arg, out);
        _exit(write(fd[1], out, size) == (ssize_t)size ? 0 : 2);
    }
    close(fd[1]);
    memset(out, 0, size);
    ck_assert_int_eq(read(fd[0], out, size), (ssize_t)size);
    close(fd[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
