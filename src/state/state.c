/* The state file: where it lives, reading it safely, merging what a run saw, locked updates. */
#include "state/state.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HAS(ev, slot) (((ev)->valid & (UINT64_C(1) << (slot))) != 0)

/* ---- where ---- */

static bool is_off(const char *v)
{
    return v != NULL && strcmp(v, "off") == 0;
}

char *state_dir_resolve(const char *dir, const char *config_dir, char **cause)
{
    const char *env = getenv(STATE_DIR_ENV), *xdg, *home, *from = "--state-dir";

    *cause = NULL;
    if (dir == NULL && env != NULL && *env != '\0') {
        dir = env;
        from = "$" STATE_DIR_ENV;
    }
    if (dir == NULL && config_dir != NULL && *config_dir != '\0')
        dir = config_dir; /* the config key is checked as it is read */
    if (dir != NULL && dir[0] != '/' && !is_off(dir)) {
        /* Relative to wherever it runs: a cron job, a service and a shell would each keep their
         * own past, and acknowledgements given in one would hide nothing in the others. */
        *cause = xasprintf("%s: '%s' is not an absolute directory or 'off'", from, dir);
        return NULL;
    }
    if (dir != NULL)
        return is_off(dir) ? NULL : xstrdup(dir);
    if (geteuid() == 0)
        return xstrdup(STATE_DIR_ROOT);
    xdg = getenv("XDG_STATE_HOME");
    if (xdg != NULL && xdg[0] == '/') /* the XDG spec: a relative value is to be ignored */
        return xasprintf("%s/gpudoctor", xdg);
    home = getenv("HOME");
    if (home == NULL || home[0] != '/')
        return NULL;
    return xasprintf("%s/.local/state/gpudoctor", home);
}

/* ---- reading ---- */

static void set_note(struct state_info *st, enum state_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_note(struct state_info *st, enum state_status status, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    va_start(ap, fmt);
    msg = xvasprintf(fmt, ap);
    va_end(ap);
    free(st->note);
    st->note = msg;
    st->status = status;
}

/* Empties the content, keeping status, path and note. */
static void clear_content(struct state_info *st)
{
    char *path = st->path, *note = st->note;
    int32_t status = st->status;

    st->path = st->note = NULL;
    state_info_free(st);
    st->path = path;
    st->note = note;
    st->status = status;
}

void state_parse(const char *text, size_t len, const char *name, struct state_info *st)
{
    json_error_t jerror;
    struct jerr err = { "", "" };
    const json_t *version;
    json_t *root;

    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerror);
    if (root == NULL) {
        char *near = str_excerpt(jerror.text, 120);

        set_note(st, STATE_CORRUPT, "state file %s:%d:%d: %s; ignored, will be rewritten", name,
                 jerror.line, jerror.column, near);
        free(near);
        return;
    }
    version = json_object_get(root, "version");
    if (!json_is_object(root)) {
        set_note(st, STATE_CORRUPT, "state file %s: not a JSON object; ignored, will be rewritten",
                 name);
    } else if (!json_is_integer(version)) {
        set_note(st, STATE_CORRUPT,
                 "state file %s: no \"version\" number; ignored, will be rewritten", name);
    } else if (json_integer_value(version) > STATE_VERSION) {
        /* A newer gpudoctor's (this one is a downgrade): its acknowledgements and history are
         * kept for it, never replaced by what this one would write. */
        set_note(st, STATE_UNREADABLE,
                 "state file %s: version %lld, written by a newer gpudoctor (this one reads "
                 "version %d); ignored, not replaced",
                 name, (long long)json_integer_value(version), STATE_VERSION);
    } else if (json_integer_value(version) != STATE_VERSION) {
        set_note(st, STATE_CORRUPT,
                 "state file %s: version %lld, this gpudoctor reads version %d; ignored, will be "
                 "rewritten",
                 name, (long long)json_integer_value(version), STATE_VERSION);
    } else if (state_content_from_json(st, root, "", &err) != 0) {
        char *where = jerr_format(&err, text, name);

        clear_content(st);
        set_note(st, STATE_CORRUPT, "state file %s; ignored, will be rewritten", where);
        free(where);
    } else {
        st->status = STATE_OK;
    }
    json_decref(root);
}

