/*
 * The conversation between the collector and its NVML helper process: the parent writes a request
 * line ("full" or "sample"), the helper answers with one line of compact JSON in the snapshot's
 * own format (nvml_system_to_json, gpu_to_wire: gpu_to_json's, with each NVLink and peer record a
 * row of values instead of an object), so the wire needs no codec of its own:
 *   {"nvml": {...}, "gpus": [{...}, ...]}     answer to "full"
 *   {"gpus": [{index, dynamic fields}, ...]}  answer to "sample"
 *   {"error": "text"}                         a request the helper did not understand
 * These functions are pure (no I/O), so the framing is tested on its own.
 */
#ifndef GPUDOCTOR_NVML_WIRE_H
#define GPUDOCTOR_NVML_WIRE_H

#include "snapshot/snap-gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum nvml_request {
    NVML_REQ_FULL,
    NVML_REQ_SAMPLE,
    NVML_REQ_INVALID,
};

/* The longest answer accepted: far more than 1,024 GPUs with full process lists need. */
#define NVML_WIRE_MAX_ANSWER (64u << 20)
/* The longest request line. */
#define NVML_WIRE_MAX_REQUEST 64u

/* The request line, newline included ("full\n"). */
const char *nvml_request_line(enum nvml_request r);
/* Parses a request line without its newline. */
enum nvml_request nvml_request_parse(const char *line);

/*
 * Encodes an answer as one line of compact JSON ending in '\n' (the caller frees it).
 * sys NULL: a sample answer, with the dynamic fields of each GPU only.
 */
char *nvml_wire_encode(const struct nvml_system *sys, const struct gpu *gpus, size_t n_gpus);
char *nvml_wire_encode_error(const char *msg);

/*
 * Decodes one answer line (len bytes, no newline). With want_sys, the answer must carry "nvml",
 * read into *sys (which the caller frees with nvml_system_free, also on error). *gpus is a new
 * array (free each with gpu_free) or NULL. Returns 0, or -1 with *cause set (the caller frees it)
 * naming where the text was wrong.
 */
int nvml_wire_decode(const char *line, size_t len, bool want_sys, struct nvml_system *sys,
                     struct gpu **gpus, size_t *n_gpus, char **cause);

/*
 * The GPUs an answer to "sample" would decode to, made from a full answer's GPUs without the wire:
 * each GPU's identifying and dynamic fields, everything else not collected. A sample taken right
 * after the full reading (a check without a window) reads the same values; this spares the helper
 * the second reading and both sides its encoding and decoding. *gpus is a new array (free each
 * with gpu_free) or NULL. Returns 0, or -1 with *cause set (the caller frees it).
 */
int nvml_wire_sample_of(const struct gpu *full, size_t n_full, struct gpu **gpus, size_t *n_gpus,
                        char **cause);

/* Accumulates bytes read from a stream until a whole line is there. */
struct nvml_linebuf {
    char *data;
    size_t len, cap;
    size_t max; /* a line longer than this is an error */
};

void nvml_linebuf_init(struct nvml_linebuf *b, size_t max);
/* Appends n bytes. Returns 0, or -EMSGSIZE when more than max + 1 bytes would be held. */
int nvml_linebuf_append(struct nvml_linebuf *b, const char *p, size_t n);
/*
 * The first complete line: returns its length and replaces its '\n' by '\0' so b->data is the
 * line as a string; -1 when no line is complete yet. Remove it with nvml_linebuf_consume(len + 1).
 */
ssize_t nvml_linebuf_line(struct nvml_linebuf *b);
void nvml_linebuf_consume(struct nvml_linebuf *b, size_t n);
void nvml_linebuf_free(struct nvml_linebuf *b);

#endif
