/*
 * The host collector: CPU, load, pressure, memory and swap, disks, free space, kernel, from
 * /proc and /sys under the root directory. start() reads everything once and keeps the kernel's
 * counters; sample() adds CPU and memory to each history sample; finish() reads the counters
 * again and turns the differences into rates over the window. docs/host.md has the details.
 */
#include "collect/collect.h"
#include "collect/hostfs.h"
#include "collect/procfs.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* Big-but-bounded /proc files: "intr" in /proc/stat and mountinfo on container hosts grow. */
#define STAT_MAX_BYTES      (4u << 20)
#define DISKSTATS_MAX_BYTES (4u << 20)
#define MEMINFO_MAX_BYTES   (1u << 20)
#define MOUNTINFO_MAX_BYTES (16u << 20)
/* A sample's CPU percentages need some ticks to be more than noise (USER_HZ is 100). */
#define MIN_SAMPLE_US 50000

static const char *const psi_files[HOSTFS_PSI__COUNT] = {
    "proc/pressure/cpu",
    "proc/pressure/memory",
    "proc/pressure/io",
};

struct host_state {
    struct hostfs_counters first; /* at start */
    struct hostfs_cpu_times prev; /* the CPU reading the next sample is measured from */
    int64_t prev_us;
    bool have_mem_available; /* start read MemAvailable: samples read it too */
    bool sample_noted;       /* a failed sample read is noted once, not per sample */
};

/* What one pass of reading needs: where, and the tally that decides the collector state. */
struct reader {
    struct collect_ctx *ctx;
    struct collector_status *st;
    unsigned read_ok, denied, failed;
};

static void note_errno(struct reader *r, const char *rel, int err, const char *hint)
{
    if (err == EACCES || err == EPERM)
        r->denied++;
    else
        r->failed++;
    collector_note(r->st, "/%s: %s%s", rel, err == EFBIG ? "too large, not read" : strerror(err),
                   hint ? hint : "");
}

/* Notes a parser's complaint (made printable: it may quote garbage) and frees it. */
static void note_malformed(struct reader *r, const char *rel, char *cause)
{
    char *text = hostfs_text(cause);

    r->failed++;
    collector_note(r->st, "/%s: malformed: %s", rel, text);
    free(text);
    free(cause);
}

/* Notes how many lines of a line-per-record file were skipped, with the first one's fault. */
static void note_bad_lines(struct reader *r, const char *rel, int bad, char *cause)
{
    char *first;

    if (bad == 0)
        return;
    first = hostfs_text(cause);
    collector_note(r->st, "/%s: %d malformed line%s skipped, the first: %s", rel, bad,
                   bad == 1 ? "" : "s", first);
    free(first);
    free(cause);
}

/* Reads rel under the root into a new buffer; NULL (noted) on failure. */
static char *slurp(struct reader *r, const char *rel, size_t max)
{
    char *text = NULL;
    ssize_t n = file_slurp_at(r->ctx->root.fd, rel, max, &text);

    if (n < 0) {
        note_errno(r, rel, (int)-n, NULL);
        return NULL;
    }
    r->read_ok++;
    return text;
}

/* Reads a small file; false (noted) on failure. */
static bool read_small(struct reader *r, const char *rel, char *buf, size_t size)
{
    ssize_t n = file_read_at(r->ctx->root.fd, rel, buf, size);

    if (n < 0) {
        note_errno(r, rel, (int)-n, NULL);
        return false;
    }
    r->read_ok++;
    return true;
}

/* Reads a small file that a kernel or a tree may lack: false, noted unless it is absent. */
static bool read_optional(struct reader *r, const char *rel, char *buf, size_t size)
{
    ssize_t n = file_read_at(r->ctx->root.fd, rel, buf, size);

    if (n == -ENOENT)
        return false;
    if (n < 0) {
        note_errno(r, rel, (int)-n, NULL);
        return false;
    }
    r->read_ok++;
    return true;
}

/* ---- the kernel's counters ---- */

static void read_stat(struct reader *r, struct hostfs_counters *c, uint32_t *cpu_lines)
{
    char *text = slurp(r, "proc/stat", STAT_MAX_BYTES), *cause = NULL;

    if (text == NULL)
        return;
    if (hostfs_parse_stat(text, &c->cpu, cpu_lines, &cause) == 0)
        c->have_cpu = true;
    else
        note_malformed(r, "proc/stat", cause);
    free(text);
}

static void read_vmstat(struct reader *r, struct hostfs_counters *c)
{
    char *text = slurp(r, "proc/vmstat", MEMINFO_MAX_BYTES), *cause = NULL;

    if (text == NULL)
        return;
    if (hostfs_parse_vmstat(text, &c->pswpin, &c->pswpout, &cause) == 0)
        c->have_swap = true;
    else
        note_malformed(r, "proc/vmstat", cause);
    free(text);
}

static void read_diskstats(struct reader *r, struct hostfs_counters *c)
{
    char *text = slurp(r, "proc/diskstats", DISKSTATS_MAX_BYTES), *cause = NULL;
    int bad;

    if (text == NULL)
        return;
    bad = hostfs_parse_diskstats(text, &c->disks, &c->n_disks, &cause);
    c->have_disks = true;
    note_bad_lines(r, "proc/diskstats", bad, cause);
    free(text);
}

