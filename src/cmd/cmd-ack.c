/*
 * gpudoctor ack: acknowledge a finding about a GPU (a known fault waiting for its repair), so
 * that check, watch, serve and slurm-check stop counting it until it expires or the GPU has a
 * new event; --list and --clear. The acknowledgements live in the state file (docs/state.md);
 * rules/ack.c applies them.
 */
#include "cmd/cmd.h"
#include "rules/rules.h"
#include "state/state.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOTE_MAX 200

enum { OPT_GPU = OPT__COMMON_END, OPT_NOTE, OPT_EXPIRES, OPT_LIST, OPT_CLEAR, OPT_ALL };

static const struct cmd_option options[] = {
    { "gpu", OPT_GPU, required_argument, "GPU",
      N_("the GPU: its UUID (GPU-...), or its index as NVML numbers it now (as the last recorded "
         "run did, when NVML cannot be read)") },
    { "note", OPT_NOTE, required_argument, "TEXT", N_("why: shown beside the finding") },
    { "expires", OPT_EXPIRES, required_argument, "DUR",
      N_("end the acknowledgement after DUR (7d, 12h); default: until a new event") },
    { "list", OPT_LIST, no_argument, NULL, N_("list the acknowledgements") },
    { "clear", OPT_CLEAR, no_argument, NULL,
      N_("remove the acknowledgement of RULE on --gpu, or every one with --all") },
    { "all", OPT_ALL, no_argument, NULL, N_("with --clear: all of them") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    const char *gpu, *note;
    int64_t expires_ms; /* 0: none */
    bool list, clear, all;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;

    switch (key) {
    case OPT_GPU:
        o->gpu = arg;
        break;
    case OPT_NOTE:
        if (strlen(arg) > NOTE_MAX) {
            cmd_error("ack", "--note: longer than %d bytes", NOTE_MAX);
            return EXIT_USAGE;
        }
        o->note = arg;
        break;
    case OPT_EXPIRES:
        if (!time_parse_duration_ms(arg, &o->expires_ms) || o->expires_ms <= 0) {
            cmd_error("ack", "--expires: '%s' is not a duration (7d, 12h, 30m)", arg);
            return EXIT_USAGE;
        }
        break;
    case OPT_LIST:
        o->list = true;
        break;
    case OPT_CLEAR:
        o->clear = true;
        break;
    case OPT_ALL:
        o->all = true;
        break;
    }
    return 0;
}

/* What an update needs. */
struct ack_job {
    const struct opts *o;
    const char *rule;
    int64_t now_ms;
    char *boot_id;
    int64_t uptime_us;
    size_t cleared;
    char *uuid;       /* the GPU resolved (resolve_gpu) */
    int32_t severity; /* the most severe finding it covers (enum severity) */
    /* The GPU's lifetime uncorrectable ECC errors and remapped rows now, -1 when NVML did not
     * say: a later rise is a new event, so they are the ones the finding was acknowledged at. */
    int64_t ecc_now, remap_now;
};

static bool is_uuid(const char *arg)
{
    return strncmp(arg, "GPU-", 4) == 0 || strncmp(arg, "MIG-", 4) == 0;
}

/* The GPU --gpu names, in the state: by UUID, else by the index it was last seen at. */
static const struct state_gpu *find_gpu(const struct state_info *st, const char *arg)
{
    const struct state_gpu *best = NULL;
    uint32_t idx;

    if (is_uuid(arg))
        return state_find_gpu(st, NULL, arg);
    if (!str_to_u32(arg, 10, &idx))
        return NULL;
    for (size_t i = 0; i < st->n_gpus; i++) {
        if (st->gpus[i].index == (int32_t)idx &&
            (best == NULL || st->gpus[i].last_seen_ms > best->last_seen_ms))
            best = &st->gpus[i];
    }
    return best;
}

/* The GPU of the live snapshot s (NULL: none) that arg names: by UUID, or by NVML index. */
static const struct gpu *live_gpu(const struct snapshot *s, const char *arg)
{
    uint32_t idx;
    bool by_uuid = is_uuid(arg);

    if (s == NULL || (!by_uuid && !str_to_u32(arg, 10, &idx)))
        return NULL;
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        if (by_uuid ? gpu_valid(g, GPU_S_UUID) && g->uuid && strcmp(g->uuid, arg) == 0
                    : g->index == idx && gpu_valid(g, GPU_S_UUID) && g->uuid)
            return g;
    }
    return NULL;
}

/*
 * The UUID of the GPU --gpu names: what NVML shows now (s, a live collection), else what the
 * state file recorded, said on stderr, for an index may have moved since (a GPU fallen off the
 * bus renumbers the rest). NULL, said why, when neither knows it: an acknowledgement of a GPU
 * that is not here could never match.
 */
