/* The config file: thresholds and disabled rules, and errors that say file:line and what. */
#include "rules/config.h"
#include "rules/suggest.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void test_defaults(void **state)
{
    struct config c;

    (void)state;
    config_init(&c);
    assert_int_equal((int)c.rules.th.v[TH_MEM_NEARLY_FULL_PCT], 95);
    assert_null(c.rules.th.origin[TH_MEM_NEARLY_FULL_PCT]);
    assert_null(c.rules.disabled);
    config_free(&c);
}

static void test_parse_values_comments_and_disable(void **state)
{
    const char *text = "# site thresholds\n"
                       "\n"
                       "mem_nearly_full_pct = 90   # our jobs run close to the limit\n"
                       "  thermal_margin_c=3\n"
                       "disable = clock.persistence-off, pcie.shared-switch\n";
    struct config c;
    char *cause = NULL;

    (void)state;
    config_init(&c);
    assert_int_equal(config_parse(&c, text, "site.conf", &cause), 0);
    assert_null(cause);
    assert_true(c.rules.th.v[TH_MEM_NEARLY_FULL_PCT] == 90.0);
    assert_string_equal(c.rules.th.origin[TH_MEM_NEARLY_FULL_PCT], "site.conf:3");
    assert_true(c.rules.th.v[TH_THERMAL_MARGIN_C] == 3.0);
    assert_string_equal(c.rules.th.origin[TH_THERMAL_MARGIN_C], "site.conf:4");
    /* Untouched keys keep their default. */
    assert_true(c.rules.th.v[TH_FS_FULL_PCT] == threshold_defs[TH_FS_FULL_PCT].def);
    assert_non_null(c.rules.disabled);
    assert_true(c.rules.disabled[rule_position(rule_find("clock.persistence-off"))]);
    assert_true(c.rules.disabled[rule_position(rule_find("pcie.shared-switch"))]);
    assert_false(c.rules.disabled[rule_position(rule_find("mem.nearly-full"))]);
    config_free(&c);
}

/* Each bad line: the error names the file, the line and what is wrong. */
static void expect_error(const char *text, const char *want)
{
    struct config c;
    char *cause = NULL;

    config_init(&c);
    assert_int_equal(config_parse(&c, text, "bad.conf", &cause), -1);
    assert_non_null(cause);
    if (strstr(cause, want) == NULL)
        fail_msg("error '%s' does not contain '%s'", cause, want);
    free(cause);
    config_free(&c);
}

static void test_errors_name_file_and_line(void **state)
{
    (void)state;
    expect_error("\n\nmem_nearly_full_pct 90\n", "bad.conf:3: expected 'key = value'");
    expect_error("mem_nearly_full_pct = ninety\n", "bad.conf:1: mem_nearly_full_pct: 'ninety' is "
                                                   "not a number");
    expect_error("# ok\nmem_nearly_full_pct = 250\n", "bad.conf:2: mem_nearly_full_pct: 250 is "
                                                      "out of range (1 to 100 %)");
    expect_error("mem_nearly_ful_pct = 90\n", "bad.conf:1: unknown key 'mem_nearly_ful_pct' (did "
                                              "you mean 'mem_nearly_full_pct'");
    expect_error("= 3\n", "bad.conf:1: no key before '='");
    expect_error("thermal_margin_c =\n", "bad.conf:1: thermal_margin_c: no value");
    expect_error("disable = mem.nearly-ful\n",
                 "bad.conf:1: disable: unknown rule "
                 "'mem.nearly-ful' (did you mean 'mem.nearly-full'?)");
    expect_error("mem_nearly_full_pct = nan\n", "not a number");
}

/* Thresholds are plain decimal numbers: hex, exponents and signs strtod would take are refused,
 * naming the file, line and key; a klog_max_age_h above 0 (the whole log) but below an hour
 * would ignore every kernel-log event, and is refused too. */
