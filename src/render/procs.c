#include "render/procs.h"
#include "render/format.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char *const procs_sort_names[] = { "mem", "sm", "cpu", "age", "pid", NULL };

/* Whether a field of p is known: its own validity bit, or its group's. */
static bool ok(const struct proc *p, enum proc_slot slot)
{
    return p != NULL && proc_has(p, slot);
}

static bool gpu_ok(const struct proc_gpu *g, enum proc_gpu_slot slot)
{
    return (g->valid >> slot) & 1u;
}

void procs_job_label(char *buf, size_t size, const struct proc *p)
{
    buf[0] = '\0';
    if (!ok(p, PROC_S_CGROUP))
        return;
    if (p->pod_uid)
        snprintf(buf, size, "k8s pod %.12s", p->pod_uid);
    else if (p->container_id)
        snprintf(buf, size, "%s %.12s", p->container_runtime ? p->container_runtime : "container",
                 p->container_id);
    else if (p->slurm_job_id)
        snprintf(buf, size, "slurm job %s", p->slurm_job_id);
    str_utf8_trim(buf); /* "%.12s" cuts bytes */
}

/* The same, short enough for the table's column: "3f2a1b9c0d1e", "pod 1d2e3f4a", "job 4411". */
static void job_short(char *buf, size_t size, const struct proc *p)
{
    buf[0] = '\0';
    if (!ok(p, PROC_S_CGROUP))
        return;
    if (p->pod_uid)
        snprintf(buf, size, "pod %.8s", p->pod_uid);
    else if (p->container_id)
        snprintf(buf, size, "%.12s", p->container_id);
    else if (p->slurm_job_id)
        snprintf(buf, size, "job %s", p->slurm_job_id);
    str_utf8_trim(buf);
}

/* ---- filtering ---- */

static bool user_match(const char *want, const struct proc *p)
{
    uint32_t uid;

    if (ok(p, PROC_S_USER_NAME) && p->user && strcmp(p->user, want) == 0)
        return true;
    return ok(p, PROC_S_USER) && str_to_u32(want, 10, &uid) && uid == p->uid;
}

static bool gpu_match(const struct procs_filter *f, const struct proc *p)
{
    for (size_t i = 0; i < p->n_gpus; i++) {
        for (size_t k = 0; k < f->n_gpus; k++) {
            if (gpu_ok(&p->gpus[i], PROC_GPU_S_INDEX) &&
                p->gpus[i].gpu_index == (uint32_t)f->gpus[k])
                return true;
        }
    }
    return false;
}

static bool container_match(const char *want, const struct proc *p)
{
    size_t n = strlen(want);
    bool known = ok(p, PROC_S_CGROUP);

    if (strcmp(want, "host") == 0)
        return known && !p->container_id && !p->pod_uid && !p->slurm_job_id;
    if (!known || n == 0)
        return false;
    return (p->container_id && strncmp(p->container_id, want, n) == 0) ||
           (p->pod_uid && strncmp(p->pod_uid, want, n) == 0) ||
           (p->slurm_job_id && strcmp(p->slurm_job_id, want) == 0);
}

bool procs_filter_match(const struct procs_filter *f, const struct proc *p)
{
    if (f == NULL)
        return true;
    if (f->user && !user_match(f->user, p))
        return false;
    if (f->n_gpus && !gpu_match(f, p))
        return false;
    if (f->container && !container_match(f->container, p))
        return false;
    return true;
}

/* ---- rows ---- */

static void fill_row(struct procs_row *r, const struct snapshot *s, const struct proc *p,
                     const struct facts_judgement *j)
{
    memset(r, 0, sizeof(*r));
    r->p = p;
    r->gpu_user = j != NULL;
    r->verdict = j ? j->verdict : FACTS_VERDICT_UNKNOWN;
    r->idle_for_ms = j ? j->idle_for_ms : -1;
    r->parent_pid = -1;
    r->age_ms = s->time_ms > 0 ? proc_age_ms(p, s->time_ms) : -1;
    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct proc_gpu *g = &p->gpus[i];

        if (gpu_ok(g, PROC_GPU_S_USED)) {
            r->used_valid = true;
            r->used_bytes += g->used_bytes;
        }
        if (gpu_ok(g, PROC_GPU_S_UTIL) && (!r->sm_valid || g->sm_util_pct > r->sm_util_pct)) {
            r->sm_valid = true;
            r->sm_util_pct = g->sm_util_pct;
        }
    }
}

static int cmp_u64_desc(bool va, uint64_t a, bool vb, uint64_t b)
{
    if (va != vb)
        return va ? -1 : 1; /* known values first */
    return (a < b) - (a > b);
}

