/*
 * The live view's top and bottom lines: the title bar (host, time of the reading, interval,
 * history, and the count of critical and warning findings, and of acknowledged ones when there
 * are any) and the status line (the pane with
 * the focus, then the latest message, collection problems, alerts and recording, else the keys).
 */
#include "render/format.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void tui_message(struct tui *t, int64_t now_ms, const char *fmt, ...)
{
    va_list ap;

    free(t->message);
    va_start(ap, fmt);
    t->message = xvasprintf(_(fmt), ap);
    va_end(ap);
    t->message_until = now_ms + 8000;
}

void tui_draw_title(struct tui *t, const struct watch_view *v)
{
    char when[16] = "--:--:--", every[16], hist[16];
    size_t crit = v->findings ? findings_count(v->findings, SEV_CRITICAL) : 0;
    size_t warn = v->findings ? findings_count(v->findings, SEV_WARNING) : 0;
    size_t acked = v->findings ? findings_acked(v->findings) : 0;
    int x;

    if (v->snap) {
        time_t tt = (time_t)(v->snap->time_ms / 1000);
        struct tm tm;

        localtime_r(&tt, &tm);
        strftime(when, sizeof(when), "%H:%M:%S", &tm);
    }
    render_duration(every, sizeof(every), (double)t->o->interval_ms / 1000.0);
    render_duration(
        hist, sizeof(hist),
        v->hist && v->hist->n > 1
            ? (double)(v->hist->samples[v->hist->n - 1].t_ms - v->hist->samples[0].t_ms) / 1000.0
            : 0);
    tui_on(t, 0, A_REVERSE);
    tui_putf(t, 0, 0, COLS, true, _(" gpudoctor watch  %s  %s  every %s  history %s  %s"),
             v->snap && v->snap->hostname ? v->snap->hostname : "", when,
             t->o->interval_ms < 1000 ? "<1s" : every, hist, _("q quit  ? help"));
    x = COLS - 26;
    if (x > 40) {
        if (crit)
            tui_on(t, PAIR_RED, A_REVERSE | A_BOLD);
        tui_putf(t, 0, x, 12, true, _("%3zu critical"), crit);
        tui_on(t, warn ? PAIR_YELLOW : 0, A_REVERSE | (warn ? A_BOLD : 0));
        tui_putf(t, 0, x + 12, 13, true, _("%3zu warning "), warn);
        if (acked > 0 && x - 10 > 40) { /* not counted, but there: ack --list tells which */
            tui_on(t, 0, A_REVERSE | A_DIM);
            tui_putf(t, 0, x - 10, 10, true, _("%3zu acked"), acked);
        }
    }
    tui_on(t, 0, 0);
}

void tui_draw_status(struct tui *t, const struct watch_view *v)
{
    char line[1024];
    size_t len, head;

    /* The pane with the focus, named first: what the keys act on. */
    head = len = (size_t)snprintf(line, sizeof(line), "[%s] ",
                                  t->focus == FOCUS_PROCS ? _("processes") : _("findings"));
    if (t->message && v->now_ms < t->message_until)
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s", t->message);
    if (v->problem && len < sizeof(line))
        len += (size_t)snprintf(line + len, sizeof(line) - len, _("%scollection failed: %s"),
                                len > head ? " | " : "", v->problem);
    if (v->alert_msg && len < sizeof(line))
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", len > head ? " | " : "",
                                v->alert_msg);
    if (v->record_msg && len < sizeof(line))
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s%s", len > head ? " | " : "",
                                v->record_msg);
    if (len == head)
        snprintf(line + len, sizeof(line) - len, "%s",
                 t->focus == FOCUS_PROCS
                     ? _("j/k select  s sort  e explain  r end process  Tab findings  q quit")
                     : _("j/k select  PgDn  e explain  Tab processes  ? help  q quit"));
    tui_on(t, 0, A_REVERSE);
    tui_put(t, LINES - 1, 0, COLS, line, true);
    tui_on(t, 0, 0);
}
