/* Fuzz targets. Built with -DBATCHFIT_LIBFUZZER each file is a libFuzzer
 * target (make fuzz); otherwise its entry point has its own name and the
 * test runner replays the corpus through it (make test). */
#ifndef BATCHFIT_FUZZ_H
#define BATCHFIT_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#ifdef BATCHFIT_LIBFUZZER
#define FUZZ_ENTRY(name) LLVMFuzzerTestOneInput
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#else
#define FUZZ_ENTRY(name) name
#endif

int fuzz_parse(const uint8_t *data, size_t size);
int fuzz_template(const uint8_t *data, size_t size);
int fuzz_json(const uint8_t *data, size_t size);
int fuzz_sim_spec(const uint8_t *data, size_t size);
int fuzz_cache(const uint8_t *data, size_t size);
int fuzz_result(const uint8_t *data, size_t size);
int fuzz_search(const uint8_t *data, size_t size);

#endif