static int cmp_rows(const void *x, const void *y, void *arg)
{
    const struct procs_row *a = x, *b = y;
    int c = 0;

    switch (*(const enum procs_sort *)arg) {
    case PROCS_SORT_MEM:
        c = cmp_u64_desc(a->used_valid, a->used_bytes, b->used_valid, b->used_bytes);
        break;
    case PROCS_SORT_SM:
        c = cmp_u64_desc(a->sm_valid, a->sm_util_pct, b->sm_valid, b->sm_util_pct);
        break;
    case PROCS_SORT_CPU: {
        bool va = ok(a->p, PROC_S_CPU_PCT), vb = ok(b->p, PROC_S_CPU_PCT);

        if (va != vb)
            c = va ? -1 : 1;
        else if (va)
            c = (a->p->cpu_pct < b->p->cpu_pct) - (a->p->cpu_pct > b->p->cpu_pct);
        break;
    }
    case PROCS_SORT_AGE:
        c = cmp_u64_desc(a->age_ms >= 0, (uint64_t)(a->age_ms >= 0 ? a->age_ms : 0), b->age_ms >= 0,
                         (uint64_t)(b->age_ms >= 0 ? b->age_ms : 0));
        break;
    case PROCS_SORT_PID:
        break;
    }
    if (c == 0)
        c = (a->p->pid > b->p->pid) - (a->p->pid < b->p->pid);
    return c;
}

static void sort_rows(struct procs_row *rows, size_t n, enum procs_sort sort)
{
    if (n > 1)
        qsort_r(rows, n, sizeof(*rows), cmp_rows, &sort);
}

/* ---- the tree ---- */

/*
 * The tree is built once: each row's parent found by pid through a sorted index, loops of parent
 * links cut, children in lists, then walked with explicit stacks. Every step is linear in the
 * rows but for the sorts, and nothing recurses: a 100,000-deep chain costs what 100,000
 * siblings do.
 */
struct tree {
    struct procs_row *rows; /* every candidate, in table order */
    size_t n;
    size_t *by_pid; /* row indices by pid */
    long *parent;   /* row index, or -1 for a root */
    size_t *kid_at; /* children of row i (of the roots for i == n): kids[kid_at[i]..kid_at[i+1]) */
    size_t *kids;
};

static int cmp_index_pid(const void *x, const void *y, void *arg)
{
    const struct procs_row *rows = arg;
    int32_t a = rows[*(const size_t *)x].p->pid, b = rows[*(const size_t *)y].p->pid;

    return (a > b) - (a < b);
}

/* The row of pid, or -1. */
static long tree_find(const struct tree *t, int32_t pid)
{
    size_t lo = 0, hi = t->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (t->rows[t->by_pid[mid]].p->pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < t->n && t->rows[t->by_pid[lo]].p->pid == pid ? (long)t->by_pid[lo] : -1;
}

/*
 * Each row's parent: the row of its ppid, else the row whose children list has it (a worker
 * re-parented to init when the process it belongs to died is still listed there).
 */
static void tree_link(struct tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct proc *p = t->rows[i].p;

        t->parent[i] = ok(p, PROC_S_PPID) && p->ppid != p->pid ? tree_find(t, p->ppid) : -1;
    }
    for (size_t k = 0; k < t->n; k++) {
        const struct proc *p = t->rows[k].p;

        for (size_t c = 0; c < p->n_children; c++) {
            long i = tree_find(t, p->children[c]);

            if (i >= 0 && (size_t)i != k && t->parent[i] < 0)
                t->parent[i] = (long)k;
        }
    }
}

/*
 * Cuts every loop of parent links (a garbled snapshot can claim one: 7's parent 8, 8's parent
 * 7) at its lowest pid, which becomes a root. Returns how many; *first is the first cut's pid.
 */
static size_t tree_cut_loops(struct tree *t, int32_t *first)
{
    unsigned char *state = xcalloc(t->n ? t->n : 1, 1); /* 0 unseen, 1 on this walk, 2 done */
    size_t *path = xcalloc(t->n ? t->n : 1, sizeof(*path)), cuts = 0;

    for (size_t i = 0; i < t->n; i++) {
        size_t len = 0;
        long j = (long)i;

        while (j >= 0 && state[j] == 0) {
            state[j] = 1;
            path[len++] = (size_t)j;
            j = t->parent[j];
        }
        if (j >= 0 && state[j] == 1) { /* this walk came back to j: a loop through it */
            long low = j;

            for (long k = t->parent[j]; k != j; k = t->parent[k]) {
                if (t->rows[k].p->pid < t->rows[low].p->pid)
                    low = k;
            }
            if (cuts++ == 0)
                *first = t->rows[low].p->pid;
            t->parent[low] = -1;
        }
        while (len > 0)
            state[path[--len]] = 2;
    }
    free(path);
    free(state);
    return cuts;
}

/* Children lists of the rows in order[0..n_order) (each list in that order), roots at t->n. */
static void tree_index_kids(struct tree *t, const size_t *order, size_t n_order)
{
    size_t *fill = xcalloc(t->n + 2, sizeof(*fill));

    memset(t->kid_at, 0, (t->n + 2) * sizeof(*t->kid_at));
    for (size_t k = 0; k < n_order; k++) {
        long p = t->parent[order[k]];

        t->kid_at[(p >= 0 ? (size_t)p : t->n) + 1]++;
    }
    for (size_t i = 0; i <= t->n; i++)
        t->kid_at[i + 1] += t->kid_at[i];
    memcpy(fill, t->kid_at, (t->n + 2) * sizeof(*fill));
    for (size_t k = 0; k < n_order; k++) {
        long p = t->parent[order[k]];

        t->kids[fill[p >= 0 ? (size_t)p : t->n]++] = order[k];
    }
    free(fill);
}

