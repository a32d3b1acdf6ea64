#include "render/text.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include "util/i18n.h"
#include "util/strutil.h"
#include "util/timeutil.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define FINDING_INDENT  10 /* "CRITICAL  " */
#define MAX_NOT_CHECKED 12 /* lines of the "Not checked" section before "... more" */

static unsigned clamp_width(unsigned w)
{
    return w < RENDER_MIN_WIDTH ? RENDER_MIN_WIDTH : w > RENDER_MAX_WIDTH ? RENDER_MAX_WIDTH : w;
}

unsigned render_term_width(FILE *out)
{
    const char *cols = getenv("COLUMNS");
    struct winsize ws;
    uint32_t n;

    if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return clamp_width(ws.ws_col);
    if (cols != NULL && str_to_u32(cols, 10, &n) && n > 0)
        return clamp_width(n);
    return RENDER_DEFAULT_WIDTH;
}

void render_opts_init(struct render_opts *ro, FILE *out, enum render_when color, unsigned width,
                      enum render_when ascii)
{
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

    switch (color) {
    case RENDER_ALWAYS:
        ro->color = true;
        break;
    case RENDER_NEVER:
        ro->color = false;
        break;
    default:
        ro->color = isatty(fileno(out)) && (nc == NULL || *nc == '\0') &&
                    !(term != NULL && strcmp(term, "dumb") == 0);
    }
    ro->width = width ? clamp_width(width) : render_term_width(out);
    ro->ascii = ascii == RENDER_AUTO ? !render_locale_utf8() : ascii == RENDER_ALWAYS;
}

FILE *render_out_begin(struct render_out *w, FILE *out, const struct render_opts *ro)
{
    memset(w, 0, sizeof(*w));
    w->out = out;
    if (!ro->ascii)
        return out;
    w->mem = open_memstream(&w->buf, &w->len);
    if (w->mem == NULL)
        fatal("out of memory for the report");
    return w->mem;
}

void render_out_end(struct render_out *w)
{
    char *text;

    if (w->mem == NULL)
        return;
    if (fclose(w->mem) != 0)
        fatal("out of memory for the report");
    text = render_asciin(w->buf, w->len);
    fputs(text, w->out); /* a failure stays in w->out's error flag for its owner to report */
    free(text);
    free(w->buf);
    memset(w, 0, sizeof(*w));
}

#define SGR(name, code)                                                                            \
    const char *render_##name(const struct render_opts *ro)                                        \
    {                                                                                              \
        return ro->color ? "\033[" code "m" : "";                                                  \
    }
SGR(bold, "1")
SGR(red, "1;31")
SGR(yellow, "1;33")
SGR(green, "32")
SGR(dim, "2")
SGR(reset, "0")
#undef SGR

static const char *severity_color(const struct render_opts *ro, enum severity sev)
{
    switch (sev) {
    case SEV_CRITICAL:
        return render_red(ro);
    case SEV_WARNING:
        return render_yellow(ro);
    default:
        return render_dim(ro);
    }
}

/* render_wrap, with cont printed after the indent of every continuation line. */
static void wrap_lines(FILE *out, const struct render_opts *ro, size_t first_len, size_t indent,
                       const char *cont, const char *text)
{
    size_t width = ro->width > indent + 20 ? ro->width : indent + 20;
    size_t col = first_len;
    bool empty = true; /* nothing written on this line yet */
    const char *p = text;

    while (*p == ' ')
        p++;
    while (*p) {
        bool spaced = p > text && p[-1] == ' ';
        size_t cols, len = render_piece(p, &cols);
        size_t gap = !empty && spaced ? 1 : 0;

        /* A piece that does not fit goes to the next line, unless the line is still empty. */
        if (!empty && col + gap + cols > width) {
            fprintf(out, "\n%*s%s", (int)indent, "", cont);
            col = indent + strlen(cont);
            empty = true;
            gap = 0;
        }
        if (gap) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, len, out);
        col += cols;
        empty = false;
        p += len;
        while (*p == ' ')
            p++;
    }
    fputc('\n', out);
}

void render_wrap(FILE *out, const struct render_opts *ro, size_t first_len, size_t indent,
                 const char *text)
{
    wrap_lines(out, ro, first_len, indent, "", text);
}

