/*
 * The errors people give with --error: the catalogue's matcher (data/cuda-errors.tsv) and the
 * reader of PyTorch's "CUDA out of memory" figures (src/rules/oom-parse.c). A match is a row with
 * a name and a kind; every figure read is unknown (-1) or a finite size, every process named has
 * a positive pid, and the GPU is -1 or an index.
 */
#include "data/cudaerr.h"
#include "fuzz.h"
#include "rules/oom-parse.h"

#include <math.h>

static void size_ok(const char *what, double v)
{
    FUZZ_ASSERT(v == -1 || (v >= 0 && isfinite(v) && v <= 1e15 * 1024.0 * 1024 * 1024 * 1024),
                "%s: %g", what, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size);
    const struct cudaerr_info *e = cudaerr_match(text);
    struct oom_text o;

    if (e != NULL) {
        FUZZ_ASSERT(e->name != NULL && e->api != NULL, "a row without a name or api");
        FUZZ_ASSERT(e->kind >= 0 && e->kind < CUDAERR__COUNT, "kind %d", (int)e->kind);
    }
    (void)oom_parse(text, &o);
    FUZZ_ASSERT(o.gpu >= -1 && o.gpu <= 4096, "gpu %d", (int)o.gpu);
    size_ok("tried", o.tried);
    size_ok("capacity", o.capacity);
    size_ok("free", o.free);
    size_ok("this process", o.this_process);
    size_ok("allocated", o.allocated);
    size_ok("reserved but unallocated", o.reserved_unallocated);
    size_ok("reserved in total", o.reserved_total);
    FUZZ_ASSERT(o.n_pids <= OOM_MAX_PROCS, "%zu processes", o.n_pids);
    for (size_t i = 0; i < o.n_pids; i++) {
        FUZZ_ASSERT(o.pids[i] > 0, "pid %d", (int)o.pids[i]);
        size_ok("a process's memory", o.pid_bytes[i]);
    }
    free(text);
    return 0;
}
