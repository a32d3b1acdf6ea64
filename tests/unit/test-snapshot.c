/* The snapshot model: round trips, error positions, validity semantics of the field tables. */
#include "snapshot/snapshot.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static struct snapshot *filled_snapshot(void)
{
    struct snapshot *s = snapshot_new();
    struct gpu *g;
    struct sample *smp;

    s->gpudoctor_version = xstrdup("0.1.0");
    s->hostname = xstrdup("node-17");
    s->time_ms = 1796203837416;
    s->window_ms = 2000;
    s->root = xstrdup("/");
    s->nvml.attempted = true;
    s->nvml.library = xstrdup("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54.15");
    s->nvml.library_version = xstrdup("550.54.15");
    s->nvml.driver_version = xstrdup("550.54.15");
    s->nvml.cuda_driver_version = 12040;
    s->nvml.device_count = 2;
    s->nvml.process_stride = 24;
    collector_set(&s->collectors[COLLECTOR_NVML], CS_OK, NULL);
    collector_set(&s->collectors[COLLECTOR_PROCS], CS_PARTIAL, "some processes unreadable");
    collector_note(&s->collectors[COLLECTOR_PROCS], "fds of %d processes unreadable: not root", 37);

    s->gpus = xcalloc(2, sizeof(*s->gpus));
    s->n_gpus = 2;
    g = &s->gpus[0];
    gpu_init(g, 0);
    g->name = xstrdup("NVIDIA H100 80GB HBM3");
    gpu_set_rc(g, GPU_S_NAME, 0);
    g->mem_total_bytes = 85520809984ULL;
    gpu_set_rc(g, GPU_S_MEM_TOTAL, 0);
    g->mem_used_bytes = 81604378624ULL;
    gpu_set_rc(g, GPU_S_MEM_USED, 0);
    g->temp_c = 67;
    gpu_set_rc(g, GPU_S_TEMP, 0);
    g->clocks_event_reasons = NVML_CLOCKS_EVENT_SW_THERMAL | NVML_CLOCKS_EVENT_HW_THERMAL;
    gpu_set_rc(g, GPU_S_EVENT_REASONS, 0);
    g->compute_mode = NVML_COMPUTEMODE_EXCLUSIVE_PROCESS;
    gpu_set_rc(g, GPU_S_COMPUTE_MODE, 0);
    g->pci_device_id = 0x233010DE;
    gpu_set_rc(g, GPU_S_PCI_DEVICE_ID, 0);
    gpu_set_rc(g, GPU_S_FAN, NVML_ERROR_NOT_SUPPORTED);
    gpu_set_rc(g, GPU_S_POWER, NVML_ERROR_NO_PERMISSION);
    gpu_set_rc(g, GPU_S_PROCESSES, 0);
    g->procs = xcalloc(1, sizeof(*g->procs));
    g->n_procs = 1;
    g->procs[0].pid = 4121;
    g->procs[0].type_mask = GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS;
    g->procs[0].used_bytes = 79456894976ULL;
    g->procs[0].valid = 1u << GPU_PROC_S_USED;
    gpu_init(&s->gpus[1], 1);
    s->gpus[1].handle_rc = NVML_ERROR_GPU_IS_LOST;

    smp = snapshot_add_sample(s, 0);
    smp->gpus = xcalloc(1, sizeof(*smp->gpus));
    smp->n_gpus = 1;
    gpu_init(&smp->gpus[0], 0);
    smp->gpus[0].util_gpu_pct = 97;
    gpu_set_rc(&smp->gpus[0], GPU_S_UTIL_GPU, 0);
    return s;
}

