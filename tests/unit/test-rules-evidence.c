/*
 * Diagnosis on partial and absurd evidence, on cases of the scenario corpus changed the way a
 * real snapshot can differ: a temperature past its threshold or not a reading at all, cuDNN
 * versions that differ in their minor, a driver known only by the CUDA version it supports, a
 * holder in another PID namespace without per-process memory, a stack collector that did not
 * run, a process whose maps were not read, and pids no command may name.
 */
#include "rules/config.h"
#include "nvml/nvml-abi.h"
#include "render/json.h"
#include "rules/rules.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define SCENARIOS TEST_SOURCE_DIR "/tests/scenarios/"

static struct snapshot *load(const char *name)
{
    char path[512], *cause = NULL;
    struct snapshot *s;

    snprintf(path, sizeof(path), SCENARIOS "%s/snapshot.json", name);
    s = snapshot_load(path, &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    return s;
}

static void run(const struct snapshot *s, struct findings *f)
{
    struct config cfg;

    config_init(&cfg);
    memset(f, 0, sizeof(*f));
    rules_run(s, NULL, &cfg.rules, f);
    config_free(&cfg);
}

static const struct finding *find(const struct findings *f, const char *id, int32_t gpu)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0 &&
            (gpu < 0 || f->items[i].subject.gpu_index == gpu))
            return &f->items[i];
    }
    return NULL;
}

/* x, failing the test when it is NULL (the compiler sees it cannot be after this). */
#define MUST(x) must_((x), #x)
static const void *must_(const void *x, const char *what)
{
    if (x == NULL) {
        fail_msg("%s is NULL", what);
        abort();
    }
    return x;
}

static const struct skip *find_skip(const struct findings *f, const char *id, const char *reason)
{
    for (size_t i = 0; i < f->n_skips; i++) {
        if (strcmp(f->skips[i].rule->id, id) == 0 && strstr(f->skips[i].reason, reason))
            return &f->skips[i];
    }
    return NULL;
}

static bool fix_has(const struct finding *x, const char *text)
{
    for (size_t i = 0; i < x->n_fix; i++) {
        if (strstr(x->fix[i], text))
            return true;
    }
    return false;
}

static struct gpu *gpu_of(struct snapshot *s, uint32_t index)
{
    for (size_t i = 0; i < s->n_gpus; i++) {
        if (s->gpus[i].index == index)
            return &s->gpus[i];
    }
    fail_msg("no GPU %u", index);
    abort();
}

/* GPU 4 of thermal-slowdown is cool and has no slowdown reason: its temperatures decide. */
static void thermal(struct findings *f, uint32_t temp, uint32_t slowdown, uint32_t shutdown)
{
    struct snapshot *s = load("thermal-slowdown");
    struct gpu *g = gpu_of(s, 4);

    g->temp_c = temp;
    g->temp_slowdown_c = slowdown;
    g->temp_shutdown_c = shutdown;
    run(s, f);
    snapshot_free(s);
}

static void test_temperatures(void **state)
{
    struct findings f;
    const struct finding *x;

    (void)state;
    /* Past the slowdown point: its own, critical statement, not "-6 °C from" it. */
    thermal(&f, 95, 89, 100);
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "GPU 4 at 95 °C, 6 °C past its slowdown temperature (89 °C)");
    findings_free(&f);

    thermal(&f, 92, 89, 92);
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "GPU 4 at 92 °C, at or past its shutdown temperature (92 °C)");
    findings_free(&f);

    thermal(&f, 89, 89, 92);
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "GPU 4 at its slowdown temperature (89 °C)");
    findings_free(&f);

    /* Close below it: a warning, with the distance. */
    thermal(&f, 86, 89, 92);
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_string_equal(x->title, "GPU 4 at 86 °C, 3 °C from its slowdown temperature");
    findings_free(&f);

    /* Values no GPU reads are not readings: nothing wraps into a finding, and it is said. */
    thermal(&f, 2147483648u, 89, 92);
    assert_null(find(&f, "clock.thermal-slowdown", 4));
    assert_non_null(
        find_skip(&f, "clock.thermal-slowdown", "temp_c 2147483648 °C is not a plausible"));
    findings_free(&f);
    thermal(&f, 60, 4294967295u, 4294967295u);
    assert_null(find(&f, "clock.thermal-slowdown", 4));
    assert_non_null(find_skip(&f, "clock.thermal-slowdown",
                              "temp_slowdown_c 4294967295 °C is not a plausible"));
    findings_free(&f);
    thermal(&f, 4294967295u, 89, 92);
    assert_null(find(&f, "clock.thermal-slowdown", 4));
    findings_free(&f);
}

/* The power cap the thermal finding suggests: below what the GPU draws, never below its minimum,
 * none when the minimum is not below the draw; 85 % of the limit when the draw is unknown. */
static void thermal_cap(struct findings *f, bool draw_known, uint32_t draw_w, uint32_t min_w)
{
    struct snapshot *s = load("thermal-slowdown");
    struct gpu *g = gpu_of(s, 4);

    g->temp_c = 95;
    g->temp_slowdown_c = 89;
    g->temp_shutdown_c = 100;
    g->power_limit_mw = 700000;
    g->power_min_limit_mw = min_w * 1000;
    gpu_set_rc(g, GPU_S_POWER_LIMIT, 0);
    gpu_set_rc(g, GPU_S_POWER_MIN_LIMIT, 0);
    gpu_set_rc(g, GPU_S_POWER, draw_known ? 0 : NVML_ERROR_NOT_SUPPORTED);
    g->power_mw = draw_w * 1000;
    run(s, f);
    snapshot_free(s);
}

static void test_thermal_power_cap(void **state)
{
    const bool known = true;
    struct findings f;
    const struct finding *x;

    (void)state;
    thermal_cap(&f, known, 518, 200); /* 85 % of 700 W is 595 W: above the 518 W it draws */
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_true(fix_has(x, "sudo nvidia-smi -i 4 -pl 466   #"));
    findings_free(&f);
    thermal_cap(&f, known, 690, 200); /* 90 % of 690 W is above 85 % of the limit */
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_true(fix_has(x, "sudo nvidia-smi -i 4 -pl 595   #"));
    findings_free(&f);
    thermal_cap(&f, known, 210, 200); /* 189 W is below the minimum: the minimum */
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_true(fix_has(x, "sudo nvidia-smi -i 4 -pl 200   #"));
    findings_free(&f);
    thermal_cap(&f, known, 150, 200); /* no allowed cap is below the draw: none suggested */
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_false(fix_has(x, " -pl "));
    findings_free(&f);
    thermal_cap(&f, false, 0, 200); /* the draw unknown: 85 % of the limit */
    x = MUST(find(&f, "clock.thermal-slowdown", 4));
    assert_true(fix_has(x, "sudo nvidia-smi -i 4 -pl 595   #"));
    findings_free(&f);
}

/* cudnn-mismatch with the framework's recorded cuDNN and the one its process maps replaced. */
static const struct finding *cudnn(struct findings *f, const char *want, const char *loaded)
{
    struct snapshot *s = load("cudnn-mismatch");
    struct proc *p = (struct proc *)MUST(proc_table_find(&s->procs, 4500));

    free(s->stack.frameworks[0].cudnn_version);
    s->stack.frameworks[0].cudnn_version = xstrdup(want);
    for (size_t k = 0; k < p->n_libs; k++) {
        if (strcmp(p->libs[k].kind, "cudnn") == 0) {
            free(p->libs[k].version);
            p->libs[k].version = xstrdup(loaded);
        }
    }
    run(s, f);
    snapshot_free(s);
    return find(f, "stack.cudnn", -1);
}

