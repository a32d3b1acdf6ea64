/*
 * What the NVML helper process sends its parent (nvml-wire.c): request lines and answer lines of
 * snapshot JSON, and the line buffer that frames them. A helper runs a vendor library that may be
 * broken, so its answers are untrusted input. An answer that decodes writes back to the same
 * JSON (encode is decode's inverse), and the line buffer hands out exactly the lines it was given.
 */
#include "collect/nvml-wire.h"
#include "fuzz.h"
#include "snapshot/snapshot.h"

static void decode(const uint8_t *data, size_t size, bool want_sys)
{
    struct nvml_system sys;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *cause = NULL, *line = fuzz_cstr(data, size);

    memset(&sys, 0, sizeof(sys));
    if (nvml_wire_decode(line, size, want_sys, &sys, &gpus, &n, &cause) == 0) {
        char *again = nvml_wire_encode(want_sys ? &sys : NULL, gpus, n);
        struct nvml_system sys2;
        struct gpu *gpus2 = NULL;
        size_t n2 = 0;
        char *third;

        FUZZ_ASSERT(again != NULL && again[strlen(again) - 1] == '\n', "encoding not one line");
        memset(&sys2, 0, sizeof(sys2));
        FUZZ_ASSERT(
            nvml_wire_decode(again, strlen(again) - 1, want_sys, &sys2, &gpus2, &n2, &cause) == 0,
            "the encoder's own line does not decode: %s", cause);
        FUZZ_ASSERT(n2 == n, "%zu GPUs became %zu", n, n2);
        third = nvml_wire_encode(want_sys ? &sys2 : NULL, gpus2, n2);
        FUZZ_ASSERT(strcmp(again, third) == 0, "encoding is not stable:\n%s%s", again, third);
        free(third);
        free(again);
        for (size_t i = 0; i < n2; i++)
            gpu_free(&gpus2[i]);
        free(gpus2);
        nvml_system_free(&sys2);
    } else {
        FUZZ_ASSERT(cause != NULL, "decode failed without a reason");
        free(cause);
    }
    for (size_t i = 0; i < n; i++)
        gpu_free(&gpus[i]);
    free(gpus);
    nvml_system_free(&sys);
    free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct nvml_linebuf b;
    size_t fed = 0, lines_bytes = 0;
    char *line;
    ssize_t len;

    decode(data, size, true);
    decode(data, size, false);

    line = fuzz_cstr(data, size > NVML_WIRE_MAX_REQUEST ? NVML_WIRE_MAX_REQUEST : size);
    (void)nvml_request_parse(line);
    free(line);

    /* the stream in uneven pieces, as reads return it; lines out as they complete */
    nvml_linebuf_init(&b, 256);
    while (fed < size) {
        size_t piece = 1 + (fed * 7 + 3) % 97;

        if (piece > size - fed)
            piece = size - fed;
        if (nvml_linebuf_append(&b, (const char *)data + fed, piece) != 0)
            break; /* a line longer than the bound: the session ends there */
        fed += piece;
        while ((len = nvml_linebuf_line(&b)) >= 0) {
            FUZZ_ASSERT(memchr(b.data, '\n', (size_t)len) == NULL, "a line holds a newline");
            lines_bytes += (size_t)len + 1;
            nvml_linebuf_consume(&b, (size_t)len + 1);
        }
    }
    FUZZ_ASSERT(lines_bytes + b.len == fed, "%zu bytes in lines + %zu held != %zu fed", lines_bytes,
                b.len, fed);
    nvml_linebuf_free(&b);
    return 0;
}
