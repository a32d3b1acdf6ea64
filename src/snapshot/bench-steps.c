/* The CUDA worker's steps for people (bench-steps.h). */
#include "snapshot/bench-steps.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The WHATs without values, as the worker writes them. */
static const char *const whats[] = {
    BENCH_STEP_DRIVER,  BENCH_STEP_CONTEXT,  BENCH_STEP_ALLOC,     BENCH_STEP_H2D,
    BENCH_STEP_D2H,     BENCH_STEP_PAGEABLE, BENCH_STEP_BIDIR,     BENCH_STEP_D2D,
    BENCH_STEP_KERNELS, BENCH_STEP_TRIAD,    BENCH_STEP_CHECKSUM,  BENCH_STEP_FMA,
    BENCH_STEP_PEER,    BENCH_STEP_CUBLASLT, BENCH_STEP_LT_HANDLE, BENCH_STEP_REPORTING,
};

/* A CUDA call's name ("cuDeviceGetName"): a step of its own, the same in every language. */
static bool call_name(const char *what)
{
    if (strncmp(what, "cu", 2) != 0)
        return false;
    for (const char *p = what; *p; p++) {
        if (!isalnum((unsigned char)*p) && *p != '_')
            return false;
    }
    return true;
}

/* A WHAT for people, or NULL when it is none of the worker's. */
static char *what_l(const char *what)
{
    char label[16], list[128], end;
    unsigned a, b;
    double secs;
    int n = -1;

    for (size_t i = 0; i < sizeof(whats) / sizeof(whats[0]); i++) {
        if (strcmp(what, whats[i]) == 0)
            return xstrdup(_(whats[i]));
    }
    if (sscanf(what, "cuBLASLt %15[A-Z0-9] GEMM (cublasLtMatmul)%n", label, &n) == 1 &&
        what[n] == '\0')
        return xasprintf(_(BENCH_STEP_GEMM), label);
    n = -1;
    if (sscanf(what, "GEMM buffers (cuMemAlloc_v2, %u x %u)%n", &a, &b, &n) == 2 && n > 0 &&
        what[n] == '\0')
        return xasprintf(_(BENCH_STEP_GEMM_BUFFER), a, b);
    /* "sustained load on GPU 0 at once (30.0 s)", "... on GPUs 0,1,2 at once ..." */
    if (strncmp(what, BENCH_STEP_LOAD, strcspn(BENCH_STEP_LOAD, "%")) == 0) {
        const char *p = what + strcspn(BENCH_STEP_LOAD, "%");

        p += *p == 's';
        n = -1;
        if (sscanf(p, " %127[0-9,] at once (%lf s%c%n", list, &secs, &end, &n) == 3 && end == ')' &&
            n > 0 && p[n] == '\0')
            /* TRANSLATORS: the CUDA bench's step: the GPUs' indexes ("0,1,2") and seconds */
            return xasprintf(_("sustained load on GPUs %s at once (%.1f s)"), list, secs);
    }
    return call_name(what) ? xstrdup(what) : NULL;
}

char *bench_step_l(const char *step)
{
    char *what, *out;
    int gpu, to, n = -1;

    if (step == NULL)
        return NULL;
    if (sscanf(step, "gpu %d: %n", &gpu, &n) == 1 && n > 0) {
        if ((what = what_l(step + n)) == NULL)
            return NULL;
        /* TRANSLATORS: the CUDA bench's step on one GPU: its index, what it was doing */
        out = xasprintf(_("GPU %d: %s"), gpu, what);
    } else if (n = -1, sscanf(step, "gpus %d -> %d: %n", &gpu, &to, &n) == 2 && n > 0) {
        if ((what = what_l(step + n)) == NULL)
            return NULL;
        /* TRANSLATORS: the CUDA bench's step between two GPUs */
        out = xasprintf(_("GPU %d -> GPU %d: %s"), gpu, to, what);
    } else {
        return what_l(step);
    }
    free(what);
    return out;
}

/* The length of fmt's text before its first conversion. */
static size_t head_len(const char *fmt)
{
    return strcspn(fmt, "%");
}

/* A step inside a detail, for people: its translation, "start-up"'s, or the step as it is. */
static char *step_in_detail(const char *step)
{
    char *l = bench_step_l(step);

    if (l != NULL)
        return l;
    return xstrdup(strcmp(step, BENCH_STEP_STARTUP) == 0 ? _(BENCH_STEP_STARTUP) : step);
}

char *bench_detail_l(const char *detail)
{
    char *end, *step, *out;
    double secs;

    if (detail == NULL)
        return NULL;
    if (strncmp(detail, BENCH_DETAIL_TIMEOUT, head_len(BENCH_DETAIL_TIMEOUT)) == 0) {
        const char *p = detail + head_len(BENCH_DETAIL_TIMEOUT);

        secs = strtod(p, &end);
        if (end == p || strcmp(end, " s") != 0)
            return NULL;
        return xasprintf(_(BENCH_DETAIL_TIMEOUT), secs);
    }
    for (int k = 0; k < 2; k++) {
        const char *name = k == 0 ? "SIGINT" : "SIGTERM";
        char *en = xasprintf(BENCH_DETAIL_INTERRUPTED, name);
        bool same = strcmp(detail, en) == 0;

        free(en);
        if (same)
            return xasprintf(_(BENCH_DETAIL_INTERRUPTED), name);
    }
    if (strncmp(detail, BENCH_DETAIL_KILLED, head_len(BENCH_DETAIL_KILLED)) == 0) {
        const char *p = detail + head_len(BENCH_DETAIL_KILLED);
        long sig = strtol(p, &end, 10);

        if (end == p || sig <= 0 || sig > 64 || strncmp(end, " during: ", 9) != 0)
            return NULL;
        step = step_in_detail(end + 9);
        out = xasprintf(_(BENCH_DETAIL_KILLED), (int)sig, step);
        free(step);
        return out;
    }
    if (strncmp(detail, BENCH_DETAIL_ENDED, head_len(BENCH_DETAIL_ENDED)) == 0) {
        step = step_in_detail(detail + head_len(BENCH_DETAIL_ENDED));
        out = xasprintf(_(BENCH_DETAIL_ENDED), step);
        free(step);
        return out;
    }
    return NULL;
}
