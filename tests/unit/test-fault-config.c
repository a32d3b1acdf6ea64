/*
 * Regression test for what fuzzing found in the configuration parser (docs/reliability.md, "Found
 * and fixed"): the smallest input that showed the fault, and the answer the parser gives now. The
 * same input is in fuzz/corpus/config, which the ctest test fuzz/config replays.
 */
#include "rules/config.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/*
 * A configuration line whose key is long and unknown: the "did you mean" search computed an edit
 * distance for every name once per candidate distance up to a quarter of the key's length, so a
 * 20 kB key took 110 s and the 1 MiB a config file may hold would take days. Now each distance
 * is computed once, and not at all for a name whose length alone is too far. The alarm turns a
 * relapse into a failure instead of a hung test.
 */
static void test_config_long_unknown_key(void **state)
{
    size_t len = CONFIG_MAX_BYTES - 16;
    char *text = xmalloc(len + 8), *cause = NULL;
    struct config c;

    (void)state;
    memset(text, 'x', len);
    memcpy(text + len, " = 1\n", 6);
    config_init(&c);
    alarm(20);
    assert_int_equal(config_parse(&c, text, "big.conf", &cause), -1);
    alarm(0);
    assert_non_null(cause);
    assert_true(strncmp(cause, "big.conf:1: unknown key 'xxx", 28) == 0);
    free(cause);
    config_free(&c);

    /* a misspelling is still found */
    config_init(&c);
    assert_int_equal(config_parse(&c, "mem_nearly_ful_pct = 90\n", "a.conf", &cause), -1);
    assert_non_null(strstr(cause, "did you mean 'mem_nearly_full_pct'"));
    free(cause);
    config_free(&c);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_long_unknown_key),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
