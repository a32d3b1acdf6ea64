/*
 * Regression test for what fuzzing found in the host parsers (docs/reliability.md, "Found and
 * fixed"): the smallest input that showed the fault, and the answer the parser gives now. The same
 * input is in fuzz/corpus/hostfs, which the ctest test fuzz/hostfs replays.
 */
#include "collect/hostfs.h"

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
 * /proc/meminfo cut after a key: the message about the missing value quoted a token that was
 * never set (uninitialised stack memory: a crash, or garbage in the note).
 */
static void test_meminfo_key_without_value(void **state)
{
    struct hostfs_meminfo m;
    char *cause = NULL;

    (void)state;
    assert_int_equal(hostfs_parse_meminfo("MemTotal:     ", &m, &cause), -1);
    assert_string_equal(cause, "line 1: expected a number of kB, got nothing (truncated?)");
    assert_int_equal(m.have, 0);
    free(cause);
    cause = NULL;
    /* the same for the other parsers that quote a missing token */
    assert_int_equal(
        hostfs_parse_vmstat("pswpin\npswpout 3\n", &(uint64_t){ 0 }, &(uint64_t){ 0 }, &cause), -1);
    assert_string_equal(cause, "line 1: expected a page count, got nothing (truncated?)");
    free(cause);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_meminfo_key_without_value),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
