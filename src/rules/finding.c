/* Making findings and skips, and the small descriptions of processes that titles need. */
#include "nvml/nvml-abi.h"
#include "rules/rule-impl.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t gpu_dev_minor(const struct gpu *g)
{
    return gpu_valid(g, GPU_S_MINOR) ? g->minor_number : g->index;
}

double pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0;
}

const char *proc_command(const struct proc *p)
{
    if (p == NULL)
        return "?";
    if (proc_ok(p, PROC_S_CMDLINE) && p->cmdline && *p->cmdline)
        return p->cmdline;
    if (p->comm && *p->comm)
        return p->comm;
    return "?";
}

const char *proc_state_name(char state)
{
    switch (state) {
    case 'R':
        return N_("running");
    case 'S':
        return N_("sleeping");
    case 'D':
        return N_("in uninterruptible wait");
    case 'Z':
        return N_("defunct (zombie)");
    case 'T':
        return N_("stopped");
    case 't':
        return N_("stopped by a debugger");
    case 'X':
        return N_("dead");
    case 'I':
        return N_("idle");
    default:
        return N_("in an unknown state");
    }
}

void proc_container(char *buf, size_t size, const struct proc *p)
{
    buf[0] = '\0';
    if (p == NULL || !proc_ok(p, PROC_S_CGROUP))
        return;
    if (p->pod_uid)
        snprintf(buf, size, "k8s pod %.12s", p->pod_uid);
    else if (p->container_id)
        snprintf(buf, size, "%s %.12s", p->container_runtime ? p->container_runtime : "container",
                 p->container_id);
    else if (p->slurm_job_id)
        snprintf(buf, size, "slurm job %s", p->slurm_job_id);
    str_utf8_trim(buf); /* "%.12s" cuts bytes */
}

void proc_label(char *buf, size_t size, const struct rule_ctx *ctx, int32_t pid)
{
    const struct proc *p = facts_proc_find(ctx->facts, pid);
    const char *cmd = render_command(proc_command(p));
    int n;

    if (p == NULL) {
        snprintf(buf, size, "pid %d", (int)pid);
        return;
    }
    n = snprintf(buf, size, "%s: %s", p->user && proc_ok(p, PROC_S_USER_NAME) ? p->user : "?", cmd);
    /* Long command lines are cut with an ellipsis so titles stay one line, on a character. */
    if (n > 0 && (size_t)n >= size && size > 4) {
        buf[size - 4] = '\0';
        str_utf8_trim(buf);
        strcat(buf, "...");
    }
}

void proc_desc(char *buf, size_t size, const struct rule_ctx *ctx, int32_t pid)
{
    char label[160];

    if (facts_proc_find(ctx->facts, pid) == NULL) {
        snprintf(buf, size, "pid %d", (int)pid);
        return;
    }
    /* Room for "pid 4194304 ()" around it: the label is cut (on a character), never the line. */
    proc_label(label, size > 32 && size - 16 < sizeof(label) ? size - 16 : sizeof(label), ctx, pid);
    snprintf(buf, size, "pid %d (%s)", (int)pid, label);
}

bool fw_from_env(const struct stack_framework *fw)
{
    return fw->pid <= 0 && fw->found_from != NULL && strcmp(fw->found_from, "environment") == 0;
}

void fw_found_evidence(struct finding *f, const struct rule_ctx *ctx,
                       const struct stack_framework *fw)
{
    const struct stack_info *st = &ctx->facts->snap->stack;
    char label[160];

    if (fw_from_env(fw)) {
        finding_evidence(f,
                         "found in %s, of the Python environment gpudoctor was started in "
                         "($%s): no process of it runs here",
                         fw->site_packages ? fw->site_packages : "?",
                         st->python_env_var ? st->python_env_var : "VIRTUAL_ENV");
        return;
    }
    proc_desc(label, sizeof(label), ctx, fw->pid);
    finding_evidence(f, "found in %s", label);
}

/*
 * Which command supplies what was not in the evidence, for "Not checked" (render_not_checked
 * prints it for imported evidence). Only commands whose output check --from reads; a name is
 * matched whole, or by its prefix when the prefix ends in '_'. The first match wins. What only
 * a live run sees (the host's process table, its load) names gpudoctor itself. Commands only,
 * to be pasted: no prose in them.
 */
