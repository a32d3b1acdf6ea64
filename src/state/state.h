/*
 * The state file: what gpudoctor remembers between runs (docs/state.md). XIDs, ECC and row-remap
 * events per GPU with the boot they happened in, so that a fault returning after a reboot can be
 * told from a new one, and the acknowledgements of `gpudoctor ack`.
 *
 * One JSON file, STATE_FILE in the state directory: /var/lib/gpudoctor for root, else
 * $XDG_STATE_HOME/gpudoctor (~/.local/state/gpudoctor); --state-dir, $GPUDOCTOR_STATE_DIR or the
 * config key state_dir choose another. Reading never fails: a missing file is an empty past, a
 * corrupt one a note. Every update is a read-merge-write under an flock on STATE_LOCK, written
 * atomically (a full disk leaves the old file), so concurrent watch, serve and check lose nothing.
 */
#ifndef GPUDOCTOR_STATE_H
#define GPUDOCTOR_STATE_H

#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stdint.h>

#define STATE_FILE         "state.json"
#define STATE_LOCK         "state.lock"
#define STATE_DIR_ROOT     "/var/lib/gpudoctor"
#define STATE_DIR_ENV      "GPUDOCTOR_STATE_DIR"
#define STATE_MAX_BYTES    (4u << 20) /* a file larger than this is not read */
#define STATE_LOCK_WAIT_MS 10000      /* how long an update waits for another writer */
/* A temporary file of the state directory this old was left by a writer killed mid-write. */
#define STATE_TEMP_STALE_MS (10 * 60 * 1000)

/*
 * The state directory: dir when given (--state-dir), else $GPUDOCTOR_STATE_DIR, else config_dir
 * (the config key), else the default for the effective user. NULL when the state is off (any of
 * them "off", or no home for a user), or with *cause set (the caller frees it) when the one
 * chosen is a relative path: it would depend on where gpudoctor runs. The caller frees it.
 */
char *state_dir_resolve(const char *dir, const char *config_dir, char **cause);

/*
 * Opens the state directory dir, made first (with its parents) when create and missing: 0700, or
 * 0755 for root's /var/lib/gpudoctor. It must be the directory itself, not a symbolic link (its
 * maker would choose where root writes), owned by the effective user or root, and writable by no
 * group and no other user (who can write it can swap a file in it for a link between a look and
 * a use). Every file of the state directory is then opened, created and renamed relative to the
 * descriptor. Returns it (O_RDONLY, close-on-exec), or -1 with errno set (ENOENT: it does not
 * exist; EPERM: it is not trusted) and *cause naming the directory and why (caller frees).
 */
int state_dir_open(const char *dir, bool create, char **cause);

/*
 * Reads the state file of dir into st (zeroed or freed): status, path, note and content. Never
 * fails: STATE_MISSING (no file, no directory), STATE_CORRUPT ("state file PATH:LINE:COL: what;
 * ignored, will be rewritten") or STATE_UNREADABLE (a directory state_dir_open refuses; a link,
 * not a regular file, another user's file, a newer version, an error) leave the content empty.
 */
void state_load(const char *dir, struct state_info *st);

/* Parses state file text (the reader of state_load, and of the fuzz harness). */
void state_parse(const char *text, size_t len, const char *name, struct state_info *st);

/* The text of the state file for st's content (ends with a newline). The caller frees it. */
char *state_format(const struct state_info *st);

/*
 * Adds what the snapshot shows to st: each GPU (by serial, else UUID) with where it is now, the
 * GPU resets of this boot it shows (a pending repair recorded in this epoch now cleared, the
 * energy counter lower than recorded in this boot, the driver's load banner after the driver was
 * loaded), the Xid events of the kernel log that happened in this boot (by boot id and kernel
 * stamp, each once), a rise of its uncorrectable ECC count or of its uncorrectable remapped rows,
 * and once per epoch (a boot, or the part of it after a reset) uncorrectable ECC errors since
 * the driver loaded, a row remapping failure, a memory repair pending a reset (the most volatile
 * errors seen in the epoch kept); drops
 * acknowledgements that expired before now_ms, and keeps the bounds (the oldest go). Returns
 * whether anything but the GPUs' last_seen_ms and energy readings changed: a GPU new, moved or
 * seen in a new boot, an event, a reset, an acknowledgement dropped.
 */
