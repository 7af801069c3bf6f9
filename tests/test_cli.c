/* test_cli.c: the protosim command's surface, through the binary (PROTOSIM_BIN): --help for every
 * subcommand, unknown options, and merge's reader (empty shards, bad fields named by JSON path,
 * bad "shard" entries) on shard files written by hand. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli_util.h"
#include "suite_util.h"

/* ---------------------------------------------------------------- help */

typedef struct {
    const char *name;
    const char *options[16]; /* NULL-terminated */
} command_help;

static const command_help commands[] = {
    {"run",
     {"STRATEGY.yaml", "--cluster", "--json", "--trace", "--csv", "--strict-memory", "--no-fold",
      "--quiet", "--help", NULL}},
    {"profile", {"TRACE.json", "-o", "--device", "--quiet", "--help", NULL}},
    {"sweep",
     {"SWEEP.yaml", "--cluster", "-j N", "--shard K/N", "--top", "--csv", "--json", "--plot",
      "--progress", NULL}},
    {"merge", {"SHARD.json", "--top", "--csv", "--json", "--plot", "--help", NULL}},
    {"cluster",
     {"KIND", "--nodes", "-o FILE", "--nics", "--nic-gbps", "--gpus-per-node", "--oversubscription",
      "--fabric", "--nodes-per-leaf", "dgx-a100", "--from-hwloc", "--gpu", NULL}},
    {"collective", {"--cluster", "--gpus", "--sizes", "--op", "--csv", "allreduce", NULL}},
    {"lookup",
     {"--device", "--tables", "--rows", "--dim", "--batch", "--ids", "--update", "--pooling",
      "--precision", "--csv", NULL}},
    {"replay",
     {"TRACE.json", "--cluster", "--json", "--trace", "--overheads", "--steps", "--quiet", "--help",
      NULL}},
    {"compare",
     {"TRACE.json", "STRATEGY.yaml", "--cluster", "--json", "--csv", "--quiet", "--help", NULL}},
    {"kernel",
     {"gemm M N K", "bmm B M N K", "attention B H S D", "norm N", "elementwise BYTES", "--gpu",
      "--dtype", "--causal", "--warp-mma", "--backward", "--csv", NULL}},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static void expect_help(const command_help *c, const char *flag)
{
    char *dir = make_tmpdir();
    const char *args[] = {c->name, flag, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_msg(r.err[0] == '\0', "`%s`: stderr not empty:\n%s", r.cmd, r.err);
    ck_assert_msg(!strncmp(r.out, "usage:\n", 7), "`%s`: no usage:\n%s", r.cmd, r.out);
    char want[64];
    snprintf(want, sizeof want, "protosim %s ", c->name);
    ck_assert_msg(strstr(r.out, want) != NULL, "`%s`: usage lacks '%s':\n%s", r.cmd, want, r.out);
    for (int i = 0; c->options[i]; i++)
        ck_assert_msg(strstr(r.out, c->options[i]) != NULL, "`%s`: usage lacks '%s':\n%s", r.cmd,
                      c->options[i], r.out);
    /* only this subcommand: no other subcommand's synopsis */
    for (int k = 0; k < N_COMMANDS; k++) {
        snprintf(want, sizeof want, "protosim %s ", commands[k].name);
        if (&commands[k] != c)
            ck_assert_msg(strstr(r.out, want) == NULL, "`%s`: usage shows '%s':\n%s", r.cmd, want,
                          r.out);
    }
    run_free(&r);
    remove_tmpdir(dir);
}

START_TEST(help_for_every_subcommand)
{
    for (int k = 0; k < N_COMMANDS; k++) {
        expect_help(&commands[k], "--help");
        expect_help(&commands[k], "-h");
    }
}
END_TEST

START_TEST(help_overview)
{
    char *dir = make_tmpdir();
    const char *flags[] = {"--help", "-h"};
    for (int f = 0; f < 2; f++) {
        const char *args[] = {flags[f], NULL};
        run_result r = run_protosim(dir, args);
        expect_exit(&r, 0);
        ck_assert_msg(r.err[0] == '\0', "stderr not empty:\n%s", r.err);
        for (int k = 0; k < N_COMMANDS; k++) {
            char want[64];
            snprintf(want, sizeof want, "protosim %s ", commands[k].name);
            ck_assert_msg(strstr(r.out, want) != NULL, "overview lacks '%s':\n%s", want, r.out);
        }
        ck_assert_ptr_nonnull(strstr(r.out, "protosim SUBCOMMAND --help"));
        ck_assert_ptr_nonnull(strstr(r.out, "--devices FILE"));
        run_free(&r);
    }
    /* `protosim help`: the overview; `help SUBCOMMAND`: its help, as --help gives it; `help`
     * of no subcommand: an error naming it, exit 1 (it printed the overview and exited 0) */
    const char *help[] = {"help", NULL}, *help_run[] = {"help", "run", NULL};
    const char *run_help[] = {"run", "--help", NULL}, *bogus[] = {"help", "bogus", NULL};
    run_result h = run_protosim(dir, help);
    expect_exit(&h, 0);
    ck_assert_ptr_nonnull(strstr(h.out, "protosim help SUBCOMMAND"));
    run_free(&h);
    h = run_protosim(dir, help_run);
    run_result rh = run_protosim(dir, run_help);
    expect_exit(&h, 0);
    ck_assert_str_eq(h.out, rh.out);
    run_free(&h);
    run_free(&rh);
    h = run_protosim(dir, bogus);
    expect_exit(&h, 1);
    ck_assert_ptr_nonnull(strstr(h.err, "help: unknown subcommand 'bogus'"));
    run_free(&h);
    /* no subcommand at all, or only --devices: the overview on stderr, exit 1 */
    const char *none[] = {NULL}, *only[] = {"--devices", "x.yaml", NULL};
    const char *const *bare[] = {none, only};
    for (int b = 0; b < 2; b++) {
        run_result r = run_protosim(dir, bare[b]);
        expect_exit(&r, 1);
        ck_assert_msg(strstr(r.err, "usage:") != NULL, "no overview:\n%s", r.err);
        run_free(&r);
    }
    remove_tmpdir(dir);
}
END_TEST

/* --help after other arguments, and an unknown option before --help (an error, named). */
START_TEST(help_among_arguments_and_unknown_options)
{
    char *dir = make_tmpdir();
    const char *after[] = {"sweep", "x.yaml", "--cluster", "c.xml", "--help", NULL};
    run_result r = run_protosim(dir, after);
    expect_exit(&r, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "protosim sweep SWEEP.yaml"));
    run_free(&r);
    for (int k = 0; k < N_COMMANDS; k++) {
        const char *args[] = {commands[k].name, "--frobnicate", "--help", NULL};
        r = run_protosim(dir, args);
        const char *needles[] = {"unknown option '--frobnicate'", NULL};
        expect_bad_input(&r, needles);
        char want[64];
        snprintf(want, sizeof want, "protosim %s --help", commands[k].name);
        ck_assert_msg(strstr(r.err, want) != NULL, "`%s`: stderr lacks '%s':\n%s", r.cmd, want,
                      r.err);
        run_free(&r);
    }
    const char *unknown[] = {"frobnicate", NULL};
    r = run_protosim(dir, unknown);
    const char *needles[] = {"unknown command 'frobnicate'", NULL};
    expect_bad_input(&r, needles);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* Usage errors of the option parser, each naming the option or value (exit 1). */
START_TEST(option_usage_errors)
{
    static const struct {
        const char *args[8];
        const char *needle;
    } cases[] = {
        {{"run", "s.yaml", "--cluster", NULL}, "--cluster needs a value"},
        {{"run", "a.yaml", "b.yaml", NULL}, "unexpected argument 'b.yaml'"},
        {{"run", "--cluster", "c.xml", NULL}, "run needs a STRATEGY.yaml"},
        {{"run", "s.yaml", "-q", NULL}, "run needs --cluster CLUSTER"},
        {{"cluster", "dgx-a100", "--nodes", "x", NULL}, "bad number 'x'"},
        {{"cluster", "dgx-a100", "--nic-gbps", "1e", NULL}, "bad number '1e'"},
        {{"cluster", "dgx-a100", NULL}, "cluster needs --nodes N (N >= 1)"},
        {{"cluster", "dgx-a100", "--nodes", "2", "--fabric", "torus", NULL},
         "--fabric: bad fabric 'torus' (expected fat-tree or rail)"},
        {{"cluster", "dgx-a100", "--nodes", "2", "--format", "json", NULL},
         "--format: bad format 'json' (expected yaml or xml)"},
        {{"cluster", "dgx-a100", "--nodes", "2", "--nodes-per-leaf", "0", NULL},
         "--nodes-per-leaf: bad number '0' (expected an integer from 1 to 131072)"},
        {{"cluster", "dgx-a100", "--nodes", "2", "--oversubscription", "0.5", NULL},
         "--oversubscription: bad number '0.5' (expected a decimal number from 1 to 1000000)"},
        {{"cluster", "dgx-a100", "--nodes", "2", "--oversubscription", "0", NULL},
         "--oversubscription: bad number '0' (expected a decimal number from 1 to 1000000)"},
        {{"cluster", "--nodes", "1", NULL}, "cluster needs a KIND (or --from-hwloc FILE)"},
        {{"cluster", "dgx-h100", "--racks", "2", NULL},
         "--racks N is for the NVL72 kinds (gb200-nvl72, gb300-nvl72); give dgx-h100 --nodes N"},
        {{"cluster", "gb200-nvl72", "--racks", "2", "--nodes", "2", NULL},
         "give --racks or --nodes, not both"},
        {{"cluster", "gb200-nvl72", "--racks", "0", NULL},
         "--racks: bad number '0' (expected an integer from 1 to 1820)"},
        {{"cluster", "dgx-a100", "--nodes", "1", "--gpu", "A100-FOO", NULL},
         "--gpu: unknown device 'A100-FOO' (known: "},
        {{"cluster", "dgx-a100", "--from-hwloc", "n.xml", NULL}, "give no KIND 'dgx-a100'"},
        {{"cluster", "--from-hwloc", "n.xml", "--nodes", "dgx-a100:2", NULL},
         "takes --nodes N, not a group list 'dgx-a100:2'"},
        {{"cluster", "--from-hwloc", "n.xml", "--gpus-per-node", "4", NULL},
         "--gpus-per-node does not apply to --from-hwloc"},
        {{"collective", "--gpus", "0", NULL}, "bad GPU count '0'"},
        {{"collective", "extra", NULL}, "unexpected argument 'extra'"},
        {{"sweep", "s.yaml", "-j", "0", NULL}, "bad job count '0'"},
        {{"sweep", "s.yaml", "--top", "-1", NULL}, "bad --top '-1'"},
        {{"sweep", "s.yaml", "--shard", "3/2", NULL}, "bad --shard '3/2'"},
        {{"merge", "a.json", "-j", "2", NULL}, "unknown option '-j'"},
        {{"merge", "--top", NULL}, "--top needs a value"},
        {{"lookup", "--device", "H100-SXM5-80GB", "--tables", "1", NULL},
         "lookup needs --device, --tables, --rows, --dim, --batch, --ids and --update"},
        {{"lookup", "--tables", "0", NULL}, "bad table count '0'"},
    };
    char *dir = make_tmpdir();
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run_result r = run_protosim(dir, cases[k].args);
        const char *needles[] = {cases[k].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    remove_tmpdir(dir);
}
END_TEST

/* lookup: bad laws and devices are usage errors; the forward bytes of N distinct ids by hand */
START_TEST(lookup_by_hand)
{
    char *dir = make_tmpdir();
    const char *base[] = {"lookup", "--tables", "1",       "--rows",  "1000000",
                          "--dim",  "64",       "--batch", "10000",   "--update",
                          "sgd",    "--csv",    "-",       "--device"};
    const char *bad_ids[18], *bad_dev[18], *ok[18];
    int n = (int)(sizeof base / sizeof *base);
    for (int i = 0; i < n; i++)
        bad_ids[i] = bad_dev[i] = ok[i] = base[i];
    const char *tail_bad_ids[] = {"H100-SXM5-80GB", "--ids", "zipf:0", NULL};
    const char *tail_bad_dev[] = {"T4-NOPE", "--ids", "uniform", NULL};
    const char *tail_ok[] = {"H100-SXM5-80GB", "--ids", "unique:1", NULL};
    for (int i = 0; i < 4; i++) {
        bad_ids[n + i] = tail_bad_ids[i];
        bad_dev[n + i] = tail_bad_dev[i];
        ok[n + i] = tail_ok[i];
    }
    run_result r = run_protosim(dir, bad_ids);
    const char *n1[] = {"--ids: bad id law 'zipf:0'", NULL};
    expect_bad_input(&r, n1);
    run_free(&r);
    r = run_protosim(dir, bad_dev);
    const char *n2[] = {"--device: no device 'T4-NOPE'", NULL};
    expect_bad_input(&r, n2);
    run_free(&r);
    r = run_protosim(dir, ok);
    expect_exit(&r, 0);
    double fwd, bwd, unique, fwd_bytes, bwd_bytes;
    ck_assert_int_eq(
        sscanf(r.out, "%lf,%lf,%lf,%lf,%lf", &fwd, &bwd, &unique, &fwd_bytes, &bwd_bytes), 5);
    ck_assert_double_eq(unique, 10000);
    /* rows 10000 x 64 x 4, ids 10000 x 8, offsets 10001 x 8, pooled outputs 10000 x 64 x 4 */
    ck_assert_double_eq(fwd_bytes, 2560000 + 80000 + 80008 + 2560000);
    run_free(&r);
    remove_tmpdir(dir);
}
END_TEST

/* cluster gb300-nvl72 --racks 2: two racks of 72 GB300 with one 800 Gb/s NIC per GPU, the same
 * description as --nodes 2. */
START_TEST(cluster_racks)
{
    char *dir = make_tmpdir();
    const char *racks[] = {"cluster", "gb300-nvl72", "--racks", "2", NULL};
    const char *nodes[] = {"cluster", "gb300-nvl72", "--nodes", "2", NULL};
    run_result r = run_protosim(dir, racks), n = run_protosim(dir, nodes);
    expect_exit(&r, 0);
    expect_exit(&n, 0);
    ck_assert_msg(strstr(r.out, "2 x gb300-nvl72 (72 GB300, 72 NICs of 800 Gb/s)"), "%s", r.out);
    ck_assert_str_eq(r.out, n.out);
    run_free(&r);
    run_free(&n);
    remove_tmpdir(dir);
}
END_TEST

/* cluster --from-hwloc: a platform of two copies of a hand-written export (tests/test_hwloc.c
 * checks its numbers), a summary on stderr; input errors exit 1 naming the file. */
START_TEST(cluster_from_hwloc)
{
    char *dir = make_tmpdir();
    char *xml = src_path("tests/data/hwloc/two_switches.xml");
    char *out = tmp_path(dir, "two.xml");
    const char *ok[] = {"cluster",    "--from-hwloc", xml,  "--nodes", "2",
                        "--nic-gbps", "200",          "-o", out,       NULL};
    run_result r = run_protosim(dir, ok);
    expect_exit(&r, 0);
    ck_assert_msg(r.out[0] == '\0', "stdout: %s", r.out);
    ck_assert_msg(strstr(r.err, "protosim: cluster: two_switches.xml: 4 GPUs "), "%s", r.err);
    run_free(&r);
    char *text = slurp(out, NULL);
    ck_assert_ptr_nonnull(strstr(text, "<host id=\"n1g3\""));
    ck_assert_ptr_nonnull(strstr(text, "<link id=\"n1pcie_0000_00_02_0\" bandwidth=\"7.876923"));
    free(text);

    static const struct {
        const char *file, *needle;
    } bad[] = {
        {"no_gpu.xml", "no GPU found"},
        {"malformed.xml", "not a topology hwloc"},
        {"missing.xml", "cannot open"},
        {"unknown_gpu.xml", "give --gpu NAME"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/hwloc/%s", bad[k].file);
        char *path = src_path(rel);
        const char *args[] = {"cluster", "--from-hwloc", path, "--nic-gbps", "100", NULL};
        r = run_protosim(dir, args);
        const char *needles[] = {path, bad[k].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
        free(path);
    }
    free(xml);
    free(out);
    remove_tmpdir(dir);
}
END_TEST

/* replay --what-if priority:gradients: the JSON report keeps its fields, the step is the period
 * (one step, the traced one's measurement), compared with the traced order's period (values
 * worked out in test_whatif.c: 916.7 against 1021.7 us); without gradient collectives a note
 * says nothing was reordered. */
START_TEST(replay_priority_gradients_report)
{
    char *dir = make_tmpdir();
    char *trace = src_path("tests/data/replay/p3.json");
    char *cl = src_path("topology/clusters/dgx4.xml");
    char *out = tmp_path(dir, "p3.json");
    const char *args[] = {"replay", trace, "--cluster", cl,  "--what-if", "priority:gradients",
                          "--json", out,   "--quiet",   NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    run_free(&r);
    cJSON *j = parse_json_file(out);
    assert_rel_close(num_field(j, "steps"), 1, 0, "steps");
    assert_rel_close(num_field(j, "measured_step_s"), 470e-6, 1e-9, "measured_step_s");
    assert_rel_close(num_field(j, "iteration_time_s"), 916.7e-6, 1e-3, "iteration_time_s");
    assert_rel_close(num_field(j, "iteration_time_unchanged_s"), 1021.7e-6, 1e-3,
                     "iteration_time_unchanged_s");
    const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "what_if"), 0);
    ck_assert_ptr_nonnull(w);
    assert_rel_close(num_field(w, "kernels"), 3, 0, "what_if[0].kernels");
    cJSON_Delete(j);
    char *gemm = src_path("tests/data/replay/gemm.json");
    const char *none[] = {"replay",  gemm, "--cluster", cl, "--what-if", "priority:gradients",
                          "--quiet", NULL};
    r = run_protosim(dir, none);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "nothing to reorder"), "%s", r.err);
    run_free(&r);
    free(gemm);
    free(trace);
    free(cl);
    free(out);
    remove_tmpdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- numbers */

#define SIZE_EXPECTED                                                                              \
    "(expected a number of bytes up to 1e18, optionally with K, M, G, T, Ki, Mi, Gi or Ti)"

static const char *const junk[] = {"nan", "inf", "-5",  "0x10",  "",     "12abc",
                                   " 3",  "+3",  "1e3", "1e308", "1.5e", NULL};

/* Every junk form of a size exits 1 with the exact message naming --sizes. */
START_TEST(sizes_reject_junk)
{
    char *dir = make_tmpdir();
    for (int k = 0; junk[k]; k++) {
        const char *args[] = {"collective", "--gpus", "2", "--sizes", junk[k], NULL};
        run_result r = run_protosim(dir, args);
        char want[256];
        snprintf(want, sizeof want, "protosim: error: --sizes: bad size '%s' " SIZE_EXPECTED "\n",
                 junk[k]);
        const char *needles[] = {want, NULL};
        expect_bad_input(&r, needles);
        ck_assert_msg(!strncmp(r.err, want, strlen(want)), "stderr:\n%s", r.err);
        run_free(&r);
    }
    /* an empty entry in the list, and a fraction, named alone */
    const char *lists[][2] = {{"1M,,2", ""}, {"1M,1.5", "1.5"}, {"4Ki,1Kb", "1Kb"}};
    for (size_t k = 0; k < 3; k++) {
        const char *args[] = {"collective", "--sizes", lists[k][0], NULL};
        run_result r = run_protosim(dir, args);
        char want[256];
        snprintf(want, sizeof want, "--sizes: bad size '%s' " SIZE_EXPECTED, lists[k][1]);
        const char *needles[] = {want, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    remove_tmpdir(dir);
}
END_TEST

/* Counts and decimals reject the same junk, naming the option as typed. */
START_TEST(counts_reject_junk)
{
    static const struct {
        const char *args[4]; /* the value goes last */
        const char *what;
    } opts[] = {
        {{"collective", "--gpus"}, "GPU count' (expected an integer from 1 to 131072)"},
        {{"cluster", "--nodes"}, "number' (expected an integer from 1 to 131072)"},
        {{"cluster", "--nics"}, "number' (expected an integer from 1 to 72)"},
        {{"cluster", "--gpus-per-node"}, "number' (expected an integer from 1 to 72)"},
        {{"sweep", "-j"}, "job count' (expected an integer from 1 to 1024)"},
        {{"sweep", "--jobs"}, "job count' (expected an integer from 1 to 1024)"},
        {{"sweep", "--top"}, "--top' (expected an integer >= 0)"},
        {{"merge", "--top"}, "--top' (expected an integer >= 0)"},
    };
    char *dir = make_tmpdir();
    for (size_t o = 0; o < sizeof opts / sizeof opts[0]; o++)
        for (int k = 0; junk[k]; k++) {
            const char *args[] = {opts[o].args[0], opts[o].args[1], junk[k], NULL};
            run_result r = run_protosim(dir, args);
            char want[256];
            const char *what = opts[o].what;
            snprintf(want, sizeof want, "protosim: error: %s: bad %.*s '%s%s\n", opts[o].args[1],
                     (int)(strchr(what, '\'') - what), what, junk[k], strchr(what, '\''));
            const char *needles[] = {want, NULL};
            expect_bad_input(&r, needles);
            run_free(&r);
        }
    /* decimals: also 0 and the negative and huge values the cluster used to take (issue 14) */
    const char *decimals[][2] = {{"--nic-gbps", "a decimal number > 0 and at most 1000000"},
                                 {"--oversubscription", "a decimal number from 1 to 1000000"}};
    const char *values[32];
    int n = 0;
    for (int k = 0; junk[k]; k++)
        values[n++] = junk[k];
    const char *more[] = {"0", "-100", "1e308", "1e7"};
    for (int k = 0; k < 4; k++)
        values[n++] = more[k];
    for (size_t o = 0; o < 2; o++)
        for (int k = 0; k < n; k++) {
            const char *v = values[k];
            if (!strcmp(v, "1e3"))
                continue; /* an exponent is fine in a decimal */
            const char *args[] = {"cluster", "dgx-a100", decimals[o][0], v, NULL};
            run_result r = run_protosim(dir, args);
            char want[256];
            snprintf(want, sizeof want, "protosim: error: %s: bad number '%s' (expected %s)\n",
                     decimals[o][0], v, decimals[o][1]);
            const char *needles[] = {want, NULL};
            expect_bad_input(&r, needles);
            run_free(&r);
        }
    remove_tmpdir(dir);
}
END_TEST

/* --sizes 1Ki is 1024 bytes; 1M,1Gi,2k are 1000000, 1073741824 and 2000 (a row each). */
START_TEST(collective_size_suffixes)
{
    char *dir = make_tmpdir();
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *one[] = {"collective", "--cluster", cl,      "--gpus", "2",
                         "--sizes",    "1Ki",       "--csv", "-",      NULL};
    run_result r = run_protosim(dir, one);
    expect_exit(&r, 0);
    const char *head = "bytes,time_s,algbw_GBps,busbw_GBps,algo\n1024,";
    ck_assert_msg(!strncmp(r.out, head, strlen(head)), "stdout:\n%s", r.out);
    ck_assert_int_eq((int)(strchr(r.out + strlen(head), '\n') - r.out) + 1,
                     (int)strlen(r.out)); /* 1 row */
    run_free(&r);
    const char *three[] = {"collective", "--cluster", cl,      "--gpus", "2",
                           "--sizes",    "1M,1Gi,2k", "--csv", "-",      NULL};
    r = run_protosim(dir, three);
    expect_exit(&r, 0);
    const char *p = strchr(r.out, '\n') + 1;
    const char *rows[] = {"1000000,", "1073741824,", "2000,"};
    for (int i = 0; i < 3; i++) {
        ck_assert_msg(!strncmp(p, rows[i], strlen(rows[i])), "row %d: stdout:\n%s", i, r.out);
        p = strchr(p, '\n') + 1;
    }
    ck_assert_str_eq(p, "");
    run_free(&r);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* The default output is nccl-tests' table: a header, then size, count (floats), type, redop,
 * algorithm, time (us), algbw = size / time and busbw = algbw * (n-1)/n for an all-gather on 4
 * GPUs (2(n-1)/n = 1.5 for an all-reduce). */
START_TEST(collective_prints_the_nccl_tests_table)
{
    char *dir = make_tmpdir();
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *ops[2] = {"all-gather", "allreduce"};
    const double bus[2] = {0.75, 1.5};
    for (int k = 0; k < 2; k++) {
        const char *args[] = {"collective", "--cluster", cl,     "--gpus", "4",
                              "--sizes",    "1Gi",       "--op", ops[k],   NULL};
        run_result r = run_protosim(dir, args);
        expect_exit(&r, 0);
        ck_assert_msg(!strncmp(r.out, "# protosim collective: ", 23), "stdout:\n%s", r.out);
        ck_assert_ptr_nonnull(strstr(r.out, "algbw"));
        const char *row = strstr(r.out, "\n   ");
        ck_assert_ptr_nonnull(row);
        double size, count, us, algbw, busbw;
        char type[16], redop[16], algo[16];
        ck_assert_int_eq(sscanf(row, "%lf %lf %15s %15s %15s %lf %lf %lf", &size, &count, type,
                                redop, algo, &us, &algbw, &busbw),
                         8);
        ck_assert(size == 1073741824.0 && count == 268435456.0);
        ck_assert_str_eq(type, "float");
        ck_assert_str_eq(redop, "sum");
        ck_assert_str_eq(algo, "ring"); /* A100s: no NVLS; one node: no tree */
        ck_assert_msg(fabs(algbw - size / (us * 1e-6) / 1e9) <= 0.01, "%s", row);
        ck_assert_msg(fabs(busbw - algbw * bus[k]) <= 0.01, "%s", row);
        run_free(&r);
    }
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- merge */

/* A valid shard 1/2 of a 2-plan sweep: plan 0 simulated (plan 1 would be in shard 2). */
static cJSON *shard_doc(void)
{
    const char *text =
        "{\"sweep\": {\"file\": \"s.yaml\", \"cluster\": \"dir/c.xml\", \"base\": \"(inline)\","
        " \"workload\": \"w\", \"gpus\": 4, \"memory\": \"fit\", \"axes\": {\"tensor\": [2]},"
        " \"hash\": \"0123456789abcdef\", \"combinations\": 2, \"shard\": [1, 2], \"wall_s\": 1},"
        " \"plans\": [{\"index\": 0, \"rank\": 1, \"plan\": \"tp2\", \"status\": \"ok\","
        " \"tensor\": 2, \"pipeline\": 1, \"data\": 2, \"micro_batch\": 1, \"global_batch\": 8,"
        " \"schedule\": \"1f1b\", \"virtual_stages\": 1, \"zero\": 1, \"recompute\": \"full\","
        " \"bucket_mb\": 25, \"sequence_parallel\": true, \"precision\": \"bf16\","
        " \"iteration_time_s\": 1.5, \"tokens_per_s\": 1000, \"samples_per_s\": 8, \"mfu\": 0.25,"
        " \"breakdown\": {\"compute_s\": 1, \"exposed_comm_s\": 0.25, \"bubble_s\": 0.125,"
        " \"idle_s\": 0.125}, \"sim_wall_s\": 0.5, \"peak_memory_bytes\": 2147483648,"
        " \"memory_capacity_bytes\": 85899345920}]}";
    cJSON *d = cJSON_Parse(text);
    ck_assert_ptr_nonnull(d);
    return d;
}

static cJSON *plan0(cJSON *doc)
{
    return cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "plans"), 0);
}

static void set_field(cJSON *obj, const char *key, cJSON *value)
{
    if (cJSON_HasObjectItem(obj, key))
        cJSON_ReplaceItemInObjectCaseSensitive(obj, key, value);
    else
        cJSON_AddItemToObject(obj, key, value);
}

/* Writes doc to DIR/name (doc is freed); returns the path. */
static char *write_doc(const char *dir, const char *name, cJSON *doc)
{
    char *path = tmp_path(dir, name);
    char *text = cJSON_Print(doc);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(doc);
    return path;
}

/* protosim merge DOC --json DIR/merged.json: exit 1, nothing on stdout nor in merged.json, and
 * stderr naming the file and each needle (the JSON path of the field first). */
static void expect_merge_refused(cJSON *doc, const char *const *needles)
{
    char *dir = make_tmpdir();
    char *in = write_doc(dir, "shard.json", doc), *out = tmp_path(dir, "merged.json");
    const char *args[] = {"merge", in, "--json", out, NULL};
    run_result r = run_protosim(dir, args);
    expect_bad_input(&r, needles);
    ck_assert_msg(strstr(r.err, in) != NULL, "stderr does not name %s:\n%s", in, r.err);
    ck_assert_msg(access(out, F_OK) != 0, "--json written despite the error");
    run_free(&r);
    free(in);
    free(out);
    remove_tmpdir(dir);
}

START_TEST(merge_hand_written_shard)
{
    char *dir = make_tmpdir();
    char *in = write_doc(dir, "shard.json", shard_doc()), *out = tmp_path(dir, "merged.json");
    const char *args[] = {"merge", in, "--json", out, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "protosim: warning: 1 of 2 shards missing: the ranking covers 1 of 2 "
                            "plans\n");
    const char *head = "sweep s.yaml on c.xml (4 GPUs): 1 plans: 1 simulated, 0 do not fit in "
                       "memory, 0 failed, 0 invalid combinations\n";
    ck_assert_msg(!strncmp(r.out, head, strlen(head)), "stdout:\n%s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "   1  tp2 pp1 dp2 mb1 1f1b zero1 full "));
    cJSON *m = parse_json_file(out);
    const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "plans"), 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "plans")), 1);
    ck_assert(num_field(p, "rank") == 1);
    ck_assert(num_field(p, "tensor") == 2);
    ck_assert(num_field(p, "data") == 2);
    ck_assert(num_field(p, "global_batch") == 8);
    ck_assert(num_field(p, "zero") == 1);
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "schedule")->valuestring, "1f1b");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "recompute")->valuestring, "full");
    ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(p, "precision")->valuestring, "bf16");
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "sequence_parallel")));
    ck_assert(num_field(p, "iteration_time_s") == 1.5);
    ck_assert(num_field(p, "peak_memory_bytes") == 2147483648.0);
    ck_assert(num_field(obj_field(p, "breakdown"), "exposed_comm_s") == 0.25);
    ck_assert(num_field(obj_field(m, "counts"), "ok") == 1);
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(obj_field(m, "sweep"), "shard")));
    cJSON_Delete(m);
    run_free(&r);
    free(in);
    free(out);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(merge_empty_plans)
{
    char *dir = make_tmpdir();
    cJSON *doc = shard_doc();
    cJSON_ReplaceItemInObjectCaseSensitive(doc, "plans", cJSON_CreateArray());
    char *in = write_doc(dir, "empty.json", doc), *out = tmp_path(dir, "merged.json");
    char *csv = tmp_path(dir, "merged.csv"), *svg = tmp_path(dir, "merged.svg");
    const char *args[] = {"merge", in, "--json", out, "--csv", csv, "--plot", svg, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    ck_assert_str_eq(r.err, "protosim: warning: 1 of 2 shards missing: the ranking covers 0 of 2 "
                            "plans\n");
    ck_assert_ptr_nonnull(strstr(r.out, "(4 GPUs): 0 plans: 0 simulated, 0 do not fit in memory, "
                                        "0 failed, 0 invalid combinations\n"));
    cJSON *m = parse_json_file(out);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "plans")), 0);
    ck_assert(num_field(obj_field(m, "counts"), "plans") == 0);
    cJSON_Delete(m);
    char *text = slurp(csv, NULL);
    ck_assert_ptr_nonnull(text);
    ck_assert(!strncmp(text, "rank,index,plan,status", 22));
    ck_assert_ptr_null(strchr(strchr(text, '\n') + 1, '\n')); /* the header only */
    free(text);
    text = slurp(svg, NULL);
    ck_assert_ptr_nonnull(strstr(text, "</svg>"));
    free(text);
    run_free(&r);
    free(in);
    free(out);
    free(csv);
    free(svg);
    remove_tmpdir(dir);
}
END_TEST

