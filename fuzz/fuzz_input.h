/* fuzz_input.h: what every libFuzzer harness shares: the input written to a file the loaders
 * read exactly as the command does, and stdout sent to /dev/null. */
#ifndef PROTOSIM_FUZZ_INPUT_H
#define PROTOSIM_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/* The path of this process's input file (suffix: ".yaml", ".json"), holding data[0..size). */
const char *fuzz_input_file(const char *suffix, const uint8_t *data, size_t size);

/* A trace written to this process's input file (suffix ".json": Kineto, ".et": Chakra; the
 * reader tells them apart by content), loaded as `replay` loads one, and its execution graph on
 * 64 GPUs built and finalized. Errors are expected; crashes and leaks are what is looked for. */
void fuzz_trace_job(const char *suffix, const uint8_t *data, size_t size);
/* The same for a trace and (et, or NULL) its execution trace already on disk. */
void fuzz_replay_job(const char *trace, const char *et);

/* libFuzzer's entry point, defined by each harness. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
