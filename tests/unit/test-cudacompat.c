/* CUDA toolkit -> minimum driver, generated from data/cuda-driver-compat.tsv: every row comes back
 * from cuda_min_driver(), and the minor-version-compatibility verdicts follow NVIDIA's rules. */
#include "data/cudacompat.h"
#include "util/fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define MAX_COLS 16

static int split(char *line, char **cells)
{
    int n = 0;

    for (;;) {
        char *tab = strchr(line, '\t');

        assert_true(n < MAX_COLS);
        cells[n++] = line;
        if (tab == NULL)
            return n;
        *tab = '\0';
        line = tab + 1;
    }
}

static const char *strip_ge(const char *s)
{
    return strncmp(s, ">=", 2) == 0 ? s + 2 : s;
}

static void test_every_row(void **state)
{
    char *text, *line, *save = NULL, *header[MAX_COLS], *cells[MAX_COLS];
    int nh = 0, rows = 0, c_ver = -1, c_linux = -1, c_win = -1, c_compat = -1, c_below = -1;
    size_t total;

    (void)state;
    assert_true(file_slurp_at(AT_FDCWD, TEST_SOURCE_DIR "/data/cuda-driver-compat.tsv", 1u << 20,
                              &text) > 0);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct cuda_driver_req req;
        const char *win;

        if (*line == '#')
            continue;
        if (nh == 0) {
            nh = split(line, header);
            for (int i = 0; i < nh; i++) {
                c_ver = strcmp(header[i], "toolkit_version") == 0 ? i : c_ver;
                c_linux = strcmp(header[i], "linux_x86_64_toolkit_driver_min") == 0 ? i : c_linux;
                c_win = strcmp(header[i], "windows_x86_64_toolkit_driver_min") == 0 ? i : c_win;
                c_compat = strcmp(header[i], "compat_min_linux") == 0 ? i : c_compat;
                c_below = strcmp(header[i], "compat_below") == 0 ? i : c_below;
            }
            assert_true(c_ver >= 0 && c_linux >= 0 && c_win >= 0 && c_compat >= 0 && c_below >= 0);
            continue;
        }
        assert_int_equal(split(line, cells), nh);
        assert_int_equal(cuda_min_driver(cells[c_ver], &req), 0);
        assert_true(req.exact);
        assert_non_null(req.release);
        assert_string_equal(req.release->version, cells[c_ver]);
        assert_string_equal(req.min_driver, strip_ge(cells[c_linux]));
        win = strip_ge(cells[c_win]);
        if (strcmp(win, "N/A") == 0)
            assert_null(req.release->windows_min);
        else
            assert_string_equal(req.release->windows_min, win);
        if (strcmp(cells[c_compat], "-") == 0)
            assert_null(req.min_driver_compat);
        else
            assert_string_equal(req.min_driver_compat, cells[c_compat]);
        if (strcmp(cells[c_below], "-") == 0)
            assert_null(req.compat_below);
        else
            assert_string_equal(req.compat_below, cells[c_below]);
        /* Its own minimum driver runs it. */
        assert_int_equal(cuda_driver_check(req.min_driver, cells[c_ver], NULL), CUDA_DRIVER_OK);
        rows++;
    }
    cuda_releases(&total);
    assert_int_equal(total, (size_t)rows);
    assert_true(rows >= 58);
    free(text);
}

