/* The state file: reading (missing, corrupt, truncated, oversize, wrong version, unknown fields,
 * a symbolic link), its bounds, the merge of what a run saw, and a locked update. */
#include "collect/collect.h"
#include "rules/config.h"
#include "rules/rules.h"
#include "state/state.h"
#include "util/xalloc.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];

static int make_dir(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/test-state-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void write_state(const char *text)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/state.json", dir);
    unlink(path);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_missing(void **state)
{
    struct state_info st;

    (void)state;
    state_load(dir, &st);
    assert_int_equal(st.status, STATE_MISSING);
    assert_null(st.note);
    assert_int_equal(st.n_gpus, 0);
    state_info_free(&st);
}

static void load_text(const char *text, struct state_info *st)
{
    write_state(text);
    state_load(dir, st);
}

static void test_corrupt_and_truncated(void **state)
{
    struct state_info st;

    (void)state;
    load_text("{\"version\": 1, \"gpus\": [\n  {\"uuid\": 12}\n]}\n", &st);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "state.json:2:"));
    assert_non_null(strstr(st.note, "uuid"));
    assert_non_null(strstr(st.note, "ignored, will be rewritten"));
    assert_int_equal(st.n_gpus, 0);
    state_info_free(&st);

    load_text("{\"version\": 1, \"gpus\": [", &st);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "state.json:1:"));
    state_info_free(&st);

    load_text("[1, 2]", &st);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "not a JSON object"));
    state_info_free(&st);
}

static void test_version(void **state)
{
    struct state_info st;

    (void)state;
    /* a newer gpudoctor's file: not read, and (state_update) never replaced */
    load_text("{\"version\": 2, \"gpus\": []}", &st);
    assert_int_equal(st.status, STATE_UNREADABLE);
    assert_non_null(
        strstr(st.note, "version 2, written by a newer gpudoctor (this one reads version 1)"));
    state_info_free(&st);
    load_text("{\"version\": 0, \"gpus\": []}", &st);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "version 0, this gpudoctor reads version 1"));
    state_info_free(&st);
    load_text("{\"gpus\": []}", &st);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "no \"version\""));
    state_info_free(&st);
}

static void test_unknown_fields_ignored(void **state)
{
    struct state_info st;

    (void)state;
    load_text(
        "{\"version\": 1, \"later\": {}, \"gpus\": [{\"serial\": \"S1\", \"uuid\": \"GPU-1\", "
        "\"colour\": \"red\", \"events\": [{\"kind\": \"xid\", \"code\": 48, \"boot_id\": "
        "\"b1\", \"time_ms\": 5, \"extra\": 1}]}], \"acks\": []}",
        &st);
    assert_int_equal(st.status, STATE_OK);
    assert_int_equal(st.n_gpus, 1);
    assert_string_equal(st.gpus[0].serial, "S1");
    assert_int_equal(st.gpus[0].n_events, 1);
    assert_int_equal(st.gpus[0].events[0].code, 48);
    assert_int_equal(st.gpus[0].events[0].uptime_us, -1); /* absent: unknown */
    state_info_free(&st);
}

static void test_oversize_and_nul(void **state)
{
    struct state_info st;
    char *big = xmalloc(STATE_MAX_BYTES + 16);

    (void)state;
    memset(big, ' ', STATE_MAX_BYTES + 15);
    big[0] = '{';
    big[STATE_MAX_BYTES + 14] = '}';
    big[STATE_MAX_BYTES + 15] = '\0';
    load_text(big, &st);
    free(big);
    assert_int_equal(st.status, STATE_CORRUPT);
    assert_non_null(strstr(st.note, "larger than 4 MiB"));
    state_info_free(&st);
}

static void test_symlink_not_followed(void **state)
{
    struct state_info st;
    char path[128];

    (void)state;
    snprintf(path, sizeof(path), "%s/state.json", dir);
    unlink(path);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    state_load(dir, &st);
    assert_int_equal(st.status, STATE_UNREADABLE);
    assert_non_null(strstr(st.note, "symbolic link"));
    state_info_free(&st);
    unlink(path);
}