/* state_load from the state directory's descriptor dfd (state_dir_open); dir names it. */
static void load_at(int dfd, const char *dir, struct state_info *st)
{
    char *path = xasprintf("%s/%s", dir, STATE_FILE), *text = NULL;
    ssize_t n;

    memset(st, 0, sizeof(*st));
    st->path = path;
    /* Never through a symbolic link (whoever planted one would choose what root reads), only a
     * regular file (a FIFO would block), and only the user's or root's. */
    n = file_slurp_own_text_at(dfd, STATE_FILE, STATE_MAX_BYTES, &text);
    if (n == -ENOENT) {
        st->status = STATE_MISSING;
    } else if (n == -EFBIG) {
        set_note(st, STATE_CORRUPT, "state file %s: larger than %u MiB; ignored, will be rewritten",
                 path, STATE_MAX_BYTES >> 20);
    } else if (n == -EILSEQ) {
        set_note(st, STATE_CORRUPT,
                 "state file %s: a NUL byte at offset %zu; ignored, will be rewritten", path,
                 strlen(text));
    } else if (n < 0) {
        char *why = file_open_regular_why((int)n);

        set_note(st, STATE_UNREADABLE, "state file %s: %s; ignored", path, why);
        free(why);
    } else {
        state_parse(text, (size_t)n, path, st);
    }
    free(text);
}

void state_load(const char *dir, struct state_info *st)
{
    char *cause = NULL;
    int dfd = state_dir_open(dir, false, &cause), err = errno;

    if (dfd >= 0) {
        load_at(dfd, dir, st);
        close(dfd);
        return;
    }
    memset(st, 0, sizeof(*st));
    st->path = xasprintf("%s/%s", dir, STATE_FILE);
    if (err == ENOENT) /* no directory yet: no past */
        st->status = STATE_MISSING;
    else
        set_note(st, STATE_UNREADABLE, "%s", cause);
    free(cause);
}

char *state_format(const struct state_info *st)
{
    json_t *j = json_object();
    char *text, *out;

    json_object_set_new(j, "version", json_integer(STATE_VERSION));
    state_content_to_json(st, j);
    text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the state");
    out = xasprintf("%s\n", text);
    free(text);
    return out;
}

/* ---- merging ---- */

const struct gpu *state_event_gpu(const struct snapshot *s, const struct klog_event *ev)
{
    for (size_t i = 0; ev->pci && i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (gpu_valid(g, GPU_S_PCI_BUS_ID) && g->pci_bus_id &&
            driver_pci_same(ev->pci, g->pci_bus_id))
            return g;
    }
    for (size_t i = 0; ev->uuid && i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(g->uuid, ev->uuid) == 0)
            return g;
    }
    return NULL;
}

bool state_event_this_boot(const struct snapshot *s, const struct klog_event *ev)
{
    int64_t boot_ms;

    if (!host_valid(&s->host, HOST_S_UPTIME) || !HAS(ev, KLOG_S_TIME))
        return false;
    boot_ms = s->time_ms - (int64_t)(s->host.uptime_s * 1000.0);
    /* a few seconds of slack: the kernel's and the wall clock's rounding */
    return ev->time_ms >= boot_ms - 5000;
}

static struct state_event *add_event(struct state_gpu *g)
{
    if (g->n_events == STATE_MAX_EVENTS) { /* the oldest goes */
        free(g->events[0].boot_id);
        memmove(g->events, g->events + 1, (STATE_MAX_EVENTS - 1) * sizeof(*g->events));
        g->n_events--;
    }
    g->events = xreallocarray(g->events, g->n_events + 1, sizeof(*g->events));
    memset(&g->events[g->n_events], 0, sizeof(*g->events));
    g->events[g->n_events].uptime_us = -1;
    return &g->events[g->n_events++];
}

