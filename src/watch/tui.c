/*
 * The full-screen view of watch (ncursesw). Per GPU: utilisation, memory and temperature with
 * small history graphs, power, SM clock and throttle reasons; the GPU processes (sortable,
 * selectable); the findings as they appear (marked new) and clear (kept a while, dimmed); a
 * status line. Keys: q quit, s sort, Tab switch list, arrows or j/k select, e or Enter explain,
 * r end the selected process (after confirmation), ? help. Each list's header says how much of
 * it is shown ("1-4 of 12: 8 more below"); the one with the focus is marked without colour.
 *
 * No flicker: every frame is drawn into ncurses' virtual screen and sent with one refresh, which
 * transmits only what changed. The terminal is restored on every way out: q, SIGINT, SIGTERM,
 * SIGHUP (the main loop ends normally), and crashes: a handler writes the saved reset sequence and
 * termios with async-signal-safe calls, then passes the signal on. While the view is up,
 * standard error goes to a temporary file (a message would tear the screen) and is shown after.
 */
#include "render/format.h"
#include "render/text.h"
#include "util/timeutil.h"
#include "util/xalloc.h"
#include "watch/graph.h"
#include "watch/watch.h"

#include "nvml/nvml-abi.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <term.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#define MIN_COLS 80
#define MIN_ROWS 16 /* the GPUs then get a few rows and say how many more there are */
/* Standard error written while the view was up, shown after it: the last this many bytes. */
#define CAPTURE_SHOW_MAX 65536

enum { PAIR_RED = 1, PAIR_YELLOW, PAIR_CYAN, PAIR_GREEN, PAIR_DIM };

enum sort_key { SORT_MEM, SORT_SM, SORT_CPU, SORT_PID, SORT_AGE, SORT__COUNT };
static const char *const sort_names[] = { "memory", "SM %", "CPU %", "pid", "age" };

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
    char **confirm;
    size_t n_confirm;

    char *message;
    int64_t message_until;

    int saved_stderr, capture_fd;
    bool active;
};

/* ---- restoring the terminal from a signal handler ---- */

/* Set up before the view starts and read by the crash handler: not scratch, the handler's state. */
static volatile sig_atomic_t crash_armed;
static struct termios crash_tio;
static char crash_reset[256];
static size_t crash_reset_len;
static int crash_stderr = -1, crash_capture = -1;
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT };
static struct sigaction crash_old[ARRAY_SIZE(crash_signals)];

static void copy_capture(int from, int to)
{
    char buf[4096];
    off_t end;
    ssize_t n;

    if (from < 0 || (end = lseek(from, 0, SEEK_END)) < 0)
        return;
    lseek(from, end > CAPTURE_SHOW_MAX ? end - CAPTURE_SHOW_MAX : 0, SEEK_SET);
    while ((n = read(from, buf, sizeof(buf))) > 0) {
        if (write(to, buf, (size_t)n) != n)
            break;
    }
}

static void on_crash(int sig)
{
    if (crash_armed) {
        crash_armed = 0;
        if (write(STDOUT_FILENO, crash_reset, crash_reset_len) < 0) {
            /* nothing else to try */
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &crash_tio);
        if (crash_stderr >= 0) {
            dup2(crash_stderr, STDERR_FILENO);
            copy_capture(crash_capture, STDERR_FILENO);
        }
    }
    /* Hand the signal to whoever had it before (a sanitizer, or the default: a core dump). */
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++) {
        if (crash_signals[i] == sig)
            sigaction(sig, &crash_old[i], NULL);
    }
    raise(sig);
}

static void add_cap(const char *name)
{
    const char *s = tigetstr(name);
    size_t n;

    if (s == NULL || s == (const char *)-1)
        return;
    n = strlen(s);
    if (crash_reset_len + n < sizeof(crash_reset)) {
        memcpy(crash_reset + crash_reset_len, s, n);
        crash_reset_len += n;
    }
}

static void crash_arm(void)
{
    struct sigaction sa;

    crash_reset_len = 0;
    add_cap("sgr0");
    add_cap("cnorm");
    add_cap("rmkx");
    add_cap("rmcup");
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++)
        sigaction(crash_signals[i], &sa, &crash_old[i]);
    crash_armed = 1;
}

static void crash_disarm(void)
{
    crash_armed = 0;
    for (size_t i = 0; i < ARRAY_SIZE(crash_signals); i++)
        sigaction(crash_signals[i], &crash_old[i], NULL);
}

/* ---- text that fits ---- */

/*
 * Writes text at (y, x) in at most cols terminal columns (pad: fills the rest with blanks).
 * Counts display columns, not bytes: block characters and "°" are one column, some two.
 */
static void put(const struct tui *t, int y, int x, int cols, const char *text, bool pad)
{
    char *own = t->utf8 ? NULL : render_ascii(text); /* not UTF-8: as check does */
    const char *s = own ? own : text;
    mbstate_t ms;
    size_t bytes = 0, len = strlen(s);
    int used = 0;

    if (cols <= 0) {
        free(own);
        return;
    }
    memset(&ms, 0, sizeof(ms));
    while (bytes < len) {
        wchar_t wc;
        size_t n = mbrtowc(&wc, s + bytes, len - bytes, &ms);
        int w;

        if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
            break;
        w = wcwidth(wc);
        if (w < 0)
            w = 1;
        if (used + w > cols)
            break;
        used += w;
        bytes += n;
    }
    mvaddnstr(y, x, s, (int)bytes);
    if (pad) {
        for (; used < cols; used++)
            addch(' ');
    }
    free(own);
}

