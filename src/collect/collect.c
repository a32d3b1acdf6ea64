#include "collect/collect.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-session.h"
#include "collect/procfs.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The order matters: processes join NVML's lists, the stack reads what processes mapped. */
static const struct collector_ops *const collectors[] = {
    &collector_nvml, &collector_procs, &collector_host, &collector_pcie,   &collector_driver,
    &collector_klog, &collector_stack, &collector_ib,   &collector_fabric,
};

#define MIN_INTERVAL_MS    100
#define SAMPLES_PER_WINDOW 8

int64_t collect_time_left(const struct collect_ctx *ctx)
{
    int64_t left = ctx->deadline_mono_ms - time_mono_ms();

    return left > 0 ? left : 0;
}

static bool wanted(const struct collect_opts *o, enum collector_id id)
{
    return o->only == 0 || (o->only & (1u << id));
}

static void progress(const struct collect_ctx *ctx, int64_t now)
{
    static const char spin[] = "|/-\\";
    int64_t done = now - ctx->start_mono_ms;

    if (!ctx->opts->progress)
        return;
    fprintf(stderr, "\r%c sampling %.1f of %.1f s ", spin[(done / 100) % 4], (double)done / 1000.0,
            (double)ctx->opts->window_ms / 1000.0);
}

static void run_start(struct collect_ctx *ctx, struct snapshot *s, void **state)
{
    for (size_t i = 0; i < ARRAY_SIZE(collectors); i++) {
        const struct collector_ops *c = collectors[i];
        int64_t t0 = time_mono_us();

        state[i] = NULL;
        if (!wanted(ctx->opts, c->id))
            continue;
        state[i] = c->start(ctx, s);
        s->collectors[c->id].elapsed_us += time_mono_us() - t0;
    }
}

static void run_sample(struct collect_ctx *ctx, struct snapshot *s, void **state, int64_t t_ms)
{
    struct sample *smp = snapshot_add_sample(s, t_ms);

    for (size_t i = 0; i < ARRAY_SIZE(collectors); i++) {
        const struct collector_ops *c = collectors[i];
        int64_t t0 = time_mono_us();

        if (!wanted(ctx->opts, c->id) || c->sample == NULL)
            continue;
        c->sample(ctx, state[i], s, smp);
        s->collectors[c->id].elapsed_us += time_mono_us() - t0;
    }
}

static void run_finish(struct collect_ctx *ctx, struct snapshot *s, void **state)
{
    for (size_t i = 0; i < ARRAY_SIZE(collectors); i++) {
        const struct collector_ops *c = collectors[i];
        int64_t t0 = time_mono_us();

        if (!wanted(ctx->opts, c->id) || c->finish == NULL)
            continue;
        c->finish(ctx, state[i], s);
        s->collectors[c->id].elapsed_us += time_mono_us() - t0;
    }
}