/* Missing PSI (kernels before 4.20, CONFIG_PSI off, psi=0) is normal: one note says so. */
static void read_psi(struct reader *r, struct hostfs_counters *c,
                     const struct hostfs_counters *prev)
{
    bool noted_missing = false;

    for (int i = 0; i < HOSTFS_PSI__COUNT; i++) {
        char buf[1024], *cause = NULL;
        ssize_t n;

        if (prev != NULL && !prev->have_psi[i])
            continue;
        n = file_read_at(r->ctx->root.fd, psi_files[i], buf, sizeof(buf));
        if (n == -ENOENT || n == -EOPNOTSUPP) {
            if (!noted_missing)
                collector_note(r->st, "PSI not available: /%s: %s", psi_files[i],
                               n == -ENOENT ? "missing (kernel before 4.20 or without CONFIG_PSI)"
                                            : "disabled (kernel booted with psi=0)");
            noted_missing = true;
            continue;
        }
        if (n < 0) {
            note_errno(r, psi_files[i], (int)-n, NULL);
            continue;
        }
        r->read_ok++;
        if (hostfs_parse_psi(buf, &c->psi[i], &cause) != 0) {
            note_malformed(r, psi_files[i], cause);
            continue;
        }
        c->have_psi[i] = true;
    }
}

/*
 * Reads the counters into c. With prev (the end of a window), only what prev had is read again:
 * what was missing at the start was noted then.
 */
static void read_counters(struct reader *r, struct hostfs_counters *c, uint32_t *cpu_lines,
                          const struct hostfs_counters *prev)
{
    memset(c, 0, sizeof(*c));
    c->t_us = time_mono_us();
    if (prev == NULL || prev->have_cpu)
        read_stat(r, c, cpu_lines);
    if (prev == NULL || prev->have_swap)
        read_vmstat(r, c);
    if (prev == NULL || prev->have_disks)
        read_diskstats(r, c);
    read_psi(r, c, prev);
}

static void set_psi_averages(const struct hostfs_counters *c, struct host_info *h)
{
    const struct hostfs_psi *p;

    if (c->have_psi[HOSTFS_PSI_CPU]) {
        p = &c->psi[HOSTFS_PSI_CPU];
        h->psi_cpu_some_avg10_pct = p->some.avg10;
        h->psi_cpu_some_avg60_pct = p->some.avg60;
        host_set_valid(h, HOST_S_PSI_CPU);
    }
    /* Memory and I/O always have a "full" line; one without is a truncated file. */
    if (c->have_psi[HOSTFS_PSI_MEM] && c->psi[HOSTFS_PSI_MEM].has_full) {
        p = &c->psi[HOSTFS_PSI_MEM];
        h->psi_mem_some_avg10_pct = p->some.avg10;
        h->psi_mem_some_avg60_pct = p->some.avg60;
        h->psi_mem_full_avg10_pct = p->full.avg10;
        h->psi_mem_full_avg60_pct = p->full.avg60;
        host_set_valid(h, HOST_S_PSI_MEM);
    }
    if (c->have_psi[HOSTFS_PSI_IO] && c->psi[HOSTFS_PSI_IO].has_full) {
        p = &c->psi[HOSTFS_PSI_IO];
        h->psi_io_some_avg10_pct = p->some.avg10;
        h->psi_io_some_avg60_pct = p->some.avg60;
        h->psi_io_full_avg10_pct = p->full.avg10;
        h->psi_io_full_avg60_pct = p->full.avg60;
        host_set_valid(h, HOST_S_PSI_IO);
    }
}

/* ---- single readings ---- */

static void read_cpus(struct reader *r, struct host_info *h, uint32_t cpu_lines)
{
    const char *rel = "sys/devices/system/cpu/online";
    char buf[4096], *cause = NULL;
    ssize_t n = file_read_at(r->ctx->root.fd, rel, buf, sizeof(buf));

    if (n >= 0) {
        r->read_ok++;
        if (hostfs_parse_cpu_list(buf, &h->cpus, &cause) == 0) {
            host_set_valid(h, HOST_S_CPUS);
            return;
        }
        note_malformed(r, rel, cause);
    } else if (n != -ENOENT) {
        note_errno(r, rel, (int)-n, NULL);
    }
    /* Without sysfs, /proc/stat has a line per online CPU. */
    if (cpu_lines > 0) {
        h->cpus = cpu_lines;
        host_set_valid(h, HOST_S_CPUS);
    } else if (n == -ENOENT) {
        note_errno(r, rel, ENOENT, " (and no cpuN lines in /proc/stat)");
    }
}

static void read_loadavg(struct reader *r, struct host_info *h)
{
    char buf[256], *cause = NULL;
    double load[3];

    if (!read_small(r, "proc/loadavg", buf, sizeof(buf)))
        return;
    if (hostfs_parse_loadavg(buf, load, &cause) != 0) {
        note_malformed(r, "proc/loadavg", cause);
        return;
    }
    h->load1 = load[0];
    h->load5 = load[1];
    h->load15 = load[2];
    host_set_valid(h, HOST_S_LOAD);
}

static void read_uptime(struct reader *r, struct host_info *h)
{
    char buf[256], *cause = NULL;

    if (!read_small(r, "proc/uptime", buf, sizeof(buf)))
        return;
    if (hostfs_parse_uptime(buf, &h->uptime_s, &cause) != 0) {
        note_malformed(r, "proc/uptime", cause);
        return;
    }
    host_set_valid(h, HOST_S_UPTIME);
}

