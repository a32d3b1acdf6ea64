/* The state section's field tables and codec (also the state file's, src/state/state.c). */
#include "snapshot/snap-state.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const state_status_names[] = {
    [STATE_NOT_READ] = "not_read",     [STATE_OK] = "ok",
    [STATE_MISSING] = "missing",       [STATE_CORRUPT] = "corrupt",
    [STATE_UNREADABLE] = "unreadable", NULL,
};

const char *const state_event_kind_names[] = {
    [STATE_EV_XID] = "xid",
    [STATE_EV_ECC] = "ecc_uncorrected",
    [STATE_EV_REMAP] = "remapped_rows",
    [STATE_EV_ECC_VOL] = "ecc_volatile",
    [STATE_EV_REMAP_FAIL] = "remap_failure",
    [STATE_EV_REPAIR] = "repair_pending",
    NULL,
};

const char *const state_ack_severity_names[] = { "info", "warning", "critical", NULL };

const char *const state_reset_how_names[] = {
    [STATE_RESET_REPAIR_APPLIED] = "repair_applied",
    [STATE_RESET_ENERGY_DROP] = "energy_drop",
    [STATE_RESET_DRIVER_LOAD] = "driver_load",
    NULL,
};

#define E(key, type, member, names, doc)                                                           \
    {                                                                                              \
        key, type, offsetof(struct state_event, member), -1, 0, names, "state file", doc           \
    }
static const struct jfield event_fields[] = {
    E("kind", JF_ENUM, kind, state_event_kind_names,
      "xid, ecc_uncorrected (the aggregate count rose), remapped_rows (uncorrectable rows rose); "
      "once per epoch (a boot, or its part after a detected GPU reset): ecc_volatile "
      "(uncorrectable errors since the driver loaded), remap_failure, "
      "repair_pending (a row remap or page retirement waits for a reset)"),
    E("code", JF_I32, code, NULL,
      "the Xid (kind xid); repair_pending: 1 a row remap, 2 a page retirement, 3 both (0: not "
      "recorded); else 0"),
    E("value", JF_U64, value, NULL,
      "the counter's new value (ecc_uncorrected, remapped_rows), the most uncorrectable errors "
      "seen in the boot (ecc_volatile), else 1"),
    E("boot_id", JF_STR, boot_id, NULL,
      "the boot it happened in (/proc/sys/kernel/random/boot_id); null when unknown"),
    E("uptime_us", JF_I64, uptime_us, NULL,
      "when in that boot, as the kernel stamped it (xid), or the uptime it was first seen at "
      "(the faults recorded once per epoch); -1 unknown"),
    E("time_ms", JF_I64, time_ms, NULL, "Unix time of the event, or when it was first seen"),
};
#undef E

const struct jtable state_event_table = {
    "state event", event_fields, ARRAY_SIZE(event_fields), JT_NONE, 0, NULL,
};

#define G(key, type, member, doc)                                                                  \
    {                                                                                              \
        key, type, offsetof(struct state_gpu, member), -1, 0, NULL, "state file", doc              \
    }
static const struct jfield gpu_fields[] = {
    G("serial", JF_STR, serial, "the board's serial number: what identifies the GPU"),
    G("uuid", JF_STR, uuid, "GPU UUID: identifies it when it has no serial"),
    G("pci", JF_STR, pci, "PCI address where it was last seen"),
    G("index", JF_I32, index, "NVML index when last seen"),
    G("last_seen_ms", JF_I64, last_seen_ms, "Unix time it was last seen"),
    { "events", JF_NONE, 0, -1, 0, NULL, "state file",
      "its remembered events, oldest first (at most 64)" },
    G("boot_id", JF_STR, boot_id, "the boot it was last seen in"),
    G("boot_seen_us", JF_I64, boot_seen_us,
      "the kernel uptime a run first saw it at in that boot; -1 unknown"),
    G("energy_mj", JF_I64, energy_mj,
      "nvmlDeviceGetTotalEnergyConsumption as last recorded in that boot; -1 unknown"),
    G("energy_us", JF_I64, energy_us, "the kernel uptime it was read at; -1 unknown"),
    { "resets", JF_NONE, 0, -1, 0, NULL, "state file",
      "GPU resets detected within a boot, oldest first (at most 16)" },
};
#undef G

