/*
 * The PCIe collector: every NVIDIA display-class device in sysfs, with its link, the bridges
 * above it, the high-bandwidth devices that share its switch, and its AER counters. It reads
 * only sysfs, so it works with no driver loaded: a GPU here that NVML does not list is evidence
 * in itself. docs/pcie.md describes the sources and the switch heuristic.
 */
#include "collect/collect.h"
#include "collect/hostfs.h"
#include "collect/sysfs-pci.h"
#include "collect/numa-parse.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEVICES_DIR    "sys/bus/pci/devices"
#define NODE_DIR       "sys/devices/system/node"
#define MAX_DEPTH      32   /* bridges between a root complex and a device; real ones have < 10 */
#define PCI_CONFIG_MAX 4096 /* a PCIe function's config space, as root reads it */

/* One PCI function as the scan saw it. */
struct pci_fn {
    char addr[SYSFS_PCI_ADDR_SIZE];
    uint32_t vendor, device, class_code;
    char (*chain)[SYSFS_PCI_ADDR_SIZE]; /* root first, this function last */
    int depth;                          /* entries in chain; -1 when the link did not resolve */
};

struct scan {
    struct collector_status *st;
    int dirfd; /* DEVICES_DIR */
    struct pci_fn *fns;
    size_t n_fns, cap_fns;
};

/* Reads ADDR/attr into buf. Returns the length, or -errno (noted unless quiet_enoent). */
static ssize_t read_attr(struct scan *sc, const char *addr, const char *attr, char *buf,
                         size_t size, bool quiet_enoent)
{
    char rel[96];
    ssize_t n;

    snprintf(rel, sizeof(rel), "%s/%s", addr, attr);
    n = file_read_at(sc->dirfd, rel, buf, size);
    if (n < 0 && !(quiet_enoent && n == -ENOENT))
        collector_note(sc->st, "/" DEVICES_DIR "/%s: %s", rel,
                       n == -EFBIG ? "too large to be the attribute" : strerror((int)-n));
    return n;
}

/* Notes what an attribute holds and what it should have held (shortened, printable). */
static void note_value(struct scan *sc, const char *addr, const char *attr, const char *what,
                       char *buf)
{
    char *text;

    str_rtrim(buf);
    text = hostfs_textn(buf, strnlen(buf, 32));
    collector_note(sc->st, "/" DEVICES_DIR "/%s/%s: %s, got \"%s\"", addr, attr, what, text);
    free(text);
}

static bool read_hex(struct scan *sc, const char *addr, const char *attr, uint32_t *out)
{
    char buf[32];

    if (read_attr(sc, addr, attr, buf, sizeof(buf), false) < 0)
        return false;
    if (!str_to_u32(buf, 16, out)) {
        note_value(sc, addr, attr, "malformed: expected a hex number", buf);
        return false;
    }
    return true;
}

/* The last component of a symlink's target: the driver bound to addr, NULL when none. */
static char *read_driver(struct scan *sc, const char *addr)
{
    char rel[64], target[512];
    const char *base;
    ssize_t n;

    snprintf(rel, sizeof(rel), "%s/driver", addr);
    n = file_readlink_at(sc->dirfd, rel, target, sizeof(target));
    if (n == -ENOENT)
        return NULL;
    if (n < 0) {
        collector_note(sc->st, "/" DEVICES_DIR "/%s: %s", rel, strerror((int)-n));
        return NULL;
    }
    base = strrchr(target, '/');
    base = base ? base + 1 : target;
    return *base ? hostfs_text(base) : NULL;
}

