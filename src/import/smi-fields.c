/*
 * nvidia-smi -q's fields, for its text and its XML (-q -x) alike: one table from each place a
 * value is printed (the text's section path, the XML's tag path, across driver generations and
 * their renamings) to the snapshot's GPU field, and the values that need more than one line
 * (ECC counts summed over their kinds, clock event reasons into NVML's bitmask, processes).
 */
#include "import/import-impl.h"
#include "nvml/nvml-abi.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum special {
    SP_FIELD,      /* a GPU field: key, unit */
    SP_BUS,        /* the PCI address */
    SP_ECC,        /* a count added to an ECC total: arg ECC_* */
    SP_STATUS_OF,  /* a section printed as one status (N/A): its fields get it (keys) */
    SP_POWER_DRAW, /* the power draw under its several names */
    SP_PROCS,      /* the process list (a value: "None") */
    SP_PROC_NEW,   /* a process begins (XML process_info) */
    SP_PROC_GI,
    SP_PROC_CI,
    SP_PROC_PID,
    SP_PROC_TYPE,
    SP_PROC_NAME,
    SP_PROC_MEM,
    SP_MIG_DEVICES, /* "None", or a section of MIG devices */
    SP_MIG_DEVICE,  /* one MIG device */
};

#define ECC_AGG 1u /* aggregate, else volatile */
#define ECC_UNC 2u /* uncorrectable, else correctable */

struct smi_field {
    const char *text; /* path in -q text: sections joined by '/' (case does not matter) */
    const char *xml;  /* path in -q -x */
    enum special sp;
    const char *key; /* SP_FIELD: the gpu_table key */
    enum imp_unit unit;
    unsigned arg;
};

#define FIELD(text, xml, key, unit)                                                                \
    {                                                                                              \
        text, xml, SP_FIELD, key, unit, 0                                                          \
    }
#define ECC(text, xml, arg)                                                                        \
    {                                                                                              \
        text, xml, SP_ECC, NULL, IU_NUM, arg                                                       \
    }