/*
 * What the tree shows: each row that matches (uses a GPU and passes the filter), its ancestors
 * as context, and its workers (children, and theirs, that use no GPU). The others are dropped.
 */
static void tree_keep(struct tree *t, const struct procs_filter *f, bool *keep)
{
    size_t *all = xcalloc(t->n ? t->n : 1, sizeof(*all)), *stack, sp = 0;
    bool *seen = xcalloc(t->n ? t->n : 1, sizeof(*seen));

    for (size_t i = 0; i < t->n; i++) {
        keep[i] = t->rows[i].gpu_user && procs_filter_match(f, t->rows[i].p);
        all[i] = i;
    }
    /* A walk up stops where an earlier one kept the rest. */
    for (size_t i = 0; i < t->n; i++) {
        if (!keep[i] || t->rows[i].context)
            continue;
        for (long a = t->parent[i]; a >= 0 && !keep[a]; a = t->parent[a]) {
            keep[a] = true;
            t->rows[a].context = true;
        }
    }
    tree_index_kids(t, all, t->n);
    stack = all; /* reused: each row is pushed at most once */
    for (size_t i = 0; i < t->n; i++) {
        if (keep[i] && !t->rows[i].context) {
            seen[i] = true;
            stack[sp++] = i;
        }
    }
    while (sp > 0) {
        size_t k = stack[--sp];

        for (size_t c = t->kid_at[k]; c < t->kid_at[k + 1]; c++) {
            size_t w = t->kids[c];

            if (seen[w] || t->rows[w].gpu_user)
                continue;
            seen[w] = keep[w] = true;
            t->rows[w].context = false;
            stack[sp++] = w;
        }
    }
    free(seen);
    free(all);
}

struct rank_sort {
    const struct procs_row *rows;
    const size_t *key; /* NULL: by the view's sort key */
    enum procs_sort sort;
};

static int cmp_index(const void *x, const void *y, void *arg)
{
    const struct rank_sort *rs = arg;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;

    if (rs->key != NULL && rs->key[a] != rs->key[b])
        return rs->key[a] < rs->key[b] ? -1 : 1;
    if (rs->key != NULL)
        return cmp_index_pid(x, y, (void *)rs->rows);
    return cmp_rows(&rs->rows[a], &rs->rows[b], (void *)&rs->sort);
}

/*
 * The kept rows in tree order. Siblings (and roots) come in the order of the best row under
 * them, by the sort key: the tree of the process holding most memory first, however many
 * launchers and shells lie above it.
 */
static void tree_emit(struct procs_view *v, struct tree *t, const bool *keep, enum procs_sort sort)
{
    size_t n_kept = 0, *order = xcalloc(t->n ? t->n : 1, sizeof(*order));
    size_t *best = xcalloc(t->n ? t->n : 1, sizeof(*best)), *stack, sp = 0, n_pre = 0;
    size_t *pre = xcalloc(t->n ? t->n : 1, sizeof(*pre));
    unsigned *depth = xcalloc(t->n ? t->n : 1, sizeof(*depth));
    struct rank_sort rs = { t->rows, NULL, sort };

    for (size_t i = 0; i < t->n; i++) {
        if (keep[i])
            order[n_kept++] = i;
    }
    if (n_kept > 1)
        qsort_r(order, n_kept, sizeof(*order), cmp_index, &rs);
    for (size_t k = 0; k < n_kept; k++)
        best[order[k]] = k;
    /* The best row under each: in reverse preorder, children come before their parents. */
    tree_index_kids(t, order, n_kept);
    stack = xcalloc(t->n ? t->n : 1, sizeof(*stack));
    for (size_t c = t->kid_at[t->n]; c < t->kid_at[t->n + 1]; c++)
        stack[sp++] = t->kids[c];
    while (sp > 0) {
        size_t k = stack[--sp];

        pre[n_pre++] = k;
        for (size_t c = t->kid_at[k]; c < t->kid_at[k + 1]; c++)
            stack[sp++] = t->kids[c];
    }
    for (size_t k = n_pre; k-- > 0;) {
        long p = t->parent[pre[k]];

        if (p >= 0 && best[pre[k]] < best[p])
            best[p] = best[pre[k]];
    }
    rs.key = best;
    if (n_kept > 1)
        qsort_r(order, n_kept, sizeof(*order), cmp_index, &rs);
    tree_index_kids(t, order, n_kept);
    /* Preorder: a row, then its children's trees, in list order. */
    for (size_t c = t->kid_at[t->n + 1]; c-- > t->kid_at[t->n];)
        stack[sp++] = t->kids[c];
    while (sp > 0) {
        size_t k = stack[--sp];
        long p = t->parent[k];
        struct procs_row *r = &v->rows[v->n++];

        depth[k] = p >= 0 ? depth[p] + 1 : 0;
        *r = t->rows[k];
        r->depth = depth[k];
        r->parent_pid = p >= 0 ? t->rows[p].p->pid : -1;
        for (size_t c = t->kid_at[k + 1]; c-- > t->kid_at[k];)
            stack[sp++] = t->kids[c];
    }
    free(depth);
    free(pre);
    free(stack);
    free(best);
    free(order);
}