static void read_speed(struct scan *sc, const char *addr, const char *attr, double *gts,
                       uint32_t *gen, int speed_slot, int gen_slot, uint64_t *valid, bool noisy)
{
    char buf[64];

    if (read_attr(sc, addr, attr, buf, sizeof(buf), !noisy) < 0)
        return;
    switch (sysfs_pci_parse_speed(buf, gts)) {
    case SYSFS_SPEED_OK:
        *valid |= UINT64_C(1) << speed_slot;
        *gen = sysfs_pci_speed_gen(*gts);
        if (*gen != 0)
            *valid |= UINT64_C(1) << gen_slot;
        else if (noisy)
            collector_note(sc->st,
                           "/" DEVICES_DIR "/%s/%s: %.4g GT/s is no PCIe generation's "
                           "speed",
                           addr, attr, *gts);
        return;
    case SYSFS_SPEED_UNKNOWN:
        if (noisy)
            note_value(sc, addr, attr, "no speed (link down?)", buf);
        return;
    case SYSFS_SPEED_MALFORMED:
        break;
    }
    note_value(sc, addr, attr, "malformed: expected a speed such as \"16.0 GT/s PCIe\"", buf);
}

static void read_width(struct scan *sc, const char *addr, const char *attr, uint32_t *lanes,
                       int slot, uint64_t *valid, bool noisy)
{
    char buf[32];
    uint32_t v;

    if (read_attr(sc, addr, attr, buf, sizeof(buf), !noisy) < 0)
        return;
    if (sysfs_pci_parse_width(buf, lanes)) {
        *valid |= UINT64_C(1) << slot;
        return;
    }
    if (str_to_u32(buf, 10, &v) && v == 0) {
        if (noisy)
            collector_note(sc->st, "/" DEVICES_DIR "/%s/%s: 0 lanes (link down?)", addr, attr);
        return;
    }
    note_value(sc, addr, attr, "malformed: expected a lane count from 1 to 32", buf);
}

/*
 * The link attributes of addr. noisy: a GPU, where anything missing is worth a note; a bridge's
 * attributes may legitimately be absent (host bridges, conventional PCI, virtual machines).
 */
static void read_link(struct scan *sc, const char *addr, struct pcie_link *l, uint64_t *valid,
                      bool noisy)
{
    read_speed(sc, addr, "current_link_speed", &l->speed_gts, &l->gen, PCIE_S_LINK_SPEED,
               PCIE_S_LINK_GEN, valid, noisy);
    read_speed(sc, addr, "max_link_speed", &l->speed_max_gts, &l->gen_max, PCIE_S_LINK_SPEED_MAX,
               PCIE_S_LINK_GEN_MAX, valid, noisy);
    read_width(sc, addr, "current_link_width", &l->width, PCIE_S_LINK_WIDTH, valid, noisy);
    read_width(sc, addr, "max_link_width", &l->width_max, PCIE_S_LINK_WIDTH_MAX, valid, noisy);
}

static void read_numa(struct scan *sc, struct pcie_device *d)
{
    char buf[32];
    int64_t v;

    if (read_attr(sc, d->address, "numa_node", buf, sizeof(buf), false) < 0)
        return;
    if (!str_to_i64(buf, 10, &v) || v < -1 || v > INT32_MAX) {
        note_value(sc, d->address, "numa_node", "malformed: expected a node number or -1", buf);
        return;
    }
    d->numa_node = (int32_t)v;
    d->valid |= UINT64_C(1) << PCIE_S_NUMA;
}

/*
 * How the IOMMU treats the device's DMA: its group's default domain type (the kernel's word,
 * from iommu_group/type), or "none" when the device has no iommu_group link (no IOMMU translates
 * it). A group without a type file (kernels before 5.4), or one the kernel calls "unknown" (no
 * default domain), leaves it unknown.
 */
static void read_iommu(struct scan *sc, struct pcie_device *d)
{
    static const char *const known[] = { "DMA", "DMA-FQ", "identity", "unmanaged", "blocked" };
    char rel[96], buf[32];
    struct stat sb;
    ssize_t n;

    n = read_attr(sc, d->address, "iommu_group/type", buf, sizeof(buf), true);
    if (n == -ENOENT) {
        snprintf(rel, sizeof(rel), "%s/iommu_group", d->address);
        if (fstatat(sc->dirfd, rel, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
            d->iommu_domain = xstrdup("none");
            d->valid |= UINT64_C(1) << PCIE_S_IOMMU;
        }
        return;
    }
    if (n < 0)
        return;
    str_rtrim(buf);
    if (strcmp(buf, "unknown") == 0)
        return;
    for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
        if (strcmp(buf, known[i]) == 0) {
            d->iommu_domain = xstrdup(buf);
            d->valid |= UINT64_C(1) << PCIE_S_IOMMU;
            return;
        }
    }
    note_value(sc, d->address, "iommu_group/type", "not a domain type the kernel names", buf);
}

