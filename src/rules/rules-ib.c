/*
 * InfiniBand and RoCE (category fabric): ports down or not yet configured, ports slower than
 * their neighbours or than the configured fabric rate, link errors growing over the window, and
 * GPUDirect RDMA off (nvidia_peermem not loaded). Evidence from the ib collector (collect/ib.c):
 * /sys/class/infiniband and /proc/modules.
 */
#include "rules/rule-impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The most a saturating counter holds (IBTA PortCounters): it stops there instead of wrapping. */
static const uint64_t counter_max[IB_C__COUNT] = {
    [IB_C_LINK_DOWNED] = 255,         [IB_C_LINK_ERROR_RECOVERY] = 255,
    [IB_C_SYMBOL_ERROR] = 65535,      [IB_C_PORT_RCV_ERRORS] = 65535,
    [IB_C_LOCAL_LINK_INTEGRITY] = 15, [IB_C_EXCESSIVE_BUFFER_OVERRUN] = 15,
};

/*
 * Whether the ib section can be judged: the collector ran (or the snapshot carries the section).
 * Otherwise records why not, once for the running rule.
 */
static bool ib_known(const struct rule_ctx *ctx, struct findings *out)
{
    const struct ib_info *ib = &ctx->facts->snap->ib;

    if ((ib->valid >> IB_I_PORTS) & 1u)
        return true;
    if (!need_collector(ctx, out, COLLECTOR_IB))
        return false;
    rule_skip(ctx, out, -1, "the InfiniBand ports could not be listed");
    return false;
}

static bool is_ethernet(const struct ib_port *p)
{
    return ib_port_valid(p, IB_S_LINK_LAYER) && p->link_layer == IB_LL_ETHERNET;
}

/* "mlx5_0 port 1 (ibp12s0, 0000:0c:00.0)" */
static void port_label(char *buf, size_t size, const struct ib_port *p)
{
    int n = snprintf(buf, size, "%s port %" PRIu32, p->device ? p->device : "?", p->port);

    if (n < 0 || (size_t)n >= size)
        return;
    if (p->netdev && p->pci_address)
        snprintf(buf + n, size - (size_t)n, " (%s, %s)", p->netdev, p->pci_address);
    else if (p->netdev || p->pci_address)
        snprintf(buf + n, size - (size_t)n, " (%s)", p->netdev ? p->netdev : p->pci_address);
}

static struct finding *port_finding(const struct rule_ctx *ctx, struct findings *out,
                                    const struct ib_port *p)
{
    struct finding *f = finding_new(ctx, out, -1, -1);

    finding_object(f, "%s/%" PRIu32, p->device ? p->device : "?", p->port);
    return f;
}

static void state_evidence(struct finding *f, const struct ib_port *p)
{
    const char *layer =
        is_ethernet(p) ? N_("link layer Ethernet (RoCE)") : N_("link layer InfiniBand");

    finding_evidence_take(
        f, TWICE("%s: state %s, physical state %s",
                 (layer, ib_port_valid(p, IB_S_STATE) ? p->state_name : "unknown",
                  ib_port_valid(p, IB_S_PHYS_STATE) ? p->phys_state_name : "unknown"),
                 (_(layer), ib_port_valid(p, IB_S_STATE) ? p->state_name : _("unknown"),
                  ib_port_valid(p, IB_S_PHYS_STATE) ? p->phys_state_name : _("unknown"))));
    if (ib_port_valid(p, IB_S_RATE))
        finding_evidence(f, "rate %g Gb/s (%" PRIu32 "X %s)", p->rate_gbps, p->width,
                         p->speed ? p->speed : "");
    if (p->hca_type || p->fw_ver)
        finding_evidence(f, "adapter %s, firmware %s", p->hca_type ? p->hca_type : "?",
                         p->fw_ver ? p->fw_ver : "?");
}

/*
 * The GPUs whose PCIe switch the port's adapter shares (the pcie section's peers): their
 * GPUDirect RDMA traffic goes through this port, so they are the ones a fault here slows.
 */
