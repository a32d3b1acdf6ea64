/* The fabric section's field tables and codec. */
#include "snapshot/snap-fabric.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

const char *const fabric_nvswitch_proc_names[] = { "present", "absent", "unreadable", NULL };

/* driver_bound and bios_version have validity bits: snapshots written before they were read
 * have neither key, and read back with both unknown. */
static const struct jfield switch_fields[] = {
    { "pci_address", JF_STR, offsetof(struct fabric_switch, pci_address), -1, JF_ID, NULL,
      "/sys/bus/pci/devices", "the NVSwitch's PCI function" },
    { "device_id", JF_HEX32, offsetof(struct fabric_switch, device_id), -1, 0, NULL,
      "/sys/bus/pci/devices/ADDR/device", "its PCI device id" },
    { "driver_bound", JF_BOOL, offsetof(struct fabric_switch, driver_bound), FSW_S_DRIVER, 0, NULL,
      "/proc/driver/nvidia-nvswitch/devices/ADDR",
      "the NVSwitch driver took it (its probe succeeded); null when its view was not read" },
    { "bios_version", JF_STR, offsetof(struct fabric_switch, bios_version), FSW_S_BIOS, 0, NULL,
      "/proc/driver/nvidia-nvswitch/devices/ADDR/information",
      "its BIOS version (96.10.6d.00.01); null when the driver gave none (N/A) or was not read" },
};

const struct jtable fabric_switch_table = {
    "NVSwitch",
    switch_fields,
    ARRAY_SIZE(switch_fields),
    JT_BITS,
    offsetof(struct fabric_switch, valid),
    NULL,
};

static const struct jfield log_line_fields[] = {
    { "text", JF_STR, offsetof(struct fabric_log_line, text), -1, 0, NULL,
      "/var/log/fabricmanager.log", "the line, with control characters replaced" },
};

const struct jtable fabric_log_line_table = {
    "Fabric Manager log line", log_line_fields, ARRAY_SIZE(log_line_fields), JT_NONE, 0, NULL,
};

#define F(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct fabric_info, member), slot, 0, NULL, source, doc                \
    }
static const struct jfield info_fields[] = {
    { "switches", JF_NONE, 0, FABRIC_S_SWITCHES, 0, NULL, "/sys/bus/pci/devices",
      "the NVSwitches on the PCI bus (vendor 0x10de, class 0x0680xx); empty when none" },
    { "nvswitch_proc", JF_ENUM, offsetof(struct fabric_info, nvswitch_proc), FABRIC_S_NVSW, 0,
      fabric_nvswitch_proc_names, "/proc/driver/nvidia-nvswitch",
      "whether the NVSwitch driver's view is there (present: the nvidia module's NVSwitch part "
      "is loaded); null when not looked at" },
    F("fm_binary", JF_BOOL, fm_binary, FABRIC_S_BINARY, "/usr/bin/nv-fabricmanager",
      "the Fabric Manager program is installed"),
    F("fm_packaged", JF_BOOL, fm_packaged, FABRIC_S_PACKAGE, "/var/lib/dpkg/status",
      "dpkg lists a Fabric Manager package as installed"),
    F("fm_package", JF_STR, fm_package, -1, "/var/lib/dpkg/status",
      "that package (nvidia-fabricmanager-550), null when none"),
    F("fm_package_version", JF_STR, fm_package_version, -1, "/var/lib/dpkg/status",
      "its version as dpkg records it (550.54.15-1)"),
    F("fm_version", JF_STR, fm_version, FABRIC_S_VERSION, "/var/lib/dpkg/status, the log",
      "Fabric Manager's version (550.54.15): must equal the driver's"),
    F("fm_version_from", JF_STR, fm_version_from, FABRIC_S_VERSION, "",
      "where fm_version was read: dpkg, or log (its last start line)"),
    F("fm_running", JF_BOOL, fm_running, FABRIC_S_PROCESS, "/proc/PID/comm",
      "a process named nv-fabricmanager runs"),
    F("fm_pid", JF_I32, fm_pid, FABRIC_S_PID, "/proc", "its process id"),
    F("fm_enabled", JF_BOOL, fm_enabled, FABRIC_S_UNIT,
      "/etc/systemd/system/*.wants, /lib/systemd/system",
      "nvidia-fabricmanager.service is enabled (started at boot)"),
    F("log_path", JF_STR, log_path, -1, "", "the Fabric Manager log read, null when none was"),
    F("log_started", JF_BOOL, log_started, FABRIC_S_LOG, "/var/log/fabricmanager.log",
      "the log has a start line; errors are counted from the last one"),
    F("log_errors", JF_U32, log_errors, FABRIC_S_LOG, "/var/log/fabricmanager.log",
      "error lines since Fabric Manager last started (in the last 4 MiB of the log)"),
    { "log_lines", JF_NONE, 0, FABRIC_S_LOG, 0, NULL, "/var/log/fabricmanager.log",
      "the last error lines, oldest first (at most 5)" },
};
#undef F

const struct jtable fabric_info_table = {
    "NVSwitch and Fabric Manager",       info_fields, ARRAY_SIZE(info_fields), JT_BITS,
    offsetof(struct fabric_info, valid), NULL,
};

bool fabric_valid(const struct fabric_info *f, int slot)
{
    return (f->valid >> slot) & 1u;
}

bool fabric_switch_valid(const struct fabric_switch *sw, int slot)
{
    return (sw->valid >> slot) & 1u;
}

void fabric_info_free(struct fabric_info *f)
{
    for (size_t i = 0; i < f->n_switches; i++)
        jtable_free(&fabric_switch_table, &f->switches[i]);
    free(f->switches);
    for (size_t i = 0; i < f->n_log_lines; i++)
        jtable_free(&fabric_log_line_table, &f->log_lines[i]);
    free(f->log_lines);
    jtable_free(&fabric_info_table, f);
    memset(f, 0, sizeof(*f));
}

json_t *fabric_info_to_json(const struct fabric_info *f)
{
    json_t *j = json_object();

    jtable_write(&fabric_info_table, f, j, 0);
    if (fabric_valid(f, FABRIC_S_SWITCHES))
        json_object_set_new(j, "switches",
                            jlist_write_table(&fabric_switch_table, f->switches, f->n_switches,
                                              sizeof(*f->switches)));
    if (fabric_valid(f, FABRIC_S_LOG))
        json_object_set_new(j, "log_lines",
                            jlist_write_table(&fabric_log_line_table, f->log_lines, f->n_log_lines,
                                              sizeof(*f->log_lines)));
    return j;
}

int fabric_info_from_json(struct fabric_info *f, const json_t *j, const char *path,
                          struct jerr *err)
{
    void *items = NULL;
    int r;

    if (jtable_read(&fabric_info_table, f, j, path, 0, NULL, err) != 0)
        return -1;
    r = jlist_read_table(&fabric_switch_table, j, "switches", path, sizeof(*f->switches), &items,
                         &f->n_switches, err);
    f->switches = items;
    if (r < 0)
        return -1;
    if (r > 0)
        f->valid |= UINT64_C(1) << FABRIC_S_SWITCHES;
    items = NULL;
    r = jlist_read_table(&fabric_log_line_table, j, "log_lines", path, sizeof(*f->log_lines),
                         &items, &f->n_log_lines, err);
    f->log_lines = items;
    if (r < 0)
        return -1;
    if (r == 0)
        f->valid &= ~(UINT64_C(1) << FABRIC_S_LOG); /* the list goes with the counts */
    return 0;
}
