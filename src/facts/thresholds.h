/*
 * The thresholds every judgement compares against: one table (name, default, unit, range, help),
 * so the config file, `explain`, docs/config.md, the facts (a process's verdict) and the rules
 * read the same numbers. Values are doubles in the unit the name ends with.
 */
#ifndef GPUDOCTOR_FACTS_THRESHOLDS_H
#define GPUDOCTOR_FACTS_THRESHOLDS_H

#include <stdbool.h>
#include <stddef.h>

enum threshold_id {
    TH_GPU_IDLE_UTIL_PCT,
    TH_GPU_BUSY_UTIL_PCT,
    TH_MEM_NEARLY_FULL_PCT,
    TH_MEM_FULL_IDLE_PCT,
    TH_MEM_UNACCOUNTED_MIB,
    TH_MEM_UNACCOUNTED_PCT,
    TH_HOLDER_MIN_MIB,
    TH_IDLE_HOLDER_MIN_AGE_S,
    TH_IDLE_HOLDER_CPU_PCT,
    TH_PILEUP_MIN_PROCS,
    TH_GRAPHICS_MEM_PCT,
    TH_GRAPHICS_MEM_MIN_MIB,
    TH_GRAPHICS_SM_PCT,
    TH_STARVED_UTIL_PCT,
    TH_UTIL_SWING_PCT,
    TH_STARVED_PROC_CPU_PCT,
    TH_HOST_CPU_BUSY_PCT,
    TH_HOST_IOWAIT_PCT,
    TH_HOST_PSI_IO_PCT,
    TH_DISK_BUSY_PCT,
    TH_DISK_ROTATIONAL_BUSY_PCT,
    TH_SWAP_PAGES_PER_S,
    TH_MEM_AVAILABLE_MIN_PCT,
    TH_HOST_PSI_MEM_PCT,
    TH_FS_FULL_PCT,
    TH_FS_MIN_FREE_MIB,
    TH_SHM_MIN_MIB,
    TH_SHM_FULL_PCT,
    TH_FD_LIMIT_LOW,
    TH_FD_FULL_PCT,
    TH_THERMAL_MARGIN_C,
    TH_POWER_LIMIT_LOW_PCT,
    TH_APP_CLOCK_LOW_PCT,
    TH_PCIE_REPLAY_GROWTH,
    TH_PCIE_REPLAY_TOTAL,
    TH_AER_CORRECTABLE,
    TH_KLOG_MAX_AGE_H,
    /* Trends over a history (rules-trend.c): watch, serve, check --from a recording. */
    TH_TREND_MIN_DURATION_S,
    TH_TREND_WINDOW_S,
    TH_TREND_MIN_FIT_PCT,
    TH_LEAK_MIN_GROWTH_MIB,
    TH_LEAK_FULL_CRITICAL_S,
    TH_UTIL_SWING_MIN_COUNT,
    TH_THROTTLE_MIN_EPISODES,
    TH_TEMP_RISE_MIN_C_PER_MIN,
    TH_TEMP_RISE_ETA_S,
    TH_IDLE_HELD_MIN_S,
    TH_CONTEXT_MIN_MIB,
    /* InfiniBand / RoCE (rules-ib.c). */
    TH_IB_SYMBOL_ERRORS_PER_MIN,
    TH_IB_RCV_ERRORS_PER_MIN,
    TH_IB_MIN_RATE_GBPS,
    /* A collective that stopped moving (rules-trend.c, perf.collective-stalled). */
    TH_STALL_UTIL_PCT,
    TH_STALL_POWER_PCT,
    TH_STALL_PCIE_MIB_PER_S,
    TH_STALL_MIN_S,
    /* NVLink (rules-nvlink.c). */
    TH_NVLINK_CRC_ERRORS_PER_S,
    TH_NVLINK_REPLAY_ERRORS_PER_MIN,
    TH__COUNT
};

struct threshold_def {
    const char *name; /* config key, unit in the name */
    double def;
    const char *unit; /* "%", "MiB", "s", "°C", ... for messages */
    double min, max;  /* accepted range */
    const char *help; /* one line */
    /* > 0: a value above min (a special 0, "off" or "all") must be at least this: one between
     * would pass the range and mean nothing sane (klog_max_age_h = 0.0000001 ignores every
     * kernel-log event) */
    double least;
};

extern const struct threshold_def threshold_defs[TH__COUNT];

struct profile;

/*
 * Set values and where each one came from (NULL = default; else "file:line" or "--set"), and the
 * expected-hardware profile the profile.* rules compare against (rules/profile.h; NULL: none).
 * The profile is borrowed: the configuration that read it owns it.
 */
struct thresholds {
    double v[TH__COUNT];
    const char *origin[TH__COUNT];
    const struct profile *profile;
};

void thresholds_init(struct thresholds *t);
/* The threshold named name, or -1. */
int threshold_find(const char *name);
/*
 * Parses value for threshold id and stores it with origin (borrowed: must outlive t).
 * Returns 0, or -1 with *cause set ("what is wrong", the caller adds where).
 */
int thresholds_set(struct thresholds *t, int id, const char *value, const char *origin,
                   char **cause);
/* Formats a value with its unit: "95 %", "1024 MiB". */
void threshold_format(char *buf, size_t size, int id, double v);

#endif
