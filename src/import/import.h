/*
 * Imported evidence: what people already have about a GPU server, as text (nvidia-smi's table,
 * nvidia-smi -q and its XML, topo -m, nvlink -s/-e, lspci, a kernel log, an
 * nvidia-bug-report.log or its .gz), read into the same snapshot the live collectors fill, so
 * every rule, renderer and exporter works on it unchanged. One importer per format, in one table
 * (import.c); a format is recognised by its content or named with --format. What a source did not
 * contain stays unknown (JF_RC_NOT_COLLECTED, a collector not run), never zero or absent.
 * docs/import.md says what each format provides and what it cannot.
 */
#ifndef GPUDOCTOR_IMPORT_H
#define GPUDOCTOR_IMPORT_H

#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>

/* The most an imported file may hold once decompressed: a snapshot's limit. */
#define IMPORT_MAX_BYTES SNAPSHOT_MAX_BYTES
#define IMPORT_MAX_TEXT  SNAPSHOT_MAX_TEXT

/* The formats --format names, in the table's order: name and a one-line description. */
size_t import_n_formats(void);
const char *import_format_name(size_t i);
const char *import_format_summary(size_t i);
/* Whether name is a format --format takes ("auto" is one). */
bool import_format_known(const char *name);
/* "auto, snapshot, nvidia-smi, ...": the names, for messages. Static storage. */
const char *import_format_names(void);

/*
 * Reads the n files of paths ("-" is standard input, read once) into one snapshot: a gpudoctor
 * snapshot, recording or report (JSON) is read as `check --from` always read it; anything else
 * is imported. format is a name of the table, or NULL / "auto" to recognise each file by its
 * content. Several files merge (docs/import.md, "Several files"): a JSON snapshot among them is
 * the base; a value already known is kept and others only fill what is unknown; kernel-log
 * events are added, the same event once. Returns NULL with *cause set ("path:line: what"; the
 * caller frees it) when a file cannot be read or is no format gpudoctor reads.
 */
struct snapshot *import_load(const char *const *paths, size_t n, const char *format, char **cause);

/*
 * Importing piece by piece (import_load does this for files): a session filling one snapshot,
 * new or given (the session then owns it). import_text imports one text already in memory (len
 * bytes; a NUL byte is refused) as format (NULL or "auto": recognised; JSON is not read here);
 * name names it in notes and messages. It returns 0, or -1 with *cause set. import_end settles
 * what depends on every piece (the GPUs' order, the device count, the snapshot's time, the
 * topology), frees the session and returns the snapshot. The fuzz harnesses and unit tests use
 * them directly.
 */
struct import_session;
struct import_session *import_begin(struct snapshot *base);
int import_text(struct import_session *is, const char *format, const char *text, size_t len,
                const char *name, char **cause);
struct snapshot *import_end(struct import_session *is);

#endif
