/*
 * The collector <-> NVML helper framing: requests, answers as snapshot JSON (links and peers as
 * rows), the sample made from a full reading, line buffering.
 */
#include "collect/nvml-wire.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_requests(void **state)
{
    (void)state;
    assert_string_equal(nvml_request_line(NVML_REQ_FULL), "full\n");
    assert_string_equal(nvml_request_line(NVML_REQ_SAMPLE), "sample\n");
    assert_int_equal(nvml_request_parse("full"), NVML_REQ_FULL);
    assert_int_equal(nvml_request_parse("sample"), NVML_REQ_SAMPLE);
    assert_int_equal(nvml_request_parse("full "), NVML_REQ_INVALID);
    assert_int_equal(nvml_request_parse("FULL"), NVML_REQ_INVALID);
    assert_int_equal(nvml_request_parse(""), NVML_REQ_INVALID);
}

static void make_gpus(struct gpu g[2])
{
    gpu_init(&g[0], 0);
    g[0].name = xstrdup("NVIDIA H100 80GB HBM3");
    gpu_set_rc(&g[0], GPU_S_NAME, 0);
    g[0].uuid = xstrdup("GPU-1b2c\n\"quoted\"");
    gpu_set_rc(&g[0], GPU_S_UUID, 0);
    g[0].mem_total_bytes = 85520809984ull;
    gpu_set_rc(&g[0], GPU_S_MEM_TOTAL, 0);
    g[0].mem_used_bytes = 1234567890123ull;
    gpu_set_rc(&g[0], GPU_S_MEM_USED, 0);
    g[0].temp_c = 71;
    gpu_set_rc(&g[0], GPU_S_TEMP, 0);
    gpu_set_rc(&g[0], GPU_S_POWER, NVML_ERROR_NO_PERMISSION);
    gpu_set_rc(&g[0], GPU_S_FAN, NVML_ERROR_NOT_SUPPORTED);
    g[0].clocks_event_reasons = 0x20;
    gpu_set_rc(&g[0], GPU_S_EVENT_REASONS, 0);
    g[0].procs = xcalloc(2, sizeof(*g[0].procs));
    g[0].n_procs = 2;
    g[0].procs[0].pid = 4121;
    g[0].procs[0].type_mask = GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS;
    g[0].procs[0].used_bytes = 40ull << 30;
    g[0].procs[0].sm_util_pct = 97;
    g[0].procs[0].valid = (1u << GPU_PROC_S_USED) | (1u << GPU_PROC_S_UTIL);
    g[0].procs[1].pid = 4122; /* used memory unknown (NVML_VALUE_NOT_AVAILABLE) */
    g[0].procs[1].type_mask = GPU_PROC_COMPUTE;
    gpu_set_rc(&g[0], GPU_S_PROCESSES, 0);

    gpu_init(&g[1], 1);
    g[1].handle_rc = NVML_ERROR_GPU_IS_LOST;
}

static void free_gpus(struct gpu *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gpu_free(&g[i]);
    free(g);
}