static void read_kernel(struct reader *r, struct host_info *h)
{
    const char *rel = "proc/sys/kernel/osrelease";
    char buf[256];
    const char *release;

    if (!read_small(r, rel, buf, sizeof(buf)))
        return;
    release = str_ltrim(str_rtrim(buf));
    if (*release == '\0' || strchr(release, '\n') != NULL) {
        note_malformed(r, rel, xstrdup(*release ? "more than one line" : "empty"));
        return;
    }
    h->kernel_release = hostfs_text(release);
    host_set_valid(h, HOST_S_KERNEL);
}

/*
 * gpudoctor's own soft limits on open files and locked memory: a job started where it was
 * started has the same.
 */
static void read_limits(struct reader *r, struct host_info *h)
{
    const char *rel = "proc/self/limits";
    char buf[4096];

    if (!read_optional(r, rel, buf, sizeof(buf)))
        return;
    if (procfs_parse_nofile(buf, &h->open_files_limit))
        host_set_valid(h, HOST_S_NOFILE);
    else
        note_malformed(r, rel, xstrdup("no 'Max open files' line"));
    if (procfs_parse_memlock(buf, &h->memlock_limit))
        host_set_valid(h, HOST_S_MEMLOCK);
    else
        note_malformed(r, rel, xstrdup("no 'Max locked memory' line"));
}

/*
 * How often the machine was suspended since boot: a resume can leave CUDA unable to start
 * (stack.cuda-after-resume). A kernel without sleep support has no such file: left unknown.
 */
static void read_suspend(struct reader *r, struct host_info *h)
{
    const char *rel = "sys/power/suspend_stats/success";
    char buf[64];

    if (!read_optional(r, rel, buf, sizeof(buf)))
        return;
    str_rtrim(buf);
    if (!str_to_u32(buf, 10, &h->suspend_count)) {
        note_malformed(r, rel, xasprintf("\"%.20s\" is not a count", buf));
        return;
    }
    host_set_valid(h, HOST_S_SUSPEND);
}

/* An interface name as the kernel allows it, nothing a report could not print. */
static bool ifname_ok(const char *name)
{
    size_t n = strlen(name);

    return n > 0 && n < 16 &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789._-@:") == n;
}

/*
 * The network interfaces that are up: those NCCL_SOCKET_IFNAME can choose from. "unknown" is up
 * as far as anyone can say (virtual devices that report no state). No /sys/class/net (a fixture
 * tree): unknown, without a note.
 */
static void read_net(struct reader *r, struct host_info *h)
{
    const char *rel = "sys/class/net";
    char list[1024] = "", path[300], state[32];
    size_t len = 0;
    struct dirent *e;
    DIR *dir = dir_open_at(r->ctx->root.fd, rel);

    if (dir == NULL) {
        if (errno != ENOENT)
            note_errno(r, rel, errno, NULL);
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0 || !ifname_ok(e->d_name))
            continue;
        snprintf(path, sizeof(path), "%s/%s/operstate", rel, e->d_name);
        if (file_read_at(r->ctx->root.fd, path, state, sizeof(state)) < 0)
            continue;
        str_rtrim(state);
        if (strcmp(state, "up") != 0 && strcmp(state, "unknown") != 0)
            continue;
        if (len + strlen(e->d_name) + 2 > sizeof(list))
            break;
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", len ? " " : "", e->d_name);
    }
    closedir(dir);
    h->net_up = xstrdup(list);
    host_set_valid(h, HOST_S_NET);
}

/*
 * The boot's random id (every Linux since 2.6.29 has it). A tree without it (a fixture, a
 * capture) leaves it unknown without a note: it only tells reboots apart for the state file.
 */
static void read_boot_id(struct reader *r, struct host_info *h)
{
    const char *rel = "proc/sys/kernel/random/boot_id";
    char buf[128];
    const char *id;

    if (!read_optional(r, rel, buf, sizeof(buf)))
        return;
    id = str_ltrim(str_rtrim(buf));
    /* 36 characters: hex digits and dashes (a UUID); anything else is not a boot id */
    if (strlen(id) != 36 || strspn(id, "0123456789abcdef-") != 36) {
        note_malformed(r, rel, xstrdup("not a UUID"));
        return;
    }
    h->boot_id = xstrdup(id);
    host_set_valid(h, HOST_S_BOOT_ID);
}

/* ---- the container gpudoctor runs in ---- */

static bool entry_exists(struct reader *r, const char *rel)
{
    struct stat st;

    return fstatat(r->ctx->root.fd, rel, &st, 0) == 0;
}

/* systemd's /run/systemd/container: one word naming the manager ("docker", "lxc"). */
static char *container_word(const char *text)
{
    size_t n = strspn(text, "abcdefghijklmnopqrstuvwxyz0123456789_-");

    if (n == 0 || n > 32 || (text[n] != '\0' && text[n] != '\n'))
        return NULL;
    return xstrndup(text, n);
}

/*
 * Whether gpudoctor runs inside a container, from the marks the runtimes leave: docker's
 * /.dockerenv, podman's /run/.containerenv, the name systemd was given, the cgroup path of this
 * process (cgroup v1, or v2 without a cgroup namespace), a Kubernetes service-account mount. No
 * mark is "none": a container that leaves none of them (some cgroup-v2 setups) is not seen.
 */
