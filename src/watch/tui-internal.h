/*
 * What the parts of the live view share (src/watch/tui*.c, and only they): its state, the rows
 * of its two lists, and the functions one part calls in another. tui.c says which part is where.
 */
#ifndef GPUDOCTOR_TUI_INTERNAL_H
#define GPUDOCTOR_TUI_INTERNAL_H

#include "watch/watch.h"

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { PAIR_RED = 1, PAIR_YELLOW, PAIR_CYAN, PAIR_GREEN, PAIR_DIM };

enum sort_key { SORT_MEM, SORT_SM, SORT_CPU, SORT_PID, SORT_AGE, SORT__COUNT };

enum mode { MODE_MAIN, MODE_PAGE, MODE_CONFIRM };
enum focus { FOCUS_PROCS, FOCUS_FINDINGS };

/* One row of the process list. */
struct prow {
    int32_t pid;
    const struct proc *p; /* NULL: NVML lists it, /proc does not show it */
    uint64_t used;
    bool used_valid;
    uint32_t sm;
    bool sm_valid;
    int32_t gpus[16];
    size_t n_gpus;
};

/* One row of the findings list: a live finding, or a mark of one that cleared. */
struct frow {
    const struct finding *f;     /* NULL for a cleared one */
    const struct watch_mark *mk; /* may be NULL for a live one */
    char *key; /* rule, subject and rank among equals: keeps the selection across refreshes */
};

struct tui {
    const struct watch_opts *o;
    bool utf8, color;
    enum mode mode;
    enum focus focus;
    enum sort_key sort;
    int32_t sel_pid; /* the selected process, kept across refreshes by pid */
    size_t sel_proc; /* its row */
    size_t sel_find; /* the selected finding row */
    char *sel_key;   /* and its key, kept across refreshes */
    struct prow *procs;
    size_t n_procs;
    struct frow *finds;
    size_t n_finds;

    char **page; /* explain and help: lines of text */
    size_t n_page, page_top;
    char *page_title;

    int32_t target_pid; /* the process the confirmation is about */
    uint64_t target_start;
    uint64_t target_plan; /* what the confirmation showed (watch_reap_plan) */
    char **confirm;
    size_t n_confirm;

    char *message;
    int64_t message_until;

    int saved_stderr, capture_fd;
    bool active;
};

/* tui.c: draws the whole frame (what watch's loop calls, and the parts when they must). */
int tui_draw(struct watch_ui *ui, const struct watch_view *v);

/* tui-text.c */
/* Text at (y, x) in at most cols terminal columns, padded with blanks when pad. */
void tui_put(const struct tui *t, int y, int x, int cols, const char *text, bool pad);
void tui_putf(const struct tui *t, int y, int x, int cols, bool pad, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Colour pair (0: none; ignored without colours) and attributes for what is written next. */
void tui_on(const struct tui *t, int pair, attr_t extra);
/* The attributes of a pane's header, and the mark that starts it, by whether it has the focus. */
void tui_pane_header(const struct tui *t, bool focused);
const char *tui_focus_mark(bool focused);

/* tui-header.c */
void tui_draw_title(struct tui *t, const struct watch_view *v);
void tui_draw_status(struct tui *t, const struct watch_view *v);
/* A message for the status line, shown for 8 seconds. */
void tui_message(struct tui *t, int64_t now_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* tui-gpus.c: the GPU table from row y, in at most max_rows rows; returns the rows used. */
int tui_draw_gpus(struct tui *t, const struct watch_view *v, int y, int max_rows);

/* tui-fabric.c: the NVLink and InfiniBand rows under the GPU table (0, 1 or 2 of them). */
int tui_fabric_rows(const struct watch_view *v);
/* From row y, at most max_rows; returns the rows used. */
int tui_draw_fabric(struct tui *t, const struct watch_view *v, int y, int max_rows);

/* tui-procs.c */
/* The rows of the lists from the latest view, the selections kept. */
void tui_build_procs(struct tui *t, const struct snapshot *s);
/* The process list from row y in rows rows (its header included); returns the rows used. */
int tui_draw_procs(struct tui *t, const struct watch_view *v, int y, int rows);
/* "run", "sleep", "STOP"...: a process's state in a word ("?" unknown). */
const char *tui_state_word(const struct proc *p);

/* tui-findings.c */
void tui_build_finds(struct tui *t, const struct watch_view *v);
void tui_finds_free(struct tui *t);
/* The findings pane from row y in rows rows (its header included); returns the rows used. */
int tui_draw_finds(struct tui *t, const struct watch_view *v, int y, int rows);

/* tui-dialogs.c */
void tui_draw_page(struct tui *t, const char *title, char **text, size_t n, size_t top);
void tui_draw_confirm(struct tui *t);
void tui_page_free(struct tui *t);
void tui_confirm_free(struct tui *t);
void tui_explain(struct tui *t, const struct watch_view *v);
void tui_help(struct tui *t);
void tui_ask_reap(struct tui *t, const struct watch_view *v);
void tui_do_reap(struct tui *t, struct watch_ui *ui, const struct watch_view *v);

/* tui-keys.c: reads every key waiting, then draws once. */
enum watch_input tui_input(struct watch_ui *ui, const struct watch_view *v);

/* tui-terminal.c */
int tui_save_termios(void);
void tui_crash_arm(void);
void tui_crash_disarm(void);
void tui_capture_stderr(struct tui *t);
void tui_release_stderr(struct tui *t);

#endif