static void test_full_round_trip(void **state)
{
    struct nvml_system sys, back;
    struct gpu in[2], *out = NULL;
    size_t n = 0;
    char *line, *cause = NULL;

    (void)state;
    memset(&sys, 0, sizeof(sys));
    sys.attempted = true;
    sys.library = xstrdup("/usr/lib/libnvidia-ml.so.550.54.15");
    sys.library_version = xstrdup("550.54.15");
    sys.driver_version = xstrdup("550.54.15");
    sys.cuda_driver_version = 12040;
    sys.device_count = 2;
    sys.process_stride = 24;
    make_gpus(in);

    line = nvml_wire_encode(&sys, in, 2);
    /* one line: exactly one newline, at the end, whatever the strings held */
    assert_non_null(strchr(line, '\n'));
    assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1);

    memset(&back, 0, sizeof(back));
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, true, &back, &out, &n, &cause), 0);
    assert_null(cause);
    assert_true(back.attempted);
    assert_string_equal(back.library, sys.library);
    assert_string_equal(back.library_version, "550.54.15");
    assert_int_equal(back.cuda_driver_version, 12040);
    assert_int_equal(back.device_count, 2);
    assert_int_equal(back.process_stride, 24);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].name, "NVIDIA H100 80GB HBM3");
    /* The quotes survive the framing; the newline is made safe by the reader (str_sanitize). */
    assert_string_equal(out[0].uuid, "GPU-1b2c?\"quoted\"");
    assert_int_equal(out[0].mem_total_bytes, 85520809984ull);
    assert_int_equal(out[0].mem_used_bytes, 1234567890123ull);
    assert_int_equal(out[0].temp_c, 71);
    assert_int_equal(out[0].clocks_event_reasons, 0x20);
    assert_true(gpu_valid(&out[0], GPU_S_TEMP));
    /* field statuses survive: they are data */
    assert_int_equal(out[0].rc[GPU_S_POWER], NVML_ERROR_NO_PERMISSION);
    assert_int_equal(out[0].rc[GPU_S_FAN], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(out[0].n_procs, 2);
    assert_int_equal(out[0].procs[0].pid, 4121);
    assert_int_equal(out[0].procs[0].type_mask, GPU_PROC_COMPUTE | GPU_PROC_GRAPHICS);
    assert_int_equal(out[0].procs[0].used_bytes, 40ull << 30);
    assert_int_equal(out[0].procs[0].sm_util_pct, 97);
    assert_int_equal(out[0].procs[1].pid, 4122);
    assert_false(out[0].procs[1].valid & (1u << GPU_PROC_S_USED));
    assert_int_equal(out[1].index, 1);
    assert_int_equal(out[1].handle_rc, NVML_ERROR_GPU_IS_LOST);

    free(line);
    free_gpus(out, n);
    nvml_system_free(&back);
    nvml_system_free(&sys);
    gpu_free(&in[0]);
    gpu_free(&in[1]);
}

/*
 * A value NVML refused, or one not collected, is sent as its status alone (no "key": null beside
 * it), and reads back as it was, on the GPU and on its links.
 */
static void test_explained_nulls_left_out(void **state)
{
    struct nvml_system sys, back;
    struct gpu in, *out = NULL;
    size_t n = 0;
    char *line, *cause = NULL;

    (void)state;
    gpu_init(&in, 0);
    in.handle_rc = 0;
    in.name = xstrdup("NVIDIA H100 80GB HBM3");
    in.rc[GPU_S_NAME] = 0;
    in.rc[GPU_S_FAN] = NVML_ERROR_NOT_SUPPORTED;
    in.rc[GPU_S_NVLINK] = 0;
    in.nvlinks = xcalloc(1, sizeof(*in.nvlinks));
    in.n_nvlinks = 1;
    gpu_nvlink_init(&in.nvlinks[0], 3);
    in.nvlinks[0].active = true;
    in.nvlinks[0].rc[NVL_S_ACTIVE] = 0;
    in.nvlinks[0].rc[NVL_S_CRC] = NVML_ERROR_NOT_SUPPORTED;
    memset(&sys, 0, sizeof(sys));
    sys.attempted = true;
    sys.device_count = 1;
    line = nvml_wire_encode(&sys, &in, 1);
    assert_null(strstr(line, "\"fan_speed_pct\":null"));
    assert_non_null(strstr(line, "\"fan_speed_pct\":\"NOT_SUPPORTED\""));
    assert_null(strstr(line, "\"crc_errors\":null"));
    assert_non_null(strstr(line, "\"crc_errors\":\"NOT_SUPPORTED\""));
    /* not collected: said as such, once */
    assert_null(strstr(line, "\"replay_errors\":null"));
    assert_non_null(strstr(line, "\"replay_errors\":\"NOT_COLLECTED\""));
    memset(&back, 0, sizeof(back));
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, true, &back, &out, &n, &cause), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].rc[GPU_S_FAN], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(out[0].n_nvlinks, 1);
    assert_int_equal(out[0].nvlinks[0].link, 3);
    assert_true(out[0].nvlinks[0].active);
    assert_int_equal(out[0].nvlinks[0].rc[NVL_S_CRC], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(out[0].nvlinks[0].rc[NVL_S_REPLAY], JF_RC_NOT_COLLECTED);
    free(line);
    free_gpus(out, n);
    nvml_system_free(&back);
    nvml_system_free(&sys);
    gpu_free(&in);
}

