/*
 * One collection cycle: collect a snapshot, run the rules over the history, render the metrics
 * and the findings, keep the newest sample for the next cycle's history. Used by the worker
 * thread and by `serve --once`.
 */
#include "bench/bench.h"
#include "cmd/cmd.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-session.h"
#include "render/json.h"
#include "render/text.h"
#include "serve/serve.h"
#include "util/fileio.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How long closing the NVML helper may take before it is killed. */
#define NVML_CLOSE_MS 1000

void serve_state_init(struct serve_state *st, const struct serve_opts *o)
{
    memset(st, 0, sizeof(*st));
    st->opts = o;
    st->start_mono_ms = time_mono_ms();
    st->rec.dir = o->state_dir;
    serve_history_init(&st->hist, o->history_ms, SERVE_MAX_HISTORY);
}

void serve_state_close_nvml(struct serve_state *st)
{
    nvml_session_close(st->nvml, time_mono_ms() + NVML_CLOSE_MS);
    st->nvml = NULL;
}

void serve_state_free(struct serve_state *st)
{
    serve_state_close_nvml(st);
    serve_history_free(&st->hist);
    metrics_memory_free(&st->memory);
    snapshot_free(st->unrecorded);
    st->unrecorded = NULL;
    snapshot_free(st->bench_last);
    st->bench_last = NULL;
}

void serve_bench_refresh(struct serve_state *st)
{
    const char *dir = st->opts->state_dir;
    struct serve_file_id id = { 0 };
    char *path, *cause = NULL;
    struct stat sb;
    int was = st->bench_read;

    if (dir == NULL)
        return;
    path = bench_last_path(dir);
    if (stat(path, &sb) == 0) {
        id.dev = (uint64_t)sb.st_dev;
        id.ino = (uint64_t)sb.st_ino;
        id.size = (uint64_t)sb.st_size;
        id.mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    }
    free(path);
    /* unchanged (a file replaced atomically has another inode): keep what was read */
    if (id.ino != 0 && memcmp(&id, &st->bench_id, sizeof(id)) == 0)
        return;
    st->bench_id = id;
    snapshot_free(st->bench_last);
    st->bench_last = NULL;
    st->bench_read = bench_last_load(dir, &st->bench_last, &cause);
    if (st->bench_read < 0 && was >= 0)
        fprintf(stderr, "gpudoctor serve: note: no bench figures exported: %s\n", cause);
    else if (st->bench_read > 0 && was < 0)
        fprintf(stderr, "gpudoctor serve: the last bench result is readable again\n");
    free(cause);
}

void serve_record(struct serve_state *st)
{
    char *cause = NULL, *kept = NULL;
    int rc;

    if (st->unrecorded == NULL)
        return;
    rc = state_recorder_record(&st->rec, st->unrecorded, time_real_ms(), &kept, &cause);
    if (kept != NULL)
        fprintf(stderr, "gpudoctor serve: note: %s\n", kept);
    free(kept);
    if (rc < 0 && !st->rec.failing)
        fprintf(stderr, "gpudoctor serve: note: the state file was not updated: %s\n", cause);
    else if (rc > 0 && st->rec.failing)
        fprintf(stderr, "gpudoctor serve: the state file is updated again\n");
    if (rc != 0)
        st->rec.failing = rc < 0;
    free(cause);
    snapshot_free(st->unrecorded);
    st->unrecorded = NULL;
}

/* The JSON text of obj without its opening brace: the request puts its own members first. */
static char *json_members(json_t *obj, size_t *len)
{
    char *text = json_dumps(obj, JSON_COMPACT | JSON_REAL_PRECISION(10));
    size_t n;

    if (text == NULL)
        fatal("out of memory serialising the findings");
    n = strlen(text);
    if (n < 2 || text[0] != '{')
        fatal("findings JSON is not an object");
    memmove(text, text + 1, n); /* the NUL too */
    *len = n - 1;
    return text;
}

static json_t *failure_json(const char *cause)
{
    json_t *j = json_object();

    json_object_set_new(j, "schema", json_string(SERVE_FINDINGS_SCHEMA));
    json_object_set_new(j, "error", jstring_safe(cause));
    return j;
}

