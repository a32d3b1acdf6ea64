/* The nvidia-smi importer (src/import, docs/import.md) through check --from --format nvidia-smi:
 * fuzz_import. */
#include "fuzz.h"

void fuzz_import(const char *format, const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_import("nvidia-smi", data, size);
    return 0;
}