static const struct {
    const char *name;
    const char *command;
} gpu_commands[] = {
    { "clocks_event_reasons", "nvidia-smi -q -d PERFORMANCE" },
    { "pstate", "nvidia-smi -q -d PERFORMANCE" },
    { "temp_", "nvidia-smi -q -d TEMPERATURE" },
    { "power_", "nvidia-smi -q -d POWER" },
    { "energy_mj", "nvidia-smi -q -d POWER" },
    { "clock_", "nvidia-smi -q -d CLOCK" },
    { "mem_", "nvidia-smi -q -d MEMORY" },
    { "bar1_", "nvidia-smi -q -d MEMORY" },
    { "util_", "nvidia-smi -q -d UTILIZATION" },
    { "ecc_", "nvidia-smi -q -d ECC" },
    { "retired_pages_", "nvidia-smi -q -d PAGE_RETIREMENT" },
    { "remapped_rows_", "nvidia-smi -q -d ROW_REMAPPER" },
    { "processes", "nvidia-smi" },
    { "process_utilization", "nvidia-smi -q -d PIDS" },
    { "pcie_", "nvidia-smi -q" },
    { "pci_", "nvidia-smi -q" },
    { "mig_", "nvidia-smi -q" },
    { "fan_speed_pct", "nvidia-smi" },
    { "persistence_mode", "nvidia-smi" },
    { "compute_mode", "nvidia-smi" },
    { "display_", "nvidia-smi -q" },
    { "name", "nvidia-smi -L" },
    { "uuid", "nvidia-smi -L" },
    { "serial", "nvidia-smi -q" },
    { "vbios_version", "nvidia-smi -q" },
    { "minor_number", "nvidia-smi -q" },
};

static const char *const collector_commands[COLLECTOR__COUNT] = {
    [COLLECTOR_NVML] = "nvidia-smi -q",
    [COLLECTOR_KLOG] = "sudo dmesg",
    [COLLECTOR_PCIE] = "sudo lspci -vvv -d 10de:",
    [COLLECTOR_DRIVER] = "sudo nvidia-bug-report.sh",
    [COLLECTOR_HOST] = "gpudoctor check",
    [COLLECTOR_PROCS] = "gpudoctor check",
    [COLLECTOR_STACK] = "gpudoctor check",
    [COLLECTOR_IB] = "gpudoctor check",
};

const char *skip_command_gpu(const char *field)
{
    if (field == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(gpu_commands) / sizeof(gpu_commands[0]); i++) {
        const char *k = gpu_commands[i].name;
        size_t n = strlen(k);

        if (strcmp(field, k) == 0 || (k[n - 1] == '_' && strncmp(field, k, n) == 0))
            return gpu_commands[i].command;
    }
    return NULL;
}

const char *skip_command_collector(enum collector_id id)
{
    return (unsigned)id < COLLECTOR__COUNT ? collector_commands[id] : NULL;
}

bool need_collector(const struct rule_ctx *ctx, struct findings *out, enum collector_id id)
{
    const struct collector_status *c = &ctx->facts->snap->collectors[id];

    switch (c->state) {
    case CS_OK:
    case CS_PARTIAL:
        return true;
    case CS_NOT_RUN:
        rule_skip(ctx, out, -1, "%s collector not run", collector_names[id]);
        out->skips[out->n_skips - 1].command = skip_command_collector(id);
        return false;
    default:
        rule_skip_take(ctx, out, -1,
                       TWICE("%s collector %s",
                             (collector_names[id], collector_state_names[c->state]),
                             (collector_names[id], _(collector_state_words[c->state]))));
        return false;
    }
}

static void subject_fill(const struct rule_ctx *ctx, struct subject *sub, int32_t gpu_index,
                         int32_t pid)
{
    char cont[96];

    memset(sub, 0, sizeof(*sub));
    sub->gpu_index = gpu_index;
    sub->pid = pid;
    if (gpu_index >= 0) {
        const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)gpu_index);

        if (v && gpu_valid(v->g, GPU_S_UUID) && v->g->uuid)
            sub->gpu_uuid = xstrdup(v->g->uuid);
    }
    if (pid >= 0) {
        const struct proc *p = facts_proc_find(ctx->facts, pid);

        if (p != NULL) {
            if (proc_ok(p, PROC_S_USER_NAME) && p->user)
                sub->user = xstrdup(p->user);
            if (strcmp(proc_command(p), "?") != 0)
                sub->command = xstrdup(proc_command(p));
            proc_container(cont, sizeof(cont), p);
            if (cont[0])
                sub->container = xstrdup(cont);
        }
    }
}

