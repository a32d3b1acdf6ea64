/*
 * InfiniBand / RoCE from sysfs: the attribute parsers (collect/ib-parse.c), the collector on the
 * fixture trees of tests/fixtures/ib (built by make-trees.sh there) with counters that change
 * between the two readings of a window, and the section's JSON round trip.
 */
#include "collect/collect.h"
#include "collect/ib-parse.h"
#include "rules/config.h"
#include "rules/rules.h"
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

#define FIX TEST_FIXTURES "/ib/"

static void test_state(void **state)
{
    static const struct {
        const char *text;
        bool ok;
        uint32_t code;
        const char *name;
    } cases[] = {
        { "4: ACTIVE\n", true, 4, "ACTIVE" },
        { "1: DOWN", true, 1, "DOWN" },
        { "5: LinkUp\n", true, 5, "LinkUp" },
        { "2: Polling\n", true, 2, "Polling" },
        { "4: PortConfigurationTraining\n", true, 4, "PortConfigurationTraining" },
        { "7: Phy Test\n", true, 7, "Phy Test" },
        { "0:\n", true, 0, "" },
        { "ACTIVE\n", false, 0, NULL },
        { "4 ACTIVE", false, 0, NULL },
        { "", false, 0, NULL },
        { "256: BIG", false, 0, NULL },
        { "1234: X", false, 0, NULL },
        { "-1: DOWN", false, 0, NULL },
        { "4: ACT\tIVE", false, 0, NULL },
        { "4: \x1b[31mRED", false, 0, NULL },
        { "4: AVeryLongStateNameThatDoesNotFitAtAll", false, 0, NULL },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char name[IB_NAME_SIZE] = "unset";
        uint32_t code = 99;
        bool ok = ib_parse_state(cases[i].text, &code, name);

        if (ok != cases[i].ok)
            fail_msg("case %zu \"%s\": got %d", i, cases[i].text, ok);
        if (ok) {
            assert_int_equal(code, cases[i].code);
            assert_string_equal(name, cases[i].name);
        }
    }
}

static void test_rate(void **state)
{
    static const struct {
        const char *text;
        bool ok;
        double gbps;
        uint32_t width;
        const char *speed;
    } cases[] = {
        { "400 Gb/sec (4X NDR)\n", true, 400, 4, "NDR" },
        { "200 Gb/sec (2X NDR)\n", true, 200, 2, "NDR" },
        { "2.5 Gb/sec (1X SDR)\n", true, 2.5, 1, "SDR" },
        { "56 Gb/sec (4X FDR)", true, 56, 4, "FDR" },
        { "800 Gb/sec (4X XDR)\n", true, 800, 4, "XDR" },
        { "25 Gb/sec (1X EDR)\n", true, 25, 1, "EDR" },
        { "120 Gb/sec (12X QDR)\n", true, 120, 12, "QDR" },
        { "10 Gb/sec (4X)\n", true, 10, 4, "" },
        { "400 Gb/s", false, 0, 0, NULL },
        { "400 Gb/sec (3X NDR)", false, 0, 0, NULL },
        { "400 Gb/sec (4X NDR) extra", false, 0, 0, NULL },
        { "400 Gb/sec (4X NDR", false, 0, 0, NULL },
        { "0 Gb/sec (4X NDR)", false, 0, 0, NULL },
        { "2.7 Gb/sec (1X SDR)", false, 0, 0, NULL },
        { "-400 Gb/sec (4X NDR)", false, 0, 0, NULL },
        { "400 Gb/sec (4X N R)", false, 0, 0, NULL },
        { "", false, 0, 0, NULL },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char speed[IB_NAME_SIZE] = "unset";
        double gbps = -1;
        uint32_t width = 99;
        bool ok = ib_parse_rate(cases[i].text, &gbps, &width, speed);

        if (ok != cases[i].ok)
            fail_msg("case %zu \"%s\": got %d", i, cases[i].text, ok);
        if (ok) {
            assert_true(gbps == cases[i].gbps);
            assert_int_equal(width, cases[i].width);
            assert_string_equal(speed, cases[i].speed);
        }
    }
}