static const struct smi_field fields[] = {
    FIELD("Product Name", "product_name", "name", IU_STR),
    FIELD("GPU UUID", "uuid", "uuid", IU_STR),
    FIELD("Serial Number", "serial", "serial", IU_STR),
    FIELD("VBIOS Version", "vbios_version", "vbios_version", IU_STR),
    FIELD("Minor Number", "minor_number", "minor_number", IU_NUM),
    FIELD("Persistence Mode", "persistence_mode", "persistence_mode", IU_BOOL),
    FIELD("Display Mode", "display_mode", "display_mode", IU_BOOL),
    FIELD("Display Active", "display_active", "display_active", IU_BOOL),
    FIELD("MIG Mode/Current", "mig_mode/current_mig", "mig_mode", IU_BOOL),
    FIELD("MIG Mode/Pending", "mig_mode/pending_mig", "mig_mode_pending", IU_BOOL),
    { "MIG Devices", "mig_devices", SP_MIG_DEVICES, NULL, IU_STR, 0 },
    { "MIG Devices/MIG Device", "mig_devices/mig_device", SP_MIG_DEVICE, NULL, IU_STR, 0 },
    { "PCI/Bus Id", "pci/pci_bus_id", SP_BUS, NULL, IU_STR, 0 },
    FIELD("PCI/Device Id", "pci/pci_device_id", "pci_device_id", IU_HEX),
    FIELD("PCI/Sub System Id", "pci/pci_sub_system_id", "pci_subsystem_id", IU_HEX),
    FIELD("PCI/GPU Link Info/PCIe Generation/Max", "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
          "pcie_gen_max", IU_NUM),
    FIELD("PCI/GPU Link Info/PCIe Generation/Current",
          "pci/pci_gpu_link_info/pcie_gen/current_link_gen", "pcie_gen", IU_NUM),
    FIELD("PCI/GPU Link Info/PCIe Generation/Device Max",
          "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen", "pcie_gen_gpu_max", IU_NUM),
    FIELD("PCI/GPU Link Info/Link Width/Max", "pci/pci_gpu_link_info/link_widths/max_link_width",
          "pcie_width_max", IU_WIDTH),
    FIELD("PCI/GPU Link Info/Link Width/Current",
          "pci/pci_gpu_link_info/link_widths/current_link_width", "pcie_width", IU_WIDTH),
    FIELD("PCI/Replays Since Reset", "pci/replay_counter", "pcie_replay_count", IU_NUM),
    FIELD("PCI/Tx Throughput", "pci/tx_util", "pcie_tx_bytes_per_s", IU_KBS),
    FIELD("PCI/Rx Throughput", "pci/rx_util", "pcie_rx_bytes_per_s", IU_KBS),
    FIELD("Fan Speed", "fan_speed", "fan_speed_pct", IU_PCT),
    FIELD("Performance State", "performance_state", "pstate", IU_PSTATE),
    FIELD("FB Memory Usage/Total", "fb_memory_usage/total", "mem_total_bytes", IU_MIB),
    FIELD("FB Memory Usage/Reserved", "fb_memory_usage/reserved", "mem_reserved_bytes", IU_MIB),
    FIELD("FB Memory Usage/Used", "fb_memory_usage/used", "mem_used_bytes", IU_MIB),
    FIELD("FB Memory Usage/Free", "fb_memory_usage/free", "mem_free_bytes", IU_MIB),
    FIELD("BAR1 Memory Usage/Total", "bar1_memory_usage/total", "bar1_total_bytes", IU_MIB),
    FIELD("BAR1 Memory Usage/Used", "bar1_memory_usage/used", "bar1_used_bytes", IU_MIB),
    FIELD("Compute Mode", "compute_mode", "compute_mode", IU_COMPUTE),
    FIELD("Utilization/Gpu", "utilization/gpu_util", "util_gpu_pct", IU_PCT),
    FIELD("Utilization/Memory", "utilization/memory_util", "util_mem_pct", IU_PCT),
    FIELD("Utilization/Encoder", "utilization/encoder_util", "util_enc_pct", IU_PCT),
    FIELD("Utilization/Decoder", "utilization/decoder_util", "util_dec_pct", IU_PCT),
    FIELD("Ecc Mode/Current", "ecc_mode/current_ecc", "ecc_mode", IU_BOOL),
    FIELD("Ecc Mode/Pending", "ecc_mode/pending_ecc", "ecc_mode_pending", IU_BOOL),
    /* ECC counts: before R450 by bit count, since by memory kind (and SRAM split in R535). */
    ECC("ECC Errors/Volatile/Single Bit/Total", "ecc_errors/volatile/single_bit/total", 0),
    ECC("ECC Errors/Volatile/Double Bit/Total", "ecc_errors/volatile/double_bit/total", ECC_UNC),
    ECC("ECC Errors/Volatile/SRAM Correctable", "ecc_errors/volatile/sram_correctable", 0),
    ECC("ECC Errors/Volatile/DRAM Correctable", "ecc_errors/volatile/dram_correctable", 0),
    ECC("ECC Errors/Volatile/SRAM Uncorrectable", "ecc_errors/volatile/sram_uncorrectable",
        ECC_UNC),
    ECC("ECC Errors/Volatile/SRAM Uncorrectable Parity",
        "ecc_errors/volatile/sram_uncorrectable_parity", ECC_UNC),
    ECC("ECC Errors/Volatile/SRAM Uncorrectable SEC-DED",
        "ecc_errors/volatile/sram_uncorrectable_secded", ECC_UNC),
    ECC("ECC Errors/Volatile/DRAM Uncorrectable", "ecc_errors/volatile/dram_uncorrectable",
        ECC_UNC),
    ECC("ECC Errors/Aggregate/Single Bit/Total", "ecc_errors/aggregate/single_bit/total", ECC_AGG),
    ECC("ECC Errors/Aggregate/Double Bit/Total", "ecc_errors/aggregate/double_bit/total",
        ECC_AGG | ECC_UNC),
    ECC("ECC Errors/Aggregate/SRAM Correctable", "ecc_errors/aggregate/sram_correctable", ECC_AGG),
    ECC("ECC Errors/Aggregate/DRAM Correctable", "ecc_errors/aggregate/dram_correctable", ECC_AGG),
    ECC("ECC Errors/Aggregate/SRAM Uncorrectable", "ecc_errors/aggregate/sram_uncorrectable",
        ECC_AGG | ECC_UNC),
    ECC("ECC Errors/Aggregate/SRAM Uncorrectable Parity",
        "ecc_errors/aggregate/sram_uncorrectable_parity", ECC_AGG | ECC_UNC),
    ECC("ECC Errors/Aggregate/SRAM Uncorrectable SEC-DED",
        "ecc_errors/aggregate/sram_uncorrectable_secded", ECC_AGG | ECC_UNC),
    ECC("ECC Errors/Aggregate/DRAM Uncorrectable", "ecc_errors/aggregate/dram_uncorrectable",
        ECC_AGG | ECC_UNC),
    FIELD("Retired Pages/Single Bit ECC",
          "retired_pages/multiple_single_bit_retirement/retired_count", "retired_pages_sbe",
          IU_NUM),
    FIELD("Retired Pages/Double Bit ECC", "retired_pages/double_bit_retirement/retired_count",
          "retired_pages_dbe", IU_NUM),
    FIELD("Retired Pages/Pending Page Blacklist", "retired_pages/pending_blacklist",
          "retired_pages_pending", IU_BOOL),
    FIELD("Retired Pages/Pending Page Retirement", "retired_pages/pending_retirement",
          "retired_pages_pending", IU_BOOL),
    FIELD("Retired Pages/Pending", NULL, "retired_pages_pending", IU_BOOL),
    FIELD("Remapped Rows/Correctable Error", "remapped_rows/remapped_row_corr",
          "remapped_rows_correctable", IU_NUM),
    FIELD("Remapped Rows/Uncorrectable Error", "remapped_rows/remapped_row_unc",
          "remapped_rows_uncorrectable", IU_NUM),
    FIELD("Remapped Rows/Pending", "remapped_rows/remapped_row_pending", "remapped_rows_pending",
          IU_BOOL),
    FIELD("Remapped Rows/Remapping Failure Occurred", "remapped_rows/remapped_row_failure",
          "remapped_rows_failure", IU_BOOL),
    { "Remapped Rows", "remapped_rows", SP_STATUS_OF, "remapped_rows_", IU_STR, 0 },
    { "Retired Pages", "retired_pages", SP_STATUS_OF, "retired_pages_", IU_STR, 0 },
    { "Ecc Mode", "ecc_mode", SP_STATUS_OF, "ecc_mode", IU_STR, 0 },
    FIELD("Temperature/GPU Current Temp", "temperature/gpu_temp", "temp_c", IU_C),
    FIELD("Temperature/GPU Shutdown Temp", "temperature/gpu_temp_max_threshold", "temp_shutdown_c",
          IU_C),
    FIELD("Temperature/GPU Slowdown Temp", "temperature/gpu_temp_slow_threshold", "temp_slowdown_c",
          IU_C),
    FIELD("Temperature/GPU Max Operating Temp", "temperature/gpu_temp_max_gpu_threshold",
          "temp_gpu_max_c", IU_C),
    FIELD("Temperature/Memory Max Operating Temp", "temperature/gpu_temp_max_mem_threshold",
          "temp_mem_max_c", IU_C),
    /* Power: "Power Readings" before R530; "GPU Power Readings" since, with new names. */
    { "Power Readings/Power Draw", "power_readings/power_draw", SP_POWER_DRAW, NULL, IU_W, 0 },
    { "GPU Power Readings/Power Draw", "gpu_power_readings/power_draw", SP_POWER_DRAW, NULL, IU_W,
      0 },
    { "GPU Power Readings/Average Power Draw", "gpu_power_readings/average_power_draw",
      SP_POWER_DRAW, NULL, IU_W, 0 },
    { "GPU Power Readings/Instantaneous Power Draw", "gpu_power_readings/instant_power_draw",
      SP_POWER_DRAW, NULL, IU_W, 0 },
    FIELD("Power Readings/Power Limit", "power_readings/power_limit", "power_limit_mw", IU_W),
    FIELD("Power Readings/Default Power Limit", "power_readings/default_power_limit",
          "power_default_limit_mw", IU_W),
    FIELD("Power Readings/Enforced Power Limit", "power_readings/enforced_power_limit",
          "power_enforced_limit_mw", IU_W),
    FIELD("Power Readings/Min Power Limit", "power_readings/min_power_limit", "power_min_limit_mw",
          IU_W),
    FIELD("Power Readings/Max Power Limit", "power_readings/max_power_limit", "power_max_limit_mw",
          IU_W),
    FIELD("GPU Power Readings/Requested Power Limit", "gpu_power_readings/requested_power_limit",
          "power_limit_mw", IU_W),
    FIELD("GPU Power Readings/Current Power Limit", "gpu_power_readings/current_power_limit",
          "power_enforced_limit_mw", IU_W),
    FIELD("GPU Power Readings/Default Power Limit", "gpu_power_readings/default_power_limit",
          "power_default_limit_mw", IU_W),
    FIELD("GPU Power Readings/Min Power Limit", "gpu_power_readings/min_power_limit",
          "power_min_limit_mw", IU_W),
    FIELD("GPU Power Readings/Max Power Limit", "gpu_power_readings/max_power_limit",
          "power_max_limit_mw", IU_W),
    FIELD("Clocks/Graphics", "clocks/graphics_clock", "clock_graphics_mhz", IU_MHZ),
    FIELD("Clocks/SM", "clocks/sm_clock", "clock_sm_mhz", IU_MHZ),
    FIELD("Clocks/Memory", "clocks/mem_clock", "clock_mem_mhz", IU_MHZ),
    FIELD("Clocks/Video", "clocks/video_clock", "clock_video_mhz", IU_MHZ),
    FIELD("Max Clocks/Graphics", "max_clocks/graphics_clock", "clock_graphics_max_mhz", IU_MHZ),
    FIELD("Max Clocks/SM", "max_clocks/sm_clock", "clock_sm_max_mhz", IU_MHZ),
    FIELD("Max Clocks/Memory", "max_clocks/mem_clock", "clock_mem_max_mhz", IU_MHZ),
    /* nvidia-smi prints the graphics application clock; NVML sets SM and graphics together. */
    FIELD("Applications Clocks/Graphics", "applications_clocks/graphics_clock", "clock_sm_app_mhz",
          IU_MHZ),
    FIELD("Applications Clocks/Memory", "applications_clocks/mem_clock", "clock_mem_app_mhz",
          IU_MHZ),
    FIELD("Default Applications Clocks/Graphics", "default_applications_clocks/graphics_clock",
          "clock_sm_app_default_mhz", IU_MHZ),
    FIELD("Default Applications Clocks/Memory", "default_applications_clocks/mem_clock",
          "clock_mem_app_default_mhz", IU_MHZ),
    { "Processes", "processes", SP_PROCS, NULL, IU_STR, 0 },
    { NULL, "processes/process_info", SP_PROC_NEW, NULL, IU_STR, 0 },
    { "Processes/GPU instance ID", "processes/process_info/gpu_instance_id", SP_PROC_GI, NULL,
      IU_NUM, 0 },
    { "Processes/Compute instance ID", "processes/process_info/compute_instance_id", SP_PROC_CI,
      NULL, IU_NUM, 0 },
    { "Processes/Process ID", "processes/process_info/pid", SP_PROC_PID, NULL, IU_NUM, 0 },
    { "Processes/Process ID/Type", "processes/process_info/type", SP_PROC_TYPE, NULL, IU_STR, 0 },
    { "Processes/Process ID/Name", "processes/process_info/process_name", SP_PROC_NAME, NULL,
      IU_STR, 0 },
    { "Processes/Process ID/Used GPU Memory", "processes/process_info/used_memory", SP_PROC_MEM,
      NULL, IU_MIB, 0 },
};