const char *render_status(int exit_code)
{
    switch (exit_code) {
    case 0:
        return "healthy";
    case 1:
        return "warning";
    case 2:
        return "critical";
    default:
        return "unknown";
    }
}

/*
 * The top finding's title; when it is the cause of others, what it explains too: "GPU 2: Xid 48
 * (...), which explains: NVML did not answer: the NVIDIA driver is wedged (and 1 more)".
 */
static char *root_cause_line(const struct findings *f, const struct finding *lead, bool people)
{
    size_t i = (size_t)(lead - f->items), n = finding_n_explained(f, i);
    const struct finding *first = NULL;

    for (size_t k = 0; k < f->n && first == NULL; k++) {
        if (k != i && finding_cause(f, k) == lead)
            first = &f->items[k];
    }
    const char *lt = people ? finding_title_text(lead) : lead->title;

    if (n == 0 || first == NULL)
        return xstrdup(lt);
    if (n == 1)
        return xasprintf(L_(people, "%s, which explains: %s"), lt,
                         people ? finding_title_text(first) : first->title);
    return xasprintf(L_(people, "%s, which explains: %s (and %zu more)"), lt,
                     people ? finding_title_text(first) : first->title, n - 1);
}

char *render_verdict(const struct snapshot *s, const struct findings *f, bool people)
{
    size_t crit = findings_count(f, SEV_CRITICAL), warn = findings_count(f, SEV_WARNING);
    size_t info = findings_count(f, SEV_INFO);
    char *why = rules_cannot_check(s, f, people), *out, *top;

    if (why != NULL)
        return why;
    if (crit == 0 && warn == 0) {
        const char *notes = info == 0   ? ""
                            : info == 1 ? L_(people, " (1 note)")
                                        : L_(people, " (notes below)");

        /* An error was given and nothing here explains it: say so, not just "healthy". */
        if (s->reported.n_errors > 0 && s->n_gpus == 1)
            return xstrdup(L_(people, "no fault found on this machine (1 GPU checked): what the "
                                      "error given means is below"));
        if (s->reported.n_errors > 0)
            return xasprintf(L_(people, "no fault found on this machine (%zu GPUs checked): what "
                                        "the error given means is below"),
                             s->n_gpus);
        if (s->n_gpus == 1)
            return xasprintf(L_(people, "healthy — 1 GPU checked, no problems found%s"), notes);
        return xasprintf(L_(people, "healthy — %zu GPUs checked, no problems found%s"), s->n_gpus,
                         notes);
    }
    /* The first finding not acknowledged: not NULL, a critical or warning one counts. */
    top = root_cause_line(f, findings_lead(f), people);
    if (crit && warn)
        out = warn == 1 ? xasprintf(L_(people, "%zu critical, 1 warning — %s"), crit, top)
                        : xasprintf(L_(people, "%zu critical, %zu warnings — %s"), crit, warn, top);
    else if (crit)
        out = xasprintf(L_(people, "%zu critical — %s"), crit, top);
    else
        out = warn == 1 ? xasprintf(L_(people, "1 warning — %s"), top)
                        : xasprintf(L_(people, "%zu warnings — %s"), warn, top);
    free(top);
    return out;
}

static void verdict_line(FILE *out, const struct snapshot *s, const struct findings *f,
                         const struct render_opts *ro)
{
    char *v = render_verdict(s, f, true);
    int worst = findings_worst(f);
    const char *color = worst == SEV_CRITICAL  ? render_red(ro)
                        : worst == SEV_WARNING ? render_yellow(ro)
                                               : render_green(ro);
    const char *dash = strstr(v, " — ");
    size_t head = dash ? (size_t)(dash - v) : strlen(v);

    /* The counts (or the health) in colour, the top finding plain: it wraps on its own. */
    if (dash == NULL) {
        fprintf(out, "%s%s", render_bold(ro), color);
        render_wrap(out, ro, 0, 2, v);
        fputs(render_reset(ro), out);
    } else {
        fprintf(out, "%s%s%.*s%s — ", render_bold(ro), color, (int)head, v, render_reset(ro));
        render_wrap(out, ro, head + 3, 2, dash + strlen(" — "));
    }
    free(v);
}