static void test_layer_counter_names(void **state)
{
    uint64_t v = 7;

    (void)state;
    assert_int_equal(ib_parse_link_layer("InfiniBand\n"), IB_LL_INFINIBAND);
    assert_int_equal(ib_parse_link_layer("Ethernet\n"), IB_LL_ETHERNET);
    assert_int_equal(ib_parse_link_layer("Infiniband\n"), -1);
    assert_int_equal(ib_parse_link_layer("Ethernet2"), -1);
    assert_int_equal(ib_parse_link_layer(""), -1);

    assert_true(ib_parse_counter("12345\n", &v));
    assert_int_equal(v, 12345);
    assert_true(ib_parse_counter("18446744073709551615", &v));
    assert_true(v == UINT64_MAX);
    assert_false(ib_parse_counter("18446744073709551616", &v));
    assert_false(ib_parse_counter("-1", &v));
    assert_false(ib_parse_counter("+1", &v));
    assert_false(ib_parse_counter("0x10", &v));
    assert_false(ib_parse_counter("12 34", &v));
    assert_false(ib_parse_counter("", &v));

    assert_true(ib_is_device_name("mlx5_0"));
    assert_true(ib_is_device_name("rocep65s0f1"));
    assert_false(ib_is_device_name(""));
    assert_false(ib_is_device_name(".."));
    assert_false(ib_is_device_name("bad name"));
    assert_false(ib_is_device_name("a/b"));
    assert_false(ib_is_device_name("averyveryveryverylongdevicename_0"));
}

static void test_modules(void **state)
{
    static const char *const names[] = { "nvidia_peermem", "nv_peer_mem" };
    bool loaded[2];

    (void)state;
    assert_int_equal(ib_parse_modules("nvidia_peermem 16384 0 - Live 0x0\n"
                                      "nvidia 54140928 103 nvidia_peermem, Live 0x0 (POE)\n",
                                      names, loaded, 2),
                     2);
    assert_true(loaded[0]);
    assert_false(loaded[1]);
    /* A module that merely uses it, or a longer name, is not it. */
    assert_int_equal(ib_parse_modules("nvidia 1 1 nvidia_peermem, Live 0x0\n"
                                      "nvidia_peermem_x 1 0 - Live 0x0\n"
                                      "nv_peer_mem 1 0 - Live 0x0",
                                      names, loaded, 2),
                     3);
    assert_false(loaded[0]);
    assert_true(loaded[1]);
    assert_int_equal(ib_parse_modules("", names, loaded, 2), 0);
    assert_int_equal(ib_parse_modules("\n\n", names, loaded, 2), 0);
    assert_int_equal(ib_parse_modules(" nvidia_peermem 1 0 - Live\n", names, loaded, 2), -1);
    assert_int_equal(ib_parse_modules("nvidia_peermem:1\n", names, loaded, 2), -1);
}

struct run {
    struct collect_opts opts;
    struct collect_ctx ctx;
    struct snapshot *s;
};

