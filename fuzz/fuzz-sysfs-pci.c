/*
 * The PCI attribute parsers (sysfs-pci.c): link speed and width, the three AER counter files,
 * PCI addresses, and the chain of bridges in a device's sysfs path. What they accept is in range:
 * a speed is a positive finite number, a width 1-32 lanes, a chain never longer than asked and
 * made only of addresses.
 */
#include "collect/sysfs-pci.h"
#include "fuzz.h"

#include <math.h>

static const char *const aer_totals[] = { "TOTAL_ERR_COR", "TOTAL_ERR_NONFATAL",
                                          "TOTAL_ERR_FATAL" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL;
    char chain[8][SYSFS_PCI_ADDR_SIZE];
    double gts;
    uint32_t lanes;
    uint64_t total;
    int n;

    if (sysfs_pci_parse_speed(text, &gts) == SYSFS_SPEED_OK) {
        FUZZ_ASSERT(isfinite(gts) && gts > 0, "speed %g GT/s", gts);
        (void)sysfs_pci_speed_gen(gts);
    }
    if (sysfs_pci_parse_width(text, &lanes))
        FUZZ_ASSERT(lanes >= 1 && lanes <= 32, "%u lanes", lanes);
    for (size_t i = 0; i < sizeof(aer_totals) / sizeof(aer_totals[0]); i++) {
        if (sysfs_pci_parse_aer(text, aer_totals[i], &total, &cause) != 0)
            FUZZ_ASSERT(cause != NULL, "AER parse failed without a reason");
        free(cause);
        cause = NULL;
    }
    (void)sysfs_pci_is_address(text);
    n = sysfs_pci_path_chain(text, chain, 8);
    FUZZ_ASSERT(n >= -1 && n <= 8, "chain of %d", n);
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(memchr(chain[i], '\0', SYSFS_PCI_ADDR_SIZE) != NULL, "address not terminated");
        FUZZ_ASSERT(sysfs_pci_is_address(chain[i]), "'%s' in the chain is not an address",
                    chain[i]);
    }
    free(text);
    return 0;
}
