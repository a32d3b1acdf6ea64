/*
 * Untrusted input (docs/reliability.md, "Untrusted input"): every string that enters a snapshot is
 * made safe once, whatever its source; every read of a file is bounded by bytes, NUL bytes
 * counted; a NUL is an error with its line and column; the configuration file skips a byte-order
 * mark and quotes bad lines escaped and cut.
 */
#include "collect/klog-parse.h"
#include "collect/nvml-status.h"
#include "render/format.h"
#include "render/text.h"
#include "rules/config.h"
#include "snapshot/snapshot.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char tmpdir[] = "/tmp/gpudoctor-input-XXXXXX";

/* Whether s holds a control byte (C0, DEL, C1) or invalid UTF-8: what must never come out. */
static bool unsafe(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    if (!str_is_utf8(s))
        return true;
    for (; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] < 0xa0))
            return true;
    }
    return false;
}

static char *write_tmp(const char *name, const void *data, size_t len)
{
    char *path = xasprintf("%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    return path;
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    char *cmd = xasprintf("rm -rf '%s'", tmpdir);
    int rc = system(cmd);

    (void)state;
    free(cmd);
    return rc == 0 ? 0 : -1;
}

#define EVIL                                                                                       \
    "\x1b[31mCRIT\x1b[0m\r\nCRITICAL: x\x07\x7f\xc2\x9b"                                           \
    "2J\t"
#define SAFE "?[31mCRIT?[0m??CRITICAL: x????2J?"

/* Sets key of object o to prefix + EVIL. */
static void evil(json_t *o, const char *key, const char *prefix)
{
    char *v = xasprintf("%s" EVIL, prefix);

    assert_non_null(o);
    assert_int_equal(json_object_set_new(o, key, json_string(v)), 0);
    free(v);
}

/*
 * Every kind of string a snapshot reader fills (table fields, jget_str, notes, lists of paths,
 * kernel-log events), in a real snapshot: each comes out safe.
 */
static void test_snapshot_strings_sanitized(void **state)
{
    json_t *root = json_load_file(TEST_SOURCE_DIR "/tests/scenarios/xids/snapshot.json", 0, NULL);
    json_t *host, *proc, *fs, *paths;
    char *text, *cause = NULL;
    struct snapshot *s;

    (void)state;
    assert_non_null(root);
    evil(root, "hostname", "h");
    evil(root, "root", "/");
    host = json_object_get(json_object_get(root, "collectors"), "host");
    evil(host, "detail", "d");
    json_object_set_new(host, "notes", json_pack("[s]", "n" EVIL));
    evil(json_array_get(json_object_get(root, "gpus"), 0), "name", "g");
    proc = json_array_get(json_object_get(json_object_get(root, "processes"), "processes"), 0);
    evil(proc, "user", "u");
    evil(proc, "cmdline", "c");
    evil(proc, "comm", "m");
    fs = json_object();
    evil(fs, "mount", "/m");
    paths = json_array();
    json_array_append_new(paths, json_string("/p" EVIL));
    json_object_set_new(fs, "paths", paths);
    json_object_set_new(json_object_get(root, "host"), "filesystems", json_pack("[o]", fs));
    evil(json_object_get(root, "driver"), "module_banner", "b");
    evil(json_array_get(json_object_get(json_object_get(root, "driver"), "events"), 0), "message",
         "x");
    text = json_dumps(root, 0);
    json_decref(root);
    assert_non_null(strstr(text, "\\u001B[31mCRIT"));

    s = snapshot_from_json(text, strlen(text), "t.json", &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    free(text);
    assert_string_equal(s->hostname, "h" SAFE);
    assert_string_equal(s->root, "/" SAFE);
    assert_string_equal(s->collectors[COLLECTOR_HOST].detail, "d" SAFE);
    assert_string_equal(s->collectors[COLLECTOR_HOST].notes[0], "n" SAFE);
    assert_string_equal(s->gpus[0].name, "g" SAFE);
    assert_string_equal(s->procs.procs[0].user, "u" SAFE);
    assert_string_equal(s->procs.procs[0].cmdline, "c" SAFE);
    assert_string_equal(s->procs.procs[0].comm, "m" SAFE);
    assert_int_equal(s->host.n_fs, 1);
    assert_string_equal(s->host.fs[0].mount, "/m" SAFE);
    assert_string_equal(s->host.fs[0].paths[0], "/p" SAFE);
    assert_string_equal(s->driver.module_banner, "b" SAFE);
    assert_string_equal(s->driver.events[0].message, "x" SAFE);
    snapshot_free(s);
}

/* An error that quotes the document (an unknown key) quotes it escaped. */
static void test_snapshot_error_escaped(void **state)
{
    const char *text = "{\"schema\": \"gpudoctor.snapshot/1\", \"k\\u001b[2J\\u009b1m\": 1}";
    char *cause = NULL;

    (void)state;
    assert_null(snapshot_from_json(text, strlen(text), "t.json", &cause));
    assert_false(unsafe(cause));
    assert_non_null(strstr(cause, "unknown key \"k\\x1b[2J\\xc2\\x9b1m\""));
    free(cause);
}

/* Live sources that are not /proc: collector notes and details, kernel-log lines. */
static void test_live_strings_sanitized(void **state)
{
    struct collector_status c = { 0 };
    struct klog_parse_opts o = { 0 };
    struct klog_parser p;

    (void)state;
    collector_set(&c, CS_PARTIAL, "cannot read %s", "/x\x1b[2J\r\n");
    collector_note(&c, "%s", "a\x9b\xff\x07");
    assert_string_equal(c.detail, "cannot read /x?[2J??");
    assert_string_equal(c.notes[0], "a???");
    free(c.detail);
    free(c.notes[0]);
    free(c.notes);

    o.max_events = 8;
    klog_parser_init(&p, &o);
    klog_feed_message(&p,
                      "NVRM: Xid (PCI:0000:3b:00): 79, pid=4121, name=py\x1b[31mthon, GPU "
                      "has fallen off the bus\x07.",
                      false, 0, false, 0);
    assert_int_equal(p.n, 1);
    assert_false(unsafe(p.ring[0].message));
    assert_string_equal(p.ring[0].name, "py?[31mthon");
    klog_parser_release(&p);
}

static void test_slurp_text(void **state)
{
    char *path = write_tmp("nul.txt", "ab\ncd\0ef", 8), *text = NULL;

    (void)state;
    /* Stops at the NUL: the text before it, whose length is the NUL's offset. */
    assert_int_equal(file_slurp_text_at(AT_FDCWD, path, 100, &text), -EILSEQ);
    assert_string_equal(text, "ab\ncd");
    free(text);
    /* file_slurp_at reads it all, NULs counted against the limit. */
    assert_int_equal(file_slurp_at(AT_FDCWD, path, 100, &text), 8);
    free(text);
    assert_int_equal(file_slurp_at(AT_FDCWD, path, 7, &text), -EFBIG);
    assert_null(text);
    free(path);
    /* /dev/zero: the first byte ends it. */
    assert_int_equal(file_slurp_text_at(AT_FDCWD, "/dev/zero", 1u << 30, &text), -EILSEQ);
    assert_string_equal(text, "");
    free(text);
    path = write_tmp("plain.txt", "plain\n", 6);
    assert_int_equal(file_slurp_text_at(AT_FDCWD, path, 100, &text), 6);
    assert_string_equal(text, "plain\n");
    free(text);
    assert_int_equal(file_slurp_text_at(AT_FDCWD, path, 5, &text), -EFBIG);
    free(path);
}

static void load_fails(const char *name, const void *data, size_t len, const char *want)
{
    char *path = write_tmp(name, data, len), *cause = NULL, *expect;
    struct snapshot *s = recording_load(path, &cause);

    if (s != NULL)
        fail_msg("%s loaded", name);
    expect = xasprintf("%s%s", path, want);
    if (strncmp(cause, expect, strlen(expect)) != 0)
        fail_msg("message \"%s\" does not start \"%s\"", cause, expect);
    free(expect);
    free(cause);
    free(path);
}

#define CONTEXT "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1000}\n"

static void test_recording_nul(void **state)
{
    static const char mid[] = CONTEXT "{\"t_ms\": 0}\n{\"t_ms\"\0: 1}\n{\"t_ms\": 2}\n";
    static const char first[] = "  {\"sch\0ema\"";
    static const char doc[] = "{\n  \"schema\": \"gpudoctor.snapshot/1\",\n  \"x\0\"\n}\n";
    static const char tail[] = CONTEXT "{\"t_ms\": 0}\n{\"t_ms\": 1000}\n\0\0\0\0";
    char *path, *cause = NULL;
    struct snapshot *s;

    (void)state;
    load_fails("mid.jsonl", mid, sizeof(mid) - 1,
               ":3:8: a NUL byte: neither a snapshot nor a recording");
    load_fails("first.jsonl", first, sizeof(first) - 1, ":1:8: a NUL byte");
    load_fails("doc.json", doc, sizeof(doc) - 1, ":3:5: a NUL byte");
    /* A last line of NULs without its newline, as a crash can leave: ignored. */
    path = write_tmp("tail.jsonl", tail, sizeof(tail) - 1);
    s = recording_load(path, &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    assert_int_equal(s->n_samples, 2);
    snapshot_free(s);
    free(path);
    /* A snapshot read whole stops at its first NUL too. */
    path = write_tmp("doc2.json", doc, sizeof(doc) - 1);
    assert_null(snapshot_load(path, &cause));
    assert_non_null(strstr(cause, ":3:5: a NUL byte"));
    free(cause);
    free(path);
}

/* A recording line longer than 64 MiB (the old limit) loads: the line limit is a snapshot's. */
static void test_recording_wide_line(void **state)
{
    size_t pad = (64u << 20) + 4096;
    const char *head = "{\"schema\": \"gpudoctor.snapshot/1\", \"time_ms\": 1000,";
    const char *rest = "\"hostname\": \"wide\"}\n{\"t_ms\": 0}\n";
    size_t len = strlen(head) + pad + strlen(rest);
    char *text = xmalloc(len), *path, *cause = NULL;
    struct snapshot *s;

    (void)state;
    memcpy(text, head, strlen(head));
    memset(text + strlen(head), ' ', pad);
    memcpy(text + strlen(head) + pad, rest, strlen(rest));
    path = write_tmp("wide.jsonl", text, len);
    free(text);
    s = recording_load(path, &cause);
    if (s == NULL)
        fail_msg("%s", cause);
    assert_string_equal(s->hostname, "wide");
    assert_int_equal(s->n_samples, 1);
    snapshot_free(s);
    free(path);
}

static void test_config(void **state)
{
    struct config c;
    char *cause = NULL, *path, *big;
    size_t n = 900 * 1024;

    (void)state;
    /* A byte-order mark is not part of the first key. */
    config_init(&c);
    assert_int_equal(config_parse(&c, "\xef\xbb\xbfthermal_margin_c = 3\n", "bom.conf", &cause), 0);
    assert_true(c.rules.th.v[TH_THERMAL_MARGIN_C] == 3.0);
    config_free(&c);

    /* A NUL: file, line and column; what follows is not silently dropped. */
    path = write_tmp("nul.conf",
                     "thermal_margin_c = 3\nfs_full_pct = 9\0"
                     "0\n",
                     37);
    config_init(&c);
    assert_int_equal(config_load(&c, path, false, &cause), -1);
    assert_non_null(strstr(cause, "nul.conf:2:16: a NUL byte"));
    free(cause);
    config_free(&c);
    free(path);

    /* What an error quotes of a line is escaped and cut: a 900 KB line, an escape sequence. */
    big = xmalloc(n + 1);
    memset(big, 'k', n);
    memcpy(big, "\x1b[2J", 4);
    big[n] = '\0';
    config_init(&c);
    assert_int_equal(config_parse(&c, big, "big.conf", &cause), -1);
    assert_false(unsafe(cause));
    assert_true(strlen(cause) < 200);
    assert_non_null(strstr(cause, "big.conf:1: expected 'key = value', got '\\x1b[2Jkkk"));
    assert_non_null(strstr(cause, "...'"));
    free(cause);
    config_free(&c);
    memcpy(big + n - 4, "=1\n", 4);
    config_init(&c);
    assert_int_equal(config_parse(&c, big, "big.conf", &cause), -1);
    assert_false(unsafe(cause));
    assert_true(strlen(cause) < 300);
    assert_non_null(strstr(cause, "unknown key '\\x1b[2Jkkk"));
    free(cause);
    config_free(&c);
    free(big);
    config_init(&c);
    assert_int_equal(config_parse(&c, "thermal_margin_c = 3\x1b[2J\n", "v.conf", &cause), -1);
    assert_false(unsafe(cause));
    assert_non_null(strstr(cause, "v.conf:1: thermal_margin_c: '3\\x1b[2J' is not a number"));
    free(cause);
    assert_int_equal(config_set(&c, "disable=\x9bnope", &cause), -1);
    assert_false(unsafe(cause));
    free(cause);
    config_free(&c);
}

/*
 * The streaming reader (processes, GPUs and samples one element at a time) reads what the whole
 * tree reads: the same snapshot written back. A document whose "schema" is not its first key is
 * read whole, so the two are compared on the same content.
 */
static void test_streaming_same_as_whole(void **state)
{
    static const char *const cases[] = { "pcie-replays", "stopped-holder", "xids", "no-gpu" };
    static const char first[] = "\"schema\": \"" SNAPSHOT_SCHEMA "\",";

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *path = xasprintf("%s/tests/scenarios/%s/snapshot.json", TEST_SOURCE_DIR, cases[i]);
        char *text = NULL, *cause = NULL, *moved, *a, *b;
        const char *rest;
        struct snapshot *streamed, *whole;

        assert_true(file_slurp_at(AT_FDCWD, path, 1u << 24, &text) > 0);
        streamed = snapshot_from_json(text, strlen(text), path, &cause);
        if (streamed == NULL)
            fail_msg("%s", cause);
        /* The same members with "schema" last: read whole. */
        rest = strstr(text, first);
        assert_non_null(rest);
        rest += strlen(first);
        moved = xasprintf("{%.*s, \"schema\": \"" SNAPSHOT_SCHEMA "\"}",
                          (int)(strrchr(rest, '}') - rest), rest);
        whole = snapshot_from_json(moved, strlen(moved), path, &cause);
        if (whole == NULL)
            fail_msg("%s: %s", cases[i], cause);
        a = snapshot_to_json(streamed);
        b = snapshot_to_json(whole);
        assert_string_equal(a, b);
        assert_true(streamed->n_gpus > 0 || strcmp(cases[i], "no-gpu") == 0);
        free(a);
        free(b);
        free(moved);
        free(text);
        free(path);
        snapshot_free(streamed);
        snapshot_free(whole);
    }
}

static void from_json_fails(const char *text, const char *want)
{
    char *cause = NULL;

    assert_null(snapshot_from_json(text, strlen(text), "t.json", &cause));
    if (strstr(cause, want) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", cause, want);
    free(cause);
}

/* Errors in streamed elements say where, as the whole tree's did. */
static void test_streaming_errors(void **state)
{
    (void)state;
    /* a wrong value in an element: its path, line and column */
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\",\n \"gpus\": [{\"index\": 0},\n"
                    "  {\"index\": 1, \"temp_c\": \"hot\"}]}",
                    "t.json:3:26: gpus[1].temp_c: expected a non-negative integer");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\", \"processes\": {\"processes\": "
                    "[{\"pid\": \"x\"}]}}",
                    "processes.processes[0]");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\", \"samples\": [{\"t_ms\": 0}, 7]}",
                    "samples[1]: expected an object");
    /* syntax errors, duplicate keys, trailing text: jansson's own messages */
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\",\n \"gpus\": [{\"index\": 0},\n"
                    "  {\"index\": 1,, }]}",
                    "t.json:3:15: string or '}' expected near ','");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [], \"gpus\": []}",
                    "duplicate object key");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\", \"processes\": {\"processes\": [], "
                    "\"processes\": []}}",
                    "duplicate object key");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\"} x", "end of file expected");
    from_json_fails("{\"schema\": \"gpudoctor.snapshot/1\", \"gpus\": [{}", "t.json:1:");
    /* what is not a snapshot is still said so */
    from_json_fails("{\"schema\": \"gpudoctor.scenario/1\", \"gpus\": [{\"index\": 0, \"x\": 1}]}",
                    "unsupported schema");
    from_json_fails("{\"gpus\": [{\"index\": 0, \"x\": 1}]}", "no \"schema\" key");
}

