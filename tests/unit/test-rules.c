/*
 * The rule engine: the table is sound, findings are ranked, redundant ones yield to specific
 * ones, missing inputs become "not checked", thresholds and disabled rules take effect, history
 * drives trend rules, and the exit status follows the worst finding.
 */
#include "rules/config.h"
#include "rules/rules.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- helpers ---- */

static struct snapshot *load(const char *json)
{
    char *cause = NULL;
    struct snapshot *s = snapshot_from_json(json, strlen(json), "test", &cause);

    if (s == NULL)
        fail_msg("snapshot does not load: %s", cause);
    return s;
}

static void run(const struct snapshot *s, const struct config *cfg, struct findings *f)
{
    memset(f, 0, sizeof(*f));
    rules_run(s, NULL, &cfg->rules, f);
}

static const struct finding *find(const struct findings *f, const char *id, int32_t gpu)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0 &&
            (gpu < -1 || f->items[i].subject.gpu_index == gpu))
            return &f->items[i];
    }
    return NULL;
}

#define ANY_GPU (-2)

/* A GPU whose every field a rule reads is valid: healthy and busy unless the caller changes it. */
#define GPU_BASE(idx, util, used, extra)                                                           \
    "{\"index\": " #idx ", \"uuid\": \"GPU-0000000" #idx "-aaaa-bbbb-cccc-dddddddddddd\","         \
    "\"pci_bus_id\": \"00000000:1" #idx ":00.0\", \"minor_number\": " #idx ","                     \
    "\"mem_total_bytes\": 85899345920, \"mem_used_bytes\": " used ","                              \
    "\"util_gpu_pct\": " #util ", \"temp_c\": 60, \"temp_slowdown_c\": 89,"                        \
    "\"temp_shutdown_c\": 92, \"clocks_event_reasons\": \"0x0000000000000000\","                   \
    "\"power_mw\": 500000, \"power_default_limit_mw\": 700000,"                                    \
    "\"power_enforced_limit_mw\": 700000,"                                                         \
    "\"compute_mode\": \"default\", \"pcie_gen\": 5, \"pcie_gen_max\": 5, \"pcie_width\": 16,"     \
    "\"pcie_width_max\": 16, \"pcie_replay_count\": 0, \"ecc_mode\": true,"                        \
    "\"ecc_volatile_uncorrected\": 0, \"ecc_aggregate_uncorrected\": 0" extra "}"

/* GPU_BASE leaves these two out so a case can set them. */
#define GPU_USUAL ", \"power_limit_mw\": 700000, \"persistence_mode\": true"

/* The keys a process record must have (always-valid fields), as null. */
#define PROC_KEYS                                                                                  \
    "\"cuda_visible_devices\": null, \"container_runtime\": null, \"container_id\": null,"         \
    "\"pod_uid\": null, \"slurm_job_id\": null"

#define SNAP_HEAD                                                                                  \
    "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1764669600000, \"window_ms\": 0,"         \
    "\"nvml\": {\"attempted\": true, \"device_count\": 2, \"driver_version\": \"550.54.15\"},"

/* ---- the table ---- */

static bool id_ok(const char *id)
{
    const char *dot = strchr(id, '.');

    if (dot == NULL || dot == id || dot[1] == '\0' || strchr(dot + 1, '.'))
        return false;
    for (const char *p = id; *p; p++) {
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return false;
    }
    return true;
}

