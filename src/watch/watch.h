/*
 * `gpudoctor watch`: a live view with history. A collection thread (worker.c) collects every
 * interval, keeping one NVML helper across cycles; the main thread (loop.c) keeps the readings
 * in a history ring, judges each cycle (the rules over the last --window, the trend rules over
 * the whole history), records, runs alerts, and hands a view to a front end: the full-screen
 * terminal view (tui.c, ncursesw) or one line per GPU per interval (plain.c). docs/watch.md
 * describes it for users and maintainers.
 */
#ifndef GPUDOCTOR_WATCH_H
#define GPUDOCTOR_WATCH_H

#include "collect/collect.h"
#include "rules/rules.h"
#include "snapshot/snapshot.h"
#include "watch/alert.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WATCH_DEFAULT_INTERVAL_MS 1000
#define WATCH_DEFAULT_WINDOW_MS   10000
#define WATCH_DEFAULT_HISTORY_MS  (30 * 60 * 1000)
#define WATCH_MAX_HISTORY_ITEMS   100000 /* readings kept at most, whatever --history says */
#define WATCH_MAX_WINDOW_MS       2000   /* a collection's own sampling window, at most */
/* Findings that cleared stay in the view this long, marked as cleared. */
#define WATCH_CLEARED_SHOW_MS 30000
/* The trend rules run this often, and every cycle while the history is shorter than ... */
#define WATCH_TRENDS_EVERY_MS 5000
#define WATCH_TRENDS_SHORT    300 /* ... this many readings (cheap to judge) */
/* Findings that appeared this recently are marked as new. */
#define WATCH_NEW_SHOW_MS 10000

struct watch_opts {
    struct collect_opts collect; /* root, timeout, NVML library, --only */
    const struct rules_config *rules;
    int64_t interval_ms;
    int64_t window_ms;  /* the rules judge the present over this much of the history */
    int64_t history_ms; /* the trend rules look this far back */
    uint64_t count;     /* stop after this many cycles; 0: until asked */
    const char *record_path;
    const char *state_dir; /* the state file's directory (docs/state.md); NULL: off */
    bool plain;
    bool ascii;    /* ASCII graphs even on a UTF-8 terminal */
    bool no_color; /* also NO_COLOR */
    const struct alert_spec *alerts;
    size_t n_alerts;
    int64_t alert_timeout_ms;
};

/* ---- judging a cycle ---- */

/* The rule configuration split in two: base without the trend rules, and the trend rules only. */
struct watch_rules {
    struct rules_config live, trend;
};

void watch_rules_init(struct watch_rules *wr, const struct rules_config *base);
void watch_rules_free(struct watch_rules *wr);

/*
 * The trend rules over the whole history, into out (zeroed). They change slowly and cost the
 * most with a long history, so watch runs them every WATCH_TRENDS_EVERY_MS, not every cycle.
 */
void watch_trends(const struct snapshot *s, const struct history *full,
                  const struct watch_rules *wr, struct findings *out);

/*
 * The findings of one cycle: the rules over `recent` (the present), with copies of the trend
 * findings (may be NULL). A trend finding yields to a live one its rule names, about the same
 * GPU (and process); trend findings follow the live ones of the same severity. out must be
 * zeroed.
 */
void watch_judge(const struct snapshot *s, const struct history *recent,
                 const struct findings *trends, const struct watch_rules *wr, struct findings *out);

/* The samples of h within window_ms of its last one (a suffix of h). */
struct history watch_recent(const struct history *h, int64_t window_ms);

/*
 * Completes a cycle's snapshot s with the parts a cheaper cycle did not collect (their collector
 * did not run in s but did in prev): the process table, PCIe, driver and kernel log, CUDA stack,
 * NVSwitches and Fabric Manager. They move from prev, which keeps what s had instead.
 */
void watch_carry(struct snapshot *s, struct snapshot *prev);

/* ---- findings that come and go ---- */

struct watch_mark {
    char *key; /* rule id and subject: "mem.leak gpu=0 pid=4121" */
    char *id;  /* rule id */
    char *title;
    enum severity severity;
    int32_t gpu, pid;
    int64_t since_ms;   /* first seen (watch clock) */
    int64_t cleared_ms; /* -1 while present */
};

struct watch_marks {
    struct watch_mark *items;
    size_t n, cap;
};

/* Notes which findings are new and which cleared at now_ms; forgets old clears. */
void watch_marks_update(struct watch_marks *m, const struct findings *f, int64_t now_ms);
/* The mark of finding f, or NULL. */
const struct watch_mark *watch_marks_find(const struct watch_marks *m, const struct finding *f);
void watch_marks_free(struct watch_marks *m);

/* ---- what a front end draws ---- */

struct watch_view {
    const struct watch_opts *opts;
    const struct snapshot *snap;       /* the latest collection; NULL before the first */
    const struct history *hist;        /* kept readings, oldest first, t_ms since watch started */
    const struct findings *findings;   /* of the latest cycle */
    const struct watch_marks *marks;   /* new and cleared findings */
    const struct alert_events *events; /* alerts that fired or cleared this cycle */
    uint64_t cycles;
    int64_t now_ms;          /* watch clock */
    const char *problem;     /* why the last collection failed, or NULL */
    const char *record_msg;  /* "recording to FILE: N lines" or why it stopped; NULL: none */
    const char *alert_msg;   /* "alerts: 2 firing, 5 fired, ..." or NULL */
    const char *alert_error; /* a problem with an alert command, new since the last view */
};

