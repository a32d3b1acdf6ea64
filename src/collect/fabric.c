/*
 * The NVSwitch and Fabric Manager collector: the NVSwitches on the PCI bus (NVIDIA's vendor id,
 * class "bridge, other"), and, where there is one or Fabric Manager is installed, which of them
 * the NVSwitch driver took (/proc/driver/nvidia-nvswitch, with their BIOS versions), whether Fabric
 * Manager is installed (its program, its Debian package and version), runs (a process named
 * nv-fabricmanager: /proc, no shell, no systemctl), is enabled at boot (systemd's wants links),
 * and what its log says since it last started. Nothing is run and nothing is written.
 * docs/fabric.md describes the sources; SXid lines are read by the kernel-log collector.
 */
#include "collect/collect.h"
#include "collect/fabric-parse.h"
#include "collect/hostfs.h"
#include "collect/sysfs-pci.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PCI_DIR            "sys/bus/pci/devices"
#define DPKG_STATUS        "var/lib/dpkg/status"
#define FM_CONFIG          "usr/share/nvidia/nvswitch/fabricmanager.cfg"
#define FM_LOG_DEFAULT     "/var/log/fabricmanager.log"
#define FM_UNIT            "nvidia-fabricmanager.service"
#define SYSTEMD_ETC        "etc/systemd/system"
#define NVSW_PROC          "proc/driver/nvidia-nvswitch"
#define NVSW_DEVICES       NVSW_PROC "/devices"
#define NVSW_MAX_ENTRIES   4096
#define NVSW_INFO_MAX      64 /* "BIOS Version: " and a version: 35 bytes at most */
#define MAX_PCI_DEVICES    4096
#define MAX_PROCS          (1u << 20)
#define DPKG_MAX_BYTES     (64u << 20)
#define LOG_TAIL_BYTES     (4u << 20)
#define NVIDIA_VENDOR      0x10de
#define CLASS_BRIDGE_OTHER 0x0680 /* NVSwitches: class 0x068000 */

static const char *const fm_programs[] = { "usr/bin/nv-fabricmanager",
                                           "usr/sbin/nv-fabricmanager" };

/* A sysfs attribute "0x10de\n" as a number; false when absent or not one. */
static bool read_hex(int rootfd, const char *rel, uint32_t *out)
{
    char buf[32];

    if (file_read_at(rootfd, rel, buf, sizeof(buf)) < 0)
        return false;
    str_rtrim(buf);
    return str_starts(buf, "0x") && str_to_u32(buf + 2, 16, out);
}

static int switch_cmp(const void *a, const void *b)
{
    return strcmp(((const struct fabric_switch *)a)->pci_address,
                  ((const struct fabric_switch *)b)->pci_address);
}

static void read_switches(struct collect_ctx *ctx, struct collector_status *st,
                          struct fabric_info *f)
{
    DIR *d = dir_open_at(ctx->root.fd, PCI_DIR);
    size_t cap = 0, seen = 0;
    struct dirent *de;

    if (d == NULL) {
        collector_note(st, "/%s: %s: cannot tell whether there are NVSwitches", PCI_DIR,
                       strerror(errno));
        return;
    }
    while ((de = readdir(d)) != NULL && seen++ < MAX_PCI_DEVICES) {
        char rel[320];
        uint32_t vendor, class, device = 0;
        struct fabric_switch *sw;

        if (!sysfs_pci_is_address(de->d_name))
            continue;
        snprintf(rel, sizeof(rel), PCI_DIR "/%s/vendor", de->d_name);
        if (!read_hex(ctx->root.fd, rel, &vendor) || vendor != NVIDIA_VENDOR)
            continue;
        snprintf(rel, sizeof(rel), PCI_DIR "/%s/class", de->d_name);
        if (!read_hex(ctx->root.fd, rel, &class) || class >> 8 != CLASS_BRIDGE_OTHER)
            continue;
        if (f->n_switches == FABRIC_MAX_SWITCHES) {
            collector_note(st, "more than %d NVSwitches: the rest are not listed",
                           FABRIC_MAX_SWITCHES);
            break;
        }
        snprintf(rel, sizeof(rel), PCI_DIR "/%s/device", de->d_name);
        read_hex(ctx->root.fd, rel, &device);
        xgrow(&f->switches, &cap, f->n_switches + 1, sizeof(*f->switches));
        sw = &f->switches[f->n_switches++];
        memset(sw, 0, sizeof(*sw));
        sw->pci_address = xstrdup(de->d_name);
        sw->device_id = device;
    }
    closedir(d);
    if (f->n_switches > 1)
        qsort(f->switches, f->n_switches, sizeof(*f->switches), switch_cmp);
    f->valid |= UINT64_C(1) << FABRIC_S_SWITCHES;
}