const struct jtable state_gpu_table = {
    "state GPU", gpu_fields, ARRAY_SIZE(gpu_fields), JT_NONE, 0, NULL,
};

#define R(key, type, member, names, doc)                                                           \
    {                                                                                              \
        key, type, offsetof(struct state_reset, member), -1, 0, names, "state file", doc           \
    }
static const struct jfield reset_fields[] = {
    R("boot_id", JF_STR, boot_id, NULL, "the boot it happened in"),
    R("after_us", JF_I64, after_us, NULL,
      "the kernel uptime it is known not to have happened by yet"),
    R("uptime_us", JF_I64, uptime_us, NULL, "the kernel uptime it is known to have happened by"),
    R("how", JF_ENUM, how, state_reset_how_names,
      "repair_applied (a pending row remap or page retirement cleared), energy_drop (the energy "
      "counter since the driver loaded went down), driver_load (the driver's load banner again)"),
    R("time_ms", JF_I64, time_ms, NULL, "Unix time it was detected"),
};
#undef R

const struct jtable state_reset_table = {
    "GPU reset", reset_fields, ARRAY_SIZE(reset_fields), JT_NONE, 0, NULL,
};

#define A(key, type, member, doc)                                                                  \
    {                                                                                              \
        key, type, offsetof(struct state_ack, member), -1, 0, NULL, "gpudoctor ack", doc           \
    }
static const struct jfield ack_fields[] = {
    A("rule", JF_STR, rule, "the rule id of the acknowledged finding"),
    A("gpu_uuid", JF_STR, gpu_uuid, "the GPU it is about"),
    A("note", JF_STR, note, "the operator's note"),
    A("by", JF_STR, by, "who acknowledged it"),
    A("time_ms", JF_I64, time_ms, "when (Unix time)"),
    A("expires_ms", JF_I64, expires_ms, "when it ends (Unix time); 0: never"),
    A("boot_id", JF_STR, boot_id, "the boot it was given in: kernel-log events after it are new"),
    A("uptime_us", JF_I64, uptime_us, "when in that boot; -1 unknown"),
    A("ecc_uncorrected", JF_I64, ecc_uncorrected,
      "the GPU's aggregate uncorrectable ECC count it covers; -1 unknown"),
    A("remapped_rows", JF_I64, remapped_rows,
      "the GPU's uncorrectable remapped rows it covers; -1 unknown"),
    { "severity", JF_ENUM, offsetof(struct state_ack, severity), -1, 0, state_ack_severity_names,
      "gpudoctor ack",
      "the most severe finding it covers (info, warning, critical): a more severe one is not "
      "acknowledged; null or absent (a file written before it): any" },
};
#undef A

const struct jtable state_ack_table = {
    "acknowledgement", ack_fields, ARRAY_SIZE(ack_fields), JT_NONE, 0, NULL,
};

void state_gpu_free(struct state_gpu *g)
{
    jtable_free(&state_gpu_table, g);
    for (size_t i = 0; i < g->n_events; i++)
        jtable_free(&state_event_table, &g->events[i]);
    free(g->events);
    for (size_t i = 0; i < g->n_resets; i++)
        jtable_free(&state_reset_table, &g->resets[i]);
    free(g->resets);
    memset(g, 0, sizeof(*g));
}

void state_ack_free(struct state_ack *a)
{
    jtable_free(&state_ack_table, a);
    memset(a, 0, sizeof(*a));
}

void state_info_free(struct state_info *st)
{
    free(st->path);
    free(st->note);
    for (size_t i = 0; i < st->n_gpus; i++)
        state_gpu_free(&st->gpus[i]);
    free(st->gpus);
    for (size_t i = 0; i < st->n_acks; i++)
        state_ack_free(&st->acks[i]);
    free(st->acks);
    memset(st, 0, sizeof(*st));
}

bool state_serial_known(const char *serial)
{
    return serial != NULL && serial[0] != '\0' && strcmp(serial, "N/A") != 0 &&
           strcmp(serial, "[N/A]") != 0 && strcmp(serial, "0") != 0;
}

struct state_gpu *state_find_gpu(const struct state_info *st, const char *serial, const char *uuid)
{
    for (size_t i = 0; i < st->n_gpus; i++) {
        struct state_gpu *g = &st->gpus[i];

        if (state_serial_known(serial) && state_serial_known(g->serial)) {
            if (strcmp(serial, g->serial) == 0)
                return g;
        } else if (uuid && g->uuid && strcmp(uuid, g->uuid) == 0) {
            return g;
        }
    }
    return NULL;
}