/* Runs the ib collector on root; between (a shell command) runs between the two readings. */
static void run_ib(struct run *r, const char *root, int64_t window_ms, const char *between)
{
    char *cause = NULL;
    void *st;

    memset(r, 0, sizeof(*r));
    r->opts.root = root;
    r->opts.window_ms = window_ms;
    r->opts.timeout_ms = 10000;
    r->ctx.opts = &r->opts;
    if (sysroot_open(&r->ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    r->s = snapshot_new();
    st = collector_ib.start(&r->ctx, r->s);
    if (between != NULL)
        assert_int_equal(system(between), 0);
    collector_ib.finish(&r->ctx, st, r->s);
    sysroot_close(&r->ctx.root);
}

static void test_healthy(void **state)
{
    struct run r;
    const struct ib_port *p;

    (void)state;
    run_ib(&r, FIX "healthy", 0, NULL);
    assert_int_equal(r.s->collectors[COLLECTOR_IB].state, CS_OK);
    assert_int_equal(r.s->ib.devices, 5);
    assert_int_equal(r.s->ib.n_ports, 5);
    assert_true(r.s->ib.peermem_loaded);
    assert_string_equal(r.s->ib.peermem_module, "nvidia_peermem");
    p = &r.s->ib.ports[2];
    assert_string_equal(p->device, "mlx5_2");
    assert_int_equal(p->port, 1);
    assert_string_equal(p->pci_address, "0000:41:00.0");
    assert_string_equal(p->netdev, "ibp65s0");
    assert_int_equal(p->state, IB_STATE_ACTIVE);
    assert_int_equal(p->phys_state, IB_PHYS_LINKUP);
    assert_true(p->rate_gbps == 400);
    assert_int_equal(p->link_layer, IB_LL_INFINIBAND);
    assert_true(ib_port_valid(p, IB_S_COUNTER + IB_C_SYMBOL_ERROR));
    assert_false(ib_port_valid(p, IB_S_WINDOW + IB_C_SYMBOL_ERROR)); /* no window */
    assert_int_equal(r.s->ib.ports[0].counter[IB_C_SYMBOL_ERROR], 3);
    assert_int_equal(r.s->ib.ports[4].link_layer, IB_LL_ETHERNET);
    snapshot_free(r.s);
}

static void test_window(void **state)
{
    char tmp[] = "/tmp/test-ib-XXXXXX", cmd[512], root[64];
    const char *cnt = "sys/devices/pci0000:00/0000:00:01.0/0000:41:00.0/infiniband/mlx5_2/ports/1/"
                      "counters";
    struct run r;

    (void)state;
    assert_non_null(mkdtemp(tmp));
    snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s/t'", FIX "errors", tmp);
    assert_int_equal(system(cmd), 0);
    snprintf(root, sizeof(root), "%s/t", tmp);
    /* Grows symbol_error by 40, resets link_downed (went back: no growth can be told). */
    snprintf(cmd, sizeof(cmd),
             "printf '43\\n' >'%s/%s/symbol_error' && printf '0\\n' >'%s/%s/link_downed'", root,
             cnt, root, cnt);
    {
        char pre[512];

        snprintf(pre, sizeof(pre),
                 "printf '3\\n' >'%s/%s/symbol_error' && printf '2\\n' >'%s/%s/link_downed'", root,
                 cnt, root, cnt);
        assert_int_equal(system(pre), 0);
    }
    run_ib(&r, root, 1000, cmd);
    assert_true(ib_port_valid(&r.s->ib.ports[2], IB_S_WINDOW + IB_C_SYMBOL_ERROR));
    assert_int_equal(r.s->ib.ports[2].window[IB_C_SYMBOL_ERROR], 40);
    assert_false(ib_port_valid(&r.s->ib.ports[2], IB_S_WINDOW + IB_C_LINK_DOWNED));
    assert_int_equal(r.s->ib.ports[1].window[IB_C_SYMBOL_ERROR], 0);
    assert_true(ib_port_valid(&r.s->ib.ports[1], IB_S_WINDOW + IB_C_PORT_RCV_DATA));
    snapshot_free(r.s);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
    assert_int_equal(system(cmd), 0);
}

static void test_garbage_and_absent(void **state)
{
    struct run r;

    (void)state;
    run_ib(&r, FIX "garbage", 0, NULL);
    assert_int_equal(r.s->collectors[COLLECTOR_IB].state, CS_PARTIAL);
    assert_int_equal(r.s->collectors[COLLECTOR_IB].n_notes, 10);
    assert_int_equal(r.s->ib.n_ports, 3);
    assert_false(ib_port_valid(&r.s->ib.ports[0], IB_S_STATE));
    assert_false(ib_port_valid(&r.s->ib.ports[0], IB_S_RATE));
    assert_false(ib_port_valid(&r.s->ib.ports[0], IB_S_COUNTER + IB_C_SYMBOL_ERROR));
    assert_true(ib_port_valid(&r.s->ib.ports[0], IB_S_COUNTER + IB_C_PORT_RCV_ERRORS));
    assert_null(r.s->ib.ports[2].pci_address);
    assert_string_equal(r.s->ib.peermem_module, "nv_peer_mem");
    snapshot_free(r.s);

    /* No /sys/class/infiniband: no device, not an error, and no /proc/modules needed. */
    run_ib(&r, FIX "healthy/proc", 0, NULL);
    assert_int_equal(r.s->collectors[COLLECTOR_IB].state, CS_OK); /* modules not even looked at */
    assert_true((r.s->ib.valid >> IB_I_PORTS) & 1u);
    assert_false((r.s->ib.valid >> IB_I_MODULES) & 1u);
    assert_int_equal(r.s->ib.n_ports, 0);
    assert_string_equal(r.s->collectors[COLLECTOR_IB].detail,
                        "no InfiniBand device (no /sys/class/infiniband)");
    snapshot_free(r.s);
}

static void test_round_trip(void **state)
{
    static const char *const trees[] = { FIX "healthy", FIX "garbage", FIX "port-down" };
    char *first, *second, *cause = NULL;
    struct snapshot *back;
    struct run r;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(trees); i++) {
        run_ib(&r, trees[i], i == 0 ? 1000 : 0, NULL);
        first = snapshot_to_json(r.s);
        back = snapshot_from_json(first, strlen(first), "first", &cause);
        if (back == NULL)
            fail_msg("%s", cause);
        second = snapshot_to_json(back);
        assert_string_equal(first, second);
        assert_int_equal(back->ib.n_ports, r.s->ib.n_ports);
        for (size_t k = 0; k < r.s->ib.n_ports; k++)
            assert_int_equal(back->ib.ports[k].valid, r.s->ib.ports[k].valid);
        assert_int_equal(back->ib.valid, r.s->ib.valid);
        free(first);
        free(second);
        snapshot_free(back);
        snapshot_free(r.s);
    }
}

static void test_bad_json(void **state)
{
    static const struct {
        const char *ib, *want;
    } cases[] = {
        { "{\"devices\": 1, \"peermem_module\": null, \"ports\": [{\"port\": 1}]}",
          "missing required key \"device\"" },
        { "{\"peermem_module\": null, \"ports\": [{\"device\": \"x\", \"port\": 1, \"link_layer\": "
          "\"fddi\"}]}",
          "missing required key \"pci_address\"" },
        { "{\"peermem_module\": null, \"ports\": [{\"device\": \"x\", \"port\": 1, "
          "\"pci_address\": "
          "null, \"hca_type\": null, \"fw_ver\": null, \"node_desc\": null, \"netdev\": null, "
          "\"link_layer\": \"fddi\"}]}",
          "link_layer" },
        { "{\"peermem_module\": null, \"ports\": 3}", "ports" },
        { "{\"peermem_module\": null, \"speed_of_light\": 3}", "unknown key \"speed_of_light\"" },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *text = xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"ib\": %s}", cases[i].ib);
        char *cause = NULL;
        struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

        assert_null(s);
        if (strstr(cause, cases[i].want) == NULL)
            fail_msg("case %zu: \"%s\" does not contain \"%s\"", i, cause, cases[i].want);
        free(cause);
        free(text);
    }
}

