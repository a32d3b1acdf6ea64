#include "snapshot/snap-host.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct host_info, member), slot, 0, NULL, source, doc                  \
    }

static const struct jfield host_fields[] = {
    F("cpus", JF_U32, cpus, HOST_S_CPUS, "/sys/devices/system/cpu/online",
      "online CPUs (from /proc/stat cpuN lines when the sysfs list is missing)"),
    F("load1", JF_DOUBLE, load1, HOST_S_LOAD, "/proc/loadavg",
      "run-queue length (runnable + uninterruptible tasks), 1-minute average"),
    F("load5", JF_DOUBLE, load5, HOST_S_LOAD, "/proc/loadavg", "5-minute load average"),
    F("load15", JF_DOUBLE, load15, HOST_S_LOAD, "/proc/loadavg", "15-minute load average"),
    F("cpu_user_pct", JF_DOUBLE, cpu_user_pct, HOST_S_CPU_PCT, "/proc/stat",
      "user + nice time over the window, percent of all CPUs (needs a window)"),
    F("cpu_system_pct", JF_DOUBLE, cpu_system_pct, HOST_S_CPU_PCT, "/proc/stat",
      "system + irq + softirq time over the window, percent of all CPUs"),
    F("cpu_iowait_pct", JF_DOUBLE, cpu_iowait_pct, HOST_S_CPU_PCT, "/proc/stat",
      "idle time with I/O outstanding over the window, percent of all CPUs"),
    F("cpu_steal_pct", JF_DOUBLE, cpu_steal_pct, HOST_S_CPU_PCT, "/proc/stat",
      "time the hypervisor ran someone else over the window, percent of all CPUs"),
    F("cpu_idle_pct", JF_DOUBLE, cpu_idle_pct, HOST_S_CPU_PCT, "/proc/stat",
      "idle time (without I/O outstanding) over the window, percent of all CPUs"),
    F("psi_cpu_some_avg10_pct", JF_DOUBLE, psi_cpu_some_avg10_pct, HOST_S_PSI_CPU,
      "/proc/pressure/cpu", "share of time some runnable task waited for a CPU, 10 s average"),
    F("psi_cpu_some_avg60_pct", JF_DOUBLE, psi_cpu_some_avg60_pct, HOST_S_PSI_CPU,
      "/proc/pressure/cpu", "the same, 60 s average"),
    F("psi_mem_some_avg10_pct", JF_DOUBLE, psi_mem_some_avg10_pct, HOST_S_PSI_MEM,
      "/proc/pressure/memory", "share of time some task stalled on memory (reclaim, swap-in)"),
    F("psi_mem_some_avg60_pct", JF_DOUBLE, psi_mem_some_avg60_pct, HOST_S_PSI_MEM,
      "/proc/pressure/memory", "the same, 60 s average"),
    F("psi_mem_full_avg10_pct", JF_DOUBLE, psi_mem_full_avg10_pct, HOST_S_PSI_MEM,
      "/proc/pressure/memory", "share of time all non-idle tasks stalled on memory, 10 s average"),
    F("psi_mem_full_avg60_pct", JF_DOUBLE, psi_mem_full_avg60_pct, HOST_S_PSI_MEM,
      "/proc/pressure/memory", "the same, 60 s average"),
    F("psi_io_some_avg10_pct", JF_DOUBLE, psi_io_some_avg10_pct, HOST_S_PSI_IO, "/proc/pressure/io",
      "share of time some task stalled on block I/O, 10 s average"),
    F("psi_io_some_avg60_pct", JF_DOUBLE, psi_io_some_avg60_pct, HOST_S_PSI_IO, "/proc/pressure/io",
      "the same, 60 s average"),
    F("psi_io_full_avg10_pct", JF_DOUBLE, psi_io_full_avg10_pct, HOST_S_PSI_IO, "/proc/pressure/io",
      "share of time all non-idle tasks stalled on block I/O, 10 s average"),
    F("psi_io_full_avg60_pct", JF_DOUBLE, psi_io_full_avg60_pct, HOST_S_PSI_IO, "/proc/pressure/io",
      "the same, 60 s average"),
    F("psi_cpu_some_window_pct", JF_DOUBLE, psi_cpu_some_window_pct, HOST_S_PSI_CPU_WINDOW,
      "/proc/pressure/cpu", "CPU 'some' stall time over the window (from total=, needs a window)"),
    F("psi_mem_some_window_pct", JF_DOUBLE, psi_mem_some_window_pct, HOST_S_PSI_MEM_WINDOW,
      "/proc/pressure/memory", "memory 'some' stall time over the window"),
    F("psi_mem_full_window_pct", JF_DOUBLE, psi_mem_full_window_pct, HOST_S_PSI_MEM_WINDOW,
      "/proc/pressure/memory", "memory 'full' stall time over the window"),
    F("psi_io_some_window_pct", JF_DOUBLE, psi_io_some_window_pct, HOST_S_PSI_IO_WINDOW,
      "/proc/pressure/io", "I/O 'some' stall time over the window"),
    F("psi_io_full_window_pct", JF_DOUBLE, psi_io_full_window_pct, HOST_S_PSI_IO_WINDOW,
      "/proc/pressure/io", "I/O 'full' stall time over the window"),
    F("mem_total_bytes", JF_U64, mem_total_bytes, HOST_S_MEM, "/proc/meminfo MemTotal",
      "usable RAM"),
    F("mem_available_bytes", JF_U64, mem_available_bytes, HOST_S_MEM_AVAILABLE,
      "/proc/meminfo MemAvailable",
      "RAM the kernel estimates can be given to new work without swapping"),
    F("swap_total_bytes", JF_U64, swap_total_bytes, HOST_S_SWAP, "/proc/meminfo SwapTotal",
      "swap space configured (0: no swap)"),
    F("swap_free_bytes", JF_U64, swap_free_bytes, HOST_S_SWAP, "/proc/meminfo SwapFree",
      "swap space unused; swap used = swap_total_bytes - swap_free_bytes"),
    F("swap_in_pages_per_s", JF_DOUBLE, swap_in_pages_per_s, HOST_S_SWAP_RATE,
      "/proc/vmstat pswpin", "pages read back from swap per second over the window"),
    F("swap_out_pages_per_s", JF_DOUBLE, swap_out_pages_per_s, HOST_S_SWAP_RATE,
      "/proc/vmstat pswpout", "pages written to swap per second over the window"),
    F("kernel_release", JF_STR, kernel_release, HOST_S_KERNEL, "/proc/sys/kernel/osrelease",
      "running kernel, as uname -r prints it"),
    F("uptime_s", JF_DOUBLE, uptime_s, HOST_S_UPTIME, "/proc/uptime", "time since boot"),
    F("boot_id", JF_STR, boot_id, HOST_S_BOOT_ID, "/proc/sys/kernel/random/boot_id",
      "a random id the kernel draws at each boot: the state file tells reboots apart by it"),
    F("container", JF_STR, container, HOST_S_CONTAINER,
      "/.dockerenv, /run/.containerenv, /run/systemd/container, /proc/self/cgroup, "
      "/var/run/secrets/kubernetes.io",
      "the container gpudoctor ran in (docker, podman, kubernetes, containerd, cri-o, or the "
      "name systemd was given, such as lxc), \"none\" when there was no sign of one: inside a "
      "container the kernel module, the device files and the other processes are the host's "
      "business"),
    F("container_sign", JF_STR, container_sign, HOST_S_CONTAINER_SIGN, NULL,
      "the mark the container was known by (\"/.dockerenv\"); null with \"none\""),
    F("edac_controllers", JF_U32, edac_controllers, HOST_S_EDAC, "/sys/devices/system/edac/mc",
      "memory controllers the kernel's EDAC driver watches (mcN); the section is unknown without "
      "an EDAC driver"),
    F("mem_ue_count", JF_U64, mem_ue_count, HOST_S_EDAC, "/sys/devices/system/edac/mc/mc*/ue_count",
      "uncorrectable host memory (ECC) errors, all controllers, since their counters were reset "
      "(the driver's start: usually the boot)"),
    F("mem_ce_count", JF_U64, mem_ce_count, HOST_S_EDAC, "/sys/devices/system/edac/mc/mc*/ce_count",
      "corrected host memory (ECC) errors, the same way"),
    F("mem_ue_dimms", JF_STR, mem_ue_dimms, HOST_S_EDAC_DIMMS,
      "/sys/devices/system/edac/mc/mc*/{dimm,rank}*/dimm_label, dimm_ue_count",
      "the DIMMs with uncorrectable errors and their counts, \"P2-DIMMF1 (2)\", comma-separated; "
      "null when none has any or the driver does not count per DIMM"),
    F("edac_since_s", JF_DOUBLE, edac_since_s, HOST_S_EDAC,
      "/sys/devices/system/edac/mc/mc*/seconds_since_reset",
      "how long the counters have counted (the shortest of the controllers')"),
    F("sel_entries", JF_U32, sel_entries, HOST_S_SEL, "ipmitool sel elist, ipmi-sel (imported)",
      "entries of the BMC's event log (IPMI SEL) read; the sel_* fields are unknown when none was"),
    F("sel_mem_ue", JF_U32, sel_mem_ue, HOST_S_SEL, "ipmitool sel elist, ipmi-sel (imported)",
      "uncorrectable ECC errors of the host's memory the BMC logged (asserted \"Uncorrectable "
      "ECC\" events of memory sensors), the whole log"),
    F("sel_mem_ce", JF_U32, sel_mem_ce, HOST_S_SEL, "ipmitool sel elist, ipmi-sel (imported)",
      "correctable ECC events of memory sensors (and \"logging limit reached\"), the whole log"),
    F("sel_mem_ue_last_ms", JF_I64, sel_mem_ue_last_ms, HOST_S_SEL_UE_TIME,
      "ipmitool sel elist, ipmi-sel (imported)",
      "Unix time in milliseconds of the latest uncorrectable one, as the BMC stamped it"),
    F("sel_mem_ue_dimms", JF_STR, sel_mem_ue_dimms, HOST_S_SEL_UE_DIMMS,
      "ipmitool sel elist, ipmi-sel (imported)",
      "what the uncorrectable ones name, comma-separated: the DIMM (\"P2-DIMMF1\") where the "
      "event says, else the sensor (\"Memory #0x87\")"),
    F("sel_psu_faults", JF_U32, sel_psu_faults, HOST_S_SEL_PSU,
      "ipmitool sel elist, ipmi-sel (imported)",
      "power supply faults the BMC logged and did not clear later (docs/host.md, Power supplies): "
      "a power supply or power unit sensor's failure, AC loss, AC out of range, predicted failure "
      "or configuration error asserted and not deasserted, a supply whose presence was "
      "deasserted after the log saw it present, a redundancy state other than \"Fully "
      "Redundant\" holding; at least this many when sel_psu_untracked is not 0"),
    F("sel_psu_losses", JF_U32, sel_psu_losses, HOST_S_SEL_PSU,
      "ipmitool sel elist, ipmi-sel (imported)",
      "of them, those that remove power or redundancy (failed, AC lost, removed, redundancy "
      "lost or degraded) logged after the last power-on or boot the log records, or with none"),
    F("sel_psu_stale", JF_U32, sel_psu_stale, HOST_S_SEL_PSU,
      "ipmitool sel elist, ipmi-sel (imported)",
      "of them, those logged before the last power-on or boot the log records"),
    F("sel_psu_untracked", JF_U32, sel_psu_untracked, HOST_S_SEL_PSU,
      "ipmitool sel elist, ipmi-sel (imported)",
      "faults asserted that could not be followed (more sensors than gpudoctor follows, a name "
      "no ipmitool writes): counted as open"),
    F("sel_full", JF_BOOL, sel_full, HOST_S_SEL_PSU, "ipmitool sel elist, ipmi-sel (imported)",
      "the log was full (\"Log full\") or all logging disabled at its end, and not cleared "
      "since: later faults and clearings were not logged"),
    F("sel_psu_last_ms", JF_I64, sel_psu_last_ms, HOST_S_SEL_PSU_TIME,
      "ipmitool sel elist, ipmi-sel (imported)",
      "Unix time in milliseconds of the newest of them, as the BMC stamped it"),
    F("sel_psu_what", JF_STR, sel_psu_what, HOST_S_SEL_PSU_WHAT,
      "ipmitool sel elist, ipmi-sel (imported)",
      "the sensors and events of those faults, comma-separated (\"Power Supply PS2 Status: "
      "Failure detected\")"),
    F("shm_total_bytes", JF_U64, shm_total_bytes, HOST_S_SHM, "statvfs /dev/shm",
      "size of the POSIX shared memory (/dev/shm) where gpudoctor ran: a container has its own "
      "(docker's default is 64 MiB), a host's is half its RAM by default"),
    F("shm_avail_bytes", JF_U64, shm_avail_bytes, HOST_S_SHM, "statvfs /dev/shm",
      "what is still free of it"),
    F("open_files_limit", JF_LIMIT, open_files_limit, HOST_S_NOFILE,
      "/proc/self/limits Max open files",
      "gpudoctor's own soft limit on open files (ulimit -n where it was started: a job started "
      "from the same shell or container has the same); \"unlimited\" when there is none"),
    F("memlock_limit", JF_LIMIT, memlock_limit, HOST_S_MEMLOCK,
      "/proc/self/limits Max locked memory",
      "gpudoctor's own soft limit on locked memory in bytes (ulimit -l where it was started: a "
      "job started from the same shell or container has the same); \"unlimited\" when there "
      "is none"),
    F("net_up", JF_STR, net_up, HOST_S_NET, "/sys/class/net/*/operstate",
      "the network interfaces that are up (or whose state the driver does not report), "
      "space-separated, lo left out: the ones NCCL_SOCKET_IFNAME can name"),
    F("suspend_count", JF_U32, suspend_count, HOST_S_SUSPEND, "/sys/power/suspend_stats/success",
      "successful system suspends (to RAM or to idle) since boot: without NVIDIA's suspend "
      "services, a resume can leave CUDA unable to start"),
    F("oom_kills", JF_U32, oom_kills, HOST_S_OOM, "kernel log (driver.events)",
      "processes the kernel's OOM killer ended, among the kernel-log events kept; the events "
      "name the victims"),
    { "disks", JF_NONE, 0, HOST_S_DISKS, 0, NULL, "/proc/diskstats, /sys/block",
      "whole disks (see docs/host.md for which), with utilisation over the window" },
    { "filesystems", JF_NONE, 0, HOST_S_FS, 0, NULL, "statvfs, /proc/self/mountinfo",
      "free space of the filesystems holding /, /tmp and the GPU processes' working directories" },
};
#undef F

