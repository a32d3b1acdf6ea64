/* The lspci importer (src/import, docs/import.md) through check --from --format lspci: fuzz_import.
 */
#include "fuzz.h"

void fuzz_import(const char *format, const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_import("lspci", data, size);
    return 0;
}
