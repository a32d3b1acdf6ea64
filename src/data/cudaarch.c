/* The architecture table's readers (data/cudaarch.h); the rows come from data/cuda-arch.tsv. */
#include "data/cudaarch.h"

#include <stdlib.h>

const struct cuda_arch *cuda_arch_find(int cc)
{
    for (size_t i = 0; i < cuda_arch_n_rows; i++) {
        if (cuda_arch_rows[i].cc == cc)
            return &cuda_arch_rows[i];
    }
    return NULL;
}

bool cuda_arch_runs_on(const struct cuda_arch *code, const struct cuda_arch *gpu)
{
    if (code->cc == gpu->cc)
        return true;
    if (code->tegra || gpu->tegra)
        return false;
    return code->cc / 10 == gpu->cc / 10 && code->cc % 10 <= gpu->cc % 10;
}

int cuda_release_value(const char *s, bool *major_only)
{
    char *end;
    long major, minor = 0;

    *major_only = false;
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    major = strtol(s, &end, 10);
    if (*end == '.' && end[1] >= '0' && end[1] <= '9') {
        minor = strtol(end + 1, &end, 10);
        if (*end != '\0' && *end != '.')
            return -1; /* "12.4abc" */
    } else if (*end == '\0') {
        *major_only = true;
    } else {
        return -1; /* "12abc", "64_101" */
    }
    if (major < 1 || major > 99 || minor < 0 || minor > 9)
        return -1;
    return (int)(major * 10 + minor);
}

/* Whether toolkit v compiles for a capability whose code runs on gpu. */
static bool toolkit_serves(int v, const struct cuda_arch *gpu, int *first_needed)
{
    bool ok = false;

    for (size_t i = 0; i < cuda_arch_n_rows; i++) {
        const struct cuda_arch *code = &cuda_arch_rows[i];

        if (!cuda_arch_runs_on(code, gpu))
            continue;
        if (*first_needed == 0 || code->first < *first_needed)
            *first_needed = code->first;
        if (code->first <= v && (code->removed == 0 || v < code->removed))
            ok = true;
    }
    return ok;
}

enum cuda_arch_verdict cuda_arch_check(const char *cuda, int gpu_cc, int *first_needed)
{
    const struct cuda_arch *gpu = cuda_arch_find(gpu_cc);
    bool major_only;
    int v = cuda_release_value(cuda, &major_only), lo, hi, dummy = 0;
    bool ok_lo, ok_hi;

    *first_needed = 0;
    if (gpu == NULL || v < 0)
        return CUDA_ARCH_UNKNOWN;
    /* "12" is some 12.x: judge the lowest and the highest minor, and only when they agree. */
    lo = v;
    hi = major_only ? v + 9 : v;
    ok_lo = toolkit_serves(lo, gpu, first_needed);
    ok_hi = toolkit_serves(hi, gpu, &dummy);
    if (ok_lo && ok_hi)
        return CUDA_ARCH_OK;
    if (ok_lo != ok_hi)
        return CUDA_ARCH_UNKNOWN;
    return lo < *first_needed ? CUDA_ARCH_TOO_NEW : CUDA_ARCH_TOO_OLD;
}