const struct jtable host_info_table = {
    "host", host_fields, ARRAY_SIZE(host_fields), JT_BITS, offsetof(struct host_info, valid), NULL,
};

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct host_disk, member), slot, 0, NULL, source, doc                  \
    }
static const struct jfield disk_fields[] = {
    F("name", JF_STR, name, -1, "/proc/diskstats", "kernel name of the disk (sda, nvme0n1)"),
    F("rotational", JF_BOOL, rotational, DISK_S_ROTATIONAL, "/sys/block/DISK/queue/rotational",
      "a spinning disk (seeks are slow)"),
    F("util_pct", JF_DOUBLE, util_pct, DISK_S_RATES, "/proc/diskstats io_ticks",
      "share of the window the disk had I/O in flight (100: saturated, for a single queue)"),
    F("await_ms", JF_DOUBLE, await_ms, DISK_S_AWAIT, "/proc/diskstats",
      "average time per completed read or write over the window, queueing included"),
    F("read_bytes_per_s", JF_DOUBLE, read_bytes_per_s, DISK_S_RATES, "/proc/diskstats",
      "bytes read per second over the window"),
    F("write_bytes_per_s", JF_DOUBLE, write_bytes_per_s, DISK_S_RATES, "/proc/diskstats",
      "bytes written per second over the window"),
};
#undef F

