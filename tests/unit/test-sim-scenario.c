/*
 * Malformed scenarios, through the built simulator library (dlopen, as a client would): every
 * nvmlInit* returns NVML_ERROR_UNKNOWN and nvmlErrorString(NVML_ERROR_UNKNOWN) is
 * "NVML simulator: FILE:LINE:COLUMN: what". Each case names the text the position must point
 * at; the test finds that position itself, so it does not trust the library's locator.
 */
#include "nvml/nvml-abi.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SIM_LIB TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"

static void *lib;
static nvmlInit_v2_fn *init_v2;
static nvmlInit_fn *init_v1;
static nvmlInitWithFlags_fn *init_flags;
static nvmlShutdown_fn *shutdown_fn;
static nvmlErrorString_fn *error_string;
static char dir[] = "/tmp/test-sim-scenario.XXXXXX";

static int setup(void **state)
{
    (void)state;
    lib = dlopen(SIM_LIB, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "cannot load %s: %s\n", SIM_LIB, dlerror());
        return -1;
    }
    init_v2 = (nvmlInit_v2_fn *)dlsym(lib, "nvmlInit_v2");
    init_v1 = (nvmlInit_fn *)dlsym(lib, "nvmlInit");
    init_flags = (nvmlInitWithFlags_fn *)dlsym(lib, "nvmlInitWithFlags");
    shutdown_fn = (nvmlShutdown_fn *)dlsym(lib, "nvmlShutdown");
    error_string = (nvmlErrorString_fn *)dlsym(lib, "nvmlErrorString");
    if (mkdtemp(dir) == NULL)
        return -1;
    setenv("NVML_SIM_QUIET", "1", 1);
    unsetenv("NVML_SIM_EPOCH");
    return 0;
}

