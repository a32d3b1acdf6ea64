/*
 * Commands: one file each (cmd-*.c), registered in main.c's table. Each describes itself in a
 * struct cmd (its own options, with their help, and the groups of shared options it takes);
 * the shared front (front.c) parses the shared options in one place, prints every command's
 * help from those descriptions, and sets up what commands share: the configuration, the render
 * options, the collection or the --from file.
 */
#ifndef GPUDOCTOR_CMD_H
#define GPUDOCTOR_CMD_H

#include "util/i18n.h"
#include "collect/collect.h"
#include "render/text.h"
#include "rules/config.h"

#include <stdio.h>

/* Exit codes: the monitoring-plugin convention, so Slurm, NHC, Nagios and cron can use them. */
enum exit_code {
    EXIT_HEALTHY = 0,
    EXIT_WARNING = 1,
    EXIT_CRITICAL = 2,
    EXIT_UNKNOWN = 3, /* could not check */
    EXIT_USAGE = 64,
};

/* The groups of shared options a command takes (struct cmd's groups). */
enum cmd_group {
    CMD_G_COLLECT = 1u << 0, /* --window --timeout --root --nvml-lib */
    CMD_G_FROM = 1u << 1,    /* --from FILE (repeatable), --format: judge files, not this machine */
    CMD_G_CONFIG = 1u << 2,  /* --config FILE, --set KEY=VALUE */
    CMD_G_JSON = 1u << 3,    /* --json */
    CMD_G_COLOR = 1u << 4,   /* --color[=WHEN], --no-color */
    CMD_G_WIDTH = 1u << 5,   /* --width N */
    CMD_G_ASCII = 1u << 6,   /* --ascii */
    CMD_G_ONLY = 1u << 7,    /* --only LIST: some collectors (procs and reap choose their own) */
    CMD_G_STATE = 1u << 8,   /* --state-dir DIR, --no-state: the remembered past (docs/state.md) */
};

/* Keys of the shared options; a command's own start at OPT__COMMON_END (or are letters). */
enum common_opt {
    OPT_ROOT = 256,
    OPT_TIMEOUT,
    OPT_WINDOW,
    OPT_NVML_LIB,
    OPT_ONLY,
    OPT_FROM,
    OPT_FORMAT,
    OPT_CONFIG,
    OPT_SET,
    OPT_JSON,
    OPT_COLOR,
    OPT_NO_COLOR,
    OPT_WIDTH,
    OPT_ASCII,
    OPT_STATE_DIR,
    OPT_NO_STATE,
    OPT__COMMON_END,
};

/*
 * One of a command's own options. A row with a NULL name is a heading of the help ("Acting:"),
 * or, with a NULL help too, the end of the table. An own option named like a shared one
 * replaces it (watch's --window means something else).
 */
struct cmd_option {
    const char *name; /* the long name: "interval" */
    int key;          /* what the command's option function gets; a letter is also -LETTER */
    int has_arg;      /* no_argument or required_argument (getopt.h) */
    const char *arg;  /* the argument in the help ("DUR"), NULL without one */
    const char *help; /* one sentence or more, wrapped to fit; '\n' forces a new line */
};

struct cmd {
    const char *name;
    const char *synopsis; /* after "gpudoctor NAME": "[options]"; '\n' between usage lines */
    const char *summary;  /* one line for the command list */
    const char *about;    /* what it does: the lines between the usage line and the options */
    const struct cmd_option *options; /* its own */
    unsigned groups;                  /* enum cmd_group: the shared options it takes */
    int64_t window_ms;                /* the default --window (CMD_G_COLLECT) */
    unsigned max_operands;            /* arguments that are not options it takes (explain's ID) */
    const char *epilogue;             /* after the options: keys, notes, exit statuses */
    int (*exec)(int argc, char **argv);
};

extern const struct cmd cmd_check;
extern const struct cmd cmd_explain;
extern const struct cmd cmd_snapshot;
extern const struct cmd cmd_serve;
extern const struct cmd cmd_slurm_check;
extern const struct cmd cmd_procs;
extern const struct cmd cmd_reap;
extern const struct cmd cmd_watch;
extern const struct cmd cmd_profile;
extern const struct cmd cmd_fleet;
extern const struct cmd cmd_slurm_prolog;
extern const struct cmd cmd_slurm_epilog;
extern const struct cmd cmd_ack;
extern const struct cmd cmd_bench;

/* --timeout's default: the window and this much more. */
#define DEFAULT_TIMEOUT_MS 10000
/* The longest --window. */
#define MAX_WINDOW_MS 3600000

/* ---- the shared front (front.c) ---- */

