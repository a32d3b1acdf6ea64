/*
 * NVLink and fabric values: NVML field values as counters (each value type, the failures),
 * the fabric cluster UUID's text, the remote device types; and the snapshot's "nvlink" and
 * "fabric" keys written and read back, in full and in samples, with their statuses.
 */
#include "collect/nvml-nvlink.h"
#include "nvml/nvml-abi.h"
#include "snapshot/snap-gpu.h"
#include "util/xalloc.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static nvmlFieldValue_t value(int type, nvmlReturn_t rc)
{
    nvmlFieldValue_t v;

    memset(&v, 0, sizeof(v));
    v.valueType = type;
    v.nvmlReturn = rc;
    return v;
}

static void test_field_as_u64(void **state)
{
    nvmlFieldValue_t v;
    uint64_t x = 7;

    (void)state;
    v = value(NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_SUCCESS);
    v.value.ullVal = 123456789012ULL;
    assert_true(nvml_field_as_u64(&v, &x));
    assert_true(x == 123456789012ULL);
    v = value(NVML_VALUE_TYPE_UNSIGNED_INT, NVML_SUCCESS);
    v.value.uiVal = 4000000000u;
    assert_true(nvml_field_as_u64(&v, &x));
    assert_true(x == 4000000000u);
    v = value(NVML_VALUE_TYPE_UNSIGNED_SHORT, NVML_SUCCESS);
    v.value.usVal = 65535;
    assert_true(nvml_field_as_u64(&v, &x));
    assert_true(x == 65535);
    v = value(NVML_VALUE_TYPE_SIGNED_LONG_LONG, NVML_SUCCESS);
    v.value.sllVal = 42;
    assert_true(nvml_field_as_u64(&v, &x));
    assert_true(x == 42);
    v = value(NVML_VALUE_TYPE_DOUBLE, NVML_SUCCESS);
    v.value.dVal = 12.9;
    assert_true(nvml_field_as_u64(&v, &x));
    assert_true(x == 12);

    /* not a count: negative, not finite, unknown type; or the value failed */
    x = 99;
    v = value(NVML_VALUE_TYPE_SIGNED_LONG_LONG, NVML_SUCCESS);
    v.value.sllVal = -1;
    assert_false(nvml_field_as_u64(&v, &x));
    v = value(NVML_VALUE_TYPE_SIGNED_INT, NVML_SUCCESS);
    v.value.siVal = -5;
    assert_false(nvml_field_as_u64(&v, &x));
    v = value(NVML_VALUE_TYPE_DOUBLE, NVML_SUCCESS);
    v.value.dVal = NAN;
    assert_false(nvml_field_as_u64(&v, &x));
    v.value.dVal = 1e30;
    assert_false(nvml_field_as_u64(&v, &x));
    v = value(NVML_VALUE_TYPE_COUNT, NVML_SUCCESS);
    assert_false(nvml_field_as_u64(&v, &x));
    v = value(NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_ERROR_NO_DATA);
    v.value.ullVal = 5;
    assert_false(nvml_field_as_u64(&v, &x));
    assert_true(x == 99); /* untouched */
}

