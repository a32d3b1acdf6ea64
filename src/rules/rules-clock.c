/*
 * Clocks: why a GPU runs below its speed. Thermal slowdown, hardware slowdown and power brake,
 * power caps and limits set low, reduced application clocks, and persistence mode.
 */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* "SM clock 1350 of 1980 MHz (68 %)", when known. */
static void clock_evidence(struct finding *f, const struct gpu *g)
{
    if (gpu_valid(g, GPU_S_CLOCK_SM) && gpu_valid(g, GPU_S_CLOCK_SM_MAX) && g->clock_sm_max_mhz)
        finding_evidence(f, "SM clock %" PRIu32 " of %" PRIu32 " MHz (%.0f %% of its maximum)",
                         g->clock_sm_mhz, g->clock_sm_max_mhz,
                         pct(g->clock_sm_mhz, g->clock_sm_max_mhz));
}

static void power_evidence(struct finding *f, const struct gpu *g)
{
    if (gpu_valid(g, GPU_S_POWER) && gpu_valid(g, GPU_S_POWER_LIMIT))
        finding_evidence(f, "power draw %.0f W, limit %.0f W", g->power_mw / 1000.0,
                         g->power_limit_mw / 1000.0);
}

static void reason_evidence(struct finding *f, const struct facts_gpu *v, uint64_t bit)
{
    for (size_t i = 0; i < n_clock_reasons; i++) {
        const char *word = clock_reasons[i].label;
        size_t seen = facts_gpu_reason_count(v, bit);

        if (clock_reasons[i].bit != bit)
            continue;
        finding_evidence_take(f, TWICE("clock event reason '%s' in %zu of %zu readings",
                                       (word, seen, v->reasons_n), (_(word), seen, v->reasons_n)));
    }
}

static bool busy(const struct rule_ctx *ctx, const struct facts_gpu *v)
{
    return v->util_valid && v->util_max >= th(ctx, TH_GPU_BUSY_UTIL_PCT);
}

/* ---- clock.thermal-slowdown ---- */

/*
 * No GPU reads hotter than this: a larger temperature or threshold is not a reading (NVML's
 * 0xffffffff, a wrapped value), and is judged as unknown rather than as heat.
 */
#define TEMP_PLAUSIBLE_MAX_C 200

/*
 * A board's maximum operating temperature sits a few degrees under its slowdown threshold; this
 * far under it, the platform (its firmware or BMC policy, a VBIOS, a thermal daemon) has set it
 * lower.
 */
#define TEMP_MAX_SET_LOW_C 20

/* Whether a temperature field is valid and plausible; a skip says so when it is not plausible. */
static bool temp_ok(const struct rule_ctx *ctx, struct findings *out, const struct gpu *g,
                    enum gpu_slot slot, uint32_t c)
{
    if (!gpu_valid(g, slot))
        return false;
    /* A threshold of 0 °C is no threshold; a GPU may read 0 °C in a cold room. */
    if ((c > 0 || slot == GPU_S_TEMP) && c <= TEMP_PLAUSIBLE_MAX_C)
        return true;
    rule_skip(ctx, out, (int32_t)g->index, "%s %" PRIu32 " °C is not a plausible reading",
              gpu_field_name(slot), c);
    return false;
}

bool gpu_max_temp_set_low(const struct gpu *g)
{
    if (!gpu_valid(g, GPU_S_TEMP_GPU_MAX) || !gpu_valid(g, GPU_S_TEMP_SLOWDOWN) ||
        g->temp_gpu_max_c == 0 || g->temp_slowdown_c > TEMP_PLAUSIBLE_MAX_C)
        return false;
    return g->temp_slowdown_c >= g->temp_gpu_max_c + TEMP_MAX_SET_LOW_C;
}

void gpu_max_temp_set_low_fixes(struct finding *f, const struct gpu *g)
{
    finding_fix(f,
                "nvidia-smi -i %" PRIu32 " -q -d TEMPERATURE,PERFORMANCE   # \"GPU Max "
                "Operating Temp\" against \"GPU Slowdown Temp\", and against a sibling "
                "GPU",
                g->index);
    finding_fix(f, "# a maximum operating temperature set low is a setting, not heat: check "
                   "the platform's thermal policy (BMC or firmware, the VBIOS, a thermal "
                   "daemon)");
}