static void test_sample_dynamic_only(void **state)
{
    struct gpu in[2], *out = NULL;
    size_t n = 0;
    char *line, *cause = NULL;

    (void)state;
    make_gpus(in);
    line = nvml_wire_encode(NULL, in, 2);
    assert_null(strstr(line, "\"nvml\""));
    assert_null(strstr(line, "\"name\""));            /* static */
    assert_null(strstr(line, "\"mem_total_bytes\"")); /* static */
    assert_non_null(strstr(line, "\"mem_used_bytes\":1234567890123"));
    assert_non_null(strstr(line, "\"temp_c\":71"));
    assert_non_null(strstr(line, "\"pid\":4121"));
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, false, NULL, &out, &n, &cause), 0);
    assert_int_equal(n, 2);
    assert_null(out[0].name);
    assert_false(gpu_valid(&out[0], GPU_S_NAME));
    assert_false(gpu_valid(&out[0], GPU_S_MEM_TOTAL));
    assert_int_equal(out[0].mem_used_bytes, 1234567890123ull);
    assert_int_equal(out[0].temp_c, 71);
    assert_int_equal(out[0].procs[0].used_bytes, 40ull << 30);
    assert_int_equal(out[1].handle_rc, NVML_ERROR_GPU_IS_LOST);
    free(line);
    free_gpus(out, n);
    gpu_free(&in[0]);
    gpu_free(&in[1]);
}

/* A GPU with links and peers, some values read, some refused, some not collected. */
static void make_fabric_gpu(struct gpu *g)
{
    gpu_init(g, 0);
    g->name = xstrdup("NVIDIA H100 80GB HBM3");
    g->rc[GPU_S_NAME] = 0;
    g->temp_c = 55;
    g->rc[GPU_S_TEMP] = 0;
    g->rc[GPU_S_NVLINK] = 0;
    g->nvlinks = xcalloc(2, sizeof(*g->nvlinks));
    g->n_nvlinks = 2;
    gpu_nvlink_init(&g->nvlinks[0], 0);
    g->nvlinks[0].active = true;
    g->nvlinks[0].rc[NVL_S_ACTIVE] = 0;
    g->nvlinks[0].remote_pci_bus_id = xstrdup("00000000:C5:00.0");
    g->nvlinks[0].rc[NVL_S_REMOTE_BUS] = 0;
    g->nvlinks[0].replay_errors = 7;
    g->nvlinks[0].rc[NVL_S_REPLAY] = 0;
    g->nvlinks[0].rc[NVL_S_CRC] = NVML_ERROR_NOT_SUPPORTED;
    gpu_nvlink_init(&g->nvlinks[1], 5);
    g->nvlinks[1].active = false;
    g->nvlinks[1].rc[NVL_S_ACTIVE] = 0;
    g->rc[GPU_S_PEERS] = 0;
    g->peers = xcalloc(1, sizeof(*g->peers));
    g->n_peers = 1;
    gpu_peer_init(&g->peers[0], 1);
    g->peers[0].topology = GPU_TOPO_INTERNAL;
    g->peers[0].rc[PEER_S_TOPOLOGY] = 0;
    g->peers[0].rc[PEER_S_P2P_NVLINK] = NVML_ERROR_NO_PERMISSION;
}

/* What a GPU reads as from the snapshot's own object form (the reference the wire must match). */
static json_t *as_snapshot_reads(const struct gpu *g, unsigned only_flags)
{
    json_t *j = gpu_to_json(g, only_flags), *out;
    struct jerr err = { "", "" };
    struct gpu back;

    gpu_init(&back, g->index);
    if (gpu_from_json(&back, j, "gpu", JF_RC_NOT_COLLECTED, NULL, &err) != 0)
        fail_msg("the object form did not read back: %s: %s", err.path, err.msg);
    out = gpu_to_json(&back, 0);
    gpu_free(&back);
    json_decref(j);
    return out;
}

static void assert_same_gpu(const struct gpu *a, json_t *want)
{
    json_t *got = gpu_to_json(a, 0);

    if (!json_equal(got, want)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        char *w = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS);

        fail_msg("read back as\n%s\nnot as\n%s", g, w);
    }
    json_decref(got);
    json_decref(want);
}