START_TEST(merge_rejects_bad_plan_fields)
{
    cJSON *d = shard_doc();
    set_field(plan0(d), "schedule", cJSON_CreateString("zigzag"));
    const char *sched[] = {
        "field 'plans[0].schedule'", "unknown schedule 'zigzag'",
        "(expected gpipe, 1f1b, interleaved, zb-h1, zb-h2, zb-v, dualpipev or dualpipe)", NULL};
    expect_merge_refused(d, sched);

    d = shard_doc();
    set_field(plan0(d), "tensor", cJSON_CreateString("x"));
    const char *tensor[] = {"field 'plans[0].tensor'", "must be an integer, got a string", NULL};
    expect_merge_refused(d, tensor);

    d = shard_doc();
    set_field(plan0(d), "micro_batch", cJSON_CreateNumber(1.5));
    const char *frac[] = {"field 'plans[0].micro_batch'", "must be an integer", "got 1.5", NULL};
    expect_merge_refused(d, frac);

    d = shard_doc();
    set_field(plan0(d), "zero", cJSON_CreateNumber(7));
    const char *zero[] = {"field 'plans[0].zero'", "between 0 and 3, got 7", NULL};
    expect_merge_refused(d, zero);

    d = shard_doc();
    set_field(plan0(d), "status", cJSON_CreateString("pending"));
    const char *pending[] = {"field 'plans[0].status'", "'pending'", NULL};
    expect_merge_refused(d, pending);

    d = shard_doc();
    set_field(plan0(d), "status", cJSON_CreateString("done"));
    const char *status[] = {"field 'plans[0].status'", "unknown status 'done'", NULL};
    expect_merge_refused(d, status);

    d = shard_doc();
    set_field(plan0(d), "recompute", cJSON_CreateNumber(1));
    const char *rec[] = {"field 'plans[0].recompute'", "must be a string, got a number", NULL};
    expect_merge_refused(d, rec);

    d = shard_doc();
    set_field(plan0(d), "index", cJSON_CreateNumber(2));
    const char *index[] = {"field 'plans[0].index'", "between 0 and 1, got 2", NULL};
    expect_merge_refused(d, index);

    d = shard_doc();
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(plan0(d), "breakdown"),
                                            "idle_s");
    const char *idle[] = {"field 'plans[0].breakdown.idle_s'", "missing", NULL};
    expect_merge_refused(d, idle);
}
END_TEST