static void test_uuid_and_remote(void **state)
{
    const unsigned char u[NVML_GPU_FABRIC_UUID_LEN] = { 0x7f, 0x3c, 0x2a, 0x10, 0x5b, 0x4e,
                                                        0x4d, 0x21, 0x9a, 0x8c, 0x0e, 0x6b,
                                                        0x1f, 0x2d, 0x3c, 0x4e };
    char buf[40];

    (void)state;
    nvml_fabric_uuid(u, buf);
    assert_string_equal(buf, "7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4e");
    assert_int_equal(nvml_nvlink_remote(NVML_NVLINK_DEVICE_TYPE_GPU), NVL_REMOTE_GPU);
    assert_int_equal(nvml_nvlink_remote(NVML_NVLINK_DEVICE_TYPE_IBMNPU), NVL_REMOTE_IBMNPU);
    assert_int_equal(nvml_nvlink_remote(NVML_NVLINK_DEVICE_TYPE_SWITCH), NVL_REMOTE_SWITCH);
    assert_int_equal(nvml_nvlink_remote(NVML_NVLINK_DEVICE_TYPE_UNKNOWN), NVL_REMOTE_UNKNOWN);
    assert_int_equal(nvml_nvlink_remote(7), NVL_REMOTE_UNKNOWN);
    /* the layouts of facts.md's compiled header */
    assert_int_equal(sizeof(nvmlGpuFabricInfo_t), 28);
    assert_int_equal(sizeof(nvmlGpuFabricInfo_v3_t), 40);
    assert_int_equal(offsetof(nvmlGpuFabricInfo_v3_t, state), 28);
    assert_int_equal(offsetof(nvmlGpuFabricInfo_v3_t, healthMask), 32);
    assert_int_equal(nvmlGpuFabricInfo_v3, 0x03000028u);
    assert_int_equal(nvmlGpuFabricInfo_v2, 0x02000024u);
}

/* GPU 0 with two links (link 5 with a counter that failed) and a fabric. */
static void make_gpu(struct gpu *g)
{
    gpu_init(g, 0);
    g->nvlinks = xcalloc(2, sizeof(*g->nvlinks));
    g->n_nvlinks = 2;
    for (size_t i = 0; i < 2; i++) {
        struct gpu_nvlink *l = &g->nvlinks[i];

        gpu_nvlink_init(l, i == 0 ? 0 : 5);
        for (int k = 0; k < NVL_S__COUNT; k++)
            l->rc[k] = 0;
        l->active = i == 0;
        l->version = 6;
        l->remote_pci_bus_id = xstrdup("00000000:C5:00.0");
        l->remote_type = NVL_REMOTE_SWITCH;
        l->crc_errors = 10 + i;
        l->replay_errors = 2;
        l->tx_kib = 1000 + i;
        l->rx_kib = 2000 + i;
    }
    g->nvlinks[1].rc[NVL_S_RX] = NVML_ERROR_NOT_SUPPORTED;
    g->nvlinks[1].rc[NVL_S_RECOVERY] = NVML_ERROR_NO_DATA;
    g->rc[GPU_S_NVLINK] = 0;
    g->fabric.state = GPU_FABRIC_IN_PROGRESS;
    g->fabric.clique_id = 9;
    g->fabric.cluster_uuid = xstrdup("7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4e");
    g->fabric.valid = UINT64_C(1) << FAB_S_INFO; /* no health mask: unversioned call */
    g->rc[GPU_S_FABRIC] = 0;
}