/* Limits said, not silent: GPU lists that do not fit, GPUs beyond what NVML is asked for. */
static void test_ranges_cut_said(void **state)
{
    int32_t v[300];
    char b[64];

    (void)state;
    for (int32_t i = 0; i < 300; i++)
        v[i] = 2 * i;
    render_ranges(b, sizeof(b), v, 300);
    assert_true(strlen(b) < sizeof(b));
    assert_non_null(strstr(b, "0, 2, 4, "));
    assert_string_equal(b + strlen(b) - 5, ", ...");
    render_ranges(b, sizeof(b), v, 3);
    assert_string_equal(b, "0, 2, 4");
    for (int32_t i = 0; i < 300; i++)
        v[i] = i;
    render_ranges(b, sizeof(b), v, 300);
    assert_string_equal(b, "0-299");
    v[0] = 12345;
    render_ranges(b, 4, v, 1); /* not even one fits: said */
    assert_string_equal(b, "...");
}

static void test_gpu_count_said(void **state)
{
    struct nvml_system sys;
    struct collector_status c = { 0 };
    struct gpu *g = xcalloc(3, sizeof(*g));

    (void)state;
    memset(&sys, 0, sizeof(sys));
    sys.attempted = true;
    sys.device_count = 1500;
    for (uint32_t i = 0; i < 3; i++)
        gpu_init(&g[i], i);
    assert_true(nvml_status_judge(&sys, g, 3, &c));
    assert_int_equal(c.state, CS_PARTIAL);
    assert_int_equal(c.n_notes, 1);
    assert_string_equal(c.notes[0], "NVML counts 1500 GPUs; gpudoctor reads 3 of them (at most "
                                    "1024): GPUs 3 and above are not checked");
    free(c.detail);
    free(c.notes[0]);
    free(c.notes);
    for (uint32_t i = 0; i < 3; i++)
        gpu_free(&g[i]);
    free(g);
}