/* Clock event reasons (named "throttle" reasons before R535): the label, the XML tag's end. */
static const struct {
    const char *label, *tag;
    uint64_t bit;
} reasons[] = {
    { "Idle", "gpu_idle", NVML_CLOCKS_EVENT_GPU_IDLE },
    { "Applications Clocks Setting", "applications_clocks_setting",
      NVML_CLOCKS_EVENT_APP_CLOCKS_SETTING },
    { "SW Power Cap", "sw_power_cap", NVML_CLOCKS_EVENT_SW_POWER_CAP },
    { "HW Slowdown", "hw_slowdown", NVML_CLOCKS_EVENT_HW_SLOWDOWN },
    { "HW Thermal Slowdown", "hw_thermal_slowdown", NVML_CLOCKS_EVENT_HW_THERMAL },
    { "HW Power Brake Slowdown", "hw_power_brake_slowdown", NVML_CLOCKS_EVENT_HW_POWER_BRAKE },
    { "Sync Boost", "sync_boost", NVML_CLOCKS_EVENT_SYNC_BOOST },
    { "SW Thermal Slowdown", "sw_thermal_slowdown", NVML_CLOCKS_EVENT_SW_THERMAL },
    { "Display Clock Setting", "display_clocks_setting", NVML_CLOCKS_EVENT_DISPLAY_CLOCK },
};

