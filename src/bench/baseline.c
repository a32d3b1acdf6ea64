/*
 * The node's baseline: a snapshot with a bench section, kept as bench-baseline.json in the state
 * directory of src/state/. --save writes it; --compare FILE (or the saved one) fills the
 * baseline_* figures that bench.regression judges. Beside it, bench-last.json: the last bench that
 * ran, whatever it found, which `serve` exports and `slurm-check` judges while it is recent.
 */
#include "bench/bench.h"
#include "state/state.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

char *bench_baseline_path(const char *state_dir)
{
    return xasprintf("%s/bench-baseline.json", state_dir);
}

int bench_baseline_save(const struct snapshot *s, const char *path, char **cause)
{
    char *dir = xstrdup(path), *slash = strrchr(dir, '/'), *json, *text;
    int rc = 0;

    if (slash != NULL && slash != dir) {
        *slash = '\0';
        rc = state_dir_make(dir, cause);
    }
    free(dir);
    if (rc != 0)
        return -1;
    json = snapshot_to_json(s);
    text = xasprintf("%s\n", json);
    free(json);
    rc = file_write_atomic(path, text, strlen(text), 0600, cause);
    free(text);
    return rc;
}

int bench_baseline_compare(struct bench_info *b, const char *path, char **cause)
{
    struct snapshot *base = snapshot_load(path, cause);

    if (base == NULL)
        return -1;
    if (base->bench.state == BENCH_NOT_RUN) {
        *cause = xasprintf("%s: not a bench result (no \"bench\" section)", path);
        snapshot_free(base);
        return -1;
    }
    for (size_t i = 0; i < b->n_gpus; i++) {
        struct bench_gpu *g = &b->gpus[i];

        for (size_t k = 0; k < base->bench.n_gpus; k++) {
            const struct bench_gpu *o = &base->bench.gpus[k];

            if (!bench_same_pci(o->pci_bus_id, g->pci_bus_id))
                continue;
            if (bench_gpu_valid(o, BG_H2D_PINNED)) {
                g->base_h2d_bytes_per_s = o->h2d_pinned_bytes_per_s;
                bench_gpu_set(g, BG_BASE_H2D);
            }
            if (bench_gpu_valid(o, BG_TRIAD)) {
                g->base_triad_bytes_per_s = o->triad_bytes_per_s;
                bench_gpu_set(g, BG_BASE_TRIAD);
            }
            if (bench_gpu_valid(o, BG_FMA)) {
                g->base_fma_flops = o->fma_flops;
                bench_gpu_set(g, BG_BASE_FMA);
            }
        }
    }
    free(b->baseline);
    b->baseline = xstrdup(path);
    snapshot_free(base);
    return 0;
}

char *bench_last_path(const char *state_dir)
{
    return xasprintf("%s/bench-last.json", state_dir);
}

int bench_last_save(const struct snapshot *s, const char *state_dir, char **cause)
{
    char *path = bench_last_path(state_dir);
    int rc;

    if (s->bench.state != BENCH_OK) {
        *cause = xasprintf("%s: only a bench that ran is kept (state %s)", path,
                           bench_state_names[s->bench.state]);
        free(path);
        return -1;
    }
    rc = bench_baseline_save(s, path, cause);
    free(path);
    return rc;
}

int bench_last_load(const char *state_dir, struct snapshot **out, char **cause)
{
    char *path = bench_last_path(state_dir);
    struct snapshot *s;
    struct stat st;

    *out = NULL;
    if (stat(path, &st) != 0 && errno == ENOENT) {
        free(path);
        return 0;
    }
    s = snapshot_load(path, cause);
    if (s != NULL && s->bench.state != BENCH_OK) {
        *cause = xasprintf("%s: not a bench result that ran (bench state %s)", path,
                           bench_state_names[s->bench.state]);
        snapshot_free(s);
        s = NULL;
    }
    free(path);
    if (s == NULL)
        return -1;
    *out = s;
    return 1;
}

int64_t bench_completed_ms(const struct snapshot *s)
{
    double elapsed = s->bench.elapsed_s > 0 && s->bench.elapsed_s < 86400 ? s->bench.elapsed_s : 0;

    return s->time_ms + (int64_t)(elapsed * 1000.0 + 0.5);
}
