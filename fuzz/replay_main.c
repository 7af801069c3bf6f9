/* replay_main.c: a harness without libFuzzer, for `meson test`: every file of the directories
 * (recursively) or the files on the command line goes through LLVMFuzzerTestOneInput once. A
 * missing directory is an empty one; a crash is the test's failure. */
#include "fuzz_input.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open\n", path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf)
        return 1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    fprintf(stderr, "replayed %s (%zu bytes)\n", path, n);
    return 0;
}

static int replay_path(const char *path);

static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, "README"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        rc |= replay_path(path);
    }
    closedir(d);
    return rc;
}

/* A file, or a directory's files (recursively, as libFuzzer reads a corpus). */
static int replay_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    return S_ISDIR(st.st_mode) ? replay_dir(path) : S_ISREG(st.st_mode) ? replay_file(path) : 0;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++)
        rc |= replay_path(argv[i]);
    return rc;
}