static const struct {
    const char *file, *total_key;
} aer_files[] = {
    { "aer_dev_correctable", "TOTAL_ERR_COR" },
    { "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL" },
    { "aer_dev_fatal", "TOTAL_ERR_FATAL" },
};

/* The three AER totals of addr; false (with a note) unless all three were read. */
static bool read_aer(struct scan *sc, const char *addr, uint64_t totals[3])
{
    int missing = 0, ok = 0;

    for (size_t i = 0; i < ARRAY_SIZE(aer_files); i++) {
        char buf[1024], *cause = NULL;

        if (read_attr(sc, addr, aer_files[i].file, buf, sizeof(buf), true) == -ENOENT) {
            missing++;
            continue;
        }
        if (sysfs_pci_parse_aer(buf, aer_files[i].total_key, &totals[i], &cause) != 0) {
            char *text = hostfs_text(cause);

            collector_note(sc->st, "/" DEVICES_DIR "/%s/%s: malformed: %s", addr, aer_files[i].file,
                           text);
            free(text);
            free(cause);
            continue;
        }
        ok++;
    }
    if (missing == (int)ARRAY_SIZE(aer_files))
        collector_note(sc->st,
                       "%s: no AER counters in sysfs (kernel before 4.17, AER disabled, "
                       "or a device without the capability)",
                       addr);
    else if (missing > 0)
        collector_note(sc->st, "%s: only some AER counter files exist", addr);
    return ok == (int)ARRAY_SIZE(aer_files);
}

static const struct pci_fn *find_fn(const struct scan *sc, const char *addr)
{
    for (size_t i = 0; i < sc->n_fns; i++) {
        if (strcmp(sc->fns[i].addr, addr) == 0)
            return &sc->fns[i];
    }
    return NULL;
}

/* Whether fn sits below the bridge at addr. */
static bool is_below(const struct pci_fn *fn, const char *addr)
{
    for (int i = 0; i + 1 < fn->depth; i++) {
        if (strcmp(fn->chain[i], addr) == 0)
            return true;
    }
    return false;
}

static int peer_kind(uint32_t class_code)
{
    if (PCI_CLASS_BASE(class_code) == PCI_CLASS_NETWORK)
        return PCIE_PEER_NETWORK;
    if (PCI_CLASS_BASESUB(class_code) == PCI_CLASS_NVME)
        return PCIE_PEER_NVME;
    if (PCI_CLASS_BASE(class_code) == PCI_CLASS_DISPLAY)
        return PCIE_PEER_GPU;
    return -1;
}

static void find_peers(struct scan *sc, const struct pci_fn *gpu, struct pcie_device *d)
{
    size_t cap = 0;

    d->valid |= UINT64_C(1) << PCIE_S_PEERS;
    /*
     * A switch has an upstream port and downstream ports below it, so the GPU's nearest bridge
     * is a downstream port and the one above it the switch only when there are at least three
     * bridges (downstream port, upstream port, root port). With fewer, the GPU has a root port
     * of its own and shares no link.
     */
    if (d->n_upstream < 3)
        return;
    d->switch_address = xstrdup(d->upstream[1].address);
    for (size_t i = 0; i < sc->n_fns; i++) {
        const struct pci_fn *fn = &sc->fns[i];
        int kind = peer_kind(fn->class_code);
        struct pcie_peer *p;

        if (fn == gpu || kind < 0 || !is_below(fn, d->switch_address))
            continue;
        xgrow(&d->peers, &cap, d->n_peers + 1, sizeof(*d->peers));
        p = &d->peers[d->n_peers++];
        memset(p, 0, sizeof(*p));
        p->address = xstrdup(fn->addr);
        p->vendor_id = fn->vendor;
        p->device_id = fn->device;
        p->class_code = fn->class_code;
        p->kind = kind;
        p->driver = read_driver(sc, fn->addr);
    }
}

