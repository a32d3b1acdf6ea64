/*
 * The renderers: the verdict line, the text report at 80 columns without colour unless asked,
 * the grouped "Not checked" section, the JSON report's shape, and number formatting.
 */
#include "render/format.h"
#include "render/json.h"
#include "render/text.h"
#include "rules/config.h"
#include "util/xalloc.h"

#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define SCENARIOS TEST_SOURCE_DIR "/tests/scenarios/"

struct report {
    struct snapshot *s;
    struct findings f;
    struct config cfg;
};

static void report_load(struct report *r, const char *name)
{
    char path[512], *cause = NULL;

    snprintf(path, sizeof(path), SCENARIOS "%s/snapshot.json", name);
    r->s = snapshot_load(path, &cause);
    if (r->s == NULL)
        fail_msg("%s", cause);
    config_init(&r->cfg);
    memset(&r->f, 0, sizeof(r->f));
    rules_run(r->s, NULL, &r->cfg.rules, &r->f);
}

static void report_free(struct report *r)
{
    findings_free(&r->f);
    config_free(&r->cfg);
    snapshot_free(r->s);
}

/* The report as text, rendered into memory. */
static char *render(const struct report *r, bool color)
{
    struct render_opts ro = { color, 80, false };
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    assert_non_null(out);
    render_report(out, r->s, &r->f, &ro);
    assert_int_equal(fclose(out), 0);
    return buf;
}

/* Columns of a UTF-8 line: every byte but continuation bytes. */
static size_t columns(const char *line, size_t len)
{
    size_t n = 0;

    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)line[i] & 0xc0) != 0x80;
    return n;
}

/* Every line fits 80 columns, except commands (which must paste whole). */
static void assert_fits_80(const char *text)
{
    const char *line = text;

    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        bool command = len > 15 && strncmp(line, "               ", 15) == 0 && line[15] != ' ' &&
                       line[15] != '#';

        if (columns(line, len) > 80 && !command)
            fail_msg("line wider than 80 columns: %.*s", (int)len, line);
        line += len + (end ? 1 : 0);
    }
}

static void test_verdicts(void **state)
{
    struct report r;
    char *v;

    (void)state;
    report_load(&r, "stopped-holder");
    v = render_verdict(r.s, &r.f, false);
    assert_string_equal(v, "1 critical — GPU 3 memory (71.2 GiB) held by stopped process 4121 "
                           "(alice: python train.py --lr 3e-4)");
    free(v);
    report_free(&r);

    report_load(&r, "ecc-uncorrectable");
    v = render_verdict(r.s, &r.f, false);
    assert_true(strncmp(v, "1 critical, 1 warning — GPU 2 had 2 uncorrectable ECC errors", 61) ==
                0);
    free(v);
    report_free(&r);

    report_load(&r, "healthy-8gpu-busy");
    v = render_verdict(r.s, &r.f, false);
    assert_string_equal(v, "healthy — 8 GPUs checked, no problems found (notes below)");
    free(v);
    assert_string_equal(render_status(rules_exit_status(r.s, &r.f)), "healthy");
    report_free(&r);

    /* An error given that nothing here explains: not "healthy", but what it means is below. */
    report_load(&r, "shm-error-large");
    v = render_verdict(r.s, &r.f, false);
    assert_string_equal(v, "no fault found on this machine (8 GPUs checked): what the error "
                           "given means is below");
    free(v);
    assert_string_equal(render_status(rules_exit_status(r.s, &r.f)), "healthy");
    report_free(&r);

    report_load(&r, "no-gpu");
    v = render_verdict(r.s, &r.f, false);
    assert_non_null(strstr(v, "No NVIDIA GPU found"));
    assert_string_equal(render_status(rules_exit_status(r.s, &r.f)), "unknown");
    free(v);
    report_free(&r);
}

