/*
 * nvidia-bug-report.log (nvidia-bug-report.sh, any version since 2009; import.c decompresses the
 * .gz): sections separated by lines of underscores, each led by the file it copies ("*** /proc/
 * driver/nvidia/version") or the command it ran ("/usr/bin/nvidia-smi --query"). Every section
 * gpudoctor has a place for is read, by the importer of its format: nvidia-smi -q, lspci of the
 * NVIDIA devices, the kernel log (the scan for NVIDIA messages and dmesg), /proc/driver/nvidia
 * (the module's version and each GPU's information), /proc/modules, /proc/meminfo,
 * /proc/cpuinfo, uname. The rest (X, ACPI, firmware dumps) is skipped.
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

enum kind {
    S_OTHER,
    S_PROLOGUE,
    S_SMI_QUERY,
    S_SMI_OTHER,
    S_LSPCI,
    S_KLOG_SCAN,
    S_DMESG,
    S_DRIVER_VERSION,
    S_GPU_INFO,
    S_MODULES,
    S_MEMINFO,
    S_CPUINFO,
    S_PROC_VERSION,
    S__COUNT
};

/* The order sections are read in: GPUs first (their indices), the kernel log with its year. */
static const enum kind order[] = {
    S_PROLOGUE,     S_SMI_QUERY, S_SMI_OTHER, S_LSPCI,     S_DRIVER_VERSION, S_MODULES,
    S_PROC_VERSION, S_MEMINFO,   S_CPUINFO,   S_KLOG_SCAN, S_DMESG,          S_GPU_INFO,
};

struct section {
    enum kind kind;
    const char *text; /* after its header line */
    size_t len;
    unsigned long line0; /* lines of the file before text */
};

static bool separator(const char *line)
{
    size_t n = 0;

    while (line[n] == '_')
        n++;
    return n >= 20 && line[n] == '\0';
}

static bool detect(const char *text, size_t len)
{
    size_t n = len < 8192 ? len : 8192;

    return memmem(text, n, "Start of NVIDIA bug report log file", 35) != NULL ||
           memmem(text, n, "nvidia-bug-report.sh Version:", 29) != NULL;
}

static enum kind classify(const char *head)
{
    const char *h = str_ltrim(head);

    if (strstr(h, "Start of NVIDIA bug report log file"))
        return S_PROLOGUE;
    if (strncmp(h, "*** ", 4) == 0) {
        const char *path = h + 4;

        if (strstr(path, "does not exist"))
            return S_OTHER;
        if (strncmp(path, "/proc/driver/nvidia/", 20) == 0 && str_ends(path, "/version"))
            return S_DRIVER_VERSION;
        if (strncmp(path, "/proc/driver/nvidia/", 20) == 0 && strstr(path, "/gpus/") &&
            str_ends(path, "/information"))
            return S_GPU_INFO;
        if (strcmp(path, "/proc/modules") == 0)
            return S_MODULES;
        if (strcmp(path, "/proc/meminfo") == 0)
            return S_MEMINFO;
        if (strcmp(path, "/proc/cpuinfo") == 0)
            return S_CPUINFO;
        if (strcmp(path, "/proc/version") == 0)
            return S_PROC_VERSION;
        return S_OTHER;
    }
    if (strstr(h, "Scanning kernel log files for NVIDIA kernel messages"))
        return S_KLOG_SCAN;
    if (strcmp(h, "dmesg:") == 0 || strncmp(h, "dmesg -", 7) == 0)
        return S_DMESG;
    if (strstr(h, "lspci") && strstr(h, "10de") && h[0] == '/')
        return S_LSPCI;
    if (strstr(h, "nvidia-smi") && !strstr(h, "--unit") && !strstr(h, "base64") &&
        (strstr(h, "--query") || strstr(h, " -q")) && !strstr(h, "-x"))
        return S_SMI_QUERY;
    if (strstr(h, "nvidia-smi") && (h[0] == '/' || strncmp(h, "nvidia-smi", 10) == 0) &&
        !strstr(h, "base64") && !strstr(h, "--unit"))
        return S_SMI_OTHER;
    return S_OTHER;
}