static void test_major_minor_lookups(void **state)
{
    struct cuda_driver_req r;

    (void)state;
    assert_int_equal(cuda_min_driver("12.4", &r), 0);
    assert_false(r.exact);
    assert_string_equal(r.release->version, "12.4.0");
    assert_string_equal(r.min_driver, "550.54.14");
    assert_string_equal(r.min_driver_compat, "525.60.13");
    assert_string_equal(r.compat_below, "580");

    /* A component version (libcudart 12.4.127) is taken as its toolkit's x.y. */
    assert_int_equal(cuda_min_driver("12.4.127", &r), 0);
    assert_false(r.exact);
    assert_string_equal(r.release->version, "12.4.0");

    /* The GA release, not the release candidate, stands for 11.0. */
    assert_int_equal(cuda_min_driver("11.0", &r), 0);
    assert_string_equal(r.release->version, "11.0.2");
    assert_string_equal(r.min_driver, "450.51.05");
    assert_string_equal(r.min_driver_compat, "450.80.02");

    assert_int_equal(cuda_min_driver("13.0", &r), 0);
    assert_string_equal(r.min_driver, "580.65.06");
    assert_string_equal(r.min_driver_compat, "580");
    assert_null(r.compat_below);
    assert_null(r.release->windows_min);

    assert_int_equal(cuda_min_driver("10.2", &r), 0);
    assert_string_equal(r.min_driver, "440.33");
    assert_null(r.min_driver_compat);

    assert_int_equal(cuda_min_driver("10.1", &r), 0);
    assert_true(r.exact);
    assert_string_equal(r.min_driver, "418.39");

    /* A minor the table does not know: only the family's compatibility floor. */
    assert_int_equal(cuda_min_driver("12.7", &r), 0);
    assert_null(r.release);
    assert_null(r.min_driver);
    assert_string_equal(r.min_driver_compat, "525.60.13");
    assert_int_equal(cuda_min_driver("12", &r), 0);
    assert_null(r.min_driver);
    assert_string_equal(r.min_driver_compat, "525.60.13");

    /* CUDA 7.0 to 9.2, from the older notes' Table 3: no minor-version compatibility. */
    assert_int_equal(cuda_min_driver("7.0", &r), 0);
    assert_string_equal(r.min_driver, "346.46");
    assert_null(r.min_driver_compat);
    assert_int_equal(cuda_min_driver("9.2", &r), 0);
    assert_string_equal(r.min_driver, "396.26");
    assert_int_equal(cuda_driver_check("340.93", "7.0", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("346.72", "7.0", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("384.81", "9.1", NULL), CUDA_DRIVER_TOO_OLD);

    assert_true(cuda_min_driver("13.3", &r) == 0 && r.release->secondary);
    assert_true(cuda_min_driver("13.2", &r) == 0 && !r.release->secondary);
}

static void test_bad_versions(void **state)
{
    struct cuda_driver_req r;

    (void)state;
    assert_int_equal(cuda_min_driver("14.0", &r), -ENOENT);
    assert_int_equal(cuda_min_driver("6.5", &r), -ENOENT);
    assert_int_equal(cuda_min_driver("", &r), -EINVAL);
    assert_int_equal(cuda_min_driver("abc", &r), -EINVAL);
    assert_int_equal(cuda_min_driver("12..4", &r), -EINVAL);
    assert_int_equal(cuda_min_driver("12.4a", &r), -EINVAL);
    assert_int_equal(cuda_min_driver(".12", &r), -EINVAL);
    assert_int_equal(cuda_min_driver("1.2.3.4.5", &r), -EINVAL);
    assert_int_equal(cuda_min_driver("99999999999999999999999.1", &r), -EINVAL);
    assert_int_equal(cuda_min_driver(NULL, &r), -EINVAL);
    assert_null(r.release);
}

static void test_driver_verdicts(void **state)
{
    struct cuda_driver_req r;

    (void)state;
    assert_int_equal(cuda_driver_check("550.54.15", "12.4", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("550.54.14", "12.4", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("550.54.13", "12.4", &r), CUDA_DRIVER_MINOR_COMPAT);
    assert_string_equal(r.min_driver, "550.54.14");
    assert_int_equal(cuda_driver_check("535.104.05", "12.4", NULL), CUDA_DRIVER_MINOR_COMPAT);
    assert_int_equal(cuda_driver_check("525.60.13", "12.9", NULL), CUDA_DRIVER_MINOR_COMPAT);
    assert_int_equal(cuda_driver_check("525.60.12", "12.9", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("520.61.05", "12.4", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("470.82.01", "11.8", NULL), CUDA_DRIVER_MINOR_COMPAT);
    assert_int_equal(cuda_driver_check("450.51.06", "11.1", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("440.33", "10.2", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("418.39", "10.2", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("580.65.06", "13.0", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("580.0.1", "13.0", NULL), CUDA_DRIVER_MINOR_COMPAT);
    assert_int_equal(cuda_driver_check("575.57.08", "13.0", NULL), CUDA_DRIVER_TOO_OLD);
    assert_int_equal(cuda_driver_check("595.45.04", "12.1", NULL), CUDA_DRIVER_OK);
    assert_int_equal(cuda_driver_check("570.86.15", "12.7", NULL), CUDA_DRIVER_MINOR_COMPAT);
    assert_int_equal(cuda_driver_check("garbage", "12.4", NULL), CUDA_DRIVER_UNKNOWN);
    assert_int_equal(cuda_driver_check(NULL, "12.4", NULL), CUDA_DRIVER_UNKNOWN);
    assert_int_equal(cuda_driver_check("550.54.15", "14.0", NULL), CUDA_DRIVER_UNKNOWN);
    assert_int_equal(cuda_driver_check("550.54.15", "x", NULL), CUDA_DRIVER_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_row),
        cmocka_unit_test(test_major_minor_lookups),
        cmocka_unit_test(test_bad_versions),
        cmocka_unit_test(test_driver_verdicts),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
