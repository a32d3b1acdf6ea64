/* The driver collector over fixture trees (proprietary and open modules, sysfs only, garbage,
 * truncated, none) and the driver section's JSON codec (round trip, errors). */
#include "collect/collect.h"
#include "snapshot/snapshot.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static struct snapshot *run_driver(const char *fixture)
{
    char *root = xasprintf("%s/driver/%s", TEST_FIXTURES, fixture), *cause = NULL;
    struct collect_opts o = { 0 };
    struct collect_ctx ctx;
    struct snapshot *s = snapshot_new();

    memset(&ctx, 0, sizeof(ctx));
    o.root = root;
    o.timeout_ms = 10000;
    ctx.opts = &o;
    if (sysroot_open(&ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    ctx.start_mono_ms = time_mono_ms();
    ctx.deadline_mono_ms = ctx.start_mono_ms + o.timeout_ms;
    assert_null(collector_driver.start(&ctx, s));
    sysroot_close(&ctx.root);
    free(root);
    return s;
}

static const struct collector_status *status(const struct snapshot *s)
{
    return &s->collectors[COLLECTOR_DRIVER];
}

static bool has_note(const struct snapshot *s, const char *text)
{
    for (size_t i = 0; i < status(s)->n_notes; i++) {
        if (strstr(status(s)->notes[i], text) != NULL)
            return true;
    }
    return false;
}

static void test_proprietary(void **state)
{
    struct snapshot *s = run_driver("proprietary");

    (void)state;
    assert_int_equal(status(s)->state, CS_OK);
    assert_int_equal(status(s)->n_notes, 0);
    assert_true(s->driver.module_loaded);
    assert_true(s->driver.uvm_loaded);
    assert_string_equal(s->driver.module_version, "550.54.14");
    assert_string_equal(s->driver.module_flavor, "proprietary");
    assert_string_equal(s->driver.sysfs_version, "550.54.14");
    assert_string_equal(s->driver.module_banner, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  "
                                                 "550.54.14  Thu Feb 22 01:44:30 UTC 2024");
    /* nvidiactl, nvidia0 and nvidia1; not nvidia-uvm or nvidia-caps/ */
    assert_true(s->driver.valid & (1u << DRIVER_S_DEVICES));
    assert_true(s->driver.dev_ctl);
    assert_int_equal(s->driver.dev_gpus, 2);
    /* params: PreserveVideoMemoryAllocations 0; a 550 driver has no UseKernelSuspendNotifiers */
    assert_true(s->driver.valid & (1u << DRIVER_S_PRESERVE_VRAM));
    assert_false(s->driver.preserve_vram);
    assert_false(s->driver.valid & (1u << DRIVER_S_SUSPEND_NOTIFIERS));
    snapshot_free(s);
}

static void test_open_module(void **state)
{
    struct snapshot *s = run_driver("open");

    (void)state;
    assert_int_equal(status(s)->state, CS_OK);
    /* "Open Kernel Module for x86_64  575.57.08": the version is not right after "Module". */
    assert_string_equal(s->driver.module_version, "575.57.08");
    assert_string_equal(s->driver.module_flavor, "open");
    assert_false(s->driver.uvm_loaded);
    assert_true(s->driver.valid & (1u << DRIVER_S_PRESERVE_VRAM));
    assert_true(s->driver.preserve_vram);
    assert_true(s->driver.valid & (1u << DRIVER_S_SUSPEND_NOTIFIERS));
    assert_true(s->driver.suspend_notifiers);
    snapshot_free(s);
}

static void test_legacy_aarch64(void **state)
{
    struct snapshot *s = run_driver("legacy-aarch64");

    (void)state;
    assert_string_equal(s->driver.module_version, "470.223.02");
    assert_string_equal(s->driver.module_flavor, "proprietary");
    assert_null(s->driver.sysfs_version);
    assert_int_equal(status(s)->state, CS_OK);
    /* no params file: both unknown, without a note */
    assert_false(s->driver.valid & (1u << DRIVER_S_PRESERVE_VRAM));
    assert_false(s->driver.valid & (1u << DRIVER_S_SUSPEND_NOTIFIERS));
    assert_int_equal(status(s)->n_notes, 0);
    snapshot_free(s);
}

static void test_sysfs_only(void **state)
{
    struct snapshot *s = run_driver("sysfs-only");

    (void)state;
    assert_int_equal(status(s)->state, CS_OK);
    assert_true(s->driver.module_loaded);
    assert_true(s->driver.uvm_loaded);
    assert_null(s->driver.module_banner);
    assert_string_equal(s->driver.module_version, "560.35.03");
    /* The proprietary licence taints the kernel with P. */
    assert_string_equal(s->driver.module_flavor, "proprietary");
    snapshot_free(s);

    s = run_driver("sysfs-open");
    assert_string_equal(s->driver.module_version, "580.82.07");
    assert_string_equal(s->driver.module_flavor, "open");
    snapshot_free(s);
}

static void test_garbage(void **state)
{
    struct snapshot *s = run_driver("garbage");

    (void)state;
    assert_int_equal(status(s)->state, CS_PARTIAL);
    assert_true(s->driver.module_loaded);
    assert_null(s->driver.module_version);
    assert_null(s->driver.sysfs_version);
    assert_null(s->driver.module_flavor);
    assert_true(has_note(s, "/proc/driver/nvidia/version: unrecognised first line"));
    assert_true(has_note(s, "/sys/module/nvidia/version: unrecognised \"not-a-version\""));
    assert_true(has_note(s, "version could not be read"));
    /* "yes" and "-1" are not the driver's numbers: unknown, and said */
    assert_false(s->driver.valid & (1u << DRIVER_S_PRESERVE_VRAM));
    assert_false(s->driver.valid & (1u << DRIVER_S_SUSPEND_NOTIFIERS));
    assert_true(
        has_note(s, "/proc/driver/nvidia/params: PreserveVideoMemoryAllocations is not a number"));
    assert_true(
        has_note(s, "/proc/driver/nvidia/params: UseKernelSuspendNotifiers is not a number"));
    snapshot_free(s);
}

static void test_truncated(void **state)
{
    struct snapshot *s = run_driver("truncated");

    (void)state;
    assert_int_equal(status(s)->state, CS_PARTIAL);
    assert_string_equal(s->driver.module_banner, "NVRM version: NVIDIA UNIX x86_64 Kernel Mod");
    /* The banner is cut before the version: sysfs supplies it. */
    assert_string_equal(s->driver.module_version, "550.54.15");
    assert_null(s->driver.module_flavor);
    assert_true(has_note(s, "unrecognised first line"));
    snapshot_free(s);
}

static void test_mismatch_keeps_both(void **state)
{
    struct snapshot *s = run_driver("mismatch");

    (void)state;
    assert_string_equal(s->driver.module_version, "550.54.14");
    assert_string_equal(s->driver.sysfs_version, "550.54.15");
    snapshot_free(s);
}

/* A container started without the GPUs: the host's module shows, no device file does. */
static void test_container_without_devices(void **state)
{
    struct snapshot *s = run_driver("container");

    (void)state;
    assert_int_equal(status(s)->state, CS_OK);
    assert_true(s->driver.module_loaded);
    assert_true(s->driver.valid & (1u << DRIVER_S_DEVICES));
    assert_false(s->driver.dev_ctl);
    assert_int_equal(s->driver.dev_gpus, 0); /* "nvidia" and "nvidiafoo" are not GPUs' */
    snapshot_free(s);
}

/* The device cgroup (cgroup v1 devices.list) on /dev/nvidiactl: a container whose grant was
 * undone ("c 195:* m"), one whose runtime granted it ("c 195:255 rw" under its own cgroup
 * path), and a tree without /proc/self/cgroup (unknown). */
static void test_device_cgroup(void **state)
{
    struct snapshot *s = run_driver("container-lost");

    (void)state;
    assert_true(s->driver.valid & (UINT64_C(1) << DRIVER_S_CTL_CGROUP));
    assert_string_equal(s->driver.ctl_cgroup, "denied");
    assert_true(s->driver.dev_ctl);
    snapshot_free(s);
    s = run_driver("container-kept");
    assert_true(s->driver.valid & (UINT64_C(1) << DRIVER_S_CTL_CGROUP));
    assert_string_equal(s->driver.ctl_cgroup, "allowed");
    snapshot_free(s);
    s = run_driver("proprietary");
    assert_false(s->driver.valid & (UINT64_C(1) << DRIVER_S_CTL_CGROUP));
    assert_null(s->driver.ctl_cgroup);
    snapshot_free(s);
}

static void test_no_module(void **state)
{
    struct snapshot *s = run_driver("none");

    (void)state;
    assert_int_equal(status(s)->state, CS_UNAVAILABLE);
    assert_string_equal(status(s)->detail, "no NVIDIA kernel module loaded");
    assert_false(s->driver.module_loaded);
    assert_true(s->driver.valid & (1u << DRIVER_S_MODULE));
    assert_null(s->driver.module_version);
    assert_false(s->driver.valid & (1u << DRIVER_S_DEVICES)); /* no /dev in the tree: unknown */
    snapshot_free(s);
}

static struct klog_event *add_event(struct driver_info *d, enum klog_kind kind)
{
    struct klog_event *e;

    d->events = xreallocarray(d->events, d->n_events + 1, sizeof(*d->events));
    e = &d->events[d->n_events++];
    memset(e, 0, sizeof(*e));
    e->kind = kind;
    return e;
}

static void test_round_trip(void **state)
{
    struct snapshot *s = run_driver("open"), *back;
    struct klog_event *e;
    char *first, *second, *cause = NULL;

    (void)state;
    s->driver.klog_source = xstrdup("/dev/kmsg");
    s->driver.klog_records = 1234;
    s->driver.klog_events_total = 3;
    s->driver.klog_events_dropped = 0;
    s->driver.klog_unparsed = 1;
    s->driver.valid |= 1u << DRIVER_S_KLOG;
    e = add_event(&s->driver, KLOG_XID);
    e->time_ms = INT64_C(1796203512000);
    e->uptime_us = INT64_C(372000003);
    e->pci = xstrdup("0000:3b:00");
    e->uuid = xstrdup("GPU-5a8e6c4e-1c4f-4b1d-9c6e-2f9d3a7b8c01");
    e->xid = 45;
    e->caused_by_xid = 48;
    e->pid = 4121;
    e->name = xstrdup("python3 \"quoted\" \\ name");
    e->gpu_instance = 1;
    e->compute_instance = 0;
    e->message = xstrdup("Ch 00000008 caused by previous Xid 48");
    e->valid = (1u << KLOG_S_TIME) | (1u << KLOG_S_UPTIME) | (1u << KLOG_S_XID) |
               (1u << KLOG_S_PID) | (1u << KLOG_S_CAUSED_BY) | (1u << KLOG_S_GPU_INSTANCE) |
               (1u << KLOG_S_COMPUTE_INSTANCE);
    e = add_event(&s->driver, KLOG_OOM_KILL);
    e->pid = 9001;
    e->rss_bytes = UINT64_C(62703648768);
    e->valid = (1u << KLOG_S_PID) | (1u << KLOG_S_RSS);
    e->message = xstrdup("Out of memory: Killed process 9001 (python)");
    e = add_event(&s->driver, KLOG_HUNG_TASK);
    e->blocked_s = 120;
    e->valid = 1u << KLOG_S_BLOCKED;

    first = snapshot_to_json(s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->driver.n_events, 3);
    assert_int_equal(back->driver.events[0].caused_by_xid, 48);
    assert_int_equal(back->driver.events[1].rss_bytes, UINT64_C(62703648768));
    assert_false(back->driver.events[2].valid & (1u << KLOG_S_PID));
    assert_true(back->driver.module_loaded);
    assert_string_equal(back->driver.module_flavor, "open");
    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(s);
}

/* A snapshot text whose driver section is replaced by section. */
static char *with_driver(const char *section)
{
    return xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"driver\": %s}", section);
}

static void expect_error(const char *section, const char *what)
{
    char *text = with_driver(section), *cause = NULL;
    struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

    assert_null(s);
    assert_non_null(cause);
    if (strstr(cause, what) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", cause, what);
    free(cause);
    free(text);
}

static void test_read_errors(void **state)
{
    static const char base[] = "\"module_version\": null, \"module_flavor\": null, "
                               "\"module_banner\": null, \"sysfs_version\": null, "
                               "\"klog_source\": null";
    char *sec;

    (void)state;
    expect_error("[]", "expected an object");
    sec = xasprintf("{%s, \"events\": 3}", base);
    expect_error(sec, "events: expected an array");
    free(sec);
    sec = xasprintf("{%s, \"events\": [{\"kind\": \"xyd\", \"pci\": null, \"uuid\": null, "
                    "\"name\": null, \"message\": null}]}",
                    base);
    expect_error(sec, "driver.events[0].kind");
    free(sec);
    sec = xasprintf("{%s, \"events\": [{\"kind\": \"xid\", \"xid\": \"79\", \"pci\": null, "
                    "\"uuid\": null, \"name\": null, \"message\": null}]}",
                    base);
    expect_error(sec, "expected a 32-bit integer");
    free(sec);
    sec = xasprintf("{%s, \"surprise\": 1}", base);
    expect_error(sec, "unknown key \"surprise\"");
    free(sec);
    sec = xasprintf("{%s, \"klog_records\": -5}", base);
    expect_error(sec, "out of range");
    free(sec);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_proprietary), cmocka_unit_test(test_container_without_devices),
        cmocka_unit_test(test_open_module), cmocka_unit_test(test_legacy_aarch64),
        cmocka_unit_test(test_sysfs_only),  cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_truncated),   cmocka_unit_test(test_mismatch_keeps_both),
        cmocka_unit_test(test_no_module),   cmocka_unit_test(test_device_cgroup),
        cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_read_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
