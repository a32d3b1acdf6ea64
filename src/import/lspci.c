/*
 * lspci's verbose output (-v, -vv, -vvv, with -nn, -D, and -x/-xxx/-xxxx hex dumps), as pasted
 * or as nvidia-bug-report.log holds it: the NVIDIA display devices with their link capability
 * and status (LnkCap, LnkSta; or, without -vv, from the PCI Express capability in the hex dump of
 * the configuration space), bound driver and NUMA node, into the PCIe part of the snapshot.
 * Bridges, peers under a switch and AER counters are not in lspci's output: they stay unknown.
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One device block as read. */
struct dev {
    bool open;
    char address[32];
    bool nvidia, display;
    uint32_t device_id, class_code;
    bool ids_known;
    char driver[64];
    bool numa_known;
    int32_t numa;
    double cap_speed, sta_speed;
    uint32_t cap_width, sta_width;
    bool cap_known, sta_known;
    unsigned char cfg[256];
    bool cfg_have[256];
    unsigned long line;
};

/* "3b:00.0 VGA compatible controller: ..." or "0000:3b:00.0 3D controller [0302]: ..." */
static bool device_line(const char *s, char *addr, size_t size)
{
    char first[40];
    char pci[32];

    if (!isxdigit((unsigned char)s[0]))
        return false;
    snprintf(first, sizeof(first), "%s", s);
    first[strcspn(first, " ")] = '\0';
    if (strchr(first, '.') == NULL || strchr(first, ':') == NULL ||
        !imp_pci_nvml(first, pci, sizeof(pci)) || strstr(s, ": ") == NULL)
        return false;
    /* as sysfs names it: "0000:3b:00.0" */
    snprintf(addr, size, "%s", pci + 4);
    for (char *c = addr; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    if (strlen(first) > 12) {
        char dom[9];

        snprintf(dom, sizeof(dom), "%.8s", pci);
        if (strtoul(dom, NULL, 16) > 0xffff)
            return false;
    }
    return true;
}

static bool detect(const char *text, size_t len)
{
    struct lines l;
    bool device = false;

    lines_init(&l, text, len);
    while (lines_next(&l) && l.no < 20000) {
        char addr[32];

        if (device_line(l.line, addr, sizeof(addr)) && strstr(l.line, "NVIDIA"))
            device = true;
        if (device && (strstr(l.line, "LnkSta:") || strncmp(l.line, "00: de 10", 9) == 0 ||
                       strstr(l.line, "Kernel driver in use:") ||
                       strstr(l.line, "Capabilities: [") || strstr(l.line, "NUMA node")))
            return true;
    }
    return false;
}

/* "Speed 8GT/s" / "Speed 2.5GT/s (downgraded)" and "Width x16" in a LnkCap/LnkSta line. */
static void link_of(const char *s, double *speed, uint32_t *width, bool *known)
{
    const char *sp = strstr(s, "Speed "), *w = strstr(s, "Width x");

    if (sp == NULL || w == NULL)
        return;
    *speed = strtod(sp + 6, NULL);
    *width = (uint32_t)strtoul(w + 7, NULL, 10);
    *known = *speed > 0 && *width > 0 && *width <= 32;
}

static uint32_t gen_of(double gts)
{
    static const double speeds[] = { 2.5, 5, 8, 16, 32, 64 };

    for (size_t i = 0; i < ARRAY_SIZE(speeds); i++) {
        if (gts > speeds[i] - 0.01 && gts < speeds[i] + 0.01)
            return (uint32_t)i + 1;
    }
    return 0;
}

/* The link from the PCI Express capability in the dumped configuration space. */
static void link_from_config(struct dev *d)
{
    static const double speeds[] = { 0, 2.5, 5, 8, 16, 32, 64 };
    unsigned ptr;
    int hops = 0;

    if (!d->cfg_have[0x34] || !(d->cfg_have[0x06] && (d->cfg[0x06] & 0x10)))
        return; /* no capability list */
    ptr = d->cfg[0x34] & 0xfc;
    while (ptr >= 0x40 && ptr < 0xfc && hops++ < 48) {
        if (!d->cfg_have[ptr] || !d->cfg_have[ptr + 1])
            return;
        if (d->cfg[ptr] == 0x10 && ptr + 0x13 < 256 && d->cfg_have[ptr + 0x0c] &&
            d->cfg_have[ptr + 0x0d] && d->cfg_have[ptr + 0x12] && d->cfg_have[ptr + 0x13]) {
            unsigned cap = d->cfg[ptr + 0x0c] | d->cfg[ptr + 0x0d] << 8;
            unsigned sta = d->cfg[ptr + 0x12] | d->cfg[ptr + 0x13] << 8;

            if (!d->cap_known && (cap & 0xf) >= 1 && (cap & 0xf) <= 6 && ((cap >> 4) & 0x3f)) {
                d->cap_speed = speeds[cap & 0xf];
                d->cap_width = (cap >> 4) & 0x3f;
                d->cap_known = true;
            }
            if (!d->sta_known && (sta & 0xf) >= 1 && (sta & 0xf) <= 6 && ((sta >> 4) & 0x3f)) {
                d->sta_speed = speeds[sta & 0xf];
                d->sta_width = (sta >> 4) & 0x3f;
                d->sta_known = true;
            }
            return;
        }
        ptr = d->cfg[ptr + 1] & 0xfc;
    }
}

static void commit(struct imp *im, struct dev *d)
{
    struct pcie_info *p = &im->s->pcie;
    struct pcie_device *pd = NULL;

    if (!d->open)
        return;
    d->open = false;
    if (d->cfg_have[0] && d->cfg_have[1] && d->cfg_have[2] && d->cfg_have[3]) {
        d->nvidia = (d->cfg[0] | d->cfg[1] << 8) == 0x10de;
        d->device_id = d->cfg[2] | (uint32_t)d->cfg[3] << 8;
        d->ids_known = true;
    }
    if (d->cfg_have[0x09] && d->cfg_have[0x0a] && d->cfg_have[0x0b]) {
        d->class_code = d->cfg[0x09] | (uint32_t)d->cfg[0x0a] << 8 | (uint32_t)d->cfg[0x0b] << 16;
        d->display = d->cfg[0x0b] == 0x03;
    }
    link_from_config(d);
    /* Only NVIDIA display devices, as the live collector keeps (not the audio function). */
    if (!d->nvidia || !d->display)
        return;
    for (size_t i = 0; i < p->n_gpus; i++) {
        if (p->gpus[i].address && strcmp(p->gpus[i].address, d->address) == 0)
            pd = &p->gpus[i];
    }
    if (pd == NULL) {
        if (p->n_gpus >= IMP_MAX_GPUS)
            return;
        p->gpus = xreallocarray(p->gpus, p->n_gpus + 1, sizeof(*p->gpus));
        pd = &p->gpus[p->n_gpus++];
        memset(pd, 0, sizeof(*pd));
        pd->address = xstrdup(d->address);
        pd->numa_node = -1;
    }
    imp_touch(im, COLLECTOR_PCIE);
    pd->vendor_id = 0x10de;
    if (d->ids_known)
        pd->device_id = d->device_id;
    if (d->class_code)
        pd->class_code = d->class_code;
    if (d->driver[0] && pd->driver == NULL)
        pd->driver = str_sanitized(d->driver);
    if (d->numa_known && !pcie_device_valid(pd, PCIE_S_NUMA)) {
        pd->numa_node = d->numa;
        pd->valid |= UINT64_C(1) << PCIE_S_NUMA;
    }
    if (d->sta_known && !pcie_device_valid(pd, PCIE_S_LINK_SPEED)) {
        pd->link.speed_gts = d->sta_speed;
        pd->link.width = d->sta_width;
        pd->valid |= UINT64_C(1) << PCIE_S_LINK_SPEED | UINT64_C(1) << PCIE_S_LINK_WIDTH;
        if ((pd->link.gen = gen_of(d->sta_speed)) != 0)
            pd->valid |= UINT64_C(1) << PCIE_S_LINK_GEN;
    }
    if (d->cap_known && !pcie_device_valid(pd, PCIE_S_LINK_SPEED_MAX)) {
        pd->link.speed_max_gts = d->cap_speed;
        pd->link.width_max = d->cap_width;
        pd->valid |= UINT64_C(1) << PCIE_S_LINK_SPEED_MAX | UINT64_C(1) << PCIE_S_LINK_WIDTH_MAX;
        if ((pd->link.gen_max = gen_of(d->cap_speed)) != 0)
            pd->valid |= UINT64_C(1) << PCIE_S_LINK_GEN_MAX;
    }
}

/* "00: de 10 07 1e 07 05 10 00 a1 00 00 03 00 00 80 00" */
static bool hex_line(struct dev *d, const char *s)
{
    unsigned off;
    int n = 0;
    const char *p;

    if (sscanf(s, "%x:%n", &off, &n) != 1 || n == 0 || off % 16 != 0 || strlen(s) < 50)
        return false;
    p = s + n;
    for (unsigned i = 0; i < 16; i++) {
        unsigned b;
        int k = 0;

        if (sscanf(p, " %2x%n", &b, &k) != 1)
            return true;
        p += k;
        if (off + i < sizeof(d->cfg)) {
            d->cfg[off + i] = (unsigned char)b;
            d->cfg_have[off + i] = true;
        }
    }
    return true;
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct dev d;
    struct lines l;
    unsigned devices = 0;

    memset(&d, 0, sizeof(d));
    lines_init(&l, text, len);
    while (lines_next(&l)) {
        const char *s = l.line, *t = str_ltrim(l.line);
        char addr[32];

        if (s[0] != ' ' && s[0] != '\t' && device_line(s, addr, sizeof(addr))) {
            commit(im, &d);
            memset(&d, 0, sizeof(d));
            d.open = true;
            d.line = l.no;
            snprintf(d.address, sizeof(d.address), "%s", addr);
            d.nvidia = strstr(s, "NVIDIA") != NULL || strstr(s, "nVidia") != NULL ||
                       strstr(s, "[10de:") != NULL;
            d.display = strstr(s, "VGA compatible controller") || strstr(s, "3D controller") ||
                        strstr(s, "Display controller");
            /* lspci -nn: "3D controller [0302]: NVIDIA ... [10de:20b0]" */
            {
                const char *ids = strstr(s, "[10de:");
                unsigned dev, cls;

                if (ids != NULL && sscanf(ids, "[10de:%4x]", &dev) == 1) {
                    d.device_id = dev;
                    d.ids_known = true;
                }
                if (sscanf(strchr(s, ' ') + 1, "%*[^[][%4x]:", &cls) == 1)
                    d.class_code = cls << 8;
            }
            devices++;
            continue;
        }
        if (!d.open)
            continue;
        if (strncmp(t, "LnkCap:", 7) == 0)
            link_of(t, &d.cap_speed, &d.cap_width, &d.cap_known);
        else if (strncmp(t, "LnkSta:", 7) == 0)
            link_of(t, &d.sta_speed, &d.sta_width, &d.sta_known);
        else if (strncmp(t, "Kernel driver in use:", 21) == 0)
            snprintf(d.driver, sizeof(d.driver), "%s", str_ltrim(t + 21));
        else if (strncmp(t, "NUMA node:", 10) == 0)
            d.numa_known = sscanf(t + 10, "%d", &d.numa) == 1;
        else if (strstr(t, "NUMA node ") != NULL && strncmp(t, "Flags:", 6) == 0)
            d.numa_known = sscanf(strstr(t, "NUMA node ") + 10, "%d", &d.numa) == 1;
        else if (isxdigit((unsigned char)t[0]))
            hex_line(&d, t);
    }
    commit(im, &d);
    if (devices == 0) {
        imp_fail(im, 1, "no lspci device (\"3b:00.0 3D controller: NVIDIA ...\")");
        return;
    }
    im->found = true;
    /*
     * The snapshot keeps a list of GPUs on the bus only as a whole (PCIE_I_GPUS): the devices
     * read are that list. A bug report's is every NVIDIA device; a paste may hold fewer, which
     * never makes a GPU look missing (that takes one NVML does not list).
     */
    if (im->s->pcie.n_gpus > 0 || im->list_complete)
        im->s->pcie.valid |= UINT64_C(1) << PCIE_I_GPUS;
    if (!im->list_complete && im->s->pcie.n_gpus > 0)
        imp_note(im, COLLECTOR_PCIE, 0,
                 "the NVIDIA devices lspci printed here are taken as the "
                 "GPUs on the bus");
}

const struct importer importer_lspci = {
    "lspci",
    "lspci -v/-vv/-vvv (and -x/-xxx hex dumps) of the NVIDIA devices",
    detect,
    run,
};