static void check_thermal(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        bool sw, hw, temp, limit, shut, gmax, near, above, past_shutdown, past_max, max_low;
        bool setting;
        int64_t over;
        struct finding *f;

        if (g->handle_rc != 0)
            continue;
        temp = temp_ok(ctx, out, g, GPU_S_TEMP, g->temp_c);
        limit = temp_ok(ctx, out, g, GPU_S_TEMP_SLOWDOWN, g->temp_slowdown_c);
        shut = temp_ok(ctx, out, g, GPU_S_TEMP_SHUTDOWN, g->temp_shutdown_c);
        gmax = temp_ok(ctx, out, g, GPU_S_TEMP_GPU_MAX, g->temp_gpu_max_c);
        if (!v->reasons_valid && !(temp && (limit || gmax))) {
            need_gpu(ctx, out, g, GPU_S_EVENT_REASONS);
            if (!gpu_valid(g, GPU_S_TEMP))
                need_gpu(ctx, out, g, GPU_S_TEMP);
            else if (temp)
                need_gpu(ctx, out, g, GPU_S_TEMP_SLOWDOWN);
            continue;
        }
        sw = v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_SW_THERMAL);
        hw = v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_HW_THERMAL);
        /* Signed, from plausible values: a temperature past the threshold is not "-6 °C from"
         * it. */
        over = (int64_t)g->temp_c - (int64_t)g->temp_slowdown_c;
        above = temp && limit && over >= 0;
        past_shutdown = temp && shut && g->temp_c >= g->temp_shutdown_c;
        near = temp && limit && (double)over + th(ctx, TH_THERMAL_MARGIN_C) >= 0;
        /* Past the maximum operating temperature the driver's software thermal slowdown trims
         * the clocks, however far the slowdown threshold is (a platform may set it low). */
        past_max = temp && gmax && g->temp_c > g->temp_gpu_max_c;
        max_low = past_max && limit && gpu_max_temp_set_low(g);
        /* Only past a maximum set low, far from the slowdown threshold: the cause is that
         * setting, not the cooling, and a power cap would only cost speed. */
        setting = max_low && !hw && !near && !above && !past_shutdown;
        /* Reason bits that were read and show no thermal slowdown say it is not slowing. */
        if (!sw && !hw && !near && !above && !past_shutdown && !(past_max && !v->reasons_valid))
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        /* Past the slowdown point the GPU is (or is about to be) cutting its clocks hard. */
        if (hw || above || past_shutdown)
            f->severity = SEV_CRITICAL;
        if (past_shutdown)
            finding_title(f,
                          "GPU %" PRIu32 " at %" PRIu32 " °C, at or past its shutdown "
                          "temperature (%" PRIu32 " °C)",
                          g->index, g->temp_c, g->temp_shutdown_c);
        else if (hw && temp)
            finding_title(f,
                          "GPU %" PRIu32 " slowed down by heat: %" PRIu32 " °C (hardware thermal "
                          "slowdown)",
                          g->index, g->temp_c);
        else if (sw && temp)
            finding_title(f,
                          "GPU %" PRIu32 " slowed down by heat: %" PRIu32 " °C (software thermal "
                          "slowdown)",
                          g->index, g->temp_c);
        else if (hw)
            finding_title(f, "GPU %" PRIu32 " slowed down by heat (hardware thermal slowdown)",
                          g->index);
        else if (sw)
            finding_title(f, "GPU %" PRIu32 " slowed down by heat (software thermal slowdown)",
                          g->index);
        else if (above && over > 0)
            finding_title(f,
                          "GPU %" PRIu32 " at %" PRIu32 " °C, %" PRId64 " °C past its slowdown "
                          "temperature (%" PRIu32 " °C)",
                          g->index, g->temp_c, over, g->temp_slowdown_c);
        else if (above)
            finding_title(f, "GPU %" PRIu32 " at its slowdown temperature (%" PRIu32 " °C)",
                          g->index, g->temp_c);
        else if (past_max && !near)
            finding_title(f,
                          "GPU %" PRIu32 " at %" PRIu32 " °C, past its maximum operating "
                          "temperature (%" PRIu32 " °C), where software thermal slowdown "
                          "starts",
                          g->index, g->temp_c, g->temp_gpu_max_c);
        else
            finding_title(f,
                          "GPU %" PRIu32 " at %" PRIu32 " °C, %" PRId64 " °C from its slowdown "
                          "temperature",
                          g->index, g->temp_c, -over);
        if (temp && limit && shut)
            finding_evidence(f,
                             "temperature %" PRIu32 " °C; slowdown at %" PRIu32
                             " °C, shutdown at %" PRIu32 " °C",
                             g->temp_c, g->temp_slowdown_c, g->temp_shutdown_c);
        else if (temp && limit)
            finding_evidence(f, "temperature %" PRIu32 " °C; slowdown at %" PRIu32 " °C", g->temp_c,
                             g->temp_slowdown_c);
        else if (temp)
            finding_evidence(f, "temperature %" PRIu32 " °C", g->temp_c);
        if (past_max)
            finding_evidence(f,
                             "maximum operating temperature %" PRIu32 " °C: above it the driver's "
                             "software thermal slowdown lowers the clocks",
                             g->temp_gpu_max_c);
        if (max_low)
            finding_evidence(f, "it is set far below the slowdown threshold: the platform sets it "
                                "(its firmware or BMC thermal policy, the VBIOS, or a thermal "
                                "daemon)");
        if (past_shutdown)
            finding_evidence(f, "at the shutdown temperature the GPU turns itself off to protect "
                                "the chip: its jobs die");
        else if (above && !hw)
            finding_evidence(f, "at or past the slowdown temperature the GPU cuts its clocks");
        if (sw)
            reason_evidence(f, v, NVML_CLOCKS_EVENT_SW_THERMAL);
        if (hw)
            reason_evidence(f, v, NVML_CLOCKS_EVENT_HW_THERMAL);
        clock_evidence(f, g);
        if (gpu_valid(g, GPU_S_FAN))
            finding_evidence(f, "fan %" PRIu32 " %%", g->fan_speed_pct);
        if (max_low) {
            gpu_max_temp_set_low_fixes(f, g);
        } else {
            finding_fix(f,
                        "nvidia-smi -i %" PRIu32 " -q -d TEMPERATURE,PERFORMANCE   # confirm: "
                        "temperatures and active slowdowns",
                        g->index);
        }
        if (!setting)
            finding_fix(f, "# check the airflow: fans, blanking panels, dust filters, the room's "
                           "inlet temperature (ipmitool sdr type Temperature)");
        /* A power cap only where heat slows the GPU now: not for one a few degrees from its
         * threshold with no slowdown reason, nor for a threshold set low. */
        if (!setting && (sw || hw || above || past_shutdown) && gpu_valid(g, GPU_S_POWER_LIMIT) &&
            gpu_valid(g, GPU_S_POWER_MIN_LIMIT)) {
            /* 85 % of the limit, and below what it draws now: a cap above the draw takes no
             * heat away. None when the lowest allowed cap is not below the draw either. */
            uint64_t mw = (uint64_t)g->power_limit_mw * 85 / 100;
            bool draw = gpu_valid(g, GPU_S_POWER) && g->power_mw > 0;

            if (draw && (uint64_t)g->power_mw * 90 / 100 < mw)
                mw = (uint64_t)g->power_mw * 90 / 100;
            if (mw < g->power_min_limit_mw)
                mw = g->power_min_limit_mw;
            if (!draw || mw < g->power_mw)
                finding_fix(f,
                            "sudo nvidia-smi -i %" PRIu32 " -pl %" PRIu32 "   # until cooling "
                            "is fixed: less heat, steadier clocks",
                            g->index, (uint32_t)(mw / 1000));
        }
        f->impact = past_shutdown ? 1.5 : (hw || above) ? 1.0 : (sw ? 0.5 : 0.2);
    }
}

