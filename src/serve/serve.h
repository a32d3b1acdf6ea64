/*
 * `gpudoctor serve`: a Prometheus exporter. A background thread (worker.c) runs one collection
 * cycle every interval (cycle.c: collect, rules over a history of recent samples, render the
 * metrics and the findings JSON) and publishes the result in a cache (cache.c): one immutable,
 * reference-counted result that HTTP requests (http.c, libmicrohttpd) take a reference to and
 * answer from. A request never waits for a collection; a collection that hangs only makes the
 * published data old, which /metrics (gpudoctor_data_age_seconds), /findings ("stale") and
 * /healthz (503) show.
 */
#ifndef GPUDOCTOR_SERVE_H
#define GPUDOCTOR_SERVE_H

#include "collect/collect.h"
#include "render/metrics.h"
#include "rules/rules.h"
#include "state/state.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define SERVE_DEFAULT_LISTEN         "127.0.0.1:9464"
#define SERVE_DEFAULT_INTERVAL       15000
#define SERVE_DEFAULT_WINDOW         2000
#define SERVE_DEFAULT_HISTORY        600000
#define SERVE_MAX_HISTORY            256 /* samples kept, whatever --history says */
#define SERVE_DEFAULT_THREADS        2
#define SERVE_DEFAULT_MAX_CONN       512
#define SERVE_DEFAULT_CONN_TIMEOUT_S 10
#define SERVE_REQUEST_MEMORY         (16 * 1024) /* per connection: the request must fit */
#define SERVE_FINDINGS_SCHEMA        "gpudoctor.findings/1"

/* ---- content coding (encoding.c) ---- */

/*
 * zlib's level for the bodies compressed once a cycle. 6, zlib's default: /metrics of the 8-GPU
 * simulated server, 87 KiB, becomes 6.7 KiB (7.7 %) in about 1 ms a cycle; 9 takes 2.7 times as
 * long for no fewer bytes, 1 gives 10 % more bytes to save 0.6 ms (docs/serve.md).
 */
#define SERVE_GZIP_LEVEL    6
#define SERVE_GZIP_PART_MAX 320 /* bytes a request adds to a body: the data age, the staleness */

/* What a request's Accept-Encoding fields say: weights in thousandths, -1 where not named. */
struct serve_coding {
    int q_gzip; /* gzip or x-gzip */
    int q_identity;
    int q_any; /* "*" */
};

void serve_coding_init(struct serve_coding *c);
/*
 * Adds one Accept-Encoding field value (a request may send several). Malformed elements are
 * skipped; a coding named twice keeps its lowest weight.
 */
void serve_coding_parse(struct serve_coding *c, const char *value);
/*
 * Whether to answer with gzip: gzip (or "*") has a weight above 0 and at least identity's, where
 * identity (or "*") is named at all. No header, or one that names neither, means identity.
 */
bool serve_coding_gzip(const struct serve_coding *c);

/* A body compressed once: raw deflate ended by a sync flush, so more blocks may follow. */
struct serve_deflated {
    unsigned char *data;
    size_t len;
    uint32_t crc;    /* CRC-32 of the uncompressed body */
    size_t body_len; /* its length */
};

void serve_deflate(const char *body, size_t len, struct serve_deflated *out);
void serve_deflated_free(struct serve_deflated *d);

/*
 * One gzip member is head, the deflated body, tail: head holds the gzip header and pre (a stored
 * block), tail post (the final, stored block) and the trailer (CRC-32 and length of all three).
 * pre and post are at most SERVE_GZIP_PART_MAX bytes each.
 */
struct serve_gzip_frame {
    unsigned char head[10 + 5 + SERVE_GZIP_PART_MAX];
    size_t head_len;
    unsigned char tail[5 + SERVE_GZIP_PART_MAX + 8];
    size_t tail_len;
};

void serve_gzip_frame(const struct serve_deflated *d, const char *pre, size_t pre_len,
                      const char *post, size_t post_len, struct serve_gzip_frame *f);

/* ---- the published result (cache.c) ---- */

struct serve_result {
    atomic_uint refs;
    char *metrics; /* the exposition, without gpudoctor_data_age_seconds */
    size_t metrics_len;
    char *findings; /* a JSON object's members after its '{': the request adds age and staleness */
    size_t findings_len;
    struct serve_deflated metrics_gz, findings_gz; /* the same, compressed when published */
    int64_t completed_mono_ms;                     /* 0: no collection has completed yet */
    int64_t age_from_mono_ms; /* before the first collection: when the exporter started */
    int64_t completed_ms;     /* Unix time of the same */
    bool success;
    int check_status; /* rules_exit_status(), EXIT_UNKNOWN when the collection failed */
};

struct serve_cache {
    pthread_mutex_t lock;
    struct serve_result *current;
};

/*
 * A result that owns metrics and findings (both may be NULL: empty), and compresses both; one
 * reference.
 */
struct serve_result *serve_result_new(char *metrics, size_t metrics_len, char *findings,
                                      size_t findings_len);
void serve_result_unref(struct serve_result *r);