static bool same_str(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- epochs: a boot, split by the GPU resets detected in it ---- */

int64_t state_now_us(const struct snapshot *s)
{
    if (!host_valid(&s->host, HOST_S_UPTIME) || !(s->host.uptime_s >= 0.0) ||
        s->host.uptime_s > 1e12)
        return -1;
    return (int64_t)(s->host.uptime_s * 1e6);
}

bool state_reset_between(const struct state_gpu *sg, const char *boot, int64_t t_us, int64_t u_us)
{
    if (boot == NULL || t_us < 0 || u_us < 0)
        return false;
    for (size_t i = 0; i < sg->n_resets; i++) {
        const struct state_reset *r = &sg->resets[i];

        if (same_str(r->boot_id, boot) && t_us <= r->after_us && r->uptime_us <= u_us)
            return true;
    }
    return false;
}

bool state_reset_since(const struct state_gpu *sg, const char *boot, int64_t t_us)
{
    for (size_t i = 0; boot && i < sg->n_resets; i++) {
        if (same_str(sg->resets[i].boot_id, boot) && (t_us < 0 || sg->resets[i].uptime_us > t_us))
            return true;
    }
    return false;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

size_t state_epochs(const struct state_gpu *sg, const char *boot, int64_t *times, size_t n)
{
    size_t count = 0;
    int64_t last = -1;

    qsort(times, n, sizeof(*times), cmp_i64);
    /* Greedy from the earliest: the longest chain of times each surely after a reset that is
     * surely after the one before, i.e. the epochs the times are known to fall in. */
    for (size_t i = 0; i < n; i++) {
        if (times[i] < 0)
            continue;
        if (count == 0 || state_reset_between(sg, boot, last, times[i])) {
            count++;
            last = times[i];
        }
    }
    return count;
}

/* The newest value recorded for a counter kind, or -1. */
static int64_t last_value(const struct state_gpu *g, enum state_event_kind kind)
{
    for (size_t i = g->n_events; i-- > 0;) {
        if (g->events[i].kind == (int32_t)kind)
            return (int64_t)g->events[i].value;
    }
    return -1;
}

/* Adds the Xid unless an earlier run recorded it; returns whether it added it. */
static bool record_xid(struct state_gpu *sg, const struct snapshot *s, const struct klog_event *ev)
{
    const char *boot = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;
    int64_t up = HAS(ev, KLOG_S_UPTIME) ? ev->uptime_us : -1;
    struct state_event *e;

    if (boot == NULL) /* without this boot's id the Xid could never be told from a later one */
        return false;
    for (size_t i = 0; i < sg->n_events; i++) {
        const struct state_event *o = &sg->events[i];

        if (o->kind == STATE_EV_XID && o->code == ev->xid && same_str(o->boot_id, boot) &&
            (up >= 0 ? o->uptime_us == up : o->time_ms == ev->time_ms))
            return false; /* seen by an earlier run */
    }
    e = add_event(sg);
    e->kind = STATE_EV_XID;
    e->code = ev->xid;
    e->value = 1;
    e->boot_id = xstrdup(boot);
    e->uptime_us = up;
    e->time_ms = ev->time_ms;
    return true;
}

/* Adds an event when the counter moved; returns whether it added one. */
static bool record_counter(struct state_gpu *sg, const struct snapshot *s,
                           enum state_event_kind kind, uint64_t value)
{
    int64_t last = last_value(sg, kind);
    struct state_event *e;

    /* A rise; or, the first time, a non-zero count (zero is no event). A reset counter (a
     * replaced board keeps its serial only if it is the same board) just starts over. */
    if ((last < 0 && value == 0) || (last >= 0 && value <= (uint64_t)last)) {
        if (last >= 0 && value < (uint64_t)last) {
            e = add_event(sg); /* the count went down: remember the new base */
            e->kind = (int32_t)kind;
            e->value = value;
            e->boot_id = s->host.boot_id ? xstrdup(s->host.boot_id) : NULL;
            e->time_ms = s->time_ms;
            return true;
        }
        return false;
    }
    e = add_event(sg);
    e->kind = (int32_t)kind;
    e->value = value;
    e->boot_id = s->host.boot_id ? xstrdup(s->host.boot_id) : NULL;
    e->time_ms = s->time_ms;
    return true;
}

/*
 * Adds a fault seen now once per epoch of this boot (value: the most seen; 1 for a flag; code:
 * OR-ed, the flags of repair_pending), first seen at this uptime; returns whether anything
 * changed. An event of this epoch is one with a known uptime and no reset detected since it.
 * Without this boot's id nothing is recorded: the event could not be told from the same fault in
 * another boot. Without the uptime, once per boot as before epochs were known.
 */
static bool record_in_epoch(struct state_gpu *sg, const struct snapshot *s,
                            enum state_event_kind kind, uint64_t value, int32_t code)
{
    const char *boot = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;
    int64_t now_us = state_now_us(s);
    struct state_event *e;

    if (boot == NULL)
        return false;
    for (size_t i = sg->n_events; i-- > 0;) {
        e = &sg->events[i];
        if (e->kind != (int32_t)kind || !same_str(e->boot_id, boot))
            continue;
        if (now_us >= 0 && (e->uptime_us < 0 || e->uptime_us > now_us ||
                            state_reset_since(sg, boot, e->uptime_us)))
            continue; /* another epoch's, or of unknown time: this epoch gets its own */
        if (value <= e->value && (e->code | code) == e->code)
            return false;
        if (value > e->value)
            e->value = value; /* more of it in the same epoch: still one epoch */
        e->code |= code;
        return true;
    }
    e = add_event(sg);
    e->kind = (int32_t)kind;
    e->code = code;
    e->value = value;
    e->boot_id = xstrdup(boot);
    e->uptime_us = now_us;
    e->time_ms = s->time_ms;
    return true;
}

/* ---- GPU resets within a boot (docs/state.md, "A GPU reset without a reboot") ---- */

static bool add_reset(struct state_gpu *sg, const char *boot, int64_t after_us, int64_t at_us,
                      enum state_reset_how how, int64_t time_ms)
{
    struct state_reset *r;

    if (after_us < 0 || at_us <= after_us)
        return false;
    for (size_t i = 0; i < sg->n_resets; i++) {
        r = &sg->resets[i];
        if (same_str(r->boot_id, boot) && r->how == (int32_t)how && r->uptime_us == at_us)
            return false; /* recorded by an earlier run */
    }
    if (sg->n_resets == STATE_MAX_RESETS) { /* the oldest goes */
        free(sg->resets[0].boot_id);
        memmove(sg->resets, sg->resets + 1, (STATE_MAX_RESETS - 1) * sizeof(*sg->resets));
        sg->n_resets--;
    }
    sg->resets = xreallocarray(sg->resets, sg->n_resets + 1, sizeof(*sg->resets));
    r = &sg->resets[sg->n_resets++];
    r->boot_id = xstrdup(boot);
    r->after_us = after_us;
    r->uptime_us = at_us;
    r->how = (int32_t)how;
    r->time_ms = time_ms;
    return true;
}

bool state_load_banner(const struct klog_event *ev)
{
    return ev->kind == KLOG_OTHER_NVRM && ev->message != NULL &&
           strstr(ev->message, "loading NVIDIA UNIX") != NULL &&
           strstr(ev->message, "Kernel Module") != NULL;
}

/*
 * The driver's load banner ("NVRM: loading NVIDIA UNIX ... Kernel Module ...") in this boot at
 * uptime b is a reload when the driver was loaded before b in this boot: an earlier banner of
 * this boot, or a run that saw the GPU through NVML before b. A reload of the module
 * reinitialises every GPU it drives: a reset of each.
 */
static bool detect_driver_loads(struct state_gpu *sg, const struct snapshot *s, const char *boot)
{
    const struct driver_info *d = &s->driver;
    int64_t first = -1; /* the earliest banner of this boot */
    bool changed = false;

    for (size_t i = 0; i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (state_load_banner(ev) && HAS(ev, KLOG_S_UPTIME) && state_event_this_boot(s, ev) &&
            (first < 0 || ev->uptime_us < first))
            first = ev->uptime_us;
    }
    for (size_t i = 0; first >= 0 && i < d->n_events; i++) {
        const struct klog_event *ev = &d->events[i];

        if (!state_load_banner(ev) || !HAS(ev, KLOG_S_UPTIME) || !state_event_this_boot(s, ev))
            continue;
        if (ev->uptime_us > first || (same_str(sg->boot_id, boot) && sg->boot_seen_us >= 0 &&
                                      sg->boot_seen_us < ev->uptime_us))
            changed |= add_reset(sg, boot, ev->uptime_us - 1, ev->uptime_us,
                                 STATE_RESET_DRIVER_LOAD, s->time_ms);
    }
    return changed;
}

/*
 * A repair pending in this epoch (recorded, its flags in code) that every one of its flags now
 * denies was applied by a reset (a row remap at the next GPU reset, a page retirement at the
 * next driver reload: docs/state.md), after it was first seen and by now.
 */
static bool detect_repair_applied(struct state_gpu *sg, const struct gpu *g, const char *boot,
                                  int64_t now_us, int64_t time_ms)
{
    bool remap_clear = gpu_valid(g, GPU_S_REMAP_PENDING) && !g->remapped_rows_pending;
    bool retire_clear = gpu_valid(g, GPU_S_RETIRED_PENDING) && !g->retired_pages_pending;

    for (size_t i = sg->n_events; i-- > 0;) {
        const struct state_event *e = &sg->events[i];
        int32_t code;

        if (e->kind != STATE_EV_REPAIR || !same_str(e->boot_id, boot) || e->uptime_us < 0)
            continue;
        if (state_reset_since(sg, boot, e->uptime_us))
            return false; /* the newest pending repair was already seen applied */
        code = e->code != 0 ? e->code : STATE_REPAIR_REMAP | STATE_REPAIR_RETIRE;
        if (((code & STATE_REPAIR_REMAP) && !remap_clear) ||
            ((code & STATE_REPAIR_RETIRE) && !retire_clear))
            return false;
        return add_reset(sg, boot, e->uptime_us, now_us, STATE_RESET_REPAIR_APPLIED, time_ms);
    }
    return false;
}

/* Whether the GPU stays initialised between clients (persistence mode): without it the driver
 * deinitialises the GPU when its last client exits, and NVML does not say whether the energy
 * counter survives that, so its readings are neither kept nor compared. */
static bool energy_usable(const struct gpu *g)
{
    return gpu_valid(g, GPU_S_ENERGY) && gpu_valid(g, GPU_S_PERSISTENCE) && g->persistence_mode &&
           g->energy_mj <= (uint64_t)INT64_MAX;
}

/* NVML's energy counter counts since the driver was last reloaded: lower than recorded in this
 * boot (both in persistence mode), the driver reloaded after that reading. */
static bool detect_energy_drop(struct state_gpu *sg, const struct gpu *g, const char *boot,
                               int64_t now_us, int64_t time_ms)
{
    if (!energy_usable(g) || !same_str(sg->boot_id, boot) || sg->energy_mj < 0 ||
        sg->energy_us < 0 || g->energy_mj >= (uint64_t)sg->energy_mj)
        return false;
    return add_reset(sg, boot, sg->energy_us, now_us, STATE_RESET_ENERGY_DROP, time_ms);
}

/* Detects the resets of this boot that s shows, then notes the boot and the energy counter
 * (a new boot is news: its first sighting dates later load banners; the counter is not). */
static bool track_resets(struct state_gpu *sg, const struct gpu *g, const struct snapshot *s)
{
    const char *boot = host_valid(&s->host, HOST_S_BOOT_ID) ? s->host.boot_id : NULL;
    int64_t now_us = state_now_us(s);
    bool changed = false;

    if (boot == NULL || now_us < 0)
        return false;
    changed |= detect_driver_loads(sg, s, boot);
    changed |= detect_repair_applied(sg, g, boot, now_us, s->time_ms);
    changed |= detect_energy_drop(sg, g, boot, now_us, s->time_ms);
    if (!same_str(sg->boot_id, boot)) {
        free(sg->boot_id);
        sg->boot_id = xstrdup(boot);
        sg->boot_seen_us = now_us;
        sg->energy_mj = sg->energy_us = -1;
        changed = true;
    } else if (sg->boot_seen_us < 0 || sg->boot_seen_us > now_us) {
        sg->boot_seen_us = now_us;
        changed = true;
    }
    if (energy_usable(g)) {
        sg->energy_mj = (int64_t)g->energy_mj;
        sg->energy_us = now_us;
    } else {
        sg->energy_mj = sg->energy_us = -1;
    }
    return changed;
}

/* The GPU's record, added when new, with where it is now; *changed when any of that is new. */
static struct state_gpu *gpu_for(struct state_info *st, const struct gpu *g, int64_t now_ms,
                                 bool *changed)
{
    const char *serial = gpu_valid(g, GPU_S_SERIAL) ? g->serial : NULL;
    const char *uuid = gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL;
    const char *pci = gpu_valid(g, GPU_S_PCI_BUS_ID) ? g->pci_bus_id : NULL;
    struct state_gpu *sg;

    if (uuid == NULL && !state_serial_known(serial))
        return NULL;
    sg = state_find_gpu(st, serial, uuid);
    if (sg == NULL) {
        if (st->n_gpus == STATE_MAX_GPUS) { /* the one unseen longest goes */
            size_t old = 0;

            for (size_t i = 1; i < st->n_gpus; i++) {
                if (st->gpus[i].last_seen_ms < st->gpus[old].last_seen_ms)
                    old = i;
            }
            state_gpu_free(&st->gpus[old]);
            memmove(&st->gpus[old], &st->gpus[old + 1], (st->n_gpus - old - 1) * sizeof(*st->gpus));
            st->n_gpus--;
        }
        st->gpus = xreallocarray(st->gpus, st->n_gpus + 1, sizeof(*st->gpus));
        sg = &st->gpus[st->n_gpus++];
        memset(sg, 0, sizeof(*sg));
        sg->serial = state_serial_known(serial) ? xstrdup(serial) : NULL;
        sg->boot_seen_us = sg->energy_mj = sg->energy_us = -1;
        *changed = true;
    }
    if ((uuid != NULL && !same_str(sg->uuid, uuid)) || !(pci ? same_str(sg->pci, pci) : !sg->pci) ||
        sg->index != (int32_t)g->index)
        *changed = true; /* moved, or its UUID changed */
    if (uuid != NULL) {
        free(sg->uuid);
        sg->uuid = xstrdup(uuid);
    }
    free(sg->pci);
    sg->pci = pci ? xstrdup(pci) : NULL;
    sg->index = (int32_t)g->index;
    sg->last_seen_ms = now_ms;
    return sg;
}

/* Drops the expired acknowledgements; returns whether there were any. */
static bool prune_acks(struct state_info *st, int64_t now_ms)
{
    size_t k = 0, n = st->n_acks;

    for (size_t i = 0; i < st->n_acks; i++) {
        if (st->acks[i].expires_ms != 0 && st->acks[i].expires_ms <= now_ms)
            state_ack_free(&st->acks[i]);
        else
            st->acks[k++] = st->acks[i];
    }
    st->n_acks = k;
    return k != n;
}

bool state_merge(struct state_info *st, const struct snapshot *s, int64_t now_ms)
{
    const struct driver_info *d = &s->driver;
    bool changed = false;

    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        struct state_gpu *sg = gpu_for(st, g, now_ms, &changed);
        int32_t repair;

        if (sg == NULL)
            continue;
        changed |= track_resets(sg, g, s); /* first: what is seen now is in the new epoch */
        for (size_t k = 0; k < d->n_events; k++) {
            const struct klog_event *ev = &d->events[k];

            /* Only this boot's: an older line (kern.log keeps them) cannot be given a boot. */
            if (ev->kind != KLOG_XID || !HAS(ev, KLOG_S_XID) || state_event_gpu(s, ev) != g ||
                !state_event_this_boot(s, ev))
                continue;
            changed |= record_xid(sg, s, ev);
        }
        if (gpu_valid(g, GPU_S_ECC_AGG_UNCORR))
            changed |= record_counter(sg, s, STATE_EV_ECC, g->ecc_aggregate_uncorrected);
        if (gpu_valid(g, GPU_S_REMAP_UNCORR))
            changed |= record_counter(sg, s, STATE_EV_REMAP, g->remapped_rows_uncorrectable);
        if (gpu_valid(g, GPU_S_ECC_VOL_UNCORR) && g->ecc_volatile_uncorrected > 0)
            changed |= record_in_epoch(sg, s, STATE_EV_ECC_VOL, g->ecc_volatile_uncorrected, 0);
        if (gpu_valid(g, GPU_S_REMAP_FAILURE) && g->remapped_rows_failure)
            changed |= record_in_epoch(sg, s, STATE_EV_REMAP_FAIL, 1, 0);
        repair =
            (gpu_valid(g, GPU_S_REMAP_PENDING) && g->remapped_rows_pending ? STATE_REPAIR_REMAP
                                                                           : 0) |
            (gpu_valid(g, GPU_S_RETIRED_PENDING) && g->retired_pages_pending ? STATE_REPAIR_RETIRE
                                                                             : 0);
        if (repair != 0)
            changed |= record_in_epoch(sg, s, STATE_EV_REPAIR, 1, repair);
    }
    changed |= prune_acks(st, now_ms);
    return changed;
}

/* ---- writing ---- */

/* Makes dir and its parents when missing (0700, 0755 for root's directory and the parents). */
static int dir_make(const char *dir, char **cause)
{
    char *p = xstrdup(dir);
    mode_t mode = strcmp(dir, STATE_DIR_ROOT) == 0 ? 0755 : 0700;
    int rc = 0;

    for (char *q = p + 1; rc == 0; q++) {
        bool end = *q == '\0';

        if (*q != '/' && !end)
            continue;
        *q = '\0';
        if (mkdir(p, end ? mode : 0755) != 0 && errno != EEXIST) {
            *cause = xasprintf(_("cannot create %s: %s"), p, strerror(errno));
            rc = -1;
        }
        if (end)
            break;
        *q = '/';
    }
    free(p);
    return rc;
}

/* Why the opened state directory (st) is not to be trusted; NULL when it is. In English, as every
 * note of the state section: the note is part of the snapshot. */
static char *dir_distrust(const char *dir, const struct stat *st)
{
    if (st->st_uid != geteuid() && st->st_uid != 0 && geteuid() == 0)
        return xasprintf("state directory %s: owned by uid %u, not by root who runs this: not "
                         "used",
                         dir, (unsigned)st->st_uid);
    if (st->st_uid != geteuid() && st->st_uid != 0)
        return xasprintf("state directory %s: owned by uid %u, neither by uid %u who runs this "
                         "nor by root: not used",
                         dir, (unsigned)st->st_uid, (unsigned)geteuid());
    if ((st->st_mode & 022) != 0)
        return xasprintf("state directory %s: writable by %s (mode %04o): not used (chmod go-w "
                         "it)",
                         dir, (st->st_mode & 002) ? "every user" : "its group",
                         (unsigned)(st->st_mode & 07777));
    return NULL;
}

int state_dir_open(const char *dir, bool create, char **cause)
{
    char *path = xstrdup(dir);
    size_t len = strlen(path);
    struct stat st;
    int fd = -1, err = 0;

    /* "DIR/" would follow a link at DIR: the last name is judged without its slashes. */
    while (len > 1 && path[len - 1] == '/')
        path[--len] = '\0';
    if (create && dir_make(path, cause) != 0) {
        err = errno;
        goto out;
    }
    /* Opened once, never through a link, and everything after is relative to it: a name
     * checked here cannot be swapped for another directory by the time it is used. */
    fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        /* A link gives ELOOP, or ENOTDIR with O_DIRECTORY: said as a link either way. */
        if (err == ELOOP || (err == ENOTDIR && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
            *cause = xasprintf("state directory %s: a symbolic link, not followed (give the "
                               "directory itself)",
                               dir);
        else if (err != ENOENT || create)
            *cause = xasprintf("cannot open state directory %s: %s", dir, strerror(err));
        else
            *cause = xasprintf("state directory %s: %s", dir, strerror(err));
        goto out;
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
        *cause = xasprintf("cannot open state directory %s: %s", dir, strerror(err));
    } else if ((*cause = dir_distrust(dir, &st)) != NULL) {
        err = EPERM;
    }
    if (err != 0) {
        close(fd);
        fd = -1;
    }
out:
    free(path);
    errno = err;
    return fd;
}

/* Opens and locks the lock file in the state directory dfd (dir names it); -1 with *cause when
 * it cannot, or when another writer holds it for longer than wait_ms (an update is never worth a
 * hang). */
static int lock_dir(int dfd, const char *dir, int64_t wait_ms, char **cause)
{
    char *path = xasprintf("%s/%s", dir, STATE_LOCK);
    int64_t until = time_mono_ms() + wait_ms;
    struct stat sb;
    int fd;

    fd = openat(dfd, STATE_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY,
                0600);
    if (fd < 0) {
        *cause = xasprintf(_("cannot open %s: %s"), path, strerror(errno));
        free(path);
        return -1;
    }
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (sb.st_uid != geteuid() && sb.st_uid != 0)) {
        *cause = xasprintf(_("%s: not a file of this user's; not used"), path);
        goto fail;
    }
    while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            *cause = xasprintf(_("cannot lock %s: %s"), path, strerror(errno));
            goto fail;
        }
        if (time_mono_ms() >= until) {
            *cause = xasprintf(_("%s: another gpudoctor held the lock for %.1fs"), path,
                               (double)wait_ms / 1000.0);
            goto fail;
        }
        time_sleep_ms(5);
    }
    free(path);
    return fd;