/* The BIOS version of the switch whose driver entry is name, from its information file. */
static void read_information(struct collect_ctx *ctx, struct collector_status *st,
                             struct fabric_switch *sw, const char *name)
{
    char rel[320], buf[NVSW_INFO_MAX], version[FABRIC_BIOS_VERSION_SIZE];
    ssize_t n;

    snprintf(rel, sizeof(rel), NVSW_DEVICES "/%s/information", name);
    n = file_read_at(ctx->root.fd, rel, buf, sizeof(buf));
    if (n < 0) {
        collector_note(st, "/%s: %s: its BIOS version is not known", rel,
                       n == -EFBIG ? "longer than a BIOS version line" : strerror((int)-n));
        return;
    }
    if ((size_t)n != strlen(buf)) {
        collector_note(st, "/%s: malformed: holds a NUL byte", rel);
        return;
    }
    switch (fabric_parse_nvswitch_info(buf, version)) {
    case FABRIC_NVSW_INFO_VERSION:
        sw->bios_version = xstrdup(version);
        sw->valid |= UINT64_C(1) << FSW_S_BIOS;
        break;
    case FABRIC_NVSW_INFO_NA:
        break; /* the driver could not read it: no version, and nothing wrong with the file */
    default: {
        char *got = str_excerpt(buf, 40);

        collector_note(st,
                       "/%s: malformed: expected \"BIOS Version: \" and a version such as "
                       "96.10.6d.00.01 or N/A, got \"%s\"",
                       rel, got);
        free(got);
        break;
    }
    }
}

/*
 * Which NVSwitches the NVSwitch driver took: the nvidia module makes /proc/driver/nvidia-nvswitch
 * with a devices/ directory when its NVSwitch part starts, and an entry devices/ADDR for each
 * switch whose probe succeeded (a switch it put in its degraded state too). A switch whose probe
 * failed has none, and no driver. Entries for an address that is no NVSwitch on the bus are
 * ignored, with one note: they say nothing about the switches the rules judge.
 */
static void read_nvswitch_view(struct collect_ctx *ctx, struct collector_status *st,
                               struct fabric_info *f)
{
    const char **addrs = xcalloc(f->n_switches ? f->n_switches : 1, sizeof(*addrs));
    bool *bound = xcalloc(f->n_switches ? f->n_switches : 1, sizeof(*bound));
    size_t seen = 0, n_stray = 0, n_bad = 0;
    char *first_stray = NULL, *first_bad = NULL;
    struct dirent *de;
    DIR *d;

    d = dir_open_at(ctx->root.fd, NVSW_PROC);
    if (d == NULL) {
        if (errno == ENOENT) {
            f->nvswitch_proc = FABRIC_NVSW_ABSENT;
        } else {
            collector_note(st, "/%s: %s: which NVSwitches its driver took is not known", NVSW_PROC,
                           strerror(errno));
            f->nvswitch_proc = FABRIC_NVSW_UNREADABLE;
        }
        f->valid |= UINT64_C(1) << FABRIC_S_NVSW;
        goto out;
    }
    closedir(d);
    d = dir_open_at(ctx->root.fd, NVSW_DEVICES);
    if (d == NULL) {
        collector_note(st, "/%s: %s: which NVSwitches its driver took is not known", NVSW_DEVICES,
                       strerror(errno));
        f->nvswitch_proc = FABRIC_NVSW_UNREADABLE;
        f->valid |= UINT64_C(1) << FABRIC_S_NVSW;
        goto out;
    }
    for (size_t i = 0; i < f->n_switches; i++)
        addrs[i] = f->switches[i].pci_address;
    while ((de = readdir(d)) != NULL && seen++ < NVSW_MAX_ENTRIES) {
        int k;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        k = fabric_nvswitch_entry(de->d_name, addrs, f->n_switches);
        if (k >= 0) {
            if (!bound[k])
                read_information(ctx, st, &f->switches[k], de->d_name);
            bound[k] = true;
        } else if (k == FABRIC_NVSW_ENTRY_STRAY) {
            if (n_stray++ == 0)
                first_stray = xstrdup(de->d_name);
        } else if (n_bad++ == 0) {
            first_bad = str_excerpt(de->d_name, 40);
        }
    }
    closedir(d);
    if (n_stray > 0)
        collector_note(st, "/%s: %zu entr%s for no NVSwitch on the PCI bus (the first %s): ignored",
                       NVSW_DEVICES, n_stray, n_stray == 1 ? "y" : "ies", first_stray);
    if (n_bad > 0)
        collector_note(st,
                       "/%s: %zu entr%s not named as the driver names a device (the first "
                       "\"%s\"): ignored",
                       NVSW_DEVICES, n_bad, n_bad == 1 ? "y" : "ies", first_bad);
    for (size_t i = 0; i < f->n_switches; i++) {
        f->switches[i].driver_bound = bound[i];
        f->switches[i].valid |= UINT64_C(1) << FSW_S_DRIVER;
    }
    f->nvswitch_proc = FABRIC_NVSW_PRESENT;
    f->valid |= UINT64_C(1) << FABRIC_S_NVSW;
out:
    free(first_stray);
    free(first_bad);
    free(bound);
    free(addrs);
}