struct pending_proc {
    bool open, has_pid, has_gi, has_ci, has_used;
    uint32_t pid, gi, ci, type_mask;
    uint64_t used;
    bool used_na;
    char *name;
    unsigned long line;
};

struct smi_gpu {
    struct imp *im;
    struct gpu *g;
    uint64_t reasons, reasons_supported;
    bool reasons_seen;
    int32_t reasons_rc;
    uint64_t ecc[2][2];
    bool ecc_value[2][2];
    int32_t ecc_rc[2][2];
    int32_t ecc_failed[2][2]; /* a part that could not be read (not "N/A"): the sum is unknown */
    bool procs_seen, procs_none;
    struct pending_proc proc;
    size_t mig_devices;
    bool mig_seen;
};

struct smi_gpu *smi_gpu_begin(struct imp *im, struct gpu *g)
{
    struct smi_gpu *sg = xcalloc(1, sizeof(*sg));

    sg->im = im;
    sg->g = g;
    for (int a = 0; a < 2; a++) {
        for (int u = 0; u < 2; u++)
            sg->ecc_rc[a][u] = JF_RC_NOT_COLLECTED;
    }
    sg->reasons_rc = JF_RC_NOT_COLLECTED;
    return sg;
}

/* Case-insensitive path comparison, runs of blanks equal to one blank. */
static bool path_is(const char *a, const char *b)
{
    while (*a && *b) {
        if (*a == ' ' && *b == ' ') {
            while (*a == ' ')
                a++;
            while (*b == ' ')
                b++;
            continue;
        }
        if ((*a | 0x20) != (*b | 0x20) && !(*a == *b))
            return false;
        a++;
        b++;
    }
    return *a == '\0' && *b == '\0';
}