/* ---- writing ---- */

void state_content_to_json(const struct state_info *st, json_t *out)
{
    json_t *gpus = json_array(), *acks;

    for (size_t i = 0; i < st->n_gpus; i++) {
        const struct state_gpu *g = &st->gpus[i];
        json_t *o = json_object();

        jtable_write(&state_gpu_table, g, o, 0);
        json_object_set_new(
            o, "events",
            jlist_write_table(&state_event_table, g->events, g->n_events, sizeof(*g->events)));
        json_object_set_new(
            o, "resets",
            jlist_write_table(&state_reset_table, g->resets, g->n_resets, sizeof(*g->resets)));
        json_array_append_new(gpus, o);
    }
    json_object_set_new(out, "gpus", gpus);
    acks = jlist_write_table(&state_ack_table, st->acks, st->n_acks, sizeof(*st->acks));
    for (size_t i = 0; i < st->n_acks; i++) { /* not recorded: null, which reads back as such */
        if (st->acks[i].severity < 0)
            json_object_set_new(json_array_get(acks, i), "severity", json_null());
    }
    json_object_set_new(out, "acks", acks);
}

json_t *state_info_to_json(const struct state_info *st)
{
    json_t *j = json_object();

    json_object_set_new(j, "status", json_string(state_status_names[st->status]));
    json_object_set_new(j, "path", jstring_safe(st->path));
    json_object_set_new(j, "note", jstring_safe(st->note));
    state_content_to_json(st, j);
    return j;
}

/* ---- reading ---- */

/* A copy of the object o without the keys table t does not know (and those in also). */
static json_t *known_only(const struct jtable *t, const json_t *o, const char *const *also)
{
    json_t *copy = json_object(), *v;
    const char *key;

    json_object_foreach((json_t *)o, key, v)
    {
        bool keep = jtable_find(t, key) != NULL;

        for (size_t i = 0; also && also[i] && !keep; i++)
            keep = strcmp(also[i], key) == 0;
        if (keep)
            json_object_set(copy, key, v);
    }
    return copy;
}

static int read_record(const struct jtable *t, void *obj, const json_t *j, const char *path,
                       struct jerr *err)
{
    json_t *k;
    int r;

    if (!json_is_object(j)) {
        jerr_set(err, path, "expected an object");
        return -1;
    }
    k = known_only(t, j, NULL);
    r = jtable_read(t, obj, k, path, 0, NULL, err);
    json_decref(k);
    return r;
}

static int read_event(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct state_event *e = obj;

    e->uptime_us = -1;
    if (read_record(&state_event_table, e, j, path, err) != 0)
        return -1;
    if (json_object_get(j, "kind") == NULL || json_is_null(json_object_get(j, "kind"))) {
        jerr_set(err, path, "kind: missing");
        return -1;
    }
    if (json_object_get(j, "uptime_us") == NULL || json_is_null(json_object_get(j, "uptime_us")))
        e->uptime_us = -1;
    return 0;
}

static int read_reset(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct state_reset *r = obj;

    if (read_record(&state_reset_table, r, j, path, err) != 0)
        return -1;
    if (r->boot_id == NULL || json_object_get(j, "how") == NULL ||
        json_is_null(json_object_get(j, "how"))) {
        jerr_set(err, path, "a GPU reset needs a boot_id and a how");
        return -1;
    }
    return 0;
}

/* An integer key that is absent or null reads as -1: unknown (files written before it). */
static void unknown_if_absent(const json_t *j, const char *key, int64_t *v)
{
    const json_t *k = json_object_get(j, key);

    if (k == NULL || json_is_null(k))
        *v = -1;
}