static void build_tree(struct procs_view *v, struct procs_row *rows, size_t n,
                       const struct procs_filter *f, enum procs_sort sort)
{
    struct tree t = { rows, n, NULL, NULL, NULL, NULL };
    bool *keep = xcalloc(n ? n : 1, sizeof(*keep));

    t.by_pid = xcalloc(n ? n : 1, sizeof(*t.by_pid));
    t.parent = xcalloc(n ? n : 1, sizeof(*t.parent));
    t.kid_at = xcalloc(n + 2, sizeof(*t.kid_at));
    t.kids = xcalloc(n ? n : 1, sizeof(*t.kids));
    for (size_t i = 0; i < n; i++)
        t.by_pid[i] = i;
    if (n > 1)
        qsort_r(t.by_pid, n, sizeof(*t.by_pid), cmp_index_pid, rows);
    tree_link(&t);
    v->n_loops = tree_cut_loops(&t, &v->loop_pid);
    tree_keep(&t, f, keep);
    tree_emit(v, &t, keep, sort);
    free(keep);
    free(t.kids);
    free(t.kid_at);
    free(t.parent);
    free(t.by_pid);
}

void procs_view_build(struct procs_view *v, const struct snapshot *s,
                      const struct facts_judgement *j, size_t n_j, const struct procs_filter *f,
                      enum procs_sort sort, bool tree)
{
    const struct proc_table *t = &s->procs;
    struct procs_row *all = xcalloc(t->n_procs ? t->n_procs : 1, sizeof(*all));
    size_t n = 0;

    memset(v, 0, sizeof(*v));
    v->tree = tree;
    v->window_ms = s->n_samples ? s->samples[s->n_samples - 1].t_ms : 0;
    for (size_t i = 0; i < t->n_procs; i++) {
        const struct proc *p = &t->procs[i];
        const struct facts_judgement *pj = facts_judgement_find(j, n_j, p->pid);

        if (!tree && (pj == NULL || !procs_filter_match(f, p)))
            continue;
        fill_row(&all[n++], s, p, pj);
    }
    v->rows = xcalloc(n ? n : 1, sizeof(*v->rows));
    if (tree) {
        build_tree(v, all, n, f, sort);
    } else {
        sort_rows(all, n, sort);
        memcpy(v->rows, all, n * sizeof(*all));
        v->n = n;
    }
    for (size_t i = 0; i < v->n; i++)
        v->n_gpu_users += v->rows[i].gpu_user && !v->rows[i].context;
    free(all);
}

void procs_view_free(struct procs_view *v)
{
    free(v->rows);
    memset(v, 0, sizeof(*v));
}

/* ---- the table ---- */

/* Columns s takes on a terminal (a Chinese character two). */
static size_t text_width(const char *s)
{
    return render_width(s, strlen(s));
}

/* Prints s cut to at most max columns; a cut one ends with '~'. */
static void put_cut(FILE *out, const char *s, size_t max)
{
    render_cut(out, s, max, true);
}

static int cmp_gpu_number(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

    return (x > y) - (x < y);
}

static void gpus_cell(char *buf, size_t size, const struct proc *p)
{
    int32_t *idx = xcalloc(p->n_gpus ? p->n_gpus : 1, sizeof(*idx));
    char ranges[128];
    size_t n = 0, distinct = 0;
    bool minor_only = false;

    for (size_t i = 0; i < p->n_gpus; i++) {
        const struct proc_gpu *g = &p->gpus[i];

        if (gpu_ok(g, PROC_GPU_S_INDEX)) {
            idx[n++] = (int32_t)g->gpu_index;
        } else if (gpu_ok(g, PROC_GPU_S_MINOR)) {
            idx[n++] = (int32_t)g->minor;
            minor_only = true;
        }
    }
    if (n == 0) {
        snprintf(buf, size, "-");
        free(idx);
        return;
    }
    /* gpus[] is sorted by index, then minor: minors after indices may be out of order. */
    qsort(idx, n, sizeof(*idx), cmp_gpu_number);
    for (size_t i = 0; i < n; i++) {
        if (distinct == 0 || idx[distinct - 1] != idx[i])
            idx[distinct++] = idx[i];
    }
    render_ranges(ranges, sizeof(ranges), idx, distinct);
    free(idx);
    /* "0-3, 5" becomes "0-3,5"; without NVML the device minor, marked so it is not an index. */
    for (size_t i = 0, k = 0; ranges[i] && k + 1 < size; i++) {
        if (i == 0 && minor_only && k + 2 < size)
            buf[k++] = 'm';
        if (ranges[i] != ' ')
            buf[k++] = ranges[i];
        buf[k] = '\0';
    }
}

static const char *verdict_colour(const struct render_opts *ro, enum facts_verdict v)
{
    switch (v) {
    case FACTS_VERDICT_STOPPED:
    case FACTS_VERDICT_DEFUNCT:
        return render_red(ro);
    case FACTS_VERDICT_ORPHANED:
    case FACTS_VERDICT_IDLE_HOLDER:
        return render_yellow(ro);
    default:
        return "";
    }
}

#define COL_VERDICT 11
#define COL_JOB     12
#define IDLE_MIN_MS 60000 /* idle time is shown when the history is at least this long */

/*
 * TRANSLATORS: a GPU process's verdict in the procs table (at most 11 columns) and its summary
 * line; --json keeps the English.
 */
