/*
 * The threshold table (names, defaults, units, ranges, help) and setting a value from the config
 * file or --set, range-checked.
 */
#include "facts/thresholds.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* clang-format off */
const struct threshold_def threshold_defs[TH__COUNT] = {
    [TH_GPU_IDLE_UTIL_PCT] = { "gpu_idle_util_pct", 5, "%", 0, 100,
        "a GPU whose utilisation stays at or below this over the window is idle" },
    [TH_GPU_BUSY_UTIL_PCT] = { "gpu_busy_util_pct", 30, "%", 0, 100,
        "a GPU whose utilisation reaches this is busy (PCIe link checks apply only then)" },
    [TH_MEM_NEARLY_FULL_PCT] = { "mem_nearly_full_pct", 95, "%", 1, 100,
        "GPU memory use at or above this on a busy GPU is 'nearly full'" },
    [TH_MEM_FULL_IDLE_PCT] = { "mem_full_idle_pct", 80, "%", 1, 100,
        "GPU memory use at or above this on an idle GPU is 'full while idle'" },
    [TH_MEM_UNACCOUNTED_MIB] = { "mem_unaccounted_mib", 1024, "MiB", 0, 1e9,
        "GPU memory in use that no listed process accounts for, above this, is reported" },
    [TH_MEM_UNACCOUNTED_PCT] = { "mem_unaccounted_pct", 5, "%", 0, 100,
        "... and only when it is also at least this share of the GPU's memory" },
    [TH_HOLDER_MIN_MIB] = { "holder_min_mib", 256, "MiB", 0, 1e9,
        "a process holding at least this much GPU memory counts as a holder for idle checks" },
    [TH_IDLE_HOLDER_MIN_AGE_S] = { "idle_holder_min_age_s", 600, "s", 0, 1e9,
        "an idle holder must be at least this old (a job starting up is idle too)" },
    [TH_IDLE_HOLDER_CPU_PCT] = { "idle_holder_cpu_pct", 2, "%", 0, 10000,
        "a holder using less CPU than this (100 = one core) over the window is idle" },
    [TH_PILEUP_MIN_PROCS] = { "pileup_min_procs", 2, "processes", 2, 1e6,
        "this many compute processes on one GPU while another GPU idles is a pile-up" },
    [TH_GRAPHICS_MEM_PCT] = { "graphics_mem_pct", 10, "%", 0, 100,
        "graphics work (display, desktop, 3D programs) holding at least this share of a GPU's "
        "memory beside compute jobs takes a meaningful share of it" },
    [TH_GRAPHICS_MEM_MIN_MIB] = { "graphics_mem_min_mib", 1024, "MiB", 0, 1e9,
        "... and only when it is also at least this much (a desktop holds a few hundred MiB)" },
    [TH_GRAPHICS_SM_PCT] = { "graphics_sm_pct", 10, "%", 0, 100,
        "graphics work taking at least this share of a GPU's SM time (per-process samples) beside "
        "compute jobs takes a meaningful share of it" },
    [TH_STARVED_UTIL_PCT] = { "starved_util_pct", 60, "%", 0, 100,
        "a GPU averaging below this while its job is CPU-bound is starved by its input" },
    [TH_UTIL_SWING_PCT] = { "util_swing_pct", 50, "%", 0, 100,
        "utilisation swinging by at least this (max - min) over the window is 'swinging'" },
    [TH_STARVED_PROC_CPU_PCT] = { "starved_proc_cpu_pct", 90, "%", 0, 100000,
        "a job process using at least this much CPU (100 = one core) is CPU-bound" },
    [TH_HOST_CPU_BUSY_PCT] = { "host_cpu_busy_pct", 90, "%", 0, 100,
        "host CPU busy (user + system + steal) at or above this is saturated" },
    [TH_HOST_IOWAIT_PCT] = { "host_iowait_pct", 20, "%", 0, 100,
        "CPU time waiting for I/O at or above this is high" },
    [TH_HOST_PSI_IO_PCT] = { "host_psi_io_pct", 25, "%", 0, 100,
        "I/O pressure (PSI some avg10) at or above this is high" },
    [TH_DISK_BUSY_PCT] = { "disk_busy_pct", 90, "%", 0, 100,
        "a disk busy this share of the window is saturated" },
    [TH_DISK_ROTATIONAL_BUSY_PCT] = { "disk_rotational_busy_pct", 50, "%", 0, 100,
        "a rotational (mechanical) disk busy this share of the window is a bottleneck" },
    [TH_SWAP_PAGES_PER_S] = { "swap_pages_per_s", 100, "pages/s", 0, 1e12,
        "swap-in plus swap-out at or above this rate is swapping" },
    [TH_MEM_AVAILABLE_MIN_PCT] = { "mem_available_min_pct", 5, "%", 0, 100,
        "host memory available below this share of the total is memory pressure" },
    [TH_HOST_PSI_MEM_PCT] = { "host_psi_mem_pct", 10, "%", 0, 100,
        "memory pressure (PSI some avg10) at or above this is memory pressure" },
    [TH_FS_FULL_PCT] = { "fs_full_pct", 95, "%", 1, 100,
        "a file system (/, /tmp, a job's directory) used at or above this is nearly full" },
    [TH_FS_MIN_FREE_MIB] = { "fs_min_free_mib", 1024, "MiB", 0, 1e12,
        "... or with less than this free" },
    [TH_SHM_MIN_MIB] = { "shm_min_mib", 1024, "MiB", 0, 1e12,
        "POSIX shared memory (/dev/shm) smaller than this is small for data-loader workers and "
        "NCCL (NVIDIA's containers ask for --shm-size=1g at least)" },
    [TH_SHM_FULL_PCT] = { "shm_full_pct", 90, "%", 1, 100,
        "/dev/shm used at or above this is nearly full" },
    [TH_FD_LIMIT_LOW] = { "fd_limit_low", 1024, "files", 0, 1e12,
        "a soft limit on open files at or below this is the traditional default, too low for "
        "data-loader workers that share tensors as descriptors" },
    [TH_FD_FULL_PCT] = { "fd_full_pct", 90, "%", 1, 100,
        "a GPU process with this share of its open-files limit in use is about to run out" },
    [TH_THERMAL_MARGIN_C] = { "thermal_margin_c", 5, "°C", 0, 100,
        "a GPU within this of its slowdown temperature is about to throttle" },
    [TH_POWER_LIMIT_LOW_PCT] = { "power_limit_low_pct", 90, "%", 1, 100,
        "a power limit below this share of the default limit is 'set low'" },
    [TH_APP_CLOCK_LOW_PCT] = { "app_clock_low_pct", 90, "%", 1, 100,
        "application clocks below this share of their default are 'reduced'" },
    [TH_PCIE_REPLAY_GROWTH] = { "pcie_replay_growth", 10, "replays", 1, 1e12,
        "PCIe replays growing by this many within the window is a link error" },
    [TH_PCIE_REPLAY_TOTAL] = { "pcie_replay_total", 1000, "replays", 1, 1e12,
        "a PCIe replay counter at or above this since boot is a marginal link" },
    [TH_AER_CORRECTABLE] = { "aer_correctable", 100, "errors", 1, 1e12,
        "corrected PCIe AER errors at or above this since boot are a marginal link" },
    [TH_KLOG_MAX_AGE_H] = { "klog_max_age_h", 72, "h", 0, 1e6,
        "kernel-log events (XIDs, OOM kills, host memory errors) older than this are ignored; 0 = the whole log",
        1 },
    [TH_TREND_MIN_DURATION_S] = { "trend_min_duration_s", 180, "s", 10, 1e9,
        "trend rules need a history at least this long; a leak or a climb must last this long" },
    [TH_TREND_WINDOW_S] = { "trend_window_s", 600, "s", 10, 1e9,
        "trend rules count swings and throttle episodes, and fit temperatures, this far back" },
    [TH_TREND_MIN_FIT_PCT] = { "trend_min_fit_pct", 90, "%", 0, 100,
        "a trend is steady when a straight line explains this share of its variance (R²)" },
    [TH_LEAK_MIN_GROWTH_MIB] = { "leak_min_growth_mib", 256, "MiB", 1, 1e9,
        "a process's GPU memory must grow by at least this much to be a leak" },
    [TH_LEAK_FULL_CRITICAL_S] = { "leak_full_critical_s", 1800, "s", 0, 1e9,
        "a leak that fills its GPU within this is critical" },
    [TH_UTIL_SWING_MIN_COUNT] = { "util_swing_min_count", 6, "swings", 2, 1e6,
        "utilisation moving between its low and high band this many times is swinging" },
    [TH_THROTTLE_MIN_EPISODES] = { "throttle_min_episodes", 3, "episodes", 2, 1e6,
        "clocks throttled (power cap, thermal, hardware slowdown) this many separate times" },
    [TH_TEMP_RISE_MIN_C_PER_MIN] = { "temp_rise_min_c_per_min", 1, "°C/min", 0.01, 1000,
        "a temperature climbing at least this fast is heating up" },
    [TH_TEMP_RISE_ETA_S] = { "temp_rise_eta_s", 900, "s", 10, 1e9,
        "... and is reported when it would reach the slowdown temperature within this" },
    [TH_IDLE_HELD_MIN_S] = { "idle_held_min_s", 900, "s", 10, 1e9,
        "a GPU idle this long while its memory is held is reported" },
    [TH_CONTEXT_MIN_MIB] = { "context_min_mib", 40, "MiB", 0, 1e9,
        "memory used on a GPU at or above this, with no process visible, means a CUDA context is "
        "there (a GPU without one shows a few MiB)" },
    [TH_IB_SYMBOL_ERRORS_PER_MIN] = { "ib_symbol_errors_per_min", 10, "errors/min", 0.01, 1e12,
        "InfiniBand symbol errors growing at least this fast over the window are a bad link" },
    [TH_IB_RCV_ERRORS_PER_MIN] = { "ib_rcv_errors_per_min", 10, "errors/min", 0.01, 1e12,
        "InfiniBand receive errors (bad packets, local integrity, buffer overruns) growing at least "
        "this fast over the window are a bad link" },
    [TH_IB_MIN_RATE_GBPS] = { "ib_min_rate_gbps", 0, "Gb/s", 0, 1e6,
        "every active InfiniBand port should run at least this rate (400 for NDR fabrics); "
        "0 = judge ports only against their neighbours" },
    [TH_STALL_UTIL_PCT] = { "stall_util_pct", 90, "%", 1, 100,
        "the GPUs of a multi-GPU job all at or above this utilisation ..." },
    [TH_STALL_POWER_PCT] = { "stall_power_pct", 40, "%", 1, 100,
        "... while each draws at most this share of its power limit ..." },
    [TH_STALL_PCIE_MIB_PER_S] = { "stall_pcie_mib_per_s", 64, "MiB/s", 0, 1e9,
        "... and moves at most this much over PCIe (both directions), and over NVLink where its "
        "data counters are read, are spinning, not working" },
    [TH_STALL_MIN_S] = { "stall_min_s", 300, "s", 10, 1e9,
        "... reported as a stalled collective when that lasts this long" },
    [TH_NVLINK_CRC_ERRORS_PER_S] = { "nvlink_crc_errors_per_s", 100, "errors/s", 0.001, 1e12,
        "NVLink CRC errors growing at least this fast over the window are a bad link (DCGM's "
        "limit)" },
    [TH_NVLINK_REPLAY_ERRORS_PER_MIN] = { "nvlink_replay_errors_per_min", 0.001, "errors/min",
        0.001, 1e12,
        "NVLink replays plus recoveries growing at least this fast over the window are a bad link "
        "(the default: any, as DCGM)" },
};
/* clang-format on */