static void near_gpus_evidence(const struct rule_ctx *ctx, struct finding *f,
                               const struct ib_port *p)
{
    char list[256];
    size_t len = 0, n = 0;

    list[0] = '\0';
    if (p->pci_address == NULL)
        return;
    for (size_t i = 0; i < ctx->facts->n_gpus; i++) {
        const struct facts_gpu *v = &ctx->facts->gpus[i];

        for (size_t k = 0; v->pcie && k < v->pcie->n_peers; k++) {
            const struct pcie_peer *q = &v->pcie->peers[k];
            int w;

            if (q->kind != PCIE_PEER_NETWORK || q->address == NULL ||
                strcmp(q->address, p->pci_address) != 0)
                continue;
            w = snprintf(list + len, sizeof(list) - len, "%sGPU %" PRIu32, n ? ", " : "",
                         v->g->index);
            if (w > 0 && (size_t)w < sizeof(list) - len) {
                len += (size_t)w;
                n++;
            }
        }
    }
    if (n > 0)
        finding_evidence(f,
                         "%s under the same PCIe switch as this adapter: %s GPUDirect RDMA "
                         "traffic goes through it",
                         list, n == 1 ? "its" : "their");
}

/*
 * ibstat for the port, ethtool for its interface (RoCE), and with up the command that brings an
 * interface left down up. The interface's name is looked at once, and only for Ethernet.
 */
static void port_fixes_up(struct finding *f, const struct ib_port *p, bool up)
{
    char *dev = fix_arg(f, "device name", p->device);
    char *nd = is_ethernet(p) ? fix_arg(f, "interface name", p->netdev) : NULL;

    if (dev)
        finding_fix(f, "ibstat %s %" PRIu32 "   # the port's state, rate and link layer", dev,
                    p->port);
    if (nd)
        finding_fix(f, "ethtool %s   # link detected, speed, auto-negotiation", nd);
    if (nd && up)
        finding_fix(f, "sudo ip link set %s up   # when the interface was left down", nd);
    free(dev);
    free(nd);
}

static void port_fixes(struct finding *f, const struct ib_port *p)
{
    port_fixes_up(f, p, false);
}

/* ---- ib.port-down ---- */

static void check_port_down(const struct rule_ctx *ctx, struct findings *out)
{
    const struct ib_info *ib = &ctx->facts->snap->ib;

    if (!ib_known(ctx, out))
        return;
    for (size_t i = 0; i < ib->n_ports; i++) {
        const struct ib_port *p = &ib->ports[i];
        bool phys = ib_port_valid(p, IB_S_PHYS_STATE), eth = is_ethernet(p);
        char label[160];
        struct finding *f;

        if (!ib_port_valid(p, IB_S_STATE)) {
            rule_skip(ctx, out, -1, "%s port %" PRIu32 ": state not read",
                      p->device ? p->device : "?", p->port);
            continue;
        }
        if (p->state == IB_STATE_ACTIVE && (!phys || p->phys_state == IB_PHYS_LINKUP))
            continue;
        port_label(label, sizeof(label), p);
        f = port_finding(ctx, out, p);
        f->impact = 0.3;
        if (phys && p->phys_state == IB_PHYS_DISABLED) {
            f->severity = SEV_INFO;
            f->impact = 0.02;
            finding_title(f, "%s is disabled", label);
            state_evidence(f, p);
            finding_evidence(f, "a disabled port was switched off on purpose (or by the switch); "
                                "nothing can use it");
            port_fixes(f, p);
            finding_fix(f, "# if the port should carry traffic, enable it (on the switch, or "
                           "with ibportstate / ip link set ... up for RoCE)");
            continue;
        }
        if (!eth && p->state != IB_STATE_DOWN && phys && p->phys_state == IB_PHYS_LINKUP) {
            finding_title(f, "%s has a link but is %s: no subnet manager configured it", label,
                          p->state_name);
            state_evidence(f, p);
            finding_evidence(f, "the cable and the far end are fine (LinkUp); an InfiniBand port "
                                "carries traffic only once a subnet manager makes it ACTIVE");
            near_gpus_evidence(ctx, f, p);
            port_fixes(f, p);
            finding_fix(f, "sudo sminfo   # is a subnet manager answering on this fabric?");
            finding_fix(f, "# start a subnet manager (opensm, or the one on the managed switch / "
                           "UFM) for this fabric");
            continue;
        }
        if (eth && p->state == IB_STATE_DOWN)
            finding_title(f, "%s (RoCE) is down: its interface has no link", label);
        else if (phys && p->phys_state == IB_PHYS_POLLING)
            finding_title(f, "%s is down: no link (Polling)", label);
        else if (phys &&
                 (p->phys_state == IB_PHYS_TRAINING || p->phys_state == IB_PHYS_ERR_RECOVERY))
            finding_title(f, "%s is %s: the link is %s", label, p->state_name,
                          p->phys_state == IB_PHYS_TRAINING ? "still training"
                                                            : "recovering from errors");
        else if (phys)
            finding_title(f, "%s is %s, physical state %s", label, p->state_name,
                          p->phys_state_name);
        else
            finding_title(f, "%s is %s", label, p->state_name);
        state_evidence(f, p);
        if (eth)
            finding_evidence(f, "a RoCE port follows its network interface: down when the "
                                "interface is down or has no carrier");
        else if (phys && p->phys_state == IB_PHYS_POLLING)
            finding_evidence(f, "Polling: the port looks for a peer and finds none (no cable, far "
                                "end down, or a bad cable or transceiver)");
        else if (phys &&
                 (p->phys_state == IB_PHYS_TRAINING || p->phys_state == IB_PHYS_ERR_RECOVERY))
            finding_evidence(f, "a link that keeps training or recovering is marginal: a cable, "
                                "transceiver or switch port");
        near_gpus_evidence(ctx, f, p);
        port_fixes_up(f, p, eth);
        finding_fix(f, "# check the cable and transceiver at both ends and the switch port; an "
                       "unused port can be disabled so that it is not reported");
    }
}

