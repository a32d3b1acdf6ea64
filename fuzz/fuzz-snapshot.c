/*
 * The snapshot reader (snapshot_from_json), what `check --from` and the simulator read. Beyond
 * "no crash": a snapshot that loads writes back to JSON that loads again into the same JSON
 * (the codec is its own inverse), and the whole analysis of `check --from` runs on it.
 */
#include "fuzz.h"
#include "snapshot/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL, *out, *again;
    struct snapshot *s, *s2;

    s = snapshot_from_json(text, size, "fuzz", &cause);
    if (s == NULL) {
        FUZZ_ASSERT(cause != NULL && strncmp(cause, "fuzz:", 5) == 0, "an error must say where: %s",
                    cause ? cause : "(none)");
        free(cause);
        free(text);
        return 0;
    }
    out = snapshot_to_json(s);
    s2 = snapshot_from_json(out, strlen(out), "round-trip", &cause);
    FUZZ_ASSERT(s2 != NULL, "what the writer wrote does not load: %s", cause);
    again = snapshot_to_json(s2);
    FUZZ_ASSERT(strcmp(out, again) == 0, "writing what was read changed it:\n%s\n---\n%s", out,
                again);
    free(again);
    snapshot_free(s2);
    free(out);

    fuzz_check_from(s);
    snapshot_free(s);
    free(text);
    return 0;
}
