/*
 * The BMC's event log (IPMI SEL) as people paste it. ipmitool's `sel list` and `sel elist`:
 * "   1 | 05/20/2022 | 10:00:00 | Memory #0x87 | Uncorrectable ECC | Asserted", with the
 * sensor's name from the SDR in elist ("Memory P2-DIMMF1"), a two-digit year and a zone in
 * 1.8.19 ("12/14/22 | 23:09:44 CET"), the DIMM in parentheses where ipmitool decodes it
 * ("Correctable ECC (CPU0_G1)"), and any columns after the direction that some BMCs add. The
 * event texts are ipmitool's for the sensor types of the IPMI specification (memory, sensor
 * type 0Ch: "Correctable ECC", "Uncorrectable ECC", ...). And Supermicro BMCs' health event
 * log lines, undated as pasted: "Uncorrectable ECC / other uncorrectable memory error
 * @P2-DIMMF1 - Assertion". What gpudoctor judges is the host's memory: uncorrectable and
 * correctable ECC assertions, the DIMMs they name and when the latest uncorrectable one was
 * logged (host.memory-ecc); and the power supplies: the faults of power supply and power unit
 * sensors (types 08h and 09h, and their redundancy) still asserted at the end of the log
 * (host.psu-fault).
 */
#include "import/import-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SEL_FIELDS      12  /* columns of one line looked at */
#define SEL_DIMMS_BYTES 256 /* the DIMM list's bound */
#define SEL_PSU_MAX     16  /* power supply faults followed; more are counted, not named */

/* A power supply fault: a sensor's fault event, and whether the log cleared it later. */
struct psu_fault {
    char sensor[64], event[48];
    bool asserted, dated;
    int64_t ms;
};

struct sel_read {
    uint32_t entries, ue, ce;
    uint32_t listed; /* entries of ipmitool's list: Supermicro's lines are read for memory only */
    int64_t ue_last_ms, last_ms; /* the latest uncorrectable error's time; any entry's */
    bool ue_dated;
    char dimms[SEL_DIMMS_BYTES];
    struct psu_fault psu[SEL_PSU_MAX];
    size_t n_psu;
    uint32_t psu_untracked; /* faults asserted beyond SEL_PSU_MAX followed ones */
};

/* Splits line at '|' into trimmed fields (in place); returns how many. */
static size_t split(char *line, char **f, size_t max)
{
    size_t n = 0;
    char *p = line;

    while (n < max) {
        char *bar = strchr(p, '|');

        if (bar != NULL)
            *bar = '\0';
        f[n++] = imp_trim(p);
        if (bar == NULL)
            break;
        p = bar + 1;
    }
    return n;
}

static bool hex_id(const char *s)
{
    size_t n = strspn(s, "0123456789abcdefABCDEF");

    return n >= 1 && n <= 4 && s[n] == '\0';
}

/*
 * "05/20/2022" and "10:00:00" (ipmitool's %m/%d/%Y and %H:%M:%S; 1.8.19 writes "%m/%d/%y" and
 * the zone, "23:09:44 CET"; some builds a 12-hour " PM"): Unix milliseconds, in UTC when the
 * zone is UTC or GMT, else in local time (a zone's name alone does not give its offset). False
 * when undated ("Pre-Init": the BMC did not know the time yet).
 */
static bool sel_time(const char *date, const char *clock, int64_t *ms)
{
    struct tm tm;
    int mo, d, y, h, mi, s, n = 0;
    const char *rest;
    bool utc = false;
    time_t t;

    if (sscanf(date, "%2d/%2d/%4d%n", &mo, &d, &y, &n) != 3 || date[n] != '\0')
        return false;
    if (n == 8 && y < 100) /* ipmitool 1.8.19: "12/14/22" */
        y += 2000;
    n = 0;
    if (sscanf(clock, "%2d:%2d:%2d%n", &h, &mi, &s, &n) != 3)
        return false;
    rest = str_ltrim(clock + n);
    if (imp_starts(rest, "PM") && h < 12)
        h += 12;
    else if (imp_starts(rest, "AM") && h == 12)
        h = 0;
    if (imp_starts(rest, "AM") || imp_starts(rest, "PM"))
        rest = str_ltrim(rest + 2);
    if (imp_starts(rest, "UTC") || imp_starts(rest, "GMT"))
        utc = true;
    if (y < 1990 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60)
        return false;
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = s;
    tm.tm_isdst = -1;
    t = utc ? timegm(&tm) : mktime(&tm);
    if (t == (time_t)-1)
        return false;
    *ms = (int64_t)t * 1000;
    return true;
}

/* The DIMM in "Uncorrectable ECC (CPU0_G1)" (ipmitool's decoding), into out; false if none. */
static bool paren_dimm(const char *event, char *out, size_t size)
{
    const char *open = strchr(event, '('), *close;

    if (open == NULL || (close = strchr(open, ')')) == NULL || close == open + 1)
        return false;
    snprintf(out, size, "%.*s", (int)(close - open - 1), open + 1);
    return *imp_trim(out) != '\0';
}