START_TEST(merge_rejects_bad_shard)
{
    const char *shards[] = {"[3, 2]",  "[0, 2]",   "[1]",       "[1, 2, 3]",
                            "\"1/2\"", "[1.5, 2]", "[\"1\", 2]"};
    for (size_t i = 0; i < sizeof shards / sizeof shards[0]; i++) {
        cJSON *d = shard_doc();
        cJSON *sweep = cJSON_GetObjectItemCaseSensitive(d, "sweep");
        cJSON *v = cJSON_Parse(shards[i]);
        ck_assert_ptr_nonnull(v);
        cJSON_ReplaceItemInObjectCaseSensitive(sweep, "shard", v);
        const char *needles[] = {"field 'sweep.shard'", "must be null or [k, n]", "1 <= k <= n",
                                 NULL};
        expect_merge_refused(d, needles);
    }
}
END_TEST

/* ---------------------------------------------------------------- run --csv */

/* The first line of file path (caller frees). */
static char *first_line(const char *path)
{
    char *text = slurp(path, NULL);
    ck_assert_msg(text != NULL, "%s was not written", path);
    char *nl = strchr(text, '\n');
    ck_assert_ptr_nonnull(nl);
    *nl = '\0';
    return text;
}

/* --nccl-algo forces the all-reduce algorithm: ring runs the example (its groups are on one
 * node); tree cannot run on one node and is an input error naming why; a bad name is a usage
 * error. */