struct finding *finding_new(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index,
                            int32_t pid)
{
    struct finding *f;

    xgrow(&out->items, &out->cap, out->n + 1, sizeof(*out->items));
    f = &out->items[out->n++];
    memset(f, 0, sizeof(*f));
    f->rule = ctx->rule;
    f->severity = ctx->rule->severity;
    subject_fill(ctx, &f->subject, gpu_index, pid);
    return f;
}

void finding_title(struct finding *f, const char *fmt, ...)
{
    va_list ap;

    free(f->title);
    free(f->title_l);
    va_start(ap, fmt);
    f->title = str_sanitize(i18n_vformat_both(&f->title_l, fmt, ap));
    va_end(ap);
    str_sanitize(f->title_l);
}

/* Appends en to *items and l (or NULL) to *items_l, in step; takes both. */
static void push(char ***items, char ***items_l, size_t *n, size_t *cap, char *en, char *l)
{
    size_t old_cap = *cap;

    xgrow(items, cap, *n + 1, sizeof(**items));
    (*items)[*n] = en;
    if (l != NULL || *items_l != NULL) {
        size_t had = *items_l != NULL ? old_cap : 0;

        *items_l = xrealloc(*items_l, *cap * sizeof(**items_l));
        memset(*items_l + had, 0, (*cap - had) * sizeof(**items_l));
        (*items_l)[*n] = l;
    }
    (*n)++;
}

/* Appends the English text to *items and the translation (or NULL) to *items_l, in step. */
static void append(char ***items, char ***items_l, size_t *n, size_t *cap, const char *fmt,
                   va_list ap) __attribute__((format(printf, 5, 0)));

static void append(char ***items, char ***items_l, size_t *n, size_t *cap, const char *fmt,
                   va_list ap)
{
    char *l, *en = i18n_vformat_both(&l, fmt, ap);

    /* The last guard for what a report shows: a value cut inside a character, a control byte
     * that came in with one, each becomes '?' (and --json keeps the line). */
    push(items, items_l, n, cap, str_sanitize(en), str_sanitize(l));
}

void finding_evidence(struct finding *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    append(&f->evidence, &f->evidence_l, &f->n_evidence, &f->cap_evidence, fmt, ap);
    va_end(ap);
}

void finding_title_take(struct finding *f, char *en, char *l)
{
    free(f->title);
    free(f->title_l);
    f->title = str_sanitize(en);
    f->title_l = str_sanitize(l);
}

void finding_evidence_take(struct finding *f, char *en, char *l)
{
    push(&f->evidence, &f->evidence_l, &f->n_evidence, &f->cap_evidence, str_sanitize(en),
         str_sanitize(l));
}

const char *finding_title_text(const struct finding *f)
{
    return f->title_l != NULL ? f->title_l : f->title;
}

const char *finding_evidence_text(const struct finding *f, size_t k)
{
    return f->evidence_l != NULL && f->evidence_l[k] != NULL ? f->evidence_l[k] : f->evidence[k];
}

const char *finding_fix_text(const struct finding *f, size_t k)
{
    return f->fix_l != NULL && f->fix_l[k] != NULL ? f->fix_l[k] : f->fix[k];
}

/*
 * Where the comment of a fix line starts: the first '#' that begins a word outside quotes, as a
 * shell reads it; len when there is none. *open says whether the command before it leaves a
 * quote open or ends in a backslash (the shell would read on into the next pasted line).
 */
static size_t comment_start(const char *line, size_t len, bool *open)
{
    char quote = 0;
    bool escaped = false, word_start = true; /* after a blank the shell splits words at */
    size_t i;

    for (i = 0; i < len; i++) {
        char c = line[i];
        bool blank = false;

        if (quote == '\'') {
            quote = c == '\'' ? 0 : quote;
        } else if (escaped) {
            escaped = false;
        } else if (c == '\\') {
            escaped = true;
        } else if (quote == '"') {
            quote = c == '"' ? 0 : quote;
        } else if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == '#' && word_start) {
            break;
        } else {
            blank = c == ' ' || c == '\t';
        }
        word_start = blank;
    }
    *open = quote != 0 || escaped;
    return i;
}