static void test_bounds_on_read(void **state)
{
    struct state_info st;
    size_t cap = 1 << 16, len = 0;
    char *t = xmalloc(cap);

    (void)state;
    len += (size_t)snprintf(t + len, cap - len,
                            "{\"version\": 1, \"gpus\": [{\"uuid\": \"GPU-1\", "
                            "\"events\": [");
    for (int i = 0; i < STATE_MAX_EVENTS + 10; i++)
        len += (size_t)snprintf(t + len, cap - len, "%s{\"kind\": \"xid\", \"code\": %d}",
                                i ? ", " : "", i);
    snprintf(t + len, cap - len, "]}]}");
    load_text(t, &st);
    free(t);
    assert_int_equal(st.status, STATE_OK);
    assert_int_equal(st.gpus[0].n_events, STATE_MAX_EVENTS);
    assert_int_equal(st.gpus[0].events[0].code, 10); /* the oldest dropped */
    state_info_free(&st);
}

/* A snapshot of one GPU with one Xid 48 at uptime up_us in boot. */
static struct snapshot *one_gpu(const char *serial, const char *uuid, const char *boot,
                                int64_t up_us, uint64_t ecc)
{
    struct snapshot *s = snapshot_new();
    struct klog_event *ev;

    s->time_ms = 1000000;
    s->host.uptime_s = 500;
    host_set_valid(&s->host, HOST_S_UPTIME);
    s->host.boot_id = xstrdup(boot);
    host_set_valid(&s->host, HOST_S_BOOT_ID);
    s->gpus = xcalloc(1, sizeof(*s->gpus));
    s->n_gpus = 1;
    gpu_init(&s->gpus[0], 0);
    s->gpus[0].serial = xstrdup(serial);
    s->gpus[0].uuid = xstrdup(uuid);
    s->gpus[0].pci_bus_id = xstrdup("00000000:18:00.0");
    s->gpus[0].ecc_aggregate_uncorrected = ecc;
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_SERIAL, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_UUID, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_PCI_BUS_ID, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ECC_AGG_UNCORR, 0);
    s->driver.events = xcalloc(1, sizeof(*s->driver.events));
    s->driver.n_events = 1;
    ev = &s->driver.events[0];
    ev->kind = KLOG_XID;
    ev->xid = 48;
    ev->pci = xstrdup("0000:18:00");
    ev->uptime_us = up_us;
    ev->time_ms = s->time_ms - 500000 + up_us / 1000;
    ev->valid =
        (UINT64_C(1) << KLOG_S_XID) | (UINT64_C(1) << KLOG_S_TIME) | (UINT64_C(1) << KLOG_S_UPTIME);
    return s;
}

static void test_merge(void **state)
{
    struct state_info st = { 0 };
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);

    (void)state;
    assert_true(state_merge(&st, s, 5));
    assert_false(state_merge(&st, s, 6)); /* the same event again: once, and no news */
    assert_int_equal(st.n_gpus, 1);
    assert_int_equal(st.gpus[0].n_events, 1);
    assert_string_equal(st.gpus[0].events[0].boot_id, "boot-a");
    assert_int_equal(st.gpus[0].last_seen_ms, 6);
    snapshot_free(s);
    /* the next boot: the same code again is a second event; ECC rose from 0 to 2 */
    s = one_gpu("S1", "GPU-1", "boot-b", 100000000, 2);
    assert_true(state_merge(&st, s, 7));
    assert_int_equal(st.gpus[0].n_events, 3);
    assert_int_equal(st.gpus[0].events[2].kind, STATE_EV_ECC);
    assert_int_equal(st.gpus[0].events[2].value, 2);
    snapshot_free(s);
    /* a replaced GPU: a new record, the old one kept */
    s = one_gpu("S2", "GPU-2", "boot-b", 100000000, 0);
    state_merge(&st, s, 8);
    assert_int_equal(st.n_gpus, 2);
    assert_int_equal(st.gpus[1].n_events, 1);
    snapshot_free(s);
    /* an event from before this boot (kern.log keeps them) is not given this boot's id */
    s = one_gpu("S3", "GPU-3", "boot-c", 100000000, 0);
    s->driver.events[0].time_ms = 1;
    state_merge(&st, s, 9);
    assert_int_equal(st.gpus[2].n_events, 0);
    snapshot_free(s);
    state_info_free(&st);
}

