/*
 * The full-screen view of watch (ncursesw): its life (start, resize, stop) and the layout of a
 * frame. The parts, one file each: tui-header.c (title and status line), tui-gpus.c (the GPU
 * table), tui-fabric.c (NVLink and InfiniBand under it), tui-findings.c, tui-procs.c (the two
 * lists), tui-dialogs.c (explain, help, the question of r), tui-keys.c (input), tui-text.c (text
 * that fits), tui-terminal.c (the terminal restored on every way out); tui-internal.h the state
 * they share.
 *
 * No flicker: every frame is drawn into ncurses' virtual screen and sent with one refresh, which
 * transmits only what changed. The terminal is restored on every way out: q, SIGINT, SIGTERM,
 * SIGHUP (the main loop ends normally), and crashes (tui-terminal.c).
 */
#include "render/text.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define MIN_COLS 80
#define MIN_ROWS 16 /* the GPUs then get a few rows and say how many more there are */

int tui_draw(struct watch_ui *ui, const struct watch_view *v)
{
    struct tui *t = ui->state;
    int y, rest, gpu_rows, n_gpus, proc_rows, find_rows, fabric_rows;

    tui_build_procs(t, v->snap);
    tui_build_finds(t, v);
    erase();
    if (t->mode == MODE_PAGE) {
        tui_draw_page(t, t->page_title, t->page, t->n_page, t->page_top);
        refresh();
        return 0;
    }
    if (COLS < MIN_COLS || LINES < MIN_ROWS) {
        tui_putf(t, 0, 0, COLS, true, _("terminal %dx%d: gpudoctor watch needs %dx%d (q quits)"),
                 COLS, LINES, MIN_COLS, MIN_ROWS);
        refresh();
        return 0;
    }
    tui_draw_title(t, v);
    n_gpus = v->hist->n ? (int)v->hist->samples[v->hist->n - 1].n_gpus : 0;
    /* GPUs first (a third of the screen at least) with the fabric under them, then findings and
     * processes share the rest. */
    fabric_rows = tui_fabric_rows(v);
    gpu_rows = 1 + (n_gpus > 0 ? n_gpus : 1);
    if (gpu_rows > LINES - 12 - fabric_rows)
        gpu_rows = LINES - 12 - fabric_rows;
    y = 1;
    y += tui_draw_gpus(t, v, y, gpu_rows);
    y += tui_draw_fabric(t, v, y, fabric_rows) + 1;
    rest = LINES - 1 - y;
    find_rows = 1 + (int)(t->n_finds ? t->n_finds : 1);
    proc_rows = 1 + (int)(t->n_procs ? t->n_procs : 1);
    if (find_rows + proc_rows + 1 > rest) {
        /* Both lists get at least 4 rows; findings get what they need of half the rest. */
        int half = (rest - 1) / 2;

        if (find_rows > half && proc_rows > rest - 1 - half)
            find_rows = half;
        else if (find_rows > half)
            find_rows = rest - 1 - proc_rows;
        if (find_rows < 4)
            find_rows = 4;
        proc_rows = rest - 1 - find_rows;
    }
    y += tui_draw_finds(t, v, y, find_rows) + 1;
    tui_draw_procs(t, v, y, proc_rows);
    tui_draw_status(t, v);
    if (t->mode == MODE_CONFIRM)
        tui_draw_confirm(t);
    refresh();
    return 0;
}

static void resize(struct watch_ui *ui, const struct watch_view *v)
{
    struct winsize ws;

    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resize_term(ws.ws_row, ws.ws_col);
    clearok(curscr, TRUE);
    tui_draw(ui, v);
}

static void stop(struct watch_ui *ui)
{
    struct tui *t = ui->state;

    if (t == NULL)
        return;
    if (t->active) {
        endwin();
        t->active = false;
        tui_crash_disarm();
    }
    tui_release_stderr(t);
    tui_page_free(t);
    tui_confirm_free(t);
    free(t->procs);
    tui_finds_free(t);
    free(t->sel_key);
    free(t->message);
    free(t);
    ui->state = NULL;
}

int watch_tui_start(struct watch_ui *ui, const struct watch_opts *o, char **cause)
{
    const char *no_color = getenv("NO_COLOR");
    struct tui *t;

    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        *cause = xstrdup(_("the live view needs a terminal: use --plain for logs and pipes"));
        return -1;
    }
    t = xcalloc(1, sizeof(*t));
    t->o = o;
    t->sel_pid = -1;
    t->saved_stderr = t->capture_fd = -1;
    t->utf8 = !o->ascii && render_locale_utf8();
    if (tui_save_termios() != 0) {
        *cause = xasprintf(_("cannot read the terminal settings: %s"), strerror(errno));
        free(t);
        return -1;
    }
    if (newterm(NULL, stdout, stdin) == NULL) {
        *cause = xasprintf(_("cannot start the terminal (TERM=%s)"),
                           getenv("TERM") ? getenv("TERM") : "unset");
        free(t);
        return -1;
    }
    t->active = true;
    tui_crash_arm();
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    t->color = has_colors() && !o->no_color && !(no_color && *no_color);
    if (t->color) {
        start_color();
        use_default_colors();
        init_pair(PAIR_RED, COLOR_RED, -1);
        init_pair(PAIR_YELLOW, COLOR_YELLOW, -1);
        init_pair(PAIR_CYAN, COLOR_CYAN, -1);
        init_pair(PAIR_GREEN, COLOR_GREEN, -1);
        init_pair(PAIR_DIM, COLOR_WHITE, -1);
    }
    tui_capture_stderr(t);
    ui->input_fd = STDIN_FILENO;
    ui->state = t;
    ui->draw = tui_draw;
    ui->input = tui_input;
    ui->resize = resize;
    ui->stop = stop;
    return 0;
}