static void read_container(struct reader *r, struct host_info *h)
{
    char buf[4096];
    ssize_t n;

    if (entry_exists(r, ".dockerenv")) {
        h->container = xstrdup("docker");
        h->container_sign = xstrdup("/.dockerenv");
    } else if (entry_exists(r, "run/.containerenv")) {
        h->container = xstrdup("podman");
        h->container_sign = xstrdup("/run/.containerenv");
    } else if ((n = file_read_at(r->ctx->root.fd, "run/systemd/container", buf, sizeof(buf))) >=
                   0 &&
               (h->container = container_word(buf)) != NULL) {
        h->container_sign = xstrdup("/run/systemd/container");
    } else {
        struct procfs_cgroup cg;

        n = file_read_at(r->ctx->root.fd, "proc/self/cgroup", buf, sizeof(buf));
        if (n >= 0 && procfs_parse_cgroup(buf, &cg) == 0) {
            if (cg.runtime != NULL || cg.pod_uid != NULL) {
                h->container = xstrdup(cg.runtime ? cg.runtime : "kubernetes");
                h->container_sign = xstrdup("/proc/self/cgroup");
            }
            procfs_cgroup_free(&cg);
        }
        if (h->container == NULL && entry_exists(r, "var/run/secrets/kubernetes.io")) {
            h->container = xstrdup("kubernetes");
            h->container_sign = xstrdup("/var/run/secrets/kubernetes.io");
        }
    }
    if (h->container == NULL)
        h->container = xstrdup("none");
    else
        host_set_valid(h, HOST_S_CONTAINER_SIGN);
    host_set_valid(h, HOST_S_CONTAINER);
}

/* ---- host memory errors (EDAC) ---- */

#define EDAC_DIR       "sys/devices/system/edac/mc"
#define EDAC_MAX_MC    64  /* memory controllers read */
#define EDAC_MAX_DIMMS 128 /* DIMM (or rank) directories read per controller */
#define EDAC_LIST_MAX  512 /* bytes of mem_ue_dimms */

/* "mc3", "dimm12", "rank0": prefix then digits only. */
static bool numbered(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);

    return strncmp(name, prefix, n) == 0 && name[n] != '\0' && strlen(name) <= 16 &&
           strspn(name + n, "0123456789") == strlen(name + n);
}

/* One counter file (a decimal number); false, with a note unless it is absent, otherwise. */
static bool edac_count(struct reader *r, const char *rel, uint64_t *out)
{
    char buf[64];

    if (!read_optional(r, rel, buf, sizeof(buf)))
        return false;
    if (!str_to_u64(str_rtrim(buf), 10, out)) {
        note_malformed(r, rel, xasprintf("expected a count, got \"%.32s\"", buf));
        return false;
    }
    return true;
}

/* Appends "LABEL (N)" for each DIMM of controller mc with uncorrectable errors, bounded. */
static void edac_dimms(struct reader *r, const char *mc, char *list, size_t size)
{
    char rel[600], buf[128];
    struct dirent *e;
    size_t seen = 0;
    DIR *dir;

    snprintf(rel, sizeof(rel), EDAC_DIR "/%s", mc);
    if ((dir = dir_open_at(r->ctx->root.fd, rel)) == NULL)
        return;
    while ((e = readdir(dir)) != NULL && seen < EDAC_MAX_DIMMS) {
        uint64_t ue;
        char *label;
        size_t len = strlen(list);

        if (!numbered(e->d_name, "dimm") && !numbered(e->d_name, "rank"))
            continue;
        seen++;
        snprintf(rel, sizeof(rel), EDAC_DIR "/%s/%s/dimm_ue_count", mc, e->d_name);
        if (!edac_count(r, rel, &ue) || ue == 0)
            continue;
        snprintf(rel, sizeof(rel), EDAC_DIR "/%s/%s/dimm_label", mc, e->d_name);
        if (file_read_at(r->ctx->root.fd, rel, buf, sizeof(buf)) < 0 ||
            *str_ltrim(str_rtrim(buf)) == '\0')
            snprintf(buf, sizeof(buf), "%.16s/%.16s", mc, e->d_name);
        buf[64] = '\0'; /* a label is short; a long one is cut */
        label = hostfs_text(str_ltrim(buf));
        snprintf(list + len, size - len, "%s%s (%" PRIu64 ")", len ? ", " : "", label, ue);
        free(label);
    }
    closedir(dir);
}

/*
 * The kernel's EDAC counters of host memory errors: every memory controller's corrected and
 * uncorrectable counts, the DIMMs that had uncorrectable ones. No EDAC directory (no driver for
 * this memory controller, a fixture): unknown, without a note.
 */