/* Links and peers travel as rows, and read back exactly as their objects would, full or sample. */
static void test_link_rows(void **state)
{
    struct nvml_system sys, back;
    struct gpu in, *out = NULL;
    size_t n = 0;
    char *line, *cause = NULL;

    (void)state;
    make_fabric_gpu(&in);
    memset(&sys, 0, sizeof(sys));
    sys.attempted = true;
    sys.device_count = 1;
    line = nvml_wire_encode(&sys, &in, 1);
    assert_null(strstr(line, "\"link\":"));
    assert_null(strstr(line, "\"topology\":"));
    assert_non_null(strstr(line, "\"nvlink\":[[0,true,"));
    memset(&back, 0, sizeof(back));
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, true, &back, &out, &n, &cause), 0);
    assert_int_equal(n, 1);
    assert_int_equal(out[0].nvlinks[0].replay_errors, 7);
    assert_int_equal(out[0].nvlinks[0].rc[NVL_S_CRC], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(out[0].nvlinks[1].link, 5);
    assert_int_equal(out[0].peers[0].rc[PEER_S_P2P_NVLINK], NVML_ERROR_NO_PERMISSION);
    assert_same_gpu(&out[0], as_snapshot_reads(&in, 0));
    free(line);
    free_gpus(out, n);
    nvml_system_free(&back);

    line = nvml_wire_encode(NULL, &in, 1);
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, false, NULL, &out, &n, &cause), 0);
    assert_same_gpu(&out[0], as_snapshot_reads(&in, JF_ID | JF_DYNAMIC));
    free(line);
    free_gpus(out, n);
    nvml_system_free(&sys);
    gpu_free(&in);
}

/* Without a window the sample is made from the full reading: the same GPUs a sample answer gives.
 */
static void test_sample_of_full(void **state)
{
    struct gpu in[3], *wire = NULL, *made = NULL;
    size_t n_wire = 0, n_made = 0;
    char *line, *cause = NULL;

    (void)state;
    make_gpus(in);
    make_fabric_gpu(&in[2]);
    in[2].index = 2;
    line = nvml_wire_encode(NULL, in, 3);
    assert_int_equal(nvml_wire_decode(line, strlen(line) - 1, false, NULL, &wire, &n_wire, &cause),
                     0);
    assert_int_equal(nvml_wire_sample_of(in, 3, &made, &n_made, &cause), 0);
    assert_null(cause);
    assert_int_equal(n_made, 3);
    for (size_t i = 0; i < 3; i++)
        assert_same_gpu(&made[i], gpu_to_json(&wire[i], 0));
    assert_null(made[0].name); /* static: not in a sample */
    assert_int_equal(made[0].temp_c, 71);
    assert_int_equal(made[1].handle_rc, NVML_ERROR_GPU_IS_LOST);
    free(line);
    free_gpus(wire, n_wire);
    free_gpus(made, n_made);
    for (size_t i = 0; i < 3; i++)
        gpu_free(&in[i]);
}

