/* fuzz_input.c: the harnesses' input file, one per process, rewritten for every input (the
 * loaders take paths; a file is how the command hands them their input too). */
#include "fuzz_input.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char input_path[256];

static void remove_input(void)
{
    unlink(input_path);
}

/* Output the loaders print (merge's ranked table) is not what is checked: send it away
 * (the replay tests report on stderr). */
static void quiet_stdout(void)
{
    if (!freopen("/dev/null", "w", stdout))
        abort();
}

const char *fuzz_input_file(const char *suffix, const uint8_t *data, size_t size)
{
    if (!input_path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(input_path, sizeof input_path, "%s/protosim-fuzz-%ld%s", dir ? dir : "/tmp",
                 (long)getpid(), suffix);
        atexit(remove_input);
        quiet_stdout();
    }
    FILE *f = fopen(input_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f))
        abort();
    return input_path;
}