static void test_text_report(void **state)
{
    struct report r;
    char *text;
    const char *finding, *table, *procs;

    (void)state;
    report_load(&r, "stopped-holder");
    text = render(&r, false);
    /* The verdict first, then the finding, the GPU table, the processes. */
    assert_true(strncmp(text, "1 critical — GPU 3 memory", 25) == 0);
    finding = strstr(text, "\nCRITICAL  GPU 3 memory (71.2 GiB) held by stopped process 4121");
    table = strstr(text, "\nGPU  NAME");
    procs = strstr(text, "\nGPU  PID     USER      STATE");
    assert_non_null(finding);
    assert_non_null(table);
    assert_non_null(procs);
    assert_true(finding < table && table < procs);
    assert_non_null(strstr(text, "[proc.stopped-holder] GPU 3 (GPU-6f3c5dc4), pid 4121, alice"));
    assert_non_null(strstr(text, "          - state T: stopped"));
    assert_non_null(strstr(text, "          fix: # resume it"));
    assert_non_null(strstr(text, "\n               kill -CONT 4121\n"));
    assert_non_null(
        strstr(text, "  3  4121    alice     stopped   2h13m  71.2 GiB  python train.py"));
    assert_null(strchr(text, '\033'));
    assert_fits_80(text);
    free(text);

    /* Colour only when asked, and the text is otherwise the same. */
    text = render(&r, true);
    assert_non_null(strstr(text, "\033[1;31mCRITICAL"));
    free(text);
    report_free(&r);
}

static void test_every_scenario_fits_80_columns(void **state)
{
    static const char *const names[] = { "xids",         "input-starved", "cuda-too-new",
                                         "shared-gpu",   "no-driver",     "gpu-lost",
                                         "pcie-replays", "tmp-full",      "graphics-on-compute",
                                         "compute-mode", "oom-kill",      "thermal-slowdown" };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
        struct report r;
        char *text;

        report_load(&r, names[i]);
        text = render(&r, false);
        assert_fits_80(text);
        free(text);
        report_free(&r);
    }
}

static void test_not_checked_is_grouped(void **state)
{
    struct report r;
    struct render_opts ro = { false, 80, false };
    char *buf = NULL;
    size_t len = 0, lines = 0;
    FILE *out;

    (void)state;
    report_load(&r, "healthy-desktop-display");
    /* The GeForce has no ECC: one line for the GPU, naming the rule, not one per field. */
    out = open_memstream(&buf, &len);
    render_not_checked(out, r.s, &r.f, &ro);
    fclose(out);
    assert_non_null(strstr(buf, "\nNot checked\n"));
    assert_non_null(strstr(buf, "  ecc_mode NOT_SUPPORTED on GPU 0: health.ecc-uncorrectable\n"));
    for (const char *p = buf; (p = strstr(p, "ecc_mode NOT_SUPPORTED")) != NULL; p++)
        lines++;
    assert_int_equal(lines, 1);
    free(buf);
    report_free(&r);

    /* No GPU at all: which rules did not run is noise; what the collectors saw is not. */
    report_load(&r, "no-gpu");
    assert_true(r.f.n_skips > 0);
    out = open_memstream(&buf, &len);
    render_not_checked(out, r.s, &r.f, &ro);
    fclose(out);
    assert_null(strstr(buf, "needs a"));
    assert_non_null(strstr(buf, "collector nvml: unavailable"));
    free(buf);
    report_free(&r);
}