/* The part of a "*** FILE" section after its "*** ls: ..." line. */
static const char *after_ls(const char *text, size_t len, unsigned long *skipped)
{
    const char *p = text, *end = text + len;

    *skipped = 0;
    while (p < end && strncmp(p, "*** ", 4) == 0) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        p = nl ? nl + 1 : end;
        (*skipped)++;
    }
    return p;
}

/*
 * "Date: Thu Sep  7 10:55:12 CST 2017" (date(1) in the C locale; 12-hour forms too), in the time
 * zone the importer reads it in (see report_zone): Unix milliseconds, or 0. The zone's name is
 * copied to zone ("" when there is none).
 */
static int64_t date_ms(const char *v, char *zone, size_t size)
{
    char wd[8], mon[8], hm[16], a[16], b[16];
    int day, year, h, m, sec;
    char stamp[64];
    int n;

    zone[0] = '\0';
    n = sscanf(v, "%7s %7s %d %15s %15s %15s %d", wd, mon, &day, hm, a, b, &year);
    if (n == 7 && (strcmp(a, "AM") == 0 || strcmp(a, "PM") == 0) &&
        sscanf(hm, "%d:%d:%d", &h, &m, &sec) == 3) {
        h = h % 12 + (strcmp(a, "PM") == 0 ? 12 : 0);
        snprintf(stamp, sizeof(stamp), "%s %s %2d %02d:%02d:%02d %d", wd, mon, day, h, m, sec,
                 year);
        snprintf(zone, size, "%s", b);
        return imp_time_ctime(stamp);
    }
    if (sscanf(v, "%7s %7s %d %15s %15s %d", wd, mon, &day, hm, a, &year) == 6) {
        snprintf(stamp, sizeof(stamp), "%s %s %2d %s %d", wd, mon, day, hm, year);
        snprintf(zone, size, "%s", a);
        return imp_time_ctime(stamp);
    }
    return 0;
}

/*
 * The offset east of UTC, in seconds, of a zone date(1) names: UTC, GMT (and UCT, Z), or a
 * number, as tzdata names the zones that have no abbreviation of their own ("+08", "-03",
 * "+0530"). False for any other name: an abbreviation does not give its offset (CST is China's
 * +08 and US Central's -06, IST India's, Ireland's or Israel's).
 */