/* "GPU 3 (GPU-5c1f7e1e), pid 4121, alice, docker 3f2a1b9c44d0" */
static void subject_line(char *buf, size_t size, const struct subject *sub)
{
    size_t len = 0;

#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (len < size)                                                                            \
            len += (size_t)snprintf(buf + len, size - len, __VA_ARGS__);                           \
    } while (0)
    buf[0] = '\0';
    if (sub->gpu_index >= 0) {
        ADD("GPU %d", (int)sub->gpu_index);
        if (sub->gpu_uuid) {
            char u[16];

            snprintf(u, sizeof(u), "%.12s", sub->gpu_uuid);
            str_utf8_trim(u);
            ADD(" (%s)", u);
        }
    }
    if (sub->object)
        ADD("%s%s", len ? ", " : "", sub->object_l ? sub->object_l : sub->object);
    if (sub->pid >= 0)
        ADD("%spid %d", len ? ", " : "", (int)sub->pid);
    if (sub->user)
        ADD(", %s", sub->user);
    if (sub->container)
        ADD(", %s", sub->container);
#undef ADD
}

/* A comment of a fix ("# text"), wrapped: every line it takes starts with "# ". */
static void fix_comment(FILE *out, const struct render_opts *ro, size_t indent, const char *hash)
{
    fputs("# ", out);
    wrap_lines(out, ro, indent + 2, indent, "# ", hash + 1);
}

/*
 * A fix: a command, "command   # why", or "# advice", as the rule made it safe to paste
 * (finding_fix). Commands are never wrapped, so they copy and paste whole; when a command and its
 * comment do not fit, the comment goes on the line above. A comment that wraps starts each of
 * its lines with "# ", so no part of it reads as a command when pasted.
 */
static void fix_line(FILE *out, const struct render_opts *ro, const char *fix, bool first)
{
    /* TRANSLATORS: the label before a finding's first fix line; the lines under it are
       indented by its width. */
    const char *label = _("fix: ");
    const size_t label_cols = render_width(label, strlen(label)),
                 indent = FINDING_INDENT + label_cols;
    size_t hash = fix_comment_start(fix), cmd = hash;

    while (cmd > 0 && fix[cmd - 1] == ' ')
        cmd--;
    if (first)
        fprintf(out, "%*s%s", FINDING_INDENT, "", label);
    else
        fprintf(out, "%*s", (int)indent, "");
    if (cmd == 0 && fix[hash] == '#') {
        fix_comment(out, ro, indent, fix + hash);
    } else if (fix[hash] == '#' && indent + strlen(fix) > ro->width) {
        fputs(render_dim(ro), out);
        fix_comment(out, ro, indent, fix + hash);
        fprintf(out, "%s%*s%.*s\n", render_reset(ro), (int)indent, "", (int)cmd, fix);
    } else {
        fprintf(out, "%s\n", fix);
    }
}

/* "caused by: TITLE [rule]" under a consequence, "explains: the N below" under a cause. */
static void cause_lines(FILE *out, const struct findings *all, size_t i,
                        const struct render_opts *ro)
{
    const struct finding *cause = finding_cause(all, i);
    size_t n = finding_n_explained(all, i);
    char *line;

    if (cause != NULL) {
        line = xasprintf(_("caused by #%zu: %s [%s]"), (size_t)(cause - all->items) + 1,
                         finding_title_text(cause), cause->rule->id);
        fprintf(out, "%*s", FINDING_INDENT, "");
        render_wrap(out, ro, FINDING_INDENT, FINDING_INDENT + 2, line);
        free(line);
    }
    if (n > 0) {
        char list[256] = "";
        size_t len = 0;

        for (size_t k = 0; k < all->n && len < sizeof(list); k++) {
            if (finding_cause(all, k) == &all->items[i])
                len += (size_t)snprintf(list + len, sizeof(list) - len, "%s#%zu [%s]",
                                        len ? ", " : "", k + 1, all->items[k].rule->id);
        }
        line = xasprintf(_("explains %s"), list);
        fprintf(out, "%*s", FINDING_INDENT, "");
        render_wrap(out, ro, FINDING_INDENT, FINDING_INDENT + 2, line);
        free(line);
    }
}