static char *resolve_gpu(const struct snapshot *s, const char *arg)
{
    const struct gpu *g = live_gpu(s, arg);
    const struct state_gpu *sg;

    if (g != NULL)
        return xstrdup(g->uuid);
    sg = s ? find_gpu(&s->state, arg) : NULL;
    if (sg != NULL) {
        if (!is_uuid(arg))
            cmd_error("ack",
                      "note: NVML shows no GPU %s now: GPU %s is %s as the state file last saw it",
                      arg, arg, sg->uuid);
        else
            cmd_error("ack", "note: NVML shows no GPU %s now; the state file knows it", arg);
        return xstrdup(sg->uuid);
    }
    if (is_uuid(arg))
        cmd_error("ack",
                  "no GPU %s: NVML does not show it, nor does the state file ('gpudoctor check' "
                  "shows each GPU's UUID)",
                  arg);
    else
        cmd_error("ack",
                  "no GPU %s: NVML does not show it, nor does the state file: run 'gpudoctor "
                  "check' first, or give the GPU's UUID",
                  arg);
    return NULL;
}

/*
 * The severity to acknowledge rule on the GPU uuid at: that of its finding now (the most severe,
 * if several), in the live findings fs; without one, the rule's own, said on stderr (a more
 * severe finding will not be covered). -1, said why, when the rule's findings now are about the
 * node, not a GPU: an acknowledgement per GPU could never match them.
 */
static int32_t severity_now(const struct findings *fs, const struct rule *rule, const char *uuid,
                            const char *arg)
{
    const struct finding *node = NULL;
    int32_t sev = -1;

    for (size_t i = 0; i < fs->n; i++) {
        const struct finding *x = &fs->items[i];

        if (x->rule != rule)
            continue;
        if (x->subject.gpu_uuid == NULL)
            node = x;
        else if (strcmp(x->subject.gpu_uuid, uuid) == 0 && (int32_t)x->severity > sev)
            sev = (int32_t)x->severity;
    }
    if (sev >= 0)
        return sev;
    if (node != NULL) {
        cmd_error("ack",
                  "%s is about the node, not a GPU (now: %s): an acknowledgement is of a GPU's "
                  "finding",
                  rule->id, finding_title_text(node));
        return -1;
    }
    cmd_error("ack",
              "note: no %s finding about GPU %s now: acknowledged at the rule's severity, %s; a "
              "more severe one will show",
              rule->id, arg, severity_names[rule->severity]);
    return (int32_t)rule->severity;
}

static int64_t last_counter(const struct state_gpu *g, enum state_event_kind kind)
{
    for (size_t i = g ? g->n_events : 0; i-- > 0;) {
        if (g->events[i].kind == (int32_t)kind)
            return (int64_t)g->events[i].value;
    }
    return g && g->n_events ? 0 : -1; /* seen, never risen: 0; never seen: unknown */
}

static char *who(void)
{
    const char *sudo = getenv("SUDO_USER");
    const struct passwd *pw;

    if (sudo && *sudo)
        return str_sanitized(sudo);
    pw = getpwuid(getuid());
    return pw ? str_sanitized(pw->pw_name) : xasprintf("uid %u", (unsigned)getuid());
}

static int add_fn(struct state_info *st, void *arg, char **cause)
{
    struct ack_job *j = arg;
    const struct state_gpu *g = state_find_gpu(st, NULL, j->uuid);
    struct state_ack *a;
    size_t k = 0;

    (void)cause;
    for (size_t i = 0; i < st->n_acks; i++) { /* a new one replaces the old */
        if (strcmp(st->acks[i].rule, j->rule) == 0 && strcmp(st->acks[i].gpu_uuid, j->uuid) == 0)
            state_ack_free(&st->acks[i]);
        else
            st->acks[k++] = st->acks[i];
    }
    st->n_acks = k;
    if (st->n_acks == STATE_MAX_ACKS) {
        state_ack_free(&st->acks[0]);
        memmove(st->acks, st->acks + 1, (st->n_acks - 1) * sizeof(*st->acks));
        st->n_acks--;
    }
    st->acks = xreallocarray(st->acks, st->n_acks + 1, sizeof(*st->acks));
    a = &st->acks[st->n_acks++];
    memset(a, 0, sizeof(*a));
    a->rule = xstrdup(j->rule);
    a->gpu_uuid = xstrdup(j->uuid);
    a->note = j->o->note ? str_sanitized(j->o->note) : NULL;
    a->by = who();
    a->time_ms = j->now_ms;
    a->expires_ms = j->o->expires_ms ? j->now_ms + j->o->expires_ms : 0;
    a->boot_id = j->boot_id ? xstrdup(j->boot_id) : NULL;
    a->uptime_us = j->uptime_us;
    a->ecc_uncorrected = j->ecc_now >= 0 ? j->ecc_now : last_counter(g, STATE_EV_ECC);
    a->remapped_rows = j->remap_now >= 0 ? j->remap_now : last_counter(g, STATE_EV_REMAP);
    a->severity = j->severity;
    return 0;
}

