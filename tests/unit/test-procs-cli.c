/*
 * gpudoctor procs' rows, on snapshots of the scenario corpus: which processes are rows, in which
 * order for each sort key, what each filter keeps, the tree (parents before children, workers
 * under their parent), the table at 80 columns (and the job column when there is room), and the
 * JSON document.
 */
#include "render/procs.h"
#include "rules/config.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CORPUS    TEST_SOURCE_DIR "/tests/scenarios"
#define BIT(slot) (UINT64_C(1) << (slot))

static struct snapshot *load_case(const char *name)
{
    char *path = xasprintf("%s/%s/snapshot.json", CORPUS, name), *cause = NULL;
    struct snapshot *s = snapshot_load(path, &cause);

    if (s == NULL)
        fail_msg("%s: %s", path, cause);
    free(path);
    return s;
}

static void view_of(struct procs_view *v, const struct snapshot *s, const struct procs_filter *f,
                    enum procs_sort sort, bool tree)
{
    struct facts_judgement *j = NULL;
    struct thresholds th;
    size_t n;

    thresholds_init(&th);
    n = facts_judge_snapshot(s, NULL, &th, &j);
    procs_view_build(v, s, j, n, f, sort, tree);
    free(j);
}

/* The pids of the rows, in order, as "4121 4122 ...". */
static char *pids(const struct procs_view *v)
{
    char *out = xstrdup("");

    for (size_t i = 0; i < v->n; i++) {
        char *next = xasprintf("%s%s%d", out, i ? " " : "", (int)v->rows[i].p->pid);

        free(out);
        out = next;
    }
    return out;
}

static void expect_pids(const struct snapshot *s, const struct procs_filter *f,
                        enum procs_sort sort, bool tree, const char *want)
{
    struct procs_view v;
    char *got;

    view_of(&v, s, f, sort, tree);
    got = pids(&v);
    assert_string_equal(got, want);
    free(got);
    procs_view_free(&v);
}