static void render_finding(FILE *out, const struct findings *all, size_t i,
                           const struct render_opts *ro)
{
    /* TRANSLATORS: severity tags before a title: at most 8 columns (4 Chinese characters) */
    static const char *const tags[] = { N_("INFO"), N_("WARNING"), N_("CRITICAL") };
    const struct finding *f = &all->items[i];
    char subject[256], tag[64], line[320];
    bool linked = finding_cause(all, i) != NULL || finding_n_explained(all, i) > 0;
    size_t col, w;

    /* Numbered when causes link findings, so "caused by #1" has something to point at. */
    if (linked)
        snprintf(tag, sizeof(tag), "%s #%zu", _(tags[f->severity]), i + 1);
    else
        snprintf(tag, sizeof(tag), "%s", _(tags[f->severity]));
    /* Padded by display columns (a translated tag may hold wide characters), one blank at least. */
    w = render_width(tag, strlen(tag));
    col = w + 1 > FINDING_INDENT ? w + 1 : FINDING_INDENT;
    fprintf(out, "%s%s%s%*s", severity_color(ro, f->severity), tag, render_reset(ro),
            (int)(col - w), "");
    fputs(render_bold(ro), out);
    render_wrap(out, ro, col, FINDING_INDENT, finding_title_text(f));
    fputs(render_reset(ro), out);
    subject_line(subject, sizeof(subject), &f->subject);
    /* "[rule] GPU 0 (GPU-...), pid N, user, slurm job J": wrapped like the title when long */
    snprintf(line, sizeof(line), "[%s]%s%s", f->rule->id, subject[0] ? " " : "", subject);
    fprintf(out, "%*s%s", FINDING_INDENT, "", render_dim(ro));
    wrap_lines(out, ro, FINDING_INDENT, FINDING_INDENT + 2, "", line);
    fputs(render_reset(ro), out);
    cause_lines(out, all, i, ro);
    for (size_t k = 0; k < f->n_evidence; k++) {
        fprintf(out, "%*s- ", FINDING_INDENT, "");
        render_wrap(out, ro, FINDING_INDENT + 2, FINDING_INDENT + 2, finding_evidence_text(f, k));
    }
    if (f->n_fix > 0 && finding_fix_in_cause(all, i)) {
        /* Its own fixes would repeat the cause's, or cannot work before it: only the pointer. */
        char *only = xasprintf(_("# #%zu's fix, its cause, clears this too; if it stays after "
                                 "that, run gpudoctor check again"),
                               (size_t)(finding_cause(all, i) - all->items) + 1);

        fix_line(out, ro, only, true);
        free(only);
        return;
    }
    /* A consequence's own fix comes after its cause's: fixing the cause may clear it. */
    if (f->n_fix > 0 && finding_cause(all, i) != NULL) {
        char *first = xasprintf(_("# first #%zu's fix, its cause: this may clear with it"),
                                (size_t)(finding_cause(all, i) - all->items) + 1);

        fix_line(out, ro, first, true);
        free(first);
    }
    for (size_t k = 0; k < f->n_fix; k++)
        fix_line(out, ro, finding_fix_text(f, k), k == 0 && finding_cause(all, i) == NULL);
}

void render_findings(FILE *out, const struct findings *f, const struct render_opts *ro)
{
    size_t shown = 0;

    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].ack != NULL)
            continue;
        if (shown++ > 0)
            fputc('\n', out);
        render_finding(out, f, i, ro);
    }
}