static void read_edac(struct reader *r, struct host_info *h)
{
    DIR *dir = dir_open_at(r->ctx->root.fd, EDAC_DIR);
    char rel[600], list[EDAC_LIST_MAX] = "";
    struct dirent *e;

    if (dir == NULL) {
        if (errno != ENOENT)
            note_errno(r, EDAC_DIR, errno, NULL);
        return;
    }
    h->edac_controllers = 0;
    h->mem_ue_count = h->mem_ce_count = 0;
    h->edac_since_s = -1;
    while ((e = readdir(dir)) != NULL && h->edac_controllers < EDAC_MAX_MC) {
        uint64_t ue, ce, since;

        if (!numbered(e->d_name, "mc"))
            continue;
        snprintf(rel, sizeof(rel), EDAC_DIR "/%s/ue_count", e->d_name);
        if (!edac_count(r, rel, &ue))
            continue;
        snprintf(rel, sizeof(rel), EDAC_DIR "/%s/ce_count", e->d_name);
        if (!edac_count(r, rel, &ce))
            continue;
        h->edac_controllers++;
        h->mem_ue_count += ue;
        h->mem_ce_count += ce;
        snprintf(rel, sizeof(rel), EDAC_DIR "/%s/seconds_since_reset", e->d_name);
        if (edac_count(r, rel, &since) && (h->edac_since_s < 0 || (double)since < h->edac_since_s))
            h->edac_since_s = (double)since;
        if (ue > 0)
            edac_dimms(r, e->d_name, list, sizeof(list));
    }
    closedir(dir);
    if (h->edac_controllers == 0)
        return; /* the directory without a readable controller: nothing counted */
    host_set_valid(h, HOST_S_EDAC);
    if (list[0] != '\0') {
        h->mem_ue_dimms = xstrdup(list);
        host_set_valid(h, HOST_S_EDAC_DIMMS);
    }
}

/* MemAvailable into *avail when the kernel has it; the rest into h when h is not NULL. */
static bool read_meminfo(struct reader *r, struct host_info *h, uint64_t *avail)
{
    const unsigned basics = HOSTFS_MEM_TOTAL | HOSTFS_SWAP_TOTAL | HOSTFS_SWAP_FREE;
    char *text = slurp(r, "proc/meminfo", MEMINFO_MAX_BYTES), *cause = NULL;
    struct hostfs_meminfo m;
    bool malformed;

    if (text == NULL)
        return false;
    /* A bad line spoils only its own value. */
    malformed = hostfs_parse_meminfo(text, &m, &cause) != 0;
    if (malformed)
        note_malformed(r, "proc/meminfo", cause);
    free(text);
    if (h != NULL) {
        if (m.have & HOSTFS_MEM_TOTAL) {
            h->mem_total_bytes = m.mem_total;
            host_set_valid(h, HOST_S_MEM);
        }
        if ((m.have & HOSTFS_SWAP_TOTAL) && (m.have & HOSTFS_SWAP_FREE)) {
            h->swap_total_bytes = m.swap_total;
            h->swap_free_bytes = m.swap_free;
            host_set_valid(h, HOST_S_SWAP);
        }
        if (!malformed && (m.have & basics) != basics)
            collector_note(r->st, "/proc/meminfo: MemTotal, SwapTotal or SwapFree missing "
                                  "(truncated?)");
        else if (!malformed && !(m.have & HOSTFS_MEM_AVAILABLE))
            collector_note(r->st, "/proc/meminfo: no MemAvailable (kernel before 3.14)");
    }
    if (!(m.have & HOSTFS_MEM_AVAILABLE))
        return false;
    *avail = m.mem_available;
    return true;
}

/* ---- free space ---- */

/* The mount table of one mount namespace, read once. */
struct mount_ns {
    char *key;  /* the namespace link ("mnt:[4026531840]"), or "" for gpudoctor's own */
    char *base; /* prefix that reaches into it: "" or "proc/PID/root" */
    struct hostfs_mounts mounts;
    bool have_mounts;
};

struct fs_index {
    struct reader *r;
    struct host_info *h;
    size_t cap_fs;
    dev_t *keys; /* per h->fs entry: the device that identifies the filesystem */
    size_t cap_keys;
    struct mount_ns *ns;
    size_t n_ns, cap_ns;
};

static struct mount_ns *ns_load(struct fs_index *ix, const char *key, const char *base,
                                const char *mountinfo_rel)
{
    struct mount_ns *ns;
    char *text, *cause = NULL;
    int bad;

    for (size_t i = 0; i < ix->n_ns; i++) {
        if (strcmp(ix->ns[i].key, key) == 0)
            return &ix->ns[i];
    }
    xgrow(&ix->ns, &ix->cap_ns, ix->n_ns + 1, sizeof(*ix->ns));
    ns = &ix->ns[ix->n_ns++];
    memset(ns, 0, sizeof(*ns));
    ns->key = xstrdup(key);
    ns->base = xstrdup(base);
    text = slurp(ix->r, mountinfo_rel, MOUNTINFO_MAX_BYTES);
    if (text == NULL)
        return ns;
    bad = hostfs_parse_mountinfo(text, &ns->mounts, &cause);
    note_bad_lines(ix->r, mountinfo_rel, bad, cause);
    ns->have_mounts = true;
    free(text);
    return ns;
}

/*
 * The mount namespace a process's cwd should be resolved in. A process in a container sees its
 * own mounts: its cwd is reached through /proc/PID/root and its mount point found in
 * /proc/PID/mountinfo. When the namespaces cannot be compared (no /proc/PID/ns: a fixture
 * tree, a process that exited), the path is taken as ours.
 */
static struct mount_ns *ns_for(struct fs_index *ix, int32_t pid)
{
    int fd = ix->r->ctx->root.fd;
    char self[64], theirs[64], rel[64], base[64];

