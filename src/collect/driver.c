/*
 * The driver collector: which NVIDIA kernel module is loaded and its version, from
 * /proc/driver/nvidia/version (proprietary and open-module wordings) and /sys/module/nvidia.
 * The user-space side (libnvidia-ml.so.VERSION) is recorded by the NVML collector in
 * nvml.library_version, so a mismatch can be shown with both numbers.
 */
#include "collect/collect.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
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