static bool zone_offset(const char *zone, long *east_s)
{
    size_t n = strlen(zone);
    long hh, mm = 0;

    if (strcmp(zone, "UTC") == 0 || strcmp(zone, "GMT") == 0 || strcmp(zone, "UCT") == 0 ||
        strcmp(zone, "Z") == 0) {
        *east_s = 0;
        return true;
    }
    if ((n != 3 && n != 5) || (zone[0] != '+' && zone[0] != '-') ||
        strspn(zone + 1, "0123456789") != n - 1)
        return false;
    hh = (zone[1] - '0') * 10 + (zone[2] - '0');
    if (n == 5)
        mm = (zone[3] - '0') * 10 + (zone[4] - '0');
    if (hh > 14 || mm > 59)
        return false;
    *east_s = (zone[0] == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    return true;
}

/*
 * A report's times have no zone but its date's: its date, nvidia-smi's timestamps and the kernel
 * log's syslog stamps are the wall clock of the machine it was taken on. When the date names the
 * zone's offset, they are read in that zone (TZ set for the import, then given back), so the
 * snapshot's time is the report's; else in this machine's, as syslog stamps are, so the kernel
 * log's ages (the report's time less an event's) hold, but not the times themselves, which a
 * note says. Returns what TZ was, to give back (report_zone_end), when it was set.
 */
struct zone_saved {
    bool set;
    char *tz; /* NULL: TZ was not set */
};

static struct zone_saved report_zone(struct imp *im, const char *date, unsigned long line)
{
    struct zone_saved z = { false, NULL };
    char zone[16], tz[48];
    const char *old;
    long east;

    if (date_ms(date, zone, sizeof(zone)) == 0 || zone[0] == '\0')
        return z;
    if (!zone_offset(zone, &east)) {
        char *shown = str_sanitized(zone);

        imp_note(im, COLLECTOR_HOST, line,
                 "the report's date names the time zone \"%s\", whose offset from UTC the name "
                 "does not give: its times (the date, nvidia-smi's, the kernel log's) are read in "
                 "this machine's time zone, and may be hours off; the kernel-log events' ages "
                 "hold",
                 shown);
        free(shown);
        return z;
    }
    old = getenv("TZ");
    z.set = true;
    z.tz = old ? xstrdup(old) : NULL;
    /* POSIX counts west of UTC: "<+0530>-05:30" is 5 h 30 east */
    snprintf(tz, sizeof(tz), "<UTC%c%02ld%02ld>%c%02ld:%02ld", east < 0 ? '-' : '+',
             labs(east) / 3600, labs(east) % 3600 / 60, east < 0 ? '+' : '-', labs(east) / 3600,
             labs(east) % 3600 / 60);
    setenv("TZ", tz, 1);
    tzset();
    return z;
}

static void report_zone_end(struct zone_saved *z)
{
    if (!z->set)
        return;
    if (z->tz != NULL)
        setenv("TZ", z->tz, 1);
    else
        unsetenv("TZ");
    tzset();
    free(z->tz);
    z->set = false;
}

static void prologue(struct imp *im, const char *text, size_t len)
{
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        char *w[4], copy[IMP_MAX_LINE + 16], *save = NULL;
        size_t n = 0;

        if (strncmp(l.line, "uname:", 6) != 0)
            continue;
        snprintf(copy, sizeof(copy), "%s", l.line + 6);
        for (char *t = strtok_r(copy, " ", &save); t && n < 4; t = strtok_r(NULL, " ", &save))
            w[n++] = t;
        /* "uname: Linux HOST RELEASE #..." */
        if (n >= 3 && strcmp(w[0], "Linux") == 0) {
            if (im->s->hostname == NULL)
                im->s->hostname = str_sanitized(w[1]);
            if (!host_valid(&im->s->host, HOST_S_KERNEL)) {
                im->s->host.kernel_release = str_sanitized(w[2]);
                host_set_valid(&im->s->host, HOST_S_KERNEL);
                imp_touch(im, COLLECTOR_HOST);
            }
        }
    }
}

/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023" */
static void driver_version(struct imp *im, const char *text, size_t len)
{
    struct driver_info *d = &im->s->driver;
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        const char *p = strstr(l.line, "Kernel Module");
        char v[64];

        if (strncmp(l.line, "NVRM version:", 13) != 0 || d->module_banner != NULL)
            continue;
        d->module_banner = str_sanitized(l.line);
        if (p != NULL && sscanf(p + strlen("Kernel Module"), "%63s", v) == 1 &&
            isdigit((unsigned char)v[0]))
            d->module_version = str_sanitized(v);
        d->module_flavor = xstrdup(strstr(l.line, "Open Kernel Module") ? "open" : "proprietary");
        /* The file exists: the module was loaded when the report was made. */
        d->module_loaded = true;
        imp_touch(im, COLLECTOR_DRIVER);
    }
}

static void modules(struct imp *im, const char *text, size_t len)
{
    struct driver_info *d = &im->s->driver;
    struct lines l;
    bool nvidia = false, uvm = false;

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        nvidia |= strncmp(l.line, "nvidia ", 7) == 0;
        uvm |= strncmp(l.line, "nvidia_uvm ", 11) == 0;
    }
    if (d->valid & (UINT64_C(1) << DRIVER_S_MODULE))
        return;
    d->module_loaded = nvidia || d->module_loaded;
    d->uvm_loaded = uvm;
    d->valid |= UINT64_C(1) << DRIVER_S_MODULE;
    imp_touch(im, COLLECTOR_DRIVER);
}