/* The ACS control of a bridge, from its config space (4096 bytes for root; 64 otherwise). */
static void read_acs(struct scan *sc, struct pcie_bridge *br)
{
    char rel[96];
    uint8_t *buf = xmalloc(PCI_CONFIG_MAX + 1);
    ssize_t n;
    uint16_t ctrl = 0;
    int r;

    snprintf(rel, sizeof(rel), "%s/config", br->address);
    n = file_read_at(sc->dirfd, rel, (char *)buf, PCI_CONFIG_MAX + 1);
    if (n < 0) {
        if (n != -ENOENT)
            collector_note(sc->st, "/" DEVICES_DIR "/%s: %s: its ACS is not known", rel,
                           n == -EFBIG ? "larger than a config space" : strerror((int)-n));
        free(buf);
        return;
    }
    r = numa_parse_acs(buf, (size_t)n, &ctrl);
    free(buf);
    br->acs = r - NUMA_ACS_NEEDS_ROOT;
    br->valid |= UINT64_C(1) << PCIE_B_ACS;
    if (r == NUMA_ACS_FOUND) {
        br->acs_ctrl = ctrl;
        br->valid |= UINT64_C(1) << PCIE_B_ACS_CTRL;
    } else if (r == NUMA_ACS_MALFORMED) {
        collector_note(sc->st,
                       "/" DEVICES_DIR "/%s: malformed: its extended capability list is "
                       "broken",
                       rel);
    }
}

static void resolve_upstream(struct scan *sc, const struct pci_fn *gpu, struct pcie_device *d)
{
    const struct pci_fn *bridges[MAX_DEPTH];
    size_t n;

    if (gpu->depth < 1)
        return; /* noted by the scan */
    /* The chain is root first, the GPU last; upstream is nearest first. */
    n = (size_t)gpu->depth - 1;
    for (size_t k = 0; k < n; k++) {
        const char *addr = gpu->chain[n - 1 - k];

        bridges[k] = find_fn(sc, addr);
        if (bridges[k] == NULL) {
            collector_note(sc->st, "%s: the bridge %s above it is not in %s", gpu->addr, addr,
                           "/" DEVICES_DIR);
            return;
        }
    }
    d->upstream = xcalloc(n + 1, sizeof(*d->upstream));
    d->n_upstream = n;
    for (size_t k = 0; k < n; k++) {
        struct pcie_bridge *br = &d->upstream[k];

        br->address = xstrdup(bridges[k]->addr);
        br->vendor_id = bridges[k]->vendor;
        br->device_id = bridges[k]->device;
        br->class_code = bridges[k]->class_code;
        read_link(sc, br->address, &br->link, &br->valid, false);
    }
    d->valid |= UINT64_C(1) << PCIE_S_UPSTREAM;
    find_peers(sc, gpu, d);
    /* Under a switch, the downstream ports on the way up decide whether peer traffic may turn
     * in a switch or must go up to the root complex (ACS): the one right above the GPU, and in
     * nested switches each upper switch's port (every other bridge: downstream port, upstream
     * port, ..., root port). */
    for (size_t k = 0; d->switch_address != NULL && k + 1 < n; k += 2)
        read_acs(sc, &d->upstream[k]);
}

static bool is_nvidia_gpu(const struct pci_fn *fn)
{
    return fn->vendor == PCI_VENDOR_NVIDIA && PCI_CLASS_BASE(fn->class_code) == PCI_CLASS_DISPLAY;
}

/*
 * The lowest switch that fn shares with a GPU, as an index into fn's bridges nearest first (an
 * upstream port: odd, below the root port), or 0 when they share none.
 */
static size_t lowest_shared(const struct pci_fn *fn, const struct pci_fn *gpu)
{
    size_t n = (size_t)fn->depth - 1;

    for (size_t k = 1; k + 1 < n; k += 2) {
        if (is_below(gpu, fn->chain[n - 1 - k]))
            return k;
    }
    return 0;
}