/* The report's "Not checked" names every GPU a rule skipped, past 64 too. */
static void test_not_checked_every_gpu(void **state)
{
    json_t *root = json_load_file(TEST_SOURCE_DIR "/tests/scenarios/no-gpu/snapshot.json", 0, NULL);
    json_t *gpus = json_array();
    char *text, *cause = NULL, *out = NULL;
    size_t out_len = 0;
    struct snapshot *s;
    struct config cfg;
    struct findings f = { 0 };
    struct render_opts ro;
    FILE *mem;

    (void)state;
    assert_non_null(root);
    for (int i = 0; i < 100; i++)
        json_array_append_new(gpus, json_pack("{s:i}", "index", i));
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(json_object_get(root, "nvml"), "device_count", json_integer(100));
    text = json_dumps(root, 0);
    json_decref(root);
    s = snapshot_from_json(text, strlen(text), "g100.json", &cause);
    free(text);
    if (s == NULL)
        fail_msg("%s", cause);
    config_init(&cfg);
    rules_run(s, NULL, &cfg.rules, &f);
    mem = open_memstream(&out, &out_len);
    render_opts_init(&ro, mem, RENDER_NEVER, 80, RENDER_NEVER);
    render_not_checked(mem, s, &f, &ro);
    fclose(mem);
    if (strstr(out, "temp_c not collected on GPUs 0-99: clock.thermal-slowdown") == NULL)
        fail_msg("not every GPU named: %s", out);
    free(out);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* A rule that lists GPUs names every one of them, past 64 too. */
static void test_findings_name_every_gpu(void **state)
{
    json_t *root = json_load_file(TEST_SOURCE_DIR "/tests/scenarios/no-gpu/snapshot.json", 0, NULL);
    json_t *gpus = json_array();
    char *text, *cause = NULL;
    struct snapshot *s;
    struct config cfg;
    struct findings f = { 0 };
    bool found = false;

    (void)state;
    assert_non_null(root);
    for (int i = 0; i < 100; i++)
        json_array_append_new(gpus, json_pack("{s:i,s:b}", "index", i, "persistence_mode", 0));
    json_object_set_new(root, "gpus", gpus);
    json_object_set_new(json_object_get(root, "nvml"), "device_count", json_integer(100));
    text = json_dumps(root, 0);
    json_decref(root);
    s = snapshot_from_json(text, strlen(text), "g100.json", &cause);
    free(text);
    if (s == NULL)
        fail_msg("%s", cause);
    config_init(&cfg);
    rules_run(s, NULL, &cfg.rules, &f);
    for (size_t i = 0; i < f.n; i++) {
        if (strcmp(f.items[i].rule->id, "clock.persistence-off") != 0)
            continue;
        found = true;
        assert_string_equal(f.items[i].title, "Persistence mode off on GPUs 0-99");
        assert_string_equal(f.items[i].evidence[0], "persistence mode disabled on 100 of 100 GPUs");
    }
    assert_true(found);
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_snapshot_strings_sanitized),
        cmocka_unit_test(test_snapshot_error_escaped),
        cmocka_unit_test(test_live_strings_sanitized),
        cmocka_unit_test(test_slurp_text),
        cmocka_unit_test(test_recording_nul),
        cmocka_unit_test(test_recording_wide_line),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_streaming_same_as_whole),
        cmocka_unit_test(test_streaming_errors),
        cmocka_unit_test(test_ranges_cut_said),
        cmocka_unit_test(test_gpu_count_said),
        cmocka_unit_test(test_not_checked_every_gpu),
        cmocka_unit_test(test_findings_name_every_gpu),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