static void test_expired_acks_pruned(void **state)
{
    struct state_info st = { 0 };
    struct snapshot *s = snapshot_new();

    (void)state;
    st.acks = xcalloc(2, sizeof(*st.acks));
    st.n_acks = 2;
    st.acks[0].rule = xstrdup("health.xid");
    st.acks[0].gpu_uuid = xstrdup("GPU-1");
    st.acks[0].expires_ms = 100;
    st.acks[1].rule = xstrdup("health.xid");
    st.acks[1].gpu_uuid = xstrdup("GPU-2");
    state_merge(&st, s, 200);
    assert_int_equal(st.n_acks, 1);
    assert_string_equal(st.acks[0].gpu_uuid, "GPU-2");
    state_info_free(&st);
    snapshot_free(s);
}

static void test_record_round_trip(void **state)
{
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    struct state_info st;
    char *cause = NULL, path[128];
    struct stat sb;

    (void)state;
    snprintf(path, sizeof(path), "%s/state.json", dir);
    unlink(path);
    assert_int_equal(state_record(dir, s, 42, NULL, &cause), 0);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    state_load(dir, &st);
    assert_int_equal(st.status, STATE_OK);
    assert_int_equal(st.n_gpus, 1);
    assert_int_equal(st.gpus[0].events[0].uptime_us, 100000000);
    state_info_free(&st);
    snapshot_free(s);
}

/* Reads the file name in dir; the caller frees it. */
static char *read_in_dir(const char *name)
{
    char path[256], *text = xmalloc(4096);
    size_t n;
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "r");
    assert_non_null(f);
    n = fread(text, 1, 4095, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* The names in dir that start with prefix, sorted, one a line; the caller frees it. */
static char *names_in_dir(const char *prefix)
{
    char cmd[256], *out = xcalloc(1, 4096);
    size_t n;
    FILE *p;

    snprintf(cmd, sizeof(cmd), "cd %s && ls | grep '^%s' | sort", dir, prefix);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, 4095, p);
    out[n] = '\0';
    pclose(p);
    return out;
}

static void rm_kept(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -f %s/state.json.corrupt-*", dir);
    assert_int_equal(system(cmd), 0);
}

/* A record never destroys what a file held: a corrupt file is kept aside (its own bytes, under a
 * new name the note gives), a newer version's is left as it is and the record fails. */
static void test_corrupt_kept_newer_kept(void **state)
{
    static const char corrupt[] = "{\"version\": 1, \"acks\": [{\"rule\": \"health.xid\", "
                                  "\"gpu_uuid\": \"GPU-1\", \"note\": 5}]}\n";
    static const char newer[] = "{\"version\": 2, \"acks\": [{\"rule\": \"health.xid\"}]}\n";
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    char *cause = NULL, *kept = NULL, *text, *names, *name;
    struct state_info st;

    (void)state;
    rm_kept();
    write_state(newer);
    assert_int_equal(state_record(dir, s, 42, &kept, &cause), -1);
    assert_null(kept);
    assert_non_null(strstr(cause, "written by a newer gpudoctor"));
    free(cause);
    cause = NULL;
    text = read_in_dir("state.json");
    assert_string_equal(text, newer);
    free(text);

    write_state(corrupt);
    assert_int_equal(state_record(dir, s, 42, &kept, &cause), 0);
    assert_null(cause);
    assert_non_null(kept);
    names = names_in_dir("state.json.corrupt-");
    assert_int_equal(strlen(names), strlen("state.json.corrupt-20260102T030405Z\n"));
    names[strlen(names) - 1] = '\0';
    assert_non_null(strstr(kept, names)); /* the note names where it went */
    assert_non_null(strstr(kept, ":1:")); /* and why */
    text = read_in_dir(names);
    assert_string_equal(text, corrupt);
    free(text);
    state_load(dir, &st);
    assert_int_equal(st.status, STATE_OK);
    state_info_free(&st);
    free(kept);
    kept = NULL;
    /* corrupt again within the second: a second name, the first kept as it was */
    write_state("{");
    assert_int_equal(state_record(dir, s, 43, &kept, &cause), 0);
    name = names_in_dir("state.json.corrupt-");
    assert_non_null(strstr(name, names));
    assert_true(strlen(name) > strlen(names) + 1);
    text = read_in_dir(names);
    assert_string_equal(text, corrupt);
    free(text);
    free(name);
    free(names);
    free(kept);
    rm_kept();
    snapshot_free(s);
}