/* Whether fd is the very directory "/" is (not a fixture tree, not a path spelled differently). */
static bool is_live_root(int fd)
{
    struct stat a, b;

    return fstat(fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * The time on the tree's own clock: boot time (btime in proc/stat) plus uptime (proc/uptime),
 * in Unix milliseconds; 0 when either is missing. On a live system the two add up to now; in a
 * fixture tree or a copy of a host's /proc, to the moment it was captured.
 */
static int64_t tree_time_ms(int rootfd)
{
    char *stat = NULL, *uptime = NULL;
    int64_t btime_s = 0, ms = 0;
    double up;

    if (file_slurp_at(rootfd, "proc/stat", 1u << 20, &stat) > 0 &&
        procfs_parse_btime(stat, &btime_s) == 0 && btime_s > 0 &&
        file_slurp_at(rootfd, "proc/uptime", 4096, &uptime) > 0) {
        uptime[strcspn(uptime, " ")] = '\0';
        if (str_to_double(uptime, &up) && up >= 0 && up < 1e10)
            ms = btime_s * 1000 + (int64_t)(up * 1000.0);
    }
    free(stat);
    free(uptime);
    return ms;
}

struct snapshot *collect_snapshot(const struct collect_opts *opts, char **cause)
{
    void *state[ARRAY_SIZE(collectors)];
    struct collect_ctx ctx;
    struct snapshot *s;
    char host[256];

    memset(&ctx, 0, sizeof(ctx));
    ctx.opts = opts;
    if (sysroot_open(&ctx.root, opts->root ? opts->root : "/", cause) != 0)
        return NULL;
    ctx.live = is_live_root(ctx.root.fd);
    ctx.start_mono_ms = time_mono_ms();
    ctx.deadline_mono_ms = ctx.start_mono_ms + opts->timeout_ms;

    s = snapshot_new();
    s->gpudoctor_version = xstrdup(GPUDOCTOR_VERSION);
    if (gethostname(host, sizeof(host)) == 0) {
        host[sizeof(host) - 1] = '\0';
        s->hostname = str_sanitized(host); /* root may set it to anything */
    }
    /*
     * A tree that is not this machine's "/" is judged as of its own clock, so a fixture tree (the
     * demo's) does not age with the wall clock: its processes' ages and its kernel log's "ago"
     * are what they were when it was captured. A host's /proc mounted elsewhere tells the time
     * as well as this machine does.
     */
    s->time_ms = ctx.live ? 0 : tree_time_ms(ctx.root.fd);
    if (s->time_ms <= 0)
        s->time_ms = time_real_ms();
    s->window_ms = opts->window_ms;
    s->root = xstrdup(ctx.root.path);

    run_start(&ctx, s, state);
    run_sample(&ctx, s, state, 0);
    if (opts->window_ms > 0) {
        int64_t interval =
            opts->interval_ms > 0 ? opts->interval_ms : opts->window_ms / SAMPLES_PER_WINDOW;
        int64_t begin = time_mono_ms(), last = 0;

        if (interval < MIN_INTERVAL_MS)
            interval = MIN_INTERVAL_MS;
        for (int64_t next = begin + interval;; next += interval) {
            int64_t now = time_mono_ms();

            if (next > begin + opts->window_ms)
                next = begin + opts->window_ms;
            /* Leave the last part of the time budget for finishing: the window ends early, and
             * the snapshot says how long it was. */
            if (next >= ctx.deadline_mono_ms) {
                s->window_ms = last;
                break;
            }
            while (now < next) {
                progress(&ctx, now);
                time_sleep_ms(next - now < 100 ? next - now : 100);
                now = time_mono_ms();
            }
            last = now - begin;
            run_sample(&ctx, s, state, last);
            if (next >= begin + opts->window_ms)
                break;
        }
        if (opts->progress)
            fputs("\r\033[K", stderr);
    }
    run_finish(&ctx, s, state);
    sysroot_close(&ctx.root);
    return s;
}

/* A helper that is closed waits this long for the child to go before killing it. */
#define NVML_CLOSE_MS 1000

void collect_session_lend(struct nvml_session **held, struct collect_opts *co)
{
    const char *env = getenv("GPUDOCTOR_NVML_LIB");
    const char *lib = co->nvml_lib && *co->nvml_lib ? co->nvml_lib
                      : env && *env                 ? env
                                                    : NVML_DEFAULT_LIB;
    char *cause = NULL;

    if (co->only != 0 && !(co->only & (1u << COLLECTOR_NVML)))
        return;
    if (*held == NULL) {
        *held = nvml_session_open(lib, &cause);
        free(cause); /* without one the collector opens its own and says why that failed */
    }
    co->nvml_session = *held;
}

void collect_session_check(struct nvml_session **held, const struct snapshot *s)
{
    enum collector_state cs = s ? s->collectors[COLLECTOR_NVML].state : CS_FAILED;

    if (*held != NULL && (cs == CS_TIMEOUT || cs == CS_FAILED)) {
        nvml_session_close(*held, time_mono_ms() + NVML_CLOSE_MS);
        *held = NULL;
    }
}
