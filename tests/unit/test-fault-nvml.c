/*
 * NVML fault injection, in this process: every NVML function gpudoctor calls, with every error
 * code NVML has, against the simulator (docs/reliability.md, "Fault injection").
 *
 * Which functions gpudoctor calls is not written down here: it is found by running the query
 * table (nvml-query.c) with a hook that sees every call, on a scenario where every field has a
 * value, and then again with FUNCTION_NOT_FOUND injected into each function found, which makes
 * the collector reach for the older symbol of an any-of group, until nothing new is called. Each
 * function is recorded with the injections that reach it.
 *
 * Then, for each function and each error code: no crash and no leak (ASan in `make asan`), the
 * function was called, and the code is in the result, as the status of the fields the call
 * supplies, the GPU's handle, or the system value, so that a report can say "could not check,
 * because CODE" instead of reading a missing value as zero. A refusal code on a function with an
 * older sibling must reach the sibling instead. What the rules and the exit status make of each
 * code, and slow and hung calls, are checked on the real program by tests/e2e/fault-nvml.sh,
 * which takes the list of functions from `test-fault-nvml --list`.
 */
#include "collect/nvml-lib.h"
#include "collect/nvml-query.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define SIM_LIB   TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"
#define BASE      TEST_FIXTURES "/scenarios/full.json"
#define MAX_REACH 8

/* A function gpudoctor calls, and the functions that must refuse for it to be called. */
struct call {
    int sym; /* enum nvml_sym */
    bool device;
    int reach[MAX_REACH];
    size_t n_reach;
    bool has_fallback; /* refusing it makes the collector call another function */
};

struct calls {
    struct call v[NVML_SYM__COUNT];
    size_t n;
};

/* What one run called (by symbol), each with the GPU it was called for (-1: none). */
struct seen {
    bool called[NVML_SYM__COUNT];
    int gpu[NVML_SYM__COUNT];
};

static char scenario_path[64];
/* GPU 0 of the fixture (a value for every field), and the same GPU with MIG on, so that the
 * MIG calls are made too. */
static json_t *base_gpus;

static int sym_of(const char *name)
{
    for (int i = 0; i < NVML_SYM__COUNT; i++) {
        if (strcmp(nvml_sym_names[i], name) == 0)
            return i;
    }
    return -1;
}

static void mark(void *arg, const char *call, int gpu)
{
    struct seen *s = arg;
    int sym;

    if (call == NULL || strcmp(call, "dlopen") == 0)
        return;
    sym = sym_of(call);
    if (sym < 0)
        fail_msg("the query marked a call not in NVML_FUNCTIONS: %s", call);
    s->called[sym] = true;
    s->gpu[sym] = gpu;
}

/* Writes the scenario: the base GPUs, and code injected into each of the n functions in syms. */
static void write_scenario(const int *syms, const int *codes, size_t n)
{
    json_t *doc = json_pack("{s:s, s:{s:s, s:s, s:i}, s:O}", "schema", "gpudoctor.scenario/1",
                            "system", "driver_version", "550.54.15", "nvml_version", "12.550.54.15",
                            "cuda_driver_version", 12040, "gpus", base_gpus);
    json_t *errors = json_object();
    FILE *f;
    int fd;

    assert_non_null(doc);
    for (size_t i = 0; i < n; i++)
        json_object_set_new(errors, nvml_sym_names[syms[i]], json_integer(codes[i]));
    json_object_set_new(doc, "errors", errors);
    if (scenario_path[0] == '\0') {
        snprintf(scenario_path, sizeof(scenario_path), "/tmp/test-fault-nvml-XXXXXX");
        fd = mkstemp(scenario_path);
        assert_true(fd >= 0);
        close(fd);
        setenv("NVML_SIM_SCENARIO", scenario_path, 1);
        setenv("NVML_SIM_QUIET", "1", 1);
    }
    f = fopen(scenario_path, "w");
    assert_non_null(f);
    assert_int_equal(json_dumpf(doc, f, JSON_COMPACT), 0);
    assert_int_equal(fclose(f), 0);
    json_decref(doc);
}

struct result {
    struct nvml_system sys;
    struct gpu *gpus, *sample;
    size_t n_gpus, n_sample;
};