/* Makes the file name in dir, modified age_s ago. */
static void touch_aged(const char *name, int64_t age_s)
{
    char path[256];
    struct timespec t[2];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("{\"version\": 1, \"gp", f);
    fclose(f);
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* A write killed between its temporary file and the rename (SIGKILL) leaves state.json.tmp.XXXXXX;
 * the next update removes such files of its own once they are old, and nothing else. */
static void test_stale_temporaries(void **state)
{
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    char *cause = NULL, *names;

    (void)state;
    touch_aged("state.json.tmp.Ab3dE9", 3600);  /* a killed writer's: goes */
    touch_aged("state.json.tmp.xY12zz", 60);    /* a minute old: may be mid-write, stays */
    touch_aged("state.json.tmp.Ab3dE9x", 3600); /* not the pattern: stays */
    touch_aged("other.json.tmp.Ab3dE9", 3600);  /* another file's: stays */
    touch_aged("state.json.tmp.Ab-dE9", 3600);  /* not the pattern: stays */
    assert_int_equal(state_record(dir, s, 42, NULL, &cause), 0);
    names = names_in_dir("state.json.tmp.");
    assert_string_equal(names,
                        "state.json.tmp.Ab-dE9\nstate.json.tmp.Ab3dE9x\nstate.json.tmp.xY12zz\n");
    free(names);
    names = names_in_dir("other.json.tmp.");
    assert_string_equal(names, "other.json.tmp.Ab3dE9\n");
    free(names);
    if (geteuid() == 0) { /* another user's is left to its user */
        char path[256];

        touch_aged("state.json.tmp.nobody", 3600);
        snprintf(path, sizeof(path), "%s/state.json.tmp.nobody", dir);
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_int_equal(state_record(dir, s, 43, NULL, &cause), 0);
        names = names_in_dir("state.json.tmp.nobody");
        assert_string_equal(names, "state.json.tmp.nobody\n");
        free(names);
    }
    {
        char cmd[256];

        snprintf(cmd, sizeof(cmd), "rm -f %s/*.tmp.*", dir);
        assert_int_equal(system(cmd), 0);
    }
    snapshot_free(s);
}

/* A loop writes only news (or after STATE_REFRESH_MS), and what it wrote is no news next time. */
static void test_recorder(void **state)
{
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    struct state_recorder r = { dir, false };
    char *cause = NULL, path[128];
    int64_t now = 1700000000000;

    (void)state;
    snprintf(path, sizeof(path), "%s/state.json", dir);
    unlink(path);
    collect_state(s, dir);
    assert_int_equal(s->state.status, STATE_MISSING);
    assert_true(state_has_news(s, now));
    assert_int_equal(state_recorder_record(&r, s, now, NULL, &cause), 1);
    /* the next cycle reads what it wrote: nothing new, nothing written */
    collect_state(s, dir);
    assert_int_equal(s->state.status, STATE_OK);
    assert_int_equal(s->state.gpus[0].n_events, 1);
    assert_false(state_has_news(s, now + 1000));
    assert_int_equal(state_recorder_record(&r, s, now + 1000, NULL, &cause), 0);
    /* a new Xid later in the boot is news */
    s->driver.events[0].uptime_us += 1000000;
    s->driver.events[0].time_ms += 1000;
    assert_true(state_has_news(s, now + 2000));
    assert_int_equal(s->state.gpus[0].n_events, 1); /* the snapshot's past is not changed */
    assert_int_equal(state_recorder_record(&r, s, now + 2000, NULL, &cause), 1);
    collect_state(s, dir);
    assert_int_equal(s->state.gpus[0].n_events, 2);
    /* nothing new, but the GPU last seen an hour ago: last_seen_ms refreshed */
    assert_int_equal(state_recorder_record(&r, s, now + 2000 + STATE_REFRESH_MS - 1, NULL, &cause),
                     0);
    assert_int_equal(state_recorder_record(&r, s, now + 2000 + STATE_REFRESH_MS, NULL, &cause), 1);
    collect_state(s, dir);
    assert_int_equal(s->state.gpus[0].last_seen_ms, now + 2000 + STATE_REFRESH_MS);
    /* the clock went back: refreshed too, so the GPU does not look unseen for an hour */
    assert_int_equal(state_recorder_record(&r, s, now, NULL, &cause), 1);
    collect_state(s, dir);
    assert_int_equal(s->state.gpus[0].last_seen_ms, now);
    /* a corrupt file is news (rewritten); the state off writes nothing */
    write_state("{\"version\": 1, \"gpus\": 7}\n");
    collect_state(s, dir);
    assert_int_equal(s->state.status, STATE_CORRUPT);
    assert_true(state_has_news(s, now + 3000));
    r.dir = NULL;
    assert_int_equal(state_recorder_record(&r, s, now + 3000, NULL, &cause), 0);
    r.dir = dir;
    assert_int_equal(state_recorder_record(&r, s, now + 3000, NULL, &cause), 1);
    collect_state(s, dir);
    assert_int_equal(s->state.status, STATE_OK);
    assert_null(cause);
    snapshot_free(s);
}

/* Moves the wall clock of s by delta_ms: the snapshot's time and the kernel-log times derived
 * from it (the kernel's stamps, its uptime, stay). */
static void shift_clock(struct snapshot *s, int64_t delta_ms)
{
    s->time_ms += delta_ms;
    for (size_t i = 0; i < s->driver.n_events; i++)
        s->driver.events[i].time_ms += delta_ms;
}

/* ECC on, with n uncorrectable errors since the driver loaded. */
static void set_volatile(struct snapshot *s, uint64_t n)
{
    s->gpus[0].ecc_mode = true;
    s->gpus[0].ecc_volatile_uncorrected = n;
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ECC_MODE, 0);
    jfield_set_rc(&gpu_table, &s->gpus[0], GPU_S_ECC_VOL_UNCORR, 0);
}