static void test_cudnn_versions(void **state)
{
    struct findings f;
    const struct finding *x;

    (void)state;
    x = MUST(cudnn(&f, "8", "9.1.0")); /* another major */
    assert_non_null(strstr(x->evidence[0], "another major version"));
    findings_free(&f);
    /* Before 8 the minor counts: PyTorch refused 7.1.2 for its 7.3.1 build. */
    x = MUST(cudnn(&f, "7.3.1", "7.1.2"));
    assert_non_null(strstr(x->evidence[0], "before cuDNN 8 the minor version must match"));
    findings_free(&f);
    assert_non_null(cudnn(&f, "7.1.2", "7.3.1"));
    findings_free(&f);
    assert_null(cudnn(&f, "7.3.1", "7.3.0")); /* patch releases are compatible */
    findings_free(&f);
    /* From 8 on, a release runs builds for the same or an earlier minor. */
    assert_null(cudnn(&f, "8.9.2", "8.9.7"));
    findings_free(&f);
    assert_null(cudnn(&f, "9.1.0", "9.5.1"));
    findings_free(&f);
    x = MUST(cudnn(&f, "8.9.7", "8.2.1"));
    assert_non_null(strstr(x->evidence[0], "not a later one"));
    findings_free(&f);
    /* A record with the major only (TensorFlow) is compared by major only. */
    assert_null(cudnn(&f, "8", "8.2.1"));
    findings_free(&f);
}

static void test_cudnn_unknown_is_not_absent(void **state)
{
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("cudnn-missing");
    run(&s[0], &f);
    assert_non_null(find(&f, "stack.cudnn", -1)); /* every place looked at, none found */
    findings_free(&f);

    /* The system's cuDNN was not collected: nothing says there is none. */
    s->collectors[COLLECTOR_STACK].state = CS_NOT_RUN;
    run(s, &f);
    assert_null(find(&f, "stack.cudnn", -1));
    assert_non_null(find_skip(&f, "stack.cudnn", "system cuDNN not collected (stack collector"));
    findings_free(&f);
    s->collectors[COLLECTOR_STACK].state = CS_TIMEOUT;
    run(s, &f);
    assert_null(find(&f, "stack.cudnn", -1));
    findings_free(&f);

    /* Nor when the process's maps were not read. */
    s->collectors[COLLECTOR_STACK].state = CS_OK;
    ((struct proc *)MUST(proc_table_find(&s->procs, 4600)))->valid &= ~(UINT64_C(1) << PROC_S_MAPS);
    run(s, &f);
    assert_null(find(&f, "stack.cudnn", -1));
    assert_non_null(find_skip(&f, "stack.cudnn", "pid 4600 maps unknown"));
    findings_free(&f);
    snapshot_free(s);
}

/* A snapshot without the driver's version string: NVML did not give it, no module was read. */
static void forget_driver_version(struct snapshot *s)
{
    free(s->nvml.driver_version);
    s->nvml.driver_version = NULL;
    s->nvml.driver_version_rc = 3; /* NOT_SUPPORTED */
    free(s->driver.module_version);
    s->driver.module_version = NULL;
}

static void test_cuda_version_of_the_driver_is_enough(void **state)
{
    struct snapshot *s;
    struct findings f;
    const struct finding *x;

    (void)state;
    /* torch for CUDA 12.4 on a driver that supports CUDA 11.4. */
    s = load("cuda-too-new");
    forget_driver_version(s);
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-too-new", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_non_null(strstr(x->title, "needs CUDA 12.4; the driver supports CUDA 11.4"));
    assert_non_null(strstr(x->evidence[1], "the driver supports CUDA 11.4"));
    assert_int_equal(rules_exit_status(s, &f), 2);
    findings_free(&f);
    /* Knowing neither, the rule says it could not check. */
    s->nvml.cuda_driver_version_rc = 3;
    run(s, &f);
    assert_null(find(&f, "stack.cuda-too-new", -1));
    assert_non_null(find_skip(&f, "stack.cuda-too-new", "driver version and the CUDA version"));
    findings_free(&f);
    snapshot_free(s);

    /* The same major, a newer minor: minor-version compatibility, information. */
    s = load("cuda-minor-compat");
    forget_driver_version(s);
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-too-new", -1));
    assert_int_equal(x->severity, SEV_INFO);
    assert_non_null(strstr(x->title, "runs on the driver only through minor-version"));
    findings_free(&f);
    snapshot_free(s);
}

/* The driver's version, as NVML and the kernel module both report it. */
static void set_driver_version(struct snapshot *s, const char *version)
{
    free(s->nvml.driver_version);
    s->nvml.driver_version = xstrdup(version);
    s->nvml.driver_version_rc = 0;
    free(s->driver.module_version);
    s->driver.module_version = xstrdup(version);
}

/* The 535 branch's process-list defects: the 32-byte records of 535.43.02 to 535.86.05, and
 * 535.98, which dropped the calls (incident 060); 535.104.05 fixed both. */
static void test_known_bad_driver_releases(void **state)
{
    static const struct {
        const char *version, *says; /* NULL: no finding */
    } cases[] = {
        { "530.41.03", NULL },
        { "535.43.02", "wrong process ids" },
        { "535.86.05", "wrong process ids" },
        { "535.98", "show no processes at all" },
        { "535.104.05", NULL },
        { "550.54.15", NULL },
    };
    struct snapshot *s = load("known-bad-driver");
    struct findings f;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct finding *x;

        set_driver_version(s, cases[i].version);
        run(s, &f);
        x = find(&f, "stack.known-bad-driver", -1);
        if (cases[i].says == NULL) {
            assert_null(x);
        } else {
            x = MUST(x);
            assert_int_equal(x->severity, SEV_WARNING);
            assert_non_null(strstr(x->title, cases[i].version));
            assert_non_null(strstr(x->title, cases[i].says));
            assert_true(fix_has(x, "535.104.05"));
        }
        findings_free(&f);
    }
    snapshot_free(s);
}

static void test_holder_in_another_namespace(void **state)
{
    struct snapshot *s = load("mem-other-namespace");
    struct findings f;
    const struct finding *x;

    (void)state;
    /* NVML gives no per-process memory: the pid /proc lacks is still reported. */
    for (size_t k = 0; k < s->gpus[0].n_procs; k++)
        s->gpus[0].procs[k].valid &= ~(1u << GPU_PROC_S_USED);
    run(s, &f);
    x = MUST(find(&f, "mem.unaccounted", 0));
    assert_non_null(strstr(x->title, "1 holder not visible here"));
    assert_true(x->n_evidence >= 2);
    assert_non_null(strstr(x->evidence[1], "NVML lists pid 912345 holding memory, but /proc"));
    assert_int_equal(x->n_evidence, 2); /* not known to run in a container: nothing said */
    findings_free(&f);

    /* gpudoctor inside a container: the pids NVML names are the host's, said as the reason */
    s->host.container = xstrdup("docker");
    s->host.valid |= UINT64_C(1) << HOST_S_CONTAINER;
    run(s, &f);
    x = MUST(find(&f, "mem.unaccounted", 0));
    assert_int_equal(x->n_evidence, 3);
    assert_non_null(strstr(x->evidence[2], "inside a container (docker): NVML names the host's"));
    findings_free(&f);
    snapshot_free(s);
}

