/*
 * The configuration file (config_parse) and --set (config_set, one line at a time). A file that
 * parses leaves every threshold inside its documented range; the thresholds it sets then drive
 * every rule over a realistic snapshot (an extreme but accepted value must not crash a rule).
 */
#include "fuzz.h"
#include "rules/config.h"
#include "rules/rules.h"
#include "snapshot/snapshot.h"

#ifndef FUZZ_SOURCE_DIR
#define FUZZ_SOURCE_DIR "."
#endif

static struct snapshot *sample_snapshot; /* loaded once: the same machine for every input */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char *cause = NULL;

    (void)argc;
    (void)argv;
    sample_snapshot =
        snapshot_load(FUZZ_SOURCE_DIR "/tests/scenarios/pcie-replays/snapshot.json", &cause);
    if (sample_snapshot == NULL) { /* still fuzz the parser */
        fprintf(stderr, "fuzz-config: no sample snapshot: %s\n", cause);
        free(cause);
    }
    return 0;
}

static void check_ranges(const struct config *c)
{
    for (size_t i = 0; i < TH__COUNT; i++) {
        double v = c->rules.th.v[i];

        FUZZ_ASSERT(v >= threshold_defs[i].min && v <= threshold_defs[i].max,
                    "%s = %g outside [%g, %g]", threshold_defs[i].name, v, threshold_defs[i].min,
                    threshold_defs[i].max);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL, *line, *save = NULL;
    struct config c;

    config_init(&c);
    if (config_parse(&c, text, "fuzz.conf", &cause) == 0) {
        check_ranges(&c);
        if (sample_snapshot != NULL) {
            struct findings f = { 0 };

            rules_run(sample_snapshot, NULL, &c.rules, &f);
            FUZZ_ASSERT(rules_exit_status(sample_snapshot, &f) <= 3, "exit status");
            findings_free(&f);
        }
    } else {
        FUZZ_ASSERT(cause != NULL && strncmp(cause, "fuzz.conf:", 10) == 0,
                    "an error must name the file and line: %s", cause ? cause : "(none)");
        free(cause);
    }
    config_free(&c);

    config_init(&c);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        cause = NULL;
        if (config_set(&c, line, &cause) != 0) {
            FUZZ_ASSERT(cause != NULL, "--set failed without a reason");
            free(cause);
        }
    }
    check_ranges(&c);
    config_free(&c);
    free(text);
    return 0;
}