const struct jtable host_disk_table = {
    "disk", disk_fields, ARRAY_SIZE(disk_fields), JT_BITS, offsetof(struct host_disk, valid), NULL,
};

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct host_fs, member), slot, 0, NULL, source, doc                    \
    }
static const struct jfield fs_fields[] = {
    F("mount", JF_STR, mount, FS_S_MOUNT, "/proc/self/mountinfo",
      "mount point of the filesystem (in the mount namespace the path was resolved in)"),
    F("device", JF_STR, device, FS_S_MOUNT, "/proc/self/mountinfo",
      "mount source (/dev/nvme0n1p2)"),
    F("fstype", JF_STR, fstype, FS_S_MOUNT, "/proc/self/mountinfo", "filesystem type"),
    F("total_bytes", JF_U64, total_bytes, FS_S_SPACE, "statvfs", "size of the filesystem"),
    F("avail_bytes", JF_U64, avail_bytes, FS_S_AVAIL, "statvfs",
      "space an unprivileged user can still write (reserved blocks excluded)"),
    F("inodes_total", JF_U64, inodes_total, FS_S_INODES, "statvfs", "inodes (files) it can hold"),
    F("inodes_avail", JF_U64, inodes_avail, FS_S_INODES, "statvfs",
      "inodes an unprivileged user can still create"),
    F("readonly", JF_BOOL, readonly, FS_S_SPACE, "statvfs", "mounted read-only"),
    { "paths", JF_NONE, 0, -1, 0, NULL, NULL,
      "the directories asked about that live on this filesystem: /, /tmp, GPU processes' cwds" },
};
#undef F

