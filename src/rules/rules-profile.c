/*
 * Expected hardware: every way the node differs from its profile (the [profile] section of the
 * configuration, rules/profile.h) is a finding: a GPU missing, another model, less memory, a
 * slower PCIe link, another driver, CUDA or VBIOS version. Without a profile these rules say
 * nothing. What the snapshot cannot show yet (NVLink, InfiniBand, Fabric Manager) is said as not
 * checked, never as a mismatch.
 */
#include "rules/profile.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the profile said it: " (profile, /etc/gpudoctor.conf:12)". */
static void origin_text(char *buf, size_t size, const struct profile *p, int key)
{
    if (p->origin[key])
        snprintf(buf, size, " (%s)", p->origin[key]);
    else
        buf[0] = '\0';
}

/*
 * The deviations of the running rule's keys, after saying what could not be checked. Returns how
 * many are real differences, in *out (free with profile_deviations_free); 0 without a profile.
 */
static size_t deviations(const struct rule_ctx *ctx, struct findings *out,
                         struct profile_deviation **devs, size_t *n_all)
{
    const struct profile *p = ctx->facts->th->profile;
    struct profile_facts facts;
    struct profile_deviation *all;
    size_t n, k = 0;
    bool any = false;

    *devs = NULL;
    *n_all = 0;
    if (p == NULL)
        return 0;
    for (int i = 0; i < PK__COUNT; i++)
        any |= p->set[i] && strcmp(profile_keys[i].rule, ctx->rule->id) == 0;
    if (!any)
        return 0;
    profile_facts_from_snapshot(&facts, ctx->facts->snap);
    n = profile_compare(p, &facts, &all);
    profile_facts_free(&facts);
    for (size_t i = 0; i < n; i++) {
        const struct profile_key_def *def = &profile_keys[all[i].key];

        if (strcmp(def->rule, ctx->rule->id) != 0)
            continue;
        if (all[i].outcome == PROFILE_NOT_IN_EVIDENCE) {
            rule_skip(ctx, out, -1, "%s: not in the evidence (no %s section in this snapshot)",
                      def->name, def->section);
        } else if (all[i].outcome == PROFILE_UNKNOWN) {
            rule_skip(ctx, out, all[i].gpu, "%s: not known for %s", def->name,
                      all[i].gpu >= 0 ? "this GPU" : "this node");
        } else {
            struct profile_deviation tmp = all[k];

            all[k++] = all[i];
            all[i] = tmp;
        }
    }
    *devs = all;
    *n_all = n;
    return k;
}

/* ---- profile.gpu-count ---- */

static void check_count(const struct rule_ctx *ctx, struct findings *out)
{
    const struct profile *p = ctx->facts->th->profile;
    struct profile_deviation *d;
    size_t n_all, n = deviations(ctx, out, &d, &n_all);

    for (size_t i = 0; i < n; i++) {
        struct profile_facts facts;
        struct finding *f = finding_new(ctx, out, -1, -1);
        char where[300];

        profile_facts_from_snapshot(&facts, ctx->facts->snap);
        origin_text(where, sizeof(where), p, PK_GPU_COUNT);
        if (d[i].fewer) {
            finding_title(f, "Only %s of the %s GPUs the profile expects", d[i].found,
                          d[i].expected);
            f->impact = (double)(p->num[PK_GPU_COUNT] - (int64_t)facts.gpu_count);
        } else {
            f->severity = SEV_WARNING;
            finding_title(f, "%s GPUs where the profile expects %s", d[i].found, d[i].expected);
            f->impact = 0.1;
        }
        finding_object(f, "gpu_count");
        finding_evidence(f, "the profile expects %s GPUs%s", d[i].expected, where);
        finding_evidence(f, "%s reports %s", facts.count_source ? facts.count_source : "NVML",
                         d[i].found);
        if (facts.pci_valid)
            finding_evidence(f, "NVIDIA GPUs on the PCI bus: %" PRIu32, facts.pci_gpus);
        finding_fix(f, "nvidia-smi -L   # the GPUs the driver sees");
        finding_fix(f, "lspci -nn -d 10de: | grep -E '\\[030[02]\\]'   # NVIDIA GPUs on the PCI "
                       "bus, with or without a driver");
        if (d[i].fewer)
            finding_fix(f, "# on the bus but not in nvidia-smi: see 'gpudoctor explain "
                           "health.gpu-missing'; gone from the bus too: reseat or replace it");
        else
            finding_fix(f, "# more GPUs than expected: the profile may be out of date");
        profile_facts_free(&facts);
    }
    profile_deviations_free(d, n_all);
}