static int clear_fn(struct state_info *st, void *arg, char **cause)
{
    struct ack_job *j = arg;
    size_t k = 0;

    (void)cause;
    for (size_t i = 0; i < st->n_acks; i++) {
        if (j->o->all || (strcmp(st->acks[i].rule, j->rule) == 0 &&
                          strcmp(st->acks[i].gpu_uuid, j->uuid) == 0)) {
            state_ack_free(&st->acks[i]);
            j->cleared++;
        } else {
            st->acks[k++] = st->acks[i];
        }
    }
    st->n_acks = k;
    return j->cleared ? 0 : 1;
}

/*
 * Judges this machine now, as check would (no sampling window unless --window), to learn which
 * GPU --gpu names (resolve_gpu) and, to acknowledge, the severity of the rule's finding about it
 * (severity_now). The state directory is tried first: one that cannot be used fails the same way
 * whatever the machine shows. 0, or the status to end with, said why.
 */
static int judge_now(struct cmd_front *f, struct ack_job *j)
{
    struct findings fs = { 0 };
    struct snapshot *s;
    bool live;
    char *cause = NULL;
    int dfd = state_dir_open(f->state_dir, false, &cause);

    if (dfd < 0 && errno != ENOENT) {
        cmd_error("ack", "%s", cause);
        free(cause);
        return EXIT_UNKNOWN;
    }
    if (dfd >= 0)
        close(dfd);
    free(cause);
    f->no_progress = true;
    s = cmd_front_snapshot(f); /* NULL: NVML and the rest unknown; the state file still tells */
    live = s != NULL;
    if (s == NULL) {
        s = xcalloc(1, sizeof(*s));
        state_load(f->state_dir, &s->state);
    }
    j->uuid = resolve_gpu(s, j->o->gpu);
    j->ecc_now = j->remap_now = -1;
    if (j->uuid != NULL && !j->o->clear) {
        const struct gpu *g = live_gpu(s, j->uuid);

        if (g != NULL && gpu_valid(g, GPU_S_ECC_AGG_UNCORR))
            j->ecc_now = (int64_t)g->ecc_aggregate_uncorrected;
        if (g != NULL && gpu_valid(g, GPU_S_REMAP_UNCORR))
            j->remap_now = (int64_t)g->remapped_rows_uncorrectable;
        rules_run(s, NULL, &f->config.rules, &fs);
        j->severity = severity_now(&fs, rule_find(j->rule), j->uuid, j->o->gpu);
    }
    /*
     * What an acknowledgement that will be written saw is recorded first, as check records it: a
     * fault already there (a memory repair pending, an Xid) is then one it was given after, not
     * a new one.
     */
    if (live && j->uuid != NULL && !j->o->clear && j->severity >= 0)
        cmd_front_record_state(f, s);
    findings_free(&fs);
    snapshot_free(s);
    return j->uuid == NULL || (!j->o->clear && j->severity < 0) ? EXIT_USAGE : 0;
}