static const struct smi_field *lookup(const char *path, bool xml)
{
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++) {
        const char *p = xml ? fields[i].xml : fields[i].text;

        if (p != NULL && path_is(path, p))
            return &fields[i];
    }
    return NULL;
}

static void proc_commit(struct smi_gpu *sg)
{
    struct pending_proc *pp = &sg->proc;
    struct gpu_proc *p;

    if (pp->open && pp->has_pid) {
        p = imp_gpu_proc(sg->im, sg->g, pp->pid, pp->line);
        if (p != NULL) {
            p->type_mask = pp->type_mask ? pp->type_mask : GPU_PROC_COMPUTE;
            if (pp->has_used) {
                p->used_bytes = pp->used;
                p->valid |= UINT64_C(1) << GPU_PROC_S_USED;
            }
            if (pp->has_gi && pp->has_ci) {
                p->gpu_instance_id = pp->gi;
                p->compute_instance_id = pp->ci;
                p->valid |= UINT64_C(1) << GPU_PROC_S_INSTANCE;
            }
            imp_proc_name(sg->im, pp->pid, pp->name);
        }
    }
    free(pp->name);
    memset(pp, 0, sizeof(*pp));
}

static void proc_open(struct smi_gpu *sg, unsigned long line)
{
    proc_commit(sg);
    sg->proc.open = true;
    sg->proc.line = line;
}

static uint32_t type_mask(const char *v)
{
    uint32_t m = 0;

    for (const char *c = v; *c; c++) {
        if (*c == 'C')
            m |= GPU_PROC_COMPUTE;
        else if (*c == 'G')
            m |= GPU_PROC_GRAPHICS;
        else if (*c == 'M')
            m |= GPU_PROC_MPS;
    }
    return m;
}

static void reason(struct smi_gpu *sg, size_t k, const char *value, unsigned long line)
{
    uint64_t on;
    int32_t rc;

    sg->reasons_seen = true;
    if (imp_status(value, &rc)) {
        if (sg->reasons_rc == JF_RC_NOT_COLLECTED)
            sg->reasons_rc = rc;
        return; /* not supported: its bit stays out of both masks */
    }
    if (!imp_value(value, IU_BOOL, &on)) {
        imp_note(sg->im, COLLECTOR_NVML, line,
                 "GPU %u: clock event reason %s: \"%.40s\" is not "
                 "Active or Not Active",
                 sg->g->index, reasons[k].label, value);
        return;
    }
    sg->reasons_supported |= reasons[k].bit;
    if (on)
        sg->reasons |= reasons[k].bit;
}