static const struct finding *find_rule(const struct findings *f, const char *id)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0)
            return &f->items[i];
    }
    return NULL;
}

/* Runs the rules over s; the finding of rule id (it must be there). */
static const struct finding *judge(const struct snapshot *s, struct findings *f, const char *id)
{
    struct config cfg;
    const struct finding *x;

    config_init(&cfg);
    findings_free(f);
    rules_run(s, NULL, &cfg.rules, f);
    config_free(&cfg);
    x = find_rule(f, id);
    if (x == NULL)
        fail_msg("no %s finding", id);
    return x;
}

/*
 * The wall clock going back or jumping forward between runs (docs/state.md): the same Xid line
 * and the same boot's ECC errors are recorded once whatever the clock says, a fault in a later
 * boot escalates even when the clock is behind the recorded times, and an acknowledgement's
 * expiry (and a GPU's last_seen_ms) follow the clock.
 */
static void test_clock_changes(void **state)
{
    const int64_t day = 86400000, now = 1700000000000;
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    struct findings f = { 0 };
    struct state_info st = { 0 };
    const struct finding *x;
    struct state_ack *a;

    (void)state;
    shift_clock(s, now - s->time_ms);
    set_volatile(s, 2);
    assert_true(state_merge(&st, s, now));
    assert_int_equal(st.gpus[0].n_events, 2); /* the Xid, this boot's uncorrectable errors */
    /* The clock goes back a day, then a year forward: the same line, the same boot. */
    shift_clock(s, -day);
    assert_false(state_merge(&st, s, now - day));
    assert_int_equal(st.gpus[0].last_seen_ms, now - day); /* follows the clock */
    shift_clock(s, 366 * day);
    assert_false(state_merge(&st, s, now + 365 * day));
    assert_int_equal(st.gpus[0].n_events, 2);
    assert_int_equal(st.gpus[0].events[0].time_ms, now - 400000); /* as first recorded */
    snapshot_free(s);

    /* The next boot, its clock a year behind the recorded events: the past is by boot id. */
    s = one_gpu("S1", "GPU-1", "boot-b", 100000000, 0);
    shift_clock(s, now - 365 * day - s->time_ms);
    set_volatile(s, 1);
    s->state = st;
    s->state.status = STATE_OK;
    memset(&st, 0, sizeof(st));
    x = judge(s, &f, "health.xid");
    assert_non_null(strstr(x->title, "again after 1 reboot: inspect or replace the GPU"));
    x = judge(s, &f, "health.ecc-uncorrectable");
    assert_string_equal(x->title, "GPU 0 had 1 uncorrectable ECC error since the driver loaded, "
                                  "again after 1 reboot: inspect or replace the GPU");
    assert_int_equal(x->severity, SEV_CRITICAL);

    /* An acknowledgement of the Xid given after it, expiring at e: expiry by the snapshot's time.
     */
    s->state.acks = xcalloc(1, sizeof(*s->state.acks));
    s->state.n_acks = 1;
    a = &s->state.acks[0];
    a->rule = xstrdup("health.xid");
    a->gpu_uuid = xstrdup("GPU-1");
    a->boot_id = xstrdup("boot-b");
    a->uptime_us = 200000000; /* after the Xid at 100 s */
    a->ecc_uncorrected = a->remapped_rows = -1;
    a->severity = -1;
    a->time_ms = s->time_ms;
    a->expires_ms = s->time_ms + day;
    assert_non_null(judge(s, &f, "health.xid")->ack);
    shift_clock(s, day); /* jumps forward to the expiry: no longer silenced */
    assert_null(judge(s, &f, "health.xid")->ack);
    shift_clock(s, -2 * day); /* goes back before it: the expiry moves with the clock */
    assert_non_null(judge(s, &f, "health.xid")->ack);
    /* A day ahead, never expiring: the Xid's wall time is now after the acknowledgement's, its
     * kernel stamp before it; the stamp decides, still silenced. */
    shift_clock(s, 2 * day + 1000);
    a->expires_ms = 0;
    assert_non_null(judge(s, &f, "health.xid")->ack);
    a->expires_ms = s->time_ms;
    /* A record at a time past the expiry drops it: a clock going back later cannot restore it. */
    state_merge(&s->state, s, s->time_ms);
    assert_int_equal(s->state.n_acks, 0);
    shift_clock(s, -2 * day);
    assert_null(judge(s, &f, "health.xid")->ack);
    findings_free(&f);
    snapshot_free(s);
}

