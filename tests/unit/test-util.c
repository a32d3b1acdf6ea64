/* Small utilities: number and duration parsing, version comparison, bounded file reads. */
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

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

static void test_numbers(void **state)
{
    uint64_t u;
    int64_t i;
    uint32_t u32;
    double d;

    (void)state;
    assert_true(str_to_u64(" 42\n", 10, &u));
    assert_int_equal(u, 42);
    assert_false(str_to_u64("42x", 10, &u));
    assert_false(str_to_u64("-1", 10, &u));
    assert_false(str_to_u64("", 10, &u));
    assert_false(str_to_u64("99999999999999999999", 10, &u));
    assert_true(str_to_u64("0x10de", 0, &u));
    assert_int_equal(u, 0x10de);
    assert_true(str_to_i64("-17", 10, &i));
    assert_int_equal(i, -17);
    assert_false(str_to_u32("4294967296", 10, &u32));
    assert_true(str_to_double("16.0", &d));
    assert_true(d == 16.0);
    assert_false(str_to_double("nan", &d));
}

static void test_durations(void **state)
{
    int64_t ms;

    (void)state;
    assert_true(str_to_duration_ms("2s", &ms));
    assert_int_equal(ms, 2000);
    assert_true(str_to_duration_ms("500ms", &ms));
    assert_int_equal(ms, 500);
    assert_true(str_to_duration_ms("1.5", &ms));
    assert_int_equal(ms, 1500);
    assert_true(str_to_duration_ms("2m", &ms));
    assert_int_equal(ms, 120000);
    assert_true(str_to_duration_ms("0", &ms));
    assert_int_equal(ms, 0);
    assert_false(str_to_duration_ms("-1s", &ms));
    assert_false(str_to_duration_ms("2 parsecs", &ms));
    assert_false(str_to_duration_ms("", &ms));
}

static void test_versions(void **state)
{
    (void)state;
    assert_true(str_version_cmp("535.104.05", "535.43.02") > 0);
    assert_true(str_version_cmp("535.43.02", "535.43.02") == 0);
    assert_true(str_version_cmp("535.43", "535.43.02") < 0);
    assert_true(str_version_cmp("12.4", "12.10") < 0);
    assert_true(str_version_cmp("580.65.06", "575.57.08") > 0);
}

static void test_bounded_read(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", buf[8], *big = NULL;
    int dfd;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_PATH | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(file_read_at(dfd, "missing", buf, sizeof(buf)), -ENOENT);
    {
        char *p = xasprintf("%s/f", dir);

        f = fopen(p, "w");
        assert_non_null(f);
        fputs("1234567", f);
        fclose(f);
        assert_int_equal(file_read_at(dfd, "f", buf, sizeof(buf)), 7);
        assert_string_equal(buf, "1234567");
        f = fopen(p, "a");
        fputs("8", f);
        fclose(f);
        assert_int_equal(file_read_at(dfd, "f", buf, sizeof(buf)), -EFBIG);
        assert_int_equal(file_slurp_at(dfd, "f", 4, &big), -EFBIG);
        assert_null(big);
        assert_int_equal(file_slurp_at(dfd, "f", 1024, &big), 8);
        assert_string_equal(big, "12345678");
        free(big);
        unlink(p);
        free(p);
    }
    close(dfd);
    rmdir(dir);
}

static void test_atomic_write(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", *cause = NULL, *p, *back = NULL;

    (void)state;
    assert_non_null(mkdtemp(dir));
    p = xasprintf("%s/out.json", dir);
    assert_int_equal(file_write_atomic(p, "{}\n", 3, &cause), 0);
    assert_int_equal(file_slurp_at(AT_FDCWD, p, 100, &back), 3);
    assert_string_equal(back, "{}\n");
    free(back);
    unlink(p);
    free(p);
    /* A directory that does not exist: an error naming the path, nothing left behind. */
    p = xasprintf("%s/no/such/dir/out.json", dir);
    assert_int_equal(file_write_atomic(p, "{}", 2, &cause), -1);
    assert_non_null(cause);
    assert_non_null(strstr(cause, "no/such/dir"));
    free(cause);
    free(p);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers),      cmocka_unit_test(test_durations),
        cmocka_unit_test(test_versions),     cmocka_unit_test(test_bounded_read),
        cmocka_unit_test(test_atomic_write),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
