/*
 * Partial evidence: a field a snapshot lacks is unknown, and only it. Fields that share a
 * validity bit are known together (never a missing one read as 0); a process's fields each have
 * a bit of their own, so a zombie whose CPU time was not recorded is still a zombie.
 */
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* The tables of the snapshot's records (those with a validity bit mask are tested). */
static const struct jtable *const tables[] = {
    &gpu_proc_table,  &proc_table_jtable, &proc_jtable,       &proc_gpu_jtable,  &host_info_table,
    &host_disk_table, &host_fs_table,     &host_sample_table, &pcie_info_table,  &pcie_device_table,
    &pcie_peer_table, &pcie_bridge_table, &driver_info_table, &klog_event_table,
};

/* A value of the field's type. */
static json_t *sample_value(const struct jfield *f)
{
    switch (f->type) {
    case JF_STR:
        return json_string("x");
    case JF_BOOL:
        return json_true();
    case JF_DOUBLE:
        return json_real(1.5);
    case JF_HEX32:
        return json_string("0x00000001");
    case JF_HEX64:
        return json_string("0x0000000000000001");
    case JF_ENUM:
        return json_string(f->enum_names[0]);
    default:
        return json_integer(1);
    }
}

/* An object with every field of the table, except the one named skip. */
static json_t *record(const struct jtable *t, const char *skip)
{
    json_t *j = json_object();

    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];

        if (f->type == JF_NONE || (skip && strcmp(f->name, skip) == 0))
            continue;
        json_object_set_new(j, f->name, sample_value(f));
    }
    return j;
}

static void test_shared_bits_need_every_field(void **state)
{
    size_t checked = 0;

    (void)state;
    for (size_t ti = 0; ti < ARRAY_SIZE(tables); ti++) {
        const struct jtable *t = tables[ti];

        if (t->validity != JT_BITS)
            continue; /* every field always valid */
        for (size_t i = 0; i < t->n_fields; i++) {
            const struct jfield *gone = &t->fields[i];
            _Alignas(max_align_t) char obj[8192];
            struct jerr err;
            json_t *j;

            if (gone->type == JF_NONE || gone->slot < 0)
                continue;
            memset(obj, 0, sizeof(obj));
            j = record(t, gone->name);
            if (jtable_read(t, obj, j, "t", 0, NULL, &err) != 0)
                fail_msg("%s without %s: %s: %s", t->name, gone->name, err.path, err.msg);
            for (size_t k = 0; k < t->n_fields; k++) {
                const struct jfield *f = &t->fields[k];
                bool want = f->slot < 0 || f->slot != gone->slot;

                if (f->type == JF_NONE)
                    continue;
                if (jfield_valid(t, obj, f) != want)
                    fail_msg("%s without %s: %s is %s", t->name, gone->name, f->name,
                             want ? "unknown" : "known (a missing value read as valid)");
            }
            jtable_free(t, obj);
            json_decref(j);
            checked++;
        }
    }
    assert_true(checked > 100);
}

/* A whole process record, as a live scan writes it. */
static json_t *process(void)
{
    json_t *j = record(&proc_jtable, NULL);

    json_object_set_new(j, "pid", json_integer(4121));
    json_object_set_new(j, "ppid", json_integer(4000));
    json_object_set_new(j, "ns_pid", json_integer(7));
    json_object_set_new(j, "state", json_string("Z"));
    json_object_set_new(j, "gpus", json_array());
    json_object_set_new(j, "children", json_array());
    json_object_set_new(j, "libs", json_array());
    json_object_set_new(j, "nccl", json_object());
    return j;
}

static struct proc_table *read_table(json_t *proc, struct jerr *err)
{
    struct proc_table *t = xcalloc(1, sizeof(*t));
    json_t *j = json_pack("{s:[o]}", "processes", proc);

    if (proc_table_from_json(t, j, "processes", err) != 0) {
        proc_table_free(t);
        free(t);
        t = NULL;
    }
    json_decref(j);
    return t;
}