/* NVML failing inside a container: the container's fault only where the host shows GPUs. */
static void test_container_without_gpus(void **state)
{
    struct snapshot *s = load("container-without-gpus");
    size_t bus_gpus = s->pcie.n_gpus; /* hidden below, given back before the snapshot goes */
    struct findings f;
    const struct finding *x;

    (void)state;
    run(s, &f);
    x = MUST(find(&f, "health.nvml-failed", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_non_null(strstr(x->title, "inside this container (docker)"));
    assert_true(fix_has(x, "docker run --gpus all"));
    assert_null(find(&f, "stack.no-driver", -1));
    findings_free(&f);

    /* the library missing, the module not read, but the bus shows the host's GPUs: still it */
    s->driver.valid = 0;
    run(s, &f);
    assert_non_null(find(&f, "health.nvml-failed", -1));
    findings_free(&f);

    /* ... and with the bus not read either, nothing shows the host has GPUs: no finding */
    s->pcie.valid &= ~(UINT64_C(1) << PCIE_I_GPUS);
    s->pcie.n_gpus = 0;
    run(s, &f);
    assert_null(find(&f, "health.nvml-failed", -1));
    findings_free(&f);

    /* DRIVER_NOT_LOADED (the library is there) says the container was meant for GPUs */
    s->nvml.load_error = 0;
    s->nvml.init_rc = NVML_ERROR_DRIVER_NOT_LOADED;
    run(s, &f);
    assert_non_null(find(&f, "health.nvml-failed", -1));
    assert_null(find(&f, "stack.no-driver", -1));
    findings_free(&f);

    /* the host's bus read, and no NVIDIA GPU on it: the same finding, information */
    s->pcie.valid |= UINT64_C(1) << PCIE_I_GPUS;
    run(s, &f);
    x = MUST(find(&f, "health.nvml-failed", -1));
    assert_int_equal(x->severity, SEV_INFO);
    assert_non_null(strstr(x->title, "shows no NVIDIA GPU"));
    findings_free(&f);
    s->pcie.valid &= ~(UINT64_C(1) << PCIE_I_GPUS);

    /* no module loaded, as sysfs (the host's) says: the host's driver first, explaining it */
    s->driver.valid = UINT64_C(1) << DRIVER_S_MODULE;
    s->driver.module_loaded = false;
    run(s, &f);
    x = MUST(find(&f, "stack.no-driver", -1));
    assert_true(x->n_evidence >= 2);
    assert_non_null(strstr(x->evidence[1], "inside a container (docker)"));
    x = MUST(find(&f, "health.nvml-failed", -1));
    assert_true(x->n_evidence >= 3);
    assert_non_null(strstr(x->evidence[2], "no NVIDIA kernel module is loaded"));
    assert_true(strcmp(f.items[0].rule->id, "stack.no-driver") == 0); /* the cause comes first */
    findings_free(&f);

    /* on a host (no container seen) whose module is loaded, the library missing: not no-driver */
    s->host.valid &= ~(UINT64_C(1) << HOST_S_CONTAINER);
    s->driver.module_loaded = true;
    s->nvml.load_error = 12;
    s->nvml.init_rc = -1;
    run(s, &f);
    x = MUST(find(&f, "health.nvml-failed", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "NVML cannot reach the loaded NVIDIA driver: its library is "
                                  "missing");
    assert_null(find(&f, "stack.no-driver", -1));
    findings_free(&f);
    s->pcie.n_gpus = bus_gpus;
    snapshot_free(s);
}

static void test_zombie_with_partial_stat(void **state)
{
    struct snapshot *s = load("zombie-holder");
    struct proc *p = (struct proc *)MUST(proc_table_find(&s->procs, 5120));
    struct findings f;

    (void)state;
    /* What the reader keeps of a record without cpu_time_ms and threads. */
    p->valid &= ~(UINT64_C(1) << PROC_S_STAT);
    p->valid |= PROC_STAT_FIELDS & ~(PROC_BIT(PROC_S_CPU_TIME) | PROC_BIT(PROC_S_THREADS));
    run(s, &f);
    assert_non_null(find(&f, "proc.zombie-holder", 0));
    findings_free(&f);
    snapshot_free(s);
}

static void test_kill_names_real_pids(void **state)
{
    struct snapshot *s;
    struct findings f;
    const struct finding *x;

    (void)state;
    /* mem.full-idle names the holder it means. */
    s = load("mem-full-idle");
    run(s, &f);
    x = MUST(find(&f, "mem.full-idle", 0));
    assert_true(fix_has(x, "kill 7310   # if it is no longer needed: ask dave first"));
    assert_false(fix_has(x, "<pid>"));
    findings_free(&f);
    snapshot_free(s);

    /* A pid no process can have (as live NVML data could hold) is never put into a command. */
    s = load("stopped-holder");
    for (size_t i = 0; i < s->n_gpus; i++)
        for (size_t k = 0; k < s->gpus[i].n_procs; k++)
            if (s->gpus[i].procs[k].pid == 4121)
                s->gpus[i].procs[k].pid = 0;
    ((struct proc *)MUST(proc_table_find(&s->procs, 4121)))->pid = 0;
    run(s, &f);
    x = MUST(find(&f, "proc.stopped-holder", 3));
    for (size_t i = 0; i < x->n_fix; i++) {
        if (strncmp(x->fix[i], "kill", 4) == 0 || strncmp(x->fix[i], "ps ", 3) == 0)
            fail_msg("a command names pid 0: %s", x->fix[i]);
    }
    findings_free(&f);
    snapshot_free(s);
}

/* What the audit of every rule for "unknown read as absent" changed, one case each. */
static void test_unknown_is_not_absent(void **state)
{
    struct snapshot *s;
    struct findings f;
    const struct finding *x;

    (void)state;
    /* GPUs whose process list NVML could not give are not "idle, no process". */
    s = load("pileup-gpu0");
    for (uint32_t i = 1; i < s->n_gpus; i++)
        gpu_set_rc(gpu_of(s, i), GPU_S_PROCESSES, 3);
    run(s, &f);
    assert_null(find(&f, "proc.pileup", 0));
    findings_free(&f);
    snapshot_free(s);

    /* CUDA_VISIBLE_DEVICES=3 names a missing GPU only when NVML listed them all. */
    s = load("cuda-visible-devices");
    run(s, &f);
    assert_non_null(find(&f, "proc.cuda-visible-devices", -1));
    findings_free(&f);
    s->nvml.device_count = 4; /* two GPUs NVML counted but could not list */
    run(s, &f);
    for (size_t i = 0; i < f.n; i++)
        assert_false(strcmp(f.items[i].rule->id, "proc.cuda-visible-devices") == 0 &&
                     f.items[i].subject.pid == 1300);
    assert_non_null(find_skip(&f, "proc.cuda-visible-devices", "not all known"));
    findings_free(&f);
    snapshot_free(s);

    /* Init as parent but no cgroup: a service or a container cannot be ruled out. */
    s = load("orphan-holder");
    ((struct proc *)MUST(proc_table_find(&s->procs, 9301)))->valid &=
        ~(UINT64_C(1) << PROC_S_CGROUP);
    run(s, &f);
    for (size_t i = 0; i < f.n; i++)
        assert_false(strcmp(f.items[i].rule->id, "proc.orphan-holder") == 0 &&
                     f.items[i].subject.pid == 9301);
    assert_non_null(find_skip(&f, "proc.orphan-holder", "pid 9301 has init as its parent"));
    findings_free(&f);
    snapshot_free(s);

    /* An unknown count is not shown as 0. */
    s = load("ecc-uncorrectable");
    gpu_set_rc(gpu_of(s, 2), GPU_S_ECC_VOL_CORR, 3);
    run(s, &f);
    x = MUST(find(&f, "health.ecc-uncorrectable", 2));
    for (size_t i = 0; i < x->n_evidence; i++)
        assert_null(strstr(x->evidence[i], "corrected: 0"));
    findings_free(&f);
    snapshot_free(s);

    /* An unknown process list is not "no process". */
    s = load("mem-full-idle");
    gpu_set_rc(gpu_of(s, 0), GPU_S_PROCESSES, 3);
    for (size_t i = 0; i < s->procs.n_procs; i++)
        s->procs.procs[i].n_gpus = 0;
    run(s, &f);
    x = MUST(find(&f, "mem.full-idle", 0));
    for (size_t i = 0; i < x->n_evidence; i++)
        assert_null(strstr(x->evidence[i], "no process is listed"));
    findings_free(&f);
    snapshot_free(s);
}

/* The graphics process of GPU 0 with this pid. */
static struct gpu_proc *gproc_of(struct snapshot *s, uint32_t pid)
{
    struct gpu *g = gpu_of(s, 0);

    for (size_t i = 0; i < g->n_procs; i++) {
        if (g->procs[i].pid == pid)
            return &g->procs[i];
    }
    fail_msg("no pid %u on GPU 0", pid);
    abort();
}

/* Its memory unknown to NVML and to the process table alike. */
static void forget_memory(struct snapshot *s, uint32_t pid)
{
    gproc_of(s, pid)->valid &= ~(UINT64_C(1) << GPU_PROC_S_USED);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        struct proc *p = &s->procs.procs[i];

        for (size_t k = 0; p->pid == (int32_t)pid && k < p->n_gpus; k++)
            p->gpus[k].valid &= ~(UINT64_C(1) << PROC_GPU_S_USED);
    }
}

static void run_with(const struct snapshot *s, struct findings *f, const char *assignment)
{
    struct config cfg;
    char *cause = NULL;

    config_init(&cfg);
    if (config_set(&cfg, assignment, &cause) != 0)
        fail_msg("%s", cause);
    memset(f, 0, sizeof(*f));
    rules_run(s, NULL, &cfg.rules, f);
    config_free(&cfg);
}

/*
 * Graphics beside compute is judged by what it takes: a desktop of a few hundred MiB is
 * information, the same desktop past a threshold a warning; memory NVML does not report can
 * prove nothing small, while the memory it does report can prove a large take.
 */
static void test_graphics_by_what_it_takes(void **state)
{
    struct findings f;
    const struct finding *x;
    struct snapshot *s;

    (void)state;
    /* 560 MiB and SM 6 % on a 24 GiB GPU: information. */
    s = load("healthy-desktop-training");
    run(s, &f);
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_INFO);
    findings_free(&f);

    /* The same desktop is a warning once it takes the SM share set... */
    run_with(s, &f, "graphics_sm_pct=6");
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_non_null(strstr(x->title, "SM 6 %"));
    findings_free(&f);
    /* ... or the memory share and floor set, both. */
    run_with(s, &f, "graphics_mem_pct=2");
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_INFO); /* 560 MiB is below the 1024 MiB floor */
    findings_free(&f);
    run_with(s, &f, "graphics_mem_min_mib=500");
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_INFO); /* 2.3 % is below the 10 % share */
    findings_free(&f);

    /* Xorg's memory not reported: the desktop cannot be called small, and it is said. */
    forget_memory(s, 1500);
    run(s, &f);
    assert_null(find(&f, "proc.graphics-on-compute", 0));
    assert_non_null(find_skip(&f, "proc.graphics-on-compute", "graphics pid 1500 not reported"));
    findings_free(&f);
    snapshot_free(s);

    /* Without SM samples its memory still shows it is a desktop's, and the fix says how to see
       its SM share; the title claims nothing about it. */
    s = load("healthy-desktop-training");
    for (size_t i = 0; i < gpu_of(s, 0)->n_procs; i++)
        gpu_of(s, 0)->procs[i].valid &= ~(UINT64_C(1) << GPU_PROC_S_UTIL);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        for (size_t k = 0; k < s->procs.procs[i].n_gpus; k++)
            s->procs.procs[i].gpus[k].valid &= ~(UINT64_C(1) << PROC_GPU_S_UTIL);
    }
    run(s, &f);
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_INFO);
    assert_null(strstr(x->title, "SM"));
    assert_true(fix_has(x, "nvidia-smi pmon -i 0 -c 1"));
    findings_free(&f);
    snapshot_free(s);

    /* Blender's 6.5 GiB alone proves a large take while the desktop's memory is unknown. */
    s = load("graphics-on-compute");
    forget_memory(s, 1500);
    forget_memory(s, 1820);
    run(s, &f);
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_non_null(strstr(x->title, "blender"));
    assert_true(fix_has(x, "nvidia-smi pmon -i 0 -c 1"));
    findings_free(&f);
    /* Without the GPU's memory size the share is unknown: not judged, and said. */
    gpu_set_rc(gpu_of(s, 0), GPU_S_MEM_TOTAL, 3);
    run(s, &f);
    assert_null(find(&f, "proc.graphics-on-compute", 0));
    assert_non_null(find_skip(&f, "proc.graphics-on-compute", "mem_total_bytes"));
    findings_free(&f);
    snapshot_free(s);

    /* The compositor itself holding the most gets the fix that releases it. */
    s = load("graphics-on-compute-compositor");
    run(s, &f);
    x = MUST(find(&f, "proc.graphics-on-compute", 0));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(fix_has(x, "compositor itself holds the most"));
    findings_free(&f);
    snapshot_free(s);
}

