/*
 * PCIe from sysfs: the attribute parsers (collect/sysfs-pci.c) and the collector on the fixture
 * trees of tests/fixtures/pcie (built by make-trees.sh there), and the section's JSON round trip.
 */
#include "collect/collect.h"
#include "collect/sysfs-pci.h"
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

#define FIX TEST_FIXTURES "/pcie/"

static void test_speed(void **state)
{
    static const struct {
        const char *text;
        enum sysfs_speed want;
        double gts;
    } cases[] = {
        { "16.0 GT/s PCIe\n", SYSFS_SPEED_OK, 16.0 },
        { "2.5 GT/s PCIe", SYSFS_SPEED_OK, 2.5 },
        { "8 GT/s\n", SYSFS_SPEED_OK, 8.0 },
        { "5 GT/s", SYSFS_SPEED_OK, 5.0 },
        { "64.0 GT/s PCIe\n", SYSFS_SPEED_OK, 64.0 },
        { "Unknown\n", SYSFS_SPEED_UNKNOWN, 0 },
        { "Unknown speed\n", SYSFS_SPEED_UNKNOWN, 0 },
        { "fast\n", SYSFS_SPEED_MALFORMED, 0 },
        { "", SYSFS_SPEED_MALFORMED, 0 },
        { "16.0GT/s", SYSFS_SPEED_MALFORMED, 0 },
        { "16.0 GT/s PCIe and more", SYSFS_SPEED_MALFORMED, 0 },
        { "16.0 MT/s", SYSFS_SPEED_MALFORMED, 0 },
        { "0 GT/s", SYSFS_SPEED_MALFORMED, 0 },
        { "1.2.3 GT/s", SYSFS_SPEED_MALFORMED, 0 },
        { "99999999999999999999 GT/s", SYSFS_SPEED_MALFORMED, 0 },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        double gts = -1;
        enum sysfs_speed got = sysfs_pci_parse_speed(cases[i].text, &gts);

        if (got != cases[i].want)
            fail_msg("\"%s\": got %d, want %d", cases[i].text, (int)got, (int)cases[i].want);
        if (got == SYSFS_SPEED_OK && gts != cases[i].gts)
            fail_msg("\"%s\": got %g GT/s", cases[i].text, gts);
    }
    assert_int_equal(sysfs_pci_speed_gen(2.5), 1);
    assert_int_equal(sysfs_pci_speed_gen(5.0), 2);
    assert_int_equal(sysfs_pci_speed_gen(8.0), 3);
    assert_int_equal(sysfs_pci_speed_gen(16.0), 4);
    assert_int_equal(sysfs_pci_speed_gen(32.0), 5);
    assert_int_equal(sysfs_pci_speed_gen(64.0), 6);
    assert_int_equal(sysfs_pci_speed_gen(12.5), 0);
}

static void test_width_and_address(void **state)
{
    uint32_t lanes = 0;
    char chain[4][SYSFS_PCI_ADDR_SIZE];

    (void)state;
    assert_true(sysfs_pci_parse_width("16\n", &lanes));
    assert_int_equal(lanes, 16);
    assert_true(sysfs_pci_parse_width("1", &lanes));
    assert_false(sysfs_pci_parse_width("0\n", &lanes));
    assert_false(sysfs_pci_parse_width("x16", &lanes));
    assert_false(sysfs_pci_parse_width("99", &lanes));
    assert_false(sysfs_pci_parse_width("", &lanes));
    assert_false(sysfs_pci_parse_width("-4", &lanes));

    assert_true(sysfs_pci_is_address("0000:3b:00.0"));
    assert_true(sysfs_pci_is_address("10000:00:01.7"));
    assert_false(sysfs_pci_is_address("0000:3b:00.8"));
    assert_false(sysfs_pci_is_address("pci0000:00"));
    assert_false(sysfs_pci_is_address("0000:3b:00"));
    assert_false(sysfs_pci_is_address("0000:3g:00.0"));
    assert_false(sysfs_pci_is_address(""));

    assert_int_equal(
        sysfs_pci_path_chain("../../../devices/pci0000:00/0000:00:02.0/0000:02:00.0/0000:03:00.0",
                             chain, 4),
        3);
    assert_string_equal(chain[0], "0000:00:02.0");
    assert_string_equal(chain[2], "0000:03:00.0");
    /* Virtual buses put other nodes in the path (Hyper-V); only PCI addresses count. */
    assert_int_equal(sysfs_pci_path_chain("/sys/devices/LNXSYSTM:00/VMBUS:00/pci7870:00/"
                                          "7870:00:00.0",
                                          chain, 4),
                     1);
    assert_string_equal(chain[0], "7870:00:00.0");
    assert_int_equal(sysfs_pci_path_chain("devices/pci10000:00/10000:00:01.0", chain, 4), 1);
    assert_int_equal(sysfs_pci_path_chain("a/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0/"
                                          "0000:04:00.0",
                                          chain, 4),
                     -1);
}