const struct rule rule_ib_port_down = {
    .id = "ib.port-down",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("InfiniBand / RoCE port not active"),
    .explanation = N_(
        "A port of an InfiniBand or RoCE adapter is not ACTIVE, so the traffic meant for it (NCCL "
        "between nodes, storage, MPI) goes over the remaining ports at a fraction of the speed, "
        "or a multi-node job fails to start. Polling means there is no link: no cable, the far "
        "end down, or a bad cable or transceiver. A port with a physical link (LinkUp) that stays "
        "INIT or ARMED has not been configured by a subnet manager: no SM runs on the fabric or "
        "it cannot reach the port. A RoCE port (link layer Ethernet) follows its network "
        "interface: it is down when the interface is down or has no carrier. A port disabled on "
        "purpose is reported as information."),
    .detection = N_("/sys/class/infiniband/DEV/ports/N/state not 4: ACTIVE, or phys_state not "
                    "5: LinkUp; phys_state 3: Disabled is information."),
    .fix =
        N_("Look at the port with ibstat (ethtool and ip link for RoCE). Polling: check the cable, "
           "transceiver and switch port. INIT/ARMED with LinkUp: start or fix the subnet manager "
           "(sminfo tells whether one answers). Disable ports that are unused on purpose."),
    .thresholds = NO_THRESHOLDS,
    .check = check_port_down,
};

/* ---- ib.rate-low ---- */

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

static bool active_with_rate(const struct ib_port *p)
{
    return ib_port_valid(p, IB_S_STATE) && p->state == IB_STATE_ACTIVE &&
           ib_port_valid(p, IB_S_RATE);
}

/* Neighbours: active ports of the same adapter type and link layer. */
static bool neighbours(const struct ib_port *a, const struct ib_port *b)
{
    return a != b && active_with_rate(b) && same_str(a->hca_type, b->hca_type) &&
           ib_port_valid(a, IB_S_LINK_LAYER) == ib_port_valid(b, IB_S_LINK_LAYER) &&
           a->link_layer == b->link_layer;
}