START_TEST(run_nccl_algo_is_checked_against_the_groups)
{
    char *dir = make_tmpdir();
    char *st = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *ring[] = {"run", st, "--cluster", cl, "--nccl-algo", "ring", "-q", NULL};
    run_result r = run_protosim(dir, ring);
    expect_exit(&r, 0);
    run_free(&r);
    /* NCCL runs the tree inside one node too (a chain): dgx4's groups take it (issue 30) */
    const char *tree[] = {"run", st, "--cluster", cl, "--nccl-algo", "tree", "-q", NULL};
    run_ok(dir, tree);
    /* 12 GPUs of two 8-GPU nodes: 8 on one, 4 on the other, no tree */
    char *two = src_path("topology/clusters/dgx-a100-2node.xml");
    const char *uneven[] = {"collective", "--cluster", two,      "--gpus", "12",
                            "--sizes",    "1G",        "--algo", "tree",   NULL};
    r = run_protosim(dir, uneven);
    expect_exit(&r, 1);
    ck_assert_msg(strstr(r.err, "this 12-GPU group has unequal nodes"), "%s", r.err);
    run_free(&r);
    /* a plan without an all-reduce (ZeRO-3: reduce-scatter and all-gather) runs, and says that
     * --nccl-algo changes nothing */
    char *z3 = src_path("strategies/examples/gpt3-6.7b-zero3-8gpu.yaml");
    const char *none[] = {"run", z3, "--cluster", two, "--nccl-algo", "ring", "-q", NULL};
    r = run_protosim(dir, none);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.err, "warning: --nccl-algo ring changes nothing: the plan has no "
                                "all-reduce over two GPUs or more (its collectives: "
                                "reduce-scatter, all-gather)"),
                  "%s", r.err);
    run_free(&r);
    free(two), free(z3);
    const char *bad[] = {"run", st, "--cluster", cl, "--nccl-algo", "rings", NULL};
    r = run_protosim(dir, bad);
    expect_exit(&r, 1);
    ck_assert_msg(strstr(r.err, "--nccl-algo: bad algorithm 'rings'"), "%s", r.err);
    run_free(&r);
    free(st);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* run --csv: the header of sweep's CSV (here through merge, the same writer), then one row whose
 * iteration_time_s (column 19, after gpus, context, expert and expert_tensor) is the JSON report's,
 * to the 9 digits the CSV keeps. */