fail:
    close(fd);
    free(path);
    return -1;
}

/*
 * Renames the corrupt state file in dfd (st, as read under the lock) aside, to
 * STATE_FILE.corrupt-TIME (UTC, then -2, -3, ... when taken), so that rewriting it destroys
 * nothing: what it held (acknowledgements, history) may be recovered by hand. 0 with *kept set to
 * a note naming where it went, or -1 with *cause.
 */
static int keep_corrupt(int dfd, const char *dir, const struct state_info *st, char **kept,
                        char **cause)
{
    time_t now = (time_t)(time_real_ms() / 1000);
    char stamp[32] = "unknown-time";
    struct tm tm;
    int err = EEXIST;

    if (gmtime_r(&now, &tm) != NULL)
        strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
    for (int n = 1; n < 100 && err == EEXIST; n++) {
        char *name = n == 1 ? xasprintf("%s.corrupt-%s", STATE_FILE, stamp)
                            : xasprintf("%s.corrupt-%s-%d", STATE_FILE, stamp, n);

        /* Never over another kept file; the lock keeps other writers of ours away. */
        if (renameat2(dfd, STATE_FILE, dfd, name, RENAME_NOREPLACE) == 0) {
            if (kept != NULL)
                *kept = xasprintf("%s; the file is kept as %s/%s, a new one written", st->note, dir,
                                  name);
            free(name);
            return 0;
        }
        err = errno;
        free(name);
    }
    *cause = xasprintf("%s; it could not be kept aside (%s), so it is not rewritten", st->note,
                       strerror(err));
    return -1;
}