const struct jtable host_fs_table = {
    "filesystem", fs_fields, ARRAY_SIZE(fs_fields), JT_BITS, offsetof(struct host_fs, valid), NULL,
};

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct host_sample, member), slot, JF_DYNAMIC, NULL, source, doc       \
    }
static const struct jfield sample_fields[] = {
    F("cpu_busy_pct", JF_DOUBLE, cpu_busy_pct, HOST_SMP_S_CPU_BUSY, "/proc/stat",
      "CPU time not idle and not waiting for I/O since the previous sample, percent of all CPUs"),
    F("cpu_iowait_pct", JF_DOUBLE, cpu_iowait_pct, HOST_SMP_S_CPU, "/proc/stat",
      "I/O wait since the previous sample, percent of all CPUs"),
    F("cpu_steal_pct", JF_DOUBLE, cpu_steal_pct, HOST_SMP_S_CPU, "/proc/stat",
      "steal time since the previous sample, percent of all CPUs"),
    F("mem_available_bytes", JF_U64, mem_available_bytes, HOST_SMP_S_MEM,
      "/proc/meminfo MemAvailable", "RAM available at this sample"),
};
#undef F

const struct jtable host_sample_table = {
    "host sample",
    sample_fields,
    ARRAY_SIZE(sample_fields),
    JT_BITS,
    offsetof(struct host_sample, valid),
    NULL,
};

