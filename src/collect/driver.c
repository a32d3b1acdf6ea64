/*
 * The driver collector: which NVIDIA kernel module is loaded and its version, from
 * /proc/driver/nvidia/version (proprietary and open-module wordings) and /sys/module/nvidia,
 * and how it handles a system suspend (/proc/driver/nvidia/params).
 * The user-space side (libnvidia-ml.so.VERSION) is recorded by the NVML collector in
 * nvml.library_version, so a mismatch can be shown with both numbers.
 */
#include "collect/collect.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VERSION_FILE "proc/driver/nvidia/version"
#define SYSFS_MODULE "sys/module/nvidia"

static bool exists(int rootfd, const char *rel)
{
    struct stat st;

    return fstatat(rootfd, rel, &st, 0) == 0;
}

/*
 * "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ..." or
 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build ...".
 * The version is the first dotted number: a pattern anchored on "Kernel Module" would miss the
 * open module's "for x86_64" in between.
 */
static void parse_banner(struct driver_info *d, char *text, struct collector_status *c)
{
    char *eol = strchr(text, '\n');

    if (eol != NULL)
        *eol = '\0';
    str_rtrim(text);
    d->module_banner = str_sanitized(text);
    if (strstr(text, "Open Kernel Module") != NULL)
        d->module_flavor = xstrdup("open");
    else if (strstr(text, "Kernel Module") != NULL)
        d->module_flavor = xstrdup("proprietary");
    d->module_version = str_starts(text, "NVRM version:") ? stackver_first_version(text) : NULL;
    if (d->module_version == NULL || d->module_flavor == NULL)
        collector_note(c, "/proc/driver/nvidia/version: unrecognised first line \"%.120s\"", text);
}

/*
 * The device files programs open: /dev/nvidiactl and one /dev/nvidiaN per GPU. A container
 * started without the GPUs has none of them while the host's module is loaded. Any entry of the
 * name counts (a fixture tree cannot hold device nodes); an unreadable /dev leaves it unknown.
 */
static void read_devices(int rootfd, struct driver_info *d, struct collector_status *c)
{
    DIR *dir = dir_open_at(rootfd, "dev");
    struct dirent *e;

    if (dir == NULL) {
        if (errno != ENOENT)
            collector_note(c, "cannot read /dev: %s", strerror(errno));
        return;
    }
    d->dev_ctl = false;
    d->dev_gpus = 0;
    while ((e = readdir(dir)) != NULL) {
        const char *n = e->d_name;

        if (strcmp(n, "nvidiactl") == 0)
            d->dev_ctl = true;
        else if (strncmp(n, "nvidia", 6) == 0 && n[6] != '\0' &&
                 strspn(n + 6, "0123456789") == strlen(n + 6))
            d->dev_gpus++;
    }
    closedir(dir);
    d->valid |= 1u << DRIVER_S_DEVICES;
}

/*
 * Whether one line of a cgroup v1 devices.list ("c 195:* rwm", "a *:* rwm") lets the process
 * read and write character device major:minor.
 */
static bool cgroup_line_allows(const char *line, unsigned major, unsigned minor)
{
    char type, maj[12], min[12], access[8];

    if (sscanf(line, " %c %11[0-9*]:%11[0-9*] %7s", &type, maj, min, access) != 4)
        return false;
    if (type != 'a' && type != 'c')
        return false;
    if (type == 'c' && ((strcmp(maj, "*") != 0 && strtoul(maj, NULL, 10) != major) ||
                        (strcmp(min, "*") != 0 && strtoul(min, NULL, 10) != minor)))
        return false;
    return strchr(access, 'r') != NULL && strchr(access, 'w') != NULL;
}

/*
 * The device cgroup's verdict on /dev/nvidiactl (195:255), which NVML and CUDA open first: cgroup
 * v1's devices.list of this process's cgroup (/proc/self/cgroup's "devices" line, under
 * /sys/fs/cgroup/devices; inside a container that mount is the container's own cgroup, so its
 * root's list is tried when the path is not there). A container whose runtime hook's grant was
 * undone ("c 195:* m" left) may no longer open the device files it still has. cgroup v2 keeps
 * device access in an eBPF program, which cannot be read: unknown then.
 */