static const char *const verdict_words[] = {
    [FACTS_VERDICT_ACTIVE] = N_("active"),           [FACTS_VERDICT_IDLE] = N_("idle"),
    [FACTS_VERDICT_IDLE_HOLDER] = N_("idle-holder"), [FACTS_VERDICT_STOPPED] = N_("stopped"),
    [FACTS_VERDICT_DEFUNCT] = N_("defunct"),         [FACTS_VERDICT_ORPHANED] = N_("orphaned"),
    [FACTS_VERDICT_NOT_VISIBLE] = N_("not-visible"), [FACTS_VERDICT_UNKNOWN] = N_("unknown"),
};

struct layout {
    bool job_col; /* a JOB column; else "[job] " before the command */
    bool idle_col;
    size_t cmd_width;
    unsigned width;
};

static void plan_layout(struct layout *l, const struct procs_view *v, unsigned width)
{
    bool any_job = false;
    size_t fixed = 62; /* PID .. VERDICT with their spaces */

    memset(l, 0, sizeof(*l));
    l->width = width;
    for (size_t i = 0; i < v->n; i++) {
        char job[64];

        job_short(job, sizeof(job), v->rows[i].p);
        any_job |= job[0] != '\0';
    }
    l->idle_col = v->window_ms >= IDLE_MIN_MS;
    fixed += l->idle_col ? 6 : 0;
    /* A job column only where the command keeps room to be read. */
    l->job_col = any_job && width >= fixed + COL_JOB + 1 + 24;
    fixed += l->job_col ? COL_JOB + 1 : 0;
    l->cmd_width = width > fixed + 8 ? width - fixed : 8;
}

/*
 * The tree in the command column, as ps f draws it: " \\_ " under the parent, step columns more a
 * level. When even a step of 1 leaves the command less than 4 columns, it stops there (-w draws
 * it all).
 */
static void put_indent(FILE *out, unsigned levels, unsigned step, size_t *room)
{
    size_t w = levels ? (size_t)step * (levels - 1) + 4 : 0;

    while (w > 4 && w + 4 > *room)
        w -= step;
    if (w == 0 || w + 4 > *room)
        return;
    fprintf(out, "%*s\\_ ", (int)(w - 3), "");
    *room -= w;
}

/* "4,990" */
static void put_grouped(FILE *out, uint64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);

    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            fputc(',', out);
        fputc(digits[i], out);
    }
}

/* Levels of ancestors the table does not draw, in their place. */
static void print_fold(FILE *out, unsigned levels, const struct layout *l,
                       const struct render_opts *ro)
{
    char *text = NULL;
    size_t len = 0;
    FILE *line = open_memstream(&text, &len);

    if (line == NULL)
        fatal("out of memory drawing the tree");
    fputs("... ", line);
    put_grouped(line, levels);
    fprintf(line, _(" more level%s of parents (--json lists every one)"), levels == 1 ? "" : "s");
    if (fclose(line) != 0)
        fatal("out of memory drawing the tree");
    fprintf(out, "%s%8s", render_dim(ro), "");
    put_cut(out, text, l->width > 8 ? l->width - 8 : 0);
    fprintf(out, "%s\n", render_reset(ro));
    free(text);
}

static void print_row(FILE *out, const struct procs_row *r, const struct layout *l,
                      const struct render_opts *ro, unsigned levels, unsigned step)
{
    const struct proc *p = r->p;
    char user[32], job[64], gpus[64], mem[16], sm[8], cpu[16], age[16], idle[16], cmd[72];
    const char *verdict =
        render_fit(r->gpu_user ? verdict_words[r->verdict] : N_("(no GPU)"), COL_VERDICT);
    const char *command = ok(p, PROC_S_CMDLINE) && p->cmdline ? render_command(p->cmdline)
                          : ok(p, PROC_S_COMM) && p->comm     ? p->comm
                                                              : "?";
    size_t room = l->cmd_width;

    if (ok(p, PROC_S_USER_NAME) && p->user)
        snprintf(user, sizeof(user), "%s", p->user);
    else if (ok(p, PROC_S_USER))
        snprintf(user, sizeof(user), "%" PRIu32, p->uid);
    else
        snprintf(user, sizeof(user), "?");
    job_short(job, sizeof(job), p);
    gpus_cell(gpus, sizeof(gpus), p);
    snprintf(mem, sizeof(mem), "-");
    if (r->used_valid)
        render_bytes(mem, sizeof(mem), r->used_bytes);
    snprintf(sm, sizeof(sm), "-");
    if (r->sm_valid)
        snprintf(sm, sizeof(sm), "%" PRIu32 "%%", r->sm_util_pct);
    snprintf(cpu, sizeof(cpu), "-");
    if (ok(p, PROC_S_CPU_PCT))
        snprintf(cpu, sizeof(cpu), "%.0f%%", p->cpu_pct);
    snprintf(age, sizeof(age), "-");
    if (r->age_ms >= 0)
        render_duration(age, sizeof(age), (double)r->age_ms / 1000.0);
    snprintf(idle, sizeof(idle), "-");
    if (r->idle_for_ms >= 0)
        render_duration(idle, sizeof(idle), (double)r->idle_for_ms / 1000.0);

    fprintf(out, "%7d ", (int)p->pid);
    render_cut_cell(out, user, 8);
    fputc(' ', out);
    if (l->job_col) {
        render_cut_cell(out, job[0] ? job : "-", 12);
        fputc(' ', out);
    }
    fprintf(out, "%-4.4s %8s %4s %5s %c %5s ", gpus, mem, sm, cpu,
            ok(p, PROC_S_STATE) && p->state ? p->state : '?', age);
    if (l->idle_col)
        fprintf(out, "%5s ", idle);
    fputs(verdict_colour(ro, r->verdict), out);
    render_cell(out, verdict, COL_VERDICT, false);
    fprintf(out, "%s ", verdict_colour(ro, r->verdict)[0] ? render_reset(ro) : "");
    put_indent(out, levels, step, &room);
    if (!l->job_col && job[0]) {
        snprintf(cmd, sizeof(cmd), "[%s] ", job);
        put_cut(out, cmd, room);
        room = room > text_width(cmd) ? room - text_width(cmd) : 0;
    }
    put_cut(out, command, room);
    fputc('\n', out);
}