static void test_aer(void **state)
{
    uint64_t total = 0;
    char *cause = NULL;

    (void)state;
    assert_int_equal(sysfs_pci_parse_aer("RxErr 2\nBadTLP 1\nTOTAL_ERR_COR 3\n", "TOTAL_ERR_COR",
                                         &total, &cause),
                     0);
    assert_int_equal(total, 3);
    assert_int_equal(sysfs_pci_parse_aer("TOTAL_ERR_FATAL 0", "TOTAL_ERR_FATAL", &total, &cause),
                     0);
    assert_int_equal(total, 0);
    assert_int_equal(
        sysfs_pci_parse_aer("RxErr 0\nBadTLP 0\nTOTAL_ERR_C", "TOTAL_ERR_COR", &total, &cause), -1);
    assert_string_equal(cause, "no TOTAL_ERR_COR line (truncated?)");
    free(cause);
    assert_int_equal(
        sysfs_pci_parse_aer("TOTAL_ERR_FATAL lots\n", "TOTAL_ERR_FATAL", &total, &cause), -1);
    assert_string_equal(cause, "line 1: TOTAL_ERR_FATAL: expected a count, got \"lots\"");
    free(cause);
    /* A longer key that starts with the one asked for is not it. */
    assert_int_equal(sysfs_pci_parse_aer("TOTAL_ERR_CORX 5\n", "TOTAL_ERR_COR", &total, &cause),
                     -1);
    free(cause);
}

struct run {
    struct collect_opts opts;
    struct collect_ctx ctx;
    struct snapshot *s;
};