static int teardown(void **state)
{
    char path[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/scenario.json", dir);
    unlink(path);
    rmdir(dir);
    return 0;
}

/* 1-based line and column of the first occurrence of needle in text. */
static void position(const char *text, const char *needle, int *line, int *column)
{
    const char *at = strstr(text, needle);

    assert_non_null(at);
    *line = 1;
    *column = 1;
    for (const char *c = text; c < at; c++) {
        if (*c == '\n') {
            (*line)++;
            *column = 1;
        } else {
            (*column)++;
        }
    }
}

struct bad {
    const char *json;
    const char *at;  /* the text the message must point at */
    const char *msg; /* what follows "FILE:LINE:COLUMN: " */
};

#define HEAD "{\"schema\": \"gpudoctor.scenario/1\",\n"
#define GPU0 "{\"index\": 0, \"name\": \"G\", \"temp_c\": 50, \"processes\": [{\"pid\": 7}]}"

static const struct bad cases[] = {
    /* the document */
    { "{\"schema\": \"gpudoctor.scenario/1\",\n \"gpus\": [1, 2,]}", "]}",
      "unexpected token near ']'" },
    { HEAD " \"gpus\": [],\n \"gpus\": []}", "\": []}", "duplicate object key near '\"gpus\"'" },
    { "[1, 2]", "[", "a scenario is a JSON object" },
    { "{\"schema\": \"gpudoctor.scenario/2\"}", "\"gpudoctor.scenario/2\"",
      "schema: expected \"schema\": \"gpudoctor.scenario/1\" (or a gpudoctor snapshot, "
      "\"gpudoctor.snapshot/1\")" },
    { "{\"gpus\": []}", "{",
      "expected \"schema\": \"gpudoctor.scenario/1\" (or a gpudoctor "
      "snapshot, \"gpudoctor.snapshot/1\")" },
    { HEAD " \"gpu\": []}", "[]", "gpu: unknown key \"gpu\" in the scenario" },
    { HEAD " \"description\": 5}", "5", "description: expected a string" },
    { HEAD " \"gpus\": {}}", "{}", "gpus: expected an array of GPU objects" },
    /* system */
    { HEAD " \"system\": {\"driver\": \"550\"}}", "\"550\"",
      "system.driver: unknown key \"driver\" in system" },
    { HEAD " \"system\": {\"cuda_driver_version\": \"12.4\"}}", "{\"cuda",
      "system: cuda_driver_version: expected an integer, got a string" },
    { HEAD " \"system\": {\"cuda_driver_version\": 12}}", "12}",
      "system.cuda_driver_version: expected a CUDA version as cuDriverGetVersion gives it "
      "(12040 = 12.4)" },
    { HEAD " \"system\": {\"init_error\": \"VERSION_MISMATCH\"}}", "\"VERSION_MISMATCH\"",
      "system.init_error: expected an NVML error name such as \"LIB_RM_VERSION_MISMATCH\"" },
    /* injected errors, delays, hangs, growth */
    { HEAD " \"errors\": {\"nvmlDeviceGetPowerUsag\": \"NO_PERMISSION\"}}", "\"NO_PERMISSION\"",
      "errors.nvmlDeviceGetPowerUsag: unknown NVML function \"nvmlDeviceGetPowerUsag\"" },
    { HEAD " \"errors\": {\"nvmlDeviceGetPowerUsage\": \"NO_PERMISSIONS\"}}", "\"NO_PERMISSIONS\"",
      "errors.nvmlDeviceGetPowerUsage: expected an NVML error name such as \"NO_PERMISSION\"" },
    { HEAD " \"errors\": {\"nvmlDeviceGetPowerUsage\": \"SUCCESS\"}}", "\"SUCCESS\"",
      "errors.nvmlDeviceGetPowerUsage: expected an NVML error name such as \"NO_PERMISSION\"" },
    { HEAD " \"errors\": [\"nvmlDeviceGetPowerUsage\"]}", "[", "errors: expected an object" },
    { HEAD " \"delays_ms\": {\"nvmlDeviceGetName\": -5}}", "-5",
      "delays_ms.nvmlDeviceGetName: expected milliseconds, 0 to 3600000" },
    { HEAD " \"delays_ms\": {\"nvmlDeviceGetName\": 1.5}}", "1.5",
      "delays_ms.nvmlDeviceGetName: expected milliseconds, 0 to 3600000" },
    { HEAD " \"hang\": \"nvmlInit_v2\"}", "\"nvmlInit_v2\"",
      "hang: expected an array of NVML function names" },
    { HEAD " \"hang\": [\"nvmlInit_v2\", \"nvmlInit_v9\"]}", "\"nvmlInit_v9\"",
      "hang[1]: unknown NVML function \"nvmlInit_v9\"" },
    { HEAD " \"hang\": [3]}", "3]", "hang[0]: expected an NVML function name" },
    { HEAD " \"list_growth\": {\"nvmlDeviceGetName\": 1}}", "1}",
      "list_growth.nvmlDeviceGetName: nvmlDeviceGetName returns no list that could grow" },
    { HEAD " \"list_growth\": {\"nvmlDeviceGetComputeRunningProcesses_v3\": 0}}", "0}",
      "list_growth.nvmlDeviceGetComputeRunningProcesses_v3: expected how many entries appear, "
      "1 to 65535" },
    /* GPUs */
    { HEAD " \"gpus\": [{\"index\": 0, \"nmae\": \"G\"}]}", "{\"index\"",
      "gpus[0]: unknown key \"nmae\" in GPU" },
    { HEAD " \"gpus\": [{\"index\": 0, \"temp_c\": \"hot\"}]}", "\"hot\"",
      "gpus[0].temp_c: expected a non-negative integer, got a string" },
    { HEAD " \"gpus\": [{\"index\": 0, \"temp_c\": -3}]}", "-3",
      "gpus[0].temp_c: -3 is out of range (0 to 4294967295)" },
    { HEAD " \"gpus\": [{\"index\": 0, \"clocks_event_reasons\": \"0xZZ\"}]}", "\"0xZZ\"",
      "gpus[0].clocks_event_reasons: expected a hexadecimal string \"0x...\", got a string" },
    { HEAD " \"gpus\": [{\"index\": 0, \"compute_mode\": \"shared\"}]}", "\"shared\"",
      "gpus[0].compute_mode: expected one of \"default\", \"exclusive_thread\", \"prohibited\", "
      "\"exclusive_process\"" },
    { HEAD " \"gpus\": [{\"name\": \"G\"}]}", "{\"name\"",
      "gpus[0]: missing required key \"index\"" },
    { HEAD " \"gpus\": [{\"index\": 1}]}", "1}]",
      "gpus[0].index: expected 0: GPUs are listed in NVML index order" },
    { HEAD " \"gpus\": [{\"index\": 0, \"pci_bus_id\": \"18:00.0\"}]}", "\"18:00.0\"",
      "gpus[0].pci_bus_id: expected a PCI address \"DDDDDDDD:BB:DD.F\"" },
    { HEAD " \"gpus\": [{\"index\": 0, \"processes\": [{\"pid\": 7}, {\"pid\": 7}]}]}", "7}]",
      "gpus[0].processes[1].pid: pid 7 is listed twice on this GPU" },
    { HEAD " \"gpus\": [{\"index\": 0, \"processes\": [{\"pid\": 7, \"type\": \"cuda\"}]}]}",
      "{\"pid\"",
      "gpus[0].processes[0]: type: expected \"compute\", \"graphics\", \"mps\" or a "
      "list of them" },
    { HEAD " \"gpus\": [{\"index\": 0, \"temp_c\": 5, \"nvml_status\": {\"temp_c\": "
           "\"NO_PERMISSION\"}}]}",
      "{\"index\"", "gpus[0]: nvml_status.temp_c: the field has a value and an error" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvml_status\": {\"tmp_c\": \"NO_PERMISSION\"}}]}",
      "{\"index\"", "gpus[0]: nvml_status: unknown field \"tmp_c\"" },
    { HEAD " \"gpus\": [{\"index\": 0, \"handle_status\": \"LOST\"}]}", "{\"index\"",
      "gpus[0]: handle_status: expected an NVML error name" },
    { HEAD " \"gpus\": [{\"index\": 0, \"errors\": {\"nvmlDeviceGetFoo\": \"NOT_FOUND\"}}]}",
      "\"NOT_FOUND\"",
      "gpus[0].errors.nvmlDeviceGetFoo: unknown NVML function \"nvmlDeviceGetFoo\"" },
    { HEAD " \"gpus\": [{\"index\": 0, \"hang\": [\"nvmlDeviceGetBar\"]}]}", "\"nvmlDeviceGetBar\"",
      "gpus[0].hang[0]: unknown NVML function \"nvmlDeviceGetBar\"" },
    /* what only scenarios say about a GPU */
    { HEAD " \"gpus\": [{\"index\": 0, \"architecture\": \"hoper\"}]}", "\"hoper\"",
      "gpus[0].architecture: expected one of \"kepler\", \"maxwell\", \"pascal\", \"volta\", "
      "\"turing\", \"ampere\", \"ada\", \"hopper\", \"blackwell\", \"rubin\", \"unknown\", or a "
      "number from 0 to 4294967295" },
    { HEAD " \"gpus\": [{\"index\": 0, \"board_part_number\": 5}]}", "5}",
      "gpus[0].board_part_number: expected a string" },
    { HEAD " \"gpus\": [{\"index\": 0, \"accounting_mode\": \"on\"}]}", "\"on\"",
      "gpus[0].accounting_mode: expected true or false" },
    { HEAD " \"gpus\": [{\"index\": 0, \"clock_video_max_mhz\": -1}]}", "-1",
      "gpus[0].clock_video_max_mhz: expected a non-negative integer" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlinks\": [true, 1]}]}", "1]",
      "gpus[0].nvlinks[1]: expected true (active) or false" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlinks\": 18}]}", "18",
      "gpus[0].nvlinks: expected an array of up to 36 booleans, one per link (active)" },
    /* the snapshot's link list and fabric */
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlinks\": [true],\n \"nvlink\": [{\"link\": 0}]}]}",
      "[true]", "gpus[0].nvlinks: give \"nvlink\" (the snapshot's list) or \"nvlinks\", not both" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 0}, {\"link\": 0}]}]}",
      "{\"link\": 0}]", "gpus[0].nvlink[1]: link 0 is listed twice" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 36}]}]}", "{\"link\": 36}",
      "gpus[0].nvlink[0]: link: expected 0 to 35" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"active\": true}]}]}", "{\"active\"",
      "gpus[0].nvlink[0]: expected a link object with \"link\": its number" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 0, \"remote_pci_bus_id\": "
           "\"07:00.0\"}]}]}",
      "\"07:00.0\"",
      "gpus[0].nvlink[0].remote_pci_bus_id: expected a PCI address \"DDDDDDDD:BB:DD.F\"" },
    { HEAD " \"gpus\": [{\"index\": 0, \"fabric\": {\"state\": \"completed\", \"status\": 0, "
           "\"clique_id\": 1, \"cluster_uuid\": \"7f3c2a10-5b4e-4d21-9a8c-0e6b1f2d3c4\"}}]}",
      "\"7f3c2a10", "gpus[0].fabric.cluster_uuid: expected 32 hex digits as 8-4-4-4-12" },
    { HEAD " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 2, \"active\": true}]}],\n"
           " \"timeline\": [{\"gpu\": 0, \"link\": 3, \"field\": \"active\", \"value\": false}]}",
      "3, \"field", "timeline[0].link: GPU 0 lists no link 3 in \"nvlink\"" },
    { HEAD
      " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 2, \"active\": true}]}],\n"
      " \"timeline\": [{\"gpu\": 0, \"link\": 2, \"field\": \"crc_errors\", \"rate_per_s\": 1}]}",
      "\"crc_errors\"",
      "timeline[0].field: link 2 of GPU 0 has no crc_errors to change (give it a value)" },
    { HEAD
      " \"gpus\": [{\"index\": 0, \"nvlink\": [{\"link\": 2, \"active\": true}]}],\n"
      " \"timeline\": [{\"gpu\": 0, \"link\": 2, \"field\": \"remote_type\", \"value\": \"gpu\"}]}",
      "\"remote_type\"", "timeline[0].field: \"remote_type\" is not a link field that can change" },
    { HEAD " \"gpus\": [{\"index\": 0, \"field_values\": [{\"id\": 91, \"value\": 4}]}]}",
      "{\"id\"", "gpus[0].field_values[0]: missing \"type\": the nvmlValueType_t of the value" },
    { HEAD " \"gpus\": [{\"index\": 0, \"field_values\": [{\"id\": 91, \"type\": "
           "\"unsigned_short\", \"value\": 70000}]}]}",
      "70000",
      "gpus[0].field_values[0].value: expected an integer from 0 to 65535 (unsigned_short)" },
    { HEAD " \"gpus\": [{\"index\": 0, \"field_values\": [{\"id\": 91, \"type\": \"uint\", "
           "\"value\": 1}]}]}",
      "\"uint\"",
      "gpus[0].field_values[0].type: expected one of \"double\", \"unsigned_int\", "
      "\"unsigned_long\", \"unsigned_long_long\", \"signed_long_long\", \"signed_int\", "
      "\"unsigned_short\", or a number from 0 to 6" },
    { HEAD " \"gpus\": [{\"index\": 0, \"field_values\": [{\"id\": 138, \"scope\": 2, "
           "\"status\": \"NO_DATA\"},\n {\"id\": 138, \"scope\": 2, \"status\": \"NO_DATA\"}]}]}",
      "{\"id\": 138, \"scope\": 2, \"status\": \"NO_DATA\"}]",
      "gpus[0].field_values[1]: field 138 at scope 2 is already given by gpus[0].field_values[0]" },
    { HEAD " \"gpus\": [{\"index\": 0, \"field_values\": [{\"id\": 82, \"status\": "
           "\"NOT_SUPPORTED\", \"value\": 1}]}]}",
      "{\"id\"",
      "gpus[0].field_values[0]: give exactly one of \"value\" (with \"type\") and "
      "\"status\"" },
    /* the timeline */
    { HEAD " \"gpus\": [" GPU0 "],\n \"timeline\": {}}", "{}",
      "timeline: expected an array of timeline entries" },
    { HEAD " \"gpus\": [" GPU0
           "],\n \"timeline\": [{\"gpu\": 1, \"field\": \"temp_c\", \"value\": 1}]}",
      "1, \"field\"", "timeline[0].gpu: expected the index of a GPU of the scenario, 0 to 0" },
    { HEAD " \"gpus\": [{\"index\": 0, \"handle_status\": \"GPU_IS_LOST\"}],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": 1}]}",
      "0, \"field\"",
      "timeline[0].gpu: GPU 0 has no handle (handle_status), nothing of it can change" },
    { HEAD " \"gpus\": [" GPU0
           "],\n \"timeline\": [{\"gpu\": 0, \"field\": \"tmp_c\", \"value\": 1}]}",
      "\"tmp_c\"", "timeline[0].field: \"tmp_c\" is not a GPU field that can change" },
    { HEAD " \"gpus\": [" GPU0
           "],\n \"timeline\": [{\"gpu\": 0, \"field\": \"name\", \"value\": \"H\"}]}",
      "\"name\", \"value\"",
      "timeline[0].field: name is a string; the timeline changes numbers and booleans" },
    { HEAD " \"gpus\": [" GPU0
           "],\n \"timeline\": [{\"gpu\": 0, \"field\": \"power_mw\", \"value\": 1}]}",
      "\"power_mw\"", "timeline[0].field: GPU 0 has no power_mw to change (give it a value)" },
    { HEAD " \"gpus\": [" GPU0 "],\n \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\"}]}",
      "{\"gpu\": 0, \"field\"", "timeline[0]: give exactly one of rate_per_s, value, square" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": 1, \"rate_per_s\": 1}]}",
      "{\"gpu\": 0, \"field\"", "timeline[0]: give exactly one of rate_per_s, value, square" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": 1, \"max\": 3}]}",
      "3}", "timeline[0].max: min and max limit a rate_per_s" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": \"warm\"}]}",
      "\"warm\"", "timeline[0].value: expected a non-negative integer, got a string" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": null}]}",
      "null", "timeline[0].value: expected a value for temp_c, got null" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"from_s\": 5, \"to_s\": 5, "
           "\"value\": 1}]}",
      "5, \"value\"", "timeline[0].to_s: to_s must be later than from_s" },
    { HEAD
      " \"gpus\": [" GPU0 "],\n"
      " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"from_s\": \"now\", \"value\": 1}]}",
      "\"now\"", "timeline[0].from_s: expected a number" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"rate_per_s\": 1, \"min\": 9, "
           "\"max\": 3}]}",
      "3}", "timeline[0].max: max is below min" },
    { HEAD " \"gpus\": [{\"index\": 0, \"persistence_mode\": true}],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"persistence_mode\", \"rate_per_s\": 1}]}",
      "1}]",
      "timeline[0].rate_per_s: persistence_mode is not an integer quantity; use value or "
      "square" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"square\": {\"period_s\": 0, "
           "\"values\": [1]}}]}",
      "0, \"values\"",
      "timeline[0].square.period_s: expected a period in seconds, greater than 0" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"square\": {\"period_s\": 2, "
           "\"values\": []}}]}",
      "[]}", "timeline[0].square.values: expected an array of 1 to 4096 values" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"square\": {\"period_s\": 2, "
           "\"values\": [1, true]}}]}",
      "true", "timeline[0].square.values[1]: expected a non-negative integer, got a boolean" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"square\": {\"period\": 2}}]}",
      "2}}", "timeline[0].square.period: unknown key \"period\" in a square wave" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"pid\": 8, \"field\": \"used_bytes\", \"value\": 1}]}",
      "8, \"field\"", "timeline[0].pid: GPU 0 lists no process 8" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"pid\": 7, \"field\": \"used_bytes\", \"value\": 1}]}",
      "\"used_bytes\"", "timeline[0].field: process 7 on GPU 0 has no used_bytes to change" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"pid\": 7, \"field\": \"present\", \"value\": 1}]}",
      "1}]", "timeline[0].value: \"present\" takes true or false" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"pid\": 7, \"field\": \"present\", \"rate_per_s\": 1}]}",
      "1}]", "timeline[0].rate_per_s: present is not an integer quantity; use value or square" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": 1, \"when\": 3}]}",
      "3}]", "timeline[0].when: unknown key \"when\" in a timeline entry" },
    { HEAD " \"gpus\": [" GPU0 "],\n \"timeline\": [{\"field\": \"temp_c\", \"value\": 1}]}",
      "{\"field\"", "timeline[0]: missing \"gpu\": the index of a GPU of the scenario" },
    { HEAD " \"gpus\": [" GPU0 "],\n \"timeline\": [{\"gpu\": 0, \"value\": 1}]}", "{\"gpu\"",
      "timeline[0]: missing \"field\": the name of a GPU field" },
    { HEAD " \"gpus\": [" GPU0 "],\n"
           " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"square\": {\"values\": [1]}}]}",
      "{\"values\"", "timeline[0].square: missing \"period_s\": the period in seconds" },
    { HEAD " \"timeline\": [{\"gpu\": 0, \"field\": \"temp_c\", \"value\": 1}]}", "0, \"field\"",
      "timeline[0].gpu: the scenario has no GPUs" },
    { HEAD " \"gpus\": [" GPU0 "],\n \"timeline\": [7]}", "7]",
      "timeline[0]: expected a timeline entry object" },
    /* a snapshot given as the scenario is checked by the snapshot reader */
    { "{\"schema\": \"gpudoctor.snapshot/1\",\n \"gpus\": [{\"index\": 0, \"temp_c\": \"x\"}]}",
      "\"x\"", "gpus[0].temp_c: expected a non-negative integer, got a string" },
    { "{\"schema\": \"gpudoctor.snapshot/1\",\n \"gpus\": [{\"index\": 3}]}", "3}",
      "gpus[0].index: expected 0: GPUs are listed in NVML index order" },
    { "{\"schema\": \"gpudoctor.snapshot/1\",\n \"extra\": 1}", "{",
      "unknown key \"extra\" in the snapshot" },
};

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