static void test_sort_orders(void **state)
{
    struct snapshot *s = load_case("stopped-holder");

    (void)state;
    /* 4121 holds 71.2 GiB, each rank 62 GiB, 4122 410 MiB; ties by pid. */
    expect_pids(s, NULL, PROCS_SORT_MEM, false,
                "4121 48211 48212 48213 48215 48216 48217 48218 4122");
    expect_pids(s, NULL, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    /* The ranks use 90 % SM and 160 % CPU; the stopped pair nothing. */
    expect_pids(s, NULL, PROCS_SORT_SM, false,
                "48211 48212 48213 48215 48216 48217 48218 4121 4122");
    expect_pids(s, NULL, PROCS_SORT_CPU, false,
                "48211 48212 48213 48215 48216 48217 48218 4121 4122");
    /* Oldest first: the stopped job started 2h13m ago, the ranks 1h ago. */
    expect_pids(s, NULL, PROCS_SORT_AGE, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    snapshot_free(s);
}

static void test_filters(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct procs_filter f;
    int32_t gpus[] = { 3, 7 };
    struct proc *p;

    (void)state;
    memset(&f, 0, sizeof(f));
    f.gpus = gpus;
    f.n_gpus = 2;
    expect_pids(s, &f, PROCS_SORT_PID, false, "4121 4122 48218");
    memset(&f, 0, sizeof(f));
    f.user = "alice";
    expect_pids(s, &f, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    f.user = "1000";
    expect_pids(s, &f, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    f.user = "bob";
    expect_pids(s, &f, PROCS_SORT_PID, false, "");

    /* Put one rank in a container and one in a Slurm job. */
    p = proc_table_find(&s->procs, 48211);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->container_id = xstrdup("3f2a1b9c0d1e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd");
    p->container_runtime = xstrdup("docker");
    p = proc_table_find(&s->procs, 48212);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->slurm_job_id = xstrdup("4411");
    memset(&f, 0, sizeof(f));
    f.container = "3f2a1b";
    expect_pids(s, &f, PROCS_SORT_PID, false, "48211");
    f.container = "4411";
    expect_pids(s, &f, PROCS_SORT_PID, false, "48212");
    f.container = "441";
    expect_pids(s, &f, PROCS_SORT_PID, false, ""); /* a job id is matched whole */
    snapshot_free(s);
}

static void test_tree(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    struct procs_view v;
    struct procs_filter f;
    int32_t gpu0 = 0;
    char *got;

    (void)state;
    /* Flat: the GPU processes only. */
    expect_pids(s, NULL, PROCS_SORT_PID, false, "5120 6000");
    /* Tree: the zombie's parent above it (context), its workers below it. */
    view_of(&v, s, NULL, PROCS_SORT_PID, true);
    got = pids(&v);
    assert_string_equal(got, "5100 5120 5121 5122 6000");
    free(got);
    assert_int_equal(v.rows[0].depth, 0);
    assert_false(v.rows[0].gpu_user);
    assert_int_equal(v.rows[1].depth, 1);
    assert_int_equal(v.rows[1].verdict, FACTS_VERDICT_DEFUNCT);
    assert_int_equal(v.rows[2].depth, 2);
    assert_false(v.rows[2].gpu_user);
    assert_int_equal(v.n_gpu_users, 2);
    procs_view_free(&v);
    /* Filtered to GPU 0: the zombie and what hangs around it, not carol's job on GPU 1. */
    memset(&f, 0, sizeof(f));
    f.gpus = &gpu0;
    f.n_gpus = 1;
    expect_pids(s, &f, PROCS_SORT_PID, true, "5100 5120 5121 5122");
    snapshot_free(s);
}

/* ---- trees built in memory: shapes the corpus does not have ---- */

/* A process in s's table: user "u<uid>", command "c<pid>"; gpu_bytes > 0: it holds GPU 0. */
static struct proc *add_proc(struct snapshot *s, size_t *cap, int32_t pid, int32_t ppid,
                             uint32_t uid, uint64_t gpu_bytes)
{
    struct proc *p;

    if (s->procs.n_procs == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        s->procs.procs = xreallocarray(s->procs.procs, *cap, sizeof(*p));
    }
    p = &s->procs.procs[s->procs.n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->ppid = ppid;
    p->state = 'S';
    p->uid = uid;
    p->user = xasprintf("u%u", uid);
    p->comm = xasprintf("c%d", pid);
    p->valid = BIT(PROC_S_STAT) | BIT(PROC_S_USER) | BIT(PROC_S_USER_NAME);
    if (gpu_bytes > 0) {
        p->gpus = xcalloc(1, sizeof(*p->gpus));
        p->n_gpus = 1;
        p->gpus[0].used_bytes = gpu_bytes;
        p->gpus[0].valid = BIT(PROC_GPU_S_INDEX) | BIT(PROC_GPU_S_USED);
    }
    return p;
}

/* The judgements procs would get: every process holding a GPU is active. */
static struct facts_judgement *judge_all(const struct snapshot *s, size_t *n)
{
    struct facts_judgement *j = xcalloc(s->procs.n_procs + 1, sizeof(*j));

    *n = 0;
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        if (s->procs.procs[i].n_gpus > 0)
            j[(*n)++] = (struct facts_judgement){ s->procs.procs[i].pid, FACTS_VERDICT_ACTIVE, -1 };
    }
    /* facts_judge returns them by pid */
    for (size_t i = 1; i < *n; i++) {
        for (size_t k = i; k > 0 && j[k - 1].pid > j[k].pid; k--) {
            struct facts_judgement tmp = j[k];

            j[k] = j[k - 1];
            j[k - 1] = tmp;
        }
    }
    return j;
}

static void memory_view(struct procs_view *v, const struct snapshot *s,
                        const struct procs_filter *f, enum procs_sort sort)
{
    size_t n;
    struct facts_judgement *j = judge_all(s, &n);

    procs_view_build(v, s, j, n, f, sort, true);
    free(j);
}

static char *memory_table(const struct procs_view *v, const struct snapshot *s, unsigned width)
{
    struct render_opts ro = { false, width, false };
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    procs_render_table(out, v, s, &ro, width);
    fclose(out);
    return text;
}

/* Two users' jobs under one sshd, as on the demo server: a shared parent is drawn once, and a
 * filter keeps the other user's shell out (it is no worker of the match). */
static void test_tree_ancestors(void **state)
{
    struct snapshot *s = snapshot_new();
    struct procs_view v;
    struct procs_filter f;
    size_t cap = 0;
    char *got;

    (void)state;
    add_proc(s, &cap, 900, 1, 0, 0);                    /* sshd */
    add_proc(s, &cap, 39080, 900, 1000, 0);             /* alice's shell */
    add_proc(s, &cap, 39104, 39080, 1000, 10ULL << 30); /* her job: 10 GiB */
    add_proc(s, &cap, 39105, 39104, 1000, 0);           /* its data loader */
    add_proc(s, &cap, 48200, 1, 1002, 0);               /* torchrun */
    add_proc(s, &cap, 48215, 48200, 1002, 70ULL << 30); /* rank 0: 70 GiB */
    add_proc(s, &cap, 48216, 48200, 1002, 60ULL << 30); /* rank 1: 60 GiB */
    add_proc(s, &cap, 51300, 900, 1001, 0);             /* carol's shell */
    add_proc(s, &cap, 51301, 51300, 1001, 0);           /* her editor: no GPU, no match */
    add_proc(s, &cap, 51377, 51300, 1001, 20ULL << 30); /* her job: 20 GiB */

    /* By memory: torchrun's tree first (70 GiB under it), then sshd's (carol's 20 GiB before
     * alice's 10 GiB); the launcher and the shells as context that use no GPU. */
    memory_view(&v, s, NULL, PROCS_SORT_MEM);
    got = pids(&v);
    assert_string_equal(got, "48200 48215 48216 900 51300 51377 39080 39104 39105");
    free(got);
    assert_true(v.rows[0].context);
    assert_false(v.rows[0].gpu_user);
    assert_int_equal(v.rows[0].parent_pid, -1);
    assert_int_equal(v.rows[1].parent_pid, 48200);
    assert_int_equal(v.rows[1].depth, 1);
    assert_int_equal(v.rows[5].depth, 2);
    assert_int_equal(v.rows[8].depth, 3); /* the loader under alice's job: a worker */
    assert_false(v.rows[8].context);
    assert_int_equal(v.n_gpu_users, 4);
    procs_view_free(&v);

    /* By pid: the same trees, roots and siblings in pid order. */
    memory_view(&v, s, NULL, PROCS_SORT_PID);
    got = pids(&v);
    assert_string_equal(got, "900 39080 39104 39105 51300 51377 48200 48215 48216");
    free(got);
    procs_view_free(&v);

    /* Alice's processes: her job with its loader, and the way up to sshd; nothing of carol's. */
    memset(&f, 0, sizeof(f));
    f.user = "u1000";
    memory_view(&v, s, &f, PROCS_SORT_MEM);
    got = pids(&v);
    assert_string_equal(got, "900 39080 39104 39105");
    free(got);
    assert_int_equal(v.n_gpu_users, 1);
    procs_view_free(&v);
    snapshot_free(s);
}

/*
 * A chain of 100,000 parents above a GPU process, and loops of parent links: the tree is built
 * without recursion and in about linear time (a walk per row would take hours here), the table
 * folds what it does not draw and says so.
 */
static void test_tree_deep_chain_and_loops(void **state)
{
    enum { DEPTH = 100000 };
    struct snapshot *s = snapshot_new();
    struct procs_view v;
    size_t cap = 0;
    char *t, *got;

    (void)state;
    for (int32_t i = 0; i < DEPTH; i++)
        add_proc(s, &cap, 200000 + i, i ? 200000 + i - 1 : 1, 1000, 0);
    add_proc(s, &cap, 100, 200000 + DEPTH - 1, 1000, 8ULL << 30); /* the GPU process */
    add_proc(s, &cap, 101, 100, 1000, 0);                         /* its worker */
    memory_view(&v, s, NULL, PROCS_SORT_MEM);
    assert_int_equal(v.n, DEPTH + 2);
    assert_int_equal(v.rows[0].p->pid, 200000);
    for (size_t i = 0; i < DEPTH; i++) {
        assert_int_equal(v.rows[i].depth, i);
        assert_true(v.rows[i].context);
    }
    assert_int_equal(v.rows[DEPTH].p->pid, 100);
    assert_int_equal(v.rows[DEPTH].depth, DEPTH);
    assert_int_equal(v.rows[DEPTH].parent_pid, 200000 + DEPTH - 1);
    assert_int_equal(v.rows[DEPTH + 1].p->pid, 101);
    assert_int_equal(v.rows[DEPTH + 1].depth, DEPTH + 1);
    assert_int_equal(v.n_loops, 0);

    /* The table: ten levels, then one line for the 99,990 others, then the job and its worker
     * one and two levels further in. */
    t = memory_table(&v, s, 120);
    assert_non_null(strstr(t, " 200009 u1000    -           -    -     - S     - (no GPU)   "));
    assert_null(strstr(t, " 200010 "));
    assert_null(strstr(t, " 299999 "));
    assert_non_null(strstr(t, "\n        ... 99,990 more levels of parents (--json lists every "
                              "one)\n    100 u1000    0     8.0 GiB"));
    assert_non_null(strstr(t, " active                         \\_ c100\n"));
    assert_non_null(strstr(t, " (no GPU)                         \\_ c101\n"));
    assert_non_null(strstr(t, "\n1 GPU process holding 8.0 GiB.\n"));
    free(t);
    procs_view_free(&v);
    snapshot_free(s);

    /*
     * Loops: 7 and 8 each other's parent, a GPU process under 8; 11 (a GPU process), 12, 13 in
     * a ring; 20 its own parent. Each loop is cut at its lowest pid, every process shown once.
     */
    s = snapshot_new();
    cap = 0;
    add_proc(s, &cap, 7, 8, 1000, 0);
    add_proc(s, &cap, 8, 7, 1000, 0);
    add_proc(s, &cap, 9, 8, 1000, 1ULL << 30);
    add_proc(s, &cap, 11, 12, 1000, 2ULL << 30);
    add_proc(s, &cap, 12, 13, 1000, 0);
    add_proc(s, &cap, 13, 11, 1000, 0);
    add_proc(s, &cap, 20, 20, 1000, 3ULL << 30);
    memory_view(&v, s, NULL, PROCS_SORT_PID);
    got = pids(&v);
    assert_string_equal(got, "7 8 9 11 13 12 20");
    free(got);
    assert_int_equal(v.n_loops, 2);
    assert_int_equal(v.loop_pid, 7);
    assert_int_equal(v.rows[0].parent_pid, -1);
    assert_int_equal(v.rows[2].depth, 2);
    assert_int_equal(v.rows[5].depth, 2); /* 12 under 13 under 11, a worker of 11 */
    assert_int_equal(v.rows[6].depth, 0);
    t = memory_table(&v, s, 80);
    assert_non_null(strstr(t, "The parents of pid 7 lead back to it (2 loops in the process "
                              "table): drawn from it.\n"));
    free(t);
    procs_view_free(&v);
    snapshot_free(s);
}

static char *table(const struct snapshot *s, bool tree, unsigned width)
{
    struct procs_view v;
    struct render_opts ro = { false, width, false };
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    view_of(&v, s, NULL, PROCS_SORT_MEM, tree);
    procs_render_table(out, &v, s, &ro, width);
    fclose(out);
    procs_view_free(&v);
    return text;
}

/* The longest line, in characters. */
static size_t widest(const char *text)
{
    size_t w = 0, max = 0;

    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            max = w > max ? w : max;
            w = 0;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            w++;
        }
    }
    return w > max ? w : max;
}

static void test_table(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct proc *p;
    char *t;

    (void)state;
    t = table(s, false, 80);
    assert_true(widest(t) <= 80);
    assert_non_null(strstr(t, "    PID USER     GPU    MEMORY  SM%  CPU% S   AGE VERDICT     "
                              "COMMAND\n"));
    assert_non_null(strstr(t, "   4121 alice    3    71.2 GiB   0%    0% T 2h13m stopped     "
                              "python train.py -~\n"));
    assert_non_null(strstr(t, "  48211 alice    0    62.0 GiB  90%  160% S    1h active      "));
    assert_non_null(strstr(t, "\n9 GPU processes holding 506 GiB, 2 stopped.\n'gpudoctor reap' "
                              "shows what it would end.\n"));
    free(t);
    /* Wide: whole commands. */
    t = table(s, false, 200);
    assert_non_null(strstr(t, "stopped     python train.py --lr 3e-4\n"));
    free(t);

    /* A container: its short id in a column where there is room, before the command where not. */
    p = proc_table_find(&s->procs, 48211);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->container_id = xstrdup("3f2a1b9c0d1e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd");
    p->container_runtime = xstrdup("docker");
    t = table(s, false, 120);
    assert_non_null(strstr(t, " JOB          GPU "));
    assert_non_null(strstr(t, "  48211 alice    3f2a1b9c0d1e 0    62.0 GiB"));
    assert_true(widest(t) <= 120);
    free(t);
    t = table(s, false, 80);
    assert_null(strstr(t, " JOB "));
    assert_non_null(strstr(t, "active      [3f2a1b9c0d1e] py~\n"));
    assert_true(widest(t) <= 80);
    free(t);
    snapshot_free(s);

    /* The tree is drawn in the command column. */
    s = load_case("zombie-holder");
    t = table(s, true, 80);
    assert_non_null(strstr(t, "   5120 bob      0    18.0 GiB   0%    0% Z    1h defunct      "
                              "\\_ python\n"));
    assert_non_null(strstr(t, "   5121 bob      -           -    -    0% S    1h (no GPU)    "
                              "   \\_ python trai~\n"));
    assert_true(widest(t) <= 80);
    free(t);
    snapshot_free(s);
}

static void test_json(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    struct procs_view v;
    json_t *j, *rows, *r;
    char *dump;

    (void)state;
    view_of(&v, s, NULL, PROCS_SORT_PID, true);
    j = procs_render_json(&v, s);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpudoctor.procs/1");
    assert_int_equal(json_integer_value(json_object_get(j, "window_ms")), 2000);
    assert_true(json_is_true(json_object_get(j, "tree")));
    rows = json_object_get(j, "processes");
    assert_int_equal(json_array_size(rows), 5);
    r = json_array_get(rows, 1);
    assert_int_equal(json_integer_value(json_object_get(r, "pid")), 5120);
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "defunct");
    assert_string_equal(json_string_value(json_object_get(r, "state")), "Z");
    assert_string_equal(json_string_value(json_object_get(r, "user")), "bob");
    assert_int_equal(json_integer_value(json_object_get(r, "used_bytes")), 19327352832);
    assert_int_equal(json_integer_value(json_object_get(r, "depth")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "parent")), 5100);
    assert_true(json_is_false(json_object_get(r, "context")));
    assert_int_equal(json_integer_value(json_object_get(r, "age_ms")), 3600000);
    assert_true(json_is_null(json_object_get(r, "idle_for_min_ms")));
    assert_true(json_is_null(json_object_get(r, "job")));
    assert_int_equal(json_array_size(json_object_get(r, "gpus")), 1);
    assert_int_equal(json_array_size(json_object_get(r, "children")), 2);
    /* Its parent: a root, there as context. */
    r = json_array_get(rows, 0);
    assert_true(json_is_null(json_object_get(r, "parent")));
    assert_true(json_is_true(json_object_get(r, "context")));
    assert_false(json_is_true(json_object_get(r, "gpu_user")));
    /* A worker: no verdict of its own. */
    r = json_array_get(rows, 2);
    assert_int_equal(json_integer_value(json_object_get(r, "parent")), 5120);
    assert_true(json_is_false(json_object_get(r, "context")));
    assert_false(json_is_true(json_object_get(r, "gpu_user")));
    assert_true(json_is_null(json_object_get(r, "verdict")));
    dump = json_dumps(json_object_get(j, "collectors"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(dump, "\"nvml\":{"));
    assert_non_null(strstr(dump, "\"processes\":{"));
    free(dump);
    json_decref(j);
    procs_view_free(&v);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_orders),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_tree_ancestors),
        cmocka_unit_test(test_tree_deep_chain_and_loops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