const struct rule rule_profile_gpu_count = {
    .id = "profile.gpu-count",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("GPU count differs from the node's profile"),
    .explanation =
        N_("The node's profile (the [profile] section of the configuration, or a file written by "
           "'gpudoctor profile save' on a known-good node) says how many GPUs it has. Fewer is "
           "critical: a GPU has failed, fallen off the bus, or was never seated, and every job "
           "that asks for all of them waits or runs short. More is a warning: the profile is "
           "probably out of date."),
    .detection =
        N_("gpu_count of the profile against the GPUs NVML reports "
           "(nvmlDeviceGetCount_v2), or the NVIDIA GPUs on the PCI bus when NVML could not "
           "be used."),
    .fix =
        N_("Compare nvidia-smi -L with the GPUs on the PCI bus (lspci -d 10de:). A GPU on the bus "
           "that the driver does not show is health.gpu-missing; one gone from the bus needs a "
           "reseat or a replacement. Update the profile when the node was changed on purpose."),
    .thresholds = NO_THRESHOLDS,
    .check = check_count,
};

/* ---- per-GPU keys: model, memory, VBIOS ---- */

/* gpu: the one GPU the finding is about, -1 for several. */
static void gpu_fixes(struct finding *f, int32_t gpu, int key)
{
    switch (key) {
    case PK_GPU_MODEL:
        finding_fix(f, "nvidia-smi -L   # the model of every GPU");
        finding_fix(f, "# another model in this node: check the inventory, or update the "
                       "profile");
        break;
    case PK_GPU_MEMORY_MIB:
        if (gpu >= 0)
            finding_fix(f,
                        "nvidia-smi -i %d -q -d MEMORY,ECC   # total memory, and whether ECC "
                        "(which takes some) is on",
                        (int)gpu);
        else
            finding_fix(f, "nvidia-smi -q -d MEMORY,ECC   # total memory, and whether ECC (which "
                           "takes some) is on");
        finding_fix(f, "# another memory size: another board (40 vs 80 GB), ECC switched, or a "
                       "driver that reserves more");
        break;
    case PK_VBIOS_VERSION:
        finding_fix(f, "nvidia-smi --query-gpu=index,vbios_version --format=csv   # every "
                       "GPU's VBIOS");
        finding_fix(f, "# update the VBIOS with the vendor's firmware bundle (or nvflash), or "
                       "update the profile");
        break;
    }
}

/*
 * One finding per value found: eight GPUs on the same other VBIOS are one finding about the node
 * (subject: no GPU, object "GPUs 0-7"), one GPU on its own is a finding about that GPU.
 */
static void check_gpu_key(const struct rule_ctx *ctx, struct findings *out, int key,
                          const char *what)
{
    const struct profile *p = ctx->facts->th->profile;
    struct profile_deviation *d;
    size_t n_all, n = deviations(ctx, out, &d, &n_all);
    const char *unit = profile_keys[key].unit, *sp = *unit ? " " : "";
    int32_t *idx = xcalloc(n ? n : 1, sizeof(*idx));
    bool *done = xcalloc(n ? n : 1, sizeof(*done));
    char where[300];

    if (n == 0) {
        free(idx);
        free(done);
        profile_deviations_free(d, n_all);
        return;
    }
    origin_text(where, sizeof(where), p, key);
    for (size_t i = 0; i < n; i++) {
        struct finding *f;
        size_t m = 0;
        char list[128];

        if (done[i])
            continue;
        for (size_t j = i; j < n; j++) {
            if (!done[j] && strcmp(d[j].found, d[i].found) == 0) {
                done[j] = true;
                idx[m++] = d[j].gpu;
            }
        }
        render_ranges(list, sizeof(list), idx, m);
        f = finding_new(ctx, out, m == 1 ? d[i].gpu : -1, -1);
        if (m == 1) {
            finding_title(f, "GPU %d %s is %s%s%s, the profile expects %s%s%s", (int)d[i].gpu, what,
                          d[i].found, sp, unit, d[i].expected, sp, unit);
        } else {
            finding_object(f, "GPUs %s", list);
            finding_title(f, "GPUs %s: %s %s%s%s, the profile expects %s%s%s", list, what,
                          d[i].found, sp, unit, d[i].expected, sp, unit);
        }
        finding_evidence(f, "profile: %s = %s%s", profile_keys[key].name, d[i].expected, where);
        finding_evidence(f, "GPU%s %s: %s%s%s", m == 1 ? "" : "s", list, d[i].found, sp, unit);
        if (key == PK_GPU_MEMORY_MIB)
            finding_evidence(f, "more than %.0f %% apart", PROFILE_NEAR_PCT);
        gpu_fixes(f, m == 1 ? d[i].gpu : -1, key);
        f->impact = (key == PK_GPU_MEMORY_MIB && d[i].fewer ? 0.3 : 0.1) * (double)m;
    }
    free(idx);
    free(done);
    profile_deviations_free(d, n_all);
}

