/* fixture.c: the plan-level tests' setup and teardown (fixture.h). */
#include "fixture.h"

#include <check.h>
#include <stdio.h>

#include "../sim/base/vocab.h"
#include "sim_util.h"

void fixture_compile(sim_fixture *f, const compile_options *o)
{
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(compile_plan(&f->s, &f->c, o, &f->p, &err) == 0, "%s", err.message);
    f->o = sim_bare_options();
    f->ran = 0;
}

void fixture_files(sim_fixture *f, const char *strategy_rel, const char *cluster_rel)
{
    char sp[1024];
    snprintf(sp, sizeof sp, "%s/%s", ps_data_dir(), strategy_rel);
    ps_error err;
    ps_error_clear(&err);
    ck_assert_msg(strategy_load(sp, ps_data_dir(), &f->s, &err) == 0, "%s", err.message);
    sim_load(cluster_rel, &f->c);
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
}

void fixture_free(sim_fixture *f)
{
    if (f->ran)
        htae_result_free(&f->r);
    compiled_plan_free(&f->p);
    cluster_free(&f->c);
    strategy_free(&f->s);
}