static void memory_event(struct sel_read *r, const char *event, const char *where, bool dated,
                         int64_t ms)
{
    if (imp_starts(event, "Uncorrectable ECC")) {
        r->ue++;
        if (dated && (!r->ue_dated || ms > r->ue_last_ms)) {
            r->ue_last_ms = ms;
            r->ue_dated = true;
        }
        str_list_add_once(r->dimms, sizeof(r->dimms), where);
    } else if (imp_starts(event, "Correctable ECC")) {
        r->ce++;
    }
}

/* ipmitool's words for the faults of power supply (08h) and power unit (09h) sensors, and of
 * their redundancy (the generic redundancy states, event type 0Bh). */
static const char *const psu_fault_events[] = {
    "Failure detected",
    "Power Supply AC lost",
    "AC lost or out-of-range",
    "AC out-of-range, but present",
    "Predictive failure",
    "Redundancy Lost",
    "Non-Redundant: Insufficient Resources",
};

static bool starts_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

static const char *psu_fault_event(const char *event)
{
    for (size_t i = 0; i < sizeof(psu_fault_events) / sizeof(psu_fault_events[0]); i++) {
        if (starts_ci(event, psu_fault_events[i]))
            return psu_fault_events[i];
    }
    return NULL;
}

/*
 * A power supply or power unit sensor's event: a fault asserted is followed; its deassertion, or
 * "Fully Redundant" asserted on the sensor (its redundancy back), clears it.
 */
static void psu_event(struct sel_read *r, const char *sensor, const char *event, bool asserted,
                      bool dated, int64_t ms)
{
    const char *fault = psu_fault_event(event);
    struct psu_fault *p = NULL;

    if (asserted && starts_ci(event, "Fully Redundant")) {
        for (size_t i = 0; i < r->n_psu; i++) {
            if (strcmp(r->psu[i].sensor, sensor) == 0 &&
                (starts_ci(r->psu[i].event, "Redundancy") ||
                 starts_ci(r->psu[i].event, "Non-Redundant")))
                r->psu[i].asserted = false;
        }
        return;
    }
    if (fault == NULL)
        return;
    for (size_t i = 0; i < r->n_psu && p == NULL; i++) {
        if (strncmp(r->psu[i].sensor, sensor, sizeof(r->psu[i].sensor) - 1) == 0 &&
            strcmp(r->psu[i].event, fault) == 0)
            p = &r->psu[i];
    }
    if (p == NULL) {
        if (!asserted)
            return;
        if (r->n_psu == SEL_PSU_MAX) {
            r->psu_untracked++;
            return;
        }
        p = &r->psu[r->n_psu++];
        snprintf(p->sensor, sizeof(p->sensor), "%s", sensor);
        snprintf(p->event, sizeof(p->event), "%s", fault);
    }
    p->asserted = asserted;
    p->dated = asserted && dated;
    p->ms = asserted && dated ? ms : 0;
}

/*
 * Supermicro: "Uncorrectable ECC / other uncorrectable memory error @P2-DIMMF1 - Assertion".
 * Only its memory ECC lines are read.
 */
static bool supermicro_line(struct sel_read *r, char *line)
{
    char *p = imp_trim(line), *at, *end;
    size_t n = strlen(p);

    if (!imp_starts(p, "Uncorrectable ECC /") && !imp_starts(p, "Correctable ECC /"))
        return false;
    if (n > 12 && strcmp(p + n - 12, " - Assertion") == 0)
        end = p + n - 12;
    else if (n > 14 && strcmp(p + n - 14, " - Deassertion") == 0)
        end = NULL;
    else
        return false;
    r->entries++;
    if (end == NULL)
        return true;
    *end = '\0';
    at = strrchr(p, '@');
    memory_event(r, p, at != NULL ? imp_trim(at + 1) : "", false, 0);
    return true;
}

/* One line of ipmitool's list, or of Supermicro's; false when it is neither. */
static bool sel_line(struct sel_read *r, char *line)
{
    char *f[SEL_FIELDS], dimm[64];
    size_t n;
    const char *sensor, *event, *where;
    int64_t ms = 0;
    bool dated;

    if (strchr(line, '|') == NULL)
        return supermicro_line(r, line);
    n = split(line, f, SEL_FIELDS);
    if (n < 6 || !hex_id(f[0]))
        return false;
    if (strcmp(f[5], "Asserted") != 0 && strcmp(f[5], "Deasserted") != 0)
        return false;
    r->entries++;
    r->listed++;
    dated = sel_time(f[1], f[2], &ms);
    if (dated && ms > r->last_ms)
        r->last_ms = ms;
    sensor = f[3];
    event = f[4];
    /* Sensor types 08h and 09h: "Power Supply", "Power Unit", then the sensor's name. */
    if (imp_starts(sensor, "Power Supply") || imp_starts(sensor, "Power Unit")) {
        psu_event(r, sensor, event, strcmp(f[5], "Asserted") == 0, dated, ms);
        return true;
    }
    /* ipmitool names sensor type 0Ch "Memory"; the sensor's name or number follows. */
    if (!imp_starts(sensor, "Memory") || strcmp(f[5], "Asserted") != 0)
        return true;
    /* The DIMM: in parentheses where ipmitool decodes it, in a column after the direction
     * where the BMC adds one, else the sensor ("Memory P2-DIMMF1", "Memory #0x87"). */
    if (paren_dimm(event, dimm, sizeof(dimm)))
        where = dimm;
    else if (n > 6 && f[6][0] != '\0')
        where = f[6];
    else
        where = sensor;
    memory_event(r, event, where, dated, ms);
    return true;
}