/* What the processes and NVML collectors could not read, for the lines under the table. */
static void collector_lines(FILE *out, const struct snapshot *s, const struct render_opts *ro,
                            unsigned width)
{
    static const enum collector_id ids[] = { COLLECTOR_NVML, COLLECTOR_PROCS };
    struct render_opts wrap = *ro;

    wrap.width = width;
    for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
        const struct collector_status *c = &s->collectors[ids[i]];
        const char *name = collector_names[ids[i]];
        char head[64];

        snprintf(head, sizeof(head), "%s: ", name);
        if (c->state != CS_OK && c->state != CS_NOT_RUN) {
            char *text =
                xasprintf("%s%s%s", _(collector_state_words[c->state]), c->detail ? ": " : "",
                          c->detail ? collector_detail_text(c) : "");

            fprintf(out, "%s%s", render_dim(ro), head);
            render_wrap(out, &wrap, strlen(head), 2, text);
            fputs(render_reset(ro), out);
            free(text);
        }
        for (size_t k = 0; k < c->n_notes; k++) {
            fprintf(out, "%s%s", render_dim(ro), head);
            render_wrap(out, &wrap, strlen(head), 2, collector_note_text(c, k));
            fputs(render_reset(ro), out);
        }
    }
}

/*
 * The rows. In the tree, ancestors deeper than PROCS_TREE_LEVELS are folded into one line that
 * says how many levels it stands for; a row is indented by the rows drawn above it, two columns
 * a level, one when two would leave the command too little room.
 */
static void print_rows(FILE *out, const struct procs_view *v, const struct layout *l,
                       const struct render_opts *ro)
{
    /* Per row: levels drawn above it (UINT_MAX: folded), and levels folded right above it. */
    unsigned *drawn = xcalloc(v->n ? v->n : 1, sizeof(*drawn));
    unsigned *folded = xcalloc(v->n ? v->n : 1, sizeof(*folded));
    unsigned *path = xcalloc(v->n ? v->n : 1, sizeof(*path)); /* depths of the drawn rows above */
    unsigned deepest = 0, step = 2;
    size_t sp = 0;

    for (size_t i = 0; v->tree && i < v->n; i++) {
        const struct procs_row *r = &v->rows[i];

        while (sp > 0 && path[sp - 1] >= r->depth)
            sp--;
        if (r->depth >= PROCS_TREE_LEVELS && r->context) {
            drawn[i] = UINT_MAX;
            continue;
        }
        folded[i] = r->depth - (sp > 0 ? path[sp - 1] + 1 : 0);
        drawn[i] = (unsigned)sp;
        deepest = drawn[i] > deepest ? drawn[i] : deepest;
        path[sp++] = r->depth;
    }
    if (deepest > 0 && 2 * (size_t)(deepest - 1) + 4 + 4 > l->cmd_width)
        step = 1;
    for (size_t i = 0; i < v->n; i++) {
        if (drawn[i] == UINT_MAX)
            continue;
        if (folded[i] > 0)
            print_fold(out, folded[i], l, ro);
        print_row(out, &v->rows[i], l, ro, drawn[i], step);
    }
    free(path);
    free(folded);
    free(drawn);
}

