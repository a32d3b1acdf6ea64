/*
 * The InfiniBand / RoCE collector: every port of every RDMA device in /sys/class/infiniband
 * (state, physical state, rate, link layer, error and data counters, the device's PCI function,
 * firmware and network interface), the counters read again at the end of a window, and whether
 * the GPUDirect RDMA module is loaded (/proc/modules). A machine without the directory has no
 * RDMA device: that is an answer (no ports), not an error. docs/fabric.md describes the sources.
 */
#include "collect/collect.h"
#include "collect/hostfs.h"
#include "collect/ib-parse.h"
#include "collect/sysfs-pci.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLASS_DIR   "sys/class/infiniband"
#define MAX_DEVICES 256
#define MAX_PORTS   64 /* per device: switches have up to 64 and more, HCAs 1 or 2 */

/* The GPUDirect RDMA modules: the driver's own, and the Mellanox one that came before it. */
static const char *const peermem_modules[] = { "nvidia_peermem", "nv_peer_mem" };

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The entries of dir (relative to dirfd) that pass ok(), sorted (readdir's order depends on the
 * filesystem). Returns the count, or -errno; *out is the caller's.
 */
static int list_dir(int dirfd, const char *dir, bool (*ok)(const char *), size_t max, char ***out,
                    struct collector_status *st)
{
    DIR *d = dir_open_at(dirfd, dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;

    *out = NULL;
    if (d == NULL)
        return -errno;
    while ((de = readdir(d)) != NULL && n < max) {
        if (de->d_name[0] == '.')
            continue;
        if (!ok(de->d_name)) {
            if (st != NULL) {
                char *text = hostfs_textn(de->d_name, strnlen(de->d_name, 64));

                collector_note(st, "/%s/%s: not a device or port name, skipped", dir, text);
                free(text);
            }
            continue;
        }
        xgrow(&names, &cap, n + 1, sizeof(*names));
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n > 0)
        qsort(names, n, sizeof(*names), name_cmp);
    *out = names;
    return (int)n;
}

static void free_names(char **names, int n)
{
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

static bool any_name(const char *name)
{
    return ib_is_device_name(name);
}

static bool port_name(const char *name)
{
    uint32_t v;

    return strspn(name, "0123456789") == strlen(name) && str_to_u32(name, 10, &v) && v >= 1 &&
           v <= 255;
}

/* Reads rel (under the root) into buf; -errno, noted unless quiet about ENOENT. */
static ssize_t read_file(struct collect_ctx *ctx, struct collector_status *st, const char *rel,
                         char *buf, size_t size, bool quiet_enoent)
{
    ssize_t n = file_read_at(ctx->root.fd, rel, buf, size);

    if (n < 0 && !(quiet_enoent && n == -ENOENT))
        collector_note(st, "/%s: %s", rel,
                       n == -EFBIG ? "too large to be the attribute" : strerror((int)-n));
    return n;
}

static void note_value(struct collector_status *st, const char *rel, const char *what, char *buf)
{
    char *text;

    str_rtrim(buf);
    text = hostfs_textn(buf, strnlen(buf, 40));
    collector_note(st, "/%s: malformed: expected %s, got \"%s\"", rel, what, text);
    free(text);
}

/* A short text attribute of the device (fw_ver, hca_type, node_desc), NULL when absent. */
static char *read_text(struct collect_ctx *ctx, struct collector_status *st, const char *dev,
                       const char *attr)
{
    char rel[128], buf[256];

    snprintf(rel, sizeof(rel), CLASS_DIR "/%s/%s", dev, attr);
    if (read_file(ctx, st, rel, buf, sizeof(buf), true) < 0)
        return NULL;
    str_rtrim(buf);
    return *buf ? hostfs_textn(buf, strnlen(buf, 128)) : NULL;
}

/* The PCI function the device's "device" link points to; NULL when it is none (noted). */
static char *read_pci(struct collect_ctx *ctx, struct collector_status *st, const char *dev)
{
    char rel[128], target[512];
    const char *base;
    ssize_t n;

    snprintf(rel, sizeof(rel), CLASS_DIR "/%s/device", dev);
    n = file_readlink_at(ctx->root.fd, rel, target, sizeof(target));
    if (n < 0) {
        if (n != -ENOENT)
            collector_note(st, "/%s: %s", rel, strerror((int)-n));
        return NULL;
    }
    base = strrchr(target, '/');
    base = base ? base + 1 : target;
    if (!sysfs_pci_is_address(base))
        return NULL; /* a software device (rxe, siw) sits on no PCI function */
    return xstrdup(base);
}

/* The first network interface of the device (device/net/NAME), NULL when none. */
static char *read_netdev(struct collect_ctx *ctx, const char *dev)
{
    char rel[128], **names, *out = NULL;
    int n;

    snprintf(rel, sizeof(rel), CLASS_DIR "/%s/device/net", dev);
    n = list_dir(ctx->root.fd, rel, any_name, 16, &names, NULL);
    if (n > 0)
        out = xstrdup(names[0]);
    free_names(names, n);
    return out;
}

static void read_state(struct collect_ctx *ctx, struct collector_status *st, const char *dir,
                       const char *attr, uint32_t *code, char **name, int slot, uint64_t *valid)
{
    char rel[192], buf[64], text[IB_NAME_SIZE];

    snprintf(rel, sizeof(rel), "%s/%s", dir, attr);
    if (read_file(ctx, st, rel, buf, sizeof(buf), false) < 0)
        return;
    if (!ib_parse_state(buf, code, text)) {
        note_value(st, rel, "\"CODE: NAME\"", buf);
        return;
    }
    *name = xstrdup(text);
    *valid |= UINT64_C(1) << slot;
}

/* Reads the counters of a port into values (bits of the ones read in *got). */
static void read_counters(struct collect_ctx *ctx, struct collector_status *st, const char *dir,
                          uint64_t values[IB_C__COUNT], uint64_t *got)
{
    char rel[224], buf[64];
    int missing = 0;

    *got = 0;
    snprintf(rel, sizeof(rel), "%s/counters", dir);
    if (faccessat(ctx->root.fd, rel, F_OK, 0) != 0) {
        collector_note(st, "/%s: %s: no error counters", rel, strerror(errno));
        return;
    }
    for (int c = 0; c < IB_C__COUNT; c++) {
        ssize_t n;

        snprintf(rel, sizeof(rel), "%s/counters/%s", dir, ib_counter_files[c]);
        n = read_file(ctx, st, rel, buf, sizeof(buf), true);
        if (n == -ENOENT) {
            missing++;
            continue;
        }
        if (n < 0)
            continue;
        if (!ib_parse_counter(buf, &values[c])) {
            note_value(st, rel, "a count", buf);
            continue;
        }
        *got |= UINT64_C(1) << c;
    }
    if (missing > 0)
        collector_note(st, "/%s/counters: %d of the %d counters gpudoctor reads are absent", dir,
                       missing, (int)IB_C__COUNT);
}

static void read_port(struct collect_ctx *ctx, struct collector_status *st, const char *dev,
                      uint32_t num, struct ib_port *p)
{
    char dir[96], rel[192], buf[128], speed[IB_NAME_SIZE];
    uint64_t got;
    int ll;

    p->port = num;
    snprintf(dir, sizeof(dir), CLASS_DIR "/%s/ports/%u", dev, num);
    read_state(ctx, st, dir, "state", &p->state, &p->state_name, IB_S_STATE, &p->valid);
    read_state(ctx, st, dir, "phys_state", &p->phys_state, &p->phys_state_name, IB_S_PHYS_STATE,
               &p->valid);
    snprintf(rel, sizeof(rel), "%s/rate", dir);
    if (read_file(ctx, st, rel, buf, sizeof(buf), false) >= 0) {
        if (ib_parse_rate(buf, &p->rate_gbps, &p->width, speed)) {
            p->speed = xstrdup(speed);
            p->valid |= UINT64_C(1) << IB_S_RATE;
        } else {
            note_value(st, rel, "a rate such as \"400 Gb/sec (4X NDR)\"", buf);
        }
    }
    snprintf(rel, sizeof(rel), "%s/link_layer", dir);
    if (read_file(ctx, st, rel, buf, sizeof(buf), false) >= 0) {
        ll = ib_parse_link_layer(buf);
        if (ll >= 0) {
            p->link_layer = ll;
            p->valid |= UINT64_C(1) << IB_S_LINK_LAYER;
        } else {
            note_value(st, rel, "InfiniBand or Ethernet", buf);
        }
    }
    read_counters(ctx, st, dir, p->counter, &got);
    p->valid |= got << IB_S_COUNTER;
}

static void read_device(struct collect_ctx *ctx, struct collector_status *st, struct ib_info *ib,
                        const char *dev, size_t *cap)
{
    char rel[128], **ports;
    uint32_t nums[MAX_PORTS];
    int n;

    snprintf(rel, sizeof(rel), CLASS_DIR "/%s/ports", dev);
    n = list_dir(ctx->root.fd, rel, port_name, MAX_PORTS, &ports, st);
    if (n < 0) {
        collector_note(st, "/%s: %s", rel, strerror(-n));
        return;
    }
    if (n == 0)
        collector_note(st, "/%s: no ports", rel);
    /* Numerically: port 10 after port 9. */
    for (int i = 0; i < n; i++)
        str_to_u32(ports[i], 10, &nums[i]);
    for (int i = 1; i < n; i++) {
        for (int k = i; k > 0 && nums[k - 1] > nums[k]; k--) {
            uint32_t t = nums[k];

            nums[k] = nums[k - 1];
            nums[k - 1] = t;
        }
    }
    for (int i = 0; i < n; i++) {
        struct ib_port *p;

        xgrow(&ib->ports, cap, ib->n_ports + 1, sizeof(*ib->ports));
        p = &ib->ports[ib->n_ports++];
        memset(p, 0, sizeof(*p));
        p->device = xstrdup(dev);
        p->pci_address = read_pci(ctx, st, dev);
        p->hca_type = read_text(ctx, st, dev, "hca_type");
        p->fw_ver = read_text(ctx, st, dev, "fw_ver");
        p->node_desc = read_text(ctx, st, dev, "node_desc");
        p->netdev = read_netdev(ctx, dev);
        read_port(ctx, st, dev, nums[i], p);
    }
    free_names(ports, n);
}

static void read_modules(struct collect_ctx *ctx, struct collector_status *st, struct ib_info *ib)
{
    bool loaded[ARRAY_SIZE(peermem_modules)];
    char *text = NULL;
    ssize_t n = file_slurp_at(ctx->root.fd, "proc/modules", 4u << 20, &text);

    if (n < 0) {
        collector_note(st, "/proc/modules: %s: cannot tell whether nvidia_peermem is loaded",
                       strerror((int)-n));
        free(text);
        return;
    }
    if (ib_parse_modules(text, peermem_modules, loaded, ARRAY_SIZE(peermem_modules)) < 0) {
        collector_note(st,
                       "/proc/modules: malformed: cannot tell whether nvidia_peermem is loaded");
        free(text);
        return;
    }
    free(text);
    for (size_t i = 0; i < ARRAY_SIZE(peermem_modules); i++) {
        if (loaded[i] && !ib->peermem_loaded) {
            ib->peermem_loaded = true;
            ib->peermem_module = xstrdup(peermem_modules[i]);
        }
    }
    ib->valid |= UINT64_C(1) << IB_I_MODULES;
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_IB];
    struct ib_info *ib = &s->ib;
    char **devs;
    size_t cap = 0;
    int n;

    collector_set(st, CS_OK, NULL);
    n = list_dir(ctx->root.fd, CLASS_DIR, any_name, MAX_DEVICES, &devs, st);
    if (n == -ENOENT) {
        /* No RDMA stack or no device: nothing to judge, and nothing wrong. */
        collector_set(st, CS_OK, "no InfiniBand device (no %s)", "/" CLASS_DIR);
        ib->valid |= UINT64_C(1) << IB_I_PORTS;
        return NULL; /* GPUDirect RDMA matters only with a device: /proc/modules is not read */
    }
    if (n < 0) {
        collector_set(st, n == -EACCES || n == -EPERM ? CS_NO_PERMISSION : CS_FAILED,
                      "cannot read %s: %s", "/" CLASS_DIR, strerror(-n));
        return NULL;
    }
    if (n > 0)
        read_modules(ctx, st, ib);
    ib->devices = (uint32_t)n;
    for (int i = 0; i < n; i++)
        read_device(ctx, st, ib, devs[i], &cap);
    ib->valid |= UINT64_C(1) << IB_I_PORTS;
    if (n == 0)
        collector_set(st, st->state, "no InfiniBand device (%s is empty)", "/" CLASS_DIR);
    free_names(devs, n);
    return NULL;
}

/* With a window, the counters are read again: errors that grow now are what matters. */
static void finish(struct collect_ctx *ctx, void *state, struct snapshot *s)
{
    (void)state;
    if (ctx->opts->window_ms <= 0)
        return;
    for (size_t i = 0; i < s->ib.n_ports; i++) {
        struct ib_port *p = &s->ib.ports[i];
        struct collector_status quiet;
        uint64_t now[IB_C__COUNT], got;
        char dir[96];

        /* Ports whose counters could not be read at the start were noted then. */
        if (p->device == NULL ||
            ((p->valid >> IB_S_COUNTER) & ((UINT64_C(1) << IB_C__COUNT) - 1)) == 0)
            continue;
        snprintf(dir, sizeof(dir), CLASS_DIR "/%s/ports/%u", p->device, p->port);
        /* What was wrong with a counter was noted at the start: say it once. */
        memset(&quiet, 0, sizeof(quiet));
        read_counters(ctx, &quiet, dir, now, &got);
        for (size_t k = 0; k < quiet.n_notes; k++)
            free(quiet.notes[k]);
        free(quiet.notes);
        free(quiet.detail);
        for (int c = 0; c < IB_C__COUNT; c++) {
            if (!ib_port_valid(p, IB_S_COUNTER + c) || !((got >> c) & 1u))
                continue;
            /* A counter that went back was reset (perfquery -R): no growth can be told. */
            if (now[c] < p->counter[c])
                continue;
            p->window[c] = now[c] - p->counter[c];
            p->valid |= UINT64_C(1) << (IB_S_WINDOW + c);
        }
    }
}

const struct collector_ops collector_ib = { COLLECTOR_IB, start, NULL, finish };