static void test_json_round_trip(void **state)
{
    struct gpu g, back, copy;
    struct jerr err = { "", "" };
    json_t *j, *links;
    char *a, *b;

    (void)state;
    make_gpu(&g);
    j = gpu_to_json(&g, 0);
    links = json_object_get(j, "nvlink");
    assert_int_equal(json_array_size(links), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(json_array_get(links, 1), "nvml_status"),
                                          "recovery_errors")),
        "NO_DATA");
    assert_true(json_is_null(json_object_get(json_object_get(j, "fabric"), "health_mask")));
    gpu_init(&back, 0);
    assert_int_equal(gpu_from_json(&back, j, "gpus[0]", JF_RC_NOT_COLLECTED, NULL, &err), 0);
    assert_int_equal(back.n_nvlinks, 2);
    assert_int_equal(back.nvlinks[1].link, 5);
    assert_int_equal(back.nvlinks[1].rc[NVL_S_RECOVERY], NVML_ERROR_NO_DATA);
    assert_true(back.nvlinks[1].crc_errors == 11);
    assert_true(back.nvlinks[0].tx_kib == 1000 && back.nvlinks[0].rx_kib == 2000);
    assert_true(back.nvlinks[1].tx_kib == 1001);
    assert_int_equal(back.nvlinks[1].rc[NVL_S_RX], NVML_ERROR_NOT_SUPPORTED);
    assert_false(back.nvlinks[1].active);
    assert_int_equal(back.fabric.state, GPU_FABRIC_IN_PROGRESS);
    assert_false(back.fabric.valid & (UINT64_C(1) << FAB_S_HEALTH));
    /* written again, the same text; a copy owns its strings */
    gpu_copy(&copy, &back);
    a = json_dumps(j, JSON_SORT_KEYS);
    json_decref(j);
    j = gpu_to_json(&copy, 0);
    b = json_dumps(j, JSON_SORT_KEYS);
    assert_string_equal(a, b);
    free(a);
    free(b);
    json_decref(j);

    /* a sample: the link's state and counters, nothing static, no fabric */
    j = gpu_to_json(&g, JF_ID | JF_DYNAMIC);
    a = json_dumps(json_object_get(j, "nvlink"), JSON_SORT_KEYS | JSON_COMPACT);
    assert_string_equal(a, "[{\"active\":true,\"crc_errors\":10,\"link\":0,\"recovery_errors\":0,"
                           "\"replay_errors\":2,\"rx_kib\":2000,\"tx_kib\":1000},{\"active\":false,"
                           "\"crc_errors\":11,\"link\":5,\"replay_errors\":2,\"tx_kib\":1001}]");
    assert_null(json_object_get(j, "fabric"));
    free(a);
    json_decref(j);
    gpu_free(&g);
    gpu_free(&back);
    gpu_free(&copy);
}

static int read_gpu(const char *text, struct gpu *g, struct jerr *err)
{
    json_t *j = json_loads(text, 0, NULL);
    int r;

    assert_non_null(j);
    gpu_init(g, 0);
    r = gpu_from_json(g, j, "gpus[0]", JF_RC_NOT_COLLECTED, NULL, err);
    json_decref(j);
    return r;
}

static void test_read_errors_and_old_documents(void **state)
{
    struct gpu g;
    struct jerr err = { "", "" };

    (void)state;
    /* a document from before the keys: unknown, not "no links" */
    assert_int_equal(read_gpu("{\"index\": 0}", &g, &err), 0);
    assert_int_equal(g.rc[GPU_S_NVLINK], JF_RC_NOT_COLLECTED);
    assert_int_equal(g.rc[GPU_S_FABRIC], JF_RC_NOT_COLLECTED);
    gpu_free(&g);
    /* a recorded status */
    assert_int_equal(read_gpu("{\"index\": 0, \"nvlink\": null, \"nvml_status\": {\"nvlink\": "
                              "\"NOT_SUPPORTED\"}}",
                              &g, &err),
                     0);
    assert_int_equal(g.rc[GPU_S_NVLINK], NVML_ERROR_NOT_SUPPORTED);
    gpu_free(&g);

    assert_int_equal(
        read_gpu("{\"index\": 0, \"nvlink\": [{\"link\": 1}, {\"link\": 1}]}", &g, &err), -1);
    assert_string_equal(err.path, "gpus[0].nvlink[1]");
    assert_string_equal(err.msg, "link 1 is listed twice");
    gpu_free(&g);
    assert_int_equal(read_gpu("{\"index\": 0, \"nvlink\": [{\"link\": 40}]}", &g, &err), -1);
    assert_string_equal(err.msg, "link: expected 0 to 35");
    gpu_free(&g);
    assert_int_equal(read_gpu("{\"index\": 0, \"nvlink\": {\"link\": 0}}", &g, &err), -1);
    assert_string_equal(err.msg, "nvlink: expected an array of links");
    gpu_free(&g);
    assert_int_equal(read_gpu("{\"index\": 0, \"fabric\": {\"state\": \"done\"}}", &g, &err), -1);
    gpu_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_as_u64),
        cmocka_unit_test(test_uuid_and_remote),
        cmocka_unit_test(test_json_round_trip),
        cmocka_unit_test(test_read_errors_and_old_documents),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