void procs_render_table(FILE *out, const struct procs_view *v, const struct snapshot *s,
                        const struct render_opts *ro, unsigned width)
{
    struct layout l;
    size_t stale[FACTS_VERDICT_UNKNOWN + 1] = { 0 };
    uint64_t held = 0;
    char b[16];

    plan_layout(&l, v, width);
    if (v->n == 0) {
        fputs(s->procs.n_procs ? _("No processes are using the GPUs (none matches the filter).\n")
                               : _("No processes are using the GPUs.\n"),
              out);
    } else {
        struct head_cell head[12];
        size_t n = 0;

#define HEAD(label, width, right) (head[n++] = (struct head_cell){ label, width, 1, right })
        /* TRANSLATORS: the procs table's column heads; each must fit its column (7, 8, 12,
           4, 8, 4, 5, 1, 5, 5, 11). */
        HEAD(N_("PID"), 7, true);
        HEAD(N_("USER"), 8, false);
        if (l.job_col)
            HEAD(N_("JOB"), COL_JOB, false);
        HEAD(N_("GPU"), 4, false);
        HEAD(N_("MEMORY"), 8, true);
        HEAD(N_("SM%"), 4, true);
        HEAD(N_("CPU%"), 5, true);
        HEAD(N_("S"), 1, false);
        HEAD(N_("AGE"), 5, true);
        if (l.idle_col)
            HEAD(N_("IDLE"), 5, true);
        HEAD(N_("VERDICT"), COL_VERDICT, false);
        HEAD(N_("COMMAND"), 0, false);
#undef HEAD
        render_table_header(out, ro, head, n);
        print_rows(out, v, &l, ro);
    }
    for (size_t i = 0; i < v->n; i++) {
        const struct procs_row *r = &v->rows[i];

        if (!r->gpu_user || r->context)
            continue;
        stale[r->verdict]++;
        held += r->used_valid ? r->used_bytes : 0;
    }
    if (v->n_gpu_users > 0) {
        render_bytes(b, sizeof(b), held);
        fprintf(out, _("\n%zu GPU process%s holding %s"), v->n_gpu_users,
                v->n_gpu_users == 1 ? "" : "es", b);
        for (int k = FACTS_VERDICT_IDLE_HOLDER; k <= FACTS_VERDICT_ORPHANED; k++) {
            if (stale[k])
                fprintf(out, _(", %zu %s"), stale[k], _(verdict_words[k]));
        }
        fputs(_("."), out);
        if (stale[FACTS_VERDICT_IDLE_HOLDER] + stale[FACTS_VERDICT_STOPPED] +
                stale[FACTS_VERDICT_DEFUNCT] + stale[FACTS_VERDICT_ORPHANED] >
            0)
            fputs(_("\n'gpudoctor reap' shows what it would end."), out);
        fputc('\n', out);
        if (stale[FACTS_VERDICT_UNKNOWN] && v->window_ms == 0)
            /* xgettext:no-c-format */
            fputs(_("CPU % and idleness need a sampling window (--window 1s).\n"), out);
    }
    if (v->n_loops > 0)
        fprintf(out,
                _("The parents of pid %d lead back to it (%zu loop%s in the process table): "
                  "drawn from it.\n"),
                (int)v->loop_pid, v->n_loops, v->n_loops == 1 ? "" : "s");
    collector_lines(out, s, ro, width);
}

/* ---- JSON ---- */

/* One row as written: a view of the process record with what procs adds to it. */
struct json_row {
    int32_t pid, ppid;
    uint64_t start_ticks;
    char *state; /* borrowed */
    uint32_t uid;
    char *user, *job, *container_runtime, *container_id, *pod_uid, *slurm_job_id;
    uint64_t used_bytes;
    uint32_t sm_util_pct;
    double cpu_pct;
    int64_t age_ms, idle_for_min_ms;
    int32_t verdict;
    char *command;
    bool gpu_user, context;
    uint32_t depth;
    int32_t parent;
    uint64_t valid;
};

enum json_row_slot {
    JR_STAT,
    JR_USER,
    JR_USER_NAME,
    JR_JOB,
    JR_CGROUP,
    JR_USED,
    JR_SM,
    JR_CPU,
    JR_AGE,
    JR_IDLE,
    JR_VERDICT,
    JR_COMMAND,
    JR_PARENT,
};

#define JR(name, type, field, slot, doc)                                                           \
    {                                                                                              \
        name, type, offsetof(struct json_row, field), slot, 0, NULL, "procs", doc                  \
    }

/* clang-format off */
static const struct jfield json_row_fields[] = {
    JR("pid", JF_I32, pid, -1, "process id (in the PID namespace of the /proc that was read)"),
    JR("start_ticks", JF_U64, start_ticks, JR_STAT, "start time in clock ticks since boot: with pid, its identity"),
    JR("ppid", JF_I32, ppid, JR_STAT, "parent process id"),
    JR("state", JF_STR, state, JR_STAT, "R S D Z T t X I, as /proc/PID/stat has it"),
    JR("uid", JF_U32, uid, JR_USER, "effective user id"),
    JR("user", JF_STR, user, JR_USER_NAME, "user name"),
    JR("job", JF_STR, job, JR_JOB, "container or job, for people: \"docker 3f2a1b9c0d1e\", \"slurm job 4411\""),
    JR("container_runtime", JF_STR, container_runtime, JR_CGROUP, "docker, containerd, cri-o, podman"),
    JR("container_id", JF_STR, container_id, JR_CGROUP, "container id; null on the host"),
    JR("pod_uid", JF_STR, pod_uid, JR_CGROUP, "Kubernetes pod UID"),
    JR("slurm_job_id", JF_STR, slurm_job_id, JR_CGROUP, "Slurm job id"),
    JR("used_bytes", JF_U64, used_bytes, JR_USED, "GPU memory held, over all its GPUs"),
    JR("sm_util_pct", JF_U32, sm_util_pct, JR_SM, "SM utilisation, the highest of its GPUs"),
    JR("cpu_pct", JF_DOUBLE, cpu_pct, JR_CPU, "CPU over the window (100 = one core)"),
    JR("age_ms", JF_I64, age_ms, JR_AGE, "how long it has run"),
    JR("idle_for_min_ms", JF_I64, idle_for_min_ms, JR_IDLE, "idle at least this long: the window that proves it"),
    { "verdict", JF_ENUM, offsetof(struct json_row, verdict), JR_VERDICT, 0, facts_verdict_names,
      "procs", "what the process rules make of it; null for a worker that uses no GPU" },
    JR("command", JF_STR, command, JR_COMMAND, "command line (or command name)"),
    JR("gpu_user", JF_BOOL, gpu_user, -1, "uses a GPU; false for a worker or a parent shown in the tree"),
    JR("context", JF_BOOL, context, -1, "shown only as an ancestor of a process that matched (the tree)"),
    JR("depth", JF_U32, depth, -1, "depth in the tree (0 without --tree)"),
    JR("parent", JF_I32, parent, JR_PARENT, "pid of the row it hangs under in the tree; null for a root and without --tree"),
};
/* clang-format on */

