/*
 * Parsers for the Fabric Manager evidence: the dpkg status database (is a Fabric Manager package
 * installed, which version), a Debian version's upstream part, the Fabric Manager log (its last
 * start line and the error lines after it), and the NVSwitch driver's own view
 * (/proc/driver/nvidia-nvswitch: which switches it took, their BIOS versions). Pure functions on
 * text, tested on strings.
 */
#ifndef GPUDOCTOR_FABRIC_PARSE_H
#define GPUDOCTOR_FABRIC_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Finds an installed Fabric Manager package ("nvidia-fabricmanager" or
 * "nvidia-fabricmanager-BRANCH", status "install ok installed") in the text of
 * /var/lib/dpkg/status. Returns 1 with *package and *version set (the caller frees them), 0 when
 * none is installed.
 */
int fabric_parse_dpkg(const char *text, char **package, char **version);

/* The upstream part of a Debian version: "1:550.54.15-1" gives "550.54.15" (caller frees). */
char *fabric_upstream_version(const char *debian_version);

/* What the Fabric Manager log says about its last run. */
struct fabric_log_scan {
    bool started;    /* a start line ("Fabric Manager version V is running ...") was found */
    char *version;   /* V of the last start line, NULL when none */
    uint32_t errors; /* [ERROR] and [FATAL] lines after the last start line (all when none) */
    char *lines[5];  /* the last of them, oldest first, as they are (the caller sanitises) */
    size_t n_lines;
};

/* Scans the log text (NUL-terminated); scan is zeroed first. */
void fabric_parse_log(const char *text, struct fabric_log_scan *scan);
void fabric_log_scan_free(struct fabric_log_scan *scan);

/* Whether a process name (/proc/PID/comm, cut to 15 bytes) is Fabric Manager's. */
bool fabric_is_fm_comm(const char *comm);

/*
 * A BIOS version as the NVSwitch driver prints it: five groups of lower-case hex digits joined by
 * dots ("96.10.6d.00.01"); the first group holds the upper 32 bits ("%02llx": two digits, at most
 * eight), the others two digits each. With its NUL.
 */
#define FABRIC_BIOS_VERSION_SIZE 21

/* What /proc/driver/nvidia-nvswitch/devices/ADDR/information says. */
enum fabric_nvswitch_info {
    FABRIC_NVSW_INFO_VERSION,   /* "BIOS Version: 96.10.6d.00.01": the version is in version */
    FABRIC_NVSW_INFO_NA,        /* "BIOS Version: N/A": the driver could not read it */
    FABRIC_NVSW_INFO_MALFORMED, /* anything else */
};

/*
 * The information file's text (NUL-terminated): one line "BIOS Version: " and the version or
 * "N/A", ended by one newline or none. Nothing else is accepted: the text is hostile until it
 * has this form. version receives the version on FABRIC_NVSW_INFO_VERSION, "" otherwise.
 */
enum fabric_nvswitch_info fabric_parse_nvswitch_info(const char *text,
                                                     char version[FABRIC_BIOS_VERSION_SIZE]);

#define FABRIC_NVSW_ENTRY_STRAY (-1) /* a PCI address, of no NVSwitch on the bus */
#define FABRIC_NVSW_ENTRY_BAD   (-2) /* not a PCI address as the driver names its entries */

/*
 * Which of the n addresses addrs (the NVSwitches on the PCI bus, as sysfs names them) the entry
 * name of /proc/driver/nvidia-nvswitch/devices names: its index, FABRIC_NVSW_ENTRY_STRAY or
 * FABRIC_NVSW_ENTRY_BAD. The driver names an entry "%04x:%02x:%02x.%1x" (lower-case hex), as
 * sysfs names the device, so the two are compared as they are.
 */
int fabric_nvswitch_entry(const char *name, const char *const *addrs, size_t n);

#endif