static void read_binary(struct collect_ctx *ctx, struct fabric_info *f)
{
    for (size_t i = 0; i < ARRAY_SIZE(fm_programs); i++)
        if (faccessat(ctx->root.fd, fm_programs[i], F_OK, AT_SYMLINK_NOFOLLOW) == 0)
            f->fm_binary = true;
    f->valid |= UINT64_C(1) << FABRIC_S_BINARY;
}

/* The installed package and its version, from dpkg's database (megabytes: read only here). */
static void read_package(struct collect_ctx *ctx, struct collector_status *st,
                         struct fabric_info *f)
{
    char *text = NULL, *pkg, *ver;
    ssize_t n;

    n = file_slurp_text_at(ctx->root.fd, DPKG_STATUS, DPKG_MAX_BYTES, &text);
    if (n == -ENOENT) {
        free(text);
        return; /* not a Debian system: the program alone says whether it is installed */
    }
    if (n < 0) {
        collector_note(st, "/%s: %s: the installed package is not known", DPKG_STATUS,
                       n == -EFBIG    ? "larger than 64 MiB"
                       : n == -EILSEQ ? "holds a NUL byte"
                                      : strerror((int)-n));
        free(text);
        return;
    }
    f->valid |= UINT64_C(1) << FABRIC_S_PACKAGE;
    if (fabric_parse_dpkg(text, &pkg, &ver) == 1) {
        f->fm_packaged = true;
        f->fm_package = hostfs_textn(pkg, strnlen(pkg, 64));
        f->fm_package_version = hostfs_textn(ver, strnlen(ver, 64));
        f->fm_version = fabric_upstream_version(f->fm_package_version);
        f->fm_version_from = xstrdup("dpkg");
        f->valid |= UINT64_C(1) << FABRIC_S_VERSION;
        free(pkg);
        free(ver);
    }
    free(text);
}

static void read_process(struct collect_ctx *ctx, struct collector_status *st,
                         struct fabric_info *f)
{
    DIR *d = dir_open_at(ctx->root.fd, "proc");
    size_t seen = 0;
    struct dirent *de;

    if (d == NULL) {
        collector_note(st, "/proc: %s: cannot tell whether Fabric Manager runs", strerror(errno));
        return;
    }
    while ((de = readdir(d)) != NULL && seen < MAX_PROCS) {
        char rel[64], comm[64];
        uint32_t pid;

        if (strspn(de->d_name, "0123456789") != strlen(de->d_name) ||
            !str_to_u32(de->d_name, 10, &pid) || pid == 0 || pid > INT32_MAX)
            continue;
        seen++;
        snprintf(rel, sizeof(rel), "proc/%s/comm", de->d_name);
        /* A process that ended since the listing is no Fabric Manager. */
        if (file_read_at(ctx->root.fd, rel, comm, sizeof(comm)) < 0)
            continue;
        str_rtrim(comm);
        if (fabric_is_fm_comm(comm)) {
            f->fm_running = true;
            f->fm_pid = (int32_t)pid;
            f->valid |= UINT64_C(1) << FABRIC_S_PID;
            break;
        }
    }
    closedir(d);
    f->valid |= UINT64_C(1) << FABRIC_S_PROCESS;
}