/* The name people know a network card by: its RDMA device, else its interface (NULL: none). */
static char *read_nic_name(struct scan *sc, const char *addr)
{
    static const char *const dirs[] = { "infiniband", "net" };
    char *best = NULL;

    for (size_t i = 0; i < ARRAY_SIZE(dirs) && best == NULL; i++) {
        char rel[64];
        int fd;
        DIR *dir;
        struct dirent *e;

        snprintf(rel, sizeof(rel), "%s/%s", addr, dirs[i]);
        fd = openat(sc->dirfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if ((dir = fdopendir(fd)) == NULL) {
            close(fd);
            continue;
        }
        /* the first name in order, so that a card with two ports is named the same each time */
        while ((e = readdir(dir)) != NULL) {
            if (e->d_name[0] == '.' || (best != NULL && strcmp(e->d_name, best) >= 0))
                continue;
            free(best);
            best = xstrndup(e->d_name, 64);
        }
        closedir(dir);
    }
    if (best != NULL) {
        char *text = hostfs_text(best);

        free(best);
        best = text;
    }
    return best;
}

/*
 * The network cards under a switch that a GPU is also under, at any level: GPUDirect RDMA between
 * them enters the switch through the card's downstream port, and in nested switches through each
 * port on its way up to the lowest switch it shares with that GPU; their ACS is read up to the
 * highest of those switches, and for no other card.
 */
static void find_nics(struct scan *sc, struct pcie_info *p)
{
    size_t cap = 0;

    for (size_t i = 0; i < sc->n_fns; i++) {
        const struct pci_fn *fn = &sc->fns[i];
        size_t top = 0, n;
        struct pcie_nic *nic;

        if (PCI_CLASS_BASE(fn->class_code) != PCI_CLASS_NETWORK || fn->depth < 4)
            continue; /* no switch above it: a port, an upstream port and a root port at least */
        for (size_t j = 0; j < sc->n_fns; j++) {
            size_t k;

            if (is_nvidia_gpu(&sc->fns[j]) && sc->fns[j].depth > 0 &&
                (k = lowest_shared(fn, &sc->fns[j])) > top)
                top = k;
        }
        if (top == 0)
            continue;
        n = (size_t)fn->depth - 1;
        xgrow(&p->nics, &cap, p->n_nics + 1, sizeof(*p->nics));
        nic = &p->nics[p->n_nics++];
        memset(nic, 0, sizeof(*nic));
        nic->address = xstrdup(fn->addr);
        nic->vendor_id = fn->vendor;
        nic->device_id = fn->device;
        nic->class_code = fn->class_code;
        nic->driver = read_driver(sc, fn->addr);
        if ((nic->name = read_nic_name(sc, fn->addr)) != NULL)
            nic->valid |= UINT64_C(1) << PCIE_N_NAME;
        nic->upstream = xcalloc(n, sizeof(*nic->upstream));
        for (size_t k = 0; k < n; k++) {
            const struct pci_fn *b = find_fn(sc, fn->chain[n - 1 - k]);

            if (b == NULL) {
                collector_note(sc->st, "%s: the bridge %s above it is not in %s", fn->addr,
                               fn->chain[n - 1 - k], "/" DEVICES_DIR);
                break;
            }
            nic->upstream[k].address = xstrdup(b->addr);
            nic->upstream[k].vendor_id = b->vendor;
            nic->upstream[k].device_id = b->device;
            nic->upstream[k].class_code = b->class_code;
            read_link(sc, b->addr, &nic->upstream[k].link, &nic->upstream[k].valid, false);
            nic->n_upstream = k + 1;
        }
        if (nic->n_upstream < n)
            continue; /* an incomplete chain: its place is not known */
        nic->valid |= UINT64_C(1) << PCIE_N_UPSTREAM;
        for (size_t k = 0; k < top; k += 2)
            read_acs(sc, &nic->upstream[k]);
    }
    p->valid |= UINT64_C(1) << PCIE_I_NICS;
}

static void describe_gpu(struct scan *sc, const struct pci_fn *fn, struct pcie_device *d)
{
    uint64_t aer[3];

    memset(d, 0, sizeof(*d));
    d->address = xstrdup(fn->addr);
    d->vendor_id = fn->vendor;
    d->device_id = fn->device;
    d->class_code = fn->class_code;
    d->driver = read_driver(sc, fn->addr);
    read_link(sc, fn->addr, &d->link, &d->valid, true);
    read_numa(sc, d);
    read_iommu(sc, d);
    if (read_aer(sc, fn->addr, aer)) {
        d->aer_correctable = aer[0];
        d->aer_nonfatal = aer[1];
        d->aer_fatal = aer[2];
        d->valid |= UINT64_C(1) << PCIE_S_AER;
    }
    resolve_upstream(sc, fn, d);
}

/* Reads one entry of DEVICES_DIR; false when it cannot be classified (noted). */
static bool scan_fn(struct scan *sc, const char *name, struct pci_fn *fn)
{
    char target[1024];
    ssize_t n;

    memset(fn, 0, sizeof(*fn));
    snprintf(fn->addr, sizeof(fn->addr), "%s", name);
    fn->depth = -1;
    if (!read_hex(sc, name, "vendor", &fn->vendor) || !read_hex(sc, name, "device", &fn->device) ||
        !read_hex(sc, name, "class", &fn->class_code))
        return false;
    /* Where the device sits: the link points into /sys/devices/pciDDDD:BB/.../ADDR. */
    n = file_readlink_at(sc->dirfd, name, target, sizeof(target));
    if (n < 0) {
        collector_note(sc->st,
                       "/" DEVICES_DIR "/%s: cannot resolve its place in the hierarchy: "
                       "%s",
                       name, strerror((int)-n));
        return true;
    }
    fn->chain = xcalloc(MAX_DEPTH, sizeof(*fn->chain));
    fn->depth = sysfs_pci_path_chain(target, fn->chain, MAX_DEPTH);
    if (fn->depth < 1 || strcmp(fn->chain[fn->depth - 1], fn->addr) != 0) {
        char *text = hostfs_textn(target, strnlen(target, 200));

        collector_note(sc->st, "/" DEVICES_DIR "/%s: malformed link target \"%s\"", name, text);
        free(text);
        fn->depth = -1;
    }
    return true;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Fills sc->fns from DEVICES_DIR in address order (readdir's order depends on the filesystem;
 * sorted, the snapshot and its notes are the same wherever the tree is). Returns 0 or -errno.
 */
static int scan_devices(struct scan *sc)
{
    int fd = dup(sc->dirfd);
    char **names = NULL;
    size_t n_names = 0, cap_names = 0;
    struct dirent *de;
    DIR *dir;

    if (fd < 0)
        return -errno;
    dir = fdopendir(fd);
    if (dir == NULL) {
        int e = errno;

        close(fd);
        return -e;
    }
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        xgrow(&names, &cap_names, n_names + 1, sizeof(*names));
        names[n_names++] = xstrdup(de->d_name);
    }
    closedir(dir);
    qsort(names, n_names, sizeof(*names), name_cmp);
    for (size_t i = 0; i < n_names; i++) {
        if (!sysfs_pci_is_address(names[i])) {
            char *text = hostfs_textn(names[i], strnlen(names[i], 64));

            collector_note(sc->st, "/" DEVICES_DIR "/%s: not a PCI address, skipped", text);
            free(text);
        } else {
            xgrow(&sc->fns, &sc->cap_fns, sc->n_fns + 1, sizeof(*sc->fns));
            if (scan_fn(sc, names[i], &sc->fns[sc->n_fns]))
                sc->n_fns++;
            else
                free(sc->fns[sc->n_fns].chain);
        }
        free(names[i]);
    }
    free(names);
    return 0;
}

static void check_module(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_PCIE];

    /* Without /sys/module at all (sysfs not mounted, a bare fixture) nothing can be told. */
    if (faccessat(ctx->root.fd, "sys/module", F_OK, 0) != 0) {
        collector_note(st, "/sys/module: %s: cannot tell whether the nvidia module is loaded",
                       strerror(errno));
        return;
    }
    if (faccessat(ctx->root.fd, "sys/module/nvidia", F_OK, 0) == 0) {
        s->pcie.nvidia_module_loaded = true;
    } else if (errno != ENOENT) {
        collector_note(st, "/sys/module/nvidia: %s", strerror(errno));
        return;
    }
    s->pcie.valid |= UINT64_C(1) << PCIE_I_MODULE;
}