/* This boot's id and the time since it, read live (an acknowledgement is given here, now). */
static void boot_now(char **boot_id, int64_t *uptime_us)
{
    char buf[128];
    double up;

    *boot_id = NULL;
    *uptime_us = -1;
    if (file_read_at(AT_FDCWD, "/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) > 0)
        *boot_id = xstrdup(str_ltrim(str_rtrim(buf)));
    if (file_read_at(AT_FDCWD, "/proc/uptime", buf, sizeof(buf)) > 0 &&
        sscanf(buf, "%lf", &up) == 1)
        *uptime_us = (int64_t)(up * 1e6);
}

static int list(const char *dir, int64_t now_ms)
{
    struct state_info st;

    state_load(dir, &st);
    if (st.status == STATE_CORRUPT || st.status == STATE_UNREADABLE) {
        /* Not "none": whatever the file holds could not be read, and the operator must know. */
        cmd_error("ack", "%s", st.note);
        state_info_free(&st);
        return EXIT_UNKNOWN;
    }
    if (st.n_acks == 0)
        printf(_("no acknowledgements (%s)\n"), st.path);
    for (size_t i = 0; i < st.n_acks; i++) {
        const struct state_ack *a = &st.acks[i];
        char when[40], until[40];

        snprintf(until, sizeof(until), "%s", _("never"));
        time_format_iso(a->time_ms, when, sizeof(when));
        if (a->expires_ms)
            time_format_iso(a->expires_ms, until, sizeof(until));
        printf(_("%s %s  by %s at %s, expires %s%s%s%s%s\n"), a->rule, a->gpu_uuid,
               a->by ? a->by : "?", when, until,
               a->expires_ms && a->expires_ms <= now_ms ? _(" (expired)") : "",
               a->note ? ": \"" : "", a->note ? a->note : "", a->note ? "\"" : "");
    }
    state_info_free(&st);
    return cmd_finish_stdout("ack") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
}

static int exec(int argc, char **argv)
{
    struct opts o = { 0 };
    struct cmd_front f;
    struct ack_job j = { 0 };
    char *cause = NULL, *kept = NULL;
    int rc;

    rc = cmd_front_parse(&f, &cmd_ack, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    rc = EXIT_USAGE;
    if (f.state_dir == NULL) {
        cmd_error("ack", "the state is off (--no-state, or state_dir = off): nowhere to keep "
                         "acknowledgements");
        goto out;
    }
    j.o = &o;
    j.now_ms = time_real_ms();
    if (o.list) {
        if (o.clear || f.n_operands || o.gpu) {
            cmd_error("ack", "--list takes nothing else");
            goto out;
        }
        rc = list(f.state_dir, j.now_ms);
        goto out;
    }
    if (!(o.clear && o.all)) {
        if (f.n_operands != 1 || o.gpu == NULL) {
            cmd_error("ack", "give a finding's RULE and --gpu (or --list, --clear --all)");
            rc = cmd_usage_error(&cmd_ack);
            goto out;
        }
        if (rule_find(f.operands[0]) == NULL) {
            cmd_error("ack", "no rule '%s' ('gpudoctor explain --list' lists them)", f.operands[0]);
            goto out;
        }
        j.rule = f.operands[0];
    } else if (f.n_operands || o.gpu) {
        cmd_error("ack", "--clear --all takes no RULE nor --gpu");
        goto out;
    }
    if (o.clear && (o.note || o.expires_ms)) {
        cmd_error("ack", "--clear takes no --note nor --expires");
        goto out;
    }
    if (o.gpu != NULL) {
        rc = judge_now(&f, &j);
        if (rc != 0)
            goto out;
    }
    if (o.clear) {
        rc = state_update(f.state_dir, clear_fn, &j, &kept, &cause) == 0 ? EXIT_HEALTHY
                                                                         : EXIT_UNKNOWN;
        if (rc == EXIT_HEALTHY && j.cleared == 0) {
            cmd_error("ack", "no such acknowledgement");
            rc = EXIT_WARNING;
        } else if (rc == EXIT_HEALTHY) {
            printf(_("cleared %zu acknowledgement%s\n"), j.cleared, j.cleared == 1 ? "" : "s");
        }
    } else {
        boot_now(&j.boot_id, &j.uptime_us);
        rc =
            state_update(f.state_dir, add_fn, &j, &kept, &cause) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
        if (rc == EXIT_HEALTHY)
            printf(o.expires_ms ? _("acknowledged %s %s on %s (with an expiry)\n")
                                : _("acknowledged %s %s on %s until a new event\n"),
                   severity_names[j.severity], j.rule, j.uuid);
    }
    if (kept) { /* the old file set aside: what it held is not lost, and the operator knows */
        cmd_error("ack", "note: %s", kept);
        free(kept);
    }
    if (cause) {
        cmd_error("ack", "%s", cause);
        free(cause);
    }
    if (rc == EXIT_HEALTHY && cmd_finish_stdout("ack") != 0)
        rc = EXIT_UNKNOWN;
out:
    free(j.boot_id);
    free(j.uuid);
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_ack = {
    .name = "ack",
    .synopsis = "RULE --gpu GPU [--note TEXT] [--expires DUR]\n--list\n--clear RULE --gpu GPU\n"
                "--clear --all",
    .summary = N_("acknowledge a GPU's finding until it expires or a new event"),
    .about = N_("Acknowledge a finding (a rule id, as 'check' shows it) about one GPU, at the\n"
                "severity it has now (this machine is judged as 'check --window 0' would): check,\n"
                "watch, serve and slurm-check show it apart and stop counting it, until it\n"
                "expires, the GPU has a new event (a new Xid, more ECC errors, more remapped\n"
                "rows) or the finding becomes more severe. Kept in the state file\n"
                "(docs/state.md).\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_CONFIG | CMD_G_STATE,
    .window_ms = 0,
    .max_operands = 1,
    .epilogue =
        N_("Exit status: 0 done, 1 nothing to clear, 3 the state file could not be written,\n"
           "64 usage error (an unknown rule, a GPU neither NVML nor the state file knows, a\n"
           "rule about the node rather than a GPU).\n"),
    .exec = exec,
};