static const struct jtable json_row_table = {
    "procs row",
    json_row_fields,
    ARRAY_SIZE(json_row_fields),
    JT_BITS,
    offsetof(struct json_row, valid),
    NULL,
};

#define SET(slot) (r.valid |= UINT64_C(1) << (slot))

static json_t *row_json(const struct procs_row *pr)
{
    const struct proc *p = pr->p;
    struct json_row r;
    char state[2] = { ok(p, PROC_S_STAT) ? p->state : '\0', '\0' };
    char job[96];
    json_t *o = json_object(), *children = json_array();

    memset(&r, 0, sizeof(r));
    r.pid = p->pid;
    if (ok(p, PROC_S_STAT)) {
        r.start_ticks = p->start_ticks;
        r.ppid = p->ppid;
        r.state = state;
        SET(JR_STAT);
    }
    r.uid = p->uid;
    if (ok(p, PROC_S_USER))
        SET(JR_USER);
    r.user = p->user;
    if (ok(p, PROC_S_USER_NAME))
        SET(JR_USER_NAME);
    procs_job_label(job, sizeof(job), p);
    r.job = job;
    if (job[0])
        SET(JR_JOB);
    r.container_runtime = p->container_runtime;
    r.container_id = p->container_id;
    r.pod_uid = p->pod_uid;
    r.slurm_job_id = p->slurm_job_id;
    if (ok(p, PROC_S_CGROUP))
        SET(JR_CGROUP);
    r.used_bytes = pr->used_bytes;
    if (pr->used_valid)
        SET(JR_USED);
    r.sm_util_pct = pr->sm_util_pct;
    if (pr->sm_valid)
        SET(JR_SM);
    r.cpu_pct = p->cpu_pct;
    if (ok(p, PROC_S_CPU_PCT))
        SET(JR_CPU);
    r.age_ms = pr->age_ms;
    if (pr->age_ms >= 0)
        SET(JR_AGE);
    r.idle_for_min_ms = pr->idle_for_ms;
    if (pr->idle_for_ms >= 0)
        SET(JR_IDLE);
    r.verdict = (int32_t)pr->verdict;
    if (pr->gpu_user)
        SET(JR_VERDICT);
    r.command = ok(p, PROC_S_CMDLINE) && p->cmdline ? p->cmdline : p->comm;
    if (r.command)
        SET(JR_COMMAND);
    r.gpu_user = pr->gpu_user;
    r.context = pr->context;
    r.depth = pr->depth;
    r.parent = pr->parent_pid;
    if (pr->parent_pid >= 0)
        SET(JR_PARENT);
    jtable_write(&json_row_table, &r, o, 0);
    json_object_set_new(o, "gpus",
                        jlist_write_table(&proc_gpu_jtable, p->gpus, p->n_gpus, sizeof(*p->gpus)));
    for (size_t i = 0; i < p->n_children; i++)
        json_array_append_new(children, json_integer(p->children[i]));
    json_object_set_new(o, "children", children);
    return o;
}

#undef SET

json_t *procs_render_json(const struct procs_view *v, const struct snapshot *s)
{
    json_t *o = json_object(), *rows = json_array(), *cols = json_object();
    static const enum collector_id ids[] = { COLLECTOR_NVML, COLLECTOR_PROCS };

    json_object_set_new(o, "schema", json_string(PROCS_SCHEMA));
    json_object_set_new(o, "hostname", jstring_safe(s->hostname));
    json_object_set_new(o, "time_ms", json_integer(s->time_ms));
    json_object_set_new(o, "window_ms", json_integer(v->window_ms));
    json_object_set_new(o, "tree", json_boolean(v->tree));
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(rows, row_json(&v->rows[i]));
    json_object_set_new(o, "processes", rows);
    for (size_t i = 0; i < ARRAY_SIZE(ids); i++) {
        const struct collector_status *c = &s->collectors[ids[i]];
        json_t *cj = json_object(), *notes = json_array();

        json_object_set_new(cj, "state", json_string(collector_state_names[c->state]));
        json_object_set_new(cj, "detail", jstring_safe(c->detail));
        for (size_t k = 0; k < c->n_notes; k++)
            json_array_append_new(notes, jstring_safe(c->notes[k]));
        json_object_set_new(cj, "notes", notes);
        json_object_set_new(cols, collector_names[ids[i]], cj);
    }
    json_object_set_new(o, "collectors", cols);
    return o;
}