static void check_rate_low(const struct rule_ctx *ctx, struct findings *out)
{
    const struct ib_info *ib = &ctx->facts->snap->ib;
    double want = th(ctx, TH_IB_MIN_RATE_GBPS);

    if (!ib_known(ctx, out))
        return;
    for (size_t i = 0; i < ib->n_ports; i++) {
        const struct ib_port *p = &ib->ports[i];
        double best = 0;
        uint32_t best_width = 0;
        size_t n_peers = 0, n_faster = 0;
        bool below_want;
        char label[160];
        struct finding *f;

        if (!active_with_rate(p))
            continue;
        for (size_t k = 0; k < ib->n_ports; k++) {
            const struct ib_port *q = &ib->ports[k];

            if (!neighbours(p, q))
                continue;
            n_peers++;
            n_faster += q->rate_gbps > p->rate_gbps;
            if (q->rate_gbps > best) {
                best = q->rate_gbps;
                best_width = q->width;
            }
        }
        /* The fabric's rate is InfiniBand's: RoCE ports are often storage or management NICs. */
        if (is_ethernet(p))
            below_want = false;
        else
            below_want = want > 0 && p->rate_gbps < want;
        if (!(n_faster > 0 && best > p->rate_gbps) && !below_want)
            continue;
        port_label(label, sizeof(label), p);
        f = port_finding(ctx, out, p);
        if (n_faster > 0 && best > p->rate_gbps)
            finding_title(f, "%s runs at %g Gb/s, its neighbours at %g Gb/s", label, p->rate_gbps,
                          best);
        else
            finding_title(f, "%s runs at %g Gb/s, below the %g Gb/s expected", label, p->rate_gbps,
                          want);
        state_evidence(f, p);
        if (n_faster > 0)
            finding_evidence(f,
                             "%zu of %zu other active port%s of the same adapter type and link "
                             "layer run%s faster, up to %g Gb/s (%" PRIu32 "X)",
                             n_faster, n_peers, n_peers == 1 ? "" : "s", n_peers == 1 ? "s" : "",
                             best, best_width);
        if (n_faster > 0 && best_width > p->width)
            finding_evidence(f,
                             "%" PRIu32 "X of %" PRIu32 "X lanes: lanes failed to train (a cable, "
                             "transceiver or port fault)",
                             p->width, best_width);
        if (below_want)
            finding_evidence(f, "ib_min_rate_gbps is %g Gb/s", want);
        finding_evidence(f, "%.0f %% of the bandwidth",
                         pct(p->rate_gbps, best > want ? best : want));
        near_gpus_evidence(ctx, f, p);
        port_fixes(f, p);
        finding_fix(f, "# reseat or replace the cable and transceivers; check the switch port's "
                       "speed settings and both ends' firmware");
        f->impact = 0.2;
    }
}

const struct rule rule_ib_rate_low = {
    .id = "ib.rate-low",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("InfiniBand / RoCE port slower than it should be"),
    .explanation = N_(
        "An active port negotiated a lower rate than its neighbours (the other ports of the same "
        "adapter type and link layer on this machine), or, for an InfiniBand port, than the rate "
        "the fabric is built for (ib_min_rate_gbps): fewer lanes (2X or 1X instead of 4X: a lane "
        "failed) or a lower "
        "speed per lane (HDR instead of NDR: a cable, transceiver or switch port that cannot hold "
        "the speed, or a speed setting). Every transfer through the port, and in an all-reduce "
        "every GPU waiting on it, runs at that fraction. sysfs does not tell what the port "
        "could do, so a machine whose ports are all equally slow is found only with "
        "ib_min_rate_gbps set (400 for an NDR fabric). Ports split on purpose (NDR200 2X) can be "
        "told apart by their adapter type or with this rule disabled."),
    .detection =
        N_("an ACTIVE port whose /sys/class/infiniband/DEV/ports/N/rate is below that of "
           "another active port with the same hca_type and link_layer, or (InfiniBand ports) "
           "below ib_min_rate_gbps when set."),
    .fix =
        N_("Compare with ibstat (ethtool for RoCE); reseat or replace the cable and transceivers, "
           "check the switch port and the firmware of both ends."),
    .thresholds = THRESHOLDS(TH_IB_MIN_RATE_GBPS),
    .check = check_rate_low,
};

/* ---- ib.errors ---- */

static uint64_t win(const struct ib_port *p, enum ib_counter c)
{
    return ib_port_valid(p, IB_S_WINDOW + c) ? p->window[c] : 0;
}