const struct rule rule_clock_thermal_slowdown = {
    .id = "clock.thermal-slowdown",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("GPU slowed down by heat"),
    .explanation = N_(
        "The GPU lowered its clocks because it is too hot, or is a few degrees from doing so. "
        "Software thermal slowdown trims clocks gradually as the temperature approaches its limit; "
        "hardware thermal slowdown cuts them by half or more to protect the chip (critical), as "
        "does a temperature at or past the slowdown threshold; at the shutdown threshold the GPU "
        "turns itself off. "
        "Either "
        "way jobs run slower, and clocks that fluctuate make step times uneven. Causes: blocked or "
        "failed fans, missing blanking panels, dust, a hot room or rack, or a neighbour GPU's "
        "exhaust."),
    .detection = N_("clock event reasons sw_thermal or hw_thermal set in any reading of the window "
                    "(nvmlDeviceGetCurrentClocksEventReasons), or the temperature within "
                    "thermal_margin_c of the slowdown threshold "
                    "(nvmlDeviceGetTemperatureThreshold SLOWDOWN), or above the maximum operating "
                    "temperature (GPU_MAX), past which the driver's software slowdown trims the "
                    "clocks (when the reason bits are unknown; read, they say whether it does). At "
                    "or past the slowdown "
                    "threshold, or the shutdown one, it is critical with or without the reason "
                    "bits. Temperatures and thresholds above 200 °C (or a threshold of 0) are not "
                    "readings: they are reported as not checked."),
    .fix = N_("Confirm with nvidia-smi -q -d TEMPERATURE,PERFORMANCE. Fix the cooling: fans, "
              "airflow, filters, inlet temperature; compare with neighbour GPUs and nodes. Until "
              "then, on a GPU that heat slows down now, a lower power limit (nvidia-smi -pl) gives "
              "less heat and steadier clocks. A maximum operating temperature set far below the "
              "slowdown threshold is a setting, not heat: compare nvidia-smi -q -d TEMPERATURE "
              "with a sibling GPU and check the platform's thermal policy (BMC or firmware, the "
              "VBIOS, a thermal daemon) rather than the cooling."),
    .thresholds = THRESHOLDS(TH_THERMAL_MARGIN_C),
    .explains =
        EXPLAINS({ "clock.low-pstate", LINK_SAME_GPU, NULL,
                   N_("a thermal slowdown holds the clocks down, and the P-state with them"),
                   LINK_FIX_OWN }),
    .check = check_thermal,
};

/* ---- clock.hw-slowdown ---- */

bool gpu_hw_braked(const struct facts_gpu *v, bool *brake, bool *slow)
{
    *brake = v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_HW_POWER_BRAKE);
    /* HW slowdown also flickers during P-state changes: it counts when it persists. */
    *slow = v->reasons_valid &&
            (facts_gpu_reason_count(v, NVML_CLOCKS_EVENT_HW_SLOWDOWN) >= 2 ||
             (v->reasons_last & NVML_CLOCKS_EVENT_HW_SLOWDOWN)) &&
            !(v->reasons_any & NVML_CLOCKS_EVENT_HW_THERMAL);
    return *brake || *slow;
}

