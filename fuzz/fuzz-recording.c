/*
 * The recording reader (recording_load): JSON Lines of a context snapshot and samples, what
 * `watch --record` writes and `check --from` reads. Its only public entry takes a path, so the
 * input is written to a memory file and read through /proc/self/fd. What loads goes through
 * the analysis of `check --from`, trends included.
 */
#include "fuzz.h"
#include "snapshot/snapshot.h"
#include "watch/recording.h"

#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct snapshot *s;
    char *cause = NULL;

    if (memfd < 0) {
        memfd = memfd_create("fuzz-recording", MFD_CLOEXEC);
        FUZZ_ASSERT(memfd >= 0, "memfd_create");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", memfd);
    }
    FUZZ_ASSERT(ftruncate(memfd, 0) == 0, "ftruncate");
    FUZZ_ASSERT(size == 0 || pwrite(memfd, data, size, 0) == (ssize_t)size, "pwrite");
    s = recording_load(path, &cause);
    if (s == NULL) {
        FUZZ_ASSERT(cause != NULL && strstr(cause, path) != NULL, "an error must say where: %s",
                    cause ? cause : "(none)");
        free(cause);
        return 0;
    }
    fuzz_check_from(s);
    snapshot_free(s);
    return 0;
}