static void check_errors(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct ib_info *ib = &s->ib;
    double minutes = (double)s->window_ms / 60000.0;
    bool skipped_window = false;

    if (!ib_known(ctx, out))
        return;
    for (size_t i = 0; i < ib->n_ports; i++) {
        const struct ib_port *p = &ib->ports[i];
        uint64_t downed, recov, sym, rcv;
        bool flap, sym_bad, rcv_bad;
        char label[160];
        struct finding *f;

        for (int c = 0; c < IB_C__COUNT; c++) {
            if (counter_max[c] != 0 && ib_port_valid(p, IB_S_COUNTER + c) &&
                p->counter[c] >= counter_max[c])
                rule_skip(ctx, out, -1,
                          "%s port %" PRIu32 ": %s is at its maximum (%" PRIu64
                          "): it saturates, so its growth cannot be seen until it is reset",
                          p->device ? p->device : "?", p->port, ib_counter_files[c],
                          counter_max[c]);
        }
        if (s->window_ms <= 0 || !ib_port_valid(p, IB_S_WINDOW + IB_C_SYMBOL_ERROR)) {
            if (!skipped_window) {
                if (s->window_ms <= 0)
                    rule_skip(ctx, out, -1, "needs a sampling window (--window)");
                else
                    rule_skip(ctx, out, -1, "the InfiniBand counters were not read twice");
                skipped_window = true;
            }
            continue;
        }
        downed = win(p, IB_C_LINK_DOWNED);
        recov = win(p, IB_C_LINK_ERROR_RECOVERY);
        sym = win(p, IB_C_SYMBOL_ERROR);
        rcv = win(p, IB_C_PORT_RCV_ERRORS) + win(p, IB_C_LOCAL_LINK_INTEGRITY) +
              win(p, IB_C_EXCESSIVE_BUFFER_OVERRUN);
        flap = downed > 0 || recov > 0;
        sym_bad = sym > 0 && (double)sym / minutes >= th(ctx, TH_IB_SYMBOL_ERRORS_PER_MIN);
        rcv_bad = rcv > 0 && (double)rcv / minutes >= th(ctx, TH_IB_RCV_ERRORS_PER_MIN);
        if (!flap && !sym_bad && !rcv_bad)
            continue;
        port_label(label, sizeof(label), p);
        f = port_finding(ctx, out, p);
        if (downed > 0)
            f->severity = SEV_CRITICAL;
        if (flap) {
            const char *how = downed > 0 ? N_("went down") : N_("retrained");
            uint64_t times = downed > 0 ? downed : recov;
            const char *plural = times == 1 ? "" : "s";

            /* TRANSLATORS: "went down 3 times in 10 s"; the 4th %s is the English plural's "s"
               (write %.0s to leave it out) */
            finding_title_take(
                f, TWICE("%s link flapping: %s %" PRIu64 " time%s in %.0f s",
                         (label, how, times, plural, (double)s->window_ms / 1000.0),
                         (label, _(how), times, plural, (double)s->window_ms / 1000.0)));
        } else if (sym_bad)
            finding_title(f, "%s symbol errors growing: %.0f a minute", label,
                          (double)sym / minutes);
        else
            finding_title(f, "%s receive errors growing: %.0f a minute", label,
                          (double)rcv / minutes);
        finding_evidence(
            f,
            "in the %.1f s window: link_downed +%" PRIu64 ", link_error_recovery +%" PRIu64
            ", symbol_error +%" PRIu64 ", port_rcv_errors +%" PRIu64
            ", local_link_integrity_errors +%" PRIu64 ", excessive_buffer_overrun_errors +%" PRIu64,
            (double)s->window_ms / 1000.0, downed, recov, sym, win(p, IB_C_PORT_RCV_ERRORS),
            win(p, IB_C_LOCAL_LINK_INTEGRITY), win(p, IB_C_EXCESSIVE_BUFFER_OVERRUN));
        if (ib_port_valid(p, IB_S_WINDOW + IB_C_PORT_XMIT_DISCARDS) &&
            p->window[IB_C_PORT_XMIT_DISCARDS] > 0)
            finding_evidence(f, "port_xmit_discards +%" PRIu64 " (packets dropped on the way out)",
                             p->window[IB_C_PORT_XMIT_DISCARDS]);
        if (ib_port_valid(p, IB_S_COUNTER + IB_C_SYMBOL_ERROR) &&
            ib_port_valid(p, IB_S_COUNTER + IB_C_LINK_DOWNED))
            finding_evidence(f,
                             "totals since the counters were reset: symbol_error %" PRIu64
                             ", link_downed %" PRIu64,
                             p->counter[IB_C_SYMBOL_ERROR], p->counter[IB_C_LINK_DOWNED]);
        state_evidence(f, p);
        near_gpus_evidence(ctx, f, p);
        port_fixes(f, p);
        finding_fix(f, "# reseat or replace the cable and transceivers at both ends; check the "
                       "switch port's counters too (ibqueryerrors)");
        f->impact = downed > 0 ? 0.6 : 0.3;
    }
}

const struct rule rule_ib_errors = {
    .id = "ib.errors",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("InfiniBand / RoCE link errors growing"),
    .explanation =
        N_("The port's error counters grow while gpudoctor watches: symbol errors (bits the link "
           "had to correct), receive errors (bad packets, local link integrity, buffer overruns), "
           "link retrains (link_error_recovery) or the link going down (link_downed). A marginal "
           "cable, a dirty or failing transceiver, or a bad switch port: packets are re-sent, "
           "collectives slow down and stall, and a link that goes down makes multi-node jobs fail "
           "(critical). Counts since boot say little (they include cabling work and they saturate: "
           "symbol_error stops at 65535), so only growth over the window is judged."),
    .detection = N_("over the sampling window: link_downed or link_error_recovery growing at all; "
                    "symbol_error growing at ib_symbol_errors_per_min or faster; port_rcv_errors + "
                    "local_link_integrity_errors + excessive_buffer_overrun_errors at "
                    "ib_rcv_errors_per_min or faster. Needs a window."),
    .fix = N_("Reseat or replace the cable and transceivers at both ends, check the switch port's "
              "counters (ibqueryerrors), and watch whether the counters keep growing."),
    .thresholds = THRESHOLDS(TH_IB_SYMBOL_ERRORS_PER_MIN, TH_IB_RCV_ERRORS_PER_MIN),
    .check = check_errors,
};