/* What the shared options said. Commands read it after cmd_front_parse; cmd_front_free frees it. */
struct cmd_front {
    const struct cmd *cmd;
    unsigned given;              /* bit (key - OPT_ROOT) for each shared option given */
    struct collect_opts collect; /* CMD_G_COLLECT; defaults from cmd->window_ms */
    const char *from;            /* CMD_G_FROM: the (first) file to judge; NULL: collect */
    const char **froms;          /* every --from file, in order (n_froms of them) */
    size_t n_froms;              /* how many */
    const char *format;          /* --format: how to read them; NULL: recognise each */
    bool json;                   /* CMD_G_JSON */
    bool no_progress;            /* the command's stderr is no place for a progress line */
    struct config config;        /* CMD_G_CONFIG: the file and --set, read by cmd_front_parse */
    struct render_opts render;   /* colour, width and ASCII for standard output */
    enum render_when color, ascii;
    unsigned width; /* --width; 0: the terminal's */
    char **operands;
    size_t n_operands;
    /*
     * CMD_G_STATE: the state directory (state_dir_resolve), NULL when the state is off. A live
     * collection reads the state file into the snapshot; cmd_front_record_state writes it.
     */
    char *state_dir;
    /* private */
    const char *state_dir_opt;
    bool no_state;
    const char *config_path;
    char **sets;
    size_t n_sets;
};

/* cmd_front_parse's "carry on": parsing went well and the command has work to do. */
#define CMD_GO (-1)

/*
 * A command's own option: key from its cmd_option row, arg its argument in argv (NULL without).
 * Returns 0, or the exit status to end with after saying what is wrong (EXIT_USAGE).
 */
typedef int cmd_option_fn(void *ctx, int key, char *arg);

/*
 * Parses argv for command c: the shared options of c->groups into f, the command's own through
 * fn(ctx, ...). Then checks the operands, says which collection options --from makes pointless,
 * reads the configuration (CMD_G_CONFIG) and settles the render options for standard output.
 * Returns CMD_GO, or the status to exit with: 0 after --help, 64 after saying what is wrong.
 * f is set up whatever it returns; free it with cmd_front_free.
 */
int cmd_front_parse(struct cmd_front *f, const struct cmd *c, int argc, char **argv,
                    cmd_option_fn *fn, void *ctx);
void cmd_front_free(struct cmd_front *f);

/* Whether the shared option with this key was given. */
bool cmd_front_given(const struct cmd_front *f, int key);

/*
 * The snapshot to judge: the --from files (import_load: a snapshot, or evidence imported and
 * merged), or a collection with f->collect (progress on stderr when it is a terminal, the output is
 * not JSON and the command did not set no_progress). Says when --timeout ended the sampling window
 * early (the snapshot's window_ms is then the window sampled). NULL after saying why: the caller
 * exits with EXIT_UNKNOWN.
 */
struct snapshot *cmd_front_snapshot(struct cmd_front *f);

/*
 * After a command judged and showed a live collection: adds what s shows to the state file
 * (nothing for --from, --no-state, or a command without CMD_G_STATE). A failure (a full disk,
 * a read-only directory) is said on stderr as a note; the old file stays. Returns 0 or -1.
 */
int cmd_front_record_state(const struct cmd_front *f, const struct snapshot *s);

/* The help of command c, from its description and the shared options' table. */
void cmd_usage(const struct cmd *c, FILE *out);

/* Sets collection defaults: root /, the window, --timeout the window + 10s. */
void cmd_collect_defaults(struct collect_opts *o, int64_t window_ms);

/* ---- --error TEXT, the error the user saw (cmd-common.c) ---- */

/* The --error texts of one run, in order (borrowed from argv). */
struct cmd_reported {
    const char *cmd; /* "check": for messages */
    const char **texts;
    size_t n;
};
/* A cmd_option_fn for --error ('e'): keeps arg; EXIT_USAGE for an empty one or too many. */
int cmd_reported_option(void *ctx, int key, char *arg);
/* Recognises what s already records (a loaded snapshot), then adds the --error texts to it. */
void cmd_reported_apply(const struct cmd_reported *r, struct snapshot *s);
void cmd_reported_free(struct cmd_reported *r);

/* ---- messages and output (cmd-common.c) ---- */

/* Prints "gpudoctor CMD: message" to stderr, the message translated (po/update-pot.sh extracts
 * fmt). */
void cmd_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For getopt's '?': tells the user where help is; returns EXIT_USAGE. */
int cmd_usage_error(const struct cmd *c);

/* Writes text to path atomically, or to stdout for NULL or "-". Returns 0, or -1 after saying why.
 */
int cmd_write_output(const char *cmd, const char *path, const char *text);
/*
 * Before the work: whether cmd_write_output could write path (a file name whose directory
 * exists and, for a new or regular file, takes a new name). Returns 0, else says why and returns
 * EXIT_USAGE (a directory given) or EXIT_UNKNOWN.
 */
int cmd_check_output(const char *cmd, const char *path);

/*
 * Flushes standard output and checks that everything written to it since the start arrived
 * (stdio keeps the error of a write that failed earlier). A pipe whose reader went away
 * (`gpudoctor check | head`) is a normal end: 0, nothing said. Returns 0, or -1 after saying
 * "cannot write to standard output: <why>" (the caller exits with EXIT_UNKNOWN).
 */
int cmd_finish_stdout(const char *cmd);

#endif