bool host_valid(const struct host_info *h, enum host_slot slot)
{
    return (h->valid >> slot) & 1u;
}

void host_set_valid(struct host_info *h, enum host_slot slot)
{
    h->valid |= UINT64_C(1) << slot;
}

const char *host_container(const struct host_info *h)
{
    if (!host_valid(h, HOST_S_CONTAINER) || h->container == NULL ||
        strcmp(h->container, "none") == 0)
        return NULL;
    return h->container;
}

void host_disk_free(struct host_disk *d)
{
    jtable_free(&host_disk_table, d);
}

void host_fs_free(struct host_fs *f)
{
    jtable_free(&host_fs_table, f);
    for (size_t i = 0; i < f->n_paths; i++)
        free(f->paths[i]);
    free(f->paths);
    f->paths = NULL;
    f->n_paths = 0;
}

void host_info_free(struct host_info *h)
{
    jtable_free(&host_info_table, h);
    for (size_t i = 0; i < h->n_disks; i++)
        host_disk_free(&h->disks[i]);
    free(h->disks);
    for (size_t i = 0; i < h->n_fs; i++)
        host_fs_free(&h->fs[i]);
    free(h->fs);
    memset(h, 0, sizeof(*h));
}

/* ---- writing ---- */

static json_t *fs_to_json(const struct host_fs *f)
{
    json_t *j = json_object(), *paths = json_array();

    jtable_write(&host_fs_table, f, j, 0);
    for (size_t i = 0; i < f->n_paths; i++)
        json_array_append_new(paths, json_string(f->paths[i]));
    json_object_set_new(j, "paths", paths);
    return j;
}

