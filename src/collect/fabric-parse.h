/*
 * Parsers for the Fabric Manager evidence: the dpkg status database (is a Fabric Manager package
 * installed, which version), a Debian version's upstream part, and the Fabric Manager log (its
 * last start line and the error lines after it). Pure functions on text, tested on strings.
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

#endif
