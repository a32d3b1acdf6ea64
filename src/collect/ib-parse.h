/*
 * Parsers for the InfiniBand attributes of sysfs (/sys/class/infiniband/DEV/ports/N/...) and for
 * /proc/modules: a port's state and physical state ("4: ACTIVE", "5: LinkUp"), its rate ("400
 * Gb/sec (4X NDR)"), its link layer and its counters. Pure functions on text, tested on strings
 * and fuzzed (fuzz/fuzz-sysfs-ib.c); the collector (ib.c) does the reading.
 */
#ifndef GPUDOCTOR_IB_PARSE_H
#define GPUDOCTOR_IB_PARSE_H

#include "snapshot/snap-ib.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IB_NAME_SIZE 32 /* "ACTIVE", "LinkUp", "PortConfigurationTraining", "NDR" and a NUL */

/*
 * state / phys_state: "CODE: NAME" ("4: ACTIVE", "2: Polling", "4: PortConfigurationTraining").
 * Sets *code (0-255) and name (printable ASCII, at most IB_NAME_SIZE - 1 bytes, may be empty:
 * "7: Phy Test" keeps "Phy Test"). False on anything else.
 */
bool ib_parse_state(const char *text, uint32_t *code, char name[IB_NAME_SIZE]);

/*
 * rate: "%d[.5] Gb/sec (%dX[ SPEED])" as the kernel writes it ("400 Gb/sec (4X NDR)", "2.5 Gb/sec
 * (1X SDR)", "56 Gb/sec (4X FDR)"). Sets *gbps (> 0), *width (lanes: 1, 2, 4, 8 or 12) and speed
 * ("NDR", "" when the kernel wrote none). False on anything else.
 */
bool ib_parse_rate(const char *text, double *gbps, uint32_t *width, char speed[IB_NAME_SIZE]);

/* link_layer: "InfiniBand" or "Ethernet"; -1 for anything else. */
int ib_parse_link_layer(const char *text);

/* A counter file: one unsigned decimal number (surrounding whitespace allowed). */
bool ib_parse_counter(const char *text, uint64_t *value);

/*
 * /proc/modules: whether the modules named in names (n of them) are loaded. loaded[i] is set for
 * names[i]. Returns the number of well-formed lines, or -1 when the text is not /proc/modules
 * (a non-empty line whose first word is not a module name).
 */
int ib_parse_modules(const char *text, const char *const *names, bool *loaded, size_t n);

/* Whether name is a safe InfiniBand device name ("mlx5_0", "ibp12s0", "rocep65s0f1"). */
bool ib_is_device_name(const char *name);

#endif
