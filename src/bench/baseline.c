/*
 * The node's baseline: a snapshot with a bench section, kept in the state directory
 * (bench_state_dir). --save writes it; --compare FILE (or the saved one) fills the baseline_*
 * figures that bench.regression judges. The state directory is chosen as issue 18's will be:
 * when src/state/ lands on main, this function should give way to it.
 */
#include "bench/bench.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *bench_state_dir(void)
{
    const char *env = getenv("GPUDOCTOR_STATE_DIR"), *xdg, *home;

    if (env != NULL && *env != '\0')
        return xstrdup(env);
    if (geteuid() == 0)
        return xstrdup("/var/lib/gpudoctor");
    xdg = getenv("XDG_STATE_HOME");
    if (xdg != NULL && xdg[0] == '/')
        return xasprintf("%s/gpudoctor", xdg);
    home = getenv("HOME");
    return xasprintf("%s/.local/state/gpudoctor", home != NULL && *home ? home : "/tmp");
}

char *bench_baseline_path(void)
{
    char *dir = bench_state_dir(), *p = xasprintf("%s/bench-baseline.json", dir);

    free(dir);
    return p;
}

/* mkdir -p with mode 0700 for what it creates. */
static int make_dirs(const char *path)
{
    char *p = xstrdup(path);
    int r = 0;

    for (char *c = p + 1; *c && r == 0; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST)
            r = -errno;
        *c = '/';
    }
    if (r == 0 && mkdir(p, 0700) != 0 && errno != EEXIST)
        r = -errno;
    free(p);
    return r;
}

int bench_baseline_save(const struct snapshot *s, const char *path, char **cause)
{
    char *dir = xstrdup(path), *slash = strrchr(dir, '/'), *text, *tmp;
    FILE *f;
    int r;

    if (slash != NULL && slash != dir) {
        *slash = '\0';
        r = make_dirs(dir);
        if (r != 0) {
            *cause = xasprintf("cannot create %s: %s", dir, strerror(-r));
            free(dir);
            return -1;
        }
    }
    free(dir);
    text = snapshot_to_json(s);
    tmp = xasprintf("%s.tmp", path);
    f = fopen(tmp, "wx");
    if (f == NULL && errno == EEXIST && unlink(tmp) == 0)
        f = fopen(tmp, "wx");
    if (f == NULL) {
        *cause = xasprintf("cannot write %s: %s", tmp, strerror(errno));
        free(text);
        free(tmp);
        return -1;
    }
    r = fputs(text, f) < 0 || fputc('\n', f) < 0;
    r |= fclose(f) != 0;
    if (r == 0 && rename(tmp, path) != 0)
        r = 1;
    if (r != 0) {
        *cause = xasprintf("cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
    }
    free(text);
    free(tmp);
    return r == 0 ? 0 : -1;
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
