/*
 * What opens over the live view: the pages (explain: a finding with its rule's explanation,
 * detection and fix; help: the keys) and the question of `r` (end the selected process as reap
 * would: what it will send, asked first, then done and said).
 */
#include "render/text.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tui_draw_page(struct tui *t, const char *title, char **text, size_t n, size_t top)
{
    tui_on(t, 0, A_REVERSE);
    tui_putf(t, 0, 0, COLS, true, " %s", title);
    tui_on(t, 0, 0);
    for (int row = 1; row < LINES - 1; row++) {
        size_t i = top + (size_t)row - 1;

        move(row, 0);
        clrtoeol();
        if (i < n)
            tui_put(t, row, 0, COLS, text[i], false);
    }
    tui_on(t, 0, A_REVERSE);
    tui_putf(t, LINES - 1, 0, COLS, true,
             " line %zu of %zu   arrows, PgUp, PgDn scroll   q, Esc close", n ? top + 1 : 0, n);
    tui_on(t, 0, 0);
}

/* The question of `r`: a reverse-video box over the middle of the view. */
void tui_draw_confirm(struct tui *t)
{
    int w = COLS - 8 < 76 ? COLS - 8 : 76, h = (int)t->n_confirm + 3;
    int y0 = LINES > h ? (LINES - h) / 2 : 0, x0 = (COLS - w) / 2;

    tui_on(t, 0, A_REVERSE);
    for (int r = 0; r < h && y0 + r < LINES - 1; r++)
        tui_put(t, y0 + r, x0, w, "", true);
    tui_on(t, 0, A_REVERSE | A_BOLD);
    tui_put(t, y0, x0, w, " End this process?", true);
    tui_on(t, 0, A_REVERSE);
    for (size_t i = 0; i < t->n_confirm && y0 + 2 + (int)i < LINES - 1; i++)
        tui_putf(t, y0 + 2 + (int)i, x0, w, true, "  %s", t->confirm[i]);
    tui_on(t, 0, 0);
}

void tui_page_free(struct tui *t)
{
    for (size_t i = 0; i < t->n_page; i++)
        free(t->page[i]);
    free(t->page);
    free(t->page_title);
    t->page = NULL;
    t->n_page = t->page_top = 0;
    t->page_title = NULL;
}

static void page_from_text(struct tui *t, const char *title, const char *text)
{
    tui_page_free(t);
    t->page_title = xstrdup(title);
    for (const char *s = text; *s;) {
        const char *nl = strchr(s, '\n');
        size_t n = nl ? (size_t)(nl - s) : strlen(s);

        t->page = xreallocarray(t->page, t->n_page + 1, sizeof(*t->page));
        t->page[t->n_page++] = xstrndup(s, n);
        s += n + (nl ? 1 : 0);
    }
    t->mode = MODE_PAGE;
}

static void section(FILE *out, const struct render_opts *ro, const char *head, const char *text)
{
    fprintf(out, "\n%s\n  ", head);
    render_wrap(out, ro, 2, 2, text);
}

void tui_explain(struct tui *t, const struct watch_view *v)
{
    const struct finding *f = NULL;
    const struct rule *r = NULL;
    struct render_opts ro = { false, (unsigned)(COLS > 20 ? COLS - 2 : 78), false };
    char *text = NULL, *title;
    size_t len = 0;
    FILE *out;

    if (t->focus == FOCUS_FINDINGS && t->sel_find < t->n_finds) {
        f = t->finds[t->sel_find].f;
        r = f ? f->rule : rule_find(t->finds[t->sel_find].mk->id);
    } else if (t->focus == FOCUS_PROCS && t->sel_proc < t->n_procs) {
        for (size_t i = 0; i < t->n_finds && f == NULL; i++) {
            if (t->finds[i].f && t->finds[i].f->subject.pid == t->procs[t->sel_proc].pid)
                f = t->finds[i].f;
        }
        if (f == NULL) {
            tui_message(t, v->now_ms, "no finding about pid %d", (int)t->procs[t->sel_proc].pid);
            return;
        }
        r = f->rule;
    }
    if (r == NULL) {
        tui_message(t, v->now_ms, "no finding selected");
        return;
    }
    out = open_memstream(&text, &len);
    if (out == NULL)
        fatal("out of memory opening a string stream");
    if (f != NULL) {
        struct findings one = { 0 };

        one.items = (struct finding *)f;
        one.n = 1;
        render_findings(out, &one, &ro);
    } else {
        fprintf(out, _("%s: cleared (no longer found)\n"), r->id);
    }
    section(out, &ro, _("What it means"), _(r->explanation));
    section(out, &ro, _("How it is detected"), _(r->detection));
    section(out, &ro, _("How to fix it"), _(r->fix));
    if (fclose(out) != 0)
        fatal("out of memory writing an explanation");
    title = xasprintf("explain %s: %s", r->id, _(r->title));
    page_from_text(t, title, text);
    free(title);
    free(text);
}