static void ecc(struct smi_gpu *sg, unsigned arg, const char *value, unsigned long line)
{
    int a = (arg & ECC_AGG) != 0, u = (arg & ECC_UNC) != 0;
    uint64_t n;
    int32_t rc;

    if (imp_status(value, &rc)) {
        if (sg->ecc_rc[a][u] == JF_RC_NOT_COLLECTED)
            sg->ecc_rc[a][u] = rc;
        /* "N/A": this kind of memory has no counter; "[Unknown Error]": it has one, unread */
        if (rc != NVML_ERROR_NOT_SUPPORTED && sg->ecc_failed[a][u] == 0)
            sg->ecc_failed[a][u] = rc;
        return;
    }
    if (!imp_value(value, IU_NUM, &n)) {
        imp_note(sg->im, COLLECTOR_NVML, line, "GPU %u: ECC count \"%.40s\" is not a number",
                 sg->g->index, value);
        return;
    }
    sg->ecc[a][u] = sg->ecc[a][u] + n < sg->ecc[a][u] ? UINT64_MAX : sg->ecc[a][u] + n;
    sg->ecc_value[a][u] = true;
}

static void status_of(struct smi_gpu *sg, const char *prefix, const char *value)
{
    int32_t rc;

    if (!imp_status(value, &rc))
        return;
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];

        if (f->slot >= 0 && f->type != JF_NONE && strncmp(f->name, prefix, strlen(prefix)) == 0)
            imp_gpu_set_rc(sg->g, f->name, rc);
    }
}

static void apply(struct smi_gpu *sg, const struct smi_field *f, const char *value,
                  unsigned long line)
{
    struct pending_proc *pp = &sg->proc;
    struct gpu *g = sg->g;
    uint64_t x;
    int32_t rc;

    switch (f->sp) {
    case SP_FIELD:
        imp_gpu_set(sg->im, g, f->key, value, f->unit, line);
        return;
    case SP_BUS: {
        char pci[32];

        if (!gpu_valid(g, GPU_S_PCI_BUS_ID) && imp_pci_nvml(value, pci, sizeof(pci)))
            imp_gpu_set(sg->im, g, "pci_bus_id", pci, IU_STR, line);
        return;
    }
    case SP_ECC:
        ecc(sg, f->arg, value, line);
        return;
    case SP_STATUS_OF:
        status_of(sg, f->key, value);
        return;
    case SP_POWER_DRAW:
        imp_gpu_set(sg->im, g, "power_mw", value, IU_W, line);
        return;
    case SP_PROCS:
        sg->procs_seen = true;
        if (strcasecmp(value, "None") == 0)
            sg->procs_none = true;
        else if (imp_status(value, &rc))
            imp_gpu_set_rc(g, "processes", rc);
        return;
    case SP_PROC_NEW:
        proc_open(sg, line);
        return;
    case SP_PROC_GI:
    case SP_PROC_CI:
        /* In the text a process's lines start with its instance ids (R450 on), or its pid. */
        if (!pp->open || pp->has_pid || (f->sp == SP_PROC_GI && (pp->has_gi || pp->has_ci)))
            proc_open(sg, line);
        if (imp_value(value, IU_NUM, &x) && x <= UINT32_MAX) {
            if (f->sp == SP_PROC_GI) {
                pp->gi = (uint32_t)x;
                pp->has_gi = true;
            } else {
                pp->ci = (uint32_t)x;
                pp->has_ci = true;
            }
        }
        return;
    case SP_PROC_PID:
        if (!pp->open || pp->has_pid)
            proc_open(sg, line);
        if (imp_value(value, IU_NUM, &x) && x > 0 && x <= PROC_PID_MAX) {
            pp->pid = (uint32_t)x;
            pp->has_pid = true;
        } else {
            imp_note(sg->im, COLLECTOR_NVML, line, "GPU %u: process id \"%.40s\" left out",
                     g->index, value);
        }
        return;
    case SP_PROC_TYPE:
        pp->type_mask = type_mask(value);
        return;
    case SP_PROC_NAME:
        free(pp->name);
        pp->name = xstrdup(value);
        return;
    case SP_PROC_MEM:
        if (imp_value(value, IU_MIB, &x)) {
            pp->used = x;
            pp->has_used = true;
        }
        return;
    case SP_MIG_DEVICES:
        sg->mig_seen = true;
        if (imp_status(value, &rc))
            imp_gpu_set_rc(g, "mig_devices", rc);
        return;
    case SP_MIG_DEVICE:
        sg->mig_devices++;
        return;
    }
}