static void check_hw_slowdown(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        bool brake, slow;
        const char *why;
        size_t n_slow;
        struct finding *f;

        if (!v->reasons_valid) {
            if (g->handle_rc == 0 && gpu_valid(g, GPU_S_TEMP))
                need_gpu(ctx, out, g, GPU_S_EVENT_REASONS);
            continue;
        }
        n_slow = facts_gpu_reason_count(v, NVML_CLOCKS_EVENT_HW_SLOWDOWN);
        if (!gpu_hw_braked(v, &brake, &slow))
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        why = brake ? N_("the hardware power brake") : N_("hardware slowdown");
        finding_title_take(f, TWICE("GPU %" PRIu32
                                    " clocks cut by %s: check its power supply and cables",
                                    (g->index, why), (g->index, _(why))));
        if (brake)
            reason_evidence(f, v, NVML_CLOCKS_EVENT_HW_POWER_BRAKE);
        if (n_slow)
            reason_evidence(f, v, NVML_CLOCKS_EVENT_HW_SLOWDOWN);
        clock_evidence(f, g);
        power_evidence(f, g);
        if (gpu_valid(g, GPU_S_TEMP))
            finding_evidence(f, "temperature %" PRIu32 " °C (not a thermal slowdown)", g->temp_c);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " -q -d PERFORMANCE,POWER   # the active "
                    "reasons, live",
                    g->index);
        finding_fix(f, "sudo ipmitool sel list | tail -30   # BMC events: PSU faults, power "
                       "capping, brake assertions");
        finding_fix(f, "# check the GPU's power cables and connectors and the PSUs; if it "
                       "persists with good power, contact the vendor");
        f->impact = 1.0;
    }
}

const struct rule rule_clock_hw_slowdown = {
    .id = "clock.hw-slowdown",
    .severity = SEV_CRITICAL,
    .category = CAT_CLOCKS,
    .title = N_("Hardware slowdown or power brake"),
    .explanation = N_(
        "The GPU's hardware cut its clocks by half or more. Without a thermal cause this means the "
        "power delivery asked it to: a power-brake signal from the system (a failing or "
        "insufficient PSU, the chassis over its power budget), a power draw spike beyond what the "
        "cables deliver, or a loose or damaged power connector. Jobs run at a fraction of their "
        "speed, often on one node only ('one node of the cluster is slow')."),
    .detection =
        N_("clock event reason hw_power_brake in any reading, or hw_slowdown in two or more "
           "readings or the latest one, without hw_thermal (that is "
           "clock.thermal-slowdown)."),
    .fix =
        N_("Look at the BMC event log (ipmitool sel list) for PSU and power events, check the "
           "GPU's power cables and connectors, and the PSUs' health and redundancy. If it persists "
           "with good power, run the vendor's diagnostics and contact support."),
    .thresholds = NO_THRESHOLDS,
    .explains = EXPLAINS({ "clock.low-pstate", LINK_SAME_GPU, NULL,
                           N_("a hardware slowdown (power brake, overheating) holds the clocks and "
                              "the P-state down"),
                           LINK_FIX_OWN }),
    .check = check_hw_slowdown,
};

/* ---- clock.power-limit-low ---- */

static void check_power_limit(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        uint32_t limit, def;
        bool enforced_low;
        struct finding *f;

        if (!need_gpu(ctx, out, g, GPU_S_POWER_LIMIT) ||
            !need_gpu(ctx, out, g, GPU_S_POWER_DEFAULT_LIMIT) || g->power_default_limit_mw == 0)
            continue;
        def = g->power_default_limit_mw;
        limit = g->power_limit_mw;
        enforced_low = gpu_valid(g, GPU_S_POWER_ENFORCED_LIMIT) &&
                       g->power_enforced_limit_mw < limit &&
                       pct(g->power_enforced_limit_mw, def) < th(ctx, TH_POWER_LIMIT_LOW_PCT);
        if (pct(limit, def) >= th(ctx, TH_POWER_LIMIT_LOW_PCT) && !enforced_low)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (enforced_low && pct(limit, def) >= th(ctx, TH_POWER_LIMIT_LOW_PCT))
            finding_title(f,
                          "GPU %" PRIu32 " held to %.0f W by an outside limit (default "
                          "%.0f W)",
                          g->index, g->power_enforced_limit_mw / 1000.0, def / 1000.0);
        else
            finding_title(f, "GPU %" PRIu32 " power limit %.0f W, below its %.0f W default",
                          g->index, limit / 1000.0, def / 1000.0);
        finding_evidence(f, "power limit %.0f W, default %.0f W (%.0f %%)", limit / 1000.0,
                         def / 1000.0, pct(limit, def));
        if (gpu_valid(g, GPU_S_POWER_ENFORCED_LIMIT))
            finding_evidence(f, "enforced limit %.0f W%s", g->power_enforced_limit_mw / 1000.0,
                             enforced_low ? " (set out of band: BMC, chassis power management)"
                                          : "");
        if (gpu_valid(g, GPU_S_POWER))
            finding_evidence(f, "power draw %.0f W", g->power_mw / 1000.0);
        if (v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_SW_POWER_CAP))
            reason_evidence(f, v, NVML_CLOCKS_EVENT_SW_POWER_CAP);
        clock_evidence(f, g);
        if (pct(limit, def) < th(ctx, TH_POWER_LIMIT_LOW_PCT))
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -pl %.0f   # back to the default "
                        "(lasts until reboot)",
                        g->index, def / 1000.0);
        else
            finding_fix(f, "sudo ipmitool dcmi power get_limit   # the platform's power cap");
        /* Not a bare '-pl', which matches -plugin and the like; --power-limit and DCGM's
         * config set it too. */
        finding_fix(f, "grep -rnE 'nvidia-smi.*(-pl|--power-limit)|dcgmi config.*-P' /etc "
                       "2>/dev/null   # what sets it at boot");
        f->impact = busy(ctx, v) ? 0.6 : 0.2;
    }
}