/* Enabled: a link to the unit in one of systemd's *.wants directories under /etc. */
static void read_unit(struct collect_ctx *ctx, struct collector_status *st, struct fabric_info *f)
{
    DIR *d = dir_open_at(ctx->root.fd, SYSTEMD_ETC);
    struct dirent *de;

    if (d == NULL) {
        if (errno != ENOENT)
            collector_note(st, "/%s: %s: cannot tell whether Fabric Manager starts at boot",
                           SYSTEMD_ETC, strerror(errno));
        return; /* no systemd: nothing to enable */
    }
    while ((de = readdir(d)) != NULL) {
        char rel[512];

        if (!str_ends(de->d_name, ".wants") || strlen(de->d_name) > 200)
            continue;
        snprintf(rel, sizeof(rel), SYSTEMD_ETC "/%s/" FM_UNIT, de->d_name);
        if (faccessat(ctx->root.fd, rel, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
            f->fm_enabled = true;
            break;
        }
    }
    closedir(d);
    f->valid |= UINT64_C(1) << FABRIC_S_UNIT;
}

/* LOG_FILE_NAME= of the configuration, or the default path; the caller frees it. */
static char *log_path(struct collect_ctx *ctx)
{
    char *text = NULL, *path = NULL;

    if (file_slurp_text_at(ctx->root.fd, FM_CONFIG, 1u << 20, &text) >= 0) {
        for (char *line = text; line && *line;) {
            char *nl = strchr(line, '\n');

            if (nl)
                *nl = '\0';
            if (str_starts(line, "LOG_FILE_NAME=") && line[strlen("LOG_FILE_NAME=")] == '/') {
                str_rtrim(line);
                free(path);
                const char *v = line + strlen("LOG_FILE_NAME=");

                path = hostfs_textn(v, strnlen(v, 200));
            }
            line = nl ? nl + 1 : NULL;
        }
    }
    free(text);
    return path ? path : xstrdup(FM_LOG_DEFAULT);
}

static void read_log(struct collect_ctx *ctx, struct collector_status *st, struct fabric_info *f)
{
    struct fabric_log_scan scan;
    char *path = log_path(ctx), *text;
    ssize_t n = file_tail_at(ctx->root.fd, sysroot_rel(path), LOG_TAIL_BYTES, &text);

    if (n < 0) {
        if (n != -ENOENT || f->fm_running)
            collector_note(st, "%s: %s: its errors are not known", path, strerror((int)-n));
        free(path);
        return;
    }
    fabric_parse_log(text, &scan);
    free(text);
    f->log_path = path;
    f->log_started = scan.started;
    f->log_errors = scan.errors;
    f->log_lines = xcalloc(scan.n_lines ? scan.n_lines : 1, sizeof(*f->log_lines));
    for (size_t i = 0; i < scan.n_lines; i++)
        f->log_lines[i].text = hostfs_textn(scan.lines[i], strlen(scan.lines[i]));
    f->n_log_lines = scan.n_lines;
    if (!fabric_valid(f, FABRIC_S_VERSION) && scan.version != NULL) {
        f->fm_version = xstrdup(scan.version);
        f->fm_version_from = xstrdup("log");
        f->valid |= UINT64_C(1) << FABRIC_S_VERSION;
    }
    f->valid |= UINT64_C(1) << FABRIC_S_LOG;
    fabric_log_scan_free(&scan);
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_FABRIC];
    struct fabric_info *f = &s->fabric;

    collector_set(st, CS_OK, NULL);
    read_switches(ctx, st, f);
    read_binary(ctx, f);
    if (f->n_switches == 0 && !f->fm_binary) {
        /* Nothing to manage and nothing to run it: the rest would say nothing (and dpkg's
         * database, megabytes, is not read on every machine every cycle). */
        collector_set(st, st->state, "no NVSwitch and no Fabric Manager");
        return NULL;
    }
    read_nvswitch_view(ctx, st, f);
    read_package(ctx, st, f);
    read_process(ctx, st, f);
    read_unit(ctx, st, f);
    read_log(ctx, st, f);
    return NULL;
}

const struct collector_ops collector_fabric = { COLLECTOR_FABRIC, start, NULL, NULL };