static void test_a_process_loses_one_field_at_a_time(void **state)
{
    struct proc_table *t;
    struct jerr err;

    (void)state;
    /* Whole: every field known, in the collector's form (the group bits). */
    t = read_table(process(), &err);
    assert_non_null(t);
    assert_true(proc_has(&t->procs[0], PROC_S_STAT));
    assert_true(proc_has(&t->procs[0], PROC_S_FDS));
    assert_true(proc_has(&t->procs[0], PROC_S_NSPID));
    proc_table_free(t);
    free(t);

    for (size_t i = 0; i < proc_jtable.n_fields; i++) {
        const struct jfield *gone = &proc_jtable.fields[i];
        json_t *j;

        if (gone->slot < 0 || strcmp(gone->name, "gpus") == 0 ||
            strcmp(gone->name, "children") == 0)
            continue; /* always there (pid, the lists): nothing to lose */
        j = process();
        json_object_del(j, gone->name);
        t = read_table(j, &err);
        if (t == NULL)
            fail_msg("without %s: %s: %s", gone->name, err.path, err.msg);
        for (size_t k = 0; k < proc_jtable.n_fields; k++) {
            const struct jfield *f = &proc_jtable.fields[k];

            if (f->slot < 0)
                continue;
            if (proc_has(&t->procs[0], (enum proc_slot)f->slot) != (f != gone))
                fail_msg("without %s, %s is %s", gone->name, f->name,
                         f == gone ? "still known" : "unknown too");
        }
        /* The zombie stays a zombie whatever else is missing. */
        if (strcmp(gone->name, "state") != 0)
            assert_int_equal(t->procs[0].state, 'Z');
        proc_table_free(t);
        free(t);
    }
}

static void test_impossible_pids_are_refused(void **state)
{
    static const struct {
        const char *key;
        json_int_t value;
    } bad[] = {
        { "pid", 0 },   { "pid", -1 },   { "pid", 4194305 },
        { "ppid", -1 }, { "ns_pid", 0 }, { "ppid", 2147483647 },
    };
    struct proc_table *t;
    struct jerr err;
    json_t *j;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        j = process();
        json_object_set_new(j, bad[i].key, json_integer(bad[i].value));
        t = read_table(j, &err);
        if (t != NULL)
            fail_msg("%s %lld was accepted", bad[i].key, (long long)bad[i].value);
        assert_non_null(strstr(err.path, bad[i].key));
        assert_non_null(strstr(err.msg, "is not a process id"));
    }
    /* NVML's pids in a snapshot (and in its samples) are checked the same way. */
    for (int sample = 0; sample < 2; sample++) {
        json_t *snap = json_load_file(
            TEST_SOURCE_DIR "/tests/scenarios/mem-other-namespace/snapshot.json", 0, NULL);
        json_t *gpus =
            sample ? json_object_get(json_array_get(json_object_get(snap, "samples"), 0), "gpus")
                   : json_object_get(snap, "gpus");
        json_t *proc = json_array_get(json_object_get(json_array_get(gpus, 0), "processes"), 0);
        char *text, *cause = NULL;
        struct snapshot *s;

        assert_non_null(proc);
        json_object_set_new(proc, "pid", json_integer(sample ? 4294967295LL : 0));
        text = json_dumps(snap, 0);
        s = snapshot_from_json(text, strlen(text), "snap", &cause);
        assert_null(s);
        assert_non_null(strstr(cause, "processes[0].pid"));
        assert_non_null(strstr(cause, "is not a process id"));
        free(cause);
        free(text);
        json_decref(snap);
    }

    /* init's parent is 0. */
    j = process();
    json_object_set_new(j, "ppid", json_integer(0));
    t = read_table(j, &err);
    assert_non_null(t);
    proc_table_free(t);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_bits_need_every_field),
        cmocka_unit_test(test_a_process_loses_one_field_at_a_time),
        cmocka_unit_test(test_impossible_pids_are_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