void serve_cache_init(struct serve_cache *c, struct serve_result *initial);
/* Replaces the current result with r (the cache takes r's reference). */
void serve_cache_publish(struct serve_cache *c, struct serve_result *r);
/* A reference to the current result: release it with serve_result_unref. */
struct serve_result *serve_cache_get(struct serve_cache *c);
void serve_cache_destroy(struct serve_cache *c);

/* ---- history across cycles (history.c) ---- */

/* A ring of recent samples, oldest first, their t_ms on one clock (ms since serve started). */
struct serve_history {
    struct sample *items;
    size_t n, cap;
    size_t max_items;
    int64_t keep_ms;
};

void serve_history_init(struct serve_history *h, int64_t keep_ms, size_t max_items);
void serve_history_free(struct serve_history *h);
/*
 * The samples rules see for snapshot s collected at base_ms on the history's clock: the kept
 * samples, then s's own with their times moved by base_ms. *scratch holds the array (the caller
 * frees it, not the samples).
 */
struct history serve_history_view(const struct serve_history *h, const struct snapshot *s,
                                  int64_t base_ms, struct sample **scratch);
/* Moves s's last sample (at base_ms + its t_ms) into the ring, dropping what is too old. */
void serve_history_keep(struct serve_history *h, struct snapshot *s, int64_t base_ms);

/* ---- one collection cycle (cycle.c) ---- */

struct serve_opts {
    struct collect_opts collect;
    const struct rules_config *rules;
    struct metrics_opts metrics;
    int64_t interval_ms;
    int64_t history_ms;
    const char *textfile_dir; /* NULL: none */
    const char *state_dir;    /* the state file's directory (docs/state.md); NULL: off */
};

struct serve_state {
    const struct serve_opts *opts;
    struct serve_history hist;
    struct metrics_memory memory; /* GPU identities and log counts across cycles */
    uint64_t cycles;
    int64_t start_mono_ms;
    struct nvml_session *nvml; /* kept across cycles; NULL until opened, or after it failed */
    bool last_failed;          /* for logging a change once, not every cycle */
    bool textfile_failed;
    struct state_recorder rec;
    struct snapshot *unrecorded; /* the last cycle's, for serve_record; NULL: none */
    /* The node's last bench result (bench-last.json in state_dir), read again when it changes. */
    struct snapshot *bench_last; /* NULL: none, or unusable */
    int bench_read;              /* as metrics_cycle's: 1 read, -1 unusable, 0 none */
    struct serve_file_id {
        uint64_t dev, ino, size;
        int64_t mtime_ns;
    } bench_id;
};

/*
 * Reads the last bench result when the file changed since the last look (or went away): fills
 * st->bench_last and st->bench_read, and says on stderr once when it becomes unusable.
 */
void serve_bench_refresh(struct serve_state *st);

void serve_state_init(struct serve_state *st, const struct serve_opts *o);
void serve_state_free(struct serve_state *st);
/*
 * Ends the NVML helper cleanly (it shuts NVML down and exits). Called by the thread that ran the
 * cycles: the helper is killed outright when the thread that forked it ends (PR_SET_PDEATHSIG).
 */
void serve_state_close_nvml(struct serve_state *st);

/* The result before the first collection completes: only gpudoctor_build_info and the like. */
struct serve_result *serve_result_initial(void);

/*
 * Runs one cycle: collects (with the state file, when on), judges, renders. Never NULL; errors
 * are in the result. The snapshot waits in st for serve_record.
 */
struct serve_result *serve_cycle(struct serve_state *st);

/*
 * After the cycle's result is published: records what it saw in the state file when that is
 * news (state_recorder_record: the lock waited for 1 s at most, off the requests' way). A
 * failure is said on stderr once, until a write works again.
 */
void serve_record(struct serve_state *st);

/* Writes the metrics to DIR/gpudoctor.prom atomically. Returns 0, or -1 with *cause set. */
int serve_write_textfile(const char *dir, const struct serve_result *r, char **cause);

/* ---- the background thread (worker.c) ---- */

struct serve_worker;

/* Starts the thread: a cycle now, then one every interval, each published to cache. */
struct serve_worker *serve_worker_start(struct serve_state *st, struct serve_cache *cache,
                                        char **cause);
/* Asks the thread to stop, and waits for the cycle in progress to end (bounded by --timeout). */
void serve_worker_stop(struct serve_worker *w);

/* ---- HTTP (http.c) ---- */

struct serve_http_opts {
    const char *listen; /* "127.0.0.1:9464", "[::1]:9464", ":9464" (every address) */
    unsigned threads;
    unsigned max_connections;
    unsigned timeout_s; /* per connection, idle */
    int64_t stale_ms;   /* /healthz says 503 when the data is older */
};

struct serve_http;

/*
 * Parses an ADDR:PORT listen address: an IPv4 address, a bracketed IPv6 address, a host name,
 * or nothing before the colon for every address. Returns 0, or -1 with *cause set.
 */
int serve_parse_listen(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char **cause);

struct serve_http *serve_http_start(const struct serve_http_opts *o, struct serve_cache *cache,
                                    char **cause);
/* The port it listens on (the one the system chose for port 0). */
uint16_t serve_http_port(const struct serve_http *h);
/* Requests answered so far (for the log at exit). */
uint64_t serve_http_requests(const struct serve_http *h);
void serve_http_stop(struct serve_http *h);

#endif