/* The power supply faults still asserted at the end of the log, added to what h holds. */
static void psu_result(struct host_info *h, const struct sel_read *r)
{
    char what[256] = "", item[128];
    uint32_t n = r->psu_untracked;
    bool dated = false;
    int64_t last = 0;

    for (size_t i = 0; i < r->n_psu; i++) {
        const struct psu_fault *p = &r->psu[i];

        if (!p->asserted)
            continue;
        n++;
        snprintf(item, sizeof(item), "%s: %s", p->sensor, p->event);
        str_list_add_once(what, sizeof(what), item);
        if (p->dated && (!dated || p->ms > last)) {
            last = p->ms;
            dated = true;
        }
    }
    if (!(h->valid & (UINT64_C(1) << HOST_S_SEL_PSU))) {
        h->sel_psu_faults = 0;
        h->valid |= UINT64_C(1) << HOST_S_SEL_PSU;
    }
    h->sel_psu_faults += n;
    if (dated &&
        (!(h->valid & (UINT64_C(1) << HOST_S_SEL_PSU_TIME)) || last > h->sel_psu_last_ms)) {
        h->sel_psu_last_ms = last;
        h->valid |= UINT64_C(1) << HOST_S_SEL_PSU_TIME;
    }
    if (what[0] != '\0' && h->sel_psu_what == NULL) {
        h->sel_psu_what = str_sanitized(what);
        h->valid |= UINT64_C(1) << HOST_S_SEL_PSU_WHAT;
    }
}

static bool detect(const char *text, size_t len)
{
    struct lines l;

    /* One line of the list among the first 200 is enough: no other format has its columns. */
    lines_init(&l, text, len);
    while (lines_next(&l) && l.no <= 200) {
        struct sel_read r = { 0 };

        if (sel_line(&r, l.line))
            return true;
    }
    return false;
}

static void run(struct imp *im, const char *text, size_t len)
{
    struct host_info *h = &im->s->host;
    struct sel_read r;
    struct lines l;

    memset(&r, 0, sizeof(r));
    lines_init(&l, text, len);
    while (lines_next(&l))
        sel_line(&r, l.line);
    if (r.entries == 0) {
        imp_fail(im, 1,
                 "no line of the BMC's event log (ipmitool sel list or elist: \"ID | date | time | "
                 "sensor | event | Asserted\")");
        return;
    }
    im->found = true;
    imp_touch(im, COLLECTOR_HOST);
    /* Undated evidence is as recent as its last entry, as with a kernel log's last line. */
    if (r.last_ms > im->is->klog_last_ms)
        im->is->klog_last_ms = r.last_ms;
    /* Two logs of one machine add up; the latest error is the latest of both. */
    if (!(h->valid & (UINT64_C(1) << HOST_S_SEL))) {
        h->sel_entries = h->sel_mem_ue = h->sel_mem_ce = 0;
        h->valid |= UINT64_C(1) << HOST_S_SEL;
    }
    h->sel_entries += r.entries;
    h->sel_mem_ue += r.ue;
    h->sel_mem_ce += r.ce;
    if (r.ue_dated && (!(h->valid & (UINT64_C(1) << HOST_S_SEL_UE_TIME)) ||
                       r.ue_last_ms > h->sel_mem_ue_last_ms)) {
        h->sel_mem_ue_last_ms = r.ue_last_ms;
        h->valid |= UINT64_C(1) << HOST_S_SEL_UE_TIME;
    }
    if (r.dimms[0] != '\0' && h->sel_mem_ue_dimms == NULL) {
        h->sel_mem_ue_dimms = str_sanitized(r.dimms);
        h->valid |= UINT64_C(1) << HOST_S_SEL_UE_DIMMS;
    }
    if (r.listed > 0)
        psu_result(h, &r);
    imp_note(im, COLLECTOR_HOST, 0,
             "the BMC's event log: %" PRIu32 " entries, %" PRIu32 " uncorrectable and %" PRIu32
             " correctable memory ECC events",
             r.entries, r.ue, r.ce);
}

const struct importer importer_ipmi_sel = {
    "ipmi-sel",
    "the BMC's event log (IPMI SEL) as ipmitool sel list or sel elist prints it",
    detect,
    run,
};
