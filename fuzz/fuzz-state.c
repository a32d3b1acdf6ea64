/*
 * The state file reader (state_parse). A file is either read, within its bounds, and then
 * written back to the same text after a second reading (the format is a fixed point), merged
 * with a realistic snapshot and judged with its acknowledgements; or refused with a note that
 * names the file. Never a crash, never a partial content beside a note.
 */
#include "fuzz.h"
#include "rules/rules.h"
#include "state/state.h"

#ifndef FUZZ_SOURCE_DIR
#define FUZZ_SOURCE_DIR "."
#endif

static struct snapshot *sample_snapshot;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char *cause = NULL;

    (void)argc;
    (void)argv;
    sample_snapshot =
        snapshot_load(FUZZ_SOURCE_DIR "/tests/scenarios/pcie-replays/snapshot.json", &cause);
    if (sample_snapshot == NULL) {
        fprintf(stderr, "fuzz-state: no sample snapshot: %s\n", cause);
        free(cause);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct state_info st = { 0 }, again = { 0 };
    char *text, *back;

    state_parse((const char *)data, size, "fuzz.json", &st);
    if (st.status != STATE_OK) {
        /* unreadable: a newer version's, never replaced */
        FUZZ_ASSERT((st.status == STATE_CORRUPT || st.status == STATE_UNREADABLE) &&
                        st.note != NULL && strncmp(st.note, "state file fuzz.json", 20) == 0,
                    "a refused file needs a note naming it: %s", st.note ? st.note : "(none)");
        FUZZ_ASSERT(st.n_gpus == 0 && st.n_acks == 0, "content kept beside a note");
        state_info_free(&st);
        return 0;
    }
    FUZZ_ASSERT(st.n_gpus <= STATE_MAX_GPUS && st.n_acks <= STATE_MAX_ACKS, "bounds");
    for (size_t i = 0; i < st.n_gpus; i++)
        FUZZ_ASSERT(st.gpus[i].n_events <= STATE_MAX_EVENTS, "events bound");
    text = state_format(&st);
    state_parse(text, strlen(text), "again.json", &again);
    FUZZ_ASSERT(again.status == STATE_OK, "its own output refused: %s", again.note);
    back = state_format(&again);
    FUZZ_ASSERT(strcmp(text, back) == 0, "not a fixed point");
    free(back);
    free(text);
    state_info_free(&again);
    if (sample_snapshot != NULL) {
        struct findings f = { 0 };
        struct state_info keep = sample_snapshot->state;
        struct rules_config rc = { 0 };

        thresholds_init(&rc.th);
        state_merge(&st, sample_snapshot, 1800000000000);
        FUZZ_ASSERT(st.n_gpus <= STATE_MAX_GPUS, "bounds after a merge");
        sample_snapshot->state = st;
        sample_snapshot->state.status = STATE_OK;
        rules_run(sample_snapshot, NULL, &rc, &f);
        FUZZ_ASSERT(rules_exit_status(sample_snapshot, &f) <= 3, "exit status");
        findings_free(&f);
        sample_snapshot->state = keep;
    }
    state_info_free(&st);
    return 0;
}