START_TEST(run_csv_has_the_sweep_columns)
{
    char *dir = make_tmpdir();
    char *strat = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    char *csv = tmp_path(dir, "run.csv"), *json = tmp_path(dir, "run.json");
    const char *args[] = {"run", strat, "--cluster", cl, "--csv", csv, "--json", json, "-q", NULL};
    run_ok(dir, args);
    char *shard = write_doc(dir, "shard.json", shard_doc()), *sweep_csv = tmp_path(dir, "s.csv");
    const char *margs[] = {"merge", shard, "--csv", sweep_csv, NULL};
    run_ok(dir, margs);
    char *want = first_line(sweep_csv), *got = first_line(csv);
    ck_assert_str_eq(got, want);
    free(want);
    free(got);
    char *text = slurp(csv, NULL);
    const char *row = strchr(text, '\n') + 1;
    ck_assert_ptr_null(strchr(strchr(row, '\n') + 1, '\n')); /* one row */
    ck_assert_msg(!strncmp(row, "1,0,tp2 pp1 dp2 mb2 1f1b zero0 sel,ok,4,2,1,2,1,2,1f1b,1,0,", 59),
                  "row: %s", row);
    const char *f = row;
    for (int col = 1; col < 19; col++)
        f = strchr(f, ',') + 1;
    cJSON *j = parse_json_file(json);
    char iter[64];
    snprintf(iter, sizeof iter, "%.9g,", num_field(j, "iteration_time_s"));
    ck_assert_msg(!strncmp(f, iter, strlen(iter)), "iteration_time_s: csv %.20s, json %s", f, iter);
    cJSON_Delete(j);
    free(text);
    free(shard);
    free(sweep_csv);
    free(csv);
    free(json);
    free(strat);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- man page, completion */

static int word_char(char c)
{
    return c == '-' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

/* word occurs in text[0..n) as a whole word (not inside "--csvx" or "--jobs" for "-j"). */
static int has_word(const char *text, size_t n, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = 0; i + w <= n; i++)
        if (!strncmp(text + i, word, w) && (i == 0 || !word_char(text[i - 1])) &&
            (i + w == n || !word_char(text[i + w])))
            return 1;
    return 0;
}

/* A file given to the wrong subcommand or option is named for what it is, with what takes it
 * (issue 30): before, an empty cluster was "not a valid XML file", a sweep given to run "unknown
 * key 'base'", swapped arguments a YAML parser's message. */
START_TEST(files_are_named_for_what_they_are)
{
    char *dir = make_tmpdir();
    char *strat = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *sweep = src_path("strategies/examples/sweep-gpt3-1.3b-dgx4.yaml");
    char *xml = src_path("topology/clusters/dgx4.xml"),
         *model = src_path("workloads/models/gpt3-1.3b.yaml");
    char *kineto = src_path("tests/data/replay/sync.json"),
         *empty = write_tmp_file(dir, "empty.yaml", "");
    const struct {
        const char *args[8];
        const char *needle;
    } cases[] = {
        {{"run", strat, "--cluster", empty}, "empty.yaml: an empty file, where a cluster"},
        {{"run", sweep, "--cluster", xml},
         "this is a sweep (base and axes), not a strategy (a plan): protosim sweep SWEEP.yaml "
         "takes it"},
        {{"run", xml, "--cluster", strat},
         "dgx4.xml: this is a SimGrid platform (XML), not a strategy (a plan): --cluster takes it"},
        {{"run", model, "--cluster", xml}, "this is a model, not a strategy"},
        {{"run", strat, "--cluster", kineto},
         "this is a PyTorch profiler (Kineto) trace, not a cluster"},
        {{"sweep", strat, "--cluster", xml},
         "this is a strategy (a plan), not a sweep (base and axes): protosim run STRATEGY.yaml"},
        {{"replay", strat, "--cluster", xml},
         "gpt3-1.3b-dp2-tp2.yaml: this is a strategy (a plan), not a PyTorch profiler"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run_result r = run_protosim(dir, cases[i].args);
        const char *needles[] = {cases[i].needle, NULL};
        expect_bad_input(&r, needles);
        run_free(&r);
    }
    free(strat), free(sweep), free(xml), free(model), free(kineto), free(empty);
    remove_tmpdir(dir);
}
END_TEST

/* embedding.update: sparse is what the plan line says (it said "update fused into the lookup"
 * on one GPU): the bundled one-GPU DLE example, tables on GPU 0, and its 8-GPU table-wise
 * sibling. */
START_TEST(dlrm_sparse_update_is_reported)
{
    char *dir = make_tmpdir();
    char *one = tmp_path(dir, "a100x1.yaml"), *eight = tmp_path(dir, "a100x8.yaml");
    const char *c1[] = {"cluster", "dgx-a100", "--nodes", "1", "--gpus-per-node",
                        "1",       "-o",       one,       NULL};
    const char *c8[] = {"cluster", "dgx-a100", "--nodes", "1", "-o", eight, NULL};
    run_result r = run_protosim(dir, c1);
    expect_exit(&r, 0);
    run_free(&r);
    run_ok(dir, c8);
    char *p1 = src_path("strategies/examples/dlrm-criteo-small-a100-dle1.yaml");
    const char *a1[] = {"run", p1, "--cluster", one, NULL};
    r = run_protosim(dir, a1);
    expect_exit(&r, 0);
    ck_assert_msg(strstr(r.out, "on the one GPU (sparse update: a gradient row per lookup"), "%s",
                  r.out);
    run_free(&r);
    char *p8 = src_path("strategies/examples/dlrm-criteo-large-dgx-a100-dle8.yaml");
    char *text = slurp(p8, NULL);
    int sparse = strstr(text, "update: sparse") != NULL;
    free(text);
    const char *a8[] = {"run", p8, "--cluster", eight, NULL};
    r = run_protosim(dir, a8);
    expect_exit(&r, 0);
    ck_assert_msg((strstr(r.out, "; sparse update") != NULL) == sparse, "%s", r.out);
    run_free(&r);
    free(one), free(eight), free(p1), free(p8);
    remove_tmpdir(dir);
}
END_TEST

/* A plan on part of a cluster (issue 30): GPT-3 1.3B TP2 x DP2 (4 GPUs) on 2 generated DGX A100
 * nodes (16 GPUs) takes GPUs 0-3 and says so; --gpus 0-3 is the same run to the bit, and so is
 * --gpus 8-11 (the other node, built alike); --gpus 0,8,1,9 puts each TP pair across the nodes,
 * whose NIC (25 GB/s) is 12x slower than NVLink (300 GB/s): slower. A list of the wrong length,
 * a GPU outside the cluster, a GPU twice and a bad list exit 1 naming --gpus. */
START_TEST(run_on_part_of_a_cluster)
{
    char *dir = make_tmpdir();
    char *two = tmp_path(dir, "two.yaml");
    const char *gen[] = {"cluster", "dgx-a100", "--nodes", "2", "-o", two, NULL};
    run_result r = run_protosim(dir, gen);
    expect_exit(&r, 0);
    run_free(&r);
    char *strat = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    const char *lists[4] = {NULL, "0-3", "8-11", "0,8,1,9"};
    double t[4];
    for (int k = 0; k < 4; k++) {
        char *json = tmp_path(dir, "run.json");
        const char *with[] = {"run", strat,    "--cluster", two, "--json",
                              json,  "--gpus", lists[k],    NULL};
        const char *without[] = {"run", strat, "--cluster", two, "--json", json, NULL};
        r = run_protosim(dir, k ? with : without);
        expect_exit(&r, 0);
        const char *want[4] = {"gpus         4 of the cluster's 16: 0-3 (hosts n0g0 .. n0g3)",
                               "gpus         4 of the cluster's 16: 0-3",
                               "gpus         4 of the cluster's 16: 8-11 (hosts n1g0 .. n1g3)",
                               "gpus         4 of the cluster's 16: 0,8,1,9"};
        ck_assert_msg(strstr(r.out, want[k]), "--gpus %s: %s", lists[k] ? lists[k] : "-", r.out);
        run_free(&r);
        cJSON *j = parse_json_file(json);
        t[k] = cJSON_GetObjectItemCaseSensitive(j, "iteration_time_s")->valuedouble;
        ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "cluster_gpus")->valueint, 16);
        const cJSON *taken = cJSON_GetObjectItemCaseSensitive(j, "cluster_ranks");
        ck_assert_int_eq(cJSON_GetArraySize(taken), 4);
        ck_assert_int_eq(cJSON_GetArrayItem(taken, 1)->valueint, k == 2 ? 9 : k == 3 ? 8 : 1);
        cJSON_Delete(j);
        free(json);
    }
    ck_assert(t[1] == t[0]);
    ck_assert(t[2] == t[0]);
    ck_assert_msg(t[3] > 1.1 * t[0], "TP across nodes %.6f s, in one node %.6f s", t[3], t[0]);
    const char *bad[4][2] = {{"0-2", "--gpus 0-2 lists 3 GPUs; the plan takes 4"},
                             {"0-2,16", "--gpus: GPU 16 is not in the cluster"},
                             {"0,1,1,2", "--gpus: GPU 1 is listed twice"},
                             {"0-x", "--gpus: bad rank list '0-x'"}};
    for (int k = 0; k < 4; k++) {
        const char *args[] = {"run", strat, "--cluster", two, "--gpus", bad[k][0], NULL};
        r = run_protosim(dir, args);
        expect_exit(&r, 1);
        ck_assert_msg(strstr(r.err, bad[k][1]), "--gpus %s: %s", bad[k][0], r.err);
        run_free(&r);
    }
    free(strat), free(two);
    remove_tmpdir(dir);
}
END_TEST

