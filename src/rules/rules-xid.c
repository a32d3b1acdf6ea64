/*
 * XIDs: every Xid the kernel log holds for a GPU, classified by meaning and likely cause with
 * NVIDIA's action (data/xid.tsv through src/data/xid.h), one finding per GPU and code. The
 * severity is the catalogue's policy, refined by what the driver wrote inside the message: the
 * recovery action of Xid 154, the NVLink5 sub-codes of 144-150 (NVIDIA's decode sheet), RST and
 * D-RST of 94/95, and the cause a 45 names (docs/driver.md). Xid 79 (fallen off the bus) is
 * health.gpu-lost's.
 *
 * Fix lines are pasted into root shells: each is a whole command or a "#" comment, and the only
 * values from the log in them are integers the parser read (pids, links).
 */
#include "data/xid.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XID_FALLEN_OFF_BUS  79
#define XID_PREEMPTIVE      45
#define XID_CONTAINED       94
#define XID_UNCONTAINED     95
#define XID_RECOVERY_ACTION 154

/*
 * Faults after which the driver can no longer serve the GPU: uncorrectable memory errors (48
 * double-bit ECC, 63/64 row remapping, 94/95 contained and uncontained) and GSP firmware that
 * stopped answering (119) or failed (120). NVML hanging or failing, hung tasks in the driver and
 * the GPU falling off the bus or answering no query follow from them (the causal links below).
 */
static bool xid_wedges(int32_t code)
{
    switch (code) {
    case 48:
    case 63:
    case 64:
    case 94:
    case 95:
    case 119:
    case 120:
        return true;
    default:
        return false;
    }
}

#define XID_WEDGES_WHEN N_("the Xid is 48, 63, 64, 94, 95, 119 or 120")

#define HAS(ev, slot) (((ev)->valid & (UINT64_C(1) << (slot))) != 0)

static enum severity sev_of(enum xid_severity s)
{
    switch (s) {
    case XID_SEV_INFO:
        return SEV_INFO;
    case XID_SEV_CRITICAL:
        return SEV_CRITICAL;
    default:
        return SEV_WARNING;
    }
}

static enum severity worse(enum severity a, enum severity b)
{
    return a > b ? a : b;
}

/* Where an event happened: the GPU by PCI address or UUID, else NULL. */
static const struct facts_gpu *event_gpu(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    const struct facts_gpu *v = klog_gpu(ctx, ev->pci);

    for (size_t i = 0; v == NULL && ev->uuid && i < ctx->facts->n_gpus; i++) {
        const struct gpu *g = ctx->facts->gpus[i].g;

        if (gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(g->uuid, ev->uuid) == 0)
            v = &ctx->facts->gpus[i];
    }
    return v;
}

static bool counts(const struct rule_ctx *ctx, const struct klog_event *ev)
{
    return ev->kind == KLOG_XID && HAS(ev, KLOG_S_XID) && ev->xid != XID_FALLEN_OFF_BUS &&
           klog_recent(ctx, ev);
}

/* A counted Xid event with where it happened, resolved once. */
struct xev {
    size_t i;    /* position in driver.events: the log's order */
    int32_t gpu; /* snapshot GPU position, or -1 */
    const char *pci;
    int32_t xid;
};

