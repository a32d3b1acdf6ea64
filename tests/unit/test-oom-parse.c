/* PyTorch's "CUDA out of memory" read back into figures (src/rules/oom-parse.c): both wordings,
 * the other processes it names, sizes in every unit, and texts that are not PyTorch's. */
#include "rules/oom-parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define MIB (1024.0 * 1024)
#define GIB (1024.0 * MIB)

static void near(double got, double want)
{
    if (got < want * 0.999 - 1 || got > want * 1.001 + 1)
        fail_msg("got %.0f, want %.0f", got, want);
}

static void test_pytorch_2(void **state)
{
    struct oom_text o;

    (void)state;
    assert_true(oom_parse("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 "
                          "MiB. GPU 1 has a total capacity of 23.64 GiB of which 11.06 MiB is "
                          "free. Process 4121 has 10.52 GiB memory in use. Process 77 has 512.00 "
                          "KiB memory in use. Including non-PyTorch memory, this process has 13.10 "
                          "GiB memory in use. Of the allocated memory 12.50 GiB is allocated by "
                          "PyTorch, and 200.00 MiB is reserved by PyTorch but unallocated.",
                          &o) > 0);
    assert_int_equal(o.gpu, 1);
    near(o.tried, 20 * MIB);
    near(o.capacity, 23.64 * GIB);
    near(o.free, 11.06 * MIB);
    near(o.this_process, 13.10 * GIB);
    near(o.allocated, 12.50 * GIB);
    near(o.reserved_unallocated, 200 * MIB);
    assert_true(o.reserved_total < 0);
    assert_int_equal(o.n_pids, 2);
    assert_int_equal(o.pids[0], 4121);
    near(o.pid_bytes[0], 10.52 * GIB);
    assert_int_equal(o.pids[1], 77);
    near(o.pid_bytes[1], 512 * 1024);
}

static void test_pytorch_1(void **state)
{
    struct oom_text o;

    (void)state;
    assert_true(oom_parse("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; "
                          "10.76 GiB total capacity; 5.56 GiB already allocated; 17.19 MiB free; "
                          "8.77 GiB reserved in total by PyTorch)",
                          &o) > 0);
    assert_int_equal(o.gpu, 0);
    near(o.tried, 2 * GIB);
    near(o.capacity, 10.76 * GIB);
    near(o.allocated, 5.56 * GIB);
    near(o.free, 17.19 * MIB);
    near(o.reserved_total, 8.77 * GIB);
    assert_true(o.this_process < 0 && o.reserved_unallocated < 0);
    assert_int_equal(o.n_pids, 0);
}

/* Recognised as out of memory elsewhere, but no figure of PyTorch's: nothing read. */
static void test_no_figures(void **state)
{
    struct oom_text o;

    (void)state;
    assert_int_equal(oom_parse("RuntimeError: CUDA error: out of memory", &o), 0);
    assert_int_equal(o.gpu, -1);
    assert_true(o.tried < 0 && o.capacity < 0 && o.free < 0);
    assert_int_equal(oom_parse("Segmentation fault", &o), 0);
    assert_int_equal(oom_parse(NULL, &o), 0);
    /* a GPU named in passing is not the failing one; "Process" without a size is no holder */
    assert_int_equal(oom_parse("out of memory on GPU 3 memory bank; Process 12 has crashed", &o),
                     0);
    assert_int_equal(o.n_pids, 0);
}

static void test_sizes(void **state)
{
    const char *end = NULL;

    (void)state;
    near(oom_size("0 bytes", &end), 0);
    assert_string_equal(end, "");
    near(oom_size(" 1.5 TiB.", &end), 1.5 * 1024 * GIB);
    assert_string_equal(end, ".");
    assert_true(oom_size("12 GB", NULL) < 0); /* PyTorch writes binary units */
    assert_true(oom_size("-1 MiB", NULL) < 0);
    assert_true(oom_size("MiB", NULL) < 0);
    assert_true(oom_size("1e300 MiB", NULL) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch_2),
        cmocka_unit_test(test_pytorch_1),
        cmocka_unit_test(test_no_figures),
        cmocka_unit_test(test_sizes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