const struct rule rule_clock_power_limit_low = {
    .id = "clock.power-limit-low",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("Power limit set below the default"),
    .explanation = N_(
        "Someone (a boot script, an earlier experiment, the platform's power management) set the "
        "GPU's power limit below the board's default. Under load the GPU reaches the lower cap "
        "sooner and runs at lower clocks: jobs are slower with no error anywhere. Lower limits are "
        "sometimes deliberate (power budget, heat); then this is the price. A newer driver with a "
        "different power policy shows the same way."),
    .detection =
        N_("power limit (nvmlDeviceGetPowerManagementLimit) below power_limit_low_pct of "
           "the default limit; or an enforced limit (after out-of-band limiters) that low."),
    .fix = N_(
        "Restore the default with sudo nvidia-smi -i N -pl DEFAULT_WATTS (the default is in "
        "the evidence), and remove whatever sets it at boot. An enforced limit below the set one "
        "comes from the BMC or chassis: check ipmitool dcmi power get_limit."),
    .thresholds = THRESHOLDS(TH_POWER_LIMIT_LOW_PCT),
    .check = check_power_limit,
};

/* ---- clock.power-cap ---- */

static void check_power_cap(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        struct finding *f;

        if (!v->reasons_valid || !(v->reasons_any & NVML_CLOCKS_EVENT_SW_POWER_CAP) ||
            !busy(ctx, v))
            continue;
        /* A limit set low is clock.power-limit-low's finding. */
        if (gpu_valid(g, GPU_S_POWER_LIMIT) && gpu_valid(g, GPU_S_POWER_DEFAULT_LIMIT) &&
            pct(g->power_limit_mw, g->power_default_limit_mw) < th(ctx, TH_POWER_LIMIT_LOW_PCT))
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (gpu_valid(g, GPU_S_POWER_LIMIT))
            finding_title(f, "GPU %" PRIu32 " runs at its %.0f W power limit", g->index,
                          g->power_limit_mw / 1000.0);
        else
            finding_title(f, "GPU %" PRIu32 " runs at its power limit", g->index);
        reason_evidence(f, v, NVML_CLOCKS_EVENT_SW_POWER_CAP);
        power_evidence(f, g);
        clock_evidence(f, g);
        finding_evidence(f, "normal under heavy load at the default limit");
        if (gpu_valid(g, GPU_S_POWER_MAX_LIMIT) && gpu_valid(g, GPU_S_POWER_LIMIT) &&
            g->power_max_limit_mw > g->power_limit_mw)
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -pl %.0f   # the board allows up to "
                        "this, if cooling and power budget do",
                        g->index, g->power_max_limit_mw / 1000.0);
        else
            finding_fix(f, "# nothing to do: the GPU is using all the power it may");
        f->impact = 0.1;
    }
}

const struct rule rule_clock_power_cap = {
    .id = "clock.power-cap",
    .severity = SEV_INFO,
    .category = CAT_CLOCKS,
    .title = N_("GPU at its power limit"),
    .explanation = N_(
        "The GPU draws as much power as its limit allows, so the driver holds its clocks there. "
        "Under a heavy load at the default limit this is normal and expected: the GPU is doing all "
        "the work its power budget permits. It is worth knowing when comparing nodes, or when the "
        "board allows a higher limit. A limit set below the default is clock.power-limit-low."),
    .detection =
        N_("clock event reason sw_power_cap in a reading while the GPU was busy (utilisation "
           "at or above gpu_busy_util_pct) and the limit is not below "
           "power_limit_low_pct of the default."),
    .fix = N_("Nothing, usually. Where cooling and the power budget allow, the limit can be raised "
              "up to the board's maximum (nvidia-smi -i N -pl WATTS)."),
    .thresholds = THRESHOLDS(TH_GPU_BUSY_UTIL_PCT, TH_POWER_LIMIT_LOW_PCT),
    .check = check_power_cap,
};

