/*
 * The Fabric Manager parsers (collect/fabric-parse.c): dpkg's status database, Debian versions
 * and the Fabric Manager log. What comes out is bounded and consistent: a found package has a
 * name of the family and a version, a log's kept lines are its last errors and never more than
 * it counted, a version read from a start line is digits and dots.
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
    free(text);
    return 0;
}
