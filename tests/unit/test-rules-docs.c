/*
 * The documentation generated from the tables must be what is committed: docs/rules.md is
 * `gpudoctor explain --markdown`, the threshold table of docs/config.md is
 * `explain --thresholds --markdown`, and etc/gpudoctor.conf lists every key at its default.
 * When one fails, regenerate the file (docs/check.md, "Adding a rule").
 */
#include "rules/config.h"
#include "rules/docs.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static char *slurp(const char *rel)
{
    char path[512], *text = NULL;
    ssize_t n;

    snprintf(path, sizeof(path), "%s/%s", TEST_SOURCE_DIR, rel);
    n = file_slurp_at(AT_FDCWD, path, 4u << 20, &text);
    if (n < 0)
        fail_msg("cannot read %s", path);
    return text;
}

/* The first line where a and b differ, for a message that helps. */
static void assert_same_text(const char *want, const char *have, const char *what)
{
    int line = 1;
    size_t i = 0;

    while (want[i] && want[i] == have[i]) {
        line += want[i] == '\n';
        i++;
    }
    if (want[i] != '\0')
        fail_msg("%s differs from the table at line %d: regenerate it", what, line);
}

static void test_rules_md_is_generated(void **state)
{
    char *committed = slurp("docs/rules.md"), *generated = rules_markdown();

    (void)state;
    assert_same_text(generated, committed, "docs/rules.md");
    /* Every rule has its section. */
    for (size_t i = 0; i < n_rules; i++) {
        char head[96];

        snprintf(head, sizeof(head), "\n## %s\n", rule_table[i]->id);
        assert_non_null(strstr(committed, head));
    }
    free(committed);
    free(generated);
}

static void test_config_md_table_is_generated(void **state)
{
    char *committed = slurp("docs/config.md"), *generated = thresholds_markdown();
    const char *begin = strstr(committed, THRESHOLDS_BEGIN);

    (void)state;
    assert_non_null(begin);
    assert_same_text(generated, begin, "the threshold table of docs/config.md");
    for (int i = 0; i < TH__COUNT; i++) {
        char key[64];

        snprintf(key, sizeof(key), "| `%s` |", threshold_defs[i].name);
        assert_non_null(strstr(committed, key));
    }
    free(committed);
    free(generated);
}

/* The example config lists every key, commented out at its default; uncommented it parses to
   exactly the defaults. */
static void test_example_config(void **state)
{
    char *text = slurp("etc/gpudoctor.conf"), *plain, *cause = NULL;
    struct config c;
    size_t n = 0;

    (void)state;
    plain = xcalloc(strlen(text) + 1, 1);
    /* "# key = value" -> "key = value"; prose comments stay comments. */
    for (const char *line = text; *line;) {
        char *out = plain + strlen(plain);
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line + 1) : strlen(line);

        const char *eq = strstr(line, " = ");
        bool key = strncmp(line, "# ", 2) == 0 && eq && eq < line + len && eq > line + 2;

        /* A commented key is "# name = value" with a lower-case name: not prose, not disable. */
        for (const char *p = line + 2; key && p < eq; p++)
            key = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
        if (key && strncmp(line, "# disable", 9) != 0) {
            memcpy(out, line + 2, len - 2);
            n += strncmp(line, "# slurm_drain", 13) != 0; /* read too, but not a threshold */
        } else {
            memcpy(out, line, len);
        }
        line += len;
    }
    assert_int_equal(n, TH__COUNT);
    config_init(&c);
    if (config_parse(&c, plain, "etc/gpudoctor.conf", &cause) != 0)
        fail_msg("%s", cause);
    for (int i = 0; i < TH__COUNT; i++) {
        assert_non_null(c.rules.th.origin[i]);
        assert_true(c.rules.th.v[i] == threshold_defs[i].def);
    }
    config_free(&c);
    free(plain);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules_md_is_generated),
        cmocka_unit_test(test_config_md_table_is_generated),
        cmocka_unit_test(test_example_config),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