static void check_model(const struct rule_ctx *ctx, struct findings *out)
{
    check_gpu_key(ctx, out, PK_GPU_MODEL, "model");
}

static void check_memory(const struct rule_ctx *ctx, struct findings *out)
{
    check_gpu_key(ctx, out, PK_GPU_MEMORY_MIB, "memory");
}

static void check_vbios(const struct rule_ctx *ctx, struct findings *out)
{
    check_gpu_key(ctx, out, PK_VBIOS_VERSION, "VBIOS");
}

const struct rule rule_profile_gpu_model = {
    .id = "profile.gpu-model",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("A GPU of another model than the node's profile"),
    .explanation = N_("The profile names the GPU model every GPU of the node should be. A GPU of "
                      "another model (a spare of the wrong kind, a PCIe card among SXM boards, a "
                      "40 GB board among 80 GB ones) makes jobs that assume identical GPUs run at "
                      "the speed of the slowest, or fail."),
    .detection =
        N_("gpu_model of the profile against each GPU's name (nvmlDeviceGetName), compared "
           "exactly."),
    .fix =
        N_("Check the node's inventory: replace the GPU, or update the profile when the change was "
           "intended."),
    .thresholds = NO_THRESHOLDS,
    .check = check_model,
};

const struct rule rule_profile_gpu_memory = {
    .id = "profile.gpu-memory",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("A GPU's memory differs from the node's profile"),
    .explanation =
        /* xgettext:no-c-format */ N_(
            "The profile says how much memory each GPU has, as NVML reports the total. "
            "More than 1 % apart means another board (40 vs 80 GB), ECC switched on or off "
            "on a board where it takes memory, or a driver that reserves more: jobs sized "
            "for the profile's memory run out of it."),
    .detection = /* xgettext:no-c-format */ N_(
        "gpu_memory_mib of the profile against each GPU's total memory "
        "(nvmlDeviceGetMemoryInfo_v2), in MiB; a difference of more than 1 % is "
        "reported."),
    .fix =
        N_("nvidia-smi -q -d MEMORY,ECC shows the total and the ECC mode; replace the board, set "
           "ECC back, or update the profile."),
    .thresholds = NO_THRESHOLDS,
    .check = check_memory,
};

const struct rule rule_profile_vbios = {
    .id = "profile.vbios",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("A GPU's VBIOS differs from the node's profile"),
    .explanation =
        N_("The profile names the VBIOS every GPU should run. A GPU on another VBIOS "
           "(missed by a firmware update, or replaced with a spare) may carry fixed bugs "
           "or other clock and power tables, and behave unlike its neighbours."),
    .detection = N_("vbios_version of the profile against each GPU's VBIOS version "
                    "(nvmlDeviceGetVbiosVersion), compared exactly."),
    .fix = N_("Update the GPU's firmware with the vendor's bundle, or update the profile."),
    .thresholds = NO_THRESHOLDS,
    .check = check_vbios,
};

/* ---- profile.pcie ---- */