/* One short line per acknowledged finding: what, by whom, the note, until when. */
static void render_acknowledged(FILE *out, const struct findings *f, const struct render_opts *ro)
{
    bool head = false;

    for (size_t i = 0; i < f->n; i++) {
        const struct finding *x = &f->items[i];
        char line[1024], until[40];

        if (x->ack == NULL)
            continue;
        if (!head) {
            fprintf(out,
                    _("\n%sAcknowledged (not counted; a new event on the GPU brings them back):"
                      "%s\n"),
                    render_bold(ro), render_reset(ro));
            head = true;
        }
        snprintf(until, sizeof(until), "%s", _("never"));
        if (x->ack->expires_ms != 0)
            time_format_iso(x->ack->expires_ms, until, sizeof(until));
        snprintf(line, sizeof(line), _("%s %s: %s — by %s%s%s%s, expires %s"),
                 severity_names[x->severity], x->rule->id,
                 x->title ? finding_title_text(x) : _(x->rule->title),
                 x->ack->by ? x->ack->by : "?", x->ack->note ? ": \"" : "",
                 x->ack->note ? x->ack->note : "", x->ack->note ? "\"" : "", until);
        fprintf(out, "%s  ", render_dim(ro));
        render_wrap(out, ro, 2, 4, line);
        fputs(render_reset(ro), out);
    }
}

/* The state file's note, when it could not be read (corrupt, unreadable). */
static void render_state_note(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    if (s->state.note == NULL)
        return;
    fprintf(out, _("\n%sNote: "), render_dim(ro));
    render_wrap(out, ro, 6, 2, s->state.note);
    fputs(render_reset(ro), out);
}

static void cell_u32(char *buf, size_t size, const struct gpu *g, enum gpu_slot slot, uint32_t v,
                     const char *suffix)
{
    if (gpu_valid(g, slot))
        snprintf(buf, size, "%" PRIu32 "%s", v, suffix);
    else
        snprintf(buf, size, "-");
}

/*
 * A table's header cell: its label (translated), the column's width in display columns, whether
 * the column is right-aligned, and the spaces after it. A translation wider than its column would
 * shift every column after it: the English label is used then.
 */
void render_table_header(FILE *out, const struct render_opts *ro, const struct head_cell *c,
                         size_t n)
{
    fputs(render_bold(ro), out);
    for (size_t i = 0; i < n; i++) {
        const char *label = _(c[i].label);
        int w = (int)render_width(label, strlen(label));

        if (w > c[i].width && i + 1 < n) {
            label = c[i].label;
            w = (int)strlen(label);
        }
        if (i + 1 == n) {
            fputs(label, out);
            break;
        }
        fprintf(out, "%*s%s%*s", c[i].right ? c[i].width - w : 0, "", label,
                (c[i].right ? 0 : c[i].width - w) + c[i].gap, "");
    }
    fprintf(out, "%s\n", render_reset(ro));
}

/* TRANSLATORS: the GPU table's column heads; each must fit its column (3, 22, 4, 15, 4, 10). */
static const struct head_cell gpu_head[] = {
    { N_("GPU"), 3, 2, false },     { N_("NAME"), 22, 1, false }, { N_("UTIL"), 4, 2, true },
    { N_("MEMORY"), 15, 1, false }, { N_("TEMP"), 4, 2, false },  { N_("POWER"), 10, 1, false },
    { N_("PCIE"), 0, 0, false },
};