/* ---- clock.app-clocks ---- */

/* Whether the application SM clock differs from its default: 1, 0, or -1 when not known. */
static int sm_app_off(const struct gpu *g)
{
    if (!gpu_valid(g, GPU_S_CLOCK_SM_APP) || !gpu_valid(g, GPU_S_CLOCK_SM_APP_DEFAULT) ||
        !g->clock_sm_app_default_mhz)
        return -1;
    return g->clock_sm_app_mhz != g->clock_sm_app_default_mhz;
}

/*
 * Whether the application memory clock differs from its default: 1, 0, or -1 when not known.
 * (The current memory clock says nothing: it drops with the P-state.)
 */
static int mem_app_off(const struct gpu *g)
{
    if (!gpu_valid(g, GPU_S_CLOCK_MEM_APP) || !gpu_valid(g, GPU_S_CLOCK_MEM_APP_DEFAULT) ||
        !g->clock_mem_app_default_mhz)
        return -1;
    return g->clock_mem_app_mhz != g->clock_mem_app_default_mhz;
}

static void check_app_clocks(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        bool sm_low = false, mem_low = false, reason;
        struct finding *f;

        if (gpu_valid(g, GPU_S_CLOCK_SM_APP) && gpu_valid(g, GPU_S_CLOCK_SM_APP_DEFAULT) &&
            g->clock_sm_app_default_mhz)
            sm_low = pct(g->clock_sm_app_mhz, g->clock_sm_app_default_mhz) <
                     th(ctx, TH_APP_CLOCK_LOW_PCT);
        if (gpu_valid(g, GPU_S_CLOCK_MEM_APP) && gpu_valid(g, GPU_S_CLOCK_MEM_APP_DEFAULT) &&
            g->clock_mem_app_default_mhz)
            mem_low = pct(g->clock_mem_app_mhz, g->clock_mem_app_default_mhz) <
                      th(ctx, TH_APP_CLOCK_LOW_PCT);
        /* The reason alone: clocks locked (nvidia-smi -lgc) below what the GPU could run. */
        reason = v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING) &&
                 busy(ctx, v) && gpu_valid(g, GPU_S_CLOCK_SM) && gpu_valid(g, GPU_S_CLOCK_SM_MAX) &&
                 pct(g->clock_sm_mhz, g->clock_sm_max_mhz) < th(ctx, TH_APP_CLOCK_LOW_PCT);
        if (!sm_low && !mem_low && !reason)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        if (sm_low)
            finding_title(f,
                          "GPU %" PRIu32 " application clocks set to %" PRIu32
                          " MHz (default %" PRIu32 " MHz)",
                          g->index, g->clock_sm_app_mhz, g->clock_sm_app_default_mhz);
        else if (mem_low)
            finding_title(f,
                          "GPU %" PRIu32 " memory application clock set to %" PRIu32
                          " MHz (default %" PRIu32 " MHz)",
                          g->index, g->clock_mem_app_mhz, g->clock_mem_app_default_mhz);
        else
            finding_title(f,
                          "GPU %" PRIu32 " clocks held at %" PRIu32 " MHz by a clock setting "
                          "(maximum %" PRIu32 " MHz)",
                          g->index, g->clock_sm_mhz, g->clock_sm_max_mhz);
        if (sm_low)
            finding_evidence(f, "application SM clock %" PRIu32 " MHz, default %" PRIu32 " MHz",
                             g->clock_sm_app_mhz, g->clock_sm_app_default_mhz);
        if (mem_low)
            finding_evidence(f, "application memory clock %" PRIu32 " MHz, default %" PRIu32 " MHz",
                             g->clock_mem_app_mhz, g->clock_mem_app_default_mhz);
        if (v->reasons_valid && (v->reasons_any & NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING))
            reason_evidence(f, v, NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING);
        clock_evidence(f, g);
        finding_fix(f, "sudo nvidia-smi -i %" PRIu32 " -rac   # reset application clocks",
                    g->index);
        finding_fix(f, "sudo nvidia-smi -i %" PRIu32 " -rgc   # reset locked GPU clocks", g->index);
        /* A memory clock at its default has nothing to reset. */
        if (mem_app_off(g) != 0)
            finding_fix(f, "sudo nvidia-smi -i %" PRIu32 " -rmc   # reset locked memory clocks",
                        g->index);
        f->impact = busy(ctx, v) ? 0.6 : 0.2;
    }
}