enum watch_input { WATCH_CONTINUE, WATCH_QUIT };

struct watch_ui {
    int input_fd; /* polled for input, -1 for none */
    void *state;
    /* Draws a view. Returns -1 when the output is gone (a closed pipe): watch stops; -2 when it
     * cannot be written (a full disk, a closed descriptor; said on stderr): watch stops, exit 3. */
    int (*draw)(struct watch_ui *ui, const struct watch_view *v);
    /* Input is waiting on input_fd. */
    enum watch_input (*input)(struct watch_ui *ui, const struct watch_view *v);
    /* The terminal changed size. */
    void (*resize)(struct watch_ui *ui, const struct watch_view *v);
    /* Restores the terminal (idempotent). */
    void (*stop)(struct watch_ui *ui);
};

/*
 * The clock event reasons of a reading as both front ends name them, most serious first:
 * "hwthermal,thermal", "pcap"; "idle" only with_idle; "-" for none, "?" unknown, "lost" for a
 * GPU NVML cannot reach.
 */
void watch_reason_codes(char *buf, size_t size, const struct gpu *g, bool with_idle);

/* ---- the fabric between the GPUs, as both front ends show it (fabric.c) ---- */

/* The NVLinks of one GPU, or of every GPU together, at the latest reading. */
struct watch_nvlink {
    size_t known, up;   /* links whose state was read, and how many of them are up */
    bool traffic_known; /* bytes_per_s: sent + received over every link since the reading before */
    double bytes_per_s;
    bool errors_known; /* errors: CRC, replay and recovery errors that appeared since then */
    uint64_t errors;
};

/* GPU gpu's links; false when it has none (no NVLink, not in the readings, lost). */
bool watch_nvlink_of(const struct history *h, uint32_t gpu, struct watch_nvlink *out);
/* Every GPU's links together, and the GPU with the most new errors (-1: none); false: no GPU
 * has NVLink. */
bool watch_nvlink_total(const struct history *h, struct watch_nvlink *out, int32_t *worst_gpu);

/* The InfiniBand / RoCE ports, one or all, over the latest collection's window. */
struct watch_ib {
    size_t ports, active;
    const struct ib_port *first_down; /* the first port not ACTIVE (or of unknown state) */
    bool traffic_known;               /* data received and sent, bytes per second */
    double rx_bytes_per_s, tx_bytes_per_s;
    bool errors_known; /* errors: the growth of the error counters over the window */
    uint64_t errors;
};

void watch_ib_port(const struct snapshot *s, const struct ib_port *p, struct watch_ib *out);
/* False when the snapshot has no port. */
bool watch_ib_total(const struct snapshot *s, struct watch_ib *out);

/* Front ends. Each returns 0, or -1 with *cause set. */
int watch_tui_start(struct watch_ui *ui, const struct watch_opts *o, char **cause);
int watch_plain_start(struct watch_ui *ui, const struct watch_opts *o, char **cause);

/* ---- the collection thread (worker.c) ---- */

struct watch_worker;

/*
 * Starts collecting every interval_ms with a sampling window of window_ms (co is copied). With
 * a state_dir (may be NULL), each collection reads the state file into its snapshot, and the
 * thread records what it saw when that is news (state_recorder_record): the wait for another
 * writer's lock delays that collection's result by a second at most, never the view.
 */
struct watch_worker *watch_worker_start(const struct collect_opts *co, int64_t interval_ms,
                                        int64_t window_ms, const char *state_dir, char **cause);
/* Readable when a collection is waiting to be taken. */
int watch_worker_fd(const struct watch_worker *w);
/*
 * Takes the oldest collection waiting: false when none is. *s is the snapshot (the caller's), or
 * NULL with *cause saying why the collection failed (the caller frees it); *base_ms + a sample's
 * t_ms is when the sample was taken, in ms since the worker started.
 */
bool watch_worker_take(struct watch_worker *w, struct snapshot **s, int64_t *base_ms, char **cause);
/* Stops the thread after the collection in progress and frees w. */
void watch_worker_stop(struct watch_worker *w);

/* ---- the whole command (loop.c) ---- */

/* Runs watch until q, a signal or --count; returns the exit status. */
int watch_run(const struct watch_opts *o);

/* ---- ending a process (reap.c) ---- */

/* After SIGTERM, a process ended from the view has this long before SIGKILL. */
#define WATCH_REAP_GRACE_MS 3000

/* The command shown for confirmation: "kill -TERM 4121". */
void watch_reap_command(char *buf, size_t size, int32_t pid);
/*
 * What `reap` would do to end process (pid, start_ticks) of s, without doing it: 0 with what it
 * would send in *detail (and the plan's identity in *plan_id, for watch_reap), or -1 with why it
 * will not (refused, gone, another process now, a --root tree). The caller frees *detail.
 */
int watch_reap_plan(const struct watch_opts *o, const struct snapshot *s, int32_t pid,
                    uint64_t start_ticks, uint64_t *plan_id, char **detail);
/*
 * Ends it with reap's checks and signals: SIGTERM, SIGKILL after WATCH_REAP_GRACE_MS, provided
 * that reap would still signal what watch_reap_plan showed (plan_id, what it gave: the view may
 * have been refreshed since, and the process become defunct, which makes its parent the target).
 * Blocks until the process is gone or given up on (a few seconds at most). Returns 0 when it
 * ended; *detail says what happened.
 */
int watch_reap(const struct watch_opts *o, const struct snapshot *s, int32_t pid,
               uint64_t start_ticks, uint64_t plan_id, char **detail);

#endif