static int cmp_xev(const void *a, const void *b)
{
    const struct xev *x = a, *y = b;
    int c;

    if (x->gpu != y->gpu)
        return x->gpu < y->gpu ? -1 : 1;
    if (x->gpu < 0 && (c = strcmp(x->pci ? x->pci : "", y->pci ? y->pci : "")) != 0)
        return c;
    if (x->xid != y->xid)
        return x->xid < y->xid ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static bool same_gpu(const struct xev *a, const struct xev *b)
{
    return a->gpu == b->gpu &&
           (a->gpu >= 0 || strcmp(a->pci ? a->pci : "", b->pci ? b->pci : "") == 0);
}

/* The events of one GPU and code, in log order, and what the finding needs around them. */
struct xgroup {
    const struct rule_ctx *ctx;
    const struct xev *evs; /* this group */
    size_t n;
    const struct xev *all; /* every counted event, sorted: the GPU's other codes */
    size_t n_all;
    const struct facts_gpu *v; /* NULL when the snapshot has no such GPU */
    const struct xid_info *x;  /* NULL when the catalogue lacks the code */
    int32_t code;
};

static const struct klog_event *gev(const struct xgroup *g, size_t k)
{
    return &g->ctx->facts->snap->driver.events[g->evs[k].i];
}

/* How many counted events of code the group's GPU has. */
static size_t gpu_code_count(const struct xgroup *g, int32_t code)
{
    size_t n = 0;

    for (size_t k = 0; k < g->n_all; k++) {
        if (g->all[k].xid == code && same_gpu(&g->all[k], &g->evs[0]))
            n++;
    }
    return n;
}

/* ---- fix lines ---- */

/* why: N_() text, translated in the people copy. */
static void fix_reset(struct finding *f, const struct xgroup *g, const char *why)
{
    if (g->v)
        fix_gpu_reset(g->ctx, f, g->v->g, why);
    else if (!fix_reset_blocked(g->ctx, f, NULL, gev(g, g->n - 1)->pci))
        finding_fix_take(f, TWICE("# %s: find the index of the GPU at that PCI address "
                                  "(nvidia-smi --query-gpu=index,pci.bus_id --format=csv), then: "
                                  "sudo nvidia-smi -r -i INDEX",
                                  (why), (_(why))));
}

static void fix_reboot(struct finding *f, const char *why)
{
    finding_fix_take(f, TWICE("# %s: drain the node, then sudo reboot", (why), (_(why))));
}

static void fix_bug_report(struct finding *f)
{
    finding_fix(f,
                "sudo nvidia-bug-report.sh   # if it recurs: the report NVIDIA support asks for");
}

static void fix_log(struct finding *f)
{
    finding_fix(f, "sudo dmesg -T | grep -E 'NVRM: Xid' | tail -20   # the events, in order");
}

static bool bucket(const char *b, const char *name)
{
    return b != NULL && strncmp(b, name, strlen(name)) == 0;
}

/* The fixes NVIDIA's catalogue buckets call for, for a code without a decoded message. */
static void catalogue_fixes(struct finding *f, const struct xgroup *g, enum severity sev)
{
    const struct xid_info *x = g->x;
    const struct klog_event *last = gev(g, g->n - 1);
    const char *imm = x ? x->immediate_action : NULL;
    bool app = x && x->category == XID_CAT_APPLICATION;

    if (bucket(imm, "RESTART_APP") || app) {
        if (HAS(last, KLOG_S_PID) && last->pid > 0 && app)
            finding_fix(f,
                        "# restart the job that hit it (pid %d) and check it for bugs "
                        "(compute-sanitizer finds bad memory accesses)",
                        (int)last->pid);
        else if (HAS(last, KLOG_S_PID) && last->pid > 0)
            finding_fix(f, "# restart the job that hit it (pid %d)", (int)last->pid);
        else if (app)
            finding_fix(f, "# restart the job that hit it and check it for bugs "
                           "(compute-sanitizer finds bad memory accesses)");
        else
            finding_fix(f, "# restart the job that hit it");
    }
    if (x && x->category == XID_CAT_BUS && !bucket(imm, "RESTART_BM"))
        finding_fix(f, "sudo dmesg -T | grep -iE 'AER|pcieport' | tail -20   # PCIe errors of the "
                       "link");
    if (bucket(imm, "RESET_GPU") || bucket(imm, "WORKFLOW_XID_48") ||
        (imm == NULL && sev == SEV_CRITICAL))
        fix_reset(f, g, N_("after draining its jobs: reset the GPU"));
    else if (bucket(imm, "RESTART_BM"))
        fix_reboot(f, N_("NVIDIA: restart the node"));
    else if (bucket(imm, "RESTART_VM"))
        finding_fix(f, "# NVIDIA: restart the virtual machine that uses this GPU");
    else if (bucket(imm, "CHECK_MECHANICALS"))
        finding_fix(f, "# check the GPU's auxiliary power cables and its seating");
    else if (bucket(imm, "UPDATE_SWFW"))
        finding_fix(f, "# update the driver (host and guest alike) and the GPU firmware");
    else if (bucket(imm, "WORKFLOW_NVLINK_ERR") && g->v)
        finding_fix(f, "nvidia-smi nvlink -s -i %" PRIu32 "   # the state of each link",
                    g->v->g->index);
    if (bucket(imm, "WORKFLOW_NVLINK_ERR"))
        fix_reset(f, g, N_("a GPU reset or reboot clears an NVLink error; drain its jobs first"));
    if (x && x->investigatory_action && strstr(x->investigatory_action, "CONTACT_SUPPORT"))
        fix_bug_report(f);
}

/* ---- evidence ---- */

/*
 * A text of the catalogue (a cell of data/xid.tsv's meaning, typical_cause and
 * recommended_action, of data/xid-nvlink5.tsv's effect) for people: its translation.
 * po/update-pot.sh extracts those columns from the TSVs; the English (--json) keeps the cell.
 */
static const char *text_l(const char *cell)
{
    return cell != NULL && cell[0] != '\0' ? _(cell) : cell; /* _("") is the .mo's header */
}

/* A likely-cause category's word for people; the English keeps data/xid.tsv's name. */
static const char *category_l(enum xid_category c)
{
    switch (c) {
    case XID_CAT_APPLICATION:
        return C_("Xid category", "application");
    case XID_CAT_DRIVER:
        return C_("Xid category", "driver");
    case XID_CAT_HARDWARE:
        return C_("Xid category", "hardware");
    case XID_CAT_MEMORY:
        return C_("Xid category", "memory");
    case XID_CAT_BUS:
        return C_("Xid category", "bus");
    case XID_CAT_THERMAL:
        return C_("Xid category", "thermal");
    case XID_CAT_NVLINK:
        return C_("Xid category", "nvlink");
    case XID_CAT_CONSEQUENCE:
        return C_("Xid category", "consequence");
    case XID_CAT_INFO:
        return C_("Xid category", "info");
    case XID_CAT__COUNT:
        break;
    }
    return xid_category_name(c);
}

static void catalogue_evidence(struct finding *f, const struct xid_info *x, int32_t code)
{
    if (x == NULL) {
        finding_evidence(
            f,
            "gpudoctor's catalogue does not list Xid %d (it has NVIDIA's codes 1-176): "
            "see NVIDIA's Xid catalogue",
            (int)code);
        return;
    }
    finding_evidence_take(f, TWICE("likely cause (%s): %s",
                                   (xid_category_name(x->category), x->typical_cause),
                                   (category_l(x->category), text_l(x->typical_cause))));
    finding_evidence_take(f, TWICE("action: %s", (x->action), (text_l(x->action))));
    if (x->listed_in == XID_LISTED_NVERROR)
        finding_evidence(f,
                         "Xid %d (%s) is newer than NVIDIA's Xid catalogue: the driver's "
                         "nverror.h names it",
                         (int)code, x->nverror_name);
}

/* The latest three events of the group, as the log has them. */
static void log_evidence(struct finding *f, const struct xgroup *g)
{
    struct klog_time when;

    for (size_t k = g->n > 3 ? g->n - 3 : 0; k < g->n; k++) {
        const struct klog_event *e = gev(g, k);

        klog_when(&when, g->ctx, e);
        finding_evidence_take(
            f, TWICE("kernel log %s: Xid %d%s%s%s%s",
                     (when.en, (int)e->xid, e->name ? ", " : "", e->name ? e->name : "",
                      e->message ? ": " : "", e->message ? e->message : ""),
                     (when.l, (int)e->xid, e->name ? ", " : "", e->name ? e->name : "",
                      e->message ? ": " : "", e->message ? e->message : "")));
    }
}

/* ---- Xid 154: the driver's recovery action ---- */

/* What each action asks of the operator (NVIDIA's GPU memory error management guide,
 * "Error Recovery and Response Flags"; gpu.c for when the driver chooses each). */
static const struct {
    enum severity sev;
    const char *means;
} recovery[KLOG__RA_COUNT] = {
    [KLOG_RA_NONE] = { SEV_INFO, N_("no recovery action is needed: new processes can use the "
                                    "GPU") },
    [KLOG_RA_GPU_RESET] = { SEV_CRITICAL, N_("end every process on the GPU and reset it "
                                             "(nvidia-smi -r); then it can be used again") },
    [KLOG_RA_NODE_REBOOT] = { SEV_CRITICAL, N_("the fault may have left the operating system "
                                               "inconsistent: reboot the node") },
    [KLOG_RA_DRAIN_P2P] = { SEV_WARNING,
                            N_("end the processes that use peer-to-peer traffic and disable UVM "
                               "persistence mode; the driver then names the next action "
                               "(another Xid 154)") },
    [KLOG_RA_DRAIN_AND_RESET] = { SEV_CRITICAL, N_("let the GPU's work drain (start nothing new "
                                                   "on it), then reset it") },
    [KLOG_RA_RECOVER_IMEX_DOMAIN] = { SEV_CRITICAL,
                                      N_("the driver disabled fabric memory allocation: the IMEX "
                                         "domain of this NVLink domain must be recovered before "
                                         "jobs can share memory across nodes again") },
};

static const char *recovery_words(int32_t a)
{
    return a >= 0 && a < KLOG__RA_COUNT ? klog_recovery_action_driver_names[a] : "unknown";
}

static enum severity recovery_finding(struct finding *f, const struct xgroup *g,
                                      struct text2 *title)
{
    const struct klog_event *cur = NULL;
    struct klog_time when;
    int32_t a;

    for (size_t k = g->n; k-- > 0 && cur == NULL;) {
        if (HAS(gev(g, k), KLOG_S_RECOVERY))
            cur = gev(g, k);
    }
    if (cur == NULL) {
        finding_evidence(f, "the recovery action could not be read from the message: act on the "
                            "action it names");
        fix_log(f);
        return SEV_WARNING;
    }
    a = cur->recovery_action;
    text2_add_take(title, TWICE(": now %s", (recovery_words(a)), (recovery_words(a))));
    klog_when(&when, g->ctx, cur);
    if (HAS(cur, KLOG_S_RECOVERY_PREV))
        finding_evidence_take(f, TWICE("recovery action now: %s (0x%x), %s; before: %s",
                                       (recovery_words(a), (unsigned)a, when.en,
                                        recovery_words(cur->recovery_action_prev)),
                                       (recovery_words(a), (unsigned)a, when.l,
                                        recovery_words(cur->recovery_action_prev))));
    else
        finding_evidence_take(f, TWICE("recovery action now: %s (0x%x), %s",
                                       (recovery_words(a), (unsigned)a, when.en),
                                       (recovery_words(a), (unsigned)a, when.l)));
    if (a < 0 || a >= KLOG__RA_COUNT) {
        finding_evidence(f,
                         "gpudoctor does not know recovery action 0x%x (a newer driver): read "
                         "NVML field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) or the driver's "
                         "documentation",
                         (unsigned)a);
        fix_log(f);
        return SEV_WARNING;
    }
    finding_evidence_take(f, TWICE("NVIDIA: %s", (recovery[a].means), (_(recovery[a].means))));
    switch ((enum klog_recovery_action)a) {
    case KLOG_RA_NONE:
        finding_fix(f, "# nothing to do for this GPU: the driver says it recovered");
        break;
    case KLOG_RA_GPU_RESET:
        fix_reset(f, g, N_("the driver asks for a GPU reset; end its processes first"));
        break;
    case KLOG_RA_NODE_REBOOT:
        fix_reboot(f, N_("the driver asks for a node reboot"));
        break;
    case KLOG_RA_DRAIN_P2P:
        finding_fix(f, "# end the processes on this GPU that use peer-to-peer (NVLink or PCIe "
                       "P2P) traffic and disable UVM persistence mode; the next Xid 154 says what "
                       "remains to do");
        break;
    case KLOG_RA_DRAIN_AND_RESET:
        finding_fix(f, "# drain: let the GPU's jobs finish and start no new ones on it, then:");
        fix_reset(f, g, N_("the driver asks for a reset once the GPU is drained"));
        break;
    case KLOG_RA_RECOVER_IMEX_DOMAIN:
        finding_fix(f, "# recover the IMEX domain of this GPU's NVLink domain (its IMEX daemons) "
                       "once its multi-node jobs end; see NVIDIA's IMEX guide");
        break;
    case KLOG__RA_COUNT:
        break;
    }
    fix_log(f);
    return recovery[a].sev;
}

/* ---- NVLink5 Xids 144-150: the decode sheet ---- */

/* The severity of one decoded NVLink5 event: the worse of what the driver printed and what
 * NVIDIA's sheet says for the unit and error status. */
static enum severity nvlink5_event_sev(const struct klog_event *e, const struct xid_nvlink5_rule *r)
{
    enum severity s = e->nvlink_fatal ? SEV_CRITICAL : SEV_WARNING;

    if (r == NULL)
        return s;
    if (r->fatal)
        return SEV_CRITICAL;
    if (!e->nvlink_fatal && strcmp(r->immediate_action, "IGNORE") == 0 &&
        strcmp(r->investigatory_action, "IGNORE") == 0)
        return SEV_INFO;
    return s;
}

/* The driver's word for an NVLink5 event, for people to read in a title. */
static const char *fatal_word(const struct klog_event *e)
{
    return e->nvlink_fatal ? N_("Fatal") : N_("Nonfatal");
}

static enum severity nvlink5_finding(struct finding *f, const struct xgroup *g, struct text2 *title)
{
    const struct klog_event *worst = NULL;
    const struct xid_nvlink5_rule *wr = NULL;
    enum severity sev = SEV_INFO;
    size_t decoded = 0;
    const char *which;

    for (size_t k = 0; k < g->n; k++) {
        const struct klog_event *e = gev(g, k);
        const struct xid_nvlink5_rule *r;
        enum severity s;

        if (!HAS(e, KLOG_S_NVLINK) || !HAS(e, KLOG_S_NVLINK_UNIT) || e->nvlink_unit == NULL)
            continue;
        r = xid_nvlink5_lookup(e->xid, e->nvlink_unit, e->nvlink_intrinfo, e->nvlink_error_status);
        s = nvlink5_event_sev(e, r);
        decoded++;
        if (worst == NULL || s >= sev) { /* the latest of the worst */
            worst = e;
            wr = r;
            sev = s;
        }
    }
    if (worst == NULL) {
        finding_evidence(f, "the unit and error status could not be read from the message: "
                            "decode it with NVIDIA's Xid catalogue (XID 144-150 sheet)");
        catalogue_fixes(f, g, sev_of(g->x->severity));
        fix_log(f);
        return sev_of(g->x->severity);
    }
    text2_add_take(title, TWICE(": %s %s", (worst->nvlink_unit, fatal_word(worst)),
                                (worst->nvlink_unit, _(fatal_word(worst)))));
    which = decoded > 1 ? N_("worst event") : N_("decoded");
    if (worst->nvlink_link >= 0)
        finding_evidence_take(
            f, TWICE("%s: %s %s on link %d, error status 0x%08" PRIx32 ", sub-code %" PRIu32,
                     (which, worst->nvlink_unit, fatal_word(worst), (int)worst->nvlink_link,
                      worst->nvlink_error_status, xid_nvlink5_subcode(worst->nvlink_intrinfo)),
                     (_(which), worst->nvlink_unit, _(fatal_word(worst)), (int)worst->nvlink_link,
                      worst->nvlink_error_status, xid_nvlink5_subcode(worst->nvlink_intrinfo))));
    else
        finding_evidence_take(
            f, TWICE("%s: %s %s (no single link), error status 0x%08" PRIx32 ", sub-code %" PRIu32,
                     (which, worst->nvlink_unit, fatal_word(worst), worst->nvlink_error_status,
                      xid_nvlink5_subcode(worst->nvlink_intrinfo)),
                     (_(which), worst->nvlink_unit, _(fatal_word(worst)),
                      worst->nvlink_error_status, xid_nvlink5_subcode(worst->nvlink_intrinfo))));
    if (wr == NULL) {
        finding_evidence(f,
                         "NVIDIA's decode sheet has no row for this unit and error status: "
                         "the driver's own word (%s) sets the severity",
                         worst->nvlink_fatal ? "Fatal" : "Nonfatal");
        if (worst->nvlink_fatal)
            fix_reset(f, g, N_("a fatal NVLink error: reset the GPU once its jobs are drained"));
        fix_bug_report(f);
        fix_log(f);
        return sev;
    }
    finding_evidence(f, "NVIDIA's decode (%s, %s): %s; immediate action %s, if it recurs %s%s%s",
                     wr->unit, wr->hw_sw, wr->nvidia_severity, wr->immediate_action,
                     wr->investigatory_action, wr->action2 ? ", then " : "",
                     wr->action2 ? wr->action2 : "");
    finding_evidence_take(
        f, TWICE("what else to expect (NVIDIA): %s", (wr->effect), (text_l(wr->effect))));
    if (strcmp(wr->immediate_action, "RESET_GPU") == 0 || worst->nvlink_fatal)
        fix_reset(f, g, N_("NVIDIA: reset the GPU once its jobs are drained"));
    else if (strcmp(wr->immediate_action, "XID_154_EVAL") == 0)
        finding_fix(f, "# act on the recovery action of the Xid 154 that follows (its own "
                       "finding)");
    if (strstr(wr->investigatory_action, "PEER_DEVICE"))
        finding_fix(f, "# the other end of the link may be the source: look at the peer GPU's or "
                       "switch's own errors");
    if (strstr(wr->investigatory_action, "LINK_SI") || strstr(wr->investigatory_action, "CABLES"))
        finding_fix(f, "# check the link's cables and connectors (signal integrity)");
    if (strstr(wr->investigatory_action, "SW"))
        finding_fix(f, "# NVIDIA points at software: the driver, the fabric software or the job");
    if (g->v)
        finding_fix(f, "nvidia-smi nvlink -s -i %" PRIu32 "   # the state of each link",
                    g->v->g->index);
    if (strstr(wr->investigatory_action, "CONTACT_SUPPORT") ||
        strstr(wr->investigatory_action, "REPORT"))
        fix_bug_report(f);
    fix_log(f);
    return sev;
}

/* ---- Xid 45 and other consequences: point at the cause ---- */

static enum severity consequence_finding(struct finding *f, const struct xgroup *g,
                                         char *causes_out, size_t size)
{
    int32_t causes[4];
    size_t nc = 0, len = 0;
    enum severity sev = SEV_INFO;

    causes_out[0] = '\0';
    for (size_t k = g->n; k-- > 0;) {
        const struct klog_event *e = gev(g, k);
        bool seen = false;

        if (!HAS(e, KLOG_S_CAUSED_BY))
            continue;
        for (size_t j = 0; j < nc; j++)
            seen |= causes[j] == e->caused_by_xid;
        if (!seen && nc < sizeof(causes) / sizeof(causes[0]))
            causes[nc++] = e->caused_by_xid;
    }
    for (size_t j = 0; j < nc; j++) {
        const struct xid_info *c = xid_lookup(causes[j]);
        size_t there = gpu_code_count(g, causes[j]);

        len += (size_t)snprintf(causes_out + len, len < size ? size - len : 0, "%s%d",
                                j ? ", " : "", (int)causes[j]);
        if (there > 0) {
            finding_evidence_take(
                f, TWICE("the driver names Xid %d (%s) as the cause: see that Xid's finding for "
                         "this GPU (%zu event%s)",
                         ((int)causes[j], c ? c->meaning : "not in the catalogue", there,
                          there == 1 ? "" : "s"),
                         ((int)causes[j], c ? text_l(c->meaning) : _("not in the catalogue"), there,
                          there == 1 ? "" : "s")));
        } else {
            /* the cause left no line of its own in what was read: this is its only trace */
            enum severity cs = c ? sev_of(c->severity) : SEV_WARNING;

            finding_evidence_take(
                f, TWICE("the driver names Xid %d (%s) as the cause, and the log gpudoctor read "
                         "has no line of it: this finding stands for it",
                         ((int)causes[j], c ? c->meaning : "not in the catalogue"),
                         ((int)causes[j], c ? text_l(c->meaning) : _("not in the catalogue"))));
            if (c)
                finding_evidence_take(f, TWICE("Xid %d: %s", ((int)causes[j], c->action),
                                               ((int)causes[j], text_l(c->action))));
            sev = worse(sev, cs);
        }
    }
    if (nc > 0)
        return sev;
    /* no cause in the line (drivers before 570.124): the GPU's other Xids, or alone */
    {
        char others[96] = "";
        size_t on = 0, ol = 0;

        for (size_t k = 0; k < g->n_all && on < 6; k++) {
            const struct xev *o = &g->all[k];

            if (!same_gpu(o, &g->evs[0]) || o->xid == g->code ||
                (k > 0 && g->all[k - 1].xid == o->xid && same_gpu(&g->all[k - 1], o)))
                continue;
            ol += (size_t)snprintf(others + ol, ol < sizeof(others) ? sizeof(others) - ol : 0,
                                   "%s%d", on ? ", " : "", (int)o->xid);
            on++;
        }
        if (on > 0) {
            finding_evidence(f,
                             "the line names no cause (drivers before 570.124 do not): this GPU "
                             "also has Xid %s; the earlier error is the one to act on",
                             others);
            return SEV_INFO;
        }
    }
    finding_evidence(f, "no other Xid on this GPU: NVIDIA's catalogue says that alone, on an "
                        "NVSwitch system, it follows an unexpected Fabric Manager shutdown");
    finding_fix(f, "# on an NVSwitch system: restart Fabric Manager (the nvidia-fabricmanager "
                   "service) once the GPU's jobs have ended");
    return SEV_WARNING;
}

/* ---- the past: the same Xid before earlier boots or resets (the state file, docs/state.md) ----
 */

/*
 * The escalation policy (past_escalate): a fault the GPU keeps after a reboot or a GPU reset
 * is the GPU's. An application error may recur with the application, and an informational code
 * or a consequence says nothing of the GPU by itself: said, not escalated. Any other code
 * becomes at least a warning after one reboot or reset, and critical after two, or after one when
 * the code is critical already, with "inspect or replace the GPU". Returns the severity.
 */
static enum severity recurring(struct finding *f, const struct xgroup *g, enum severity sev,
                               struct text2 *suffix)
{
    const struct gpu *gpu = g->v ? g->v->g : NULL;
    struct text2 words = { 0 };
    struct past p;
    char what[24];

    if (gpu == NULL || !past_find(g->ctx, gpu, STATE_EV_XID, g->code, &p))
        return sev;
    snprintf(what, sizeof(what), "Xid %d", (int)g->code);
    past_said(f, g->ctx, what, &p);
    if (g->x && (g->x->category == XID_CAT_APPLICATION || g->x->category == XID_CAT_INFO ||
                 g->x->category == XID_CAT_CONSEQUENCE)) {
        if (g->x->category == XID_CAT_APPLICATION)
            finding_evidence(f, "an application error that recurs across reboots follows the "
                                "application or its input, not the GPU");
        past_words(&p, &words);
        text2_add_take(suffix, TWICE(", again after %s", (words.en), (words.l)));
        text2_free(&words);
        return sev;
    }
    if (p.boots + p.resets >= 2 || sev == SEV_CRITICAL) {
        sev = past_escalate(f, gpu, &p, sev, suffix);
        fix_bug_report(f);
        return sev;
    }
    return past_escalate(f, gpu, &p, sev, suffix);
}

/* ---- one finding ---- */

static void xid_finding(const struct rule_ctx *ctx, struct findings *out, const struct xgroup *g)
{
    const struct klog_event *first = gev(g, 0), *last = gev(g, g->n - 1);
    const struct xid_info *x = g->x;
    char times[32] = "", times_l[64] = "", causes[64] = "";
    struct text2 suffix = { 0 };
    struct klog_time when;
    enum severity sev = x ? sev_of(x->severity) : SEV_WARNING;
    struct finding *f;

    f = finding_new(ctx, out, g->v ? (int32_t)g->v->g->index : -1, -1);
    if (g->v == NULL)
        finding_object(f, "%s", first->pci ? first->pci : "unknown GPU");
    catalogue_evidence(f, x, g->code);
    if (g->code == XID_RECOVERY_ACTION) {
        sev = recovery_finding(f, g, &suffix);
    } else if (g->code >= XID_NVLINK5_FIRST && g->code <= XID_NVLINK5_LAST && x) {
        sev = nvlink5_finding(f, g, &suffix);
    } else if (g->code == XID_PREEMPTIVE) {
        sev = consequence_finding(f, g, causes, sizeof(causes));
        if (causes[0])
            text2_add_take(&suffix, TWICE(", caused by Xid %s", (causes), (causes)));
        fix_log(f);
    } else {
        if ((g->code == XID_CONTAINED || g->code == XID_UNCONTAINED) &&
            HAS(last, KLOG_S_CONTAINMENT)) {
            const char *rst = last->reset_required ? N_("yes") : N_("no");
            const char *drst = last->drain_reset_required ? N_("yes") : N_("no");

            finding_evidence_take(f, TWICE("the driver says: GPU reset required: %s; drain and "
                                           "reset required: %s",
                                           (rst, drst), (_(rst), _(drst))));
            if (last->drain_reset_required)
                finding_fix(f, "# drain: let the GPU's jobs finish and start no new ones on it, "
                               "then reset it");
            if (last->reset_required || last->drain_reset_required) {
                sev = SEV_CRITICAL;
                if (g->code == XID_CONTAINED)
                    fix_reset(f, g, N_("the driver asks for a GPU reset"));
            }
        }
        catalogue_fixes(f, g, sev);
        fix_log(f);
    }
    sev = recurring(f, g, sev, &suffix);
    f->severity = sev;
    klog_when(&when, ctx, last);
    if (g->n > 1) {
        snprintf(times, sizeof(times), " %zu times", g->n);
        snprintf(times_l, sizeof(times_l), _(" %zu times"), g->n);
    }
    if (g->v)
        finding_title_take(
            f,
            TWICE("GPU %" PRIu32 ": Xid %d (%s)%s%s, last %s",
                  (g->v->g->index, (int)g->code, x ? x->meaning : "not in the catalogue", times,
                   suffix.en ? suffix.en : "", when.en),
                  (g->v->g->index, (int)g->code, x ? text_l(x->meaning) : _("not in the catalogue"),
                   times_l, suffix.l ? suffix.l : "", when.l)));
    else
        finding_title_take(f, TWICE("GPU at PCI %s: Xid %d (%s)%s%s, last %s",
                                    (first->pci ? first->pci : "?", (int)g->code,
                                     x ? x->meaning : "not in the catalogue", times,
                                     suffix.en ? suffix.en : "", when.en),
                                    (first->pci ? first->pci : "?", (int)g->code,
                                     x ? text_l(x->meaning) : _("not in the catalogue"), times_l,
                                     suffix.l ? suffix.l : "", when.l)));
    text2_free(&suffix);
    log_evidence(f, g);
    if (xid_wedges(g->code)) {
        finding_explains(f, "health.nvml-hung");
        finding_explains(f, "health.nvml-failed");
        finding_explains(f, "health.driver-hung-task");
        finding_explains(f, "health.gpu-lost");
        finding_explains(f, "health.gpu-inaccessible");
    }
    f->impact = (sev == SEV_CRITICAL ? 1.0 : sev == SEV_WARNING ? 0.3 : 0.1) + 0.01 * (double)g->n;
}

static void check_xid(const struct rule_ctx *ctx, struct findings *out)
{
    const struct driver_info *d = &ctx->facts->snap->driver;
    struct xev *evs = xcalloc(d->n_events ? d->n_events : 1, sizeof(*evs));
    size_t n = 0;

    /* Where each event happened is resolved once; sorting groups them by GPU and code. */
    for (size_t i = 0; i < d->n_events; i++) {
        const struct facts_gpu *v;

        if (!counts(ctx, &d->events[i]))
            continue;
        v = event_gpu(ctx, &d->events[i]);
        evs[n].i = i;
        evs[n].gpu = v ? (int32_t)(v - ctx->facts->gpus) : -1;
        evs[n].pci = d->events[i].pci;
        evs[n].xid = d->events[i].xid;
        n++;
    }
    if (n > 1)
        qsort(evs, n, sizeof(*evs), cmp_xev);
    for (size_t start = 0, end; start < n; start = end) {
        struct xgroup g;

        for (end = start + 1;
             end < n && same_gpu(&evs[start], &evs[end]) && evs[start].xid == evs[end].xid; end++)
            ;
        g.ctx = ctx;
        g.evs = &evs[start];
        g.n = end - start;
        g.all = evs;
        g.n_all = n;
        g.v = evs[start].gpu >= 0 ? &ctx->facts->gpus[evs[start].gpu] : NULL;
        g.code = evs[start].xid;
        g.x = xid_lookup(g.code);
        xid_finding(ctx, out, &g);
    }
    free(evs);
    if (!(d->valid & (UINT64_C(1) << DRIVER_S_KLOG)) && d->n_events == 0)
        need_collector(ctx, out, COLLECTOR_KLOG);
}

const struct rule rule_health_xid = {
    .id = "health.xid",
    .severity = SEV_CRITICAL,
    .category = CAT_HEALTH,
    .title = N_("Xid errors in the kernel log"),
    .explanation = N_(
        "The NVIDIA driver reports GPU errors to the kernel log as 'NVRM: Xid (PCI:...): N, ...'. "
        "Each code has a meaning and a most likely cause: the application (13 graphics engine "
        "exception, 31 memory page fault: a bug or a killed job, the GPU is fine), the driver or "
        "firmware (119/120 GSP timeouts and errors), GPU memory (48 double-bit ECC, 94/95 "
        "contained and uncontained errors, 63/64 row remapping), the bus (32, 79), NVLink (74, "
        "and 144-150 on Blackwell), or a consequence of an earlier error (45). The severity is "
        "gpudoctor's policy for the code (application errors a warning, memory, bus, NVLink and "
        "GSP faults critical, informational codes information), made precise by what the driver "
        "writes inside the message: the recovery action of Xid 154 (None, GPU Reset Required, "
        "Node Reboot Required, Drain P2P, Drain and Reset, Recover IMEX Domain), the NVLink5 unit "
        "and error status looked up in NVIDIA's decode sheet, whether a 94/95 requires a reset, "
        "and the earlier Xid a 45 names as its cause."),
    .detection =
        N_("kernel-log Xid events within klog_max_age_h, grouped by GPU (PCI address or "
           "UUID) and code, looked up in the Xid catalogue (data/xid.tsv: NVIDIA's Xid "
           "catalogue and nverror.h, codes 1-176) and, for 144-150, NVIDIA's NVLink5 decode "
           "sheet (data/xid-nvlink5.tsv); the decoded fields of the events (recovery_action, "
           "nvlink_*, reset_required, caused_by_xid) refine the severity. Xid 79 is reported "
           "by health.gpu-lost. The state file (docs/state.md) adds the past: the same code "
           "on the same GPU (by serial, else UUID) in earlier boots (boot ids) escalates "
           "a fault of the GPU to a warning after one reboot and to critical after two, or "
           "after one when the code is critical: inspect or replace the GPU. Application "
           "errors, informational codes and consequences are only said to recur."),
    .fix = N_("Follow the action for the code (in the evidence): restart and debug the application "
              "for application errors; drain and reset the GPU (nvidia-smi -r -i N) or reboot when "
              "the driver or NVIDIA's catalogue asks for it; act on the cause a consequence names; "
              "collect nvidia-bug-report.sh and contact support when errors recur."),
    .thresholds = THRESHOLDS(TH_KLOG_MAX_AGE_H),
    .explains = EXPLAINS(
        { "health.nvml-hung", LINK_ANY, XID_WEDGES_WHEN,
          N_("the memory or GSP fault wedged the driver, so NVML calls hang"), LINK_FIX_OWN },
        { "health.nvml-failed", LINK_ANY, XID_WEDGES_WHEN,
          N_("the fault left the driver unable to start NVML or count the GPUs"), LINK_FIX_OWN },
        { "health.driver-hung-task", LINK_ANY, XID_WEDGES_WHEN,
          N_("tasks waiting on the faulted GPU hang in the driver"), LINK_FIX_OWN },
        { "health.gpu-lost", LINK_SAME_GPU, XID_WEDGES_WHEN,
          N_("the GPU fell off the bus after the fault"), LINK_FIX_OWN },
        { "health.gpu-inaccessible", LINK_SAME_GPU, XID_WEDGES_WHEN,
          N_("the faulted GPU answers no query"), LINK_FIX_OWN }),
    .check = check_xid,
};