size_t fix_comment_start(const char *fix)
{
    bool open;

    return comment_start(fix, strlen(fix), &open);
}

/*
 * The net under the rules, which quote every value they put into a command (fix_arg): a fix line
 * is pasted into a root shell, so it must be one comment, or one command with an optional
 * "   # why". The comment part is made printable on one line; a command part that holds a control
 * character or bytes that are not UTF-8, or leaves a quote open, would not paste as the command
 * it shows, so the whole line becomes a comment.
 */
static char *fix_safe(char *line)
{
    size_t len = strlen(line), hash, lead = strspn(line, " ");
    bool open;
    char *out, *text;

    hash = comment_start(line, len, &open);
    if (hash == lead && hash < len) {
        out = str_printable_line(line + lead);
    } else if (open || !str_is_one_line(line, hash)) {
        text = str_printable_line(line);
        out = xasprintf("# not safe to paste, so not given as a command: %s", text);
        free(text);
    } else if (hash < len) {
        text = str_printable_line(line + hash);
        out = xasprintf("%.*s%s", (int)hash, line, text);
        free(text);
    } else {
        return line;
    }
    free(line);
    return out;
}

/* Whether two fix lines run the same command: the same text before their comments. */
static bool same_command(const char *a, const char *b)
{
    size_t na = fix_comment_start(a), nb = fix_comment_start(b);

    while (na > 0 && a[na - 1] == ' ')
        na--;
    while (nb > 0 && b[nb - 1] == ' ')
        nb--;
    return na == nb && memcmp(a, b, na) == 0;
}

void finding_fix_take(struct finding *f, char *en, char *l)
{
    push(&f->fix, &f->fix_l, &f->n_fix, &f->cap_fix, fix_safe(en), l ? fix_safe(l) : NULL);
    /* A translation changes the comment only: one whose command differs is not used. */
    if (f->fix_l != NULL && f->fix_l[f->n_fix - 1] != NULL &&
        !same_command(f->fix[f->n_fix - 1], f->fix_l[f->n_fix - 1])) {
        free(f->fix_l[f->n_fix - 1]);
        f->fix_l[f->n_fix - 1] = NULL;
    }
}

void finding_fix(struct finding *f, const char *fmt, ...)
{
    va_list ap;
    char *l, *en;

    va_start(ap, fmt);
    en = i18n_vformat_both(&l, fmt, ap);
    va_end(ap);
    finding_fix_take(f, en, l);
}

/* *text followed by more, in a new string; takes both. */
static char *joined(char *text, char *more)
{
    char *both = text != NULL ? xasprintf("%s%s", text, more) : xstrdup(more);

    free(text);
    free(more);
    return both;
}

void text2_add_take(struct text2 *t, char *en, char *l)
{
    t->l = joined(t->l, l != NULL ? l : xstrdup(en));
    t->en = joined(t->en, en);
}

void text2_free(struct text2 *t)
{
    free(t->en);
    free(t->l);
    t->en = t->l = NULL;
}

char *fix_arg(struct finding *f, const char *what, const char *value)
{
    char *word, *text;

    if (value == NULL)
        return NULL;
    word = value[0] != '-' ? str_shell_quote(value) : NULL;
    if (word != NULL)
        return word;
    text = str_printable_line(value);
    finding_fix(f, "# the %s \"%s\" cannot be put into a command safely: look at it by hand", what,
                text);
    free(text);
    return NULL;
}

/* n hex digits at s (1..max of them), then the character end; the length read, or 0. */
static size_t hex_part(const char *s, size_t min, size_t max, char end)
{
    size_t n = strspn(s, "0123456789abcdefABCDEF");

    return n >= min && n <= max && s[n] == end ? n + (end != '\0') : 0;
}

/*
 * A PCI address with every part given: [DOMAIN:]BUS:DEVICE.FUNCTION in hex. setpci and lspci
 * read '*', an empty part or a missing one in their -s as "any device": a write to all of them.
 */
static bool pci_address_ok(const char *s)
{
    size_t n = hex_part(s, 1, 8, ':'), m;

    if (n > 0 && hex_part(s + n, 2, 2, ':') > 0) /* a domain before the bus */
        s += n;
    if ((m = hex_part(s, 2, 2, ':')) == 0)
        return false;
    s += m;
    if ((m = hex_part(s, 2, 2, '.')) == 0)
        return false;
    s += m;
    return s[0] >= '0' && s[0] <= '7' && s[1] == '\0';
}