static void test_plain_decimal_and_least(void **state)
{
    struct config c;
    char *cause = NULL;

    (void)state;
    expect_error("\nmem_nearly_full_pct = 0x5a\n",
                 "bad.conf:2: mem_nearly_full_pct: '0x5a' is not a number (plain decimal digits");
    expect_error("thermal_margin_c = 1e-300\n", "bad.conf:1: thermal_margin_c: '1e-300' is not a");
    expect_error("thermal_margin_c = +5\n", "'+5' is not a number");
    expect_error("thermal_margin_c = 5e0\n", "'5e0' is not a number");
    expect_error("thermal_margin_c = inf\n", "'inf' is not a number");
    expect_error("thermal_margin_c = 1.2.3\n", "'1.2.3' is not a number");
    expect_error("klog_max_age_h = 0.0000001\n",
                 "bad.conf:1: klog_max_age_h: 1e-07 is out of range (0, or 1 to 1e+06 h)");
    expect_error("klog_max_age_h = 0.5\n", "0.5 is out of range (0, or 1 to");
    config_init(&c);
    assert_int_equal(config_parse(&c,
                                  "thermal_margin_c = 2.5\nmem_nearly_full_pct = 90.\n"
                                  "klog_max_age_h = 0\ngpu_idle_util_pct = .5 \n",
                                  "ok.conf", &cause),
                     0);
    assert_true(c.rules.th.v[TH_THERMAL_MARGIN_C] == 2.5);
    assert_true(c.rules.th.v[TH_MEM_NEARLY_FULL_PCT] == 90);
    assert_true(c.rules.th.v[TH_KLOG_MAX_AGE_H] == 0);
    assert_true(c.rules.th.v[TH_GPU_IDLE_UTIL_PCT] == 0.5);
    assert_int_equal(config_set(&c, "klog_max_age_h=1", &cause), 0);
    assert_int_equal(config_set(&c, "mem_nearly_full_pct=0x5a", &cause), -1);
    assert_non_null(strstr(cause, "--set: mem_nearly_full_pct: '0x5a' is not a number"));
    free(cause);
    config_free(&c);
}

static void test_set_overrides_file(void **state)
{
    struct config c;
    char *cause = NULL;

    (void)state;
    config_init(&c);
    assert_int_equal(config_parse(&c, "holder_min_mib = 512\n", "a.conf", &cause), 0);
    assert_int_equal(config_set(&c, "holder_min_mib=2048", &cause), 0);
    assert_true(c.rules.th.v[TH_HOLDER_MIN_MIB] == 2048.0);
    assert_string_equal(c.rules.th.origin[TH_HOLDER_MIN_MIB], "--set");
    assert_int_equal(config_set(&c, "holder_min_mib", &cause), -1);
    assert_non_null(strstr(cause, "--set: expected key=value"));
    free(cause);
    cause = NULL;
    assert_int_equal(config_set(&c, "nope=1", &cause), -1);
    assert_non_null(strstr(cause, "--set: unknown key 'nope'"));
    free(cause);
    config_free(&c);
}

static void test_load_missing_and_optional(void **state)
{
    char path[] = "/tmp/gpudoctor-test-config-XXXXXX";
    struct config c;
    char *cause = NULL;
    int fd;

    (void)state;
    config_init(&c);
    assert_int_equal(config_load(&c, "/nonexistent/gpudoctor.conf", true, &cause), 0);
    assert_null(c.path);
    assert_int_equal(config_load(&c, "/nonexistent/gpudoctor.conf", false, &cause), -1);
    assert_non_null(strstr(cause, "/nonexistent/gpudoctor.conf: No such file or directory"));
    free(cause);
    cause = NULL;

    /* A NUL byte makes it binary, not a config file. */
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "a\0b\n", 4), 4);
    close(fd);
    assert_int_equal(config_load(&c, path, false, &cause), -1);
    assert_non_null(strstr(cause, "NUL byte"));
    free(cause);
    cause = NULL;

    /* A real file: its path is kept and origins name it. */
    fd = open(path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "fs_full_pct = 97\n", 17), 17);
    close(fd);
    assert_int_equal(config_load(&c, path, false, &cause), 0);
    assert_string_equal(c.path, path);
    assert_true(c.rules.th.v[TH_FS_FULL_PCT] == 97.0);
    assert_non_null(strstr(c.rules.th.origin[TH_FS_FULL_PCT], path));
    unlink(path);
    config_free(&c);
}

