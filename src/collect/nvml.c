/*
 * The NVML collector: a thin wrapper over an NVML session (nvml-session.h). start = open + full,
 * sample = the dynamic fields into each sample (without a window, the full reading's), finish =
 * close. NVML gets the collection deadline
 * minus a reserve, so whatever hangs in the driver, the other collectors still run and the
 * program exits on time.
 */
#include "collect/collect.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-session.h"
#include "collect/nvml-status.h"
#include "collect/nvml-wire.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

/* Time kept back from NVML for everything after it: at most this, else a quarter of --timeout. */
#define NVML_RESERVE_MAX_MS 2000
/* How long close waits for the helper to shut NVML down, at most and at least. */
#define NVML_CLOSE_MAX_MS 1000
#define NVML_CLOSE_MIN_MS 50

struct nvml_state {
    struct nvml_session *ss;
    bool borrowed; /* the caller's session: never closed here */
    bool *noted;   /* per GPU: already has a note saying it was lost */
    size_t n_noted;
};

static const char *library_name(const struct collect_opts *o)
{
    const char *env = getenv("GPUDOCTOR_NVML_LIB");

    if (o->nvml_lib != NULL && *o->nvml_lib)
        return o->nvml_lib;
    if (env != NULL && *env)
        return env;
    return NVML_DEFAULT_LIB;
}

static int64_t nvml_deadline(const struct collect_ctx *ctx)
{
    int64_t reserve = ctx->opts->timeout_ms / 4;

    if (reserve > NVML_RESERVE_MAX_MS)
        reserve = NVML_RESERVE_MAX_MS;
    return ctx->deadline_mono_ms - reserve;
}

static void close_session(struct collect_ctx *ctx, struct nvml_session *ss)
{
    int64_t wait = collect_time_left(ctx);

    if (wait > NVML_CLOSE_MAX_MS)
        wait = NVML_CLOSE_MAX_MS;
    if (wait < NVML_CLOSE_MIN_MS)
        wait = NVML_CLOSE_MIN_MS;
    nvml_session_close(ss, time_mono_ms() + wait);
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *c = &s->collectors[COLLECTOR_NVML];
    const char *lib = library_name(ctx->opts);
    int64_t t0 = time_mono_us();
    char *hung = NULL, *cause = NULL;
    struct nvml_state *st;
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;

    s->nvml.attempted = true;
    ss = ctx->opts->nvml_session ? ctx->opts->nvml_session : nvml_session_open(lib, &cause);
    if (ss == NULL) {
        s->nvml.library = xstrdup(lib);
        collector_set(c, CS_FAILED, "cannot start the NVML helper process: %s", cause);
        free(cause);
        return NULL;
    }
    switch (nvml_session_full(ss, nvml_deadline(ctx), &sys, &gpus, &n, &hung, &cause)) {
    case NVML_SESSION_OK:
        nvml_system_free(&s->nvml);
        s->nvml = sys;
        s->gpus = gpus;
        s->n_gpus = n;
        s->nvml.elapsed_us = time_mono_us() - t0;
        if (!nvml_status_judge(&s->nvml, s->gpus, s->n_gpus, c))
            break;
        st = xcalloc(1, sizeof(*st));
        st->ss = ss;
        st->borrowed = ss == ctx->opts->nvml_session;
        st->n_noted = n;
        st->noted = xcalloc(n, sizeof(*st->noted));
        for (size_t i = 0; i < n; i++)
            st->noted[i] = nvml_status_lost_field(&gpus[i]) != NULL || gpus[i].handle_rc != 0;
        return st;
    case NVML_SESSION_TIMEOUT:
        s->nvml.library = xstrdup(lib);
        s->nvml.hung_call = hung;
        hung = NULL;
        s->nvml.elapsed_us = time_mono_us() - t0;
        collector_set(c, CS_TIMEOUT, "%s", cause);
        break;
    case NVML_SESSION_FAILED:
        s->nvml.library = xstrdup(lib);
        collector_set(c, CS_FAILED, "%s", cause);
        break;
    }
    free(hung);
    free(cause);
    if (ss != ctx->opts->nvml_session)
        close_session(ctx, ss);
    return NULL;
}

static void stop(struct collect_ctx *ctx, struct nvml_state *st)
{
    if (!st->borrowed)
        close_session(ctx, st->ss);
    st->ss = NULL;
}

static void sample(struct collect_ctx *ctx, void *state, struct snapshot *s, struct sample *smp)
{
    struct collector_status *c = &s->collectors[COLLECTOR_NVML];
    struct nvml_state *st = state;
    char *hung = NULL, *cause = NULL;

    if (st == NULL || st->ss == NULL)
        return;
    /* Without a window the one sample follows the full reading at once: it is that reading. */
    if (ctx->opts->window_ms == 0 && smp->t_ms == 0) {
        if (nvml_wire_sample_of(s->gpus, s->n_gpus, &smp->gpus, &smp->n_gpus, &cause) != 0) {
            collector_set(c, CS_FAILED, "while sampling: %s", cause);
            stop(ctx, st);
        }
        free(cause);
        return;
    }
    switch (
        nvml_session_sample(st->ss, nvml_deadline(ctx), &smp->gpus, &smp->n_gpus, &hung, &cause)) {
    case NVML_SESSION_OK:
        /* A GPU that falls off the bus during the window is news, said once. */
        for (size_t i = 0; i < smp->n_gpus; i++) {
            const struct gpu *g = &smp->gpus[i];
            char *note;

            if (g->index >= st->n_noted || st->noted[g->index])
                continue;
            note = nvml_status_gpu_note(g);
            if (note != NULL) {
                collector_note(c, "%s", note);
                st->noted[g->index] = true;
                free(note);
            }
        }
        break;
    case NVML_SESSION_TIMEOUT:
        free(s->nvml.hung_call);
        s->nvml.hung_call = hung;
        hung = NULL;
        collector_set(c, CS_TIMEOUT, "while sampling: %s", cause);
        stop(ctx, st);
        break;
    case NVML_SESSION_FAILED:
        collector_set(c, CS_FAILED, "while sampling: %s", cause);
        stop(ctx, st);
        break;
    }
    free(hung);
    free(cause);
}

static void finish(struct collect_ctx *ctx, void *state, struct snapshot *s)
{
    struct nvml_state *st = state;

    (void)s;
    if (st == NULL)
        return;
    if (st->ss != NULL)
        stop(ctx, st);
    free(st->noted);
    free(st);
}

const struct collector_ops collector_nvml = { COLLECTOR_NVML, start, sample, finish };