static const struct finding *find_object(const struct findings *f, const char *id,
                                         const char *object)
{
    for (size_t i = 0; i < f->n; i++) {
        if (strcmp(f->items[i].rule->id, id) == 0 && f->items[i].subject.object &&
            strcmp(f->items[i].subject.object, object) == 0)
            return &f->items[i];
    }
    return NULL;
}

static bool evidence_has(const struct finding *x, const char *text)
{
    for (size_t i = 0; x && i < x->n_evidence; i++) {
        if (strstr(x->evidence[i], text))
            return true;
    }
    return false;
}

/* A port down names the GPUs under its PCIe switch (the pcie section's network peers). */
static void test_port_near_gpu(void **state)
{
    char *cause = NULL;
    struct snapshot *s =
        snapshot_load(TEST_SOURCE_DIR "/tests/scenarios/ib-port-down/snapshot.json", &cause);
    struct pcie_device *d;
    struct findings f;
    struct config cfg;
    const struct finding *down1, *down2;

    (void)state;
    if (s == NULL)
        fail_msg("%s", cause);
    assert_true(s->pcie.n_gpus >= 3);
    assert_string_equal(s->ib.ports[1].pci_address, "0000:2b:00.0");
    /* GPU 2's switch holds mlx5_1's adapter. */
    d = &s->pcie.gpus[2];
    for (size_t k = 0; k < d->n_peers; k++) {
        free(d->peers[k].address);
        free(d->peers[k].driver);
    }
    free(d->peers); /* the snapshot's own list (empty): replaced, not leaked */
    d->peers = xcalloc(1, sizeof(*d->peers));
    d->n_peers = 1;
    d->peers[0].address = xstrdup("0000:2b:00.0");
    d->peers[0].kind = PCIE_PEER_NETWORK;
    d->valid |= UINT64_C(1) << PCIE_S_PEERS;
    config_init(&cfg);
    memset(&f, 0, sizeof(f));
    rules_run(s, NULL, &cfg.rules, &f);
    down1 = find_object(&f, "ib.port-down", "mlx5_1/1");
    down2 = find_object(&f, "ib.port-down", "mlx5_2/1");
    assert_non_null(down1);
    assert_non_null(down2);
    if (!evidence_has(down1, "GPU 2 under the same PCIe switch as this adapter"))
        fail_msg("mlx5_1's finding does not name GPU 2");
    assert_false(evidence_has(down2, "under the same PCIe switch"));
    assert_null(down1->subject.gpu_uuid); /* about the port, not the GPU */
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

/* The states between up and down: recovering, disabled on purpose, unknown. */
static void test_port_states(void **state)
{
    char *cause = NULL;
    struct snapshot *s =
        snapshot_load(TEST_SOURCE_DIR "/tests/scenarios/healthy-8gpu-ib/snapshot.json", &cause);
    struct findings f;
    struct config cfg;
    const struct finding *x;

    (void)state;
    if (s == NULL)
        fail_msg("%s", cause);
    s->ib.ports[0].phys_state = IB_PHYS_ERR_RECOVERY;
    free(s->ib.ports[0].phys_state_name);
    s->ib.ports[0].phys_state_name = xstrdup("LinkErrorRecovery");
    s->ib.ports[3].state = IB_STATE_DOWN;
    free(s->ib.ports[3].state_name);
    s->ib.ports[3].state_name = xstrdup("DOWN");
    s->ib.ports[3].phys_state = IB_PHYS_DISABLED;
    s->ib.ports[2].valid &= ~(UINT64_C(1) << IB_S_STATE);
    config_init(&cfg);
    memset(&f, 0, sizeof(f));
    rules_run(s, NULL, &cfg.rules, &f);
    x = find_object(&f, "ib.port-down", "mlx5_0/1");
    assert_non_null(x);
    assert_int_equal(x->severity, SEV_WARNING);
    assert_non_null(strstr(x->title, "is ACTIVE: the link is recovering from errors"));
    assert_true(evidence_has(x, "marginal"));
    assert_false(evidence_has(x, "Polling:"));
    x = find_object(&f, "ib.port-down", "mlx5_3/1");
    assert_non_null(x);
    assert_int_equal(x->severity, SEV_INFO);
    assert_non_null(strstr(x->title, "is disabled"));
    assert_null(find_object(&f, "ib.port-down", "mlx5_2/1"));
    assert_null(find_object(&f, "ib.port-down", "mlx5_1/1"));
    {
        bool skipped = false;

        for (size_t i = 0; i < f.n_skips; i++)
            skipped |= strcmp(f.skips[i].rule->id, "ib.port-down") == 0 &&
                       strstr(f.skips[i].reason, "mlx5_2 port 1: state not read") != NULL;
        assert_true(skipped);
    }
    /* A disabled port is not active: its rate is no neighbour's measure. */
    assert_null(find_object(&f, "ib.rate-low", "mlx5_0/1"));
    findings_free(&f);
    config_free(&cfg);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_layer_counter_names),
        cmocka_unit_test(test_modules),
        cmocka_unit_test(test_healthy),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_garbage_and_absent),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_port_near_gpu),
        cmocka_unit_test(test_port_states),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
