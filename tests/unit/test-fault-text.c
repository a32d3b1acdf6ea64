/*
 * Regression tests for what fuzzing found about text that reaches terminals
 * (docs/reliability.md, "Found and fixed"): the smallest inputs that showed the
 * fault, and what comes out now. The same inputs are in fuzz/corpus/args and
 * fuzz/corpus/stack, replayed by the ctest tests fuzz/args and fuzz/stack.
 */
#include "collect/stack-versions.h"
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

/* C1 controls (U+009B is CSI) pass as valid UTF-8, and terminals act on them
 * like ESC [. */
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

/*
 * Versions read from a user's site-packages (pip METADATA, torch/version.py,
 * dist-info names) went into the report as they were: a package could put
 * terminal escapes on the screen of the root who runs gpudoctor.
 */
static void test_stack_versions_printable(void **state)
{
    char *v;

    (void)state;
    v = stackver_metadata_version("Metadata-Version: 2.1\nName: torch\n"
                                  "Version: 2.3.0\x1b]0;owned\x07\n\n");
    assert_string_equal(v, "2.3.0\\x1b]0;owned\\x07");
    free(v);
    v = stackver_py_assign("__version__ = '2.1.0\x1b[2J'\n", "__version__", NULL);
    assert_string_equal(v, "2.1.0\\x1b[2J");
    free(v);
    assert_true(stackver_dist_info("torch-2.1\x9b"
                                   "1m.dist-info",
                                   "torch", &v));
    assert_string_equal(v, "2.1\\x9b1m");
    free(v);
    /* plain versions are untouched */
    v = stackver_metadata_version("Name: torch\nVersion: 2.3.0+cu121\n");
    assert_string_equal(v, "2.3.0+cu121");
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printable_c1),
        cmocka_unit_test(test_stack_versions_printable),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