static void test_malformed(void **state)
{
    char path[256], want[1024];

    (void)state;
    snprintf(path, sizeof(path), "%s/scenario.json", dir);
    setenv("NVML_SIM_SCENARIO", path, 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int line, column;
        nvmlReturn_t rc;

        write_file(path, cases[i].json);
        position(cases[i].json, cases[i].at, &line, &column);
        snprintf(want, sizeof(want), "NVML simulator: %s:%d:%d: %s", path, line, column,
                 cases[i].msg);
        rc = init_v2();
        if (rc == NVML_SUCCESS)
            shutdown_fn();
        if (rc != NVML_ERROR_UNKNOWN || strcmp(error_string(NVML_ERROR_UNKNOWN), want) != 0) {
            fprintf(stderr, "case %zu: %s\n  init: %d\n  want: %s\n  got:  %s\n", i, cases[i].json,
                    rc, want, error_string(NVML_ERROR_UNKNOWN));
            fail();
        }
    }
}

/* Every init function fails alike; the text of other codes is untouched. */
static void test_every_init(void **state)
{
    char path[256];
    const char *text;

    (void)state;
    snprintf(path, sizeof(path), "%s/scenario.json", dir);
    setenv("NVML_SIM_SCENARIO", path, 1);
    write_file(path, "{\"schema\": 1}");
    assert_int_equal(init_v1(), NVML_ERROR_UNKNOWN);
    assert_int_equal(init_flags(0), NVML_ERROR_UNKNOWN);
    assert_int_equal(init_v2(), NVML_ERROR_UNKNOWN);
    text = error_string(NVML_ERROR_UNKNOWN);
    assert_non_null(strstr(text, "scenario.json:1:12: schema: expected"));
    assert_string_equal(error_string(NVML_ERROR_NOT_FOUND), "Not Found");
    assert_int_equal(shutdown_fn(), NVML_ERROR_UNINITIALIZED);
    /* the pointer handed out stays valid after a later, different failure */
    write_file(path, "{");
    assert_int_equal(init_v2(), NVML_ERROR_UNKNOWN);
    assert_non_null(strstr(text, "scenario.json:1:12: schema: expected"));
    assert_non_null(strstr(error_string(NVML_ERROR_UNKNOWN),
                           "scenario.json:1:1: string or '}' expected near end of file"));
}

/* Fixed, the same file initialises: the scenario is read again at every first nvmlInit. */
static void test_fixed_after_error(void **state)
{
    char path[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/scenario.json", dir);
    setenv("NVML_SIM_SCENARIO", path, 1);
    write_file(path, HEAD " \"gpus\": 3}");
    assert_int_equal(init_v2(), NVML_ERROR_UNKNOWN);
    write_file(path, HEAD " \"gpus\": []}");
    assert_int_equal(init_v2(), NVML_SUCCESS);
    /* success clears the explanation: UNKNOWN is the library's plain text again */
    assert_string_equal(error_string(NVML_ERROR_UNKNOWN), "Unknown Error");
    assert_int_equal(shutdown_fn(), NVML_SUCCESS);
}

/* After each test, whatever it left: a failed assertion skips its own shutdown. */
static int uninit(void **state)
{
    (void)state;
    while (shutdown_fn() == NVML_SUCCESS)
        continue;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_malformed, uninit),
        cmocka_unit_test_teardown(test_every_init, uninit),
        cmocka_unit_test_teardown(test_fixed_after_error, uninit),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
