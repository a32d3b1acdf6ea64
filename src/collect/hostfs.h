/*
 * Parsers for the /proc and /sys files the host collector reads, and the arithmetic that turns
 * two readings of the kernel's counters into rates over a window. Pure functions on text: no
 * I/O, so every format quirk is tested on strings. Errors come back as a cause string ("line 3:
 * ...") that the caller prefixes with the file name; the caller frees it.
 */
#ifndef GPUDOCTOR_HOSTFS_H
#define GPUDOCTOR_HOSTFS_H

#include "snapshot/snap-host.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A copy of text read from the kernel made safe for the snapshot and for messages: valid UTF-8
 * is kept, any other byte and every control character becomes "\xNN". (JSON strings must be
 * UTF-8, and a mount point or a garbage file can hold anything.) The caller frees it.
 */
char *hostfs_text(const char *s);
char *hostfs_textn(const char *s, size_t n);

/* The aggregate "cpu" line of /proc/stat, in clock ticks (guest time is inside user and nice). */
struct hostfs_cpu_times {
    uint64_t user, nice, system, idle, iowait, irq, softirq, steal;
};

/*
 * /proc/stat: the "cpu" line, and how many "cpuN" lines follow (online CPUs, a fallback for the
 * sysfs list). Returns 0, or -1 with *cause set.
 */
int hostfs_parse_stat(const char *text, struct hostfs_cpu_times *t, uint32_t *cpu_lines,
                      char **cause);

/* /proc/loadavg: the three averages. */
int hostfs_parse_loadavg(const char *text, double load[3], char **cause);

/* /proc/uptime: seconds since boot (the first number). */
int hostfs_parse_uptime(const char *text, double *uptime_s, char **cause);

/* A CPU list such as /sys/devices/system/cpu/online ("0-3,8-11,16"): how many CPUs it names. */
int hostfs_parse_cpu_list(const char *text, uint32_t *count, char **cause);

/* /proc/meminfo: the four values the host section needs, in bytes. */
#define HOSTFS_MEM_TOTAL     0x1u
#define HOSTFS_MEM_AVAILABLE 0x2u
#define HOSTFS_SWAP_TOTAL    0x4u
#define HOSTFS_SWAP_FREE     0x8u
struct hostfs_meminfo {
    uint64_t mem_total, mem_available, swap_total, swap_free;
    unsigned have; /* HOSTFS_MEM_* bits of the values found */
};
/*
 * Keys that are absent leave their bit clear. A key with a bad value is skipped and makes the
 * result -1 with *cause naming the first; the values that parsed are still set.
 */
int hostfs_parse_meminfo(const char *text, struct hostfs_meminfo *m, char **cause);

/* /proc/vmstat: pswpin and pswpout (pages swapped in and out since boot). -1 if either lacks. */
int hostfs_parse_vmstat(const char *text, uint64_t *pswpin, uint64_t *pswpout, char **cause);

/* One line of a /proc/pressure file: averages in percent, total stall time in microseconds. */
struct hostfs_psi_line {
    double avg10, avg60, avg300;
    uint64_t total_us;
};
struct hostfs_psi {
    struct hostfs_psi_line some, full;
    bool has_full; /* /proc/pressure/cpu has no "full" line before Linux 5.13 */
};
int hostfs_parse_psi(const char *text, struct hostfs_psi *p, char **cause);

/* One line of /proc/diskstats: the fields the window needs. */
struct hostfs_diskstat {
    char name[32];
    uint32_t major, minor;
    uint64_t reads, read_sectors, read_ms;
    uint64_t writes, write_sectors, write_ms;
    uint64_t io_ticks_ms; /* time with I/O in flight */
};
/*
 * /proc/diskstats: every well-formed line into *out (n entries; the caller frees *out).
 * Malformed lines are skipped; returns how many, with *cause describing the first.
 */
int hostfs_parse_diskstats(const char *text, struct hostfs_diskstat **out, size_t *n, char **cause);

/* One line of /proc/<pid>/mountinfo. */
struct hostfs_mount {
    uint32_t major, minor; /* st_dev of files on it */
    char *mount_point;     /* unescaped (\040 is a space) */
    char *fstype;
    char *source;
};
struct hostfs_mounts {
    struct hostfs_mount *v;
    size_t n;
};
/* Well-formed lines into *m; malformed lines are skipped and counted, *cause names the first. */
int hostfs_parse_mountinfo(const char *text, struct hostfs_mounts *m, char **cause);
void hostfs_mounts_free(struct hostfs_mounts *m);
/* The mount a path lives on: the longest mount point that is a prefix of it, the later on ties. */
const struct hostfs_mount *hostfs_mount_find(const struct hostfs_mounts *m, const char *path);

/* Disks the kernel lists that are not disks for our purpose unless a filesystem sits on them. */
bool hostfs_disk_is_virtual(const char *name);

/* The resources of /proc/pressure, in the order of hostfs_counters.psi. */
enum hostfs_psi_resource { HOSTFS_PSI_CPU, HOSTFS_PSI_MEM, HOSTFS_PSI_IO, HOSTFS_PSI__COUNT };

/* The kernel counters read at one time: the start and the end of a window. */
struct hostfs_counters {
    int64_t t_us; /* monotonic time of the reading */
    bool have_cpu, have_swap, have_disks;
    struct hostfs_cpu_times cpu;
    uint64_t pswpin, pswpout;
    struct hostfs_diskstat *disks;
    size_t n_disks;
    bool have_psi[HOSTFS_PSI__COUNT];
    struct hostfs_psi psi[HOSTFS_PSI__COUNT];
};
void hostfs_counters_free(struct hostfs_counters *c);

/*
 * Fills the window fields of h (CPU breakdown, swap rates, PSI over the window, and the rates of
 * h->disks matched by name) from two readings. A field is set valid only when both readings have
 * it and the window is long enough to measure; counters that go backwards count as zero.
 */
void hostfs_apply_window(const struct hostfs_counters *a, const struct hostfs_counters *b,
                         struct host_info *h);

/*
 * Busy, iowait and steal percent of all CPUs between two readings of /proc/stat.
 * Returns false when no time passed (the counters did not move).
 */
bool hostfs_cpu_pct(const struct hostfs_cpu_times *a, const struct hostfs_cpu_times *b,
                    double *busy_pct, double *iowait_pct, double *steal_pct);

#endif