/* As root, a file that someone else can write (its group, every user, its owner if not root)
 * is refused: that someone would choose root's rules. /dev/null (0666) is a device of root's. */
static void test_load_refuses_writable_by_others(void **state)
{
    char path[] = "/tmp/gpudoctor-test-config-XXXXXX";
    struct config c;
    char *cause = NULL;
    int fd;

    (void)state;
    if (geteuid() != 0)
        skip();
    config_init(&c);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "disable = health.xid\n", 21), 21);
    close(fd);
    assert_int_equal(chmod(path, 0666), 0);
    assert_int_equal(config_load(&c, path, false, &cause), -1);
    assert_non_null(strstr(cause, ": writable by its group or by every user (mode 0666): not used, "
                                  "since gpudoctor runs as root (chmod go-w it)"));
    free(cause);
    assert_int_equal(chmod(path, 0620), 0);
    assert_int_equal(config_load(&c, path, true, &cause), -1); /* optional: still refused */
    assert_non_null(strstr(cause, "(mode 0620)"));
    free(cause);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(chown(path, 65534, 65534), 0);
    assert_int_equal(config_load(&c, path, false, &cause), -1);
    assert_non_null(strstr(cause, ": owned by uid 65534, not by root: not used"));
    free(cause);
    assert_null(c.path); /* nothing of it was taken */
    assert_int_equal(chown(path, 0, 0), 0);
    assert_int_equal(config_load(&c, path, false, &cause), 0);
    assert_string_equal(c.path, path);
    assert_int_equal(config_load(&c, "/dev/null", false, &cause), 0);
    unlink(path);
    config_free(&c);
}

static void test_every_threshold_parses_its_default(void **state)
{
    struct config c;
    char line[128], *cause = NULL;

    (void)state;
    config_init(&c);
    for (int i = 0; i < TH__COUNT; i++) {
        const struct threshold_def *d = &threshold_defs[i];

        assert_true(d->def >= d->min && d->def <= d->max);
        assert_int_equal(threshold_find(d->name), i);
        snprintf(line, sizeof(line), "%s = %.17g\n", d->name, d->def);
        if (config_parse(&c, line, "t.conf", &cause) != 0)
            fail_msg("%s", cause);
    }
    config_free(&c);
}

static void test_suggestions(void **state)
{
    const char *names[] = { "proc.stopped-holder", "proc.zombie-holder", "mem.full-idle" };
    const char *out[3];

    (void)state;
    assert_int_equal(suggest_distance("kitten", "sitting"), 3);
    assert_int_equal(suggest_distance("", "abc"), 3);
    assert_int_equal(suggest_pick("proc.stoped-holder", names, 3, out, 3), 1);
    assert_string_equal(out[0], "proc.stopped-holder");
    /* A part of an id finds the ids containing it. */
    assert_int_equal(suggest_pick("holder", names, 3, out, 3), 2);
    assert_int_equal(suggest_pick("xyzzy-nothing-like-it", names, 3, out, 3), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_parse_values_comments_and_disable),
        cmocka_unit_test(test_errors_name_file_and_line),
        cmocka_unit_test(test_plain_decimal_and_least),
        cmocka_unit_test(test_set_overrides_file),
        cmocka_unit_test(test_load_missing_and_optional),
        cmocka_unit_test(test_load_refuses_writable_by_others),
        cmocka_unit_test(test_every_threshold_parses_its_default),
        cmocka_unit_test(test_suggestions),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