    if (pid > 0 && file_readlink_at(fd, "proc/self/ns/mnt", self, sizeof(self)) > 0) {
        snprintf(rel, sizeof(rel), "proc/%d/ns/mnt", (int)pid);
        if (file_readlink_at(fd, rel, theirs, sizeof(theirs)) > 0 && strcmp(self, theirs) != 0) {
            snprintf(base, sizeof(base), "proc/%d/root", (int)pid);
            snprintf(rel, sizeof(rel), "proc/%d/mountinfo", (int)pid);
            return ns_load(ix, theirs, base, rel);
        }
    }
    return ns_load(ix, "", "", "proc/self/mountinfo");
}

static bool mul_bytes(uint64_t count, uint64_t unit, uint64_t *out)
{
    return !__builtin_mul_overflow(count, unit, out) && *out <= INT64_MAX;
}

static void fs_add_path(struct host_fs *f, const char *path)
{
    char *clean = hostfs_text(path);

    for (size_t i = 0; i < f->n_paths; i++) {
        if (strcmp(f->paths[i], clean) == 0) {
            free(clean);
            return;
        }
    }
    f->paths = xreallocarray(f->paths, f->n_paths + 1, sizeof(*f->paths));
    f->paths[f->n_paths++] = clean;
}

/* A filesystem's size and what an unprivileged user may still write, in bytes. */
static bool vfs_bytes(const struct statvfs *v, uint64_t *total, uint64_t *avail)
{
    uint64_t unit = v->f_frsize ? v->f_frsize : v->f_bsize;

    return mul_bytes(v->f_blocks, unit, total) && mul_bytes(v->f_bavail, unit, avail);
}

/* path as a process in ns sees it, relative to the root fd ("proc/PID/root/..." in another). */
static char *ns_path(const struct mount_ns *ns, const char *path)
{
    return *ns->base ? xasprintf("%s%s", ns->base, path) : xstrdup(sysroot_rel(path));
}

static void fs_fill(struct host_fs *f, const struct hostfs_mount *m, const struct statvfs *v)
{
    if (m != NULL) {
        f->mount = hostfs_text(m->mount_point);
        f->device = hostfs_text(m->source);
        f->fstype = hostfs_text(m->fstype);
        f->valid |= UINT64_C(1) << FS_S_MOUNT;
    }
    if (vfs_bytes(v, &f->total_bytes, &f->avail_bytes)) {
        f->readonly = (v->f_flag & ST_RDONLY) != 0;
        f->valid |= UINT64_C(1) << FS_S_SPACE | UINT64_C(1) << FS_S_AVAIL;
    }
    /* Some filesystems (btrfs, vfat, network ones) do not count inodes: 0 means unknown. */
    if (v->f_files > 0 && v->f_files <= INT64_MAX && v->f_favail <= INT64_MAX) {
        f->inodes_total = v->f_files;
        f->inodes_avail = v->f_favail;
        f->valid |= UINT64_C(1) << FS_S_INODES;
    }
}

/*
 * Looks up the filesystem holding path (as the process pid sees it; 0 for gpudoctor itself) and
 * adds it, or adds the path to the entry for the same filesystem. Free space comes from fstatvfs
 * on an O_PATH descriptor opened relative to the root fd: the same call serves a live root and a
 * fixture tree (statvfs on ROOT/path would need string surgery on the root and the path).
 */
static void fs_lookup(struct fs_index *ix, const char *path, int32_t pid)
{
    struct mount_ns *ns = ns_for(ix, pid);
    const struct hostfs_mount *m = ns->have_mounts ? hostfs_mount_find(&ns->mounts, path) : NULL;
    struct host_info *h = ix->h;
    struct statvfs v;
    struct stat st;
    char *rel;
    dev_t key;
    int fd;

    rel = ns_path(ns, path);
    fd = openat(ix->r->ctx->root.fd, rel, O_PATH | O_CLOEXEC);
    if (fd < 0 || fstatvfs(fd, &v) != 0 || fstat(fd, &st) != 0) {
        const char *why = strerror(errno);
        char *text = hostfs_text(rel);

        if (pid > 0)
            collector_note(ix->r->st, "free space of the cwd of pid %d: /%s: %s", (int)pid, text,
                           why);
        else
            collector_note(ix->r->st, "free space of /%s: %s", text, why);
        free(text);
        if (fd >= 0)
            close(fd);
        free(rel);
        return;
    }
    close(fd);
    free(rel);
    /* One entry per filesystem: mountinfo's device when known (fixtures define it), else st_dev. */
    key = m != NULL ? makedev(m->major, m->minor) : st.st_dev;
    for (size_t i = 0; i < h->n_fs; i++) {
        if (ix->keys[i] == key) {
            fs_add_path(&h->fs[i], path);
            return;
        }
    }
    xgrow(&h->fs, &ix->cap_fs, h->n_fs + 1, sizeof(*h->fs));
    xgrow(&ix->keys, &ix->cap_keys, h->n_fs + 1, sizeof(*ix->keys));
    ix->keys[h->n_fs] = key;
    memset(&h->fs[h->n_fs], 0, sizeof(*h->fs));
    fs_fill(&h->fs[h->n_fs], m, &v);
    fs_add_path(&h->fs[h->n_fs], path);
    h->n_fs++;
}

