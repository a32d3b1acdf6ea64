/*
 * Regression tests for what fuzzing found about text that reaches terminals (docs/reliability.md,
 * "Found and fixed"): the smallest inputs that showed the fault, and what comes out now. The
 * same inputs are in fuzz/corpus/args, replayed by the ctest test fuzz/args.
 */
#include "util/strutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* C1 controls (U+009B is CSI) pass as valid UTF-8, and terminals act on them like ESC [. */
static void test_printable_c1(void **state)
{
    char *s;

    (void)state;
    s = str_printable("a\xc2\x9b"
                      "31mb\xc2\xa0"
                      "c");
    assert_string_equal(s, "a\\xc2\\x9b31mb\xc2\xa0"
                           "c"); /* NBSP (U+00A0) is text */
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printable_c1),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
