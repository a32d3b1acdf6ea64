/*
 * The NUMA / NCCL / ACS / IOMMU parsers (collect/numa-parse.c) on built config spaces and strings.
 */
#include "collect/numa-parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void put32(uint8_t *c, size_t off, uint32_t v)
{
    c[off] = (uint8_t)v;
    c[off + 1] = (uint8_t)(v >> 8);
    c[off + 2] = (uint8_t)(v >> 16);
    c[off + 3] = (uint8_t)(v >> 24);
}

static void test_acs(void **state)
{
    uint8_t c[4096];
    uint16_t ctrl = 0;

    (void)state;
    memset(c, 0, sizeof(c));
    /* AER (id 1) at 0x100 -> 0x148; ACS (id 0xd) at 0x148, ctrl = RR|CR|SV. */
    put32(c, 0x100, 0x0001u | 1u << 16 | 0x148u << 20);
    put32(c, 0x148, 0x000Du | 1u << 16);
    c[0x148 + 6] = NUMA_ACS_RR | NUMA_ACS_CR | NUMA_ACS_SV;
    assert_int_equal(numa_parse_acs(c, sizeof(c), &ctrl), NUMA_ACS_FOUND);
    assert_int_equal(ctrl, NUMA_ACS_RR | NUMA_ACS_CR | NUMA_ACS_SV);
    /* Unprivileged read: 64 bytes. */
    assert_int_equal(numa_parse_acs(c, 64, &ctrl), NUMA_ACS_NEEDS_ROOT);
    assert_int_equal(numa_parse_acs(c, 256, &ctrl), NUMA_ACS_NEEDS_ROOT);
    assert_int_equal(numa_parse_acs(c, 10, &ctrl), NUMA_ACS_MALFORMED);
    /* No ACS: the list ends. */
    put32(c, 0x100, 0x0001u | 1u << 16);
    assert_int_equal(numa_parse_acs(c, sizeof(c), &ctrl), NUMA_ACS_ABSENT);
    /* A loop back to itself. */
    put32(c, 0x100, 0x0001u | 0x100u << 20);
    assert_int_equal(numa_parse_acs(c, sizeof(c), &ctrl), NUMA_ACS_MALFORMED);
    /* A pointer below 0x100. */
    put32(c, 0x100, 0x0001u | 0x40u << 20);
    assert_int_equal(numa_parse_acs(c, sizeof(c), &ctrl), NUMA_ACS_MALFORMED);
    /* Empty extended space. */
    put32(c, 0x100, 0);
    assert_int_equal(numa_parse_acs(c, sizeof(c), &ctrl), NUMA_ACS_ABSENT);
}

static void test_cmdline(void **state)
{
    struct numa_iommu_cmdline c;

    (void)state;
    numa_parse_cmdline("BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt quiet\n", &c);
    assert_true(c.iommu_pt);
    assert_false(c.iommu_off);
    assert_int_equal(c.intel_iommu, 1);
    assert_int_equal(c.amd_iommu, -1);
    numa_parse_cmdline("amd_iommu=off iommu=off xiommu=pt", &c);
    assert_false(c.iommu_pt);
    assert_true(c.iommu_off);
    assert_int_equal(c.amd_iommu, 0);
    assert_int_equal(c.intel_iommu, -1);
    numa_parse_cmdline("intel_iommu=on,sm_on intel_iommu=bogus", &c);
    assert_int_equal(c.intel_iommu, 1);
    numa_parse_cmdline("", &c);
    assert_int_equal(c.intel_iommu, -1);
    assert_false(c.iommu_pt);
}

static void test_environ(void **state)
{
    static const char env[] = "PATH=/bin\0AWS_SECRET_ACCESS_KEY=hunter2\0NCCL_P2P_DISABLE=1\0"
                              "NCCL_IB_HCA=mlx5_0\x1b[31m\0NCCL_TOKEN=secret\0NCCL_DEBUG=INFO";
    struct numa_nccl_env e;

    (void)state;
    numa_parse_environ(env, sizeof(env) - 1, &e);
    assert_true(e.set[0]);
    assert_string_equal(numa_nccl_names[0], "NCCL_P2P_DISABLE");
    assert_string_equal(e.value[0], "1");
    assert_true(e.set[6]);
    assert_string_equal(e.value[6], "mlx5_0?[31m");
    assert_true(e.set[9]);
    assert_string_equal(e.value[9], "INFO");
    assert_false(e.set[1]);
    for (size_t i = 0; i < NUMA_NCCL_VARS; i++) {
        assert_null(strstr(e.value[i], "hunter2"));
        assert_null(strstr(e.value[i], "secret"));
    }
}

static void test_environ_long(void **state)
{
    char env[300];
    struct numa_nccl_env e;

    (void)state;
    memcpy(env, "NCCL_ALGO=", 10);
    memset(env + 10, 'R', sizeof(env) - 10);
    numa_parse_environ(env, sizeof(env), &e);
    assert_true(e.set[7]);
    assert_int_equal(strlen(e.value[7]), NUMA_NCCL_VALUE_SIZE - 1);
}

static void test_cpulist(void **state)
{
    uint64_t m[2];

    (void)state;
    assert_int_equal(numa_parse_cpulist("0-3,8\n", m, 2), 5);
    assert_int_equal(m[0], 0x10full);
    assert_int_equal(numa_parse_cpulist("64-65", m, 2), 2);
    assert_int_equal(m[1], 3);
    assert_int_equal(m[0], 0);
    assert_int_equal(numa_parse_cpulist("\n", m, 2), 0);
    assert_int_equal(numa_parse_cpulist("128", m, 2), -1);
    assert_int_equal(numa_parse_cpulist("3-1", m, 2), -1);
    assert_int_equal(numa_parse_cpulist("1,,2", m, 2), -1);
    assert_int_equal(numa_parse_cpulist("1-2x", m, 2), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_acs),     cmocka_unit_test(test_cmdline),
        cmocka_unit_test(test_environ), cmocka_unit_test(test_environ_long),
        cmocka_unit_test(test_cpulist),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