static void meminfo(struct imp *im, const char *text, size_t len)
{
    struct host_info *h = &im->s->host;
    unsigned long long total = 0, avail = 0, stotal = 0, sfree = 0;
    bool t = false, a = false, st = false, sf = false;
    struct lines l;

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        t |= sscanf(l.line, "MemTotal: %llu kB", &total) == 1;
        a |= sscanf(l.line, "MemAvailable: %llu kB", &avail) == 1;
        st |= sscanf(l.line, "SwapTotal: %llu kB", &stotal) == 1;
        sf |= sscanf(l.line, "SwapFree: %llu kB", &sfree) == 1;
    }
    if (t && !host_valid(h, HOST_S_MEM) && total < UINT64_MAX / 1024) {
        h->mem_total_bytes = total * 1024;
        host_set_valid(h, HOST_S_MEM);
        if (a && avail <= total) {
            h->mem_available_bytes = avail * 1024;
            host_set_valid(h, HOST_S_MEM_AVAILABLE);
        }
        imp_touch(im, COLLECTOR_HOST);
    }
    if (st && sf && sfree <= stotal && !host_valid(h, HOST_S_SWAP) && stotal < UINT64_MAX / 1024) {
        h->swap_total_bytes = stotal * 1024;
        h->swap_free_bytes = sfree * 1024;
        host_set_valid(h, HOST_S_SWAP);
    }
}

static void cpuinfo(struct imp *im, const char *text, size_t len)
{
    struct host_info *h = &im->s->host;
    struct lines l;
    uint32_t n = 0;

    lines_init(&l, text, len);
    while (lines_next(&l))
        n += strncmp(l.line, "processor", 9) == 0 && strchr(l.line, ':') != NULL;
    if (n > 0 && !host_valid(h, HOST_S_CPUS)) {
        h->cpus = n;
        host_set_valid(h, HOST_S_CPUS);
        imp_touch(im, COLLECTOR_HOST);
    }
}

static void proc_version(struct imp *im, const char *text, size_t len)
{
    char release[128];
    struct host_info *h = &im->s->host;

    if (len > 14 && sscanf(text, "Linux version %127s", release) == 1 &&
        !host_valid(h, HOST_S_KERNEL)) {
        h->kernel_release = str_sanitized(release);
        host_set_valid(h, HOST_S_KERNEL);
        imp_touch(im, COLLECTOR_HOST);
    }
}

/*
 * /proc/driver/nvidia/gpus/ADDR/information: "Model:", "GPU UUID:", "Video BIOS:", "Device
 * Minor:". Fills what nvidia-smi left unknown about the GPUs it listed.
 */
static void gpu_info(struct imp *im, const char *text, size_t len, unsigned long line0)
{
    char bus[64] = "", model[256] = "", uuid[128] = "", vbios[64] = "", minor[16] = "";
    struct lines l;
    struct gpu *g = NULL;
    char pci[32];

    lines_init(&l, text, len);
    while (lines_next(&l)) {
        char *colon = strchr(l.line, ':'), *v;

        if (colon == NULL)
            continue;
        v = imp_trim(colon + 1);
        *colon = '\0';
        if (strcmp(l.line, "Model") == 0)
            snprintf(model, sizeof(model), "%s", v);
        else if (strcmp(l.line, "GPU UUID") == 0)
            snprintf(uuid, sizeof(uuid), "%s", v);
        else if (strcmp(l.line, "Video BIOS") == 0)
            snprintf(vbios, sizeof(vbios), "%s", v);
        else if (strcmp(l.line, "Bus Location") == 0)
            snprintf(bus, sizeof(bus), "%s", v);
        else if (strcmp(l.line, "Device Minor") == 0)
            snprintf(minor, sizeof(minor), "%s", v);
    }
    if (!imp_pci_nvml(bus, pci, sizeof(pci)))
        return;
    for (size_t i = 0; i < im->s->n_gpus && g == NULL; i++) {
        if (gpu_valid(&im->s->gpus[i], GPU_S_PCI_BUS_ID) &&
            driver_pci_same(im->s->gpus[i].pci_bus_id, pci))
            g = &im->s->gpus[i];
    }
    if (g == NULL)
        return; /* a GPU nvidia-smi did not list: the PCIe view has it */
    if (model[0])
        imp_gpu_set(im, g, "name", model, IU_STR, line0);
    if (strncmp(uuid, "GPU-", 4) == 0)
        imp_gpu_set(im, g, "uuid", uuid, IU_STR, line0);
    if (minor[0])
        imp_gpu_set(im, g, "minor_number", minor, IU_NUM, line0);
    (void)vbios; /* the driver writes it lower case; -q's spelling is kept */
}