bool state_merge(struct state_info *st, const struct snapshot *s, int64_t now_ms);

/*
 * Updates the state file of dir: takes the lock, reads the file, calls fn(st, arg) on what it
 * read (fn returns 0 to write, 1 to leave the file as it is, -1 with *cause set to fail),
 * writes it atomically, releases the lock. A file it cannot read and would not replace
 * (STATE_UNREADABLE: another user's, a link, a newer version) fails the update. A corrupt one
 * (STATE_CORRUPT) is kept: renamed to STATE_FILE.corrupt-TIME (UTC, "20260102T030405Z") beside it
 * before the new one is written, and *kept (when kept is not NULL) set to a note saying so
 * (the caller frees); one that cannot be renamed is not rewritten. Returns 0, or -1 with *cause
 * set (the caller frees).
 */
int state_update(const char *dir, int (*fn)(struct state_info *st, void *arg, char **cause),
                 void *arg, char **kept, char **cause);

/* state_update with state_merge of s: what a check, watch, serve or slurm-check saw. */
int state_record(const char *dir, const struct snapshot *s, int64_t now_ms, char **kept,
                 char **cause);

/* ---- recording from a loop (watch, serve) ---- */

#define STATE_LOOP_LOCK_WAIT_MS 1000 /* a loop tries again next cycle: the news stays news */
#define STATE_REFRESH_MS        (60 * 60 * 1000) /* last_seen_ms kept this fresh without news */

/* A loop's recording of the state file. */
struct state_recorder {
    const char *dir; /* NULL: the state is off */
    bool failing;    /* the last write failed (the loop says so once, until one works) */
};

/*
 * Whether state_merge of s into the state s was collected with (its state section, read this
 * cycle) would change anything but the GPUs' last_seen_ms; a corrupt file counts (it is
 * rewritten), an unreadable one does not (it is never replaced). s is not changed.
 */
bool state_has_news(const struct snapshot *s, int64_t now_ms);

/*
 * A loop's state_record: only when s has news (state_has_news), or when the file says a GPU of s
 * was last seen STATE_REFRESH_MS ago or more (or in the future: the clock went back), waiting at
 * most STATE_LOOP_LOCK_WAIT_MS for another writer. A loop that sees nothing new leaves the file
 * alone.
 * s must hold the state section (collect_state). Returns 1 written, 0 nothing to write, -1 with
 * *cause set (the caller frees); *kept as state_update says.
 */
int state_recorder_record(struct state_recorder *r, const struct snapshot *s, int64_t now_ms,
                          char **kept, char **cause);

/* ---- epochs: a boot split by the GPU resets detected in it (docs/state.md) ---- */

/* The snapshot's kernel uptime in microseconds (host.uptime_s), or -1 unknown. */
int64_t state_now_us(const struct snapshot *s);

/* Whether sg has a reset of boot surely between uptimes t_us and u_us: t at or before the last
 * moment it had not happened, u at or after it was seen done. False when either is unknown. */
bool state_reset_between(const struct state_gpu *sg, const char *boot, int64_t t_us, int64_t u_us);

/* Whether sg has a reset of boot that may have happened after uptime t_us (all, t_us < 0). */
bool state_reset_since(const struct state_gpu *sg, const char *boot, int64_t t_us);

/*
 * In how many epochs of boot the uptimes (n of them, sorted in place; negative ones, unknown,
 * ignored) surely fall: the longest chain of them each separated from the one before by a reset
 * of sg (state_reset_between). 0 when none is known.
 */
size_t state_epochs(const struct state_gpu *sg, const char *boot, int64_t *times, size_t n);

/* Whether the kernel-log event is the driver's load banner ("NVRM: loading NVIDIA UNIX ...
 * Kernel Module ..."). */
bool state_load_banner(const struct klog_event *ev);

/* The kernel-log event's GPU in the snapshot (by PCI address, else UUID), or NULL. */
const struct gpu *state_event_gpu(const struct snapshot *s, const struct klog_event *ev);

/* Whether a kernel-log event happened in the snapshot's boot (known from its uptime). */
bool state_event_this_boot(const struct snapshot *s, const struct klog_event *ev);

#endif