static void test_json_report(void **state)
{
    struct report r;
    json_t *j, *f0, *sub;

    (void)state;
    report_load(&r, "stopped-holder");
    j = render_check_json(r.s, &r.f, rules_exit_status(r.s, &r.f));
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpudoctor.check/1");
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "verdict"), "status")),
                        "critical");
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(j, "verdict"), "exit_code")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "verdict"), "critical")),
                     1);
    f0 = json_array_get(json_object_get(j, "findings"), 0);
    assert_string_equal(json_string_value(json_object_get(f0, "id")), "proc.stopped-holder");
    assert_string_equal(json_string_value(json_object_get(f0, "severity")), "critical");
    assert_string_equal(json_string_value(json_object_get(f0, "category")), "process");
    sub = json_object_get(f0, "subject");
    assert_int_equal(json_integer_value(json_object_get(sub, "gpu_index")), 3);
    assert_int_equal(json_integer_value(json_object_get(sub, "pid")), 4121);
    assert_string_equal(json_string_value(json_object_get(sub, "user")), "alice");
    assert_true(json_is_null(json_object_get(sub, "object")));
    assert_true(json_array_size(json_object_get(f0, "evidence")) >= 2);
    assert_string_equal(json_string_value(json_array_get(json_object_get(f0, "fix"), 0)),
                        "kill -CONT 4121   # resume it (or 'fg' in the shell that stopped it)");
    assert_non_null(strstr(json_string_value(json_object_get(f0, "explanation")), "Ctrl-Z"));
    assert_true(json_is_array(json_object_get(j, "not_checked")));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "snapshot"), "schema")),
        "gpudoctor.snapshot/1");
    json_decref(j);
    report_free(&r);
}

static void test_color_choice(void **state)
{
    struct render_opts ro;
    FILE *f = tmpfile();

    (void)state;
    /* Not a terminal: no colour on auto, whatever the environment says. */
    unsetenv("NO_COLOR");
    unsetenv("COLUMNS");
    render_opts_init(&ro, f, RENDER_AUTO, 0, RENDER_NEVER);
    assert_false(ro.color);
    assert_int_equal(ro.width, 80);
    assert_string_equal(render_red(&ro), "");
    ro.color = true;
    assert_string_equal(render_red(&ro), "\033[1;31m");
    setenv("NO_COLOR", "1", 1);
    render_opts_init(&ro, f, RENDER_AUTO, 0, RENDER_NEVER);
    assert_false(ro.color);
    /* --color=always: for 'less -R', even into a file and despite NO_COLOR; never is never. */
    render_opts_init(&ro, f, RENDER_ALWAYS, 0, RENDER_NEVER);
    assert_true(ro.color);
    unsetenv("NO_COLOR");
    render_opts_init(&ro, f, RENDER_NEVER, 0, RENDER_NEVER);
    assert_false(ro.color);
    fclose(f);
}

static void test_width_choice(void **state)
{
    struct render_opts ro;
    FILE *f = tmpfile();

    (void)state;
    /* Off a terminal: $COLUMNS when it is a number, else 80; always within 40..500. */
    setenv("COLUMNS", "132", 1);
    render_opts_init(&ro, f, RENDER_NEVER, 0, RENDER_NEVER);
    assert_int_equal(ro.width, 132);
    setenv("COLUMNS", "10", 1);
    assert_int_equal(render_term_width(f), RENDER_MIN_WIDTH);
    setenv("COLUMNS", "100000", 1);
    assert_int_equal(render_term_width(f), RENDER_MAX_WIDTH);
    setenv("COLUMNS", "wide", 1);
    assert_int_equal(render_term_width(f), 80);
    setenv("COLUMNS", "0", 1);
    assert_int_equal(render_term_width(f), 80);
    unsetenv("COLUMNS");
    assert_int_equal(render_term_width(f), 80);
    /* --width wins over all of them, clamped too */
    setenv("COLUMNS", "132", 1);
    render_opts_init(&ro, f, RENDER_NEVER, 100, RENDER_NEVER);
    assert_int_equal(ro.width, 100);
    render_opts_init(&ro, f, RENDER_NEVER, 5, RENDER_NEVER);
    assert_int_equal(ro.width, RENDER_MIN_WIDTH);
    unsetenv("COLUMNS");
    fclose(f);
}

