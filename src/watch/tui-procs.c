/*
 * The live view's process list: every process using a GPU (the process table's, and those only
 * NVML lists) with its GPUs, GPU memory, SM and CPU use, state, age and command; sorted by the
 * chosen column, the selection kept on the same pid across refreshes.
 */
#include "render/format.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    w = snprintf(buf, size, _("%zu-%zu of %zu "), top + 1, end, n);
    if (w < 0 || (size_t)w >= size)
        return 0;
    if (top > 0 && end < n)
        snprintf(buf + w, size - (size_t)w, "%s", t->utf8 ? "↕" : "^v");
    else
        snprintf(buf + w, size - (size_t)w, "%s",
                 top > 0   ? (t->utf8 ? "↑" : "^")
                 : t->utf8 ? "↓"
                           : "v");
    return (int)render_width(buf, strlen(buf));
}

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
void tui_build_procs(struct tui *t, const struct snapshot *s)
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

/* TRANSLATORS: a process's state in watch's process list: at most 5 columns. */
static const char *state_english(const struct proc *p)
{
    if (p == NULL || !proc_has(p, PROC_S_STATE))
        return "?";
    switch (p->state) {
    case 'R':
        return N_("run");
    case 'S':
        return N_("sleep");
    case 'D':
        return N_("disk");
    case 'T':
    case 't':
        return N_("STOP");
    case 'Z':
        return N_("ZOMB");
    default:
        return N_("other");
    }
}

const char *tui_state_word(const struct proc *p)
{
    return render_fit(state_english(p), 5);
}

/* One head of the list: its label (marked with N_), "*" when the list is sorted by it, padded. */
static void list_head(FILE *f, const char *english, bool sorted, size_t width, bool right)
{
    char label[64];

    snprintf(label, sizeof(label), "%s%s", render_fit(english, width - sorted), sorted ? "*" : "");
    render_cell(f, label, width, right);
}

int tui_draw_procs(struct tui *t, const struct watch_view *v, int y, int rows)
{
    size_t top = 0, shown;
    int cmd_w = COLS - 62;
    bool focused = t->focus == FOCUS_PROCS;
    char extent[96], *head_text = NULL;
    size_t head_len = 0;
    int extent_w;
    FILE *head;

    if (rows <= 0)
        return 0;
    shown = (size_t)(rows - 1);
    if (t->sel_proc >= shown)
        top = t->sel_proc - shown + 1;
    /* The column the list is sorted by is marked; how many rows there are ends the line. */
    extent_w = procs_extent(t, extent, sizeof(extent), top, shown, t->n_procs) + 1;
    tui_pane_header(t, focused);
    head = open_memstream(&head_text, &head_len);
    if (head == NULL)
        fatal("out of memory drawing the process list");
    /* TRANSLATORS: watch's process list heads; each must fit its column (7, 9, 5, 9, 4, 5, 5, 6).
     */
    fputs(tui_focus_mark(focused), head);
    list_head(head, N_("PID"), t->sort == SORT_PID, 7, false);
    fputc(' ', head);
    list_head(head, N_("USER"), false, 9, false);
    fputc(' ', head);
    list_head(head, N_("GPU"), false, 5, false);
    fputc(' ', head);
    list_head(head, N_("GPU MEM"), t->sort == SORT_MEM, 9, true);
    fputc(' ', head);
    list_head(head, N_("SM%"), t->sort == SORT_SM, 4, true);
    fputc(' ', head);
    list_head(head, N_("CPU%"), t->sort == SORT_CPU, 5, true);
    fputc(' ', head);
    list_head(head, N_("STATE"), false, 5, false);
    fputc(' ', head);
    list_head(head, N_("AGE"), t->sort == SORT_AGE, 6, true);
    fprintf(head, "  %s", COLS - 61 >= 7 + 1 + extent_w ? _("COMMAND") : _("CMD"));
    if (fclose(head) != 0)
        fatal("out of memory drawing the process list");
    tui_put(t, y, 0, COLS, head_text, true);
    free(head_text);
    if (COLS - extent_w > 64)
        tui_put(t, y, COLS - extent_w, extent_w, extent, true);
    tui_on(t, 0, 0);
    if (t->n_procs == 0 && rows > 1) {
        tui_on(t, PAIR_DIM, A_DIM);
        tui_put(t, y + 1, 0, COLS, _("  no process uses a GPU"), true);
        tui_on(t, 0, 0);
        return 2;
    }
    for (size_t i = top; i < t->n_procs && i - top < shown; i++) {
        const struct prow *r = &t->procs[i];
        const struct proc *p = r->p;
        char gpus[32], mem[16] = "-", sm[8] = "-", cpu[12] = "-", age[16] = "-", state[32],
                       ucut[16], ucell[48];
        const char *user = p && p->user ? p->user : "?";
        const char *cmd = p ? (p->cmdline ? p->cmdline
                               : p->comm  ? p->comm
                                          : "?")
                            : _("(not in /proc)");
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
            tui_on(t, 0, A_REVERSE);
        else if (p && (p->state == 'T' || p->state == 'Z'))
            tui_on(t, PAIR_RED, 0);
        render_pad(state, sizeof(state), tui_state_word(p), 5, false);
        /* The user's name cut on a character: a cut inside one ends the row's drawing. */
        snprintf(ucut, sizeof(ucut), "%.9s", user);
        str_utf8_trim(ucut);
        render_pad(ucell, sizeof(ucell), ucut, 9, false);
        tui_putf(t, row, 0, COLS - (cmd_w > 8 ? cmd_w : 8), true,
                 "%c%-7d %s %-5.5s %9s %4s %5s %s %6s  ", sel ? '>' : ' ', (int)r->pid, ucell, gpus,
                 mem, sm, cpu, state, age);
        tui_put(t, row, COLS - (cmd_w > 8 ? cmd_w : 8), cmd_w > 8 ? cmd_w : 8, cmd, true);
        tui_on(t, 0, 0);
    }
    return 1 + (int)(t->n_procs - top < shown ? t->n_procs - top : shown);
}
