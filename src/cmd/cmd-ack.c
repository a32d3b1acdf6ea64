/*
 * gpudoctor ack: acknowledge a finding about a GPU (a known fault waiting for its repair), so
 * that check, watch, serve and slurm-check stop counting it until it expires or the GPU has a
 * new event; --list and --clear. The acknowledgements live in the state file (docs/state.md);
 * rules/ack.c applies them.
 */
#include "cmd/cmd.h"
#include "state/state.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

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
      N_("the GPU: its UUID (GPU-...), or its index as the last check saw it") },
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
    char *uuid;       /* the GPU resolved */
    bool gpu_unknown; /* --gpu named an index the state has never seen: a usage error */
};

/* The GPU --gpu names, in the state: by UUID, else by the index it was last seen at. */
static const struct state_gpu *find_gpu(const struct state_info *st, const char *arg)
{
    const struct state_gpu *best = NULL;
    uint32_t idx;

    if (strncmp(arg, "GPU-", 4) == 0 || strncmp(arg, "MIG-", 4) == 0)
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
    const struct state_gpu *g = find_gpu(st, j->o->gpu);
    struct state_ack *a;
    size_t k = 0;

    if (g == NULL && strncmp(j->o->gpu, "GPU-", 4) != 0) {
        j->gpu_unknown = true;
        *cause = xasprintf("no GPU %s in the state file: run 'gpudoctor check' first, or give "
                           "the GPU's UUID",
                           j->o->gpu);
        return -1;
    }
    j->uuid = xstrdup(g ? g->uuid : j->o->gpu);
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
    a->ecc_uncorrected = last_counter(g, STATE_EV_ECC);
    a->remapped_rows = last_counter(g, STATE_EV_REMAP);
    return 0;
}

static int clear_fn(struct state_info *st, void *arg, char **cause)
{
    struct ack_job *j = arg;
    const struct state_gpu *g = j->o->all ? NULL : find_gpu(st, j->o->gpu);
    const char *uuid = g ? g->uuid : j->o->gpu;
    size_t k = 0;

    (void)cause;
    for (size_t i = 0; i < st->n_acks; i++) {
        if (j->o->all ||
            (strcmp(st->acks[i].rule, j->rule) == 0 && strcmp(st->acks[i].gpu_uuid, uuid) == 0)) {
            state_ack_free(&st->acks[i]);
            j->cleared++;
        } else {
            st->acks[k++] = st->acks[i];
        }
    }
    st->n_acks = k;
    return j->cleared ? 0 : 1;
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
        if (j.gpu_unknown)
            rc = EXIT_USAGE;
        if (rc == EXIT_HEALTHY)
            printf(o.expires_ms ? _("acknowledged %s on %s (with an expiry)\n")
                                : _("acknowledged %s on %s until a new event\n"),
                   j.rule, j.uuid);
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
    .about = N_("Acknowledge a finding (a rule id, as 'check' shows it) about one GPU: check,\n"
                "watch, serve and slurm-check show it apart and stop counting it, until it\n"
                "expires or the GPU has a new event (a new Xid, more ECC errors, more remapped\n"
                "rows). Kept in the state file (docs/state.md).\n"),
    .options = options,
    .groups = CMD_G_STATE,
    .max_operands = 1,
    .epilogue =
        N_("Exit status: 0 done, 1 nothing to clear, 3 the state file could not be written,\n"
           "64 usage error (an unknown rule, or a GPU index no check has seen).\n"),
    .exec = exec,
};