const struct rule rule_clock_app_clocks = {
    .id = "clock.app-clocks",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("Application clocks locked or reduced"),
    .explanation = N_(
        "The GPU's clocks were pinned below their default with nvidia-smi -ac (application clocks) "
        "or -lgc / -lmc (locked clocks): for a benchmark, for reproducible timings, to save power, "
        "or by a tuning script that was never undone. The GPU then never runs faster than that "
        "setting, whatever the load."),
    .detection =
        N_("application SM or memory clock below app_clock_low_pct of its default "
           "(nvmlDeviceGetApplicationsClock vs nvmlDeviceGetDefaultApplicationsClock); or "
           "the applications_clocks event reason while busy (gpu_busy_util_pct) with the SM "
           "clock below "
           "app_clock_low_pct of its maximum."),
    .fix = N_("Reset with sudo nvidia-smi -i N -rac (application clocks), -rgc (locked GPU clocks) "
              "and, where the memory clock is off its default, -rmc (locked memory clocks), and "
              "remove what sets them at boot."),
    .thresholds = THRESHOLDS(TH_APP_CLOCK_LOW_PCT, TH_GPU_BUSY_UTIL_PCT),
    .check = check_app_clocks,
};

/* ---- clock.low-pstate ---- */

#define LOW_PSTATE 5 /* P5 and lower-performance states (P8: idle clocks) */

static void check_low_pstate(const struct rule_ctx *ctx, struct findings *out)
{
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];
        const struct gpu *g = v->g;
        bool busy, procs_known = gpu_valid(g, GPU_S_PROCESSES) || ctx->facts->procs_known;
        bool clocks = gpu_valid(g, GPU_S_CLOCK_SM) && gpu_valid(g, GPU_S_CLOCK_SM_MAX) &&
                      g->clock_sm_max_mhz > 0;
        struct finding *f;

        if (g->handle_rc != 0 || !need_gpu(ctx, out, g, GPU_S_PSTATE) || g->pstate < LOW_PSTATE ||
            g->pstate > 15)
            continue;
        /* Judged against work: a low P-state on an idle GPU is what it should be. */
        busy = (v->util_valid && v->util_mean >= th(ctx, TH_GPU_BUSY_UTIL_PCT)) || v->n_compute > 0;
        if (!busy) {
            if (!v->util_valid && !procs_known)
                rule_skip(ctx, out, (int32_t)g->index,
                          "P%d with neither utilisation nor a process list to judge it against "
                          "work",
                          (int)g->pstate);
            continue;
        }
        /* Clocks, when known, must agree: near idle (a third of the maximum or less). */
        if (clocks && g->clock_sm_mhz * 3 > g->clock_sm_max_mhz)
            continue;
        f = finding_new(ctx, out, (int32_t)g->index, -1);
        finding_title(f, "GPU %" PRIu32 " held in P%d (low performance state) while it works",
                      g->index, (int)g->pstate);
        finding_evidence(f, "performance state P%d (P0 is full performance, P8 idle clocks)",
                         (int)g->pstate);
        if (v->util_valid)
            finding_evidence(f, "utilisation %.0f %% over %zu reading%s", v->util_mean, v->util_n,
                             v->util_n == 1 ? "" : "s");
        if (v->n_compute > 0)
            finding_evidence(f, "%zu compute process%s on it", v->n_compute,
                             v->n_compute == 1 ? "" : "es");
        if (clocks)
            finding_evidence(f, "SM clock %" PRIu32 " MHz of %" PRIu32 " MHz", g->clock_sm_mhz,
                             g->clock_sm_max_mhz);
        if (gpu_valid(g, GPU_S_EVENT_REASONS) && g->clocks_event_reasons != 0)
            finding_evidence(f,
                             "clock event reasons 0x%016" PRIx64 " (nvidia-smi -q -d "
                             "PERFORMANCE names them)",
                             g->clocks_event_reasons);
        finding_fix(f,
                    "nvidia-smi -i %" PRIu32 " -q -d PERFORMANCE,CLOCK   # why: power, thermal, "
                    "application clocks, or stuck",
                    g->index);
        /* Only what the evidence does not rule out: each line that would change nothing is
         * left out. Locked clocks (-lgc) are not read; the clock-setting reason shows them. */
        if (!gpu_valid(g, GPU_S_PERSISTENCE) || !g->persistence_mode)
            finding_fix(f, "sudo nvidia-smi -i %" PRIu32 " -pm 1   # persistence mode", g->index);
        if (sm_app_off(g) == 1 || mem_app_off(g) == 1 ||
            (sm_app_off(g) < 0 &&
             (!v->reasons_valid || (v->reasons_any & NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING))))
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -rac   # application clocks back to the "
                        "default",
                        g->index);
        if (v->reasons_valid ? (v->reasons_any & NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING) != 0
                             : sm_app_off(g) < 0)
            finding_fix(f,
                        "sudo nvidia-smi -i %" PRIu32 " -rgc   # locked GPU clocks back to the "
                        "default",
                        g->index);
        finding_fix(f,
                    "# if it stays low with the job running: drain GPU %" PRIu32 " and reset it "
                    "(nvidia-smi -r -i %" PRIu32 "), or reboot",
                    g->index, g->index);
        f->impact = 0.5;
    }
}

