/*
 * Recordings: what `watch --record FILE` writes and `check --from FILE` reads back, trends
 * included. A recording is JSON Lines (one complete JSON object a line):
 *
 *   {"schema": "gpudoctor.snapshot/1", ..., "samples": []}      a snapshot: the context
 *   {"t_ms": 1000, "gpus": [...], "host": {...}, "processes": [...]}   a sample (the codec of a
 *   {"t_ms": 2000, ...}                                                 snapshot's samples)
 *   {"schema": "gpudoctor.snapshot/1", ...}                     the context again, when it changed
 *
 * The first line is a snapshot, so `head -1` of a recording is a snapshot too. Samples' t_ms
 * count from the first snapshot's time_ms. Read back, the recording is the last snapshot with
 * every sample as its history, its time moved to the last sample's.
 */
#ifndef GPUDOCTOR_WATCH_RECORDING_H
#define GPUDOCTOR_WATCH_RECORDING_H

#include "snapshot/snapshot.h"

#include <stdint.h>

/* Context lines at least this often, whatever changes, so a reader never has an old one. */
#define RECORDING_CONTEXT_EVERY_MS (10 * 60 * 1000)
/* A line longer than this is not part of a recording: a line holds at most a snapshot. */
#define RECORDING_MAX_LINE SNAPSHOT_MAX_BYTES

struct recorder;

/*
 * Creates path, mode 0600 (or truncates a file of the caller's: file_open_private says which
 * files are refused, and why). Returns NULL with *cause set (the caller frees it).
 */
struct recorder *recorder_open(const char *path, char **cause);

/*
 * Appends smp, taken at t_ms on the recording's clock (0 = its first sample), after a context
 * line for s when this is the first sample, when s differs from the last context in its GPUs,
 * processes or collector states, or every RECORDING_CONTEXT_EVERY_MS. Each line is written whole
 * or, when the write fails part way, cut back, so the file stays a valid recording. Returns 0,
 * or -1 with *cause set: the recorder is then closed for writing and later calls do nothing.
 */
int recorder_write(struct recorder *r, const struct snapshot *s, const struct sample *smp,
                   int64_t t_ms, char **cause);

/* Lines written so far (context and samples). */
uint64_t recorder_lines(const struct recorder *r);

void recorder_close(struct recorder *r);

/*
 * Reads a recording, or a snapshot (what `check --from` accepts): path, or "-" for standard
 * input. Returns NULL with *cause = "path:line:column: what" when it is neither. A last line
 * cut short (the recorder was killed mid-write) is ignored.
 *
 * Every read is bounded by bytes, NUL bytes included: a line (or a whole snapshot) longer than
 * SNAPSHOT_MAX_BYTES is refused, saying so. Recordings and snapshots are text: a NUL byte is an
 * error naming its line and column (in the first line, as soon as it is read, so /dev/zero ends
 * at once), except in a last line without its newline, which a crash may leave full of NULs.
 */
struct snapshot *recording_load(const char *path, char **cause);
/*
 * The same from an open descriptor whose first n bytes the caller already read into head (to
 * recognise the format): they are read first. name names it in messages.
 */
struct snapshot *recording_load_fd(int fd, const char *name, const char *head, size_t n,
                                   char **cause);

#endif
