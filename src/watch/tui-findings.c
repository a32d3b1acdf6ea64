/*
 * The live view's findings pane: the findings of the latest judgement, new ones marked "+", the
 * acknowledged ones (`gpudoctor ack`) after them, dimmed and marked "ack", and those that cleared
 * recently kept a while, dimmed; the selection kept across refreshes by rule, subject and rank;
 * the header says how much of the list is shown, how many are acknowledged, and how to see the
 * rest.
 */
#include "render/format.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * How much of the findings the pane shows and how to see the rest: "(12)" when it shows them
 * all, else "1-4 of 12: 8 more below (j/PgDn)", with Tab first when the pane lacks the focus.
 */
static void finds_extent(char *buf, size_t size, size_t top, size_t shown, size_t n, size_t acked,
                         bool focused)
{
    size_t end = top + shown < n ? top + shown : n;
    const char *keys = focused ? "" : _("Tab, then ");
    char ack[40] = "";

    if (acked > 0)
        snprintf(ack, sizeof(ack), _(", %zu acknowledged"), acked);
    if (n <= shown)
        snprintf(buf, size, "(%zu%s)", n, ack);
    else if (top > 0 && end < n)
        snprintf(buf, size, _("%zu-%zu of %zu%s: %zu above, %zu below (%sk/j, PgUp/PgDn)"), top + 1,
                 end, n, ack, top, n - end, keys);
    else if (top > 0)
        snprintf(buf, size, _("%zu-%zu of %zu%s: %zu more above (%sk/PgUp)"), top + 1, end, n, ack,
                 top, keys);
    else
        snprintf(buf, size, _("%zu-%zu of %zu%s: %zu more below (%sj/PgDn)"), top + 1, end, n, ack,
                 n - end, keys);
}

static int sev_pair(enum severity s)
{
    return s == SEV_CRITICAL ? PAIR_RED : s == SEV_WARNING ? PAIR_YELLOW : PAIR_CYAN;
}

static const char *sev_tag(enum severity s)
{
    /* TRANSLATORS: severity tags in watch's findings pane: at most 5 columns. */
    return render_fit(s == SEV_CRITICAL  ? N_("CRIT")
                      : s == SEV_WARNING ? N_("WARN")
                                         : N_("INFO"),
                      5);
}

static char *frow_key(const struct frow *r)
{
    char *subject, *key;

    if (r->f == NULL)
        return xasprintf("%s cleared", r->mk->key);
    subject = subject_key(&r->f->subject);
    key = xasprintf("%s %s", r->f->rule->id, subject);
    free(subject);
    return key;
}

void tui_finds_free(struct tui *t)
{
    for (size_t i = 0; i < t->n_finds; i++)
        free(t->finds[i].key);
    free(t->finds);
    t->finds = NULL;
    t->n_finds = 0;
}

void tui_build_finds(struct tui *t, const struct watch_view *v)
{
    size_t n = 0;

    tui_finds_free(t);
    t->finds = xcalloc((v->findings ? v->findings->n : 0) + (v->marks ? v->marks->n : 0) + 1,
                       sizeof(*t->finds));
    /* Those that count first, then the acknowledged: shown in that order, the list untouched. */
    for (int acked = 0; acked < 2; acked++) {
        for (size_t i = 0; v->findings && i < v->findings->n; i++) {
            if ((v->findings->items[i].ack != NULL) != acked)
                continue;
            t->finds[n].f = &v->findings->items[i];
            t->finds[n++].mk = v->marks ? watch_marks_find(v->marks, &v->findings->items[i]) : NULL;
        }
    }
    for (size_t i = 0; v->marks && i < v->marks->n; i++) {
        if (v->marks->items[i].cleared_ms >= 0) {
            t->finds[n].f = NULL;
            t->finds[n++].mk = &v->marks->items[i];
        }
    }
    t->n_finds = n;
    /* Two findings of one rule about one GPU (two Xid codes) differ by their rank. */
    for (size_t i = 0; i < n; i++) {
        char *base = frow_key(&t->finds[i]);
        size_t same = 0;

        for (size_t k = 0; k < i; k++)
            same += strncmp(t->finds[k].key, base, strlen(base)) == 0 &&
                    t->finds[k].key[strlen(base)] == '#';
        t->finds[i].key = xasprintf("%s#%zu", base, same);
        free(base);
    }
    for (size_t i = 0; t->sel_key && i < n; i++) {
        if (strcmp(t->finds[i].key, t->sel_key) == 0)
            t->sel_find = i;
    }
    if (t->sel_find >= n)
        t->sel_find = n ? n - 1 : 0;
    free(t->sel_key);
    t->sel_key = n ? xstrdup(t->finds[t->sel_find].key) : NULL;
}