static void read_section(struct imp *im, const struct section *sec)
{
    unsigned long skipped;
    const char *body;
    size_t blen;

    switch (sec->kind) {
    case S_PROLOGUE:
        prologue(im, sec->text, sec->len);
        return;
    case S_SMI_QUERY:
        if (memmem(sec->text, sec->len, "NVSMI LOG", 9) != NULL)
            imp_run_part(im, &importer_smi_query, sec->text, sec->len, sec->line0, false);
        else if (importer_smi_table.detect(sec->text, sec->len))
            imp_run_part(im, &importer_smi_table, sec->text, sec->len, sec->line0, false);
        return;
    case S_SMI_OTHER:
        if (importer_topo.detect(sec->text, sec->len))
            imp_run_part(im, &importer_topo, sec->text, sec->len, sec->line0, false);
        else if (importer_nvlink.detect(sec->text, sec->len))
            imp_run_part(im, &importer_nvlink, sec->text, sec->len, sec->line0, false);
        else if (importer_smi_table.detect(sec->text, sec->len))
            imp_run_part(im, &importer_smi_table, sec->text, sec->len, sec->line0, false);
        return;
    case S_LSPCI:
        imp_run_part(im, &importer_lspci, sec->text, sec->len, sec->line0, true);
        return;
    case S_KLOG_SCAN:
    case S_DMESG:
        if (importer_klog.detect(sec->text, sec->len))
            imp_run_part(im, &importer_klog, sec->text, sec->len, sec->line0, false);
        return;
    default:
        break;
    }
    body = after_ls(sec->text, sec->len, &skipped);
    blen = sec->len - (size_t)(body - sec->text);
    switch (sec->kind) {
    case S_DRIVER_VERSION:
        driver_version(im, body, blen);
        break;
    case S_GPU_INFO:
        gpu_info(im, body, blen, sec->line0 + skipped + 1);
        break;
    case S_MODULES:
        modules(im, body, blen);
        break;
    case S_MEMINFO:
        meminfo(im, body, blen);
        break;
    case S_CPUINFO:
        cpuinfo(im, body, blen);
        break;
    case S_PROC_VERSION:
        proc_version(im, body, blen);
        break;
    default:
        break;
    }
}