static void test_ascii(void **state)
{
    struct render_opts ro = { false, 80, true };
    struct render_out w;
    char *buf = NULL, *s;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len), *into;

    (void)state;
    s = render_ascii("4 critical — GPU 5 at 88 °C, 2×, x², … → ü");
    assert_string_equal(s, "4 critical - GPU 5 at 88 C, 2x, x2, ... -> ?");
    free(s);
    /* a character cut short, and one at the very end */
    s = render_asciin("a\xe2\x80", 3);
    assert_string_equal(s, "a?");
    free(s);
    /* render_out: converted at the end when ro.ascii, untouched otherwise */
    into = render_out_begin(&w, out, &ro);
    assert_true(into != out);
    fputs("healthy — 88 °C\n", into);
    render_out_end(&w);
    ro.ascii = false;
    into = render_out_begin(&w, out, &ro);
    assert_true(into == out);
    fputs("healthy — 88 °C\n", into);
    render_out_end(&w);
    fclose(out);
    assert_string_equal(buf, "healthy - 88 C\nhealthy — 88 °C\n");
    free(buf);
    /* auto: the locale's character set decides (the test runs in the C locale: ASCII) */
    out = tmpfile();
    render_opts_init(&ro, out, RENDER_NEVER, 0, RENDER_AUTO);
    assert_true(ro.ascii);
    render_opts_init(&ro, out, RENDER_NEVER, 0, RENDER_NEVER);
    assert_false(ro.ascii);
    fclose(out);
}

static void test_wrap(void **state)
{
    struct render_opts ro = { false, 30, false };
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    (void)state;
    fputs("- ", out);
    render_wrap(out, &ro, 2, 2, "one two three four five six seven eight nine ten");
    render_wrap(out, &ro, 0, 4, "averyveryverylongwordthatcannotbebrokenanywhere x");
    fclose(out);
    assert_string_equal(buf, "- one two three four five six\n"
                             "  seven eight nine ten\n"
                             "averyveryverylongwordthatcannotbebrokenanywhere\n"
                             "    x\n");
    free(buf);
    /* characters count, not bytes: 29 of them fit in 30 columns, though they are 36 bytes */
    buf = NULL;
    out = open_memstream(&buf, &len);
    render_wrap(out, &ro, 0, 0, "at 88 °C — hot — very — hot x");
    fclose(out);
    assert_string_equal(buf, "at 88 °C — hot — very — hot x\n");
    free(buf);
}

/* Chinese: two columns a character, breaks between any two, closing punctuation never first. */
static void test_wrap_wide(void **state)
{
    struct render_opts ro = { false, 30, false };
    char *buf = NULL, *line;
    size_t len = 0, cols;
    FILE *out;

    (void)state;
    if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) {
        skip();
        return;
    }
    assert_int_equal(render_width("显存 GPU", strlen("显存 GPU")), 8);
    assert_int_equal(render_char("显", 3, &cols), 3);
    assert_int_equal(cols, 2);
    out = open_memstream(&buf, &len);
    render_wrap(out, &ro, 0, 0, "显存显存显存显存显存显存显存显存显存显存显存显存");
    fclose(out);
    /* 24 characters, 48 columns: 15 fill 30 columns, 9 go on */
    assert_string_equal(buf, "显存显存显存显存显存显存显存显\n存显存显存显存显存\n");
    free(buf);

    buf = NULL;
    out = open_memstream(&buf, &len);
    fputs("- ", out);
    render_wrap(out, &ro, 2, 2,
                "GPU 3 的显存（78.7 GiB）被已停止的进程 39104 "
                "占用，请先恢复它，或者在确认不再需要后结束它。");
    fclose(out);
    line = buf;
    for (char *nl; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
        assert_true(render_width(line, (size_t)(nl - line)) <= 30);
        /* continuation lines: the indent, then never closing punctuation */
        if (line != buf) {
            assert_memory_equal(line, "  ", 2);
            assert_true(strncmp(line + 2, "，", strlen("，")) != 0);
            assert_true(strncmp(line + 2, "。", strlen("。")) != 0);
            assert_true(strncmp(line + 2, "）", strlen("）")) != 0);
        }
        /* nor does one end with an opening bracket */
        if (nl - line >= (ptrdiff_t)strlen("（")) {
            assert_true(strncmp(nl - strlen("（"), "（", strlen("（")) != 0);
        }
    }
    /* nothing lost or added but the breaks: no space appears between Chinese characters */
    assert_non_null(strstr(buf, "39104"));
    assert_null(strstr(buf, "进 程"));
    free(buf);
    setlocale(LC_CTYPE, "C");
}