/* The error the user saw, as check --error records it. */
static void give_error(struct snapshot *s, const char *text)
{
    struct reported_error *e;

    s->reported.errors =
        xreallocarray(s->reported.errors, s->reported.n_errors + 1, sizeof(*s->reported.errors));
    e = &s->reported.errors[s->reported.n_errors++];
    memset(e, 0, sizeof(*e));
    e->text = xstrdup(text);
    e->error = xstrdup(REPORTED_UNRECOGNISED);
}

static bool evidence_has(const struct finding *x, const char *text)
{
    for (size_t i = 0; i < x->n_evidence; i++) {
        if (strstr(x->evidence[i], text))
            return true;
    }
    return false;
}

/*
 * An exclusive GPU with no holder in sight is information enough to say nothing, until the user's
 * program was refused a GPU: then the refusal is the process seen failing, and the compute mode
 * is the cause of the reported error.
 */
static void test_refused_without_holder(void **state)
{
    const struct finding *x, *r;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("compute-mode");
    gpu_of(s, 1)->compute_mode = NVML_COMPUTEMODE_EXCLUSIVE_PROCESS; /* no process, no memory */
    run(s, &f);
    assert_null(find(&f, "proc.compute-mode", 1));
    findings_free(&f);

    give_error(s, "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable");
    run(s, &f);
    x = MUST(find(&f, "proc.compute-mode", 1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_string_equal(x->title, "GPU 1 is exclusive_process and CUDA refused the program a GPU: "
                                  "one process at a time may use it");
    assert_true(evidence_has(x, "(cudaErrorDevicesUnavailable)"));
    assert_true(fix_has(x, "sudo nvidia-smi -i 1 -c DEFAULT"));
    r = MUST(find(&f, "reported.devices-unavailable", -1));
    assert_int_not_equal(r->cause, 0);
    assert_string_equal(f.items[r->cause - 1].rule->id, "proc.compute-mode");
    findings_free(&f);
    snapshot_free(s);

    /* exclusive_thread refuses the program's own other thread: 216, as glog's CHECK prints it */
    s = load("compute-mode");
    gpu_of(s, 1)->compute_mode = NVML_COMPUTEMODE_EXCLUSIVE_THREAD;
    give_error(s, "Check failed: CUDA_SUCCESS == dynload::cuCtxSetCurrent(context) (0 vs. 216)");
    run(s, &f);
    x = MUST(find(&f, "proc.compute-mode", 1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_string_equal(x->title, "GPU 1 is exclusive_thread and CUDA refused the program a GPU: "
                                  "one thread at a time may use it");
    assert_true(evidence_has(x, "another thread of the same program"));
    r = MUST(find(&f, "reported.devices-unavailable", -1));
    assert_non_null(strstr(r->title, "\"already in use\" by another thread"));
    findings_free(&f);
    snapshot_free(s);

    /* an error that is not a refusal changes nothing */
    s = load("compute-mode");
    gpu_of(s, 1)->compute_mode = NVML_COMPUTEMODE_EXCLUSIVE_PROCESS;
    give_error(s, "CUDA error: out of memory");
    run(s, &f);
    assert_null(find(&f, "proc.compute-mode", 1));
    findings_free(&f);
    snapshot_free(s);
}

/* An OOM victim is the user's job when the error they give names its pid, whatever its name. */
static void test_oom_victim_named_by_pid(void **state)
{
    struct driver_info *d;
    const struct finding *x;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("oom-kill");
    d = &s->driver;
    for (size_t i = 0; i < d->n_events; i++) {
        if (d->events[i].kind == KLOG_OOM_KILL && d->events[i].name &&
            strcmp(d->events[i].name, "python") == 0) {
            free(d->events[i].name);
            d->events[i].name = xstrdup("onmt_train");
        }
    }
    run(s, &f);
    assert_null(find(&f, "health.oom-kill", -1));
    findings_free(&f);

    give_error(s, "RuntimeError: DataLoader worker (pid 53120) is killed by signal: Killed.");
    run(s, &f);
    assert_null(find(&f, "health.oom-kill", -1)); /* another pid */
    findings_free(&f);

    give_error(s, "RuntimeError: DataLoader worker (pid 5312) is killed by signal: Killed.");
    run(s, &f);
    x = MUST(find(&f, "health.oom-kill", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(evidence_has(x, "the error given names pid 5312: the killed onmt_train was the "
                                "job's"));
    findings_free(&f);
    snapshot_free(s);
}

/* Persistence mode off is information, and the cause when a tool timed out waiting for the driver.
 */
static void test_persistence_off_and_a_timeout(void **state)
{
    static const char *const texts[] = {
        "nvidia-container-cli: initialization error: driver error: timed out",
        "stderr: Auto-detected mode as 'legacy' nvidia-container-cli: initialization error: "
        "driver rpc error: timed out: unknown.",
    };
    const struct finding *x;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("persistence-off");
    run(s, &f);
    x = MUST(find(&f, "clock.persistence-off", -1));
    assert_int_equal(x->severity, SEV_INFO);
    findings_free(&f);
    snapshot_free(s);
    for (size_t i = 0; i < 2; i++) {
        s = load("persistence-off");
        give_error(s, texts[i]);
        run(s, &f);
        x = MUST(find(&f, "clock.persistence-off", -1));
        assert_int_equal(x->severity, SEV_WARNING);
        assert_non_null(strstr(x->title, "the error given timed out waiting for it"));
        assert_string_equal(f.items[0].rule->id, "clock.persistence-off");
        findings_free(&f);
        snapshot_free(s);
    }
}

/* A GPU the driver failed to start, seen only in the kernel log: missing unless NVML lists it. */
static void test_init_failure_without_the_bus(void **state)
{
    const struct finding *x;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("gpu-missing-rminit");
    run(s, &f);
    x = MUST(find(&f, "health.gpu-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The driver failed to start the GPU of minor number 7 "
                                  "(RmInitAdapter): NVML counts 7 GPUs without it");
    assert_true(evidence_has(x, "none of the GPUs NVML lists is that device"));
    assert_true(evidence_has(x, "2 more such lines"));
    findings_free(&f);
    /* a later try started it: NVML lists a GPU of that minor number */
    gpu_of(s, 6)->minor_number = 7;
    run(s, &f);
    assert_null(find(&f, "health.gpu-missing", -1));
    findings_free(&f);
    /* NVML's minor numbers unknown: still said, with what could not be compared */
    gpu_set_rc(gpu_of(s, 6), GPU_S_MINOR, NVML_ERROR_NOT_SUPPORTED);
    run(s, &f);
    x = MUST(find(&f, "health.gpu-missing", -1));
    assert_true(evidence_has(x, "whether a later try started it could not be compared"));
    findings_free(&f);
    snapshot_free(s);
}

/* A container whose device cgroup no longer allows /dev/nvidiactl: confirmed by devices.list,
 * "most likely" without it, information when the cgroup still allows it. */
static void test_container_lost_devices(void **state)
{
    const struct finding *x, *nf;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("container-lost-devices");
    run(s, &f);
    x = MUST(find(&f, "host.container-lost-devices", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "Inside this container (docker) the device cgroup no longer lets "
                                  "NVML open the GPUs: the container has lost access to them");
    assert_true(evidence_has(x, "allows no reading and writing of /dev/nvidiactl (195:255)"));
    nf = MUST(find(&f, "health.nvml-failed", -1));
    assert_int_not_equal(nf->cause, 0);
    assert_ptr_equal(&f.items[nf->cause - 1], x);
    findings_free(&f);
    /* cgroup v2: the rules cannot be read, the finding says it is not confirmed */
    s->driver.valid &= ~(UINT64_C(1) << DRIVER_S_CTL_CGROUP);
    run(s, &f);
    x = MUST(find(&f, "host.container-lost-devices", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_non_null(strstr(x->title, "has most likely lost access"));
    assert_true(evidence_has(x, "the refusal is not confirmed here"));
    findings_free(&f);
    /* the cgroup still allows the GPUs: another cause, information only, nothing explained */
    s->driver.valid |= UINT64_C(1) << DRIVER_S_CTL_CGROUP;
    free(s->driver.ctl_cgroup);
    s->driver.ctl_cgroup = xstrdup("allowed");
    run(s, &f);
    x = MUST(find(&f, "host.container-lost-devices", -1));
    assert_int_equal(x->severity, SEV_INFO);
    nf = MUST(find(&f, "health.nvml-failed", -1));
    assert_int_equal(nf->cause, 0);
    findings_free(&f);
    /* NVML works: no finding unless the error is given */
    s->nvml.init_rc = 0;
    s->nvml.device_count_rc = 0;
    s->nvml.device_count = 1;
    run(s, &f);
    assert_null(find(&f, "host.container-lost-devices", -1));
    findings_free(&f);
    snapshot_free(s);
}

/* A framework's CUDA against the GPUs it uses: too old is critical with PyTorch's way out; a
 * TensorFlow build gets no PyTorch commands, and is not judged against a newer GPU. */
static void test_arch_unsupported_framework(void **state)
{
    const struct finding *x;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("arch-too-old");
    run(s, &f);
    x = MUST(find(&f, "stack.arch-unsupported", 0));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_int_equal(x->subject.pid, 4400);
    assert_true(evidence_has(x, "no longer compiles for compute capability 7.0 (the last CUDA "
                                "that does is 12.x)"));
    assert_true(fix_has(x, "https://download.pytorch.org/whl/cu126"));
    findings_free(&f);
    /* the same build as TensorFlow's: its own advice, no pip install torch */
    free(s->stack.frameworks[0].name);
    s->stack.frameworks[0].name = xstrdup("tensorflow");
    run(s, &f);
    x = MUST(find(&f, "stack.arch-unsupported", 0));
    assert_false(fix_has(x, "torch"));
    assert_true(fix_has(x, "# install a build of tensorflow made with CUDA 12.x or older"));
    findings_free(&f);
    snapshot_free(s);

    /* a PyTorch for CUDA 12.4 on an RTX 5090: a warning; TensorFlow (which carries PTX): none */
    s = load("arch-too-new");
    run(s, &f);
    x = MUST(find(&f, "stack.arch-unsupported", 0));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(fix_has(x, "https://download.pytorch.org/whl/cu128"));
    findings_free(&f);
    free(s->stack.frameworks[0].name);
    s->stack.frameworks[0].name = xstrdup("tensorflow");
    run(s, &f);
    assert_null(find(&f, "stack.arch-unsupported", -1));
    assert_null(find(&f, "stack.arch-unsupported", 0));
    findings_free(&f);
    snapshot_free(s);
}

/* The error the snapshot was given: text, as the catalogue names a missing CUDA library. */
static void set_lib_error(struct snapshot *s, const char *text)
{
    if (s->reported.n_errors == 0) {
        free(s->reported.errors);
        s->reported.errors = xcalloc(1, sizeof(*s->reported.errors));
        s->reported.n_errors = 1;
        s->reported.errors[0].error = xstrdup("CUDA library not found");
    }
    free(s->reported.errors[0].text);
    s->reported.errors[0].text = xstrdup(text);
}

/* The one toolkit of the snapshot becomes CUDA version at path. */
static void set_toolkit(struct snapshot *s, const char *version, const char *path)
{
    assert_int_equal(s->stack.n_toolkits, 1);
    free(s->stack.toolkits[0].version);
    free(s->stack.toolkits[0].path);
    s->stack.toolkits[0].version = xstrdup(version);
    s->stack.toolkits[0].path = path ? xstrdup(path) : NULL;
}

/* A CUDA library the error says could not load, against the toolkits and the linker's libraries:
 * which releases ship its soname is data/cuda-sonames.tsv's, not the soname's version. */
/* Sets GPU i's IOMMU domain in the pcie section (NULL: not read). */
static void set_domain(struct snapshot *s, size_t i, const char *word)
{
    struct pcie_device *d = &s->pcie.gpus[i];

    free(d->iommu_domain);
    d->iommu_domain = word ? xstrdup(word) : NULL;
    if (word)
        d->valid |= UINT64_C(1) << PCIE_S_IOMMU;
    else
        d->valid &= ~(UINT64_C(1) << PCIE_S_IOMMU);
}

/*
 * pcie.iommu-p2p on iommu-translated-pcie (8 GPUs in DMA-FQ domains, P2P over PCIe within each
 * CPU, no RDMA port): what it counts, what it leaves out, what it says it could not read.
 */
static void test_iommu_domains(void **state)
{
    const struct finding *x;
    struct snapshot *s = load("iommu-translated-pcie");
    struct findings f;

    (void)state;
    run(s, &f);
    x = MUST(find(&f, "pcie.iommu-p2p", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_string_equal(x->title, "The IOMMU translates the DMA of GPUs 0-7");
    assert_true(evidence_has(x, "12 of 28 GPU pairs with a translated GPU use peer-to-peer "
                                "without NVLink"));
    assert_true(evidence_has(x, "16 of 28 GPU pairs with a translated GPU cannot use "
                                "peer-to-peer at all"));
    assert_true(fix_has(x, "NCCL_P2P_DISABLE=1"));
    assert_false(fix_has(x, "NCCL_NET_GDR_LEVEL"));
    assert_true(fix_has(x, "sudo update-grub"));
    assert_true(fix_has(x, "cat /sys/bus/pci/devices/0000:18:00.0/iommu_group/type"));
    findings_free(&f);

    /* GPUs 2-7 handed to virtual machines, 0-1 translated: one pair, over PCIe */
    for (size_t i = 2; i < 8; i++) {
        free(s->pcie.gpus[i].driver);
        s->pcie.gpus[i].driver = xstrdup("vfio-pci");
    }
    run(s, &f);
    x = MUST(find(&f, "pcie.iommu-p2p", -1));
    assert_string_equal(x->title, "The IOMMU translates the DMA of GPUs 0, 1");
    assert_true(evidence_has(x, "1 of 1 GPU pairs with a translated GPU use peer-to-peer"));
    findings_free(&f);

    /* ... and GPU 1 in passthrough: GPU 0's peer traffic with it is still translated */
    set_domain(s, 1, "identity");
    run(s, &f);
    x = MUST(find(&f, "pcie.iommu-p2p", -1));
    assert_string_equal(x->title, "The IOMMU translates the DMA of GPU 0");
    assert_int_equal(x->subject.gpu_index, 0);
    findings_free(&f);

    /* ... and GPU 1 handed to a VM too: a lone GPU, no RDMA port, nothing to say */
    free(s->pcie.gpus[1].driver);
    s->pcie.gpus[1].driver = xstrdup("vfio-pci");
    run(s, &f);
    assert_null(find(&f, "pcie.iommu-p2p", -1));
    findings_free(&f);

    /* GPU 1 back on the host with its domain not read, GPU 0 in passthrough: not checked */
    free(s->pcie.gpus[1].driver);
    s->pcie.gpus[1].driver = xstrdup("nvidia");
    set_domain(s, 0, "identity");
    set_domain(s, 1, NULL);
    run(s, &f);
    assert_null(find(&f, "pcie.iommu-p2p", -1));
    MUST(find_skip(&f, "pcie.iommu-p2p", "how the IOMMU treats the DMA of 1 of 2 GPUs"));
    findings_free(&f);

    /* ... unless /sys/class/iommu was read empty: no IOMMU translates anything, silence */
    s->pcie.iommu_present = false;
    s->pcie.valid |= UINT64_C(1) << PCIE_I_IOMMU;
    run(s, &f);
    assert_null(find(&f, "pcie.iommu-p2p", -1));
    assert_null(find_skip(&f, "pcie.iommu-p2p", "how the IOMMU treats"));
    findings_free(&f);

    /* a word the kernel does not write is not judged, and never printed as a domain */
    set_domain(s, 1, "bogus");
    run(s, &f);
    assert_null(find(&f, "pcie.iommu-p2p", -1));
    MUST(find_skip(&f, "pcie.iommu-p2p", "how the IOMMU treats the DMA of 1 of 2 GPUs"));
    findings_free(&f);

    /* GPU 0 alone on the host, translated, with an active RDMA port: GPUDirect RDMA crosses
     * it, a warning with the RDMA stop-gap, not the P2P one; its address unknown: "?" and no
     * cat line */
    free(s->pcie.gpus[1].driver);
    s->pcie.gpus[1].driver = xstrdup("vfio-pci");
    set_domain(s, 0, "DMA-FQ");
    assert_int_equal(s->ib.n_ports, 0);
    free(s->ib.ports);
    s->ib.ports = xcalloc(1, sizeof(*s->ib.ports));
    s->ib.n_ports = 1;
    s->ib.ports[0].device = xstrdup("mlx5_0");
    s->ib.ports[0].port = 1;
    s->ib.ports[0].pci_address = xstrdup("0000:1c:00.0");
    s->ib.ports[0].state = IB_STATE_ACTIVE;
    s->ib.ports[0].valid |= UINT64_C(1) << IB_S_STATE;
    free(s->pcie.gpus[0].address);
    s->pcie.gpus[0].address = NULL;
    run(s, &f);
    x = MUST(find(&f, "pcie.iommu-p2p", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(evidence_has(x, "GPU ?: IOMMU domain DMA-FQ"));
    assert_true(evidence_has(x, "active RDMA ports for GPUDirect RDMA: mlx5_0/1"));
    assert_true(fix_has(x, "NCCL_NET_GDR_LEVEL=LOC"));
    assert_false(fix_has(x, "NCCL_P2P_DISABLE"));
    assert_false(fix_has(x, "iommu_group/type"));
    findings_free(&f);

    /* the port down: no RDMA, a lone GPU, nothing */
    s->ib.ports[0].state = 1;
    run(s, &f);
    assert_null(find(&f, "pcie.iommu-p2p", -1));
    findings_free(&f);

    /* iommu=pt asked for, yet translated: the fix looks for what set the type */
    snapshot_free(s);
    s = load("iommu-translated-pcie");
    s->pcie.iommu_pt = true;
    run(s, &f);
    x = MUST(find(&f, "pcie.iommu-p2p", -1));
    assert_true(evidence_has(x, "iommu=pt is on the kernel command line, yet"));
    assert_false(fix_has(x, "update-grub"));
    findings_free(&f);
    snapshot_free(s);
}

/* host.psu-fault: where a GPU is braked and no BMC log was imported, it says what it lacks. */
static void test_psu_fault_unknown(void **state)
{
    struct snapshot *s = load("power-brake");
    struct findings f;

    (void)state;
    run(s, &f);
    assert_null(find(&f, "host.psu-fault", -1));
    MUST(find_skip(&f, "host.psu-fault",
                   "whether a power supply failed: the BMC's event log was "
                   "not imported"));
    findings_free(&f);
    snapshot_free(s);
    s = load("healthy-8gpu-busy"); /* nothing braked: nothing to say, not even a skip */
    run(s, &f);
    assert_null(find_skip(&f, "host.psu-fault", "whether a power supply failed"));
    findings_free(&f);
    snapshot_free(s);
}

/* host.psu-fault on power-brake-psu-fault (GPU 4 braked, PS2's AC lost 2 h before): what makes
 * the fault the brake's cause, and what does not. */
static void test_psu_fault_cause(void **state)
{
    const struct finding *x, *y;
    struct snapshot *s = load("power-brake-psu-fault");
    struct findings f;

    (void)state;
    run(s, &f);
    x = MUST(find(&f, "host.psu-fault", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_true(evidence_has(x, "GPU 4 has its clocks cut by the power brake"));
    assert_true(evidence_has(x, "(2h before the snapshot)"));
    assert_true(fix_has(x, "sudo ipmitool sdr type 'Power Unit'"));
    y = MUST(find(&f, "clock.hw-slowdown", 4));
    assert_true(y->cause > 0);
    findings_free(&f);

    /* logged before the last power-on: it may be gone, a warning that explains nothing */
    s->host.sel_psu_losses = 0;
    s->host.sel_psu_stale = 1;
    run(s, &f);
    x = MUST(find(&f, "host.psu-fault", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(evidence_has(x, "1 of them was logged before the server's last power-on in the "
                                "log and never cleared"));
    assert_false(evidence_has(x, "the supplies still deliver")); /* a loss, from before */
    y = MUST(find(&f, "clock.hw-slowdown", 4));
    assert_int_equal(y->cause, 0);
    findings_free(&f);

    /* events not followed are said as unknown; a full log says what it could not log */
    s->host.sel_psu_untracked = 1;
    s->host.sel_full = true;
    run(s, &f);
    x = MUST(find(&f, "host.psu-fault", -1));
    assert_true(evidence_has(x, "1 more fault event could not be followed"));
    assert_true(evidence_has(x, "the log is full, or logging disabled"));
    findings_free(&f);

    /* only a predicted failure, nothing else: the supplies still deliver */
    s->host.sel_psu_untracked = 0;
    s->host.sel_psu_stale = 0;
    s->host.sel_full = false;
    run(s, &f);
    x = MUST(find(&f, "host.psu-fault", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_true(evidence_has(x, "the supplies still deliver"));
    findings_free(&f);

    /* no fault, a full log, a braked GPU: not "no fault", but not checked */
    s->host.sel_psu_faults = 0;
    s->host.sel_full = true;
    run(s, &f);
    assert_null(find(&f, "host.psu-fault", -1));
    MUST(find_skip(&f, "host.psu-fault", "the BMC's event log is full"));
    findings_free(&f);
    snapshot_free(s);
}

static void test_cuda_lib_missing(void **state)
{
    const struct finding *x;
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("toolkit-older-cuda"); /* CUDA 9.2 at /usr/local/cuda-9.2 */
    assert_int_equal(s->reported.n_errors, 0);
    set_lib_error(s, "ImportError: libcudart.so.9.2: cannot open shared object file");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The program cannot load libcudart.so.9.2: CUDA 9.2.148, "
                                  "installed here, ships it, but the dynamic linker does not "
                                  "look where it is");
    assert_true(evidence_has(x, "libcudart.so.9.2 ships with CUDA 9.2 only: the program was "
                                "built with it"));
    assert_true(fix_has(x, "export LD_LIBRARY_PATH=/usr/local/cuda-9.2/lib64"));
    /* the linker's configuration gets the line by printf: an echo can read escapes in it */
    assert_true(fix_has(x, "printf '%s\\n' /usr/local/cuda-9.2/lib64 | sudo tee "
                           "/etc/ld.so.conf.d/gpudoctor-cuda.conf && sudo ldconfig"));
    findings_free(&f);
    /* a toolkit path that is not plain (an escape, a "..") never reaches root's linker
     * configuration nor LD_LIBRARY_PATH: a comment instead */
    set_toolkit(s, "9.2.148", "/tmp/x\\ninclude /tmp");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_false(fix_has(x, "sudo tee"));
    assert_false(fix_has(x, "export LD_LIBRARY_PATH"));
    assert_true(fix_has(x, "# the toolkit's path is not a plain absolute path"));
    findings_free(&f);
    set_toolkit(s, "9.2.148", "/usr/local/../../tmp/cuda");
    run(s, &f);
    assert_false(fix_has(MUST(find(&f, "stack.cuda-lib-missing", -1)), "sudo tee"));
    findings_free(&f);
    set_toolkit(s, "9.2.148", "/usr/local/cuda-9.2");
    /* the linker knows that very soname: the program ran elsewhere, a warning */
    assert_int_equal(s->stack.n_libs, 0); /* the array is there, empty */
    free(s->stack.libs);
    s->stack.libs = xcalloc(1, sizeof(*s->stack.libs));
    s->stack.n_libs = 1;
    s->stack.libs[0].kind = xstrdup("cudart");
    s->stack.libs[0].soname = xstrdup("libcudart.so.9.2");
    s->stack.libs[0].path = xstrdup("/usr/local/cuda-9.2/lib64/libcudart.so.9.2");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_WARNING);
    assert_string_equal(x->title, "The program could not load libcudart.so.9.2, which the dynamic "
                                  "linker here finds: the program ran with another view of the "
                                  "libraries");
    assert_false(fix_has(x, "export LD_LIBRARY_PATH"));
    findings_free(&f);
    /* a release that is not installed */
    set_lib_error(s, "ImportError: libcublas.so.10.0: cannot open shared object file");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The program cannot load libcublas.so.10.0, which ships with "
                                  "CUDA 10.0 only: that CUDA is not installed here");
    assert_true(fix_has(x, "# install CUDA 10.0's libraries beside the others"));
    findings_free(&f);

    /* the review's case: libcudart.so.11.0 is the runtime of every 11.x, and CUDA 11.8 is
     * installed (not on the linker's path): 11.8's lib64, not "install CUDA 11.0" */
    set_toolkit(s, "11.8.0", "/usr/local/cuda-11.8");
    assert_int_equal(s->stack.n_frameworks, 0);
    free(s->stack.frameworks);
    s->stack.frameworks = xcalloc(1, sizeof(*s->stack.frameworks));
    s->stack.n_frameworks = 1;
    s->stack.frameworks[0].name = xstrdup("tensorflow");
    s->stack.frameworks[0].version = xstrdup("2.12.0");
    s->stack.frameworks[0].cuda_version = xstrdup("11.8");
    set_lib_error(s, "Could not load dynamic library 'libcudart.so.11.0'; dlerror: "
                     "libcudart.so.11.0: cannot open shared object file");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The program cannot load libcudart.so.11.0: CUDA 11.8.0, "
                                  "installed here, ships it, but the dynamic linker does not "
                                  "look where it is");
    assert_true(evidence_has(x, "libcudart.so.11.0 ships with CUDA 11.0 to 11.8: the program was "
                                "built with one of them"));
    assert_true(evidence_has(x, "tensorflow 2.12.0 was built with CUDA 11.8"));
    assert_true(evidence_has(x, "CUDA toolkits here: CUDA 11.8.0 (/usr/local/cuda-11.8)"));
    assert_true(fix_has(x, "export LD_LIBRARY_PATH=/usr/local/cuda-11.8/lib64"));
    assert_true(fix_has(x, "printf '%s\\n' /usr/local/cuda-11.8/lib64 | sudo tee"));
    assert_false(fix_has(x, "# install"));
    assert_false(evidence_has(x, "belongs to"));
    findings_free(&f);
    /* the same with the toolkit's path unknown: the comment names 11.8, not the soname's 11.0 */
    set_toolkit(s, "11.8.0", NULL);
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_true(fix_has(x, "# add the lib64 directory of the installed CUDA 11.8.0 to "
                           "LD_LIBRARY_PATH"));
    findings_free(&f);

    /* cuFFT 10.x (libcufft.so.10) is CUDA 10.1 to 11.8's: CUDA 12.4 does not ship it */
    set_toolkit(s, "12.4.1", "/usr/local/cuda-12.4");
    free(s->stack.frameworks[0].cuda_version);
    s->stack.frameworks[0].cuda_version = xstrdup("12.4");
    set_lib_error(s, "ImportError: libcufft.so.10: cannot open shared object file: No such file "
                     "or directory");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The program cannot load libcufft.so.10, which ships with CUDA "
                                  "10.1 to 11.8: none of them is installed here");
    assert_true(evidence_has(x, "libcufft.so.10 ships with CUDA 10.1 to 11.8"));
    assert_false(evidence_has(x, "was built with CUDA 12.4")); /* not the program's CUDA */
    assert_true(fix_has(x, "# install the libraries of one CUDA release from 10.1 to 11.8 "
                           "beside the others"));
    assert_false(fix_has(x, "export LD_LIBRARY_PATH"));
    findings_free(&f);
    /* libcurand.so.10 is 10.1's to today's: CUDA 12.4 ships it although its version says 10 */
    set_lib_error(s, "ImportError: libcurand.so.10: cannot open shared object file");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_string_equal(x->title, "The program cannot load libcurand.so.10: CUDA 12.4.1, "
                                  "installed here, ships it, but the dynamic linker does not "
                                  "look where it is");
    assert_true(evidence_has(x, "libcurand.so.10 ships with CUDA 10.1 and every release since"));
    assert_true(fix_has(x, "export LD_LIBRARY_PATH=/usr/local/cuda-12.4/lib64"));
    findings_free(&f);
    /* a soname the table does not know: said to be unknown, no release guessed */
    set_lib_error(s, "ImportError: libcublas.so.99: cannot open shared object file");
    run(s, &f);
    x = MUST(find(&f, "stack.cuda-lib-missing", -1));
    assert_int_equal(x->severity, SEV_CRITICAL);
    assert_string_equal(x->title, "The program cannot load libcublas.so.99: which CUDA release "
                                  "ships it is not known here");
    assert_true(evidence_has(x, "libcublas.so.99 is not in gpudoctor's table of CUDA library "
                                "sonames"));
    assert_false(evidence_has(x, "ships with"));
    assert_false(evidence_has(x, "was built with"));
    assert_true(fix_has(x, "# look for libcublas.so.99 in the lib64 directories"));
    assert_false(fix_has(x, "# install the libraries"));
    assert_false(fix_has(x, "export LD_LIBRARY_PATH"));
    findings_free(&f);
    snapshot_free(s);
}

/*
 * Owners' names longer than the title's room, in Chinese: cut on a character, never inside one.
 * A cut inside one made text that is not UTF-8, which --json then lost without a word (jansson
 * refuses such a string, and the key was dropped).
 */
static void test_long_names_stay_utf8(void **state)
{
    const struct finding *x;
    struct snapshot *s;
    struct findings f;
    json_t *j;
    char name[200] = "a";

    (void)state;
    for (int i = 0; i < 60; i++)
        strcat(name, "\xe6\xb1\x89"); /* 汉 */
    s = load("shared-gpu");
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        if (s->procs.procs[i].user == NULL)
            continue;
        free(s->procs.procs[i].user);
        s->procs.procs[i].user = xasprintf("%zu%s", i, name);
    }
    run(s, &f);
    x = MUST(find(&f, "proc.shared-gpu", -1));
    assert_true(str_is_utf8(x->title));
    for (size_t i = 0; i < x->n_evidence; i++)
        assert_true(str_is_utf8(x->evidence[i]));
    j = render_finding_json(x);
    assert_non_null(json_object_get(j, "title"));
    assert_int_equal(json_array_size(json_object_get(j, "evidence")), x->n_evidence);
    json_decref(j);
    findings_free(&f);
    snapshot_free(s);
}

/* An interface name no command can carry is said once, and only for an Ethernet (RoCE) port. */
static void test_roce_name_said_once(void **state)
{
    const struct finding *x;
    struct snapshot *s;
    struct findings f;
    size_t said = 0;

    (void)state;
    s = load("ib-roce-down"); /* mlx5_4, RoCE, enp155s0f0np0 down */
    for (size_t i = 0; i < s->ib.n_ports; i++) {
        if (strcmp(s->ib.ports[i].netdev, "enp155s0f0np0") == 0) {
            free(s->ib.ports[i].netdev);
            s->ib.ports[i].netdev = xstrdup("-rf enp155s0f0np0");
        }
    }
    run(s, &f);
    x = MUST(find(&f, "ib.port-down", -1));
    for (size_t i = 0; i < x->n_fix; i++)
        said += strstr(x->fix[i], "the interface name \"-rf enp155s0f0np0\"") != NULL;
    assert_int_equal(said, 1);
    assert_false(fix_has(x, "ip link set"));
    assert_true(fix_has(x, "ibstat mlx5_4 1"));
    findings_free(&f);
    snapshot_free(s);
}

/*
 * NVML lists pid 7001, but the process with that number here has no NVIDIA device open: it is
 * not NVML's (a container's pid seen from the host's numbering, a reused pid). Its memory is
 * held by a process invisible from here, not by the local one, and nothing is said of that one.
 */
static void test_foreign_pid_is_invisible(void **state)
{
    struct snapshot *s;
    struct findings f;

    (void)state;
    s = load("idle-holder");
    run(s, &f);
    MUST(find(&f, "proc.idle-holder", 0)); /* as it is: 7001 holds GPU 0's memory, idle */
    assert_null(find(&f, "mem.unaccounted", 0));
    findings_free(&f);
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        struct proc *p = &s->procs.procs[i];

        if (p->pid != 7001)
            continue;
        p->holds_ctl = p->holds_uvm = false;
        for (size_t k = 0; k < p->n_gpus; k++)
            p->gpus[k].holds_device = false;
    }
    run(s, &f);
    assert_null(find(&f, "proc.idle-holder", 0));
    MUST(find(&f, "mem.unaccounted", 0));
    findings_free(&f);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_temperatures),
        cmocka_unit_test(test_thermal_power_cap),
        cmocka_unit_test(test_cudnn_versions),
        cmocka_unit_test(test_cudnn_unknown_is_not_absent),
        cmocka_unit_test(test_cuda_version_of_the_driver_is_enough),
        cmocka_unit_test(test_known_bad_driver_releases),
        cmocka_unit_test(test_holder_in_another_namespace),
        cmocka_unit_test(test_container_without_gpus),
        cmocka_unit_test(test_zombie_with_partial_stat),
        cmocka_unit_test(test_kill_names_real_pids),
        cmocka_unit_test(test_unknown_is_not_absent),
        cmocka_unit_test(test_graphics_by_what_it_takes),
        cmocka_unit_test(test_refused_without_holder),
        cmocka_unit_test(test_oom_victim_named_by_pid),
        cmocka_unit_test(test_persistence_off_and_a_timeout),
        cmocka_unit_test(test_init_failure_without_the_bus),
        cmocka_unit_test(test_container_lost_devices),
        cmocka_unit_test(test_arch_unsupported_framework),
        cmocka_unit_test(test_cuda_lib_missing),
        cmocka_unit_test(test_long_names_stay_utf8),
        cmocka_unit_test(test_roce_name_said_once),
        cmocka_unit_test(test_foreign_pid_is_invisible),
        cmocka_unit_test(test_iommu_domains),
        cmocka_unit_test(test_psu_fault_unknown),
        cmocka_unit_test(test_psu_fault_cause),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