/* IOMMU: whether /sys/class/iommu has an entry, and the kernel command line's options. */
static void check_iommu(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_PCIE];
    struct numa_iommu_cmdline cmd;
    char *text = NULL;
    int fd = openat(ctx->root.fd, "sys/class/iommu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        DIR *dir = fdopendir(fd);
        struct dirent *e;

        if (dir != NULL) {
            while ((e = readdir(dir)) != NULL) {
                if (e->d_name[0] != '.')
                    s->pcie.iommu_present = true;
            }
            closedir(dir);
            s->pcie.valid |= UINT64_C(1) << PCIE_I_IOMMU;
        } else {
            close(fd);
        }
    } else if (errno == ENOENT && faccessat(ctx->root.fd, "sys/class", F_OK, 0) == 0) {
        s->pcie.valid |= UINT64_C(1) << PCIE_I_IOMMU; /* no IOMMU class: none active */
    } else if (errno != ENOENT) {
        collector_note(st, "/sys/class/iommu: %s", strerror(errno));
    }
    /* A missing file (a fixture tree, a bare chroot) leaves the fields unknown, with no note:
     * the IOMMU is context for the ACS rule, not something the PCIe section depends on. */
    if (file_slurp_text_at(ctx->root.fd, "proc/cmdline", 65536, &text) < 0) {
        if (errno != ENOENT)
            collector_note(st, "/proc/cmdline: %s: IOMMU options not collected", strerror(errno));
        return;
    }
    numa_parse_cmdline(text, &cmd);
    free(text);
    s->pcie.iommu_pt = cmd.iommu_pt;
    s->pcie.intel_iommu = cmd.intel_iommu;
    s->pcie.amd_iommu = cmd.amd_iommu;
    s->pcie.valid |= UINT64_C(1) << PCIE_I_CMDLINE;
}