static void putf(const struct tui *t, int y, int x, int cols, bool pad, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void putf(const struct tui *t, int y, int x, int cols, bool pad, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = xvasprintf(fmt, ap);
    va_end(ap);
    put(t, y, x, cols, s, pad);
    free(s);
}

static void on(const struct tui *t, int pair, attr_t extra)
{
    attrset((t->color && pair ? COLOR_PAIR(pair) : 0) | extra);
}

/*
 * A pane's header: reverse video across the screen for the pane with the focus (visible without
 * colour), bold for the other; the title starts with a mark for the focused one.
 */
static void pane_header(const struct tui *t, bool focused)
{
    on(t, 0, focused ? A_REVERSE | A_BOLD : A_BOLD);
}

static const char *focus_mark(bool focused)
{
    return focused ? "▶" : " ";
}

/*
 * How much of the findings the pane shows and how to see the rest: "(12)" when it shows them
 * all, else "1-4 of 12: 8 more below (j/PgDn)", with Tab first when the pane lacks the focus.
 */
static void finds_extent(char *buf, size_t size, size_t top, size_t shown, size_t n, bool focused)
{
    size_t end = top + shown < n ? top + shown : n;
    const char *keys = focused ? "" : "Tab, then ";

    if (n <= shown)
        snprintf(buf, size, "(%zu)", n);
    else if (top > 0 && end < n)
        snprintf(buf, size, "%zu-%zu of %zu: %zu above, %zu below (%sk/j, PgUp/PgDn)", top + 1, end,
                 n, top, n - end, keys);
    else if (top > 0)
        snprintf(buf, size, "%zu-%zu of %zu: %zu more above (%sk/PgUp)", top + 1, end, n, top,
                 keys);
    else
        snprintf(buf, size, "%zu-%zu of %zu: %zu more below (%sj/PgDn)", top + 1, end, n, n - end,
                 keys);
}

/*
 * The same for the processes, short enough for the end of the column header: "1-5 of 9 ↓".
 * Returns its width in columns.
 */
static int procs_extent(const struct tui *t, char *buf, size_t size, size_t top, size_t shown,
                        size_t n)
{
    size_t end = top + shown < n ? top + shown : n;
    int w;

    if (n <= shown)
        return snprintf(buf, size, "(%zu)", n);
    w = snprintf(buf, size, "%zu-%zu of %zu ", top + 1, end, n);
    if (top > 0 && end < n)
        snprintf(buf + w, size - (size_t)w, "%s", t->utf8 ? "↕" : "^v");
    else
        snprintf(buf + w, size - (size_t)w, "%s",
                 top > 0   ? (t->utf8 ? "↑" : "^")
                 : t->utf8 ? "↓"
                           : "v");
    return w + (top > 0 && end < n && !t->utf8 ? 2 : 1);
}

static int sev_pair(enum severity s)
{
    return s == SEV_CRITICAL ? PAIR_RED : s == SEV_WARNING ? PAIR_YELLOW : PAIR_CYAN;
}

static const char *sev_tag(enum severity s)
{
    return s == SEV_CRITICAL ? "CRIT" : s == SEV_WARNING ? "WARN" : "INFO";
}

static void message(struct tui *t, int64_t now_ms, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void message(struct tui *t, int64_t now_ms, const char *fmt, ...)
{
    va_list ap;

    free(t->message);
    va_start(ap, fmt);
    t->message = xvasprintf(fmt, ap);
    va_end(ap);
    t->message_until = now_ms + 8000;
}

/* ---- the lists ---- */

static struct prow *prow_for(struct tui *t, size_t *cap, int32_t pid)
{
    for (size_t i = 0; i < t->n_procs; i++) {
        if (t->procs[i].pid == pid)
            return &t->procs[i];
    }
    xgrow(&t->procs, cap, t->n_procs + 1, sizeof(*t->procs));
    memset(&t->procs[t->n_procs], 0, sizeof(t->procs[0]));
    t->procs[t->n_procs].pid = pid;
    return &t->procs[t->n_procs++];
}

static void prow_gpu(struct prow *r, int32_t gpu)
{
    for (size_t i = 0; i < r->n_gpus; i++) {
        if (r->gpus[i] == gpu)
            return;
    }
    if (r->n_gpus < ARRAY_SIZE(r->gpus)) {
        size_t k = r->n_gpus++;

        while (k > 0 && r->gpus[k - 1] > gpu) {
            r->gpus[k] = r->gpus[k - 1];
            k--;
        }
        r->gpus[k] = gpu;
    }
}

static int cmp_prow(const void *a, const void *b, void *arg)
{
    const struct prow *x = a, *y = b;
    const enum sort_key *key = arg;
    double kx = 0, ky = 0;

    switch (*key) {
    case SORT_MEM:
        kx = (double)x->used, ky = (double)y->used;
        break;
    case SORT_SM:
        kx = x->sm_valid ? (double)x->sm : -1.0, ky = y->sm_valid ? (double)y->sm : -1.0;
        break;
    case SORT_CPU:
        kx = x->p && (x->p->valid & (1u << PROC_S_CPU_PCT)) ? x->p->cpu_pct : -1;
        ky = y->p && (y->p->valid & (1u << PROC_S_CPU_PCT)) ? y->p->cpu_pct : -1;
        break;
    case SORT_AGE: /* oldest first: the earliest start */
        kx = x->p ? -(double)x->p->start_ticks : -1e300;
        ky = y->p ? -(double)y->p->start_ticks : -1e300;
        break;
    case SORT_PID:
    case SORT__COUNT:
        break;
    }
    if (kx != ky)
        return kx > ky ? -1 : 1;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Every process using a GPU: the process table's, and those only NVML lists. */
static void build_procs(struct tui *t, const struct snapshot *s)
{
    size_t cap = 0;

    free(t->procs);
    t->procs = NULL;
    t->n_procs = 0;
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        struct prow *r;

        if (p->n_gpus == 0)
            continue;
        r = prow_for(t, &cap, p->pid);
        r->p = p;
        for (size_t k = 0; k < p->n_gpus; k++) {
            const struct proc_gpu *pg = &p->gpus[k];

            if (pg->valid & (1u << PROC_GPU_S_INDEX))
                prow_gpu(r, (int32_t)pg->gpu_index);
            if (pg->valid & (1u << PROC_GPU_S_USED)) {
                r->used += pg->used_bytes;
                r->used_valid = true;
            }
            if ((pg->valid & (1u << PROC_GPU_S_UTIL)) &&
                (!r->sm_valid || pg->sm_util_pct > r->sm)) {
                r->sm = pg->sm_util_pct;
                r->sm_valid = true;
            }
        }
    }
    for (size_t i = 0; i < s->n_gpus; i++) {
        for (size_t k = 0; k < s->gpus[i].n_procs; k++) {
            const struct gpu_proc *np = &s->gpus[i].procs[k];
            struct prow *r;

            if (proc_table_find(&s->procs, (int32_t)np->pid) != NULL)
                continue;
            r = prow_for(t, &cap, (int32_t)np->pid);
            prow_gpu(r, (int32_t)s->gpus[i].index);
            if (np->valid & (1u << GPU_PROC_S_USED)) {
                r->used += np->used_bytes;
                r->used_valid = true;
            }
        }
    }
    if (t->n_procs > 1)
        qsort_r(t->procs, t->n_procs, sizeof(*t->procs), cmp_prow, &t->sort);
    /* Keep the selection on the same process. */
    for (size_t i = 0; i < t->n_procs; i++) {
        if (t->procs[i].pid == t->sel_pid)
            t->sel_proc = i;
    }
    if (t->sel_proc >= t->n_procs)
        t->sel_proc = t->n_procs ? t->n_procs - 1 : 0;
    t->sel_pid = t->n_procs ? t->procs[t->sel_proc].pid : -1;
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

static void finds_free(struct tui *t)
{
    for (size_t i = 0; i < t->n_finds; i++)
        free(t->finds[i].key);
    free(t->finds);
    t->finds = NULL;
    t->n_finds = 0;
}

static void build_finds(struct tui *t, const struct watch_view *v)
{
    size_t n = 0;

    finds_free(t);
    t->finds = xcalloc((v->findings ? v->findings->n : 0) + (v->marks ? v->marks->n : 0) + 1,
                       sizeof(*t->finds));
    for (size_t i = 0; v->findings && i < v->findings->n; i++) {
        t->finds[n].f = &v->findings->items[i];
        t->finds[n++].mk = v->marks ? watch_marks_find(v->marks, &v->findings->items[i]) : NULL;
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

/* ---- drawing ---- */

/* The values of one GPU field over the last n readings, NaN where it was not valid. */
static void series(const struct history *h, size_t pos, uint32_t idx, enum gpu_slot slot,
                   double (*get)(const struct gpu *), double *out, size_t n)
{
    size_t from = h->n > n ? h->n - n : 0;

    for (size_t k = from; k < h->n; k++) {
        const struct sample *smp = &h->samples[k];
        const struct gpu *g =
            pos < smp->n_gpus && smp->gpus[pos].index == idx ? &smp->gpus[pos] : NULL;

        for (size_t i = 0; g == NULL && i < smp->n_gpus; i++) {
            if (smp->gpus[i].index == idx)
                g = &smp->gpus[i];
        }
        out[k - from] = g && g->handle_rc == 0 && g->rc[slot] == 0 ? get(g) : NAN;
    }
}

static double get_util(const struct gpu *g)
{
    return g->util_gpu_pct;
}

static double get_mem(const struct gpu *g)
{
    return (double)g->mem_used_bytes;
}

static double get_temp(const struct gpu *g)
{
    return g->temp_c;
}

/*
 * Cuts a comma-separated list to width at a comma, keeping whole items, with ",+" when there is
 * room to say more follow: "hwthermal" or "hwthermal,+", never "hwthermal,th". The most serious
 * item comes first, so it is the one kept.
 */
static void fit_list(char *list, size_t width)
{
    size_t keep = 0;

    if (strlen(list) <= width)
        return;
    for (const char *c = list; (c = strchr(c, ',')) != NULL && (size_t)(c - list) <= width; c++)
        keep = (size_t)(c - list);
    if (keep == 0)
        list[width] = '\0'; /* the first item alone is too long */
    else if (keep + 2 <= width)
        strcpy(list + keep, ",+");
    else
        list[keep] = '\0';
}

/* Graph widths for the GPU table at this width: utilisation, memory, temperature. */
static void graph_widths(int cols, int *gu, int *gm, int *gt)
{
    int spare = cols - 80;

    *gu = 10 + (spare > 0 ? spare * 2 / 5 : 0);
    *gm = 10 + (spare > 0 ? spare * 2 / 5 : 0);
    *gt = 6 + (spare > 0 ? spare / 5 : 0);
}

static int draw_gpus(struct tui *t, const struct watch_view *v, int y, int max_rows)
{
    const struct history *h = v->hist;
    const struct sample *last = h->n ? &h->samples[h->n - 1] : NULL;
    int gu, gm, gt, x, rows = 0;
    double *vals;
    char *buf;

    graph_widths(COLS, &gu, &gm, &gt);
    vals = xcalloc((size_t)(gu > gm ? gu : gm) + (size_t)gt + 1, sizeof(*vals));
    buf = xmalloc((size_t)(gu + gm + gt) * 4 + 64);
    /* The header at the columns the rows below use. */
    on(t, 0, A_BOLD);
    put(t, y, 0, COLS, "GPU", true);
    x = 4;
    put(t, y, x, 4, "UTIL", false);
    x += 5 + gu + 1;
    put(t, y, x, 6, "MEMORY", false);
    x += 14 + gm + 1;
    put(t, y, x, 4, "TEMP", false);
    x += 6 + gt + 1;
    put(t, y, x, 5, "POWER", false);
    x += 6;
    put(t, y, x, 6, "SM MHz", false);
    x += 7;
    put(t, y, x, COLS - x, "THROTTLE", false);
    on(t, 0, 0);
    rows++;
    for (size_t i = 0; last && i < last->n_gpus && rows < max_rows; i++) {
        const struct gpu *g = &last->gpus[i];
        const struct gpu *st = v->snap ? snapshot_gpu(v->snap, g->index) : NULL;
        char num[48], thr[64];
        double total = st && gpu_valid(st, GPU_S_MEM_TOTAL) ? (double)st->mem_total_bytes : NAN;
        double hot = st && gpu_valid(st, GPU_S_TEMP_SLOWDOWN) ? st->temp_slowdown_c : 90;

        if (rows == max_rows - 1 && i + 1 < last->n_gpus) {
            on(t, PAIR_DIM, A_DIM);
            putf(t, y + rows, 0, COLS, true, "... %zu more GPUs (a taller terminal shows them)",
                 last->n_gpus - i);
            on(t, 0, 0);
            rows++;
            break;
        }
        x = 0;
        putf(t, y + rows, x, 4, true, "%3" PRIu32, g->index);
        x += 4;
        if (g->handle_rc != 0) {
            on(t, PAIR_RED, A_BOLD);
            put(t, y + rows, x, COLS - x, "GPU lost: NVML cannot reach it", true);
            on(t, 0, 0);
            rows++;
            continue;
        }
        /* Utilisation. */
        if (gpu_valid(g, GPU_S_UTIL_GPU))
            snprintf(num, sizeof(num), "%3" PRIu32 "%%", g->util_gpu_pct);
        else
            snprintf(num, sizeof(num), "  -");
        put(t, y + rows, x, 5, num, true);
        x += 5;
        series(h, i, g->index, GPU_S_UTIL_GPU, get_util, vals, (size_t)gu);
        graph_render(buf, (size_t)gu * 4 + 1, vals, h->n < (size_t)gu ? h->n : (size_t)gu, 0, 100,
                     (size_t)gu, t->utf8);
        on(t, PAIR_GREEN, 0);
        put(t, y + rows, x, gu, buf, true);
        on(t, 0, 0);
        x += gu + 1;
        /* Memory. */
        if (gpu_valid(g, GPU_S_MEM_USED)) {
            char b[16];

            render_bytes(b, sizeof(b), g->mem_used_bytes);
            if (!isnan(total) && total > 0)
                snprintf(num, sizeof(num), "%8s %3.0f%%", b,
                         (double)g->mem_used_bytes * 100 / total);
            else
                snprintf(num, sizeof(num), "%8s", b);
        } else {
            snprintf(num, sizeof(num), "       -");
        }
        put(t, y + rows, x, 14, num, true);
        x += 14;
        series(h, i, g->index, GPU_S_MEM_USED, get_mem, vals, (size_t)gm);
        graph_render(buf, (size_t)gm * 4 + 1, vals, h->n < (size_t)gm ? h->n : (size_t)gm, 0,
                     isnan(total) ? 1 : total, (size_t)gm, t->utf8);
        on(t, PAIR_CYAN, 0);
        put(t, y + rows, x, gm, buf, true);
        on(t, 0, 0);
        x += gm + 1;
        /* Temperature. */
        if (gpu_valid(g, GPU_S_TEMP))
            snprintf(num, sizeof(num), "%3" PRIu32 "°C", g->temp_c);
        else
            snprintf(num, sizeof(num), "   - ");
        if (gpu_valid(g, GPU_S_TEMP) && g->temp_c + 5 >= hot)
            on(t, PAIR_RED, A_BOLD);
        put(t, y + rows, x, 6, num, true);
        on(t, 0, 0);
        x += 6;
        series(h, i, g->index, GPU_S_TEMP, get_temp, vals, (size_t)gt);
        graph_render(buf, (size_t)gt * 4 + 1, vals, h->n < (size_t)gt ? h->n : (size_t)gt, 20, hot,
                     (size_t)gt, t->utf8);
        on(t, PAIR_YELLOW, 0);
        put(t, y + rows, x, gt, buf, true);
        on(t, 0, 0);
        x += gt + 1;
        /* Power, SM clock, throttle reasons. */
        if (gpu_valid(g, GPU_S_POWER))
            snprintf(num, sizeof(num), "%4.0fW", g->power_mw / 1000.0);
        else
            snprintf(num, sizeof(num), "    -");
        put(t, y + rows, x, 6, num, true);
        x += 6;
        if (gpu_valid(g, GPU_S_CLOCK_SM))
            snprintf(num, sizeof(num), "%5" PRIu32, g->clock_sm_mhz);
        else
            snprintf(num, sizeof(num), "    -");
        put(t, y + rows, x, 6, num, true);
        x += 6;
        watch_reason_codes(thr, sizeof(thr), g, true);
        if (strstr(thr, "hw") || strstr(thr, "brake"))
            on(t, PAIR_RED, A_BOLD);
        else if (strstr(thr, "thermal") || strstr(thr, "pcap"))
            on(t, PAIR_YELLOW, 0);
        fit_list(thr, COLS > x ? (size_t)(COLS - x) : 0);
        put(t, y + rows, x, COLS - x, thr, true);
        on(t, 0, 0);
        rows++;
    }
    if (last && last->n_gpus == 0) {
        on(t, PAIR_DIM, A_DIM);
        put(t, y + rows, 0, COLS, "  no GPU seen: see the findings below", true);
        on(t, 0, 0);
        rows++;
    }
    free(vals);
    free(buf);
    return rows;
}

static const char *state_word(const struct proc *p)
{
    if (p == NULL || !proc_has(p, PROC_S_STATE))
        return "?";
    switch (p->state) {
    case 'R':
        return "run";
    case 'S':
        return "sleep";
    case 'D':
        return "disk";
    case 'T':
    case 't':
        return "STOP";
    case 'Z':
        return "ZOMB";
    default:
        return "other";
    }
}

static int draw_procs(struct tui *t, const struct watch_view *v, int y, int rows)
{
    size_t top = 0, shown;
    int cmd_w = COLS - 62;
    bool focused = t->focus == FOCUS_PROCS;
    char extent[96];
    int extent_w;

    if (rows <= 0)
        return 0;
    shown = (size_t)(rows - 1);
    if (t->sel_proc >= shown)
        top = t->sel_proc - shown + 1;
    /* The column the list is sorted by is marked; how many rows there are ends the line. */
    extent_w = procs_extent(t, extent, sizeof(extent), top, shown, t->n_procs) + 1;
    pane_header(t, focused);
    putf(t, y, 0, COLS, true, "%s%-7s %-9s %-5s %9s %4s %5s %-5s %6s  %s", focus_mark(focused),
         t->sort == SORT_PID ? "PID*" : "PID", "USER", "GPU",
         t->sort == SORT_MEM ? "GPU MEM*" : "GPU MEM", t->sort == SORT_SM ? "SM%*" : "SM%",
         t->sort == SORT_CPU ? "CPU%*" : "CPU%", "STATE", t->sort == SORT_AGE ? "AGE*" : "AGE",
         COLS - 61 >= 7 + 1 + extent_w ? "COMMAND" : "CMD");
    if (COLS - extent_w > 64)
        put(t, y, COLS - extent_w, extent_w, extent, true);
    on(t, 0, 0);
    if (t->n_procs == 0 && rows > 1) {
        on(t, PAIR_DIM, A_DIM);
        put(t, y + 1, 0, COLS, "  no process uses a GPU", true);
        on(t, 0, 0);
        return 2;
    }
    for (size_t i = top; i < t->n_procs && i - top < shown; i++) {
        const struct prow *r = &t->procs[i];
        const struct proc *p = r->p;
        char gpus[32], mem[16] = "-", sm[8] = "-", cpu[12] = "-", age[16] = "-";
        const char *user = p && p->user ? p->user : "?";
        const char *cmd = p ? (p->cmdline ? p->cmdline
                               : p->comm  ? p->comm
                                          : "?")
                            : "(not in /proc)";
        bool sel = i == t->sel_proc;
        int row = y + 1 + (int)(i - top);

        render_ranges(gpus, sizeof(gpus), r->gpus, r->n_gpus);
        if (r->used_valid)
            render_bytes(mem, sizeof(mem), r->used);
        if (r->sm_valid)
            snprintf(sm, sizeof(sm), "%" PRIu32, r->sm);
        if (p && (p->valid & (1u << PROC_S_CPU_PCT)))
            snprintf(cpu, sizeof(cpu), "%.0f", p->cpu_pct);
        if (p && v->snap && proc_age_ms(p, v->snap->time_ms) >= 0)
            render_duration(age, sizeof(age), (double)proc_age_ms(p, v->snap->time_ms) / 1000.0);
        if (sel && t->focus == FOCUS_PROCS)
            on(t, 0, A_REVERSE);
        else if (p && (p->state == 'T' || p->state == 'Z'))
            on(t, PAIR_RED, 0);
        putf(t, row, 0, COLS - (cmd_w > 8 ? cmd_w : 8), true,
             "%c%-7d %-9.9s %-5.5s %9s %4s %5s %-5s %6s  ", sel ? '>' : ' ', (int)r->pid, user,
             gpus, mem, sm, cpu, state_word(p), age);
        put(t, row, COLS - (cmd_w > 8 ? cmd_w : 8), cmd_w > 8 ? cmd_w : 8, cmd, true);
        on(t, 0, 0);
    }
    return 1 + (int)(t->n_procs - top < shown ? t->n_procs - top : shown);
}

static int draw_finds(struct tui *t, const struct watch_view *v, int y, int rows)
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
    finds_extent(extent, sizeof(extent), top, shown, t->n_finds, focused);
    pane_header(t, focused);
    putf(t, y, 0, COLS, true, "%s%-5s FINDINGS %s", focus_mark(focused), "",
         t->n_finds ? extent : "");
    on(t, 0, 0);
    if (t->n_finds == 0 && rows > 1) {
        on(t, PAIR_GREEN, 0);
        put(t, y + 1, 0, COLS, v->snap ? "  nothing wrong found" : "  collecting...", true);
        on(t, 0, 0);
        return 2;
    }
    for (size_t i = top; i < t->n_finds && i - top < shown; i++) {
        const struct frow *r = &t->finds[i];
        bool sel = i == t->sel_find, isnew;
        int row = y + 1 + (int)(i - top);
        enum severity sev = r->f ? r->f->severity : r->mk->severity;
        const char *id = r->f ? r->f->rule->id : r->mk->id;

        /* New: appeared after the first reading, and recently. */
        isnew = r->f && r->mk && v->hist->n > 0 && r->mk->since_ms > v->hist->samples[0].t_ms &&
                v->now_ms - r->mk->since_ms < WATCH_NEW_SHOW_MS;
        if (sel && t->focus == FOCUS_FINDINGS)
            on(t, 0, A_REVERSE);
        else if (r->f == NULL)
            on(t, PAIR_DIM, A_DIM);
        putf(t, row, 0, 2, true, "%c", sel ? '>' : ' ');
        if (r->f != NULL && !(sel && t->focus == FOCUS_FINDINGS))
            on(t, sev_pair(sev), A_BOLD);
        put(t, row, 1, 5, r->f ? sev_tag(sev) : "ok", true);
        if (r->f != NULL && !(sel && t->focus == FOCUS_FINDINGS))
            on(t, 0, isnew ? A_BOLD : 0);
        putf(t, row, 6, title_x - 6, true, "%s%s", isnew ? "+" : " ", id);
        if (r->f)
            put(t, row, title_x, COLS - title_x, r->f->title ? r->f->title : r->f->rule->title,
                true);
        else
            putf(t, row, title_x, COLS - title_x, true, "cleared %.0fs ago: %s",
                 (double)(v->now_ms - r->mk->cleared_ms) / 1000.0, r->mk->title);
        on(t, 0, 0);
    }
    return 1 + (int)(t->n_finds - top < shown ? t->n_finds - top : shown);
}

static void draw_title(struct tui *t, const struct watch_view *v)
{
    char when[16] = "--:--:--", every[16], hist[16];
    size_t crit = v->findings ? findings_count(v->findings, SEV_CRITICAL) : 0;
    size_t warn = v->findings ? findings_count(v->findings, SEV_WARNING) : 0;
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
    on(t, 0, A_REVERSE);
    putf(t, 0, 0, COLS, true, " gpudoctor watch  %s  %s  every %s  history %s  %s",
         v->snap && v->snap->hostname ? v->snap->hostname : "", when,
         t->o->interval_ms < 1000 ? "<1s" : every, hist, "q quit  ? help");
    x = COLS - 26;
    if (x > 40) {
        if (crit)
            on(t, PAIR_RED, A_REVERSE | A_BOLD);
        putf(t, 0, x, 12, true, "%3zu critical", crit);
        on(t, warn ? PAIR_YELLOW : 0, A_REVERSE | (warn ? A_BOLD : 0));
        putf(t, 0, x + 12, 13, true, "%3zu warning ", warn);
    }
    on(t, 0, 0);
}

static void draw_status(struct tui *t, const struct watch_view *v)
{
    char line[1024];
    size_t len, head;

    /* The pane with the focus, named first: what the keys act on. */
    head = len = (size_t)snprintf(line, sizeof(line), "[%s] ",
                                  t->focus == FOCUS_PROCS ? "processes" : "findings");
    if (t->message && v->now_ms < t->message_until)
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%s", t->message);
    if (v->problem && len < sizeof(line))
        len += (size_t)snprintf(line + len, sizeof(line) - len, "%scollection failed: %s",
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
                     ? "j/k select  s sort  e explain  r end process  Tab findings  q quit"
                     : "j/k select  PgDn  e explain  Tab processes  ? help  q quit");
    on(t, 0, A_REVERSE);
    put(t, LINES - 1, 0, COLS, line, true);
    on(t, 0, 0);
}

static void draw_page(struct tui *t, const char *title, char **text, size_t n, size_t top)
{
    on(t, 0, A_REVERSE);
    putf(t, 0, 0, COLS, true, " %s", title);
    on(t, 0, 0);
    for (int row = 1; row < LINES - 1; row++) {
        size_t i = top + (size_t)row - 1;

        move(row, 0);
        clrtoeol();
        if (i < n)
            put(t, row, 0, COLS, text[i], false);
    }
    on(t, 0, A_REVERSE);
    putf(t, LINES - 1, 0, COLS, true, " line %zu of %zu   arrows, PgUp, PgDn scroll   q, Esc close",
         n ? top + 1 : 0, n);
    on(t, 0, 0);
}

/* The question of `r`: a reverse-video box over the middle of the view. */
static void draw_confirm(struct tui *t)
{
    int w = COLS - 8 < 76 ? COLS - 8 : 76, h = (int)t->n_confirm + 3;
    int y0 = LINES > h ? (LINES - h) / 2 : 0, x0 = (COLS - w) / 2;

    on(t, 0, A_REVERSE);
    for (int r = 0; r < h && y0 + r < LINES - 1; r++)
        put(t, y0 + r, x0, w, "", true);
    on(t, 0, A_REVERSE | A_BOLD);
    put(t, y0, x0, w, " End this process?", true);
    on(t, 0, A_REVERSE);
    for (size_t i = 0; i < t->n_confirm && y0 + 2 + (int)i < LINES - 1; i++)
        putf(t, y0 + 2 + (int)i, x0, w, true, "  %s", t->confirm[i]);
    on(t, 0, 0);
}

static int draw(struct watch_ui *ui, const struct watch_view *v)
{
    struct tui *t = ui->state;
    int y, rest, gpu_rows, n_gpus, proc_rows, find_rows;

    build_procs(t, v->snap);
    build_finds(t, v);
    erase();
    if (t->mode == MODE_PAGE) {
        draw_page(t, t->page_title, t->page, t->n_page, t->page_top);
        refresh();
        return 0;
    }
    if (COLS < MIN_COLS || LINES < MIN_ROWS) {
        putf(t, 0, 0, COLS, true, "terminal %dx%d: gpudoctor watch needs %dx%d (q quits)", COLS,
             LINES, MIN_COLS, MIN_ROWS);
        refresh();
        return 0;
    }
    draw_title(t, v);
    n_gpus = v->hist->n ? (int)v->hist->samples[v->hist->n - 1].n_gpus : 0;
    /* GPUs first (a third of the screen at least), then findings and processes share the rest. */
    gpu_rows = 1 + (n_gpus > 0 ? n_gpus : 1);
    if (gpu_rows > LINES - 12)
        gpu_rows = LINES - 12;
    y = 1;
    y += draw_gpus(t, v, y, gpu_rows) + 1;
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
    y += draw_finds(t, v, y, find_rows) + 1;
    draw_procs(t, v, y, proc_rows);
    draw_status(t, v);
    if (t->mode == MODE_CONFIRM)
        draw_confirm(t);
    refresh();
    return 0;
}

/* ---- pages: explain and help ---- */

static void page_free(struct tui *t)
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
    page_free(t);
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

static void explain(struct tui *t, const struct watch_view *v)
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
            message(t, v->now_ms, "no finding about pid %d", (int)t->procs[t->sel_proc].pid);
            return;
        }
        r = f->rule;
    }
    if (r == NULL) {
        message(t, v->now_ms, "no finding selected");
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
        fprintf(out, "%s: cleared (no longer found)\n", r->id);
    }
    section(out, &ro, "What it means", r->explanation);
    section(out, &ro, "How it is detected", r->detection);
    section(out, &ro, "How to fix it", r->fix);
    if (fclose(out) != 0)
        fatal("out of memory writing an explanation");
    title = xasprintf("explain %s: %s", r->id, r->title);
    page_from_text(t, title, text);
    free(title);
    free(text);
}

static void help(struct tui *t)
{
    page_from_text(t, "gpudoctor watch: keys",
                   "  q          quit (also Ctrl-C)\n"
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
                   "Graphs: one cell per reading, newest on the right.\n");
}

/* ---- ending a process ---- */

static void confirm_free(struct tui *t)
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

static void ask_reap(struct tui *t, const struct watch_view *v)
{
    const struct prow *r;
    char cmd[64], mem[16] = "?", *detail = NULL;

    if (t->focus != FOCUS_PROCS || t->sel_proc >= t->n_procs) {
        message(t, v->now_ms, "select a process first (Tab to the process list)");
        return;
    }
    r = &t->procs[t->sel_proc];
    if (r->p == NULL || !proc_has(r->p, PROC_S_START_TICKS)) {
        message(t, v->now_ms, "pid %d is not in /proc here: it cannot be verified", (int)r->pid);
        return;
    }
    /* What reap would do, or why it will not: nothing to confirm then. */
    if (watch_reap_plan(t->o, v->snap, r->pid, r->p->start_ticks, &detail) != 0) {
        message(t, v->now_ms, "pid %d: %s", (int)r->pid, detail);
        free(detail);
        return;
    }
    confirm_free(t);
    t->target_pid = r->pid;
    t->target_start = r->p->start_ticks;
    if (r->used_valid)
        render_bytes(mem, sizeof(mem), r->used);
    watch_reap_command(cmd, sizeof(cmd), r->pid);
    confirm_line(t, xasprintf("pid %d  %s  %s", (int)r->pid, r->p->user ? r->p->user : "?",
                              r->p->cmdline ? r->p->cmdline
                              : r->p->comm  ? r->p->comm
                                            : "?"));
    confirm_line(t, xasprintf("holds %s of GPU memory, state %s", mem, state_word(r->p)));
    confirm_line(t, xstrdup(""));
    confirm_line(t, xasprintf("    %s", cmd));
    confirm_line(t, xstrdup(""));
    confirm_wrapped(t, detail, COLS > 20 ? (size_t)COLS - 16 : 60);
    confirm_line(t, xstrdup("only if it is still this process (pid and start time)."));
    confirm_line(t, xstrdup("Send it?  y = yes, any other key = no"));
    free(detail);
    t->mode = MODE_CONFIRM;
}

static void do_reap(struct tui *t, struct watch_ui *ui, const struct watch_view *v)
{
    char *detail = NULL;
    int rc;

    /* reap waits for the process to end: say so while it does. */
    confirm_free(t);
    t->mode = MODE_MAIN;
    message(t, v->now_ms, "ending pid %d: SIGTERM, SIGKILL after %.0f s if it is still there...",
            (int)t->target_pid, WATCH_REAP_GRACE_MS / 1000.0);
    draw(ui, v);
    rc = watch_reap(t->o, v->snap, t->target_pid, t->target_start, &detail);
    message(t, v->now_ms, "pid %d %s: %s", (int)t->target_pid, rc == 0 ? "ended" : "not ended",
            detail);
    free(detail);
}

/* ---- input ---- */

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

static enum watch_input input(struct watch_ui *ui, const struct watch_view *v)
{
    struct tui *t = ui->state;
    int ch;
    bool redraw = false;

    while ((ch = getch()) != ERR) {
        redraw = true;
        if (t->mode == MODE_CONFIRM) {
            if (ch == 'y' || ch == 'Y') {
                do_reap(t, ui, v);
            } else {
                message(t, v->now_ms, "cancelled: nothing sent");
                confirm_free(t);
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
                page_free(t);
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
            message(t, v->now_ms, "processes sorted by %s", sort_names[t->sort]);
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
            explain(t, v);
            break;
        case 'r':
            ask_reap(t, v);
            break;
        case '?':
        case 'h':
            help(t);
            break;
        case 12: /* Ctrl-L */
            clearok(curscr, TRUE);
            break;
        default:
            break;
        }
    }
    if (redraw)
        draw(ui, v);
    return WATCH_CONTINUE;
}

static void resize(struct watch_ui *ui, const struct watch_view *v)
{
    struct winsize ws;

    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resize_term(ws.ws_row, ws.ws_col);
    clearok(curscr, TRUE);
    draw(ui, v);
}

static void stop(struct watch_ui *ui)
{
    struct tui *t = ui->state;

    if (t == NULL)
        return;
    if (t->active) {
        endwin();
        t->active = false;
        crash_disarm();
    }
    if (t->saved_stderr >= 0) {
        fflush(stderr);
        dup2(t->saved_stderr, STDERR_FILENO);
        close(t->saved_stderr);
        copy_capture(t->capture_fd, STDERR_FILENO);
        close(t->capture_fd);
        crash_stderr = crash_capture = -1;
    }
    page_free(t);
    confirm_free(t);
    free(t->procs);
    finds_free(t);
    free(t->sel_key);
    free(t->message);
    free(t);
    ui->state = NULL;
}

/* Standard error into an unlinked temporary file while the view is up. */
static void capture_stderr(struct tui *t)
{
    char path[] = "/tmp/gpudoctor-watch-XXXXXX";
    int fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

    if (fd < 0) {
        fd = mkostemp(path, O_CLOEXEC);
        if (fd >= 0)
            unlink(path);
    }
    t->saved_stderr = fd >= 0 ? fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3) : -1;
    if (fd < 0 || t->saved_stderr < 0 || dup2(fd, STDERR_FILENO) < 0) {
        if (fd >= 0)
            close(fd);
        if (t->saved_stderr >= 0)
            close(t->saved_stderr);
        t->saved_stderr = t->capture_fd = -1;
        return;
    }
    t->capture_fd = fd;
    crash_stderr = t->saved_stderr;
    crash_capture = fd;
}

int watch_tui_start(struct watch_ui *ui, const struct watch_opts *o, char **cause)
{
    const char *no_color = getenv("NO_COLOR");
    struct tui *t;

    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        *cause = xstrdup("the live view needs a terminal: use --plain for logs and pipes");
        return -1;
    }
    setlocale(LC_ALL, "");
    t = xcalloc(1, sizeof(*t));
    t->o = o;
    t->sel_pid = -1;
    t->saved_stderr = t->capture_fd = -1;
    t->utf8 = !o->ascii && render_locale_utf8();
    if (tcgetattr(STDIN_FILENO, &crash_tio) != 0) {
        *cause = xasprintf("cannot read the terminal settings: %s", strerror(errno));
        free(t);
        return -1;
    }
    if (newterm(NULL, stdout, stdin) == NULL) {
        *cause = xasprintf("cannot start the terminal (TERM=%s)",
                           getenv("TERM") ? getenv("TERM") : "unset");
        free(t);
        return -1;
    }
    t->active = true;
    crash_arm();
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
    capture_stderr(t);
    ui->input_fd = STDIN_FILENO;
    ui->state = t;
    ui->draw = draw;
    ui->input = input;
    ui->resize = resize;
    ui->stop = stop;
    return 0;
}