static int update(const char *dir, int (*fn)(struct state_info *st, void *arg, char **cause),
                  void *arg, int64_t wait_ms, char **kept, char **cause)
{
    struct state_info st;
    char *text;
    int dfd, lock, rc;

    dfd = state_dir_open(dir, true, cause);
    if (dfd < 0)
        return -1;
    lock = lock_dir(dfd, dir, wait_ms, cause);
    if (lock < 0) {
        close(dfd);
        return -1;
    }
    /* What a writer killed mid-write left (under the lock: none of ours is writing one now). */
    file_remove_stale_temps_at(dfd, STATE_FILE, STATE_TEMP_STALE_MS);
    load_at(dfd, dir, &st);
    if (st.status == STATE_UNREADABLE) { /* it exists and may hold the past: never overwrite */
        *cause = xstrdup(st.note);
        rc = -1;
        goto out;
    }
    rc = fn(&st, arg, cause);
    if (rc != 0) {
        rc = rc > 0 ? 0 : -1;
        goto out;
    }
    if (st.status == STATE_CORRUPT && keep_corrupt(dfd, dir, &st, kept, cause) != 0) {
        rc = -1;
        goto out;
    }
    text = state_format(&st);
    rc = file_write_atomic_at(dfd, STATE_FILE, st.path, text, strlen(text), 0600, cause);
    free(text);
out:
    state_info_free(&st);
    close(lock); /* releases the lock */
    close(dfd);
    return rc;
}