/* How many NUMA nodes the machine has (node<N> entries); unknown when the directory is missing. */
static void count_nodes(struct collect_ctx *ctx, struct snapshot *s)
{
    int fd = openat(ctx->root.fd, NODE_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *dir;
    struct dirent *e;
    uint32_t n = 0, v;

    if (fd < 0) {
        if (errno != ENOENT)
            collector_note(&s->collectors[COLLECTOR_PCIE], "/" NODE_DIR ": %s", strerror(errno));
        return;
    }
    if ((dir = fdopendir(fd)) == NULL) {
        close(fd);
        return;
    }
    while ((e = readdir(dir)) != NULL) {
        if (strncmp(e->d_name, "node", 4) == 0 && str_to_u32(e->d_name + 4, 10, &v) &&
            n < UINT32_MAX)
            n++;
    }
    closedir(dir);
    s->pcie.numa_nodes = n;
    s->pcie.valid |= UINT64_C(1) << PCIE_I_NODES;
}

/* The CPUs of the GPU's NUMA node, checked as a cpulist. */
static void read_node_cpus(struct collect_ctx *ctx, struct collector_status *st,
                           struct pcie_device *d)
{
    char path[64], *text = NULL;
    uint64_t mask[NUMA_CPU_WORDS];
    ssize_t r;
    size_t n;

    if (!pcie_device_valid(d, PCIE_S_NUMA) || d->numa_node < 0)
        return;
    snprintf(path, sizeof(path), NODE_DIR "/node%d/cpulist", (int)d->numa_node);
    if ((r = file_slurp_text_at(ctx->root.fd, path, 65536, &text)) < 0) {
        if (r == -EILSEQ)
            free(text);
        if (r != -ENOENT)
            collector_note(st, "/%s: %s", path, strerror(r == -EILSEQ ? EINVAL : (int)-r));
        return;
    }
    n = strlen(text);
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
        text[--n] = '\0';
    if (numa_parse_cpulist(text, mask, NUMA_CPU_WORDS) < 0) {
        collector_note(st, "/%s: malformed: expected a cpulist such as \"0-31,64-95\"", path);
        free(text);
        return;
    }
    d->numa_cpus = str_sanitize(text);
    d->valid |= UINT64_C(1) << PCIE_S_NUMA_CPUS;
}

static void set_summary(struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_PCIE];
    const struct pcie_info *p = &s->pcie;

    if (p->n_gpus == 0)
        collector_set(st, st->state, "no NVIDIA PCI device in /sys/bus/pci/devices");
    else if ((p->valid >> PCIE_I_MODULE) & 1u && !p->nvidia_module_loaded)
        collector_set(st, st->state,
                      "%zu NVIDIA GPU%s in sysfs but the nvidia kernel module is not loaded",
                      p->n_gpus, p->n_gpus == 1 ? "" : "s");
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct collector_status *st = &s->collectors[COLLECTOR_PCIE];
    struct scan sc = { st, -1, NULL, 0, 0 };
    size_t cap = 0;
    int r;

    collector_set(st, CS_OK, NULL);
    check_module(ctx, s);
    check_iommu(ctx, s);
    sc.dirfd = openat(ctx->root.fd, DEVICES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sc.dirfd < 0) {
        int e = errno;

        collector_set(st, e == EACCES || e == EPERM ? CS_NO_PERMISSION : CS_UNAVAILABLE,
                      "cannot read %s: %s", "/" DEVICES_DIR, strerror(e));
        return NULL;
    }
    r = scan_devices(&sc);
    if (r < 0) {
        collector_set(st, CS_FAILED, "cannot list %s: %s", "/" DEVICES_DIR, strerror(-r));
        goto out;
    }
    s->pcie.devices_scanned = (uint32_t)sc.n_fns;
    for (size_t i = 0; i < sc.n_fns; i++) {
        if (!is_nvidia_gpu(&sc.fns[i]))
            continue;
        xgrow(&s->pcie.gpus, &cap, s->pcie.n_gpus + 1, sizeof(*s->pcie.gpus));
        describe_gpu(&sc, &sc.fns[i], &s->pcie.gpus[s->pcie.n_gpus]);
        read_node_cpus(ctx, st, &s->pcie.gpus[s->pcie.n_gpus++]);
    }
    find_nics(&sc, &s->pcie);
    count_nodes(ctx, s);
    s->pcie.valid |= UINT64_C(1) << PCIE_I_GPUS;
    set_summary(s);
out:
    for (size_t i = 0; i < sc.n_fns; i++)
        free(sc.fns[i].chain);
    free(sc.fns);
    close(sc.dirfd);
    return NULL;
}