void render_gpu_table(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    if (s->n_gpus == 0)
        return;
    render_table_header(out, ro, gpu_head, ARRAY_SIZE(gpu_head));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        char util[16], mem[40], temp[16], power[32], pcie[32], used[16], total[16];
        const char *name = gpu_valid(g, GPU_S_NAME) && g->name ? g->name : "?";

        if (g->handle_rc != 0) {
            fprintf(out, "%3" PRIu32 "  %s(not accessible: %s)%s\n", g->index, render_red(ro),
                    nvml_rc_name(g->handle_rc) ? nvml_rc_name(g->handle_rc) : "error",
                    render_reset(ro));
            continue;
        }
        if (strncmp(name, "NVIDIA ", 7) == 0)
            name += 7;
        cell_u32(util, sizeof(util), g, GPU_S_UTIL_GPU, g->util_gpu_pct, "%");
        if (gpu_valid(g, GPU_S_MEM_USED) && gpu_valid(g, GPU_S_MEM_TOTAL)) {
            const char *unit_used, *unit_total;

            render_bytes(used, sizeof(used), g->mem_used_bytes);
            render_bytes(total, sizeof(total), g->mem_total_bytes);
            unit_used = strchr(used, ' ');
            unit_total = strchr(total, ' ');
            /* "72.8/79.6 GiB" when both share a unit, to fit the column. */
            if (unit_used && unit_total && strcmp(unit_used, unit_total) == 0)
                snprintf(mem, sizeof(mem), "%.*s/%s", (int)(unit_used - used), used, total);
            else
                snprintf(mem, sizeof(mem), "%s/%s", used, total);
        } else {
            snprintf(mem, sizeof(mem), "-");
        }
        cell_u32(temp, sizeof(temp), g, GPU_S_TEMP, g->temp_c, "C");
        if (gpu_valid(g, GPU_S_POWER) && gpu_valid(g, GPU_S_POWER_LIMIT))
            snprintf(power, sizeof(power), "%" PRIu32 "/%" PRIu32 " W", g->power_mw / 1000,
                     g->power_limit_mw / 1000);
        else if (gpu_valid(g, GPU_S_POWER))
            snprintf(power, sizeof(power), "%" PRIu32 " W", g->power_mw / 1000);
        else
            snprintf(power, sizeof(power), "-");
        if (gpu_valid(g, GPU_S_PCIE_GEN) && gpu_valid(g, GPU_S_PCIE_WIDTH))
            snprintf(pcie, sizeof(pcie), "Gen%" PRIu32 " x%" PRIu32, g->pcie_gen, g->pcie_width);
        else
            snprintf(pcie, sizeof(pcie), "-");
        fprintf(out, "%3" PRIu32 "  ", g->index);
        render_cut_cell(out, name, 22);
        fprintf(out, " %4s  %-15s %4s  %-10s %s\n", util, mem, temp, power, pcie);
    }
}

/* TRANSLATORS: a process's state in the report's process table: at most 8 columns. */
static const char *state_word(const struct proc *p)
{
    if (p == NULL || !proc_has(p, PROC_S_STATE))
        return "?";
    switch (p->state) {
    case 'R':
        return N_("running");
    case 'S':
        return N_("sleeping");
    case 'D':
        return N_("disk");
    case 'Z':
        return N_("zombie");
    case 'T':
        return N_("stopped");
    case 't':
        return N_("traced");
    case 'I':
        return N_("idle");
    case 'X':
        return N_("dead");
    default:
        return "?";
    }
}

static void process_row(FILE *out, const struct snapshot *s, uint32_t gpu, int32_t pid,
                        bool used_valid, uint64_t used)
{
    const struct proc *p = proc_table_find(&s->procs, pid);
    char mem[16] = "-", age[16] = "-";
    const char *cmd = "?", *user = "?", *state = render_fit(state_word(p), 8);
    int64_t ms;

    if (used_valid)
        render_bytes(mem, sizeof(mem), used);
    if (p != NULL) {
        ms = s->time_ms > 0 ? proc_age_ms(p, s->time_ms) : -1;
        if (ms >= 0)
            render_duration(age, sizeof(age), (double)ms / 1000.0);
        if (((p->valid >> PROC_S_CMDLINE) & 1u) && p->cmdline && *p->cmdline)
            cmd = p->cmdline;
        else if (p->comm)
            cmd = p->comm;
        cmd = render_command(cmd); /* the column is narrow */
        if (((p->valid >> PROC_S_USER_NAME) & 1u) && p->user)
            user = p->user;
    }
    fprintf(out, "%3" PRIu32 "  %-7d ", gpu, (int)pid);
    render_cut_cell(out, user, 9);
    fputc(' ', out);
    render_cell(out, state, 8, false);
    fprintf(out, " %6s %9s  ", age, mem);
    render_cut(out, cmd, 30, true); /* "~": the command goes on */
    fputc('\n', out);
}

/* TRANSLATORS: the process table's column heads; each must fit its column (3, 7, 9, 8, 6, 9). */
static const struct head_cell proc_head[] = {
    { N_("GPU"), 3, 2, false },     { N_("PID"), 7, 1, false }, { N_("USER"), 9, 1, false },
    { N_("STATE"), 8, 1, false },   { N_("AGE"), 6, 1, true },  { N_("MEMORY"), 9, 2, true },
    { N_("COMMAND"), 0, 0, false },
};