static void run_pcie(struct run *r, const char *root, int64_t window_ms, const char *between)
{
    char *cause = NULL;
    void *state;

    memset(r, 0, sizeof(*r));
    r->opts.root = root;
    r->opts.window_ms = window_ms;
    r->opts.timeout_ms = 10000;
    r->ctx.opts = &r->opts;
    if (sysroot_open(&r->ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    r->s = snapshot_new();
    state = collector_pcie.start(&r->ctx, r->s);
    if (between != NULL)
        assert_int_equal(system(between), 0);
    collector_pcie.finish(&r->ctx, state, r->s);
    sysroot_close(&r->ctx.root);
}

static const struct collector_status *status(const struct run *r)
{
    return &r->s->collectors[COLLECTOR_PCIE];
}

static void assert_note(const struct run *r, const char *text)
{
    for (size_t i = 0; i < status(r)->n_notes; i++) {
        if (strstr(status(r)->notes[i], text) != NULL)
            return;
    }
    for (size_t i = 0; i < status(r)->n_notes; i++)
        print_message("note: %s\n", status(r)->notes[i]);
    fail_msg("no note contains \"%s\"", text);
}

static bool valid(const struct pcie_device *d, int slot)
{
    return pcie_device_valid(d, slot);
}

static void test_server(void **state)
{
    struct run r;
    const struct pcie_device *g;

    (void)state;
    run_pcie(&r, FIX "server", 0, NULL);
    assert_int_equal(status(&r)->state, CS_OK);
    assert_null(status(&r)->detail);
    assert_int_equal(status(&r)->n_notes, 0);
    assert_true(r.s->pcie.nvidia_module_loaded);
    assert_true(r.s->pcie.valid & (1u << PCIE_I_MODULE));
    assert_int_equal(r.s->pcie.devices_scanned, 18);
    /* IOMMU context: dmar0 under /sys/class/iommu, intel_iommu=on iommu=pt. */
    assert_true(r.s->pcie.valid & (1u << PCIE_I_IOMMU));
    assert_true(r.s->pcie.iommu_present);
    assert_true(r.s->pcie.valid & (1u << PCIE_I_CMDLINE));
    assert_true(r.s->pcie.iommu_pt);
    assert_int_equal(r.s->pcie.intel_iommu, 1);
    assert_int_equal(r.s->pcie.amd_iommu, -1);
    /* Four GPUs: not the ASPEED VGA, not the NVSwitch, not the GPU's audio function. */
    assert_int_equal(r.s->pcie.n_gpus, 4);

    /* GPU 0: Gen4 x16 on a root port of its own; no switch, so no peers. */
    g = &r.s->pcie.gpus[0];
    assert_string_equal(g->address, "0000:01:00.0");
    assert_int_equal(g->vendor_id, 0x10de);
    assert_int_equal(g->device_id, 0x20b5);
    assert_int_equal(g->class_code, 0x030200);
    assert_string_equal(g->driver, "nvidia");
    assert_true(g->link.speed_gts == 16.0 && g->link.speed_max_gts == 16.0);
    assert_int_equal(g->link.gen, 4);
    assert_int_equal(g->link.gen_max, 4);
    assert_int_equal(g->link.width, 16);
    assert_int_equal(g->link.width_max, 16);
    assert_int_equal(g->numa_node, 0);
    assert_true(valid(g, PCIE_S_NUMA_CPUS));
    assert_string_equal(g->numa_cpus, "0-31,64-95");
    assert_true(valid(g, PCIE_S_IOMMU)); /* iommu=pt: its group's domain is the identity */
    assert_string_equal(g->iommu_domain, "identity");
    assert_true((r.s->pcie.valid >> PCIE_I_NODES) & 1u);
    assert_int_equal(r.s->pcie.numa_nodes, 2); /* node0, node1; "online" is no node */
    assert_true(valid(g, PCIE_S_AER));
    assert_int_equal(g->aer_correctable + g->aer_nonfatal + g->aer_fatal, 0);
    assert_false(valid(g, PCIE_S_AER_WINDOW));
    assert_int_equal(g->n_upstream, 1);
    assert_string_equal(g->upstream[0].address, "0000:00:01.0");
    assert_null(g->switch_address);
    assert_true(valid(g, PCIE_S_PEERS));
    assert_int_equal(g->n_peers, 0);

    /* GPU 1: downgraded to Gen3 x8, behind a switch shared with a NIC, a GPU and an NVMe drive. */
    g = &r.s->pcie.gpus[1];
    assert_string_equal(g->address, "0000:04:00.0");
    assert_true(g->link.speed_gts == 8.0 && g->link.speed_max_gts == 16.0);
    assert_int_equal(g->link.gen, 3);
    assert_int_equal(g->link.gen_max, 4);
    assert_int_equal(g->link.width, 8);
    assert_int_equal(g->link.width_max, 16);
    assert_int_equal(g->n_upstream, 3);
    assert_string_equal(g->upstream[0].address, "0000:03:00.0");
    assert_string_equal(g->upstream[1].address, "0000:02:00.0");
    assert_string_equal(g->upstream[2].address, "0000:00:02.0");
    assert_int_equal(g->upstream[1].vendor_id, 0x10b5);
    assert_int_equal(g->upstream[1].link.gen, 4);
    assert_int_equal(g->upstream[1].link.width, 16);
    assert_string_equal(g->switch_address, "0000:02:00.0");
    assert_int_equal(g->n_peers, 3);
    assert_string_equal(g->peers[0].address, "0000:05:00.0");
    assert_int_equal(g->peers[0].kind, PCIE_PEER_NETWORK);
    assert_int_equal(g->peers[0].vendor_id, 0x15b3);
    assert_int_equal(g->peers[0].class_code, 0x020000);
    assert_string_equal(g->peers[0].driver, "mlx5_core");
    assert_string_equal(g->peers[1].address, "0000:06:00.0");
    assert_int_equal(g->peers[1].kind, PCIE_PEER_GPU);
    assert_string_equal(g->peers[2].address, "0000:07:00.0");
    assert_int_equal(g->peers[2].kind, PCIE_PEER_NVME);
    assert_string_equal(g->peers[2].driver, "nvme");

    /* GPU 2: AER errors counted. */
    g = &r.s->pcie.gpus[2];
    assert_string_equal(g->address, "0000:06:00.0");
    assert_int_equal(g->aer_correctable, 3);
    assert_int_equal(g->aer_nonfatal, 1);
    assert_int_equal(g->aer_fatal, 0);
    assert_int_equal(g->n_peers, 3);
    assert_string_equal(g->peers[0].address, "0000:04:00.0");

    /* GPU 3: no driver bound, older kernel's "8 GT/s", the second socket. */
    g = &r.s->pcie.gpus[3];
    assert_string_equal(g->address, "0000:81:00.0");
    assert_null(g->driver);
    assert_int_equal(g->link.gen, 3);
    assert_int_equal(g->link.gen_max, 3);
    assert_int_equal(g->numa_node, 1);
    assert_string_equal(g->numa_cpus, "32-63,96-127");
    assert_false(valid(g, PCIE_S_IOMMU)); /* "unknown": no default domain, nothing to judge */
    snapshot_free(r.s);
}

static void test_garbage(void **state)
{
    static const char *const notes[] = {
        "/sys/bus/pci/devices/not-a-device: not a PCI address, skipped",
        "/sys/bus/pci/devices/0000:00:03.0/vendor: malformed: expected a hex number, got "
        "\"nvidia\"",
        "/sys/bus/pci/devices/0000:00:04.0/class: malformed: expected a hex number, got \"\"",
        "/sys/bus/pci/devices/0000:0a:00.0: malformed link target "
        "\"../../../devices/platform/weird\"",
        "/sys/bus/pci/devices/0000:01:00.0/current_link_speed: malformed: expected a speed such "
        "as \"16.0 GT/s PCIe\", got \"fast\"",
        "/sys/bus/pci/devices/0000:01:00.0/max_link_speed: no speed (link down?), got "
        "\"Unknown\"",
        "/sys/bus/pci/devices/0000:01:00.0/current_link_width: malformed: expected a lane count "
        "from 1 to 32, got \"x16\"",
        "/sys/bus/pci/devices/0000:01:00.0/max_link_width: 0 lanes (link down?)",
        "/sys/bus/pci/devices/0000:01:00.0/numa_node: malformed: expected a node number or -1, "
        "got \"abc\"",
        "/sys/bus/pci/devices/0000:01:00.0/iommu_group/type: not a domain type the kernel names, "
        "got \"bogus\"",
        "/sys/bus/pci/devices/0000:01:00.0/aer_dev_correctable: malformed: no TOTAL_ERR_COR line "
        "(truncated?)",
        "/sys/bus/pci/devices/0000:01:00.0/aer_dev_fatal: malformed: line 1: TOTAL_ERR_FATAL: "
        "expected a count, got \"lots\"",
        "0000:01:00.0: only some AER counter files exist",
        "/sys/bus/pci/devices/0000:02:00.0/max_link_speed: 12.5 GT/s is no PCIe generation's "
        "speed",
        "/sys/bus/pci/devices/0000:02:00.0/max_link_width: malformed: expected a lane count from "
        "1 to 32, got \"99\"",
        "/sys/bus/pci/devices/0000:02:00.0/numa_node: malformed: expected a node number or -1, "
        "got \"-7\"",
        "0000:02:00.0: the bridge 0000:00:02.0 above it is not in /sys/bus/pci/devices",
        "0000:0b:00.0: no AER counters in sysfs",
    };
    struct run r;
    const struct pcie_device *g;

    (void)state;
    run_pcie(&r, FIX "garbage", 0, NULL);
    assert_int_equal(status(&r)->state, CS_PARTIAL);
    for (size_t i = 0; i < ARRAY_SIZE(notes); i++)
        assert_note(&r, notes[i]);
    /* Five entries could be classified: the bridge and four NVIDIA display devices. */
    assert_int_equal(r.s->pcie.devices_scanned, 5);
    assert_int_equal(r.s->pcie.n_gpus, 4);
    g = &r.s->pcie.gpus[0];
    assert_string_equal(g->address, "0000:01:00.0");
    assert_false(valid(g, PCIE_S_LINK_SPEED));
    assert_false(valid(g, PCIE_S_LINK_GEN));
    assert_false(valid(g, PCIE_S_LINK_SPEED_MAX));
    assert_false(valid(g, PCIE_S_LINK_WIDTH));
    assert_false(valid(g, PCIE_S_LINK_WIDTH_MAX));
    assert_false(valid(g, PCIE_S_NUMA));
    assert_false(valid(g, PCIE_S_AER));
    assert_false(valid(g, PCIE_S_IOMMU));
    assert_null(g->iommu_domain);
    /* The chain still resolves; the bridge's garbage link is simply not known. */
    assert_true(valid(g, PCIE_S_UPSTREAM));
    assert_int_equal(g->upstream[0].valid, 0);
    g = &r.s->pcie.gpus[1];
    assert_true(valid(g, PCIE_S_LINK_SPEED_MAX));
    assert_false(valid(g, PCIE_S_LINK_GEN_MAX));
    assert_false(valid(g, PCIE_S_UPSTREAM));
    assert_false(valid(g, PCIE_S_PEERS));
    /* An IOMMU group without a type file (kernels before 5.4): not known, no note. */
    assert_false(valid(g, PCIE_S_IOMMU));
    g = &r.s->pcie.gpus[3];
    assert_string_equal(g->address, "0000:0b:00.0");
    /* No iommu_group link: no IOMMU translates its DMA. */
    assert_true(valid(g, PCIE_S_IOMMU));
    assert_string_equal(g->iommu_domain, "none");
    assert_int_equal(g->link.gen, 4);
    assert_false(valid(g, PCIE_S_UPSTREAM));
    snapshot_free(r.s);
}

static void test_no_driver_no_gpu_no_sysfs(void **state)
{
    char tmpl[] = "/tmp/gpudoctor-pcie-XXXXXX";
    char *dir = mkdtemp(tmpl);
    struct run r;

    (void)state;
    run_pcie(&r, FIX "nodriver", 0, NULL);
    assert_int_equal(status(&r)->state, CS_OK);
    /* No /proc/cmdline in the tree: the IOMMU options are unknown, not "none given". */
    assert_false(r.s->pcie.valid & (1u << PCIE_I_CMDLINE));
    assert_string_equal(status(&r)->detail,
                        "1 NVIDIA GPU in sysfs but the nvidia kernel module is not loaded");
    assert_false(r.s->pcie.nvidia_module_loaded);
    assert_true(r.s->pcie.valid & (1u << PCIE_I_MODULE));
    assert_int_equal(r.s->pcie.n_gpus, 1);
    assert_int_equal(r.s->pcie.gpus[0].link.gen, 5);
    assert_null(r.s->pcie.gpus[0].driver);
    assert_string_equal(r.s->pcie.gpus[0].iommu_domain, "DMA-FQ");
    snapshot_free(r.s);

    run_pcie(&r, FIX "nogpu", 0, NULL);
    assert_int_equal(status(&r)->state, CS_OK);
    assert_string_equal(status(&r)->detail, "no NVIDIA PCI device in /sys/bus/pci/devices");
    assert_int_equal(r.s->pcie.n_gpus, 0);
    assert_int_equal(r.s->pcie.devices_scanned, 3);
    assert_true(r.s->pcie.valid & (1u << PCIE_I_GPUS));
    snapshot_free(r.s);

    assert_non_null(dir);
    run_pcie(&r, dir, 0, NULL);
    assert_int_equal(status(&r)->state, CS_UNAVAILABLE);
    assert_string_equal(status(&r)->detail,
                        "cannot read /sys/bus/pci/devices: No such file or directory");
    assert_note(&r, "/sys/module: No such file or directory: cannot tell whether the nvidia "
                    "module is loaded");
    assert_int_equal(r.s->pcie.valid, 0);
    snapshot_free(r.s);
    rmdir(dir);
}

static char *copy_tree(const char *src)
{
    char tmpl[] = "/tmp/gpudoctor-pcie-XXXXXX", cmd[1024];
    char *dir = mkdtemp(tmpl);

    assert_non_null(dir);
    snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s/'", src, dir);
    assert_int_equal(system(cmd), 0);
    return xstrdup(dir);
}

static void remove_tree(char *dir)
{
    char cmd[1024];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    free(dir);
}

/* AER errors that happen during the window are counted apart from those since boot. */
static void test_aer_window(void **state)
{
    char *dir = copy_tree(FIX "server"), *cmd;
    struct run r;
    const struct pcie_device *g;

    (void)state;
    cmd = xasprintf("printf 'RxErr 10\\nTOTAL_ERR_COR 10\\n' > '%s/sys/bus/pci/devices/"
                    "0000:06:00.0/aer_dev_correctable'",
                    dir);
    run_pcie(&r, dir, 1000, cmd);
    free(cmd);
    g = &r.s->pcie.gpus[2];
    assert_true(valid(g, PCIE_S_AER_WINDOW));
    assert_int_equal(g->aer_correctable, 3);
    assert_int_equal(g->aer_correctable_window, 7);
    assert_int_equal(g->aer_nonfatal_window, 0);
    assert_true(valid(&r.s->pcie.gpus[0], PCIE_S_AER_WINDOW));
    assert_int_equal(r.s->pcie.gpus[0].aer_correctable_window, 0);
    snapshot_free(r.s);
    remove_tree(dir);
}

static void test_round_trip(void **state)
{
    char *first, *second, *cause = NULL;
    struct snapshot *back;
    struct run r;

    (void)state;
    run_pcie(&r, FIX "server", 1000, NULL);
    first = snapshot_to_json(r.s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->pcie.n_gpus, 4);
    assert_int_equal(back->pcie.gpus[1].n_peers, 3);
    assert_int_equal(back->pcie.gpus[1].peers[2].kind, PCIE_PEER_NVME);
    assert_int_equal(back->pcie.gpus[1].valid, r.s->pcie.gpus[1].valid);
    assert_int_equal(back->pcie.gpus[1].upstream[1].valid, r.s->pcie.gpus[1].upstream[1].valid);
    assert_null(back->pcie.gpus[3].driver);
    assert_string_equal(back->pcie.gpus[2].iommu_domain, "identity");
    assert_null(back->pcie.gpus[3].iommu_domain);
    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(r.s);

    /* The garbage tree: invalid fields and unresolved chains survive the trip too. */
    run_pcie(&r, FIX "garbage", 0, NULL);
    first = snapshot_to_json(r.s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->pcie.gpus[1].valid, r.s->pcie.gpus[1].valid);
    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(r.s);
}

static void test_read_errors(void **state)
{
    static const struct {
        const char *pcie, *want;
    } cases[] = {
        { "{\"gpus\": [{\"address\": \"0000:01:00.0\", \"vendor_id\": 4318, \"device_id\": "
          "\"0x20b5\", \"class_code\": \"0x030200\", \"driver\": null, \"switch_address\": null, "
          "\"peers\": [{\"address\": \"x\", \"vendor_id\": \"0x15b3\", \"device_id\": \"0x1\", "
          "\"class_code\": \"0x020000\", \"kind\": \"modem\", \"driver\": null}]}]}",
          "pcie.gpus[0].peers[0].kind: expected one of \"network\", \"nvme\", \"gpu\"" },
        { "{\"gpus\": [{\"address\": \"0000:01:00.0\"}]}",
          "pcie.gpus[0]: missing required key \"vendor_id\"" },
        { "{\"gpus\": 3}", "pcie: gpus: expected an array" },
        { "{\"nvidia_module_loaded\": \"yes\"}",
          "pcie.nvidia_module_loaded: expected true or false" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *text =
            xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"pcie\": %s}", cases[i].pcie);
        char *cause = NULL;
        struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

        assert_null(s);
        if (strstr(cause, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, cause, cases[i].want);
        free(cause);
        free(text);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speed),       cmocka_unit_test(test_width_and_address),
        cmocka_unit_test(test_aer),         cmocka_unit_test(test_server),
        cmocka_unit_test(test_garbage),     cmocka_unit_test(test_no_driver_no_gpu_no_sysfs),
        cmocka_unit_test(test_aer_window),  cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_read_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