/* The tree inside one node (issue 30) on two GPUs joined by one 100 GB/s split-duplex link: two
 * channels, each a chain a-b both ways carrying half of S, so S = 1 GB each way at the protocol
 * efficiency 0.71, after the launch (40 us) and 2 (k - 1) = 2 steps of 0.5 us: 40e-6 + 1e-6 +
 * 1e9 / (0.71 x 100e9) = 14.1255 ms, what the ring takes too (one ring a-b-a, S each way, 2 steps). */
START_TEST(tree_inside_one_node_by_hand)
{
    char *dir = make_tmpdir();
    char *cl = src_path("tests/data/cluster/two_gpus.xml");
    const double want = 40e-6 + 2 * 0.5e-6 + 1e9 / (0.71 * 100e9);
    const char *algos[2] = {"tree", "ring"};
    for (int k = 0; k < 2; k++) {
        const char *args[] = {"collective", "--cluster", cl,       "--gpus", "2", "--sizes",
                              "1G",         "--algo",    algos[k], "--csv",  "-", NULL};
        run_result r = run_protosim(dir, args);
        expect_exit(&r, 0);
        const char *row = strchr(r.out, '\n');
        ck_assert_ptr_nonnull(row);
        double t = strtod(strchr(row + 1, ',') + 1, NULL);
        ck_assert_msg(fabs(t - want) < 1e-9, "%s: %.9g s, by hand %.9g s", algos[k], t, want);
        ck_assert_ptr_nonnull(strstr(row, algos[k]));
        run_free(&r);
    }
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* The summary's simulator line gives the host's whole time, not the engine's alone (issue 30:
 * 32,768 micro-batches took seconds to build and sum while it said 0.017 s): host = compile +
 * simulate + summarize, each printed to the millisecond, and simulate holds the engine's time. */