static void test_table_is_sound(void **state)
{
    static const char *const prefixes[] = { "health.", "stack.",  "mem.",    "proc.",    "perf.",
                                            "host.",   "clock.",  "pcie.",   "profile.", "bench.",
                                            "ib.",     "nvlink.", "fabric.", "reported." };
    bool used[TH__COUNT] = { false };

    (void)state;
    assert_true(n_rules >= 40);
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = rule_table[i];
        bool prefix = false;

        if (!id_ok(r->id))
            fail_msg("rule id '%s' is not lower-case dotted kebab", r->id);
        for (size_t k = 0; k < ARRAY_SIZE(prefixes); k++)
            prefix |= strncmp(r->id, prefixes[k], strlen(prefixes[k])) == 0;
        if (!prefix)
            fail_msg("rule id '%s' has no known prefix", r->id);
        for (size_t k = i + 1; k < n_rules; k++)
            if (strcmp(r->id, rule_table[k]->id) == 0)
                fail_msg("rule id '%s' twice", r->id);
        assert_ptr_equal(rule_find(r->id), r);
        assert_int_equal(rule_position(r), i);
        assert_non_null(r->check);
        /* Titles fit `explain --list` at 80 columns; the prose says something. */
        if (strlen(r->title) > 48)
            fail_msg("rule %s: title longer than 48 characters", r->id);
        if (strlen(r->explanation) < 150 || strlen(r->detection) < 40 || strlen(r->fix) < 40)
            fail_msg("rule %s: explanation, detection or fix too short", r->id);
        if (r->thresholds == NULL)
            fail_msg("rule %s: no thresholds list (NO_THRESHOLDS when it reads none)", r->id);
        for (size_t k = 0; r->thresholds[k] != TH__COUNT; k++) {
            const char *name = threshold_defs[r->thresholds[k]].name;

            used[r->thresholds[k]] = true;
            /* The detection text names every threshold the rule reads. */
            if (strstr(r->detection, name) == NULL)
                fail_msg("rule %s reads %s but its detection text does not say so", r->id, name);
        }
        for (size_t k = 0; r->yields_to && r->yields_to[k]; k++)
            if (rule_find(r->yields_to[k]) == NULL)
                fail_msg("rule %s yields to unknown rule %s", r->id, r->yields_to[k]);
        /* Causal links name known rules, once each, at most 64, with words for the docs. */
        for (size_t k = 0; r->explains && r->explains[k].rule_id; k++) {
            const struct rule_link *l = &r->explains[k];

            if (rule_find(l->rule_id) == NULL)
                fail_msg("rule %s explains unknown rule %s", r->id, l->rule_id);
            if (rule_link_find(r, rule_find(l->rule_id)) != l)
                fail_msg("rule %s explains %s twice", r->id, l->rule_id);
            if (k >= 64 || l->how == NULL || strlen(l->how) < 20)
                fail_msg("rule %s: link to %s without a 'how' (or past 64)", r->id, l->rule_id);
        }
    }
    for (int t = 0; t < TH__COUNT; t++)
        if (!used[t])
            fail_msg("threshold %s is read by no rule", threshold_defs[t].name);
    assert_null(rule_find("no.such-rule"));
}

/* ---- ranking and redundancy ---- */

static const char ranked[] = SNAP_HEAD "\"gpus\": ["
    /* GPU 0: nearly full while busy (warning); GPU 1: held by a stopped process (critical),
       which also makes it 'full while idle' (yields); GPU 2 power limit low (warning). */
    GPU_BASE(0, 97, "83751862272", GPU_USUAL) "," GPU_BASE(
        1, 0, "79456894976",
        GPU_USUAL ", \"processes\": [{\"pid\": 4121, \"used_bytes\": "
                  "79456894976}]") "," GPU_BASE(2, 90, "10737418240",
                                                ", \"power_limit_mw\": "
                                                "350000, "
                                                "\"persistence_mode\": "
                                                "true") "],"
                                                        "\"processes\": "
                                                        "{\"processes\": "
                                                        "[{\"pid\": 4121, "
                                                        "\"ppid\": 4000, "
                                                        "\"start_ticks\": "
                                                        "1,"
                                                        "\"state\": \"T\", "
                                                        "\"uid\": 1000, "
                                                        "\"user\": "
                                                        "\"alice\", "
                                                        "\"comm\": "
                                                        "\"python\","
                                                        "\"cpu_time_ms\": "
                                                        "5000, "
                                                        "\"threads\": 8,"
                                                        "\"cmdline\": "
                                                        "\"python "
                                                        "train.py\","
                                                        " " PROC_KEYS ", \"gpus\": "
                                                        "[{\"gpu_index\": "
                                                        "1, \"minor\": 1,"
                                                        "\"holds_device\": "
                                                        "true, "
                                                        "\"nvml_listed\": "
                                                        "true, "
                                                        "\"nvml_type_"
                                                        "mask\": 1,"
                                                        "\"used_bytes\": "
                                                        "79456894976}]}]}}";

