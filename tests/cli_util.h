/* cli_util.h: helpers for tests that run the protosim binary (PROTOSIM_BIN) in a temporary
 * directory and read what it wrote: exit status, stdout, stderr, JSON files. */
#ifndef PROTOSIM_TESTS_CLI_UTIL_H
#define PROTOSIM_TESTS_CLI_UTIL_H

#include <stddef.h>

#include <cjson/cJSON.h>

typedef struct {
    int status;       /* raw waitpid status */
    char *out;        /* captured stdout */
    char *err;        /* captured stderr */
    int json_written; /* run_plan: 1 if its --json file exists afterwards, else 0 */
    char cmd[2048];   /* the command line, for messages */
} run_result;

const char *protosim_bin(void);
char *src_path(const char *rel);
char *tmp_path(const char *dir, const char *name);
/* text written to dir/name; its path (the caller frees it). */
char *write_tmp_file(const char *dir, const char *name, const char *text);
char *make_tmpdir(void);
void remove_tmpdir(char *dir);
char *slurp(const char *path, size_t *len);
void run_free(run_result *r);
run_result run_protosim(const char *tmpdir, const char *const *args);
/* Another program: argv[0] (a path or a name on PATH), then its arguments, NULL-ended. */
run_result run_command(const char *tmpdir, const char *const *argv);
void expect_exit(const run_result *r, int code);
/* run_protosim, expecting exit 0; the output is not kept. */
void run_ok(const char *tmpdir, const char *const *args);
long location_line(const char *text, const char *name);
void expect_bad_input(const run_result *r, const char *const *needles);
cJSON *parse_json_file(const char *path);
double num_field(const cJSON *obj, const char *key);
const cJSON *obj_field(const cJSON *obj, const char *key);
void assert_rel_close(double got, double want, double rel, const char *what);
void mask_field(char *text, const char *key);

#endif