/* With a window, the AER counters are read again: errors that grow now matter most. */
static void finish(struct collect_ctx *ctx, void *state, struct snapshot *s)
{
    struct scan sc = { &s->collectors[COLLECTOR_PCIE], -1, NULL, 0, 0 };

    (void)state;
    if (ctx->opts->window_ms <= 0 || s->pcie.n_gpus == 0)
        return;
    sc.dirfd = openat(ctx->root.fd, DEVICES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sc.dirfd < 0) {
        collector_note(sc.st, "/" DEVICES_DIR ": %s: AER counters not read again", strerror(errno));
        return;
    }
    for (size_t i = 0; i < s->pcie.n_gpus; i++) {
        struct pcie_device *d = &s->pcie.gpus[i];
        uint64_t aer[3];

        if (!pcie_device_valid(d, PCIE_S_AER) || !read_aer(&sc, d->address, aer))
            continue;
        d->aer_correctable_window = aer[0] > d->aer_correctable ? aer[0] - d->aer_correctable : 0;
        d->aer_nonfatal_window = aer[1] > d->aer_nonfatal ? aer[1] - d->aer_nonfatal : 0;
        d->aer_fatal_window = aer[2] > d->aer_fatal ? aer[2] - d->aer_fatal : 0;
        d->valid |= UINT64_C(1) << PCIE_S_AER_WINDOW;
    }
    close(sc.dirfd);
}

const struct collector_ops collector_pcie = { COLLECTOR_PCIE, start, NULL, finish };