struct serve_result *serve_result_initial(void)
{
    struct metrics_cycle cyc = { 0 };
    struct metrics_opts mo = { 0 };
    json_t *j = json_object();
    char *metrics, *findings;
    size_t mlen, flen;
    struct serve_result *r;

    cyc.check_status = EXIT_UNKNOWN;
    metrics = metrics_render(NULL, NULL, &cyc, &mo, &mlen);
    json_object_set_new(j, "schema", json_string(SERVE_FINDINGS_SCHEMA));
    json_object_set_new(j, "error", json_string("no collection has completed yet"));
    findings = json_members(j, &flen);
    json_decref(j);
    r = serve_result_new(metrics, mlen, findings, flen);
    r->check_status = EXIT_UNKNOWN;
    /* No data yet is as old as the exporter: GpudoctorExporterStale fires when the first
     * collection never completes (a wedged driver, a textfile that blocks). */
    r->age_from_mono_ms = time_mono_ms();
    return r;
}

struct serve_result *serve_cycle(struct serve_state *st)
{
    const struct serve_opts *o = st->opts;
    int64_t t0 = time_mono_us(), base_ms = time_mono_ms() - st->start_mono_ms;
    struct findings f = { 0 };
    struct metrics_cycle cyc = { 0 };
    struct sample *scratch = NULL;
    struct collect_opts co;
    struct serve_result *r;
    struct snapshot *s;
    char *cause = NULL, *metrics, *findings;
    size_t mlen, flen;
    json_t *j;

    co = o->collect;
    collect_session_lend(&st->nvml, &co);
    s = collect_snapshot(&co, &cause);
    collect_session_check(&st->nvml, s);
    if (s != NULL && o->state_dir != NULL)
        collect_state(s, o->state_dir); /* acknowledgements and the past, read every cycle */
    if (s != NULL) {
        struct history h = serve_history_view(&st->hist, s, base_ms, &scratch);

        rules_run(s, &h, o->rules, &f);
        free(scratch);
        cyc.check_status = rules_exit_status(s, &f);
        j = render_findings_json(SERVE_FINDINGS_SCHEMA, s, &f, cyc.check_status);
        if (st->last_failed)
            fprintf(stderr, "gpudoctor serve: collection works again\n");
        st->last_failed = false;
    } else {
        cyc.check_status = EXIT_UNKNOWN;
        j = failure_json(cause);
        if (!st->last_failed)
            fprintf(stderr, "gpudoctor serve: collection failed: %s\n", cause);
        st->last_failed = true;
    }
    st->cycles++;
    cyc.success = s != NULL;
    cyc.cycles = st->cycles;
    cyc.completed_ms = time_real_ms();
    cyc.duration_s = (double)(time_mono_us() - t0) / 1e6;
    serve_bench_refresh(st);
    cyc.bench_read = st->bench_read;
    if (st->bench_last != NULL) {
        cyc.bench = &st->bench_last->bench;
        cyc.bench_completed_ms = bench_completed_ms(st->bench_last);
    }
    metrics_memory_update(&st->memory, s);
    cyc.memory = &st->memory;
    metrics = metrics_render(s, s ? &f : NULL, &cyc, &o->metrics, &mlen);
    findings = json_members(j, &flen);
    json_decref(j);

    r = serve_result_new(metrics, mlen, findings, flen);
    r->completed_mono_ms = time_mono_ms();
    r->completed_ms = cyc.completed_ms;
    r->success = cyc.success;
    r->check_status = cyc.check_status;

    serve_history_keep(&st->hist, s, base_ms);
    findings_free(&f);
    snapshot_free(st->unrecorded); /* a cycle whose record was skipped: this one has it all */
    st->unrecorded = s;
    free(cause);
    return r;
}

int serve_write_textfile(const char *dir, const struct serve_result *r, char **cause)
{
    char *path = xasprintf("%s/gpudoctor.prom", dir);
    /* node_exporter, which reads it, seldom runs as root: readable by all, as metrics are. A
     * link, FIFO or device in its place is replaced, never followed or written to (opening a
     * FIFO blocks; following a link would replace, and make 0644, whatever it names). */
    int rc = file_replace_atomic(path, r->metrics, r->metrics_len, 0644, cause);

    free(path);
    return rc;
}
