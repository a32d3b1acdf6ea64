/* Commands: one file each (cmd-*.c), registered in main.c's table. */
#ifndef GPUDOCTOR_CMD_H
#define GPUDOCTOR_CMD_H

#include "collect/collect.h"

#include <stdio.h>

/* Exit codes: the monitoring-plugin convention, so Slurm, NHC, Nagios and cron can use them. */
enum exit_code {
    EXIT_HEALTHY = 0,
    EXIT_WARNING = 1,
    EXIT_CRITICAL = 2,
    EXIT_UNKNOWN = 3, /* could not check */
    EXIT_USAGE = 64,
};

struct cmd {
    const char *name;
    const char *synopsis; /* "[options]" */
    const char *summary;  /* one line for the command list */
    int (*exec)(int argc, char **argv);
    void (*usage)(FILE *out);
};

extern const struct cmd cmd_check;
extern const struct cmd cmd_explain;
extern const struct cmd cmd_snapshot;
extern const struct cmd cmd_serve;
extern const struct cmd cmd_slurm_check;
extern const struct cmd cmd_procs;
extern const struct cmd cmd_reap;
extern const struct cmd cmd_watch;

/* Long options shared by the commands that collect; values above 256 to stay clear of chars. */
enum common_opt {
    OPT_ROOT = 256,
    OPT_TIMEOUT,
    OPT_WINDOW,
    OPT_NVML_LIB,
    OPT_FROM,
    OPT_JSON,
    OPT_NO_COLOR,
    OPT_CONFIG,
    OPT_ONLY,
    OPT__COMMON_END,
};

/* clang-format off */
#define COMMON_COLLECT_LONGOPTS \
    { "root", required_argument, NULL, OPT_ROOT }, \
    { "timeout", required_argument, NULL, OPT_TIMEOUT }, \
    { "window", required_argument, NULL, OPT_WINDOW }, \
    { "nvml-lib", required_argument, NULL, OPT_NVML_LIB }, \
    { "only", required_argument, NULL, OPT_ONLY }
/* clang-format on */

#define COMMON_COLLECT_HELP                                                                        \
    "  --root DIR        read /proc, /sys, /dev and logs under DIR (default /)\n"                  \
    "  --timeout DUR     finish within DUR whatever hangs (default 10s)\n"                         \
    "  --nvml-lib PATH   NVML library to load (default $GPUDOCTOR_NVML_LIB,\n"                     \
    "                    else libnvidia-ml.so.1)\n"                                                \
    "  --only LIST       run only these collectors (comma-separated: nvml, processes,\n"           \
    "                    host, pcie, driver, kernel_log, stack)\n"

#define DEFAULT_TIMEOUT_MS 10000

/* Sets defaults for the collecting options. */
void cmd_collect_defaults(struct collect_opts *o, int64_t window_ms);
/*
 * Handles a common option: returns 1 when opt was one and was valid, 0 when it is not a common
 * option, -1 (after printing why) when its value is bad.
 */
int cmd_collect_option(const char *cmd, struct collect_opts *o, int opt, const char *arg);

/* Prints "gpudoctor CMD: message" to stderr. */
void cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For getopt's '?': tells the user where help is; returns EXIT_USAGE. */
int cmd_usage_error(const struct cmd *c);

struct config;
/*
 * Reads the configuration a command runs with: --config FILE (which must exist), else the default
 * file when it exists, then each --set KEY=VALUE. Returns 0, or -1 after saying why (the caller
 * exits with EXIT_USAGE).
 */
int cmd_load_config(const char *cmd, struct config *cfg, const char *path, char **sets,
                    size_t n_sets);

/* Writes text to path atomically, or to stdout for NULL or "-". Returns 0, or -1 after saying why.
 */
int cmd_write_output(const char *cmd, const char *path, const char *text);

/*
 * Flushes standard output and checks that everything written to it since the start arrived
 * (stdio keeps the error of a write that failed earlier). Returns 0, or -1 after saying
 * "cannot write to standard output: <why>" (the caller exits with EXIT_UNKNOWN).
 */
int cmd_finish_stdout(const char *cmd);

#endif