/* The clock event reason of a text path, or -1. */
static int text_reason(const char *path)
{
    const char *leaf;

    if (!imp_starts(path, "Clocks Throttle Reasons/") && !imp_starts(path, "Clocks Event Reasons/"))
        return -1;
    leaf = strrchr(path, '/') + 1;
    for (size_t k = 0; k < ARRAY_SIZE(reasons); k++) {
        if (path_is(leaf, reasons[k].label))
            return (int)k;
    }
    return -1;
}

static int xml_reason(const char *path)
{
    const char *tag;

    if (imp_starts(path, "clocks_throttle_reasons/clocks_throttle_reason_"))
        tag = path + strlen("clocks_throttle_reasons/clocks_throttle_reason_");
    else if (imp_starts(path, "clocks_event_reasons/clocks_event_reason_"))
        tag = path + strlen("clocks_event_reasons/clocks_event_reason_");
    else
        return -1;
    for (size_t k = 0; k < ARRAY_SIZE(reasons); k++) {
        if (strcmp(tag, reasons[k].tag) == 0)
            return (int)k;
    }
    return -1;
}

void smi_gpu_text(struct smi_gpu *sg, const char *path, const char *value, unsigned long line)
{
    const struct smi_field *f;
    int k = text_reason(path);

    if (k >= 0) {
        reason(sg, (size_t)k, value, line);
        return;
    }
    if (path_is(path, "Clocks Throttle Reasons") || path_is(path, "Clocks Event Reasons")) {
        int32_t rc;

        if (imp_status(value, &rc))
            sg->reasons_rc = rc;
        return;
    }
    f = lookup(path, false);
    if (f != NULL)
        apply(sg, f, value, line);
}

void smi_gpu_xml(struct smi_gpu *sg, const char *path, const char *value, unsigned long line)
{
    const struct smi_field *f;
    int k = xml_reason(path);

    if (k >= 0) {
        reason(sg, (size_t)k, value, line);
        return;
    }
    f = lookup(path, true);
    if (f != NULL)
        apply(sg, f, value, line);
}

void smi_gpu_section(struct smi_gpu *sg, const char *path, bool xml, unsigned long line)
{
    const struct smi_field *f = lookup(path, xml);

    if (f == NULL)
        return;
    switch (f->sp) {
    case SP_PROCS:
        sg->procs_seen = true;
        return;
    case SP_PROC_NEW:
    case SP_MIG_DEVICE:
        apply(sg, f, "", line);
        return;
    case SP_MIG_DEVICES:
        sg->mig_seen = true;
        return;
    default:
        return;
    }
}

static void ecc_total(struct smi_gpu *sg, int a, int u, const char *key)
{
    if (sg->ecc_failed[a][u] != 0)
        imp_gpu_set_rc(sg->g, key, sg->ecc_failed[a][u]);
    else if (sg->ecc_value[a][u])
        imp_gpu_set_u64(sg->g, key, sg->ecc[a][u]);
    else if (sg->ecc_rc[a][u] != JF_RC_NOT_COLLECTED)
        imp_gpu_set_rc(sg->g, key, sg->ecc_rc[a][u]);
}