/* Acknowledging marks findings in place: none removed, none moved (a cause is a position). */
static void test_acks_mark_only(void **state)
{
    struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
    struct findings f = { 0 };
    const char *ids[] = { "health.xid", "health.ecc-uncorrectable", "health.xid" };
    const int32_t gpus[] = { 0, 0, 1 };

    (void)state;
    s->state.status = STATE_OK;
    s->state.acks = xcalloc(1, sizeof(*s->state.acks));
    s->state.n_acks = 1;
    s->state.acks[0].rule = xstrdup("health.xid");
    s->state.acks[0].gpu_uuid = xstrdup("GPU-1");
    s->state.acks[0].boot_id = xstrdup("boot-a");
    s->state.acks[0].uptime_us = 200000000; /* after the Xid at 100 s */
    s->state.acks[0].ecc_uncorrected = 0;
    s->state.acks[0].remapped_rows = -1;
    s->state.acks[0].severity = -1; /* a file from before the field: any severity */
    f.items = xcalloc(3, sizeof(*f.items));
    f.n = f.cap = 3;
    for (size_t i = 0; i < 3; i++) {
        f.items[i].rule = rule_find(ids[i]);
        assert_non_null(f.items[i].rule);
        f.items[i].severity = SEV_CRITICAL;
        f.items[i].subject.gpu_index = gpus[i];
        f.items[i].subject.pid = -1;
        f.items[i].subject.gpu_uuid = xstrdup(gpus[i] == 0 ? "GPU-1" : "GPU-2");
        f.items[i].title = xasprintf("finding %zu", i);
    }
    rules_apply_acks(s, &f);
    assert_int_equal(f.n, 3);
    for (size_t i = 0; i < 3; i++) {
        char want[32];

        snprintf(want, sizeof(want), "finding %zu", i);
        assert_string_equal(f.items[i].title, want); /* each where it was */
    }
    assert_non_null(f.items[0].ack);
    assert_null(f.items[1].ack); /* another rule */
    assert_null(f.items[2].ack); /* another GPU */
    assert_ptr_equal(findings_lead(&f), &f.items[1]);
    assert_int_equal(findings_acked(&f), 1);
    assert_int_equal(findings_count(&f, SEV_CRITICAL), 2);
    findings_free(&f);
    snapshot_free(s);
}