int tui_draw_finds(struct tui *t, const struct watch_view *v, int y, int rows)
{
    size_t top = 0, shown;
    size_t id_w = 12;
    int title_x;
    bool focused = t->focus == FOCUS_FINDINGS;
    char extent[192];

    if (rows <= 0)
        return 0;
    /* The id column as wide as the longest id listed, so titles get the rest. */
    for (size_t i = 0; i < t->n_finds; i++) {
        size_t n = strlen(t->finds[i].f ? t->finds[i].f->rule->id : t->finds[i].mk->id);

        id_w = n > id_w ? n : id_w;
    }
    id_w = id_w > 28 ? 28 : id_w;
    title_x = 6 + 1 + (int)id_w + 1;
    shown = (size_t)(rows - 1);
    if (t->sel_find >= shown)
        top = t->sel_find - shown + 1;
    finds_extent(extent, sizeof(extent), top, shown, t->n_finds,
                 v->findings ? findings_acked(v->findings) : 0, focused);
    tui_pane_header(t, focused);
    tui_putf(t, y, 0, COLS, true, "%s%-5s %s %s", tui_focus_mark(focused), "", _("FINDINGS"),
             t->n_finds ? extent : "");
    tui_on(t, 0, 0);
    if (t->n_finds == 0 && rows > 1) {
        tui_on(t, PAIR_GREEN, 0);
        tui_put(t, y + 1, 0, COLS, v->snap ? "  nothing wrong found" : "  collecting...", true);
        tui_on(t, 0, 0);
        return 2;
    }
    for (size_t i = top; i < t->n_finds && i - top < shown; i++) {
        const struct frow *r = &t->finds[i];
        bool sel = i == t->sel_find, isnew, acked = r->f && r->f->ack;
        int row = y + 1 + (int)(i - top);
        enum severity sev = r->f ? r->f->severity : r->mk->severity;
        const char *id = r->f ? r->f->rule->id : r->mk->id;

        /* New: appeared after the first reading, and recently. */
        isnew = r->f && r->mk && v->hist->n > 0 && r->mk->since_ms > v->hist->samples[0].t_ms &&
                v->now_ms - r->mk->since_ms < WATCH_NEW_SHOW_MS;
        if (sel && t->focus == FOCUS_FINDINGS)
            tui_on(t, 0, A_REVERSE);
        else if (r->f == NULL || acked)
            tui_on(t, PAIR_DIM, A_DIM);
        tui_putf(t, row, 0, 2, true, "%c", sel ? '>' : ' ');
        if (r->f != NULL && !acked && !(sel && t->focus == FOCUS_FINDINGS))
            tui_on(t, sev_pair(sev), A_BOLD);
        tui_put(t, row, 1, 5,
                acked  ? render_fit(N_("ack"), 5)
                : r->f ? sev_tag(sev)
                       : render_fit(N_("ok"), 5),
                true);
        if (r->f != NULL && !acked && !(sel && t->focus == FOCUS_FINDINGS))
            tui_on(t, 0, isnew ? A_BOLD : 0);
        tui_putf(t, row, 6, title_x - 6, true, "%s%s", isnew ? "+" : " ", id);
        if (acked)
            tui_putf(t, row, title_x, COLS - title_x, true, _("acknowledged%s%s: %s"),
                     r->f->ack->note ? " " : "", r->f->ack->note ? r->f->ack->note : "",
                     r->f->title ? finding_title_text(r->f) : _(r->f->rule->title));
        else if (r->f)
            tui_put(t, row, title_x, COLS - title_x,
                    r->f->title ? finding_title_text(r->f) : _(r->f->rule->title), true);
        else
            tui_putf(t, row, title_x, COLS - title_x, true, _("cleared %.0fs ago: %s"),
                     (double)(v->now_ms - r->mk->cleared_ms) / 1000.0, r->mk->title);
        tui_on(t, 0, 0);
    }
    return 1 + (int)(t->n_finds - top < shown ? t->n_finds - top : shown);
}