json_t *host_info_to_json(const struct host_info *h)
{
    json_t *j = json_object();

    /* The list fields come last in the table, so the key order does not depend on validity. */
    jtable_write(&host_info_table, h, j, 0);
    if (host_valid(h, HOST_S_DISKS)) {
        json_t *a = json_array();

        for (size_t i = 0; i < h->n_disks; i++) {
            json_t *d = json_object();

            jtable_write(&host_disk_table, &h->disks[i], d, 0);
            json_array_append_new(a, d);
        }
        json_object_set_new(j, "disks", a);
    }
    if (host_valid(h, HOST_S_FS)) {
        json_t *a = json_array();

        for (size_t i = 0; i < h->n_fs; i++)
            json_array_append_new(a, fs_to_json(&h->fs[i]));
        json_object_set_new(j, "filesystems", a);
    }
    return j;
}

json_t *host_sample_to_json(const struct host_sample *s)
{
    json_t *j = json_object();

    jtable_write(&host_sample_table, s, j, 0);
    return j;
}

/* ---- reading ---- */

static int read_paths(struct host_fs *f, const json_t *a, const char *path, struct jerr *err)
{
    size_t i;
    json_t *v;

    if (a == NULL)
        return 0;
    if (!json_is_array(a)) {
        jerr_set(err, path, "paths: expected an array of strings");
        return -1;
    }
    f->paths = xcalloc(json_array_size(a) + 1, sizeof(*f->paths));
    json_array_foreach(a, i, v)
    {
        if (!json_is_string(v)) {
            char p[300];

            snprintf(p, sizeof(p), "%s.paths[%zu]", path, i);
            jerr_set(err, p, "expected a string");
            return -1;
        }
        f->paths[f->n_paths++] = str_sanitized(json_string_value(v));
    }
    return 0;
}

static int read_disk(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    return jtable_read(&host_disk_table, obj, j, path, 0, NULL, err);
}

static int read_fs(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct host_fs *f = obj;

    if (jtable_read(&host_fs_table, f, j, path, 0, NULL, err) != 0)
        return -1;
    return read_paths(f, json_object_get(j, "paths"), path, err);
}

int host_info_from_json(struct host_info *h, const json_t *j, const char *path, struct jerr *err)
{
    void *items = NULL;
    int r;

    if (jtable_read(&host_info_table, h, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read(j, "disks", path, sizeof(*h->disks), &items, &h->n_disks, read_disk, err);
    h->disks = items;
    if (r < 0)
        return -1;
    if (r > 0)
        host_set_valid(h, HOST_S_DISKS);
    items = NULL;
    r = jlist_read(j, "filesystems", path, sizeof(*h->fs), &items, &h->n_fs, read_fs, err);
    h->fs = items;
    if (r < 0)
        return -1;
    if (r > 0)
        host_set_valid(h, HOST_S_FS);
    return 0;
}

int host_sample_from_json(struct host_sample *s, const json_t *j, const char *path,
                          struct jerr *err)
{
    return jtable_read(&host_sample_table, s, j, path, 0, NULL, err);
}