static void test_round_trip_is_byte_identical(void **state)
{
    struct snapshot *s = filled_snapshot(), *back;
    char *first = snapshot_to_json(s), *second, *cause = NULL;

    (void)state;
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    assert_null(cause);
    assert_non_null(back);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);

    /* And the values, not only the text. */
    assert_int_equal(back->n_gpus, 2);
    assert_string_equal(back->gpus[0].name, "NVIDIA H100 80GB HBM3");
    assert_true(gpu_valid(&back->gpus[0], GPU_S_MEM_USED));
    assert_int_equal(back->gpus[0].mem_used_bytes, 81604378624ULL);
    assert_int_equal(back->gpus[0].clocks_event_reasons, 0x60);
    assert_int_equal(back->gpus[0].compute_mode, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
    assert_int_equal(back->gpus[0].pci_device_id, 0x233010DE);
    assert_int_equal(back->gpus[0].rc[GPU_S_FAN], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(back->gpus[0].rc[GPU_S_POWER], NVML_ERROR_NO_PERMISSION);
    assert_int_equal(back->gpus[0].rc[GPU_S_SERIAL], JF_RC_NOT_COLLECTED);
    assert_false(gpu_valid(&back->gpus[0], GPU_S_SERIAL));
    assert_int_equal(back->gpus[0].n_procs, 1);
    assert_int_equal(back->gpus[0].procs[0].pid, 4121);
    assert_int_equal(back->gpus[0].procs[0].type_mask, GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS);
    assert_int_equal(back->gpus[1].handle_rc, NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(back->collectors[COLLECTOR_PROCS].state, CS_PARTIAL);
    assert_int_equal(back->collectors[COLLECTOR_PROCS].n_notes, 1);
    assert_string_equal(back->collectors[COLLECTOR_PROCS].notes[0],
                        "fds of 37 processes unreadable: not root");
    assert_int_equal(back->n_samples, 1);
    assert_int_equal(back->samples[0].gpus[0].util_gpu_pct, 97);
    assert_false(gpu_valid(&back->samples[0].gpus[0], GPU_S_MEM_TOTAL));
    assert_int_equal(back->nvml.cuda_driver_version, 12040);

    free(first);
    free(second);
    snapshot_free(s);
    snapshot_free(back);
}

static void expect_error(const char *text, const char *want)
{
    char *cause = NULL;
    struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

    assert_null(s);
    assert_non_null(cause);
    if (strstr(cause, want) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", cause, want);
    free(cause);
}

static void test_errors_name_file_line_column(void **state)
{
    (void)state;
    expect_error("{\"schema\": \"gpudoctor.snapshot/1\",\n \"gpus\": [ {\"index\": 0,\n"
                 "   \"temp_c\": \"hot\"} ] }",
                 "t.json:3:14: gpus[0].temp_c: expected a non-negative integer, got a string");
    expect_error("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [ ", "t.json:1:");
    expect_error("{\"schema\": \"gpudoctor.snapshot/2\"}", "unsupported schema");
    expect_error("[1, 2]", "a snapshot is a JSON object");
    expect_error("{\"gpus\": []}", "not a gpudoctor snapshot");
    expect_error(
        "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, \"tmep_c\": 3}]}",
        "unknown key \"tmep_c\"");
    expect_error("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"temp_c\": 3}]}",
                 "missing required key \"index\"");
    expect_error(
        "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, \"temp_c\": -4}]}",
        "out of range");
    expect_error(
        "{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, \"compute_mode\": "
        "\"sometimes\"}]}",
        "expected one of \"default\"");
    expect_error("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{\"index\": 0, \"temp_c\": 3,"
                 " \"nvml_status\": {\"temp_c\": \"NOT_SUPPORTED\"}}]}",
                 "has a value and an error");
    expect_error("{\"schema\": \"gpudoctor.snapshot/1\", \"schema\": \"x\"}", "duplicate");
}

static void test_missing_rc_and_hex(void **state)
{
    json_error_t je;
    json_t *j = json_loads("{\"index\": 3, \"pci_device_id\": \"0x20B010DE\", \"temp_c\": null,"
                           " \"nvml_status\": {\"temp_c\": \"GPU_IS_LOST\"}}",
                           0, &je);
    struct jerr err;
    struct gpu g;

    (void)state;
    assert_non_null(j);
    gpu_init(&g, 0);
    assert_int_equal(gpu_from_json(&g, j, "gpu", NVML_ERROR_NOT_SUPPORTED, NULL, &err), 0);
    assert_int_equal(g.index, 3);
    assert_int_equal(g.pci_device_id, 0x20B010DE);
    assert_int_equal(g.rc[GPU_S_TEMP], NVML_ERROR_GPU_IS_LOST);
    /* Absent keys take the caller's code: the simulator reads them as NOT_SUPPORTED. */
    assert_int_equal(g.rc[GPU_S_POWER], NVML_ERROR_NOT_SUPPORTED);
    /* An absent process list is an empty one, not an error. */
    assert_int_equal(g.rc[GPU_S_PROCESSES], 0);
    assert_int_equal(g.n_procs, 0);
    gpu_free(&g);
    json_decref(j);

    /* A status for a list stands on its own: the list's key need not be written as null. */
    j = json_loads("{\"index\": 0, \"nvml_status\": {\"processes\": \"NO_PERMISSION\"}}", 0, &je);
    assert_non_null(j);
    gpu_init(&g, 0);
    assert_int_equal(gpu_from_json(&g, j, "gpu", NVML_ERROR_NOT_SUPPORTED, NULL, &err), 0);
    assert_int_equal(g.rc[GPU_S_PROCESSES], NVML_ERROR_NO_PERMISSION);
    gpu_free(&g);
    json_decref(j);
}

static void test_jlocate(void **state)
{
    const char *text =
        "{\n  \"a\": [1, {\"b\": \"x\\\"y\", \"c\": [true, {\"d\": 5}]}],\n  \"e\": 2\n}";
    int line, col;

    (void)state;
    assert_true(jlocate(text, "a[1].c[1].d", &line, &col));
    assert_int_equal(line, 2);
    assert_int_equal(col, 44);
    assert_true(jlocate(text, "e", &line, &col));
    assert_int_equal(line, 3);
    assert_int_equal(col, 8);
    assert_false(jlocate(text, "a[5]", &line, &col));
    assert_false(jlocate(text, "zz", &line, &col));
}

static void test_nvml_rc_names(void **state)
{
    (void)state;
    assert_string_equal(nvml_rc_name(NVML_ERROR_LIB_RM_VERSION_MISMATCH),
                        "LIB_RM_VERSION_MISMATCH");
    assert_int_equal(nvml_rc_from_name("NVML_ERROR_GPU_IS_LOST"), 15);
    assert_int_equal(nvml_rc_from_name("UNKNOWN"), 999);
    assert_int_equal(nvml_rc_from_name("NOPE"), -1);
    assert_null(nvml_rc_name(12345));
}

/* The network cards of the PCIe section: an unknown name and an unread ACS stay null both ways. */
static void test_pcie_nics_round_trip(void **state)
{
    struct snapshot *s = snapshot_new(), *back;
    struct pcie_nic *n;
    char *first, *second, *cause = NULL;
    json_t *j;

    (void)state;
    s->pcie.valid = UINT64_C(1) << PCIE_I_GPUS | UINT64_C(1) << PCIE_I_NICS;
    s->pcie.nics = n = xcalloc(1, sizeof(*n));
    s->pcie.n_nics = 1;
    n->address = xstrdup("0000:05:00.0");
    n->class_code = 0x020700;
    n->valid = UINT64_C(1) << PCIE_N_UPSTREAM;
    n->upstream = xcalloc(2, sizeof(*n->upstream));
    n->n_upstream = 2;
    n->upstream[0].address = xstrdup("0000:03:01.0");
    n->upstream[0].acs = PCIE_ACS_PRESENT;
    n->upstream[0].acs_ctrl = 0x1d;
    n->upstream[0].valid = UINT64_C(1) << PCIE_B_ACS | UINT64_C(1) << PCIE_B_ACS_CTRL;
    n->upstream[1].address = xstrdup("0000:02:00.0");
    first = snapshot_to_json(s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    assert_null(cause);
    assert_non_null(back);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->pcie.n_nics, 1);
    assert_false((back->pcie.nics[0].valid >> PCIE_N_NAME) & 1u);
    assert_int_equal(back->pcie.nics[0].n_upstream, 2);
    assert_int_equal(back->pcie.nics[0].upstream[0].acs_ctrl, 0x1d);
    assert_false((back->pcie.nics[0].upstream[1].valid >> PCIE_B_ACS) & 1u);
    j = json_loads(first, 0, NULL);
    assert_true(json_is_null(json_object_get(
        json_array_get(json_object_get(json_object_get(j, "pcie"), "nics"), 0), "name")));
    json_decref(j);
    free(first);
    free(second);
    snapshot_free(s);
    snapshot_free(back);
}

/* A resource limit of "unlimited" is written as the word and read back as UINT64_MAX; a finite
 * one as a number; any other word is an error that names the field. */
static void test_limits_unlimited(void **state)
{
    struct snapshot *s = snapshot_new(), *back;
    char *first, *cause = NULL;
    const char *bad = "{\"schema\":\"gpudoctor.snapshot/1\",\"host\":{\"memlock_limit\":\"lots\"}}";
    json_t *j;

    (void)state;
    s->host.memlock_limit = UINT64_MAX;
    s->host.open_files_limit = 1024;
    s->host.valid |= UINT64_C(1) << HOST_S_MEMLOCK | UINT64_C(1) << HOST_S_NOFILE;
    first = snapshot_to_json(s);
    j = json_loads(first, 0, NULL);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "host"), "memlock_limit")),
        "unlimited");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "host"), "open_files_limit")), 1024);
    json_decref(j);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    assert_null(cause);
    assert_non_null(back);
    assert_true(host_valid(&back->host, HOST_S_MEMLOCK));
    assert_true(back->host.memlock_limit == UINT64_MAX);
    assert_int_equal(back->host.open_files_limit, 1024);
    snapshot_free(back);
    back = snapshot_from_json(bad, strlen(bad), "bad", &cause);
    assert_null(back);
    assert_non_null(cause);
    assert_non_null(strstr(cause, "memlock_limit"));
    free(cause);
    free(first);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_is_byte_identical),
        cmocka_unit_test(test_errors_name_file_line_column),
        cmocka_unit_test(test_missing_rc_and_hex),
        cmocka_unit_test(test_jlocate),
        cmocka_unit_test(test_nvml_rc_names),
        cmocka_unit_test(test_pcie_nics_round_trip),
        cmocka_unit_test(test_limits_unlimited),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