/*
 * The size and free space of /dev/shm as pid sees it (0: gpudoctor itself): POSIX shared memory,
 * a tmpfs of its own in each container. Returns false when it cannot be read; a path that is not
 * there (a fixture tree, a process whose root is not ours to read) says nothing and is no note.
 */
static bool shm_read(struct fs_index *ix, int32_t pid, uint64_t *total, uint64_t *avail)
{
    char *rel = ns_path(ns_for(ix, pid), "/dev/shm");
    struct statvfs v;
    int fd = openat(ix->r->ctx->root.fd, rel, O_PATH | O_DIRECTORY | O_CLOEXEC);
    bool ok = fd >= 0 && fstatvfs(fd, &v) == 0;

    if (!ok && errno != ENOENT && errno != EACCES && errno != ESRCH) {
        char *text = hostfs_text(rel);

        collector_note(ix->r->st, "size of /%s: %s", text, strerror(errno));
        free(text);
    }
    if (fd >= 0)
        close(fd);
    free(rel);
    return ok && vfs_bytes(&v, total, avail);
}

/* /dev/shm here and as every GPU process sees it (a job's container has its own). */
static void read_shm(struct snapshot *s, struct fs_index *ix)
{
    if (shm_read(ix, 0, &s->host.shm_total_bytes, &s->host.shm_avail_bytes))
        host_set_valid(&s->host, HOST_S_SHM);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        struct proc *p = &s->procs.procs[i];

        /* its cwd read: its root is ours to read too (the same permission check) */
        if (p->n_gpus == 0 || !(p->valid & PROC_BIT(PROC_S_CWD)))
            continue;
        if (shm_read(ix, p->pid, &p->shm_total_bytes, &p->shm_avail_bytes))
            p->valid |= PROC_BIT(PROC_S_SHM) | PROC_BIT(PROC_S_SHM_AVAIL);
    }
}

/* Free space of /, /tmp and every GPU process's working directory. */
static void read_filesystems(struct reader *r, struct snapshot *s, struct fs_index *ix)
{
    memset(ix, 0, sizeof(*ix));
    ix->r = r;
    ix->h = &s->host;
    fs_lookup(ix, "/", 0);
    fs_lookup(ix, "/tmp", 0);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        if (p->cwd != NULL && p->cwd[0] == '/')
            fs_lookup(ix, p->cwd, p->pid);
    }
    host_set_valid(&s->host, HOST_S_FS);
}

static void fs_index_free(struct fs_index *ix)
{
    for (size_t i = 0; i < ix->n_ns; i++) {
        free(ix->ns[i].key);
        free(ix->ns[i].base);
        hostfs_mounts_free(&ix->ns[i].mounts);
    }
    free(ix->ns);
    free(ix->keys);
}

/* ---- disks ---- */

/* Whether a filesystem we report sits directly on this device (an LVM volume, a RAID array). */
static bool backs_filesystem(const struct fs_index *ix, const struct hostfs_diskstat *d)
{
    for (size_t i = 0; i < ix->h->n_fs; i++) {
        if (ix->keys[i] == makedev(d->major, d->minor))
            return true;
    }
    return false;
}

/*
 * Whole disks from /proc/diskstats: those /sys/block lists (partitions are not there), less the
 * virtual ones (loop, ram, zram, dm-, md, ...) unless a filesystem we report sits on them.
 */
static void read_disks(struct reader *r, const struct hostfs_counters *c, const struct fs_index *ix,
                       struct host_info *h)
{
    int fd = r->ctx->root.fd;
    bool have_sys_block = faccessat(fd, "sys/block", F_OK, 0) == 0;

    if (!have_sys_block)
        collector_note(r->st, "/sys/block: %s: partitions cannot be told from disks, all listed",
                       strerror(errno));
    h->disks = xcalloc(c->n_disks + 1, sizeof(*h->disks));
    for (size_t i = 0; i < c->n_disks; i++) {
        const struct hostfs_diskstat *d = &c->disks[i];
        struct host_disk *out;
        char rel[96], buf[32];
        ssize_t n;

        snprintf(rel, sizeof(rel), "sys/block/%s", d->name);
        if (have_sys_block && faccessat(fd, rel, F_OK, 0) != 0)
            continue;
        if (hostfs_disk_is_virtual(d->name) && !backs_filesystem(ix, d))
            continue;
        out = &h->disks[h->n_disks++];
        out->name = hostfs_text(d->name);
        snprintf(rel, sizeof(rel), "sys/block/%s/queue/rotational", d->name);
        n = file_read_at(fd, rel, buf, sizeof(buf));
        if (n >= 0 && (strcmp(str_rtrim(buf), "0") == 0 || strcmp(buf, "1") == 0)) {
            out->rotational = buf[0] == '1';
            out->valid |= UINT64_C(1) << DISK_S_ROTATIONAL;
        } else if (n >= 0) {
            note_malformed(r, rel, xasprintf("expected 0 or 1, got \"%.32s\"", buf));
        } else if (have_sys_block) {
            note_errno(r, rel, (int)-n, NULL);
        }
    }
    host_set_valid(h, HOST_S_DISKS);
}

