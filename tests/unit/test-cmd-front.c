/*
 * The shared command front (src/cmd/front.c) on a command made up for the test: shared options
 * land in struct cmd_front, the command's own go to its function, a bad value anywhere is status
 * 64 whatever came before it, an own option replaces a shared one of the same name, --timeout
 * follows the window unless given, operands are counted, the configuration is read, the render
 * options follow --color and --width, and the help is printed from the rows within 80 columns.
 */
#include "cmd/cmd.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

enum { OPT_LOUD = OPT__COMMON_END, OPT_OWN_WINDOW, OPT_LEVEL };

static const struct cmd_option options[] = {
    { NULL, 0, 0, NULL, "Its own:" },
    { "loud", OPT_LOUD, no_argument, NULL, "be loud" },
    { "level", OPT_LEVEL, required_argument, "N",
      "a level from 1 to 9, with a help text long enough that it has to be wrapped onto the "
      "next lines of the help, at the help column" },
    { "count", 'c', required_argument, "N", "how many" },
    { NULL, 0, 0, NULL, NULL },
};

static const struct cmd_option own_window[] = {
    { "window", OPT_OWN_WINDOW, required_argument, "DUR", "its own window" },
    { NULL, 0, 0, NULL, NULL },
};

struct seen {
    bool loud;
    int level, count;
    const char *window;
};

static int option(void *ctx, int key, char *arg)
{
    struct seen *s = ctx;

    switch (key) {
    case OPT_LOUD:
        s->loud = true;
        return 0;
    case OPT_LEVEL:
        s->level = atoi(arg);
        if (s->level < 1 || s->level > 9) {
            cmd_error("test", "--level: '%s' is not from 1 to 9", arg);
            return EXIT_USAGE;
        }
        return 0;
    case 'c':
        s->count = atoi(arg);
        return 0;
    case OPT_OWN_WINDOW:
        s->window = arg;
        return 0;
    }
    fail_msg("option key %d reached the command", key);
    return EXIT_USAGE;
}

static const struct cmd test_cmd = {
    .name = "test",
    .synopsis = "[options] [NAME]",
    .summary = "a command for the test",
    .about = "A command for the test.\n",
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_CONFIG | CMD_G_JSON | CMD_G_COLOR | CMD_G_WIDTH,
    .window_ms = 2000,
    .max_operands = 1,
    .epilogue = "Exit status: 0.\n",
};

/* Parses "test" followed by the arguments (NULL-ended) into f and s; returns the status. */
static int parse(struct cmd_front *f, struct seen *s, const struct cmd *c, ...)
{
    char *argv[32];
    int argc = 0, rc;
    va_list ap;

    memset(s, 0, sizeof(*s));
    argv[argc++] = (char *)"gpudoctor test";
    va_start(ap, c);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    rc = cmd_front_parse(f, c, argc, argv, option, s);
    return rc;
}

static void test_shared_and_own(void **state)
{
    struct cmd_front f;
    struct seen s;

    (void)state;
    assert_int_equal(parse(&f, &s, &test_cmd, "--loud", "--window", "2m30s", "-c", "3", "--json",
                           "--level", "4", "--root", "/tmp", "node17", NULL),
                     CMD_GO);
    assert_true(s.loud);
    assert_int_equal(s.count, 3);
    assert_int_equal(s.level, 4);
    assert_true(f.json);
    assert_string_equal(f.collect.root, "/tmp");
    assert_int_equal(f.collect.window_ms, 150000);
    assert_int_equal(f.collect.timeout_ms, 150000 + DEFAULT_TIMEOUT_MS); /* the window + 10s */
    assert_true(cmd_front_given(&f, OPT_WINDOW));
    assert_false(cmd_front_given(&f, OPT_TIMEOUT));
    assert_int_equal(f.n_operands, 1);
    assert_string_equal(f.operands[0], "node17");
    cmd_front_free(&f);

    /* defaults: the command's window, the timeout after it */
    assert_int_equal(parse(&f, &s, &test_cmd, NULL), CMD_GO);
    assert_int_equal(f.collect.window_ms, 2000);
    assert_int_equal(f.collect.timeout_ms, 12000);
    assert_false(f.json);
    cmd_front_free(&f);

    /* a given --timeout stays what it was given */
    assert_int_equal(parse(&f, &s, &test_cmd, "--timeout", "1s", "--window", "5s", NULL), CMD_GO);
    assert_int_equal(f.collect.timeout_ms, 1000);
    cmd_front_free(&f);
}

