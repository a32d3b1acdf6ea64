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
#include <unistd.h>

#define BASELINE_FILE "bench-baseline.json"
#define LAST_FILE     "bench-last.json"

char *bench_baseline_path(const char *state_dir)
{
    return xasprintf("%s/%s", state_dir, BASELINE_FILE);
}

/* Writes s as name in the state directory (made when missing, refused when not trusted:
 * state_dir_open), atomically with mode 0600. */
static int save_at(const struct snapshot *s, const char *state_dir, const char *name, char **cause)
{
    char *path, *json, *text;
    int dfd, rc;

    dfd = state_dir_open(state_dir, true, cause);
    if (dfd < 0)
        return -1;
    /* No lock: a temporary file of another bench writing now is younger than this. */
    file_remove_stale_temps_at(dfd, name, STATE_TEMP_STALE_MS);
    path = xasprintf("%s/%s", state_dir, name);
    json = snapshot_to_json(s);
    text = xasprintf("%s\n", json);
    free(json);
    rc = file_write_atomic_at(dfd, name, path, text, strlen(text), 0600, cause);
    free(text);
    free(path);
    close(dfd);
    return rc;
}

/* Reads name in the state directory as a snapshot: 1 with *out, 0 when there is no such file
 * (or no directory), -1 with *cause. Never through a link, only the user's or root's regular
 * file (file_slurp_own_text_at). */
static int load_at(const char *state_dir, const char *name, struct snapshot **out, char **cause)
{
    char *path, *text = NULL;
    ssize_t n;
    int dfd;

    *out = NULL;
    dfd = state_dir_open(state_dir, false, cause);
    if (dfd < 0) {
        if (errno != ENOENT)
            return -1;
        free(*cause);
        *cause = NULL;
        return 0;
    }
    n = file_slurp_own_text_at(dfd, name, SNAPSHOT_MAX_BYTES, &text);
    close(dfd);
    if (n == -ENOENT)
        return 0;
    path = xasprintf("%s/%s", state_dir, name);
    if (n >= 0)
        *out = snapshot_from_json(text, (size_t)n, path, cause);
    else if (n == -EILSEQ)
        *cause = xasprintf("%s: a NUL byte at offset %zu: not a snapshot (it is text)", path,
                           strlen(text));
    else if (n == -EFBIG)
        *cause =
            xasprintf("%s: larger than " SNAPSHOT_MAX_TEXT ", the most a snapshot may hold", path);
    else {
        char *why = file_open_regular_why((int)n);

        *cause = xasprintf("%s: %s", path, why);
        free(why);
    }
    free(text);
    free(path);
    return *out != NULL ? 1 : -1;
}

int bench_baseline_save(const struct snapshot *s, const char *state_dir, char **cause)
{
    return save_at(s, state_dir, BASELINE_FILE, cause);
}

/* Fills the baseline_* figures of b from base, read from path; frees base. */
static int compare_with(struct bench_info *b, struct snapshot *base, const char *path, char **cause)
{
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

int bench_baseline_compare(struct bench_info *b, const char *path, char **cause)
{
    struct snapshot *base = snapshot_load(path, cause);

    return base != NULL ? compare_with(b, base, path, cause) : -1;
}

int bench_baseline_compare_saved(struct bench_info *b, const char *state_dir, char **cause)
{
    struct snapshot *base;
    char *path;
    int rc = load_at(state_dir, BASELINE_FILE, &base, cause);

    if (rc <= 0)
        return rc;
    path = bench_baseline_path(state_dir);
    rc = compare_with(b, base, path, cause) == 0 ? 1 : -1;
    free(path);
    return rc;
}

char *bench_last_path(const char *state_dir)
{
    return xasprintf("%s/%s", state_dir, LAST_FILE);
}

int bench_last_save(const struct snapshot *s, const char *state_dir, char **cause)
{
    if (s->bench.state != BENCH_OK) {
        char *path = bench_last_path(state_dir);

        *cause = xasprintf("%s: only a bench that ran is kept (state %s)", path,
                           bench_state_names[s->bench.state]);
        free(path);
        return -1;
    }
    return save_at(s, state_dir, LAST_FILE, cause);
}

int bench_last_load(const char *state_dir, struct snapshot **out, char **cause)
{
    struct snapshot *s;
    int rc = load_at(state_dir, LAST_FILE, &s, cause);

    *out = NULL;
    if (rc <= 0)
        return rc;
    if (s->bench.state != BENCH_OK) {
        char *path = bench_last_path(state_dir);

        *cause = xasprintf("%s: not a bench result that ran (bench state %s)", path,
                           bench_state_names[s->bench.state]);
        free(path);
        snapshot_free(s);
        return -1;
    }
    *out = s;
    return 1;
}

int64_t bench_completed_ms(const struct snapshot *s)
{
    double elapsed = s->bench.elapsed_s > 0 && s->bench.elapsed_s < 86400 ? s->bench.elapsed_s : 0;

    return s->time_ms + (int64_t)(elapsed * 1000.0 + 0.5);
}