int state_update(const char *dir, int (*fn)(struct state_info *st, void *arg, char **cause),
                 void *arg, char **kept, char **cause)
{
    return update(dir, fn, arg, STATE_LOCK_WAIT_MS, kept, cause);
}

struct record_arg {
    const struct snapshot *s;
    int64_t now_ms;
};

static int record_fn(struct state_info *st, void *arg, char **cause)
{
    const struct record_arg *a = arg;

    (void)cause;
    state_merge(st, a->s, a->now_ms);
    return 0;
}

int state_record(const char *dir, const struct snapshot *s, int64_t now_ms, char **kept,
                 char **cause)
{
    struct record_arg a = { s, now_ms };

    return state_update(dir, record_fn, &a, kept, cause);
}

/* ---- recording from a loop ---- */

bool state_has_news(const struct snapshot *s, int64_t now_ms)
{
    struct state_info copy = { 0 };
    struct jerr err = { 0 };
    json_t *j;
    bool news;

    if (s->state.status == STATE_CORRUPT)
        return true; /* rewritten, as a check would */
    if (s->state.status == STATE_UNREADABLE)
        return false; /* never replaced: state_update refuses it */
    /* A copy through the codec: the snapshot keeps the past it was judged with. */
    j = json_object();
    state_content_to_json(&s->state, j);
    if (state_content_from_json(&copy, j, "state", &err) != 0)
        fatal("the state section does not read back: %s", err.msg);
    json_decref(j);
    news = state_merge(&copy, s, now_ms);
    state_info_free(&copy);
    return news;
}

/* Whether a GPU of s was last seen, as the file says, STATE_REFRESH_MS ago or "later" than now
 * (the clock went back). */
static bool seen_long_ago(const struct snapshot *s, int64_t now_ms)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        const struct state_gpu *sg =
            state_find_gpu(&s->state, gpu_valid(g, GPU_S_SERIAL) ? g->serial : NULL,
                           gpu_valid(g, GPU_S_UUID) ? g->uuid : NULL);

        if (sg != NULL &&
            (now_ms - sg->last_seen_ms >= STATE_REFRESH_MS || sg->last_seen_ms > now_ms))
            return true;
    }
    return false;
}

int state_recorder_record(struct state_recorder *r, const struct snapshot *s, int64_t now_ms,
                          char **kept, char **cause)
{
    struct record_arg a = { s, now_ms };

    if (r->dir == NULL || s->state.status == STATE_NOT_READ)
        return 0;
    if (!state_has_news(s, now_ms) && !seen_long_ago(s, now_ms))
        return 0;
    if (update(r->dir, record_fn, &a, STATE_LOOP_LOCK_WAIT_MS, kept, cause) != 0)
        return -1;
    return 1;
}