/* A bad value is 64 wherever it is: after a good shared one (serve lost that status), before. */
static void test_bad_values(void **state)
{
    struct cmd_front f;
    struct seen s;

    (void)state;
    assert_int_equal(parse(&f, &s, &test_cmd, "--window", "0", "--level", "0", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--level", "0", "--window", "0", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--loud", "--window", "0x10", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--timeout", "50ms", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--no-such", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--width", "20", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--color=sometimes", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    /* groups not taken are not options: --from, --only, --ascii */
    assert_int_equal(parse(&f, &s, &test_cmd, "--from", "x.json", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--only", "nvml", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--ascii", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    /* one operand at most */
    assert_int_equal(parse(&f, &s, &test_cmd, "a", "b", NULL), EXIT_USAGE);
    cmd_front_free(&f);
    /* the configuration: --set applied, a bad one a usage error */
    assert_int_equal(parse(&f, &s, &test_cmd, "--set", "mem_nearly_full_pct=90", NULL), CMD_GO);
    assert_true(f.config.rules.th.v[TH_MEM_NEARLY_FULL_PCT] == 90);
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--set", "no_such_key=1", NULL), EXIT_USAGE);
    cmd_front_free(&f);
}

static void test_render_options(void **state)
{
    struct cmd_front f;
    struct seen s;

    (void)state;
    unsetenv("COLUMNS");
    assert_int_equal(parse(&f, &s, &test_cmd, "--width", "100", "--color=always", NULL), CMD_GO);
    assert_int_equal(f.render.width, 100);
    assert_true(f.render.color); /* even though stdout is no terminal here */
    cmd_front_free(&f);
    assert_int_equal(parse(&f, &s, &test_cmd, "--color", "--no-color", NULL), CMD_GO);
    assert_false(f.render.color); /* the last one wins */
    assert_int_equal(f.render.width, 80);
    cmd_front_free(&f);
}

/* An own option of a shared name replaces it: the command gets it, the collection does not. */
static void test_own_replaces_shared(void **state)
{
    struct cmd c = test_cmd;
    struct cmd_front f;
    struct seen s;

    (void)state;
    c.options = own_window;
    assert_int_equal(parse(&f, &s, &c, "--window", "30s", NULL), CMD_GO);
    assert_string_equal(s.window, "30s");
    assert_int_equal(f.collect.window_ms, 2000);
    assert_false(cmd_front_given(&f, OPT_WINDOW));
    cmd_front_free(&f);
}

static void test_help(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    const char *line;

    (void)state;
    cmd_usage(&test_cmd, out);
    fclose(out);
    assert_true(strncmp(text, "Usage: gpudoctor test [options] [NAME]\n\nA command for the test.\n",
                        63) == 0);
    /* the heading of its own options, then them; the shared ones from the one table */
    assert_non_null(strstr(text, "\nIts own:\n  --loud            be loud\n"));
    assert_non_null(strstr(text, "\n  -c, --count N     how many\n"));
    assert_non_null(strstr(text, "\n  --window DUR      sample over DUR (default "
                                 "2s; 0 = one reading)\n"));
    assert_non_null(strstr(text, "\n  --json            write JSON instead of text "
                                 "(docs/test.md)\n"));
    assert_non_null(strstr(text, "\n  --color[=WHEN]    colour the output"));
    assert_null(strstr(text, "--from"));
    assert_null(strstr(text, "--only"));
    assert_non_null(strstr(text, "\n  -h, --help        show this help\n\nExit status: 0.\n"));
    /* wrapped at the help column, never past 80 */
    assert_non_null(strstr(text, "\n  --level N         a level from 1 to 9, with a help text long "
                                 "enough that it\n                    has to be wrapped onto"));
    for (line = text; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
        if (strcspn(line, "\n") > 80)
            fail_msg("help line wider than 80: %.*s", (int)strcspn(line, "\n"), line);
    }
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_and_own), cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_render_options), cmocka_unit_test(test_own_replaces_shared),
        cmocka_unit_test(test_help),
    };

    setenv("GPUDOCTOR_CONFIG", "/dev/null", 1);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
