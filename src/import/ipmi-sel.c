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
struct sel_read {
    uint32_t entries, ue, ce;
    int64_t ue_last_ms, last_ms; /* the latest uncorrectable error's time; any entry's */
    bool ue_dated;
    char dimms[SEL_DIMMS_BYTES];
    struct sel_state *psu; /* the session's power supply faults; NULL: not followed (detect) */
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

/*
 * ipmitool's words for the events of power supply (08h) and power unit (09h) sensors, and for
 * the generic redundancy states (event type 0Bh) such sensors report. Each is followed in its
 * own slot per sensor; the redundancy states share one ("redundancy"), the newest wins.
 */
static const struct {
    const char *event;
    int kind;
} psu_faults[] = {
    { "Failure detected", SEL_LOSS },        { "Power Supply AC lost", SEL_LOSS },
    { "AC lost or out-of-range", SEL_LOSS }, { "AC out-of-range, but present", SEL_RISK },
    { "Predictive failure", SEL_RISK },      { "Config Error", SEL_RISK },
};
static const char *const redundancy_lost[] = {
    "Redundancy Lost",
    "Redundancy Degraded",
    "Non-Redundant",
};

static bool starts_ci(const char *s, const char *prefix)
{
    return strncasecmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether the event, asserted, opens a fault (presence and full redundancy close them). */
static bool opens_fault(const char *event)
{
    for (size_t i = 0; i < sizeof(redundancy_lost) / sizeof(redundancy_lost[0]); i++) {
        if (starts_ci(event, redundancy_lost[i]))
            return true;
    }
    for (size_t i = 0; i < sizeof(psu_faults) / sizeof(psu_faults[0]); i++) {
        if (starts_ci(event, psu_faults[i].event))
            return true;
    }
    return false;
}

/* The slot of sensor and key, a free one (a fault cleared, or unused) when none; NULL: full. */
static struct sel_fault *slot(struct sel_state *st, const char *sensor, const char *key, bool make)
{
    struct sel_fault *free_slot = NULL;

    for (size_t i = 0; i < st->n; i++) {
        struct sel_fault *f = &st->f[i];

        if (strcmp(f->sensor, sensor) == 0 && strcmp(f->key, key) == 0)
            return f;
        if (!f->open && free_slot == NULL && strcmp(f->key, "Presence detected") != 0)
            free_slot = f;
    }
    if (!make)
        return NULL;
    if (free_slot == NULL && st->n < SEL_TRACK_MAX)
        free_slot = &st->f[st->n++];
    if (free_slot != NULL) {
        memset(free_slot, 0, sizeof(*free_slot));
        snprintf(free_slot->sensor, sizeof(free_slot->sensor), "%s", sensor);
        snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
    }
    return free_slot;
}

/* Sets a slot's state from an event; an event older than the one that set it is ignored (files
 * read in any order, the same record read twice). */
static void set_state(struct sel_fault *f, bool open, int kind, const char *text, bool dated,
                      int64_t ms)
{
    if (dated && f->dated && ms < f->ms)
        return;
    f->open = open;
    f->kind = kind;
    snprintf(f->text, sizeof(f->text), "%s", text);
    if (dated) {
        f->dated = true;
        f->ms = ms;
    }
}

/*
 * A power supply or power unit sensor's event. A fault asserted opens its slot, its deassertion
 * closes it; "Presence detected" deasserted is a supply removed (a fault only where the log saw
 * it present); of the redundancy states the newest asserted one holds, "Fully Redundant" closing.
 */
static void psu_event(struct sel_state *st, const char *sensor, const char *event, bool asserted,
                      bool dated, int64_t ms)
{
    struct sel_fault *f;

    if (strlen(sensor) >= sizeof(st->f[0].sensor)) { /* not ipmitool's: not followed */
        st->untracked += asserted && opens_fault(event);
        return;
    }
    if (starts_ci(event, "Presence detected")) {
        f = slot(st, sensor, "Presence detected", asserted);
        if (f != NULL)
            set_state(f, !asserted, SEL_LOSS, asserted ? "Presence detected" : "supply removed",
                      dated, ms);
        return;
    }
    if (starts_ci(event, "Fully Redundant")) {
        f = slot(st, sensor, "redundancy", !asserted);
        if (f != NULL)
            set_state(f, !asserted, SEL_LOSS, asserted ? "Fully Redundant" : "redundancy lost",
                      dated, ms);
        else if (!asserted)
            st->untracked++;
        return;
    }
    for (size_t i = 0; i < sizeof(redundancy_lost) / sizeof(redundancy_lost[0]); i++) {
        if (!starts_ci(event, redundancy_lost[i]))
            continue;
        f = slot(st, sensor, "redundancy", asserted);
        if (f == NULL) {
            st->untracked += asserted;
            return;
        }
        /* A state's deassertion closes only that state: the next assertion says the new one. */
        if (asserted || strncasecmp(f->text, event, sizeof(f->text) - 1) == 0)
            set_state(f, asserted, SEL_LOSS, event, dated, ms);
        return;
    }
    for (size_t i = 0; i < sizeof(psu_faults) / sizeof(psu_faults[0]); i++) {
        if (!starts_ci(event, psu_faults[i].event))
            continue;
        f = slot(st, sensor, psu_faults[i].event, asserted);
        if (f != NULL)
            set_state(f, asserted, psu_faults[i].kind, psu_faults[i].event, dated, ms);
        else
            st->untracked += asserted;
        return;
    }
}

/* Power-ons, boots and the log's own state, in ipmitool's words. */
static void log_event(struct sel_state *st, const char *sensor, const char *event, bool asserted,
                      bool dated, int64_t ms)
{
    bool boot =
        (asserted &&
         (starts_ci(event, "S0/G0: working") || starts_ci(event, "OEM System boot event") ||
          starts_ci(sensor, "System Boot Initiated"))) ||
        (!asserted && starts_ci(sensor, "Power Unit") && starts_ci(event, "Power off/down"));

    if (boot && dated && ms > st->boot_ms)
        st->boot_ms = ms;
    if (!starts_ci(sensor, "Event Logging Disabled") || !asserted)
        return;
    if (starts_ci(event, "Log full") || starts_ci(event, "All event logging disabled"))
        st->full = true;
    else if (starts_ci(event, "Log area reset/cleared"))
        st->full = false;
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
    dated = sel_time(f[1], f[2], &ms);
    if (dated && ms > r->last_ms)
        r->last_ms = ms;
    sensor = f[3];
    event = f[4];
    if (r->psu != NULL) {
        bool asserted = strcmp(f[5], "Asserted") == 0;

        r->psu->read = true;
        log_event(r->psu, sensor, event, asserted, dated, ms);
        /* Sensor types 08h and 09h: "Power Supply", "Power Unit", then the sensor's name. */
        if (imp_starts(sensor, "Power Supply") || imp_starts(sensor, "Power Unit")) {
            psu_event(r->psu, sensor, event, asserted, dated, ms);
            return true;
        }
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

/* The power supply faults open after the files read so far: h's sel_psu_* (replaced). */
static void psu_result(struct host_info *h, const struct sel_state *st)
{
    char what[256] = "", item[128];
    uint32_t named = 0;
    int64_t last = 0;
    bool dated = false;

    free(h->sel_psu_what);
    h->sel_psu_what = NULL;
    h->sel_psu_faults = st->untracked;
    h->sel_psu_losses = h->sel_psu_stale = 0;
    h->sel_psu_untracked = st->untracked;
    h->sel_full = st->full;
    h->valid &= ~(UINT64_C(1) << HOST_S_SEL_PSU_TIME | UINT64_C(1) << HOST_S_SEL_PSU_WHAT);
    h->valid |= UINT64_C(1) << HOST_S_SEL_PSU;
    for (size_t i = 0; i < st->n; i++) {
        const struct sel_fault *f = &st->f[i];
        bool stale = f->dated && st->boot_ms > 0 && f->ms < st->boot_ms;
        size_t len = strlen(what);

        if (!f->open)
            continue;
        h->sel_psu_faults++;
        h->sel_psu_stale += stale;
        h->sel_psu_losses += !stale && f->kind == SEL_LOSS;
        snprintf(item, sizeof(item), "%s: %s", f->sensor, f->text);
        if (len + strlen(item) + 2 < sizeof(what) - 16) {
            snprintf(what + len, sizeof(what) - len, "%s%s", len ? ", " : "", item);
            named++;
        }
        if (f->dated && (!dated || f->ms > last)) {
            last = f->ms;
            dated = true;
        }
    }
    if (named > 0 && named < h->sel_psu_faults)
        snprintf(what + strlen(what), sizeof(what) - strlen(what), " and %" PRIu32 " more",
                 h->sel_psu_faults - named);
    if (named > 0) {
        h->sel_psu_what = str_sanitized(what);
        h->valid |= UINT64_C(1) << HOST_S_SEL_PSU_WHAT;
    }
    if (dated) {
        h->sel_psu_last_ms = last;
        h->valid |= UINT64_C(1) << HOST_S_SEL_PSU_TIME;
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
    r.psu = &im->is->sel;
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
    if (im->is->sel.read)
        psu_result(h, &im->is->sel);
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