void tui_help(struct tui *t)
{
    page_from_text(t, _("gpudoctor watch: keys"),
                   /* xgettext:no-c-format */
                   _("  q          quit (also Ctrl-C)\n"
                     "  s          sort the processes: memory, SM %, CPU %, pid, age\n"
                     "  Tab        switch between the process list and the findings: the one\n"
                     "             with the focus has its header reversed and marked, and the\n"
                     "             status line starts with its name\n"
                     "  Up, Down   select (also k, j); PgUp, PgDn: ten at a time. A list's\n"
                     "             header says which of its rows are shown, and how many more\n"
                     "             lie above and below\n"
                     "  e, Enter   explain the selected finding (in the process list: the first\n"
                     "             finding about the selected process)\n"
                     "  r          end the selected process, as 'gpudoctor reap --pid PID --kill'\n"
                     "             would: shows what it will send and asks first; only the same\n"
                     "             process (pid and start time) gets SIGTERM, SIGKILL 3 s later\n"
                     "  ?          this help\n"
                     "\n"
                     "Findings marked + appeared in the last seconds; 'ok' rows cleared recently.\n"
                     "The findings judge the last --window of readings; trends (leaks, swings,\n"
                     "throttling, heating, idle GPUs holding memory) the whole --history.\n"
                     "Graphs: one cell per reading, newest on the right.\n"));
}

void tui_confirm_free(struct tui *t)
{
    for (size_t i = 0; i < t->n_confirm; i++)
        free(t->confirm[i]);
    free(t->confirm);
    t->confirm = NULL;
    t->n_confirm = 0;
}

static void confirm_line(struct tui *t, char *line)
{
    t->confirm = xreallocarray(t->confirm, t->n_confirm + 1, sizeof(*t->confirm));
    t->confirm[t->n_confirm++] = line;
}

/* Wraps text into confirmation lines of at most width columns. */
static void confirm_wrapped(struct tui *t, const char *text, size_t width)
{
    while (strlen(text) > width) {
        size_t cut = width;

        while (cut > 0 && text[cut] != ' ')
            cut--;
        if (cut == 0)
            cut = width;
        confirm_line(t, xstrndup(text, cut));
        text += cut;
        while (*text == ' ')
            text++;
    }
    confirm_line(t, xstrdup(text));
}

void tui_ask_reap(struct tui *t, const struct watch_view *v)
{
    const struct prow *r;
    char cmd[64], mem[16] = "?", *detail = NULL;
    uint64_t plan_id;

    if (t->focus != FOCUS_PROCS || t->sel_proc >= t->n_procs) {
        tui_message(t, v->now_ms, "select a process first (Tab to the process list)");
        return;
    }
    r = &t->procs[t->sel_proc];
    if (r->p == NULL || !proc_has(r->p, PROC_S_START_TICKS)) {
        tui_message(t, v->now_ms, "pid %d is not in /proc here: it cannot be verified",
                    (int)r->pid);
        return;
    }
    /* What reap would do, or why it will not: nothing to confirm then. */
    if (watch_reap_plan(t->o, v->snap, r->pid, r->p->start_ticks, &plan_id, &detail) != 0) {
        tui_message(t, v->now_ms, "pid %d: %s", (int)r->pid, detail);
        free(detail);
        return;
    }
    tui_confirm_free(t);
    t->target_pid = r->pid;
    t->target_start = r->p->start_ticks;
    t->target_plan = plan_id;
    if (r->used_valid)
        render_bytes(mem, sizeof(mem), r->used);
    watch_reap_command(cmd, sizeof(cmd), r->pid);
    confirm_line(t, xasprintf("pid %d  %s  %s", (int)r->pid, r->p->user ? r->p->user : "?",
                              r->p->cmdline ? r->p->cmdline
                              : r->p->comm  ? r->p->comm
                                            : "?"));
    confirm_line(t, xasprintf(_("holds %s of GPU memory, state %s"), mem, tui_state_word(r->p)));
    confirm_line(t, xstrdup(""));
    confirm_line(t, xasprintf("    %s", cmd));
    confirm_line(t, xstrdup(""));
    confirm_wrapped(t, detail, COLS > 20 ? (size_t)COLS - 16 : 60);
    confirm_line(t, xstrdup(_("only if it is still this process (pid and start time).")));
    confirm_line(t, xstrdup(_("Send it?  y = yes, any other key = no")));
    free(detail);
    t->mode = MODE_CONFIRM;
}

void tui_do_reap(struct tui *t, struct watch_ui *ui, const struct watch_view *v)
{
    char *detail = NULL;
    int rc;

    /* reap waits for the process to end: say so while it does. */
    tui_confirm_free(t);
    t->mode = MODE_MAIN;
    tui_message(t, v->now_ms,
                "ending pid %d: SIGTERM, SIGKILL after %.0f s if it is still there...",
                (int)t->target_pid, WATCH_REAP_GRACE_MS / 1000.0);
    tui_draw(ui, v);
    rc = watch_reap(t->o, v->snap, t->target_pid, t->target_start, t->target_plan, &detail);
    tui_message(t, v->now_ms, rc == 0 ? N_("pid %d ended: %s") : N_("pid %d not ended: %s"),
                (int)t->target_pid, detail);
    free(detail);
}
