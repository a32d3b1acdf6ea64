/*
 * fuzz_import: what the import harnesses (fuzz-import-*.c, one per importer) share. The input is
 * handed to import_load as a file (a memfd, so gzip, UTF-16 and the bounded readers run too) with
 * the harness's --format, as `check --from FILE --format NAME` would. Either it is refused with a
 * message that names the file (and is printable: it is shown on a terminal), or the snapshot it
 * gives goes through everything check --from does (fuzz_check_from) and serialises to JSON that
 * reads back. A crash, an unbounded allocation (libFuzzer's -rss_limit_mb) or a hang fails.
 */
#include "fuzz.h"
#include "import/import.h"
#include "snapshot/snapshot.h"

#include <sys/mman.h>
#include <unistd.h>

void fuzz_import(const char *format, const uint8_t *data, size_t size);

void fuzz_import(const char *format, const uint8_t *data, size_t size)
{
    char path[64], *cause = NULL, *json;
    const char *paths[1] = { path };
    struct snapshot *s;
    int fd = memfd_create("fuzz-import", 0);

    FUZZ_ASSERT(fd >= 0, "memfd_create failed");
    FUZZ_ASSERT(size == 0 || write(fd, data, size) == (ssize_t)size, "cannot write the input");
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    s = import_load(paths, 1, format, &cause);
    close(fd);
    if (s == NULL) {
        FUZZ_ASSERT(cause != NULL && cause[0] != '\0', "refused without a message");
        FUZZ_ASSERT(strstr(cause, path) != NULL, "the message does not name the file: %s", cause);
        FUZZ_PRINTABLE("the message", cause);
        free(cause);
        return;
    }
    FUZZ_ASSERT(cause == NULL, "a snapshot and a message: %s", cause);
    fuzz_check_from(s);
    json = snapshot_to_json(s);
    FUZZ_ASSERT(json != NULL, "the imported snapshot does not serialise");
    {
        char *why = NULL;
        struct snapshot *back = snapshot_from_json(json, strlen(json), "imported", &why);

        FUZZ_ASSERT(back != NULL, "the imported snapshot does not read back: %s", why);
        snapshot_free(back);
    }
    free(json);
    snapshot_free(s);
}
