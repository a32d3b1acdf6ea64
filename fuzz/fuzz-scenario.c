/*
 * The simulator's scenario reader (sim_scenario_parse, sim/scenario.c), linked in statically.
 * Its promise is that a scenario it accepts never makes a later call meet a malformed value, so
 * after a successful parse every GPU field and every process field is evaluated on the timeline
 * at a few times (before, inside and long after any window), as the library's calls would
 * (the GPUs that have a handle: no call reaches the others).
 */
#include "fuzz.h"
#include "sim.h"
#include "snapshot/snapshot.h"

#include <math.h>

static const double times_s[] = { 0, 0.5, 7, 86400, 1e9 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL;
    struct sim_scenario *s = sim_scenario_parse(text, size, "fuzz", &cause);

    if (s == NULL) {
        FUZZ_ASSERT(cause != NULL && strncmp(cause, "fuzz", 4) == 0, "an error must say where: %s",
                    cause ? cause : "(none)");
        free(cause);
        free(text);
        return 0;
    }
    for (size_t t = 0; t < sizeof(times_s) / sizeof(times_s[0]); t++) {
        for (uint32_t gi = 0; gi < s->n_gpus; gi++) {
            const struct gpu *g = &s->gpus[gi].g;
            uint64_t v;

            if (g->handle_rc != 0) /* no handle: no call ever reads its values */
                continue;
            for (int slot = 0; slot < GPU_S__COUNT; slot++)
                (void)sim_gpu_value(s, gi, (enum gpu_slot)slot, times_s[t], &v);
            (void)sim_mig_count(s, gi, times_s[t]);
            for (size_t pi = 0; pi < g->n_procs; pi++) {
                (void)sim_proc_present(s, gi, pi, times_s[t]);
                for (size_t f = 0; f < gpu_proc_table.n_fields; f++)
                    (void)sim_proc_value(s, gi, pi, &gpu_proc_table.fields[f], times_s[t], &v);
            }
        }
    }
    sim_scenario_free(s);
    free(text);
    return 0;
}