START_TEST(run_reports_its_host_time)
{
    char *dir = make_tmpdir();
    char *st = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *args[] = {"run", st, "--cluster", cl, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    const char *line = strstr(r.out, "  simulator ");
    ck_assert_ptr_nonnull(line);
    const char *in = strstr(line, " activities in "), *host = strstr(line, "; host ");
    ck_assert_msg(in && host, "%s", line);
    double engine = strtod(in + strlen(" activities in "), NULL), total, c, sim, sum;
    ck_assert_int_eq(sscanf(host, "; host %lf s: compile %lf, simulate %lf, summarize %lf", &total,
                            &c, &sim, &sum),
                     4);
    ck_assert_msg(fabs(total - (c + sim + sum)) <= 0.0015, "%s", line);
    ck_assert_msg(sim + 0.0005 >= engine, "simulate %.3f s < the engine's %.3f s", sim, engine);
    run_free(&r);
    free(st), free(cl);
    remove_tmpdir(dir);
}
END_TEST

/* A report that cannot be written is an error (issue 34's class "write errors"): stdout on a
 * full disk (/dev/full) or closed exits 1 naming standard output, for run, sweep and --version
 * alike (one check in main). */
START_TEST(unwritable_stdout_exits_1)
{
    char *dir = make_tmpdir();
    char *st = src_path("strategies/examples/gpt3-1.3b-dp2-tp2.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    char *sw = src_path("strategies/examples/sweep-gpt3-1.3b-dgx4.yaml");
    const char *bin = getenv("PROTOSIM_BIN");
    char cmds[4][2048];
    snprintf(cmds[0], sizeof cmds[0], "'%s' run '%s' --cluster '%s' >/dev/full", bin, st, cl);
    snprintf(cmds[1], sizeof cmds[1], "'%s' sweep '%s' --cluster '%s' --no-progress >/dev/full",
             bin, sw, cl);
    snprintf(cmds[2], sizeof cmds[2], "'%s' --version >&-", bin);
    snprintf(cmds[3], sizeof cmds[3], "'%s' run '%s' --cluster '%s' >/dev/null", bin, st, cl);
    for (int k = 0; k < 4; k++) {
        const char *bash[] = {"bash", "-c", cmds[k], NULL};
        run_result r = run_command(dir, bash);
        expect_exit(&r, k < 3 ? 1 : 0);
        ck_assert_msg((strstr(r.err, "protosim: error: standard output: cannot write") != NULL) ==
                          (k < 3),
                      "%s: %s", cmds[k], r.err);
        run_free(&r);
    }
    free(st), free(cl), free(sw);
    remove_tmpdir(dir);
}
END_TEST

/* The options NAME's table holds (`protosim help --options NAME`: what its parser reads). */
static int table_options(const char *dir, const char *cmd, char names[][32], int max)
{
    const char *args[] = {"help", "--options", cmd, NULL};
    run_result r = run_protosim(dir, args);
    expect_exit(&r, 0);
    int n = 0;
    for (char *line = strtok(r.out, "\n"); line; line = strtok(NULL, "\n")) {
        ck_assert(strlen(line) < 32 && n < max);
        snprintf(names[n++], 32, "%s", line);
    }
    run_free(&r);
    return n;
}

/* The options a list of definitions defines: in NAME --help, each line of the options part that
 * starts "  -" (its head up to two spaces: "-j N, --jobs N"); in a man page section, each line
 * after .TP whose first word is an option (".BR \-j \", \" \-\-jobs"). Every word of the head
 * that starts with '-' is one. */
static int defined_options(const char *text, int man, char names[][32], int max)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        snprintf(line, sizeof line, "%.*s", (int)(len < 255 ? len : 255), p);
        int def = man ? (p - text >= 4 && !strncmp(p - 4, ".TP\n", 4) && line[0] == '.' &&
                         (strstr(line, " -") == strchr(line, ' ')))
                      : !strncmp(line, "  -", 3);
        if (def) {
            char *head = man ? strchr(line, ' ') : line;
            char *gap = man ? NULL : strstr(line + 2, "  ");
            if (gap)
                *gap = '\0';
            for (char *w = strtok(head, " \","); w; w = strtok(NULL, " \","))
                if (w[0] == '-' && word_char(w[1])) {
                    ck_assert(strlen(w) < 32 && n < max);
                    snprintf(names[n++], 32, "%s", w);
                }
        }
        p += len + (eol != NULL);
    }
    return n;
}

static int in_list(char names[][32], int n, const char *w)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], w))
            return 1;
    return 0;
}

/* Two lists hold the same options (each once is enough), naming what differs. */
static void same_options(const char *what, char a[][32], int na, const char *other, char b[][32],
                         int nb)
{
    for (int i = 0; i < na; i++)
        ck_assert_msg(in_list(b, nb, a[i]), "%s has %s, %s lacks it", what, a[i], other);
    for (int i = 0; i < nb; i++)
        ck_assert_msg(in_list(a, na, b[i]), "%s has %s, %s lacks it", other, b[i], what);
}