static void test_ranked_and_redundant_dropped(void **state)
{
    struct snapshot *s = load(ranked);
    struct config cfg;
    struct findings f;
    const struct finding *stopped;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    assert_true(f.n >= 3);
    /* The critical finding ranks first, and its subject is filled from the snapshot. */
    stopped = &f.items[0];
    assert_string_equal(stopped->rule->id, "proc.stopped-holder");
    assert_int_equal(stopped->severity, SEV_CRITICAL);
    assert_int_equal(stopped->subject.gpu_index, 1);
    assert_int_equal(stopped->subject.pid, 4121);
    assert_string_equal(stopped->subject.user, "alice");
    assert_string_equal(stopped->subject.command, "python train.py");
    assert_string_equal(stopped->subject.gpu_uuid, "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd");
    assert_non_null(strstr(stopped->title, "stopped process 4121 (alice: python train.py)"));
    assert_non_null(strstr(stopped->title, "74.0 GiB"));
    assert_true(stopped->n_fix >= 2);
    assert_non_null(strstr(stopped->fix[0], "kill -CONT 4121"));
    /* Ending it: SIGTERM, then SIGCONT, or the stopped process would act on it only once resumed.
     */
    assert_non_null(strstr(stopped->fix[1], "kill 4121 && kill -CONT 4121   # or end it"));
    /* The stopped holder explains the full idle GPU 1: that finding yields. */
    assert_null(find(&f, "mem.full-idle", 1));
    assert_non_null(find(&f, "mem.nearly-full", 0));
    assert_non_null(find(&f, "clock.power-limit-low", 2));
    /* Sorted: severity never increases down the list. */
    for (size_t i = 1; i < f.n; i++)
        assert_true(f.items[i].severity <= f.items[i - 1].severity);
    assert_int_equal(findings_count(&f, SEV_CRITICAL), 1);
    assert_int_equal(findings_worst(&f), SEV_CRITICAL);
    assert_int_equal(rules_exit_status(s, &f), 2);
    findings_free(&f);

    /* Without the stopped process, GPU 1 is plainly full while idle. */
    s->procs.procs[0].state = 'S';
    run(s, &cfg, &f);
    assert_null(find(&f, "proc.stopped-holder", ANY_GPU));
    assert_non_null(find(&f, "mem.full-idle", 1));
    assert_int_equal(rules_exit_status(s, &f), 1);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- configuration ---- */

static void test_thresholds_and_disabled_rules(void **state)
{
    struct snapshot *s = load(ranked);
    struct config cfg;
    struct findings f;
    char *cause = NULL;

    (void)state;
    config_init(&cfg);
    /* GPU 2 at 12 % memory: only a very low threshold calls it nearly full. */
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.nearly-full", 2));
    findings_free(&f);
    assert_int_equal(config_set(&cfg, "mem_nearly_full_pct=10", &cause), 0);
    run(s, &cfg, &f);
    assert_non_null(find(&f, "mem.nearly-full", 2));
    findings_free(&f);
    assert_int_equal(config_set(&cfg, "disable=mem.nearly-full,proc.stopped-holder", &cause), 0);
    run(s, &cfg, &f);
    assert_null(find(&f, "mem.nearly-full", ANY_GPU));
    assert_null(find(&f, "proc.stopped-holder", ANY_GPU));
    /* With the stopped-holder rule off, nothing explains GPU 1 better: full-idle reports it. */
    assert_non_null(find(&f, "mem.full-idle", 1));
    for (size_t i = 0; i < f.n_skips; i++)
        assert_string_not_equal(f.skips[i].rule->id, "mem.nearly-full");
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- not checked ---- */

static const struct skip *find_skip(const struct findings *f, const char *id, int32_t gpu,
                                    const char *reason)
{
    for (size_t i = 0; i < f->n_skips; i++) {
        if (strcmp(f->skips[i].rule->id, id) == 0 && f->skips[i].gpu_index == gpu &&
            strstr(f->skips[i].reason, reason))
            return &f->skips[i];
    }
    return NULL;
}

static void test_missing_inputs_are_reported(void **state)
{
    static const char json[] =
        SNAP_HEAD "\"gpus\": [{\"index\": 0, \"mem_total_bytes\": 25769803776,"
                  "\"mem_used_bytes\": 1073741824, \"util_gpu_pct\": 3, \"temp_c\": null,"
                  "\"clocks_event_reasons\": null, \"ecc_mode\": null,"
                  "\"nvml_status\": {\"temp_c\": \"NOT_SUPPORTED\", \"clocks_event_reasons\": "
                  "\"NO_PERMISSION\", \"ecc_mode\": \"NOT_SUPPORTED\"}},"
                  "{\"index\": 1, \"handle_status\": \"GPU_IS_LOST\"}]}";
    struct snapshot *s = load(json);
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    /* Each missing input names the field and NVML's answer, on the right GPU. */
    assert_non_null(
        find_skip(&f, "clock.thermal-slowdown", 0, "clocks_event_reasons NO_PERMISSION"));
    assert_non_null(find_skip(&f, "clock.thermal-slowdown", 0, "temp_c NOT_SUPPORTED"));
    assert_non_null(find_skip(&f, "health.ecc-uncorrectable", 0, "ecc_mode NOT_SUPPORTED"));
    /* Never collected at all says so. */
    assert_non_null(find_skip(&f, "proc.compute-mode", 0, "compute_mode not collected"));
    /* The lost GPU is one health finding, not a skip in every rule. */
    assert_non_null(find(&f, "health.gpu-lost", 1));
    for (size_t i = 0; i < f.n_skips; i++)
        if (f.skips[i].gpu_index == 1)
            fail_msg("skip on the lost GPU: %s: %s", f.skips[i].rule->id, f.skips[i].reason);
    /* No finding was made from a missing value. */
    assert_null(find(&f, "clock.thermal-slowdown", ANY_GPU));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- causes and consequences ---- */

#define XID_EVENT(code, pci, t)                                                                    \
    "{\"kind\": \"xid\", \"xid\": " #code ", \"time_ms\": " #t ", \"pci\": \"" pci "\","           \
    "\"message\": \"m\", \"uuid\": null, \"name\": null}"

/*
 * NVML hangs (impact: every GPU) after an uncorrectable memory error (Xid 48) on one GPU; an
 * application's Xid 31 on another is no cause of it. The Xid 48 ranks first although the hang
 * weighs more on its own, the hang follows it as its consequence, the Xid 31 stands alone.
 */
static void test_cause_ranks_before_consequence(void **state)
{
    static const char wedged[] =
        "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1764669600000,"
        "\"collectors\": {\"nvml\": {\"state\": \"timeout\", \"detail\": \"no answer\"}},"
        "\"nvml\": {\"attempted\": true, \"device_count\": 8}, \"gpus\": [],"
        "\"driver\": {\"module_loaded\": true, \"module_version\": \"550.54.15\","
        "\"module_flavor\": null, \"module_banner\": null, \"sysfs_version\": null,"
        "\"klog_source\": \"dmesg\", \"events\": [" XID_EVENT(
            48, "0000:3b:00", 1764669500000) "," XID_EVENT(31, "0000:5e:00", 1764669400000) "]}}";
    static const char benign[] =
        "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1764669600000,"
        "\"collectors\": {\"nvml\": {\"state\": \"timeout\", \"detail\": \"no answer\"}},"
        "\"nvml\": {\"attempted\": true, \"device_count\": 8}, \"gpus\": [],"
        "\"driver\": {\"module_loaded\": true, \"module_version\": \"550.54.15\","
        "\"module_flavor\": null, \"module_banner\": null, \"sysfs_version\": null,"
        "\"klog_source\": \"dmesg\", \"events\": [" XID_EVENT(13, "0000:3b:00",
                                                              1764669500000) "]}}";
    struct config cfg;
    struct findings f;
    struct snapshot *s;
    const struct finding *hung, *x31;

    (void)state;
    config_init(&cfg);
    s = load(wedged);
    run(s, &cfg, &f);
    assert_true(f.n >= 3);
    assert_string_equal(f.items[0].rule->id, "health.xid");
    assert_string_equal(f.items[0].subject.object, "0000:3b:00");
    assert_null(finding_cause(&f, 0));
    assert_string_equal(f.items[1].rule->id, "health.nvml-hung");
    assert_ptr_equal(finding_cause(&f, 1), &f.items[0]);
    assert_int_equal(finding_n_explained(&f, 0), 1);
    hung = &f.items[1];
    assert_true(hung->impact > f.items[0].impact); /* ranked by its cause, not by itself */
    x31 = NULL;
    for (size_t i = 0; i < f.n; i++) {
        if (f.items[i].subject.object && strcmp(f.items[i].subject.object, "0000:5e:00") == 0) {
            x31 = &f.items[i];
            assert_null(finding_cause(&f, i));
            assert_int_equal(finding_n_explained(&f, i), 0);
        }
    }
    assert_non_null(x31);
    findings_free(&f);
    snapshot_free(s);

    /* Xid 13 (an application's graphics exception) wedges nothing: the hang stands alone. */
    s = load(benign);
    run(s, &cfg, &f);
    assert_string_equal(f.items[0].rule->id, "health.nvml-hung");
    for (size_t i = 0; i < f.n; i++)
        assert_null(finding_cause(&f, i));
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* ---- exit status ---- */

static void test_exit_status(void **state)
{
    static const char no_gpu[] =
        "{\"schema\": \"gpudoctor.snapshot/1\", \"nvml\": {\"attempted\": true, \"load_error\": 12,"
        "\"library\": \"libnvidia-ml.so.1\"}, \"gpus\": []}";
    static const char hung[] =
        "{\"schema\": \"gpudoctor.snapshot/1\", \"collectors\": {\"nvml\": {\"state\": \"timeout\","
        "\"detail\": \"no answer\"}}, \"nvml\": {\"attempted\": true, \"hung_call\": "
        "\"nvmlDeviceGetPowerUsage\"}, \"gpus\": []}";
    static const char info_only[] = SNAP_HEAD
        "\"gpus\": [" GPU_BASE(0, 90, "536870912",
                               ", \"power_limit_mw\": 700000, \"persistence_mode\": false,"
                               "\"display_active\": false") "]}";
    struct config cfg;
    struct findings f;
    struct snapshot *s;
    char *why;

    (void)state;
    config_init(&cfg);
    s = load(no_gpu);
    run(s, &cfg, &f);
    assert_int_equal(rules_exit_status(s, &f), 3);
    why = rules_cannot_check(s, &f, false);
    assert_non_null(why);
    assert_non_null(strstr(why, "No NVIDIA GPU found"));
    free(why);
    findings_free(&f);
    snapshot_free(s);

    s = load(hung);
    run(s, &cfg, &f);
    assert_non_null(find(&f, "health.nvml-hung", -1));
    assert_non_null(strstr(f.items[0].title, "nvmlDeviceGetPowerUsage"));
    assert_int_equal(rules_exit_status(s, &f), 2);
    assert_null(rules_cannot_check(s, &f, false));
    findings_free(&f);
    snapshot_free(s);

    s = load(info_only);
    run(s, &cfg, &f);
    assert_non_null(find(&f, "clock.persistence-off", 0));
    assert_int_equal(findings_worst(&f), SEV_INFO);
    assert_int_equal(rules_exit_status(s, &f), 0);
    findings_free(&f);
    snapshot_free(s);
    config_free(&cfg);
}

/* ---- history ---- */

static void test_history_drives_trends(void **state)
{
    /* GPU 0 swings 0-96 % over the window while its process uses a full core. */
    static const char json[] =
        "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1764669600000, \"window_ms\": 2000,"
        "\"nvml\": {\"attempted\": true}, \"gpus\": [" GPU_BASE(
            0, 50, "10737418240",
            GPU_USUAL
            ", \"processes\": [{\"pid\": 700, \"used_bytes\": 10737418240, \"type\": "
            "\"compute\"}]") "],"
                             "\"processes\": {\"processes\": [{\"pid\": 700, \"ppid\": 1, "
                             "\"start_ticks\": 1,"
                             "\"state\": \"R\", \"comm\": \"python\", \"cpu_time_ms\": 5000, "
                             "\"threads\": 8,"
                             "\"cpu_pct\": 100.0, " PROC_KEYS ","
                             "\"gpus\": [{\"gpu_index\": 0,"
                             "\"holds_device\": true, \"nvml_listed\": true, \"nvml_type_mask\": "
                             "1}]}]},"
                             "\"samples\": ["
                             "{\"t_ms\": 0, \"gpus\": [{\"index\": 0, \"util_gpu_pct\": 0}]},"
                             "{\"t_ms\": 500, \"gpus\": [{\"index\": 0, \"util_gpu_pct\": 96}]},"
                             "{\"t_ms\": 1000, \"gpus\": [{\"index\": 0, \"util_gpu_pct\": 2}]},"
                             "{\"t_ms\": 1500, \"gpus\": [{\"index\": 0, \"util_gpu_pct\": 91}]},"
                             "{\"t_ms\": 2000, \"gpus\": [{\"index\": 0, \"util_gpu_pct\": 50}]}]}";
    struct snapshot *s = load(json);
    struct config cfg;
    struct findings f;
    struct history h;
    const struct finding *x;

    (void)state;
    config_init(&cfg);
    run(s, &cfg, &f);
    x = find(&f, "perf.input-starved", 0);
    assert_non_null(x);
    if (x == NULL)
        return;
    assert_int_equal(x->subject.pid, 700);
    assert_non_null(strstr(x->evidence[0], "between 0 and 96"));
    findings_free(&f);

    /* The same snapshot judged on a history of one steady reading: no trend, so no finding, and
       the rule says it needed a window. */
    h.samples = &s->samples[4];
    h.n = 1;
    memset(&f, 0, sizeof(f));
    rules_run(s, &h, &cfg.rules, &f);
    assert_null(find(&f, "perf.input-starved", ANY_GPU));
    assert_non_null(find_skip(&f, "perf.input-starved", -1, "sampling window"));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* ---- subjects ---- */

static void test_subject_key(void **state)
{
    char tmp[] = "/tmp";
    struct subject sub = { .gpu_index = 3, .pid = 4121 };
    char *k;

    (void)state;
    k = subject_key(&sub);
    assert_string_equal(k, "gpu=3 pid=4121");
    free(k);
    sub.gpu_index = -1;
    sub.pid = -1;
    k = subject_key(&sub);
    assert_string_equal(k, "host");
    free(k);
    sub.object = tmp;
    k = subject_key(&sub);
    assert_string_equal(k, "object=/tmp");
    free(k);
}

/* ---- scale: 8 GPUs, 64 GPU processes, 2,000 processes in the table ---- */

static void test_large_snapshot(void **state)
{
    struct snapshot *s = snapshot_new();
    struct config cfg;
    struct findings f;

    (void)state;
    config_init(&cfg);
    s->time_ms = 1764669600000;
    s->nvml.attempted = true;
    s->n_gpus = 8;
    s->gpus = xcalloc(8, sizeof(*s->gpus));
    s->procs.n_procs = 2000;
    s->procs.procs = xcalloc(2000, sizeof(*s->procs.procs));
    for (uint32_t i = 0; i < 2000; i++) {
        struct proc *p = &s->procs.procs[i];

        p->pid = (int32_t)(10000 + i);
        p->ppid = 1;
        p->state = i % 64 == 5 ? 'T' : 'S';
        p->valid = 1u << PROC_S_STAT;
    }
    for (uint32_t g = 0; g < 8; g++) {
        struct gpu *x = &s->gpus[g];

        gpu_init(x, g);
        x->mem_total_bytes = 80ull << 30;
        x->mem_used_bytes = 60ull << 30;
        x->util_gpu_pct = 99;
        gpu_set_rc(x, GPU_S_MEM_TOTAL, 0);
        gpu_set_rc(x, GPU_S_MEM_USED, 0);
        gpu_set_rc(x, GPU_S_UTIL_GPU, 0);
        gpu_set_rc(x, GPU_S_PROCESSES, 0);
        x->n_procs = 8;
        x->procs = xcalloc(8, sizeof(*x->procs));
        for (uint32_t k = 0; k < 8; k++) {
            x->procs[k].pid = 10000 + g * 64 + k;
            x->procs[k].type_mask = GPU_PROC_COMPUTE;
            x->procs[k].used_bytes = 7ull << 30;
            x->procs[k].valid = 1u << GPU_PROC_S_USED;
        }
    }
    run(s, &cfg, &f);
    /* pid 10005 (GPU 0) and every 64th after it are stopped: one finding per GPU. */
    assert_int_equal(findings_count(&f, SEV_CRITICAL), 8);
    assert_non_null(find(&f, "proc.stopped-holder", 7));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_sound),
        cmocka_unit_test(test_ranked_and_redundant_dropped),
        cmocka_unit_test(test_thresholds_and_disabled_rules),
        cmocka_unit_test(test_missing_inputs_are_reported),
        cmocka_unit_test(test_cause_ranks_before_consequence),
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_history_drives_trends),
        cmocka_unit_test(test_subject_key),
        cmocka_unit_test(test_large_snapshot),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