/*
 * An acknowledgement covers the severity it was given at and milder: the same rule on the same
 * GPU, escalated since (a warning then, critical now), is not acknowledged and says why; one
 * written without a severity (an older file) covers any, as before. The field reads and writes.
 */
static void test_ack_severity(void **state)
{
    static const struct {
        int32_t acked;
        enum severity now;
        bool covered;
    } cases[] = {
        { SEV_WARNING, SEV_WARNING, true },   { SEV_WARNING, SEV_CRITICAL, false },
        { SEV_CRITICAL, SEV_CRITICAL, true }, { SEV_CRITICAL, SEV_WARNING, true },
        { SEV_INFO, SEV_WARNING, false },     { -1, SEV_CRITICAL, true },
    };
    struct state_info back = { 0 };
    char *text;

    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct snapshot *s = one_gpu("S1", "GPU-1", "boot-a", 100000000, 0);
        struct findings f = { 0 };
        struct state_ack *a;

        s->state.status = STATE_OK;
        s->state.acks = xcalloc(1, sizeof(*s->state.acks));
        s->state.n_acks = 1;
        a = &s->state.acks[0];
        a->rule = xstrdup("clock.thermal-slowdown");
        a->gpu_uuid = xstrdup("GPU-1");
        a->by = xstrdup("alice");
        a->note = xstrdup("RMA 4711");
        a->boot_id = xstrdup("boot-a");
        a->uptime_us = 200000000;
        a->ecc_uncorrected = 0;
        a->remapped_rows = -1;
        a->severity = cases[c].acked;
        f.items = xcalloc(1, sizeof(*f.items));
        f.n = f.cap = 1;
        f.items[0].rule = rule_find("clock.thermal-slowdown");
        f.items[0].severity = cases[c].now;
        f.items[0].subject.gpu_index = 0;
        f.items[0].subject.pid = -1;
        f.items[0].subject.gpu_uuid = xstrdup("GPU-1");
        f.items[0].title = xstrdup("hot");
        rules_apply_acks(s, &f);
        assert_int_equal(f.items[0].ack != NULL, cases[c].covered);
        if (!cases[c].covered) {
            assert_int_equal(f.items[0].n_evidence, 1);
            assert_non_null(strstr(f.items[0].evidence[0], "acknowledged at "));
            assert_non_null(strstr(f.items[0].evidence[0], "by alice"));
            assert_non_null(strstr(f.items[0].evidence[0], "RMA 4711"));
            assert_non_null(strstr(f.items[0].evidence[0], "not covered, it is "));
        } else {
            assert_int_equal(f.items[0].n_evidence, 0);
        }
        /* through the file: the severity kept, none recorded still none */
        text = state_format(&s->state);
        state_parse(text, strlen(text), "t.json", &back);
        assert_int_equal(back.status, STATE_OK);
        assert_int_equal(back.acks[0].severity, cases[c].acked);
        assert_true(strstr(text, cases[c].acked < 0 ? "\"severity\": null" : "\"severity\": \"") !=
                    NULL);
        state_info_free(&back);
        free(text);
        findings_free(&f);
        snapshot_free(s);
    }
    /* an older file, without the key: any severity */
    state_parse("{\"version\": 1, \"acks\": [{\"rule\": \"health.xid\", \"gpu_uuid\": \"G\"}]}", 65,
                "old.json", &back);
    assert_int_equal(back.status, STATE_OK);
    assert_int_equal(back.acks[0].severity, -1);
    state_info_free(&back);
    state_parse("{\"version\": 1, \"acks\": [{\"rule\": \"health.xid\", \"gpu_uuid\": \"G\", "
                "\"severity\": 7}]}",
                80, "bad.json", &back);
    assert_int_equal(back.status, STATE_CORRUPT);
    assert_non_null(strstr(back.note, "severity"));
    state_info_free(&back);
}