/* A malformed answer is an error that says where, never a crash or a half-filled result. */
static void expect_bad(const char *line, bool want_sys, const char *want)
{
    struct nvml_system sys;
    struct gpu *out = (struct gpu *)&sys;
    size_t n = 99;
    char *cause = NULL;

    memset(&sys, 0, sizeof(sys));
    assert_int_equal(
        nvml_wire_decode(line, strlen(line), want_sys, want_sys ? &sys : NULL, &out, &n, &cause),
        -1);
    assert_null(out);
    assert_int_equal(n, 0);
    assert_non_null(cause);
    if (strstr(cause, want) == NULL)
        fail_msg("cause \"%s\" does not contain \"%s\"", cause, want);
    free(cause);
    nvml_system_free(&sys);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_bad("{\"gpus\": [", false, "NVML helper answer:1:");
    expect_bad("", false, "NVML helper answer:1:");
    expect_bad("[1,2]", false, "expected an object");
    expect_bad("{\"gpus\": 3}", false, "gpus: expected an array");
    expect_bad("{}", false, "gpus: expected an array");
    expect_bad("{\"gpus\": [], \"extra\": 1}", false, "unknown key \"extra\"");
    expect_bad("{\"gpus\": []}", true, "missing \"nvml\"");
    expect_bad("{\"gpus\": [{\"index\": 0, \"temp_c\": \"hot\"}]}", false,
               "NVML helper answer:1:34: gpus[0].temp_c: expected a non-negative integer");
    expect_bad("{\"gpus\": [{\"index\": 0}, {\"index\": 1, \"temp_c\": -4}]}", false,
               "gpus[1].temp_c");
    expect_bad("{\"gpus\": [{\"index\": 0, \"handle_status\": \"NOPE\"}]}", false,
               "handle_status: expected an NVML error name");
    expect_bad("{\"nvml\": {\"init_rc\": \"x\"}, \"gpus\": []}", true, "nvml.init_rc");
    expect_bad("{\"error\": \"unknown request\"}", false, "refused the request: unknown request");
    expect_bad("{\"gpus\": [], \"gpus\": []}", false, "duplicate");
    /* rows: the table's values in order, and perhaps their statuses; nothing else */
    expect_bad("{\"gpus\": [{\"index\": 0, \"nvlink\": [[0]]}]}", false,
               "gpus[0].nvlink[0]: expected a GPU NVLink row");
    expect_bad("{\"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 0}]}]}", false,
               "expected a GPU NVLink row");
    expect_bad("{\"gpus\": [{\"index\": 0, \"nvlink\": [[40,true,6,null,null,0,0,0,0,0]]}]}", false,
               "link: expected 0 to");
    expect_bad("{\"gpus\": [{\"index\": 0, \"peers\": [[0,null,null,null]]}]}", false,
               "a GPU is not its own peer");
    expect_bad("{\"gpus\": [{\"index\": 0, \"peers\": [[1,null,null,null,{\"nope\":1}]]}]}", false,
               "unknown field \"nope\"");
}

static void test_error_answer(void **state)
{
    char *line = nvml_wire_encode_error("unknown request");

    (void)state;
    assert_string_equal(line, "{\"error\":\"unknown request\"}\n");
    free(line);
}

static void test_linebuf(void **state)
{
    struct nvml_linebuf b;
    ssize_t len;

    (void)state;
    nvml_linebuf_init(&b, 16);
    assert_int_equal(nvml_linebuf_line(&b), -1);
    /* a line may arrive in pieces */
    assert_int_equal(nvml_linebuf_append(&b, "sam", 3), 0);
    assert_int_equal(nvml_linebuf_line(&b), -1);
    assert_int_equal(nvml_linebuf_append(&b, "ple\nfu", 6), 0);
    len = nvml_linebuf_line(&b);
    assert_int_equal(len, 6);
    assert_string_equal(b.data, "sample");
    nvml_linebuf_consume(&b, (size_t)len + 1);
    assert_int_equal(b.len, 2);
    assert_int_equal(nvml_linebuf_line(&b), -1);
    assert_int_equal(nvml_linebuf_append(&b, "ll\n", 3), 0);
    len = nvml_linebuf_line(&b);
    assert_int_equal(len, 4);
    assert_string_equal(b.data, "full");
    nvml_linebuf_consume(&b, (size_t)len + 1);
    assert_int_equal(b.len, 0);
    /* an empty line is a line */
    assert_int_equal(nvml_linebuf_append(&b, "\n", 1), 0);
    assert_int_equal(nvml_linebuf_line(&b), 0);
    nvml_linebuf_consume(&b, 1);
    /* 16 bytes and a newline fit; one more byte does not */
    assert_int_equal(nvml_linebuf_append(&b, "0123456789abcdef", 16), 0);
    assert_int_equal(nvml_linebuf_append(&b, "\n", 1), 0);
    assert_int_equal(nvml_linebuf_line(&b), 16);
    nvml_linebuf_consume(&b, 17);
    assert_int_equal(nvml_linebuf_append(&b, "0123456789abcdef", 16), 0);
    assert_int_equal(nvml_linebuf_append(&b, "gh", 2), -EMSGSIZE);
    assert_int_equal(b.len, 16); /* a refused append changes nothing */
    nvml_linebuf_free(&b);
    assert_null(b.data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_full_round_trip),
        cmocka_unit_test(test_explained_nulls_left_out),
        cmocka_unit_test(test_sample_dynamic_only),
        cmocka_unit_test(test_link_rows),
        cmocka_unit_test(test_sample_of_full),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_error_answer),
        cmocka_unit_test(test_linebuf),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
