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
    uint32_t repeats;            /* records read before in the session, not counted again */
    int64_t ue_last_ms, last_ms; /* the latest uncorrectable error's time; any entry's */
    bool ue_dated;
    char dimms[SEL_DIMMS_BYTES];
    struct sel_state *psu; /* the session's power supply events; NULL: not followed (detect) */
    int64_t file_ms;       /* the last dated entry's time, for the undated after it */
    uint32_t line;         /* the line being read */
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

/*
 * Whether this record was read before in the session: the same id, time (an undated one's: the
 * dated entry before it in its file), sensor, event, direction and any columns after. Records
 * are added as they come; past SEL_SEEN_MAX none is checked.
 */
static bool seen_before(struct sel_state *st, char *const *f, size_t n, bool dated, int64_t ms)
{
    uint64_t h = FNV1A64_INIT;
    size_t i;

    h = fnv1a64(h, &dated, sizeof(dated));
    h = fnv1a64(h, &ms, sizeof(ms));
    for (size_t k = 0; k < n; k++) {
        if (k == 1 || k == 2) /* the date and the time: in ms */
            continue;
        h = fnv1a64(h, f[k], strlen(f[k]) + 1);
    }
    h += h == 0; /* 0 marks a free place */
    if (st->n_seen >= SEL_SEEN_MAX) {
        st->seen_full = true;
        return false;
    }
    if (2 * (st->n_seen + 1) > st->cap_seen) {
        size_t cap = st->cap_seen ? 2 * st->cap_seen : 1024;
        uint64_t *t = xcalloc(cap, sizeof(*t));

        for (size_t k = 0; k < st->cap_seen; k++) {
            if (st->seen[k] == 0)
                continue;
            for (i = st->seen[k] & (cap - 1); t[i] != 0; i = (i + 1) & (cap - 1))
                ;
            t[i] = st->seen[k];
        }
        free(st->seen);
        st->seen = t;
        st->cap_seen = cap;
    }
    for (i = h & (st->cap_seen - 1); st->seen[i] != 0; i = (i + 1) & (st->cap_seen - 1)) {
        if (st->seen[i] == h)
            return true;
    }
    st->seen[i] = h;
    st->n_seen++;
    return false;
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

/*
 * The slot of sensor and key; with make, a free one when none: a fault closed (a closed presence
 * only when nothing else is free: it remembers a supply seen present), or unused. NULL: full.
 */
static struct sel_fault *slot(struct sel_state *st, const char *sensor, const char *key, bool make)
{
    struct sel_fault *free_slot = NULL, *free_presence = NULL;

    for (size_t i = 0; i < st->n; i++) {
        struct sel_fault *f = &st->f[i];

        if (strcmp(f->sensor, sensor) == 0 && strcmp(f->key, key) == 0)
            return f;
        if (f->open)
            continue;
        if (strcmp(f->key, "Presence detected") != 0)
            free_slot = free_slot ? free_slot : f;
        else
            free_presence = free_presence ? free_presence : f;
    }
    if (!make)
        return NULL;
    if (free_slot == NULL && st->n < SEL_TRACK_MAX)
        free_slot = &st->f[st->n++];
    if (free_slot == NULL)
        free_slot = free_presence;
    if (free_slot != NULL) {
        memset(free_slot, 0, sizeof(*free_slot));
        snprintf(free_slot->sensor, sizeof(free_slot->sensor), "%s", sensor);
        snprintf(free_slot->key, sizeof(free_slot->key), "%s", key);
    }
    return free_slot;
}

static void set_state(struct sel_fault *f, bool open, int kind, const char *text,
                      const struct sel_event *e)
{
    f->open = open;
    f->kind = kind;
    f->stale = false;
    snprintf(f->text, sizeof(f->text), "%s", text);
    f->dated = open && e->dated;
    f->ms = f->dated ? e->ms : 0;
}

/*
 * A power supply or power unit sensor's event, in time order. A fault asserted opens its slot,
 * its deassertion closes it; "Presence detected" deasserted is a supply removed (a fault only
 * where the log saw it present); of the redundancy states the newest asserted one holds, "Fully
 * Redundant" or the state's own deassertion closing it.
 */
static void psu_event(struct sel_state *st, const struct sel_event *e)
{
    const char *ev = e->event;
    struct sel_fault *f;

    if (starts_ci(ev, "Presence detected")) {
        f = slot(st, e->sensor, "Presence detected", e->asserted);
        if (f != NULL)
            set_state(f, !e->asserted, SEL_LOSS,
                      e->asserted ? "Presence detected" : "supply removed", e);
        return;
    }
    if (starts_ci(ev, "Fully Redundant")) {
        f = slot(st, e->sensor, "redundancy", !e->asserted);
        if (f != NULL)
            set_state(f, !e->asserted, SEL_LOSS,
                      e->asserted ? "Fully Redundant" : "not fully redundant", e);
        else if (!e->asserted)
            st->untracked++;
        return;
    }
    for (size_t i = 0; i < sizeof(redundancy_lost) / sizeof(redundancy_lost[0]); i++) {
        if (!starts_ci(ev, redundancy_lost[i]))
            continue;
        f = slot(st, e->sensor, "redundancy", e->asserted);
        if (f == NULL)
            st->untracked += e->asserted;
        else if (e->asserted || strncasecmp(f->text, ev, sizeof(f->text) - 1) == 0)
            set_state(f, e->asserted, SEL_LOSS, ev, e); /* a state's own deassertion closes it */
        return;
    }
    for (size_t i = 0; i < sizeof(psu_faults) / sizeof(psu_faults[0]); i++) {
        if (!starts_ci(ev, psu_faults[i].event))
            continue;
        f = slot(st, e->sensor, psu_faults[i].event, e->asserted);
        if (f != NULL)
            set_state(f, e->asserted, psu_faults[i].kind, psu_faults[i].event, e);
        else
            st->untracked += e->asserted;
        return;
    }
}

/* A power-on or boot, in ipmitool's words: every fault open before it is from before it. */
static bool boot_event(const struct sel_event *e)
{
    if (e->asserted)
        return starts_ci(e->event, "S0/G0: working") ||
               starts_ci(e->event, "OEM System boot event") ||
               (starts_ci(e->sensor, "System Boot Initiated") &&
                starts_ci(e->event, "Initiated by power up"));
    return starts_ci(e->sensor, "Power Unit") && starts_ci(e->event, "Power off/down");
}

static bool log_state_event(const struct sel_event *e)
{
    return starts_ci(e->sensor, "Event Logging Disabled") && e->asserted;
}

/* The events replayed: by time (undated ones where their file put them), then file, then line. */
static int event_cmp(const void *pa, const void *pb)
{
    const struct sel_event *a = pa, *b = pb;

    if (a->ms != b->ms)
        return a->ms < b->ms ? -1 : 1;
    if (a->file != b->file)
        return a->file < b->file ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

/* The state at the end of every event kept so far (each record once: seen_before), from scratch. */
static void replay(struct sel_state *st)
{
    st->n = 0;
    st->untracked = st->dropped;
    st->full = false;
    if (st->n_ev > 1)
        qsort(st->ev, st->n_ev, sizeof(*st->ev), event_cmp);
    for (size_t i = 0; i < st->n_ev; i++) {
        const struct sel_event *e = &st->ev[i];

        if (boot_event(e)) {
            for (size_t k = 0; k < st->n; k++)
                st->f[k].stale = st->f[k].stale || st->f[k].open;
        } else if (log_state_event(e)) {
            if (starts_ci(e->event, "Log full") ||
                starts_ci(e->event, "All event logging disabled"))
                st->full = true;
            else if (starts_ci(e->event, "Log area reset/cleared"))
                st->full = false;
        } else if (e->sensor[0] != '\0') {
            psu_event(st, e);
        } else {
            st->untracked += e->asserted; /* a fault whose sensor name did not fit */
        }
    }
}

/* Keeps an event of a power supply, a power unit, a boot or the log's state for the replay. */
static void keep_event(struct sel_state *st, const char *id, const char *sensor, const char *event,
                       bool asserted, bool dated, int64_t ms, int64_t file_ms, uint32_t line)
{
    struct sel_event *e;
    bool psu = imp_starts(sensor, "Power Supply") || imp_starts(sensor, "Power Unit");

    if (!psu && !starts_ci(sensor, "Event Logging Disabled") &&
        !starts_ci(sensor, "System ACPI Power State") &&
        !starts_ci(sensor, "System Boot Initiated") && !starts_ci(event, "OEM System boot event"))
        return;
    if (st->n_ev == SEL_EVENTS_MAX) {
        st->dropped += psu && asserted && opens_fault(event);
        return;
    }
    if (st->n_ev == st->cap_ev) {
        st->cap_ev = st->cap_ev ? st->cap_ev * 2 : 64;
        st->ev = xrealloc(st->ev, st->cap_ev * sizeof(*st->ev));
    }
    e = &st->ev[st->n_ev++];
    memset(e, 0, sizeof(*e));
    /* A sensor name no ipmitool writes is not followed: kept nameless, a fault of unknown state. */
    if (strlen(sensor) < sizeof(e->sensor))
        snprintf(e->sensor, sizeof(e->sensor), "%s", sensor);
    else if (!(psu && opens_fault(event))) {
        st->n_ev--;
        return;
    }
    snprintf(e->event, sizeof(e->event), "%s", event);
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->asserted = asserted;
    e->dated = dated;
    e->ms = dated ? ms : file_ms;
    e->file = st->files;
    e->line = line;
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
    dated = sel_time(f[1], f[2], &ms);
    if (dated)
        r->file_ms = ms;
    if (r->psu != NULL && seen_before(r->psu, f, n, dated, r->file_ms)) {
        r->repeats++;
        return true;
    }
    r->entries++;
    if (dated && ms > r->last_ms)
        r->last_ms = ms;
    sensor = f[3];
    event = f[4];
    if (r->psu != NULL) {
        r->psu->read = true;
        keep_event(r->psu, f[0], sensor, event, strcmp(f[5], "Asserted") == 0, dated, ms,
                   r->file_ms, r->line);
    }
    /* Sensor types 08h and 09h ("Power Supply", "Power Unit", then the sensor's name) are the
     * replay's: kept above. */
    if (imp_starts(sensor, "Power Supply") || imp_starts(sensor, "Power Unit"))
        return true;
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
    h->sel_psu_faults = h->sel_psu_losses = h->sel_psu_stale = 0;
    h->sel_psu_untracked = st->untracked;
    h->sel_full = st->full;
    h->valid &= ~(UINT64_C(1) << HOST_S_SEL_PSU_TIME | UINT64_C(1) << HOST_S_SEL_PSU_WHAT);
    h->valid |= UINT64_C(1) << HOST_S_SEL_PSU;
    for (size_t i = 0; i < st->n; i++) {
        const struct sel_fault *f = &st->f[i];
        size_t len = strlen(what);

        if (!f->open)
            continue;
        h->sel_psu_faults++;
        h->sel_psu_stale += f->stale;
        h->sel_psu_losses += !f->stale && f->kind == SEL_LOSS;
        snprintf(item, sizeof(item), "%s: %s", f->sensor, f->text);
        if (len + strlen(item) + 2 < sizeof(what) - 24) {
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
    bool was_full = im->is->sel.seen_full;

    memset(&r, 0, sizeof(r));
    r.psu = &im->is->sel;
    /* The DIMMs named so far, so that this log's are added to them once. */
    if (h->sel_mem_ue_dimms != NULL)
        snprintf(r.dimms, sizeof(r.dimms), "%s", h->sel_mem_ue_dimms);
    /* A base snapshot's own power supply counts cannot be replayed with this log: kept. */
    if (!im->is->sel.read && !im->is->sel.base_kept && (h->valid & (UINT64_C(1) << HOST_S_SEL_PSU)))
        im->is->sel.base_kept = true;
    im->is->sel.files++;
    lines_init(&l, text, len);
    while (lines_next(&l)) {
        r.line = (uint32_t)l.no;
        sel_line(&r, l.line);
    }
    if (r.entries == 0 && r.repeats == 0) {
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
    if (r.dimms[0] != '\0') {
        free(h->sel_mem_ue_dimms);
        h->sel_mem_ue_dimms = str_sanitized(r.dimms);
        h->valid |= UINT64_C(1) << HOST_S_SEL_UE_DIMMS;
    }
    if (im->is->sel.read && !im->is->sel.base_kept) {
        replay(&im->is->sel);
        psu_result(h, &im->is->sel);
    } else if (im->is->sel.base_kept) {
        imp_note(im, COLLECTOR_HOST, 0,
                 "the snapshot's own power supply faults are kept: this log's are not added to "
                 "them");
    }
    if (r.repeats == 0)
        imp_note(im, COLLECTOR_HOST, 0,
                 "the BMC's event log: %" PRIu32 " entries, %" PRIu32 " uncorrectable and %" PRIu32
                 " correctable memory ECC events",
                 r.entries, r.ue, r.ce);
    else
        imp_note(im, COLLECTOR_HOST, 0,
                 "the BMC's event log: %" PRIu32 " new entries (%" PRIu32 " more an earlier file "
                 "had: counted once), %" PRIu32 " uncorrectable and %" PRIu32
                 " correctable memory ECC events among the new",
                 r.entries, r.repeats, r.ue, r.ce);
    if (im->is->sel.seen_full && !was_full)
        imp_note(im, COLLECTOR_HOST, 0,
                 "the BMC's event logs hold more than %u records: those past it were not "
                 "checked for repeats",
                 SEL_SEEN_MAX);
}

const struct importer importer_ipmi_sel = {
    "ipmi-sel",
    "the BMC's event log (IPMI SEL) as ipmitool sel list or sel elist prints it",
    detect,
    run,
};