/* ---- the collector ---- */

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_HOST];
    struct host_state *hs = xcalloc(1, sizeof(*hs));
    struct reader r = { ctx, st, 0, 0, 0 };
    struct host_info *h = &s->host;
    struct fs_index ix;
    uint32_t cpu_lines = 0;
    uint64_t avail;

    collector_set(st, CS_OK, NULL);
    read_counters(&r, &hs->first, &cpu_lines, NULL);
    hs->prev = hs->first.cpu;
    hs->prev_us = hs->first.t_us;
    set_psi_averages(&hs->first, h);
    read_cpus(&r, h, cpu_lines);
    read_loadavg(&r, h);
    read_uptime(&r, h);
    read_kernel(&r, h);
    read_boot_id(&r, h);
    read_limits(&r, h);
    read_suspend(&r, h);
    read_net(&r, h);
    read_container(&r, h);
    read_edac(&r, h);
    if (read_meminfo(&r, h, &avail)) {
        h->mem_available_bytes = avail;
        host_set_valid(h, HOST_S_MEM_AVAILABLE);
        hs->have_mem_available = true;
    }
    read_filesystems(&r, s, &ix);
    read_shm(s, &ix);
    if (hs->first.have_disks)
        read_disks(&r, &hs->first, &ix, h);
    fs_index_free(&ix);
    if (r.read_ok == 0) {
        collector_set(st, r.denied > 0 && r.failed == 0 ? CS_NO_PERMISSION : CS_UNAVAILABLE,
                      "nothing could be read under %s/proc", ctx->root.path);
        /* a tree with no /proc (or none readable) is not shown to be no container */
        free(h->container);
        free(h->container_sign);
        h->container = h->container_sign = NULL;
        h->valid &= ~((UINT64_C(1) << HOST_S_CONTAINER) | (UINT64_C(1) << HOST_S_CONTAINER_SIGN));
    }
    return hs;
}

/*
 * Each sample: CPU since the previous sample, and MemAvailable. Only what start() could read is
 * read again; a failure now is noted once (a file that vanishes mid-run).
 */
static void sample(struct collect_ctx *ctx, void *state, struct snapshot *s, struct sample *smp)
{
    struct host_state *hs = state;
    struct collector_status scratch = { .state = CS_OK };
    struct reader r = { ctx, &scratch, 0, 0, 0 };
    struct host_sample *out = &smp->host;
    struct hostfs_counters c;
    uint32_t cpu_lines;

    memset(&c, 0, sizeof(c));
    c.t_us = time_mono_us();
    if (hs->first.have_cpu)
        read_stat(&r, &c, &cpu_lines);
    /* Too soon after the last reading to be more than noise: measure from that one next time. */
    if (c.have_cpu && c.t_us - hs->prev_us >= MIN_SAMPLE_US) {
        if (hostfs_cpu_pct(&hs->prev, &c.cpu, &out->cpu_busy_pct, &out->cpu_iowait_pct,
                           &out->cpu_steal_pct))
            out->valid |= (UINT64_C(1) << HOST_SMP_S_CPU) | (UINT64_C(1) << HOST_SMP_S_CPU_BUSY);
        hs->prev = c.cpu;
        hs->prev_us = c.t_us;
    }
    if (hs->have_mem_available && read_meminfo(&r, NULL, &out->mem_available_bytes))
        out->valid |= UINT64_C(1) << HOST_SMP_S_MEM;
    if (scratch.n_notes > 0 && !hs->sample_noted) {
        collector_note(&s->collectors[COLLECTOR_HOST], "samples: %s", scratch.notes[0]);
        hs->sample_noted = true;
    }
    collector_status_free(&scratch);
}

/* OOM kills come from the kernel-log collector's events: counted, never parsed here. */
static void count_oom_kills(struct snapshot *s)
{
    const struct collector_status *klog = &s->collectors[COLLECTOR_KLOG];
    struct host_info *h = &s->host;

    if (klog->state != CS_OK && klog->state != CS_PARTIAL) {
        collector_note(&s->collectors[COLLECTOR_HOST],
                       "OOM kills unknown: the kernel log was not read (kernel_log: %s)",
                       collector_state_names[klog->state]);
        return;
    }
    h->oom_kills = 0;
    for (size_t i = 0; i < s->driver.n_events; i++) {
        if (s->driver.events[i].kind == KLOG_OOM_KILL)
            h->oom_kills++;
    }
    host_set_valid(h, HOST_S_OOM);
}

static void finish(struct collect_ctx *ctx, void *state, struct snapshot *s)
{
    struct host_state *hs = state;
    struct collector_status *st = &s->collectors[COLLECTOR_HOST];

    /* An instant reading has no rates: they stay invalid rather than read as 0. */
    if (hs != NULL && ctx->opts->window_ms > 0 && st->state != CS_UNAVAILABLE &&
        st->state != CS_NO_PERMISSION) {
        struct reader r = { ctx, st, 0, 0, 0 };
        struct hostfs_counters end;
        uint32_t cpu_lines;

        read_counters(&r, &end, &cpu_lines, &hs->first);
        hostfs_apply_window(&hs->first, &end, &s->host);
        hostfs_counters_free(&end);
    }
    if (st->state != CS_UNAVAILABLE && st->state != CS_NO_PERMISSION)
        count_oom_kills(s);
    if (hs != NULL)
        hostfs_counters_free(&hs->first);
    free(hs);
}

const struct collector_ops collector_host = { COLLECTOR_HOST, start, sample, finish };