const char *pci_lspci_form(const char *bus)
{
    const char *colon = bus ? strchr(bus, ':') : NULL;
    size_t skip = 0;

    while (colon != NULL && (size_t)(colon - bus) - skip > 4 && bus[skip] == '0')
        skip++;
    return bus ? bus + skip : NULL;
}

char *fix_pci_arg(struct finding *f, const char *value)
{
    char *text;

    if (value == NULL)
        return NULL;
    if (pci_address_ok(value))
        return fix_arg(f, "PCI address", value);
    text = str_printable_line(value);
    finding_fix(f,
                "# \"%s\" is not a whole PCI address (DOMAIN:BUS:DEVICE.FUNCTION): no command is "
                "given for it",
                text);
    free(text);
    return NULL;
}

void finding_object(struct finding *f, const char *fmt, ...)
{
    va_list ap;

    free(f->subject.object);
    free(f->subject.object_l);
    f->subject.object_l = NULL;
    va_start(ap, fmt);
    f->subject.object = xvasprintf(fmt, ap);
    va_end(ap);
}

void finding_object_word(struct finding *f, const char *word)
{
    finding_object(f, "%s", word);
    if (i18n_active())
        f->subject.object_l = xstrdup(_(word));
}

void finding_explains(struct finding *f, const char *rule_id)
{
    const struct rule_link *l = f->rule->explains;

    for (size_t k = 0; l != NULL && l[k].rule_id != NULL && k < 64; k++) {
        if (strcmp(l[k].rule_id, rule_id) == 0 && l[k].when != NULL) {
            f->explains_on |= UINT64_C(1) << k;
            return;
        }
    }
    fatal("rule %s declares no evidence-dependent link to %s", f->rule->id, rule_id);
}

void rule_skip(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index, const char *fmt,
               ...)
{
    va_list ap;
    char *reason, *reason_l;

    va_start(ap, fmt);
    reason = i18n_vformat_both(&reason_l, fmt, ap);
    va_end(ap);
    rule_skip_take(ctx, out, gpu_index, reason, reason_l);
}

void rule_skip_take(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index,
                    char *reason, char *reason_l)
{
    struct skip *k;

    xgrow(&out->skips, &out->cap_skips, out->n_skips + 1, sizeof(*out->skips));
    k = &out->skips[out->n_skips++];
    k->rule = ctx->rule;
    k->gpu_index = gpu_index;
    k->command = NULL;
    k->reason = reason;
    k->reason_l = reason_l;
}

const char *skip_reason_text(const struct skip *k)
{
    return k->reason_l ? k->reason_l : k->reason;
}

const char *gpu_field_name(enum gpu_slot slot)
{
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        if (gpu_table.fields[i].slot == (int)slot)
            return gpu_table.fields[i].name;
    }
    return "?";
}

const char *gpu_status_name(const struct gpu *g, enum gpu_slot slot)
{
    int32_t rc = g->handle_rc != 0 ? g->handle_rc : g->rc[slot];
    const char *name;

    if (rc == JF_RC_NOT_COLLECTED)
        return N_("not collected");
    name = nvml_rc_name(rc);
    return name ? name : "error";
}

bool need_gpu(const struct rule_ctx *ctx, struct findings *out, const struct gpu *g,
              enum gpu_slot slot)
{
    if (gpu_valid(g, slot))
        return true;
    /* A GPU NVML cannot reach at all is one health finding, not a skip in every rule. */
    if (g->handle_rc != 0)
        return false;
    /* NVML's error names (NOT_SUPPORTED) are its own; "not collected" is a phrase, translated */
    rule_skip_take(ctx, out, (int32_t)g->index,
                   TWICE("%s %s", (gpu_field_name(slot), gpu_status_name(g, slot)),
                         (gpu_field_name(slot), _(gpu_status_name(g, slot)))));
    /* Not in the evidence (an error reading it is the GPU's answer, no command changes it). */
    if (g->rc[slot] == JF_RC_NOT_COLLECTED)
        out->skips[out->n_skips - 1].command = skip_command_gpu(gpu_field_name(slot));
    return false;
}