/* One option table per subcommand (issue 30): the options its parser reads (help --options)
 * are exactly those its --help defines and those its section of docs/protosim.1 defines (.SS
 * NAME up to the next section, roff's \- read as -); the bash completion has no list of its own
 * (it asks the binary) and, run in bash, offers exactly the table. */
START_TEST(help_man_page_and_completion_follow_the_option_table)
{
    char *dir = make_tmpdir();
    char *man_path = src_path("docs/protosim.1");
    char *comp_path = src_path("scripts/protosim-completion.bash");
    char *man = slurp(man_path, NULL), *comp = slurp(comp_path, NULL);
    ck_assert_ptr_nonnull(man);
    ck_assert_ptr_nonnull(comp);
    char *w = man; /* roff's \- is a plain - */
    for (const char *r = man; *r; r++)
        if (!(r[0] == '\\' && r[1] == '-'))
            *w++ = *r;
    *w = '\0';
    ck_assert_ptr_nonnull(strstr(man, ".SH EXIT STATUS\n"));
    ck_assert_ptr_nonnull(strstr(man, ".SH ENVIRONMENT\n"));
    ck_assert_ptr_nonnull(strstr(man, "PROTOSIM_DATA_DIR"));
    ck_assert_ptr_nonnull(strstr(man, "PROTOSIM_DEVICES"));
    const char *every = strstr(man, ".SH OPTIONS OF EVERY SUBCOMMAND\n");
    ck_assert_ptr_nonnull(every);
    ck_assert(has_word(every, (size_t)(strstr(every + 1, "\n.SH") - every), "--devices"));
    ck_assert_ptr_nonnull(strstr(man, "PROTOSIM_SIMGRID_LOG"));
    ck_assert_ptr_null(strstr(comp, "_protosim_opts_"));
    ck_assert_ptr_nonnull(strstr(comp, "help --options \"$cmd\""));
    ck_assert_ptr_nonnull(strstr(comp, "help --commands"));
    const char *bin = getenv("PROTOSIM_BIN");
    for (int k = 0; k < N_COMMANDS; k++) {
        const char *name = commands[k].name;
        char table[64][32], help[64][32], sec[64][32], offered[64][32];
        int nt = table_options(dir, name, table, 64);
        ck_assert_msg(nt >= 4, "%s: %d options in its table", name, nt);
        /* --help: the options part, before those of every subcommand */
        const char *args[] = {name, "--help", NULL};
        run_result r = run_protosim(dir, args);
        expect_exit(&r, 0);
        char *opts = strstr(r.out, "\noptions:\n");
        ck_assert_msg(opts != NULL, "%s --help has no options part", name);
        int nh = defined_options(opts, 0, help, 64);
        run_free(&r);
        snprintf(help[nh++], 32, "--devices"); /* "options of every subcommand" */
        same_options("the table", table, nt, "--help", help, nh);
        char head[64];
        snprintf(head, sizeof head, ".SS %s\n", name);
        const char *s = strstr(man, head);
        ck_assert_msg(s != NULL, "%s has no '%s'", man_path, head);
        const char *end = strstr(s + 1, "\n.S");
        char *section = strndup(s, end ? (size_t)(end - s) : strlen(s));
        int ns = defined_options(section, 1, sec, 64);
        free(section);
        snprintf(sec[ns++], 32, "--devices");
        same_options("the table", table, nt, "the man page", sec, ns);
        /* bash, completing `protosim NAME -` with this file */
        char script[1024];
        snprintf(script, sizeof script,
                 "source '%s'; COMP_WORDS=('%s' %s -); COMP_CWORD=2; _protosim; "
                 "printf '%%s\\n' \"${COMPREPLY[@]}\"",
                 comp_path, bin, name);
        const char *bash[] = {"bash", "-c", script, NULL};
        run_result b = run_command(dir, bash);
        expect_exit(&b, 0);
        int no = 0;
        for (char *line = strtok(b.out, "\n"); line; line = strtok(NULL, "\n"))
            snprintf(offered[no++], 32, "%s", line);
        run_free(&b);
        same_options("the table", table, nt, "the completion", offered, no);
    }
    free(man);
    free(comp);
    free(man_path);
    free(comp_path);
    remove_tmpdir(dir);
}
END_TEST

/* ---------------------------------------------------------------- sweep progress */

/* stderr not a terminal: progress as lines, the last "sweep: 10/10 plans, R plans/s, eta 0 s"
 * (small.yaml: 3 tensor x 2 pipeline x 2 recompute = 12 combinations, tp4 x pp2 needs 8 GPUs
 * on 4: 10 plans), then the summary; --no-progress: the summary alone. */
START_TEST(sweep_progress_lines_off_a_terminal)
{
    char *dir = make_tmpdir();
    char *sweep = src_path("tests/data/sweep/small.yaml");
    char *cl = src_path("topology/clusters/dgx4.xml");
    const char *flags[] = {"--progress", "--no-progress", NULL};
    for (int f = 0; f < 3; f++) {
        const char *args[] = {"sweep", sweep, "--cluster", cl, "-j", "2", flags[f], NULL};
        run_result r = run_protosim(dir, args);
        expect_exit(&r, 0);
        /* searched, not at the start: sanitizer builds may add warnings of the workers */
        const char *head = "sweep: 10/10 plans, ", *tail = " plans/s, eta 0 s\n";
        const char *line = strstr(r.err, head), *summary = strstr(r.err, "sweep: 10 plans ");
        ck_assert_msg(summary != NULL, "stderr:\n%s", r.err);
        if (f == 1) {
            ck_assert_msg(line == NULL, "progress despite --no-progress:\n%s", r.err);
        } else { /* default and --progress */
            ck_assert_msg(line != NULL && line < summary, "stderr:\n%s", r.err);
            const char *nl = strchr(line, '\n') + 1;
            ck_assert_msg(!strncmp(nl - strlen(tail), tail, strlen(tail)), "stderr:\n%s", r.err);
            double rate = 0;
            ck_assert_int_eq(sscanf(line + strlen(head), "%lf", &rate), 1);
            ck_assert(rate > 0);
        }
        const char *sum = "sweep: 10 plans processed in ";
        ck_assert_msg(!strncmp(summary, sum, strlen(sum)), "stderr:\n%s", r.err);
        ck_assert_ptr_nonnull(strstr(summary, " with 2 workers ("));
        ck_assert_ptr_nonnull(strstr(summary, "10 simulated, 0 oom, 0 failed; 2 invalid "
                                              "combinations skipped\n"));
        ck_assert_str_eq(strchr(summary, '\n') + 1, ""); /* nothing after it */
        run_free(&r);
    }
    free(sweep);
    free(cl);
    remove_tmpdir(dir);
}
END_TEST

static Suite *cli_suite(void)
{
    const TTest *const tests[] = {help_for_every_subcommand,
                                  help_overview,
                                  files_are_named_for_what_they_are,
                                  dlrm_sparse_update_is_reported,
                                  help_among_arguments_and_unknown_options,
                                  option_usage_errors,
                                  cluster_racks,
                                  cluster_from_hwloc,
                                  merge_hand_written_shard,
                                  merge_empty_plans,
                                  merge_rejects_bad_plan_fields,
                                  merge_rejects_bad_shard,
                                  sizes_reject_junk,
                                  counts_reject_junk,
                                  lookup_by_hand,
                                  collective_size_suffixes,
                                  collective_prints_the_nccl_tests_table,
                                  run_nccl_algo_is_checked_against_the_groups,
                                  run_csv_has_the_sweep_columns,
                                  help_man_page_and_completion_follow_the_option_table,
                                  sweep_progress_lines_off_a_terminal,
                                  replay_priority_gradients_report,
                                  run_on_part_of_a_cluster,
                                  tree_inside_one_node_by_hand,
                                  run_reports_its_host_time,
                                  unwritable_stdout_exits_1,
                                  NULL};
    return suite_of("cli", "cli", 60, tests);
}

int main(void)
{
    return suite_run(cli_suite());
}