/* What cell and cut write, as a string. */
static char *cell_text(const char *text, size_t width, bool right, bool cut, bool mark)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    assert_non_null(out);
    if (cut)
        render_cut(out, text, width, mark);
    else
        render_cell(out, text, width, right);
    fclose(out);
    return buf;
}

/* Table cells count display columns: a Chinese character is two, and none is ever split. */
static void test_cells_wide(void **state)
{
    static const struct {
        const char *text;
        size_t width;
        bool right, cut, mark;
        const char *want;
    } cases[] = {
        { "已停止", 11, false, false, false, "已停止     " },
        { "已停止", 8, true, false, false, "  已停止" },
        { "stopped", 11, false, false, false, "stopped    " },
        { "空闲占用", 4, false, false, false, "空闲占用" }, /* wider: whole */
        { "python 训练.py", 30, false, true, true, "python 训练.py" },
        { "python 训练.py", 10, false, true, true, "python 训~" },
        { "python 训练.py", 9, false, true, true, "python ~" }, /* 训 would take 9-10 */
        { "python 训练.py", 9, false, true, false, "python 训" },
        { "python 训练.py", 8, false, true, false, "python " },
        { "abc", 0, false, true, true, "" },
    };

    (void)state;
    if (setlocale(LC_CTYPE, "C.UTF-8") == NULL) {
        skip();
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *got =
            cell_text(cases[i].text, cases[i].width, cases[i].right, cases[i].cut, cases[i].mark);

        assert_string_equal(got, cases[i].want);
        free(got);
    }
    setlocale(LC_CTYPE, "C");
}

static void test_formats(void **state)
{
    char b[64];
    const int32_t r1[] = { 0, 1, 2, 3, 5, 7, 8 };
    const int32_t r2[] = { 4 };

    (void)state;
    render_bytes(b, sizeof(b), 512);
    assert_string_equal(b, "512 B");
    render_bytes(b, sizeof(b), 76450000000ULL);
    assert_string_equal(b, "71.2 GiB");
    render_bytes(b, sizeof(b), 150ULL << 30);
    assert_string_equal(b, "150 GiB");
    render_duration(b, sizeof(b), 45);
    assert_string_equal(b, "45s");
    render_duration(b, sizeof(b), 200);
    assert_string_equal(b, "3m20s");
    render_duration(b, sizeof(b), 8000);
    assert_string_equal(b, "2h13m");
    render_duration(b, sizeof(b), 40000);
    assert_string_equal(b, "11h");
    render_duration(b, sizeof(b), 3 * 86400 + 4 * 3600);
    assert_string_equal(b, "3d4h");
    render_duration(b, sizeof(b), -1);
    assert_string_equal(b, "?");
    render_ranges(b, sizeof(b), r1, ARRAY_SIZE(r1));
    assert_string_equal(b, "0-3, 5, 7, 8");
    render_ranges(b, sizeof(b), r2, 1);
    assert_string_equal(b, "4");
    assert_string_equal(render_command("/opt/conda/bin/python -m x /a/b"), "python -m x /a/b");
    assert_string_equal(render_command("python train.py"), "python train.py");
    assert_string_equal(render_command("/usr/bin/python3"), "python3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_verdicts),
        cmocka_unit_test(test_text_report),
        cmocka_unit_test(test_every_scenario_fits_80_columns),
        cmocka_unit_test(test_not_checked_is_grouped),
        cmocka_unit_test(test_json_report),
        cmocka_unit_test(test_color_choice),
        cmocka_unit_test(test_width_choice),
        cmocka_unit_test(test_ascii),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_wrap_wide),
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_cells_wide),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