void render_gpu_processes(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    bool header = false;

#define HEADER()                                                                                   \
    do {                                                                                           \
        if (!header)                                                                               \
            render_table_header(out, ro, proc_head, ARRAY_SIZE(proc_head));                        \
        header = true;                                                                             \
    } while (0)
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        for (size_t k = 0; k < g->n_procs; k++) {
            HEADER();
            process_row(out, s, g->index, (int32_t)g->procs[k].pid,
                        (g->procs[k].valid >> GPU_PROC_S_USED) & 1u, g->procs[k].used_bytes);
        }
    }
    /* Processes with a GPU open that NVML does not list (no context, or NVML unavailable). */
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        for (size_t k = 0; k < p->n_gpus; k++) {
            const struct proc_gpu *pg = &p->gpus[k];

            if (pg->nvml_listed || !((pg->valid >> PROC_GPU_S_INDEX) & 1u))
                continue;
            HEADER();
            process_row(out, s, pg->gpu_index, p->pid, (pg->valid >> PROC_GPU_S_USED) & 1u,
                        pg->used_bytes);
        }
    }
#undef HEADER
    if (!header && s->n_gpus > 0) {
        bool known = true;

        /* Absent only where every GPU's list was read: evidence without them says nothing. */
        for (size_t i = 0; i < s->n_gpus; i++)
            known &= gpu_valid(&s->gpus[i], GPU_S_PROCESSES);
        fprintf(out, "%s\n",
                known ? _("No processes are using the GPUs.")
                      : _("Which processes use the GPUs is not known (their process lists were "
                          "not read)."));
    }
}

/* Skips grouped by (reason, rule): the GPUs each applies to, every one of them. */
struct skip_group {
    const char *reason;      /* the English: what groups skips */
    const char *reason_text; /* the same for people */
    const char *command;     /* what supplies the missing evidence (struct skip), or NULL */
    const struct rule *rule;
    int32_t *gpus;
    size_t n_gpus, cap_gpus;
    bool host; /* a skip not about one GPU */
};

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

static size_t group_skips(const struct findings *f, struct skip_group *g, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < f->n_skips; i++) {
        const struct skip *k = &f->skips[i];
        size_t j;

        for (j = 0; j < n; j++) {
            if (g[j].rule == k->rule && strcmp(g[j].reason, k->reason) == 0)
                break;
        }
        if (j == n) {
            if (n == max)
                continue;
            memset(&g[n], 0, sizeof(g[n]));
            g[n].reason = k->reason;
            g[n].reason_text = skip_reason_text(k);
            g[n].command = k->command;
            g[n].rule = k->rule;
            n++;
        }
        if (k->gpu_index < 0) {
            g[j].host = true;
        } else {
            xgrow(&g[j].gpus, &g[j].cap_gpus, g[j].n_gpus + 1, sizeof(*g[j].gpus));
            g[j].gpus[g[j].n_gpus++] = k->gpu_index;
        }
    }
    /* Sorted, then each GPU once: n log n however many GPUs a machine has. */
    for (size_t j = 0; j < n; j++) {
        size_t kept = 0;

        if (g[j].n_gpus > 1) /* qsort must not get the NULL of an empty list */
            qsort(g[j].gpus, g[j].n_gpus, sizeof(g[j].gpus[0]), cmp_i32);
        for (size_t m = 0; m < g[j].n_gpus; m++) {
            if (kept == 0 || g[j].gpus[kept - 1] != g[j].gpus[m])
                g[j].gpus[kept++] = g[j].gpus[m];
        }
        g[j].n_gpus = kept;
    }
    return n;
}

static bool same_scope(const struct skip_group *a, const struct skip_group *b)
{
    return a->host == b->host && a->n_gpus == b->n_gpus &&
           (a->n_gpus == 0 || memcmp(a->gpus, b->gpus, a->n_gpus * sizeof(a->gpus[0])) == 0) &&
           strcmp(a->reason, b->reason) == 0;
}