static void test_dir_resolve(void **state)
{
    char *d, *cause = NULL;

    (void)state;
    unsetenv(STATE_DIR_ENV);
    d = state_dir_resolve("/x", "/y", &cause);
    assert_string_equal(d, "/x");
    free(d);
    d = state_dir_resolve(NULL, "/y", &cause);
    assert_string_equal(d, "/y");
    free(d);
    assert_null(state_dir_resolve("off", NULL, &cause));
    assert_null(cause);
    setenv(STATE_DIR_ENV, "/env", 1);
    d = state_dir_resolve(NULL, "/y", &cause);
    assert_string_equal(d, "/env");
    free(d);
    /* relative: refused, naming where it came from, whichever is chosen */
    assert_null(state_dir_resolve("rel/dir", NULL, &cause));
    assert_string_equal(cause, "--state-dir: 'rel/dir' is not an absolute directory or 'off'");
    free(cause);
    setenv(STATE_DIR_ENV, "rel", 1);
    assert_null(state_dir_resolve(NULL, "/y", &cause));
    assert_string_equal(cause, "$GPUDOCTOR_STATE_DIR: 'rel' is not an absolute directory or 'off'");
    free(cause);
    d = state_dir_resolve("/x", NULL, &cause); /* not the one chosen */
    assert_string_equal(d, "/x");
    assert_null(cause);
    free(d);
    unsetenv(STATE_DIR_ENV);
}

/* The state directory is used only when it is the directory itself and only its owner (the
 * user, or root) can write it; a refused one reads as unreadable, never as missing. */
static void test_dir_trusted(void **state)
{
    char sub[128], link[128], *cause = NULL;
    struct state_info st;
    int fd;

    (void)state;
    snprintf(sub, sizeof(sub), "%s/trust", dir);
    snprintf(link, sizeof(link), "%s/trust-link", dir);
    fd = state_dir_open(sub, false, &cause);
    assert_int_equal(fd, -1);
    assert_int_equal(errno, ENOENT);
    free(cause);
    state_load(sub, &st);
    assert_int_equal(st.status, STATE_MISSING);
    state_info_free(&st);
    fd = state_dir_open(sub, true, &cause); /* made, 0700, and trusted */
    assert_true(fd >= 0);
    close(fd);
    fd = state_dir_open("/tmp/", false, &cause); /* 1777: anyone can swap a file in it */
    assert_int_equal(fd, -1);
    assert_int_equal(errno, EPERM);
    assert_non_null(strstr(cause, "state directory /tmp/: writable by every user (mode 1777)"));
    free(cause);
    assert_int_equal(chmod(sub, 0770), 0);
    state_load(sub, &st);
    assert_int_equal(st.status, STATE_UNREADABLE);
    assert_non_null(strstr(st.note, "writable by its group (mode 0770): not used"));
    state_info_free(&st);
    assert_int_equal(state_record(sub, &(struct snapshot){ 0 }, 1, NULL, &cause), -1);
    assert_non_null(strstr(cause, "writable by its group"));
    free(cause);
    assert_int_equal(chmod(sub, 0700), 0);
    /* A link to it is not followed, with or without a trailing slash. */
    assert_int_equal(symlink(sub, link), 0);
    for (int slash = 0; slash < 2; slash++) {
        char given[140];

        snprintf(given, sizeof(given), "%s%s", link, slash ? "/" : "");
        fd = state_dir_open(given, true, &cause);
        assert_int_equal(fd, -1);
        assert_non_null(strstr(cause, "a symbolic link, not followed"));
        free(cause);
    }
    if (geteuid() == 0) { /* another user's directory */
        assert_int_equal(chown(sub, 65534, 65534), 0);
        fd = state_dir_open(sub, false, &cause);
        assert_int_equal(fd, -1);
        assert_non_null(strstr(cause, "owned by uid 65534, not by root who runs this"));
        free(cause);
    }
    unlink(link);
    rmdir(sub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_corrupt_and_truncated),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_unknown_fields_ignored),
        cmocka_unit_test(test_oversize_and_nul),
        cmocka_unit_test(test_symlink_not_followed),
        cmocka_unit_test(test_bounds_on_read),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_expired_acks_pruned),
        cmocka_unit_test(test_record_round_trip),
        cmocka_unit_test(test_recorder),
        cmocka_unit_test(test_corrupt_kept_newer_kept),
        cmocka_unit_test(test_stale_temporaries),
        cmocka_unit_test(test_clock_changes),
        cmocka_unit_test(test_acks_mark_only),
        cmocka_unit_test(test_ack_severity),
        cmocka_unit_test(test_dir_resolve),
        cmocka_unit_test(test_dir_trusted),
    };

    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
