/*
 * The Fabric Manager parsers (collect/fabric-parse.c): dpkg's status database, Debian versions,
 * the Fabric Manager log, and the NVSwitch driver's information file and device entry names.
 * What comes out is bounded and consistent: a found package has a name of the family and a
 * version, a log's kept lines are its last errors and never more than it counted, a version read
 * from a start line is digits and dots, a BIOS version is five groups of lower-case hex digits
 * and nothing else, and an entry matches a switch only by its exact address.
 */
#include "collect/fabric-parse.h"
#include "fuzz.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    struct fabric_log_scan scan;
    char *pkg, *ver, *up;

    if (fabric_parse_dpkg(text, &pkg, &ver) == 1) {
        FUZZ_ASSERT(pkg != NULL && ver != NULL, "found without a name or a version");
        FUZZ_ASSERT(strncmp(pkg, "nvidia-fabricmanager", 20) == 0, "package %s", pkg);
        FUZZ_ASSERT(*ver != '\0' && strchr(ver, '\n') == NULL, "version spans lines");
        up = fabric_upstream_version(ver);
        FUZZ_ASSERT(strlen(up) <= strlen(ver), "upstream version longer than the version");
        free(up);
        free(pkg);
        free(ver);
    } else {
        FUZZ_ASSERT(pkg == NULL && ver == NULL, "not found, yet something returned");
    }
    up = fabric_upstream_version(text);
    FUZZ_ASSERT(strlen(up) <= strlen(text), "upstream version longer than the input");
    free(up);

    fabric_parse_log(text, &scan);
    FUZZ_ASSERT(scan.n_lines <= 5 && scan.n_lines <= scan.errors, "%zu lines kept, %u counted",
                scan.n_lines, (unsigned)scan.errors);
    for (size_t i = 0; i < scan.n_lines; i++)
        FUZZ_ASSERT(strlen(scan.lines[i]) <= 300 && strchr(scan.lines[i], '\n') == NULL,
                    "kept line too long or spans lines");
    if (scan.version != NULL) {
        FUZZ_ASSERT(scan.started, "a version without a start line");
        FUZZ_ASSERT(strspn(scan.version, "0123456789.") == strlen(scan.version), "version %s",
                    scan.version);
    }
    fabric_log_scan_free(&scan);
    (void)fabric_is_fm_comm(text);

    {
        char bios[FABRIC_BIOS_VERSION_SIZE];
        enum fabric_nvswitch_info r = fabric_parse_nvswitch_info(text, bios);
        size_t dots = 0;

        if (r == FABRIC_NVSW_INFO_VERSION) {
            FUZZ_ASSERT(strlen(bios) >= 14 && strlen(bios) < FABRIC_BIOS_VERSION_SIZE,
                        "BIOS version of %zu bytes", strlen(bios));
            FUZZ_ASSERT(strspn(bios, "0123456789abcdef.") == strlen(bios), "BIOS version %s", bios);
            for (const char *c = bios; *c; c++)
                dots += *c == '.';
            FUZZ_ASSERT(dots == 4, "BIOS version %s", bios);
            FUZZ_ASSERT(strstr(text, bios) != NULL, "a BIOS version the text does not hold");
        } else {
            FUZZ_ASSERT(r == FABRIC_NVSW_INFO_NA || r == FABRIC_NVSW_INFO_MALFORMED, "result %d",
                        (int)r);
            FUZZ_ASSERT(bios[0] == '\0', "a BIOS version without a version result");
        }
    }
    {
        static const char *const bus[] = { "0000:c5:00.0", "0000:c6:00.0" };
        int k = fabric_nvswitch_entry(text, bus, 2);

        FUZZ_ASSERT(k == FABRIC_NVSW_ENTRY_STRAY || k == FABRIC_NVSW_ENTRY_BAD ||
                        (k >= 0 && k < 2 && strcmp(text, bus[k]) == 0),
                    "entry matched as %d", k);
    }
    free(text);
    return 0;
}