static void result_free(struct result *r)
{
    for (size_t i = 0; i < r->n_gpus; i++)
        gpu_free(&r->gpus[i]);
    free(r->gpus);
    for (size_t i = 0; i < r->n_sample; i++)
        gpu_free(&r->sample[i]);
    free(r->sample);
    nvml_system_free(&r->sys);
    memset(r, 0, sizeof(*r));
}

/* A full reading and a sample, as the collector takes them, with the calls seen. */
static void run(struct seen *s, struct result *r)
{
    struct nvml_query *q;

    memset(s, 0, sizeof(*s));
    memset(r, 0, sizeof(*r));
    q = nvml_query_new(SIM_LIB, mark, s);
    nvml_query_full(q, &r->sys, &r->gpus, &r->n_gpus);
    nvml_query_sample(q, &r->sample, &r->n_sample);
    nvml_query_free(q);
}

static void discover(struct calls *c)
{
    int syms[MAX_REACH + 1], codes[MAX_REACH + 1];
    struct seen s, before;
    struct result r;

    c->n = 0;
    write_scenario(NULL, NULL, 0);
    run(&s, &r);
    result_free(&r);
    assert_true(r.sys.init_rc == 0);
    for (int i = 0; i < NVML_SYM__COUNT; i++) {
        if (s.called[i] && i != NVML_SYM_nvmlErrorString)
            c->v[c->n++] = (struct call){ .sym = i, .device = s.gpu[i] >= 0 };
    }
    /* Refuse each function found, with what reaches it, and see what else gets called. */
    for (size_t k = 0; k < c->n; k++) {
        struct call *f = &c->v[k];

        if (f->n_reach >= MAX_REACH)
            fail_msg("%s: fallback chain too long", nvml_sym_names[f->sym]);
        for (size_t i = 0; i < f->n_reach; i++) {
            syms[i] = f->reach[i];
            codes[i] = NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        write_scenario(syms, codes, f->n_reach);
        run(&before, &r);
        result_free(&r);
        syms[f->n_reach] = f->sym;
        codes[f->n_reach] = NVML_ERROR_FUNCTION_NOT_FOUND;
        write_scenario(syms, codes, f->n_reach + 1);
        run(&s, &r);
        result_free(&r);
        for (int i = 0; i < NVML_SYM__COUNT; i++) {
            bool known = false;

            /* nvmlErrorString (after a failed init) returns text, not a code: nothing to inject */
            if (!s.called[i] || before.called[i] || i == NVML_SYM_nvmlErrorString)
                continue;
            f->has_fallback = true;
            for (size_t j = 0; j < c->n; j++)
                known |= c->v[j].sym == i;
            if (known)
                continue;
            c->v[c->n] = (struct call){ .sym = i, .device = s.gpu[i] >= 0 };
            memcpy(c->v[c->n].reach, f->reach, f->n_reach * sizeof(int));
            c->v[c->n].reach[f->n_reach] = f->sym;
            c->v[c->n].n_reach = f->n_reach + 1;
            c->n++;
        }
    }
}

static int setup(void **state)
{
    json_error_t jerr;
    json_t *doc, *second;

    (void)state;
    if (access(SIM_LIB, R_OK) != 0) {
        print_message("simulator not built: %s\n", SIM_LIB);
        skip();
    }
    doc = json_load_file(BASE, 0, &jerr);
    if (doc == NULL)
        fail_msg("%s:%d: %s", BASE, jerr.line, jerr.text);
    base_gpus = json_array();
    json_array_append(base_gpus, json_array_get(json_object_get(doc, "gpus"), 0));
    json_array_append_new(base_gpus, json_deep_copy(json_array_get(base_gpus, 0)));
    json_decref(doc);
    assert_non_null(json_array_get(base_gpus, 1));
    second = json_pack("{s:i, s:s, s:s, s:b, s:i, s:[], s:[{s:i, s:s, s:s, s:s}]}", "index", 1,
                       "pci_bus_id", "00000000:2A:00.0", "uuid",
                       "GPU-00000000-0000-0000-0000-00000000002a", "mig_mode", 1, "mig_devices", 2,
                       "processes", "peers", "gpu", 0, "topology", "node", "p2p_read", "ok",
                       "p2p_nvlink", "ok");
    assert_int_equal(json_object_update(json_array_get(base_gpus, 1), second), 0);
    json_decref(second); /* update copies the values: the object itself is ours to drop */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (scenario_path[0] != '\0')
        unlink(scenario_path);
    scenario_path[0] = '\0';
    json_decref(base_gpus);
    base_gpus = NULL;
    return 0;
}

/* Whether a value of one of g's NVLinks has code for status where the same link of was has not. */
static bool link_recorded(const struct gpu *g, const struct gpu *was, int32_t code)
{
    for (size_t i = 0; i < g->n_nvlinks; i++) {
        for (int k = 0; k < NVL_S__COUNT; k++) {
            bool before = false;

            for (size_t j = 0; was != NULL && j < was->n_nvlinks; j++) {
                if (was->nvlinks[j].link == g->nvlinks[i].link)
                    before = was->nvlinks[j].rc[k] == code;
            }
            if (g->nvlinks[i].rc[k] == code && !before)
                return true;
        }
    }
    return false;
}

/* The same for the values of g's peers. */
static bool peer_recorded(const struct gpu *g, const struct gpu *was, int32_t code)
{
    for (size_t i = 0; i < g->n_peers; i++) {
        for (int k = 0; k < PEER_S__COUNT; k++) {
            const struct gpu_peer *p = was ? gpu_peer_of(was, g->peers[i].gpu) : NULL;

            if (g->peers[i].rc[k] == code && (p == NULL || p->rc[k] != code))
                return true;
        }
    }
    return false;
}

/*
 * Whether code is somewhere a report can find it, where the same run without the injection did
 * not have it: a system value, a GPU's handle, a field's status in the reading or the sample.
 */
static bool recorded(const struct result *r, const struct result *base, int32_t code)
{
    const struct nvml_system *y = &r->sys, *b = &base->sys;

    if ((y->init_rc == code && b->init_rc != code) ||
        (y->driver_version_rc == code && b->driver_version_rc != code) ||
        (y->nvml_version_rc == code && b->nvml_version_rc != code) ||
        (y->cuda_driver_version_rc == code && b->cuda_driver_version_rc != code) ||
        (y->device_count_rc == code && b->device_count_rc != code))
        return true;
    for (size_t g = 0; g < r->n_gpus; g++) {
        const struct gpu *was = g < base->n_gpus ? &base->gpus[g] : NULL;
        const struct gpu *was_s = g < base->n_sample ? &base->sample[g] : NULL;

        if (r->gpus[g].handle_rc == code && (was == NULL || was->handle_rc != code))
            return true;
        if (peer_recorded(&r->gpus[g], was, code))
            return true;
        if (link_recorded(&r->gpus[g], was, code) ||
            (g < r->n_sample && link_recorded(&r->sample[g], was_s, code)))
            return true;
        for (int slot = 0; slot < GPU_S__COUNT; slot++) {
            if (r->gpus[g].rc[slot] == code && (was == NULL || was->rc[slot] != code))
                return true;
            if (g < r->n_sample && r->sample[g].rc[slot] == code &&
                (was_s == NULL || was_s->rc[slot] != code))
                return true;
        }
    }
    return false;
}

/*
 * Codes that are not lost but deliberately not recorded, as docs/nvml.md says: nvmlShutdown's
 * answer comes after everything was read; the MPS list is optional; a compute or graphics list
 * that does not exist (NOT_SUPPORTED, FUNCTION_NOT_FOUND) leaves the other list as the answer;
 * a retired-page count query is answered INSUFFICIENT_SIZE when there are pages, which is the
 * two-call protocol and not an error; an NVLink that answers INVALID_ARGUMENT does not exist;
 * MIG slots are sparse.
 */
static bool not_recorded_by_design(const char *fn, int32_t code)
{
    if (strcmp(fn, "nvmlShutdown") == 0)
        return true;
    if (strncmp(fn, "nvmlDeviceGetMPSComputeRunningProcesses", 39) == 0)
        return true;
    if ((strncmp(fn, "nvmlDeviceGetGraphicsRunningProcesses", 37) == 0 ||
         strncmp(fn, "nvmlDeviceGetComputeRunningProcesses", 36) == 0) &&
        (code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_FUNCTION_NOT_FOUND))
        return true;
    if (strcmp(fn, "nvmlDeviceGetRetiredPages") == 0 && code == NVML_ERROR_INSUFFICIENT_SIZE)
        return true;
    /* a link that answers INVALID_ARGUMENT is a link the GPU does not have */
    if (strcmp(fn, "nvmlDeviceGetNvLinkState") == 0 && code == NVML_ERROR_INVALID_ARGUMENT)
        return true;
    /* MIG slots are sparse: NOT_FOUND is an empty slot */
    if (strcmp(fn, "nvmlDeviceGetMigDeviceHandleByIndex") == 0 && code == NVML_ERROR_NOT_FOUND)
        return true;
    return false;
}

static void test_matrix(void **state)
{
    struct calls *c = xcalloc(1, sizeof(*c));
    int syms[MAX_REACH + 1], codes[MAX_REACH + 1];
    size_t runs = 0, unrecorded = 0;
    char missing[4096] = "";

    (void)state;
    discover(c);
    /* the collector's whole table: a healthy run alone makes well over fifty distinct calls */
    assert_true(c->n > 50);
    for (size_t k = 0; k < c->n; k++) {
        const struct call *f = &c->v[k];
        const char *fn = nvml_sym_names[f->sym];
        struct seen s;
        struct result base;

        /* the run that reaches the function, without the error: what the error must change */
        for (size_t i = 0; i < f->n_reach; i++) {
            syms[i] = f->reach[i];
            codes[i] = NVML_ERROR_FUNCTION_NOT_FOUND;
        }
        write_scenario(syms, codes, f->n_reach);
        run(&s, &base);
        for (int32_t code = 1; code <= NVML_ERROR_UNKNOWN; code++) {
            struct result r;

            if (nvml_rc_name(code) == NULL)
                continue;
            for (size_t i = 0; i < f->n_reach; i++) {
                syms[i] = f->reach[i];
                codes[i] = NVML_ERROR_FUNCTION_NOT_FOUND;
            }
            syms[f->n_reach] = f->sym;
            codes[f->n_reach] = code;
            write_scenario(syms, codes, f->n_reach + 1);
            run(&s, &r);
            runs++;
            if (!s.called[f->sym])
                fail_msg("%s with %s: not called (reached through %zu refusals)", fn,
                         nvml_rc_name(code), f->n_reach);
            /*
             * A refusal moves to the older symbol, which then answers. FUNCTION_NOT_FOUND on a
             * function reached by refusals is what the run without it already had: the
             * simulator answers for some renamed pairs (ClocksEventReasons and
             * ClocksThrottleReasons, PerformanceState and PowerState) as one function.
             */
            if (((code == NVML_ERROR_FUNCTION_NOT_FOUND ||
                  code == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) &&
                 f->has_fallback) ||
                (code == NVML_ERROR_FUNCTION_NOT_FOUND && f->n_reach > 0)) {
                result_free(&r);
                continue;
            }
            if (!recorded(&r, &base, code) && !not_recorded_by_design(fn, code)) {
                size_t len = strlen(missing);

                unrecorded++;
                snprintf(missing + len, sizeof(missing) - len, "\n  %s: %s", fn,
                         nvml_rc_name(code));
            }
            result_free(&r);
        }
        result_free(&base);
    }
    print_message("%zu functions, %zu runs, %zu codes lost\n", c->n, runs, unrecorded);
    if (unrecorded > 0)
        fail_msg("codes that no field, handle or system value records:%s", missing);
    free(c);
}

/* `test-fault-nvml --list`: the functions, for tests/e2e/fault-nvml.sh. */
static int list(void)
{
    struct calls *c;

    if (access(SIM_LIB, R_OK) != 0) {
        fprintf(stderr, "simulator not built: %s\n", SIM_LIB);
        return 77;
    }
    c = xcalloc(1, sizeof(*c));
    setup(NULL);
    discover(c);
    for (size_t k = 0; k < c->n; k++) {
        printf("%s %s", nvml_sym_names[c->v[k].sym], c->v[k].device ? "device" : "system");
        for (size_t i = 0; i < c->v[k].n_reach; i++)
            printf("%s%s", i ? "," : " ", nvml_sym_names[c->v[k].reach[i]]);
        printf("%s\n", c->v[k].n_reach ? "" : " -");
    }
    teardown(NULL);
    free(c);
    return 0;
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_matrix, setup, teardown),
    };

    if (argc == 2 && strcmp(argv[1], "--list") == 0)
        return list();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
