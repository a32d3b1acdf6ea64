/*
 * The live view's keys: q quit, s sort, Tab switch list, arrows or j/k (PgUp, PgDn) select, e or
 * Enter explain, r end the selected process, ? help, Ctrl-L redraw; on a page, scrolling and
 * closing; in the question of r, y and anything else.
 */
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <stdlib.h>

static const char *const sort_names[] = { "memory", "SM %", "CPU %", "pid", "age" };

static void move_sel(struct tui *t, int delta)
{
    size_t *sel = t->focus == FOCUS_PROCS ? &t->sel_proc : &t->sel_find;
    size_t n = t->focus == FOCUS_PROCS ? t->n_procs : t->n_finds;

    if (n == 0)
        return;
    if (delta < 0 && *sel < (size_t)-delta)
        *sel = 0;
    else if (delta > 0 && *sel + (size_t)delta >= n)
        *sel = n - 1;
    else
        *sel = (size_t)((long)*sel + delta);
    if (t->focus == FOCUS_PROCS) {
        t->sel_pid = t->procs[t->sel_proc].pid;
    } else {
        free(t->sel_key);
        t->sel_key = xstrdup(t->finds[t->sel_find].key);
    }
}

enum watch_input tui_input(struct watch_ui *ui, const struct watch_view *v)
{
    struct tui *t = ui->state;
    int ch;
    bool redraw = false;

    while ((ch = getch()) != ERR) {
        redraw = true;
        if (t->mode == MODE_CONFIRM) {
            if (ch == 'y' || ch == 'Y') {
                tui_do_reap(t, ui, v);
            } else {
                tui_message(t, v->now_ms, "cancelled: nothing sent");
                tui_confirm_free(t);
            }
            t->mode = MODE_MAIN;
            continue;
        }
        if (t->mode == MODE_PAGE) {
            int page = LINES > 4 ? LINES - 3 : 1;

            switch (ch) {
            case 'q':
            case 27:
            case 'e':
            case '\n':
            case KEY_ENTER:
            case '?':
                tui_page_free(t);
                t->mode = MODE_MAIN;
                break;
            case KEY_DOWN:
            case 'j':
                if (t->page_top + 1 < t->n_page)
                    t->page_top++;
                break;
            case KEY_UP:
            case 'k':
                if (t->page_top > 0)
                    t->page_top--;
                break;
            case KEY_NPAGE:
            case ' ':
                t->page_top = t->page_top + (size_t)page < t->n_page ? t->page_top + (size_t)page
                                                                     : t->page_top;
                break;
            case KEY_PPAGE:
                t->page_top = t->page_top > (size_t)page ? t->page_top - (size_t)page : 0;
                break;
            }
            continue;
        }
        switch (ch) {
        case 'q':
        case 'Q':
            return WATCH_QUIT;
        case 's':
            t->sort = (enum sort_key)((t->sort + 1) % SORT__COUNT);
            tui_message(t, v->now_ms, "processes sorted by %s", sort_names[t->sort]);
            break;
        case '\t':
            t->focus = t->focus == FOCUS_PROCS ? FOCUS_FINDINGS : FOCUS_PROCS;
            break;
        case KEY_DOWN:
        case 'j':
            move_sel(t, 1);
            break;
        case KEY_UP:
        case 'k':
            move_sel(t, -1);
            break;
        case KEY_NPAGE:
            move_sel(t, 10);
            break;
        case KEY_PPAGE:
            move_sel(t, -10);
            break;
        case 'e':
        case '\n':
        case '\r':
        case KEY_ENTER:
            tui_explain(t, v);
            break;
        case 'r':
            tui_ask_reap(t, v);
            break;
        case '?':
        case 'h':
            tui_help(t);
            break;
        case 12: /* Ctrl-L */
            clearok(curscr, TRUE);
            break;
        default:
            break;
        }
    }
    if (redraw)
        tui_draw(ui, v);
    return WATCH_CONTINUE;
}