void thresholds_init(struct thresholds *t)
{
    for (size_t i = 0; i < TH__COUNT; i++) {
        t->v[i] = threshold_defs[i].def;
        t->origin[i] = NULL;
    }
    t->profile = NULL;
}

int threshold_find(const char *name)
{
    for (int i = 0; i < TH__COUNT; i++) {
        if (strcmp(threshold_defs[i].name, name) == 0)
            return i;
    }
    return -1;
}

/* Whether s is a plain decimal number, as people write one: digits with at most one '.', a '-'
 * before them, blanks around; no hex (0x5a), exponent (1e-300), '+', inf or nan, which strtod
 * would take. */
static bool plain_decimal(const char *s)
{
    size_t digits = 0;

    s = str_ltrim(s);
    if (*s == '-')
        s++;
    for (; isdigit((unsigned char)*s); s++)
        digits++;
    if (*s == '.') {
        for (s++; isdigit((unsigned char)*s); s++)
            digits++;
    }
    return digits > 0 && *str_ltrim(s) == '\0';
}

int thresholds_set(struct thresholds *t, int id, const char *value, const char *origin,
                   char **cause)
{
    const struct threshold_def *d = &threshold_defs[id];
    double v;

    if (!plain_decimal(value) || !str_to_double(value, &v) || !isfinite(v)) {
        *cause = xasprintf(_("%s: '%s' is not a number (plain decimal digits, such as 90 or 2.5)"),
                           d->name, value);
        return -1;
    }
    if (v < d->min || v > d->max) {
        *cause = xasprintf(_("%s: %g is out of range (%g to %g %s)"), d->name, v, d->min, d->max,
                           d->unit);
        return -1;
    }
    if (d->least > 0 && v > d->min && v < d->least) {
        *cause = xasprintf(_("%s: %g is out of range (%g, or %g to %g %s)"), d->name, v, d->min,
                           d->least, d->max, d->unit);
        return -1;
    }
    t->v[id] = v;
    t->origin[id] = origin;
    return 0;
}

void threshold_format(char *buf, size_t size, int id, double v)
{
    const char *unit = threshold_defs[id].unit;

    snprintf(buf, size, "%g%s%s", v, strcmp(unit, "%") == 0 ? "" : " ", unit);
}