/* ---- ib.peermem-missing ---- */

static void check_peermem(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct ib_info *ib = &s->ib;
    size_t n_gpus = ctx->facts->n_gpus > s->pcie.n_gpus ? ctx->facts->n_gpus : s->pcie.n_gpus;
    bool open = s->driver.module_flavor && strcmp(s->driver.module_flavor, "open") == 0;
    struct finding *f;

    if (!ib_known(ctx, out) || ib->n_ports == 0 || n_gpus == 0)
        return;
    if (!((ib->valid >> IB_I_MODULES) & 1u)) {
        rule_skip(ctx, out, -1, "/proc/modules not read: whether nvidia_peermem is loaded");
        return;
    }
    if (ib->peermem_loaded)
        return;
    f = finding_new(ctx, out, -1, -1);
    finding_object(f, "nvidia_peermem");
    finding_title(f,
                  "GPUDirect RDMA is off: nvidia_peermem is not loaded (%zu GPU%s, %zu RDMA "
                  "port%s)",
                  n_gpus, n_gpus == 1 ? "" : "s", ib->n_ports, ib->n_ports == 1 ? "" : "s");
    finding_evidence(f, "/proc/modules lists neither nvidia_peermem nor nv_peer_mem");
    finding_evidence(f, "%" PRIu32 " RDMA device%s with %zu port%s, first %s", ib->devices,
                     ib->devices == 1 ? "" : "s", ib->n_ports, ib->n_ports == 1 ? "" : "s",
                     ib->ports[0].device ? ib->ports[0].device : "?");
    finding_evidence(f, "without it, NCCL and MPI copy every GPU buffer through host memory "
                        "before the network sends it");
    if (open) {
        f->severity = SEV_INFO;
        finding_evidence(f, "the open kernel modules also offer DMA-BUF (kernel 5.12 or later), "
                            "which recent NCCL and UCX use instead of nvidia_peermem: check "
                            "that the job's NCCL uses it (NCCL_DEBUG=INFO says \"DMA-BUF\")");
    }
    finding_fix(f, "sudo modprobe nvidia_peermem   # load GPUDirect RDMA now");
    finding_fix(f, "echo nvidia_peermem | sudo tee /etc/modules-load.d/nvidia-peermem.conf   # "
                   "and at every boot");
    finding_fix(f, "# modprobe fails when the RDMA stack (MLNX_OFED / DOCA or the kernel's) was "
                   "installed after the driver: reinstall the driver, then load it again");
    f->impact = 0.3;
}

const struct rule rule_ib_peermem_missing = {
    .id = "ib.peermem-missing",
    .severity = SEV_WARNING,
    .category = CAT_FABRIC,
    .title = N_("GPUDirect RDMA module not loaded"),
    .explanation = N_(
        "The machine has NVIDIA GPUs and InfiniBand or RoCE adapters, but nvidia_peermem (or the "
        "older nv_peer_mem) is not loaded, so the network adapter cannot read and write GPU "
        "memory directly. NCCL, MPI and storage clients then stage every transfer through host "
        "memory: multi-node training runs a good deal slower, with more CPU load, and nothing "
        "fails to tell you. The driver ships the module but does not load it. With the open "
        "kernel modules on a recent kernel, DMA-BUF can do the same without it (reported as "
        "information then)."),
    .detection = N_("ports in /sys/class/infiniband, NVIDIA GPUs (NVML or sysfs), and neither "
                    "nvidia_peermem nor nv_peer_mem in /proc/modules."),
    .fix =
        N_("sudo modprobe nvidia_peermem, and list it in /etc/modules-load.d so that it loads at "
           "boot. If it does not load, the driver was installed before the RDMA stack: reinstall "
           "the driver."),
    .thresholds = NO_THRESHOLDS,
    .check = check_peermem,
};