const struct rule rule_clock_low_pstate = {
    .id = "clock.low-pstate",
    .severity = SEV_WARNING,
    .category = CAT_CLOCKS,
    .title = N_("GPU held in a low P-state while it works"),
    .explanation = N_(
        "A GPU drops to a low performance state (P5-P8: idle clocks) when it has nothing to do, "
        "and climbs back to P0-P2 as soon as work arrives. One that stays in P5 or lower while a "
        "job computes on it runs that job at a fraction of its speed: the driver lost track of "
        "the load, application clocks were set low, or a power or thermal policy holds it down. "
        "The operators' usual remedy is persistence mode and default application clocks, and a "
        "reset when that does not help."),
    .detection = N_("performance state (nvmlDeviceGetPerformanceState) P5 or higher-numbered while "
                    "the GPU works: utilisation over the window at or above gpu_busy_util_pct, or "
                    "a compute process on it; when the SM clock and its maximum are known, only "
                    "with the clock at a third of the maximum or less. Not checked when neither "
                    "utilisation nor a process list is known."),
    .fix = N_("Look at the clock event reasons (nvidia-smi -q -d PERFORMANCE). Enable persistence "
              "mode where it is off, reset application clocks that differ from their defaults "
              "(nvidia-smi -rac) and locked clocks (-rgc); if the GPU stays low, drain and reset "
              "it or reboot."),
    .thresholds = THRESHOLDS(TH_GPU_BUSY_UTIL_PCT),
    .check = check_low_pstate,
};

/* ---- clock.persistence-off ---- */

static void check_persistence(const struct rule_ctx *ctx, struct findings *out)
{
    int32_t *off = xcalloc(ctx->facts->n_gpus ? ctx->facts->n_gpus : 1, sizeof(*off));
    size_t n_off = 0, n_known = 0;
    ssize_t slow;
    char list[128];
    struct finding *f;

    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (!need_gpu(ctx, out, g, GPU_S_PERSISTENCE))
            continue;
        n_known++;
        /* A GPU driving a display keeps the driver loaded anyway. */
        if (!g->persistence_mode && !(gpu_valid(g, GPU_S_DISPLAY_ACTIVE) && g->display_active))
            off[n_off++] = (int32_t)g->index;
    }
    if (n_off == 0) {
        free(off);
        return;
    }
    render_ranges(list, sizeof(list), off, n_off);
    f = finding_new(ctx, out, n_off == 1 ? off[0] : -1, -1);
    if (n_off > 1)
        finding_object(f, "GPUs %s", list);
    slow = reported_find(ctx, CUDAERR_SLOW_INIT, NULL);
    if (slow >= 0) {
        /* The user's tool gave up waiting for that initialisation: the setting is the cause. */
        f->severity = SEV_WARNING;
        finding_title(f,
                      "Persistence mode off on GPU%s %s: the driver initialises the GPUs for "
                      "every new client, and the error given timed out waiting for it",
                      n_off == 1 ? "" : "s", list);
        finding_evidence(f, "the error given: \"%s\"",
                         ctx->facts->snap->reported.errors[slow].text);
    } else {
        finding_title(f, "Persistence mode off on GPU%s %s", n_off == 1 ? "" : "s", list);
    }
    finding_evidence(f, "persistence mode disabled on %zu of %zu GPUs", n_off, n_known);
    finding_evidence(f, "each CUDA program start re-initialises the GPU (seconds), and settings "
                        "such as clocks and compute mode are lost when the last client exits");
    finding_fix(f, "sudo systemctl enable --now nvidia-persistenced   # the supported way");
    if (n_off == n_known)
        finding_fix(f, "sudo nvidia-smi -pm 1   # or: legacy persistence mode, until reboot");
    else
        for (size_t i = 0; i < n_off; i++)
            finding_fix(f, "sudo nvidia-smi -i %d -pm 1", off[i]);
    f->impact = slow >= 0 ? 0.6 : 0.05;
    free(off);
}

const struct rule rule_clock_persistence_off = {
    .id = "clock.persistence-off",
    .severity = SEV_INFO,
    .category = CAT_CLOCKS,
    .title = N_("Persistence mode off"),
    .explanation = N_(
        "Without persistence mode (or the nvidia-persistenced daemon) the driver tears a GPU's "
        "state down when its last client exits and builds it up again for the next: every job and "
        "every nvidia-smi call pays an initialisation of seconds on a large server, first kernels "
        "start slow, and settings such as application clocks or compute mode are forgotten. "
        "NVIDIA recommends nvidia-persistenced on Linux servers. GPUs that drive a display are not "
        "reported: the display keeps the driver loaded. Information, unless the error given with "
        "--error is a tool that timed out waiting for that initialisation (nvidia-container-cli's "
        "\"driver error: timed out\", which stops GPU containers from starting): then the setting "
        "is the cause, and a warning."),
    .detection = N_("persistence mode disabled (nvmlDeviceGetPersistenceMode) on a GPU without an "
                    "active display; one finding for all such GPUs; a warning when --error gave a "
                    "driver initialisation that timed out (data/cuda-errors.tsv kind slow_init)."),
    .fix = N_("Enable the daemon: sudo systemctl enable --now nvidia-persistenced. The legacy "
              "switch nvidia-smi -pm 1 also works until the next reboot."),
    .thresholds = NO_THRESHOLDS,
    .check = check_persistence,
};