static void check_pcie(const struct rule_ctx *ctx, struct findings *out)
{
    const struct profile *p = ctx->facts->th->profile;
    struct profile_deviation *d;
    size_t n_all, n = deviations(ctx, out, &d, &n_all);

    for (size_t i = 0; i < n; i++) {
        const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)d[i].gpu);
        struct finding *f = finding_new(ctx, out, d[i].gpu, -1);
        bool gen = d[i].key == PK_PCIE_GEN;
        const char *bus = v && gpu_valid(v->g, GPU_S_PCI_BUS_ID) ? v->g->pci_bus_id : NULL;
        char where[300], *word;

        origin_text(where, sizeof(where), p, d[i].key);
        if (gen)
            finding_title(f, "GPU %d PCIe link can reach Gen%s only, the profile expects Gen%s",
                          (int)d[i].gpu, d[i].found, d[i].expected);
        else
            finding_title(f, "GPU %d PCIe link runs x%s, the profile expects x%s", (int)d[i].gpu,
                          d[i].found, d[i].expected);
        finding_evidence(f, "profile: %s = %s%s", profile_keys[d[i].key].name, d[i].expected,
                         where);
        finding_evidence(f,
                         gen ? "highest generation of GPU and slot: Gen%s" : "link width now: x%s",
                         d[i].found);
        word = fix_pci_arg(f, pci_lspci_form(bus));
        if (word)
            finding_fix(f,
                        "sudo lspci -vv -s %s | grep -E 'LnkCap|LnkSta'   # what the link can "
                        "do and does",
                        word);
        free(word);
        finding_fix(f, "# another slot, a riser, a BIOS setting, or a board that needs "
                       "reseating; compare with a node that matches the profile");
        f->impact = 0.3;
    }
    profile_deviations_free(d, n_all);
}

const struct rule rule_profile_pcie = {
    .id = "profile.pcie",
    .severity = SEV_WARNING,
    .category = CAT_PCIE,
    .title = N_("A GPU's PCIe link is below the node's profile"),
    .explanation =
        N_("The profile says which PCIe generation every GPU's link must be able to reach "
           "and how many lanes it must run. A link that cannot reach the generation (an "
           "older slot, a BIOS setting, a riser) or runs fewer lanes moves data between "
           "host and GPU at a fraction of the speed of its neighbours. A faster link than "
           "the profile's is not reported."),
    .detection = N_("pcie_gen of the profile against the highest generation of GPU and slot "
                    "(nvmlDeviceGetMaxPcieLinkGeneration: an idle link slowing down is not a "
                    "deviation); pcie_width against the width the link runs now "
                    "(nvmlDeviceGetCurrPcieLinkWidth). Less than the profile is reported."),
    .fix = N_("lspci -vv (LnkCap, LnkSta) shows what the link can do and does; check the BIOS PCIe "
              "settings, reseat the board and any riser, try another slot."),
    .thresholds = NO_THRESHOLDS,
    .check = check_pcie,
};

/* ---- profile.versions ---- */

static void check_versions(const struct rule_ctx *ctx, struct findings *out)
{
    const struct profile *p = ctx->facts->th->profile;
    struct profile_deviation *d;
    size_t n_all, n = deviations(ctx, out, &d, &n_all);

    for (size_t i = 0; i < n; i++) {
        struct finding *f = finding_new(ctx, out, -1, -1);
        bool driver = d[i].key == PK_DRIVER_VERSION;
        const char *what = driver ? "driver" : "CUDA (as the driver supports it)";
        char where[300];

        origin_text(where, sizeof(where), p, d[i].key);
        finding_object(f, "%s", profile_keys[d[i].key].name);
        if (d[i].key == PK_FABRICMANAGER_VERSION) {
            finding_title(f, "fabricmanager_version is %s, the profile expects %s", d[i].found,
                          d[i].expected);
            finding_evidence(f, "profile: %s = %s%s", profile_keys[d[i].key].name, d[i].expected,
                             where);
            finding_evidence(f, "this node's Fabric Manager: %s", d[i].found);
            finding_fix(f,
                        "# install the Fabric Manager the profile names (%s) with the driver "
                        "of the same version, as the other nodes have them, or update the "
                        "profile after a planned upgrade",
                        d[i].expected);
            f->impact = 0.2;
            continue;
        }
        finding_title(f, "%s %s, the profile expects %s", driver ? "Driver" : "CUDA", d[i].found,
                      d[i].expected);
        finding_evidence(f, "profile: %s = %s%s", profile_keys[d[i].key].name, d[i].expected,
                         where);
        finding_evidence(f, "this node's %s: %s", what, d[i].found);
        finding_fix(f, "nvidia-smi   # the driver version and the CUDA version it supports");
        finding_fix(f, "cat /proc/driver/nvidia/version   # the kernel module loaded");
        finding_fix(f,
                    "# install the driver the profile names (%s %s) as the other nodes have "
                    "it, or update the profile after a planned upgrade",
                    profile_keys[d[i].key].name, d[i].expected);
        f->impact = 0.2;
    }
    profile_deviations_free(d, n_all);
}