void smi_gpu_end(struct smi_gpu *sg, bool complete)
{
    struct gpu *g = sg->g;

    proc_commit(sg);
    ecc_total(sg, 0, 0, "ecc_volatile_corrected");
    ecc_total(sg, 0, 1, "ecc_volatile_uncorrected");
    ecc_total(sg, 1, 0, "ecc_aggregate_corrected");
    ecc_total(sg, 1, 1, "ecc_aggregate_uncorrected");
    if (sg->reasons_supported != 0) {
        imp_gpu_set_u64(g, "clocks_event_reasons", sg->reasons);
        imp_gpu_set_u64(g, "clocks_event_reasons_supported", sg->reasons_supported);
    } else if (sg->reasons_rc != JF_RC_NOT_COLLECTED) {
        imp_gpu_set_rc(g, "clocks_event_reasons", sg->reasons_rc);
        imp_gpu_set_rc(g, "clocks_event_reasons_supported", sg->reasons_rc);
    }
    if (sg->mig_seen && g->rc[GPU_S_MIG_DEVICES] == JF_RC_NOT_COLLECTED)
        imp_gpu_set_u64(g, "mig_devices", sg->mig_devices);
    /* A process list cut short by the end of a paste is not the whole list. */
    if (sg->procs_seen && (complete || sg->procs_none))
        imp_gpu_procs_known(sg->im, g);
    else if (sg->procs_seen)
        imp_note(sg->im, COLLECTOR_NVML, 0,
                 "GPU %u: the process list may be cut short: not taken as the whole list",
                 g->index);
    free(sg);
}

/* ---- the top of the output ---- */

void smi_top(struct imp *im, const char *key, const char *value, unsigned long line)
{
    struct nvml_system *n = &im->s->nvml;
    int32_t cuda, rc;

    if (path_is(key, "Timestamp") || path_is(key, "timestamp")) {
        imp_time(im, imp_time_ctime(value));
    } else if (path_is(key, "Driver Version") || path_is(key, "driver_version")) {
        if (n->driver_version == NULL && *value) {
            n->driver_version = str_sanitized(value);
            n->driver_version_rc = 0;
        }
    } else if (path_is(key, "CUDA Version") || path_is(key, "cuda_version")) {
        if (n->cuda_driver_version_rc != 0 && imp_cuda_version(value, &cuda)) {
            n->cuda_driver_version = cuda;
            n->cuda_driver_version_rc = 0;
        } else if (n->cuda_driver_version_rc != 0 && imp_status(value, &rc)) {
            /* "N/A": not supported; "Not Found" (a -d subset): not asked, left unknown */
            if (rc == NVML_ERROR_NOT_SUPPORTED)
                n->cuda_driver_version_rc = rc;
        } else if (n->cuda_driver_version_rc != 0) {
            imp_note(im, COLLECTOR_NVML, line, "CUDA version \"%.40s\" not read", value);
        }
    } else if (path_is(key, "Attached GPUs") || path_is(key, "attached_gpus")) {
        uint64_t x;

        if (imp_value(value, IU_NUM, &x) && x <= UINT32_MAX && n->device_count_rc != 0)
            n->device_count = (uint32_t)x;
    }
}

void smi_top_end(struct imp *im, size_t n_gpus, bool complete, unsigned long line)
{
    struct nvml_system *n = &im->s->nvml;

    /* NVML answered: nvidia-smi printed what it read. */
    if (!n->attempted) {
        n->attempted = true;
        n->init_rc = 0;
        n->load_error = 0;
    }
    /* The list of GPUs is complete only when every GPU attached was read. */
    if (n->device_count_rc != 0 && complete && n->device_count == n_gpus)
        n->device_count_rc = 0;
    smi_listed_end(im, n_gpus, complete, line);
}

void smi_listed_end(struct imp *im, size_t n_gpus, bool complete, unsigned long line)
{
    const struct nvml_system *n = &im->s->nvml;

    /* Then the order of its blocks is NVML's: nvidia-smi -q lists the GPUs by index. */
    if (complete && n_gpus > 0 && n->device_count == n_gpus) {
        for (size_t i = 0; i < im->s->n_gpus; i++)
            im->s->gpus[i].index_by_order = false;
        return;
    }
    for (size_t i = 0; i < im->s->n_gpus && n_gpus > 0; i++) {
        if (!im->s->gpus[i].index_by_order)
            continue;
        if (n->device_count > 0)
            imp_note(im, COLLECTOR_NVML, line,
                     "the output lists %zu of %" PRIu32 " GPUs attached: they are numbered in "
                     "its order, not by nvidia-smi's index, and fix lines name them by UUID or "
                     "PCI address",
                     n_gpus, n->device_count);
        else
            imp_note(im, COLLECTOR_NVML, line,
                     "the output does not say how many GPUs are attached: its GPUs are numbered "
                     "in its order, not by nvidia-smi's index, and fix lines name them by UUID "
                     "or PCI address");
        return;
    }
}
