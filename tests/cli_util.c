/* cli_util.c: running the protosim binary from tests and reading its outputs; see
 * cli_util.h. Shared by the end-to-end and sweep tests. */
#define _POSIX_C_SOURCE 200809L
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../sim/base/vocab.h"
#include "cli_util.h"

const char *protosim_bin(void)
{
    const char *b = getenv("PROTOSIM_BIN");
    ck_assert_msg(b && *b, "PROTOSIM_BIN is not set");
    return b;
}

char *src_path(const char *rel)
{
    size_t n = strlen(ps_data_dir()) + strlen(rel) + 2;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s/%s", ps_data_dir(), rel);
    return p;
}

char *tmp_path(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

char *write_tmp_file(const char *dir, const char *name, const char *text)
{
    char *path = tmp_path(dir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    fclose(f);
    return path;
}

char *make_tmpdir(void)
{
    char *t = strdup("/tmp/protosim-test-XXXXXX");
    ck_assert_ptr_nonnull(t);
    ck_assert_msg(mkdtemp(t) != NULL, "mkdtemp: %s", strerror(errno));
    return t;
}

/* Removes a temporary directory made by make_tmpdir (flat: the tests write no subfolders). */
void remove_tmpdir(char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char *p = tmp_path(dir, e->d_name);
            unlink(p);
            free(p);
        }
        closedir(d);
    }
    rmdir(dir);
    free(dir);
}

/* Whole file into a NUL-terminated buffer; NULL if it cannot be read. *len gets the size. */
char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

void run_free(run_result *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Runs PROTOSIM_BIN with args (NULL-terminated, without argv[0]) capturing stdout/stderr in
 * files under tmpdir. Fails the test if the process cannot be started. */
/* Runs bin (execvp: a path, or a name found on PATH) with args in tmpdir's files; name labels
 * the command line in messages. */
static run_result run_program(const char *tmpdir, const char *bin, const char *name,
                              const char *const *args)
{
    run_result r;
    memset(&r, 0, sizeof r);

    size_t nargs = 0;
    while (args[nargs])
        nargs++;
    const char **argv = calloc(nargs + 2, sizeof *argv);
    ck_assert_ptr_nonnull(argv);
    argv[0] = bin;
    size_t off = (size_t)snprintf(r.cmd, sizeof r.cmd, "%s", name);
    for (size_t i = 0; i < nargs; i++) {
        argv[i + 1] = args[i];
        if (off < sizeof r.cmd)
            off += (size_t)snprintf(r.cmd + off, sizeof r.cmd - off, " %s", args[i]);
    }

    char *out_path = tmp_path(tmpdir, "stdout.XXXXXX");
    char *err_path = tmp_path(tmpdir, "stderr.XXXXXX");
    int out_fd = mkstemp(out_path);
    int err_fd = mkstemp(err_path);
    ck_assert_msg(out_fd >= 0 && err_fd >= 0, "mkstemp: %s", strerror(errno));

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, STDIN_FILENO);
        dup2(out_fd, STDOUT_FILENO);
        dup2(err_fd, STDERR_FILENO);
        execvp(bin, (char *const *)argv);
        fprintf(stderr, "execvp %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    close(out_fd);
    close(err_fd);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ck_assert_msg(errno == EINTR, "waitpid: %s", strerror(errno));
    r.status = st;
    r.out = slurp(out_path, NULL);
    r.err = slurp(err_path, NULL);
    ck_assert_ptr_nonnull(r.out);
    ck_assert_ptr_nonnull(r.err);
    unlink(out_path);
    unlink(err_path);
    free(out_path);
    free(err_path);
    free(argv);
    return r;
}

run_result run_protosim(const char *tmpdir, const char *const *args)
{
    return run_program(tmpdir, protosim_bin(), "protosim", args);
}

run_result run_command(const char *tmpdir, const char *const *argv)
{
    return run_program(tmpdir, argv[0], argv[0], argv + 1);
}

/* Asserts the process exited normally (no signal) with the expected code. */
void expect_exit(const run_result *r, int code)
{
    ck_assert_msg(!WIFSIGNALED(r->status), "`%s` was killed by signal %d\nstderr:\n%s", r->cmd,
                  WIFSIGNALED(r->status) ? WTERMSIG(r->status) : 0, r->err);
    ck_assert_msg(WIFEXITED(r->status), "`%s` did not exit normally", r->cmd);
    ck_assert_msg(WEXITSTATUS(r->status) == code,
                  "`%s` exited %d, expected %d\nstdout:\n%s\nstderr:\n%s", r->cmd,
                  WEXITSTATUS(r->status), code, r->out, r->err);
}

void run_ok(const char *tmpdir, const char *const *args)
{
    run_result r = run_protosim(tmpdir, args);
    expect_exit(&r, 0);
    run_free(&r);
}

/* Line of "NAME:LINE:COL" in text after the file name `name`, or -1 if no such location. */
long location_line(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        const char *q = p + n;
        if (*q != ':' || !isdigit((unsigned char)q[1]))
            continue;
        char *end;
        long line = strtol(q + 1, &end, 10);
        if (*end == ':' && isdigit((unsigned char)end[1]))
            return line;
    }
    return -1;
}

/* Bad-input check: exit 1, no crash, nothing on stdout, a "protosim: error:" message on stderr
 * mentioning every string in `needles` (NULL-terminated). */
void expect_bad_input(const run_result *r, const char *const *needles)
{
    expect_exit(r, 1);
    ck_assert_msg(r->out[0] == '\0', "`%s` wrote on stdout on error:\n%s", r->cmd, r->out);
    ck_assert_msg(!r->json_written, "`%s` wrote its --json file despite the error", r->cmd);
    ck_assert_msg(strstr(r->err, "protosim: error:") != NULL,
                  "`%s`: stderr lacks 'protosim: error:':\n%s", r->cmd, r->err);
    for (size_t i = 0; needles && needles[i]; i++)
        ck_assert_msg(strstr(r->err, needles[i]) != NULL, "`%s`: stderr lacks \"%s\":\n%s", r->cmd,
                      needles[i], r->err);
}

cJSON *parse_json_file(const char *path)
{
    char *text = slurp(path, NULL);
    ck_assert_msg(text != NULL, "%s was not written", path);
    cJSON *j = cJSON_Parse(text);
    ck_assert_msg(j != NULL, "%s does not parse as JSON near: %.60s", path,
                  cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
    free(text);
    return j;
}

double num_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(cJSON_IsNumber(v), "JSON field '%s' missing or not a number", key);
    return v->valuedouble;
}

const cJSON *obj_field(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    ck_assert_msg(cJSON_IsObject(v), "JSON field '%s' missing or not an object", key);
    return v;
}

void assert_rel_close(double got, double want, double rel, const char *what)
{
    double tol = rel * fmax(fabs(want), 1e-300);
    ck_assert_msg(fabs(got - want) <= tol, "%s: got %.17g, expected %.17g (rel tol %g)", what, got,
                  want, rel);
}

/* Replaces the numeric value after every "key": in a JSON text with a single 'X', so two texts
 * can be compared byte for byte except for that field (whatever its number of digits). */
void mask_field(char *text, const char *key)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    for (char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) {
        char *q = p + strlen(pat);
        while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r')
            q++;
        if (*q != ':')
            continue;
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        char *end = q;
        while (*end && strchr("0123456789+-.eE", *end))
            end++;
        if (end > q) {
            *q = 'X';
            memmove(q + 1, end, strlen(end) + 1);
        }
    }
}
