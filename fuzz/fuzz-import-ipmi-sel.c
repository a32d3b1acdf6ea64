/* The ipmi-sel importer (src/import, docs/import.md) through check --from --format ipmi-sel:
 * fuzz_import.
 */
#include "fuzz.h"

void fuzz_import(const char *format, const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_import("ipmi-sel", data, size);
    return 0;
}
