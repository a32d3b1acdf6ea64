/*
 * Pure parsers for NUMA placement, NCCL settings, ACS and IOMMU: see numa-parse.h.
 */
#include "collect/numa-parse.h"

#include <string.h>

#define ACS_CAP_ID    0x000Du
#define EXT_CAP_START 0x100u
#define CONFIG_MAX    4096u

const char *const numa_nccl_names[NUMA_NCCL_VARS] = {
    "NCCL_P2P_DISABLE",   "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME",
    "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL",  "NCCL_IB_HCA",      "NCCL_ALGO",
    "NCCL_PROTO",         "NCCL_DEBUG",
};

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

enum numa_acs_result numa_parse_acs(const uint8_t *config, size_t len, uint16_t *ctrl)
{
    size_t off = EXT_CAP_START;
    unsigned steps;

    if (len > CONFIG_MAX)
        len = CONFIG_MAX;
    if (len < EXT_CAP_START + 4)
        return len < 64 ? NUMA_ACS_MALFORMED : NUMA_ACS_NEEDS_ROOT;
    for (steps = 0; steps < 1024; steps++) {
        uint32_t hdr;

        if (off < EXT_CAP_START || (off & 3) || off + 4 > len)
            return NUMA_ACS_MALFORMED;
        hdr = rd32(config + off);
        if (hdr == 0 || hdr == 0xffffffffu)
            return NUMA_ACS_ABSENT;
        if ((hdr & 0xffffu) == ACS_CAP_ID) {
            if (off + 8 > len)
                return NUMA_ACS_MALFORMED;
            *ctrl = (uint16_t)(config[off + 6] | config[off + 7] << 8);
            return NUMA_ACS_FOUND;
        }
        off = hdr >> 20;
        if (off == 0)
            return NUMA_ACS_ABSENT;
    }
    return NUMA_ACS_MALFORMED;
}

static bool word_is(const char *w, size_t n, const char *s)
{
    return strlen(s) == n && memcmp(w, s, n) == 0;
}

/* "on" / "off" as the first comma-separated option of a value; -1 for neither. */
static int on_off(const char *v, size_t n)
{
    size_t k = 0;

    while (k < n && v[k] != ',')
        k++;
    if (word_is(v, k, "on") || word_is(v, k, "1") || word_is(v, k, "force"))
        return 1;
    if (word_is(v, k, "off") || word_is(v, k, "0"))
        return 0;
    return -1;
}

void numa_parse_cmdline(const char *text, struct numa_iommu_cmdline *out)
{
    const char *p = text;

    out->iommu_pt = out->iommu_off = false;
    out->intel_iommu = out->amd_iommu = -1;
    while (*p) {
        const char *w, *eq;
        size_t n, kn;

        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        w = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        n = (size_t)(p - w);
        if (n == 0)
            continue;
        eq = memchr(w, '=', n);
        if (eq == NULL)
            continue;
        kn = (size_t)(eq - w);
        if (word_is(w, kn, "iommu")) {
            size_t vn = n - kn - 1;
            if (word_is(eq + 1, vn, "pt"))
                out->iommu_pt = true;
            else if (word_is(eq + 1, vn, "off"))
                out->iommu_off = true;
        } else if (word_is(w, kn, "intel_iommu")) {
            int v = on_off(eq + 1, n - kn - 1);
            if (v >= 0)
                out->intel_iommu = v;
        } else if (word_is(w, kn, "amd_iommu")) {
            int v = on_off(eq + 1, n - kn - 1);
            out->amd_iommu = v >= 0 ? v : 1; /* amd_iommu=fullflush etc.: the IOMMU is on */
        }
    }
}

void numa_parse_environ(const char *env, size_t len, struct numa_nccl_env *out)
{
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    while (pos < len) {
        const char *e = env + pos;
        const char *end = memchr(e, '\0', len - pos);
        size_t n = end ? (size_t)(end - e) : len - pos;
        const char *eq = memchr(e, '=', n);

        pos += n + 1;
        if (eq == NULL || n < 5 || memcmp(e, "NCCL_", 5) != 0)
            continue;
        for (size_t i = 0; i < NUMA_NCCL_VARS; i++) {
            size_t vn, j, o = 0;

            if (!word_is(e, (size_t)(eq - e), numa_nccl_names[i]))
                continue;
            vn = n - (size_t)(eq - e) - 1;
            for (j = 0; j < vn && o < NUMA_NCCL_VALUE_SIZE - 1; j++) {
                unsigned char c = (unsigned char)eq[1 + j];
                out->value[i][o++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
            }
            out->value[i][o] = '\0';
            out->set[i] = true;
            break;
        }
    }
}

static bool read_num(const char **p, unsigned long *v)
{
    unsigned long x = 0;

    if (**p < '0' || **p > '9')
        return false;
    while (**p >= '0' && **p <= '9') {
        x = x * 10 + (unsigned long)(**p - '0');
        if (x > 1u << 20)
            return false;
        (*p)++;
    }
    *v = x;
    return true;
}

int numa_parse_cpulist(const char *text, uint64_t *mask, size_t nwords)
{
    const char *p = text;
    int count = 0;

    memset(mask, 0, nwords * sizeof(*mask));
    while (*p == ' ')
        p++;
    if (*p == '\n' || *p == '\0')
        return (*p == '\0' || p[1] == '\0') ? 0 : -1;
    for (;;) {
        unsigned long a, b;

        if (!read_num(&p, &a))
            return -1;
        b = a;
        if (*p == '-') {
            p++;
            if (!read_num(&p, &b) || b < a)
                return -1;
        }
        if (b >= nwords * 64)
            return -1;
        for (unsigned long c = a; c <= b; c++) {
            if (!(mask[c / 64] & (1ull << (c % 64)))) {
                mask[c / 64] |= 1ull << (c % 64);
                count++;
            }
        }
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '\n')
            p++;
        return *p == '\0' ? count : -1;
    }
}