static int read_gpu(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct state_gpu *g = obj;
    void *items = NULL;
    int r;

    if (read_record(&state_gpu_table, g, j, path, err) != 0)
        return -1;
    unknown_if_absent(j, "boot_seen_us", &g->boot_seen_us);
    unknown_if_absent(j, "energy_mj", &g->energy_mj);
    unknown_if_absent(j, "energy_us", &g->energy_us);
    if (g->uuid == NULL && !state_serial_known(g->serial)) {
        jerr_set(err, path, "a GPU needs a serial or a uuid");
        return -1;
    }
    r = jlist_read(j, "events", path, sizeof(*g->events), &items, &g->n_events, read_event, err);
    g->events = items;
    if (r < 0)
        return -1;
    if (g->n_events > STATE_MAX_EVENTS) { /* keep the newest */
        size_t drop = g->n_events - STATE_MAX_EVENTS;

        for (size_t i = 0; i < drop; i++)
            jtable_free(&state_event_table, &g->events[i]);
        memmove(g->events, g->events + drop, STATE_MAX_EVENTS * sizeof(*g->events));
        g->n_events = STATE_MAX_EVENTS;
    }
    items = NULL;
    r = jlist_read(j, "resets", path, sizeof(*g->resets), &items, &g->n_resets, read_reset, err);
    g->resets = items;
    if (r < 0)
        return -1;
    if (g->n_resets > STATE_MAX_RESETS) { /* keep the newest */
        size_t drop = g->n_resets - STATE_MAX_RESETS;

        for (size_t i = 0; i < drop; i++)
            jtable_free(&state_reset_table, &g->resets[i]);
        memmove(g->resets, g->resets + drop, STATE_MAX_RESETS * sizeof(*g->resets));
        g->n_resets = STATE_MAX_RESETS;
    }
    return 0;
}

static int read_ack(void *obj, const json_t *j, const char *path, struct jerr *err)
{
    struct state_ack *a = obj;
    const json_t *v;

    a->uptime_us = a->ecc_uncorrected = a->remapped_rows = -1;
    if (read_record(&state_ack_table, a, j, path, err) != 0)
        return -1;
    if (a->rule == NULL || a->gpu_uuid == NULL) {
        jerr_set(err, path, "an acknowledgement needs a rule and a gpu_uuid");
        return -1;
    }
    if (json_object_get(j, "uptime_us") == NULL)
        a->uptime_us = -1;
    if (json_object_get(j, "ecc_uncorrected") == NULL)
        a->ecc_uncorrected = -1;
    if (json_object_get(j, "remapped_rows") == NULL)
        a->remapped_rows = -1;
    v = json_object_get(j, "severity");
    if (v == NULL || json_is_null(v)) {
        a->severity = -1;
    } else if (a->severity < 0 || a->severity > 2) {
        jerr_set(err, path, "severity: %d is not one of \"info\", \"warning\", \"critical\"",
                 (int)a->severity);
        return -1;
    }
    return 0;
}

int state_content_from_json(struct state_info *st, const json_t *j, const char *path,
                            struct jerr *err)
{
    void *items = NULL;
    int r;

    r = jlist_read(j, "gpus", path, sizeof(*st->gpus), &items, &st->n_gpus, read_gpu, err);
    st->gpus = items;
    if (r < 0)
        return -1;
    if (st->n_gpus > STATE_MAX_GPUS) {
        jerr_set(err, path, "gpus: more than %d GPUs", STATE_MAX_GPUS);
        return -1;
    }
    items = NULL;
    r = jlist_read(j, "acks", path, sizeof(*st->acks), &items, &st->n_acks, read_ack, err);
    st->acks = items;
    if (r < 0)
        return -1;
    if (st->n_acks > STATE_MAX_ACKS) {
        jerr_set(err, path, "acks: more than %d acknowledgements", STATE_MAX_ACKS);
        return -1;
    }
    return 0;
}

int state_info_from_json(struct state_info *st, const json_t *j, const char *path, struct jerr *err)
{
    const json_t *status = json_object_get(j, "status");
    size_t k;

    if (!json_is_object(j)) {
        jerr_set(err, path, "expected an object");
        return -1;
    }
    if (!json_is_string(status)) {
        jerr_set(err, path, "status: expected a string");
        return -1;
    }
    for (k = 0; state_status_names[k] != NULL; k++) {
        if (strcmp(state_status_names[k], json_string_value(status)) == 0)
            break;
    }
    if (state_status_names[k] == NULL) {
        jerr_set(err, path, "status: unknown status \"%s\"", json_string_value(status));
        return -1;
    }
    st->status = (int32_t)k;
    if (jget_str(j, "path", path, &st->path, err) != 0 ||
        jget_str(j, "note", path, &st->note, err) != 0)
        return -1;
    return state_content_from_json(st, j, path, err);
}