const struct rule rule_profile_versions = {
    .id = "profile.versions",
    .severity = SEV_WARNING,
    .category = CAT_STACK,
    .title = N_("Driver or CUDA version differs from the profile"),
    .explanation =
        N_("The profile names the NVIDIA driver version, the CUDA version that driver supports and "
           "(on NVSwitch systems) the Fabric Manager version every node should run. A node on "
           "another version was missed by an upgrade or rolled back: jobs built for the fleet's "
           "CUDA may not start there, and multi-node jobs mix versions."),
    .detection = N_("driver_version against NVML's driver version (else the kernel module's); "
                    "cuda_version against the CUDA version of the driver "
                    "(nvmlSystemGetCudaDriverVersion_v2, as '12.4'); fabricmanager_version against "
                    "Fabric Manager's (its package's, else its log's; docs/fabric.md); compared "
                    "exactly."),
    .fix = N_("Install the driver version the profile names, or update the profile after a planned "
              "upgrade."),
    .thresholds = NO_THRESHOLDS,
    .check = check_versions,
};

/* ---- profile.fabric ---- */

static void check_fabric(const struct rule_ctx *ctx, struct findings *out)
{
    struct profile_deviation *d;
    size_t n_all, n = deviations(ctx, out, &d, &n_all);

    /* NVLink links and InfiniBand ports and rate; evidence without those sections is said by
     * deviations() as not checked. */
    for (size_t i = 0; i < n; i++) {
        struct finding *f = finding_new(ctx, out, d[i].gpu, -1);

        if (profile_keys[d[i].key].cmp == PROFILE_AT_LEAST)
            finding_title(f, "%s is %s, the profile expects at least %s",
                          profile_keys[d[i].key].name, d[i].found, d[i].expected);
        else
            finding_title(f, "%s is %s, the profile expects %s", profile_keys[d[i].key].name,
                          d[i].found, d[i].expected);
        finding_evidence(f, "profile: %s = %s", profile_keys[d[i].key].name, d[i].expected);
        finding_fix(f, "# compare the fabric with a node that matches the profile");
        f->impact = 0.3;
    }
    profile_deviations_free(d, n_all);
}

const struct rule rule_profile_fabric = {
    .id = "profile.fabric",
    .severity = SEV_WARNING,
    .category = CAT_HEALTH,
    .title = N_("NVLink or InfiniBand differs from the profile"),
    .explanation = N_("The profile can say how many NVLink links every GPU has active, how many "
                      "InfiniBand ports must be up and at which rate. A GPU with fewer links, or "
                      "fewer ports or a lower rate than the profile says, is a node that does not "
                      "match its hardware: a link or port down, a cable or transceiver at a lower "
                      "speed. Evidence without NVLink or InfiniBand state (older snapshots, the "
                      "Prometheus series of fleet) leaves these keys not checked, never a "
                      "mismatch."),
    .detection =
        N_("nvlink_count against the links each GPU reports active (nvmlDeviceGetNvLinkState; "
           "0 on a GPU without NVLink); ib_ports against the InfiniBand ports (not RoCE) "
           "in state ACTIVE, ib_rate_gbps against the slowest of them (sysfs), when the "
           "snapshot has those sections."),
    .fix = N_("Compare the node's fabric with one that matches the profile (nvidia-smi nvlink -s, "
              "ibstat)."),
    .thresholds = NO_THRESHOLDS,
    .check = check_fabric,
};