void render_not_checked(FILE *out, const struct snapshot *s, const struct findings *f,
                        const struct render_opts *ro)
{
    /* Nothing about GPUs could be established: which rules did not run is noise then. */
    char *cannot = rules_cannot_check(s, f, false);
    size_t n_skips = cannot ? 0 : f->n_skips;
    struct skip_group *groups = xcalloc(n_skips ? n_skips : 1, sizeof(*groups));
    size_t n = group_skips(f, groups, n_skips), lines = 0, more = 0;
    bool *done = xcalloc(n ? n : 1, sizeof(*done)), header = false;

    free(cannot);

#define HEADER()                                                                                   \
    do {                                                                                           \
        if (!header)                                                                               \
            fprintf(out, _("\n%sNot checked%s\n"), render_bold(ro), render_reset(ro));             \
        header = true;                                                                             \
    } while (0)
    /* One line per (reason, GPUs), naming every rule it stopped. */
    for (size_t i = 0; i < n; i++) {
        char line[512], where[160];
        size_t len;

        if (done[i])
            continue;
        if (lines >= MAX_NOT_CHECKED) {
            more++;
            continue;
        }
        where[0] = '\0';
        if (groups[i].n_gpus) {
            char list[128];

            render_ranges(list, sizeof(list), groups[i].gpus, groups[i].n_gpus);
            snprintf(where, sizeof(where), _(" on GPU%s %s"), groups[i].n_gpus == 1 ? "" : "s",
                     list);
        }
        len = (size_t)snprintf(line, sizeof(line), _("%s%s:"), groups[i].reason_text, where);
        for (size_t j = i; j < n && len < sizeof(line); j++) {
            if (j == i || (!done[j] && same_scope(&groups[i], &groups[j]))) {
                len += (size_t)snprintf(line + len, sizeof(line) - len, "%s %s", j == i ? "" : ",",
                                        groups[j].rule->id);
                done[j] = true;
            }
        }
        /* Evidence imported (no root read live): which command would supply what it lacks. */
        if (s->root == NULL && groups[i].command != NULL && len < sizeof(line))
            snprintf(line + len, sizeof(line) - len,
                     strncmp(groups[i].command, "gpudoctor ", 10) == 0
                         ? _(" (needs `%s` run on the server itself)")
                         : _(" (run `%s` for it)"),
                     groups[i].command);
        HEADER();
        fprintf(out, "  ");
        render_wrap(out, ro, 2, 4, line);
        lines++;
    }
    if (more)
        fprintf(out, _("  ... %zu more (gpudoctor check --json lists them all)\n"), more);
    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        const struct collector_status *c = &s->collectors[i];
        char line[512];

        if (c->state == CS_OK || (c->state == CS_NOT_RUN && c->n_notes == 0))
            continue;
        HEADER();
        if (c->detail != NULL)
            snprintf(line, sizeof(line), _("collector %s: %s: %s"), collector_names[i],
                     _(collector_state_words[c->state]), collector_detail_text(c));
        else
            snprintf(line, sizeof(line), _("collector %s: %s"), collector_names[i],
                     _(collector_state_words[c->state]));
        fprintf(out, "  ");
        render_wrap(out, ro, 2, 4, line);
        for (size_t k = 0; k < c->n_notes && k < 3; k++) {
            fprintf(out, "    ");
            render_wrap(out, ro, 4, 6, collector_note_text(c, k));
        }
        if (c->n_notes > 3)
            fprintf(out, _("    (%zu more notes in the snapshot)\n"), c->n_notes - 3);
    }
#undef HEADER
    for (size_t i = 0; i < n; i++)
        free(groups[i].gpus);
    free(done);
    free(groups);
}

void render_report(FILE *out, const struct snapshot *s, const struct findings *f,
                   const struct render_opts *ro)
{
    verdict_line(out, s, f, ro);
    if (findings_lead(f) != NULL) { /* the acknowledged have their own section */
        fputc('\n', out);
        render_findings(out, f, ro);
    }
    render_acknowledged(out, f, ro);
    if (s->n_gpus > 0) {
        fputc('\n', out);
        render_gpu_table(out, s, ro);
        fputc('\n', out);
        render_gpu_processes(out, s, ro);
    }
    render_not_checked(out, s, f, ro);
    render_state_note(out, s, ro);
    if (f->n > 0)
        fprintf(out,
                _("\n%sgpudoctor explain ID tells what a finding means and how it was "
                  "detected.%s\n"),
                render_dim(ro), render_reset(ro));
}