#define NVIDIA_MAJOR    195u
#define NVIDIACTL_MINOR 255u
static void read_device_cgroup(int rootfd, struct driver_info *d, struct collector_status *c)
{
    char cg[4096], list[16384], *path = NULL, *line, *save = NULL;
    ssize_t n = file_read_at(rootfd, "proc/self/cgroup", cg, sizeof(cg));
    bool allowed = false;

    if (n <= 0)
        return;
    for (line = strtok_r(cg, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *ctl = strchr(line, ':'), *rel = ctl ? strchr(ctl + 1, ':') : NULL;

        if (ctl == NULL || rel == NULL || rel - ctl - 1 <= 0)
            continue;
        *rel++ = '\0';
        /* "4:devices:/docker/3f2a..." (the controller may share its line: "3:cpu,devices:/") */
        if (rel[0] != '/' || strstr(rel, "/..") != NULL)
            continue;
        for (char *s2 = NULL, *tok = strtok_r(ctl + 1, ",", &s2); tok != NULL && path == NULL;
             tok = strtok_r(NULL, ",", &s2)) {
            if (strcmp(tok, "devices") == 0)
                path = xasprintf("sys/fs/cgroup/devices%s/devices.list",
                                 strcmp(rel, "/") == 0 ? "" : rel);
        }
    }
    if (path == NULL)
        return; /* cgroup v2, or no devices controller: unknown */
    n = file_read_at(rootfd, path, list, sizeof(list));
    if (n < 0 && errno == ENOENT)
        n = file_read_at(rootfd, "sys/fs/cgroup/devices/devices.list", list, sizeof(list));
    if (n < 0) {
        if (errno != ENOENT)
            collector_note(c, "cannot read /%s: %s", path, strerror(errno));
        free(path);
        return;
    }
    free(path);
    save = NULL;
    for (line = strtok_r(list, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
        allowed |= cgroup_line_allows(line, NVIDIA_MAJOR, NVIDIACTL_MINOR);
    d->ctl_cgroup = xstrdup(allowed ? "allowed" : "denied");
    d->valid |= UINT64_C(1) << DRIVER_S_CTL_CGROUP;
}

/*
 * A parameter's value in /proc/driver/nvidia/params ("PreserveVideoMemoryAllocations: 1", one
 * per line): 1 and *v when the line is there with a number, 0 when the driver has no such
 * parameter, -1 when the line is there but its value is not a number.
 */
static const char *next_line(const char *l)
{
    const char *nl = strchr(l, '\n');

    return nl != NULL ? nl + 1 : NULL;
}

static int param_value(const char *text, const char *name, uint32_t *v)
{
    size_t n = strlen(name);

    for (const char *l = text; l != NULL; l = next_line(l)) {
        const char *p = l + n;
        char *end;
        unsigned long x;

        if (strncmp(l, name, n) != 0 || *p != ':')
            continue;
        p += 1 + strspn(p + 1, " \t");
        errno = 0;
        x = strtoul(p, &end, 10);
        end += strspn(end, " \t\r");
        if (end == p || *p == '-' || errno != 0 || x > UINT32_MAX || (*end != '\n' && *end != '\0'))
            return -1;
        *v = (uint32_t)x;
        return 1;
    }
    return 0;
}

/* One of the params file's switches into *on and its validity bit. */
static void read_switch(const char *text, const char *name, bool *on, uint64_t *valid,
                        enum driver_slot slot, struct collector_status *c)
{
    uint32_t v = 0;
    int r = param_value(text, name, &v);

    if (r < 0)
        collector_note(c, "/proc/driver/nvidia/params: %s is not a number", name);
    if (r <= 0)
        return;
    *on = v != 0;
    *valid |= UINT64_C(1) << slot;
}

/* How the driver keeps the GPUs' state across a system suspend: the two parameters of the
 * driver README's chapter "Configuring Power Management Support". */
static void read_params(int rootfd, struct driver_info *d, struct collector_status *c)
{
    char buf[8192];
    ssize_t n = file_read_at(rootfd, "proc/driver/nvidia/params", buf, sizeof(buf));

    if (n == -ENOENT)
        return;
    if (n < 0) {
        collector_note(c, "cannot read /proc/driver/nvidia/params: %s", strerror((int)-n));
        return;
    }
    read_switch(buf, "PreserveVideoMemoryAllocations", &d->preserve_vram, &d->valid,
                DRIVER_S_PRESERVE_VRAM, c);
    read_switch(buf, "UseKernelSuspendNotifiers", &d->suspend_notifiers, &d->valid,
                DRIVER_S_SUSPEND_NOTIFIERS, c);
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *c = &s->collectors[COLLECTOR_DRIVER];
    struct driver_info *d = &s->driver;
    int rootfd = ctx->root.fd;
    bool proc_dir = exists(rootfd, "proc/driver/nvidia");
    bool sys_dir = exists(rootfd, SYSFS_MODULE);
    char buf[4096];
    ssize_t n;

    d->uvm_loaded = exists(rootfd, "sys/module/nvidia_uvm");
    d->module_loaded = proc_dir || sys_dir;
    d->valid |= 1u << DRIVER_S_MODULE;
    read_devices(rootfd, d, c);
    read_device_cgroup(rootfd, d, c);
    if (!d->module_loaded) {
        collector_set(c, CS_UNAVAILABLE, "no NVIDIA kernel module loaded");
        return NULL;
    }
    collector_set(c, CS_OK, NULL);

    n = file_read_at(rootfd, VERSION_FILE, buf, sizeof(buf));
    if (n >= 0)
        parse_banner(d, buf, c);
    else if (proc_dir)
        collector_note(c, "cannot read /proc/driver/nvidia/version: %s", strerror((int)-n));

    n = file_read_at(rootfd, SYSFS_MODULE "/version", buf, sizeof(buf));
    if (n >= 0) {
        str_rtrim(buf);
        if (stackver_is_version(buf, 2))
            d->sysfs_version = xstrdup(buf);
        else
            collector_note(c, "/sys/module/nvidia/version: unrecognised \"%.40s\"", buf);
    } else if (sys_dir && n != -ENOENT) {
        collector_note(c, "cannot read /sys/module/nvidia/version: %s", strerror((int)-n));
    }
    if (d->module_version == NULL && d->sysfs_version != NULL)
        d->module_version = xstrdup(d->sysfs_version);
    read_params(rootfd, d, c);

    /* Without the banner, the module's taint flags tell the flavours apart: the proprietary
     * module's licence taints the kernel with P, the open modules' (MIT/GPL) does not. */
    if (d->module_flavor == NULL &&
        (n = file_read_at(rootfd, SYSFS_MODULE "/taint", buf, sizeof(buf))) >= 0) {
        str_rtrim(buf);
        d->module_flavor = xstrdup(strchr(buf, 'P') != NULL ? "proprietary" : "open");
    }
    if (d->module_version == NULL)
        collector_note(c, "the NVIDIA kernel module is loaded but its version could not be read");
    return NULL;
}

const struct collector_ops collector_driver = { COLLECTOR_DRIVER, start, NULL, NULL };