/* OOM kills: a count only when the whole kernel log was read (the report's dmesg). */
static void count_oom(struct imp *im)
{
    struct host_info *h = &im->s->host;

    if (host_valid(h, HOST_S_OOM))
        return;
    h->oom_kills = 0;
    for (size_t i = 0; i < im->s->driver.n_events; i++)
        h->oom_kills += im->s->driver.events[i].kind == KLOG_OOM_KILL;
    host_set_valid(h, HOST_S_OOM);
    imp_touch(im, COLLECTOR_HOST);
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct section *secs = NULL;
    size_t n = 0, cap = 0;
    struct lines l;
    struct zone_saved zone;
    char *date = NULL, *head_date = NULL, zname[16];
    unsigned long date_line = 0;
    bool dmesg = false;

    if (!detect(text, len)) {
        imp_fail(im, 1,
                 "not an nvidia-bug-report.log (no \"Start of NVIDIA bug report log "
                 "file\" near its start)");
        return;
    }
    im->found = true;
    /* Pass 1: the sections, and the report's time (for kernel-log stamps without a year). */
    lines_init(&l, text, len);
    {
        bool at_head = true;

        while (lines_next(&l)) {
            if (separator(l.line)) {
                at_head = true;
                continue;
            }
            if (!at_head)
                continue;
            if (l.n == 0)
                continue;
            at_head = false;
            xgrow(&secs, &cap, n + 1, sizeof(*secs));
            secs[n].kind = classify(l.line);
            secs[n].text = l.text + (secs[n].kind == S_PROLOGUE ? l.start : l.pos);
            secs[n].line0 = secs[n].kind == S_PROLOGUE ? l.no - 1 : l.no;
            secs[n].len = 0;
            if (n > 0 && secs[n - 1].len == 0)
                secs[n - 1].len = (size_t)(l.text + l.start - secs[n - 1].text);
            n++;
            if (strncmp(l.line, "Date:", 5) == 0 && head_date == NULL) {
                head_date = xstrdup(str_ltrim(l.line + 5));
                date_line = l.no;
            }
        }
        if (n > 0 && secs[n - 1].len == 0)
            secs[n - 1].len = (size_t)(text + len - secs[n - 1].text);
    }
    /* The date's zone first: every time below is read in it (report_zone). */
    date = head_date;
    for (size_t i = 0; i < n && date == NULL; i++) {
        const char *d =
            secs[i].kind == S_PROLOGUE ? memmem(secs[i].text, secs[i].len, "\nDate:", 6) : NULL;

        if (d != NULL) {
            const char *end = memchr(d + 1, '\n', (size_t)(secs[i].text + secs[i].len - d - 1));

            date = xstrndup(d + 6, end ? (size_t)(end - d - 6)
                                       : (size_t)(secs[i].text + secs[i].len - d - 6));
            date_line = secs[i].line0 + 1;
            for (const char *c = secs[i].text; c <= d; c++)
                date_line += *c == '\n';
        }
    }
    zone = date ? report_zone(im, str_ltrim(date), date_line) : (struct zone_saved){ false, NULL };
    if (head_date != NULL && im->klog_now_ms == 0)
        im->klog_now_ms = date_ms(str_ltrim(head_date), zname, sizeof(zname));
    /* The section bounds above end at the next section's head; a separator line is harmless. */
    for (size_t i = 0; i < n; i++) {
        if (secs[i].kind == S_PROLOGUE || im->klog_now_ms != 0)
            continue;
        if (secs[i].kind == S_SMI_QUERY) {
            const char *ts = memmem(secs[i].text, secs[i].len, "Timestamp", 9);
            const char *colon =
                ts ? memchr(ts, ':', (size_t)(secs[i].text + secs[i].len - ts)) : NULL;

            if (colon != NULL)
                im->klog_now_ms = imp_time_ctime(colon + 1);
        }
    }
    if (date != NULL && im->klog_now_ms == 0)
        im->klog_now_ms = date_ms(str_ltrim(date), zname, sizeof(zname));
    if (im->klog_now_ms != 0)
        imp_time(im, im->klog_now_ms);
    /* Pass 2: by kind, in the order that lets each use what the others found. */
    for (size_t k = 0; k < ARRAY_SIZE(order); k++) {
        for (size_t i = 0; i < n; i++) {
            if (secs[i].kind != order[k])
                continue;
            read_section(im, &secs[i]);
            dmesg |= secs[i].kind == S_DMESG;
        }
    }
    if (dmesg && (im->s->driver.valid & (UINT64_C(1) << DRIVER_S_KLOG)))
        count_oom(im);
    report_zone_end(&zone);
    free(date);
    free(secs);
}

const struct importer importer_bug_report = {
    "bug-report",
    "nvidia-bug-report.log, or its .gz as nvidia-bug-report.sh writes it",
    detect,
    run,
};
